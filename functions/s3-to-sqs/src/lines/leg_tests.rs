//! An object read as a chain of legs: each stops at a line boundary after
//! its lines, says where the rest starts, and the next leg, given the
//! stream from that offset, goes on with the line numbers.

use sqs_forwarder::AttributeValue;
use sqs_forwarder::route::Router;
use sqs_forwarder::test_support::FakeSqs;

use super::{Chunking, Leg, forward_leg};
use crate::continuation::{HandOver, Start};
use crate::event::{ObjectEvent, Via};
use crate::messages::Fifo;
use crate::settings::GroupBy;
use crate::testing::{accepted_by, forwarder};

fn object_event() -> ObjectEvent {
    ObjectEvent {
        via: Via::Notification,
        event_name: "ObjectCreated:Put".into(),
        event_time: None,
        region: None,
        bucket: "logs".into(),
        key: "app.log".into(),
        size: None,
        etag: Some("e1".into()),
        version_id: None,
        sequencer: None,
        detail_type: None,
        reason: None,
    }
}

#[tokio::test]
async fn legs_hand_over_at_line_boundaries_and_number_on() {
    // 1,000 lines of varied lengths, a blank one and CRLF endings among them.
    let mut text = Vec::new();
    for i in 1..=1000u64 {
        match i {
            500 => text.extend_from_slice(b"\r\n"),
            i if i % 7 == 0 => text.extend_from_slice(
                format!("l{i}-{}\r\n", "x".repeat((i % 13) as usize)).as_bytes(),
            ),
            i => text.extend_from_slice(format!("l{i}\n").as_bytes()),
        }
    }
    let fwd = forwarder(FakeSqs::new(), false);
    let router = Router::single(fwd.clone());
    let fifo = Fifo {
        enabled: false,
        group_by: GroupBy::Object,
    };
    let chunking = Chunking {
        lines: 64,
        bytes: 1 << 20,
    };
    let mut start = Start::BEGINNING;
    let mut legs = 0;
    loop {
        legs += 1;
        let rest = &text[start.offset as usize..];
        let leg = Leg {
            start,
            hand_over: HandOver {
                at: None,
                lines: Some(300),
            },
        };
        let report = forward_leg(rest, &object_event(), &router, fifo, chunking, None, leg).await;
        assert!(report.complete());
        assert!(report.lines <= 300, "a leg stops after its lines");
        match report.handed_over {
            Some(next) => {
                assert_eq!(next.line, start.line + 300);
                assert!(
                    next.offset == 0 || text[next.offset as usize - 1] == b'\n',
                    "the rest starts at a line boundary"
                );
                start = next;
            }
            None => break,
        }
    }
    assert_eq!(legs, 4, "300 + 300 + 300 + 100 lines");
    let got = accepted_by(fwd.transport());
    assert_eq!(got.len(), 999, "every line once, the blank one skipped");
    for (i, e) in got.iter().enumerate() {
        let n = if i + 1 < 500 { i + 1 } else { i + 2 };
        assert!(e.body.starts_with(&format!("l{n}")), "{} at {i}", e.body);
        assert!(!e.body.ends_with('\r'));
        let line = e
            .attributes
            .iter()
            .find(|a| a.name == "line")
            .expect("line");
        assert_eq!(line.value, AttributeValue::Number(n.to_string()));
    }
}

#[tokio::test]
async fn a_leg_that_reaches_the_end_hands_nothing_over() {
    let fwd = forwarder(FakeSqs::new(), false);
    let router = Router::single(fwd.clone());
    let fifo = Fifo {
        enabled: false,
        group_by: GroupBy::Object,
    };
    let chunking = Chunking {
        lines: 10,
        bytes: 1 << 20,
    };
    let leg = Leg {
        start: Start::BEGINNING,
        hand_over: HandOver {
            at: None,
            lines: Some(3),
        },
    };
    // Exactly three lines: due after the third, but nothing is left.
    let report = forward_leg(
        &b"a\nb\nc\n"[..],
        &object_event(),
        &router,
        fifo,
        chunking,
        None,
        leg,
    )
    .await;
    assert_eq!(
        (report.lines, report.sent, report.handed_over),
        (3, 3, None)
    );
}
