//! The range reader against a scripted Kinesis (wiremock, the JSON protocol
//! aws-sdk-kinesis speaks), for what the local Kinesis (moto) does not do
//! as Kinesis does: a shard closed by a reshard keeps its records and ends
//! with no next iterator (moto moves the records to the children), pages
//! come back empty while the reader is behind, iterators expire, and a
//! start past retention is refused.

use std::sync::{Arc, Mutex};

use replay::entry::KinesisRange;
use replay::stream::{RangeReader, StreamError};
use serde_json::{Value, json};

const ARN: &str = "arn:aws:kinesis:us-east-1:123456789012:stream/orders";

/// A scripted answer: a JSON body, or an HTTP status and error code.
type Answer = Result<Value, (u16, &'static str)>;

/// A Kinesis that answers `GetShardIterator` with `iterator` (or `error`)
/// and `GetRecords` by the iterator asked for; keeps every request.
struct Script {
    iterator: Answer,
    pages: Vec<(&'static str, Answer)>,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
}

impl wiremock::Respond for Script {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let target = request
            .headers
            .get("x-amz-target")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        self.seen
            .lock()
            .expect("lock")
            .push((target.clone(), body.clone()));
        let answer = match target.as_str() {
            "Kinesis_20131202.GetShardIterator" => match &body["ShardIteratorType"] {
                t if t == "AFTER_SEQUENCE_NUMBER" => Ok(json!({"ShardIterator": "renewed"})),
                _ => self.iterator.clone(),
            },
            "Kinesis_20131202.GetRecords" => self
                .pages
                .iter()
                .find(|(it, _)| body["ShardIterator"] == *it)
                .map(|(_, page)| page.clone())
                .unwrap_or(Err((400, "UnexpectedIterator"))),
            _ => Err((400, "UnexpectedCall")),
        };
        match answer {
            Ok(v) => wiremock::ResponseTemplate::new(200)
                .set_body_raw(v.to_string(), "application/x-amz-json-1.1"),
            Err((status, code)) => wiremock::ResponseTemplate::new(status).set_body_raw(
                json!({"__type": code, "message": format!("scripted {code}")}).to_string(),
                "application/x-amz-json-1.1",
            ),
        }
    }
}

fn record(seq: &str) -> Value {
    json!({
        "SequenceNumber": seq,
        "ApproximateArrivalTimestamp": 1_764_410_002.125,
        "Data": "cmVjb3Jk",
        "PartitionKey": "p",
    })
}

async fn reader(
    script: Script,
    range: KinesisRange,
) -> (wiremock::MockServer, Result<RangeReader, StreamError>) {
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(script)
        .mount(&server)
        .await;
    let conf = aws_sdk_kinesis::Config::builder()
        .behavior_version(aws_sdk_kinesis::config::BehaviorVersion::latest())
        .region(aws_sdk_kinesis::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_kinesis::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .endpoint_url(server.uri())
        .build();
    let r = RangeReader::open(aws_sdk_kinesis::Client::from_conf(conf), range, 100).await;
    (server, r)
}

fn range(start: &str, end: Option<&str>, size: Option<u64>) -> KinesisRange {
    KinesisRange {
        stream_arn: ARN.to_owned(),
        shard_id: "shardId-000000000000".to_owned(),
        start: start.to_owned(),
        end: end.map(str::to_owned),
        batch_size: size,
        condition: None,
        sent_before: None,
    }
}

async fn read_all(reader: &mut RangeReader) -> Result<Vec<Vec<String>>, StreamError> {
    let mut pages = Vec::new();
    while let Some(page) = reader.next().await? {
        pages.push(page.into_iter().map(|r| r.sequence_number).collect());
    }
    Ok(pages)
}

fn calls(seen: &Arc<Mutex<Vec<(String, Value)>>>) -> Vec<String> {
    seen.lock()
        .expect("lock")
        .iter()
        .map(|(t, b)| {
            let op = t.trim_start_matches("Kinesis_20131202.");
            match op {
                "GetRecords" => format!("GetRecords {}", b["ShardIterator"].as_str().unwrap_or("")),
                _ => format!(
                    "{op} {} {}",
                    b["ShardIteratorType"].as_str().unwrap_or(""),
                    b["StartingSequenceNumber"].as_str().unwrap_or("")
                ),
            }
        })
        .collect()
}

#[tokio::test]
async fn a_shard_closed_by_a_reshard_is_read_to_its_end_and_no_further() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let script = Script {
        iterator: Ok(json!({"ShardIterator": "it-1"})),
        pages: vec![
            (
                "it-1",
                Ok(
                    json!({"Records": [record("11"), record("12")], "NextShardIterator": "it-2", "MillisBehindLatest": 5000}),
                ),
            ),
            // Behind the tip, nothing in this page: read on.
            (
                "it-2",
                Ok(json!({"Records": [], "NextShardIterator": "it-3", "MillisBehindLatest": 5000})),
            ),
            // The shard's last records: no next iterator, it is closed.
            (
                "it-3",
                Ok(json!({"Records": [record("13")], "MillisBehindLatest": 0})),
            ),
        ],
        seen: seen.clone(),
    };
    // No end sequence number: bounded by the batch size (more than the
    // shard still had) and by the shard's end.
    let (_server, reader) = reader(script, range("11", None, Some(10))).await;
    let mut reader = reader.expect("open");
    let pages = read_all(&mut reader).await.expect("read");
    assert_eq!(pages, [vec!["11", "12"], vec!["13"]]);
    assert_eq!(reader.found(), 3);
    assert_eq!(reader.lost(), None, "the start was there");
    assert_eq!(
        calls(&seen),
        [
            "GetShardIterator AT_SEQUENCE_NUMBER 11",
            "GetRecords it-1",
            "GetRecords it-2",
            "GetRecords it-3"
        ]
    );
}

#[tokio::test]
async fn an_expired_iterator_is_renewed_after_the_last_record_read() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let script = Script {
        iterator: Ok(json!({"ShardIterator": "it-1"})),
        pages: vec![
            (
                "it-1",
                Ok(
                    json!({"Records": [record("11"), record("12")], "NextShardIterator": "it-2", "MillisBehindLatest": 5000}),
                ),
            ),
            ("it-2", Err((400, "ExpiredIteratorException"))),
            (
                "renewed",
                Ok(
                    json!({"Records": [record("13"), record("14")], "NextShardIterator": "it-4", "MillisBehindLatest": 0}),
                ),
            ),
        ],
        seen: seen.clone(),
    };
    let (_server, reader) = reader(script, range("11", Some("13"), Some(3))).await;
    let mut reader = reader.expect("open");
    let pages = read_all(&mut reader).await.expect("read");
    assert_eq!(
        pages,
        [vec!["11", "12"], vec!["13"]],
        "14 is after the range"
    );
    assert_eq!(
        calls(&seen),
        [
            "GetShardIterator AT_SEQUENCE_NUMBER 11",
            "GetRecords it-1",
            "GetRecords it-2",
            "GetShardIterator AFTER_SEQUENCE_NUMBER 12",
            "GetRecords renewed"
        ]
    );
}

