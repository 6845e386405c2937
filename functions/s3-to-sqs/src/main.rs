//! s3-to-sqs's Lambda entry point: [`Lambda`] started once, then one
//! [`invoke`] call per event. See the crate docs.

use std::process::ExitCode;

use lambda_runtime::{LambdaEvent, service_fn};
use s3_to_sqs::event::Event;
use s3_to_sqs::{HandlerError, Lambda};
use serde_json::Value;
use sqs_forwarder::setup::startup;

/// mimalloc instead of glibc's malloc (see [`sqs_forwarder::setup::allocator`]).
#[global_allocator]
static GLOBAL: sqs_forwarder::setup::allocator::Allocator =
    sqs_forwarder::setup::allocator::ALLOCATOR;

// One thread: the forwarder's calls are I/O, and a single-threaded runtime
// spends the least CPU per record (see bench/README.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    startup::main(|f: &'static Lambda| lambda_runtime::run(service_fn(|e| invoke(f, e)))).await
}

/// The event is read as [`Event`]: borrowed from the invocation's body, by
/// serde_json without lambda_runtime's per-field path tracking. The error
/// stays a [`HandlerError`], whose `Into<Diagnostic>` gives Lambda its
/// `errorType` (`S3ToSqs.InvalidEvent`, `S3ToSqs.NotForwarded`): boxed into
/// `lambda_runtime::Error`, it would be reported by its Rust type's name.
async fn invoke(lambda: &Lambda, event: LambdaEvent<Event>) -> Result<Value, HandlerError> {
    lambda.invoke(event).await
}
