use std::collections::BTreeMap;

use amq_protocol::types::{
    AMQPValue, ByteArray, DecimalValue, FieldArray, FieldTable, LongString, ShortString,
};
use serde_json::Value;
use sqs_forwarder::{Attribute, AttributeValue};

use super::*;
use crate::settings::HeaderSelection;

fn rules() -> MappingRules {
    MappingRules {
        dedup: DedupFrom::Auto,
        group: GroupFrom::RoutingKey,
        properties: vec![Property::ContentType, Property::RoutingKey],
        headers: HeaderSelection::All,
    }
}

fn incoming() -> Incoming {
    Incoming {
        body: b"{\"order\":1}".to_vec(),
        properties: Properties {
            content_type: Some("application/json".into()),
            message_id: Some("m-1".into()),
            correlation_id: Some("c-1".into()),
            ..Properties::default()
        },
        headers: vec![
            ("tenant".into(), FieldValue::Bytes(b"acme".to_vec())),
            ("attempt".into(), FieldValue::Number("3".into())),
            ("urgent".into(), FieldValue::Bool(true)),
            ("empty".into(), FieldValue::Text(String::new())),
            ("nothing".into(), FieldValue::Void),
            ("raw".into(), FieldValue::Bytes(vec![0xff, 0x00])),
        ],
        routing_key: Some("orders.eu".into()),
        exchange: Some("orders".into()),
        queue: "orders-q".into(),
        redelivered: false,
        raw: Vec::new(),
    }
}

fn attr<'a>(m: &'a Message<u8>, name: &str) -> Option<&'a Attribute> {
    m.attributes.iter().find(|a| a.name == name)
}

#[test]
fn properties_and_headers_become_attributes() {
    let mapper = Mapper::new(rules(), DeliveryMode::AtLeastOnce, false, None);
    let m = mapper.message(incoming(), 7u8).expect("mapped");
    assert_eq!(m.position, 7);
    assert_eq!(
        m.body,
        sqs_forwarder::Body::Bytes(b"{\"order\":1}".to_vec())
    );
    let names: Vec<&str> = m.attributes.iter().map(|a| a.name.as_ref()).collect();
    assert_eq!(
        names,
        vec![
            "amqp.content-type",
            "amqp.routing-key",
            "tenant",
            "attempt",
            "urgent",
            "raw"
        ]
    );
    assert_eq!(
        attr(&m, "amqp.content-type"),
        Some(&Attribute::string("amqp.content-type", "application/json"))
    );
    assert_eq!(
        attr(&m, "tenant"),
        Some(&Attribute::string("tenant", "acme"))
    );
    assert_eq!(
        attr(&m, "attempt"),
        Some(&Attribute::number("attempt", "3"))
    );
    assert_eq!(
        attr(&m, "urgent"),
        Some(&Attribute::string("urgent", "true"))
    );
    assert_eq!(
        attr(&m, "raw").map(|a| &a.value),
        Some(&AttributeValue::Binary(vec![0xff, 0x00]))
    );
    // Standard queue: no FIFO ids.
    assert_eq!(m.group_id, None);
    assert_eq!(m.deduplication_id, None);
}

#[test]
fn header_selection_limits_the_attributes() {
    let mut r = rules();
    r.properties = vec![
        Property::MessageId,
        Property::Redelivered,
        Property::Priority,
    ];
    r.headers = HeaderSelection::Only(vec!["attempt".into(), "absent".into()]);
    let mut inc = incoming();
    inc.properties.priority = Some(4);
    let m = Mapper::new(r, DeliveryMode::AtLeastOnce, false, None)
        .message(inc, 0u8)
        .expect("mapped");
    assert_eq!(
        m.attributes,
        vec![
            Attribute::string("amqp.message-id", "m-1"),
            Attribute::string("amqp.redelivered", "false"),
            Attribute::number("amqp.priority", "4"),
            Attribute::number("attempt", "3"),
        ]
    );
}

