use super::*;
use crate::settings::{BodyFormat, GroupIdSource, RecordAttributes};
use aws_lambda_events::event::kinesis::KinesisEvent;
use base64::Engine as _;
use serde_json::{Value, json};
use sqs_forwarder::AttributeValue;

const ARN: &str = "arn:aws:kinesis:eu-west-1:123456789012:stream/orders";
const SEQ: &str = "49590338271490256608559692538361571095921575989136588898";

fn record(pk: &str, seq: &str, data: &[u8]) -> Value {
    json!({
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": pk,
            "sequenceNumber": seq,
            "data": base64::engine::general_purpose::STANDARD.encode(data),
            "approximateArrivalTimestamp": 1_700_000_000.25
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": format!("shardId-000000000003:{seq}"),
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": "arn:aws:iam::123456789012:role/fn",
        "awsRegion": "eu-west-1",
        "eventSourceARN": ARN
    })
}

fn records(values: Vec<Value>) -> Vec<KinesisEventRecord> {
    let event: KinesisEvent =
        serde_json::from_value(json!({ "Records": values })).expect("a Kinesis event");
    event.records
}

fn attr<'a>(m: &'a Message<Position>, name: &str) -> Option<&'a AttributeValue> {
    m.attributes
        .iter()
        .find(|a| a.name == name)
        .map(|a| &a.value)
}

#[test]
fn raw_body_moves_the_data_and_sets_every_attribute() {
    let p = prepare(
        records(vec![record("user-1", SEQ, b"{\"id\":1}")]),
        &Settings::default(),
        false,
    );
    assert_eq!(p.records.len(), 1);
    assert_eq!(p.records[0].sequence_number, SEQ);
    assert_eq!(p.records[0].messages, 1);
    let m = &p.messages[0];
    assert_eq!(m.body, Body::Bytes(b"{\"id\":1}".to_vec()));
    assert_eq!(
        m.position,
        Position {
            record: 0,
            sub_sequence: None
        }
    );
    assert_eq!(
        attr(m, attribute::PARTITION_KEY),
        Some(&AttributeValue::String("user-1".into()))
    );
    assert_eq!(
        attr(m, attribute::SHARD_ID),
        Some(&AttributeValue::String("shardId-000000000003".into()))
    );
    assert_eq!(
        attr(m, attribute::SEQUENCE_NUMBER),
        Some(&AttributeValue::String(SEQ.into()))
    );
    assert_eq!(attr(m, attribute::SUB_SEQUENCE_NUMBER), None);
    assert_eq!(
        attr(m, attribute::ARRIVAL_TIMESTAMP),
        Some(&AttributeValue::Number("1700000000".into()))
    );
    assert_eq!(
        attr(m, attribute::STREAM_ARN),
        Some(&AttributeValue::String(ARN.into()))
    );
    // Not FIFO: no group or deduplication id.
    assert_eq!(m.group_id, None);
    assert_eq!(m.deduplication_id, None);
}

#[test]
fn attributes_can_be_turned_off() {
    let settings = Settings {
        attributes: RecordAttributes::NONE,
        ..Settings::default()
    };
    let p = prepare(records(vec![record("k", SEQ, b"x")]), &settings, false);
    assert!(p.messages[0].attributes.is_empty());
    let settings = Settings {
        attributes: RecordAttributes {
            stream: true,
            ..RecordAttributes::NONE
        },
        ..Settings::default()
    };
    let p = prepare(records(vec![record("k", SEQ, b"x")]), &settings, false);
    let names: Vec<&str> = p.messages[0]
        .attributes
        .iter()
        .map(|a| a.name.as_ref())
        .collect();
    assert_eq!(names, vec![attribute::STREAM_ARN]);
}

#[test]
fn fifo_ids_come_from_the_record() {
    let p = prepare(
        records(vec![record("user-1", SEQ, b"x")]),
        &Settings::default(),
        true,
    );
    let m = &p.messages[0];
    assert_eq!(m.group_id.as_deref(), Some("user-1"));
    assert_eq!(
        m.deduplication_id.as_deref(),
        Some(format!("shardId-000000000003:{SEQ}").as_str())
    );
    let by_shard = Settings {
        group_id_source: GroupIdSource::ShardId,
        ..Settings::default()
    };
    let p = prepare(records(vec![record("user-1", SEQ, b"x")]), &by_shard, true);
    assert_eq!(
        p.messages[0].group_id.as_deref(),
        Some("shardId-000000000003")
    );
    let fixed = Settings {
        group_id_source: GroupIdSource::Fixed,
        ..Settings::default()
    };
    let p = prepare(records(vec![record("user-1", SEQ, b"x")]), &fixed, true);
    assert_eq!(p.messages[0].group_id, None);
    assert!(p.messages[0].deduplication_id.is_some());
}

