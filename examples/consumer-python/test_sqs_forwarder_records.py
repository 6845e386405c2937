"""Tests of sqs_forwarder_records.

Run: python3 -m unittest discover -s examples/consumer-python -v
"""

import base64
import contextlib
import io
import json
import unittest
from unittest import mock

import sqs_forwarder_records as sfr
from sqs_forwarder_records import AggregateError, body_bytes, deaggregate, handler

MARKER = {"dataType": "String", "stringValue": "1"}


def aggregate(message_id, doc, marker=MARKER, body=None):
    """A Lambda SQS event record carrying an aggregate."""
    return {
        "messageId": message_id,
        "body": body if body is not None else json.dumps(doc, separators=(",", ":")),
        "messageAttributes": {
            "sqs-forwarder.aggregate": dict(marker, stringListValues=[], binaryListValues=[])
        },
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:eu-west-1:123456789012:orders",
    }


def plain(message_id, body, attrs=None, arn="arn:aws:sqs:eu-west-1:123456789012:orders"):
    return {
        "messageId": message_id,
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": attrs or {},
        "eventSource": "aws:sqs",
        "eventSourceARN": arn,
    }


PNG = b"\x89PNG\r\n\x1a\n\x00\xff"


class PlainMessage(unittest.TestCase):
    def test_one_record_with_its_own_body_and_attributes(self):
        msg = plain(
            "m-1",
            '{"order": 7}',
            {"tenant": {"dataType": "String", "stringValue": "acme",
                        "stringListValues": [], "binaryListValues": []}},
        )
        self.assertEqual(
            deaggregate(msg),
            [{
                "id": "m-1:0",
                "messageId": "m-1",
                "index": 0,
                "body": '{"order": 7}',
                "attributes": {"tenant": {"dataType": "String", "stringValue": "acme"}},
                "deduplicationId": None,
            }],
        )

    def test_no_message_attributes_key(self):
        msg = {"messageId": "m-2", "body": "hello"}
        [rec] = deaggregate(msg)
        self.assertEqual((rec["id"], rec["body"], rec["attributes"]), ("m-2:0", "hello", {}))

    def test_fifo_message_keeps_its_deduplication_id(self):
        msg = plain("m-3", "x")
        msg["attributes"]["MessageDeduplicationId"] = "dedup-3"
        self.assertEqual(deaggregate(msg)[0]["deduplicationId"], "dedup-3")

    def test_marker_name_is_exact(self):
        for name in ("SQS-Forwarder.Aggregate", "sqs-forwarder.aggregate ", "sqs-forwarder.aggregates"):
            msg = plain("m-4", "not json", {name: MARKER})
            [rec] = deaggregate(msg)
            self.assertEqual(rec["body"], "not json", name)
            self.assertEqual(rec["attributes"], {name: MARKER}, name)

    def test_plain_base64_body(self):
        msg = plain(
            "m-5",
            base64.b64encode(PNG).decode(),
            {"sqs-forwarder.encoding": {"dataType": "String", "stringValue": "base64"}},
        )
        self.assertEqual(body_bytes(deaggregate(msg)[0]), PNG)


