//! Helpers for the end-to-end tests: a client for the local SQS endpoint,
//! fresh queues, and draining a queue.
//!
//! The endpoint comes from `SQS_TEST_ENDPOINT`, which `scripts/test.sh` sets
//! after starting the local SQS server. Without it the tests fail, saying so:
//! an end-to-end test that quietly skips proves nothing.

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
