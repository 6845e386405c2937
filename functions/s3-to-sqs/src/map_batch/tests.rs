//! Distributed Map batches through the handler, against fake SQS targets:
//! the sample batches in `events/`, FIFO ids, routing rules as lines mode
//! applies them, and the answer the map counts.

use serde_json::{Value, json};
use sqs_forwarder::AttributeValue;
use sqs_forwarder::message::encode::Entry;
use sqs_forwarder::route::{Router, Routes};
use sqs_forwarder::test_support::FakeSqs;

use crate::event::parse_json;
use crate::routing::SOURCE_KEYS;
use crate::settings::Mode;
use crate::testing::{accepted_by, failing, forwarder, offline_s3};
use crate::{Handler, HandlerError, Report, Settings};

fn sample(name: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("sample")).expect("json")
}

/// A sample as its text: read as the function reads an invocation's body,
/// keys in their order (a `serde_json::Value` would sort them).
fn sample_text(name: &str) -> String {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).expect("sample")
}

async fn handle_sample(h: &Handler<FakeSqs>, name: &str) -> Result<Report, HandlerError> {
    h.handle_read(parse_json(&sample_text(name)), None).await
}

fn handler(fake: FakeSqs, fifo: bool) -> Handler<FakeSqs> {
    Handler::new(Settings::default(), forwarder(fake, fifo), offline_s3())
}

fn attribute<'a>(entry: &'a Entry, name: &str) -> Option<&'a AttributeValue> {
    entry
        .attributes
        .iter()
        .find(|a| a.name == name)
        .map(|a| &a.value)
}

fn names(entry: &Entry) -> Vec<&str> {
    entry.attributes.iter().map(|a| a.name.as_ref()).collect()
}

const KEY: &str = "exports/2026/12/05/orders-0001.jsonl";

#[tokio::test]
async fn each_item_is_one_message_with_its_index() {
    let fake = FakeSqs::new();
    let h = handler(fake.clone(), false);
    let report = handle_sample(&h, "sfn-map-batch-jsonl.json")
        .await
        .expect("forwarded");
    assert_eq!((report.records, report.messages_sent), (3, 3));
    let object = report.map_batch.as_ref().expect("the batch's object");
    assert_eq!(
        (object.bucket.as_str(), object.key.as_str()),
        ("acme-exports", KEY)
    );
    assert_eq!(
        (object.first_index, object.last_index),
        (Some(40), Some(42))
    );
    let answer = serde_json::to_value(&report).expect("json");
    assert_eq!(answer["mapBatch"]["firstIndex"], 40);
    assert_eq!(answer["messagesSent"], 3);

    let got = accepted_by(&fake);
    let bodies: Vec<&str> = got.iter().map(|e| e.body.as_str()).collect();
    assert_eq!(
        bodies,
        [
            r#"{"kind":"order","id":"o-1041","value":{"sku":"A-7","qty":2},"group_id":"tenant-3"}"#,
            r#"{"kind":"refund","id":"r-77","value":{"order":"o-0990"},"group_id":"tenant-1"}"#,
            r#"{"kind":"order","id":"o-1042","value":{"sku":"B-1","qty":1,"note":"gift wrap, \"red\""},"group_id":"tenant-3"}"#,
        ]
    );
    assert_eq!(names(&got[0]), ["bucket", "key", "item"]);
    assert_eq!(
        attribute(&got[0], "bucket"),
        Some(&AttributeValue::String("acme-exports".into()))
    );
    assert_eq!(
        attribute(&got[0], "key"),
        Some(&AttributeValue::String(KEY.into()))
    );
    assert_eq!(
        attribute(&got[2], "item"),
        Some(&AttributeValue::Number("42".into()))
    );
    assert_eq!(got[0].group_id, None, "no FIFO ids on a standard queue");
    assert_eq!(got[0].deduplication_id, None);
}

