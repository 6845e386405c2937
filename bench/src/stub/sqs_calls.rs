//! The SQS side of the stub: `SendMessageBatch` checked against SQS's
//! limits and answered (with faults injected when asked), the other SQS
//! calls a cold start makes, and SQS's error answers.

use crate::faults::{EntryFault, Fault};
use crate::store::{self, Accepted, Queue};
use bench_support::sqs::{self, BatchRequest, EntryVerdict};
use bytes::Bytes;
use hyper::StatusCode;
use std::time::Instant;

use super::{Epoch, Reply, Shared, json_reply, lock};

/// The query-compatible code SQS gives an error in `x-amzn-query-error`
/// (as aws-sdk-sqs's error table spells them): some carry the
/// `AWS.SimpleQueueService.` prefix, the others (`RequestThrottled`,
/// `InvalidParameterValue`, ...) do not.
fn query_code(code: &str) -> String {
    match code {
        "BatchEntryIdsNotDistinct"
        | "BatchRequestTooLong"
        | "EmptyBatchRequest"
        | "InvalidBatchEntryId"
        | "TooManyEntriesInBatchRequest"
        | "UnsupportedOperation" => format!("AWS.SimpleQueueService.{code}"),
        "QueueDoesNotExist" => "AWS.SimpleQueueService.NonExistentQueue".to_owned(),
        other => other.to_owned(),
    }
}

/// An SQS error as the JSON protocol gives it, with the query-compatible
/// header SQS adds.
fn sqs_error(code: &str, message: &str, sender: bool) -> Reply {
    let mut r = json_reply(
        StatusCode::BAD_REQUEST,
        &serde_json::json!({"__type": format!("com.amazonaws.sqs#{code}"), "message": message}),
    );
    let fault = if sender { "Sender" } else { "Receiver" };
    if let Ok(v) = format!("{};{fault}", query_code(code)).parse() {
        r.headers_mut().insert("x-amzn-query-error", v);
    }
    r
}

/// A generic AWS error (throttling, 5xx) with no SQS query code, as the
/// service front end answers it.
fn generic_error(status: StatusCode, code: &str) -> Reply {
    json_reply(
        status,
        &serde_json::json!({"__type": format!("com.amazon.coral.service#{code}"), "message": "injected fault"}),
    )
}

/// The connection is to be closed without an answer (an injected fault).
#[derive(Debug)]
pub(super) struct DropConnection;

impl std::fmt::Display for DropConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped on purpose (fault injection)")
    }
}

impl std::error::Error for DropConnection {}

/// `SendMessageBatch` with the fault injector in front of it.
async fn send_with_faults(state: &Shared, body: Bytes) -> Result<Reply, DropConnection> {
    let req: BatchRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return Ok(sqs_error(
                "InvalidParameterValue",
                &format!("malformed request: {e}"),
                true,
            ));
        }
    };
    let (fault, plan, latency) = {
        let mut st = lock(state);
        let fault = st.injector.pick();
        let name = store::queue_name(&req.queue_url).to_owned();
        let storing = st.config.store;
        if storing {
            let q = st
                .queues
                .entry(name.clone())
                .or_insert_with(|| Queue::new(&name));
            q.calls += 1;
            if let Some(f) = fault {
                *q.faults.entry(f.name().to_owned()).or_default() += 1;
            }
        }
        let plan = match fault {
            Some(f @ (Fault::EntryRetryable | Fault::EntrySender)) => {
                st.injector.entry_plan(f, req.entries.len())
            }
            _ => Vec::new(),
        };
        let latency = match fault {
            Some(Fault::Latency) => st.injector.latency(),
            _ => std::time::Duration::ZERO,
        };
        (fault, plan, latency)
    };
    match fault {
        Some(Fault::DropBefore) => return Err(DropConnection),
        Some(f @ (Fault::Throttle | Fault::ServerError)) => {
            let (status, code) = lock(state).injector.call_error(f);
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            return Ok(if code == "RequestThrottled" {
                sqs_error(code, "injected fault", true)
            } else {
                generic_error(status, code)
            });
        }
        _ => {}
    }
    let reply = send_message_batch(state, &req, &body, &plan);
    match fault {
        Some(Fault::DropAfter) => Err(DropConnection),
        Some(Fault::Latency) => {
            tokio::time::sleep(latency).await;
            Ok(reply)
        }
        _ => Ok(reply),
    }
}

