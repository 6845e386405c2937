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
//!   not encoded;
//! * a Step Functions Distributed Map batch (`Items` and `BatchInput`):
//!   items of one object, read by the map's `ItemReader` (`map_batch.rs`).
//!
//! and, with `CONTINUATION`, the function's own continuation event
//! (`s3ToSqsContinuation`: the rest of an object a previous invocation
//! handed on), read by [`crate::continuation::Continuation::parse`].
//!
//! Each record becomes an [`ObjectEvent`] with its key decoded and its event
//! named in the notification vocabulary (`ObjectCreated:Put`), whichever way
//! it came, so that one `EVENT_NAMES` filter and one message shape serve both.
//!
//! The face reads which shape an event has ([`parse_json`]); each way an
//! event comes is read in its own file: `notification.rs` (`Records`, keys
//! form-decoded) and `eventbridge.rs` (its `detail`, its `detail-type`
//! named in the notification vocabulary).

mod eventbridge;
mod map_batch;
mod notification;

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;
use sqs_forwarder::event_reader::Misread;

pub use eventbridge::eventbridge_event_name;
pub use map_batch::{MAP_EVENT_NAME, MapBatch, MapItem};
pub use notification::decode_key;

use eventbridge::parse_eventbridge;
use notification::parse_notification;

/// How an event reached the function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// An S3 event notification (`Records`).
    Notification,
    /// An S3 event through EventBridge.
    EventBridge,
    /// A Step Functions Distributed Map batch of an object's items.
    DistributedMap,
}

impl Via {
    /// The name written in message bodies.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Notification => "notification",
            Via::EventBridge => "eventbridge",
            Via::DistributedMap => "distributed-map",
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
    /// A Distributed Map batch (`event/map_batch.rs`).
    MapBatch(Box<MapBatch>),
    /// The rest of an object, handed on by the invocation before
    /// (`CONTINUATION`).
    Continuation(Box<crate::continuation::Continuation>),
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
    /// An event this function's configuration does not accept.
    #[error("refused event: {0}")]
    Refused(String),
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
    #[serde(rename = "Items", default, borrow, deserialize_with = "present")]
    items: Option<&'a RawValue>,
    #[serde(rename = "BatchInput", default, borrow, deserialize_with = "present")]
    batch_input: Option<&'a RawValue>,
    #[serde(
        rename = "s3ToSqsContinuation",
        default,
        borrow,
        deserialize_with = "present"
    )]
    continuation: Option<&'a RawValue>,
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
        let got = serde_json::from_str::<Value>(json)
            .map_or("no JSON", |v| sqs_forwarder::event_reader::json_kind(&v));
        return Err(EventError::Malformed(format!(
            "expected a JSON object, got {got}"
        )));
    }
    let shape: Shape<'_> =
        serde_json::from_str(json).map_err(|e| EventError::Malformed(e.to_string()))?;
    if let Some(c) = shape.continuation {
        return crate::continuation::Continuation::parse(c.get())
            .map(|c| Incoming::Continuation(Box::new(c)));
    }
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
    if shape.items.is_some() || shape.batch_input.is_some() {
        return map_batch::parse_map_batch(json).map(|b| Incoming::MapBatch(Box::new(b)));
    }
    Err(EventError::Malformed(
        "neither an S3 event notification (no \"Records\"), an s3:TestEvent, an EventBridge event (no \"detail-type\") nor a Distributed Map batch (no \"Items\")".into(),
    ))
}

/// `path: error`, or the error alone when it is the whole document's.
fn located(m: Misread) -> String {
    match m.path {
        Some(p) => format!("{p}: {}", m.error),
        None => m.error,
    }
}

/// How event times are written: S3's own form, `2026-11-29T10:15:30.123Z`.
const TIME_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.3fZ";

#[cfg(test)]
mod tests;
