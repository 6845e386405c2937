//! kinesis-to-sqs with aggregation: the checkpoint Lambda gets names the
//! first record of a refused aggregate, and following it delivers every
//! record.

use std::collections::BTreeMap;

use aws_sdk_sqs::types::QueueAttributeName;
use base64::Engine as _;
use forwarder_e2e::aggregation::{
    Delivered, assert_aggregated, assert_python_agrees, config, copies, fifo_groups, read_all,
};
use forwarder_e2e::{client, connect, create_queue, drain};
use kinesis_to_sqs::checkpoint::reported;
use kinesis_to_sqs::event::KinesisEvent;
use kinesis_to_sqs::records::attribute;
use kinesis_to_sqs::{Handler, Settings};
use serde_json::{Value, json};
use sqs_forwarder::aggregate::cuts_after;
use sqs_forwarder::{Forwarder, GroupIds, Transport};

const N: usize = 2_000;

fn seq(i: usize) -> String {
    format!("49590338271490256608559692538361571095921575989{i:09}")
}

fn body(i: usize) -> String {
    format!("rec-{i:05}")
}

fn key(i: usize) -> &'static str {
    ["a", "b", "c"][i % 3]
}

/// Records `from` .. `to`, partition keys cycling a, b, c.
fn event(from: usize, to: usize) -> KinesisEvent {
    event_of(from, to, |i| (key(i).to_owned(), body(i)))
}

