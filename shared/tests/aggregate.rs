//! Aggregation (`AGGREGATE=true`, [`sqs_forwarder::aggregate`]): records
//! packed into few messages, each record delivered once and readable back
//! with its body, attributes and id, each record's outcome its aggregate's,
//! group order kept, faults confined to the aggregates they hit.

mod common;

use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use sqs_forwarder::aggregate::MARKER_ATTRIBUTE;
use sqs_forwarder::aggregate::read::{ReceivedAttribute, Record, records};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::message::limits::Limits;
use sqs_forwarder::test_support::fake_sqs::{Seen, transient};
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{
    Attribute, Fanout, Forwarder, Message, MessageOutcome, Outcome, OversizePolicy, Routed,
    SendSettings,
};

fn settings(aggregate: usize, max_message_bytes: usize) -> SendSettings {
    SendSettings {
        limits: Limits {
            max_entries: 10,
            max_message_bytes,
            max_request_bytes: 1_048_576,
        },
        aggregate: Some(aggregate),
        ..SendSettings::default()
    }
}

fn standard(endpoint: &FakeSqs, aggregate: usize) -> Forwarder<FakeSqs> {
    Forwarder::new(
        endpoint.clone(),
        settings(aggregate, 262_144),
        EncodeRules::default(),
    )
}

fn fifo(endpoint: &FakeSqs, aggregate: usize) -> Forwarder<FakeSqs> {
    let rules = EncodeRules {
        fifo: true,
        content_based_deduplication: Some(false),
        ..EncodeRules::default()
    };
    Forwarder::new(endpoint.clone(), settings(aggregate, 262_144), rules)
}

/// Runs `items`; the outcomes by position, failing if one comes twice.
async fn run(fanout: &Fanout<FakeSqs>, items: Vec<Routed<usize>>) -> BTreeMap<usize, Outcome> {
    let mut outcomes = BTreeMap::new();
    let mut twice = Vec::new();
    let tally = fanout
        .forward(items, None, |o: MessageOutcome<usize>| {
            if outcomes.insert(o.position, o.outcome).is_some() {
                twice.push(o.position);
            }
        })
        .await;
    assert!(twice.is_empty(), "reported twice: {twice:?}");
    assert_eq!(tally.messages, outcomes.len(), "the tally counts records");
    assert_eq!(
        tally.summary.sent,
        outcomes.values().filter(|o| o.is_sent()).count()
    );
    outcomes
}

/// The records of one message SQS accepted, read back as a consumer would.
fn read_back(seen: &Seen, message_id: &str) -> Vec<Record> {
    let attributes: HashMap<String, ReceivedAttribute> = seen
        .attributes
        .iter()
        .map(|a| (a.name.to_string(), ReceivedAttribute::of(a)))
        .collect();
    records(message_id, &seen.body, &attributes).expect("a message the forwarder sent reads back")
}

/// Every record delivered: (message id, records), in the order accepted.
fn delivered(endpoint: &FakeSqs) -> Vec<(Seen, Vec<Record>)> {
    endpoint
        .accepted()
        .into_iter()
        .map(|s| {
            let id = format!("m-{}-{}", s.call, s.id);
            let r = read_back(&s, &id);
            (s, r)
        })
        .collect()
}

fn is_aggregate(s: &Seen) -> bool {
    s.string(MARKER_ATTRIBUTE) == Some("1")
}

