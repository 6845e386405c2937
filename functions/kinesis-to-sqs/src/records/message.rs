//! One message from a (user) record: its body (raw or the JSON envelope),
//! its attributes, and on a FIFO queue its group and deduplication ids.

use std::borrow::Cow;

use base64::Engine as _;
use md5::{Digest, Md5};
use serde::Serialize;
use sqs_forwarder::message::encode::is_sqs_text;
use sqs_forwarder::{Attribute, Body, Message};

use super::{Position, attribute};
use crate::settings::{BodyFormat, GroupIdSource, Settings};

/// The metadata a record's messages share.
pub(super) struct Origin<'a> {
    pub stream_arn: Option<&'a str>,
    pub event_id: Option<&'a str>,
    pub shard_id: Option<&'a str>,
    pub sequence_number: &'a str,
    pub arrival_seconds: i64,
}

/// The part of a message that is the (user) record's own.
pub(super) struct User<'a> {
    pub partition_key: &'a str,
    pub explicit_hash_key: Option<&'a str>,
    pub sub_sequence: Option<u32>,
    pub data: Vec<u8>,
}

pub(super) fn message(
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
    sqs_forwarder::message::fifo_id::or_hashed(value, "md5-", |v| Md5::digest(v.as_bytes()))
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
