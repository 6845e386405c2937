//! Aggregation's packing (`AGGREGATE=true`): records bound for the same
//! target, FIFO or fair-queue group and delay go out together, as one
//! message in the format of [`crate::aggregate`], and each record gets its
//! aggregate's outcome.
//!
//! [`Packer`] sits between the source and the run ([`super::run`]): it
//! prepares each record as the run would ([`prepare`]: the same checks,
//! the same body encoding, the same content faults, one record at a time),
//! writes it into the open aggregate of its target, group and delay, and
//! hands the run an aggregate when the next record would not fit, when the
//! open aggregates hold too much, or when the source ends. The run then
//! sends aggregates like any message: packing, retries, FIFO order, the
//! deadline. What is not aggregated:
//!
//! * a record whose target does not aggregate;
//! * a record that does not fit an aggregate on its own (it goes as a
//!   message of its own, under the oversize policy), or that the offload
//!   policy sends to S3 (`OFFLOAD_THRESHOLD_BYTES`, `OFFLOAD_ALWAYS`);
//! * an aggregate that closes with one record: that record goes as it is,
//!   a plain message.
//!
//! Order: a group's records keep their order, whether aggregated or not (a
//! record sent on its own first closes its group's open aggregate).
//! FIFO: an aggregate's deduplication id is a hash of its records' own
//! ids, so the same records aggregated again (a retried invocation) are
//! deduplicated by SQS; records without ids leave it to content-based
//! deduplication. Records with ids are held until a record's id ends their
//! segment ([`crate::aggregate::cuts_after`]) and packed from its end back
//! ([`cuts`], [`by_id`]), so their aggregates do not depend on where the
//! run started: a retry starting from another record makes the first run's
//! aggregates again, but for its first one in each group.
//!
//! Memory: the open aggregates hold at most half the window's bytes and
//! [`MAX_OPEN`] aggregates; past that the oldest is handed on (a group so
//! handed on early, or a run that ends, is cut there).

use std::collections::VecDeque;

use sha2::Digest;
use tokio::time::Instant;

use super::outcome::{MessageOutcome, Summary};
use super::run::{Item, Run};
use super::{Forwarder, Routed, Tally, reserved_names};
use crate::aggregate::write::{CLOSE, OPEN, record};
use crate::aggregate::{MARKER_ATTRIBUTE, VERSION, cuts_after};
use crate::call::transport::Transport;
use crate::message::Attribute;
use crate::message::encode::{Entry, prepare};
use crate::message::limits::message_size;
use crate::send::codes;
use crate::send::outcome::{Failure, Outcome};

mod by_id;
mod cuts;

use by_id::{ById, Next};

/// Most aggregates open at once (one per target, group and delay).
pub const MAX_OPEN: usize = 64;

/// Run `items` through `targets` with aggregation where a target asks for
/// it, and report each record's outcome: its aggregate's.
pub(super) async fn forward<T, P, I, F>(
    targets: &[Forwarder<T>],
    items: I,
    deadline: Option<Instant>,
    mut report: F,
) -> Tally
where
    T: Transport,
    I: Iterator<Item = Routed<P>>,
    F: FnMut(MessageOutcome<P>),
{
    let mut summary = Summary::default();
    let mut records = 0usize;
    let run = Run::new(targets, deadline, |o: MessageOutcome<Vec<P>>| {
        for position in o.position {
            records += 1;
            summary.count(&o.outcome);
            report(MessageOutcome {
                position,
                outcome: o.outcome.clone(),
                attempts: o.attempts,
            });
        }
    });
    let inner = run.drive(Packer::new(targets, items)).await;
    Tally {
        messages: records,
        summary,
        peak_messages: inner.peak_messages,
        peak_bytes: inner.peak_bytes,
    }
}

/// One group's aggregate being filled (per target, group and delay).
struct Open<P> {
    group: Group,
    fill: Fill<P>,
}

/// What an aggregate of one group is sent with.
struct Group {
    target: usize,
    group_id: Option<String>,
    delay_seconds: Option<i32>,
    /// Most bytes of an aggregate's body, closing included.
    budget: usize,
}

/// How an open aggregate is filled.
enum Fill<P> {
    /// Records without deduplication ids, in order: the aggregate goes when
    /// the next record would not fit.
    Packed {
        /// The body so far, without its closing.
        body: Vec<u8>,
        positions: Vec<P>,
        /// The first record, kept while it is the only one (then it goes
        /// as it is).
        first: Option<Entry>,
    },
    /// Records with deduplication ids, held until their segment ends.
    ById(ById<P>),
}

