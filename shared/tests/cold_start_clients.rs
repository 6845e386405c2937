//! What a cold start builds: under `SQS_CLIENT=direct` (the default), with
//! the credentials in the environment as Lambda hands them, no AWS SDK
//! client (no credentials chain with an STS client in it, no aws-sdk-sqs
//! client beside the direct one), because the first SDK client of a process
//! loads and parses every system root certificate
//! (bench/results/profile-init.md).
//!
//! Seen through the SDK's own warning: an SDK client's HTTP client reads the
//! system's roots when the client is built and warns when one of the places
//! it reads is missing, so with `SSL_CERT_DIR` naming nothing (and
//! `SSL_CERT_FILE` one certificate made here, for the SDK's client to have
//! a root), a start that builds an SDK client logs that warning.
//! `SQS_CLIENT=sdk`, which builds one, shows that the warning is there to be
//! seen.
//!
//! A single test on purpose: it changes the process environment (each file
//! under `tests/` is its own process).

mod direct_common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use sqs_forwarder::setup::startup::connect;
use sqs_forwarder::{Config, GroupIds, Message, Outcome};
use wiremock::matchers::{header, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

const JSON_1_0: &str = "application/x-amz-json-1.0";
/// What the SDK's HTTP client logs when it cannot read a place it reads
/// root certificates from.
const ROOTS_WARNING: &str = "native root CA certificate";

/// Log lines, kept.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut kept) = self.0.lock() {
            kept.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn take(&self) -> String {
        self.0
            .lock()
            .map(|mut kept| String::from_utf8_lossy(&std::mem::take(&mut *kept)).into_owned())
            .unwrap_or_default()
    }
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

async fn fake_sqs() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "AmazonSQS.GetQueueAttributes"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(r#"{"Attributes":{}}"#, JSON_1_0))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "AmazonSQS.SendMessageBatch"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            r#"{"Successful":[{"Id":"0","MessageId":"m-0","MD5OfMessageBody":"x"}],"Failed":[]}"#,
            JSON_1_0,
        ))
        .mount(&server)
        .await;
    server
}

/// Connect with `SQS_CLIENT=client` and send one message.
async fn start_and_send(url: &str, client: &str) {
    let vars = [("QUEUE_URL", url), ("SQS_CLIENT", client)];
    let config = Config::from_lookup(|k| {
        vars.iter()
            .find(|(name, _)| *name == k)
            .map(|(_, v)| (*v).to_owned())
    })
    .expect("config");
    let forwarder = connect(&config, GroupIds::FromConfig)
        .await
        .expect("connect");
    let out = forwarder.send_all(vec![Message::new("x", 0)], None).await;
    assert!(matches!(out[0].outcome, Outcome::Sent { .. }), "{out:?}");
}

#[tokio::test]
async fn a_direct_cold_start_builds_no_sdk_client() {
    let logs = Logs::default();
    let writer = logs.clone();
    tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::WARN)
        .init();
    let server = fake_sqs().await;
    let dir = std::env::temp_dir().join(format!("cold-start-clients-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (ca, _, _) = direct_common::tls::certificates(&dir, "root", "localhost");
    set(&[
        ("AWS_REGION", Some("us-east-1")),
        ("AWS_ACCESS_KEY_ID", Some("AKIDFROMENV")),
        ("AWS_SECRET_ACCESS_KEY", Some("secret")),
        ("AWS_SESSION_TOKEN", Some("token")),
        ("AWS_PROFILE", None),
        ("AWS_CONFIG_FILE", Some("/nonexistent/aws-config")),
        (
            "AWS_SHARED_CREDENTIALS_FILE",
            Some("/nonexistent/aws-credentials"),
        ),
        ("AWS_EC2_METADATA_DISABLED", Some("true")),
        ("AWS_ENDPOINT_URL", None),
        ("AWS_ENDPOINT_URL_SQS", Some(&server.uri())),
        ("SSL_CERT_FILE", Some(&ca)),
        ("SSL_CERT_DIR", Some("/nonexistent/certs")),
    ]);
    let url = format!("{}/123456789012/q", server.uri());

    start_and_send(&url, "direct").await;
    let direct = logs.take();
    assert!(!direct.contains(ROOTS_WARNING), "{direct}");

    // The SDK's client reads the roots when it is built, and says so.
    start_and_send(&url, "sdk").await;
    let sdk = logs.take();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(sdk.contains(ROOTS_WARNING), "{sdk}");
}
