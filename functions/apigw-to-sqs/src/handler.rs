//! The function's core: one HTTP request in, its messages out through the
//! forwarder, their outcomes back as the HTTP response.

use std::time::Duration;

use lambda_http::http::{HeaderValue, Method, Response, StatusCode, header};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt};
use sqs_forwarder::{Forwarder, OversizePolicy, Transport};

use crate::body::{self, SplitLimits};
use crate::reject::Rejection;
use crate::settings::{self, Settings};
use crate::{headers, response};

/// The target of this module's log lines: the crate's name, as for the
/// crate's other top-level events (`RUST_LOG` directives and log queries
/// name it).
const LOG_TARGET: &str = "apigw_to_sqs";

/// Where a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `MESSAGES_PATH`.
    Messages,
    /// `HEALTH_PATH`.
    Health,
    /// Anything else.
    NotFound,
}

/// Answers HTTP requests by forwarding their messages to SQS.
#[derive(Debug)]
pub struct Handler<T> {
    settings: Settings,
    forwarder: Forwarder<T>,
    deadline_margin: Duration,
}

/// The request's path as the API saw it: the event's raw path, without the
/// stage when the API put the stage in front (HTTP APIs with a named stage).
fn paths(request: &Request) -> Vec<String> {
    let raw = match request.raw_http_path() {
        "" => request.uri().path(),
        p => p,
    };
    let raw = settings::normalize_path(raw).to_owned();
    let stage = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV1(c)) => c.stage.clone(),
        Some(RequestContext::ApiGatewayV2(c)) => c.stage.clone(),
        _ => None,
    };
    let stripped = stage
        .filter(|s| s != "$default")
        .and_then(|s| raw.strip_prefix(&format!("/{s}")).map(str::to_owned))
        .filter(|p| p.is_empty() || p.starts_with('/'))
        .map(|p| settings::normalize_path(&p).to_owned());
    std::iter::once(raw).chain(stripped).collect()
}

impl<T: Transport> Handler<T> {
    /// A handler sending with `forwarder`; `deadline_margin` is kept back
    /// from each invocation's Lambda deadline (`DEADLINE_MARGIN_MS`).
    pub fn new(settings: Settings, forwarder: Forwarder<T>, deadline_margin: Duration) -> Self {
        Handler {
            settings,
            forwarder,
            deadline_margin,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The forwarder.
    pub fn forwarder(&self) -> &Forwarder<T> {
        &self.forwarder
    }

    /// Which route a request takes.
    pub fn route(&self, request: &Request) -> Route {
        let paths = paths(request);
        if paths.contains(&self.settings.messages_path) {
            Route::Messages
        } else if paths.contains(&self.settings.health_path) {
            Route::Health
        } else {
            Route::NotFound
        }
    }

    /// Answer one request. Never fails: every problem is an HTTP answer.
    pub async fn handle(&self, request: Request) -> Response<Body> {
        let retry_after = self.settings.retry_after;
        match (self.route(&request), request.method()) {
            (Route::Health, &Method::GET | &Method::HEAD) => {
                response::plain(StatusCode::OK, &serde_json::json!({"status": "ok"}))
            }
            (Route::Messages, &Method::POST) => self.ingest(request).await,
            (Route::NotFound, _) => response::from_rejection(
                &Rejection::new(
                    StatusCode::NOT_FOUND,
                    "NotFound",
                    format!(
                        "no such path; messages go to POST {}",
                        self.settings.messages_path
                    ),
                ),
                retry_after,
            ),
            (route, method) => {
                let allow = if route == Route::Messages {
                    "POST"
                } else {
                    "GET, HEAD"
                };
                let mut r = response::from_rejection(
                    &Rejection::new(
                        StatusCode::METHOD_NOT_ALLOWED,
                        "MethodNotAllowed",
                        format!("{method} is not allowed here; use {allow}"),
                    ),
                    retry_after,
                );
                r.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static(allow));
                r
            }
        }
    }

    async fn ingest(&self, request: Request) -> Response<Body> {
        let request_id = request
            .lambda_context_ref()
            .map(|c| c.request_id.clone())
            .unwrap_or_default();
        let deadline = request
            .lambda_context_ref()
            .filter(|c| c.deadline > 0)
            .map(|c| sqs_forwarder::deadline_from_epoch_millis(c.deadline, self.deadline_margin));
        let messages = match self.messages(request) {
            Ok(m) => m,
            Err(r) => {
                tracing::info!(
                    target: LOG_TARGET,
                    request_id,
                    status = r.status.as_u16(),
                    code = r.code,
                    "request refused"
                );
                return response::from_rejection(&r, self.settings.retry_after);
            }
        };
        let count = messages.len();
        let outcomes = self.forwarder.send_all(messages, deadline).await;
        let (status, report, answer) =
            response::from_outcomes(&outcomes, self.settings.retry_after);
        if let Some(f) = outcomes.iter().find_map(|o| o.outcome.failure()) {
            // SQS's own text can name queues and accounts: logs only.
            tracing::warn!(
                target: LOG_TARGET,
                request_id,
                code = %f.code,
                message = %f.message,
                retryable = f.retryable,
                failed = report.failed,
                "messages failed"
            );
        }
        tracing::info!(
            target: LOG_TARGET,
            request_id,
            status = status.as_u16(),
            messages = count,
            sent = report.sent,
            failed = report.failed,
            dropped = report.dropped,
            "request answered"
        );
        answer
    }

    /// The request's messages, or why there are none.
    fn messages(&self, request: Request) -> Result<Vec<sqs_forwarder::Message<usize>>, Rejection> {
        let (parts, body) = request.into_parts();
        let max = self.settings.max_body_bytes;
        let too_large = |n: u64| {
            Rejection::too_large(
                "BodyTooLarge",
                format!("the body is {n} bytes; at most {max} are taken (MAX_BODY_BYTES)"),
            )
        };
        if let Some(v) = parts.headers.get(header::CONTENT_LENGTH) {
            let n: u64 = v
                .to_str()
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .ok_or_else(|| {
                    Rejection::bad_request("InvalidHeader", "content-length: not a number")
                })?;
            if n > max as u64 {
                return Err(too_large(n));
            }
        }
        let len = match &body {
            Body::Text(s) => s.len(),
            Body::Binary(b) => b.len(),
            _ => 0,
        };
        if len > max {
            return Err(too_large(len as u64));
        }
        if len == 0 {
            return Err(Rejection::new(
                StatusCode::LENGTH_REQUIRED,
                "EmptyBody",
                "the request has no body; send the message as the body",
            ));
        }
        let kind = body::kind(parts.headers.get(header::CONTENT_TYPE), &self.settings)?;
        let params = headers::read(&parts.headers, &self.settings, self.forwarder.rules())?;
        let send = self.forwarder.settings();
        let limits = SplitLimits {
            max_messages: self.settings.max_messages,
            max_message_bytes: (send.oversize == OversizePolicy::Fail)
                .then(|| send.limits.largest_message()),
        };
        let (format, bodies) = body::split(body, kind, &limits)?;
        let batch = format.is_batch();
        params.check_batch(batch, bodies.len())?;
        Ok(bodies
            .into_iter()
            .enumerate()
            .map(|(i, b)| params.message(b, batch, i))
            .collect())
    }
}
