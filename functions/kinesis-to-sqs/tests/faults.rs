//! Fault injection through a fake SQS: entries failing, throttling, the
//! deadline running out mid-batch, corrupt and partly failed KPL records.
//! Every test checks the answer against the checkpoint rule: Lambda resumes
//! at the lowest reported sequence number, so every record not fully sent
//! must be reported (lowest first) and no fully sent record before the first
//! unsent one may be.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use aws_lambda_events::event::streams::KinesisEventResponse;
use common::{
    FakeSqs, Reply, accepting, entries_per_call, event, forwarder, forwarder_with, record,
    scripted, send_settings, seq, text_event,
};
use kinesis_to_sqs::checkpoint::reported;
use kinesis_to_sqs::settings::{GroupIdSource, PermanentFailures, Settings};
use kinesis_to_sqs::{Handler, kpl};
use proptest::prelude::*;
use sqs_forwarder::call::transport::CallError;
use sqs_forwarder::{Failure, SendSettings};
use tokio::time::Instant;

/// The answer to `event` from a forwarder over `fake` (to a FIFO target or
/// not), without a deadline.
async fn answer(
    fake: &FakeSqs,
    fifo: bool,
    settings: &Settings,
    event: kinesis_to_sqs::event::KinesisEvent,
) -> KinesisEventResponse {
    Handler::new(*settings, forwarder(fake, fifo))
        .handle(event, None)
        .await
        .expect("an answer")
}

/// Index of record `rec-<i>` (or of user record `rec-<i>-<j>`).
fn record_of(body: &str) -> usize {
    body.trim_start_matches("rec-")
        .split('-')
        .next()
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("unexpected body {body:?}"))
}

/// The records not every message of which was accepted, as the sequence
/// numbers Lambda must get back, ascending. `messages[i]` = messages of record i.
fn unsent(messages: &[Vec<String>], accepted: &[String]) -> Vec<String> {
    let accepted: BTreeSet<&str> = accepted.iter().map(String::as_str).collect();
    messages
        .iter()
        .enumerate()
        .filter(|(_, bodies)| bodies.iter().any(|b| !accepted.contains(b.as_str())))
        .map(|(i, _)| seq(i))
        .collect()
}

fn text_messages(n: usize) -> Vec<Vec<String>> {
    (0..n).map(|i| vec![format!("rec-{i}")]).collect()
}

fn owned(v: Vec<&str>) -> Vec<String> {
    v.into_iter().map(str::to_owned).collect()
}

#[tokio::test(start_paused = true)]
async fn entries_that_keep_failing_are_reported_and_nothing_else() {
    let fake = scripted(|_, body, _| match body {
        "rec-7" | "rec-19" => Reply::INTERNAL,
        _ => Reply::Accept,
    });
    let response = answer(
        &fake,
        false,
        &Settings::default(),
        text_event(30, &["a", "b", "c"]),
    )
    .await;
    assert_eq!(owned(reported(&response)), vec![seq(7), seq(19)]);
    let accepted = fake.accepted_bodies();
    assert_eq!(accepted.len(), 28, "every other record once");
    assert_eq!(unsent(&text_messages(30), &accepted), vec![seq(7), seq(19)]);
}

#[tokio::test(start_paused = true)]
async fn entries_that_fail_then_succeed_are_not_reported() {
    let fake = scripted(|_, body, attempt| {
        if record_of(body).is_multiple_of(4) && attempt < 3 {
            Reply::INTERNAL
        } else {
            Reply::Accept
        }
    });
    let response = answer(&fake, false, &Settings::default(), text_event(25, &["a"])).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(fake.accepted().len(), 25);
}

#[tokio::test(start_paused = true)]
async fn throttled_calls_are_retried_and_a_recovery_reports_nothing() {
    let fake = accepting().fail_calls(|call| {
        (call < 2).then(|| CallError::Failed(Failure::transient("RequestThrottled", "slow down")))
    });
    let response = answer(&fake, false, &Settings::default(), text_event(15, &["a"])).await;
    assert!(response.batch_item_failures.is_empty());
    let mut accepted = fake.accepted_bodies();
    accepted.sort();
    accepted.dedup();
    assert_eq!(accepted.len(), 15);
}

