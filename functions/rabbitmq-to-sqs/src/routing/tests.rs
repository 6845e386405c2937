use sqs_forwarder::route::Skip;

use super::*;

fn message() -> Incoming {
    Incoming {
        body: br#"{"kind":"order","n":7}"#.to_vec(),
        routing_key: Some("orders.eu".into()),
        queue: "inbox".into(),
        headers: vec![
            ("tenant".into(), FieldValue::Bytes(b"acme".to_vec())),
            ("short".into(), FieldValue::Text("s".into())),
            ("attempt".into(), FieldValue::Number("3".into())),
            ("ratio".into(), FieldValue::Number("1.5".into())),
            ("urgent".into(), FieldValue::Bool(true)),
            ("trace".into(), FieldValue::Json(r#"{"span":1}"#.into())),
            ("binary".into(), FieldValue::Bytes(vec![0xff, 0xfe])),
            ("nothing".into(), FieldValue::Void),
            ("empty".into(), FieldValue::Text(String::new())),
        ],
        ..Incoming::default()
    }
}

fn key(view: &View<'_>, key: SourceKey, name: Option<&str>) -> Option<String> {
    view.key(key, name).map(|c| c.into_owned())
}

#[test]
fn the_view_offers_the_routing_key_the_queue_and_headers() {
    let m = message();
    let v = View(&m);
    assert_eq!(v.data(), Some(m.body.as_slice()));
    assert_eq!(
        key(&v, SourceKey::RoutingKey, None).as_deref(),
        Some("orders.eu")
    );
    assert_eq!(
        key(&v, SourceKey::SourceQueue, None).as_deref(),
        Some("inbox")
    );
    let header = |name: &str| key(&v, SourceKey::Header, Some(name));
    assert_eq!(header("tenant").as_deref(), Some("acme"));
    assert_eq!(header("short").as_deref(), Some("s"));
    assert_eq!(header("attempt").as_deref(), Some("3"));
    assert_eq!(header("ratio").as_deref(), Some("1.5"));
    assert_eq!(header("urgent").as_deref(), Some("true"));
    assert_eq!(header("empty").as_deref(), Some(""));
    for absent in ["trace", "binary", "nothing", "missing", "Tenant"] {
        assert_eq!(header(absent), None, "{absent}");
    }
    assert_eq!(key(&v, SourceKey::Header, None), None, "no name");
    assert_eq!(key(&v, SourceKey::PartitionKey, None), None);
}

#[test]
fn the_view_borrows_the_message() {
    let m = message();
    let v = View(&m);
    assert!(matches!(
        v.key(SourceKey::RoutingKey, None),
        Some(Cow::Borrowed(_))
    ));
    assert!(matches!(
        v.key(SourceKey::Header, Some("tenant")),
        Some(Cow::Borrowed(_))
    ));
    assert!(std::ptr::eq(
        v.data().map_or(std::ptr::null(), <[u8]>::as_ptr),
        m.body.as_ptr()
    ));
}

#[test]
fn an_event_message_without_a_routing_key_has_none() {
    let m = Incoming {
        routing_key: None,
        ..message()
    };
    assert_eq!(View(&m).key(SourceKey::RoutingKey, None), None);
}

#[test]
fn rules_plan_on_every_key_and_on_json_fields() {
    let routes = Routes::parse(
        r#"{"targets": {"a": "https://sqs.us-east-1.amazonaws.com/1/a",
                        "b": "https://sqs.us-east-1.amazonaws.com/1/b",
                        "c": "https://sqs.us-east-1.amazonaws.com/1/c",
                        "d": "https://sqs.us-east-1.amazonaws.com/1/d"},
            "filter": [{"key": "header", "name": "urgent", "exists": true}],
            "routes": [
              {"when": {"key": "routing_key", "prefix": "billing."}, "target": "a"},
              {"when": {"key": "source_queue", "equals": "audit"}, "target": "b"},
              {"when": {"key": "header", "name": "tenant", "equals": "globex"}, "target": "c"},
              {"when": {"field": "/kind", "equals": "order"}, "target": "d"}
            ],
            "unmatched": "drop"}"#,
        SOURCE_KEYS,
    )
    .expect("rules");
    let target = |m: &Incoming| match plan(Some(&routes), m) {
        Some(Plan::Send { target, .. }) => Ok(target.0),
        Some(Plan::Skip(skip)) => Err(skip),
        other => panic!("{other:?}"),
    };
    let m = message();
    assert_eq!(target(&m), Ok(4), "by the JSON field");
    let billing = Incoming {
        routing_key: Some("billing.eu".into()),
        ..message()
    };
    assert_eq!(target(&billing), Ok(1), "by the routing key");
    let audit = Incoming {
        queue: "audit".into(),
        ..message()
    };
    assert_eq!(target(&audit), Ok(2), "by the source queue");
    let mut globex = message();
    globex.headers[0].1 = FieldValue::Text("globex".into());
    assert_eq!(target(&globex), Ok(3), "by a header");
    let other = Incoming {
        body: br#"{"kind":"ping"}"#.to_vec(),
        ..message()
    };
    assert_eq!(target(&other), Err(Skip::Unmatched));
    let mut calm = message();
    calm.headers.retain(|(n, _)| n != "urgent");
    assert_eq!(target(&calm), Err(Skip::FilteredOut));
    assert_eq!(plan(None, &m), None, "no rules, no plan");
}

