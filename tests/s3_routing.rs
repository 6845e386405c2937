//! End-to-end: s3-to-sqs with routing rules (`ROUTES`) against the local
//! endpoint (moto: SQS and S3). Three targets, a standard default queue, a
//! FIFO queue and a standard queue with fair-queue group ids. Notification
//! mode: records routed by event name, bucket, object key prefix and a JSON
//! field of the notification, a filter, a shaped body and attributes,
//! unmatched records under both policies, a shape fault, a target that does
//! not exist (the start fails naming it) and faults on one target only.
//! Lines mode: an object in the local S3 whose lines follow
//! spark-aws-messaging's JSON-lines contract (`value`, `msg_attributes`,
//! `group_id`), sent to the FIFO and the fair-queue targets, its bad lines
//! failed alone, and an object the filter leaves out by its key's suffix.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_sqs::types::{Message as SqsMessage, MessageSystemAttributeName};
use forwarder_e2e::routing;
use forwarder_e2e::{attributes, client, drain, endpoint, sdk_config};
use s3_to_sqs::routing::SOURCE_KEYS;
use s3_to_sqs::{Handler, HandlerError, Report, Settings, s3_client};
use serde_json::{Value, json};
use sqs_forwarder::route::Router;
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Env, Forwarder, SqsTransport};

fn settings(vars: &[(&str, &str)]) -> Settings {
    let mut vars = vars.to_vec();
    vars.push(("S3_FORCE_PATH_STYLE", "true"));
    Settings::from_env(&Env::from_pairs(&vars)).expect("valid settings")
}

fn s3() -> aws_sdk_s3::Client {
    s3_client(&sdk_config(), true)
}

struct Queues {
    default: String,
    audit: String,
    media: String,
}

/// The default queue (standard), `audit` (FIFO) and `media` (standard,
/// fair-queue group ids from the rules).
async fn queues(tag: &str) -> Queues {
    let (default, audit, media) =
        routing::three_queues(&format!("e2e-s3route-{tag}"), "audit", "media").await;
    Queues {
        default,
        audit,
        media,
    }
}

fn dedup_of(m: &SqsMessage) -> Option<String> {
    m.attributes()
        .and_then(|a| a.get(&MessageSystemAttributeName::MessageDeduplicationId))
        .cloned()
}

fn string_attr(m: &SqsMessage, name: &str) -> Option<(String, String)> {
    attributes(m)
        .get(name)
        .map(|(t, v)| (t.clone(), String::from_utf8_lossy(v).into_owned()))
}

fn bodies(got: &[SqsMessage]) -> Vec<String> {
    got.iter()
        .map(|m| m.body().expect("body").to_owned())
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// One S3 notification record.
struct Rec<'a> {
    bucket: &'a str,
    key: &'a str,
    event_name: &'a str,
    size: Option<i64>,
    version: Option<&'a str>,
}

const fn rec<'a>(
    bucket: &'a str,
    key: &'a str,
    event_name: &'a str,
    size: Option<i64>,
    version: Option<&'a str>,
) -> Rec<'a> {
    Rec {
        bucket,
        key,
        event_name,
        size,
        version,
    }
}

fn record_json(i: usize, r: &Rec<'_>, etag: Option<&str>) -> Value {
    json!({
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": "us-east-1",
        "eventTime": "2026-11-29T10:00:00.000Z",
        "eventName": r.event_name,
        "userIdentity": {"principalId": "AWS:e2e"},
        "requestParameters": {"sourceIPAddress": "127.0.0.1"},
        "responseElements": {"x-amz-request-id": "E2E"},
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": "e2e",
            "bucket": {"name": r.bucket, "arn": format!("arn:aws:s3:::{}", r.bucket)},
            "object": {
                "key": r.key,
                "size": r.size,
                "eTag": etag,
                "versionId": r.version,
                "sequencer": format!("{i:04X}")
            }
        }
    })
}

