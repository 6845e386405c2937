//! End-to-end: the claim check (`OVERSIZE_POLICY=offload`) against the local
//! SQS and S3 (moto serves both), read back by a consumer written with the
//! official Python `amazon-sqs-extended-client` (tests/extended_client_consumer.py,
//! installed into .local/venv by scripts/local-sqs.sh).
//!
//! A 5 MiB Kinesis record and a 2 MiB HTTP body go through the real
//! functions' handlers; their pointers are checked in SQS as they lie there,
//! then the Python consumer receives the original payloads, compared here
//! byte for byte. Offload failures (a missing bucket, access denied) come
//! back as failed-retryable outcomes, and a redelivery after the fix loses
//! nothing.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use apigw_to_sqs::Handler;
use apigw_to_sqs::lambda_http::http::StatusCode;
use apigw_to_sqs::lambda_http::{Body, Request, request};
use aws_config::BehaviorVersion;
use aws_sdk_s3::config::{Credentials, Region};
use base64::Engine as _;
use forwarder_e2e::{attributes, client, create_queue, endpoint};
use kinesis_to_sqs::checkpoint::reported;
use kinesis_to_sqs::event::KinesisEvent;
use serde_json::{Value, json};
use sqs_forwarder::send::offload::{POINTER_CLASS, S3PayloadStore};
use sqs_forwarder::setup::startup::{connect_sdk, connect_with};
use sqs_forwarder::{Config, Env, Forwarder, SqsTransport};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
const MARKER: &str = "sqs-forwarder.encoding";
const SHARD: &str = "shardId-000000000007";

fn unique(base: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{base}-{nanos}")
}

/// AWS settings for the local endpoint: SQS and S3 both.
async fn local_sdk() -> aws_config::SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .endpoint_url(endpoint())
        .load()
        .await
}

fn s3_for(sdk: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    sqs_forwarder::send::offload::s3_client(sdk, true)
}

async fn create_bucket(s3: &aws_sdk_s3::Client, name: &str) {
    s3.create_bucket()
        .bucket(name)
        .send()
        .await
        .expect("create a bucket on the local endpoint");
}

