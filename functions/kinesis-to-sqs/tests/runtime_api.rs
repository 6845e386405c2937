//! The built function against a local Lambda runtime API: what Lambda
//! receives for each refusal the README documents (`errorType` and
//! `errorMessage` as the runtime posts them), and the answer to a batch.
//! Needs the local SQS endpoint (`SQS_TEST_ENDPOINT`) for its start.

use serde_json::json;
use sqs_forwarder::test_support::runtime_api::{
    init_error, local_env, local_queue, past_deadline_ms, serving,
};
use sqs_forwarder::test_support::sample_event;

const BINARY: &str = env!("CARGO_BIN_EXE_kinesis-to-sqs");

#[tokio::test]
async fn lambda_gets_the_documented_error_types() {
    let (api, _function) = serving(BINARY, "kinesis-runtime-api").await;

    let answer = api.invoke(&sample_event("kinesis-small.json")).await;
    assert_eq!(
        answer.response(),
        &json!({"batchItemFailures": []}),
        "{answer:?}"
    );

    // A malformed event: the function's own error type, the field named.
    let mut bad = sample_event("kinesis-small.json");
    bad["Records"][1]["kinesis"]["data"] = json!("not base64!");
    let posted = api.invoke(&bad).await;
    let error = posted.error();
    assert_eq!(error.error_type, "KinesisToSqs.InvalidEvent", "{posted:?}");
    assert!(
        error
            .error_message
            .starts_with("malformed Kinesis event: [Records[1].kinesis.data]"),
        "{posted:?}"
    );
    let posted = api.invoke(&json!({"detail-type": "Scheduled Event"})).await;
    assert_eq!(
        posted.error().error_type,
        "KinesisToSqs.InvalidEvent",
        "{posted:?}"
    );

    // A failed record without a sequence number cannot be reported: the
    // deadline came first, and the record has none.
    let past = past_deadline_ms();
    let mut unnamed = sample_event("kinesis-small.json");
    unnamed["Records"][0]["kinesis"]["sequenceNumber"] = json!("");
    let posted = api.invoke_until(&unnamed, past).await;
    let error = posted.error();
    assert_eq!(
        error.error_type, "KinesisToSqs.NoSequenceNumber",
        "{posted:?}"
    );
    assert!(error.error_message.contains("record 0"), "{posted:?}");
}

#[tokio::test]
async fn a_bad_value_fails_the_init_with_the_documented_error_type() {
    let (error, exit) = init_error(
        BINARY,
        &[
            ("QUEUE_URL", "http://127.0.0.1:9/1/q"),
            ("BODY_FORMAT", "json"),
        ],
    )
    .await;
    assert_eq!(error.error_type, "KinesisToSqs.InvalidConfiguration");
    assert_eq!(
        error.error_message,
        "invalid configuration: BODY_FORMAT=\"json\": one of: raw, envelope"
    );
    assert_eq!(exit, Some(2));
}

#[tokio::test]
async fn a_queue_that_cannot_be_read_fails_the_init_as_start_failed() {
    let (_, endpoint) = local_queue("kinesis-runtime-api-unused").await;
    let missing = format!(
        "{endpoint}/123456789012/no-such-queue-{}",
        std::process::id()
    );
    let (error, exit) = init_error(BINARY, &local_env(&missing, &endpoint)).await;
    assert_eq!(error.error_type, "KinesisToSqs.StartFailed", "{error:?}");
    assert!(error.error_message.contains("no-such-queue"), "{error:?}");
    assert_eq!(exit, Some(2));
}

#[tokio::test]
async fn bad_routing_rules_fail_the_init_naming_the_rule() {
    // kinesis-to-sqs offers the partition key, not an S3 bucket.
    let (error, exit) = init_error(
        BINARY,
        &[
            ("QUEUE_URL", "http://127.0.0.1:9/1/q"),
            (
                "ROUTES",
                r#"{"routes": [{"when": {"key": "bucket", "equals": "b"}, "target": "default"}]}"#,
            ),
        ],
    )
    .await;
    assert_eq!(error.error_type, "KinesisToSqs.InvalidConfiguration");
    assert!(
        error
            .error_message
            .starts_with("invalid configuration: ROUTES=")
            && error.error_message.contains("routes[0]")
            && error.error_message.contains("partition_key"),
        "{error:?}"
    );
    assert_eq!(exit, Some(2));
}
