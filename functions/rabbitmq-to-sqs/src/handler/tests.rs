use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Env, SendSettings};

use super::*;
use crate::mapping;

/// SQS for these tests: fails every entry whose body says "fail"
/// (`InternalError`, retryable) and records every call.
fn recorder() -> FakeSqs {
    FakeSqs::new().fail_where(
        |a| a.entry.body.contains("fail"),
        Reply::INTERNAL.with_message("boom"),
    )
}

fn handler(vars: &[(&str, &str)], fifo: bool) -> (Handler<FakeSqs>, FakeSqs) {
    let settings = Settings::from_env(&Env::from_pairs(vars)).expect("settings");
    let recorder = recorder();
    let mut send = SendSettings::default();
    send.retry.max_attempts = 1;
    let rules = EncodeRules {
        fifo,
        ..EncodeRules::default()
    };
    let f = Handler::new(
        settings,
        Forwarder::new(recorder.clone(), send, rules),
        std::time::Duration::from_millis(500),
        None,
    )
    .expect("function");
    (f, recorder)
}

/// [`Handler::new`] over a standard queue, without a Secrets Manager client.
fn on_a_standard_queue(settings: Settings) -> Result<Handler<FakeSqs>, ConfigError> {
    Handler::new(
        settings,
        Forwarder::new(recorder(), SendSettings::default(), EncodeRules::default()),
        std::time::Duration::ZERO,
        None,
    )
}

fn sample(name: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("sample event");
    serde_json::from_str(&text).expect("sample event is JSON")
}

#[test]
fn exactly_once_needs_a_fifo_target() {
    let settings = Settings::from_env(&Env::from_pairs(&[("DELIVERY_MODE", "exactly-once")]))
        .expect("settings");
    let e = on_a_standard_queue(settings).expect_err("standard target");
    assert_eq!(e.variable, "DELIVERY_MODE");
    let (f, _) = handler(&[("DELIVERY_MODE", "exactly-once")], true);
    assert_eq!(f.settings().mode, DeliveryMode::ExactlyOnce);
}

#[test]
fn a_secret_needs_a_client() {
    let settings = Settings::from_env(&Env::from_pairs(&[
        ("RABBITMQ_URL", "amqp://svc@localhost"),
        ("RABBITMQ_QUEUES", "q"),
        ("RABBITMQ_PASSWORD_SECRET", "mq/svc"),
    ]))
    .expect("settings");
    let e = on_a_standard_queue(settings).expect_err("no client");
    assert_eq!(e.variable, "RABBITMQ_PASSWORD_SECRET");
}

#[tokio::test]
async fn a_scheduled_event_without_a_broker_says_what_is_missing() {
    let (f, recorder) = handler(&[], false);
    for name in ["rabbitmq-schedule.json", "rabbitmq-scheduler-input.json"] {
        let e = f
            .handle(sample(name), u64::MAX)
            .await
            .expect_err("no broker configured");
        assert!(matches!(e, HandlerError::NotConfigured), "{name}: {e}");
        assert!(e.to_string().contains("RABBITMQ_URL"));
    }
    assert_eq!(recorder.call_count(), 0);
}

#[tokio::test]
async fn other_events_are_refused() {
    let (f, _) = handler(&[], false);
    let e = f
        .handle(
            serde_json::json!({"Records": [{"eventSource": "aws:sqs"}]}),
            u64::MAX,
        )
        .await
        .expect_err("records");
    assert!(matches!(e, HandlerError::BadEvent(_)));
    let e = f
        .handle(serde_json::json!({"eventSource": "aws:kafka"}), u64::MAX)
        .await
        .expect_err("kafka");
    assert!(e.to_string().contains("aws:kafka"));
}

