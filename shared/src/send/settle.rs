//! A call's answer into outcomes and retries.
//!
//! Entries SQS accepted are settled `Sent`; failed ones are retried when a
//! retry can help and the budget and deadline allow, all of a call's retried
//! entries at one time (so they go out together, in as few calls as before);
//! `BatchRequestTooLong` splits the batch without costing an attempt.

use tokio::time::Instant;

use super::MIN_CALL_TIME;
use super::group_state::{BlockedBy, group_blocked};
use super::run::Run;
use super::slot::{Batch, CallResult, Slot};
use crate::call::transport::{CallError, EntryResult, Transport};
use crate::observe::metrics as m;
use crate::send::outcome::{Failure, MessageOutcome, Outcome};

impl<T: Transport, P, F: FnMut(MessageOutcome<P>)> Run<'_, T, P, F> {
    /// Settle a call's entries; the retry time if any entry is retried.
    pub(super) fn settle(&mut self, batch: Batch<P>, result: CallResult) -> Option<Instant> {
        let n = batch.len();
        // A batch goes to one target.
        let fwd = batch
            .first()
            .and_then(|(_, s)| self.targets.get(s.target))?;
        // One retry time per call: the entries a call failed go out again
        // together, in as few calls as before, not one call each.
        let most = batch.iter().map(|(_, s)| s.attempts).max().unwrap_or(1);
        let at = Instant::now() + fwd.settings.retry.backoff(most);
        let mut retried = false;
        match result {
            Ok(results) => {
                // Ids are the read indexes the call was made with; a call
                // carries at most ten, so a list beats a map.
                let mut by_id: Vec<(usize, EntryResult)> = results
                    .into_iter()
                    .filter_map(|(id, r)| id.parse().ok().map(|i| (i, r)))
                    .collect();
                let mut failed_groups: Vec<String> = Vec::new();
                for (index, slot) in batch {
                    let result = by_id
                        .iter()
                        .position(|(id, _)| *id == index)
                        .map(|i| by_id.swap_remove(i).1);
                    match result {
                        Some(EntryResult::Sent {
                            message_id,
                            sequence_number,
                        }) => {
                            if let Some(g) = &slot.entry.group_id
                                && failed_groups.iter().any(|fg| fg == g)
                            {
                                m::order_inversion();
                                tracing::warn!(group = %g, index, "a later message of a FIFO group was accepted while an earlier one failed in the same call: the group's order may be broken (FIFO_ORDER=batched)");
                            }
                            m::bytes_sent(slot.entry.size);
                            let calls = slot.calls;
                            let outcome = Outcome::Sent {
                                message_id,
                                sequence_number,
                            };
                            self.settle_slot(slot, outcome, calls);
                        }
                        Some(EntryResult::Failed {
                            code,
                            message,
                            sender_fault,
                        }) => {
                            let failure = EntryResult::failure(&code, &message, sender_fault);
                            if fwd.rules.fifo
                                && failure.retryable
                                && let Some(g) = &slot.entry.group_id
                            {
                                failed_groups.push(g.clone());
                            }
                            retried |= self.retry_or_settle(index, slot, failure, at);
                        }
                        None => {
                            let failure = Failure::transient(
                                crate::send::codes::MISSING_RESULT,
                                "SQS's answer did not mention this entry",
                            );
                            retried |= self.retry_or_settle(index, slot, failure, at);
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
                            crate::send::codes::BATCH_REQUEST_TOO_LONG,
                            format!("SQS rejected the message alone as too long: {message}"),
                        );
                        let calls = slot.calls;
                        self.settle_slot(slot, Outcome::Failed(failure), calls);
                    } else {
                        slot.max_batch = (n / 2).max(1);
                        self.pending[slot.target].insert(index, slot);
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
                    retried |= self.retry_or_settle(index, slot, failure.clone(), at);
                }
            }
        }
        retried.then_some(at)
    }

    /// Put a failed entry back for a retry at `at`, or settle it failed when
    /// a retry cannot help or the budget or the deadline does not allow one.
    fn retry_or_settle(
        &mut self,
        index: usize,
        mut slot: Slot<P>,
        failure: Failure,
        at: Instant,
    ) -> bool {
        let attempts = slot.attempts;
        let fwd = &self.targets[slot.target];
        if !failure.retryable {
            self.settle_slot(slot, Outcome::Failed(failure), attempts);
            return false;
        }
        let why = if attempts >= fwd.settings.retry.max_attempts {
            Some(format!("gave up after {attempts} attempts"))
        } else if self.deadline.is_some_and(|d| at + MIN_CALL_TIME > d) {
            Some("no time left before the deadline to retry".to_owned())
        } else {
            None
        };
        if let Some(why) = why {
            let failure = Failure {
                message: format!("{} ({why})", failure.message),
                ..failure
            };
            let (target, group) = (slot.target, slot.entry.group_id.clone());
            self.settle_slot(slot, Outcome::Failed(failure), attempts);
            self.block_group(target, index, group.as_deref(), BlockedBy::Failed);
            return false;
        }
        if fwd.rules.fifo
            && let Some(g) = slot.entry.group_id.as_deref()
            && let Some(by) = self.groups[slot.target].blocked(g)
        {
            // An earlier message of its group gave up meanwhile (in this
            // same call): a retry would overtake it.
            let failure = group_blocked(g, by);
            self.settle_slot(slot, Outcome::Failed(failure), attempts);
            return false;
        }
        m::retry();
        slot.not_before = at;
        self.pending[slot.target].insert(index, slot);
        true
    }
}
