//! # rabbitmq-to-sqs
//!
//! Moves messages from RabbitMQ to Amazon SQS, where the acknowledgement is
//! the delivery guarantee: a message is acked only after SQS accepted it.
//!
//! One binary, two triggers:
//!
//! * **A schedule** (an EventBridge rule sends `detail-type: Scheduled
//!   Event`; EventBridge Scheduler sends whatever input it was given): the
//!   function connects to `RABBITMQ_URL` ([`amqp`], its own AMQP client), drains the queues in
//!   `RABBITMQ_QUEUES` under a bounded prefetch, forwards the messages through
//!   the shared crate and settles each delivery: ack when sent, requeue when a
//!   later try may succeed, reject (to the dead-letter exchange) when it can
//!   never be sent ([`drain`], [`acks`]). Works with any broker the function
//!   can reach.
//! * **An Amazon MQ event** (`eventSource: aws:rmq`): Lambda's event source
//!   mapping hands over a batch, which is forwarded as a whole; any message
//!   not sent fails the invocation so that Lambda gives the batch back
//!   ([`amazon_mq`]).
//!
//! The flow is the project's: event → [`routing`] (the `ROUTES` rules'
//! plan, when there are rules) → [`mapping`] (AMQP properties and headers
//! to a [`sqs_forwarder::Message`], routed and shaped) →
//! [`sqs_forwarder::route::Router::forward`] → outcomes → acks. Nothing here
//! knows about SQS batching or retries.
//! [`Handler`] does it for one invocation (generic over the transport, so
//! tests drive it with a fake); [`Lambda`] is what Lambda keeps between
//! invocations.
//!
//! The broker password never appears in logs or errors ([`broker`]); it may
//! come from AWS Secrets Manager ([`secret`]).

pub mod acks;
pub mod amazon_mq;
pub mod amqp;
pub mod broker;
pub mod drain;
mod error;
pub mod fifo_id;
pub mod fold;
pub mod handler;
pub mod lambda;
pub mod mapping;
pub mod routing;
pub mod secret;
pub mod settings;
pub mod values;

pub use crate::error::HandlerError;
pub use crate::handler::Handler;
pub use crate::lambda::Lambda;
pub use crate::settings::{DeliveryMode, Settings, VARIABLES};

/// The service name: the metrics' `Service` dimension and the AMQP
/// connection name.
pub const SERVICE: &str = "rabbitmq-to-sqs";

/// The prefix of the Lambda error types the function reports
/// (`RabbitmqToSqs.BadEvent`, ... see [`HandlerError::kind`], and a failed
/// start's `RabbitmqToSqs.InvalidConfiguration` or
/// `RabbitmqToSqs.StartFailed`).
pub const ERROR_PREFIX: &str = "RabbitmqToSqs";

/// This function's own metrics (the shared crate counts messages).
pub mod metric {
    /// Headers carried in the `amqp.headers` JSON attribute, for want of an
    /// attribute slot or a name SQS takes.
    pub const HEADERS_FOLDED: &str = "HeadersFolded";
    /// Headers left out because the message would not fit otherwise.
    pub const HEADERS_DROPPED: &str = "HeadersDropped";
    /// Deliveries with a short string (routing key, exchange, property,
    /// header name) that is not UTF-8, forwarded with its octets.
    pub const NON_UTF8_MESSAGES: &str = "NonUtf8Messages";
    /// Deliveries the client could not read whole, rejected to the
    /// dead-letter exchange (`UnreadableMessage`).
    pub const UNREADABLE_MESSAGES: &str = "UnreadableMessages";
    /// A queue's ready messages after its drain (dimension `Queue`; without
    /// it, all the queues of the tick together).
    pub const QUEUE_BACKLOG: &str = "QueueBacklog";
}
