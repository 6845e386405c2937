//! # rabbitmq-to-sqs
//!
//! Moves messages from RabbitMQ to Amazon SQS, where the acknowledgement is
//! the delivery guarantee: a message is acked only after SQS accepted it.
//!
//! One binary, two triggers:
//!
//! * **A schedule** (an EventBridge rule sends `detail-type: Scheduled
//!   Event`; EventBridge Scheduler sends whatever input it was given): the
//!   function connects to `RABBITMQ_URL` with lapin, drains the queues in
//!   `RABBITMQ_QUEUES` under a bounded prefetch, forwards the messages through
//!   the shared crate and settles each delivery: ack when sent, requeue when a
//!   later try may succeed, reject (to the dead-letter exchange) when it can
//!   never be sent ([`drain`], [`acks`]). Works with any broker the function
//!   can reach.
//! * **An Amazon MQ event** (`eventSource: aws:rmq`): Lambda's event source
//!   mapping hands over a batch, which is forwarded as a whole; any message
//!   not sent fails the invocation so that Lambda gives the batch back
//!   ([`amazon_mq`]).
//!
//! The flow is the project's: event → [`mapping`] (AMQP properties and
//! headers to a [`sqs_forwarder::Message`]) → [`sqs_forwarder::Forwarder::send_all`]
//! → outcomes → acks. Nothing here knows about SQS batching or retries.
//!
//! The broker password never appears in logs or errors ([`broker`]); it may
//! come from AWS Secrets Manager ([`secret`]).

pub mod acks;
pub mod amazon_mq;
pub mod broker;
pub mod drain;
mod error;
pub mod fifo_id;
pub mod fold;
pub mod lambda;
pub mod mapping;
pub mod secret;
pub mod settings;
pub mod values;

use aws_lambda_events::event::rabbitmq::RabbitMqEvent;
use serde_json::Value;
use sqs_forwarder::{ConfigError, Forwarder, Transport};
use tokio::time::Instant;

use crate::broker::{BrokerError, Secrets};
use crate::drain::{PollReport, Poller};
pub use crate::error::HandlerError;
use crate::mapping::Mapper;
use crate::secret::SecretSource;
use crate::settings::BrokerSettings;
pub use crate::settings::{DeliveryMode, Settings, VARIABLES};

/// The service name: the metrics' `Service` dimension and the AMQP
/// connection name.
pub const SERVICE: &str = "rabbitmq-to-sqs";

/// The prefix of the Lambda error types the function reports
/// (`RabbitmqToSqs.BadEvent`, ... see [`HandlerError::kind`], and a failed
/// start's `RabbitmqToSqs.InvalidConfiguration` or
/// `RabbitmqToSqs.StartFailed`).
pub const ERROR_PREFIX: &str = "RabbitmqToSqs";

/// This function's own metrics (the shared crate counts messages).
pub mod metric {
    /// Headers carried in the `amqp.headers` JSON attribute, for want of an
    /// attribute slot or a name SQS takes.
    pub const HEADERS_FOLDED: &str = "HeadersFolded";
    /// Headers left out because the message would not fit otherwise.
    pub const HEADERS_DROPPED: &str = "HeadersDropped";
}

/// The function: settings, the forwarder to SQS, and the way to the broker.
#[derive(Debug)]
pub struct Function<T> {
    settings: Settings,
    forwarder: Forwarder<T>,
    mapper: Mapper,
    deadline_margin: std::time::Duration,
    secret: Option<SecretSource>,
    secrets: Secrets,
    connection_name: String,
}

