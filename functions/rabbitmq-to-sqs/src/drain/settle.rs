//! One batch in the acked modes: map and route each delivery (refusing
//! what can never be sent, holding what a blocked FIFO group must not
//! overtake on its target), send the rest, turn each outcome into an
//! [`Action`], and settle the batch with the fewest AMQP calls
//! ([`crate::acks`]). A delivery the routing rules send nowhere comes back
//! with its outcome like any other: dropped (acked) or a shape fault
//! (rejected).

use std::collections::{BTreeMap, HashSet};

use crate::amqp::Delivery;
use sqs_forwarder::{Failure, MessageOutcome, Outcome, Routed, Transport};

use super::health::{SqsState, sqs_failing};
use super::{Drain, DrainError, StopReason, message_fault};
use crate::acks::{Action, execute, plan};
use crate::mapping::Incoming;
use crate::routing;

/// A batch mapped: what to hand the router, the actions already decided
/// (rejected, or held behind a blocked group), and what the outcomes need
/// to be explained and acted on.
#[derive(Default)]
struct Mapped {
    items: Vec<Routed<u64>>,
    decisions: Vec<(u64, Action)>,
    /// Target and FIFO group of each message sent to a FIFO target, by
    /// delivery tag.
    groups: BTreeMap<u64, (usize, String)>,
    /// The target of each message sent, by delivery tag (ascending).
    targets: Vec<(u64, usize)>,
    /// AMQP message id of each delivery that has one, for the logs.
    message_ids: BTreeMap<u64, String>,
}

impl Mapped {
    fn message_id(&self, tag: u64) -> &str {
        self.message_ids.get(&tag).map(String::as_str).unwrap_or("")
    }
}

/// A batch sent: what becomes of each delivery, not yet told the broker,
/// and whether the drain must stop.
pub(super) struct Sent {
    pub(super) decisions: Vec<(u64, Action)>,
    pub(super) stop: Option<StopReason>,
}

/// The failure code of a message the AMQP client could not read whole
/// ([`crate::amqp::Delivery::fault`]).
pub(super) const UNREADABLE: &str = "UnreadableMessage";

/// FIFO groups with a held message, per target (index: the target's):
/// their later messages to that target are held too.
#[derive(Default)]
pub(super) struct BlockedGroups(Vec<HashSet<String>>);

impl BlockedGroups {
    pub(super) fn contains(&self, target: usize, group: &str) -> bool {
        self.0.get(target).is_some_and(|g| g.contains(group))
    }

    fn insert(&mut self, target: usize, group: String) {
        if self.0.len() <= target {
            self.0.resize_with(target + 1, HashSet::new);
        }
        if let Some(groups) = self.0.get_mut(target) {
            groups.insert(group);
        }
    }
}

/// Say (and count) that `d` has short strings that are not UTF-8: which
/// ones, never their values.
pub(super) fn note_not_utf8(queue: &str, d: &Delivery) {
    if d.raw.is_empty() {
        return;
    }
    let mut fields: Vec<&str> = d.raw.iter().map(|r| r.field.name()).collect();
    fields.dedup();
    tracing::warn!(
        queue,
        delivery_tag = d.delivery_tag,
        fields = %fields.join(","),
        "the message has short strings that are not UTF-8; it is forwarded with them as octets (attributes as Binary, FIFO ids hashed from the octets, `?` where the routing rules or a header name read them as text)"
    );
    metrics::counter!(crate::metric::NON_UTF8_MESSAGES).increment(1);
}

