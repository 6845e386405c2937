//! Routing rules end to end over fake queues, whatever the rules: for any
//! `ROUTES` document (filters, routes, `unmatched`, shaping, group ids) and
//! any records (JSON or not, keys present or not), every record gets exactly
//! one outcome, and that outcome is the one the rules decide: a skipped
//! record is dropped, a record that cannot be shaped fails with
//! `ShapeFailed`, and a sent message reaches its own target queue only,
//! shaped, with a group id only where the target or the rules want one.

mod common;

use std::borrow::Cow;
use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Value, json};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::route::{Decision, RecordView, Router, Routes, SourceKey, TargetId};
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Attribute, Forwarder, Message, MessageOutcome, Outcome, OversizePolicy};

/// One record: its data and its partition key.
#[derive(Debug, Clone)]
struct Rec {
    data: Vec<u8>,
    key: Option<String>,
}

impl RecordView for Rec {
    fn data(&self) -> Option<&[u8]> {
        Some(&self.data)
    }

    fn key(&self, key: SourceKey, _: Option<&str>) -> Option<Cow<'_, str>> {
        match key {
            SourceKey::PartitionKey => self.key.as_deref().map(Cow::Borrowed),
            _ => None,
        }
    }
}

const OFFERED: &[SourceKey] = &[SourceKey::PartitionKey];

fn value() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(json!(null))),
        Just(Some(json!("eu-1"))),
        Just(Some(json!("us-2"))),
        Just(Some(json!("t 9"))),
        Just(Some(json!(42))),
        Just(Some(json!(-1.5))),
        Just(Some(json!(true))),
        Just(Some(json!({"k": "v"}))),
        Just(Some(json!(["x"]))),
    ]
}

fn record() -> impl Strategy<Value = Rec> {
    let json_data = (value(), value(), value(), any::<bool>()).prop_map(|(t, n, v, map)| {
        let mut o = serde_json::Map::new();
        for (name, x) in [("t", t), ("n", n), ("v", v)] {
            if let Some(x) = x {
                o.insert(name.into(), x);
            }
        }
        if map {
            o.insert("m".into(), json!({"a": "1", "b": "two"}));
        }
        Value::Object(o).to_string().into_bytes()
    });
    let data = prop_oneof![
        4 => json_data,
        1 => Just(b"not json".to_vec()),
        1 => Just(vec![0xff, 0x00, 0x9c]),
    ];
    let key = prop_oneof![
        Just(None),
        Just(Some("eu-7".to_owned())),
        Just(Some("us-3".to_owned())),
    ];
    (data, key).prop_map(|(data, key)| Rec { data, key })
}

/// A value source the rules can name.
fn source() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"field": "/t"})),
        Just(json!({"field": "/n"})),
        Just(json!({"field": "/v"})),
        Just(json!({"field": ""})),
        Just(json!({"key": "partition_key"})),
    ]
}

fn condition() -> impl Strategy<Value = Value> {
    let test = prop_oneof![
        Just(("equals", json!("eu-1"))),
        Just(("equals", json!("42"))),
        Just(("prefix", json!("eu-"))),
        Just(("suffix", json!("3"))),
        Just(("exists", json!(true))),
        Just(("exists", json!(false))),
    ];
    (source(), test).prop_map(|(mut s, (word, v))| {
        s[word] = v;
        s
    })
}

fn document() -> impl Strategy<Value = String> {
    let route = (
        condition(),
        prop_oneof![Just("default"), Just("a"), Just("b")],
    )
        .prop_map(|(when, target)| json!({"when": when, "target": target}));
    (
        proptest::collection::vec(condition(), 0..2),
        proptest::collection::vec(route, 0..3),
        any::<bool>(),
        prop_oneof![Just(None), Just(Some("/v")), Just(Some(""))],
        0usize..4,
        prop_oneof![
            Just(None),
            Just(Some(json!({"field": "/t"}))),
            Just(Some(json!({"key": "partition_key"})))
        ],
    )
        .prop_map(|(filter, routes, drop, body, attributes, group)| {
            let mut doc = json!({
                "targets": {
                    "a": "https://sqs.us-east-1.amazonaws.com/123456789012/a.fifo",
                    "b": "https://sqs.us-east-1.amazonaws.com/123456789012/b"
                },
                "filter": filter,
                "routes": routes,
                "unmatched": if drop { "drop" } else { "default" },
            });
            if let Some(body) = body {
                doc["body"] = json!(body);
            }
            match attributes {
                1 => doc["attributes"] = json!({"n": {"field": "/n", "type": "Number"}}),
                2 => doc["attributes"] = json!({"t": {"field": "/t", "type": "String"}}),
                3 => doc["attributes_from"] = json!("/m"),
                _ => {}
            }
            if let Some(group) = group {
                doc["group_id"] = group;
            }
            doc.to_string()
        })
}

fn forwarder(endpoint: &FakeSqs, fifo: bool) -> Forwarder<FakeSqs> {
    let rules = EncodeRules {
        fifo,
        content_based_deduplication: Some(fifo),
        ..EncodeRules::default()
    };
    Forwarder::new(
        endpoint.clone(),
        common::settings(OversizePolicy::Fail),
        rules,
    )
}

