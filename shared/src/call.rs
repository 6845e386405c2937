//! The SQS call: the one `SendMessageBatch` call the forwarder makes, behind
//! the [`Transport`] trait, and the clients that make it.
//!
//! [`transport`](mod@transport) holds the trait and the types of a call
//! ([`BatchItem`], [`EntryResult`], [`CallError`]), [`queue`] the queue a
//! call goes to. This module makes the one choice of client ([`SqsClient`],
//! `SQS_CLIENT`) in its one factory, [`transport()`]: aws-sdk-sqs ([`sdk`])
//! or the crate's own client ([`direct`], the default), which makes the
//! start-up calls (`GetQueueUrl`, `GetQueueAttributes`) and then every
//! `SendMessageBatch` of the [`SqsTransport`] it returns. [`receive`] reads a queue, for the tools that
//! take messages back out of one (the replay command).

#[cfg(feature = "sdk")]
pub mod client_for;
#[cfg(feature = "sdk")]
pub mod direct;
// Without `sdk` the crate's own client, which uses these, is not built.
#[cfg_attr(not(feature = "sdk"), allow(dead_code))]
pub mod queue;
#[cfg(feature = "sdk")]
pub mod receive;
#[cfg(feature = "sdk")]
pub mod sdk;
pub mod transport;

#[cfg(feature = "sdk")]
use std::sync::Arc;

#[cfg(feature = "sdk")]
use self::direct::DirectClient;
#[cfg(feature = "sdk")]
use self::queue::{QueueInfo, QueueTarget};
#[cfg(feature = "sdk")]
use self::transport::{BatchItem, BoxFuture, CallError, EntryResult, Transport};
#[cfg(feature = "sdk")]
use crate::call::client_for::SqsClientFor;
#[cfg(feature = "sdk")]
use crate::send::outcome::Failure;
#[cfg(feature = "sdk")]
use crate::setup::error::SetupError;

/// Which client makes the SQS calls (`SQS_CLIENT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SqsClient {
    /// aws-sdk-sqs.
    Sdk,
    /// The crate's own client, [`direct`] (the default).
    #[default]
    Direct,
}

/// The transport to the queue `target` names, and what was read of it: the
/// one place the client is chosen. `choice` picks it; `sqs` is what the SQS
/// client is made from (its region and timeouts; an aws-sdk-sqs client is
/// built from it only when that client makes the calls), `sdk` the AWS
/// settings, which the direct client needs: without them (a client of the
/// caller's making, [`crate::setup::startup::connect_with`]) the calls go
/// through aws-sdk-sqs, as the log says. The start-up calls (`GetQueueUrl`,
/// `GetQueueAttributes`) go through the chosen client, so under
/// `SQS_CLIENT=direct` a cold start makes one connection and one
/// credentials fetch, and builds no SDK client.
#[cfg(feature = "sdk")]
pub async fn transport(
    sqs: SqsClientFor,
    sdk: Option<&aws_config::SdkConfig>,
    choice: SqsClient,
    target: &QueueTarget,
) -> Result<(SqsTransport, QueueInfo), SetupError> {
    let client = match (choice, sdk) {
        (SqsClient::Sdk, _) => Client::Sdk(sqs.sdk_client()),
        (SqsClient::Direct, Some(sdk)) => {
            Client::Direct(Arc::new(DirectClient::for_client(sdk, &sqs)?))
        }
        (SqsClient::Direct, None) => {
            tracing::info!(
                "a client of the caller's making (connect_with) sends through aws-sdk-sqs: the direct client needs the SDK configuration the client was built from (connect, connect_sdk)"
            );
            Client::Sdk(sqs.sdk_client())
        }
    };
    let queue = match &client {
        Client::Sdk(sqs) => sdk::discover(sqs, target).await?,
        Client::Direct(direct) => direct::discover(direct, target).await?,
    };
    let transport = SqsTransport {
        client,
        queue_url: queue.url.clone(),
    };
    Ok((transport, queue))
}

/// The real transport: aws-sdk-sqs, or the direct client
/// ([`direct`], `SQS_CLIENT=direct`), against one queue URL.
#[cfg(feature = "sdk")]
#[derive(Debug, Clone)]
pub struct SqsTransport {
    client: Client,
    queue_url: String,
}

#[cfg(feature = "sdk")]
#[derive(Debug, Clone)]
enum Client {
    Sdk(aws_sdk_sqs::Client),
    Direct(Arc<DirectClient>),
}

#[cfg(feature = "sdk")]
impl SqsTransport {
    /// A transport for this client and queue. The forwarder retries by
    /// itself, so the client should have the SDK's retries disabled (see
    /// [`crate::setup::client::sqs_client`]).
    pub fn new(client: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        SqsTransport {
            client: Client::Sdk(client),
            queue_url: queue_url.into(),
        }
    }

    /// A transport that makes its calls with the direct client
    /// ([`direct`]) instead of aws-sdk-sqs.
    pub fn direct(client: DirectClient, queue_url: impl Into<String>) -> Self {
        SqsTransport {
            client: Client::Direct(Arc::new(client)),
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

#[cfg(feature = "sdk")]
impl Transport for SqsTransport {
    fn send_batch<'a>(
        &'a self,
        items: &'a [BatchItem],
    ) -> BoxFuture<'a, Result<Vec<(String, EntryResult)>, CallError>> {
        match &self.client {
            Client::Sdk(sqs) => Box::pin(sdk::send_batch(sqs, &self.queue_url, items)),
            Client::Direct(direct) => Box::pin(direct.send_batch(&self.queue_url, items)),
        }
    }

    fn probe(&self) -> BoxFuture<'_, Result<(), Failure>> {
        match &self.client {
            Client::Sdk(sqs) => Box::pin(sdk::probe(sqs, &self.queue_url)),
            Client::Direct(direct) => Box::pin(direct.probe(&self.queue_url)),
        }
    }
}
