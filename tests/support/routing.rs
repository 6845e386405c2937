//! Helpers for the routing end-to-end tests (`tests/*_routing.rs`): the
//! configuration they run with, a function's router over real local queues
//! as its start connects it, the error a start with a bad target ends in,
//! and the group id a received message carries.

use std::collections::HashMap;

use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};
use sqs_forwarder::route::{Router, Routes, SourceKey};
use sqs_forwarder::setup::startup::connect_router;
use sqs_forwarder::{Config, GroupIds, SqsTransport};

/// The shared configuration of a routing test: the default queue `url`,
/// two attempts per message with millisecond backoff.
pub fn config(url: &str) -> Config {
    let vars: HashMap<&str, &str> = [
        ("QUEUE_URL", url),
        ("RETRY_MAX_ATTEMPTS", "2"),
        ("RETRY_BASE_DELAY_MS", "1"),
        ("RETRY_MAX_DELAY_MS", "5"),
    ]
    .into_iter()
    .collect();
    Config::from_lookup(|k| vars.get(k).map(|v| v.to_string())).expect("valid test configuration")
}

/// The rules `doc`, read with the function's source `keys`, and every
/// target connected as a start connects them (`connect_router`), over the
/// default queue `url`.
async fn connect(url: &str, keys: &[SourceKey], doc: &str) -> Result<Router<SqsTransport>, String> {
    let config = config(url);
    let routes = Routes::parse(doc, keys).expect("valid rules");
    let default = crate::connect(&config, GroupIds::FromSource).await;
    connect_router(
        &crate::sdk_config(),
        &config,
        default,
        Some(routes),
        GroupIds::FromSource,
    )
    .await
    .map_err(|e| e.to_string())
}

/// A function's router: [`connect`], every target reached.
pub async fn router(url: &str, keys: &[SourceKey], doc: &str) -> Router<SqsTransport> {
    connect(url, keys, doc)
        .await
        .expect("every target connects")
}

/// The error a start whose rules name an unreachable target ends in.
pub async fn start_error(url: &str, keys: &[SourceKey], doc: &str) -> String {
    match connect(url, keys, doc).await {
        Ok(_) => panic!("a missing target must fail the start"),
        Err(e) => e,
    }
}

/// A received message's group id.
pub fn group_of(m: &Message) -> Option<String> {
    m.attributes()
        .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId))
        .cloned()
}

/// The three target queues of a routing test, fresh: `<prefix>-default`
/// (standard: the function's own), `<prefix>-<fifo>.fifo` (FIFO, without
/// content-based deduplication) and `<prefix>-<fair>` (standard, for
/// fair-queue group ids); their URLs in that order.
pub async fn three_queues(prefix: &str, fifo: &str, fair: &str) -> (String, String, String) {
    use aws_sdk_sqs::types::QueueAttributeName;
    let sqs = crate::client();
    let default = crate::create_queue(&sqs, &format!("{prefix}-default"), &[]).await;
    let fifo = crate::create_queue(
        &sqs,
        &format!("{prefix}-{fifo}.fifo"),
        &[(QueueAttributeName::ContentBasedDeduplication, "false")],
    )
    .await;
    let fair = crate::create_queue(&sqs, &format!("{prefix}-{fair}"), &[]).await;
    (default, fifo, fair)
}

/// The three queues of the routing tests whose rules send orders to a FIFO
/// queue and the EU's records to a fair queue.
pub struct Queues {
    /// `<prefix>-default`: the function's own.
    pub default: String,
    /// `<prefix>-orders.fifo`.
    pub orders: String,
    /// `<prefix>-eu`, for fair-queue group ids.
    pub eu: String,
}

/// [`three_queues`] named `orders` and `eu`.
pub async fn orders_and_eu(prefix: &str) -> Queues {
    let (default, orders, eu) = three_queues(prefix, "orders", "eu").await;
    Queues {
        default,
        orders,
        eu,
    }
}
