//! The function's core: one HTTP request in, its messages out through the
//! router (the forwarder, or the routing rules and their targets'
//! forwarders), their outcomes back as the HTTP response.

use std::time::Duration;

use lambda_http::http::{HeaderValue, Method, Response, StatusCode, header};
use lambda_http::{Body, Request, RequestExt};
use sqs_forwarder::route::Router;
use sqs_forwarder::send::codes::EMPTY_BODY;
use sqs_forwarder::{Forwarder, MessageOutcome, OversizePolicy, Routed, Skip, Transport};

use crate::body::{self, SplitLimits};
use crate::headers::{self, Targets};
use crate::paths::{self, Resolved, Route};
use crate::reject::Rejection;
use crate::settings::Settings;
use crate::{response, routing};

/// The target of this module's log lines: the crate's name, as for the
/// crate's other top-level events (`RUST_LOG` directives and log queries
/// name it).
const LOG_TARGET: &str = "apigw_to_sqs";

/// Answers HTTP requests by forwarding their messages to SQS.
#[derive(Debug)]
pub struct Handler<T> {
    settings: Settings,
    router: Router<T>,
    deadline_margin: Duration,
}

/// A request's messages, each routed, and which of them the rules skipped.
struct Batch {
    /// One per message, in body order.
    items: Vec<Routed<usize>>,
    /// `skips[i]`: whether the rules sent message `i` nowhere, and why.
    skips: Vec<Option<Skip>>,
}

impl<T: Transport> Handler<T> {
    /// A handler sending every message with `forwarder`; `deadline_margin`
    /// is kept back from each invocation's Lambda deadline
    /// (`DEADLINE_MARGIN_MS`).
    pub fn new(settings: Settings, forwarder: Forwarder<T>, deadline_margin: Duration) -> Self {
        Self::routed(settings, Router::single(forwarder), deadline_margin)
    }

    /// A handler sending each message where `router`'s rules say.
    pub fn routed(settings: Settings, router: Router<T>, deadline_margin: Duration) -> Self {
        Handler {
            settings,
            router,
            deadline_margin,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The default target's forwarder.
    pub fn forwarder(&self) -> &Forwarder<T> {
        self.router.default_target()
    }

    /// The router.
    pub fn router(&self) -> &Router<T> {
        &self.router
    }

    /// Which route a request takes.
    pub fn route(&self, request: &Request) -> Route {
        self.resolve(request).route
    }

    fn resolve(&self, request: &Request) -> Resolved {
        paths::resolve(request, &self.settings, self.router.routes())
    }

    /// Answer one request. Never fails: every problem is an HTTP answer.
    pub async fn handle(&self, request: Request) -> Response<Body> {
        let retry_after = self.settings.retry_after;
        let resolved = self.resolve(&request);
        match (resolved.route, request.method()) {
            (Route::Health, &Method::GET | &Method::HEAD) => {
                response::plain(StatusCode::OK, &serde_json::json!({"status": "ok"}))
            }
            (route, &Method::POST) if route.takes_messages() => {
                self.ingest(request, &resolved.path).await
            }
            (Route::UnknownQueue, _) => response::from_rejection(
                &Rejection::new(
                    StatusCode::NOT_FOUND,
                    "UnknownQueue",
                    format!(
                        "no queue named {:?} here: the path names one of the queues this endpoint serves (the targets of its ROUTES, or default)",
                        paths::shown_name(resolved.name.as_deref().unwrap_or_default())
                    ),
                ),
                retry_after,
            ),
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
                let allow = if route.takes_messages() {
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

    async fn ingest(&self, request: Request, path: &str) -> Response<Body> {
        let request_id = request
            .lambda_context_ref()
            .map(|c| c.request_id.clone())
            .unwrap_or_default();
        let deadline = request
            .lambda_context_ref()
            .filter(|c| c.deadline > 0)
            .map(|c| sqs_forwarder::deadline_from_epoch_millis(c.deadline, self.deadline_margin));
        let batch = match self.messages(request, path) {
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
        let Batch { items, skips } = batch;
        let count = items.len();
        let outcomes = self.send(items, deadline).await;
        let (status, report, answer) =
            response::from_outcomes(&outcomes, &skips, self.settings.retry_after);
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
            skipped = report.skipped,
            "request answered"
        );
        answer
    }

    /// Send every routed message and return one outcome per message, in
    /// body order.
    async fn send(
        &self,
        items: Vec<Routed<usize>>,
        deadline: Option<tokio::time::Instant>,
    ) -> Vec<MessageOutcome<usize>> {
        let mut slots: Vec<Option<MessageOutcome<usize>>> = Vec::new();
        slots.resize_with(items.len(), || None);
        self.router
            .forward(items, deadline, |o| {
                if let Some(slot) = slots.get_mut(o.position) {
                    *slot = Some(o);
                }
            })
            .await;
        // The router reports every message exactly once, so every slot is
        // filled; a hole would be a bug, and is never turned into a panic.
        slots.into_iter().flatten().collect()
    }

    /// The request's messages, each routed, or why there are none. `path`:
    /// the request's path as matched (the rules' `path`).
    fn messages(&self, request: Request, path: &str) -> Result<Batch, Rejection> {
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
                EMPTY_BODY,
                "the request has no body; send the message as the body",
            ));
        }
        let kind = body::kind(parts.headers.get(header::CONTENT_TYPE), &self.settings)?;
        let routes = self.router.routes();
        // Without rules, the one queue's needs are checked for the whole
        // request, and a message too large for it refuses the request; with
        // them, each message is checked by its own target, once shaped.
        let (targets, max_message_bytes) = match routes {
            None => {
                let send = self.forwarder().settings();
                (
                    Targets::One(self.forwarder().rules()),
                    (send.oversize == OversizePolicy::Fail).then(|| send.limits.largest_message()),
                )
            }
            Some(_) => (
                Targets::Routed {
                    any_fifo: self.router.any_fifo(),
                },
                None,
            ),
        };
        let params = headers::read_for(&parts.headers, &self.settings, targets)?;
        let limits = SplitLimits {
            max_messages: self.settings.max_messages,
            max_message_bytes,
        };
        let (format, bodies) = body::split(body, kind, &limits)?;
        let batch = format.is_batch();
        params.check_batch(batch, bodies.len())?;
        let request = routing::Request {
            path,
            method: parts.method.as_str(),
            headers: &parts.headers,
        };
        let mut skips = Vec::with_capacity(bodies.len());
        let items = bodies
            .into_iter()
            .enumerate()
            .map(|(i, b)| {
                let plan = routing::plan(routes, request, &b);
                skips.push(routing::skip_of(plan.as_ref()));
                self.router.route(plan, params.message(b, batch, i))
            })
            .collect();
        Ok(Batch { items, skips })
    }
}
