//! Several target queues as one forwarder ([`Fanout`]): each message reaches
//! the queue it was routed to and no other, every record (sent, settled by
//! the rules, or routed nowhere) gets exactly one outcome, and a fault, a
//! stall or a FIFO block on one target leaves the others' messages alone.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::test_support::fake_sqs::transient;
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{
    Fanout, Forwarder, Message, MessageOutcome, Outcome, OversizePolicy, Routed, SendSettings,
    Window,
};
use tokio::time::Instant;

fn standard(endpoint: &FakeSqs) -> Forwarder<FakeSqs> {
    Forwarder::new(
        endpoint.clone(),
        common::settings(OversizePolicy::Fail),
        EncodeRules::default(),
    )
}

fn fifo(endpoint: &FakeSqs) -> Forwarder<FakeSqs> {
    let rules = EncodeRules {
        fifo: true,
        content_based_deduplication: Some(true),
        ..EncodeRules::default()
    };
    Forwarder::new(
        endpoint.clone(),
        common::settings(OversizePolicy::Fail),
        rules,
    )
}

/// A message whose body names its target and position.
fn message(target: usize, i: usize) -> Message<usize> {
    Message::new(format!("t{target}-{i}"), i)
}

/// Runs `items` and returns the outcomes by position, failing the test if a
/// position is reported twice.
async fn run(
    fanout: &Fanout<FakeSqs>,
    items: Vec<Routed<usize>>,
    deadline: Option<Instant>,
) -> BTreeMap<usize, Outcome> {
    let mut outcomes = BTreeMap::new();
    let mut twice = Vec::new();
    fanout
        .forward(items, deadline, |o: MessageOutcome<usize>| {
            if outcomes.insert(o.position, o.outcome).is_some() {
                twice.push(o.position);
            }
        })
        .await;
    assert!(twice.is_empty(), "reported twice: {twice:?}");
    outcomes
}

fn code(outcome: &Outcome) -> &str {
    match outcome {
        Outcome::Failed(f) => f.code.as_str(),
        Outcome::Sent { .. } => "Sent",
        Outcome::Dropped { .. } => "Dropped",
    }
}

#[tokio::test]
async fn each_message_reaches_its_own_queue_only() {
    let (a, b, c) = (FakeSqs::new(), FakeSqs::new(), FakeSqs::new());
    let fanout = Fanout::new(standard(&a), vec![fifo(&b), standard(&c)]);
    let mut items = Vec::new();
    for i in 0..95 {
        let target = i % 3;
        let mut m = message(target, i);
        if target == 1 {
            m.group_id = Some(format!("g{}", i % 2));
        }
        items.push(Routed::To(target, m));
    }
    // Two records the rules settled: reported, never sent.
    items.push(Routed::Settled(
        95,
        Outcome::Dropped {
            reason: "FilteredOut".into(),
        },
    ));
    items.push(Routed::Settled(
        96,
        Outcome::Dropped {
            reason: "Unmatched".into(),
        },
    ));
    let outcomes = run(&fanout, items, None).await;

    assert_eq!(outcomes.len(), 97);
    for i in 0..95 {
        assert_eq!(code(&outcomes[&i]), "Sent", "position {i}");
    }
    assert_eq!(code(&outcomes[&95]), "Dropped");
    assert_eq!(code(&outcomes[&96]), "Dropped");
    for (t, endpoint) in [&a, &b, &c].into_iter().enumerate() {
        let bodies = common::bodies(endpoint);
        let want: Vec<String> = (0..95)
            .filter(|i| i % 3 == t)
            .map(|i| format!("t{t}-{i}"))
            .collect();
        let mut got = bodies.clone();
        got.sort_by_key(|b| b.rsplit('-').next().and_then(|n| n.parse::<usize>().ok()));
        assert_eq!(got, want, "target {t} got exactly its own messages");
        // Calls are as few as the target's own messages allow: standard
        // targets in full batches of ten.
        if t != 1 {
            assert_eq!(
                endpoint.call_count(),
                want.len().div_ceil(10),
                "target {t}'s calls"
            );
        }
    }
    // The FIFO target makes the calls it would make alone (FIFO_ORDER=strict:
    // one entry per group per call).
    let alone = FakeSqs::new();
    let lone: Vec<Message<usize>> = (0..95)
        .filter(|i| i % 3 == 1)
        .map(|i| {
            let mut m = message(1, i);
            m.group_id = Some(format!("g{}", i % 2));
            m
        })
        .collect();
    fifo(&alone).send_all(lone, None).await;
    assert_eq!(
        b.call_count(),
        alone.call_count(),
        "the FIFO target's calls"
    );
    // The FIFO target kept each group's order and carried its group ids.
    let fifo_seen = b.seen();
    for g in ["g0", "g1"] {
        let order: Vec<usize> = fifo_seen
            .iter()
            .filter(|s| s.group_id.as_deref() == Some(g))
            .filter_map(|s| s.body.rsplit('-').next().and_then(|n| n.parse().ok()))
            .collect();
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(order, sorted, "group {g} in order");
        assert!(!order.is_empty());
    }
    assert!(a.seen().iter().all(|s| s.group_id.is_none()));
}

