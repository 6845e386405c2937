//! End-to-end broker faults for rabbitmq-to-sqs (issue 10, "Broker faults"),
//! against the real RabbitMQ on this machine and the local SQS endpoint:
//!
//! * the broker restarted mid-drain (`rabbitmqctl stop_app`, a poll while it
//!   is down, `rabbitmqctl start_app`);
//! * the queue deleted mid-drain, and deleted before the drain.
//!
//! In each, every published message is counted where it ends: in SQS, still
//! in RabbitMQ, or deleted with its queue by the operator (the broker says
//! how many); none is lost by the poller. The invocation's answer is the one
//! the function's README documents: an error naming the queue (or the
//! broker) when a drain ended with a broker error or the broker cannot be
//! reached, a report with `stop: "cancelled"` when the queue was deleted.
//! (A connection closed by the broker mid-drain is in `rabbitmq_to_sqs.rs`.)
//!
//! A restart disturbs every connection to the broker, so the tests here run
//! one at a time (`SERIAL`), the restart waits until no other client is
//! connected (another test binary run at the same time), and a guard starts
//! the broker again and waits for it even when a test fails. `stop_app` /
//! `start_app` restart the RabbitMQ application inside its running Erlang
//! node (about a second each here); a durable queue and persistent messages
//! survive it, as they would a full restart.

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant as StdInstant};

use forwarder_e2e::rabbitmq::{Broker, amqp_url, fake_forwarder, far, function, unique};
use forwarder_e2e::{client, create_queue, drain};
use lapin::BasicProperties;
use lapin::options::QueueDeleteOptions;
use rabbitmq_to_sqs::broker::BrokerError;
use rabbitmq_to_sqs::drain::StopReason;
use rabbitmq_to_sqs::{Handler, HandlerError};
use serde_json::Value;
use sqs_forwarder::SqsTransport;
use sqs_forwarder::call::transport::BoxFuture;
use sqs_forwarder::test_support::FakeSqs;

/// One test at a time in this binary.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Every connection this binary opens is named with this prefix.
const OURS: &str = "rmq-faults";

// ---------------------------------------------------------------- the broker

