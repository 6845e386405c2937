//! The benchmark's endpoint: a fast local SQS-compatible stub (AWS JSON 1.0)
//! that answers `GetQueueAttributes`, `GetQueueUrl` and `SendMessageBatch` at
//! once, checks every batch against the SQS limits (see [`bench_support::sqs`]) and
//! counts calls, entries and bytes. It also serves S3 `GetObject` (path
//! style) for objects given at start, for s3-to-sqs lines mode.
//!
//! Not an SQS: nothing is stored unless `--store` is given (then every
//! accepted message is kept per queue, FIFO queues deduplicate; see
//! [`crate::store`]), `MD5OfMessageBody` is a constant (neither aws-sdk-sqs
//! nor boto3 checks it), and there is no signature check. With
//! `--fault-rate`, `SendMessageBatch` calls are hit by injected faults (see
//! [`crate::faults`]).
//!
//! Counters are kept per *epoch*; `POST /__epoch` starts a new one (the
//! runtime-API harness does so before each invocation), so each invocation's
//! calls are counted apart. Admin routes:
//!
//! * `POST /__epoch`: start a new epoch, answer its number;
//! * `GET /__stats[?detail=1]`: every epoch's counters as JSON (with `detail`,
//!   each accepted call's entries as `[id, size]` pairs, in arrival order);
//!   accepted entries that are sqs-forwarder aggregates (`AGGREGATE=true`)
//!   are read and their records counted (`aggregates`, `aggregated_records`,
//!   `aggregates_malformed`);
//! * `GET /__captured?epoch=N`: with `--capture`, the raw `SendMessageBatch`
//!   request bodies of epoch N, for the floor client (`u32` length + target,
//!   `u32` length + body, repeated; lengths little-endian);
//! * `POST /__capture?on=1|0`: start or stop keeping request bodies;
//! * `POST /__reset`: forget every epoch and start epoch 0 afresh;
//! * `GET /__queues`: per queue (with `--store`): calls, accepted, stored,
//!   deduplicated, faults injected by kind, entries failed by code, entries
//!   refused by the SQS checks; and the fault configuration;
//! * `GET /__messages?queue=NAME`: with `--store`, the queue's messages as
//!   NDJSON (`message_id`, `sequence_number`, `body`, `attributes`,
//!   `group`, `dedup`), in arrival order;
//! * `POST /__object?key=BUCKET/KEY`: serve the request body as that S3 object;
//! * `POST /__faults?rate=R`: change the fault rate (0 stops injecting);
//! * `POST /__delay?ms=N`: answer every AWS call (SQS and S3) N milliseconds
//!   after its request arrived, as a service one round trip away does (0: at
//!   once). `--delay-ms` sets it at start.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use tokio::net::TcpListener;

use crate::faults::{FaultConfig, Injector};
use crate::store::Queue;

mod sqs_calls;

use sqs_calls::{DropConnection, count_other, sqs_call};

/// The stub's settings.
#[derive(Debug, Clone)]
pub struct StubConfig {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// The queue's `MaximumMessageSize`.
    pub max_message_bytes: usize,
    /// Keep every `SendMessageBatch` request body (for the floor client).
    pub capture: bool,
    /// S3 objects served by `GetObject`, keyed `bucket/key`.
    pub objects: HashMap<String, Bytes>,
    /// Keep every accepted message, per queue (the soak's queue of record).
    pub store: bool,
    /// Faults to inject into `SendMessageBatch` calls.
    pub faults: FaultConfig,
    /// Every AWS call is answered this long after its request arrived (a
    /// round trip to a real service); zero answers at once.
    pub delay: Duration,
}

/// One epoch's counters.
#[derive(Debug, Default, Serialize)]
pub struct Epoch {
    /// Accepted `SendMessageBatch` calls.
    pub send_calls: u64,
    /// Refused calls, by error code.
    pub rejected_calls: BTreeMap<String, u64>,
    /// Entries accepted.
    pub entries_sent: u64,
    /// Entries refused in accepted calls, by code.
    pub entries_failed: BTreeMap<String, u64>,
    /// Sum of the sizes (as SQS counts them) of the accepted entries.
    pub bytes_sent: u64,
    /// Billed request units: per accepted call, its 64 KiB chunks (at least one).
    pub billed_units: u64,
    /// Largest call, in message bytes.
    pub max_call_bytes: u64,
    /// Bytes of HTTP request bodies received for `SendMessageBatch`.
    pub http_request_bytes: u64,
    /// Accepted entries that are sqs-forwarder aggregates (the
    /// `sqs-forwarder.aggregate` attribute, `AGGREGATE=true`).
    pub aggregates: u64,
    /// Records inside the accepted aggregates: with the entries that are
    /// not aggregates, the records delivered.
    pub aggregated_records: u64,
    /// Accepted entries marked as aggregates whose body is not the format
    /// (any is a bug in the forwarder); the first one's fault in `aggregate_problem`.
    pub aggregates_malformed: u64,
    /// What was wrong with the first malformed aggregate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregate_problem: Option<String>,
    /// Other calls, by name (`GetQueueAttributes`, `GetObject`, ...).
    pub other_calls: BTreeMap<String, u64>,
    /// Per accepted call, its accepted entries as `(id, size)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<Vec<(String, u32)>>,
    #[serde(skip)]
    captured: Vec<(String, Bytes)>,
}

