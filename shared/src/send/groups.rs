//! FIFO group order within one run: which groups have a message in a call
//! (their later messages wait, so a retry never lands after its successors),
//! and which are blocked for the rest of the run because an earlier message
//! ended failed-retryable and its source will deliver it again.

use std::collections::HashMap;

use super::run::Run;
use super::slot::{Batch, Staging};
use crate::call::transport::Transport;
use crate::send::outcome::{Failure, MessageOutcome, Outcome};

/// Why a FIFO group is blocked for the rest of the run.
#[derive(Clone, Copy)]
pub(super) enum BlockedBy {
    /// An earlier message failed and its source will deliver it again.
    Failed,
    /// An earlier message's payload could not be stored in S3.
    Offload,
}

/// The FIFO groups of one run (empty on a standard queue).
#[derive(Default)]
pub(super) struct Groups {
    /// Groups with messages in a call, and how many.
    busy: HashMap<String, usize>,
    /// Groups whose later messages are not sent in this run.
    blocked: HashMap<String, BlockedBy>,
}

impl Groups {
    /// Whether a message of `group` is in a call.
    pub fn is_busy(&self, group: &str) -> bool {
        self.busy.contains_key(group)
    }

    /// Why `group` is blocked, if it is.
    pub fn blocked(&self, group: &str) -> Option<BlockedBy> {
        self.blocked.get(group).copied()
    }

    fn enter(&mut self, group: &str) {
        match self.busy.get_mut(group) {
            Some(n) => *n += 1,
            None => {
                self.busy.insert(group.to_owned(), 1);
            }
        }
    }

    fn leave(&mut self, group: &str) {
        if let Some(n) = self.busy.get_mut(group) {
            *n -= 1;
            if *n == 0 {
                self.busy.remove(group);
            }
        }
    }
}

impl<T: Transport, P, F: FnMut(MessageOutcome<P>)> Run<'_, T, P, F> {
    /// A batch goes into a call: its groups are busy until it comes back.
    pub(super) fn enter_groups(&mut self, batch: &Batch<P>) {
        if !self.fwd.rules.fifo {
            return;
        }
        for (_, slot) in batch {
            if let Some(g) = &slot.entry.group_id {
                self.groups.enter(g);
            }
        }
    }

    /// A call came back: its groups may send again.
    pub(super) fn release_groups(&mut self, batch: &Batch<P>) {
        if !self.fwd.rules.fifo {
            return;
        }
        for (_, slot) in batch {
            if let Some(g) = &slot.entry.group_id {
                self.groups.leave(g);
            }
        }
    }

    /// A FIFO message ended failed-retryable (`by`): its event source will
    /// deliver it again. Its group's later messages must not overtake it, so
    /// those held are not sent and come back failed-retryable, and so do
    /// those read later in this run.
    pub(super) fn block_group(&mut self, failed: usize, group: Option<&str>, by: BlockedBy) {
        let (true, Some(group)) = (self.fwd.rules.fifo, group) else {
            return;
        };
        self.groups.blocked.insert(group.to_owned(), by);
        let later: Vec<usize> = self
            .pending
            .range(failed + 1..)
            .filter(|(_, s)| s.entry.group_id.as_deref() == Some(group))
            .map(|(i, _)| *i)
            .collect();
        for index in later {
            if let Some(slot) = self.pending.remove(&index) {
                if slot.staging == Staging::Queued {
                    self.queued.retain(|p| p.index != index);
                }
                let calls = slot.calls;
                self.settle_slot(slot, Outcome::Failed(group_blocked(group, by)), calls);
            }
        }
    }
}

/// The failure of a message not sent because its group is blocked.
pub(super) fn group_blocked(group: &str, by: BlockedBy) -> Failure {
    let what = match by {
        BlockedBy::Failed => "failed",
        BlockedBy::Offload => "could not be offloaded",
    };
    Failure::transient(
        crate::send::codes::GROUP_BLOCKED,
        format!(
            "an earlier message of group {group:?} {what}; this one was not sent, to keep the group's order"
        ),
    )
}