#[tokio::test]
async fn csv_rows_keep_their_header_order() {
    let fake = FakeSqs::new();
    // The map source whatever MODE says.
    let settings = Settings {
        mode: Mode::Lines,
        ..Settings::default()
    };
    let h = Handler::new(settings, forwarder(fake.clone(), false), offline_s3());
    let report = handle_sample(&h, "sfn-map-batch-csv.json")
        .await
        .expect("forwarded");
    assert_eq!(report.messages_sent, 3);
    let got = accepted_by(&fake);
    assert_eq!(
        got[0].body,
        r#"{"verdict":"true","statement_date":"6/11/2008","statement_source":"speech"}"#
    );
    assert_eq!(
        attribute(&got[0], "item"),
        Some(&AttributeValue::Number("0".into()))
    );
}

#[tokio::test]
async fn fifo_ids_come_from_the_object_and_the_index() {
    let fake = FakeSqs::new();
    let h = handler(fake.clone(), true);
    h.handle(sample("sfn-map-batch-jsonl.json"), None)
        .await
        .expect("forwarded");
    // The same batch again, as the map's Retry sends it.
    h.handle(sample("sfn-map-batch-jsonl.json"), None)
        .await
        .expect("forwarded");
    let got = accepted_by(&fake);
    assert_eq!(got.len(), 6);
    assert_eq!(
        got[0].group_id.as_deref(),
        Some("acme-exports/exports/2026/12/05/orders-0001.jsonl")
    );
    assert_eq!(
        got[0].deduplication_id.as_deref(),
        Some(
            "acme-exports/exports/2026/12/05/orders-0001.jsonl/3HL4kqtJlcpXroDTDmjVBH40Nrjfkd/d41d8cd98f00b204e9800998ecf8427e/item-40"
        )
    );
    for i in 0..3 {
        assert_eq!(got[i].deduplication_id, got[i + 3].deduplication_id);
    }
    assert_ne!(got[0].deduplication_id, got[1].deduplication_id);
    // Another upload of the key (another ETag): other ids.
    let mut other = sample("sfn-map-batch-jsonl.json");
    other["BatchInput"]["etag"] = json!("0123");
    h.handle(other, None).await.expect("forwarded");
    let again = accepted_by(&fake);
    assert_ne!(again[6].deduplication_id, got[0].deduplication_id);
}

#[tokio::test]
async fn items_are_routed_and_shaped_as_lines_are() {
    let default = FakeSqs::new();
    let orders = FakeSqs::new();
    let rules = json!({
        "targets": { "orders": "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo" },
        "filter": [ { "key": "object_key", "suffix": ".jsonl" } ],
        "routes": [ { "when": { "field": "/kind", "equals": "order" }, "target": "orders" },
                    { "when": { "key": "event_name", "equals": "DistributedMap" }, "target": "default" } ],
        "body": "/value",
        "group_id": { "field": "/group_id" }
    });
    let routes = Routes::parse(&rules.to_string(), SOURCE_KEYS).expect("valid rules");
    let router = Router::new(
        routes,
        forwarder(default.clone(), false),
        vec![forwarder(orders.clone(), true)],
    )
    .expect("router");
    let h = Handler::routed(Settings::default(), router, offline_s3());
    let report = handle_sample(&h, "sfn-map-batch-jsonl.json")
        .await
        .expect("forwarded");
    assert_eq!(report.messages_sent, 3);
    let to_orders = accepted_by(&orders);
    let bodies: Vec<&str> = to_orders.iter().map(|e| e.body.as_str()).collect();
    // The body the rules pick out, written as the shaper writes it in
    // lines mode too (its JSON, keys sorted).
    assert_eq!(
        bodies,
        [
            r#"{"qty":2,"sku":"A-7"}"#,
            r#"{"note":"gift wrap, \"red\"","qty":1,"sku":"B-1"}"#
        ]
    );
    assert_eq!(to_orders[0].group_id.as_deref(), Some("tenant-3"));
    assert!(
        to_orders[0]
            .deduplication_id
            .as_deref()
            .is_some_and(|id| id.ends_with("/item-40"))
    );
    let rest = accepted_by(&default);
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].body, r#"{"order":"o-0990"}"#);
    assert_eq!(
        rest[0].deduplication_id, None,
        "standard target: no dedup id"
    );

    // An object the filter leaves out: done, nothing sent.
    let mut csv = sample("sfn-map-batch-jsonl.json");
    csv["BatchInput"]["key"] = json!("exports/orders.csv");
    let report = h.handle(csv, None).await.expect("done");
    assert_eq!((report.messages_sent, report.routes_filtered_out), (0, 3));

    // An item the rules cannot shape fails alone, not retryable.
    let mut bad = sample("sfn-map-batch-jsonl.json");
    bad["Items"][1]["value"] = json!({ "kind": "refund" });
    let err = h.handle(bad, None).await.expect_err("a shape fault");
    let diagnostic = lambda_runtime::Diagnostic::from(err);
    assert_eq!(diagnostic.error_type, "S3ToSqs.NotForwardable");
    assert!(
        diagnostic.error_message.starts_with(&format!(
            "1 of 3 items of s3://acme-exports/{KEY} (a Distributed Map batch) were not forwarded to SQS: item 41: ShapeFailed"
        )),
        "{}",
        diagnostic.error_message
    );
}

