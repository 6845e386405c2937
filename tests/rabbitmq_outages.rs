//! End-to-end: rabbitmq-to-sqs when the links around it fail, against the
//! real RabbitMQ on this machine and the local SQS endpoint, with a proxy
//! of the tests' own between the function and either (`FaultProxy`):
//!
//! * the link to the broker stalls mid-drain: the tick ends with
//!   `BrokerError` before its deadline, and nothing is lost;
//! * SQS cannot be reached for ten ticks, draining a quorum queue with a
//!   `delivery-limit` of 3: no message is dead-lettered, each reaches SQS
//!   once when it is back;
//! * SQS answers but refuses every `SendMessageBatch` for ten ticks: each
//!   tick after the first spends at most one delivery attempt, on one
//!   message, and none is dropped;
//! * a user without permission on the vhost: `BrokerAccessRefused`, naming
//!   the vhost.
//!
//! And what the drain's order of cancel and requeue rests on, measured on
//! the broker itself: a quorum queue counts one delivery attempt for a
//! message requeued after its consumer is cancelled, two when it is
//! requeued while the consumer is subscribed (the broker delivers it to
//! the consumer again, and the channel's close returns it once more).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use forwarder_e2e::fault_proxy::{FaultProxy, Mode};
use forwarder_e2e::rabbitmq::{
    Broker, amqp_url, amqp_url_via, broker_addr, fake_forwarder, far, function, unique,
};
use forwarder_e2e::{attributes, client, create_queue, drain, endpoint, sdk_config_at};
use rabbitmq_to_sqs::Handler;
use rabbitmq_to_sqs::drain::{PollReport, StopReason};
use sqs_forwarder::test_support::FakeSqs;
use sqs_forwarder::test_support::fake_sqs::transient;
use sqs_forwarder::{Config, Forwarder, SqsTransport, Transport};

/// Ticks SQS is out for.
const OUTAGE_TICKS: usize = 10;
/// The quorum queues' delivery limit.
const LIMIT: i32 = 3;
/// Messages published to each queue; a tick takes at most `PER_TICK`.
const MESSAGES: usize = 30;
const PER_TICK: &str = "10";

fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The local SQS's address (its host and port).
fn sqs_addr() -> std::net::SocketAddr {
    use std::net::ToSocketAddrs;
    let e = endpoint();
    let hostport = e.trim_start_matches("http://").trim_end_matches('/');
    hostport
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .expect("SQS_TEST_ENDPOINT's address")
}

/// A forwarder to `queue_url` whose calls go through `proxy`, the direct
/// client with two attempts a message and short waits.
async fn forwarder_via(proxy: &FaultProxy, queue_url: &str) -> Forwarder<SqsTransport> {
    let vars = [
        ("QUEUE_URL", queue_url.to_owned()),
        ("RETRY_MAX_ATTEMPTS", "2".to_owned()),
        ("RETRY_BASE_DELAY_MS", "1".to_owned()),
        ("CALL_TIMEOUT_MS", "1000".to_owned()),
    ];
    let config =
        Config::from_lookup(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()))
            .expect("config");
    sqs_forwarder::setup::startup::connect_sdk(
        &sdk_config_at(&format!("http://{}", proxy.addr)),
        &config,
        sqs_forwarder::GroupIds::FromSource,
    )
    .await
    .expect("connect through the proxy")
}

fn quorum_function<T: Transport>(queue: &str, forwarder: Forwarder<T>) -> Handler<T> {
    function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", queue),
            ("RABBITMQ_PREFETCH", PER_TICK),
            ("RABBITMQ_MAX_MESSAGES", PER_TICK),
        ],
        forwarder,
    )
}

async fn tick<T: Transport>(f: &Handler<T>) -> PollReport {
    f.poll_until(far(), None).await.expect("no broker error")
}

