//! From Kinesis records to messages.
//!
//! Each record becomes one message, or one per user record when it is a KPL
//! aggregate ([`crate::kpl`]). Records are consumed as they are turned into
//! messages: a record's data moves into its message's body (raw format) and
//! is never copied on the way.
//!
//! * **Body.** `raw`: the data as it is; the shared crate sends valid SQS
//!   text untouched and handles anything else per `BODY_ENCODING` (base64 and
//!   a marker attribute by default). `envelope`: a JSON object with the
//!   record's metadata and its data, as text when the data is valid SQS text
//!   (`"dataEncoding": "text"`), else base64 (`"dataEncoding": "base64"`).
//! * **Attributes** (`RECORD_ATTRIBUTES`): `kinesis.partitionKey`,
//!   `kinesis.shardId` + `kinesis.sequenceNumber` (+ `kinesis.subSequenceNumber`
//!   for KPL user records), `kinesis.approximateArrivalTimestamp`,
//!   `kinesis.streamArn`.
//! * **FIFO.** Group id from the partition key, the shard id, or none (the
//!   shared `MESSAGE_GROUP_ID`), per `GROUP_ID_SOURCE`; deduplication id
//!   `<shardId>:<sequenceNumber>[:<subSequenceNumber>]`, so a batch Lambda
//!   delivers again does not create duplicates within SQS's five-minute
//!   deduplication window. Values SQS would not take as ids (longer than 128
//!   characters, not printable ASCII) are replaced by `md5-` and the hex MD5
//!   of the value: still deterministic, still one per key.

use std::borrow::Cow;

use aws_lambda_events::event::kinesis::{KinesisEventRecord, KinesisRecord};
use base64::Engine as _;
use md5::{Digest, Md5};
use serde::Serialize;
use sqs_forwarder::encode::is_sqs_text;
use sqs_forwarder::{Attribute, Body, Failure, Message};

use crate::kpl;
use crate::settings::{BodyFormat, GroupIdSource, Settings};

/// Attribute names.
pub mod attribute {
    /// The (user) record's partition key.
    pub const PARTITION_KEY: &str = "kinesis.partitionKey";
    /// The shard the record came from.
    pub const SHARD_ID: &str = "kinesis.shardId";
    /// The record's sequence number (the aggregate's, for KPL user records).
    pub const SEQUENCE_NUMBER: &str = "kinesis.sequenceNumber";
    /// A KPL user record's index in its aggregate.
    pub const SUB_SEQUENCE_NUMBER: &str = "kinesis.subSequenceNumber";
    /// When Kinesis received the record, in whole seconds since the epoch.
    pub const ARRIVAL_TIMESTAMP: &str = "kinesis.approximateArrivalTimestamp";
    /// The stream's ARN.
    pub const STREAM_ARN: &str = "kinesis.streamArn";
}

/// Where a message came from: the record's index in the event and, for a KPL
/// user record, its sub-sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Index of the Kinesis record in the event.
    pub record: usize,
    /// Index of the user record in its KPL aggregate.
    pub sub_sequence: Option<u32>,
}

/// What the answer needs to know about one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordInfo {
    /// Its sequence number: the `itemIdentifier` if it fails.
    pub sequence_number: String,
    /// A failure found before sending (a corrupt KPL aggregate).
    pub failure: Option<Failure>,
    /// How many messages it became.
    pub messages: usize,
    /// Whether it was a KPL aggregate.
    pub aggregated: bool,
}

/// The messages of an event, and what is known of each record, all at once
/// (tests and tools; the function reads them lazily with [`inspect`] and
/// [`messages`]).
#[derive(Debug)]
pub struct Prepared {
    /// One entry per record, in event order.
    pub records: Vec<RecordInfo>,
    /// The messages, records in event order, user records in aggregate order.
    pub messages: Vec<Message<Position>>,
}

/// The metadata a record's messages share.
struct Origin<'a> {
    stream_arn: Option<&'a str>,
    event_id: Option<&'a str>,
    shard_id: Option<&'a str>,
    sequence_number: &'a str,
    arrival_seconds: i64,
}

