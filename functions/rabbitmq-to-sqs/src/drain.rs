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
//! * SQS did not take a message of the last batch for a reason of its own
//!   (after every retry, or refused for good: access denied, a missing
//!   queue), or did not answer before anything was taken
//!   ([`health`]): no queue after it is drained this tick either;
//! * the prefetch window is full of messages held behind a held one of
//!   their FIFO group.
//!
//! Messages SQS did not take but might later are held unacknowledged until
//! the drain of their queue ends, and then given back (after the consumer
//! is cancelled, so that each costs one delivery attempt on a quorum
//! queue), so one invocation never takes the same failing message twice.
//! On a FIFO target, later messages of a held message's group to that
//! target are held too, so a group's order survives on each target.
//!
//! Every wait on the broker ends by the invocation's deadline less half of
//! `DEADLINE_MARGIN_MS` ([`crate::amqp::Connection::set_deadline`]): a
//! stalled link ends the tick with an error, in time to answer. The
//! deliveries held at once are bounded by count (the prefetch) and by bytes
//! (`RABBITMQ_MAX_BATCH_BYTES`). After each queue's drain its ready count
//! is reported (`QueueBacklog`).
//!
//! With routing rules (`ROUTES`) each delivery goes to the target its rules
//! name; one the rules send nowhere is done (acked, counted in `dropped`),
//! and one they cannot shape is a content fault (rejected, to the
//! dead-letter exchange), as any message SQS would never take.
//!
//! In `auto-ack` mode the broker forgets each message as it hands it out, so
//! prefetch cannot bound anything: messages are pulled one at a time with
//! `basic.get` (`no-ack`), never more than will be forwarded, and whatever
//! SQS does not take is lost (logged and counted).
//!
//! One [`Drain`] per queue owns what its drain keeps: the channel, the
//! deliveries held, the FIFO groups blocked and the queue's report. Its
//! steps have files of their own: receiving under prefetch
//! (`drain/consume.rs`), forwarding a batch and settling each delivery
//! (`drain/settle.rs`), pulling in `auto-ack` mode (`drain/pull.rs`), and
//! the reports (`drain/report.rs`). A drain takes from the function only
//! what it uses ([`Poller`]).

mod consume;
pub mod health;
mod pull;
mod report;
mod settle;

use std::collections::BTreeSet;

use crate::amqp::{self, Channel, Connection};
use sqs_forwarder::route::Router;
use sqs_forwarder::{Failure, Transport};
use tokio::time::Instant;

use self::health::SqsHealth;
pub use self::report::{PollReport, QueueReport, StopReason};
use self::settle::BlockedGroups;
use crate::broker::Secrets;
use crate::mapping::Mapper;
use crate::settings::{DeliveryMode, Settings};

/// What a poll takes from the function: where messages go, how they are
/// mapped, the limits, and the passwords to keep out of errors.
pub struct Poller<'a, T> {
    /// The target queues: the forwarder to SQS, or the routing rules
    /// (`ROUTES`) and their targets' forwarders.
    pub router: &'a Router<T>,
    /// AMQP message to SQS message.
    pub mapper: &'a Mapper,
    /// The delivery mode, prefetch, idle wait and message budget.
    pub settings: &'a Settings,
    /// Passwords to scrub from broker errors.
    pub secrets: &'a Secrets,
    /// Whether SQS takes messages, as the last tick found it.
    pub health: &'a SqsHealth,
}

impl<T> Clone for Poller<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Poller<'_, T> {}

/// A failure that ends a queue's drain (already scrubbed of secrets).
struct DrainError(String);

/// Whether a permanent failure is the message's own fault (so it must go to
/// the dead-letter exchange) rather than the queue's or the credentials'
/// (so it must stay in RabbitMQ until that is fixed): its [`Cause`].
///
/// [`Cause`]: sqs_forwarder::Cause
pub fn message_fault(failure: &Failure) -> bool {
    !failure.retryable && failure.cause.is_message_fault()
}

