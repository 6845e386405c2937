//! The one call the forwarder makes, `SendMessageBatch`, behind a trait:
//! what goes in ([`BatchItem`]) and what comes back ([`EntryResult`],
//! [`CallError`], classified by [`crate::send::retry`]). The trait lets
//! tests and benchmarks put a fake in place of the real clients
//! ([`crate::call::SqsTransport`]) without touching the batching and retry
//! logic.

use std::future::Future;
use std::pin::Pin;

use crate::message::encode::SharedEntry;
use crate::send::outcome::Failure;
use crate::send::retry::entry_retryable;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One entry of a batch: the request-unique id and the entry.
#[derive(Debug, Clone)]
pub struct BatchItem {
    /// Unique within the request; `[A-Za-z0-9_-]{1,80}`.
    pub id: String,
    /// The entry.
    pub entry: SharedEntry,
}

/// What SQS said about one entry of a call that succeeded as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryResult {
    /// Listed under `Successful`.
    Sent {
        /// SQS message id.
        message_id: String,
        /// FIFO sequence number.
        sequence_number: Option<String>,
    },
    /// Listed under `Failed`.
    Failed {
        /// SQS error code.
        code: String,
        /// SQS's message, if any.
        message: String,
        /// SQS's `SenderFault` flag.
        sender_fault: bool,
    },
}

impl EntryResult {
    /// The failure this entry result stands for, classified.
    pub fn failure(code: &str, message: &str, sender_fault: bool) -> Failure {
        Failure::new(
            code,
            if message.is_empty() {
                format!("SQS rejected the entry ({code})")
            } else {
                message.to_owned()
            },
            entry_retryable(code, sender_fault),
        )
    }
}

/// Why a whole call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// `BatchRequestTooLong`: the forwarder splits the batch.
    TooLong(String),
    /// Any other failure, classified.
    Failed(Failure),
}

/// Sends one batch. Results are keyed by the items' ids; an id missing from
/// the answer is treated as a retryable failure.
pub trait Transport: Send + Sync {
    /// Send the items in one `SendMessageBatch` call.
    fn send_batch<'a>(
        &'a self,
        items: &'a [BatchItem],
    ) -> BoxFuture<'a, Result<Vec<(String, EntryResult)>, CallError>>;

    /// Ask SQS about the queue without sending anything (one
    /// `GetQueueAttributes` call, no retry): for a caller that must not
    /// take messages from its source while SQS cannot take them. `Err`
    /// with the call's failure, classified as a send's would be. The
    /// default, for transports with nothing to ask, answers `Ok`.
    fn probe(&self) -> BoxFuture<'_, Result<(), Failure>> {
        Box::pin(async { Ok(()) })
    }
}
