#!/usr/bin/env bash
# Install (once) and start a local SQS-compatible endpoint: the moto server,
# in a virtualenv under .local/ (never the system Python), with the SQS
# Extended Client library the offload tests consume with.
#
#   scripts/local-sqs.sh start   # idempotent; prints the endpoint URL
#   scripts/local-sqs.sh stop
#   scripts/local-sqs.sh status  # exit 0 when it answers
#
# Environment: LOCAL_SQS_PORT (default 4566).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.local/venv"
port="${LOCAL_SQS_PORT:-4566}"
pidfile="$root/.local/moto.pid"
log="$root/.local/moto.log"
endpoint="http://127.0.0.1:$port"

install() {
  if [ ! -x "$venv/bin/moto_server" ]; then
    mkdir -p "$root/.local"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'moto[server]==5.*' >&2
  fi
  # The official SQS Extended Client for Python: the consumer of the
  # claim-check end-to-end test (tests/offload.rs).
  if ! "$venv/bin/python" -c 'import sqs_extended_client' 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'amazon-sqs-extended-client==1.*' >&2
  fi
}

running() {
  curl -fsS -o /dev/null -X POST "$endpoint/" \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'X-Amz-Target: AmazonSQS.ListQueues' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=0' \
    -d '{}' 2>/dev/null
}

case "${1:-start}" in
  start)
    install
    if ! running; then
      nohup "$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
      echo $! >"$pidfile"
      for _ in $(seq 1 100); do running && break; sleep 0.1; done
      running || { echo "local SQS did not start on $endpoint; see $log" >&2; exit 1; }
    fi
    echo "$endpoint"
    ;;
  status)
    running
    ;;
  stop)
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
    ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
