//! Routing rules in both modes, against fake SQS targets: where each record
//! or line goes, shaped how, and how the function's answer counts a record
//! the rules skipped (done) or could not shape (failed).

use serde_json::{Value, json};
use sqs_forwarder::message::encode::{EncodeRules, Entry};
use sqs_forwarder::route::{Router, Routes};
use sqs_forwarder::test_support::FakeSqs;
use sqs_forwarder::{AttributeValue, Forwarder, Limits, SendSettings};

use super::SOURCE_KEYS;
use crate::event::{ObjectEvent, Via};
use crate::lines::{Chunking, LinesReport, forward_lines};
use crate::messages::Fifo;
use crate::settings::GroupBy;
use crate::testing::{accepted_by, forwarder, offline_s3};
use crate::{Handler, HandlerError, Settings};

const FAIR: &str = "https://sqs.us-east-1.amazonaws.com/123456789012/fair";
const FIFO: &str = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo";

/// Three fakes: the default target (standard), `fair` (standard) and
/// `fifo` (FIFO).
struct Fakes {
    default: FakeSqs,
    fair: FakeSqs,
    fifo: FakeSqs,
}

impl Fakes {
    fn new() -> Self {
        Fakes {
            default: FakeSqs::new(),
            fair: FakeSqs::new(),
            fifo: FakeSqs::new(),
        }
    }

    /// A router over the fakes for `rules` (a document without `targets`).
    fn router(&self, mut rules: Value) -> Router<FakeSqs> {
        rules["targets"] = json!({ "fair": FAIR, "fifo": FIFO });
        let routes = Routes::parse(&rules.to_string(), SOURCE_KEYS).expect("valid rules");
        // Targets in name order: fair, fifo.
        let others = vec![
            forwarder(self.fair.clone(), false),
            forwarder(self.fifo.clone(), true),
        ];
        Router::new(routes, forwarder(self.default.clone(), false), others).expect("router")
    }
}

fn bodies(fake: &FakeSqs) -> Vec<String> {
    accepted_by(fake).into_iter().map(|e| e.body).collect()
}

fn attribute<'a>(entry: &'a Entry, name: &str) -> Option<&'a AttributeValue> {
    entry
        .attributes
        .iter()
        .find(|a| a.name == name)
        .map(|a| &a.value)
}

/// An S3 notification with one record per `(bucket, key, event name, size)`.
fn notification(records: &[(&str, &str, &str, Option<i64>)]) -> Value {
    let records: Vec<Value> = records
        .iter()
        .enumerate()
        .map(|(i, (bucket, key, name, size))| {
            json!({
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": "us-east-1",
                "eventTime": "2026-11-29T10:00:00.000Z",
                "eventName": name,
                "userIdentity": { "principalId": "AWS:test" },
                "requestParameters": { "sourceIPAddress": "127.0.0.1" },
                "responseElements": { "x-amz-request-id": "TEST" },
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "configurationId": "test",
                    "bucket": { "name": bucket, "arn": format!("arn:aws:s3:::{bucket}") },
                    "object": { "key": key, "size": size, "sequencer": format!("0{i}") }
                }
            })
        })
        .collect();
    json!({ "Records": records })
}

#[tokio::test]
async fn notification_records_go_where_their_keys_and_fields_say() {
    let fakes = Fakes::new();
    let router = fakes.router(json!({
        "filter": [ { "key": "bucket", "prefix": "acme-" } ],
        "routes": [
            { "when": { "key": "event_name", "prefix": "ObjectRemoved:" }, "target": "fifo" },
            { "when": { "key": "object_key", "suffix": ".jpg" }, "target": "fair" },
            { "when": { "field": "/size", "equals": "7" }, "target": "fair" }
        ],
        "attributes": { "size": { "field": "/size", "type": "Number" } },
        "group_id": { "key": "bucket" }
    }));
    let h = Handler::routed(Settings::default(), router, offline_s3());
    let report = h
        .handle(
            notification(&[
                ("acme-a", "img/x.jpg", "ObjectCreated:Put", Some(1)),
                ("acme-a", "doc/y.txt", "ObjectRemoved:Delete", None),
                ("other", "img/z.jpg", "ObjectCreated:Put", Some(2)),
                ("acme-b", "doc/z.txt", "ObjectCreated:Put", Some(7)),
                ("acme-b", "doc/w.txt", "ObjectCreated:Put", Some(3)),
            ]),
            None,
        )
        .await
        .expect("forwarded");
    assert_eq!(report.records, 5);
    assert_eq!(report.messages_sent, 4);
    assert_eq!(
        (report.routes_filtered_out, report.routes_unmatched),
        (1, 0)
    );
    assert_eq!(report.messages_dropped, 0, "a skip is not an oversize drop");

    let key = |e: &Entry| -> String {
        let body: Value = serde_json::from_str(&e.body).expect("JSON body");
        body["key"].as_str().expect("key").to_owned()
    };
    let fair = accepted_by(&fakes.fair);
    assert_eq!(
        fair.iter().map(key).collect::<Vec<_>>(),
        ["img/x.jpg", "doc/z.txt"]
    );
    // A standard target: the rules' group id (a fair-queue tenant), no
    // deduplication id.
    assert_eq!(fair[0].group_id.as_deref(), Some("acme-a"));
    assert_eq!(fair[0].deduplication_id, None);
    assert_eq!(
        attribute(&fair[1], "size"),
        Some(&AttributeValue::Number("7".into()))
    );
    // The function's own attributes ride along.
    assert_eq!(
        attribute(&fair[0], "eventName"),
        Some(&AttributeValue::String("ObjectCreated:Put".into()))
    );

    let fifo = accepted_by(&fakes.fifo);
    assert_eq!(fifo.iter().map(key).collect::<Vec<_>>(), ["doc/y.txt"]);
    assert_eq!(fifo[0].group_id.as_deref(), Some("acme-a"));
    assert_eq!(
        fifo[0].deduplication_id.as_deref(),
        Some("acme-a/doc/y.txt/null/01/ObjectRemoved:Delete")
    );
    assert_eq!(attribute(&fifo[0], "size"), None, "no size: no attribute");

    let default = accepted_by(&fakes.default);
    assert_eq!(default.iter().map(key).collect::<Vec<_>>(), ["doc/w.txt"]);
    assert_eq!(default[0].deduplication_id, None);
}

