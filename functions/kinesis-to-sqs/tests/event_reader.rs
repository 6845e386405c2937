//! The function reads events with its own reader (`event::Incoming`, the
//! fields it uses); aws_lambda_events's `KinesisEvent` reads them whole.
//! Both must give the same records for every field the function uses, and
//! refuse the same malformed events.

mod common;

use common::record;
use kinesis_to_sqs::event::{self, KinesisEvent, KinesisEventRecord};
use serde_json::{Value, json};

/// The fields the function reads from a record.
fn used(r: &KinesisEventRecord) -> impl PartialEq + std::fmt::Debug + '_ {
    (
        r.event_id.as_deref(),
        r.event_source_arn.as_deref(),
        &r.kinesis.data.0,
        r.kinesis.partition_key.as_str(),
        r.kinesis.sequence_number.as_str(),
        r.kinesis.approximate_arrival_timestamp.0.timestamp(),
    )
}

fn both(text: &str) -> (Result<KinesisEvent, String>, Result<KinesisEvent, String>) {
    let ours = event::read(text);
    let theirs = serde_json::from_str::<KinesisEvent>(text).map_err(|e| e.to_string());
    (ours, theirs)
}

fn same_records(text: &str) {
    let (ours, theirs) = both(text);
    let (ours, theirs) = (ours.expect("ours"), theirs.expect("aws_lambda_events"));
    assert_eq!(ours.records.len(), theirs.records.len());
    for (a, b) in ours.records.iter().zip(&theirs.records) {
        assert_eq!(used(a), used(b));
    }
}

#[test]
fn the_samples_read_the_same() {
    let dir = format!("{}/../../events", env!("CARGO_MANIFEST_DIR"));
    let mut read = 0;
    for entry in std::fs::read_dir(&dir).expect("events/") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("kinesis-") && name.ends_with(".json") {
            same_records(&std::fs::read_to_string(&path).expect("read"));
            read += 1;
        }
    }
    assert!(read >= 3, "{read} samples");
}

#[test]
fn records_with_missing_optional_fields_and_odd_times_read_the_same() {
    let mut minimal = json!({"kinesis": {"data": "aGk=", "approximateArrivalTimestamp": 1}});
    let mut string_time = record(1, "pk", b"x");
    string_time["kinesis"]["approximateArrivalTimestamp"] = json!("1764410000.25");
    let mut whole_time = record(2, "pk", &[0xff, 0]);
    whole_time["kinesis"]["approximateArrivalTimestamp"] = json!(1_764_410_000u64);
    let mut extra = record(3, "é\"\\", b"{}");
    extra["unknown"] = json!({"nested": [1, 2, {"x": null}]});
    extra["kinesis"]["unknown"] = json!(true);
    minimal["eventID"] = Value::Null;
    let text = json!({"Records": [minimal, string_time, whole_time, extra, record(4, "", b"")]})
        .to_string();
    same_records(&text);
    same_records(r#"{"Records":[]}"#);
}

#[test]
fn malformed_events_are_refused_by_both() {
    let good = record(0, "pk", b"x");
    let mut cases = vec![json!({}), json!({"Records": {}}), json!([1]), json!("x")];
    for (field, value) in [
        ("data", json!("not base64!")),
        ("data", json!(42)),
        ("approximateArrivalTimestamp", json!("yesterday")),
        ("approximateArrivalTimestamp", json!(-5)),
        ("approximateArrivalTimestamp", json!(null)),
        ("partitionKey", json!(7)),
        ("sequenceNumber", json!([])),
    ] {
        let mut r = good.clone();
        r["kinesis"][field] = value;
        cases.push(json!({"Records": [good.clone(), r]}));
    }
    for field in ["data", "approximateArrivalTimestamp"] {
        let mut r = good.clone();
        r["kinesis"].as_object_mut().expect("kinesis").remove(field);
        cases.push(json!({"Records": [r]}));
    }
    let mut no_kinesis = good.clone();
    no_kinesis
        .as_object_mut()
        .expect("record")
        .remove("kinesis");
    cases.push(json!({"Records": [no_kinesis]}));
    let mut arn_number = good.clone();
    arn_number["eventSourceARN"] = json!(1);
    cases.push(json!({"Records": [arn_number]}));
    for case in cases {
        let (ours, theirs) = both(&case.to_string());
        assert!(ours.is_err(), "ours accepted {case}");
        assert!(theirs.is_err(), "aws_lambda_events accepted {case}");
    }
}
