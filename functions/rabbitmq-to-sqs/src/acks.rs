//! Acknowledgements: what becomes of each delivery, and the fewest AMQP
//! calls that say it.
//!
//! Each delivery ends with one [`Action`]: `Ack` after SQS accepted it (or a
//! policy the user chose dropped it), `Requeue` (`basic.nack` with requeue)
//! when a later try may succeed, `Reject` (without requeue, so the queue's
//! dead-letter exchange gets it) when it can never be sent, or `Hold`: keep
//! it unacknowledged for now and requeue it at the end of the drain, so that
//! one invocation does not take the same failing message again and again.
//!
//! `multiple = true` settles every unsettled delivery of the channel up to
//! the given tag. [`plan`] uses it only where that is exactly the intended
//! run: when every unsettled delivery below the run has been settled by an
//! earlier call of the plan.

use crate::amqp::{self, Channel};

/// What to do with one delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// `basic.ack`: SQS has it.
    Ack,
    /// `basic.nack` with requeue: try again later.
    Requeue,
    /// `basic.reject` without requeue: to the dead-letter exchange.
    Reject,
    /// Not yet: stays unacknowledged, requeued later.
    Hold,
}

/// One AMQP call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// The delivery tag.
    pub tag: u64,
    /// Whether the call covers every unsettled delivery up to `tag`.
    pub multiple: bool,
    /// `Ack`, `Requeue` or `Reject` (never `Hold`).
    pub action: Action,
}

/// The calls that settle `outstanding`: every unsettled delivery of the
/// channel (at least up to the highest tag listed), each with its action.
pub fn plan(outstanding: &[(u64, Action)]) -> Vec<Call> {
    let mut items = outstanding.to_vec();
    items.sort_by_key(|(tag, _)| *tag);
    let mut calls = Vec::new();
    // Whether every delivery below the current one is settled by now.
    let mut lower_settled = true;
    let mut i = 0;
    while i < items.len() {
        let action = items[i].1;
        let mut j = i;
        while j + 1 < items.len() && items[j + 1].1 == action {
            j += 1;
        }
        if action == Action::Hold {
            lower_settled = false;
        } else if lower_settled && j > i {
            calls.push(Call {
                tag: items[j].0,
                multiple: true,
                action,
            });
        } else {
            calls.extend(items[i..=j].iter().map(|(tag, _)| Call {
                tag: *tag,
                multiple: false,
                action,
            }));
        }
        i = j + 1;
    }
    calls
}

/// Make the calls, in order, on `channel`.
pub async fn execute(channel: &Channel, calls: &[Call]) -> Result<(), amqp::Error> {
    for c in calls {
        match c.action {
            Action::Ack => channel.basic_ack(c.tag, c.multiple).await?,
            Action::Requeue => channel.basic_nack(c.tag, c.multiple, true).await?,
            // Without requeue: to the dead-letter exchange.
            Action::Reject if c.multiple => channel.basic_nack(c.tag, true, false).await?,
            Action::Reject => channel.basic_reject(c.tag, false).await?,
            Action::Hold => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action::*;

    fn call(tag: u64, multiple: bool, action: Action) -> Call {
        Call {
            tag,
            multiple,
            action,
        }
    }

    #[test]
    fn a_clean_batch_is_one_call() {
        let out: Vec<(u64, Action)> = (1..=10).map(|t| (t, Ack)).collect();
        assert_eq!(plan(&out), vec![call(10, true, Ack)]);
    }

    #[test]
    fn runs_use_multiple_while_everything_below_is_settled() {
        let out = [
            (1, Ack),
            (2, Ack),
            (3, Reject),
            (4, Reject),
            (5, Ack),
            (6, Requeue),
        ];
        assert_eq!(
            plan(&out),
            vec![
                call(2, true, Ack),
                call(4, true, Reject),
                call(5, false, Ack),
                call(6, false, Requeue),
            ]
        );
    }

    #[test]
    fn a_held_delivery_forbids_multiple_above_it() {
        // 3 is held: an ack "multiple" up to 6 would ack it too.
        let out = [(4, Ack), (1, Ack), (2, Ack), (3, Hold), (5, Ack), (6, Ack)];
        assert_eq!(
            plan(&out),
            vec![
                call(2, true, Ack),
                call(4, false, Ack),
                call(5, false, Ack),
                call(6, false, Ack),
            ]
        );
    }

    #[test]
    fn held_deliveries_from_earlier_batches_count() {
        let out = [(3, Hold), (7, Hold), (11, Ack), (12, Ack)];
        assert_eq!(plan(&out), vec![call(11, false, Ack), call(12, false, Ack)]);
        // At the end of a drain every held one is requeued in one call.
        let end = [(3, Requeue), (7, Requeue)];
        assert_eq!(plan(&end), vec![call(7, true, Requeue)]);
    }

    #[test]
    fn every_delivery_is_covered_exactly_once() {
        // Simulate the broker: apply the calls and check each tag got its action.
        let actions = [Ack, Reject, Requeue, Hold];
        let mut seed = 7u64;
        for _ in 0..500 {
            let n = (seed % 12) as usize + 1;
            let mut out = Vec::new();
            for t in 0..n {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                out.push((t as u64 * 2 + 1, actions[(seed >> 33) as usize % 4]));
            }
            let mut unsettled: Vec<(u64, Action)> = out.clone();
            let mut got: Vec<(u64, Action)> = Vec::new();
            for c in plan(&out) {
                assert_ne!(c.action, Hold);
                let covered: Vec<(u64, Action)> = unsettled
                    .iter()
                    .filter(|(t, _)| if c.multiple { *t <= c.tag } else { *t == c.tag })
                    .copied()
                    .collect();
                assert!(!covered.is_empty(), "call {c:?} settles nothing");
                for (t, _) in &covered {
                    got.push((*t, c.action));
                }
                unsettled.retain(|(t, _)| !covered.iter().any(|(u, _)| u == t));
            }
            got.sort_by_key(|(t, _)| *t);
            let want: Vec<(u64, Action)> =
                out.iter().filter(|(_, a)| *a != Hold).copied().collect();
            assert_eq!(got, want, "plan for {out:?}");
            assert!(unsettled.iter().all(|(_, a)| *a == Hold));
        }
    }
}
