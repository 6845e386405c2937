//! Helpers for the aggregation end-to-end tests (`tests/aggregation.rs`):
//! the shared configuration with `AGGREGATE=true`, the drained messages
//! read back record by record with the crate's reader
//! (`sqs_forwarder::aggregate::read::records`), the checks every FIFO
//! output must pass, and the Python consumer
//! (`examples/consumer-python/sqs_forwarder_records.py`) run over the same
//! messages as a Lambda SQS event.

use std::collections::{BTreeMap, HashMap};
use std::process::Command;

use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use sqs_forwarder::Config;
use sqs_forwarder::aggregate::MARKER_ATTRIBUTE;
use sqs_forwarder::aggregate::read::{ReceivedAttribute, Record, records};

/// The shared configuration for the queue `url`: three quick attempts per
/// message, aggregation on (unless `vars` says otherwise), and `vars`.
pub fn config(url: &str, vars: &[(&str, &str)]) -> Config {
    let mut map: HashMap<String, String> = [
        ("QUEUE_URL", url),
        ("AGGREGATE", "true"),
        ("RETRY_MAX_ATTEMPTS", "3"),
        ("RETRY_BASE_DELAY_MS", "1"),
        ("RETRY_MAX_DELAY_MS", "5"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (k, v) in vars {
        if v.is_empty() {
            map.remove(*k);
        } else {
            map.insert(k.to_string(), v.to_string());
        }
    }
    Config::from_lookup(|k| map.get(k).cloned()).expect("valid test configuration")
}

/// One received SQS message and its records, as the crate's reader reads them.
#[derive(Debug, Clone)]
pub struct Delivered {
    /// The SQS message id.
    pub message_id: String,
    /// Whether it carries the aggregate marker.
    pub aggregate: bool,
    /// Its `MessageGroupId` (FIFO).
    pub group: Option<String>,
    /// Its `MessageDeduplicationId` (FIFO).
    pub deduplication_id: Option<String>,
    /// Its records, in order.
    pub records: Vec<Record>,
}

/// A received message's attributes as a consumer gets them.
pub fn received_attributes(m: &Message) -> HashMap<String, ReceivedAttribute> {
    m.message_attributes()
        .map(|attrs| {
            attrs
                .iter()
                .map(|(name, v)| {
                    let a = ReceivedAttribute {
                        data_type: v.data_type().to_owned(),
                        string_value: v.string_value().map(str::to_owned),
                        binary_value: v.binary_value().map(|b| BASE64.encode(b.as_ref())),
                    };
                    (name.clone(), a)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn system(m: &Message, name: MessageSystemAttributeName) -> Option<String> {
    m.attributes().and_then(|a| a.get(&name)).cloned()
}

/// Every drained message read back with `aggregate::read::records`.
pub fn read_all(messages: &[Message]) -> Vec<Delivered> {
    messages
        .iter()
        .map(|m| {
            let id = m.message_id().expect("a message id");
            let attributes = received_attributes(m);
            let recs = records(id, m.body().expect("a body"), &attributes)
                .unwrap_or_else(|e| panic!("message {id} does not read back: {e}"));
            Delivered {
                message_id: id.to_owned(),
                aggregate: attributes.contains_key(MARKER_ATTRIBUTE),
                group: system(m, MessageSystemAttributeName::MessageGroupId),
                deduplication_id: system(m, MessageSystemAttributeName::MessageDeduplicationId),
                records: recs,
            }
        })
        .collect()
}

/// Every record's body, in the order received.
pub fn bodies(delivered: &[Delivered]) -> Vec<String> {
    delivered
        .iter()
        .flat_map(|d| d.records.iter().map(|r| r.body.clone()))
        .collect()
}

/// How many times each record body arrived.
pub fn copies(delivered: &[Delivered]) -> BTreeMap<String, usize> {
    let mut n = BTreeMap::new();
    for b in bodies(delivered) {
        *n.entry(b).or_default() += 1;
    }
    n
}

/// Aggregation proven on: `records` records came in at most `most`
/// messages, nearly all of them aggregates.
pub fn assert_aggregated(delivered: &[Delivered], records: usize, most: usize) {
    let n: usize = delivered.iter().map(|d| d.records.len()).sum();
    assert_eq!(n, records, "records delivered");
    assert!(
        delivered.len() <= most,
        "{} messages for {records} records: aggregation is not on",
        delivered.len()
    );
    assert!(
        delivered.iter().any(|d| d.aggregate && d.records.len() > 1),
        "no aggregate"
    );
}

/// A FIFO output: every message has a group; every record its own
/// deduplication id (an aggregate's records in the body, a plain message's
/// as the message's); returns the records' bodies per group, in the order
/// received (drain FIFO queues in order: receive waits for a group's
/// earlier messages to be deleted).
pub fn fifo_groups(delivered: &[Delivered]) -> BTreeMap<String, Vec<(String, String)>> {
    let mut groups: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for d in delivered {
        let group = d.group.clone().expect("a FIFO message has a group");
        assert!(
            d.deduplication_id.is_some(),
            "{}: no deduplication id",
            d.message_id
        );
        for r in &d.records {
            let dedup = if d.aggregate {
                r.deduplication_id.clone()
            } else {
                d.deduplication_id.clone()
            };
            let dedup = dedup.unwrap_or_else(|| panic!("record {} has no deduplicationId", r.id));
            groups
                .entry(group.clone())
                .or_default()
                .push((r.body.clone(), dedup));
        }
    }
    groups
}

/// The messages as a Lambda SQS event (`Records` with `messageId`, `body`,
/// `messageAttributes` and `attributes`).
pub fn lambda_event(messages: &[Message]) -> Value {
    let records: Vec<Value> = messages
        .iter()
        .map(|m| {
            let attrs: serde_json::Map<String, Value> = received_attributes(m)
                .into_iter()
                .map(|(name, a)| {
                    let mut v = json!({"dataType": a.data_type});
                    if let Some(s) = a.string_value {
                        v["stringValue"] = s.into();
                    }
                    if let Some(b) = a.binary_value {
                        v["binaryValue"] = b.into();
                    }
                    (name, v)
                })
                .collect();
            let system: serde_json::Map<String, Value> = m
                .attributes()
                .map(|a| {
                    a.iter()
                        .map(|(k, v)| (k.as_str().to_owned(), Value::from(v.clone())))
                        .collect()
                })
                .unwrap_or_default();
            json!({
                "messageId": m.message_id(),
                "receiptHandle": m.receipt_handle(),
                "body": m.body(),
                "attributes": system,
                "messageAttributes": attrs,
                "md5OfBody": m.md5_of_body(),
                "eventSource": "aws:sqs",
                "awsRegion": "us-east-1",
            })
        })
        .collect();
    json!({ "Records": records })
}

/// The Python consumer's `deaggregate()` over `messages` (as a Lambda SQS
/// event in a temporary file): its records, in order.
pub fn python_records(messages: &[Message]) -> Vec<Value> {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let venv = root.join(".local/venv/bin/python");
    let python = if venv.exists() {
        venv
    } else {
        "python3".into()
    };
    let file = std::env::temp_dir().join(crate::rabbitmq::unique("agg-event") + ".json");
    std::fs::write(&file, lambda_event(messages).to_string()).expect("write the event");
    let driver = "import json, sys\n\
        sys.path.insert(0, sys.argv[1])\n\
        from sqs_forwarder_records import deaggregate\n\
        event = json.load(open(sys.argv[2]))\n\
        print(json.dumps([r for m in event['Records'] for r in deaggregate(m)]))\n";
    let out = Command::new(&python)
        .arg("-c")
        .arg(driver)
        .arg(root.join("examples/consumer-python"))
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let _ = std::fs::remove_file(&file);
    assert!(
        out.status.success(),
        "the Python consumer failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the driver prints JSON")
}

/// The Python consumer reads `messages` into exactly the records the
/// crate's reader gives: ids, message ids, indexes, bodies, attributes,
/// deduplication ids. (A plain message's record: the Python consumer gives
/// the message's own `MessageDeduplicationId`, the Rust reader none.)
pub fn assert_python_agrees(messages: &[Message]) {
    let rust: Vec<Value> = read_all(messages)
        .into_iter()
        .flat_map(|d| {
            let plain_dedup = (!d.aggregate).then(|| d.deduplication_id.clone()).flatten();
            d.records.into_iter().map(move |r| {
                let attributes: serde_json::Map<String, Value> = r
                    .attributes
                    .iter()
                    .map(|(k, a)| {
                        let mut v = json!({"dataType": a.data_type});
                        if let Some(s) = &a.string_value {
                            v["stringValue"] = s.clone().into();
                        }
                        if let Some(b) = &a.binary_value {
                            v["binaryValue"] = b.clone().into();
                        }
                        (k.clone(), v)
                    })
                    .collect();
                json!({
                    "id": r.id,
                    "messageId": r.message_id,
                    "index": r.index,
                    "body": r.body,
                    "attributes": attributes,
                    "deduplicationId": r.deduplication_id.clone().or(plain_dedup.clone()),
                })
            })
        })
        .collect();
    let python = python_records(messages);
    assert!(!rust.is_empty());
    assert_eq!(python.len(), rust.len(), "records read by Python and Rust");
    for (p, r) in python.iter().zip(&rust) {
        assert_eq!(p, r, "the Python consumer and the Rust reader disagree");
    }
}
