"""Read the records of sqs-forwarder messages, aggregated or not.

With aggregation on, sqs-forwarder may put several records into one SQS
message (an *aggregate*). An aggregate carries the message attribute
``sqs-forwarder.aggregate`` (DataType ``String``, value ``1``, the format
version), and its body is one JSON object::

    {"v": 1, "records": [
        {"body": "...",
         "attributes": {"name": {"dataType": "String", "stringValue": "x"}},
         "deduplicationId": "..."},
        ...
    ]}

``body`` is always there; ``attributes`` (Lambda's messageAttributes shape)
and ``deduplicationId`` (FIFO targets) only when the record has them. A
message without the marker attribute is a plain message: one record, its
own body and attributes. The record at index ``i`` of message ``M`` has the
id ``M:i`` (a plain message's record is ``M:0``). A failed record is
reported by its message id ``M``: SQS redelivers the whole aggregate, so
processing must be idempotent, as with any SQS message. The full format is
described in docs/aggregation.md.

Use::

    from sqs_forwarder_records import deaggregate, body_bytes

    for rec in deaggregate(message):
        data = body_bytes(rec)   # bytes, base64-decoded if the forwarder encoded them
        ...

``deaggregate`` takes a message either as Lambda's SQS event gives it
(``messageId``, ``body``, ``messageAttributes`` with ``dataType`` /
``stringValue`` / ``binaryValue`` as base64 text) or as boto3's
``receive_message`` returns it (``MessageId``, ``Body``,
``MessageAttributes`` with ``DataType`` / ``StringValue`` / ``BinaryValue``
as bytes). A boto3 poller must ask for the attributes
(``MessageAttributeNames=["All"]``): without them an aggregate cannot be
told from a plain message. Returned records always use Lambda's shape.

``handler`` is an example Lambda handler for an SQS trigger with
``ReportBatchItemFailures``; replace ``process`` with your own work.

Standard library only: copy this file next to your function's code.
"""

import base64
import binascii
import json

AGGREGATE_ATTRIBUTE = "sqs-forwarder.aggregate"
"""The marker attribute of an aggregate (exact name)."""

ENCODING_ATTRIBUTE = "sqs-forwarder.encoding"
"""The forwarder's default ENCODING_ATTRIBUTE (value ``base64`` on encoded bodies)."""

VERSION = "1"
"""The aggregate format version this module reads."""


class AggregateError(ValueError):
    """A message claims to be an aggregate but cannot be read as one,
    or one of its attributes is malformed."""


def _field(mapping, lower, upper):
    """A key as Lambda spells it, else as boto3 spells it."""
    if lower in mapping:
        return mapping[lower]
    return mapping.get(upper)


def _attribute(where, name, value, boto3_shape):
    """One attribute value in Lambda's shape: {"dataType", "stringValue"} or
    {"dataType", "binaryValue" (base64 text)}. With boto3_shape, capitalised
    keys and bytes for BinaryValue are accepted as well."""
    if not isinstance(value, dict):
        raise AggregateError(f"{where}: attribute {name!r} is not an object")
    if boto3_shape:
        data_type = _field(value, "dataType", "DataType")
    else:
        data_type = value.get("dataType")
    if not isinstance(data_type, str) or not data_type:
        raise AggregateError(f"{where}: attribute {name!r} has no dataType")
    base = data_type.split(".", 1)[0]
    if base in ("String", "Number"):
        if boto3_shape:
            text = _field(value, "stringValue", "StringValue")
        else:
            text = value.get("stringValue")
        if not isinstance(text, str):
            raise AggregateError(
                f"{where}: attribute {name!r} ({data_type}) has no string stringValue"
            )
        return {"dataType": data_type, "stringValue": text}
    if base == "Binary":
        if boto3_shape:
            data = _field(value, "binaryValue", "BinaryValue")
        else:
            data = value.get("binaryValue")
        if boto3_shape and isinstance(data, (bytes, bytearray)):
            return {"dataType": data_type, "binaryValue": base64.b64encode(data).decode("ascii")}
        if not isinstance(data, str):
            raise AggregateError(f"{where}: attribute {name!r} ({data_type}) has no binaryValue")
        try:
            base64.b64decode(data, validate=True)
        except binascii.Error:
            raise AggregateError(
                f"{where}: attribute {name!r} ({data_type}) binaryValue is not base64"
            ) from None
        return {"dataType": data_type, "binaryValue": data}
    raise AggregateError(f"{where}: attribute {name!r} has unknown dataType {data_type!r}")


def _attributes(where, attrs, boto3_shape):
    if attrs is None:
        return {}
    if not isinstance(attrs, dict):
        raise AggregateError(f"{where}: attributes are not an object")
    return {name: _attribute(where, name, value, boto3_shape) for name, value in attrs.items()}


def _record(message_id, index, body, attributes, deduplication_id):
    return {
        "id": f"{message_id}:{index}",
        "messageId": message_id,
        "index": index,
        "body": body,
        "attributes": attributes,
        "deduplicationId": deduplication_id,
    }


