//! The function's own settings, read once at cold start with
//! [`sqs_forwarder::Env`]. The shared ones (target queue, batching, retries,
//! body encoding) are the shared crate's [`sqs_forwarder::Config`].
//!
//! Every variable is listed in [`VARIABLES`] and in the function's README
//! table; the workspace's `tests/docs.rs` checks that the two agree.

use std::time::Duration;

use sqs_forwarder::message::encode::check_attribute;
use sqs_forwarder::setup::env::{Variable, Word};
use sqs_forwarder::{Attribute, ConfigError, Env};

use crate::broker::BrokerUrl;

mod choices;

pub use choices::{
    ATTRIBUTE_PREFIX, DedupFrom, DeliveryMode, GroupFrom, HeaderSelection, MappingRules, Property,
};

/// `RABBITMQ_URL`.
pub const RABBITMQ_URL: Variable = Variable::text(
    "RABBITMQ_URL",
    "",
    "amqp://user:password@host:port/vhost or amqps://...; the vhost is URL-encoded, %2f for /",
);
/// `RABBITMQ_PASSWORD_SECRET`.
pub const RABBITMQ_PASSWORD_SECRET: Variable = Variable::text(
    "RABBITMQ_PASSWORD_SECRET",
    "",
    "a Secrets Manager secret id or ARN, only with RABBITMQ_URL",
);
/// `RABBITMQ_QUEUES`.
pub const RABBITMQ_QUEUES: Variable = Variable::text(
    "RABBITMQ_QUEUES",
    "",
    "queue names of at most 255 bytes, separated by commas",
);
/// `DELIVERY_MODE`.
pub const DELIVERY_MODE: Variable =
    Variable::words::<DeliveryMode>("DELIVERY_MODE", "at-least-once");
/// `RABBITMQ_PREFETCH`.
pub const RABBITMQ_PREFETCH: Variable =
    Variable::number("RABBITMQ_PREFETCH", "100", 1, u16::MAX as u64, "");
/// `RABBITMQ_MAX_MESSAGES`.
pub const RABBITMQ_MAX_MESSAGES: Variable =
    Variable::number("RABBITMQ_MAX_MESSAGES", "10000", 1, 10_000_000, "");
/// `RABBITMQ_STOP_MARGIN_MS`.
pub const RABBITMQ_STOP_MARGIN_MS: Variable =
    Variable::number("RABBITMQ_STOP_MARGIN_MS", "5000", 0, 900_000, " ms");
/// `RABBITMQ_CONNECT_TIMEOUT_MS`.
pub const RABBITMQ_CONNECT_TIMEOUT_MS: Variable =
    Variable::number("RABBITMQ_CONNECT_TIMEOUT_MS", "5000", 100, 120_000, " ms");
/// `RABBITMQ_HEARTBEAT_S`.
pub const RABBITMQ_HEARTBEAT_S: Variable =
    Variable::number("RABBITMQ_HEARTBEAT_S", "30", 0, 3_600, " s");
/// `RABBITMQ_IDLE_MS`.
pub const RABBITMQ_IDLE_MS: Variable =
    Variable::number("RABBITMQ_IDLE_MS", "200", 10, 60_000, " ms");
/// `RABBITMQ_MAX_BATCH_BYTES` (default: [`default_max_batch_bytes`]).
pub const RABBITMQ_MAX_BATCH_BYTES: Variable =
    Variable::number("RABBITMQ_MAX_BATCH_BYTES", "", 1 << 20, 1 << 34, " bytes");
/// `DEDUPLICATION_ID_FROM`.
pub const DEDUPLICATION_ID_FROM: Variable =
    Variable::words::<DedupFrom>("DEDUPLICATION_ID_FROM", "auto");
/// `GROUP_ID_FROM`.
pub const GROUP_ID_FROM: Variable = Variable::text(
    "GROUP_ID_FROM",
    "routing-key",
    "one of: routing-key, queue, none, header:<name>",
);
/// `PROPERTY_ATTRIBUTES`.
pub const PROPERTY_ATTRIBUTES: Variable = Variable::text(
    "PROPERTY_ATTRIBUTES",
    "content-type,routing-key",
    "none, or a comma-separated list of AMQP properties",
);
/// `HEADER_ATTRIBUTES`.
pub const HEADER_ATTRIBUTES: Variable = Variable::text(
    "HEADER_ATTRIBUTES",
    "all",
    "all, none, or header names that are valid SQS attribute names",
);

