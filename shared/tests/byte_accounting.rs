//! Byte accounting against a strict fake SQS endpoint.
//!
//! The local SQS stand-in (moto) counts Python characters and ignores
//! attributes, so it cannot tell whether the crate sizes messages the way SQS
//! does. Here a [`wiremock`] server speaks the AWS JSON 1.0 protocol of
//! `SendMessageBatch` and, for every request, recomputes each entry's size
//! exactly as SQS does: body UTF-8 bytes plus, for every attribute, the bytes
//! of its name, its data type and its value (a `Binary` value counts its
//! decoded bytes, not its base64 form on the wire). Anything SQS would reject
//! (more than 10 entries, bad or duplicate ids, a request over 1 MiB, an entry
//! over the queue's `MaximumMessageSize`, more than 10 attributes, characters
//! outside SQS's set) is recorded as a violation and answered the way SQS
//! answers it, and every test asserts that no violation happened.
//!
//! Checksums: aws-sdk-sqs 1.119 (Rust) does not verify `MD5OfMessageBody`:
//! it has no MD5 dependency and only defaults the field when it is missing
//! (`serde_util::send_message_batch_result_entry_correct_errors`). The fake
//! therefore answers with a placeholder digest and no md5 crate is needed.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use aws_sdk_sqs::config::retry::RetryConfig;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchError;
use aws_sdk_sqs::primitives::Blob;
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use sqs_forwarder::call::sdk::classify_sdk_error;
use sqs_forwarder::call::transport::CallError;
use sqs_forwarder::message::encode::{
    DEFAULT_ENCODING_ATTRIBUTE, ENCODING_MARKER_VALUE, EncodeRules,
};
use sqs_forwarder::{
    Attribute, AttributeValue, Forwarder, Limits, Message, MessageOutcome, Outcome, SendSettings,
    SqsTransport,
};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// SQS's cap on the sum of the message sizes in one `SendMessageBatch`.
const SQS_REQUEST_CAP: usize = 1_048_576;
/// SQS's cap on entries per `SendMessageBatch`.
const SQS_MAX_ENTRIES: usize = 10;
/// SQS's cap on attributes per message.
const SQS_MAX_ATTRIBUTES: usize = 10;
/// What the body-encoding marker attribute adds to a message:
/// `sqs-forwarder.encoding` + `String` + `base64`.
const MARKER_BYTES: usize = 22 + 6 + 6;
const JSON_1_0: &str = "application/x-amz-json-1.0";

// ---------------------------------------------------------------------------
// The strict fake SQS
// ---------------------------------------------------------------------------

/// One `SendMessageBatch` request as the fake saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Call {
    /// Entries in the request.
    entries: usize,
    /// Sum of the entries' sizes, recomputed the SQS way.
    bytes: usize,
}

/// One entry the fake accepted (listed under `Successful`).
#[derive(Debug, Clone)]
struct Accepted {
    /// Hash of the `MessageBody` received.
    body_hash: u64,
    /// The entry's size, recomputed the SQS way.
    size: usize,
    /// `(name, data type)` of every attribute received.
    attributes: Vec<(String, String)>,
}

#[derive(Debug, Default)]
struct Log {
    calls: Vec<Call>,
    violations: Vec<String>,
    /// Accepted entries by the `MessageId` the fake gave them.
    accepted: HashMap<String, Accepted>,
    /// Hashes of every body received, accepted or not.
    received: HashSet<u64>,
    next_message: u64,
}

type SharedLog = Arc<Mutex<Log>>;

fn lock(log: &SharedLog) -> std::sync::MutexGuard<'_, Log> {
    log.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fake SQS queue that enforces every size and count rule of
/// `SendMessageBatch` and records what it was sent.
struct StrictSqs {
    queue_url: String,
    /// The queue's `MaximumMessageSize`.
    max_message_bytes: usize,
    log: SharedLog,
}

