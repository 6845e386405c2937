"""One sample event per function and what its answer must be: used by the
checks that run a built function (scripts/deploy_build.py) or the README's
cargo-lambda commands (scripts/readme_cargo_lambda.py)."""

import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# One sample event per function (by crate) for the runs of the built
# artifacts; events/ has more.
SAMPLES = {
    "kinesis-to-sqs": "events/kinesis-small.json",
    "s3-to-sqs": "events/s3-put.json",
    "apigw-to-sqs": "events/apigw-http-json-array.json",
    "rabbitmq-to-sqs": "events/rabbitmq-amazon-mq.json",
}


def expected(crate, path):
    """(test of the function's answer, what it must be, how many messages
    must land in the queue) for the sample event at `path` (relative to the
    repository), or None for a function or event this does not know."""
    event = json.load(open(os.path.join(ROOT, path), encoding="utf-8"))
    if crate == "kinesis-to-sqs" and "Records" in event:
        return (lambda answer: answer == {"batchItemFailures": []},
                "batchItemFailures []", len(event["Records"]))
    if crate == "s3-to-sqs" and "Records" in event:
        return lambda answer: True, "a response (no error)", len(event["Records"])
    if crate == "apigw-to-sqs" and not event.get("isBase64Encoded") and (event.get("body") or "").startswith("["):
        return (lambda answer: isinstance(answer, dict) and answer.get("statusCode") == 202,
                "HTTP 202", len(json.loads(event["body"])))
    if crate == "rabbitmq-to-sqs" and "rmqMessagesByQueue" in event:
        return (lambda answer: True, "a response (no error)",
                sum(len(v) for v in event["rmqMessagesByQueue"].values()))
    return None
