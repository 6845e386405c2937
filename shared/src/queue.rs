//! The target queue: the SQS client, the queue's URL and its limits, read
//! once at cold start.
//!
//! [`connect`] turns a [`Config`] into a ready [`Forwarder`]: it builds the
//! client (SDK retries off: the forwarder retries per entry itself), resolves
//! a queue name with `GetQueueUrl`, and reads `MaximumMessageSize` and
//! `ContentBasedDeduplication` with `GetQueueAttributes`. When that call is
//! not allowed (the SAM policy `SQSSendMessagePolicy` does not grant it), the
//! forwarder falls back to `FALLBACK_MESSAGE_BYTES` and says so in a warning.
//!
//! The client works in the queue's region ([`sqs_region`]): `SQS_REGION`,
//! else the region the queue URL names ([`region_of_queue_url`]), else the
//! function's. Its credentials are the function's, or an assumed role's
//! ([`crate::credentials`]).

use aws_sdk_sqs::config::Region;
use aws_sdk_sqs::config::StalledStreamProtectionConfig;
use aws_sdk_sqs::config::retry::RetryConfig;
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::QueueAttributeName;

use crate::config::{Config, ConfigError, QueueTarget};
use crate::encode::EncodeRules;
use crate::limits::Limits;
use crate::send::{Forwarder, SendSettings};
use crate::transport::SqsTransport;

/// A failure to set the forwarder up at cold start.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A configuration value is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The role in `ASSUME_ROLE_ARN` could not be assumed.
    #[error(
        "cannot assume role {role} (ASSUME_ROLE_ARN): {message}; the function's own role needs sts:AssumeRole on it, and the role's trust policy must allow the function's role (with the external id, when one is set)"
    )]
    AssumeRole {
        /// The role's ARN.
        role: String,
        /// What STS (or the way to it) said.
        message: String,
    },
    /// The queue could not be found or read.
    #[error("queue {queue}: {code}: {message}")]
    Queue {
        /// The queue URL or name, as configured.
        queue: String,
        /// The SQS error code.
        code: String,
        /// What went wrong.
        message: String,
    },
}

/// What the forwarder knows about its queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueInfo {
    /// The queue URL.
    pub url: String,
    /// Whether it is a FIFO queue.
    pub fifo: bool,
    /// `MaximumMessageSize`, when it could be read.
    pub max_message_bytes: Option<usize>,
    /// `ContentBasedDeduplication` (FIFO), when it could be read.
    pub content_based_deduplication: Option<bool>,
}

/// The settings every SQS client of the forwarder gets on top of the SDK
/// configuration: the forwarder's own retries and call timeouts are in
/// charge, so the SDK's retries are off, and so is its stalled-stream
/// protection (a throughput monitor around every request and response body,
/// with a timer per call: `CALL_TIMEOUT_MS` already bounds every call).
fn forwarder_settings(builder: aws_sdk_sqs::config::Builder) -> aws_sdk_sqs::config::Builder {
    builder
        .retry_config(RetryConfig::disabled())
        .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
}

/// An SQS client for this SDK configuration, with the SDK's own retries and
/// stalled-stream protection off (the forwarder retries and times calls out
/// itself).
pub fn sqs_client(sdk: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
    let conf = forwarder_settings(aws_sdk_sqs::config::Builder::from(sdk)).build();
    aws_sdk_sqs::Client::from_conf(conf)
}

/// The SQS client for `config`: [`sqs_client`] in the region
/// [`sqs_region`] picks, so that a queue in another region gets requests
/// sent to, and signed for, that region.
pub fn sqs_client_for(
    sdk: &aws_config::SdkConfig,
    config: &Config,
) -> Result<aws_sdk_sqs::Client, SetupError> {
    let region = sqs_region(sdk, config)?;
    let conf = forwarder_settings(aws_sdk_sqs::config::Builder::from(sdk))
        .region(Region::new(region))
        .build();
    Ok(aws_sdk_sqs::Client::from_conf(conf))
}

