//! One invocation: event in, messages out (each where the routing rules
//! say, if any), and the answer S3 (or EventBridge) gets: success, or an
//! error naming every record that did not reach SQS, so that Lambda retries
//! the event and finally hands it to the on-failure destination. The
//! answer's types are in `handler/answer.rs`.

use std::sync::Arc;

use serde_json::Value;
use sqs_forwarder::route::Router;
use sqs_forwarder::setup::on_first_use::OnFirstUse;
use sqs_forwarder::{Forwarder, Outcome, Transport};
use tokio::time::Instant;

use crate::continuation::{HandOver, SelfInvoke, Start};
use crate::event::{EventError, Incoming, ObjectEvent, parse};
use crate::lines::{Chunking, Leg, forward_leg};
use crate::messages::{Fifo, notification_message};
use crate::object::{Opened, open};
use crate::routing::{Ruled, Skipped, body_bytes, plan, send_all};
use crate::settings::{Mode, Settings};

mod answer;
mod chain;

use answer::lines_reason;
pub use answer::{HandlerError, RecordFailure, Report};

/// The function: settings, the router (the forwarder, or the routing rules
/// and their targets' forwarders), and an S3 client for lines mode.
#[derive(Debug)]
pub struct Handler<T> {
    settings: Settings,
    router: Router<T>,
    s3: OnFirstUse<aws_sdk_s3::Client>,
    invoker: Option<Arc<dyn SelfInvoke>>,
}

impl<T: Transport> Handler<T> {
    /// A handler sending every message to `forwarder`'s queue. The S3
    /// client is only used in lines mode: one built, or one to build on the
    /// first object read (`OnFirstUse::new`; the notification mode never
    /// builds it).
    pub fn new(
        settings: Settings,
        forwarder: Forwarder<T>,
        s3: impl Into<OnFirstUse<aws_sdk_s3::Client>>,
    ) -> Self {
        Self::routed(settings, Router::single(forwarder), s3)
    }

    /// A handler sending each record (or line) where `router`'s rules say.
    pub fn routed(
        settings: Settings,
        router: Router<T>,
        s3: impl Into<OnFirstUse<aws_sdk_s3::Client>>,
    ) -> Self {
        Handler {
            settings,
            router,
            s3: s3.into(),
            invoker: None,
        }
    }