/// Every variable [`Settings::from_env`] reads, in the README table's order.
pub const VARIABLES: &[Variable] = &[
    RABBITMQ_URL,
    RABBITMQ_PASSWORD_SECRET,
    RABBITMQ_QUEUES,
    DELIVERY_MODE,
    RABBITMQ_PREFETCH,
    RABBITMQ_MAX_MESSAGES,
    RABBITMQ_STOP_MARGIN_MS,
    RABBITMQ_CONNECT_TIMEOUT_MS,
    RABBITMQ_HEARTBEAT_S,
    RABBITMQ_IDLE_MS,
    RABBITMQ_MAX_BATCH_BYTES,
    DEDUPLICATION_ID_FROM,
    GROUP_ID_FROM,
    PROPERTY_ATTRIBUTES,
    HEADER_ATTRIBUTES,
];

/// The broker to poll, when the function polls one.
#[derive(Debug, Clone)]
pub struct BrokerSettings {
    /// `RABBITMQ_URL`.
    pub url: BrokerUrl,
    /// `RABBITMQ_PASSWORD_SECRET`: a Secrets Manager secret id or ARN.
    pub password_secret: Option<String>,
    /// `RABBITMQ_QUEUES`, drained in this order.
    pub queues: Vec<String>,
}

/// The function's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where to poll; `None` when `RABBITMQ_URL` is unset (the function then
    /// only takes Amazon MQ `aws:rmq` events).
    pub broker: Option<BrokerSettings>,
    /// `DELIVERY_MODE`.
    pub mode: DeliveryMode,
    /// `RABBITMQ_PREFETCH`: unacknowledged messages the broker may hand out
    /// at once (`basic.qos`), which is also the most messages per batch.
    pub prefetch: u16,
    /// `RABBITMQ_MAX_MESSAGES`: most messages taken in one invocation.
    pub max_messages: u64,
    /// `RABBITMQ_STOP_MARGIN_MS`: no new message is taken once less than this
    /// is left before the Lambda deadline.
    pub stop_margin: Duration,
    /// `RABBITMQ_CONNECT_TIMEOUT_MS`: TCP, TLS and AMQP handshake together.
    pub connect_timeout: Duration,
    /// `RABBITMQ_HEARTBEAT_S` (0 = the broker's choice).
    pub heartbeat: u16,
    /// `RABBITMQ_IDLE_MS`: how long to wait for a delivery before asking
    /// the broker whether the queue is empty.
    pub idle: Duration,
    /// `RABBITMQ_MAX_BATCH_BYTES`: the most message bytes (bodies) taken
    /// and not yet settled at once; the drain takes no more until it has
    /// settled what it holds.
    pub max_batch_bytes: usize,
    /// Property, header, group and deduplication mapping.
    pub mapping: MappingRules,
}

impl Settings {
    /// Read and check every variable.
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        let url = match env.value(&RABBITMQ_URL) {
            None => None,
            Some(raw) => Some(BrokerUrl::parse(&raw).map_err(|reason| {
                ConfigError::new(
                    "RABBITMQ_URL",
                    &crate::broker::redact(&raw),
                    format!(
                        "amqp://user:password@host:port/vhost or amqps://... ({reason}); the vhost is URL-encoded, %2f for /"
                    ),
                )
            })?),
        };
        let password_secret = env.value(&RABBITMQ_PASSWORD_SECRET);
        let queues = env.list(&RABBITMQ_QUEUES);
        for q in &queues {
            if q.len() > 255 {
                return Err(ConfigError::new(
                    "RABBITMQ_QUEUES",
                    q,
                    "queue names of at most 255 bytes, separated by commas",
                ));
            }
        }
        let broker = match (url, queues.is_empty()) {
            (Some(url), false) => Some(BrokerSettings {
                url,
                password_secret,
                queues,
            }),
            (Some(_), true) => {
                // The value as given (`,` names no queue), "" when unset.
                return Err(ConfigError::new(
                    "RABBITMQ_QUEUES",
                    &env.text(&RABBITMQ_QUEUES),
                    "the queue(s) to drain, separated by commas (required with RABBITMQ_URL)",
                ));
            }
            (None, false) => {
                return Err(ConfigError::new(
                    "RABBITMQ_URL",
                    "",
                    "the broker's amqp:// or amqps:// URL (required with RABBITMQ_QUEUES)",
                ));
            }
            (None, true) => {
                if let Some(secret) = password_secret {
                    return Err(ConfigError::new(
                        "RABBITMQ_PASSWORD_SECRET",
                        &secret,
                        "only with RABBITMQ_URL (the password of the broker it names)",
                    ));
                }
                None
            }
        };

