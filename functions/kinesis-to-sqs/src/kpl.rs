//! De-aggregation of records written by the Kinesis Producer Library (KPL).
//!
//! With aggregation on, the KPL packs many user records into one Kinesis
//! record:
//!
//! ```text
//! F3 89 9A C2 | protobuf AggregatedRecord | MD5 of the protobuf bytes (16 bytes)
//! ```
//!
//! The protobuf messages are the KPL's `messages.proto` (proto2), written
//! here with `prost` derive macros instead of generated code. Each user
//! record has its own partition key (an index into the aggregate's key
//! table) and its data; its sub-sequence number is its index in the
//! aggregate.
//!
//! Unlike the KCL and the Python `aws_kinesis_agg` de-aggregator, which pass a
//! record with the magic bytes but a bad checksum or protobuf on as if it were
//! not aggregated, a corrupt aggregate here is an error: the magic bytes are
//! not valid UTF-8, so no text producer writes them, and forwarding a damaged
//! protobuf blob as one message would hand consumers garbage silently. The
//! caller reports the record as failed; nothing here panics on any input.

use std::sync::Arc;

use bytes::Bytes;
use md5::{Digest, Md5};
use prost::Message as _;

/// The four bytes every KPL aggregate starts with.
pub const MAGIC: [u8; 4] = [0xF3, 0x89, 0x9A, 0xC2];
/// Length of the MD5 trailer.
pub const DIGEST_LEN: usize = 16;

/// `AggregatedRecord` of the KPL's `messages.proto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AggregatedRecord {
    /// Partition keys, indexed by [`Record::partition_key_index`].
    #[prost(string, repeated, tag = "1")]
    pub partition_key_table: Vec<String>,
    /// Explicit hash keys, indexed by [`Record::explicit_hash_key_index`].
    #[prost(string, repeated, tag = "2")]
    pub explicit_hash_key_table: Vec<String>,
    /// The user records.
    #[prost(message, repeated, tag = "3")]
    pub records: Vec<Record>,
}

/// `Record` of the KPL's `messages.proto`: one user record.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Record {
    /// Index into [`AggregatedRecord::partition_key_table`].
    #[prost(uint64, required, tag = "1")]
    pub partition_key_index: u64,
    /// Index into [`AggregatedRecord::explicit_hash_key_table`].
    #[prost(uint64, optional, tag = "2")]
    pub explicit_hash_key_index: Option<u64>,
    /// The user record's data.
    #[prost(bytes = "vec", required, tag = "3")]
    pub data: Vec<u8>,
    /// Tags (unused by the KPL today; read and ignored).
    #[prost(message, repeated, tag = "4")]
    pub tags: Vec<Tag>,
}

/// `Tag` of the KPL's `messages.proto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Tag {
    /// Key.
    #[prost(string, required, tag = "1")]
    pub key: String,
    /// Value.
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}

/// One user record out of an aggregate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRecord {
    /// Its own partition key.
    pub partition_key: String,
    /// Its explicit hash key, if the producer set one.
    pub explicit_hash_key: Option<String>,
    /// Its data.
    pub data: Vec<u8>,
}

/// Why an aggregate could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KplError {
    /// Magic bytes, but no room for a digest.
    #[error("KPL aggregate of {len} bytes is too short for the magic bytes and the MD5 digest")]
    TooShort {
        /// Length of the record's data.
        len: usize,
    },
    /// The MD5 trailer does not match the protobuf bytes.
    #[error("KPL aggregate fails its MD5 check")]
    Checksum,
    /// The protobuf bytes are not an `AggregatedRecord`.
    #[error("KPL aggregate is not a valid AggregatedRecord: {0}")]
    Protobuf(String),
    /// A user record points outside the partition key table.
    #[error(
        "KPL user record {index} points to partition key {key_index}, but the table has {table_len}"
    )]
    PartitionKeyIndex {
        /// The user record's index (its sub-sequence number).
        index: usize,
        /// The index it holds.
        key_index: u64,
        /// The table's length.
        table_len: usize,
    },
    /// A user record points outside the explicit hash key table.
    #[error(
        "KPL user record {index} points to explicit hash key {key_index}, but the table has {table_len}"
    )]
    ExplicitHashKeyIndex {
        /// The user record's index.
        index: usize,
        /// The index it holds.
        key_index: u64,
        /// The table's length.
        table_len: usize,
    },
}