// ------------------------------------------------------------ routed mapping

mod mapped {
    use sqs_forwarder::message::encode::{EncodeRules, prepare};
    use sqs_forwarder::route::Router;
    use sqs_forwarder::test_support::FakeSqs;
    use sqs_forwarder::{Attribute, Forwarder, Outcome, Routed, SendSettings};

    use super::*;
    use crate::fold::FOLDED_ATTRIBUTE;
    use crate::mapping::{MISSING_CORRELATION_ID, Mapper};
    use crate::settings::{
        DedupFrom, DeliveryMode, GroupFrom, HeaderSelection, MappingRules, Property,
    };

    fn forwarder(fifo: bool) -> Forwarder<FakeSqs> {
        let rules = EncodeRules {
            fifo,
            ..EncodeRules::default()
        };
        Forwarder::new(FakeSqs::new(), SendSettings::default(), rules)
    }

    /// A standard default, a FIFO target `fifo` and a standard target `std`.
    fn router(doc: serde_json::Value) -> Router<FakeSqs> {
        let routes = Routes::parse(&doc.to_string(), SOURCE_KEYS).expect("rules");
        // Targets sort by name: "fifo" then "std".
        Router::new(
            routes,
            forwarder(false),
            vec![forwarder(true), forwarder(false)],
        )
        .expect("router")
    }

    fn targets() -> serde_json::Value {
        serde_json::json!({
            "fifo": "https://sqs.us-east-1.amazonaws.com/1/f.fifo",
            "std": "https://sqs.us-east-1.amazonaws.com/1/s"
        })
    }

    fn mapper(mode: DeliveryMode, r: &Router<FakeSqs>) -> Mapper {
        let rules = MappingRules {
            dedup: DedupFrom::Auto,
            group: GroupFrom::RoutingKey,
            properties: vec![Property::ContentType, Property::RoutingKey],
            headers: HeaderSelection::All,
        };
        Mapper::new(rules, mode, r.any_fifo(), None)
    }

    /// Eleven headers and two properties: more than SQS's ten slots.
    fn crowded() -> Incoming {
        let mut m = message();
        m.properties.content_type = Some("application/json".into());
        m.properties.message_id = Some("m-1".into());
        m.headers = (0..11)
            .map(|i| (format!("h{i}"), FieldValue::Text(format!("v{i}"))))
            .collect();
        m.headers[0] = ("tenant".into(), FieldValue::Text("acme".into()));
        m
    }

    fn names(attributes: &[Attribute]) -> Vec<&str> {
        attributes.iter().map(|a| a.name.as_ref()).collect()
    }

    #[test]
    fn the_function_s_attributes_fit_around_the_rules() {
        let r = router(serde_json::json!({
            "targets": targets(),
            "routes": [{"when": {"key": "header", "name": "tenant", "equals": "acme"}, "target": "std"}],
            "attributes": {
                "tenant": {"field": "/kind"},
                "n": {"field": "/n", "type": "Number"}
            }
        }));
        let mapper = mapper(DeliveryMode::AtLeastOnce, &r);
        let m = crowded();
        let plan = plan(r.routes(), &m);
        let Ok(Routed::To(2, message)) = mapper.route(&r, plan, m, 0u8) else {
            panic!("routed to std");
        };
        let names = names(&message.attributes);
        assert_eq!(names.len(), 10, "{names:?}");
        let mut first = names[..2].to_vec();
        first.sort_unstable();
        assert_eq!(first, ["n", "tenant"], "the rules' first");
        assert!(names.contains(&"amqp.content-type"), "{names:?}");
        assert_eq!(names.last(), Some(&FOLDED_ATTRIBUTE), "{names:?}");
        let tenant = message
            .attributes
            .iter()
            .find(|a| a.name == "tenant")
            .expect("tenant");
        assert_eq!(
            tenant.value,
            sqs_forwarder::AttributeValue::String("order".into()),
            "the rule's value wins"
        );
        let folded = match &message.attributes[9].value {
            sqs_forwarder::AttributeValue::String(s) => s.clone(),
            other => panic!("{other:?}"),
        };
        let folded: serde_json::Value = serde_json::from_str(&folded).expect("JSON");
        assert_eq!(folded["tenant"], "acme", "the header's own value is kept");
        assert_eq!(folded["h10"], "v10");
        // FIFO ids are taken off for a standard target.
        assert_eq!((message.group_id, message.deduplication_id), (None, None));
    }

