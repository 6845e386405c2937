//! The consumer's side: an SQS message the forwarder sent, aggregate or
//! plain, in; its records out, each with an id a consumer can report.
//!
//! ```
//! use std::collections::HashMap;
//! use sqs_forwarder::aggregate::read::{records, ReceivedAttribute};
//!
//! let marker = ReceivedAttribute::string("1");
//! let attributes = HashMap::from([("sqs-forwarder.aggregate".to_owned(), marker)]);
//! let body = r#"{"v":1,"records":[{"body":"a"},{"body":"b"}]}"#;
//! let got = records("m-1", body, &attributes).unwrap();
//! assert_eq!(got[1].id, "m-1:1");
//! assert_eq!(got[1].body, "b");
//! ```
//!
//! A consumer that fails a record reports its message's id (the whole
//! aggregate comes back: handling a record must be idempotent, as with any
//! SQS message).

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Deserialize;

use super::{MARKER_ATTRIBUTE, VERSION};

/// An attribute as a consumer receives it: Lambda's SQS event shape
/// (`dataType`, `stringValue`, `binaryValue` in base64).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceivedAttribute {
    /// `String`, `Number`, `Binary`, or one of them with a custom suffix.
    pub data_type: String,
    /// The value of a `String` or `Number` attribute.
    #[serde(default)]
    pub string_value: Option<String>,
    /// The value of a `Binary` attribute, in base64.
    #[serde(default)]
    pub binary_value: Option<String>,
}

impl ReceivedAttribute {
    /// The attribute as a consumer receives it.
    pub fn of(a: &crate::message::Attribute) -> Self {
        use crate::message::AttributeValue as V;
        let (string_value, binary_value) = match &a.value {
            V::String(s) | V::Number(s) => (Some(s.clone()), None),
            V::Binary(b) => (None, Some(BASE64.encode(b))),
        };
        ReceivedAttribute {
            data_type: a.data_type.to_string(),
            string_value,
            binary_value,
        }
    }

    /// A `String` attribute.
    pub fn string(value: &str) -> Self {
        ReceivedAttribute {
            data_type: "String".into(),
            string_value: Some(value.into()),
            binary_value: None,
        }
    }
}

/// One record of a received message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// `<message id>:<index>`.
    pub id: String,
    /// The SQS message that carried it (what a consumer reports as failed).
    pub message_id: String,
    /// Its place in the message, from 0.
    pub index: usize,
    /// Its body, as a message of its own would have had it.
    pub body: String,
    /// Its attributes (the aggregate's own marker is not one of them).
    pub attributes: HashMap<String, ReceivedAttribute>,
    /// Its own deduplication id (FIFO targets), from the aggregate; `None`
    /// for a plain message's record, whose id is the message's own
    /// `MessageDeduplicationId` (a system attribute the caller has).
    pub deduplication_id: Option<String>,
}

impl Record {
    /// The body's bytes: base64-decoded when the record carries the
    /// forwarder's encoding marker (`sqs-forwarder.encoding: base64`, or
    /// the name given, `ENCODING_ATTRIBUTE`), else its UTF-8.
    pub fn body_bytes(&self, encoding_attribute: &str) -> Result<Vec<u8>, AggregateError> {
        let marked = self
            .attributes
            .get(encoding_attribute)
            .and_then(|a| a.string_value.as_deref())
            == Some(crate::message::encode::ENCODING_MARKER_VALUE);
        if marked {
            BASE64
                .decode(&self.body)
                .map_err(|e| AggregateError(format!("record {}: body is not base64: {e}", self.id)))
        } else {
            Ok(self.body.as_bytes().to_vec())
        }
    }
}

/// Why a message could not be read as the forwarder's aggregate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an sqs-forwarder aggregate: {0}")]
pub struct AggregateError(pub String);

#[derive(Deserialize)]
struct Body {
    v: u32,
    records: Vec<RecordBody>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RecordBody {
    body: String,
    #[serde(default)]
    attributes: HashMap<String, ReceivedAttribute>,
    #[serde(default)]
    deduplication_id: Option<String>,
}

/// The records of the message `message_id` with this body and these
/// attributes: the aggregate's records when it carries
/// [`MARKER_ATTRIBUTE`], else the message itself as one record.
pub fn records(
    message_id: &str,
    body: &str,
    attributes: &HashMap<String, ReceivedAttribute>,
) -> Result<Vec<Record>, AggregateError> {
    let Some(marker) = attributes.get(MARKER_ATTRIBUTE) else {
        return Ok(vec![Record {
            id: format!("{message_id}:0"),
            message_id: message_id.to_owned(),
            index: 0,
            body: body.to_owned(),
            attributes: attributes.clone(),
            deduplication_id: None,
        }]);
    };
    let version = marker.string_value.as_deref().unwrap_or_default();
    if version != VERSION {
        return Err(AggregateError(format!(
            "message {message_id}: format version {version:?}; this reader knows {VERSION:?}"
        )));
    }
    let parsed: Body = serde_json::from_str(body)
        .map_err(|e| AggregateError(format!("message {message_id}: {e}")))?;
    if parsed.v.to_string() != VERSION {
        return Err(AggregateError(format!(
            "message {message_id}: body says version {}, its attribute {VERSION}",
            parsed.v
        )));
    }
    for (i, r) in parsed.records.iter().enumerate() {
        for (name, a) in &r.attributes {
            check(a).map_err(|why| {
                AggregateError(format!(
                    "message {message_id}, record {i}, attribute {name:?}: {why}"
                ))
            })?;
        }
    }
    Ok(parsed
        .records
        .into_iter()
        .enumerate()
        .map(|(index, r)| Record {
            id: format!("{message_id}:{index}"),
            message_id: message_id.to_owned(),
            index,
            body: r.body,
            attributes: r.attributes,
            deduplication_id: r.deduplication_id,
        })
        .collect())
}

/// An attribute's value where its type says it is.
fn check(a: &ReceivedAttribute) -> Result<(), &'static str> {
    let base = a.data_type.split('.').next().unwrap_or_default();
    match (base, &a.string_value, &a.binary_value) {
        ("String" | "Number", Some(_), None) => Ok(()),
        ("Binary", None, Some(b)) if BASE64.decode(b).is_ok() => Ok(()),
        ("Binary", None, Some(_)) => Err("binaryValue is not base64"),
        _ => Err("dataType String or Number with a stringValue, or Binary with a binaryValue"),
    }
}

#[cfg(test)]
mod tests;
