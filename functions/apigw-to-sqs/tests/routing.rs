//! The handler with routing rules (`ROUTES`) and a fake SQS per target:
//! requests on a path route's path reach the queue they name (a name that
//! is no target is a `404`), each message is planned on its own body and
//! the request's path, method and headers, and a message the rules skip or
//! cannot shape gets its own result. The same against the local SQS is in
//! the workspace's `tests/apigw_routing.rs`.

use std::sync::Arc;
use std::time::Duration;

use apigw_to_sqs::lambda_http::http::{StatusCode, header};
use apigw_to_sqs::lambda_http::{Body, Request, Response, request};
use apigw_to_sqs::routing::SOURCE_KEYS;
use apigw_to_sqs::{Handler, Route, Settings};
use serde_json::{Value, json};
use sqs_forwarder::message::encode::{EncodeRules, Entry};
use sqs_forwarder::route::{Router, Routes};
use sqs_forwarder::test_support::FakeSqs;
use sqs_forwarder::{Env, Forwarder, SendSettings};

const EU: &str = "https://sqs.eu-west-1.amazonaws.com/123456789012/eu.fifo";
const US: &str = "https://sqs.us-east-1.amazonaws.com/123456789012/us";

/// A fake queue per target: the default, `eu` (FIFO, no content-based
/// deduplication) and `us`.
struct Fakes {
    default: FakeSqs,
    eu: FakeSqs,
    us: FakeSqs,
}

fn fake() -> FakeSqs {
    FakeSqs::new().message_ids(|_, _| "fake-id".into())
}

fn entries(fake: &FakeSqs) -> Vec<Arc<Entry>> {
    fake.seen().into_iter().map(|s| s.entry).collect()
}

fn bodies(fake: &FakeSqs) -> Vec<String> {
    entries(fake).iter().map(|e| e.body.clone()).collect()
}

/// The handler with `rules` (`targets` added: eu and us) over three fakes.
fn handler(rules: Value) -> (Handler<FakeSqs>, Fakes) {
    let mut doc = rules;
    doc["targets"] = json!({"eu": EU, "us": US});
    let routes = Routes::parse(&doc.to_string(), SOURCE_KEYS).expect("valid rules");
    let fakes = Fakes {
        default: fake(),
        eu: fake(),
        us: fake(),
    };
    let fifo = EncodeRules {
        fifo: true,
        content_based_deduplication: Some(false),
        ..EncodeRules::default()
    };
    let forwarder =
        |f: &FakeSqs, rules: EncodeRules| Forwarder::new(f.clone(), SendSettings::default(), rules);
    let router = Router::new(
        routes,
        forwarder(&fakes.default, EncodeRules::default()),
        vec![
            forwarder(&fakes.eu, fifo),
            forwarder(&fakes.us, EncodeRules::default()),
        ],
    )
    .expect("a forwarder per target");
    let settings = Settings::from_env(&Env::from_pairs(&[])).expect("valid settings");
    (Handler::routed(settings, router, Duration::ZERO), fakes)
}

