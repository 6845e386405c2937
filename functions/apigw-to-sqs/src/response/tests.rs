//! The answer's tests: the status rule, the per-message results, the headers.

use super::*;
use sqs_forwarder::Failure;

fn sent(i: usize) -> MessageOutcome<usize> {
    MessageOutcome {
        position: i,
        outcome: Outcome::Sent {
            message_id: format!("id-{i}"),
            sequence_number: None,
        },
        attempts: 1,
    }
}

fn failed(i: usize, code: &str, retryable: bool) -> MessageOutcome<usize> {
    MessageOutcome {
        position: i,
        outcome: Outcome::Failed(Failure::new(
            code,
            format!("{code} happened to arn:aws:sqs:eu-west-1:123456789012:q"),
            retryable,
        )),
        attempts: 1,
    }
}

fn status(outcomes: &[MessageOutcome<usize>]) -> (u16, Option<String>) {
    let (s, e) = verdict(outcomes);
    (s.as_u16(), e.map(|e| e.code))
}

#[test]
fn the_status_rule() {
    assert_eq!(status(&[sent(0), sent(1)]), (202, None));
    let dropped = MessageOutcome {
        position: 1,
        outcome: Outcome::Dropped {
            reason: "big".into(),
        },
        attempts: 0,
    };
    assert_eq!(status(&[sent(0), dropped]), (202, None));
    assert_eq!(
        status(&[sent(0), failed(1, "RequestThrottled", true)]),
        (207, None)
    );
    assert_eq!(
        status(&[sent(0), failed(1, "InvalidMessageContents", false)]),
        (207, None)
    );
    assert_eq!(
        status(&[
            failed(0, "RequestThrottled", true),
            failed(1, "DeadlineExceeded", true)
        ]),
        (429, Some("Throttled".into()))
    );
    assert_eq!(
        status(&[
            failed(0, "DeadlineExceeded", true),
            failed(1, "GroupBlocked", true)
        ]),
        (503, Some("DeadlineExceeded".into()))
    );
    assert_eq!(
        status(&[failed(0, "InternalError", true)]),
        (503, Some("QueueUnavailable".into()))
    );
    assert_eq!(
        status(&[failed(0, "MessageTooLarge", false)]),
        (413, Some("MessageTooLarge".into()))
    );
    assert_eq!(
        status(&[
            failed(0, "InvalidMessageContents", false),
            failed(1, "InvalidAttributeValue", false)
        ]),
        (400, Some("InvalidMessage".into()))
    );
    assert_eq!(
        status(&[failed(0, "AccessDenied", false)]),
        (502, Some("QueueRefused".into()))
    );
    // Nothing sent, failures of different kinds: per-message results.
    assert_eq!(
        status(&[
            failed(0, "RequestThrottled", true),
            failed(1, "MessageTooLarge", false)
        ]),
        (207, None)
    );
}

#[test]
fn reports_list_every_message_and_hide_upstream_details() {
    let outcomes = [
        sent(0),
        failed(1, "AccessDenied", false),
        failed(2, "RequestThrottled", true),
    ];
    let (status, report, response) = from_outcomes(&outcomes, &[], Duration::from_secs(3));
    assert_eq!(status, StatusCode::MULTI_STATUS);
    assert_eq!(response.status(), StatusCode::MULTI_STATUS);
    assert!(response.headers().get(header::RETRY_AFTER).is_none());
    assert_eq!((report.sent, report.failed, report.dropped), (1, 2, 0));
    let Body::Text(text) = response.body() else {
        panic!("a text body");
    };
    let v: serde_json::Value = serde_json::from_str(text).expect("json");
    assert_eq!(v["results"][0]["index"], 0);
    assert_eq!(v["results"][0]["status"], "sent");
    assert_eq!(v["results"][0]["messageId"], "id-0");
    assert_eq!(v["results"][1]["error"]["code"], "AccessDenied");
    assert_eq!(v["results"][1]["error"]["retryable"], false);
    assert_eq!(v["results"][2]["error"]["retryable"], true);
    assert!(!text.contains("123456789012"), "no account ids: {text}");
    assert!(v.get("error").is_none());
}

#[test]
fn throttled_answers_carry_retry_after() {
    let (_, _, response) = from_outcomes(
        &[failed(0, "RequestThrottled", true)],
        &[],
        Duration::from_secs(7),
    );
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(response.headers()[header::RETRY_AFTER], "7");
    assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    let r = from_rejection(
        &Rejection::bad_request("InvalidJson", "the body is not valid JSON"),
        Duration::from_secs(7),
    );
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.headers().get(header::RETRY_AFTER).is_none());
    let Body::Text(text) = r.body() else {
        panic!("a text body");
    };
    let v: serde_json::Value = serde_json::from_str(text).expect("json");
    assert_eq!(
        v,
        serde_json::json!({"error": {"code": "InvalidJson", "message": "the body is not valid JSON"}})
    );
}

#[test]
fn messages_the_rules_skip_are_done_and_told_apart_from_drops() {
    let dropped = |i: usize, reason: &str| MessageOutcome {
        position: i,
        outcome: Outcome::Dropped {
            reason: reason.into(),
        },
        attempts: 0,
    };
    let outcomes = [
        dropped(0, "FilteredOut: a ROUTES filter condition did not hold"),
        sent(1),
        dropped(2, "the message is larger than the queue takes"),
        dropped(3, "Unmatched: no ROUTES route matched (unmatched: drop)"),
    ];
    let skips = [Some(Skip::FilteredOut), None, None, Some(Skip::Unmatched)];
    let (status, report, response) = from_outcomes(&outcomes, &skips, Duration::from_secs(1));
    assert_eq!(status, StatusCode::ACCEPTED, "skipped is done, not failed");
    assert_eq!(
        (report.sent, report.failed, report.dropped, report.skipped),
        (1, 0, 1, 2)
    );
    let Body::Text(text) = response.body() else {
        panic!("a text body");
    };
    let v: serde_json::Value = serde_json::from_str(text).expect("json");
    assert_eq!(v["skipped"], 2);
    assert_eq!(v["results"][0]["status"], "skipped");
    assert_eq!(v["results"][0]["reason"]["code"], "FilteredOut");
    assert!(v["results"][0].get("error").is_none());
    assert!(v["results"][0]["reason"].get("retryable").is_none());
    assert_eq!(v["results"][1]["status"], "sent");
    assert_eq!(v["results"][2]["status"], "dropped");
    assert_eq!(v["results"][2]["error"]["code"], "Dropped");
    assert_eq!(v["results"][3]["status"], "skipped");
    assert_eq!(v["results"][3]["reason"]["code"], "Unmatched");
    // Every message skipped: still done.
    let (status, report, _) = from_outcomes(&outcomes[..1], &skips[..1], Duration::from_secs(1));
    assert_eq!((status, report.skipped), (StatusCode::ACCEPTED, 1));
}
