//! Every error of the document names its rule (`routes[2].when.equals`)
//! and says what is allowed there.

use super::super::{Routes, SourceKey};
use super::ALL;
use super::routes;

const EU: &str = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-eu";

/// `doc` fails for a function offering `offered`, at `rule`, saying `says`.
fn fails(doc: &str, offered: &[SourceKey], rule: &str, says: &str) {
    let e = Routes::parse(doc, offered).expect_err(doc);
    assert_eq!(e.variable, "ROUTES", "{doc}");
    assert!(
        e.allowed.starts_with(&format!("{rule}: ")),
        "{doc}: {:?} should name {rule}",
        e.allowed
    );
    assert!(
        e.allowed.contains(says),
        "{doc}: {:?} should say {says:?}",
        e.allowed
    );
    assert!(
        e.to_string().starts_with("invalid configuration: ROUTES="),
        "{e}"
    );
}

#[test]
fn document_errors_name_the_rule() {
    let e = Routes::parse("{\"routes\": [", ALL).expect_err("not JSON");
    assert!(
        e.allowed.starts_with("a JSON document of routing rules: "),
        "{e}"
    );
    fails("[]", ALL, "the document", "targets, filter, routes");
    fails(
        r#"{"rotues": []}"#,
        ALL,
        "rotues",
        "not a member here; allowed: targets",
    );
    fails(
        r#"{"unmatched": "maybe"}"#,
        ALL,
        "unmatched",
        "one of: default, drop",
    );
    fails(
        r#"{"unmatched": true}"#,
        ALL,
        "unmatched",
        "one of: default, drop",
    );
    fails(r#"{"body": "payload"}"#, ALL, "body", "a JSON pointer");
    fails(r#"{"body": "/a~2"}"#, ALL, "body", "a JSON pointer");
    fails(
        r#"{"attributes_from": 3}"#,
        ALL,
        "attributes_from",
        "a JSON pointer",
    );
    fails(r#"{"filter": {}}"#, ALL, "filter", "a list of conditions");
    fails(r#"{"routes": "eu"}"#, ALL, "routes", "a list of routes");
}

#[test]
fn target_errors_name_the_target() {
    fails(
        r#"{"targets": []}"#,
        ALL,
        "targets",
        "target name -> queue URL",
    );
    let default = format!(r#"{{"targets": {{"default": "{EU}"}}}}"#);
    fails(
        &default,
        ALL,
        "targets.default",
        "default is the function's own",
    );
    let spaced = format!(r#"{{"targets": {{"e u": "{EU}"}}}}"#);
    fails(&spaced, ALL, "targets.e u", "1..=64 of A-Z a-z 0-9 _ -");
    let long = format!(r#"{{"targets": {{"{}": "{EU}"}}}}"#, "n".repeat(65));
    fails(&long, ALL, &format!("targets.{}", "n".repeat(65)), "1..=64");
    routes(&format!(
        r#"{{"targets": {{"{}": "{EU}"}}}}"#,
        "n".repeat(64)
    ));
    fails(
        r#"{"targets": {"eu": 5}}"#,
        ALL,
        "targets.eu",
        "an SQS queue URL",
    );
    fails(
        r#"{"targets": {"eu": "orders-eu"}}"#,
        ALL,
        "targets.eu",
        "an SQS queue URL",
    );
}

#[test]
fn condition_errors_name_the_rule() {
    let cases = [
        (r#"[5]"#, "filter[0]", "a condition: a value"),
        (
            r#"[{"field": "/a", "equals": "x", "nope": 1}]"#,
            "filter[0].nope",
            "not a member here",
        ),
        (r#"[{"equals": "x"}]"#, "filter[0]", "a value: {\"field\""),
        (
            r#"[{"field": "/a", "key": "method", "equals": "x"}]"#,
            "filter[0]",
            "not both",
        ),
        (
            r#"[{"field": "a", "equals": "x"}]"#,
            "filter[0].field",
            "a JSON pointer",
        ),
        (r#"[{"field": "/a"}]"#, "filter[0]", "exactly one test"),
        (
            r#"[{"field": "/a", "equals": "x", "prefix": "y"}]"#,
            "filter[0]",
            "exactly one test",
        ),
        (
            r#"[{"field": "/a", "equals": 42}]"#,
            "filter[0].equals",
            "write \"42\"",
        ),
        (
            r#"[{"field": "/a", "suffix": null}]"#,
            "filter[0].suffix",
            "a string",
        ),
        (
            r#"[{"field": "/a", "exists": "yes"}]"#,
            "filter[0].exists",
            "true or false",
        ),
        (
            r#"[{"key": "colour", "equals": "x"}]"#,
            "filter[0].key",
            "one of partition_key, bucket",
        ),
        (
            r#"[{"key": 3, "equals": "x"}]"#,
            "filter[0].key",
            "a source key",
        ),
        (
            r#"[{"key": "header", "equals": "x"}]"#,
            "filter[0]",
            "a \"name\" with \"key\": \"header\"",
        ),
        (
            r#"[{"key": "header", "name": "", "equals": "x"}]"#,
            "filter[0].name",
            "non-empty",
        ),
        (
            r#"[{"key": "method", "name": "x", "equals": "x"}]"#,
            "filter[0].name",
            "only with \"key\": \"header\"",
        ),
        (
            r#"[{"field": "/a", "name": "x", "equals": "x"}]"#,
            "filter[0].name",
            "only with \"key\": \"header\"",
        ),
    ];
    for (filter, rule, says) in cases {
        fails(&format!(r#"{{"filter": {filter}}}"#), ALL, rule, says);
    }
}

#[test]
fn a_key_the_function_does_not_offer_names_the_key_and_the_offered_ones() {
    let doc = r#"{"routes": [{"when": {"field": "/a", "exists": true}, "target": "default"},
                             {"when": {"key": "bucket", "equals": "b"}, "target": "default"}]}"#;
    fails(
        doc,
        &[SourceKey::PartitionKey],
        "routes[1].when.key",
        "bucket is not one",
    );
    fails(
        doc,
        &[SourceKey::PartitionKey, SourceKey::Method],
        "routes[1].when.key",
        "keys this function offers: partition_key, method",
    );
    fails(
        doc,
        &[],
        "routes[1].when.key",
        "this function offers no source keys",
    );
    fails(
        r#"{"group_id": {"key": "routing_key"}}"#,
        &[SourceKey::Bucket],
        "group_id.key",
        "routing_key is not one",
    );
}

#[test]
fn route_errors_name_the_route() {
    let eu = format!(r#""targets": {{"eu": "{EU}"}}"#);
    let cases = [
        (r#"[{"target": "eu"}]"#, "routes[0]", "\"when\" is missing"),
        (
            r#"[{"when": {"field": "/a", "exists": true}}]"#,
            "routes[0]",
            "\"target\" is missing",
        ),
        (
            r#"[{"when": {"field": "/a", "exists": true}, "target": "us"}]"#,
            "routes[0].target",
            "one of default, eu",
        ),
        (
            r#"[{"when": {"field": "/a", "exists": true}, "target": 1}]"#,
            "routes[0].target",
            "one of default, eu",
        ),
        (
            r#"[{"when": {"field": "/a"}, "target": "eu"}]"#,
            "routes[0].when",
            "exactly one test",
        ),
        (
            r#"[{"when": {"field": "/a", "exists": true}, "target": "eu", "x": 1}]"#,
            "routes[0].x",
            "allowed: when, target",
        ),
        (
            r#"[{"path": "/queues/{name}", "target": "eu"}]"#,
            "routes[0].target",
            "allowed: path",
        ),
        (r#"[{"path": 5}]"#, "routes[0].path", "a path template"),
        (
            r#"[{"path": "queues/{name}"}]"#,
            "routes[0].path",
            "starts with /",
        ),
        (
            r#"[{"path": "/queues/{name}/"}]"#,
            "routes[0].path",
            "no empty segment",
        ),
        (
            r#"[{"path": "/queues//{name}"}]"#,
            "routes[0].path",
            "no empty segment",
        ),
        (
            r#"[{"path": "/queues/messages"}]"#,
            "routes[0].path",
            "exactly one {name}",
        ),
        (
            r#"[{"path": "/{name}/{name}"}]"#,
            "routes[0].path",
            "exactly one {name}",
        ),
        (
            r#"[{"path": "/q/{id}/{name}"}]"#,
            "routes[0].path",
            "literal",
        ),
        (
            r#"[{"path": "/q/x{name}"}]"#,
            "routes[0].path",
            "exactly one {name}",
        ),
    ];
    for (list, rule, says) in cases {
        fails(&format!(r#"{{{eu}, "routes": {list}}}"#), ALL, rule, says);
    }
    fails(
        r#"{"routes": [{"path": "/queues/{name}/messages"}]}"#,
        &[SourceKey::PartitionKey],
        "routes[0].path",
        "does not offer (keys this function offers: partition_key)",
    );
}

#[test]
fn shaping_errors_name_the_rule() {
    let cases = [
        (r#""attributes": []"#, "attributes", "attribute name ->"),
        (
            r#""attributes": {"aws.x": {"field": "/a"}}"#,
            "attributes.aws.x",
            "no AWS./Amazon. prefix",
        ),
        (
            r#""attributes": {"a b": {"field": "/a"}}"#,
            "attributes.a b",
            "an SQS attribute name",
        ),
        (
            r#""attributes": {"n": {"field": "/a", "type": "Binary"}}"#,
            "attributes.n.type",
            "\"String\" or \"Number\"",
        ),
        (
            r#""attributes": {"n": {"type": "Number"}}"#,
            "attributes.n",
            "a value",
        ),
        (
            r#""attributes": {"n": "/a"}"#,
            "attributes.n",
            "an attribute",
        ),
        (
            r#""attributes": {"n": {"field": "/a", "kind": "x"}}"#,
            "attributes.n.kind",
            "not a member",
        ),
        (r#""group_id": "/customer""#, "group_id", "a value"),
        (
            r#""group_id": {"field": "/a", "type": "String"}"#,
            "group_id.type",
            "not a member",
        ),
    ];
    for (member, rule, says) in cases {
        fails(&format!("{{{member}}}"), ALL, rule, says);
    }
    let eleven: Vec<String> = (0..11)
        .map(|i| format!(r#""a{i}": {{"field": "/a"}}"#))
        .collect();
    let doc = format!(r#"{{"attributes": {{{}}}}}"#, eleven.join(","));
    fails(&doc, ALL, "attributes", "at most 10 attributes");
}
