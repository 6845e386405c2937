//! What the routing rules (`ROUTES`) see of a message: its body as the
//! record's data (`field` rules read it as JSON) and three source keys.
//!
//! * `routing_key`: the delivery's routing key; absent when it is empty,
//!   and always in `aws:rmq` events, which carry none.
//! * `source_queue`: the queue the message came from (an `aws:rmq` event's
//!   `queue` of its `"queue::vhost"` key).
//! * `header` (with `name`, matched exactly, as AMQP does): the header's
//!   text. A string (AMQP short and long strings and byte arrays, an
//!   `aws:rmq` string or `{"bytes": [...]}`) is its text, absent when it is
//!   not UTF-8; a number (integers, floats, decimals, timestamps) its
//!   decimal text (`42`, `1.5`); a boolean `true` or `false`; a table, an
//!   array or void is absent.
//!
//! The view borrows the [`Incoming`] message: nothing is copied to plan,
//! and a function without rules makes no view at all.

use std::borrow::Cow;

use sqs_forwarder::route::{Plan, RecordView, Routes, SourceKey};

use crate::mapping::{FieldValue, Incoming};

/// The source keys rabbitmq-to-sqs offers the routing rules.
pub const SOURCE_KEYS: &[SourceKey] = &[
    SourceKey::RoutingKey,
    SourceKey::SourceQueue,
    SourceKey::Header,
];

/// One message as the rules read it.
#[derive(Debug, Clone, Copy)]
pub struct View<'a>(pub &'a Incoming);

impl RecordView for View<'_> {
    fn data(&self) -> Option<&[u8]> {
        Some(&self.0.body)
    }

    fn key(&self, key: SourceKey, name: Option<&str>) -> Option<Cow<'_, str>> {
        match key {
            SourceKey::RoutingKey => self.0.routing_key.as_deref().map(Cow::Borrowed),
            SourceKey::SourceQueue => Some(Cow::Borrowed(&self.0.queue)),
            SourceKey::Header => {
                let name = name?;
                let (_, value) = self.0.headers.iter().find(|(n, _)| n == name)?;
                header_text(value)
            }
            _ => None,
        }
    }
}

/// A header's text as the rules compare it (see the module docs).
fn header_text(value: &FieldValue) -> Option<Cow<'_, str>> {
    match value {
        FieldValue::Text(s) | FieldValue::Number(s) => Some(Cow::Borrowed(s)),
        FieldValue::Bytes(b) => std::str::from_utf8(b).ok().map(Cow::Borrowed),
        FieldValue::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        FieldValue::Json(_) | FieldValue::Void => None,
    }
}

/// The rules' plan for `message`; `None` without rules.
pub fn plan(routes: Option<&Routes>, message: &Incoming) -> Option<Plan> {
    routes.map(|r| r.plan(&View(message)))
}

#[cfg(test)]
mod tests;
