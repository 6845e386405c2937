//! The handler against a fake SQS transport, and the README against the code.

use std::collections::HashSet;
use std::sync::Mutex;

use async_compression::tokio::bufread::GzipEncoder;
use serde_json::{Value, json};
use sqs_forwarder::call::transport::BoxFuture;
use sqs_forwarder::message::encode::{EncodeRules, Entry};
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Forwarder, Limits, OversizePolicy, SendSettings, Transport};
use tokio::io::{AsyncBufRead, AsyncReadExt};

use crate::event::{ObjectEvent, Via};
use crate::lines::{Chunking, LinesReport, forward_lines};
use crate::messages::Fifo;
use crate::object::decoded;
use crate::settings::GroupBy;
use crate::{Handler, HandlerError, Settings};

/// The workspace's fake SQS: accepts every entry except those `fail` picks
/// (code, sender fault), and keeps what it accepted.
fn failing(
    fail: impl Fn(&Entry) -> Option<(&'static str, bool)> + Send + Sync + 'static,
) -> FakeSqs {
    FakeSqs::new().answer(move |a| {
        fail(a.entry).map(|(code, sender_fault)| {
            Reply::fail(code, sender_fault).with_message(format!("fake {code}"))
        })
    })
}

/// The entries the fake accepted.
fn accepted_by(fake: &FakeSqs) -> Vec<Entry> {
    fake.accepted().iter().map(|s| (*s.entry).clone()).collect()
}

fn forwarder(fake: FakeSqs, fifo: bool) -> Forwarder<FakeSqs> {
    let settings = SendSettings {
        retry: sqs_forwarder::RetryPolicy {
            max_attempts: 2,
            base_delay: std::time::Duration::from_millis(1),
            max_delay: std::time::Duration::from_millis(2),
        },
        ..SendSettings::default()
    };
    Forwarder::new(
        fake,
        settings,
        EncodeRules {
            fifo,
            content_based_deduplication: fifo.then_some(false),
            ..EncodeRules::default()
        },
    )
}

fn offline_s3() -> aws_sdk_s3::Client {
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

fn handler(settings: Settings, fake: FakeSqs, fifo: bool) -> Handler<FakeSqs> {
    Handler::new(settings, forwarder(fake, fifo), offline_s3())
}

fn sample(name: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("sample")).expect("json")
}

fn accepted(h: &Handler<FakeSqs>) -> Vec<Entry> {
    accepted_by(h.forwarder().transport())
}

fn body(e: &Entry) -> Value {
    serde_json::from_str(&e.body).expect("json body")
}

#[tokio::test]
async fn multi_record_notification_is_one_message_per_record_in_order() {
    let h = handler(Settings::default(), FakeSqs::new(), false);
    let report = h
        .handle(sample("s3-multi-record.json"), None)
        .await
        .expect("forwarded");
    assert_eq!(report.records, 3);
    assert_eq!(report.messages_sent, 3);
    let got = accepted(&h);
    let keys: Vec<Value> = got.iter().map(|e| body(e)["key"].clone()).collect();
    assert_eq!(
        keys,
        [
            json!("images/2026/cover.png"),
            json!("images/2026/holiday photo (1).jpg"),
            json!("images/2025/old-banner.gif")
        ]
    );
    assert_eq!(body(&got[2])["eventName"], "ObjectRemoved:Delete");
    assert!(body(&got[2]).get("size").is_none());
    assert_eq!(body(&got[1])["size"], 26_214_400);
}

#[tokio::test]
async fn test_event_forwards_nothing() {
    let h = handler(Settings::default(), FakeSqs::new(), false);
    let report = h
        .handle(sample("s3-test-event.json"), None)
        .await
        .expect("acknowledged");
    assert!(report.test_event);
    assert_eq!(report.messages_sent, 0);
    assert!(accepted(&h).is_empty());
}

#[tokio::test]
async fn event_names_filter() {
    let settings = Settings {
        event_filter: crate::EventFilter::parse("EVENT_NAMES", "ObjectCreated:*").expect("valid"),
        ..Settings::default()
    };
    let h = handler(settings, FakeSqs::new(), false);
    let report = h
        .handle(sample("s3-multi-record.json"), None)
        .await
        .expect("forwarded");
    assert_eq!((report.messages_sent, report.filtered_out), (2, 1));
    let names: Vec<Value> = accepted(&h)
        .iter()
        .map(|e| body(e)["eventName"].clone())
        .collect();
    assert_eq!(
        names,
        [
            json!("ObjectCreated:Put"),
            json!("ObjectCreated:CompleteMultipartUpload")
        ]
    );
}

#[tokio::test]
async fn a_record_not_sent_fails_the_invocation_naming_it() {
    let fake = failing(|e: &Entry| {
        e.body
            .contains("holiday photo")
            .then_some(("InternalError", false))
    });
    let h = handler(Settings::default(), fake, false);
    let err = h
        .handle(sample("s3-multi-record.json"), None)
        .await
        .expect_err("one record failed");
    let HandlerError::NotForwarded { failures, report } = &err else {
        panic!("{err}");
    };
    assert_eq!(report.messages_sent, 2);
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].record, 1);
    assert!(failures[0].retryable);
    let text = err.to_string();
    assert!(
        text.starts_with(
            "1 of 3 S3 records were not forwarded to SQS: record 1 ObjectCreated:CompleteMultipartUpload s3://acme-media/images/2026/holiday photo (1).jpg: InternalError"
        ),
        "{text}"
    );
    let diagnostic: lambda_runtime::Diagnostic = err.into();
    assert_eq!(diagnostic.error_type, "S3ToSqs.NotForwarded");
}

