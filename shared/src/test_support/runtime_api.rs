//! A local Lambda runtime API (2018-06-01) for tests that run a function's
//! built binary as Lambda runs it, and see what the binary tells Lambda:
//! the answer it posts to `/invocation/{id}/response`, or the `errorType`
//! and `errorMessage` it posts to `/invocation/{id}/error` or
//! `/init/error`.
//!
//! ```ignore
//! let api = RuntimeApi::start().await;
//! let mut function = FunctionProcess::spawn(env!("CARGO_BIN_EXE_s3-to-sqs"), &api, &env);
//! match api.invoke(&event).await { Posted::Error { error, .. } => ..., _ => ... }
//! ```
//!
//! One invocation at a time, as Lambda gives them to one execution
//! environment; served on 127.0.0.1, a port of its own per test.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{Mutex, mpsc};

use crate::setup::init_error::ERROR_TYPE_HEADER;

const PREFIX: &str = "/2018-06-01/runtime";

/// How long [`RuntimeApi::invoke`] and [`RuntimeApi::next_posted`] wait by
/// default: a debug build's cold start against a local endpoint is well
/// below it.
pub const WAIT: Duration = Duration::from_secs(60);

/// An error the function reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    /// The body's `errorType`.
    pub error_type: String,
    /// The body's `errorMessage`.
    pub error_message: String,
    /// The `Lambda-Runtime-Function-Error-Type` header, when sent.
    pub header: Option<String>,
}

/// What the function posted to the runtime API.
#[derive(Debug, Clone, PartialEq)]
pub enum Posted {
    /// `/invocation/{id}/response`: the answer.
    Response {
        /// The invocation's request id.
        request_id: String,
        /// The answer, as JSON.
        body: Value,
    },
    /// `/invocation/{id}/error`: the invocation failed.
    Error {
        /// The invocation's request id.
        request_id: String,
        /// What it reported.
        error: Reported,
    },
    /// `/init/error`: the start failed.
    InitError(Reported),
}

impl Posted {
    /// The reported error of an `Error` or `InitError`, or a panic naming
    /// what was posted instead.
    pub fn error(&self) -> &Reported {
        match self {
            Posted::Error { error, .. } | Posted::InitError(error) => error,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    /// The answer of a `Response`, or a panic naming what was posted
    /// instead.
    pub fn response(&self) -> &Value {
        match self {
            Posted::Response { body, .. } => body,
            other => panic!("expected a response, got {other:?}"),
        }
    }
}

struct Invocation {
    request_id: String,
    event: String,
    deadline_ms: u64,
}

struct Shared {
    pending: Mutex<mpsc::UnboundedReceiver<Invocation>>,
    posted: mpsc::UnboundedSender<Posted>,
}

/// The runtime API, served until it is dropped (with the test).
pub struct RuntimeApi {
    address: String,
    events: mpsc::UnboundedSender<Invocation>,
    posted: Mutex<mpsc::UnboundedReceiver<Posted>>,
    invocations: std::sync::atomic::AtomicU64,
}

fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = code;
    r
}

fn reported(header: Option<String>, body: &[u8]) -> Reported {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let text = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
    Reported {
        error_type: text("errorType"),
        error_message: text("errorMessage"),
        header,
    }
}

async fn serve(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let Some(rest) = path.strip_prefix(PREFIX) else {
        return Ok(status(StatusCode::NOT_FOUND));
    };
    let parts: Vec<&str> = rest.trim_matches('/').split('/').collect();
    if method == Method::GET && parts == ["invocation", "next"] {
        let next = shared.pending.lock().await.recv().await;
        let Some(invocation) = next else {
            // The test is over: keep the poll open until the function stops.
            std::future::pending::<()>().await;
            return Ok(status(StatusCode::GONE));
        };
        let mut r = Response::new(Full::new(Bytes::from(invocation.event)));
        let pairs = [
            ("content-type", "application/json".to_owned()),
            ("lambda-runtime-aws-request-id", invocation.request_id),
            (
                "lambda-runtime-deadline-ms",
                invocation.deadline_ms.to_string(),
            ),
            (
                "lambda-runtime-invoked-function-arn",
                "arn:aws:lambda:us-east-1:123456789012:function:test".to_owned(),
            ),
            (
                "lambda-runtime-trace-id",
                "Root=1-00000000-000000000000000000000000;Sampled=0".to_owned(),
            ),
        ];
        for (k, v) in pairs {
            if let Ok(v) = v.parse() {
                r.headers_mut().insert(k, v);
            }
        }
        return Ok(r);
    }
    if method != Method::POST {
        return Ok(status(StatusCode::NOT_FOUND));
    }
    let header = req
        .headers()
        .get(ERROR_TYPE_HEADER)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let posted = match parts.as_slice() {
        ["init", "error"] => Posted::InitError(reported(header, &body)),
        ["invocation", id, "response"] => Posted::Response {
            request_id: (*id).to_owned(),
            body: serde_json::from_slice(&body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned())),
        },
        ["invocation", id, "error"] => Posted::Error {
            request_id: (*id).to_owned(),
            error: reported(header, &body),
        },
        _ => return Ok(status(StatusCode::NOT_FOUND)),
    };
    let _ = shared.posted.send(posted);
    Ok(status(StatusCode::ACCEPTED))
}

