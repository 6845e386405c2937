//! Conditions and routes: what each test says of each kind of value, the
//! first matching route, the path template, `unmatched`.

use super::super::{Decision, Skip, SourceKey, TargetId};
use super::parse::EXAMPLE;
use super::{Rec, decide, routes, sent};

/// Whether `condition` keeps `record` (as the one filter condition).
fn keeps(condition: &str, record: &Rec) -> bool {
    let r = routes(&format!(r#"{{"filter": [{condition}]}}"#));
    match decide(&r, record) {
        Decision::Send { .. } => true,
        Decision::Skip {
            reason: Skip::FilteredOut,
            ..
        } => false,
        other => panic!("{condition}: {other:?}"),
    }
}

#[test]
fn each_test_on_a_string_field() {
    let r = Rec::json(r#"{"region": "eu-west-1"}"#);
    assert!(keeps(r#"{"field": "/region", "equals": "eu-west-1"}"#, &r));
    assert!(!keeps(r#"{"field": "/region", "equals": "eu-west"}"#, &r));
    assert!(keeps(r#"{"field": "/region", "prefix": "eu-"}"#, &r));
    assert!(!keeps(r#"{"field": "/region", "prefix": "us-"}"#, &r));
    assert!(keeps(r#"{"field": "/region", "suffix": "-1"}"#, &r));
    assert!(!keeps(r#"{"field": "/region", "suffix": "-2"}"#, &r));
    assert!(keeps(r#"{"field": "/region", "exists": true}"#, &r));
    assert!(!keeps(r#"{"field": "/region", "exists": false}"#, &r));
    assert!(!keeps(r#"{"field": "/zone", "exists": true}"#, &r));
    assert!(keeps(r#"{"field": "/zone", "exists": false}"#, &r));
    assert!(!keeps(r#"{"field": "/zone", "equals": ""}"#, &r));
}

#[test]
fn numbers_and_booleans_are_their_json_text() {
    let r = Rec::json(r#"{"n": 42, "x": 1.5, "neg": -7, "ok": true, "s": "42"}"#);
    assert!(keeps(r#"{"field": "/n", "equals": "42"}"#, &r));
    assert!(keeps(r#"{"field": "/s", "equals": "42"}"#, &r));
    assert!(keeps(r#"{"field": "/x", "equals": "1.5"}"#, &r));
    assert!(keeps(r#"{"field": "/neg", "prefix": "-"}"#, &r));
    assert!(keeps(r#"{"field": "/ok", "equals": "true"}"#, &r));
    assert!(!keeps(r#"{"field": "/ok", "equals": "True"}"#, &r));
}

#[test]
fn null_is_not_there_and_objects_have_no_text() {
    let r = Rec::json(r#"{"gone": null, "obj": {"a": 1}, "list": [1]}"#);
    assert!(!keeps(r#"{"field": "/gone", "exists": true}"#, &r));
    assert!(keeps(r#"{"field": "/gone", "exists": false}"#, &r));
    assert!(!keeps(r#"{"field": "/gone", "equals": "null"}"#, &r));
    assert!(keeps(r#"{"field": "/obj", "exists": true}"#, &r));
    assert!(!keeps(r#"{"field": "/obj", "equals": "{\"a\":1}"}"#, &r));
    assert!(!keeps(r#"{"field": "/list", "prefix": "["}"#, &r));
    assert!(keeps(r#"{"field": "/list/0", "equals": "1"}"#, &r));
    assert!(keeps(r#"{"field": "/obj/a", "equals": "1"}"#, &r));
}

#[test]
fn data_that_is_not_json_only_passes_exists_false() {
    for r in [
        Rec::bytes(b"region=eu"),
        Rec::bytes(&[0xff, 0x00]),
        Rec::default(),
    ] {
        for test in [
            r#""equals": "region=eu""#,
            r#""prefix": """#,
            r#""suffix": """#,
        ] {
            assert!(!keeps(&format!(r#"{{"field": "", {test}}}"#), &r), "{r:?}");
        }
        assert!(!keeps(r#"{"field": "", "exists": true}"#, &r));
        assert!(keeps(r#"{"field": "", "exists": false}"#, &r));
        assert!(keeps(r#"{"field": "/region", "exists": false}"#, &r));
    }
    assert!(keeps(r#"{"field": "", "exists": true}"#, &Rec::json("7")));
    assert!(keeps(r#"{"field": "", "equals": "7"}"#, &Rec::json("7")));
}

#[test]
fn escaped_pointers_reach_their_fields() {
    let r = Rec::json(r#"{"a/b": {"~c": "yes"}}"#);
    assert!(keeps(r#"{"field": "/a~1b/~0c", "equals": "yes"}"#, &r));
}

#[test]
fn keys_and_headers() {
    let r = Rec::default()
        .key(SourceKey::RoutingKey, "orders.eu")
        .header("x-tenant", "acme");
    assert!(keeps(r#"{"key": "routing_key", "prefix": "orders."}"#, &r));
    assert!(!keeps(r#"{"key": "routing_key", "equals": "orders"}"#, &r));
    assert!(keeps(
        r#"{"key": "header", "name": "x-tenant", "equals": "acme"}"#,
        &r
    ));
    assert!(!keeps(
        r#"{"key": "header", "name": "x-other", "exists": true}"#,
        &r
    ));
    assert!(keeps(
        r#"{"key": "header", "name": "x-other", "exists": false}"#,
        &r
    ));
    assert!(!keeps(r#"{"key": "bucket", "equals": ""}"#, &r));
    assert!(keeps(r#"{"key": "bucket", "exists": false}"#, &r));
}

#[test]
fn every_filter_condition_must_hold() {
    let r = routes(
        r#"{"filter": [{"field": "/type", "equals": "order"}, {"key": "method", "equals": "POST"}]}"#,
    );
    let order = r#"{"type": "order"}"#;
    assert!(matches!(
        decide(&r, &Rec::json(order).key(SourceKey::Method, "POST")),
        Decision::Send { .. }
    ));
    let put = Rec::json(order).key(SourceKey::Method, "PUT");
    assert!(matches!(
        decide(&r, &put),
        Decision::Skip {
            reason: Skip::FilteredOut,
            ..
        }
    ));
    assert_eq!(Skip::FilteredOut.metric(), "FilteredOut");
    assert_eq!(Skip::Unmatched.metric(), "Unmatched");
}

#[test]
fn routes_are_tried_in_order_and_the_first_match_wins() {
    let r = routes(EXAMPLE);
    let to = |data: &str, partition: &str| {
        sent(decide(
            &r,
            &Rec::json(data).key(SourceKey::PartitionKey, partition),
        ))
        .0
    };
    let order =
        |region: &str| format!(r#"{{"type": "order", "region": "{region}", "payload": 1}}"#);
    assert_eq!(to(&order("eu-west-1"), "audit"), 2, "eu, before audit");
    assert_eq!(to(&order("us-east-1"), "audit"), 1, "audit");
    assert_eq!(to(&order("us-east-1"), "other"), 0, "unmatched: default");
}

#[test]
fn unmatched_drop_skips_and_the_filter_comes_first() {
    let r = routes(
        r#"{"filter": [{"field": "/keep", "exists": true}],
            "routes": [{"when": {"field": "/to", "equals": "default"}, "target": "default"}],
            "unmatched": "drop"}"#,
    );
    assert_eq!(
        sent(decide(&r, &Rec::json(r#"{"keep": 1, "to": "default"}"#))).0,
        0
    );
    assert!(matches!(
        decide(&r, &Rec::json(r#"{"keep": 1, "to": "elsewhere"}"#)),
        Decision::Skip {
            reason: Skip::Unmatched,
            position: 7
        }
    ));
    assert!(matches!(
        decide(&r, &Rec::json(r#"{"to": "elsewhere"}"#)),
        Decision::Skip {
            reason: Skip::FilteredOut,
            ..
        }
    ));
}

#[test]
fn the_path_template_picks_only_configured_targets() {
    let r = routes(
        r#"{"targets": {"eu": "https://sqs.eu-west-1.amazonaws.com/123456789012/eu",
                        "us-1": "https://sqs.us-east-1.amazonaws.com/123456789012/us"},
            "routes": [{"path": "/queues/{name}/messages"},
                       {"when": {"key": "path", "prefix": "/queues/"}, "target": "us-1"}],
            "unmatched": "drop"}"#,
    );
    let at = |path: &str| decide(&r, &Rec::default().key(SourceKey::Path, path));
    let target = |path: &str| match at(path) {
        Decision::Send { target, .. } => Some(target.0),
        Decision::Skip {
            reason: Skip::Unmatched,
            ..
        } => None,
        other => panic!("{path}: {other:?}"),
    };
    assert_eq!(target("/queues/eu/messages"), Some(1));
    assert_eq!(target("/queues/us-1/messages"), Some(2));
    assert_eq!(target("/queues/default/messages"), Some(0));
    assert_eq!(
        target("/queues/secret-queue/messages"),
        Some(2),
        "a name that is not configured does not match: the next route does"
    );
    assert_eq!(
        target("/queues//messages"),
        Some(2),
        "an empty name matches nothing"
    );
    assert_eq!(target("/queues/eu/messages/extra"), Some(2));
    assert_eq!(target("/queues/eu"), Some(2));
    assert_eq!(target("/queue/eu/messages"), None);
    assert_eq!(target("queues/eu/messages"), None);
    assert!(matches!(
        decide(&r, &Rec::default()),
        Decision::Skip {
            reason: Skip::Unmatched,
            ..
        }
    ));
}

#[test]
fn a_record_routed_on_keys_is_never_parsed_and_a_json_one_once() {
    let r = routes(
        r#"{"routes": [{"when": {"key": "method", "equals": "PUT"}, "target": "default"}]}"#,
    );
    let record = Rec::json("{}").key(SourceKey::Method, "PUT");
    sent(decide(&r, &record));
    assert_eq!(record.data_reads.get(), 0, "no field named: no parse");

    let r = routes(EXAMPLE);
    let record = Rec::json(
        r#"{"type": "order", "region": "us", "payload": "p", "n": 1, "customer": "c",
            "msg_attributes": {"a": "b"}}"#,
    );
    let (target, message) = sent(decide(&r, &record));
    assert_eq!((target, message.attributes.len()), (0, 3));
    assert_eq!(record.data_reads.get(), 1, "one parse for every field");
}

#[test]
fn a_request_path_names_its_path_route_target_or_none() {
    let r = routes(
        r#"{"targets": {"eu": "https://sqs.eu-west-1.amazonaws.com/123456789012/eu"},
            "routes": [{"when": {"key": "method", "equals": "PUT"}, "target": "eu"},
                       {"path": "/queues/{name}/messages"},
                       {"path": "/{name}/in"}]}"#,
    );
    let eu = Some(TargetId(1));
    assert_eq!(r.path_target("/queues/eu/messages"), Some(("eu", eu)));
    assert_eq!(
        r.path_target("/queues/default/messages"),
        Some(("default", Some(TargetId::DEFAULT)))
    );
    assert_eq!(
        r.path_target("/queues/nope/messages"),
        Some(("nope", None)),
        "the shape of a path route, a name that is no target"
    );
    assert_eq!(r.path_target("/eu/in"), Some(("eu", eu)));
    assert_eq!(r.path_target("/queues//messages"), None);
    assert_eq!(r.path_target("/queues/eu/messages/x"), None);
    assert_eq!(r.path_target("/messages"), None);
    assert_eq!(
        routes(r#"{"routes": []}"#).path_target("/queues/eu/messages"),
        None
    );
}
