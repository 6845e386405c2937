#!/usr/bin/env python3
"""The main job, locally: run every function on its sample events, the way
Lambda runs it, against the local SQS (and RabbitMQ when it is there), and
show what landed.

Called by scripts/local-run.sh, which installs and starts what this needs.
For each function: a fresh local queue, the function's binary under the
runtime-API harness (scripts/lambda_harness.py) with every matching file in
events/, then the queue read back. Prints, per function, each invocation's
answer, the forwarder's figures (messages in/sent/failed, batches, bytes),
what landed in the queue and one sample message. kinesis-to-sqs runs once
more with routing rules (`ROUTES`) over three queues, and shows what landed
in each.
"""

import glob
import json
import os
import subprocess
import sys
import time

import boto3

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENDPOINT = os.environ["AWS_ENDPOINT_URL_SQS"]
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
PROFILE = os.environ.get("LOCAL_RUN_PROFILE", "debug")
RABBIT = os.environ.get("LOCAL_RUN_RABBITMQ_URL", "")
STAMP = str(int(time.time() * 1000))

sqs = boto3.client("sqs", endpoint_url=ENDPOINT, region_name="us-east-1")
s3 = boto3.client("s3", endpoint_url=ENDPOINT, region_name="us-east-1")


def short(value, n=110):
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= n else text[: n - 1] + "…"


def drain(url):
    got, empty = [], 0
    while empty < 2:
        out = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                  MessageAttributeNames=["All"], MessageSystemAttributeNames=["MessageGroupId"])
        msgs = out.get("Messages", [])
        if not msgs:
            empty += 1
            continue
        for m in msgs:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        got.extend(msgs)
    return got


def events(prefix, skip=()):
    files = sorted(glob.glob(os.path.join(ROOT, "events", f"{prefix}-*.json")))
    return [f for f in files if os.path.basename(f) not in skip]


def invoke(function, files, env):
    """Run `function` on `files` under the harness, print each answer and
    the forwarder's figures; the harness's summary."""
    env = dict(env, LOG_FORMAT="text", RUST_LOG=os.environ.get("RUST_LOG", "warn"))
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "lambda_harness.py"),
           "--binary", os.path.join(TARGET, PROFILE, function), "--timeout", "30"]
    for k, v in env.items():
        cmd += ["--env", f"{k}={v}"]
    proc = subprocess.run(cmd + files, capture_output=True, text=True)
    lines = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    summary = next((l for l in lines if "summary" in l), {})
    for r in (l for l in lines if "event" in l):
        if r["event"] < len(files):
            name = os.path.basename(files[r["event"]])
        else:  # an invocation the function queued itself (continuation)
            name = f"  its own invocation {r['event'] - len(files) + 1}"
        answer = r.get("response") if r["status"] == "response" else r.get("error")
        if isinstance(answer, dict) and "statusCode" in answer:  # HTTP: status and body
            answer = f'HTTP {answer["statusCode"]} {short(answer.get("body", ""), 90)}'
        print(f"   {name:<42} {r['status']:<8} {short(answer, 100)}")
    if summary.get("init_error"):
        print(f"   init failed: {short(summary['init_error'], 200)}")
    if summary.get("exited_early") is not None or (proc.returncode != 0 and not lines):
        code = summary.get("exited_early")
        print(f"   the function stopped (exit code {code}); its last words:")
        for line in proc.stderr.strip().splitlines()[-5:]:
            print(f"     {short(line, 200)}")
    m = summary.get("metrics", {})
    print(f"   forwarder: {m.get('MessagesIn', 0)} messages in, {m.get('MessagesSent', 0)} sent, "
          f"{m.get('MessagesFailed', 0)} failed, {m.get('MessagesDropped', 0)} dropped, "
          f"{m.get('BatchesSent', 0)} SendMessageBatch calls, {m.get('BytesSent', 0)} bytes; "
          f"cold start {summary.get('cold_start_ms')} ms")
    if m.get("FilteredOut") or m.get("Unmatched"):
        print(f"   rules: {m.get('FilteredOut', 0)} filtered out, {m.get('Unmatched', 0)} unmatched and dropped")
    if summary.get("queued"):
        print(f"   the function invoked itself {summary['queued']} times (continuation)")
    answered = summary.get("answered")
    return answered == summary.get("events", len(files)) and answered is not None and not summary.get("init_error")