impl<T: Transport> Function<T> {
    /// Put the function together. `deadline_margin` is the shared
    /// `DEADLINE_MARGIN_MS`; `secrets_client` is needed when
    /// `RABBITMQ_PASSWORD_SECRET` is set. Fails when the delivery mode does
    /// not fit the target queue.
    pub fn new(
        settings: Settings,
        forwarder: Forwarder<T>,
        deadline_margin: std::time::Duration,
        secrets_client: Option<aws_sdk_secretsmanager::Client>,
    ) -> Result<Self, ConfigError> {
        let fifo = forwarder.rules().fifo;
        if settings.mode == DeliveryMode::ExactlyOnce && !fifo {
            return Err(ConfigError::new(
                "DELIVERY_MODE",
                "exactly-once",
                "at-least-once or auto-ack: exactly-once needs a FIFO target queue (its deduplication drops redelivered messages)",
            ));
        }
        if settings.mode == DeliveryMode::AutoAck {
            tracing::warn!(
                "DELIVERY_MODE=auto-ack: the broker forgets each message as soon as it hands it out; a message SQS does not take, or one in flight when the function stops, is LOST"
            );
        }
        let secret = match settings
            .broker
            .as_ref()
            .and_then(|b| b.password_secret.clone())
        {
            None => None,
            Some(id) => match secrets_client {
                Some(client) => Some(SecretSource::new(client, id)),
                None => {
                    return Err(ConfigError::new(
                        "RABBITMQ_PASSWORD_SECRET",
                        &id,
                        "a secret this function can read (no Secrets Manager client was set up)",
                    ));
                }
            },
        };
        let mut secrets = Secrets::default();
        if let Some(b) = &settings.broker {
            secrets.add(b.url.password());
            for warning in b.url.start_warnings(b.password_secret.is_some()) {
                tracing::warn!("{warning}");
            }
        }
        let mapper = Mapper::new(
            settings.mapping.clone(),
            settings.mode,
            fifo,
            forwarder.rules().default_group_id.clone(),
        )
        .with_room(fold::Room::of(&forwarder));
        Ok(Function {
            settings,
            forwarder,
            mapper,
            deadline_margin,
            secret,
            secrets,
            connection_name: SERVICE.to_owned(),
        })
    }

