//! From outcomes to the HTTP answer.
//!
//! Every answer is JSON. A request refused before anything was sent gets
//! `{"error": {"code", "message"}}`. A request whose messages were handed to
//! SQS gets one result per message, in body order:
//!
//! ```json
//! {"sent": 1, "failed": 1, "dropped": 0, "skipped": 0,
//!  "results": [
//!    {"index": 0, "status": "sent", "messageId": "…"},
//!    {"index": 1, "status": "failed",
//!     "error": {"code": "RequestThrottled", "message": "…", "retryable": true}}]}
//! ```
//!
//! and, when its status is an error, `"error"` beside them. The status:
//!
//! * `202` every message was sent (or dropped by `OVERSIZE_POLICY=drop`, or
//!   skipped by the routing rules: `"status": "skipped"`, with the rule's
//!   `reason`);
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
use sqs_forwarder::{MessageOutcome, Outcome, Skip};

use crate::reject::Rejection;

mod status;

pub use status::{Class, verdict};

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
    /// `sent`, `failed`, `dropped` (`OVERSIZE_POLICY=drop`) or `skipped`
    /// (the routing rules sent it nowhere, on purpose: done, not to be sent
    /// again).
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
    /// Why the routing rules skipped it (`FilteredOut`, `Unmatched`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<ErrorBody>,
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
    /// Messages the routing rules sent nowhere (`ROUTES` `filter`, or
    /// `unmatched: drop`).
    pub skipped: usize,
    /// One per message, in body order.
    pub results: Vec<MessageResult>,
}

#[derive(Serialize)]
struct ErrorOnly<'a> {
    error: &'a ErrorBody,
}

/// Why the routing rules skipped a message, as its result says it.
pub fn skip_reason(skip: Skip) -> ErrorBody {
    let (code, message) = match skip {
        Skip::FilteredOut => (
            "FilteredOut",
            "a ROUTES filter condition did not hold: not sent, on purpose",
        ),
        Skip::Unmatched => (
            "Unmatched",
            "no ROUTES route matched and unmatched is drop: not sent, on purpose",
        ),
    };
    ErrorBody {
        code: code.into(),
        message: message.into(),
        retryable: None,
    }
}

/// The report of a set of outcomes; `skips[i]` says whether the routing
/// rules skipped message `i` (its outcome is then a drop).
pub fn report(
    outcomes: &[MessageOutcome<usize>],
    skips: &[Option<Skip>],
    error: Option<ErrorBody>,
) -> Report {
    let mut r = Report {
        error,
        sent: 0,
        failed: 0,
        dropped: 0,
        skipped: 0,
        results: Vec::with_capacity(outcomes.len()),
    };
    for o in outcomes {
        let mut result = MessageResult {
            index: o.position,
            status: "sent",
            message_id: None,
            sequence_number: None,
            error: None,
            reason: None,
        };
        if let (Outcome::Dropped { .. }, Some(skip)) =
            (&o.outcome, skips.get(o.position).copied().flatten())
        {
            r.skipped += 1;
            result.status = "skipped";
            result.reason = Some(skip_reason(skip));
            r.results.push(result);
            continue;
        }
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

/// The answer to a set of outcomes (`skips` as for [`report`]).
pub fn from_outcomes(
    outcomes: &[MessageOutcome<usize>],
    skips: &[Option<Skip>],
    retry_after: Duration,
) -> (StatusCode, Report, Response<Body>) {
    let (status, error) = verdict(outcomes);
    let report = report(outcomes, skips, error);
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
mod tests;