impl<P> Open<P> {
    /// The bytes it holds.
    fn bytes(&self) -> usize {
        match &self.fill {
            Fill::Packed { body, .. } => body.len(),
            Fill::ById(held) => held.bytes(),
        }
    }
}

/// The source's records, aggregated where their target says so.
pub(super) struct Packer<'a, T, P, I> {
    source: I,
    targets: &'a [Forwarder<T>],
    open: Vec<Open<P>>,
    open_bytes: usize,
    max_open_bytes: usize,
    ready: VecDeque<Item<Vec<P>>>,
    done: bool,
    /// The record being written, kept across records.
    scratch: Vec<u8>,
}

impl<'a, T: Transport, P, I: Iterator<Item = Routed<P>>> Packer<'a, T, P, I> {
    pub(super) fn new(targets: &'a [Forwarder<T>], source: I) -> Self {
        let window = targets.first().map(|f| f.settings.window.max_bytes);
        Packer {
            source,
            targets,
            open: Vec::new(),
            open_bytes: 0,
            max_open_bytes: window.unwrap_or(super::Window::DEFAULT_BYTES) / 2,
            ready: VecDeque::new(),
            done: false,
            scratch: Vec::new(),
        }
    }

    fn take(&mut self, routed: Routed<P>) {
        let (target, message) = match routed {
            Routed::Settled(p, outcome) => {
                return self
                    .ready
                    .push_back(Item::Routed(Routed::Settled(vec![p], outcome)));
            }
            Routed::To(target, message) => (target, message),
        };
        let Some(fwd) = self.targets.get(target) else {
            // The run reports an unknown target.
            let message = message.map_position(|p| vec![p]);
            return self
                .ready
                .push_back(Item::Routed(Routed::To(target, message)));
        };
        let Some(most) = fwd.settings.aggregate else {
            let message = message.map_position(|p| vec![p]);
            return self
                .ready
                .push_back(Item::Routed(Routed::To(target, message)));
        };
        let (position, prepared) = prepare(message, &fwd.rules);
        let prepared = match prepared {
            Ok(entry) if fwd.offloads() => reserved_names(entry),
            other => other,
        };
        let entry = match prepared {
            Ok(entry) => entry,
            Err(failure) => {
                let outcome = Outcome::Failed(failure);
                return self
                    .ready
                    .push_back(Item::Routed(Routed::Settled(vec![position], outcome)));
            }
        };
        let limit = fwd.settings.limits.largest_message();
        // An aggregate never goes to S3: under offload it stays at or below
        // the threshold.
        let most = if fwd.offloads() {
            most.min(fwd.settings.offload.threshold_for(limit))
        } else {
            most.min(limit)
        };
        let budget = most.saturating_sub(MARKER_SIZE);
        let mut written = std::mem::take(&mut self.scratch);
        written.clear();
        // A record that cannot be written (a binary value too long for
        // base64) goes as it is: the call's own writer says why.
        let alone = record(&mut written, &entry).is_err()
            || (fwd.offloads() && fwd.settings.offload.offloads(entry.size, limit))
            || OPEN.len() + written.len() + CLOSE.len() > budget;
        let by_id = entry.deduplication_id.is_some();
        let at = self.open.iter().position(|o| {
            o.group.target == target
                && o.group.group_id == entry.group_id
                && o.group.delay_seconds == entry.delay_seconds
        });
        // The group's open aggregate goes first when this record goes
        // alone, is of the other kind, or (without ids) would not fit.
        let at = match at {
            Some(i) if alone || by_id != matches!(self.open[i].fill, Fill::ById(_)) => {
                self.close(i);
                None
            }
            Some(i)
                if !by_id && self.open[i].bytes() + 1 + written.len() + CLOSE.len() > budget =>
            {
                self.close(i);
                None
            }
            other => other,
        };
        if alone {
            self.scratch = written;
            return self
                .ready
                .push_back(Item::Prepared(target, vec![position], entry));
        }
        let at = at.unwrap_or_else(|| {
            let fill = if by_id {
                Fill::ById(ById::new(budget))
            } else {
                Fill::Packed {
                    body: Vec::with_capacity(budget.min(written.len() * 16 + OPEN.len())),
                    positions: Vec::new(),
                    first: None,
                }
            };
            let group = Group {
                target,
                group_id: entry.group_id.clone(),
                delay_seconds: entry.delay_seconds,
                budget,
            };
            self.open.push(Open { group, fill });
            self.open.len() - 1
        });
        let open = &mut self.open[at];
        let before = open.bytes();
        match &mut open.fill {
            Fill::Packed {
                body,
                positions,
                first,
            } => {
                if positions.is_empty() {
                    body.extend_from_slice(OPEN.as_bytes());
                    *first = Some(entry);
                } else {
                    body.push(b',');
                    *first = None;
                }
                body.extend_from_slice(&written);
                positions.push(position);
            }
            Fill::ById(held) => {
                let cut = entry.deduplication_id.as_deref().is_some_and(cuts_after);
                held.push(&written, entry, position);
                if cut {
                    self.open_bytes = (self.open_bytes + open.bytes()).saturating_sub(before);
                    self.scratch = written;
                    return self.close(at);
                }
            }
        }
        self.open_bytes = (self.open_bytes + open.bytes()).saturating_sub(before);
        self.scratch = written;
        while self.open.len() > MAX_OPEN
            || (self.open_bytes > self.max_open_bytes && self.open.len() > 1)
        {
            self.close(0);
        }
    }

