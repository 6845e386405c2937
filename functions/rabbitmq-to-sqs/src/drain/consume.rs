//! Receiving in the acked modes: a consumer under a bounded prefetch, its
//! deliveries gathered into batches no larger than the window the held
//! messages and the budget leave (and than `RABBITMQ_MAX_BATCH_BYTES`),
//! until a reason to stop; then the consumer is cancelled and what was
//! held, or delivered and never taken, is given back.

use std::time::Duration;

use sqs_forwarder::Transport;
use tokio::time::Instant;

use super::health::SqsState;
use super::{Drain, DrainError, StopReason};
use crate::acks::{Action, execute, plan};

/// How long to wait for more deliveries once a batch has begun.
const LINGER: Duration = Duration::from_millis(10);
/// Idle rounds with ready messages but no delivery before giving up on a
/// queue (another consumer is served, e.g. a single-active-consumer queue).
const STARVED_ROUNDS: u32 = 3;

impl<T: Transport> Drain<'_, T> {
    /// The ready messages of the queue, by a passive declare; kept as the
    /// queue's backlog.
    pub(super) async fn ready_count(&mut self) -> Result<u32, DrainError> {
        let ready = self
            .channel
            .ready_count(self.queue)
            .await
            .map_err(|e| self.describe("checking the queue", &e))?;
        self.report.backlog = Some(ready);
        Ok(ready)
    }

    /// Drain the queue with a consumer; every delivery is settled or held,
    /// and the held ones are requeued before this returns.
    pub(super) async fn consume(&mut self) -> Result<StopReason, DrainError> {
        if self.ready_count().await? == 0 {
            return Ok(StopReason::Empty);
        }
        if let Some(stop) = self.check_sqs().await? {
            return Ok(stop);
        }
        let queue = self.queue;
        let budget = self.budget.saturating_sub(self.report.received);
        let stop_at = self.stop_at;
        let max_bytes = self.poller.settings.max_batch_bytes;
        if budget == 0 {
            return Ok(StopReason::MaxMessages);
        }
        let prefetch = u64::from(self.poller.settings.prefetch).min(budget).max(1) as u16;
        self.channel
            .basic_qos(prefetch)
            .await
            .map_err(|e| self.describe("basic.qos", &e))?;
        let mut consumer = self
            .channel
            .basic_consume(queue, "rabbitmq-to-sqs", max_bytes)
            .await
            .map_err(|e| self.describe("basic.consume", &e))?;

        let mut taken: u64 = 0;
        let mut idle_rounds = 0;
        // The last batch's decisions, settled once the consumer is cancelled.
        let mut last = None;
        let stop = loop {
            let now = Instant::now();
            if taken >= budget {
                break StopReason::MaxMessages;
            }
            if now >= stop_at {
                break StopReason::Deadline;
            }
            let window = (usize::from(prefetch).saturating_sub(self.held.len()))
                .min(usize::try_from(budget - taken).unwrap_or(usize::MAX));
            if window == 0 {
                tracing::warn!(
                    queue,
                    held = self.held.len(),
                    "every prefetched message is held (an earlier message of its FIFO group was not taken by SQS); stopping this queue's drain"
                );
                break StopReason::SqsFailing;
            }

            let wait = self.poller.settings.idle.min(stop_at - now);
            let first = match tokio::time::timeout(wait, consumer.next()).await {
                Ok(Some(d)) => d,
                Ok(None) => {
                    if self.channel.connected() {
                        tracing::warn!(queue, "the broker cancelled the consumer");
                        break StopReason::Cancelled;
                    }
                    return Err(self.describe("receiving", &self.channel.error()));
                }
                Err(_) => {
                    if Instant::now() >= stop_at {
                        break StopReason::Deadline;
                    }
                    let ready = self.ready_count().await?;
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
            let mut bytes = first.data.len();
            let mut batch = vec![first];
            while batch.len() < window && bytes < max_bytes {
                // What has already been received is taken without a timer;
                // the linger is armed only when none is waiting.
                let next = match consumer.try_next() {
                    Some(d) => Some(d),
                    None => tokio::time::timeout(LINGER, consumer.next())
                        .await
                        .ok()
                        .flatten(),
                };
                match next {
                    Some(d) => {
                        bytes += d.data.len();
                        batch.push(d);
                    }
                    None => break,
                }
            }
            taken += batch.len() as u64;
            self.report.received += batch.len() as u64;
            let sent = self.send(batch).await;
            // Sent: the bodies are gone, the client may read on.
            consumer.release(bytes);
            let stop = sent
                .stop
                .or_else(|| (taken >= budget).then_some(StopReason::MaxMessages))
                .or_else(|| (Instant::now() >= stop_at).then_some(StopReason::Deadline));
            if let Some(stop) = stop {
                last = Some(sent.decisions);
                break stop;
            }
            self.settle(sent.decisions).await?;
        };
        // The consumer is cancelled before the last batch is settled and
        // anything given back: its acks free no window for deliveries
        // nobody takes, and a requeued message is not delivered to it
        // again (on a quorum queue, a delivery attempt each, for nothing).
        let untaken = self
            .channel
            .cancel(consumer)
            .await
            .map_err(|e| self.describe("basic.cancel", &e))?;
        if let Some(decisions) = last {
            self.settle(decisions).await?;
        }
        self.requeue_held(&untaken).await?;
        Ok(stop)
    }

    /// Whether SQS may be sent to before messages are taken
    /// ([`super::health`]): `None` to go on, or why this queue's drain
    /// stops without taking any (or after the one message tried).
    async fn check_sqs(&mut self) -> Result<Option<StopReason>, DrainError> {
        let health = self.poller.health;
        let state = health.state();
        if state == SqsState::Answering {
            return Ok(None);
        }
        if let Err(f) = self.poller.router.probe(self.send_deadline).await {
            health.set(SqsState::Failing);
            tracing::warn!(
                queue = self.queue,
                code = %f.code,
                "SQS does not answer; no message is taken this time: {}",
                f.message
            );
            return Ok(Some(StopReason::SqsFailing));
        }
        if state == SqsState::Unknown {
            health.set(SqsState::Answering);
            return Ok(None);
        }
        // It failed last time: one message alone first, until one is sent
        // (one the rules drop, or that can never be sent, says nothing of
        // SQS), or a target fails one it had failed before (or every
        // target has failed one): one attempt a tick per target at most.
        let targets = self.poller.router.targets().len();
        loop {
            if self.report.received >= self.budget {
                return Ok(Some(StopReason::MaxMessages));
            }
            if Instant::now() >= self.stop_at {
                return Ok(Some(StopReason::Deadline));
            }
            let trial = self
                .channel
                .basic_get(self.queue, false)
                .await
                .map_err(|e| self.describe("basic.get", &e))?;
            let Some(d) = trial else {
                return Ok(Some(StopReason::Empty));
            };
            self.report.received += 1;
            let failed_before = self.failing_targets.len();
            let stop = self.forward(vec![d]).await?;
            if health.state() == SqsState::Answering {
                return Ok(stop);
            }
            let failed = self.failing_targets.len();
            if stop.is_some() && (failed == failed_before || failed >= targets) {
                self.requeue_held(&[]).await?;
                return Ok(stop);
            }
        }
    }

    /// Give every held delivery back to the queue, with those delivered
    /// and never taken (`untaken`): `basic.nack` with requeue, in as few
    /// calls as [`plan`] allows.
    async fn requeue_held(&mut self, untaken: &[u64]) -> Result<(), DrainError> {
        if self.held.is_empty() && untaken.is_empty() {
            return Ok(());
        }
        let requeue: Vec<(u64, Action)> = self
            .held
            .iter()
            .chain(untaken)
            .map(|t| (*t, Action::Requeue))
            .collect();
        execute(&self.channel, &plan(&requeue))
            .await
            .map_err(|e| self.describe("requeueing the messages SQS did not take", &e))?;
        self.report.requeued += self.held.len() as u64;
        self.report.untaken += untaken.len() as u64;
        self.held.clear();
        Ok(())
    }
}
