//! The direct client over HTTPS, as it calls SQS in a deployed function:
//! rustls with the system's root certificates. A local HTTPS endpoint with a
//! certificate made for this test (openssl) stands in for SQS; the system
//! roots are pointed at that certificate with `SSL_CERT_FILE`, which
//! rustls-native-certs reads. Without it in the roots the call must fail:
//! the certificate is checked, not just accepted.
//!
//! `SSL_CERT_FILE` is read once per process, so each case runs this test
//! binary again as a child with its own environment.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

mod direct_common;

use direct_common::items;
use sqs_forwarder::SqsTransport;
use sqs_forwarder::transport::{EntryResult, Transport};

const CHILD: &str = "DIRECT_TLS_TEST_ENDPOINT";

/// An HTTPS endpoint answering every SendMessageBatch with every entry sent.
const SERVER: &str = r#"
import http.server, json, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ok = [{"Id": e["Id"], "MessageId": "m" + e["Id"], "MD5OfMessageBody": "x"} for e in body["Entries"]]
        out = json.dumps({"Successful": ok, "Failed": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn openssl(args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A certificate authority named `name` in `dir` and a `localhost`
/// certificate it signed: (the authority's certificate, the leaf's
/// certificate, the leaf's key).
fn certificates(dir: &Path, name: &str) -> (String, String, String) {
    let path = |file: &str| {
        dir.join(format!("{name}-{file}"))
            .to_string_lossy()
            .into_owned()
    };
    let (ca, ca_key, leaf, leaf_key, csr, ext) = (
        path("ca.pem"),
        path("ca.key"),
        path("leaf.pem"),
        path("leaf.key"),
        path("leaf.csr"),
        path("leaf.ext"),
    );
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    openssl(
        &[
            &["req", "-x509"][..],
            &ec,
            &["-days", "1", "-subj", &format!("/CN={name} test CA")],
            &[
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign",
            ],
            &["-keyout", &ca_key, "-out", &ca],
        ]
        .concat(),
    );
    openssl(
        &[
            &["req"][..],
            &ec,
            &["-subj", "/CN=localhost", "-keyout", &leaf_key, "-out", &csr],
        ]
        .concat(),
    );
    std::fs::write(
        &ext,
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .expect("extensions file");
    openssl(&[
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        &ca,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        &ext,
        "-out",
        &leaf,
    ]);
    (ca, leaf, leaf_key)
}

fn start_server(cert: &str, key: &str) -> (Server, u16) {
    let mut child = Command::new("python3")
        .args(["-c", SERVER, cert, key])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("port line");
    let port = line.trim().parse().expect("a port");
    (Server(child), port)
}

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
    let client = sqs_forwarder::queue::sqs_client(&sdk);
    let direct = sqs_forwarder::direct::DirectClient::new(&sdk, &client)
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
    let (ca, leaf, key) = certificates(&dir, "endpoint");
    let (other_ca, _, _) = certificates(&dir, "other");
    let (_server, port) = start_server(&leaf, &key);
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
