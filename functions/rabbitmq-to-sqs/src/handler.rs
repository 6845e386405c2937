//! The function's core: one invocation's event in (a scheduled poll or an
//! `aws:rmq` batch), the messages out through the router (the forwarder, or
//! the routing rules and their targets' forwarders), their outcomes back as
//! acks (a poll) or the invocation's result (a batch).

use aws_lambda_events::event::rabbitmq::RabbitMqEvent;
use serde_json::Value;
use sqs_forwarder::route::Router;
use sqs_forwarder::{ConfigError, Forwarder, Transport};
use tokio::time::Instant;

use crate::broker::{self, BrokerError, Secrets};
use crate::drain::health::SqsHealth;
use crate::drain::{PollReport, Poller};
use crate::error::HandlerError;
use crate::mapping::Mapper;
use crate::secret::SecretSource;
use crate::settings::{BrokerSettings, DeliveryMode, Settings};
use crate::{SERVICE, amazon_mq, fold};

/// The target of this module's log lines: the crate's name, as for the
/// crate's other top-level events (`RUST_LOG` directives and log queries
/// name it).
const LOG_TARGET: &str = "rabbitmq_to_sqs";

/// The function's core: settings, the router to SQS, and the way to the broker.
#[derive(Debug)]
pub struct Handler<T> {
    settings: Settings,
    router: Router<T>,
    mapper: Mapper,
    deadline_margin: std::time::Duration,
    secret: Option<SecretSource>,
    secrets: Secrets,
    connection_name: String,
    /// Whether SQS takes messages, as the last tick found it.
    health: SqsHealth,
}

impl<T: Transport> Handler<T> {
    /// Put the handler together, every message to `forwarder`'s queue.
    /// `deadline_margin` is the shared `DEADLINE_MARGIN_MS`;
    /// `secrets_client` is needed when `RABBITMQ_PASSWORD_SECRET` is set.
    /// Fails when the delivery mode does not fit the target queue.
    pub fn new(
        settings: Settings,
        forwarder: Forwarder<T>,
        deadline_margin: std::time::Duration,
        secrets_client: Option<aws_sdk_secretsmanager::Client>,
    ) -> Result<Self, ConfigError> {
        Self::routed(
            settings,
            Router::single(forwarder),
            deadline_margin,
            secrets_client,
        )
    }

    /// [`Handler::new`], each message sent where `router`'s rules say.
    /// Fails when the delivery mode does not fit a target queue.
    pub fn routed(
        settings: Settings,
        router: Router<T>,
        deadline_margin: std::time::Duration,
        secrets_client: Option<aws_sdk_secretsmanager::Client>,
    ) -> Result<Self, ConfigError> {
        if settings.mode == DeliveryMode::ExactlyOnce {
            exactly_once_targets(&router)?;
        }
        if settings.mode == DeliveryMode::AutoAck {
            tracing::warn!(
                target: LOG_TARGET,
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
                tracing::warn!(target: LOG_TARGET, "{warning}");
            }
        }
        // With rules, messages carry FIFO ids when any target is FIFO; the
        // router takes them off those bound for a standard queue.
        let default = router.default_target();
        let mapper = Mapper::new(
            settings.mapping.clone(),
            settings.mode,
            router.any_fifo(),
            default.rules().default_group_id.clone(),
        )
        .with_room(fold::Room::of(default))
        .with_target_rooms(
            router
                .targets()
                .iter()
                .skip(1)
                .map(fold::Room::of)
                .collect(),
        );
        Ok(Handler {
            settings,
            router,
            mapper,
            deadline_margin,
            secret,
            secrets,
            connection_name: SERVICE.to_owned(),
            health: SqsHealth::default(),
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

    /// The default target's forwarder.
    pub fn forwarder(&self) -> &Forwarder<T> {
        self.router.default_target()
    }

    /// The router: the forwarder, or the routing rules and their targets'.
    pub fn router(&self) -> &Router<T> {
        &self.router
    }

    /// `text` without any password this function knows.
    pub fn scrub(&self, text: &str) -> String {
        self.secrets.scrub(text)
    }

    /// Whether SQS takes messages, as the last tick found it.
    pub fn health(&self) -> &SqsHealth {
        &self.health
    }

    /// Connect to the broker, reading the password secret if there is one;
    /// a refused login with a secret reads the secret once more (rotation).
    /// The handshake ends by `deadline`, if there is one.
    pub async fn connect(
        &self,
        broker: &BrokerSettings,
        deadline: Option<Instant>,
    ) -> Result<crate::amqp::Connection, BrokerError> {
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
                    deadline,
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
                        target: LOG_TARGET,
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
                target: LOG_TARGET,
                stop_margin_ms = self.settings.stop_margin.as_millis() as u64,
                "RABBITMQ_STOP_MARGIN_MS leaves no time in this invocation: no message will be taken (raise the function's timeout or lower the margin)"
            );
        }
        self.handle_until(event, stop_at, Some(send_deadline)).await
    }

    /// [`Handler::handle`] with explicit instants: stop taking messages at
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
                    amazon_mq::forward(&self.router, &self.mapper, event, send_deadline).await?;
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
                    tracing::debug!(target: LOG_TARGET, detail_type = kind, "scheduled poll");
                }
                let report = self.poll_until(stop_at, send_deadline).await?;
                Ok(serde_json::to_value(report).unwrap_or(Value::Null))
            }
        }
    }

    /// Poll the configured broker: drain every queue, then close. Stops
    /// taking messages at `stop_at`; sends stop at `send_deadline`, and
    /// every wait on the broker half `DEADLINE_MARGIN_MS` after it (so a
    /// stalled link ends the tick with an error, in time to answer).
    pub async fn poll(
        &self,
        broker: &BrokerSettings,
        stop_at: Instant,
        send_deadline: Option<Instant>,
    ) -> Result<PollReport, BrokerError> {
        let broker_deadline = send_deadline.map(|d| d + self.deadline_margin / 2);
        let conn = self.connect(broker, broker_deadline).await?;
        conn.set_deadline(broker_deadline);
        let poller = Poller {
            router: &self.router,
            mapper: &self.mapper,
            settings: &self.settings,
            secrets: &self.secrets,
            health: &self.health,
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

/// Exactly-once needs every target FIFO (their deduplication drops
/// redelivered messages): the default queue and every routing target.
fn exactly_once_targets<T: Transport>(router: &Router<T>) -> Result<(), ConfigError> {
    let refused = |why: String| Err(ConfigError::new("DELIVERY_MODE", "exactly-once", why));
    if !router.default_target().rules().fifo {
        return refused(
            "at-least-once or auto-ack: exactly-once needs a FIFO target queue (its deduplication drops redelivered messages)".into(),
        );
    }
    let names = router.routes().map(|r| r.targets()).unwrap_or_default();
    for (forwarder, (name, _)) in router.targets().iter().skip(1).zip(names) {
        if !forwarder.rules().fifo {
            return refused(format!(
                "at-least-once or auto-ack: exactly-once needs every target queue FIFO (their deduplication drops redelivered messages); ROUTES target {name:?} is a standard queue"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
