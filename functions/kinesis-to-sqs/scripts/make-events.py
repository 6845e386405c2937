#!/usr/bin/env python3
"""Write the generated sample events of kinesis-to-sqs.

    .local/venv/bin/pip install aws_kinesis_agg   # once (the KPL aggregator, PyPI)
    .local/venv/bin/python functions/kinesis-to-sqs/scripts/make-events.py

Writes, relative to the repository root:

* events/kinesis-kpl.json: a Kinesis batch whose records are KPL aggregates
  built by the `aws_kinesis_agg` package (an encoder independent of the Rust
  code), with a plain record between them;
* functions/kinesis-to-sqs/tests/kpl-expected.json: the user records that
  went into each aggregate, which the Rust tests compare the de-aggregation
  against;
* events/kinesis-oversize.json: a batch with a record larger than any SQS
  message (1 MiB) between two small ones (needs no package).

The outputs are committed, so CI needs neither this script nor the package.
Everything is deterministic: running it again gives the same files.
"""

import base64
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[3]
STREAM = "arn:aws:kinesis:eu-west-1:123456789012:stream/orders"
SHARD = "shardId-000000000002"
# Sequence numbers as Kinesis writes them: 56 digits, rising within the shard.
SEQ_BASE = 49656959124367012489130437624381237153823019583911772194


def record(seq, partition_key, data, arrival):
    seq = str(seq)
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": partition_key,
            "sequenceNumber": seq,
            "data": base64.b64encode(data).decode("ascii"),
            "approximateArrivalTimestamp": arrival,
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"{SHARD}:{seq}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": "arn:aws:iam::123456789012:role/kinesis-to-sqs-role",
        "awsRegion": "eu-west-1",
        "eventSourceARN": STREAM,
    }


def write(path, value):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")


def kpl():
    from aws_kinesis_agg.aggregator import RecordAggregator

    # (partition key, data, explicit hash key) per user record, per aggregate;
    # None stands for a plain (not aggregated) record.
    batches = [
        [
            ("customer-1", b'{"order":1001,"customer":1,"total":"19.90"}', None),
            ("customer-2", b'{"order":1002,"customer":2,"total":"5.00"}', None),
            ("customer-1", b'{"order":1003,"customer":1,"total":"7.25"}', None),
            ("customer-3", '{"order":1004,"note":"café ☕ 🌍"}'.encode(), None),
            ("customer-2", b'{"order":1005,"customer":2,"total":"12.00"}', None),
        ],
        None,
        [
            ("sensor-α", bytes(range(0, 32)), None),
            ("sensor-β", b"temperature=21.5", "170141183460469231731687303715884105728"),
            ("sensor-α", b"\xf3\x89\x9a\xc2 not an aggregate inside", None),
            ("customer-1", b'{"order":1006,"customer":1,"total":"3.10"}', None),
        ],
        [
            ("customer-4", b'{"order":1007,"customer":4,"total":"99.99"}', None),
        ],
    ]
    records, expected = [], []
    for i, users in enumerate(batches):
        seq = SEQ_BASE + i * 1_000_000_000
        arrival = 1764410000.125 + i
        if users is None:
            data = b'{"order":2000,"source":"plain producer"}'
            records.append(record(seq, "customer-9", data, arrival))
            expected.append({
                "sequenceNumber": str(seq),
                "aggregated": False,
                "userRecords": [{"partitionKey": "customer-9", "explicitHashKey": None,
                                 "data": base64.b64encode(data).decode("ascii")}],
            })
            continue
        agg = RecordAggregator()
        for pk, data, ehk in users:
            full = agg.add_user_record(pk, data, ehk)
            assert full is None, "sample aggregates are small"
        pk, _ehk, blob = agg.clear_and_get().get_contents()
        records.append(record(seq, pk, blob, arrival))
        expected.append({
            "sequenceNumber": str(seq),
            "aggregated": True,
            "userRecords": [{"partitionKey": pk, "explicitHashKey": ehk,
                             "data": base64.b64encode(data).decode("ascii")}
                            for pk, data, ehk in users],
        })
    write(ROOT / "events/kinesis-kpl.json", {"Records": records})
    write(ROOT / "functions/kinesis-to-sqs/tests/kpl-expected.json", expected)


def oversize():
    # 1,100,000 bytes of valid text: larger than the largest SQS message (1 MiB).
    filler = "0123456789abcdef" * (1_100_000 // 16)
    big = ('{"report":"' + filler[: 1_100_000 - 13] + '"}').encode()
    assert len(big) == 1_100_000
    records = [
        record(SEQ_BASE + 10, "report-1", b'{"report":"small-before"}', 1764410100.5),
        record(SEQ_BASE + 20, "report-2", big, 1764410101.75),
        record(SEQ_BASE + 30, "report-3", b'{"report":"small-after"}', 1764410102.0),
    ]
    write(ROOT / "events/kinesis-oversize.json", {"Records": records})


if __name__ == "__main__":
    oversize()
    kpl()
