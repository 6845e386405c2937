//! What a poll did: per queue, the messages taken and what became of them,
//! and why its drain ended. This is the invocation's answer to a scheduled
//! event (serialized as JSON) and what its log lines and errors count from.

use serde::Serialize;

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
    /// SQS is not taking messages: it did not answer before anything was
    /// taken, or did not take a message of the last batch (after every
    /// retry, or refused for good); or every message the prefetch allows
    /// is held behind a held one of its FIFO group.
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
    /// Messages dropped by `OVERSIZE_POLICY=drop` or sent nowhere by the
    /// routing rules (acked).
    pub dropped: u64,
    /// Messages rejected without requeue (to the dead-letter exchange).
    pub rejected: u64,
    /// Messages given back to the queue (nack with requeue).
    pub requeued: u64,
    /// Messages lost in `auto-ack` mode because SQS did not take them.
    pub lost: u64,
    /// Messages the broker had delivered (prefetched) that the drain did
    /// not take, given back to the queue (nack with requeue) when it
    /// stopped. Not counted in `received`.
    pub untaken: u64,
    /// The queue's ready messages after its drain, when the broker said
    /// (the `QueueBacklog` metric).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backlog: Option<u32>,
    /// Why the drain ended.
    pub stop: StopReason,
    /// The broker error that ended it, if any (never holds a password).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl QueueReport {
    pub(crate) fn new(queue: &str) -> Self {
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
}