impl KplError {
    /// A short machine-readable code, used as the failure code.
    pub fn code(&self) -> &'static str {
        match self {
            KplError::TooShort { .. } => "KplTooShort",
            KplError::Checksum => "KplChecksumMismatch",
            KplError::Protobuf(_) => "KplInvalidProtobuf",
            KplError::PartitionKeyIndex { .. } | KplError::ExplicitHashKeyIndex { .. } => {
                "KplInvalidKeyIndex"
            }
        }
    }
}

/// Whether this record's data is a KPL aggregate (starts with the magic bytes).
pub fn is_aggregated(data: &[u8]) -> bool {
    data.starts_with(&MAGIC)
}

/// `AggregatedRecord` with its user records left encoded: reading it costs
/// the key tables and one `Bytes` handle per user record (a slice of the
/// aggregate, not a copy), not the records themselves.
#[derive(Clone, PartialEq, prost::Message)]
struct Frames {
    #[prost(string, repeated, tag = "1")]
    partition_key_table: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    explicit_hash_key_table: Vec<String>,
    #[prost(bytes = "bytes", repeated, tag = "3")]
    records: Vec<Bytes>,
}

/// `Record`, read without copying its data.
#[derive(Clone, PartialEq, prost::Message)]
struct RecordView {
    #[prost(uint64, required, tag = "1")]
    partition_key_index: u64,
    #[prost(uint64, optional, tag = "2")]
    explicit_hash_key_index: Option<u64>,
    #[prost(bytes = "bytes", required, tag = "3")]
    data: Bytes,
    #[prost(message, repeated, tag = "4")]
    tags: Vec<Tag>,
}

/// One user record read lazily out of an [`Aggregate`]: keys shared with
/// the aggregate's tables, data a slice of the aggregate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRecordView {
    /// Its own partition key.
    pub partition_key: Arc<str>,
    /// Its explicit hash key, if the producer set one.
    pub explicit_hash_key: Option<Arc<str>>,
    /// Its data.
    pub data: Bytes,
}

/// An aggregate's user records, read one at a time (index = sub-sequence
/// number). Holding it costs the key tables and a handle per user record,
/// never a decoded copy of them all.
#[derive(Debug)]
pub struct Aggregate {
    keys: Vec<Arc<str>>,
    hash_keys: Vec<Arc<str>>,
    records: std::vec::IntoIter<Bytes>,
    next: usize,
}

impl Aggregate {
    /// Check an aggregate whole (magic bytes, MD5, protobuf, every user
    /// record and its key indexes) and return how many user records it
    /// holds. Nothing is kept: a corrupt aggregate is found before any of
    /// its user records is sent.
    pub fn check(data: &[u8]) -> Result<usize, KplError> {
        let protobuf = checked_protobuf(data)?;
        let aggregate = Self::read(Bytes::copy_from_slice(protobuf))?;
        let count = aggregate.records.len();
        for (index, record) in aggregate.records.as_slice().iter().enumerate() {
            aggregate.resolve(index, record.clone())?;
        }
        Ok(count)
    }

    /// Open an aggregate [`Aggregate::check`] accepted, for reading its user
    /// records lazily. The checksum is not computed again; a protobuf error
    /// (impossible after the check) comes back as an `Err` item.
    pub fn open(data: Vec<u8>) -> Result<Self, KplError> {
        let len = data.len();
        if !is_aggregated(&data) || len < MAGIC.len() + DIGEST_LEN {
            return Err(KplError::TooShort { len });
        }
        Self::read(Bytes::from(data).slice(MAGIC.len()..len - DIGEST_LEN))
    }

