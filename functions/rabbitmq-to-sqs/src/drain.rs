//! The scheduled poll: connect, drain each configured queue, settle every
//! delivery, close.
//!
//! A queue is drained with a consumer under a bounded prefetch
//! (`basic.qos`, `RABBITMQ_PREFETCH`): the broker hands out at most that
//! many unacknowledged messages, which are forwarded as one batch through
//! the shared crate and then settled ([`crate::acks`]). The drain of a queue
//! stops at the first of:
//!
//! * the queue is empty (no delivery for `RABBITMQ_IDLE_MS` and the broker
//!   reports no ready message);
//! * `RABBITMQ_MAX_MESSAGES` taken in this invocation (all queues together);
//! * less than `RABBITMQ_STOP_MARGIN_MS` left before the Lambda deadline;
//! * the prefetch window is full of messages SQS did not take, or SQS refused
//!   a call for a reason no retry fixes (access denied, missing queue).
//!
//! Messages SQS did not take but might later are held unacknowledged until
//! the drain of their queue ends and then requeued, so one invocation never
//! takes the same failing message twice. On a FIFO target, later messages of
//! a held message's group are held too, so a group's order survives.
//!
//! In `auto-ack` mode the broker forgets each message as it hands it out, so
//! prefetch cannot bound anything: messages are pulled one at a time with
//! `basic.get` (`no-ack`), never more than will be forwarded, and whatever
//! SQS does not take is lost (logged and counted).

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use futures_util::StreamExt;
use lapin::options::{BasicConsumeOptions, BasicGetOptions, BasicQosOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Connection};
use serde::Serialize;
use sqs_forwarder::{Failure, Outcome, Transport};
use tokio::time::Instant;

use crate::Function;
use crate::acks::{Action, execute, plan};
use crate::broker::BrokerError;
use crate::mapping::Incoming;
use crate::settings::{BrokerSettings, DeliveryMode};

/// How long to wait for more deliveries once a batch has begun.
const LINGER: Duration = Duration::from_millis(10);
/// Idle rounds with ready messages but no delivery before giving up on a
/// queue (another consumer is served, e.g. a single-active-consumer queue).
const STARVED_ROUNDS: u32 = 3;

/// Why the drain of a queue ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// Nothing left.
    #[default]
    Empty,
    /// `RABBITMQ_MAX_MESSAGES` reached.
    MaxMessages,
    /// `RABBITMQ_STOP_MARGIN_MS` before the deadline reached.
    Deadline,
    /// SQS is not taking messages (a full window of failures, or a call
    /// refused for good).
    SqsFailing,
    /// The broker reports ready messages but delivers none to this consumer.
    Starved,
    /// The broker cancelled the consumer (the queue was deleted).
    Cancelled,
    /// A broker error ended the drain; see `error`.
    Error,
    /// Not drained: the budget or the time ran out on an earlier queue, or
    /// the connection was lost.
    Skipped,
}

impl StopReason {
    /// The name used in reports and logs (`max-messages`).
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Empty => "empty",
            StopReason::MaxMessages => "max-messages",
            StopReason::Deadline => "deadline",
            StopReason::SqsFailing => "sqs-failing",
            StopReason::Starved => "starved",
            StopReason::Cancelled => "cancelled",
            StopReason::Error => "error",
            StopReason::Skipped => "skipped",
        }
    }
}

/// What happened to one queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct QueueReport {
    /// The queue.
    pub queue: String,
    /// Messages taken from the broker.
    pub received: u64,
    /// Messages SQS accepted (and that were acked).
    pub sent: u64,
    /// Messages dropped by `OVERSIZE_POLICY=drop` (acked).
    pub dropped: u64,
    /// Messages rejected without requeue (to the dead-letter exchange).
    pub rejected: u64,
    /// Messages given back to the queue (nack with requeue).
    pub requeued: u64,
    /// Messages lost in `auto-ack` mode because SQS did not take them.
    pub lost: u64,
    /// Why the drain ended.
    pub stop: StopReason,
    /// The broker error that ended it, if any (never holds a password).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl QueueReport {
    fn new(queue: &str) -> Self {
        QueueReport {
            queue: queue.to_owned(),
            ..QueueReport::default()
        }
    }
}

