//! Offload staging: a payload too large for the queue (or above the offload
//! threshold) goes to S3 before its pointer entry can be sent.
//!
//! The pointer entry takes the message's place in the window at once, not
//! ready to send, so the packer keeps the message's FIFO group behind it;
//! the payload waits for one of `max_in_flight` puts, each within the call
//! timeout and the deadline. A stored payload makes the pointer ready; a
//! failed put fails its message, retryable, and in a FIFO group the group's
//! later messages then wait for the source to deliver it again
//! (`GroupBlocked`).

use tokio::time::Instant;

use super::group_state::BlockedBy;
use super::run::Run;
use super::slot::{Done, Put, Staging};
use super::{Forwarder, MIN_CALL_TIME};
use crate::call::transport::Transport;
use crate::message::encode::Entry;
use crate::observe::metrics as m;
use crate::send::offload;
use crate::send::outcome::{Failure, MessageOutcome, Outcome};

impl<T: Transport, P, F: FnMut(MessageOutcome<P>)> Run<'_, T, P, F> {
    /// Stage a message for offload: its pointer holds its place, its
    /// payload waits for a put.
    pub(super) fn stage(&mut self, target: usize, index: usize, position: P, mut entry: Entry) {
        let fwd = &self.targets[target];
        let Some(store) = fwd.store.as_deref() else {
            let failure = Failure::transient(
                crate::send::codes::OFFLOAD_NOT_CONFIGURED,
                "OVERSIZE_POLICY is offload but the forwarder has no payload store (OFFLOAD_BUCKET)",
            );
            return self.report(position, Outcome::Failed(failure), 0);
        };
        let limit = fwd.settings.limits.largest_message();
        let settings = &fwd.settings.offload;
        let key = offload::new_key(&settings.key_prefix);
        let pointer = offload::pointer_entry(&entry, store.bucket(), &key, settings.size_attribute)
            .and_then(|pointer| {
                if pointer.size > limit {
                    Err(Failure::permanent(
                        crate::send::codes::MESSAGE_TOO_LARGE,
                        format!(
                            "even offloaded to S3 the message is {} bytes (the pointer and its attributes); the limit is {limit} bytes",
                            pointer.size
                        ),
                    ))
                } else {
                    Ok(pointer)
                }
            });
        let pointer = match pointer {
            Ok(pointer) => pointer,
            Err(failure) => {
                let group = entry.group_id.take();
                return self.offload_failed(target, index, position, group, failure);
            }
        };
        let payload = std::mem::take(&mut entry.body);
        let bytes = payload.len() + pointer.size;
        let mut slot = self.slot(target, pointer, position, bytes);
        slot.staging = Staging::Queued;
        self.hold(index, slot);
        self.queued.push_back(Put {
            target,
            index,
            key,
            payload,
        });
    }

    /// A put finished: the pointer is ready, or the message fails.
    pub(super) fn stored(
        &mut self,
        target: usize,
        index: usize,
        bytes: usize,
        result: Result<(), Failure>,
    ) {
        // Gone already: settled by the deadline or its group's block.
        let Some(slot) = self.pending.get_mut(target).and_then(|p| p.get_mut(&index)) else {
            return;
        };
        match result {
            Ok(()) => {
                m::payload_offloaded(bytes);
                slot.staging = Staging::Done;
                slot.bytes = slot.bytes.saturating_sub(bytes);
                self.shrink(bytes);
            }
            Err(failure) => {
                if let Some(slot) = self.pending[target].remove(&index) {
                    let group = slot.entry.group_id.clone();
                    self.settle_slot(slot, Outcome::Failed(failure.clone()), 0);
                    self.log_and_block(target, index, group, &failure);
                }
            }
        }
    }

    /// A message could not be offloaded before it was held.
    fn offload_failed(
        &mut self,
        target: usize,
        index: usize,
        position: P,
        group: Option<String>,
        failure: Failure,
    ) {
        self.report(position, Outcome::Failed(failure.clone()), 0);
        self.log_and_block(target, index, group, &failure);
    }

    fn log_and_block(
        &mut self,
        target: usize,
        index: usize,
        group: Option<String>,
        failure: &Failure,
    ) {
        tracing::warn!(
            index,
            code = %failure.code,
            message = %failure.message,
            retryable = failure.retryable,
            "a payload could not be offloaded to S3"
        );
        if failure.retryable {
            self.block_group(target, index, group.as_deref(), BlockedBy::Offload);
        }
    }
}

impl<T: Transport> Forwarder<T> {
    /// Store one payload, within the call timeout and the deadline.
    pub(super) async fn put<P>(&self, put: Put, deadline: Option<Instant>) -> Done<P> {
        let Put {
            index,
            key,
            target,
            payload,
        } = put;
        let bytes = payload.len();
        let result = self.put_payload(&key, payload, deadline).await;
        Done::Put {
            target,
            index,
            bytes,
            result,
        }
    }

    async fn put_payload(
        &self,
        key: &str,
        payload: String,
        deadline: Option<Instant>,
    ) -> Result<(), Failure> {
        let Some(store) = self.store.as_deref() else {
            return Err(Failure::transient(
                crate::send::codes::OFFLOAD_NOT_CONFIGURED,
                "OVERSIZE_POLICY is offload but the forwarder has no payload store (OFFLOAD_BUCKET)",
            ));
        };
        let now = Instant::now();
        let timeout = match deadline {
            Some(d) if d.saturating_duration_since(now) < MIN_CALL_TIME => {
                return Err(Failure::transient(
                    crate::send::codes::DEADLINE_EXCEEDED,
                    "the invocation's deadline came before this message could be offloaded to S3",
                ));
            }
            Some(d) => self
                .settings
                .call_timeout
                .min(d.saturating_duration_since(now)),
            None => self.settings.call_timeout,
        };
        match tokio::time::timeout(timeout, store.put(key, payload)).await {
            Ok(result) => result,
            Err(_) => Err(Failure::transient(
                crate::send::codes::OFFLOAD_FAILED,
                format!("no answer to PutObject within {} ms", timeout.as_millis()),
            )),
        }
    }
}
