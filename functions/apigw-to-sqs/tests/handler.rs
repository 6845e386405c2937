//! The handler with a fake SQS transport: every sample event in `events/`,
//! read the way Lambda reads it (`lambda_http`'s own deserializer), and the
//! answers that need SQS to misbehave (throttling, a refusing queue, the
//! deadline). The same flows against the local SQS are in the workspace's
//! `tests/apigw_to_sqs.rs`.

use std::sync::Arc;
use std::time::Duration;

use apigw_to_sqs::lambda_http::http::{StatusCode, header};
use apigw_to_sqs::lambda_http::{Body, Context, Request, RequestExt, Response, request};
use apigw_to_sqs::{Handler, Settings};
use sqs_forwarder::call::transport::CallError;
use sqs_forwarder::message::encode::{EncodeRules, Entry};
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Env, Failure, Forwarder, RetryPolicy, SendSettings};

/// The workspace's fake SQS, accepting every entry as `fake-id`; it records
/// every call.
fn accepting() -> FakeSqs {
    FakeSqs::new().message_ids(|_, _| "fake-id".into())
}

/// A fake SQS that fails every call with `error`.
fn failing(error: CallError) -> FakeSqs {
    accepting().fail_calls(move |_| Some(error.clone()))
}

/// Every entry of every call, failed calls included.
fn entries_of(fake: &FakeSqs) -> Vec<Arc<Entry>> {
    fake.seen().into_iter().map(|s| s.entry).collect()
}

fn handler_with(fake: FakeSqs, rules: EncodeRules, vars: &[(&str, &str)]) -> Handler<FakeSqs> {
    let settings = Settings::from_env(&Env::from_pairs(vars)).expect("valid settings");
    let send = SendSettings {
        retry: RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        },
        ..SendSettings::default()
    };
    Handler::new(settings, Forwarder::new(fake, send, rules), Duration::ZERO)
}

fn handler(fake: FakeSqs) -> Handler<FakeSqs> {
    handler_with(fake, EncodeRules::default(), &[])
}

