//! What the client hands on of one message: the [`Delivery`], and its
//! short strings that are not UTF-8 ([`RawText`]).

/// A message's basic properties, as the broker sent them.
pub type Properties = amq_protocol::protocol::BasicProperties;

/// One message taken from a queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// The tag to settle it with, on its channel.
    pub delivery_tag: u64,
    /// Whether the broker delivered it before.
    pub redelivered: bool,
    /// The exchange it was published to.
    pub exchange: String,
    /// Its routing key.
    pub routing_key: String,
    /// Its basic properties.
    pub properties: Properties,
    /// The body.
    pub data: Vec<u8>,
    /// Its short strings that are not UTF-8 (AMQP allows any octets), with
    /// their octets: in `exchange`, `routing_key` and `properties` they read
    /// with `?` for each octet that is not part of UTF-8 text (`amqp/mend.rs`).
    /// Empty for nearly every message.
    pub raw: Vec<RawText>,
    /// Why the message cannot be read whole: its headers nest deeper than
    /// the client parses, or its properties cannot be read, so they are
    /// left out of `properties`. The drain rejects such a message (to the
    /// dead-letter exchange).
    pub fault: Option<String>,
}

impl Delivery {
    /// The octets of `field` when they are not UTF-8.
    pub fn raw(&self, field: TextField) -> Option<&[u8]> {
        self.raw
            .iter()
            .find(|r| r.field == field)
            .map(|r| r.bytes.as_slice())
    }
}

/// A short string of a delivery that is not UTF-8, and its octets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawText {
    /// Which it is.
    pub field: TextField,
    /// Its octets, as the publisher sent them.
    pub bytes: Vec<u8>,
}

/// The short strings a delivery carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextField {
    /// The exchange it was published to.
    Exchange,
    /// Its routing key.
    RoutingKey,
    /// `content-type`.
    ContentType,
    /// `content-encoding`.
    ContentEncoding,
    /// `correlation-id`.
    CorrelationId,
    /// `reply-to`.
    ReplyTo,
    /// `expiration`.
    Expiration,
    /// `message-id`.
    MessageId,
    /// `type`.
    Type,
    /// `user-id`.
    UserId,
    /// `app-id`.
    AppId,
    /// `cluster-id`.
    ClusterId,
    /// A header's name (at any depth of the headers table).
    HeaderName,
}

impl TextField {
    /// Its name in logs: the property's (`message-id`), `routing-key`,
    /// `exchange` or `header-name`.
    pub fn name(self) -> &'static str {
        match self {
            TextField::Exchange => "exchange",
            TextField::RoutingKey => "routing-key",
            TextField::ContentType => "content-type",
            TextField::ContentEncoding => "content-encoding",
            TextField::CorrelationId => "correlation-id",
            TextField::ReplyTo => "reply-to",
            TextField::Expiration => "expiration",
            TextField::MessageId => "message-id",
            TextField::Type => "type",
            TextField::UserId => "user-id",
            TextField::AppId => "app-id",
            TextField::ClusterId => "cluster-id",
            TextField::HeaderName => "header-name",
        }
    }
}
