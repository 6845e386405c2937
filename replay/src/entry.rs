//! Reading one on-failure entry: what Lambda wrote when it gave up.
//!
//! Two shapes arrive in the template's on-failure queue (AWS Lambda
//! developer guide: "Retaining records of stream invocations" and
//! "Capturing records of asynchronous invocations"):
//!
//! * from the Kinesis event source mapping of kinesis-to-sqs, metadata only:
//!   `KinesisBatchInfo` with `shardId`, `startSequenceNumber`,
//!   `endSequenceNumber`, `batchSize`, `streamArn` and the arrival times of
//!   the first and last record; the records stay in the stream;
//! * from the asynchronous invocation of s3-to-sqs, the invocation record:
//!   `requestContext` (`condition`: `RetriesExhausted` or
//!   `EventAgeExceeded`), and `requestPayload`, the original event.
//!
//! `events/replay-kinesis-batch-info.json` and
//! `events/replay-s3-invocation-record.json` are samples of each. Records of
//! other sources are named by [`crate::other`]. A Kinesis entry this tool
//! narrowed to what the stream no longer had ([`crate::narrow`]) is one of
//! these too, with a `replayNarrowed` note.

use std::cmp::Ordering;

use serde::Deserialize;
use serde_json::Value;

use crate::other::OtherSource;

/// A Kinesis range Lambda gave up on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KinesisRange {
    /// The stream's ARN.
    pub stream_arn: String,
    /// The shard the batch came from (a batch never spans shards).
    pub shard_id: String,
    /// The first record's sequence number.
    pub start: String,
    /// The last record's sequence number, when Lambda gave one.
    pub end: Option<String>,
    /// How many records the batch had, when Lambda said.
    pub batch_size: Option<u64>,
    /// Why Lambda gave up (`RetryAttemptsExhausted`, `RecordAgeExceeded`, ...).
    pub condition: Option<String>,
    /// When an earlier replay narrowed the entry to what the stream no
    /// longer had: how many records it sent.
    pub sent_before: Option<u64>,
}

impl KinesisRange {
    /// The stream's region, from its ARN.
    pub fn region(&self) -> &str {
        self.stream_arn.split(':').nth(3).unwrap_or_default()
    }

    /// `start..end` for reports.
    pub fn describe(&self) -> String {
        format!(
            "{} {} {}..{}",
            self.stream_arn,
            self.shard_id,
            self.start,
            self.end.as_deref().unwrap_or("?")
        )
    }

    /// ` (batch of N; an earlier replay sent ...)` for reports.
    pub fn batch(&self) -> String {
        let mut parts = Vec::new();
        if let Some(n) = self.batch_size {
            parts.push(format!("batch of {n}"));
        }
        if let Some(n) = self.sent_before {
            parts.push(format!(
                "an earlier replay sent the {n} records the stream still had"
            ));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join("; "))
        }
    }
}

/// An S3 event Lambda gave up on.
#[derive(Debug, Clone, PartialEq)]
pub struct S3Event {
    /// The original event, as s3-to-sqs received it.
    pub payload: Value,
    /// The function that failed.
    pub function_arn: Option<String>,
    /// Why Lambda gave up.
    pub condition: Option<String>,
}

/// One on-failure entry.
#[derive(Debug, Clone, PartialEq)]
pub enum FailureEntry {
    /// A Kinesis range.
    Kinesis(KinesisRange),
    /// An S3 event.
    S3(S3Event),
}

