//! Queues in other regions and accounts, and assumed roles, against one fake
//! endpoint (wiremock) that plays both SQS (AWS JSON 1.0) and STS (query
//! protocol, XML answers).
//!
//! What is checked is what AWS would check: the `Authorization` header of
//! every request the fake receives, `Credential=<access key>/<date>/<region>/
//! <service>/aws4_request`, and the session token that goes with temporary
//! credentials. The SDK signs for the client's region whatever endpoint it
//! talks to, so a local endpoint is enough to see which region a request is
//! meant for.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use aws_config::BehaviorVersion;
use aws_sdk_sqs::config::{Credentials, Region};
use aws_sdk_sqs::primitives::{DateTime, DateTimeFormat};
use serde_json::{Value, json};
use sqs_forwarder::setup::credentials::assume_role;
use sqs_forwarder::setup::startup::connect_sdk;
use sqs_forwarder::{Config, Message, Outcome, SetupError};
use wiremock::matchers::{body_string_contains, header, method};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const JSON_1_0: &str = "application/x-amz-json-1.0";
const ROLE: &str = "arn:aws:iam::210987654321:role/sqs-sender";

fn config(vars: &[(&str, &str)]) -> Config {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|k| map.get(k).cloned()).expect("valid configuration")
}

/// The function's own settings: region us-east-1, its own access key, every
/// service at the fake (an endpoint override, as for a local endpoint), and
/// nothing from this machine's environment.
async fn home_sdk(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .empty_test_environment()
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new(
            "AKIDFUNCTION",
            "function-secret",
            None,
            None,
            "test",
        ))
        .load()
        .await
}

