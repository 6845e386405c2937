//! Routing rules (`ROUTES`): which records to send, to which queue, and in
//! what shape.
//!
//! Users of the four functions asked to drop records they do not want, to
//! send some records to other queues, and to lift a record's fields into the
//! message (its body, its attributes, its group id) without writing a
//! function of their own. One JSON document in the variable `ROUTES` says
//! so, in the same syntax for every function; it is read and checked once at
//! start ([`Routes::parse`], [`Routes::from_env`]), so a rule that names an
//! unknown target, a source key the function does not offer or an attribute
//! SQS would refuse stops the start naming the rule.
//!
//! Per record, the function builds its message as it always has and asks
//! [`Routes::decide`], which runs the steps in order, a file each under
//! `route/`: the filter (`condition.rs`, the conditions, also the routes'
//! `when`), the routes (here; `path.rs` for the HTTP path template), then
//! the shaping (`shape.rs`). The record's data is parsed as JSON at most
//! once, and only when a rule reaches a `field` (`record.rs`). The document
//! itself is read and checked by `parse.rs`.
//!
//! ```
//! use std::borrow::Cow;
//! use sqs_forwarder::Message;
//! use sqs_forwarder::route::{Decision, RecordView, Routes, SourceKey, TargetId};
//!
//! struct Line<'a>(&'a [u8]);
//! impl RecordView for Line<'_> {
//!     fn data(&self) -> Option<&[u8]> { Some(self.0) }
//!     fn key(&self, _: SourceKey, _: Option<&str>) -> Option<Cow<'_, str>> { None }
//! }
//!
//! let routes = Routes::parse(
//!     r#"{"targets": {"eu": "https://sqs.eu-west-1.amazonaws.com/123456789012/eu"},
//!         "routes": [{"when": {"field": "/region", "prefix": "eu-"}, "target": "eu"}]}"#,
//!     &[],
//! )?;
//! let data = br#"{"region": "eu-west-1"}"#;
//! match routes.decide(&Line(data), Message::new(data.to_vec(), 7)) {
//!     Decision::Send { target, .. } => assert_eq!(target, TargetId(1)),
//!     other => panic!("{other:?}"),
//! }
//! # Ok::<(), sqs_forwarder::ConfigError>(())
//! ```

mod condition;
mod parse;
mod path;
mod record;
mod router;
mod shape;

use std::borrow::Cow;

use crate::message::Message;
use crate::send::outcome::Failure;
use crate::setup::env::{Env, Variable, Word};
use crate::setup::error::ConfigError;

use condition::Condition;
use path::PathTemplate;
use record::Record;
pub use router::{Router, TargetCount};
use shape::Shape;
pub use shape::Shaped;

/// The variable that holds the rules.
pub const ROUTES: Variable = Variable::text(
    "ROUTES",
    "",
    "a JSON document of routing rules (docs/configuration.md, \"Routing rules\")",
);

/// What the rules can look at in one record. Each function implements it
/// for its record, so one engine serves four event sources.
pub trait RecordView {
    /// The record's data, where JSON fields are read (`None`: the record has
    /// no data a field can name).
    fn data(&self) -> Option<&[u8]>;
    /// A source key's value (`None`: absent). `name` is the header name for
    /// [`SourceKey::Header`] (a function whose headers ignore case, HTTP,
    /// looks the name up ignoring case).
    fn key(&self, key: SourceKey, name: Option<&str>) -> Option<Cow<'_, str>>;
}

/// A fact of a record's source that a rule can read, named in the document
/// by its word (`partition_key`, ...). Each function offers some of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceKey {
    /// `partition_key`: a Kinesis record's partition key.
    PartitionKey,
    /// `bucket`: an S3 object's bucket.
    Bucket,
    /// `object_key`: an S3 object's key.
    ObjectKey,
    /// `event_name`: an S3 notification's event name.
    EventName,
    /// `path`: an HTTP request's path.
    Path,
    /// `method`: an HTTP request's method.
    Method,
    /// `header`: an HTTP header or an AMQP header, named by `name`.
    Header,
    /// `routing_key`: a RabbitMQ message's routing key.
    RoutingKey,
    /// `source_queue`: the RabbitMQ queue a message came from.
    SourceQueue,
}

