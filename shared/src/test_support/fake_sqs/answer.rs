//! How the fake answers a call: its hooks, stall and delay first, then the
//! call rules, then each entry by the entry rules (accepted, failed, or sent
//! on to the transport behind it), every answer recorded.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::call::transport::{BatchItem, BoxFuture, CallError, EntryResult, Transport};

use super::record::{Call, Seen};
use super::script::{Attempt, Reply};
use super::{Counters, FakeSqs, lock};

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

    fn probe(&self) -> BoxFuture<'_, Result<(), crate::send::outcome::Failure>> {
        Box::pin(async move {
            let n = self.counters.probes.fetch_add(1, Ordering::SeqCst);
            match (&self.probe, &self.behind) {
                (Some(rule), _) => rule(n),
                (None, Some(behind)) => behind.probe().await,
                (None, None) => Ok(()),
            }
        })
    }
}
