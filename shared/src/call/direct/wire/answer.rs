//! The answer to a `SendMessageBatch` call that succeeded (2xx): its
//! `Successful` and `Failed` entries, keyed by id.

use serde::Deserialize;

use crate::call::transport::{CallError, EntryResult};
use crate::send::codes;
use crate::send::outcome::Failure;

/// Either list may be absent or `null` (as the SDK reads them: no entries).
#[derive(Deserialize)]
struct Answer {
    #[serde(rename = "Successful", default)]
    successful: Option<Vec<Successful>>,
    #[serde(rename = "Failed", default)]
    failed: Option<Vec<Failed>>,
}

#[derive(Deserialize)]
struct Successful {
    #[serde(rename = "Id")]
    id: String,
    #[serde(rename = "MessageId")]
    message_id: String,
    #[serde(rename = "SequenceNumber", default)]
    sequence_number: Option<String>,
}

#[derive(Deserialize)]
struct Failed {
    #[serde(rename = "Id")]
    id: String,
    #[serde(rename = "Code")]
    code: String,
    #[serde(rename = "Message", default)]
    message: Option<String>,
    #[serde(rename = "SenderFault", default)]
    sender_fault: bool,
}

/// The entries of a successful (2xx) answer, keyed by id. An answer that is
/// not the expected JSON is a transient `ResponseError`, as the SDK's
/// `ResponseError` is.
pub fn parse_answer(body: &[u8]) -> Result<Vec<(String, EntryResult)>, CallError> {
    let answer: Answer = serde_json::from_slice(body).map_err(|_| {
        CallError::Failed(Failure::transient(
            codes::RESPONSE_ERROR,
            "the SendMessageBatch response could not be read",
        ))
    })?;
    let successful = answer.successful.unwrap_or_default();
    let failed = answer.failed.unwrap_or_default();
    let mut out = Vec::with_capacity(successful.len() + failed.len());
    for s in successful {
        out.push((
            s.id,
            EntryResult::Sent {
                message_id: s.message_id,
                sequence_number: s.sequence_number,
            },
        ));
    }
    for f in failed {
        out.push((
            f.id,
            EntryResult::Failed {
                code: f.code,
                message: f.message.unwrap_or_default(),
                sender_fault: f.sender_fault,
            },
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_with_a_partial_failure() {
        let body = br#"{"Successful":[{"Id":"0","MessageId":"8c1b5c6e-0d8c-4b9e-9d55-8f1d3a8e2f10","MD5OfMessageBody":"5d41402abc4b2a76b9719d911017c592","MD5OfMessageAttributes":"x"},{"Id":"2","MessageId":"m2","MD5OfMessageBody":"y","SequenceNumber":"18887"}],"Failed":[{"Id":"1","SenderFault":false,"Code":"InternalError","Message":"try again"},{"Id":"3","SenderFault":true,"Code":"InvalidParameterValue"}]}"#;
        let got = parse_answer(body).expect("answer");
        assert_eq!(
            got,
            vec![
                (
                    "0".into(),
                    EntryResult::Sent {
                        message_id: "8c1b5c6e-0d8c-4b9e-9d55-8f1d3a8e2f10".into(),
                        sequence_number: None
                    }
                ),
                (
                    "2".into(),
                    EntryResult::Sent {
                        message_id: "m2".into(),
                        sequence_number: Some("18887".into())
                    }
                ),
                (
                    "1".into(),
                    EntryResult::Failed {
                        code: "InternalError".into(),
                        message: "try again".into(),
                        sender_fault: false
                    }
                ),
                (
                    "3".into(),
                    EntryResult::Failed {
                        code: "InvalidParameterValue".into(),
                        message: String::new(),
                        sender_fault: true
                    }
                ),
            ]
        );
        // Either list may be missing; unknown fields are ignored.
        assert_eq!(parse_answer(br#"{"Failed":[]}"#), Ok(vec![]));
        assert_eq!(parse_answer(br#"{"Other":1}"#), Ok(vec![]));
        // Or null, as the SDK reads a null list: no entries, not a
        // malformed answer (which would retry the whole batch).
        let sent = |id: &str| {
            (
                id.to_owned(),
                EntryResult::Sent {
                    message_id: format!("m{id}"),
                    sequence_number: None,
                },
            )
        };
        assert_eq!(
            parse_answer(br#"{"Successful":[{"Id":"0","MessageId":"m0"}],"Failed":null}"#),
            Ok(vec![sent("0")])
        );
        assert_eq!(
            parse_answer(br#"{"Successful":null,"Failed":null}"#),
            Ok(vec![])
        );
        assert_eq!(
            parse_answer(
                br#"{"Successful":null,"Failed":[{"Id":"1","Code":"InternalError","SenderFault":false}]}"#
            ),
            Ok(vec![(
                "1".to_owned(),
                EntryResult::Failed {
                    code: "InternalError".into(),
                    message: String::new(),
                    sender_fault: false
                }
            )])
        );
    }

    #[test]
    fn unreadable_answers_are_transient_response_errors() {
        for body in [
            &b""[..],
            b"<html>",
            b"{\"Successful\":[{\"Id\":1}]}",
            b"[1]",
            b"\xff\xfe",
        ] {
            match parse_answer(body) {
                Err(CallError::Failed(f)) => {
                    assert_eq!(f.code, "ResponseError");
                    assert!(f.retryable);
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
