//! From S3 events (or the lines of an object) to [`Message`]s: the body, the
//! attributes, and on FIFO targets the group and deduplication ids.
//!
//! FIFO ids are readable when they can be: `bucket/key/...` as is when it is
//! at most 128 printable ASCII characters, which SQS requires. Otherwise
//! (long or non-ASCII keys) the id is `sha256:` and the hex SHA-256 of the
//! parts, so one object always gets the same id and different objects do
//! not share one. A readable id always contains the bucket name, which has
//! no `:`, before its first `/`, so it never equals a hashed one.

use serde::Serialize;
use sha2::{Digest, Sha256};
use sqs_forwarder::message::encode::is_sqs_text;
use sqs_forwarder::{Attribute, Body, Message, message::fifo_id};

use crate::event::ObjectEvent;
use crate::settings::GroupBy;

/// Attribute with the event name (notification mode).
pub const ATTR_EVENT_NAME: &str = "eventName";
/// Attribute with the bucket (both modes).
pub const ATTR_BUCKET: &str = "bucket";
/// Attribute with the object key (lines mode, when the key is valid SQS text).
pub const ATTR_KEY: &str = "key";
/// Attribute with the line number, from 1 (lines mode).
pub const ATTR_LINE: &str = "line";

/// A FIFO id made of `parts`: joined with `/` when that is a valid id,
/// otherwise a SHA-256 of the parts.
pub fn fifo_id(parts: &[&str]) -> String {
    let joined = parts.join("/");
    if fifo_id::is_valid(&joined) {
        return joined;
    }
    let mut hash = Sha256::new();
    for p in parts {
        // Length-prefixed, so that ("a/b", "c") and ("a", "b/c") differ.
        hash.update((p.len() as u64).to_be_bytes());
        hash.update(p.as_bytes());
    }
    fifo_id::hashed("sha256:", hash.finalize())
}

/// The FIFO parameters of the messages made for one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fifo {
    /// Whether the target is a FIFO queue (ids are set only then).
    pub enabled: bool,
    /// What the group id is made of.
    pub group_by: GroupBy,
}

impl Fifo {
    pub(crate) fn group_id(&self, event: &ObjectEvent) -> Option<String> {
        if !self.enabled {
            return None;
        }
        match self.group_by {
            GroupBy::Object => Some(fifo_id(&[&event.bucket, &event.key])),
            GroupBy::Bucket => Some(fifo_id(&[&event.bucket])),
            GroupBy::None => None,
        }
    }
}

/// The body of a notification-mode message.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct NotificationBody<'a> {
    event_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    event_time: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<&'a str>,
    bucket: &'a str,
    key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<i64>,
    #[serde(rename = "eTag", skip_serializing_if = "Option::is_none")]
    e_tag: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sequencer: Option<&'a str>,
    via: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
}

/// The message for one event (notification mode).
///
/// Deduplication id: bucket, key, version id (`null` when none), sequencer
/// (the event time when S3 gives none, as for tagging or restore events)
/// and event name: the same for S3's duplicate deliveries and for a Lambda
/// retry of the same event, different for any two distinct events.
pub fn notification_message<P>(event: &ObjectEvent, fifo: Fifo, position: P) -> Message<P> {
    let body = NotificationBody {
        event_name: &event.event_name,
        event_time: event.event_time.as_deref(),
        region: event.region.as_deref(),
        bucket: &event.bucket,
        key: &event.key,
        size: event.size,
        e_tag: event.etag.as_deref(),
        version_id: event.version_id.as_deref(),
        sequencer: event.sequencer.as_deref(),
        via: event.via.as_str(),
        detail_type: event.detail_type.as_deref(),
        reason: event.reason.as_deref(),
    };
    // Serializing strings and integers into JSON cannot fail; should it
    // ever, the empty body fails the message with a clear code rather than
    // panicking.
    let json = serde_json::to_string(&body).unwrap_or_default();
    let mut message = Message::new(json, position)
        .attribute(Attribute::string(ATTR_EVENT_NAME, event.event_name.clone()))
        .attribute(Attribute::string(ATTR_BUCKET, event.bucket.clone()));
    if fifo.enabled {
        if let Some(g) = fifo.group_id(event) {
            message = message.group_id(g);
        }
        let order = event
            .sequencer
            .as_deref()
            .or(event.event_time.as_deref())
            .unwrap_or("");
        message = message.deduplication_id(fifo_id(&[
            &event.bucket,
            &event.key,
            event.version_id.as_deref().unwrap_or("null"),
            order,
            &event.event_name,
        ]));
    }
    message
}

