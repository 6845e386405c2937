//! Property tests: for arbitrary messages, limits and failures, the batcher
//! and the forwarder keep their promises.
//!
//! * no call exceeds the entry count or the byte cap (recomputed here from
//!   what the transport received, the way SQS counts);
//! * every message gets exactly one outcome, in input order, and a message
//!   is reported sent exactly when the endpoint accepted it, once;
//! * within a FIFO group, the endpoint accepts messages in input order, even
//!   when entries and calls fail and are retried;
//! * with no failures, the number of calls equals the lower bound for the
//!   input order (the fewest contiguous calls that respect both limits).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use sqs_forwarder::call::transport::CallError;
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::message::limits::{Limits, message_size};
use sqs_forwarder::send::batch::{FifoOrder, pack_in_order};
use sqs_forwarder::send::outcome::{Failure, Outcome};
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Attribute, Forwarder, Message, RetryPolicy, SendSettings, Window};

/// What the fake endpoint saw and did.
#[derive(Default)]
struct Log {
    calls: Vec<Vec<(usize, usize)>>, // per call: (input index, size)
    accepted: Vec<usize>,            // input indexes, in acceptance order
    violations: Vec<String>,
}

/// A fake SQS endpoint that fails entries and calls at random; calls finish
/// in random order, as real ones do. Entry ids are input indexes, message
/// ids `m-{index}`.
fn fake(seed: u64, entry_failure_pct: u8, call_failure_pct: u8) -> FakeSqs {
    let rng = Arc::new(Mutex::new(fastrand::Rng::with_seed(seed)));
    let (pause, call, entry) = (Arc::clone(&rng), Arc::clone(&rng), rng);
    FakeSqs::new()
        .message_ids(|_, id| format!("m-{id}"))
        .delay_with(move |_| Duration::from_micros(pause.lock().expect("rng").u64(0..3_000)))
        .fail_calls(move |_| {
            let mut rng = call.lock().expect("rng");
            (rng.u8(0..100) < call_failure_pct).then(|| {
                let f = if rng.bool() {
                    Failure::transient("ServiceUnavailable", "try later")
                } else {
                    Failure::transient("RequestThrottled", "slow down")
                };
                CallError::Failed(f)
            })
        })
        .answer(move |_| {
            let mut rng = entry.lock().expect("rng");
            (rng.u8(0..100) < entry_failure_pct).then(|| {
                let (code, sender_fault) = match rng.u8(0..3) {
                    0 => ("InternalError", false),
                    1 => ("RequestThrottled", true),
                    _ => ("InvalidParameterValue", true),
                };
                Reply::fail(code, sender_fault)
            })
        })
}

/// What the fake saw, checked against the limits the way SQS counts.
fn log(fake: &FakeSqs, limits: &Limits) -> Log {
    let mut log = Log::default();
    for c in fake.calls() {
        let mut call = Vec::new();
        let mut total = 0;
        for item in &c.entries {
            let size = message_size(&item.body, &item.attributes);
            if size != item.size {
                log.violations.push(format!(
                    "entry {} claims {} bytes, is {size}",
                    item.id, item.size
                ));
            }
            if size > limits.max_message_bytes {
                log.violations
                    .push(format!("entry {} is {size} bytes", item.id));
            }
            total += size;
            let index: usize = item.id.parse().expect("ids are input indexes");
            call.push((index, size));
        }
        if c.entries.is_empty() || c.entries.len() > limits.max_entries {
            log.violations
                .push(format!("call with {} entries", c.entries.len()));
        }
        if total > limits.max_request_bytes {
            log.violations.push(format!("call with {total} bytes"));
        }
        log.calls.push(call);
    }
    log.accepted = fake
        .accepted()
        .iter()
        .map(|s| s.id.parse().expect("ids are input indexes"))
        .collect();
    log
}

/// The fewest contiguous calls, by dynamic programming.
fn lower_bound(sizes: &[usize], limits: &Limits) -> usize {
    let n = sizes.len();
    let mut best = vec![usize::MAX; n + 1];
    best[0] = 0;
    for end in 1..=n {
        let mut bytes = 0;
        for start in (0..end).rev() {
            bytes += sizes[start];
            if end - start > limits.max_entries || bytes > limits.max_request_bytes {
                break;
            }
            if best[start] != usize::MAX {
                best[end] = best[end].min(best[start] + 1);
            }
        }
    }
    best[n]
}

