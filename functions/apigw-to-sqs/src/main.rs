//! The Lambda function: cold start (this function's settings, then the shared
//! configuration, logs, metrics and the queue), then one answer per request,
//! with the metrics flushed after each.

use std::convert::Infallible;
use std::fmt::Display;

use apigw_to_sqs::event::RefuseUndecodable;
use apigw_to_sqs::{Handler, SERVICE, Settings};
use lambda_http::{Error, Request, service_fn};
use sqs_forwarder::{Env, startup};

/// mimalloc instead of glibc's malloc (see [`sqs_forwarder::allocator`]).
#[global_allocator]
static GLOBAL: sqs_forwarder::allocator::Allocator = sqs_forwarder::allocator::ALLOCATOR;

/// A failed cold start. Returned from `main`, it fails the init and prints
/// `Error: <message>` to the function's log (its `Debug` is the message).
struct InitError(String);

impl std::fmt::Debug for InitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Display for InitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InitError {}

fn init_error(e: impl Display) -> Error {
    Box::new(InitError(e.to_string()))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let settings = Settings::from_env(&Env::process()).map_err(init_error)?;
    // Group ids come from the X-Message-Group-Id header.
    let started = startup::start(SERVICE, true).await.map_err(init_error)?;
    let handler = Handler::new(started.forwarder, settings, started.config.deadline_margin);
    let handler = &handler;
    let observability = &started.observability;
    // `lambda_http::run`, with events whose base64 body does not decode
    // answered 400 before its adapter (which would panic on them).
    let service = service_fn(move |request: Request| async move {
        let response = handler.handle(request).await;
        observability.flush();
        Ok::<_, Infallible>(response)
    });
    lambda_http::lambda_runtime::run(RefuseUndecodable::new(lambda_http::Adapter::from(service)))
        .await
}
