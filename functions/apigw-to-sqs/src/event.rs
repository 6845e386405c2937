//! The Lambda event, before `lambda_http` turns it into a request.
//!
//! `lambda_http` decodes an `isBase64Encoded` body with an `expect`: a body
//! that is not valid base64 panics inside its adapter, before any handler
//! runs (and with the release profile's `panic = "abort"`, ends the process,
//! which API Gateway answers with a 502). Lambda, API Gateway and function
//! URLs never send such an event, but a test event, a proxy or a replay may.
//! It also builds the request URI from the `Host` header (or the domain
//! name), `X-Forwarded-Proto`, the path and the query string with `unwrap`
//! and `expect`: a host with a space, a scheme that is not one, a query
//! with characters a URI cannot hold, or a URI longer than `http` allows
//! panics the same way.
//! [`RefuseUndecodable`] wraps that adapter: an event whose body does not
//! decode gets a `400 InvalidBody`, one whose URI cannot be formed a `400
//! InvalidRequest`, in the answer format of the API that sent it, and
//! neither reaches the adapter. [`unbuildable_uri`] forms the URI exactly as
//! `lambda_http` 1.3 does (`build_request_uri`), without panicking.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use base64::Engine as _;
use lambda_http::request::LambdaRequest;
use lambda_http::{LambdaEvent, Service};
use serde::Serialize;

use crate::reject::Rejection;

/// Why the event's body cannot be read, if it cannot: `isBase64Encoded` is
/// set and the body is not standard base64 (the alphabet and padding
/// `lambda_http` decodes with).
pub fn undecodable_body(event: &LambdaRequest) -> Option<Rejection> {
    let (encoded, body) = match event {
        LambdaRequest::ApiGatewayV1(r) => (r.is_base64_encoded, r.body.as_deref()),
        LambdaRequest::ApiGatewayV2(r) => (r.is_base64_encoded, r.body.as_deref()),
        _ => return None,
    };
    let body = body.filter(|_| encoded)?;
    let error = base64::engine::general_purpose::STANDARD
        .decode(body)
        .err()?;
    Some(Rejection::bad_request(
        "InvalidBody",
        format!("isBase64Encoded is true but the body is not valid base64: {error}"),
    ))
}

/// Why the request URI cannot be formed, if it cannot: the steps of
/// `lambda_http`'s `into_api_gateway_v2_request`/`into_proxy_request` and
/// `build_request_uri`, each of which it `unwrap`s or `expect`s.
pub fn unbuildable_uri(event: &LambdaRequest) -> Option<Rejection> {
    let (headers, domain, stage, path, query) = match event {
        LambdaRequest::ApiGatewayV1(r) => {
            let mv = &r.multi_value_query_string_parameters;
            let sv = &r.query_string_parameters;
            let query = if !mv.is_empty() {
                mv.to_query_string()
            } else {
                sv.to_query_string()
            };
            (
                &r.headers,
                r.request_context.domain_name.as_deref(),
                &r.request_context.stage,
                r.path.as_deref().unwrap_or_default(),
                query,
            )
        }
        LambdaRequest::ApiGatewayV2(r) => (
            &r.headers,
            r.request_context.domain_name.as_deref(),
            &r.request_context.stage,
            r.raw_path.as_deref().unwrap_or_default(),
            r.raw_query_string.clone().unwrap_or_default(),
        ),
        _ => return None,
    };
    let bad = |what: String| Some(Rejection::bad_request("InvalidRequest", what));
    let host = headers
        .get(lambda_http::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or(domain);
    let path = path_with_stage(stage.as_deref(), path);
    let mut uri = match host {
        None => match url::Url::parse(&format!("http://localhost{path}")) {
            Ok(u) => u.path().to_owned(),
            Err(e) => return bad(format!("the path cannot form a URI: {e}")),
        },
        Some(host) => {
            let scheme = headers
                .get("x-forwarded-proto")
                .and_then(|h| h.to_str().ok())
                .unwrap_or("https");
            match url::Url::parse(&format!("{scheme}://{host}{path}")) {
                Ok(u) => u.to_string(),
                Err(e) => {
                    return bad(format!(
                        "the Host header (or domain name), X-Forwarded-Proto and path cannot form a URI: {e}"
                    ));
                }
            }
        }
    };
    if !query.is_empty() {
        uri.push('?');
        uri.push_str(&query);
    }
    match lambda_http::http::Uri::try_from(uri.as_str()) {
        Ok(_) => None,
        Err(e) => bad(format!(
            "the request URI cannot be formed from the host, path and query string: {e}"
        )),
    }
}

/// `lambda_http`'s `apigw_path_with_stage`: the stage in front of the path,
/// unless it is `$default`, already there, or
/// `AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH` is set.
fn path_with_stage(stage: Option<&str>, path: &str) -> String {
    if std::env::var("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH").is_ok() {
        return path.to_owned();
    }
    match stage {
        None | Some("$default") => path.to_owned(),
        Some(stage) if path.starts_with(&format!("/{stage}/")) => path.to_owned(),
        Some(stage) => format!("/{stage}{path}"),
    }
}

/// The answer to an event: the wrapped service's, or a refusal this module
/// wrote (an API Gateway proxy response, in the format of the API that sent
/// the event).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Answer<R> {
    /// The wrapped service's answer.
    Handled(R),
    /// The event was refused before it became a request.
    Refused(serde_json::Value),
}

