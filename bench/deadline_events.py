#!/usr/bin/env python3
"""The two Kinesis events of bench/notes/2026-12-05-kinesis-deadline-at-128-mb.md,
written to the directory given (default: the current one):

- deadline-kpl-200k.json: 40 KPL records of 5,000 user records each, every
  user record 4 bytes under a partition key of its own (5.9 MB, within
  Lambda's 6 MB payload);
- deadline-kpl-4x149k.json: 4 KPL records of 149,000 one-byte user records
  under one partition key (each just under Kinesis's 1 MiB record).

Standard library only: the KPL framing (magic bytes, protobuf, MD5) written
by hand, as kinesis-to-sqs's src/kpl.rs reads it.
"""
import base64
import hashlib
import json
import os
import sys

MAGIC = bytes([0xF3, 0x89, 0x9A, 0xC2])


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


def field(number, data):
    """A length-delimited protobuf field."""
    return varint((number << 3) | 2) + varint(len(data)) + data


def aggregate(keys, records):
    """A KPL aggregate over partition `keys` of (key index, data) records."""
    protobuf = b"".join(field(1, k.encode()) for k in keys)
    for index, data in records:
        protobuf += field(3, varint(1 << 3) + varint(index) + field(3, data))
    return MAGIC + protobuf + hashlib.md5(protobuf).digest()


def event(aggregates):
    records = []
    for i, data in enumerate(aggregates):
        seq = f"49590338271490256608559692538361571095921575989{i:09d}"
        records.append({
            "kinesis": {"kinesisSchemaVersion": "1.0", "partitionKey": f"pk-{i}", "sequenceNumber": seq,
                        "data": base64.b64encode(data).decode(), "approximateArrivalTimestamp": 1764410000.0},
            "eventSource": "aws:kinesis", "eventVersion": "1.0", "eventID": f"shardId-000000000000:{seq}",
            "eventName": "aws:kinesis:record", "invokeIdentityArn": "arn:aws:iam::123456789012:role/r",
            "awsRegion": "us-east-1", "eventSourceARN": "arn:aws:kinesis:us-east-1:123456789012:stream/s"})
    return {"Records": records}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    keyed = [aggregate([f"k{a:02d}-{j:05d}" for j in range(5000)], [(j, b"abcd") for j in range(5000)])
             for a in range(40)]
    tiny = [aggregate(["k"], [(0, b"x")] * 149_000) for _ in range(4)]
    for name, aggregates in (("deadline-kpl-200k.json", keyed), ("deadline-kpl-4x149k.json", tiny)):
        path = os.path.join(out, name)
        with open(path, "w") as f:
            json.dump(event(aggregates), f)
        print(f"{path}: {os.path.getsize(path):,} bytes")


if __name__ == "__main__":
    main()
