//! The start-up calls through the direct client (`SQS_CLIENT=direct`):
//! `GetQueueUrl` for a `QUEUE_NAME` and `GetQueueAttributes`, in AWS JSON
//! 1.0 as the SDK makes them, with the same results and errors as
//! `discover` of [`crate::call::sdk`] (the SDK path of `SQS_CLIENT=sdk`).
//!
//! Made through the client that will send the batches, they open the
//! connection the sends reuse and fetch the credentials the sends sign
//! with: a cold start makes one connection and one credentials fetch. Like
//! the SDK path (standard retry mode), a retryable failure is tried up to
//! three times, after a jittered exponential backoff (up to 1 s, then 2 s).

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;

use crate::call::queue::QueueTarget;
use crate::call::queue::{QueueInfo, attribute_names, attributes_refused, queue_info};
use crate::call::transport::CallError;
use crate::send::outcome::Failure;
use crate::send::retry::RetryPolicy;
use crate::setup::error::SetupError;

use super::DirectClient;

/// `X-Amz-Target` of `GetQueueUrl`.
pub const GET_QUEUE_URL: &str = "AmazonSQS.GetQueueUrl";
/// `X-Amz-Target` of `GetQueueAttributes`.
pub const GET_QUEUE_ATTRIBUTES: &str = "AmazonSQS.GetQueueAttributes";
/// A start-up call's retries, as the SDK's standard retry mode makes them:
/// three attempts, full-jitter waits of at most 1 s, then 2 s.
const STARTUP_RETRY: RetryPolicy = RetryPolicy {
    max_attempts: 3,
    base_delay: Duration::from_secs(1),
    max_delay: Duration::from_secs(2),
};

#[derive(Deserialize)]
struct QueueUrlAnswer {
    #[serde(rename = "QueueUrl", default)]
    queue_url: Option<String>,
}

#[derive(Deserialize)]
struct AttributesAnswer {
    #[serde(rename = "Attributes", default)]
    attributes: Option<HashMap<String, String>>,
}

fn unreadable(operation: &str) -> CallError {
    CallError::Failed(Failure::transient(
        crate::send::codes::RESPONSE_ERROR,
        format!("the {operation} response could not be read"),
    ))
}

fn parts(e: CallError) -> (String, String) {
    match e {
        CallError::Failed(f) => (f.code, f.message),
        CallError::TooLong(m) => ("BatchRequestTooLong".into(), m),
    }
}

