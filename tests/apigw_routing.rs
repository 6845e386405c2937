//! End-to-end: apigw-to-sqs with routing rules (`ROUTES`) against the local
//! SQS endpoint. Three targets, a standard default queue, a FIFO queue and
//! a standard queue with fair-queue group ids; messages routed by the path
//! route (`/queues/{name}/messages`), a JSON field and a header, a filter
//! that reads the method, a shaped body and attributes (`String`, `Number`,
//! `attributes_from`), unmatched messages under both policies, a name that
//! is no target (`404`), a target that does not exist (the start fails
//! naming it), and faults on one target only (the others' messages
//! unaffected, every result in the answer exact).

use apigw_to_sqs::lambda_http::http::{StatusCode, header};
use apigw_to_sqs::lambda_http::{Body, Request, Response, request};
use apigw_to_sqs::routing::SOURCE_KEYS;
use apigw_to_sqs::{Handler, Settings};
use aws_sdk_sqs::types::MessageSystemAttributeName;
use forwarder_e2e::routing::{self, Queues};
use forwarder_e2e::{attributes, client, drain};
use serde_json::{Value, json};
use sqs_forwarder::route::Router;
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Env, Forwarder, SqsTransport};

async fn queues(tag: &str) -> Queues {
    routing::orders_and_eu(&format!("e2e-apigw-route-{tag}")).await
}

fn rules(q: &Queues, unmatched: &str) -> String {
    json!({
        "targets": { "orders": q.orders, "eu": q.eu },
        "filter": [
            { "field": "/type", "exists": true },
            { "key": "method", "equals": "POST" }
        ],
        "routes": [
            { "path": "/queues/{name}/messages" },
            { "when": { "field": "/type", "equals": "order" }, "target": "orders" },
            { "when": { "key": "header", "name": "X-Region", "prefix": "eu-" }, "target": "eu" }
        ],
        "unmatched": unmatched,
        "body": "/payload",
        "attributes": {
            "tenant": { "field": "/tenant", "type": "String" },
            "n": { "field": "/n", "type": "Number" },
            "region": { "key": "header", "name": "x-region" }
        },
        "attributes_from": "/attrs",
        "group_id": { "field": "/tenant" }
    })
    .to_string()
}

fn handler<T: sqs_forwarder::Transport>(router: Router<T>) -> Handler<T> {
    let settings = Settings::from_env(&Env::from_pairs(&[])).expect("valid settings");
    Handler::routed(settings, router, std::time::Duration::ZERO)
}

/// An HTTP API request (payload 2.0, stage `$default`): POST on `path`
/// with this content type, body and extra headers.
fn post(path: &str, content_type: &str, body: &str, headers: &[(&str, &str)]) -> Request {
    let file = format!(
        "{}/../events/apigw-http-json-array.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut v: Value = serde_json::from_str(&text).expect("sample event JSON");
    v["rawPath"] = path.into();
    v["requestContext"]["http"]["path"] = path.into();
    v["body"] = body.into();
    let h = v["headers"].as_object_mut().expect("headers");
    h.remove("content-length");
    h.remove("idempotency-key");
    h.insert("content-type".into(), content_type.into());
    for (k, val) in headers {
        h.insert((*k).to_owned(), (*val).into());
    }
    request::from_str(&v.to_string()).expect("event")
}

fn json_of(response: &Response<Body>) -> Value {
    assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    match response.body() {
        Body::Text(t) => serde_json::from_str(t).expect("a JSON body"),
        other => panic!("a text body, not {other:?}"),
    }
}

/// Each result's status and, for a failure or a skip, its code.
fn results(answer: &Value) -> Vec<(String, String)> {
    answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .enumerate()
        .map(|(i, r)| {
            assert_eq!(r["index"], i, "results in body order: {answer}");
            let code = r["error"]["code"]
                .as_str()
                .or(r["reason"]["code"].as_str())
                .unwrap_or_default();
            (
                r["status"].as_str().unwrap_or_default().to_owned(),
                code.to_owned(),
            )
        })
        .collect()
}

fn expect(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(s, c)| ((*s).to_owned(), (*c).to_owned()))
        .collect()
}

/// Request 1: a JSON array on MESSAGES_PATH from an eu- region, with an
/// idempotency key (the FIFO queue takes no message without one).
fn first_request() -> Request {
    let body = json!([
        // 0: an order -> the FIFO queue, group "acme".
        {"type": "order", "tenant": "acme", "n": 1, "payload": {"id": 1}},
        // 1: a click from an eu- region -> the eu queue; its tenant is no
        //    valid id: a hashed fair-queue group; attributes from a map.
        {"type": "click", "tenant": "t 2", "n": 2, "payload": "hello",
         "attrs": {"source": "web", "score": 7}},
        // 2: no "type" -> filtered out.
        {"kind": "ping"},
        // 3: no payload -> a content fault (ShapeFailed).
        {"type": "click", "tenant": "beta", "n": 3},
        // 4: another order, same tenant -> the FIFO queue after 0.
        {"type": "order", "tenant": "acme", "n": 5, "payload": {"id": 5}}
    ])
    .to_string();
    post(
        "/messages",
        "application/json",
        &body,
        &[("x-region", "eu-west-1"), ("idempotency-key", "req-1")],
    )
}

