//! A Step Functions Distributed Map batch forwarded: each item one message,
//! shaped and routed by the same rules (`ROUTES`) as a line in lines mode,
//! and the answer the map counts.
//!
//! An item is a record whose data is its value (a JSON-lines line parsed,
//! or a CSV row as an object of header to value) and whose source keys are
//! the object's bucket and key and the event name `DistributedMap`. Its
//! message carries the attributes a line's does, the item's index (from 0)
//! in place of the line number, and on FIFO targets ids made as a line's
//! are: the group by `GROUP_BY`, the deduplication id from the object and
//! the index, so a retried batch (the map's `Retry`, a redriven execution)
//! re-sends the same ids and SQS drops the copies.
//!
//! The answer: every item reached SQS, or was dropped by `OVERSIZE_POLICY`
//! or sent nowhere by the rules: the batch succeeds with its [`Report`].
//! Otherwise the invocation fails naming the items that did not
//! ([`ItemsNotForwarded`]), so that the map's `Retry` and its
//! `ToleratedFailurePercentage` count the batch, and only that batch, as
//! failed.

use std::fmt;

use serde::Serialize;
use sqs_forwarder::route::Router;
use sqs_forwarder::{Failure, Message, Outcome, Transport};
use tokio::time::Instant;

use crate::event::{MapBatch, MapItem, ObjectEvent};
use crate::handler::{HandlerError, Report};
use crate::messages::{Fifo, part_message};
use crate::routing::{Ruled, Skipped, plan, send_all};
use crate::settings::GroupBy;

/// Attribute with the item's index in the object, from 0 (Distributed Map
/// batches; lines mode's `line` in its place).
pub const ATTR_ITEM: &str = "item";

/// The object a batch's items came from, and which items: in the answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchObject {
    /// The bucket.
    pub bucket: String,
    /// The key.
    pub key: String,
    /// The lowest item index in the batch.
    pub first_index: Option<u64>,
    /// The highest item index in the batch.
    pub last_index: Option<u64>,
}

/// An item that did not reach SQS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemFailure {
    /// The item's index in the object.
    pub index: u64,
    /// Why.
    pub failure: Failure,
}

/// Why a batch fails: some of its items did not reach SQS.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct ItemsNotForwarded {
    /// `s3://bucket/key`.
    pub location: String,
    /// Items that failed, counted.
    pub failed: u64,
    /// The first few failures, in the batch's order.
    pub failures: Vec<ItemFailure>,
    /// Whether any failure was retryable (a retry of the batch could help).
    pub retryable: bool,
    /// What did get through.
    pub report: Report,
}

/// Failures named in an error message; the rest are counted.
const NAMED_FAILURES: usize = 10;

impl ItemsNotForwarded {
    /// The Lambda error type: `S3ToSqs.NotForwarded` when a retry of the
    /// batch could help (a throttled or unavailable queue, the deadline),
    /// `S3ToSqs.NotForwardable` when none of its failures can succeed on a
    /// retry (a shape fault, a message too large for the queue), so that
    /// the state machine's `Retry` can leave it alone.
    pub fn error_type(&self) -> &'static str {
        if self.retryable {
            "S3ToSqs.NotForwarded"
        } else {
            "S3ToSqs.NotForwardable"
        }
    }

    fn describe(&self) -> String {
        let mut s = format!(
            "{} of {} items of {} (a Distributed Map batch) were not forwarded to SQS",
            self.failed, self.report.records, self.location
        );
        for (i, f) in self.failures.iter().enumerate() {
            s.push_str(if i == 0 { ": " } else { "; " });
            s.push_str(&f.to_string());
        }
        let more = self.failed.saturating_sub(self.failures.len() as u64);
        if more > 0 {
            s.push_str(&format!("; and {more} more"));
        }
        s
    }
}

impl fmt::Display for ItemFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "item {}: {}", self.index, self.failure)
    }
}

/// Where an item's message came from, and what the rules made of it.
#[derive(Debug, Clone, Copy)]
struct ItemPosition {
    index: u64,
    ruled: Ruled,
}

/// The message for one item: its value as the body; `bucket`, `key` (when
/// it is valid SQS text) and `item` (Number) as attributes; on FIFO
/// targets the group by `GROUP_BY` and a deduplication id from bucket, key,
/// version id (`null` when none), ETag (empty when the batch gives none)
/// and `item-<index>`: the same for every retry of the batch, different
/// from the line ids lines mode gives the same object.
pub fn item_message(object: &ObjectEvent, fifo: Fifo, item: MapItem) -> Message<u64> {
    let etag = object.etag.as_deref().unwrap_or("");
    part_message(
        object, fifo, item.body, ATTR_ITEM, item.index, etag, "item-",
    )
}

/// Forward every item of `batch` where `router`'s rules say (without rules:
/// to its one queue) before `deadline`, and answer for the batch.
pub(crate) async fn forward_batch<T: Transport>(
    router: &Router<T>,
    group_by: GroupBy,
    batch: MapBatch,
    deadline: Option<Instant>,
) -> Result<Report, HandlerError> {
    let fifo = Fifo {
        enabled: router.any_fifo(),
        group_by,
    };
    let MapBatch { object, items } = batch;
    let routes = router.routes();
    let mut report = Report {
        records: items.len(),
        map_batch: Some(BatchObject {
            bucket: object.bucket.clone(),
            key: object.key.clone(),
            first_index: items.iter().map(|i| i.index).min(),
            last_index: items.iter().map(|i| i.index).max(),
        }),
        ..Report::default()
    };
    let routed = items
        .into_iter()
        .map(|item| {
            let plan = plan(routes, &object, item.body.as_bytes());
            let ruled = Ruled::of(plan.as_ref());
            let message = item_message(&object, fifo, item);
            router.route(
                plan,
                message.map_position(|index| ItemPosition { index, ruled }),
            )
        })
        .collect();
    let outcomes = send_all(router, routed, deadline).await;
    let mut skipped = Skipped::default();
    let mut failed = 0u64;
    let mut failures = Vec::new();
    let mut retryable = false;
    for o in outcomes {
        match (o.outcome, o.position.ruled) {
            (Outcome::Dropped { .. }, Ruled::Skipped(reason)) => skipped.count(reason),
            (Outcome::Sent { .. }, _) => report.messages_sent += 1,
            (Outcome::Dropped { .. }, _) => report.messages_dropped += 1,
            (Outcome::Failed(failure), _) => {
                failed += 1;
                retryable |= failure.retryable;
                if failures.len() < NAMED_FAILURES {
                    failures.push(ItemFailure {
                        index: o.position.index,
                        failure,
                    });
                }
            }
        }
    }
    report.routes_filtered_out = skipped.filtered_out;
    report.routes_unmatched = skipped.unmatched;
    tracing::info!(
        bucket = %object.bucket,
        key = %object.key,
        items = report.records,
        messages_sent = report.messages_sent,
        messages_dropped = report.messages_dropped,
        routes_filtered_out = report.routes_filtered_out,
        routes_unmatched = report.routes_unmatched,
        failed_items = failed,
        "Distributed Map batch handled"
    );
    if failed == 0 {
        Ok(report)
    } else {
        Err(HandlerError::Items(ItemsNotForwarded {
            location: object.location(),
            failed,
            failures,
            retryable,
            report,
        }))
    }
}

#[cfg(test)]
mod tests;
