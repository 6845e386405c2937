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

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::call::transport::{BatchItem, BoxFuture, CallError, EntryResult, Transport};
use crate::message::AttributeValue;
use crate::message::encode::{Entry, SharedEntry};
use crate::send::outcome::Failure;

/// What the fake answers for one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Accept it (or, [`FakeSqs::in_front_of`], send it on).
    Accept,
    /// List it under `Failed`.
    Fail {
        /// The SQS error code.
        code: Cow<'static, str>,
        /// The error's message (empty: the forwarder makes one up).
        message: Cow<'static, str>,
        /// SQS's `SenderFault` flag.
        sender_fault: bool,
    },
}

impl Reply {
    /// `InternalError`, not the sender's fault: retryable.
    pub const INTERNAL: Reply = Reply::fail_static("InternalError", false);
    /// `RequestThrottled`, flagged as the sender's fault: retryable.
    pub const THROTTLED: Reply = Reply::fail_static("RequestThrottled", true);
    /// `InvalidParameterValue`, the sender's fault: permanent.
    pub const INVALID: Reply = Reply::fail_static("InvalidParameterValue", true);

    const fn fail_static(code: &'static str, sender_fault: bool) -> Reply {
        Reply::Fail {
            code: Cow::Borrowed(code),
            message: Cow::Borrowed(""),
            sender_fault,
        }
    }

    /// A failure with this code and flag and no message.
    pub fn fail(code: impl Into<Cow<'static, str>>, sender_fault: bool) -> Reply {
        Reply::Fail {
            code: code.into(),
            message: Cow::Borrowed(""),
            sender_fault,
        }
    }

    /// The same failure with this message (no effect on [`Reply::Accept`]).
    pub fn with_message(self, text: impl Into<Cow<'static, str>>) -> Reply {
        match self {
            Reply::Fail {
                code, sender_fault, ..
            } => Reply::Fail {
                code,
                message: text.into(),
                sender_fault,
            },
            Reply::Accept => Reply::Accept,
        }
    }
}

/// A whole-call `ServiceUnavailable`-like failure: retryable.
pub fn transient(code: &str) -> CallError {
    CallError::Failed(Failure::transient(code, format!("{code} from the fake")))
}

/// A whole-call `RequestThrottled`: retryable.
pub fn throttled() -> CallError {
    CallError::Failed(Failure::transient("RequestThrottled", "slow down"))
}

/// A whole-call failure no retry fixes (`AccessDenied`, a missing queue).
pub fn permanent(code: &str) -> CallError {
    CallError::Failed(Failure::permanent(code, format!("{code} from the fake")))
}

/// `BatchRequestTooLong`: the forwarder splits the batch.
pub fn too_long() -> CallError {
    CallError::TooLong("the fake's batch limit".into())
}

/// One entry of a call, as the entry rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    /// The call's number, from 0.
    pub call: usize,
    /// The entry's id within the call.
    pub id: &'a str,
    /// The entry.
    pub entry: &'a Entry,
    /// How many times the fake has seen this body, this time included.
    pub attempt: u32,
}

impl Attempt<'_> {
    /// The entry's body.
    pub fn body(&self) -> &str {
        &self.entry.body
    }
}

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

type EntryRule = dyn Fn(&Attempt<'_>) -> Option<Reply> + Send + Sync;
type CallRule = dyn Fn(usize) -> Option<CallError> + Send + Sync;
type DelayRule = dyn Fn(usize) -> Duration + Send + Sync;
type MessageIdRule = dyn Fn(usize, &str) -> String + Send + Sync;
type Hook = dyn Fn() -> BoxFuture<'static, ()> + Send + Sync;

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

fn body_hash(body: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut h);
    h.finish()
}

