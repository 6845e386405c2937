//! apigw-to-sqs's Lambda entry point: [`Lambda`] started once, then one
//! [`Lambda::invoke`] call per request. See the crate docs.

use std::process::ExitCode;

use apigw_to_sqs::Lambda;
use apigw_to_sqs::event::{HttpEvent, RefuseUndecodable};
use lambda_http::{Adapter, service_fn};
use sqs_forwarder::event_reader::invocations;
use sqs_forwarder::setup::startup;

/// mimalloc instead of glibc's malloc (see [`sqs_forwarder::setup::allocator`]).
#[global_allocator]
static GLOBAL: sqs_forwarder::setup::allocator::Allocator =
    sqs_forwarder::setup::allocator::ALLOCATOR;

// One thread: the forwarder's calls are I/O, and a single-threaded runtime
// spends the least CPU per record (see bench/README.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    // `lambda_http::run`, with events whose base64 body does not decode,
    // whose path and query string cannot form a URI, or that are malformed,
    // answered 400 before its adapter (which would panic on the first two,
    // and fail the invocation on the last); a host or scheme that cannot
    // form a URI is left out of it (see `apigw_to_sqs::event`). The event
    // is read once, before the runtime's deserialization
    // (`sqs_forwarder::event_reader::once`).
    startup::main(|f: &'static Lambda| {
        let service = Adapter::from(service_fn(|r| f.invoke(r)));
        invocations::run_read_once::<HttpEvent, _, _>(RefuseUndecodable::new(service))
    })
    .await
}
