//! An S3 event notification (`Records`): each record's source and version
//! checked first, so that another service's record or a future version is
//! named as such, then the records read, their keys form-decoded.

use aws_lambda_events::event::s3::{S3Event, S3EventRecord};
use percent_encoding::percent_decode_str;
use serde::Deserialize;
use serde_json::value::RawValue;
use sqs_forwarder::event_reader;

use super::{EventError, Incoming, ObjectEvent, TIME_FORMAT, Via, located, present, text};

/// A record's source and version, read before the record itself so that
/// an SNS or SQS record, or a future version, is named as such.
#[derive(Default, Deserialize)]
struct Head<'a> {
    #[serde(rename = "eventSource", default, borrow, deserialize_with = "present")]
    source: Option<&'a RawValue>,
    #[serde(rename = "eventVersion", default, borrow, deserialize_with = "present")]
    version: Option<&'a RawValue>,
}

pub(super) fn parse_notification(json: &str, records: &RawValue) -> Result<Incoming, EventError> {
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

/// Decode a key from an S3 event notification: S3 encodes keys form-style,
/// so `+` is a space and everything else is percent-encoded UTF-8
/// (`a+b%2Bc%C3%A9` is `a b+cé`).
pub fn decode_key(raw: &str) -> Result<String, std::str::Utf8Error> {
    let spaced = raw.replace('+', " ");
    percent_decode_str(&spaced)
        .decode_utf8()
        .map(|k| k.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::tests::objects;

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
}