fn send_message_batch(
    state: &Shared,
    req: &BatchRequest,
    body: &Bytes,
    plan: &[EntryFault],
) -> Reply {
    let max_message_bytes = lock(state).config.max_message_bytes;
    let checked = sqs::check_batch(req, max_message_bytes);
    // Aggregates read outside the lock: their records are what is delivered.
    let aggregates: Vec<_> = req.entries.iter().map(sqs::aggregate_records).collect();
    let mut guard = lock(state);
    let st = &mut *guard;
    let first_id = st.message_ids;
    let queue = if st.config.store {
        let name = store::queue_name(&req.queue_url).to_owned();
        Some(
            st.queues
                .entry(name.clone())
                .or_insert_with(|| Queue::new(&name)),
        )
    } else {
        None
    };
    if st.epochs.is_empty() {
        st.epochs.push(Epoch::default());
    }
    let last = st.epochs.len() - 1;
    let epoch = &mut st.epochs[last];
    epoch.http_request_bytes += body.len() as u64;
    if st.config.capture {
        epoch
            .captured
            .push(("AmazonSQS.SendMessageBatch".to_owned(), body.clone()));
    }
    let verdicts = match checked {
        Ok(v) => v,
        Err(rejected) => {
            *epoch
                .rejected_calls
                .entry(rejected.code.to_owned())
                .or_default() += 1;
            if let Some(q) = queue {
                *q.invalid.entry(rejected.code.to_owned()).or_default() += 1;
            }
            drop(guard);
            return sqs_error(rejected.code, &rejected.message, true);
        }
    };
    let mut successful = Vec::with_capacity(verdicts.len());
    let mut failed = Vec::new();
    let mut call_bytes = 0usize;
    let mut detail = Vec::with_capacity(verdicts.len());
    let mut next_id = first_id;
    let now = Instant::now();
    let mut queue = queue;
    for (i, (e, v)) in req.entries.iter().zip(&verdicts).enumerate() {
        let injected = plan.get(i).copied().flatten();
        match (v, injected) {
            (EntryVerdict::Sent { .. }, Some((code, sender))) => {
                if let Some(q) = queue.as_deref_mut() {
                    *q.entry_faults.entry(code.to_owned()).or_default() += 1;
                }
                failed.push(serde_json::json!({
                    "Id": e.id, "Code": code, "Message": "injected fault", "SenderFault": sender,
                }));
            }
            (EntryVerdict::Sent { size }, None) => {
                next_id += 1;
                let fresh = format!("00000000-0000-4000-8000-{next_id:012x}");
                let (message_id, sequence) = match queue.as_deref_mut() {
                    None => (fresh, None),
                    Some(q) => match q.accept(e, fresh, now) {
                        Accepted::Ok(id, seq) => (id, seq),
                        Accepted::Refused(code, message) => {
                            failed.push(serde_json::json!({
                                "Id": e.id, "Code": code, "Message": message, "SenderFault": true,
                            }));
                            continue;
                        }
                    },
                };
                call_bytes += size;
                detail.push((e.id.clone(), *size as u32));
                match &aggregates[i] {
                    None => {}
                    Some(Ok(records)) => {
                        epoch.aggregates += 1;
                        epoch.aggregated_records += *records as u64;
                    }
                    Some(Err(why)) => {
                        epoch.aggregates_malformed += 1;
                        epoch
                            .aggregate_problem
                            .get_or_insert_with(|| format!("entry {}: {why}", e.id));
                    }
                }
                let mut ok = serde_json::json!({
                    "Id": e.id,
                    "MessageId": message_id,
                    "MD5OfMessageBody": "00000000000000000000000000000000",
                });
                if let Some(seq) = sequence {
                    ok["SequenceNumber"] = serde_json::Value::String(seq);
                }
                successful.push(ok);
            }
            (EntryVerdict::Failed { code, message }, _) => {
                *epoch.entries_failed.entry((*code).to_owned()).or_default() += 1;
                if let Some(q) = queue.as_deref_mut() {
                    *q.invalid.entry((*code).to_owned()).or_default() += 1;
                }
                failed.push(serde_json::json!({
                    "Id": e.id, "Code": code, "Message": message, "SenderFault": true,
                }));
            }
        }
    }
    epoch.send_calls += 1;
    epoch.entries_sent += detail.len() as u64;
    epoch.bytes_sent += call_bytes as u64;
    epoch.billed_units += sqs::billed_units(call_bytes) as u64;
    epoch.max_call_bytes = epoch.max_call_bytes.max(call_bytes as u64);
    epoch.calls.push(detail);
    st.message_ids = next_id;
    drop(guard);
    json_reply(
        StatusCode::OK,
        &serde_json::json!({"Successful": successful, "Failed": failed}),
    )
}

pub(super) fn count_other(state: &Shared, name: &str) {
    *lock(state)
        .current()
        .other_calls
        .entry(name.to_owned())
        .or_default() += 1;
}

pub(super) async fn sqs_call(
    state: &Shared,
    target: &str,
    body: Bytes,
) -> Result<Reply, DropConnection> {
    let op = target.strip_prefix("AmazonSQS.").unwrap_or(target);
    Ok(match op {
        "SendMessageBatch" => return send_with_faults(state, body).await,
        "GetQueueAttributes" => {
            count_other(state, op);
            let max = lock(state).config.max_message_bytes;
            json_reply(
                StatusCode::OK,
                &serde_json::json!({"Attributes": {
                    "MaximumMessageSize": max.to_string(),
                    "ContentBasedDeduplication": "false",
                }}),
            )
        }
        "GetQueueUrl" => {
            count_other(state, op);
            let name = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| {
                    v.get("QueueName")
                        .and_then(|n| n.as_str())
                        .map(str::to_owned)
                })
                .unwrap_or_default();
            let base = lock(state).base_url.clone();
            json_reply(
                StatusCode::OK,
                &serde_json::json!({"QueueUrl": format!("{base}/123456789012/{name}")}),
            )
        }
        other => sqs_error(
            "UnsupportedOperation",
            &format!("the benchmark stub does not serve {other}"),
            true,
        ),
    })
}
