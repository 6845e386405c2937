//! End-to-end: each function with aggregation on (`AGGREGATE=true`) against
//! the local SQS (and the local RabbitMQ): small records arrive in few
//! messages, every record the source is told was sent is read back once
//! with `sqs_forwarder::aggregate::read::records`, FIFO aggregates hold one
//! group each in order with every record's deduplication id, and with
//! faults injected between the forwarder and SQS (a whole call failing
//! once, an aggregate refused) each source gets the exact answer its rules
//! act on. The Python consumer reads the same messages as the Rust reader.
//!
//! One module per function (`tests/aggregation/*.rs`); the helpers that do
//! not need the fake SQS are in `tests/support/aggregation.rs`.

#[path = "aggregation/apigw.rs"]
mod apigw;
#[path = "aggregation/kinesis.rs"]
mod kinesis;
#[path = "aggregation/rabbitmq.rs"]
mod rabbitmq;
#[path = "aggregation/s3.rs"]
mod s3;

use std::collections::BTreeSet;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use sqs_forwarder::aggregate::MARKER_ATTRIBUTE;
use sqs_forwarder::aggregate::read::{ReceivedAttribute, records};
use sqs_forwarder::test_support::fake_sqs::{Attempt, Seen, transient};
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Forwarder, SqsTransport};

/// The first entry `pick` picks is refused for good (`InvalidParameterValue`);
/// every later one goes through.
fn refuse_once(
    pick: impl Fn(&Attempt<'_>) -> bool + Send + Sync + 'static,
) -> impl Fn(&Attempt<'_>) -> Option<Reply> + Send + Sync + 'static {
    let done = Arc::new(AtomicBool::new(false));
    move |a| {
        (pick(a) && !done.swap(true, Ordering::SeqCst))
            .then(|| Reply::INVALID.with_message("injected"))
    }
}

/// Between `base`'s forwarder and the local SQS: the first call fails as a
/// whole once (`ServiceUnavailable`, retried); the first entry whose body
/// holds `refuse` is refused for good (`InvalidParameterValue`); entries
/// whose body holds `fail` fail retryably (`InternalError`) at every
/// attempt while the switch returned is on. `base`'s forwarder through them.
fn faulty(
    base: &Forwarder<SqsTransport>,
    refuse: Option<&str>,
    fail: Option<&str>,
) -> (FakeSqs, Forwarder<FakeSqs>, Arc<AtomicBool>) {
    let on = Arc::new(AtomicBool::new(true));
    let mut fake = FakeSqs::in_front_of(base.transport().clone())
        .fail_calls(|n| (n == 0).then(|| transient("ServiceUnavailable")));
    if let Some(refuse) = refuse {
        let refuse = refuse.to_owned();
        fake = fake.answer(refuse_once(move |a| a.body().contains(&refuse)));
    }
    if let Some(fail) = fail {
        let (fail, on) = (fail.to_owned(), on.clone());
        fake = fake.fail_where(
            move |a| on.load(Ordering::SeqCst) && a.body().contains(&fail),
            Reply::INTERNAL.with_message("injected"),
        );
    }
    let fwd = Forwarder::new(fake.clone(), base.settings().clone(), base.rules().clone());
    (fake, fwd, on)
}

/// The record bodies of an entry the fake saw.
fn record_bodies(s: &Seen) -> Vec<String> {
    let attributes: HashMap<String, ReceivedAttribute> = s
        .attributes
        .iter()
        .map(|a| (a.name.to_string(), ReceivedAttribute::of(a)))
        .collect();
    records("seen", &s.body, &attributes)
        .expect("an entry the forwarder made reads back")
        .into_iter()
        .map(|r| r.body)
        .collect()
}

/// The entries SQS (the fake) refused, each once (however many attempts),
/// as their records, in order; and how many whole calls failed. Asserts the
/// refused entries were aggregates, no two sharing a record.
fn refused_entries(fake: &FakeSqs) -> (Vec<Vec<String>>, usize) {
    let mut entries: Vec<Vec<String>> = Vec::new();
    let mut failed_calls = 0;
    for call in fake.calls() {
        if call.error.is_some() {
            failed_calls += 1;
            continue;
        }
        for s in call.entries.iter().filter(|s| !s.sent()) {
            assert_eq!(
                s.string(MARKER_ATTRIBUTE),
                Some("1"),
                "an aggregate refused"
            );
            let recs = record_bodies(s);
            if !entries.contains(&recs) {
                entries.push(recs);
            }
        }
    }
    let all: Vec<&String> = entries.iter().flatten().collect();
    let unique: BTreeSet<&String> = all.iter().copied().collect();
    assert_eq!(
        unique.len(),
        all.len(),
        "a record in two refused aggregates"
    );
    (entries, failed_calls)
}

/// The records of the one entry SQS (the fake) refused, and how many whole
/// calls failed.
fn refused(fake: &FakeSqs) -> (Vec<String>, usize) {
    let (mut entries, failed_calls) = refused_entries(fake);
    assert_eq!(entries.len(), 1, "one aggregate refused: {entries:?}");
    (entries.remove(0), failed_calls)
}