#[derive(Debug, Clone)]
struct Case {
    bodies: Vec<(usize, usize, u8)>, // (body chars, attributes, group)
    limits: Limits,
    in_flight: usize,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec((1usize..3_000, 0usize..4, 0u8..4), 0..60),
        1usize..=10,
        2_000usize..=12_000,
        2_000usize..=20_000,
        1usize..=4,
        any::<u64>(),
    )
        .prop_map(
            |(bodies, max_entries, max_message_bytes, max_request_bytes, in_flight, seed)| Case {
                bodies,
                limits: Limits {
                    max_entries,
                    max_message_bytes,
                    max_request_bytes,
                },
                in_flight,
                seed,
            },
        )
}

fn messages(case: &Case, fifo: bool) -> Vec<Message<usize>> {
    case.bodies
        .iter()
        .enumerate()
        .map(|(i, &(chars, attrs, group))| {
            // multi-byte text: 'é' is 2 bytes, '€' 3
            let body: String = (0..chars)
                .map(|k| {
                    if k % 3 == 0 {
                        'é'
                    } else if k % 7 == 0 {
                        '€'
                    } else {
                        'a'
                    }
                })
                .collect();
            let mut m = Message::new(body, i);
            for a in 0..attrs {
                m = m.attribute(Attribute::string(format!("k{a}"), "välue"));
            }
            if fifo {
                m = m
                    .group_id(format!("g{group}"))
                    .deduplication_id(format!("d{i}"));
            }
            m
        })
        .collect()
}

fn forwarder(
    case: &Case,
    entry_pct: u8,
    call_pct: u8,
    fifo: bool,
    order: FifoOrder,
) -> (Forwarder<FakeSqs>, FakeSqs) {
    let fake = fake(case.seed, entry_pct, call_pct);
    let settings = SendSettings {
        limits: case.limits,
        max_in_flight: case.in_flight,
        retry: RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_micros(200),
            max_delay: Duration::from_millis(1),
        },
        fifo_order: order,
        // The smallest window there is (raised to MAX_IN_FLIGHT + 1 full
        // calls): most cases hold more messages than that, so every
        // property below holds with the source read as the window frees.
        window: Window {
            max_messages: 1,
            max_bytes: 1,
        },
        ..SendSettings::default()
    };
    let rules = EncodeRules {
        fifo,
        ..EncodeRules::default()
    };
    (Forwarder::new(fake.clone(), settings, rules), fake)
}

