//! Narrowing an entry to what is lost: once the records the stream still
//! had of a partly expired range were sent, the entry is replaced by one
//! that covers only the records the stream no longer has, so later runs
//! keep reporting the loss and send nothing again.
//!
//! The stream trims from the oldest end only, so what is lost of a range is
//! a prefix: from `startSequenceNumber` to just before the first record the
//! stream still had. The new entry is the original record, in Lambda's own
//! format, with `KinesisBatchInfo` narrowed to that prefix:
//!
//! * `endSequenceNumber`: the first record kept minus one (sequence numbers
//!   are not consecutive; no record lies between the two);
//! * `batchSize`: the batch's records less those sent;
//! * `approximateArrivalOfLastRecord`: the arrival of the first record
//!   kept, a bound the lost ones arrived at or before (dropped when Kinesis
//!   did not say);
//!
//! and a `replayNarrowed` object saying what was sent and what the original
//! range was (`sentRecords`, `sentFromSequenceNumber`,
//! `originalEndSequenceNumber`, `originalBatchSize`,
//! `originalApproximateArrivalOfLastRecord`, `narrowedAt`, `note`). Lambda
//! writes no such field; readers of the format ignore it, and a human sees
//! why the range is shorter than the batch was.
//!
//! The new entry is written before the original is deleted. A run that dies
//! between the two leaves both: the original is replayed again by the next
//! run (its surviving records are sent again, once more; a FIFO target drops
//! them within its five-minute deduplication window) and the loss is
//! reported twice. A run that dies before the write leaves the original
//! only, as if it had not run. Nothing is lost either way: at least once.

use std::time::SystemTime;

use aws_sdk_kinesis::primitives::{DateTime, DateTimeFormat};
use serde_json::{Value, json};
use sqs_forwarder::{QueueReader, call::receive::ReceiveError};

use crate::kinesis::FirstKept;

/// A Kinesis sequence number less one (`None` for `0`, or for what is not
/// a sequence number).
pub fn predecessor(seq: &str) -> Option<String> {
    if !crate::entry::valid_sequence_number(seq) || seq == "0" {
        return None;
    }
    let mut digits: Vec<u8> = seq.bytes().collect();
    for d in digits.iter_mut().rev() {
        if *d == b'0' {
            *d = b'9';
        } else {
            *d -= 1;
            break;
        }
    }
    let s = String::from_utf8(digits).ok()?;
    let trimmed = s.trim_start_matches('0');
    Some(if trimmed.is_empty() { "0" } else { trimmed }.to_owned())
}

/// An entry narrowed to what is lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Narrowed {
    /// The new entry's body.
    pub body: String,
    /// Its range, for the report: `<shard> <start>..<end> (batch of N)`.
    pub range: String,
}

fn iso(millis: i64) -> Option<String> {
    DateTime::from_millis(millis)
        .fmt(DateTimeFormat::DateTime)
        .ok()
}

/// `original` (an entry's body) narrowed to the records before `first_kept`,
/// once `sent` records from `first_kept` on were sent.
pub fn narrow(
    original: &str,
    first_kept: &FirstKept,
    sent: u64,
    now: SystemTime,
) -> Result<Narrowed, String> {
    let mut record: Value = serde_json::from_str(original).map_err(|e| e.to_string())?;
    let end = predecessor(&first_kept.sequence_number)
        .ok_or_else(|| format!("{} has no predecessor", first_kept.sequence_number))?;
    let info = record
        .get_mut("KinesisBatchInfo")
        .and_then(Value::as_object_mut)
        .ok_or("no KinesisBatchInfo object")?;
    let shard = info
        .get("shardId")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned();
    let start = info
        .get("startSequenceNumber")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned();
    let original_end = info.insert("endSequenceNumber".to_owned(), json!(end));
    let original_size = info.get("batchSize").and_then(Value::as_u64);
    let size = original_size.map(|n| n.saturating_sub(sent).max(1));
    if let Some(n) = size {
        info.insert("batchSize".to_owned(), json!(n));
    }
    let original_last = match first_kept.arrival_millis.and_then(iso) {
        Some(at) => info.insert("approximateArrivalOfLastRecord".to_owned(), json!(at)),
        None => info.remove("approximateArrivalOfLastRecord"),
    };
    let mut note = json!({
        "note": format!(
            "replay sent the {sent} records the stream still had of this batch, from sequence number {} on; this entry now covers only the records the stream no longer had",
            first_kept.sequence_number
        ),
        "sentRecords": sent,
        "sentFromSequenceNumber": first_kept.sequence_number,
    });
    if let Some(v) = original_end {
        note["originalEndSequenceNumber"] = v;
    }
    if let Some(n) = original_size {
        note["originalBatchSize"] = json!(n);
    }
    if let Some(v) = original_last {
        note["originalApproximateArrivalOfLastRecord"] = v;
    }
    if let Ok(at) = DateTime::from(now).fmt(DateTimeFormat::DateTime) {
        note["narrowedAt"] = json!(at);
    }
    record["replayNarrowed"] = note;
    Ok(Narrowed {
        body: record.to_string(),
        range: format!(
            "{shard} {start}..{end}{}",
            size.map(|n| format!(" (batch of {n})")).unwrap_or_default()
        ),
    })
}