#[test]
fn fifo_ids_follow_the_rules() {
    let fifo = |rules: MappingRules, default: Option<&str>, inc: Incoming| {
        Mapper::new(
            rules,
            DeliveryMode::AtLeastOnce,
            true,
            default.map(str::to_owned),
        )
        .message(inc, 0u8)
        .expect("mapped")
    };
    let m = fifo(rules(), None, incoming());
    assert_eq!(m.group_id.as_deref(), Some("orders.eu"));
    assert_eq!(m.deduplication_id.as_deref(), Some("m-1"));

    let mut no_ids = incoming();
    no_ids.properties.message_id = None;
    let m = fifo(rules(), None, no_ids.clone());
    assert_eq!(
        m.deduplication_id.as_deref(),
        Some("c-1"),
        "auto falls back to the correlation id"
    );
    no_ids.properties.correlation_id = None;
    no_ids.routing_key = None;
    let m = fifo(rules(), None, no_ids.clone());
    assert_eq!(m.deduplication_id, None);
    assert_eq!(
        m.group_id.as_deref(),
        Some("orders-q"),
        "queue name as the last resort"
    );
    let m = fifo(rules(), Some("fixed"), no_ids);
    assert_eq!(
        m.group_id.as_deref(),
        Some("fixed"),
        "MESSAGE_GROUP_ID before the queue name"
    );

    let mut r = rules();
    r.group = GroupFrom::Header("tenant".into());
    r.dedup = DedupFrom::CorrelationId;
    let m = fifo(r.clone(), None, incoming());
    assert_eq!(m.group_id.as_deref(), Some("acme"));
    assert_eq!(m.deduplication_id.as_deref(), Some("c-1"));
    r.group = GroupFrom::Queue;
    r.dedup = DedupFrom::None;
    let m = fifo(r, None, incoming());
    assert_eq!(m.group_id.as_deref(), Some("orders-q"));
    assert_eq!(m.deduplication_id, None);
}

/// `incoming()` whose routing key, message id and app id came as Latin-1
/// octets (not UTF-8), as the AMQP client hands such a delivery on.
fn latin1_fields() -> Incoming {
    use crate::amqp::{RawText, TextField};
    let mut m = incoming();
    m.routing_key = Some("caf?".into());
    m.properties.message_id = Some("m-?".into());
    m.properties.app_id = Some("app-?".into());
    m.raw = vec![
        RawText {
            field: TextField::RoutingKey,
            bytes: b"caf\xe9".to_vec(),
        },
        RawText {
            field: TextField::MessageId,
            bytes: b"m-\xe9".to_vec(),
        },
        RawText {
            field: TextField::AppId,
            bytes: b"app-\xff".to_vec(),
        },
    ];
    m
}

#[test]
fn short_strings_that_are_not_utf8_go_as_their_octets() {
    let mut r = rules();
    r.properties = vec![
        Property::RoutingKey,
        Property::MessageId,
        Property::AppId,
        Property::CorrelationId,
    ];
    let m = Mapper::new(r.clone(), DeliveryMode::AtLeastOnce, true, None)
        .message(latin1_fields(), 0u8)
        .expect("mapped, not refused");
    let value = |name: &str| attr(&m, name).map(|a| a.value.clone());
    assert_eq!(
        value("amqp.routing-key"),
        Some(AttributeValue::Binary(b"caf\xe9".to_vec()))
    );
    assert_eq!(
        value("amqp.message-id"),
        Some(AttributeValue::Binary(b"m-\xe9".to_vec()))
    );
    assert_eq!(
        value("amqp.app-id"),
        Some(AttributeValue::Binary(b"app-\xff".to_vec()))
    );
    assert_eq!(
        value("amqp.correlation-id"),
        Some(AttributeValue::String("c-1".into())),
        "a property that is text stays text"
    );
    // FIFO ids from the octets, hashed: not from the text they read as.
    assert_eq!(
        m.group_id.as_deref(),
        Some(crate::fifo_id::sqs_id_of_octets(b"caf\xe9").as_str())
    );
    assert_eq!(
        m.deduplication_id.as_deref(),
        Some(crate::fifo_id::sqs_id_of_octets(b"m-\xe9").as_str())
    );
    let mut other = latin1_fields();
    other.raw[1].bytes = b"m-\xe8".to_vec();
    let m2 = Mapper::new(r, DeliveryMode::AtLeastOnce, true, None)
        .message(other, 0u8)
        .expect("mapped");
    assert_ne!(
        m.deduplication_id, m2.deduplication_id,
        "ids that read alike (`m-?`) keep apart"
    );
}

#[test]
fn exactly_once_refuses_messages_without_correlation_id() {
    let mut r = rules();
    r.dedup = DedupFrom::CorrelationId;
    let mapper = Mapper::new(r, DeliveryMode::ExactlyOnce, true, None);
    let m = mapper.message(incoming(), 1u8).expect("has one");
    assert_eq!(m.deduplication_id.as_deref(), Some("c-1"));
    let mut inc = incoming();
    inc.properties.correlation_id = None;
    let (pos, failure) = mapper.message(inc, 2u8).expect_err("has none");
    assert_eq!(pos, 2);
    assert_eq!(failure.code, MISSING_CORRELATION_ID);
    assert!(!failure.retryable);
}

