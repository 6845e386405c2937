//! From an AMQP message to an SQS [`Message`].
//!
//! Both sources (a delivery polled with lapin, a message of an Amazon MQ
//! `aws:rmq` event) first become an [`Incoming`], so the mapping is written
//! once:
//!
//! * the body goes as is; the shared crate base64-encodes it (and marks it)
//!   when it is not text SQS accepts, per `BODY_ENCODING`;
//! * the properties listed in `PROPERTY_ATTRIBUTES` become attributes named
//!   `amqp.<property>` (`amqp.content-type`, `amqp.routing-key`, ...);
//! * the headers selected by `HEADER_ATTRIBUTES` become attributes of their
//!   own name: text as `String`, numbers as `Number`, booleans as `String`
//!   `true`/`false`, bytes that are not text as `Binary`, tables and arrays as
//!   `String` JSON (nested at most [`MAX_DEPTH`] levels); empty and void
//!   values have no SQS form and are left out; headers that cannot have an
//!   attribute of their own (too many, a name SQS refuses) are carried in
//!   one JSON attribute ([`crate::fold`]);
//! * on a FIFO target, the group id comes from `GROUP_ID_FROM` (falling back
//!   to `MESSAGE_GROUP_ID`, else the queue name) and the deduplication id
//!   from `DEDUPLICATION_ID_FROM`; in exactly-once mode it is the correlation
//!   id, and a message without one is refused here. Ids SQS would refuse
//!   are hashed ([`crate::fifo_id`]).

mod incoming;

use sqs_forwarder::{Failure, Message};

use crate::fifo_id::sqs_id;
use crate::fold::{Room, fit, report};
use crate::settings::{DedupFrom, DeliveryMode, GroupFrom, MappingRules, Property};
pub use crate::values::{FieldValue, MAX_DEPTH, TOO_DEEP, amqp_value, json_value};
use crate::values::{header_text, non_empty};
pub use incoming::{Incoming, Properties};

/// Failure code of a message refused before sending in exactly-once mode.
pub const MISSING_CORRELATION_ID: &str = "MissingCorrelationId";

/// Turns [`Incoming`] messages into SQS messages.
#[derive(Debug, Clone)]
pub struct Mapper {
    rules: MappingRules,
    mode: DeliveryMode,
    fifo: bool,
    default_group_id: Option<String>,
    room: Room,
}

impl Mapper {
    /// A mapper for these rules; `fifo` and `default_group_id` come from the
    /// forwarder (the target queue and `MESSAGE_GROUP_ID`).
    pub fn new(
        rules: MappingRules,
        mode: DeliveryMode,
        fifo: bool,
        default_group_id: Option<String>,
    ) -> Self {
        Mapper {
            rules,
            mode,
            fifo,
            default_group_id,
            room: Room::default(),
        }
    }

    /// Fit attributes into the room this forwarder leaves (its body
    /// encoding, oversize policy and message limit; see [`crate::fold`]).
    /// Without it: the defaults (`BODY_ENCODING=auto`, no offload, 1 MiB).
    pub fn with_room(mut self, room: Room) -> Self {
        self.room = room;
        self
    }

    /// Whether the target is a FIFO queue.
    pub fn fifo(&self) -> bool {
        self.fifo
    }

    /// The SQS message for `m`, or why it must not be sent.
    pub fn message<P>(&self, m: Incoming, position: P) -> Result<Message<P>, (P, Failure)> {
        let mut fields = Vec::new();
        for p in &self.rules.properties {
            if let Some(v) = property(&m, *p) {
                fields.push((p.attribute_name(), v));
            }
        }
        for (name, value) in &m.headers {
            if self.rules.headers.includes(name) {
                fields.push((name.clone(), value.clone()));
            }
        }
        let fitted = fit(fields, &m.body, &self.room);
        report(&fitted, &m.queue);
        let attributes = fitted.attributes;

        let mut dedup = None;
        let mut group = None;
        if self.fifo {
            let props = &m.properties;
            dedup = match self.rules.dedup {
                DedupFrom::Auto => props
                    .message_id
                    .clone()
                    .or_else(|| props.correlation_id.clone()),
                DedupFrom::MessageId => props.message_id.clone(),
                DedupFrom::CorrelationId => props.correlation_id.clone(),
                DedupFrom::None => None,
            };
            let from_source = match &self.rules.group {
                GroupFrom::RoutingKey => m.routing_key.clone(),
                GroupFrom::Header(h) => m
                    .headers
                    .iter()
                    .find(|(n, _)| n == h)
                    .and_then(|(_, v)| header_text(v)),
                GroupFrom::Queue => Some(m.queue.clone()),
                GroupFrom::None => None,
            };
            group = from_source
                .or_else(|| self.default_group_id.clone())
                .or_else(|| non_empty(&m.queue));
        }
        if self.mode == DeliveryMode::ExactlyOnce && m.properties.correlation_id.is_none() {
            return Err((
                position,
                Failure::permanent(
                    MISSING_CORRELATION_ID,
                    "DELIVERY_MODE=exactly-once needs a unique correlation id on every message (it becomes the SQS deduplication id); this message has none",
                ),
            ));
        }

        let mut message = Message::new(m.body, position);
        message.attributes = attributes;
        // Ids SQS would refuse (over 128 characters, not printable ASCII)
        // are hashed: the message still goes, to a stable group.
        message.group_id = group.map(|g| sqs_id(&g).into_owned());
        message.deduplication_id = dedup.map(|d| sqs_id(&d).into_owned());
        Ok(message)
    }
}

fn property(m: &Incoming, p: Property) -> Option<FieldValue> {
    let props = &m.properties;
    let text = |s: &Option<String>| s.clone().map(FieldValue::Text);
    match p {
        Property::ContentType => text(&props.content_type),
        Property::ContentEncoding => text(&props.content_encoding),
        Property::CorrelationId => text(&props.correlation_id),
        Property::MessageId => text(&props.message_id),
        Property::ReplyTo => text(&props.reply_to),
        Property::Expiration => text(&props.expiration),
        Property::Timestamp => props.timestamp.clone(),
        Property::Type => text(&props.kind),
        Property::UserId => text(&props.user_id),
        Property::AppId => text(&props.app_id),
        Property::ClusterId => text(&props.cluster_id),
        Property::Priority => props.priority.map(|n| FieldValue::Number(n.to_string())),
        Property::DeliveryMode => props
            .delivery_mode
            .map(|n| FieldValue::Number(n.to_string())),
        Property::RoutingKey => text(&m.routing_key),
        Property::Exchange => text(&m.exchange),
        Property::Redelivered => Some(FieldValue::Bool(m.redelivered)),
    }
}

#[cfg(test)]
mod tests;
