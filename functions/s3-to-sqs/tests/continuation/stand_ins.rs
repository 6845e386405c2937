//! The services around a chain, for the continuation tests: a queue that
//! records what it accepts (FIFO: deduplicated by deduplication id, as SQS
//! does within its window), Lambda's `Invoke` API taking the function's
//! hand-overs, and Lambda's async invocation (retries included) driving the
//! built binary through the local runtime API.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use sqs_forwarder::test_support::runtime_api::{Posted, RuntimeApi};
use wiremock::matchers::{header, method, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// One message the queue accepted.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub body: String,
    pub line: u64,
    pub dedup: Option<String>,
}

#[derive(Default)]
struct Kept {
    messages: Vec<Recorded>,
    seen: HashSet<String>,
    duplicates: usize,
}

/// An SQS endpoint keeping every message it accepts (moto takes tens of
/// messages a second: a million would take hours). It answers
/// `GetQueueAttributes` and `SendMessageBatch` (at most 10 entries); a FIFO
/// queue (`.fifo` URL) accepts a message whose deduplication id it has
/// already seen without keeping it again, as SQS does.
pub struct QueueRecorder {
    server: MockServer,
    kept: Arc<Mutex<Kept>>,
    fifo: bool,
}

struct Recorder {
    kept: Arc<Mutex<Kept>>,
    fifo: bool,
    next_id: AtomicU64,
}

impl Respond for Recorder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let target = request
            .headers
            .get("x-amz-target")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let ok = |v: Value| {
            ResponseTemplate::new(200).set_body_raw(v.to_string(), "application/x-amz-json-1.0")
        };
        let refuse = |code: &str| {
            ResponseTemplate::new(400)
                .insert_header("x-amzn-query-error", format!("{code};Sender"))
                .set_body_raw(
                    json!({"__type": format!("com.amazonaws.sqs#{code}"), "message": code})
                        .to_string(),
                    "application/x-amz-json-1.0",
                )
        };
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        match target {
            "AmazonSQS.GetQueueAttributes" => ok(json!({"Attributes": {
                "MaximumMessageSize": "1048576",
                "FifoQueue": self.fifo.to_string(),
                "ContentBasedDeduplication": "false",
            }})),
            "AmazonSQS.SendMessageBatch" => {
                let entries = body["Entries"].as_array().cloned().unwrap_or_default();
                if entries.is_empty() || entries.len() > 10 {
                    return refuse("TooManyEntriesInBatchRequest");
                }
                let mut kept = self.kept.lock().expect("recorder lock");
                let mut successful = Vec::new();
                for e in &entries {
                    let dedup = e["MessageDeduplicationId"].as_str().map(str::to_owned);
                    if self.fifo && (dedup.is_none() || e["MessageGroupId"].as_str().is_none()) {
                        return refuse("MissingParameter");
                    }
                    let n = self.next_id.fetch_add(1, Ordering::SeqCst);
                    successful.push(json!({
                        "Id": e["Id"],
                        "MessageId": format!("00000000-0000-4000-8000-{n:012}"),
                        "MD5OfMessageBody": "00000000000000000000000000000000",
                    }));
                    if let Some(d) = &dedup
                        && self.fifo
                        && !kept.seen.insert(d.clone())
                    {
                        kept.duplicates += 1;
                        continue;
                    }
                    let line = e["MessageAttributes"]["line"]["StringValue"]
                        .as_str()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0);
                    kept.messages.push(Recorded {
                        body: e["MessageBody"].as_str().unwrap_or_default().to_owned(),
                        line,
                        dedup,
                    });
                }
                ok(json!({"Successful": successful, "Failed": []}))
            }
            _ => refuse("UnsupportedOperation"),
        }
    }
}

impl QueueRecorder {
    pub async fn start(fifo: bool) -> Self {
        let server = MockServer::builder()
            .disable_request_recording()
            .start()
            .await;
        let kept = Arc::new(Mutex::new(Kept::default()));
        Mock::given(method("POST"))
            .respond_with(Recorder {
                kept: kept.clone(),
                fifo,
                next_id: AtomicU64::new(0),
            })
            .mount(&server)
            .await;
        QueueRecorder { server, kept, fifo }
    }

    pub fn endpoint(&self) -> String {
        self.server.uri()
    }