def show(label, url):
    """Read `url` empty, print what landed and one sample, delete it."""
    landed = drain(url)
    print(f"   landed in {label}: {len(landed)} messages")
    if landed:
        sample = landed[0]
        # The function's own attributes (kinesis.*, ...) after the others (the rules' shaped ones).
        attrs = dict(sorted(((k, v.get("StringValue", "<binary>"))
                             for k, v in sample.get("MessageAttributes", {}).items()), key=lambda kv: "." in kv[0]))
        print(f"   sample: body={short(sample['Body'])}")
        if attrs:
            print(f"           attributes={short(attrs, 150)}")
        group = sample.get("Attributes", {}).get("MessageGroupId")
        if group:
            print(f"           group id={group}")
    sqs.delete_queue(QueueUrl=url)


def run(function, files, env, setup=None):
    url = sqs.create_queue(QueueName=f"local-{function}-{STAMP}")["QueueUrl"]
    print(f"\n== {function}: {len(files)} sample events -> {url}")
    if setup:
        setup()
    ok = invoke(function, files, dict(env, QUEUE_URL=url))
    show("the queue", url)
    return ok


def routed():
    """kinesis-to-sqs with routing rules (ROUTES) on events/kinesis-orders.json:
    three queues, records filtered, routed by partition key and by a JSON
    field, shaped with attributes and a group id (a FIFO queue's group, a
    standard queue's fair-queue tenant)."""
    default = sqs.create_queue(QueueName=f"local-routed-default-{STAMP}")["QueueUrl"]
    eu = sqs.create_queue(QueueName=f"local-routed-eu-{STAMP}")["QueueUrl"]
    audit = sqs.create_queue(QueueName=f"local-routed-audit-{STAMP}.fifo",
                             Attributes={"FifoQueue": "true"})["QueueUrl"]
    rules = {
        "targets": {"eu": eu, "audit": audit},
        "filter": [{"field": "/type", "prefix": "order."}],
        "routes": [{"when": {"key": "partition_key", "equals": "audit"}, "target": "audit"},
                   {"when": {"field": "/region", "prefix": "eu-"}, "target": "eu"}],
        "unmatched": "default",
        "attributes": {"region": {"field": "/region", "type": "String"},
                       "total": {"field": "/total", "type": "Number"}},
        "group_id": {"field": "/customer"},
    }
    files = [os.path.join(ROOT, "events", "kinesis-orders.json")]
    print(f"\n== kinesis-to-sqs, routed (ROUTES): {len(files)} sample event -> three queues")
    print(f"   ROUTES={short(json.dumps(rules, separators=(',', ':')).replace(ENDPOINT, '<local SQS>'), 600)}")
    print("   (a heartbeat is filtered out; a record whose total is not a number cannot be shaped: "
          "it is reported in batchItemFailures as ShapeFailed)")
    ok = invoke("kinesis-to-sqs", files, {"QUEUE_URL": default, "ROUTES": json.dumps(rules)})
    show("default (standard)", default)
    show("eu (standard, fair-queue tenants)", eu)
    show("audit (FIFO)", audit)
    return ok


