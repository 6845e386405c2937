//! Reading a queue: receive, delete, hide and release messages, and put one
//! back.
//!
//! The forwarder itself only sends. Reading is for tools that take messages
//! back out of a queue, such as the replay tool that works through the
//! on-failure queue: it receives an entry, keeps it hidden while it works on
//! it, and deletes it only once all it stands for was forwarded (or, when
//! part of it is lost for good, puts back an entry for that part only).
//!
//! Unlike the sending client, this one keeps the SDK's standard retries: a
//! receive or a delete that is throttled is simply tried again.

use std::time::Duration;

use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};

use crate::setup::aws_names::region_of_queue_url;

/// A call to the queue that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{action} on {queue}: {code}: {message}")]
pub struct ReceiveError {
    /// The SQS action (`ReceiveMessage`, `DeleteMessage`, ...).
    pub action: &'static str,
    /// The queue URL.
    pub queue: String,
    /// SQS's error code, or the kind of failure (`ConnectionError`, ...).
    pub code: String,
    /// What went wrong.
    pub message: String,
}

/// One message taken from the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// SQS's message id: the same at every delivery.
    pub message_id: String,
    /// The body.
    pub body: String,
    /// The handle that deletes or hides this delivery.
    pub receipt_handle: String,
    /// How many times SQS has delivered it (`ApproximateReceiveCount`).
    pub receive_count: u32,
}

/// A queue to read from.
#[derive(Debug, Clone)]
pub struct QueueReader {
    client: aws_sdk_sqs::Client,
    url: String,
}

impl QueueReader {
    /// A reader for `url`, with a client built from `sdk` in the region the
    /// URL names (else the SDK's), with the SDK's standard retries.
    pub fn new(sdk: &aws_config::SdkConfig, url: impl Into<String>) -> Self {
        let url = url.into();
        let mut conf = aws_sdk_sqs::config::Builder::from(sdk);
        if let Some(region) = region_of_queue_url(&url) {
            conf = conf.region(aws_sdk_sqs::config::Region::new(region));
        }
        QueueReader {
            client: aws_sdk_sqs::Client::from_conf(conf.build()),
            url,
        }
    }

    /// A reader with a client of the caller's making.
    pub fn with_client(client: aws_sdk_sqs::Client, url: impl Into<String>) -> Self {
        QueueReader {
            client,
            url: url.into(),
        }
    }

    /// The queue URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn error<E, R>(&self, action: &'static str, err: &SdkError<E, R>) -> ReceiveError
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug + 'static,
    {
        let (code, message) = crate::send::codes::sdk_error_parts(err);
        ReceiveError {
            action,
            queue: self.url.clone(),
            code,
            message,
        }
    }

    /// Take up to `max` (1..10) messages, hidden from other readers for
    /// `visibility`; wait up to `wait` (long polling, at most 20 s) when the
    /// queue looks empty. An empty answer after the wait means nothing is
    /// visible.
    pub async fn receive(
        &self,
        max: i32,
        visibility: Duration,
        wait: Duration,
    ) -> Result<Vec<Received>, ReceiveError> {
        let out = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(max.clamp(1, 10))
            .visibility_timeout(seconds(visibility))
            .wait_time_seconds(seconds(wait).min(20))
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send()
            .await
            .map_err(|e| self.error("ReceiveMessage", &e))?;
        Ok(out
            .messages()
            .iter()
            .filter_map(|m| {
                Some(Received {
                    message_id: m.message_id()?.to_owned(),
                    body: m.body().unwrap_or_default().to_owned(),
                    receipt_handle: m.receipt_handle()?.to_owned(),
                    receive_count: m
                        .attributes()
                        .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(1),
                })
            })
            .collect())
    }

    /// Delete a received message.
    pub async fn delete(&self, receipt_handle: &str) -> Result<(), ReceiveError> {
        self.client
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(receipt_handle)
            .send()
            .await
            .map_err(|e| self.error("DeleteMessage", &e))?;
        Ok(())
    }

    /// Keep a received message hidden for `visibility` from now (zero makes
    /// it visible again at once).
    pub async fn hide(
        &self,
        receipt_handle: &str,
        visibility: Duration,
    ) -> Result<(), ReceiveError> {
        self.client
            .change_message_visibility()
            .queue_url(&self.url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(seconds(visibility))
            .send()
            .await
            .map_err(|e| self.error("ChangeMessageVisibility", &e))?;
        Ok(())
    }

    /// Make a received message visible again at once.
    pub async fn release(&self, receipt_handle: &str) -> Result<(), ReceiveError> {
        self.hide(receipt_handle, Duration::ZERO).await
    }

    /// Put a message with `body` into the queue; its message id. No group
    /// or deduplication id is set: this is for standard queues (Lambda's
    /// on-failure destinations are).
    pub async fn send(&self, body: &str) -> Result<String, ReceiveError> {
        let out = self
            .client
            .send_message()
            .queue_url(&self.url)
            .message_body(body)
            .send()
            .await
            .map_err(|e| self.error("SendMessage", &e))?;
        Ok(out.message_id().unwrap_or_default().to_owned())
    }

    /// `ApproximateNumberOfMessages`: how many messages are visible.
    pub async fn approximate_count(&self) -> Result<u64, ReceiveError> {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .send()
            .await
            .map_err(|e| self.error("GetQueueAttributes", &e))?;
        Ok(out
            .attributes()
            .and_then(|a| a.get(&QueueAttributeName::ApproximateNumberOfMessages))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0))
    }
}

/// Whole seconds, as SQS takes them (at most 12 hours for a visibility).
fn seconds(d: Duration) -> i32 {
    d.as_secs().min(43_200) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_whole_and_bounded() {
        assert_eq!(seconds(Duration::from_millis(1_999)), 1);
        assert_eq!(seconds(Duration::from_secs(50_000)), 43_200);
        assert_eq!(seconds(Duration::ZERO), 0);
    }
}
