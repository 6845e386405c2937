//! Reading the incoming event.
//!
//! Three shapes arrive:
//! * an S3 event notification delivered straight to Lambda (`Records`, each
//!   with `eventVersion` 2.x and `eventSource` `aws:s3`), whose object keys
//!   are URL-encoded form-style (`+` for a space, then percent-encoding);
//! * the `s3:TestEvent` S3 sends once when a notification is configured (no
//!   `Records`): acknowledged, nothing forwarded;
//! * an S3 event delivered through EventBridge (`source` `aws.s3`,
//!   `detail-type` `Object Created`, `Object Deleted`, ...), whose keys are
//!   not encoded.
//!
//! Each record becomes an [`ObjectEvent`] with its key decoded and its event
//! named in the notification vocabulary (`ObjectCreated:Put`), whichever way
//! it came, so that one `EVENT_NAMES` filter and one message shape serve both.

use std::borrow::Cow;

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use aws_lambda_events::event::s3::{S3Event, S3EventRecord};
use percent_encoding::percent_decode_str;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use sqs_forwarder::event_reader::{self, Misread};

/// How an event reached the function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// An S3 event notification (`Records`).
    Notification,
    /// An S3 event through EventBridge.
    EventBridge,
}

impl Via {
    /// The name written in message bodies.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Notification => "notification",
            Via::EventBridge => "eventbridge",
        }
    }
}

/// One S3 event about one object, whichever way it came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectEvent {
    /// Notification or EventBridge.
    pub via: Via,
    /// The event name in the notification vocabulary, e.g. `ObjectCreated:Put`.
    pub event_name: String,
    /// When it happened, `2026-11-29T10:15:30.123Z`.
    pub event_time: Option<String>,
    /// The bucket's region.
    pub region: Option<String>,
    /// The bucket.
    pub bucket: String,
    /// The object key, decoded.
    pub key: String,
    /// The object size in bytes (not on deletions).
    pub size: Option<i64>,
    /// The ETag, as S3 gives it (no quotes).
    pub etag: Option<String>,
    /// The version id (versioned buckets).
    pub version_id: Option<String>,
    /// S3's ordering token for events about one key (PUT and DELETE only).
    pub sequencer: Option<String>,
    /// EventBridge only: the `detail-type` as sent.
    pub detail_type: Option<String>,
    /// EventBridge only: `detail.reason` (`PutObject`, `DeleteObject`, ...).
    pub reason: Option<String>,
}

impl ObjectEvent {
    /// Whether the event says an object was created (so it has content).
    pub fn is_created(&self) -> bool {
        self.event_name == "ObjectCreated" || self.event_name.starts_with("ObjectCreated:")
    }

    /// `s3://bucket/key`, for messages and logs.
    pub fn location(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.key)
    }
}

/// What the event asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// Events about objects, in the order they came.
    Objects(Vec<ObjectEvent>),
    /// The `s3:TestEvent`: nothing to forward.
    TestEvent {
        /// The bucket whose notification was configured, if given.
        bucket: Option<String>,
    },
}

/// An event this function cannot read. Retrying it cannot help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// Not valid JSON of any known S3 shape, or a required field missing.
    #[error("malformed S3 event: {0}")]
    Malformed(String),
    /// A version this function does not know.
    #[error(
        "unknown S3 event version {version:?} in {place}: this function reads notification eventVersion 2.x and EventBridge version 0"
    )]
    UnknownVersion {
        /// Where: `record 2`, `EventBridge event`.
        place: String,
        /// The version found.
        version: String,
    },
    /// An event from another service.
    #[error("not an S3 event: {0}")]
    NotS3(String),
}

/// The event as lambda_runtime hands it to the function, read by
/// [`parse_json`] from the invocation's body: borrowed, not copied, and
/// without lambda_runtime's per-field path tracking (see
/// [`sqs_forwarder::event_reader`]). An event this function cannot read is kept
/// as its error, so that the invocation fails with the function's own
/// `S3ToSqs.InvalidEvent` and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event(pub Result<Incoming, EventError>);

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <&'de RawValue>::deserialize(d)?;
        Ok(Event(parse_json(raw.get())))
    }
}

