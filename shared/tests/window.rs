//! The window: `Forwarder::forward` reads its source lazily and never holds
//! more than the window's worth of messages, however many go through.
//!
//! The source counts what the forwarder has taken from it, the report counts
//! what it has settled; the difference, taken at every read, is what the
//! forwarder held. The fake SQS answers every call 10 ms late (Tokio's paused
//! clock makes that free in wall time), so calls really are in flight while
//! the source is read.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Forwarder, Message, Outcome, SendSettings, Window};

/// Accepts everything, 10 ms late; or fails, once, the numbers in
/// `fail_once` (retryable).
fn slow_sqs(fail_once: Vec<u64>) -> FakeSqs {
    let fail_once: std::collections::HashSet<u64> = fail_once.into_iter().collect();
    FakeSqs::new().delay(Duration::from_millis(10)).fail_where(
        move |a| a.attempt == 1 && fail_once.contains(&number(a.body())),
        Reply::INTERNAL.with_message("try again"),
    )
}

/// The number a body starts with.
fn number(body: &str) -> u64 {
    body[..20].trim().parse().unwrap_or(u64::MAX)
}

/// The numbers accepted, each as often as it was.
fn arrived(sqs: &FakeSqs) -> Vec<u64> {
    sqs.accepted().iter().map(|s| number(&s.body)).collect()
}

/// A body of `size` bytes that starts with its number.
fn body(n: u64, size: usize) -> String {
    let mut b = format!("{n:<20}");
    b.extend(std::iter::repeat_n('x', size.saturating_sub(20)));
    b
}

struct Held {
    taken: Cell<usize>,
    taken_bytes: Cell<usize>,
    settled: Cell<usize>,
    settled_bytes: Cell<usize>,
    most: Cell<usize>,
    most_bytes: Cell<usize>,
}

/// Forward `count` messages of `size` bytes and return what was held at most
/// (messages, bytes), the outcomes by number, and the tally.
async fn run(
    fwd: &Forwarder<FakeSqs>,
    count: u64,
    size: usize,
) -> (usize, usize, Vec<Option<Outcome>>, sqs_forwarder::Tally) {
    let held = Rc::new(Held {
        taken: Cell::new(0),
        taken_bytes: Cell::new(0),
        settled: Cell::new(0),
        settled_bytes: Cell::new(0),
        most: Cell::new(0),
        most_bytes: Cell::new(0),
    });
    let source = {
        let held = Rc::clone(&held);
        (0..count).map(move |n| {
            held.taken.set(held.taken.get() + 1);
            held.taken_bytes.set(held.taken_bytes.get() + size);
            // What the forwarder holds once it has this one too.
            let now = held.taken.get() - held.settled.get();
            let now_bytes = held.taken_bytes.get() - held.settled_bytes.get();
            held.most.set(held.most.get().max(now));
            held.most_bytes.set(held.most_bytes.get().max(now_bytes));
            Message::new(body(n, size), n)
        })
    };
    let mut outcomes: Vec<Option<Outcome>> = vec![None; count as usize];
    let mut twice = 0;
    let tally = fwd
        .forward(source, None, |o| {
            held.settled.set(held.settled.get() + 1);
            held.settled_bytes.set(held.settled_bytes.get() + size);
            let slot = &mut outcomes[o.position as usize];
            if slot.is_some() {
                twice += 1;
            }
            *slot = Some(o.outcome);
        })
        .await;
    assert_eq!(twice, 0, "a message was reported twice");
    (held.most.get(), held.most_bytes.get(), outcomes, tally)
}

fn forwarder(sqs: FakeSqs, window: Window) -> Forwarder<FakeSqs> {
    let settings = SendSettings {
        window,
        ..SendSettings::default()
    };
    Forwarder::new(sqs, settings, EncodeRules::default())
}

#[tokio::test(start_paused = true)]
async fn two_hundred_thousand_messages_never_hold_more_than_the_window() {
    let sqs = slow_sqs(Vec::new());
    let window = Window {
        max_messages: 500,
        max_bytes: 8 * 1_048_576,
    };
    let fwd = forwarder(sqs.clone(), window);
    let (most, _, outcomes, tally) = run(&fwd, 200_000, 40).await;

    assert!(
        most <= 500,
        "held {most} messages at once; the window is 500"
    );
    // The window was used, not bypassed: it filled up while calls were out.
    assert!(
        most > 400,
        "held at most {most}: the source was not read ahead"
    );
    assert_eq!(tally.peak_messages, most);
    assert_eq!(tally.messages, 200_000);
    assert_eq!(tally.summary.sent, 200_000);
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Some(Outcome::Sent { .. })))
    );
    let mut arrived = arrived(&sqs);
    arrived.sort_unstable();
    assert_eq!(arrived, (0..200_000).collect::<Vec<u64>>(), "each once");
    // Streaming costs no call: as few as the input order allows.
    assert_eq!(sqs.call_count(), 20_000);
}

#[tokio::test(start_paused = true)]
async fn large_messages_are_bounded_by_bytes() {
    let sqs = slow_sqs(Vec::new());
    let window = Window {
        max_messages: 100_000,
        max_bytes: 8 * 1_048_576,
    };
    let fwd = forwarder(sqs.clone(), window);
    // 2,000 messages of 100,000 bytes: 200 MB through an 8 MiB window.
    let (_, most_bytes, _, tally) = run(&fwd, 2_000, 100_000).await;
    assert!(
        most_bytes <= 8 * 1_048_576 + 100_000,
        "held {most_bytes} bytes at once; the window is 8 MiB (+ one message)"
    );
    assert!(
        most_bytes > 6 * 1_048_576,
        "held at most {most_bytes} bytes"
    );
    assert_eq!(tally.summary.sent, 2_000);
    // 10 messages of 100,000 bytes fit one 1 MiB call.
    assert_eq!(sqs.call_count(), 200);
}

