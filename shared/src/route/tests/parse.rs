//! Reading the document: good ones, `from_env`, and how an error shows
//! the part at fault (the errors themselves: `parse_errors`).

use super::super::{ROUTES, Routes, TargetId};
use super::{ALL, routes};
use crate::setup::env::Env;

const EU: &str = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-eu";
const AUDIT: &str = "https://sqs.us-east-1.amazonaws.com/123456789012/audit.fifo";

/// The document of the spec and of docs/configuration.md.
pub(super) const EXAMPLE: &str = r#"{
  "targets": { "eu": "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-eu",
               "audit": "https://sqs.us-east-1.amazonaws.com/123456789012/audit.fifo" },
  "filter":  [ { "field": "/type", "equals": "order" } ],
  "routes":  [ { "when": { "field": "/region", "prefix": "eu-" }, "target": "eu" },
               { "when": { "key": "partition_key", "equals": "audit" }, "target": "audit" },
               { "path": "/queues/{name}/messages" } ],
  "unmatched": "default",
  "body": "/payload",
  "attributes": { "region": { "field": "/region", "type": "String" },
                  "count":  { "field": "/n", "type": "Number" } },
  "attributes_from": "/msg_attributes",
  "group_id": { "field": "/customer" }
}"#;

#[test]
fn the_example_document_reads() {
    let r = routes(EXAMPLE);
    assert_eq!(
        r.targets(),
        &[
            ("audit".to_owned(), AUDIT.to_owned()),
            ("eu".to_owned(), EU.to_owned())
        ],
        "sorted by name"
    );
    assert_eq!(r.target("default"), Some(TargetId::DEFAULT));
    assert_eq!(r.target("audit"), Some(TargetId(1)));
    assert_eq!(r.target("eu"), Some(TargetId(2)));
    assert_eq!(r.target("us"), None);
    assert_eq!(r.filter.len(), 1);
    assert_eq!(r.routes.len(), 3);
    assert_eq!(r.shape.attributes.len(), 2);
    assert_eq!(r.shape.body.as_deref(), Some("/payload"));
}

#[test]
fn small_documents_read() {
    for doc in [
        "{}",
        r#"{"unmatched": "drop"}"#,
        r#"{"body": ""}"#,
        r#"{"filter": [{"field": "", "exists": true}]}"#,
        r#"{"filter": [{"key": "header", "name": "x-tenant", "exists": false}]}"#,
        r#"{"routes": [{"when": {"key": "method", "equals": "PUT"}, "target": "default"}]}"#,
        r#"{"attributes": {"a.b-c_d": {"key": "routing_key"}}}"#,
        r#"{"group_id": {"key": "header", "name": "tenant"}}"#,
        r#"{"attributes_from": "/a~1b/~0c"}"#,
    ] {
        routes(doc);
    }
}

#[test]
fn from_env_reads_routes_and_blank_is_none() {
    let none = Env::from_pairs(&[]);
    assert_eq!(Routes::from_env(&none, ALL), Ok(None));
    let blank = Env::from_pairs(&[(ROUTES.name, "  ")]);
    assert_eq!(Routes::from_env(&blank, ALL), Ok(None));
    let set = Env::from_pairs(&[(ROUTES.name, r#" {"unmatched": "drop"} "#)]);
    assert!(Routes::from_env(&set, ALL).expect("good").is_some());
    let bad = Env::from_pairs(&[(ROUTES.name, r#"{"unmatched": 1}"#)]);
    let e = Routes::from_env(&bad, ALL).expect_err("bad");
    assert_eq!((e.variable.as_str(), e.value.as_str()), ("ROUTES", "1"));
}

#[test]
fn errors_show_the_part_at_fault_clipped() {
    let e = Routes::parse(r#"{"unmatched": "maybe"}"#, ALL).expect_err("bad");
    assert_eq!(e.value, "\"maybe\"");
    let long = format!(r#"{{"unmatched": "{}"}}"#, "é".repeat(500));
    let e = Routes::parse(&long, ALL).expect_err("bad");
    assert!(
        e.value.ends_with("...") && e.value.chars().count() == 203,
        "{}",
        e.value
    );
}