/// Counts a call in flight until dropped (answered, or given up on).
struct InFlight<'a>(&'a Counters);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
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

    /// Message ids for accepted entries: `id(call, entry id)`.
    pub fn message_ids(
        mut self,
        id: impl Fn(usize, &str) -> String + Send + Sync + 'static,
    ) -> Self {
        self.message_id = Some(Arc::new(id));
        self
    }

    /// Calls started so far (answered, failed, stalled or in flight).
    pub fn call_count(&self) -> usize {
        self.counters.started.load(Ordering::SeqCst)
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

    fn reply(&self, attempt: &Attempt<'_>) -> Reply {
        self.entry_rules
            .iter()
            .rev()
            .find_map(|rule| rule(attempt))
            .unwrap_or(Reply::Accept)
    }

    fn message_id(&self, call: usize, id: &str) -> String {
        match &self.message_id {
            Some(rule) => rule(call, id),
            None => format!("m-{call}-{id}"),
        }
    }

    async fn answer_call(
        &self,
        call: usize,
        items: &[BatchItem],
    ) -> Result<Vec<(String, EntryResult)>, CallError> {
        if let Some((_, hook)) = self.hooks.iter().find(|(at, _)| *at == call) {
            hook().await;
        }
        if self.stall_from.is_some_and(|from| call >= from) {
            std::future::pending::<()>().await;
        }
        if let Some(delay) = &self.delay {
            let delay = delay(call);
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
        }
        if let Some(error) = self.call_rules.iter().rev().find_map(|rule| rule(call)) {
            let mut state = lock(&self.state);
            let entries = items
                .iter()
                .map(|item| Seen {
                    call,
                    id: item.id.clone(),
                    attempt: 0,
                    entry: Arc::clone(&item.entry),
                    result: None,
                })
                .collect();
            state.calls.push(Call {
                number: call,
                entries,
                error: Some(error.clone()),
            });
            return Err(error);
        }
        // Answer every entry, or pick those to send on.
        let mut entries = Vec::with_capacity(items.len());
        let mut pass = Vec::new();
        {
            let mut state = lock(&self.state);
            for item in items {
                let attempt = {
                    let n = state
                        .attempts
                        .entry(body_hash(&item.entry.body))
                        .or_default();
                    *n += 1;
                    *n
                };
                let reply = self.reply(&Attempt {
                    call,
                    id: &item.id,
                    entry: &item.entry,
                    attempt,
                });
                let result = match reply {
                    Reply::Accept if self.behind.is_some() => {
                        pass.push(item.clone());
                        None
                    }
                    Reply::Accept => Some(EntryResult::Sent {
                        message_id: self.message_id(call, &item.id),
                        sequence_number: None,
                    }),
                    Reply::Fail {
                        code,
                        message,
                        sender_fault,
                    } => Some(EntryResult::Failed {
                        code: code.into_owned(),
                        message: message.into_owned(),
                        sender_fault,
                    }),
                };
                entries.push(Seen {
                    call,
                    id: item.id.clone(),
                    attempt,
                    entry: Arc::clone(&item.entry),
                    result,
                });
            }
            if pass.is_empty() {
                // Recorded under the same lock: the record's order is the
                // order entries were accepted in.
                let answer = answer_of(&entries);
                state.calls.push(Call {
                    number: call,
                    entries,
                    error: None,
                });
                return Ok(answer);
            }
        }
        let mut error = None;
        if let Some(behind) = &self.behind {
            match behind.send_batch(&pass).await {
                Ok(results) => {
                    let results: HashMap<String, EntryResult> = results.into_iter().collect();
                    for seen in entries.iter_mut().filter(|s| s.result.is_none()) {
                        seen.result = results.get(&seen.id).cloned();
                    }
                }
                Err(e) => error = Some(e),
            }
        }
        let answer = answer_of(&entries);
        lock(&self.state).calls.push(Call {
            number: call,
            entries,
            error: error.clone(),
        });
        match error {
            Some(e) => Err(e),
            None => Ok(answer),
        }
    }
}

/// The answer for these entries: those with a result, by id.
fn answer_of(entries: &[Seen]) -> Vec<(String, EntryResult)> {
    entries
        .iter()
        .filter_map(|s| s.result.clone().map(|r| (s.id.clone(), r)))
        .collect()
}

