//! The event as Lambda sends it, read with only the fields the function
//! uses.
//!
//! [`KinesisEvent`] (aws_lambda_events) is what [`crate::Handler::handle`] takes. The
//! function does not read it with that type's own `Deserialize`: it copies
//! seven strings per record that nothing here reads (region, event name,
//! source, version, role, schema version, encryption type), and its
//! arrival-timestamp reader builds and formats an error for every record
//! (an untagged string-or-number enum that tries the string first) and then
//! formats the number again to split it. On the 10,000-record benchmark
//! event that was about a quarter of the function's instructions outside
//! signing. [`Incoming`] reads the fields the records' messages are made of
//! (`eventID`, `eventSourceARN`, and the `kinesis` record's data, partition
//! key, sequence number and arrival time), skips the rest unread, and
//! becomes a [`KinesisEvent`] by moving them.
//!
//! What it accepts and refuses is aws_lambda_events's for those fields: the
//! same required fields (`Records`, `kinesis`, `data`,
//! `approximateArrivalTimestamp`), the same defaults, base64 data, and an
//! arrival time as a number or a numeric string of non-negative seconds.
//! `tests/event_reader.rs` checks both readers give the same records.

use aws_lambda_events::encodings::SecondTimestamp;
use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::{Deserializer, Error as _};

pub use aws_lambda_events::event::kinesis::{KinesisEvent, KinesisEventRecord, KinesisRecord};
pub use aws_lambda_events::event::streams::{KinesisBatchItemFailure, KinesisEventResponse};

/// A Kinesis event, read with the fields the function uses.
#[derive(Debug, Deserialize)]
pub struct Incoming {
    #[serde(rename = "Records")]
    records: Vec<IncomingRecord>,
}

#[derive(Debug, Deserialize)]
struct IncomingRecord {
    #[serde(rename = "eventID", default)]
    event_id: Option<String>,
    #[serde(rename = "eventSourceARN", default)]
    event_source_arn: Option<String>,
    kinesis: IncomingKinesis,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IncomingKinesis {
    #[serde(deserialize_with = "arrival")]
    approximate_arrival_timestamp: DateTime<Utc>,
    #[serde(deserialize_with = "data")]
    data: Vec<u8>,
    #[serde(default)]
    partition_key: String,
    #[serde(default)]
    sequence_number: String,
}

impl From<Incoming> for KinesisEvent {
    fn from(event: Incoming) -> Self {
        let mut out = KinesisEvent::default();
        out.records = event
            .records
            .into_iter()
            .map(|r| {
                let mut kinesis = KinesisRecord::default();
                kinesis.approximate_arrival_timestamp =
                    SecondTimestamp(r.kinesis.approximate_arrival_timestamp);
                kinesis.data.0 = r.kinesis.data;
                kinesis.partition_key = r.kinesis.partition_key;
                kinesis.sequence_number = r.kinesis.sequence_number;
                let mut record = KinesisEventRecord::default();
                record.event_id = r.event_id;
                record.event_source_arn = r.event_source_arn;
                record.kinesis = kinesis;
                record
            })
            .collect();
        out
    }
}

/// `json` read as the function reads an event ([`Incoming`], through
/// [`sqs_forwarder::event_reader::read`]): the event, or the error naming the
/// field at fault.
pub fn read(json: &str) -> Result<KinesisEvent, String> {
    sqs_forwarder::event_reader::read::<Incoming>(json).map(KinesisEvent::from)
}

/// The record's data, decoded from its base64 where it lies in the event:
/// serde_json hands the string borrowed (aws_lambda_events's reader copies
/// it into a `String` first), and base64-simd decodes it into a vector of
/// the data's exact size, with the vector instructions the CPU has
/// (AVX2, SSE4.1 or NEON, detected at run time). What it accepts is what
/// aws_lambda_events's `base64` accepts (the standard alphabet, padding
/// required, no stray bits after the last byte); on a refusal the error is
/// `base64`'s own, as aws_lambda_events gives it. On the benchmark's 55 KB
/// records this took the decoding from a tenth of the function's
/// instructions (511,349 a record) to 3% (87,370; bench/notes, "per-byte
/// path").
fn data<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    struct Data;
    impl serde::de::Visitor<'_> for Data {
        type Value = Vec<u8>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Vec<u8>, E> {
            base64_simd::STANDARD.decode_to_vec(v).or_else(|_| {
                base64::engine::general_purpose::STANDARD
                    .decode(v)
                    .map_err(E::custom)
            })
        }
    }
    d.deserialize_str(Data)
}

/// The arrival time: seconds since the epoch as a JSON number or a numeric
/// string, with a fraction; as aws_lambda_events takes it, negative or
/// non-finite values are refused.
fn arrival<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    struct Seconds;
    impl serde::de::Visitor<'_> for Seconds {
        type Value = f64;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("seconds since the epoch, as a number or a string")
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<f64, E> {
            Ok(v)
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<f64, E> {
            v.parse::<f64>().map_err(E::custom)
        }
    }
    let seconds = d.deserialize_any(Seconds)?;
    // Below 2^53 s every whole second is exact; aws_lambda_events refuses
    // what it cannot split into two unsigned integers.
    if !(0.0..9_007_199_254_740_992.0).contains(&seconds) {
        return Err(D::Error::custom(format!(
            "invalid timestamp: {seconds} seconds since the epoch"
        )));
    }
    let whole = seconds.trunc();
    let millis = ((seconds - whole) * 1000.0).round().min(999.0);
    DateTime::from_timestamp(whole as i64, (millis as u32) * 1_000_000)
        .ok_or_else(|| D::Error::custom("invalid timestamp"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival_of(v: serde_json::Value) -> Result<i64, String> {
        let text = serde_json::json!({"Records": [{"kinesis": {
            "data": "AA==", "approximateArrivalTimestamp": v
        }}]})
        .to_string();
        read(&text).map(|e| {
            e.records[0]
                .kinesis
                .approximate_arrival_timestamp
                .0
                .timestamp()
        })
    }

    #[test]
    fn arrival_times_as_numbers_and_strings() {
        assert_eq!(
            arrival_of(serde_json::json!(1_764_410_000.5)),
            Ok(1_764_410_000)
        );
        assert_eq!(
            arrival_of(serde_json::json!(1_764_410_000u64)),
            Ok(1_764_410_000)
        );
        assert_eq!(
            arrival_of(serde_json::json!("1764410000.999")),
            Ok(1_764_410_000)
        );
        assert_eq!(arrival_of(serde_json::json!(0)), Ok(0));
        // The fraction is read as a fraction (aws_lambda_events 1.2 reads
        // `.25` as 25 ms).
        let text = serde_json::json!({"Records": [{"kinesis": {
            "data": "AA==", "approximateArrivalTimestamp": 1_764_410_000.25
        }}]})
        .to_string();
        let e = read(&text).expect("read");
        assert_eq!(
            e.records[0]
                .kinesis
                .approximate_arrival_timestamp
                .0
                .timestamp_subsec_millis(),
            250
        );
        for bad in [
            serde_json::json!(-1),
            serde_json::json!("yesterday"),
            serde_json::json!(null),
            serde_json::json!(1e300),
            serde_json::json!([1]),
        ] {
            let e = arrival_of(bad.clone()).expect_err("refused");
            assert!(
                e.starts_with("[Records[0].kinesis.approximateArrivalTimestamp]"),
                "{bad}: {e}"
            );
        }
    }
}
