//! The choices of rabbitmq-to-sqs's settings: delivery mode, where group
//! and deduplication ids come from, which properties and headers become
//! attributes. Each enum's configuration words are its [`Word::WORDS`].

use sqs_forwarder::setup::env::Word;

/// What a message's acknowledgement promises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeliveryMode {
    /// Ack after SQS accepted the message; a crash or a lost connection
    /// means redelivery, so a message may reach SQS twice.
    #[default]
    AtLeastOnce,
    /// At-least-once from RabbitMQ into a FIFO queue, with the correlation id
    /// as the SQS deduplication id: a redelivered message is dropped by SQS
    /// within its 5-minute deduplication window. Messages without a
    /// correlation id are rejected.
    ExactlyOnce,
    /// The broker forgets a message as soon as it hands it out
    /// (`basic.get` with `no-ack`): no guarantee at all.
    AutoAck,
}

impl Word for DeliveryMode {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("at-least-once", DeliveryMode::AtLeastOnce),
        ("exactly-once", DeliveryMode::ExactlyOnce),
        ("auto-ack", DeliveryMode::AutoAck),
    ];
}

impl DeliveryMode {
    /// The configuration word.
    pub fn name(self) -> &'static str {
        self.word()
    }
}

/// Where a FIFO message's deduplication id comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DedupFrom {
    /// The message id, else the correlation id, else none.
    #[default]
    Auto,
    /// The message id.
    MessageId,
    /// The correlation id.
    CorrelationId,
    /// None: the queue's content-based deduplication decides.
    None,
}

impl Word for DedupFrom {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("auto", DedupFrom::Auto),
        ("message-id", DedupFrom::MessageId),
        ("correlation-id", DedupFrom::CorrelationId),
        ("none", DedupFrom::None),
    ];
}

/// Where a FIFO message's group id comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum GroupFrom {
    /// The routing key.
    #[default]
    RoutingKey,
    /// A header's value.
    Header(String),
    /// The queue the message came from.
    Queue,
    /// None: `MESSAGE_GROUP_ID`, else the queue name.
    None,
}

/// An AMQP property (or delivery field) that can become an attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Property {
    /// `content-type`
    ContentType,
    /// `content-encoding`
    ContentEncoding,
    /// `correlation-id`
    CorrelationId,
    /// `message-id`
    MessageId,
    /// `reply-to`
    ReplyTo,
    /// `expiration`
    Expiration,
    /// `timestamp`
    Timestamp,
    /// `type`
    Type,
    /// `user-id`
    UserId,
    /// `app-id`
    AppId,
    /// `cluster-id`
    ClusterId,
    /// `priority`
    Priority,
    /// `delivery-mode`
    DeliveryMode,
    /// `routing-key` (of the delivery)
    RoutingKey,
    /// `exchange` (of the delivery)
    Exchange,
    /// `redelivered` (of the delivery)
    Redelivered,
}

impl Word for Property {
    const WORDS: &'static [(&'static str, Property)] = &[
        ("content-type", Property::ContentType),
        ("content-encoding", Property::ContentEncoding),
        ("correlation-id", Property::CorrelationId),
        ("message-id", Property::MessageId),
        ("reply-to", Property::ReplyTo),
        ("expiration", Property::Expiration),
        ("timestamp", Property::Timestamp),
        ("type", Property::Type),
        ("user-id", Property::UserId),
        ("app-id", Property::AppId),
        ("cluster-id", Property::ClusterId),
        ("priority", Property::Priority),
        ("delivery-mode", Property::DeliveryMode),
        ("routing-key", Property::RoutingKey),
        ("exchange", Property::Exchange),
        ("redelivered", Property::Redelivered),
    ];
}

impl Property {
    /// The configuration word (`content-type`).
    pub fn name(self) -> &'static str {
        self.word()
    }

    /// The SQS attribute it becomes: `amqp.` and its name.
    pub fn attribute_name(self) -> String {
        // Once per property per message: no formatting machinery.
        let name = self.name();
        let mut s = String::with_capacity(ATTRIBUTE_PREFIX.len() + name.len());
        s.push_str(ATTRIBUTE_PREFIX);
        s.push_str(name);
        s
    }
}

/// The prefix of the attributes made from AMQP properties.
pub const ATTRIBUTE_PREFIX: &str = "amqp.";

/// Which headers become attributes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HeaderSelection {
    /// Every header.
    #[default]
    All,
    /// None.
    None,
    /// These, when present.
    Only(Vec<String>),
}

impl HeaderSelection {
    /// Whether the header `name` is selected.
    pub fn includes(&self, name: &str) -> bool {
        match self {
            HeaderSelection::All => true,
            HeaderSelection::None => false,
            HeaderSelection::Only(names) => names.iter().any(|n| n == name),
        }
    }
}

/// How an AMQP message becomes an SQS message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MappingRules {
    /// Deduplication id source (`DEDUPLICATION_ID_FROM`).
    pub dedup: DedupFrom,
    /// Group id source (`GROUP_ID_FROM`).
    pub group: GroupFrom,
    /// Properties copied into attributes (`PROPERTY_ATTRIBUTES`).
    pub properties: Vec<Property>,
    /// Headers copied into attributes (`HEADER_ATTRIBUTES`).
    pub headers: HeaderSelection,
}