def deaggregate(message):
    """The records of one SQS message, in order.

    ``message`` is a record of a Lambda SQS event or a message of boto3's
    ``receive_message`` (see the module docstring). Each record returned is
    a dict::

        {"id": "<messageId>:<i>", "messageId": ..., "index": i,
         "body": str, "attributes": {...Lambda's messageAttributes shape...},
         "deduplicationId": str or None}

    A plain message gives one record with the message's body and attributes
    (its deduplicationId is the message's MessageDeduplicationId when the
    event carries it, i.e. from a FIFO queue). An aggregate gives its
    records with their own attributes and deduplication ids.

    Raises AggregateError when the message is marked as an aggregate of
    another version, when its body is not the version 1 shape, or when an
    attribute is malformed.
    """
    message_id = _field(message, "messageId", "MessageId")
    if not isinstance(message_id, str):
        raise AggregateError("message has no messageId")
    body = _field(message, "body", "Body")
    where = f"message {message_id}"
    attrs = _attributes(where, _field(message, "messageAttributes", "MessageAttributes"), True)

    if AGGREGATE_ATTRIBUTE not in attrs:
        if not isinstance(body, str):
            raise AggregateError(f"{where}: body is not a string")
        system = _field(message, "attributes", "Attributes") or {}
        return [_record(message_id, 0, body, attrs, system.get("MessageDeduplicationId"))]

    version = attrs[AGGREGATE_ATTRIBUTE].get("stringValue")
    if version != VERSION:
        raise AggregateError(
            f"{where}: unknown aggregate version {version!r} "
            f"({AGGREGATE_ATTRIBUTE}); this consumer reads version {VERSION}"
        )
    if not isinstance(body, str):
        raise AggregateError(f"{where}: aggregate body is not a string")
    try:
        doc = json.loads(body)
    except ValueError as err:
        raise AggregateError(f"{where}: aggregate body is not JSON ({err})") from None
    if not isinstance(doc, dict):
        raise AggregateError(f"{where}: aggregate body is not a JSON object")
    v = doc.get("v")
    if type(v) is not int or v != int(VERSION):
        raise AggregateError(
            f"{where}: aggregate body has v={v!r}, the marker says version {VERSION}"
        )
    items = doc.get("records")
    if not isinstance(items, list):
        raise AggregateError(f"{where}: aggregate body has no \"records\" list")

    records = []
    for index, item in enumerate(items):
        at = f"{where} record {index}"
        if not isinstance(item, dict):
            raise AggregateError(f"{at}: not a JSON object")
        rec_body = item.get("body")
        if not isinstance(rec_body, str):
            raise AggregateError(f"{at}: no string \"body\"")
        rec_attrs = _attributes(at, item.get("attributes"), False)
        dedup = item.get("deduplicationId")
        if dedup is not None and not isinstance(dedup, str):
            raise AggregateError(f"{at}: deduplicationId is not a string")
        records.append(_record(message_id, index, rec_body, rec_attrs, dedup))
    return records


def body_bytes(rec, encoding_attribute=ENCODING_ATTRIBUTE):
    """The record's body as bytes: base64-decoded when the record carries
    the encoding attribute with value ``base64``, else UTF-8 encoded.

    Pass ``encoding_attribute`` if the forwarder's ENCODING_ATTRIBUTE
    setting names another attribute.
    """
    marker = rec["attributes"].get(encoding_attribute)
    if marker is not None and marker.get("stringValue") == "base64":
        try:
            return base64.b64decode(rec["body"], validate=True)
        except binascii.Error:
            raise AggregateError(
                f"record {rec['id']}: body marked base64 is not base64"
            ) from None
    return rec["body"].encode("utf-8")


def process(rec):
    """Placeholder for your work on one record: replace it.

    Raise to fail the record; its whole SQS message is then redelivered,
    so make the work idempotent (rec["id"] and rec["deduplicationId"] help).
    """
    print(json.dumps({"processed": rec["id"]}))


def handler(event, context):
    """Lambda handler for an SQS trigger with ReportBatchItemFailures.

    Each message is de-aggregated and its records processed in order; a
    message whose de-aggregation or any record fails is reported in
    batchItemFailures (its remaining records are skipped: SQS redelivers
    the whole message). From a FIFO queue, the messages after a failed one
    are reported too, unprocessed, to keep the order.
    """
    failures = []
    for message in event.get("Records", []):
        message_id = message["messageId"]
        fifo = message.get("eventSourceARN", "").endswith(".fifo")
        if failures and fifo:
            failures.append({"itemIdentifier": message_id})
            continue
        try:
            for rec in deaggregate(message):
                process(rec)
        except Exception as err:
            print(json.dumps({"failed": message_id, "error": f"{type(err).__name__}: {err}"}))
            failures.append({"itemIdentifier": message_id})
    return {"batchItemFailures": failures}