/// The notification records of the main tests: what each is, and where it
/// must land. The body is the record's `versionId` (`"body": "/versionId"`),
/// so each message names its record.
const RECORDS: [Rec<'static>; 8] = [
    // 0: matched by no route: the default queue (or dropped).
    rec(
        "docs",
        "in/a.txt",
        "ObjectCreated:Put",
        Some(10),
        Some("v0"),
    ),
    // 1: a deletion, by event name: the FIFO audit queue.
    rec("docs", "in/b.txt", "ObjectRemoved:Delete", None, Some("v1")),
    // 2: by bucket: the media queue, fair-queue group "media".
    rec(
        "media",
        "in/c.txt",
        "ObjectCreated:Put",
        Some(5),
        Some("v2"),
    ),
    // 3: by object key prefix: the media queue, group "docs".
    rec(
        "docs",
        "in/photos/d.png",
        "ObjectCreated:Put",
        Some(6),
        Some("v3"),
    ),
    // 4: its key (a field of the notification) is not under in/: filtered out.
    rec(
        "docs",
        "out/e.txt",
        "ObjectCreated:Put",
        Some(7),
        Some("v4"),
    ),
    // 5: an empty object, by the JSON field /size: the audit queue.
    rec("docs", "in/f.txt", "ObjectCreated:Put", Some(0), Some("v5")),
    // 6: matched by no route, and no versionId for its body: ShapeFailed
    //    (under `unmatched: drop`, dropped before shaping).
    rec("docs", "in/g.txt", "ObjectCreated:Put", Some(8), None),
    // 7: another deletion: the audit queue, after record 1 (same group).
    rec("docs", "in/h.txt", "ObjectRemoved:Delete", None, Some("v7")),
];

fn notification_event() -> Value {
    let records: Vec<Value> = RECORDS
        .iter()
        .enumerate()
        .map(|(i, r)| record_json(i, r, None))
        .collect();
    json!({ "Records": records })
}

