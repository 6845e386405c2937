//! The message model: what an adapter hands to the forwarder.
//!
//! A [`Message`] is an SQS message before it is encoded: a body (text or
//! bytes), up to ten typed attributes, the FIFO parameters and a delay. It also
//! carries an opaque `position` of the caller's choosing (a Kinesis sequence
//! number, an AMQP delivery tag, an index into an HTTP body) that comes back
//! untouched with the message's [`Outcome`](crate::Outcome).

pub(crate) mod byte_scan;
pub mod encode;
pub mod fifo_id;
// Without `sdk` the crate's own client, which uses these, is not built.
#[cfg_attr(not(feature = "sdk"), allow(dead_code))]
pub(crate) mod json;
pub mod limits;

use std::borrow::Cow;

/// The body of a message before encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// Text. Sent as is when every character is one SQS accepts; otherwise
    /// handled by the [`BodyEncoding`](crate::BodyEncoding) policy.
    Text(String),
    /// Arbitrary bytes. Sent as is when they are UTF-8 text that SQS accepts;
    /// otherwise handled by the [`BodyEncoding`](crate::BodyEncoding) policy.
    Bytes(Vec<u8>),
}

impl Body {
    /// Length of the body as it stands, in bytes.
    pub fn len(&self) -> usize {
        match self {
            Body::Text(s) => s.len(),
            Body::Bytes(b) => b.len(),
        }
    }

    /// Whether the body is empty (SQS rejects empty bodies).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl From<String> for Body {
    fn from(s: String) -> Self {
        Body::Text(s)
    }
}

impl From<&str> for Body {
    fn from(s: &str) -> Self {
        Body::Text(s.to_owned())
    }
}

impl From<Vec<u8>> for Body {
    fn from(b: Vec<u8>) -> Self {
        Body::Bytes(b)
    }
}

/// The value of a message attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeValue {
    /// `String` (or `String.<custom>`): Unicode text in the SQS character set.
    String(String),
    /// `Number` (or `Number.<custom>`): a number written as text.
    Number(String),
    /// `Binary` (or `Binary.<custom>`): raw bytes.
    Binary(Vec<u8>),
}

/// A typed message attribute.
///
/// `data_type` is `String`, `Number` or `Binary`, optionally followed by a
/// custom suffix (`Number.float`); the constructors fill it in. Names and
/// data types are [`Cow<'static, str>`](Cow): the names a source gives
/// every message (`kinesis.partitionKey`) and the three base types cost no
/// allocation per message; names read at run time (AMQP headers) are owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    /// The attribute name (1..256 of `A-Za-z0-9_-.`).
    pub name: Cow<'static, str>,
    /// The data type as SQS sees it, e.g. `String` or `Number.int`.
    pub data_type: Cow<'static, str>,
    /// The value.
    pub value: AttributeValue,
}

impl Attribute {
    /// A `String` attribute.
    pub fn string(name: impl Into<Cow<'static, str>>, value: impl Into<String>) -> Self {
        Attribute {
            name: name.into(),
            data_type: Cow::Borrowed("String"),
            value: AttributeValue::String(value.into()),
        }
    }

    /// A `Number` attribute; the value is the number's text (`"42"`, `"-1.5e3"`).
    pub fn number(name: impl Into<Cow<'static, str>>, value: impl ToString) -> Self {
        Attribute {
            name: name.into(),
            data_type: Cow::Borrowed("Number"),
            value: AttributeValue::Number(value.to_string()),
        }
    }

    /// A `Binary` attribute.
    pub fn binary(name: impl Into<Cow<'static, str>>, value: impl Into<Vec<u8>>) -> Self {
        Attribute {
            name: name.into(),
            data_type: Cow::Borrowed("Binary"),
            value: AttributeValue::Binary(value.into()),
        }
    }

    /// Replace the data type with a custom one (`"Number.float"`); its base
    /// must match the value's kind, which [`crate::message::encode`] checks.
    pub fn with_data_type(mut self, data_type: impl Into<Cow<'static, str>>) -> Self {
        self.data_type = data_type.into();
        self
    }

    /// The bytes SQS counts for this attribute: name + data type + value.
    pub fn size(&self) -> usize {
        let value = match &self.value {
            AttributeValue::String(s) | AttributeValue::Number(s) => s.len(),
            AttributeValue::Binary(b) => b.len(),
        };
        self.name.len() + self.data_type.len() + value
    }
}

/// A message on its way to SQS, tagged with the caller's `position`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message<P> {
    /// The body.
    pub body: Body,
    /// At most ten attributes (one of which the encoder may need, see
    /// [`crate::BodyEncoding`]).
    pub attributes: Vec<Attribute>,
    /// FIFO message group id (also allowed on standard queues: fair queues).
    pub group_id: Option<String>,
    /// FIFO deduplication id.
    pub deduplication_id: Option<String>,
    /// Per-message delay in seconds (0..=900; standard queues only).
    pub delay_seconds: Option<i32>,
    /// Opaque to the forwarder; returned with the outcome.
    pub position: P,
}

impl<P> Message<P> {
    /// A message with a body and a position, and nothing else.
    pub fn new(body: impl Into<Body>, position: P) -> Self {
        Message {
            body: body.into(),
            attributes: Vec::new(),
            group_id: None,
            deduplication_id: None,
            delay_seconds: None,
            position,
        }
    }

    /// Add an attribute.
    pub fn attribute(mut self, attribute: Attribute) -> Self {
        self.attributes.push(attribute);
        self
    }

    /// Set the message group id.
    pub fn group_id(mut self, id: impl Into<String>) -> Self {
        self.group_id = Some(id.into());
        self
    }

    /// Set the deduplication id.
    pub fn deduplication_id(mut self, id: impl Into<String>) -> Self {
        self.deduplication_id = Some(id.into());
        self
    }

    /// Set the delay in seconds.
    pub fn delay_seconds(mut self, seconds: i32) -> Self {
        self.delay_seconds = Some(seconds);
        self
    }

    /// The same message with its position mapped by `f`.
    pub fn map_position<Q>(self, f: impl FnOnce(P) -> Q) -> Message<Q> {
        Message {
            body: self.body,
            attributes: self.attributes,
            group_id: self.group_id,
            deduplication_id: self.deduplication_id,
            delay_seconds: self.delay_seconds,
            position: f(self.position),
        }
    }
}
