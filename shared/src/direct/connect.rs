//! Where the direct client's calls go and over what: the endpoint (read
//! from the SDK settings as the SQS client reads it), and the pooled
//! HTTP/1.1 client with rustls.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::error::SetupError;

/// Idle keep-alive connections are closed after this long (hyper-util's
/// default, as the SDK's client).
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

pub(super) type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

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

pub(super) fn http_client(
    https: bool,
    connect_timeout: Duration,
) -> Result<HttpClient, SetupError> {
    let mut connector = HttpConnector::new();
    connector.enforce_http(false);
    connector.set_nodelay(true);
    connector.set_connect_timeout(Some(connect_timeout));
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = if https {
        hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(provider)
            .map_err(|e| setup_error("TlsSetup", format!("TLS roots: {e}")))?
    } else {
        // A plain-HTTP endpoint (local): no roots to load.
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| setup_error("TlsSetup", e.to_string()))?
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls)
    };
    let connector = builder
        .https_or_http()
        .enable_http1()
        .wrap_connector(connector);
    Ok(Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .build(connector))
}