#[tokio::test]
async fn an_amazon_mq_batch_is_forwarded_whole() {
    let (f, recorder) = handler(&[], false);
    let out = f
        .handle(sample("rabbitmq-amazon-mq.json"), u64::MAX)
        .await
        .expect("sent");
    assert_eq!(out["received"], 3);
    assert_eq!(out["sent"], 3);
    let bodies = recorder
        .seen()
        .iter()
        .map(|e| e.body.clone())
        .collect::<Vec<_>>();
    assert_eq!(bodies.len(), 3);
    assert!(bodies.contains(&r#"{"order":1001,"total":"42.50"}"#.to_owned()));
}

#[tokio::test]
async fn an_amazon_mq_batch_with_an_unsent_message_fails_whole() {
    let (f, _) = handler(&[], false);
    let mut event = sample("rabbitmq-amazon-mq.json");
    // A second queue whose message SQS refuses ("fail" in the body).
    event["rmqMessagesByQueue"]["refunds::/"] = serde_json::json!([{
        "basicProperties": {"deliveryMode": 2, "priority": 0, "bodySize": 4, "headers": {}},
        "redelivered": false,
        "data": "ZmFpbA=="
    }]);
    let e = f.handle(event, u64::MAX).await.expect_err("one unsent");
    match &e {
        HandlerError::Unsent {
            failed,
            total,
            permanent,
            codes,
        } => {
            assert_eq!((*failed, *total, *permanent), (1, 4, 0));
            assert_eq!(codes, "InternalError");
        }
        other => panic!("unexpected {other}"),
    }
}

#[tokio::test]
async fn exactly_once_fails_an_amazon_mq_batch_with_a_message_without_correlation_id() {
    let (f, recorder) = handler(&[("DELIVERY_MODE", "exactly-once")], true);
    let e = f
        .handle(sample("rabbitmq-amazon-mq.json"), u64::MAX)
        .await
        .expect_err("one message has no correlation id");
    match &e {
        HandlerError::Unsent {
            failed,
            permanent,
            codes,
            ..
        } => {
            assert_eq!((*failed, *permanent), (1, 1));
            assert_eq!(codes, mapping::MISSING_CORRELATION_ID);
        }
        other => panic!("unexpected {other}"),
    }
    assert!(e.to_string().contains("dead-letter exchange"));
    // The others went out, with their correlation ids as deduplication ids.
    assert_eq!(recorder.seen().len(), 2);
}

// ------------------------------------------------------------ routing

/// Rules over a standard default (`recorder`) and one extra target `g`.
fn routed(
    vars: &[(&str, &str)],
    doc: serde_json::Value,
    g_fifo: bool,
) -> Result<(Handler<FakeSqs>, FakeSqs, FakeSqs), ConfigError> {
    let settings = Settings::from_env(&Env::from_pairs(vars)).expect("settings");
    let routes = sqs_forwarder::route::Routes::parse(&doc.to_string(), crate::routing::SOURCE_KEYS)
        .expect("rules");
    let (default, g) = (recorder(), recorder());
    let forwarder = |fake: &FakeSqs, fifo: bool| {
        let rules = EncodeRules {
            fifo,
            ..EncodeRules::default()
        };
        Forwarder::new(fake.clone(), SendSettings::default(), rules)
    };
    let router = Router::new(
        routes,
        forwarder(&default, true),
        vec![forwarder(&g, g_fifo)],
    )
    .expect("router");
    let f = Handler::routed(settings, router, std::time::Duration::ZERO, None)?;
    Ok((f, default, g))
}

fn to_g() -> serde_json::Value {
    serde_json::json!({
        "targets": {"g": "https://sqs.us-east-1.amazonaws.com/1/g.fifo"},
        "routes": [
            {"when": {"key": "header", "name": "tenant", "equals": "globex"}, "target": "g"},
            {"when": {"field": "/order", "exists": true}, "target": "default"}
        ],
        "unmatched": "drop"
    })
}

#[test]
fn exactly_once_needs_every_target_fifo() {
    let once = [("DELIVERY_MODE", "exactly-once")];
    let e = routed(&once, to_g(), false).expect_err("g is standard");
    assert_eq!(e.variable, "DELIVERY_MODE");
    assert!(e.allowed.contains("ROUTES target \"g\""), "{e}");
    assert!(routed(&once, to_g(), true).is_ok());
}

#[tokio::test]
async fn an_amazon_mq_batch_goes_where_the_rules_say() {
    let (f, default, g) = routed(&[], to_g(), false).expect("function");
    let out = f
        .handle(sample("rabbitmq-amazon-mq.json"), u64::MAX)
        .await
        .expect("sent");
    // acme's order to the default, globex's to g, the PNG matches no route.
    assert_eq!(
        (out["received"].clone(), out["sent"].clone()),
        (3.into(), 2.into())
    );
    assert_eq!(out["dropped"], 1, "{out}");
    let bodies = |fake: &FakeSqs| fake.accepted_bodies();
    assert_eq!(bodies(&default), [r#"{"order":1001,"total":"42.50"}"#]);
    assert_eq!(bodies(&g), [r#"{"order":1002,"total":"7.00"}"#]);
    // The default is FIFO: its group is the queue's (no routing key in
    // aws:rmq events); g is standard: no ids.
    assert_eq!(
        default.accepted()[0].entry.group_id.as_deref(),
        Some("orders")
    );
    assert_eq!(g.accepted()[0].entry.group_id, None);
    assert_eq!(g.accepted()[0].entry.deduplication_id, None);
}

#[tokio::test]
async fn an_amazon_mq_message_the_rules_cannot_shape_fails_the_batch() {
    let mut doc = to_g();
    doc["unmatched"] = "default".into();
    doc["body"] = "/total".into();
    let (f, default, g) = routed(&[], doc, false).expect("function");
    let e = f
        .handle(sample("rabbitmq-amazon-mq.json"), u64::MAX)
        .await
        .expect_err("the PNG is no JSON");
    match &e {
        HandlerError::Unsent {
            failed,
            total,
            permanent,
            codes,
        } => {
            assert_eq!((*failed, *total, *permanent), (1, 3, 1));
            assert_eq!(codes, "ShapeFailed");
        }
        other => panic!("unexpected {other}"),
    }
    assert_eq!(default.accepted_bodies(), ["42.50"]);
    assert_eq!(g.accepted_bodies(), ["7.00"]);
}

#[tokio::test]
async fn a_message_the_client_cannot_read_whole_is_rejected_to_the_dead_letter_queue() {
    use crate::amqp::{self, nesting, tests as amqp_tests};
    use lapin::options::{QueueDeclareOptions, QueueDeleteOptions};
    use lapin::types::{AMQPValue, FieldTable};

    let broker = lapin::Connection::connect(&amqp_tests::url(), Default::default())
        .await
        .expect("lapin connects");
    let admin = broker.create_channel().await.expect("channel");
    let stamp = format!("{}-{}", std::process::id(), deadline_ms());
    let (q, dlq) = (format!("rmq-deep-{stamp}"), format!("rmq-deep-dlq-{stamp}"));
    admin
        .queue_declare(
            dlq.as_str().into(),
            QueueDeclareOptions::default(),
            FieldTable::default(),
        )
        .await
        .expect("dlq");
    let mut args = FieldTable::default();
    args.insert(
        "x-dead-letter-exchange".into(),
        AMQPValue::LongString("".into()),
    );
    args.insert(
        "x-dead-letter-routing-key".into(),
        AMQPValue::LongString(dlq.as_str().into()),
    );
    admin
        .queue_declare(q.as_str().into(), QueueDeclareOptions::default(), args)
        .await
        .expect("queue");
    let publisher = amqp::open(&amqp_tests::url().parse().expect("url"), "deep-publisher")
        .await
        .expect("connects");
    let ch = publisher.create_channel().await.expect("channel");
    amqp_tests::publish_raw(&ch, &q, &nesting::nested(20_000), "deep", b"too deep").await;
    amqp_tests::publish_raw(&ch, &q, &nesting::nested(2), "fine", b"fine").await;
    amqp_tests::wait_ready(&ch, &q, 2).await;

    let (f, sqs) = handler(
        &[
            ("RABBITMQ_URL", &amqp_tests::url()),
            ("RABBITMQ_QUEUES", &q),
        ],
        false,
    );
    let report = f
        .handle(sample("rabbitmq-schedule.json"), deadline_ms())
        .await
        .expect("poll");
    let r = &report["queues"][0];
    assert_eq!(r["received"], 2, "{report}");
    assert_eq!(r["sent"], 1, "{report}");
    assert_eq!(r["rejected"], 1, "{report}");
    assert_eq!(sqs.accepted_bodies(), vec!["fine".to_owned()]);
    // Read back with this client: lapin's recursive parser would overflow
    // its thread's stack on these headers and abort the test process.
    amqp_tests::wait_ready(&ch, &dlq, 1).await;
    let dead = ch
        .basic_get(&dlq, true)
        .await
        .expect("get")
        .expect("the unreadable message was dead-lettered");
    assert_eq!(dead.data, b"too deep");
    assert!(dead.fault.is_some());
    for name in [&q, &dlq] {
        let _ = admin
            .queue_delete(name.as_str().into(), QueueDeleteOptions::default())
            .await;
    }
}

/// A Lambda deadline a minute from now, in milliseconds since the epoch.
fn deadline_ms() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    now + 60_000
}