fn event_text() -> String {
    let path = format!(
        "{}/../../events/apigw-http-json-array.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// An HTTP API request: `method` on `path` (stage `$default`) with `body`
/// as JSON and these extra headers.
fn post(method: &str, path: &str, body: &str, headers: &[(&str, &str)]) -> Request {
    let mut v: Value = serde_json::from_str(&event_text()).expect("json");
    v["rawPath"] = path.into();
    v["requestContext"]["http"]["path"] = path.into();
    v["requestContext"]["http"]["method"] = method.into();
    v["body"] = body.into();
    let h = v["headers"].as_object_mut().expect("headers");
    h.remove("content-length");
    h.remove("idempotency-key");
    for (k, val) in headers {
        h.insert((*k).to_owned(), (*val).into());
    }
    request::from_str(&v.to_string()).expect("event")
}

fn json(response: &Response<Body>) -> Value {
    assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    match response.body() {
        Body::Text(t) => serde_json::from_str(t).expect("a JSON body"),
        other => panic!("a text body, not {other:?}"),
    }
}

fn statuses(answer: &Value) -> Vec<String> {
    answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["status"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_path_route_takes_requests_on_the_queue_its_path_names() {
    let (h, fakes) = handler(json!({"routes": [{"path": "/queues/{name}/messages"}]}));
    let group = [("x-message-group-id", "g"), ("idempotency-key", "k")];

    let r = h
        .handle(post("POST", "/queues/us/messages", "[1,2]", &[]))
        .await;
    assert_eq!(r.status(), StatusCode::ACCEPTED, "{}", json(&r));
    assert_eq!(bodies(&fakes.us), vec!["1", "2"]);

    let r = h
        .handle(post("POST", "/queues/eu/messages/", "{\"a\":1}", &group))
        .await;
    assert_eq!(
        r.status(),
        StatusCode::ACCEPTED,
        "a trailing slash: {}",
        json(&r)
    );
    assert_eq!(bodies(&fakes.eu), vec!["{\"a\":1}"]);

    // `default` is the function's own queue; so is MESSAGES_PATH, where no
    // route matches (unmatched: default).
    h.handle(post("POST", "/queues/default/messages", "3", &[]))
        .await;
    h.handle(post("POST", "/messages", "4", &[])).await;
    assert_eq!(bodies(&fakes.default), vec!["3", "4"]);

    // A named stage in front of the path (an HTTP API stage).
    let mut v: Value = serde_json::from_str(&event_text()).expect("json");
    v["rawPath"] = "/prod/queues/us/messages".into();
    v["requestContext"]["stage"] = "prod".into();
    v["body"] = "5".into();
    v["headers"]
        .as_object_mut()
        .expect("headers")
        .remove("content-length");
    let staged = request::from_str(&v.to_string()).expect("event");
    assert_eq!(h.route(&staged), Route::Queue);
    let r = h.handle(staged).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED, "{}", json(&r));
    assert_eq!(bodies(&fakes.us), vec!["1", "2", "5"]);

    // A path route's path is POST only.
    let r = h.handle(post("GET", "/queues/us/messages", "6", &[])).await;
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.headers()[header::ALLOW], "POST");
    assert_eq!(bodies(&fakes.us).len(), 3);
}

#[tokio::test]
async fn a_name_that_is_no_target_is_a_404_whatever_unmatched_says() {
    for unmatched in ["default", "drop"] {
        let (h, fakes) = handler(json!({
            "routes": [{"path": "/queues/{name}/messages"}],
            "unmatched": unmatched
        }));
        let req = post("POST", "/queues/ordres/messages", "[1]", &[]);
        assert_eq!(h.route(&req), Route::UnknownQueue);
        let r = h.handle(req).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{unmatched}");
        let answer = json(&r);
        assert_eq!(answer["error"]["code"], "UnknownQueue", "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("\"ordres\""), "{message}");
        assert!(!message.contains("sqs."), "no queue URL shown: {message}");
        // A name as long as a path can make is shown clipped.
        let long = "n".repeat(500);
        let r = h
            .handle(post("POST", &format!("/queues/{long}/messages"), "1", &[]))
            .await;
        let message = json(&r)["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(message.len() < 300, "{message}");
        for f in [&fakes.default, &fakes.eu, &fakes.us] {
            assert_eq!(f.call_count(), 0, "{unmatched}: nothing sent");
        }
    }
}

#[tokio::test]
async fn without_a_path_route_only_messages_path_takes_messages() {
    let (h, fakes) = handler(json!({"routes": [
        {"when": {"key": "path", "equals": "/messages"}, "target": "us"}
    ]}));
    let r = h
        .handle(post("POST", "/queues/us/messages", "1", &[]))
        .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(json(&r)["error"]["code"], "NotFound");
    let r = h.handle(post("POST", "/messages", "1", &[])).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    assert_eq!(
        bodies(&fakes.us),
        vec!["1"],
        "the path key is the matched path"
    );
}

#[tokio::test]
async fn messages_are_routed_on_their_own_fields_and_the_request_headers() {
    let (h, fakes) = handler(json!({
        "routes": [
            {"when": {"field": "/region", "equals": "eu"}, "target": "eu"},
            {"when": {"key": "header", "name": "X-REGION", "equals": "us"}, "target": "us"},
            {"when": {"key": "method", "equals": "PUT"}, "target": "eu"}
        ]
    }));
    let body = r#"[{"region":"eu","n":0},{"region":"ap","n":1},"text"]"#;
    let headers = [
        ("x-region", "us"),
        ("x-message-group-id", "g"),
        ("idempotency-key", "k"),
    ];
    let r = h.handle(post("POST", "/messages", body, &headers)).await;
    let answer = json(&r);
    assert_eq!(r.status(), StatusCode::ACCEPTED, "{answer}");
    assert_eq!(statuses(&answer), vec!["sent"; 3]);
    let eu = entries(&fakes.eu);
    assert_eq!(eu.len(), 1);
    assert_eq!(eu[0].body, r#"{"region":"eu","n":0}"#);
    // FIFO ids from the headers reach the FIFO queue, per message...
    assert_eq!(eu[0].group_id.as_deref(), Some("g"));
    assert_eq!(eu[0].deduplication_id.as_deref(), Some("k-0"));
    // ...and are taken off for a standard one.
    let us = entries(&fakes.us);
    assert_eq!(
        us.iter().map(|e| e.body.as_str()).collect::<Vec<_>>(),
        vec![r#"{"region":"ap","n":1}"#, "\"text\""]
    );
    assert!(
        us.iter()
            .all(|e| e.group_id.is_none() && e.deduplication_id.is_none())
    );
    assert_eq!(fakes.default.call_count(), 0);
}

#[tokio::test]
async fn skipped_and_unshapeable_messages_get_their_own_results() {
    let (h, fakes) = handler(json!({
        "filter": [{"field": "/type", "exists": true}],
        "routes": [{"when": {"field": "/type", "equals": "order"}, "target": "us"}],
        "unmatched": "drop",
        "body": "/payload",
        "attributes": {"n": {"field": "/n", "type": "Number"}}
    }));
    let body = concat!(
        r#"[{"type":"order","n":1,"payload":{"id":1}},"#,
        r#"{"kind":"ping"},"#,
        r#"{"type":"click","payload":"x"},"#,
        r#"{"type":"order","n":4}]"#
    );
    let r = h.handle(post("POST", "/messages", body, &[])).await;
    let answer = json(&r);
    assert_eq!(r.status(), StatusCode::MULTI_STATUS, "{answer}");
    assert_eq!(
        statuses(&answer),
        vec!["sent", "skipped", "skipped", "failed"]
    );
    let results = &answer["results"];
    assert_eq!(results[1]["reason"]["code"], "FilteredOut");
    assert_eq!(results[2]["reason"]["code"], "Unmatched");
    assert_eq!(results[3]["error"]["code"], "ShapeFailed");
    assert_eq!(results[3]["error"]["retryable"], false);
    assert!(
        results[3]["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("/payload"),
        "{answer}"
    );
    assert_eq!(
        (
            &answer["sent"],
            &answer["failed"],
            &answer["dropped"],
            &answer["skipped"]
        ),
        (&json!(1), &json!(1), &json!(0), &json!(2))
    );
    let us = entries(&fakes.us);
    assert_eq!(us.len(), 1);
    assert_eq!(us[0].body, r#"{"id":1}"#);
    assert!(us[0].attributes.iter().any(|a| a.name == "n"));

    // Every message skipped: done, 202, nothing sent.
    let r = h
        .handle(post("POST", "/messages", r#"[{"kind":1},{"kind":2}]"#, &[]))
        .await;
    let answer = json(&r);
    assert_eq!(r.status(), StatusCode::ACCEPTED, "{answer}");
    assert_eq!(statuses(&answer), vec!["skipped", "skipped"]);
    // Every message at fault: a content fault, 400.
    let r = h
        .handle(post("POST", "/messages", r#"{"type":"order"}"#, &[]))
        .await;
    let answer = json(&r);
    assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(answer["error"]["code"], "InvalidMessage");
    assert_eq!(entries(&fakes.us).len(), 1);
    assert_eq!(fakes.default.call_count(), 0);
}

#[tokio::test]
async fn a_fifo_target_checks_its_needs_per_message() {
    let (h, fakes) = handler(json!({
        "routes": [{"when": {"field": "/to", "equals": "eu"}, "target": "eu"}]
    }));
    // No group id, a delay: the FIFO queue's messages fail for their
    // content, the standard queue's are sent with the delay.
    let body = r#"[{"to":"eu"},{"to":"home"}]"#;
    let r = h
        .handle(post("POST", "/messages", body, &[("x-delay-seconds", "5")]))
        .await;
    let answer = json(&r);
    assert_eq!(r.status(), StatusCode::MULTI_STATUS, "{answer}");
    assert_eq!(statuses(&answer), vec!["failed", "sent"]);
    assert_eq!(answer["results"][0]["error"]["code"], "MissingGroupId");
    let default = entries(&fakes.default);
    assert_eq!(default.len(), 1);
    assert_eq!(default[0].delay_seconds, Some(5));
    assert_eq!(fakes.eu.call_count(), 0);

    let r = h
        .handle(post(
            "POST",
            "/messages",
            body,
            &[
                ("x-message-group-id", "g"),
                ("idempotency-key", "k"),
                ("x-delay-seconds", "5"),
            ],
        ))
        .await;
    let answer = json(&r);
    assert_eq!(
        answer["results"][0]["error"]["code"], "InvalidDelay",
        "{answer}"
    );
    assert_eq!(fakes.eu.call_count(), 0);

    let r = h
        .handle(post(
            "POST",
            "/messages",
            body,
            &[("x-message-group-id", "g")],
        ))
        .await;
    let answer = json(&r);
    assert_eq!(
        answer["results"][0]["error"]["code"], "MissingDeduplicationId",
        "{answer}"
    );
}
