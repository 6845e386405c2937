//! rabbitmq-to-sqs: a scheduled poll of RabbitMQ (or an Amazon MQ `aws:rmq`
//! batch) → messages → SQS → acks. See the crate docs and the README.

use std::process::ExitCode;

use lambda_runtime::{LambdaEvent, service_fn};
use rabbitmq_to_sqs::{Function, SERVICE, Settings};
use serde_json::Value;
use sqs_forwarder::{Env, startup};

/// mimalloc instead of glibc's malloc (see [`sqs_forwarder::allocator`]).
#[global_allocator]
static GLOBAL: sqs_forwarder::allocator::Allocator = sqs_forwarder::allocator::ALLOCATOR;

#[tokio::main]
async fn main() -> ExitCode {
    // Cold start: this function's own settings (no network needed), then
    // the shared configuration, logs, metrics and the queue. A bad value
    // stops the start, naming the variable.
    let settings = match Settings::from_env(&Env::process()) {
        Ok(s) => s,
        Err(e) => return init_failed(&e),
    };
    // Group ids always come from the messages (routing key, header or the
    // queue name), so a FIFO target needs no MESSAGE_GROUP_ID.
    let started = match startup::start(SERVICE, true).await {
        Ok(s) => s,
        Err(e) => return init_failed(&e),
    };
    let secrets_client = match settings
        .broker
        .as_ref()
        .and_then(|b| b.password_secret.as_ref())
    {
        Some(_) => {
            let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
            Some(aws_sdk_secretsmanager::Client::new(&sdk))
        }
        None => None,
    };
    let margin = started.margin();
    let observability = started.observability;
    let function = match Function::new(settings, started.forwarder, margin, secrets_client) {
        Ok(f) => f,
        Err(e) => return init_failed(&e),
    };
    let function = &function;

    let handler = service_fn(move |event: LambdaEvent<Value>| async move {
        // Boxed: the poll's future is deep (lapin, the SQS SDK), too deep for
        // the compiler's layout query when inlined into the runtime's.
        let result = Box::pin(function.handle(event.payload, event.context.deadline)).await;
        if let Err(e) = &result {
            tracing::error!(error = %e, "invocation failed");
        }
        observability.flush();
        result
    });
    match lambda_runtime::run(handler).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{SERVICE}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A failed cold start: say why (naming the variable) and exit, which fails
/// the Lambda init with this message in the log.
fn init_failed(e: &dyn std::fmt::Display) -> ExitCode {
    tracing::error!(error = %e, "cold start failed");
    eprintln!("{SERVICE}: {e}");
    ExitCode::from(2)
}
