//! Outcomes: what became of each message.
//!
//! Every message handed to the forwarder ends with exactly one [`Outcome`],
//! returned in input order with the message's position, so that an adapter
//! can answer its event source: the Kinesis checkpoint, the HTTP response, the
//! AMQP ack or nack.

use std::fmt;

use crate::send::codes;

/// Why a message did not reach SQS, in the terms an event source acts on:
/// dead-letter it, answer the client, ask for it again later, or leave it
/// where it is until the deployment is fixed. Every failure code has its
/// cause here, in one place ([`Cause::of`]); the functions match on the
/// cause, never on codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cause {
    /// The message itself: SQS will never take it as it is (its body, an
    /// attribute, an id, a delay, a KPL aggregate that cannot be read).
    Content,
    /// Too large for the queue under the chosen oversize policy.
    TooLarge,
    /// SQS asked to slow down; a later retry can succeed.
    Throttled,
    /// Anything else a later retry can fix: the deadline, SQS unavailable, a
    /// connection, a FIFO group blocked behind an earlier message.
    Transient,
    /// The deployment, not the message: access denied, a missing queue, a
    /// KMS key, a request the configuration makes invalid. Retrying the
    /// message does not help; fixing the deployment does, so a source must
    /// keep the message (never dead-letter or skip it).
    Deployment,
}

/// Codes about a message's own content: the shared crate's checks and SQS's
/// entry errors about content. A function that finds a fault of its own in
/// a message says so with [`Failure::content`].
const CONTENT_CODES: &[&str] = &[
    codes::EMPTY_BODY,
    codes::INVALID_MESSAGE_CONTENTS,
    codes::INVALID_ATTRIBUTE_NAME,
    codes::INVALID_ATTRIBUTE_TYPE,
    codes::INVALID_ATTRIBUTE_VALUE,
    codes::TOO_MANY_ATTRIBUTES,
    codes::INVALID_GROUP_ID,
    codes::INVALID_DEDUPLICATION_ID,
    codes::MISSING_GROUP_ID,
    codes::MISSING_DEDUPLICATION_ID,
    codes::INVALID_DELAY,
    codes::INVALID_PARAMETER_VALUE,
    codes::SHAPE_FAILED,
];

/// Codes about a message's size.
const SIZE_CODES: &[&str] = &[
    codes::MESSAGE_TOO_LARGE,
    codes::MESSAGE_TOO_LONG,
    codes::BATCH_REQUEST_TOO_LONG,
];

impl Cause {
    /// The cause of a failure with this code (the `AWS.SimpleQueueService.`
    /// prefix ignored) and retryability: retryable ones are throttling or
    /// transient; permanent ones are about the content, the size, or else
    /// the deployment (an unknown permanent code is never blamed on the
    /// message).
    pub fn of(code: &str, retryable: bool) -> Cause {
        let code = crate::send::retry::bare_code(code);
        if retryable {
            if crate::send::retry::is_throttling(code) {
                Cause::Throttled
            } else {
                Cause::Transient
            }
        } else if SIZE_CODES.contains(&code) {
            Cause::TooLarge
        } else if CONTENT_CODES.contains(&code) {
            Cause::Content
        } else {
            Cause::Deployment
        }
    }

    /// Whether the message is at fault (content or size): what a source may
    /// dead-letter or skip.
    pub fn is_message_fault(self) -> bool {
        matches!(self, Cause::Content | Cause::TooLarge)
    }
}

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
    /// Why, in the terms a source acts on ([`Cause::of`] the code).
    pub cause: Cause,
}

impl Failure {
    /// A failure with this code and retryability, its cause from the code.
    pub fn new(code: impl Into<String>, message: impl Into<String>, retryable: bool) -> Self {
        let code = code.into();
        Failure {
            cause: Cause::of(&code, retryable),
            code,
            message: message.into(),
            retryable,
        }
    }

    /// A failure a retry cannot fix.
    pub fn permanent(code: impl Into<String>, message: impl Into<String>) -> Self {
        Failure::new(code, message, false)
    }

