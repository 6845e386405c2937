//! What the fake keeps of every answered call, and the questions a test
//! asks of that record and of the counters.

use std::ops::Deref;
use std::sync::atomic::Ordering;

use crate::call::transport::{CallError, EntryResult};
use crate::message::AttributeValue;
use crate::message::encode::{Entry, SharedEntry};

use super::{FakeSqs, State, lock};

/// One entry of a recorded call. Derefs to the [`Entry`] (body, attributes,
/// group and deduplication ids, size).
#[derive(Debug, Clone)]
pub struct Seen {
    /// The call's number, from 0.
    pub call: usize,
    /// The entry's id within the call.
    pub id: String,
    /// How many times the fake had seen this body, this time included.
    pub attempt: u32,
    /// The entry.
    pub entry: SharedEntry,
    /// The answer; `None` when the whole call failed.
    pub result: Option<EntryResult>,
}

impl Deref for Seen {
    type Target = Entry;
    fn deref(&self) -> &Entry {
        &self.entry
    }
}

impl Seen {
    /// Whether SQS (the fake, or the transport behind it) accepted it.
    pub fn sent(&self) -> bool {
        matches!(self.result, Some(EntryResult::Sent { .. }))
    }

    /// The value of attribute `name`.
    pub fn attribute(&self, name: &str) -> Option<&AttributeValue> {
        self.entry
            .attributes
            .iter()
            .find(|a| a.name == name)
            .map(|a| &a.value)
    }

    /// The value of `String` or `Number` attribute `name`.
    pub fn string(&self, name: &str) -> Option<&str> {
        match self.attribute(name) {
            Some(AttributeValue::String(s)) | Some(AttributeValue::Number(s)) => Some(s),
            _ => None,
        }
    }
}

/// One answered call.
#[derive(Debug, Clone)]
pub struct Call {
    /// Its number, from 0, in the order calls started.
    pub number: usize,
    /// Its entries, in request order.
    pub entries: Vec<Seen>,
    /// The whole call's error, if it failed.
    pub error: Option<CallError>,
}

impl FakeSqs {
    /// Calls started so far (answered, failed, stalled or in flight).
    pub fn call_count(&self) -> usize {
        self.counters.started.load(Ordering::SeqCst)
    }

    /// Probes answered ([`Transport::probe`](crate::call::transport::Transport::probe)).
    pub fn probe_count(&self) -> usize {
        self.counters.probes.load(Ordering::SeqCst)
    }

    /// Calls started and not answered yet.
    pub fn in_flight(&self) -> usize {
        self.counters.in_flight.load(Ordering::SeqCst)
    }

    /// The most calls in flight at once so far.
    pub fn max_in_flight(&self) -> usize {
        self.counters.max_in_flight.load(Ordering::SeqCst)
    }

    /// The answered calls, by call number.
    pub fn calls(&self) -> Vec<Call> {
        let mut calls = lock(&self.state).calls.clone();
        calls.sort_by_key(|c| c.number);
        calls
    }

    /// Every entry of every answered call, in the order calls were answered.
    pub fn seen(&self) -> Vec<Seen> {
        let state = lock(&self.state);
        state
            .calls
            .iter()
            .flat_map(|c| c.entries.iter().cloned())
            .collect()
    }

    /// The entries accepted, in the order calls were answered.
    pub fn accepted(&self) -> Vec<Seen> {
        self.seen().into_iter().filter(Seen::sent).collect()
    }

    /// The bodies accepted, in the order calls were answered.
    pub fn accepted_bodies(&self) -> Vec<String> {
        self.accepted()
            .into_iter()
            .map(|s| s.body.clone())
            .collect()
    }

    /// Entries accepted so far.
    pub fn sent(&self) -> usize {
        let state = lock(&self.state);
        state
            .calls
            .iter()
            .flat_map(|c| &c.entries)
            .filter(|s| s.sent())
            .count()
    }

    /// Forgets the record, the attempts and the counts (not the rules).
    pub fn clear(&self) {
        *lock(&self.state) = State::default();
        self.counters.started.store(0, Ordering::SeqCst);
        self.counters.max_in_flight.store(0, Ordering::SeqCst);
    }
}
