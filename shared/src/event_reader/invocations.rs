//! The functions' loop over the Lambda runtime API: each invocation's event
//! taken from `/next` and read into one buffer of its `Content-Length`,
//! handed to the function, and its answer posted back ([`run`],
//! [`run_read_once`]).
//!
//! It is lambda_runtime's `Runtime::run` (sequential, buffered answers) but
//! for one step. lambda_runtime collects the event's body as the chunks
//! hyper reads (each up to about 400 KB), keeps every chunk until the last,
//! and then copies them all into one buffer: twice the event's size at
//! once, and on a 5.9 MB event every chunk new memory, faulted in on each
//! invocation. Here each chunk is copied into the event's buffer as it
//! arrives and dropped, so hyper reads the next into the memory it already
//! has. Under the 128 MB cap with 10 ms answers that took 17-22% off the
//! CPU per message of the 80 × 55 KB Kinesis event, 13% off the
//! 10,000 × 40 B one, and 2-3 MiB off their peaks
//! (bench/notes/2026-12-05-event-read-into-one-buffer.md).
//!
//! Everything else is lambda_runtime's own: its runtime API client and
//! request builder (`lambda_runtime_api_client`), [`Context`] from the
//! invocation's headers, [`TracingLayer`]'s span, [`Diagnostic`], the same
//! requests to the same paths with the same headers, the same
//! deserialization (`serde_path_to_error`, with lambda_runtime's message and
//! `errorType` when it fails), and `_X_AMZN_TRACE_ID` set for each
//! invocation as it sets it (the SDK and the direct client send it).
//! Where lambda_runtime panics (a missing environment variable, an
//! invocation without a request id) this returns an error and the
//! function stops, as it does on the runtime API's own errors. What the
//! functions do not use is left out: streamed answers, concurrent
//! invocations (`AWS_LAMBDA_MAX_CONCURRENCY` above 1 is warned about and
//! one invocation taken at a time, as lambda_runtime's `run` does) and
//! SnapStart's restore hooks (SnapStart has no OS-only runtime).

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Method, Uri};
use http_body_util::BodyExt;
use lambda_runtime::layers::TracingLayer;
use lambda_runtime::tower::{Layer, Service, ServiceExt};
use lambda_runtime::{Config, Context, Diagnostic, Error, LambdaEvent, LambdaInvocation};
use lambda_runtime_api_client::body::Body;
use lambda_runtime_api_client::{PooledClient, build_request};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::once::{ReadEvent, ReadOnceLayer};

/// The header naming the invocation (lambda_runtime's `invoke_request_id`).
const REQUEST_ID: &str = "lambda-runtime-aws-request-id";
/// The header of a Lambda Managed Instances invocation, sent back with the
/// answer as lambda_runtime sends it.
const INVOCATION_ID: &str = "lambda-runtime-invocation-id";
/// What lambda_runtime puts before the reason a payload did not
/// deserialize.
const DESERIALIZE_CONTEXT: &str =
    "failed to deserialize the incoming data into the function's payload type";
/// The `errorType` lambda_runtime reports a payload it cannot deserialize
/// with (its error's type name), kept so that nothing a user alarms on
/// changes.
const DESERIALIZE_ERROR_TYPE: &str = "lambda_runtime::deserializer::DeserializeError";
/// The most of a `Content-Length` reserved at once: a larger body (Lambda
/// sends at most 6 MB) is still read whole, the buffer growing as it comes.
const MOST_RESERVED: usize = 32 << 20;

/// Runs `handler` for every invocation, its payload `P` read from the
/// event by serde (through `serde_path_to_error`, as lambda_runtime
/// reads it). Returns only when the runtime API fails.
pub async fn run<F, P>(handler: F) -> Result<(), Error>
where
    F: Service<LambdaEvent<P>> + 'static,
    F::Future: 'static,
    F::Response: Serialize,
    F::Error: Into<Diagnostic>,
    P: DeserializeOwned + 'static,
{
    let api = Api::from_vars(|name| std::env::var(name).ok())?;
    let respond = Respond::new(handler, api.client.clone());
    api.serve(TracingLayer::new().layer(respond)).await
}

/// [`run`], with each event read once as a `T` by its own reader before
/// the payload's deserialization ([`super::once`]), whose `Deserialize`
/// takes it.
pub async fn run_read_once<T, F, P>(handler: F) -> Result<(), Error>
where
    T: ReadEvent,
    F: Service<LambdaEvent<P>> + 'static,
    F::Future: 'static,
    F::Response: Serialize,
    F::Error: Into<Diagnostic>,
    P: DeserializeOwned + 'static,
{
    let api = Api::from_vars(|name| std::env::var(name).ok())?;
    let respond = ReadOnceLayer::<T>::new().layer(Respond::new(handler, api.client.clone()));
    api.serve(TracingLayer::new().layer(respond)).await
}

