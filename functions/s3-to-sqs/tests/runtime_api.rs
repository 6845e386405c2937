//! The built function against a local Lambda runtime API: what Lambda
//! receives for each refusal the README documents (`errorType` and
//! `errorMessage` as the runtime posts them), and an answer for an event it
//! takes. Needs the local SQS endpoint (`SQS_TEST_ENDPOINT`) for its start.

use serde_json::json;
use sqs_forwarder::test_support::runtime_api::{Posted, init_error, past_deadline_ms, serving};
use sqs_forwarder::test_support::sample_event;

const BINARY: &str = env!("CARGO_BIN_EXE_s3-to-sqs");

#[tokio::test]
async fn lambda_gets_the_documented_error_types() {
    let (api, _function) = serving(BINARY, "s3-runtime-api").await;

    // An event it takes: the test event, answered.
    let answer = api.invoke(&sample_event("s3-test-event.json")).await;
    assert_eq!(answer.response()["testEvent"], true, "{answer:?}");

    // An event it cannot read.
    let posted = api
        .invoke(&json!({"Records": [{"eventSource": "aws:sqs", "eventVersion": "2.1"}]}))
        .await;
    let error = posted.error();
    assert_eq!(error.error_type, "S3ToSqs.InvalidEvent", "{posted:?}");
    assert!(
        error.error_message.contains("not an S3 event"),
        "{posted:?}"
    );
    assert!(matches!(posted, Posted::Error { .. }));

    // The deadline came before anything could be sent: not forwarded.
    let past = past_deadline_ms();
    let posted = api.invoke_until(&sample_event("s3-put.json"), past).await;
    let error = posted.error();
    assert_eq!(error.error_type, "S3ToSqs.NotForwarded", "{posted:?}");
    assert!(
        error
            .error_message
            .contains("1 of 1 S3 records were not forwarded")
            && error.error_message.contains("DeadlineExceeded"),
        "{posted:?}"
    );
}

#[tokio::test]
async fn a_bad_value_fails_the_init_with_the_documented_error_type() {
    let (error, exit) = init_error(
        BINARY,
        &[("QUEUE_URL", "http://127.0.0.1:9/1/q"), ("MODE", "objects")],
    )
    .await;
    assert_eq!(error.error_type, "S3ToSqs.InvalidConfiguration");
    assert_eq!(
        error.header.as_deref(),
        Some("S3ToSqs.InvalidConfiguration")
    );
    assert_eq!(
        error.error_message,
        "invalid configuration: MODE=\"objects\": one of: notification, lines"
    );
    assert_eq!(exit, Some(2));
}

#[tokio::test]
async fn bad_routing_rules_fail_the_init_naming_the_rule() {
    // s3-to-sqs offers the bucket, the object key and the event name, not
    // a Kinesis partition key.
    let (error, exit) = init_error(
        BINARY,
        &[
            ("QUEUE_URL", "http://127.0.0.1:9/1/q"),
            (
                "ROUTES",
                r#"{"routes": [{"when": {"key": "object_key", "suffix": ".csv"}, "target": "default"},
                               {"when": {"key": "partition_key", "equals": "p"}, "target": "default"}]}"#,
            ),
        ],
    )
    .await;
    assert_eq!(error.error_type, "S3ToSqs.InvalidConfiguration");
    assert!(
        error
            .error_message
            .starts_with("invalid configuration: ROUTES=")
            && error.error_message.contains("routes[1]")
            && error
                .error_message
                .contains("keys this function offers: bucket, object_key, event_name"),
        "{error:?}"
    );
    assert_eq!(exit, Some(2));
}
