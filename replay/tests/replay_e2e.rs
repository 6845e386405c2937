//! End-to-end: the `replay` binary against the local endpoint (moto: SQS,
//! Kinesis, S3). Entries in the on-failure queue come from real failed runs
//! of kinesis-to-sqs (its target denying every send), composed as Lambda
//! composes them; the replay reads the ranges back from the stream and sends
//! them through kinesis-to-sqs's own code.
//!
//! These tests live in the replay crate because Cargo gives a test the path
//! of a built binary (`CARGO_BIN_EXE_replay`) only in the binary's own
//! package; the shared helpers come from the end-to-end crate and
//! `common/`.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use aws_sdk_kinesis::types::ShardIteratorType;
use aws_sdk_sqs::types::MessageSystemAttributeName;
use base64::Engine as _;
use common::{
    SHARD, batch_info, depth, kinesis, put, replay, replay_command, send_entry, stream, unique,
};
use forwarder_e2e::{attributes, client, create_queue, drain, endpoint};
use kinesis_to_sqs::event::KinesisEvent;
use serde_json::{Value, json};
use sqs_forwarder::Config;
use sqs_forwarder::setup::startup::connect_with;
use sqs_forwarder::test_support::TestProxy;

mod common;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The shard's records as Lambda delivers them: a Kinesis event.
async fn lambda_event(
    k: &aws_sdk_kinesis::Client,
    arn: &str,
    from: usize,
    to: usize,
) -> KinesisEvent {
    let it = k
        .get_shard_iterator()
        .stream_arn(arn)
        .shard_id(SHARD)
        .shard_iterator_type(ShardIteratorType::TrimHorizon)
        .send()
        .await
        .expect("iterator");
    let out = k
        .get_records()
        .stream_arn(arn)
        .shard_iterator(it.shard_iterator().expect("iterator"))
        .send()
        .await
        .expect("records");
    let records: Vec<Value> = out.records()[from..to]
        .iter()
        .map(|r| {
            let t = r.approximate_arrival_timestamp().expect("arrival");
            json!({
                "kinesis": {
                    "kinesisSchemaVersion": "1.0",
                    "partitionKey": r.partition_key(),
                    "sequenceNumber": r.sequence_number(),
                    "data": B64.encode(r.data().as_ref()),
                    "approximateArrivalTimestamp": t.secs() as f64,
                },
                "eventSource": "aws:kinesis",
                "eventVersion": "1.0",
                "eventID": format!("{SHARD}:{}", r.sequence_number()),
                "eventName": "aws:kinesis:record",
                "invokeIdentityArn": "arn:aws:iam::123456789012:role/kinesis-to-sqs",
                "awsRegion": "us-east-1",
                "eventSourceARN": arn,
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).expect("a Kinesis event")
}

fn config(vars: &[(&str, &str)]) -> Config {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|k| map.get(k).cloned()).expect("valid test configuration")
}

/// An SQS that lets the forwarder start and then denies every send, as a
/// queue policy or a KMS grant that is missing does.
async fn denying_sqs() -> wiremock::MockServer {
    let server = wiremock::MockServer::start().await;
    let respond = |request: &wiremock::Request| {
        let target = request
            .headers
            .get("x-amz-target")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if target == "AmazonSQS.GetQueueAttributes" {
            wiremock::ResponseTemplate::new(200).set_body_raw(
                json!({"Attributes": {"MaximumMessageSize": "1048576"}}).to_string(),
                "application/x-amz-json-1.0",
            )
        } else {
            wiremock::ResponseTemplate::new(403)
                .insert_header("x-amzn-query-error", "AccessDenied;Sender")
                .set_body_raw(
                    json!({"__type": "com.amazonaws.sqs#AccessDenied",
                           "message": "User is not authorized to perform sqs:SendMessage"})
                    .to_string(),
                    "application/x-amz-json-1.0",
                )
        }
    };
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(respond)
        .mount(&server)
        .await;
    server
}

/// Run kinesis-to-sqs on `event` against a target that denies every send;
/// the sequence numbers it reports.
async fn failed_run(event: KinesisEvent) -> Vec<String> {
    let server = denying_sqs().await;
    let conf = aws_sdk_sqs::Config::builder()
        .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
        .region(aws_sdk_sqs::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .endpoint_url(server.uri())
        .build();
    let url = format!("{}/123456789012/denied", server.uri());
    let fwd = connect_with(
        aws_sdk_sqs::Client::from_conf(conf),
        &config(&[("QUEUE_URL", &url), ("RETRY_MAX_ATTEMPTS", "1")]),
        sqs_forwarder::GroupIds::FromSource,
    )
    .await
    .expect("connect");
    let answer = kinesis_to_sqs::Handler::new(kinesis_to_sqs::Settings::default(), fwd.clone())
        .handle(event, None)
        .await
        .expect("an answer");
    answer
        .batch_item_failures
        .iter()
        .filter_map(|f| f.item_identifier.clone())
        .collect()
}

fn body_bytes(m: &aws_sdk_sqs::types::Message) -> Vec<u8> {
    let body = m.body().expect("body");
    if attributes(m).contains_key("sqs-forwarder.encoding") {
        B64.decode(body).expect("base64 body")
    } else {
        body.as_bytes().to_vec()
    }
}

fn attr(m: &aws_sdk_sqs::types::Message, name: &str) -> String {
    String::from_utf8(
        attributes(m)
            .get(name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default(),
    )
    .expect("utf-8 attribute")
}

fn system(m: &aws_sdk_sqs::types::Message, name: MessageSystemAttributeName) -> String {
    m.attributes()
        .and_then(|a| a.get(&name))
        .cloned()
        .unwrap_or_default()
}

/// A KPL aggregate from the sample event (built by the Python
/// `aws_kinesis_agg`), and how many user records it holds.
fn kpl_aggregate() -> (String, Vec<u8>, usize) {
    let dir = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let event: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{dir}/events/kinesis-kpl.json")).expect("sample"),
    )
    .expect("json");
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{dir}/functions/kinesis-to-sqs/tests/kpl-expected.json"
        ))
        .expect("fixture"),
    )
    .expect("json");
    let first = &event["Records"][0]["kinesis"];
    let data = B64
        .decode(first["data"].as_str().expect("data"))
        .expect("base64");
    assert_eq!(&data[..4], [0xF3, 0x89, 0x9A, 0xC2], "a KPL aggregate");
    let users = expected[0]["userRecords"]
        .as_array()
        .expect("user records")
        .len();
    (
        first["partitionKey"].as_str().expect("key").to_owned(),
        data,
        users,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_denied_by_the_target_is_replayed_once_the_target_allows_it() {
    let k = kinesis();
    let arn = stream(&k, "replay-denied").await;
    let mut records: Vec<(String, Vec<u8>)> = (0..24)
        .map(|i| {
            (
                ["a", "b", "c"][i % 3].to_owned(),
                format!("rec-{i}").into_bytes(),
            )
        })
        .collect();
    records.push(("bin".to_owned(), vec![0xFF, 0x00, 0x01])); // sent base64, with the marker
    let (kpl_key, kpl_data, users) = kpl_aggregate();
    records.push((kpl_key, kpl_data));
    let seqs = put(&k, &arn, &records).await;

    // kinesis-to-sqs runs while the target denies every send: it reports
    // every record; Lambda gives up on the range and writes its entry.
    let failed = failed_run(lambda_event(&k, &arn, 0, records.len()).await).await;
    assert_eq!(failed, seqs, "every record reported, in order");
    let failure_queue = create_queue(&client(), "replay-failures", &[]).await;
    let target = create_queue(&client(), "replay-target", &[]).await;
    send_entry(
        &failure_queue,
        &batch_info(
            &arn,
            SHARD,
            &failed[0],
            &seqs[seqs.len() - 1],
            records.len(),
        ),
    )
    .await;

    // A dry run counts and touches nothing.
    let (out, stdout) = replay(&target, &failure_queue, &["--dry-run"], &[]);
    assert!(out.status.success(), "dry run: {:?}", out.status);
    let messages = records.len() - 1 + users;
    assert!(stdout.contains(": would replay: "), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "replay (dry run): 1 entries: 1 would be replayed, 0 expired, 0 failed, 0 unreadable, 0 from other sources; would send {} Kinesis records, {messages} messages in all (0 offloaded to S3); nothing sent, nothing deleted",
            records.len()
        )),
        "{stdout}"
    );
    assert_eq!(depth(&target).await, (0, 0), "a dry run sends nothing");
    assert_eq!(
        depth(&failure_queue).await,
        (1, 0),
        "and keeps the entry, visible"
    );

    // The cause is fixed: the replay sends every record once.
    let (out, stdout) = replay(&target, &failure_queue, &[], &[]);
    assert!(out.status.success(), "replay: {:?}", out.status);
    assert!(
        stdout.contains(&format!(
            ": replayed: {n} of {n} records read from the stream sent; deleted",
            n = records.len()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("replay: 1 entries: 1 replayed and deleted"),
        "{stdout}"
    );
    assert_eq!(depth(&failure_queue).await, (0, 0), "the entry is deleted");

    let got = drain(&client(), &target, messages + 1).await;
    assert_eq!(got.len(), messages, "each record (and user record) once");
    let mut by_seq: BTreeMap<(String, String), Vec<u8>> = BTreeMap::new();
    for m in &got {
        assert_eq!(attr(m, "kinesis.streamArn"), arn);
        assert_eq!(attr(m, "kinesis.shardId"), SHARD);
        let key = (
            attr(m, "kinesis.sequenceNumber"),
            attr(m, "kinesis.subSequenceNumber"),
        );
        assert!(by_seq.insert(key, body_bytes(m)).is_none(), "no duplicate");
    }
    for (i, (pk, data)) in records.iter().enumerate().take(records.len() - 1) {
        assert_eq!(
            by_seq[&(seqs[i].clone(), String::new())],
            *data,
            "record {i}"
        );
        let m = got
            .iter()
            .find(|m| attr(m, "kinesis.sequenceNumber") == seqs[i])
            .expect("its message");
        assert_eq!(attr(m, "kinesis.partitionKey"), *pk);
    }
    let last = &seqs[seqs.len() - 1];
    let subs = by_seq
        .keys()
        .filter(|(s, sub)| s == last && !sub.is_empty())
        .count();
    assert_eq!(
        subs, users,
        "the aggregate de-aggregated into its user records"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fifo_target_gets_no_duplicate_when_the_replay_overlaps_what_arrived() {
    let k = kinesis();
    let arn = stream(&k, "replay-fifo").await;
    let records: Vec<(String, Vec<u8>)> = (0..20)
        .map(|i| {
            (
                ["a", "b", "c"][i % 3].to_owned(),
                format!("rec-{i}").into_bytes(),
            )
        })
        .collect();
    let seqs = put(&k, &arn, &records).await;
    let target = create_queue(&client(), "replay-target.fifo", &[]).await;
    // The first 12 records reached the queue before the function failed.
    let fwd = connect_with(
        client(),
        &config(&[("QUEUE_URL", &target)]),
        sqs_forwarder::GroupIds::FromSource,
    )
    .await
    .expect("connect");
    let answer = kinesis_to_sqs::Handler::new(kinesis_to_sqs::Settings::default(), fwd.clone())
        .handle(lambda_event(&k, &arn, 0, 12).await, None)
        .await
        .expect("an answer");
    assert!(answer.batch_item_failures.is_empty());
    // Lambda gave up on the whole batch of 20.
    let failure_queue = create_queue(&client(), "replay-failures", &[]).await;
    send_entry(
        &failure_queue,
        &batch_info(&arn, SHARD, &seqs[0], &seqs[19], 20),
    )
    .await;

    let (out, stdout) = replay(&target, &failure_queue, &[], &[]);
    assert!(out.status.success(), "{:?}", out.status);
    assert!(
        stdout.contains(": replayed: 20 of 20 records read from the stream sent; deleted"),
        "{stdout}"
    );

    let got = drain(&client(), &target, 21).await;
    let mut bodies: Vec<String> = got
        .iter()
        .map(|m| m.body().expect("body").to_owned())
        .collect();
    assert_eq!(got.len(), 20, "no duplicate: {bodies:?}");
    // Each group in stream order, ids as kinesis-to-sqs sets them.
    for key in ["a", "b", "c"] {
        let group: Vec<usize> = got
            .iter()
            .filter(|m| system(m, MessageSystemAttributeName::MessageGroupId) == key)
            .map(|m| {
                let seq = attr(m, "kinesis.sequenceNumber");
                assert_eq!(
                    system(m, MessageSystemAttributeName::MessageDeduplicationId),
                    format!("{SHARD}:{seq}")
                );
                seqs.iter()
                    .position(|s| *s == seq)
                    .expect("a record of the range")
            })
            .collect();
        let mut sorted = group.clone();
        sorted.sort();
        assert_eq!(group, sorted, "group {key} in order");
    }
    bodies.sort();
    let mut want: Vec<String> = (0..20).map(|i| format!("rec-{i}")).collect();
    want.sort();
    assert_eq!(bodies, want);
}

#[tokio::test(flavor = "multi_thread")]
async fn ranges_the_stream_no_longer_has_are_reported_and_kept() {
    let k = kinesis();
    let arn = stream(&k, "replay-expired").await;
    let records: Vec<(String, Vec<u8>)> = (0..5)
        .map(|i| ("p".to_owned(), format!("rec-{i}").into_bytes()))
        .collect();
    let seqs = put(&k, &arn, &records).await;
    let gone_arn = stream(&k, "replay-deleted").await;
    k.delete_stream()
        .stream_arn(&gone_arn)
        .send()
        .await
        .expect("delete stream");
    let failure_queue = create_queue(&client(), "replay-failures", &[]).await;
    let target = create_queue(&client(), "replay-target", &[]).await;
    // A shard closed by a reshard and since past retention: not in the
    // stream any more.
    send_entry(
        &failure_queue,
        &batch_info(&arn, "shardId-000000000099", "1", "3", 3),
    )
    .await;
    // A deleted stream.
    send_entry(&failure_queue, &batch_info(&gone_arn, SHARD, "1", "3", 3)).await;
    // A range whose start the stream trimmed: it begins before the shard's
    // first record (moto cannot age a stream; a sequence number below the
    // oldest one is what a trimmed start looks like to a reader).
    send_entry(&failure_queue, &batch_info(&arn, SHARD, "0", &seqs[2], 4)).await;

    // --limit: one entry looked at, the others untouched.
    let (_, stdout) = replay(&target, &failure_queue, &["--dry-run", "--limit", "1"], &[]);
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("entry ")).count(),
        1,
        "{stdout}"
    );
    assert!(stdout.contains("replay (dry run): 1 entries: "), "{stdout}");
    assert_eq!(
        depth(&failure_queue).await,
        (3, 0),
        "a dry run keeps every entry"
    );

    let (out, stdout) = replay(&target, &failure_queue, &[], &[]);
    assert_eq!(out.status.code(), Some(1), "entries stay: exit 1");
    let expired: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(": EXPIRED: "))
        .collect();
    assert_eq!(expired.len(), 3, "{stdout}");
    assert!(
        expired
            .iter()
            .any(|l| l.contains("shardId-000000000099 1..3")
                && l.contains("the stream no longer has shard shardId-000000000099")),
        "{stdout}"
    );
    assert!(
        expired
            .iter()
            .any(|l| l.contains(&gone_arn) && l.contains("the stream no longer has shard")),
        "{stdout}"
    );
    assert!(
        expired.iter().any(|l| l.contains(&format!(
            "the stream no longer has the records of {SHARD} from 0 to before {}",
            seqs[0]
        )) && l.contains("1 of the batch's 4 records are lost")
            && l.contains("3 of 3 records read from the stream sent")
            && l.contains("; kept, narrowed to what is lost")),
        "{stdout}"
    );
    assert!(
        expired
            .iter()
            .all(|l| l.contains("; kept") && l.contains("(run with --delete-expired"))
    );
    assert!(stdout.contains("3 expired, 0 failed"), "{stdout}");
    assert_eq!(
        depth(&failure_queue).await,
        (3, 0),
        "kept and visible again"
    );
    let got = drain(&client(), &target, 4).await;
    assert_eq!(got.len(), 3, "what the stream still had was sent");

    // The operator noted the ranges: drop them.
    let (out, stdout) = replay(&target, &failure_queue, &["--delete-expired"], &[]);
    assert_eq!(out.status.code(), Some(1), "still reported");
    assert_eq!(
        stdout.matches("; deleted (--delete-expired)").count(),
        3,
        "{stdout}"
    );
    assert_eq!(depth(&failure_queue).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replay_killed_midway_runs_again_without_loss() {
    let k = kinesis();
    let arn = stream(&k, "replay-killed").await;
    let records: Vec<(String, Vec<u8>)> = (0..90)
        .map(|i| {
            (
                ["a", "b", "c", "d"][i % 4].to_owned(),
                format!("rec-{i}").into_bytes(),
            )
        })
        .collect();
    let seqs = put(&k, &arn, &records).await;
    let failure_queue = create_queue(&client(), "replay-failures", &[]).await;
    let target = create_queue(&client(), "replay-target.fifo", &[]).await;
    for part in 0..3 {
        let (from, to) = (part * 30, part * 30 + 29);
        send_entry(
            &failure_queue,
            &batch_info(&arn, SHARD, &seqs[from], &seqs[to], 30),
        )
        .await;
    }
    // Pages of one record: 90 pages in all, so that the process is still
    // at work when it is killed, right after its first page went out.
    let args = ["--records-per-call", "1", "--visibility-timeout", "2"];
    let mut child = replay_command(&target, &failure_queue, &[])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the replay binary");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let started = Instant::now();
    loop {
        match lines.next() {
            Some(Ok(line)) if line.contains("page sent") => break,
            Some(Ok(_)) => {}
            other => panic!("the replay ended before sending a page: {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no page sent");
    }
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("wait");
    assert!(!status.success(), "killed: {status:?}");
    let (visible, hidden) = depth(&failure_queue).await;
    assert!(visible + hidden >= 1, "killed before the end: entries left");
    let (sent_before, _) = depth(&target).await;
    assert!(
        (1..90).contains(&sent_before),
        "killed mid-way: {sent_before} sent"
    );

    // Its entry comes back after the visibility timeout; a second run
    // finishes the job.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let (out, stdout) = replay(&target, &failure_queue, &["--records-per-call", "5"], &[]);
    assert!(out.status.success(), "{:?}", out.status);
    assert!(
        stdout.contains("0 expired, 0 failed, 0 unreadable, 0 from other sources"),
        "{stdout}"
    );
    assert_eq!(depth(&failure_queue).await, (0, 0), "every entry deleted");

    let got = drain(&client(), &target, 91).await;
    let mut bodies: Vec<String> = got
        .iter()
        .map(|m| m.body().expect("body").to_owned())
        .collect();
    bodies.sort();
    let mut want: Vec<String> = (0..90).map(|i| format!("rec-{i}")).collect();
    want.sort();
    assert_eq!(bodies, want, "every record once, none lost");
}

/// An object of three NDJSON lines in a new bucket, and the on-failure
/// entry of an s3-to-sqs run that gave up on it.
async fn s3_failure_entry() -> Value {
    let s3 = {
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
    };
    let bucket = unique("replay-input");
    s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("bucket");
    let put = s3
        .put_object()
        .bucket(&bucket)
        .key("orders/day 1.ndjson")
        .body(aws_sdk_s3::primitives::ByteStream::from_static(
            b"{\"order\":1}\n{\"order\":2}\n\n{\"order\":3}\n",
        ))
        .send()
        .await
        .expect("put object");
    let etag = put.e_tag().expect("etag").trim_matches('"').to_owned();
    json!({
        "version": "1.0",
        "timestamp": "2026-11-30T10:16:05.568Z",
        "requestContext": {
            "requestId": "e4b46cbf-b738-4a3f-8880-a18cdf61200e",
            "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:s3-to-sqs:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 3
        },
        "requestPayload": {"Records": [{
            "eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
            "eventTime": "2026-11-30T10:15:58.123Z", "eventName": "ObjectCreated:Put",
            "userIdentity": {"principalId": "AWS:AIDAEXAMPLE"},
            "requestParameters": {"sourceIPAddress": "198.51.100.7"},
            "responseElements": {"x-amz-request-id": "C3D13FE58DE4C810", "x-amz-id-2": "FMyUVURIY8"},
            "s3": {
                "s3SchemaVersion": "1.0",
                "configurationId": "objects",
                "bucket": {"name": bucket, "ownerIdentity": {"principalId": "A3NL1KOZZKExample"}, "arn": format!("arn:aws:s3:::{bucket}")},
                "object": {"key": "orders/day+1.ndjson", "size": 37, "eTag": etag, "sequencer": "0065A8B2C1D0E1F2A3"}
            }
        }]},
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {"errorType": "S3ToSqs.NotForwarded", "errorMessage": "..."}
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn an_s3_event_is_forwarded_as_s3_to_sqs_would_and_garbage_is_kept() {
    let record = s3_failure_entry().await;
    let failure_queue = create_queue(&client(), "replay-failures", &[]).await;
    let target = create_queue(&client(), "replay-target", &[]).await;
    send_entry(&failure_queue, &record.to_string()).await;
    send_entry(&failure_queue, "{\"not\": \"an entry\"}").await;

    let lines_mode = [("MODE", "lines"), ("S3_FORCE_PATH_STYLE", "true")];
    let (out, stdout) = replay(&target, &failure_queue, &[], &lines_mode);
    assert_eq!(out.status.code(), Some(1), "the garbage entry stays");
    assert!(
        stdout.contains(
            "s3 event (RetriesExhausted): replayed: 1 S3 records, 3 messages sent; deleted"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(": UNREADABLE: not an on-failure record"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "1 replayed and deleted, 0 expired, 0 failed, 1 unreadable, 0 from other sources"
        ),
        "{stdout}"
    );
    assert_eq!(
        depth(&failure_queue).await,
        (1, 0),
        "only the garbage is left"
    );
    let got = drain(&client(), &target, 4).await;
    let mut bodies: Vec<&str> = got.iter().map(|m| m.body().expect("body")).collect();
    bodies.sort();
    assert_eq!(bodies, ["{\"order\":1}", "{\"order\":2}", "{\"order\":3}"]);
}

/// Behind an HTTP proxy (`HTTP_PROXY`) the replay's sends, made by the
/// direct client, go through it, as its SDK calls (the on-failure queue,
/// the object) do.
#[tokio::test(flavor = "multi_thread")]
async fn a_replay_behind_an_http_proxy_sends_through_it() {
    let record = s3_failure_entry().await;
    let failure_queue = create_queue(&client(), "replay-proxy-failures", &[]).await;
    let target = create_queue(&client(), "replay-proxy-target", &[]).await;
    send_entry(&failure_queue, &record.to_string()).await;
    let proxy = TestProxy::start(&[], None).expect("proxy starts");
    let url = proxy.url();
    let env = [
        ("MODE", "lines"),
        ("S3_FORCE_PATH_STYLE", "true"),
        ("HTTP_PROXY", url.as_str()),
    ];
    let (out, stdout) = replay(&target, &failure_queue, &[], &env);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let seen = proxy.seen();
    let action = |name: &str| {
        seen.iter()
            .filter(|r| r.amz_target.as_deref() == Some(name))
            .count()
    };
    assert!(action("AmazonSQS.SendMessageBatch") >= 1, "{seen:?}");
    assert!(action("AmazonSQS.ReceiveMessage") >= 1, "{seen:?}");
    assert!(
        seen.iter().any(|r| r.method == "GET"),
        "the object: {seen:?}"
    );
    assert!(seen.iter().all(|r| !r.refused), "{seen:?}");
    let got = drain(&client(), &target, 3).await;
    let mut bodies: Vec<&str> = got.iter().map(|m| m.body().expect("body")).collect();
    bodies.sort();
    assert_eq!(bodies, ["{\"order\":1}", "{\"order\":2}", "{\"order\":3}"]);
}

#[test]
fn a_bad_variable_stops_the_start_naming_it() {
    let out = replay_command(
        "http://127.0.0.1:1/123456789012/q",
        "http://127.0.0.1:1/123456789012/f",
        &[("BODY_FORMAT", "json")],
    )
    .output()
    .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("replay: cannot start: invalid configuration: BODY_FORMAT=\"json\": one of: raw, envelope"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_on_failure_queue_that_cannot_be_read_stops_the_start_naming_it() {
    let target = create_queue(&client(), "replay-target", &[]).await;
    let missing = format!("{}/123456789012/{}", endpoint(), unique("no-such-queue"));
    let (out, stdout) = replay(&target, &missing, &[], &[]);
    assert_eq!(out.status.code(), Some(2), "cannot start: exit 2");
    assert_eq!(stdout, "", "no entry line, no summary");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "replay: cannot start: the on-failure queue (--failure-queue, FAILURE_QUEUE_URL): GetQueueAttributes on {missing}: "
        )) && stderr.contains("NonExistentQueue"),
        "{stderr}"
    );
}

#[test]
fn a_missing_on_failure_queue_or_a_bad_limit_is_a_usage_error() {
    let mut missing = replay_command("http://127.0.0.1:1/123456789012/q", "", &[]);
    missing.env_remove("FAILURE_QUEUE_URL");
    let out = missing.output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the following required arguments were not provided")
            && stderr.contains("--failure-queue <URL>"),
        "{stderr}"
    );
    for (limit, why) in [("0", "0 is not in 1.."), ("ten", "invalid digit")] {
        let out = replay_command(
            "http://127.0.0.1:1/123456789012/q",
            "http://127.0.0.1:1/123456789012/f",
            &[],
        )
        .args(["--limit", limit])
        .output()
        .expect("run");
        assert_eq!(out.status.code(), Some(2), "--limit {limit}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("invalid value '{limit}' for '--limit <N>'"))
                && stderr.contains(why),
            "{stderr}"
        );
    }
}

/// A failed step of an s3-to-sqs chain (continuation) is resumed from its
/// offset by the function's own code: the lines before it, which the chain
/// had sent, are not sent again.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_continuation_step_resumes_from_its_offset() {
    let s3 = {
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
    };
    let bucket = unique("replay-chain");
    s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("bucket");
    let data = b"one\ntwo\nthree\nfour\nfive\nsix\n";
    let put = s3
        .put_object()
        .bucket(&bucket)
        .key("big.log")
        .body(aws_sdk_s3::primitives::ByteStream::from_static(data))
        .send()
        .await
        .expect("put object");
    let etag = put.e_tag().expect("etag").trim_matches('"').to_owned();
    let record = json!({
        "version": "1.0",
        "timestamp": "2026-12-05T10:16:05.568Z",
        "requestContext": {
            "requestId": "e4b46cbf-b738-4a3f-8880-a18cdf61200f",
            "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:stack-s3-to-sqs:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 3
        },
        "requestPayload": {"s3ToSqsContinuation": {
            "version": 1, "chain": "0123456789abcdef", "step": 2,
            "bucket": bucket, "key": "big.log", "etag": etag,
            "offset": "one\ntwo\nthree\n".len(), "line": 4,
            "event": {"via": "notification", "eventName": "ObjectCreated:Put", "sequencer": "0A1B"}
        }},
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {"errorType": "S3ToSqs.NotForwarded", "errorMessage": "..."}
    });
    let failure_queue = create_queue(&client(), "replay-failures", &[]).await;
    let target = create_queue(&client(), "replay-target", &[]).await;
    send_entry(&failure_queue, &record.to_string()).await;
    let lines_mode = [("MODE", "lines"), ("S3_FORCE_PATH_STYLE", "true")];
    let (out, stdout) = replay(&target, &failure_queue, &[], &lines_mode);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("replayed: 1 S3 records, 3 messages sent; deleted"),
        "{stdout}"
    );
    let got = drain(&client(), &target, 3).await;
    let mut lines: Vec<(String, String)> = got
        .iter()
        .map(|m| {
            let line = attributes(m)
                .get("line")
                .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default();
            (line, m.body().expect("body").to_owned())
        })
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            ("4".to_owned(), "four".to_owned()),
            ("5".to_owned(), "five".to_owned()),
            ("6".to_owned(), "six".to_owned())
        ]
    );
}
