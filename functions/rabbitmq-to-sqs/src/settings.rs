//! The function's own settings, read once at cold start with
//! [`sqs_forwarder::Env`]. The shared ones (target queue, batching, retries,
//! body encoding) are the shared crate's [`sqs_forwarder::Config`].
//!
//! Every variable is listed in [`VARIABLES`] and in the function's README
//! table; a unit test checks that the two agree.

use std::time::Duration;

use sqs_forwarder::encode::check_attribute;
use sqs_forwarder::{Attribute, ConfigError, Env};

use crate::broker::BrokerUrl;

/// Every variable [`Settings::from_env`] reads, with its default ("" = none).
pub const VARIABLES: &[(&str, &str)] = &[
    ("RABBITMQ_URL", ""),
    ("RABBITMQ_PASSWORD_SECRET", ""),
    ("RABBITMQ_QUEUES", ""),
    ("DELIVERY_MODE", "at-least-once"),
    ("RABBITMQ_PREFETCH", "100"),
    ("RABBITMQ_MAX_MESSAGES", "10000"),
    ("RABBITMQ_STOP_MARGIN_MS", "5000"),
    ("RABBITMQ_CONNECT_TIMEOUT_MS", "5000"),
    ("RABBITMQ_HEARTBEAT_S", "30"),
    ("RABBITMQ_IDLE_MS", "200"),
    ("DEDUPLICATION_ID_FROM", "auto"),
    ("GROUP_ID_FROM", "routing-key"),
    ("PROPERTY_ATTRIBUTES", "content-type,routing-key"),
    ("HEADER_ATTRIBUTES", "all"),
];

fn default_of(name: &str) -> &'static str {
    VARIABLES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, d)| *d)
        .unwrap_or("")
}

/// What a message's acknowledgement promises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeliveryMode {
    /// Ack after SQS accepted the message; a crash or a lost connection
    /// means redelivery, so a message may reach SQS twice.
    #[default]
    AtLeastOnce,
    /// At-least-once from RabbitMQ into a FIFO queue, with the correlation id
    /// as the SQS deduplication id: a redelivered message is dropped by SQS
    /// within its 5-minute deduplication window. Messages without a
    /// correlation id are rejected.
    ExactlyOnce,
    /// The broker forgets a message as soon as it hands it out
    /// (`basic.get` with `no-ack`): no guarantee at all.
    AutoAck,
}

impl DeliveryMode {
    /// The configuration name.
    pub fn name(self) -> &'static str {
        match self {
            DeliveryMode::AtLeastOnce => "at-least-once",
            DeliveryMode::ExactlyOnce => "exactly-once",
            DeliveryMode::AutoAck => "auto-ack",
        }
    }
}

/// Where a FIFO message's deduplication id comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DedupFrom {
    /// The message id, else the correlation id, else none.
    #[default]
    Auto,
    /// The message id.
    MessageId,
    /// The correlation id.
    CorrelationId,
    /// None: the queue's content-based deduplication decides.
    None,
}

/// Where a FIFO message's group id comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum GroupFrom {
    /// The routing key.
    #[default]
    RoutingKey,
    /// A header's value.
    Header(String),
    /// The queue the message came from.
    Queue,
    /// None: `MESSAGE_GROUP_ID`, else the queue name.
    None,
}

/// An AMQP property (or delivery field) that can become an attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Property {
    /// `content-type`
    ContentType,
    /// `content-encoding`
    ContentEncoding,
    /// `correlation-id`
    CorrelationId,
    /// `message-id`
    MessageId,
    /// `reply-to`
    ReplyTo,
    /// `expiration`
    Expiration,
    /// `timestamp`
    Timestamp,
    /// `type`
    Type,
    /// `user-id`
    UserId,
    /// `app-id`
    AppId,
    /// `cluster-id`
    ClusterId,
    /// `priority`
    Priority,
    /// `delivery-mode`
    DeliveryMode,
    /// `routing-key` (of the delivery)
    RoutingKey,
    /// `exchange` (of the delivery)
    Exchange,
    /// `redelivered` (of the delivery)
    Redelivered,
}

