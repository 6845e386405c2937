//! The direct client's signature checked the way SQS checks it: a SigV4
//! verifier written from AWS's specification (`direct_common/sigv4.rs`) (canonical request, string
//! to sign, derived key), independent of the `aws-sigv4` crate both clients
//! sign with. The verifier is pinned to AWS's published example (the IAM
//! `ListUsers` request of the SigV4 documentation), accepts the request
//! aws-sdk-sqs sends (the client proven against real SQS), and must accept
//! the direct client's request for the same entries; a changed body, header,
//! secret or region must fail it.

mod direct_common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use direct_common::sigv4::{Received, canonical_request, parse_amz_date, sha256_hex, verify};
use direct_common::{ACCESS_KEY, REGION, SECRET, both_clients, items, sdk};
use sqs_forwarder::Config;
use sqs_forwarder::call::transport::Transport;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

#[test]
fn the_verifier_reproduces_aws_published_example() {
    // AWS's SigV4 documentation: GET https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08
    // signed on 2015-08-30 12:36:00 UTC with the documentation's example key.
    let example = Received {
        method: "GET".into(),
        path: "/".into(),
        query: "Action=ListUsers&Version=2010-05-08".into(),
        headers: vec![
            (
                "content-type".into(),
                "application/x-www-form-urlencoded; charset=utf-8".into(),
            ),
            ("host".into(), "iam.amazonaws.com".into()),
            ("x-amz-date".into(), "20150830T123600Z".into()),
            (
                "authorization".into(),
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
                 SignedHeaders=content-type;host;x-amz-date, \
                 Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
                    .into(),
            ),
        ],
        body: Vec::new(),
    };
    let canonical =
        canonical_request(&example, &["content-type", "host", "x-amz-date"]).expect("canonical");
    assert_eq!(
        sha256_hex(canonical.as_bytes()),
        "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59",
        "the documented canonical request's hash"
    );
    let then = parse_amz_date("20150830T123600Z").expect("date");
    assert_eq!(then, UNIX_EPOCH + Duration::from_secs(1_440_938_160));
    verify(&example, "AKIDEXAMPLE", SECRET, "us-east-1", "iam", then).expect("documented example");
    assert!(
        verify(
            &example,
            "AKIDEXAMPLE",
            "another-secret",
            "us-east-1",
            "iam",
            then
        )
        .is_err(),
        "another secret"
    );
    assert!(
        verify(
            &example,
            "AKIDEXAMPLE",
            SECRET,
            "us-east-1",
            "iam",
            then + Duration::from_secs(3_600)
        )
        .is_err(),
        "an hour of skew"
    );
}

/// A fake SQS that answers every POST with an empty `SendMessageBatch`
/// result: what matters to these tests is the request.
async fn empty_answers() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "application/x-amz-json-1.0")
                .set_body_string(r#"{"Successful":[],"Failed":[]}"#),
        )
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn the_direct_client_signs_as_sqs_verifies() {
    let server = empty_answers().await;
    // A queue URL with characters the path encoding must carry.
    let url = format!("{}/123456789012/orders-%7Etest.fifo", server.uri());
    for token in [None, Some("FwoGZXIvYXdzEJr//////////token+with/slashes=")] {
        let (direct, via_sdk) = both_clients(&sdk(&server.uri(), token), &url);
        let items = items();
        // Both answer the same (empty) result; what matters is the request.
        let _ = via_sdk.send_batch(&items).await;
        let _ = direct.send_batch(&items).await;
        let requests = server.received_requests().await.expect("recorded");
        let [sdk_req, direct_req] = &requests[requests.len() - 2..] else {
            panic!("two requests");
        };
        let now = SystemTime::now();
        let (sdk_req, direct_req) = (Received::from(sdk_req), Received::from(direct_req));
        verify(&sdk_req, ACCESS_KEY, SECRET, REGION, "sqs", now)
            .unwrap_or_else(|e| panic!("the SDK's request, token {token:?}: {e}"));
        verify(&direct_req, ACCESS_KEY, SECRET, REGION, "sqs", now)
            .unwrap_or_else(|e| panic!("the direct client's request, token {token:?}: {e}"));
        assert_eq!(direct_req.header("x-amz-security-token"), token);

        // What SQS would refuse.
        let mut body = direct_req.clone();
        body.body.push(b' ');
        let mut target = direct_req.clone();
        for (n, v) in &mut target.headers {
            if n == "x-amz-target" {
                *v = "AmazonSQS.DeleteMessageBatch".into();
            }
        }
        let mut host = direct_req.clone();
        for (n, v) in &mut host.headers {
            if n == "host" {
                v.push('0');
            }
        }
        for (what, r) in [
            ("a changed body", &body),
            ("another action", &target),
            ("another host", &host),
        ] {
            assert!(
                verify(r, ACCESS_KEY, SECRET, REGION, "sqs", now).is_err(),
                "{what} must not verify"
            );
        }
        assert!(verify(&direct_req, ACCESS_KEY, "other", REGION, "sqs", now).is_err());
        assert!(verify(&direct_req, ACCESS_KEY, SECRET, "us-east-1", "sqs", now).is_err());
    }
}

#[tokio::test]
async fn what_the_own_signer_does_not_take_is_signed_by_aws_sigv4_and_verifies() {
    // The direct client signs `POST /` itself; an endpoint with a path, or a
    // session token SigV4 would normalise, goes through aws-sigv4's general
    // signer. Both must still verify.
    let server = empty_answers().await;
    let url = format!("{}/123456789012/q", server.uri());
    let with_path = format!("{}/edge/sqs", server.uri());
    for (endpoint, token) in [
        (with_path.as_str(), None),
        (server.uri().as_str(), Some("session token with spaces")),
    ] {
        let (direct, _) = both_clients(&sdk(endpoint, token), &url);
        let _ = direct.send_batch(&items()).await;
        let requests = server.received_requests().await.expect("recorded");
        let last = Received::from(requests.last().expect("a request"));
        verify(&last, ACCESS_KEY, SECRET, REGION, "sqs", SystemTime::now())
            .unwrap_or_else(|e| panic!("{endpoint}, token {token:?}: {e}"));
        assert_eq!(last.header("x-amz-security-token"), token);
        if endpoint == with_path {
            assert_eq!(last.path, "/edge/sqs/");
        }
    }
}

#[tokio::test]
async fn connect_signs_with_the_same_verifiable_signature() {
    // Through the configuration a user sets (SQS_CLIENT=direct), not only the
    // constructor: the request the started forwarder sends verifies too.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "application/x-amz-json-1.0")
                .set_body_string(
                    r#"{"Attributes":{"MaximumMessageSize":"1048576"},"Successful":[],"Failed":[]}"#,
                ),
        )
        .mount(&server)
        .await;
    let url = format!("{}/123456789012/q", server.uri());
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
    assert!(fwd.transport().is_direct());
    let _ = fwd.transport().send_batch(&items()).await;
    let requests = server.received_requests().await.expect("recorded");
    let last = Received::from(requests.last().expect("a request"));
    assert_eq!(
        last.header("x-amz-target"),
        Some("AmazonSQS.SendMessageBatch")
    );
    verify(&last, ACCESS_KEY, SECRET, REGION, "sqs", SystemTime::now())
        .unwrap_or_else(|e| panic!("{e}"));
}
