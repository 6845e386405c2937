//! rabbitmq-to-sqs's Lambda entry point: [`Lambda`] started once, then one
//! [`Lambda::invoke`] call per invocation (a scheduled poll of RabbitMQ, or
//! an Amazon MQ `aws:rmq` batch). See the crate docs and the README.

use std::process::ExitCode;

use lambda_runtime::service_fn;
use rabbitmq_to_sqs::Lambda;
use sqs_forwarder::event_reader::invocations;
use sqs_forwarder::setup::startup;

/// mimalloc instead of glibc's malloc (see [`sqs_forwarder::setup::allocator`]).
#[global_allocator]
static GLOBAL: sqs_forwarder::setup::allocator::Allocator =
    sqs_forwarder::setup::allocator::ALLOCATOR;

// One thread: the forwarder's calls and the broker's deliveries are I/O
// (the AMQP client reads the socket on this runtime too), and a single-threaded
// runtime spends the least CPU per message (see bench/README.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    startup::main(|f: &'static Lambda| invocations::run(service_fn(|e| f.invoke(e)))).await
}
