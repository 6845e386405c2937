//! The window and the scheduling loop of one [`Forwarder::forward`] (or
//! [`Fanout::forward`](super::Fanout::forward): one run over several target
//! queues).
//!
//! [`Run`] owns everything a call to `forward` holds: the messages read and
//! not yet settled (`pending`: per target, keyed by read order, [`Slot`]s), the FIFO groups of each target ([`Groups`]), the retry wake-ups,
//! and the window's counts. The window, the deadline and the calls in flight
//! are the run's; limits, FIFO rules, retries and offload are each target's. The loop reads from the source while
//! the window has room, starts S3 puts and calls while fewer than
//! `max_in_flight` of each are out, and then waits for whichever comes
//! first: a call or put finishing, a retry's backoff ending, the deadline.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::future::Either;
use futures_util::stream::FuturesUnordered;
use tokio::time::Instant;

use super::group_state::{Groups, group_blocked};
use super::slot::{Batch, Done, Held, Put, Slot, Staging};
use super::{Forwarder, MIN_CALL_TIME, Routed, Tally, Window, reserved_names};
use crate::call::transport::Transport;
use crate::message::Message;
use crate::message::encode::{Entry, prepare};
use crate::observe::metrics as m;
use crate::send::batch::{Candidate, Picked, pick};
use crate::send::outcome::{Failure, MessageOutcome, Outcome};

/// What the run reads from its source: a record routed by the caller, or
/// an entry already prepared (an aggregate of records, or a record the
/// aggregation sends on its own: [`super::aggregate`]).
pub(super) enum Item<P> {
    /// As the caller routed it.
    Routed(Routed<P>),
    /// An entry for the target with this index, already prepared.
    Prepared(usize, P, Entry),
}

impl<P> Item<P> {
    fn into_position(self) -> P {
        match self {
            Item::Routed(Routed::To(_, m)) => m.position,
            Item::Routed(Routed::Settled(p, _)) => p,
            Item::Prepared(_, p, _) => p,
        }
    }
}

pub(super) struct Run<'a, T, P, F> {
    /// The forwarders, one per target queue (index 0 first).
    pub targets: &'a [Forwarder<T>],
    pub deadline: Option<Instant>,
    report: F,
    window: Window,
    /// Messages read and not settled, not in a call: by read index.
    /// Per target, so that picking a target's batch walks its own messages
    /// only.
    pub pending: Vec<BTreeMap<usize, Slot<P>>>,
    /// FIFO groups in a call or blocked, per target.
    pub groups: Vec<Groups>,
    /// Every retry time set by `settle` (one per call), earliest first: the
    /// next wake-up without walking every pending message.
    pub wakes: BinaryHeap<Reverse<Instant>>,
    /// Offload puts not started yet.
    pub queued: VecDeque<Put>,
    /// Messages and bytes held (pending, queued, in a call or a put).
    held: Held,
    next_index: usize,
    /// Outcomes the caller settled as dropped (its rules skipped them).
    skipped: usize,
    pub tally: Tally,
}

impl<'a, T: Transport, P, F: FnMut(MessageOutcome<P>)> Run<'a, T, P, F> {
    /// A run over `targets` (at least one; the first one's window and calls
    /// in flight are the run's).
    pub fn new(targets: &'a [Forwarder<T>], deadline: Option<Instant>, report: F) -> Self {
        let window = targets
            .first()
            .map(|f| {
                let s = &f.settings;
                s.window
                    .effective(&s.limits, s.max_in_flight, s.max_in_flight_bytes)
            })
            .unwrap_or_default();
        Run {
            targets,
            deadline,
            report,
            window,
            pending: targets.iter().map(|_| BTreeMap::new()).collect(),
            groups: targets.iter().map(|_| Groups::default()).collect(),
            wakes: BinaryHeap::new(),
            queued: VecDeque::new(),
            held: Held::default(),
            next_index: 0,
            skipped: 0,
            tally: Tally::default(),
        }
    }

