//! Lines mode: an object's lines, read as a stream, handed to the forwarder
//! a chunk at a time.
//!
//! Memory stays bounded whatever the object's size: the reader holds one
//! line, and that at most a byte over the largest message any target queue
//! takes (a longer line is cut there and goes on as an oversize message,
//! which the shared `OVERSIZE_POLICY` fails or drops); the router gets at
//! most `LINES_PER_SEND` lines or `LINES_BYTES_PER_SEND` bytes at a time.
//!
//! With routing rules (`ROUTES`) each line is a record: its data is the
//! line, its keys the object's bucket and key and the event's name. The
//! rules plan it as it is read, before it moves into its message; nothing
//! more of the object is held than without rules.

use std::io;

use sqs_forwarder::route::Router;
use sqs_forwarder::send::codes::MESSAGE_TOO_LARGE;
use sqs_forwarder::{Failure, Outcome, Routed, Transport};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio::time::Instant;

use crate::continuation::{HandOver, Start};
use crate::event::ObjectEvent;
use crate::messages::{Fifo, line_message};
use crate::routing::{Ruled, Skipped, plan, send_all};

/// One line, without its line ending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The line number, from 1, counting blank lines.
    pub number: u64,
    /// The line's bytes, at most the reader's cap.
    pub bytes: Vec<u8>,
    /// The line's full length; more than `bytes.len()` when it was cut.
    pub len: u64,
}

/// Reads lines ending in `\n` or `\r\n` (the last one may have no ending),
/// keeping at most `cap` bytes of each. A UTF-8 byte order mark at the start
/// of the object is removed.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    cap: usize,
    number: u64,
    offset: u64,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// A reader keeping at most `cap` bytes of a line.
    pub fn new(inner: R, cap: usize) -> Self {
        Self::resuming(inner, cap, Start::BEGINNING)
    }

    /// A reader over a stream positioned at `start` (a continuation step):
    /// its first line is numbered `start.line`, its offsets count from
    /// `start.offset`.
    pub fn resuming(inner: R, cap: usize, start: Start) -> Self {
        LineReader {
            inner,
            cap,
            number: start.line.saturating_sub(1),
            offset: start.offset,
        }
    }

    /// Where the next line starts: bytes of the (decoded) object before it
    /// and its number.
    pub fn position(&self) -> Start {
        Start {
            offset: self.offset,
            line: self.number + 1,
        }
    }

    /// Whether the stream has no byte left.
    pub async fn at_end(&mut self) -> io::Result<bool> {
        Ok(self.inner.fill_buf().await?.is_empty())
    }

    /// The next line, or `None` at the end.
    pub async fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut bytes = Vec::new();
        let mut len: u64 = 0;
        let mut any = false;
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                if !any {
                    return Ok(None);
                }
                break;
            }
            any = true;
            let (part, used, done) = match memchr::memchr(b'\n', available) {
                Some(i) => (&available[..i], i + 1, true),
                None => (available, available.len(), false),
            };
            len += part.len() as u64;
            let room = self.cap.saturating_sub(bytes.len());
            bytes.extend_from_slice(&part[..part.len().min(room)]);
            self.inner.consume(used);
            self.offset += used as u64;
            if done {
                break;
            }
        }
        if len == bytes.len() as u64 && bytes.last() == Some(&b'\r') {
            bytes.pop();
            len -= 1;
        }
        self.number += 1;
        if self.number == 1 && bytes.starts_with(b"\xEF\xBB\xBF") {
            bytes.drain(..3);
            len -= 3;
        }
        Ok(Some(Line {
            number: self.number,
            bytes,
            len,
        }))
    }
}

/// What became of an object's lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinesReport {
    /// Lines read, blank ones included.
    pub lines: u64,
    /// Lines SQS accepted.
    pub sent: u64,
    /// Lines dropped by `OVERSIZE_POLICY=drop`.
    pub dropped: u64,
    /// Lines the routing rules sent nowhere (done, not failed).
    pub skipped: Skipped,
    /// Empty lines, skipped (SQS takes no empty messages).
    pub blank: u64,
    /// Lines that did not reach SQS, or that the routing rules could not
    /// shape (`ShapeFailed`).
    pub failed: u64,
    /// The first few failures: line number and why.
    pub failures: Vec<(u64, Failure)>,
    /// Whether a failure was retryable (the event must be retried).
    pub retryable: bool,
    /// Set when reading stopped early: the last line read.
    pub stopped_after: Option<u64>,
    /// Set when the object could not be read to its end.
    pub read_error: Option<ReadError>,
    /// Set when the step stopped to hand the rest on: where the rest starts.
    pub handed_over: Option<Start>,
}

