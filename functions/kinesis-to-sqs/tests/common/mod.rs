//! Test helpers: Kinesis events built like Lambda's, and a scriptable fake
//! SQS transport that records what it accepted.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use kinesis_to_sqs::event::KinesisEvent;
use serde_json::{Value, json};
use sqs_forwarder::encode::EncodeRules;
use sqs_forwarder::transport::{BatchItem, BoxFuture, CallError, EntryResult};
use sqs_forwarder::{Attribute, AttributeValue, Forwarder, RetryPolicy, SendSettings, Transport};

pub const ARN: &str = "arn:aws:kinesis:eu-west-1:123456789012:stream/orders";
pub const SHARD: &str = "shardId-000000000001";

/// The sequence number of the `i`-th record: 56 digits, rising with `i`.
pub fn seq(i: usize) -> String {
    format!("49590338271490256608559692538361571095921575989{i:09}")
}

/// One record as Lambda delivers it.
pub fn record(i: usize, partition_key: &str, data: &[u8]) -> Value {
    let seq = seq(i);
    json!({
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": partition_key,
            "sequenceNumber": seq,
            "data": base64::engine::general_purpose::STANDARD.encode(data),
            "approximateArrivalTimestamp": 1_764_410_000.5
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": format!("{SHARD}:{seq}"),
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": "arn:aws:iam::123456789012:role/kinesis-to-sqs-role",
        "awsRegion": "eu-west-1",
        "eventSourceARN": ARN
    })
}

/// An event of these records.
pub fn event(records: Vec<Value>) -> KinesisEvent {
    serde_json::from_value(json!({ "Records": records })).expect("a Kinesis event")
}

/// `n` text records `rec-<i>`, partition keys cycling through `keys`.
pub fn text_event(n: usize, keys: &[&str]) -> KinesisEvent {
    event(
        (0..n)
            .map(|i| record(i, keys[i % keys.len()], format!("rec-{i}").as_bytes()))
            .collect(),
    )
}

/// A sample event from the repository's `events/`.
pub fn sample(name: &str) -> KinesisEvent {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} is not a Kinesis event: {e}"))
}

/// What the fake answers for one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    Accept,
    Fail {
        code: &'static str,
        sender_fault: bool,
    },
}

impl Reply {
    pub const INTERNAL: Reply = Reply::Fail {
        code: "InternalError",
        sender_fault: false,
    };
    pub const THROTTLED: Reply = Reply::Fail {
        code: "RequestThrottled",
        sender_fault: true,
    };
    pub const INVALID: Reply = Reply::Fail {
        code: "InvalidParameterValue",
        sender_fault: true,
    };
}

/// An entry the fake accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub body: String,
    pub attributes: Vec<Attribute>,
    pub group_id: Option<String>,
    pub deduplication_id: Option<String>,
    pub call: usize,
}

impl Seen {
    pub fn attribute(&self, name: &str) -> Option<&AttributeValue> {
        self.attributes
            .iter()
            .find(|a| a.name == name)
            .map(|a| &a.value)
    }

    pub fn string(&self, name: &str) -> Option<&str> {
        match self.attribute(name) {
            Some(AttributeValue::String(s)) | Some(AttributeValue::Number(s)) => Some(s),
            _ => None,
        }
    }
}

type EntryRule = Box<dyn Fn(usize, &str, u32) -> Reply + Send + Sync>;
type CallRule = Box<dyn Fn(usize) -> Option<CallError> + Send + Sync>;

#[derive(Default)]
struct State {
    calls: usize,
    attempts: HashMap<String, u32>,
    accepted: Vec<Seen>,
    entries_per_call: Vec<usize>,
}

/// A fake SQS: `entry(call, body, attempt)` answers each entry (attempt
/// counts from 1 per body), `call(call)` may fail a whole call, and every
/// call takes `delay` (virtual time in paused tests).
#[derive(Clone)]
pub struct FakeSqs {
    entry: Arc<EntryRule>,
    call: Arc<CallRule>,
    delay: Duration,
    state: Arc<Mutex<State>>,
}

impl FakeSqs {
    pub fn accepting() -> Self {
        Self::new(|_, _, _| Reply::Accept)
    }

    pub fn new(entry: impl Fn(usize, &str, u32) -> Reply + Send + Sync + 'static) -> Self {
        FakeSqs {
            entry: Arc::new(Box::new(entry)),
            call: Arc::new(Box::new(|_| None)),
            delay: Duration::from_millis(5),
            state: Arc::default(),
        }
    }

    pub fn failing_calls(
        mut self,
        call: impl Fn(usize) -> Option<CallError> + Send + Sync + 'static,
    ) -> Self {
        self.call = Arc::new(Box::new(call));
        self
    }

    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Entries accepted, in the order calls completed.
    pub fn accepted(&self) -> Vec<Seen> {
        self.state.lock().expect("state").accepted.clone()
    }

    pub fn accepted_bodies(&self) -> Vec<String> {
        self.accepted().into_iter().map(|s| s.body).collect()
    }

    pub fn calls(&self) -> usize {
        self.state.lock().expect("state").calls
    }

    pub fn entries_per_call(&self) -> Vec<usize> {
        self.state.lock().expect("state").entries_per_call.clone()
    }

    pub fn clear(&self) {
        *self.state.lock().expect("state") = State::default();
    }
}

impl Transport for FakeSqs {
    fn send_batch<'a>(
        &'a self,
        items: &'a [BatchItem],
    ) -> BoxFuture<'a, Result<Vec<(String, EntryResult)>, CallError>> {
        Box::pin(async move {
            let call = {
                let mut s = self.state.lock().expect("state");
                s.calls += 1;
                s.entries_per_call.push(items.len());
                s.calls - 1
            };
            tokio::time::sleep(self.delay).await;
            if let Some(e) = (self.call)(call) {
                return Err(e);
            }
            let mut s = self.state.lock().expect("state");
            let mut results = Vec::with_capacity(items.len());
            for item in items {
                let e = &item.entry;
                let attempt = {
                    let n = s.attempts.entry(e.body.clone()).or_default();
                    *n += 1;
                    *n
                };
                match (self.entry)(call, &e.body, attempt) {
                    Reply::Accept => {
                        s.accepted.push(Seen {
                            body: e.body.clone(),
                            attributes: e.attributes.clone(),
                            group_id: e.group_id.clone(),
                            deduplication_id: e.deduplication_id.clone(),
                            call,
                        });
                        results.push((
                            item.id.clone(),
                            EntryResult::Sent {
                                message_id: format!("m-{call}-{}", item.id),
                                sequence_number: None,
                            },
                        ));
                    }
                    Reply::Fail { code, sender_fault } => results.push((
                        item.id.clone(),
                        EntryResult::Failed {
                            code: code.into(),
                            message: String::new(),
                            sender_fault,
                        },
                    )),
                }
            }
            Ok(results)
        })
    }
}

/// Send settings for tests: quick retries, three attempts.
pub fn send_settings() -> SendSettings {
    SendSettings {
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(4),
        },
        ..SendSettings::default()
    }
}

pub fn forwarder(fake: &FakeSqs, fifo: bool) -> Forwarder<FakeSqs> {
    forwarder_with(fake, send_settings(), fifo)
}

pub fn forwarder_with(fake: &FakeSqs, settings: SendSettings, fifo: bool) -> Forwarder<FakeSqs> {
    let rules = EncodeRules {
        fifo,
        content_based_deduplication: fifo.then_some(false),
        ..EncodeRules::default()
    };
    Forwarder::new(fake.clone(), settings, rules)
}
