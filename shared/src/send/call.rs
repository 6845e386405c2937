//! One `SendMessageBatch` call, within its timeout: the entries of a batch go
//! to the transport under their read index as the request-unique id, and the
//! batch comes back with the answer for [`settle`](super::settle).

use std::sync::Arc;

use super::Forwarder;
use super::slot::{Batch, Done};
use crate::call::transport::{BatchItem, CallError, Transport};
use crate::observe::metrics as m;
use crate::send::outcome::Failure;

impl<T: Transport> Forwarder<T> {
    /// One `SendMessageBatch` call, within `timeout`.
    pub(super) async fn call<P>(&self, batch: Batch<P>, timeout: std::time::Duration) -> Done<P> {
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
                crate::send::codes::TIMEOUT,
                format!(
                    "no answer to SendMessageBatch within {} ms",
                    timeout.as_millis()
                ),
            ))),
        };
        Done::Call(batch, result)
    }
}
