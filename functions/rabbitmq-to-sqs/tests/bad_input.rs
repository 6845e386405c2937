//! Bad configuration and bad events for rabbitmq-to-sqs: every variable's
//! bad value names the variable, the value (a URL's password masked) and
//! what is allowed; a malformed `aws:rmq` event names the field at fault; a
//! message that cannot be sent fails the invocation (the batch goes back to
//! the broker), never dropped silently.

use std::time::Duration;

use rabbitmq_to_sqs::{Handler, HandlerError, Settings, VARIABLES};
use serde_json::{Value, json};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::test_support::FakeSqs;
use sqs_forwarder::test_support::{
    BadValue, assert_bad_values_are_named, assert_every_variable_has_a_case,
};
use sqs_forwarder::{Env, Forwarder, SendSettings};
use tokio::time::Instant;

const URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// (variable, bad value, other variables it needs, the value the error
/// shows, a word the `allowed` text must contain)
type Case = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
    &'static str,
);

const BAD: &[Case] = &[
    (
        "RABBITMQ_URL",
        "amqp://svc:Pw-NOT-SHOWN@broker:notaport/",
        &[("RABBITMQ_QUEUES", "q")],
        "amqp://svc:***@broker:notaport/",
        "amqp",
    ),
    (
        "RABBITMQ_PASSWORD_SECRET",
        "mq/svc",
        &[],
        "mq/svc",
        "RABBITMQ_URL",
    ),
    (
        "RABBITMQ_QUEUES",
        ",",
        &[("RABBITMQ_URL", URL)],
        ",",
        "queue",
    ),
    (
        "DELIVERY_MODE",
        "at-most-once",
        &[],
        "at-most-once",
        "auto-ack",
    ),
    ("RABBITMQ_PREFETCH", "65536", &[], "65536", "65535"),
    ("RABBITMQ_MAX_MESSAGES", "0", &[], "0", "10000000"),
    ("RABBITMQ_STOP_MARGIN_MS", "-1", &[], "-1", "900000"),
    ("RABBITMQ_CONNECT_TIMEOUT_MS", "10", &[], "10", "100"),
    ("RABBITMQ_HEARTBEAT_S", "3601", &[], "3601", "3600"),
    ("RABBITMQ_IDLE_MS", "5", &[], "5", "60000"),
    ("RABBITMQ_MAX_BATCH_BYTES", "1000", &[], "1000", "1048576"),
    (
        "DEDUPLICATION_ID_FROM",
        "body",
        &[],
        "body",
        "correlation-id",
    ),
    ("GROUP_ID_FROM", "header:", &[], "header:", "header:"),
    (
        "PROPERTY_ATTRIBUTES",
        "content-type,colour",
        &[],
        "content-type,colour",
        "routing-key",
    ),
    (
        "HEADER_ATTRIBUTES",
        "tenant,AWS.bad",
        &[],
        "tenant,AWS.bad",
        "attribute names",
    ),
];

/// The table as the shared checks take it.
fn cases() -> Vec<BadValue<'static>> {
    BAD.iter()
        .map(|&(variable, value, context, shown, allowed)| BadValue {
            variable,
            value,
            context,
            shown,
            allowed,
        })
        .collect()
}

#[test]
fn every_variable_has_a_bad_value_case() {
    assert_every_variable_has_a_case(VARIABLES, &cases());
}

#[test]
fn bad_values_name_the_variable_the_value_and_what_is_allowed() {
    for e in assert_bad_values_are_named(&cases(), Settings::from_env) {
        assert!(!e.to_string().contains("Pw-NOT-SHOWN"), "{e}");
    }
}

/// Accepts every entry and counts them.
fn function() -> Handler<FakeSqs> {
    let settings = Settings::from_env(&Env::from_pairs(&[])).expect("defaults");
    let forwarder = Forwarder::new(
        FakeSqs::new(),
        SendSettings::default(),
        EncodeRules::default(),
    );
    Handler::new(settings, forwarder, Duration::ZERO, None).expect("function")
}

fn sample() -> Value {
    let path = format!(
        "{}/../../events/rabbitmq-amazon-mq.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).expect("sample")).expect("json")
}

async fn handle(f: &Handler<FakeSqs>, event: Value) -> Result<Value, HandlerError> {
    f.handle_until(event, Instant::now() + Duration::from_secs(30), None)
        .await
}

fn sent(f: &Handler<FakeSqs>) -> usize {
    f.forwarder().transport().sent()
}

#[tokio::test]
async fn malformed_amazon_mq_events_name_the_field() {
    let f = function();
    let ok = handle(&f, sample()).await.expect("the sample forwards");
    assert_eq!(ok["sent"], 3);

    type Change = dyn Fn(&mut Value);
    let cases: &[(&str, &Change, &str)] = &[
        (
            "redelivered is a string",
            &|v| v["rmqMessagesByQueue"]["orders::/"][1]["redelivered"] = json!("no"),
            "rmqMessagesByQueue.orders::/[1].redelivered",
        ),
        (
            "the queue map is a list",
            &|v| v["rmqMessagesByQueue"] = json!([]),
            "rmqMessagesByQueue",
        ),
        (
            "a priority out of range",
            &|v| v["rmqMessagesByQueue"]["orders::/"][0]["basicProperties"]["priority"] = json!(-3),
            "rmqMessagesByQueue.orders::/[0].basicProperties.priority",
        ),
    ];
    for (what, change, path) in cases {
        let mut v = sample();
        change(&mut v);
        let f = function();
        let e = handle(&f, v).await.expect_err(what);
        let text = e.to_string();
        assert!(matches!(e, HandlerError::BadEvent(_)), "{what}: {text}");
        assert!(text.contains(path), "{what}: {text}");
        assert_eq!(sent(&f), 0, "{what}: nothing of a bad event is sent");
    }
}

#[tokio::test]
async fn a_message_that_cannot_be_read_fails_the_batch_not_silently() {
    // Bad base64 in one message: the others are sent, and the invocation
    // fails, so Lambda hands the batch back to the broker.
    let mut v = sample();
    v["rmqMessagesByQueue"]["orders::/"][1]["data"] = json!("%%% not base64");
    let f = function();
    let e = handle(&f, v).await.expect_err("one message unreadable");
    let text = e.to_string();
    assert!(
        matches!(
            e,
            HandlerError::Unsent {
                failed: 1,
                total: 3,
                permanent: 1,
                ..
            }
        ),
        "{text}"
    );
    assert!(text.contains("InvalidData"), "{text}");
    assert_eq!(sent(&f), 2);
}

#[tokio::test]
async fn events_from_elsewhere_are_refused_by_name() {
    let f = function();
    let e = handle(&f, json!({"eventSource": "aws:sqs", "Records": []}))
        .await
        .expect_err("not ours");
    assert!(e.to_string().contains("\"aws:sqs\""), "{e}");
    let e = handle(&f, json!({"Records": [{}]}))
        .await
        .expect_err("not ours");
    assert!(e.to_string().contains("Records"), "{e}");
    // A schedule without a broker configured says what to set.
    let e = handle(&f, json!({"detail-type": "Scheduled Event"}))
        .await
        .expect_err("no broker");
    assert!(matches!(e, HandlerError::NotConfigured), "{e}");
    assert!(e.to_string().contains("RABBITMQ_URL"), "{e}");
    // An empty batch sends nothing and says so.
    let r = handle(
        &f,
        json!({"eventSource": "aws:rmq", "rmqMessagesByQueue": {}}),
    )
    .await
    .expect("an empty batch");
    assert_eq!(r["received"], 0);
    assert_eq!(sent(&f), 0);
}