/// Request 2: NDJSON on MESSAGES_PATH with no region: matched by no route.
fn second_request() -> Request {
    let body = concat!(
        r#"{"type":"click","tenant":"beta","n":6,"payload":"x"}"#,
        "\n",
        r#"{"type":"view","tenant":"gamma","n":7}"#,
        "\n"
    );
    post("/messages", "application/x-ndjson", body, &[])
}

/// Request 3: an order posted to the eu queue by path: the path route
/// comes first.
fn third_request() -> Request {
    let body = json!({"type": "order", "tenant": "zeta", "n": 8, "payload": "via path"});
    post(
        "/queues/eu/messages",
        "application/json",
        &body.to_string(),
        &[],
    )
}

fn deduplication_of(m: &aws_sdk_sqs::types::Message) -> Option<String> {
    m.attributes()
        .and_then(|a| a.get(&MessageSystemAttributeName::MessageDeduplicationId))
        .cloned()
}

#[tokio::test(flavor = "multi_thread")]
async fn messages_reach_the_queue_their_rules_name_shaped() {
    let q = queues("main").await;
    let router = routing::router(&q.default, SOURCE_KEYS, &rules(&q, "default")).await;
    assert!(router.any_fifo());
    let h = handler(router);

    let r = h.handle(first_request()).await;
    let answer = json_of(&r);
    assert_eq!(r.status(), StatusCode::MULTI_STATUS, "{answer}");
    assert_eq!(
        results(&answer),
        expect(&[
            ("sent", ""),
            ("sent", ""),
            ("skipped", "FilteredOut"),
            ("failed", "ShapeFailed"),
            ("sent", ""),
        ])
    );
    assert_eq!(answer["results"][3]["error"]["retryable"], false);
    assert!(
        answer["results"][0]["sequenceNumber"].is_string(),
        "{answer}"
    );
    assert_eq!(
        (&answer["sent"], &answer["failed"], &answer["skipped"]),
        (&json!(3), &json!(1), &json!(1))
    );

    let r = h.handle(second_request()).await;
    let answer = json_of(&r);
    assert_eq!(r.status(), StatusCode::MULTI_STATUS, "{answer}");
    assert_eq!(
        results(&answer),
        expect(&[("sent", ""), ("failed", "ShapeFailed")])
    );

    let r = h.handle(third_request()).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED, "{}", json_of(&r));

    // A name that is no target: refused, nothing sent.
    let r = h
        .handle(post(
            "/queues/nope/messages",
            "application/json",
            "{\"type\":\"order\"}",
            &[],
        ))
        .await;
    let answer = json_of(&r);
    assert_eq!(r.status(), StatusCode::NOT_FOUND, "{answer}");
    assert_eq!(answer["error"]["code"], "UnknownQueue");

    // Data that is not JSON: filtered out, done.
    let r = h
        .handle(post("/messages", "text/plain", "plain text", &[]))
        .await;
    let answer = json_of(&r);
    assert_eq!(r.status(), StatusCode::ACCEPTED, "{answer}");
    assert_eq!(results(&answer), expect(&[("skipped", "FilteredOut")]));

    let sqs = client();
    let orders = drain(&sqs, &q.orders, 3).await;
    let bodies: Vec<&str> = orders.iter().filter_map(|m| m.body()).collect();
    assert_eq!(
        bodies,
        vec![r#"{"id":1}"#, r#"{"id":5}"#],
        "FIFO order kept"
    );
    let dedup: Vec<_> = orders.iter().map(deduplication_of).collect();
    assert_eq!(
        dedup,
        vec![Some("req-1-0".to_owned()), Some("req-1-4".to_owned())],
        "the idempotency key, per message of the batch"
    );
    for m in &orders {
        assert_eq!(routing::group_of(m).as_deref(), Some("acme"));
        let attrs = attributes(m);
        assert_eq!(attrs["tenant"], ("String".to_owned(), b"acme".to_vec()));
        assert_eq!(attrs["n"].0, "Number");
        assert_eq!(
            attrs["region"],
            ("String".to_owned(), b"eu-west-1".to_vec())
        );
    }

    let mut eu = drain(&sqs, &q.eu, 3).await;
    eu.sort_by(|a, b| a.body().cmp(&b.body()));
    let bodies: Vec<&str> = eu.iter().filter_map(|m| m.body()).collect();
    assert_eq!(bodies, vec!["hello", "via path"]);
    let hello = &eu[0];
    let group = routing::group_of(hello).expect("a fair-queue group id on a standard queue");
    assert!(
        group.starts_with("g-") && group.len() == 2 + 64,
        "hashed: {group}"
    );
    assert_eq!(deduplication_of(hello), None, "no deduplication id here");
    let attrs = attributes(hello);
    assert_eq!(attrs["source"], ("String".to_owned(), b"web".to_vec()));
    assert_eq!(attrs["score"], ("Number".to_owned(), b"7".to_vec()));
    assert_eq!(attrs["n"], ("Number".to_owned(), b"2".to_vec()));
    assert_eq!(routing::group_of(&eu[1]).as_deref(), Some("zeta"));
    assert!(
        !attributes(&eu[1]).contains_key("region"),
        "no header, no attribute"
    );

    let default = drain(&sqs, &q.default, 2).await;
    assert_eq!(default.len(), 1);
    assert_eq!(default[0].body(), Some("x"));
    assert_eq!(routing::group_of(&default[0]).as_deref(), Some("beta"));
}