#[tokio::test(start_paused = true)]
async fn throttling_that_outlasts_the_retries_reports_exactly_the_throttled_records() {
    // Records 10.. are throttled on every attempt.
    let fake = scripted(|_, body, _| {
        if record_of(body) >= 10 {
            Reply::THROTTLED
        } else {
            Reply::Accept
        }
    });
    let response = answer(
        &fake,
        false,
        &Settings::default(),
        text_event(14, &["a", "b"]),
    )
    .await;
    assert_eq!(
        owned(reported(&response)),
        (10..14).map(seq).collect::<Vec<_>>()
    );
    assert_eq!(
        unsent(&text_messages(14), &fake.accepted_bodies()),
        (10..14).map(seq).collect::<Vec<_>>()
    );
}

#[tokio::test(start_paused = true)]
async fn a_whole_call_failing_for_good_reports_its_records() {
    let fake = accepting().fail_calls(|call| {
        (call == 0).then(|| CallError::Failed(Failure::permanent("AccessDenied", "no")))
    });
    let settings = SendSettings {
        max_in_flight: 1,
        ..send_settings()
    };
    let response = Handler::new(Settings::default(), forwarder_with(&fake, settings, false))
        .handle(text_event(25, &["a"]), None)
        .await
        .expect("an answer");
    // The first call carried records 0..10.
    assert_eq!(
        owned(reported(&response)),
        (0..10).map(seq).collect::<Vec<_>>()
    );
    assert_eq!(fake.accepted().len(), 15);

    // Not the records' fault: reported under PERMANENT_FAILURES=skip too.
    fake.clear();
    let skip = Settings {
        permanent_failures: PermanentFailures::Skip,
        ..Settings::default()
    };
    let response = Handler::new(
        skip,
        forwarder_with(
            &fake,
            SendSettings {
                max_in_flight: 1,
                ..send_settings()
            },
            false,
        ),
    )
    .handle(text_event(25, &["a"]), None)
    .await
    .expect("an answer");
    assert_eq!(
        owned(reported(&response)),
        (0..10).map(seq).collect::<Vec<_>>()
    );
}

#[tokio::test(start_paused = true)]
async fn a_permanently_rejected_entry_is_reported_or_skipped_by_policy() {
    let rule = |_: usize, body: &str, _: u32| {
        if body == "rec-5" {
            Reply::INVALID
        } else {
            Reply::Accept
        }
    };
    let fake = scripted(rule);
    let response = answer(&fake, false, &Settings::default(), text_event(8, &["a"])).await;
    assert_eq!(owned(reported(&response)), vec![seq(5)]);
    // Not retried: a retry cannot help.
    assert_eq!(entries_per_call(&fake).iter().sum::<usize>(), 8);

    let fake = scripted(rule);
    let skip = Settings {
        permanent_failures: PermanentFailures::Skip,
        ..Settings::default()
    };
    let response = answer(&fake, false, &skip, text_event(8, &["a"])).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(fake.accepted().len(), 7);
}

#[tokio::test(start_paused = true)]
async fn the_deadline_running_out_mid_batch_reports_exactly_the_unsent_records() {
    // One call at a time, 100 ms each; 350 ms to go.
    let fake = accepting().delay(Duration::from_millis(100));
    let settings = SendSettings {
        max_in_flight: 1,
        ..send_settings()
    };
    let deadline = Instant::now() + Duration::from_millis(350);
    let response = Handler::new(Settings::default(), forwarder_with(&fake, settings, false))
        .handle(text_event(100, &["a", "b", "c"]), Some(deadline))
        .await
        .expect("an answer");
    let accepted = fake.accepted_bodies();
    let expected = unsent(&text_messages(100), &accepted);
    assert!(
        !accepted.is_empty(),
        "some calls finished before the deadline"
    );
    assert!(!expected.is_empty(), "the deadline came before the end");
    assert_eq!(owned(reported(&response)), expected);
    // Calls go in input order, so what was sent is a prefix, and Lambda
    // resumes right after it: nothing sent is delivered again.
    assert_eq!(reported(&response)[0], seq(accepted.len()));
}

fn kpl_event(failing_user: &'static str) -> (kinesis_to_sqs::event::KinesisEvent, FakeSqs) {
    let agg = kpl::aggregate(&[("a", b"rec-1-0"), ("b", b"rec-1-1"), ("a", b"rec-1-2")]);
    let ev = event(vec![
        record(0, "x", b"rec-0"),
        record(1, "a", &agg),
        record(2, "x", b"rec-2"),
    ]);
    let fake = scripted(move |_, body, _| {
        if body == failing_user {
            Reply::INTERNAL
        } else {
            Reply::Accept
        }
    });
    (ev, fake)
}

