//! The deadline answer under Lambda's CPU share at 128 MB. The built
//! function runs in a cgroup capped at 128/1,769 of a core (as Lambda gives
//! it CPU, and as the benchmark caps it) against an SQS endpoint too slow
//! for the event to go out (each `SendMessageBatch` answered 200 ms after it
//! came), and must answer before the invocation's deadline: sending stops
//! at the deadline less `DEADLINE_MARGIN_MS` (500 ms) and what is left is
//! reported for redelivery, however much is left.
//!
//! Two events of the shapes that once ran past the deadline (the work after
//! the margin point built a message for every user record left): KPL
//! records of 5,000 user records with a key each, and KPL records of 20,000
//! one-byte user records under one key. Scaled to this debug build, which
//! spends about ten times a release build's CPU per record; the release
//! build at full size (200,000 user records with a 3 s timeout, 4 ×
//! 149,000 with 10 s) is measured by the benchmark
//! (`bench/notes/2026-12-05-kinesis-deadline-at-128-mb.md`).
//!
//! **Needs root**: the cgroup (`scripts/test.sh` runs as root).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use kinesis_to_sqs::kpl;
use serde_json::{Value, json};
use sqs_forwarder::test_support::cpu_cap::CpuCap;
use sqs_forwarder::test_support::runtime_api::{FunctionProcess, RuntimeApi};
use sqs_forwarder::test_support::sample_event;
use sqs_forwarder::test_support::slow_sqs::SlowSqs;

const BINARY: &str = env!("CARGO_BIN_EXE_kinesis-to-sqs");

fn varint(mut n: usize, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7F) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A length-delimited protobuf field.
fn field(number: u8, bytes: &[u8], out: &mut Vec<u8>) {
    out.push((number << 3) | 2);
    varint(bytes.len(), out);
    out.extend_from_slice(bytes);
}

/// A KPL aggregate of `users` user records: (partition key index, data),
/// over the partition keys `keys`.
fn aggregate(keys: &[String], users: impl Iterator<Item = (usize, Vec<u8>)>) -> Vec<u8> {
    let mut protobuf = Vec::new();
    for key in keys {
        field(1, key.as_bytes(), &mut protobuf);
    }
    let mut record = Vec::new();
    for (key, data) in users {
        record.clear();
        record.push(1 << 3); // partition_key_index, a varint
        varint(key, &mut record);
        field(3, &data, &mut record);
        field(3, &record, &mut protobuf);
    }
    kpl::frame(&protobuf)
}

/// A Kinesis event of these records' data.
fn event(data: &[Vec<u8>]) -> Value {
    let records: Vec<Value> = data
        .iter()
        .enumerate()
        .map(|(i, data)| {
            let seq = format!("49590338271490256608559692538361571095921575989{i:09}");
            json!({
                "kinesis": {
                    "kinesisSchemaVersion": "1.0",
                    "partitionKey": format!("pk-{i}"),
                    "sequenceNumber": seq,
                    "data": base64::engine::general_purpose::STANDARD.encode(data),
                    "approximateArrivalTimestamp": 1_764_410_000.0
                },
                "eventSource": "aws:kinesis",
                "eventVersion": "1.0",
                "eventID": format!("shardId-000000000000:{seq}"),
                "eventName": "aws:kinesis:record",
                "invokeIdentityArn": "arn:aws:iam::123456789012:role/r",
                "awsRegion": "us-east-1",
                "eventSourceARN": "arn:aws:kinesis:us-east-1:123456789012:stream/s"
            })
        })
        .collect();
    json!({ "Records": records })
}

fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn kpl_events_answer_before_the_deadline_at_128_mb_of_cpu() {
    let sqs = SlowSqs::start(Duration::from_millis(200)).await;
    let api = RuntimeApi::start().await;
    // The group goes after the function (declared first, dropped last).
    let cap = CpuCap::lambda("kinesis-deadline", 128);
    let queue = sqs.queue_url();
    let function = FunctionProcess::spawn(
        BINARY,
        &api,
        &[
            ("QUEUE_URL", &queue),
            ("AWS_ENDPOINT_URL_SQS", sqs.url()),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ],
    );
    cap.add(function.id().expect("the function runs"));
    // Started and warm: a small batch, all sent.
    let warm = api.invoke(&sample_event("kinesis-small.json")).await;
    assert_eq!(warm.response(), &json!({"batchItemFailures": []}));

    let keyed: Vec<Vec<u8>> = (0..4)
        .map(|a| {
            let keys: Vec<String> = (0..5_000).map(|j| format!("k{a:02}-{j:05}")).collect();
            aggregate(&keys, (0..5_000).map(|j| (j, b"abcd".to_vec())))
        })
        .collect();
    let tiny: Vec<Vec<u8>> = (0..4)
        .map(|_| aggregate(&["k".to_owned()], (0..20_000).map(|_| (0, b"x".to_vec()))))
        .collect();
    for (name, records, timeout_ms) in [
        ("4 x 5,000 user records, a key each", keyed, 4_000),
        ("4 x 20,000 one-byte user records", tiny, 4_000),
    ] {
        let event = event(&records);
        let sent_before = sqs.entries();
        let deadline_ms = epoch_ms() + timeout_ms;
        let posted = api.invoke_until(&event, deadline_ms).await;
        let answered_ms = epoch_ms();
        assert!(
            answered_ms < deadline_ms,
            "{name}: answered {} ms after the deadline ({} periods held at the quota so far)",
            answered_ms - deadline_ms,
            cap.throttled_periods()
        );
        // Not all went out: the records left are reported, the lowest
        // (where Lambda resumes) first, the last record among them.
        let failures = posted.response()["batchItemFailures"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let reported: Vec<&str> = failures
            .iter()
            .map(|f| f["itemIdentifier"].as_str().unwrap_or_default())
            .collect();
        let last = event["Records"][records.len() - 1]["kinesis"]["sequenceNumber"]
            .as_str()
            .expect("a sequence number");
        assert!(
            reported.last() == Some(&last) && reported.is_sorted(),
            "{name}: {reported:?}"
        );
        let sent = sqs.entries() - sent_before;
        eprintln!(
            "{name}: answered {} ms before the deadline; {sent} messages sent, {} records reported",
            deadline_ms - answered_ms,
            reported.len()
        );
    }
    drop(function);
}
