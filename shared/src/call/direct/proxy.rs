//! The direct client's HTTP proxy, as the SDK's default HTTP client uses one
//! (aws-smithy-http-client with `BehaviorVersion` 2025-08-07 or later, which
//! is what this project builds: `ProxyConfig::from_env()`).
//!
//! * **Which variables**: hyper-util's [`Matcher::from_env`], the SDK's own
//!   matcher: `HTTPS_PROXY` for `https` endpoints, `HTTP_PROXY` for `http`
//!   ones, `ALL_PROXY` for either when the scheme's own is unset or unusable,
//!   and `NO_PROXY` (comma-separated host names, which also match their
//!   subdomains, IP addresses and networks, `*` for all); of each pair the
//!   upper-case name is read first and, when set (even empty), the lower-case
//!   one is not. A proxy URL without a scheme is `http://`; user and password
//!   in it (percent-decoded) are sent as `Proxy-Authorization: Basic`. With
//!   `REQUEST_METHOD` set (a CGI environment) no proxy is used.
//! * **How**: an `https` endpoint through an HTTP `CONNECT` tunnel
//!   (hyper-util's [`Tunnel`]), then TLS to the endpoint inside it; an `http`
//!   endpoint by sending the requests in absolute form to the proxy (a
//!   forward proxy), with `Proxy-Authorization` on each request. An `https://`
//!   proxy is reached over TLS with the same roots as the endpoint.
//! * **Bad values**: a value the matcher cannot use (not a URI, no host, an
//!   unknown scheme) is ignored, as the SDK ignores it, and a warning names
//!   the variable (never its value: it may hold a password). A `socks*` proxy
//!   is taken by the matcher but spoken to as an HTTP proxy by the SDK's
//!   client, so calls fail there as here; a warning says so at start.
//!
//! The endpoint is fixed for a client, so the route is chosen once, when the
//! client is built.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use tower_service::Service;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// TCP, with TLS for an `https` destination.
pub(super) type Https = HttpsConnector<HttpConnector>;
type Stream = <Https as Service<http::Uri>>::Response;

/// The proxy settings of the environment, read as the SDK's HTTP client
/// reads them ([`Matcher::from_env`]); a warning for each proxy variable
/// that is set but cannot be used, or that cannot work.
pub fn from_env() -> Matcher {
    let groups = [
        ["HTTPS_PROXY", "https_proxy"],
        ["HTTP_PROXY", "http_proxy"],
        ["ALL_PROXY", "all_proxy"],
    ];
    let set: Vec<_> = groups
        .iter()
        .filter_map(|names| {
            let first = names
                .iter()
                .find_map(|name| std::env::var(name).ok().map(|v| (*name, v)))?;
            let shadowed = names
                .iter()
                .filter(|n| **n != first.0)
                .find(|n| std::env::var(n).is_ok_and(|v| !v.is_empty()));
            Some((first, shadowed.copied()))
        })
        .collect();
    if std::env::var_os("REQUEST_METHOD").is_some() && !set.is_empty() {
        tracing::warn!(
            "REQUEST_METHOD is set (a CGI environment): the proxy variables are ignored, as the SDK's HTTP client ignores them"
        );
    }
    for ((name, value), shadowed) in set {
        if value.is_empty() {
            if let Some(other) = shadowed {
                tracing::warn!(
                    "{name} is set but empty, so {other} is not read (as the SDK's HTTP client reads them): no proxy from either"
                );
            }
            continue;
        }
        let probe = http::Uri::from_static("http://sqs.invalid/");
        match Matcher::builder()
            .all(value.as_str())
            .build()
            .intercept(&probe)
        {
            None => tracing::warn!(
                "{name} is not a proxy URL that can be used (a URI with a host, scheme http or https): ignored, as the SDK's HTTP client ignores it"
            ),
            Some(p) if p.uri().scheme_str().is_some_and(|s| s.starts_with("socks")) => {
                tracing::warn!(
                    "{name} names a SOCKS proxy: neither the SDK's HTTP client nor the direct client speaks SOCKS, and calls through it will fail"
                );
            }
            Some(_) => {}
        }
    }
    Matcher::from_env()
}

/// How the connections to the endpoint are made.
#[derive(Clone)]
pub(super) enum Connector {
    /// Straight to the endpoint.
    Direct(Https),
    /// An `http` endpoint through a forward proxy: every connection goes to
    /// the proxy, marked so that requests are written in absolute form.
    Forward {
        /// TCP (or TLS to an `https://` proxy).
        connector: Https,
        /// The proxy's address.
        proxy: http::Uri,
    },
    /// An `https` endpoint through a `CONNECT` tunnel, TLS inside it.
    Tunnel(HttpsConnector<Tunnel<Https>>),
}

impl Service<http::Uri> for Connector {
    type Response = Conn;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        match self {
            Connector::Direct(c) | Connector::Forward { connector: c, .. } => c.poll_ready(cx),
            Connector::Tunnel(c) => c.poll_ready(cx),
        }
    }

    fn call(&mut self, dst: http::Uri) -> Self::Future {
        match self {
            Connector::Direct(c) => {
                let f = c.call(dst);
                Box::pin(async move { Ok(Conn::Plain(f.await?, false)) })
            }
            Connector::Forward { connector, proxy } => {
                let f = connector.call(proxy.clone());
                Box::pin(async move { Ok(Conn::Plain(f.await?, true)) })
            }
            Connector::Tunnel(c) => {
                let f = c.call(dst);
                Box::pin(async move { Ok(Conn::Tunnelled(f.await?)) })
            }
        }
    }
}

/// A connection to the endpoint, straight, to a forward proxy (`true`), or
/// through a tunnel.
#[expect(
    clippy::large_enum_variant,
    reason = "made once per connection and kept in it; no box to go through on every read"
)]
pub(super) enum Conn {
    Plain(Stream, bool),
    Tunnelled(MaybeHttpsStream<Stream>),
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        match self {
            Conn::Plain(s, proxied) => s.connected().proxy(*proxied),
            Conn::Tunnelled(s) => s.connected(),
        }
    }
}

impl Read for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_read(cx, buf),
            Conn::Tunnelled(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl Write for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_write(cx, buf),
            Conn::Tunnelled(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_write_vectored(cx, bufs),
            Conn::Tunnelled(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Plain(s, _) => s.is_write_vectored(),
            Conn::Tunnelled(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_flush(cx),
            Conn::Tunnelled(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_shutdown(cx),
            Conn::Tunnelled(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
