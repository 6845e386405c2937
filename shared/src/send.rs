//! Sending: messages in, one outcome per message out.
//!
//! [`Forwarder::forward`] runs the whole flow over a stream of messages
//! pulled lazily from the source: validate and encode ([`crate::message::encode`]),
//! apply the oversize policy, pack into batches ([`crate::send::batch`]), send
//! with a bounded number of calls in flight, retry the entries a retry can
//! help, and stop at the deadline, reporting what is still unsent as
//! failed-retryable rather than losing it. Each outcome goes to the caller
//! as soon as it is settled, and the message leaves memory with it.
//!
//! **The window.** The forwarder holds at most [`Window`]'s worth of messages
//! at once (pending, staged for offload, or in flight): memory follows the
//! window, not the number of messages. A batch is sent when a limit closes
//! it; one the messages read so far cannot fill waits for more input while
//! other calls are in flight, so calls are as few as the input order allows
//! (the window is never smaller than `MAX_IN_FLIGHT + 1` full calls).
//! [`Forwarder::send_all`] is the same flow over a vector, returning the
//! outcomes in input order.
//!
//! Under [`OversizePolicy::Offload`], messages above the offload threshold
//! are written to S3 ([`stage`], [`crate::send::offload`]) and replaced by pointer
//! entries, which then pack and send like any other; a failed put ends that
//! message failed-retryable and nothing else.
//!
//! FIFO queues: messages of one group are never in two calls at once, and a
//! group's later messages wait while an earlier one waits for a retry or its
//! S3 put, so a retry never lands after its successors. Within one call,
//! [`FifoOrder`](crate::FifoOrder) decides how many entries of a group may
//! ride together. When a message ends failed-retryable, its group is blocked
//! for the rest of the call to [`Forwarder::forward`] ([`run`]).
//!
//! [`Fanout`] runs several forwarders, one per target queue, as one: the
//! routing rules ([`crate::route`]) say which target each message goes to.
//! With `AGGREGATE=true` a fan-out packs small records into one message
//! ([`crate::aggregate`]), each record's outcome its aggregate's.
//!
//! The steps, one file each: this file (the API and settings), [`fanout`]
//! (several target queues as one), [`aggregate`] (records packed into
//! aggregates on their way to the run), [`run`] (the
//! window and the scheduling loop), [`slot`] (what the window holds, and the
//! puts waiting), [`call`] (one `SendMessageBatch` call), [`settle`] (a call's answer into
//! outcomes and retries), [`group_state`] (the FIFO groups of a run) and
//! [`groups`] (their order and blocking as calls go and come back),
//! [`stage`] (offload puts).

pub mod batch;
pub mod codes;
pub mod fanout;
pub mod offload;
pub mod outcome;
pub mod retry;
pub mod sink;

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::call::transport::Transport;
use crate::message::Message;
use crate::message::encode::{EncodeRules, Entry};
use crate::message::limits::Limits;
use crate::send::batch::FifoOrder;
pub use crate::send::fanout::Fanout;
use crate::send::offload::{OffloadSettings, PayloadStore};
use crate::send::outcome::{Failure, MessageOutcome, Outcome, Summary};
use crate::send::retry::RetryPolicy;

mod aggregate;
mod call;
mod group_state;
mod groups;
mod run;
mod settle;
mod slot;
mod stage;

/// What to do with a message too large for the queue even on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OversizePolicy {
    /// Report it as a failed outcome (`MessageTooLarge`, not retryable).
    #[default]
    Fail,
    /// Drop it with a warning log line and a `MessagesDropped` metric.
    Drop,
    /// Store its payload in S3 and send a pointer the SQS Extended Client
    /// libraries read ([`crate::send::offload`]); also any message above
    /// [`OffloadSettings::threshold`], or every message with
    /// [`OffloadSettings::always`].
    Offload,
}

/// How the forwarder sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendSettings {
    /// Entries and bytes per call, bytes per message.
    pub limits: Limits,
    /// Most `SendMessageBatch` calls in flight at once (>= 1).
    pub max_in_flight: usize,
    /// Most bytes (as SQS counts them) in the calls in flight at once;
    /// `None`: only `max_in_flight` bounds them. One call always starts when
    /// none is out, however large.
    pub max_in_flight_bytes: Option<usize>,
    /// Retries of failed entries and calls.
    pub retry: RetryPolicy,
    /// Messages too large for the queue.
    pub oversize: OversizePolicy,
    /// Entries of one FIFO group per call.
    pub fifo_order: FifoOrder,
    /// Longest a single call (`SendMessageBatch`, or an offload's
    /// `PutObject`) may take before it counts as failed-retryable.
    pub call_timeout: Duration,
    /// When messages go to S3 under [`OversizePolicy::Offload`].
    pub offload: OffloadSettings,
    /// The most messages and bytes held at once.
    pub window: Window,
    /// Records packed into one message of at most this many bytes
    /// (`AGGREGATE`, `AGGREGATE_BYTES`; [`crate::aggregate`]); `None`: one
    /// message per record.
    pub aggregate: Option<usize>,
}

