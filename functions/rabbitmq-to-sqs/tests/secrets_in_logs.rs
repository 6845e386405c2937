//! The AMQP password never reaches the logs: every log line written while
//! connecting with a wrong password (to the broker at `RABBITMQ_TEST_URL`,
//! default 127.0.0.1:5672) and to a port nothing listens on, captured at
//! TRACE in every module (the AMQP client's frame dumps held back by the
//! directives the function adds to its log filter, `broker::QUIET_AMQP`), holds
//! neither the password nor its percent-encoded form.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rabbitmq_to_sqs::{Handler, Settings};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::test_support::FakeSqs;
use sqs_forwarder::{Env, Forwarder, SendSettings};
use tokio::time::Instant;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn function(url: &str) -> Handler<FakeSqs> {
    let settings = Settings::from_env(&Env::from_pairs(&[
        ("RABBITMQ_URL", url),
        ("RABBITMQ_QUEUES", "secrets-in-logs"),
        ("RABBITMQ_CONNECT_TIMEOUT_MS", "3000"),
    ]))
    .expect("settings");
    let forwarder = // The login fails first: SQS is never called.
    Forwarder::new(FakeSqs::new(), SendSettings::default(), EncodeRules::default());
    Handler::new(settings, forwarder, Duration::ZERO, None).expect("function")
}

/// `host:port` of the test broker.
fn broker() -> String {
    let url = std::env::var("RABBITMQ_TEST_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into());
    let rest = url.split_once('@').map_or(url.as_str(), |(_, r)| r);
    rest.split('/')
        .next()
        .unwrap_or("127.0.0.1:5672")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn amqp_passwords_never_reach_the_logs() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_env_filter(sqs_forwarder::observe::with_directives(
            tracing_subscriber::EnvFilter::new("trace"),
            rabbitmq_to_sqs::broker::QUIET_AMQP,
        ))
        .with_writer(move || writer.clone())
        .finish();
    // Global: the AMQP client logs from its own threads.
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");

    let host = broker();
    let reachable = std::net::TcpStream::connect(&host).is_ok();
    let mut urls = vec![format!("amqp://svc:N0-Such%2FPw-9@127.0.0.1:1/%2f")];
    if reachable {
        urls.push(format!("amqp://guest:Wr0ng%2FPw-In-Logs-7@{host}/%2f"));
    } else {
        eprintln!("no broker at {host}: only the refused connection is tested");
    }
    for url in &urls {
        let f = function(url);
        let e = f
            .poll_until(Instant::now() + Duration::from_secs(10), None)
            .await
            .expect_err("the login or the connection fails");
        // What main.rs logs when an invocation fails.
        tracing::error!(error = %e, "invocation failed");
        let shown = format!("{e} {e:?}");
        assert!(shown.contains(":***@"), "{shown}");
    }

    let logs = String::from_utf8_lossy(&captured.0.lock().expect("lock")).into_owned();
    assert!(
        logs.contains("invocation failed"),
        "the capture works: {logs}"
    );
    for secret in [
        "N0-Such%2FPw-9",
        "N0-Such/Pw-9",
        "Wr0ng%2FPw-In-Logs-7",
        "Wr0ng/Pw-In-Logs-7",
        "Pw-9",
        "Pw-In-Logs",
    ] {
        assert!(!logs.contains(secret), "{secret} is in the logs:\n{logs}");
    }
}
