//! A Step Functions Distributed Map batch: `{"Items": [...], "BatchInput":
//! {...}}`, the input its `ItemBatcher` gives each child execution, which the
//! child's Lambda task hands on as is.
//!
//! The template's state machine (and any other that feeds this function)
//! shapes it so:
//! * `ItemSelector` makes each item `{"index": $$.Map.Item.Index, "value":
//!   $$.Map.Item.Value}`: the item's place in the object (from 0, as the
//!   `ItemReader` counts it) and the item itself (a JSON-lines line parsed,
//!   or a CSV row as an object of header to value);
//! * `ItemBatcher.BatchInput` names the object: `bucket`, `key`, and when
//!   known its `etag` and `versionId`.
//!
//! Each item's value is kept as the JSON text Step Functions sent, without
//! its whitespace (keys in their order): it becomes the message body.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{EventError, ObjectEvent, Via};

/// The event name a batch's items carry for `ROUTES` (`event_name`).
pub const MAP_EVENT_NAME: &str = "DistributedMap";

/// One item of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapItem {
    /// Its index in the object, from 0 (`$$.Map.Item.Index`).
    pub index: u64,
    /// Its value as compact JSON text: the message body.
    pub body: String,
}

/// A Distributed Map batch: the object its items come from, and the items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapBatch {
    /// The object, as `BatchInput` names it (`via` is
    /// [`Via::DistributedMap`], `event_name` [`MAP_EVENT_NAME`]).
    pub object: ObjectEvent,
    /// The items, in the batch's order.
    pub items: Vec<MapItem>,
}

#[derive(Deserialize)]
struct RawBatch<'a> {
    #[serde(rename = "Items", borrow, default)]
    items: Option<Vec<&'a RawValue>>,
    #[serde(rename = "BatchInput", borrow, default)]
    batch_input: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawItem<'a> {
    #[serde(borrow, default)]
    index: Option<&'a RawValue>,
    // `null` is a value (a JSON line `null`), not a missing one.
    #[serde(borrow, default, deserialize_with = "present")]
    value: Option<&'a RawValue>,
}

/// A field that is there, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct BatchInput {
    #[serde(default)]
    bucket: Option<String>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    etag: Option<String>,
    #[serde(rename = "versionId", default)]
    version_id: Option<String>,
}

fn malformed(what: String) -> EventError {
    EventError::Malformed(format!("Distributed Map batch: {what}"))
}

/// The kind of a raw JSON value, without quoting it.
fn kind(raw: &RawValue) -> &'static str {
    match raw.get().trim_start().as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// JSON text without the whitespace between its tokens (strings untouched).
pub fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
    out
}

