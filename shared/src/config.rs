//! Configuration from environment variables, read and validated once.
//!
//! [`Config::from_env`] reads every variable the forwarder knows, checks it,
//! and fails with a [`ConfigError`] that names the variable, the value and
//! what is allowed. The README's configuration table lists the same
//! variables with the same defaults; `tests/` checks that the two agree.

use std::time::Duration;

use crate::batch::FifoOrder;
use crate::encode::{BodyEncoding, DEFAULT_ENCODING_ATTRIBUTE, check_attribute};
use crate::limits::{MAX_BATCH_ENTRIES, MAX_MESSAGE_BYTES, MAX_REQUEST_BYTES, MIN_MESSAGE_BYTES};
use crate::message::Attribute;
use crate::offload::{self, OffloadSettings, SizeAttribute};
use crate::retry::RetryPolicy;
use crate::send::{OversizePolicy, Window};

/// A configuration value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid configuration: {variable}={value:?}: {allowed}")]
pub struct ConfigError {
    /// The variable.
    pub variable: String,
    /// The value it had ("" when unset).
    pub value: String,
    /// What is allowed.
    pub allowed: String,
}

impl ConfigError {
    /// An error for `variable`, which had `value`; `allowed` says what would do.
    pub fn new(variable: &str, value: &str, allowed: impl Into<String>) -> Self {
        ConfigError {
            variable: variable.into(),
            value: value.into(),
            allowed: allowed.into(),
        }
    }
}

/// Where to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueTarget {
    /// A queue URL (`QUEUE_URL`).
    Url(String),
    /// A queue name, optionally in another account, resolved with
    /// `GetQueueUrl` (`QUEUE_NAME`, `QUEUE_OWNER_ACCOUNT_ID`).
    Name {
        /// Queue name.
        name: String,
        /// Owner's AWS account id, for cross-account queues.
        owner_account_id: Option<String>,
    },
}

impl QueueTarget {
    /// Whether the queue is FIFO (its name ends in `.fifo`).
    pub fn is_fifo(&self) -> bool {
        match self {
            QueueTarget::Url(u) => u.trim_end_matches('/').ends_with(".fifo"),
            QueueTarget::Name { name, .. } => name.ends_with(".fifo"),
        }
    }
}

/// A role to send as (`ASSUME_ROLE_ARN`): its temporary credentials sign
/// every SQS call (and the S3 calls of a function that reads objects).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssumeRole {
    /// The role's ARN (`ASSUME_ROLE_ARN`).
    pub role_arn: String,
    /// The session name (`ASSUME_ROLE_SESSION_NAME`), visible in the role
    /// owner's CloudTrail.
    pub session_name: String,
    /// The external id the role's trust policy asks for
    /// (`ASSUME_ROLE_EXTERNAL_ID`).
    pub external_id: Option<String>,
}

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// JSON when running in Lambda, text elsewhere.
    #[default]
    Auto,
    /// JSON lines.
    Json,
    /// Human-readable text.
    Text,
}

/// Every setting of the forwarder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The target queue.
    pub queue: QueueTarget,
    /// The SQS client's region (`SQS_REGION`); when unset, the queue URL's
    /// region, else the SDK's (`AWS_REGION`).
    pub sqs_region: Option<String>,
    /// Which client makes the `SendMessageBatch` calls (`SQS_CLIENT`).
    pub sqs_client: crate::direct::SqsClient,
    /// The role to send as (`ASSUME_ROLE_ARN` and its companions).
    pub assume_role: Option<AssumeRole>,
    /// Entries per call (`MAX_BATCH_ENTRIES`).
    pub max_batch_entries: usize,
    /// Lowers the queue's own message limit (`MAX_MESSAGE_BYTES`).
    pub max_message_bytes: Option<usize>,
    /// Message limit used when the queue's cannot be read
    /// (`FALLBACK_MESSAGE_BYTES`).
    pub fallback_message_bytes: usize,
    /// Bytes per call (`MAX_BATCH_BYTES`).
    pub max_batch_bytes: usize,
    /// Calls in flight (`MAX_IN_FLIGHT`).
    pub max_in_flight: usize,
    /// The most messages and bytes held at once (`WINDOW_MESSAGES`,
    /// `WINDOW_BYTES`).
    pub window: Window,
    /// Retries (`RETRY_MAX_ATTEMPTS`, `RETRY_BASE_DELAY_MS`, `RETRY_MAX_DELAY_MS`).
    pub retry: RetryPolicy,
    /// Per-call timeout (`CALL_TIMEOUT_MS`).
    pub call_timeout: Duration,
    /// Time kept back from the Lambda deadline (`DEADLINE_MARGIN_MS`).
    pub deadline_margin: Duration,
    /// Oversize policy (`OVERSIZE_POLICY`).
    pub oversize: OversizePolicy,
    /// Where and when payloads go to S3; `Some` exactly when
    /// `OVERSIZE_POLICY=offload` (`OFFLOAD_*`).
    pub offload: Option<OffloadConfig>,
    /// Body encoding policy (`BODY_ENCODING`).
    pub body_encoding: BodyEncoding,
    /// Marker attribute name (`ENCODING_ATTRIBUTE`).
    pub encoding_attribute: String,
    /// FIFO group order (`FIFO_ORDER`).
    pub fifo_order: FifoOrder,
    /// Group id for messages that bring none (`MESSAGE_GROUP_ID`).
    pub message_group_id: Option<String>,
    /// CloudWatch namespace of the metrics (`METRICS_NAMESPACE`).
    pub metrics_namespace: String,
    /// Log format (`LOG_FORMAT`).
    pub log_format: LogFormat,
}

