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
//! [`Handler`] (event in, messages out, outcomes back as the answer) is
//! generic over the [`Transport`](sqs_forwarder::Transport), so tests drive
//! it with a fake and with the real `SqsTransport` against a local SQS
//! endpoint; [`Lambda`] is what Lambda keeps between invocations.

pub mod checkpoint;
pub mod error;
pub mod event;
pub mod handler;
pub mod kpl;
pub mod lambda;
pub mod records;
pub mod settings;

pub use checkpoint::AnswerError;
pub use error::InvocationError;
pub use handler::{Handled, Handler};
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