/// The `x-delivery-count` header each message reached SQS with (absent: 0),
/// by body.
fn delivery_counts(messages: &[aws_sdk_sqs::types::Message]) -> BTreeMap<String, u32> {
    messages
        .iter()
        .map(|m| {
            let count = attributes(m)
                .get("x-delivery-count")
                .and_then(|(_, v)| std::str::from_utf8(v).ok()?.parse().ok())
                .unwrap_or(0);
            (m.body().unwrap_or("").to_owned(), count)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_link_ends_the_tick_with_a_broker_error_before_the_deadline() {
    let mut broker = Broker::new().await;
    let queue = broker.queue("rmq-stall", true).await;
    for i in 0..20 {
        broker.publish_text(&queue, &format!("m-{i:02}")).await;
    }
    let proxy = Arc::new(FaultProxy::start(broker_addr()).await);
    // The link stops forwarding once the first batch is in SQS's hands.
    let stall = proxy.clone();
    let fake = FakeSqs::new().before_call(0, move || {
        stall.set(Mode::Stall);
        Box::pin(async {})
    });
    let f = function(
        &[
            ("RABBITMQ_URL", &amqp_url_via(proxy.addr, "")),
            ("RABBITMQ_QUEUES", &queue),
            ("RABBITMQ_PREFETCH", "5"),
            ("RABBITMQ_STOP_MARGIN_MS", "1000"),
            ("RABBITMQ_HEARTBEAT_S", "30"),
        ],
        fake_forwarder(fake.clone(), false),
    );
    let started = std::time::Instant::now();
    let deadline_ms = epoch_ms() + 5_000;
    let e = f
        .handle(serde_json::json!({}), deadline_ms)
        .await
        .expect_err("a stalled link is an error");
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(4_950),
        "answered {took:?} after the start, the deadline is at 5 s"
    );
    assert_eq!(e.kind(), "BrokerError", "{e}");
    assert!(e.to_string().contains("stalled"), "{e}");

    // The broker requeues what was not acked once the link is gone:
    // everything is still there or in SQS.
    proxy.set(Mode::Refuse);
    let mut ready = 0;
    for _ in 0..100 {
        ready = broker.ready(&queue).await;
        if ready == 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let in_sqs = fake.accepted_bodies();
    assert_eq!(in_sqs.len(), 5, "the first batch");
    assert_eq!(ready, 20, "the acks never reached the broker: all requeued");
    let again = function(
        &[("RABBITMQ_URL", &amqp_url()), ("RABBITMQ_QUEUES", &queue)],
        fake_forwarder(fake.clone(), false),
    );
    let report = tick(&again).await;
    assert_eq!(report.sent(), 20, "{report:?}");
    let all: std::collections::BTreeSet<String> = fake.accepted_bodies().into_iter().collect();
    assert_eq!(all.len(), 20, "every message reached SQS");
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqs_out_of_reach_for_ten_ticks_costs_a_quorum_queue_no_message() {
    let mut broker = Broker::new().await;
    let queue = broker.quorum_queue("rmq-outage", LIMIT).await;
    for i in 0..MESSAGES {
        broker.publish_text(&queue, &format!("m-{i:02}")).await;
    }
    let sqs = client();
    let url = create_queue(&sqs, "rmq-outage", &[]).await;
    let proxy = FaultProxy::start(sqs_addr()).await;
    let f = quorum_function(&queue, forwarder_via(&proxy, &url).await);

    let first = tick(&f).await;
    assert_eq!(first.sent(), 10, "{first:?}");
    proxy.set(Mode::Refuse);
    let mut reports = Vec::new();
    for _ in 0..OUTAGE_TICKS {
        reports.push(tick(&f).await);
    }
    // The first tick of the outage took a batch and gave it back; the
    // others asked SQS first and took nothing.
    assert_eq!(reports[0].received(), 10, "{:?}", reports[0]);
    assert_eq!(reports[0].queues[0].requeued, 10, "{:?}", reports[0]);
    for r in &reports[1..] {
        assert_eq!(r.received(), 0, "{r:?}");
        assert_eq!(r.queues[0].stop, StopReason::SqsFailing, "{r:?}");
        assert_eq!(r.queues[0].backlog, Some(20), "{r:?}");
    }
    proxy.set(Mode::Pass);
    let mut sent = first.sent();
    for _ in 0..4 {
        sent += tick(&f).await.sent();
    }
    assert_eq!(sent as usize, MESSAGES);
    assert_eq!(
        broker.ready(&format!("{queue}.dlq")).await,
        0,
        "nothing dead-lettered"
    );
    assert_eq!(broker.ready(&queue).await, 0);
    let got = drain(&sqs, &url, MESSAGES).await;
    let counts = delivery_counts(&got);
    assert_eq!(got.len(), MESSAGES, "each once");
    assert_eq!(counts.len(), MESSAGES, "each once");
    assert!(
        counts.values().all(|c| *c <= 1),
        "at most one delivery attempt spent on any message: {counts:?}"
    );
    assert_eq!(counts.values().filter(|c| **c == 1).count(), 10);
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sends_refused_while_sqs_answers_cost_at_most_one_attempt_a_tick() {
    let mut broker = Broker::new().await;
    let queue = broker.quorum_queue("rmq-refused", LIMIT).await;
    for i in 0..MESSAGES {
        broker.publish_text(&queue, &format!("m-{i:02}")).await;
    }
    let sqs = client();
    let url = create_queue(&sqs, "rmq-refused", &[]).await;
    let proxy = FaultProxy::start(sqs_addr()).await;
    let refusing = Arc::new(AtomicBool::new(false));
    let r = refusing.clone();
    // SendMessageBatch refused (a 500: retryable) while `refusing`; the
    // probe goes through to the local SQS, which answers it.
    let fake = FakeSqs::in_front_of(forwarder_via(&proxy, &url).await.transport().clone())
        .fail_calls(move |_| r.load(Ordering::SeqCst).then(|| transient("InternalError")));
    let f = quorum_function(&queue, fake_forwarder(fake.clone(), false));

    let first = tick(&f).await;
    assert_eq!(first.sent(), 10, "{first:?}");
    refusing.store(true, Ordering::SeqCst);
    let mut reports = Vec::new();
    for _ in 0..OUTAGE_TICKS {
        reports.push(tick(&f).await);
    }
    assert_eq!(reports[0].received(), 10, "the batch in hand");
    let taken: Vec<u64> = reports[1..].iter().map(PollReport::received).collect();
    assert!(
        taken.iter().all(|t| *t <= 1),
        "one message a tick at most: {taken:?}"
    );
    assert!(fake.probe_count() >= OUTAGE_TICKS - 1);
    refusing.store(false, Ordering::SeqCst);
    for _ in 0..4 {
        tick(&f).await;
    }
    // Nothing dropped: each message in SQS or, past its delivery limit,
    // in the dead-letter queue; at most one a limit's worth of failing
    // ticks.
    let dead = broker.take_all(&format!("{queue}.dlq")).await;
    let got = drain(&sqs, &url, MESSAGES - dead.len()).await;
    let mut all: Vec<String> = got
        .iter()
        .map(|m| m.body().unwrap_or("").to_owned())
        .chain(dead.iter().cloned())
        .collect();
    all.sort();
    let expected: Vec<String> = (0..MESSAGES).map(|i| format!("m-{i:02}")).collect();
    assert_eq!(all, expected, "every message once, in SQS or dead-lettered");
    let bound = (OUTAGE_TICKS - 1).div_ceil(LIMIT as usize);
    assert!(
        dead.len() <= bound,
        "{} dead-lettered, more than one per {LIMIT} failing ticks: {dead:?}",
        dead.len()
    );
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_without_permission_on_the_vhost_is_refused_naming_it() {
    let user = unique("rmq-noperm");
    let ctl = |args: &[&str]| {
        std::process::Command::new("rabbitmqctl")
            .args(args)
            .output()
            .expect("rabbitmqctl must be installed for this test")
    };
    let added = ctl(&["add_user", &user, "pw-for-test"]);
    assert!(added.status.success(), "{added:?}");
    let url = amqp_url();
    let (scheme, rest) = url.split_once("://").expect("URL");
    let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let url = format!("{scheme}://{user}:pw-for-test@{host}");
    let f = function(
        &[("RABBITMQ_URL", &url), ("RABBITMQ_QUEUES", "any")],
        fake_forwarder(FakeSqs::new(), false),
    );
    let e = f.poll_until(far(), None).await.expect_err("no permission");
    let _ = ctl(&["delete_user", &user]);
    assert_eq!(e.kind(), "BrokerAccessRefused", "{e}");
    let shown = e.to_string();
    assert!(shown.contains("vhost \"/\""), "{shown}");
    assert!(shown.contains("530") || shown.contains("403"), "{shown}");
    assert!(!shown.contains("pw-for-test"), "{shown}");
}

/// `x-delivery-count` of each message of `queue`, taken in order.
async fn counts_in(broker: &Broker, queue: &str) -> Vec<i64> {
    use lapin::options::BasicGetOptions;
    use lapin::types::AMQPValue;
    let mut out = Vec::new();
    while let Some(m) = broker
        .ch
        .basic_get(queue.into(), BasicGetOptions { no_ack: true })
        .await
        .expect("basic.get")
    {
        let count = m
            .delivery
            .properties
            .headers()
            .as_ref()
            .and_then(|h| h.inner().get("x-delivery-count").cloned());
        out.push(match count {
            Some(AMQPValue::LongLongInt(n)) => n,
            Some(AMQPValue::LongInt(n)) => i64::from(n),
            _ => 0,
        });
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_quorum_queue_counts_a_return_once_when_the_consumer_is_cancelled_first() {
    use futures_util::StreamExt;
    use lapin::options::{
        BasicCancelOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions,
    };
    use lapin::types::FieldTable;
    let mut seen = Vec::new();
    for cancel_first in [true, false] {
        let mut broker = Broker::new().await;
        let queue = broker.quorum_queue("rmq-qq-count", 10).await;
        for i in 0..5 {
            broker.publish_text(&queue, &format!("m{i}")).await;
        }
        let ch = broker.conn.create_channel().await.expect("channel");
        ch.basic_qos(3, BasicQosOptions::default())
            .await
            .expect("qos");
        let mut consumer = ch
            .basic_consume(
                queue.as_str().into(),
                "c".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("consume");
        let mut last = 0;
        for _ in 0..3 {
            last = consumer
                .next()
                .await
                .expect("a delivery")
                .expect("delivered")
                .delivery_tag;
        }
        let nack = BasicNackOptions {
            multiple: true,
            requeue: true,
        };
        if cancel_first {
            ch.basic_cancel("c".into(), BasicCancelOptions::default())
                .await
                .expect("cancel");
            ch.basic_nack(last, nack).await.expect("nack");
        } else {
            ch.basic_nack(last, nack).await.expect("nack");
            tokio::time::sleep(Duration::from_millis(300)).await;
            ch.basic_cancel("c".into(), BasicCancelOptions::default())
                .await
                .expect("cancel");
        }
        ch.close(200, "OK".into()).await.expect("close");
        tokio::time::sleep(Duration::from_millis(300)).await;
        seen.push(counts_in(&broker, &queue).await);
        broker.cleanup().await;
    }
    // Returned messages go back to the front, in order.
    assert_eq!(
        seen[0],
        [1, 1, 1, 0, 0],
        "cancelled first: one attempt each"
    );
    assert_eq!(seen[1], [2, 2, 2, 0, 0], "requeued while subscribed: two");
}
