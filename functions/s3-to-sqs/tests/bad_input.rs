//! Bad configuration and bad events for s3-to-sqs: every variable's bad
//! value names the variable, the value and what is allowed; a malformed
//! event fails before anything is sent, naming the record and the field at
//! fault; a line longer than the queue takes is bounded while it is read.

use std::time::Duration;

use s3_to_sqs::lines::LineReader;
use s3_to_sqs::{Handler, HandlerError, Settings, VARIABLES};
use serde_json::{Value, json};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::test_support::FakeSqs;
use sqs_forwarder::test_support::{
    BadValue, assert_bad_values_are_named, assert_every_variable_has_a_case,
};
use sqs_forwarder::{Forwarder, SendSettings};
use tokio::io::AsyncReadExt;

/// (variable, bad value, a word the `allowed` text must contain)
const BAD: &[(&str, &str, &str)] = &[
    ("MODE", "objects", "lines"),
    (
        "EVENT_NAMES",
        "ObjectCreated:Put,not a name!",
        "ObjectCreated",
    ),
    ("GROUP_BY", "key", "bucket"),
    ("LINES_PER_SEND", "0", "1 to 100000"),
    ("LINES_BYTES_PER_SEND", "1048575", "1048576"),
    ("S3_FORCE_PATH_STYLE", "yes", "true"),
    ("CONTINUATION", "yes", "true"),
    ("CONTINUATION_BUCKETS", "Not_A_Bucket", "bucket names"),
    ("CONTINUATION_MARGIN_MS", "10", "1000 to 840000"),
    ("CONTINUATION_AFTER_LINES", "-1", "0 to"),
];

/// The table as the shared checks take it.
fn cases() -> Vec<BadValue<'static>> {
    BAD.iter()
        .map(|&(variable, value, allowed)| BadValue::new(variable, value, allowed))
        .collect()
}

#[test]
fn every_variable_has_a_bad_value_case() {
    assert_every_variable_has_a_case(VARIABLES, &cases());
}

#[test]
fn bad_values_name_the_variable_the_value_and_what_is_allowed() {
    assert_bad_values_are_named(&cases(), Settings::from_env);
}

/// Accepts every entry and counts them.
fn handler() -> Handler<FakeSqs> {
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::Config::builder()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .region(aws_sdk_s3::config::Region::new("us-east-1"))
            .build(),
    );
    let forwarder = Forwarder::new(
        FakeSqs::new(),
        SendSettings::default(),
        EncodeRules::default(),
    );
    Handler::new(Settings::default(), forwarder, s3)
}

fn sample(name: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("sample")).expect("json")
}

async fn refused(event: Value) -> String {
    let h = handler();
    let e = h.handle(event, None).await.expect_err("refused");
    assert!(matches!(e, HandlerError::Event(_)), "{e:?}");
    assert_eq!(h.forwarder().transport().sent(), 0);
    e.to_string()
}

#[tokio::test]
async fn malformed_events_name_the_record_and_the_field() {
    let good = sample("s3-multi-record.json");
    let mut v = good.clone();
    v["Records"][2]["s3"]["object"]["size"] = json!("big");
    let e = refused(v).await;
    assert!(e.contains("Records[2].s3.object.size"), "{e}");

    let mut v = good.clone();
    v["Records"][1]["eventTime"] = json!(12);
    let e = refused(v).await;
    assert!(e.contains("Records[1].eventTime"), "{e}");

    let mut v = good.clone();
    v["Records"][0]["s3"] = json!("s3://bucket/key");
    let e = refused(v).await;
    assert!(e.contains("Records[0].s3"), "{e}");

    let mut v = good.clone();
    v["Records"][1]["s3"]["bucket"]
        .as_object_mut()
        .expect("bucket")
        .remove("name");
    assert_eq!(
        refused(v).await,
        "malformed S3 event: record 1 has no s3.bucket.name"
    );

    let mut v = good;
    v["Records"][0]["eventVersion"] = json!(2.1);
    let e = refused(v).await;
    assert!(e.contains("record 0"), "{e}");

    let e = refused(json!({"Records": []})).await;
    assert!(e.contains("without records"), "{e}");
    let e = refused(json!({"Records": "none"})).await;
    assert!(e.contains("Records"), "{e}");
    let e = refused(json!({"records": []})).await;
    assert!(e.contains("\"Records\""), "{e}");
    let e = refused(json!(null)).await;
    assert!(e.contains("expected a JSON object, got null"), "{e}");
}

#[tokio::test]
async fn malformed_eventbridge_events_name_the_field() {
    let good = sample("s3-eventbridge-object-created.json");
    assert!(handler().handle(good.clone(), None).await.is_ok());
    let mut v = good.clone();
    v["detail"]["object"]["size"] = json!([1]);
    let e = refused(v).await;
    assert!(e.contains("detail.object.size"), "{e}");
    let mut v = good;
    v["detail"]["bucket"]["name"] = json!("");
    let e = refused(v).await;
    assert!(e.contains("empty bucket name"), "{e}");
}

#[tokio::test]
async fn a_huge_line_is_bounded_while_it_is_read() {
    // 64 MiB without a line ending, read through a 64 KiB buffer: the reader
    // keeps `cap` bytes of it and counts the rest, never holding it whole.
    const TOTAL: u64 = 64 * 1024 * 1024;
    let cap = 1024 * 1024 + 1;
    let source =
        tokio::io::BufReader::with_capacity(64 * 1024, tokio::io::repeat(b'x').take(TOTAL));
    let mut reader = LineReader::new(source, cap);
    let started = std::time::Instant::now();
    let line = reader.next_line().await.expect("read").expect("one line");
    assert_eq!(line.len, TOTAL, "the real length is kept");
    assert_eq!(line.bytes.len(), cap, "only the cap is kept");
    assert!(
        line.bytes.capacity() <= 2 * cap,
        "held {} bytes for a cap of {cap}",
        line.bytes.capacity()
    );
    assert!(reader.next_line().await.expect("read").is_none());
    // Not a timing assertion: a bound on a runaway loop.
    assert!(started.elapsed() < Duration::from_secs(120));
}
