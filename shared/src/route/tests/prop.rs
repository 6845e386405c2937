//! For any document of a small grammar (every kind of rule, value and test)
//! and any record (no data, bytes, JSON; any keys), `decide` returns one
//! decision, about the message it was given, without panicking; and no
//! text or JSON makes `parse` panic.

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use serde_json::{Map, Value, json};

use super::super::{Decision, Routes, SourceKey};
use super::{ALL, Rec};
use crate::message::Message;
use crate::setup::env::Word;

const NAMES: [&str; 3] = ["a", "b-1", "c_2"];
const POINTERS: [&str; 7] = ["", "/a", "/b", "/b/0", "/a~1b", "/c/d", "/9"];
const KEYS: [&str; 12] = [
    "a", "b", "c", "d", "a/b", "0", "targets", "routes", "when", "field", "key", "equals",
];
const TEMPLATE: &str = "/queues/{name}/messages";

fn text() -> impl Strategy<Value = String> {
    "[a-z0-9/.é {}-]{0,5}"
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 5, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map(select(&KEYS[..]), inner, 0..5).prop_map(|m| Value::Object(
                m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

/// A value: a field, or any key (a header named `h`).
fn source() -> impl Strategy<Value = Value> {
    prop_oneof![
        select(&POINTERS[..]).prop_map(|p| json!({ "field": p })),
        select(ALL).prop_map(|k| match k {
            SourceKey::Header => json!({ "key": "header", "name": "h" }),
            other => json!({ "key": other.word() }),
        }),
    ]
}

fn condition() -> impl Strategy<Value = Value> {
    let test = prop_oneof![
        text().prop_map(|t| ("equals", Value::String(t))),
        text().prop_map(|t| ("prefix", Value::String(t))),
        text().prop_map(|t| ("suffix", Value::String(t))),
        any::<bool>().prop_map(|b| ("exists", Value::Bool(b))),
    ];
    (source(), test).prop_map(|(mut c, (word, v))| {
        if let Value::Object(m) = &mut c {
            m.insert(word.to_owned(), v);
        }
        c
    })
}

fn document() -> impl Strategy<Value = Value> {
    (
        subsequence(&NAMES[..], 0..=3),
        vec(condition(), 0..3),
        vec((condition(), 0usize..4, any::<bool>()), 0..4),
        proptest::option::of(select(&["default", "drop"][..])),
        proptest::option::of(select(&POINTERS[..])),
        btree_map(
            "[a-z]{1,3}",
            (source(), select(&["String", "Number"][..])),
            0..4,
        ),
        proptest::option::of(select(&POINTERS[..])),
        proptest::option::of(source()),
    )
        .prop_map(
            |(names, filter, routes, unmatched, body, attributes, from, group)| {
                let mut doc = Map::new();
                let targets: Map<String, Value> = names
                    .iter()
                    .map(|n| {
                        (
                            n.to_string(),
                            json!(format!(
                                "https://sqs.eu-west-1.amazonaws.com/123456789012/{n}"
                            )),
                        )
                    })
                    .collect();
                doc.insert("targets".into(), Value::Object(targets));
                doc.insert("filter".into(), Value::Array(filter));
                let choices: Vec<&str> = std::iter::once("default").chain(names).collect();
                let routes = routes
                    .into_iter()
                    .map(|(when, i, path)| {
                        if path {
                            json!({ "path": TEMPLATE })
                        } else {
                            json!({ "when": when, "target": choices[i % choices.len()] })
                        }
                    })
                    .collect();
                doc.insert("routes".into(), Value::Array(routes));
                if let Some(u) = unmatched {
                    doc.insert("unmatched".into(), json!(u));
                }
                if let Some(b) = body {
                    doc.insert("body".into(), json!(b));
                }
                let attributes: Map<String, Value> = attributes
                    .into_iter()
                    .map(|(name, (mut source, kind))| {
                        if let Value::Object(m) = &mut source {
                            m.insert("type".into(), json!(kind));
                        }
                        (name, source)
                    })
                    .collect();
                doc.insert("attributes".into(), Value::Object(attributes));
                if let Some(f) = from {
                    doc.insert("attributes_from".into(), json!(f));
                }
                if let Some(g) = group {
                    doc.insert("group_id".into(), g);
                }
                Value::Object(doc)
            },
        )
}

fn record() -> impl Strategy<Value = Rec> {
    let data = prop_oneof![
        Just(None),
        vec(any::<u8>(), 0..12).prop_map(Some),
        json_value().prop_map(|v| Some(v.to_string().into_bytes())),
    ];
    let path = prop_oneof![
        text(),
        select(&["a", "b-1", "c_2", "default", "x", ""][..])
            .prop_map(|n| format!("/queues/{n}/messages")),
    ];
    let keys = vec((select(ALL), prop_oneof![text(), path]), 0..6);
    (data, keys).prop_map(|(data, keys)| Rec {
        data,
        keys: keys
            .into_iter()
            .map(|(k, v)| (k, (k == SourceKey::Header).then(|| "h".to_owned()), v))
            .collect(),
        ..Rec::default()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::test_support::proptest_cases(512)))]

    #[test]
    fn decide_gives_one_decision_about_the_message_given(
        doc in document(),
        record in record(),
        position in any::<u64>(),
    ) {
        let text = doc.to_string();
        let routes = Routes::parse(&text, ALL);
        prop_assert!(routes.is_ok(), "{text}: {routes:?}");
        let Ok(routes) = routes else { return Ok(()) };
        let decision = routes.decide(&record, Message::new("m", position));
        prop_assert_eq!(*decision.position(), position);
        match &decision {
            Decision::Send { target, .. } => prop_assert!(target.0 <= routes.targets().len()),
            Decision::Fault { failure, .. } => prop_assert_eq!(failure.code.as_str(), "ShapeFailed"),
            Decision::Skip { .. } => {}
        }
        prop_assert!(record.data_reads.get() <= 1 || matches!(decision, Decision::Fault { .. }),
            "data parsed once: {} reads", record.data_reads.get());
    }

    #[test]
    fn parse_never_panics(text in "[\\[\\]{}\":,a-z0-9/~ ]{0,40}", doc in json_value(), offered in subsequence(ALL, 0..=9)) {
        let _ = Routes::parse(&text, &offered);
        let _ = Routes::parse(&doc.to_string(), &offered);
    }
}
