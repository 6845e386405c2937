//! Helpers for the end-to-end tests: a client for the local SQS endpoint,
//! fresh queues, and draining a queue.
//!
//! The endpoint comes from `SQS_TEST_ENDPOINT`, which `scripts/test.sh` sets
//! after starting the local SQS server. Without it the tests fail, saying so:
//! an end-to-end test that quietly skips proves nothing.

#[path = "support/aggregation.rs"]
pub mod aggregation;
#[path = "support/fault_proxy.rs"]
pub mod fault_proxy;
#[path = "support/rabbitmq.rs"]
pub mod rabbitmq;
#[path = "support/routing.rs"]
pub mod routing;

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName, QueueAttributeName};

/// The local endpoint, or a panic that tells how to start one.
pub fn endpoint() -> String {
    std::env::var("SQS_TEST_ENDPOINT").unwrap_or_else(|_| {
        panic!("SQS_TEST_ENDPOINT is not set: run the tests with scripts/test.sh, or start scripts/local-sqs.sh and export SQS_TEST_ENDPOINT")
    })
}

/// A client for the local endpoint with dummy credentials.
pub fn client() -> Client {
    let conf = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .endpoint_url(endpoint())
        .build();
    Client::from_conf(conf)
}

/// The local endpoint's AWS settings, as a function reads its own at start.
pub fn sdk_config() -> aws_config::SdkConfig {
    sdk_config_at(&endpoint())
}

/// The same settings with the SQS endpoint at `endpoint` (a proxy in front
/// of the local one).
pub fn sdk_config_at(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(Credentials::new(
                "test", "test", None, None, "tests",
            )),
        )
        .endpoint_url(endpoint)
        .build()
}

/// A forwarder to the local endpoint connected as the functions connect
/// theirs (`startup::connect_sdk`), so its `SendMessageBatch` calls go
/// through the client `SQS_CLIENT` names: the direct client by default.
/// (`tests/sqs_roundtrip.rs` keeps a round trip through aws-sdk-sqs.)
pub async fn connect(
    config: &sqs_forwarder::Config,
    group_ids: sqs_forwarder::GroupIds,
) -> sqs_forwarder::Forwarder<sqs_forwarder::SqsTransport> {
    let forwarder = sqs_forwarder::setup::startup::connect_sdk(&sdk_config(), config, group_ids)
        .await
        .expect("connect to the local queue");
    assert_eq!(
        forwarder.transport().is_direct(),
        std::env::var("SQS_CLIENT").as_deref() != Ok("sdk"),
        "the transport SQS_CLIENT names"
    );
    forwarder
}

/// A fresh queue with a unique name; `.fifo` names make FIFO queues.
pub async fn create_queue(
    client: &Client,
    base: &str,
    attrs: &[(QueueAttributeName, &str)],
) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let fifo = base.ends_with(".fifo");
    let stem = base.trim_end_matches(".fifo");
    let name = format!("{stem}-{nanos}{}", if fifo { ".fifo" } else { "" });
    let mut req = client.create_queue().queue_name(&name);
    if fifo {
        req = req.attributes(QueueAttributeName::FifoQueue, "true");
    }
    for (k, v) in attrs {
        req = req.attributes(k.clone(), *v);
    }
    let out = req
        .send()
        .await
        .expect("create queue on the local endpoint");
    out.queue_url().expect("queue url").to_owned()
}

/// Receive until `expected` messages came back or nothing more arrives.
pub async fn drain(client: &Client, url: &str, expected: usize) -> Vec<Message> {
    let mut got = Vec::new();
    let mut empty_rounds = 0;
    while got.len() < expected && empty_rounds < 3 {
        let out = client
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .message_attribute_names("All")
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive");
        let batch = out.messages().to_vec();
        if batch.is_empty() {
            empty_rounds += 1;
            continue;
        }
        for m in &batch {
            if let Some(h) = m.receipt_handle() {
                client
                    .delete_message()
                    .queue_url(url)
                    .receipt_handle(h)
                    .send()
                    .await
                    .expect("delete");
            }
        }
        got.extend(batch);
    }
    // A last look: nothing beyond what was expected.
    tokio::time::sleep(Duration::from_millis(50)).await;
    got
}