impl Word for SourceKey {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("partition_key", SourceKey::PartitionKey),
        ("bucket", SourceKey::Bucket),
        ("object_key", SourceKey::ObjectKey),
        ("event_name", SourceKey::EventName),
        ("path", SourceKey::Path),
        ("method", SourceKey::Method),
        ("header", SourceKey::Header),
        ("routing_key", SourceKey::RoutingKey),
        ("source_queue", SourceKey::SourceQueue),
    ];
}

/// Which queue a message goes to: `0` is the function's own target queue
/// (`default` in the document), `i + 1` is [`Routes::targets`]`()[i]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TargetId(pub usize);

impl TargetId {
    /// The function's own target queue (`QUEUE_URL` or `QUEUE_NAME`).
    pub const DEFAULT: TargetId = TargetId(0);
}

/// Why the rules sent a record nowhere; the caller counts it under
/// [`Skip::metric`] and reports the record to its source as done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Skip {
    /// A `filter` condition did not hold.
    FilteredOut,
    /// No route matched and `unmatched` is `drop`.
    Unmatched,
}

impl Skip {
    /// The metric this skip is counted under.
    pub fn metric(self) -> &'static str {
        match self {
            Skip::FilteredOut => crate::observe::metrics::FILTERED_OUT,
            Skip::Unmatched => crate::observe::metrics::UNMATCHED,
        }
    }
}

/// What the rules decided for one record: exactly one, carrying the
/// message's position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision<P> {
    /// Send this message (shaped) to this target.
    Send {
        /// Where to.
        target: TargetId,
        /// The message, shaped.
        message: Message<P>,
    },
    /// Send nothing: the record is done.
    Skip {
        /// The message's position.
        position: P,
        /// Why.
        reason: Skip,
    },
    /// The record cannot be shaped as the rules say (a content fault,
    /// permanent, code [`SHAPE_FAILED`](crate::send::codes::SHAPE_FAILED)).
    Fault {
        /// The message's position.
        position: P,
        /// What is wrong.
        failure: Failure,
    },
}

impl<P> Decision<P> {
    /// The position of the message the decision is about.
    pub fn position(&self) -> &P {
        match self {
            Decision::Send { message, .. } => &message.position,
            Decision::Skip { position, .. } | Decision::Fault { position, .. } => position,
        }
    }
}

/// What the rules decided for one record before its message is built
/// ([`Routes::plan`]); [`Plan::apply`] makes it a [`Decision`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Send to this target, shaped so.
    Send {
        /// Where to.
        target: TargetId,
        /// The shaping read from the record.
        shaped: Shaped,
    },
    /// Send nothing: the record is done.
    Skip(Skip),
    /// The record cannot be shaped as the rules say.
    Fault(Failure),
}

impl Plan {
    /// The decision for `message`, the record's message.
    pub fn apply<P>(self, mut message: Message<P>) -> Decision<P> {
        match self {
            Plan::Send { target, shaped } => {
                shaped.apply(&mut message);
                Decision::Send { target, message }
            }
            Plan::Skip(reason) => Decision::Skip {
                position: message.position,
                reason,
            },
            Plan::Fault(failure) => Decision::Fault {
                position: message.position,
                failure,
            },
        }
    }
}

/// What a record no route matched becomes (`unmatched`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unmatched {
    /// Sent to the function's own target.
    #[default]
    Default,
    /// Dropped, as [`Skip::Unmatched`].
    Drop,
}

impl Word for Unmatched {
    const WORDS: &'static [(&'static str, Self)] =
        &[("default", Unmatched::Default), ("drop", Unmatched::Drop)];
}

/// One route: tried in order, the first that matches picks the target.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Route {
    /// `{"when": <condition>, "target": "<name>"}`.
    When { when: Condition, target: TargetId },
    /// `{"path": "/queues/{name}/messages"}`: the target the request path
    /// names, if it is one.
    Path(PathTemplate),
}

