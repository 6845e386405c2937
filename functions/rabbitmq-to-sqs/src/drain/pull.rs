//! Receiving in `auto-ack` mode: the broker forgets each message as it
//! hands it out, so prefetch bounds nothing. Messages are pulled one at a
//! time with `basic.get` (`no-ack`), never more than one batch ahead of
//! SQS (at most `RABBITMQ_PREFETCH` messages and `RABBITMQ_MAX_BATCH_BYTES`
//! bytes), and whatever SQS does not take is lost (logged and counted): a
//! message the routing rules cannot shape too; one they send nowhere is
//! counted in `dropped`. As in the acked modes, nothing is taken while SQS
//! does not answer, one message alone after a failing tick, and the drain
//! stops at the first batch SQS took none of ([`super::health`]).

use sqs_forwarder::{Outcome, Transport};
use tokio::time::Instant;

use super::health::{SqsState, sqs_failing};
use super::{Drain, DrainError, StopReason};
use crate::mapping::Incoming;
use crate::routing;

impl<T: Transport> Drain<'_, T> {
    /// Drain the queue with `basic.get`, a batch of at most
    /// `RABBITMQ_PREFETCH` at a time.
    pub(super) async fn pull(&mut self) -> Result<StopReason, DrainError> {
        let queue = self.queue;
        let router = self.poller.router;
        let health = self.poller.health;
        if self.ready_count().await? == 0 {
            return Ok(StopReason::Empty);
        }
        if health.state() != SqsState::Answering {
            if let Err(f) = router.probe(self.send_deadline).await {
                health.set(SqsState::Failing);
                tracing::warn!(queue, code = %f.code, "SQS does not answer; no message is taken this time: {}", f.message);
                return Ok(StopReason::SqsFailing);
            }
            if health.state() == SqsState::Unknown {
                health.set(SqsState::Answering);
            }
        }
        let max_bytes = self.poller.settings.max_batch_bytes;
        let mut taken = 0u64;
        loop {
            if taken >= self.budget {
                return Ok(StopReason::MaxMessages);
            }
            if Instant::now() >= self.stop_at {
                return Ok(StopReason::Deadline);
            }
            // After a failing tick, one message alone first: what SQS does
            // not take is lost.
            let window = match health.state() {
                SqsState::Answering => u64::from(self.poller.settings.prefetch),
                _ => 1,
            }
            .min(self.budget - taken);
            let mut items = Vec::new();
            let mut empty = false;
            let mut pulled = 0u64;
            let mut bytes = 0usize;
            while pulled < window && bytes < max_bytes && Instant::now() < self.stop_at {
                let got = self
                    .channel
                    .basic_get(queue, true)
                    .await
                    .map_err(|e| self.describe("basic.get", &e))?;
                let Some(d) = got else {
                    empty = true;
                    break;
                };
                pulled += 1;
                taken += 1;
                bytes += d.data.len();
                self.report.received += 1;
                if let Some(why) = &d.fault {
                    metrics::counter!(crate::metric::UNREADABLE_MESSAGES).increment(1);
                    self.report.lost += 1;
                    tracing::error!(
                        queue,
                        code = super::settle::UNREADABLE,
                        "message lost (DELIVERY_MODE=auto-ack): {why}"
                    );
                    continue;
                }
                super::settle::note_not_utf8(queue, &d);
                let tag = d.delivery_tag;
                let incoming = Incoming::from_delivery(d, queue);
                let plan = routing::plan(router.routes(), &incoming);
                match self.poller.mapper.route(router, plan, incoming, tag) {
                    Ok(item) => items.push(item),
                    Err((_, f)) => {
                        self.report.lost += 1;
                        tracing::error!(queue, code = %f.code, "message lost (DELIVERY_MODE=auto-ack): {}", f.message);
                    }
                }
            }
            let report = &mut self.report;
            let (mut sent, mut failing) = (false, false);
            router
                .forward(items, self.send_deadline, |o| match &o.outcome {
                    Outcome::Sent { .. } => {
                        sent = true;
                        report.sent += 1;
                    }
                    Outcome::Dropped { .. } => report.dropped += 1,
                    Outcome::Failed(f) => {
                        failing |= sqs_failing(f);
                        report.lost += 1;
                        tracing::error!(queue, code = %f.code, "message lost (DELIVERY_MODE=auto-ack): {}", f.message);
                    }
                })
                .await;
            // As in the acked modes: a batch SQS took none of stops the
            // drain.
            if sent {
                health.set(SqsState::Answering);
            } else if failing {
                health.set(SqsState::Failing);
                return Ok(StopReason::SqsFailing);
            }
            if empty {
                return Ok(StopReason::Empty);
            }
        }
    }
}
