//! Sending: messages in, one outcome per message out.
//!
//! [`Forwarder::send_all`] runs the whole flow for a set of messages:
//! validate and encode ([`crate::encode`]), apply the oversize policy, pack
//! into batches ([`crate::batch`]), send with a bounded number of calls in
//! flight, retry the entries a retry can help, and stop at the deadline,
//! reporting what is still unsent as failed-retryable rather than losing it.
//!
//! Under [`OversizePolicy::Offload`], messages above the offload threshold
//! are first written to S3 ([`crate::offload`]) and replaced by pointer
//! entries, which then pack and send like any other; a failed put ends that
//! message failed-retryable and nothing else.
//!
//! FIFO queues: messages of one group are never in two calls at once, and a
//! group's later messages wait while an earlier one waits for a retry, so a
//! retry never lands after its successors. Within one call, [`FifoOrder`]
//! decides how many entries of a group may ride together.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::{self, FuturesUnordered};
use tokio::time::Instant;

use crate::batch::{Candidate, FifoOrder, next_batch};
use crate::encode::{EncodeRules, Entry, prepare};
use crate::limits::Limits;
use crate::message::Message;
use crate::metrics as m;
use crate::offload::{self, OffloadSettings, PayloadStore};
use crate::outcome::{Failure, MessageOutcome, Outcome};
use crate::retry::RetryPolicy;
use crate::transport::{BatchItem, CallError, EntryResult, Transport};

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
    /// libraries read ([`crate::offload`]); also any message above
    /// [`OffloadSettings::threshold`], or every message with
    /// [`OffloadSettings::always`].
    Offload,
}

impl OversizePolicy {
    /// The names accepted in configuration.
    pub const NAMES: &'static str = "fail, drop, offload";

    /// Parse a configuration value.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "fail" => Some(OversizePolicy::Fail),
            "drop" => Some(OversizePolicy::Drop),
            "offload" => Some(OversizePolicy::Offload),
            _ => None,
        }
    }
}

/// How the forwarder sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendSettings {
    /// Entries and bytes per call, bytes per message.
    pub limits: Limits,
    /// Most `SendMessageBatch` calls in flight at once (>= 1).
    pub max_in_flight: usize,
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
}

impl Default for SendSettings {
    fn default() -> Self {
        SendSettings {
            limits: Limits::default(),
            max_in_flight: 4,
            retry: RetryPolicy::default(),
            oversize: OversizePolicy::default(),
            fifo_order: FifoOrder::default(),
            call_timeout: Duration::from_secs(10),
            offload: OffloadSettings::default(),
        }
    }
}

/// Sends messages to one queue and accounts for every one of them.
#[derive(Debug, Clone)]
pub struct Forwarder<T> {
    transport: T,
    settings: SendSettings,
    rules: EncodeRules,
    store: Option<Arc<dyn PayloadStore>>,
}

struct Slot {
    entry: Arc<Entry>,
    /// Attempts that count against the retry budget (a split after
    /// `BatchRequestTooLong` does not).
    attempts: u32,
    /// Calls that carried the message, whatever their answer.
    calls: u32,
    not_before: Instant,
    max_batch: usize,
}

/// When the entries of one call are retried, and the deadline.
#[derive(Clone, Copy)]
struct RetryAt {
    at: Instant,
    deadline: Option<Instant>,
}

/// Less time than this before the deadline is no time to start a call.
const MIN_CALL_TIME: Duration = Duration::from_millis(20);

