//! The Lambda runtime API (2018-06-01) the harness serves on 127.0.0.1:
//! polls for the next event, answers and init errors go to the run loop
//! over channels.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

use super::PREFIX;

pub(super) struct Poll {
    pub(super) at: Instant,
    pub(super) reply: oneshot::Sender<(String, Bytes)>,
}

pub(super) enum Posted {
    Answer {
        request_id: String,
        kind: String,
        body: Bytes,
        at: Instant,
    },
    InitError(Bytes),
}

struct Channels {
    polls: mpsc::UnboundedSender<Poll>,
    posted: mpsc::UnboundedSender<Posted>,
    timeout: Duration,
    name: String,
}

fn epoch_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = code;
    r
}

async fn runtime_api(
    ch: Arc<Channels>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let Some(rest) = path.strip_prefix(PREFIX) else {
        return Ok(status(StatusCode::NOT_FOUND));
    };
    let parts: Vec<&str> = rest.trim_matches('/').split('/').collect();
    if method == Method::GET && parts == ["invocation", "next"] {
        let (tx, rx) = oneshot::channel();
        if ch
            .polls
            .send(Poll {
                at: Instant::now(),
                reply: tx,
            })
            .is_err()
        {
            std::future::pending::<()>().await;
        }
        let Ok((request_id, event)) = rx.await else {
            // No more events: keep the poll open until the function is stopped.
            std::future::pending::<()>().await;
            return Ok(status(StatusCode::GONE));
        };
        let deadline = epoch_ms() + ch.timeout.as_millis();
        let mut r = Response::new(Full::new(event));
        let h = r.headers_mut();
        let pairs = [
            ("content-type", "application/json".to_owned()),
            ("lambda-runtime-aws-request-id", request_id),
            ("lambda-runtime-deadline-ms", deadline.to_string()),
            (
                "lambda-runtime-invoked-function-arn",
                format!("arn:aws:lambda:us-east-1:123456789012:function:{}", ch.name),
            ),
            (
                "lambda-runtime-trace-id",
                "Root=1-00000000-000000000000000000000000;Sampled=0".to_owned(),
            ),
        ];
        for (k, v) in pairs {
            if let Ok(v) = v.parse() {
                h.insert(k, v);
            }
        }
        return Ok(r);
    }
    if method != Method::POST {
        return Ok(status(StatusCode::NOT_FOUND));
    }
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let at = Instant::now();
    match parts.as_slice() {
        ["init", "error"] => {
            let _ = ch.posted.send(Posted::InitError(body));
            Ok(status(StatusCode::ACCEPTED))
        }
        ["invocation", id, kind @ ("response" | "error")] => {
            let _ = ch.posted.send(Posted::Answer {
                request_id: (*id).to_owned(),
                kind: (*kind).to_owned(),
                body,
                at,
            });
            Ok(status(StatusCode::ACCEPTED))
        }
        _ => Ok(status(StatusCode::NOT_FOUND)),
    }
}

pub(super) fn head(body: &[u8]) -> String {
    String::from_utf8_lossy(body).chars().take(1_000).collect()
}

/// The runtime API, served on 127.0.0.1 until the process ends.
pub(super) struct Api {
    pub(super) addr: String,
    pub(super) polls: mpsc::UnboundedReceiver<Poll>,
    pub(super) posted: mpsc::UnboundedReceiver<Posted>,
}

pub(super) async fn start_api(timeout: Duration, name: &str) -> std::io::Result<Api> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?.to_string();
    let (poll_tx, polls) = mpsc::unbounded_channel();
    let (posted_tx, posted) = mpsc::unbounded_channel();
    let channels = Arc::new(Channels {
        polls: poll_tx,
        posted: posted_tx,
        timeout,
        name: name.to_owned(),
    });
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            let ch = channels.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| runtime_api(ch.clone(), req));
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(Api {
        addr,
        polls,
        posted,
    })
}
