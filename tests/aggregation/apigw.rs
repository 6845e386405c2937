//! apigw-to-sqs with aggregation: a JSON batch of many items goes in few
//! messages; each item's result names the SQS message that carries it, a
//! refused aggregate fails exactly its items (on FIFO with the rest of the
//! group after them), and a retried request (same idempotency key) sends
//! what was missing, the rest deduplicated by SQS.

use std::collections::BTreeMap;

use apigw_to_sqs::lambda_http::http::StatusCode;
use apigw_to_sqs::lambda_http::{Body, Request, request};
use apigw_to_sqs::{Handler, Settings};
use aws_sdk_sqs::types::QueueAttributeName;
use forwarder_e2e::aggregation::{
    assert_aggregated, assert_python_agrees, config, copies, fifo_groups, read_all,
};
use forwarder_e2e::{client, connect, create_queue, drain};
use serde_json::Value;
use sqs_forwarder::{Env, Forwarder, GroupIds, Transport};

const N: usize = 2_000;

fn item(i: usize) -> String {
    format!("{{\"item\":{i},\"pad\":\"{:040}\"}}", i)
}

/// The aggregate's text for item `i` (its body, JSON-escaped).
fn poison(i: usize) -> String {
    format!("\\\"item\\\":{i},")
}

/// A request with a JSON array of `N` items and `headers`.
fn batch(headers: &[(&str, &str)]) -> Request {
    let path = format!(
        "{}/../events/apigw-http-json-array.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("sample")).expect("JSON");
    let items: Vec<String> = (0..N).map(item).collect();
    v["body"] = format!("[{}]", items.join(",")).into();
    let h = v["headers"].as_object_mut().expect("headers");
    h.remove("content-length");
    h.remove("idempotency-key");
    for (k, val) in headers {
        h.insert(k.to_string(), (*val).into());
    }
    request::from_str(&v.to_string()).expect("a request")
}

fn handler<T: Transport>(fwd: Forwarder<T>) -> Handler<T> {
    let settings =
        Settings::from_env(&Env::from_pairs(&[("MAX_MESSAGES", "5000")])).expect("settings");
    Handler::new(settings, fwd, std::time::Duration::from_millis(500))
}

/// The status and the per-item results: index -> Ok(message id) or
/// Err(error code).
async fn send<T: Transport>(
    h: &Handler<T>,
    req: Request,
) -> (StatusCode, BTreeMap<usize, Result<String, String>>) {
    let response = h.handle(req).await;
    let Body::Text(text) = response.body() else {
        panic!("a text body");
    };
    let v: Value = serde_json::from_str(text).expect("JSON");
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), N, "{v}");
    let by_index = results
        .iter()
        .map(|r| {
            let i = r["index"].as_u64().expect("index") as usize;
            let got = match r["status"].as_str() {
                Some("sent") => Ok(r["messageId"].as_str().expect("id").to_owned()),
                Some("failed") => Err(r["error"]["code"].as_str().expect("code").to_owned()),
                other => panic!("item {i}: {other:?}"),
            };
            (i, got)
        })
        .collect();
    (response.status(), by_index)
}

fn index(body: &str) -> usize {
    let v: Value = serde_json::from_str(body).expect("an item");
    v["item"].as_u64().expect("item") as usize
}

fn refused_items(fake: &sqs_forwarder::test_support::FakeSqs, poison: usize) -> Vec<usize> {
    let (bodies, failed_calls) = crate::refused(fake);
    assert_eq!(failed_calls, 1, "the whole call failed once");
    let span: Vec<usize> = bodies.iter().map(|b| index(b)).collect();
    assert!(span.len() > 1 && span.contains(&poison), "{span:?}");
    assert_eq!(span, (span[0]..=span[span.len() - 1]).collect::<Vec<_>>());
    span
}