    /// Name the AMQP connection (shown by `rabbitmqctl list_connections`
    /// and the management UI); [`SERVICE`] by default.
    pub fn with_connection_name(mut self, name: impl Into<String>) -> Self {
        self.connection_name = name.into();
        self
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The forwarder.
    pub fn forwarder(&self) -> &Forwarder<T> {
        &self.forwarder
    }

    /// `text` without any password this function knows.
    pub fn scrub(&self, text: &str) -> String {
        self.secrets.scrub(text)
    }

    /// Connect to the broker, reading the password secret if there is one;
    /// a refused login with a secret reads the secret once more (rotation).
    pub async fn connect(&self, broker: &BrokerSettings) -> Result<lapin::Connection, BrokerError> {
        let attempt = |credentials: Option<broker::Credentials>| {
            let mut secrets = self.secrets.clone();
            if let Some(c) = &credentials {
                secrets.add(&c.password);
            }
            async move {
                broker::connect(
                    &broker.url,
                    credentials.as_ref(),
                    self.settings.heartbeat,
                    self.settings.connect_timeout,
                    &self.connection_name,
                    &secrets,
                )
                .await
            }
        };
        let Some(source) = &self.secret else {
            return attempt(None).await;
        };
        match attempt(Some(source.get().await?)).await {
            Err(e) if e.is_access_refused() => {
                if source.refresh().await? {
                    tracing::info!(
                        secret = source.secret_id(),
                        "the broker refused the login; the secret has changed since it was read, trying the new value"
                    );
                    attempt(Some(source.get().await?)).await
                } else {
                    Err(e)
                }
            }
            other => other,
        }
    }

    /// Handle one invocation: an `aws:rmq` batch is forwarded; anything else
    /// (a scheduled event) polls the configured broker. `deadline_ms` is the
    /// Lambda deadline in milliseconds since the Unix epoch.
    pub async fn handle(&self, event: Value, deadline_ms: u64) -> Result<Value, HandlerError> {
        let send_deadline =
            sqs_forwarder::deadline_from_epoch_millis(deadline_ms, self.deadline_margin);
        let stop_at =
            sqs_forwarder::deadline_from_epoch_millis(deadline_ms, self.settings.stop_margin);
        if stop_at <= Instant::now() {
            tracing::warn!(
                stop_margin_ms = self.settings.stop_margin.as_millis() as u64,
                "RABBITMQ_STOP_MARGIN_MS leaves no time in this invocation: no message will be taken (raise the function's timeout or lower the margin)"
            );
        }
        self.handle_until(event, stop_at, Some(send_deadline)).await
    }

    /// [`Function::handle`] with explicit instants: stop taking messages at
    /// `stop_at`, stop sending at `send_deadline`.
    pub async fn handle_until(
        &self,
        event: Value,
        stop_at: Instant,
        send_deadline: Option<Instant>,
    ) -> Result<Value, HandlerError> {
        match event.get("eventSource").and_then(Value::as_str) {
            Some("aws:rmq") => {
                // The path names the field at fault:
                // `rmqMessagesByQueue.orders::/[2].redelivered: invalid type: ...`.
                let event: RabbitMqEvent =
                    serde_path_to_error::deserialize(event).map_err(|e| {
                        HandlerError::BadEvent(format!(
                            "not an aws:rmq event: {}: {}",
                            e.path(),
                            e.inner()
                        ))
                    })?;
                let report =
                    amazon_mq::forward(&self.forwarder, &self.mapper, event, send_deadline).await?;
                Ok(serde_json::to_value(report).unwrap_or(Value::Null))
            }
            Some(other) => Err(HandlerError::BadEvent(format!(
                "event source {other:?}; this function takes scheduled events and aws:rmq batches"
            ))),
            None if event.get("Records").is_some() => Err(HandlerError::BadEvent(
                "a Records batch; this function takes scheduled events and aws:rmq batches".into(),
            )),
            None => {
                if let Some(kind) = event.get("detail-type").and_then(Value::as_str) {
                    tracing::debug!(detail_type = kind, "scheduled poll");
                }
                let report = self.poll_until(stop_at, send_deadline).await?;
                Ok(serde_json::to_value(report).unwrap_or(Value::Null))
            }
        }
    }

    /// Poll the configured broker: drain every queue, then close. Stops
    /// taking messages at `stop_at`; sends stop at `send_deadline`.
    pub async fn poll(
        &self,
        broker: &BrokerSettings,
        stop_at: Instant,
        send_deadline: Option<Instant>,
    ) -> Result<PollReport, BrokerError> {
        let conn = self.connect(broker).await?;
        let poller = Poller {
            forwarder: &self.forwarder,
            mapper: &self.mapper,
            settings: &self.settings,
            secrets: &self.secrets,
        };
        Ok(poller
            .poll(&conn, &broker.queues, stop_at, send_deadline)
            .await)
    }

    /// Poll the configured broker until `stop_at`; an error when it could
    /// not be reached or a queue's drain ended with a broker error.
    pub async fn poll_until(
        &self,
        stop_at: Instant,
        send_deadline: Option<Instant>,
    ) -> Result<PollReport, HandlerError> {
        let broker = self
            .settings
            .broker
            .as_ref()
            .ok_or(HandlerError::NotConfigured)?;
        let report = self.poll(broker, stop_at, send_deadline).await?;
        let errors = report.errors();
        if errors.is_empty() {
            return Ok(report);
        }
        let errors = errors
            .iter()
            .map(|q| {
                format!(
                    "queue {:?}: {}",
                    q.queue,
                    q.error.as_deref().unwrap_or("unknown error")
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        Err(HandlerError::Poll {
            sent: report.sent(),
            received: report.received(),
            errors,
            report: Box::new(report),
        })
    }
}

#[cfg(test)]
mod tests {
    use sqs_forwarder::message::encode::EncodeRules;
    use sqs_forwarder::test_support::{FakeSqs, Reply};
    use sqs_forwarder::{Env, SendSettings};

    use super::*;

    /// SQS for these tests: fails every entry whose body says "fail"
    /// (`InternalError`, retryable) and records every call.
    fn recorder() -> FakeSqs {
        FakeSqs::new().fail_where(
            |a| a.entry.body.contains("fail"),
            Reply::INTERNAL.with_message("boom"),
        )
    }

    fn function(vars: &[(&str, &str)], fifo: bool) -> (Function<FakeSqs>, FakeSqs) {
        let settings = Settings::from_env(&Env::from_pairs(vars)).expect("settings");
        let recorder = recorder();
        let mut send = SendSettings::default();
        send.retry.max_attempts = 1;
        let rules = EncodeRules {
            fifo,
            ..EncodeRules::default()
        };
        let f = Function::new(
            settings,
            Forwarder::new(recorder.clone(), send, rules),
            std::time::Duration::from_millis(500),
            None,
        )
        .expect("function");
        (f, recorder)
    }

    fn sample(name: &str) -> Value {
        let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("sample event");
        serde_json::from_str(&text).expect("sample event is JSON")
    }

    #[test]
    fn exactly_once_needs_a_fifo_target() {
        let settings = Settings::from_env(&Env::from_pairs(&[("DELIVERY_MODE", "exactly-once")]))
            .expect("settings");
        let e = Function::new(
            settings,
            Forwarder::new(recorder(), SendSettings::default(), EncodeRules::default()),
            std::time::Duration::ZERO,
            None,
        )
        .expect_err("standard target");
        assert_eq!(e.variable, "DELIVERY_MODE");
        let (f, _) = function(&[("DELIVERY_MODE", "exactly-once")], true);
        assert_eq!(f.settings().mode, DeliveryMode::ExactlyOnce);
    }

    #[test]
    fn a_secret_needs_a_client() {
        let settings = Settings::from_env(&Env::from_pairs(&[
            ("RABBITMQ_URL", "amqp://svc@localhost"),
            ("RABBITMQ_QUEUES", "q"),
            ("RABBITMQ_PASSWORD_SECRET", "mq/svc"),
        ]))
        .expect("settings");
        let e = Function::new(
            settings,
            Forwarder::new(recorder(), SendSettings::default(), EncodeRules::default()),
            std::time::Duration::ZERO,
            None,
        )
        .expect_err("no client");
        assert_eq!(e.variable, "RABBITMQ_PASSWORD_SECRET");
    }

    #[tokio::test]
    async fn a_scheduled_event_without_a_broker_says_what_is_missing() {
        let (f, recorder) = function(&[], false);
        for name in ["rabbitmq-schedule.json", "rabbitmq-scheduler-input.json"] {
            let e = f
                .handle(sample(name), u64::MAX)
                .await
                .expect_err("no broker configured");
            assert!(matches!(e, HandlerError::NotConfigured), "{name}: {e}");
            assert!(e.to_string().contains("RABBITMQ_URL"));
        }
        assert_eq!(recorder.call_count(), 0);
    }

    #[tokio::test]
    async fn other_events_are_refused() {
        let (f, _) = function(&[], false);
        let e = f
            .handle(
                serde_json::json!({"Records": [{"eventSource": "aws:sqs"}]}),
                u64::MAX,
            )
            .await
            .expect_err("records");
        assert!(matches!(e, HandlerError::BadEvent(_)));
        let e = f
            .handle(serde_json::json!({"eventSource": "aws:kafka"}), u64::MAX)
            .await
            .expect_err("kafka");
        assert!(e.to_string().contains("aws:kafka"));
    }

    #[tokio::test]
    async fn an_amazon_mq_batch_is_forwarded_whole() {
        let (f, recorder) = function(&[], false);
        let out = f
            .handle(sample("rabbitmq-amazon-mq.json"), u64::MAX)
            .await
            .expect("sent");
        assert_eq!(out["received"], 3);
        assert_eq!(out["sent"], 3);
        let bodies = recorder
            .seen()
            .iter()
            .map(|e| e.body.clone())
            .collect::<Vec<_>>();
        assert_eq!(bodies.len(), 3);
        assert!(bodies.contains(&r#"{"order":1001,"total":"42.50"}"#.to_owned()));
    }

    #[tokio::test]
    async fn an_amazon_mq_batch_with_an_unsent_message_fails_whole() {
        let (f, _) = function(&[], false);
        let mut event = sample("rabbitmq-amazon-mq.json");
        // A second queue whose message SQS refuses ("fail" in the body).
        event["rmqMessagesByQueue"]["refunds::/"] = serde_json::json!([{
            "basicProperties": {"deliveryMode": 2, "priority": 0, "bodySize": 4, "headers": {}},
            "redelivered": false,
            "data": "ZmFpbA=="
        }]);
        let e = f.handle(event, u64::MAX).await.expect_err("one unsent");
        match &e {
            HandlerError::Unsent {
                failed,
                total,
                permanent,
                codes,
            } => {
                assert_eq!((*failed, *total, *permanent), (1, 4, 0));
                assert_eq!(codes, "InternalError");
            }
            other => panic!("unexpected {other}"),
        }
    }

    #[tokio::test]
    async fn exactly_once_fails_an_amazon_mq_batch_with_a_message_without_correlation_id() {
        let (f, recorder) = function(&[("DELIVERY_MODE", "exactly-once")], true);
        let e = f
            .handle(sample("rabbitmq-amazon-mq.json"), u64::MAX)
            .await
            .expect_err("one message has no correlation id");
        match &e {
            HandlerError::Unsent {
                failed,
                permanent,
                codes,
                ..
            } => {
                assert_eq!((*failed, *permanent), (1, 1));
                assert_eq!(codes, mapping::MISSING_CORRELATION_ID);
            }
            other => panic!("unexpected {other}"),
        }
        assert!(e.to_string().contains("dead-letter exchange"));
        // The others went out, with their correlation ids as deduplication ids.
        assert_eq!(recorder.seen().len(), 2);
    }
}
