#!/usr/bin/env bash
# The benchmark: the four functions (release builds) against a boto3 Lambda
# and against two floors (aws-sdk-sqs alone, bare HTTP), on a local SQS stub
# and a Lambda runtime-API harness; then as Lambda bills them (CPU capped at
# 128 and 1,769 MB's share, 10 ms round trips), with a cost table. Writes bench/results/ (results.md, .csv, .json, throughput.png)
# and prints the table. See bench/README.md.
#
#   bench/run.sh                 # the full run (several minutes)
#   bench/run.sh --smoke         # tiny workloads, debug builds, no plot (CI)
#   bench/run.sh --only kinesis  # some workloads; other options: bench/run.py --help
#   bench/run.sh --aggregate-only  # only the aggregation rows (AGGREGATE=true against one message per record)
#
# Environment: BENCH_ARM64=0 skips the arm64 build (cargo-lambda + zig, slow).
# Installs what it needs: boto3, pika (and matplotlib, cargo-lambda for the
# full run) from PyPI into .local/; starts RabbitMQ through
# scripts/local-rabbitmq.sh when it can (the RabbitMQ workload is skipped
# otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."

smoke=no
aggregate_only=no
for a in "$@"; do
  [ "$a" = --smoke ] && smoke=yes
  [ "$a" = --aggregate-only ] && aggregate_only=yes
done
functions=(-p kinesis-to-sqs -p s3-to-sqs -p apigw-to-sqs -p rabbitmq-to-sqs)
venv=.local/venv
pip_quiet=(--quiet --disable-pip-version-check)

[ -x "$venv/bin/python" ] || { mkdir -p .local; python3 -m venv "$venv"; }
"$venv/bin/python" -c "import boto3, pika" 2>/dev/null ||
  "$venv/bin/pip" install "${pip_quiet[@]}" 'boto3==1.*' 'pika==1.*' >&2

extra=()
if [ "$smoke" = yes ]; then
  echo "bench: building (debug)..." >&2
  cargo build --quiet -p bench -p bench-sdk-floor "${functions[@]}"
  extra+=(--profile debug --tools-profile debug --out .local/bench/smoke-results --command "bench/run.sh --smoke")
else
  echo "bench: building (release)..." >&2
  if [ "$aggregate_only" = yes ]; then
    # The aggregation rows: the functions and the tools, no floors, no plot, no arm64 sizes.
    cargo build --quiet --release "${functions[@]}"
  else
    "$venv/bin/python" -c "import matplotlib" 2>/dev/null ||
      "$venv/bin/pip" install "${pip_quiet[@]}" 'matplotlib==3.*' >&2
    cargo build --quiet --release -p bench-sdk-floor "${functions[@]}"  # the SDK floor: the functions' profile
  fi
  cargo build --quiet --profile bench-tools -p bench  # the tools: opt-level 3
  if [ "${BENCH_ARM64:-1}" != 0 ] && [ "$aggregate_only" = no ]; then
    tools=.local/tools
    if [ ! -x "$tools/bin/cargo-lambda" ]; then
      [ -x "$tools/bin/python" ] || python3 -m venv "$tools"
      "$tools/bin/pip" install "${pip_quiet[@]}" 'cargo-lambda==1.*' >&2
    fi
    rustup target list --installed 2>/dev/null | grep -q aarch64-unknown-linux-gnu ||
      rustup target add aarch64-unknown-linux-gnu >&2
    echo "bench: building (release, arm64, cargo lambda)..." >&2
    # cargo-lambda runs `python3 -m ziglang`: its own venv first on PATH.
    if PATH="$PWD/$tools/bin:$PATH" cargo lambda build --quiet --release --arm64 "${functions[@]}" >&2; then
      extra+=(--arm64)
    else
      echo "bench: the arm64 build failed; arm64 sizes are left out" >&2
    fi
  fi
  scripts/local-rabbitmq.sh start >/dev/null 2>&1 ||
    echo "bench: RabbitMQ could not be started; its workload is skipped" >&2
fi
exec "$venv/bin/python" bench/run.py "${extra[@]}" "$@"
