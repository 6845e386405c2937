//! Shaping: the body pointer, typed attributes, `attributes_from`, group
//! ids, and the content fault of a record that cannot be shaped.

use sha2::{Digest, Sha256};

use super::super::{Decision, SourceKey};
use super::{Rec, decide, routes, sent};
use crate::message::{Attribute, AttributeValue, Body, Message};
use crate::send::outcome::Cause;

/// The fault's message, after checking it is a permanent content fault.
fn fault(decision: Decision<usize>) -> String {
    match decision {
        Decision::Fault { position, failure } => {
            assert_eq!(position, 7);
            assert_eq!(failure.code, "ShapeFailed");
            assert_eq!(failure.cause, Cause::Content);
            assert!(!failure.retryable);
            failure.message
        }
        other => panic!("expected a fault: {other:?}"),
    }
}

#[test]
fn the_body_is_the_field_a_string_as_its_text_anything_else_as_json() {
    let r = routes(r#"{"body": "/payload"}"#);
    let body = |data: &str| sent(decide(&r, &Rec::json(data))).1.body;
    assert_eq!(body(r#"{"payload": "héllo"}"#), Body::Text("héllo".into()));
    assert_eq!(
        body(r#"{"payload": {"b": [1, 2], "a": null}}"#),
        Body::Text(r#"{"a":null,"b":[1,2]}"#.into())
    );
    assert_eq!(body(r#"{"payload": 1.5}"#), Body::Text("1.5".into()));
    let whole = routes(r#"{"body": ""}"#);
    let (_, m) = sent(decide(&whole, &Rec::json(" { \"a\" : 1 } ")));
    assert_eq!(m.body, Body::Text(r#"{"a":1}"#.into()));
}

#[test]
fn a_body_that_cannot_be_read_is_a_fault_naming_the_pointer() {
    let r = routes(r#"{"body": "/payload"}"#);
    let missing = fault(decide(&r, &Rec::json(r#"{"other": "secret"}"#)));
    assert_eq!(
        missing,
        "body \"/payload\": the record's data has no such field"
    );
    let not_json = fault(decide(&r, &Rec::bytes(b"plain secret")));
    assert_eq!(not_json, "body \"/payload\": the record's data is not JSON");
    let no_data = fault(decide(&r, &Rec::default()));
    assert_eq!(no_data, "body \"/payload\": the record has no data");
    // `null` counts as not there: no body of the text `null`.
    let null = fault(decide(&r, &Rec::json(r#"{"payload": null}"#)));
    assert_eq!(
        null,
        "body \"/payload\": the field is null (null counts as not there)"
    );
    let whole = routes(r#"{"body": ""}"#);
    let null_document = fault(decide(&whole, &Rec::json("null")));
    assert_eq!(
        null_document,
        "body \"\": the field is null (null counts as not there)"
    );
}

#[test]
fn typed_attributes_from_fields_and_keys() {
    let r = routes(
        r#"{"attributes": {"region": {"field": "/region"},
                           "count": {"field": "/n", "type": "Number"},
                           "text_n": {"field": "/text_n", "type": "Number"},
                           "obj": {"field": "/obj", "type": "String"},
                           "part": {"key": "partition_key", "type": "Number"},
                           "absent": {"field": "/absent", "type": "Number"}}}"#,
    );
    let record = Rec::json(
        r#"{"region": "eu", "n": 3, "text_n": "-1.5e3", "obj": {"x": true}, "absent": null}"#,
    )
    .key(SourceKey::PartitionKey, "12");
    let (_, m) = sent(decide(&r, &record));
    let mut got = m.attributes.clone();
    got.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(
        got,
        vec![
            Attribute::number("count", "3"),
            Attribute::string("obj", r#"{"x":true}"#),
            Attribute::number("part", "12"),
            Attribute::string("region", "eu"),
            Attribute::number("text_n", "-1.5e3"),
        ],
        "a missing or null field omits its attribute"
    );
}

#[test]
fn a_number_attribute_that_is_not_a_number_is_a_fault() {
    let r = routes(r#"{"attributes": {"count": {"field": "/n", "type": "Number"}}}"#);
    for n in [r#""many""#, "true", "[1]", r#""""#] {
        let message = fault(decide(&r, &Rec::json(&format!(r#"{{"n": {n}}}"#))));
        assert_eq!(
            message, "attribute \"count\": the field \"/n\" is not a number",
            "{n}"
        );
    }
    let r = routes(r#"{"attributes": {"p": {"key": "partition_key", "type": "Number"}}}"#);
    let message = fault(decide(
        &r,
        &Rec::default().key(SourceKey::PartitionKey, "k-1"),
    ));
    assert_eq!(
        message,
        "attribute \"p\": the key \"partition_key\" is not a number"
    );
}

#[test]
fn configured_attributes_replace_the_functions_own_of_the_same_name() {
    let r = routes(r#"{"attributes": {"kinesis.partitionKey": {"field": "/k"}}}"#);
    let message = Message::new("b", 7usize)
        .attribute(Attribute::string("kinesis.partitionKey", "old"))
        .attribute(Attribute::string("other", "kept"));
    let (_, m) = sent(r.decide(&Rec::json(r#"{"k": "new"}"#), message));
    assert_eq!(
        m.attributes,
        vec![
            Attribute::string("kinesis.partitionKey", "new"),
            Attribute::string("other", "kept")
        ]
    );
}

#[test]
fn attributes_from_an_object_of_the_record() {
    let r = routes(
        r#"{"attributes_from": "/msg_attributes",
            "attributes": {"b": {"field": "/b"}}}"#,
    );
    let record = Rec::json(
        r#"{"b": "configured wins",
            "msg_attributes": {"s": "text", "n": 12, "skip": null, "b": "from record",
                               "f": {"DataType": "Number.float", "StringValue": "1.25"},
                               "t": {"DataType": "String.json", "StringValue": "{}"},
                               "bin": {"DataType": "Binary", "BinaryValue": "AAE="}}}"#,
    );
    let (_, m) = sent(decide(&r, &record));
    let get = |name: &str| m.attributes.iter().find(|a| a.name == name).cloned();
    assert_eq!(get("s"), Some(Attribute::string("s", "text")));
    assert_eq!(get("n"), Some(Attribute::number("n", "12")));
    assert_eq!(get("skip"), None);
    assert_eq!(get("b"), Some(Attribute::string("b", "configured wins")));
    assert_eq!(
        get("f"),
        Some(Attribute::number("f", "1.25").with_data_type("Number.float"))
    );
    assert_eq!(get("t").map(|a| a.data_type), Some("String.json".into()));
    assert_eq!(
        get("bin").map(|a| a.value),
        Some(AttributeValue::Binary(vec![0, 1]))
    );
    assert_eq!(m.attributes.len(), 6);
}

#[test]
fn attributes_from_absent_adds_nothing_and_a_bad_shape_is_a_fault() {
    let r = routes(r#"{"attributes_from": "/attrs"}"#);
    for data in [
        &br#"{"other": 1}"#[..],
        &br#"{"attrs": null}"#[..],
        &b"not json"[..],
    ] {
        let (_, m) = sent(decide(&r, &Rec::bytes(data)));
        assert!(m.attributes.is_empty());
    }
    let message = fault(decide(&r, &Rec::json(r#"{"attrs": [1]}"#)));
    assert_eq!(
        message,
        "attributes_from \"/attrs\": the record holds an array there, not an object of attributes"
    );
    for (attrs, says) in [
        (r#"{"x": true}"#, "attribute \"x\" is a boolean"),
        (r#"{"x": [1]}"#, "attribute \"x\" is an array"),
        (
            r#"{"x": {"StringValue": "v"}}"#,
            "attribute \"x\": an object must hold",
        ),
        (
            r#"{"x": {"DataType": "Number"}}"#,
            "attribute \"x\": an object must hold",
        ),
        (
            r#"{"x": {"DataType": "Binary", "BinaryValue": "%%"}}"#,
            "attribute \"x\": an object must hold",
        ),
        (
            r#"{"x": {"DataType": "Text", "StringValue": "v"}}"#,
            "attribute \"x\": an object must hold",
        ),
    ] {
        let message = fault(decide(&r, &Rec::json(&format!(r#"{{"attrs": {attrs}}}"#))));
        assert!(message.contains(says), "{attrs}: {message}");
    }
    let many: Vec<String> = (0..11).map(|i| format!(r#""a{i}": "v""#)).collect();
    let data = format!(r#"{{"attrs": {{{}}}}}"#, many.join(","));
    let message = fault(decide(&r, &Rec::json(&data)));
    assert!(
        message.contains("11 attributes; SQS allows at most 10"),
        "{message}"
    );
}

#[test]
fn group_ids_valid_kept_invalid_hashed_missing_left_alone() {
    let r = routes(r#"{"group_id": {"field": "/customer"}}"#);
    let group = |data: &str, own: Option<&str>| {
        let mut message = Message::new("b", 7usize);
        message.group_id = own.map(str::to_owned);
        sent(r.decide(&Rec::json(data), message)).1.group_id
    };
    assert_eq!(
        group(r#"{"customer": "acme-1"}"#, Some("own")),
        Some("acme-1".into())
    );
    assert_eq!(group(r#"{"customer": 42}"#, None), Some("42".into()));
    let hashed = |value: &str| format!("g-{}", hex::encode(Sha256::digest(value.as_bytes())));
    for value in ["acme corp", "zürich", &"k".repeat(129)] {
        let data = serde_json::json!({ "customer": value }).to_string();
        let id = group(&data, None).expect("an id");
        assert_eq!(id, hashed(value));
        assert!(crate::message::fifo_id::is_valid(&id), "{id}");
    }
    assert_eq!(group(r#"{"customer": ""}"#, None), Some(hashed("")));
    assert_eq!(group(r#"{"other": 1}"#, Some("own")), Some("own".into()));
    assert_eq!(group(r#"{"customer": null}"#, None), None);
    assert_eq!(group("not json", Some("own")), Some("own".into()));

    let by_key = routes(r#"{"group_id": {"key": "header", "name": "x-tenant"}}"#);
    let (_, m) = sent(decide(&by_key, &Rec::default().header("x-tenant", "t 1")));
    assert_eq!(m.group_id, Some(hashed("t 1")));
}

#[test]
fn shaping_keeps_what_it_is_not_asked_to_change() {
    let r = routes(r#"{"attributes": {"a": {"field": "/a"}}}"#);
    let message = Message::new("original", 7usize)
        .group_id("g")
        .deduplication_id("d")
        .delay_seconds(3);
    let (_, m) = sent(r.decide(&Rec::json(r#"{"a": "x"}"#), message));
    assert_eq!(m.body, Body::Text("original".into()));
    assert_eq!(
        (
            m.group_id.as_deref(),
            m.deduplication_id.as_deref(),
            m.delay_seconds
        ),
        (Some("g"), Some("d"), Some(3))
    );
}
