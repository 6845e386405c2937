//! From outcomes to the HTTP answer.
//!
//! Every answer is JSON. A request refused before anything was sent gets
//! `{"error": {"code", "message"}}`. A request whose messages were handed to
//! SQS gets one result per message, in body order:
//!
//! ```json
//! {"sent": 1, "failed": 1, "dropped": 0,
//!  "results": [
//!    {"index": 0, "status": "sent", "messageId": "…"},
//!    {"index": 1, "status": "failed",
//!     "error": {"code": "RequestThrottled", "message": "…", "retryable": true}}]}
//! ```
//!
//! and, when its status is an error, `"error"` beside them. The status:
//!
//! * `202` every message was sent (or dropped by `OVERSIZE_POLICY=drop`);
//! * `207` some were sent and some failed, or none was sent and the failures
//!   differ in kind: the client retries the failed indexes (those with
//!   `"retryable": true` as they are);
//! * when no message was sent and the failures agree in kind:
//!   `429` all retryable and at least one was throttled by SQS,
//!   `503` all retryable otherwise (the deadline ran out, SQS unavailable),
//!   both with `Retry-After`;
//!   `413` all were too large for the queue;
//!   `400` all were refused for their content;
//!   `502` all were refused by the queue for a reason that is not the
//!   request's (access denied, missing queue, KMS): never for bad input.

use std::time::Duration;

use lambda_http::Body;
use lambda_http::http::{HeaderValue, Response, StatusCode, header};
use serde::Serialize;
use sqs_forwarder::{Cause, Failure, MessageOutcome, Outcome};

use crate::reject::Rejection;

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

/// An error object: a machine-readable code and a human message.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ErrorBody {
    /// Machine-readable.
    pub code: String,
    /// Human-readable.
    pub message: String,
    /// Per message only: whether sending it again could succeed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
}

/// One message's result.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MessageResult {
    /// Position in the body: 0 for a single message, the element or
    /// non-blank line number (from 0) in a batch.
    pub index: usize,
    /// `sent`, `failed` or `dropped`.
    pub status: &'static str,
    /// The SQS message id, when sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The FIFO sequence number, when sent to a FIFO queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<String>,
    /// Why it failed or was dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

/// The body of an answer about sent messages.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Report {
    /// Set when the status is an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
    /// Messages SQS accepted.
    pub sent: usize,
    /// Messages that failed.
    pub failed: usize,
    /// Messages dropped by `OVERSIZE_POLICY=drop`.
    pub dropped: usize,
    /// One per message, in body order.
    pub results: Vec<MessageResult>,
}

#[derive(Serialize)]
struct ErrorOnly<'a> {
    error: &'a ErrorBody,
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
                    "DeadlineExceeded",
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
            error("MessageTooLarge", Class::TooLarge.client_message(first)),
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

/// The report of a set of outcomes.
pub fn report(outcomes: &[MessageOutcome<usize>], error: Option<ErrorBody>) -> Report {
    let mut r = Report {
        error,
        sent: 0,
        failed: 0,
        dropped: 0,
        results: Vec::with_capacity(outcomes.len()),
    };
    for o in outcomes {
        let mut result = MessageResult {
            index: o.position,
            status: "sent",
            message_id: None,
            sequence_number: None,
            error: None,
        };
        match &o.outcome {
            Outcome::Sent {
                message_id,
                sequence_number,
            } => {
                r.sent += 1;
                result.message_id = Some(message_id.clone());
                result.sequence_number = sequence_number.clone();
            }
            Outcome::Failed(f) => {
                r.failed += 1;
                result.status = "failed";
                result.error = Some(ErrorBody {
                    code: f.code.clone(),
                    message: Class::of(f).client_message(f),
                    retryable: Some(f.retryable),
                });
            }
            Outcome::Dropped { reason } => {
                r.dropped += 1;
                result.status = "dropped";
                result.error = Some(ErrorBody {
                    code: "Dropped".into(),
                    message: reason.clone(),
                    retryable: Some(false),
                });
            }
        }
        r.results.push(result);
    }
    r
}

