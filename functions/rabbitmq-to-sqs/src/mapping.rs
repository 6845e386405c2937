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
//! * when a target is FIFO, the group id comes from `GROUP_ID_FROM` (falling
//!   back to `MESSAGE_GROUP_ID`, else the queue name) and the deduplication
//!   id from `DEDUPLICATION_ID_FROM`; in exactly-once mode it is the
//!   correlation id, and a message without one is refused here. Ids SQS
//!   would refuse are hashed ([`crate::fifo_id`]).
//!
//! With routing rules (`ROUTES`, [`crate::routing`]) the message is routed
//! and shaped before its attributes are fitted ([`Mapper::route`]): the
//! properties and headers go around the rules' attributes, into the room
//! of the target the message is bound for. A message the rules send
//! nowhere is not mapped at all.

mod incoming;

use sqs_forwarder::route::{Plan, Router};
use sqs_forwarder::{Body, Failure, Message, Routed, Transport};

use crate::amqp::TextField;
use crate::fifo_id::{sqs_id, sqs_id_of_octets};
use crate::fold::{Room, fit_beside, report};
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
    /// The default target's room.
    room: Room,
    /// The routing rules' extra targets' rooms, in target order (index
    /// `i` is target `i + 1`).
    target_rooms: Vec<Room>,
}

/// A message mapped but for its attributes, which are fitted once its
/// target and shape are known.
struct Bare<P> {
    message: Message<P>,
    /// Properties, then headers, in order.
    fields: Vec<(String, FieldValue)>,
    /// The queue it came from, for the logs.
    queue: String,
}

