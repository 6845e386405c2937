//! Configuration from environment variables, read and validated once.
//!
//! [`Config::from_env`] reads every variable the forwarder knows, checks it,
//! and fails with a [`ConfigError`] that names the variable, the value and
//! what is allowed. The variables, their defaults and what each allows are
//! written once, in [`variables`]; the configuration table of
//! `docs/configuration.md` lists
//! the same variables with the same defaults, and a test checks that the two
//! agree. The steps: [`target`] (queue, region, role), sending limits and
//! retries (here), [`offload_vars`] (the claim check's variables), message rules (here).

use std::time::Duration;

use crate::call::queue::QueueTarget;
use crate::message::Attribute;
use crate::message::encode::{BodyEncoding, check_attribute};
use crate::send::batch::FifoOrder;
use crate::send::offload::OffloadSettings;
use crate::send::retry::RetryPolicy;
use crate::send::{OversizePolicy, Window};
use crate::setup::env::{Env, Word};
use crate::setup::error::ConfigError;

mod offload_vars;
mod settings;
mod target;
pub mod variables;

pub use variables::{
    MEMORY_SIZE_VARIABLE, VARIABLES, default_in_flight_bytes, default_max_in_flight,
};

use variables as var;

/// Where a sender's FIFO group ids come from, checked at start against a
/// FIFO target ([`Config::check_group_ids`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupIds {
    /// The caller's messages carry their own group ids (from the event
    /// source).
    FromSource,
    /// They carry none: a FIFO target needs `MESSAGE_GROUP_ID`.
    FromConfig,
}

