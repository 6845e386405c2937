//! End-to-end: kinesis-to-sqs with routing rules (`ROUTES`) against the
//! local SQS endpoint. Three targets, a standard default queue, a FIFO
//! queue and a standard queue with fair-queue group ids; records routed by
//! a JSON field and by the partition key, a filter, a shaped body and
//! attributes, unmatched records under both policies, a target that does
//! not exist (the start fails naming it), and faults on one target only
//! (the others' records unaffected, every outcome exact).

use base64::Engine as _;
use forwarder_e2e::routing::{self, Queues};
use forwarder_e2e::{attributes, client, create_queue, drain};
use kinesis_to_sqs::event::KinesisEvent;
use kinesis_to_sqs::records::SOURCE_KEYS;
use kinesis_to_sqs::{Handler, Settings};
use serde_json::{Value, json};
use sqs_forwarder::route::Router;
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Forwarder, SqsTransport};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

fn seq(i: usize) -> String {
    format!("49590338271490256608559692538361571095921575989{i:09}")
}

/// One record per `(partition key, data)`, in order.
fn event(records: &[(&str, &[u8])]) -> KinesisEvent {
    let records: Vec<Value> = records
        .iter()
        .enumerate()
        .map(|(i, (key, data))| {
            json!({
                "kinesis": {
                    "kinesisSchemaVersion": "1.0",
                    "partitionKey": key,
                    "sequenceNumber": seq(i),
                    "data": B64.encode(data),
                    "approximateArrivalTimestamp": 1_764_410_000.0
                },
                "eventSource": "aws:kinesis",
                "eventVersion": "1.0",
                "eventID": format!("shardId-000000000001:{}", seq(i)),
                "eventName": "aws:kinesis:record",
                "invokeIdentityArn": "arn:aws:iam::123456789012:role/r",
                "awsRegion": "us-east-1",
                "eventSourceARN": "arn:aws:kinesis:us-east-1:123456789012:stream/e2e"
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).expect("a Kinesis event")
}

async fn queues(tag: &str) -> Queues {
    routing::orders_and_eu(&format!("e2e-route-{tag}")).await
}

fn rules(q: &Queues, unmatched: &str) -> String {
    json!({
        "targets": { "orders": q.orders, "eu": q.eu },
        "filter": [ { "field": "/type", "exists": true } ],
        "routes": [
            { "when": { "field": "/type", "equals": "order" }, "target": "orders" },
            { "when": { "key": "partition_key", "prefix": "eu-" }, "target": "eu" }
        ],
        "unmatched": unmatched,
        "body": "/payload",
        "attributes": {
            "tenant": { "field": "/tenant", "type": "String" },
            "n": { "field": "/n", "type": "Number" }
        },
        "group_id": { "field": "/tenant" }
    })
    .to_string()
}

/// The records of the main test: what each is, and where it must land.
fn records() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        // 0: an order -> the FIFO queue, group "acme".
        (
            "us-1",
            br#"{"type":"order","tenant":"acme","n":1,"payload":{"id":1}}"#.to_vec(),
        ),
        // 1: a click keyed eu- -> the eu queue; its tenant is no valid id:
        //    a hashed fair-queue group.
        (
            "eu-7",
            br#"{"type":"click","tenant":"t 2","n":2,"payload":"hello"}"#.to_vec(),
        ),
        // 2: matched by no route -> the default (or dropped).
        (
            "us-2",
            br#"{"type":"click","tenant":"beta","n":3,"payload":"x"}"#.to_vec(),
        ),
        // 3: no "type" -> filtered out.
        ("eu-3", br#"{"kind":"ping"}"#.to_vec()),
        // 4: not JSON -> filtered out.
        ("eu-4", b"plain text".to_vec()),
        // 5: another order, same tenant -> the FIFO queue after record 0.
        (
            "us-5",
            br#"{"type":"order","tenant":"acme","n":5,"payload":{"id":5}}"#.to_vec(),
        ),
        // 6: no payload -> a content fault (ShapeFailed), reported.
        (
            "us-6",
            br#"{"type":"click","tenant":"beta","n":6}"#.to_vec(),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn records_reach_the_queue_their_rules_name_shaped() {
    let q = queues("main").await;
    let router = routing::router(&q.default, SOURCE_KEYS, &rules(&q, "default")).await;
    assert!(router.any_fifo());
    let recs = records();
    let input: Vec<(&str, &[u8])> = recs.iter().map(|(k, d)| (*k, d.as_slice())).collect();
    let handler = Handler::routed(Settings::default(), router);
    let response = handler
        .handle(event(&input), None)
        .await
        .expect("an answer");
    // Only the faulted record is reported (PERMANENT_FAILURES=report).
    let reported: Vec<_> = response
        .batch_item_failures
        .iter()
        .filter_map(|f| f.item_identifier.clone())
        .collect();
    assert_eq!(reported, vec![seq(6)]);

    let sqs = client();
    let orders = drain(&sqs, &q.orders, 3).await;
    let bodies: Vec<&str> = orders.iter().filter_map(|m| m.body()).collect();
    assert_eq!(
        bodies,
        vec![r#"{"id":1}"#, r#"{"id":5}"#],
        "FIFO order kept"
    );
    for m in &orders {
        assert_eq!(routing::group_of(m).as_deref(), Some("acme"));
        let attrs = attributes(m);
        assert_eq!(attrs["tenant"], ("String".to_owned(), b"acme".to_vec()));
        assert_eq!(attrs["n"].0, "Number");
    }

    let eu = drain(&sqs, &q.eu, 2).await;
    assert_eq!(eu.len(), 1);
    assert_eq!(eu[0].body(), Some("hello"));
    let group = routing::group_of(&eu[0]).expect("a fair-queue group id on a standard queue");
    assert!(
        group.starts_with("g-") && group.len() == 2 + 64,
        "hashed: {group}"
    );
    assert_eq!(
        attributes(&eu[0])["n"],
        ("Number".to_owned(), b"2".to_vec())
    );

    let default = drain(&sqs, &q.default, 2).await;
    assert_eq!(default.len(), 1);
    assert_eq!(default[0].body(), Some("x"));
    assert_eq!(routing::group_of(&default[0]).as_deref(), Some("beta"));
    // The function's own attributes ride along with the shaped ones.
    assert!(attributes(&default[0]).contains_key("kinesis.partitionKey"));
}

#[tokio::test(flavor = "multi_thread")]
async fn unmatched_records_are_dropped_when_the_rules_say_so() {
    let q = queues("drop").await;
    let router = routing::router(&q.default, SOURCE_KEYS, &rules(&q, "drop")).await;
    let recs = records();
    let input: Vec<(&str, &[u8])> = recs.iter().map(|(k, d)| (*k, d.as_slice())).collect();
    let response = Handler::routed(Settings::default(), router)
        .handle(event(&input), None)
        .await
        .expect("an answer");
    // Records 2 and 6 match no route: dropped before shaping, so record
    // 6's missing payload is no fault here. Nothing is reported.
    assert!(response.batch_item_failures.is_empty());
    let sqs = client();
    assert!(
        drain(&sqs, &q.default, 1).await.is_empty(),
        "records 2 and 6 dropped"
    );
    assert_eq!(drain(&sqs, &q.orders, 3).await.len(), 2);
    assert_eq!(drain(&sqs, &q.eu, 2).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_target_that_does_not_exist_stops_the_start_naming_it() {
    let q = queues("ghost").await;
    let missing = format!(
        "{}/000000000000/no-such-queue-{}",
        forwarder_e2e::endpoint(),
        std::process::id()
    );
    let doc = json!({
        "targets": { "ghost": missing },
        "routes": [ { "when": { "key": "partition_key", "equals": "g" }, "target": "ghost" } ]
    })
    .to_string();
    let error = routing::start_error(&q.default, SOURCE_KEYS, &doc).await;
    assert!(error.contains("ROUTES target \"ghost\""), "{error}");
    assert!(error.contains("no-such-queue"), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_target_fails_its_own_records_only() {
    let q = queues("faults").await;
    let real = routing::router(&q.default, SOURCE_KEYS, &rules(&q, "default")).await;
    // The same targets, each behind a fake that can fail entries: the eu
    // queue refuses everything, for good; the others pass to the local SQS.
    let wrap = |f: &Forwarder<SqsTransport>, refuse: bool| {
        let fake = FakeSqs::in_front_of(f.transport().clone());
        let fake = if refuse {
            fake.fail_where(|_| true, Reply::INVALID.with_message("refused"))
        } else {
            fake
        };
        Forwarder::new(fake, f.settings().clone(), f.rules().clone())
    };
    let targets = real.targets();
    let routes = real.routes().cloned().expect("rules");
    let eu_index = routes.target("eu").expect("eu").0;
    let others = targets[1..]
        .iter()
        .enumerate()
        .map(|(i, f)| wrap(f, i + 1 == eu_index))
        .collect();
    let router = Router::new(routes, wrap(&targets[0], false), others).expect("router");
    let recs = records();
    let input: Vec<(&str, &[u8])> = recs.iter().map(|(k, d)| (*k, d.as_slice())).collect();
    let response = Handler::routed(Settings::default(), router)
        .handle(event(&input), None)
        .await
        .expect("an answer");
    // Record 1 (eu) failed for good and record 6 is at fault: both reported.
    let mut reported: Vec<_> = response
        .batch_item_failures
        .iter()
        .filter_map(|f| f.item_identifier.clone())
        .collect();
    reported.sort();
    assert_eq!(reported, vec![seq(1), seq(6)]);
    let sqs = client();
    assert_eq!(
        drain(&sqs, &q.orders, 3).await.len(),
        2,
        "orders unaffected"
    );
    assert_eq!(
        drain(&sqs, &q.default, 2).await.len(),
        1,
        "default unaffected"
    );
    assert!(drain(&sqs, &q.eu, 1).await.is_empty());
}

/// `events/kinesis-orders.json` under the rules `scripts/local-run.sh`
/// shows (scripts/local_run.py, `routed`): what its output says lands
/// where, does.
#[tokio::test(flavor = "multi_thread")]
async fn the_orders_sample_lands_as_the_local_run_shows() {
    let sqs = client();
    let default = create_queue(&sqs, "e2e-route-sample-default", &[]).await;
    let eu = create_queue(&sqs, "e2e-route-sample-eu", &[]).await;
    let audit = create_queue(&sqs, "e2e-route-sample-audit.fifo", &[]).await;
    let doc = json!({
        "targets": { "eu": eu, "audit": audit },
        "filter": [ { "field": "/type", "prefix": "order." } ],
        "routes": [
            { "when": { "key": "partition_key", "equals": "audit" }, "target": "audit" },
            { "when": { "field": "/region", "prefix": "eu-" }, "target": "eu" }
        ],
        "unmatched": "default",
        "attributes": {
            "region": { "field": "/region", "type": "String" },
            "total": { "field": "/total", "type": "Number" }
        },
        "group_id": { "field": "/customer" }
    })
    .to_string();
    let router = routing::router(&default, SOURCE_KEYS, &doc).await;
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../events/kinesis-orders.json"
    ))
    .expect("the sample");
    let event: KinesisEvent = serde_json::from_str(&text).expect("a Kinesis event");
    let last = event.records[7].kinesis.sequence_number.clone();
    let response = Handler::routed(Settings::default(), router)
        .handle(event, None)
        .await
        .expect("an answer");
    // The last record's total ("n/a") is no Number: reported, ShapeFailed.
    let reported: Vec<_> = response
        .batch_item_failures
        .iter()
        .filter_map(|f| f.item_identifier.clone())
        .collect();
    assert_eq!(reported, vec![last]);

    let orders = |ms: &[aws_sdk_sqs::types::Message]| -> Vec<(i64, Option<String>)> {
        let mut v: Vec<_> = ms
            .iter()
            .map(|m| {
                let body: Value = serde_json::from_str(m.body().unwrap_or("")).expect("JSON body");
                (body["order"].as_i64().unwrap_or(-1), routing::group_of(m))
            })
            .collect();
        v.sort();
        v
    };
    let got_default = drain(&sqs, &default, 1).await;
    assert_eq!(orders(&got_default), vec![(3002, Some("c-2".into()))]);
    let got_eu = drain(&sqs, &eu, 3).await;
    assert_eq!(
        orders(&got_eu),
        vec![
            (3001, Some("c-1".into())),
            (3001, Some("c-1".into())),
            (3003, Some("c-4".into()))
        ],
        "eu- regions, fair-queue tenants from /customer (the heartbeat filtered out)"
    );
    let attrs = attributes(&got_eu[0]);
    assert_eq!(attrs["region"].0, "String");
    assert_eq!(attrs["total"].0, "Number");
    let got_audit = drain(&sqs, &audit, 2).await;
    assert_eq!(
        orders(&got_audit),
        vec![(2990, Some("c-7".into())), (2991, Some("c-2".into()))]
    );
}
