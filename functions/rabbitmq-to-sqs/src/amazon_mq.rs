//! The Amazon MQ for RabbitMQ event source (`eventSource: aws:rmq`).
//!
//! Lambda's event source mapping reads the broker itself and hands the
//! function a batch: `rmqMessagesByQueue`, keyed `"queue::vhost"`, each
//! message with its `basicProperties`, `redelivered` flag and base64 `data`.
//! There is no partial batch response: the only answers are success (Lambda
//! acks the whole batch) and an error (Lambda hands the whole batch back to
//! the broker, which redelivers it). So any message that did not reach SQS
//! fails the invocation, and the messages of the batch that did reach SQS
//! are sent again on the retry: duplicates on a standard queue; on a FIFO
//! queue with deduplication ids (message or correlation ids) SQS drops them
//! within its 5-minute window.

use aws_lambda_events::event::rabbitmq::{RabbitMqEvent, RabbitMqMessage};
use base64::Engine as _;
use serde::Serialize;
use sqs_forwarder::route::Router;
use sqs_forwarder::{Failure, Outcome, Routed, Transport};
use tokio::time::Instant;

use crate::mapping::{FieldValue, Incoming, Mapper, Properties, json_value};
use crate::{HandlerError, routing};

/// A message's place in the event: its `queue::vhost` key and index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventPosition {
    /// The `queue::vhost` key.
    pub key: String,
    /// Index in that queue's list.
    pub index: usize,
}

/// What the function did with an `aws:rmq` batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BatchReport {
    /// Messages in the event.
    pub received: usize,
    /// Messages SQS accepted.
    pub sent: usize,
    /// Messages dropped by `OVERSIZE_POLICY=drop` or sent nowhere by the
    /// routing rules.
    pub dropped: usize,
}

/// The queue name of a `"queue::vhost"` key.
pub fn queue_of(key: &str) -> &str {
    key.rsplit_once("::").map_or(key, |(q, _)| q)
}

/// An event message as an [`Incoming`], or why it cannot be read.
pub fn incoming(queue: &str, m: &RabbitMqMessage) -> Result<Incoming, Failure> {
    let body = match &m.data {
        Some(d) => base64::engine::general_purpose::STANDARD
            .decode(d)
            .map_err(|e| {
                Failure::permanent(
                    "InvalidData",
                    format!("the message's data is not base64: {e}"),
                )
            })?,
        None => Vec::new(),
    };
    let p = &m.basic_properties;
    let text = |s: &Option<String>| s.clone().filter(|v| !v.is_empty());
    let mut headers: Vec<(String, FieldValue)> = p
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), json_value(v)))
        .collect();
    // The event's header map has no order; keep attribute order stable.
    headers.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Incoming {
        body,
        properties: Properties {
            content_type: text(&p.content_type),
            content_encoding: text(&p.content_encoding),
            correlation_id: text(&p.correlation_id),
            message_id: text(&p.message_id),
            reply_to: text(&p.reply_to),
            expiration: text(&p.expiration),
            timestamp: text(&p.timestamp).map(FieldValue::Text),
            kind: text(&p.type_),
            user_id: text(&p.user_id),
            app_id: text(&p.app_id),
            cluster_id: text(&p.cluster_id),
            priority: Some(p.priority),
            delivery_mode: Some(p.delivery_mode),
        },
        headers,
        routing_key: None,
        exchange: None,
        queue: queue.to_owned(),
        redelivered: m.redelivered,
        raw: Vec::new(),
    })
}

/// Forward an `aws:rmq` batch, mapped by `mapper`, through `router` (to
/// the targets its rules name). Any message that did not reach SQS makes
/// this an error, so that Lambda gives the batch back to the broker; a
/// message the rules send nowhere is done (counted in `dropped`), one they
/// cannot shape did not reach SQS.
pub async fn forward<T: Transport>(
    router: &Router<T>,
    mapper: &Mapper,
    event: RabbitMqEvent,
    send_deadline: Option<Instant>,
) -> Result<BatchReport, HandlerError> {
    let mut keys: Vec<&String> = event.messages_by_queue.keys().collect();
    keys.sort();
    let mut items: Vec<Routed<EventPosition>> = Vec::new();
    let mut refused: Vec<(EventPosition, Failure)> = Vec::new();
    for key in keys {
        let queue = queue_of(key);
        for (index, m) in event.messages_by_queue[key].iter().enumerate() {
            let position = EventPosition {
                key: key.clone(),
                index,
            };
            let routed = incoming(queue, m)
                .map_err(|f| (position.clone(), f))
                .and_then(|inc| {
                    let plan = routing::plan(router.routes(), &inc);
                    mapper.route(router, plan, inc, position.clone())
                });
            match routed {
                Ok(item) => items.push(item),
                Err((pos, f)) => refused.push((pos, f)),
            }
        }
    }
    let received = items.len() + refused.len();
    let mut failures: Vec<(EventPosition, Failure)> = refused;
    let tally = router
        .forward(items, send_deadline, |o| {
            if let Outcome::Failed(f) = o.outcome {
                failures.push((o.position, f));
            }
        })
        .await;
    let summary = tally.summary;
    for (pos, f) in &failures {
        tracing::error!(
            queue_key = %pos.key,
            index = pos.index,
            code = %f.code,
            retryable = f.retryable,
            "message not sent: {}",
            f.message
        );
    }
    if !failures.is_empty() {
        let mut codes: Vec<&str> = failures.iter().map(|(_, f)| f.code.as_str()).collect();
        codes.sort_unstable();
        codes.dedup();
        return Err(HandlerError::Unsent {
            failed: failures.len(),
            total: received,
            permanent: failures.iter().filter(|(_, f)| !f.retryable).count(),
            codes: codes.join(", "),
        });
    }
    Ok(BatchReport {
        received,
        sent: summary.sent,
        dropped: summary.dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_queue_and_vhost() {
        assert_eq!(queue_of("orders::/"), "orders");
        assert_eq!(queue_of("a::b::prod"), "a::b");
        assert_eq!(queue_of("plain"), "plain");
    }

    #[test]
    fn the_sample_event_reads() {
        let event: RabbitMqEvent =
            serde_json::from_str(include_str!("../../../events/rabbitmq-amazon-mq.json"))
                .expect("sample aws:rmq event");
        assert_eq!(event.event_source.as_deref(), Some("aws:rmq"));
        let (key, list) = event.messages_by_queue.iter().next().expect("one queue");
        assert_eq!(queue_of(key), "orders");
        let inc = incoming(queue_of(key), &list[0]).expect("readable");
        assert_eq!(inc.body, br#"{"order":1001,"total":"42.50"}"#.to_vec());
        assert_eq!(
            inc.properties.content_type.as_deref(),
            Some("application/json")
        );
        assert_eq!(inc.properties.correlation_id.as_deref(), Some("order-1001"));
        assert!(
            inc.headers
                .contains(&("tenant".to_owned(), FieldValue::Bytes(b"acme".to_vec())))
        );
        assert!(
            inc.headers
                .contains(&("attempt".to_owned(), FieldValue::Number("1".into())))
        );
    }

    #[test]
    fn data_that_is_not_base64_is_refused() {
        let m: RabbitMqMessage = serde_json::from_value(serde_json::json!({
            "basicProperties": {"deliveryMode": 2, "priority": 0, "bodySize": 3, "headers": null},
            "redelivered": false,
            "data": "not base64!"
        }))
        .expect("message");
        let e = incoming("q", &m).expect_err("bad data");
        assert_eq!(e.code, "InvalidData");
        assert!(!e.retryable);
    }
}
