//! Forward the messages of an NDJSON file to the configured queue and print
//! one outcome per message.
//!
//! Each line: `{"body": "...", "body_base64": "...", "attributes": {"name":
//! {"type": "String", "value": "..."}}, "group_id": "...",
//! "deduplication_id": "...", "delay_seconds": 0}` (all but one of `body` /
//! `body_base64` optional). Configuration comes from the same environment
//! variables as the Lambda functions (`QUEUE_URL`, ...).
//!
//! ```text
//! QUEUE_URL=http://127.0.0.1:4566/000000000000/demo cargo run --example forward_file -- shared/examples/messages.ndjson
//! ```

use std::process::ExitCode;

use base64::Engine as _;
use serde_json::Value;
use sqs_forwarder::{Attribute, Config, GroupIds, Message, Outcome, Summary, connect, observe};

fn parse_line(n: usize, line: &str) -> Result<Message<usize>, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("line {n}: not JSON: {e}"))?;
    let mut m = match (
        v.get("body").and_then(Value::as_str),
        v.get("body_base64").and_then(Value::as_str),
    ) {
        (Some(text), None) => Message::new(text, n),
        (None, Some(b64)) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| format!("line {n}: body_base64: {e}"))?;
            Message::new(bytes, n)
        }
        _ => {
            return Err(format!(
                "line {n}: needs exactly one of \"body\" and \"body_base64\""
            ));
        }
    };
    if let Some(attrs) = v.get("attributes").and_then(Value::as_object) {
        for (name, a) in attrs {
            let ty = a.get("type").and_then(Value::as_str).unwrap_or("String");
            let value = a.get("value").and_then(Value::as_str).unwrap_or("");
            m = m.attribute(match ty {
                "Number" => Attribute::number(name.clone(), value),
                "Binary" => Attribute::binary(name.clone(), value.as_bytes().to_vec()),
                _ => Attribute::string(name.clone(), value),
            });
        }
    }
    if let Some(g) = v.get("group_id").and_then(Value::as_str) {
        m = m.group_id(g);
    }
    if let Some(d) = v.get("deduplication_id").and_then(Value::as_str) {
        m = m.deduplication_id(d);
    }
    if let Some(d) = v.get("delay_seconds").and_then(Value::as_i64) {
        m = m.delay_seconds(
            i32::try_from(d).map_err(|_| format!("line {n}: delay_seconds {d} out of range"))?,
        );
    }
    Ok(m)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let obs = observe::init(config.log_format, &config.metrics_namespace, "forward_file");
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: forward_file FILE.ndjson");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut messages = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        match parse_line(i + 1, line) {
            Ok(m) => messages.push(m),
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::from(2);
            }
        }
    }
    // The example's messages carry their own group ids when the file has them.
    let group_ids = GroupIds::from_source(messages.iter().all(|m| m.group_id.is_some()));
    let forwarder = match connect(&config, group_ids).await {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let outcomes = forwarder.send_all(messages, None).await;
    for o in &outcomes {
        match &o.outcome {
            Outcome::Sent { message_id, .. } => {
                println!("line {:>3}: sent     {message_id}", o.position)
            }
            Outcome::Failed(f) => println!("line {:>3}: FAILED   {f}", o.position),
            Outcome::Dropped { reason } => println!("line {:>3}: dropped  {reason}", o.position),
        }
    }
    let s = Summary::of(&outcomes);
    println!(
        "{} messages: {} sent, {} failed (retryable), {} failed (permanent), {} dropped",
        outcomes.len(),
        s.sent,
        s.failed_retryable,
        s.failed_permanent,
        s.dropped
    );
    obs.flush();
    if s.any_failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
