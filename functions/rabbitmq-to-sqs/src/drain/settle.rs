//! One batch in the acked modes: map each delivery (refusing what can never
//! be sent, holding what a blocked FIFO group must not overtake), send the
//! rest, turn each outcome into an [`Action`], and settle the batch with the
//! fewest AMQP calls ([`crate::acks`]).

use std::collections::BTreeMap;

use lapin::message::Delivery;
use sqs_forwarder::{Failure, Message, Outcome, Transport};

use super::{Drain, DrainError, StopReason, message_fault};
use crate::acks::{Action, execute, plan};
use crate::mapping::Incoming;

/// A batch mapped: the messages to send, the actions already decided
/// (rejected, or held behind a blocked group), and what the outcomes need
/// to be explained and acted on.
#[derive(Default)]
struct Mapped {
    messages: Vec<Message<u64>>,
    decisions: Vec<(u64, Action)>,
    /// FIFO group of each message sent, by delivery tag.
    groups: BTreeMap<u64, String>,
    /// AMQP message id of each delivery that has one, for the logs.
    message_ids: BTreeMap<u64, String>,
}

impl Mapped {
    fn message_id(&self, tag: u64) -> &str {
        self.message_ids.get(&tag).map(String::as_str).unwrap_or("")
    }
}

impl<T: Transport> Drain<'_, T> {
    /// Forward `batch` and settle it. `Some` when the drain must stop
    /// (SQS refused a call for a reason no retry fixes).
    pub(super) async fn forward(
        &mut self,
        batch: Vec<Delivery>,
    ) -> Result<Option<StopReason>, DrainError> {
        let mut mapped = self.map(&batch);
        drop(batch);
        let messages = std::mem::take(&mut mapped.messages);
        let outcomes = self
            .poller
            .forwarder
            .send_all(messages, self.send_deadline)
            .await;
        let mut stop = None;
        for o in outcomes {
            let action = self.action(o.position, &o.outcome, &mapped, &mut stop);
            mapped.decisions.push((o.position, action));
        }
        self.report.rejected += mapped
            .decisions
            .iter()
            .filter(|(_, a)| *a == Action::Reject)
            .count() as u64;
        self.settle(mapped.decisions).await?;
        Ok(stop)
    }

    /// Each delivery as a message to send, or the action decided for it
    /// now: rejected when it can never be sent, held when an earlier
    /// message of its FIFO group is held.
    fn map(&self, batch: &[Delivery]) -> Mapped {
        let fifo = self.poller.mapper.fifo();
        let mut mapped = Mapped {
            messages: Vec::with_capacity(batch.len()),
            decisions: Vec::with_capacity(batch.len()),
            ..Mapped::default()
        };
        for d in batch {
            let incoming = Incoming::from_delivery(d, self.queue);
            if let Some(id) = &incoming.properties.message_id {
                mapped.message_ids.insert(d.delivery_tag, id.clone());
            }
            match self.poller.mapper.message(incoming, d.delivery_tag) {
                Ok(m) => match &m.group_id {
                    Some(g) if fifo && self.blocked_groups.contains(g) => {
                        mapped.decisions.push((d.delivery_tag, Action::Hold));
                    }
                    _ => {
                        if let Some(g) = &m.group_id {
                            mapped.groups.insert(d.delivery_tag, g.clone());
                        }
                        mapped.messages.push(m);
                    }
                },
                Err((tag, failure)) => {
                    self.rejecting(tag, &mapped, &failure);
                    mapped.decisions.push((tag, Action::Reject));
                }
            }
        }
        mapped
    }

    /// Say that the delivery `tag` is rejected, and why: the message itself
    /// cannot be sent.
    fn rejecting(&self, tag: u64, mapped: &Mapped, failure: &Failure) {
        tracing::warn!(
            queue = self.queue,
            delivery_tag = tag,
            message_id = mapped.message_id(tag),
            code = %failure.code,
            "rejecting the message (to the dead-letter exchange, if the queue has one): {}",
            failure.message
        );
    }

    /// What becomes of the delivery `tag` after this outcome. A failure no
    /// retry fixes that is not the message's fault sets `stop`; a held FIFO
    /// message blocks its group for the rest of the drain.
    fn action(
        &mut self,
        tag: u64,
        outcome: &Outcome,
        mapped: &Mapped,
        stop: &mut Option<StopReason>,
    ) -> Action {
        match outcome {
            Outcome::Sent { .. } => {
                self.report.sent += 1;
                Action::Ack
            }
            Outcome::Dropped { .. } => {
                self.report.dropped += 1;
                Action::Ack
            }
            Outcome::Failed(f) if message_fault(f) => {
                self.rejecting(tag, mapped, f);
                Action::Reject
            }
            Outcome::Failed(f) => {
                if !f.retryable && stop.is_none() {
                    tracing::error!(
                        queue = self.queue,
                        code = %f.code,
                        "SQS refused the call for a reason no retry fixes; the messages stay in RabbitMQ and this queue's drain stops: {}",
                        f.message
                    );
                    *stop = Some(StopReason::SqsFailing);
                }
                if self.poller.mapper.fifo()
                    && let Some(g) = mapped.groups.get(&tag)
                {
                    self.blocked_groups.insert(g.clone());
                }
                Action::Hold
            }
        }
    }

    /// Make the AMQP calls for `decisions`, the deliveries held earlier
    /// counted as still unsettled; then remember the newly held ones.
    async fn settle(&mut self, decisions: Vec<(u64, Action)>) -> Result<(), DrainError> {
        let mut outstanding: Vec<(u64, Action)> =
            self.held.iter().map(|t| (*t, Action::Hold)).collect();
        outstanding.extend(decisions.iter().copied());
        execute(&self.channel, &plan(&outstanding))
            .await
            .map_err(|e| {
                if self.channel.status().connected() {
                    self.describe("acknowledging", &e)
                } else {
                    self.describe(
                        "acknowledging: the connection or channel was closed (by the broker or the network)",
                        &e,
                    )
                }
            })?;
        self.held.extend(
            decisions
                .into_iter()
                .filter(|(_, a)| *a == Action::Hold)
                .map(|(tag, _)| tag),
        );
        Ok(())
    }
}