/// The region of the SQS client: `SQS_REGION` when set, else the region the
/// `QUEUE_URL` names, else the SDK's (`AWS_REGION`; a `QUEUE_NAME` is looked
/// up there). A `QUEUE_URL` that names no region is accepted only with
/// `SQS_REGION` or when the SQS endpoint is overridden
/// (`AWS_ENDPOINT_URL_SQS`, `AWS_ENDPOINT_URL`: local endpoints).
pub fn sqs_region(sdk: &aws_config::SdkConfig, config: &Config) -> Result<String, SetupError> {
    if let Some(region) = &config.sqs_region {
        if let QueueTarget::Url(url) = &config.queue
            && let Some(named) = region_of_queue_url(url)
            && &named != region
        {
            tracing::info!(queue = %url, url_region = %named, sqs_region = %region, "SQS_REGION overrides the queue URL's region");
        }
        return Ok(region.clone());
    }
    if let QueueTarget::Url(url) = &config.queue {
        if let Some(region) = region_of_queue_url(url) {
            return Ok(region);
        }
        if !has_sqs_endpoint_override(sdk) {
            return Err(ConfigError::new(
                "QUEUE_URL",
                url,
                "a queue URL that names its region (https://sqs.<region>.amazonaws.com/<account>/<name>); a URL without one (a local endpoint) needs AWS_ENDPOINT_URL_SQS or AWS_ENDPOINT_URL, or SQS_REGION",
            )
            .into());
        }
    }
    sdk.region().map(|r| r.as_ref().to_owned()).ok_or_else(|| {
        ConfigError::new(
            "SQS_REGION",
            "",
            "a region: set AWS_REGION or SQS_REGION, or give a QUEUE_URL that names its region",
        )
        .into()
    })
}

/// Whether the SQS endpoint is overridden in these settings, the way the SQS
/// client reads it: `AWS_ENDPOINT_URL_SQS` (or the profile's SQS
/// `endpoint_url`), or the global `AWS_ENDPOINT_URL`.
fn has_sqs_endpoint_override(sdk: &aws_config::SdkConfig) -> bool {
    let service = aws_types::service_config::ServiceConfigKey::builder()
        .service_id("SQS")
        .env("AWS_ENDPOINT_URL")
        .profile("endpoint_url")
        .build()
        .ok()
        .and_then(|key| sdk.service_config().and_then(|c| c.load_config(key)));
    service.is_some() || sdk.endpoint_url().is_some()
}

/// Whether `name` has the shape of an AWS region name: `us-east-1`,
/// `us-gov-west-1`, `cn-north-1`, `us-isob-east-1`, `eusc-de-east-1`.
pub fn is_region_name(name: &str) -> bool {
    let parts: Vec<&str> = name.split('-').collect();
    let letters = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase());
    match parts.as_slice() {
        [first, middle @ .., number] => {
            (2..=4).contains(&first.len())
                && letters(first)
                && !middle.is_empty()
                && middle.iter().all(letters)
                && (1..=2).contains(&number.len())
                && number.bytes().all(|b| b.is_ascii_digit())
        }
        _ => false,
    }
}

/// The region an SQS queue URL names, read from its host:
///
/// * `sqs.<region>.amazonaws.com`, in every partition (`amazonaws.com.cn`,
///   ...), and the `sqs-fips.<region>` and VPC endpoint
///   (`vpce-….sqs.<region>.vpce.amazonaws.com`) forms;
/// * the legacy `<region>.queue.amazonaws.com`, and `queue.amazonaws.com`
///   (us-east-1).
///
/// `None` when the host names no region, as local endpoints
/// (`http://127.0.0.1:4566/…`) do.
pub fn region_of_queue_url(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.starts_with('[') {
        return None; // an IPv6 literal
    }
    let host = host.split(':').next()?.to_ascii_lowercase();
    let host = host.trim_end_matches('.');
    if host == "queue.amazonaws.com" {
        return Some("us-east-1".into());
    }
    let labels: Vec<&str> = host.split('.').collect();
    if let Some(pair) = labels
        .windows(2)
        .find(|w| matches!(w[0], "sqs" | "sqs-fips") && is_region_name(w[1]))
    {
        return Some(pair[1].to_owned());
    }
    match labels.as_slice() {
        [region, "queue", _, ..] if is_region_name(region) => Some((*region).to_owned()),
        _ => None,
    }
}

