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

use lapin::types::{AMQPValue, FieldTable};
use serde_json::{Number, Value};
use sqs_forwarder::encode::is_sqs_text;
use sqs_forwarder::{Attribute, Failure, Message};

use crate::fifo_id::sqs_id;
use crate::fold::{Room, bytes_json, fit, report};
use crate::settings::{DedupFrom, DeliveryMode, GroupFrom, MappingRules, Property};

/// A header or property value, whatever the source.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue {
    /// Text.
    Text(String),
    /// Bytes (AMQP long strings and byte arrays).
    Bytes(Vec<u8>),
    /// A number, as text.
    Number(String),
    /// A boolean.
    Bool(bool),
    /// A table or an array, as JSON text.
    Json(String),
    /// No value.
    Void,
}

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
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

fn short(s: &Option<lapin::types::ShortString>) -> Option<String> {
    s.as_ref().and_then(|v| non_empty(v.as_str()))
}

impl Incoming {
    /// A delivery polled from `queue`.
    pub fn from_delivery(d: &lapin::message::Delivery, queue: &str) -> Self {
        let p = &d.properties;
        Incoming {
            body: d.data.clone(),
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
            routing_key: non_empty(d.routing_key.as_str()),
            exchange: non_empty(d.exchange.as_str()),
            queue: queue.to_owned(),
            redelivered: d.redelivered,
        }
    }
}

fn table_fields(t: &FieldTable) -> Vec<(String, FieldValue)> {
    t.into_iter()
        .map(|(k, v)| (k.as_str().to_owned(), amqp_value(v)))
        .collect()
}

/// An AMQP field value as a [`FieldValue`].
pub fn amqp_value(v: &AMQPValue) -> FieldValue {
    match v {
        AMQPValue::Boolean(b) => FieldValue::Bool(*b),
        AMQPValue::ShortShortInt(n) => FieldValue::Number(n.to_string()),
        AMQPValue::ShortShortUInt(n) => FieldValue::Number(n.to_string()),
        AMQPValue::ShortInt(n) => FieldValue::Number(n.to_string()),
        AMQPValue::ShortUInt(n) => FieldValue::Number(n.to_string()),
        AMQPValue::LongInt(n) => FieldValue::Number(n.to_string()),
        AMQPValue::LongUInt(n) => FieldValue::Number(n.to_string()),
        AMQPValue::LongLongInt(n) => FieldValue::Number(n.to_string()),
        AMQPValue::Timestamp(n) => FieldValue::Number(n.to_string()),
        AMQPValue::Float(f) => float(f64::from(*f)),
        AMQPValue::Double(f) => float(*f),
        AMQPValue::DecimalValue(d) => FieldValue::Number(decimal(d.value, d.scale)),
        AMQPValue::ShortString(s) => FieldValue::Text(s.as_str().to_owned()),
        AMQPValue::LongString(s) => FieldValue::Bytes(s.as_bytes().to_vec()),
        AMQPValue::ByteArray(b) => FieldValue::Bytes(b.as_slice().to_vec()),
        AMQPValue::FieldArray(_) | AMQPValue::FieldTable(_) => {
            let mut cut = false;
            let json = amqp_json(v, 0, &mut cut).to_string();
            warn_cut(cut);
            FieldValue::Json(json)
        }
        AMQPValue::Void => FieldValue::Void,
    }
}

fn float(f: f64) -> FieldValue {
    if f.is_finite() {
        FieldValue::Number(f.to_string())
    } else {
        FieldValue::Text(f.to_string())
    }
}

