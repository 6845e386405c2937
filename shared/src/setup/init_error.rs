//! A failed cold start, reported to Lambda: the runtime API's
//! `/runtime/init/error`, with an `errorType` of the function's own
//! (`S3ToSqs.InvalidConfiguration`), before the process ends.
//!
//! Without the report, Lambda only sees the process end during init and
//! fails the invocation with its own `Runtime.ExitError` ("Runtime exited
//! with error: exit status 2"), the reason in the log alone. With it, the
//! invocation's error (the caller's answer, the on-failure destination's
//! record) carries the function's error type and the reason itself.
//! lambda_runtime posts init errors only for SnapStart hooks, so the report
//! is made here, with the HTTP client the direct SQS client already uses.

use std::error::Error;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::setup::error::{ConfigError, SetupError};

/// The kind of a failed start caused by a configuration value: a
/// [`ConfigError`], named the same way when [`SetupError::Config`] carries it.
pub const INVALID_CONFIGURATION: &str = "InvalidConfiguration";

/// The kind of any other failed start: the queue cannot be found or read,
/// the role cannot be assumed, a secret cannot be read.
pub const START_FAILED: &str = "StartFailed";

/// The runtime API's path for init errors.
pub const INIT_ERROR_PATH: &str = "/2018-06-01/runtime/init/error";

/// The header that carries the error type, besides the body's `errorType`.
pub const ERROR_TYPE_HEADER: &str = "lambda-runtime-function-error-type";

/// How long the report may take: Lambda's runtime API answers at once; a
/// start that fails must not hang on it.
const REPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// [`INVALID_CONFIGURATION`] or [`START_FAILED`], for the error a cold start
/// failed with.
pub fn kind(error: &(dyn Error + Send + Sync + 'static)) -> &'static str {
    let config = error.downcast_ref::<ConfigError>().is_some()
        || matches!(
            error.downcast_ref::<SetupError>(),
            Some(SetupError::Config(_))
        );
    if config {
        INVALID_CONFIGURATION
    } else {
        START_FAILED
    }
}

/// The `errorType` of a failed start: `<prefix>.<kind>`.
pub fn error_type(prefix: &str, error: &(dyn Error + Send + Sync + 'static)) -> String {
    format!("{prefix}.{}", kind(error))
}

/// Post the failed start to the runtime API at `api` (`host:port`, the
/// `AWS_LAMBDA_RUNTIME_API` Lambda sets): `errorType` and `errorMessage`,
/// as the runtime API takes them. An error says why the report failed.
pub async fn report(api: &str, error_type: &str, message: &str) -> Result<(), String> {
    let body = serde_json::json!({
        "errorType": error_type,
        "errorMessage": message,
        "stackTrace": [],
    })
    .to_string();
    let request = http::Request::post(format!("http://{api}{INIT_ERROR_PATH}"))
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(ERROR_TYPE_HEADER, error_type)
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| format!("cannot form the request: {e}"))?;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    match tokio::time::timeout(REPORT_TIMEOUT, client.request(request)).await {
        Err(_) => Err(format!("no answer within {REPORT_TIMEOUT:?}")),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(answer)) if answer.status().is_success() => Ok(()),
        Ok(Ok(answer)) => Err(format!("the runtime API answered {}", answer.status())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxed(e: impl Error + Send + Sync + 'static) -> Box<dyn Error + Send + Sync> {
        Box::new(e)
    }

    #[test]
    fn a_bad_value_is_invalid_configuration_and_anything_else_start_failed() {
        let config = ConfigError::new("MODE", "objects", "notification, lines");
        assert_eq!(kind(&*boxed(config.clone())), INVALID_CONFIGURATION);
        assert_eq!(
            kind(&*boxed(SetupError::Config(config))),
            INVALID_CONFIGURATION
        );
        let queue = SetupError::Queue {
            queue: "q".into(),
            code: "AWS.SimpleQueueService.NonExistentQueue".into(),
            message: "no such queue".into(),
        };
        assert_eq!(kind(&*boxed(queue)), START_FAILED);
        let other: Box<dyn Error + Send + Sync> = "a secret cannot be read".into();
        assert_eq!(error_type("S3ToSqs", &*other), "S3ToSqs.StartFailed");
    }
}
