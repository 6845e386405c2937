//! End-to-end: kinesis-to-sqs against the local SQS endpoint, with the real
//! `SqsTransport`. Every record arrives once (FIFO: in order within its
//! group, and a batch Lambda delivers again adds nothing); with faults
//! injected between the forwarder and SQS, following the answers the way
//! Lambda does gets every record into the queue and resends only what the
//! checkpoint rule makes it resend.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use base64::Engine as _;
use forwarder_e2e::{attributes, client, connect, create_queue, drain};
use kinesis_to_sqs::checkpoint::reported;
use kinesis_to_sqs::event::KinesisEvent;
use kinesis_to_sqs::records::attribute;
use kinesis_to_sqs::{Handler, Settings};
use serde_json::{Value, json};
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Config, Forwarder, SqsTransport};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
const SHARD: &str = "shardId-000000000004";

fn config(vars: &[(&str, &str)]) -> Config {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|k| map.get(k).cloned()).expect("valid test configuration")
}

async fn forwarder(url: &str, extra: &[(&str, &str)]) -> Forwarder<SqsTransport> {
    let mut vars = vec![
        ("QUEUE_URL", url),
        ("RETRY_MAX_ATTEMPTS", "3"),
        ("RETRY_BASE_DELAY_MS", "1"),
        ("RETRY_MAX_DELAY_MS", "5"),
    ];
    vars.extend_from_slice(extra);
    connect(&config(&vars), sqs_forwarder::GroupIds::FromSource).await
}

fn sample(name: &str) -> KinesisEvent {
    let path = format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("sample event"))
        .expect("a Kinesis event")
}

fn seq(i: usize) -> String {
    format!("49590338271490256608559692538361571095921575989{i:09}")
}