impl Mapper {
    /// A mapper for these rules; `fifo` (whether messages get FIFO ids: a
    /// FIFO target among the targets) and `default_group_id` come from the
    /// forwarders (the target queues and `MESSAGE_GROUP_ID`).
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
            target_rooms: Vec::new(),
        }
    }

    /// Fit attributes into the room this forwarder leaves (its body
    /// encoding, oversize policy and message limit; see [`crate::fold`]).
    /// Without it: the defaults (`BODY_ENCODING=auto`, no offload, 1 MiB).
    pub fn with_room(mut self, room: Room) -> Self {
        self.room = room;
        self
    }

    /// The rooms of the routing rules' extra targets, in their order
    /// ([`Router::targets`] less the default): a message bound for one is
    /// fitted into its room.
    pub fn with_target_rooms(mut self, rooms: Vec<Room>) -> Self {
        self.target_rooms = rooms;
        self
    }

    /// Whether messages get FIFO group and deduplication ids (a FIFO
    /// target among the targets).
    pub fn fifo(&self) -> bool {
        self.fifo
    }

    /// The room of target `target` (0: the default).
    fn room(&self, target: usize) -> &Room {
        target
            .checked_sub(1)
            .and_then(|i| self.target_rooms.get(i))
            .unwrap_or(&self.room)
    }

    /// The SQS message for `m`, bound for the default target, or why it
    /// must not be sent.
    pub fn message<P>(&self, m: Incoming, position: P) -> Result<Message<P>, (P, Failure)> {
        let Bare {
            mut message,
            fields,
            queue,
        } = self.bare(m, position)?;
        self.fit(&mut message, fields, 0, &queue);
        Ok(message)
    }

    /// `m` routed by `plan` (the routing rules' plan for it, `None` without
    /// rules): its message for the target the plan names, shaped, with its
    /// properties and headers fitted around the rules' attributes; or its
    /// outcome when the rules send it nowhere (filtered out, unmatched and
    /// dropped, or a shape fault), without mapping it. `Err` as
    /// [`Mapper::message`]'s.
    pub fn route<P, T: Transport>(
        &self,
        router: &Router<T>,
        plan: Option<Plan>,
        m: Incoming,
        position: P,
    ) -> Result<Routed<P>, (P, Failure)> {
        if let Some(plan @ (Plan::Skip(_) | Plan::Fault(_))) = plan {
            // Sent nowhere: its attributes and ids do not matter. The empty
            // body allocates nothing; the router settles it, counted.
            return Ok(router.route(Some(plan), Message::new(Body::Bytes(Vec::new()), position)));
        }
        let Bare {
            message,
            fields,
            queue,
        } = self.bare(m, position)?;
        Ok(match router.route(plan, message) {
            Routed::To(target, mut message) => {
                self.fit(&mut message, fields, target, &queue);
                Routed::To(target, message)
            }
            settled => settled,
        })
    }

    /// Fit `fields` onto `message` (bound for `target`, its body and the
    /// rules' attributes final) and say what was folded or left out.
    fn fit<P>(
        &self,
        message: &mut Message<P>,
        fields: Vec<(String, FieldValue)>,
        target: usize,
        queue: &str,
    ) {
        let body: &[u8] = match &message.body {
            Body::Text(s) => s.as_bytes(),
            Body::Bytes(b) => b,
        };
        let fitted = fit_beside(fields, body, self.room(target), &message.attributes);
        report(&fitted, queue);
        message.attributes.extend(fitted.attributes);
    }

    /// The message for `m` without attributes, and the fields to fit onto
    /// it; or why it must not be sent.
    fn bare<P>(&self, m: Incoming, position: P) -> Result<Bare<P>, (P, Failure)> {
        let mut dedup = None;
        let mut group = None;
        if self.fifo {
            let props = &m.properties;
            // An id from a value that is not UTF-8 is hashed from its
            // octets, so that values reading alike keep apart.
            let id = |v: &Option<String>, f: TextField| match m.raw(f) {
                Some(octets) => Some(sqs_id_of_octets(octets)),
                None => v.clone(),
            };
            let message_id = || id(&props.message_id, TextField::MessageId);
            let correlation_id = || id(&props.correlation_id, TextField::CorrelationId);
            dedup = match self.rules.dedup {
                DedupFrom::Auto => message_id().or_else(correlation_id),
                DedupFrom::MessageId => message_id(),
                DedupFrom::CorrelationId => correlation_id(),
                DedupFrom::None => None,
            };
            let from_source = match &self.rules.group {
                GroupFrom::RoutingKey => id(&m.routing_key, TextField::RoutingKey),
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

        let mut fields = Vec::new();
        for p in &self.rules.properties {
            if let Some(v) = property(&m, *p) {
                fields.push((p.attribute_name(), v));
            }
        }
        let Incoming {
            body,
            headers,
            queue,
            ..
        } = m;
        // The headers move into the fields; the body into the message.
        fields.extend(
            headers
                .into_iter()
                .filter(|(name, _)| self.rules.headers.includes(name)),
        );
        let mut message = Message::new(body, position);
        // Ids SQS would refuse (over 128 characters, not printable ASCII)
        // are hashed: the message still goes, to a stable group.
        message.group_id = group.map(|g| sqs_id(&g).into_owned());
        message.deduplication_id = dedup.map(|d| sqs_id(&d).into_owned());
        Ok(Bare {
            message,
            fields,
            queue,
        })
    }
}

/// The value of property `p` of `m`: its octets as they came when they
/// are not UTF-8 (a `Binary` attribute), else its text.
fn property(m: &Incoming, p: Property) -> Option<FieldValue> {
    if let Some(field) = text_field(p)
        && let Some(octets) = m.raw(field)
    {
        return Some(FieldValue::Bytes(octets.to_vec()));
    }
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

/// The short string property `p` is, if it is one.
fn text_field(p: Property) -> Option<TextField> {
    Some(match p {
        Property::ContentType => TextField::ContentType,
        Property::ContentEncoding => TextField::ContentEncoding,
        Property::CorrelationId => TextField::CorrelationId,
        Property::MessageId => TextField::MessageId,
        Property::ReplyTo => TextField::ReplyTo,
        Property::Expiration => TextField::Expiration,
        Property::Type => TextField::Type,
        Property::UserId => TextField::UserId,
        Property::AppId => TextField::AppId,
        Property::ClusterId => TextField::ClusterId,
        Property::RoutingKey => TextField::RoutingKey,
        Property::Exchange => TextField::Exchange,
        Property::Timestamp
        | Property::Priority
        | Property::DeliveryMode
        | Property::Redelivered => {
            return None;
        }
    })
}

#[cfg(test)]
mod tests;