/// Where and when payloads go to S3 (`OVERSIZE_POLICY=offload`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadConfig {
    /// The bucket (`OFFLOAD_BUCKET`).
    pub bucket: String,
    /// Key prefix, threshold, always, size attribute (`OFFLOAD_KEY_PREFIX`,
    /// `OFFLOAD_THRESHOLD_BYTES`, `OFFLOAD_ALWAYS`, `OFFLOAD_SIZE_ATTRIBUTE`).
    pub settings: OffloadSettings,
    /// Path-style S3 addressing, for local endpoints
    /// (`OFFLOAD_FORCE_PATH_STYLE`).
    pub force_path_style: bool,
}

/// Every variable [`Config::from_env`] reads, with its default ("" = none).
pub const VARIABLES: &[(&str, &str)] = &[
    ("QUEUE_URL", ""),
    ("QUEUE_NAME", ""),
    ("QUEUE_OWNER_ACCOUNT_ID", ""),
    ("SQS_REGION", ""),
    ("SQS_CLIENT", "sdk"),
    ("ASSUME_ROLE_ARN", ""),
    ("ASSUME_ROLE_SESSION_NAME", "sqs-forwarder"),
    ("ASSUME_ROLE_EXTERNAL_ID", ""),
    ("MAX_BATCH_ENTRIES", "10"),
    ("MAX_MESSAGE_BYTES", ""),
    ("FALLBACK_MESSAGE_BYTES", "1048576"),
    ("MAX_BATCH_BYTES", "1048576"),
    ("MAX_IN_FLIGHT", ""),
    ("WINDOW_MESSAGES", "1000"),
    ("WINDOW_BYTES", "8388608"),
    ("RETRY_MAX_ATTEMPTS", "5"),
    ("RETRY_BASE_DELAY_MS", "50"),
    ("RETRY_MAX_DELAY_MS", "2000"),
    ("CALL_TIMEOUT_MS", "10000"),
    ("DEADLINE_MARGIN_MS", "500"),
    ("OVERSIZE_POLICY", "fail"),
    ("OFFLOAD_BUCKET", ""),
    ("OFFLOAD_KEY_PREFIX", ""),
    ("OFFLOAD_THRESHOLD_BYTES", ""),
    ("OFFLOAD_ALWAYS", "false"),
    ("OFFLOAD_SIZE_ATTRIBUTE", offload::SIZE_ATTRIBUTE),
    ("OFFLOAD_FORCE_PATH_STYLE", "false"),
    ("BODY_ENCODING", "auto"),
    ("ENCODING_ATTRIBUTE", DEFAULT_ENCODING_ATTRIBUTE),
    ("FIFO_ORDER", "strict"),
    ("MESSAGE_GROUP_ID", ""),
    ("METRICS_NAMESPACE", "SqsForwarder"),
    ("LOG_FORMAT", "auto"),
];

struct Reader<F> {
    lookup: F,
}

impl<F: Fn(&str) -> Option<String>> Reader<F> {
    fn raw(&self, name: &str) -> Option<String> {
        (self.lookup)(name).filter(|v| !v.trim().is_empty())
    }

    fn string(&self, name: &str) -> String {
        self.raw(name)
            .or_else(|| {
                default_of(name)
                    .filter(|d| !d.is_empty())
                    .map(str::to_owned)
            })
            .unwrap_or_default()
    }

    fn number(
        &self,
        name: &str,
        min: u64,
        max: u64,
        unit: &str,
    ) -> Result<Option<u64>, ConfigError> {
        let Some(raw) = self.raw(name).or_else(|| {
            default_of(name)
                .filter(|d| !d.is_empty())
                .map(str::to_owned)
        }) else {
            return Ok(None);
        };
        let allowed = || format!("an integer from {min} to {max}{unit}");
        let v: u64 = raw
            .trim()
            .parse()
            .map_err(|_| ConfigError::new(name, &raw, allowed()))?;
        if v < min || v > max {
            return Err(ConfigError::new(name, &raw, allowed()));
        }
        Ok(Some(v))
    }

    fn required_number(
        &self,
        name: &str,
        min: u64,
        max: u64,
        unit: &str,
    ) -> Result<u64, ConfigError> {
        self.number(name, min, max, unit)?.ok_or_else(|| {
            ConfigError::new(name, "", format!("an integer from {min} to {max}{unit}"))
        })
    }

