//! Cold-start discovery against a fake SQS endpoint: the per-message limit
//! comes from the queue, falls back to configuration when reading it is not
//! allowed, and can be lowered but not raised by configuration.

use std::collections::HashMap;

use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use sqs_forwarder::setup::startup::connect_with;
use sqs_forwarder::{Config, SetupError};
use wiremock::matchers::{header, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn client(uri: &str) -> aws_sdk_sqs::Client {
    let conf = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .endpoint_url(uri)
        .build();
    aws_sdk_sqs::Client::from_conf(conf)
}

fn config(vars: &[(&str, &str)]) -> Config {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|k| map.get(k).cloned()).expect("valid configuration")
}

fn json(body: &str) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "application/x-amz-json-1.0")
        .set_body_string(body)
}

fn error(status: u16, code: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("content-type", "application/x-amz-json-1.0")
        .insert_header("x-amzn-query-error", format!("{code};Sender").as_str())
        .set_body_string(format!(
            r#"{{"__type":"com.amazonaws.sqs#{code}","message":"{code} for this test"}}"#
        ))
}

async fn server_answering(target: &str, response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", target))
        .respond_with(response)
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn limit_is_read_from_the_queue_and_only_lowered_by_configuration() {
    let server = server_answering(
        "AmazonSQS.GetQueueAttributes",
        json(r#"{"Attributes":{"MaximumMessageSize":"262144"}}"#),
    )
    .await;
    let url = format!("{}/123456789012/q", server.uri());
    let f = connect_with(
        client(&server.uri()),
        &config(&[("QUEUE_URL", &url)]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect("connect");
    assert_eq!(f.settings().limits.max_message_bytes, 262_144);
    assert_eq!(
        f.settings().limits.max_request_bytes,
        1_048_576,
        "the request cap does not shrink"
    );
    let f = connect_with(
        client(&server.uri()),
        &config(&[("QUEUE_URL", &url), ("MAX_MESSAGE_BYTES", "100000")]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect("connect");
    assert_eq!(f.settings().limits.max_message_bytes, 100_000);
    let f = connect_with(
        client(&server.uri()),
        &config(&[("QUEUE_URL", &url), ("MAX_MESSAGE_BYTES", "1048576")]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect("connect");
    assert_eq!(f.settings().limits.max_message_bytes, 262_144);
}

#[tokio::test]
async fn access_denied_falls_back_to_the_configured_limit() {
    let server = server_answering("AmazonSQS.GetQueueAttributes", error(403, "AccessDenied")).await;
    let url = format!("{}/123456789012/q", server.uri());
    let f = connect_with(
        client(&server.uri()),
        &config(&[("QUEUE_URL", &url)]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect("connect");
    assert_eq!(
        f.settings().limits.max_message_bytes,
        1_048_576,
        "default fallback"
    );
    let f = connect_with(
        client(&server.uri()),
        &config(&[("QUEUE_URL", &url), ("FALLBACK_MESSAGE_BYTES", "262144")]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect("connect");
    assert_eq!(f.settings().limits.max_message_bytes, 262_144);
    let f = connect_with(
        client(&server.uri()),
        &config(&[
            ("QUEUE_URL", &url),
            ("FALLBACK_MESSAGE_BYTES", "262144"),
            ("MAX_MESSAGE_BYTES", "2048"),
        ]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect("connect");
    assert_eq!(f.settings().limits.max_message_bytes, 2048);
}

#[tokio::test]
async fn a_missing_queue_fails_the_start_naming_it() {
    let server = server_answering(
        "AmazonSQS.GetQueueAttributes",
        error(400, "AWS.SimpleQueueService.NonExistentQueue"),
    )
    .await;
    let url = format!("{}/123456789012/gone", server.uri());
    let err = connect_with(
        client(&server.uri()),
        &config(&[("QUEUE_URL", &url)]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect_err("missing queue");
    assert!(
        matches!(&err, SetupError::Queue { queue, .. } if queue == &url),
        "{err:?}"
    );
    assert!(err.to_string().contains("gone"), "{err}");
}

#[tokio::test]
async fn fifo_without_content_based_dedup_is_known_at_start() {
    let server = server_answering(
        "AmazonSQS.GetQueueAttributes",
        json(r#"{"Attributes":{"MaximumMessageSize":"1048576","ContentBasedDeduplication":"false"}}"#),
    )
    .await;
    let url = format!("{}/123456789012/o.fifo", server.uri());
    let f = connect_with(
        client(&server.uri()),
        &config(&[("QUEUE_URL", &url)]),
        sqs_forwarder::GroupIds::FromSource,
    )
    .await
    .expect("connect");
    assert!(f.rules().fifo);
    assert_eq!(f.rules().content_based_deduplication, Some(false));
    let out = f
        .send_all(
            vec![sqs_forwarder::Message::new("no dedup id", 0).group_id("g")],
            None,
        )
        .await;
    let failure = out[0].outcome.failure().expect("refused before any call");
    assert_eq!(failure.code, "MissingDeduplicationId");
    assert_eq!(out[0].attempts, 0);
}

/// AWS settings with test credentials, every call to `uri`.
fn sdk_config(uri: &str) -> aws_config::SdkConfig {
    aws_config::SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(Credentials::new(
                "test", "test", None, None, "tests",
            )),
        )
        .endpoint_url(uri)
        .build()
}

#[tokio::test]
async fn both_clients_start_and_fail_alike() {
    // Under SQS_CLIENT=direct the start-up calls go through the direct
    // client: the same limits, fallbacks, codes and messages as through the
    // SDK (SQS_CLIENT=sdk).
    let cases = [
        (
            "AmazonSQS.GetQueueAttributes",
            json(r#"{"Attributes":{"MaximumMessageSize":"262144"}}"#),
            "QUEUE_URL",
        ),
        (
            "AmazonSQS.GetQueueAttributes",
            error(400, "AWS.SimpleQueueService.NonExistentQueue"),
            "QUEUE_URL",
        ),
        (
            "AmazonSQS.GetQueueAttributes",
            error(403, "AccessDenied"),
            "QUEUE_URL",
        ),
        (
            "AmazonSQS.GetQueueAttributes",
            error(400, "KMS.AccessDeniedException"),
            "QUEUE_URL",
        ),
        (
            "AmazonSQS.GetQueueUrl",
            error(400, "AWS.SimpleQueueService.NonExistentQueue"),
            "QUEUE_NAME",
        ),
        (
            "AmazonSQS.GetQueueUrl",
            json(r#"{"Other":"no URL"}"#),
            "QUEUE_NAME",
        ),
    ];
    for (target, response, by) in cases {
        let server = server_answering(target, response).await;
        let queue = match by {
            "QUEUE_URL" => format!("{}/123456789012/start-alike", server.uri()),
            _ => "start-alike".to_owned(),
        };
        let mut results = Vec::new();
        for client in ["sdk", "direct"] {
            let c = config(&[(by, &queue), ("SQS_CLIENT", client)]);
            let started = sqs_forwarder::setup::startup::connect_sdk(
                &sdk_config(&server.uri()),
                &c,
                sqs_forwarder::GroupIds::FromConfig,
            )
            .await
            .map(|f| {
                assert_eq!(f.transport().is_direct(), client == "direct");
                f.settings().limits.max_message_bytes
            });
            results.push(started.map_err(|e| match e {
                SetupError::Queue {
                    queue,
                    code,
                    message,
                } => format!("{queue} {code} {message}"),
                other => format!("{other:?}"),
            }));
        }
        assert_eq!(results[0], results[1], "{target} {by}");
        assert!(
            !server
                .received_requests()
                .await
                .expect("recorded")
                .is_empty(),
            "{target}: both clients asked"
        );
    }
}