#[tokio::test]
async fn a_failing_target_leaves_the_others_alone() {
    let ok = FakeSqs::new();
    let refusing = FakeSqs::new().fail_where(|_| true, Reply::INVALID.with_message("no"));
    let down = FakeSqs::new().fail_calls(|_| Some(transient("ServiceUnavailable")));
    let settings = SendSettings {
        retry: sqs_forwarder::RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        },
        ..common::settings(OversizePolicy::Fail)
    };
    let rules = EncodeRules::default;
    let fanout = Fanout::new(
        Forwarder::new(ok.clone(), settings.clone(), rules()),
        vec![
            Forwarder::new(refusing.clone(), settings.clone(), rules()),
            Forwarder::new(down.clone(), settings, rules()),
        ],
    );
    let items: Vec<_> = (0..60)
        .map(|i| Routed::To(i % 3, message(i % 3, i)))
        .collect();
    let outcomes = run(&fanout, items, None).await;
    assert_eq!(outcomes.len(), 60);
    for (i, outcome) in &outcomes {
        let want = match i % 3 {
            0 => "Sent",
            1 => "InvalidParameterValue",
            _ => "ServiceUnavailable",
        };
        assert_eq!(code(outcome), want, "position {i}");
        if let Outcome::Failed(f) = outcome {
            assert_eq!(f.retryable, i % 3 == 2, "position {i}");
        }
    }
    assert_eq!(ok.sent(), 20);
    // Two attempts each for the unavailable queue's two calls.
    assert_eq!(down.call_count(), 4);
}

#[tokio::test(start_paused = true)]
async fn a_stalled_target_times_out_alone() {
    let ok = FakeSqs::new();
    let stalled = FakeSqs::new().stall_from_call(0);
    let settings = SendSettings {
        call_timeout: Duration::from_secs(1),
        retry: sqs_forwarder::RetryPolicy {
            max_attempts: 1,
            ..sqs_forwarder::RetryPolicy::default()
        },
        ..common::settings(OversizePolicy::Fail)
    };
    let fanout = Fanout::new(
        Forwarder::new(ok.clone(), settings.clone(), EncodeRules::default()),
        vec![Forwarder::new(
            stalled.clone(),
            settings,
            EncodeRules::default(),
        )],
    );
    let items: Vec<_> = (0..40)
        .map(|i| Routed::To(i % 2, message(i % 2, i)))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    let outcomes = run(&fanout, items, Some(deadline)).await;
    assert_eq!(outcomes.len(), 40);
    for (i, outcome) in &outcomes {
        let want = if i % 2 == 0 { "Sent" } else { "Timeout" };
        assert_eq!(code(outcome), want, "position {i}");
    }
}

#[tokio::test]
async fn a_fifo_block_stays_on_its_target() {
    // Target 1 refuses (retryably, then gives up on) the first message of
    // group "g"; target 2 has a group of the same name, which must not be
    // blocked by it.
    let first_fails = FakeSqs::new().fail_where(|a| a.body() == "t1-0", Reply::INTERNAL);
    let other = FakeSqs::new();
    let settings = SendSettings {
        retry: sqs_forwarder::RetryPolicy {
            max_attempts: 1,
            ..sqs_forwarder::RetryPolicy::default()
        },
        ..common::settings(OversizePolicy::Fail)
    };
    let rules = || EncodeRules {
        fifo: true,
        content_based_deduplication: Some(true),
        ..EncodeRules::default()
    };
    let fanout = Fanout::new(
        standard(&FakeSqs::new()),
        vec![
            Forwarder::new(first_fails.clone(), settings.clone(), rules()),
            Forwarder::new(other.clone(), settings, rules()),
        ],
    );
    let mut items = Vec::new();
    for i in 0..6 {
        let target = 1 + i % 2;
        let mut m = message(target, i);
        m.group_id = Some("g".into());
        items.push(Routed::To(target, m));
    }
    let outcomes = run(&fanout, items, None).await;
    assert_eq!(code(&outcomes[&0]), "InternalError");
    for i in [2, 4] {
        assert_eq!(
            code(&outcomes[&i]),
            "GroupBlocked",
            "position {i}: behind the failed one on target 1"
        );
    }
    for i in [1, 3, 5] {
        assert_eq!(code(&outcomes[&i]), "Sent", "position {i} on target 2");
    }
}

