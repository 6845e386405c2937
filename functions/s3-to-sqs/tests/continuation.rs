//! End-to-end: continuation in lines mode. The built function runs as
//! Lambda runs it (the local runtime API), reads objects from the local S3
//! (moto), sends to a recording SQS endpoint, and hands objects' rests on
//! through a stand-in for Lambda's `Invoke` API; the test plays Lambda's
//! asynchronous invocation (each queued event run in turn, a failed one
//! retried twice, then given to the on-failure destination).
//!
//! Needs the local S3 endpoint (`SQS_TEST_ENDPOINT`, which also serves S3).

mod continuation {
    pub mod stand_ins;
}

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use continuation::stand_ins::{LambdaApi, QueueRecorder, Recorded, run_chain};
use serde_json::{Value, json};
use sqs_forwarder::test_support::runtime_api::{FunctionProcess, Posted, RuntimeApi, init_error};

const BINARY: &str = env!("CARGO_BIN_EXE_s3-to-sqs");

fn endpoint() -> String {
    std::env::var("SQS_TEST_ENDPOINT").unwrap_or_else(|_| {
        panic!("SQS_TEST_ENDPOINT is not set: run the tests with scripts/test.sh, or start scripts/local-sqs.sh and export SQS_TEST_ENDPOINT")
    })
}

fn s3() -> aws_sdk_s3::Client {
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .endpoint_url(endpoint())
        .force_path_style(true)
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

async fn bucket(s3: &aws_sdk_s3::Client, base: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let name = format!("{base}-{nanos}");
    s3.create_bucket()
        .bucket(&name)
        .send()
        .await
        .expect("create bucket");
    name
}

/// Put an object; its ETag.
async fn put(s3: &aws_sdk_s3::Client, bucket: &str, key: &str, data: Vec<u8>) -> String {
    let out = s3
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(data))
        .send()
        .await
        .expect("put object");
    out.e_tag().expect("etag").trim_matches('"').to_owned()
}

fn notification(bucket: &str, key: &str, etag: &str) -> Value {
    json!({"Records": [{
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": "us-east-1",
        "eventTime": "2026-12-05T10:00:00.000Z",
        "eventName": "ObjectCreated:Put",
        "userIdentity": {"principalId": "AWS:e2e"},
        "requestParameters": {"sourceIPAddress": "127.0.0.1"},
        "responseElements": {"x-amz-request-id": "E2E"},
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": "e2e",
            "bucket": {"name": bucket, "arn": format!("arn:aws:s3:::{bucket}")},
            "object": {"key": key, "size": 1, "eTag": etag, "sequencer": "0A1B2C"}
        }
    }]})
}

/// Lines `1..=n`, each its own number.
fn numbered(n: u64) -> Vec<u8> {
    let mut text = Vec::with_capacity((n * 8) as usize);
    for i in 1..=n {
        writeln!(text, "{i}").expect("write");
    }
    text
}

/// The function, continuing objects of `bucket`, sending to `queue`,
/// handing over through `lambda`.
fn function(
    api: &RuntimeApi,
    queue: &QueueRecorder,
    lambda: &LambdaApi,
    bucket: &str,
    extra: &[(&str, &str)],
) -> FunctionProcess {
    function_to(
        api,
        &queue.endpoint(),
        &queue.queue_url(),
        lambda,
        bucket,
        extra,
    )
}

/// The function, continuing objects of `bucket`, sending to the queue at
/// `url` through the SQS endpoint `sqs`.
fn function_to(
    api: &RuntimeApi,
    sqs: &str,
    url: &str,
    lambda: &LambdaApi,
    bucket: &str,
    extra: &[(&str, &str)],
) -> FunctionProcess {
    let (s3, invoke) = (endpoint(), lambda.endpoint());
    let mut env = vec![
        ("QUEUE_URL", url),
        ("AWS_ENDPOINT_URL", s3.as_str()),
        ("AWS_ENDPOINT_URL_S3", s3.as_str()),
        ("AWS_ENDPOINT_URL_SQS", sqs),
        ("AWS_ENDPOINT_URL_LAMBDA", invoke.as_str()),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
        ("S3_FORCE_PATH_STYLE", "true"),
        ("MODE", "lines"),
        ("CONTINUATION", "true"),
        ("CONTINUATION_BUCKETS", bucket),
        ("CONTINUATION_MARGIN_MS", "1000"),
    ];
    env.extend_from_slice(extra);
    FunctionProcess::spawn(BINARY, api, &env)
}