impl GroupIds {
    /// [`GroupIds::FromSource`] when the source's settings give its
    /// messages group ids (`sets`), else [`GroupIds::FromConfig`].
    pub fn from_source(sets: bool) -> Self {
        if sets {
            GroupIds::FromSource
        } else {
            GroupIds::FromConfig
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

/// How logs are written (`LOG_FORMAT`).
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

impl Word for LogFormat {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("auto", LogFormat::Auto),
        ("json", LogFormat::Json),
        ("text", LogFormat::Text),
    ];
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
    pub sqs_client: crate::call::SqsClient,
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
    /// Bytes in the calls in flight, when `MAX_IN_FLIGHT` is unset and
    /// Lambda's memory gives it ([`default_in_flight_bytes`]); `None`: only
    /// the count bounds them.
    pub max_in_flight_bytes: Option<usize>,
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
    /// Records per message: the most bytes of an aggregate, `Some` exactly
    /// when `AGGREGATE=true` (`AGGREGATE_BYTES`).
    pub aggregate: Option<usize>,
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

impl Config {
    /// Read the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::read(&Env::process())
    }

    /// Read the configuration through `lookup` (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Self::read(&Env::from_fn(lookup))
    }

    /// Read and check every variable in [`VARIABLES`] from `env`.
    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        let queue = target::queue(env)?;
        let sqs_region = target::region(env)?;
        let sqs_client = env.choice(&var::SQS_CLIENT)?;
        let assume_role = target::assume_role(env)?;

        let max_batch_entries = env.required_number(&var::MAX_BATCH_ENTRIES)? as usize;
        let max_message_bytes = env.number(&var::MAX_MESSAGE_BYTES)?.map(|v| v as usize);
        let fallback_message_bytes = env.required_number(&var::FALLBACK_MESSAGE_BYTES)? as usize;
        let max_batch_bytes = env.required_number(&var::MAX_BATCH_BYTES)? as usize;
        let memory_mb = env.raw(MEMORY_SIZE_VARIABLE).and_then(|m| m.parse().ok());
        let (max_in_flight, max_in_flight_bytes) = match env.number(&var::MAX_IN_FLIGHT)? {
            Some(v) => (v as usize, None),
            None => (
                default_max_in_flight(memory_mb),
                default_in_flight_bytes(memory_mb, max_batch_bytes),
            ),
        };
        let window = Window {
            max_messages: env.required_number(&var::WINDOW_MESSAGES)? as usize,
            max_bytes: env.required_number(&var::WINDOW_BYTES)? as usize,
        };
        let max_attempts = env.required_number(&var::RETRY_MAX_ATTEMPTS)? as u32;
        let base = env.required_number(&var::RETRY_BASE_DELAY_MS)?;
        let max = env.required_number(&var::RETRY_MAX_DELAY_MS)?;
        if max < base {
            return Err(ConfigError::new(
                var::RETRY_MAX_DELAY_MS.name,
                &max.to_string(),
                format!("at least RETRY_BASE_DELAY_MS ({base})"),
            ));
        }
        let call_timeout = env.required_number(&var::CALL_TIMEOUT_MS)?;
        let deadline_margin = env.required_number(&var::DEADLINE_MARGIN_MS)?;
        let oversize = env.choice(&var::OVERSIZE_POLICY)?;
        let offload = offload_vars::read(env, oversize)?;

        let aggregate = aggregate(env, offload.as_ref())?;

        let body_encoding = env.choice(&var::BODY_ENCODING)?;
        let encoding_attribute = env.text(&var::ENCODING_ATTRIBUTE);
        if check_attribute(&Attribute::string(encoding_attribute.clone(), "base64")).is_err() {
            return Err(var::ENCODING_ATTRIBUTE.error(&encoding_attribute));
        }
        let fifo_order = env.choice(&var::FIFO_ORDER)?;
        let message_group_id = env.value(&var::MESSAGE_GROUP_ID);
        if let Some(g) = &message_group_id
            && !crate::message::fifo_id::is_valid(g)
        {
            return Err(var::MESSAGE_GROUP_ID.error(g));
        }
        let metrics_namespace = env.text(&var::METRICS_NAMESPACE);
        if metrics_namespace.len() > 255
            || !metrics_namespace
                .bytes()
                .all(|b| b.is_ascii_graphic() || b == b' ')
        {
            return Err(var::METRICS_NAMESPACE.error(&metrics_namespace));
        }
        let log_format = env.choice(&var::LOG_FORMAT)?;

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
            max_in_flight_bytes,
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
            aggregate,
            body_encoding,
            encoding_attribute,
            fifo_order,
            message_group_id,
            metrics_namespace,
            log_format,
        })
    }

    /// Check, at start, that a FIFO target will get a group id for every
    /// message: from the event source ([`GroupIds::FromSource`]) or from
    /// `MESSAGE_GROUP_ID`.
    pub fn check_group_ids(&self, group_ids: GroupIds) -> Result<(), ConfigError> {
        if self.queue.is_fifo()
            && group_ids == GroupIds::FromConfig
            && self.message_group_id.is_none()
        {
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

/// `AGGREGATE` and `AGGREGATE_BYTES`: the most bytes of an aggregate, or
/// `None`. Refused: `AGGREGATE_BYTES` without `AGGREGATE=true`, and
/// aggregation beside `OFFLOAD_ALWAYS=true` (every record would go to S3 on
/// its own, none aggregated).
fn aggregate(env: &Env, offload: Option<&OffloadConfig>) -> Result<Option<usize>, ConfigError> {
    let on = env.flag(&var::AGGREGATE)?;
    let bytes = env.required_number(&var::AGGREGATE_BYTES)? as usize;
    if !on {
        if env.is_set(&var::AGGREGATE_BYTES) {
            return Err(ConfigError::new(
                var::AGGREGATE_BYTES.name,
                &bytes.to_string(),
                "only with AGGREGATE=true",
            ));
        }
        return Ok(None);
    }
    if offload.is_some_and(|o| o.settings.always) {
        return Err(ConfigError::new(
            var::AGGREGATE.name,
            "true",
            "false while OFFLOAD_ALWAYS=true (every record goes to S3 on its own: nothing to aggregate)",
        ));
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests;
