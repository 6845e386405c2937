//! The built function against a local Lambda runtime API: what Lambda
//! receives for each refusal the README documents (`errorType` and
//! `errorMessage` as the runtime posts them), and an answer for an event it
//! takes. Needs the local SQS endpoint (`SQS_TEST_ENDPOINT`) for its start.

use std::time::Duration;

use serde_json::json;
use sqs_forwarder::test_support::runtime_api::{
    FunctionProcess, Posted, RuntimeApi, local_env, local_queue,
};

const BINARY: &str = env!("CARGO_BIN_EXE_s3-to-sqs");

fn sample(name: &str) -> serde_json::Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("sample")).expect("json")
}

#[tokio::test]
async fn lambda_gets_the_documented_error_types() {
    let (queue, endpoint) = local_queue("s3-runtime-api").await;
    let api = RuntimeApi::start().await;
    let _function = FunctionProcess::spawn(BINARY, &api, &local_env(&queue, &endpoint));

    // An event it takes: the test event, answered.
    let answer = api.invoke(&sample("s3-test-event.json")).await;
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
    let past = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64
        - 1_000;
    let posted = api.invoke_until(&sample("s3-put.json"), past).await;
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
    let api = RuntimeApi::start().await;
    let mut function = FunctionProcess::spawn(
        BINARY,
        &api,
        &[("QUEUE_URL", "http://127.0.0.1:9/1/q"), ("MODE", "objects")],
    );
    let posted = api.next_posted(Duration::from_secs(60)).await;
    let Some(Posted::InitError(error)) = posted else {
        panic!("expected an init error, got {posted:?}");
    };
    assert_eq!(error.error_type, "S3ToSqs.InvalidConfiguration");
    assert_eq!(
        error.header.as_deref(),
        Some("S3ToSqs.InvalidConfiguration")
    );
    assert_eq!(
        error.error_message,
        "invalid configuration: MODE=\"objects\": one of: notification, lines"
    );
    assert_eq!(function.exit_code(Duration::from_secs(30)).await, Some(2));
}
