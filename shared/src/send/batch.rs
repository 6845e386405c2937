//! Packing: which pending messages ride in the next `SendMessageBatch` call.
//!
//! Messages are taken in input order, greedily, until the next one would
//! break the entry count or the request byte cap (next-fit). For a fixed
//! order this is optimal: no split of the sequence into calls that respect
//! both limits has fewer calls (see the property tests in `tests/`).
//!
//! FIFO groups add two rules: a group with a message in flight, or with an
//! earlier message still waiting (for a retry's backoff), is skipped whole,
//! so a group's messages reach SQS in order even across retries; and under
//! [`FifoOrder::Strict`] a call carries at most one message per group.

use std::collections::HashSet;

use crate::message::limits::Limits;

/// How many messages of one FIFO group may ride in one call.
///
/// AWS does not document what happens to the later entries of a group in a
/// `SendMessageBatch` call when an earlier entry of that group fails: if SQS
/// accepts them, the retry of the failed one lands after them and the group's
/// order is broken. Strict order under failures therefore costs batching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FifoOrder {
    /// At most one unconfirmed message per group: order holds under any
    /// failure; a single-group stream sends one message per call.
    #[default]
    Strict,
    /// Many messages of a group per call, in order: full batches, but a
    /// partial failure inside a call can invert the group's order (the
    /// forwarder logs it and counts `OrderInversions`).
    Batched,
}

/// A pending message as the packer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate<'a> {
    /// Input position.
    pub index: usize,
    /// Size as SQS counts it.
    pub size: usize,
    /// FIFO group (None on standard queues).
    pub group: Option<&'a str>,
    /// Whether its backoff (if any) is over.
    pub ready: bool,
    /// Largest call it may ride in (lowered after `BatchRequestTooLong`).
    pub max_batch: usize,
}

/// Pick the next batch from candidates given in input order. `busy` tells
/// whether a group has a message in flight.
pub fn next_batch<'a>(
    candidates: impl IntoIterator<Item = Candidate<'a>>,
    limits: &Limits,
    order: FifoOrder,
    busy: impl Fn(&str) -> bool,
) -> Vec<usize> {
    pick(candidates, limits, order, busy).indices
}

/// A batch [`pick`] chose.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Picked {
    /// The candidates' indices, in input order.
    pub indices: Vec<usize>,
    /// Whether a limit closed the batch (the entry count, the byte cap, or a
    /// candidate's lowered batch size): no message that comes later in the
    /// input could join it. When `false`, the candidates ran out first, and a
    /// streaming caller that can still read more input should read it before
    /// sending, so that the call is as full as the input order allows.
    pub closed: bool,
}

/// [`next_batch`], also telling whether the batch is closed.
pub fn pick<'a>(
    candidates: impl IntoIterator<Item = Candidate<'a>>,
    limits: &Limits,
    order: FifoOrder,
    busy: impl Fn(&str) -> bool,
) -> Picked {
    let mut picked = Vec::new();
    let mut bytes = 0usize;
    let mut cap = limits.max_entries.max(1);
    let mut blocked: HashSet<&str> = HashSet::new();
    let mut in_batch: HashSet<&str> = HashSet::new();
    for c in candidates {
        if let Some(g) = c.group
            && (blocked.contains(g)
                || busy(g)
                || (order == FifoOrder::Strict && in_batch.contains(g)))
        {
            blocked.insert(g);
            continue;
        }
        if !c.ready {
            if let Some(g) = c.group {
                blocked.insert(g);
            }
            continue;
        }
        let new_cap = cap.min(c.max_batch.max(1));
        if picked.len() + 1 > new_cap || bytes + c.size > limits.max_request_bytes {
            return Picked {
                indices: picked,
                closed: true,
            };
        }
        picked.push(c.index);
        bytes += c.size;
        cap = new_cap;
        if let Some(g) = c.group {
            in_batch.insert(g);
        }
        // Full: no later candidate could join, so stop scanning.
        if picked.len() >= cap {
            return Picked {
                indices: picked,
                closed: true,
            };
        }
    }
    Picked {
        indices: picked,
        closed: false,
    }
}

/// Split sizes, in order, into calls: the plan [`next_batch`] follows when
/// every message is ready and no group constrains it.
pub fn pack_in_order(sizes: &[usize], limits: &Limits) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < sizes.len() {
        let picked = next_batch(
            sizes[start..]
                .iter()
                .enumerate()
                .map(|(i, &size)| Candidate {
                    index: start + i,
                    size,
                    group: None,
                    ready: true,
                    max_batch: limits.max_entries,
                }),
            limits,
            FifoOrder::Batched,
            |_| false,
        );
        // A message larger than the request cap can never be packed; the
        // forwarder's oversize policy removes such messages first.
        let end = start + picked.len().max(1);
        out.push(start..end);
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(index: usize, size: usize, group: Option<&str>) -> Candidate<'_> {
        Candidate {
            index,
            size,
            group,
            ready: true,
            max_batch: 10,
        }
    }

    #[test]
    fn four_250k_messages_fill_one_call_on_a_256k_queue() {
        let limits = Limits {
            max_message_bytes: 262_144,
            ..Limits::default()
        };
        let plan = pack_in_order(&[250_000; 4], &limits);
        assert_eq!(plan, vec![0..4]);
        let plan = pack_in_order(&[250_000; 5], &limits);
        assert_eq!(plan, vec![0..4, 4..5]);
    }

    #[test]
    fn count_and_bytes_both_cut() {
        let limits = Limits::default();
        assert_eq!(
            pack_in_order(&[1; 25], &limits),
            vec![0..10, 10..20, 20..25]
        );
        assert_eq!(
            pack_in_order(&[524_288, 524_288, 1], &limits),
            vec![0..2, 2..3]
        );
    }

    #[test]
    fn strict_fifo_takes_one_per_group_and_skips_blocked_groups() {
        let limits = Limits::default();
        let c = vec![
            cand(0, 1, Some("a")),
            cand(1, 1, Some("a")),
            cand(2, 1, Some("b")),
            cand(3, 1, Some("c")),
        ];
        assert_eq!(
            next_batch(c.clone(), &limits, FifoOrder::Strict, |_| false),
            vec![0, 2, 3]
        );
        assert_eq!(
            next_batch(c.clone(), &limits, FifoOrder::Batched, |_| false),
            vec![0, 1, 2, 3]
        );
        assert_eq!(
            next_batch(c.clone(), &limits, FifoOrder::Batched, |g| g == "b"),
            vec![0, 1, 3]
        );
        let mut waiting = c;
        waiting[0].ready = false;
        // a's first message waits for a retry: a's second must not overtake it.
        assert_eq!(
            next_batch(waiting, &limits, FifoOrder::Batched, |_| false),
            vec![2, 3]
        );
    }
}
