//! Receiving in the acked modes: a consumer under a bounded prefetch, its
//! deliveries gathered into batches no larger than the window the held
//! messages and the budget leave, until a reason to stop; then the held
//! messages are requeued.

use std::time::Duration;

use sqs_forwarder::Transport;
use tokio::time::Instant;

use super::{Drain, DrainError, StopReason};
use crate::acks::{Action, execute, plan};

/// How long to wait for more deliveries once a batch has begun.
const LINGER: Duration = Duration::from_millis(10);
/// Idle rounds with ready messages but no delivery before giving up on a
/// queue (another consumer is served, e.g. a single-active-consumer queue).
const STARVED_ROUNDS: u32 = 3;

impl<T: Transport> Drain<'_, T> {
    /// The ready messages of the queue, by a passive declare.
    async fn ready_count(&self) -> Result<u32, DrainError> {
        self.channel
            .ready_count(self.queue)
            .await
            .map_err(|e| self.describe("checking the queue", &e))
    }

    /// Drain the queue with a consumer; every delivery is settled or held,
    /// and the held ones are requeued before this returns.
    pub(super) async fn consume(&mut self) -> Result<StopReason, DrainError> {
        if self.ready_count().await? == 0 {
            return Ok(StopReason::Empty);
        }
        let queue = self.queue;
        let budget = self.budget;
        let stop_at = self.stop_at;
        let prefetch = u64::from(self.poller.settings.prefetch).min(budget).max(1) as u16;
        self.channel
            .basic_qos(prefetch)
            .await
            .map_err(|e| self.describe("basic.qos", &e))?;
        let mut consumer = self
            .channel
            .basic_consume(queue, "rabbitmq-to-sqs")
            .await
            .map_err(|e| self.describe("basic.consume", &e))?;

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
            let window = (usize::from(prefetch).saturating_sub(self.held.len()))
                .min(usize::try_from(budget - taken).unwrap_or(usize::MAX));
            if window == 0 {
                tracing::warn!(
                    queue,
                    held = self.held.len(),
                    "every prefetched message is held (SQS did not take it, or an earlier message of its FIFO group); stopping this queue's drain"
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
            let mut batch = vec![first];
            while batch.len() < window {
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
                    Some(d) => batch.push(d),
                    None => break,
                }
            }
            taken += batch.len() as u64;
            self.report.received += batch.len() as u64;
            if let Some(stop) = self.forward(batch).await? {
                break stop;
            }
        };
        self.requeue_held().await?;
        Ok(stop)
    }

    /// Give every held delivery back to the queue (`basic.nack` with
    /// requeue, in as few calls as [`plan`] allows).
    async fn requeue_held(&mut self) -> Result<(), DrainError> {
        if self.held.is_empty() {
            return Ok(());
        }
        let requeue: Vec<(u64, Action)> = self.held.iter().map(|t| (*t, Action::Requeue)).collect();
        execute(&self.channel, &plan(&requeue))
            .await
            .map_err(|e| self.describe("requeueing the messages SQS did not take", &e))?;
        self.report.requeued += self.held.len() as u64;
        Ok(())
    }
}