impl<T: Transport> Drain<'_, T> {
    /// Forward `batch` and settle it. `Some` when the drain must stop: SQS
    /// took none of the batch, failing messages for reasons of its own
    /// (after every retry, or refused for good); [`super::health`] then
    /// says SQS is failing.
    pub(super) async fn forward(
        &mut self,
        batch: Vec<Delivery>,
    ) -> Result<Option<StopReason>, DrainError> {
        let sent = self.send(batch).await;
        self.settle(sent.decisions).await?;
        Ok(sent.stop)
    }

    /// Forward `batch` and decide what becomes of each delivery, without
    /// telling the broker yet ([`Drain::settle`]): when this is the drain's
    /// last batch, the consumer is cancelled first, so that the window its
    /// acks free is not filled with deliveries nobody takes.
    pub(super) async fn send(&mut self, batch: Vec<Delivery>) -> Sent {
        let mut mapped = self.map(batch);
        let items = std::mem::take(&mut mapped.items);
        let mut outcomes: Vec<MessageOutcome<u64>> = Vec::with_capacity(items.len());
        self.poller
            .router
            .forward(items, self.send_deadline, |o| outcomes.push(o))
            .await;
        let mut failing = false;
        let mut sent = false;
        for o in outcomes {
            sent |= matches!(o.outcome, Outcome::Sent { .. });
            let action = self.action(o.position, &o.outcome, &mapped, &mut failing);
            mapped.decisions.push((o.position, action));
        }
        // What SQS did with this batch is what the next tick knows of it.
        // A batch SQS took none of, for reasons of its own, stops the
        // drain: no more is taken that SQS would not take either. One it
        // took some of goes on (another target failing, or some messages
        // throttled past every retry), the others held.
        let stop = (failing && !sent).then_some(StopReason::SqsFailing);
        if sent {
            self.poller.health.set(SqsState::Answering);
        } else if failing {
            self.poller.health.set(SqsState::Failing);
        }
        self.report.rejected += mapped
            .decisions
            .iter()
            .filter(|(_, a)| *a == Action::Reject)
            .count() as u64;
        Sent {
            decisions: mapped.decisions,
            stop,
        }
    }

    /// Each delivery as a message routed to its target (or settled by the
    /// routing rules), or the action decided for it now: rejected when it
    /// can never be sent, held when an earlier message of its FIFO group
    /// is held on the same target.
    fn map(&self, batch: Vec<Delivery>) -> Mapped {
        let router = self.poller.router;
        let routes = router.routes();
        let mut mapped = Mapped {
            items: Vec::with_capacity(batch.len()),
            decisions: Vec::with_capacity(batch.len()),
            targets: Vec::with_capacity(batch.len()),
            ..Mapped::default()
        };
        for d in batch {
            let tag = d.delivery_tag;
            if let Some(why) = &d.fault {
                if let Some(id) = d.properties.message_id() {
                    mapped.message_ids.insert(tag, id.to_string());
                }
                let failure = Failure::permanent(UNREADABLE, why.clone());
                self.rejecting(tag, &mapped, &failure);
                metrics::counter!(crate::metric::UNREADABLE_MESSAGES).increment(1);
                mapped.decisions.push((tag, Action::Reject));
                continue;
            }
            note_not_utf8(self.queue, &d);
            let incoming = Incoming::from_delivery(d, self.queue);
            if let Some(id) = &incoming.properties.message_id {
                mapped.message_ids.insert(tag, id.clone());
            }
            let plan = routing::plan(routes, &incoming);
            match self.poller.mapper.route(router, plan, incoming, tag) {
                Ok(Routed::To(target, m)) => {
                    mapped.targets.push((tag, target));
                    let fifo = router.targets().get(target).is_some_and(|f| f.rules().fifo);
                    match &m.group_id {
                        Some(g) if fifo && self.blocked_groups.contains(target, g) => {
                            mapped.decisions.push((tag, Action::Hold));
                        }
                        Some(g) if fifo => {
                            mapped.groups.insert(tag, (target, g.clone()));
                            mapped.items.push(Routed::To(target, m));
                        }
                        _ => mapped.items.push(Routed::To(target, m)),
                    }
                }
                Ok(settled) => mapped.items.push(settled),
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

    /// What becomes of the delivery `tag` after this outcome. A failure of
    /// SQS's own (not the message's, not the deadline) sets `failing` and
    /// marks its target as failing in this drain; a held FIFO message
    /// blocks its group for the rest of the drain.
    fn action(
        &mut self,
        tag: u64,
        outcome: &Outcome,
        mapped: &Mapped,
        failing: &mut bool,
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
                let target = mapped
                    .targets
                    .binary_search_by_key(&tag, |(t, _)| *t)
                    .ok()
                    .and_then(|i| mapped.targets.get(i))
                    .map(|(_, target)| *target);
                if sqs_failing(f)
                    && let Some(target) = target
                {
                    self.failing_targets.insert(target);
                }
                if sqs_failing(f) && !*failing {
                    if f.retryable {
                        tracing::warn!(
                            queue = self.queue,
                            code = %f.code,
                            "SQS did not take a message after every retry; it stays in RabbitMQ (requeued when this queue's drain ends): {}",
                            f.message
                        );
                    } else {
                        tracing::error!(
                            queue = self.queue,
                            code = %f.code,
                            "SQS refused the call for a reason no retry fixes; the message stays in RabbitMQ (requeued when this queue's drain ends): {}",
                            f.message
                        );
                    }
                    *failing = true;
                }
                if let Some((target, g)) = mapped.groups.get(&tag) {
                    self.blocked_groups.insert(*target, g.clone());
                }
                Action::Hold
            }
        }
    }

    /// Make the AMQP calls for `decisions`, the deliveries held earlier
    /// counted as still unsettled; then remember the newly held ones.
    pub(super) async fn settle(&mut self, decisions: Vec<(u64, Action)>) -> Result<(), DrainError> {
        let mut outstanding: Vec<(u64, Action)> =
            self.held.iter().map(|t| (*t, Action::Hold)).collect();
        outstanding.extend(decisions.iter().copied());
        execute(&self.channel, &plan(&outstanding))
            .await
            .map_err(|e| {
                if self.channel.connected() {
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
