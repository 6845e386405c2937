use proptest::prelude::*;
use sqs_forwarder::message::encode::{EncodeRules, prepare};
use sqs_forwarder::{Failure, Message};

use super::*;

/// The headers RabbitMQ adds to a dead-lettered message, and a few of
/// the publisher's.
fn dead_lettered() -> Vec<(String, FieldValue)> {
    let text = |n: &str, v: &str| (n.to_owned(), FieldValue::Bytes(v.as_bytes().to_vec()));
    vec![
        (
            "amqp.content-type".into(),
            FieldValue::Text("application/json".into()),
        ),
        (
            "amqp.routing-key".into(),
            FieldValue::Text("orders.eu".into()),
        ),
        (
            "x-death".into(),
            FieldValue::Json(r#"[{"count":1,"queue":"orders","reason":"rejected"}]"#.into()),
        ),
        text("x-first-death-exchange", "orders"),
        text("x-first-death-queue", "orders"),
        text("x-first-death-reason", "rejected"),
        text("x-last-death-exchange", "orders"),
        text("x-last-death-queue", "orders"),
        text("x-last-death-reason", "rejected"),
        text("tenant", "acme"),
        ("attempt".into(), FieldValue::Number("3".into())),
        ("urgent".into(), FieldValue::Bool(true)),
    ]
}

/// Through the shared crate's own check: the message SQS would get,
/// or why it would refuse it.
fn prepared(
    attributes: Vec<Attribute>,
    body: &[u8],
    rules: &EncodeRules,
) -> Result<usize, Failure> {
    let mut m = Message::new(body.to_vec(), 0u8);
    m.attributes = attributes;
    prepare(m, rules).1.map(|e| e.size)
}

fn folded_json(f: &Fitted) -> Value {
    let a = f
        .attributes
        .iter()
        .find(|a| a.name == FOLDED_ATTRIBUTE)
        .expect("a folded attribute");
    match &a.value {
        sqs_forwarder::AttributeValue::String(s) => serde_json::from_str(s).expect("JSON"),
        other => panic!("not a String: {other:?}"),
    }
}

#[test]
fn a_dead_lettered_message_keeps_every_header() {
    let fields = dead_lettered();
    let f = fit(fields.clone(), b"{\"order\":1}", &Room::default());
    assert_eq!(f.attributes.len(), 10, "{:?}", f.attributes);
    // Nine of their own, in order, then the rest in one JSON attribute.
    let own: Vec<&str> = f.attributes[..9].iter().map(|a| a.name.as_ref()).collect();
    let names: Vec<&str> = fields[..9].iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(own, names);
    assert_eq!(f.folded, ["tenant", "attempt", "urgent"]);
    assert!(f.dropped.is_empty());
    assert_eq!(
        folded_json(&f),
        serde_json::json!({"tenant": "acme", "attempt": 3, "urgent": true})
    );
    // SQS takes it (the old mapping failed it: TooManyAttributes).
    prepared(f.attributes, b"{\"order\":1}", &EncodeRules::default()).expect("SQS takes it");
}

#[test]
fn names_sqs_refuses_or_the_forwarder_reserves_are_folded() {
    let fields = vec![
        ("tenant".to_owned(), FieldValue::Text("acme".into())),
        ("has space".to_owned(), FieldValue::Text("a".into())),
        ("AWS.trace".to_owned(), FieldValue::Text("b".into())),
        ("x..y".to_owned(), FieldValue::Number("1.5".into())),
        (
            "sqs-forwarder.encoding".to_owned(),
            FieldValue::Text("c".into()),
        ),
        (
            "ExtendedPayloadSize".to_owned(),
            FieldValue::Number("9".into()),
        ),
        ("amqp.headers".to_owned(), FieldValue::Text("d".into())),
        ("tenant".to_owned(), FieldValue::Text("twice".into())),
        ("nothing".to_owned(), FieldValue::Void),
    ];
    let f = fit(fields, &[0xff, 0xfe], &Room::default());
    assert_eq!(f.attributes.len(), 2, "{:?}", f.attributes);
    assert_eq!(f.attributes[0], Attribute::string("tenant", "acme"));
    assert_eq!(
        folded_json(&f),
        serde_json::json!({
            "has space": "a", "AWS.trace": "b", "x..y": 1.5,
            "sqs-forwarder.encoding": "c", "ExtendedPayloadSize": 9,
            "amqp.headers": "d", "tenant": "twice"
        })
    );
    // The binary body gets the marker; SQS takes the rest.
    prepared(f.attributes, &[0xff, 0xfe], &EncodeRules::default()).expect("SQS takes it");
}

#[test]
fn the_marker_and_the_claim_check_keep_their_slots() {
    let fields = dead_lettered();
    // A binary body: the marker takes a slot, so 8 of their own.
    let f = fit(fields.clone(), &[0x00, 0xff], &Room::default());
    assert_eq!(f.attributes.len(), 9);
    assert_eq!(f.folded.len(), 12 - 8);
    prepared(f.attributes, &[0x00, 0xff], &EncodeRules::default()).expect("SQS takes it");
    // Offload: the size attribute takes one more.
    let room = Room {
        offload: true,
        ..Room::default()
    };
    let f = fit(fields, &[0x00, 0xff], &room);
    assert_eq!(f.attributes.len(), 8);
    assert_eq!(f.folded.len(), 12 - 7);
    // Ten fields exactly, text body, no offload: no folding at all.
    let ten: Vec<_> = dead_lettered().into_iter().take(10).collect();
    let f = fit(ten, b"text", &Room::default());
    assert_eq!(f.attributes.len(), 10);
    assert!(f.folded.is_empty());
    assert!(f.attributes.iter().all(|a| a.name != FOLDED_ATTRIBUTE));
}

#[test]
fn headers_that_would_not_fit_the_message_are_dropped_largest_first() {
    let room = Room {
        largest_message: 1024,
        ..Room::default()
    };
    let fields = vec![
        ("small".to_owned(), FieldValue::Text("s".into())),
        ("big".to_owned(), FieldValue::Text("b".repeat(900))),
        ("has space".to_owned(), FieldValue::Text("x".repeat(300))),
    ];
    let body = vec![b'a'; 200];
    let f = fit(fields, &body, &room);
    assert_eq!(f.dropped, ["big"]);
    assert_eq!(f.folded, ["has space"]);
    let size = prepared(f.attributes, &body, &EncodeRules::default()).expect("SQS takes it");
    assert!(size <= 1024, "{size}");
    // A body too large on its own is the oversize policy's: nothing is
    // dropped for it.
    let f = fit(
        vec![("small".to_owned(), FieldValue::Text("s".into()))],
        &vec![b'a'; 2000],
        &room,
    );
    assert!(f.dropped.is_empty());
    assert_eq!(f.attributes.len(), 1);
}

#[test]
fn a_folded_value_sqs_refuses_as_text_goes_as_binary() {
    let fields = vec![("bad name".to_owned(), FieldValue::Text("\u{fffe}".into()))];
    let f = fit(fields, b"text", &Room::default());
    let a = &f.attributes[0];
    assert_eq!(a.name, FOLDED_ATTRIBUTE);
    assert_eq!(
        a.value,
        sqs_forwarder::AttributeValue::Binary("{\"bad name\":\"\u{fffe}\"}".as_bytes().to_vec())
    );
    prepared(f.attributes, b"text", &EncodeRules::default()).expect("SQS takes it");
}

#[test]
fn the_rules_attributes_keep_their_slots_names_and_bytes() {
    let taken = [
        Attribute::string("tenant", "from-the-rules"),
        Attribute::number("n", "7"),
    ];
    // Twelve fields, two slots taken: seven of their own and the fold.
    let f = fit_beside(dead_lettered(), b"text", &Room::default(), &taken);
    assert_eq!(f.attributes.len(), 8);
    assert_eq!(
        f.attributes.last().map(|a| a.name.as_ref()),
        Some(FOLDED_ATTRIBUTE)
    );
    assert!(f.folded.contains(&"tenant".to_owned()), "{:?}", f.folded);
    assert_eq!(folded_json(&f)["tenant"], "acme", "the header's value kept");
    assert!(f.attributes.iter().all(|a| a.name != "tenant"));
    let mut all = taken.to_vec();
    all.extend(f.attributes);
    prepared(all, b"text", &EncodeRules::default()).expect("SQS takes it");

    // Bytes: the rules' attributes count against the message's size.
    let room = Room {
        largest_message: 1024,
        ..Room::default()
    };
    let big = [Attribute::string("big", "b".repeat(750))];
    let fields = vec![("h".to_owned(), FieldValue::Text("x".repeat(300)))];
    assert!(fit(fields.clone(), b"text", &room).dropped.is_empty());
    let f = fit_beside(fields, b"text", &room, &big);
    assert_eq!(f.dropped, ["h"]);

    // Every slot the rules': nothing else fits, not even the fold.
    let ten: Vec<Attribute> = (0..10)
        .map(|i| Attribute::string(format!("r{i}"), "v"))
        .collect();
    let f = fit_beside(dead_lettered(), b"text", &Room::default(), &ten);
    assert!(f.attributes.is_empty());
    assert_eq!(f.dropped.len(), 12);

    // The rules use the fold's name: what would be folded is left out.
    let named = [Attribute::string(FOLDED_ATTRIBUTE, "{}")];
    let f = fit_beside(dead_lettered(), b"text", &Room::default(), &named);
    assert_eq!(f.attributes.len(), 9);
    assert!(f.attributes.iter().all(|a| a.name != FOLDED_ATTRIBUTE));
    assert_eq!(f.dropped.len(), 3);
}

fn field_value() -> impl Strategy<Value = FieldValue> {
    prop_oneof![
        ".{0,20}".prop_map(FieldValue::Text),
        prop::collection::vec(any::<u8>(), 0..20).prop_map(FieldValue::Bytes),
        any::<i64>().prop_map(|n| FieldValue::Number(n.to_string())),
        any::<f64>().prop_map(|f| FieldValue::Number(f.to_string())),
        any::<bool>().prop_map(FieldValue::Bool),
        Just(FieldValue::Void),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sqs_forwarder::test_support::proptest_cases(256)))]

    /// Whatever the headers, the message they are fitted to is one SQS
    /// takes, as long as its body is one SQS takes alone.
    #[test]
    fn any_headers_fit_a_message_sqs_takes(
        fields in prop::collection::vec((".{1,12}", field_value()), 0..30),
        body in prop::collection::vec(any::<u8>(), 1..300),
        offload in any::<bool>(),
        largest in 1024usize..4096,
    ) {
        let room = Room { offload, largest_message: largest, ..Room::default() };
        let f = fit(fields, &body, &room);
        let rules = EncodeRules::default();
        let size = prepared(f.attributes.clone(), &body, &rules);
        prop_assert!(size.is_ok(), "{:?} for {:?}", size, f.attributes);
        let limit = if offload { 10 - 1 } else { 10 };
        let marker = usize::from(!std::str::from_utf8(&body).is_ok_and(is_sqs_text));
        prop_assert!(f.attributes.len() + marker <= limit);
        let encoded_len = if marker == 1 { body.len().div_ceil(3) * 4 } else { body.len() };
        if !offload && encoded_len + 40 <= largest {
            prop_assert!(size.unwrap_or_default() <= largest);
        }
    }

    /// The same beside the routing rules' attributes, as long as they
    /// leave the marker and the claim check their slots.
    #[test]
    fn any_headers_fit_beside_the_rules(
        fields in prop::collection::vec((".{1,12}", field_value()), 0..30),
        taken in prop::collection::vec(("[a-z]{1,3}", ".{0,20}"), 0..=8),
        body in prop::collection::vec(any::<u8>(), 1..300),
        offload in any::<bool>(),
    ) {
        let mut rules_attributes: Vec<Attribute> = Vec::new();
        for (name, value) in taken {
            if !value.is_empty() && is_sqs_text(&value) && rules_attributes.iter().all(|a| a.name != name) {
                rules_attributes.push(Attribute::string(name, value));
            }
        }
        let room = Room { offload, ..Room::default() };
        let f = fit_beside(fields, &body, &room, &rules_attributes);
        let mut all = rules_attributes.clone();
        all.extend(f.attributes.clone());
        let size = prepared(all.clone(), &body, &EncodeRules::default());
        prop_assert!(size.is_ok(), "{:?} for {:?}", size, all);
        let marker = usize::from(!std::str::from_utf8(&body).is_ok_and(is_sqs_text));
        prop_assert!(all.len() + marker + usize::from(offload) <= 10);
        for a in &rules_attributes {
            prop_assert_eq!(all.iter().filter(|b| b.name == a.name).count(), 1);
        }
    }
}
