//! The error answer of a call (non-2xx): its code, message and
//! retryability, read as the SDK reads them.

use crate::call::transport::CallError;
use crate::send::codes;
use crate::send::outcome::Failure;
use crate::send::retry::{bare_code, call_retryable};

/// `code` and `message` of an AWS JSON error body, as the SDK reads them:
/// `code`, else `__type`; `message`, `Message` or `errorMessage`. Anything
/// that is not a JSON object gives neither.
fn error_body(body: &[u8]) -> (Option<String>, Option<String>) {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(body)
    else {
        return (None, None);
    };
    let text = |k: &str| map.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    let code = text("code").or_else(|| text("__type"));
    let message = text("message")
        .or_else(|| text("Message"))
        .or_else(|| text("errorMessage"));
    (code, message)
}

/// An error code without a trailing `:<url>` and a leading `<namespace>#`,
/// as the SDK's `sanitize_error_code` leaves it.
pub fn sanitize_error_code(code: &str) -> &str {
    let code = code.split_once(':').map_or(code, |(c, _)| c);
    code.split_once('#').map_or(code, |(_, c)| c)
}

/// The whole-call error of a non-2xx answer, as
/// [`crate::call::sdk::classify_sdk_error`] classifies the SDK's: the code
/// is the query-compatible one (`x-amzn-query-error`) when SQS sends it,
/// else `x-amzn-errortype`, else the body's (sanitized); no code at all
/// (a non-JSON 5xx from a proxy) is `UnknownError`, retryable by its
/// status. `BatchRequestTooLong`, in either spelling, is
/// [`CallError::TooLong`].
pub fn call_error(
    status: u16,
    query_error: Option<&str>,
    error_type: Option<&str>,
    body: &[u8],
) -> CallError {
    call_error_of("SendMessageBatch", status, query_error, error_type, body)
}

/// [`call_error`] for a call to `operation` (its name in the message made
/// up for an error answer without one).
pub fn call_error_of(
    operation: &str,
    status: u16,
    query_error: Option<&str>,
    error_type: Option<&str>,
    body: &[u8],
) -> CallError {
    let (body_code, message) = error_body(body);
    let query_code = query_error.and_then(|h| h.split_once(';').map(|(c, _)| c));
    let code: Option<String> = match query_code {
        Some(c) => Some(c.to_owned()),
        None => error_type
            .or(body_code.as_deref())
            .map(|c| sanitize_error_code(c).to_owned()),
    };
    let message = message.unwrap_or_default();
    if code
        .as_deref()
        .is_some_and(|c| bare_code(c) == "BatchRequestTooLong")
    {
        return CallError::TooLong(message);
    }
    let code = code.unwrap_or_else(|| codes::UNKNOWN_ERROR.to_owned());
    let message = if message.is_empty() {
        format!("{operation} failed with HTTP {status}")
    } else {
        message
    };
    let retryable = call_retryable(Some(&code), Some(status));
    CallError::Failed(Failure::new(code, message, retryable))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(e: CallError) -> Failure {
        match e {
            CallError::Failed(f) => f,
            CallError::TooLong(m) => panic!("TooLong({m})"),
        }
    }

    #[test]
    fn throttling_is_retryable() {
        // What SQS answers (JSON protocol, query-compatible header).
        let f = failed(call_error(
            400,
            Some("AWS.SimpleQueueService.RequestThrottled;Sender"),
            None,
            br#"{"__type":"com.amazonaws.sqs#RequestThrottled","message":"Rate exceeded"}"#,
        ));
        assert_eq!(f.code, "AWS.SimpleQueueService.RequestThrottled");
        assert_eq!(f.message, "Rate exceeded");
        assert!(f.retryable);
        // Without the header: the sanitized __type.
        let f = failed(call_error(
            400,
            None,
            None,
            br#"{"__type":"com.amazon.coral.availability#ThrottlingException:http://internal.amazon.com/","message":"slow down"}"#,
        ));
        assert_eq!(f.code, "ThrottlingException");
        assert!(f.retryable);
    }

    #[test]
    fn batch_request_too_long_splits() {
        assert_eq!(
            call_error(
                400,
                Some("AWS.SimpleQueueService.BatchRequestTooLong;Sender"),
                None,
                br#"{"__type":"com.amazonaws.sqs#BatchRequestTooLong","message":"Batch requests cannot be longer than 1048576 bytes."}"#,
            ),
            CallError::TooLong("Batch requests cannot be longer than 1048576 bytes.".into())
        );
        assert_eq!(
            call_error(
                400,
                None,
                None,
                br#"{"__type":"com.amazonaws.sqs#BatchRequestTooLong"}"#
            ),
            CallError::TooLong(String::new())
        );
    }

    #[test]
    fn permanent_errors_and_non_json_answers() {
        let f = failed(call_error(
            400,
            Some("AWS.SimpleQueueService.NonExistentQueue;Sender"),
            None,
            br#"{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}"#,
        ));
        assert_eq!(f.code, "AWS.SimpleQueueService.NonExistentQueue");
        assert!(!f.retryable);
        let f = failed(call_error(
            403,
            None,
            Some("AccessDeniedException:http://x"),
            br#"{"Message":"User is not authorized"}"#,
        ));
        assert_eq!(f.code, "AccessDeniedException");
        assert_eq!(f.message, "User is not authorized");
        assert!(!f.retryable);
        let f = failed(call_error(
            400,
            None,
            None,
            br#"{"__type":"com.amazonaws.sqs#KmsDisabled","message":"k"}"#,
        ));
        assert_eq!(f.code, "KmsDisabled");
        assert!(!f.retryable);
        // A load balancer's HTML 503: no code, retried by its status.
        let f = failed(call_error(
            503,
            None,
            None,
            b"<html><body>Service Unavailable</body></html>",
        ));
        assert_eq!(f.code, "UnknownError");
        assert_eq!(f.message, "SendMessageBatch failed with HTTP 503");
        assert!(f.retryable);
        let f = failed(call_error(400, None, None, b""));
        assert_eq!(f.code, "UnknownError");
        assert!(!f.retryable);
        // A malformed header is ignored, the body's code used.
        let f = failed(call_error(
            500,
            Some("garbage"),
            None,
            br#"{"__type":"InternalError"}"#,
        ));
        assert_eq!(f.code, "InternalError");
        assert!(f.retryable);
    }

    #[test]
    fn codes_are_sanitized_like_the_sdk() {
        assert_eq!(
            sanitize_error_code("aws.protocoltests#FooError"),
            "FooError"
        );
        assert_eq!(
            sanitize_error_code("FooError:http://internal.amazon.com/coral/"),
            "FooError"
        );
        assert_eq!(
            sanitize_error_code("aws.protocoltests.restjson#FooError:http://x/"),
            "FooError"
        );
        assert_eq!(sanitize_error_code("FooError"), "FooError");
    }
}
