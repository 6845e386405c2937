//! What a function holds to send: its routing rules, if any, and the
//! forwarders of their targets ([`Fanout`]), as one [`Router`].
//!
//! Without `ROUTES` a router is the one forwarder it always was: every
//! message goes to the default target as built. With rules, each record's
//! [`Plan`] is read from its view, its message goes to the planned target
//! shaped, and a record the rules send nowhere (filtered out, unmatched and
//! dropped, or at fault) is settled on the spot, counted, and reported to
//! its source like any other record: exactly one outcome each.
//!
//! Group ids follow the target, not the function: a function that routes
//! builds its messages with the group and deduplication ids a FIFO queue
//! needs whenever any target is FIFO ([`Router::any_fifo`]); the router
//! takes them off a message bound for a standard queue, where they would
//! make it a fair-queue message (or be refused), unless the rules' own
//! `group_id` set them (SQS fair queues: the tenant).

use tokio::time::Instant;

use super::{Plan, Routes, Skip};
use crate::call::transport::Transport;
use crate::message::Message;
use crate::observe::metrics as m;
use crate::send::outcome::{Failure, MessageOutcome, Outcome};
use crate::send::{Fanout, Forwarder, Routed, Tally};

/// A function's routing rules and the forwarders of their targets.
#[derive(Debug, Clone)]
pub struct Router<T> {
    routes: Option<Routes>,
    fanout: Fanout<T>,
}

/// Why a router could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the routing rules name {rules} extra targets but {forwarders} forwarders were given")]
pub struct TargetCount {
    /// Extra targets in the rules.
    pub rules: usize,
    /// Extra forwarders given.
    pub forwarders: usize,
}

impl<T: Transport> Router<T> {
    /// No rules: every message to `forwarder`'s queue.
    pub fn single(forwarder: Forwarder<T>) -> Self {
        Router {
            routes: None,
            fanout: Fanout::new(forwarder, Vec::new()),
        }
    }

    /// `routes` over `default` and one forwarder per extra target, in the
    /// order of [`Routes::targets`].
    pub fn new(
        routes: Routes,
        default: Forwarder<T>,
        targets: Vec<Forwarder<T>>,
    ) -> Result<Self, TargetCount> {
        if targets.len() != routes.targets().len() {
            return Err(TargetCount {
                rules: routes.targets().len(),
                forwarders: targets.len(),
            });
        }
        Ok(Router {
            routes: Some(routes),
            fanout: Fanout::new(default, targets),
        })
    }

    /// The rules, if any.
    pub fn routes(&self) -> Option<&Routes> {
        self.routes.as_ref()
    }

    /// The default target's forwarder (`QUEUE_URL`).
    pub fn default_target(&self) -> &Forwarder<T> {
        self.fanout.default_target()
    }

    /// Every target's forwarder, the default first.
    pub fn targets(&self) -> &[Forwarder<T>] {
        self.fanout.targets()
    }

    /// Whether any target is a FIFO queue: a function that routes then
    /// builds every message with FIFO ids (see the module docs).
    pub fn any_fifo(&self) -> bool {
        self.targets().iter().any(|f| f.rules().fifo)
    }

    /// One record's message, routed by `plan`: the rules' plan for the same
    /// record ([`Routes::plan`] on [`Router::routes`]), `None` without rules.
    pub fn route<P>(&self, plan: Option<Plan>, mut message: Message<P>) -> Routed<P> {
        let Some(plan) = plan else {
            return Routed::To(0, message);
        };
        if let Plan::Send { target, .. } = &plan
            && !self.targets().get(target.0).is_some_and(|f| f.rules().fifo)
        {
            message.group_id = None;
            message.deduplication_id = None;
        }
        routed(plan.apply(message))
    }

    /// Send every routed message and report every record's outcome
    /// ([`Fanout::forward`]).
    pub async fn forward<P, I, F>(&self, items: I, deadline: Option<Instant>, report: F) -> Tally
    where
        I: IntoIterator<Item = Routed<P>>,
        F: FnMut(MessageOutcome<P>),
    {
        self.fanout.forward(items, deadline, report).await
    }

    /// Whether SQS answers for every target, asked without sending anything
    /// ([`Transport::probe`], the targets at once, bounded by `deadline`):
    /// for a source that must not take what it cannot send. An answer that
    /// refuses the question itself (access denied: the role may send
    /// without reading attributes) says nothing against sending, and
    /// passes; any other failure, or no answer by the deadline, is the
    /// first target's failure.
    pub async fn probe(&self, deadline: Option<Instant>) -> Result<(), Failure> {
        let asks =
            futures_util::future::join_all(self.targets().iter().map(|f| f.transport().probe()));
        let answers = match deadline {
            Some(at) => tokio::time::timeout_at(at, asks).await.map_err(|_| {
                Failure::transient(
                    crate::send::codes::DEADLINE_EXCEEDED,
                    "SQS did not answer GetQueueAttributes before the deadline",
                )
            })?,
            None => asks.await,
        };
        answers
            .into_iter()
            .filter_map(Result::err)
            .find(|f| f.retryable || !crate::call::queue::is_access_denied(&f.code))
            .map_or(Ok(()), Err)
    }
}

/// A decision as the fan-out takes it: a message for its target, or a
/// record the rules send nowhere settled with its outcome, counted.
fn routed<P>(decision: super::Decision<P>) -> Routed<P> {
    match decision {
        super::Decision::Send { target, message } => Routed::To(target.0, message),
        super::Decision::Skip { position, reason } => {
            let why = match reason {
                Skip::FilteredOut => {
                    metrics::counter!(m::FILTERED_OUT).increment(1);
                    "FilteredOut: a ROUTES filter condition did not hold"
                }
                Skip::Unmatched => {
                    metrics::counter!(m::UNMATCHED).increment(1);
                    "Unmatched: no ROUTES route matched (unmatched: drop)"
                }
            };
            Routed::Settled(position, Outcome::Dropped { reason: why.into() })
        }
        super::Decision::Fault { position, failure } => {
            Routed::Settled(position, Outcome::Failed(failure))
        }
    }
}