impl DirectClient {
    /// `operation` (to `target`, with `body`) within the call timeout,
    /// tried as [`STARTUP_RETRY`] says while it fails retryably.
    async fn startup_call(
        &self,
        operation: &str,
        target: &str,
        body: serde_json::Value,
    ) -> Result<Bytes, CallError> {
        let body = Bytes::from(body.to_string());
        let mut attempt = 1;
        loop {
            let call = self.post(operation, target, body.clone());
            match self.bounded(operation, call).await {
                Err(CallError::Failed(f))
                    if f.retryable && attempt < STARTUP_RETRY.max_attempts =>
                {
                    tracing::debug!(operation, code = %f.code, attempt, "start-up call failed; trying again");
                    tokio::time::sleep(STARTUP_RETRY.backoff(attempt)).await;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// `GetQueueUrl` for `name` (in `owner`'s account): the queue's URL.
    async fn get_queue_url(&self, name: &str, owner: Option<&str>) -> Result<String, CallError> {
        let mut body = json!({ "QueueName": name });
        if let Some(owner) = owner {
            body["QueueOwnerAWSAccountId"] = json!(owner);
        }
        let answer = self
            .startup_call("GetQueueUrl", GET_QUEUE_URL, body)
            .await?;
        let answer: QueueUrlAnswer =
            serde_json::from_slice(&answer).map_err(|_| unreadable("GetQueueUrl"))?;
        answer.queue_url.ok_or_else(|| {
            CallError::Failed(Failure::permanent(
                "NoQueueUrl",
                "GetQueueUrl returned no URL",
            ))
        })
    }

    /// `GetQueueAttributes` of `url` for `names`: the attributes answered.
    async fn get_queue_attributes(
        &self,
        url: &str,
        names: &[&str],
    ) -> Result<HashMap<String, String>, CallError> {
        let body = json!({ "QueueUrl": url, "AttributeNames": names });
        let answer = self
            .startup_call("GetQueueAttributes", GET_QUEUE_ATTRIBUTES, body)
            .await?;
        let answer: AttributesAnswer =
            serde_json::from_slice(&answer).map_err(|_| unreadable("GetQueueAttributes"))?;
        Ok(answer.attributes.unwrap_or_default())
    }
}

impl DirectClient {
    /// [`Transport::probe`](crate::call::transport::Transport::probe)
    /// through the direct client: one `GetQueueAttributes` of `url`, no
    /// retry.
    pub async fn probe(&self, url: &str) -> Result<(), Failure> {
        let body = json!({ "QueueUrl": url, "AttributeNames": ["MaximumMessageSize"] });
        let call = self.post(
            "GetQueueAttributes",
            GET_QUEUE_ATTRIBUTES,
            Bytes::from(body.to_string()),
        );
        match self.bounded("GetQueueAttributes", call).await {
            Ok(_) => Ok(()),
            Err(CallError::Failed(f)) => Err(f),
            Err(CallError::TooLong(m)) => Err(Failure::permanent(
                crate::send::codes::UNKNOWN_ERROR,
                format!("GetQueueAttributes failed: {m}"),
            )),
        }
    }
}

/// Resolve the queue URL and read its attributes through the direct
/// client: the SDK path's calls, results and errors ([`crate::call::sdk`]).
pub async fn discover(
    client: &DirectClient,
    target: &QueueTarget,
) -> Result<QueueInfo, SetupError> {
    let url = match target {
        QueueTarget::Url(u) => u.clone(),
        QueueTarget::Name {
            name,
            owner_account_id,
        } => client
            .get_queue_url(name, owner_account_id.as_deref())
            .await
            .map_err(|e| {
                let (code, message) = parts(e);
                let message = if code == "NoQueueUrl" {
                    message
                } else {
                    format!("GetQueueUrl failed (QUEUE_NAME): {message}")
                };
                SetupError::Queue {
                    queue: name.clone(),
                    code,
                    message,
                }
            })?,
    };
    let fifo = target.is_fifo();
    match client
        .get_queue_attributes(&url, attribute_names(fifo))
        .await
    {
        Ok(attributes) => Ok(queue_info(url, fifo, |name| {
            attributes.get(name).map(String::as_str)
        })),
        Err(e) => {
            let (code, message) = parts(e);
            attributes_refused(url, fifo, code, message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_as_the_sdk_reads_them() {
        let attrs = |body: &str| {
            serde_json::from_str::<AttributesAnswer>(body)
                .ok()
                .map(|a| a.attributes.unwrap_or_default())
        };
        assert_eq!(
            attrs(r#"{"Attributes":{"MaximumMessageSize":"262144"}}"#)
                .and_then(|a| a.get("MaximumMessageSize").cloned()),
            Some("262144".to_owned())
        );
        assert_eq!(attrs("{}"), Some(HashMap::new()));
        assert_eq!(attrs(r#"{"Attributes":null}"#), Some(HashMap::new()));
        assert_eq!(attrs("<xml/>"), None);
        let url = |body: &str| {
            serde_json::from_str::<QueueUrlAnswer>(body)
                .ok()
                .and_then(|a| a.queue_url)
        };
        assert_eq!(
            url(r#"{"QueueUrl":"https://sqs.eu-west-1.amazonaws.com/1/q"}"#),
            Some("https://sqs.eu-west-1.amazonaws.com/1/q".to_owned())
        );
        assert_eq!(url("{}"), None);
    }
}
