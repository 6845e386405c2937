//! This function's own settings, read once at cold start.
//!
//! The shared variables (`QUEUE_URL`, `OVERSIZE_POLICY`, `BODY_ENCODING`,
//! `MESSAGE_GROUP_ID`, ...) are read by [`sqs_forwarder::Config`]; the ones
//! here only say how a Kinesis record becomes messages and how failures are
//! answered. The README's table lists the same variables with the same
//! defaults (the workspace's `tests/docs.rs` checks it).

use sqs_forwarder::setup::env::{Variable, Word};
use sqs_forwarder::{ConfigError, Env};

/// `BODY_FORMAT`.
pub const BODY_FORMAT: Variable = Variable::words::<BodyFormat>("BODY_FORMAT", "raw");
/// `RECORD_ATTRIBUTES`.
pub const RECORD_ATTRIBUTES: Variable = Variable::text(
    "RECORD_ATTRIBUTES",
    "partition-key,sequence-number,arrival-time,stream",
    "a comma-separated list of partition-key, sequence-number, arrival-time, stream; or none",
);
/// `GROUP_ID_SOURCE`.
pub const GROUP_ID_SOURCE: Variable =
    Variable::words::<GroupIdSource>("GROUP_ID_SOURCE", "partition-key");
/// `KPL_DEAGGREGATE`.
pub const KPL_DEAGGREGATE: Variable = Variable::flag("KPL_DEAGGREGATE", "true");
/// `PERMANENT_FAILURES`.
pub const PERMANENT_FAILURES: Variable =
    Variable::words::<PermanentFailures>("PERMANENT_FAILURES", "report");

/// Every variable [`Settings::from_env`] reads, in the README table's order.
pub const VARIABLES: &[Variable] = &[
    BODY_FORMAT,
    RECORD_ATTRIBUTES,
    GROUP_ID_SOURCE,
    KPL_DEAGGREGATE,
    PERMANENT_FAILURES,
];

/// What a message's body holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BodyFormat {
    /// The record's data as it is (valid SQS text), otherwise per the shared
    /// `BODY_ENCODING` policy (base64 and a marker attribute by default).
    #[default]
    Raw,
    /// A JSON object with the record's metadata and its data (see
    /// [`crate::records`]).
    Envelope,
}

impl Word for BodyFormat {
    const WORDS: &'static [(&'static str, Self)] =
        &[("raw", BodyFormat::Raw), ("envelope", BodyFormat::Envelope)];
}

/// Where a FIFO message group id comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GroupIdSource {
    /// The (user) record's partition key: order is kept per key, as Kinesis
    /// keeps it.
    #[default]
    PartitionKey,
    /// The shard id: one group per shard, the shard's whole order kept.
    ShardId,
    /// No group id from the record: the shared `MESSAGE_GROUP_ID` for all.
    Fixed,
}

impl Word for GroupIdSource {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("partition-key", GroupIdSource::PartitionKey),
        ("shard-id", GroupIdSource::ShardId),
        ("fixed", GroupIdSource::Fixed),
    ];
}

/// What to answer for a record that failed for good (a retry cannot help).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PermanentFailures {
    /// Report it in `batchItemFailures` like any failure: nothing is skipped
    /// silently; the event source mapping's `MaximumRetryAttempts`, bisect
    /// and on-failure destination move it out of the way.
    #[default]
    Report,
    /// Leave it out of `batchItemFailures` so the checkpoint moves past it,
    /// with a warning log line and a `RecordsSkipped` metric.
    Skip,
}

impl Word for PermanentFailures {
    const WORDS: &'static [(&'static str, Self)] = &[
        ("report", PermanentFailures::Report),
        ("skip", PermanentFailures::Skip),
    ];
}

/// Which Kinesis metadata rides along as message attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordAttributes {
    /// `kinesis.partitionKey`.
    pub partition_key: bool,
    /// `kinesis.shardId`, `kinesis.sequenceNumber` and, for KPL user
    /// records, `kinesis.subSequenceNumber`.
    pub sequence_number: bool,
    /// `kinesis.approximateArrivalTimestamp`.
    pub arrival_time: bool,
    /// `kinesis.streamArn`.
    pub stream: bool,
}

impl RecordAttributes {
    /// Every attribute.
    pub const ALL: RecordAttributes = RecordAttributes {
        partition_key: true,
        sequence_number: true,
        arrival_time: true,
        stream: true,
    };

    /// No attribute.
    pub const NONE: RecordAttributes = RecordAttributes {
        partition_key: false,
        sequence_number: false,
        arrival_time: false,
        stream: false,
    };
}

impl Default for RecordAttributes {
    fn default() -> Self {
        RecordAttributes::ALL
    }
}

/// The function's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// `BODY_FORMAT`.
    pub body_format: BodyFormat,
    /// `RECORD_ATTRIBUTES`.
    pub attributes: RecordAttributes,
    /// `GROUP_ID_SOURCE` (FIFO targets only).
    pub group_id_source: GroupIdSource,
    /// `KPL_DEAGGREGATE`.
    pub deaggregate: bool,
    /// `PERMANENT_FAILURES`.
    pub permanent_failures: PermanentFailures,
}