fn hash_of(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// The characters SQS accepts in a body or a `String` attribute value.
fn sqs_char(c: char) -> bool {
    matches!(c, '\u{9}' | '\u{A}' | '\u{D}' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

fn valid_batch_id(id: &str) -> bool {
    (1..=80).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn valid_attribute_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    (1..=256).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..")
        && !lower.starts_with("aws.")
        && !lower.starts_with("amazon.")
}

/// A whole-call error the way SQS's JSON protocol sends it: `__type` in the
/// body and the query-compatible code in `x-amzn-query-error`.
fn call_error(short: &str, query_code: &str, message: &str) -> ResponseTemplate {
    let body = json!({ "__type": format!("com.amazonaws.sqs#{short}"), "message": message });
    ResponseTemplate::new(400)
        .insert_header("x-amzn-query-error", format!("{query_code};Sender"))
        .insert_header("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
        .set_body_raw(body.to_string().into_bytes(), JSON_1_0)
}

/// An entry's SQS size and its attributes' `(name, data type)`, or the code
/// and message SQS would reject it with.
type EntrySize = Result<(usize, Vec<(String, String)>), (&'static str, String)>;

fn entry_size(entry: &Value) -> EntrySize {
    let body = entry
        .get("MessageBody")
        .and_then(Value::as_str)
        .ok_or(("MissingParameter", "no MessageBody".to_owned()))?;
    if body.is_empty() {
        return Err(("InvalidParameterValue", "empty MessageBody".to_owned()));
    }
    if let Some(c) = body.chars().find(|c| !sqs_char(*c)) {
        return Err((
            "InvalidMessageContents",
            format!("body holds U+{:04X}", c as u32),
        ));
    }
    let mut size = body.len();
    let mut names = Vec::new();
    if let Some(attrs) = entry.get("MessageAttributes") {
        let attrs = attrs.as_object().ok_or((
            "InvalidParameterValue",
            "MessageAttributes is not an object".to_owned(),
        ))?;
        if attrs.len() > SQS_MAX_ATTRIBUTES {
            return Err((
                "InvalidParameterValue",
                format!("{} message attributes", attrs.len()),
            ));
        }
        for (name, v) in attrs {
            if !valid_attribute_name(name) {
                return Err(("InvalidParameterValue", format!("attribute name {name:?}")));
            }
            let data_type = v.get("DataType").and_then(Value::as_str).unwrap_or("");
            let base = data_type.split_once('.').map_or(data_type, |(b, _)| b);
            let value_bytes = match base {
                "String" | "Number" => {
                    let s = v.get("StringValue").and_then(Value::as_str).ok_or((
                        "InvalidParameterValue",
                        format!("attribute {name:?} has no StringValue"),
                    ))?;
                    if s.is_empty() || (base == "String" && !s.chars().all(sqs_char)) {
                        return Err((
                            "InvalidParameterValue",
                            format!("attribute {name:?} has an invalid StringValue"),
                        ));
                    }
                    s.len()
                }
                "Binary" => {
                    let b = v.get("BinaryValue").and_then(Value::as_str).ok_or((
                        "InvalidParameterValue",
                        format!("attribute {name:?} has no BinaryValue"),
                    ))?;
                    let decoded = BASE64.decode(b).map_err(|e| {
                        (
                            "InvalidParameterValue",
                            format!("attribute {name:?}: BinaryValue is not base64: {e}"),
                        )
                    })?;
                    if decoded.is_empty() {
                        return Err((
                            "InvalidParameterValue",
                            format!("attribute {name:?} has an empty BinaryValue"),
                        ));
                    }
                    decoded.len()
                }
                _ => {
                    return Err((
                        "InvalidParameterValue",
                        format!("attribute {name:?} has data type {data_type:?}"),
                    ));
                }
            };
            size += name.len() + data_type.len() + value_bytes;
            names.push((name.clone(), data_type.to_owned()));
        }
    }
    Ok((size, names))
}

impl StrictSqs {
    fn violation(&self, log: &mut Log, what: String) {
        log.violations
            .push(format!("call {}: {what}", log.calls.len()));
    }
}

impl Respond for StrictSqs {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut log = lock(&self.log);
        let log = &mut *log;
        let header = |name: &str| {
            request
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        if request.method.as_str() != "POST"
            || request.url.path() != "/"
            || header("x-amz-target") != "AmazonSQS.SendMessageBatch"
            || !header("content-type").starts_with(JSON_1_0)
        {
            let what = format!(
                "unexpected request {} {} target={:?} content-type={:?}",
                request.method,
                request.url.path(),
                header("x-amz-target"),
                header("content-type")
            );
            self.violation(log, what);
            return call_error(
                "UnsupportedOperation",
                "AWS.SimpleQueueService.UnsupportedOperation",
                "this fake only serves SendMessageBatch",
            );
        }
        let body: Value = match serde_json::from_slice(&request.body) {
            Ok(v) => v,
            Err(e) => {
                self.violation(log, format!("request body is not JSON: {e}"));
                return call_error("InvalidParameterValue", "InvalidParameterValue", "bad JSON");
            }
        };
        if body.get("QueueUrl").and_then(Value::as_str) != Some(self.queue_url.as_str()) {
            self.violation(log, format!("wrong QueueUrl {:?}", body.get("QueueUrl")));
            return call_error(
                "QueueDoesNotExist",
                "AWS.SimpleQueueService.NonExistentQueue",
                "The specified queue does not exist.",
            );
        }
        let entries: Vec<Value> = body
            .get("Entries")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();

        // Sizes first, so that every request is recorded with its byte total.
        let sized: Vec<_> = entries.iter().map(entry_size).collect();
        let total: usize = entries
            .iter()
            .zip(&sized)
            .map(|(e, s)| match s {
                Ok((n, _)) => *n,
                // An entry rejected for its contents still counts its bytes.
                Err(_) => e
                    .get("MessageBody")
                    .and_then(Value::as_str)
                    .map_or(0, str::len),
            })
            .sum();
        for e in &entries {
            if let Some(b) = e.get("MessageBody").and_then(Value::as_str) {
                log.received.insert(hash_of(b));
            }
        }
        log.calls.push(Call {
            entries: entries.len(),
            bytes: total,
        });

        if entries.is_empty() {
            self.violation(log, "empty batch".into());
            return call_error(
                "EmptyBatchRequest",
                "AWS.SimpleQueueService.EmptyBatchRequest",
                "There should be at least one SendMessageBatchRequestEntry in the request.",
            );
        }
        if entries.len() > SQS_MAX_ENTRIES {
            self.violation(log, format!("{} entries", entries.len()));
            return call_error(
                "TooManyEntriesInBatchRequest",
                "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
                &format!(
                    "Maximum number of entries per request are 10. You have sent {}.",
                    entries.len()
                ),
            );
        }
        let ids: Vec<&str> = entries
            .iter()
            .map(|e| e.get("Id").and_then(Value::as_str).unwrap_or(""))
            .collect();
        if let Some(bad) = ids.iter().find(|id| !valid_batch_id(id)) {
            self.violation(log, format!("invalid entry id {bad:?}"));
            return call_error(
                "InvalidBatchEntryId",
                "AWS.SimpleQueueService.InvalidBatchEntryId",
                "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.",
            );
        }
        if ids.iter().collect::<HashSet<_>>().len() != ids.len() {
            self.violation(log, format!("duplicate entry ids {ids:?}"));
            return call_error(
                "BatchEntryIdsNotDistinct",
                "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
                "Two or more batch entries in the request have the same Id.",
            );
        }
        if total > SQS_REQUEST_CAP {
            self.violation(log, format!("request of {total} bytes > {SQS_REQUEST_CAP}"));
            return call_error(
                "BatchRequestTooLong",
                "AWS.SimpleQueueService.BatchRequestTooLong",
                &format!(
                    "Batch requests cannot be longer than {SQS_REQUEST_CAP} bytes. You have sent {total} bytes."
                ),
            );
        }

        let mut successful = Vec::new();
        let mut failed = Vec::new();
        for ((entry, id), sized) in entries.iter().zip(&ids).zip(sized) {
            let checked = sized.and_then(|(size, attributes)| {
                if size > self.max_message_bytes {
                    Err((
                        "InvalidParameterValue",
                        format!(
                            "One or more parameters are invalid. Reason: Message must be shorter than {} bytes.",
                            self.max_message_bytes
                        ),
                    ))
                } else {
                    Ok((size, attributes))
                }
            });
            match checked {
                Ok((size, attributes)) => {
                    let body = entry["MessageBody"].as_str().unwrap_or("");
                    let body_hash = hash_of(body);
                    log.next_message += 1;
                    let message_id = format!("00000000-0000-4000-8000-{:012x}", log.next_message);
                    log.accepted.insert(
                        message_id.clone(),
                        Accepted {
                            body_hash,
                            size,
                            attributes,
                        },
                    );
                    successful.push(json!({
                        "Id": id,
                        "MessageId": message_id,
                        // Not a real MD5: the Rust SDK does not check it.
                        "MD5OfMessageBody": format!("{body_hash:016x}{body_hash:016x}"),
                    }));
                }
                Err((code, message)) => {
                    self.violation(log, format!("entry {id}: {code}: {message}"));
                    failed.push(json!({
                        "Id": id,
                        "SenderFault": true,
                        "Code": code,
                        "Message": message,
                    }));
                }
            }
        }
        let body = json!({ "Successful": successful, "Failed": failed });
        ResponseTemplate::new(200)
            .insert_header("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
            .set_body_raw(body.to_string().into_bytes(), JSON_1_0)
    }
}

// ---------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------

struct Harness {
    _server: MockServer,
    log: SharedLog,
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl Harness {
    /// A fake queue with this `MaximumMessageSize`.
    async fn start(queue_max_message_bytes: usize) -> Self {
        let server = MockServer::builder()
            .disable_request_recording()
            .start()
            .await;
        let uri = server.uri();
        let queue_url = format!("{uri}/000000000000/q");
        let log = SharedLog::default();
        Mock::given(any())
            .respond_with(StrictSqs {
                queue_url: queue_url.clone(),
                max_message_bytes: queue_max_message_bytes,
                log: Arc::clone(&log),
            })
            .mount(&server)
            .await;
        let config = aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "test"))
            .endpoint_url(uri)
            .retry_config(RetryConfig::disabled())
            .build();
        Harness {
            _server: server,
            log,
            client: aws_sdk_sqs::Client::from_conf(config),
            queue_url,
        }
    }

    fn forwarder(&self, limits: Limits) -> Forwarder<SqsTransport> {
        Forwarder::new(
            SqsTransport::new(self.client.clone(), self.queue_url.clone()),
            SendSettings {
                limits,
                max_in_flight: 1,
                ..Default::default()
            },
            EncodeRules::default(),
        )
    }

    /// The calls recorded since the last time, removed from the log.
    fn take_calls(&self) -> Vec<Call> {
        std::mem::take(&mut lock(&self.log).calls)
    }

    fn violations(&self) -> Vec<String> {
        lock(&self.log).violations.clone()
    }

    fn accepted(&self, message_id: &str) -> Option<Accepted> {
        lock(&self.log).accepted.get(message_id).cloned()
    }

    fn accepted_count(&self) -> usize {
        lock(&self.log).accepted.len()
    }

    fn received(&self, body: &str) -> bool {
        lock(&self.log).received.contains(&hash_of(body))
    }

    fn assert_no_violations(&self) {
        let v = self.violations();
        assert!(
            v.is_empty(),
            "the fake SQS saw {} violation(s): {v:#?}",
            v.len()
        );
    }
}

// ---------------------------------------------------------------------------
// Building messages of exact sizes
// ---------------------------------------------------------------------------

/// The bytes SQS counts for an attribute, computed here independently:
/// name + data type + value (decoded bytes for `Binary`).
fn attr_bytes(a: &Attribute) -> usize {
    let value = match &a.value {
        AttributeValue::String(s) | AttributeValue::Number(s) => s.len(),
        AttributeValue::Binary(b) => b.len(),
    };
    a.name.len() + a.data_type.len() + value
}

/// Valid SQS text of exactly `n` UTF-8 bytes, mixing 1-, 2-, 3- and 4-byte
/// characters.
fn text_of(n: usize, rng: &mut fastrand::Rng) -> String {
    const CHARS: [char; 9] = ['a', 'Z', '~', 'é', 'ß', '€', '中', '🌍', '𝄞'];
    let mut s = String::with_capacity(n);
    while s.len() < n {
        let left = n - s.len();
        let c = CHARS[rng.usize(..CHARS.len())];
        s.push(if c.len_utf8() <= left { c } else { 'a' });
    }
    debug_assert_eq!(s.len(), n);
    s
}

/// A text message of exactly `total` bytes (body + attributes) as SQS counts
/// them, with these attributes. Returns the message and its body.
fn sized_message(
    total: usize,
    attributes: Vec<Attribute>,
    position: usize,
    rng: &mut fastrand::Rng,
) -> (Message<usize>, String) {
    let attrs: usize = attributes.iter().map(attr_bytes).sum();
    let body = text_of(total - attrs, rng);
    let mut m = Message::new(body.clone(), position);
    for a in attributes {
        m = m.attribute(a);
    }
    (m, body)
}

/// Multi-byte `String` attributes (and a `Number` one) for message `i`.
fn multibyte_attributes(i: usize) -> Vec<Attribute> {
    vec![
        // 4 + 6 + (2 + 3 + 4) = 19 bytes
        Attribute::string("lang", "é€🌍"),
        // 6 + 6 + 15 = 27 bytes
        Attribute::string("origin", "Zürich–Köln"),
        Attribute::number("seq", i),
    ]
}

fn sent_id<P>(o: &MessageOutcome<P>) -> &str {
    match &o.outcome {
        Outcome::Sent { message_id, .. } => message_id,
        other => panic!("expected Sent, got {other:?}"),
    }
}

/// Send `sizes` (each exactly that many bytes with multi-byte attributes),
/// and check every message was sent, once, with the body it had and the size
/// expected. Returns the calls made.
async fn send_sized(h: &Harness, limits: Limits, sizes: &[usize], seed: u64) -> Vec<Call> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let (messages, bodies): (Vec<_>, Vec<_>) = sizes
        .iter()
        .enumerate()
        .map(|(i, &s)| sized_message(s, multibyte_attributes(i), i, &mut rng))
        .unzip();
    for b in &bodies {
        assert!(b.len() < b.chars().count() * 4 && b.len() > b.chars().count());
    }
    let before = h.accepted_count();
    let outcomes = h.forwarder(limits).send_all(messages, None).await;
    assert_eq!(outcomes.len(), sizes.len());
    let mut ids = HashSet::new();
    for (i, o) in outcomes.iter().enumerate() {
        assert_eq!(o.position, i);
        let id = sent_id(o);
        assert!(ids.insert(id.to_owned()), "message id {id} given twice");
        let a = h.accepted(id).expect("the fake accepted this message id");
        assert_eq!(a.body_hash, hash_of(&bodies[i]), "message {i}: wrong body");
        assert_eq!(a.size, sizes[i], "message {i}: SQS-counted size");
        assert_eq!(o.attempts, 1, "message {i} needed a retry");
    }
    assert_eq!(h.accepted_count() - before, sizes.len());
    h.take_calls()
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

/// The fake itself is strict: it counts like SQS and rejects like SQS. Without
/// this, "zero violations" in the other tests would prove nothing.
#[tokio::test]
async fn fake_sqs_counts_and_rejects_like_sqs() {
    let h = Harness::start(300_000).await;
    let entry = |id: &str, body: String, binary: Option<usize>| {
        let mut b = SendMessageBatchRequestEntry::builder()
            .id(id)
            .message_body(body);
        if let Some(n) = binary {
            b = b.message_attributes(
                "bin",
                MessageAttributeValue::builder()
                    .data_type("Binary")
                    .binary_value(Blob::new(vec![0xFFu8; n]))
                    .build()
                    .expect("attribute"),
            );
        }
        b.build().expect("entry")
    };
    let send = |entries: Vec<SendMessageBatchRequestEntry>| {
        h.client
            .send_message_batch()
            .queue_url(&h.queue_url)
            .set_entries(Some(entries))
            .send()
    };

    // Exactly 1 MiB: 4 × 262,144 where one entry's 1,000-byte Binary value
    // (1,336 base64 characters on the wire) counts 3 + 6 + 1,000.
    let mut es: Vec<_> = (0..3)
        .map(|i| entry(&format!("e{i}"), "a".repeat(262_144), None))
        .collect();
    es.push(entry(
        "e3",
        "é".repeat((262_144 - 1_009) / 2) + "a",
        Some(1_000),
    ));
    let out = send(es).await.expect("exactly 1 MiB is accepted");
    assert_eq!(out.successful().len(), 4);
    assert!(out.failed().is_empty());
    assert_eq!(
        h.take_calls(),
        vec![Call {
            entries: 4,
            bytes: SQS_REQUEST_CAP
        }]
    );
    h.assert_no_violations();

    // One byte more: the whole call fails, and the crate sees TooLong.
    let mut es: Vec<_> = (0..3)
        .map(|i| entry(&format!("e{i}"), "a".repeat(262_144), None))
        .collect();
    es.push(entry(
        "e3",
        "é".repeat((262_144 - 1_009) / 2) + "a",
        Some(1_001),
    ));
    let err = send(es).await.expect_err("1 MiB + 1 is rejected");
    assert!(
        matches!(
            err.as_service_error(),
            Some(SendMessageBatchError::BatchRequestTooLong(_))
        ),
        "{err:?}"
    );
    assert!(matches!(classify_sdk_error(&err), CallError::TooLong(_)));
    assert_eq!(
        h.take_calls(),
        vec![Call {
            entries: 4,
            bytes: SQS_REQUEST_CAP + 1
        }]
    );
    assert_eq!(h.violations().len(), 1);

    // An entry over the queue's limit fails alone; its batch-mate goes.
    let out = send(vec![
        entry("big", "€".repeat(100_000) + "a", None), // 300,001 bytes
        entry("ok", "€".repeat(100_000), None),        // 300,000 bytes
    ])
    .await
    .expect("call succeeds");
    assert_eq!(out.successful().len(), 1);
    assert_eq!(out.successful()[0].id(), "ok");
    assert_eq!(out.failed().len(), 1);
    assert_eq!(out.failed()[0].id(), "big");
    assert_eq!(out.failed()[0].code(), "InvalidParameterValue");
    assert!(out.failed()[0].sender_fault());
    assert_eq!(h.violations().len(), 2);

    // Too many entries, duplicate ids, bad characters.
    let many: Vec<_> = (0..11)
        .map(|i| entry(&format!("m{i}"), "x".into(), None))
        .collect();
    let err = send(many).await.expect_err("11 entries are rejected");
    assert!(
        matches!(
            err.as_service_error(),
            Some(SendMessageBatchError::TooManyEntriesInBatchRequest(_))
        ),
        "{err:?}"
    );
    let err = send(vec![
        entry("d", "x".into(), None),
        entry("d", "y".into(), None),
    ])
    .await
    .expect_err("duplicate ids are rejected");
    assert!(
        matches!(
            err.as_service_error(),
            Some(SendMessageBatchError::BatchEntryIdsNotDistinct(_))
        ),
        "{err:?}"
    );
    let out = send(vec![entry("c", "a\u{1}b".into(), None)])
        .await
        .expect("call succeeds");
    assert_eq!(out.failed()[0].code(), "InvalidMessageContents");
    assert_eq!(h.violations().len(), 5, "{:#?}", h.violations());
}

/// Multi-byte bodies and attribute values: a batch of exactly 1,048,576 bytes
/// goes in one call, one byte more is split in two.
#[tokio::test]
async fn multibyte_batches_at_and_one_byte_over_the_request_cap() {
    let h = Harness::start(1_048_576).await;
    let limits = Limits::default();

    // Four messages summing to exactly 1 MiB.
    let at = [300_000, 250_000, 200_000, 298_576];
    assert_eq!(at.iter().sum::<usize>(), SQS_REQUEST_CAP);
    let calls = send_sized(&h, limits, &at, 1).await;
    assert_eq!(
        calls,
        vec![Call {
            entries: 4,
            bytes: SQS_REQUEST_CAP
        }]
    );

    // One byte more: split, next-fit, into two calls.
    let over = [300_000, 250_000, 200_000, 298_577];
    let calls = send_sized(&h, limits, &over, 2).await;
    assert_eq!(
        calls,
        vec![
            Call {
                entries: 3,
                bytes: 750_000
            },
            Call {
                entries: 1,
                bytes: 298_577
            },
        ]
    );

    // Ten messages summing to exactly 1 MiB: both caps reached at once.
    let mut ten = vec![104_858; 6];
    ten.extend([104_857; 4]);
    assert_eq!(ten.iter().sum::<usize>(), SQS_REQUEST_CAP);
    let calls = send_sized(&h, limits, &ten, 3).await;
    assert_eq!(
        calls,
        vec![Call {
            entries: 10,
            bytes: SQS_REQUEST_CAP
        }]
    );

    // Ten messages one byte over: nine in the first call, one in the second.
    let mut ten_over = ten.clone();
    ten_over[9] += 1;
    let calls = send_sized(&h, limits, &ten_over, 4).await;
    assert_eq!(
        calls,
        vec![
            Call {
                entries: 9,
                bytes: SQS_REQUEST_CAP - 104_857
            },
            Call {
                entries: 1,
                bytes: 104_858
            },
        ]
    );

    h.assert_no_violations();
}

/// A 256 KiB queue: the 1 MiB request cap still applies to the call, and the
/// per-message limit includes the attributes.
#[tokio::test]
async fn queue_limit_of_256_kib() {
    const QUEUE: usize = 262_144;
    let h = Harness::start(QUEUE).await;
    let limits = Limits {
        max_message_bytes: QUEUE,
        ..Limits::default()
    };
    let attrs = |i: usize| {
        vec![
            Attribute::string("lang", "é€🌍"),
            Attribute::number("seq", i),
            Attribute::binary("sig", vec![0xA5u8; 16]),
        ]
    };

    // Four messages of 250,000 bytes each: one call of 1,000,000 bytes.
    let mut rng = fastrand::Rng::with_seed(20);
    let (messages, bodies): (Vec<_>, Vec<_>) = (0..4)
        .map(|i| sized_message(250_000, attrs(i), i, &mut rng))
        .unzip();
    let outcomes = h.forwarder(limits).send_all(messages, None).await;
    for (o, body) in outcomes.iter().zip(&bodies) {
        let a = h.accepted(sent_id(o)).expect("accepted");
        assert_eq!(a.size, 250_000);
        assert_eq!(a.body_hash, hash_of(body));
    }
    assert_eq!(
        h.take_calls(),
        vec![Call {
            entries: 4,
            bytes: 1_000_000
        }]
    );

    // Exactly the queue's limit with attributes is sent; one byte more is not.
    let (exact, exact_body) = sized_message(QUEUE, attrs(4), 0, &mut rng);
    let (over, over_body) = sized_message(QUEUE + 1, attrs(5), 1, &mut rng);
    assert!(exact_body.len() < QUEUE && over_body.len() < QUEUE);
    let outcomes = h.forwarder(limits).send_all(vec![exact, over], None).await;
    let a = h.accepted(sent_id(&outcomes[0])).expect("accepted");
    assert_eq!(a.size, QUEUE);
    assert_eq!(a.body_hash, hash_of(&exact_body));
    let f = outcomes[1].outcome.failure().expect("over the limit fails");
    assert_eq!(f.code, "MessageTooLarge");
    assert!(!f.retryable);
    assert_eq!(outcomes[1].attempts, 0);
    assert!(!h.received(&over_body), "the oversize message reached SQS");
    assert_eq!(
        h.take_calls(),
        vec![Call {
            entries: 1,
            bytes: QUEUE
        }]
    );
    assert_eq!(h.accepted_count(), 5);
    h.assert_no_violations();
}

/// Binary attributes count their decoded bytes; a base64-encoded body counts
/// its base64 form plus the marker attribute.
#[tokio::test]
async fn binary_values_and_the_encoding_marker() {
    const QUEUE: usize = 262_144;
    let h = Harness::start(QUEUE).await;
    let limits = Limits {
        max_message_bytes: QUEUE,
        ..Limits::default()
    };
    let binary = |n: usize| -> Vec<u8> {
        // 0xFF first: never UTF-8, so the body must be encoded.
        let mut v: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
        v[0] = 0xFF;
        v
    };
    assert_eq!(MARKER_BYTES, {
        let marker = Attribute::string(DEFAULT_ENCODING_ATTRIBUTE, ENCODING_MARKER_VALUE);
        attr_bytes(&marker)
    });

    // 196,581 bytes -> 262,108 base64 characters; + 34 marker = 262,142.
    let under = binary(196_581);
    // 196,584 bytes -> 262,112 characters (under the limit alone);
    // + 34 marker = 262,146: too large.
    let marker_tips_over = binary(196_584);
    // 195,000 bytes -> 260,000 characters + 34 marker + a Binary attribute
    // of 4 + 6 + 2,100 (2,800 base64 characters on the wire) = 262,144.
    let with_blob = binary(195_000);
    let blob = |n: usize| Attribute::binary("blob", vec![0x00u8; n]);
    // A text body and a custom binary type: 200,000 + 1 + 11 + 62,132.
    let mut rng = fastrand::Rng::with_seed(30);
    let (custom, custom_body) = sized_message(
        QUEUE,
        vec![Attribute::binary("z", vec![0xEEu8; 62_132]).with_data_type("Binary.gzip")],
        4,
        &mut rng,
    );
    assert_eq!(custom_body.len(), 200_000);

    let messages = vec![
        Message::new(under.clone(), 0),
        Message::new(marker_tips_over.clone(), 1),
        Message::new(with_blob.clone(), 2).attribute(blob(2_100)),
        Message::new(with_blob.clone(), 3).attribute(blob(2_101)),
        custom,
    ];
    let outcomes = h.forwarder(limits).send_all(messages, None).await;

    let a = h.accepted(sent_id(&outcomes[0])).expect("accepted");
    assert_eq!(a.size, 262_142);
    assert_eq!(a.body_hash, hash_of(&BASE64.encode(&under)));
    assert_eq!(
        a.attributes,
        vec![(DEFAULT_ENCODING_ATTRIBUTE.to_owned(), "String".to_owned())]
    );

    for i in [1, 3] {
        let f = outcomes[i].outcome.failure().expect("too large");
        assert_eq!(f.code, "MessageTooLarge", "message {i}: {f}");
        assert!(!f.retryable);
        assert_eq!(outcomes[i].attempts, 0);
    }
    assert!(!h.received(&BASE64.encode(&marker_tips_over)));

    let a = h.accepted(sent_id(&outcomes[2])).expect("accepted");
    assert_eq!(a.size, QUEUE);
    assert_eq!(a.body_hash, hash_of(&BASE64.encode(&with_blob)));
    assert_eq!(a.attributes.len(), 2);

    let a = h.accepted(sent_id(&outcomes[4])).expect("accepted");
    assert_eq!(a.size, QUEUE);
    assert_eq!(a.body_hash, hash_of(&custom_body));

    assert_eq!(
        h.take_calls(),
        vec![Call {
            entries: 3,
            bytes: 262_142 + QUEUE + QUEUE
        }]
    );
    assert_eq!(h.accepted_count(), 3);
    h.assert_no_violations();
}

/// What the test expects of one random message, computed without the crate.
struct Expected {
    /// Whether the body must arrive base64-encoded.
    encoded: bool,
    /// The body as it must arrive at SQS.
    wire_body: String,
    /// Its size the SQS way.
    size: usize,
}

fn random_attribute(i: usize, rng: &mut fastrand::Rng) -> Attribute {
    let name = format!("attr{i}.{}", rng.alphanumeric());
    match rng.u8(0..5) {
        0 => Attribute::string(name, text_of(rng.usize(1..=400), rng)),
        1 => Attribute::string(name, text_of(rng.usize(1..=50), rng)).with_data_type("String.utf8"),
        2 => Attribute::number(name, rng.i64(..)),
        3 => {
            let mut v = vec![0u8; rng.usize(1..=3_000)];
            rng.fill(&mut v);
            Attribute::binary(name, v)
        }
        _ => {
            let mut v = vec![0u8; rng.usize(1..=64)];
            rng.fill(&mut v);
            Attribute::binary(name, v).with_data_type("Binary.sig_v2")
        }
    }
}

/// A random message and what SQS must see of it.
fn random_message(position: usize, rng: &mut fastrand::Rng) -> (Message<usize>, Expected) {
    let len = match rng.u8(0..10) {
        0..=2 => rng.usize(1..=2_000),
        3..=5 => rng.usize(1..=200_000),
        // Large bodies, so that ten of them can meet the 1 MiB request cap.
        _ => rng.usize(100_000..=200_000),
    };
    let (body, raw): (sqs_forwarder::Body, Vec<u8>) = match rng.u8(0..20) {
        // Text with a character SQS rejects: base64 and marked.
        0 | 1 => {
            let mut s = text_of(len.saturating_sub(1), rng);
            let mut at = rng.usize(..=s.len());
            while !s.is_char_boundary(at) {
                at += 1;
            }
            s.insert(at, '\u{0}');
            let raw = s.clone().into_bytes();
            (s.into(), raw)
        }
        // Arbitrary bytes.
        2 => {
            let mut v = vec![0u8; len];
            rng.fill(&mut v);
            (v.clone().into(), v)
        }
        _ => {
            let s = text_of(len, rng);
            let raw = s.clone().into_bytes();
            (s.into(), raw)
        }
    };
    let plain = std::str::from_utf8(&raw)
        .ok()
        .filter(|s| s.chars().all(sqs_char));
    let attributes: Vec<Attribute> = (0..rng.usize(0..=9))
        .map(|i| random_attribute(i, rng))
        .collect();
    let attrs: usize = attributes.iter().map(attr_bytes).sum();
    let expected = match plain {
        Some(s) => Expected {
            encoded: false,
            size: s.len() + attrs,
            wire_body: s.to_owned(),
        },
        None => {
            let b64 = BASE64.encode(&raw);
            Expected {
                encoded: true,
                size: b64.len() + MARKER_BYTES + attrs,
                wire_body: b64,
            }
        }
    };
    let mut m = Message::new(body, position);
    m.attributes = attributes;
    (m, expected)
}

/// Next-fit in input order: the fewest calls any in-order split can make.
fn next_fit(sizes: &[usize], limits: &Limits) -> Vec<Call> {
    let mut out: Vec<Call> = Vec::new();
    for &s in sizes {
        match out.last_mut() {
            Some(c)
                if c.entries < limits.max_entries && c.bytes + s <= limits.max_request_bytes =>
            {
                c.entries += 1;
                c.bytes += s;
            }
            _ => out.push(Call {
                entries: 1,
                bytes: s,
            }),
        }
    }
    out
}

/// Random bodies, attributes and limits: no violation ever, the fewest calls
/// possible, every sendable message sent exactly once and every other one
/// reported `MessageTooLarge`.
#[tokio::test]
async fn randomized_sweep() {
    const ROUNDS: u64 = 8;
    const PER_ROUND: usize = 60;
    let base_seed: u64 = std::env::var("BYTE_ACCOUNTING_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_B17E);
    let mut total_sent = 0;
    let mut total_oversize = 0;
    let mut total_encoded = 0;
    let mut cut_by_count = 0;
    let mut cut_by_bytes = 0;
    for round in 0..ROUNDS {
        let seed = base_seed.wrapping_add(round);
        let mut rng = fastrand::Rng::with_seed(seed);
        // The queue's MaximumMessageSize, within SQS's bounds.
        let queue = match round % 4 {
            0 => 1_048_576,
            1 => 262_144,
            2 => rng.usize(1_024..=100_000),
            _ => rng.usize(1_024..=1_048_576),
        };
        let limits = Limits {
            max_entries: if rng.bool() { 10 } else { rng.usize(1..=10) },
            max_message_bytes: queue,
            max_request_bytes: if rng.bool() {
                1_048_576
            } else {
                rng.usize(65_536..=1_048_576)
            },
        };
        let ctx =
            format!("seed {seed} (BYTE_ACCOUNTING_SEED={base_seed}, round {round}), {limits:?}");
        let h = Harness::start(queue).await;
        let (messages, expected): (Vec<_>, Vec<_>) =
            (0..PER_ROUND).map(|i| random_message(i, &mut rng)).unzip();
        let largest = limits.max_message_bytes.min(limits.max_request_bytes);
        let sendable: Vec<usize> = expected
            .iter()
            .map(|e| e.size)
            .filter(|&s| s <= largest)
            .collect();
        let plan = next_fit(&sendable, &limits);

        let outcomes = h.forwarder(limits).send_all(messages, None).await;
        assert_eq!(outcomes.len(), PER_ROUND, "{ctx}");
        h.assert_no_violations();
        let calls = h.take_calls();
        assert_eq!(calls.len(), plan.len(), "{ctx}: calls vs next-fit");
        assert_eq!(calls, plan, "{ctx}");
        for c in &calls {
            assert!(c.entries <= limits.max_entries, "{ctx}: {c:?}");
            assert!(c.bytes <= limits.max_request_bytes, "{ctx}: {c:?}");
        }

        let mut ids = HashSet::new();
        for (i, (o, e)) in outcomes.iter().zip(&expected).enumerate() {
            assert_eq!(o.position, i, "{ctx}");
            if e.size <= largest {
                let id = sent_id(o);
                assert!(ids.insert(id.to_owned()), "{ctx}: id {id} twice");
                let a = h
                    .accepted(id)
                    .unwrap_or_else(|| panic!("{ctx}: message {i}: unknown id {id}"));
                assert_eq!(a.body_hash, hash_of(&e.wire_body), "{ctx}: message {i}");
                assert_eq!(a.size, e.size, "{ctx}: message {i}");
                assert_eq!(o.attempts, 1, "{ctx}: message {i}");
            } else {
                let f = o
                    .outcome
                    .failure()
                    .unwrap_or_else(|| panic!("{ctx}: message {i} ({} bytes)", e.size));
                assert_eq!(f.code, "MessageTooLarge", "{ctx}: message {i}");
                assert!(!f.retryable);
                assert_eq!(o.attempts, 0);
                assert!(!h.received(&e.wire_body), "{ctx}: message {i} reached SQS");
            }
        }
        assert_eq!(
            h.accepted_count(),
            sendable.len(),
            "{ctx}: sent exactly once"
        );
        eprintln!(
            "{ctx}: {} of {PER_ROUND} sendable, entries per call {:?}",
            sendable.len(),
            calls.iter().map(|c| c.entries).collect::<Vec<_>>()
        );
        total_sent += sendable.len();
        total_oversize += PER_ROUND - sendable.len();
        total_encoded += expected
            .iter()
            .filter(|e| e.encoded && e.size <= largest)
            .count();
        for c in &calls[..calls.len().saturating_sub(1)] {
            if c.entries == limits.max_entries {
                cut_by_count += 1;
            } else {
                cut_by_bytes += 1;
            }
        }
    }
    // The sweep must exercise every path it claims to.
    assert!(
        total_sent >= 200,
        "only {total_sent} messages were sendable"
    );
    assert!(total_oversize >= 1, "no message was too large");
    assert!(total_encoded >= 1, "no base64-encoded body was sent");
    assert!(cut_by_count >= 1, "no call was cut by the entry count");
    assert!(cut_by_bytes >= 1, "no call was cut by the byte cap");
}
