//! End-to-end: the built function answering Application Load Balancer
//! events through a local Lambda runtime API, sending to the local SQS
//! endpoint (`SQS_TEST_ENDPOINT`). The sample events of a target group with
//! multi-value headers off (`headers`) and on (`multiValueHeaders`) land in
//! the queue the routing rules pick, with the bodies and attributes sent; a
//! repeated header reads as every value (the attribute, the rules' `header`
//! key), two different values of a single-valued one are a `400`; every
//! answer is in the load balancer's format (`statusDescription`, the
//! headers in `headers` and `multiValueHeaders`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::MessageSystemAttributeName;
use serde_json::{Value, json};
use sqs_forwarder::test_support::runtime_api::{
    FunctionProcess, RuntimeApi, local_env, local_queue,
};
use sqs_forwarder::test_support::sample_event;

const BINARY: &str = env!("CARGO_BIN_EXE_apigw-to-sqs");

fn client(endpoint: &str) -> aws_sdk_sqs::Client {
    let conf = aws_sdk_sqs::Config::builder()
        .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
        .region(aws_sdk_sqs::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .endpoint_url(endpoint)
        .build();
    aws_sdk_sqs::Client::from_conf(conf)
}

/// A received message: its body and its `String` attributes.
#[derive(Debug)]
struct Got {
    body: String,
    attributes: HashMap<String, String>,
}

/// Up to `count` messages from `url`, within `within` (deleted as they
/// come).
async fn receive(sqs: &aws_sdk_sqs::Client, url: &str, count: usize, within: u64) -> Vec<Got> {
    let mut got = Vec::new();
    let until = Instant::now() + Duration::from_secs(within);
    while got.len() < count && Instant::now() < until {
        let out = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .message_attribute_names("All")
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .expect("receive from the local queue");
        for m in out.messages() {
            let attributes = m
                .message_attributes()
                .map(|a| {
                    a.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.string_value()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default();
            got.push(Got {
                body: m.body().unwrap_or_default().to_owned(),
                attributes,
            });
            if let Some(handle) = m.receipt_handle() {
                let _ = sqs
                    .delete_message()
                    .queue_url(url)
                    .receipt_handle(handle)
                    .send()
                    .await;
            }
        }
    }
    got
}

fn code(answer: &Value) -> String {
    let body: Value = serde_json::from_str(answer["body"].as_str().expect("a body")).expect("json");
    body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// An answer in the load balancer's format, with this status.
fn assert_alb_answer(a: &Value, status: u16, description: &str) {
    assert_eq!(a["statusCode"], status, "{a}");
    assert_eq!(a["statusDescription"], description, "{a}");
    assert_eq!(a["isBase64Encoded"], false, "{a}");
    assert_eq!(a["headers"]["content-type"], "application/json", "{a}");
    assert_eq!(
        a["multiValueHeaders"]["content-type"],
        json!(["application/json"]),
        "{a}"
    );
    assert!(a.get("cookies").is_none(), "{a}");
}

#[tokio::test]
async fn alb_events_land_in_the_queue_with_every_header_value() {
    let (queue, endpoint) = local_queue("apigw-alb").await;
    let (eu, _) = local_queue("apigw-alb-eu").await;
    // Every value of X-Tenant-Id decides: "acme, acme-eu" goes to eu, the
    // last value alone ("acme-eu") or "acme" to the function's queue.
    let routes = json!({
        "targets": {"eu": eu},
        "routes": [{"when": {"key": "header", "name": "X-Tenant-Id", "equals": "acme, acme-eu"},
                    "target": "eu"}]
    })
    .to_string();
    let mut env = local_env(&queue, &endpoint);
    env.push(("ROUTES", &routes));
    env.push(("ATTRIBUTE_HEADERS", "x-tenant-id:tenant"));
    let api = RuntimeApi::start().await;
    let _function = FunctionProcess::spawn(BINARY, &api, &env);
    let sqs = client(&endpoint);

    // Multi-value headers on: both lines to eu, the attribute every value.
    let answer = api
        .invoke(&sample_event("apigw-alb-multi-value.json"))
        .await;
    let a = answer.response();
    assert_alb_answer(a, 202, "202 Accepted");
    let got = receive(&sqs, &eu, 2, 30).await;
    let mut bodies: Vec<&str> = got.iter().map(|g| g.body.as_str()).collect();
    bodies.sort();
    assert_eq!(
        bodies,
        vec![
            r#"{"event": "login", "user": "u-7"}"#,
            r#"{"event": "signup", "user": "u-7"}"#
        ]
    );
    for g in &got {
        assert_eq!(
            g.attributes.get("tenant").map(String::as_str),
            Some("acme, acme-eu")
        );
    }

    // Multi-value headers off: the one value, to the function's queue, the
    // body as sent (UTF-8 kept).
    let answer = api.invoke(&sample_event("apigw-alb-single.json")).await;
    assert_alb_answer(answer.response(), 202, "202 Accepted");
    // A binary body, base64 from the load balancer: its bytes, marked.
    let answer = api
        .invoke(&sample_event("apigw-alb-base64-binary.json"))
        .await;
    assert_alb_answer(answer.response(), 202, "202 Accepted");
    let got = receive(&sqs, &queue, 2, 30).await;
    assert_eq!(got.len(), 2, "{got:?}");
    let text = got
        .iter()
        .find(|g| g.attributes.contains_key("tenant"))
        .expect("the JSON message");
    assert_eq!(
        text.body,
        r#"{"orderId": "o-2001", "amount": 12.50, "currency": "EUR", "note": "grüße"}"#
    );
    assert_eq!(
        text.attributes.get("tenant").map(String::as_str),
        Some("acme")
    );
    let binary = got
        .iter()
        .find(|g| !g.attributes.contains_key("tenant"))
        .expect("the binary message");
    assert_eq!(binary.body, "iVBORw0KGgoAAAAN//4AQg==");
    assert_eq!(
        binary
            .attributes
            .get("sqs-forwarder.encoding")
            .map(String::as_str),
        Some("base64")
    );

    // The health check a target group sends.
    let answer = api.invoke(&sample_event("apigw-alb-health.json")).await;
    assert_alb_answer(answer.response(), 200, "200 OK");

    // Idempotency-Key twice with different values: neither wins.
    let mut event = sample_event("apigw-alb-multi-value.json");
    event["multiValueHeaders"]["idempotency-key"] = json!(["k-1", "k-2"]);
    let answer = api.invoke(&event).await;
    let a = answer.response();
    assert_alb_answer(a, 400, "400 Bad Request");
    assert_eq!(code(a), "InvalidHeader", "{a}");
    // Nothing more arrived anywhere.
    let sqs_after = receive(&sqs, &eu, 1, 3).await;
    assert!(sqs_after.is_empty(), "{sqs_after:?}");
    let sqs_after = receive(&sqs, &queue, 1, 3).await;
    assert!(sqs_after.is_empty(), "{sqs_after:?}");
}
