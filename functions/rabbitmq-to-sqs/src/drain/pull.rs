//! Receiving in `auto-ack` mode: the broker forgets each message as it
//! hands it out, so prefetch bounds nothing. Messages are pulled one at a
//! time with `basic.get` (`no-ack`), never more than one batch ahead of
//! SQS, and whatever SQS does not take is lost (logged and counted).

use lapin::options::BasicGetOptions;
use sqs_forwarder::{Outcome, Transport};
use tokio::time::Instant;

use super::{Drain, DrainError, StopReason};
use crate::mapping::Incoming;

impl<T: Transport> Drain<'_, T> {
    /// Drain the queue with `basic.get`, a batch of at most
    /// `RABBITMQ_PREFETCH` at a time.
    pub(super) async fn pull(&mut self) -> Result<StopReason, DrainError> {
        let queue = self.queue;
        let mut taken = 0u64;
        loop {
            if taken >= self.budget {
                return Ok(StopReason::MaxMessages);
            }
            if Instant::now() >= self.stop_at {
                return Ok(StopReason::Deadline);
            }
            let window = u64::from(self.poller.settings.prefetch).min(self.budget - taken);
            let mut messages = Vec::new();
            let mut empty = false;
            while (messages.len() as u64) < window && Instant::now() < self.stop_at {
                let got = self
                    .channel
                    .basic_get(queue.into(), BasicGetOptions { no_ack: true })
                    .await
                    .map_err(|e| self.describe("basic.get", &e))?;
                let Some(got) = got else {
                    empty = true;
                    break;
                };
                let d = got.delivery;
                match self
                    .poller
                    .mapper
                    .message(Incoming::from_delivery(&d, queue), d.delivery_tag)
                {
                    Ok(m) => messages.push(m),
                    Err((_, f)) => {
                        self.report.lost += 1;
                        tracing::error!(queue, code = %f.code, "message lost (DELIVERY_MODE=auto-ack): {}", f.message);
                    }
                }
                taken += 1;
                self.report.received += 1;
            }
            let outcomes = self
                .poller
                .forwarder
                .send_all(messages, self.send_deadline)
                .await;
            for o in outcomes {
                match &o.outcome {
                    Outcome::Sent { .. } => self.report.sent += 1,
                    Outcome::Dropped { .. } => self.report.dropped += 1,
                    Outcome::Failed(f) => {
                        self.report.lost += 1;
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
