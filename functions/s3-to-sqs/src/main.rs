//! s3-to-sqs: S3 event notifications (or the lines of the objects they name)
//! to Amazon SQS. Settings are read and checked once at cold start; a bad
//! one stops the start with a message naming the variable.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use s3_to_sqs::{Handler, SERVICE, Settings, reader_sdk, s3_client};
use serde_json::Value;
use sqs_forwarder::{Env, deadline_from_epoch_millis, startup};

/// mimalloc instead of glibc's malloc (see [`sqs_forwarder::allocator`]).
#[global_allocator]
static GLOBAL: sqs_forwarder::allocator::Allocator = sqs_forwarder::allocator::ALLOCATOR;

/// Print why the function cannot start and stop (Lambda reports the init
/// failure with this output in the function's log).
fn cannot_start(error: &dyn std::fmt::Display) -> ! {
    eprintln!("{SERVICE}: cannot start: {error}");
    std::process::exit(1)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let settings = Settings::from_env(&Env::process()).unwrap_or_else(|e| cannot_start(&e));
    let started = startup::start(SERVICE, settings.sets_group_ids())
        .await
        .unwrap_or_else(|e| cannot_start(&e));
    // Objects are read with the function's own credentials: ASSUME_ROLE_ARN
    // is for the queue only.
    let reader = reader_sdk(&started.sdk, started.config.assume_role.is_some()).await;
    let s3 = s3_client(&reader, settings.s3_force_path_style);
    let margin = started.margin();
    let observability = started.observability;
    let handler = Handler::new(settings, started.forwarder, s3);
    let handler = &handler;
    let observability = &observability;

    run(service_fn(move |event: LambdaEvent<Value>| async move {
        let deadline = deadline_from_epoch_millis(event.context.deadline, margin);
        let result = handler.handle(event.payload, Some(deadline)).await;
        observability.flush();
        result.map(|report| serde_json::to_value(report).unwrap_or(Value::Null))
    }))
    .await
}