impl Transport for FakeSqs {
    fn send_batch<'a>(
        &'a self,
        items: &'a [BatchItem],
    ) -> BoxFuture<'a, Result<Vec<(String, EntryResult)>, CallError>> {
        Box::pin(async move {
            let call = self.counters.started.fetch_add(1, Ordering::SeqCst);
            let now = self.counters.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.counters.max_in_flight.fetch_max(now, Ordering::SeqCst);
            let _in_flight = InFlight(&self.counters);
            self.answer_call(call, items).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Message;
    use crate::message::encode::{EncodeRules, prepare};

    fn items(bodies: &[&str]) -> Vec<BatchItem> {
        bodies
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let (_, e) = prepare(Message::new(*b, i), &EncodeRules::default());
                BatchItem {
                    id: i.to_string(),
                    entry: Arc::new(e.expect("valid")),
                }
            })
            .collect()
    }

    fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn accepts_everything_and_records_it() {
        let fake = FakeSqs::new();
        let out = block_on(fake.send_batch(&items(&["a", "b"]))).expect("answer");
        assert_eq!(
            out[1],
            (
                "1".into(),
                EntryResult::Sent {
                    message_id: "m-0-1".into(),
                    sequence_number: None
                }
            )
        );
        assert_eq!(fake.call_count(), 1);
        assert_eq!(fake.sent(), 2);
        assert_eq!(fake.accepted_bodies(), ["a", "b"]);
        assert_eq!(fake.in_flight(), 0);
        assert_eq!(fake.max_in_flight(), 1);
    }

    #[test]
    fn rules_fail_entries_and_calls_and_the_last_one_wins() {
        let fake = FakeSqs::new()
            .fail_where(|a| a.id == "0", Reply::INVALID)
            .fail_first("b", 1, Reply::INTERNAL.with_message("injected"))
            .fail_where(|a| a.call == 2, Reply::THROTTLED)
            .fail_calls(|call| (call == 1).then(throttled));
        let batch = items(&["a", "b"]);
        let first = block_on(fake.send_batch(&batch)).expect("answer");
        assert!(
            matches!(&first[0].1, EntryResult::Failed { code, sender_fault: true, .. } if code == "InvalidParameterValue")
        );
        assert!(
            matches!(&first[1].1, EntryResult::Failed { code, message, sender_fault: false } if code == "InternalError" && message == "injected")
        );
        assert_eq!(block_on(fake.send_batch(&batch)), Err(throttled()));
        let third = block_on(fake.send_batch(&batch)).expect("answer");
        assert!(
            matches!(&third[1].1, EntryResult::Failed { code, .. } if code == "RequestThrottled")
        );
        let fourth = block_on(fake.send_batch(&batch)).expect("answer");
        assert!(matches!(fourth[1].1, EntryResult::Sent { .. }));
        let calls = fake.calls();
        assert_eq!(calls.len(), 4);
        assert_eq!(calls[1].error, Some(throttled()));
        assert_eq!(
            calls[3].entries[1].attempt, 3,
            "a failed call is no attempt"
        );
        assert_eq!(fake.accepted_bodies(), ["b"]);
    }

    #[test]
    fn delays_count_calls_in_flight_and_stalls_never_answer() {
        block_on(async {
            let fake = FakeSqs::new()
                .delay(Duration::from_millis(10))
                .stall_from_call(2);
            let batch = items(&["a"]);
            let t0 = tokio::time::Instant::now();
            let (a, b) = tokio::join!(fake.send_batch(&batch), fake.send_batch(&batch));
            assert!(a.is_ok() && b.is_ok());
            assert_eq!(t0.elapsed(), Duration::from_millis(10));
            assert_eq!(fake.max_in_flight(), 2);
            let stalled =
                tokio::time::timeout(Duration::from_secs(60), fake.send_batch(&batch)).await;
            assert!(stalled.is_err(), "never answers");
            assert_eq!((fake.call_count(), fake.in_flight()), (3, 0));
            assert_eq!(fake.calls().len(), 2);
        });
    }

    #[test]
    fn in_front_of_sends_what_the_rules_accept_through() {
        let behind = FakeSqs::new().message_ids(|_, id| format!("real-{id}"));
        let fake =
            FakeSqs::in_front_of(behind.clone()).fail_where(|a| a.body() == "a", Reply::THROTTLED);
        let out = block_on(fake.send_batch(&items(&["a", "b"]))).expect("answer");
        assert_eq!(out.len(), 2);
        assert_eq!(behind.accepted_bodies(), ["b"]);
        assert!(
            matches!(&fake.accepted()[0].result, Some(EntryResult::Sent { message_id, .. }) if message_id == "real-1")
        );
    }
}
