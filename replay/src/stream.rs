//! Reading a failed range back from its Kinesis stream.
//!
//! `GetShardIterator` at the range's first sequence number, then
//! `GetRecords` page by page until the last one. A batch never spans shards,
//! so the range lies in the one shard the entry names. When that shard has
//! been closed by a reshard since, it stays readable for the stream's
//! retention period and `GetRecords` ends it with no next iterator; its
//! children hold only records written after the reshard, outside the range,
//! so they are not read.
//!
//! What the stream no longer has is reported, never skipped silently:
//!
//! * the stream or the shard is gone (`ResourceNotFoundException`: a closed
//!   shard past the retention period, a deleted stream);
//! * Kinesis refuses the start (`InvalidArgumentException` at
//!   `GetShardIterator`; AWS answers this way for some sequence numbers
//!   that are past retention, with its message kept in the report);
//! * the first record read is after the range's start: the records before
//!   it were trimmed (Kinesis trims from the oldest end only, so nothing in
//!   the middle of a range can be missing).

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_kinesis::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_kinesis::types::ShardIteratorType;

use crate::entry::{KinesisRange, compare};

/// One record read from the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamRecord {
    /// Its sequence number.
    pub sequence_number: String,
    /// Its partition key.
    pub partition_key: String,
    /// Its data.
    pub data: Vec<u8>,
    /// When it arrived, in seconds since the epoch (millisecond precision).
    pub arrival: Option<f64>,
    /// `KMS` or `NONE`, when Kinesis says.
    pub encryption: Option<String>,
}

/// Why a range cannot be read (in part or at all).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The stream no longer has the range: past retention, or deleted.
    #[error("{0}")]
    Gone(String),
    /// Reading failed for a reason a later run may not have (throttling
    /// beyond the SDK's retries, access denied, the network).
    #[error("{action}: {code}: {message}")]
    Failed {
        /// `GetShardIterator` or `GetRecords`.
        action: &'static str,
        /// Kinesis's error code, or the kind of failure.
        code: String,
        /// What went wrong.
        message: String,
    },
}

fn describe<E, R>(err: &SdkError<E, R>) -> (String, String)
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + 'static,
{
    sqs_forwarder::send::codes::sdk_error_parts(err)
}

/// Kinesis clients by region (a range names its stream's region).
#[derive(Debug)]
pub struct Streams {
    sdk: aws_config::SdkConfig,
    clients: HashMap<String, aws_sdk_kinesis::Client>,
}

impl Streams {
    /// Clients made from `sdk` (the standard retries, which also cover
    /// `ProvisionedThroughputExceededException`).
    pub fn new(sdk: aws_config::SdkConfig) -> Self {
        Streams {
            sdk,
            clients: HashMap::new(),
        }
    }

    /// The client for `region`.
    pub fn client(&mut self, region: &str) -> aws_sdk_kinesis::Client {
        self.clients
            .entry(region.to_owned())
            .or_insert_with(|| {
                let conf = aws_sdk_kinesis::config::Builder::from(&self.sdk)
                    .region(aws_sdk_kinesis::config::Region::new(region.to_owned()))
                    .build();
                aws_sdk_kinesis::Client::from_conf(conf)
            })
            .clone()
    }
}

/// A range being read, page by page.
#[derive(Debug)]
pub struct RangeReader {
    client: aws_sdk_kinesis::Client,
    range: KinesisRange,
    limit: i32,
    iterator: Option<String>,
    last: Option<String>,
    first: Option<String>,
    found: u64,
    done: bool,
}

/// Pause after an empty page that is not at the tip of the shard, so as to
/// stay under `GetRecords`' five calls a second per shard.
const EMPTY_PAGE_PAUSE: Duration = Duration::from_millis(200);

impl RangeReader {
    /// Start reading `range`, at most `limit` records per `GetRecords` call
    /// (1..10,000).
    pub async fn open(
        client: aws_sdk_kinesis::Client,
        range: KinesisRange,
        limit: i32,
    ) -> Result<Self, StreamError> {
        let mut reader = RangeReader {
            client,
            range,
            limit: limit.clamp(1, 10_000),
            iterator: None,
            last: None,
            first: None,
            found: 0,
            done: false,
        };
        reader.iterator = Some(reader.new_iterator().await?);
        Ok(reader)
    }

