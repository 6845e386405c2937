//! The built function against a local Lambda runtime API: what Lambda
//! receives for each refusal the README documents (`errorType` and
//! `errorMessage` as the runtime posts them), and which events are ticks.
//! No broker: without `RABBITMQ_URL` a tick is `NotConfigured`, which shows
//! it was taken as one. Needs the local SQS endpoint (`SQS_TEST_ENDPOINT`).

use serde_json::json;
use sqs_forwarder::test_support::runtime_api::{Posted, init_error, past_deadline_ms, serving};
use sqs_forwarder::test_support::sample_event;

const BINARY: &str = env!("CARGO_BIN_EXE_rabbitmq-to-sqs");

fn error_type(posted: &Posted) -> &str {
    &posted.error().error_type
}

#[tokio::test]
async fn lambda_gets_the_documented_error_types() {
    let (api, _function) = serving(BINARY, "rmq-runtime-api").await;

    // Ticks: the samples, any JSON without a string eventSource or Records.
    for tick in [
        sample_event("rabbitmq-schedule.json"),
        sample_event("rabbitmq-scheduler-input.json"),
        json!({}),
        json!({"eventSource": 5}),
        json!([1, 2]),
        json!("tick"),
        json!(null),
    ] {
        let posted = api.invoke(&tick).await;
        assert_eq!(
            error_type(&posted),
            "RabbitmqToSqs.NotConfigured",
            "{tick}: {posted:?}"
        );
        assert!(
            posted.error().error_message.contains("RABBITMQ_URL"),
            "{posted:?}"
        );
    }

    // Refused: another source, or a Records batch.
    for (event, says) in [
        (
            json!({"eventSource": "aws:sqs", "Records": []}),
            "event source \"aws:sqs\"",
        ),
        (
            json!({"eventSource": "aws:kafka"}),
            "event source \"aws:kafka\"",
        ),
        (
            json!({"Records": [{"eventSource": "aws:s3"}]}),
            "a Records batch",
        ),
        (json!({"Records": null}), "a Records batch"),
        (
            json!({"eventSource": "aws:rmq", "rmqMessagesByQueue": 7}),
            "rmqMessagesByQueue",
        ),
    ] {
        let posted = api.invoke(&event).await;
        assert_eq!(
            error_type(&posted),
            "RabbitmqToSqs.BadEvent",
            "{event}: {posted:?}"
        );
        assert!(
            posted.error().error_message.contains(says),
            "{event}: {posted:?}"
        );
    }

    // An aws:rmq batch whose deadline came before anything could be sent.
    let past = past_deadline_ms();
    let posted = api
        .invoke_until(&sample_event("rabbitmq-amazon-mq.json"), past)
        .await;
    assert_eq!(
        error_type(&posted),
        "RabbitmqToSqs.MessagesNotSent",
        "{posted:?}"
    );
    assert!(
        posted
            .error()
            .error_message
            .contains("3 of 3 messages were not sent"),
        "{posted:?}"
    );
}

#[tokio::test]
async fn a_bad_value_fails_the_init_with_the_documented_error_type() {
    let (error, exit) = init_error(
        BINARY,
        &[
            ("QUEUE_URL", "http://127.0.0.1:9/1/q"),
            ("RABBITMQ_PREFETCH", "0"),
        ],
    )
    .await;
    assert_eq!(error.error_type, "RabbitmqToSqs.InvalidConfiguration");
    assert!(
        error
            .error_message
            .starts_with("invalid configuration: RABBITMQ_PREFETCH=\"0\""),
        "{error:?}"
    );
    assert_eq!(exit, Some(2));
}

#[tokio::test]
async fn bad_routing_rules_fail_the_init_naming_the_rule() {
    // rabbitmq-to-sqs offers the routing key, the source queue and headers,
    // not a Kinesis partition key.
    let (error, exit) = init_error(
        BINARY,
        &[
            ("QUEUE_URL", "http://127.0.0.1:9/1/q"),
            (
                "ROUTES",
                r#"{"routes": [{"when": {"key": "partition_key", "equals": "p"}, "target": "default"}]}"#,
            ),
        ],
    )
    .await;
    assert_eq!(error.error_type, "RabbitmqToSqs.InvalidConfiguration");
    assert!(
        error
            .error_message
            .starts_with("invalid configuration: ROUTES=")
            && error.error_message.contains("routes[0]")
            && error.error_message.contains("routing_key")
            && error.error_message.contains("source_queue"),
        "{error:?}"
    );
    assert_eq!(exit, Some(2));
}