#[test]
fn amqp_values_convert() {
    assert_eq!(
        amqp_value(&AMQPValue::LongInt(-5)),
        FieldValue::Number("-5".into())
    );
    assert_eq!(
        amqp_value(&AMQPValue::DecimalValue(DecimalValue {
            scale: 2,
            value: 5
        })),
        FieldValue::Number("0.05".into())
    );
    assert_eq!(
        amqp_value(&AMQPValue::DecimalValue(DecimalValue {
            scale: 1,
            value: 1234
        })),
        FieldValue::Number("123.4".into())
    );
    assert_eq!(
        amqp_value(&AMQPValue::Double(f64::NAN)),
        FieldValue::Text("NaN".into())
    );
    assert_eq!(
        amqp_value(&AMQPValue::LongString(LongString::from("héllo"))),
        FieldValue::Bytes("héllo".as_bytes().to_vec())
    );
    let mut inner = BTreeMap::new();
    inner.insert(ShortString::from("count"), AMQPValue::LongLongInt(2));
    inner.insert(
        ShortString::from("raw"),
        AMQPValue::ByteArray(ByteArray::from(vec![0xffu8])),
    );
    let mut arr = FieldArray::default();
    arr.push(AMQPValue::FieldTable(FieldTable::from(inner)));
    arr.push(AMQPValue::Void);
    assert_eq!(
        amqp_value(&AMQPValue::FieldArray(arr)),
        FieldValue::Json(r#"[{"count":2,"raw":{"base64":"/w=="}},null]"#.into())
    );
}

#[test]
fn numbers_sqs_refuses_as_numbers_become_text_and_the_message_goes() {
    use sqs_forwarder::message::encode::{EncodeRules, prepare};
    let d = |scale, value| AMQPValue::DecimalValue(DecimalValue { scale, value });
    let cases = [
        (AMQPValue::Double(1e200), FieldValue::Text("1e200".into())),
        (AMQPValue::Double(-1e127), FieldValue::Text("-1e127".into())),
        (AMQPValue::Double(5e-324), FieldValue::Text("5e-324".into())),
        (
            AMQPValue::Float(1e-30),
            FieldValue::Number(format!("0.{}1", "0".repeat(29))),
        ),
        (
            AMQPValue::Double(1e125),
            FieldValue::Number(1e125f64.to_string()),
        ),
        (d(200, 123), FieldValue::Text("123e-200".into())),
        (d(130, 7), FieldValue::Text("7e-130".into())),
        (
            d(128, 7),
            FieldValue::Number(format!("0.{}7", "0".repeat(127))),
        ),
        (
            AMQPValue::LongLongInt(i64::MIN),
            FieldValue::Number(i64::MIN.to_string()),
        ),
    ];
    let mut m = incoming();
    // An aws:rmq event's JSON can hold any number: one SQS refuses goes as text.
    m.headers = vec![("j".into(), json_value(&serde_json::json!(1e200)))];
    for (i, (value, expected)) in cases.iter().enumerate() {
        assert_eq!(&amqp_value(value), expected, "{value:?}");
        m.headers.push((format!("n{i}"), amqp_value(value)));
    }
    let mapped = Mapper::new(rules(), DeliveryMode::AtLeastOnce, false, None)
        .message(m, 0u8)
        .expect("mapped");
    let (_, refused) = prepare(mapped.clone(), &EncodeRules::default());
    assert!(
        refused.is_ok(),
        "SQS's own checks take every attribute: {refused:?}"
    );
    for a in &mapped.attributes {
        if let AttributeValue::Number(n) = &a.value {
            assert!(
                sqs_forwarder::message::encode::is_sqs_number(n),
                "{}: {n}",
                a.name
            );
        }
    }
    assert_eq!(
        attr(&mapped, "n0").map(|a| a.value.clone()),
        Some(AttributeValue::String("1e200".into()))
    );
    assert_eq!(
        attr(&mapped, "j").map(|a| a.value.clone()),
        Some(AttributeValue::String("1e+200".into())),
        "serde_json's text"
    );
}

#[test]
fn fifo_ids_sqs_would_refuse_are_hashed_and_the_message_goes() {
    use sqs_forwarder::message::encode::{EncodeRules, prepare};
    let rules_fifo = EncodeRules {
        fifo: true,
        content_based_deduplication: Some(false),
        ..EncodeRules::default()
    };
    let mapper = Mapper::new(rules(), DeliveryMode::AtLeastOnce, true, None);
    for (routing_key, message_id) in [
        ("k".repeat(200), "m-1".to_owned()),
        ("commandes.été".to_owned(), "id with spaces".to_owned()),
        ("tab\tkey".to_owned(), "i".repeat(129)),
    ] {
        let mut inc = incoming();
        inc.routing_key = Some(routing_key.clone());
        inc.properties.message_id = Some(message_id.clone());
        let m = mapper.message(inc.clone(), 0u8).expect("mapped");
        let group = m.group_id.clone().expect("a group");
        let dedup = m.deduplication_id.clone().expect("a dedup id");
        assert!(crate::fifo_id::is_valid(&group), "{group}");
        assert!(crate::fifo_id::is_valid(&dedup), "{dedup}");
        // Stable: the same message (redelivered) gets the same ids.
        let again = mapper.message(inc, 0u8).expect("mapped");
        assert_eq!(again.group_id.as_deref(), Some(group.as_str()));
        assert_eq!(again.deduplication_id.as_deref(), Some(dedup.as_str()));
        let (_, entry) = prepare(m, &rules_fifo);
        entry.expect(
            "SQS takes it (the old mapping failed it: InvalidGroupId or InvalidDeduplicationId)",
        );
    }
    // Valid ids stay readable.
    let m = mapper.message(incoming(), 0u8).expect("mapped");
    assert_eq!(m.group_id.as_deref(), Some("orders.eu"));
    assert_eq!(m.deduplication_id.as_deref(), Some("m-1"));
    // The queue-name fallback too (queue names run to 255 bytes).
    let mut inc = incoming();
    inc.routing_key = None;
    inc.queue = "q".repeat(255);
    let m = mapper.message(inc, 0u8).expect("mapped");
    assert!(m.group_id.as_deref().is_some_and(crate::fifo_id::is_valid));
}

#[test]
fn a_real_content_fault_is_still_refused() {
    use sqs_forwarder::BodyEncoding;
    use sqs_forwarder::message::encode::{EncodeRules, prepare};
    let never = EncodeRules {
        body_encoding: BodyEncoding::Never,
        ..EncodeRules::default()
    };
    let mapper = Mapper::new(rules(), DeliveryMode::AtLeastOnce, false, None).with_room(Room {
        body_encoding: BodyEncoding::Never,
        ..Room::default()
    });
    let mut inc = incoming();
    inc.body = vec![0xff, 0x00];
    let m = mapper.message(inc, 0u8).expect("mapped");
    let (_, entry) = prepare(m, &never);
    assert_eq!(
        entry
            .expect_err("a binary body under BODY_ENCODING=never")
            .code,
        "InvalidMessageContents"
    );
}

/// A table nested `depth` levels deep, built without recursion.
fn nested(depth: usize) -> AMQPValue {
    let mut v = AMQPValue::LongInt(1);
    for _ in 0..depth {
        let mut t = BTreeMap::new();
        t.insert(ShortString::from("a"), v);
        v = AMQPValue::FieldTable(FieldTable::from(t));
    }
    v
}

fn json_depth(v: &Value) -> usize {
    // Iterative: the test must not recurse either.
    let mut deepest = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        deepest = deepest.max(d);
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|x| (x, d + 1))),
            Value::Object(m) => stack.extend(m.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    deepest
}