    fn read(protobuf: Bytes) -> Result<Self, KplError> {
        let frames = Frames::decode(protobuf).map_err(|e| KplError::Protobuf(e.to_string()))?;
        Ok(Aggregate {
            keys: frames
                .partition_key_table
                .into_iter()
                .map(Arc::from)
                .collect(),
            hash_keys: frames
                .explicit_hash_key_table
                .into_iter()
                .map(Arc::from)
                .collect(),
            records: frames.records.into_iter(),
            next: 0,
        })
    }

    fn resolve(&self, index: usize, record: Bytes) -> Result<UserRecordView, KplError> {
        let record = RecordView::decode(record).map_err(|e| KplError::Protobuf(e.to_string()))?;
        let key = |table: &[Arc<str>], k: u64| {
            usize::try_from(k).ok().and_then(|i| table.get(i)).cloned()
        };
        let partition_key =
            key(&self.keys, record.partition_key_index).ok_or(KplError::PartitionKeyIndex {
                index,
                key_index: record.partition_key_index,
                table_len: self.keys.len(),
            })?;
        let explicit_hash_key = match record.explicit_hash_key_index {
            None => None,
            Some(k) => Some(
                key(&self.hash_keys, k).ok_or(KplError::ExplicitHashKeyIndex {
                    index,
                    key_index: k,
                    table_len: self.hash_keys.len(),
                })?,
            ),
        };
        Ok(UserRecordView {
            partition_key,
            explicit_hash_key,
            data: record.data,
        })
    }
}

impl Iterator for Aggregate {
    type Item = Result<UserRecordView, KplError>;

    fn next(&mut self) -> Option<Self::Item> {
        let record = self.records.next()?;
        let index = self.next;
        self.next += 1;
        Some(self.resolve(index, record))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.records.size_hint()
    }
}

/// The protobuf bytes of an aggregate whose magic bytes and MD5 check out.
fn checked_protobuf(data: &[u8]) -> Result<&[u8], KplError> {
    let body = data
        .strip_prefix(&MAGIC)
        .filter(|rest| rest.len() >= DIGEST_LEN)
        .ok_or(KplError::TooShort { len: data.len() })?;
    let (protobuf, digest) = body.split_at(body.len() - DIGEST_LEN);
    if Md5::digest(protobuf).as_slice() != digest {
        return Err(KplError::Checksum);
    }
    Ok(protobuf)
}

/// The user records of an aggregate, in order (index = sub-sequence
/// number), all at once: for tests and tools; the function reads them
/// lazily ([`Aggregate`]).
pub fn deaggregate(data: &[u8]) -> Result<Vec<UserRecord>, KplError> {
    let protobuf = checked_protobuf(data)?;
    Aggregate::read(Bytes::copy_from_slice(protobuf))?
        .map(|user| {
            user.map(|u| UserRecord {
                partition_key: u.partition_key.to_string(),
                explicit_hash_key: u.explicit_hash_key.map(|k| k.to_string()),
                data: u.data.to_vec(),
            })
        })
        .collect()
}

/// Build an aggregate the way the KPL does (tests, benchmarks, tools).
pub fn aggregate(records: &[(&str, &[u8])]) -> Vec<u8> {
    let mut keys: Vec<String> = Vec::new();
    let mut agg = AggregatedRecord::default();
    for (key, data) in records {
        let index = match keys.iter().position(|k| k == key) {
            Some(i) => i,
            None => {
                keys.push((*key).to_owned());
                keys.len() - 1
            }
        };
        agg.records.push(Record {
            partition_key_index: index as u64,
            explicit_hash_key_index: None,
            data: data.to_vec(),
            tags: Vec::new(),
        });
    }
    agg.partition_key_table = keys;
    frame(&agg.encode_to_vec())
}

