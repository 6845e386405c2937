//! The direct `SendMessageBatch` client (`SQS_CLIENT=direct`, the default):
//! the one call the forwarder makes, without the SDK's per-call machinery,
//! and the start-up calls (`GetQueueUrl`, `GetQueueAttributes`,
//! [`discover`]) on the same connection and credentials. `SQS_CLIENT=sdk`
//! makes them all through aws-sdk-sqs instead.
//!
//! The benchmark (README, "Benchmarks") puts about 60% of the forwarder's
//! CPU in aws-sdk-sqs's per-call work: the orchestrator, interceptors, config
//! bag, endpoint resolution, identity, signing and serialization. This
//! client makes the same HTTP request itself:
//!
//! * **Protocol**: AWS JSON 1.0, as the SDK speaks to SQS: `POST /` with
//!   `X-Amz-Target: AmazonSQS.SendMessageBatch`, `Content-Type:
//!   application/x-amz-json-1.0` and `x-amzn-query-mode: true`; the body is
//!   written by hand, in the bytes serde_json would write, straight from the
//!   entries ([`wire`]). A `null` `Successful` or `Failed` list reads as an
//!   empty one, as in the SDK.
//! * **Answers and errors**: parsed and classified as the SDK path's are
//!   ([`wire::call_error`]): the same codes (the query-compatible
//!   `AWS.SimpleQueueService.*` code when SQS sends `x-amzn-query-error`),
//!   the same retryability, `BatchRequestTooLong` as
//!   [`CallError::TooLong`]; a connection failure is `ConnectionError`, an
//!   unreadable answer `ResponseError`, a timeout `Timeout`, all transient.
//!   `MD5OfMessageBody` is not checked, as the SDK does not check it.
//! * **Endpoint and region**: resolved once, at start, by the SQS client's
//!   own endpoint resolver from the same settings the SDK client uses (its
//!   region, `use_fips`, `use_dual_stack`, and the endpoint override
//!   `AWS_ENDPOINT_URL_SQS`/`AWS_ENDPOINT_URL`), so a local
//!   `http://127.0.0.1:4566` works as it does for the SDK.
//! * **Credentials**: the SDK client's credentials provider (the function's,
//!   or the assumed role's), cached until 30 seconds before they expire; one
//!   caller refreshes while the others keep signing with the still-valid
//!   ones ([`credentials_cache`]). Signed with `aws-sigv4`, as the SDK signs;
//!   `tests/direct_signature.rs` checks the signature with a SigV4
//!   verifier written from AWS's specification and pinned to its published
//!   example, which also accepts the SDK's own request.
//! * **HTTP**: hyper-util's pooled client (keep-alive, HTTP/1.1), rustls
//!   with aws-lc-rs and the system's roots for `https`, as the SDK's default
//!   client (read from the one bundle file when there is one, once per
//!   process: `direct/roots.rs`); its connect timeout is the SDK configuration's
//!   (3.1 s by default). No retries at this level, as the SDK client has them off
//!   (the forwarder retries per entry itself), but for a clock-skew refusal
//!   (below); `CALL_TIMEOUT_MS` bounds each call from outside, as for the
//!   SDK path, and an operation or attempt timeout set in the SDK
//!   configuration bounds it from inside. The start-up calls retry as the
//!   SDK's standard mode does (three attempts). The environment's HTTP
//!   proxy (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`) is used as
//!   the SDK's client uses it ([`proxy`]).
//! * **Clock skew**: as the SDK, the server's clock is learned from every
//!   answer's `Date` and later requests are signed at its time (date, scope
//!   and signing-key day); a call refused with a skew code (e.g.
//!   `SignatureDoesNotMatch`, "Signature expired") whose answer moved that
//!   offset by more than 4 minutes is signed again and sent once more,
//!   inside the same call ([`skew`], the one call path in `call.rs`).
//! * **Other headers**: `X-Amzn-Trace-Id` from `_X_AMZN_TRACE_ID` in Lambda
//!   and a `User-Agent` (`sqs-forwarder/<version>`, `app/<id>` from
//!   `AWS_SDK_UA_APP_ID`), both unsigned as in the SDK ([`headers`]). The
//!   SDK's `x-amz-user-agent`, `amz-sdk-invocation-id` and
//!   `amz-sdk-request` are not sent.

mod call;
mod connect;
pub mod credentials_cache;
mod discover;
pub mod headers;
pub mod proxy;
mod roots;
mod sign;
pub mod skew;
pub mod wire;

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use http::HeaderValue;

use crate::call::transport::{BatchItem, CallError, EntryResult};
use crate::send::outcome::Failure;
use crate::setup::error::ConfigError;
use crate::setup::error::SetupError;

use self::connect::{HttpClient, endpoint_override, endpoint_uri, http_client, setup_error};
use self::credentials_cache::CredentialsCache;
use self::headers::Environment;
use self::sign::Signer;
use self::skew::ClockSkew;

