//! The Lambda event, before `lambda_http` turns it into a request: a REST
//! API (payload 1.0), HTTP API or function URL (payload 2.0) or Application
//! Load Balancer target-group event, each answered in its own format
//! ([`Format`]).
//!
//! `lambda_http` decodes an `isBase64Encoded` body with an `expect`: a body
//! that is not valid base64 panics inside its adapter, before any handler
//! runs (and with the release profile's `panic = "abort"`, ends the process,
//! which API Gateway answers with a 502). Lambda, API Gateway, function
//! URLs and load balancers never send such an event, but a test event, a
//! proxy or a replay may.
//! It also builds the request URI from the `Host` header (or the domain
//! name), `X-Forwarded-Proto`, the path and the query string (a load
//! balancer's decoded first, as it sends it undecoded) with `unwrap`
//! and `expect`: a host with a space, a scheme that is not one, a query
//! with characters a URI cannot hold, or a URI longer than `http` allows
//! panics the same way.
//! [`RefuseUndecodable`] wraps that adapter: an event whose body does not
//! decode gets a `400 InvalidBody`, in the answer format of the API that
//! sent it, and does not reach the adapter. [`unbuildable_uri`] forms the
//! URI exactly as `lambda_http` 1.3 does (`build_request_uri`), without
//! panicking. The function needs no host or scheme (it routes on the raw
//! path), so when only they cannot form a URI (a placeholder host such as
//! `1234567890.execute-api.{dns_suffix}`, as `sam local generate-event` and
//! console test events carry) they are left out of the URI
//! ([`leave_out_host`]) and the request is served; a path or query string
//! that cannot form one still gets a `400 InvalidRequest`.
//!
//! A REST API or load balancer event's `multiValueHeaders` win over its
//! `headers` ([`crate::headers::prefer_multi_value`]), so a repeated header
//! reads as every value.
//!
//! The event itself is read as an [`HttpEvent`], which never fails on JSON:
//! an API Gateway- or load balancer-shaped event (an object with a
//! `requestContext`) that `lambda_http` cannot read (a REST API event
//! without `requestContext.httpMethod`, say) gets a `400 InvalidEvent`
//! rather than an invocation error, which API Gateway or the load balancer
//! would answer with a 502; any other event (an S3 notification sent to the
//! wrong function) fails the invocation with the error type
//! `ApigwToSqs.InvalidEvent` ([`NotAnHttpEvent`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use base64::Engine as _;
use lambda_http::request::LambdaRequest;
use lambda_http::{LambdaEvent, Service};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

use sqs_forwarder::event_reader::once;

use crate::reject::Rejection;

mod uri;

pub use uri::{leave_out_host, unbuildable_uri};

/// The answer format an event expects: the API or load balancer that sent
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A REST API (payload 1.0): `statusCode`, `headers` and
    /// `multiValueHeaders`, `body`, `isBase64Encoded`.
    Rest,
    /// An HTTP API or function URL (payload 2.0): `statusCode`, `headers`,
    /// `body`, `isBase64Encoded`, `cookies`.
    Http,
    /// An Application Load Balancer target group: as a REST API's, with
    /// `statusDescription` (`"400 Bad Request"`). Both `headers` and
    /// `multiValueHeaders` are given, as `lambda_http` gives them, so the
    /// answer holds whether the target group has multi-value headers on or
    /// not.
    Alb,
}

impl Format {
    /// The format of the API or load balancer that sent `event`.
    pub fn of(event: &LambdaRequest) -> Format {
        match event {
            LambdaRequest::ApiGatewayV1(_) => Format::Rest,
            LambdaRequest::Alb(_) => Format::Alb,
            _ => Format::Http,
        }
    }
}

/// Why the event's body cannot be read, if it cannot: `isBase64Encoded` is
/// set and the body is not standard base64 (the alphabet and padding
/// `lambda_http` decodes with).
pub fn undecodable_body(event: &LambdaRequest) -> Option<Rejection> {
    let (encoded, body) = match event {
        LambdaRequest::ApiGatewayV1(r) => (r.is_base64_encoded, r.body.as_deref()),
        LambdaRequest::ApiGatewayV2(r) => (r.is_base64_encoded, r.body.as_deref()),
        LambdaRequest::Alb(r) => (r.is_base64_encoded, r.body.as_deref()),
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

/// An event as the function reads it: a request `lambda_http` can take, an
/// API Gateway- or load balancer-shaped event it cannot (answered
/// `400 InvalidEvent`), or no HTTP event at all (the invocation fails,
/// [`NotAnHttpEvent`]). Reading it fails only on a payload that is not
/// JSON, which Lambda never sends.
#[derive(Debug)]
pub enum HttpEvent {
    /// A request from API Gateway, a function URL or a load balancer.
    Request(Box<LambdaRequest>),
    /// An object with a `requestContext` that is no request `lambda_http`
    /// reads.
    Malformed {
        /// The format it claims, answered in: [`Format::Alb`] when its
        /// `requestContext` has an `elb`, [`Format::Http`] when it says
        /// `"version": "2.0"`, else [`Format::Rest`].
        format: Format,
        /// Why, naming the field at fault.
        why: String,
    },
    /// Anything else.
    NotHttp,
}

impl<'de> Deserialize<'de> for HttpEvent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        sqs_forwarder::event_reader::kept_or_read(d, HttpEvent::read)
    }
}

