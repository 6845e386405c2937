//! What the replay's end-to-end tests share: the local Kinesis, on-failure
//! entries as Lambda writes them, and the built binary run with the
//! variables a deployment gives it.

use std::process::{Command, Output};

use aws_sdk_kinesis::primitives::Blob;
use aws_sdk_sqs::types::QueueAttributeName;
use forwarder_e2e::{client, endpoint};
use serde_json::json;

/// A Kinesis client for the local endpoint.
pub fn kinesis() -> aws_sdk_kinesis::Client {
    let conf = aws_sdk_kinesis::Config::builder()
        .behavior_version(aws_sdk_kinesis::config::BehaviorVersion::latest())
        .region(aws_sdk_kinesis::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_kinesis::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .endpoint_url(endpoint())
        .build();
    aws_sdk_kinesis::Client::from_conf(conf)
}

/// `base` made unique (streams, buckets and queues are shared).
pub fn unique(base: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{base}-{nanos}")
}

/// A one-shard stream; its ARN.
pub async fn stream(k: &aws_sdk_kinesis::Client, base: &str) -> String {
    let name = unique(base);
    k.create_stream()
        .stream_name(&name)
        .shard_count(1)
        .send()
        .await
        .expect("create stream");
    let d = k
        .describe_stream_summary()
        .stream_name(&name)
        .send()
        .await
        .expect("describe stream");
    d.stream_description_summary()
        .expect("summary")
        .stream_arn()
        .to_owned()
}

/// Put records (partition key, data) in order; their sequence numbers.
pub async fn put(
    k: &aws_sdk_kinesis::Client,
    arn: &str,
    records: &[(String, Vec<u8>)],
) -> Vec<String> {
    let mut seqs = Vec::new();
    for (pk, data) in records {
        let out = k
            .put_record()
            .stream_arn(arn)
            .partition_key(pk)
            .data(Blob::new(data.clone()))
            .send()
            .await
            .expect("put record");
        seqs.push(out.sequence_number().to_owned());
    }
    seqs
}

/// The shard of a one-shard stream.
pub const SHARD: &str = "shardId-000000000000";

/// The on-failure record Lambda writes for a range it gives up on.
pub fn batch_info(arn: &str, shard: &str, start: &str, end: &str, size: usize) -> String {
    json!({
        "requestContext": {
            "requestId": "c9b8fa9f-5a7f-4e0f-af9c-0c604cde93a5",
            "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:kinesis-to-sqs",
            "condition": "RetryAttemptsExhausted",
            "approximateInvokeCount": 11
        },
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "version": "1.0",
        "timestamp": "2026-11-30T10:38:06.021Z",
        "KinesisBatchInfo": {
            "shardId": shard,
            "startSequenceNumber": start,
            "endSequenceNumber": end,
            "approximateArrivalOfFirstRecord": "2026-11-30T10:38:04.835Z",
            "approximateArrivalOfLastRecord": "2026-11-30T10:38:05.580Z",
            "batchSize": size,
            "streamArn": arn
        }
    })
    .to_string()
}

/// Put `body` into the on-failure queue, as Lambda does.
pub async fn send_entry(failure_queue: &str, body: &str) {
    client()
        .send_message()
        .queue_url(failure_queue)
        .message_body(body)
        .send()
        .await
        .expect("entry into the on-failure queue");
}

/// Visible and in-flight messages of a queue.
pub async fn depth(url: &str) -> (usize, usize) {
    let out = client()
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .expect("queue attributes");
    let get = |name| {
        out.attributes()
            .and_then(|a| a.get(&name))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (
        get(QueueAttributeName::ApproximateNumberOfMessages),
        get(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
    )
}

/// The binary with the variables a deployment gives it, and nothing else
/// from this process's environment.
pub fn replay_command(target: &str, failure_queue: &str, extra: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_replay"));
    cmd.env_clear()
        .env("AWS_ENDPOINT_URL", endpoint())
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("QUEUE_URL", target)
        .env("FAILURE_QUEUE_URL", failure_queue)
        .env("RETRY_BASE_DELAY_MS", "1")
        .env("RETRY_MAX_DELAY_MS", "5")
        .env("RUST_LOG", "info");
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd
}

/// Run the binary to its end: its exit status and standard output (both
/// outputs are echoed into the test log).
pub fn replay(
    target: &str,
    failure_queue: &str,
    args: &[&str],
    extra: &[(&str, &str)],
) -> (Output, String) {
    let out = replay_command(target, failure_queue, extra)
        .args(args)
        .output()
        .expect("run the replay binary");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!(
        "--- replay {args:?} stdout:\n{stdout}--- stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out, stdout)
}