/// [`Origin`], owned: kept while an aggregate's user records are read.
struct OwnedOrigin {
    stream_arn: Option<String>,
    event_id: Option<String>,
    sequence_number: String,
    arrival_seconds: i64,
}

impl OwnedOrigin {
    fn view(&self) -> Origin<'_> {
        Origin {
            stream_arn: self.stream_arn.as_deref(),
            event_id: self.event_id.as_deref(),
            shard_id: self
                .event_id
                .as_deref()
                .and_then(|id| id.split_once(':'))
                .map(|(shard, _)| shard),
            sequence_number: &self.sequence_number,
            arrival_seconds: self.arrival_seconds,
        }
    }
}

/// Turn an event's records into messages, all at once. `fifo`: whether the
/// target is a FIFO queue (group and deduplication ids are set only then).
pub fn prepare(records: Vec<KinesisEventRecord>, settings: &Settings, fifo: bool) -> Prepared {
    let infos = inspect(&records, settings);
    let messages = messages(records, &infos, settings, fifo).collect();
    Prepared {
        records: infos,
        messages,
    }
}

/// What the answer needs to know about each record, before any message is
/// read: its sequence number, how many messages it becomes, and whether it
/// is a KPL aggregate that cannot be read (checked whole here, so a corrupt
/// aggregate fails before any of its user records is sent).
pub fn inspect(records: &[KinesisEventRecord], settings: &Settings) -> Vec<RecordInfo> {
    records
        .iter()
        .map(|record| {
            let data = &record.kinesis.data.0;
            let mut info = RecordInfo {
                sequence_number: record.kinesis.sequence_number.clone(),
                failure: None,
                messages: 1,
                aggregated: false,
            };
            if settings.deaggregate && kpl::is_aggregated(data) {
                info.aggregated = true;
                match kpl::Aggregate::check(data) {
                    Ok(users) => info.messages = users,
                    Err(e) => {
                        metrics::counter!(crate::metric::CORRUPT_AGGREGATES).increment(1);
                        info.messages = 0;
                        info.failure = Some(Failure::content(e.code(), e.to_string()));
                    }
                }
            }
            info
        })
        .collect()
}

/// The messages of `records`, read lazily: a record's data moves into its
/// message (raw format), a KPL aggregate's user records are read one at a
/// time. `infos` is [`inspect`]'s answer for the same records; records it
/// found corrupt become no message.
pub fn messages<'a>(
    records: Vec<KinesisEventRecord>,
    infos: &'a [RecordInfo],
    settings: &'a Settings,
    fifo: bool,
) -> Messages<'a> {
    Messages {
        records: records.into_iter().enumerate(),
        infos,
        settings,
        fifo,
        current: None,
    }
}

/// The iterator [`messages`] returns.
pub struct Messages<'a> {
    records: std::iter::Enumerate<std::vec::IntoIter<KinesisEventRecord>>,
    infos: &'a [RecordInfo],
    settings: &'a Settings,
    fifo: bool,
    current: Option<Aggregated>,
}

/// The aggregate whose user records are being read.
struct Aggregated {
    record: usize,
    origin: OwnedOrigin,
    users: kpl::Aggregate,
    sub: u32,
}