    pub fn queue_url(&self) -> String {
        let suffix = if self.fifo { ".fifo" } else { "" };
        format!("{}/000000000000/chain{suffix}", self.server.uri())
    }

    /// The messages kept, in arrival order.
    pub fn messages(&self) -> Vec<Recorded> {
        self.kept.lock().expect("recorder lock").messages.clone()
    }

    /// FIFO: messages accepted again under a deduplication id already seen.
    pub fn duplicates(&self) -> usize {
        self.kept.lock().expect("recorder lock").duplicates
    }
}

/// Lambda's `Invoke` API: answers 202 to asynchronous invocations (after
/// `fail_first` refusals with `AccessDeniedException`) and keeps their
/// payloads.
pub struct LambdaApi {
    server: MockServer,
    refused: Arc<AtomicUsize>,
}

struct Refuse {
    left: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
}

impl Respond for Refuse {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let refuse = self
            .left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if refuse {
            self.refused.fetch_add(1, Ordering::SeqCst);
            ResponseTemplate::new(403)
                .insert_header("x-amzn-errortype", "AccessDeniedException")
                .set_body_raw(
                    json!({"Type": "User", "Message": "not allowed (the test's refusal)"})
                        .to_string(),
                    "application/json",
                )
        } else {
            ResponseTemplate::new(202)
        }
    }
}

impl LambdaApi {
    pub async fn start(fail_first: usize) -> Self {
        let server = MockServer::start().await;
        let refused = Arc::new(AtomicUsize::new(0));
        Mock::given(method("POST"))
            .and(path_regex(r"^/2015-03-31/functions/test/invocations$"))
            .and(header("x-amz-invocation-type", "Event"))
            .respond_with(Refuse {
                left: Arc::new(AtomicUsize::new(fail_first)),
                refused: refused.clone(),
            })
            .mount(&server)
            .await;
        LambdaApi { server, refused }
    }

    pub fn endpoint(&self) -> String {
        self.server.uri()
    }

    /// Every payload the function sent, accepted or refused, in order.
    pub async fn payloads(&self) -> Vec<Value> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).unwrap_or(Value::Null))
            .collect()
    }

    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }
}

/// What Lambda did with a chain.
#[derive(Debug, Default)]
pub struct Chain {
    /// Every invocation's event and what the function posted, in order
    /// (retries included).
    pub invocations: Vec<(Value, Posted)>,
    /// The event that failed every attempt: the on-failure destination's.
    pub on_failure: Option<Value>,
}

impl Chain {
    /// The continuation steps that succeeded.
    pub fn steps(&self) -> usize {
        self.invocations
            .iter()
            .filter(|(_, p)| matches!(p, Posted::Response { .. }))
            .count()
    }
}

fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Run `first` and every invocation the function queues through `lambda`,
/// one at a time, each with `timeout` to its deadline; a failed invocation
/// is retried twice with the same event (Lambda's asynchronous retries),
/// then handed to the "on-failure destination" (`Chain::on_failure`).
pub async fn run_chain(
    api: &RuntimeApi,
    lambda: &LambdaApi,
    first: Value,
    timeout: Duration,
) -> Chain {
    let mut chain = Chain::default();
    let mut queue = std::collections::VecDeque::from([first]);
    // Refusals are the first calls (`fail_first`): what follows was
    // queued. What was queued before is the caller's.
    let mut taken = lambda
        .payloads()
        .await
        .len()
        .saturating_sub(lambda.refused());
    while let Some(event) = queue.pop_front() {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let deadline = epoch_ms() + timeout.as_millis() as u64;
            let posted = api.invoke_until(&event, deadline).await;
            let failed = !matches!(posted, Posted::Response { .. });
            eprintln!(
                "invocation {} ({}): {}",
                chain.invocations.len() + 1,
                event["s3ToSqsContinuation"]["line"],
                if failed { "failed" } else { "done" }
            );
            chain.invocations.push((event.clone(), posted));
            let payloads = lambda.payloads().await;
            let queued = payloads.get(lambda.refused()..).unwrap_or_default();
            queue.extend(queued.iter().skip(taken).cloned());
            taken = queued.len();
            if !failed {
                break;
            }
            if attempts == 3 {
                chain.on_failure = Some(event.clone());
                break;
            }
        }
    }
    chain
}
