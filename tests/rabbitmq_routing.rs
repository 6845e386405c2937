//! End-to-end: rabbitmq-to-sqs with routing rules (`ROUTES`) against the
//! real RabbitMQ on this machine (`RABBITMQ_TEST_URL`) and the local SQS
//! endpoint. Deliveries published through a topic exchange (routing keys)
//! and to a second queue, with headers, reach three targets: a standard
//! default queue, a FIFO queue and a standard queue with fair-queue group
//! ids; routed by the routing key, the source queue, a string header, a
//! boolean header and a JSON field; a filter, a shaped body and attributes
//! (String, Number, from a header, `attributes_from`), unmatched deliveries
//! under both policies, a target that does not exist (the start fails
//! naming it), faults on one target only and a held FIFO group on its own
//! target only (every delivery's ack checked at the broker), a shape fault
//! dead-lettered, and an `aws:rmq` batch routed.

use std::collections::HashMap;
use std::time::Duration;

use forwarder_e2e::rabbitmq::{Broker, amqp_url, fake_forwarder, far, settings, unique};
use forwarder_e2e::routing::{self, Queues};
use forwarder_e2e::{attributes, client, create_queue, drain};
use lapin::options::{
    BasicPublishOptions, ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, ExchangeKind};
use rabbitmq_to_sqs::Handler;
use rabbitmq_to_sqs::drain::{PollReport, QueueReport};
use rabbitmq_to_sqs::routing::SOURCE_KEYS;
use serde_json::{Value, json};
use sqs_forwarder::route::{Router, Routes};
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Forwarder, SqsTransport, Transport};

// ---------------------------------------------------------------- broker

/// A test's queues: `inbox`, bound to a topic exchange for every routing
/// key, and `audit`, published to through the default exchange; each with
/// a dead-letter queue (`<name>.dlq`).
struct Rig {
    broker: Broker,
    exchange: String,
    inbox: String,
    audit: String,
}

