//! Fuzzing with proptest, in the normal test run: body encoding, sizing and
//! packing of arbitrary bytes, text and attributes. No panic; an entry's
//! size is what SQS counts; an encoded body is never more than 4/3 of its
//! bytes (plus padding); packing keeps every message, in order, within the
//! limits. `PROPTEST_CASES` sets the number of cases (default 64 here).
//! The invariants of the packer and the forwarder are in `properties.rs`.

use proptest::prelude::*;
use sqs_forwarder::message::encode::{BodyEncoding, EncodeRules, is_sqs_text, prepare};
use sqs_forwarder::message::limits::message_size;
use sqs_forwarder::send::batch::pack_in_order;
use sqs_forwarder::test_support::proptest_cases;
use sqs_forwarder::{Attribute, AttributeValue, Body, Limits, Message};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: proptest_cases(64),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn any_body() -> impl Strategy<Value = Body> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..2048).prop_map(Body::Bytes),
        any::<String>().prop_map(Body::Text),
        "[\\x00-\\x20\u{d7ff}\u{e000}\u{fffe}\u{ffff}a-z]{0,64}".prop_map(Body::Text),
    ]
}

fn any_attribute() -> impl Strategy<Value = Attribute> {
    (
        prop_oneof![".{0,20}", "[A-Za-z0-9_.-]{1,30}", Just("AWS.x".to_owned())],
        prop_oneof![
            Just("String".to_owned()),
            Just("Number".to_owned()),
            Just("Binary".to_owned()),
            ".{0,12}"
        ],
        prop_oneof![
            ".{0,40}".prop_map(AttributeValue::String),
            "[-+0-9.eE]{0,40}".prop_map(AttributeValue::Number),
            prop::collection::vec(any::<u8>(), 0..40).prop_map(AttributeValue::Binary),
        ],
    )
        .prop_map(|(name, data_type, value)| Attribute {
            name: name.into(),
            data_type: data_type.into(),
            value,
        })
}

fn any_rules() -> impl Strategy<Value = EncodeRules> {
    (
        prop_oneof![
            Just(BodyEncoding::Auto),
            Just(BodyEncoding::Always),
            Just(BodyEncoding::Never)
        ],
        any::<bool>(),
        prop::option::of(".{0,8}"),
    )
        .prop_map(|(body_encoding, fifo, group)| EncodeRules {
            body_encoding,
            fifo,
            default_group_id: group,
            content_based_deduplication: fifo.then_some(true),
            ..EncodeRules::default()
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_message_encodes_or_fails_with_a_code(
        body in any_body(),
        attributes in prop::collection::vec(any_attribute(), 0..12),
        group in prop::option::of(".{0,140}"),
        dedup in prop::option::of(".{0,140}"),
        delay in prop::option::of(any::<i32>()),
        rules in any_rules(),
    ) {
        let raw_len = body.len();
        let attribute_bytes: usize = attributes.iter().map(Attribute::size).sum();
        let mut m = Message::new(body, 7u32);
        for a in attributes {
            m = m.attribute(a);
        }
        if let Some(g) = group { m = m.group_id(g); }
        if let Some(d) = dedup { m = m.deduplication_id(d); }
        if let Some(d) = delay { m = m.delay_seconds(d); }
        let (position, entry) = prepare(m, &rules);
        prop_assert_eq!(position, 7);
        match entry {
            Ok(e) => {
                prop_assert!(!e.body.is_empty());
                prop_assert!(is_sqs_text(&e.body));
                prop_assert_eq!(e.size, message_size(&e.body, &e.attributes));
                prop_assert!(e.attributes.len() <= 10);
                let marker = e.attributes.iter().find(|a| a.name == rules.marker_attribute);
                prop_assert_eq!(e.encoded, marker.is_some());
                if e.encoded {
                    prop_assert!(e.body.len() <= raw_len.div_ceil(3) * 4);
                    prop_assert!(rules.body_encoding != BodyEncoding::Never);
                } else {
                    prop_assert_eq!(e.body.len(), raw_len);
                }
                // Attributes are the message's plus at most the marker.
                prop_assert!(e.size <= e.body.len() + attribute_bytes + marker.map_or(0, Attribute::size));
            }
            Err(f) => {
                prop_assert!(!f.code.is_empty());
                prop_assert!(!f.message.is_empty());
                prop_assert!(!f.retryable, "an invalid message is never retryable");
            }
        }
    }

    #[test]
    fn any_sizes_pack_in_order_within_the_limits(
        sizes in prop::collection::vec(prop_oneof![0usize..2048, 0usize..1_100_000], 0..200),
        max_entries in 1usize..=10,
        max_request in 1024usize..=1_048_576,
    ) {
        let limits = Limits { max_entries, max_message_bytes: max_request, max_request_bytes: max_request };
        let plan = pack_in_order(&sizes, &limits);
        let mut next = 0;
        for range in &plan {
            prop_assert_eq!(range.start, next, "in order, none skipped");
            prop_assert!(!range.is_empty());
            prop_assert!(range.len() <= max_entries);
            let bytes: usize = sizes[range.clone()].iter().sum();
            // A message above the limit rides alone (the oversize policy
            // deals with it before packing in the forwarder).
            prop_assert!(bytes <= max_request || range.len() == 1);
            next = range.end;
        }
        prop_assert_eq!(next, sizes.len());
        prop_assert!(plan.len() <= sizes.len());
    }
}