#[tokio::test]
async fn small_records_go_in_few_messages_and_read_back_exactly() {
    let sqs = FakeSqs::new();
    let fanout = Fanout::new(standard(&sqs, 65_536), Vec::new());
    let items: Vec<Routed<usize>> = (0..10_000)
        .map(|i: usize| {
            let mut m = Message::new(format!("{{\"n\":{i},\"pad\":\"{:020}\"}}", i), i);
            if i.is_multiple_of(7) {
                m = m.attribute(Attribute::number("n", i).with_data_type("Number.int"));
            }
            if i.is_multiple_of(11) {
                m = m.attribute(Attribute::binary("raw", vec![0u8, 1, 2, (i % 256) as u8]));
            }
            Routed::To(0, m)
        })
        .collect();
    let total_bytes: usize = 10_000 * 40;
    let outcomes = run(&fanout, items).await;
    assert_eq!(outcomes.len(), 10_000);
    assert!(outcomes.values().all(Outcome::is_sent));

    let got = delivered(&sqs);
    // Fewer than one message per 40 records, every one at most 64 KiB.
    assert!(
        got.len() <= total_bytes / 40_000 + 2,
        "{} messages",
        got.len()
    );
    assert!(got.iter().all(|(s, _)| s.size <= 65_536 && is_aggregate(s)));
    // Each record once, in order, with its attributes; its outcome names
    // the message that carried it.
    let mut next = 0usize;
    for (s, recs) in &got {
        let id = format!("m-{}-{}", s.call, s.id);
        for r in recs {
            assert_eq!(r.body, format!("{{\"n\":{next},\"pad\":\"{:020}\"}}", next));
            assert_eq!(r.message_id, id);
            if next.is_multiple_of(7) {
                let n = &r.attributes["n"];
                assert_eq!(
                    (n.data_type.as_str(), n.string_value.as_deref()),
                    ("Number.int", Some(next.to_string().as_str()))
                );
            }
            if next.is_multiple_of(11) {
                assert!(r.attributes["raw"].binary_value.is_some());
            }
            match &outcomes[&next] {
                Outcome::Sent { message_id, .. } => assert_eq!(message_id, &id),
                other => panic!("record {next}: {other:?}"),
            }
            next += 1;
        }
    }
    assert_eq!(next, 10_000);
}

#[tokio::test]
async fn a_record_too_large_for_an_aggregate_or_alone_goes_plain_in_its_place() {
    let sqs = FakeSqs::new();
    let fanout = Fanout::new(standard(&sqs, 2_048), Vec::new());
    let mut items = Vec::new();
    for i in 0..5 {
        items.push(Routed::To(0, Message::new(format!("small-{i}"), i)));
    }
    items.push(Routed::To(0, Message::new("L".repeat(3_000), 5)));
    items.push(Routed::To(0, Message::new("after", 6)));
    let outcomes = run(&fanout, items).await;
    assert!(outcomes.values().all(Outcome::is_sent));
    let got = delivered(&sqs);
    let shapes: Vec<(bool, Vec<String>)> = got
        .iter()
        .map(|(s, r)| {
            (
                is_aggregate(s),
                r.iter().map(|r| r.body.chars().take(7).collect()).collect(),
            )
        })
        .collect();
    assert_eq!(
        shapes,
        vec![
            (true, (0..5).map(|i| format!("small-{i}")).collect()),
            (false, vec!["LLLLLLL".to_owned()]),
            (false, vec!["after".to_owned()]),
        ],
        "the large record and the lone last one go as they are"
    );
}

#[tokio::test]
async fn a_record_at_fault_fails_alone_and_a_failed_aggregate_fails_its_records_only() {
    // Aggregates of about ten records; the one holding "poison" is refused
    // for good, the one holding "flaky" fails once and is retried.
    let sqs = FakeSqs::new()
        .fail_where(
            |a| a.body().contains("poison"),
            Reply::INVALID.with_message("no"),
        )
        .fail_where(
            |a| a.body().contains("flaky") && a.attempt <= 1,
            Reply::fail("ServiceUnavailable", false),
        );
    let fanout = Fanout::new(standard(&sqs, 1_024), Vec::new());
    let mut items = Vec::new();
    for i in 0..100 {
        let body = match i {
            13 => "".to_owned(),
            42 => format!("poison-{i:0>70}"),
            77 => format!("flaky-{i:0>70}"),
            _ => format!("record-{i:0>70}"),
        };
        items.push(Routed::To(0, Message::new(body, i)));
    }
    let outcomes = run(&fanout, items).await;
    let got = delivered(&sqs);
    let poisoned: Vec<usize> = sqs
        .seen()
        .iter()
        .filter(|s| s.body.contains("poison"))
        .flat_map(|s| read_back(s, "x").into_iter().map(|r| r.body))
        .filter_map(|b| b.rsplit('-').next().and_then(|n| n.parse().ok()))
        .collect();
    assert!(poisoned.len() > 1 && poisoned.contains(&42), "{poisoned:?}");
    for (i, o) in &outcomes {
        match o {
            Outcome::Failed(f) if *i == 13 => assert_eq!(f.code, "EmptyBody"),
            Outcome::Failed(f) if poisoned.contains(i) => assert!(!f.retryable, "{i}: {f:?}"),
            Outcome::Sent { .. } => {}
            other => panic!("record {i}: {other:?}"),
        }
    }
    // Everything sent is delivered once, the flaky aggregate included.
    let mut seen: Vec<String> = got
        .iter()
        .flat_map(|(_, r)| r.iter().map(|r| r.body.clone()))
        .collect();
    let n = seen.len();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), n, "no record delivered twice");
    assert_eq!(n, 100 - 1 - poisoned.len());
    assert!(seen.iter().any(|b| b.starts_with("flaky")));
}