    /// The handler handing objects' rests on through `invoker` when
    /// `CONTINUATION` allows (lines mode).
    pub fn with_continuation(mut self, invoker: Arc<dyn SelfInvoke>) -> Self {
        self.invoker = Some(invoker);
        self
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The default target's forwarder.
    pub fn forwarder(&self) -> &Forwarder<T> {
        self.router.default_target()
    }

    /// The router.
    pub fn router(&self) -> &Router<T> {
        &self.router
    }

    /// The FIFO parameters messages are built with: with rules, FIFO ids
    /// whenever any target is FIFO (the router takes them off those bound
    /// for a standard queue).
    fn fifo(&self) -> Fifo {
        Fifo {
            enabled: self.router.any_fifo(),
            group_by: self.settings.group_by,
        }
    }

    /// Handle one event; stop sending at `deadline`.
    pub async fn handle(
        &self,
        event: Value,
        deadline: Option<Instant>,
    ) -> Result<Report, HandlerError> {
        self.handle_read(parse(event), deadline).await
    }

    /// Handle one event as [`crate::event::Event`] read it (or why it could
    /// not); stop sending at `deadline`.
    pub async fn handle_read(
        &self,
        read: Result<Incoming, EventError>,
        deadline: Option<Instant>,
    ) -> Result<Report, HandlerError> {
        let objects = match read? {
            Incoming::TestEvent { bucket } => {
                tracing::info!(
                    bucket = bucket.as_deref().unwrap_or(""),
                    "s3:TestEvent acknowledged; nothing to forward"
                );
                return Ok(Report {
                    test_event: true,
                    ..Report::default()
                });
            }
            Incoming::Objects(objects) => objects,
            Incoming::MapBatch(batch) => {
                return crate::map_batch::forward_batch(
                    &self.router,
                    self.settings.group_by,
                    *batch,
                    deadline,
                )
                .await;
            }
            Incoming::Continuation(c) => return self.continued(*c, deadline).await,
        };
        let mut report = Report {
            records: objects.len(),
            ..Report::default()
        };
        let mut selected = Vec::with_capacity(objects.len());
        for (index, event) in objects.iter().enumerate() {
            if self.settings.event_filter.matches(&event.event_name) {
                selected.push((index, event));
            } else {
                tracing::debug!(record = index, event_name = %event.event_name, "left out by EVENT_NAMES");
                report.filtered_out += 1;
            }
        }
        let failures = match self.settings.mode {
            Mode::Notification => self.notifications(&selected, &mut report, deadline).await,
            Mode::Lines => self.lines(&selected, &mut report, deadline).await,
        };
        tracing::info!(
            records = report.records,
            filtered_out = report.filtered_out,
            messages_sent = report.messages_sent,
            messages_dropped = report.messages_dropped,
            routes_filtered_out = report.routes_filtered_out,
            routes_unmatched = report.routes_unmatched,
            failed_records = failures.len(),
            "event handled"
        );
        if failures.is_empty() {
            Ok(report)
        } else {
            Err(HandlerError::NotForwarded { failures, report })
        }
    }

    async fn notifications(
        &self,
        selected: &[(usize, &ObjectEvent)],
        report: &mut Report,
        deadline: Option<Instant>,
    ) -> Vec<RecordFailure> {
        let fifo = self.fifo();
        let routes = self.router.routes();
        // The rules read the record's message body: its JSON, as sent.
        let items = selected
            .iter()
            .enumerate()
            .map(|(at, (_, event))| {
                let message = notification_message(event, fifo, at);
                let plan = plan(routes, event, body_bytes(&message.body));
                let ruled = Ruled::of(plan.as_ref());
                self.router
                    .route(plan, message.map_position(|at| (at, ruled)))
            })
            .collect();
        let outcomes = send_all(&self.router, items, deadline).await;
        let mut skipped = Skipped::default();
        let mut failures = Vec::new();
        for o in outcomes {
            let (at, ruled) = o.position;
            let Some(&(index, event)) = selected.get(at) else {
                continue;
            };
            match (o.outcome, ruled) {
                (Outcome::Dropped { .. }, Ruled::Skipped(reason)) => skipped.count(reason),
                (Outcome::Sent { .. }, _) => report.messages_sent += 1,
                (Outcome::Dropped { .. }, _) => report.messages_dropped += 1,
                (Outcome::Failed(f), _) => {
                    failures.push(RecordFailure::new(index, event, f.to_string(), f.retryable))
                }
            }
        }
        report.routes_filtered_out += skipped.filtered_out;
        report.routes_unmatched += skipped.unmatched;
        failures
    }

    async fn lines(
        &self,
        selected: &[(usize, &ObjectEvent)],
        report: &mut Report,
        deadline: Option<Instant>,
    ) -> Vec<RecordFailure> {
        let mut failures = Vec::new();
        for &(index, event) in selected {
            let fail = |reason: String, retryable: bool| {
                RecordFailure::new(index, event, reason, retryable)
            };
            if !event.is_created() {
                tracing::info!(record = index, event_name = %event.event_name, "not an ObjectCreated event: no object to read in lines mode");
                report.not_created += 1;
                continue;
            }
            let (body, gzip, pin) = match open(self.s3.get(), event).await {
                Ok(Opened::Body { body, gzip, pin }) => (body, gzip, pin),
                Ok(Opened::Superseded) => {
                    tracing::warn!(record = index, bucket = %event.bucket, key = %event.key, etag = event.etag.as_deref().unwrap_or(""), "the object was overwritten after this event (its ETag changed); its lines are gone and the newer upload has its own event");
                    report.superseded += 1;
                    continue;
                }
                Err(e) => {
                    tracing::error!(record = index, error = %e, "cannot read the object");
                    failures.push(fail(object_reason(&e), e.retryable));
                    continue;
                }
            };
            let step = chain::Step::first(event, pin);
            let leg = Leg {
                start: Start::BEGINNING,
                hand_over: self.hand_over(&event.bucket, deadline),
            };
            let read = Read { body, gzip, leg };
            if let Some(f) = self
                .forward_object(index, event, read, &step, report, deadline)
                .await
            {
                failures.push(f);
            }
        }
        failures
    }

    /// When a step reading an object of `bucket` hands over: never unless
    /// `CONTINUATION` allows the bucket; `CONTINUATION_MARGIN_MS` before
    /// the deadline (at most half the time left), or after
    /// `CONTINUATION_AFTER_LINES` lines.
    fn hand_over(&self, bucket: &str, deadline: Option<Instant>) -> HandOver {
        let c = &self.settings.continuation;
        if self.invoker.is_none() || !c.allows(bucket) {
            return HandOver::NEVER;
        }
        // The margin, but at most half the time left: a step always reads
        // for half its time, whatever the function's timeout.
        let at = deadline.map(|d| {
            let left = d.saturating_duration_since(Instant::now());
            d - std::time::Duration::from_millis(c.margin_ms).min(left / 2)
        });
        HandOver {
            at,
            lines: c.after_lines,
        }
    }

    /// Forward an opened object's lines (from the leg's start), tally them
    /// in `report`, and hand the rest on when the leg stopped early; a
    /// failure names the record.
    async fn forward_object(
        &self,
        index: usize,
        event: &ObjectEvent,
        read: Read,
        step: &chain::Step,
        report: &mut Report,
        deadline: Option<Instant>,
    ) -> Option<RecordFailure> {
        let fifo = self.fifo();
        let chunking = Chunking {
            lines: self.settings.lines_per_send,
            bytes: self.settings.lines_bytes_per_send,
        };
        let Read { body, gzip, leg } = read;
        report.objects_read += 1;
        let lines = forward_leg(body, event, &self.router, fifo, chunking, deadline, leg).await;
        tracing::info!(
            record = index,
            bucket = %event.bucket,
            key = %event.key,
            gzip,
            first_line = leg.start.line,
            lines = lines.lines,
            sent = lines.sent,
            dropped = lines.dropped,
            filtered_out = lines.skipped.filtered_out,
            unmatched = lines.skipped.unmatched,
            blank = lines.blank,
            failed = lines.failed,
            handed_over_at_line = lines.handed_over.map(|s| s.line),
            "object forwarded line by line"
        );
        report.lines_read += lines.lines;
        report.blank_lines += lines.blank;
        report.messages_sent += lines.sent;
        report.messages_dropped += lines.dropped;
        report.routes_filtered_out += lines.skipped.filtered_out;
        report.routes_unmatched += lines.skipped.unmatched;
        if !lines.complete() {
            let retryable =
                lines.retryable || lines.read_error.as_ref().is_some_and(|e| e.retryable);
            return Some(RecordFailure::new(
                index,
                event,
                lines_reason(&lines),
                retryable,
            ));
        }
        let at = lines.handed_over?;
        match self.hand_on(event, step, at).await {
            Ok(()) => {
                report.continued += 1;
                None
            }
            Err(reason) => Some(RecordFailure::new(index, event, reason, true)),
        }
    }
}

/// An opened object and the part of it to read.
struct Read {
    body: crate::object::ObjectBody,
    gzip: bool,
    leg: Leg,
}

/// Why an object could not be opened, for the record's failure.
fn object_reason(e: &crate::object::ObjectError) -> String {
    let version = e
        .version
        .as_deref()
        .map(|v| format!(" (version {v})"))
        .unwrap_or_default();
    format!(
        "cannot read the object{version}: {}: {} ({})",
        e.code,
        e.message,
        if e.retryable {
            "retryable"
        } else {
            "not retryable"
        }
    )
}

#[cfg(test)]
mod tests;
