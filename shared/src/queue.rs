//! The target queue: the SQS client, the queue's URL and its limits, read
//! once at cold start.
//!
//! [`connect`] turns a [`Config`] into a ready [`Forwarder`]: it builds the
//! client (SDK retries off: the forwarder retries per entry itself), resolves
//! a queue name with `GetQueueUrl`, and reads `MaximumMessageSize` and
//! `ContentBasedDeduplication` with `GetQueueAttributes`. When that call is
//! not allowed (the SAM policy `SQSSendMessagePolicy` does not grant it), the
//! forwarder falls back to `FALLBACK_MESSAGE_BYTES` and says so in a warning.

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

/// An SQS client for this SDK configuration, with the SDK's own retries off.
pub fn sqs_client(sdk: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
    let conf = aws_sdk_sqs::config::Builder::from(sdk)
        .retry_config(RetryConfig::disabled())
        .build();
    aws_sdk_sqs::Client::from_conf(conf)
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
            retry: config.retry,
            oversize: config.oversize,
            fifo_order: config.fifo_order,
            call_timeout: config.call_timeout,
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
/// find the queue and read its limits.
///
/// `source_sets_group_ids` says whether the caller's messages carry their own
/// FIFO group ids; if not, a FIFO target needs `MESSAGE_GROUP_ID`.
pub async fn connect(
    config: &Config,
    source_sets_group_ids: bool,
) -> Result<Forwarder<SqsTransport>, SetupError> {
    config.check_group_ids(source_sets_group_ids)?;
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let client = sqs_client(&sdk);
    connect_with(client, config, source_sets_group_ids).await
}

/// Like [`connect`], with a client of the caller's making.
pub async fn connect_with(
    client: aws_sdk_sqs::Client,
    config: &Config,
    source_sets_group_ids: bool,
) -> Result<Forwarder<SqsTransport>, SetupError> {
    config.check_group_ids(source_sets_group_ids)?;
    let queue = discover(&client, &config.queue).await?;
    let (settings, rules) = settings_for(config, &queue);
    tracing::info!(
        queue = %queue.url,
        fifo = queue.fifo,
        max_message_bytes = settings.limits.max_message_bytes,
        queue_max_message_bytes = ?queue.max_message_bytes,
        max_request_bytes = settings.limits.max_request_bytes,
        "forwarder ready"
    );
    Ok(Forwarder::new(
        SqsTransport::new(client, queue.url),
        settings,
        rules,
    ))
}
