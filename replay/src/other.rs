//! Recognising on-failure records of sources this tool does not read, so
//! that they are named for what they are instead of reported as broken.
//!
//! The on-failure queue may hold records other functions or mappings wrote
//! to it (AWS Lambda developer guide: "Retaining records of stream
//! invocations" for Kinesis and DynamoDB, "Capturing discarded batches" for
//! Amazon MSK and self-managed Apache Kafka, "Capturing records of
//! asynchronous invocations"):
//!
//! * a DynamoDB stream's `DDBStreamBatchInfo` (`shardId`,
//!   `startSequenceNumber`, `endSequenceNumber`, `batchSize`, `streamArn`);
//! * a Kafka topic's `KafkaBatchInfo` (`eventSourceArn`, `bootstrapServers`,
//!   `batchSize`, and `recordInfo` with one `offset`, or `recordsInfo` with
//!   `firstRecordOffset`/`lastRecordOffset` per topic partition);
//! * any other `…BatchInfo` a future source may write;
//! * an asynchronous invocation record whose `requestPayload` is plainly
//!   not an S3 event (its records name another `eventSource`, such as
//!   `aws:sns`, or it is an EventBridge event from another `source`).
//!
//! Lambda writes no on-failure record for SQS, Amazon MQ or other polled
//! queues (they have their own dead-letter queues): a message moved here
//! from one of those is not an on-failure record at all, and is reported
//! unreadable.

use serde_json::Value;

/// An on-failure record of a source this tool does not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherSource {
    /// What the record is about, for the report line (`dynamodb stream
    /// <arn> <shard> <start>..<end> (batch of N) from <function>`).
    pub what: String,
    /// What it is and that it is not replayed.
    pub detail: String,
}

const READS: &str =
    "replay reads only Kinesis ranges (KinesisBatchInfo) and s3-to-sqs's S3 events; nothing sent";

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("?")
}

fn batch(v: &Value) -> String {
    v.get("batchSize")
        .and_then(Value::as_u64)
        .map(|n| format!(" (batch of {n})"))
        .unwrap_or_default()
}

/// ` from <function> (<condition>)`, from the record's `requestContext`.
fn origin(record: &Value) -> String {
    let Some(context) = record.get("requestContext") else {
        return String::new();
    };
    let mut s = String::new();
    if let Some(f) = context.get("functionArn").and_then(Value::as_str) {
        s.push_str(&format!(" from {f}"));
    }
    if let Some(c) = context.get("condition").and_then(Value::as_str) {
        s.push_str(&format!(" ({c})"));
    }
    s
}

/// The source `record` comes from, when it is one this tool does not read.
/// `KinesisBatchInfo` records and S3 events are not recognised here.
pub fn recognise(record: &Value) -> Option<OtherSource> {
    let object = record.as_object()?;
    if object.contains_key("KinesisBatchInfo") {
        return None;
    }
    if let Some(info) = record.get("DDBStreamBatchInfo") {
        return Some(OtherSource {
            what: format!(
                "dynamodb stream {} {} {}..{}{}{}",
                text(info, "streamArn"),
                text(info, "shardId"),
                text(info, "startSequenceNumber"),
                text(info, "endSequenceNumber"),
                batch(info),
                origin(record)
            ),
            detail: format!(
                "the on-failure record of a DynamoDB stream (DDBStreamBatchInfo): {READS}"
            ),
        });
    }
    if let Some(info) = record.get("KafkaBatchInfo") {
        let cluster = info
            .get("eventSourceArn")
            .or_else(|| info.get("bootstrapServers"))
            .and_then(Value::as_str)
            .unwrap_or("?");
        let mut records = String::new();
        if let Some(offset) = info.pointer("/recordInfo/offset").and_then(Value::as_str) {
            records.push_str(&format!(" offset {offset}"));
        }
        if let Some(parts) = info.get("recordsInfo").and_then(Value::as_object) {
            for (partition, r) in parts {
                records.push_str(&format!(
                    " {partition} offsets {}..{}",
                    text(r, "firstRecordOffset"),
                    text(r, "lastRecordOffset")
                ));
            }
        }
        return Some(OtherSource {
            what: format!("kafka {cluster}{records}{}{}", batch(info), origin(record)),
            detail: format!("the on-failure record of a Kafka topic (KafkaBatchInfo): {READS}"),
        });
    }
    if let Some(key) = object.keys().find(|k| k.ends_with("BatchInfo")) {
        return Some(OtherSource {
            what: format!("{key}{}", origin(record)),
            detail: format!("the on-failure record of an event source mapping ({key}): {READS}"),
        });
    }
    let payload = record.get("requestPayload")?;
    let source = payload_source(payload)?;
    let function = record
        .pointer("/requestContext/functionArn")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let condition = record
        .pointer("/requestContext/condition")
        .and_then(Value::as_str)
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    Some(OtherSource {
        what: format!("asynchronous invocation of {function}{condition}"),
        detail: format!("its requestPayload is {source}, not an S3 event: {READS}"),
    })
}

