//! The SQS calls through aws-sdk-sqs (`SQS_CLIENT=sdk`): `SendMessageBatch`,
//! its answers turned into [`EntryResult`]s and its errors into
//! [`CallError`]s, and the start-up calls ([`discover`]: `GetQueueUrl`,
//! `GetQueueAttributes`).

use aws_sdk_sqs::config::retry::RetryConfig;
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchError;
use aws_sdk_sqs::primitives::Blob;
use aws_sdk_sqs::types::{MessageAttributeValue, QueueAttributeName, SendMessageBatchRequestEntry};

use super::transport::{BatchItem, CallError, EntryResult};
use crate::call::queue::QueueTarget;
use crate::call::queue::{QueueInfo, attribute_names, attributes_refused, queue_info};
use crate::message::AttributeValue;
use crate::send::codes::{self, sdk_error_parts};
use crate::send::outcome::Failure;
use crate::send::retry::{bare_code, call_retryable};
use crate::setup::error::SetupError;

/// Send `items` to `queue_url` in one `SendMessageBatch` call through
/// `client`.
pub(super) async fn send_batch(
    client: &aws_sdk_sqs::Client,
    queue_url: &str,
    items: &[BatchItem],
) -> Result<Vec<(String, EntryResult)>, CallError> {
    let mut entries = Vec::with_capacity(items.len());
    for item in items {
        entries.push(to_sdk_entry(item).map_err(CallError::Failed)?);
    }
    let out = client
        .send_message_batch()
        .queue_url(queue_url)
        .set_entries(Some(entries))
        .send()
        .await
        .map_err(|e| classify_sdk_error(&e))?;
    let mut results = Vec::with_capacity(items.len());
    for s in out.successful() {
        results.push((
            s.id().to_owned(),
            EntryResult::Sent {
                message_id: s.message_id().to_owned(),
                sequence_number: s.sequence_number().map(str::to_owned),
            },
        ));
    }
    for f in out.failed() {
        results.push((
            f.id().to_owned(),
            EntryResult::Failed {
                code: f.code().to_owned(),
                message: f.message().unwrap_or("").to_owned(),
                sender_fault: f.sender_fault(),
            },
        ));
    }
    Ok(results)
}

fn to_sdk_entry(item: &BatchItem) -> Result<SendMessageBatchRequestEntry, Failure> {
    let e = &item.entry;
    let mut b = SendMessageBatchRequestEntry::builder()
        .id(&item.id)
        .message_body(&e.body)
        .set_message_group_id(e.group_id.clone())
        .set_message_deduplication_id(e.deduplication_id.clone())
        .set_delay_seconds(e.delay_seconds);
    for a in &e.attributes {
        let v = MessageAttributeValue::builder().data_type(a.data_type.as_ref());
        let v = match &a.value {
            AttributeValue::String(s) | AttributeValue::Number(s) => v.string_value(s),
            AttributeValue::Binary(bytes) => v.binary_value(Blob::new(bytes.clone())),
        };
        let v = v
            .build()
            .map_err(|err| Failure::permanent(codes::INVALID_ATTRIBUTE, err.to_string()))?;
        b = b.message_attributes(a.name.as_ref(), v);
    }
    b.build()
        .map_err(|err| Failure::permanent(codes::INVALID_ENTRY, err.to_string()))
}

/// Classify a whole-call SDK error.
pub fn classify_sdk_error<R>(err: &SdkError<SendMessageBatchError, R>) -> CallError
where
    R: HttpStatus + std::fmt::Debug,
{
    match err {
        SdkError::TimeoutError(_) => CallError::Failed(Failure::transient(
            codes::TIMEOUT,
            "the SendMessageBatch call timed out",
        )),
        SdkError::DispatchFailure(e) => CallError::Failed(Failure::transient(
            codes::CONNECTION_ERROR,
            format!("the SendMessageBatch call could not be made: {e:?}"),
        )),
        SdkError::ResponseError(_) => CallError::Failed(Failure::transient(
            codes::RESPONSE_ERROR,
            "the SendMessageBatch response could not be read",
        )),
        SdkError::ServiceError(se) => {
            let e = se.err();
            let code = e.code();
            let message = e.message().unwrap_or("").to_owned();
            if matches!(e, SendMessageBatchError::BatchRequestTooLong(_))
                || code.map(bare_code) == Some(codes::BATCH_REQUEST_TOO_LONG)
            {
                return CallError::TooLong(message);
            }
            let status = se.raw().status_code();
            let code = code.unwrap_or(codes::UNKNOWN_ERROR).to_owned();
            let message = if message.is_empty() {
                format!("SendMessageBatch failed with HTTP {}", status.unwrap_or(0))
            } else {
                message
            };
            let retryable = call_retryable(Some(&code), status);
            CallError::Failed(Failure::new(code, message, retryable))
        }
        SdkError::ConstructionFailure(_) => CallError::Failed(Failure::permanent(
            codes::REQUEST_CONSTRUCTION_FAILED,
            format!("the SendMessageBatch request could not be built: {err:?}"),
        )),
        other => CallError::Failed(Failure::transient(
            codes::UNKNOWN_ERROR,
            format!("SendMessageBatch failed: {other:?}"),
        )),
    }
}

