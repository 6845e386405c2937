//! # s3-to-sqs
//!
//! A Lambda function that forwards S3 events to Amazon SQS, through the
//! shared [`sqs_forwarder`] crate.
//!
//! * **Notification mode** (`MODE=notification`, the default): one message
//!   per S3 event record, a JSON description of the object (event name and
//!   time, bucket, decoded key, size, ETag, version id, sequencer).
//! * **Lines mode** (`MODE=lines`): each created object is read as a stream
//!   (gzip or not) and each of its lines becomes a message.
//!
//! Events arrive straight from S3 (`Records`), as the `s3:TestEvent` (which
//! forwards nothing), or through EventBridge. A Step Functions Distributed
//! Map can also hand it batches of an object's items ([`map_batch`]): each
//! item one message, whatever `MODE` says. S3 invokes the function
//! asynchronously, so a record that did not reach SQS fails the invocation:
//! Lambda retries the whole event, then hands it to the on-failure
//! destination. On FIFO queues, deduplication ids make those retries (and
//! S3's own duplicate deliveries) harmless within SQS's five-minute window.
//!
//! With routing rules (`ROUTES`), each record (notification mode) or line
//! (lines mode) goes where the rules say, shaped as they say ([`routing`]).
//!
//! The flow, module by module: [`event`] (read the event) → [`settings`]
//! (`EVENT_NAMES`) → [`messages`] (build messages) or, in lines mode,
//! [`object`] (open the object) → [`lines`] (read and forward lines) →
//! [`routing`] (the rules' plan, the router) → [`handler`] (the answer).
//!
//! With `CONTINUATION=true`, an object too big for one invocation is read
//! by a chain of invocations, each handing the rest on to the next
//! ([`continuation`]).

pub mod continuation;
pub mod event;
pub mod handler;
pub mod lambda;
pub mod lines;
pub mod map_batch;
pub mod messages;
pub mod object;
pub mod routing;
pub mod settings;

pub use event::{EventError, Incoming, ObjectEvent, Via};
pub use handler::{Handler, HandlerError, RecordFailure, Report};
pub use lambda::Lambda;
pub use object::{reader_sdk, s3_client};
pub use settings::{EventFilter, GroupBy, Mode, Settings, VARIABLES};

/// The service name in logs and metrics.
pub const SERVICE: &str = "s3-to-sqs";

/// The prefix of the Lambda error types the function reports
/// (`S3ToSqs.InvalidEvent`, `S3ToSqs.NotForwarded`, and a failed start's
/// `S3ToSqs.InvalidConfiguration` or `S3ToSqs.StartFailed`).
pub const ERROR_PREFIX: &str = "S3ToSqs";

#[cfg(test)]
mod testing;
