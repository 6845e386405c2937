//! The FIFO groups of one run: which have a message in a call (their later
//! messages wait, so a retry never lands after its successors), and which
//! are blocked for the rest of the run, and why.

use std::collections::HashMap;

use crate::send::outcome::Failure;

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

    /// Block `group` for the rest of the run.
    pub(super) fn block(&mut self, group: &str, by: BlockedBy) {
        self.blocked.insert(group.to_owned(), by);
    }

    pub(super) fn enter(&mut self, group: &str) {
        match self.busy.get_mut(group) {
            Some(n) => *n += 1,
            None => {
                self.busy.insert(group.to_owned(), 1);
            }
        }
    }

    pub(super) fn leave(&mut self, group: &str) {
        if let Some(n) = self.busy.get_mut(group) {
            *n -= 1;
            if *n == 0 {
                self.busy.remove(group);
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