fn run<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
        .block_on(f)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn packing_respects_limits_and_meets_the_lower_bound(
        sizes in prop::collection::vec(1usize..=1_048_576, 0..40),
        max_entries in 1usize..=10,
        max_request_bytes in 1usize..=1_048_576,
        scale in 1usize..=3,
    ) {
        // Small byte caps make the byte limit bind often; large ones the count.
        let max_request_bytes = if scale == 1 { max_request_bytes % 5_000 + 1 } else { max_request_bytes };
        let limits = Limits { max_entries, max_message_bytes: 1_048_576, max_request_bytes };
        let sizes: Vec<usize> = sizes.into_iter().map(|s| s.min(max_request_bytes)).collect();
        let plan = pack_in_order(&sizes, &limits);
        let mut next = 0;
        for r in &plan {
            prop_assert_eq!(r.start, next);
            prop_assert!(!r.is_empty() && r.len() <= max_entries);
            prop_assert!(sizes[r.clone()].iter().sum::<usize>() <= max_request_bytes);
            next = r.end;
        }
        prop_assert_eq!(next, sizes.len());
        prop_assert_eq!(plan.len(), lower_bound(&sizes, &limits));
    }

    #[test]
    fn without_failures_every_message_is_sent_in_the_fewest_calls(case in case()) {
        let (fwd, fake) = forwarder(&case, 0, 0, false, FifoOrder::Batched);
        let msgs = messages(&case, false);
        let n = msgs.len();
        let outcomes = run(fwd.send_all(msgs, None));
        let log = log(&fake, &case.limits);
        prop_assert!(log.violations.is_empty(), "{:?}", log.violations);
        prop_assert_eq!(outcomes.len(), n);
        let largest = case.limits.largest_message();
        let mut sizes = Vec::new();
        for (i, o) in outcomes.iter().enumerate() {
            prop_assert_eq!(o.position, i);
            match &o.outcome {
                Outcome::Sent { message_id, .. } => {
                    prop_assert_eq!(message_id, &format!("m-{i}"));
                    prop_assert_eq!(o.attempts, 1);
                }
                Outcome::Failed(f) => prop_assert_eq!(f.code.as_str(), "MessageTooLarge"),
                Outcome::Dropped { .. } => prop_assert!(false, "nothing is dropped by default"),
            }
        }
        // Sizes in input order (calls may finish, and be logged, out of order).
        let mut by_index: Vec<(usize, usize)> = log.calls.iter().flatten().copied().collect();
        by_index.sort_unstable();
        sizes.extend(by_index.iter().map(|&(_, s)| s));
        prop_assert!(sizes.iter().all(|&s| s <= largest));
        prop_assert_eq!(log.calls.len(), lower_bound(&sizes, &case.limits));
    }

    #[test]
    fn under_failures_every_message_gets_exactly_one_truthful_outcome(
        case in case(), entry_pct in 0u8..60, call_pct in 0u8..40,
    ) {
        let (fwd, fake) = forwarder(&case, entry_pct, call_pct, false, FifoOrder::Batched);
        let msgs = messages(&case, false);
        let n = msgs.len();
        let outcomes = run(fwd.send_all(msgs, None));
        let log = log(&fake, &case.limits);
        prop_assert!(log.violations.is_empty(), "{:?}", log.violations);
        prop_assert_eq!(outcomes.len(), n);
        let mut accepted: HashMap<usize, usize> = HashMap::new();
        for &i in &log.accepted {
            *accepted.entry(i).or_default() += 1;
        }
        for (i, o) in outcomes.iter().enumerate() {
            prop_assert_eq!(o.position, i);
            prop_assert!(o.attempts <= 4);
            match &o.outcome {
                Outcome::Sent { .. } => prop_assert_eq!(accepted.get(&i).copied(), Some(1)),
                Outcome::Failed(f) => {
                    prop_assert_eq!(accepted.get(&i), None);
                    if f.code == "InvalidParameterValue" || f.code == "MessageTooLarge" {
                        prop_assert!(!f.retryable);
                    } else {
                        prop_assert!(f.retryable, "{:?}", f);
                        prop_assert_eq!(o.attempts, 4, "retryable failures are retried to the limit");
                    }
                }
                Outcome::Dropped { .. } => prop_assert!(false, "nothing is dropped by default"),
            }
        }
    }

    #[test]
    fn strict_fifo_keeps_group_order_under_failures(
        case in case(), entry_pct in 0u8..60, call_pct in 0u8..40,
    ) {
        let (fwd, fake) = forwarder(&case, entry_pct, call_pct, true, FifoOrder::Strict);
        let msgs = messages(&case, true);
        let groups: Vec<u8> = case.bodies.iter().map(|b| b.2).collect();
        let n = msgs.len();
        let outcomes = run(fwd.send_all(msgs, None));
        let log = log(&fake, &case.limits);
        prop_assert!(log.violations.is_empty(), "{:?}", log.violations);
        prop_assert_eq!(outcomes.len(), n);
        for call in &log.calls {
            let mut seen = Vec::new();
            for &(i, _) in call {
                prop_assert!(!seen.contains(&groups[i]), "two messages of one group in one call");
                seen.push(groups[i]);
            }
        }
        let mut last: HashMap<u8, usize> = HashMap::new();
        for &i in &log.accepted {
            if let Some(&prev) = last.get(&groups[i]) {
                prop_assert!(prev < i, "group {} accepted {} after {}", groups[i], i, prev);
            }
            last.insert(groups[i], i);
        }
        // After a message of a group fails for now (its source will send it
        // again), no later message of that group may have been sent.
        let mut stopped: Vec<u8> = Vec::new();
        for (i, o) in outcomes.iter().enumerate() {
            prop_assert_eq!(o.position, i);
            match &o.outcome {
                Outcome::Sent { .. } => prop_assert!(!stopped.contains(&groups[i]), "message {} of a stopped group was sent", i),
                Outcome::Failed(f) if f.retryable => stopped.push(groups[i]),
                _ => {}
            }
        }
    }

    #[test]
    fn batched_fifo_keeps_group_order_when_only_calls_fail(case in case(), call_pct in 0u8..50) {
        // Whole-call failures never split a group inside a call, so batched
        // mode keeps order too; only partial failures inside a call can't.
        let (fwd, fake) = forwarder(&case, 0, call_pct, true, FifoOrder::Batched);
        let msgs = messages(&case, true);
        let groups: Vec<u8> = case.bodies.iter().map(|b| b.2).collect();
        let outcomes = run(fwd.send_all(msgs, None));
        let log = log(&fake, &case.limits);
        prop_assert!(log.violations.is_empty(), "{:?}", log.violations);
        prop_assert_eq!(outcomes.len(), groups.len());
        let mut last: HashMap<u8, usize> = HashMap::new();
        for &i in &log.accepted {
            if let Some(&prev) = last.get(&groups[i]) {
                prop_assert!(prev < i, "group {} accepted {} after {}", groups[i], i, prev);
            }
            last.insert(groups[i], i);
        }
    }
}
