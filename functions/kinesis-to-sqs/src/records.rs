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

use aws_lambda_events::event::kinesis::{KinesisEventRecord, KinesisRecord};
use sqs_forwarder::route::{Plan, RecordView, Routes, SourceKey};
use sqs_forwarder::{Body, Failure, Message};

use crate::kpl;

mod message;

use crate::settings::Settings;
use message::{Origin, User, message};
pub use message::{deduplication_id, sqs_id};

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
    let messages = messages(records, &infos, settings, fifo, None)
        .map(|(_, m)| m)
        .collect();
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
    routes: Option<&'a Routes>,
) -> Messages<'a> {
    Messages {
        records: records.into_iter().enumerate(),
        infos,
        settings,
        fifo,
        routes,
        current: None,
    }
}

/// What the routing rules see of a (user) record: its data and its
/// partition key.
struct View<'a> {
    data: &'a [u8],
    partition_key: &'a str,
}

impl RecordView for View<'_> {
    fn data(&self) -> Option<&[u8]> {
        Some(self.data)
    }

    fn key(&self, key: SourceKey, _: Option<&str>) -> Option<std::borrow::Cow<'_, str>> {
        match key {
            SourceKey::PartitionKey => Some(self.partition_key.into()),
            _ => None,
        }
    }
}

/// The source keys kinesis-to-sqs offers the routing rules.
pub const SOURCE_KEYS: &[SourceKey] = &[SourceKey::PartitionKey];

/// The rules' plan for a (user) record, read before its data moves into its
/// message.
fn plan(routes: Option<&Routes>, data: &[u8], partition_key: &str) -> Option<Plan> {
    routes.map(|r| {
        r.plan(&View {
            data,
            partition_key,
        })
    })
}

/// The iterator [`messages`] returns.
pub struct Messages<'a> {
    records: std::iter::Enumerate<std::vec::IntoIter<KinesisEventRecord>>,
    infos: &'a [RecordInfo],
    settings: &'a Settings,
    fifo: bool,
    routes: Option<&'a Routes>,
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
    /// The routing rules' plan (none without rules) and the message.
    type Item = (Option<Plan>, Message<Position>);

    fn next(&mut self) -> Option<Self::Item> {
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
                        return Some((None, unreadable(position)));
                    };
                    let plan = plan(self.routes, &user.data, &user.partition_key);
                    return Some((
                        plan,
                        message(
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
                        ),
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
                        let position = Position {
                            record: index,
                            sub_sequence: None,
                        };
                        return Some((None, unreadable(position)));
                    }
                }
            }
            let position = Position {
                record: index,
                sub_sequence: None,
            };
            let plan = plan(self.routes, &data.0, &partition_key);
            let message = message(
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
            );
            return Some((plan, message));
        }
    }
}

impl Messages<'_> {
    /// Once the deadline has come: the next record, in event order, with
    /// messages not handed over yet, read no further (a KPL aggregate's
    /// user records are not decoded, no message is built), so that what is
    /// left is reported at the cost of one step per record, however many
    /// messages it would have made. `None` when no record is left.
    pub fn next_left(&mut self) -> Option<Position> {
        let whole = |record| Position {
            record,
            sub_sequence: None,
        };
        if let Some(current) = self.current.take() {
            let messages = self.infos.get(current.record).map_or(0, |i| i.messages);
            if (current.sub as usize) < messages {
                return Some(whole(current.record));
            }
        }
        loop {
            let (index, _) = self.records.next()?;
            // Found corrupt (failed already) or an aggregate of no user
            // record: nothing of it is left to send.
            match self.infos.get(index) {
                Some(info) if info.failure.is_some() || info.messages == 0 => continue,
                _ => return Some(whole(index)),
            }
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

#[cfg(test)]
mod tests;
