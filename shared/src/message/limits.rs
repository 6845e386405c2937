//! The SQS limits the forwarder packs against, and the size SQS gives a message.
//!
//! Sources (see `docs/FACTS.md`): the `SendMessageBatch` and `CreateQueue` API
//! references and the SQS guide's section on message attributes. A message's
//! size is its body's UTF-8 bytes plus, for every attribute, the bytes of its
//! name, its data type and its value. A request may hold at most ten entries
//! whose sizes add up to at most 1 MiB, whatever the queue's own
//! `MaximumMessageSize` is.

use crate::message::Attribute;

/// Most entries in one `SendMessageBatch` call.
pub const MAX_BATCH_ENTRIES: usize = 10;
/// Most bytes (sum of message sizes) in one `SendMessageBatch` call.
pub const MAX_REQUEST_BYTES: usize = 1_048_576;
/// Largest `MaximumMessageSize` a queue can have (1 MiB since August 2025).
pub const MAX_MESSAGE_BYTES: usize = 1_048_576;
/// Smallest `MaximumMessageSize` a queue can have.
pub const MIN_MESSAGE_BYTES: usize = 1_024;
/// Most message attributes on one message.
pub const MAX_ATTRIBUTES: usize = 10;
/// Longest message group id and deduplication id.
pub const MAX_ID_CHARS: usize = 128;
/// Largest per-message delay, in seconds.
pub const MAX_DELAY_SECONDS: i32 = 900;

/// The size SQS counts for a message with this body and these attributes.
pub fn message_size(body: &str, attributes: &[Attribute]) -> usize {
    body.len() + attributes.iter().map(Attribute::size).sum::<usize>()
}

/// The limits one forwarder packs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Entries per call, 1..=10.
    pub max_entries: usize,
    /// Bytes per message: the queue's limit, possibly lowered by configuration.
    pub max_message_bytes: usize,
    /// Bytes per call (sum of the entries' sizes), at most 1 MiB.
    pub max_request_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: MAX_BATCH_ENTRIES,
            max_message_bytes: MAX_MESSAGE_BYTES,
            max_request_bytes: MAX_REQUEST_BYTES,
        }
    }
}

impl Limits {
    /// The largest message that can be sent at all: it must fit the queue and
    /// a request on its own.
    pub fn largest_message(&self) -> usize {
        self.max_message_bytes.min(self.max_request_bytes)
    }
}