#[tokio::test]
async fn a_trimmed_start_is_named_with_what_is_lost() {
    let script = Script {
        iterator: Ok(json!({"ShardIterator": "it-1"})),
        pages: vec![(
            "it-1",
            Ok(
                json!({"Records": [record("19"), record("20"), record("21")], "NextShardIterator": "it-2", "MillisBehindLatest": 0}),
            ),
        )],
        seen: Arc::default(),
    };
    let (_server, reader) = reader(script, range("15", Some("20"), Some(4))).await;
    let mut reader = reader.expect("open");
    let pages = read_all(&mut reader).await.expect("read");
    assert_eq!(pages, [vec!["19", "20"]]);
    assert_eq!(
        reader.lost().as_deref(),
        Some(
            "the stream no longer has the records of shardId-000000000000 from 15 to before 19 (trimmed: past the retention period); 2 of the batch's 4 records are lost"
        )
    );
}

#[tokio::test]
async fn a_start_kinesis_refuses_or_a_missing_shard_is_gone_and_access_denied_is_a_failure() {
    for (code, gone) in [
        ("InvalidArgumentException", true),
        ("ResourceNotFoundException", true),
        ("AccessDeniedException", false),
    ] {
        let script = Script {
            iterator: Err((400, code)),
            pages: vec![],
            seen: Arc::default(),
        };
        let (_server, r) = reader(script, range("15", Some("20"), Some(4))).await;
        match (r, gone) {
            (Err(StreamError::Gone(why)), true) => {
                assert!(why.contains("shardId-000000000000"), "{why}");
                assert!(why.contains(&format!("scripted {code}")), "{why}");
            }
            (
                Err(StreamError::Failed {
                    action, code: c, ..
                }),
                false,
            ) => {
                assert_eq!((action, c.as_str()), ("GetShardIterator", code));
            }
            (other, _) => panic!("{code}: {other:?}"),
        }
    }
}
