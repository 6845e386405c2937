//! The hand-over: the function invokes itself asynchronously
//! (`InvocationType=Event`) with the continuation event. Lambda queues the
//! event and answers 202 at once; the next step runs as a fresh invocation,
//! with Lambda's retries and on-failure destination as for S3's events.
//!
//! The Lambda client is built on the first hand-over, not at cold start
//! (`OnFirstUse`): an invocation that hands nothing over never builds it.
//! Its endpoint follows the SDK's settings (`AWS_ENDPOINT_URL_LAMBDA` for a
//! local stand-in).

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;
use sqs_forwarder::setup::on_first_use::OnFirstUse;

/// What [`SelfInvoke::invoke`] returns.
pub type InvokeFuture<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// Invokes the function itself with an event, asynchronously.
pub trait SelfInvoke: Send + Sync + fmt::Debug {
    /// Queue one invocation with `payload` (the event's JSON); `Err` says
    /// why Lambda did not take it.
    fn invoke(&self, payload: Vec<u8>) -> InvokeFuture<'_>;
}

/// A Lambda client from the function's own SDK settings.
pub fn lambda_client(sdk: &aws_config::SdkConfig) -> aws_sdk_lambda::Client {
    aws_sdk_lambda::Client::new(sdk)
}

/// [`SelfInvoke`] through Lambda's `Invoke` API.
pub struct LambdaInvoke {
    client: OnFirstUse<aws_sdk_lambda::Client>,
    function: String,
}

impl LambdaInvoke {
    /// Invoke `function` (its name) with `client`.
    pub fn new(client: OnFirstUse<aws_sdk_lambda::Client>, function: impl Into<String>) -> Self {
        LambdaInvoke {
            client,
            function: function.into(),
        }
    }
}

impl fmt::Debug for LambdaInvoke {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LambdaInvoke")
            .field("function", &self.function)
            .finish_non_exhaustive()
    }
}

impl SelfInvoke for LambdaInvoke {
    fn invoke(&self, payload: Vec<u8>) -> InvokeFuture<'_> {
        Box::pin(async move {
            let out = self
                .client
                .get()
                .invoke()
                .function_name(&self.function)
                .invocation_type(InvocationType::Event)
                .payload(Blob::new(payload))
                .send()
                .await
                .map_err(|e| {
                    let (code, message) = sqs_forwarder::send::codes::sdk_error_parts(&e);
                    format!("Lambda Invoke of {}: {code}: {message}", self.function)
                })?;
            match out.status_code() {
                202 => Ok(()),
                other => Err(format!(
                    "Lambda Invoke of {} answered {other}, not 202 (queued)",
                    self.function
                )),
            }
        })
    }
}
