//! rabbitmq-to-sqs with aggregation: a drained queue goes in few messages;
//! a refused aggregate's messages are rejected (dead-lettered), an
//! aggregate SQS keeps failing is requeued whole (on FIFO with the rest of
//! its group), in order, and the next poll delivers it once: nothing lost
//! nor duplicated in the broker or in SQS.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use aws_sdk_sqs::types::QueueAttributeName;
use forwarder_e2e::aggregation::{
    assert_aggregated, assert_python_agrees, config, copies, fifo_groups, read_all,
};
use forwarder_e2e::rabbitmq::{Broker, amqp_url, function, poll};
use forwarder_e2e::{client, connect, create_queue, drain};
use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use rabbitmq_to_sqs::drain::StopReason;
use sqs_forwarder::{GroupIds, Transport};

const N: usize = 2_000;

fn body(i: usize) -> String {
    format!("m-{i:05}")
}

fn tenant(i: usize) -> &'static str {
    ["a", "b"][i % 2]
}

fn index(body: &str) -> usize {
    body.trim_start_matches("m-")
        .parse()
        .expect("a message body")
}

/// `N` messages, each with a message id and a `tenant` header.
async fn publish(broker: &Broker, queue: &str) {
    for i in 0..N {
        let mut headers = FieldTable::default();
        headers.insert(
            "tenant".into(),
            AMQPValue::LongString(LongString::from(tenant(i))),
        );
        let props = BasicProperties::default()
            .with_headers(headers)
            .with_message_id(ShortString::from(format!("id-{i}")));
        broker.publish(queue, body(i).as_bytes(), props).await;
    }
}

fn vars(queue: &str) -> Vec<(&'static str, String)> {
    vec![
        ("RABBITMQ_URL", amqp_url()),
        ("RABBITMQ_QUEUES", queue.to_owned()),
        ("RABBITMQ_PREFETCH", "1000".to_owned()),
        ("GROUP_ID_FROM", "header:tenant".to_owned()),
    ]
}

async fn drain_once<T: Transport>(
    queue: &str,
    fwd: sqs_forwarder::Forwarder<T>,
) -> (u64, u64, u64, u64, u64) {
    let vars = vars(queue);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let report = poll(&function(&vars, fwd)).await;
    let q = &report.queues[0];
    assert_eq!(q.stop, StopReason::Empty, "{q:?}");
    (q.received, q.sent, q.rejected, q.requeued, q.lost)
}