impl Default for Settings {
    /// The settings of an empty environment: every variable's default.
    fn default() -> Self {
        // The table's defaults are constants, checked by the tests below.
        Settings::from_env(&Env::from_pairs(&[])).expect("the defaults in VARIABLES are valid")
    }
}

impl Settings {
    /// Read and check every variable; a bad value names the variable, the
    /// value and what is allowed.
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        let raw = env.text(&RECORD_ATTRIBUTES);
        let attributes = parse_attributes(&raw).ok_or_else(|| RECORD_ATTRIBUTES.error(&raw))?;
        Ok(Settings {
            body_format: env.choice(&BODY_FORMAT)?,
            attributes,
            group_id_source: env.choice(&GROUP_ID_SOURCE)?,
            deaggregate: env.flag(&KPL_DEAGGREGATE)?,
            permanent_failures: env.choice(&PERMANENT_FAILURES)?,
        })
    }

    /// Whether messages carry their own FIFO group ids (if not, a FIFO
    /// target needs the shared `MESSAGE_GROUP_ID`).
    pub fn source_sets_group_ids(&self) -> bool {
        self.group_id_source != GroupIdSource::Fixed
    }
}

fn parse_attributes(raw: &str) -> Option<RecordAttributes> {
    if raw.trim() == "none" {
        return Some(RecordAttributes::NONE);
    }
    let mut a = RecordAttributes::NONE;
    let mut any = false;
    for name in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match name {
            "partition-key" => a.partition_key = true,
            "sequence-number" => a.sequence_number = true,
            "arrival-time" => a.arrival_time = true,
            "stream" => a.stream = true,
            _ => return None,
        }
        any = true;
    }
    any.then_some(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        Settings::from_env(&Env::from_pairs(pairs))
    }

    #[test]
    fn defaults_match_variables() {
        let from_defaults: Vec<(&str, &str)> =
            VARIABLES.iter().map(|v| (v.name, v.default)).collect();
        let defaults = Settings {
            body_format: BodyFormat::Raw,
            attributes: RecordAttributes::ALL,
            group_id_source: GroupIdSource::PartitionKey,
            deaggregate: true,
            permanent_failures: PermanentFailures::Report,
        };
        assert_eq!(read(&[]), Ok(defaults));
        assert_eq!(Settings::default(), defaults);
        // The documented defaults, set explicitly, read as the defaults.
        assert_eq!(read(&from_defaults), Ok(Settings::default()));
    }

    #[test]
    fn reads_every_choice() {
        let s = read(&[
            ("BODY_FORMAT", "envelope"),
            ("RECORD_ATTRIBUTES", " stream , arrival-time"),
            ("GROUP_ID_SOURCE", "shard-id"),
            ("KPL_DEAGGREGATE", "false"),
            ("PERMANENT_FAILURES", "skip"),
        ])
        .expect("valid");
        assert_eq!(
            s,
            Settings {
                body_format: BodyFormat::Envelope,
                attributes: RecordAttributes {
                    partition_key: false,
                    sequence_number: false,
                    arrival_time: true,
                    stream: true,
                },
                group_id_source: GroupIdSource::ShardId,
                deaggregate: false,
                permanent_failures: PermanentFailures::Skip,
            }
        );
        assert!(s.source_sets_group_ids());
        let s =
            read(&[("RECORD_ATTRIBUTES", "none"), ("GROUP_ID_SOURCE", "fixed")]).expect("valid");
        assert_eq!(s.attributes, RecordAttributes::NONE);
        assert!(!s.source_sets_group_ids());
    }

    #[test]
    fn bad_values_name_variable_value_and_allowed() {
        let e = read(&[("BODY_FORMAT", "json")]).expect_err("bad");
        assert_eq!(
            e.to_string(),
            "invalid configuration: BODY_FORMAT=\"json\": one of: raw, envelope"
        );
        let e = read(&[("RECORD_ATTRIBUTES", "partition-key,color")]).expect_err("bad");
        assert_eq!(e.variable, "RECORD_ATTRIBUTES");
        assert_eq!(e.value, "partition-key,color");
        assert_eq!(e.allowed, RECORD_ATTRIBUTES.allowed.describe());
        let e = read(&[("RECORD_ATTRIBUTES", ",")]).expect_err("bad");
        assert_eq!(e.variable, "RECORD_ATTRIBUTES");
        let e = read(&[("GROUP_ID_SOURCE", "partition_key")]).expect_err("bad");
        assert_eq!(e.allowed, "one of: partition-key, shard-id, fixed");
        let e = read(&[("KPL_DEAGGREGATE", "yes")]).expect_err("bad");
        assert_eq!(e.variable, "KPL_DEAGGREGATE");
        let e = read(&[("PERMANENT_FAILURES", "drop")]).expect_err("bad");
        assert_eq!(e.allowed, "one of: report, skip");
    }
}
