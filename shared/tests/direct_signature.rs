//! The direct client's signature checked the way SQS checks it: a SigV4
//! verifier written here from AWS's specification (canonical request, string
//! to sign, derived key), independent of the `aws-sigv4` crate both clients
//! sign with. The verifier is pinned to AWS's published example (the IAM
//! `ListUsers` request of the SigV4 documentation), accepts the request
//! aws-sdk-sqs sends (the client proven against real SQS), and must accept
//! the direct client's request for the same entries; a changed body, header,
//! secret or region must fail it.

mod direct_common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use direct_common::{ACCESS_KEY, REGION, SECRET, both_clients, items, sdk};
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use sqs_forwarder::Config;
use sqs_forwarder::transport::Transport;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// One received request, as the verifier sees it.
#[derive(Clone, Debug)]
struct Received {
    method: String,
    /// The path as it came on the wire (percent-encoded).
    path: String,
    /// The query as it came on the wire, without `?`.
    query: String,
    /// Every header, names lower-cased, in arrival order.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn from(r: &wiremock::Request) -> Self {
        Self {
            method: r.method.as_str().to_owned(),
            path: r.url.path().to_owned(),
            query: r.url.query().unwrap_or("").to_owned(),
            headers: r
                .headers
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_ascii_lowercase(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: r.body.clone(),
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// RFC 3986 encoding as SigV4 asks: unreserved characters kept, `/` kept
/// when `keep_slash`, every other byte `%XX` in upper case.
fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b'/' if keep_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// The canonical request of SigV4 for `r`, signing `signed` (lower-case
/// names, as listed in the `Authorization` header). Services other than S3
/// encode the path once more on top of its wire form.
fn canonical_request(r: &Received, signed: &[&str]) -> Result<String, String> {
    let path = if r.path.is_empty() { "/" } else { &r.path };
    let mut query: Vec<(String, String)> = r
        .query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                uri_encode(&percent_decode(k), false),
                uri_encode(&percent_decode(v), false),
            )
        })
        .collect();
    query.sort();
    let query = query
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let mut headers = String::new();
    for name in signed {
        let values: Vec<String> = r
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        if values.is_empty() {
            return Err(format!("signed header {name} is not in the request"));
        }
        headers.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    Ok(format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        r.method,
        uri_encode(path, true),
        query,
        headers,
        signed.join(";"),
        sha256_hex(&r.body)
    ))
}

fn signature(secret: &str, date_time: &str, scope: &[&str; 4], canonical: &str) -> String {
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{date_time}\n{}\n{}",
        scope.join("/"),
        sha256_hex(canonical.as_bytes())
    );
    let mut key = hmac(format!("AWS4{secret}").as_bytes(), scope[0].as_bytes());
    for part in &scope[1..] {
        key = hmac(&key, part.as_bytes());
    }
    hex::encode(hmac(&key, string_to_sign.as_bytes()))
}

/// What SQS would check of `r`: the `Authorization` header's form and
/// scope, that the host, the date and every `x-amz-*` header are signed,
/// that the date is within the allowed skew of `now`, and the signature.
fn verify(
    r: &Received,
    access_key: &str,
    secret: &str,
    region: &str,
    service: &str,
    now: SystemTime,
) -> Result<(), String> {
    let auth = r.header("authorization").ok_or("no authorization header")?;
    let rest = auth
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or("not AWS4-HMAC-SHA256")?;
    let mut credential = None;
    let mut signed = None;
    let mut given = None;
    for part in rest.split(", ") {
        match part.split_once('=') {
            Some(("Credential", v)) => credential = Some(v),
            Some(("SignedHeaders", v)) => signed = Some(v),
            Some(("Signature", v)) => given = Some(v),
            _ => return Err(format!("unexpected part {part:?}")),
        }
    }
    let (credential, signed, given) = (
        credential.ok_or("no Credential")?,
        signed.ok_or("no SignedHeaders")?,
        given.ok_or("no Signature")?,
    );
    let c: Vec<&str> = credential.split('/').collect();
    let [key, date, in_region, in_service, terminator] = c[..] else {
        return Err(format!("credential {credential:?} has not five parts"));
    };
    if key != access_key {
        return Err(format!("access key {key}"));
    }
    if (in_region, in_service, terminator) != (region, service, "aws4_request") {
        return Err(format!("scope {credential}"));
    }
    let date_time = r.header("x-amz-date").ok_or("no x-amz-date")?;
    if !date_time.starts_with(date) || date.len() != 8 {
        return Err(format!(
            "x-amz-date {date_time} outside the scope's day {date}"
        ));
    }
    let signed: Vec<&str> = signed.split(';').collect();
    let mut sorted = signed.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted != signed {
        return Err("SignedHeaders not sorted and unique".into());
    }
    for required in ["host", "x-amz-date"] {
        if !signed.contains(&required) {
            return Err(format!("{required} is not signed"));
        }
    }
    for (name, _) in &r.headers {
        if name.starts_with("x-amz-") && !signed.contains(&name.as_str()) {
            return Err(format!("{name} is sent but not signed"));
        }
    }
    let at = parse_amz_date(date_time).ok_or("x-amz-date not YYYYMMDDTHHMMSSZ")?;
    let skew = now
        .duration_since(at)
        .or_else(|e| Ok::<_, String>(e.duration()))?;
    if skew > Duration::from_secs(300) {
        return Err(format!("x-amz-date {date_time} is {skew:?} from now"));
    }
    let canonical = canonical_request(r, &signed)?;
    let expected = signature(
        secret,
        date_time,
        &[date, region, service, "aws4_request"],
        &canonical,
    );
    if expected != given {
        return Err(format!(
            "signature {given} != {expected}\ncanonical request:\n{canonical}"
        ));
    }
    Ok(())
}

/// `YYYYMMDDTHHMMSSZ` as a time (days from civil date, proleptic Gregorian).
fn parse_amz_date(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(4..6)?, n(6..8)?);
    let (hh, mm, ss) = (n(9..11)?, n(11..13)?, n(13..15)?);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3_600 + mm * 60 + ss;
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

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
    let fwd = sqs_forwarder::startup::connect_sdk(&sdk(&server.uri(), None), &config, false)
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
        let client = sqs_forwarder::queue::sqs_client(&sdk);
        // In Lambda, with a trace id: sent unsigned, the signature verifies.
        let lambda = sqs_forwarder::direct::headers::Environment::lookup(|name| match name {
            "AWS_LAMBDA_FUNCTION_NAME" => Some("fn".into()),
            "_X_AMZN_TRACE_ID" => Some("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1".into()),
            _ => None,
        });
        let direct = sqs_forwarder::direct::DirectClient::new(&sdk, &client)
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
    let client = sqs_forwarder::queue::sqs_client(&wrong);
    let direct = sqs_forwarder::SqsTransport::direct(
        sqs_forwarder::direct::DirectClient::new(&wrong, &client).expect("direct"),
        url.as_str(),
    );
    match direct.send_batch(&items()).await {
        Err(sqs_forwarder::transport::CallError::Failed(f)) => {
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
    let client = sqs_forwarder::queue::sqs_client(&sdk);
    let direct = sqs_forwarder::direct::DirectClient::new(&sdk, &client).expect("direct");
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
    let fwd = sqs_forwarder::startup::connect_sdk(&sdk(&server.uri(), None), &config, false)
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
