//! The `SendMessageBatch` request body, written by hand in the bytes
//! serde_json would write ([`crate::message::json`]).

use crate::call::transport::BatchItem;
use crate::message::json;
use crate::send::codes;
use crate::send::outcome::Failure;

/// The request body for `items` to `queue_url`, in one buffer sized from the
/// entries' SQS sizes (JSON escaping and base64 may grow it).
///
/// Written by hand, not through serde: the keys are constants, and each
/// string is copied in runs between the bytes JSON escapes
/// ([`json::string`]). The same bytes serde_json would write, key order included (the SDK's: `Id`, `MessageBody`,
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
    json::string(&mut out, queue_url);
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
    json::string(out, &item.id);
    out.extend_from_slice(b",\"MessageBody\":");
    json::string(out, &e.body);
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
            json::attribute(out, a, &json::API_KEYS).map_err(|e| construction(&e))?;
        }
        out.push(b'}');
    }
    if let Some(id) = &e.deduplication_id {
        out.extend_from_slice(b",\"MessageDeduplicationId\":");
        json::string(out, id);
    }
    if let Some(id) = &e.group_id {
        out.extend_from_slice(b",\"MessageGroupId\":");
        json::string(out, id);
    }
    out.push(b'}');
    Ok(())
}

fn construction(what: &str) -> Failure {
    Failure::permanent(codes::REQUEST_CONSTRUCTION_FAILED, what)
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::sync::Arc;

    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD as BASE64;

    use super::*;
    use crate::message::encode::Entry;
    use crate::message::{Attribute, AttributeValue};

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
}
