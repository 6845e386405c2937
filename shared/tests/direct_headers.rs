//! The direct client's unsigned headers, as aws-sdk-sqs sends them:
//! `X-Amzn-Trace-Id` from `_X_AMZN_TRACE_ID` (only in Lambda, where
//! `AWS_LAMBDA_FUNCTION_NAME` is set; percent-encoded as the SDK encodes
//! it), and a `User-Agent` naming the crate and version, with `app/<id>`
//! from `AWS_SDK_UA_APP_ID`.
//!
//! Read from the process environment as a function reads it: each case runs
//! this test binary again as a child with its own environment (tests cannot
//! set variables), and the child sends the same batch through the direct
//! client and aws-sdk-sqs to compare the trace header with the SDK's.

mod direct_common;

use std::process::Command;
use std::sync::{Arc, Mutex};

use aws_config::BehaviorVersion;
use aws_credential_types::Credentials;
use aws_sdk_sqs::config::Region;
use direct_common::{REGION, both_clients, items};
use sqs_forwarder::call::direct::headers::Environment;
use sqs_forwarder::call::transport::Transport;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const CHILD: &str = "DIRECT_HEADERS_CHILD";
const VERSION: &str = env!("CARGO_PKG_VERSION");

async fn server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "application/x-amz-json-1.0")
                .set_body_string(r#"{"Successful":[],"Failed":[]}"#),
        )
        .mount(&server)
        .await;
    server
}

fn header(r: &wiremock::Request, name: &str) -> Option<String> {
    r.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// In the child: one batch through each client, settings read from the
/// environment as `aws_config::load_defaults` reads them; prints the direct
/// request's trace id and user agent, and the SDK's trace id.
#[tokio::test]
async fn child_sends_with_the_process_environment() {
    if std::env::var(CHILD).is_err() {
        return; // only as a child of the test below
    }
    let server = server().await;
    let sdk = aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .credentials_provider(Credentials::new("AKID", "secret", None, None, "t"))
        .endpoint_url(server.uri())
        .load()
        .await;
    let (direct, via_sdk) = both_clients(&sdk, &format!("{}/1/q", server.uri()));
    direct.send_batch(&items()).await.expect("direct");
    via_sdk.send_batch(&items()).await.expect("sdk");
    let requests = server.received_requests().await.expect("recorded");
    let [direct_req, sdk_req] = &requests[..] else {
        panic!("two requests");
    };
    println!(
        "RESULT trace={:?} agent={:?} sdk_trace={:?}",
        header(direct_req, "x-amzn-trace-id"),
        header(direct_req, "user-agent"),
        header(sdk_req, "x-amzn-trace-id"),
    );
}

/// Runs the child with `vars` (and none of the variables of these tests
/// inherited): its RESULT line.
fn run_child(vars: &[(&str, &str)]) -> String {
    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command
        .args([
            "child_sends_with_the_process_environment",
            "--exact",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD, "1");
    for name in [
        "AWS_LAMBDA_FUNCTION_NAME",
        "_X_AMZN_TRACE_ID",
        "AWS_SDK_UA_APP_ID",
        "AWS_PROFILE",
    ] {
        command.env_remove(name);
    }
    command
        .env("AWS_CONFIG_FILE", "/nonexistent/aws-config")
        .env(
            "AWS_SHARED_CREDENTIALS_FILE",
            "/nonexistent/aws-credentials",
        );
    for (k, v) in vars {
        command.env(k, v);
    }
    let out = command.output().expect("child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .find_map(|l| l.split_once("RESULT ").map(|(_, result)| result))
        .expect("a RESULT line")
        .to_owned()
}

#[test]
fn trace_id_and_user_agent_from_the_environment() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
    // In Lambda, with an app id: the trace id as the SDK sends it.
    assert_eq!(
        run_child(&[
            ("AWS_LAMBDA_FUNCTION_NAME", "orders"),
            ("_X_AMZN_TRACE_ID", trace),
            ("AWS_SDK_UA_APP_ID", "orders-app"),
        ]),
        format!(
            "trace=Some({trace:?}) agent=Some(\"sqs-forwarder/{VERSION} app/orders-app\") sdk_trace=Some({trace:?})"
        )
    );
    // A byte the SDK encodes, encoded the same way.
    assert_eq!(
        run_child(&[
            ("AWS_LAMBDA_FUNCTION_NAME", "orders"),
            ("_X_AMZN_TRACE_ID", "Root=1-é;Sampled=1"),
        ]),
        format!(
            "trace=Some(\"Root=1-%C3%A9;Sampled=1\") agent=Some(\"sqs-forwarder/{VERSION}\") sdk_trace=Some(\"Root=1-%C3%A9;Sampled=1\")"
        )
    );
    // Outside Lambda: no trace header, as the SDK sends none.
    assert_eq!(
        run_child(&[("_X_AMZN_TRACE_ID", trace)]),
        format!("trace=None agent=Some(\"sqs-forwarder/{VERSION}\") sdk_trace=None")
    );
    // An app id the SDK refuses (a space) is left out, as the SDK leaves it.
    assert_eq!(
        run_child(&[("AWS_SDK_UA_APP_ID", "not valid")]),
        format!("trace=None agent=Some(\"sqs-forwarder/{VERSION}\") sdk_trace=None")
    );
}

#[tokio::test]
async fn the_trace_id_is_read_for_every_call() {
    // The Lambda runtime sets _X_AMZN_TRACE_ID per invocation: each call
    // carries the current one.
    let server = server().await;
    let current = Arc::new(Mutex::new(
        "Root=1-00000000-000000000000000000000001".to_owned(),
    ));
    let seen = current.clone();
    let environment = Environment::lookup(move |name| match name {
        "AWS_LAMBDA_FUNCTION_NAME" => Some("fn".into()),
        "_X_AMZN_TRACE_ID" => seen.lock().ok().map(|t| t.clone()),
        _ => None,
    });
    let sdk = direct_common::sdk(&server.uri(), None);
    let client = sqs_forwarder::setup::client::sqs_client(&sdk);
    let direct = sqs_forwarder::call::direct::DirectClient::new(&sdk, &client)
        .expect("direct")
        .with_environment(environment);
    let url = format!("{}/1/q", server.uri());
    direct.send_batch(&url, &items()).await.expect("sent");
    *current.lock().expect("lock") = "Root=1-00000000-000000000000000000000002".to_owned();
    direct.send_batch(&url, &items()).await.expect("sent");
    let traces: Vec<Option<String>> = server
        .received_requests()
        .await
        .expect("recorded")
        .iter()
        .map(|r| header(r, "x-amzn-trace-id"))
        .collect();
    assert_eq!(
        traces,
        [
            Some("Root=1-00000000-000000000000000000000001".to_owned()),
            Some("Root=1-00000000-000000000000000000000002".to_owned())
        ]
    );
}