/// A fake SQS: queue attributes, queue URLs by name, and every batch entry
/// accepted.
async fn fake_sqs(server: &MockServer) {
    Mock::given(method("POST"))
        .and(header("x-amz-target", "AmazonSQS.GetQueueAttributes"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            r#"{"Attributes":{"MaximumMessageSize":"262144"}}"#,
            JSON_1_0,
        ))
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "AmazonSQS.GetQueueUrl"))
        .respond_with(|req: &Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
            let name = body["QueueName"].as_str().unwrap_or("?");
            let owner = body["QueueOwnerAWSAccountId"]
                .as_str()
                .unwrap_or("123456789012");
            ResponseTemplate::new(200).set_body_raw(
                json!({ "QueueUrl": format!("https://sqs.eu-central-1.amazonaws.com/{owner}/{name}") })
                    .to_string(),
                JSON_1_0,
            )
        })
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(header("x-amz-target", "AmazonSQS.SendMessageBatch"))
        .respond_with(|req: &Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
            let successful: Vec<Value> = body["Entries"]
                .as_array()
                .map(|entries| {
                    entries
                        .iter()
                        .map(|e| {
                            json!({
                                "Id": e["Id"],
                                "MessageId": format!("mid-{}", e["Id"].as_str().unwrap_or("?")),
                                "MD5OfMessageBody": "d41d8cd98f00b204e9800998ecf8427e",
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            ResponseTemplate::new(200).set_body_raw(
                json!({ "Successful": successful, "Failed": [] }).to_string(),
                JSON_1_0,
            )
        })
        .mount(server)
        .await;
}

/// STS `AssumeRole` answered with the credentials `issue(n)` gives for the
/// n-th call (from 0): access key id and expiry.
async fn fake_sts<F>(server: &MockServer, issue: F)
where
    F: Fn(usize) -> (&'static str, SystemTime) + Send + Sync + 'static,
{
    let calls = AtomicUsize::new(0);
    Mock::given(method("POST"))
        .and(body_string_contains("Action=AssumeRole"))
        .respond_with(move |_: &Request| {
            let (akid, expires) = issue(calls.fetch_add(1, Ordering::SeqCst));
            let expiration = DateTime::from(expires)
                .fmt(DateTimeFormat::DateTime)
                .unwrap_or_default();
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/xml")
                .set_body_string(format!(
                    r#"<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <Credentials>
      <AccessKeyId>{akid}</AccessKeyId>
      <SecretAccessKey>secret-of-{akid}</SecretAccessKey>
      <SessionToken>token-of-{akid}</SessionToken>
      <Expiration>{expiration}</Expiration>
    </Credentials>
    <AssumedRoleUser>
      <AssumedRoleId>AROAEXAMPLE:forwarder</AssumedRoleId>
      <Arn>arn:aws:sts::210987654321:assumed-role/sqs-sender/forwarder</Arn>
    </AssumedRoleUser>
  </AssumeRoleResult>
  <ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata>
</AssumeRoleResponse>"#
                ))
        })
        .mount(server)
        .await;
}

/// One request as the fake saw it: what it was and who signed it for where.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    /// `AmazonSQS.SendMessageBatch`, ..., or `sts` for STS.
    operation: String,
    access_key: String,
    region: String,
    service: String,
    session_token: Option<String>,
    body: String,
}

fn seen(req: &Request) -> Seen {
    let header = |name: &str| {
        req.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let auth = header("authorization").expect("every request is signed");
    // AWS4-HMAC-SHA256 Credential=AKID/20260101/eu-west-3/sqs/aws4_request, ...
    let scope = auth
        .split("Credential=")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .expect("a credential scope");
    let parts: Vec<&str> = scope.split('/').collect();
    assert_eq!(parts.len(), 5, "credential scope {scope}");
    Seen {
        operation: header("x-amz-target").unwrap_or_else(|| "sts".into()),
        access_key: parts[0].into(),
        region: parts[2].into(),
        service: parts[3].into(),
        session_token: header("x-amz-security-token"),
        body: String::from_utf8_lossy(&req.body).into_owned(),
    }
}

async fn received(server: &MockServer) -> Vec<Seen> {
    server
        .received_requests()
        .await
        .expect("recording is on")
        .iter()
        .map(seen)
        .collect()
}

/// Connect, send two messages, and return what the fake saw.
async fn connect_and_send(
    sdk: &aws_config::SdkConfig,
    config: &Config,
    server: &MockServer,
) -> Vec<Seen> {
    let forwarder = connect_sdk(sdk, config, sqs_forwarder::GroupIds::FromConfig)
        .await
        .expect("connect");
    let outcomes = forwarder
        .send_all(vec![Message::new("a", 0usize), Message::new("b", 1)], None)
        .await;
    for o in &outcomes {
        assert!(matches!(o.outcome, Outcome::Sent { .. }), "{o:?}");
    }
    received(server).await
}

fn operations(seen: &[Seen]) -> Vec<&str> {
    seen.iter().map(|s| s.operation.as_str()).collect()
}

#[tokio::test]
async fn a_queue_in_another_region_gets_requests_signed_for_that_region() {
    let cases = [
        // (QUEUE_URL, SQS_REGION, the region every SQS request is signed for)
        (
            "https://sqs.eu-west-3.amazonaws.com/123456789012/q",
            None,
            "eu-west-3",
        ),
        (
            "https://ap-northeast-1.queue.amazonaws.com/123456789012/q",
            None,
            "ap-northeast-1",
        ),
        (
            "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q",
            None,
            "cn-north-1",
        ),
        // An explicit region beats the URL's.
        (
            "https://sqs.eu-west-3.amazonaws.com/123456789012/q",
            Some("ap-south-1"),
            "ap-south-1",
        ),
        // A local URL names none: the function's region.
        ("LOCAL", None, "us-east-1"),
    ];
    for (url, sqs_region, expected) in cases {
        let server = MockServer::start().await;
        fake_sqs(&server).await;
        let sdk = home_sdk(&server.uri()).await;
        let url = if url == "LOCAL" {
            format!("{}/123456789012/q", server.uri())
        } else {
            url.to_owned()
        };
        let mut vars = vec![("QUEUE_URL", url.as_str())];
        if let Some(r) = sqs_region {
            vars.push(("SQS_REGION", r));
        }
        let seen = connect_and_send(&sdk, &config(&vars), &server).await;
        assert_eq!(
            operations(&seen),
            ["AmazonSQS.GetQueueAttributes", "AmazonSQS.SendMessageBatch"],
            "{url}"
        );
        for s in &seen {
            assert_eq!(
                (s.region.as_str(), s.service.as_str(), s.access_key.as_str()),
                (expected, "sqs", "AKIDFUNCTION"),
                "{url}: {}",
                s.operation
            );
            assert!(
                s.body.contains(&format!("\"QueueUrl\":\"{url}\"")),
                "{}",
                s.body
            );
        }
    }
}

#[tokio::test]
async fn a_queue_by_name_and_owner_is_resolved_in_the_configured_region() {
    let server = MockServer::start().await;
    fake_sqs(&server).await;
    let sdk = home_sdk(&server.uri()).await;
    let c = config(&[
        ("QUEUE_NAME", "orders"),
        ("QUEUE_OWNER_ACCOUNT_ID", "210987654321"),
        ("SQS_REGION", "eu-central-1"),
    ]);
    let seen = connect_and_send(&sdk, &c, &server).await;
    assert_eq!(
        operations(&seen),
        [
            "AmazonSQS.GetQueueUrl",
            "AmazonSQS.GetQueueAttributes",
            "AmazonSQS.SendMessageBatch"
        ]
    );
    assert!(seen.iter().all(|s| s.region == "eu-central-1"), "{seen:?}");
    let lookup: Value = serde_json::from_str(&seen[0].body).expect("JSON");
    assert_eq!(lookup["QueueName"], "orders");
    assert_eq!(lookup["QueueOwnerAWSAccountId"], "210987654321");
    // What GetQueueUrl answered is where the messages go.
    assert!(
        seen[2].body.contains(
            "\"QueueUrl\":\"https://sqs.eu-central-1.amazonaws.com/210987654321/orders\""
        ),
        "{}",
        seen[2].body
    );
}

fn role_config(url: &str) -> Config {
    config(&[
        ("QUEUE_URL", url),
        ("ASSUME_ROLE_ARN", ROLE),
        ("ASSUME_ROLE_SESSION_NAME", "orders-forwarder"),
        ("ASSUME_ROLE_EXTERNAL_ID", "ext-4711"),
    ])
}

#[tokio::test]
async fn the_assumed_role_signs_every_sqs_call() {
    // Through either client: the SDK's identity cache and the direct
    // client's share the role's credentials.
    for client in ["direct", "sdk"] {
        assumed_role_signs_every_call(client).await;
    }
}

async fn assumed_role_signs_every_call(client: &str) {
    let server = MockServer::start().await;
    fake_sqs(&server).await;
    fake_sts(&server, |_| {
        ("ASIAROLEONE", SystemTime::now() + Duration::from_secs(3600))
    })
    .await;
    let mut c = role_config("https://sqs.eu-west-1.amazonaws.com/210987654321/orders");
    c.sqs_client = sqs_forwarder::setup::env::Word::from_word(client).expect("a client");
    let role = c.assume_role.clone().expect("a role");
    let sdk = assume_role(home_sdk(&server.uri()).await, &role)
        .await
        .expect("assume the role");
    let seen = connect_and_send(&sdk, &c, &server).await;
    // One AssumeRole for the whole start: the credentials checked at start
    // are the ones the first call uses.
    assert_eq!(
        operations(&seen),
        [
            "sts",
            "AmazonSQS.GetQueueAttributes",
            "AmazonSQS.SendMessageBatch"
        ],
        "{client}"
    );
    let sts = &seen[0];
    assert_eq!(
        (
            sts.access_key.as_str(),
            sts.region.as_str(),
            sts.service.as_str()
        ),
        ("AKIDFUNCTION", "us-east-1", "sts"),
        "STS is called as the function, in its region"
    );
    for part in [
        "RoleArn=arn%3Aaws%3Aiam%3A%3A210987654321%3Arole%2Fsqs-sender",
        "RoleSessionName=orders-forwarder",
        "ExternalId=ext-4711",
    ] {
        assert!(sts.body.contains(part), "{part} in {}", sts.body);
    }
    for s in &seen[1..] {
        assert_eq!(
            (
                s.access_key.as_str(),
                s.session_token.as_deref(),
                s.region.as_str()
            ),
            ("ASIAROLEONE", Some("token-of-ASIAROLEONE"), "eu-west-1"),
            "{}",
            s.operation
        );
    }
}

#[tokio::test]
async fn assumed_credentials_are_renewed_before_they_expire() {
    let server = MockServer::start().await;
    fake_sqs(&server).await;
    // The first credentials expire within the renewal window (30 s before
    // expiry, `direct::credentials::REFRESH_BEFORE`; the SDK cache's own is
    // 10 to 15 s); the next ones last an hour.
    fake_sts(&server, |n| {
        if n == 0 {
            ("ASIASHORT", SystemTime::now() + Duration::from_secs(1))
        } else {
            ("ASIALONG", SystemTime::now() + Duration::from_secs(3600))
        }
    })
    .await;
    let c = role_config("https://sqs.eu-west-1.amazonaws.com/210987654321/orders");
    let role = c.assume_role.clone().expect("a role");
    let sdk = assume_role(home_sdk(&server.uri()).await, &role)
        .await
        .expect("assume the role");
    let seen = connect_and_send(&sdk, &c, &server).await;
    let signed: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.operation.as_str(), s.access_key.as_str()))
        .collect();
    // Renewed once, before any SQS call signs with the expiring ones, and
    // shared by the SDK client (GetQueueAttributes) and the direct client
    // (SendMessageBatch): no third AssumeRole.
    assert_eq!(
        signed,
        [
            ("sts", "AKIDFUNCTION"),
            ("sts", "AKIDFUNCTION"),
            ("AmazonSQS.GetQueueAttributes", "ASIALONG"),
            ("AmazonSQS.SendMessageBatch", "ASIALONG"),
        ]
    );
}

#[tokio::test]
async fn a_role_that_cannot_be_assumed_stops_the_start_naming_it() {
    let server = MockServer::start().await;
    fake_sqs(&server).await;
    Mock::given(method("POST"))
        .and(body_string_contains("Action=AssumeRole"))
        .respond_with(
            ResponseTemplate::new(403)
                .insert_header("content-type", "text/xml")
                .set_body_string(format!(
                    r#"<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error>
    <Type>Sender</Type>
    <Code>AccessDenied</Code>
    <Message>User: arn:aws:sts::123456789012:assumed-role/fn/fn is not authorized to perform: sts:AssumeRole on resource: {ROLE}</Message>
  </Error>
  <RequestId>r-2</RequestId>
</ErrorResponse>"#
                )),
        )
        .mount(&server)
        .await;
    let c = role_config("https://sqs.eu-west-1.amazonaws.com/210987654321/orders");
    let role = c.assume_role.clone().expect("a role");
    let err = assume_role(home_sdk(&server.uri()).await, &role)
        .await
        .expect_err("the role cannot be assumed");
    match &err {
        SetupError::AssumeRole { role, message } => {
            assert_eq!(role, ROLE);
            assert!(message.contains("AccessDenied"), "{message}");
        }
        other => panic!("expected AssumeRole, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("cannot assume role {ROLE} (ASSUME_ROLE_ARN): ")),
        "{text}"
    );
    assert!(text.contains("sts:AssumeRole"), "{text}");
    // STS was asked (no retries for a refusal) and SQS never was.
    assert_eq!(operations(&received(&server).await), ["sts"]);
}