fn notification_rules(q: &Queues, unmatched: &str) -> String {
    json!({
        "targets": { "audit": q.audit, "media": q.media },
        "filter": [ { "field": "/key", "prefix": "in/" } ],
        "routes": [
            { "when": { "key": "event_name", "prefix": "ObjectRemoved:" }, "target": "audit" },
            { "when": { "key": "bucket", "equals": "media" }, "target": "media" },
            { "when": { "key": "object_key", "prefix": "in/photos/" }, "target": "media" },
            { "when": { "field": "/size", "equals": "0" }, "target": "audit" }
        ],
        "unmatched": unmatched,
        "body": "/versionId",
        "attributes": {
            "size": { "field": "/size", "type": "Number" },
            "object": { "key": "object_key" }
        },
        "group_id": { "key": "bucket" }
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn notification_records_reach_the_queue_their_rules_name_shaped() {
    let q = queues("notify").await;
    let router = routing::router(&q.default, SOURCE_KEYS, &notification_rules(&q, "default")).await;
    assert!(router.any_fifo());
    let h = Handler::routed(settings(&[]), router, s3());
    let err = h
        .handle(notification_event(), None)
        .await
        .expect_err("record 6 cannot be shaped");
    let HandlerError::NotForwarded { failures, report } = &err else {
        panic!("{err}");
    };
    // Every record's outcome: 6 sent, 1 filtered out (done), 1 at fault.
    assert_eq!(
        *report,
        Report {
            records: 8,
            messages_sent: 6,
            routes_filtered_out: 1,
            ..Report::default()
        }
    );
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].record, 6);
    assert!(!failures[0].retryable, "a content fault");
    assert_eq!(
        err.to_string(),
        "1 of 8 S3 records were not forwarded to SQS: record 6 ObjectCreated:Put s3://docs/in/g.txt: ShapeFailed: body \"/versionId\": the record's data has no such field (not retryable)"
    );

    let sqs = client();
    let audit = drain(&sqs, &q.audit, 4).await;
    assert_eq!(bodies(&audit), ["v1", "v5", "v7"], "FIFO order kept");
    for m in &audit {
        assert_eq!(routing::group_of(m).as_deref(), Some("docs"));
        assert!(dedup_of(m).is_some(), "the function's deduplication id");
    }
    assert_eq!(
        dedup_of(&audit[0]).as_deref(),
        Some("docs/in/b.txt/v1/0001/ObjectRemoved:Delete")
    );
    // Attributes: Number from a field, String from a key, and the
    // function's own; a deletion has no size, so no size attribute.
    assert_eq!(
        string_attr(&audit[1], "size"),
        Some(("Number".into(), "0".into()))
    );
    assert_eq!(
        string_attr(&audit[1], "object"),
        Some(("String".into(), "in/f.txt".into()))
    );
    assert_eq!(
        string_attr(&audit[0], "eventName"),
        Some(("String".into(), "ObjectRemoved:Delete".into()))
    );
    assert_eq!(string_attr(&audit[0], "size"), None);

    let media = drain(&sqs, &q.media, 3).await;
    let mut by_body: Vec<(String, Option<String>, Option<String>)> = media
        .iter()
        .map(|m| {
            (
                m.body().expect("body").to_owned(),
                routing::group_of(m),
                dedup_of(m),
            )
        })
        .collect();
    by_body.sort();
    assert_eq!(
        by_body,
        [
            ("v2".into(), Some("media".into()), None),
            ("v3".into(), Some("docs".into()), None),
        ],
        "fair-queue group ids on a standard queue, no deduplication ids"
    );

    let default = drain(&sqs, &q.default, 2).await;
    assert_eq!(bodies(&default), ["v0"]);
    assert_eq!(routing::group_of(&default[0]).as_deref(), Some("docs"));
    assert_eq!(
        string_attr(&default[0], "size"),
        Some(("Number".into(), "10".into()))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn unmatched_records_are_dropped_when_the_rules_say_so() {
    let q = queues("drop").await;
    let router = routing::router(&q.default, SOURCE_KEYS, &notification_rules(&q, "drop")).await;
    let report = Handler::routed(settings(&[]), router, s3())
        .handle(notification_event(), None)
        .await
        .expect("nothing fails");
    // Records 0 and 6 match no route: dropped before shaping, so record
    // 6's missing versionId is no fault here.
    assert_eq!(
        report,
        Report {
            records: 8,
            messages_sent: 5,
            routes_filtered_out: 1,
            routes_unmatched: 2,
            ..Report::default()
        }
    );
    let sqs = client();
    assert!(drain(&sqs, &q.default, 1).await.is_empty());
    assert_eq!(bodies(&drain(&sqs, &q.audit, 4).await), ["v1", "v5", "v7"]);
    assert_eq!(
        sorted(bodies(&drain(&sqs, &q.media, 3).await)),
        ["v2", "v3"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_target_that_does_not_exist_stops_the_start_naming_it() {
    let q = queues("ghost").await;
    let missing = format!(
        "{}/000000000000/no-such-queue-{}",
        endpoint(),
        std::process::id()
    );
    let doc = json!({
        "targets": { "ghost": missing },
        "routes": [ { "when": { "key": "bucket", "equals": "g" }, "target": "ghost" } ]
    })
    .to_string();
    let error = routing::start_error(&q.default, SOURCE_KEYS, &doc).await;
    assert!(error.contains("ROUTES target \"ghost\""), "{error}");
    assert!(error.contains("no-such-queue"), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_target_fails_its_own_records_only() {
    let q = queues("faults").await;
    let real = routing::router(&q.default, SOURCE_KEYS, &notification_rules(&q, "default")).await;
    // The same targets, each behind a fake: the media queue refuses every
    // entry, for good; the others pass to the local SQS.
    let wrap = |f: &Forwarder<SqsTransport>, refuse: bool| {
        let fake = FakeSqs::in_front_of(f.transport().clone());
        let fake = if refuse {
            fake.fail_where(|_| true, Reply::INVALID.with_message("refused"))
        } else {
            fake
        };
        Forwarder::new(fake, f.settings().clone(), f.rules().clone())
    };
    let routes = real.routes().cloned().expect("rules");
    let media = routes.target("media").expect("media").0;
    let targets = real.targets();
    let others = targets[1..]
        .iter()
        .enumerate()
        .map(|(i, f)| wrap(f, i + 1 == media))
        .collect();
    let router = Router::new(routes, wrap(&targets[0], false), others).expect("router");
    let err = Handler::routed(settings(&[]), router, s3())
        .handle(notification_event(), None)
        .await
        .expect_err("the media records and record 6 fail");
    let HandlerError::NotForwarded { failures, report } = &err else {
        panic!("{err}");
    };
    let failed: Vec<(usize, bool, bool)> = failures
        .iter()
        .map(|f| {
            (
                f.record,
                f.retryable,
                f.reason.starts_with("InvalidParameterValue: refused"),
            )
        })
        .collect();
    assert_eq!(
        failed,
        [(2, false, true), (3, false, true), (6, false, false)],
        "{err}"
    );
    assert!(failures[2].reason.starts_with("ShapeFailed"), "{err}");
    assert_eq!(
        (
            report.messages_sent,
            report.routes_filtered_out,
            report.routes_unmatched
        ),
        (4, 1, 0)
    );
    let sqs = client();
    assert_eq!(
        bodies(&drain(&sqs, &q.audit, 4).await),
        ["v1", "v5", "v7"],
        "audit unaffected"
    );
    assert_eq!(
        bodies(&drain(&sqs, &q.default, 2).await),
        ["v0"],
        "default unaffected"
    );
    assert!(drain(&sqs, &q.media, 1).await.is_empty());
}

async fn bucket(s3: &aws_sdk_s3::Client, base: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let name = format!("{base}-{nanos}");
    s3.create_bucket()
        .bucket(&name)
        .send()
        .await
        .expect("create bucket");
    name
}

/// Put an object; its ETag, unquoted.
async fn put(s3: &aws_sdk_s3::Client, bucket: &str, key: &str, data: &str) -> String {
    let out = s3
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(data.as_bytes().to_vec()))
        .send()
        .await
        .expect("put object");
    out.e_tag().expect("etag").trim_matches('"').to_owned()
}

/// Lines as spark-aws-messaging writes them: `value` the body,
/// `msg_attributes` the attributes, `group_id` the group; `kind` is the
/// routes' own field.
const SPARK_LINES: [&str; 6] = [
    // 1: an order: the FIFO queue, group g1.
    r#"{"kind":"order","value":"o1","msg_attributes":{"tenant":"t1","priority":"2"},"group_id":"g1"}"#,
    // 2: by bucket: the fair queue; its group is no valid id: hashed.
    r#"{"kind":"click","value":{"a":1},"msg_attributes":{"tenant":"t2"},"group_id":"tenant 2"}"#,
    // 3: not JSON: ShapeFailed.
    "not json",
    // 4: no value: ShapeFailed.
    r#"{"kind":"order","msg_attributes":{"tenant":"t1"},"group_id":"g1"}"#,
    // 5: an order, a Number attribute: the FIFO queue after line 1.
    r#"{"kind":"order","value":"o2","msg_attributes":{"n":5},"group_id":"g1"}"#,
    // 6: by bucket: the fair queue, group t3, no attributes.
    r#"{"kind":"click","value":"c2","group_id":"t3"}"#,
];

#[tokio::test(flavor = "multi_thread")]
async fn lines_follow_the_json_lines_contract_to_a_fifo_and_a_fair_queue() {
    let q = queues("lines").await;
    let s3 = s3();
    let b = bucket(&s3, "e2e-s3route-lines").await;
    let key = "exports/part-00000.jsonl";
    let etag = put(&s3, &b, key, &(SPARK_LINES.join("\n") + "\n")).await;
    // Spark's checksum beside it: left out by the filter (its key's suffix).
    let crc_key = "exports/part-00000.crc";
    let crc_etag = put(&s3, &b, crc_key, "crc bytes\n").await;
    let doc = json!({
        "targets": { "orders": q.audit, "tenants": q.media },
        "filter": [ { "key": "object_key", "suffix": ".jsonl" } ],
        "routes": [
            { "when": { "field": "/kind", "equals": "order" }, "target": "orders" },
            { "when": { "key": "bucket", "equals": b }, "target": "tenants" }
        ],
        "body": "/value",
        "attributes_from": "/msg_attributes",
        "group_id": { "field": "/group_id" }
    })
    .to_string();
    let router = routing::router(&q.default, SOURCE_KEYS, &doc).await;
    let h = Handler::routed(
        settings(&[("MODE", "lines"), ("LINES_PER_SEND", "2")]),
        router,
        s3,
    );
    let records = [
        record_json(
            0,
            &rec(&b, key, "ObjectCreated:Put", Some(1), None),
            Some(&etag),
        ),
        record_json(
            1,
            &rec(&b, crc_key, "ObjectCreated:Put", Some(1), None),
            Some(&crc_etag),
        ),
    ];
    let err = h
        .handle(json!({ "Records": records }), None)
        .await
        .expect_err("lines 3 and 4 cannot be shaped");
    let HandlerError::NotForwarded { failures, report } = &err else {
        panic!("{err}");
    };
    assert_eq!(
        *report,
        Report {
            records: 2,
            objects_read: 2,
            lines_read: 7,
            messages_sent: 4,
            routes_filtered_out: 1,
            ..Report::default()
        }
    );
    assert_eq!(failures.len(), 1, "{err}");
    assert_eq!(failures[0].record, 0);
    assert!(!failures[0].retryable);
    assert_eq!(
        failures[0].reason,
        "2 of 6 lines not forwarded (line 3: ShapeFailed: body \"/value\": the record's data is not JSON (not retryable); line 4: ShapeFailed: body \"/value\": the record's data has no such field (not retryable))"
    );

    let sqs = client();
    let orders = drain(&sqs, &q.audit, 3).await;
    assert_eq!(bodies(&orders), ["o1", "o2"], "FIFO order kept");
    for m in &orders {
        assert_eq!(routing::group_of(m).as_deref(), Some("g1"));
    }
    let line = |m: &SqsMessage| string_attr(m, "line").map(|(_, v)| v);
    assert_eq!(
        dedup_of(&orders[1]).as_deref(),
        Some(format!("{b}/{key}/null/0000/5").as_str())
    );
    assert_eq!(
        string_attr(&orders[0], "tenant"),
        Some(("String".into(), "t1".into()))
    );
    assert_eq!(
        string_attr(&orders[0], "priority"),
        Some(("String".into(), "2".into()))
    );
    assert_eq!(
        string_attr(&orders[1], "n"),
        Some(("Number".into(), "5".into()))
    );
    // The function's own attributes stay beside the line's.
    assert_eq!(line(&orders[1]).as_deref(), Some("5"));
    assert_eq!(
        string_attr(&orders[0], "key"),
        Some(("String".into(), key.into()))
    );

    let tenants = drain(&sqs, &q.media, 3).await;
    let mut got: Vec<(String, String, Option<String>)> = tenants
        .iter()
        .map(|m| {
            (
                m.body().expect("body").to_owned(),
                routing::group_of(m).expect("a fair-queue group id"),
                string_attr(m, "tenant").map(|(_, v)| v),
            )
        })
        .collect();
    got.sort();
    assert_eq!(got.len(), 2);
    assert_eq!((got[0].0.as_str(), got[0].2.as_deref()), ("c2", None));
    assert_eq!(got[0].1, "t3");
    assert_eq!(
        (got[1].0.as_str(), got[1].2.as_deref()),
        (r#"{"a":1}"#, Some("t2"))
    );
    assert!(
        got[1].1.starts_with("g-") && got[1].1.len() == 2 + 64,
        "hashed: {}",
        got[1].1
    );
    for m in &tenants {
        assert_eq!(dedup_of(m), None, "no deduplication id on a standard queue");
    }
    assert!(drain(&sqs, &q.default, 1).await.is_empty());
}
