//! What the window holds: one [`Slot`] per message read and not yet settled,
//! the calls and puts that come back to the loop ([`Done`]), the window's
//! running totals ([`Held`]), and the payloads waiting for their put
//! ([`Put`]).

use std::sync::Arc;

use tokio::time::Instant;

use crate::call::transport::{CallError, EntryResult};
use crate::message::encode::Entry;
use crate::send::outcome::Failure;

/// A message read and not yet settled.
pub(super) struct Slot<P> {
    /// The target queue it goes to (an index into the run's forwarders).
    pub target: usize,
    pub entry: Arc<Entry>,
    pub position: P,
    /// Attempts that count against the retry budget (a split after
    /// `BatchRequestTooLong` does not).
    pub attempts: u32,
    /// Calls that carried the message, whatever their answer.
    pub calls: u32,
    pub not_before: Instant,
    /// Largest call it may ride in (lowered after `BatchRequestTooLong`).
    pub max_batch: usize,
    /// Its payload is on its way to S3: not ready to send, and its group's
    /// later messages wait behind it.
    pub staging: Staging,
    /// What it counts against the window's bytes.
    pub bytes: usize,
}

/// Where a message under offload stands.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Staging {
    /// Not offloaded, or its payload is stored.
    Done,
    /// Waiting for a free put.
    Queued,
    /// Its put is in flight.
    Putting,
}

/// One call's entries, by read index.
pub(super) type Batch<P> = Vec<(usize, Slot<P>)>;

/// The bytes of a call's entries, as SQS counts them (what the run counted
/// when it started the call).
pub(super) fn batch_bytes<P>(batch: &Batch<P>) -> usize {
    batch.iter().map(|(_, slot)| slot.entry.size).sum()
}

/// A call's answer: one result per entry id, or why the call failed.
pub(super) type CallResult = Result<Vec<(String, EntryResult)>, CallError>;

/// What finished.
pub(super) enum Done<P> {
    Call(Batch<P>, CallResult),
    Put {
        target: usize,
        index: usize,
        bytes: usize,
        result: Result<(), Failure>,
    },
}

/// Messages and bytes the window holds (pending, queued for a put, in a call
/// or a put).
#[derive(Default)]
pub(super) struct Held {
    pub messages: usize,
    pub bytes: usize,
}

/// A payload waiting for its put.
pub(super) struct Put {
    pub target: usize,
    pub index: usize,
    pub key: String,
    pub payload: String,
}
