//! The one call the forwarder makes: `SendMessageBatch`, behind a trait.
//!
//! [`SqsTransport`] makes the call with aws-sdk-sqs and turns the SDK's
//! answers into [`EntryResult`]s and [`CallError`]s, classified by
//! [`crate::send::retry`]. The trait lets tests and benchmarks put a fake in its
//! place without touching the batching and retry logic.

use std::future::Future;
use std::pin::Pin;

use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchError;
use aws_sdk_sqs::primitives::Blob;
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};

use crate::message::AttributeValue;
use crate::message::encode::SharedEntry;
use crate::send::codes;
use crate::send::outcome::Failure;
use crate::send::retry::{bare_code, call_retryable, entry_retryable};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One entry of a batch: the request-unique id and the entry.
#[derive(Debug, Clone)]
pub struct BatchItem {
    /// Unique within the request; `[A-Za-z0-9_-]{1,80}`.
    pub id: String,
    /// The entry.
    pub entry: SharedEntry,
}

/// What SQS said about one entry of a call that succeeded as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryResult {
    /// Listed under `Successful`.
    Sent {
        /// SQS message id.
        message_id: String,
        /// FIFO sequence number.
        sequence_number: Option<String>,
    },
    /// Listed under `Failed`.
    Failed {
        /// SQS error code.
        code: String,
        /// SQS's message, if any.
        message: String,
        /// SQS's `SenderFault` flag.
        sender_fault: bool,
    },
}

impl EntryResult {
    /// The failure this entry result stands for, classified.
    pub fn failure(code: &str, message: &str, sender_fault: bool) -> Failure {
        Failure::new(
            code,
            if message.is_empty() {
                format!("SQS rejected the entry ({code})")
            } else {
                message.to_owned()
            },
            entry_retryable(code, sender_fault),
        )
    }
}

/// Why a whole call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// `BatchRequestTooLong`: the forwarder splits the batch.
    TooLong(String),
    /// Any other failure, classified.
    Failed(Failure),
}

/// Sends one batch. Results are keyed by the items' ids; an id missing from
/// the answer is treated as a retryable failure.
pub trait Transport: Send + Sync {
    /// Send the items in one `SendMessageBatch` call.
    fn send_batch<'a>(
        &'a self,
        items: &'a [BatchItem],
    ) -> BoxFuture<'a, Result<Vec<(String, EntryResult)>, CallError>>;
}

/// The real transport: aws-sdk-sqs, or the direct client
/// ([`crate::call::direct`], `SQS_CLIENT=direct`), against one queue URL.
#[derive(Debug, Clone)]
pub struct SqsTransport {
    client: Client,
    queue_url: String,
}

#[derive(Debug, Clone)]
enum Client {
    Sdk(aws_sdk_sqs::Client),
    Direct(std::sync::Arc<crate::call::direct::DirectClient>),
}

impl SqsTransport {
    /// A transport for this client and queue. The forwarder retries by
    /// itself, so the client should have the SDK's retries disabled (see
    /// [`crate::setup::queue::sqs_client`]).
    pub fn new(client: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        SqsTransport {
            client: Client::Sdk(client),
            queue_url: queue_url.into(),
        }
    }

    /// A transport that makes its calls with the direct client
    /// ([`crate::call::direct`]) instead of aws-sdk-sqs.
    pub fn direct(client: crate::call::direct::DirectClient, queue_url: impl Into<String>) -> Self {
        SqsTransport {
            client: Client::Direct(std::sync::Arc::new(client)),
            queue_url: queue_url.into(),
        }
    }

    /// Whether calls go through the direct client.
    pub fn is_direct(&self) -> bool {
        matches!(self.client, Client::Direct(_))
    }

    /// The queue this transport sends to.
    pub fn queue_url(&self) -> &str {
        &self.queue_url
    }
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

impl Transport for SqsTransport {
    fn send_batch<'a>(
        &'a self,
        items: &'a [BatchItem],
    ) -> BoxFuture<'a, Result<Vec<(String, EntryResult)>, CallError>> {
        let client = match &self.client {
            Client::Sdk(client) => client,
            Client::Direct(direct) => return Box::pin(direct.send_batch(&self.queue_url, items)),
        };
        Box::pin(async move {
            let mut entries = Vec::with_capacity(items.len());
            for item in items {
                entries.push(to_sdk_entry(item).map_err(CallError::Failed)?);
            }
            let out = client
                .send_message_batch()
                .queue_url(&self.queue_url)
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
        })
    }
}
