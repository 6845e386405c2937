//! Replaying an S3 event: the original event from the invocation record goes
//! through s3-to-sqs's own [`Handler`], as Lambda's retry would have sent it
//! (notification or lines mode, `EVENT_NAMES`, FIFO ids: the function's
//! settings, read from the same variables). A chain's continuation event
//! resumes its object from the step's offset.

use s3_to_sqs::event::parse;
use s3_to_sqs::{Handler, HandlerError, Incoming};
use sqs_forwarder::Transport;

use crate::entry::S3Event;

/// What replaying one S3 event did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventOutcome {
    /// Every record was forwarded (or left out by `EVENT_NAMES`, or is about
    /// an object overwritten since, as the function itself would answer).
    Sent {
        /// Records in the event.
        records: usize,
        /// Messages SQS accepted.
        messages: u64,
    },
    /// Some records did not reach SQS; the function's own error says which.
    Failed(String),
    /// s3-to-sqs cannot read the event.
    Unreadable(String),
}

/// Forward `event` with s3-to-sqs.
/// A continuation event (a failed step of a chain reading one object over
/// several invocations) is resumed from its offset to the object's end by
/// the function's own code ([`Handler::resume`]).
pub async fn replay<T: Transport>(handler: &Handler<T>, event: &S3Event) -> EventOutcome {
    let answer = match parse(event.payload.clone()) {
        Ok(Incoming::Continuation(c)) => handler.resume(*c).await,
        _ => handler.handle(event.payload.clone(), None).await,
    };
    match answer {
        Ok(report) => EventOutcome::Sent {
            records: report.records,
            messages: report.messages_sent,
        },
        // A Distributed Map batch (invoked by Step Functions, never through
        // the on-failure queue): its items' error, should one be replayed.
        Err(e @ (HandlerError::NotForwarded { .. } | HandlerError::Items(_))) => {
            EventOutcome::Failed(e.to_string())
        }
        Err(e @ HandlerError::Event(_)) => EventOutcome::Unreadable(e.to_string()),
    }
}