/// An entry this tool cannot replay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// Not JSON, or not one of the two shapes.
    #[error("not an on-failure record of kinesis-to-sqs or s3-to-sqs: {0}")]
    Unknown(String),
    /// A field has a value Lambda does not write.
    #[error("{field}: {problem}")]
    Field {
        /// The field (`KinesisBatchInfo.startSequenceNumber`, ...).
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// An on-failure record of a source this tool does not read.
    #[error("{}: {}", .0.what, .0.detail)]
    OtherSource(OtherSource),
    /// An asynchronous invocation record without the event (Lambda leaves
    /// it out when the record would be too large for the destination).
    #[error(
        "the invocation record has no requestPayload (Lambda leaves it out when the record is too large for the queue): the event cannot be replayed from it"
    )]
    NoPayload,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestContext {
    #[serde(default)]
    function_arn: Option<String>,
    #[serde(default)]
    condition: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BatchInfo {
    shard_id: String,
    start_sequence_number: String,
    #[serde(default)]
    end_sequence_number: Option<String>,
    #[serde(default)]
    batch_size: Option<u64>,
    stream_arn: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Narrowed {
    #[serde(default)]
    sent_records: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    #[serde(default)]
    request_context: Option<RequestContext>,
    #[serde(rename = "KinesisBatchInfo", default)]
    kinesis_batch_info: Option<BatchInfo>,
    #[serde(default)]
    request_payload: Option<Value>,
    #[serde(default)]
    replay_narrowed: Option<Narrowed>,
}

/// Read an entry's body.
pub fn parse(body: &str) -> Result<FailureEntry, EntryError> {
    let value: Value =
        serde_json::from_str(body).map_err(|e| EntryError::Unknown(e.to_string()))?;
    if let Some(other) = crate::other::recognise(&value) {
        return Err(EntryError::OtherSource(other));
    }
    let record: Record =
        serde_json::from_value(value).map_err(|e| EntryError::Unknown(e.to_string()))?;
    let context = record.request_context;
    let condition = context.as_ref().and_then(|c| c.condition.clone());
    if let Some(info) = record.kinesis_batch_info {
        let sent_before = record.replay_narrowed.and_then(|n| n.sent_records);
        return kinesis(info, condition).map(|range| {
            FailureEntry::Kinesis(KinesisRange {
                sent_before,
                ..range
            })
        });
    }
    if context.is_some() {
        return match record.request_payload {
            Some(Value::Null) | None => Err(EntryError::NoPayload),
            Some(payload) => Ok(FailureEntry::S3(S3Event {
                payload,
                function_arn: context.and_then(|c| c.function_arn),
                condition,
            })),
        };
    }
    Err(EntryError::Unknown(
        "neither KinesisBatchInfo nor requestContext".to_owned(),
    ))
}

fn kinesis(info: BatchInfo, condition: Option<String>) -> Result<KinesisRange, EntryError> {
    let field = |field, problem: &str| EntryError::Field {
        field,
        problem: problem.to_owned(),
    };
    if !valid_sequence_number(&info.start_sequence_number) {
        return Err(field(
            "KinesisBatchInfo.startSequenceNumber",
            "a Kinesis sequence number (digits, 0|[1-9][0-9]{0,128})",
        ));
    }
    if info.end_sequence_number.is_none() && info.batch_size.is_none() {
        return Err(field(
            "KinesisBatchInfo.endSequenceNumber",
            "missing, and no batchSize to bound the range either",
        ));
    }
    if let Some(end) = &info.end_sequence_number {
        if !valid_sequence_number(end) {
            return Err(field(
                "KinesisBatchInfo.endSequenceNumber",
                "a Kinesis sequence number (digits, 0|[1-9][0-9]{0,128})",
            ));
        }
        if compare(end, &info.start_sequence_number) == Ordering::Less {
            return Err(field(
                "KinesisBatchInfo.endSequenceNumber",
                "before startSequenceNumber",
            ));
        }
    }
    let shard_ok = (1..=128).contains(&info.shard_id.len())
        && info
            .shard_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if !shard_ok {
        return Err(field(
            "KinesisBatchInfo.shardId",
            "a shard id ([a-zA-Z0-9_.-]{1,128})",
        ));
    }
    let parts: Vec<&str> = info.stream_arn.splitn(6, ':').collect();
    let arn_ok = parts.len() == 6
        && parts[0] == "arn"
        && parts[1].starts_with("aws")
        && parts[2] == "kinesis"
        && !parts[3].is_empty()
        && parts[4].len() == 12
        && parts[4].bytes().all(|b| b.is_ascii_digit())
        && parts[5]
            .strip_prefix("stream/")
            .is_some_and(|n| !n.is_empty());
    if !arn_ok {
        return Err(field(
            "KinesisBatchInfo.streamArn",
            "a stream ARN (arn:aws:kinesis:<region>:<account>:stream/<name>)",
        ));
    }
    Ok(KinesisRange {
        stream_arn: info.stream_arn,
        shard_id: info.shard_id,
        start: info.start_sequence_number,
        end: info.end_sequence_number,
        batch_size: info.batch_size,
        condition,
        sent_before: None,
    })
}

/// Whether `s` is a Kinesis sequence number: `0|([1-9]\d{0,128})`.
pub fn valid_sequence_number(s: &str) -> bool {
    s == "0"
        || (!s.is_empty()
            && s.len() <= 129
            && !s.starts_with('0')
            && s.bytes().all(|b| b.is_ascii_digit()))
}

/// Compare two sequence numbers as the integers they are (more digits than
/// any machine integer holds).
pub fn compare(a: &str, b: &str) -> Ordering {
    let a = a.trim_start_matches('0');
    let b = b.trim_start_matches('0');
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> String {
        let path = format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(path).expect("sample")
    }

    #[test]
    fn reads_the_kinesis_sample() {
        let entry = parse(&sample("replay-kinesis-batch-info.json")).expect("valid");
        let FailureEntry::Kinesis(r) = entry else {
            panic!("not Kinesis: {entry:?}")
        };
        assert_eq!(r.shard_id, "shardId-000000000001");
        assert_eq!(
            r.start,
            "49601189658422359378836298521827638475320189012309704722"
        );
        assert_eq!(
            r.end.as_deref(),
            Some("49601189658422359378836298522902373528957594348623495186")
        );
        assert_eq!(r.batch_size, Some(500));
        assert_eq!(r.region(), "us-east-2");
        assert_eq!(r.condition.as_deref(), Some("RetryAttemptsExhausted"));
    }

    #[test]
    fn reads_the_s3_sample() {
        let entry = parse(&sample("replay-s3-invocation-record.json")).expect("valid");
        let FailureEntry::S3(e) = entry else {
            panic!("not S3: {entry:?}")
        };
        assert_eq!(e.condition.as_deref(), Some("RetriesExhausted"));
        assert_eq!(e.payload["Records"][0]["eventSource"], "aws:s3");
        assert!(e.function_arn.is_some_and(|a| a.contains(":function:")));
    }

    #[test]
    fn either_end_or_size_bounds_the_range() {
        let body = r#"{"KinesisBatchInfo":{"shardId":"shardId-000000000000","startSequenceNumber":"7","batchSize":3,"streamArn":"arn:aws:kinesis:eu-west-1:123456789012:stream/s"}}"#;
        let FailureEntry::Kinesis(r) = parse(body).expect("valid") else {
            panic!("not Kinesis")
        };
        assert_eq!((r.end, r.batch_size, r.condition), (None, Some(3), None));
        let body = r#"{"KinesisBatchInfo":{"shardId":"shardId-000000000000","startSequenceNumber":"7","streamArn":"arn:aws:kinesis:eu-west-1:123456789012:stream/s"}}"#;
        assert!(matches!(
            parse(body),
            Err(EntryError::Field {
                field: "KinesisBatchInfo.endSequenceNumber",
                ..
            })
        ));
    }

    #[test]
    fn bad_entries_say_what_is_wrong() {
        let info = |shard: &str, start: &str, end: &str, arn: &str| {
            format!(
                r#"{{"KinesisBatchInfo":{{"shardId":"{shard}","startSequenceNumber":"{start}","endSequenceNumber":"{end}","streamArn":"{arn}"}}}}"#
            )
        };
        let arn = "arn:aws:kinesis:eu-west-1:123456789012:stream/s";
        let cases = [
            (
                info("s", "01", "2", arn),
                "KinesisBatchInfo.startSequenceNumber",
            ),
            (
                info("s", "1", "x", arn),
                "KinesisBatchInfo.endSequenceNumber",
            ),
            (
                info("s", "10", "9", arn),
                "KinesisBatchInfo.endSequenceNumber",
            ),
            (info("a/b", "1", "2", arn), "KinesisBatchInfo.shardId"),
            (
                info("s", "1", "2", "arn:aws:sqs:eu-west-1:123456789012:q"),
                "KinesisBatchInfo.streamArn",
            ),
            (
                info("s", "1", "2", "arn:aws:kinesis:eu-west-1:12:stream/s"),
                "KinesisBatchInfo.streamArn",
            ),
        ];
        for (body, want) in cases {
            match parse(&body) {
                Err(EntryError::Field { field, .. }) => assert_eq!(field, want, "{body}"),
                other => panic!("{body}: {other:?}"),
            }
        }
        assert!(matches!(parse("not json"), Err(EntryError::Unknown(_))));
        assert!(matches!(parse(r#"{"a":1}"#), Err(EntryError::Unknown(_))));
        assert!(matches!(parse("[1]"), Err(EntryError::Unknown(_))));
        assert_eq!(
            parse(r#"{"requestContext":{"condition":"RetriesExhausted"}}"#),
            Err(EntryError::NoPayload)
        );
    }

    #[test]
    fn other_sources_are_named_not_taken_for_a_missing_payload() {
        let body = r#"{"requestContext":{"condition":"RetryAttemptsExhausted"},"DDBStreamBatchInfo":{"shardId":"s","startSequenceNumber":"1","endSequenceNumber":"2","batchSize":2,"streamArn":"arn:aws:dynamodb:r:123456789012:table/t/stream/x"}}"#;
        match parse(body) {
            Err(EntryError::OtherSource(o)) => {
                assert!(
                    o.what.starts_with("dynamodb stream arn:aws:dynamodb:"),
                    "{o:?}"
                );
                assert!(
                    o.detail.contains("DynamoDB stream (DDBStreamBatchInfo)"),
                    "{o:?}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_narrowed_entry_says_what_was_sent_before() {
        let body = r#"{"KinesisBatchInfo":{"shardId":"shardId-000000000000","startSequenceNumber":"7","endSequenceNumber":"9","batchSize":3,"streamArn":"arn:aws:kinesis:eu-west-1:123456789012:stream/s"},"replayNarrowed":{"sentRecords":12}}"#;
        let FailureEntry::Kinesis(r) = parse(body).expect("valid") else {
            panic!("not Kinesis")
        };
        assert_eq!(r.sent_before, Some(12));
        assert_eq!(
            r.batch(),
            " (batch of 3; an earlier replay sent the 12 records the stream still had)"
        );
    }

    #[test]
    fn sequence_numbers_compare_as_integers() {
        assert_eq!(compare("9", "10"), Ordering::Less);
        assert_eq!(compare("100", "99"), Ordering::Greater);
        assert_eq!(compare("4960", "4960"), Ordering::Equal);
        let long = "4".repeat(129);
        assert!(valid_sequence_number(&long));
        assert!(!valid_sequence_number(&"4".repeat(130)));
        assert!(valid_sequence_number("0"));
        assert!(!valid_sequence_number(""));
        assert!(!valid_sequence_number("-1"));
    }
}
