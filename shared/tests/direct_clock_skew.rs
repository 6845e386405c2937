//! Clock skew, corrected as aws-sdk-sqs corrects it: a fake SQS with a
//! clock of its own (10 minutes or a day off this machine's) puts its time
//! in every answer's `Date` and checks each request as SQS does at that
//! time (`direct_common/sigv4.rs`'s verifier): a date more than 5 minutes
//! off is refused with SQS's skew answer. The direct client must send after
//! at most one refused attempt, and sign every later call at the server's
//! time (the date, the scope and the signing key's day).

mod direct_common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use direct_common::sigv4::{Received, parse_amz_date, verify};
use direct_common::{ACCESS_KEY, REGION, SECRET, items, sdk};
use sqs_forwarder::Config;
use sqs_forwarder::call::transport::Transport;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A fake SQS whose clock is `offset` ahead of this machine's (behind, when
/// negative): every answer carries its `Date`, and a request is checked as
/// SQS checks it at that clock. A date more than 5 minutes off is refused
/// with SQS's skew answer (query-compatible `SignatureDoesNotMatch`,
/// "Signature expired"); any other signature fault with
/// `IncompleteSignature`, which the client must not retry.
async fn server_with_clock(offset_secs: i64) -> MockServer {
    let server = MockServer::start().await;
    let clock = move || {
        let by = Duration::from_secs(offset_secs.unsigned_abs());
        if offset_secs >= 0 {
            SystemTime::now() + by
        } else {
            SystemTime::now() - by
        }
    };
    let amz = |t: SystemTime| {
        let secs = t.duration_since(UNIX_EPOCH).expect("after 1970").as_secs();
        let days = secs / 86_400;
        // Civil date from days since the epoch (the inverse of parse_amz_date).
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        let s = secs % 86_400;
        format!(
            "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
            s / 3600,
            s / 60 % 60,
            s % 60
        )
    };
    Mock::given(method("POST"))
        .respond_with(move |req: &wiremock::Request| {
            let now = clock();
            let date = httpdate::fmt_http_date(now);
            let r = Received::from(req);
            let refuse = |status: u16, code: &str, message: String| {
                ResponseTemplate::new(status)
                    .insert_header("date", date.as_str())
                    .insert_header("content-type", "application/x-amz-json-1.0")
                    .insert_header("x-amzn-query-error", format!("{code};Sender").as_str())
                    .set_body_string(
                        serde_json::json!({
                            "__type": format!("com.amazon.coral.service#{code}"),
                            "message": message,
                        })
                        .to_string(),
                    )
            };
            let signed_at = r.header("x-amz-date").and_then(parse_amz_date);
            let Some(signed_at) = signed_at else {
                return refuse(400, "IncompleteSignature", "no x-amz-date".into());
            };
            let five = Duration::from_secs(300);
            if signed_at + five < now {
                return refuse(
                    403,
                    "SignatureDoesNotMatch",
                    format!(
                        "Signature expired: {} is now earlier than {} ({} - 5 min.)",
                        amz(signed_at),
                        amz(now - five),
                        amz(now)
                    ),
                );
            }
            if signed_at > now + five {
                return refuse(
                    403,
                    "SignatureDoesNotMatch",
                    format!(
                        "Signature not yet current: {} is still later than {} ({} + 5 min.)",
                        amz(signed_at),
                        amz(now + five),
                        amz(now)
                    ),
                );
            }
            if let Err(e) = verify(&r, ACCESS_KEY, SECRET, REGION, "sqs", now) {
                return refuse(403, "IncompleteSignature", e);
            }
            let body = match r.header("x-amz-target") {
                Some("AmazonSQS.GetQueueAttributes") => {
                    r#"{"Attributes":{"MaximumMessageSize":"1048576"}}"#.to_owned()
                }
                _ => {
                    let request: serde_json::Value =
                        serde_json::from_slice(&r.body).unwrap_or_default();
                    let sent: Vec<serde_json::Value> = request["Entries"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|e| serde_json::json!({"Id": e["Id"], "MessageId": "m"}))
                        .collect();
                    serde_json::json!({"Successful": sent, "Failed": []}).to_string()
                }
            };
            ResponseTemplate::new(200)
                .insert_header("date", date.as_str())
                .insert_header("content-type", "application/x-amz-json-1.0")
                .set_body_string(body)
        })
        .mount(&server)
        .await;
    server
}

/// The action of every request the fake received, in order.
async fn targets(server: &MockServer) -> Vec<String> {
    server
        .received_requests()
        .await
        .expect("recorded")
        .iter()
        .map(|r| {
            let target = Received::from(r)
                .header("x-amz-target")
                .unwrap_or("")
                .to_owned();
            target.trim_start_matches("AmazonSQS.").to_owned()
        })
        .collect()
}