impl<'a, T: Transport> Poller<'a, T> {
    /// Drain every queue in `queues` on `conn`, in order, then close the
    /// connection. Stops taking messages at `stop_at`; sends stop at
    /// `send_deadline`. A queue not reached (budget or time spent, the
    /// connection lost) is reported `skipped`.
    pub async fn poll(
        self,
        conn: &Connection,
        queues: &[String],
        stop_at: Instant,
        send_deadline: Option<Instant>,
    ) -> PollReport {
        let mut report = PollReport::default();
        let mut budget = self.settings.max_messages;
        let mut lost = false;
        let mut sqs_failing = false;
        for queue in queues {
            if lost {
                report.queues.push(QueueReport {
                    stop: StopReason::Skipped,
                    ..QueueReport::new(queue)
                });
                continue;
            }
            let r = if budget == 0 || Instant::now() >= stop_at {
                // Not drained, but its backlog is read.
                Drain::<T>::backlog_only(conn, queue, StopReason::Skipped).await
            } else if sqs_failing {
                // Only its backlog is read: nothing is taken.
                Drain::<T>::backlog_only(conn, queue, StopReason::SqsFailing).await
            } else {
                Drain::run(self, conn, queue, budget, stop_at, send_deadline).await
            };
            budget = budget.saturating_sub(r.received);
            lost = !conn.connected();
            sqs_failing |= r.stop == StopReason::SqsFailing;
            if let Some(b) = r.backlog {
                metrics::histogram!(crate::metric::QUEUE_BACKLOG, "Queue" => r.queue.clone())
                    .record(f64::from(b));
            }
            tracing::info!(
                queue = %r.queue,
                received = r.received,
                sent = r.sent,
                dropped = r.dropped,
                rejected = r.rejected,
                requeued = r.requeued,
                lost = r.lost,
                untaken = r.untaken,
                backlog = r.backlog.map_or(-1, i64::from),
                stop = r.stop.name(),
                error = r.error.as_deref().unwrap_or(""),
                "queue drained"
            );
            report.queues.push(r);
        }
        let backlogs: Vec<u32> = report.queues.iter().filter_map(|q| q.backlog).collect();
        if !backlogs.is_empty() {
            let total: u64 = backlogs.iter().map(|b| u64::from(*b)).sum();
            metrics::histogram!(crate::metric::QUEUE_BACKLOG).record(total as f64);
        }
        if conn.connected()
            && let Err(e) = conn.close().await
        {
            tracing::debug!(error = %self.secrets.scrub(&e.to_string()), "closing the connection");
        }
        report
    }

    fn describe(&self, doing: &str, e: &amqp::Error) -> DrainError {
        DrainError(format!("{doing}: {}", self.secrets.scrub(&e.to_string())))
    }
}

/// The drain of one queue, in any delivery mode.
struct Drain<'a, T> {
    poller: Poller<'a, T>,
    queue: &'a str,
    channel: Channel,
    /// Delivery tags kept unacknowledged until the drain ends, then
    /// requeued: SQS did not take them (or an earlier message of their FIFO
    /// group), and one invocation must not take them again.
    held: BTreeSet<u64>,
    /// FIFO groups with a held message, per target: their later messages
    /// to that target are held too.
    blocked_groups: BlockedGroups,
    /// Targets (by index) SQS failed a message of in this drain.
    failing_targets: BTreeSet<usize>,
    report: QueueReport,
    /// Most messages this drain may take.
    budget: u64,
    stop_at: Instant,
    send_deadline: Option<Instant>,
}

impl<'a, T: Transport> Drain<'a, T> {
    /// Open a channel, drain `queue` (by consumer under prefetch, or by
    /// `basic.get` in `auto-ack` mode), close the channel; what happened.
    async fn run(
        poller: Poller<'a, T>,
        conn: &Connection,
        queue: &'a str,
        budget: u64,
        stop_at: Instant,
        send_deadline: Option<Instant>,
    ) -> QueueReport {
        let channel = match conn.create_channel().await {
            Ok(c) => c,
            Err(e) => {
                return QueueReport {
                    stop: StopReason::Error,
                    error: Some(poller.describe("opening a channel", &e).0),
                    ..QueueReport::new(queue)
                };
            }
        };
        let mut drain = Drain {
            poller,
            queue,
            channel,
            held: BTreeSet::new(),
            blocked_groups: BlockedGroups::default(),
            failing_targets: BTreeSet::new(),
            report: QueueReport::new(queue),
            budget,
            stop_at,
            send_deadline,
        };
        let result = match poller.settings.mode {
            DeliveryMode::AutoAck => drain.pull().await,
            _ => drain.consume().await,
        };
        match result {
            Ok(stop) => drain.report.stop = stop,
            Err(DrainError(e)) => {
                drain.report.stop = StopReason::Error;
                drain.report.error = Some(e);
            }
        }
        drain.final_backlog().await;
        // Closing the channel hands back to the queue whatever the broker
        // had prefetched for this consumer and nobody took.
        if drain.channel.connected()
            && let Err(e) = drain.channel.close().await
        {
            tracing::debug!(queue, error = %poller.secrets.scrub(&e.to_string()), "closing the channel");
        }
        drain.report
    }

    fn describe(&self, doing: &str, e: &amqp::Error) -> DrainError {
        self.poller.describe(doing, e)
    }

    /// The queue's ready count after its drain, unless the last count
    /// still holds (nothing taken since, or the queue found empty) or the
    /// channel is gone.
    async fn final_backlog(&mut self) {
        let counted = self.report.received == 0 || self.report.stop == StopReason::Empty;
        if self.report.backlog.is_some() && counted {
            return;
        }
        if !self.channel.connected() || self.report.stop == StopReason::Cancelled {
            self.report.backlog = None;
            return;
        }
        if self.ready_count().await.is_err() {
            self.report.backlog = None;
        }
    }

    /// A queue not drained (SQS is failing this tick, or the budget or the
    /// time ran out on an earlier queue): its backlog only (one passive
    /// declare on a channel of its own).
    async fn backlog_only(conn: &Connection, queue: &str, stop: StopReason) -> QueueReport {
        let mut report = QueueReport {
            stop,
            ..QueueReport::new(queue)
        };
        if let Ok(channel) = conn.create_channel().await {
            report.backlog = channel.ready_count(queue).await.ok();
            if channel.connected() {
                let _ = channel.close().await;
            }
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
