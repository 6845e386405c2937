//! One invocation: event in, messages out, and the answer S3 (or
//! EventBridge) gets: success, or an error naming every record that did not
//! reach SQS, so that Lambda retries the event and finally hands it to the
//! on-failure destination.

use std::fmt;

use serde::Serialize;
use serde_json::Value;
use sqs_forwarder::setup::on_first_use::OnFirstUse;
use sqs_forwarder::{Forwarder, Outcome, Transport};
use tokio::time::Instant;

use crate::event::{EventError, Incoming, ObjectEvent, parse};
use crate::lines::{Chunking, LinesReport, forward_lines};
use crate::messages::{Fifo, notification_message};
use crate::object::{Opened, open};
use crate::settings::{Mode, Settings};

/// What an invocation did (the function's response; S3 ignores it, but
/// `cargo lambda invoke` shows it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Records in the event.
    pub records: usize,
    /// Whether it was the `s3:TestEvent`.
    pub test_event: bool,
    /// Records left out by `EVENT_NAMES`.
    pub filtered_out: usize,
    /// Messages SQS accepted.
    pub messages_sent: u64,
    /// Messages dropped by `OVERSIZE_POLICY=drop`.
    pub messages_dropped: u64,
    /// Lines mode: records that are not about a created object (nothing to read).
    pub not_created: usize,
    /// Lines mode: objects overwritten since their event (unversioned buckets).
    pub superseded: usize,
    /// Lines mode: objects read.
    pub objects_read: usize,
    /// Lines mode: lines read, blank ones included.
    pub lines_read: u64,
    /// Lines mode: blank lines skipped.
    pub blank_lines: u64,
}

/// A record that did not reach SQS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordFailure {
    /// The record's index in the event.
    pub record: usize,
    /// Its event name.
    pub event_name: String,
    /// `s3://bucket/key`.
    pub location: String,
    /// Why.
    pub reason: String,
    /// Whether a retry of the event could help.
    pub retryable: bool,
}

impl RecordFailure {
    fn new(record: usize, event: &ObjectEvent, reason: String, retryable: bool) -> Self {
        RecordFailure {
            record,
            event_name: event.event_name.clone(),
            location: event.location(),
            reason,
            retryable,
        }
    }
}

impl fmt::Display for RecordFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "record {} {} {}: {}",
            self.record, self.event_name, self.location, self.reason
        )
    }
}

