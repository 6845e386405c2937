//! Fuzzing with proptest, in the normal test run: arbitrary bodies under
//! every content type, arbitrary headers, and arbitrary JSON as a Lambda
//! event, through the handler (fake SQS). No panic; never more messages
//! than the body could hold; every answer is JSON with a status that says
//! what happened. `PROPTEST_CASES` sets the number of cases (default 64).

use std::time::Duration;

use apigw_to_sqs::body::{Kind, SplitLimits, split};
use apigw_to_sqs::event::{unbuildable_uri, undecodable_body};
use apigw_to_sqs::lambda_http::request::LambdaRequest;
use apigw_to_sqs::lambda_http::{Body, Request};
use apigw_to_sqs::{Handler, Settings};
use base64::Engine as _;
use proptest::prelude::*;
use serde_json::{Value, json};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::test_support::{FakeSqs, proptest_cases};
use sqs_forwarder::{Env, Forwarder, SendSettings};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: proptest_cases(64),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn handler(fifo: bool) -> Handler<FakeSqs> {
    let settings = Settings::from_env(&Env::from_pairs(&[
        ("CONTENT_TYPES", "*/*"),
        ("ATTRIBUTE_HEADERS", "x-tenant"),
    ]))
    .expect("settings");
    let rules = EncodeRules {
        fifo,
        content_based_deduplication: fifo.then_some(false),
        ..EncodeRules::default()
    };
    let forwarder = Forwarder::new(FakeSqs::new(), SendSettings::default(), rules);
    Handler::new(settings, forwarder, Duration::ZERO)
}

fn body_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300),
        // JSON-ish text: arrays, lines, nesting, escapes.
        prop::collection::vec(
            prop_oneof![
                Just("[".to_owned()),
                Just("]".to_owned()),
                Just("{".to_owned()),
                Just("}".to_owned()),
                Just(",".to_owned()),
                Just("\n".to_owned()),
                Just("\r\n".to_owned()),
                Just(" ".to_owned()),
                Just("\"a\"".to_owned()),
                Just("1e999".to_owned()),
                Just("null".to_owned()),
                Just(":".to_owned()),
                Just("\"\\u0000\"".to_owned()),
                Just("\u{feff}".to_owned()),
                ".{0,4}",
            ],
            0..60
        )
        .prop_map(|parts| parts.concat().into_bytes()),
    ]
}

fn content_type() -> impl Strategy<Value = Option<String>> {
    prop::option::of(prop_oneof![
        Just("application/json".to_owned()),
        Just("application/json; charset=utf-8".to_owned()),
        Just("application/json; charset=latin1".to_owned()),
        Just("application/x-ndjson".to_owned()),
        Just("application/vnd.api+json".to_owned()),
        Just("text/plain".to_owned()),
        Just("application/octet-stream".to_owned()),
        ".{0,20}",
    ])
}

fn header_value() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,20}",
        "[ -~]{0,140}",
        "[0-9]{0,4}",
        Just("\"quoted\"".to_owned())
    ]
}

