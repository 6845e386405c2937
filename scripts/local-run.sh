#!/usr/bin/env bash
# The main job, locally: forward the sample messages in events/ to a local
# SQS queue through the shared crate, then show what landed in the queue.
#
#   scripts/local-run.sh [events/messages.ndjson]
#
# Installs and starts the local SQS endpoint (scripts/local-sqs.sh) if needed.
# Any forwarder variable from the README (MAX_MESSAGE_BYTES, OVERSIZE_POLICY,
# BODY_ENCODING, ...) can be set in the environment to see its effect.
set -euo pipefail
cd "$(dirname "$0")/.."
file="${1:-events/messages.ndjson}"

endpoint="$(scripts/local-sqs.sh start)"
export AWS_ENDPOINT_URL_SQS="$endpoint" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
py=.local/venv/bin/python

queue_url="$("$py" - "$endpoint" <<'PY'
import sys, boto3
sqs = boto3.client("sqs", endpoint_url=sys.argv[1], region_name="us-east-1")
import time
url = sqs.create_queue(QueueName=f"sqs-forwarder-demo-{int(time.time() * 1000)}")["QueueUrl"]
print(url)
PY
)"
echo "== forwarding $file to $queue_url"
status=0
QUEUE_URL="$queue_url" cargo run --quiet -p sqs-forwarder --example forward_file -- "$file" || status=$?

echo "== what landed in the queue"
"$py" - "$endpoint" "$queue_url" <<'PY'
import sys, time, boto3
sqs = boto3.client("sqs", endpoint_url=sys.argv[1], region_name="us-east-1")
url, seen, deadline = sys.argv[2], 0, time.time() + 6
while time.time() < deadline:
    out = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                              MessageAttributeNames=["All"])
    for m in out.get("Messages", []):
        seen += 1
        attrs = {k: v.get("StringValue", v.get("BinaryValue")) for k, v in m.get("MessageAttributes", {}).items()}
        print(f"{m['MessageId']}  body={m['Body']!r}  attributes={attrs}")
        sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
print(f"{seen} messages received")
sqs.delete_queue(QueueUrl=url)
PY
# The example exits 1 when some messages failed (the sample file has two that
# must fail); only a crash or a bad configuration (exit 2) fails the run.
[ "$status" -le 1 ] || exit "$status"