/// Records `from` .. `to` with these partition keys and data.
fn event_of(from: usize, to: usize, record: impl Fn(usize) -> (String, String)) -> KinesisEvent {
    let records: Vec<Value> = (from..to)
        .map(|i| {
            let (key, data) = record(i);
            json!({
                "kinesis": {
                    "kinesisSchemaVersion": "1.0",
                    "partitionKey": key,
                    "sequenceNumber": seq(i),
                    "data": base64::engine::general_purpose::STANDARD.encode(data),
                    "approximateArrivalTimestamp": 1_764_410_000.0
                },
                "eventSource": "aws:kinesis",
                "eventVersion": "1.0",
                "eventID": format!("shardId-000000000004:{}", seq(i)),
                "eventName": "aws:kinesis:record",
                "invokeIdentityArn": "arn:aws:iam::123456789012:role/r",
                "awsRegion": "us-east-1",
                "eventSourceARN": "arn:aws:kinesis:us-east-1:123456789012:stream/agg"
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).expect("a Kinesis event")
}

fn index(body: &str) -> usize {
    body.trim_start_matches("rec-")
        .parse()
        .expect("a record body")
}

/// Every record carries its partition key and sequence number.
fn check_attributes(delivered: &[Delivered]) {
    for r in delivered.iter().flat_map(|d| &d.records) {
        let i = index(&r.body);
        let pk = &r.attributes[attribute::PARTITION_KEY];
        assert_eq!(pk.string_value.as_deref(), Some(key(i)), "{}", r.id);
        let sn = &r.attributes[attribute::SEQUENCE_NUMBER];
        assert_eq!(
            sn.string_value.as_deref(),
            Some(seq(i).as_str()),
            "{}",
            r.id
        );
    }
}

/// One delivery from `from`, as Lambda makes it; the records reported.
async fn deliver<T: Transport + Clone>(fwd: &Forwarder<T>, from: usize) -> Vec<String> {
    let response = Handler::new(Settings::default(), fwd.clone())
        .handle(event(from, N), None)
        .await
        .expect("an answer");
    reported(&response).iter().map(|s| s.to_string()).collect()
}

/// The records of the one aggregate SQS refused (or kept failing), holding
/// the record `poison`; the whole call failed once.
fn refused_span(fake: &sqs_forwarder::test_support::FakeSqs, poison: usize) -> Vec<usize> {
    let (bodies, failed_calls) = crate::refused(fake);
    assert_eq!(failed_calls, 1, "the whole call failed once");
    let span: Vec<usize> = bodies.iter().map(|b| index(b)).collect();
    assert!(span.len() > 1 && span.contains(&poison), "{span:?}");
    span
}

#[tokio::test(flavor = "multi_thread")]
async fn standard_queue_faults_checkpoint_at_the_refused_aggregate() {
    let sqs = client();
    let url = create_queue(&sqs, "agg-kinesis", &[]).await;
    let base = connect(&config(&url, &[]), GroupIds::FromSource).await;
    let poison = format!("\"{}\"", body(1000));
    let (fake, fwd, _) = crate::faulty(&base, Some(&poison), None);

    let first = deliver(&fwd, 0).await;
    let span = refused_span(&fake, 1000);
    let (j, k) = (span[0], span[span.len() - 1]);
    assert_eq!(span, (j..=k).collect::<Vec<_>>(), "one run of records");
    // The refused aggregate's records, the lowest (the checkpoint) first.
    assert_eq!(first, span.iter().map(|i| seq(*i)).collect::<Vec<_>>());
    assert!(deliver(&fwd, j).await.is_empty(), "the redelivery is done");

    let messages = drain(&sqs, &url, usize::MAX).await;
    let delivered = read_all(&messages);
    check_attributes(&delivered);
    // Before the checkpoint once; the refused aggregate's records once (in
    // the redelivery); those after it twice (Lambda resends from the
    // checkpoint on).
    let want: BTreeMap<String, usize> = (0..N)
        .map(|i| (body(i), if i > k { 2 } else { 1 }))
        .collect();
    assert_eq!(copies(&delivered), want);
    let records = want.values().sum();
    assert_aggregated(&delivered, records, records / 50);
    assert_python_agrees(&messages);
}

#[tokio::test(flavor = "multi_thread")]
async fn fifo_queue_a_failing_aggregate_holds_its_group_and_order_is_kept() {
    let sqs = client();
    let url = create_queue(
        &sqs,
        "agg-kinesis.fifo",
        &[(QueueAttributeName::ContentBasedDeduplication, "false")],
    )
    .await;
    let base = connect(&config(&url, &[]), GroupIds::FromSource).await;
    let poison = format!("\"{}\"", body(1000));
    let (fake, fwd, failing) = crate::faulty(&base, None, Some(&poison));

    let first = deliver(&fwd, 0).await;
    failing.store(false, std::sync::atomic::Ordering::SeqCst);
    let span = refused_span(&fake, 1000);
    assert!(span.iter().all(|i| key(*i) == "b"), "one group: {span:?}");
    let j = span[0];
    // The failed aggregate's records and every later one of group b (held
    // behind them) are reported, the lowest first.
    let want: Vec<String> = (j..N).filter(|i| key(*i) == "b").map(seq).collect();
    assert_eq!(first, want);
    assert!(deliver(&fwd, j).await.is_empty(), "the redelivery is done");

    let messages = drain(&sqs, &url, usize::MAX).await;
    let delivered = read_all(&messages);
    check_attributes(&delivered);
    assert_aggregated(
        &delivered,
        delivered.iter().map(|d| d.records.len()).sum(),
        N / 25,
    );
    for (group, records) in fifo_groups(&delivered) {
        for (b, dedup) in &records {
            assert_eq!(key(index(b)), group, "an aggregate holds one group");
            let own = format!("shardId-000000000004:{}", seq(index(b)));
            assert_eq!(dedup, &own, "the record's own deduplication id");
        }
        // In order. Lambda resends the other groups' records from the
        // checkpoint on. Repacked from there, the first aggregate of each
        // group may differ from the first time (other deduplication id: SQS
        // takes it again); the later ones are the first time's (packed from
        // their segment's end, the record whose id ends an aggregate,
        // `cuts_after`) and SQS drops them. So a second copy, if any, is of
        // the group's records from j up to that record at most, in order,
        // each with the same per-record deduplication id (consumers
        // deduplicating per record drop it).
        let order: Vec<usize> = records.iter().map(|(b, _)| index(b)).collect();
        let mine: Vec<usize> = (0..N).filter(|i| key(*i) == group).collect();
        let first_pass = &order[..order.len().min(mine.len())];
        let rest = &order[first_pass.len()..];
        if group == "b" {
            assert_eq!(order, mine, "group b: each record once, in order");
        } else {
            assert_eq!(first_pass, &mine[..], "group {group} in order");
            let cut = mine
                .iter()
                .copied()
                .find(|i| *i >= j && cuts_after(&format!("shardId-000000000004:{}", seq(*i))));
            let again: Vec<usize> = mine
                .iter()
                .copied()
                .filter(|i| *i >= j && cut.is_none_or(|c| *i <= c))
                .collect();
            assert!(
                rest.iter().all(|i| again.contains(i)) && rest.is_sorted(),
                "group {group}: a second copy is at most the records from {j} to the first cut {cut:?}, in order: {rest:?}"
            );
        }
    }
    assert_python_agrees(&messages);
}

/// Messages in `url` (the local SQS counts exactly).
async fn in_queue(sqs: &aws_sdk_sqs::Client, url: &str) -> usize {
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .send()
        .await
        .expect("queue attributes");
    out.attributes()
        .and_then(|a| a.get(&QueueAttributeName::ApproximateNumberOfMessages))
        .and_then(|n| n.parse().ok())
        .expect("a count")
}

#[tokio::test(flavor = "multi_thread")]
async fn fifo_a_retry_from_a_later_record_adds_at_most_one_message_per_group() {
    // 2,000 records over four partition keys (four groups), of uneven
    // sizes, in aggregates of at most 8 KiB (so size cuts often): after
    // the whole event, Lambda's retries from later records (its checkpoint)
    // make the first run's aggregates again, which SQS drops as
    // duplicates, except at most the first one of each group.
    let sqs = client();
    let url = create_queue(
        &sqs,
        "agg-kinesis-retry.fifo",
        &[(QueueAttributeName::ContentBasedDeduplication, "false")],
    )
    .await;
    let fwd = connect(
        &config(&url, &[("AGGREGATE_BYTES", "8192")]),
        GroupIds::FromSource,
    )
    .await;
    let record = |i: usize| {
        let pad = "x".repeat((i * 7_919) % 400);
        (format!("tenant-{}", i % 4), format!("{}-{pad}", body(i)))
    };
    let handler = Handler::new(Settings::default(), fwd);
    let deliver = |from: usize| {
        let handler = &handler;
        async move {
            let answer = handler
                .handle(event_of(from, N, record), None)
                .await
                .expect("an answer");
            assert!(reported(&answer).is_empty(), "from {from}: all sent");
        }
    };
    deliver(0).await;
    let first = in_queue(&sqs, &url).await;
    assert!(first > 60, "size cut many aggregates: {first}");
    // (More offsets, against a fake SQS: the shared crate's
    // tests/aggregate.rs.)
    for from in [1_007, 1_500, 1_999] {
        let before = in_queue(&sqs, &url).await;
        deliver(from).await;
        let new = in_queue(&sqs, &url).await - before;
        let groups = (from..N)
            .map(|i| i % 4)
            .collect::<std::collections::BTreeSet<_>>();
        assert!(
            new <= groups.len(),
            "from {from}: {new} messages SQS took again; the bound is one per group ({})",
            groups.len()
        );
    }
    // Every record is there, in order in its group; those a retry sent
    // again are in its group's first new message only.
    let messages = drain(&sqs, &url, usize::MAX).await;
    let delivered = read_all(&messages);
    for (group, records) in fifo_groups(&delivered) {
        let mine: Vec<usize> = (0..N)
            .filter(|i| format!("tenant-{}", i % 4) == group)
            .collect();
        let order: Vec<usize> = records
            .iter()
            .map(|(b, _)| index(b.split('-').take(2).collect::<Vec<_>>().join("-").as_str()))
            .collect();
        assert_eq!(&order[..mine.len()], &mine[..], "group {group} in order");
    }
}
