//! Fuzzing with proptest, in the normal test run: arbitrary JSON and
//! arbitrary S3-shaped records through the handler (fake SQS), key decoding
//! of arbitrary text, and the lines reader over arbitrary bytes. No panic;
//! no more messages than records, no line longer than the cap.
//! `PROPTEST_CASES` sets the number of cases (default 64 here).

use proptest::prelude::*;
use s3_to_sqs::event::{decode_key, parse};
use s3_to_sqs::lines::LineReader;
use s3_to_sqs::{Handler, Incoming, Settings};
use serde_json::{Value, json};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::test_support::{FakeSqs, proptest_cases};
use sqs_forwarder::{Forwarder, SendSettings};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: proptest_cases(64),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn handler(fifo: bool) -> Handler<FakeSqs> {
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::Config::builder()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .region(aws_sdk_s3::config::Region::new("us-east-1"))
            .build(),
    );
    let rules = EncodeRules {
        fifo,
        content_based_deduplication: fifo.then_some(false),
        ..EncodeRules::default()
    };
    let forwarder = Forwarder::new(FakeSqs::new(), SendSettings::default(), rules);
    Handler::new(Settings::default(), forwarder, s3)
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        Just(json!("2")),
        Just(json!("aws:s3")),
        Just(json!("2026-11-29T10:15:30.123Z")),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("Records".to_owned()),
                    Just("eventVersion".to_owned()),
                    Just("eventSource".to_owned()),
                    Just("eventName".to_owned()),
                    Just("eventTime".to_owned()),
                    Just("s3".to_owned()),
                    Just("bucket".to_owned()),
                    Just("object".to_owned()),
                    Just("name".to_owned()),
                    Just("key".to_owned()),
                    Just("detail-type".to_owned()),
                    Just("detail".to_owned()),
                    Just("Event".to_owned()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A notification record with arbitrary names, keys and fields.
fn any_record() -> impl Strategy<Value = Value> {
    (
        ".{0,30}",
        ".{0,20}",
        ".{0,200}",
        prop::option::of(any::<i64>()),
        prop::option::of(".{0,20}"),
        prop::option::of("[0-9A-F]{0,20}"),
    )
        .prop_map(|(name, bucket, key, size, version, sequencer)| {
            let mut object = json!({ "key": key });
            if let Some(s) = size {
                object["size"] = s.into();
            }
            if let Some(v) = version {
                object["versionId"] = v.into();
            }
            if let Some(s) = sequencer {
                object["sequencer"] = s.into();
            }
            json!({
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": "eu-west-1",
                "eventTime": "2026-11-29T10:15:30.123Z",
                "eventName": name,
                "s3": { "bucket": { "name": bucket }, "object": object }
            })
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_json_is_read_or_refused(value in any_json(), bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
            let _ = parse(v);
        }
        let records = value.get("Records").and_then(Value::as_array).map_or(1, Vec::len);
        if let Ok(Incoming::Objects(objects)) = parse(value) {
            prop_assert!(objects.len() <= records);
        }
    }

    #[test]
    fn arbitrary_records_through_the_handler(records in prop::collection::vec(any_record(), 1..12), fifo in any::<bool>()) {
        let n = records.len();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        let h = handler(fifo);
        match rt.block_on(h.handle(json!({ "Records": records }), None)) {
            Ok(report) => {
                let sent = h.forwarder().transport().sent();
                // Success means every record was forwarded (no filter here).
                prop_assert_eq!(report.records, n);
                prop_assert_eq!(sent, n);
                prop_assert_eq!(report.messages_sent, n as u64);
            }
            // Refused (empty names, keys that are not UTF-8) or not
            // forwarded: an error that says so, never a panic.
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                prop_assert!(h.forwarder().transport().sent() <= n);
            }
        }
    }

    #[test]
    fn any_key_decodes_or_says_why(raw in ".{0,64}", bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(k) = decode_key(&raw) {
            // Decoding never makes a key longer.
            prop_assert!(k.len() <= raw.len());
        }
        let encoded: String = bytes.iter().map(|b| format!("%{b:02X}")).collect();
        match decode_key(&encoded) {
            Ok(k) => prop_assert_eq!(k.as_bytes(), &bytes[..]),
            Err(_) => prop_assert!(std::str::from_utf8(&bytes).is_err()),
        }
    }

    #[test]
    fn lines_of_any_bytes_are_bounded(
        data in prop::collection::vec(prop_oneof![any::<u8>(), Just(b'\n'), Just(b'\r')], 0..2000),
        cap in 0usize..64,
        buffer in 1usize..32,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("rt");
        let lines = rt.block_on(async {
            let source = tokio::io::BufReader::with_capacity(buffer, &data[..]);
            let mut reader = LineReader::new(source, cap);
            let mut lines = Vec::new();
            while let Some(line) = reader.next_line().await.expect("in-memory reads do not fail") {
                lines.push(line);
            }
            lines
        });
        let newlines = data.iter().filter(|&&b| b == b'\n').count();
        prop_assert!(lines.len() <= newlines + 1);
        let mut total = 0u64;
        for (i, l) in lines.iter().enumerate() {
            prop_assert_eq!(l.number, i as u64 + 1);
            prop_assert!(l.bytes.len() <= cap);
            prop_assert!(l.bytes.len() as u64 <= l.len);
            total += l.len;
        }
        prop_assert!(total + newlines as u64 <= data.len() as u64);
    }
}
