//! The offload policy with a fake SQS and a fake S3: which messages go to S3,
//! what the pointer entries look like and how they pack, and what becomes of
//! a message whose put fails, hangs or meets the deadline.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqs_forwarder::call::transport::BoxFuture;
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::message::limits::{Limits, message_size};
use sqs_forwarder::send::offload::{POINTER_CLASS, pointer_body};
use sqs_forwarder::test_support::FakeSqs;
use sqs_forwarder::{
    Attribute, AttributeValue, Entry, Failure, Forwarder, Message, OffloadSettings, OversizePolicy,
    PayloadStore, SendSettings, SizeAttribute, SqsSink,
};
use tokio::time::Instant;

/// Every call's entries, from a fake SQS that accepts every entry.
fn calls(sqs: &FakeSqs) -> Vec<Vec<Entry>> {
    sqs.calls()
        .iter()
        .map(|c| c.entries.iter().map(|s| (*s.entry).clone()).collect())
        .collect()
}

/// Every entry of every call.
fn all_entries(sqs: &FakeSqs) -> Vec<Entry> {
    calls(sqs).into_iter().flatten().collect()
}

/// What the fake S3 does with a put.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Behaviour {
    Store,
    /// Fail payloads starting with "fail" (`AccessDenied`-like).
    FailSome,
    /// Never answer.
    Hang,
}

#[derive(Clone, Debug)]
struct S3 {
    objects: Arc<Mutex<HashMap<String, String>>>,
    behaviour: Behaviour,
}

impl S3 {
    fn new(behaviour: Behaviour) -> Self {
        S3 {
            objects: Arc::default(),
            behaviour,
        }
    }

    fn get(&self, key: &str) -> Option<String> {
        self.objects.lock().expect("lock").get(key).cloned()
    }

    fn len(&self) -> usize {
        self.objects.lock().expect("lock").len()
    }
}

impl PayloadStore for S3 {
    fn bucket(&self) -> &str {
        "payload-bucket"
    }

    fn put<'a>(&'a self, key: &'a str, payload: String) -> BoxFuture<'a, Result<(), Failure>> {
        Box::pin(async move {
            match self.behaviour {
                Behaviour::Hang => std::future::pending().await,
                Behaviour::FailSome if payload.starts_with("fail") => Err(Failure::transient(
                    "OffloadFailed",
                    "PutObject to s3://payload-bucket failed: AccessDenied: Access Denied",
                )),
                _ => {
                    self.objects
                        .lock()
                        .expect("lock")
                        .insert(key.to_owned(), payload);
                    Ok(())
                }
            }
        })
    }
}

const LIMIT: usize = 2048;

fn settings(offload: OffloadSettings) -> SendSettings {
    SendSettings {
        limits: Limits {
            max_entries: 10,
            max_message_bytes: LIMIT,
            max_request_bytes: 1_048_576,
        },
        oversize: OversizePolicy::Offload,
        offload,
        call_timeout: Duration::from_secs(2),
        ..SendSettings::default()
    }
}

fn forwarder(sqs: &FakeSqs, s3: &S3, offload: OffloadSettings) -> Forwarder<FakeSqs> {
    Forwarder::new(sqs.clone(), settings(offload), EncodeRules::default())
        .with_payload_store(s3.clone())
}

/// The S3 key a pointer body names, after checking the body's format.
fn key_of(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).expect("a JSON pointer");
    assert_eq!(v[0], POINTER_CLASS);
    assert_eq!(v[1]["s3BucketName"], "payload-bucket");
    v[1]["s3Key"].as_str().expect("a key").to_owned()
}

fn attribute<'e>(entry: &'e Entry, name: &str) -> Option<&'e AttributeValue> {
    entry
        .attributes
        .iter()
        .find(|a| a.name == name)
        .map(|a| &a.value)
}