#[tokio::test]
async fn fifo_aggregates_hold_one_group_keep_its_order_and_repeat_their_ids() {
    let send = |sqs: FakeSqs| async move {
        let fanout = Fanout::new(fifo(&sqs, 512), Vec::new());
        let items: Vec<Routed<usize>> = (0..200)
            .map(|i: usize| {
                let m = Message::new(format!("g{}-{i:03}", i % 3), i)
                    .group_id(format!("g{}", i % 3))
                    .deduplication_id(format!("seq-{i}"));
                Routed::To(0, m)
            })
            .collect();
        let outcomes = run(&fanout, items).await;
        assert!(outcomes.values().all(Outcome::is_sent));
        delivered(&sqs)
    };
    let first = send(FakeSqs::new()).await;
    let mut by_group: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (s, recs) in &first {
        let group = s.group_id.clone().expect("a FIFO message has a group");
        for r in recs {
            assert!(
                r.body.starts_with(&group),
                "{} in an aggregate of {group}",
                r.body
            );
            let n: usize = r.body[3..].parse().expect("n");
            // A record's own id: in the aggregate, or the plain message's.
            let id = if is_aggregate(s) {
                r.deduplication_id.as_deref()
            } else {
                s.deduplication_id.as_deref()
            };
            assert_eq!(id, Some(format!("seq-{n}").as_str()));
            by_group
                .entry(group.clone())
                .or_default()
                .push(r.body.clone());
        }
        if is_aggregate(s) {
            let id = s.deduplication_id.as_deref().expect("an aggregate's id");
            assert!(id.starts_with("agg-") && id.len() <= 128, "{id}");
        }
    }
    for (g, bodies) in &by_group {
        let mut sorted = bodies.clone();
        sorted.sort();
        assert_eq!(bodies, &sorted, "group {g} in order");
    }
    assert_eq!(by_group.values().map(Vec::len).sum::<usize>(), 200);
    // The same records again: the same messages, the same ids.
    let again = send(FakeSqs::new()).await;
    let ids = |d: &[(Seen, Vec<Record>)]| -> Vec<Option<String>> {
        let mut v: Vec<_> = d.iter().map(|(s, _)| s.deduplication_id.clone()).collect();
        v.sort();
        v
    };
    assert_eq!(ids(&first), ids(&again));
}

#[tokio::test]
async fn records_of_different_delays_and_fair_queue_tenants_never_share_a_message() {
    let sqs = FakeSqs::new();
    let fanout = Fanout::new(standard(&sqs, 65_536), Vec::new());
    let items: Vec<Routed<usize>> = (0..60)
        .map(|i: usize| {
            let mut m = Message::new(format!("r{i}"), i).group_id(format!("tenant-{}", i % 2));
            if i.is_multiple_of(3) {
                m = m.delay_seconds(5);
            }
            Routed::To(0, m)
        })
        .collect();
    let outcomes = run(&fanout, items).await;
    assert!(outcomes.values().all(Outcome::is_sent));
    let got = delivered(&sqs);
    assert_eq!(got.len(), 4, "two tenants times two delays");
    for (s, recs) in &got {
        for r in recs {
            let i: usize = r.body[1..].parse().expect("n");
            assert_eq!(
                s.group_id.as_deref(),
                Some(format!("tenant-{}", i % 2).as_str())
            );
            assert_eq!(s.delay_seconds, i.is_multiple_of(3).then_some(5));
        }
    }
}