fn error_parts<E: ProvideErrorMetadata + std::fmt::Debug, R: std::fmt::Debug>(
    e: &SdkError<E, R>,
) -> (String, String) {
    match e {
        SdkError::ServiceError(se) => (
            se.err().code().unwrap_or("UnknownError").to_owned(),
            se.err().message().unwrap_or("").to_owned(),
        ),
        SdkError::TimeoutError(_) => ("Timeout".into(), "the call timed out".into()),
        SdkError::DispatchFailure(d) => ("ConnectionError".into(), format!("{d:?}")),
        other => ("UnknownError".into(), format!("{other:?}")),
    }
}

fn is_access_denied(code: &str) -> bool {
    code.contains("AccessDenied")
        || code.contains("NotAuthorized")
        || code == "UnauthorizedOperation"
}

/// Resolve the queue URL and read its attributes.
pub async fn discover(
    client: &aws_sdk_sqs::Client,
    target: &QueueTarget,
) -> Result<QueueInfo, SetupError> {
    let standard_retries =
        aws_sdk_sqs::config::Builder::default().retry_config(RetryConfig::standard());
    let url = match target {
        QueueTarget::Url(u) => u.clone(),
        QueueTarget::Name {
            name,
            owner_account_id,
        } => {
            let out = client
                .get_queue_url()
                .queue_name(name)
                .set_queue_owner_aws_account_id(owner_account_id.clone())
                .customize()
                .config_override(standard_retries.clone())
                .send()
                .await
                .map_err(|e| {
                    let (code, message) = error_parts(&e);
                    SetupError::Queue {
                        queue: name.clone(),
                        code,
                        message: format!("GetQueueUrl failed (QUEUE_NAME): {message}"),
                    }
                })?;
            out.queue_url()
                .map(str::to_owned)
                .ok_or_else(|| SetupError::Queue {
                    queue: name.clone(),
                    code: "NoQueueUrl".into(),
                    message: "GetQueueUrl returned no URL".into(),
                })?
        }
    };
    let fifo = target.is_fifo();
    let attrs = client
        .get_queue_attributes()
        .queue_url(&url)
        .set_attribute_names(Some(if fifo {
            vec![
                QueueAttributeName::MaximumMessageSize,
                QueueAttributeName::ContentBasedDeduplication,
            ]
        } else {
            vec![QueueAttributeName::MaximumMessageSize]
        }))
        .customize()
        .config_override(standard_retries)
        .send()
        .await;
    match attrs {
        Ok(out) => {
            let map = out.attributes();
            let get = |k: &QueueAttributeName| map.and_then(|m| m.get(k)).map(String::as_str);
            let max_message_bytes =
                get(&QueueAttributeName::MaximumMessageSize).and_then(|v| v.parse().ok());
            let content_based_deduplication = get(&QueueAttributeName::ContentBasedDeduplication)
                .map(|v| v.eq_ignore_ascii_case("true"));
            Ok(QueueInfo {
                url,
                fifo,
                max_message_bytes,
                content_based_deduplication,
            })
        }
        Err(e) => {
            let (code, message) = error_parts(&e);
            if is_access_denied(&code) {
                tracing::warn!(queue = %url, %code, "GetQueueAttributes is not allowed; using FALLBACK_MESSAGE_BYTES as the queue's message limit (grant sqs:GetQueueAttributes to read the real one)");
                Ok(QueueInfo {
                    url,
                    fifo,
                    max_message_bytes: None,
                    content_based_deduplication: None,
                })
            } else {
                Err(SetupError::Queue {
                    queue: url,
                    code,
                    message: format!("GetQueueAttributes failed: {message}"),
                })
            }
        }
    }
}

/// The limits for this configuration and queue.
pub fn limits_for(config: &Config, queue: &QueueInfo) -> Limits {
    let queue_limit = queue
        .max_message_bytes
        .unwrap_or(config.fallback_message_bytes);
    Limits {
        max_entries: config.max_batch_entries,
        max_message_bytes: config
            .max_message_bytes
            .map_or(queue_limit, |c| c.min(queue_limit)),
        max_request_bytes: config.max_batch_bytes,
    }
}

