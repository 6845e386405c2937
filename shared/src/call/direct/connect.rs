//! Where the direct client's calls go and over what: the endpoint (read
//! from the SDK settings as the SQS client reads it), and the pooled
//! HTTP/1.1 client with rustls, through the environment's HTTP proxy when it
//! has one for the endpoint, as the SDK's client ([`super::proxy`]).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::HeaderValue;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::{Client, ResponseFuture};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::proxy::Connector;
use crate::setup::error::SetupError;

/// Idle keep-alive connections are closed after this long (hyper-util's
/// default, as the SDK's client).
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

pub(super) fn setup_error(code: &str, message: impl Into<String>) -> SetupError {
    SetupError::Queue {
        queue: "(SQS_CLIENT=direct)".into(),
        code: code.into(),
        message: message.into(),
    }
}

/// The SQS endpoint override in `sdk`, read as the SQS client reads it: a
/// client-configured `endpoint_url` first, else `AWS_ENDPOINT_URL_SQS` (or
/// the profile's SQS `endpoint_url`), else `AWS_ENDPOINT_URL`.
pub(super) fn endpoint_override(sdk: &aws_config::SdkConfig) -> Option<String> {
    if sdk.get_origin("endpoint_url").is_client_config() {
        return sdk.endpoint_url().map(str::to_owned);
    }
    let key = aws_types::service_config::ServiceConfigKey::builder()
        .service_id("SQS")
        .env("AWS_ENDPOINT_URL")
        .profile("endpoint_url")
        .build()
        .ok();
    key.and_then(|key| sdk.service_config().and_then(|c| c.load_config(key)))
        .or_else(|| sdk.endpoint_url().map(str::to_owned))
}

/// The URI calls are posted to: the endpoint with the path `/` (SQS's JSON
/// protocol posts to the root), any path the endpoint has kept.
pub(super) fn endpoint_uri(url: &str) -> Result<http::Uri, SetupError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|_| setup_error("InvalidEndpoint", format!("not a URI: {url}")))?;
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return Err(setup_error(
            "InvalidEndpoint",
            format!("no scheme or host: {url}"),
        ));
    };
    if scheme != "http" && scheme != "https" {
        return Err(setup_error(
            "InvalidEndpoint",
            format!("not http or https: {url}"),
        ));
    }
    let path = uri.path();
    let path = if path.ends_with('/') {
        path.to_owned()
    } else {
        format!("{path}/")
    };
    http::Uri::builder()
        .scheme(scheme)
        .authority(authority.as_str())
        .path_and_query(path)
        .build()
        .map_err(|_| setup_error("InvalidEndpoint", format!("not a URI: {url}")))
}

/// The HTTP client for calls to `endpoint`: straight to it, or through the
/// proxy `proxy` picks for it, as the SDK's HTTP client would
/// ([`super::proxy`]). Reads the system's roots when TLS is spoken (an
/// `https` endpoint, or an `https://` proxy) and logs the proxy taken.
pub(super) fn http_client(
    endpoint: &http::Uri,
    connect_timeout: Duration,
    proxy: &Matcher,
) -> Result<HttpClient, SetupError> {
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(Some(connect_timeout));
    let intercept = proxy.intercept(endpoint);
    let origin_tls = endpoint.scheme_str() == Some("https");
    let proxy_tls = intercept
        .as_ref()
        .is_some_and(|p| p.uri().scheme_str() == Some("https"));
    let tls = tls_config(origin_tls || proxy_tls, intercept.is_some())?;
    fn https<C>(tls: &rustls::ClientConfig, inner: C) -> HttpsConnector<C> {
        hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls.clone())
            .https_or_http()
            .enable_http1()
            .wrap_connector(inner)
    }
    let mut proxy_authorization = None;
    let connector = match intercept {
        None => Connector::Direct(https(&tls, tcp)),
        Some(p) => {
            // The proxy's address alone: the matcher has taken out any
            // user and password (they are in `basic_auth`).
            let via = p.uri().clone();
            let authenticated = p.basic_auth().is_some();
            let how = if origin_tls {
                "CONNECT tunnel"
            } else {
                "forward proxy"
            };
            tracing::info!(
                %endpoint, proxy = %via, authenticated, how,
                "SQS_CLIENT=direct: calls to the endpoint go through the proxy"
            );
            if origin_tls {
                let tunnel = Tunnel::new(via, https(&tls, tcp));
                let tunnel = match p.basic_auth() {
                    Some(auth) => tunnel.with_auth(auth.clone()),
                    None => tunnel,
                };
                Connector::Tunnel(https(&tls, tunnel))
            } else {
                proxy_authorization = p.basic_auth().cloned();
                Connector::Forward {
                    connector: https(&tls, tcp),
                    proxy: via,
                }
            }
        }
    };
    Ok(HttpClient {
        client: Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .build(connector),
        proxy_authorization,
    })
}

/// rustls with aws-lc-rs: the system's roots when TLS is spoken (`roots`;
/// [`super::roots`]), none otherwise (a plain-HTTP endpoint, local, has none
/// to load).
fn tls_config(roots: bool, proxied: bool) -> Result<rustls::ClientConfig, SetupError> {
    let roots = if roots {
        super::roots::system().map_err(|e| {
            let what = if proxied {
                "TLS roots (for the endpoint or its https:// proxy)"
            } else {
                "TLS roots"
            };
            setup_error("TlsSetup", format!("{what}: {e}"))
        })?
    } else {
        Arc::new(rustls::RootCertStore::empty())
    };
    client_config(roots).map_err(|e| setup_error("TlsSetup", e))
}

/// rustls on aws-lc-rs, its safe default protocol versions, trusting
/// `roots`, without a client certificate: every TLS client of the
/// functions ([`super::system_tls_config`] too).
pub(super) fn client_config(
    roots: Arc<rustls::RootCertStore>,
) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// The pooled HTTP/1.1 client, and the `Proxy-Authorization` each request
/// carries to a forward proxy (an `http` endpoint through a proxy whose URL
/// has a user), as the SDK's client adds it.
pub(super) struct HttpClient {
    client: Client<Connector, Full<Bytes>>,
    proxy_authorization: Option<HeaderValue>,
}

impl HttpClient {
    /// Send `request` (its own `Proxy-Authorization`, if any, kept).
    pub(super) fn request(&self, mut request: http::Request<Full<Bytes>>) -> ResponseFuture {
        if let Some(auth) = &self.proxy_authorization {
            request
                .headers_mut()
                .entry(http::header::PROXY_AUTHORIZATION)
                .or_insert_with(|| auth.clone());
        }
        self.client.request(request)
    }
}