#[tokio::test]
async fn only_messages_above_the_limit_go_to_s3_and_pointers_pack_with_the_rest() {
    let (sqs, s3) = (FakeSqs::new(), S3::new(Behaviour::Store));
    let fwd = forwarder(
        &sqs,
        &s3,
        OffloadSettings {
            key_prefix: "p/".into(),
            ..OffloadSettings::default()
        },
    );
    let big = "é".repeat(5_000); // 10,000 bytes
    let messages = vec![
        Message::new("small", 0),
        Message::new(big.clone(), 1).attribute(Attribute::string("type", "order")),
        Message::new("x".repeat(LIMIT), 2), // exactly the limit: stays
        Message::new(vec![0xF3, 0x89, 0x9A, 0xC2], 3),
        Message::new(vec![0u8; 3000], 4), // binary: base64 + marker, then S3
    ];
    let out = fwd.send_all(messages, None).await;
    assert!(out.iter().all(|o| o.outcome.is_sent()), "{out:?}");
    // Two payloads in S3, one call for all five messages.
    assert_eq!(s3.len(), 2);
    let calls = calls(&sqs);
    assert_eq!(calls.len(), 1);
    let entries = &calls[0];
    assert_eq!(entries[0].body, "small");
    assert_eq!(entries[2].body.len(), LIMIT);
    assert!(attribute(&entries[2], "ExtendedPayloadSize").is_none());

    let pointer = &entries[1];
    let key = key_of(&pointer.body);
    assert!(key.starts_with("p/"), "{key}");
    assert_eq!(s3.get(&key).as_deref(), Some(big.as_str()));
    assert_eq!(
        attribute(pointer, "ExtendedPayloadSize"),
        Some(&AttributeValue::Number("10000".into()))
    );
    assert_eq!(
        attribute(pointer, "type"),
        Some(&AttributeValue::String("order".into()))
    );
    assert_eq!(
        pointer.size,
        message_size(&pointer.body, &pointer.attributes)
    );

    // The stored binary payload is the base64 text SQS would have carried;
    // the marker stays on the pointer message.
    let binary = &entries[4];
    let stored = s3.get(&key_of(&binary.body)).expect("stored");
    assert_eq!(stored.len(), 4000);
    assert_eq!(
        attribute(binary, "sqs-forwarder.encoding"),
        Some(&AttributeValue::String("base64".into()))
    );
    assert_eq!(
        attribute(binary, "ExtendedPayloadSize"),
        Some(&AttributeValue::Number("4000".into()))
    );
}

#[tokio::test]
async fn a_lower_threshold_and_always() {
    let (sqs, s3) = (FakeSqs::new(), S3::new(Behaviour::Store));
    let fwd = forwarder(
        &sqs,
        &s3,
        OffloadSettings {
            threshold: Some(1024),
            size_attribute: SizeAttribute::Legacy,
            ..OffloadSettings::default()
        },
    );
    // 1024 with its attribute stays; 1025 goes.
    let at = Message::new("a".repeat(1024 - 8), 0).attribute(Attribute::string("k", "v"));
    let above = Message::new("b".repeat(1025 - 8), 1).attribute(Attribute::string("k", "v"));
    let out = fwd.send_all(vec![at, above], None).await;
    assert!(out.iter().all(|o| o.outcome.is_sent()));
    let entries = all_entries(&sqs);
    assert!(entries[0].body.starts_with('a'));
    assert!(attribute(&entries[1], "SQSLargePayloadSize").is_some());
    assert!(attribute(&entries[1], "ExtendedPayloadSize").is_none());
    assert_eq!(s3.len(), 1);

    let (sqs, s3) = (FakeSqs::new(), S3::new(Behaviour::Store));
    let fwd = forwarder(
        &sqs,
        &s3,
        OffloadSettings {
            always: true,
            ..OffloadSettings::default()
        },
    );
    let out = fwd
        .send_all(vec![Message::new("tiny", 0), Message::new("t2", 1)], None)
        .await;
    assert!(out.iter().all(|o| o.outcome.is_sent()));
    assert_eq!(s3.len(), 2);
    for e in all_entries(&sqs) {
        let key = key_of(&e.body);
        assert!(["tiny", "t2"].contains(&s3.get(&key).expect("stored").as_str()));
    }
}

