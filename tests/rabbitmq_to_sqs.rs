//! End-to-end: rabbitmq-to-sqs against the real RabbitMQ on this machine
//! (`RABBITMQ_TEST_URL`, default amqp://guest:guest@127.0.0.1:5672/%2f) and
//! the local SQS endpoint (also serving Secrets Manager).
//!
//! Every test uses its own RabbitMQ queues and SQS queues, so the tests can
//! run in parallel with each other and with other test binaries. Failures
//! of SQS are injected with fake transports; the broker is always real.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use aws_sdk_sqs::types::MessageSystemAttributeName;
use base64::Engine as _;
use forwarder_e2e::rabbitmq::{
    Broker, amqp_url, close_connection_named, fake_forwarder, far, function, poll, settings, unique,
};
use forwarder_e2e::{attributes, client, connect, create_queue, drain, endpoint};
use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use rabbitmq_to_sqs::broker::BrokerError;
use rabbitmq_to_sqs::drain::StopReason;
use rabbitmq_to_sqs::{Handler, HandlerError};
use serde_json::Value;
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Config, Forwarder, SqsTransport};
use tokio::time::Instant;

/// The workspace's fake SQS: fails bodies containing "retry-me" (retryable)
/// or "poison" (the message's fault), accepts the rest.
fn fake_sqs() -> FakeSqs {
    FakeSqs::new()
        .fail_where(
            |a| a.body().contains("poison"),
            Reply::INVALID.with_message("injected"),
        )
        .fail_where(
            |a| a.body().contains("retry-me"),
            Reply::INTERNAL.with_message("injected"),
        )
}

/// (group id, body) of the FIFO messages the fake accepted, in order.
fn groups(fake: &FakeSqs) -> Vec<(String, String)> {
    fake.accepted()
        .iter()
        .filter_map(|s| Some((s.group_id.clone()?, s.body.clone())))
        .collect()
}

// ---------------------------------------------------------------- broker

/// The URL with another password (or none).
fn url_with_password(password: Option<&str>) -> String {
    let url = amqp_url();
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (userinfo, host) = rest
        .rsplit_once('@')
        .expect("user info in RABBITMQ_TEST_URL");
    let user = userinfo.split(':').next().unwrap_or("guest");
    match password {
        Some(p) => format!("{scheme}://{user}:{p}@{host}"),
        None => format!("{scheme}://{user}@{host}"),
    }
}

fn text_header(v: &str) -> AMQPValue {
    AMQPValue::LongString(LongString::from(v))
}

// ---------------------------------------------------------------- function

async fn sqs_forwarder(url: &str) -> Forwarder<SqsTransport> {
    let config =
        Config::from_lookup(|k| (k == "QUEUE_URL").then(|| url.to_owned())).expect("config");
    connect(&config, sqs_forwarder::GroupIds::FromSource).await
}

// ---------------------------------------------------------------- tests

