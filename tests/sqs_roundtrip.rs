//! End-to-end: the forwarder against a local SQS endpoint. Every message
//! sent is received back with its body and attributes intact.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;
use base64::Engine as _;
use forwarder_e2e::{attributes, client, create_queue, drain};
use sqs_forwarder::setup::startup::connect_with;
use sqs_forwarder::{
    Attribute, Config, Message, Outcome, SetupError, SqsSink, SqsTransport, Summary,
};

fn config(vars: &[(&str, &str)]) -> Config {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|k| map.get(k).cloned()).expect("valid test configuration")
}

#[tokio::test(flavor = "multi_thread")]
async fn standard_queue_round_trip_keeps_bodies_and_attributes() {
    let sqs = client();
    let url = create_queue(&sqs, "e2e-standard", &[]).await;
    let fwd = connect_with(
        sqs.clone(),
        &config(&[("QUEUE_URL", &url)]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect("connect");

    let mut messages = Vec::new();
    for i in 0..23usize {
        let body = format!("{{\"n\":{i},\"text\":\"héllo wörld € 🌍\"}}");
        messages.push(
            Message::new(body, i)
                .attribute(Attribute::string("kind", "grüße"))
                .attribute(Attribute::number("n", i))
                .attribute(Attribute::binary("raw", vec![0u8, 159, 146, 150, i as u8])),
        );
    }
    let binary: Vec<u8> = vec![0xF3, 0x89, 0x9A, 0xC2, 0x00, 0xFF];
    messages.push(Message::new(binary.clone(), 23));
    messages.push(Message::new("bell \u{7} and nul \u{0}", 24));

    let outcomes = fwd.send_all(messages, None).await;
    assert_eq!(outcomes.len(), 25);
    let summary = Summary::of(&outcomes);
    assert_eq!(summary.sent, 25, "{outcomes:?}");
    let ids: HashMap<String, usize> = outcomes
        .iter()
        .map(|o| match &o.outcome {
            Outcome::Sent { message_id, .. } => (message_id.clone(), o.position),
            other => panic!("not sent: {other:?}"),
        })
        .collect();

    let received = drain(&sqs, &url, 25).await;
    assert_eq!(received.len(), 25);
    for m in &received {
        let pos = ids[m.message_id().expect("id")];
        let attrs = attributes(m);
        let body = m.body().expect("body");
        match pos {
            23 => {
                assert_eq!(
                    attrs["sqs-forwarder.encoding"],
                    ("String".to_owned(), b"base64".to_vec())
                );
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(body)
                    .expect("base64");
                assert_eq!(decoded, binary);
            }
            24 => {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(body)
                    .expect("base64");
                assert_eq!(decoded, "bell \u{7} and nul \u{0}".as_bytes());
            }
            i => {
                assert_eq!(body, format!("{{\"n\":{i},\"text\":\"héllo wörld € 🌍\"}}"));
                assert_eq!(
                    attrs["kind"],
                    ("String".to_owned(), "grüße".as_bytes().to_vec())
                );
                assert_eq!(
                    attrs["n"],
                    ("Number".to_owned(), i.to_string().into_bytes())
                );
                assert_eq!(
                    attrs["raw"],
                    ("Binary".to_owned(), vec![0u8, 159, 146, 150, i as u8])
                );
                assert!(!attrs.contains_key("sqs-forwarder.encoding"));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn fifo_queue_keeps_group_order_and_deduplicates() {
    let sqs = client();
    let url = create_queue(&sqs, "e2e-orders.fifo", &[]).await;
    let fwd = connect_with(
        sqs.clone(),
        &config(&[("QUEUE_URL", &url)]),
        sqs_forwarder::GroupIds::FromSource,
    )
    .await
    .expect("connect");
    let make = || {
        (0..30usize)
            .map(|i| {
                Message::new(format!("event {i}"), i)
                    .group_id(format!("g{}", i % 3))
                    .deduplication_id(format!("d{i}"))
            })
            .collect::<Vec<_>>()
    };
    let outcomes = fwd.send_all(make(), None).await;
    assert_eq!(Summary::of(&outcomes).sent, 30, "{outcomes:?}");
    assert!(outcomes.iter().all(|o| matches!(
        &o.outcome,
        Outcome::Sent {
            sequence_number: Some(_),
            ..
        }
    )));
    // The same messages again (a retried invocation): deduplicated by SQS.
    let again = fwd.send_all(make(), None).await;
    assert_eq!(Summary::of(&again).sent, 30);

    let received = drain(&sqs, &url, 30).await;
    assert_eq!(received.len(), 30, "the resend was deduplicated");
    let mut per_group: HashMap<String, Vec<usize>> = HashMap::new();
    for m in &received {
        let n: usize = m
            .body()
            .expect("body")
            .trim_start_matches("event ")
            .parse()
            .expect("n");
        per_group.entry(format!("g{}", n % 3)).or_default().push(n);
    }
    for (g, ns) in per_group {
        let mut sorted = ns.clone();
        sorted.sort_unstable();
        assert_eq!(ns, sorted, "group {g} out of order");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn limits_come_from_the_queue_and_oversize_fails() {
    let sqs = client();
    let url = create_queue(
        &sqs,
        "e2e-small",
        &[(QueueAttributeName::MaximumMessageSize, "2048")],
    )
    .await;
    let fwd = connect_with(
        sqs.clone(),
        &config(&[("QUEUE_URL", &url)]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect("connect");
    assert_eq!(fwd.settings().limits.max_message_bytes, 2048);
    assert_eq!(fwd.settings().limits.max_request_bytes, 1_048_576);

    let fits = "x".repeat(2048 - "k".len() - "String".len() - 1);
    let messages = vec![
        Message::new(fits.clone(), 0).attribute(Attribute::string("k", "v")),
        Message::new("y".repeat(2049), 1),
    ];
    let outcomes = fwd.send_all(messages, None).await;
    assert!(outcomes[0].outcome.is_sent(), "{:?}", outcomes[0]);
    let f = outcomes[1].outcome.failure().expect("too large");
    assert_eq!(f.code, "MessageTooLarge");
    assert!(!f.retryable);
    let received = drain(&sqs, &url, 1).await;
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].body(), Some(fits.as_str()));

    // Configuration can lower the queue's limit but not raise it.
    let lowered = connect_with(
        sqs.clone(),
        &config(&[("QUEUE_URL", &url), ("MAX_MESSAGE_BYTES", "1024")]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect("connect");
    assert_eq!(lowered.settings().limits.max_message_bytes, 1024);
    let raised = connect_with(
        sqs.clone(),
        &config(&[("QUEUE_URL", &url), ("MAX_MESSAGE_BYTES", "4096")]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect("connect");
    assert_eq!(raised.settings().limits.max_message_bytes, 2048);
}

#[tokio::test(flavor = "multi_thread")]
async fn queue_by_name_and_missing_queues() {
    let sqs = client();
    let url = create_queue(&sqs, "e2e-named", &[]).await;
    let name = url.rsplit('/').next().expect("name").to_owned();
    let fwd = connect_with(
        sqs.clone(),
        &config(&[("QUEUE_NAME", &name)]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect("connect by name");
    let outcomes = fwd.send_all(vec![Message::new("by name", 0)], None).await;
    assert!(outcomes[0].outcome.is_sent());
    assert_eq!(drain(&sqs, &url, 1).await.len(), 1);

    let err = connect_with(
        sqs.clone(),
        &config(&[("QUEUE_NAME", "no-such-queue-e2e")]),
        sqs_forwarder::GroupIds::FromConfig,
    )
    .await
    .expect_err("missing queue");
    match &err {
        SetupError::Queue { queue, .. } => assert_eq!(queue, "no-such-queue-e2e"),
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("no-such-queue-e2e"), "{err}");

    // A FIFO target whose messages carry no group id is refused at start.
    let fifo = config(&[("QUEUE_URL", "http://127.0.0.1:1/000000000000/x.fifo")]);
    let err = connect_with(sqs.clone(), &fifo, sqs_forwarder::GroupIds::FromConfig)
        .await
        .expect_err("no group id");
    assert!(err.to_string().contains("MESSAGE_GROUP_ID"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn buffered_sink_flushes_on_time_and_on_close() {
    let sqs = client();
    let url = create_queue(&sqs, "e2e-sink", &[]).await;
    let sink = SqsSink::builder(SqsTransport::new(sqs.clone(), url.clone()))
        .max_batch_size(10)
        .max_in_flight_requests(2)
        .max_buffered_requests(5)
        .max_time_in_buffer(Duration::from_millis(100))
        .fail_on_error(true)
        .build();
    // Two messages then wait: the timer, not a full buffer, sends them.
    let a = sink.send(Message::new("first", "a")).await.expect("send");
    let b = sink.send(Message::new("second", "b")).await.expect("send");
    let outcome = tokio::time::timeout(Duration::from_secs(5), a.outcome())
        .await
        .expect("flushed by the timer");
    assert!(outcome.expect("outcome").outcome.is_sent());
    assert!(b.outcome().await.expect("outcome").outcome.is_sent());
    // More than max_buffered: send waits for room instead of failing.
    let mut receipts = Vec::new();
    for i in 0..12 {
        receipts.push(
            sink.send(Message::new(format!("m{i}"), "more"))
                .await
                .expect("send"),
        );
    }
    sink.close().await.expect("close");
    for r in receipts {
        assert!(r.outcome().await.expect("outcome").outcome.is_sent());
    }
    assert_eq!(drain(&sqs, &url, 14).await.len(), 14);
}
