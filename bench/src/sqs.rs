//! What the stub knows about SQS: the `SendMessageBatch` request as the
//! JSON protocol sends it, the size SQS gives a message, and the checks SQS
//! makes on a batch (see `docs/FACTS.md`).
//!
//! Kept apart from the server so that the rules can be tested on their own.

use std::collections::{BTreeMap, HashSet};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// Most entries in one call.
pub const MAX_ENTRIES: usize = 10;
/// Most bytes (sum of message sizes) in one call.
pub const MAX_REQUEST_BYTES: usize = 1_048_576;
/// Most attributes on one message.
pub const MAX_ATTRIBUTES: usize = 10;
/// One billed request unit: every 64 KiB chunk of a request's payload.
pub const BILLING_CHUNK: usize = 65_536;

/// A `SendMessageBatch` request body (AWS JSON 1.0).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchRequest {
    /// The queue the call is for.
    #[serde(default)]
    pub queue_url: String,
    /// The entries.
    #[serde(default)]
    pub entries: Vec<BatchEntry>,
}

/// One entry of a batch.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchEntry {
    /// Request-unique id.
    pub id: String,
    /// The body.
    pub message_body: String,
    /// Attributes by name.
    #[serde(default)]
    pub message_attributes: BTreeMap<String, AttributeValue>,
    /// FIFO: the message group (standard queues: a fair-queue group).
    #[serde(default)]
    pub message_group_id: Option<String>,
    /// FIFO: the deduplication id.
    #[serde(default)]
    pub message_deduplication_id: Option<String>,
    /// Standard queues: the delay.
    #[serde(default)]
    pub delay_seconds: Option<i64>,
}

/// One attribute value.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct AttributeValue {
    /// `String`, `Number`, `Binary`, optionally with a `.custom` suffix.
    pub data_type: String,
    /// For `String` and `Number`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string_value: Option<String>,
    /// For `Binary`: base64 in the JSON protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_value: Option<String>,
}

/// The size SQS counts for an entry: body UTF-8 bytes plus, for every
/// attribute, its name, its data type and its value (binary values by their
/// raw bytes).
pub fn entry_size(e: &BatchEntry) -> Result<usize, String> {
    let mut size = e.message_body.len();
    for (name, v) in &e.message_attributes {
        size += name.len() + v.data_type.len();
        size += match (&v.string_value, &v.binary_value) {
            (Some(s), None) => s.len(),
            (None, Some(b)) => base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|_| format!("attribute {name}: BinaryValue is not base64"))?
                .len(),
            _ => return Err(format!("attribute {name}: exactly one value is required")),
        };
    }
    Ok(size)
}