impl Iterator for Messages<'_> {
    type Item = Message<Position>;

    fn next(&mut self) -> Option<Message<Position>> {
        loop {
            if let Some(current) = &mut self.current {
                if let Some(user) = current.users.next() {
                    let sub = current.sub;
                    current.sub = current.sub.saturating_add(1);
                    let position = Position {
                        record: current.record,
                        sub_sequence: Some(sub),
                    };
                    let Ok(user) = user else {
                        return Some(unreadable(position));
                    };
                    return Some(message(
                        &current.origin.view(),
                        User {
                            partition_key: &user.partition_key,
                            explicit_hash_key: user.explicit_hash_key.as_deref(),
                            sub_sequence: Some(sub),
                            data: user.data.to_vec(),
                        },
                        self.settings,
                        self.fifo,
                        position,
                    ));
                }
                self.current = None;
            }
            let (index, record) = self.records.next()?;
            let info = self.infos.get(index);
            if info.is_some_and(|i| i.failure.is_some()) {
                continue;
            }
            let KinesisEventRecord {
                event_id,
                event_source_arn,
                kinesis,
                ..
            } = record;
            let KinesisRecord {
                approximate_arrival_timestamp,
                data,
                partition_key,
                sequence_number,
                ..
            } = kinesis;
            let origin = OwnedOrigin {
                stream_arn: event_source_arn,
                event_id,
                sequence_number,
                // Whole seconds: see `attribute::ARRIVAL_TIMESTAMP` and the README.
                arrival_seconds: approximate_arrival_timestamp.0.timestamp(),
            };
            if info.is_some_and(|i| i.aggregated) {
                match kpl::Aggregate::open(data.0) {
                    Ok(users) => {
                        self.current = Some(Aggregated {
                            record: index,
                            origin,
                            users,
                            sub: 0,
                        });
                        continue;
                    }
                    Err(_) => {
                        return Some(unreadable(Position {
                            record: index,
                            sub_sequence: None,
                        }));
                    }
                }
            }
            let position = Position {
                record: index,
                sub_sequence: None,
            };
            return Some(message(
                &origin.view(),
                User {
                    partition_key: &partition_key,
                    explicit_hash_key: None,
                    sub_sequence: None,
                    data: data.0,
                },
                self.settings,
                self.fifo,
                position,
            ));
        }
    }
}

/// A user record [`inspect`] accepted but that could not be read again:
/// impossible (the same bytes are decoded the same way twice), and never a
/// panic: its empty body fails it (`EmptyBody`), so its record is reported,
/// or skipped with a warning under `PERMANENT_FAILURES=skip`.
fn unreadable(position: Position) -> Message<Position> {
    tracing::error!(
        record = position.record,
        "a KPL user record could not be read a second time"
    );
    Message::new(Body::Bytes(Vec::new()), position)
}

/// The part of a message that is the (user) record's own.
struct User<'a> {
    partition_key: &'a str,
    explicit_hash_key: Option<&'a str>,
    sub_sequence: Option<u32>,
    data: Vec<u8>,
}

fn message(
    origin: &Origin<'_>,
    user: User<'_>,
    settings: &Settings,
    fifo: bool,
    position: Position,
) -> Message<Position> {
    let User {
        partition_key,
        explicit_hash_key,
        sub_sequence,
        data,
    } = user;
    let body = match settings.body_format {
        BodyFormat::Raw => Body::Bytes(data),
        BodyFormat::Envelope => Body::Text(envelope(
            origin,
            partition_key,
            explicit_hash_key,
            sub_sequence,
            data,
        )),
    };
    let mut m = Message::new(body, position);
    let wanted = settings.attributes;
    if wanted.partition_key && !partition_key.is_empty() {
        m = m.attribute(if is_sqs_text(partition_key) {
            Attribute::string(attribute::PARTITION_KEY, partition_key)
        } else {
            // Characters SQS refuses in a String value: pass the key's
            // UTF-8 bytes as they are rather than fail the record.
            Attribute::binary(attribute::PARTITION_KEY, partition_key.as_bytes())
        });
    }
    if wanted.sequence_number {
        if let Some(shard) = origin.shard_id.filter(|s| !s.is_empty() && is_sqs_text(s)) {
            m = m.attribute(Attribute::string(attribute::SHARD_ID, shard));
        }
        if !origin.sequence_number.is_empty() && is_sqs_text(origin.sequence_number) {
            m = m.attribute(Attribute::string(
                attribute::SEQUENCE_NUMBER,
                origin.sequence_number,
            ));
        }
        if let Some(sub) = sub_sequence {
            m = m.attribute(Attribute::number(attribute::SUB_SEQUENCE_NUMBER, sub));
        }
    }
    if wanted.arrival_time {
        m = m.attribute(Attribute::number(
            attribute::ARRIVAL_TIMESTAMP,
            origin.arrival_seconds,
        ));
    }
    if wanted.stream
        && let Some(arn) = origin
            .stream_arn
            .filter(|s| !s.is_empty() && is_sqs_text(s))
    {
        m = m.attribute(Attribute::string(attribute::STREAM_ARN, arn));
    }
    if fifo {
        let group = match settings.group_id_source {
            GroupIdSource::PartitionKey => Some(sqs_id(partition_key)),
            GroupIdSource::ShardId => origin.shard_id.map(sqs_id),
            GroupIdSource::Fixed => None,
        };
        if let Some(g) = group {
            m = m.group_id(g);
        }
        if let Some(d) = deduplication_id(origin.shard_id, origin.sequence_number, sub_sequence) {
            m = m.deduplication_id(d);
        }
    }
    m
}