/// An HTTP API (2.0) event with these parts.
fn event(body: &[u8], base64: bool, headers: &[(&str, String)]) -> Value {
    let mut h = serde_json::Map::new();
    for (k, v) in headers {
        h.insert((*k).to_owned(), json!(v));
    }
    json!({
        "version": "2.0",
        "routeKey": "POST /messages",
        "rawPath": "/messages",
        "rawQueryString": "",
        "headers": h,
        "requestContext": {
            "accountId": "123456789012", "apiId": "api", "domainName": "api.example.com",
            "domainPrefix": "api", "requestId": "r", "routeKey": "POST /messages",
            "stage": "$default", "time": "29/Nov/2026:13:41:03 +0000", "timeEpoch": 1,
            "http": {"method": "POST", "path": "/messages", "protocol": "HTTP/1.1",
                     "sourceIp": "198.51.100.7", "userAgent": "t"}
        },
        "isBase64Encoded": base64,
        "body": if base64 {
            base64::engine::general_purpose::STANDARD.encode(body)
        } else {
            String::from_utf8_lossy(body).into_owned()
        },
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_body_splits_into_bounded_messages(
        bytes in body_bytes(),
        kind in prop_oneof![Just(Kind::Json), Just(Kind::Ndjson), Just(Kind::Opaque)],
        max_messages in 1usize..50,
        max_message in prop::option::of(1usize..200),
        binary in any::<bool>(),
    ) {
        let len = bytes.len();
        let body = match String::from_utf8(bytes) {
            Ok(s) if !binary => Body::Text(s),
            Ok(s) => Body::Binary(s.into_bytes()),
            Err(e) => Body::Binary(e.into_bytes()),
        };
        let limits = SplitLimits { max_messages, max_message_bytes: max_message };
        if let Ok((_, messages)) = split(body, kind, &limits) {
            prop_assert!(messages.len() <= max_messages);
            prop_assert!(messages.len() <= len.max(1));
            let total: usize = messages.iter().map(|m| m.len()).sum();
            prop_assert!(total <= len);
            if let Some(max) = max_message {
                prop_assert!(messages.iter().all(|m| m.len() <= max));
            }
        }
    }

    #[test]
    fn any_request_gets_a_json_answer(
        bytes in body_bytes(),
        base64 in any::<bool>(),
        ct in content_type(),
        group in prop::option::of(header_value()),
        dedup in prop::option::of(header_value()),
        key in prop::option::of(header_value()),
        delay in prop::option::of(header_value()),
        tenant in prop::option::of(header_value()),
        length in prop::option::of(header_value()),
        fifo in any::<bool>(),
    ) {
        let mut headers: Vec<(&str, String)> = Vec::new();
        let named = [
            ("content-type", ct), ("x-message-group-id", group),
            ("x-message-deduplication-id", dedup), ("idempotency-key", key),
            ("x-delay-seconds", delay), ("x-tenant", tenant), ("content-length", length),
        ];
        for (name, value) in named {
            if let Some(v) = value {
                headers.push((name, v));
            }
        }
        let ev = event(&bytes, base64, &headers);
        let Ok(payload) = serde_json::from_value::<LambdaRequest>(ev) else {
            // Header values serde or `http` refuse: not an event Lambda sends.
            return Ok(());
        };
        prop_assert!(undecodable_body(&payload).is_none());
        let request: Request = payload.into();
        let h = handler(fifo);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        let response = rt.block_on(h.handle(request));
        let status = response.status().as_u16();
        // Never a 500: bad input is the client's, and answered as such.
        prop_assert!([202, 207, 400, 411, 413, 415, 429, 502, 503].contains(&status), "{}", status);
        let text = match response.body() {
            Body::Text(t) => t.clone(),
            other => return Err(TestCaseError::fail(format!("not text: {other:?}"))),
        };
        let answer: Value = serde_json::from_str(&text).expect("a JSON answer");
        let sent = h.forwarder().transport().sent();
        if status == 202 {
            prop_assert_eq!(answer["sent"].as_u64(), Some(sent as u64));
        } else if status >= 400 && answer.get("results").is_none() {
            prop_assert_eq!(sent, 0, "refused, yet sent");
            prop_assert!(answer["error"]["code"].is_string());
        }
        prop_assert!(sent <= bytes.len().max(1));
    }

    #[test]
    fn any_json_is_an_http_event_or_refused_and_never_panics(
        body in ".{0,40}",
        base64 in any::<bool>(),
        extra in prop::collection::btree_map("[a-zA-Z]{1,10}", ".{0,10}", 0..4),
    ) {
        let mut ev = event(body.as_bytes(), false, &[]);
        ev["isBase64Encoded"] = json!(base64);
        for (k, v) in extra {
            ev[k] = json!(v);
        }
        if let Ok(payload) = serde_json::from_value::<LambdaRequest>(ev) {
            let decodes = base64::engine::general_purpose::STANDARD.decode(&body).is_ok();
            prop_assert_eq!(undecodable_body(&payload).is_some(), base64 && !decodes);
            if undecodable_body(&payload).is_none() && unbuildable_uri(&payload).is_none() {
                // What lambda_http would do next: must not panic now.
                let _request: Request = payload.into();
            }
        }
    }

    /// The URI guard refuses exactly the events `lambda_http` would panic on
    /// while forming the URI: arbitrary host, `X-Forwarded-Proto`, path and
    /// query string, from a REST API, an HTTP API or a load balancer.
    #[test]
    fn the_uri_guard_refuses_exactly_what_lambda_http_panics_on(
        host in prop::option::of("[ -~]{0,12}"),
        proto in prop::option::of("[ -~]{0,8}"),
        path in "[ -~\u{e9}]{0,12}",
        query in "[ -~\u{e9}]{0,12}",
        source in 0u8..4,
    ) {
        let mut ev = event(b"{}", false, &[]);
        if let Some(h) = &host {
            ev["headers"]["host"] = json!(h);
        }
        if let Some(p) = &proto {
            ev["headers"]["x-forwarded-proto"] = json!(p);
        }
        let headers = ev["headers"].clone();
        match source {
            // REST API.
            0 => {
                ev = serde_json::from_str(include_str!("../../../events/apigw-rest-base64-binary.json"))
                    .expect("the REST sample");
                ev["headers"] = headers;
                ev["path"] = json!(path);
                ev["queryStringParameters"] = json!({"q": query});
            }
            // Application Load Balancer, multi-value headers off and on:
            // the query string as the client wrote it, decoded by
            // lambda_http.
            1 | 2 => {
                ev = serde_json::from_str(include_str!("../../../events/apigw-alb-single.json"))
                    .expect("the ALB sample");
                ev["headers"] = headers;
                ev["path"] = json!(path);
                if source == 1 {
                    ev["queryStringParameters"] = json!({"q": query});
                } else {
                    ev["multiValueQueryStringParameters"] = json!({"q": [query, "x"]});
                }
            }
            // HTTP API.
            _ => {
                ev["rawPath"] = json!(path);
                ev["rawQueryString"] = json!(query);
            }
        }
        let Ok(payload) = serde_json::from_value::<LambdaRequest>(ev) else {
            return Ok(());
        };
        let refused = unbuildable_uri(&payload).is_some();
        let panics = std::panic::catch_unwind(move || {
            let _request: Request = payload.into();
        })
        .is_err();
        prop_assert_eq!(refused, panics);
    }
}
