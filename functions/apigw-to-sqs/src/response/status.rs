//! The status rule: from a request's outcomes to its HTTP status, and the
//! error beside the results when that status is one.

use lambda_http::http::StatusCode;
use sqs_forwarder::send::codes::{DEADLINE_EXCEEDED, MESSAGE_TOO_LARGE};
use sqs_forwarder::{Cause, Failure, MessageOutcome};

use super::ErrorBody;

/// The kind of a per-message failure, for the status and the message shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Retryable, and SQS asked to slow down.
    Throttled,
    /// Retryable otherwise (deadline, SQS unavailable, connection).
    Unavailable,
    /// Too large for the queue.
    TooLarge,
    /// Refused for its content.
    BadInput,
    /// Refused by the queue for a reason that is not the request's.
    Upstream,
}

impl Class {
    /// The class of a failure.
    pub fn of(f: &Failure) -> Class {
        match f.cause {
            Cause::Throttled => Class::Throttled,
            Cause::TooLarge => Class::TooLarge,
            Cause::Content => Class::BadInput,
            Cause::Transient => Class::Unavailable,
            // `Cause` may grow: anything not the request's is upstream.
            _ if f.retryable => Class::Unavailable,
            _ => Class::Upstream,
        }
    }

    /// What the client is told. The shared crate's and SQS's own texts are
    /// shown only where they are about the message; others can name queues,
    /// accounts or endpoints, and go to the logs instead.
    pub fn client_message(self, f: &Failure) -> String {
        match self {
            Class::Throttled => "SQS is throttling; retry this message later".into(),
            Class::Unavailable if f.is_deadline() => {
                "the request ran out of time before this message could be sent; retry it".into()
            }
            Class::Unavailable => {
                format!("SQS could not take this message now ({}); retry it", f.code)
            }
            Class::TooLarge | Class::BadInput => f.message.clone(),
            Class::Upstream => format!(
                "the queue refused this message ({}); this is not a problem with the request, see the function's logs",
                f.code
            ),
        }
    }
}

/// The status, and the error when the status is one, for a set of outcomes.
pub fn verdict(outcomes: &[MessageOutcome<usize>]) -> (StatusCode, Option<ErrorBody>) {
    let failures: Vec<&Failure> = outcomes
        .iter()
        .filter_map(|o| o.outcome.failure())
        .collect();
    let Some(first) = failures.first() else {
        return (StatusCode::ACCEPTED, None);
    };
    if failures.len() < outcomes.len() {
        return (StatusCode::MULTI_STATUS, None);
    }
    let classes: Vec<Class> = failures.iter().map(|f| Class::of(f)).collect();
    let all = |c: &[Class]| classes.iter().all(|x| c.contains(x));
    let n = failures.len();
    let error = |code: &str, message: String| {
        Some(ErrorBody {
            code: code.into(),
            message,
            retryable: None,
        })
    };
    if all(&[Class::Throttled, Class::Unavailable]) {
        if classes.contains(&Class::Throttled) {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                error(
                    "Throttled",
                    format!(
                        "SQS is throttling; none of the {n} messages was sent: retry after the Retry-After delay"
                    ),
                ),
            );
        }
        let deadline = failures.iter().any(|f| f.is_deadline());
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            if deadline {
                error(
                    DEADLINE_EXCEEDED,
                    format!(
                        "the request ran out of time; none of the {n} messages was sent: retry after the Retry-After delay"
                    ),
                )
            } else {
                error(
                    "QueueUnavailable",
                    format!(
                        "SQS could not take the messages now ({}); none of the {n} was sent: retry after the Retry-After delay",
                        first.code
                    ),
                )
            },
        );
    }
    if all(&[Class::TooLarge]) {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            error(MESSAGE_TOO_LARGE, Class::TooLarge.client_message(first)),
        );
    }
    if all(&[Class::BadInput]) {
        return (
            StatusCode::BAD_REQUEST,
            error("InvalidMessage", Class::BadInput.client_message(first)),
        );
    }
    if all(&[Class::Upstream]) {
        return (
            StatusCode::BAD_GATEWAY,
            error("QueueRefused", Class::Upstream.client_message(first)),
        );
    }
    (StatusCode::MULTI_STATUS, None)
}
