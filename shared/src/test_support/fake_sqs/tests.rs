use super::*;
use crate::Message;
use crate::call::transport::{BatchItem, EntryResult};
use crate::message::encode::{EncodeRules, prepare};

fn items(bodies: &[&str]) -> Vec<BatchItem> {
    bodies
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let (_, e) = prepare(Message::new(*b, i), &EncodeRules::default());
            BatchItem {
                id: i.to_string(),
                entry: Arc::new(e.expect("valid")),
            }
        })
        .collect()
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime")
        .block_on(f)
}

#[test]
fn accepts_everything_and_records_it() {
    let fake = FakeSqs::new();
    let out = block_on(fake.send_batch(&items(&["a", "b"]))).expect("answer");
    assert_eq!(
        out[1],
        (
            "1".into(),
            EntryResult::Sent {
                message_id: "m-0-1".into(),
                sequence_number: None
            }
        )
    );
    assert_eq!(fake.call_count(), 1);
    assert_eq!(fake.sent(), 2);
    assert_eq!(fake.accepted_bodies(), ["a", "b"]);
    assert_eq!(fake.in_flight(), 0);
    assert_eq!(fake.max_in_flight(), 1);
}

#[test]
fn rules_fail_entries_and_calls_and_the_last_one_wins() {
    let fake = FakeSqs::new()
        .fail_where(|a| a.id == "0", Reply::INVALID)
        .fail_first("b", 1, Reply::INTERNAL.with_message("injected"))
        .fail_where(|a| a.call == 2, Reply::THROTTLED)
        .fail_calls(|call| (call == 1).then(throttled));
    let batch = items(&["a", "b"]);
    let first = block_on(fake.send_batch(&batch)).expect("answer");
    assert!(
        matches!(&first[0].1, EntryResult::Failed { code, sender_fault: true, .. } if code == "InvalidParameterValue")
    );
    assert!(
        matches!(&first[1].1, EntryResult::Failed { code, message, sender_fault: false } if code == "InternalError" && message == "injected")
    );
    assert_eq!(block_on(fake.send_batch(&batch)), Err(throttled()));
    let third = block_on(fake.send_batch(&batch)).expect("answer");
    assert!(matches!(&third[1].1, EntryResult::Failed { code, .. } if code == "RequestThrottled"));
    let fourth = block_on(fake.send_batch(&batch)).expect("answer");
    assert!(matches!(fourth[1].1, EntryResult::Sent { .. }));
    let calls = fake.calls();
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[1].error, Some(throttled()));
    assert_eq!(
        calls[3].entries[1].attempt, 3,
        "a failed call is no attempt"
    );
    assert_eq!(fake.accepted_bodies(), ["b"]);
}

#[test]
fn delays_count_calls_in_flight_and_stalls_never_answer() {
    block_on(async {
        let fake = FakeSqs::new()
            .delay(Duration::from_millis(10))
            .stall_from_call(2);
        let batch = items(&["a"]);
        let t0 = tokio::time::Instant::now();
        let (a, b) = tokio::join!(fake.send_batch(&batch), fake.send_batch(&batch));
        assert!(a.is_ok() && b.is_ok());
        assert_eq!(t0.elapsed(), Duration::from_millis(10));
        assert_eq!(fake.max_in_flight(), 2);
        let stalled = tokio::time::timeout(Duration::from_secs(60), fake.send_batch(&batch)).await;
        assert!(stalled.is_err(), "never answers");
        assert_eq!((fake.call_count(), fake.in_flight()), (3, 0));
        assert_eq!(fake.calls().len(), 2);
    });
}

#[test]
fn in_front_of_sends_what_the_rules_accept_through() {
    let behind = FakeSqs::new().message_ids(|_, id| format!("real-{id}"));
    let fake =
        FakeSqs::in_front_of(behind.clone()).fail_where(|a| a.body() == "a", Reply::THROTTLED);
    let out = block_on(fake.send_batch(&items(&["a", "b"]))).expect("answer");
    assert_eq!(out.len(), 2);
    assert_eq!(behind.accepted_bodies(), ["b"]);
    assert!(
        matches!(&fake.accepted()[0].result, Some(EntryResult::Sent { message_id, .. }) if message_id == "real-1")
    );
}