/// Wrap protobuf bytes in the magic bytes and their MD5 digest.
pub fn frame(protobuf: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + protobuf.len() + DIGEST_LEN);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(protobuf);
    out.extend_from_slice(&Md5::digest(protobuf));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip_keeps_order_keys_and_data() {
        let data = aggregate(&[
            ("a", b"one"),
            ("b", b"two"),
            ("a", &[0xFF, 0x00]),
            ("c", b""),
        ]);
        assert!(is_aggregated(&data));
        let users = deaggregate(&data).expect("valid");
        let got: Vec<(&str, &[u8])> = users
            .iter()
            .map(|u| (u.partition_key.as_str(), u.data.as_slice()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", &b"one"[..]),
                ("b", &b"two"[..]),
                ("a", &[0xFF, 0x00][..]),
                ("c", &b""[..])
            ]
        );
    }

    #[test]
    fn explicit_hash_keys_are_resolved() {
        let agg = AggregatedRecord {
            partition_key_table: vec!["pk".into()],
            explicit_hash_key_table: vec!["123".into()],
            records: vec![Record {
                partition_key_index: 0,
                explicit_hash_key_index: Some(0),
                data: b"x".to_vec(),
                tags: vec![Tag {
                    key: "k".into(),
                    value: None,
                }],
            }],
        };
        let users = deaggregate(&frame(&agg.encode_to_vec())).expect("valid");
        assert_eq!(users[0].explicit_hash_key.as_deref(), Some("123"));
    }

    #[test]
    fn an_empty_aggregate_has_no_user_records() {
        assert_eq!(deaggregate(&frame(&[])), Ok(Vec::new()));
    }

    #[test]
    fn corrupt_aggregates_are_errors() {
        let good = aggregate(&[("a", b"one"), ("b", b"two")]);

        let mut flipped = good.clone();
        flipped[6] ^= 0x01;
        assert_eq!(deaggregate(&flipped), Err(KplError::Checksum));

        let mut bad_digest = good.clone();
        let last = bad_digest.len() - 1;
        bad_digest[last] ^= 0x80;
        assert_eq!(deaggregate(&bad_digest), Err(KplError::Checksum));

        assert_eq!(
            deaggregate(&good[..10]),
            Err(KplError::TooShort { len: 10 })
        );
        assert_eq!(
            deaggregate(&good[..good.len() - 1]),
            Err(KplError::Checksum)
        );
        assert_eq!(deaggregate(&MAGIC[..]), Err(KplError::TooShort { len: 4 }));
        assert!(matches!(
            deaggregate(&frame(&[0x1A, 0x05, 0x01])),
            Err(KplError::Protobuf(_))
        ));
        let bad_index = AggregatedRecord {
            partition_key_table: vec!["pk".into()],
            explicit_hash_key_table: vec![],
            records: vec![Record {
                partition_key_index: 3,
                explicit_hash_key_index: None,
                data: b"x".to_vec(),
                tags: vec![],
            }],
        };
        let e = deaggregate(&frame(&bad_index.encode_to_vec())).expect_err("bad index");
        assert_eq!(
            e,
            KplError::PartitionKeyIndex {
                index: 0,
                key_index: 3,
                table_len: 1
            }
        );
        assert_eq!(e.code(), "KplInvalidKeyIndex");
    }

    #[test]
    fn text_is_not_an_aggregate() {
        assert!(!is_aggregated(b"{\"a\":1}"));
        assert!(!is_aggregated(&[0xF3, 0x89, 0x9A]));
    }

    proptest! {
        /// Any bytes after the magic, checksummed or not, give user records
        /// or an error, never a panic.
        #[test]
        fn never_panics(body in proptest::collection::vec(any::<u8>(), 0..256), checksummed in any::<bool>()) {
            let data = if checksummed {
                frame(&body)
            } else {
                let mut d = MAGIC.to_vec();
                d.extend_from_slice(&body);
                d
            };
            let _ = deaggregate(&data);
        }

        /// Whatever goes in comes out, in order.
        #[test]
        fn round_trips(records in proptest::collection::vec(("[a-z]{1,3}", proptest::collection::vec(any::<u8>(), 0..64)), 0..20)) {
            let input: Vec<(&str, &[u8])> = records.iter().map(|(k, d)| (k.as_str(), d.as_slice())).collect();
            let users = deaggregate(&aggregate(&input)).expect("valid aggregate");
            let output: Vec<(&str, &[u8])> = users.iter().map(|u| (u.partition_key.as_str(), u.data.as_slice())).collect();
            prop_assert_eq!(output, input);
        }
    }
}
