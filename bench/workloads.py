"""The benchmark's workloads: one Lambda event each (and, for S3 lines mode,
the object it names), deterministic, written to a work folder.

Kinesis events stay under Lambda's 6 MB invocation limit (checked here),
as a Kinesis batch must. Sizes below are of the record data; the message
SQS counts also has the function's five Kinesis attributes (partition key,
shard id, sequence number, arrival time, stream ARN).
"""

import base64
import hashlib
import json
import os
import random

LAMBDA_LIMIT = 6_000_000  # 6 MB, as Lambda counts an invocation payload
REQUEST_CAP = 1_048_576
STREAM = "arn:aws:kinesis:us-east-1:123456789012:stream/bench"
SHARD = "shardId-000000000000"
SEQ_BASE = 49656959124367012489130437624381237153823019583911772194
ARRIVAL = 1795900000
BUCKET = "bench-bucket"
LINES_KEY = "exports/lines.ndjson"
LARGE_LINES_KEY = "exports/lines-100KB.ndjson"


def payload(n, length, rng=None):
    """ASCII JSON-ish text of exactly `length` bytes (at least 16)."""
    head = '{"n":%d,"p":"' % n
    tail = '"}'
    fill = length - len(head) - len(tail)
    if fill < 0:
        return ("x" * length)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    if rng is None:
        body = (alphabet * (fill // len(alphabet) + 1))[:fill]
    else:
        body = "".join(rng.choice(alphabet) for _ in range(min(fill, 64)))
        body = (body * (fill // max(1, len(body)) + 1))[:fill]
    return head + body + tail


def kinesis_attributes_size(partition_key, seq):
    """The bytes kinesis-to-sqs adds to a message with its default
    RECORD_ATTRIBUTES: name + data type + value of each."""
    parts = [
        ("kinesis.partitionKey", "String", partition_key),
        ("kinesis.shardId", "String", SHARD),
        ("kinesis.sequenceNumber", "String", str(seq)),
        ("kinesis.approximateArrivalTimestamp", "Number", str(ARRIVAL)),
        ("kinesis.streamArn", "String", STREAM),
    ]
    return sum(len(n) + len(t) + len(v.encode()) for n, t, v in parts)


def kinesis_record(i, data, partition_key):
    seq = str(SEQ_BASE + i)
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": partition_key,
            "sequenceNumber": seq,
            "data": base64.b64encode(data.encode()).decode("ascii"),
            "approximateArrivalTimestamp": ARRIVAL,
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"{SHARD}:{seq}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": "arn:aws:iam::123456789012:role/bench",
        "awsRegion": "us-east-1",
        "eventSourceARN": STREAM,
    }


def kinesis_event(items):
    """items: (data, partition key) in order."""
    return {"Records": [kinesis_record(i, d, pk) for i, (d, pk) in enumerate(items)]}


def uniform(count, size):
    return [(payload(i, size), f"pk-{i % 100}") for i in range(count)]


def exact_message(i, partition_key, message_size):
    """Data that makes a message of exactly `message_size` bytes as SQS
    counts it, with the function's attributes."""
    data_len = message_size - kinesis_attributes_size(partition_key, SEQ_BASE + i)
    return payload(i, data_len), partition_key


def mixed(scale=1.0):
    """Sizes and attributes placed to stress packing near the byte limits:

    * two messages of exactly 512 KiB with their attributes: together exactly
      the 1 MiB cap, one call (a packer one byte off needs two);
    * ten messages whose bodies add up to less than 1 MiB but whose
      attributes (long partition keys) push the ten over it: ten fit by
      count and by bodies, not by what SQS counts (a packer that forgets the
      attributes has its call refused);
    * nine messages filling a call to exactly 1 MiB, then small ones;
    * a seeded random run: mostly small records, some of a few KB, a few of
      tens of KB, partition keys of 1 to 256 characters;
    until the event is near the 6 MB limit.
    """
    rng = random.Random(9)
    items = []
    half = REQUEST_CAP // 2
    long_key = "k" * 200
    for _ in range(2):
        items.append(exact_message(len(items), "pair", half))
    n_tip = 10
    body = int(REQUEST_CAP * scale) // n_tip - 60  # ten bodies < 1 MiB
    for _ in range(n_tip):
        items.append((payload(len(items), body), long_key))
    nine = REQUEST_CAP // 9
    for j in range(9):
        size = nine if j < 8 else REQUEST_CAP - 8 * nine
        items.append(exact_message(len(items), f"nine-{j}", size))
    for _ in range(20):
        items.append((payload(len(items), 40), "tail"))
    budget = int(LAMBDA_LIMIT * 0.98)
    if scale < 1.0:
        items = [it for it in items if len(it[0]) < 20_000][:40]
        budget = 200_000

    def size_of(event_items):
        return len(json.dumps(kinesis_event(event_items)))

    total = size_of(items)
    while True:
        r = rng.random()
        if r < 0.80:
            n = rng.randint(20, 300)
        elif r < 0.97:
            n = rng.randint(1_000, 8_000)
        else:
            n = rng.randint(20_000, 90_000)
        pk = "p" * rng.randint(1, 256)
        item = (payload(len(items), n, rng), pk)
        grow = len(json.dumps(kinesis_record(len(items), *item))) + 2
        if total + grow > budget:
            break
        items.append(item)
        total += grow
    return items


KPL_MAGIC = bytes([0xF3, 0x89, 0x9A, 0xC2])


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(tag, wire, payload):
    """One protobuf field: key, then the length for wire type 2."""
    key = varint(tag << 3 | wire)
    return key + (varint(len(payload)) + payload if wire == 2 else payload)


def kpl_aggregate(user_records, partition_keys):
    """A KPL aggregated record (the KPL's messages.proto): magic, the
    AggregatedRecord protobuf, its MD5. user_records: (partition key index,
    data bytes)."""
    out = bytearray()
    for key in partition_keys:
        out += field(1, 2, key.encode())
    for pk_index, data in user_records:
        out += field(3, 2, field(1, 0, varint(pk_index)) + field(3, 2, data))
    body = bytes(out)
    return KPL_MAGIC + body + hashlib.md5(body).digest()


def kpl_event(aggregates, user_records_each, partition_keys=4):
    """Kinesis records, each one KPL aggregate of `user_records_each`
    one-byte user records (a letter each) spread over a few partition keys."""
    records = []
    keys = [f"pk-{k}" for k in range(partition_keys)]
    letters = b"abcdefghijklmnopqrstuvwxyz"
    for a in range(aggregates):
        users = [(i % partition_keys, letters[(a + i) % 26:(a + i) % 26 + 1])
                 for i in range(user_records_each)]
        agg = kpl_aggregate(users, keys)
        seq = str(SEQ_BASE + a)
        r = kinesis_record(a, "", f"agg-{a}")
        r["kinesis"]["data"] = base64.b64encode(agg).decode("ascii")
        r["kinesis"]["sequenceNumber"] = seq
        records.append(r)
    return {"Records": records}


def apigw_event(lines):
    body = "".join(lines)
    return {
        "version": "2.0",
        "routeKey": "POST /messages",
        "rawPath": "/messages",
        "rawQueryString": "",
        "headers": {"content-type": "application/x-ndjson", "content-length": str(len(body.encode())),
                    "host": "bench.execute-api.us-east-1.amazonaws.com"},
        "requestContext": {
            "accountId": "123456789012", "apiId": "bench",
            "domainName": "bench.execute-api.us-east-1.amazonaws.com", "domainPrefix": "bench",
            "http": {"method": "POST", "path": "/messages", "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "bench"},
            "requestId": "bench", "routeKey": "POST /messages", "stage": "$default",
            "time": "29/Nov/2026:13:41:03 +0000", "timeEpoch": 1795786863000,
        },
        "isBase64Encoded": False,
        "body": body,
    }


def s3_record(i, bucket, key, size, etag=None):
    obj = {"key": key, "size": size, "sequencer": "%018X" % (0x6749B1C0FFEE0000 + i)}
    if etag:
        obj["eTag"] = etag
    return {
        "eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
        "eventTime": "2026-11-29T13:00:01.001Z", "eventName": "ObjectCreated:Put",
        "userIdentity": {"principalId": "AWS:AIDAJDPLRKLG7UEXAMPLE"},
        "requestParameters": {"sourceIPAddress": "198.51.100.7"},
        "responseElements": {"x-amz-request-id": "A1B2C3D4E5F60708", "x-amz-id-2": "c2FtcGxl"},
        "s3": {"s3SchemaVersion": "1.0", "configurationId": "bench",
               "bucket": {"name": bucket, "ownerIdentity": {"principalId": "A3NL1KOZZKExample"},
                          "arn": f"arn:aws:s3:::{bucket}"},
               "object": obj},
    }


def write(folder, smoke=False):
    """Write every workload's event; return their descriptions."""
    os.makedirs(folder, exist_ok=True)
    k = 0.02 if smoke else 1.0

    def n(count):
        return max(1, int(count * k))

    out = []

    def event(name, source, value, messages, note, **extra):
        path = os.path.join(folder, f"{name}.json")
        data = json.dumps(value, separators=(",", ":"))
        with open(path, "w", encoding="utf-8") as f:
            f.write(data)
        if source == "kinesis" and len(data) > LAMBDA_LIMIT:
            raise SystemExit(f"{name}: {len(data)} bytes, over Lambda's 6 MB")
        out.append(dict(name=name, source=source, event=path, event_bytes=len(data),
                        messages=messages, note=note, **extra))

    # (name, records, description, bytes of data per record when they are all one size)
    kin = [
        ("kinesis-10000x40B", uniform(n(10_000), 40), "10,000 records of 40 bytes", 40),
        # 10,000 records of 200 bytes would be a 7.9 MB event, over Lambda's 6 MB: 7,300 make an
        # event of the 10,000 × 40 B one's size.
        ("kinesis-7300x200B", uniform(n(7_300), 200), "7,300 records of 200 bytes of JSON", 200),
        ("kinesis-3000x1KB", uniform(n(3_000), 1_000), "3,000 records of 1 KB", 1_000),
        ("kinesis-80x55KB", uniform(max(2, n(80)), 55_000), "80 records of 55 KB", 55_000),
        ("kinesis-mixed", mixed(0.05 if smoke else 1.0), "mixed sizes, placed at the byte limits", None),
    ]
    for name, items, note, size in kin:
        event(name, "kinesis", kinesis_event(items), len(items), note, record_bytes=size)

    # The event: KPL aggregates of one-byte user records, as many as
    # fit Lambda's 6 MB (five aggregates of 120,000: each under Kinesis's
    # 1 MiB record limit).
    each = 400 if smoke else 120_000
    event("kinesis-kpl-600000", "kinesis", kpl_event(5, each), 5 * each,
          "5 KPL aggregates of 120,000 one-byte user records (600,000 messages)", max_warm=2, floor_rounds=2,
          baseline=False, baseline_note="not run: 60,000 calls, about 100 s per invocation at boto3's "
          "measured per-call time, and the handler would need a KPL de-aggregator")

    lines = [payload(i, 1_023) + "\n" for i in range(n(1_000))]
    event("apigw-1000x1KB-ndjson", "apigw", apigw_event(lines), len(lines), "1,000 NDJSON lines of 1 KB",
          record_bytes=1_023)
    # A 5 MB request, within Lambda's 6 MB: each line one message of 200 KB.
    lines = [payload(i, 199_999) + "\n" for i in range(n(25))]
    event("apigw-25x200KB-ndjson", "apigw", apigw_event(lines), len(lines), "25 NDJSON lines of 200 KB (5 MB)",
          record_bytes=199_999)

    recs = [s3_record(i, "acme-media", f"incoming/2026/11/29/object-{i:05d}.json", 1000 + i,
                      "0cc175b9c0f1b6a831c399e2697726%02x" % (i % 256)) for i in range(n(100))]
    event("s3-100-notifications", "s3", {"Records": recs}, len(recs), "100-record notification")

    n_lines = n(100_000)
    obj_path = os.path.join(folder, "lines.ndjson")
    with open(obj_path, "w", encoding="ascii") as f:
        for i in range(n_lines):
            f.write(payload(i, 100) + "\n")
    event("s3-lines-100000", "s3-lines",
          {"Records": [s3_record(0, BUCKET, LINES_KEY, os.path.getsize(obj_path))]},
          n_lines, "100,000-line object (100 B lines), lines mode",
          object=f"{BUCKET}/{LINES_KEY}={obj_path}", record_bytes=100)
    n_lines = n(50)
    obj_path = os.path.join(folder, "lines-100KB.ndjson")
    with open(obj_path, "w", encoding="ascii") as f:
        for i in range(n_lines):
            f.write(payload(i, 100_000) + "\n")
    event("s3-lines-50x100KB", "s3-lines",
          {"Records": [s3_record(0, BUCKET, LARGE_LINES_KEY, os.path.getsize(obj_path))]},
          n_lines, "50-line object (100 KB lines, 5 MB), lines mode",
          object=f"{BUCKET}/{LARGE_LINES_KEY}={obj_path}", record_bytes=100_000)

    event("rabbitmq-10000", "rabbitmq",
          {"version": "0", "id": "bench", "detail-type": "Scheduled Event", "source": "aws.events",
           "account": "123456789012", "time": "2026-11-29T10:15:00Z", "region": "us-east-1",
           "resources": [], "detail": {}},
          n(10_000), "drain 10,000 messages (500 B) from RabbitMQ")
    return out