pub use self::discover::discover;

/// rustls (aws-lc-rs) trusting the system's root certificates, read once
/// per process as the direct client reads them (`SSL_CERT_FILE` and
/// `SSL_CERT_DIR` honoured): for other TLS connections of a function (the
/// RabbitMQ function's `amqps://`). The error says why no root was found.
pub fn system_tls_config() -> Result<std::sync::Arc<rustls::ClientConfig>, String> {
    connect::client_config(roots::system()?).map(std::sync::Arc::new)
}

/// The SDK's connect timeout when its configuration sets none
/// (`BehaviorVersion::latest()`).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_millis(3_100);
/// The most of an answer that is read: `SendMessageBatch` answers are a few
/// KiB; anything past this is not one.
const MAX_ANSWER_BYTES: usize = 4 << 20;

/// The direct client for one endpoint and region: `SendMessageBatch`, and
/// the start-up calls of [`discover`].
pub struct DirectClient {
    http: HttpClient,
    endpoint: http::Uri,
    region: String,
    signer: Signer,
    credentials: CredentialsCache,
    call_timeout: Option<Duration>,
    skew: ClockSkew,
    user_agent: HeaderValue,
    environment: Environment,
}

impl std::fmt::Debug for DirectClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectClient")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("call_timeout", &self.call_timeout)
            .finish_non_exhaustive()
    }
}

impl DirectClient {
    /// A direct client with the region and timeouts of `sqs` (an SQS client
    /// built from `sdk`, as
    /// [`crate::setup::client::sqs_client_for`] builds it) and the credentials
    /// provider and endpoint settings of `sdk`. Resolves the endpoint and
    /// loads the TLS roots (for `https`) now; the first call fetches the
    /// credentials (at start, [`discover`]'s). Calls go through the HTTP
    /// proxy of the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`,
    /// `NO_PROXY`), as the SDK client's ([`proxy`]).
    pub fn new(sdk: &aws_config::SdkConfig, sqs: &aws_sdk_sqs::Client) -> Result<Self, SetupError> {
        Self::with_proxy(sdk, sqs, &proxy::from_env())
    }

    /// [`DirectClient::new`] with the proxy settings `proxy` instead of the
    /// environment's (`Matcher::builder().build()`: no proxy).
    pub fn with_proxy(
        sdk: &aws_config::SdkConfig,
        sqs: &aws_sdk_sqs::Client,
        proxy: &hyper_util::client::proxy::matcher::Matcher,
    ) -> Result<Self, SetupError> {
        let conf = sqs.config();
        Self::in_region(
            sdk,
            conf.region().map(|r| r.as_ref()),
            conf.timeout_config(),
            proxy,
        )
    }

    /// [`DirectClient::new`] for the SQS client `sqs` stands for (its
    /// region and timeouts), without building an aws-sdk-sqs client: what
    /// [`crate::call::transport()`] makes at start.
    pub fn for_client(
        sdk: &aws_config::SdkConfig,
        sqs: &crate::call::client_for::SqsClientFor,
    ) -> Result<Self, SetupError> {
        Self::in_region(sdk, sqs.region(), sqs.timeouts(), &proxy::from_env())
    }

    /// The client in `region` with `timeouts` (those of the SQS client it
    /// stands in for), the rest from `sdk`.
    fn in_region(
        sdk: &aws_config::SdkConfig,
        region: Option<&str>,
        timeouts: Option<&aws_config::timeout::TimeoutConfig>,
        proxy: &hyper_util::client::proxy::matcher::Matcher,
    ) -> Result<Self, SetupError> {
        let region = region.map(str::to_owned).ok_or_else(|| {
            SetupError::Config(ConfigError::new(
                "SQS_REGION",
                "",
                "a region: set AWS_REGION or SQS_REGION",
            ))
        })?;
        let provider = sdk.credentials_provider().ok_or_else(|| {
            setup_error(
                "NoCredentials",
                "the SDK configuration has no credentials provider",
            )
        })?;
        let params = aws_sdk_sqs::config::endpoint::Params::builder()
            .region(region.clone())
            .set_use_fips(sdk.use_fips())
            .set_use_dual_stack(sdk.use_dual_stack())
            .set_endpoint(endpoint_override(sdk))
            .build()
            .map_err(|e| setup_error("InvalidEndpoint", e.to_string()))?;
        // The SDK's own resolver for SQS (the client's is only set when a
        // call is made). Its future is a ready one.
        let resolver = aws_sdk_sqs::config::endpoint::DefaultResolver::new();
        let endpoint = futures_util::FutureExt::now_or_never(
            aws_sdk_sqs::config::endpoint::ResolveEndpoint::resolve_endpoint(&resolver, &params),
        )
        .ok_or_else(|| setup_error("InvalidEndpoint", "the endpoint resolver did not answer"))?
        .map_err(|e| setup_error("InvalidEndpoint", e.to_string()))?;
        let endpoint = endpoint_uri(endpoint.url())?;
        let connect_timeout = timeouts
            .and_then(|t| t.connect_timeout())
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        let call_timeout =
            timeouts.and_then(
                |t| match (t.operation_timeout(), t.operation_attempt_timeout()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                },
            );
        let http = http_client(&endpoint, connect_timeout, proxy)?;
        let client = DirectClient {
            http,
            signer: Signer::new(&endpoint, &region),
            endpoint,
            region,
            credentials: CredentialsCache::new(provider),
            call_timeout,
            skew: ClockSkew::default(),
            user_agent: headers::user_agent(sdk.app_name()),
            environment: Environment::process(),
        };
        tracing::info!(endpoint = %client.endpoint, region = %client.region, "SQS_CLIENT=direct: SendMessageBatch goes through the direct client");
        Ok(client)
    }

