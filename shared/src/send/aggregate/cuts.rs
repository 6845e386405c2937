//! Where the aggregates of one group's records with deduplication ids end.
//!
//! A record whose id says so ([`crate::aggregate::cuts_after`], one record
//! in 64) always ends an aggregate: the records between two such records
//! make a segment, the same whatever record a run starts from. A segment's
//! records are then packed from its last record back ([`cuts`]): the last
//! aggregate takes as many records as fit, the one before it as many of
//! the records before those, and so on. Packed so, a segment's aggregates
//! depend on where it ends, never on where it starts: a retry that starts
//! inside a segment makes the first run's aggregates of it again, except the
//! first one it makes (whose records came before too, with others).

/// The sizes, in records and in order, of the aggregates that records of
/// these `costs` make, packed from the last one back into aggregates whose
/// costs add up to at most `budget` (a record alone always makes one).
pub(super) fn cuts(costs: &[usize], budget: usize) -> Vec<usize> {
    let mut sizes = Vec::new();
    let (mut records, mut bytes) = (0usize, 0usize);
    for &cost in costs.iter().rev() {
        if records > 0 && bytes + cost > budget {
            sizes.push(records);
            (records, bytes) = (0, 0);
        }
        records += 1;
        bytes += cost;
    }
    if records > 0 {
        sizes.push(records);
    }
    sizes.reverse();
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_aggregate_is_full_and_the_first_takes_what_is_left() {
        assert_eq!(cuts(&[10, 10, 10, 10, 10], 25), [1, 2, 2]);
        assert_eq!(cuts(&[10, 10, 10, 10], 40), [4]);
        assert_eq!(cuts(&[30, 5, 5, 30], 25), [1, 2, 1]);
        assert_eq!(cuts(&[], 25), Vec::<usize>::new());
    }

    #[test]
    fn a_retry_from_any_record_makes_the_first_runs_aggregates_but_its_first() {
        // A fixed pseudo-random segment of record sizes.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let costs: Vec<usize> = (0..2_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                20 + (state % 400) as usize
            })
            .collect();
        let spans = |from: usize, budget: usize| -> Vec<(usize, usize)> {
            let mut at = from;
            cuts(&costs[from..], budget)
                .into_iter()
                .map(|n| {
                    at += n;
                    (at - n, at)
                })
                .collect()
        };
        for budget in [400, 1_000, 4_000, 65_536] {
            let first: std::collections::HashSet<_> = spans(0, budget).into_iter().collect();
            for from in (1..costs.len()).step_by(7) {
                let retry = spans(from, budget);
                assert!(
                    retry[1..].iter().all(|s| first.contains(s)),
                    "budget {budget}, from {from}"
                );
            }
        }
    }
}