/// Why an entry could not be replaced by its narrowed one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewriteError {
    /// The narrowed entry was not written; the original stays.
    #[error(
        "the narrowed entry could not be written ({0}); this one stays, and the next run sends what the stream still has of it again"
    )]
    NotWritten(ReceiveError),
    /// The narrowed entry was written but the original stays.
    #[error(
        "the narrowed entry was written, but this one could not be deleted ({0}); the next run sends what the stream still has of it again and reports the loss twice"
    )]
    NotDeleted(ReceiveError),
}

/// Put `narrowed` into `queue`, then delete the entry `receipt_handle`
/// took; the new entry's message id.
pub async fn rewrite(
    queue: &QueueReader,
    receipt_handle: &str,
    narrowed: &Narrowed,
) -> Result<String, (Option<String>, RewriteError)> {
    let id = queue
        .send(&narrowed.body)
        .await
        .map_err(|e| (None, RewriteError::NotWritten(e)))?;
    queue
        .delete(receipt_handle)
        .await
        .map_err(|e| (Some(id.clone()), RewriteError::NotDeleted(e)))?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{FailureEntry, parse};

    #[test]
    fn predecessors_are_decimal() {
        assert_eq!(predecessor("1").as_deref(), Some("0"));
        assert_eq!(predecessor("10").as_deref(), Some("9"));
        assert_eq!(predecessor("1000").as_deref(), Some("999"));
        assert_eq!(
            predecessor("49601189658422359378836298521827638475320189012309704722").as_deref(),
            Some("49601189658422359378836298521827638475320189012309704721")
        );
        assert_eq!(predecessor("0"), None);
        assert_eq!(predecessor("x"), None);
        let long = format!("1{}", "0".repeat(128));
        assert_eq!(predecessor(&long), Some("9".repeat(128)));
    }

    #[test]
    fn the_narrowed_entry_is_lambdas_format_and_covers_only_what_is_lost() {
        let sample = std::fs::read_to_string(format!(
            "{}/../events/replay-kinesis-batch-info.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("sample");
        let first = FirstKept {
            sequence_number: "49601189658422359378836298521827638475320189012309704800".into(),
            arrival_millis: Some(1_795_941_485_000),
        };
        let n = narrow(&sample, &first, 480, SystemTime::UNIX_EPOCH).expect("narrowed");
        assert_eq!(
            n.range,
            "shardId-000000000001 49601189658422359378836298521827638475320189012309704722..49601189658422359378836298521827638475320189012309704799 (batch of 20)"
        );
        let FailureEntry::Kinesis(r) = parse(&n.body).expect("still an entry replay reads") else {
            panic!("not Kinesis")
        };
        assert_eq!(
            r.end.as_deref(),
            Some("49601189658422359378836298521827638475320189012309704799")
        );
        assert_eq!((r.batch_size, r.sent_before), (Some(20), Some(480)));
        assert_eq!(r.condition.as_deref(), Some("RetryAttemptsExhausted"));
        let v: Value = serde_json::from_str(&n.body).expect("json");
        let info = &v["KinesisBatchInfo"];
        assert_eq!(
            info["approximateArrivalOfFirstRecord"],
            "2026-11-30T10:38:04.835Z"
        );
        assert_eq!(
            info["approximateArrivalOfLastRecord"],
            "2026-11-29T08:38:05Z"
        );
        let note = &v["replayNarrowed"];
        assert_eq!(
            note["originalEndSequenceNumber"],
            "49601189658422359378836298522902373528957594348623495186"
        );
        assert_eq!(note["originalBatchSize"], 500);
        assert_eq!(
            note["originalApproximateArrivalOfLastRecord"],
            "2026-11-30T10:38:05.580Z"
        );
        assert_eq!(note["narrowedAt"], "1970-01-01T00:00:00Z");
        assert_eq!(v["responseContext"]["functionError"], "Unhandled");
    }
}
