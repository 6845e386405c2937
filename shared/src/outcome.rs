//! Outcomes: what became of each message.
//!
//! Every message handed to the forwarder ends with exactly one [`Outcome`],
//! returned in input order with the message's position, so that an adapter
//! can answer its event source: the Kinesis checkpoint, the HTTP response, the
//! AMQP ack or nack.

use std::fmt;

/// Why a message did not reach SQS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// A machine-readable code: the SQS error code (`InvalidParameterValue`,
    /// `RequestThrottled`, ...) or one of the forwarder's own
    /// (`MessageTooLarge`, `DeadlineExceeded`, `MissingGroupId`, ...).
    pub code: String,
    /// A human-readable explanation.
    pub message: String,
    /// Whether sending the same message again later could succeed. The
    /// forwarder has already retried as often as configured; this tells the
    /// event source whether to redeliver or dead-letter the message.
    pub retryable: bool,
}

impl Failure {
    /// A failure a retry cannot fix.
    pub fn permanent(code: impl Into<String>, message: impl Into<String>) -> Self {
        Failure {
            code: code.into(),
            message: message.into(),
            retryable: false,
        }
    }

    /// A failure a later retry may fix.
    pub fn transient(code: impl Into<String>, message: impl Into<String>) -> Self {
        Failure {
            code: code.into(),
            message: message.into(),
            retryable: true,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} ({})",
            self.code,
            self.message,
            if self.retryable {
                "retryable"
            } else {
                "not retryable"
            }
        )
    }
}

/// What became of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// SQS accepted the message.
    Sent {
        /// The SQS message id.
        message_id: String,
        /// The sequence number SQS gave it (FIFO queues only).
        sequence_number: Option<String>,
    },
    /// The message did not reach SQS.
    Failed(Failure),
    /// The configured policy dropped the message (logged and counted).
    Dropped {
        /// Why, for logs and callers.
        reason: String,
    },
}

impl Outcome {
    /// Whether SQS accepted the message.
    pub fn is_sent(&self) -> bool {
        matches!(self, Outcome::Sent { .. })
    }

    /// The failure, if the message failed.
    pub fn failure(&self) -> Option<&Failure> {
        match self {
            Outcome::Failed(f) => Some(f),
            _ => None,
        }
    }
}

/// A message's outcome with the position its caller gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageOutcome<P> {
    /// The caller's position, as given.
    pub position: P,
    /// What became of the message.
    pub outcome: Outcome,
    /// How many `SendMessageBatch` calls carried it (0 if none did).
    pub attempts: u32,
}

/// Counts over a set of outcomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Messages SQS accepted.
    pub sent: usize,
    /// Messages that failed with a retryable failure.
    pub failed_retryable: usize,
    /// Messages that failed for good.
    pub failed_permanent: usize,
    /// Messages dropped by policy.
    pub dropped: usize,
}

impl Summary {
    /// Count a set of outcomes.
    pub fn of<P>(outcomes: &[MessageOutcome<P>]) -> Self {
        let mut s = Summary::default();
        for o in outcomes {
            match &o.outcome {
                Outcome::Sent { .. } => s.sent += 1,
                Outcome::Failed(f) if f.retryable => s.failed_retryable += 1,
                Outcome::Failed(_) => s.failed_permanent += 1,
                Outcome::Dropped { .. } => s.dropped += 1,
            }
        }
        s
    }

    /// Whether any message failed.
    pub fn any_failed(&self) -> bool {
        self.failed_retryable + self.failed_permanent > 0
    }
}
