//! Fuzzing with proptest, in the normal test run: arbitrary JSON as an
//! invocation, arbitrary `aws:rmq` batches (bad base64, odd headers and
//! properties) through the handler with a fake SQS, and the mapping of
//! arbitrary AMQP and JSON header values, and arbitrary batches through
//! routing rules over two targets. No panic; never more messages sent than
//! received; a batch with a message not sent fails.
//! `PROPTEST_CASES` sets the number of cases (default 64 here).

use std::time::Duration;

use lapin::types::{AMQPValue, DecimalValue, FieldArray, FieldTable, LongString, ShortString};
use proptest::prelude::*;
use rabbitmq_to_sqs::mapping::{FieldValue, amqp_value, json_value};
use rabbitmq_to_sqs::routing::SOURCE_KEYS;
use rabbitmq_to_sqs::{Handler, HandlerError, Settings};
use serde_json::{Value, json};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::route::{Router, Routes};
use sqs_forwarder::test_support::{FakeSqs, proptest_cases};
use sqs_forwarder::{Env, Forwarder, SendSettings};
use tokio::time::Instant;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: proptest_cases(64),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn function(vars: &[(&str, &str)], fifo: bool) -> Handler<FakeSqs> {
    let settings = Settings::from_env(&Env::from_pairs(vars)).expect("settings");
    let rules = EncodeRules {
        fifo,
        content_based_deduplication: fifo.then_some(false),
        ..EncodeRules::default()
    };
    let forwarder = Forwarder::new(FakeSqs::new(), SendSettings::default(), rules);
    Handler::new(settings, forwarder, Duration::ZERO, None).expect("function")
}

/// Over routing rules reading every key this function offers and shaping
/// every way: a default and one extra target, each FIFO or not.
fn routed_function(fifo: (bool, bool)) -> (Handler<FakeSqs>, FakeSqs, FakeSqs) {
    let doc = json!({
        "targets": {"other": "https://sqs.us-east-1.amazonaws.com/1/other"},
        "filter": [{"key": "header", "name": "skip", "exists": false}],
        "routes": [
            {"when": {"key": "routing_key", "exists": true}, "target": "other"},
            {"when": {"key": "header", "name": "tenant", "prefix": "a"}, "target": "other"},
            {"when": {"key": "source_queue", "equals": "b"}, "target": "default"},
            {"when": {"field": "/type", "equals": "order"}, "target": "other"}
        ],
        "unmatched": "default",
        "body": "/payload",
        "attributes": {
            "n": {"field": "/n", "type": "Number"},
            "attempt": {"key": "header", "name": "attempt", "type": "Number"}
        },
        "attributes_from": "/attrs",
        "group_id": {"key": "header", "name": "tenant"}
    });
    let routes = Routes::parse(&doc.to_string(), SOURCE_KEYS).expect("rules");
    let forwarder = |fake: &FakeSqs, fifo: bool| {
        let rules = EncodeRules {
            fifo,
            content_based_deduplication: fifo.then_some(true),
            ..EncodeRules::default()
        };
        Forwarder::new(fake.clone(), SendSettings::default(), rules)
    };
    let (default, other) = (FakeSqs::new(), FakeSqs::new());
    let router = Router::new(
        routes,
        forwarder(&default, fifo.0),
        vec![forwarder(&other, fifo.1)],
    )
    .expect("router");
    let settings = Settings::from_env(&Env::from_pairs(&[])).expect("settings");
    let f = Handler::routed(settings, router, Duration::ZERO, None).expect("function");
    (f, default, other)
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::from),
        Just(json!("aws:rmq")),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("eventSource".to_owned()),
                    Just("rmqMessagesByQueue".to_owned()),
                    Just("basicProperties".to_owned()),
                    Just("data".to_owned()),
                    Just("headers".to_owned()),
                    Just("bytes".to_owned()),
                    Just("detail-type".to_owned()),
                    Just("Records".to_owned()),
                    Just("type".to_owned()),
                    Just("payload".to_owned()),
                    Just("attrs".to_owned()),
                    Just("n".to_owned()),
                    "[a-zA-Z:/]{1,8}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// An `aws:rmq` message with arbitrary data, headers and properties.
fn any_message() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..200).prop_map(|b| {
                use base64::Engine as _;
                json!(base64::engine::general_purpose::STANDARD.encode(b))
            }),
            // JSON data, for the routing rules' fields.
            any_json().prop_map(|v| {
                use base64::Engine as _;
                json!(base64::engine::general_purpose::STANDARD.encode(v.to_string()))
            }),
            ".{0,20}".prop_map(Value::from),
            Just(Value::Null),
        ],
        prop::collection::btree_map(
            prop_oneof![
                "[ -~]{1,12}",
                Just("tenant".to_owned()),
                Just("attempt".to_owned()),
                Just("skip".to_owned()),
            ],
            any_json(),
            0..6,
        ),
        prop::option::of(".{0,140}"),
        prop::option::of(".{0,140}"),
        prop::option::of(".{0,20}"),
        any::<u8>(),
        any::<bool>(),
    )
        .prop_map(
            |(data, headers, correlation, message_id, content_type, priority, redelivered)| {
                json!({
                    "basicProperties": {
                        "contentType": content_type,
                        "headers": headers,
                        "deliveryMode": 2,
                        "priority": priority,
                        "correlationId": correlation,
                        "messageId": message_id,
                        "bodySize": 0
                    },
                    "redelivered": redelivered,
                    "data": data
                })
            },
        )
}