class Aggregate(unittest.TestCase):
    DOC = {
        "v": 1,
        "records": [
            {"body": "first"},
            {
                "body": "{\"n\":2}",
                "attributes": {
                    "tenant": {"dataType": "String", "stringValue": "acme"},
                    "count": {"dataType": "Number.int", "stringValue": "42"},
                    "sig": {"dataType": "Binary", "binaryValue": base64.b64encode(b"\x00\x01\xfe").decode()},
                },
                "deduplicationId": "d-2",
            },
            {"body": "third \u00e9\u4e2d"},
        ],
    }

    def test_three_records_in_order(self):
        recs = deaggregate(aggregate("agg-1", self.DOC))
        self.assertEqual([r["id"] for r in recs], ["agg-1:0", "agg-1:1", "agg-1:2"])
        self.assertEqual([r["index"] for r in recs], [0, 1, 2])
        self.assertEqual([r["messageId"] for r in recs], ["agg-1"] * 3)
        self.assertEqual([r["body"] for r in recs], ["first", '{"n":2}', "third \u00e9\u4e2d"])
        self.assertEqual([r["deduplicationId"] for r in recs], [None, "d-2", None])
        self.assertEqual(recs[0]["attributes"], {})
        self.assertEqual(recs[2]["attributes"], {})
        self.assertEqual(
            recs[1]["attributes"],
            {
                "tenant": {"dataType": "String", "stringValue": "acme"},
                "count": {"dataType": "Number.int", "stringValue": "42"},
                "sig": {"dataType": "Binary", "binaryValue": "AAH+"},
            },
        )
        self.assertEqual(base64.b64decode(recs[1]["attributes"]["sig"]["binaryValue"]), b"\x00\x01\xfe")
        self.assertEqual(body_bytes(recs[2]), "third \u00e9\u4e2d".encode("utf-8"))

    def test_base64_record(self):
        doc = {
            "v": 1,
            "records": [
                {"body": "text"},
                {
                    "body": base64.b64encode(PNG).decode(),
                    "attributes": {"sqs-forwarder.encoding": {"dataType": "String", "stringValue": "base64"}},
                },
            ],
        }
        text, binary = deaggregate(aggregate("agg-2", doc))
        self.assertEqual(body_bytes(text), b"text")
        self.assertEqual(body_bytes(binary), PNG)

    def test_custom_encoding_attribute(self):
        doc = {"v": 1, "records": [{
            "body": base64.b64encode(PNG).decode(),
            "attributes": {"enc": {"dataType": "String", "stringValue": "base64"}},
        }]}
        [rec] = deaggregate(aggregate("agg-3", doc))
        self.assertEqual(body_bytes(rec, encoding_attribute="enc"), PNG)
        self.assertEqual(body_bytes(rec), base64.b64encode(PNG))

    def test_aggregate_attributes_are_not_given_to_records(self):
        msg = aggregate("agg-4", {"v": 1, "records": [{"body": "a"}]})
        msg["messageAttributes"]["other"] = {"dataType": "String", "stringValue": "x"}
        [rec] = deaggregate(msg)
        self.assertEqual(rec["attributes"], {})


class Boto3Shape(unittest.TestCase):
    def test_plain_message(self):
        msg = {
            "MessageId": "b-1",
            "ReceiptHandle": "rh",
            "Body": "hello",
            "Attributes": {"MessageDeduplicationId": "dd"},
            "MessageAttributes": {
                "tenant": {"DataType": "String", "StringValue": "acme"},
                "blob": {"DataType": "Binary.raw", "BinaryValue": b"\x01\x02\x03"},
            },
        }
        self.assertEqual(
            deaggregate(msg),
            [{
                "id": "b-1:0",
                "messageId": "b-1",
                "index": 0,
                "body": "hello",
                "attributes": {
                    "tenant": {"dataType": "String", "stringValue": "acme"},
                    "blob": {"dataType": "Binary.raw", "binaryValue": "AQID"},
                },
                "deduplicationId": "dd",
            }],
        )

    def test_aggregate(self):
        msg = {
            "MessageId": "b-2",
            "ReceiptHandle": "rh",
            "Body": json.dumps({"v": 1, "records": [
                {"body": "x", "deduplicationId": "x1"},
                {"body": base64.b64encode(PNG).decode(),
                 "attributes": {"sqs-forwarder.encoding": {"dataType": "String", "stringValue": "base64"}}},
            ]}),
            "MessageAttributes": {"sqs-forwarder.aggregate": {"DataType": "String", "StringValue": "1"}},
        }
        a, b = deaggregate(msg)
        self.assertEqual((a["id"], a["body"], a["deduplicationId"]), ("b-2:0", "x", "x1"))
        self.assertEqual((b["id"], body_bytes(b)), ("b-2:1", PNG))

    def test_unknown_version(self):
        msg = {
            "MessageId": "b-3",
            "Body": "{}",
            "MessageAttributes": {"sqs-forwarder.aggregate": {"DataType": "String", "StringValue": "2"}},
        }
        with self.assertRaisesRegex(AggregateError, r"b-3: unknown aggregate version '2'"):
            deaggregate(msg)