    /// Hand on what the open aggregate at `i` holds: as aggregates, or as
    /// single records.
    fn close(&mut self, i: usize) {
        let open = self.open.remove(i);
        self.open_bytes = self.open_bytes.saturating_sub(open.bytes());
        match open.fill {
            Fill::Packed {
                positions,
                first: Some(first),
                ..
            } => {
                self.ready
                    .push_back(Item::Prepared(open.group.target, positions, first));
            }
            Fill::Packed {
                body,
                positions,
                first: None,
            } => {
                let next = Next::Many {
                    body,
                    positions,
                    ids: None,
                };
                self.ready.push_back(item(&open.group, next));
            }
            Fill::ById(held) => {
                let ready = &mut self.ready;
                held.take_all(|next| ready.push_back(item(&open.group, next)));
            }
        }
    }
}

/// What the run gets for what a group hands on: a record as it is, or an
/// aggregate (its body without its closing, its records' positions, the
/// hash of their deduplication ids when they all have one).
fn item<P>(group: &Group, next: Next<P>) -> Item<Vec<P>> {
    let (mut body, positions, ids) = match next {
        Next::One(position, entry) => return Item::Prepared(group.target, vec![position], entry),
        Next::Many {
            body,
            positions,
            ids,
        } => (body, positions, ids),
    };
    body.extend_from_slice(CLOSE.as_bytes());
    debug_assert!(body.len() <= group.budget);
    // Only UTF-8 was written into it.
    let body = match String::from_utf8(body) {
        Ok(body) => body,
        Err(e) => {
            let failure = Failure::permanent(
                codes::REQUEST_CONSTRUCTION_FAILED,
                format!("an aggregate's body is not UTF-8: {e}"),
            );
            return Item::Routed(Routed::Settled(positions, Outcome::Failed(failure)));
        }
    };
    let attributes = vec![marker()];
    let size = message_size(&body, &attributes);
    let deduplication_id = ids.map(|h| crate::message::fifo_id::hashed("agg-", h.finalize()));
    Item::Prepared(
        group.target,
        positions,
        Entry {
            body,
            attributes,
            group_id: group.group_id.clone(),
            deduplication_id,
            delay_seconds: group.delay_seconds,
            encoded: false,
            size,
        },
    )
}

/// The bytes SQS counts for [`marker`]: name, data type, value.
const MARKER_SIZE: usize = MARKER_ATTRIBUTE.len() + "String".len() + VERSION.len();

/// The attribute that marks an aggregate.
fn marker() -> Attribute {
    Attribute::string(MARKER_ATTRIBUTE, VERSION)
}

impl<T: Transport, P, I: Iterator<Item = Routed<P>>> Iterator for Packer<'_, T, P, I> {
    type Item = Item<Vec<P>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            match self.source.next() {
                Some(routed) => self.take(routed),
                None => {
                    self.done = true;
                    while !self.open.is_empty() {
                        self.close(0);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_marker_size_is_the_markers() {
        assert_eq!(super::MARKER_SIZE, super::marker().size());
    }
}
