#!/usr/bin/env python3
"""A consumer written with the official Amazon SQS Extended Client Library for
Python (`amazon-sqs-extended-client` on PyPI), run by tests/offload.rs.

It receives messages the way an application using that library would, so
the library itself fetches offloaded payloads from S3, and writes what it got:
each body (base64-decoded when the forwarder's encoding marker says so) to
OUT_DIR/<n>.body, and one JSON line per message on stdout with the file,
the attributes the library handed over, and whether the library took the
message for an offloaded one (its receipt handle then embeds the S3 pointer).

usage: extended_client_consumer.py ENDPOINT QUEUE_URL BUCKET COUNT OUT_DIR [MARKER]
"""

import base64
import json
import os
import sys

import boto3
import sqs_extended_client  # noqa: F401  (patches boto3's Session)


def main():
    endpoint, queue_url, bucket, count, out_dir = sys.argv[1:6]
    marker = sys.argv[6] if len(sys.argv) > 6 else "sqs-forwarder.encoding"
    count = int(count)
    session = boto3.session.Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
    # The library makes its S3 client from the session when the SQS client is
    # created; point both at the local endpoint.
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    sqs = session.client("sqs", endpoint_url=endpoint)
    sqs.large_payload_support = bucket
    got = 0
    empty = 0
    while got < count and empty < 3:
        response = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
            MessageAttributeNames=["All"])
        messages = response.get("Messages", [])
        if not messages:
            empty += 1
            continue
        for m in messages:
            attributes = {
                name: v.get("StringValue") if "StringValue" in v else base64.b64encode(v["BinaryValue"]).decode()
                for name, v in m.get("MessageAttributes", {}).items()
            }
            body = m["Body"].encode("utf-8")
            if attributes.get(marker) == "base64":
                body = base64.b64decode(body)
            path = os.path.join(out_dir, f"{got}.body")
            with open(path, "wb") as f:
                f.write(body)
            offloaded = sqs.is_s3_receipt_handle(m["ReceiptHandle"])
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
            print(json.dumps({"file": path, "attributes": attributes, "offloaded": offloaded}), flush=True)
            got += 1


if __name__ == "__main__":
    main()