/// The HTTP status of a raw response, for classification.
pub trait HttpStatus {
    /// The status code, if there is one.
    fn status_code(&self) -> Option<u16>;
}

impl HttpStatus for aws_sdk_sqs::config::http::HttpResponse {
    fn status_code(&self) -> Option<u16> {
        Some(self.status().as_u16())
    }
}

/// [`Transport::probe`](super::transport::Transport::probe) through
/// aws-sdk-sqs: one `GetQueueAttributes` of `queue_url`, as the client
/// makes every call (no retries of its own).
pub(super) async fn probe(client: &aws_sdk_sqs::Client, queue_url: &str) -> Result<(), Failure> {
    match client
        .get_queue_attributes()
        .queue_url(queue_url)
        .attribute_names(QueueAttributeName::MaximumMessageSize)
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(e) => {
            let status = match &e {
                SdkError::ServiceError(se) => se.raw().status_code(),
                _ => None,
            };
            let service = matches!(e, SdkError::ServiceError(_));
            let (code, message) = sdk_error_parts(&e);
            // An error that is not SQS's answer (no connection, a timeout)
            // is one a later try may not meet.
            let retryable = !service || call_retryable(Some(&code), status);
            Err(Failure::new(
                code,
                format!("GetQueueAttributes failed: {message}"),
                retryable,
            ))
        }
    }
}

/// Resolve the queue URL and read its attributes through aws-sdk-sqs
/// (`SQS_CLIENT=sdk`; [`crate::call::direct::discover`] makes the same calls
/// through the direct client).
pub(super) async fn discover(
    client: &aws_sdk_sqs::Client,
    target: &QueueTarget,
) -> Result<QueueInfo, SetupError> {
    let standard_retries =
        aws_sdk_sqs::config::Builder::default().retry_config(RetryConfig::standard());
    let url = match target {
        QueueTarget::Url(u) => u.clone(),
        QueueTarget::Name {
            name,
            owner_account_id,
        } => {
            let out = client
                .get_queue_url()
                .queue_name(name)
                .set_queue_owner_aws_account_id(owner_account_id.clone())
                .customize()
                .config_override(standard_retries.clone())
                .send()
                .await
                .map_err(|e| {
                    let (code, message) = sdk_error_parts(&e);
                    SetupError::Queue {
                        queue: name.clone(),
                        code,
                        message: format!("GetQueueUrl failed (QUEUE_NAME): {message}"),
                    }
                })?;
            out.queue_url()
                .map(str::to_owned)
                .ok_or_else(|| SetupError::Queue {
                    queue: name.clone(),
                    code: "NoQueueUrl".into(),
                    message: "GetQueueUrl returned no URL".into(),
                })?
        }
    };
    let fifo = target.is_fifo();
    let attrs = client
        .get_queue_attributes()
        .queue_url(&url)
        .set_attribute_names(Some(
            attribute_names(fifo)
                .iter()
                .map(|&n| QueueAttributeName::from(n))
                .collect(),
        ))
        .customize()
        .config_override(standard_retries)
        .send()
        .await;
    match attrs {
        Ok(out) => {
            let map = out.attributes();
            Ok(queue_info(url, fifo, |name| {
                map.and_then(|m| m.get(&QueueAttributeName::from(name)))
                    .map(String::as_str)
            }))
        }
        Err(e) => {
            let (code, message) = sdk_error_parts(&e);
            attributes_refused(url, fifo, code, message)
        }
    }
}
