//! What the routing rules (`ROUTES`) see of an S3 record, and sending a
//! chunk of routed records with their outcomes back in order.
//!
//! A record, for the rules, is an object event with some data: in
//! notification mode the notification's message body (its JSON), in lines
//! mode one line of the object. Its source keys are the object's bucket and
//! key and the event's name, the same for every line of an object. The
//! rules plan each record from this view before its message is routed
//! (lines: before the line moves into its message), and the plan's kind
//! rides in the message's position ([`Ruled`]), so the function's answer
//! counts a record the rules skipped as done, never as dropped by
//! `OVERSIZE_POLICY` or failed.

use std::borrow::Cow;

use sqs_forwarder::route::{Plan, RecordView, Router, Routes, Skip, SourceKey};
use sqs_forwarder::{Body, MessageOutcome, Routed, Transport};
use tokio::time::Instant;

use crate::event::ObjectEvent;

/// The source keys s3-to-sqs offers the routing rules.
pub const SOURCE_KEYS: &[SourceKey] = &[
    SourceKey::Bucket,
    SourceKey::ObjectKey,
    SourceKey::EventName,
];

/// What the rules see of one record: the event's keys and the record's
/// data.
pub(crate) struct View<'a> {
    /// The object event the record is about.
    pub(crate) event: &'a ObjectEvent,
    /// The notification's body, or the line.
    pub(crate) data: &'a [u8],
}

impl RecordView for View<'_> {
    fn data(&self) -> Option<&[u8]> {
        Some(self.data)
    }

    fn key(&self, key: SourceKey, _: Option<&str>) -> Option<Cow<'_, str>> {
        match key {
            SourceKey::Bucket => Some(Cow::Borrowed(&self.event.bucket)),
            SourceKey::ObjectKey => Some(Cow::Borrowed(&self.event.key)),
            SourceKey::EventName => Some(Cow::Borrowed(&self.event.event_name)),
            _ => None,
        }
    }
}

/// A body's bytes, as the rules read them.
pub(crate) fn body_bytes(body: &Body) -> &[u8] {
    match body {
        Body::Text(text) => text.as_bytes(),
        Body::Bytes(bytes) => bytes,
    }
}

/// The rules' plan for one record (`None` without rules).
pub(crate) fn plan(routes: Option<&Routes>, event: &ObjectEvent, data: &[u8]) -> Option<Plan> {
    routes.map(|r| r.plan(&View { event, data }))
}

/// What the rules made of a record before any queue saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ruled {
    /// Sent to a target (also: no rules).
    Target,
    /// Sent nowhere: filtered out, or unmatched and dropped. Done.
    Skipped(Skip),
    /// Could not be shaped as the rules say (`ShapeFailed`): failed.
    Faulted,
}

impl Ruled {
    /// The kind of `plan`.
    pub(crate) fn of(plan: Option<&Plan>) -> Ruled {
        match plan {
            None | Some(Plan::Send { .. }) => Ruled::Target,
            Some(Plan::Skip(reason)) => Ruled::Skipped(*reason),
            Some(Plan::Fault(_)) => Ruled::Faulted,
        }
    }
}

/// Records the rules skipped, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Left out by a `filter` condition.
    pub filtered_out: u64,
    /// Matched by no route under `unmatched: drop`.
    pub unmatched: u64,
}

impl Skipped {
    /// Count one skip.
    pub(crate) fn count(&mut self, reason: Skip) {
        match reason {
            Skip::FilteredOut => self.filtered_out += 1,
            Skip::Unmatched => self.unmatched += 1,
        }
    }
}

/// Send every routed record of `items` and return one outcome per record,
/// in input order ([`Router::forward`] over a vector, as
/// `Forwarder::send_all` is over one queue). Whatever is unsent at
/// `deadline` comes back failed-retryable (`DeadlineExceeded`).
pub(crate) async fn send_all<T: Transport, P>(
    router: &Router<T>,
    items: Vec<Routed<P>>,
    deadline: Option<Instant>,
) -> Vec<MessageOutcome<P>> {
    let mut slots: Vec<Option<MessageOutcome<P>>> = Vec::with_capacity(items.len());
    slots.resize_with(items.len(), || None);
    let indexed = items.into_iter().enumerate().map(|(i, item)| match item {
        Routed::To(target, message) => Routed::To(target, message.map_position(|p| (i, p))),
        Routed::Settled(p, outcome) => Routed::Settled((i, p), outcome),
    });
    router
        .forward(indexed, deadline, |o: MessageOutcome<(usize, P)>| {
            let (index, position) = o.position;
            if let Some(slot) = slots.get_mut(index) {
                *slot = Some(MessageOutcome {
                    position,
                    outcome: o.outcome,
                    attempts: o.attempts,
                });
            }
        })
        .await;
    // `forward` reports every item exactly once, so every slot is filled; a
    // hole would be a bug, and is never turned into a panic.
    slots.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests;
