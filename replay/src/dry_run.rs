//! `--dry-run`: everything a replay does up to the send, nothing after it.
//!
//! The entries are read, the ranges read back from the stream and mapped by
//! the functions' own code, with the real queue's limits and rules; the
//! `SendMessageBatch` calls and the offload puts go to these counters
//! instead. Nothing is sent, stored or deleted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sqs_forwarder::call::transport::{BatchItem, BoxFuture, CallError, EntryResult};
use sqs_forwarder::{Failure, Forwarder, PayloadStore, Transport};

/// What a dry run would have sent.
#[derive(Debug, Default)]
pub struct Counts {
    messages: AtomicU64,
    offloaded: AtomicU64,
}

impl Counts {
    /// Messages that would have gone to SQS.
    pub fn messages(&self) -> u64 {
        self.messages.load(Ordering::SeqCst)
    }

    /// Payloads that would have gone to S3 (`OVERSIZE_POLICY=offload`).
    pub fn offloaded(&self) -> u64 {
        self.offloaded.load(Ordering::SeqCst)
    }
}

/// A transport that accepts every entry and only counts it.
#[derive(Debug, Clone, Default)]
pub struct Counting(pub Arc<Counts>);

impl Transport for Counting {
    fn send_batch<'a>(
        &'a self,
        items: &'a [BatchItem],
    ) -> BoxFuture<'a, Result<Vec<(String, EntryResult)>, CallError>> {
        Box::pin(async move {
            self.0
                .messages
                .fetch_add(items.len() as u64, Ordering::SeqCst);
            Ok(items
                .iter()
                .map(|i| {
                    let sent = EntryResult::Sent {
                        message_id: format!("dry-run-{}", i.id),
                        sequence_number: None,
                    };
                    (i.id.clone(), sent)
                })
                .collect())
        })
    }
}

/// A payload store that stores nothing and counts.
#[derive(Debug)]
struct CountingStore {
    bucket: String,
    counts: Arc<Counts>,
}

impl PayloadStore for CountingStore {
    fn bucket(&self) -> &str {
        &self.bucket
    }

    fn put<'a>(&'a self, _key: &'a str, _payload: String) -> BoxFuture<'a, Result<(), Failure>> {
        Box::pin(async move {
            self.counts.offloaded.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    }
}

/// A forwarder with `real`'s limits and rules that counts instead of
/// sending; `offload_bucket`: the bucket pointers would name.
pub fn forwarder<T: Transport>(
    real: &Forwarder<T>,
    offload_bucket: Option<&str>,
    counts: Arc<Counts>,
) -> Forwarder<Counting> {
    let f = Forwarder::new(
        Counting(counts.clone()),
        real.settings().clone(),
        real.rules().clone(),
    );
    match offload_bucket {
        Some(bucket) => f.with_payload_store(CountingStore {
            bucket: bucket.to_owned(),
            counts,
        }),
        None => f,
    }
}
