//! The Lambda entry point: settings and queue at cold start, then one
//! [`kinesis_to_sqs::handle`] per batch, metrics flushed after each.

use std::process::ExitCode;

use kinesis_to_sqs::event::KinesisEvent;
use kinesis_to_sqs::{SERVICE, Settings, handle};
use lambda_runtime::{LambdaEvent, service_fn};
use sqs_forwarder::{Env, startup};

/// mimalloc instead of glibc's malloc (see [`sqs_forwarder::allocator`]).
#[global_allocator]
static GLOBAL: sqs_forwarder::allocator::Allocator = sqs_forwarder::allocator::ALLOCATOR;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    // A bad value fails the init with a message naming the variable, the
    // value and what is allowed.
    let settings = match Settings::from_env(&Env::process()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let started = match startup::start(SERVICE, settings.source_sets_group_ids()).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let started = &started;
    let settings = &settings;
    let result = lambda_runtime::run(service_fn(
        move |event: LambdaEvent<KinesisEvent>| async move {
            let deadline = started.deadline(event.context.deadline);
            tracing::debug!(
                deadline_ms = event.context.deadline,
                left_ms = deadline
                    .saturating_duration_since(tokio::time::Instant::now())
                    .as_millis() as u64,
                "invocation"
            );
            let answer = handle(&started.forwarder, settings, event.payload, Some(deadline)).await;
            started.observability.flush();
            answer.map_err(|e| -> lambda_runtime::Error { Box::new(e) })
        },
    ))
    .await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "the Lambda runtime stopped");
            ExitCode::FAILURE
        }
    }
}