impl RuntimeApi {
    /// Serve the runtime API on 127.0.0.1, on a port of its own.
    pub async fn start() -> RuntimeApi {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind the runtime API on 127.0.0.1");
        let address = listener.local_addr().expect("its address").to_string();
        let (events, pending) = mpsc::unbounded_channel();
        let (posted_tx, posted) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            pending: Mutex::new(pending),
            posted: posted_tx,
        });
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| serve(shared.clone(), req));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        RuntimeApi {
            address,
            events,
            posted: Mutex::new(posted),
            invocations: Default::default(),
        }
    }

    /// `host:port`, for `AWS_LAMBDA_RUNTIME_API`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Hand the function `event` with a minute to its deadline, and wait
    /// for what it posts.
    pub async fn invoke(&self, event: &Value) -> Posted {
        self.invoke_until(event, epoch_ms() + 60_000).await
    }

    /// Hand the function `event` with this deadline (milliseconds since
    /// the epoch, as Lambda sends it; one already past is the deadline come
    /// before the function could send anything), and wait for what it posts.
    pub async fn invoke_until(&self, event: &Value, deadline_ms: u64) -> Posted {
        let n = self
            .invocations
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let request_id = format!("00000000-0000-4000-8000-{n:012}");
        self.events
            .send(Invocation {
                request_id: request_id.clone(),
                event: event.to_string(),
                deadline_ms,
            })
            .expect("the runtime API is served");
        // Until the deadline (and a little more), at least WAIT.
        let wait = Duration::from_millis(deadline_ms.saturating_sub(epoch_ms()))
            .saturating_add(Duration::from_secs(5))
            .max(WAIT);
        let posted = self
            .next_posted(wait)
            .await
            .unwrap_or_else(|| panic!("the function posted nothing within {wait:?} for {event}"));
        match &posted {
            Posted::Response { request_id: id, .. } | Posted::Error { request_id: id, .. } => {
                assert_eq!(id, &request_id, "the answer is for the invocation given")
            }
            Posted::InitError(_) => {}
        }
        posted
    }

    /// The next thing the function posts, if it posts within `within`.
    pub async fn next_posted(&self, within: Duration) -> Option<Posted> {
        let mut posted = self.posted.lock().await;
        tokio::time::timeout(within, posted.recv())
            .await
            .ok()
            .flatten()
    }
}

/// A function's binary running against a [`RuntimeApi`]; killed when
/// dropped.
pub struct FunctionProcess {
    child: tokio::process::Child,
}