/// What one poll did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct PollReport {
    /// One report per configured queue, in order.
    pub queues: Vec<QueueReport>,
}

impl PollReport {
    /// Messages SQS accepted, all queues together.
    pub fn sent(&self) -> u64 {
        self.queues.iter().map(|q| q.sent).sum()
    }

    /// Messages taken from the broker, all queues together.
    pub fn received(&self) -> u64 {
        self.queues.iter().map(|q| q.received).sum()
    }

    /// The queues whose drain ended with an error.
    pub fn errors(&self) -> Vec<&QueueReport> {
        self.queues.iter().filter(|q| q.error.is_some()).collect()
    }
}

/// A failure that ends a queue's drain (already scrubbed of secrets).
struct DrainError(String);

/// Whether a permanent failure is the message's own fault (so it must go to
/// the dead-letter exchange) rather than the queue's or the credentials'
/// (so it must stay in RabbitMQ until that is fixed): its [`Cause`].
pub fn message_fault(failure: &Failure) -> bool {
    !failure.retryable && failure.cause.is_message_fault()
}

impl<T: Transport> Function<T> {
    /// Poll the configured broker: drain every queue, then close. Stops
    /// taking messages at `stop_at`; sends stop at `send_deadline`.
    pub async fn poll(
        &self,
        broker: &BrokerSettings,
        stop_at: Instant,
        send_deadline: Option<Instant>,
    ) -> Result<PollReport, BrokerError> {
        let conn = self.connect(broker).await?;
        let mut report = PollReport::default();
        let mut budget = self.settings.max_messages;
        let mut lost = false;
        for queue in &broker.queues {
            if lost || budget == 0 || Instant::now() >= stop_at {
                report.queues.push(QueueReport {
                    stop: StopReason::Skipped,
                    ..QueueReport::new(queue)
                });
                continue;
            }
            let r = match self.settings.mode {
                DeliveryMode::AutoAck => {
                    self.drain_auto_ack(&conn, queue, budget, stop_at, send_deadline)
                        .await
                }
                _ => {
                    self.drain_acked(&conn, queue, budget, stop_at, send_deadline)
                        .await
                }
            };
            budget = budget.saturating_sub(r.received);
            lost = !conn.status().connected();
            tracing::info!(
                queue = %r.queue,
                received = r.received,
                sent = r.sent,
                dropped = r.dropped,
                rejected = r.rejected,
                requeued = r.requeued,
                lost = r.lost,
                stop = r.stop.name(),
                error = r.error.as_deref().unwrap_or(""),
                "queue drained"
            );
            report.queues.push(r);
        }
        if conn.status().connected()
            && let Err(e) = conn.close(200, "OK".into()).await
        {
            tracing::debug!(error = %self.scrub(&e.to_string()), "closing the connection");
        }
        Ok(report)
    }

    fn describe(&self, doing: &str, e: &lapin::Error) -> DrainError {
        DrainError(format!("{doing}: {}", self.scrub(&e.to_string())))
    }

    async fn drain_acked(
        &self,
        conn: &Connection,
        queue: &str,
        budget: u64,
        stop_at: Instant,
        send_deadline: Option<Instant>,
    ) -> QueueReport {
        let mut report = QueueReport::new(queue);
        let channel = match conn.create_channel().await {
            Ok(c) => c,
            Err(e) => {
                report.stop = StopReason::Error;
                report.error = Some(self.describe("opening a channel", &e).0);
                return report;
            }
        };
        match self
            .consume(&channel, queue, budget, stop_at, send_deadline, &mut report)
            .await
        {
            Ok(stop) => report.stop = stop,
            Err(DrainError(e)) => {
                report.stop = StopReason::Error;
                report.error = Some(e);
            }
        }
        // Closing the channel hands back to the queue whatever the broker
        // had prefetched for this consumer and nobody took.
        if channel.status().connected()
            && let Err(e) = channel.close(200, "OK".into()).await
        {
            tracing::debug!(queue, error = %self.scrub(&e.to_string()), "closing the channel");
        }
        report
    }