class Errors(unittest.TestCase):
    def assertRefused(self, msg, pattern):
        with self.assertRaisesRegex(AggregateError, pattern) as cm:
            deaggregate(msg)
        self.assertIsInstance(cm.exception, ValueError)
        return cm.exception

    def test_unknown_version(self):
        for value in ("2", "0", "1.0", " 1", ""):
            msg = aggregate("e-1", {"v": 1, "records": []}, marker={"dataType": "String", "stringValue": value})
            self.assertRefused(msg, "e-1: unknown aggregate version " + repr(value).replace(".", r"\."))

    def test_marker_without_string_value(self):
        msg = aggregate("e-2", {"v": 1, "records": []}, marker={"dataType": "Binary", "binaryValue": "AQ=="})
        self.assertRefused(msg, r"e-2: unknown aggregate version None")

    def test_body_not_json(self):
        self.assertRefused(aggregate("e-3", None, body='{"v":1,"records":['), r"e-3: aggregate body is not JSON")

    def test_body_not_object(self):
        self.assertRefused(aggregate("e-4", [1, 2]), r"e-4: aggregate body is not a JSON object")
        self.assertRefused(aggregate("e-4", None, body='"text"'), r"e-4: aggregate body is not a JSON object")

    def test_v_mismatch(self):
        for v in (2, "1", True, 1.0, None):
            doc = {"v": v, "records": [{"body": "a"}]}
            if v is None:
                doc.pop("v")
            self.assertRefused(aggregate("e-5", doc), r"e-5: aggregate body has v=.*marker says version 1")

    def test_records_missing_or_not_a_list(self):
        self.assertRefused(aggregate("e-6", {"v": 1}), r'e-6: aggregate body has no "records" list')
        self.assertRefused(aggregate("e-6", {"v": 1, "records": {"body": "a"}}), r'no "records" list')

    def test_record_without_string_body(self):
        self.assertRefused(aggregate("e-7", {"v": 1, "records": [{"body": "a"}, {"attributes": {}}]}),
                           r'e-7 record 1: no string "body"')
        self.assertRefused(aggregate("e-7", {"v": 1, "records": [{"body": 5}]}), r'e-7 record 0: no string "body"')
        self.assertRefused(aggregate("e-7", {"v": 1, "records": ["a"]}), r"e-7 record 0: not a JSON object")

    def test_bad_attribute_shape(self):
        cases = [
            ([], r"attributes are not an object"),
            ({"a": "x"}, r"attribute 'a' is not an object"),
            ({"a": {"stringValue": "x"}}, r"attribute 'a' has no dataType"),
            ({"a": {"dataType": "String"}}, r"attribute 'a' \(String\) has no string stringValue"),
            ({"a": {"dataType": "Number", "stringValue": 42}}, r"attribute 'a' \(Number\) has no string stringValue"),
            ({"a": {"dataType": "Binary", "stringValue": "x"}}, r"attribute 'a' \(Binary\) has no binaryValue"),
            ({"a": {"dataType": "Binary", "binaryValue": "not base64!"}}, r"attribute 'a' \(Binary\) binaryValue is not base64"),
            ({"a": {"dataType": "Blob", "stringValue": "x"}}, r"attribute 'a' has unknown dataType 'Blob'"),
            # Inside the body, only Lambda's shape (lower-case keys) is the format.
            ({"a": {"DataType": "String", "StringValue": "x"}}, r"attribute 'a' has no dataType"),
        ]
        for attrs, pattern in cases:
            doc = {"v": 1, "records": [{"body": "a", "attributes": attrs}]}
            self.assertRefused(aggregate("e-8", doc), r"e-8 record 0: " + pattern)

    def test_deduplication_id_not_a_string(self):
        doc = {"v": 1, "records": [{"body": "a", "deduplicationId": 3}]}
        self.assertRefused(aggregate("e-9", doc), r"e-9 record 0: deduplicationId is not a string")

    def test_bad_base64_body(self):
        doc = {"v": 1, "records": [{
            "body": "%%%",
            "attributes": {"sqs-forwarder.encoding": {"dataType": "String", "stringValue": "base64"}},
        }]}
        [rec] = deaggregate(aggregate("e-10", doc))
        with self.assertRaisesRegex(AggregateError, r"record e-10:0: body marked base64 is not base64"):
            body_bytes(rec)


