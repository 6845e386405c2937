//! amqps:// end to end: rabbitmq-to-sqs drains a queue over TLS to a trusted certificate, and refuses an untrusted one, saying why.
//!
//! The local RabbitMQ (`RABBITMQ_TEST_URL`) speaks plain AMQP, so each test
//! runs a TLS-terminating proxy on 127.0.0.1 in front of it (rustls's
//! server side, piping each connection's bytes to the broker) and points
//! the function at `amqps://...@localhost:<proxy port>/...`. The
//! certificates are made here at start: a test CA and a certificate for
//! `localhost` and 127.0.0.1 that it signed, and an unrelated self-signed
//! certificate for the same names. The CA is written to a file that
//! `SSL_CERT_FILE` names before anything of this process reads the roots
//! (the function reads them once per process, at its first TLS
//! connection), so the CA is the roots of every test here. Messages are
//! published over plain AMQP with lapin; SQS is the shared crate's fake.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use forwarder_e2e::rabbitmq::{Broker, amqp_url, fake_forwarder, far, function};
use rabbitmq_to_sqs::HandlerError;
use rabbitmq_to_sqs::broker::BrokerError;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::Value;
use sqs_forwarder::test_support::FakeSqs;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

// ---------------------------------------------------------------- certificates

/// A certificate and its key, as the proxy presents them.
struct Identity {
    cert: CertificateDer<'static>,
    /// The key, PKCS#8 DER.
    key: Vec<u8>,
}

/// This process's certificates.
struct Pki {
    /// Signed by the CA that `SSL_CERT_FILE` names.
    trusted: Identity,
    /// Self-signed, by a key no root of this process knows.
    untrusted: Identity,
}

/// The names the proxy's certificates are for.
fn names() -> Vec<String> {
    vec!["localhost".to_owned(), "127.0.0.1".to_owned()]
}

/// A certificate for [`names`]: a TLS server's.
fn server_params(common_name: &str) -> CertificateParams {
    let mut params = CertificateParams::new(names()).expect("certificate names");
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params
}

/// The certificates, made once per process; the first call also writes the
/// CA to a file and sets `SSL_CERT_FILE` to it. Every test calls this
/// first, before it opens any TLS connection.
fn pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca.distinguished_name
            .push(DnType::CommonName, "rabbitmq_tls test CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate().expect("CA key");
        let ca_pem = ca.self_signed(&ca_key).expect("CA certificate").pem();
        let issuer = Issuer::new(ca, ca_key);

        let key = KeyPair::generate().expect("server key");
        let cert = server_params("localhost (signed by the test CA)")
            .signed_by(&key, &issuer)
            .expect("server certificate");
        let trusted = Identity {
            cert: cert.der().clone(),
            key: key.serialize_der(),
        };

        let key = KeyPair::generate().expect("rogue key");
        let cert = server_params("localhost (self-signed)")
            .self_signed(&key)
            .expect("self-signed certificate");
        let untrusted = Identity {
            cert: cert.der().clone(),
            key: key.serialize_der(),
        };

        let file = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("rabbitmq-tls-ca-{}.pem", std::process::id()));
        std::fs::write(&file, ca_pem).expect("write the test CA");
        // SAFETY: this runs once, at the start of the first test, and any
        // other test of this process waits for it on the `OnceLock` before
        // doing anything but build its tokio runtime; meanwhile the other
        // threads (libtest's, the runtimes') read the environment only
        // through `std::env`, which serialises with `set_var`.
        #[allow(unsafe_code)] // std::env::set_var is unsafe since edition 2024
        unsafe {
            std::env::set_var("SSL_CERT_FILE", &file);
        }
        Pki { trusted, untrusted }
    })
}

// ---------------------------------------------------------------- the proxy

/// The test broker's URL in its parts: the user info (`user:password`),
/// the `host[:port]`, and the rest (`/vhost?query`).
fn broker_url_parts() -> (String, String, String) {
    let url = amqp_url();
    let (_, rest) = url.split_once("://").expect("a URL");
    let (userinfo, after) = rest
        .rsplit_once('@')
        .expect("user info in RABBITMQ_TEST_URL");
    let at = after.find(['/', '?']).unwrap_or(after.len());
    let (authority, path) = after.split_at(at);
    (userinfo.to_owned(), authority.to_owned(), path.to_owned())
}

/// The broker's `host:port` (5672 when the URL names no port).
fn broker_address() -> String {
    let (_, authority, _) = broker_url_parts();
    if authority.ends_with(']') || !authority.contains(':') {
        format!("{authority}:5672")
    } else {
        authority
    }
}