#[tokio::test]
async fn a_batch_with_items_that_did_not_reach_sqs_fails_naming_them() {
    // Retryable: the queue is unavailable for one item.
    let fake = failing(|e| {
        e.body
            .contains("r-77")
            .then_some(("ServiceUnavailable", false))
    });
    let h = handler(fake.clone(), false);
    let err = h
        .handle(sample("sfn-map-batch-jsonl.json"), None)
        .await
        .expect_err("one item failed");
    let HandlerError::Items(items) = &err else {
        panic!("expected the items' error, got {err:?}");
    };
    assert_eq!((items.failed, items.report.messages_sent), (1, 2));
    assert_eq!(items.failures[0].index, 41);
    assert!(items.retryable);
    let diagnostic = lambda_runtime::Diagnostic::from(err);
    assert_eq!(diagnostic.error_type, "S3ToSqs.NotForwarded");
    assert!(
        diagnostic
            .error_message
            .contains("item 41: ServiceUnavailable"),
        "{}",
        diagnostic.error_message
    );
    assert_eq!(accepted_by(&fake).len(), 2, "the other items got through");

    // Permanent: SQS refuses the message.
    let fake = failing(|_| Some(("InvalidMessageContents", true)));
    let h = handler(fake, false);
    let err = h
        .handle(sample("sfn-map-batch-csv.json"), None)
        .await
        .expect_err("every item failed");
    let diagnostic = lambda_runtime::Diagnostic::from(err);
    assert_eq!(diagnostic.error_type, "S3ToSqs.NotForwardable");
    assert!(
        diagnostic.error_message.starts_with(
            "3 of 3 items of s3://amzn-s3-demo-bucket/csvDataset/ratings.csv (a Distributed Map batch)"
        ),
        "{}",
        diagnostic.error_message
    );
}

#[tokio::test]
async fn a_malformed_batch_is_an_invalid_event() {
    let h = handler(FakeSqs::new(), false);
    let mut bad = sample("sfn-map-batch-jsonl.json");
    bad["Items"][2] = json!({ "kind": "order" });
    let err = h.handle(bad, None).await.expect_err("malformed");
    let diagnostic = lambda_runtime::Diagnostic::from(err);
    assert_eq!(diagnostic.error_type, "S3ToSqs.InvalidEvent");
    assert!(
        diagnostic
            .error_message
            .starts_with("malformed S3 event: Distributed Map batch: Items[2]: expected"),
        "{}",
        diagnostic.error_message
    );
    // A deadline already past: every item fails, retryable.
    let h = handler(FakeSqs::new(), false);
    let past = tokio::time::Instant::now() - std::time::Duration::from_secs(1);
    let err = h
        .handle(sample("sfn-map-batch-csv.json"), Some(past))
        .await
        .expect_err("deadline");
    let HandlerError::Items(items) = &err else {
        panic!("expected the items' error, got {err:?}");
    };
    assert!(items.retryable && items.failed == 3, "{err}");
}
