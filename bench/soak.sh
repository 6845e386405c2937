#!/usr/bin/env bash
# The fault-injection soak: each function over many invocations against the
# bench stub storing every message and injecting faults into
# SendMessageBatch, each event source replayed as it replays, then the queue
# compared with the input. Prints the figures and `soak: N passed, N failed`;
# exits nonzero when anything was lost or a FIFO queue holds a duplicate.
# See bench/soak.md.
#
#   bench/soak.sh                      # 100,000 records per function and queue, 30% faults, release builds
#   bench/soak.sh --smoke              # 2,000 records, debug builds (CI; well under a minute after the build)
#   bench/soak.sh --only kinesis,s3    # some functions; other options: bench/soak.py --help
#
# Installs pika from PyPI into .local/venv; starts RabbitMQ through
# scripts/local-rabbitmq.sh when it can (rabbitmq-to-sqs is skipped otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."

smoke=no
for a in "$@"; do [ "$a" = --smoke ] && smoke=yes; done
functions=(-p kinesis-to-sqs -p s3-to-sqs -p apigw-to-sqs -p rabbitmq-to-sqs)
venv=.local/venv

[ -x "$venv/bin/python" ] || { mkdir -p .local; python3 -m venv "$venv"; }
"$venv/bin/python" -c "import pika" 2>/dev/null ||
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'pika==1.*' >&2

if [ "$smoke" = yes ]; then
  echo "soak: building (debug)..." >&2
  cargo build --quiet -p bench "${functions[@]}"
else
  echo "soak: building (release)..." >&2
  cargo build --quiet --release "${functions[@]}"
  cargo build --quiet --release -p bench
fi
scripts/local-rabbitmq.sh start >/dev/null 2>&1 ||
  echo "soak: RabbitMQ could not be started; rabbitmq-to-sqs is skipped" >&2
exec "$venv/bin/python" bench/soak.py "$@"