/// The stream broke off, or the data was not what it claimed to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// `InvalidGzip` or `ReadFailed`.
    pub code: &'static str,
    /// What the reader said.
    pub message: String,
    /// Whether reading again could succeed.
    pub retryable: bool,
}

impl LinesReport {
    /// Whether every line reached SQS (or was dropped by policy).
    pub fn complete(&self) -> bool {
        self.failed == 0 && self.read_error.is_none()
    }
}

/// Failures kept in a report; the rest are only counted.
const KEPT_FAILURES: usize = 5;

/// How lines are handed to the forwarder.
#[derive(Debug, Clone, Copy)]
pub struct Chunking {
    /// Most lines per `send_all`.
    pub lines: usize,
    /// Most bytes of lines per `send_all`.
    pub bytes: usize,
}

/// Where a line's message came from, and what the rules made of it.
#[derive(Debug, Clone, Copy)]
struct LinePosition {
    /// The line number.
    number: u64,
    /// The line's full length.
    len: u64,
    /// Routed to a target, skipped or at fault.
    ruled: Ruled,
}

/// Read every line and forward it where the router's rules say (without
/// rules: to its one queue). Reading stops early at a retryable failure
/// (the retried event forwards the rest) and at a chunk in which no line
/// handed to a queue got through (the queue is likely unusable); other
/// failures are counted and reading goes on, so that every line that can be
/// forwarded is.
///
/// A line longer than the largest message any target takes is cut by the
/// reader: the rules cannot read it whole, so they do not see it; it goes
/// to the default target as an oversize message, for `OVERSIZE_POLICY`.
pub async fn forward_lines<R, T>(
    reader: R,
    event: &ObjectEvent,
    router: &Router<T>,
    fifo: Fifo,
    chunking: Chunking,
    deadline: Option<Instant>,
) -> LinesReport
where
    R: AsyncBufRead + Unpin,
    T: Transport,
{
    let leg = Leg {
        start: Start::BEGINNING,
        hand_over: HandOver::NEVER,
    };
    forward_leg(reader, event, router, fifo, chunking, deadline, leg).await
}

/// Which part of an object one invocation reads: from `start`, until the
/// end or until `hand_over` is due.
#[derive(Debug, Clone, Copy)]
pub struct Leg {
    /// Where the stream given is positioned.
    pub start: Start,
    /// When to stop and hand the rest on.
    pub hand_over: HandOver,
}

