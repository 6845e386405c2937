//! Fuzzing Distributed Map batches with proptest, in the normal test run:
//! arbitrary JSON under `Items` and `BatchInput` is read or refused, never
//! a panic; a batch that is read keeps each item's value (its JSON, pretty
//! or not, read back as the same value) and, through the handler (fake
//! SQS), every item becomes exactly one message. `PROPTEST_CASES` sets the
//! number of cases (default 64 here).

use proptest::prelude::*;
use s3_to_sqs::event::parse_json;
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

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        Just(json!("a \"quoted\" {brace} \\ back")),
    ];
    leaf.prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("Items".to_owned()),
                    Just("BatchInput".to_owned()),
                    Just("index".to_owned()),
                    Just("value".to_owned()),
                    Just("bucket".to_owned()),
                    Just("key".to_owned()),
                    ".{0,6}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
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

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_batches_are_read_or_refused(items in any_json(), input in any_json()) {
        let text = json!({ "Items": items, "BatchInput": input }).to_string();
        match parse_json(&text) {
            Ok(Incoming::MapBatch(batch)) => {
                prop_assert_eq!(Some(batch.items.len()), items.as_array().map(Vec::len));
                prop_assert!(!batch.object.bucket.is_empty() && !batch.object.key.is_empty());
            }
            Ok(other) => prop_assert!(false, "read as {:?}", other),
            Err(e) => prop_assert!(e.to_string().starts_with("malformed S3 event: Distributed Map batch: ")),
        }
    }

    #[test]
    fn every_item_is_one_message_of_its_value(
        values in prop::collection::vec(any_json(), 0..30),
        key in ".{1,40}",
        pretty in any::<bool>(),
        fifo in any::<bool>(),
    ) {
        let items: Vec<Value> = values
            .iter()
            .enumerate()
            .map(|(i, v)| json!({ "index": i * 3, "value": v }))
            .collect();
        let batch = json!({ "Items": items, "BatchInput": { "bucket": "b", "key": key } });
        let text = if pretty {
            serde_json::to_string_pretty(&batch).expect("json")
        } else {
            batch.to_string()
        };
        let Ok(Incoming::MapBatch(read)) = parse_json(&text) else {
            return Err(TestCaseError::fail("a well-formed batch is read"));
        };
        for (item, value) in read.items.iter().zip(&values) {
            // Compared as serde_json reads both texts (its float parsing
            // need not give back the very float it wrote).
            let back: Value = serde_json::from_str(&item.body).expect("the body is JSON");
            let sent: Value = serde_json::from_str(&value.to_string()).expect("json");
            prop_assert_eq!(back, sent);
            prop_assert!(!item.body.contains('\n'));
        }
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        let h = handler(fifo);
        let report = rt
            .block_on(h.handle_read(parse_json(&text), None))
            .expect("every item forwarded");
        prop_assert_eq!(report.messages_sent, values.len() as u64);
        prop_assert_eq!(h.forwarder().transport().sent(), values.len());
    }
}
