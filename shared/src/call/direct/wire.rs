//! `SendMessageBatch` on the wire, AWS JSON 1.0: the request body, the
//! answer and the error answer, mapped to [`EntryResult`]s and
//! [`CallError`]s exactly as [`crate::call::sdk::classify_sdk_error`] maps
//! the SDK's.
//!
//! Pure functions, no I/O: every answer shape is unit-tested below. Nothing
//! here panics on what the network sends.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Deserialize;

use crate::call::transport::{BatchItem, CallError, EntryResult};
use crate::message::{Attribute, AttributeValue};
use crate::send::codes;
use crate::send::outcome::Failure;
use crate::send::retry::{bare_code, call_retryable};

/// `X-Amz-Target` of the call.
pub const TARGET: &str = "AmazonSQS.SendMessageBatch";
/// `Content-Type` of AWS JSON 1.0.
pub const CONTENT_TYPE: &str = "application/x-amz-json-1.0";
/// The header of SQS's query-compatible error code (`Code;Sender`).
pub const QUERY_ERROR_HEADER: &str = "x-amzn-query-error";

/// The request body for `items` to `queue_url`, in one buffer sized from the
/// entries' SQS sizes (JSON escaping and base64 may grow it).
///
/// Written by hand, not through serde: the keys are constants, and a string
/// that needs no JSON escaping (the common case: attribute names and data
/// types never do, being checked to `[A-Za-z0-9_.-]`) is copied as it is;
/// one that does is written by serde_json. The same bytes serde_json would
/// write, key order included (the SDK's: `Id`, `MessageBody`,
/// `DelaySeconds`, `MessageAttributes`, `MessageDeduplicationId`,
/// `MessageGroupId`), checked by the tests below.
pub fn request_body(queue_url: &str, items: &[BatchItem]) -> Result<Vec<u8>, Failure> {
    let estimate = queue_url.len()
        + 32
        + items
            .iter()
            .map(|i| i.entry.size + 64 * (1 + i.entry.attributes.len()) + i.id.len())
            .sum::<usize>();
    let mut out = Vec::with_capacity(estimate);
    out.extend_from_slice(b"{\"QueueUrl\":");
    json_str(&mut out, queue_url)?;
    out.extend_from_slice(b",\"Entries\":[");
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        entry(&mut out, item)?;
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

fn entry(out: &mut Vec<u8>, item: &BatchItem) -> Result<(), Failure> {
    let e = &item.entry;
    out.extend_from_slice(b"{\"Id\":");
    json_str(out, &item.id)?;
    out.extend_from_slice(b",\"MessageBody\":");
    json_str(out, &e.body)?;
    if let Some(d) = e.delay_seconds {
        out.extend_from_slice(b",\"DelaySeconds\":");
        out.extend_from_slice(d.to_string().as_bytes());
    }
    if !e.attributes.is_empty() {
        out.extend_from_slice(b",\"MessageAttributes\":{");
        for (n, a) in e.attributes.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            attribute(out, a)?;
        }
        out.push(b'}');
    }
    if let Some(id) = &e.deduplication_id {
        out.extend_from_slice(b",\"MessageDeduplicationId\":");
        json_str(out, id)?;
    }
    if let Some(id) = &e.group_id {
        out.extend_from_slice(b",\"MessageGroupId\":");
        json_str(out, id)?;
    }
    out.push(b'}');
    Ok(())
}

fn attribute(out: &mut Vec<u8>, a: &Attribute) -> Result<(), Failure> {
    json_str(out, &a.name)?;
    out.extend_from_slice(b":{\"DataType\":");
    json_str(out, &a.data_type)?;
    match &a.value {
        AttributeValue::String(v) | AttributeValue::Number(v) => {
            out.extend_from_slice(b",\"StringValue\":");
            json_str(out, v)?;
        }
        // Base64 written straight into the body, no intermediate string.
        AttributeValue::Binary(b) => {
            out.extend_from_slice(b",\"BinaryValue\":\"");
            let start = out.len();
            let len = base64::encoded_len(b.len(), true)
                .ok_or_else(|| construction("a binary attribute too long to encode"))?;
            out.resize(start + len, 0);
            let written = out
                .get_mut(start..)
                .and_then(|room| BASE64.encode_slice(b, room).ok())
                .ok_or_else(|| construction("a binary attribute could not be encoded"))?;
            out.truncate(start + written);
            out.push(b'"');
        }
    }
    out.push(b'}');
    Ok(())
}

