//! A cold start through the direct client (`SQS_CLIENT=direct`) costs one
//! connection to SQS and one credentials fetch: the start-up calls
//! (`GetQueueUrl`, `GetQueueAttributes`) go through the client that then
//! sends, on its pooled connection, signed with its cached credentials.
//!
//! The fake SQS (wiremock) sits behind a TCP relay that counts the
//! connections it accepts, and the credentials provider counts its fetches.

mod direct_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider, future};
use serde_json::{Value, json};
use sqs_forwarder::{Config, Message, Outcome};
use tokio::net::{TcpListener, TcpStream};
use wiremock::matchers::{header, method};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const JSON_1_0: &str = "application/x-amz-json-1.0";

/// Credentials that count how often they are fetched.
#[derive(Debug)]
struct Counting(Arc<AtomicUsize>);

impl ProvideCredentials for Counting {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        self.0.fetch_add(1, Ordering::SeqCst);
        future::ProvideCredentials::ready(Ok(Credentials::new(
            direct_common::ACCESS_KEY,
            direct_common::SECRET,
            None,
            None,
            "counting",
        )))
    }
}

/// A TCP relay to `upstream` on a port of its own: its address and the
/// number of connections it has accepted.
async fn counting_relay(upstream: std::net::SocketAddr) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if let Ok(mut outbound) = TcpStream::connect(upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (format!("http://{address}"), accepted)
}

/// The fake SQS: queue URLs by name, attributes, every entry sent.
async fn fake_sqs() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "AmazonSQS.GetQueueUrl"))
        .respond_with(|req: &Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
            let name = body["QueueName"].as_str().unwrap_or("?");
            ResponseTemplate::new(200).set_body_raw(
                json!({ "QueueUrl": format!("http://127.0.0.1:1/123456789012/{name}") })
                    .to_string(),
                JSON_1_0,
            )
        })
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "AmazonSQS.GetQueueAttributes"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            r#"{"Attributes":{"MaximumMessageSize":"262144"}}"#,
            JSON_1_0,
        ))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "AmazonSQS.SendMessageBatch"))
        .respond_with(|req: &Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
            let sent: Vec<Value> = body["Entries"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| json!({"Id": e["Id"], "MessageId": "m"}))
                .collect();
            ResponseTemplate::new(200).set_body_raw(
                json!({"Successful": sent, "Failed": []}).to_string(),
                JSON_1_0,
            )
        })
        .mount(&server)
        .await;
    server
}

/// Connect with `vars` through a counting relay, send one message: the
/// (connections, credentials fetches, actions) it took.
async fn cold_start(vars: &[(&str, &str)]) -> (usize, usize, Vec<String>) {
    let server = fake_sqs().await;
    let (endpoint, connections) = counting_relay(*server.address()).await;
    let fetches = Arc::new(AtomicUsize::new(0));
    let sdk = direct_common::sdk(&endpoint, None)
        .into_builder()
        .credentials_provider(SharedCredentialsProvider::new(Counting(fetches.clone())))
        .build();
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.replace("{endpoint}", &endpoint)))
        .collect();
    let config = Config::from_lookup(|k| {
        vars.iter()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.clone())
    })
    .expect("config");
    let fwd = sqs_forwarder::setup::startup::connect_sdk(
        &sdk,
        &config,
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect("connect");
    let out = fwd.send_all(vec![Message::new("first", 0)], None).await;
    assert!(matches!(out[0].outcome, Outcome::Sent { .. }), "{out:?}");
    let actions = server
        .received_requests()
        .await
        .expect("recorded")
        .iter()
        .map(|r| {
            r.headers
                .get("x-amz-target")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .trim_start_matches("AmazonSQS.")
                .to_owned()
        })
        .collect();
    (
        connections.load(Ordering::SeqCst),
        fetches.load(Ordering::SeqCst),
        actions,
    )
}

#[tokio::test]
async fn a_cold_start_by_url_makes_one_connection_and_one_credentials_fetch() {
    let (connections, fetches, actions) = cold_start(&[
        ("QUEUE_URL", "{endpoint}/123456789012/cold-start-url"),
        ("SQS_CLIENT", "direct"),
    ])
    .await;
    assert_eq!(actions, ["GetQueueAttributes", "SendMessageBatch"]);
    assert_eq!((connections, fetches), (1, 1), "(connections, fetches)");
}

#[tokio::test]
async fn a_cold_start_by_name_makes_one_connection_and_one_credentials_fetch() {
    let (connections, fetches, actions) = cold_start(&[
        ("QUEUE_NAME", "cold-start-name"),
        ("SQS_REGION", direct_common::REGION),
        ("SQS_CLIENT", "direct"),
    ])
    .await;
    assert_eq!(
        actions,
        ["GetQueueUrl", "GetQueueAttributes", "SendMessageBatch"]
    );
    assert_eq!((connections, fetches), (1, 1), "(connections, fetches)");
}