impl once::ReadEvent for HttpEvent {
    fn read(json: &str) -> Self {
        HttpEvent::read(json)
    }
}

impl HttpEvent {
    /// Read an event from its JSON text.
    pub fn read(json: &str) -> HttpEvent {
        // Its top level first: one pass that copies nothing.
        let shape = serde_json::from_str::<Shape<'_>>(json).ok();
        if let Some(request) = request(json, shape.as_ref()) {
            return HttpEvent::Request(Box::new(request));
        }
        #[derive(Deserialize)]
        struct ContextShape<'a> {
            #[serde(default, borrow)]
            elb: Option<&'a RawValue>,
        }
        let Some(context) = shape
            .as_ref()
            .and_then(|s| s.context)
            .filter(|c| c.get().starts_with('{'))
        else {
            return HttpEvent::NotHttp;
        };
        let from_elb =
            serde_json::from_str::<ContextShape<'_>>(context.get()).is_ok_and(|c| c.elb.is_some());
        let v2 = shape
            .and_then(|s| s.version)
            .is_some_and(|v| v.get() == r#""2.0""#);
        use lambda_http::aws_lambda_events::{alb, apigw};
        use sqs_forwarder::event_reader::read;
        // The reader of the payload it claims, for the field at fault.
        let (format, why) = match (from_elb, v2) {
            (true, _) => (Format::Alb, read::<alb::AlbTargetGroupRequest>(json).err()),
            (false, true) => (
                Format::Http,
                read::<apigw::ApiGatewayV2httpRequest>(json).err(),
            ),
            (false, false) => (
                Format::Rest,
                read::<apigw::ApiGatewayProxyRequest>(json).err(),
            ),
        };
        HttpEvent::Malformed {
            format,
            why: why.unwrap_or_else(|| "not a request lambda_http reads".into()),
        }
    }
}

/// An event's top level, as far as telling its payload apart goes.
#[derive(Deserialize)]
struct Shape<'a> {
    #[serde(rename = "requestContext", default, borrow)]
    context: Option<&'a RawValue>,
    #[serde(default, borrow)]
    version: Option<&'a RawValue>,
    /// Whether it has an `httpMethod` at all (whatever its value).
    #[serde(rename = "httpMethod", default, deserialize_with = "present")]
    http_method: bool,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

/// The request `lambda_http` reads from `json` (its `LambdaRequest`), read
/// as it reads one: the first of a REST API, an HTTP API (or function URL)
/// and a load balancer request that the event is. `lambda_http` copies the
/// event and reads the copy as each in turn until one fits, so an HTTP API
/// request of 5 MB was scanned three times and its body unescaped twice. A
/// REST API and a load balancer request both need a top-level `httpMethod`
/// (`aws_lambda_events` requires it): an event without one (`shape` says)
/// is read as an HTTP API request alone. Without a shape (`json` is no
/// object) all three are tried, as `lambda_http` does.
fn request(json: &str, shape: Option<&Shape<'_>>) -> Option<LambdaRequest> {
    use lambda_http::aws_lambda_events::{alb, apigw};
    let may_be_rest_or_alb = shape.is_none_or(|s| s.http_method);
    if may_be_rest_or_alb && let Ok(r) = serde_json::from_str::<apigw::ApiGatewayProxyRequest>(json)
    {
        return Some(LambdaRequest::ApiGatewayV1(r));
    }
    if let Ok(r) = serde_json::from_str::<apigw::ApiGatewayV2httpRequest>(json) {
        return Some(LambdaRequest::ApiGatewayV2(r));
    }
    if may_be_rest_or_alb && let Ok(r) = serde_json::from_str::<alb::AlbTargetGroupRequest>(json) {
        return Some(LambdaRequest::Alb(r));
    }
    None
}

/// An invocation whose event is no HTTP event at all: the function has no
/// HTTP answer to give. Lambda gets the error type `ApigwToSqs.InvalidEvent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAnHttpEvent;

impl std::fmt::Display for NotAnHttpEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not an API Gateway, function URL or load balancer event (no requestContext object): this function takes REST API, HTTP API, function URL and Application Load Balancer requests")
    }
}

impl std::error::Error for NotAnHttpEvent {}