fn config(url: &str, bucket: &str, extra: &[(&str, &str)]) -> Config {
    let mut map: HashMap<String, String> = [
        ("QUEUE_URL", url),
        ("OVERSIZE_POLICY", "offload"),
        ("OFFLOAD_BUCKET", bucket),
        ("OFFLOAD_FORCE_PATH_STYLE", "true"),
        ("RETRY_MAX_ATTEMPTS", "3"),
        ("RETRY_BASE_DELAY_MS", "1"),
        ("RETRY_MAX_DELAY_MS", "5"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (k, v) in extra {
        map.insert(k.to_string(), v.to_string());
    }
    Config::from_lookup(|k| map.get(k).cloned()).expect("valid test configuration")
}

/// The forwarder as a function's cold start builds it: the S3 payload store
/// comes from the configuration.
async fn forwarder(url: &str, bucket: &str, extra: &[(&str, &str)]) -> Forwarder<SqsTransport> {
    connect_sdk(
        &local_sdk().await,
        &config(url, bucket, extra),
        sqs_forwarder::GroupIds::FromSource,
    )
    .await
    .expect("connect to the local queue")
}

fn seq(i: usize) -> String {
    format!("49590338271490256608559692538361571095921575989{i:09}")
}

fn kinesis_event(records: &[&[u8]]) -> KinesisEvent {
    let records: Vec<Value> = records
        .iter()
        .enumerate()
        .map(|(i, data)| {
            json!({
                "kinesis": {
                    "kinesisSchemaVersion": "1.0",
                    "partitionKey": "pk",
                    "sequenceNumber": seq(i),
                    "data": B64.encode(data),
                    "approximateArrivalTimestamp": 1_764_410_000.0
                },
                "eventSource": "aws:kinesis",
                "eventVersion": "1.0",
                "eventID": format!("{SHARD}:{}", seq(i)),
                "eventName": "aws:kinesis:record",
                "invokeIdentityArn": "arn:aws:iam::123456789012:role/r",
                "awsRegion": "us-east-1",
                "eventSourceARN": "arn:aws:kinesis:us-east-1:123456789012:stream/offload"
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).expect("a Kinesis event")
}

/// `n` bytes that are not UTF-8 text (a xorshift stream), so the forwarder
/// base64-encodes them before they go to S3.
fn binary(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(n);
    out
}

/// `n` bytes of UTF-8 text with multi-byte characters.
fn text(n: usize) -> String {
    let unit = "offload ✓ claim-check — Ünïcödé payload 🚚\n";
    let mut s = unit.repeat(n / unit.len() + 1);
    while s.len() > n {
        s.pop();
    }
    s
}

/// An HTTP API request posting `body` as text/plain, as Lambda hands it over.
fn http_request(body: &str) -> Request {
    let path = format!(
        "{}/../events/apigw-url-single-text.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("sample")).expect("JSON");
    v["body"] = Value::String(body.to_owned());
    v["headers"]["content-length"] = Value::String(body.len().to_string());
    request::from_str(&v.to_string()).expect("a request")
}

async fn http_handler(forwarder: Forwarder<SqsTransport>) -> Handler<SqsTransport> {
    let settings = apigw_to_sqs::Settings::from_env(&Env::from_pairs(&[])).expect("settings");
    Handler::new(settings, forwarder, std::time::Duration::ZERO)
}

fn response_json(body: &Body) -> Value {
    match body {
        Body::Text(t) => serde_json::from_str(t).expect("a JSON answer"),
        other => panic!("a text body, not {other:?}"),
    }
}

/// A message as it lies in SQS (read with the plain SDK, then made visible
/// again for the consumer).
struct Raw {
    body: String,
    attributes: HashMap<String, (String, Vec<u8>)>,
}

async fn peek(url: &str, expected: usize) -> Vec<Raw> {
    let sqs = client();
    let mut got = Vec::new();
    let mut handles = Vec::new();
    let mut empty = 0;
    while got.len() < expected && empty < 3 {
        let out = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .message_attribute_names("All")
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive");
        if out.messages().is_empty() {
            empty += 1;
        }
        for m in out.messages() {
            got.push(Raw {
                body: m.body().unwrap_or_default().to_owned(),
                attributes: attributes(m),
            });
            handles.push(m.receipt_handle().expect("handle").to_owned());
        }
    }
    for handle in handles {
        sqs.change_message_visibility()
            .queue_url(url)
            .receipt_handle(handle)
            .visibility_timeout(0)
            .send()
            .await
            .expect("make visible again");
    }
    got
}

/// The pointer's bucket and key, after checking its format.
fn pointer(body: &str) -> Option<(String, String)> {
    let v: Value = serde_json::from_str(body).ok()?;
    let a = v.as_array()?;
    (a.len() == 2 && a[0] == POINTER_CLASS).then(|| {
        (
            a[1]["s3BucketName"].as_str().unwrap_or("").to_owned(),
            a[1]["s3Key"].as_str().unwrap_or("").to_owned(),
        )
    })
}

/// What the Python consumer received.
#[derive(Debug)]
struct Consumed {
    bytes: Vec<u8>,
    attributes: HashMap<String, String>,
    /// The library took it for an offloaded message and fetched it from S3.
    offloaded: bool,
}

/// Run the Extended Client consumer until it has `count` messages.
async fn consume(url: &str, bucket: &str, count: usize) -> Vec<Consumed> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = root.join(".local/venv/bin/python");
    let script = root.join("tests/extended_client_consumer.py");
    let out_dir = std::env::temp_dir().join(unique("sqs-forwarder-offload"));
    std::fs::create_dir_all(&out_dir).expect("a temporary folder");
    let args = [
        endpoint(),
        url.to_owned(),
        bucket.to_owned(),
        count.to_string(),
        out_dir.display().to_string(),
    ];
    let output = tokio::task::spawn_blocking(move || {
        Command::new(&python).arg(&script).args(args).output()
    })
    .await
    .expect("join")
    .unwrap_or_else(|e| {
        panic!("cannot run .local/venv/bin/python ({e}): run scripts/local-sqs.sh start, which installs moto and amazon-sqs-extended-client there")
    });
    assert!(
        output.status.success(),
        "the Extended Client consumer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let consumed = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("a JSON line");
            let file = v["file"].as_str().expect("file");
            Consumed {
                bytes: std::fs::read(file).expect("the body file"),
                attributes: serde_json::from_value(v["attributes"].clone()).expect("attributes"),
                offloaded: v["offloaded"].as_bool().expect("offloaded"),
            }
        })
        .collect();
    let _ = std::fs::remove_dir_all(&out_dir);
    consumed
}

#[tokio::test(flavor = "multi_thread")]
async fn a_5_mib_kinesis_record_reaches_an_extended_client_consumer_byte_for_byte() {
    let sdk = local_sdk().await;
    let s3 = s3_for(&sdk);
    let bucket = unique("offload-kinesis");
    create_bucket(&s3, &bucket).await;
    let url = create_queue(&client(), "e2e-offload-kinesis", &[]).await;
    let fwd = forwarder(&url, &bucket, &[("OFFLOAD_KEY_PREFIX", "kinesis/")]).await;
    assert!(fwd.offloads());

    let big = binary(5 * 1024 * 1024);
    let event = kinesis_event(&[b"small before", &big, b"small after"]);
    let settings = kinesis_to_sqs::Settings::default();
    let response = kinesis_to_sqs::Handler::new(settings, fwd.clone())
        .handle(event, None)
        .await
        .expect("an answer");
    assert!(
        response.batch_item_failures.is_empty(),
        "{:?}",
        reported(&response)
    );

    // In SQS: two plain messages and one pointer, its payload in S3.
    let raw = peek(&url, 3).await;
    assert_eq!(raw.len(), 3);
    let pointers: Vec<&Raw> = raw.iter().filter(|m| pointer(&m.body).is_some()).collect();
    assert_eq!(pointers.len(), 1, "exactly the big record is offloaded");
    let p = pointers[0];
    let (b, key) = pointer(&p.body).expect("pointer");
    assert_eq!(b, bucket);
    assert!(key.starts_with("kinesis/"), "{key}");
    let stored_len = B64.encode(&big).len();
    assert_eq!(
        p.attributes["ExtendedPayloadSize"],
        ("Number".into(), stored_len.to_string().into_bytes())
    );
    assert_eq!(p.attributes[MARKER], ("String".into(), b"base64".to_vec()));
    assert!(p.attributes.contains_key("kinesis.sequenceNumber"));
    let object = s3
        .get_object()
        .bucket(&bucket)
        .key(&key)
        .send()
        .await
        .expect("the payload is in S3");
    let stored = object.body.collect().await.expect("read").into_bytes();
    assert_eq!(stored.len(), stored_len);

    // The official Python client hands the consumer the record's bytes.
    let consumed = consume(&url, &bucket, 3).await;
    assert_eq!(consumed.len(), 3);
    let offloaded: Vec<&Consumed> = consumed.iter().filter(|c| c.offloaded).collect();
    assert_eq!(offloaded.len(), 1);
    assert_eq!(offloaded[0].bytes.len(), big.len());
    assert!(offloaded[0].bytes == big, "the 5 MiB record, byte for byte");
    assert!(!offloaded[0].attributes.contains_key("ExtendedPayloadSize"));
    assert_eq!(
        offloaded[0].attributes["kinesis.partitionKey"], "pk",
        "the record's attributes ride along"
    );
    let mut small: Vec<&[u8]> = consumed
        .iter()
        .filter(|c| !c.offloaded)
        .map(|c| c.bytes.as_slice())
        .collect();
    small.sort();
    assert_eq!(small, [&b"small after"[..], &b"small before"[..]]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2_mib_http_body_reaches_an_extended_client_consumer_byte_for_byte() {
    let sdk = local_sdk().await;
    let bucket = unique("offload-http");
    create_bucket(&s3_for(&sdk), &bucket).await;
    let url = create_queue(&client(), "e2e-offload-http", &[]).await;
    // Consumers still at 256 KiB, and the legacy attribute name (Java's
    // default): the Python reader takes either.
    let fwd = forwarder(
        &url,
        &bucket,
        &[
            ("OFFLOAD_THRESHOLD_BYTES", "262144"),
            ("OFFLOAD_SIZE_ATTRIBUTE", "SQSLargePayloadSize"),
        ],
    )
    .await;
    let handler = http_handler(fwd).await;
    let body = text(2 * 1024 * 1024);
    let response = handler.handle(http_request(&body)).await;
    let answer = response_json(response.body());
    assert_eq!(response.status(), StatusCode::ACCEPTED, "{answer}");
    assert_eq!(answer["results"][0]["status"], "sent");

    let raw = peek(&url, 1).await;
    assert_eq!(raw.len(), 1);
    assert!(pointer(&raw[0].body).is_some(), "a pointer in SQS");
    assert_eq!(
        raw[0].attributes["SQSLargePayloadSize"],
        ("Number".into(), body.len().to_string().into_bytes())
    );
    assert!(!raw[0].attributes.contains_key(MARKER), "text stays text");

    let consumed = consume(&url, &bucket, 1).await;
    assert_eq!(consumed.len(), 1);
    assert!(consumed[0].offloaded);
    assert_eq!(consumed[0].bytes.len(), body.len());
    assert!(
        consumed[0].bytes == body.as_bytes(),
        "the 2 MiB body, byte for byte"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_bucket_fails_the_record_retryable_and_a_redelivery_loses_nothing() {
    let sdk = local_sdk().await;
    let s3 = s3_for(&sdk);
    let bucket = unique("offload-later");
    let url = create_queue(&client(), "e2e-offload-missing", &[]).await;
    let fwd = forwarder(&url, &bucket, &[]).await;
    let big = text(1_500_000);
    let records: [&[u8]; 2] = [b"small", big.as_bytes()];

    let response = kinesis_to_sqs::Handler::new(kinesis_to_sqs::Settings::default(), fwd.clone())
        .handle(kinesis_event(&records), None)
        .await
        .expect("an answer");
    assert_eq!(
        reported(&response),
        vec![seq(1)],
        "the big record comes back"
    );
    let raw = peek(&url, 2).await;
    assert_eq!(raw.len(), 1, "no pointer to a payload that is not stored");
    assert_eq!(raw[0].body, "small");

    // The bucket appears; Lambda delivers the batch again from the reported
    // record.
    create_bucket(&s3, &bucket).await;
    let response = kinesis_to_sqs::Handler::new(kinesis_to_sqs::Settings::default(), fwd.clone())
        .handle(kinesis_event(&records), None)
        .await
        .expect("an answer");
    assert!(response.batch_item_failures.is_empty());
    // At least once: "small" twice, the big record once.
    let consumed = consume(&url, &bucket, 3).await;
    assert_eq!(consumed.len(), 3);
    let offloaded: Vec<&Consumed> = consumed.iter().filter(|c| c.offloaded).collect();
    assert_eq!(offloaded.len(), 1);
    assert!(offloaded[0].bytes == big.as_bytes());
}

#[tokio::test(flavor = "multi_thread")]
async fn access_denied_is_a_retryable_failure_and_nothing_reaches_sqs() {
    // An S3 endpoint that denies every put, as S3 does without
    // s3:PutObject on the key.
    let denying = MockServer::start().await;
    Mock::given(method("PUT"))
        .respond_with(ResponseTemplate::new(403).set_body_raw(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>R1</RequestId><HostId>H1</HostId></Error>",
            "application/xml",
        ))
        .mount(&denying)
        .await;
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
            .endpoint_url(denying.uri())
            .force_path_style(true)
            .build(),
    );
    let url = create_queue(&client(), "e2e-offload-denied", &[]).await;
    let fwd = connect_with(
        client(),
        &config(&url, "denied-bucket", &[]),
        sqs_forwarder::GroupIds::FromSource,
    )
    .await
    .expect("connect")
    .with_payload_store(S3PayloadStore::new(s3, "denied-bucket"));
    let handler = http_handler(fwd).await;
    let response = handler.handle(http_request(&text(2 * 1024 * 1024))).await;
    let answer = response_json(response.body());
    assert_eq!(
        response.status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "{answer}"
    );
    let result = &answer["results"][0];
    assert_eq!(result["error"]["code"], "OffloadFailed", "{answer}");
    assert_eq!(result["error"]["retryable"], true);
    assert!(
        !denying
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty(),
        "the put was tried"
    );
    assert!(peek(&url, 1).await.is_empty(), "nothing reached SQS");
}
