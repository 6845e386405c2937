//! The direct client over HTTPS, as it calls SQS in a deployed function:
//! rustls with the system's root certificates. A local HTTPS endpoint with a
//! certificate made for this test (openssl) stands in for SQS; the system
//! roots are pointed at that certificate with `SSL_CERT_FILE`, which
//! rustls-native-certs reads. Without it in the roots the call must fail:
//! the certificate is checked, not just accepted.
//!
//! `SSL_CERT_FILE` is read once per process, so each case runs this test
//! binary again as a child with its own environment.

use std::process::Command;

mod direct_common;

use direct_common::items;
use direct_common::tls::{certificates, start_server};
use sqs_forwarder::SqsTransport;
use sqs_forwarder::call::transport::{EntryResult, Transport};

const CHILD: &str = "DIRECT_TLS_TEST_ENDPOINT";

/// Runs `case` in a child process with `SSL_CERT_FILE=roots`, against
/// `endpoint`; the child's exit status.
fn run_child(case: &str, roots: &str, endpoint: &str) -> std::process::Output {
    Command::new(std::env::current_exe().expect("test binary"))
        .args([case, "--exact", "--nocapture", "--test-threads", "1"])
        .env("SSL_CERT_FILE", roots)
        .env_remove("SSL_CERT_DIR")
        .env(CHILD, endpoint)
        .output()
        .expect("child runs")
}

/// In the child: one batch through the direct client to the endpoint.
async fn send_through_direct(endpoint: &str) -> Result<Vec<(String, EntryResult)>, String> {
    let sdk = direct_common::sdk(endpoint, None);
    let client = sqs_forwarder::setup::client::sqs_client(&sdk);
    let direct = sqs_forwarder::call::direct::DirectClient::new(&sdk, &client)
        .map_err(|e| format!("direct client: {e}"))?;
    let transport = SqsTransport::direct(direct, format!("{endpoint}/123456789012/q"));
    transport
        .send_batch(&items())
        .await
        .map_err(|e| format!("{e:?}"))
}

#[tokio::test]
async fn child_sends_over_tls() {
    let Ok(endpoint) = std::env::var(CHILD) else {
        return; // only as a child of the tests below
    };
    let answer = send_through_direct(&endpoint).await.expect("sent over TLS");
    assert_eq!(answer.len(), items().len());
    assert!(
        answer
            .iter()
            .all(|(_, r)| matches!(r, EntryResult::Sent { .. })),
        "{answer:?}"
    );
}

#[tokio::test]
async fn child_refuses_an_unknown_certificate() {
    let Ok(endpoint) = std::env::var(CHILD) else {
        return;
    };
    let err = send_through_direct(&endpoint)
        .await
        .expect_err("a certificate outside the roots must not be trusted");
    assert!(
        err.contains("ConnectionError") && err.contains("certificate"),
        "{err}"
    );
}

#[test]
fn https_with_the_system_roots() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("direct-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (ca, leaf, key) = certificates(&dir, "endpoint", "localhost");
    let (other_ca, _, _) = certificates(&dir, "other", "localhost");
    let (_server, port) = start_server(Some((&leaf, &key)));
    let endpoint = format!("https://localhost:{port}");

    let trusted = run_child("child_sends_over_tls", &ca, &endpoint);
    let untrusted = run_child("child_refuses_an_unknown_certificate", &other_ca, &endpoint);
    let _ = std::fs::remove_dir_all(&dir);
    for (what, out) in [("trusted", &trusted), ("untrusted", &untrusted)] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{what} case failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