#[test]
fn deeply_nested_headers_are_cut_at_the_cap() {
    // Within the cap: all of it.
    let FieldValue::Json(shallow) = amqp_value(&nested(MAX_DEPTH)) else {
        panic!("JSON expected");
    };
    let shallow: Value = serde_json::from_str(&shallow).expect("JSON");
    assert_eq!(json_depth(&shallow), MAX_DEPTH);
    assert!(!shallow.to_string().contains(TOO_DEEP));
    // Deeper: cut at the cap, the rest replaced by the marker.
    let deep = nested(2_000);
    let FieldValue::Json(text) = amqp_value(&deep) else {
        panic!("JSON expected");
    };
    assert!(text.contains(TOO_DEEP), "{text}");
    let value: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(json_depth(&value), MAX_DEPTH);
    // The same for aws:rmq headers (JSON).
    let mut j = serde_json::json!(1);
    for _ in 0..100 {
        j = serde_json::json!([j]);
    }
    let FieldValue::Json(text) = json_value(&j) else {
        panic!("JSON expected");
    };
    let value: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(json_depth(&value), MAX_DEPTH);
}

#[test]
fn amazon_mq_header_values_convert() {
    let v: Value = serde_json::json!({"bytes": [118, 97, 108]});
    assert_eq!(json_value(&v), FieldValue::Bytes(b"val".to_vec()));
    assert_eq!(
        json_value(&serde_json::json!(10)),
        FieldValue::Number("10".into())
    );
    assert_eq!(
        json_value(&serde_json::json!("x")),
        FieldValue::Text("x".into())
    );
    assert_eq!(json_value(&serde_json::json!(null)), FieldValue::Void);
    assert_eq!(
        json_value(&serde_json::json!({"bytes": [300]})),
        FieldValue::Json(r#"{"bytes":[300]}"#.into())
    );
    assert_eq!(
        json_value(&serde_json::json!([1, "a"])),
        FieldValue::Json(r#"[1,"a"]"#.into())
    );
}