/// Read an event given as a JSON value (as [`parse_json`] reads its text).
pub fn parse(event: Value) -> Result<Incoming, EventError> {
    parse_json(&event.to_string())
}

/// The top-level fields that say which shape an event has, borrowed from
/// its text: the rest is skipped, not read.
#[derive(Deserialize)]
struct Shape<'a> {
    #[serde(rename = "Records", default, borrow, deserialize_with = "present")]
    records: Option<&'a RawValue>,
    #[serde(rename = "Event", default, borrow, deserialize_with = "present")]
    event: Option<&'a RawValue>,
    #[serde(rename = "Bucket", default, borrow, deserialize_with = "present")]
    bucket: Option<&'a RawValue>,
    #[serde(rename = "detail-type", default, borrow, deserialize_with = "present")]
    detail_type: Option<&'a RawValue>,
}

/// A record's source and version, read before the record itself so that
/// an SNS or SQS record, or a future version, is named as such.
#[derive(Default, Deserialize)]
struct Head<'a> {
    #[serde(rename = "eventSource", default, borrow, deserialize_with = "present")]
    source: Option<&'a RawValue>,
    #[serde(rename = "eventVersion", default, borrow, deserialize_with = "present")]
    version: Option<&'a RawValue>,
}

/// A field that is there, whatever its value (`null` included).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

/// A raw value's text when it is a JSON string.
fn text(raw: &RawValue) -> Option<Cow<'_, str>> {
    serde_json::from_str::<&str>(raw.get())
        .map(Cow::Borrowed)
        .or_else(|_| serde_json::from_str::<String>(raw.get()).map(Cow::Owned))
        .ok()
}

/// Read an event from its JSON text.
pub fn parse_json(json: &str) -> Result<Incoming, EventError> {
    if !json.trim_start().starts_with('{') {
        // Not an object (a small event, read whole only to name its kind).
        let got = serde_json::from_str::<Value>(json).map_or("no JSON", |v| kind(&v));
        return Err(EventError::Malformed(format!(
            "expected a JSON object, got {got}"
        )));
    }
    let shape: Shape<'_> =
        serde_json::from_str(json).map_err(|e| EventError::Malformed(e.to_string()))?;
    if let Some(records) = shape.records {
        return parse_notification(json, records);
    }
    if shape.event.and_then(text).as_deref() == Some("s3:TestEvent") {
        let bucket = shape.bucket.and_then(text).map(Cow::into_owned);
        return Ok(Incoming::TestEvent { bucket });
    }
    if shape.detail_type.is_some() {
        let event = serde_json::from_str(json).map_err(|e| EventError::Malformed(e.to_string()))?;
        return parse_eventbridge(event);
    }
    Err(EventError::Malformed(
        "neither an S3 event notification (no \"Records\"), an s3:TestEvent, nor an EventBridge event (no \"detail-type\")".into(),
    ))
}

/// The event as `T`, or why not, naming the field at fault
/// (`detail.object: missing field ...`).
fn typed<T: serde::de::DeserializeOwned>(event: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(event).map_err(|e| {
        located(Misread {
            path: Some(e.path().to_string()).filter(|p| p != "."),
            error: e.inner().to_string(),
        })
    })
}

