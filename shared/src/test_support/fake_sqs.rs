//! [`FakeSqs`]: the one scriptable fake SQS of this workspace's tests.
//!
//! By default it accepts every entry (message id `m-{call}-{id}`) at once.
//! Rules change that, and compose (the rule added last is asked first):
//!
//! * entries: [`FakeSqs::answer`] / [`FakeSqs::fail_where`] /
//!   [`FakeSqs::fail_first`] pick entries by call number, entry id, body,
//!   attempt (per body, from 1) or any predicate, and fail them with a chosen
//!   code, message and sender-fault flag ([`Reply`]);
//! * whole calls: [`FakeSqs::fail_calls`] answers a call with a
//!   [`CallError`] ([`throttled`], [`transient`], [`permanent`],
//!   [`too_long`]); [`FakeSqs::stall_from_call`] never answers;
//! * time: [`FakeSqs::delay`] / [`FakeSqs::delay_with`] answer late (Tokio's
//!   clock: free in paused tests); [`FakeSqs::before_call`] runs a hook
//!   before a given call (close a connection, stop a broker);
//! * [`FakeSqs::in_front_of`] sends what the rules accept through another
//!   transport (the local SQS) instead of accepting it itself.
//!
//! Every answered call is recorded ([`FakeSqs::calls`]: entries, bodies,
//! attributes, group and deduplication ids, attempts, answers, the call's
//! error), and calls are counted as they start, with those in flight.
//! Call numbers count from 0, in the order calls start.
//!
//! The fake's parts, a file each: `script.rs` what a test scripts it with
//! ([`Reply`], [`Attempt`], the whole-call errors), `answer.rs` how it
//! answers a call by those rules, `record.rs` what it keeps of each call
//! ([`Call`], [`Seen`]) and the test's questions about it.

mod answer;
mod record;
mod script;

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::call::transport::{BoxFuture, CallError, Transport};

pub use record::{Call, Seen};
pub use script::{Attempt, Reply, permanent, throttled, too_long, transient};

type EntryRule = dyn Fn(&Attempt<'_>) -> Option<Reply> + Send + Sync;
type CallRule = dyn Fn(usize) -> Option<CallError> + Send + Sync;
type DelayRule = dyn Fn(usize) -> Duration + Send + Sync;
type MessageIdRule = dyn Fn(usize, &str) -> String + Send + Sync;
type Hook = dyn Fn() -> BoxFuture<'static, ()> + Send + Sync;
type ProbeRule = dyn Fn(usize) -> Result<(), crate::send::outcome::Failure> + Send + Sync;

#[derive(Default)]
struct State {
    /// Attempts per body, keyed by the body's hash (a copy of every body
    /// would double a large test's memory).
    attempts: HashMap<u64, u32>,
    /// In the order they were answered.
    calls: Vec<Call>,
}

#[derive(Default)]
struct Counters {
    started: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    probes: AtomicUsize,
}

/// The scriptable fake SQS; see the [module](self). Clones share the rules,
/// the record and the counters: keep one, give one to the forwarder.
#[derive(Clone)]
pub struct FakeSqs {
    entry_rules: Vec<Arc<EntryRule>>,
    call_rules: Vec<Arc<CallRule>>,
    delay: Option<Arc<DelayRule>>,
    stall_from: Option<usize>,
    hooks: Vec<(usize, Arc<Hook>)>,
    message_id: Option<Arc<MessageIdRule>>,
    probe: Option<Arc<ProbeRule>>,
    behind: Option<Arc<dyn Transport>>,
    state: Arc<Mutex<State>>,
    counters: Arc<Counters>,
}

impl Default for FakeSqs {
    fn default() -> Self {
        FakeSqs::new()
    }
}

impl std::fmt::Debug for FakeSqs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeSqs")
            .field("calls", &self.call_count())
            .field("in_flight", &self.in_flight())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding the lock has failed already.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl FakeSqs {
    /// Accepts every entry, at once.
    pub fn new() -> Self {
        FakeSqs {
            entry_rules: Vec::new(),
            call_rules: Vec::new(),
            delay: None,
            stall_from: None,
            hooks: Vec::new(),
            message_id: None,
            probe: None,
            behind: None,
            state: Arc::default(),
            counters: Arc::default(),
        }
    }

    /// Sends the entries the rules accept through `transport` (the real SQS)
    /// and records its answers.
    pub fn in_front_of(transport: impl Transport + 'static) -> Self {
        FakeSqs {
            behind: Some(Arc::new(transport)),
            ..FakeSqs::new()
        }
    }

    /// Answers entries with `rule` (`None`: leave it to the earlier rules,
    /// and in the end accept).
    pub fn answer(
        mut self,
        rule: impl Fn(&Attempt<'_>) -> Option<Reply> + Send + Sync + 'static,
    ) -> Self {
        self.entry_rules.push(Arc::new(rule));
        self
    }

    /// Answers the entries `pick` picks with `reply`.
    pub fn fail_where(
        self,
        pick: impl Fn(&Attempt<'_>) -> bool + Send + Sync + 'static,
        reply: Reply,
    ) -> Self {
        self.answer(move |a| pick(a).then(|| reply.clone()))
    }

    /// Answers the first `times` attempts of `body` with `reply`.
    pub fn fail_first(self, body: impl Into<String>, times: u32, reply: Reply) -> Self {
        let body = body.into();
        self.fail_where(move |a| a.body() == body && a.attempt <= times, reply)
    }

    /// Fails whole calls: `rule(call)` returns the error, or `None`.
    pub fn fail_calls(
        mut self,
        rule: impl Fn(usize) -> Option<CallError> + Send + Sync + 'static,
    ) -> Self {
        self.call_rules.push(Arc::new(rule));
        self
    }

    /// Answers every call `delay` late.
    pub fn delay(self, delay: Duration) -> Self {
        self.delay_with(move |_| delay)
    }

    /// Answers call `n` `delay(n)` late.
    pub fn delay_with(mut self, delay: impl Fn(usize) -> Duration + Send + Sync + 'static) -> Self {
        self.delay = Some(Arc::new(delay));
        self
    }

    /// Never answers call `call` or any later one (the caller's deadline has
    /// to end them). Such calls are counted, not recorded.
    pub fn stall_from_call(mut self, call: usize) -> Self {
        self.stall_from = Some(call);
        self
    }

    /// Runs `hook` when call `call` starts, before anything else.
    pub fn before_call(
        mut self,
        call: usize,
        hook: impl Fn() -> BoxFuture<'static, ()> + Send + Sync + 'static,
    ) -> Self {
        self.hooks.push((call, Arc::new(hook)));
        self
    }

    /// Answers [`Transport::probe`] with `rule(probe number)` (from 0);
    /// without it a probe is answered `Ok`, or by the transport behind.
    pub fn probe_with(
        mut self,
        rule: impl Fn(usize) -> Result<(), crate::send::outcome::Failure> + Send + Sync + 'static,
    ) -> Self {
        self.probe = Some(Arc::new(rule));
        self
    }

    /// Message ids for accepted entries: `id(call, entry id)`.
    pub fn message_ids(
        mut self,
        id: impl Fn(usize, &str) -> String + Send + Sync + 'static,
    ) -> Self {
        self.message_id = Some(Arc::new(id));
        self
    }
}

#[cfg(test)]
mod tests;
