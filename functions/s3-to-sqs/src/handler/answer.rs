//! The answer of one invocation: what it did ([`Report`], the function's
//! response), or why it fails ([`HandlerError`]: the event could not be
//! read, or records did not reach SQS, each named as a [`RecordFailure`]),
//! and the Lambda error type each failure is reported under.

use std::fmt;

use serde::Serialize;

use crate::event::{EventError, ObjectEvent};
use crate::lines::LinesReport;

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
    /// Records (notification mode) or lines (lines mode) a `ROUTES` filter
    /// left out: done, not sent.
    pub routes_filtered_out: u64,
    /// Records or lines no `ROUTES` route matched, dropped under
    /// `unmatched: drop`: done, not sent.
    pub routes_unmatched: u64,
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
    /// A Distributed Map batch: its object and item indexes (`records`
    /// counts its items).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map_batch: Option<crate::map_batch::BatchObject>,
    /// Lines mode with `CONTINUATION`: objects whose rest was handed on to
    /// the next invocation.
    pub continued: usize,
}

/// A record that did not reach SQS (or, with `ROUTES`, could not be shaped
/// as the rules say: `ShapeFailed`).
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
    pub(super) fn new(record: usize, event: &ObjectEvent, reason: String, retryable: bool) -> Self {
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
    /// Some items of a Distributed Map batch did not reach SQS.
    #[error(transparent)]
    Items(#[from] crate::map_batch::ItemsNotForwarded),
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
            HandlerError::Items(items) => items.error_type(),
        };
        lambda_runtime::Diagnostic {
            error_type: error_type.into(),
            error_message: e.to_string(),
        }
    }
}

/// Why an object's lines were not all forwarded, for its [`RecordFailure`].
pub(super) fn lines_reason(lines: &LinesReport) -> String {
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
