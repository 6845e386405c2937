//! # kinesis-to-sqs
//!
//! A Lambda function for a Kinesis event source mapping with
//! `ReportBatchItemFailures`: every record becomes an SQS message (or one per
//! user record of a KPL aggregate), the shared crate sends them, and the
//! answer reports exactly the records Lambda must deliver again.
//!
//! The flow, one module per step:
//!
//! ```text
//! event JSON   --event::Incoming--> KinesisEvent           (the fields used, read once)
//! KinesisEvent --records::inspect--> Vec<RecordInfo>      (kpl: aggregates checked whole)
//!              --records::messages--> Message<Position>, one at a time   (kpl: read lazily)
//!              --Forwarder::forward--> MessageOutcome<Position> as each is settled
//!              --checkpoint::Tracker--> one outcome per record
//!              --checkpoint::answer--> KinesisEventResponse { batchItemFailures }
//! ```
//!
//! Memory follows the forwarder's window, not the number of user records:
//! a 6 MB event of KPL aggregates holding 600,000 user records never has
//! more than the window's worth of messages built at once.
//!
//! [`handle`] is generic over the [`Transport`], so tests drive it with a
//! fake and with the real `SqsTransport` against a local SQS endpoint.

use aws_lambda_events::event::kinesis::KinesisEvent;
use aws_lambda_events::event::streams::KinesisEventResponse;
use sqs_forwarder::{Forwarder, Transport};
use tokio::time::Instant;

pub mod checkpoint;
pub mod error;
pub mod event;
pub mod kpl;
pub mod lambda;
pub mod records;
pub mod settings;

pub use checkpoint::AnswerError;
pub use error::InvocationError;
pub use lambda::Lambda;
pub use settings::{Settings, VARIABLES};

/// The service name: the `Service` dimension of the metrics.
pub const SERVICE: &str = "kinesis-to-sqs";

/// The prefix of the Lambda error types the function reports
/// (`KinesisToSqs.InvalidEvent`, `KinesisToSqs.NoSequenceNumber`, and a
/// failed start's `KinesisToSqs.InvalidConfiguration` or
/// `KinesisToSqs.StartFailed`).
pub const ERROR_PREFIX: &str = "KinesisToSqs";

/// This function's own metrics (the shared crate counts messages).
pub mod metric {
    /// Kinesis records received.
    pub const RECORDS_IN: &str = "RecordsIn";
    /// User records taken out of KPL aggregates.
    pub const USER_RECORDS: &str = "KplUserRecords";
    /// KPL aggregates that could not be read (checksum, protobuf).
    pub const CORRUPT_AGGREGATES: &str = "KplCorruptAggregates";
    /// Records reported in `batchItemFailures`.
    pub const RECORDS_FAILED: &str = "RecordsFailed";
    /// Records that failed for good and were left out (`PERMANENT_FAILURES=skip`).
    pub const RECORDS_SKIPPED: &str = "RecordsSkipped";
}

/// Forward one batch and answer which records Lambda must deliver again.
///
/// `deadline`: when sending must stop (the Lambda deadline less the margin);
/// what is unsent then is reported, not lost.
pub async fn handle<T: Transport>(
    forwarder: &Forwarder<T>,
    settings: &Settings,
    event: KinesisEvent,
    deadline: Option<Instant>,
) -> Result<KinesisEventResponse, AnswerError> {
    let total = event.records.len();
    let fifo = forwarder.rules().fifo;
    let infos = records::inspect(&event.records, settings);
    let user_records: usize = infos
        .iter()
        .filter(|r| r.aggregated)
        .map(|r| r.messages)
        .sum();
    metrics::counter!(metric::RECORDS_IN).increment(total as u64);
    metrics::counter!(metric::USER_RECORDS).increment(user_records as u64);

    let mut tracker = checkpoint::Tracker::new(&infos);
    let messages = records::messages(event.records, &infos, settings, fifo);
    let tally = forwarder
        .forward(messages, deadline, |o| tracker.record(&o))
        .await;
    let summary = tally.summary;
    let per_record = tracker.finish();
    let answer = checkpoint::answer(&infos, &per_record, settings.permanent_failures);

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
            tracing::error!(error = %e, records = total, "failing the invocation");
        }
    }
    answer.map(|a| a.response)
}