fn rabbitmqctl(args: &[&str]) -> Result<String, String> {
    let out = Command::new("rabbitmqctl")
        .args(args)
        .output()
        .map_err(|e| format!("rabbitmqctl {args:?}: {e} (is rabbitmq-server installed?)"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "rabbitmqctl {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn listening() -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], 5672));
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
}

/// Start the RabbitMQ application (a no-op when it runs) and wait until it
/// has booted and listens on 5672; how long that took.
fn start_broker() -> Result<Duration, String> {
    let t0 = StdInstant::now();
    rabbitmqctl(&["start_app"])?;
    rabbitmqctl(&["await_startup", "--timeout", "120"])?;
    while !listening() {
        if t0.elapsed() > Duration::from_secs(120) {
            return Err(
                "RabbitMQ does not listen on 127.0.0.1:5672 two minutes after start_app".into(),
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(t0.elapsed())
}

/// Starts the broker again when dropped, so that a failing test does not
/// leave it stopped for the tests that follow.
struct RestartGuard;

impl Drop for RestartGuard {
    fn drop(&mut self) {
        if let Err(e) = start_broker() {
            eprintln!("could not start RabbitMQ again after the restart test: {e}");
        }
    }
}

/// Stopping the broker is only fair when this machine's broker is the one
/// under test.
fn assert_local_broker() {
    let url = amqp_url();
    assert!(
        url.contains("@127.0.0.1") || url.contains("@localhost"),
        "the restart test stops the local broker with rabbitmqctl; RABBITMQ_TEST_URL names another one"
    );
}

/// Wait (up to two minutes) until no client but this binary's is
/// connected: a restart would break another program's run (another test
/// binary started at the same time). Fails, naming them, if they stay.
fn wait_until_alone() {
    let t0 = StdInstant::now();
    loop {
        let listed = rabbitmqctl(&[
            "list_connections",
            "-q",
            "--no-table-headers",
            "peer_host",
            "client_properties",
        ])
        .expect("rabbitmqctl list_connections");
        let others: Vec<&str> = listed
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.contains(OURS))
            .collect();
        if others.is_empty() {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "other clients are connected to the broker this test restarts; run it alone: {others:#?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn persistent() -> BasicProperties {
    BasicProperties::default().with_delivery_mode(2)
}

/// A broker helper whose connection is named as this binary's.
async fn helper() -> Broker {
    Broker::named(&unique(&format!("{OURS}-helper"))).await
}

// ---------------------------------------------------------------- SQS

type Fault = Arc<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;

/// The function polling `queues` (comma-separated, prefetch 5) into the SQS
/// queue at `url`, with `fault` before SQS call `at`.
fn poller(queues: &str, url: &str, at: usize, fault: Option<Fault>) -> Handler<FakeSqs> {
    // The local SQS endpoint, with the fault run just before the
    // forwarder's `at`-th `SendMessageBatch` call (counted from 1) goes out.
    let mut sqs = FakeSqs::in_front_of(SqsTransport::new(client(), url));
    if let (Some(fault), Some(call)) = (fault, at.checked_sub(1)) {
        sqs = sqs.before_call(call, move || fault());
    }
    function(
        &[
            ("RABBITMQ_URL", &amqp_url()),
            ("RABBITMQ_QUEUES", queues),
            ("RABBITMQ_PREFETCH", "5"),
        ],
        fake_forwarder(sqs, false),
    )
    .with_connection_name(unique(&format!("{OURS}-function")))
}

/// EventBridge's scheduled event: the invocation as Lambda makes it.
fn schedule() -> Value {
    serde_json::from_str(include_str!("../events/rabbitmq-schedule.json"))
        .expect("sample scheduled event")
}

/// Receive (and delete) what the SQS queue holds: the bodies.
async fn in_sqs(url: &str, expected: usize) -> Vec<String> {
    drain(&client(), url, expected)
        .await
        .iter()
        .map(|m| m.body().expect("body").to_owned())
        .collect()
}

fn texts(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:02}")).collect()
}

// ---------------------------------------------------------------- tests

#[tokio::test(flavor = "multi_thread")]
async fn a_broker_restarted_mid_drain_loses_nothing() {
    let _one_at_a_time = SERIAL.lock().await;
    assert_local_broker();
    // Dropped before the lock: the broker runs again before the next test.
    let _restart = RestartGuard;

    let mut broker = helper().await;
    let queue = broker.durable_queue("rmq-faults-restart").await;
    let all = texts("restart", 30);
    for body in &all {
        broker.publish(&queue, body.as_bytes(), persistent()).await;
    }
    let url = create_queue(&client(), "rmq-faults-restart", &[]).await;

    // The broker stops while SQS takes the second batch.
    wait_until_alone();
    let stop: Fault = Arc::new(|| {
        Box::pin(async {
            tokio::task::spawn_blocking(|| rabbitmqctl(&["stop_app"]))
                .await
                .expect("rabbitmqctl")
                .expect("rabbitmqctl stop_app");
        })
    });
    let e = poller(&queue, &url, 2, Some(stop))
        .handle_until(schedule(), far(), None)
        .await
        .expect_err("the broker stopped mid-drain: the invocation fails");
    let shown = format!("{e}");
    eprintln!("the answer when the broker stopped mid-drain: {shown}");
    assert_eq!(e.kind(), "BrokerError", "{shown}");
    let HandlerError::Poll { report, .. } = &e else {
        panic!("unexpected error: {shown}");
    };
    let q = &report.queues[0];
    assert_eq!(
        (q.queue.as_str(), q.stop),
        (queue.as_str(), StopReason::Error)
    );
    assert!(q.received >= 2 && q.received < 30, "{q:?}");
    assert!(shown.contains(&format!("queue {queue:?}")), "{shown}");
    assert!(shown.contains("redelivers"), "{shown}");
    assert!(!shown.contains("guest:guest"), "{shown}");

    // A tick while the broker is down fails at once, naming the broker.
    let e = poller(&queue, &url, 0, None)
        .handle_until(schedule(), far(), None)
        .await
        .expect_err("the broker is down");
    let shown = format!("{e}");
    eprintln!("the answer while the broker is down: {shown}");
    assert!(
        matches!(
            e,
            HandlerError::Broker(BrokerError::Connect { .. } | BrokerError::Timeout { .. })
        ),
        "{shown}"
    );
    assert_eq!(e.kind(), "BrokerUnreachable");
    assert!(shown.contains("guest:***@127.0.0.1:5672"), "{shown}");
    assert!(!shown.contains("guest:guest"), "{shown}");

    let took = start_broker().expect("RabbitMQ starts again");
    eprintln!("RabbitMQ restarted in {took:?}");
    let broker = broker.reconnect().await;

    // Count both places: each message is in SQS, or in RabbitMQ (the batch
    // in flight when the broker stopped may be in both).
    let in_rabbitmq = broker.ready(&queue).await as usize;
    let first = in_sqs(&url, all.len()).await;
    assert!(
        in_rabbitmq > 0,
        "the durable queue kept its persistent messages"
    );
    assert!(
        first.len() + in_rabbitmq >= all.len(),
        "{} in SQS + {in_rabbitmq} in RabbitMQ < {}",
        first.len(),
        all.len()
    );

    // The next tick takes the rest.
    let out = poller(&queue, &url, 0, None)
        .handle_until(schedule(), far(), None)
        .await
        .expect("the broker is back");
    assert_eq!(out["queues"][0]["stop"], "empty", "{out}");
    assert_eq!(out["queues"][0]["sent"], in_rabbitmq, "{out}");
    let second = in_sqs(&url, in_rabbitmq).await;
    assert_eq!(second.len(), in_rabbitmq);
    assert_eq!(broker.ready(&queue).await, 0);

    let distinct: BTreeSet<&String> = first.iter().chain(&second).collect();
    assert_eq!(
        distinct,
        all.iter().collect(),
        "every message reached SQS at least once"
    );
    let twice = first.len() + second.len() - all.len();
    assert!(
        twice <= 5,
        "only the batch in flight (prefetch 5) may arrive twice: {twice}"
    );
    broker.cleanup().await;
    assert!(listening(), "the broker runs again");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_queue_deleted_mid_drain_ends_its_drain_and_the_next_queue_is_drained() {
    let _one_at_a_time = SERIAL.lock().await;
    let mut broker = helper().await;
    let doomed = broker.queue("rmq-faults-deleted", false).await;
    let next = broker.queue("rmq-faults-next", false).await;
    let doomed_all = texts("doomed", 30);
    let next_all = texts("next", 10);
    for body in &doomed_all {
        broker.publish_text(&doomed, body).await;
    }
    for body in &next_all {
        broker.publish_text(&next, body).await;
    }
    let url = create_queue(&client(), "rmq-faults-deleted", &[]).await;

    // The operator deletes the queue while SQS takes its second batch; the
    // broker says how many messages went with it.
    let deleted = Arc::new(AtomicU32::new(u32::MAX));
    let (ch, name, count) = (broker.ch.clone(), doomed.clone(), Arc::clone(&deleted));
    let delete: Fault = Arc::new(move || {
        let (ch, name, count) = (ch.clone(), name.clone(), Arc::clone(&count));
        Box::pin(async move {
            let n = ch
                .queue_delete(name.as_str().into(), QueueDeleteOptions::default())
                .await
                .expect("queue.delete");
            count.store(n, Ordering::SeqCst);
        })
    });
    let out = poller(&format!("{doomed},{next}"), &url, 2, Some(delete))
        .handle_until(schedule(), far(), None)
        .await
        .expect("a deleted queue ends its drain; it is no broker error");
    eprintln!("the answer when the queue was deleted mid-drain: {out}");
    let deleted = deleted.load(Ordering::SeqCst);
    assert_ne!(deleted, u32::MAX, "the queue was deleted");

    let q = &out["queues"][0];
    assert_eq!(q["queue"], doomed.as_str(), "{out}");
    assert_eq!(q["stop"], "cancelled", "{out}");
    assert!(q.get("error").is_none(), "{out}");
    let n = &out["queues"][1];
    assert_eq!(
        (&n["queue"], &n["stop"], &n["sent"]),
        (
            &Value::from(next.as_str()),
            &Value::from("empty"),
            &Value::from(10)
        ),
        "{out}"
    );

    let got = in_sqs(&url, 40).await;
    let from_doomed: Vec<&String> = got.iter().filter(|b| b.starts_with("doomed-")).collect();
    let distinct: BTreeSet<&String> = from_doomed.iter().copied().collect();
    assert_eq!(distinct.len(), from_doomed.len(), "none twice: {got:?}");
    assert_eq!(q["sent"], from_doomed.len(), "{out}");
    assert_eq!(
        q["received"],
        from_doomed.len(),
        "every message taken was sent: {out}"
    );
    assert_eq!(
        from_doomed.len() + deleted as usize,
        doomed_all.len(),
        "each message of the deleted queue is in SQS or went with the queue ({deleted}, counted by the broker)"
    );
    let mut from_next: Vec<&String> = got.iter().filter(|b| b.starts_with("next-")).collect();
    from_next.sort();
    assert_eq!(from_next, next_all.iter().collect::<Vec<_>>());
    assert_eq!(broker.ready(&next).await, 0);
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_queue_deleted_before_the_drain_fails_the_invocation_naming_it() {
    let _one_at_a_time = SERIAL.lock().await;
    let mut broker = helper().await;
    let gone = broker.queue("rmq-faults-gone", false).await;
    let next = broker.queue("rmq-faults-after", false).await;
    for body in texts("gone", 5) {
        broker.publish_text(&gone, &body).await;
    }
    let next_all = texts("after", 10);
    for body in &next_all {
        broker.publish_text(&next, body).await;
    }
    let deleted = broker
        .ch
        .queue_delete(gone.as_str().into(), QueueDeleteOptions::default())
        .await
        .expect("queue.delete");
    assert_eq!(
        deleted, 5,
        "the operator's delete took the queue's messages"
    );
    let url = create_queue(&client(), "rmq-faults-gone", &[]).await;

    let e = poller(&format!("{gone},{next}"), &url, 0, None)
        .handle_until(schedule(), far(), None)
        .await
        .expect_err("a configured queue is missing");
    let shown = format!("{e}");
    eprintln!("the answer when a queue was deleted before the drain: {shown}");
    assert_eq!(e.kind(), "BrokerError", "{shown}");
    assert!(shown.contains(&format!("queue {gone:?}")), "{shown}");
    assert!(shown.contains("NOT_FOUND"), "{shown}");
    let HandlerError::Poll { report, sent, .. } = &e else {
        panic!("unexpected error: {shown}");
    };
    let (g, n) = (&report.queues[0], &report.queues[1]);
    assert_eq!((g.stop, g.received), (StopReason::Error, 0), "{g:?}");
    assert!(g.error.as_deref().unwrap_or("").contains(&gone), "{g:?}");
    assert_eq!((n.stop, n.sent), (StopReason::Empty, 10), "{n:?}");
    assert_eq!(*sent, 10);

    // The other queue went to SQS whole, and left RabbitMQ.
    let mut got = in_sqs(&url, 10).await;
    got.sort();
    assert_eq!(got, next_all);
    assert_eq!(broker.ready(&next).await, 0);
    broker.cleanup().await;
}