fn any_amqp() -> impl Strategy<Value = AMQPValue> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(AMQPValue::Boolean),
        any::<i8>().prop_map(AMQPValue::ShortShortInt),
        any::<i64>().prop_map(AMQPValue::LongLongInt),
        any::<u64>().prop_map(AMQPValue::Timestamp),
        any::<f32>().prop_map(AMQPValue::Float),
        any::<f64>().prop_map(AMQPValue::Double),
        (any::<u8>(), any::<u32>())
            .prop_map(|(scale, value)| AMQPValue::DecimalValue(DecimalValue { scale, value })),
        "[ -~]{0,20}".prop_map(|s| AMQPValue::ShortString(ShortString::from(s))),
        prop::collection::vec(any::<u8>(), 0..40)
            .prop_map(|b| AMQPValue::LongString(LongString::from(b))),
        Just(AMQPValue::Void),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4)
                .prop_map(|v| AMQPValue::FieldArray(FieldArray::from(v))),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4).prop_map(|m| {
                let mut t = FieldTable::default();
                for (k, v) in m {
                    t.insert(ShortString::from(k), v);
                }
                AMQPValue::FieldTable(t)
            }),
        ]
    })
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt")
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_json_invocation_is_answered_or_refused(value in any_json()) {
        let f = function(&[], false);
        let stop = Instant::now() + Duration::from_secs(5);
        let amazon_mq = value.get("eventSource") == Some(&json!("aws:rmq"));
        match rt().block_on(f.handle_until(value, stop, None)) {
            Ok(report) => prop_assert!(amazon_mq && report.is_object()),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        if !amazon_mq {
            // Without a broker, only an aws:rmq batch can send anything.
            prop_assert_eq!(f.forwarder().transport().sent(), 0);
        }
    }

    #[test]
    fn any_amazon_mq_batch_is_sent_or_fails_naming_why(
        queues in prop::collection::btree_map("[a-z]{1,6}::[/a-z]{1,4}", prop::collection::vec(any_message(), 0..6), 0..3),
        fifo in any::<bool>(),
        headers in prop_oneof![Just("all"), Just("none"), Just("tenant,attempt")],
    ) {
        let n: usize = queues.values().map(Vec::len).sum();
        let event = json!({"eventSource": "aws:rmq", "rmqMessagesByQueue": queues});
        let f = function(&[("HEADER_ATTRIBUTES", headers)], fifo);
        let stop = Instant::now() + Duration::from_secs(5);
        let result = rt().block_on(f.handle_until(event, stop, None));
        let sent = f.forwarder().transport().sent();
        prop_assert!(sent <= n);
        match result {
            Ok(report) => {
                prop_assert_eq!(report["received"].as_u64(), Some(n as u64));
                prop_assert_eq!(report["sent"].as_u64().unwrap_or(0) + report["dropped"].as_u64().unwrap_or(0), n as u64);
            }
            Err(HandlerError::Unsent { failed, total, .. }) => {
                prop_assert_eq!(total, n);
                prop_assert!(failed >= 1 && sent + failed <= n);
            }
            Err(HandlerError::BadEvent(why)) => prop_assert!(why.contains("aws:rmq"), "{}", why),
            Err(other) => return Err(TestCaseError::fail(format!("unexpected: {other}"))),
        }
    }

    #[test]
    fn any_amazon_mq_batch_is_routed_or_fails_naming_why(
        queues in prop::collection::btree_map("[a-c]{1,2}::/", prop::collection::vec(any_message(), 0..6), 0..3),
        fifo in any::<(bool, bool)>(),
    ) {
        let n: usize = queues.values().map(Vec::len).sum();
        let event = json!({"eventSource": "aws:rmq", "rmqMessagesByQueue": queues});
        let (f, default, other) = routed_function(fifo);
        let stop = Instant::now() + Duration::from_secs(5);
        let result = rt().block_on(f.handle_until(event, stop, None));
        let sent = default.sent() + other.sent();
        prop_assert!(sent <= n);
        match result {
            Ok(report) => {
                prop_assert_eq!(report["received"].as_u64(), Some(n as u64));
                prop_assert_eq!(report["sent"].as_u64(), Some(sent as u64));
                prop_assert_eq!(sent as u64 + report["dropped"].as_u64().unwrap_or(0), n as u64);
            }
            Err(HandlerError::Unsent { failed, total, .. }) => {
                prop_assert_eq!(total, n);
                prop_assert!(failed >= 1 && sent + failed <= n);
            }
            Err(other) => return Err(TestCaseError::fail(format!("unexpected: {other}"))),
        }
    }

    #[test]
    fn any_header_value_maps(amqp in any_amqp(), json in any_json()) {
        let mapped = amqp_value(&amqp);
        if let FieldValue::Json(text) = &mapped {
            prop_assert!(serde_json::from_str::<Value>(text).is_ok(), "{}", text);
        }
        let _ = json_value(&json);
    }
}
