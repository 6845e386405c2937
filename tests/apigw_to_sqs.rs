//! End-to-end: the apigw-to-sqs handler against the local SQS endpoint.
//! Requests are the sample events in `events/apigw-*.json`, read by
//! `lambda_http`'s own deserializer as in Lambda; messages are received back
//! from the queue and compared with what the client sent. Every error status
//! of the function is produced here through the same handler.

use std::collections::HashMap;

use apigw_to_sqs::lambda_http::http::{StatusCode, header};
use apigw_to_sqs::lambda_http::{Body, Context, Request, RequestExt, Response, request};
use apigw_to_sqs::{Handler, Settings};
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use forwarder_e2e::{attributes, client, connect, create_queue, drain};
use serde_json::Value;
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Config, Env, Forwarder, SqsTransport};

const MARKER: &str = "sqs-forwarder.encoding";

fn config(url: &str, vars: &[(&str, &str)]) -> Config {
    let mut map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    map.insert("QUEUE_URL".into(), url.into());
    Config::from_lookup(|k| map.get(k).cloned()).expect("valid shared configuration")
}

/// The function as `main` builds it, against the local queue at `url`.
async fn handler(
    url: &str,
    shared: &[(&str, &str)],
    own: &[(&str, &str)],
) -> Handler<SqsTransport> {
    let config = config(url, shared);
    let forwarder = connect(&config, sqs_forwarder::GroupIds::FromSource).await;
    let settings = Settings::from_env(&Env::from_pairs(own)).expect("valid settings");
    Handler::new(settings, forwarder, config.deadline_margin)
}