fn decimal(value: u32, scale: u8) -> String {
    let digits = value.to_string();
    let scale = scale as usize;
    if scale == 0 {
        return digits;
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{int}.{frac}")
}

/// How deep tables and arrays nest in a header's JSON. Deeper values are
/// replaced by [`TOO_DEEP`]: no real header nests this far (`x-death` is an
/// array of tables of arrays, three levels), and the conversion never
/// recurses further, whatever a publisher sends.
pub const MAX_DEPTH: usize = 16;

/// What stands in for a table or array nested deeper than [`MAX_DEPTH`].
pub const TOO_DEEP: &str = "(nested deeper than 16 levels: left out)";

/// An AMQP value as JSON: text stays text, bytes that are not UTF-8 become
/// `{"base64": "..."}`; tables and arrays deeper than [`MAX_DEPTH`] become
/// [`TOO_DEEP`] (and `cut` is set).
fn amqp_json(v: &AMQPValue, depth: usize, cut: &mut bool) -> Value {
    match v {
        AMQPValue::Boolean(b) => Value::Bool(*b),
        AMQPValue::ShortShortInt(n) => Value::from(*n),
        AMQPValue::ShortShortUInt(n) => Value::from(*n),
        AMQPValue::ShortInt(n) => Value::from(*n),
        AMQPValue::ShortUInt(n) => Value::from(*n),
        AMQPValue::LongInt(n) => Value::from(*n),
        AMQPValue::LongUInt(n) => Value::from(*n),
        AMQPValue::LongLongInt(n) => Value::from(*n),
        AMQPValue::Timestamp(n) => Value::from(*n),
        AMQPValue::Float(f) => Number::from_f64(f64::from(*f)).map_or(Value::Null, Value::Number),
        AMQPValue::Double(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        AMQPValue::DecimalValue(d) => Value::String(decimal(d.value, d.scale)),
        AMQPValue::ShortString(s) => Value::String(s.as_str().to_owned()),
        AMQPValue::LongString(s) => bytes_json(s.as_bytes()),
        AMQPValue::ByteArray(b) => bytes_json(b.as_slice()),
        AMQPValue::FieldArray(_) | AMQPValue::FieldTable(_) if depth >= MAX_DEPTH => {
            *cut = true;
            Value::String(TOO_DEEP.to_owned())
        }
        AMQPValue::FieldArray(a) => Value::Array(
            a.as_slice()
                .iter()
                .map(|v| amqp_json(v, depth + 1, cut))
                .collect(),
        ),
        AMQPValue::FieldTable(t) => Value::Object(
            t.into_iter()
                .map(|(k, v)| (k.as_str().to_owned(), amqp_json(v, depth + 1, cut)))
                .collect(),
        ),
        AMQPValue::Void => Value::Null,
    }
}

/// A JSON value with tables and arrays deeper than [`MAX_DEPTH`] replaced
/// by [`TOO_DEEP`] (and `cut` set).
fn capped(v: &Value, depth: usize, cut: &mut bool) -> Value {
    match v {
        Value::Array(_) | Value::Object(_) if depth >= MAX_DEPTH => {
            *cut = true;
            Value::String(TOO_DEEP.to_owned())
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| capped(v, depth + 1, cut)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), capped(v, depth + 1, cut)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn warn_cut(cut: bool) {
    if cut {
        tracing::warn!(
            max_depth = MAX_DEPTH,
            "a header nests tables or arrays deeper than {MAX_DEPTH} levels; the deeper part is replaced by {TOO_DEEP:?}"
        );
    }
}

/// A header value of an `aws:rmq` event as a [`FieldValue`]. Amazon MQ
/// writes string headers as `{"bytes": [...]}`.
pub fn json_value(v: &Value) -> FieldValue {
    match v {
        Value::Null => FieldValue::Void,
        Value::Bool(b) => FieldValue::Bool(*b),
        Value::Number(n) => FieldValue::Number(n.to_string()),
        Value::String(s) => FieldValue::Text(s.clone()),
        Value::Object(m) if m.len() == 1 && m.get("bytes").is_some_and(Value::is_array) => {
            let bytes: Option<Vec<u8>> = m
                .get("bytes")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|b| b.as_u64().and_then(|n| u8::try_from(n).ok()))
                        .collect()
                })
                .unwrap_or_default();
            match bytes {
                Some(b) => FieldValue::Bytes(b),
                None => {
                    let mut cut = false;
                    let json = capped(v, 0, &mut cut).to_string();
                    warn_cut(cut);
                    FieldValue::Json(json)
                }
            }
        }
        Value::Object(_) | Value::Array(_) => {
            let mut cut = false;
            let json = capped(v, 0, &mut cut).to_string();
            warn_cut(cut);
            FieldValue::Json(json)
        }
    }
}

/// An attribute for this value, or `None` when SQS has no form for it
/// (empty or void).
pub(crate) fn attribute(name: &str, value: &FieldValue) -> Option<Attribute> {
    let name = name.to_owned();
    let text_or_binary = |s: &str| {
        if s.is_empty() {
            None
        } else if is_sqs_text(s) {
            Some(Attribute::string(name.clone(), s))
        } else {
            Some(Attribute::binary(name.clone(), s.as_bytes().to_vec()))
        }
    };
    match value {
        FieldValue::Text(s) | FieldValue::Json(s) => text_or_binary(s),
        FieldValue::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => text_or_binary(s),
            Err(_) => Some(Attribute::binary(name.clone(), b.clone())),
        },
        FieldValue::Number(n) => Some(Attribute::number(name, n)),
        FieldValue::Bool(b) => Some(Attribute::string(name, b.to_string())),
        FieldValue::Void => None,
    }
}