impl Default for SendSettings {
    fn default() -> Self {
        SendSettings {
            limits: Limits::default(),
            max_in_flight: 4,
            max_in_flight_bytes: None,
            retry: RetryPolicy::default(),
            oversize: OversizePolicy::default(),
            fifo_order: FifoOrder::default(),
            call_timeout: Duration::from_secs(10),
            offload: OffloadSettings::default(),
            window: Window::default(),
            aggregate: None,
        }
    }
}

/// The most the forwarder holds at once: messages read from the source and
/// not yet settled (waiting, staged for S3, or in a call), counted and by
/// their size as SQS counts it (an offloaded payload counts until it is
/// stored). Reading stops while either bound is reached; one message is
/// always let in, however large.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Messages (`WINDOW_MESSAGES`).
    pub max_messages: usize,
    /// Bytes (`WINDOW_BYTES`).
    pub max_bytes: usize,
}

impl Window {
    /// The default number of messages.
    pub const DEFAULT_MESSAGES: usize = 1_000;
    /// The default number of bytes (8 MiB).
    pub const DEFAULT_BYTES: usize = 8 * 1_048_576;

    /// The window in force: never smaller than what the calls in flight
    /// may carry (`max_in_flight` full calls, or `max_in_flight_bytes` when
    /// that is less), one more full call and one largest message, so that a
    /// batch is never sent short for want of input the window could not
    /// hold.
    pub fn effective(
        &self,
        limits: &Limits,
        max_in_flight: usize,
        max_in_flight_bytes: Option<usize>,
    ) -> Window {
        let calls = max_in_flight.max(1);
        let in_flight_bytes = calls.saturating_mul(limits.max_request_bytes);
        let in_flight_bytes =
            max_in_flight_bytes.map_or(in_flight_bytes, |b| b.min(in_flight_bytes));
        Window {
            max_messages: self
                .max_messages
                .max((calls + 1) * limits.max_entries.max(1) + 1),
            max_bytes: self.max_bytes.max(
                in_flight_bytes
                    .saturating_add(limits.max_request_bytes)
                    .saturating_add(limits.largest_message()),
            ),
        }
    }
}

impl Default for Window {
    fn default() -> Self {
        Window {
            max_messages: Self::DEFAULT_MESSAGES,
            max_bytes: Self::DEFAULT_BYTES,
        }
    }
}

/// What one [`Forwarder::forward`] did, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Messages read from the source.
    pub messages: usize,
    /// Their outcomes, counted.
    pub summary: Summary,
    /// The most messages held at once.
    pub peak_messages: usize,
    /// The most bytes held at once.
    pub peak_bytes: usize,
}

/// What the source hands the forwarder for one record: a message for a
/// target, or an outcome already settled (a record the rules filtered out,
/// dropped as unmatched, or found at fault), which is reported in its turn
/// like any other.
#[derive(Debug)]
pub enum Routed<P> {
    /// Send `message` to the target with this index (0: the default target,
    /// `TARGET_QUEUE_URL`).
    To(usize, Message<P>),
    /// Report this outcome for the record at `position`; nothing is sent.
    Settled(P, Outcome),
}

/// Sends messages to one queue and accounts for every one of them.
#[derive(Debug, Clone)]
pub struct Forwarder<T> {
    transport: T,
    settings: SendSettings,
    rules: EncodeRules,
    store: Option<Arc<dyn PayloadStore>>,
}

/// Less time than this before the deadline is no time to start a call.
const MIN_CALL_TIME: Duration = Duration::from_millis(20);

impl<T: Transport> Forwarder<T> {
    /// A forwarder over `transport` with these settings and encoding rules.
    pub fn new(transport: T, settings: SendSettings, rules: EncodeRules) -> Self {
        Forwarder {
            transport,
            settings,
            rules,
            store: None,
        }
    }