impl Property {
    /// Every property, with its configuration name.
    pub const ALL: &'static [(&'static str, Property)] = &[
        ("content-type", Property::ContentType),
        ("content-encoding", Property::ContentEncoding),
        ("correlation-id", Property::CorrelationId),
        ("message-id", Property::MessageId),
        ("reply-to", Property::ReplyTo),
        ("expiration", Property::Expiration),
        ("timestamp", Property::Timestamp),
        ("type", Property::Type),
        ("user-id", Property::UserId),
        ("app-id", Property::AppId),
        ("cluster-id", Property::ClusterId),
        ("priority", Property::Priority),
        ("delivery-mode", Property::DeliveryMode),
        ("routing-key", Property::RoutingKey),
        ("exchange", Property::Exchange),
        ("redelivered", Property::Redelivered),
    ];

    /// The configuration name (`content-type`).
    pub fn name(self) -> &'static str {
        Property::ALL
            .iter()
            .find(|(_, p)| *p == self)
            .map(|(n, _)| *n)
            .unwrap_or("unknown")
    }

    /// The SQS attribute it becomes: `amqp.` and its name.
    pub fn attribute_name(self) -> String {
        format!("{ATTRIBUTE_PREFIX}{}", self.name())
    }
}

/// The prefix of the attributes made from AMQP properties.
pub const ATTRIBUTE_PREFIX: &str = "amqp.";

/// Which headers become attributes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HeaderSelection {
    /// Every header.
    #[default]
    All,
    /// None.
    None,
    /// These, when present.
    Only(Vec<String>),
}

impl HeaderSelection {
    /// Whether the header `name` is selected.
    pub fn includes(&self, name: &str) -> bool {
        match self {
            HeaderSelection::All => true,
            HeaderSelection::None => false,
            HeaderSelection::Only(names) => names.iter().any(|n| n == name),
        }
    }
}

/// How an AMQP message becomes an SQS message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MappingRules {
    /// Deduplication id source (`DEDUPLICATION_ID_FROM`).
    pub dedup: DedupFrom,
    /// Group id source (`GROUP_ID_FROM`).
    pub group: GroupFrom,
    /// Properties copied into attributes (`PROPERTY_ATTRIBUTES`).
    pub properties: Vec<Property>,
    /// Headers copied into attributes (`HEADER_ATTRIBUTES`).
    pub headers: HeaderSelection,
}

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
    /// Property, header, group and deduplication mapping.
    pub mapping: MappingRules,
}