#[tokio::test]
async fn a_failed_put_fails_that_message_only_and_retryable() {
    let (sqs, s3) = (FakeSqs::new(), S3::new(Behaviour::FailSome));
    let fwd = forwarder(&sqs, &s3, OffloadSettings::default());
    let out = fwd
        .send_all(
            vec![
                Message::new("fail".repeat(1000), 0),
                Message::new("ok".repeat(2000), 1),
                Message::new("small", 2),
            ],
            None,
        )
        .await;
    let f = out[0].outcome.failure().expect("failed");
    assert_eq!((f.code.as_str(), f.retryable), ("OffloadFailed", true));
    assert!(f.message.contains("AccessDenied"), "{}", f.message);
    assert_eq!(out[0].attempts, 0);
    assert!(out[1].outcome.is_sent() && out[2].outcome.is_sent());
    // The failed payload never reached SQS in any form.
    let entries = all_entries(&sqs);
    assert_eq!(entries.len(), 2);
    assert!(entries.iter().all(|e| !e.body.contains("fail")));
}

#[tokio::test]
async fn fifo_a_failed_put_blocks_its_groups_later_messages_only() {
    let (sqs, s3) = (FakeSqs::new(), S3::new(Behaviour::FailSome));
    let rules = EncodeRules {
        fifo: true,
        content_based_deduplication: Some(true),
        ..EncodeRules::default()
    };
    let fwd = Forwarder::new(sqs.clone(), settings(OffloadSettings::default()), rules)
        .with_payload_store(s3.clone());
    let out = fwd
        .send_all(
            vec![
                Message::new("a-first", 0).group_id("a"),
                Message::new("fail".repeat(1000), 1).group_id("a"),
                Message::new("a-third", 2).group_id("a"),
                Message::new("big".repeat(1000), 3).group_id("a"),
                Message::new("b-only", 4).group_id("b"),
            ],
            None,
        )
        .await;
    assert!(out[0].outcome.is_sent());
    assert_eq!(
        out[1].outcome.failure().map(|f| f.code.as_str()),
        Some("OffloadFailed")
    );
    for i in [2, 3] {
        let f = out[i].outcome.failure().expect("blocked");
        assert_eq!((f.code.as_str(), f.retryable), ("GroupBlocked", true));
    }
    assert!(out[4].outcome.is_sent());
    let mut bodies: Vec<String> = all_entries(&sqs).into_iter().map(|e| e.body).collect();
    bodies.sort();
    assert_eq!(bodies, ["a-first", "b-only"]);
}

#[tokio::test(start_paused = true)]
async fn a_put_that_hangs_ends_at_the_call_timeout() {
    let (sqs, s3) = (FakeSqs::new(), S3::new(Behaviour::Hang));
    let fwd = forwarder(&sqs, &s3, OffloadSettings::default());
    let out = fwd
        .send_all(
            vec![Message::new("h".repeat(4000), 0), Message::new("s", 1)],
            None,
        )
        .await;
    let f = out[0].outcome.failure().expect("failed");
    assert_eq!((f.code.as_str(), f.retryable), ("OffloadFailed", true));
    assert!(f.message.contains("2000 ms"), "{}", f.message);
    assert!(out[1].outcome.is_sent());
}

#[tokio::test(start_paused = true)]
async fn a_put_honours_the_deadline() {
    let (sqs, s3) = (FakeSqs::new(), S3::new(Behaviour::Hang));
    let fwd = forwarder(&sqs, &s3, OffloadSettings::default());
    let deadline = Instant::now() + Duration::from_millis(300);
    let out = fwd
        .send_all(vec![Message::new("h".repeat(4000), 0)], Some(deadline))
        .await;
    let f = out[0].outcome.failure().expect("failed");
    assert_eq!((f.code.as_str(), f.retryable), ("OffloadFailed", true));
    assert!(f.message.contains("300 ms"), "{}", f.message);

    // No time left at all: not even tried.
    let (sqs, s3) = (FakeSqs::new(), S3::new(Behaviour::Store));
    let fwd = forwarder(&sqs, &s3, OffloadSettings::default());
    let out = fwd
        .send_all(
            vec![Message::new("h".repeat(4000), 0)],
            Some(Instant::now()),
        )
        .await;
    let f = out[0].outcome.failure().expect("failed");
    assert_eq!((f.code.as_str(), f.retryable), ("DeadlineExceeded", true));
    assert_eq!(s3.len(), 0);
}