/// Read a batch from the event's JSON text (an object with `Items` or
/// `BatchInput`).
pub fn parse_map_batch(json: &str) -> Result<MapBatch, EventError> {
    let raw: RawBatch<'_> =
        serde_json::from_str(json).map_err(|e| malformed(format!("Items: {e}")))?;
    let input = raw.batch_input.ok_or_else(|| {
        malformed(
            "no \"BatchInput\": the ItemBatcher must give BatchInput with the object's \"bucket\" and \"key\"".into(),
        )
    })?;
    let input: BatchInput = serde_json::from_str(input.get()).map_err(|_| {
        malformed(format!(
            "BatchInput: expected an object with the strings \"bucket\" and \"key\" (\"etag\" and \"versionId\" optional), got {}",
            kind(input)
        ))
    })?;
    let bucket = input
        .bucket
        .filter(|b| !b.is_empty())
        .ok_or_else(|| malformed("BatchInput.bucket: missing or empty".into()))?;
    let key = input
        .key
        .filter(|k| !k.is_empty())
        .ok_or_else(|| malformed("BatchInput.key: missing or empty".into()))?;
    let items = raw.items.ok_or_else(|| {
        malformed("no \"Items\": expected the ItemBatcher's array of items".into())
    })?;
    let mut seen: HashMap<u64, usize> = HashMap::with_capacity(items.len());
    let mut read = Vec::with_capacity(items.len());
    for (at, item) in items.into_iter().enumerate() {
        let shape = || {
            malformed(format!(
                "Items[{at}]: expected {{\"index\": $$.Map.Item.Index, \"value\": $$.Map.Item.Value}} (the ItemSelector), got {}",
                kind(item)
            ))
        };
        if kind(item) != "an object" {
            return Err(shape());
        }
        let fields: RawItem<'_> = serde_json::from_str(item.get()).map_err(|_| shape())?;
        let (Some(index), Some(value)) = (fields.index, fields.value) else {
            return Err(shape());
        };
        let index: u64 = serde_json::from_str(index.get()).map_err(|_| {
            malformed(format!(
                "Items[{at}].index: expected a whole number from 0, got {}",
                kind(index)
            ))
        })?;
        if let Some(first) = seen.insert(index, at) {
            return Err(malformed(format!(
                "Items[{at}].index: {index} again (Items[{first}] has it): each item's index must be its own ($$.Map.Item.Index)"
            )));
        }
        read.push(MapItem {
            index,
            body: compact(value.get()),
        });
    }
    Ok(MapBatch {
        object: ObjectEvent {
            via: Via::DistributedMap,
            event_name: MAP_EVENT_NAME.into(),
            event_time: None,
            region: None,
            bucket,
            key,
            size: None,
            etag: input.etag.filter(|e| !e.is_empty()),
            version_id: input.version_id.filter(|v| !v.is_empty()),
            sequencer: None,
            detail_type: None,
            reason: None,
        },
        items: read,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_and_object() {
        let b = parse_map_batch(
            r#"{"Items": [{"index": 4, "value": {"a": 1, "z": [1, 2], "b": "x y"}},
                          {"index": 5, "value": "text"}, {"index": 6, "value": null}],
                "BatchInput": {"bucket": "bk", "key": "in/a.jsonl", "etag": "e1", "other": 1}}"#,
        )
        .expect("valid");
        assert_eq!(b.object.bucket, "bk");
        assert_eq!(b.object.key, "in/a.jsonl");
        assert_eq!(b.object.etag.as_deref(), Some("e1"));
        assert_eq!(b.object.version_id, None);
        assert_eq!(b.object.via, Via::DistributedMap);
        assert_eq!(
            b.items,
            [
                MapItem {
                    index: 4,
                    body: r#"{"a":1,"z":[1,2],"b":"x y"}"#.into()
                },
                MapItem {
                    index: 5,
                    body: r#""text""#.into()
                },
                MapItem {
                    index: 6,
                    body: "null".into()
                }
            ]
        );
    }

    #[test]
    fn compact_keeps_strings() {
        assert_eq!(
            compact("{ \"a b\" : [ 1 ,\n 2 ], \"q\": \"x\\\" y\\\\\" }"),
            r#"{"a b":[1,2],"q":"x\" y\\"}"#
        );
    }

    #[test]
    fn malformed_batches_are_named() {
        let err = |json: &str| parse_map_batch(json).expect_err(json).to_string();
        assert!(err(r#"{"Items": []}"#).contains("no \"BatchInput\""));
        assert!(err(r#"{"BatchInput": {"bucket": "b", "key": "k"}}"#).contains("no \"Items\""));
        assert!(err(r#"{"Items": [], "BatchInput": {"key": "k"}}"#).contains("BatchInput.bucket"));
        assert!(
            err(r#"{"Items": [], "BatchInput": {"bucket": "b", "key": ""}}"#)
                .contains("BatchInput.key")
        );
        assert!(err(r#"{"Items": [], "BatchInput": "b"}"#).contains("got a string"));
        assert!(
            err(r#"{"Items": {}, "BatchInput": {"bucket": "b", "key": "k"}}"#).contains("Items")
        );
        let e = err(
            r#"{"Items": [{"index": 0, "value": 1}, 7], "BatchInput": {"bucket": "b", "key": "k"}}"#,
        );
        assert!(e.contains("Items[1]") && e.contains("got a number"), "{e}");
        let e = err(r#"{"Items": [{"value": 1}], "BatchInput": {"bucket": "b", "key": "k"}}"#);
        assert!(e.contains("Items[0]") && e.contains("ItemSelector"), "{e}");
        let e = err(
            r#"{"Items": [{"index": -1, "value": 1}], "BatchInput": {"bucket": "b", "key": "k"}}"#,
        );
        assert!(e.contains("Items[0].index"), "{e}");
        let e = err(
            r#"{"Items": [{"index": 1, "value": 1}, {"index": 1, "value": 2}], "BatchInput": {"bucket": "b", "key": "k"}}"#,
        );
        assert!(e.contains("Items[1].index: 1 again"), "{e}");
        assert!(
            e.starts_with("malformed S3 event: Distributed Map batch: "),
            "{e}"
        );
    }
}
