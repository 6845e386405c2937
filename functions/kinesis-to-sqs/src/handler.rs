//! The function's core: one Kinesis batch in, its records' messages out
//! through the forwarder, their outcomes back as the answer Lambda reads
//! (`batchItemFailures`).

use aws_lambda_events::event::kinesis::KinesisEvent;
use aws_lambda_events::event::streams::KinesisEventResponse;
use std::cell::Cell;

use sqs_forwarder::route::Router;
use sqs_forwarder::{Failure, Forwarder, Outcome, Routed, Summary, Transport};
use tokio::time::Instant;

use crate::checkpoint::{self, AnswerError};
use crate::settings::Settings;
use crate::{metric, records};

/// The target of this module's log lines: the crate's name, as for the
/// crate's other top-level events (`RUST_LOG` directives and log queries
/// name it).
const LOG_TARGET: &str = "kinesis_to_sqs";

/// Forwards Kinesis batches: the settings and the router (the forwarder,
/// or the routing rules and their targets' forwarders).
#[derive(Debug)]
pub struct Handler<T> {
    settings: Settings,
    router: Router<T>,
}

impl<T: Transport> Handler<T> {
    /// A handler sending every record to `forwarder`'s queue.
    pub fn new(settings: Settings, forwarder: Forwarder<T>) -> Self {
        Self::routed(settings, Router::single(forwarder))
    }

    /// A handler sending each record where `router`'s rules say.
    pub fn routed(settings: Settings, router: Router<T>) -> Self {
        Handler { settings, router }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The default target's forwarder.
    pub fn forwarder(&self) -> &Forwarder<T> {
        self.router.default_target()
    }

    /// Forward one batch and answer which records Lambda must deliver again.
    ///
    /// `deadline`: when sending must stop (the Lambda deadline less the margin);
    /// what is unsent then is reported, not lost.
    pub async fn handle(
        &self,
        event: KinesisEvent,
        deadline: Option<Instant>,
    ) -> Result<KinesisEventResponse, AnswerError> {
        self.handle_for(event, deadline).await.answer
    }

    /// [`Handler::handle`], with what became of each record (for a caller
    /// that says why a record was not sent: the replay command).
    pub async fn handle_for(&self, event: KinesisEvent, deadline: Option<Instant>) -> Handled {
        let total = event.records.len();
        // With rules, messages carry FIFO ids when any target is FIFO; the
        // router takes them off those bound for a standard queue.
        let fifo = self.router.any_fifo();
        let infos = records::inspect(&event.records, &self.settings);
        let user_records: usize = infos
            .iter()
            .filter(|r| r.aggregated)
            .map(|r| r.messages)
            .sum();
        metrics::counter!(metric::RECORDS_IN).increment(total as u64);
        metrics::counter!(metric::USER_RECORDS).increment(user_records as u64);

        let mut tracker = checkpoint::Tracker::new(&infos);
        let router = &self.router;
        // Once the forwarder reports the deadline, it fails whatever it is
        // handed: the records left are then handed over as one outcome each,
        // without reading them into messages, so that the work after the
        // deadline does not grow with what is left (a KPL record of 5,000
        // user records is one step, not 5,000 messages built).
        let late = Cell::new(false);
        let mut messages =
            records::messages(event.records, &infos, &self.settings, fifo, router.routes());
        let items = std::iter::from_fn(|| {
            if late.get() {
                let left = messages.next_left()?;
                return Some(Routed::Settled(left, Outcome::Failed(Failure::deadline())));
            }
            let (plan, message) = messages.next()?;
            Some(router.route(plan, message))
        });
        let tally = router
            .forward(items, deadline, |o| {
                if o.outcome.failure().is_some_and(Failure::is_deadline) {
                    late.set(true);
                }
                tracker.record(&o);
            })
            .await;
        let summary = tally.summary;
        let per_record = tracker.finish();
        let answer = checkpoint::answer(&infos, &per_record, self.settings.permanent_failures);

        // Why records failed, by code ("DeadlineExceeded:3,MessageTooLarge:1").
        let mut codes: std::collections::BTreeMap<&str, usize> = Default::default();
        for outcome in &per_record {
            if let checkpoint::RecordOutcome::Failed(f) = outcome {
                *codes.entry(f.code.as_str()).or_default() += 1;
            }
        }
        let failure_codes = codes
            .iter()
            .map(|(code, n)| format!("{code}:{n}"))
            .collect::<Vec<_>>()
            .join(",");

        match &answer {
            Ok(a) => {
                metrics::counter!(metric::RECORDS_FAILED).increment(a.reported as u64);
                metrics::counter!(metric::RECORDS_SKIPPED).increment(a.skipped as u64);
                let first = a
                    .response
                    .batch_item_failures
                    .first()
                    .and_then(|f| f.item_identifier.as_deref());
                let log = |msg: &str| {
                    tracing::info!(
                        target: LOG_TARGET,
                        records = total,
                        user_records,
                        messages = tally.messages,
                        sent = summary.sent,
                        failed_retryable = summary.failed_retryable,
                        failed_permanent = summary.failed_permanent,
                        dropped = summary.dropped,
                        reported = a.reported,
                        skipped = a.skipped,
                        resume_at = first.unwrap_or(""),
                        failure_codes = %failure_codes,
                        "{msg}"
                    )
                };
                if a.reported == 0 {
                    log("batch forwarded");
                } else {
                    log("batch partly forwarded; Lambda resumes at the lowest reported record");
                }
            }
            Err(e) => {
                metrics::counter!(metric::RECORDS_FAILED).increment(total as u64);
                tracing::error!(
                    target: LOG_TARGET,
                    error = %e,
                    records = total,
                    "failing the invocation"
                );
            }
        }
        Handled {
            answer: answer.map(|a| a.response),
            records: per_record,
            messages: summary,
        }
    }
}

/// What [`Handler::handle_for`] did with a batch.
#[derive(Debug, Clone)]
pub struct Handled {
    /// The answer Lambda gets ([`Handler::handle`]'s).
    pub answer: Result<KinesisEventResponse, AnswerError>,
    /// What became of each record, in the event's order.
    pub records: Vec<checkpoint::RecordOutcome>,
    /// The messages' outcomes, counted (`dropped`: sent nowhere, by the
    /// routing rules or `OVERSIZE_POLICY=drop`).
    pub messages: Summary,
}