/// `path: error`, or the error alone when it is the whole document's.
fn located(m: Misread) -> String {
    match m.path {
        Some(p) => format!("{p}: {}", m.error),
        None => m.error,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn parse_notification(json: &str, records: &RawValue) -> Result<Incoming, EventError> {
    // Check each record's source and version before the typed read, so that
    // an SNS or SQS record, or a future version, is named as such rather
    // than reported as a missing field.
    if let Ok(records) = serde_json::from_str::<Vec<&RawValue>>(records.get()) {
        for (index, record) in records.iter().enumerate() {
            let head: Head<'_> = serde_json::from_str(record.get()).unwrap_or_default();
            if let Some(source) = head.source.and_then(text)
                && source != "aws:s3"
            {
                return Err(EventError::NotS3(format!(
                    "record {index} comes from {source:?}, not aws:s3"
                )));
            }
            match head.version.and_then(text) {
                Some(v) if v == "2" || v.starts_with("2.") => {}
                Some(v) => {
                    return Err(EventError::UnknownVersion {
                        place: format!("record {index}"),
                        version: v.into_owned(),
                    });
                }
                None => {
                    return Err(EventError::Malformed(format!(
                        "record {index} has no eventVersion"
                    )));
                }
            }
        }
    }
    // serde_json straight from the text; the path is kept only on failure.
    let parsed: S3Event = event_reader::read_at(json).map_err(|e| {
        EventError::Malformed(format!("not an S3 event notification: {}", located(e)))
    })?;
    if parsed.records.is_empty() {
        return Err(EventError::Malformed(
            "an S3 event notification without records".into(),
        ));
    }
    parsed
        .records
        .into_iter()
        .enumerate()
        .map(|(index, record)| from_record(index, record))
        .collect::<Result<Vec<_>, _>>()
        .map(Incoming::Objects)
}

fn from_record(index: usize, record: S3EventRecord) -> Result<ObjectEvent, EventError> {
    let missing = |what: &str| EventError::Malformed(format!("record {index} has no {what}"));
    let event_name = record
        .event_name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| missing("eventName"))?;
    let bucket = record
        .s3
        .bucket
        .name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| missing("s3.bucket.name"))?;
    let raw_key = record
        .s3
        .object
        .key
        .filter(|k| !k.is_empty())
        .ok_or_else(|| missing("s3.object.key"))?;
    let key = decode_key(&raw_key).map_err(|e| {
        EventError::Malformed(format!(
            "record {index}: the key {raw_key:?} does not decode to UTF-8: {e}"
        ))
    })?;
    Ok(ObjectEvent {
        via: Via::Notification,
        event_name,
        event_time: Some(record.event_time.format(TIME_FORMAT).to_string()),
        region: record.aws_region,
        bucket,
        key,
        size: record.s3.object.size,
        etag: record.s3.object.e_tag,
        version_id: record.s3.object.version_id,
        sequencer: record.s3.object.sequencer,
        detail_type: None,
        reason: None,
    })
}

/// How event times are written: S3's own form, `2026-11-29T10:15:30.123Z`.
const TIME_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.3fZ";

/// Decode a key from an S3 event notification: S3 encodes keys form-style,
/// so `+` is a space and everything else is percent-encoded UTF-8
/// (`a+b%2Bc%C3%A9` is `a b+cé`).
pub fn decode_key(raw: &str) -> Result<String, std::str::Utf8Error> {
    let spaced = raw.replace('+', " ");
    percent_decode_str(&spaced)
        .decode_utf8()
        .map(|k| k.into_owned())
}