    /// Run to the end of the source and of every message read from it.
    pub async fn drive(mut self, mut source: impl Iterator<Item = Item<P>>) -> Tally {
        let targets = self.targets;
        let Some(first) = targets.first() else {
            // No forwarder: nothing can be sent (unreachable through the
            // public API, which always has the default target).
            for routed in source {
                let position = routed.into_position();
                self.next_index();
                self.report(position, Outcome::Failed(Failure::unschedulable(None)), 0);
            }
            return self.finish();
        };
        let max = first.settings.max_in_flight.max(1);
        // The bytes the calls in flight may carry together (one call always
        // starts when none is out).
        let max_bytes = first.settings.max_in_flight_bytes.unwrap_or(usize::MAX);
        let mut calls_bytes = 0usize;
        // The target whose batch is looked at first, turning after each call
        // so that no target waits behind another's.
        let mut turn = 0usize;
        let mut exhausted = false;
        let mut in_flight = FuturesUnordered::new();
        let (mut calls, mut puts) = (0usize, 0usize);

        loop {
            let now = Instant::now();
            if self.past_deadline(now) {
                self.expire();
                if !exhausted {
                    for routed in source.by_ref() {
                        self.next_index();
                        match routed {
                            Item::Routed(Routed::Settled(p, outcome)) => self.settled(p, outcome),
                            other => self.report(
                                other.into_position(),
                                Outcome::Failed(Failure::deadline()),
                                0,
                            ),
                        }
                    }
                    exhausted = true;
                }
            }
            while !exhausted && self.has_room() {
                match source.next() {
                    Some(Item::Routed(Routed::To(target, message))) => self.admit(target, message),
                    Some(Item::Prepared(target, position, entry)) => {
                        let index = self.next_index();
                        self.admit_entry(target, index, position, Ok(entry));
                    }
                    Some(Item::Routed(Routed::Settled(position, outcome))) => {
                        self.next_index();
                        self.settled(position, outcome);
                    }
                    None => exhausted = true,
                }
            }
            // After reading: what was just read is ready now.
            let now = Instant::now();
            while puts < max
                && let Some(put) = self.queued.pop_front()
            {
                if let Some(slot) = self
                    .pending
                    .get_mut(put.target)
                    .and_then(|p| p.get_mut(&put.index))
                    && let Some(fwd) = targets.get(put.target)
                {
                    slot.staging = Staging::Putting;
                    in_flight.push(Either::Right(fwd.put(put, self.deadline)));
                    puts += 1;
                }
            }
            // Each target in turn, as long as calls may start: a target's
            // batch that no limit has closed could take messages the source
            // still holds, or payloads on their way to S3; it waits for them
            // while something else is out.
            let mut idle = 0;
            while calls < max && idle < targets.len() {
                let t = turn % targets.len();
                let picked = self.pick(t, now);
                if picked.indices.is_empty()
                    || (!picked.closed && (puts > 0 || (!exhausted && calls > 0)))
                {
                    turn += 1;
                    idle += 1;
                    continue;
                }
                let bytes = self.picked_bytes(t, &picked.indices);
                if calls > 0 && calls_bytes.saturating_add(bytes) > max_bytes {
                    // Too much is out: wait for a call to come back.
                    break;
                }
                let fwd = &targets[t];
                let batch = self.take(t, picked.indices);
                calls_bytes = calls_bytes.saturating_add(bytes);
                let timeout = match self.deadline {
                    Some(d) => fwd
                        .settings
                        .call_timeout
                        .min(d.saturating_duration_since(now)),
                    None => fwd.settings.call_timeout,
                };
                in_flight.push(Either::Left(fwd.call(batch, timeout)));
                calls += 1;
                if targets.len() > 1 {
                    turn += 1;
                    idle = 0;
                }
            }

            if in_flight.is_empty() && self.nothing_pending() && exhausted {
                return self.finish();
            }
            // The earliest retry time still ahead. Times of messages that
            // left `pending` meanwhile stay in the heap and only cause one
            // early wake-up.
            while self.wakes.peek().is_some_and(|Reverse(t)| *t <= now) {
                self.wakes.pop();
            }
            let wake = self.wakes.peek().map(|Reverse(t)| *t);
            let wake = match (wake, self.deadline) {
                (Some(w), Some(d)) => Some(w.min(d)),
                (Some(w), None) => Some(w),
                (None, d) if !self.nothing_pending() => d,
                (None, _) => None,
            };
            if in_flight.is_empty() {
                match wake {
                    Some(w) => tokio::time::sleep_until(w).await,
                    // Pending messages that can never be picked: impossible
                    // by construction, but never spin or hang on it.
                    None => self.unschedulable(),
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
            match done {
                Some(Done::Call(batch, result)) => {
                    calls -= 1;
                    calls_bytes = calls_bytes.saturating_sub(super::slot::batch_bytes(&batch));
                    self.release_groups(&batch);
                    if let Some(at) = self.settle(batch, result) {
                        self.wakes.push(Reverse(at));
                    }
                }
                Some(Done::Put {
                    target,
                    index,
                    bytes,
                    result,
                }) => {
                    puts -= 1;
                    self.stored(target, index, bytes, result);
                }
                None => {}
            }
        }
    }

    fn next_index(&mut self) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        self.tally.messages += 1;
        index
    }

    fn has_room(&self) -> bool {
        self.held.messages < self.window.max_messages && self.held.bytes < self.window.max_bytes
    }

    fn past_deadline(&self, now: Instant) -> bool {
        self.deadline
            .is_some_and(|d| d.saturating_duration_since(now) < MIN_CALL_TIME)
    }

    /// Read one message into the window, or settle it at once (invalid,
    /// oversize, its group blocked).
    fn admit(&mut self, target: usize, message: Message<P>) {
        let index = self.next_index();
        let Some(fwd) = self.targets.get(target) else {
            // A target index the run does not have: a caller's bug, never a
            // panic (the routing rules only name configured targets).
            return self.report(
                message.position,
                Outcome::Failed(Failure::unschedulable(Some(target))),
                0,
            );
        };
        let (position, prepared) = prepare(message, &fwd.rules);
        self.admit_entry(target, index, position, prepared);
    }

    /// Hold a prepared entry for `target` (read as the `index`th), or settle
    /// it at once (invalid, oversize, its group blocked).
    fn admit_entry(
        &mut self,
        target: usize,
        index: usize,
        position: P,
        prepared: Result<Entry, Failure>,
    ) {
        let Some(fwd) = self.targets.get(target) else {
            return self.report(
                position,
                Outcome::Failed(Failure::unschedulable(Some(target))),
                0,
            );
        };
        let rules = &fwd.rules;
        let settings = &fwd.settings;
        let offloading = fwd.offloads();
        let prepared = match prepared {
            Ok(entry) if offloading => reserved_names(entry),
            other => other,
        };
        let entry = match prepared {
            Ok(entry) => entry,
            Err(failure) => return self.report(position, Outcome::Failed(failure), 0),
        };
        if rules.fifo
            && let Some(g) = &entry.group_id
            && let Some(by) = self.groups[target].blocked(g)
        {
            let failure = group_blocked(g, by);
            return self.report(position, Outcome::Failed(failure), 0);
        }
        let limit = settings.limits.largest_message();
        if offloading && settings.offload.offloads(entry.size, limit) {
            return self.stage(target, index, position, entry);
        }
        if entry.size > limit {
            let outcome = fwd.oversize(index, entry.size, limit);
            return self.report(position, outcome, 0);
        }
        let bytes = entry.size;
        self.hold(index, self.slot(target, entry, position, bytes));
    }

    pub fn slot(&self, target: usize, entry: Entry, position: P, bytes: usize) -> Slot<P> {
        Slot {
            target,
            entry: Arc::new(entry),
            position,
            attempts: 0,
            calls: 0,
            not_before: Instant::now(),
            max_batch: self.targets[target].settings.limits.max_entries,
            staging: Staging::Done,
            bytes,
        }
    }

    /// Put a message read from the source into the window.
    pub fn hold(&mut self, index: usize, slot: Slot<P>) {
        self.held.messages += 1;
        self.held.bytes += slot.bytes;
        self.tally.peak_messages = self.tally.peak_messages.max(self.held.messages);
        self.tally.peak_bytes = self.tally.peak_bytes.max(self.held.bytes);
        self.pending[slot.target].insert(index, slot);
    }

    /// A held message's bytes changed (its payload went to S3).
    pub fn shrink(&mut self, by: usize) {
        self.held.bytes = self.held.bytes.saturating_sub(by);
    }

    /// Hand a message's outcome to the caller.
    pub fn report(&mut self, position: P, outcome: Outcome, attempts: u32) {
        let s = &mut self.tally.summary;
        match &outcome {
            Outcome::Sent { .. } => s.sent += 1,
            Outcome::Failed(f) if f.retryable => s.failed_retryable += 1,
            Outcome::Failed(_) => s.failed_permanent += 1,
            Outcome::Dropped { .. } => s.dropped += 1,
        }
        (self.report)(MessageOutcome {
            position,
            outcome,
            attempts,
        });
    }

    /// Report an outcome the caller settled; a record its rules dropped
    /// (`FilteredOut`, `Unmatched`, counted there) is not `MessagesDropped`.
    fn settled(&mut self, position: P, outcome: Outcome) {
        self.skipped += usize::from(matches!(outcome, Outcome::Dropped { .. }));
        self.report(position, outcome, 0);
    }

    /// Settle a held message: it leaves the window with its outcome.
    pub fn settle_slot(&mut self, slot: Slot<P>, outcome: Outcome, attempts: u32) {
        self.held.messages = self.held.messages.saturating_sub(1);
        self.held.bytes = self.held.bytes.saturating_sub(slot.bytes);
        self.report(slot.position, outcome, attempts);
    }

    /// The next batch for target `t`.
    fn pick(&self, t: usize, now: Instant) -> Picked {
        let fwd = &self.targets[t];
        let fifo = fwd.rules.fifo;
        let groups = &self.groups[t];
        let candidates = self.pending[t].iter().map(|(i, s)| Candidate {
            index: *i,
            size: s.entry.size,
            group: if fifo {
                s.entry.group_id.as_deref()
            } else {
                None
            },
            ready: s.staging == Staging::Done && s.not_before <= now,
            max_batch: s.max_batch,
        });
        pick(
            candidates,
            &fwd.settings.limits,
            fwd.settings.fifo_order,
            |g| groups.is_busy(g),
        )
    }

    /// Take the picked messages out of `pending` into a call.
    /// The bytes of a picked batch, as SQS counts its entries.
    fn picked_bytes(&self, t: usize, picked: &[usize]) -> usize {
        picked
            .iter()
            .filter_map(|i| self.pending[t].get(i))
            .map(|slot| slot.entry.size)
            .sum()
    }

    fn take(&mut self, t: usize, picked: Vec<usize>) -> Batch<P> {
        let mut batch = Vec::with_capacity(picked.len());
        for index in picked {
            if let Some(mut slot) = self.pending[t].remove(&index) {
                slot.attempts += 1;
                slot.calls += 1;
                batch.push((index, slot));
            }
        }
        self.enter_groups(t, &batch);
        batch
    }

    /// The deadline came: every held message not in a call or a put fails,
    /// retryable.
    fn expire(&mut self) {
        self.queued.clear();
        for t in 0..self.pending.len() {
            let expired: Vec<usize> = self.pending[t]
                .iter()
                .filter(|(_, s)| s.staging != Staging::Putting)
                .map(|(i, _)| *i)
                .collect();
            for index in expired {
                if let Some(slot) = self.pending[t].remove(&index) {
                    let calls = slot.calls;
                    self.settle_slot(slot, Outcome::Failed(Failure::deadline()), calls);
                }
            }
        }
    }

    fn unschedulable(&mut self) {
        for t in 0..self.pending.len() {
            for (_, slot) in std::mem::take(&mut self.pending[t]) {
                let calls = slot.calls;
                self.settle_slot(slot, Outcome::Failed(Failure::unschedulable(None)), calls);
            }
        }
        self.queued.clear();
    }

    /// Whether no target holds a message outside a call.
    fn nothing_pending(&self) -> bool {
        self.pending.iter().all(BTreeMap::is_empty)
    }

    fn finish(self) -> Tally {
        let s = &self.tally.summary;
        m::messages_in(self.tally.messages);
        m::messages_sent(s.sent);
        m::messages_failed(s.failed_retryable + s.failed_permanent);
        m::messages_dropped(s.dropped.saturating_sub(self.skipped));
        self.tally
    }
}