def s3_lines():
    bucket = f"local-lines-{STAMP}"
    s3.create_bucket(Bucket=bucket)
    body = "".join(json.dumps({"line": i, "text": f"row {i} ✓"}) + "\n" for i in range(1, 501))
    put = s3.put_object(Bucket=bucket, Key="exports/day 1.ndjson", Body=body.encode())
    event = json.load(open(os.path.join(ROOT, "events", "s3-put.json"), encoding="utf-8"))
    rec = event["Records"][0]
    rec["s3"]["bucket"]["name"] = bucket
    rec["s3"]["bucket"]["arn"] = f"arn:aws:s3:::{bucket}"
    rec["s3"]["object"]["key"] = "exports/day+1.ndjson"
    rec["s3"]["object"]["size"] = len(body.encode())
    rec["s3"]["object"]["eTag"] = put["ETag"].strip('"')
    rec["s3"]["object"].pop("versionId", None)
    path = os.path.join(ROOT, ".local", "s3-lines-event.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(event, f)
    return path


def s3_continued():
    """An object read by a chain of four invocations (CONTINUATION): 2,000
    lines, at most 500 an invocation."""
    bucket = f"local-chain-{STAMP}"
    s3.create_bucket(Bucket=bucket)
    body = "".join(json.dumps({"line": i}) + "\n" for i in range(1, 2001))
    put = s3.put_object(Bucket=bucket, Key="exports/big.ndjson", Body=body.encode())
    event = json.load(open(os.path.join(ROOT, "events", "s3-put.json"), encoding="utf-8"))
    rec = event["Records"][0]
    rec["s3"]["bucket"]["name"] = bucket
    rec["s3"]["bucket"]["arn"] = f"arn:aws:s3:::{bucket}"
    rec["s3"]["object"]["key"] = "exports/big.ndjson"
    rec["s3"]["object"]["size"] = len(body.encode())
    rec["s3"]["object"]["eTag"] = put["ETag"].strip('"')
    rec["s3"]["object"].pop("versionId", None)
    path = os.path.join(ROOT, ".local", "s3-chain-event.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(event, f)
    return path, bucket


def rabbit_setup(queue):
    def setup():
        import pika  # installed by local-run.sh
        conn = pika.BlockingConnection(pika.URLParameters(RABBIT))
        ch = conn.channel()
        ch.queue_declare(queue=queue, durable=True)
        for i in range(25):
            props = pika.BasicProperties(content_type="application/json", correlation_id=f"order-{i}",
                                         headers={"tenant": "acme", "attempt": 1}, delivery_mode=2)
            ch.basic_publish("", queue, json.dumps({"order": i, "item": "café ☕"}).encode(), props)
        conn.close()
        print(f"   published 25 messages to RabbitMQ queue {queue}")
    return setup


def main():
    ok = True
    ok &= run("kinesis-to-sqs", events("kinesis"), {})
    ok &= routed()
    # Notification mode forwards the notifications; the objects need not exist.
    ok &= run("s3-to-sqs", events("s3"), {})
    # Lines mode reads a real object from the local S3: one message per line.
    lines_event = s3_lines()
    ok &= run("s3-to-sqs", [lines_event], {"MODE": "lines", "S3_FORCE_PATH_STYLE": "true",
                                           "AWS_ENDPOINT_URL_S3": ENDPOINT})
    # Distributed Map batches (what the template's state machine sends): one
    # message per item, whatever MODE says.
    ok &= run("s3-to-sqs", events("sfn-map-batch"), {})
    # Continuation: one object, a chain of invocations (the harness stands
    # in for Lambda's Invoke API).
    chain_event, chain_bucket = s3_continued()
    ok &= run("s3-to-sqs", [chain_event], {"MODE": "lines", "S3_FORCE_PATH_STYLE": "true",
                                           "AWS_ENDPOINT_URL_S3": ENDPOINT, "CONTINUATION": "true",
                                           "CONTINUATION_BUCKETS": chain_bucket,
                                           "CONTINUATION_AFTER_LINES": "500"})
    ok &= run("apigw-to-sqs", events("apigw"), {})
    if RABBIT:
        queue = f"local-orders-{STAMP}"
        ok &= run("rabbitmq-to-sqs", events("rabbitmq"),
                  {"RABBITMQ_URL": RABBIT, "RABBITMQ_QUEUES": queue}, rabbit_setup(queue))
    else:
        print("\n== rabbitmq-to-sqs: skipped: no RabbitMQ on 127.0.0.1:5672 "
              "(start one with `rabbitmq-server -detached` and run again)")
    print("\nall functions answered every event" if ok else "\nsome function did not answer every event (see above)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