/// A message's attributes as (data type, string or bytes) by name.
pub fn attributes(m: &Message) -> HashMap<String, (String, Vec<u8>)> {
    m.message_attributes()
        .map(|attrs| {
            attrs
                .iter()
                .map(|(k, v)| {
                    let bytes = match (v.string_value(), v.binary_value()) {
                        (Some(s), _) => s.as_bytes().to_vec(),
                        (None, Some(b)) => b.as_ref().to_vec(),
                        (None, None) => Vec::new(),
                    };
                    (k.clone(), (v.data_type().to_owned(), bytes))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// An SQS endpoint that keeps every message it accepts, for tests whose
/// scale moto cannot hold faithfully (it loses a few of 100,000 messages
/// under concurrent receives and deletes). It answers `GetQueueAttributes`
/// (a standard queue with a 1 MiB limit) and `SendMessageBatch`, refuses a
/// call with more than 10 entries, repeated ids, or over 1 MiB of bodies,
/// and records each accepted entry's body in arrival order. Sizes are
/// checked to the byte, attributes included, by the shared crate's own
/// strict fake (`shared/tests/byte_accounting.rs`); here the bodies are what
/// matters.
pub struct RecordingSqs {
    server: wiremock::MockServer,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    refused: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

struct Recorder {
    bodies: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    refused: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    next_id: std::sync::atomic::AtomicU64,
}

impl wiremock::Respond for Recorder {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        use serde_json::{Value, json};
        use std::sync::atomic::Ordering;
        let target = request
            .headers
            .get("x-amz-target")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let refuse = |code: &str, message: &str| {
            self.refused.fetch_add(1, Ordering::SeqCst);
            wiremock::ResponseTemplate::new(400)
                .insert_header("x-amzn-query-error", format!("{code};Sender"))
                .set_body_raw(
                    json!({"__type": format!("com.amazonaws.sqs#{code}"), "message": message})
                        .to_string(),
                    "application/x-amz-json-1.0",
                )
        };
        let body: Value = match serde_json::from_slice(&request.body) {
            Ok(v) => v,
            Err(_) => return refuse("InvalidParameterValue", "request body is not JSON"),
        };
        let ok = |v: Value| {
            wiremock::ResponseTemplate::new(200)
                .set_body_raw(v.to_string(), "application/x-amz-json-1.0")
        };
        match target {
            "AmazonSQS.GetQueueAttributes" => ok(json!({"Attributes": {
                "MaximumMessageSize": "1048576",
                "ContentBasedDeduplication": "false",
            }})),
            "AmazonSQS.SendMessageBatch" => {
                let entries = body["Entries"].as_array().cloned().unwrap_or_default();
                if entries.is_empty() {
                    return refuse("EmptyBatchRequest", "no entries");
                }
                if entries.len() > 10 {
                    return refuse("TooManyEntriesInBatchRequest", "more than 10 entries");
                }
                let ids: std::collections::HashSet<&str> =
                    entries.iter().filter_map(|e| e["Id"].as_str()).collect();
                if ids.len() != entries.len() {
                    return refuse("BatchEntryIdsNotDistinct", "ids repeat or are missing");
                }
                let bytes: usize = entries
                    .iter()
                    .map(|e| e["MessageBody"].as_str().map_or(0, str::len))
                    .sum();
                if bytes > 1_048_576 {
                    return refuse("BatchRequestTooLong", "over 1 MiB");
                }
                let mut successful = Vec::with_capacity(entries.len());
                let mut kept = self.bodies.lock().expect("recorder lock");
                for e in &entries {
                    let n = self.next_id.fetch_add(1, Ordering::SeqCst);
                    kept.push(e["MessageBody"].as_str().unwrap_or_default().to_owned());
                    successful.push(json!({
                        "Id": e["Id"],
                        "MessageId": format!("00000000-0000-4000-8000-{n:012}"),
                        "MD5OfMessageBody": "00000000000000000000000000000000",
                    }));
                }
                ok(json!({"Successful": successful, "Failed": []}))
            }
            other => refuse(
                "UnsupportedOperation",
                &format!("not served here: {other:?}"),
            ),
        }
    }
}

impl RecordingSqs {
    /// Start the recording endpoint on a free local port.
    pub async fn start() -> Self {
        let server = wiremock::MockServer::builder()
            // Every request is answered by the recorder; wiremock's own
            // request log would only double the memory.
            .disable_request_recording()
            .start()
            .await;
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let refused = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        wiremock::Mock::given(wiremock::matchers::method("POST"))
            .respond_with(Recorder {
                bodies: bodies.clone(),
                refused: refused.clone(),
                next_id: std::sync::atomic::AtomicU64::new(0),
            })
            .mount(&server)
            .await;
        Self {
            server,
            bodies,
            refused,
        }
    }

    /// A queue URL on this endpoint.
    pub fn queue_url(&self) -> String {
        format!("{}/000000000000/recorded", self.server.uri())
    }

    /// A client for this endpoint with dummy credentials.
    pub fn client(&self) -> Client {
        let conf = aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
            .endpoint_url(self.server.uri())
            .build();
        Client::from_conf(conf)
    }

    /// Every accepted body, in the order the calls arrived.
    pub fn bodies(&self) -> Vec<String> {
        self.bodies.lock().expect("recorder lock").clone()
    }

    /// Calls refused (malformed, or over the SQS limits).
    pub fn refused(&self) -> usize {
        self.refused.load(std::sync::atomic::Ordering::SeqCst)
    }
}