#[tokio::test]
async fn bad_events_are_errors_before_anything_is_sent() {
    let h = handler(Settings::default(), FakeSqs::new(), false);
    let mut v = sample("s3-multi-record.json");
    v["Records"][2]["eventVersion"] = json!("1.0");
    let err = h.handle(v, None).await.expect_err("unknown version");
    assert!(
        err.to_string()
            .contains("unknown S3 event version \"1.0\" in record 2"),
        "{err}"
    );
    assert!(accepted(&h).is_empty(), "no record of a bad event is sent");
    let diagnostic: lambda_runtime::Diagnostic = err.into();
    assert_eq!(diagnostic.error_type, "S3ToSqs.InvalidEvent");
    let err = h.handle(json!("hello"), None).await.expect_err("malformed");
    assert_eq!(
        err.to_string(),
        "malformed S3 event: expected a JSON object, got a string"
    );
}

#[tokio::test]
async fn fifo_ids_on_fifo_targets() {
    let h = handler(Settings::default(), FakeSqs::new(), true);
    h.handle(sample("s3-key-unicode.json"), None)
        .await
        .expect("forwarded");
    let got = accepted(&h);
    let group = got[0].group_id.as_deref().expect("group id");
    // Non-ASCII key: a hashed, stable id.
    assert!(group.starts_with("sha256:"), "{group}");
    let dedup = got[0].deduplication_id.clone().expect("dedup id");
    h.handle(sample("s3-key-unicode.json"), None)
        .await
        .expect("forwarded again");
    assert_eq!(
        accepted(&h)[1].deduplication_id.as_deref(),
        Some(dedup.as_str()),
        "a retry carries the same deduplication id"
    );
}

#[tokio::test]
async fn lines_mode_skips_events_without_an_object() {
    let settings = Settings {
        mode: crate::Mode::Lines,
        ..Settings::default()
    };
    let h = handler(settings, FakeSqs::new(), false);
    let report = h
        .handle(sample("s3-delete.json"), None)
        .await
        .expect("nothing to read");
    assert_eq!((report.not_created, report.messages_sent), (1, 0));
}

fn object_event() -> ObjectEvent {
    ObjectEvent {
        via: Via::Notification,
        event_name: "ObjectCreated:Put".into(),
        event_time: None,
        region: None,
        bucket: "logs".into(),
        key: "app/2026-11-29.log".into(),
        size: None,
        etag: Some("e1".into()),
        version_id: None,
        sequencer: Some("00F1".into()),
        detail_type: None,
        reason: None,
    }
}

/// `forward_lines` of the test object's `reader` into a standard queue,
/// without a deadline, in chunks of at most `(lines, bytes)`.
async fn lines_into<R, T>(
    reader: R,
    fwd: &Forwarder<T>,
    (lines, bytes): (usize, usize),
) -> LinesReport
where
    R: AsyncBufRead + Unpin,
    T: Transport,
{
    forward_lines(
        reader,
        &object_event(),
        fwd,
        STANDARD,
        Chunking { lines, bytes },
        None,
    )
    .await
}

const STANDARD: Fifo = Fifo {
    enabled: false,
    group_by: GroupBy::Object,
};

#[tokio::test]
async fn every_line_once_in_bounded_chunks() {
    let mut text = String::new();
    for i in 1..=12_345 {
        if i % 1000 == 0 {
            text.push_str("\r\n"); // blank line, CRLF
        } else {
            text.push_str(&format!("{{\"n\":{i}}}\n"));
        }
    }
    let fwd = forwarder(FakeSqs::new(), false);
    let report = lines_into(text.as_bytes(), &fwd, (1000, 8 << 20)).await;
    assert_eq!(report.lines, 12_345);
    assert_eq!(report.blank, 12);
    assert_eq!(report.sent, 12_333);
    assert!(report.complete());
    let got = accepted_by(fwd.transport());
    assert_eq!(got.len(), 12_333);
    let bodies: HashSet<&str> = got.iter().map(|e| e.body.as_str()).collect();
    assert_eq!(bodies.len(), 12_333, "no line twice");
    for i in (1..=12_345).filter(|i| i % 1000 != 0) {
        assert!(
            bodies.contains(format!("{{\"n\":{i}}}").as_str()),
            "line {i}"
        );
    }
    let line_attr = got[0]
        .attributes
        .iter()
        .find(|a| a.name == "line")
        .expect("line attribute");
    assert_eq!(
        line_attr.value,
        sqs_forwarder::AttributeValue::Number("1".into())
    );
}