    async fn ready_count(&self, channel: &Channel, queue: &str) -> Result<u32, DrainError> {
        channel
            .queue_declare(
                queue.into(),
                QueueDeclareOptions {
                    passive: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .map(|q| q.message_count())
            .map_err(|e| self.describe("checking the queue", &e))
    }

    async fn consume(
        &self,
        channel: &Channel,
        queue: &str,
        budget: u64,
        stop_at: Instant,
        send_deadline: Option<Instant>,
        report: &mut QueueReport,
    ) -> Result<StopReason, DrainError> {
        if self.ready_count(channel, queue).await? == 0 {
            return Ok(StopReason::Empty);
        }
        let prefetch = u64::from(self.settings.prefetch).min(budget).max(1) as u16;
        channel
            .basic_qos(prefetch, BasicQosOptions::default())
            .await
            .map_err(|e| self.describe("basic.qos", &e))?;
        let mut consumer = channel
            .basic_consume(
                queue.into(),
                "rabbitmq-to-sqs".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(|e| self.describe("basic.consume", &e))?;

        let mut held: BTreeMap<u64, ()> = BTreeMap::new();
        let mut blocked_groups: HashSet<String> = HashSet::new();
        let mut taken: u64 = 0;
        let mut idle_rounds = 0;
        let stop = loop {
            let now = Instant::now();
            if taken >= budget {
                break StopReason::MaxMessages;
            }
            if now >= stop_at {
                break StopReason::Deadline;
            }
            let window = (usize::from(prefetch).saturating_sub(held.len()))
                .min(usize::try_from(budget - taken).unwrap_or(usize::MAX));
            if window == 0 {
                tracing::warn!(
                    queue,
                    held = held.len(),
                    "every prefetched message is held (SQS did not take it, or an earlier message of its FIFO group); stopping this queue's drain"
                );
                break StopReason::SqsFailing;
            }

            let wait = self.settings.idle.min(stop_at - now);
            let first = match tokio::time::timeout(wait, consumer.next()).await {
                Ok(Some(Ok(d))) => d,
                Ok(Some(Err(e))) => return Err(self.describe("receiving", &e)),
                Ok(None) => {
                    if channel.status().connected() {
                        tracing::warn!(queue, "the broker cancelled the consumer");
                        break StopReason::Cancelled;
                    }
                    return Err(DrainError(
                        "the connection to the broker was lost while receiving".into(),
                    ));
                }
                Err(_) => {
                    if Instant::now() >= stop_at {
                        break StopReason::Deadline;
                    }
                    let ready = self.ready_count(channel, queue).await?;
                    if ready == 0 {
                        break StopReason::Empty;
                    }
                    idle_rounds += 1;
                    if idle_rounds >= STARVED_ROUNDS {
                        tracing::warn!(
                            queue,
                            ready,
                            "the queue has ready messages but the broker delivers none to this consumer (another consumer is served, e.g. single active consumer); stopping"
                        );
                        break StopReason::Starved;
                    }
                    continue;
                }
            };
            idle_rounds = 0;
            let mut batch = vec![first];
            while batch.len() < window {
                match tokio::time::timeout(LINGER, consumer.next()).await {
                    Ok(Some(Ok(d))) => batch.push(d),
                    Ok(Some(Err(e))) => return Err(self.describe("receiving", &e)),
                    Ok(None) | Err(_) => break,
                }
            }
            taken += batch.len() as u64;
            report.received += batch.len() as u64;
            let stop = self
                .forward_batch(
                    channel,
                    queue,
                    batch,
                    &mut held,
                    &mut blocked_groups,
                    send_deadline,
                    report,
                )
                .await?;
            if let Some(s) = stop {
                break s;
            }
        };

        if !held.is_empty() {
            let requeue: Vec<(u64, Action)> = held.keys().map(|t| (*t, Action::Requeue)).collect();
            execute(channel, &plan(&requeue))
                .await
                .map_err(|e| self.describe("requeueing the messages SQS did not take", &e))?;
            report.requeued += held.len() as u64;
        }
        Ok(stop)
    }

    #[allow(clippy::too_many_arguments)]
    async fn forward_batch(
        &self,
        channel: &Channel,
        queue: &str,
        batch: Vec<lapin::message::Delivery>,
        held: &mut BTreeMap<u64, ()>,
        blocked_groups: &mut HashSet<String>,
        send_deadline: Option<Instant>,
        report: &mut QueueReport,
    ) -> Result<Option<StopReason>, DrainError> {
        let fifo = self.mapper.fifo();
        let mut decisions: Vec<(u64, Action)> = Vec::with_capacity(batch.len());
        let mut messages = Vec::with_capacity(batch.len());
        let mut groups: BTreeMap<u64, String> = BTreeMap::new();
        let mut message_ids: BTreeMap<u64, String> = BTreeMap::new();
        for d in &batch {
            let incoming = Incoming::from_delivery(d, queue);
            if let Some(id) = &incoming.properties.message_id {
                message_ids.insert(d.delivery_tag, id.clone());
            }
            match self.mapper.message(incoming, d.delivery_tag) {
                Ok(m) => match &m.group_id {
                    Some(g) if fifo && blocked_groups.contains(g) => {
                        decisions.push((d.delivery_tag, Action::Hold));
                    }
                    _ => {
                        if let Some(g) = &m.group_id {
                            groups.insert(d.delivery_tag, g.clone());
                        }
                        messages.push(m);
                    }
                },
                Err((tag, failure)) => {
                    tracing::warn!(
                        queue,
                        delivery_tag = tag,
                        message_id = message_ids.get(&tag).map(String::as_str).unwrap_or(""),
                        code = %failure.code,
                        "rejecting the message (to the dead-letter exchange, if the queue has one): {}",
                        failure.message
                    );
                    decisions.push((tag, Action::Reject));
                }
            }
        }
        drop(batch);

        let outcomes = self.forwarder.send_all(messages, send_deadline).await;
        let mut stop = None;
        for o in outcomes {
            let tag = o.position;
            let action = match &o.outcome {
                Outcome::Sent { .. } => {
                    report.sent += 1;
                    Action::Ack
                }
                Outcome::Dropped { .. } => {
                    report.dropped += 1;
                    Action::Ack
                }
                Outcome::Failed(f) if message_fault(f) => {
                    tracing::warn!(
                        queue,
                        delivery_tag = tag,
                        message_id = message_ids.get(&tag).map(String::as_str).unwrap_or(""),
                        code = %f.code,
                        "rejecting the message (to the dead-letter exchange, if the queue has one): {}",
                        f.message
                    );
                    Action::Reject
                }
                Outcome::Failed(f) => {
                    if !f.retryable && stop.is_none() {
                        tracing::error!(
                            queue,
                            code = %f.code,
                            "SQS refused the call for a reason no retry fixes; the messages stay in RabbitMQ and this queue's drain stops: {}",
                            f.message
                        );
                        stop = Some(StopReason::SqsFailing);
                    }
                    if fifo && let Some(g) = groups.get(&tag) {
                        blocked_groups.insert(g.clone());
                    }
                    Action::Hold
                }
            };
            decisions.push((tag, action));
        }
        report.rejected += decisions
            .iter()
            .filter(|(_, a)| *a == Action::Reject)
            .count() as u64;

        let mut outstanding: Vec<(u64, Action)> = held.keys().map(|t| (*t, Action::Hold)).collect();
        outstanding.extend(decisions.iter().copied());
        execute(channel, &plan(&outstanding)).await.map_err(|e| {
            if channel.status().connected() {
                self.describe("acknowledging", &e)
            } else {
                self.describe(
                    "acknowledging: the connection or channel was closed (by the broker or the network)",
                    &e,
                )
            }
        })?;
        for (tag, action) in decisions {
            if action == Action::Hold {
                held.insert(tag, ());
            }
        }
        Ok(stop)
    }

    async fn drain_auto_ack(
        &self,
        conn: &Connection,
        queue: &str,
        budget: u64,
        stop_at: Instant,
        send_deadline: Option<Instant>,
    ) -> QueueReport {
        let mut report = QueueReport::new(queue);
        let channel = match conn.create_channel().await {
            Ok(c) => c,
            Err(e) => {
                report.stop = StopReason::Error;
                report.error = Some(self.describe("opening a channel", &e).0);
                return report;
            }
        };
        match self
            .pull(&channel, queue, budget, stop_at, send_deadline, &mut report)
            .await
        {
            Ok(stop) => report.stop = stop,
            Err(DrainError(e)) => {
                report.stop = StopReason::Error;
                report.error = Some(e);
            }
        }
        if channel.status().connected() {
            let _ = channel.close(200, "OK".into()).await;
        }
        report
    }

    async fn pull(
        &self,
        channel: &Channel,
        queue: &str,
        budget: u64,
        stop_at: Instant,
        send_deadline: Option<Instant>,
        report: &mut QueueReport,
    ) -> Result<StopReason, DrainError> {
        let mut taken = 0u64;
        loop {
            if taken >= budget {
                return Ok(StopReason::MaxMessages);
            }
            if Instant::now() >= stop_at {
                return Ok(StopReason::Deadline);
            }
            let window = u64::from(self.settings.prefetch).min(budget - taken);
            let mut messages = Vec::new();
            let mut empty = false;
            while (messages.len() as u64) < window && Instant::now() < stop_at {
                let got = channel
                    .basic_get(queue.into(), BasicGetOptions { no_ack: true })
                    .await
                    .map_err(|e| self.describe("basic.get", &e))?;
                let Some(got) = got else {
                    empty = true;
                    break;
                };
                let d = got.delivery;
                match self
                    .mapper
                    .message(Incoming::from_delivery(&d, queue), d.delivery_tag)
                {
                    Ok(m) => messages.push(m),
                    Err((_, f)) => {
                        report.lost += 1;
                        tracing::error!(queue, code = %f.code, "message lost (DELIVERY_MODE=auto-ack): {}", f.message);
                    }
                }
                taken += 1;
                report.received += 1;
            }
            let outcomes = self.forwarder.send_all(messages, send_deadline).await;
            for o in outcomes {
                match &o.outcome {
                    Outcome::Sent { .. } => report.sent += 1,
                    Outcome::Dropped { .. } => report.dropped += 1,
                    Outcome::Failed(f) => {
                        report.lost += 1;
                        tracing::error!(queue, code = %f.code, "message lost (DELIVERY_MODE=auto-ack): {}", f.message);
                    }
                }
            }
            if empty {
                return Ok(StopReason::Empty);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_are_named_as_in_the_report() {
        for s in [
            StopReason::Empty,
            StopReason::MaxMessages,
            StopReason::Deadline,
            StopReason::SqsFailing,
            StopReason::Starved,
            StopReason::Cancelled,
            StopReason::Error,
            StopReason::Skipped,
        ] {
            assert_eq!(
                serde_json::to_value(s).expect("serializes"),
                serde_json::Value::String(s.name().into())
            );
        }
    }

    #[test]
    fn only_message_faults_go_to_the_dead_letter_exchange() {
        let permanent = |code: &str| Failure::permanent(code, "x");
        assert!(message_fault(&permanent("EmptyBody")));
        assert!(message_fault(&permanent("MessageTooLarge")));
        assert!(message_fault(&permanent("InvalidParameterValue")));
        assert!(message_fault(&permanent("MissingDeduplicationId")));
        assert!(message_fault(&permanent(
            "AWS.SimpleQueueService.MessageTooLong"
        )));
        assert!(!message_fault(&permanent("AccessDenied")));
        assert!(!message_fault(&permanent(
            "AWS.SimpleQueueService.NonExistentQueue"
        )));
        assert!(!message_fault(&permanent("KmsAccessDenied")));
        assert!(!message_fault(&permanent("SomethingNew")));
        assert!(!message_fault(&Failure::transient("InternalError", "x")));
        assert!(!message_fault(&Failure::transient("DeadlineExceeded", "x")));
    }
}
