//! Writing a message's parts as JSON, by hand, in the bytes serde_json
//! would write: the direct client's `SendMessageBatch` body
//! (`call::direct::wire::request`) and an aggregate's records
//! (`aggregate::write`) share it.
//!
//! A string that needs no JSON escaping (the common case: attribute names
//! and data types never do, being checked to `[A-Za-z0-9_.-]`) is copied as
//! it is; one that does is written by serde_json. Binary values are written
//! in base64 straight into the buffer.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::message::{Attribute, AttributeValue};

/// The keys of an attribute's object: the SQS API's or the Lambda event's.
pub(crate) struct AttributeKeys {
    /// What follows the name: `:{"DataType":` or `:{"dataType":`.
    pub data_type: &'static [u8],
    /// `,"StringValue":` or `,"stringValue":`.
    pub string_value: &'static [u8],
    /// `,"BinaryValue":"` or `,"binaryValue":"`.
    pub binary_value: &'static [u8],
}

/// The SQS API's keys (`SendMessageBatch`).
pub(crate) const API_KEYS: AttributeKeys = AttributeKeys {
    data_type: b":{\"DataType\":",
    string_value: b",\"StringValue\":",
    binary_value: b",\"BinaryValue\":\"",
};

/// The keys Lambda's SQS event gives `messageAttributes` (an aggregate's
/// records).
pub(crate) const EVENT_KEYS: AttributeKeys = AttributeKeys {
    data_type: b":{\"dataType\":",
    string_value: b",\"stringValue\":",
    binary_value: b",\"binaryValue\":\"",
};

/// `"name":{"DataType":…,"StringValue"|"BinaryValue":…}` with these keys.
pub(crate) fn attribute(
    out: &mut Vec<u8>,
    a: &Attribute,
    keys: &AttributeKeys,
) -> Result<(), String> {
    string(out, &a.name)?;
    out.extend_from_slice(keys.data_type);
    string(out, &a.data_type)?;
    match &a.value {
        AttributeValue::String(v) | AttributeValue::Number(v) => {
            out.extend_from_slice(keys.string_value);
            string(out, v)?;
        }
        // Base64 written straight into the buffer, no intermediate string.
        AttributeValue::Binary(b) => {
            out.extend_from_slice(keys.binary_value);
            let start = out.len();
            let len = base64::encoded_len(b.len(), true)
                .ok_or("a binary attribute too long to encode")?;
            out.resize(start + len, 0);
            let written = out
                .get_mut(start..)
                .and_then(|room| BASE64.encode_slice(b, room).ok())
                .ok_or("a binary attribute could not be encoded")?;
            out.truncate(start + written);
            out.push(b'"');
        }
    }
    out.push(b'}');
    Ok(())
}

/// `s` as a JSON string: copied as it is when nothing in it needs escaping
/// (a control character, `"` or `\\`), else written by serde_json.
pub(crate) fn string(out: &mut Vec<u8>, s: &str) -> Result<(), String> {
    if needs_escape(s.as_bytes()) {
        serde_json::to_writer(&mut *out, s).map_err(|e| e.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