/// The runtime API: its client, and the function's configuration every
/// [`Context`] carries.
struct Api {
    client: Arc<PooledClient>,
    config: Arc<Config>,
}

impl Api {
    /// The runtime API at `AWS_LAMBDA_RUNTIME_API`, and the configuration
    /// Lambda sets, from the environment's variables (`lookup`), or which
    /// variable is missing or wrong.
    fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> Result<Api, Error> {
        let required = |name: &str| lookup(name).ok_or_else(|| format!("{name} is not set"));
        // Taken as lambda_runtime takes it: `host:port` on Lambda, or a URL
        // (`cargo lambda watch` gives one with its `http://`), whose path,
        // if any, the requests' paths go after.
        let endpoint = required("AWS_LAMBDA_RUNTIME_API")?;
        let endpoint = Uri::try_from(endpoint.as_str())
            .ok()
            .filter(|uri| uri.authority().is_some())
            .ok_or_else(|| {
                format!("AWS_LAMBDA_RUNTIME_API is not host:port or a URL: {endpoint:?}")
            })?;
        let memory = required("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")?;
        let config = Config {
            function_name: required("AWS_LAMBDA_FUNCTION_NAME")?,
            memory: memory.parse().map_err(|_| {
                format!("AWS_LAMBDA_FUNCTION_MEMORY_SIZE is not a number of MB: {memory:?}")
            })?,
            version: required("AWS_LAMBDA_FUNCTION_VERSION")?,
            log_stream: lookup("AWS_LAMBDA_LOG_STREAM_NAME").unwrap_or_default(),
            log_group: lookup("AWS_LAMBDA_LOG_GROUP_NAME").unwrap_or_default(),
        };
        if let Some(raw) = lookup("AWS_LAMBDA_MAX_CONCURRENCY").filter(|raw| raw.trim() != "1") {
            // As lambda_runtime's `run` says it: one invocation at a time.
            tracing::warn!(
                "AWS_LAMBDA_MAX_CONCURRENCY is set to '{raw}', but the function takes one invocation at a time"
            );
        }
        let client = PooledClient::builder().with_endpoint(endpoint).build();
        Ok(Api {
            client: Arc::new(client),
            config: Arc::new(config),
        })
    }

    /// Takes each invocation from `/next` and hands it to `service`, which
    /// posts its answer.
    async fn serve<S>(self, mut service: S) -> Result<(), Error>
    where
        S: Service<LambdaInvocation, Response = (), Error = Error>,
    {
        loop {
            let next = build_request()
                .method(Method::GET)
                .uri(Uri::from_static("/2018-06-01/runtime/invocation/next"))
                .body(Body::empty())?;
            let (parts, body) = self.client.call(next).await?.into_parts();
            if !parts.status.is_success() {
                return Err(format!(
                    "the Lambda runtime API answered {} for the next invocation",
                    parts.status
                )
                .into());
            }
            let body = read_event(body, &parts.headers).await?;
            let request_id = parts
                .headers
                .get(REQUEST_ID)
                .ok_or("an invocation without a lambda-runtime-aws-request-id")?
                .to_str()?;
            let context = Context::new(request_id, self.config.clone(), &parts.headers)?;
            set_trace_id(&context);
            let invocation = LambdaInvocation {
                parts,
                body,
                context,
            };
            service.ready().await?.call(invocation).await?;
        }
    }
}

/// The event: `body` read into one buffer of its `Content-Length` (at most
/// [`MOST_RESERVED`] reserved at once), each chunk copied as it arrives
/// and dropped.
async fn read_event<B>(mut body: B, headers: &HeaderMap) -> Result<Bytes, Error>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
    B::Error: Into<Error>,
{
    let length = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut event = BytesMut::with_capacity(length.min(MOST_RESERVED));
    while let Some(frame) = body.frame().await {
        if let Ok(chunk) = frame.map_err(Into::into)?.into_data() {
            event.extend_from_slice(&chunk);
        }
    }
    Ok(event.freeze())
}

/// `_X_AMZN_TRACE_ID` set to this invocation's X-Ray trace, or removed, as
/// lambda_runtime sets it.
#[allow(unsafe_code)]
fn set_trace_id(context: &Context) {
    const TRACE_ID: &str = "_X_AMZN_TRACE_ID";
    // SAFETY: set between invocations, before the handler runs, by the
    // one thread the functions' runtime has (tokio's current-thread
    // runtime), as lambda_runtime sets it; nothing reads the environment
    // on another thread then.
    unsafe {
        match &context.xray_trace_id {
            Some(trace_id) => std::env::set_var(TRACE_ID, trace_id),
            None => std::env::remove_var(TRACE_ID),
        }
    }
}

