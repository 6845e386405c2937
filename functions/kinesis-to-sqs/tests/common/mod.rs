//! Test helpers: Kinesis events built like Lambda's, and the workspace's
//! scriptable fake SQS (`sqs_forwarder::test_support`) set up for them.

#![allow(dead_code)]

use std::time::Duration;

use base64::Engine as _;
use kinesis_to_sqs::event::KinesisEvent;
use serde_json::{Value, json};
use sqs_forwarder::message::encode::EncodeRules;
pub use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Forwarder, RetryPolicy, SendSettings};

pub const ARN: &str = "arn:aws:kinesis:eu-west-1:123456789012:stream/orders";
pub const SHARD: &str = "shardId-000000000001";

/// The sequence number of the `i`-th record: 56 digits, rising with `i`.
pub fn seq(i: usize) -> String {
    format!("49590338271490256608559692538361571095921575989{i:09}")
}

/// One record as Lambda delivers it.
pub fn record(i: usize, partition_key: &str, data: &[u8]) -> Value {
    let seq = seq(i);
    json!({
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": partition_key,
            "sequenceNumber": seq,
            "data": base64::engine::general_purpose::STANDARD.encode(data),
            "approximateArrivalTimestamp": 1_764_410_000.5
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": format!("{SHARD}:{seq}"),
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": "arn:aws:iam::123456789012:role/kinesis-to-sqs-role",
        "awsRegion": "eu-west-1",
        "eventSourceARN": ARN
    })
}

/// An event of these records, read as the function reads it
/// (`kinesis_to_sqs::event::read`).
pub fn event(records: Vec<Value>) -> KinesisEvent {
    kinesis_to_sqs::event::read(&json!({ "Records": records }).to_string())
        .expect("a Kinesis event")
}

/// `n` text records `rec-<i>`, partition keys cycling through `keys`.
pub fn text_event(n: usize, keys: &[&str]) -> KinesisEvent {
    event(
        (0..n)
            .map(|i| record(i, keys[i % keys.len()], format!("rec-{i}").as_bytes()))
            .collect(),
    )
}

/// A sample event from the repository's `events/`.
pub fn sample(name: &str) -> KinesisEvent {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    kinesis_to_sqs::event::read(&text)
        .unwrap_or_else(|e| panic!("{path} is not a Kinesis event: {e}"))
}

/// The workspace's fake SQS, answering each entry with
/// `entry(call, body, attempt)` (attempt counts from 1 per body); every call
/// takes 5 ms (virtual time in paused tests).
pub fn scripted(entry: impl Fn(usize, &str, u32) -> Reply + Send + Sync + 'static) -> FakeSqs {
    FakeSqs::new()
        .delay(Duration::from_millis(5))
        .answer(move |a| Some(entry(a.call, a.body(), a.attempt)))
}

/// A fake SQS that accepts everything, 5 ms per call.
pub fn accepting() -> FakeSqs {
    scripted(|_, _, _| Reply::Accept)
}

/// The entries of each call, failed calls included, by call number.
pub fn entries_per_call(fake: &FakeSqs) -> Vec<usize> {
    fake.calls().iter().map(|c| c.entries.len()).collect()
}

/// Send settings for tests: quick retries, three attempts.
pub fn send_settings() -> SendSettings {
    SendSettings {
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(4),
        },
        ..SendSettings::default()
    }
}

pub fn forwarder(fake: &FakeSqs, fifo: bool) -> Forwarder<FakeSqs> {
    forwarder_with(fake, send_settings(), fifo)
}

pub fn forwarder_with(fake: &FakeSqs, settings: SendSettings, fifo: bool) -> Forwarder<FakeSqs> {
    let rules = EncodeRules {
        fifo,
        content_based_deduplication: fifo.then_some(false),
        ..EncodeRules::default()
    };
    Forwarder::new(fake.clone(), settings, rules)
}