fn json_response(
    status: StatusCode,
    body: String,
    retry_after: Option<Duration>,
) -> Response<Body> {
    let mut response = Response::new(Body::Text(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let retry = matches!(
        status,
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
    );
    if let (true, Some(after)) = (retry, retry_after) {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(after.as_secs()));
    }
    response
}

fn to_json<T: Serialize>(value: &T) -> String {
    // Serializing these plain structs cannot fail; keep a valid body if it did.
    serde_json::to_string(value).unwrap_or_else(|_| {
        r#"{"error":{"code":"InternalError","message":"the answer could not be written"}}"#.into()
    })
}

/// The answer to a set of outcomes.
pub fn from_outcomes(
    outcomes: &[MessageOutcome<usize>],
    retry_after: Duration,
) -> (StatusCode, Report, Response<Body>) {
    let (status, error) = verdict(outcomes);
    let report = report(outcomes, error);
    let response = json_response(status, to_json(&report), Some(retry_after));
    (status, report, response)
}

/// The answer to a refused request.
pub fn from_rejection(r: &Rejection, retry_after: Duration) -> Response<Body> {
    let error = ErrorBody {
        code: r.code.into(),
        message: r.message.clone(),
        retryable: None,
    };
    json_response(
        r.status,
        to_json(&ErrorOnly { error: &error }),
        Some(retry_after),
    )
}

/// A small JSON answer (health, 404, 405).
pub fn plain(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    json_response(status, value.to_string(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(i: usize) -> MessageOutcome<usize> {
        MessageOutcome {
            position: i,
            outcome: Outcome::Sent {
                message_id: format!("id-{i}"),
                sequence_number: None,
            },
            attempts: 1,
        }
    }

    fn failed(i: usize, code: &str, retryable: bool) -> MessageOutcome<usize> {
        MessageOutcome {
            position: i,
            outcome: Outcome::Failed(Failure::new(
                code,
                format!("{code} happened to arn:aws:sqs:eu-west-1:123456789012:q"),
                retryable,
            )),
            attempts: 1,
        }
    }

    fn status(outcomes: &[MessageOutcome<usize>]) -> (u16, Option<String>) {
        let (s, e) = verdict(outcomes);
        (s.as_u16(), e.map(|e| e.code))
    }

    #[test]
    fn the_status_rule() {
        assert_eq!(status(&[sent(0), sent(1)]), (202, None));
        let dropped = MessageOutcome {
            position: 1,
            outcome: Outcome::Dropped {
                reason: "big".into(),
            },
            attempts: 0,
        };
        assert_eq!(status(&[sent(0), dropped]), (202, None));
        assert_eq!(
            status(&[sent(0), failed(1, "RequestThrottled", true)]),
            (207, None)
        );
        assert_eq!(
            status(&[sent(0), failed(1, "InvalidMessageContents", false)]),
            (207, None)
        );
        assert_eq!(
            status(&[
                failed(0, "RequestThrottled", true),
                failed(1, "DeadlineExceeded", true)
            ]),
            (429, Some("Throttled".into()))
        );
        assert_eq!(
            status(&[
                failed(0, "DeadlineExceeded", true),
                failed(1, "GroupBlocked", true)
            ]),
            (503, Some("DeadlineExceeded".into()))
        );
        assert_eq!(
            status(&[failed(0, "InternalError", true)]),
            (503, Some("QueueUnavailable".into()))
        );
        assert_eq!(
            status(&[failed(0, "MessageTooLarge", false)]),
            (413, Some("MessageTooLarge".into()))
        );
        assert_eq!(
            status(&[
                failed(0, "InvalidMessageContents", false),
                failed(1, "InvalidAttributeValue", false)
            ]),
            (400, Some("InvalidMessage".into()))
        );
        assert_eq!(
            status(&[failed(0, "AccessDenied", false)]),
            (502, Some("QueueRefused".into()))
        );
        // Nothing sent, failures of different kinds: per-message results.
        assert_eq!(
            status(&[
                failed(0, "RequestThrottled", true),
                failed(1, "MessageTooLarge", false)
            ]),
            (207, None)
        );
    }

    #[test]
    fn reports_list_every_message_and_hide_upstream_details() {
        let outcomes = [
            sent(0),
            failed(1, "AccessDenied", false),
            failed(2, "RequestThrottled", true),
        ];
        let (status, report, response) = from_outcomes(&outcomes, Duration::from_secs(3));
        assert_eq!(status, StatusCode::MULTI_STATUS);
        assert_eq!(response.status(), StatusCode::MULTI_STATUS);
        assert!(response.headers().get(header::RETRY_AFTER).is_none());
        assert_eq!((report.sent, report.failed, report.dropped), (1, 2, 0));
        let Body::Text(text) = response.body() else {
            panic!("a text body");
        };
        let v: serde_json::Value = serde_json::from_str(text).expect("json");
        assert_eq!(v["results"][0]["index"], 0);
        assert_eq!(v["results"][0]["status"], "sent");
        assert_eq!(v["results"][0]["messageId"], "id-0");
        assert_eq!(v["results"][1]["error"]["code"], "AccessDenied");
        assert_eq!(v["results"][1]["error"]["retryable"], false);
        assert_eq!(v["results"][2]["error"]["retryable"], true);
        assert!(!text.contains("123456789012"), "no account ids: {text}");
        assert!(v.get("error").is_none());
    }

    #[test]
    fn throttled_answers_carry_retry_after() {
        let (_, _, response) = from_outcomes(
            &[failed(0, "RequestThrottled", true)],
            Duration::from_secs(7),
        );
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "7");
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let r = from_rejection(
            &Rejection::bad_request("InvalidJson", "the body is not valid JSON"),
            Duration::from_secs(7),
        );
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert!(r.headers().get(header::RETRY_AFTER).is_none());
        let Body::Text(text) = r.body() else {
            panic!("a text body");
        };
        let v: serde_json::Value = serde_json::from_str(text).expect("json");
        assert_eq!(
            v,
            serde_json::json!({"error": {"code": "InvalidJson", "message": "the body is not valid JSON"}})
        );
    }
}
