//! Bad input for apigw-to-sqs: events whose base64 body does not decode,
//! or whose path or query string cannot form a URI (both made `lambda_http`
//! panic) are answered 400 in the API's (or load balancer's) own format; a host or
//! `X-Forwarded-Proto` that cannot form one (a placeholder host) is left
//! out of the URI and the request served; an API Gateway or load balancer
//! event `lambda_http` cannot read (no `httpMethod`) is a 400, an
//! event that is no HTTP event fails the invocation; a Content-Length above
//! `MAX_BODY_BYTES` is refused from the header alone; every variable's bad
//! value names the variable, the value and what is allowed.

use std::convert::Infallible;
use std::future::poll_fn;
use std::time::Duration;

use apigw_to_sqs::event::{
    HttpEvent, NotAnHttpEvent, RefuseUndecodable, unbuildable_uri, undecodable_body,
};
use apigw_to_sqs::lambda_http::request::LambdaRequest;
use apigw_to_sqs::lambda_http::{Adapter, Context, LambdaEvent, Request, Service, service_fn};
use apigw_to_sqs::{Handler, Settings, VARIABLES};
use serde_json::{Value, json};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::test_support::FakeSqs;
use sqs_forwarder::test_support::{
    BadValue, assert_bad_values_are_named, assert_every_variable_has_a_case,
};
use sqs_forwarder::{Env, Forwarder, SendSettings};

fn handler(vars: &[(&str, &str)]) -> Handler<FakeSqs> {
    let settings = Settings::from_env(&Env::from_pairs(vars)).expect("settings");
    let forwarder = Forwarder::new(
        FakeSqs::new(),
        SendSettings::default(),
        EncodeRules::default(),
    );
    Handler::new(settings, forwarder, Duration::ZERO)
}

fn sent(h: &Handler<FakeSqs>) -> usize {
    h.forwarder().transport().sent()
}

fn sample(name: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("sample")).expect("json")
}

/// The function's answer to a raw event, through the same services as
/// `main.rs`: the event's JSON text read as the runtime reads it (an
/// [`HttpEvent`]), the guard, then `lambda_http`'s adapter, then the
/// handler. The answer as Lambda would return it to API Gateway, or the
/// invocation's error.
async fn invoke(h: &Handler<FakeSqs>, event: &Value) -> Result<Value, NotAnHttpEvent> {
    let payload: HttpEvent = serde_json::from_str(&event.to_string()).expect("any JSON is read");
    let inner =
        service_fn(
            move |request: Request| async move { Ok::<_, Infallible>(h.handle(request).await) },
        );
    let mut service = RefuseUndecodable::new(Adapter::from(inner));
    poll_fn(|cx| service.poll_ready(cx)).await.expect("ready");
    let response = service
        .call(LambdaEvent::new(payload, Context::default()))
        .await?;
    Ok(serde_json::to_value(&response).expect("serializable"))
}

/// [`invoke`]'s answer, which every HTTP event gets.
async fn answer(h: &Handler<FakeSqs>, event: &Value) -> Value {
    invoke(h, event).await.expect("an answer")
}