#[tokio::test]
async fn only_the_targets_that_aggregate_do() {
    let (a, b) = (FakeSqs::new(), FakeSqs::new());
    let plain = Forwarder::new(
        b.clone(),
        common::settings(OversizePolicy::Fail),
        EncodeRules::default(),
    );
    let fanout = Fanout::new(standard(&a, 65_536), vec![plain]);
    let items: Vec<Routed<usize>> = (0..40)
        .map(|i| Routed::To(i % 2, Message::new(format!("r{i}"), i)))
        .collect();
    let outcomes = run(&fanout, items).await;
    assert!(outcomes.values().all(Outcome::is_sent));
    assert_eq!(a.accepted().len(), 1);
    assert_eq!(b.accepted().len(), 20);
    assert!(b.accepted().iter().all(|s| !is_aggregate(s)));
}

#[tokio::test]
async fn a_whole_call_that_fails_fails_each_of_its_records_retryable() {
    let sqs = FakeSqs::new().fail_calls(|_| Some(transient("ServiceUnavailable")));
    let fanout = Fanout::new(standard(&sqs, 1_024), Vec::new());
    let items: Vec<Routed<usize>> = (0..50)
        .map(|i| Routed::To(0, Message::new(format!("record-{i:0>40}"), i)))
        .collect();
    let outcomes = run(&fanout, items).await;
    assert_eq!(outcomes.len(), 50);
    assert!(
        outcomes
            .values()
            .all(|o| o.failure().is_some_and(|f| f.retryable))
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever the records, groups, sizes and faults: every record gets
    /// exactly one outcome; a record is delivered (once) exactly when its
    /// outcome is Sent; each group's delivered records keep their order.
    #[test]
    fn every_record_one_outcome_and_delivered_once_iff_sent(
        records_in in prop::collection::vec((0usize..4, 0usize..300, any::<bool>()), 1..120),
        aggregate in 1_024usize..4_096,
        fifo_target in any::<bool>(),
        bad_call in 0usize..6,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().expect("runtime");
        rt.block_on(async {
            let sqs = FakeSqs::new()
                .fail_where(|a| a.body().contains("bad"), Reply::INVALID.with_message("no"))
                .fail_calls(move |c| (c == bad_call).then(|| transient("InternalError")));
            let fwd = if fifo_target { fifo(&sqs, aggregate) } else { standard(&sqs, aggregate) };
            let fanout = Fanout::new(fwd, Vec::new());
            let items: Vec<Routed<usize>> = records_in
                .iter()
                .enumerate()
                .map(|(i, (g, len, bad))| {
                    let tag = if *bad && i % 5 == 0 { "bad" } else { "ok" };
                    let body = format!("{tag}-{i:04}-{}", "x".repeat(*len));
                    let m = Message::new(body, i)
                        .group_id(format!("g{g}"))
                        .deduplication_id(format!("d{i}"));
                    Routed::To(0, m)
                })
                .collect();
            let outcomes = run(&fanout, items).await;
            prop_assert_eq!(outcomes.len(), records_in.len());
            let mut delivered_ix: Vec<usize> = Vec::new();
            let mut order: BTreeMap<String, Vec<usize>> = BTreeMap::new();
            for (s, recs) in delivered(&sqs) {
                for r in recs {
                    let i: usize = r.body[r.body.find('-').map_or(0, |p| p + 1)..][..4].parse().expect("index");
                    delivered_ix.push(i);
                    order.entry(s.group_id.clone().unwrap_or_default()).or_default().push(i);
                }
            }
            let mut sorted = delivered_ix.clone();
            sorted.sort();
            sorted.dedup();
            prop_assert_eq!(sorted.len(), delivered_ix.len(), "delivered once");
            let sent: Vec<usize> = outcomes.iter().filter(|(_, o)| o.is_sent()).map(|(i, _)| *i).collect();
            prop_assert_eq!(sorted, sent);
            if fifo_target {
                for (g, ix) in order {
                    let mut s = ix.clone();
                    s.sort();
                    prop_assert_eq!(ix, s, "group {} in order", g);
                }
            }
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn one_forwarder_aggregates_as_a_fan_out_does() {
    let sqs = FakeSqs::new();
    let fwd = standard(&sqs, 65_536);
    let messages: Vec<Message<usize>> = (0..30).map(|i| Message::new(format!("r{i}"), i)).collect();
    let outcomes = fwd.send_all(messages, None).await;
    assert_eq!(outcomes.len(), 30);
    assert!(outcomes.iter().all(|o| o.outcome.is_sent()));
    let got = delivered(&sqs);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1.len(), 30);
}

#[tokio::test]
async fn a_retry_from_a_later_record_makes_the_same_fifo_aggregates_past_its_first_cut() {
    // A Kinesis retry starts at its checkpoint: the records before it are
    // gone, the ones after it come again. Past the first cut, the retry's
    // aggregates must be the first run's, ids and all, for SQS to drop them
    // as duplicates.
    let send = |from: usize| async move {
        let sqs = FakeSqs::new();
        let fanout = Fanout::new(fifo(&sqs, 65_536), Vec::new());
        let items: Vec<Routed<usize>> = (from..2_000)
            .map(|i| {
                let m = Message::new(format!("r{i}"), i)
                    .group_id("g")
                    .deduplication_id(format!(
                        "49590338271490256608559692538361571095921575989136{i:06}"
                    ));
                Routed::To(0, m)
            })
            .collect();
        let outcomes = run(&fanout, items).await;
        assert!(outcomes.values().all(Outcome::is_sent));
        delivered(&sqs)
            .into_iter()
            .map(|(s, r)| {
                (
                    s.deduplication_id.clone(),
                    r.into_iter().map(|r| r.body).collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>()
    };
    let first = send(0).await;
    assert!(
        first.len() > 10,
        "cut into several aggregates: {}",
        first.len()
    );
    assert!(
        first.len() < 200,
        "yet far fewer than records: {}",
        first.len()
    );
    for from in [137, 1_001] {
        let retry = send(from).await;
        assert!(retry.len() > 2);
        for message in &retry[1..] {
            assert!(first.contains(message), "from {from}: {message:?} is new");
        }
    }
}

#[tokio::test]
async fn a_retry_from_any_record_adds_at_most_one_new_message_per_fifo_group() {
    // Records of four groups interleaved, of uneven sizes, in aggregates
    // small enough that size decides most cuts: a retry from any record
    // (Lambda resending from a checkpoint) makes the first run's messages
    // again, same deduplication ids, but for at most its first one in each
    // group. SQS drops the others as duplicates.
    const N: usize = 2_000;
    let send = |from: usize| async move {
        let sqs = FakeSqs::new();
        let fanout = Fanout::new(fifo(&sqs, 2_048), Vec::new());
        let items: Vec<Routed<usize>> = (from..N)
            .map(|i| {
                let pad = "x".repeat((i * 7_919) % 300);
                let m = Message::new(format!("r{i}-{pad}"), i)
                    .group_id(format!("tenant-{}", i % 4))
                    .deduplication_id(format!(
                        "49590338271490256608559692538361571095921575989136{i:06}"
                    ));
                Routed::To(0, m)
            })
            .collect();
        let outcomes = run(&fanout, items).await;
        assert!(outcomes.values().all(Outcome::is_sent));
        delivered(&sqs)
            .into_iter()
            .map(|(s, r)| {
                let group = s.group_id.clone().expect("a group");
                (group, s.deduplication_id.clone().expect("an id"), r.len())
            })
            .collect::<Vec<_>>()
    };
    let first = send(0).await;
    let seen: std::collections::HashSet<(String, String)> = first
        .iter()
        .map(|(g, id, _)| (g.clone(), id.clone()))
        .collect();
    eprintln!(
        "MESSAGES {} records-in-aggregates {}",
        first.len(),
        first.iter().map(|f| f.2).sum::<usize>()
    );
    assert!(
        first.len() > 100,
        "size cuts many aggregates: {}",
        first.len()
    );
    assert!(
        first.iter().filter(|(_, _, n)| *n > 1).count() > 100,
        "most messages are aggregates"
    );
    for from in [1, 13, 500, 1_007, 1_234, 1_500, 1_999] {
        let retry = send(from).await;
        let mut new: BTreeMap<String, usize> = BTreeMap::new();
        for (group, id, _) in &retry {
            if !seen.contains(&(group.clone(), id.clone())) {
                *new.entry(group.clone()).or_default() += 1;
            }
        }
        assert!(
            new.values().all(|n| *n <= 1),
            "from {from}: messages SQS would take again, by group: {new:?}"
        );
    }
}
