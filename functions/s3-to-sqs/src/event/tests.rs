use serde_json::{Value, json};

use super::*;

/// A sample event from the workspace's `events/`.
pub(super) fn sample(name: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The object events a sample holds.
pub(super) fn objects(name: &str) -> Vec<ObjectEvent> {
    match parse(sample(name)) {
        Ok(Incoming::Objects(o)) => o,
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn sample_test_event() {
    assert_eq!(
        parse(sample("s3-test-event.json")),
        Ok(Incoming::TestEvent {
            bucket: Some("acme-orders-inbox".into())
        })
    );
}

#[test]
fn bad_inputs_are_named() {
    let e = parse(json!([1, 2])).expect_err("array");
    assert_eq!(
        e.to_string(),
        "malformed S3 event: expected a JSON object, got an array"
    );

    let e = parse(json!({"hello": "world"})).expect_err("unknown shape");
    assert!(matches!(e, EventError::Malformed(_)), "{e}");

    let mut v = sample("s3-put.json");
    v["Records"][0]["eventVersion"] = json!("3.0");
    assert_eq!(
        parse(v).expect_err("version"),
        EventError::UnknownVersion {
            place: "record 0".into(),
            version: "3.0".into()
        }
    );

    let mut v = sample("s3-put.json");
    v["Records"][0]["eventSource"] = json!("aws:sqs");
    let e = parse(v).expect_err("source");
    assert_eq!(
        e.to_string(),
        "not an S3 event: record 0 comes from \"aws:sqs\", not aws:s3"
    );

    let mut v = sample("s3-put.json");
    v["Records"][0]["s3"]["object"]
        .as_object_mut()
        .expect("object")
        .remove("key");
    assert_eq!(
        parse(v).expect_err("no key").to_string(),
        "malformed S3 event: record 0 has no s3.object.key"
    );

    let mut v = sample("s3-put.json");
    v["Records"][0]
        .as_object_mut()
        .expect("record")
        .remove("s3");
    let e = parse(v).expect_err("no s3");
    assert!(e.to_string().contains("missing field `s3`"), "{e}");

    let e = parse(json!({"Records": []})).expect_err("empty");
    assert!(e.to_string().contains("without records"), "{e}");

    let mut v = sample("s3-eventbridge-object-created.json");
    v["detail"]["version"] = json!("1");
    assert!(matches!(
        parse(v).expect_err("version"),
        EventError::UnknownVersion { .. }
    ));

    let mut v = sample("s3-eventbridge-object-created.json");
    v["source"] = json!("aws.ec2");
    assert!(matches!(
        parse(v).expect_err("source"),
        EventError::NotS3(_)
    ));

    let mut v = sample("s3-eventbridge-object-created.json");
    v["detail"]
        .as_object_mut()
        .expect("detail")
        .remove("object");
    let e = parse(v).expect_err("no object");
    assert!(e.to_string().contains("missing field `object`"), "{e}");

    let mut v = sample("s3-multi-record.json");
    v["Records"][2]["s3"]["object"]["size"] = json!("big");
    let e = parse(v).expect_err("bad size");
    assert!(
        e.to_string()
            .starts_with("malformed S3 event: not an S3 event notification: Records[2].s3.object.size: invalid type"),
        "{e}"
    );

    let e = parse(json!({"Records": null})).expect_err("null records");
    assert!(matches!(e, EventError::Malformed(_)), "{e}");
}

/// What lambda_runtime hands the function (`Event`, read from the
/// invocation's body) is what `parse` reads, for every sample and for
/// events the function must refuse.
#[test]
fn the_lambda_read_is_parse() {
    let mut events: Vec<Value> = [
        "s3-put.json",
        "s3-delete.json",
        "s3-key-unicode.json",
        "s3-test-event.json",
        "s3-eventbridge-object-created.json",
        "s3-eventbridge-object-deleted.json",
        "s3-multi-record.json",
    ]
    .into_iter()
    .map(sample)
    .collect();
    let mut v = sample("s3-put.json");
    v["Records"][0]["eventVersion"] = json!("3.0");
    events.push(v);
    let mut v = sample("s3-put.json");
    v["Records"][0]["s3"]["object"]["key"] = json!(7);
    events.push(v);
    events.extend([
        json!([1, 2]),
        json!("text"),
        json!(null),
        json!({"hello": "world"}),
        json!({"Records": []}),
        json!({"Records": [1]}),
        json!({"Event": "s3:TestEvent"}),
        json!({"Event": 5, "Bucket": "b"}),
    ]);
    for event in events {
        let text = event.to_string();
        let Event(read) = serde_json::from_str(&text).expect("any JSON is an Event");
        assert_eq!(read, parse(event.clone()), "{event}");
    }
}
