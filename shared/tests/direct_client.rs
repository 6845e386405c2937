//! The direct `SendMessageBatch` client (`SQS_CLIENT=direct`) against a fake
//! endpoint: the request it makes (headers, signature shape, body) next to
//! the one aws-sdk-sqs makes for the same entries, and how it picks its
//! transport at connect time. The fault behaviour is covered by
//! `tests/faults.rs`, which runs against either client.

mod direct_common;

use direct_common::{ACCESS_KEY, REGION, SECRET, both_clients, items, sdk};
use serde_json::Value;
use sqs_forwarder::Config;
use sqs_forwarder::call::transport::{EntryResult, Transport};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

async fn server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/"))
        .and(header("x-amz-target", "AmazonSQS.SendMessageBatch"))
        .and(header("content-type", "application/x-amz-json-1.0"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "application/x-amz-json-1.0")
                .set_body_string(
                    r#"{"Successful":[{"Id":"0","MessageId":"m0","MD5OfMessageBody":"x"}],"Failed":[{"Id":"1","SenderFault":false,"Code":"InternalError","Message":"again"}]}"#,
                ),
        )
        .mount(&server)
        .await;
    server
}

fn signed_headers(auth: &str) -> Vec<String> {
    auth.split("SignedHeaders=")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .map(|h| h.split(';').map(str::to_owned).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn same_request_as_the_sdk_signed_the_same_way() {
    let server = server().await;
    let endpoint = server.uri();
    let url = format!("{endpoint}/000000000000/q");
    for token in [None, Some("session-token")] {
        let (direct, via_sdk) = both_clients(&sdk(&endpoint, token), &url);
        let items = items();
        let expected = vec![
            (
                "0".to_owned(),
                EntryResult::Sent {
                    message_id: "m0".into(),
                    sequence_number: None,
                },
            ),
            (
                "1".to_owned(),
                EntryResult::Failed {
                    code: "InternalError".into(),
                    message: "again".into(),
                    sender_fault: false,
                },
            ),
        ];
        assert_eq!(via_sdk.send_batch(&items).await, Ok(expected.clone()));
        assert_eq!(direct.send_batch(&items).await, Ok(expected));
        let requests = server.received_requests().await.expect("recorded");
        let [sdk_req, direct_req] = &requests[requests.len() - 2..] else {
            panic!("two requests");
        };
        // The same JSON body.
        let body = |r: &wiremock::Request| -> Value {
            serde_json::from_slice(&r.body).expect("JSON body")
        };
        assert_eq!(body(sdk_req), body(direct_req));
        // Signed the same way: SigV4 for eu-west-1/sqs with the same key,
        // the same headers signed (but the SDK's own bookkeeping ones).
        let auth = |r: &wiremock::Request| {
            r.headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
                .expect("authorization")
        };
        let (a_sdk, a_direct) = (auth(sdk_req), auth(direct_req));
        let date = direct_req
            .headers
            .get("x-amz-date")
            .and_then(|v| v.to_str().ok())
            .expect("x-amz-date");
        assert!(
            a_direct.starts_with(&format!(
                "AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{}/{REGION}/sqs/aws4_request, SignedHeaders=",
                &date[..8]
            )),
            "{a_direct}"
        );
        let sdk_only = |h: &String| h.starts_with("amz-sdk-") || h == "x-amz-user-agent";
        let from_sdk: Vec<String> = signed_headers(&a_sdk)
            .into_iter()
            .filter(|h| !sdk_only(h))
            .collect();
        let from_direct = signed_headers(&a_direct);
        assert_eq!(from_direct, from_sdk, "{a_sdk}\n{a_direct}");
        assert_eq!(
            from_direct.contains(&"x-amz-security-token".to_owned()),
            token.is_some()
        );
        assert_eq!(
            direct_req
                .headers
                .get("x-amz-security-token")
                .and_then(|v| v.to_str().ok()),
            token
        );
        // The secret is in no header.
        for (_, v) in direct_req.headers.iter() {
            assert!(!v.to_str().unwrap_or("").contains(SECRET));
        }
    }
}

#[tokio::test]
async fn connect_picks_the_client_from_sqs_client() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "AmazonSQS.GetQueueAttributes"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "application/x-amz-json-1.0")
                .set_body_string(r#"{"Attributes":{"MaximumMessageSize":"1048576"}}"#),
        )
        .mount(&server)
        .await;
    let url = format!("{}/000000000000/q", server.uri());
    for (value, direct) in [(None, true), (Some("sdk"), false), (Some("direct"), true)] {
        let config = Config::from_lookup(|k| match k {
            "QUEUE_URL" => Some(url.clone()),
            "SQS_CLIENT" => value.map(str::to_owned),
            _ => None,
        })
        .expect("config");
        let fwd = sqs_forwarder::setup::startup::connect_sdk(
            &sdk(&server.uri(), None),
            &config,
            sqs_forwarder::GroupIds::FromConfig,
        )
        .await
        .expect("connect");
        assert_eq!(fwd.transport().is_direct(), direct, "{value:?}");
        assert_eq!(fwd.transport().queue_url(), url);
    }
}

#[tokio::test]
async fn a_null_failed_list_is_no_failure_and_no_retry() {
    // `"Failed": null` (or `"Successful": null`) is an empty list, as the
    // SDK reads it: the entries listed are sent once, not retried as a
    // malformed answer (which would send them twice).
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "AmazonSQS.GetQueueAttributes"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "application/x-amz-json-1.0")
                .set_body_string(r#"{"Attributes":{"MaximumMessageSize":"1048576"}}"#),
        )
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "AmazonSQS.SendMessageBatch"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "application/x-amz-json-1.0")
                .set_body_string(
                    r#"{"Successful":[{"Id":"0","MessageId":"m0","MD5OfMessageBody":"x"}],"Failed":null}"#,
                ),
        )
        .mount(&server)
        .await;
    let url = format!("{}/000000000000/null-failed", server.uri());
    let config = Config::from_lookup(|k| match k {
        "QUEUE_URL" => Some(url.clone()),
        "SQS_CLIENT" => Some("direct".into()),
        _ => None,
    })
    .expect("config");
    let fwd = sqs_forwarder::setup::startup::connect_sdk(
        &sdk(&server.uri(), None),
        &config,
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect("connect");
    let out = fwd
        .send_all(vec![sqs_forwarder::Message::new("once", 0)], None)
        .await;
    assert!(
        matches!(&out[0].outcome, sqs_forwarder::Outcome::Sent { message_id, .. } if message_id == "m0"),
        "{out:?}"
    );
    assert_eq!(out[0].attempts, 1);
    let sends = server
        .received_requests()
        .await
        .expect("recorded")
        .iter()
        .filter(|r| {
            r.headers.get("x-amz-target").and_then(|v| v.to_str().ok())
                == Some("AmazonSQS.SendMessageBatch")
        })
        .count();
    assert_eq!(sends, 1, "one SendMessageBatch, no retry");
}