#[tokio::test(flavor = "multi_thread")]
async fn a_scheduled_poll_forwards_every_message_with_its_properties() {
    let mut broker = Broker::new().await;
    let queue = broker.queue("rmq-e2e-all", false).await;
    let sqs = client();
    let url = create_queue(&sqs, "rmq-e2e-all", &[]).await;

    for i in 0..30u32 {
        let mut headers = FieldTable::default();
        headers.insert(
            "tenant".into(),
            text_header(if i % 2 == 0 { "acme" } else { "globex" }),
        );
        headers.insert("attempt".into(), AMQPValue::LongInt(i as i32));
        headers.insert("urgent".into(), AMQPValue::Boolean(i % 5 == 0));
        let mut trace = FieldTable::default();
        trace.insert("span".into(), AMQPValue::LongLongInt(i64::from(i)));
        headers.insert("trace".into(), AMQPValue::FieldTable(trace));
        let mut props = BasicProperties::default()
            .with_content_type(ShortString::from("application/json"))
            .with_headers(headers);
        if i % 3 == 0 {
            props = props
                .with_correlation_id(ShortString::from(format!("corr-{i}")))
                .with_message_id(ShortString::from(format!("msg-{i}")));
        }
        broker
            .publish(
                &queue,
                format!("{{\"n\":{i},\"text\":\"grüße 🌍\"}}").as_bytes(),
                props,
            )
            .await;
    }
    broker
        .publish(
            &queue,
            &[0xF3, 0x89, 0x9A, 0xC2, 0x00, 0xFF],
            BasicProperties::default(),
        )
        .await;

    let f = function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", &queue),
            ("RABBITMQ_PREFETCH", "7"),
            (
                "PROPERTY_ATTRIBUTES",
                "content-type,routing-key,correlation-id",
            ),
        ],
        sqs_forwarder(&url).await,
    );
    let schedule: Value = serde_json::from_str(include_str!("../events/rabbitmq-schedule.json"))
        .expect("sample schedule");
    let out = f
        .handle_until(schedule, far(), None)
        .await
        .expect("scheduled poll");
    assert_eq!(out["queues"][0]["received"], 31, "{out}");
    assert_eq!(out["queues"][0]["sent"], 31, "{out}");
    assert_eq!(out["queues"][0]["stop"], "empty", "{out}");

    let received = drain(&sqs, &url, 31).await;
    assert_eq!(received.len(), 31);
    let mut seen = HashSet::new();
    for m in &received {
        let attrs = attributes(m);
        let body = m.body().expect("body");
        if let Some((_, v)) = attrs.get("sqs-forwarder.encoding") {
            assert_eq!(v, b"base64");
            assert_eq!(
                body,
                base64::engine::general_purpose::STANDARD
                    .encode([0xF3, 0x89, 0x9A, 0xC2, 0x00, 0xFF])
            );
            seen.insert(-1);
            continue;
        }
        let v: Value = serde_json::from_str(body).expect("JSON body, as published");
        let i = v["n"].as_i64().expect("n");
        assert_eq!(v["text"], "grüße 🌍");
        seen.insert(i);
        let s = |name: &str| {
            attrs
                .get(name)
                .map(|(t, v)| (t.clone(), String::from_utf8_lossy(v).into_owned()))
        };
        assert_eq!(
            s("amqp.content-type"),
            Some(("String".into(), "application/json".into()))
        );
        assert_eq!(
            s("amqp.routing-key"),
            Some(("String".into(), queue.clone()))
        );
        assert_eq!(
            s("tenant"),
            Some((
                "String".into(),
                if i % 2 == 0 { "acme" } else { "globex" }.into()
            ))
        );
        assert_eq!(s("attempt"), Some(("Number".into(), i.to_string())));
        assert_eq!(
            s("urgent"),
            Some(("String".into(), (i % 5 == 0).to_string()))
        );
        assert_eq!(
            s("trace"),
            Some(("String".into(), format!("{{\"span\":{i}}}")))
        );
        if i % 3 == 0 {
            assert_eq!(
                s("amqp.correlation-id"),
                Some(("String".into(), format!("corr-{i}")))
            );
        } else {
            assert_eq!(s("amqp.correlation-id"), None);
        }
    }
    assert_eq!(seen.len(), 31, "every message exactly once");
    assert_eq!(broker.ready(&queue).await, 0, "everything acked");
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn exactly_once_into_fifo_dedups_by_correlation_id_and_rejects_messages_without_one() {
    let mut broker = Broker::new().await;
    let queue = broker.queue("rmq-e2e-once", true).await;
    let sqs = client();
    let url = create_queue(&sqs, "rmq-e2e-once.fifo", &[]).await;

    let mut expected = Vec::new();
    for i in 0..10 {
        let body = format!("order-{i}");
        let props =
            BasicProperties::default().with_correlation_id(ShortString::from(format!("c-{i}")));
        broker.publish(&queue, body.as_bytes(), props).await;
        expected.push(body);
        if i == 3 {
            // A redelivery-like duplicate: same correlation id.
            let props = BasicProperties::default().with_correlation_id(ShortString::from("c-3"));
            broker.publish(&queue, b"order-3", props).await;
        }
        if i == 5 || i == 8 {
            broker.publish_text(&queue, &format!("no-id-{i}")).await;
        }
    }

    let f = function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", &queue),
            ("DELIVERY_MODE", "exactly-once"),
            ("RABBITMQ_PREFETCH", "4"),
        ],
        sqs_forwarder(&url).await,
    );
    let report = poll(&f).await;
    let q = &report.queues[0];
    assert_eq!(
        (q.received, q.sent, q.rejected, q.requeued),
        (13, 11, 2, 0),
        "{q:?}"
    );

    let received = drain(&sqs, &url, 11).await;
    let bodies: Vec<&str> = received.iter().map(|m| m.body().expect("body")).collect();
    assert_eq!(
        bodies, expected,
        "one copy each, in publish order (one group: the routing key)"
    );
    for m in &received {
        let attrs = m.attributes().expect("system attributes");
        let i = m.body().expect("body").trim_start_matches("order-");
        assert_eq!(
            attrs
                .get(&MessageSystemAttributeName::MessageDeduplicationId)
                .map(String::as_str),
            Some(format!("c-{i}").as_str())
        );
        assert_eq!(
            attrs
                .get(&MessageSystemAttributeName::MessageGroupId)
                .map(String::as_str),
            Some(queue.as_str())
        );
    }
    assert_eq!(broker.ready(&queue).await, 0);
    assert_eq!(
        broker.take_all(&format!("{queue}.dlq")).await,
        vec!["no-id-5", "no-id-8"],
        "messages without a correlation id go to the dead-letter exchange"
    );
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_failing_for_some_messages_leaves_exactly_those_in_rabbitmq() {
    let mut broker = Broker::new().await;
    let queue = broker.queue("rmq-e2e-fail", true).await;
    let mut ok = Vec::new();
    let mut retry = Vec::new();
    let mut poison = Vec::new();
    for i in 0..20 {
        let body = match i {
            2 | 7 | 11 | 17 => {
                retry.push(format!("retry-me-{i}"));
                format!("retry-me-{i}")
            }
            4 | 13 => {
                poison.push(format!("poison-{i}"));
                format!("poison-{i}")
            }
            _ => {
                ok.push(format!("ok-{i}"));
                format!("ok-{i}")
            }
        };
        broker.publish_text(&queue, &body).await;
    }

    let fake = fake_sqs();
    let f = function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", &queue),
            ("RABBITMQ_PREFETCH", "6"),
        ],
        fake_forwarder(fake.clone(), false),
    );
    let report = poll(&f).await;
    let q = &report.queues[0];
    assert_eq!(
        (q.received, q.sent, q.requeued, q.rejected, q.stop),
        (20, 14, 4, 2, StopReason::Empty),
        "{q:?}"
    );
    let mut accepted = fake.accepted_bodies();
    accepted.sort();
    ok.sort();
    assert_eq!(accepted, ok, "each good message once");
    assert_eq!(
        broker.take_all(&queue).await,
        retry,
        "exactly the messages SQS did not take are back in the queue, in order"
    );
    assert_eq!(
        broker.take_all(&format!("{queue}.dlq")).await,
        poison,
        "messages that can never be sent are dead-lettered"
    );
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_fifo_message_holds_back_the_rest_of_its_group() {
    let mut broker = Broker::new().await;
    let queue = broker.queue("rmq-e2e-group", false).await;
    // Tenant a's first message fails; its later ones come in later batches
    // (prefetch 4), where only the function's own bookkeeping can hold them.
    for (i, (tenant, body)) in [
        ("a", "a1-retry-me"),
        ("b", "b1"),
        ("b", "b2"),
        ("b", "b3"),
        ("a", "a2"),
        ("a", "a3"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut headers = FieldTable::default();
        headers.insert("tenant".into(), text_header(tenant));
        let props = BasicProperties::default()
            .with_headers(headers)
            .with_message_id(ShortString::from(format!("id-{i}")));
        broker.publish(&queue, body.as_bytes(), props).await;
    }
    let fake = fake_sqs();
    let f = function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", &queue),
            ("RABBITMQ_PREFETCH", "4"),
            ("GROUP_ID_FROM", "header:tenant"),
        ],
        fake_forwarder(fake.clone(), true),
    );
    let report = poll(&f).await;
    let q = &report.queues[0];
    assert_eq!(
        (q.received, q.sent, q.requeued, q.stop),
        (6, 3, 3, StopReason::Empty),
        "{q:?}"
    );
    let groups = groups(&fake);
    assert_eq!(
        groups,
        vec![
            ("b".into(), "b1".into()),
            ("b".into(), "b2".into()),
            ("b".into(), "b3".into())
        ]
    );
    assert_eq!(
        broker.take_all(&queue).await,
        vec!["a1-retry-me", "a2", "a3"],
        "group a stays whole and in order for the next poll"
    );
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_dropped_mid_drain_loses_nothing() {
    let mut broker = Broker::new().await;
    let queue = broker.queue("rmq-e2e-drop", false).await;
    let all: Vec<String> = (0..30).map(|i| format!("drop-{i}")).collect();
    for body in &all {
        broker.publish_text(&queue, body).await;
    }
    let vars = [
        ("RABBITMQ_URL", amqp_url()),
        ("RABBITMQ_QUEUES", queue.clone()),
        ("RABBITMQ_PREFETCH", "5".to_owned()),
    ];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();

    // The broker closes the function's connection while SQS takes batch 2.
    let name = unique("rmq-e2e-drop-conn");
    let hook_name = name.clone();
    // Call 1 counted from 0: the second batch.
    let fake = fake_sqs().before_call(1, move || {
        let hook_name = hook_name.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || close_connection_named(&hook_name))
                .await
                .expect("hook");
        })
    });
    let f = function(&vars, fake_forwarder(fake.clone(), false)).with_connection_name(name);
    let e = f
        .poll_until(far(), None)
        .await
        .expect_err("the connection was closed");
    let HandlerError::Poll { sent, report, .. } = &e else {
        panic!("unexpected error: {e}");
    };
    assert!(*sent < 30, "{e}");
    assert_eq!(report.queues[0].stop, StopReason::Error);
    assert!(!e.to_string().contains("guest:guest"), "{e}");

    // The next poll takes what was not acked, including batch 2 again.
    let again = fake_sqs();
    let f = function(&vars, fake_forwarder(again.clone(), false));
    let report = poll(&f).await;
    assert_eq!(report.queues[0].stop, StopReason::Empty);
    let mut everything: Vec<String> = fake.accepted_bodies();
    everything.extend(again.accepted_bodies());
    let distinct: HashSet<&String> = everything.iter().collect();
    assert_eq!(
        distinct.len(),
        30,
        "every message reached SQS at least once"
    );
    assert!(everything.len() >= 30);
    assert_eq!(broker.ready(&queue).await, 0);
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deadline_reached_mid_drain_stops_cleanly() {
    let mut broker = Broker::new().await;
    let queue = broker.queue("rmq-e2e-deadline", false).await;
    let all: Vec<String> = (0..20).map(|i| format!("late-{i:02}")).collect();
    for body in &all {
        broker.publish_text(&queue, body).await;
    }
    // The first SQS call ends after the stop instant: the batch in hand is
    // settled, and no other is taken.
    let fake = fake_sqs().delay(Duration::from_millis(2500));
    let f = function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", &queue),
            ("RABBITMQ_PREFETCH", "5"),
        ],
        fake_forwarder(fake.clone(), false),
    );
    let stop_at = Instant::now() + Duration::from_secs(2);
    let report = f.poll_until(stop_at, None).await.expect("a clean stop");
    let q = &report.queues[0];
    assert_eq!(q.stop, StopReason::Deadline, "{q:?}");
    let accepted = fake.accepted_bodies();
    assert!(!accepted.is_empty() && accepted.len() < 20, "{q:?}");
    assert_eq!(q.sent as usize, accepted.len());
    let left = broker.take_all(&queue).await;
    assert_eq!(
        left.len() + accepted.len(),
        20,
        "nothing lost, nothing doubled"
    );
    let mut union: Vec<String> = left.into_iter().chain(accepted).collect();
    union.sort();
    assert_eq!(union, all);
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_queue_returns_at_once() {
    let mut broker = Broker::new().await;
    let queue = broker.queue("rmq-e2e-empty", false).await;
    let other = broker.queue("rmq-e2e-empty2", false).await;
    let fake = fake_sqs();
    let f = function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", &format!("{queue},{other}")),
        ],
        fake_forwarder(fake.clone(), false),
    );
    let report = poll(&f).await;
    assert_eq!(report.queues.len(), 2);
    for q in &report.queues {
        assert_eq!((q.received, q.stop), (0, StopReason::Empty), "{q:?}");
    }
    assert_eq!(fake.call_count(), 0, "no SQS call");
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_urls_and_wrong_passwords_fail_clearly_without_the_password() {
    let broker = Broker::new().await;
    let fake = fake_sqs();
    let refused = |url: &str| {
        function(
            &[("RABBITMQ_URL", url), ("RABBITMQ_QUEUES", "any")],
            fake_forwarder(fake.clone(), false),
        )
    };

    let f = refused(&url_with_password(Some("Wr0ng-Pa55word")));
    let e = f.poll_until(far(), None).await.expect_err("wrong password");
    let shown = format!("{e} {e:?}");
    assert!(
        matches!(e, HandlerError::Broker(BrokerError::AccessRefused { .. })),
        "{shown}"
    );
    assert!(shown.contains("refused the login"), "{shown}");
    assert!(shown.contains(":***@"), "{shown}");
    assert!(!shown.contains("Wr0ng-Pa55word"), "{shown}");

    let f = refused("amqp://guest:S3cret-Pw%2Fx@127.0.0.1:1/%2f");
    let e = f
        .poll_until(far(), None)
        .await
        .expect_err("nothing listens");
    let shown = format!("{e} {e:?}");
    assert!(
        matches!(e, HandlerError::Broker(BrokerError::Connect { .. })),
        "{shown}"
    );
    assert!(
        shown.contains("amqp://guest:***@127.0.0.1:1/%2f"),
        "{shown}"
    );
    assert!(!shown.contains("S3cret"), "{shown}");

    let f = refused(&format!(
        "{}nope",
        url_with_password(Some("guest")).trim_end_matches("%2f")
    ));
    let e = f.poll_until(far(), None).await.expect_err("no such vhost");
    assert!(e.to_string().contains("nope"), "{e}");

    let f = function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", "rmq-e2e-does-not-exist"),
        ],
        fake_forwarder(fake.clone(), false),
    );
    let e = f.poll_until(far(), None).await.expect_err("no such queue");
    assert!(e.to_string().contains("NOT_FOUND"), "{e}");
    assert!(e.to_string().contains("rmq-e2e-does-not-exist"), "{e}");
    broker.cleanup().await;
}