#[tokio::test]
async fn what_cannot_be_offloaded_fails_for_good() {
    let (sqs, s3) = (FakeSqs::new(), S3::new(Behaviour::Store));
    let fwd = forwarder(&sqs, &s3, OffloadSettings::default());
    let ten = (0..10).fold(Message::new("t".repeat(4000), 0), |m, i| {
        m.attribute(Attribute::string(format!("a{i}"), "v"))
    });
    let reserved = Message::new("r", 1).attribute(Attribute::number("ExtendedPayloadSize", 5));
    let legacy = Message::new("r", 2).attribute(Attribute::number("SQSLargePayloadSize", 5));
    // Its attributes alone are over the limit: a pointer cannot carry them.
    let heavy =
        Message::new("h".repeat(4000), 3).attribute(Attribute::binary("blob", vec![1u8; LIMIT]));
    let out = fwd
        .send_all(
            vec![ten, reserved, legacy, heavy, Message::new("ok", 4)],
            None,
        )
        .await;
    let codes: Vec<(&str, bool)> = out[..4]
        .iter()
        .map(|o| {
            let f = o.outcome.failure().expect("failed");
            (f.code.as_str(), f.retryable)
        })
        .collect();
    assert_eq!(
        codes,
        [
            ("TooManyAttributes", false),
            ("InvalidAttributeName", false),
            ("InvalidAttributeName", false),
            ("MessageTooLarge", false),
        ]
    );
    assert!(out[4].outcome.is_sent());
    assert_eq!(
        s3.len(),
        0,
        "nothing stored for messages that cannot be sent"
    );
}

#[tokio::test]
async fn without_a_store_nothing_is_lost() {
    let sqs = FakeSqs::new();
    let fwd = Forwarder::new(
        sqs.clone(),
        settings(OffloadSettings::default()),
        EncodeRules::default(),
    );
    assert!(fwd.offloads());
    let out = fwd
        .send_all(
            vec![Message::new("b".repeat(4000), 0), Message::new("s", 1)],
            None,
        )
        .await;
    let f = out[0].outcome.failure().expect("failed");
    assert_eq!(
        (f.code.as_str(), f.retryable),
        ("OffloadNotConfigured", true)
    );
    assert!(out[1].outcome.is_sent());
}

#[test]
fn the_pointer_body_has_the_bucket_and_key() {
    let v: serde_json::Value = serde_json::from_str(&pointer_body("b-1", "k")).expect("JSON");
    assert_eq!(
        v,
        serde_json::json!([POINTER_CLASS, {"s3BucketName": "b-1", "s3Key": "k"}])
    );
}

#[tokio::test]
async fn the_sink_offloads_too() {
    let (sqs, s3) = (FakeSqs::new(), S3::new(Behaviour::Store));
    let sink = SqsSink::builder(sqs.clone())
        .max_record_size_in_bytes(LIMIT)
        .offload(OffloadSettings::default(), s3.clone())
        .build();
    let big = sink
        .send(Message::new("z".repeat(3 * LIMIT), ()))
        .await
        .expect("buffered");
    let small = sink.send(Message::new("s", ())).await.expect("buffered");
    sink.flush().await.expect("flushed");
    for receipt in [big, small] {
        let outcome = receipt.outcome().await.expect("an outcome");
        assert!(outcome.outcome.is_sent(), "{outcome:?}");
    }
    sink.close().await.expect("closed");
    let entries = all_entries(&sqs);
    assert_eq!(entries.len(), 2);
    let key = key_of(&entries[0].body);
    assert_eq!(s3.get(&key), Some("z".repeat(3 * LIMIT)));
    assert_eq!(entries[1].body, "s");
}