/// An object in the local S3 and the built function set to continue it:
/// the recording queue (FIFO or not), the stand-in Invoke API (refusing its
/// first `fail_first` hand-overs), the runtime API the function polls.
struct Rig {
    s3: aws_sdk_s3::Client,
    bucket: String,
    etag: String,
    queue: QueueRecorder,
    lambda: LambdaApi,
    api: RuntimeApi,
    _function: FunctionProcess,
}

impl Rig {
    /// `data` put as `key` in a new bucket named from `base`, and the
    /// function started with `extra` variables.
    async fn start(
        base: &str,
        key: &str,
        data: Vec<u8>,
        fifo: bool,
        fail_first: usize,
        extra: &[(&str, &str)],
    ) -> Rig {
        let s3 = s3();
        let bucket = bucket(&s3, base).await;
        let etag = put(&s3, &bucket, key, data).await;
        let queue = QueueRecorder::start(fifo).await;
        let lambda = LambdaApi::start(fail_first).await;
        let api = RuntimeApi::start().await;
        let function = function(&api, &queue, &lambda, &bucket, extra);
        Rig {
            s3,
            bucket,
            etag,
            queue,
            lambda,
            api,
            _function: function,
        }
    }
}

/// Each line number kept, with how many times.
fn counts(messages: &[Recorded]) -> HashMap<u64, usize> {
    let mut counts = HashMap::new();
    for m in messages {
        assert_eq!(
            m.body,
            m.line.to_string(),
            "a line's body and its `line` attribute agree"
        );
        *counts.entry(m.line).or_insert(0) += 1;
    }
    counts
}

/// The continuation events of a chain, in order.
fn continuations(chain: &continuation::stand_ins::Chain) -> Vec<Value> {
    chain
        .invocations
        .iter()
        .map(|(e, _)| e["s3ToSqsContinuation"].clone())
        .filter(|c| !c.is_null())
        .collect()
}

const MILLION: u64 = 1_000_000;

