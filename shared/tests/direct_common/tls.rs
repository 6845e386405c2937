//! A local SQS stand-in over HTTP or HTTPS (Python's http.server) and
//! certificates made for it with openssl (`direct_tls.rs`,
//! `direct_proxy.rs`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// An endpoint answering every SendMessageBatch with every entry sent (the
/// ids read from the request), over TLS when given a certificate and key.
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
if len(sys.argv) > 2:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[1], sys.argv[2])
    s.socket = ctx.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// The running endpoint; stopped when dropped.
pub struct Server(Child);

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

/// A certificate authority named `name` in `dir` and a certificate for
/// `host` it signed: (the authority's certificate, the leaf's certificate,
/// the leaf's key).
pub fn certificates(dir: &Path, name: &str, host: &str) -> (String, String, String) {
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
            &[
                "-subj",
                &format!("/CN={host}"),
                "-keyout",
                &leaf_key,
                "-out",
                &csr,
            ],
        ]
        .concat(),
    );
    std::fs::write(
        &ext,
        format!(
            "subjectAltName=DNS:{host}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
        ),
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

/// The endpoint on 127.0.0.1, over TLS with `tls` (certificate, key): it
/// and its port.
pub fn start_server(tls: Option<(&str, &str)>) -> (Server, u16) {
    let mut args = vec!["-c", SERVER];
    if let Some((cert, key)) = tls {
        args.extend([cert, key]);
    }
    let mut child = Command::new("python3")
        .args(args)
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