#[tokio::test]
async fn a_dropped_record_is_done_and_a_shape_fault_fails_its_record_alone() {
    let fakes = Fakes::new();
    let router = fakes.router(json!({
        "routes": [ { "when": { "key": "bucket", "equals": "acme" }, "target": "default" } ],
        "unmatched": "drop",
        "body": "/size"
    }));
    let h = Handler::routed(Settings::default(), router, offline_s3());
    let err = h
        .handle(
            notification(&[
                ("acme", "a.txt", "ObjectCreated:Put", Some(11)),
                ("acme", "gone.txt", "ObjectRemoved:Delete", None),
                ("other", "b.txt", "ObjectCreated:Put", Some(12)),
            ]),
            None,
        )
        .await
        .expect_err("record 1 has no size to be its body");
    let HandlerError::NotForwarded { failures, report } = &err else {
        panic!("{err}");
    };
    assert_eq!(bodies(&fakes.default), ["11"]);
    assert_eq!(report.messages_sent, 1);
    assert_eq!(
        (report.routes_unmatched, report.routes_filtered_out),
        (1, 0)
    );
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].record, 1);
    assert!(!failures[0].retryable, "a content fault");
    assert_eq!(
        err.to_string(),
        "1 of 3 S3 records were not forwarded to SQS: record 1 ObjectRemoved:Delete s3://acme/gone.txt: ShapeFailed: body \"/size\": the record's data has no such field (not retryable)"
    );
}

fn object_event() -> ObjectEvent {
    ObjectEvent {
        via: Via::Notification,
        event_name: "ObjectCreated:Put".into(),
        event_time: None,
        region: None,
        bucket: "exports".into(),
        key: "spark/part-0000.json".into(),
        size: None,
        etag: Some("e1".into()),
        version_id: None,
        sequencer: Some("00F1".into()),
        detail_type: None,
        reason: None,
    }
}

async fn lines_through(router: &Router<FakeSqs>, text: &str, lines: usize) -> LinesReport {
    let fifo = Fifo {
        enabled: router.any_fifo(),
        group_by: GroupBy::Object,
    };
    let chunking = Chunking {
        lines,
        bytes: 1 << 20,
    };
    forward_lines(
        text.as_bytes(),
        &object_event(),
        router,
        fifo,
        chunking,
        None,
    )
    .await
}

/// spark-aws-messaging's JSON-lines contract: `value` the body,
/// `msg_attributes` the attributes, `group_id` the group.
fn spark_rules(routes: Value) -> Value {
    json!({
        "routes": routes,
        "body": "/value",
        "attributes_from": "/msg_attributes",
        "group_id": { "field": "/group_id" }
    })
}

