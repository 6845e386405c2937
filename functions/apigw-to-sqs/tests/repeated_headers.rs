//! A header sent more than once, as each payload format carries it, through
//! the function's own event path (`RefuseUndecodable` around `lambda_http`'s
//! adapter): a REST API event's `multiValueHeaders` (every value) win over
//! its `headers` (API Gateway's last value) for the attributes, the routing
//! rules' `header` key and the group, deduplication and delay headers; an
//! HTTP API event's header, which API Gateway joined with commas, is read
//! as that one value; an Application Load Balancer event with multi-value
//! headers on reads every value exactly as a REST API event does, and is
//! answered in the load balancer's format; with them off, its one value
//! (the load balancer keeps the last) is read as it is.

use std::convert::Infallible;
use std::future::poll_fn;
use std::time::Duration;

use apigw_to_sqs::event::{HttpEvent, RefuseUndecodable};
use apigw_to_sqs::lambda_http::{Adapter, Context, LambdaEvent, Request, Service, service_fn};
use apigw_to_sqs::routing::SOURCE_KEYS;
use apigw_to_sqs::{Handler, Settings};
use serde_json::{Value, json};
use sqs_forwarder::message::encode::{EncodeRules, Entry};
use sqs_forwarder::route::{Router, Routes};
use sqs_forwarder::test_support::FakeSqs;
use sqs_forwarder::{AttributeValue, Env, Forwarder, SendSettings};

const EU: &str = "https://sqs.eu-west-1.amazonaws.com/123456789012/eu.fifo";

/// The handler: `x-tenant` copied into the attribute `tenant`, a tenant
/// starting `t-x` routed to `eu` (a FIFO queue without content-based
/// deduplication), anything else to the default (standard) queue.
fn handler() -> (Handler<FakeSqs>, FakeSqs, FakeSqs) {
    let rules = json!({
        "targets": {"eu": EU},
        "routes": [{"when": {"key": "header", "name": "X-Tenant", "prefix": "t-x"}, "target": "eu"}]
    });
    let routes = Routes::parse(&rules.to_string(), SOURCE_KEYS).expect("valid rules");
    let (default, eu) = (FakeSqs::new(), FakeSqs::new());
    let fifo = EncodeRules {
        fifo: true,
        content_based_deduplication: Some(false),
        ..EncodeRules::default()
    };
    let router = Router::new(
        routes,
        Forwarder::new(
            default.clone(),
            SendSettings::default(),
            EncodeRules::default(),
        ),
        vec![Forwarder::new(eu.clone(), SendSettings::default(), fifo)],
    )
    .expect("a forwarder per target");
    let env = Env::from_pairs(&[("ATTRIBUTE_HEADERS", "x-tenant:tenant")]);
    let settings = Settings::from_env(&env).expect("valid settings");
    (
        Handler::routed(settings, router, Duration::ZERO),
        default,
        eu,
    )
}

/// The answer to `event` as Lambda would get it from the function.
async fn answer(h: &Handler<FakeSqs>, event: &Value) -> Value {
    let payload: HttpEvent = serde_json::from_str(&event.to_string()).expect("any JSON is read");
    let inner =
        service_fn(
            move |request: Request| async move { Ok::<_, Infallible>(h.handle(request).await) },
        );
    let mut service = RefuseUndecodable::new(Adapter::from(inner));
    poll_fn(|cx| service.poll_ready(cx)).await.expect("ready");
    let response = service
        .call(LambdaEvent::new(payload, Context::default()))
        .await
        .expect("an HTTP answer");
    serde_json::to_value(&response).expect("serializable")
}

fn sample(name: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("sample")).expect("json")
}

/// A REST API event (payload 1.0) as API Gateway sends one whose headers
/// came more than once: `multiValueHeaders` with every value, `headers`
/// with the last.
fn rest(headers: &[(&str, &[&str])]) -> Value {
    let mut event = sample("apigw-rest-single.json");
    // No delay: a FIFO target takes none.
    for map in ["headers", "multiValueHeaders"] {
        event[map]
            .as_object_mut()
            .expect("headers")
            .remove("X-Delay-Seconds");
    }
    for (name, values) in headers {
        event["multiValueHeaders"][*name] = json!(values);
        event["headers"][*name] = json!(values.last().expect("a value"));
    }
    event
}

/// An HTTP API event (payload 2.0): one `headers` map, a repeated header's
/// values already joined with commas by API Gateway.
fn http(headers: &[(&str, &str)]) -> Value {
    let mut event = sample("apigw-http-json-array.json");
    let h = event["headers"].as_object_mut().expect("headers");
    h.remove("content-length");
    h.remove("idempotency-key");
    for (name, value) in headers {
        h.insert((*name).to_owned(), json!(value));
    }
    event
}