fn event_text(name: &str) -> String {
    let path = format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn event_json(name: &str) -> Value {
    serde_json::from_str(&event_text(name)).expect("sample event JSON")
}

fn event(name: &str) -> Request {
    request::from_str(&event_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn event_with(name: &str, change: impl FnOnce(&mut Value)) -> Request {
    let mut v = event_json(name);
    change(&mut v);
    request::from_str(&v.to_string()).expect("event")
}

fn json(response: &Response<Body>) -> Value {
    assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    match response.body() {
        Body::Text(t) => serde_json::from_str(t).expect("a JSON body"),
        other => panic!("a text body, not {other:?}"),
    }
}

/// The bytes the client sent in a sample event's body.
fn sent_bytes(event: &Value) -> Vec<u8> {
    let body = event["body"].as_str().expect("a body");
    if event["isBase64Encoded"].as_bool() == Some(true) {
        BASE64.decode(body).expect("base64 body")
    } else {
        body.as_bytes().to_vec()
    }
}

/// A received message's body as the consumer reads it: decoded when marked.
fn received_bytes(m: &aws_sdk_sqs::types::Message) -> Vec<u8> {
    let body = m.body().expect("a body");
    match attributes(m).get(MARKER) {
        Some((_, v)) if v == b"base64" => BASE64.decode(body).expect("marked base64"),
        _ => body.as_bytes().to_vec(),
    }
}

fn message_ids(body: &Value) -> Vec<String> {
    body["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            assert_eq!(r["status"], "sent", "{r}");
            r["messageId"].as_str().expect("message id").to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn sample_events_land_in_the_queue_as_sent() {
    let sqs = client();
    let url = create_queue(&sqs, "apigw-samples", &[]).await;
    let h = handler(
        &url,
        &[],
        &[("ATTRIBUTE_HEADERS", "x-tenant-id:tenant,traceparent")],
    )
    .await;

    // The bytes each message must arrive with, by SQS message id.
    let mut expected: HashMap<String, (String, Vec<u8>)> = HashMap::new();
    for name in [
        "apigw-rest-single.json",
        "apigw-rest-base64-binary.json",
        "apigw-url-single-text.json",
        "apigw-url-base64-binary.json",
    ] {
        let response = h.handle(event(name)).await;
        assert_eq!(
            response.status(),
            StatusCode::ACCEPTED,
            "{name}: {}",
            json(&response)
        );
        let ids = message_ids(&json(&response));
        assert_eq!(ids.len(), 1, "{name}");
        expected.insert(
            ids[0].clone(),
            (name.to_owned(), sent_bytes(&event_json(name))),
        );
    }
    for name in [
        "apigw-http-json-array.json",
        "apigw-http-base64-json-array.json",
    ] {
        let response = h.handle(event(name)).await;
        assert_eq!(
            response.status(),
            StatusCode::ACCEPTED,
            "{name}: {}",
            json(&response)
        );
        let ids = message_ids(&json(&response));
        let sent: Value = serde_json::from_slice(&sent_bytes(&event_json(name))).expect("array");
        let elements = sent.as_array().expect("an array");
        assert_eq!(ids.len(), elements.len(), "{name}");
        for (id, element) in ids.iter().zip(elements) {
            // The element's JSON (its text is kept as sent; compare values).
            expected.insert(
                id.clone(),
                (format!("{name} json"), element.to_string().into_bytes()),
            );
        }
    }
    let name = "apigw-http-ndjson.json";
    let response = h.handle(event(name)).await;
    assert_eq!(
        response.status(),
        StatusCode::ACCEPTED,
        "{name}: {}",
        json(&response)
    );
    let ids = message_ids(&json(&response));
    let sent = String::from_utf8(sent_bytes(&event_json(name))).expect("text");
    let lines: Vec<&str> = sent.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(ids.len(), lines.len());
    for (id, line) in ids.iter().zip(lines) {
        expected.insert(id.clone(), (name.to_owned(), line.as_bytes().to_vec()));
    }

    let received = drain(&sqs, &url, expected.len()).await;
    assert_eq!(
        received.len(),
        expected.len(),
        "every message arrived, once"
    );
    for m in &received {
        let id = m.message_id().expect("id");
        let (name, want) = expected
            .get(id)
            .unwrap_or_else(|| panic!("unexpected message {id}"));
        let got = received_bytes(m);
        if name.ends_with(" json") {
            let got: Value = serde_json::from_slice(&got).expect("an element's JSON");
            let want: Value = serde_json::from_slice(want).expect("json");
            assert_eq!(got, want, "{name}");
        } else {
            assert_eq!(&got, want, "{name}");
        }
        let attrs = attributes(m);
        match name.as_str() {
            "apigw-rest-single.json" | "apigw-rest-base64-binary.json" => {
                assert_eq!(
                    attrs["tenant"],
                    ("String".into(), b"acme".to_vec()),
                    "{name}"
                );
            }
            "apigw-http-json-array.json json" => assert_eq!(
                attrs["traceparent"].1,
                b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_vec()
            ),
            _ => {}
        }
        // Binary bodies are encoded and marked; text is not.
        let binary = name.contains("binary");
        assert_eq!(attrs.contains_key(MARKER), binary, "{name}");
        assert!(
            !attrs
                .keys()
                .any(|k| k.eq_ignore_ascii_case("authorization"))
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn fifo_groups_and_idempotency_keys_deduplicate_a_retried_request() {
    let sqs = client();
    let url = create_queue(&sqs, "apigw-fifo.fifo", &[]).await;
    let h = handler(&url, &[], &[]).await;
    let with_group = || {
        event_with("apigw-http-json-array.json", |v| {
            v["headers"]["x-message-group-id"] = "user-events".into();
        })
    };
    let first = h.handle(with_group()).await;
    assert_eq!(first.status(), StatusCode::ACCEPTED, "{}", json(&first));
    let body = json(&first);
    assert!(body["results"][0]["sequenceNumber"].is_string(), "{body}");
    // The client retries the whole request with the same key: SQS answers
    // for every message again, and keeps only the first copies.
    let again = h.handle(with_group()).await;
    assert_eq!(again.status(), StatusCode::ACCEPTED, "{}", json(&again));

    let received = drain(&sqs, &url, 6).await;
    assert_eq!(received.len(), 3, "the retried request was deduplicated");
    let key = "5f0c2a4e-4f6b-4c7e-9d1e-2b7f1c9a8e01";
    for (i, m) in received.iter().enumerate() {
        let sys = m.attributes().expect("system attributes");
        assert_eq!(
            sys[&MessageSystemAttributeName::MessageGroupId],
            "user-events"
        );
        assert_eq!(
            sys[&MessageSystemAttributeName::MessageDeduplicationId],
            format!("{key}-{i}"),
            "in order, one id per element"
        );
    }

    // A FIFO target needs a group id and refuses a delay, before sending.
    let r = h.handle(event("apigw-http-json-array.json")).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json(&r)["error"]["code"], "MissingHeader");
    let r = h
        .handle(event_with("apigw-http-json-array.json", |v| {
            v["headers"]["x-message-group-id"] = "g".into();
            v["headers"]["x-delay-seconds"] = "5".into();
        }))
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json(&r)["error"]["code"], "InvalidHeader");
    assert!(drain(&sqs, &url, 1).await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn throttled_messages_are_207_or_429_and_the_rest_arrive() {
    let sqs = client();
    let url = create_queue(&sqs, "apigw-throttle", &[]).await;
    let shared = [
        ("RETRY_MAX_ATTEMPTS", "2"),
        ("RETRY_BASE_DELAY_MS", "1"),
        ("RETRY_MAX_DELAY_MS", "5"),
    ];
    let config = config(&url, &shared);
    let real = connect(&config, sqs_forwarder::GroupIds::FromSource).await;
    let forwarder = Forwarder::new(
        // Throttles the entries whose body mentions "throttle"; sends the
        // rest through the real transport.
        FakeSqs::in_front_of(real.transport().clone()).fail_where(
            |a| a.body().contains("throttle"),
            Reply::THROTTLED.with_message("Rate exceeded"),
        ),
        real.settings().clone(),
        real.rules().clone(),
    );
    let settings =
        Settings::from_env(&Env::from_pairs(&[("RETRY_AFTER_SECONDS", "9")])).expect("settings");
    let h = Handler::new(settings, forwarder, config.deadline_margin);

    let ndjson = |body: &'static str| {
        event_with("apigw-http-ndjson.json", move |v| {
            v["body"] = body.into();
            v["headers"]
                .as_object_mut()
                .expect("headers")
                .remove("content-length");
        })
    };
    let r = h
        .handle(ndjson(
            "{\"n\":0}\n{\"n\":1,\"throttle\":true}\n{\"n\":2}\n",
        ))
        .await;
    assert_eq!(r.status(), StatusCode::MULTI_STATUS);
    let body = json(&r);
    assert_eq!(
        (body["sent"].as_u64(), body["failed"].as_u64()),
        (Some(2), Some(1))
    );
    let results = body["results"].as_array().expect("results");
    assert_eq!(results[1]["index"], 1);
    assert_eq!(results[1]["error"]["code"], "RequestThrottled");
    assert_eq!(results[1]["error"]["retryable"], true);
    let sent: Vec<&str> = [&results[0], &results[2]]
        .iter()
        .map(|r| r["messageId"].as_str().expect("id"))
        .collect();
    let received = drain(&sqs, &url, 2).await;
    let mut got: Vec<(&str, &str)> = received
        .iter()
        .map(|m| (m.message_id().expect("id"), m.body().expect("body")))
        .collect();
    got.sort();
    let mut want = vec![(sent[0], "{\"n\":0}"), (sent[1], "{\"n\":2}")];
    want.sort();
    assert_eq!(got, want);

    let r = h
        .handle(ndjson("{\"throttle\":1}\n{\"throttle\":2}\n"))
        .await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers()[header::RETRY_AFTER], "9");
    assert_eq!(json(&r)["error"]["code"], "Throttled");
    assert!(drain(&sqs, &url, 1).await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn every_refusal_is_json_and_sends_nothing() {
    let sqs = client();
    let url = create_queue(
        &sqs,
        "apigw-refusals",
        &[(QueueAttributeName::MaximumMessageSize, "1024")],
    )
    .await;
    let h = handler(
        &url,
        &[],
        &[("MAX_MESSAGES", "3"), ("ATTRIBUTE_HEADERS", "x-pad")],
    )
    .await;
    let small = handler(&url, &[], &[("MAX_BODY_BYTES", "64")]).await;

    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    let mut late = Context::default();
    late.deadline = now_ms + 100; // less than DEADLINE_MARGIN_MS (500) away

    let big = "x".repeat(2000);
    let border = format!("\"{}\"", "y".repeat(1000)); // fits alone; not with x-pad
    let cases: Vec<(&str, &Handler<SqsTransport>, Request, u16, &str)> = vec![
        (
            "bad JSON",
            &h,
            event("apigw-bad-json.json"),
            400,
            "InvalidJson",
        ),
        (
            "bad header",
            &h,
            event("apigw-bad-header.json"),
            400,
            "InvalidHeader",
        ),
        (
            "empty array",
            &h,
            event_with("apigw-http-json-array.json", |v| v["body"] = "[]".into()),
            400,
            "NoMessages",
        ),
        (
            "no body",
            &h,
            event("apigw-bad-empty-body.json"),
            411,
            "EmptyBody",
        ),
        (
            "body over MAX_BODY_BYTES",
            &small,
            event("apigw-rest-single.json"),
            413,
            "BodyTooLarge",
        ),
        (
            "more than MAX_MESSAGES",
            &h,
            event_with("apigw-http-ndjson.json", |v| {
                v["body"] = "1\n2\n3\n4\n".into()
            }),
            413,
            "TooManyMessages",
        ),
        (
            "a message over the queue's limit",
            &h,
            event_with("apigw-url-single-text.json", |v| {
                v["body"] = big.clone().into()
            }),
            413,
            "MessageTooLarge",
        ),
        (
            "over the limit only with its attributes",
            &h,
            event_with("apigw-http-json-array.json", |v| {
                v["body"] = border.clone().into();
                v["headers"]["x-pad"] = "z".repeat(100).into();
            }),
            413,
            "MessageTooLarge",
        ),
        (
            "unsupported type",
            &h,
            event("apigw-bad-content-type.json"),
            415,
            "UnsupportedMediaType",
        ),
        (
            "deadline",
            &h,
            event("apigw-http-json-array.json").with_lambda_context(late),
            503,
            "DeadlineExceeded",
        ),
        (
            "unknown path",
            &h,
            event_with("apigw-url-health.json", |v| v["rawPath"] = "/admin".into()),
            404,
            "NotFound",
        ),
        (
            "wrong method",
            &h,
            event_with("apigw-url-health.json", |v| {
                v["rawPath"] = "/messages".into()
            }),
            405,
            "MethodNotAllowed",
        ),
    ];
    for (what, handler, request, status, code) in cases {
        let r = handler.handle(request).await;
        let body = json(&r);
        assert_eq!(r.status().as_u16(), status, "{what}: {body}");
        assert_eq!(body["error"]["code"], code, "{what}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{what}: a human message"
        );
        let retry_after = r.headers().get(header::RETRY_AFTER).is_some();
        assert_eq!(
            retry_after,
            status == 503,
            "{what}: Retry-After only on 429/503"
        );
    }
    assert!(drain(&sqs, &url, 1).await.is_empty(), "nothing was sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_queue_that_is_gone_is_502_never_500() {
    let sqs = client();
    let url = create_queue(&sqs, "apigw-gone", &[]).await;
    let h = handler(&url, &[], &[]).await;
    sqs.delete_queue()
        .queue_url(&url)
        .send()
        .await
        .expect("delete");
    let r = h.handle(event("apigw-rest-single.json")).await;
    let body = json(&r);
    assert_eq!(r.status(), StatusCode::BAD_GATEWAY, "{body}");
    assert_eq!(body["error"]["code"], "QueueRefused");
    assert_eq!(body["results"][0]["error"]["retryable"], false);
    assert!(
        !body.to_string().contains(&url),
        "the queue URL stays in the logs: {body}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn health_answers_without_a_queue_call() {
    // The queue is deleted: any SQS call would fail, health does not.
    let sqs = client();
    let url = create_queue(&sqs, "apigw-health", &[]).await;
    let h = handler(&url, &[], &[]).await;
    sqs.delete_queue()
        .queue_url(&url)
        .send()
        .await
        .expect("delete");
    let r = h.handle(event("apigw-url-health.json")).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(json(&r), serde_json::json!({"status": "ok"}));
}