/// [`forward_lines`] for one leg of a chain: the stream is at
/// `leg.start`; when `leg.hand_over` is due, the lines read so far are
/// sent, and if every one of them is settled and the object has more, the
/// report's `handed_over` says where the rest starts.
pub async fn forward_leg<R, T>(
    reader: R,
    event: &ObjectEvent,
    router: &Router<T>,
    fifo: Fifo,
    chunking: Chunking,
    deadline: Option<Instant>,
    leg: Leg,
) -> LinesReport
where
    R: AsyncBufRead + Unpin,
    T: Transport,
{
    let default = router.default_target();
    let largest = router
        .targets()
        .iter()
        .map(|f| f.settings().limits.largest_message())
        .max()
        .unwrap_or_else(|| default.settings().limits.largest_message());
    let cap = largest + 1;
    // A cut line goes to the default target with that queue's ids.
    let cut_fifo = Fifo {
        enabled: default.rules().fifo,
        ..fifo
    };
    let routes = router.routes();
    let mut reader = LineReader::resuming(reader, cap, leg.start);
    let mut report = LinesReport::default();
    let mut chunk = Vec::new();
    let mut chunk_bytes = 0usize;
    loop {
        if leg.hand_over.due(report.lines) {
            if !chunk.is_empty()
                && !send_chunk(router, std::mem::take(&mut chunk), deadline, &mut report).await
            {
                report.stopped_after = Some(reader.position().line - 1);
                return report;
            }
            if report.complete() {
                match reader.at_end().await {
                    Ok(true) => {}
                    Ok(false) => report.handed_over = Some(reader.position()),
                    Err(e) => report.read_error = Some(read_error(&e)),
                }
            }
            return report;
        }
        let line = match reader.next_line().await {
            Ok(line) => line,
            Err(e) => {
                report.read_error = Some(read_error(&e));
                break;
            }
        };
        let Some(line) = line else { break };
        report.lines += 1;
        if line.len == 0 {
            report.blank += 1;
            continue;
        }
        let cut = line.len > line.bytes.len() as u64;
        if cut && default.offloads() {
            // A cut line must not reach S3 (OVERSIZE_POLICY=offload) as if
            // it were whole: it fails here, as too large for lines mode.
            report.failed += 1;
            if report.failures.len() < KEPT_FAILURES {
                report.failures.push((
                    line.number,
                    Failure::permanent(
                        MESSAGE_TOO_LARGE,
                        format!(
                            "the line is {} bytes; lines mode reads at most {} bytes of a line (the queue's limit), also when offloading to S3",
                            line.len, largest
                        ),
                    ),
                ));
            }
            continue;
        }
        chunk_bytes += line.bytes.len();
        let (number, len) = (line.number, line.len);
        let item = if cut {
            let message = line_message(event, cut_fifo, number, line.bytes);
            Routed::To(
                0,
                message.map_position(|number| LinePosition {
                    number,
                    len,
                    ruled: Ruled::Target,
                }),
            )
        } else {
            let plan = plan(routes, event, &line.bytes);
            let ruled = Ruled::of(plan.as_ref());
            let message = line_message(event, fifo, number, line.bytes);
            router.route(
                plan,
                message.map_position(|number| LinePosition { number, len, ruled }),
            )
        };
        chunk.push(item);
        if chunk.len() >= chunking.lines || chunk_bytes >= chunking.bytes {
            let go_on = send_chunk(router, std::mem::take(&mut chunk), deadline, &mut report).await;
            chunk_bytes = 0;
            if !go_on {
                report.stopped_after = Some(reader.position().line - 1);
                return report;
            }
        }
    }
    if !chunk.is_empty() {
        send_chunk(router, chunk, deadline, &mut report).await;
    }
    report
}

fn read_error(e: &io::Error) -> ReadError {
    if e.kind() == io::ErrorKind::InvalidData {
        ReadError {
            code: "InvalidGzip",
            message: format!("the object is not valid gzip data: {e}"),
            retryable: false,
        }
    } else {
        ReadError {
            code: "ReadFailed",
            message: format!("reading the object failed: {e}"),
            retryable: true,
        }
    }
}

/// Send one chunk and tally it; `false` when reading should stop: a
/// retryable failure, or lines handed to a queue of which none got through.
/// Lines the rules skipped or could not shape say nothing of the queues.
async fn send_chunk<T: Transport>(
    router: &Router<T>,
    chunk: Vec<Routed<LinePosition>>,
    deadline: Option<Instant>,
    report: &mut LinesReport,
) -> bool {
    let outcomes = send_all(router, chunk, deadline).await;
    let mut got_through = false;
    let mut to_a_queue = false;
    let mut retryable = false;
    for o in outcomes {
        let position = o.position;
        match (o.outcome, position.ruled) {
            (Outcome::Dropped { .. }, Ruled::Skipped(reason)) => report.skipped.count(reason),
            (Outcome::Sent { .. }, _) => {
                report.sent += 1;
                got_through = true;
                to_a_queue = true;
            }
            (Outcome::Dropped { .. }, _) => {
                report.dropped += 1;
                got_through = true;
                to_a_queue = true;
            }
            (Outcome::Failed(mut failure), ruled) => {
                report.failed += 1;
                retryable |= failure.retryable;
                to_a_queue |= ruled == Ruled::Target;
                if failure.cause == sqs_forwarder::Cause::TooLarge {
                    failure.message =
                        format!("the line is {} bytes; {}", position.len, failure.message);
                }
                if report.failures.len() < KEPT_FAILURES {
                    report.failures.push((position.number, failure));
                }
            }
        }
    }
    report.retryable |= retryable;
    !retryable && (got_through || !to_a_queue)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod leg_tests;
