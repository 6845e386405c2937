//! The handler against a fake SQS transport.

use serde_json::{Value, json};
use sqs_forwarder::message::encode::Entry;
use sqs_forwarder::test_support::FakeSqs;

use crate::testing::{accepted_by, failing, forwarder, offline_s3};
use crate::{Handler, HandlerError, Settings};

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