impl Settings {
    /// Read and check every variable.
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        let url = match env.raw("RABBITMQ_URL") {
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
        let password_secret = env.raw("RABBITMQ_PASSWORD_SECRET");
        let queues = env.list("RABBITMQ_QUEUES");
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
                    &env.raw("RABBITMQ_QUEUES").unwrap_or_default(),
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

        let mode = env.choice(
            "DELIVERY_MODE",
            DeliveryMode::AtLeastOnce,
            &[
                ("at-least-once", DeliveryMode::AtLeastOnce),
                ("exactly-once", DeliveryMode::ExactlyOnce),
                ("auto-ack", DeliveryMode::AutoAck),
            ],
        )?;
        let number = |name: &str, min: u64, max: u64, unit: &str| {
            let default = default_of(name).parse().unwrap_or(min);
            env.number(name, default, min, max, unit)
        };
        let prefetch = number("RABBITMQ_PREFETCH", 1, u16::MAX as u64, "")? as u16;
        let max_messages = number("RABBITMQ_MAX_MESSAGES", 1, 10_000_000, "")?;
        let stop_margin =
            Duration::from_millis(number("RABBITMQ_STOP_MARGIN_MS", 0, 900_000, " ms")?);
        let connect_timeout =
            Duration::from_millis(number("RABBITMQ_CONNECT_TIMEOUT_MS", 100, 120_000, " ms")?);
        let heartbeat = number("RABBITMQ_HEARTBEAT_S", 0, 3_600, " s")? as u16;
        let idle = Duration::from_millis(number("RABBITMQ_IDLE_MS", 10, 60_000, " ms")?);

        let dedup = env.choice(
            "DEDUPLICATION_ID_FROM",
            DedupFrom::Auto,
            &[
                ("auto", DedupFrom::Auto),
                ("message-id", DedupFrom::MessageId),
                ("correlation-id", DedupFrom::CorrelationId),
                ("none", DedupFrom::None),
            ],
        )?;
        if mode == DeliveryMode::ExactlyOnce
            && !matches!(dedup, DedupFrom::Auto | DedupFrom::CorrelationId)
        {
            return Err(ConfigError::new(
                "DEDUPLICATION_ID_FROM",
                &env.string("DEDUPLICATION_ID_FROM", ""),
                "auto or correlation-id: DELIVERY_MODE=exactly-once takes the deduplication id from the correlation id",
            ));
        }
        let dedup = if mode == DeliveryMode::ExactlyOnce {
            DedupFrom::CorrelationId
        } else {
            dedup
        };

        let group_raw = env.string("GROUP_ID_FROM", default_of("GROUP_ID_FROM"));
        let group = match group_raw.as_str() {
            "routing-key" => GroupFrom::RoutingKey,
            "queue" => GroupFrom::Queue,
            "none" => GroupFrom::None,
            other => match other.strip_prefix("header:").map(str::trim) {
                Some(h) if !h.is_empty() => GroupFrom::Header(h.to_owned()),
                _ => {
                    return Err(ConfigError::new(
                        "GROUP_ID_FROM",
                        &group_raw,
                        "one of: routing-key, queue, none, header:<name>",
                    ));
                }
            },
        };

        let properties_raw = env.string("PROPERTY_ATTRIBUTES", default_of("PROPERTY_ATTRIBUTES"));
        let mut properties = Vec::new();
        if properties_raw != "none" {
            for name in properties_raw
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
            {
                let Some((_, p)) = Property::ALL.iter().find(|(n, _)| *n == name) else {
                    let names: Vec<&str> = Property::ALL.iter().map(|(n, _)| *n).collect();
                    return Err(ConfigError::new(
                        "PROPERTY_ATTRIBUTES",
                        &properties_raw,
                        format!("none, or a comma-separated list of: {}", names.join(", ")),
                    ));
                };
                if !properties.contains(p) {
                    properties.push(*p);
                }
            }
        }

        let headers_raw = env.string("HEADER_ATTRIBUTES", default_of("HEADER_ATTRIBUTES"));
        let headers = match headers_raw.as_str() {
            "all" => HeaderSelection::All,
            "none" => HeaderSelection::None,
            _ => {
                let names = env.list("HEADER_ATTRIBUTES");
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
            mapping: MappingRules {
                dedup,
                group,
                properties,
                headers,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        Settings::from_env(&Env::from_pairs(pairs))
    }

    #[test]
    fn defaults_without_a_broker() {
        let s = read(&[]).expect("defaults");
        assert!(s.broker.is_none());
        assert_eq!(s.mode, DeliveryMode::AtLeastOnce);
        assert_eq!(s.prefetch, 100);
        assert_eq!(s.max_messages, 10_000);
        assert_eq!(s.stop_margin, Duration::from_secs(5));
        assert_eq!(s.connect_timeout, Duration::from_secs(5));
        assert_eq!(s.heartbeat, 30);
        assert_eq!(s.idle, Duration::from_millis(200));
        assert_eq!(s.mapping.dedup, DedupFrom::Auto);
        assert_eq!(s.mapping.group, GroupFrom::RoutingKey);
        assert_eq!(
            s.mapping.properties,
            vec![Property::ContentType, Property::RoutingKey]
        );
        assert_eq!(s.mapping.headers, HeaderSelection::All);
    }

    #[test]
    fn every_default_in_variables_parses() {
        // The defaults in VARIABLES are what from_env uses when unset.
        let pairs: Vec<(&str, &str)> = VARIABLES
            .iter()
            .filter(|(_, d)| !d.is_empty())
            .copied()
            .collect();
        let explicit = read(&pairs).expect("defaults spelled out");
        let implicit = read(&[]).expect("defaults");
        assert_eq!(explicit.prefetch, implicit.prefetch);
        assert_eq!(explicit.mapping, implicit.mapping);
        assert_eq!(explicit.stop_margin, implicit.stop_margin);
    }

    #[test]
    fn broker_settings() {
        let s = read(&[
            (
                "RABBITMQ_URL",
                "amqps://svc:pw@b-1.mq.eu-west-1.amazonaws.com:5671/%2f",
            ),
            ("RABBITMQ_QUEUES", "orders, invoices"),
            ("RABBITMQ_PASSWORD_SECRET", "mq/svc"),
        ])
        .expect("valid");
        let b = s.broker.expect("broker");
        assert_eq!(b.queues, vec!["orders", "invoices"]);
        assert_eq!(b.password_secret.as_deref(), Some("mq/svc"));
        assert_eq!(
            b.url.redacted(),
            "amqps://svc:***@b-1.mq.eu-west-1.amazonaws.com:5671/%2f"
        );
    }

    #[test]
    fn url_and_queues_go_together() {
        let e = read(&[("RABBITMQ_URL", "amqp://guest:guest@localhost")]).expect_err("no queues");
        assert_eq!(e.variable, "RABBITMQ_QUEUES");
        let e = read(&[("RABBITMQ_QUEUES", "q")]).expect_err("no url");
        assert_eq!(e.variable, "RABBITMQ_URL");
        let e = read(&[("RABBITMQ_PASSWORD_SECRET", "s")]).expect_err("no url");
        assert_eq!(e.variable, "RABBITMQ_PASSWORD_SECRET");
    }

    #[test]
    fn a_bad_url_is_refused_without_showing_the_password() {
        for raw in [
            "http://guest:Sup3rSecret@localhost/",
            "amqp://guest:Sup3rSecret@local host/",
            "amqp://guest:Sup3rSecret@localhost:99999/",
            "amqp//guest:Sup3rSecret@localhost",
        ] {
            let e = read(&[("RABBITMQ_URL", raw), ("RABBITMQ_QUEUES", "q")]).expect_err(raw);
            assert_eq!(e.variable, "RABBITMQ_URL");
            let text = e.to_string();
            assert!(!text.contains("Sup3rSecret"), "{text}");
            assert!(text.contains("amqp://user:password@host"), "{text}");
        }
    }

    #[test]
    fn modes_and_their_rules() {
        let s = read(&[("DELIVERY_MODE", "exactly-once")]).expect("valid");
        assert_eq!(s.mode, DeliveryMode::ExactlyOnce);
        assert_eq!(s.mapping.dedup, DedupFrom::CorrelationId);
        let e = read(&[
            ("DELIVERY_MODE", "exactly-once"),
            ("DEDUPLICATION_ID_FROM", "message-id"),
        ])
        .expect_err("conflict");
        assert_eq!(e.variable, "DEDUPLICATION_ID_FROM");
        let s = read(&[("DELIVERY_MODE", "auto-ack")]).expect("valid");
        assert_eq!(s.mode, DeliveryMode::AutoAck);
        let e = read(&[("DELIVERY_MODE", "at-most-once")]).expect_err("unknown");
        assert_eq!(
            e.to_string(),
            "invalid configuration: DELIVERY_MODE=\"at-most-once\": one of: at-least-once, exactly-once, auto-ack"
        );
    }

    #[test]
    fn numbers_are_bounded() {
        for (name, bad) in [
            ("RABBITMQ_PREFETCH", "0"),
            ("RABBITMQ_PREFETCH", "65536"),
            ("RABBITMQ_MAX_MESSAGES", "0"),
            ("RABBITMQ_STOP_MARGIN_MS", "-1"),
            ("RABBITMQ_CONNECT_TIMEOUT_MS", "10"),
            ("RABBITMQ_HEARTBEAT_S", "x"),
            ("RABBITMQ_IDLE_MS", "5"),
        ] {
            let e = read(&[(name, bad)]).expect_err(name);
            assert_eq!(e.variable, name);
            assert_eq!(e.value, bad);
        }
    }

    #[test]
    fn group_and_attribute_choices() {
        let s = read(&[
            ("GROUP_ID_FROM", "header:tenant"),
            ("PROPERTY_ATTRIBUTES", "message-id, timestamp,message-id"),
            ("HEADER_ATTRIBUTES", "tenant, trace-id"),
        ])
        .expect("valid");
        assert_eq!(s.mapping.group, GroupFrom::Header("tenant".into()));
        assert_eq!(
            s.mapping.properties,
            vec![Property::MessageId, Property::Timestamp]
        );
        assert_eq!(
            s.mapping.headers,
            HeaderSelection::Only(vec!["tenant".into(), "trace-id".into()])
        );
        let s = read(&[
            ("PROPERTY_ATTRIBUTES", "none"),
            ("HEADER_ATTRIBUTES", "none"),
        ])
        .expect("valid");
        assert!(s.mapping.properties.is_empty());
        assert_eq!(s.mapping.headers, HeaderSelection::None);
        assert_eq!(
            read(&[("GROUP_ID_FROM", "header:")])
                .expect_err("empty header")
                .variable,
            "GROUP_ID_FROM"
        );
        assert_eq!(
            read(&[("PROPERTY_ATTRIBUTES", "content-type,body")])
                .expect_err("unknown property")
                .variable,
            "PROPERTY_ATTRIBUTES"
        );
    }

    #[test]
    fn readme_table_matches_variables() {
        assert_eq!(
            sqs_forwarder::test_support::readme_variables(include_str!("../README.md")),
            VARIABLES,
            "README table (left) vs VARIABLES (right)"
        );
    }
}
