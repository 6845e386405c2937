//! kinesis-to-sqs's Lambda entry point: [`Lambda`] started once, then one
//! [`Lambda::invoke`] call per batch. See the crate docs.
//!
//! The event is read once, before the runtime's deserialization
//! (`event_reader::once`), as `Incoming` (the fields the function uses) by
//! `Checked` (serde_json without lambda_runtime's per-field path tracking,
//! the path named only when it is malformed; a malformed event kept as its
//! error, so that it fails as `KinesisToSqs.InvalidEvent`).

use std::process::ExitCode;

use kinesis_to_sqs::Lambda;
use kinesis_to_sqs::event::Incoming;
use lambda_runtime::service_fn;
use sqs_forwarder::event_reader::{Checked, invocations};
use sqs_forwarder::setup::startup;

/// mimalloc instead of glibc's malloc (see [`sqs_forwarder::setup::allocator`]).
#[global_allocator]
static GLOBAL: sqs_forwarder::setup::allocator::Allocator =
    sqs_forwarder::setup::allocator::ALLOCATOR;

// One thread: the forwarder's calls are I/O, and a single-threaded runtime
// spends the least CPU per record (see bench/README.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    startup::main(|f: &'static Lambda| {
        invocations::run_read_once::<Checked<Incoming>, _, _>(service_fn(|e| f.invoke(e)))
    })
    .await
}
