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
use crate::retry::RetryPolicy;
use crate::send::OversizePolicy;

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
    /// Retries (`RETRY_MAX_ATTEMPTS`, `RETRY_BASE_DELAY_MS`, `RETRY_MAX_DELAY_MS`).
    pub retry: RetryPolicy,
    /// Per-call timeout (`CALL_TIMEOUT_MS`).
    pub call_timeout: Duration,
    /// Time kept back from the Lambda deadline (`DEADLINE_MARGIN_MS`).
    pub deadline_margin: Duration,
    /// Oversize policy (`OVERSIZE_POLICY`).
    pub oversize: OversizePolicy,
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

/// Every variable [`Config::from_env`] reads, with its default ("" = none).
pub const VARIABLES: &[(&str, &str)] = &[
    ("QUEUE_URL", ""),
    ("QUEUE_NAME", ""),
    ("QUEUE_OWNER_ACCOUNT_ID", ""),
    ("MAX_BATCH_ENTRIES", "10"),
    ("MAX_MESSAGE_BYTES", ""),
    ("FALLBACK_MESSAGE_BYTES", "1048576"),
    ("MAX_BATCH_BYTES", "1048576"),
    ("MAX_IN_FLIGHT", "4"),
    ("RETRY_MAX_ATTEMPTS", "5"),
    ("RETRY_BASE_DELAY_MS", "50"),
    ("RETRY_MAX_DELAY_MS", "2000"),
    ("CALL_TIMEOUT_MS", "10000"),
    ("DEADLINE_MARGIN_MS", "500"),
    ("OVERSIZE_POLICY", "fail"),
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

fn default_of(name: &str) -> Option<&'static str> {
    VARIABLES.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
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
        let max_in_flight = r.required_number("MAX_IN_FLIGHT", 1, 64, "")? as usize;
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
            && (g.len() > 128 || !g.bytes().all(|b| b.is_ascii_graphic()))
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
            max_batch_entries,
            max_message_bytes,
            fallback_message_bytes,
            max_batch_bytes,
            max_in_flight,
            retry: RetryPolicy {
                max_attempts,
                base_delay: Duration::from_millis(base),
                max_delay: Duration::from_millis(max),
            },
            call_timeout: Duration::from_millis(call_timeout),
            deadline_margin: Duration::from_millis(deadline_margin),
            oversize,
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
        let e = config(&[("QUEUE_URL", URL), ("OVERSIZE_POLICY", "offload")]).expect_err("bad");
        assert_eq!(e.allowed, "one of: fail, drop");
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
                VARIABLES.iter().any(|(n, _)| n == k),
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