    #[test]
    fn a_message_sqs_takes_whatever_the_rules_add() {
        let r = router(serde_json::json!({
            "targets": targets(),
            "attributes_from": "/attrs"
        }));
        let mapper = mapper(DeliveryMode::AtLeastOnce, &r);
        let attrs: serde_json::Map<String, serde_json::Value> = (0..10)
            .map(|i| (format!("a{i}"), serde_json::Value::from(i)))
            .collect();
        let mut m = crowded();
        m.body = serde_json::json!({ "attrs": attrs })
            .to_string()
            .into_bytes();
        let plan = plan(r.routes(), &m);
        let Ok(Routed::To(0, message)) = mapper.route(&r, plan, m, 0u8) else {
            panic!("routed to the default");
        };
        assert_eq!(message.attributes.len(), 10, "the rules' ten, nothing else");
        let (_, entry) = prepare(message, &EncodeRules::default());
        entry.expect("SQS takes it");
    }

    #[test]
    fn fifo_ids_stay_for_a_fifo_target() {
        let r = router(serde_json::json!({
            "targets": targets(),
            "routes": [{"when": {"key": "source_queue", "equals": "inbox"}, "target": "fifo"}]
        }));
        let mapper = mapper(DeliveryMode::AtLeastOnce, &r);
        let m = crowded();
        let plan = plan(r.routes(), &m);
        let Ok(Routed::To(1, message)) = mapper.route(&r, plan, m, 0u8) else {
            panic!("routed to fifo");
        };
        assert_eq!(message.group_id.as_deref(), Some("orders.eu"));
        assert_eq!(message.deduplication_id.as_deref(), Some("m-1"));
    }

    #[test]
    fn a_message_the_rules_send_nowhere_is_settled_unmapped() {
        let r = router(serde_json::json!({
            "targets": targets(),
            "filter": [{"key": "header", "name": "urgent", "equals": "true"}],
            "body": "/payload"
        }));
        // Exactly-once: a message without a correlation id is refused, but
        // only when it is to be sent.
        let mapper = mapper(DeliveryMode::ExactlyOnce, &r);
        let mut skipped = message();
        skipped.headers.retain(|(n, _)| n != "urgent");
        let plan_skipped = plan(r.routes(), &skipped);
        match mapper.route(&r, plan_skipped, skipped, 1u8) {
            Ok(Routed::Settled(1, Outcome::Dropped { reason })) => {
                assert!(reason.starts_with("FilteredOut"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        // No /payload: a shape fault, a content fault.
        let faulted = message();
        let plan_faulted = plan(r.routes(), &faulted);
        match mapper.route(&r, plan_faulted, faulted, 2u8) {
            Ok(Routed::Settled(2, Outcome::Failed(f))) => {
                assert_eq!(f.code, "ShapeFailed");
                assert!(crate::drain::message_fault(&f), "rejected, not requeued");
            }
            other => panic!("{other:?}"),
        }
        let mut sent = message();
        sent.body = br#"{"payload":"p"}"#.to_vec();
        let plan_sent = plan(r.routes(), &sent);
        match mapper.route(&r, plan_sent, sent, 3u8) {
            Err((3, f)) => assert_eq!(f.code, MISSING_CORRELATION_ID),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn the_readme_example_is_a_document_this_function_takes() {
    let readme = include_str!("../../README.md");
    let section = readme
        .split("## Routing (`ROUTES`)")
        .nth(1)
        .expect("a Routing section");
    let example = section
        .split("```json")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("an example document");
    Routes::parse(example, SOURCE_KEYS).expect("the example is valid");
}