impl Rig {
    async fn new(tag: &str) -> Rig {
        let mut broker = Broker::new().await;
        let inbox = broker.queue(&format!("rmq-route-{tag}-inbox"), true).await;
        let audit = broker.queue(&format!("rmq-route-{tag}-audit"), true).await;
        let exchange = unique(&format!("rmq-route-{tag}-x"));
        broker
            .ch
            .exchange_declare(
                exchange.as_str().into(),
                ExchangeKind::Topic,
                ExchangeDeclareOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("declare the exchange");
        broker
            .ch
            .queue_bind(
                inbox.as_str().into(),
                exchange.as_str().into(),
                "#".into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("bind the inbox");
        Rig {
            broker,
            exchange,
            inbox,
            audit,
        }
    }

    /// Publish `d` (to the inbox through the exchange with its routing key,
    /// or to the audit queue); waits for the confirm.
    async fn publish(&self, index: usize, d: &Delivery) {
        let mut headers = FieldTable::default();
        for (name, value) in &d.headers {
            headers.insert(ShortString::from(*name), value.clone());
        }
        let props = BasicProperties::default()
            .with_message_id(ShortString::from(format!("m-{index}")))
            .with_headers(headers);
        let (exchange, routing_key) = match d.to {
            To::Inbox => (self.exchange.as_str(), d.routing_key),
            To::Audit => ("", self.audit.as_str()),
        };
        self.broker
            .ch
            .basic_publish(
                exchange.into(),
                routing_key.into(),
                BasicPublishOptions::default(),
                &d.body,
                props,
            )
            .await
            .expect("publish")
            .await
            .expect("confirm");
    }

    async fn publish_all(&self, deliveries: &[Delivery]) {
        for (i, d) in deliveries.iter().enumerate() {
            self.publish(i, d).await;
        }
    }

    fn queues(&self) -> String {
        format!("{},{}", self.inbox, self.audit)
    }

    async fn cleanup(self) {
        let _ = self
            .broker
            .ch
            .exchange_delete(
                self.exchange.as_str().into(),
                ExchangeDeleteOptions::default(),
            )
            .await;
        self.broker.cleanup().await;
    }
}

#[derive(Clone, Copy)]
enum To {
    Inbox,
    Audit,
}

struct Delivery {
    to: To,
    routing_key: &'static str,
    headers: Vec<(&'static str, AMQPValue)>,
    body: Vec<u8>,
}

fn text(v: &str) -> AMQPValue {
    AMQPValue::LongString(LongString::from(v))
}

fn inbox(routing_key: &'static str, body: &[u8]) -> Delivery {
    Delivery {
        to: To::Inbox,
        routing_key,
        headers: Vec::new(),
        body: body.to_vec(),
    }
}

fn with(mut d: Delivery, name: &'static str, value: AMQPValue) -> Delivery {
    d.headers.push((name, value));
    d
}

/// The deliveries of the main tests: what each is, and where it must land.
fn deliveries() -> Vec<Delivery> {
    vec![
        // 0: routing key orders.* -> the FIFO queue, group "acme".
        inbox(
            "orders.new",
            br#"{"type":"new","tenant":"acme","n":1,"payload":{"id":1}}"#,
        ),
        // 1: header region=eu -> the eu queue; its tenant is no valid id: a
        //    hashed fair-queue group.
        with(
            inbox(
                "misc",
                br#"{"type":"click","tenant":"t 2","n":2,"payload":"hello"}"#,
            ),
            "region",
            text("eu"),
        ),
        // 2: field /type=order -> the FIFO queue after delivery 0.
        inbox(
            "misc",
            br#"{"type":"order","tenant":"acme","n":3,"payload":{"id":3}}"#,
        ),
        // 3: matched by no route -> the default (or dropped); attributes
        //    from the rules (one from its number header) and /attrs.
        with(
            inbox(
                "misc",
                br#"{"type":"click","tenant":"beta","n":4,"payload":"x","attrs":{"color":"red","size":5}}"#,
            ),
            "attempt",
            AMQPValue::LongInt(3),
        ),
        // 4: no tenant -> filtered out (acked).
        inbox("misc", br#"{"kind":"ping"}"#),
        // 5: not JSON -> filtered out (acked).
        inbox("misc", b"plain text"),
        // 6: no payload -> a shape fault: rejected, dead-lettered.
        inbox("misc", br#"{"type":"click","tenant":"beta","n":6}"#),
        // 7: from the audit queue -> the eu queue.
        Delivery {
            to: To::Audit,
            routing_key: "",
            headers: Vec::new(),
            body: br#"{"type":"click","tenant":"gamma","n":7,"payload":"audited"}"#.to_vec(),
        },
        // 8: boolean header urgent=true -> the eu queue.
        with(
            inbox(
                "misc",
                br#"{"type":"click","tenant":"delta","n":8,"payload":"urgent"}"#,
            ),
            "urgent",
            AMQPValue::Boolean(true),
        ),
    ]
}

// ---------------------------------------------------------------- SQS

async fn queues(tag: &str) -> Queues {
    routing::orders_and_eu(&format!("rmq-route-{tag}")).await
}

fn rules(q: &Queues, audit: &str, unmatched: &str) -> String {
    json!({
        "targets": { "orders": q.orders, "eu": q.eu },
        "filter": [ { "field": "/tenant", "exists": true } ],
        "routes": [
            { "when": { "key": "routing_key", "prefix": "orders." }, "target": "orders" },
            { "when": { "field": "/type", "equals": "order" }, "target": "orders" },
            { "when": { "key": "header", "name": "region", "equals": "eu" }, "target": "eu" },
            { "when": { "key": "header", "name": "urgent", "equals": "true" }, "target": "eu" },
            { "when": { "key": "source_queue", "equals": audit }, "target": "eu" }
        ],
        "unmatched": unmatched,
        "body": "/payload",
        "attributes": {
            "tenant": { "field": "/tenant", "type": "String" },
            "n": { "field": "/n", "type": "Number" },
            "attempt": { "key": "header", "name": "attempt", "type": "Number" }
        },
        "attributes_from": "/attrs",
        "group_id": { "field": "/tenant" }
    })
    .to_string()
}

/// The function under test over `router`, its AMQP connection named
/// uniquely.
fn function<T: Transport>(vars: &[(&str, &str)], router: Router<T>) -> Handler<T> {
    let mut all = vec![("RABBITMQ_IDLE_MS", "1000")];
    all.extend_from_slice(vars);
    Handler::routed(settings(&all), router, Duration::from_millis(200), None)
        .expect("function")
        .with_connection_name(unique("rmq-route"))
}

async fn poll<T: Transport>(f: &Handler<T>) -> PollReport {
    f.poll_until(far(), None).await.expect("poll")
}

/// (received, sent, dropped, rejected, requeued) of a queue's drain.
fn counts(q: &QueueReport) -> (u64, u64, u64, u64, u64) {
    (q.received, q.sent, q.dropped, q.rejected, q.requeued)
}

fn body_of(d: &Delivery) -> String {
    String::from_utf8_lossy(&d.body).into_owned()
}

fn string(v: &str) -> (String, Vec<u8>) {
    ("String".to_owned(), v.as_bytes().to_vec())
}

fn number(v: &str) -> (String, Vec<u8>) {
    ("Number".to_owned(), v.as_bytes().to_vec())
}

// ---------------------------------------------------------------- tests

#[tokio::test(flavor = "multi_thread")]
async fn deliveries_reach_the_queue_their_rules_name_shaped() {
    let rig = Rig::new("main").await;
    let q = queues("main").await;
    let ds = deliveries();
    rig.publish_all(&ds).await;
    let f = function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", &rig.queues()),
        ],
        routing::router(&q.default, SOURCE_KEYS, &rules(&q, &rig.audit, "default")).await,
    );
    let report = poll(&f).await;
    // Inbox: 0, 1, 2, 3, 8 sent; 4, 5 filtered out (acked); 6 rejected.
    assert_eq!(counts(&report.queues[0]), (8, 5, 2, 1, 0), "{report:?}");
    assert_eq!(counts(&report.queues[1]), (1, 1, 0, 0, 0), "{report:?}");
    let broker = &rig.broker;
    assert_eq!(broker.ready(&rig.inbox).await, 0, "every delivery settled");
    assert_eq!(broker.ready(&rig.audit).await, 0);
    assert_eq!(
        broker.take_all(&format!("{}.dlq", rig.inbox)).await,
        vec![body_of(&ds[6])],
        "the shape fault, dead-lettered as published"
    );
    assert!(
        broker
            .take_all(&format!("{}.dlq", rig.audit))
            .await
            .is_empty()
    );

    let sqs = client();
    let orders = drain(&sqs, &q.orders, 3).await;
    let bodies: Vec<&str> = orders.iter().filter_map(|m| m.body()).collect();
    assert_eq!(bodies, [r#"{"id":1}"#, r#"{"id":3}"#], "FIFO order kept");
    for (m, (n, routing_key)) in orders.iter().zip([("1", "orders.new"), ("3", "misc")]) {
        assert_eq!(routing::group_of(m).as_deref(), Some("acme"));
        let attrs = attributes(m);
        assert_eq!(attrs["tenant"], string("acme"));
        assert_eq!(attrs["n"], number(n));
        // The function's own attributes ride along with the shaped ones.
        assert_eq!(attrs["amqp.routing-key"], string(routing_key));
    }

    let eu = drain(&sqs, &q.eu, 4).await;
    let by_body: HashMap<&str, _> = eu.iter().map(|m| (m.body().unwrap_or(""), m)).collect();
    assert_eq!(by_body.len(), 3, "{:?}", by_body.keys());
    let hello = by_body["hello"];
    let group = routing::group_of(hello).expect("a fair-queue group id on a standard queue");
    assert!(
        group.starts_with("g-") && group.len() == 2 + 64,
        "hashed: {group}"
    );
    assert_eq!(attributes(hello)["region"], string("eu"), "its header");
    assert_eq!(
        routing::group_of(by_body["audited"]).as_deref(),
        Some("gamma")
    );
    assert_eq!(
        routing::group_of(by_body["urgent"]).as_deref(),
        Some("delta")
    );
    assert_eq!(attributes(by_body["urgent"])["urgent"], string("true"));

    let default = drain(&sqs, &q.default, 2).await;
    assert_eq!(default.len(), 1);
    assert_eq!(default[0].body(), Some("x"));
    assert_eq!(routing::group_of(&default[0]).as_deref(), Some("beta"));
    let attrs = attributes(&default[0]);
    assert_eq!(attrs["tenant"], string("beta"));
    assert_eq!(attrs["n"], number("4"));
    assert_eq!(attrs["attempt"], number("3"), "a number header's text");
    assert_eq!(attrs["color"], string("red"), "from /attrs");
    assert_eq!(attrs["size"], number("5"), "from /attrs");
    // The header of the rules' attribute's name is kept, folded.
    let (_, folded) = &attrs["amqp.headers"];
    let folded: Value = serde_json::from_slice(folded).expect("JSON");
    assert_eq!(folded["attempt"], 3);
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unmatched_deliveries_are_acked_when_the_rules_drop_them() {
    let rig = Rig::new("drop").await;
    let q = queues("drop").await;
    rig.publish_all(&deliveries()).await;
    let f = function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", &rig.queues()),
        ],
        routing::router(&q.default, SOURCE_KEYS, &rules(&q, &rig.audit, "drop")).await,
    );
    let report = poll(&f).await;
    // 3 and 6 match no route: dropped before shaping, so 6's missing
    // payload is no fault here. 0, 1, 2, 8 sent; 3, 4, 5, 6 acked.
    assert_eq!(counts(&report.queues[0]), (8, 4, 4, 0, 0), "{report:?}");
    assert_eq!(counts(&report.queues[1]), (1, 1, 0, 0, 0), "{report:?}");
    let broker = &rig.broker;
    assert_eq!(broker.ready(&rig.inbox).await, 0);
    assert!(
        broker
            .take_all(&format!("{}.dlq", rig.inbox))
            .await
            .is_empty()
    );
    let sqs = client();
    assert!(
        drain(&sqs, &q.default, 1).await.is_empty(),
        "3 and 6 dropped"
    );
    assert_eq!(drain(&sqs, &q.orders, 3).await.len(), 2);
    assert_eq!(drain(&sqs, &q.eu, 4).await.len(), 3);
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_target_that_does_not_exist_stops_the_start_naming_it() {
    let sqs = client();
    let default = create_queue(&sqs, "rmq-route-ghost-default", &[]).await;
    let missing = format!(
        "{}/000000000000/no-such-queue-{}",
        forwarder_e2e::endpoint(),
        std::process::id()
    );
    let doc = json!({
        "targets": { "ghost": missing },
        "routes": [ { "when": { "key": "routing_key", "equals": "g" }, "target": "ghost" } ]
    })
    .to_string();
    let error = routing::start_error(&default, SOURCE_KEYS, &doc).await;
    assert!(error.contains("ROUTES target \"ghost\""), "{error}");
    assert!(error.contains("no-such-queue"), "{error}");
}

/// `router`'s targets, each behind a fake that passes to the local SQS
/// unless `refuse` fails the entry.
fn behind_fakes(
    real: &Router<SqsTransport>,
    refuse: impl Fn(usize, &FakeSqs) -> FakeSqs,
) -> Router<FakeSqs> {
    let wrap = |i: usize, f: &Forwarder<SqsTransport>| {
        let fake = refuse(i, &FakeSqs::in_front_of(f.transport().clone()));
        Forwarder::new(fake, f.settings().clone(), f.rules().clone())
    };
    let targets = real.targets();
    let others = targets
        .iter()
        .enumerate()
        .skip(1)
        .map(|(i, f)| wrap(i, f))
        .collect();
    let routes = real.routes().cloned().expect("rules");
    Router::new(routes, wrap(0, &targets[0]), others).expect("router")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_target_fails_its_own_deliveries_only() {
    let rig = Rig::new("faults").await;
    let q = queues("faults").await;
    let ds = deliveries();
    rig.publish_all(&ds).await;
    let real = routing::router(&q.default, SOURCE_KEYS, &rules(&q, &rig.audit, "default")).await;
    let eu = real.routes().and_then(|r| r.target("eu")).expect("eu").0;
    // The eu queue fails "hello" and "urgent" for now (retryable) and
    // refuses "audited" for good (the message's fault); the others pass.
    let router = behind_fakes(&real, |i, fake| {
        if i != eu {
            return fake.clone();
        }
        fake.clone()
            .fail_where(
                |a| a.body().contains("hello") || a.body().contains("urgent"),
                Reply::INTERNAL.with_message("injected"),
            )
            .fail_where(
                |a| a.body().contains("audited"),
                Reply::INVALID.with_message("injected"),
            )
    });
    let f = function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", &rig.queues()),
        ],
        router,
    );
    let report = poll(&f).await;
    // Inbox: 0, 2, 3 sent; 4, 5 acked; 6 rejected; 1, 8 requeued.
    assert_eq!(counts(&report.queues[0]), (8, 3, 2, 1, 2), "{report:?}");
    // Audit: 7 rejected.
    assert_eq!(counts(&report.queues[1]), (1, 0, 0, 1, 0), "{report:?}");
    let broker = &rig.broker;
    assert_eq!(
        broker.take_all(&rig.inbox).await,
        vec![body_of(&ds[1]), body_of(&ds[8])],
        "exactly the deliveries eu did not take are back, in order"
    );
    assert_eq!(
        broker.take_all(&format!("{}.dlq", rig.inbox)).await,
        vec![body_of(&ds[6])]
    );
    assert_eq!(broker.ready(&rig.audit).await, 0);
    assert_eq!(
        broker.take_all(&format!("{}.dlq", rig.audit)).await,
        vec![body_of(&ds[7])],
        "refused for good: dead-lettered"
    );
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
    rig.cleanup().await;
}

/// Two FIFO targets: a message held on one blocks its group there, and
/// there only.
#[tokio::test(flavor = "multi_thread")]
async fn a_held_fifo_group_holds_on_its_own_target_only() {
    let rig = Rig::new("groups").await;
    let ds: Vec<Delivery> = [
        ("orders.x", "acme", "a0-retry-me"),
        ("misc", "acme", "a1"),
        ("orders.x", "acme", "a2"),
        ("misc", "acme", "a3"),
        ("orders.x", "acme", "a4"),
        ("orders.x", "beta", "b0"),
    ]
    .into_iter()
    .map(|(routing_key, tenant, body)| {
        with(inbox(routing_key, body.as_bytes()), "tenant", text(tenant))
    })
    .collect();
    rig.publish_all(&ds).await;
    let doc = json!({
        "targets": { "orders": "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo" },
        "routes": [ { "when": { "key": "routing_key", "prefix": "orders." }, "target": "orders" } ]
    })
    .to_string();
    let routes = Routes::parse(&doc, SOURCE_KEYS).expect("rules");
    let default = FakeSqs::new();
    let orders = FakeSqs::new().fail_where(
        |a| a.body().contains("retry-me"),
        Reply::INTERNAL.with_message("injected"),
    );
    let router = Router::new(
        routes,
        fake_forwarder(default.clone(), true),
        vec![fake_forwarder(orders.clone(), true)],
    )
    .expect("router");
    let f = function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", &rig.inbox),
            ("RABBITMQ_PREFETCH", "4"),
            ("GROUP_ID_FROM", "header:tenant"),
        ],
        router,
    );
    let report = poll(&f).await;
    assert_eq!(counts(&report.queues[0]), (6, 3, 0, 0, 3), "{report:?}");
    let groups = |fake: &FakeSqs| -> Vec<(String, String)> {
        fake.accepted()
            .iter()
            .filter_map(|s| Some((s.entry.group_id.clone()?, s.entry.body.clone())))
            .collect()
    };
    assert_eq!(
        groups(&default),
        [("acme".into(), "a1".into()), ("acme".into(), "a3".into())],
        "acme goes on on the default target"
    );
    assert_eq!(
        groups(&orders),
        [("beta".into(), "b0".into())],
        "only acme is held on orders"
    );
    assert_eq!(
        rig.broker.take_all(&rig.inbox).await,
        vec!["a0-retry-me", "a2", "a4"],
        "acme's orders stay whole and in order for the next poll"
    );
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_amazon_mq_batch_is_routed() {
    let q = queues("amazon-mq").await;
    let doc = json!({
        "targets": { "orders": q.orders, "eu": q.eu },
        "routes": [
            // aws:rmq events carry no routing key: this never matches.
            { "when": { "key": "routing_key", "exists": true }, "target": "eu" },
            { "when": { "key": "header", "name": "tenant", "equals": "globex" }, "target": "eu" },
            { "when": { "field": "/order", "exists": true }, "target": "orders" },
            { "when": { "key": "source_queue", "equals": "orders" }, "target": "default" }
        ],
        "unmatched": "drop",
        "attributes": { "attempt": { "key": "header", "name": "attempt", "type": "Number" } }
    })
    .to_string();
    let f = function(&[], routing::router(&q.default, SOURCE_KEYS, &doc).await);
    let event: Value = serde_json::from_str(include_str!("../events/rabbitmq-amazon-mq.json"))
        .expect("sample aws:rmq event");
    let out = f.handle_until(event, far(), None).await.expect("forwarded");
    assert_eq!(
        (out["received"].clone(), out["sent"].clone()),
        (3.into(), 3.into()),
        "{out}"
    );
    let sqs = client();
    let eu = drain(&sqs, &q.eu, 2).await;
    assert_eq!(eu.len(), 1);
    assert_eq!(eu[0].body(), Some(r#"{"order":1002,"total":"7.00"}"#));
    assert_eq!(attributes(&eu[0])["attempt"], number("2"));
    assert_eq!(
        routing::group_of(&eu[0]),
        None,
        "a standard queue: no group id"
    );
    let orders = drain(&sqs, &q.orders, 2).await;
    assert_eq!(orders.len(), 1);
    assert_eq!(orders[0].body(), Some(r#"{"order":1001,"total":"42.50"}"#));
    // No routing key in aws:rmq events: the group is the queue's.
    assert_eq!(routing::group_of(&orders[0]).as_deref(), Some("orders"));
    let default = drain(&sqs, &q.default, 2).await;
    assert_eq!(default.len(), 1, "the PNG, by its source queue");
    assert_eq!(default[0].body(), Some("iVBORw0KGgoA"));
}