/// `detail` of an S3 event through EventBridge.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
struct Detail {
    #[serde(default)]
    version: Option<String>,
    bucket: DetailBucket,
    object: DetailObject,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    deletion_type: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
struct DetailBucket {
    name: String,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
struct DetailObject {
    key: String,
    #[serde(default)]
    size: Option<i64>,
    #[serde(default)]
    etag: Option<String>,
    #[serde(default)]
    version_id: Option<String>,
    #[serde(default)]
    sequencer: Option<String>,
}

fn parse_eventbridge(event: Value) -> Result<Incoming, EventError> {
    let source = event.get("source").and_then(Value::as_str).unwrap_or("");
    if source != "aws.s3" {
        return Err(EventError::NotS3(format!(
            "an EventBridge event from {source:?}, not aws.s3"
        )));
    }
    for (place, version) in [
        ("EventBridge event", event.get("version")),
        (
            "EventBridge event detail",
            event.get("detail").and_then(|d| d.get("version")),
        ),
    ] {
        match version {
            None => {}
            Some(Value::String(v)) if v == "0" => {}
            Some(v) => {
                return Err(EventError::UnknownVersion {
                    place: place.into(),
                    version: v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                });
            }
        }
    }
    let parsed: EventBridgeEvent<Detail> = typed(event)
        .map_err(|e| EventError::Malformed(format!("not an S3 event from EventBridge: {e}")))?;
    let detail = parsed.detail;
    if detail.bucket.name.is_empty() || detail.object.key.is_empty() {
        return Err(EventError::Malformed(
            "the EventBridge event has an empty bucket name or object key".into(),
        ));
    }
    let event_name = eventbridge_event_name(
        &parsed.detail_type,
        detail.reason.as_deref(),
        detail.deletion_type.as_deref(),
    );
    Ok(Incoming::Objects(vec![ObjectEvent {
        via: Via::EventBridge,
        event_name,
        event_time: parsed.time.map(|t| t.format(TIME_FORMAT).to_string()),
        region: parsed.region,
        bucket: detail.bucket.name,
        key: detail.object.key,
        size: detail.object.size,
        etag: detail.object.etag,
        version_id: detail.object.version_id,
        sequencer: detail.object.sequencer,
        detail_type: Some(parsed.detail_type),
        reason: detail.reason,
    }]))
}

/// The notification event name for an EventBridge `detail-type` (with its
/// `reason` and `deletion-type`), so that filters and consumers see one
/// vocabulary. A detail type this function does not know keeps its own name.
pub fn eventbridge_event_name(
    detail_type: &str,
    reason: Option<&str>,
    deletion_type: Option<&str>,
) -> String {
    let name = match detail_type {
        "Object Created" => match reason {
            Some("PutObject") => "ObjectCreated:Put",
            Some("POST Object") => "ObjectCreated:Post",
            Some("CopyObject") => "ObjectCreated:Copy",
            Some("CompleteMultipartUpload") => "ObjectCreated:CompleteMultipartUpload",
            _ => "ObjectCreated",
        },
        "Object Deleted" => {
            let marker = deletion_type == Some("Delete Marker Created");
            match (reason == Some("Lifecycle Expiration"), marker) {
                (true, true) => "LifecycleExpiration:DeleteMarkerCreated",
                (true, false) => "LifecycleExpiration:Delete",
                (false, true) => "ObjectRemoved:DeleteMarkerCreated",
                (false, false) => "ObjectRemoved:Delete",
            }
        }
        "Object Restore Initiated" => "ObjectRestore:Post",
        "Object Restore Completed" => "ObjectRestore:Completed",
        "Object Restore Expired" => "ObjectRestore:Delete",
        "Object Tags Added" => "ObjectTagging:Put",
        "Object Tags Deleted" => "ObjectTagging:Delete",
        "Object ACL Updated" => "ObjectAcl:Put",
        "Object Storage Class Changed" => "LifecycleTransition",
        "Object Access Tier Changed" => "IntelligentTiering",
        other => other,
    };
    name.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample(name: &str) -> Value {
        let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn objects(name: &str) -> Vec<ObjectEvent> {
        match parse(sample(name)) {
            Ok(Incoming::Objects(o)) => o,
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn keys_are_form_decoded() {
        assert_eq!(decode_key("a+b%2Bc%C3%A9").as_deref(), Ok("a b+cé"));
        assert_eq!(decode_key("plain/key.txt").as_deref(), Ok("plain/key.txt"));
        assert_eq!(decode_key("100%25+sure").as_deref(), Ok("100% sure"));
        assert!(decode_key("bad%FF").is_err());
    }

    #[test]
    fn sample_put() {
        let o = objects("s3-put.json");
        assert_eq!(o.len(), 1);
        let e = &o[0];
        assert_eq!(e.via, Via::Notification);
        assert_eq!(e.event_name, "ObjectCreated:Put");
        assert_eq!(e.event_time.as_deref(), Some("2026-11-29T10:15:30.123Z"));
        assert_eq!(e.region.as_deref(), Some("eu-west-1"));
        assert_eq!(e.bucket, "acme-orders-inbox");
        assert_eq!(e.key, "incoming/2026/11/29/orders-0001.ndjson");
        assert_eq!(e.size, Some(48213));
        assert_eq!(e.etag.as_deref(), Some("9b2cf535f27731c974343645a3985328"));
        assert_eq!(
            e.version_id.as_deref(),
            Some("3HL4kqtJlcpXroDTDmjVBH40Nrjfkd")
        );
        assert_eq!(e.sequencer.as_deref(), Some("0067497AD2B8A4C1E2"));
        assert!(e.is_created());
    }

    #[test]
    fn sample_delete() {
        let o = objects("s3-delete.json");
        assert_eq!(o.len(), 1);
        let e = &o[0];
        assert_eq!(e.event_name, "ObjectRemoved:DeleteMarkerCreated");
        assert_eq!(e.key, "incoming/2026/11/29/orders-0001.ndjson");
        assert_eq!(e.size, None);
        assert_eq!(e.etag, None);
        assert_eq!(
            e.version_id.as_deref(),
            Some("nqvJ8Wr1mtqxF9DKs8xU.2VjbpqN0q7K")
        );
        assert!(!e.is_created());
    }

    #[test]
    fn sample_key_with_spaces_and_unicode() {
        let o = objects("s3-key-unicode.json");
        assert_eq!(o[0].key, "reports/Q4 2026/résumé ☃ + notes.txt");
    }

    #[test]
    fn sample_test_event() {
        assert_eq!(
            parse(sample("s3-test-event.json")),
            Ok(Incoming::TestEvent {
                bucket: Some("acme-orders-inbox".into())
            })
        );
    }

    #[test]
    fn sample_eventbridge_created_keeps_the_key_as_is() {
        let o = objects("s3-eventbridge-object-created.json");
        assert_eq!(o.len(), 1);
        let e = &o[0];
        assert_eq!(e.via, Via::EventBridge);
        assert_eq!(e.event_name, "ObjectCreated:Put");
        assert_eq!(e.detail_type.as_deref(), Some("Object Created"));
        assert_eq!(e.reason.as_deref(), Some("PutObject"));
        // Not URL-encoded in EventBridge: a '+' is a '+'.
        assert_eq!(e.key, "exports/2026-11-29/sales+returns é.csv");
        assert_eq!(e.event_time.as_deref(), Some("2026-11-29T10:20:00.000Z"));
        assert_eq!(e.size, Some(1024));
        assert_eq!(e.sequencer.as_deref(), Some("617f08299329d189"));
        assert_eq!(
            e.version_id.as_deref(),
            Some("IYV3p45BT0ac8hjHg1houSdS1a.Mro8e")
        );
    }

    #[test]
    fn sample_eventbridge_deleted() {
        let o = objects("s3-eventbridge-object-deleted.json");
        assert_eq!(o[0].event_name, "ObjectRemoved:DeleteMarkerCreated");
        assert_eq!(o[0].size, None);
    }

    #[test]
    fn sample_multi_record_keeps_order() {
        let o = objects("s3-multi-record.json");
        let names: Vec<&str> = o.iter().map(|e| e.event_name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ObjectCreated:Put",
                "ObjectCreated:CompleteMultipartUpload",
                "ObjectRemoved:Delete"
            ]
        );
        assert_eq!(o[1].key, "images/2026/holiday photo (1).jpg");
    }

    #[test]
    fn eventbridge_names() {
        let n = eventbridge_event_name;
        assert_eq!(
            n("Object Created", Some("CopyObject"), None),
            "ObjectCreated:Copy"
        );
        assert_eq!(n("Object Created", None, None), "ObjectCreated");
        assert_eq!(
            n(
                "Object Deleted",
                Some("DeleteObject"),
                Some("Permanently Deleted")
            ),
            "ObjectRemoved:Delete"
        );
        assert_eq!(
            n(
                "Object Deleted",
                Some("Lifecycle Expiration"),
                Some("Delete Marker Created")
            ),
            "LifecycleExpiration:DeleteMarkerCreated"
        );
        assert_eq!(n("Object Tags Added", None, None), "ObjectTagging:Put");
        assert_eq!(n("Something New", None, None), "Something New");
    }

    #[test]
    fn bad_inputs_are_named() {
        let e = parse(json!([1, 2])).expect_err("array");
        assert_eq!(
            e.to_string(),
            "malformed S3 event: expected a JSON object, got an array"
        );

        let e = parse(json!({"hello": "world"})).expect_err("unknown shape");
        assert!(matches!(e, EventError::Malformed(_)), "{e}");

        let mut v = sample("s3-put.json");
        v["Records"][0]["eventVersion"] = json!("3.0");
        assert_eq!(
            parse(v).expect_err("version"),
            EventError::UnknownVersion {
                place: "record 0".into(),
                version: "3.0".into()
            }
        );

        let mut v = sample("s3-put.json");
        v["Records"][0]["eventSource"] = json!("aws:sqs");
        let e = parse(v).expect_err("source");
        assert_eq!(
            e.to_string(),
            "not an S3 event: record 0 comes from \"aws:sqs\", not aws:s3"
        );

        let mut v = sample("s3-put.json");
        v["Records"][0]["s3"]["object"]
            .as_object_mut()
            .expect("object")
            .remove("key");
        assert_eq!(
            parse(v).expect_err("no key").to_string(),
            "malformed S3 event: record 0 has no s3.object.key"
        );

        let mut v = sample("s3-put.json");
        v["Records"][0]
            .as_object_mut()
            .expect("record")
            .remove("s3");
        let e = parse(v).expect_err("no s3");
        assert!(e.to_string().contains("missing field `s3`"), "{e}");

        let e = parse(json!({"Records": []})).expect_err("empty");
        assert!(e.to_string().contains("without records"), "{e}");

        let mut v = sample("s3-eventbridge-object-created.json");
        v["detail"]["version"] = json!("1");
        assert!(matches!(
            parse(v).expect_err("version"),
            EventError::UnknownVersion { .. }
        ));

        let mut v = sample("s3-eventbridge-object-created.json");
        v["source"] = json!("aws.ec2");
        assert!(matches!(
            parse(v).expect_err("source"),
            EventError::NotS3(_)
        ));

        let mut v = sample("s3-eventbridge-object-created.json");
        v["detail"]
            .as_object_mut()
            .expect("detail")
            .remove("object");
        let e = parse(v).expect_err("no object");
        assert!(e.to_string().contains("missing field `object`"), "{e}");

        let mut v = sample("s3-multi-record.json");
        v["Records"][2]["s3"]["object"]["size"] = json!("big");
        let e = parse(v).expect_err("bad size");
        assert!(
            e.to_string()
                .starts_with("malformed S3 event: not an S3 event notification: Records[2].s3.object.size: invalid type"),
            "{e}"
        );

        let e = parse(json!({"Records": null})).expect_err("null records");
        assert!(matches!(e, EventError::Malformed(_)), "{e}");
    }

    /// What lambda_runtime hands the function (`Event`, read from the
    /// invocation's body) is what `parse` reads, for every sample and for
    /// events the function must refuse.
    #[test]
    fn the_lambda_read_is_parse() {
        let mut events: Vec<Value> = [
            "s3-put.json",
            "s3-delete.json",
            "s3-key-unicode.json",
            "s3-test-event.json",
            "s3-eventbridge-object-created.json",
            "s3-eventbridge-object-deleted.json",
            "s3-multi-record.json",
        ]
        .into_iter()
        .map(sample)
        .collect();
        let mut v = sample("s3-put.json");
        v["Records"][0]["eventVersion"] = json!("3.0");
        events.push(v);
        let mut v = sample("s3-put.json");
        v["Records"][0]["s3"]["object"]["key"] = json!(7);
        events.push(v);
        events.extend([
            json!([1, 2]),
            json!("text"),
            json!(null),
            json!({"hello": "world"}),
            json!({"Records": []}),
            json!({"Records": [1]}),
            json!({"Event": "s3:TestEvent"}),
            json!({"Event": 5, "Bucket": "b"}),
        ]);
        for event in events {
            let text = event.to_string();
            let Event(read) = serde_json::from_str(&text).expect("any JSON is an Event");
            assert_eq!(read, parse(event.clone()), "{event}");
        }
    }
}