fn indexes(bodies: &[String]) -> Vec<usize> {
    bodies.iter().map(|b| index(b)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn standard_queue_refused_messages_are_dead_lettered_failing_ones_requeued_whole() {
    let mut broker = Broker::new().await;
    let queue = broker.queue("agg-rmq", true).await;
    publish(&broker, &queue).await;
    let sqs = client();
    let url = create_queue(&sqs, "agg-rmq", &[]).await;
    let base = connect(&config(&url, &[]), GroupIds::FromSource).await;
    // The aggregate holding m-01000 is refused, the one holding m-01500
    // fails every attempt of the first poll.
    let (refuse, fail) = (format!("\"{}\"", body(1000)), format!("\"{}\"", body(1500)));
    let (fake, fwd, failing) = crate::faulty(&base, Some(&refuse), Some(&fail));

    let first = drain_once(&queue, fwd.clone()).await;
    let (entries, failed_calls) = crate::refused_entries(&fake);
    assert_eq!(failed_calls, 1, "the whole call failed once");
    assert_eq!(entries.len(), 2, "{entries:?}");
    let poison = indexes(&entries[0]);
    let retry = indexes(&entries[1]);
    assert!(poison.contains(&1000) && retry.contains(&1500));
    let (p, r) = (poison.len() as u64, retry.len() as u64);
    assert_eq!(first, (N as u64, N as u64 - p - r, p, r, 0));
    let dlq: Vec<usize> = indexes(&broker.take_all(&format!("{queue}.dlq")).await);
    assert_eq!(
        dlq, poison,
        "the refused aggregate's messages, dead-lettered"
    );
    // Requeued in order: peek by a second poll with the fault gone.
    assert_eq!(broker.ready(&queue).await as u64, r);
    failing.store(false, Ordering::SeqCst);
    assert_eq!(drain_once(&queue, fwd).await, (r, r, 0, 0, 0));
    assert_eq!(broker.ready(&queue).await, 0);

    let delivered = read_all(&drain(&sqs, &url, usize::MAX).await);
    let want: BTreeMap<String, usize> = (0..N)
        .filter(|i| !poison.contains(i))
        .map(|i| (body(i), 1))
        .collect();
    assert_eq!(
        copies(&delivered),
        want,
        "each message sent once, the refused not"
    );
    assert_aggregated(&delivered, N - poison.len(), N / 50);
    // The failing aggregate's messages came back whole and in order.
    let again: Vec<usize> = delivered
        .iter()
        .filter(|d| d.records.iter().any(|r| r.body == body(1500)))
        .flat_map(|d| d.records.iter().map(|r| index(&r.body)))
        .collect();
    assert_eq!(again, retry);
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fifo_queue_a_refused_aggregate_is_dead_lettered_a_failing_one_holds_its_group() {
    let mut broker = Broker::new().await;
    let queue = broker.queue("agg-rmq-fifo", true).await;
    publish(&broker, &queue).await;
    let sqs = client();
    let url = create_queue(
        &sqs,
        "agg-rmq.fifo",
        &[(QueueAttributeName::ContentBasedDeduplication, "false")],
    )
    .await;
    let base = connect(&config(&url, &[]), GroupIds::FromSource).await;
    // Tenant a's aggregate holding m-01000 is refused; tenant b's holding
    // m-01501 fails every attempt of the first poll.
    let (refuse, fail) = (format!("\"{}\"", body(1000)), format!("\"{}\"", body(1501)));
    let (fake, fwd, failing) = crate::faulty(&base, Some(&refuse), Some(&fail));

    let first = drain_once(&queue, fwd.clone()).await;
    let (entries, failed_calls) = crate::refused_entries(&fake);
    assert_eq!(failed_calls, 1, "the whole call failed once");
    assert_eq!(entries.len(), 2, "{entries:?}");
    let poison = indexes(&entries[0]);
    let retry = indexes(&entries[1]);
    assert!(poison.contains(&1000) && poison.iter().all(|i| tenant(*i) == "a"));
    assert!(retry.contains(&1501) && retry.iter().all(|i| tenant(*i) == "b"));
    // The refused messages are dead-lettered and tenant a goes on; tenant
    // b's failing messages and every later one are held (its group
    // blocked), then requeued in order.
    let held: Vec<usize> = (retry[0]..N).filter(|i| tenant(*i) == "b").collect();
    let (p, h) = (poison.len() as u64, held.len() as u64);
    assert_eq!(first, (N as u64, N as u64 - p - h, p, h, 0));
    assert_eq!(
        indexes(&broker.take_all(&format!("{queue}.dlq")).await),
        poison
    );
    failing.store(false, Ordering::SeqCst);
    assert_eq!(drain_once(&queue, fwd).await, (h, h, 0, 0, 0));

    let messages = drain(&sqs, &url, usize::MAX).await;
    let delivered = read_all(&messages);
    assert_aggregated(&delivered, N - poison.len(), N / 25);
    let groups = fifo_groups(&delivered);
    assert_eq!(groups.len(), 2);
    for (group, records) in groups {
        let want: Vec<usize> = (0..N)
            .filter(|i| tenant(*i) == group && !poison.contains(i))
            .collect();
        assert_eq!(
            indexes(&records.iter().map(|r| r.0.clone()).collect::<Vec<_>>()),
            want,
            "group {group}: once each, in order"
        );
        for (b, dedup) in &records {
            assert_eq!(dedup, &format!("id-{}", index(b)), "the message id");
        }
    }
    assert_python_agrees(&messages);
    broker.cleanup().await;
}