/// Records `rec-<from>` .. `rec-<to - 1>`, partition keys cycling a, b, c.
fn text_event(from: usize, to: usize) -> KinesisEvent {
    let records: Vec<Value> = (from..to)
        .map(|i| {
            let key = ["a", "b", "c"][i % 3];
            json!({
                "kinesis": {
                    "kinesisSchemaVersion": "1.0",
                    "partitionKey": key,
                    "sequenceNumber": seq(i),
                    "data": B64.encode(format!("rec-{i}")),
                    "approximateArrivalTimestamp": 1_764_410_000.0
                },
                "eventSource": "aws:kinesis",
                "eventVersion": "1.0",
                "eventID": format!("{SHARD}:{}", seq(i)),
                "eventName": "aws:kinesis:record",
                "invokeIdentityArn": "arn:aws:iam::123456789012:role/r",
                "awsRegion": "us-east-1",
                "eventSourceARN": "arn:aws:kinesis:us-east-1:123456789012:stream/e2e"
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).expect("a Kinesis event")
}

fn record_of(body: &str) -> usize {
    body.trim_start_matches("rec-")
        .parse()
        .unwrap_or_else(|_| panic!("unexpected body {body:?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_small_sample_reaches_a_standard_queue_once() {
    let sqs = client();
    let url = create_queue(&sqs, "e2e-kinesis-small", &[]).await;
    let fwd = forwarder(&url, &[]).await;
    let event = sample("kinesis-small.json");
    let want: Vec<(String, String, Vec<u8>)> = event
        .records
        .iter()
        .map(|r| {
            (
                r.kinesis.sequence_number.clone(),
                r.kinesis.partition_key.clone(),
                r.kinesis.data.0.clone(),
            )
        })
        .collect();
    let response = Handler::new(Settings::default(), fwd.clone())
        .handle(event, None)
        .await
        .expect("an answer");
    assert!(response.batch_item_failures.is_empty());

    // One more than expected: wait for the queue to stay empty.
    let received = drain(&sqs, &url, want.len() + 1).await;
    assert_eq!(received.len(), want.len(), "each record exactly once");
    let by_seq: HashMap<Vec<u8>, _> = received
        .iter()
        .map(|m| (attributes(m)[attribute::SEQUENCE_NUMBER].1.clone(), m))
        .collect();
    assert_eq!(by_seq.len(), want.len());
    for (seq, pk, data) in want {
        let m = by_seq[seq.as_bytes()];
        let attrs = attributes(m);
        let body = m.body().expect("body");
        let got = if attrs.contains_key("sqs-forwarder.encoding") {
            B64.decode(body).expect("base64")
        } else {
            body.as_bytes().to_vec()
        };
        assert_eq!(got, data);
        assert_eq!(
            attrs[attribute::PARTITION_KEY],
            ("String".to_owned(), pk.into_bytes())
        );
        assert_eq!(
            attrs[attribute::SHARD_ID],
            ("String".to_owned(), b"shardId-000000000000".to_vec())
        );
        assert_eq!(attrs[attribute::ARRIVAL_TIMESTAMP].0, "Number");
        assert_eq!(
            attrs[attribute::STREAM_ARN].1,
            b"arn:aws:kinesis:eu-west-1:123456789012:stream/orders"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kpl_user_records_reach_a_fifo_queue_in_group_order_and_a_redelivery_adds_nothing() {
    let sqs = client();
    let url = create_queue(
        &sqs,
        "e2e-kinesis-kpl.fifo",
        &[(QueueAttributeName::ContentBasedDeduplication, "false")],
    )
    .await;
    let fwd = forwarder(&url, &[]).await;
    let event = sample("kinesis-kpl.json");
    let again = event.clone();
    let response = Handler::new(Settings::default(), fwd.clone())
        .handle(event, None)
        .await
        .expect("an answer");
    assert!(response.batch_item_failures.is_empty());
    // Lambda delivers the same batch again (say, after a timeout): the
    // deduplication ids make SQS take none of it. (moto deduplicates only
    // against messages still in the queue, real SQS for five minutes after
    // the first send: redeliver before draining.)
    let response = Handler::new(Settings::default(), fwd.clone())
        .handle(again, None)
        .await
        .expect("an answer");
    assert!(response.batch_item_failures.is_empty());

    // 5 + 1 + 4 + 1 user records (see the function's tests/kpl-expected.json);
    // one more asked for, to see that nothing else comes.
    let received = drain(&sqs, &url, 12).await;
    assert_eq!(received.len(), 11);
    let mut by_group: BTreeMap<String, Vec<(String, u32)>> = BTreeMap::new();
    for m in &received {
        let attrs = attributes(m);
        let group = m
            .attributes()
            .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId))
            .expect("a group id")
            .clone();
        let seq = String::from_utf8(attrs[attribute::SEQUENCE_NUMBER].1.clone()).expect("text");
        let sub = attrs
            .get(attribute::SUB_SEQUENCE_NUMBER)
            .map(|(_, v)| String::from_utf8_lossy(v).parse::<u32>().expect("number"))
            .unwrap_or(0);
        by_group.entry(group).or_default().push((seq, sub));
    }
    assert_eq!(by_group.len(), 7, "{by_group:?}");
    for (group, order) in &by_group {
        let mut sorted = order.clone();
        sorted.sort_by(|a, b| (a.0.len(), &a.0, a.1).cmp(&(b.0.len(), &b.0, b.1)));
        assert_eq!(order, &sorted, "group {group} arrived out of order");
    }
    assert_eq!(
        by_group["customer-1"].len(),
        3,
        "customer-1 has three user records in two aggregates"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_oversize_sample_reports_the_large_record_and_sends_the_rest() {
    let sqs = client();
    let url = create_queue(&sqs, "e2e-kinesis-oversize", &[]).await;
    let fwd = forwarder(&url, &[]).await;
    let event = sample("kinesis-oversize.json");
    let big = event.records[1].kinesis.sequence_number.clone();
    let response = Handler::new(Settings::default(), fwd.clone())
        .handle(event, None)
        .await
        .expect("an answer");
    assert_eq!(reported(&response), vec![big.as_str()]);
    let mut bodies: Vec<String> = drain(&sqs, &url, 2)
        .await
        .iter()
        .map(|m| m.body().expect("body").to_owned())
        .collect();
    bodies.sort();
    assert_eq!(
        bodies,
        vec![
            "{\"report\":\"small-after\"}",
            "{\"report\":\"small-before\"}"
        ]
    );
}

/// Deliver records from the checkpoint on, as Lambda does, until the answer
/// is empty; return the checkpoints (the first record of each delivery).
async fn follow_the_answers(fwd: &Forwarder<FakeSqs>, n: usize) -> Vec<usize> {
    let mut checkpoints = Vec::new();
    let mut checkpoint = 0;
    loop {
        checkpoints.push(checkpoint);
        assert!(checkpoints.len() <= 10, "no progress past {checkpoint}");
        let response = Handler::new(Settings::default(), fwd.clone())
            .handle(text_event(checkpoint, n), None)
            .await
            .expect("an answer");
        let Some(lowest) = reported(&response).first().map(|s| s.to_string()) else {
            return checkpoints;
        };
        checkpoint = (checkpoint..n)
            .find(|i| seq(*i) == lowest)
            .expect("the lowest reported record is in the batch");
    }
}

/// Between the forwarder and SQS: fails a body's first attempts with a
/// retryable entry error (`InternalError`, or `RequestThrottled` for the
/// throttled ones).
fn faulty(fwd: &Forwarder<SqsTransport>) -> FakeSqs {
    let injected = |reply: Reply| reply.with_message("injected");
    FakeSqs::in_front_of(fwd.transport().clone())
        // rec-5 fails its first 4 attempts: 3 in the first delivery, 1 in the second.
        .fail_first("rec-5", 4, injected(Reply::INTERNAL))
        // rec-12 is throttled twice, then goes through within the first delivery.
        .fail_first("rec-12", 2, injected(Reply::THROTTLED))
        // rec-20 fails 7 attempts: through the first two deliveries.
        .fail_first("rec-20", 7, injected(Reply::INTERNAL))
}

#[tokio::test(flavor = "multi_thread")]
async fn injected_faults_on_a_standard_queue_lose_nothing_and_resend_only_from_the_checkpoint() {
    let sqs = client();
    let url = create_queue(&sqs, "e2e-kinesis-faults", &[]).await;
    let base = forwarder(&url, &[]).await;
    let fwd = Forwarder::new(faulty(&base), base.settings().clone(), base.rules().clone());

    let checkpoints = follow_the_answers(&fwd, 30).await;
    assert_eq!(checkpoints, vec![0, 5, 20]);

    // One more than expected: wait for the queue to stay empty.
    let received = drain(&sqs, &url, 63).await;
    let mut copies: BTreeMap<usize, usize> = BTreeMap::new();
    for m in &received {
        *copies
            .entry(record_of(m.body().expect("body")))
            .or_default() += 1;
    }
    // Delivery 1 sends 0..30 but 5 and 20; delivery 2 sends 5..30 but 20;
    // delivery 3 sends 20..30.
    let expected: BTreeMap<usize, usize> = (0..30)
        .map(|i| {
            let n = match i {
                0..5 => 1,
                5 => 1,
                6..20 => 2,
                20 => 1,
                _ => 3,
            };
            (i, n)
        })
        .collect();
    assert_eq!(copies, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn injected_faults_on_a_fifo_queue_deliver_every_record_once_in_group_order() {
    let sqs = client();
    let url = create_queue(
        &sqs,
        "e2e-kinesis-faults.fifo",
        &[(QueueAttributeName::ContentBasedDeduplication, "false")],
    )
    .await;
    let base = forwarder(&url, &[]).await;
    let fwd = Forwarder::new(faulty(&base), base.settings().clone(), base.rules().clone());

    let checkpoints = follow_the_answers(&fwd, 30).await;
    // Group c (2, 5, 8, ...) stops at 5 in the first delivery: 8 .. 20 wait
    // behind it and are reported with it. 20 is first sent in the second
    // delivery, so its seven failures take two more.
    assert_eq!(checkpoints, vec![0, 5, 20, 20]);

    // One more than expected: wait for the queue to stay empty.
    let received = drain(&sqs, &url, 31).await;
    assert_eq!(
        received.len(),
        30,
        "the deduplication ids absorb every resend"
    );
    let mut by_group: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for m in &received {
        let attrs = attributes(m);
        let pk = String::from_utf8(attrs[attribute::PARTITION_KEY].1.clone()).expect("text");
        by_group
            .entry(pk)
            .or_default()
            .push(record_of(m.body().expect("body")));
    }
    for (group, order) in &by_group {
        let want: Vec<usize> = (0..30)
            .filter(|i| ["a", "b", "c"][i % 3] == group)
            .collect();
        assert_eq!(order, &want, "group {group}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_deadline_running_out_mid_batch_reports_exactly_what_did_not_arrive() {
    let sqs = client();
    let url = create_queue(&sqs, "e2e-kinesis-deadline", &[]).await;
    let base = forwarder(&url, &[("MAX_IN_FLIGHT", "1")]).await;
    // Calls 0 and 1 (records 0..20) go through; call 2 never answers.
    let faults = FakeSqs::in_front_of(base.transport().clone()).stall_from_call(2);
    let fwd = Forwarder::new(faults, base.settings().clone(), base.rules().clone());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let response = Handler::new(Settings::default(), fwd.clone())
        .handle(text_event(0, 50), Some(deadline))
        .await
        .expect("an answer");

    let received: HashSet<usize> = drain(&sqs, &url, 50)
        .await
        .iter()
        .map(|m| record_of(m.body().expect("body")))
        .collect();
    assert_eq!(received, (0..20).collect::<HashSet<_>>());
    let expected: Vec<String> = (20..50).map(seq).collect();
    assert_eq!(
        reported(&response),
        expected.iter().map(String::as_str).collect::<Vec<_>>()
    );
}
