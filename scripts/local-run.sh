#!/usr/bin/env bash
# The main job, locally: build the four functions, run each on its sample
# events in events/ the way Lambda runs it (a local runtime-API harness),
# against a local SQS endpoint (and the RabbitMQ on 127.0.0.1:5672 when one
# is running), then show what landed in the queues.
#
#   scripts/local-run.sh
#
# Installs what it needs (the moto server and pika into .local/venv) and
# stops what it started. RUST_LOG=info shows the functions' own logs.
set -euo pipefail
cd "$(dirname "$0")/.."

started_sqs=no
scripts/local-sqs.sh status || started_sqs=yes
endpoint="$(scripts/local-sqs.sh start)"
cleanup() { if [ "$started_sqs" = yes ]; then scripts/local-sqs.sh stop; fi; }
trap cleanup EXIT
py=.local/venv/bin/python
"$py" -c "import pika" 2>/dev/null || .local/venv/bin/pip install --quiet --disable-pip-version-check 'pika==1.*' >&2

if (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null; then
  export LOCAL_RUN_RABBITMQ_URL="amqp://guest:guest@127.0.0.1:5672/%2f"
  echo "RabbitMQ: 127.0.0.1:5672"
else
  echo "RabbitMQ: not running on 127.0.0.1:5672; rabbitmq-to-sqs will be skipped"
fi
echo "local SQS (and S3): $endpoint"
echo "building the functions..."
cargo build --quiet -p kinesis-to-sqs -p s3-to-sqs -p apigw-to-sqs -p rabbitmq-to-sqs

export AWS_ENDPOINT_URL_SQS="$endpoint" AWS_ENDPOINT_URL_SECRETS_MANAGER="$endpoint"
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
"$py" scripts/local_run.py
