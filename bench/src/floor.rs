//! The floor: the very request bodies a forwarder sent (captured by the
//! stub), posted again to the same stub by a minimal HTTP client, with the
//! same number of calls in flight, and no parsing, packing or signing. What
//! is left is the cost of the HTTP calls and of the stub itself: no
//! forwarder can be faster against this endpoint.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Serialize;

use bench_support::captured::parse_captured;
use bench_support::cpu;

type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// The floor's figures.
#[derive(Debug, Serialize)]
pub struct FloorReport {
    /// Requests per round.
    pub requests: usize,
    /// Bytes of request bodies per round.
    pub request_bytes: usize,
    /// Calls in flight.
    pub in_flight: usize,
    /// Each round's wall time, in milliseconds.
    pub rounds_ms: Vec<f64>,
    /// Each round's CPU time (this process, every thread), in milliseconds.
    pub rounds_cpu_ms: Vec<f64>,
    /// Answers other than 200.
    pub non_200: usize,
}

fn client() -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new()).build(connector)
}

async fn fetch(client: &HttpClient, url: &str, post: bool) -> Result<Bytes, String> {
    let req = Request::builder()
        .method(if post { "POST" } else { "GET" })
        .uri(url)
        .body(Full::new(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let res = client.request(req).await.map_err(|e| e.to_string())?;
    let ok = res.status().is_success();
    let body = res
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    if ok {
        Ok(body)
    } else {
        Err(format!("{url}: {}", String::from_utf8_lossy(&body)))
    }
}

/// The request bodies the stub captured in `epoch`.
pub async fn captured(stub: &str, epoch: usize) -> Result<Vec<(String, Bytes)>, String> {
    let url = format!("{stub}/__captured?epoch={epoch}");
    let captured = fetch(&client(), &url, false)
        .await
        .map_err(|e| format!("reading the captured request bodies ({url}): {e}"))?;
    let bodies = parse_captured(&captured)?;
    if bodies.is_empty() {
        return Err(format!("nothing was captured in epoch {epoch}"));
    }
    Ok(bodies)
}

/// Post the bodies of `epoch` again, `rounds` times, `in_flight` at once.
/// Each round runs in an epoch of its own on the stub.
pub async fn run(
    stub: &str,
    epoch: usize,
    in_flight: usize,
    rounds: usize,
) -> Result<FloorReport, String> {
    let client = client();
    let bodies = Arc::new(captured(stub, epoch).await?);
    let in_flight = in_flight.max(1);
    let mut report = FloorReport {
        requests: bodies.len(),
        request_bytes: bodies.iter().map(|(_, b)| b.len()).sum(),
        in_flight,
        rounds_ms: Vec::new(),
        rounds_cpu_ms: Vec::new(),
        non_200: 0,
    };
    let endpoint = format!("{stub}/");
    for _ in 0..rounds {
        fetch(&client, &format!("{stub}/__epoch"), true).await?;
        let next = Arc::new(AtomicUsize::new(0));
        let cpu_before = cpu::self_cpu_ns();
        let started = Instant::now();
        let mut workers = Vec::new();
        for _ in 0..in_flight {
            let (client, bodies, next, endpoint) = (
                client.clone(),
                bodies.clone(),
                next.clone(),
                endpoint.clone(),
            );
            workers.push(tokio::spawn(async move {
                let mut non_200 = 0usize;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((target, body)) = bodies.get(i) else {
                        break;
                    };
                    let req = Request::builder()
                        .method("POST")
                        .uri(&endpoint)
                        .header("content-type", "application/x-amz-json-1.0")
                        .header("x-amz-target", target)
                        .body(Full::new(body.clone()))
                        .map_err(|e| e.to_string())?;
                    let res = client.request(req).await.map_err(|e| e.to_string())?;
                    if res.status() != 200 {
                        non_200 += 1;
                    }
                    res.into_body().collect().await.map_err(|e| e.to_string())?;
                }
                Ok::<usize, String>(non_200)
            }));
        }
        for w in workers {
            report.non_200 += w.await.map_err(|e| e.to_string())??;
        }
        report.rounds_ms.push(started.elapsed().as_secs_f64() * 1e3);
        if let (Some(a), Some(b)) = (cpu::self_cpu_ns(), cpu_before) {
            report.rounds_cpu_ms.push(a.saturating_sub(b) as f64 / 1e6);
        }
    }
    Ok(report)
}
