//! The handler's side of continuation: a continuation event read as one
//! more leg of its object's chain, and the hand-over of an object's rest to
//! the next invocation (see [`crate::continuation`]).

use sqs_forwarder::Transport;
use tokio::time::Instant;

use super::{Handler, HandlerError, Read, RecordFailure, Report, object_reason};
use crate::continuation::{Continuation, Pin, Resumed, Start, chain_id, open_at};
use crate::event::{EventError, ObjectEvent};
use crate::lines::Leg;

/// Which step of which chain an invocation is.
#[derive(Debug, Clone)]
pub(super) struct Step {
    /// The version and ETag the chain reads.
    pin: Pin,
    /// The chain's id.
    chain: String,
    /// 0 for the invocation of the S3 event, then 1, 2, ...
    number: u64,
}

impl Step {
    /// The first step: the S3 event's invocation, pinned to what
    /// `GetObject` answered.
    pub(super) fn first(event: &ObjectEvent, pin: Pin) -> Step {
        Step {
            chain: chain_id(event, &pin),
            pin,
            number: 0,
        }
    }
}

impl<T: Transport> Handler<T> {
    /// Read the leg a continuation event names; refused unless
    /// `CONTINUATION` is on and allows its bucket.
    pub(super) async fn continued(
        &self,
        c: Continuation,
        deadline: Option<Instant>,
    ) -> Result<Report, HandlerError> {
        let settings = &self.settings.continuation;
        if self.invoker.is_none() || !settings.enabled {
            return Err(EventError::Refused(
                "a continuation event, but CONTINUATION is off".into(),
            )
            .into());
        }
        if !settings.allows(&c.bucket) {
            return Err(EventError::Refused(format!(
                "a continuation event for bucket {:?}, which CONTINUATION_BUCKETS does not name",
                c.bucket
            ))
            .into());
        }
        let hand_over = self.hand_over(&c.bucket, deadline);
        self.leg(c, deadline, hand_over).await
    }

    /// Read a continuation event's object from its offset to its end, in
    /// this call, handing nothing on: how the replay command resumes a
    /// chain's failed step from the on-failure destination (which it
    /// trusts as it trusts the S3 events there: `CONTINUATION` need not be
    /// on where it runs).
    pub async fn resume(&self, c: Continuation) -> Result<Report, HandlerError> {
        self.leg(c, None, crate::continuation::HandOver::NEVER)
            .await
    }

    /// One leg of `c`'s chain.
    async fn leg(
        &self,
        c: Continuation,
        deadline: Option<Instant>,
        hand_over: crate::continuation::HandOver,
    ) -> Result<Report, HandlerError> {
        let event = c.object_event();
        let step = Step {
            pin: c.pin(),
            chain: c.chain.clone(),
            number: c.step,
        };
        tracing::info!(chain = %c.chain, step = c.step, bucket = %c.bucket, key = %c.key, line = c.line, offset = c.offset, "continuing a chain");
        let mut report = Report {
            records: 1,
            ..Report::default()
        };
        let failure = match open_at(self.s3.get(), &c).await {
            Ok(Resumed { body, gzip }) => {
                let leg = Leg {
                    start: c.start(),
                    hand_over,
                };
                let read = Read { body, gzip, leg };
                self.forward_object(0, &event, read, &step, &mut report, deadline)
                    .await
            }
            Err(e) => {
                tracing::error!(chain = %c.chain, step = c.step, error = %e, "cannot read the object");
                Some(RecordFailure::new(
                    0,
                    &event,
                    object_reason(&e),
                    e.retryable,
                ))
            }
        };
        match failure {
            None => Ok(report),
            Some(mut f) => {
                f.reason = format!(
                    "chain {} step {} (from line {}, offset {}): {}",
                    c.chain, c.step, c.line, c.offset, f.reason
                );
                Err(HandlerError::NotForwarded {
                    failures: vec![f],
                    report,
                })
            }
        }
    }

    /// Invoke the function with the rest of `event`'s object, from `at`.
    pub(super) async fn hand_on(
        &self,
        event: &ObjectEvent,
        step: &Step,
        at: Start,
    ) -> Result<(), String> {
        let Some(invoker) = &self.invoker else {
            return Err("the object was not read to its end, and CONTINUATION is off".into());
        };
        let Some(next) = Continuation::next(event, &step.pin, &step.chain, step.number + 1, at)
        else {
            return Err(format!(
                "the object's rest (from line {}) cannot be handed on: GetObject answered without an ETag to pin it to",
                at.line
            ));
        };
        invoker.invoke(next.to_json()).await.map_err(|e| {
            format!(
                "the object's rest (from line {}, offset {}) could not be handed on as step {} of chain {}: {e}",
                at.line, at.offset, next.step, next.chain
            )
        })?;
        tracing::info!(chain = %next.chain, step = next.step, line = at.line, offset = at.offset, "the object's rest handed on");
        Ok(())
    }
}