/// What an asynchronous invocation's event plainly is when it is not an S3
/// event (`an aws:sns event`, `an EventBridge event from aws.ec2`); `None`
/// when it may be one (s3-to-sqs's handler then decides).
fn payload_source(payload: &Value) -> Option<String> {
    if let Some(records) = payload.get("Records").and_then(Value::as_array) {
        let source = records.iter().find_map(|r| {
            r.get("eventSource")
                .or_else(|| r.get("EventSource"))
                .and_then(Value::as_str)
        })?;
        return (source != "aws:s3").then(|| format!("an {source} event"));
    }
    if payload.get("detail-type").is_some() {
        let source = payload.get("source").and_then(Value::as_str)?;
        return (source != "aws.s3").then(|| format!("an EventBridge event from {source}"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context() -> Value {
        json!({"functionArn": "arn:aws:lambda:us-east-2:123456789012:function:f", "condition": "RetryAttemptsExhausted"})
    }

    #[test]
    fn a_dynamodb_stream_record_is_named() {
        let record = json!({
            "requestContext": context(),
            "DDBStreamBatchInfo": {
                "shardId": "shardId-1", "startSequenceNumber": "8", "endSequenceNumber": "9",
                "batchSize": 2, "streamArn": "arn:aws:dynamodb:us-east-2:123456789012:table/t/stream/x"
            }
        });
        let o = recognise(&record).expect("recognised");
        assert_eq!(
            o.what,
            "dynamodb stream arn:aws:dynamodb:us-east-2:123456789012:table/t/stream/x shardId-1 8..9 (batch of 2) from arn:aws:lambda:us-east-2:123456789012:function:f (RetryAttemptsExhausted)"
        );
        assert!(o.detail.starts_with(
            "the on-failure record of a DynamoDB stream (DDBStreamBatchInfo): replay reads only"
        ));
    }

    #[test]
    fn kafka_records_of_both_documented_shapes_are_named() {
        let one = json!({"KafkaBatchInfo": {"batchSize": 1, "eventSourceArn": "arn:aws:kafka:r:1:cluster/c/x", "recordInfo": {"offset": "7"}}});
        assert_eq!(
            recognise(&one).expect("recognised").what,
            "kafka arn:aws:kafka:r:1:cluster/c/x offset 7 (batch of 1)"
        );
        let many = json!({"KafkaBatchInfo": {"bootstrapServers": "b-1:9098", "recordsInfo": {"Topic-0": {"firstRecordOffset": "3", "lastRecordOffset": "9"}}}});
        assert_eq!(
            recognise(&many).expect("recognised").what,
            "kafka b-1:9098 Topic-0 offsets 3..9"
        );
        let future = json!({"FooBatchInfo": {}});
        assert!(
            recognise(&future)
                .expect("recognised")
                .detail
                .contains("(FooBatchInfo)")
        );
    }

    #[test]
    fn only_plainly_other_events_are_taken_from_s3_to_sqs() {
        let record =
            |payload: Value| json!({"requestContext": context(), "requestPayload": payload});
        let sns = recognise(&record(json!({"Records": [{"EventSource": "aws:sns"}]})));
        assert!(
            sns.expect("recognised")
                .detail
                .starts_with("its requestPayload is an aws:sns event, not an S3 event")
        );
        let rule = recognise(&record(json!({"source": "aws.ec2", "detail-type": "x"})));
        assert!(
            rule.expect("recognised")
                .detail
                .contains("an EventBridge event from aws.ec2")
        );
        // S3 events, S3 through EventBridge, and anything unclear are left
        // to s3-to-sqs.
        for payload in [
            json!({"Records": [{"eventSource": "aws:s3"}]}),
            json!({"source": "aws.s3", "detail-type": "Object Created"}),
            json!({"Event": "s3:TestEvent"}),
            json!({"Records": []}),
        ] {
            assert_eq!(recognise(&record(payload.clone())), None, "{payload}");
        }
        assert_eq!(recognise(&json!({"KinesisBatchInfo": {}})), None);
        assert_eq!(recognise(&json!([1])), None);
    }
}
