use super::*;

fn marked(version: &str) -> HashMap<String, ReceivedAttribute> {
    HashMap::from([(
        MARKER_ATTRIBUTE.to_owned(),
        ReceivedAttribute::string(version),
    )])
}

#[test]
fn a_plain_message_is_one_record_with_its_attributes() {
    let attrs = HashMap::from([("k".to_owned(), ReceivedAttribute::string("v"))]);
    let got = records("m", "hello", &attrs).expect("plain");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].id, "m:0");
    assert_eq!(got[0].body, "hello");
    assert_eq!(got[0].attributes, attrs);
}

#[test]
fn an_aggregate_gives_its_records_in_order_with_their_parts() {
    let body = r#"{"v":1,"records":[{"body":"a"},{"body":"AP8=","attributes":{"sqs-forwarder.encoding":{"dataType":"String","stringValue":"base64"},"b":{"dataType":"Binary","binaryValue":"AQ=="}},"deduplicationId":"d2"}]}"#;
    let got = records("m", body, &marked("1")).expect("aggregate");
    assert_eq!(got.len(), 2);
    assert_eq!((got[0].id.as_str(), got[0].body.as_str()), ("m:0", "a"));
    assert!(got[0].attributes.is_empty());
    assert_eq!(got[1].index, 1);
    assert_eq!(got[1].deduplication_id.as_deref(), Some("d2"));
    assert_eq!(
        got[1].body_bytes("sqs-forwarder.encoding").expect("base64"),
        vec![0u8, 255]
    );
    assert_eq!(
        got[0].body_bytes("sqs-forwarder.encoding").expect("text"),
        b"a"
    );
}

#[test]
fn what_is_not_an_aggregate_is_refused_saying_why() {
    let cases = [
        ("2", r#"{"v":1,"records":[]}"#, "version \"2\""),
        ("1", "not json", "message m:"),
        ("1", r#"{"v":2,"records":[]}"#, "body says version 2"),
        ("1", r#"{"v":1}"#, "records"),
        ("1", r#"{"v":1,"records":[{"nobody":1}]}"#, "body"),
        (
            "1",
            r#"{"v":1,"records":[{"body":"x","attributes":{"a":{"dataType":"Binary","stringValue":"x"}}}]}"#,
            "record 0, attribute \"a\"",
        ),
        (
            "1",
            r#"{"v":1,"records":[{"body":"x","attributes":{"a":{"dataType":"Binary","binaryValue":"%%"}}}]}"#,
            "not base64",
        ),
    ];
    for (version, body, says) in cases {
        let err = records("m", body, &marked(version)).expect_err(body);
        assert!(err.to_string().contains(says), "{body}: {err}");
    }
}
