//! Whether SQS is taking messages, as the function last found it, kept
//! between ticks: the drain takes no message from RabbitMQ it knows it
//! cannot send.
//!
//! On a quorum queue every return of a message (nack with requeue, or a
//! channel closed with it unacknowledged) counts a delivery attempt, and a
//! `delivery-limit` dead-letters (or, without a dead-letter exchange,
//! drops) a message past it. So a message taken while SQS is down spends an
//! attempt for nothing, and an outage of more ticks than the limit would
//! lose it. Hence:
//!
//! * a tick that does not know SQS is answering (the first after a cold
//!   start, or any after a failing one) first asks it, without sending
//!   anything ([`Router::probe`]: `GetQueueAttributes` of every target);
//!   no answer, and no message is taken this tick;
//! * after a failing tick, SQS answering the question is not enough (it may
//!   answer and still refuse sends): one message is taken alone
//!   (`basic.get`) and sent first; the drain goes on only when SQS took it,
//!   and tries the next alone only while each failure is on a target that
//!   had not failed one (with routing rules, another target may take it):
//!   at most one message per target a tick;
//! * the drain of a queue stops at the first batch SQS took none of, for
//!   reasons of its own (not the messages' faults, not the deadline), and
//!   every later queue of the tick is left alone (their backlog is still
//!   read). A batch SQS took part of goes on, the rest held: another
//!   target failing, or some messages throttled past every retry.
//!
//! So an outage costs the messages of the first batch taken one attempt
//! (the tick it began in), then, while SQS answers questions but refuses
//! sends, one attempt a tick for one message per target; and nothing
//! while SQS does not answer at all.

use std::sync::Mutex;

use sqs_forwarder::Failure;

/// What the function knows of SQS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SqsState {
    /// Nothing yet (a cold start): ask before taking anything.
    #[default]
    Unknown,
    /// It took the last messages sent.
    Answering,
    /// It did not take the last ones: ask, then try one message.
    Failing,
}

/// [`SqsState`], shared by the ticks of one process.
#[derive(Debug, Default)]
pub struct SqsHealth(Mutex<SqsState>);

impl SqsHealth {
    /// What is known now.
    pub fn state(&self) -> SqsState {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Record what a send or a probe found.
    pub fn set(&self, state: SqsState) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = state;
    }
}

/// Whether `failure` (a message's, after the shared crate's retries) says
/// SQS is not taking messages: not the message's own fault, and not the
/// invocation's deadline.
pub fn sqs_failing(failure: &Failure) -> bool {
    !super::message_fault(failure) && !failure.is_deadline()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sqs_own_failures_count() {
        assert!(sqs_failing(&Failure::transient("InternalError", "x")));
        assert!(sqs_failing(&Failure::transient("ConnectionError", "x")));
        assert!(sqs_failing(&Failure::permanent("AccessDenied", "x")));
        assert!(!sqs_failing(&Failure::permanent("EmptyBody", "x")));
        assert!(!sqs_failing(&Failure::transient("DeadlineExceeded", "x")));
    }

    #[test]
    fn the_state_is_kept_until_changed() {
        let h = SqsHealth::default();
        assert_eq!(h.state(), SqsState::Unknown);
        h.set(SqsState::Failing);
        assert_eq!(h.state(), SqsState::Failing);
        h.set(SqsState::Answering);
        assert_eq!(h.state(), SqsState::Answering);
    }
}
