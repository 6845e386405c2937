//! One record of an aggregate, written as the format says
//! ([`super`]): its body, attributes and deduplication id as JSON, in the
//! writer the direct client's request body uses ([`crate::message::json`]).

use crate::message::encode::Entry;
use crate::message::json::{self, EVENT_KEYS};

/// What an aggregate's body starts with.
pub(crate) const OPEN: &str = "{\"v\":1,\"records\":[";
/// What it ends with.
pub(crate) const CLOSE: &str = "]}";

/// Append `entry` as one record of an aggregate to `out`. Control
/// characters are escaped, so the record is text SQS accepts whenever the
/// entry's body and attributes are (an entry's always are).
pub(crate) fn record(out: &mut Vec<u8>, entry: &Entry) -> Result<(), String> {
    out.extend_from_slice(b"{\"body\":");
    json::string(out, &entry.body);
    if !entry.attributes.is_empty() {
        out.extend_from_slice(b",\"attributes\":{");
        for (i, a) in entry.attributes.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json::attribute(out, a, &EVENT_KEYS)?;
        }
        out.push(b'}');
    }
    if let Some(id) = &entry.deduplication_id {
        out.extend_from_slice(b",\"deduplicationId\":");
        json::string(out, id);
    }
    out.push(b'}');
    Ok(())
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

    fn written(e: &Entry) -> String {
        let mut out = Vec::new();
        record(&mut out, e).expect("written");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn a_record_reads_back_as_json_with_every_part() {
        let e = entry(
            "say \"hi\"\\\n\t\u{1}é𝄞",
            vec![
                Attribute::string("a", "x\"y"),
                Attribute::number("n", 42).with_data_type("Number.int"),
                Attribute::binary("b", vec![0u8, 255, 7]),
            ],
            Some("d-1"),
        );
        let out = written(&e);
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
        let out = written(&entry("{\"k\":1}", Vec::new(), None));
        assert_eq!(out, r#"{"body":"{\"k\":1}"}"#);
    }
}