    async fn new_iterator(&self) -> Result<String, StreamError> {
        let (kind, at) = match &self.last {
            Some(last) => (ShardIteratorType::AfterSequenceNumber, last.as_str()),
            None => (
                ShardIteratorType::AtSequenceNumber,
                self.range.start.as_str(),
            ),
        };
        let out = self
            .client
            .get_shard_iterator()
            .stream_arn(&self.range.stream_arn)
            .shard_id(&self.range.shard_id)
            .shard_iterator_type(kind)
            .starting_sequence_number(at)
            .send()
            .await
            .map_err(|e| {
                let (code, message) = describe(&e);
                match code.as_str() {
                    "ResourceNotFoundException" => StreamError::Gone(format!(
                        "the stream no longer has shard {} (past the retention period, or the stream was deleted): {message}",
                        self.range.shard_id
                    )),
                    "InvalidArgumentException" => StreamError::Gone(format!(
                        "Kinesis does not accept sequence number {at} of shard {} any more (past the retention period?): {message}",
                        self.range.shard_id
                    )),
                    _ => StreamError::Failed {
                        action: "GetShardIterator",
                        code,
                        message,
                    },
                }
            })?;
        out.shard_iterator()
            .map(str::to_owned)
            .ok_or_else(|| StreamError::Failed {
                action: "GetShardIterator",
                code: "NoIterator".to_owned(),
                message: "Kinesis answered without a shard iterator".to_owned(),
            })
    }

    /// The next records of the range, in order; `None` once it is read.
    pub async fn next(&mut self) -> Result<Option<Vec<StreamRecord>>, StreamError> {
        loop {
            let Some(iterator) = self.iterator.clone().filter(|_| !self.done) else {
                return Ok(None);
            };
            let out = match self
                .client
                .get_records()
                .stream_arn(&self.range.stream_arn)
                .shard_iterator(iterator)
                .limit(self.limit)
                .send()
                .await
            {
                Ok(out) => out,
                Err(e) => {
                    let (code, message) = describe(&e);
                    match code.as_str() {
                        // Iterators live five minutes: take a new one after
                        // the last record read.
                        "ExpiredIteratorException" => {
                            self.iterator = Some(self.new_iterator().await?);
                            continue;
                        }
                        "ResourceNotFoundException" => {
                            return Err(StreamError::Gone(format!(
                                "the stream no longer has shard {}: {message}",
                                self.range.shard_id
                            )));
                        }
                        _ => {
                            return Err(StreamError::Failed {
                                action: "GetRecords",
                                code,
                                message,
                            });
                        }
                    }
                }
            };
            let mut page = Vec::new();
            for r in out.records() {
                let seq = r.sequence_number();
                if self.first.is_none() {
                    self.first = Some(seq.to_owned());
                }
                if let Some(end) = &self.range.end
                    && compare(seq, end).is_gt()
                {
                    self.done = true;
                    break;
                }
                page.push(StreamRecord {
                    sequence_number: seq.to_owned(),
                    partition_key: r.partition_key().unwrap_or_default().to_owned(),
                    data: r.data().as_ref().to_vec(),
                    arrival: r.approximate_arrival_timestamp().map(|t| {
                        t.secs() as f64 + f64::from(t.subsec_nanos() / 1_000_000) / 1_000.0
                    }),
                    encryption: r.encryption_type().map(|e| e.as_str().to_owned()),
                });
                self.last = Some(seq.to_owned());
                self.found += 1;
                let at_end = match (&self.range.end, self.range.batch_size) {
                    (Some(end), _) => compare(seq, end).is_eq(),
                    (None, Some(n)) => self.found >= n,
                    (None, None) => false,
                };
                if at_end {
                    self.done = true;
                    break;
                }
            }
            // No next iterator: the shard is closed and read to its end.
            self.iterator = out.next_shard_iterator().map(str::to_owned);
            if !page.is_empty() {
                return Ok(Some(page));
            }
            if self.done || self.iterator.is_none() {
                return Ok(None);
            }
            if out.records().is_empty() {
                if out.millis_behind_latest() == Some(0) {
                    // At the tip of an open shard: the rest of the range is
                    // not in it.
                    self.done = true;
                    return Ok(None);
                }
                tokio::time::sleep(EMPTY_PAGE_PAUSE).await;
            }
        }
    }

    /// Records of the range read so far.
    pub fn found(&self) -> u64 {
        self.found
    }

    /// The range.
    pub fn range(&self) -> &KinesisRange {
        &self.range
    }

    /// What the stream no longer has of the range, once it is read: `None`
    /// when the range's first record was there.
    pub fn lost(&self) -> Option<String> {
        let range = &self.range;
        let end = range.end.as_deref().unwrap_or("?");
        match &self.first {
            _ if self.found == 0 => Some(format!(
                "the stream no longer has any record of {}..{end} in {}: past the retention period{}",
                range.start,
                range.shard_id,
                match range.batch_size {
                    Some(n) => format!("; {n} of the batch's {n} records are lost"),
                    None => String::new(),
                }
            )),
            Some(first) if compare(first, &range.start).is_gt() => Some(format!(
                "the stream no longer has the records of {} from {} to before {first} (trimmed: past the retention period){}",
                range.shard_id,
                range.start,
                match range.batch_size {
                    Some(n) => format!(
                        "; {} of the batch's {n} records are lost",
                        n.saturating_sub(self.found)
                    ),
                    None => String::new(),
                }
            )),
            _ => None,
        }
    }
}