#[tokio::test]
async fn lines_follow_the_json_lines_contract_and_a_bad_line_fails_alone() {
    let fakes = Fakes::new();
    let router = fakes.router(spark_rules(json!([
        { "when": { "field": "/kind", "equals": "order" }, "target": "fifo" },
        { "when": { "key": "object_key", "prefix": "spark/" }, "target": "fair" }
    ])));
    let text = [
        r#"{"kind":"order","value":"o1","msg_attributes":{"tenant":"t1","n":2},"group_id":"g1"}"#,
        r#"{"kind":"click","value":{"a":1},"msg_attributes":{"tenant":"t2"},"group_id":"g2"}"#,
        "not json",
        r#"{"kind":"click","msg_attributes":{"tenant":"t3"}}"#,
        r#"{"kind":"order","value":"o2","group_id":"g1"}"#,
    ]
    .join("\n");
    let report = lines_through(&router, &text, 2).await;
    assert_eq!((report.lines, report.sent, report.failed), (5, 3, 2));
    assert_eq!(report.stopped_after, None, "reading went on");
    assert!(!report.retryable && !report.complete());
    let faults: Vec<(u64, &str)> = report
        .failures
        .iter()
        .map(|(n, f)| (*n, f.code.as_str()))
        .collect();
    assert_eq!(faults, [(3, "ShapeFailed"), (4, "ShapeFailed")]);
    assert_eq!(
        report.failures[0].1.message,
        "body \"/value\": the record's data is not JSON"
    );

    let fifo = accepted_by(&fakes.fifo);
    assert_eq!(
        fifo.iter().map(|e| e.body.as_str()).collect::<Vec<_>>(),
        ["o1", "o2"]
    );
    assert_eq!(fifo[0].group_id.as_deref(), Some("g1"));
    assert_eq!(
        fifo[0].deduplication_id.as_deref(),
        Some("exports/spark/part-0000.json/null/00F1/1")
    );
    assert_eq!(
        attribute(&fifo[0], "tenant"),
        Some(&AttributeValue::String("t1".into()))
    );
    assert_eq!(
        attribute(&fifo[0], "n"),
        Some(&AttributeValue::Number("2".into()))
    );
    // The function's own attributes stay.
    assert_eq!(
        attribute(&fifo[0], "line"),
        Some(&AttributeValue::Number("1".into()))
    );

    let fair = accepted_by(&fakes.fair);
    assert_eq!(fair.len(), 1);
    assert_eq!(fair[0].body, r#"{"a":1}"#);
    assert_eq!(
        fair[0].group_id.as_deref(),
        Some("g2"),
        "a fair-queue tenant"
    );
    assert_eq!(fair[0].deduplication_id, None);
    assert!(bodies(&fakes.default).is_empty());
}

#[tokio::test]
async fn chunks_the_rules_skipped_or_faulted_whole_do_not_stop_reading() {
    let fakes = Fakes::new();
    let router = fakes.router(json!({
        "filter": [ { "field": "/keep", "exists": true } ],
        "body": "/value"
    }));
    // Chunks of two: both skipped, both faulted, then one to send.
    let text = "x\ny\n{\"keep\":1}\n{\"keep\":2}\n{\"keep\":3,\"value\":\"v\"}\n";
    let report = lines_through(&router, text, 2).await;
    assert_eq!(report.stopped_after, None);
    assert_eq!(report.skipped.filtered_out, 2);
    assert_eq!((report.sent, report.dropped, report.failed), (1, 0, 2));
    assert_eq!(bodies(&fakes.default), ["v"]);
}

#[tokio::test]
async fn unmatched_lines_are_dropped_and_counted() {
    let fakes = Fakes::new();
    let router = fakes.router(json!({
        "routes": [ { "when": { "field": "/n", "equals": "1" }, "target": "fair" } ],
        "unmatched": "drop"
    }));
    let report = lines_through(&router, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n", 10).await;
    assert!(report.complete());
    assert_eq!(report.skipped.unmatched, 2);
    assert_eq!((report.sent, report.dropped), (1, 0));
    assert_eq!(bodies(&fakes.fair), ["{\"n\":1}"]);
}

#[tokio::test]
async fn a_line_cut_by_the_reader_bypasses_the_rules_and_lines_fit_their_own_target() {
    let sized = |fake: &FakeSqs, max: usize| {
        let settings = SendSettings {
            limits: Limits {
                max_message_bytes: max,
                ..Limits::default()
            },
            ..SendSettings::default()
        };
        Forwarder::new(fake.clone(), settings, EncodeRules::default())
    };
    let fakes = Fakes::new();
    let doc = json!({
        "targets": { "fair": FAIR },
        "filter": [ { "field": "/keep", "exists": true } ],
        "routes": [ { "when": { "field": "/big", "exists": true }, "target": "fair" } ]
    });
    let routes = Routes::parse(&doc.to_string(), SOURCE_KEYS).expect("valid");
    let router = Router::new(
        routes,
        sized(&fakes.default, 1024),
        vec![sized(&fakes.fair, 8192)],
    )
    .expect("router");
    let big = format!(
        "{{\"keep\":1,\"big\":true,\"pad\":\"{}\"}}",
        "y".repeat(3000)
    );
    // Longer than any target takes: cut at 8193 bytes, so not JSON to the
    // rules, which would filter it out; it fails as too large instead.
    let huge = format!("{{\"keep\":1,\"pad\":\"{}\"}}", "x".repeat(10_000));
    let text = format!("{{\"keep\":1}}\n{big}\n{huge}\n");
    let report = lines_through(&router, &text, 10).await;
    assert_eq!(report.skipped.filtered_out, 0);
    assert_eq!((report.sent, report.failed), (2, 1));
    let (line, failure) = &report.failures[0];
    assert_eq!((*line, failure.code.as_str()), (3, "MessageTooLarge"));
    assert!(
        failure
            .message
            .starts_with(&format!("the line is {} bytes", huge.len())),
        "{failure}"
    );
    // The 3000-byte line reached its 8 KiB target whole.
    assert_eq!(bodies(&fakes.fair), [big]);
    assert_eq!(bodies(&fakes.default), ["{\"keep\":1}"]);
}
