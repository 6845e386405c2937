//! The message as it arrives, whatever the source: a delivery polled from
//! the broker becomes an [`Incoming`] here, an `aws:rmq` event message in
//! [`crate::amazon_mq`], so the mapping to SQS is written once.

use crate::amqp::{RawText, TextField};
use crate::values::{FieldValue, non_empty, table_fields};

/// The AMQP basic properties, whatever the source.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Properties {
    /// `content-type`.
    pub content_type: Option<String>,
    /// `content-encoding`.
    pub content_encoding: Option<String>,
    /// `correlation-id`.
    pub correlation_id: Option<String>,
    /// `message-id`.
    pub message_id: Option<String>,
    /// `reply-to`.
    pub reply_to: Option<String>,
    /// `expiration`.
    pub expiration: Option<String>,
    /// `timestamp`: seconds since the epoch (polled) or the text Amazon MQ
    /// writes (`aws:rmq`).
    pub timestamp: Option<FieldValue>,
    /// `type`.
    pub kind: Option<String>,
    /// `user-id`.
    pub user_id: Option<String>,
    /// `app-id`.
    pub app_id: Option<String>,
    /// `cluster-id`.
    pub cluster_id: Option<String>,
    /// `priority`.
    pub priority: Option<u8>,
    /// `delivery-mode`.
    pub delivery_mode: Option<u8>,
}

/// One AMQP message, whatever the source.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Incoming {
    /// The payload.
    pub body: Vec<u8>,
    /// Basic properties.
    pub properties: Properties,
    /// Headers, in the order the source gave them.
    pub headers: Vec<(String, FieldValue)>,
    /// The routing key (none in `aws:rmq` events).
    pub routing_key: Option<String>,
    /// The exchange (none in `aws:rmq` events).
    pub exchange: Option<String>,
    /// The queue it came from.
    pub queue: String,
    /// Whether the broker delivered it before.
    pub redelivered: bool,
    /// Its short strings that are not UTF-8, and their octets (polled
    /// deliveries only): the text fields above read with `?` for each octet
    /// that is not part of UTF-8 text, and the mapping uses these octets
    /// where they must not change (attributes, FIFO ids).
    pub raw: Vec<RawText>,
}

fn short(s: &Option<amq_protocol::types::ShortString>) -> Option<String> {
    s.as_ref().and_then(|v| non_empty(v.as_str()))
}

impl Incoming {
    /// The octets of `field` when they are not UTF-8.
    pub fn raw(&self, field: TextField) -> Option<&[u8]> {
        self.raw
            .iter()
            .find(|r| r.field == field)
            .map(|r| r.bytes.as_slice())
    }

    /// A delivery polled from `queue`; its body moves into the message.
    pub fn from_delivery(d: crate::amqp::Delivery, queue: &str) -> Self {
        let p = &d.properties;
        Incoming {
            body: d.data,
            properties: Properties {
                content_type: short(p.content_type()),
                content_encoding: short(p.content_encoding()),
                correlation_id: short(p.correlation_id()),
                message_id: short(p.message_id()),
                reply_to: short(p.reply_to()),
                expiration: short(p.expiration()),
                timestamp: p.timestamp().map(|t| FieldValue::Number(t.to_string())),
                kind: short(p.kind()),
                user_id: short(p.user_id()),
                app_id: short(p.app_id()),
                cluster_id: short(p.cluster_id()),
                priority: *p.priority(),
                delivery_mode: *p.delivery_mode(),
            },
            headers: p.headers().as_ref().map(table_fields).unwrap_or_default(),
            routing_key: non_empty(&d.routing_key),
            exchange: non_empty(&d.exchange),
            queue: queue.to_owned(),
            redelivered: d.redelivered,
            raw: d.raw,
        }
    }
}