fn event_text(name: &str) -> String {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A sample event as Lambda hands it to `lambda_http`.
fn event(name: &str) -> Request {
    request::from_str(&event_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A sample event with parts of its JSON changed first.
fn event_with(name: &str, change: impl FnOnce(&mut serde_json::Value)) -> Request {
    let mut v: serde_json::Value = serde_json::from_str(&event_text(name)).expect("json");
    change(&mut v);
    request::from_str(&v.to_string()).expect("event")
}

fn json(response: &Response<Body>) -> serde_json::Value {
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "application/json",
        "every answer is JSON"
    );
    match response.body() {
        Body::Text(t) => serde_json::from_str(t).expect("a JSON body"),
        other => panic!("a text body, not {other:?}"),
    }
}

#[tokio::test]
async fn every_sample_event_gets_its_answer() {
    // (event, status, messages sent, error code)
    let cases: &[(&str, u16, usize, Option<&str>)] = &[
        ("apigw-rest-single.json", 202, 1, None),
        ("apigw-rest-base64-binary.json", 202, 1, None),
        ("apigw-http-json-array.json", 202, 3, None),
        ("apigw-http-ndjson.json", 202, 3, None),
        ("apigw-http-base64-json-array.json", 202, 2, None),
        ("apigw-url-single-text.json", 202, 1, None),
        ("apigw-url-base64-binary.json", 202, 1, None),
        ("apigw-url-health.json", 200, 0, None),
        ("apigw-bad-json.json", 400, 0, Some("InvalidJson")),
        ("apigw-bad-header.json", 400, 0, Some("InvalidHeader")),
        (
            "apigw-bad-content-type.json",
            415,
            0,
            Some("UnsupportedMediaType"),
        ),
        ("apigw-bad-empty-body.json", 411, 0, Some("EmptyBody")),
        ("apigw-alb-single.json", 202, 1, None),
        ("apigw-alb-multi-value.json", 202, 2, None),
        ("apigw-alb-base64-binary.json", 202, 1, None),
        ("apigw-alb-health.json", 200, 0, None),
    ];
    let dir = format!("{}/../../events", env!("CARGO_MANIFEST_DIR"));
    let mut samples: Vec<String> = std::fs::read_dir(&dir)
        .expect("events/")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("apigw-"))
        .collect();
    samples.sort();
    let mut listed: Vec<String> = cases.iter().map(|c| c.0.to_owned()).collect();
    listed.sort();
    assert_eq!(samples, listed, "every apigw sample event is tested here");

    for (name, status, sent, code) in cases {
        let h = handler(accepting());
        let response = h.handle(event(name)).await;
        assert_eq!(response.status().as_u16(), *status, "{name}");
        let body = json(&response);
        assert_eq!(entries_of(h.forwarder().transport()).len(), *sent, "{name}");
        match code {
            Some(code) => {
                assert_eq!(body["error"]["code"], *code, "{name}: {body}");
                assert!(
                    body["error"]["message"]
                        .as_str()
                        .is_some_and(|m| !m.is_empty())
                );
            }
            None if *status == 202 => {
                assert_eq!(body["sent"], *sent as u64, "{name}");
                let results = body["results"].as_array().expect("results");
                for (i, r) in results.iter().enumerate() {
                    assert_eq!(r["index"], i as u64);
                    assert_eq!(r["status"], "sent");
                    assert_eq!(r["messageId"], "fake-id");
                }
            }
            None => assert_eq!(body, serde_json::json!({"status": "ok"}), "{name}"),
        }
    }
}

#[tokio::test]
async fn bodies_reach_the_transport_as_sent() {
    let h = handler(accepting());
    h.handle(event("apigw-http-json-array.json")).await;
    let bodies: Vec<String> = entries_of(h.forwarder().transport())
        .iter()
        .map(|e| e.body.clone())
        .collect();
    assert_eq!(
        bodies,
        vec![
            r#"{"event": "signup", "user": "u-1"}"#,
            r#"{"event": "login", "user": "u-2"}"#,
            r#"{"event": "logout", "user": "u-1", "tags": ["web", "eu"]}"#,
        ]
    );

    // Base64 from API Gateway is decoded; bytes that are not text go out
    // base64-encoded with the marker, as the shared policy says.
    let h = handler(accepting());
    h.handle(event("apigw-rest-base64-binary.json")).await;
    let entries = entries_of(h.forwarder().transport());
    assert!(entries[0].encoded);
    assert_eq!(entries[0].body, "iVBORw0KGgoAAAAN//4AQg==");
    // A base64 JSON body is decoded before it is read as JSON.
    let h = handler(accepting());
    h.handle(event("apigw-http-base64-json-array.json")).await;
    let entries = entries_of(h.forwarder().transport());
    assert_eq!(entries[1].body, r#"{"sku": "B-7", "qty": 1}"#);
    assert!(!entries[1].encoded);
}

#[tokio::test]
async fn alb_bodies_and_query_parameters_come_through_as_sent() {
    // An Application Load Balancer passes a text body as it is and a binary
    // one base64-encoded, and the query string undecoded (`web%20form`):
    // lambda_http decodes both.
    let h = handler_with(
        accepting(),
        EncodeRules::default(),
        &[("ATTRIBUTE_HEADERS", "x-tenant-id:tenant")],
    );
    let request = event("apigw-alb-single.json");
    let query = request.query_string_parameters();
    assert_eq!(query.first("source"), Some("web form"));
    let response = h.handle(request).await;
    assert_eq!(
        response.status(),
        StatusCode::ACCEPTED,
        "{}",
        json(&response)
    );
    let entries = entries_of(h.forwarder().transport());
    assert_eq!(
        entries[0].body,
        r#"{"orderId": "o-2001", "amount": 12.50, "currency": "EUR", "note": "grüße"}"#
    );
    assert!(!entries[0].encoded);
    assert_eq!(
        h.forwarder().transport().seen()[0].string("tenant"),
        Some("acme")
    );

    // Multi-value headers on: every query value decoded, in order; every
    // header value read (the repeated `X-Tenant-Id` joined).
    let h = handler_with(
        accepting(),
        EncodeRules::default(),
        &[("ATTRIBUTE_HEADERS", "x-tenant-id:tenant")],
    );
    let request = event("apigw-alb-multi-value.json");
    let query = request.query_string_parameters();
    assert_eq!(query.all("tag"), Some(vec!["a,b", "eu"]));
    assert_eq!(query.first("source"), Some("web form"));
    let response = h.handle(request).await;
    assert_eq!(
        response.status(),
        StatusCode::ACCEPTED,
        "{}",
        json(&response)
    );
    let entries = entries_of(h.forwarder().transport());
    let bodies: Vec<&str> = entries.iter().map(|e| e.body.as_str()).collect();
    assert_eq!(
        bodies,
        vec![
            r#"{"event": "signup", "user": "u-7"}"#,
            r#"{"event": "login", "user": "u-7"}"#
        ]
    );
    let seen = h.forwarder().transport().seen();
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter()
            .all(|s| s.string("tenant") == Some("acme, acme-eu"))
    );

    // A binary body: decoded, then sent base64-encoded with the marker.
    let h = handler(accepting());
    h.handle(event("apigw-alb-base64-binary.json")).await;
    let entries = entries_of(h.forwarder().transport());
    assert!(entries[0].encoded);
    assert_eq!(entries[0].body, "iVBORw0KGgoAAAAN//4AQg==");
}

#[tokio::test]
async fn allowed_headers_become_attributes_and_credentials_never_do() {
    let h = handler_with(
        accepting(),
        EncodeRules::default(),
        &[("ATTRIBUTE_HEADERS", "x-tenant-id:tenant,user-agent")],
    );
    let response = h.handle(event("apigw-rest-single.json")).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let entries = entries_of(h.forwarder().transport());
    let mut names: Vec<(String, String)> = entries[0]
        .attributes
        .iter()
        .map(|a| {
            let v = match &a.value {
                sqs_forwarder::AttributeValue::String(s) => s.clone(),
                other => panic!("a string attribute, not {other:?}"),
            };
            (a.name.to_string(), v)
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            ("tenant".to_owned(), "acme".to_owned()),
            ("user-agent".to_owned(), "orders-service/2.3".to_owned()),
        ]
    );
    assert_eq!(entries[0].delay_seconds, Some(0));
}

#[tokio::test]
async fn fifo_batches_get_a_group_and_one_deduplication_id_per_message() {
    let fifo = EncodeRules {
        fifo: true,
        content_based_deduplication: Some(false),
        ..EncodeRules::default()
    };
    let h = handler_with(accepting(), fifo.clone(), &[]);
    let response = h
        .handle(event_with("apigw-http-json-array.json", |v| {
            v["headers"]["x-message-group-id"] = "user-events".into();
        }))
        .await;
    assert_eq!(
        response.status(),
        StatusCode::ACCEPTED,
        "{}",
        json(&response)
    );
    let entries = entries_of(h.forwarder().transport());
    let ids: Vec<(Option<&str>, Option<&str>)> = entries
        .iter()
        .map(|e| (e.group_id.as_deref(), e.deduplication_id.as_deref()))
        .collect();
    let key = "5f0c2a4e-4f6b-4c7e-9d1e-2b7f1c9a8e01";
    assert_eq!(
        ids,
        vec![
            (Some("user-events"), Some(format!("{key}-0").as_str())),
            (Some("user-events"), Some(format!("{key}-1").as_str())),
            (Some("user-events"), Some(format!("{key}-2").as_str())),
        ]
    );

    // Without a group id the request is refused before anything is sent.
    let h = handler_with(accepting(), fifo, &[]);
    let response = h.handle(event("apigw-http-json-array.json")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json(&response)["error"]["code"], "MissingHeader");
    assert_eq!(h.forwarder().transport().call_count(), 0);
}

#[tokio::test]
async fn throttling_is_429_with_retry_after() {
    let throttled =
        || FakeSqs::new().fail_where(|_| true, Reply::THROTTLED.with_message("Rate exceeded"));
    let h = handler_with(
        throttled(),
        EncodeRules::default(),
        &[("RETRY_AFTER_SECONDS", "4")],
    );
    let response = h.handle(event("apigw-http-ndjson.json")).await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(response.headers()[header::RETRY_AFTER], "4");
    let body = json(&response);
    assert_eq!(body["error"]["code"], "Throttled");
    assert_eq!(body["failed"], 3);
    for r in body["results"].as_array().expect("results") {
        assert_eq!(r["status"], "failed");
        assert_eq!(r["error"]["code"], "RequestThrottled");
        assert_eq!(r["error"]["retryable"], true);
    }
    // The forwarder retried (two attempts each) before giving up.
    assert!(h.forwarder().transport().call_count() >= 2);
}

#[tokio::test]
async fn partial_failure_is_207_naming_the_failed_indexes() {
    let fake = FakeSqs::new().fail_where(
        |a| a.body().contains("login"),
        Reply::THROTTLED.with_message("Rate exceeded"),
    );
    let h = handler(fake);
    let response = h.handle(event("apigw-http-json-array.json")).await;
    assert_eq!(response.status(), StatusCode::MULTI_STATUS);
    let body = json(&response);
    assert_eq!(
        (body["sent"].as_u64(), body["failed"].as_u64()),
        (Some(2), Some(1))
    );
    assert!(body.get("error").is_none());
    let results = body["results"].as_array().expect("results");
    assert_eq!(results[0]["status"], "sent");
    assert_eq!(results[1]["status"], "failed");
    assert_eq!(results[1]["index"], 1);
    assert_eq!(results[1]["error"]["retryable"], true);
    assert_eq!(results[2]["status"], "sent");
}

#[tokio::test]
async fn a_queue_that_refuses_is_502_and_its_details_stay_in_the_logs() {
    let h = handler(failing(CallError::Failed(Failure::permanent(
        "AccessDenied",
        "User: arn:aws:sts::123456789012:assumed-role/fn is not authorized to perform: sqs:sendmessage",
    ))));
    let response = h.handle(event("apigw-rest-single.json")).await;
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    let body = json(&response);
    assert_eq!(body["error"]["code"], "QueueRefused");
    assert_eq!(body["results"][0]["error"]["code"], "AccessDenied");
    assert!(!body.to_string().contains("123456789012"), "{body}");
}

#[tokio::test]
async fn the_deadline_is_503_with_retry_after() {
    let h = handler(accepting());
    let mut context = Context::default();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    context.deadline = now_ms; // already over
    let response = h
        .handle(event("apigw-http-json-array.json").with_lambda_context(context))
        .await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()[header::RETRY_AFTER], "1");
    let body = json(&response);
    assert_eq!(body["error"]["code"], "DeadlineExceeded");
    assert_eq!(body["results"][2]["error"]["code"], "DeadlineExceeded");
    assert_eq!(h.forwarder().transport().call_count(), 0);
}

