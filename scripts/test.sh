#!/usr/bin/env bash
# The project's test command: template and workflow checks, formatting,
# lints, unit, property, fault and end-to-end tests, the README's
# cargo-lambda commands, the crate packed as crates.io gets it, a release
# built and checked, and `sam build` (on the release's build) with its
# artifacts run. Installs and starts what it needs:
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
echo "== .github/workflows (scripts/check-workflows.sh: actionlint)"
scripts/check-workflows.sh | tee .local/workflows.log
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
disk "before the crate check"
echo "== the crate as crates.io and its users get it (scripts/check-crate.sh: cargo publish --dry-run, examples/crate-user)"
scripts/check-crate.sh 2>&1 | tee .local/crate.log
disk "before cargo-lambda"
echo "== the README's cargo-lambda commands (scripts/readme-cargo-lambda.sh)"
scripts/readme-cargo-lambda.sh 2>&1 | tee .local/cargo-lambda.log
disk "before bench smoke"
echo "== bench smoke (bench/run.sh --smoke: tiny workloads, debug builds; it reports figures, asserts no speed)"
bench/run.sh --smoke 2>&1 | tee .local/bench-smoke.log
disk "before soak smoke"
echo "== soak smoke (bench/soak.sh --smoke: 2,000 records per function and queue, 30% faults; fails if anything is lost)"
bench/soak.sh --smoke 2>&1 | tee .local/soak-smoke.log
disk "before the release"
echo "== a release built into a temporary folder and checked (scripts/release.sh, scripts/check-release.sh; CI_SKIP_DEPLOY_BUILD=1 skips it)"
if [ "${CI_SKIP_DEPLOY_BUILD:-}" = 1 ]; then
  echo "release: skipped: CI_SKIP_DEPLOY_BUILD=1, so no release was built or checked" | tee .local/release.log
else
  release_dir="$(mktemp -d)"
  version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)"
  # Without the replay command: its build is the longest (a release of its
  # own; the release workflow builds and checks it).
  scripts/release.sh "$version" --out "$release_dir/dist" --allow-dirty --no-replay 2>&1 | tee .local/release.log
  scripts/check-release.sh "$release_dir/dist" 2>&1 | tee -a .local/release.log
  rm -rf "$release_dir"
fi
disk "before sam build"
echo "== sam build on the release's build, and each built bootstrap run (scripts/deploy-build.sh; CI_SKIP_DEPLOY_BUILD=1 skips it)"
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
     /^(release|crate|workflows): [0-9]+ passed, [0-9]+ failed$/ { p += $2; f += $4 }
     /^release: skipped/ { i += 1 }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, i }' .local/test.log .local/template.log \
  .local/bench-smoke.log .local/soak-smoke.log .local/cargo-lambda.log .local/deploy-build.log \
  .local/python.log .local/release.log .local/crate.log .local/workflows.log
