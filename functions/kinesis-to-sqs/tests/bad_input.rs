//! Bad configuration and bad events: every variable's bad value is an error
//! naming the variable, the value and what is allowed; an event Lambda could
//! not have sent fails with the path of the field at fault (the way
//! `lambda_runtime` reads it), and a record that cannot become a message is
//! reported in `batchItemFailures`, never dropped.

mod common;

use common::{accepting, event, forwarder, record, seq};
use kinesis_to_sqs::checkpoint::reported;
use kinesis_to_sqs::event::Incoming;
use kinesis_to_sqs::{Handler, Settings, VARIABLES};
use serde_json::json;
use sqs_forwarder::event_reader::Payload;
use sqs_forwarder::test_support::{
    BadValue, assert_bad_values_are_named, assert_every_variable_has_a_case,
};

/// (variable, bad value, a word the `allowed` text must contain)
const BAD: &[(&str, &str, &str)] = &[
    ("BODY_FORMAT", "json", "envelope"),
    ("RECORD_ATTRIBUTES", "partition-key,colour", "partition-key"),
    ("GROUP_ID_SOURCE", "partition_key", "shard-id"),
    ("KPL_DEAGGREGATE", "yes", "true"),
    ("PERMANENT_FAILURES", "drop", "skip"),
];

/// The table as the shared checks take it.
fn cases() -> Vec<BadValue<'static>> {
    BAD.iter()
        .map(|&(variable, value, allowed)| BadValue::new(variable, value, allowed))
        .collect()
}

#[test]
fn every_variable_has_a_bad_value_case() {
    assert_every_variable_has_a_case(VARIABLES, &cases());
}

#[test]
fn bad_values_name_the_variable_the_value_and_what_is_allowed() {
    assert_bad_values_are_named(&cases(), Settings::from_env);
}

/// The error `lambda_runtime` fails the invocation with for this payload:
/// the function's payload type is `Payload<Incoming>`, which lambda_runtime
/// reads through `serde_path_to_error` (the path of the whole document, ".",
/// which its message leaves out) and which reads the event again with the
/// path kept when it is malformed, so the message starts with the path of
/// the field at fault.
fn runtime_error(payload: &serde_json::Value) -> String {
    let text = payload.to_string();
    let de = &mut serde_json::Deserializer::from_str(&text);
    match serde_path_to_error::deserialize::<_, Payload<Incoming>>(de) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => {
            assert_eq!(e.path().to_string(), ".", "{e}");
            e.inner().to_string()
        }
    }
}

#[test]
fn malformed_events_fail_naming_the_record_and_field() {
    let good = record(0, "pk", b"ok");
    let mut bad_base64 = record(1, "pk", b"x");
    bad_base64["kinesis"]["data"] = json!("not base64!");
    let e = runtime_error(&json!({"Records": [good.clone(), bad_base64]}));
    assert!(e.starts_with("[Records[1].kinesis.data]"), "{e}");

    let mut wrong_type = record(0, "pk", b"x");
    wrong_type["kinesis"]["data"] = json!(42);
    let e = runtime_error(&json!({"Records": [wrong_type]}));
    assert!(e.starts_with("[Records[0].kinesis.data]"), "{e}");

    let mut no_data = record(0, "pk", b"x");
    no_data["kinesis"]
        .as_object_mut()
        .expect("kinesis")
        .remove("data");
    let e = runtime_error(&json!({"Records": [good.clone(), good.clone(), no_data]}));
    assert!(
        e.starts_with("[Records[2].kinesis]") && e.contains("data"),
        "{e}"
    );

    let mut no_time = record(0, "pk", b"x");
    no_time["kinesis"]["approximateArrivalTimestamp"] = json!("yesterday");
    let e = runtime_error(&json!({"Records": [no_time]}));
    assert!(
        e.starts_with("[Records[0].kinesis.approximateArrivalTimestamp]"),
        "{e}"
    );

    let e = runtime_error(&json!({"records": []}));
    assert!(e.contains("Records"), "{e}");
    let e = runtime_error(&json!({"Records": {"0": good}}));
    assert!(e.starts_with("[Records]"), "{e}");
    // An array is read as the struct's fields in order: `Records` first.
    let e = runtime_error(&json!([1, 2]));
    assert!(
        e.starts_with("[[0]]") && e.contains("expected a sequence"),
        "{e}"
    );
}

#[tokio::test]
async fn an_empty_batch_sends_nothing_and_reports_nothing() {
    let fake = accepting();
    let f = forwarder(&fake, false);
    let answer = Handler::new(Settings::default(), f.clone())
        .handle(event(vec![]), None)
        .await
        .expect("an answer");
    assert!(answer.batch_item_failures.is_empty());
    assert_eq!(fake.call_count(), 0);
}

#[tokio::test]
async fn records_that_cannot_be_messages_are_reported_not_dropped() {
    // An empty record (SQS takes no empty message), and a record that looks
    // like a KPL aggregate but is corrupt, between two good ones.
    let mut corrupt = kinesis_to_sqs::kpl::MAGIC.to_vec();
    corrupt.extend_from_slice(&[0u8; 20]);
    let ev = event(vec![
        record(0, "pk", b"first"),
        record(1, "pk", b""),
        record(2, "pk", &corrupt),
        record(3, "pk", b"last"),
    ]);
    let fake = accepting();
    let f = forwarder(&fake, false);
    let answer = Handler::new(Settings::default(), f.clone())
        .handle(ev, None)
        .await
        .expect("an answer");
    let mut bodies = fake.accepted_bodies();
    bodies.sort();
    assert_eq!(bodies, ["first", "last"]);
    // Every record that did not reach SQS is reported, so Lambda's
    // checkpoint stops before the first of them.
    assert_eq!(reported(&answer), [seq(1).as_str(), seq(2).as_str()]);
}

#[tokio::test]
async fn a_failed_record_without_a_sequence_number_fails_the_invocation() {
    let mut r = record(0, "pk", b"");
    r["kinesis"]
        .as_object_mut()
        .expect("kinesis")
        .remove("sequenceNumber");
    let fake = accepting();
    let f = forwarder(&fake, false);
    let e = Handler::new(Settings::default(), f.clone())
        .handle(event(vec![r]), None)
        .await
        .expect_err("no way to report it");
    let text = e.to_string();
    assert!(
        text.contains("record 0") && text.contains("no sequence number"),
        "{text}"
    );
}