#[tokio::test(flavor = "multi_thread")]
async fn unmatched_messages_are_skipped_when_the_rules_say_so() {
    let q = queues("drop").await;
    let h = handler(routing::router(&q.default, SOURCE_KEYS, &rules(&q, "drop")).await);
    let r = h.handle(first_request()).await;
    assert_eq!(r.status(), StatusCode::MULTI_STATUS);
    // Both messages match no route: skipped before shaping, so the second
    // one's missing payload is no fault here.
    let r = h.handle(second_request()).await;
    let answer = json_of(&r);
    assert_eq!(r.status(), StatusCode::ACCEPTED, "{answer}");
    assert_eq!(
        results(&answer),
        expect(&[("skipped", "Unmatched"), ("skipped", "Unmatched")])
    );
    assert_eq!(answer["skipped"], 2);
    // A name that is no target is refused under drop too.
    let r = h
        .handle(post(
            "/queues/nope/messages",
            "application/json",
            "{\"type\":\"x\"}",
            &[],
        ))
        .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let sqs = client();
    assert!(
        drain(&sqs, &q.default, 1).await.is_empty(),
        "the unmatched messages are skipped"
    );
    assert_eq!(drain(&sqs, &q.orders, 3).await.len(), 2);
    assert_eq!(drain(&sqs, &q.eu, 2).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_target_that_does_not_exist_stops_the_start_naming_it() {
    let q = queues("ghost").await;
    let missing = format!(
        "{}/000000000000/no-such-queue-{}",
        forwarder_e2e::endpoint(),
        std::process::id()
    );
    let doc = json!({
        "targets": { "ghost": missing },
        "routes": [ { "path": "/queues/{name}/messages" } ]
    })
    .to_string();
    let error = routing::start_error(&q.default, SOURCE_KEYS, &doc).await;
    assert!(error.contains("ROUTES target \"ghost\""), "{error}");
    assert!(error.contains("no-such-queue"), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_target_fails_its_own_messages_only() {
    let q = queues("faults").await;
    let real = routing::router(&q.default, SOURCE_KEYS, &rules(&q, "default")).await;
    // The same targets, each behind a fake that can fail entries: the eu
    // queue refuses everything, for good; the others pass to the local SQS.
    let wrap = |f: &Forwarder<SqsTransport>, refuse: bool| {
        let fake = FakeSqs::in_front_of(f.transport().clone());
        let fake = if refuse {
            fake.fail_where(
                |_| true,
                Reply::fail("AccessDenied", true)
                    .with_message("denied on arn:aws:sqs:us-east-1:000000000000:eu"),
            )
        } else {
            fake
        };
        Forwarder::new(fake, f.settings().clone(), f.rules().clone())
    };
    let targets = real.targets();
    let routes = real.routes().cloned().expect("rules");
    let eu_index = routes.target("eu").expect("eu").0;
    let others = targets[1..]
        .iter()
        .enumerate()
        .map(|(i, f)| wrap(f, i + 1 == eu_index))
        .collect();
    let router = Router::new(routes, wrap(&targets[0], false), others).expect("router");
    let h = handler(router);

    let r = h.handle(first_request()).await;
    let answer = json_of(&r);
    assert_eq!(r.status(), StatusCode::MULTI_STATUS, "{answer}");
    // Message 1 (eu) failed for good and message 3 is at fault; the
    // orders went through.
    assert_eq!(
        results(&answer),
        expect(&[
            ("sent", ""),
            ("failed", "AccessDenied"),
            ("skipped", "FilteredOut"),
            ("failed", "ShapeFailed"),
            ("sent", ""),
        ])
    );
    let refused = &answer["results"][1]["error"];
    assert_eq!(refused["retryable"], false);
    assert!(
        !refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("000000000000"),
        "the queue's own text goes to the logs only: {refused}"
    );

    let r = h.handle(second_request()).await;
    assert_eq!(
        results(&json_of(&r)),
        expect(&[("sent", ""), ("failed", "ShapeFailed")])
    );
    // Everything for the eu queue fails: nothing sent, the queue's fault.
    let r = h.handle(third_request()).await;
    let answer = json_of(&r);
    assert_eq!(r.status(), StatusCode::BAD_GATEWAY, "{answer}");
    assert_eq!(answer["error"]["code"], "QueueRefused");

    let sqs = client();
    assert_eq!(
        drain(&sqs, &q.orders, 3).await.len(),
        2,
        "orders unaffected"
    );
    assert_eq!(
        drain(&sqs, &q.default, 2).await.len(),
        1,
        "default unaffected"
    );
    assert!(drain(&sqs, &q.eu, 1).await.is_empty());
}