#[test]
fn keys_sqs_refuses_as_ids_are_hashed_deterministically() {
    let long = "k".repeat(200);
    let ok = "order-42";
    assert_eq!(sqs_id(ok), ok);
    let h = sqs_id(&long);
    assert_eq!(h.len(), 36);
    assert!(h.starts_with("md5-"));
    assert_eq!(h, sqs_id(&long), "deterministic");
    assert_ne!(sqs_id("clé"), sqs_id("cle"));
    assert_ne!(sqs_id(""), "");
    // MD5("") is a well-known value.
    assert_eq!(sqs_id(""), "md5-d41d8cd98f00b204e9800998ecf8427e");
    let long_seq = "9".repeat(130);
    let d = deduplication_id(Some("shardId-000000000000"), &long_seq, Some(1)).expect("an id");
    assert!(d.starts_with("md5-") && d.len() <= 128);
    assert_eq!(deduplication_id(None, "", None), None);
    assert_eq!(
        deduplication_id(None, "12", Some(3)).as_deref(),
        Some("12:3")
    );
}

#[test]
fn kpl_aggregates_become_user_records() {
    let agg = kpl::aggregate(&[("a", b"one"), ("b", b"two"), ("a", b"three")]);
    let p = prepare(
        records(vec![
            record("agg-key", SEQ, &agg),
            record("plain", "2", b"plain"),
        ]),
        &Settings::default(),
        true,
    );
    assert_eq!(p.records[0].messages, 3);
    assert!(p.records[0].aggregated);
    assert_eq!(p.records[1].messages, 1);
    let got: Vec<(Position, Body, Option<String>, Option<String>)> = p
        .messages
        .iter()
        .map(|m| {
            (
                m.position,
                m.body.clone(),
                m.group_id.clone(),
                m.deduplication_id.clone(),
            )
        })
        .collect();
    let pos = |record, sub| Position {
        record,
        sub_sequence: sub,
    };
    let shard = "shardId-000000000003";
    assert_eq!(
        got,
        vec![
            (
                pos(0, Some(0)),
                Body::Bytes(b"one".to_vec()),
                Some("a".into()),
                Some(format!("{shard}:{SEQ}:0"))
            ),
            (
                pos(0, Some(1)),
                Body::Bytes(b"two".to_vec()),
                Some("b".into()),
                Some(format!("{shard}:{SEQ}:1"))
            ),
            (
                pos(0, Some(2)),
                Body::Bytes(b"three".to_vec()),
                Some("a".into()),
                Some(format!("{shard}:{SEQ}:2"))
            ),
            (
                pos(1, None),
                Body::Bytes(b"plain".to_vec()),
                Some("plain".into()),
                Some(format!("{shard}:2"))
            ),
        ]
    );
    assert_eq!(
        attr(&p.messages[1], attribute::PARTITION_KEY),
        Some(&AttributeValue::String("b".into()))
    );
    assert_eq!(
        attr(&p.messages[1], attribute::SUB_SEQUENCE_NUMBER),
        Some(&AttributeValue::Number("1".into()))
    );
}

#[test]
fn corrupt_aggregates_fail_their_record_only() {
    let mut agg = kpl::aggregate(&[("a", b"one")]);
    agg[7] ^= 0xFF;
    let p = prepare(
        records(vec![record("k", "1", &agg), record("k", "2", b"fine")]),
        &Settings::default(),
        false,
    );
    let f = p.records[0].failure.as_ref().expect("failed");
    assert_eq!(f.code, "KplChecksumMismatch");
    assert!(!f.retryable);
    assert_eq!(p.records[0].messages, 0);
    assert_eq!(p.messages.len(), 1);
    assert_eq!(p.messages[0].position.record, 1);
}

#[test]
fn deaggregation_can_be_turned_off() {
    let agg = kpl::aggregate(&[("a", b"one"), ("b", b"two")]);
    let settings = Settings {
        deaggregate: false,
        ..Settings::default()
    };
    let p = prepare(records(vec![record("k", "1", &agg)]), &settings, false);
    assert_eq!(p.messages.len(), 1);
    assert_eq!(p.messages[0].body, Body::Bytes(agg));
}