#[derive(Debug)]
struct State {
    config: StubConfig,
    base_url: String,
    epochs: Vec<Epoch>,
    message_ids: u64,
    injector: Injector,
    queues: BTreeMap<String, Queue>,
}

impl State {
    fn current(&mut self) -> &mut Epoch {
        if self.epochs.is_empty() {
            self.epochs.push(Epoch::default());
        }
        let last = self.epochs.len() - 1;
        &mut self.epochs[last]
    }
}

type Shared = Arc<Mutex<State>>;
type Reply = Response<Full<Bytes>>;

fn lock(state: &Shared) -> std::sync::MutexGuard<'_, State> {
    // A panic while holding the lock would be a bug in the stub; go on with
    // the counters as they are.
    state.lock().unwrap_or_else(|p| p.into_inner())
}

fn reply(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Reply {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

fn json_reply(status: StatusCode, value: &serde_json::Value) -> Reply {
    reply(
        status,
        "application/x-amz-json-1.0",
        serde_json::to_vec(value).unwrap_or_default(),
    )
}

/// `GetObject` (`HEAD` too): the whole object, or from `Range: bytes=N-`
/// (the only form s3-to-sqs's continuation asks for) with 206.
fn get_object(state: &Shared, path: &str, head: bool, range: Option<&str>) -> Reply {
    let key = path.trim_start_matches('/');
    let object = lock(state).config.objects.get(key).cloned();
    match object {
        Some(bytes) => {
            count_other(state, "GetObject");
            let total = bytes.len();
            let from = range
                .and_then(|r| r.strip_prefix("bytes="))
                .and_then(|r| r.strip_suffix('-'))
                .and_then(|n| n.parse::<usize>().ok());
            let (status, bytes) = match from {
                Some(n) if n < total => (StatusCode::PARTIAL_CONTENT, bytes.slice(n..)),
                _ => (StatusCode::OK, bytes),
            };
            let len = bytes.len();
            let mut r = reply(
                status,
                "application/octet-stream",
                if head { Bytes::new() } else { bytes },
            );
            let h = r.headers_mut();
            if status == StatusCode::PARTIAL_CONTENT
                && let Ok(v) = format!("bytes {}-{}/{total}", total - len, total - 1).parse()
            {
                h.insert(hyper::header::CONTENT_RANGE, v);
            }
            h.insert("etag", hyper::header::HeaderValue::from_static("\"bench\""));
            if let Ok(v) = len.to_string().parse() {
                h.insert(hyper::header::CONTENT_LENGTH, v);
            }
            r
        }
        None => reply(
            StatusCode::NOT_FOUND,
            "application/xml",
            format!("<Error><Code>NoSuchKey</Code><Message>no object {key}</Message></Error>"),
        ),
    }
}

fn query_param<'a>(query: Option<&'a str>, name: &str) -> Option<&'a str> {
    query?
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn admin(state: &Shared, method: &Method, path: &str, query: Option<&str>, body: Bytes) -> Reply {
    match (method, path) {
        (&Method::GET, "/__queues") => {
            let st = lock(state);
            json_reply(
                StatusCode::OK,
                &serde_json::json!({"queues": &st.queues, "faults": st.injector.describe()}),
            )
        }
        (&Method::GET, "/__messages") => {
            let Some(name) = query_param(query, "queue") else {
                return reply(
                    StatusCode::BAD_REQUEST,
                    "text/plain",
                    "queue=NAME is required",
                );
            };
            let st = lock(state);
            match st.queues.get(name) {
                Some(q) => reply(StatusCode::OK, "application/x-ndjson", q.dump()),
                None => reply(StatusCode::OK, "application/x-ndjson", Bytes::new()),
            }
        }
        (&Method::POST, "/__object") => {
            let Some(key) = query_param(query, "key") else {
                return reply(
                    StatusCode::BAD_REQUEST,
                    "text/plain",
                    "key=BUCKET/KEY is required",
                );
            };
            lock(state).config.objects.insert(key.to_owned(), body);
            reply(StatusCode::OK, "text/plain", "stored")
        }
        (&Method::POST, "/__faults") => {
            let Some(rate) = query_param(query, "rate").and_then(|r| r.parse::<f64>().ok()) else {
                return reply(StatusCode::BAD_REQUEST, "text/plain", "rate=R is required");
            };
            lock(state).injector.set_rate(rate);
            reply(StatusCode::OK, "text/plain", "ok")
        }
        (&Method::POST, "/__delay") => {
            let Some(ms) = query_param(query, "ms").and_then(|r| r.parse::<u64>().ok()) else {
                return reply(StatusCode::BAD_REQUEST, "text/plain", "ms=N is required");
            };
            lock(state).config.delay = Duration::from_millis(ms);
            reply(StatusCode::OK, "text/plain", "ok")
        }
        (&Method::POST, "/__epoch") => {
            let mut st = lock(state);
            st.epochs.push(Epoch::default());
            let n = st.epochs.len() - 1;
            reply(StatusCode::OK, "text/plain", n.to_string())
        }
        (&Method::POST, "/__reset") => {
            let mut st = lock(state);
            st.epochs = vec![Epoch::default()];
            reply(StatusCode::OK, "text/plain", "reset")
        }
        (&Method::POST, "/__capture") => {
            let on = query_param(query, "on") == Some("1");
            lock(state).config.capture = on;
            reply(StatusCode::OK, "text/plain", if on { "on" } else { "off" })
        }
        (&Method::GET, "/__stats") => {
            let detail = query_param(query, "detail") == Some("1");
            let st = lock(state);
            let epochs: Vec<serde_json::Value> = st
                .epochs
                .iter()
                .map(|e| {
                    let mut v = serde_json::to_value(e).unwrap_or_default();
                    if !detail && let Some(o) = v.as_object_mut() {
                        o.remove("calls");
                    }
                    v
                })
                .collect();
            json_reply(StatusCode::OK, &serde_json::json!({"epochs": epochs}))
        }
        (&Method::GET, "/__captured") => {
            let n: usize = match query_param(query, "epoch").and_then(|v| v.parse().ok()) {
                Some(n) => n,
                None => return reply(StatusCode::BAD_REQUEST, "text/plain", "epoch=N is required"),
            };
            let st = lock(state);
            let Some(epoch) = st.epochs.get(n) else {
                return reply(StatusCode::NOT_FOUND, "text/plain", "no such epoch");
            };
            let mut out = Vec::new();
            for (target, body) in &epoch.captured {
                out.extend_from_slice(&(target.len() as u32).to_le_bytes());
                out.extend_from_slice(target.as_bytes());
                out.extend_from_slice(&(body.len() as u32).to_le_bytes());
                out.extend_from_slice(body);
            }
            reply(StatusCode::OK, "application/octet-stream", out)
        }
        _ => reply(StatusCode::NOT_FOUND, "text/plain", "unknown admin route"),
    }
}

async fn handle(state: Shared, req: Request<Incoming>) -> Result<Reply, DropConnection> {
    let arrived = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let query = req.uri().query().map(str::to_owned);
    let target = req
        .headers()
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let range = req
        .headers()
        .get(hyper::header::RANGE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return Ok(reply(
                StatusCode::BAD_REQUEST,
                "text/plain",
                format!("body: {e}"),
            ));
        }
    };
    if path.starts_with("/__") {
        return Ok(admin(&state, &method, &path, query.as_deref(), body));
    }
    // A round trip away: the answer leaves `delay` after the request came in
    // (the body is read by then, as a service reads it before answering).
    let delay = lock(&state).config.delay;
    if !delay.is_zero() {
        tokio::time::sleep_until(tokio::time::Instant::from_std(arrived) + delay).await;
    }
    Ok(if let Some(target) = target {
        return sqs_call(&state, &target, body).await;
    } else if method == Method::GET || method == Method::HEAD {
        get_object(&state, &path, method == Method::HEAD, range.as_deref())
    } else if method == Method::POST && path.starts_with("/2015-03-31/functions/") {
        // Lambda's Invoke (s3-to-sqs's continuation hands an object on):
        // taken, counted, not run.
        count_other(&state, "Invoke");
        reply(StatusCode::ACCEPTED, "application/json", "")
    } else {
        reply(StatusCode::BAD_REQUEST, "text/plain", "no X-Amz-Target")
    })
}

/// Bind and serve until the process is stopped. Prints `http://127.0.0.1:PORT`
/// on stdout once listening.
pub async fn serve(config: StubConfig) -> std::io::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", config.port)).await?;
    let base_url = format!("http://{}", listener.local_addr()?);
    println!("{base_url}");
    let injector = Injector::new(config.faults.clone());
    let state: Shared = Arc::new(Mutex::new(State {
        config,
        base_url,
        epochs: vec![Epoch::default()],
        message_ids: 0,
        injector,
        queues: BTreeMap::new(),
    }));
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| handle(state.clone(), req));
            // A client that goes away mid-request is not the stub's problem.
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