#[tokio::test(start_paused = true)]
async fn a_window_too_small_for_the_calls_in_flight_is_raised() {
    let sqs = slow_sqs(Vec::new());
    // 5 messages could not fill MAX_IN_FLIGHT (4) + 1 calls of 10.
    let window = Window {
        max_messages: 5,
        max_bytes: 1_048_576,
    };
    let fwd = forwarder(sqs.clone(), window);
    let effective = window.effective(&fwd.settings().limits, 4, None);
    assert_eq!(effective.max_messages, 51);
    let (most, _, _, tally) = run(&fwd, 10_000, 40).await;
    assert!(most <= 51, "held {most}");
    assert_eq!(tally.summary.sent, 10_000);
    assert_eq!(sqs.call_count(), 1_000, "full calls only");
}

#[tokio::test(start_paused = true)]
async fn retried_messages_stay_in_the_window_and_arrive_once() {
    let sqs = slow_sqs((0..50_000).step_by(7).collect());
    let window = Window {
        max_messages: 300,
        max_bytes: 8 * 1_048_576,
    };
    let fwd = forwarder(sqs.clone(), window);
    let (most, _, outcomes, tally) = run(&fwd, 50_000, 40).await;
    assert!(most <= 300, "held {most}");
    assert_eq!(tally.summary.sent, 50_000);
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Some(Outcome::Sent { .. })))
    );
    let mut arrived = arrived(&sqs);
    arrived.sort_unstable();
    assert_eq!(arrived, (0..50_000).collect::<Vec<u64>>());
}

#[tokio::test(start_paused = true)]
async fn the_deadline_reports_what_the_source_still_holds() {
    let sqs = slow_sqs(Vec::new());
    let fwd = forwarder(sqs.clone(), Window::default());
    // 10 ms per call, 4 in flight: about 4,000 messages a second.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
    let mut outcomes = vec![None; 100_000];
    let tally = fwd
        .forward(
            (0..100_000u64).map(|n| Message::new(body(n, 40), n)),
            Some(deadline),
            |o| outcomes[o.position as usize] = Some(o.outcome),
        )
        .await;
    assert_eq!(
        tally.messages, 100_000,
        "every message read gets an outcome"
    );
    let sent = outcomes
        .iter()
        .filter(|o| matches!(o, Some(Outcome::Sent { .. })))
        .count();
    let late = outcomes
        .iter()
        .filter(|o| matches!(o, Some(Outcome::Failed(f)) if f.code == "DeadlineExceeded" && f.retryable))
        .count();
    assert!(sent > 0 && sent < 100_000, "sent {sent}");
    assert_eq!(sent + late, 100_000);
    assert_eq!(sent, arrived(&sqs).len());
}

/// Calls in flight are bounded by their count and, when set, by the bytes
/// they carry together: small calls go out `max_in_flight` at a time, large
/// ones only as many as the bytes allow (one always, however large), and the
/// window is sized for what may be in flight, not for the count's worth of
/// full calls.
#[tokio::test(start_paused = true)]
async fn the_bytes_in_flight_bound_large_calls_not_small_ones() {
    let settings = |bytes: Option<usize>| SendSettings {
        max_in_flight: 16,
        max_in_flight_bytes: bytes,
        ..SendSettings::default()
    };
    // Small messages: 10 per call, ~400 bytes a call: 16 calls out at once.
    let small = slow_sqs(Vec::new());
    let fwd = Forwarder::new(
        small.clone(),
        settings(Some(4 * 1_048_576)),
        EncodeRules::default(),
    );
    let (_, _, _, tally) = run(&fwd, 10_000, 40).await;
    assert_eq!(tally.summary.sent, 10_000);
    assert_eq!(
        small.max_in_flight(),
        16,
        "small calls: the count bounds them"
    );

    // 100,000-byte messages, 10 to a ~1 MB call: 4 MiB lets 4 calls out.
    let large = slow_sqs(Vec::new());
    let fwd = Forwarder::new(
        large.clone(),
        settings(Some(4 * 1_048_576)),
        EncodeRules::default(),
    );
    let (_, most_bytes, _, tally) = run(&fwd, 400, 100_000).await;
    assert_eq!(tally.summary.sent, 400);
    assert_eq!(
        large.max_in_flight(),
        4,
        "large calls: the bytes bound them"
    );
    // The window: 4 MiB in flight + one more call + one message, not 16 calls' worth.
    let effective = Window::default().effective(&fwd.settings().limits, 16, Some(4 * 1_048_576));
    assert_eq!(effective.max_bytes, 8 * 1_048_576);
    assert!(most_bytes <= 8 * 1_048_576 + 100_000, "held {most_bytes}");

    // One call always goes out, however large: a budget below one call.
    let one = slow_sqs(Vec::new());
    let fwd = Forwarder::new(one.clone(), settings(Some(1)), EncodeRules::default());
    let (_, _, _, tally) = run(&fwd, 40, 100_000).await;
    assert_eq!(tally.summary.sent, 40);
    assert_eq!(one.max_in_flight(), 1);

    // Without a bytes bound, the count alone: 16 large calls out.
    let unbounded = slow_sqs(Vec::new());
    let fwd = Forwarder::new(unbounded.clone(), settings(None), EncodeRules::default());
    let (_, _, _, tally) = run(&fwd, 400, 100_000).await;
    assert_eq!(tally.summary.sent, 400);
    assert_eq!(unbounded.max_in_flight(), 16);
}
