"""Baseline Lambda handlers: the forwarders most users write with boto3.

Each handler builds the same messages as the project's function (same
bodies, same attributes, so the same bytes reach SQS) and sends them the
usual way: `send_message_batch` in chunks of 10, one call after another.
That is the baseline the benchmark compares with; it is not meant to be
good, only typical.

One concession: chunks of 10 break SQS's 1 MiB request cap when messages
are large, and then SQS refuses the call (`BatchRequestTooLong`). The
handlers split such a chunk in halves and try again, as people do once
they hit it; the refused calls are counted by the stub and shown in the
table. Without it the handler would fail the whole batch on the mixed
Kinesis workload.

Environment: QUEUE_URL, and the AWS_* variables of the harness.
"""

import base64
import json
import os

import boto3
from botocore.exceptions import ClientError

QUEUE_URL = os.environ["QUEUE_URL"]
sqs = boto3.client("sqs")
s3 = boto3.client("s3", config=boto3.session.Config(s3={"addressing_style": "path"}))


def send_chunk(chunk):
    """Send up to 10 entries; the ids of the entries SQS refused."""
    try:
        resp = sqs.send_message_batch(QueueUrl=QUEUE_URL, Entries=chunk)
    except ClientError as e:
        if "BatchRequestTooLong" in e.response["Error"]["Code"] and len(chunk) > 1:
            half = len(chunk) // 2
            return send_chunk(chunk[:half]) + send_chunk(chunk[half:])
        raise
    return [f["Id"] for f in resp.get("Failed", [])]


def send_all(entries):
    failed = []
    for start in range(0, len(entries), 10):
        failed += send_chunk(entries[start:start + 10])
    return failed


def string(value):
    return {"DataType": "String", "StringValue": value}


def number(value):
    return {"DataType": "Number", "StringValue": str(value)}


def kinesis(event, context):
    records = event["Records"]
    entries = []
    for i, r in enumerate(records):
        k = r["kinesis"]
        entries.append({
            "Id": str(i),
            "MessageBody": base64.b64decode(k["data"]).decode("utf-8"),
            "MessageAttributes": {
                "kinesis.partitionKey": string(k["partitionKey"]),
                "kinesis.shardId": string(r["eventID"].split(":")[0]),
                "kinesis.sequenceNumber": string(k["sequenceNumber"]),
                "kinesis.approximateArrivalTimestamp": number(int(k["approximateArrivalTimestamp"])),
                "kinesis.streamArn": string(r["eventSourceARN"]),
            },
        })
    failed = send_all(entries)
    return {"batchItemFailures": [{"itemIdentifier": records[int(i)]["kinesis"]["sequenceNumber"]}
                                  for i in failed]}


def s3_notification(event, context):
    entries = []
    for i, r in enumerate(event["Records"]):
        o = r["s3"]["object"]
        body = {"eventName": r["eventName"], "eventTime": r["eventTime"], "region": r["awsRegion"],
                "bucket": r["s3"]["bucket"]["name"], "key": o["key"]}
        for field in ("size", "eTag", "versionId", "sequencer"):
            if field in o:
                body[field] = o[field]
        body["via"] = "notification"
        entries.append({
            "Id": str(i),
            "MessageBody": json.dumps(body, separators=(",", ":")),
            "MessageAttributes": {"eventName": string(r["eventName"]),
                                  "bucket": string(r["s3"]["bucket"]["name"])},
        })
    failed = send_all(entries)
    if failed:
        raise RuntimeError(f"{len(failed)} messages not sent")
    return {"sent": len(entries)}


def s3_lines(event, context):
    sent = 0
    for r in event["Records"]:
        bucket, key = r["s3"]["bucket"]["name"], r["s3"]["object"]["key"]
        body = s3.get_object(Bucket=bucket, Key=key)["Body"]
        chunk, failed = [], []
        for number_, line in enumerate(body.iter_lines(), 1):
            if not line:
                continue
            chunk.append({"Id": str(number_), "MessageBody": line.decode("utf-8"),
                          "MessageAttributes": {"bucket": string(bucket), "key": string(key),
                                                "line": number(number_)}})
            if len(chunk) == 10:
                failed += send_chunk(chunk)
                sent += len(chunk)
                chunk = []
        if chunk:
            failed += send_chunk(chunk)
            sent += len(chunk)
        if failed:
            raise RuntimeError(f"{len(failed)} lines not sent")
    return {"sent": sent}


def apigw(event, context):
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        body = base64.b64decode(body).decode("utf-8")
    entries = []
    for line in body.split("\n"):
        if line.strip():
            json.loads(line)  # each line must be JSON, as the function checks
            entries.append({"Id": str(len(entries)), "MessageBody": line})
    failed = send_all(entries)
    status = 202 if not failed else 207
    return {"statusCode": status, "headers": {"content-type": "application/json"},
            "body": json.dumps({"sent": len(entries) - len(failed), "failed": len(failed)})}


def rabbitmq(event, context):
    import pika  # only this handler needs it

    queue = os.environ["RABBITMQ_QUEUES"]
    conn = pika.BlockingConnection(pika.URLParameters(os.environ["RABBITMQ_URL"]))
    ch = conn.channel()
    ch.basic_qos(prefetch_count=int(os.environ.get("RABBITMQ_PREFETCH", "100")))
    chunk, tags, sent = [], [], 0
    for method, props, body in ch.consume(queue, inactivity_timeout=0.2):
        if method is None:
            break
        attrs = {"amqp.routing-key": string(method.routing_key)}
        if props.content_type:
            attrs["amqp.content-type"] = string(props.content_type)
        chunk.append({"Id": str(len(chunk)), "MessageBody": body.decode("utf-8"), "MessageAttributes": attrs})
        tags.append(method.delivery_tag)
        if len(chunk) == 10:
            failed = set(send_chunk(chunk))
            for entry, tag in zip(chunk, tags):
                if entry["Id"] in failed:
                    ch.basic_nack(tag, requeue=True)
                else:
                    ch.basic_ack(tag)
            sent += len(chunk) - len(failed)
            chunk, tags = [], []
    if chunk:
        failed = set(send_chunk(chunk))
        for entry, tag in zip(chunk, tags):
            (ch.basic_nack(tag, requeue=True) if entry["Id"] in failed else ch.basic_ack(tag))
        sent += len(chunk) - len(failed)
    ch.cancel()
    conn.close()
    return {"sent": sent}
