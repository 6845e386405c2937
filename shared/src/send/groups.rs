//! FIFO group order within one run, as batches go out and come back: a
//! batch's groups enter the call and leave it, and a group whose earlier
//! message ended failed-retryable is blocked for the rest of the run (its
//! source will deliver that message again). The state is
//! [`Groups`](super::group_state::Groups).

use super::group_state::{BlockedBy, group_blocked};
use super::run::Run;
use super::slot::{Batch, Staging};
use crate::call::transport::Transport;
use crate::send::outcome::{MessageOutcome, Outcome};

impl<T: Transport, P, F: FnMut(MessageOutcome<P>)> Run<'_, T, P, F> {
    /// A batch goes into a call: its groups are busy until it comes back.
    pub(super) fn enter_groups(&mut self, t: usize, batch: &Batch<P>) {
        if !self.targets[t].rules.fifo {
            return;
        }
        for (_, slot) in batch {
            if let Some(g) = &slot.entry.group_id {
                self.groups[t].enter(g);
            }
        }
    }

    /// A call came back: its groups may send again.
    pub(super) fn release_groups(&mut self, batch: &Batch<P>) {
        let Some(t) = batch.first().map(|(_, s)| s.target) else {
            return;
        };
        if !self.targets[t].rules.fifo {
            return;
        }
        for (_, slot) in batch {
            if let Some(g) = &slot.entry.group_id {
                self.groups[t].leave(g);
            }
        }
    }

    /// A FIFO message ended failed-retryable (`by`): its event source will
    /// deliver it again. Its group's later messages must not overtake it, so
    /// those held are not sent and come back failed-retryable, and so do
    /// those read later in this run.
    pub(super) fn block_group(
        &mut self,
        t: usize,
        failed: usize,
        group: Option<&str>,
        by: BlockedBy,
    ) {
        let (true, Some(group)) = (self.targets[t].rules.fifo, group) else {
            return;
        };
        self.groups[t].block(group, by);
        let later: Vec<usize> = self.pending[t]
            .range(failed + 1..)
            .filter(|(_, s)| s.entry.group_id.as_deref() == Some(group))
            .map(|(i, _)| *i)
            .collect();
        for index in later {
            if let Some(slot) = self.pending[t].remove(&index) {
                if slot.staging == Staging::Queued {
                    self.queued.retain(|p| p.index != index);
                }
                let calls = slot.calls;
                self.settle_slot(slot, Outcome::Failed(group_blocked(group, by)), calls);
            }
        }
    }
}