/// The group id the function gives every message.
const SOURCE_GROUP: &str = "source-group";

/// The record's message as a function builds it when some target is FIFO:
/// its data as the body, a group and a deduplication id; and its position
/// as the attribute `pos`, to find it in the queues.
fn message(rec: &Rec, i: usize) -> Message<usize> {
    let mut m =
        Message::new(rec.data.clone(), i).attribute(Attribute::string("pos", i.to_string()));
    m.group_id = Some(SOURCE_GROUP.into());
    m.deduplication_id = Some(format!("d{i}"));
    m
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sqs_forwarder::test_support::proptest_cases(128)))]

    #[test]
    fn every_record_gets_the_one_outcome_its_rules_decide(
        doc in document(),
        records in proptest::collection::vec(record(), 0..40),
        refuse in proptest::collection::vec(any::<bool>(), 3),
    ) {
        let routes = match Routes::parse(&doc, OFFERED) {
            Ok(r) => r,
            Err(e) => return Err(TestCaseError::fail(format!("{doc}: {e}"))),
        };
        // default: standard; a: FIFO; b: standard. A refusing target fails
        // every entry for good.
        let endpoints: Vec<FakeSqs> = refuse
            .iter()
            .map(|&r| if r { FakeSqs::new().fail_where(|_| true, Reply::INVALID) } else { FakeSqs::new() })
            .collect();
        let router = Router::new(
            routes.clone(),
            forwarder(&endpoints[0], false),
            vec![forwarder(&endpoints[1], true), forwarder(&endpoints[2], false)],
        );
        let Ok(router) = router else { return Err(TestCaseError::fail("router")) };
        prop_assert!(router.any_fifo());

        // What the rules decide for each record, asked apart.
        let decided: Vec<Decision<usize>> =
            records.iter().enumerate().map(|(i, r)| routes.decide(r, message(r, i))).collect();

        let items: Vec<_> = records
            .iter()
            .enumerate()
            .map(|(i, r)| router.route(Some(routes.plan(r)), message(r, i)))
            .collect();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build();
        let Ok(runtime) = runtime else { return Err(TestCaseError::fail("no runtime")) };
        let mut outcomes: BTreeMap<usize, Outcome> = BTreeMap::new();
        let mut twice = Vec::new();
        runtime.block_on(router.forward(items, None, |o: MessageOutcome<usize>| {
            if outcomes.insert(o.position, o.outcome).is_some() {
                twice.push(o.position);
            }
        }));
        prop_assert!(twice.is_empty(), "reported twice: {:?}", twice);
        prop_assert_eq!(outcomes.len(), records.len());

        for (i, decision) in decided.iter().enumerate() {
            let outcome = &outcomes[&i];
            match decision {
                Decision::Skip { .. } => {
                    prop_assert!(matches!(outcome, Outcome::Dropped { .. }), "{}: {:?}", i, outcome);
                }
                Decision::Fault { .. } => {
                    prop_assert!(
                        matches!(outcome, Outcome::Failed(f) if f.code == "ShapeFailed" && !f.retryable),
                        "{}: {:?}", i, outcome
                    );
                }
                Decision::Send { target, .. } => {
                    let TargetId(t) = *target;
                    if refuse[t] {
                        prop_assert!(matches!(outcome, Outcome::Failed(_)), "{}: {:?}", i, outcome);
                    } else {
                        prop_assert!(matches!(outcome, Outcome::Sent { .. }), "{}: {:?}", i, outcome);
                    }
                }
            }
        }
        // Each queue saw exactly the records the rules sent there (a
        // refused entry may be seen more than once, never elsewhere), with
        // the group the rules decided: on the FIFO target, the rules' or
        // else the function's; on a standard one, the rules' or none.
        for (t, e) in endpoints.iter().enumerate() {
            let wanted: std::collections::BTreeSet<usize> = decided
                .iter()
                .enumerate()
                .filter(|(_, d)| matches!(d, Decision::Send { target, .. } if target.0 == t))
                .map(|(i, _)| i)
                .collect();
            let mut seen = std::collections::BTreeSet::new();
            for s in e.seen() {
                let pos = s.string("pos").and_then(|p| p.parse::<usize>().ok());
                let Some(pos) = pos else { return Err(TestCaseError::fail(format!("no pos on target {t}"))) };
                prop_assert!(wanted.contains(&pos), "record {} reached target {}", pos, t);
                seen.insert(pos);
                // The group the rules decided; a standard target keeps only
                // the rules' own (the function's is taken off).
                let expected = match &decided[pos] {
                    Decision::Send { message, .. } => message.group_id.clone(),
                    _ => None,
                };
                let expected = if t == 1 { expected } else { expected.filter(|g| g != SOURCE_GROUP) };
                prop_assert_eq!(&s.group_id, &expected, "record {} on target {}", pos, t);
            }
            prop_assert_eq!(&seen, &wanted, "target {}", t);
        }
    }
}
