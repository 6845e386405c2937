//! Replaying a Kinesis range: the records read back from the stream go
//! through kinesis-to-sqs's own [`kinesis_to_sqs::Handler`], page by page, as
//! Lambda would have delivered them, so bodies, attributes, KPL
//! de-aggregation, FIFO group and deduplication ids and the routing rules
//! (filter, routes, shaping, each target's ids) are the function's (a FIFO
//! target drops what already arrived within its five-minute deduplication
//! window). A record the function could not send is named with its
//! failure (a record the rules cannot shape: `ShapeFailed`).

use base64::Engine as _;
use kinesis_to_sqs::checkpoint::RecordOutcome;
use kinesis_to_sqs::event::KinesisEvent;
use serde_json::{Value, json};
use sqs_forwarder::Transport;

use crate::entry::KinesisRange;
use crate::stream::{RangeReader, StreamError, StreamRecord};

/// What replaying one range did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeOutcome {
    /// Records read from the stream.
    pub read: u64,
    /// Records kinesis-to-sqs reported sent (or left out by its own
    /// `PERMANENT_FAILURES=skip`).
    pub sent: u64,
    /// Messages of the records sent that went nowhere: left out by the
    /// routing rules (filtered out, unmatched under `"unmatched": "drop"`)
    /// or dropped by `OVERSIZE_POLICY=drop`, as the function would.
    pub dropped: u64,
    /// Records not sent: the count and the first one's sequence number.
    pub unsent: Option<(u64, String)>,
    /// Why the first record not sent was not (its failure's code and
    /// message, as kinesis-to-sqs has it: `ShapeFailed: body "/payload":
    /// ...`), when known.
    pub reason: Option<String>,
    /// What the stream no longer has, said loudly.
    pub lost: Option<String>,
    /// Reading stopped on an error a later run may not meet.
    pub error: Option<String>,
    /// When the stream trimmed the range's start: the first record it still
    /// had (the records before it are the ones lost).
    pub first_kept: Option<FirstKept>,
}

/// The first record the stream still had of a range whose start it trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstKept {
    /// Its sequence number.
    pub sequence_number: String,
    /// When it arrived, in milliseconds since the epoch, when Kinesis said.
    pub arrival_millis: Option<i64>,
}

impl RangeOutcome {
    /// Every record of the range reached the queue.
    pub fn complete(&self) -> bool {
        self.unsent.is_none() && self.lost.is_none() && self.error.is_none()
    }
}

/// The Lambda event for `records` of `range`, with every field Lambda fills
/// for a Kinesis record (`eventID` is `<shardId>:<sequenceNumber>`).
pub fn event(range: &KinesisRange, records: &[StreamRecord]) -> Result<KinesisEvent, String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let records: Vec<Value> = records
        .iter()
        .map(|r| {
            let mut kinesis = json!({
                "kinesisSchemaVersion": "1.0",
                "partitionKey": r.partition_key,
                "sequenceNumber": r.sequence_number,
                "data": b64.encode(&r.data),
                "approximateArrivalTimestamp": r.arrival.unwrap_or(0.0),
            });
            if let Some(e) = &r.encryption {
                kinesis["encryptionType"] = json!(e);
            }
            json!({
                "kinesis": kinesis,
                "eventSource": "aws:kinesis",
                "eventVersion": "1.0",
                "eventID": format!("{}:{}", range.shard_id, r.sequence_number),
                "eventName": "aws:kinesis:record",
                "awsRegion": range.region(),
                "eventSourceARN": range.stream_arn,
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).map_err(|e| e.to_string())
}

/// Read `range` page by page and forward each page with kinesis-to-sqs.
/// Stops at the first page with records not sent, as Lambda's checkpoint
/// would: later records wait for the next run. `progress` hears the records
/// sent after each page.
pub async fn replay<T: Transport>(
    handler: &kinesis_to_sqs::Handler<T>,
    mut reader: RangeReader,
    mut progress: impl FnMut(u64),
) -> RangeOutcome {
    let mut outcome = RangeOutcome::default();
    let mut first_read: Option<FirstKept> = None;
    loop {
        let page = match reader.next().await {
            Ok(Some(page)) => page,
            Ok(None) => break,
            Err(StreamError::Gone(why)) => {
                outcome.lost = Some(why);
                break;
            }
            Err(e) => {
                outcome.error = Some(e.to_string());
                break;
            }
        };
        if first_read.is_none() {
            first_read = page.first().map(|r| FirstKept {
                sequence_number: r.sequence_number.clone(),
                arrival_millis: r.arrival.map(|secs| (secs * 1000.0).round() as i64),
            });
        }
        let n = page.len() as u64;
        outcome.read += n;
        let first_seq = page
            .first()
            .map(|r| r.sequence_number.clone())
            .unwrap_or_default();
        let event = match event(reader.range(), &page) {
            Ok(e) => e,
            Err(e) => {
                outcome.error = Some(format!("cannot build the event: {e}"));
                break;
            }
        };
        let handled = handler.handle_for(event, None).await;
        outcome.dropped += handled.messages.dropped as u64;
        match handled.answer {
            Ok(answer) if answer.batch_item_failures.is_empty() => {
                outcome.sent += n;
                progress(n);
                tracing::info!(
                    shard = %reader.range().shard_id,
                    from = %first_seq,
                    records = n,
                    "page sent"
                );
            }
            Ok(answer) => {
                let failed = answer.batch_item_failures.len() as u64;
                let first = answer
                    .batch_item_failures
                    .first()
                    .and_then(|f| f.item_identifier.clone())
                    .unwrap_or(first_seq);
                // The records not listed were sent.
                let sent = n.saturating_sub(failed);
                outcome.sent += sent;
                progress(sent);
                outcome.reason = page
                    .iter()
                    .zip(&handled.records)
                    .find(|(r, _)| r.sequence_number == first)
                    .and_then(|(_, o)| match o {
                        RecordOutcome::Failed(f) => Some(format!("{}: {}", f.code, f.message)),
                        RecordOutcome::Done => None,
                    });
                outcome.unsent = Some((failed, first));
                break;
            }
            Err(e) => {
                outcome.unsent = Some((n, first_seq));
                outcome.error = Some(e.to_string());
                break;
            }
        }
    }
    // Whether the range's start is gone is known once anything was read, or
    // once the range was read to its end with nothing found.
    let read_through = outcome.error.is_none() && outcome.unsent.is_none();
    if outcome.lost.is_none() && (outcome.read > 0 || read_through) {
        outcome.lost = reader.lost();
        // Records read and some lost: the stream trimmed the start.
        if outcome.lost.is_some() && reader.found() > 0 {
            outcome.first_kept = first_read;
        }
    }
    outcome
}