#[test]
fn envelope_carries_metadata_and_data() {
    let settings = Settings {
        body_format: BodyFormat::Envelope,
        ..Settings::default()
    };
    let p = prepare(
        records(vec![
            record("user-1", SEQ, "héllo \"world\"\n".as_bytes()),
            record("user-2", "7", &[0xFF, 0x00, 0x01]),
        ]),
        &settings,
        false,
    );
    let json = |m: &Message<Position>| -> Value {
        match &m.body {
            Body::Text(t) => serde_json::from_str(t).expect("JSON"),
            other => panic!("an envelope is text: {other:?}"),
        }
    };
    assert_eq!(
        json(&p.messages[0]),
        json!({
            "eventSourceARN": ARN,
            "eventID": format!("shardId-000000000003:{SEQ}"),
            "shardId": "shardId-000000000003",
            "partitionKey": "user-1",
            "sequenceNumber": SEQ,
            "approximateArrivalTimestamp": 1_700_000_000,
            "dataEncoding": "text",
            "data": "héllo \"world\"\n"
        })
    );
    let second = json(&p.messages[1]);
    assert_eq!(second["dataEncoding"], "base64");
    assert_eq!(second["data"], "/wAB");
    // Text SQS would refuse (U+FFFF) goes in base64 too.
    let p = prepare(
        records(vec![record("k", "1", "a\u{FFFF}".as_bytes())]),
        &settings,
        false,
    );
    assert_eq!(json(&p.messages[0])["dataEncoding"], "base64");
}

/// Why the arrival time is passed on in whole seconds: aws_lambda_events
/// 1.2 reads the digits after the point as milliseconds whatever their
/// number, so `.25` (250 ms) becomes 25 ms and `.5` becomes 5 ms. When
/// this test fails, the crate reads fractions right and the attribute
/// can carry milliseconds again.
#[test]
fn the_event_crate_misreads_fractions_of_a_second() {
    let r = records(vec![record("k", "1", b"x")]);
    let parsed = r[0].kinesis.approximate_arrival_timestamp.0;
    assert_eq!(parsed.timestamp(), 1_700_000_000);
    assert_eq!(
        parsed.timestamp_subsec_millis(),
        25,
        "read as 25 ms, sent as .25 s"
    );
}

#[test]
fn odd_partition_keys_do_not_fail_the_record() {
    let p = prepare(
        records(vec![record("a\u{1}b", "1", b"x")]),
        &Settings::default(),
        true,
    );
    let m = &p.messages[0];
    assert_eq!(
        attr(m, attribute::PARTITION_KEY),
        Some(&AttributeValue::Binary(b"a\x01b".to_vec()))
    );
    assert_eq!(m.group_id.as_deref(), Some(&*sqs_id("a\u{1}b")));
    assert!(m.group_id.as_deref().is_some_and(|g| g.starts_with("md5-")));
}

#[test]
fn after_the_deadline_what_is_left_is_one_position_per_record() {
    let seq = |i: u32| format!("4959033827149025660855969253836157109592157598913658{i:04}");
    let users = crate::kpl::aggregate(&[("a", b"1"), ("b", b"2"), ("c", b"3")]);
    let corrupt = [&crate::kpl::MAGIC[..], b"not an aggregate"].concat();
    let empty = crate::kpl::aggregate(&[]);
    let event = records(vec![
        record("p", &seq(0), b"plain"),
        record("p", &seq(1), &users),
        record("p", &seq(2), &corrupt),
        record("p", &seq(3), &empty),
        record("p", &seq(4), &users),
        record("p", &seq(5), b"plain"),
    ]);
    let settings = Settings::default();
    let infos = inspect(&event, &settings);
    let mut iter = messages(event, &infos, &settings, false, None);
    // The plain record and the first user record are handed over...
    let handed: Vec<Position> = iter.by_ref().take(2).map(|(_, m)| m.position).collect();
    assert_eq!(handed[1].sub_sequence, Some(0));
    // ...then the deadline: the aggregate being read once, the corrupt one
    // (failed already) and the one of no user record not at all, the
    // others once each, without their user records.
    let left: Vec<Position> = std::iter::from_fn(|| iter.next_left()).collect();
    let whole = |record| Position {
        record,
        sub_sequence: None,
    };
    assert_eq!(left, [whole(1), whole(4), whole(5)]);
    // An aggregate read to its end is not left.
    let event = records(vec![record("p", &seq(0), &users)]);
    let infos = inspect(&event, &settings);
    let mut iter = messages(event, &infos, &settings, false, None);
    assert_eq!(iter.by_ref().count(), 3);
    assert_eq!(iter.next_left(), None);
}