impl FunctionProcess {
    /// Start `binary` as Lambda would: an empty environment but for
    /// Lambda's own variables (`AWS_LAMBDA_RUNTIME_API` pointing at `api`,
    /// the function's name, memory and version) and `env` (the function's
    /// configuration, AWS settings). Its logs go to the test's stderr.
    pub fn spawn(binary: &str, api: &RuntimeApi, env: &[(&str, &str)]) -> FunctionProcess {
        let mut command = tokio::process::Command::new(binary);
        command
            .env_clear()
            .env("AWS_LAMBDA_RUNTIME_API", api.address())
            .env("AWS_LAMBDA_FUNCTION_NAME", "test")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("start {binary}: {e}"));
        FunctionProcess { child }
    }

    /// The most memory the process has held resident (its `VmHWM`, in
    /// bytes), while it runs; `None` where `/proc` does not say.
    pub fn peak_rss(&self) -> Option<u64> {
        let pid = self.child.id()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }

    /// The process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// The exit code, if the process ended within `within`.
    pub async fn exit_code(&mut self, within: Duration) -> Option<i32> {
        match tokio::time::timeout(within, self.child.wait()).await {
            Ok(Ok(status)) => status.code(),
            _ => None,
        }
    }
}

/// A fresh standard queue on the local SQS endpoint (`SQS_TEST_ENDPOINT`,
/// which `scripts/test.sh` sets; a panic says how to start one otherwise),
/// named `<base>-<unique>`, and the endpoint: the `QUEUE_URL` and
/// `AWS_ENDPOINT_URL_SQS` to give a function.
pub async fn local_queue(base: &str) -> (String, String) {
    let endpoint = std::env::var("SQS_TEST_ENDPOINT").unwrap_or_else(|_| {
        panic!("SQS_TEST_ENDPOINT is not set: run the tests with scripts/test.sh, or start scripts/local-sqs.sh and export SQS_TEST_ENDPOINT")
    });
    let conf = aws_sdk_sqs::Config::builder()
        .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
        .region(aws_sdk_sqs::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .endpoint_url(&endpoint)
        .build();
    let client = aws_sdk_sqs::Client::from_conf(conf);
    let name = format!("{base}-{}", uuid::Uuid::new_v4().simple());
    let out = client
        .create_queue()
        .queue_name(&name)
        .send()
        .await
        .expect("create a queue on the local SQS endpoint");
    let url = out.queue_url().expect("a queue URL").to_owned();
    (url, endpoint)
}

/// The environment a function needs to start against the local endpoint
/// with `queue_url` (from [`local_queue`]): the queue and test credentials.
pub fn local_env<'a>(queue_url: &'a str, endpoint: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("QUEUE_URL", queue_url),
        ("AWS_ENDPOINT_URL_SQS", endpoint),
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
    ]
}

/// `binary` started against a fresh [`RuntimeApi`] with a fresh queue on
/// the local SQS endpoint (named `<queue_base>-<unique>`, see
/// [`local_queue`]), ready for [`RuntimeApi::invoke`].
pub async fn serving(binary: &str, queue_base: &str) -> (RuntimeApi, FunctionProcess) {
    let (queue, endpoint) = local_queue(queue_base).await;
    let api = RuntimeApi::start().await;
    let function = FunctionProcess::spawn(binary, &api, &local_env(&queue, &endpoint));
    (api, function)
}

/// What a start of `binary` with `env` that fails posts to `/init/error`,
/// and the process's exit code (if it ended within 30 s). Panics when the
/// first thing posted within 60 s is not an init error.
pub async fn init_error(binary: &str, env: &[(&str, &str)]) -> (Reported, Option<i32>) {
    let api = RuntimeApi::start().await;
    let mut function = FunctionProcess::spawn(binary, &api, env);
    let posted = api.next_posted(Duration::from_secs(60)).await;
    let Some(Posted::InitError(error)) = posted else {
        panic!("expected an init error, got {posted:?}");
    };
    (error, function.exit_code(Duration::from_secs(30)).await)
}

/// A Lambda deadline (milliseconds since the epoch) one second past, for
/// [`RuntimeApi::invoke_until`]: nothing can be sent before it.
pub fn past_deadline_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64
        - 1_000
}
