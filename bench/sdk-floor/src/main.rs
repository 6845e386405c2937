//! The SDK floor: the very entries a forwarder sent (the request bodies the
//! stub captured), turned into aws-sdk-sqs entries before the clock starts,
//! then sent again through aws-sdk-sqs, with the client the forwarders use
//! ([`sqs_forwarder::setup::client::sqs_client`]) and as many calls in flight, in a
//! tight loop. Between the HTTP floor (`bench floor`: the same bodies, no
//! SDK) and our functions, it shows how much of our time is the SDK's
//! per-call work (serializing, signing, the orchestrator, the HTTP client)
//! and how much is our own pipeline (event parsing, messages, packing,
//! outcomes).
//!
//! ```text
//! bench-sdk-floor --stub URL --epoch N [--in-flight N] [--rounds N]
//! ```
//!
//! AWS settings come from the environment, as in the functions
//! (`AWS_ENDPOINT_URL_SQS` pointing at the stub, `AWS_REGION`, credentials).
//! Prints one JSON report on stdout; each round runs in an epoch of its own
//! on the stub.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Instant;

use aws_sdk_sqs::primitives::Blob;
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use base64::Engine as _;
use bench_support::captured::parse_captured;
use bench_support::cpu;
use bench_support::sqs::BatchRequest;
use futures_util::StreamExt;
use serde::Serialize;

const USAGE: &str = "usage: bench-sdk-floor --stub URL --epoch N [--in-flight N] [--rounds N]";

/// The SDK floor's figures.
#[derive(Debug, Serialize)]
struct Report {
    /// Calls per round.
    requests: usize,
    /// Entries per round.
    entries: usize,
    /// Calls in flight.
    in_flight: usize,
    /// Each round's wall time, in milliseconds.
    rounds_ms: Vec<f64>,
    /// Each round's CPU time (this process, every thread), in milliseconds.
    rounds_cpu_ms: Vec<f64>,
    /// Calls that failed as a whole, and entries SQS listed as failed.
    failed_calls: usize,
    failed_entries: usize,
}

/// One call's worth: the queue URL and its entries, ready for the SDK.
type Batch = (String, Vec<SendMessageBatchRequestEntry>);

/// A plain HTTP/1.1 request to the stub's admin routes (`Connection: close`).
fn admin(stub: &str, method: &str, path: &str) -> Result<Vec<u8>, String> {
    let host = stub.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(host).map_err(|e| format!("{host}: {e}"))?;
    s.write_all(
        format!(
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).map_err(|e| e.to_string())?;
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no HTTP header end in the stub's answer")?;
    if !answer.starts_with(b"HTTP/1.1 200") {
        return Err(format!(
            "{method} {path}: {}",
            String::from_utf8_lossy(&answer[..split])
        ));
    }
    Ok(answer[split + 4..].to_vec())
}

/// The captured request bodies of `epoch` as SDK entries.
fn batches(stub: &str, epoch: usize) -> Result<Vec<Batch>, String> {
    let captured = admin(stub, "GET", &format!("/__captured?epoch={epoch}"))?;
    let mut out = Vec::new();
    for (target, body) in parse_captured(&captured)? {
        if !target.ends_with("SendMessageBatch") {
            continue;
        }
        let req: BatchRequest =
            serde_json::from_slice(&body).map_err(|e| format!("captured body: {e}"))?;
        let mut entries = Vec::with_capacity(req.entries.len());
        for e in req.entries {
            let mut b = SendMessageBatchRequestEntry::builder()
                .id(e.id)
                .message_body(e.message_body)
                .set_message_group_id(e.message_group_id)
                .set_message_deduplication_id(e.message_deduplication_id)
                .set_delay_seconds(e.delay_seconds.and_then(|d| i32::try_from(d).ok()));
            for (name, v) in e.message_attributes {
                let mut a = MessageAttributeValue::builder().data_type(v.data_type);
                if let Some(s) = v.string_value {
                    a = a.string_value(s);
                }
                if let Some(b64) = v.binary_value {
                    let raw = base64::engine::general_purpose::STANDARD
                        .decode(b64)
                        .map_err(|e| format!("attribute {name}: {e}"))?;
                    a = a.binary_value(Blob::new(raw));
                }
                b = b.message_attributes(name, a.build().map_err(|e| e.to_string())?);
            }
            entries.push(b.build().map_err(|e| e.to_string())?);
        }
        out.push((req.queue_url, entries));
    }
    if out.is_empty() {
        return Err(format!("nothing was captured in epoch {epoch}"));
    }
    Ok(out)
}

async fn run(stub: &str, epoch: usize, in_flight: usize, rounds: usize) -> Result<Report, String> {
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .load()
        .await;
    let client = sqs_forwarder::setup::client::sqs_client(&sdk);
    let one = batches(stub, epoch)?;
    let in_flight = in_flight.max(1);
    let mut report = Report {
        requests: one.len(),
        entries: one.iter().map(|(_, e)| e.len()).sum(),
        in_flight,
        rounds_ms: Vec::new(),
        rounds_cpu_ms: Vec::new(),
        failed_calls: 0,
        failed_entries: 0,
    };
    // Every round's entries are built before any clock starts: the SDK takes
    // them by value.
    let mut all: Vec<Vec<Batch>> = (1..rounds).map(|_| one.clone()).collect();
    all.push(one);
    for round in all {
        admin(stub, "POST", "/__epoch")?;
        let cpu_before = cpu::self_cpu_ns();
        let started = Instant::now();
        let mut calls = futures_util::stream::iter(round)
            .map(|(url, entries)| {
                client
                    .send_message_batch()
                    .queue_url(url)
                    .set_entries(Some(entries))
                    .send()
            })
            .buffer_unordered(in_flight);
        while let Some(result) = calls.next().await {
            match result {
                Ok(out) => report.failed_entries += out.failed().len(),
                Err(_) => report.failed_calls += 1,
            }
        }
        report.rounds_ms.push(started.elapsed().as_secs_f64() * 1e3);
        if let (Some(a), Some(b)) = (cpu::self_cpu_ns(), cpu_before) {
            report.rounds_cpu_ms.push(a.saturating_sub(b) as f64 / 1e6);
        }
    }
    Ok(report)
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: Option<T>) -> Result<T, String> {
    match args.iter().position(|a| a == name) {
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{name} needs a value")),
        None => default.ok_or_else(|| format!("{name} is required")),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = (|| {
        Ok::<_, String>((
            arg::<String>(&args, "--stub", None)?,
            arg(&args, "--epoch", None)?,
            arg(&args, "--in-flight", Some(4usize))?,
            arg(&args, "--rounds", Some(5usize))?,
        ))
    })();
    let (stub, epoch, in_flight, rounds) = match parsed {
        Ok(p) => p,
        Err(e) => {
            eprintln!("bench-sdk-floor: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&stub, epoch, in_flight, rounds).await {
        Ok(report) => match serde_json::to_string(&report) {
            Ok(json) => {
                println!("{json}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("bench-sdk-floor: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("bench-sdk-floor: {e}");
            ExitCode::FAILURE
        }
    }
}
