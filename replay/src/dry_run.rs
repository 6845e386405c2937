//! `--dry-run`: everything a replay does up to the send, nothing after it.
//!
//! The entries are read, the ranges read back from the stream and mapped by
//! the functions' own code (the routing rules included), with each target
//! queue's real limits and rules; the `SendMessageBatch` calls and the
//! offload puts go to one set of counters per target queue instead
//! ([`router`], [`Targets`]). Nothing is sent, stored or deleted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sqs_forwarder::call::transport::{BatchItem, BoxFuture, CallError, EntryResult};
use sqs_forwarder::route::{Router, TargetCount};
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

/// What a dry run would have sent to each target queue, in the order met.
#[derive(Debug, Default)]
pub struct Targets {
    targets: Vec<Target>,
}

/// One target queue's counts.
#[derive(Debug)]
struct Target {
    /// `default`, or its name in the routing rules.
    name: String,
    queue: String,
    counts: Arc<Counts>,
}

impl Targets {
    /// The counts of `queue`, made on first use under `name`.
    fn counts(&mut self, name: &str, queue: &str) -> Arc<Counts> {
        if let Some(t) = self.targets.iter().find(|t| t.queue == queue) {
            return t.counts.clone();
        }
        let counts = Arc::new(Counts::default());
        self.targets.push(Target {
            name: name.to_owned(),
            queue: queue.to_owned(),
            counts: counts.clone(),
        });
        counts
    }

    /// One line per target queue: what would have been sent to it.
    pub fn lines(&self) -> Vec<String> {
        self.targets
            .iter()
            .map(|t| {
                let offloaded = t.counts.offloaded();
                format!(
                    "would send to {} ({}): {} messages{}",
                    t.name,
                    t.queue,
                    t.counts.messages(),
                    if offloaded > 0 {
                        format!(" ({offloaded} payloads offloaded to S3)")
                    } else {
                        String::new()
                    }
                )
            })
            .collect()
    }

    /// Messages and offloaded payloads, all targets together.
    pub fn totals(&self) -> (u64, u64) {
        self.targets.iter().fold((0, 0), |(m, o), t| {
            (m + t.counts.messages(), o + t.counts.offloaded())
        })
    }
}

/// A router with `real`'s rules, and each target's limits and rules, that
/// counts instead of sending, per target queue (`default_queue`: the
/// default target's, as the operator gave it); `offload_bucket`: the bucket
/// pointers would name.
pub fn router<T: Transport>(
    real: &Router<T>,
    default_queue: &str,
    offload_bucket: Option<&str>,
    targets: &mut Targets,
) -> Result<Router<Counting>, TargetCount> {
    let names: Vec<(&str, &str)> = std::iter::once(("default", default_queue))
        .chain(real.routes().into_iter().flat_map(|r| {
            r.targets()
                .iter()
                .map(|(name, url)| (name.as_str(), url.as_str()))
        }))
        .collect();
    let mut counting: Vec<Forwarder<Counting>> = real
        .targets()
        .iter()
        .zip(&names)
        .map(|(f, (name, queue))| forwarder(f, offload_bucket, targets.counts(name, queue)))
        .collect();
    // A router always has its default target first.
    let default = if counting.is_empty() {
        let counts = targets.counts("default", default_queue);
        forwarder(real.default_target(), offload_bucket, counts)
    } else {
        counting.remove(0)
    };
    let rest = counting;
    match real.routes() {
        Some(routes) => Router::new(routes.clone(), default, rest),
        None => Ok(Router::single(default)),
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