#[tokio::test]
async fn sizes_are_checked_before_anything_is_sent() {
    let h = handler_with(
        accepting(),
        EncodeRules::default(),
        &[("MAX_BODY_BYTES", "40")],
    );
    // Content-Length alone is enough to refuse.
    let response = h.handle(event("apigw-rest-single.json")).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(json(&response)["error"]["code"], "BodyTooLarge");
    // Without Content-Length, the body's own length counts.
    let response = h
        .handle(event_with("apigw-http-json-array.json", |v| {
            v["headers"]
                .as_object_mut()
                .expect("headers")
                .remove("content-length");
        }))
        .await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    // Too many messages.
    let h = handler_with(
        accepting(),
        EncodeRules::default(),
        &[("MAX_MESSAGES", "2")],
    );
    let response = h.handle(event("apigw-http-ndjson.json")).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(json(&response)["error"]["code"], "TooManyMessages");
    assert_eq!(h.forwarder().transport().call_count(), 0);
}

#[tokio::test]
async fn routes_health_404_and_405_never_touch_sqs() {
    let h = handler(accepting());
    let get = |path: &'static str, method: &'static str| {
        event_with("apigw-url-health.json", move |v| {
            v["rawPath"] = path.into();
            v["requestContext"]["http"]["path"] = path.into();
            v["requestContext"]["http"]["method"] = method.into();
        })
    };
    assert_eq!(
        h.handle(get("/health", "GET")).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        h.handle(get("/health/", "HEAD")).await.status(),
        StatusCode::OK
    );
    let r = h.handle(get("/nope", "GET")).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(json(&r)["error"]["code"], "NotFound");
    let r = h.handle(get("/messages", "GET")).await;
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.headers()[header::ALLOW], "POST");
    let r = h.handle(get("/health", "POST")).await;
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(h.forwarder().transport().call_count(), 0);
}
