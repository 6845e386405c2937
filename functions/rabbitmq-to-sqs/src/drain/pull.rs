//! Receiving in `auto-ack` mode: the broker forgets each message as it
//! hands it out, so prefetch bounds nothing. Messages are pulled one at a
//! time with `basic.get` (`no-ack`), never more than one batch ahead of
//! SQS, and whatever SQS does not take is lost (logged and counted): a
//! message the routing rules cannot shape too; one they send nowhere is
//! counted in `dropped`.

use sqs_forwarder::{Outcome, Transport};
use tokio::time::Instant;

use super::{Drain, DrainError, StopReason};
use crate::mapping::Incoming;
use crate::routing;

impl<T: Transport> Drain<'_, T> {
    /// Drain the queue with `basic.get`, a batch of at most
    /// `RABBITMQ_PREFETCH` at a time.
    pub(super) async fn pull(&mut self) -> Result<StopReason, DrainError> {
        let queue = self.queue;
        let router = self.poller.router;
        let mut taken = 0u64;
        loop {
            if taken >= self.budget {
                return Ok(StopReason::MaxMessages);
            }
            if Instant::now() >= self.stop_at {
                return Ok(StopReason::Deadline);
            }
            let window = u64::from(self.poller.settings.prefetch).min(self.budget - taken);
            let mut items = Vec::new();
            let mut empty = false;
            let mut pulled = 0u64;
            while pulled < window && Instant::now() < self.stop_at {
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
                self.report.received += 1;
                if let Some(why) = &d.fault {
                    self.report.lost += 1;
                    tracing::error!(
                        queue,
                        code = super::settle::UNREADABLE,
                        "message lost (DELIVERY_MODE=auto-ack): {why}"
                    );
                    continue;
                }
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
            router
                .forward(items, self.send_deadline, |o| match &o.outcome {
                    Outcome::Sent { .. } => report.sent += 1,
                    Outcome::Dropped { .. } => report.dropped += 1,
                    Outcome::Failed(f) => {
                        report.lost += 1;
                        tracing::error!(queue, code = %f.code, "message lost (DELIVERY_MODE=auto-ack): {}", f.message);
                    }
                })
                .await;
            if empty {
                return Ok(StopReason::Empty);
            }
        }
    }
}