#[tokio::test]
async fn a_target_the_fanout_lacks_fails_that_message_only() {
    let a = FakeSqs::new();
    let fanout = Fanout::new(standard(&a), vec![]);
    let items = vec![
        Routed::To(0, message(0, 0)),
        Routed::To(7, message(7, 1)),
        Routed::To(0, message(0, 2)),
    ];
    let outcomes = run(&fanout, items, None).await;
    assert_eq!(code(&outcomes[&0]), "Sent");
    assert_eq!(code(&outcomes[&1]), "Unschedulable");
    assert_eq!(code(&outcomes[&2]), "Sent");
}

#[tokio::test]
async fn one_window_bounds_all_targets() {
    let endpoints: Vec<FakeSqs> = (0..3)
        .map(|_| FakeSqs::new().delay(Duration::from_millis(2)))
        .collect();
    let settings = SendSettings {
        window: Window {
            max_messages: 60,
            max_bytes: 1 << 20,
        },
        max_in_flight: 2,
        ..common::settings(OversizePolicy::Fail)
    };
    let mut forwarders: Vec<_> = endpoints
        .iter()
        .map(|e| Forwarder::new(e.clone(), settings.clone(), EncodeRules::default()))
        .collect();
    let first = forwarders.remove(0);
    let fanout = Fanout::new(first, forwarders);
    let items = (0..900).map(|i| Routed::To(i % 3, message(i % 3, i)));
    let mut n = 0;
    let tally = fanout.forward(items, None, |_| n += 1).await;
    assert_eq!(n, 900);
    assert_eq!(tally.summary.sent, 900);
    let window = settings.window.effective(
        &settings.limits,
        settings.max_in_flight,
        settings.max_in_flight_bytes,
    );
    assert!(
        tally.peak_messages <= window.max_messages,
        "held {} > window {}",
        tally.peak_messages,
        window.max_messages
    );
    // Never more calls out at once than MAX_IN_FLIGHT, all targets together.
    let most: usize = endpoints.iter().map(|e| e.max_in_flight()).sum();
    assert!(most <= 2 * 3, "calls in flight per target stay bounded");
    for e in &endpoints {
        assert!(e.max_in_flight() <= 2);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sqs_forwarder::test_support::proptest_cases(64)))]

    /// Whatever the routing, the faults and the settled records, every
    /// record gets exactly one outcome, and a sent message went to its own
    /// target.
    #[test]
    fn every_record_gets_exactly_one_outcome(
        routes in proptest::collection::vec(0usize..5, 0..120),
        refuse in proptest::collection::vec(any::<bool>(), 3),
        fifo_target in 0usize..3,
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build();
        let Ok(runtime) = runtime else { return Err(TestCaseError::fail("no runtime")) };
        let endpoints: Vec<FakeSqs> = refuse
            .iter()
            .map(|&r| {
                let e = FakeSqs::new();
                if r { e.fail_where(|a| a.body().ends_with('7'), Reply::INVALID) } else { e }
            })
            .collect();
        let mut forwarders: Vec<Forwarder<FakeSqs>> = endpoints
            .iter()
            .enumerate()
            .map(|(t, e)| if t == fifo_target { fifo(e) } else { standard(e) })
            .collect();
        let first = forwarders.remove(0);
        let fanout = Fanout::new(first, forwarders);
        let items: Vec<Routed<usize>> = routes
            .iter()
            .enumerate()
            .map(|(i, &r)| match r {
                // 3: routed to a target the fan-out lacks; 4: settled.
                4 => Routed::Settled(i, Outcome::Dropped { reason: "FilteredOut".into() }),
                t => {
                    let mut m = message(t, i);
                    m.group_id = Some(format!("g{}", i % 3));
                    Routed::To(t, m)
                }
            })
            .collect();
        let mut seen: Vec<usize> = Vec::new();
        runtime.block_on(fanout.forward(items, None, |o: MessageOutcome<usize>| seen.push(o.position)));
        seen.sort_unstable();
        prop_assert_eq!(seen, (0..routes.len()).collect::<Vec<_>>());
        for (t, e) in endpoints.iter().enumerate() {
            for s in e.seen() {
                prop_assert!(s.body.starts_with(&format!("t{t}-")), "{} on target {}", s.body, t);
            }
        }
    }
}