/// The refusal, as the answer of a REST API (payload 1.0) or an HTTP API or
/// function URL (payload 2.0).
pub fn refusal(event: &LambdaRequest, r: &Rejection) -> serde_json::Value {
    let body = serde_json::json!({"error": {"code": r.code, "message": r.message}}).to_string();
    let status = r.status.as_u16();
    match event {
        LambdaRequest::ApiGatewayV1(_) => serde_json::json!({
            "statusCode": status,
            "headers": {"content-type": "application/json"},
            "multiValueHeaders": {"content-type": ["application/json"]},
            "body": body,
            "isBase64Encoded": false,
        }),
        _ => serde_json::json!({
            "statusCode": status,
            "headers": {"content-type": "application/json"},
            "body": body,
            "isBase64Encoded": false,
            "cookies": [],
        }),
    }
}

/// Wraps `lambda_http`'s adapter (or any service of raw HTTP events):
/// events whose body cannot be decoded or whose URI cannot be formed are
/// answered here.
#[derive(Debug, Clone)]
pub struct RefuseUndecodable<S> {
    inner: S,
}

impl<S> RefuseUndecodable<S> {
    /// Wrap `inner`.
    pub fn new(inner: S) -> Self {
        RefuseUndecodable { inner }
    }
}

impl<S> Service<LambdaEvent<LambdaRequest>> for RefuseUndecodable<S>
where
    S: Service<LambdaEvent<LambdaRequest>>,
    S::Future: Unpin,
{
    type Response = Answer<S::Response>;
    type Error = S::Error;
    type Future = Guarded<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, event: LambdaEvent<LambdaRequest>) -> Self::Future {
        match undecodable_body(&event.payload).or_else(|| unbuildable_uri(&event.payload)) {
            Some(r) => {
                tracing::info!(
                    request_id = event.context.request_id,
                    status = r.status.as_u16(),
                    code = r.code,
                    "request refused"
                );
                Guarded::Refused(Some(refusal(&event.payload, &r)))
            }
            None => Guarded::Inner(self.inner.call(event)),
        }
    }
}

/// The future of [`RefuseUndecodable`].
#[derive(Debug)]
pub enum Guarded<F> {
    /// The wrapped service answers.
    Inner(F),
    /// Refused; the answer (taken when polled).
    Refused(Option<serde_json::Value>),
}

impl<F, R, E> Future for Guarded<F>
where
    F: Future<Output = Result<R, E>> + Unpin,
{
    type Output = Result<Answer<R>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Guarded::Inner(f) => Pin::new(f).poll(cx).map(|r| r.map(Answer::Handled)),
            Guarded::Refused(answer) => {
                Poll::Ready(Ok(Answer::Refused(answer.take().unwrap_or_default())))
            }
        }
    }
}