fn error_code(answer: &Value) -> String {
    let body: Value = serde_json::from_str(answer["body"].as_str().expect("a body")).expect("json");
    body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_body_that_is_not_base64_is_a_400_not_a_panic() {
    for name in [
        "apigw-url-base64-binary.json",      // function URL, payload 2.0
        "apigw-rest-base64-binary.json",     // REST API, payload 1.0
        "apigw-http-base64-json-array.json", // HTTP API, payload 2.0
        "apigw-alb-base64-binary.json",      // Application Load Balancer
    ] {
        let h = handler(&[]);
        let good = sample(name);
        let a = answer(&h, &good).await;
        assert_eq!(a["statusCode"], 202, "{name}: {a}");
        assert!(sent(&h) > 0, "{name}");

        let h = handler(&[]);
        for bad in ["not base64!", "QUJD=", "A", "QUJDRA==x", "\u{e9}t\u{e9}"] {
            let mut event = good.clone();
            event["body"] = json!(bad);
            let payload: LambdaRequest =
                serde_json::from_value(event.clone()).expect("an HTTP event");
            let r = undecodable_body(&payload).expect("refused");
            assert!(r.message.contains("not valid base64"), "{}", r.message);
            let a = answer(&h, &event).await;
            assert_eq!(a["statusCode"], 400, "{name} {bad:?}: {a}");
            assert_eq!(a["isBase64Encoded"], false);
            assert_eq!(a["headers"]["content-type"], "application/json");
            assert_eq!(error_code(&a), "InvalidBody", "{a}");
            if name.contains("alb") {
                assert_eq!(a["statusDescription"], "400 Bad Request", "{a}");
            }
            // The answer never echoes the body.
            assert!(!a["body"].as_str().unwrap_or_default().contains(bad));
        }
        assert_eq!(sent(&h), 0, "{name}: nothing refused is sent");
    }
    // Not base64-encoded: the same text is an ordinary body.
    let h = handler(&[]);
    let mut event = sample("apigw-url-single-text.json");
    event["isBase64Encoded"] = json!(false);
    event["body"] = json!("not base64!");
    let payload: LambdaRequest = serde_json::from_value(event.clone()).expect("event");
    assert!(undecodable_body(&payload).is_none());
    assert_eq!(answer(&h, &event).await["statusCode"], 202);
    assert_eq!(sent(&h), 1);
}

/// Whether `lambda_http` panics turning this event into a request (what
/// aborts the process under the release profile).
fn lambda_http_panics(event: &Value) -> bool {
    let payload: LambdaRequest = serde_json::from_value(event.clone()).expect("an HTTP event");
    std::panic::catch_unwind(move || {
        let _request: Request = payload.into();
    })
    .is_err()
}

#[tokio::test]
async fn a_request_whose_uri_cannot_be_formed_is_a_400_not_a_panic() {
    let long_query = format!("q={}", "a".repeat(70_000));
    // (sample, field to set, value): each makes lambda_http's URI building
    // panic.
    let cases: Vec<(&str, &str, Value)> = vec![
        // HTTP API (payload 2.0): the raw query string goes into the URI as is.
        (
            "apigw-http-json-array.json",
            "rawQueryString",
            json!("a=b c"),
        ),
        (
            "apigw-http-json-array.json",
            "rawQueryString",
            json!("a=\"quoted\"&b={x}"),
        ),
        (
            "apigw-http-json-array.json",
            "rawQueryString",
            json!(long_query),
        ),
        // A path over 64 KiB (with the host left out, still too long).
        (
            "apigw-rest-single.json",
            "path",
            json!(format!("/{}", "a".repeat(70_000))),
        ),
        // The same from a load balancer, and a query string over 64 KiB.
        (
            "apigw-alb-single.json",
            "path",
            json!(format!("/{}", "a".repeat(70_000))),
        ),
        (
            "apigw-alb-single.json",
            "queryStringParameters",
            json!({"q": "a".repeat(70_000)}),
        ),
    ];
    for (name, field, value) in cases {
        let h = handler(&[]);
        let event = with(sample(name), field, &value);
        let payload: LambdaRequest = serde_json::from_value(event.clone()).expect("an HTTP event");
        assert!(
            lambda_http_panics(&event),
            "{name} {field}={value}: lambda_http builds this one; not a case"
        );
        let r = unbuildable_uri(&payload).expect("refused");
        assert_eq!(r.code, "InvalidRequest");
        let a = answer(&h, &event).await;
        assert_eq!(a["statusCode"], 400, "{name} {field}: {a}");
        assert_eq!(a["headers"]["content-type"], "application/json");
        assert_eq!(error_code(&a), "InvalidRequest", "{a}");
        if name.contains("alb") {
            assert_eq!(a["statusDescription"], "400 Bad Request", "{a}");
        }
        assert_eq!(sent(&h), 0, "{name} {field}: nothing refused is sent");
    }
    // The samples as they are form their URIs: no refusal.
    // (Placeholder hosts and schemes: `a_host_that_cannot_form_a_uri_is_left_out`.)
    for name in [
        "apigw-http-json-array.json",
        "apigw-url-single-text.json",
        "apigw-rest-base64-binary.json",
        "apigw-alb-single.json",
        "apigw-alb-multi-value.json",
    ] {
        let payload: LambdaRequest = serde_json::from_value(sample(name)).expect("an HTTP event");
        assert!(unbuildable_uri(&payload).is_none(), "{name}");
        assert!(!lambda_http_panics(&sample(name)), "{name}");
    }
}

/// `event` with `field` (`name` or `outer.inner`) set to `value`; a header
/// also in the multi-value headers of a REST API event.
fn with(mut event: Value, field: &str, value: &Value) -> Value {
    match field.split_once('.') {
        Some((outer, inner)) => {
            event[outer][inner] = value.clone();
            if outer == "headers" && event.get("multiValueHeaders").is_some() {
                event["multiValueHeaders"][inner] = json!([value.clone()]);
            }
        }
        None => event[field] = value.clone(),
    }
    event
}

#[tokio::test]
async fn a_host_that_cannot_form_a_uri_is_left_out() {
    // (sample, field to set, value): each made lambda_http's URI building
    // panic, and each was a 400 InvalidRequest; forwarding needs no host.
    let placeholder = json!("1234567890.execute-api.{dns_suffix}");
    let cases: Vec<(&str, &str, Value)> = vec![
        // What `sam local generate-event` and console test events carry.
        (
            "apigw-rest-single.json",
            "headers.Host",
            placeholder.clone(),
        ),
        (
            "apigw-http-json-array.json",
            "headers.host",
            placeholder.clone(),
        ),
        (
            "apigw-url-single-text.json",
            "headers.host",
            placeholder.clone(),
        ),
        (
            "apigw-http-json-array.json",
            "headers.host",
            json!("bad host"),
        ),
        (
            "apigw-http-json-array.json",
            "headers.host",
            json!("h:99999999"),
        ),
        (
            "apigw-http-json-array.json",
            "headers.x-forwarded-proto",
            json!("not a scheme"),
        ),
        (
            "apigw-url-single-text.json",
            "headers.x-forwarded-proto",
            json!(""),
        ),
        (
            "apigw-rest-base64-binary.json",
            "headers.host",
            json!("a b"),
        ),
        (
            "apigw-rest-base64-binary.json",
            "headers.x-forwarded-proto",
            json!("1http"),
        ),
        // A load balancer without multi-value headers.
        ("apigw-alb-single.json", "headers.host", json!("bad host")),
        (
            "apigw-alb-single.json",
            "headers.x-forwarded-proto",
            json!("not a scheme"),
        ),
    ];
    for (name, field, value) in cases {
        let h = handler(&[]);
        let mut event = with(sample(name), field, &value);
        if field.ends_with("ost") {
            // The domain name the same placeholder, as in those events.
            event["requestContext"]["domainName"] = value.clone();
        }
        assert!(
            lambda_http_panics(&event),
            "{name} {field}={value}: lambda_http builds this one; not a case"
        );
        let good = answer(&handler(&[]), &sample(name)).await;
        let a = answer(&h, &event).await;
        assert_eq!(
            a["statusCode"], good["statusCode"],
            "{name} {field}={value}: {a}"
        );
        assert_eq!(a["statusCode"], 202, "{name} {field}={value}: {a}");
        assert!(sent(&h) > 0, "{name} {field}");
    }
    // A load balancer with multi-value headers: its host forms the URI once
    // they are read (lambda_http alone would not use it); left out as well.
    let h = handler(&[]);
    let mut event = sample("apigw-alb-multi-value.json");
    event["multiValueHeaders"]["host"] = json!(["bad host"]);
    let a = answer(&h, &event).await;
    assert_eq!(a["statusCode"], 202, "{a}");
    assert_eq!(sent(&h), 2);
    // A REST API event keeps its Host header (its multi-value headers
    // become the request's): an attribute of it still arrives.
    let h = handler(&[("ATTRIBUTE_HEADERS", "host")]);
    let event = with(
        sample("apigw-rest-single.json"),
        "headers.Host",
        &placeholder,
    );
    assert_eq!(answer(&h, &event).await["statusCode"], 202);
    let seen = h.forwarder().transport().seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].string("host"),
        Some("1234567890.execute-api.{dns_suffix}")
    );
}