/// The sending settings and encoding rules for this configuration and queue.
pub fn settings_for(config: &Config, queue: &QueueInfo) -> (SendSettings, EncodeRules) {
    (
        SendSettings {
            limits: limits_for(config, queue),
            max_in_flight: config.max_in_flight,
            window: config.window,
            retry: config.retry,
            oversize: config.oversize,
            fifo_order: config.fifo_order,
            call_timeout: config.call_timeout,
            offload: config
                .offload
                .as_ref()
                .map(|o| o.settings.clone())
                .unwrap_or_default(),
        },
        EncodeRules {
            body_encoding: config.body_encoding,
            marker_attribute: config.encoding_attribute.clone(),
            fifo: queue.fifo,
            default_group_id: config.message_group_id.clone(),
            content_based_deduplication: queue.content_based_deduplication,
        },
    )
}

/// Set up a forwarder at cold start: check the configuration, load AWS
/// settings from the environment (`AWS_REGION`, `AWS_ENDPOINT_URL_SQS`, ...),
/// find the queue and read its limits. Under `OVERSIZE_POLICY=offload` the
/// forwarder gets an S3 payload store for `OFFLOAD_BUCKET` (cargo feature
/// `s3`; `AWS_ENDPOINT_URL_S3` for a local endpoint).
///
/// `source_sets_group_ids` says whether the caller's messages carry their own
/// FIFO group ids; if not, a FIFO target needs `MESSAGE_GROUP_ID`.
pub async fn connect(
    config: &Config,
    source_sets_group_ids: bool,
) -> Result<Forwarder<SqsTransport>, SetupError> {
    config.check_group_ids(source_sets_group_ids)?;
    let sdk = crate::credentials::load_sdk_config(config).await?;
    connect_loaded(&sdk, config, source_sets_group_ids).await
}

/// [`connect`] once the AWS settings (with the assumed role, if any) are
/// loaded: the assumed role sends to the queue; offloaded payloads go to the
/// offload bucket with the function's own credentials, which the template
/// grants `s3:PutObject` on its prefix.
pub(crate) async fn connect_loaded(
    sdk: &aws_config::SdkConfig,
    config: &Config,
    source_sets_group_ids: bool,
) -> Result<Forwarder<SqsTransport>, SetupError> {
    if config.assume_role.is_some() && config.offload.is_some() {
        let own = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let client = sqs_client_for(sdk, config)?;
        let forwarder = connect_via(client, Some(sdk), config, source_sets_group_ids).await?;
        return with_offload_store(forwarder, &own, config);
    }
    connect_sdk(sdk, config, source_sets_group_ids).await
}

/// Like [`connect`], with AWS settings of the caller's making, used as they
/// are (for an assumed role, pass them through
/// [`crate::credentials::assume_role`] first). The client's region is
/// [`sqs_region`]'s. Under `OVERSIZE_POLICY=offload` the S3 payload store
/// uses the same settings ([`connect`] instead uses the function's own
/// credentials for S3 when it assumes a role).
pub async fn connect_sdk(
    sdk: &aws_config::SdkConfig,
    config: &Config,
    source_sets_group_ids: bool,
) -> Result<Forwarder<SqsTransport>, SetupError> {
    config.check_group_ids(source_sets_group_ids)?;
    let client = sqs_client_for(sdk, config)?;
    let forwarder = connect_via(client, Some(sdk), config, source_sets_group_ids).await?;
    with_offload_store(forwarder, sdk, config)
}

/// Under `OVERSIZE_POLICY=offload`, `forwarder` with an S3 payload store for
/// `OFFLOAD_BUCKET`, its client made from `sdk`.
fn with_offload_store(
    forwarder: Forwarder<SqsTransport>,
    sdk: &aws_config::SdkConfig,
    config: &Config,
) -> Result<Forwarder<SqsTransport>, SetupError> {
    #[cfg(not(feature = "s3"))]
    let _ = sdk;
    match &config.offload {
        None => Ok(forwarder),
        #[cfg(feature = "s3")]
        Some(o) => Ok(
            forwarder.with_payload_store(crate::offload::S3PayloadStore::new(
                crate::offload::s3_client(sdk, o.force_path_style),
                o.bucket.clone(),
            )),
        ),
        #[cfg(not(feature = "s3"))]
        Some(_) => Err(SetupError::Config(ConfigError::new(
            "OVERSIZE_POLICY",
            "offload",
            "fail or drop: this build of sqs-forwarder has no S3 support (cargo feature s3)",
        ))),
    }
}