fn header_text(value: &FieldValue) -> Option<String> {
    match value {
        FieldValue::Text(s) | FieldValue::Number(s) | FieldValue::Json(s) => non_empty(s),
        FieldValue::Bytes(b) => std::str::from_utf8(b).ok().and_then(non_empty),
        FieldValue::Bool(b) => Some(b.to_string()),
        FieldValue::Void => None,
    }
}

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
mod tests {
    use std::collections::BTreeMap;

    use lapin::types::{ByteArray, DecimalValue, FieldArray, LongString, ShortString};
    use sqs_forwarder::AttributeValue;

    use super::*;
    use crate::settings::HeaderSelection;

    fn rules() -> MappingRules {
        MappingRules {
            dedup: DedupFrom::Auto,
            group: GroupFrom::RoutingKey,
            properties: vec![Property::ContentType, Property::RoutingKey],
            headers: HeaderSelection::All,
        }
    }

    fn incoming() -> Incoming {
        Incoming {
            body: b"{\"order\":1}".to_vec(),
            properties: Properties {
                content_type: Some("application/json".into()),
                message_id: Some("m-1".into()),
                correlation_id: Some("c-1".into()),
                ..Properties::default()
            },
            headers: vec![
                ("tenant".into(), FieldValue::Bytes(b"acme".to_vec())),
                ("attempt".into(), FieldValue::Number("3".into())),
                ("urgent".into(), FieldValue::Bool(true)),
                ("empty".into(), FieldValue::Text(String::new())),
                ("nothing".into(), FieldValue::Void),
                ("raw".into(), FieldValue::Bytes(vec![0xff, 0x00])),
            ],
            routing_key: Some("orders.eu".into()),
            exchange: Some("orders".into()),
            queue: "orders-q".into(),
            redelivered: false,
        }
    }