class Handler(unittest.TestCase):
    def event(self, arn):
        good = aggregate("h-1", {"v": 1, "records": [{"body": "a"}, {"body": "b"}]})
        bad = aggregate("h-2", {"v": 1, "records": [{"body": "c"}, {"body": "boom"}, {"body": "d"}]})
        broken = aggregate("h-3", None, body="not json")
        after = plain("h-4", "e")
        for m in (good, bad, broken, after):
            m["eventSourceARN"] = arn
        return {"Records": [good, bad, broken, after]}

    def run_handler(self, event):
        seen = []

        def process(rec):
            seen.append(rec["id"])
            if rec["body"] == "boom":
                raise RuntimeError("cannot process")

        out = io.StringIO()
        with mock.patch.object(sfr, "process", process), contextlib.redirect_stdout(out):
            result = handler(event, None)
        return result, seen, out.getvalue()

    def test_reports_only_failing_messages(self):
        result, seen, log = self.run_handler(self.event("arn:aws:sqs:eu-west-1:123456789012:orders"))
        self.assertEqual(result, {"batchItemFailures": [{"itemIdentifier": "h-2"}, {"itemIdentifier": "h-3"}]})
        # h-2 stops at its failing record; h-4 (after the failures) is still processed.
        self.assertEqual(seen, ["h-1:0", "h-1:1", "h-2:0", "h-2:1", "h-4:0"])
        self.assertIn('"failed": "h-2", "error": "RuntimeError: cannot process"', log)
        self.assertIn('"failed": "h-3", "error": "AggregateError: message h-3: aggregate body is not JSON', log)

    def test_only_process_failure(self):
        event = {"Records": [
            aggregate("h-5", {"v": 1, "records": [{"body": "ok"}]}),
            aggregate("h-6", {"v": 1, "records": [{"body": "ok"}, {"body": "boom"}]}),
            plain("h-7", "ok"),
        ]}
        result, seen, _ = self.run_handler(event)
        self.assertEqual(result, {"batchItemFailures": [{"itemIdentifier": "h-6"}]})
        self.assertEqual(seen, ["h-5:0", "h-6:0", "h-6:1", "h-7:0"])

    def test_fifo_reports_the_rest_after_a_failure(self):
        result, seen, _ = self.run_handler(self.event("arn:aws:sqs:eu-west-1:123456789012:orders.fifo"))
        self.assertEqual(
            result,
            {"batchItemFailures": [{"itemIdentifier": "h-2"}, {"itemIdentifier": "h-3"}, {"itemIdentifier": "h-4"}]},
        )
        self.assertEqual(seen, ["h-1:0", "h-1:1", "h-2:0", "h-2:1"])

    def test_all_good(self):
        result, seen, log = self.run_handler({"Records": [plain("h-8", "x")]})
        self.assertEqual(result, {"batchItemFailures": []})
        self.assertEqual(seen, ["h-8:0"])

    def test_default_process_logs_the_record_id(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            result = handler({"Records": [aggregate("h-9", {"v": 1, "records": [{"body": "a"}, {"body": "b"}]})]}, None)
        self.assertEqual(result, {"batchItemFailures": []})
        self.assertEqual(
            [json.loads(line) for line in out.getvalue().splitlines()],
            [{"processed": "h-9:0"}, {"processed": "h-9:1"}],
        )


if __name__ == "__main__":
    unittest.main()
