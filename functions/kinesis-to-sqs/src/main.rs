//! kinesis-to-sqs's Lambda entry point: [`Lambda`] started once, then one
//! [`invoke`] call per batch. See the crate docs.

use std::process::ExitCode;

use kinesis_to_sqs::event::{Incoming, KinesisEventResponse};
use kinesis_to_sqs::{InvocationError, Lambda};
use lambda_runtime::{LambdaEvent, service_fn};
use sqs_forwarder::event_reader::Checked;
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

/// The event is read as [`Incoming`] (the fields the function uses) by
/// [`Checked`] (serde_json without lambda_runtime's per-field path
/// tracking, the path named only when it is malformed; a malformed event
/// kept as its error, so that it fails as `KinesisToSqs.InvalidEvent`). The
/// error stays an [`InvocationError`], whose `Into<Diagnostic>` gives Lambda
/// its `errorType`: boxed into `lambda_runtime::Error`, it would be reported
/// by its Rust type's name.
async fn invoke(
    lambda: &Lambda,
    event: LambdaEvent<Checked<Incoming>>,
) -> Result<KinesisEventResponse, InvocationError> {
    lambda.invoke(event).await
}