    fn attr<'a>(m: &'a Message<u8>, name: &str) -> Option<&'a Attribute> {
        m.attributes.iter().find(|a| a.name == name)
    }

    #[test]
    fn properties_and_headers_become_attributes() {
        let mapper = Mapper::new(rules(), DeliveryMode::AtLeastOnce, false, None);
        let m = mapper.message(incoming(), 7u8).expect("mapped");
        assert_eq!(m.position, 7);
        assert_eq!(
            m.body,
            sqs_forwarder::Body::Bytes(b"{\"order\":1}".to_vec())
        );
        let names: Vec<&str> = m.attributes.iter().map(|a| a.name.as_ref()).collect();
        assert_eq!(
            names,
            vec![
                "amqp.content-type",
                "amqp.routing-key",
                "tenant",
                "attempt",
                "urgent",
                "raw"
            ]
        );
        assert_eq!(
            attr(&m, "amqp.content-type"),
            Some(&Attribute::string("amqp.content-type", "application/json"))
        );
        assert_eq!(
            attr(&m, "tenant"),
            Some(&Attribute::string("tenant", "acme"))
        );
        assert_eq!(
            attr(&m, "attempt"),
            Some(&Attribute::number("attempt", "3"))
        );
        assert_eq!(
            attr(&m, "urgent"),
            Some(&Attribute::string("urgent", "true"))
        );
        assert_eq!(
            attr(&m, "raw").map(|a| &a.value),
            Some(&AttributeValue::Binary(vec![0xff, 0x00]))
        );
        // Standard queue: no FIFO ids.
        assert_eq!(m.group_id, None);
        assert_eq!(m.deduplication_id, None);
    }

    #[test]
    fn header_selection_limits_the_attributes() {
        let mut r = rules();
        r.properties = vec![
            Property::MessageId,
            Property::Redelivered,
            Property::Priority,
        ];
        r.headers = HeaderSelection::Only(vec!["attempt".into(), "absent".into()]);
        let mut inc = incoming();
        inc.properties.priority = Some(4);
        let m = Mapper::new(r, DeliveryMode::AtLeastOnce, false, None)
            .message(inc, 0u8)
            .expect("mapped");
        assert_eq!(
            m.attributes,
            vec![
                Attribute::string("amqp.message-id", "m-1"),
                Attribute::string("amqp.redelivered", "false"),
                Attribute::number("amqp.priority", "4"),
                Attribute::number("attempt", "3"),
            ]
        );
    }

    #[test]
    fn fifo_ids_follow_the_rules() {
        let fifo = |rules: MappingRules, default: Option<&str>, inc: Incoming| {
            Mapper::new(
                rules,
                DeliveryMode::AtLeastOnce,
                true,
                default.map(str::to_owned),
            )
            .message(inc, 0u8)
            .expect("mapped")
        };
        let m = fifo(rules(), None, incoming());
        assert_eq!(m.group_id.as_deref(), Some("orders.eu"));
        assert_eq!(m.deduplication_id.as_deref(), Some("m-1"));

        let mut no_ids = incoming();
        no_ids.properties.message_id = None;
        let m = fifo(rules(), None, no_ids.clone());
        assert_eq!(
            m.deduplication_id.as_deref(),
            Some("c-1"),
            "auto falls back to the correlation id"
        );
        no_ids.properties.correlation_id = None;
        no_ids.routing_key = None;
        let m = fifo(rules(), None, no_ids.clone());
        assert_eq!(m.deduplication_id, None);
        assert_eq!(
            m.group_id.as_deref(),
            Some("orders-q"),
            "queue name as the last resort"
        );
        let m = fifo(rules(), Some("fixed"), no_ids);
        assert_eq!(
            m.group_id.as_deref(),
            Some("fixed"),
            "MESSAGE_GROUP_ID before the queue name"
        );

        let mut r = rules();
        r.group = GroupFrom::Header("tenant".into());
        r.dedup = DedupFrom::CorrelationId;
        let m = fifo(r.clone(), None, incoming());
        assert_eq!(m.group_id.as_deref(), Some("acme"));
        assert_eq!(m.deduplication_id.as_deref(), Some("c-1"));
        r.group = GroupFrom::Queue;
        r.dedup = DedupFrom::None;
        let m = fifo(r, None, incoming());
        assert_eq!(m.group_id.as_deref(), Some("orders-q"));
        assert_eq!(m.deduplication_id, None);
    }

    #[test]
    fn exactly_once_refuses_messages_without_correlation_id() {
        let mut r = rules();
        r.dedup = DedupFrom::CorrelationId;
        let mapper = Mapper::new(r, DeliveryMode::ExactlyOnce, true, None);
        let m = mapper.message(incoming(), 1u8).expect("has one");
        assert_eq!(m.deduplication_id.as_deref(), Some("c-1"));
        let mut inc = incoming();
        inc.properties.correlation_id = None;
        let (pos, failure) = mapper.message(inc, 2u8).expect_err("has none");
        assert_eq!(pos, 2);
        assert_eq!(failure.code, MISSING_CORRELATION_ID);
        assert!(!failure.retryable);
    }

    #[test]
    fn amqp_values_convert() {
        assert_eq!(
            amqp_value(&AMQPValue::LongInt(-5)),
            FieldValue::Number("-5".into())
        );
        assert_eq!(
            amqp_value(&AMQPValue::DecimalValue(DecimalValue {
                scale: 2,
                value: 5
            })),
            FieldValue::Number("0.05".into())
        );
        assert_eq!(
            amqp_value(&AMQPValue::DecimalValue(DecimalValue {
                scale: 1,
                value: 1234
            })),
            FieldValue::Number("123.4".into())
        );
        assert_eq!(
            amqp_value(&AMQPValue::Double(f64::NAN)),
            FieldValue::Text("NaN".into())
        );
        assert_eq!(
            amqp_value(&AMQPValue::LongString(LongString::from("héllo"))),
            FieldValue::Bytes("héllo".as_bytes().to_vec())
        );
        let mut inner = BTreeMap::new();
        inner.insert(ShortString::from("count"), AMQPValue::LongLongInt(2));
        inner.insert(
            ShortString::from("raw"),
            AMQPValue::ByteArray(ByteArray::from(vec![0xffu8])),
        );
        let mut arr = FieldArray::default();
        arr.push(AMQPValue::FieldTable(FieldTable::from(inner)));
        arr.push(AMQPValue::Void);
        assert_eq!(
            amqp_value(&AMQPValue::FieldArray(arr)),
            FieldValue::Json(r#"[{"count":2,"raw":{"base64":"/w=="}},null]"#.into())
        );
    }

    #[test]
    fn fifo_ids_sqs_would_refuse_are_hashed_and_the_message_goes() {
        use sqs_forwarder::encode::{EncodeRules, prepare};
        let rules_fifo = EncodeRules {
            fifo: true,
            content_based_deduplication: Some(false),
            ..EncodeRules::default()
        };
        let mapper = Mapper::new(rules(), DeliveryMode::AtLeastOnce, true, None);
        for (routing_key, message_id) in [
            ("k".repeat(200), "m-1".to_owned()),
            ("commandes.été".to_owned(), "id with spaces".to_owned()),
            ("tab\tkey".to_owned(), "i".repeat(129)),
        ] {
            let mut inc = incoming();
            inc.routing_key = Some(routing_key.clone());
            inc.properties.message_id = Some(message_id.clone());
            let m = mapper.message(inc.clone(), 0u8).expect("mapped");
            let group = m.group_id.clone().expect("a group");
            let dedup = m.deduplication_id.clone().expect("a dedup id");
            assert!(crate::fifo_id::is_valid(&group), "{group}");
            assert!(crate::fifo_id::is_valid(&dedup), "{dedup}");
            // Stable: the same message (redelivered) gets the same ids.
            let again = mapper.message(inc, 0u8).expect("mapped");
            assert_eq!(again.group_id.as_deref(), Some(group.as_str()));
            assert_eq!(again.deduplication_id.as_deref(), Some(dedup.as_str()));
            let (_, entry) = prepare(m, &rules_fifo);
            entry.expect("SQS takes it (the old mapping failed it: InvalidGroupId or InvalidDeduplicationId)");
        }
        // Valid ids stay readable.
        let m = mapper.message(incoming(), 0u8).expect("mapped");
        assert_eq!(m.group_id.as_deref(), Some("orders.eu"));
        assert_eq!(m.deduplication_id.as_deref(), Some("m-1"));
        // The queue-name fallback too (queue names run to 255 bytes).
        let mut inc = incoming();
        inc.routing_key = None;
        inc.queue = "q".repeat(255);
        let m = mapper.message(inc, 0u8).expect("mapped");
        assert!(m.group_id.as_deref().is_some_and(crate::fifo_id::is_valid));
    }

    #[test]
    fn a_real_content_fault_is_still_refused() {
        use sqs_forwarder::BodyEncoding;
        use sqs_forwarder::encode::{EncodeRules, prepare};
        let never = EncodeRules {
            body_encoding: BodyEncoding::Never,
            ..EncodeRules::default()
        };
        let mapper = Mapper::new(rules(), DeliveryMode::AtLeastOnce, false, None).with_room(Room {
            body_encoding: BodyEncoding::Never,
            ..Room::default()
        });
        let mut inc = incoming();
        inc.body = vec![0xff, 0x00];
        let m = mapper.message(inc, 0u8).expect("mapped");
        let (_, entry) = prepare(m, &never);
        assert_eq!(
            entry
                .expect_err("a binary body under BODY_ENCODING=never")
                .code,
            "InvalidMessageContents"
        );
    }

    /// A table nested `depth` levels deep, built without recursion.
    fn nested(depth: usize) -> AMQPValue {
        let mut v = AMQPValue::LongInt(1);
        for _ in 0..depth {
            let mut t = BTreeMap::new();
            t.insert(ShortString::from("a"), v);
            v = AMQPValue::FieldTable(FieldTable::from(t));
        }
        v
    }

    fn json_depth(v: &Value) -> usize {
        // Iterative: the test must not recurse either.
        let mut deepest = 0;
        let mut stack = vec![(v, 0usize)];
        while let Some((v, d)) = stack.pop() {
            deepest = deepest.max(d);
            match v {
                Value::Array(a) => stack.extend(a.iter().map(|x| (x, d + 1))),
                Value::Object(m) => stack.extend(m.values().map(|x| (x, d + 1))),
                _ => {}
            }
        }
        deepest
    }

    #[test]
    fn deeply_nested_headers_are_cut_at_the_cap() {
        // Within the cap: all of it.
        let FieldValue::Json(shallow) = amqp_value(&nested(MAX_DEPTH)) else {
            panic!("JSON expected");
        };
        let shallow: Value = serde_json::from_str(&shallow).expect("JSON");
        assert_eq!(json_depth(&shallow), MAX_DEPTH);
        assert!(!shallow.to_string().contains(TOO_DEEP));
        // Deeper: cut at the cap, the rest replaced by the marker.
        let deep = nested(2_000);
        let FieldValue::Json(text) = amqp_value(&deep) else {
            panic!("JSON expected");
        };
        assert!(text.contains(TOO_DEEP), "{text}");
        let value: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(json_depth(&value), MAX_DEPTH);
        // The same for aws:rmq headers (JSON).
        let mut j = serde_json::json!(1);
        for _ in 0..100 {
            j = serde_json::json!([j]);
        }
        let FieldValue::Json(text) = json_value(&j) else {
            panic!("JSON expected");
        };
        let value: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(json_depth(&value), MAX_DEPTH);
    }

    #[test]
    fn amazon_mq_header_values_convert() {
        let v: Value = serde_json::json!({"bytes": [118, 97, 108]});
        assert_eq!(json_value(&v), FieldValue::Bytes(b"val".to_vec()));
        assert_eq!(
            json_value(&serde_json::json!(10)),
            FieldValue::Number("10".into())
        );
        assert_eq!(
            json_value(&serde_json::json!("x")),
            FieldValue::Text("x".into())
        );
        assert_eq!(json_value(&serde_json::json!(null)), FieldValue::Void);
        assert_eq!(
            json_value(&serde_json::json!({"bytes": [300]})),
            FieldValue::Json(r#"{"bytes":[300]}"#.into())
        );
        assert_eq!(
            json_value(&serde_json::json!([1, "a"])),
            FieldValue::Json(r#"[1,"a"]"#.into())
        );
    }
}