impl From<std::convert::Infallible> for NotAnHttpEvent {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl From<NotAnHttpEvent> for lambda_http::lambda_runtime::Diagnostic {
    fn from(e: NotAnHttpEvent) -> Self {
        lambda_http::lambda_runtime::Diagnostic {
            error_type: format!("{}.InvalidEvent", crate::ERROR_PREFIX),
            error_message: e.to_string(),
        }
    }
}

/// The answer to an event: the wrapped service's, or a refusal this module
/// wrote (in the format of the API or load balancer that sent the event).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Answer<R> {
    /// The wrapped service's answer.
    Handled(R),
    /// The event was refused before it became a request.
    Refused(serde_json::Value),
}

/// The refusal, as the answer of the API or load balancer that sent
/// `event`.
pub fn refusal(event: &LambdaRequest, r: &Rejection) -> serde_json::Value {
    refusal_as(Format::of(event), r)
}

/// The refusal in `format`.
fn refusal_as(format: Format, r: &Rejection) -> serde_json::Value {
    let body = serde_json::json!({"error": {"code": r.code, "message": r.message}}).to_string();
    let status = r.status.as_u16();
    match format {
        Format::Alb => serde_json::json!({
            "statusCode": status,
            "statusDescription": format!("{status} {}", r.status.canonical_reason().unwrap_or_default()),
            "headers": {"content-type": "application/json"},
            "multiValueHeaders": {"content-type": ["application/json"]},
            "body": body,
            "isBase64Encoded": false,
        }),
        Format::Rest => serde_json::json!({
            "statusCode": status,
            "headers": {"content-type": "application/json"},
            "multiValueHeaders": {"content-type": ["application/json"]},
            "body": body,
            "isBase64Encoded": false,
        }),
        Format::Http => serde_json::json!({
            "statusCode": status,
            "headers": {"content-type": "application/json"},
            "body": body,
            "isBase64Encoded": false,
            "cookies": [],
        }),
    }
}

/// Wraps `lambda_http`'s adapter (or any service of raw HTTP events):
/// events whose body cannot be decoded, whose path or query cannot form a
/// URI, or that are malformed are answered here; a host or scheme that
/// cannot form a URI is left out of it.
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

impl<S> Service<LambdaEvent<HttpEvent>> for RefuseUndecodable<S>
where
    S: Service<LambdaEvent<LambdaRequest>>,
    S::Future: Unpin,
    S::Error: Into<NotAnHttpEvent>,
{
    type Response = Answer<S::Response>;
    type Error = NotAnHttpEvent;
    type Future = Guarded<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, event: LambdaEvent<HttpEvent>) -> Self::Future {
        let LambdaEvent { payload, context } = event;
        let refused = |format: Format, r: Rejection| {
            tracing::info!(
                request_id = context.request_id,
                status = r.status.as_u16(),
                code = r.code,
                message = %r.message,
                "request refused"
            );
            Guarded::Refused(Some(refusal_as(format, &r)))
        };
        let mut request = match payload {
            HttpEvent::Request(request) => *request,
            HttpEvent::Malformed { format, why } => {
                let r = Rejection::bad_request(
                    "InvalidEvent",
                    format!(
                        "the event is not a request API Gateway, a function URL or a load balancer sends: {why}"
                    ),
                );
                return refused(format, r);
            }
            HttpEvent::NotHttp => {
                tracing::error!(request_id = context.request_id, error = %NotAnHttpEvent, "failing the invocation");
                return Guarded::Failed;
            }
        };
        let format = Format::of(&request);
        crate::headers::prefer_multi_value(&mut request);
        if let Some(r) = undecodable_body(&request) {
            return refused(format, r);
        }
        if let Some(r) = unbuildable_uri(&request) {
            leave_out_host(&mut request);
            if unbuildable_uri(&request).is_some() {
                return refused(format, r);
            }
            tracing::info!(
                request_id = context.request_id,
                why = %r.message,
                "the host (or scheme) cannot form a URI: left out of it"
            );
        }
        Guarded::Inner(self.inner.call(LambdaEvent::new(request, context)))
    }
}

/// The future of [`RefuseUndecodable`].
#[derive(Debug)]
pub enum Guarded<F> {
    /// The wrapped service answers.
    Inner(F),
    /// Refused; the answer (taken when polled).
    Refused(Option<serde_json::Value>),
    /// Not an HTTP event: the invocation fails.
    Failed,
}

impl<F, R, E> Future for Guarded<F>
where
    F: Future<Output = Result<R, E>> + Unpin,
    E: Into<NotAnHttpEvent>,
{
    type Output = Result<Answer<R>, NotAnHttpEvent>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Guarded::Inner(f) => Pin::new(f)
                .poll(cx)
                .map(|r| r.map(Answer::Handled).map_err(Into::into)),
            Guarded::Refused(answer) => {
                Poll::Ready(Ok(Answer::Refused(answer.take().unwrap_or_default())))
            }
            Guarded::Failed => Poll::Ready(Err(NotAnHttpEvent)),
        }
    }
}
