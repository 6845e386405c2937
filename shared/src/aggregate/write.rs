//! One record of an aggregate, written as the format says
//! ([`super`]): its body, attributes and deduplication id as JSON.

use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::message::AttributeValue;
use crate::message::encode::Entry;

/// What an aggregate's body starts with.
pub(crate) const OPEN: &str = "{\"v\":1,\"records\":[";
/// What it ends with.
pub(crate) const CLOSE: &str = "]}";

/// Append `entry` as one record of an aggregate to `out`.
pub(crate) fn record(out: &mut String, entry: &Entry) {
    out.push_str("{\"body\":");
    string(out, &entry.body);
    if !entry.attributes.is_empty() {
        out.push_str(",\"attributes\":{");
        for (i, a) in entry.attributes.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            string(out, &a.name);
            out.push_str(":{\"dataType\":");
            string(out, &a.data_type);
            match &a.value {
                AttributeValue::String(s) | AttributeValue::Number(s) => {
                    out.push_str(",\"stringValue\":");
                    string(out, s);
                }
                AttributeValue::Binary(b) => {
                    out.push_str(",\"binaryValue\":\"");
                    BASE64.encode_string(b, out);
                    out.push('"');
                }
            }
            out.push('}');
        }
        out.push('}');
    }
    if let Some(id) = &entry.deduplication_id {
        out.push_str(",\"deduplicationId\":");
        string(out, id);
    }
    out.push('}');
}

/// `s` as a JSON string. Control characters are escaped, so the result is
/// text SQS accepts whenever `s` is (an entry's body and attributes are).
fn string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut plain = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[plain..i]);
        if escape.is_empty() {
            // Cannot fail: writing to a String.
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escape);
        }
        plain = i + 1;
    }
    out.push_str(&s[plain..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Attribute;

    fn entry(body: &str, attributes: Vec<Attribute>, dedup: Option<&str>) -> Entry {
        Entry {
            body: body.into(),
            attributes,
            group_id: None,
            deduplication_id: dedup.map(str::to_owned),
            delay_seconds: None,
            encoded: false,
            size: 0,
        }
    }

    #[test]
    fn a_record_reads_back_as_json_with_every_part() {
        let mut out = String::new();
        let e = entry(
            "say \"hi\"\\\n\t\u{1}é𝄞",
            vec![
                Attribute::string("a", "x\"y"),
                Attribute::number("n", 42).with_data_type("Number.int"),
                Attribute::binary("b", vec![0u8, 255, 7]),
            ],
            Some("d-1"),
        );
        record(&mut out, &e);
        let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(v["body"], "say \"hi\"\\\n\t\u{1}é𝄞");
        assert_eq!(v["attributes"]["a"]["dataType"], "String");
        assert_eq!(v["attributes"]["a"]["stringValue"], "x\"y");
        assert_eq!(v["attributes"]["n"]["dataType"], "Number.int");
        assert_eq!(v["attributes"]["n"]["stringValue"], "42");
        assert_eq!(v["attributes"]["b"]["binaryValue"], "AP8H");
        assert_eq!(v["deduplicationId"], "d-1");
        assert!(out.contains("\\u0001"), "{out}");
        assert!(crate::message::encode::is_sqs_text(&out));
    }

    #[test]
    fn a_bare_record_has_only_its_body() {
        let mut out = String::new();
        record(&mut out, &entry("{\"k\":1}", Vec::new(), None));
        assert_eq!(out, r#"{"body":"{\"k\":1}"}"#);
    }
}