type CallResult = Result<Vec<(String, EntryResult)>, CallError>;

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

    /// Send every message and return one outcome per message, in input
    /// order. Stops sending at `deadline`: whatever is unsent then comes back
    /// as failed-retryable (`DeadlineExceeded`).
    pub async fn send_all<P>(
        &self,
        messages: Vec<Message<P>>,
        deadline: Option<Instant>,
    ) -> Vec<MessageOutcome<P>> {
        let total = messages.len();
        m::messages_in(total);
        let limit = self.settings.limits.largest_message();
        let mut positions = Vec::with_capacity(total);
        let mut outcomes: Vec<Option<(Outcome, u32)>> = Vec::with_capacity(total);
        let mut pending: BTreeMap<usize, Slot> = BTreeMap::new();
        let start = Instant::now();
        let offloading = self.offloads();
        let mut to_offload = Vec::new();

        for (index, message) in messages.into_iter().enumerate() {
            let (position, prepared) = prepare(message, &self.rules);
            positions.push(position);
            let prepared = match prepared {
                Ok(entry) if offloading => reserved_names(entry),
                other => other,
            };
            match prepared {
                Err(failure) => outcomes.push(Some((Outcome::Failed(failure), 0))),
                Ok(entry) if offloading && self.settings.offload.offloads(entry.size, limit) => {
                    outcomes.push(None);
                    to_offload.push((index, entry));
                }
                Ok(entry) if entry.size > limit => {
                    outcomes.push(Some((self.oversize(index, entry.size, limit), 0)));
                }
                Ok(entry) => {
                    outcomes.push(None);
                    pending.insert(
                        index,
                        Slot {
                            entry: Arc::new(entry),
                            attempts: 0,
                            calls: 0,
                            not_before: start,
                            max_batch: self.settings.limits.max_entries,
                        },
                    );
                }
            }
        }

        if !to_offload.is_empty() {
            self.offload(to_offload, &mut pending, &mut outcomes, deadline, start)
                .await;
        }
        self.run(&mut pending, &mut outcomes, deadline).await;

        let mut result = Vec::with_capacity(total);
        let mut counts = (0usize, 0usize, 0usize);
        for (position, outcome) in positions.into_iter().zip(outcomes) {
            let (outcome, attempts) = outcome.unwrap_or_else(|| {
                // Unreachable by construction; never lose a message to a bug.
                (
                    Outcome::Failed(Failure::transient(
                        "Unaccounted",
                        "the forwarder lost track of this message",
                    )),
                    0,
                )
            });
            match &outcome {
                Outcome::Sent { .. } => counts.0 += 1,
                Outcome::Failed(_) => counts.1 += 1,
                Outcome::Dropped { .. } => counts.2 += 1,
            }
            result.push(MessageOutcome {
                position,
                outcome,
                attempts,
            });
        }
        m::messages_sent(counts.0);
        m::messages_failed(counts.1);
        m::messages_dropped(counts.2);
        result
    }

    /// Store the payloads of `entries` in S3 (at most `max_in_flight` puts at
    /// once, each within the call timeout and the deadline) and put their
    /// pointer entries in `pending`. A failed put fails its message,
    /// retryable; in a FIFO group, the group's later messages then wait for
    /// the source to deliver it again (`GroupBlocked`).
    async fn offload(
        &self,
        entries: Vec<(usize, Entry)>,
        pending: &mut BTreeMap<usize, Slot>,
        outcomes: &mut [Option<(Outcome, u32)>],
        deadline: Option<Instant>,
        start: Instant,
    ) {
        let Some(store) = self.store.as_deref() else {
            for (index, _) in entries {
                outcomes[index] = Some((
                    Outcome::Failed(Failure::transient(
                        "OffloadNotConfigured",
                        "OVERSIZE_POLICY is offload but the forwarder has no payload store (OFFLOAD_BUCKET)",
                    )),
                    0,
                ));
            }
            return;
        };
        let results: Vec<(usize, Option<String>, Result<Entry, Failure>)> = stream::iter(entries)
            .map(|(index, entry)| async move {
                let group = entry.group_id.clone();
                (index, group, self.offload_one(store, entry, deadline).await)
            })
            .buffer_unordered(self.settings.max_in_flight.max(1))
            .collect()
            .await;
        let mut blocking: Vec<(usize, String)> = Vec::new();
        for (index, group, result) in results {
            match result {
                Ok(pointer) => {
                    pending.insert(
                        index,
                        Slot {
                            entry: Arc::new(pointer),
                            attempts: 0,
                            calls: 0,
                            not_before: start,
                            max_batch: self.settings.limits.max_entries,
                        },
                    );
                }
                Err(failure) => {
                    tracing::warn!(
                        index,
                        code = %failure.code,
                        message = %failure.message,
                        retryable = failure.retryable,
                        "a payload could not be offloaded to S3"
                    );
                    if let (true, true, Some(g)) = (self.rules.fifo, failure.retryable, group) {
                        blocking.push((index, g));
                    }
                    outcomes[index] = Some((Outcome::Failed(failure), 0));
                }
            }
        }
        // A FIFO message the source will deliver again: its group's later
        // messages must not overtake it.
        for (failed, group) in blocking {
            let later: Vec<usize> = pending
                .range(failed + 1..)
                .filter(|(_, s)| s.entry.group_id.as_deref() == Some(group.as_str()))
                .map(|(i, _)| *i)
                .collect();
            for index in later {
                pending.remove(&index);
                outcomes[index] = Some((
                    Outcome::Failed(Failure::transient(
                        "GroupBlocked",
                        format!(
                            "an earlier message of group {group:?} could not be offloaded; this one was not sent, to keep the group's order"
                        ),
                    )),
                    0,
                ));
            }
        }
    }

    /// Offload one entry: its pointer entry, or why not.
    async fn offload_one(
        &self,
        store: &dyn PayloadStore,
        mut entry: Entry,
        deadline: Option<Instant>,
    ) -> Result<Entry, Failure> {
        let limit = self.settings.limits.largest_message();
        let settings = &self.settings.offload;
        let key = offload::new_key(&settings.key_prefix);
        let pointer =
            offload::pointer_entry(&entry, store.bucket(), &key, settings.size_attribute)?;
        if pointer.size > limit {
            return Err(Failure::permanent(
                "MessageTooLarge",
                format!(
                    "even offloaded to S3 the message is {} bytes (the pointer and its attributes); the limit is {limit} bytes",
                    pointer.size
                ),
            ));
        }
        let now = Instant::now();
        let timeout = match deadline {
            Some(d) if d.saturating_duration_since(now) < MIN_CALL_TIME => {
                return Err(Failure::transient(
                    "DeadlineExceeded",
                    "the invocation's deadline came before this message could be offloaded to S3",
                ));
            }
            Some(d) => self
                .settings
                .call_timeout
                .min(d.saturating_duration_since(now)),
            None => self.settings.call_timeout,
        };
        let payload = std::mem::take(&mut entry.body);
        let bytes = payload.len();
        match tokio::time::timeout(timeout, store.put(&key, payload)).await {
            Ok(Ok(())) => {
                m::payload_offloaded(bytes);
                Ok(pointer)
            }
            Ok(Err(failure)) => Err(failure),
            Err(_) => Err(Failure::transient(
                "OffloadFailed",
                format!("no answer to PutObject within {} ms", timeout.as_millis()),
            )),
        }
    }

    fn oversize(&self, index: usize, size: usize, limit: usize) -> Outcome {
        let why = format!(
            "message is {size} bytes with its attributes; the limit is {limit} bytes (the queue's MaximumMessageSize, MAX_MESSAGE_BYTES, and the {}-byte request cap)",
            self.settings.limits.max_request_bytes
        );
        match self.settings.oversize {
            OversizePolicy::Fail => Outcome::Failed(Failure::permanent("MessageTooLarge", why)),
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
            OversizePolicy::Offload => Outcome::Failed(Failure::permanent("MessageTooLarge", why)),
        }
    }

    async fn run(
        &self,
        pending: &mut BTreeMap<usize, Slot>,
        outcomes: &mut [Option<(Outcome, u32)>],
        deadline: Option<Instant>,
    ) {
        let fifo = self.rules.fifo;
        let mut busy_groups: HashMap<String, usize> = HashMap::new();
        let mut in_flight = FuturesUnordered::new();
        // Every retry time set by `settle` (one per call), earliest first:
        // the next wake-up without walking every pending message.
        let mut wakes: BinaryHeap<Reverse<Instant>> = BinaryHeap::new();

        loop {
            let now = Instant::now();
            if deadline.is_some_and(|d| d.saturating_duration_since(now) < MIN_CALL_TIME) {
                for (index, slot) in std::mem::take(pending) {
                    outcomes[index] = Some((
                        Outcome::Failed(Failure::transient(
                            "DeadlineExceeded",
                            "the invocation's deadline came before this message could be sent",
                        )),
                        slot.calls,
                    ));
                }
            }
            while in_flight.len() < self.settings.max_in_flight.max(1) {
                let picked = {
                    let candidates = pending.iter().map(|(i, s)| Candidate {
                        index: *i,
                        size: s.entry.size,
                        group: if fifo {
                            s.entry.group_id.as_deref()
                        } else {
                            None
                        },
                        ready: s.not_before <= now,
                        max_batch: s.max_batch,
                    });
                    next_batch(
                        candidates,
                        &self.settings.limits,
                        self.settings.fifo_order,
                        |g| busy_groups.contains_key(g),
                    )
                };
                if picked.is_empty() {
                    break;
                }
                let mut batch = Vec::with_capacity(picked.len());
                for index in picked {
                    if let Some(mut slot) = pending.remove(&index) {
                        slot.attempts += 1;
                        slot.calls += 1;
                        if let (true, Some(g)) = (fifo, &slot.entry.group_id) {
                            *busy_groups.entry(g.clone()).or_default() += 1;
                        }
                        batch.push((index, slot));
                    }
                }
                let timeout = match deadline {
                    Some(d) => self
                        .settings
                        .call_timeout
                        .min(d.saturating_duration_since(now)),
                    None => self.settings.call_timeout,
                };
                in_flight.push(self.call(batch, timeout));
            }

            if in_flight.is_empty() && pending.is_empty() {
                return;
            }
            // The earliest retry time still ahead. Times of messages that
            // left `pending` meanwhile stay in the heap and only cause one
            // early wake-up.
            while wakes.peek().is_some_and(|Reverse(t)| *t <= now) {
                wakes.pop();
            }
            let wake = wakes.peek().map(|Reverse(t)| *t);
            let wake = match (wake, deadline) {
                (Some(w), Some(d)) => Some(w.min(d)),
                (Some(w), None) => Some(w),
                (None, d) if !pending.is_empty() => d,
                (None, _) => None,
            };
            if in_flight.is_empty() {
                match wake {
                    Some(w) => tokio::time::sleep_until(w).await,
                    // Pending messages that can never be picked: impossible by
                    // construction, but never spin or hang on it.
                    None => {
                        for (index, slot) in std::mem::take(pending) {
                            outcomes[index] = Some((
                                Outcome::Failed(Failure::transient(
                                    "Unschedulable",
                                    "the forwarder could not schedule this message",
                                )),
                                slot.calls,
                            ));
                        }
                        return;
                    }
                }
                continue;
            }
            let done = match wake {
                Some(w) => tokio::select! {
                    done = in_flight.next() => done,
                    _ = tokio::time::sleep_until(w) => None,
                },
                None => in_flight.next().await,
            };
            if let Some((batch, result)) = done {
                if fifo {
                    for (_, slot) in &batch {
                        if let Some(g) = &slot.entry.group_id
                            && let Some(n) = busy_groups.get_mut(g)
                        {
                            *n -= 1;
                            if *n == 0 {
                                busy_groups.remove(g);
                            }
                        }
                    }
                }
                if let Some(at) = self.settle(batch, result, pending, outcomes, deadline) {
                    wakes.push(Reverse(at));
                }
            }
        }
    }

    async fn call(
        &self,
        batch: Vec<(usize, Slot)>,
        timeout: Duration,
    ) -> (Vec<(usize, Slot)>, CallResult) {
        let items: Vec<BatchItem> = batch
            .iter()
            .map(|(index, slot)| BatchItem {
                id: index.to_string(),
                entry: Arc::clone(&slot.entry),
            })
            .collect();
        m::batch_sent();
        let result = match tokio::time::timeout(timeout, self.transport.send_batch(&items)).await {
            Ok(r) => r,
            Err(_) => Err(CallError::Failed(Failure::transient(
                "Timeout",
                format!(
                    "no answer to SendMessageBatch within {} ms",
                    timeout.as_millis()
                ),
            ))),
        };
        (batch, result)
    }

    fn settle(
        &self,
        batch: Vec<(usize, Slot)>,
        result: CallResult,
        pending: &mut BTreeMap<usize, Slot>,
        outcomes: &mut [Option<(Outcome, u32)>],
        deadline: Option<Instant>,
    ) -> Option<Instant> {
        let n = batch.len();
        // One retry time per call: the entries a call failed go out again
        // together, in as few calls as before, not one call each.
        let most = batch.iter().map(|(_, s)| s.attempts).max().unwrap_or(1);
        let when = RetryAt {
            at: Instant::now() + self.settings.retry.backoff(most),
            deadline,
        };
        let mut retried = false;
        match result {
            Ok(results) => {
                let mut by_id: HashMap<String, EntryResult> = results.into_iter().collect();
                let mut failed_groups: Vec<(usize, String)> = Vec::new();
                for (index, slot) in batch {
                    match by_id.remove(&index.to_string()) {
                        Some(EntryResult::Sent {
                            message_id,
                            sequence_number,
                        }) => {
                            if let Some(g) = &slot.entry.group_id
                                && failed_groups.iter().any(|(_, fg)| fg == g)
                            {
                                m::order_inversion();
                                tracing::warn!(group = %g, index, "a later message of a FIFO group was accepted while an earlier one failed in the same call: the group's order may be broken (FIFO_ORDER=batched)");
                            }
                            m::bytes_sent(slot.entry.size);
                            let attempts = slot.calls;
                            outcomes[index] = Some((
                                Outcome::Sent {
                                    message_id,
                                    sequence_number,
                                },
                                attempts,
                            ));
                        }
                        Some(EntryResult::Failed {
                            code,
                            message,
                            sender_fault,
                        }) => {
                            let failure = EntryResult::failure(&code, &message, sender_fault);
                            if self.rules.fifo
                                && failure.retryable
                                && let Some(g) = &slot.entry.group_id
                            {
                                failed_groups.push((index, g.clone()));
                            }
                            retried |=
                                self.retry_or_settle(index, slot, failure, pending, outcomes, when);
                        }
                        None => {
                            let failure = Failure::transient(
                                "MissingResult",
                                "SQS's answer did not mention this entry",
                            );
                            retried |=
                                self.retry_or_settle(index, slot, failure, pending, outcomes, when);
                        }
                    }
                }
            }
            Err(CallError::TooLong(message)) => {
                tracing::error!(entries = n, %message, "SQS answered BatchRequestTooLong; splitting the batch");
                for (index, mut slot) in batch {
                    slot.attempts -= 1;
                    if n == 1 {
                        let failure = Failure::permanent(
                            "BatchRequestTooLong",
                            format!("SQS rejected the message alone as too long: {message}"),
                        );
                        outcomes[index] = Some((Outcome::Failed(failure), slot.calls));
                    } else {
                        slot.max_batch = (n / 2).max(1);
                        pending.insert(index, slot);
                    }
                }
            }
            Err(CallError::Failed(failure)) => {
                if failure.retryable {
                    tracing::warn!(code = %failure.code, entries = n, "SendMessageBatch call failed; retrying its entries");
                } else {
                    tracing::error!(code = %failure.code, message = %failure.message, entries = n, "SendMessageBatch call failed; not retryable");
                }
                for (index, slot) in batch {
                    retried |=
                        self.retry_or_settle(index, slot, failure.clone(), pending, outcomes, when);
                }
            }
        }
        retried.then_some(when.at)
    }

    fn retry_or_settle(
        &self,
        index: usize,
        mut slot: Slot,
        failure: Failure,
        pending: &mut BTreeMap<usize, Slot>,
        outcomes: &mut [Option<(Outcome, u32)>],
        when: RetryAt,
    ) -> bool {
        let attempts = slot.attempts;
        if !failure.retryable {
            outcomes[index] = Some((Outcome::Failed(failure), attempts));
            return false;
        }
        if attempts >= self.settings.retry.max_attempts {
            let failure = Failure {
                message: format!("{} (gave up after {attempts} attempts)", failure.message),
                ..failure
            };
            outcomes[index] = Some((Outcome::Failed(failure), attempts));
            self.block_group(&slot, pending, outcomes);
            return false;
        }
        let not_before = when.at;
        if when
            .deadline
            .is_some_and(|d| not_before + MIN_CALL_TIME > d)
        {
            let failure = Failure {
                message: format!(
                    "{} (no time left before the deadline to retry)",
                    failure.message
                ),
                ..failure
            };
            outcomes[index] = Some((Outcome::Failed(failure), attempts));
            self.block_group(&slot, pending, outcomes);
            return false;
        }
        m::retry();
        slot.not_before = not_before;
        pending.insert(index, slot);
        true
    }

    /// A FIFO message ended failed-retryable: its event source will deliver
    /// it again. Its group's later messages must not overtake it, so they
    /// are not sent now and come back failed-retryable too.
    fn block_group(
        &self,
        failed: &Slot,
        pending: &mut BTreeMap<usize, Slot>,
        outcomes: &mut [Option<(Outcome, u32)>],
    ) {
        let (true, Some(group)) = (self.rules.fifo, &failed.entry.group_id) else {
            return;
        };
        let blocked: Vec<usize> = pending
            .iter()
            .filter(|(_, s)| s.entry.group_id.as_ref() == Some(group))
            .map(|(i, _)| *i)
            .collect();
        for index in blocked {
            if let Some(slot) = pending.remove(&index) {
                outcomes[index] = Some((
                    Outcome::Failed(Failure::transient(
                        "GroupBlocked",
                        format!(
                            "an earlier message of group {group:?} failed; this one was not sent, to keep the group's order"
                        ),
                    )),
                    slot.calls,
                ));
            }
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
            "InvalidAttributeName",
            format!(
                "attribute {:?} is reserved for offloaded messages (OVERSIZE_POLICY=offload)",
                a.name
            ),
        )),
        None => Ok(entry),
    }
}