    /// Where offloaded payloads go ([`OversizePolicy::Offload`]). Without
    /// one, a message that should be offloaded fails (`OffloadNotConfigured`,
    /// retryable).
    pub fn with_payload_store(mut self, store: impl PayloadStore + 'static) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// The payload store, if any.
    pub fn payload_store(&self) -> Option<&dyn PayloadStore> {
        self.store.as_deref()
    }

    /// Whether messages too large for the queue are offloaded to S3 rather
    /// than failed or dropped: callers should not refuse them by size.
    pub fn offloads(&self) -> bool {
        self.settings.oversize == OversizePolicy::Offload
    }

    /// The settings.
    pub fn settings(&self) -> &SendSettings {
        &self.settings
    }

    /// The encoding rules (FIFO, default group id, body policy).
    pub fn rules(&self) -> &EncodeRules {
        &self.rules
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// Send every message the source yields, reading it lazily into the
    /// [`Window`], and hand each message's outcome to `report` as soon as it
    /// is settled (in settlement order, with the message's position). Stops
    /// sending at `deadline`: whatever is unsent then, and whatever the
    /// source still holds, is reported failed-retryable (`DeadlineExceeded`).
    /// Every message read gets exactly one outcome before this returns.
    pub async fn forward<P, I, F>(&self, messages: I, deadline: Option<Instant>, report: F) -> Tally
    where
        I: IntoIterator<Item = Message<P>>,
        F: FnMut(MessageOutcome<P>),
    {
        let targets = std::slice::from_ref(self);
        let messages = messages.into_iter().map(|m| Routed::To(0, m));
        if self.settings.aggregate.is_some() {
            return aggregate::forward(targets, messages, deadline, report).await;
        }
        run::Run::new(targets, deadline, report)
            .drive(messages.map(run::Item::Routed))
            .await
    }

    /// Send every message and return one outcome per message, in input
    /// order: [`Forwarder::forward`] over a vector. Stops sending at
    /// `deadline`: whatever is unsent then comes back as failed-retryable
    /// (`DeadlineExceeded`).
    pub async fn send_all<P>(
        &self,
        messages: Vec<Message<P>>,
        deadline: Option<Instant>,
    ) -> Vec<MessageOutcome<P>> {
        let total = messages.len();
        let mut slots: Vec<Option<MessageOutcome<P>>> = Vec::with_capacity(total);
        slots.resize_with(total, || None);
        let indexed = messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| m.map_position(|p| (i, p)));
        self.forward(indexed, deadline, |o: MessageOutcome<(usize, P)>| {
            let (index, position) = o.position;
            if let Some(slot) = slots.get_mut(index) {
                *slot = Some(MessageOutcome {
                    position,
                    outcome: o.outcome,
                    attempts: o.attempts,
                });
            }
        })
        .await;
        // `forward` reports every message exactly once, so every slot is
        // filled; a hole would be a bug, and is never turned into a panic.
        slots.into_iter().flatten().collect()
    }

    /// The outcome of a message too large for the queue on its own.
    fn oversize(&self, index: usize, size: usize, limit: usize) -> Outcome {
        let why = format!(
            "message is {size} bytes with its attributes; the limit is {limit} bytes (the queue's MaximumMessageSize, MAX_MESSAGE_BYTES, and the {}-byte request cap)",
            self.settings.limits.max_request_bytes
        );
        match self.settings.oversize {
            OversizePolicy::Fail => Outcome::Failed(Failure::permanent(
                crate::send::codes::MESSAGE_TOO_LARGE,
                why,
            )),
            OversizePolicy::Drop => {
                tracing::warn!(
                    index,
                    size,
                    limit,
                    "dropping oversize message (OVERSIZE_POLICY=drop)"
                );
                Outcome::Dropped { reason: why }
            }
            // Only a message the store could not take as a pointer gets
            // here under offload (the threshold is never above the limit).
            OversizePolicy::Offload => Outcome::Failed(Failure::permanent(
                crate::send::codes::MESSAGE_TOO_LARGE,
                why,
            )),
        }
    }
}

/// Under the offload policy no message may carry the extended clients'
/// reserved attributes: a consumer would take it for a pointer.
fn reserved_names(entry: Entry) -> Result<Entry, Failure> {
    match entry
        .attributes
        .iter()
        .find(|a| offload::is_reserved(&a.name))
    {
        Some(a) => Err(Failure::permanent(
            crate::send::codes::INVALID_ATTRIBUTE_NAME,
            format!(
                "attribute {:?} is reserved for offloaded messages (OVERSIZE_POLICY=offload)",
                a.name
            ),
        )),
        None => Ok(entry),
    }
}

/// The instant by which sending must stop, from a Lambda deadline in
/// milliseconds since the Unix epoch, less a safety `margin`: the one
/// reading of an invocation's deadline, which every function calls.
///
/// Some local emulators (`cargo lambda watch`) send the function's timeout in
/// milliseconds instead of an epoch time; a value before 2001 is read that
/// way, so local runs get the time they were given instead of none.
pub fn deadline_from_epoch_millis(
    deadline_ms: u64,
    margin: std::time::Duration,
) -> tokio::time::Instant {
    const YEAR_2001_MS: u64 = 978_307_200_000;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let left_ms = if deadline_ms < YEAR_2001_MS {
        deadline_ms
    } else {
        deadline_ms.saturating_sub(now_ms)
    };
    let left = std::time::Duration::from_millis(left_ms);
    tokio::time::Instant::now() + left.saturating_sub(margin)
}