/// `s` as a JSON string: copied as it is when nothing in it needs escaping
/// (a control character, `"` or `\\`), else written by serde_json.
fn json_str(out: &mut Vec<u8>, s: &str) -> Result<(), Failure> {
    if needs_escape(s.as_bytes()) {
        serde_json::to_writer(&mut *out, s).map_err(|e| construction(&e.to_string()))
    } else {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        Ok(())
    }
}

/// Whether `bytes` hold a byte JSON escapes (below 0x20, `"` or `\\`),
/// tested eight bytes at a time.
fn needs_escape(bytes: &[u8]) -> bool {
    let start = crate::message::byte_scan::clean_words(bytes, 0x20, b"\"\\");
    bytes[start..]
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

fn construction(what: &str) -> Failure {
    Failure::permanent(codes::REQUEST_CONSTRUCTION_FAILED, what)
}

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

/// `code` and `message` of an AWS JSON error body, as the SDK reads them:
/// `code`, else `__type`; `message`, `Message` or `errorMessage`. Anything
/// that is not a JSON object gives neither.
fn error_body(body: &[u8]) -> (Option<String>, Option<String>) {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(body)
    else {
        return (None, None);
    };
    let text = |k: &str| map.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    let code = text("code").or_else(|| text("__type"));
    let message = text("message")
        .or_else(|| text("Message"))
        .or_else(|| text("errorMessage"));
    (code, message)
}

/// An error code without a trailing `:<url>` and a leading `<namespace>#`,
/// as the SDK's `sanitize_error_code` leaves it.
pub fn sanitize_error_code(code: &str) -> &str {
    let code = code.split_once(':').map_or(code, |(c, _)| c);
    code.split_once('#').map_or(code, |(_, c)| c)
}

/// The whole-call error of a non-2xx answer, as
/// [`crate::call::sdk::classify_sdk_error`] classifies the SDK's: the code
/// is the query-compatible one (`x-amzn-query-error`) when SQS sends it,
/// else `x-amzn-errortype`, else the body's (sanitized); no code at all
/// (a non-JSON 5xx from a proxy) is `UnknownError`, retryable by its
/// status. `BatchRequestTooLong`, in either spelling, is
/// [`CallError::TooLong`].
pub fn call_error(
    status: u16,
    query_error: Option<&str>,
    error_type: Option<&str>,
    body: &[u8],
) -> CallError {
    call_error_of("SendMessageBatch", status, query_error, error_type, body)
}

/// [`call_error`] for a call to `operation` (its name in the message made
/// up for an error answer without one).
pub fn call_error_of(
    operation: &str,
    status: u16,
    query_error: Option<&str>,
    error_type: Option<&str>,
    body: &[u8],
) -> CallError {
    let (body_code, message) = error_body(body);
    let query_code = query_error.and_then(|h| h.split_once(';').map(|(c, _)| c));
    let code: Option<String> = match query_code {
        Some(c) => Some(c.to_owned()),
        None => error_type
            .or(body_code.as_deref())
            .map(|c| sanitize_error_code(c).to_owned()),
    };
    let message = message.unwrap_or_default();
    if code
        .as_deref()
        .is_some_and(|c| bare_code(c) == "BatchRequestTooLong")
    {
        return CallError::TooLong(message);
    }
    let code = code.unwrap_or_else(|| codes::UNKNOWN_ERROR.to_owned());
    let message = if message.is_empty() {
        format!("{operation} failed with HTTP {status}")
    } else {
        message
    };
    let retryable = call_retryable(Some(&code), Some(status));
    CallError::Failed(Failure::new(code, message, retryable))
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::sync::Arc;

    use super::*;
    use crate::message::encode::Entry;

    fn item(id: &str, body: &str, attributes: Vec<Attribute>) -> BatchItem {
        BatchItem {
            id: id.into(),
            entry: Arc::new(Entry {
                body: body.into(),
                attributes,
                group_id: None,
                deduplication_id: None,
                delay_seconds: None,
                encoded: false,
                size: body.len(),
            }),
        }
    }

    #[test]
    fn request_body_shape() {
        let mut fifo = item("1", "b\"\u{7}é", vec![]);
        if let Some(e) = Arc::get_mut(&mut fifo.entry) {
            e.group_id = Some("g".into());
            e.deduplication_id = Some("d".into());
        }
        let mut delayed = item("2", "x", vec![]);
        if let Some(e) = Arc::get_mut(&mut delayed.entry) {
            e.delay_seconds = Some(5);
        }
        let items = vec![
            item(
                "0",
                "hello",
                vec![
                    Attribute::string("s", "v"),
                    Attribute {
                        name: Cow::Borrowed("n"),
                        data_type: Cow::Borrowed("Number.int"),
                        value: AttributeValue::Number("42".into()),
                    },
                    Attribute::binary("b", vec![0, 1, 2, 0xff]),
                ],
            ),
            fifo,
            delayed,
        ];
        let body = request_body("http://127.0.0.1:4566/000000000000/q", &items).expect("body");
        let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(
            v,
            serde_json::json!({
                "QueueUrl": "http://127.0.0.1:4566/000000000000/q",
                "Entries": [
                    {"Id": "0", "MessageBody": "hello", "MessageAttributes": {
                        "s": {"DataType": "String", "StringValue": "v"},
                        "n": {"DataType": "Number.int", "StringValue": "42"},
                        "b": {"DataType": "Binary", "BinaryValue": "AAEC/w=="},
                    }},
                    {"Id": "1", "MessageBody": "b\"\u{7}é",
                     "MessageDeduplicationId": "d", "MessageGroupId": "g"},
                    {"Id": "2", "MessageBody": "x", "DelaySeconds": 5},
                ]
            })
        );
        // The same bytes the SDK would write for the first entry, key order
        // included (the SDK writes Id, MessageBody, DelaySeconds,
        // MessageAttributes, ..., MessageDeduplicationId, MessageGroupId).
        let text = std::str::from_utf8(&body).expect("utf-8");
        assert!(text.starts_with(r#"{"QueueUrl":"http://127.0.0.1:4566/000000000000/q","Entries":[{"Id":"0","MessageBody":"hello","MessageAttributes":{"s":{"DataType":"String","StringValue":"v"}"#), "{text}");
    }

    proptest::proptest! {
        /// Whatever the strings hold, the body is JSON that reads back as
        /// the entries, and its bytes are serde_json's for each string.
        #[test]
        fn any_strings_read_back(
            body in "\\PC{0,30}|[\\x00-\\x1f\"\\\\a-z\u{7f}\u{e9}\u{2028}]{1,30}",
            value in "[\\x00-\\x1f\"\\\\a-z\u{e9}]{1,20}",
            binary in proptest::collection::vec(proptest::num::u8::ANY, 1..40),
            group in proptest::option::of("[!-~]{1,10}"),
        ) {
            let mut it = item("i-0", &body, vec![
                Attribute::string("s", value.clone()),
                Attribute::binary("b", binary.clone()),
            ]);
            if let Some(e) = Arc::get_mut(&mut it.entry) {
                e.group_id = group.clone();
            }
            let out = request_body("http://h/q\"", std::slice::from_ref(&it)).expect("body");
            let v: serde_json::Value = serde_json::from_slice(&out).expect("json");
            let e = &v["Entries"][0];
            proptest::prop_assert_eq!(v["QueueUrl"].as_str(), Some("http://h/q\""));
            proptest::prop_assert_eq!(e["MessageBody"].as_str(), Some(body.as_str()));
            proptest::prop_assert_eq!(e["MessageAttributes"]["s"]["StringValue"].as_str(), Some(value.as_str()));
            let b64 = BASE64.encode(&binary);
            proptest::prop_assert_eq!(e["MessageAttributes"]["b"]["BinaryValue"].as_str(), Some(b64.as_str()));
            proptest::prop_assert_eq!(e["MessageGroupId"].as_str(), group.as_deref());
            let text = std::str::from_utf8(&out).expect("utf-8");
            let body_json = serde_json::to_string(&body).expect("json");
            let needle = format!("\"MessageBody\":{body_json}");
            proptest::prop_assert!(text.contains(&needle), "{}", text);
        }
    }

    #[test]
    fn escapes_are_found_at_every_offset_of_a_word() {
        for bad in ["\u{0}", "\u{1f}", "\"", "\\"] {
            for at in 0..20 {
                let s = format!("{}{bad}{}", "a".repeat(at), "é".repeat(10 - at / 2));
                assert!(needs_escape(s.as_bytes()), "{s:?}");
            }
        }
        for good in ["", "plain text, 8+ bytes long", "é\u{7f}\u{2028}~ !#[]"] {
            assert!(!needs_escape(good.as_bytes()), "{good:?}");
        }
    }

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

    fn failed(e: CallError) -> Failure {
        match e {
            CallError::Failed(f) => f,
            CallError::TooLong(m) => panic!("TooLong({m})"),
        }
    }

    #[test]
    fn throttling_is_retryable() {
        // What SQS answers (JSON protocol, query-compatible header).
        let f = failed(call_error(
            400,
            Some("AWS.SimpleQueueService.RequestThrottled;Sender"),
            None,
            br#"{"__type":"com.amazonaws.sqs#RequestThrottled","message":"Rate exceeded"}"#,
        ));
        assert_eq!(f.code, "AWS.SimpleQueueService.RequestThrottled");
        assert_eq!(f.message, "Rate exceeded");
        assert!(f.retryable);
        // Without the header: the sanitized __type.
        let f = failed(call_error(
            400,
            None,
            None,
            br#"{"__type":"com.amazon.coral.availability#ThrottlingException:http://internal.amazon.com/","message":"slow down"}"#,
        ));
        assert_eq!(f.code, "ThrottlingException");
        assert!(f.retryable);
    }

    #[test]
    fn batch_request_too_long_splits() {
        assert_eq!(
            call_error(
                400,
                Some("AWS.SimpleQueueService.BatchRequestTooLong;Sender"),
                None,
                br#"{"__type":"com.amazonaws.sqs#BatchRequestTooLong","message":"Batch requests cannot be longer than 1048576 bytes."}"#,
            ),
            CallError::TooLong("Batch requests cannot be longer than 1048576 bytes.".into())
        );
        assert_eq!(
            call_error(
                400,
                None,
                None,
                br#"{"__type":"com.amazonaws.sqs#BatchRequestTooLong"}"#
            ),
            CallError::TooLong(String::new())
        );
    }

    #[test]
    fn permanent_errors_and_non_json_answers() {
        let f = failed(call_error(
            400,
            Some("AWS.SimpleQueueService.NonExistentQueue;Sender"),
            None,
            br#"{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}"#,
        ));
        assert_eq!(f.code, "AWS.SimpleQueueService.NonExistentQueue");
        assert!(!f.retryable);
        let f = failed(call_error(
            403,
            None,
            Some("AccessDeniedException:http://x"),
            br#"{"Message":"User is not authorized"}"#,
        ));
        assert_eq!(f.code, "AccessDeniedException");
        assert_eq!(f.message, "User is not authorized");
        assert!(!f.retryable);
        let f = failed(call_error(
            400,
            None,
            None,
            br#"{"__type":"com.amazonaws.sqs#KmsDisabled","message":"k"}"#,
        ));
        assert_eq!(f.code, "KmsDisabled");
        assert!(!f.retryable);
        // A load balancer's HTML 503: no code, retried by its status.
        let f = failed(call_error(
            503,
            None,
            None,
            b"<html><body>Service Unavailable</body></html>",
        ));
        assert_eq!(f.code, "UnknownError");
        assert_eq!(f.message, "SendMessageBatch failed with HTTP 503");
        assert!(f.retryable);
        let f = failed(call_error(400, None, None, b""));
        assert_eq!(f.code, "UnknownError");
        assert!(!f.retryable);
        // A malformed header is ignored, the body's code used.
        let f = failed(call_error(
            500,
            Some("garbage"),
            None,
            br#"{"__type":"InternalError"}"#,
        ));
        assert_eq!(f.code, "InternalError");
        assert!(f.retryable);
    }

    #[test]
    fn codes_are_sanitized_like_the_sdk() {
        assert_eq!(
            sanitize_error_code("aws.protocoltests#FooError"),
            "FooError"
        );
        assert_eq!(
            sanitize_error_code("FooError:http://internal.amazon.com/coral/"),
            "FooError"
        );
        assert_eq!(
            sanitize_error_code("aws.protocoltests.restjson#FooError:http://x/"),
            "FooError"
        );
        assert_eq!(sanitize_error_code("FooError"), "FooError");
    }
}