    /// The endpoint the calls go to.
    pub fn endpoint(&self) -> &http::Uri {
        &self.endpoint
    }

    /// Send `items` to `queue_url` in one `SendMessageBatch` call.
    pub async fn send_batch(
        &self,
        queue_url: &str,
        items: &[BatchItem],
    ) -> Result<Vec<(String, EntryResult)>, CallError> {
        let body = wire::request_body(queue_url, items).map_err(CallError::Failed)?;
        let call = self.post("SendMessageBatch", wire::TARGET, Bytes::from(body));
        let answer = self.bounded("SendMessageBatch", call).await?;
        wire::parse_answer(&answer)
    }

    /// `call` within the SDK configuration's operation or attempt timeout,
    /// if it sets one.
    async fn bounded<T>(
        &self,
        operation: &str,
        call: impl Future<Output = Result<T, CallError>>,
    ) -> Result<T, CallError> {
        match self.call_timeout {
            None => call.await,
            Some(limit) => match tokio::time::timeout(limit, call).await {
                Ok(r) => r,
                Err(_) => Err(CallError::Failed(Failure::transient(
                    crate::send::codes::TIMEOUT,
                    format!("the {operation} call timed out"),
                ))),
            },
        }
    }

    /// The same client reading `_X_AMZN_TRACE_ID` and
    /// `AWS_LAMBDA_FUNCTION_NAME` through `environment` instead of the
    /// process environment (tests).
    pub fn with_environment(mut self, environment: Environment) -> Self {
        self.environment = environment;
        self
    }

    /// The server's clock minus the local one as last learned from an
    /// answer's `Date`, in milliseconds (zero before any).
    pub fn clock_offset_ms(&self) -> i64 {
        self.skew.offset_ms()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_paths() {
        let u = |s: &str| {
            endpoint_uri(s)
                .map(|u| u.to_string())
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            u("http://127.0.0.1:4566"),
            Ok("http://127.0.0.1:4566/".into())
        );
        assert_eq!(
            u("https://sqs.eu-west-1.amazonaws.com"),
            Ok("https://sqs.eu-west-1.amazonaws.com/".into())
        );
        assert_eq!(u("http://h:1/p"), Ok("http://h:1/p/".into()));
        assert!(u("ftp://h/").is_err());
        assert!(u("/just/a/path").is_err());
    }

    #[tokio::test]
    async fn endpoint_from_the_sdk_settings() {
        use aws_credential_types::Credentials;
        use aws_credential_types::provider::SharedCredentialsProvider;
        let sdk = |endpoint: Option<&str>, fips: Option<bool>| {
            let mut b = aws_config::SdkConfig::builder()
                .region(aws_sdk_sqs::config::Region::new("eu-west-3"))
                .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                    "AKID", "secret", None, None, "test",
                )));
            b.set_endpoint_url(endpoint.map(str::to_owned));
            b.set_use_fips(fips);
            b.build()
        };
        for (endpoint, fips, want) in [
            (None, None, "https://sqs.eu-west-3.amazonaws.com/"),
            (
                None,
                Some(true),
                "https://sqs-fips.eu-west-3.amazonaws.com/",
            ),
            (
                Some("http://127.0.0.1:4566"),
                None,
                "http://127.0.0.1:4566/",
            ),
        ] {
            let sdk = sdk(endpoint, fips);
            let client = crate::setup::client::sqs_client(&sdk);
            let d = DirectClient::new(&sdk, &client);
            match (want.starts_with("https"), d) {
                (_, Ok(d)) => assert_eq!(d.endpoint().to_string(), want),
                // No system roots where this runs: the TLS setup says so.
                (true, Err(e)) => assert!(e.to_string().contains("TLS"), "{e}"),
                (false, Err(e)) => panic!("{e}"),
            }
        }
    }
}