#[tokio::test]
async fn a_skewed_clock_is_corrected_from_the_servers_date() {
    // Ten minutes either way, and a day ahead (so the signing key's day is
    // the server's, not this machine's).
    for offset in [600, -600, 86_400] {
        let server = server_with_clock(offset).await;
        let url = format!("{}/123456789012/q", server.uri());
        let sdk = sdk(&server.uri(), None);
        let client = sqs_forwarder::setup::client::sqs_client(&sdk);
        // In Lambda, with a trace id: sent unsigned, the signature verifies.
        let lambda = sqs_forwarder::call::direct::headers::Environment::lookup(|name| match name {
            "AWS_LAMBDA_FUNCTION_NAME" => Some("fn".into()),
            "_X_AMZN_TRACE_ID" => Some("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1".into()),
            _ => None,
        });
        let direct = sqs_forwarder::call::direct::DirectClient::new(&sdk, &client)
            .expect("direct")
            .with_environment(lambda);
        let direct = sqs_forwarder::SqsTransport::direct(direct, url.as_str());
        // The first call is refused once, learns the server's clock and is
        // signed again at its time, inside the one call.
        let sent = direct.send_batch(&items()).await.unwrap_or_else(|e| {
            panic!("offset {offset}: {e:?}");
        });
        assert_eq!(sent.len(), 2, "offset {offset}: {sent:?}");
        assert_eq!(
            server.received_requests().await.expect("recorded").len(),
            2,
            "offset {offset}: one refusal, one accepted"
        );
        // Later calls are signed at the server's time from the start.
        for _ in 0..3 {
            direct.send_batch(&items()).await.expect("sent");
        }
        let requests = server.received_requests().await.expect("recorded");
        assert_eq!(requests.len(), 5, "offset {offset}: no more refusals");
        let last = Received::from(requests.last().expect("a request"));
        assert_eq!(
            last.header("x-amzn-trace-id"),
            Some("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")
        );
    }
}

#[tokio::test]
async fn a_real_signature_fault_is_not_retried_and_a_small_skew_is_not_corrected_by_retry() {
    // A wrong secret at a server 10 minutes ahead: the first call is refused
    // for its date and retried once at the server's time; that one is
    // refused for its signature (IncompleteSignature here): no third
    // attempt, and the error is the server's.
    let server = server_with_clock(600).await;
    let url = format!("{}/123456789012/q", server.uri());
    let mut wrong = sdk(&server.uri(), None).into_builder();
    wrong.set_credentials_provider(Some(
        aws_credential_types::provider::SharedCredentialsProvider::new(
            aws_credential_types::Credentials::new(ACCESS_KEY, "not-the-secret", None, None, "t"),
        ),
    ));
    let wrong = wrong.build();
    let client = sqs_forwarder::setup::client::sqs_client(&wrong);
    let direct = sqs_forwarder::SqsTransport::direct(
        sqs_forwarder::call::direct::DirectClient::new(&wrong, &client).expect("direct"),
        url.as_str(),
    );
    match direct.send_batch(&items()).await {
        Err(sqs_forwarder::call::transport::CallError::Failed(f)) => {
            assert_eq!(f.code, "IncompleteSignature", "{f:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.received_requests().await.expect("recorded").len(), 2);
    // The same refusal with the clock already right: not retried.
    let _ = direct.send_batch(&items()).await;
    assert_eq!(server.received_requests().await.expect("recorded").len(), 3);

    // A server 2 minutes ahead accepts at once, and its offset is kept.
    let server = server_with_clock(120).await;
    let sdk = sdk(&server.uri(), None);
    let client = sqs_forwarder::setup::client::sqs_client(&sdk);
    let direct = sqs_forwarder::call::direct::DirectClient::new(&sdk, &client).expect("direct");
    direct
        .send_batch(&format!("{}/1/q", server.uri()), &items())
        .await
        .expect("sent");
    assert_eq!(server.received_requests().await.expect("recorded").len(), 1);
    let offset = direct.clock_offset_ms();
    assert!((118_000..=122_000).contains(&offset), "{offset}");
}

#[tokio::test]
async fn a_forwarder_on_a_skewed_host_starts_and_sends_without_a_retry_of_its_own() {
    // The start-up GetQueueAttributes (through the direct client) learns the
    // clock; the send is then signed right at once, and the forwarder sees
    // one attempt.
    let server = server_with_clock(600).await;
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
    let out = fwd
        .send_all(vec![sqs_forwarder::Message::new("skewed", 0)], None)
        .await;
    assert!(
        matches!(out[0].outcome, sqs_forwarder::Outcome::Sent { .. }),
        "{out:?}"
    );
    assert_eq!(out[0].attempts, 1);
    assert_eq!(
        targets(&server).await,
        [
            "GetQueueAttributes",
            "GetQueueAttributes",
            "SendMessageBatch"
        ]
    );
}