/// A million lines through a chain: every step a short timeout (4 s, the
/// hand-over 2 s before it) and at most 200,000 lines, so at least five.
async fn million(fifo: bool) -> (QueueRecorder, continuation::stand_ins::Chain) {
    let rig = Rig::start(
        "e2e-chain-million",
        "big.log",
        numbered(MILLION),
        fifo,
        0,
        &[
            ("CONTINUATION_MARGIN_MS", "2000"),
            ("CONTINUATION_AFTER_LINES", "200000"),
            ("LINES_PER_SEND", "1000"),
            // Ten lines a call on the FIFO queue too (one group, in order).
            ("FIFO_ORDER", "batched"),
        ],
    )
    .await;
    let started = std::time::Instant::now();
    let chain = run_chain(
        &rig.api,
        &rig.lambda,
        notification(&rig.bucket, "big.log", &rig.etag),
        Duration::from_secs(4),
    )
    .await;
    let steps = continuations(&chain);
    eprintln!(
        "a million lines ({}): {} invocations, {:?}; steps start at lines {:?}",
        if fifo { "FIFO" } else { "standard" },
        chain.invocations.len(),
        started.elapsed(),
        steps
            .iter()
            .map(|c| c["line"].as_u64().unwrap_or(0))
            .collect::<Vec<_>>()
    );
    assert!(chain.on_failure.is_none(), "{:?}", chain.invocations.last());
    assert!(
        chain.steps() >= 5,
        "a chain of at least five invocations: {}",
        chain.steps()
    );
    for (i, c) in steps.iter().enumerate() {
        assert_eq!(c["step"].as_u64(), Some(i as u64 + 1), "{c}");
        assert_eq!(
            c["etag"].as_str(),
            Some(rig.etag.as_str()),
            "pinned to the first step's ETag"
        );
    }
    (rig.queue, chain)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_million_lines_reach_a_fifo_queue_exactly_once_through_a_chain() {
    let (queue, chain) = million(true).await;
    let messages = queue.messages();
    assert!(
        messages.iter().all(|m| m.dedup.is_some()),
        "FIFO ids on every line"
    );
    let counts = counts(&messages);
    assert_eq!(counts.len() as u64, MILLION, "every line");
    assert!(counts.values().all(|&n| n == 1), "no line twice");
    assert!((1..=MILLION).all(|l| counts.contains_key(&l)));
    let retried = chain.invocations.len() - chain.steps();
    eprintln!(
        "FIFO: {} duplicates deduplicated, {retried} failed attempts",
        queue.duplicates()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_million_lines_reach_a_standard_queue_at_least_once_through_a_chain() {
    let (queue, chain) = million(false).await;
    let messages = queue.messages();
    let counts = counts(&messages);
    assert!(
        (1..=MILLION).all(|l| counts.contains_key(&l)),
        "every line at least once"
    );
    let again = messages.len() as u64 - MILLION;
    eprintln!(
        "standard: {} messages for {MILLION} lines ({again} again, from {} failed attempts)",
        messages.len(),
        chain.invocations.len() - chain.steps()
    );
    if chain.invocations.len() == chain.steps() {
        assert_eq!(again, 0, "without a failed step, no line twice");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gzip_object_is_continued_by_decompressing_and_skipping() {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&numbered(1000)).expect("gzip");
    let rig = Rig::start(
        "e2e-chain-gzip",
        "app.log.gz",
        enc.finish().expect("gzip"),
        true,
        0,
        &[("CONTINUATION_AFTER_LINES", "300")],
    )
    .await;
    let chain = run_chain(
        &rig.api,
        &rig.lambda,
        notification(&rig.bucket, "app.log.gz", &rig.etag),
        Duration::from_secs(60),
    )
    .await;
    assert!(chain.on_failure.is_none(), "{:?}", chain.invocations);
    assert_eq!(chain.steps(), 4, "300 + 300 + 300 + 100 lines");
    let starts: Vec<u64> = continuations(&chain)
        .iter()
        .map(|c| c["line"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(starts, [301, 601, 901]);
    let lines: Vec<u64> = rig.queue.messages().iter().map(|m| m.line).collect();
    assert_eq!(
        lines,
        (1..=1000).collect::<Vec<_>>(),
        "every line once, in order"
    );
    let _ = counts(&rig.queue.messages());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_object_replaced_mid_chain_stops_the_chain_named() {
    let rig = Rig::start(
        "e2e-chain-replaced",
        "a.log",
        numbered(30),
        true,
        0,
        &[("CONTINUATION_AFTER_LINES", "10")],
    )
    .await;

    let first = rig
        .api
        .invoke(&notification(&rig.bucket, "a.log", &rig.etag))
        .await;
    assert_eq!(first.response()["continued"], 1, "{first:?}");
    // Replaced before the next step runs.
    let newer = put(&rig.s3, &rig.bucket, "a.log", b"new 1\nnew 2\n".to_vec()).await;
    assert_ne!(newer, rig.etag);
    let queued = rig.lambda.payloads().await;
    assert_eq!(queued.len(), 1);
    let chain = run_chain(
        &rig.api,
        &rig.lambda,
        queued[0].clone(),
        Duration::from_secs(60),
    )
    .await;

    // Every attempt fails, naming the chain, the step and the change.
    assert_eq!(
        chain.invocations.len(),
        3,
        "the first attempt and Lambda's two retries"
    );
    for (_, posted) in &chain.invocations {
        let e = posted.error();
        assert_eq!(e.error_type, "S3ToSqs.NotForwarded", "{posted:?}");
        assert!(
            e.error_message.contains("step 1 (from line 11")
                && e.error_message.contains("ObjectChanged")
                && e.error_message.contains(&rig.etag),
            "{}",
            e.error_message
        );
    }
    // The on-failure destination gets the step's event, offset included.
    let failed = chain.on_failure.expect("on-failure")["s3ToSqsContinuation"].clone();
    assert_eq!(failed["line"], 11);
    assert_eq!(failed["offset"], numbered(10).len());
    // Only the first upload's first ten lines: versions never mixed.
    let lines: Vec<u64> = rig.queue.messages().iter().map(|m| m.line).collect();
    assert_eq!(lines, (1..=10).collect::<Vec<_>>());
    assert!(
        rig.queue
            .messages()
            .iter()
            .all(|m| !m.body.starts_with("new"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_step_is_retried_and_its_lines_deduplicate_on_fifo() {
    // The first hand-over is refused: that step fails, and is retried.
    let rig = Rig::start(
        "e2e-chain-retried",
        "r.log",
        numbered(35),
        true,
        1,
        &[("CONTINUATION_AFTER_LINES", "10")],
    )
    .await;
    let chain = run_chain(
        &rig.api,
        &rig.lambda,
        notification(&rig.bucket, "r.log", &rig.etag),
        Duration::from_secs(60),
    )
    .await;
    assert!(chain.on_failure.is_none());
    let (event, posted) = &chain.invocations[0];
    assert!(event.get("Records").is_some());
    let e = posted.error();
    assert_eq!(e.error_type, "S3ToSqs.NotForwarded");
    assert!(
        e.error_message.contains("could not be handed on")
            && e.error_message.contains("AccessDenied"),
        "{}",
        e.error_message
    );
    assert_eq!(
        chain.invocations.len(),
        5,
        "the failed attempt, its retry, and three more steps"
    );
    assert_eq!(chain.steps(), 4);
    let counts = counts(&rig.queue.messages());
    assert_eq!(counts.len(), 35);
    assert!(
        counts.values().all(|&n| n == 1),
        "the retried lines deduplicated"
    );
    assert_eq!(
        rig.queue.duplicates(),
        10,
        "the retry sent its ten lines again, same ids"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn continuation_events_are_refused_when_malformed_or_for_another_bucket() {
    let rig = Rig::start(
        "e2e-chain-refused",
        "a.log",
        numbered(30),
        false,
        0,
        &[("CONTINUATION_AFTER_LINES", "10")],
    )
    .await;
    let first = rig
        .api
        .invoke(&notification(&rig.bucket, "a.log", &rig.etag))
        .await;
    assert_eq!(first.response()["continued"], 1, "{first:?}");
    let good = rig.lambda.payloads().await[0].clone();

    let refused = |posted: &Posted, words: &[&str]| {
        let e = posted.error();
        assert_eq!(e.error_type, "S3ToSqs.InvalidEvent", "{posted:?}");
        for w in words {
            assert!(e.error_message.contains(w), "{w:?} in {}", e.error_message);
        }
    };
    let mut other = good.clone();
    other["s3ToSqsContinuation"]["bucket"] = json!("someone-elses-bucket");
    refused(
        &rig.api.invoke(&other).await,
        &[
            "refused event",
            "someone-elses-bucket",
            "CONTINUATION_BUCKETS",
        ],
    );
    let mut bad = good.clone();
    bad["s3ToSqsContinuation"]["offset"] = json!("twelve");
    refused(
        &rig.api.invoke(&bad).await,
        &["continuation event", "offset"],
    );
    let mut bad = good.clone();
    bad["s3ToSqsContinuation"]["step"] = json!(0);
    refused(&rig.api.invoke(&bad).await, &["step must be 1 or more"]);
    refused(
        &rig.api.invoke(&json!({"s3ToSqsContinuation": []})).await,
        &["continuation event"],
    );
    assert_eq!(
        rig.queue.messages().len(),
        10,
        "nothing sent for a refused event"
    );
    // The good one still goes on.
    let next = rig.api.invoke(&good).await;
    assert_eq!(next.response()["linesRead"], 10, "{next:?}");

    // A start with continuation on and no bucket to allow fails, named.
    let (error, _) = init_error(
        BINARY,
        &[
            ("QUEUE_URL", "http://127.0.0.1:9/1/q"),
            ("MODE", "lines"),
            ("CONTINUATION", "true"),
        ],
    )
    .await;
    assert_eq!(error.error_type, "S3ToSqs.InvalidConfiguration");
    assert!(
        error.error_message.contains("CONTINUATION_BUCKETS"),
        "{}",
        error.error_message
    );
}

fn sqs() -> aws_sdk_sqs::Client {
    let conf = aws_sdk_sqs::Config::builder()
        .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
        .region(aws_sdk_sqs::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .endpoint_url(endpoint())
        .build();
    aws_sdk_sqs::Client::from_conf(conf)
}

/// Every message of `url`, received and deleted until the queue answers
/// empty three times in a row: each message's `line` attribute.
async fn drain_lines(sqs: &aws_sdk_sqs::Client, url: &str) -> Vec<u64> {
    let mut lines = Vec::new();
    let mut empty = 0;
    while empty < 3 {
        let got = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .message_attribute_names("All")
            .send()
            .await
            .expect("receive");
        let messages = got.messages();
        if messages.is_empty() {
            empty += 1;
            continue;
        }
        empty = 0;
        let mut delete = sqs.delete_message_batch().queue_url(url);
        for (i, m) in messages.iter().enumerate() {
            let line = m
                .message_attributes()
                .and_then(|a| a.get("line"))
                .and_then(|v| v.string_value())
                .and_then(|v| v.parse::<u64>().ok())
                .expect("a line attribute");
            assert_eq!(
                m.body(),
                Some(line.to_string().as_str()),
                "body and line agree"
            );
            lines.push(line);
            delete = delete.entries(
                aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .receipt_handle(m.receipt_handle().unwrap_or_default())
                    .build()
                    .expect("entry"),
            );
        }
        delete.send().await.expect("delete");
    }
    lines
}

/// The same chain against the local SQS (moto) rather than the recording
/// endpoint: a FIFO queue, five steps of 100 lines, the first hand-over
/// refused so that step is retried and sends its lines again. What the
/// queue holds afterwards, read back: every line once (SQS's deduplication
/// by the lines' ids, which the chain keeps), in order.
#[tokio::test(flavor = "multi_thread")]
async fn a_chain_with_a_retried_step_leaves_every_line_once_in_the_local_fifo_queue() {
    let s3 = s3();
    let b = bucket(&s3, "e2e-chain-moto").await;
    let etag = put(&s3, &b, "m.log", numbered(500)).await;
    let sqs = sqs();
    let url = sqs
        .create_queue()
        .queue_name(format!("{b}.fifo"))
        .attributes(aws_sdk_sqs::types::QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .expect("create queue")
        .queue_url()
        .expect("queue url")
        .to_owned();
    let lambda = LambdaApi::start(1).await;
    let api = RuntimeApi::start().await;
    let _f = function_to(
        &api,
        &endpoint(),
        &url,
        &lambda,
        &b,
        &[("CONTINUATION_AFTER_LINES", "100")],
    );
    let chain = run_chain(
        &api,
        &lambda,
        notification(&b, "m.log", &etag),
        Duration::from_secs(120),
    )
    .await;
    assert!(chain.on_failure.is_none(), "{:?}", chain.invocations.last());
    assert_eq!(chain.steps(), 5, "five steps of 100 lines");
    assert_eq!(
        chain.invocations.len(),
        6,
        "the first step failed once (its hand-over refused) and was retried"
    );
    let lines = drain_lines(&sqs, &url).await;
    assert_eq!(
        lines.len(),
        500,
        "every line once, the retry's copies dropped by SQS"
    );
    assert_eq!(
        lines,
        (1..=500).collect::<Vec<u64>>(),
        "in the object's order"
    );
}