    fn choice<T>(
        &self,
        name: &str,
        parse: impl Fn(&str) -> Option<T>,
        names: &str,
    ) -> Result<T, ConfigError> {
        let raw = self.string(name);
        parse(raw.trim()).ok_or_else(|| ConfigError::new(name, &raw, format!("one of: {names}")))
    }
}

fn flag(value: &str) -> Option<bool> {
    match value {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The `OFFLOAD_*` variables: all read and checked whatever the policy; the
/// ones that only mean something under `offload` are refused under another.
fn read_offload<F: Fn(&str) -> Option<String>>(
    r: &Reader<F>,
    oversize: OversizePolicy,
) -> Result<Option<OffloadConfig>, ConfigError> {
    let bucket = r.raw("OFFLOAD_BUCKET").map(|b| b.trim().to_owned());
    if let Some(b) = &bucket
        && !offload::is_bucket_name(b)
    {
        return Err(ConfigError::new(
            "OFFLOAD_BUCKET",
            b,
            "an S3 bucket name: 3..63 of a-z 0-9 . -, starting and ending with a letter or digit",
        ));
    }
    let key_prefix = r.string("OFFLOAD_KEY_PREFIX").trim().to_owned();
    if !offload::is_key_prefix(&key_prefix) {
        return Err(ConfigError::new(
            "OFFLOAD_KEY_PREFIX",
            &key_prefix,
            "at most 512 of A-Z a-z 0-9 ! - _ . * ' ( ) /",
        ));
    }
    let threshold = r
        .number(
            "OFFLOAD_THRESHOLD_BYTES",
            MIN_MESSAGE_BYTES as u64,
            MAX_MESSAGE_BYTES as u64,
            " bytes",
        )?
        .map(|v| v as usize);
    let always = r.choice("OFFLOAD_ALWAYS", flag, "true, false")?;
    let size_attribute = r.choice(
        "OFFLOAD_SIZE_ATTRIBUTE",
        SizeAttribute::parse,
        SizeAttribute::NAMES,
    )?;
    let force_path_style = r.choice("OFFLOAD_FORCE_PATH_STYLE", flag, "true, false")?;
    if oversize != OversizePolicy::Offload {
        let only = "only with OVERSIZE_POLICY=offload";
        if let Some(t) = threshold {
            return Err(ConfigError::new(
                "OFFLOAD_THRESHOLD_BYTES",
                &t.to_string(),
                only,
            ));
        }
        if always {
            return Err(ConfigError::new("OFFLOAD_ALWAYS", "true", only));
        }
        return Ok(None);
    }
    let Some(bucket) = bucket else {
        return Err(ConfigError::new(
            "OFFLOAD_BUCKET",
            "",
            "the S3 bucket for offloaded payloads: OVERSIZE_POLICY is offload",
        ));
    };
    Ok(Some(OffloadConfig {
        bucket,
        settings: OffloadSettings {
            threshold,
            always,
            key_prefix,
            size_attribute,
        },
        force_path_style,
    }))
}

/// The variable Lambda sets to the function's memory, in MB; read for
/// `MAX_IN_FLIGHT`'s default (not a setting of ours: not in [`VARIABLES`]).
pub const MEMORY_SIZE_VARIABLE: &str = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE";

fn memory_mb<F: Fn(&str) -> Option<String>>(r: &Reader<F>) -> Option<u64> {
    r.raw(MEMORY_SIZE_VARIABLE)?.trim().parse().ok()
}

/// `MAX_IN_FLIGHT` when it is not set: one call in flight per 64 MB of the
/// function's memory, at least 4 and at most 64 (4 up to 256 MB, 27 at
/// 1,769 MB); 4 outside Lambda. Lambda gives a function CPU in proportion to
/// its memory (1,769 MB = one vCPU), so the CPU a call costs takes less wall
/// time on a larger function, and more calls must be in flight to keep it
/// busy while answers are a round trip away: at 1,769 MB and 10 ms round
/// trips, 4 calls in flight kept a 10,000-record event waiting on the
/// network (see the README, "Benchmarks").
pub fn default_max_in_flight(memory_mb: Option<u64>) -> usize {
    memory_mb.map_or(4, |mb| (mb / 64).clamp(4, 64) as usize)
}

fn default_of(name: &str) -> Option<&'static str> {
    VARIABLES.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

/// `ASSUME_ROLE_ARN` and its companions, checked against what STS accepts.
fn read_assume_role<F: Fn(&str) -> Option<String>>(
    r: &Reader<F>,
) -> Result<Option<AssumeRole>, ConfigError> {
    // STS's own character sets: RoleSessionName `[\w+=,.@-]`, ExternalId
    // also `:` and `/`.
    let session_chars = |c: char| c.is_ascii_alphanumeric() || "_+=,.@-".contains(c);
    let external_chars = |c: char| session_chars(c) || c == ':' || c == '/';
    let role_arn = r.raw("ASSUME_ROLE_ARN").map(|s| s.trim().to_owned());
    let session_set = r.raw("ASSUME_ROLE_SESSION_NAME");
    let session_name = r.string("ASSUME_ROLE_SESSION_NAME").trim().to_owned();
    let external_id = r
        .raw("ASSUME_ROLE_EXTERNAL_ID")
        .map(|s| s.trim().to_owned());
    let Some(role_arn) = role_arn else {
        if let Some(v) = session_set {
            return Err(ConfigError::new(
                "ASSUME_ROLE_SESSION_NAME",
                &v,
                "only with ASSUME_ROLE_ARN",
            ));
        }
        if let Some(v) = external_id {
            return Err(ConfigError::new(
                "ASSUME_ROLE_EXTERNAL_ID",
                &v,
                "only with ASSUME_ROLE_ARN",
            ));
        }
        return Ok(None);
    };
    if !is_role_arn(&role_arn) {
        return Err(ConfigError::new(
            "ASSUME_ROLE_ARN",
            &role_arn,
            "an IAM role ARN such as arn:aws:iam::123456789012:role/sqs-sender",
        ));
    }
    if !(2..=64).contains(&session_name.len()) || !session_name.chars().all(session_chars) {
        return Err(ConfigError::new(
            "ASSUME_ROLE_SESSION_NAME",
            &session_name,
            "2..64 of A-Z a-z 0-9 _ + = , . @ -",
        ));
    }
    if let Some(id) = &external_id
        && (!(2..=1224).contains(&id.len()) || !id.chars().all(external_chars))
    {
        return Err(ConfigError::new(
            "ASSUME_ROLE_EXTERNAL_ID",
            id,
            "2..1224 of A-Z a-z 0-9 _ + = , . @ : / -",
        ));
    }
    Ok(Some(AssumeRole {
        role_arn,
        session_name,
        external_id,
    }))
}

/// `arn:<partition>:iam::<account>:role/<path and name>`.
fn is_role_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let [prefix, partition, service, region, account, resource] = parts[..] else {
        return false;
    };
    let name = resource.strip_prefix("role/").unwrap_or("");
    prefix == "arn"
        && (partition == "aws" || partition.starts_with("aws-"))
        && service == "iam"
        && region.is_empty()
        && account.len() == 12
        && account.bytes().all(|b| b.is_ascii_digit())
        && !name.is_empty()
        && arn.len() <= 2048
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_+=,.@-/".contains(c))
}

impl Config {
    /// Read the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Read the configuration through `lookup` (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let r = Reader { lookup };
        let queue = match (r.raw("QUEUE_URL"), r.raw("QUEUE_NAME")) {
            (Some(url), None) => {
                let url = url.trim().to_owned();
                let ok = (url.starts_with("https://") || url.starts_with("http://"))
                    && url
                        .trim_end_matches('/')
                        .rsplit('/')
                        .next()
                        .is_some_and(|n| !n.is_empty() && !n.contains(':'));
                if !ok {
                    return Err(ConfigError::new(
                        "QUEUE_URL",
                        &url,
                        "an SQS queue URL such as https://sqs.us-east-1.amazonaws.com/123456789012/my-queue",
                    ));
                }
                QueueTarget::Url(url)
            }
            (None, Some(name)) => {
                let name = name.trim().to_owned();
                let base = name.strip_suffix(".fifo").unwrap_or(&name);
                if base.is_empty()
                    || name.len() > 80
                    || !base
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                {
                    return Err(ConfigError::new(
                        "QUEUE_NAME",
                        &name,
                        "a queue name: 1..80 of A-Z a-z 0-9 - _, with .fifo at the end for FIFO queues",
                    ));
                }
                let owner = r.raw("QUEUE_OWNER_ACCOUNT_ID").map(|s| s.trim().to_owned());
                if let Some(o) = &owner
                    && (o.len() != 12 || !o.bytes().all(|b| b.is_ascii_digit()))
                {
                    return Err(ConfigError::new(
                        "QUEUE_OWNER_ACCOUNT_ID",
                        o,
                        "a 12-digit AWS account id",
                    ));
                }
                QueueTarget::Name {
                    name,
                    owner_account_id: owner,
                }
            }
            (Some(url), Some(_)) => {
                return Err(ConfigError::new(
                    "QUEUE_URL",
                    &url,
                    "either QUEUE_URL or QUEUE_NAME, not both",
                ));
            }
            (None, None) => {
                return Err(ConfigError::new(
                    "QUEUE_URL",
                    "",
                    "the target queue's URL (or set QUEUE_NAME, with QUEUE_OWNER_ACCOUNT_ID for a queue in another account)",
                ));
            }
        };
        if matches!(queue, QueueTarget::Url(_))
            && let Some(o) = r.raw("QUEUE_OWNER_ACCOUNT_ID")
        {
            return Err(ConfigError::new(
                "QUEUE_OWNER_ACCOUNT_ID",
                &o,
                "only with QUEUE_NAME (a QUEUE_URL already names the account)",
            ));
        }
        let sqs_region = r.raw("SQS_REGION").map(|s| s.trim().to_owned());
        if let Some(region) = &sqs_region
            && !crate::queue::is_region_name(region)
        {
            return Err(ConfigError::new(
                "SQS_REGION",
                region,
                "an AWS region name such as eu-west-1 or cn-north-1",
            ));
        }
        let sqs_client = r.choice(
            "SQS_CLIENT",
            crate::direct::SqsClient::parse,
            crate::direct::SqsClient::NAMES,
        )?;
        let assume_role = read_assume_role(&r)?;

        let max_batch_entries =
            r.required_number("MAX_BATCH_ENTRIES", 1, MAX_BATCH_ENTRIES as u64, "")? as usize;
        let bytes = |name| {
            r.number(
                name,
                MIN_MESSAGE_BYTES as u64,
                MAX_MESSAGE_BYTES as u64,
                " bytes",
            )
        };
        let max_message_bytes = bytes("MAX_MESSAGE_BYTES")?.map(|v| v as usize);
        let fallback_message_bytes =
            bytes("FALLBACK_MESSAGE_BYTES")?.unwrap_or(MAX_MESSAGE_BYTES as u64) as usize;
        let max_batch_bytes = r.required_number(
            "MAX_BATCH_BYTES",
            MIN_MESSAGE_BYTES as u64,
            MAX_REQUEST_BYTES as u64,
            " bytes",
        )? as usize;
        let max_in_flight = match r.number("MAX_IN_FLIGHT", 1, 64, "")? {
            Some(v) => v as usize,
            None => default_max_in_flight(memory_mb(&r)),
        };
        let window = Window {
            max_messages: r.required_number("WINDOW_MESSAGES", 1, 1_000_000, "")? as usize,
            max_bytes: r.required_number("WINDOW_BYTES", 1_048_576, 1_073_741_824, " bytes")?
                as usize,
        };
        let max_attempts = r.required_number("RETRY_MAX_ATTEMPTS", 1, 20, "")? as u32;
        let base = r.required_number("RETRY_BASE_DELAY_MS", 1, 60_000, " ms")?;
        let max = r.required_number("RETRY_MAX_DELAY_MS", 1, 300_000, " ms")?;
        if max < base {
            return Err(ConfigError::new(
                "RETRY_MAX_DELAY_MS",
                &max.to_string(),
                format!("at least RETRY_BASE_DELAY_MS ({base})"),
            ));
        }
        let call_timeout = r.required_number("CALL_TIMEOUT_MS", 100, 900_000, " ms")?;
        let deadline_margin = r.required_number("DEADLINE_MARGIN_MS", 0, 60_000, " ms")?;
        let oversize = r.choice(
            "OVERSIZE_POLICY",
            OversizePolicy::parse,
            OversizePolicy::NAMES,
        )?;
        let offload = read_offload(&r, oversize)?;
        let body_encoding = r.choice("BODY_ENCODING", BodyEncoding::parse, BodyEncoding::NAMES)?;
        let encoding_attribute = r.string("ENCODING_ATTRIBUTE");
        if check_attribute(&Attribute::string(encoding_attribute.clone(), "base64")).is_err() {
            return Err(ConfigError::new(
                "ENCODING_ATTRIBUTE",
                &encoding_attribute,
                "an SQS attribute name: 1..256 of A-Z a-z 0-9 _ - ., no leading, trailing or double period, no AWS./Amazon. prefix",
            ));
        }
        let fifo_order = r.choice("FIFO_ORDER", FifoOrder::parse, FifoOrder::NAMES)?;
        let message_group_id = r.raw("MESSAGE_GROUP_ID");
        if let Some(g) = &message_group_id
            && !crate::fifo_id::is_valid(g)
        {
            return Err(ConfigError::new(
                "MESSAGE_GROUP_ID",
                g,
                "1..128 ASCII letters, digits or punctuation",
            ));
        }
        let metrics_namespace = r.string("METRICS_NAMESPACE");
        if metrics_namespace.len() > 255
            || !metrics_namespace
                .bytes()
                .all(|b| b.is_ascii_graphic() || b == b' ')
        {
            return Err(ConfigError::new(
                "METRICS_NAMESPACE",
                &metrics_namespace,
                "1..255 printable ASCII characters",
            ));
        }
        let log_format = r.choice(
            "LOG_FORMAT",
            |v| match v {
                "auto" => Some(LogFormat::Auto),
                "json" => Some(LogFormat::Json),
                "text" => Some(LogFormat::Text),
                _ => None,
            },
            "auto, json, text",
        )?;

        Ok(Config {
            queue,
            sqs_region,
            sqs_client,
            assume_role,
            max_batch_entries,
            max_message_bytes,
            fallback_message_bytes,
            max_batch_bytes,
            max_in_flight,
            window,
            retry: RetryPolicy {
                max_attempts,
                base_delay: Duration::from_millis(base),
                max_delay: Duration::from_millis(max),
            },
            call_timeout: Duration::from_millis(call_timeout),
            deadline_margin: Duration::from_millis(deadline_margin),
            oversize,
            offload,
            body_encoding,
            encoding_attribute,
            fifo_order,
            message_group_id,
            metrics_namespace,
            log_format,
        })
    }

    /// Check, at start, that a FIFO target will get a group id for every
    /// message: from the event source (`source_sets_group_ids`) or from
    /// `MESSAGE_GROUP_ID`.
    pub fn check_group_ids(&self, source_sets_group_ids: bool) -> Result<(), ConfigError> {
        if self.queue.is_fifo() && !source_sets_group_ids && self.message_group_id.is_none() {
            let (var, val) = match &self.queue {
                QueueTarget::Url(u) => ("MESSAGE_GROUP_ID", u.as_str()),
                QueueTarget::Name { name, .. } => ("MESSAGE_GROUP_ID", name.as_str()),
            };
            return Err(ConfigError::new(
                var,
                "",
                format!(
                    "a message group id: the target {val} is a FIFO queue and this function's messages carry none"
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    const URL: &str = "https://sqs.eu-west-1.amazonaws.com/123456789012/q";

    #[test]
    fn defaults() {
        let c = config(&[("QUEUE_URL", URL)]).expect("valid");
        assert_eq!(c.queue, QueueTarget::Url(URL.into()));
        assert_eq!(c.max_batch_entries, 10);
        assert_eq!(c.max_message_bytes, None);
        assert_eq!(c.fallback_message_bytes, 1_048_576);
        assert_eq!(c.max_batch_bytes, 1_048_576);
        assert_eq!(c.max_in_flight, 4);
        assert_eq!(c.retry, RetryPolicy::default());
        // MAX_IN_FLIGHT unset follows Lambda's memory; set, it is as set.
        let at = |mb: &str, set: Option<&str>| {
            let mut vars = vec![("QUEUE_URL", URL), (MEMORY_SIZE_VARIABLE, mb)];
            vars.extend(set.map(|v| ("MAX_IN_FLIGHT", v)));
            config(&vars).expect("valid").max_in_flight
        };
        assert_eq!(at("128", None), 4);
        assert_eq!(at("512", None), 8);
        assert_eq!(at("1769", None), 27);
        assert_eq!(at("10240", None), 64);
        assert_eq!(at("1769", Some("4")), 4);
        assert_eq!(at("not a number", None), 4);
        assert_eq!(c.oversize, OversizePolicy::Fail);
        assert_eq!(c.body_encoding, BodyEncoding::Auto);
        assert_eq!(c.fifo_order, FifoOrder::Strict);
        assert_eq!(c.encoding_attribute, "sqs-forwarder.encoding");
        assert!(!c.queue.is_fifo());
    }

    #[test]
    fn errors_name_variable_value_and_allowed() {
        let e = config(&[("QUEUE_URL", URL), ("MAX_BATCH_ENTRIES", "11")]).expect_err("bad");
        assert_eq!(e.variable, "MAX_BATCH_ENTRIES");
        assert_eq!(e.value, "11");
        assert_eq!(
            e.to_string(),
            "invalid configuration: MAX_BATCH_ENTRIES=\"11\": an integer from 1 to 10"
        );
        let e = config(&[("QUEUE_URL", URL), ("MAX_MESSAGE_BYTES", "256k")]).expect_err("bad");
        assert_eq!(
            (e.variable.as_str(), e.allowed.as_str()),
            ("MAX_MESSAGE_BYTES", "an integer from 1024 to 1048576 bytes")
        );
        let e = config(&[("QUEUE_URL", URL), ("OVERSIZE_POLICY", "spill")]).expect_err("bad");
        assert_eq!(e.allowed, "one of: fail, drop, offload");
        let e = config(&[("QUEUE_URL", URL), ("BODY_ENCODING", "hex")]).expect_err("bad");
        assert_eq!(e.variable, "BODY_ENCODING");
        let e = config(&[
            ("QUEUE_URL", URL),
            ("RETRY_BASE_DELAY_MS", "100"),
            ("RETRY_MAX_DELAY_MS", "50"),
        ])
        .expect_err("bad");
        assert_eq!(e.variable, "RETRY_MAX_DELAY_MS");
        let e = config(&[("QUEUE_URL", URL), ("ENCODING_ATTRIBUTE", "AWS.x")]).expect_err("bad");
        assert_eq!(e.variable, "ENCODING_ATTRIBUTE");
        let e = config(&[("QUEUE_URL", "sqs/q")]).expect_err("bad");
        assert_eq!(e.variable, "QUEUE_URL");
        let e = config(&[]).expect_err("missing");
        assert_eq!((e.variable.as_str(), e.value.as_str()), ("QUEUE_URL", ""));
        let e = config(&[("QUEUE_URL", URL), ("QUEUE_NAME", "q")]).expect_err("both");
        assert_eq!(e.variable, "QUEUE_URL");
        let e = config(&[("QUEUE_NAME", "q"), ("QUEUE_OWNER_ACCOUNT_ID", "12")]).expect_err("bad");
        assert_eq!(e.variable, "QUEUE_OWNER_ACCOUNT_ID");
        let e = config(&[("QUEUE_NAME", "bad name")]).expect_err("bad");
        assert_eq!(e.variable, "QUEUE_NAME");
    }

    #[test]
    fn queue_by_name_and_fifo_group_check() {
        let c = config(&[
            ("QUEUE_NAME", "orders.fifo"),
            ("QUEUE_OWNER_ACCOUNT_ID", "210987654321"),
        ])
        .expect("valid");
        assert!(c.queue.is_fifo());
        assert!(c.check_group_ids(true).is_ok());
        let e = c.check_group_ids(false).expect_err("no group id");
        assert_eq!(e.variable, "MESSAGE_GROUP_ID");
        let c = config(&[
            ("QUEUE_URL", "http://127.0.0.1:4566/000000000000/o.fifo"),
            ("MESSAGE_GROUP_ID", "all"),
        ])
        .expect("valid");
        assert!(c.check_group_ids(false).is_ok());
    }

    #[test]
    fn reads_only_documented_variables() {
        let asked = std::sync::Mutex::new(Vec::new());
        let _ = Config::from_lookup(|k| {
            asked.lock().expect("lock").push(k.to_owned());
            (k == "QUEUE_NAME").then(|| "q".to_owned())
        });
        let asked = asked.into_inner().expect("lock");
        for k in &asked {
            assert!(
                VARIABLES.iter().any(|(n, _)| n == k) || k == MEMORY_SIZE_VARIABLE,
                "{k} is read but not in VARIABLES"
            );
        }
        for (n, _) in VARIABLES {
            assert!(
                asked.iter().any(|k| k == n),
                "{n} is in VARIABLES but never read"
            );
        }
    }

    #[test]
    fn offload_settings() {
        let c = config(&[("QUEUE_URL", URL)]).expect("valid");
        assert_eq!(c.offload, None);
        // A bucket alone is allowed (a template may pass it to every
        // function) and means nothing without the policy.
        let c = config(&[("QUEUE_URL", URL), ("OFFLOAD_BUCKET", "payloads")]).expect("valid");
        assert_eq!(c.offload, None);
        let c = config(&[
            ("QUEUE_URL", URL),
            ("OVERSIZE_POLICY", "offload"),
            ("OFFLOAD_BUCKET", "payloads"),
        ])
        .expect("valid");
        assert_eq!(
            c.offload,
            Some(OffloadConfig {
                bucket: "payloads".into(),
                settings: OffloadSettings::default(),
                force_path_style: false,
            })
        );
        let c = config(&[
            ("QUEUE_URL", URL),
            ("OVERSIZE_POLICY", "offload"),
            ("OFFLOAD_BUCKET", "payloads"),
            ("OFFLOAD_KEY_PREFIX", "kinesis/"),
            ("OFFLOAD_THRESHOLD_BYTES", "262144"),
            ("OFFLOAD_ALWAYS", "true"),
            ("OFFLOAD_SIZE_ATTRIBUTE", "SQSLargePayloadSize"),
            ("OFFLOAD_FORCE_PATH_STYLE", "true"),
        ])
        .expect("valid");
        let o = c.offload.expect("offload");
        assert_eq!(o.settings.threshold, Some(262_144));
        assert!(o.settings.always && o.force_path_style);
        assert_eq!(o.settings.key_prefix, "kinesis/");
        assert_eq!(o.settings.size_attribute, SizeAttribute::Legacy);

        let err = |vars: &[(&str, &str)]| {
            let mut all = vec![("QUEUE_URL", URL)];
            all.extend_from_slice(vars);
            config(&all).expect_err("bad")
        };
        let e = err(&[("OVERSIZE_POLICY", "offload")]);
        assert_eq!(
            (e.variable.as_str(), e.value.as_str()),
            ("OFFLOAD_BUCKET", "")
        );
        let e = err(&[
            ("OVERSIZE_POLICY", "offload"),
            ("OFFLOAD_BUCKET", "Bad_Bucket"),
        ]);
        assert_eq!(e.variable, "OFFLOAD_BUCKET");
        let e = err(&[("OFFLOAD_KEY_PREFIX", "a b")]);
        assert_eq!(e.variable, "OFFLOAD_KEY_PREFIX");
        let e = err(&[("OFFLOAD_THRESHOLD_BYTES", "100")]);
        assert_eq!(e.allowed, "an integer from 1024 to 1048576 bytes");
        let e = err(&[("OFFLOAD_THRESHOLD_BYTES", "262144")]);
        assert_eq!(
            (e.variable.as_str(), e.allowed.as_str()),
            (
                "OFFLOAD_THRESHOLD_BYTES",
                "only with OVERSIZE_POLICY=offload"
            )
        );
        let e = err(&[("OVERSIZE_POLICY", "drop"), ("OFFLOAD_ALWAYS", "true")]);
        assert_eq!(e.variable, "OFFLOAD_ALWAYS");
        let e = err(&[("OFFLOAD_ALWAYS", "yes")]);
        assert_eq!(e.allowed, "one of: true, false");
        let e = err(&[("OFFLOAD_SIZE_ATTRIBUTE", "Size")]);
        assert_eq!(
            e.allowed,
            "one of: ExtendedPayloadSize, SQSLargePayloadSize"
        );
    }

    #[test]
    fn region_and_assumed_role() {
        let c = config(&[("QUEUE_URL", URL)]).expect("valid");
        assert_eq!((c.sqs_region, c.assume_role), (None, None));
        let c = config(&[
            ("QUEUE_URL", URL),
            ("SQS_REGION", "cn-northwest-1"),
            (
                "ASSUME_ROLE_ARN",
                "arn:aws-cn:iam::210987654321:role/team/sqs-sender",
            ),
            ("ASSUME_ROLE_EXTERNAL_ID", "flink:job-7"),
        ])
        .expect("valid");
        assert_eq!(c.sqs_region.as_deref(), Some("cn-northwest-1"));
        assert_eq!(
            c.assume_role,
            Some(AssumeRole {
                role_arn: "arn:aws-cn:iam::210987654321:role/team/sqs-sender".into(),
                session_name: "sqs-forwarder".into(),
                external_id: Some("flink:job-7".into()),
            })
        );
        let c = config(&[
            ("QUEUE_URL", URL),
            ("ASSUME_ROLE_ARN", "arn:aws:iam::210987654321:role/s"),
            ("ASSUME_ROLE_SESSION_NAME", "orders@eu"),
        ])
        .expect("valid");
        assert_eq!(
            c.assume_role.map(|r| (r.session_name, r.external_id)),
            Some(("orders@eu".into(), None))
        );

        let bad = |vars: &[(&str, &str)]| {
            let mut all = vec![("QUEUE_URL", URL)];
            all.extend_from_slice(vars);
            let e = config(&all).expect_err("invalid");
            (e.variable, e.value)
        };
        for region in ["eu-west", "EU-WEST-1", "euwest1", "us-east-1a", "sqs"] {
            assert_eq!(
                bad(&[("SQS_REGION", region)]),
                ("SQS_REGION".into(), region.into())
            );
        }
        for arn in [
            "sqs-sender",
            "arn:aws:iam::21098765432:role/s",
            "arn:aws:iam::210987654321:user/s",
            "arn:aws:iam:eu-west-1:210987654321:role/s",
            "arn:aws:sts::210987654321:role/s",
            "arn:aws:iam::210987654321:role/",
            "arn:aws:iam::210987654321:role/a b",
        ] {
            assert_eq!(
                bad(&[("ASSUME_ROLE_ARN", arn)]),
                ("ASSUME_ROLE_ARN".into(), arn.into())
            );
        }
        let role = ("ASSUME_ROLE_ARN", "arn:aws:iam::210987654321:role/s");
        assert_eq!(
            bad(&[role, ("ASSUME_ROLE_SESSION_NAME", "a b")]).0,
            "ASSUME_ROLE_SESSION_NAME"
        );
        assert_eq!(
            bad(&[role, ("ASSUME_ROLE_SESSION_NAME", &"x".repeat(65))]).0,
            "ASSUME_ROLE_SESSION_NAME"
        );
        assert_eq!(
            bad(&[role, ("ASSUME_ROLE_EXTERNAL_ID", "x")]).0,
            "ASSUME_ROLE_EXTERNAL_ID"
        );
        // Companions without a role are a mistake, not silently ignored.
        assert_eq!(
            bad(&[("ASSUME_ROLE_SESSION_NAME", "s1")]),
            ("ASSUME_ROLE_SESSION_NAME".into(), "s1".into())
        );
        let e = config(&[("QUEUE_URL", URL), ("ASSUME_ROLE_EXTERNAL_ID", "ext-1")])
            .expect_err("invalid");
        assert_eq!(
            e.to_string(),
            "invalid configuration: ASSUME_ROLE_EXTERNAL_ID=\"ext-1\": only with ASSUME_ROLE_ARN"
        );
    }

    #[test]
    fn overrides() {
        let c = config(&[
            ("QUEUE_URL", URL),
            ("MAX_MESSAGE_BYTES", "262144"),
            ("MAX_IN_FLIGHT", "1"),
            ("OVERSIZE_POLICY", "drop"),
            ("FIFO_ORDER", "batched"),
            ("BODY_ENCODING", "never"),
            ("LOG_FORMAT", "json"),
        ])
        .expect("valid");
        assert_eq!(c.max_message_bytes, Some(262_144));
        assert_eq!(c.max_in_flight, 1);
        assert_eq!(c.oversize, OversizePolicy::Drop);
        assert_eq!(c.fifo_order, FifoOrder::Batched);
        assert_eq!(c.body_encoding, BodyEncoding::Never);
        assert_eq!(c.log_format, LogFormat::Json);
    }
}