        let mode = env.choice(&DELIVERY_MODE)?;
        let prefetch = env.required_number(&RABBITMQ_PREFETCH)? as u16;
        let max_messages = env.required_number(&RABBITMQ_MAX_MESSAGES)?;
        let millis = |v: &Variable| env.required_number(v).map(Duration::from_millis);
        let stop_margin = millis(&RABBITMQ_STOP_MARGIN_MS)?;
        let connect_timeout = millis(&RABBITMQ_CONNECT_TIMEOUT_MS)?;
        let heartbeat = env.required_number(&RABBITMQ_HEARTBEAT_S)? as u16;
        let idle = millis(&RABBITMQ_IDLE_MS)?;
        let max_batch_bytes = match env.number(&RABBITMQ_MAX_BATCH_BYTES)? {
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            None => default_max_batch_bytes(env.get(MEMORY_SIZE).as_deref()),
        };

        let dedup = env.choice(&DEDUPLICATION_ID_FROM)?;
        if mode == DeliveryMode::ExactlyOnce
            && !matches!(dedup, DedupFrom::Auto | DedupFrom::CorrelationId)
        {
            return Err(ConfigError::new(
                "DEDUPLICATION_ID_FROM",
                &env.raw(DEDUPLICATION_ID_FROM.name).unwrap_or_default(),
                "auto or correlation-id: DELIVERY_MODE=exactly-once takes the deduplication id from the correlation id",
            ));
        }
        let dedup = if mode == DeliveryMode::ExactlyOnce {
            DedupFrom::CorrelationId
        } else {
            dedup
        };

        let group_raw = env.text(&GROUP_ID_FROM);
        let group = match group_raw.as_str() {
            "routing-key" => GroupFrom::RoutingKey,
            "queue" => GroupFrom::Queue,
            "none" => GroupFrom::None,
            other => match other.strip_prefix("header:").map(str::trim) {
                Some(h) if !h.is_empty() => GroupFrom::Header(h.to_owned()),
                _ => {
                    return Err(GROUP_ID_FROM.error(&group_raw));
                }
            },
        };

        let properties_raw = env.text(&PROPERTY_ATTRIBUTES);
        let mut properties = Vec::new();
        if properties_raw != "none" {
            for name in properties_raw
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
            {
                let Some(p) = Property::from_word(name) else {
                    let names = sqs_forwarder::setup::env::words_of::<Property>();
                    return Err(ConfigError::new(
                        "PROPERTY_ATTRIBUTES",
                        &properties_raw,
                        format!("none, or a comma-separated list of: {}", names.join(", ")),
                    ));
                };
                if !properties.contains(&p) {
                    properties.push(p);
                }
            }
        }

        let headers_raw = env.text(&HEADER_ATTRIBUTES);
        let headers = match headers_raw.as_str() {
            "all" => HeaderSelection::All,
            "none" => HeaderSelection::None,
            _ => {
                let names = env.list(&HEADER_ATTRIBUTES);
                // Each listed header becomes an attribute of the same name:
                // a name SQS refuses would fail every message carrying it.
                if let Some(bad) = names
                    .iter()
                    .find(|n| check_attribute(&Attribute::string((*n).clone(), "x")).is_err())
                {
                    return Err(ConfigError::new(
                        "HEADER_ATTRIBUTES",
                        &headers_raw,
                        format!(
                            "all, none, or header names that are valid SQS attribute names (1..256 of A-Z a-z 0-9 _ - ., no AWS./Amazon. prefix); {bad:?} is not one"
                        ),
                    ));
                }
                HeaderSelection::Only(names)
            }
        };

        Ok(Settings {
            broker,
            mode,
            prefetch,
            max_messages,
            stop_margin,
            connect_timeout,
            heartbeat,
            idle,
            max_batch_bytes,
            mapping: MappingRules {
                dedup,
                group,
                properties,
                headers,
            },
        })
    }
}

/// Where Lambda says how much memory the function has, in MB.
pub const MEMORY_SIZE: &str = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE";

/// The default of `RABBITMQ_MAX_BATCH_BYTES`: an eighth of the function's
/// memory (`memory_mb`, Lambda's `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`), 16 MiB
/// at 128 MB, and 16 MiB outside Lambda. The bodies held are kept about
/// twice (as taken, and encoded into the calls in flight) beside the
/// process's own 20-40 MB, so an eighth leaves room at every size.
pub fn default_max_batch_bytes(memory_mb: Option<&str>) -> usize {
    let mb = memory_mb
        .and_then(|m| m.trim().parse::<usize>().ok())
        .filter(|m| *m > 0)
        .unwrap_or(128);
    (mb << 20) / 8
}

#[cfg(test)]
mod tests;
