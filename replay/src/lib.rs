//! # replay
//!
//! Takes what Lambda finally gave up on out of the template's on-failure
//! queue and sends it to the target queue, once, through the functions' own
//! code; tells what it did per entry.
//!
//! * A Kinesis entry (`KinesisBatchInfo`) names a shard and a sequence-number
//!   range: the records are read back from the stream ([`stream`]) and go
//!   through [`kinesis_to_sqs::Handler`] ([`kinesis`]).
//! * An S3 entry (the asynchronous invocation record) carries the original
//!   event: it goes through s3-to-sqs's handler ([`s3`]).
//!
//! An entry is deleted only when everything it stands for was sent; what
//! the stream no longer has is reported with its range ([`report`]), and an
//! entry partly past the stream's retention is narrowed to what is lost
//! once the rest was sent, so that no later run sends the rest again
//! ([`narrow`]). Records of sources this tool does not read (a DynamoDB
//! stream, a Kafka topic, another function's event) are named and kept
//! ([`other`]). The flow: [`entry`] (read an entry) → [`stream`] →
//! [`kinesis`] or [`s3`] → [`run`] (delete, narrow or keep) → [`report`].
//! `--dry-run` counts instead of sending, per target queue ([`dry_run`]).
//! The functions' routing rules ([`routes`]) send each record where the
//! function would have: kinesis-to-sqs's and s3-to-sqs's handlers are
//! built on the same routers the functions build at cold start.
//!
//! It is a command, not a Lambda function: an operator runs it once the
//! cause is fixed, watches its progress and reads its report; a long replay
//! is not cut short by a Lambda timeout.

pub mod dry_run;
pub mod entry;
pub mod kinesis;
pub mod narrow;
pub mod other;
pub mod report;
pub mod routes;
pub mod run;
pub mod s3;
pub mod stream;

pub use run::{Options, Replayer};

/// The service name in logs (and the `Service` dimension of metrics).
pub const SERVICE: &str = "replay";