#[tokio::test(flavor = "multi_thread")]
async fn standard_queue_results_name_each_items_message_and_the_refused_fail() {
    let sqs = client();
    let url = create_queue(&sqs, "agg-apigw", &[]).await;
    let base = connect(&config(&url, &[]), GroupIds::FromSource).await;
    let (fake, fwd, _) = crate::faulty(&base, Some(&poison(1000)), None);
    let (status, results) = send(&handler(fwd), batch(&[])).await;
    let span = refused_items(&fake, 1000);
    assert_eq!(status, StatusCode::MULTI_STATUS);
    for (i, r) in &results {
        match r {
            Err(code) => {
                assert!(span.contains(i), "item {i} failed: {code}");
                assert_eq!(code, "InvalidParameterValue");
            }
            Ok(_) => assert!(!span.contains(i), "item {i} reported sent"),
        }
    }

    let delivered = read_all(&drain(&sqs, &url, usize::MAX).await);
    let mut seen = BTreeMap::new();
    for r in delivered.iter().flat_map(|d| &d.records) {
        let i = index(&r.body);
        assert_eq!(r.body, item(i), "the item's text as sent");
        assert_eq!(
            results[&i],
            Ok(r.message_id.clone()),
            "item {i}: its message"
        );
        assert!(seen.insert(i, ()).is_none(), "item {i} twice");
    }
    assert_eq!(
        seen.len(),
        N - span.len(),
        "every item reported sent arrived"
    );
    assert_aggregated(&delivered, N - span.len(), N / 50);
}

#[tokio::test(flavor = "multi_thread")]
async fn fifo_queue_a_failing_aggregate_holds_its_group_and_a_retried_request_completes_it() {
    let sqs = client();
    let url = create_queue(
        &sqs,
        "agg-apigw.fifo",
        &[(QueueAttributeName::ContentBasedDeduplication, "false")],
    )
    .await;
    let base = connect(&config(&url, &[]), GroupIds::FromSource).await;
    let (fake, fwd, failing) = crate::faulty(&base, None, Some(&poison(1000)));
    let h = handler(fwd);
    let headers = [("x-message-group-id", "g-1"), ("idempotency-key", "key-1")];

    let (status, results) = send(&h, batch(&headers)).await;
    failing.store(false, std::sync::atomic::Ordering::SeqCst);
    let span = refused_items(&fake, 1000);
    assert_eq!(status, StatusCode::MULTI_STATUS);
    // The failing aggregate's items and every later one (held behind them
    // in their group) failed, retryably.
    let failed: Vec<usize> = results
        .iter()
        .filter(|(_, r)| r.is_err())
        .map(|(i, _)| *i)
        .collect();
    assert_eq!(failed, (span[0]..N).collect::<Vec<_>>());
    for i in &failed {
        let code = results[i].as_ref().expect_err("failed");
        assert!(
            code == "InternalError" || span[span.len() - 1] < *i,
            "item {i}: {code}"
        );
    }
    // The client retries the request with the same key.
    let (status, again) = send(&h, batch(&headers)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{again:?}");

    let messages = drain(&sqs, &url, usize::MAX).await;
    let delivered = read_all(&messages);
    let want: BTreeMap<String, usize> = (0..N).map(|i| (item(i), 1)).collect();
    assert_eq!(copies(&delivered), want, "each item once");
    assert_aggregated(&delivered, N, N / 50);
    let groups = fifo_groups(&delivered);
    let got = &groups["g-1"];
    assert_eq!(groups.len(), 1);
    for (i, (body, dedup)) in got.iter().enumerate() {
        assert_eq!(body, &item(i), "in order");
        assert_eq!(dedup, &format!("key-1-{i}"));
    }
    for d in &delivered {
        for r in &d.records {
            if let Ok(id) = &results[&index(&r.body)] {
                assert_eq!(
                    id, &r.message_id,
                    "a first-request result names its message"
                );
            }
        }
    }
    assert_python_agrees(&messages);
}
