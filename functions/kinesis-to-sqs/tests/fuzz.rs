//! Fuzzing with proptest, in the normal test run: KPL de-aggregation of
//! arbitrary bytes, and Kinesis events of arbitrary JSON and of arbitrary
//! records through the whole handler (fake SQS). No panic, and what comes
//! out is bounded by what went in. `PROPTEST_CASES` sets the number of
//! cases (default 64 here; e.g. `PROPTEST_CASES=100000` for a long run).
//! The cargo-fuzz targets in `fuzz/` cover the same entry points.

mod common;

use base64::Engine as _;
use common::{accepting, forwarder};
use kinesis_to_sqs::event::KinesisEvent;
use kinesis_to_sqs::settings::{BodyFormat, GroupIdSource};
use kinesis_to_sqs::{Handler, Settings, kpl, records};
use proptest::prelude::*;
use serde_json::{Value, json};
use sqs_forwarder::test_support::proptest_cases;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: proptest_cases(64),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Any JSON value, a few levels deep. Not `approximateArrivalTimestamp`:
/// `aws_lambda_events` 1.2.1 overflows (`frac * 1_000_000`) on a timestamp
/// with many decimals, a panic in builds with overflow checks (tests, fuzz)
/// and a wrapped value in release builds; found by `fuzz/` (kinesis_event),
/// upstream, and not an input Lambda sends (it writes 3 decimals).
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::from),
        "[A-Za-z0-9+/=]{0,16}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("Records".to_owned()),
                    Just("kinesis".to_owned()),
                    Just("data".to_owned()),
                    Just("sequenceNumber".to_owned()),
                    Just("partitionKey".to_owned()),
                    Just("eventID".to_owned()),
                    "[a-zA-Z]{1,8}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A record with arbitrary data, keys and ids, some fields left out.
fn any_record() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(any::<u8>(), 0..300),
        any::<bool>(),
        prop::option::of(".{0,300}"),
        prop::option::of("[0-9]{0,60}"),
        prop::option::of(".{0,40}"),
        any::<bool>(),
    )
        .prop_map(|(data, aggregate, key, seq, event_id, arn)| {
            let data = if aggregate {
                let key = key.clone().unwrap_or_default();
                kpl::aggregate(&[(key.as_str(), &data[..]), ("k2", &data[..data.len() / 2])])
            } else {
                data
            };
            let mut kinesis = json!({
                "data": base64::engine::general_purpose::STANDARD.encode(&data),
                "approximateArrivalTimestamp": 1_764_410_000.25,
            });
            if let Some(k) = key {
                kinesis["partitionKey"] = k.into();
            }
            if let Some(s) = seq {
                kinesis["sequenceNumber"] = s.into();
            }
            let mut r = json!({ "kinesis": kinesis });
            if let Some(id) = event_id {
                r["eventID"] = id.into();
            }
            if arn {
                r["eventSourceARN"] = "arn:aws:kinesis:eu-west-1:123456789012:stream/s".into();
            }
            r
        })
}

fn settings(envelope: bool, shard: bool) -> Settings {
    Settings {
        body_format: if envelope {
            BodyFormat::Envelope
        } else {
            BodyFormat::Raw
        },
        group_id_source: if shard {
            GroupIdSource::ShardId
        } else {
            GroupIdSource::PartitionKey
        },
        ..Settings::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn kpl_deaggregation_of_any_bytes(data in prop::collection::vec(any::<u8>(), 0..512)) {
        // As they are (mostly not aggregates), with the magic in front, and
        // framed with the right checksum so the protobuf decoder runs.
        let _ = kpl::deaggregate(&data);
        let mut magic = kpl::MAGIC.to_vec();
        magic.extend_from_slice(&data);
        let _ = kpl::deaggregate(&magic);
        if let Ok(users) = kpl::deaggregate(&kpl::frame(&data)) {
            // A user record costs at least two bytes of protobuf.
            prop_assert!(users.len() <= data.len() / 2 + 1);
            for u in &users {
                prop_assert!(u.data.len() <= data.len());
                prop_assert!(u.partition_key.len() <= data.len());
            }
        }
    }

    #[test]
    fn kpl_aggregates_round_trip(
        records in prop::collection::vec((".{0,20}", prop::collection::vec(any::<u8>(), 0..64)), 1..20)
    ) {
        let refs: Vec<(&str, &[u8])> = records.iter().map(|(k, d)| (k.as_str(), d.as_slice())).collect();
        let users = kpl::deaggregate(&kpl::aggregate(&refs)).expect("our own aggregate");
        prop_assert_eq!(users.len(), records.len());
        for (u, (k, d)) in users.iter().zip(&records) {
            prop_assert_eq!(&u.partition_key, k);
            prop_assert_eq!(&u.data, d);
        }
    }

    #[test]
    fn arbitrary_bytes_and_json_are_not_events_or_are_read_safely(
        bytes in prop::collection::vec(any::<u8>(), 0..256),
        value in any_json(),
    ) {
        let _ = kinesis_to_sqs::event::read(&String::from_utf8_lossy(&bytes));
        if let Ok(event) = kinesis_to_sqs::event::read(&value.to_string()) {
            let n = event.records.len();
            let prepared = records::prepare(event.records, &Settings::default(), true);
            prop_assert_eq!(prepared.records.len(), n);
        }
    }

    #[test]
    fn any_records_through_the_handler(
        recs in prop::collection::vec(any_record(), 0..12),
        fifo in any::<bool>(),
        envelope in any::<bool>(),
        shard in any::<bool>(),
    ) {
        let event: KinesisEvent = kinesis_to_sqs::event::read(&json!({ "Records": recs }).to_string())
            .expect("well-formed records");
        let n = event.records.len();
        let seqs: Vec<String> = event.records.iter().map(|r| r.kinesis.sequence_number.clone()).collect();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        let fake = accepting().delay(std::time::Duration::ZERO);
        let f = forwarder(&fake, fifo);
        let s = settings(envelope, shard);
        let prepared = records::prepare(event.records.clone(), &s, fifo);
        // Each record is at most two user records here (see any_record).
        prop_assert!(prepared.messages.len() <= 2 * n);
        match rt.block_on(Handler::new(s, f.clone())
        .handle(event, None)) {
            Ok(answer) => {
                // Whatever was not sent is reported, by a real sequence number.
                for id in kinesis_to_sqs::checkpoint::reported(&answer) {
                    prop_assert!(seqs.iter().any(|s| s == id));
                }
                prop_assert!(fake.accepted().len() <= prepared.messages.len());
            }
            Err(e) => prop_assert!(e.to_string().contains("no sequence number")),
        }
    }
}
