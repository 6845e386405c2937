//! # sqs-forwarder
//!
//! The library every sqs-forwarder function uses to turn messages into
//! Amazon SQS `SendMessageBatch` calls, and usable from any Rust program.
//!
//! It exists because forwarding to SQS well is harder than a loop over
//! `SendMessage`:
//!
//! * **Exact sizing.** SQS counts a message as its body's UTF-8 bytes plus,
//!   for every attribute, its name, data type and value. The forwarder counts
//!   the same way, so no batch it builds is rejected for size or count, and
//!   every call is as full as the limits allow (1 MiB and 10 entries per call,
//!   whatever the queue's own `MaximumMessageSize`).
//! * **Valid bodies.** Text SQS accepts goes through untouched; binary data
//!   and text with characters SQS rejects are base64-encoded and marked.
//! * **Retries that can help.** Entries listed under `Failed` are retried one
//!   by one with full-jitter backoff, but only when a retry can help; whole
//!   calls are classified the same way.
//! * **Nothing lost.** Every message ends with exactly one [`Outcome`] (sent,
//!   failed with a code and whether a retry could help, or dropped by a
//!   policy the user chose), returned in input order with the caller's
//!   position, and unsent messages are reported at the deadline rather than
//!   lost to a timeout.
//! * **Claim check.** Under `OVERSIZE_POLICY=offload`, payloads too large
//!   for the queue go to S3 and SQS carries the pointer the SQS Extended
//!   Client libraries read ([`send::offload`]; the S3 store needs the `s3` feature).
//! * **FIFO done right.** Group order is kept across retries; see
//!   [`FifoOrder`] for the one choice it costs.
//!
//! The flow, stage by stage, a folder each: [`message`] (the message, and
//! [`message::encode`] to validate, encode and size it against
//! [`message::limits`]) → [`send`] (the oversize policy, [`send::offload`]
//! to S3, [`send::batch`] to pack, [`send::retry`], one [`send::outcome`]
//! per message) → [`call`] (the `SendMessageBatch` call, through
//! [`call::direct`], the crate's own client, by default, or aws-sdk-sqs,
//! [`call::sdk`]; [`call::transport()`] makes the choice). [`setup`] sets it
//! up from environment variables ([`setup::config`], then
//! [`setup::startup`], one way); [`observe`] reports on it (logs and
//! metrics). [`call::receive`] reads a queue, for tools that take messages
//! back out of one (the replay command and the on-failure queue);
//! [`event_reader`] reads a Lambda event borrowed, for the functions;
//! [`route`] holds the routing rules (`ROUTES`: filter, target queue,
//! shape) a function can ask about each record before it sends.
//!
//! ## In a Lambda function
//!
//! ```no_run
//! use sqs_forwarder::{Config, GroupIds, Message, Summary, connect};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let config = Config::from_env()?; // fails naming the bad variable
//! let forwarder = connect(&config, GroupIds::FromConfig).await?; // reads the queue's limits once
//! let messages = vec![Message::new("hello", 0usize), Message::new(vec![0xF3, 0x89], 1)];
//! let outcomes = forwarder.send_all(messages, None).await;
//! assert_eq!(outcomes.len(), 2); // one per message, in input order
//! println!("{:?}", Summary::of(&outcomes));
//! # Ok(()) }
//! ```
//!
//! ## In any program: a buffered sink
//!
//! [`SqsSink`] offers the knobs of Flink's SQS sink: batch size, in-flight
//! requests, buffered messages with backpressure, batch bytes, time in buffer
//! with a background flush, record size, and fail-on-error.
//!
//! ```no_run
//! use std::time::Duration;
//! use sqs_forwarder::{Attribute, Message, SqsSink, SqsTransport, setup::client::sqs_client};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
//! let transport = SqsTransport::new(sqs_client(&sdk), "https://sqs.eu-west-1.amazonaws.com/123456789012/events");
//! let sink = SqsSink::builder(transport)
//!     .max_batch_size(10)
//!     .max_in_flight_requests(4)
//!     .max_buffered_requests(1_000)
//!     .max_batch_size_in_bytes(1_048_576)
//!     .max_time_in_buffer(Duration::from_millis(200))
//!     .max_record_size_in_bytes(262_144) // a queue still at 256 KiB
//!     .fail_on_error(true)
//!     .build();
//! let receipt = sink
//!     .send(Message::new(r#"{"order":42}"#, "order-42").attribute(Attribute::string("type", "order")))
//!     .await?;
//! sink.flush().await?;
//! let outcome = receipt.outcome().await;
//! println!("{outcome:?}");
//! sink.close().await?;
//! # Ok(()) }
//! ```

pub mod aggregate;
pub mod call;
pub mod event_reader;
pub mod message;
pub mod observe;
pub mod route;
pub mod send;
pub mod setup;
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod test_support;

#[cfg(feature = "sdk")]
pub use call::SqsTransport;
pub use call::queue::QueueTarget;
#[cfg(feature = "sdk")]
pub use call::receive::{QueueReader, ReceiveError, Received};
pub use call::transport::Transport;
pub use message::encode::{BodyEncoding, Entry};
pub use message::limits::Limits;
pub use message::{Attribute, AttributeValue, Body, Message};
pub use route::{Decision, RecordView, Routes, Skip, SourceKey, TargetId};
pub use send::batch::FifoOrder;
pub use send::offload::{OffloadSettings, PayloadStore, SizeAttribute};
pub use send::outcome::{Cause, Failure, MessageOutcome, Outcome, Summary};
pub use send::retry::RetryPolicy;
pub use send::sink::{Receipt, SinkError, SqsSink, SqsSinkBuilder};
pub use send::{
    Fanout, Forwarder, OversizePolicy, Routed, SendSettings, Tally, Window,
    deadline_from_epoch_millis,
};
pub use setup::config::{AssumeRole, Config, GroupIds};
pub use setup::env::Env;
pub use setup::error::{ConfigError, SetupError};
#[cfg(feature = "sdk")]
pub use setup::startup::connect;