/// The checked `ROUTES` document.
#[derive(Debug, Clone, PartialEq)]
pub struct Routes {
    /// The extra targets, name and queue URL, sorted by name.
    pub(crate) targets: Vec<(String, String)>,
    pub(crate) filter: Vec<Condition>,
    pub(crate) routes: Vec<Route>,
    pub(crate) unmatched: Unmatched,
    pub(crate) shape: Shape,
}

impl Routes {
    /// Read and check a document for a function that offers these source
    /// keys; the error names the rule at fault and what it allows.
    pub fn parse(text: &str, offered: &[SourceKey]) -> Result<Routes, ConfigError> {
        parse::document(text, offered)
    }

    /// `ROUTES` from `env`: `None` when it is unset or blank (the function
    /// behaves as if there were no rules).
    pub fn from_env(env: &Env, offered: &[SourceKey]) -> Result<Option<Routes>, ConfigError> {
        env.raw(ROUTES.name)
            .map(|text| Routes::parse(&text, offered))
            .transpose()
    }

    /// The extra targets, name and queue URL, sorted by name:
    /// `targets()[i]` is [`TargetId`]`(i + 1)`.
    pub fn targets(&self) -> &[(String, String)] {
        &self.targets
    }

    /// The target a name stands for: `default` or one of [`Routes::targets`].
    pub fn target(&self, name: &str) -> Option<TargetId> {
        if name == "default" {
            return Some(TargetId::DEFAULT);
        }
        self.targets
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()
            .map(|i| TargetId(i + 1))
    }

    /// How a request path meets the path routes (`{"path": ...}`), for an
    /// HTTP function that serves their paths: `None` when it has the shape
    /// of no path route; else the name captured and the target it is: the
    /// first path route whose name is a target, or else the first whose
    /// shape the path has, with `None` (the document defines no target of
    /// that name: the route would pass the record on).
    pub fn path_target<'p>(&self, path: &'p str) -> Option<(&'p str, Option<TargetId>)> {
        let mut captured = self.routes.iter().filter_map(|route| match route {
            Route::Path(template) => template.capture(path),
            Route::When { .. } => None,
        });
        let first = captured.next()?;
        std::iter::once(first)
            .chain(captured)
            .find_map(|name| self.target(name).map(|t| (name, Some(t))))
            .or(Some((first, None)))
    }

    /// Filter, route and shape one record's message: exactly one decision,
    /// with the message's position. [`Routes::plan`] then
    /// [`Plan::apply`].
    pub fn decide<P>(&self, view: &impl RecordView, message: Message<P>) -> Decision<P> {
        self.plan(view).apply(message)
    }

    /// What the rules decide for one record, read from its view alone: a
    /// function whose message takes the record's data (moving it) plans
    /// first, then builds the message and applies the plan to it.
    pub fn plan(&self, view: &impl RecordView) -> Plan {
        let record = Record::new(view);
        if !self.filter.iter().all(|c| c.holds(&record)) {
            return Plan::Skip(Skip::FilteredOut);
        }
        let Some(target) = self.route(&record) else {
            return Plan::Skip(Skip::Unmatched);
        };
        match self.shape.plan(&record) {
            Ok(shaped) => Plan::Send { target, shaped },
            Err(failure) => Plan::Fault(failure),
        }
    }

    /// Whether the rules set group ids (`group_id`): then a standard target
    /// keeps them (SQS fair queues).
    pub fn sets_group_ids(&self) -> bool {
        self.shape.group_id.is_some()
    }

    /// The first matching route's target; no match: `unmatched`'s.
    fn route<V: RecordView>(&self, record: &Record<'_, V>) -> Option<TargetId> {
        for route in &self.routes {
            let found = match route {
                Route::When { when, target } => when.holds(record).then_some(*target),
                Route::Path(template) => template.target(record, |name| self.target(name)),
            };
            if found.is_some() {
                return found;
            }
        }
        match self.unmatched {
            Unmatched::Default => Some(TargetId::DEFAULT),
            Unmatched::Drop => None,
        }
    }
}

#[cfg(test)]
mod tests;
