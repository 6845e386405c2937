//! One group's records with deduplication ids, held until the segment they
//! are in ends ([`super::cuts`]): written once each, side by side with a
//! comma between, so an aggregate's body is a slice of what is held.

use sha2::{Digest, Sha256};

use super::cuts::cuts;
use crate::aggregate::write::{CLOSE, OPEN};
use crate::message::encode::Entry;

/// A record held.
struct Held<P> {
    position: P,
    /// The record as it is (sent so when it is alone in its aggregate).
    entry: Entry,
    /// Where its written form ends in `written`.
    end: usize,
}

/// What a group hands on.
pub(super) enum Next<P> {
    /// A record alone: it goes as it is.
    One(P, Entry),
    /// An aggregate: its body without the closing, its records' positions
    /// and the hash of their deduplication ids (`None`: not all had one).
    Many {
        body: Vec<u8>,
        positions: Vec<P>,
        ids: Option<Sha256>,
    },
}

/// One group's records with ids since its last cut.
pub(super) struct ById<P> {
    /// Most bytes of one aggregate's records, a comma after each.
    budget: usize,
    /// The records' written forms, a comma between two.
    written: Vec<u8>,
    records: Vec<Held<P>>,
    /// The bytes of the entries held.
    entry_bytes: usize,
}

impl<P> ById<P> {
    /// For aggregates of at most `budget` bytes, closing included.
    pub(super) fn new(budget: usize) -> Self {
        ById {
            // A comma after each record, the last one's standing for
            // nothing: one byte more than the records may take.
            budget: (budget + 1).saturating_sub(OPEN.len() + CLOSE.len()),
            written: Vec::new(),
            records: Vec::new(),
            entry_bytes: 0,
        }
    }

    /// The bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.written.len() + self.entry_bytes
    }

    /// Hold the next record (`written`: its form in an aggregate).
    pub(super) fn push(&mut self, written: &[u8], entry: Entry, position: P) {
        if !self.records.is_empty() {
            self.written.push(b',');
        }
        self.written.extend_from_slice(written);
        self.entry_bytes += entry.size;
        self.records.push(Held {
            position,
            entry,
            end: self.written.len(),
        });
    }

    /// Every record held, packed from the last one back: aggregates, or a
    /// record alone, in order.
    pub(super) fn take_all(self, mut out: impl FnMut(Next<P>)) {
        let mut start = 0usize;
        let costs: Vec<usize> = self
            .records
            .iter()
            .map(|held| {
                let cost = held.end + 1 - start;
                start = held.end + 1;
                cost
            })
            .collect();
        let written = self.written;
        let mut records = self.records.into_iter();
        let mut from = 0usize;
        for n in cuts(&costs, self.budget) {
            let taken: Vec<Held<P>> = records.by_ref().take(n).collect();
            let Some(last) = taken.last() else {
                break;
            };
            let to = last.end;
            if taken.len() == 1 {
                if let Some(held) = taken.into_iter().next() {
                    out(Next::One(held.position, held.entry));
                }
                from = to + 1;
                continue;
            }
            let mut body = Vec::with_capacity(OPEN.len() + to - from + CLOSE.len());
            body.extend_from_slice(OPEN.as_bytes());
            body.extend_from_slice(written.get(from..to).unwrap_or_default());
            from = to + 1;
            let mut ids = Some(Sha256::new());
            let mut positions = Vec::with_capacity(taken.len());
            for held in taken {
                match (ids.as_mut(), held.entry.deduplication_id.as_deref()) {
                    (Some(h), Some(id)) => {
                        h.update(id.as_bytes());
                        h.update(b"\n");
                    }
                    _ => ids = None,
                }
                positions.push(held.position);
            }
            out(Next::Many {
                body,
                positions,
                ids,
            });
        }
    }
}