/// Whether SQS accepts this character in a body.
fn is_sqs_char(c: char) -> bool {
    matches!(c, '\u{9}' | '\u{A}' | '\u{D}' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 80
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A whole call refused, as SQS refuses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRejected {
    /// The short error code (`BatchRequestTooLong`, ...).
    pub code: &'static str,
    /// What is wrong.
    pub message: String,
}

/// What SQS says about one entry of an accepted call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryVerdict {
    /// Accepted; its size.
    Sent {
        /// The size SQS counts.
        size: usize,
    },
    /// Refused alone (its batch-mates go on).
    Failed {
        /// The SQS error code.
        code: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// Check a batch the way SQS does: the call as a whole (count, distinct and
/// valid ids, the 1 MiB sum), then each entry (attribute count, its own size
/// against the queue's `MaximumMessageSize`, its characters).
pub fn check_batch(
    req: &BatchRequest,
    max_message_bytes: usize,
) -> Result<Vec<EntryVerdict>, CallRejected> {
    let n = req.entries.len();
    if n == 0 {
        return Err(CallRejected {
            code: "EmptyBatchRequest",
            message: "There should be at least one SendMessageBatchRequestEntry in the request."
                .into(),
        });
    }
    if n > MAX_ENTRIES {
        return Err(CallRejected {
            code: "TooManyEntriesInBatchRequest",
            message: format!(
                "Maximum number of entries per request are {MAX_ENTRIES}. You have sent {n}."
            ),
        });
    }
    let mut ids = HashSet::with_capacity(n);
    for e in &req.entries {
        if !valid_id(&e.id) {
            return Err(CallRejected {
                code: "InvalidBatchEntryId",
                message: format!(
                    "A batch entry id can only contain alphanumeric characters, hyphens and underscores: {:?}",
                    e.id
                ),
            });
        }
        if !ids.insert(e.id.as_str()) {
            return Err(CallRejected {
                code: "BatchEntryIdsNotDistinct",
                message: format!("Id {} repeated.", e.id),
            });
        }
    }
    let sizes: Vec<Result<usize, String>> = req.entries.iter().map(entry_size).collect();
    let total: usize = sizes.iter().map(|s| *s.as_ref().unwrap_or(&0)).sum();
    if total > MAX_REQUEST_BYTES {
        return Err(CallRejected {
            code: "BatchRequestTooLong",
            message: format!(
                "Batch requests cannot be longer than {MAX_REQUEST_BYTES} bytes. You have sent {total} bytes."
            ),
        });
    }
    Ok(req
        .entries
        .iter()
        .zip(sizes)
        .map(|(e, size)| match size {
            Err(message) => EntryVerdict::Failed {
                code: "InvalidParameterValue",
                message,
            },
            Ok(_) if e.message_attributes.len() > MAX_ATTRIBUTES => EntryVerdict::Failed {
                code: "InvalidParameterValue",
                message: format!(
                    "Number of message attributes [{}] exceeds the allowed maximum [{MAX_ATTRIBUTES}].",
                    e.message_attributes.len()
                ),
            },
            Ok(size) if size > max_message_bytes => EntryVerdict::Failed {
                code: "InvalidParameterValue",
                message: format!(
                    "One or more parameters are invalid. Reason: Message must be shorter than {max_message_bytes} bytes."
                ),
            },
            Ok(_) if e.message_body.is_empty() => EntryVerdict::Failed {
                code: "InvalidParameterValue",
                message: "The request must contain the parameter MessageBody.".into(),
            },
            Ok(_) if !e.message_body.chars().all(is_sqs_char) => EntryVerdict::Failed {
                code: "InvalidMessageContents",
                message: "Invalid characters found.".into(),
            },
            Ok(size) => EntryVerdict::Sent { size },
        })
        .collect())
}

/// The attribute that marks an sqs-forwarder aggregate (`AGGREGATE=true`),
/// and the one format version the stub reads.
pub const AGGREGATE_MARKER: &str = "sqs-forwarder.aggregate";

/// The records inside an entry, when it is an sqs-forwarder aggregate
/// (the marker attribute present): `Some(Ok(n))` for a well-formed
/// aggregate (marker `1`, body `{"v":1,"records":[...]}`, each record an
/// object with a string `body`), `Some(Err(why))` for a malformed one,
/// `None` for a plain message (one record).
pub fn aggregate_records(e: &BatchEntry) -> Option<Result<usize, String>> {
    let marker = e.message_attributes.get(AGGREGATE_MARKER)?;
    if marker.data_type != "String" || marker.string_value.as_deref() != Some("1") {
        return Some(Err(format!(
            "marker {:?} {:?}, not String \"1\"",
            marker.data_type, marker.string_value
        )));
    }
    #[derive(Deserialize)]
    struct Body {
        v: u32,
        records: Vec<serde_json::Map<String, serde_json::Value>>,
    }
    let body: Body = match serde_json::from_str(&e.message_body) {
        Ok(b) => b,
        Err(err) => return Some(Err(format!("body: {err}"))),
    };
    if body.v != 1 {
        return Some(Err(format!("body: v {}, not 1", body.v)));
    }
    if let Some(i) = body
        .records
        .iter()
        .position(|r| !r.get("body").is_some_and(serde_json::Value::is_string))
    {
        return Some(Err(format!("record {i}: no string body")));
    }
    Some(Ok(body.records.len()))
}

/// Billed request units of one call carrying `bytes` of messages.
pub fn billed_units(bytes: usize) -> usize {
    bytes.div_ceil(BILLING_CHUNK).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, body: &str, attrs: &[(&str, &str, &str)]) -> serde_json::Value {
        let mut a = serde_json::Map::new();
        for (name, ty, value) in attrs {
            let v = if ty.starts_with("Binary") {
                serde_json::json!({"DataType": ty, "BinaryValue": value})
            } else {
                serde_json::json!({"DataType": ty, "StringValue": value})
            };
            a.insert((*name).into(), v);
        }
        serde_json::json!({"Id": id, "MessageBody": body, "MessageAttributes": a})
    }

    fn request(entries: Vec<serde_json::Value>) -> BatchRequest {
        serde_json::from_value(serde_json::json!({"QueueUrl": "q", "Entries": entries}))
            .expect("test request")
    }

    #[test]
    fn size_counts_utf8_bytes_and_every_attribute_part() {
        // "é" is 2 bytes; "k"+"String"+"vv" = 9; "n"+"Number"+"12" = 9;
        // "b"+"Binary"+3 raw bytes ("AQID") = 10.
        let req = request(vec![entry(
            "0",
            "é",
            &[
                ("k", "String", "vv"),
                ("n", "Number", "12"),
                ("b", "Binary", "AQID"),
            ],
        )]);
        assert_eq!(entry_size(&req.entries[0]), Ok(2 + 9 + 9 + 10));
    }

    #[test]
    fn the_byte_limit_is_exact_and_counts_attributes() {
        // Two entries of exactly half the cap each, the attribute included.
        let attr = ("a", "String", "x"); // 8 bytes
        let half = MAX_REQUEST_BYTES / 2 - 8;
        let body = "x".repeat(half);
        let fits = request(vec![entry("0", &body, &[attr]), entry("1", &body, &[attr])]);
        let verdicts = check_batch(&fits, MAX_REQUEST_BYTES).expect("exactly 1 MiB fits");
        assert_eq!(verdicts, vec![EntryVerdict::Sent { size: half + 8 }; 2]);
        let over = request(vec![
            entry("0", &body, &[attr]),
            entry("1", &format!("{body}y"), &[attr]),
        ]);
        let err = check_batch(&over, MAX_REQUEST_BYTES).expect_err("one byte over");
        assert_eq!(err.code, "BatchRequestTooLong");
    }

    #[test]
    fn count_and_ids_are_checked() {
        let eleven = request((0..11).map(|i| entry(&i.to_string(), "x", &[])).collect());
        assert_eq!(
            check_batch(&eleven, MAX_REQUEST_BYTES).map_err(|e| e.code),
            Err("TooManyEntriesInBatchRequest")
        );
        let dup = request(vec![entry("a", "x", &[]), entry("a", "y", &[])]);
        assert_eq!(
            check_batch(&dup, MAX_REQUEST_BYTES).map_err(|e| e.code),
            Err("BatchEntryIdsNotDistinct")
        );
        assert_eq!(
            check_batch(&request(vec![]), MAX_REQUEST_BYTES).map_err(|e| e.code),
            Err("EmptyBatchRequest")
        );
        let bad_id = request(vec![entry("a.b", "x", &[])]);
        assert_eq!(
            check_batch(&bad_id, MAX_REQUEST_BYTES).map_err(|e| e.code),
            Err("InvalidBatchEntryId")
        );
    }

    #[test]
    fn a_too_large_or_invalid_entry_fails_alone() {
        let req = request(vec![
            entry("0", &"x".repeat(2_000), &[]),
            entry("1", "ok", &[]),
            entry("2", "bad \u{1} char", &[]),
        ]);
        let v = check_batch(&req, 1_024).expect("the call itself is fine");
        assert!(matches!(
            v[0],
            EntryVerdict::Failed {
                code: "InvalidParameterValue",
                ..
            }
        ));
        assert_eq!(v[1], EntryVerdict::Sent { size: 2 });
        assert!(matches!(
            v[2],
            EntryVerdict::Failed {
                code: "InvalidMessageContents",
                ..
            }
        ));
    }

    #[test]
    fn eleven_attributes_fail_the_entry() {
        let names: Vec<String> = (0..11).map(|i| format!("a{i}")).collect();
        let attrs: Vec<(&str, &str, &str)> =
            names.iter().map(|n| (n.as_str(), "String", "v")).collect();
        let req = request(vec![entry("0", "x", &attrs)]);
        let v = check_batch(&req, MAX_REQUEST_BYTES).expect("call ok");
        assert!(matches!(
            v[0],
            EntryVerdict::Failed {
                code: "InvalidParameterValue",
                ..
            }
        ));
    }

    #[test]
    fn aggregates_are_told_apart_and_their_records_counted() {
        let marker = ("sqs-forwarder.aggregate", "String", "1");
        let body = r#"{"v":1,"records":[{"body":"a"},{"body":"b","attributes":{"k":{"dataType":"String","stringValue":"v"}}},{"body":"c","deduplicationId":"x"}]}"#;
        let req = request(vec![
            entry("0", body, &[marker]),
            entry("1", "plain", &[]),
            entry("2", "not json", &[marker]),
            entry("3", r#"{"v":2,"records":[]}"#, &[marker]),
            entry("4", r#"{"v":1,"records":[{"nobody":1}]}"#, &[marker]),
            entry(
                "5",
                r#"{"v":1,"records":[]}"#,
                &[("sqs-forwarder.aggregate", "String", "2")],
            ),
        ]);
        let found: Vec<_> = req.entries.iter().map(aggregate_records).collect();
        assert_eq!(found[0], Some(Ok(3)));
        assert_eq!(found[1], None);
        for (i, f) in found.iter().enumerate().skip(2) {
            assert!(matches!(f, Some(Err(_))), "entry {i}: {f:?}");
        }
    }

    #[test]
    fn billing_is_per_started_64k_chunk_at_least_one() {
        assert_eq!(billed_units(0), 1);
        assert_eq!(billed_units(1), 1);
        assert_eq!(billed_units(65_536), 1);
        assert_eq!(billed_units(65_537), 2);
        assert_eq!(billed_units(MAX_REQUEST_BYTES), 16);
    }
}