/// Like [`connect`], with a client of the caller's making. It attaches no
/// payload store: under `OVERSIZE_POLICY=offload`, add one with
/// [`Forwarder::with_payload_store`].
pub async fn connect_with(
    client: aws_sdk_sqs::Client,
    config: &Config,
    source_sets_group_ids: bool,
) -> Result<Forwarder<SqsTransport>, SetupError> {
    connect_via(client, None, config, source_sets_group_ids).await
}

/// [`connect_with`], with the SDK configuration the client was built from
/// when there is one: `SQS_CLIENT=direct` needs it ([`crate::direct`]).
async fn connect_via(
    client: aws_sdk_sqs::Client,
    sdk: Option<&aws_config::SdkConfig>,
    config: &Config,
    source_sets_group_ids: bool,
) -> Result<Forwarder<SqsTransport>, SetupError> {
    config.check_group_ids(source_sets_group_ids)?;
    let queue = discover(&client, &config.queue).await?;
    let (settings, rules) = settings_for(config, &queue);
    tracing::info!(
        queue = %queue.url,
        region = ?client.config().region(),
        fifo = queue.fifo,
        max_message_bytes = settings.limits.max_message_bytes,
        queue_max_message_bytes = ?queue.max_message_bytes,
        max_request_bytes = settings.limits.max_request_bytes,
        offload_bucket = config.offload.as_ref().map(|o| o.bucket.as_str()),
        offload_threshold = config
            .offload
            .as_ref()
            .map(|o| o.settings.threshold_for(settings.limits.largest_message())),
        offload_always = config.offload.as_ref().is_some_and(|o| o.settings.always),
        "forwarder ready"
    );
    let transport = crate::direct::transport(client, sdk, config, queue.url).await?;
    Ok(Forwarder::new(transport, settings, rules))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn region_from_every_queue_url_form() {
        let cases = [
            (
                "https://sqs.eu-west-3.amazonaws.com/123456789012/q",
                Some("eu-west-3"),
            ),
            (
                "https://sqs.us-east-1.amazonaws.com/123456789012/q.fifo",
                Some("us-east-1"),
            ),
            (
                "https://sqs.us-gov-west-1.amazonaws.com/123456789012/q",
                Some("us-gov-west-1"),
            ),
            (
                "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q",
                Some("cn-north-1"),
            ),
            (
                "https://sqs.cn-northwest-1.amazonaws.com.cn/123456789012/q",
                Some("cn-northwest-1"),
            ),
            (
                "https://sqs.us-iso-east-1.c2s.ic.gov/123456789012/q",
                Some("us-iso-east-1"),
            ),
            (
                "https://sqs.eusc-de-east-1.amazonaws.eu/123456789012/q",
                Some("eusc-de-east-1"),
            ),
            (
                "https://sqs-fips.us-east-2.amazonaws.com/123456789012/q",
                Some("us-east-2"),
            ),
            (
                "https://sqs.ap-southeast-2.api.aws/123456789012/q",
                Some("ap-southeast-2"),
            ),
            (
                "https://vpce-0a1b2c3d-4e5f.sqs.eu-central-1.vpce.amazonaws.com/123456789012/q",
                Some("eu-central-1"),
            ),
            // Legacy forms.
            (
                "https://ap-northeast-1.queue.amazonaws.com/123456789012/q",
                Some("ap-northeast-1"),
            ),
            (
                "https://cn-north-1.queue.amazonaws.com.cn/123456789012/q",
                Some("cn-north-1"),
            ),
            (
                "https://queue.amazonaws.com/123456789012/q",
                Some("us-east-1"),
            ),
            // Case, ports, a trailing dot.
            (
                "HTTPS://SQS.EU-WEST-1.AMAZONAWS.COM/123456789012/Q",
                Some("eu-west-1"),
            ),
            (
                "https://sqs.eu-west-1.amazonaws.com:443/123456789012/q",
                Some("eu-west-1"),
            ),
            (
                "https://sqs.eu-west-1.amazonaws.com./123456789012/q",
                Some("eu-west-1"),
            ),
            // LocalStack's regional host names the region too.
            (
                "http://sqs.eu-west-1.localhost.localstack.cloud:4566/000000000000/q",
                Some("eu-west-1"),
            ),
            // Local endpoints and hosts that name no region.
            ("http://127.0.0.1:4566/123456789012/q", None),
            ("http://localhost:4566/123456789012/q", None),
            ("http://[::1]:4566/123456789012/q", None),
            ("https://sqs.amazonaws.com/123456789012/q", None),
            ("https://queues.example.com/123456789012/q", None),
            (
                "https://sqs.not-a-region.amazonaws.com/123456789012/q",
                None,
            ),
        ];
        for (url, region) in cases {
            assert_eq!(region_of_queue_url(url).as_deref(), region, "{url}");
        }
    }

    #[test]
    fn region_names() {
        for ok in [
            "us-east-1",
            "eu-central-2",
            "ap-southeast-7",
            "us-gov-east-1",
            "cn-north-1",
            "us-isob-east-1",
            "eusc-de-east-1",
            "il-central-1",
        ] {
            assert!(is_region_name(ok), "{ok}");
        }
        for bad in [
            "",
            "us",
            "us-east",
            "us-east-",
            "useast-1",
            "us_east_1",
            "US-EAST-1",
            "us-east-123",
            "u-east-1",
            "local",
        ] {
            assert!(!is_region_name(bad), "{bad}");
        }
    }

    fn config(vars: &[(&str, &str)]) -> Config {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned()).expect("valid configuration")
    }

    fn sdk(region: Option<&str>, endpoint: Option<&str>) -> aws_config::SdkConfig {
        let mut b = aws_config::SdkConfig::builder();
        b.set_region(region.map(|r| Region::new(r.to_owned())));
        b.set_endpoint_url(endpoint.map(str::to_owned));
        b.build()
    }

    #[test]
    fn client_region_precedence() {
        let remote = "https://sqs.ap-south-1.amazonaws.com/123456789012/q";
        let local = "http://127.0.0.1:4566/123456789012/q";
        let home = sdk(Some("us-east-1"), None);
        let region = |sdk: &aws_config::SdkConfig, vars: &[(&str, &str)]| {
            sqs_region(sdk, &config(vars)).map_err(|e| e.to_string())
        };
        // The queue's region beats the function's; SQS_REGION beats both.
        assert_eq!(
            region(&home, &[("QUEUE_URL", remote)]),
            Ok("ap-south-1".into())
        );
        assert_eq!(
            region(&home, &[("QUEUE_URL", remote), ("SQS_REGION", "eu-west-2")]),
            Ok("eu-west-2".into())
        );
        // A name is looked up in SQS_REGION, else the function's region.
        assert_eq!(
            region(&home, &[("QUEUE_NAME", "q")]),
            Ok("us-east-1".into())
        );
        assert_eq!(
            region(&home, &[("QUEUE_NAME", "q"), ("SQS_REGION", "sa-east-1")]),
            Ok("sa-east-1".into())
        );
        // A URL naming no region: fine with an endpoint override or SQS_REGION.
        let overridden = sdk(Some("us-east-1"), Some("http://127.0.0.1:4566"));
        assert_eq!(
            region(&overridden, &[("QUEUE_URL", local)]),
            Ok("us-east-1".into())
        );
        assert_eq!(
            region(&home, &[("QUEUE_URL", local), ("SQS_REGION", "eu-north-1")]),
            Ok("eu-north-1".into())
        );
        let e = region(&home, &[("QUEUE_URL", local)]).expect_err("no region");
        assert!(
            e.starts_with(&format!(
                "invalid configuration: QUEUE_URL={local:?}: a queue URL that names its region"
            )),
            "{e}"
        );
        // No region anywhere.
        let nowhere = sdk(None, Some("http://127.0.0.1:4566"));
        let e = region(&nowhere, &[("QUEUE_URL", local)]).expect_err("no region");
        assert!(
            e.starts_with("invalid configuration: SQS_REGION=\"\": a region"),
            "{e}"
        );
        assert_eq!(
            region(&nowhere, &[("QUEUE_URL", remote)]),
            Ok("ap-south-1".into())
        );
    }

    #[test]
    fn client_is_built_for_the_queue_region() {
        let c = sqs_client_for(
            &sdk(Some("us-east-1"), None),
            &config(&[(
                "QUEUE_URL",
                "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q",
            )]),
        )
        .expect("client");
        assert_eq!(c.config().region().map(|r| r.as_ref()), Some("cn-north-1"));
    }
}