#[tokio::test(start_paused = true)]
async fn a_kpl_record_with_a_failed_user_record_is_reported_whole() {
    let (ev, fake) = kpl_event("rec-1-1");
    let response = answer(&fake, true, &Settings::default(), ev).await;
    assert_eq!(owned(reported(&response)), vec![seq(1)]);
    let mut accepted = fake.accepted_bodies();
    accepted.sort();
    // The user records before and after the failed one were sent; Lambda
    // delivers the record again, and their deduplication ids make SQS drop
    // the second copies on a FIFO queue.
    assert_eq!(accepted, vec!["rec-0", "rec-1-0", "rec-1-2", "rec-2"]);
    let dedup: Vec<String> = fake
        .accepted()
        .into_iter()
        .filter(|s| s.body.starts_with("rec-1-"))
        .filter_map(|s| s.deduplication_id.clone())
        .collect();
    let mut dedup = dedup;
    dedup.sort();
    assert_eq!(
        dedup,
        vec![
            format!("{}:{}:0", common::SHARD, seq(1)),
            format!("{}:{}:2", common::SHARD, seq(1))
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_corrupt_aggregate_fails_its_record_only() {
    let mut agg = kpl::aggregate(&[("a", b"rec-1-0")]);
    let n = agg.len();
    agg[n - 1] ^= 0x01; // the MD5 trailer
    let records = || {
        event(vec![
            record(0, "x", b"rec-0"),
            record(1, "a", &agg),
            record(2, "x", b"rec-2"),
        ])
    };
    let fake = accepting();
    let response = answer(&fake, false, &Settings::default(), records()).await;
    assert_eq!(owned(reported(&response)), vec![seq(1)]);
    assert_eq!(fake.accepted().len(), 2);

    let skip = Settings {
        permanent_failures: PermanentFailures::Skip,
        ..Settings::default()
    };
    let fake = accepting();
    let response = answer(&fake, false, &skip, records()).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(fake.accepted().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn fifo_groups_stay_in_order_and_a_blocked_group_is_reported_from_its_failure() {
    // Group "b" (records 1, 4, 7, ...) fails at record 4 for good.
    let fake = scripted(|_, body, _| {
        if body == "rec-4" {
            Reply::INTERNAL
        } else {
            Reply::Accept
        }
    });
    let response = answer(
        &fake,
        true,
        &Settings::default(),
        text_event(12, &["a", "b", "c"]),
    )
    .await;
    let accepted = fake.accepted();
    let mut per_group: HashMap<String, Vec<usize>> = HashMap::new();
    for s in &accepted {
        per_group
            .entry(s.group_id.clone().expect("group"))
            .or_default()
            .push(record_of(&s.body));
    }
    assert_eq!(per_group["a"], vec![0, 3, 6, 9]);
    assert_eq!(per_group["c"], vec![2, 5, 8, 11]);
    // Group b stops at its failure: 7 and 10 are held back, not sent after it.
    assert_eq!(per_group["b"], vec![1]);
    assert_eq!(owned(reported(&response)), vec![seq(4), seq(7), seq(10)]);
}

#[tokio::test(start_paused = true)]
async fn shard_groups_keep_the_shard_order() {
    let fake = accepting();
    let settings = Settings {
        group_id_source: GroupIdSource::ShardId,
        ..Settings::default()
    };
    let response = answer(&fake, true, &settings, text_event(12, &["a", "b", "c"])).await;
    assert!(response.batch_item_failures.is_empty());
    let order: Vec<usize> = fake
        .accepted()
        .iter()
        .map(|s| {
            assert_eq!(s.group_id.as_deref(), Some(common::SHARD));
            record_of(&s.body)
        })
        .collect();
    assert_eq!(order, (0..12).collect::<Vec<_>>());
}

/// A 10,000-record, ~6 MB batch (the largest Lambda hands over) goes through
/// whole; peak memory is measured by the benchmark, not here.
#[tokio::test(start_paused = true)]
async fn a_full_ten_thousand_record_batch_goes_through() {
    use base64::Engine as _;
    let payload = "x".repeat(580);
    let mut json = String::with_capacity(10_000 * 1_200);
    json.push_str("{\"Records\":[");
    let mut data_bytes = 0;
    for i in 0..10_000 {
        let data = format!("{{\"n\":{i:05},\"pad\":\"{payload}\"}}");
        data_bytes += data.len();
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            r#"{{"kinesis":{{"kinesisSchemaVersion":"1.0","partitionKey":"key-{k}","sequenceNumber":"{seq}","data":"{data}","approximateArrivalTimestamp":1764410000.5}},"eventSource":"aws:kinesis","eventVersion":"1.0","eventID":"{shard}:{seq}","eventName":"aws:kinesis:record","invokeIdentityArn":"arn:aws:iam::123456789012:role/r","awsRegion":"eu-west-1","eventSourceARN":"{arn}"}}"#,
            k = i % 16,
            seq = seq(i),
            data = base64::engine::general_purpose::STANDARD.encode(&data),
            shard = common::SHARD,
            arn = common::ARN,
        ));
    }
    json.push_str("]}");
    assert!(
        (5_900_000..=6_000_000).contains(&data_bytes),
        "{data_bytes}"
    );
    let event: kinesis_to_sqs::event::KinesisEvent =
        serde_json::from_str(&json).expect("a Kinesis event");
    drop(json);
    let fake = accepting();
    let response = answer(&fake, false, &Settings::default(), event).await;
    assert!(response.batch_item_failures.is_empty());
    let accepted = fake.accepted();
    assert_eq!(accepted.len(), 10_000);
    let mut numbers: Vec<usize> = accepted
        .iter()
        .map(|s| s.body[5..10].parse().expect("n"))
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (0..10_000).collect::<Vec<_>>());
    assert_eq!(
        accepted.iter().map(|s| s.body.len()).sum::<usize>(),
        data_bytes
    );
    // Full calls: ten entries each.
    assert_eq!(fake.call_count(), 1_000);
}

// ---------------------------------------------------------------------------
// Lambda's side, simulated: deliver, read the answer, resume at the lowest
// reported record, until the answer is empty.
// ---------------------------------------------------------------------------

async fn simulate(n: usize, failures: Vec<u32>, fifo: bool, in_flight: usize) {
    let failures_by_record = failures.clone();
    // Record i fails on its first failures[i] attempts (retryable), then succeeds.
    let fake = scripted(move |_, body, attempt| {
        if attempt <= failures_by_record[record_of(body)] {
            Reply::INTERNAL
        } else {
            Reply::Accept
        }
    });
    let settings = SendSettings {
        max_in_flight: in_flight,
        ..send_settings()
    };
    let fwd = forwarder_with(&fake, settings, fifo);
    let mut checkpoint = 0;
    let mut rounds = 0;
    loop {
        rounds += 1;
        assert!(rounds <= 50, "Lambda never got past record {checkpoint}");
        let batch = event(
            (checkpoint..n)
                .map(|i| record(i, ["a", "b", "c"][i % 3], format!("rec-{i}").as_bytes()))
                .collect(),
        );
        let before = fake.accepted().len();
        let response = Handler::new(Settings::default(), fwd.clone())
            .handle(batch, None)
            .await
            .expect("an answer");
        let reported = owned(reported(&response));
        let all = fake.accepted_bodies();
        let this_round: BTreeSet<usize> = all[before..].iter().map(|b| record_of(b)).collect();
        let accepted: BTreeSet<usize> = all.iter().map(|b| record_of(b)).collect();
        // Exactly the records of this delivery it did not send are reported,
        // lowest first.
        let expected: Vec<String> = (checkpoint..n)
            .filter(|i| !this_round.contains(i))
            .map(seq)
            .collect();
        assert_eq!(reported, expected);
        let Some(lowest) = reported.first() else {
            break;
        };
        let next = (checkpoint..n)
            .find(|i| &seq(*i) == lowest)
            .expect("a record of the batch");
        // Nothing before the new checkpoint is unsent: nothing is skipped.
        assert!((0..next).all(|i| accepted.contains(&i)));
        checkpoint = next;
    }
    let accepted: BTreeSet<usize> = fake
        .accepted_bodies()
        .iter()
        .map(|b| record_of(b))
        .collect();
    assert_eq!(accepted, (0..n).collect::<BTreeSet<_>>());
    if fifo {
        // Each group's first copies arrive in record order.
        let mut firsts: HashMap<String, Vec<usize>> = HashMap::new();
        let mut seen = BTreeSet::new();
        for s in fake.accepted() {
            let i = record_of(&s.body);
            if seen.insert(i) {
                firsts
                    .entry(s.group_id.clone().expect("group"))
                    .or_default()
                    .push(i);
            }
        }
        for (group, order) in firsts {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(order, sorted, "group {group}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever fails and however often, Lambda following the answers gets
    /// every record into SQS and never skips one.
    #[test]
    fn following_the_answers_loses_nothing(
        failures in proptest::collection::vec(prop_oneof![4 => Just(0u32), 1 => 1u32..9], 1..40),
        fifo in any::<bool>(),
        in_flight in 1usize..5,
    ) {
        let n = failures.len();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("runtime");
        rt.block_on(simulate(n, failures, fifo, in_flight));
    }
}