#[tokio::test]
async fn gzip_bodies_are_decompressed_including_multiple_members() {
    let mut compressed = Vec::new();
    for part in ["alpha\nbeta\n", "gamma\n"] {
        let mut enc = GzipEncoder::new(part.as_bytes());
        enc.read_to_end(&mut compressed).await.expect("gzip");
    }
    let body = decoded(std::io::Cursor::new(compressed), true);
    let fwd = forwarder(FakeSqs::new(), false);
    let report = lines_into(body, &fwd, (10, 1 << 20)).await;
    assert_eq!(report.sent, 3);
    let bodies: Vec<String> = accepted_by(fwd.transport())
        .iter()
        .map(|e| e.body.clone())
        .collect();
    assert_eq!(bodies, ["alpha", "beta", "gamma"]);

    let not_gzip = decoded(std::io::Cursor::new(b"plain text\n".to_vec()), true);
    let fwd = forwarder(FakeSqs::new(), false);
    let report = lines_into(not_gzip, &fwd, (10, 1 << 20)).await;
    let e = report.read_error.expect("not gzip");
    assert_eq!((e.code, e.retryable), ("InvalidGzip", false));
}

#[tokio::test]
async fn oversize_lines_follow_the_policy() {
    let mut text = "short line\n".to_string();
    text.push_str(&"x".repeat(5000));
    text.push_str("\nlast line\n");
    let small = |oversize| {
        let settings = SendSettings {
            limits: Limits {
                max_message_bytes: 1024,
                ..Limits::default()
            },
            oversize,
            ..SendSettings::default()
        };
        Forwarder::new(FakeSqs::new(), settings, EncodeRules::default())
    };
    let chunking = (100, 1 << 20);

    let fwd = small(OversizePolicy::Fail);
    let report = lines_into(text.as_bytes(), &fwd, chunking).await;
    assert_eq!((report.sent, report.failed), (2, 1));
    let (line, failure) = &report.failures[0];
    assert_eq!(*line, 2);
    assert_eq!(failure.code, "MessageTooLarge");
    assert!(
        failure.message.starts_with("the line is 5000 bytes"),
        "{failure}"
    );
    assert!(!report.retryable);

    let fwd = small(OversizePolicy::Drop);
    let report = lines_into(text.as_bytes(), &fwd, chunking).await;
    assert_eq!((report.sent, report.dropped, report.failed), (2, 1, 0));
    assert!(report.complete());
}

/// Stores payloads in memory, for `OVERSIZE_POLICY=offload`.
#[derive(Debug, Default, Clone)]
struct Store(std::sync::Arc<Mutex<Vec<String>>>);

impl sqs_forwarder::PayloadStore for Store {
    fn bucket(&self) -> &str {
        "payloads"
    }
    fn put<'a>(
        &'a self,
        _key: &'a str,
        payload: String,
    ) -> BoxFuture<'a, Result<(), sqs_forwarder::Failure>> {
        self.0.lock().expect("lock").push(payload);
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn under_offload_lines_above_the_threshold_go_to_s3_but_cut_lines_never() {
    let mut text = "short line\n".to_string();
    text.push_str(&"y".repeat(900));
    text.push('\n');
    text.push_str(&"x".repeat(5000));
    text.push_str("\nlast line\n");
    let store = Store::default();
    let settings = SendSettings {
        limits: Limits {
            max_message_bytes: 1024,
            ..Limits::default()
        },
        oversize: OversizePolicy::Offload,
        offload: sqs_forwarder::OffloadSettings {
            threshold: Some(512),
            ..Default::default()
        },
        ..SendSettings::default()
    };
    let fwd = Forwarder::new(FakeSqs::new(), settings, EncodeRules::default())
        .with_payload_store(store.clone());
    let report = lines_into(text.as_bytes(), &fwd, (100, 1 << 20)).await;
    assert_eq!((report.sent, report.failed), (3, 1));
    // The 900-byte line is in S3 whole; the 5000-byte one, cut at 1025
    // bytes by the reader, is nowhere.
    assert_eq!(*store.0.lock().expect("lock"), vec!["y".repeat(900)]);
    let (line, failure) = &report.failures[0];
    assert_eq!((*line, failure.code.as_str()), (3, "MessageTooLarge"));
    assert!(!failure.retryable);
}

#[tokio::test]
async fn a_retryable_failure_stops_reading() {
    let text: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    let fake = failing(|e: &Entry| (e.body == "line 15").then_some(("ServiceUnavailable", false)));
    let fwd = forwarder(fake, false);
    let report = lines_into(text.as_bytes(), &fwd, (10, 1 << 20)).await;
    assert!(report.retryable);
    assert_eq!(report.failed, 1);
    assert_eq!(report.failures[0].0, 15);
    assert_eq!(
        report.stopped_after,
        Some(20),
        "the chunk of lines 11..=20 failed"
    );
    assert_eq!(report.sent, 19);
}
