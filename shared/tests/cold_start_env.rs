//! The cold-start path as a function runs it: [`connect`] reads the AWS
//! settings from the process environment (`AWS_REGION`, credentials,
//! `AWS_ENDPOINT_URL_SQS` / `AWS_ENDPOINT_URL`) and picks the client's region
//! from the queue URL.
//!
//! This file holds a single test on purpose: it changes the process
//! environment, which only one test per process may do safely (each file
//! under `tests/` is its own process).

use std::collections::HashMap;

use sqs_forwarder::setup::startup::connect;
use sqs_forwarder::{Config, Message, Outcome, SetupError};
use wiremock::matchers::{header, method};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const JSON_1_0: &str = "application/x-amz-json-1.0";

fn config(vars: &[(&str, &str)]) -> Config {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|k| map.get(k).cloned()).expect("valid configuration")
}

fn set(vars: &[(&str, Option<&str>)]) {
    for (k, v) in vars {
        // SAFETY: the only test of this process; nothing else reads or
        // writes the environment meanwhile.
        #[allow(unsafe_code)] // std::env::set_var is unsafe since edition 2024
        unsafe {
            match v {
                Some(v) => std::env::set_var(k, v),
                None => std::env::remove_var(k),
            }
        }
    }
}

/// (region, access key) of every SQS request the fake received.
async fn signed(server: &MockServer) -> Vec<(String, String)> {
    let requests = server.received_requests().await.expect("recording is on");
    let out = requests
        .iter()
        .map(|r: &Request| {
            let auth = r
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .expect("signed");
            let scope: Vec<&str> = auth
                .split("Credential=")
                .nth(1)
                .and_then(|s| s.split(',').next())
                .expect("a credential scope")
                .split('/')
                .collect();
            (scope[2].to_owned(), scope[0].to_owned())
        })
        .collect();
    server.reset().await;
    mount(server).await;
    out
}

async fn mount(server: &MockServer) {
    Mock::given(method("POST"))
        .and(header("x-amz-target", "AmazonSQS.GetQueueAttributes"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(r#"{"Attributes":{}}"#, JSON_1_0))
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "AmazonSQS.SendMessageBatch"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            r#"{"Successful":[{"Id":"0","MessageId":"m-0","MD5OfMessageBody":"x"}],"Failed":[]}"#,
            JSON_1_0,
        ))
        .mount(server)
        .await;
}

async fn send_one(url: &str) -> Result<(), SetupError> {
    let forwarder = connect(
        &config(&[("QUEUE_URL", url)]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await?;
    let outcomes = forwarder.send_all(vec![Message::new("x", 0)], None).await;
    assert!(
        matches!(outcomes[0].outcome, Outcome::Sent { .. }),
        "{outcomes:?}"
    );
    Ok(())
}

#[tokio::test]
async fn cold_start_takes_the_region_from_the_queue_url_and_the_endpoint_from_the_environment() {
    let server = MockServer::start().await;
    mount(&server).await;
    let local_url = format!("{}/123456789012/q", server.uri());
    set(&[
        ("AWS_REGION", Some("us-east-1")),
        ("AWS_DEFAULT_REGION", None),
        ("AWS_ACCESS_KEY_ID", Some("AKIDFROMENV")),
        ("AWS_SECRET_ACCESS_KEY", Some("secret")),
        ("AWS_SESSION_TOKEN", None),
        ("AWS_PROFILE", None),
        ("AWS_CONFIG_FILE", Some("/nonexistent/aws-config")),
        (
            "AWS_SHARED_CREDENTIALS_FILE",
            Some("/nonexistent/aws-credentials"),
        ),
        ("AWS_EC2_METADATA_DISABLED", Some("true")),
        ("AWS_ENDPOINT_URL", None),
        ("AWS_ENDPOINT_URL_SQS", None),
    ]);

    // No endpoint override: a URL naming no region is refused at start,
    // before any call.
    let err = send_one(&local_url).await.expect_err("no region");
    match &err {
        SetupError::Config(e) => assert_eq!(
            (e.variable.as_str(), e.value.as_str()),
            ("QUEUE_URL", local_url.as_str())
        ),
        other => panic!("expected a configuration error, got {other:?}"),
    }
    assert!(signed(&server).await.is_empty());

    // AWS_ENDPOINT_URL_SQS points the client at the fake; the queue's URL
    // names sa-east-1, so that is the region every request is signed for.
    set(&[("AWS_ENDPOINT_URL_SQS", Some(&server.uri()))]);
    send_one("https://sqs.sa-east-1.amazonaws.com/123456789012/q")
        .await
        .expect("connect");
    let sa = ("sa-east-1".to_owned(), "AKIDFROMENV".to_owned());
    assert_eq!(signed(&server).await, [sa.clone(), sa]);

    // A local URL is accepted with the override: the function's region.
    send_one(&local_url).await.expect("connect");
    let home = ("us-east-1".to_owned(), "AKIDFROMENV".to_owned());
    assert_eq!(signed(&server).await, [home.clone(), home.clone()]);

    // The global AWS_ENDPOINT_URL counts as an override too.
    set(&[
        ("AWS_ENDPOINT_URL_SQS", None),
        ("AWS_ENDPOINT_URL", Some(&server.uri())),
    ]);
    send_one(&local_url).await.expect("connect");
    assert_eq!(signed(&server).await, [home.clone(), home]);
}