/// A TLS-terminating proxy on 127.0.0.1 in front of the broker: it accepts
/// TLS with one certificate and pipes each connection's bytes to the
/// broker's plain AMQP port. Stops (its connections too) when dropped.
struct TlsProxy {
    port: u16,
    /// Connections whose handshake completed and that reached the broker.
    piped: Arc<AtomicUsize>,
    /// Why handshakes failed, as the server side saw it.
    refused: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl TlsProxy {
    async fn start(identity: &Identity) -> Self {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![identity.cert.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(identity.key.clone())),
            )
            .expect("the proxy's certificate and key");
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let port = listener.local_addr().expect("the proxy's address").port();
        let upstream = broker_address();
        let piped = Arc::new(AtomicUsize::new(0));
        let refused = Arc::new(Mutex::new(Vec::new()));
        let (counted, failures) = (Arc::clone(&piped), Arc::clone(&refused));
        let task = tokio::spawn(async move {
            // Aborting this task drops the set, which aborts its connections.
            let mut connections = JoinSet::new();
            while let Ok((tcp, _)) = listener.accept().await {
                while connections.try_join_next().is_some() {}
                let (acceptor, upstream) = (acceptor.clone(), upstream.clone());
                let (counted, failures) = (Arc::clone(&counted), Arc::clone(&failures));
                connections.spawn(async move {
                    let mut tls = match acceptor.accept(tcp).await {
                        Ok(tls) => tls,
                        Err(e) => {
                            failures
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .push(e.to_string());
                            return;
                        }
                    };
                    let Ok(mut broker) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    counted.fetch_add(1, Ordering::SeqCst);
                    // Ends when either side closes; how does not matter here.
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut broker).await;
                });
            }
        });
        TlsProxy {
            port,
            piped,
            refused,
            task,
        }
    }

    /// The test broker's URL (its login and vhost) as `amqps://` through
    /// this proxy, by the name its certificates are for.
    fn url(&self) -> String {
        let (userinfo, _, path) = broker_url_parts();
        format!("amqps://{userinfo}@localhost:{}{path}", self.port)
    }

    fn piped(&self) -> usize {
        self.piped.load(Ordering::SeqCst)
    }

    fn refused(&self) -> Vec<String> {
        self.refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

// ---------------------------------------------------------------- function

/// EventBridge's scheduled event: the invocation as Lambda makes it.
fn schedule() -> Value {
    serde_json::from_str(include_str!("../events/rabbitmq-schedule.json"))
        .expect("sample scheduled event")
}

fn texts(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:02}")).collect()
}

// ---------------------------------------------------------------- tests

#[tokio::test(flavor = "multi_thread")]
async fn amqps_drains_through_tls() {
    let pki = pki();
    let proxy = TlsProxy::start(&pki.trusted).await;
    let mut broker = Broker::new().await;
    let queue = broker.queue("rmq-tls-drain", false).await;
    let all = texts("tls", 50);
    for body in &all {
        broker.publish_text(&queue, body).await;
    }

    let fake = FakeSqs::new();
    let url = proxy.url();
    let f = function(
        &[
            ("RABBITMQ_URL", &url),
            ("RABBITMQ_QUEUES", &queue),
            ("RABBITMQ_PREFETCH", "10"),
        ],
        fake_forwarder(fake.clone(), false),
    );
    let out = f
        .handle_until(schedule(), far(), None)
        .await
        .unwrap_or_else(|e| panic!("the poll over {url:?} failed: {e}"));
    eprintln!("the report of a poll over amqps://: {out}");
    let q = &out["queues"][0];
    assert_eq!(q["queue"], queue.as_str(), "{out}");
    assert_eq!(
        (&q["received"], &q["sent"], &q["stop"]),
        (&Value::from(50), &Value::from(50), &Value::from("empty")),
        "{out}"
    );
    assert!(q.get("error").is_none(), "{out}");

    let mut accepted = fake.accepted_bodies();
    accepted.sort();
    assert_eq!(accepted, all, "every message in SQS, once");
    assert_eq!(broker.ready(&queue).await, 0, "everything acked");
    assert!(
        proxy.piped() >= 1,
        "the function's connection went through the TLS proxy"
    );
    assert_eq!(proxy.refused(), Vec::<String>::new(), "no handshake failed");
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn amqps_refuses_an_untrusted_certificate() {
    let pki = pki();
    let proxy = TlsProxy::start(&pki.untrusted).await;
    let mut broker = Broker::new().await;
    let queue = broker.queue("rmq-tls-untrusted", false).await;
    for body in texts("kept", 5) {
        broker.publish_text(&queue, &body).await;
    }

    let fake = FakeSqs::new();
    let url = proxy.url();
    let f = function(
        &[("RABBITMQ_URL", &url), ("RABBITMQ_QUEUES", &queue)],
        fake_forwarder(fake.clone(), false),
    );
    let e = f
        .handle_until(schedule(), far(), None)
        .await
        .expect_err("the proxy's certificate is signed by no trusted root");
    let shown = format!("{e}");
    eprintln!("the answer to an untrusted certificate: {shown}");
    assert!(
        matches!(e, HandlerError::Broker(BrokerError::Connect { .. })),
        "a connect error (not a timeout): {e:?}"
    );
    assert_eq!(e.kind(), "BrokerUnreachable", "{shown}");
    let (userinfo, _, _) = broker_url_parts();
    let (user, password) = userinfo
        .split_once(':')
        .expect("a password in RABBITMQ_TEST_URL");
    let redacted = format!("amqps://{user}:***@localhost:{}/", proxy.port);
    assert!(shown.contains(&redacted), "names the broker: {shown}");
    assert!(!shown.contains(&format!(":{password}@")), "{shown}");
    assert!(shown.contains("TLS handshake"), "says TLS: {shown}");
    assert!(
        shown.contains("invalid peer certificate"),
        "says it was the certificate: {shown}"
    );
    assert!(
        shown.contains("UnknownIssuer"),
        "says why: no trusted root signed it: {shown}"
    );

    // The client broke off the handshake: the proxy saw it fail, and never
    // connected to the broker.
    let t0 = std::time::Instant::now();
    while proxy.refused().is_empty() && t0.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = proxy.refused();
    eprintln!("the proxy's side of the handshake: {refused:?}");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(proxy.piped(), 0, "nothing reached the broker");

    assert_eq!(fake.call_count(), 0, "no SQS call");
    assert_eq!(
        broker.ready(&queue).await,
        5,
        "nothing taken from the queue"
    );
    broker.cleanup().await;
}
