//! The SQS call: the one `SendMessageBatch` call the forwarder makes, behind
//! the [`Transport`] trait, and the clients that make it.
//!
//! The trait and the types of a call ([`BatchItem`], [`EntryResult`],
//! [`CallError`]) are in `transport.rs`; [`SqsTransport`]
//! makes it through aws-sdk-sqs or the crate's own client ([`direct`]);
//! [`receive`] reads a queue, for the tools that take messages back out of
//! one (the replay command).

pub mod direct;
pub mod receive;
mod transport;

pub use transport::{
    BatchItem, BoxFuture, CallError, EntryResult, HttpStatus, SqsTransport, Transport,
    classify_sdk_error,
};