/// The deduplication id of a (user) record: `<shardId>:<sequenceNumber>`
/// plus `:<subSequenceNumber>` for KPL user records. `None` without a
/// sequence number (nothing identifies the record then).
pub fn deduplication_id(
    shard_id: Option<&str>,
    sequence_number: &str,
    sub_sequence: Option<u32>,
) -> Option<String> {
    if sequence_number.is_empty() {
        return None;
    }
    let mut id = String::with_capacity(96);
    if let Some(shard) = shard_id {
        id.push_str(shard);
        id.push(':');
    }
    id.push_str(sequence_number);
    if let Some(sub) = sub_sequence {
        id.push(':');
        id.push_str(&sub.to_string());
    }
    Some(sqs_id(&id).into_owned())
}

/// A value as an SQS group or deduplication id: as it is when SQS takes it
/// (1..=128 printable ASCII characters), else `md5-` and its hex MD5.
pub fn sqs_id(value: &str) -> Cow<'_, str> {
    let ok = !value.is_empty() && value.len() <= 128 && value.bytes().all(|b| b.is_ascii_graphic());
    if ok {
        Cow::Borrowed(value)
    } else {
        let digest = Md5::digest(value.as_bytes());
        let mut hex = String::with_capacity(4 + 32);
        hex.push_str("md5-");
        for b in digest {
            hex.push_str(&format!("{b:02x}"));
        }
        Cow::Owned(hex)
    }
}

/// The JSON envelope of `BODY_FORMAT=envelope`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a> {
    #[serde(rename = "eventSourceARN", skip_serializing_if = "Option::is_none")]
    event_source_arn: Option<&'a str>,
    #[serde(rename = "eventID", skip_serializing_if = "Option::is_none")]
    event_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shard_id: Option<&'a str>,
    partition_key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    explicit_hash_key: Option<&'a str>,
    sequence_number: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    sub_sequence_number: Option<u32>,
    approximate_arrival_timestamp: i64,
    data_encoding: &'static str,
    data: Cow<'a, str>,
}

fn envelope(
    origin: &Origin<'_>,
    partition_key: &str,
    explicit_hash_key: Option<&str>,
    sub_sequence: Option<u32>,
    data: Vec<u8>,
) -> String {
    let (data_encoding, data) = match String::from_utf8(data) {
        Ok(text) if is_sqs_text(&text) => ("text", Cow::Owned(text)),
        Ok(text) => (
            "base64",
            Cow::Owned(base64::engine::general_purpose::STANDARD.encode(text)),
        ),
        Err(e) => (
            "base64",
            Cow::Owned(base64::engine::general_purpose::STANDARD.encode(e.into_bytes())),
        ),
    };
    let envelope = Envelope {
        event_source_arn: origin.stream_arn,
        event_id: origin.event_id,
        shard_id: origin.shard_id,
        partition_key,
        explicit_hash_key,
        sequence_number: origin.sequence_number,
        sub_sequence_number: sub_sequence,
        approximate_arrival_timestamp: origin.arrival_seconds,
        data_encoding,
        data,
    };
    // Serializing these plain fields cannot fail; should it ever, the empty
    // body fails the record (`EmptyBody`) rather than losing it.
    serde_json::to_string(&envelope).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::RecordAttributes;
    use aws_lambda_events::event::kinesis::KinesisEvent;
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
}