/// An Application Load Balancer event from a target group with multi-value
/// headers on: `multiValueHeaders` (and `multiValueQueryStringParameters`)
/// only, every value of a repeated header in order.
fn alb(headers: &[(&str, &[&str])]) -> Value {
    let mut event = sample("apigw-alb-multi-value.json");
    let h = event["multiValueHeaders"]
        .as_object_mut()
        .expect("multi-value headers");
    h.remove("content-length");
    h.remove("idempotency-key");
    for (name, values) in headers {
        h.insert((*name).to_owned(), json!(values));
    }
    event
}

/// The same with multi-value headers off: `headers` only, one value each.
fn alb_single(headers: &[(&str, &str)]) -> Value {
    let mut event = sample("apigw-alb-single.json");
    let h = event["headers"].as_object_mut().expect("headers");
    h.remove("content-length");
    for (name, value) in headers {
        h.insert((*name).to_owned(), json!(value));
    }
    event
}

fn status(answer: &Value) -> u64 {
    answer["statusCode"].as_u64().expect("a status")
}

fn error_code(answer: &Value) -> String {
    let body: Value = serde_json::from_str(answer["body"].as_str().expect("a body")).expect("json");
    body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn entries(fake: &FakeSqs) -> Vec<std::sync::Arc<Entry>> {
    fake.seen().into_iter().map(|s| s.entry).collect()
}

fn tenant(entry: &Entry) -> Option<String> {
    entry
        .attributes
        .iter()
        .find(|a| a.name == "tenant")
        .map(|a| match &a.value {
            AttributeValue::String(s) => s.clone(),
            other => panic!("a String attribute, not {other:?}"),
        })
}

#[tokio::test]
async fn a_rest_api_header_sent_twice_reads_as_every_value() {
    let (h, default, eu) = handler();
    let event = rest(&[
        ("X-Tenant", &["t-x", "t-y"]),
        ("X-Message-Group-Id", &["g-1", "g-1"]),
        ("Idempotency-Key", &["k-1"]),
    ]);
    let a = answer(&h, &event).await;
    assert_eq!(status(&a), 202, "{a}");
    // Routed on "t-x, t-y" (the last value alone, t-y, would have gone to
    // the default queue), with every value in the attribute.
    assert!(default.seen().is_empty(), "{:?}", default.seen());
    let sent = entries(&eu);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(tenant(&sent[0]).as_deref(), Some("t-x, t-y"));
    // A single-valued header given twice with the same value is that value.
    assert_eq!(sent[0].group_id.as_deref(), Some("g-1"));
    assert_eq!(sent[0].deduplication_id.as_deref(), Some("k-1"));
}

#[tokio::test]
async fn a_single_valued_header_given_twice_with_different_values_is_a_400() {
    // Neither value wins: API Gateway's `headers` would have said the
    // last, silently.
    for (name, values) in [
        ("Idempotency-Key", &["k-1", "k-2"][..]),
        ("X-Message-Deduplication-Id", &["d-1", "d-2"][..]),
        ("X-Message-Group-Id", &["g-1", "g-2"][..]),
        ("X-Delay-Seconds", &["5", "7"][..]),
    ] {
        let (h, default, eu) = handler();
        let a = answer(&h, &rest(&[(name, values)])).await;
        assert_eq!(status(&a), 400, "{name}: {a}");
        assert_eq!(error_code(&a), "InvalidHeader", "{name}: {a}");
        let body = a["body"].as_str().unwrap_or_default().to_owned();
        assert!(
            body.contains(&name.to_ascii_lowercase()) && body.contains("more than once"),
            "{name}: {body}"
        );
        assert!(default.seen().is_empty() && eu.seen().is_empty(), "{name}");
    }
}

#[tokio::test]
async fn headers_only_in_headers_or_once_in_both_read_as_before() {
    // The sample as API Gateway sends it (every header in both maps, once).
    let (h, default, _eu) = handler();
    let mut event = sample("apigw-rest-single.json");
    event["headers"]["X-Tenant"] = json!("t-z");
    let a = answer(&h, &event).await;
    assert_eq!(status(&a), 202, "{a}");
    let sent = entries(&default);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(tenant(&sent[0]).as_deref(), Some("t-z"));
    assert_eq!(sent[0].delay_seconds, Some(0));
}

#[tokio::test]
async fn an_http_api_header_joined_by_api_gateway_is_one_value() {
    let (h, default, eu) = handler();
    let event = http(&[
        ("x-tenant", "t-x,t-y"),
        ("x-message-group-id", "g-1"),
        ("idempotency-key", "k-1"),
    ]);
    let a = answer(&h, &event).await;
    assert_eq!(status(&a), 202, "{a}");
    assert!(default.seen().is_empty(), "{:?}", default.seen());
    let sent = entries(&eu);
    assert!(!sent.is_empty());
    for entry in &sent {
        assert_eq!(tenant(entry).as_deref(), Some("t-x,t-y"));
        assert_eq!(entry.group_id.as_deref(), Some("g-1"));
    }
    // An HTTP API joins a repeated Idempotency-Key too: the joined text is
    // the key (SQS takes a comma in an id).
    let (h, _default, eu) = handler();
    let event = http(&[
        ("x-tenant", "t-x"),
        ("x-message-group-id", "g-1"),
        ("idempotency-key", "k-1,k-2"),
    ]);
    let a = answer(&h, &event).await;
    assert_eq!(status(&a), 202, "{a}");
    let ids: Vec<_> = entries(&eu)
        .iter()
        .map(|e| e.deduplication_id.clone().unwrap_or_default())
        .collect();
    assert!(ids.iter().all(|id| id.starts_with("k-1,k-2")), "{ids:?}");
}

#[tokio::test]
async fn an_alb_multi_value_header_sent_twice_reads_as_every_value() {
    let (h, default, eu) = handler();
    let event = alb(&[
        ("x-tenant", &["t-x", "t-y"]),
        ("x-message-group-id", &["g-1", "g-1"]),
        ("idempotency-key", &["k-1"]),
    ]);
    assert!(event.get("headers").is_none(), "multi-value headers only");
    let a = answer(&h, &event).await;
    assert_eq!(status(&a), 202, "{a}");
    // The load balancer's answer format: a status description, and the
    // headers in both fields (the one the target group reads is used).
    assert_eq!(a["statusDescription"], "202 Accepted", "{a}");
    assert_eq!(
        a["multiValueHeaders"]["content-type"],
        json!(["application/json"])
    );
    assert_eq!(a["headers"]["content-type"], "application/json");
    assert_eq!(a["isBase64Encoded"], false);
    assert!(a.get("cookies").is_none(), "{a}");
    // Routed on "t-x, t-y" (the last value alone would have gone to the
    // default queue), every value in the attribute, the group id once.
    assert!(default.seen().is_empty(), "{:?}", default.seen());
    let sent = entries(&eu);
    assert_eq!(sent.len(), 2, "the sample's two NDJSON lines: {sent:?}");
    for (i, entry) in sent.iter().enumerate() {
        assert_eq!(tenant(entry).as_deref(), Some("t-x, t-y"));
        assert_eq!(entry.group_id.as_deref(), Some("g-1"));
        assert_eq!(
            entry.deduplication_id.as_deref(),
            Some(format!("k-1-{i}").as_str())
        );
    }
}

#[tokio::test]
async fn an_alb_single_valued_header_given_twice_with_different_values_is_a_400() {
    for (name, values) in [
        ("idempotency-key", &["k-1", "k-2"][..]),
        ("x-message-deduplication-id", &["d-1", "d-2"][..]),
        ("x-message-group-id", &["g-1", "g-2"][..]),
        ("x-delay-seconds", &["5", "7"][..]),
    ] {
        let (h, default, eu) = handler();
        let a = answer(&h, &alb(&[(name, values)])).await;
        assert_eq!(status(&a), 400, "{name}: {a}");
        assert_eq!(a["statusDescription"], "400 Bad Request", "{name}: {a}");
        assert_eq!(error_code(&a), "InvalidHeader", "{name}: {a}");
        let body = a["body"].as_str().unwrap_or_default().to_owned();
        assert!(
            body.contains(name) && body.contains("more than once"),
            "{name}: {body}"
        );
        assert!(default.seen().is_empty() && eu.seen().is_empty(), "{name}");
    }
}

#[tokio::test]
async fn an_alb_event_without_multi_value_headers_reads_its_one_value() {
    // Multi-value headers off: the load balancer sent the last value of a
    // repeated header in `headers`; that is all there is to read.
    let (h, default, eu) = handler();
    let a = answer(&h, &alb_single(&[("x-tenant", "t-y")])).await;
    assert_eq!(status(&a), 202, "{a}");
    assert_eq!(a["statusDescription"], "202 Accepted", "{a}");
    assert!(eu.seen().is_empty(), "{:?}", eu.seen());
    let sent = entries(&default);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(tenant(&sent[0]).as_deref(), Some("t-y"));
    // Both fields at once (no load balancer sends that): the multi-value
    // one wins, as for a REST API event.
    let (h, _default, eu) = handler();
    let mut event = alb(&[
        ("x-tenant", &["t-x", "t-y"]),
        ("x-message-group-id", &["g-1"]),
        ("idempotency-key", &["k-1"]),
    ]);
    event["headers"] = json!({"x-tenant": "t-y"});
    let a = answer(&h, &event).await;
    assert_eq!(status(&a), 202, "{a}");
    let sent = entries(&eu);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(tenant(&sent[0]).as_deref(), Some("t-x, t-y"));
}