/// The innermost service: the payload deserialized, the handler called,
/// and its answer (or error) posted to the runtime API.
struct Respond<F, P> {
    handler: F,
    client: Arc<PooledClient>,
    payload: PhantomData<fn() -> P>,
}

impl<F, P> Respond<F, P> {
    fn new(handler: F, client: Arc<PooledClient>) -> Self {
        Respond {
            handler,
            client,
            payload: PhantomData,
        }
    }
}

impl<F, P> Service<LambdaInvocation> for Respond<F, P>
where
    F: Service<LambdaEvent<P>>,
    F::Future: 'static,
    F::Response: Serialize,
    F::Error: Into<Diagnostic>,
    P: DeserializeOwned,
{
    type Response = ();
    type Error = Error;
    type Future = Pin<Box<dyn Future<Output = Result<(), Error>>>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Error>> {
        self.handler.poll_ready(cx).map_err(|e| {
            let d: Diagnostic = e.into();
            format!("{}: {}", d.error_type, d.error_message).into()
        })
    }

    fn call(&mut self, invocation: LambdaInvocation) -> Self::Future {
        let LambdaInvocation {
            parts,
            body,
            context,
        } = invocation;
        let request_id = context.request_id.clone();
        let invocation_id = parts
            .headers
            .get(INVOCATION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let handled = deserialize::<P>(&body, context).map(|event| self.handler.call(event));
        // The event's bytes are freed before the handler runs.
        drop(body);
        let client = self.client.clone();
        Box::pin(async move {
            let answer = match handled {
                Ok(future) => match future.await {
                    Ok(response) => Answer::Response(serde_json::to_vec(&response)?),
                    Err(e) => Answer::Error(e.into()),
                },
                Err(diagnostic) => {
                    tracing::error!(
                        error = %diagnostic.error_message,
                        "the event did not deserialize into the function's payload type; the handler was not called"
                    );
                    Answer::Error(diagnostic)
                }
            };
            let request = answer.request(&request_id, invocation_id.as_deref())?;
            let status = client.call(request).await?.status();
            if !status.is_success() {
                // As lambda_runtime: logged, and the loop goes on (410: the
                // invocation timed out, or the answer came twice).
                tracing::error!(%status, "the Lambda runtime API refused the answer");
            }
            Ok(())
        })
    }
}

/// The payload read from `body` as lambda_runtime reads it, or its
/// diagnostic (lambda_runtime's message and `errorType`).
fn deserialize<P: DeserializeOwned>(
    body: &[u8],
    context: Context,
) -> Result<LambdaEvent<P>, Diagnostic> {
    let json = &mut serde_json::Deserializer::from_slice(body);
    match serde_path_to_error::deserialize::<_, P>(json) {
        Ok(payload) => Ok(LambdaEvent::new(payload, context)),
        Err(e) => {
            let path = e.path().to_string();
            let error_message = if path == "." {
                format!("{DESERIALIZE_CONTEXT}: {}\n", e.inner())
            } else {
                format!("{DESERIALIZE_CONTEXT}: [{path}] {}\n", e.inner())
            };
            Err(Diagnostic {
                error_type: DESERIALIZE_ERROR_TYPE.to_owned(),
                error_message,
            })
        }
    }
}

/// What is posted for an invocation.
enum Answer {
    /// The handler's answer, as JSON.
    Response(Vec<u8>),
    /// Why the invocation failed.
    Error(Diagnostic),
}

impl Answer {
    /// The runtime API request that posts it, as lambda_runtime builds it.
    fn request(
        self,
        request_id: &str,
        invocation_id: Option<&str>,
    ) -> Result<http::Request<Body>, Error> {
        let (path, body, error) = match self {
            Answer::Response(json) => ("response", json, false),
            Answer::Error(diagnostic) => ("error", serde_json::to_vec(&diagnostic)?, true),
        };
        let uri = Uri::try_from(format!(
            "/2018-06-01/runtime/invocation/{request_id}/{path}"
        ))?;
        let mut request = build_request().method(Method::POST).uri(uri);
        if error {
            request = request.header("lambda-runtime-function-error-type", "unhandled");
        }
        if let Some(id) = invocation_id {
            request = request.header(INVOCATION_ID, id);
        }
        Ok(request.body(Body::from(body))?)
    }
}

#[cfg(all(test, feature = "test-support"))]
mod tests;