/// The message for one line of an object (lines mode).
///
/// Deduplication id: bucket, key, version id (`null` when none), the
/// event's sequencer (or ETag when S3 gives none) and the line number: the
/// same for every re-read of the same object version, different for a new
/// upload of the same key even in an unversioned bucket.
pub fn line_message(event: &ObjectEvent, fifo: Fifo, number: u64, line: Vec<u8>) -> Message<u64> {
    let upload = event
        .sequencer
        .as_deref()
        .or(event.etag.as_deref())
        .unwrap_or("");
    part_message(event, fifo, line, ATTR_LINE, number, upload, "")
}

/// The message for one part of an object (a line, a Distributed Map item):
/// `body`; `bucket`, `key` (when it is valid SQS text) and `attribute` (the
/// part's `number`, a Number) as attributes; on FIFO targets the group by
/// `GROUP_BY` and a deduplication id from bucket, key, version id (`null`
/// when none), `upload` and `id_prefix` followed by the number.
pub(crate) fn part_message(
    event: &ObjectEvent,
    fifo: Fifo,
    body: impl Into<Body>,
    attribute: &'static str,
    number: u64,
    upload: &str,
    id_prefix: &str,
) -> Message<u64> {
    let mut message =
        Message::new(body, number).attribute(Attribute::string(ATTR_BUCKET, event.bucket.clone()));
    if is_sqs_text(&event.key) {
        message = message.attribute(Attribute::string(ATTR_KEY, event.key.clone()));
    }
    message = message.attribute(Attribute::number(attribute, number));
    if fifo.enabled {
        if let Some(g) = fifo.group_id(event) {
            message = message.group_id(g);
        }
        message = message.deduplication_id(fifo_id(&[
            &event.bucket,
            &event.key,
            event.version_id.as_deref().unwrap_or("null"),
            upload,
            &format!("{id_prefix}{number}"),
        ]));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Via;
    use sqs_forwarder::{AttributeValue, Body};

    fn event() -> ObjectEvent {
        ObjectEvent {
            via: Via::Notification,
            event_name: "ObjectCreated:Put".into(),
            event_time: Some("2026-11-29T10:15:30.123Z".into()),
            region: Some("eu-west-1".into()),
            bucket: "acme".into(),
            key: "in/a b.txt".into(),
            size: Some(42),
            etag: Some("abc".into()),
            version_id: Some("v1".into()),
            sequencer: Some("00AA".into()),
            detail_type: None,
            reason: None,
        }
    }

    const FIFO: Fifo = Fifo {
        enabled: true,
        group_by: GroupBy::Object,
    };
    const STANDARD: Fifo = Fifo {
        enabled: false,
        group_by: GroupBy::Object,
    };

    fn body_json<P>(m: &Message<P>) -> serde_json::Value {
        match &m.body {
            Body::Text(t) => serde_json::from_str(t).expect("json body"),
            Body::Bytes(_) => panic!("text body expected"),
        }
    }

    #[test]
    fn readable_ids_when_possible_hashed_otherwise() {
        assert_eq!(fifo_id(&["b", "k/x.txt"]), "b/k/x.txt");
        let spaced = fifo_id(&["b", "a b"]);
        assert!(
            spaced.starts_with("sha256:") && spaced.len() == 71,
            "{spaced}"
        );
        let long = fifo_id(&["b", &"k".repeat(200)]);
        assert_eq!(long.len(), 71);
        assert_eq!(fifo_id(&["b", "a b"]), spaced, "stable");
        assert_ne!(fifo_id(&["b", "a c"]), spaced);
        // Joining alone would confuse these; the hash does not.
        assert_ne!(fifo_id(&["a/ b", "c"]), fifo_id(&["a", " b/c"]));
        for id in [&spaced, &long] {
            assert!(id.bytes().all(|b| b.is_ascii_graphic()));
        }
    }

    #[test]
    fn notification_body_and_attributes() {
        let m = notification_message(&event(), STANDARD, 3usize);
        assert_eq!(m.position, 3);
        assert_eq!(
            body_json(&m),
            serde_json::json!({
                "eventName": "ObjectCreated:Put",
                "eventTime": "2026-11-29T10:15:30.123Z",
                "region": "eu-west-1",
                "bucket": "acme",
                "key": "in/a b.txt",
                "size": 42,
                "eTag": "abc",
                "versionId": "v1",
                "sequencer": "00AA",
                "via": "notification"
            })
        );
        let attrs: Vec<(&str, &AttributeValue)> = m
            .attributes
            .iter()
            .map(|a| (a.name.as_ref(), &a.value))
            .collect();
        assert_eq!(
            attrs,
            [
                (
                    "eventName",
                    &AttributeValue::String("ObjectCreated:Put".into())
                ),
                ("bucket", &AttributeValue::String("acme".into()))
            ]
        );
        assert_eq!(m.group_id, None, "no FIFO ids on a standard queue");
        assert_eq!(m.deduplication_id, None);
    }

    #[test]
    fn notification_fifo_ids() {
        let mut e = event();
        e.key = "in/x.txt".into();
        let m = notification_message(&e, FIFO, 0usize);
        assert_eq!(m.group_id.as_deref(), Some("acme/in/x.txt"));
        assert_eq!(
            m.deduplication_id.as_deref(),
            Some("acme/in/x.txt/v1/00AA/ObjectCreated:Put")
        );
        // A duplicate delivery of the same event: same ids.
        let again = notification_message(&e, FIFO, 1usize);
        assert_eq!(again.deduplication_id, m.deduplication_id);
        // A later write of the same key: another sequencer, another id.
        let mut later = e.clone();
        later.sequencer = Some("00AB".into());
        assert_ne!(
            notification_message(&later, FIFO, 0usize).deduplication_id,
            m.deduplication_id
        );
        // No sequencer: the event time stands in.
        let mut tagged = e.clone();
        tagged.sequencer = None;
        tagged.event_name = "ObjectTagging:Put".into();
        assert_eq!(
            notification_message(&tagged, FIFO, 0usize)
                .deduplication_id
                .as_deref(),
            Some("acme/in/x.txt/v1/2026-11-29T10:15:30.123Z/ObjectTagging:Put")
        );
        let by_bucket = Fifo {
            enabled: true,
            group_by: GroupBy::Bucket,
        };
        assert_eq!(
            notification_message(&e, by_bucket, 0usize)
                .group_id
                .as_deref(),
            Some("acme")
        );
        let none = Fifo {
            enabled: true,
            group_by: GroupBy::None,
        };
        let m = notification_message(&e, none, 0usize);
        assert_eq!(m.group_id, None);
        assert!(m.deduplication_id.is_some());
    }

    #[test]
    fn eventbridge_fields_are_kept() {
        let mut e = event();
        e.via = Via::EventBridge;
        e.detail_type = Some("Object Created".into());
        e.reason = Some("PutObject".into());
        e.size = None;
        let v = body_json(&notification_message(&e, STANDARD, 0usize));
        assert_eq!(v["via"], "eventbridge");
        assert_eq!(v["detailType"], "Object Created");
        assert_eq!(v["reason"], "PutObject");
        assert!(v.get("size").is_none(), "absent fields are left out");
    }

    #[test]
    fn line_messages() {
        let mut e = event();
        e.key = "logs/app.log".into();
        let m = line_message(&e, FIFO, 7, b"{\"a\":1}".to_vec());
        assert_eq!(m.body, Body::Bytes(b"{\"a\":1}".to_vec()));
        assert_eq!(m.position, 7);
        let names: Vec<&str> = m.attributes.iter().map(|a| a.name.as_ref()).collect();
        assert_eq!(names, ["bucket", "key", "line"]);
        assert_eq!(m.attributes[2].value, AttributeValue::Number("7".into()));
        assert_eq!(m.group_id.as_deref(), Some("acme/logs/app.log"));
        assert_eq!(
            m.deduplication_id.as_deref(),
            Some("acme/logs/app.log/v1/00AA/7")
        );
        // A key SQS cannot carry in an attribute is left out of them.
        e.key = "odd\u{1}key".into();
        let m = line_message(&e, STANDARD, 1, b"x".to_vec());
        let names: Vec<&str> = m.attributes.iter().map(|a| a.name.as_ref()).collect();
        assert_eq!(names, ["bucket", "line"]);
        assert_eq!(m.deduplication_id, None);
    }
}
