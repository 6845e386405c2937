//! Several target queues as one forwarder: each message goes to the target
//! its record was routed to, and every record, sent or not, gets exactly one
//! outcome.
//!
//! One run serves all targets ([`super::run`]): one window bounds what is
//! held whatever the targets, one deadline stops them all, and the first
//! target's `MAX_IN_FLIGHT` bounds the calls out at once. What differs by
//! queue is each target's own: its limits (its `MaximumMessageSize`), FIFO
//! or not, its group order and blocking, its retries and its offload. A
//! batch never mixes targets; targets take turns starting calls, so a slow
//! or failing queue does not hold the others' messages back beyond the
//! window.

use tokio::time::Instant;

use super::outcome::MessageOutcome;
use super::{Forwarder, Routed, Tally, aggregate, run};
use crate::call::transport::Transport;

/// Forwarders to several queues, run as one. Index 0 is the default target.
#[derive(Debug, Clone)]
pub struct Fanout<T> {
    targets: Vec<Forwarder<T>>,
}

impl<T: Transport> Fanout<T> {
    /// A fan-out to `default` (index 0) and `others` (indexes 1..).
    pub fn new(default: Forwarder<T>, others: Vec<Forwarder<T>>) -> Self {
        let mut targets = Vec::with_capacity(1 + others.len());
        targets.push(default);
        targets.extend(others);
        Fanout { targets }
    }

    /// The default target's forwarder.
    pub fn default_target(&self) -> &Forwarder<T> {
        // `new` always puts the default first.
        &self.targets[0]
    }

    /// Every target's forwarder, the default first.
    pub fn targets(&self) -> &[Forwarder<T>] {
        &self.targets
    }

    /// Send every message to its target and report every record's outcome,
    /// as [`Forwarder::forward`] does for one queue: read lazily into one
    /// window, each outcome handed to `report` as soon as it is settled, and
    /// whatever is unsent at `deadline` reported failed-retryable
    /// (`DeadlineExceeded`). A message routed to an index this fan-out does
    /// not have fails (`Unschedulable`), never panics.
    pub async fn forward<P, I, F>(&self, items: I, deadline: Option<Instant>, report: F) -> Tally
    where
        I: IntoIterator<Item = Routed<P>>,
        F: FnMut(MessageOutcome<P>),
    {
        let items = items.into_iter();
        if self.targets.iter().any(|f| f.settings.aggregate.is_some()) {
            return aggregate::forward(&self.targets, items, deadline, report).await;
        }
        run::Run::new(&self.targets, deadline, report)
            .drive(items.map(run::Item::Routed))
            .await
    }
}