    /// A failure a later retry may fix.
    pub fn transient(code: impl Into<String>, message: impl Into<String>) -> Self {
        Failure::new(code, message, true)
    }

    /// The invocation's deadline (less the margin) came before the message
    /// was sent ([`codes::DEADLINE_EXCEEDED`], transient): what the
    /// forwarder reports for each message it did not send by then, and what
    /// a source reports for what it did not hand over.
    pub fn deadline() -> Self {
        Failure::transient(
            codes::DEADLINE_EXCEEDED,
            "the invocation's deadline came before this message could be sent",
        )
    }

    /// The forwarder could not schedule the message
    /// ([`codes::UNSCHEDULABLE`], transient): impossible by construction,
    /// reported rather than hung on; `target`: a target index the run does
    /// not have (a caller's bug).
    pub fn unschedulable(target: Option<usize>) -> Self {
        let message = match target {
            Some(t) => format!("no target queue {t} in this forwarder"),
            None => "the forwarder could not schedule this message".to_owned(),
        };
        Failure::transient(codes::UNSCHEDULABLE, message)
    }

    /// Whether the invocation's deadline (less the margin) came before the
    /// message was sent ([`codes::DEADLINE_EXCEEDED`]): a source that
    /// answers a caller says "try again" rather than "SQS is down".
    pub fn is_deadline(&self) -> bool {
        self.code == codes::DEADLINE_EXCEEDED
    }

    /// A failure of the message's own content that a function found (a
    /// record it cannot read), whatever its code: permanent,
    /// [`Cause::Content`].
    pub fn content(code: impl Into<String>, message: impl Into<String>) -> Self {
        Failure {
            code: code.into(),
            message: message.into(),
            retryable: false,
            cause: Cause::Content,
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
            s.count(&o.outcome);
        }
        s
    }

    /// Count one more outcome.
    pub fn count(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Sent { .. } => self.sent += 1,
            Outcome::Failed(f) if f.retryable => self.failed_retryable += 1,
            Outcome::Failed(_) => self.failed_permanent += 1,
            Outcome::Dropped { .. } => self.dropped += 1,
        }
    }

    /// Whether any message failed.
    pub fn any_failed(&self) -> bool {
        self.failed_retryable + self.failed_permanent > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_one_cause() {
        let cases = [
            ("RequestThrottled", true, Cause::Throttled),
            (
                "AWS.SimpleQueueService.RequestThrottled",
                true,
                Cause::Throttled,
            ),
            ("KmsThrottled", true, Cause::Throttled),
            ("InternalError", true, Cause::Transient),
            ("DeadlineExceeded", true, Cause::Transient),
            ("GroupBlocked", true, Cause::Transient),
            ("MessageTooLarge", false, Cause::TooLarge),
            (
                "AWS.SimpleQueueService.MessageTooLong",
                false,
                Cause::TooLarge,
            ),
            ("BatchRequestTooLong", false, Cause::TooLarge),
            ("EmptyBody", false, Cause::Content),
            ("InvalidParameterValue", false, Cause::Content),
            ("MissingDeduplicationId", false, Cause::Content),
            ("InvalidDelay", false, Cause::Content),
            ("AccessDenied", false, Cause::Deployment),
            (
                "AWS.SimpleQueueService.NonExistentQueue",
                false,
                Cause::Deployment,
            ),
            ("KmsAccessDenied", false, Cause::Deployment),
            ("SomethingNew", false, Cause::Deployment),
        ];
        for (code, retryable, cause) in cases {
            assert_eq!(Cause::of(code, retryable), cause, "{code}");
            assert_eq!(Failure::new(code, "m", retryable).cause, cause, "{code}");
        }
        assert!(Cause::Content.is_message_fault() && Cause::TooLarge.is_message_fault());
        assert!(!Cause::Deployment.is_message_fault() && !Cause::Transient.is_message_fault());
        let kpl = Failure::content("KplChecksumMismatch", "bad aggregate");
        assert_eq!((kpl.cause, kpl.retryable), (Cause::Content, false));
    }
}
