//! A small HTTP proxy for tests, on 127.0.0.1: `CONNECT` tunnels and
//! absolute-form requests (a forward proxy), host names it maps to local
//! addresses (so that an endpoint whose name does not resolve is reachable
//! through it alone), optional Basic credentials, and a record of every
//! request it was asked to carry. It runs on a thread of its own with its own
//! runtime, so that synchronous and asynchronous tests can use it alike.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One request the proxy was asked to carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyRequest {
    /// `CONNECT`, `POST`...
    pub method: String,
    /// As the client wrote it: `host:port` for `CONNECT`, the absolute URI
    /// otherwise.
    pub target: String,
    /// Its `Proxy-Authorization` header, if any.
    pub authorization: Option<String>,
    /// The `X-Amz-Target` header of a forwarded request (the AWS action;
    /// inside a tunnel the proxy sees none).
    pub amz_target: Option<String>,
    /// Whether the proxy refused it (`407`: wrong or missing credentials;
    /// `502`: no connection to the destination).
    pub refused: bool,
}

/// The proxy; stops when the test process ends.
pub struct TestProxy {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<ProxyRequest>>>,
}

struct Settings {
    /// (host name, the host to connect to instead).
    routes: Vec<(String, String)>,
    /// The `Proxy-Authorization` required, if any.
    authorization: Option<String>,
}

impl TestProxy {
    /// A proxy that connects to `to` instead of each host `from` of
    /// `routes` (the port kept) and, with `credentials` (user, password),
    /// answers `407` to any request without them.
    pub fn start(
        routes: &[(&str, &str)],
        credentials: Option<(&str, &str)>,
    ) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let settings = Arc::new(Settings {
            routes: routes
                .iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect(),
            authorization: credentials.map(|(user, password)| {
                let pair =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                format!("Basic {pair}")
            }),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let record = seen.clone();
        std::thread::spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = TcpListener::from_std(listener) else {
                    return;
                };
                while let Ok((client, _)) = listener.accept().await {
                    tokio::spawn(serve(client, settings.clone(), record.clone()));
                }
            });
        });
        Ok(TestProxy { addr, seen })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request so far, in order.
    pub fn seen(&self) -> Vec<ProxyRequest> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

async fn serve(client: TcpStream, settings: Arc<Settings>, seen: Arc<Mutex<Vec<ProxyRequest>>>) {
    let mut client = BufReader::new(client);
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        match client.read_line(&mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => head.push(line.trim_end().to_owned()),
        }
    }
    let Some(first) = head.first() else { return };
    let mut words = first.split(' ');
    let (Some(method), Some(target)) = (words.next(), words.next()) else {
        return;
    };
    let (method, target) = (method.to_owned(), target.to_owned());
    let header = |name: &str| {
        head[1..].iter().find_map(|h| {
            let (n, v) = h.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    };
    let authorization = header("proxy-authorization");
    let mut request = ProxyRequest {
        method: method.clone(),
        target: target.clone(),
        authorization: authorization.clone(),
        amz_target: header("x-amz-target"),
        refused: false,
    };
    let answer = |status: &str| {
        format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    };
    if settings.authorization.is_some() && settings.authorization != authorization {
        request.refused = true;
        seen.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request);
        let refusal = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        let _ = client.get_mut().write_all(refusal.as_bytes()).await;
        return;
    }
    // Where to: `host:port` of the CONNECT, or of the absolute URI.
    let (authority, path) = if method == "CONNECT" {
        (target.clone(), None)
    } else {
        match target.parse::<http::Uri>() {
            Ok(uri) if uri.host().is_some() => {
                let port = uri.port_u16().unwrap_or(80);
                let host = uri.host().unwrap_or_default().to_owned();
                let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
                (format!("{host}:{port}"), Some(path))
            }
            _ => (String::new(), None),
        }
    };
    let (host, port) = authority.rsplit_once(':').unwrap_or((&authority, "80"));
    let host = settings
        .routes
        .iter()
        .find(|(from, _)| from.eq_ignore_ascii_case(host))
        .map_or(host, |(_, to)| to.as_str());
    let upstream = TcpStream::connect(format!("{host}:{port}")).await;
    let Ok(mut upstream) = upstream else {
        request.refused = true;
        seen.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request);
        let _ = client
            .get_mut()
            .write_all(answer("502 Bad Gateway").as_bytes())
            .await;
        return;
    };
    seen.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(request);
    match path {
        None => {
            let established = "HTTP/1.1 200 Connection established\r\n\r\n";
            if client
                .get_mut()
                .write_all(established.as_bytes())
                .await
                .is_err()
            {
                return;
            }
        }
        Some(path) => {
            // The request in origin form, without the proxy's own headers,
            // and the connection closed after it: one request per connection,
            // so that each is seen here.
            let mut out = format!("{method} {path} HTTP/1.1\r\n");
            for h in &head[1..] {
                let name = h.split(':').next().unwrap_or_default().trim();
                if !["proxy-authorization", "proxy-connection", "connection"]
                    .iter()
                    .any(|n| name.eq_ignore_ascii_case(n))
                {
                    out.push_str(h);
                    out.push_str("\r\n");
                }
            }
            out.push_str("Connection: close\r\n\r\n");
            if upstream.write_all(out.as_bytes()).await.is_err() {
                return;
            }
        }
    }
    // Whatever the client sent past the head, then both ways until closed.
    let early = client.buffer().to_vec();
    if upstream.write_all(&early).await.is_err() {
        return;
    }
    let mut client = client.into_inner();
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}
