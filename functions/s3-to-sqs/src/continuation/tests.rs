use super::*;

fn event() -> ObjectEvent {
    ObjectEvent {
        via: Via::Notification,
        event_name: "ObjectCreated:Put".into(),
        event_time: Some("2026-11-29T10:15:30.123Z".into()),
        region: Some("eu-west-1".into()),
        bucket: "acme-in".into(),
        key: "logs/a b.log".into(),
        size: Some(1000),
        etag: Some("e1".into()),
        version_id: None,
        sequencer: Some("00AA".into()),
        detail_type: None,
        reason: None,
    }
}

fn pin() -> Pin {
    Pin {
        version_id: Some("v1".into()),
        etag: Some("e1".into()),
    }
}

#[test]
fn a_continuation_round_trips_and_keeps_the_event() {
    let e = event();
    let chain = chain_id(&e, &pin());
    assert_eq!(chain.len(), 16);
    assert_eq!(
        chain,
        chain_id(&e, &pin()),
        "a retried step names the same chain"
    );
    let c = Continuation::next(
        &e,
        &pin(),
        &chain,
        3,
        Start {
            offset: 4096,
            line: 201,
        },
    )
    .expect("pinned");
    let json: serde_json::Value = serde_json::from_slice(&c.to_json()).expect("json");
    let inner = json[FIELD].to_string();
    let back = Continuation::parse(&inner).expect("valid");
    assert_eq!(back, c);
    assert_eq!(
        back.object_event(),
        e,
        "FIFO ids and routing keys come from the same event"
    );
    assert_eq!(
        back.start(),
        Start {
            offset: 4096,
            line: 201
        }
    );
    assert_eq!(back.pin(), pin());
    // No ETag to pin to: nothing to hand on.
    assert!(Continuation::next(&e, &Pin::default(), &chain, 1, Start::BEGINNING).is_none());
}

#[test]
fn malformed_continuations_are_refused_naming_the_field() {
    let c = Continuation::next(
        &event(),
        &pin(),
        "abc",
        1,
        Start {
            offset: 10,
            line: 2,
        },
    )
    .expect("pinned");
    let good: serde_json::Value = serde_json::from_slice(&c.to_json()).expect("json");
    let with = |path: &[&str], v: serde_json::Value| {
        let mut j = good[FIELD].clone();
        let mut at = &mut j;
        for p in &path[..path.len() - 1] {
            at = &mut at[*p];
        }
        at[path[path.len() - 1]] = v;
        Continuation::parse(&j.to_string())
            .expect_err("refused")
            .to_string()
    };
    assert!(with(&["offset"], serde_json::json!(-1)).contains("offset"));
    assert!(with(&["step"], serde_json::json!(0)).contains("step must be 1 or more"));
    assert!(with(&["version"], serde_json::json!(2)).contains("version 2"));
    assert!(with(&["etag"], serde_json::json!("")).contains("etag is empty"));
    assert!(with(&["line"], serde_json::json!(0)).contains("line must be 1"));
    assert!(with(&["bucket"], serde_json::json!(7)).contains("bucket"));
    assert!(with(&["extra"], serde_json::json!(1)).contains("unknown field"));
    assert!(
        with(
            &["event", "eventName"],
            serde_json::json!("ObjectRemoved:Delete")
        )
        .contains("ObjectCreated")
    );
    assert!(with(&["event", "via"], serde_json::json!("sqs")).contains("event.via"));
    let e = Continuation::parse("{}").expect_err("empty");
    assert!(
        e.to_string()
            .starts_with("malformed S3 event: continuation event:"),
        "{e}"
    );
}

#[test]
fn a_hand_over_is_due_after_its_lines_or_its_instant_and_never_before_a_line() {
    let by_lines = HandOver {
        at: None,
        lines: Some(3),
    };
    assert!(!by_lines.due(2));
    assert!(by_lines.due(3));
    let past = HandOver {
        at: Some(Instant::now()),
        lines: None,
    };
    assert!(!past.due(0), "a step reads at least one line");
    assert!(past.due(1));
    assert!(!HandOver::NEVER.due(u64::MAX));
}
