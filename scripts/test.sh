#!/usr/bin/env bash
# The project's test command: formatting, lints, unit, property, fault and
# end-to-end tests. Installs and starts the local SQS endpoint it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

endpoint="$(scripts/local-sqs.sh start)"
export SQS_TEST_ENDPOINT="$endpoint"
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
# RabbitMQ for the rabbitmq-to-sqs end-to-end tests (started if installed).
rabbitmq_url="$(scripts/local-rabbitmq.sh start)"
export RABBITMQ_TEST_URL="$rabbitmq_url"

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test (local SQS at $endpoint)"
cargo test --workspace 2>&1 | tee .local/test.log
# One closing line for the whole run.
awk '/^test result:/ { p += $4; f += $6; i += $8 } END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, i }' .local/test.log
