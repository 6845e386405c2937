//! An SQS endpoint that answers slowly, for tests of what a function does
//! when the deadline comes before its event is sent: `GetQueueAttributes`
//! at once (a standard queue taking 1 MiB messages), each
//! `SendMessageBatch` a fixed delay after its request, every entry
//! accepted. Served on 127.0.0.1 (AWS JSON protocol, as the direct client
//! and the SDK speak it), a port of its own, until the test process ends.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// The endpoint; its counts are shared with the server task.
pub struct SlowSqs {
    url: String,
    entries: Arc<AtomicU64>,
}

fn reply(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    if let Ok(v) = "application/x-amz-json-1.0".parse() {
        r.headers_mut().insert("content-type", v);
    }
    r
}

async fn serve(
    delay: Duration,
    entries: Arc<AtomicU64>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let target = req
        .headers()
        .get("x-amz-target")
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Ok(match target.as_str() {
        "AmazonSQS.GetQueueAttributes" => reply(
            StatusCode::OK,
            &json!({"Attributes": {"MaximumMessageSize": "1048576"}}),
        ),
        "AmazonSQS.SendMessageBatch" => {
            tokio::time::sleep(delay).await;
            let ids: Vec<&str> = body["Entries"]
                .as_array()
                .map(|e| e.iter().filter_map(|e| e["Id"].as_str()).collect())
                .unwrap_or_default();
            entries.fetch_add(ids.len() as u64, Ordering::SeqCst);
            let successful: Vec<Value> = ids
                .iter()
                .map(|id| {
                    json!({"Id": id, "MessageId": format!("m-{id}"),
                           "MD5OfMessageBody": "00000000000000000000000000000000"})
                })
                .collect();
            reply(
                StatusCode::OK,
                &json!({"Successful": successful, "Failed": []}),
            )
        }
        other => reply(
            StatusCode::BAD_REQUEST,
            &json!({"__type": "com.amazonaws.sqs#InvalidAction",
                    "message": format!("the slow test endpoint does not answer {other:?}")}),
        ),
    })
}

impl SlowSqs {
    /// Serve, answering each `SendMessageBatch` `delay` after it came.
    pub async fn start(delay: Duration) -> SlowSqs {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind the slow SQS endpoint on 127.0.0.1");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let entries = Arc::new(AtomicU64::new(0));
        let counted = entries.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let counted = counted.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| serve(delay, counted.clone(), req));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        SlowSqs { url, entries }
    }

    /// The endpoint's URL (`AWS_ENDPOINT_URL_SQS`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A queue URL on it (`QUEUE_URL`).
    pub fn queue_url(&self) -> String {
        format!("{}/123456789012/slow", self.url)
    }

    /// Entries answered so far.
    pub fn entries(&self) -> u64 {
        self.entries.load(Ordering::SeqCst)
    }
}