/// Why an invocation fails.
#[derive(thiserror::Error)]
pub enum HandlerError {
    /// The event cannot be read.
    #[error(transparent)]
    Event(#[from] EventError),
    /// Some records did not reach SQS.
    #[error("{}", describe(failures, report))]
    NotForwarded {
        /// Every record that did not, in order.
        failures: Vec<RecordFailure>,
        /// What did get through.
        report: Report,
    },
}

/// The message itself: the Lambda runtime logs errors with `{:?}`.
impl fmt::Debug for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Records named in an error message; the rest are counted.
const NAMED_FAILURES: usize = 10;

fn describe(failures: &[RecordFailure], report: &Report) -> String {
    let mut s = format!(
        "{} of {} S3 records were not forwarded to SQS",
        failures.len(),
        report.records
    );
    for (i, failure) in failures.iter().take(NAMED_FAILURES).enumerate() {
        s.push_str(if i == 0 { ": " } else { "; " });
        s.push_str(&failure.to_string());
    }
    if failures.len() > NAMED_FAILURES {
        s.push_str(&format!("; and {} more", failures.len() - NAMED_FAILURES));
    }
    s
}

impl From<HandlerError> for lambda_runtime::Diagnostic {
    fn from(e: HandlerError) -> Self {
        let error_type = match &e {
            HandlerError::Event(_) => "S3ToSqs.InvalidEvent",
            HandlerError::NotForwarded { .. } => "S3ToSqs.NotForwarded",
        };
        lambda_runtime::Diagnostic {
            error_type: error_type.into(),
            error_message: e.to_string(),
        }
    }
}

/// The function: settings, the forwarder, and an S3 client for lines mode.
#[derive(Debug)]
pub struct Handler<T> {
    settings: Settings,
    forwarder: Forwarder<T>,
    s3: OnFirstUse<aws_sdk_s3::Client>,
}

impl<T: Transport> Handler<T> {
    /// A handler. The S3 client is only used in lines mode: one built, or
    /// one to build on the first object read (`OnFirstUse::new`; the
    /// notification mode never builds it).
    pub fn new(
        settings: Settings,
        forwarder: Forwarder<T>,
        s3: impl Into<OnFirstUse<aws_sdk_s3::Client>>,
    ) -> Self {
        Handler {
            settings,
            forwarder,
            s3: s3.into(),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The forwarder.
    pub fn forwarder(&self) -> &Forwarder<T> {
        &self.forwarder
    }

    fn fifo(&self) -> Fifo {
        Fifo {
            enabled: self.forwarder.rules().fifo,
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
        let messages = selected
            .iter()
            .map(|(index, event)| notification_message(event, fifo, *index))
            .collect();
        let outcomes = self.forwarder.send_all(messages, deadline).await;
        let mut failures = Vec::new();
        for (o, (_, event)) in outcomes.into_iter().zip(selected) {
            match o.outcome {
                Outcome::Sent { .. } => report.messages_sent += 1,
                Outcome::Dropped { .. } => report.messages_dropped += 1,
                Outcome::Failed(f) => failures.push(RecordFailure::new(
                    o.position,
                    event,
                    f.to_string(),
                    f.retryable,
                )),
            }
        }
        failures
    }

    async fn lines(
        &self,
        selected: &[(usize, &ObjectEvent)],
        report: &mut Report,
        deadline: Option<Instant>,
    ) -> Vec<RecordFailure> {
        let fifo = self.fifo();
        let chunking = Chunking {
            lines: self.settings.lines_per_send,
            bytes: self.settings.lines_bytes_per_send,
        };
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
            let (body, gzip) = match open(self.s3.get(), event).await {
                Ok(Opened::Body { body, gzip }) => (body, gzip),
                Ok(Opened::Superseded) => {
                    tracing::warn!(record = index, bucket = %event.bucket, key = %event.key, etag = event.etag.as_deref().unwrap_or(""), "the object was overwritten after this event (its ETag changed); its lines are gone and the newer upload has its own event");
                    report.superseded += 1;
                    continue;
                }
                Err(e) => {
                    tracing::error!(record = index, error = %e, "cannot read the object");
                    let version = e
                        .version
                        .as_deref()
                        .map(|v| format!(" (version {v})"))
                        .unwrap_or_default();
                    failures.push(fail(
                        format!(
                            "cannot read the object{version}: {}: {} ({})",
                            e.code,
                            e.message,
                            if e.retryable {
                                "retryable"
                            } else {
                                "not retryable"
                            }
                        ),
                        e.retryable,
                    ));
                    continue;
                }
            };
            report.objects_read += 1;
            let lines = forward_lines(body, event, &self.forwarder, fifo, chunking, deadline).await;
            tracing::info!(
                record = index,
                bucket = %event.bucket,
                key = %event.key,
                gzip,
                lines = lines.lines,
                sent = lines.sent,
                dropped = lines.dropped,
                blank = lines.blank,
                failed = lines.failed,
                "object forwarded line by line"
            );
            report.lines_read += lines.lines;
            report.blank_lines += lines.blank;
            report.messages_sent += lines.sent;
            report.messages_dropped += lines.dropped;
            if !lines.complete() {
                let retryable =
                    lines.retryable || lines.read_error.as_ref().is_some_and(|e| e.retryable);
                failures.push(fail(lines_reason(&lines), retryable));
            }
        }
        failures
    }
}

fn lines_reason(lines: &LinesReport) -> String {
    let mut parts = Vec::new();
    if lines.failed > 0 {
        let named: Vec<String> = lines
            .failures
            .iter()
            .map(|(n, f)| format!("line {n}: {f}"))
            .collect();
        let more = lines.failed.saturating_sub(lines.failures.len() as u64);
        parts.push(format!(
            "{} of {} lines not forwarded ({}{})",
            lines.failed,
            lines.lines,
            named.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        ));
    }
    if let Some(n) = lines.stopped_after {
        parts.push(if lines.retryable {
            format!("reading stopped after line {n}; a retry of the event sends the object again")
        } else {
            format!("reading stopped after line {n}: no line of the last chunk got through")
        });
    }
    if let Some(e) = &lines.read_error {
        parts.push(format!(
            "the object could not be read to its end after line {}: {}: {}",
            lines.lines, e.code, e.message
        ));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests;