#[tokio::test]
async fn an_api_gateway_event_lambda_http_cannot_read_is_a_400() {
    // No requestContext.httpMethod (REST API), no requestContext.http
    // (HTTP API): lambda_http reads neither; the runtime's error became a
    // 502 at API Gateway.
    let mut rest = sample("apigw-rest-single.json");
    rest["requestContext"]
        .as_object_mut()
        .expect("context")
        .remove("httpMethod");
    let mut http = sample("apigw-http-json-array.json");
    http["requestContext"]
        .as_object_mut()
        .expect("context")
        .remove("http");
    let mut alb = sample("apigw-alb-single.json");
    alb.as_object_mut().expect("event").remove("httpMethod");
    for (event, field, v2) in [
        (rest, "httpMethod", false),
        (http, "http", true),
        (alb.clone(), "httpMethod", false),
    ] {
        assert!(serde_json::from_value::<LambdaRequest>(event.clone()).is_err());
        let h = handler(&[]);
        let a = answer(&h, &event).await;
        assert_eq!(a["statusCode"], 400, "{a}");
        assert_eq!(a["headers"]["content-type"], "application/json");
        assert_eq!(error_code(&a), "InvalidEvent", "{a}");
        let message = a["body"].as_str().unwrap_or_default();
        assert!(message.contains(field), "{message}");
        assert_eq!(a.get("multiValueHeaders").is_none(), v2, "{a}");
        assert_eq!(sent(&h), 0);
    }
    // A load balancer's event is answered in its format.
    let a = answer(&handler(&[]), &alb).await;
    assert_eq!(a["statusDescription"], "400 Bad Request", "{a}");
    // Not an HTTP event at all: the invocation fails.
    for bad in [
        json!({"Records": [{"eventSource": "aws:s3"}]}),
        json!([1]),
        json!({"requestContext": "x"}),
    ] {
        assert_eq!(
            invoke(&handler(&[]), &bad).await,
            Err(NotAnHttpEvent),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn a_content_length_above_the_limit_is_refused_from_the_header_alone() {
    let h = handler(&[("MAX_BODY_BYTES", "1024")]);
    let mut event = sample("apigw-url-single-text.json");
    event["headers"]["content-length"] = json!("1025");
    let a = answer(&h, &event).await;
    assert_eq!(a["statusCode"], 413, "{a}");
    assert_eq!(error_code(&a), "BodyTooLarge");
    let body: Value = serde_json::from_str(a["body"].as_str().expect("body")).expect("json");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("1025") && m.contains("MAX_BODY_BYTES")),
        "{body}"
    );
    // A huge declared length is not read or trusted either.
    event["headers"]["content-length"] = json!("18446744073709551615");
    assert_eq!(answer(&h, &event).await["statusCode"], 413);
    event["headers"]["content-length"] = json!("-1");
    assert_eq!(answer(&h, &event).await["statusCode"], 400);
    event["headers"]["content-length"] = json!("12abc");
    assert_eq!(answer(&h, &event).await["statusCode"], 400);
    assert_eq!(sent(&h), 0);
}

#[tokio::test]
async fn events_of_the_wrong_shape_are_not_http_events() {
    for bad in [
        json!({}),
        json!([1, 2]),
        json!("POST /messages"),
        json!({"version": "2.0", "requestContext": "x"}),
        json!({"Records": [{"eventSource": "aws:s3"}]}),
    ] {
        let e =
            serde_json::from_value::<LambdaRequest>(bad.clone()).expect_err("not an HTTP event");
        assert!(
            e.to_string().contains("API Gateway"),
            "{bad}: {e} should say which events are expected"
        );
    }
}

/// (variable, bad value, a word the `allowed` text must contain)
const BAD: &[(&str, &str, &str)] = &[
    ("MESSAGES_PATH", "messages", "path"),
    ("HEALTH_PATH", "/health?x", "path"),
    ("MAX_BODY_BYTES", "6291457", "6291456"),
    ("MAX_MESSAGES", "0", "100000"),
    ("CONTENT_TYPES", "json", "media type"),
    ("ATTRIBUTE_HEADERS", "Authorization", "credentials"),
    ("RETRY_AFTER_SECONDS", "3601", "3600"),
];

/// The table as the shared checks take it.
fn cases() -> Vec<BadValue<'static>> {
    BAD.iter()
        .map(|&(variable, value, allowed)| BadValue::new(variable, value, allowed))
        .collect()
}

#[test]
fn every_variable_has_a_bad_value_case() {
    assert_every_variable_has_a_case(VARIABLES, &cases());
}

#[test]
fn bad_values_name_the_variable_the_value_and_what_is_allowed() {
    assert_bad_values_are_named(&cases(), Settings::from_env);
}

#[test]
fn without_the_guard_lambda_http_panics_on_such_a_body() {
    // Why `RefuseUndecodable` exists: `lambda_http` decodes with `expect`.
    // If a new version stops panicking, this fails, and the guard can go.
    let mut event = sample("apigw-url-base64-binary.json");
    event["body"] = json!("not base64!");
    let payload: LambdaRequest = serde_json::from_value(event).expect("event");
    let converted = std::panic::catch_unwind(move || {
        let _request: Request = payload.into();
    });
    assert!(converted.is_err(), "lambda_http no longer panics");
}
