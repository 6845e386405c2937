#!/usr/bin/env bash
# Make sure a local RabbitMQ broker is running for the rabbitmq-to-sqs
# end-to-end tests (they also use rabbitmqctl to drop a connection).
#
#   scripts/local-rabbitmq.sh start   # idempotent; prints the AMQP URL
#
# Starts rabbitmq-server (detached) when nothing answers on 127.0.0.1:5672,
# installing it from Debian's packages first when it is missing and we are root.
# Set RABBITMQ_TEST_URL to test against another broker instead.
set -euo pipefail
url="${RABBITMQ_TEST_URL:-amqp://guest:guest@127.0.0.1:5672/%2f}"

listening() { (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null; }

case "${1:-start}" in
  start)
    if [ -n "${RABBITMQ_TEST_URL:-}" ]; then echo "$url"; exit 0; fi
    if ! listening; then
      if ! command -v rabbitmq-server >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        echo "installing rabbitmq-server from Debian's packages" >&2
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server) >&2 || true
      fi
      command -v rabbitmq-server >/dev/null || {
        echo "RabbitMQ is not running on 127.0.0.1:5672 and rabbitmq-server is not installed (apt-get install rabbitmq-server), or set RABBITMQ_TEST_URL" >&2
        exit 1
      }
      rabbitmq-server -detached >&2
      for _ in $(seq 1 120); do listening && break; sleep 0.5; done
      listening || { echo "rabbitmq-server did not start listening on 127.0.0.1:5672" >&2; exit 1; }
      # The port opens before the broker takes logins: wait for it to boot.
      rabbitmqctl await_startup >/dev/null 2>&1 || true
    fi
    echo "$url"
    ;;
  *) echo "usage: $0 start" >&2; exit 2 ;;
esac