fn secrets_client() -> aws_sdk_secretsmanager::Client {
    let conf = aws_sdk_secretsmanager::Config::builder()
        .behavior_version(aws_sdk_secretsmanager::config::BehaviorVersion::latest())
        .region(aws_sdk_secretsmanager::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_secretsmanager::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .endpoint_url(endpoint())
        .build();
    aws_sdk_secretsmanager::Client::from_conf(conf)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_password_can_come_from_secrets_manager() {
    let mut broker = Broker::new().await;
    let queue = broker.queue("rmq-e2e-secret", false).await;
    for i in 0..3 {
        broker.publish_text(&queue, &format!("s-{i}")).await;
    }
    let sm = secrets_client();
    let good = unique("rmq-e2e/good");
    let password = amqp_url()
        .split_once("://")
        .and_then(|(_, r)| r.rsplit_once('@'))
        .and_then(|(u, _)| u.split_once(':'))
        .map(|(_, p)| p.to_owned())
        .expect("password in RABBITMQ_TEST_URL");
    sm.create_secret()
        .name(&good)
        .secret_string(serde_json::json!({ "password": password }).to_string())
        .send()
        .await
        .expect("create secret");
    let bad = unique("rmq-e2e/bad");
    sm.create_secret()
        .name(&bad)
        .secret_string("Not-The-Pw-42")
        .send()
        .await
        .expect("create secret");

    let with_secret = |secret: &str, fake: FakeSqs| {
        Handler::new(
            settings(&[
                ("RABBITMQ_URL", &url_with_password(None)),
                ("RABBITMQ_QUEUES", &queue),
                ("RABBITMQ_PASSWORD_SECRET", secret),
                ("RABBITMQ_IDLE_MS", "1000"),
            ]),
            fake_forwarder(fake, false),
            Duration::from_millis(200),
            Some(sm.clone()),
        )
        .expect("function")
    };

    let fake = fake_sqs();
    let e = with_secret(&bad, fake.clone())
        .poll_until(far(), None)
        .await
        .expect_err("wrong password in the secret");
    let shown = format!("{e} {e:?}");
    assert!(
        matches!(e, HandlerError::Broker(BrokerError::AccessRefused { .. })),
        "{shown}"
    );
    assert!(!shown.contains("Not-The-Pw-42"), "{shown}");

    let e = with_secret("rmq-e2e/missing", fake.clone())
        .poll_until(far(), None)
        .await
        .expect_err("no such secret");
    assert!(
        matches!(e, HandlerError::Broker(BrokerError::Secret { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("rmq-e2e/missing"), "{e}");

    let report = with_secret(&good, fake.clone())
        .poll_until(far(), None)
        .await
        .expect("the secret's password works");
    assert_eq!(report.queues[0].sent, 3);
    let mut accepted = fake.accepted_bodies();
    accepted.sort();
    assert_eq!(accepted, vec!["s-0", "s-1", "s-2"]);
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn auto_ack_forwards_and_forgets() {
    let mut broker = Broker::new().await;
    let queue = broker.queue("rmq-e2e-autoack", false).await;
    for i in 0..12 {
        let body = if i % 4 == 0 {
            format!("retry-me-{i}")
        } else {
            format!("fine-{i}")
        };
        broker.publish_text(&queue, &body).await;
    }
    let fake = fake_sqs();
    let f = function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", &queue),
            ("DELIVERY_MODE", "auto-ack"),
            ("RABBITMQ_PREFETCH", "5"),
            ("RABBITMQ_MAX_MESSAGES", "10"),
        ],
        fake_forwarder(fake.clone(), false),
    );
    let report = poll(&f).await;
    let q = &report.queues[0];
    assert_eq!(
        (q.received, q.sent, q.lost, q.stop),
        (10, 7, 3, StopReason::MaxMessages),
        "{q:?}"
    );
    assert_eq!(
        broker.take_all(&queue).await,
        vec!["fine-10", "fine-11"],
        "failed messages are gone (no guarantee); the budget is honoured exactly"
    );
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_amazon_mq_batch_lands_in_sqs_with_its_properties() {
    let sqs = client();
    let url = create_queue(&sqs, "rmq-e2e-amazon-mq", &[]).await;
    let f = function(
        &[("PROPERTY_ATTRIBUTES", "content-type,message-id,type")],
        sqs_forwarder(&url).await,
    );
    let event: Value = serde_json::from_str(include_str!("../events/rabbitmq-amazon-mq.json"))
        .expect("sample aws:rmq event");
    let out = f.handle_until(event, far(), None).await.expect("forwarded");
    assert_eq!(out["sent"], 3, "{out}");
    let received = drain(&sqs, &url, 3).await;
    assert_eq!(received.len(), 3);
    let by_body: BTreeMap<String, _> = received
        .iter()
        .map(|m| (m.body().expect("body").to_owned(), attributes(m)))
        .collect();
    let first = &by_body[r#"{"order":1001,"total":"42.50"}"#];
    assert_eq!(first["tenant"], ("String".into(), b"acme".to_vec()));
    assert_eq!(first["attempt"], ("Number".into(), b"1".to_vec()));
    assert_eq!(
        first["amqp.message-id"],
        ("String".into(), b"msg-1001".to_vec())
    );
    assert_eq!(
        first["amqp.type"],
        ("String".into(), b"order.created".to_vec())
    );
    assert_eq!(
        first["amqp.content-type"],
        ("String".into(), b"application/json".to_vec())
    );
    let png = by_body
        .iter()
        .find(|(_, a)| a.contains_key("sqs-forwarder.encoding"))
        .expect("the binary body arrives base64-encoded and marked");
    assert_eq!(png.0, "iVBORw0KGgoA");
}

/// A dead-lettered message (RabbitMQ's `x-death`, `x-first-death-*`, ...
/// on top of the publisher's headers, one of them a name SQS refuses) with
/// a routing key longer than a FIFO group id may be: every one reaches SQS,
/// nine attributes of their own and the rest in `amqp.headers`, its group id
/// hashed. (Before: rejected as `TooManyAttributes` / `InvalidAttributeName`
/// / `InvalidGroupId`, and without a dead-letter exchange, gone.)
#[tokio::test(flavor = "multi_thread")]
async fn headers_never_cost_a_message_even_dead_lettered_with_a_long_routing_key() {
    let mut broker = Broker::new().await;
    // The dead-letter routing key is "<queue>.dlq": well over 128 characters.
    let queue = broker
        .queue(&format!("rmq-e2e-fold-{}", "k".repeat(140)), true)
        .await;
    let dlq = format!("{queue}.dlq");
    assert!(dlq.len() > 128);
    for i in 0..3 {
        let mut headers = BTreeMap::new();
        for (name, value) in [
            ("tenant", "acme"),
            ("trace-id", "t-1"),
            ("region", "eu"),
            ("has space", "refused by SQS as a name"),
            ("AWS.trace", "reserved by SQS"),
        ] {
            headers.insert(ShortString::from(name), text_header(value));
        }
        headers.insert(ShortString::from("attempt"), AMQPValue::LongInt(i));
        let props = BasicProperties::default()
            .with_message_id(ShortString::from(format!("m-{i}")))
            .with_headers(FieldTable::from(headers));
        broker
            .publish(&queue, format!("dead-{i}").as_bytes(), props)
            .await;
    }
    // Dead-letter them for real: exactly-once rejects messages without a
    // correlation id, and the queue's dead-letter exchange takes them.
    let rejecting = function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", &queue),
            ("DELIVERY_MODE", "exactly-once"),
        ],
        fake_forwarder(fake_sqs(), true),
    );
    let q = poll(&rejecting).await.queues[0].clone();
    assert_eq!((q.received, q.rejected), (3, 3), "{q:?}");
    assert_eq!(broker.ready(&dlq).await, 3);

    // Now drain the dead-letter queue into a FIFO queue, HEADER_ATTRIBUTES=all.
    let sqs = client();
    let url = create_queue(&sqs, "rmq-e2e-fold.fifo", &[]).await;
    let f = function(
        &[("RABBITMQ_URL", &amqp_url()), ("RABBITMQ_QUEUES", &dlq)],
        sqs_forwarder(&url).await,
    );
    let q = poll(&f).await.queues[0].clone();
    assert_eq!((q.received, q.sent, q.rejected), (3, 3, 0), "{q:?}");
    assert_eq!(broker.ready(&dlq).await, 0);

    let received = drain(&sqs, &url, 3).await;
    let mut bodies: Vec<&str> = received.iter().map(|m| m.body().expect("body")).collect();
    bodies.sort_unstable();
    assert_eq!(bodies, ["dead-0", "dead-1", "dead-2"]);
    for m in &received {
        let attrs = attributes(m);
        // amqp.routing-key, five publisher headers and x-death,
        // x-first-death-queue, -reason of their own (x-first-death-exchange
        // is empty, the default exchange: no SQS form), then amqp.headers.
        assert_eq!(attrs.len(), 9, "{:?}", attrs.keys());
        let (kind, folded) = attrs.get("amqp.headers").expect("the folded headers");
        assert_eq!(kind, "String");
        let folded: Value = serde_json::from_slice(folded).expect("JSON");
        let folded = folded.as_object().expect("an object");
        // Every header is there, in an attribute of its own or folded.
        let mut names: HashSet<&str> = attrs.keys().map(String::as_str).collect();
        names.extend(folded.keys().map(String::as_str));
        for h in [
            "tenant",
            "trace-id",
            "region",
            "has space",
            "AWS.trace",
            "attempt",
            "x-death",
            "x-first-death-queue",
            "x-first-death-reason",
        ] {
            assert!(names.contains(h), "{h} is missing: {names:?}");
        }
        assert_eq!(folded["has space"], "refused by SQS as a name");
        assert_eq!(folded["AWS.trace"], "reserved by SQS");
        // The group id: the routing key, hashed (it is too long for SQS).
        let group = m
            .attributes()
            .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId))
            .expect("a group id");
        assert!(group.starts_with("sha256:") && group.len() == 71, "{group}");
    }
    broker.cleanup().await;
}
