#!/usr/bin/env bash
# The project's test command: template checks, formatting, lints, unit,
# property, fault and end-to-end tests, the README's cargo-lambda commands,
# and `sam build` with its artifacts run. Installs and starts what it needs:
# the local SQS/S3/Secrets Manager endpoint (moto), RabbitMQ, cfn-lint, SAM,
# cargo-lambda, the arm64 Rust target and qemu-user.
set -euo pipefail
cd "$(dirname "$0")/.."
# A test run never reuses incremental state worth its disk (gigabytes per
# build); set CARGO_INCREMENTAL=1 to keep it while iterating.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# One line per step with the free disk and the size of target/, so a run that
# fills the disk says where, and the seconds since the run began, so the log
# says what each step adds.
disk() { echo "disk: $1: $(df -h --output=avail . | tail -1 | tr -d ' ') free, target/ $(du -sh target 2>/dev/null | cut -f1), ${SECONDS} s into the run"; }

endpoint="$(scripts/local-sqs.sh start)"
export SQS_TEST_ENDPOINT="$endpoint"
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
# RabbitMQ for the rabbitmq-to-sqs end-to-end tests (started if installed).
rabbitmq_url="$(scripts/local-rabbitmq.sh start)"
export RABBITMQ_TEST_URL="$rabbitmq_url"

echo "== template.yaml"
scripts/check-template.sh | tee .local/template.log
disk "before fmt"
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
disk "before test"
echo "== cargo test (local SQS at $endpoint)"
cargo test --workspace 2>&1 | tee .local/test.log
echo "== the fault tests again through aws-sdk-sqs (SQS_CLIENT=sdk)"
SQS_CLIENT=sdk cargo test -p sqs-forwarder --test faults 2>&1 | tee -a .local/test.log
echo "== the Python consumer's tests (examples/consumer-python: reading aggregates, standard library only)"
python3 -m unittest discover -s examples/consumer-python 2>&1 | tee .local/python.log
awk '/^Ran [0-9]+ tests?/ { n = $2 } /^FAILED/ { bad = 1 }
     END { if (bad || !n) { print "python: 0 passed, 1 failed" } else { printf "python: %d passed, 0 failed\n", n } }' \
  .local/python.log | tee -a .local/python.log
disk "before cargo-lambda"
echo "== the README's cargo-lambda commands (scripts/readme-cargo-lambda.sh)"
scripts/readme-cargo-lambda.sh 2>&1 | tee .local/cargo-lambda.log
disk "before bench smoke"
echo "== bench smoke (bench/run.sh --smoke: tiny workloads, debug builds; it reports figures, asserts no speed)"
bench/run.sh --smoke 2>&1 | tee .local/bench-smoke.log
disk "before soak smoke"
echo "== soak smoke (bench/soak.sh --smoke: 2,000 records per function and queue, 30% faults; fails if anything is lost)"
bench/soak.sh --smoke 2>&1 | tee .local/soak-smoke.log
disk "before sam build"
echo "== sam build, and each built bootstrap run (scripts/deploy-build.sh; CI_SKIP_DEPLOY_BUILD=1 skips it)"
scripts/deploy-build.sh 2>&1 | tee .local/deploy-build.log
disk "after all steps"
# One closing line for the whole run (the template checks count too).
awk '/^test result:/ { p += $4; f += $6; i += $8 }
     /^template: [0-9]+ passed, [0-9]+ failed$/ { p += $2; f += $4 }
     /^bench: [0-9]+ passed, [0-9]+ failed$/ { p += $2; f += $4 }
     /^soak: [0-9]+ passed, [0-9]+ failed$/ { p += $2; f += $4 }
     /^cargo-lambda: [0-9]+ passed, [0-9]+ failed$/ { p += $2; f += $4 }
     /^python: [0-9]+ passed, [0-9]+ failed$/ { p += $2; f += $4 }
     /^deploy-build: [0-9]+ passed, [0-9]+ failed$/ { p += $2; f += $4 }
     /^deploy-build: skipped/ { i += 1 }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, i }' .local/test.log .local/template.log \
  .local/bench-smoke.log .local/soak-smoke.log .local/cargo-lambda.log .local/deploy-build.log \
  .local/python.log
