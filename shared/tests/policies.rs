//! Policies and reporting: the oversize policy, the sink's backpressure and
//! fail-on-error, and Lambda deadlines.

mod common;

use std::time::Duration;

use common::{bodies, endpoint, settings};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::{
    Forwarder, Message, Outcome, OversizePolicy, SinkError, SqsSink, deadline_from_epoch_millis,
};

#[tokio::test]
async fn oversize_fail_and_drop() {
    let endpoint = endpoint();
    let fail = Forwarder::new(
        endpoint.clone(),
        settings(OversizePolicy::Fail),
        EncodeRules::default(),
    );
    let msgs = || {
        vec![
            Message::new("x".repeat(1024), 0),
            Message::new("y".repeat(1025), 1),
        ]
    };
    let out = fail.send_all(msgs(), None).await;
    assert!(out[0].outcome.is_sent());
    let f = out[1].outcome.failure().expect("failed");
    assert_eq!((f.code.as_str(), f.retryable), ("MessageTooLarge", false));
    assert!(
        f.message.contains("1025 bytes") && f.message.contains("1024 bytes"),
        "{}",
        f.message
    );

    let drop = Forwarder::new(
        endpoint.clone(),
        settings(OversizePolicy::Drop),
        EncodeRules::default(),
    );
    let out = drop.send_all(msgs(), None).await;
    assert!(out[0].outcome.is_sent());
    assert!(
        matches!(&out[1].outcome, Outcome::Dropped { reason } if reason.contains("1025 bytes"))
    );
    // Neither policy ever sends the oversize message.
    assert!(bodies(&endpoint).iter().all(|b| b.len() == 1024));
}

#[tokio::test]
async fn the_encoding_marker_counts_towards_the_limit() {
    let endpoint = endpoint();
    let fwd = Forwarder::new(
        endpoint,
        settings(OversizePolicy::Fail),
        EncodeRules::default(),
    );
    // 738 raw bytes -> 984 base64 chars; + marker "sqs-forwarder.encoding"(22) + "String"(6) + "base64"(6) = 1018.
    let fits = vec![0xFFu8; 738];
    // 744 raw bytes -> 992 chars + 34 = 1026 > 1024.
    let too_big = vec![0xFFu8; 744];
    let out = fwd
        .send_all(vec![Message::new(fits, 0), Message::new(too_big, 1)], None)
        .await;
    assert!(out[0].outcome.is_sent(), "{:?}", out[0]);
    assert_eq!(
        out[1].outcome.failure().map(|f| f.code.as_str()),
        Some("MessageTooLarge")
    );
}

#[tokio::test]
async fn sink_applies_backpressure_and_bounds_in_flight_calls() {
    let endpoint = endpoint().delay(Duration::from_millis(20));
    let sink = SqsSink::builder(endpoint.clone())
        .max_batch_size(2)
        .max_in_flight_requests(3)
        .max_buffered_requests(4)
        .max_time_in_buffer(Duration::from_millis(10))
        .build();
    let started = tokio::time::Instant::now();
    let mut receipts = Vec::new();
    for i in 0..20 {
        receipts.push(
            sink.send(Message::new(format!("m{i}"), i))
                .await
                .expect("send"),
        );
    }
    sink.close().await.expect("close");
    for (i, r) in receipts.into_iter().enumerate() {
        let o = r.outcome().await.expect("settled");
        assert_eq!(o.position, i);
        assert!(o.outcome.is_sent());
    }
    assert!(endpoint.max_in_flight() <= 3);
    // 20 messages, at most 4 buffered at once, 20 ms per call: sends had to
    // wait for room, so this took several call rounds.
    assert!(
        started.elapsed() >= Duration::from_millis(80),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(bodies(&endpoint).len(), 20);
}

#[tokio::test]
async fn sink_fail_on_error_stops_later_sends() {
    let endpoint = endpoint();
    let sink = SqsSink::builder(endpoint.clone())
        .fail_on_error(true)
        .build();
    let bad = sink
        .send(Message::new("bad message", 0))
        .await
        .expect("first send is accepted");
    let err = sink
        .flush()
        .await
        .expect_err("the failure surfaces at flush");
    assert!(
        matches!(&err, SinkError::Failed(f) if f.code == "InvalidParameterValue"),
        "{err:?}"
    );
    assert!(
        bad.outcome()
            .await
            .expect("settled")
            .outcome
            .failure()
            .is_some()
    );
    let err = sink
        .send(Message::new("good", 1))
        .await
        .expect_err("later sends fail");
    assert!(matches!(err, SinkError::Failed(_)));

    let lenient = SqsSink::builder(endpoint).fail_on_error(false).build();
    let bad = lenient
        .send(Message::new("bad again", 0))
        .await
        .expect("send");
    lenient
        .flush()
        .await
        .expect("without fail_on_error, flush succeeds");
    assert!(
        bad.outcome()
            .await
            .expect("settled")
            .outcome
            .failure()
            .is_some()
    );
    assert!(lenient.send(Message::new("good", 1)).await.is_ok());
    lenient.close().await.expect("close");
}

#[tokio::test]
async fn lambda_deadline_keeps_the_margin() {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    let d = deadline_from_epoch_millis(now_ms + 3_000, Duration::from_millis(500));
    let left = d.saturating_duration_since(tokio::time::Instant::now());
    assert!(
        left <= Duration::from_millis(2_500) && left >= Duration::from_millis(2_300),
        "{left:?}"
    );
    // An emulator's relative timeout (600 s) is read as such.
    let d = deadline_from_epoch_millis(600_000, Duration::from_millis(500));
    let left = d.saturating_duration_since(tokio::time::Instant::now());
    assert!(
        left <= Duration::from_millis(599_500) && left >= Duration::from_millis(599_000),
        "{left:?}"
    );
    // A deadline already past (or within the margin) leaves no time at all.
    let d = deadline_from_epoch_millis(now_ms + 100, Duration::from_millis(500));
    assert_eq!(
        d.saturating_duration_since(tokio::time::Instant::now()),
        Duration::ZERO
    );
    let fwd = Forwarder::new(
        endpoint(),
        settings(OversizePolicy::Fail),
        EncodeRules::default(),
    );
    let out = fwd.send_all(vec![Message::new("late", 0)], Some(d)).await;
    let f = out[0].outcome.failure().expect("failed");
    assert_eq!(
        (f.code.as_str(), f.retryable, out[0].attempts),
        ("DeadlineExceeded", true, 0)
    );
}
