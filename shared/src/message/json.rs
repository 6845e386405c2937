//! Writing a message's parts as JSON, by hand, in the bytes serde_json
//! would write: the direct client's `SendMessageBatch` body
//! (`call::direct::wire::request`) and an aggregate's records
//! (`aggregate::write`) share it.
//!
//! A string is copied as it is between the bytes JSON escapes, found by a
//! vectorised scan; those are escaped as serde_json escapes them (attribute
//! names and data types never hold one, being checked to `[A-Za-z0-9_.-]`).
//! Binary values are written in base64 straight into the buffer.

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
    string(out, &a.name);
    out.extend_from_slice(keys.data_type);
    string(out, &a.data_type);
    match &a.value {
        AttributeValue::String(v) | AttributeValue::Number(v) => {
            out.extend_from_slice(keys.string_value);
            string(out, v);
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

/// `s` as a JSON string, in the bytes serde_json writes: the runs between
/// the bytes JSON escapes copied as they are, each such byte escaped as
/// serde_json escapes it (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, else
/// `\u00XX` in lower-case hex). The runs are found by the vectorised scan
/// of [`crate::message::byte_scan`], so a 55 KB JSON record with a few
/// quotes costs a scan and a copy, not a byte-by-byte escape.
pub(crate) fn string(out: &mut Vec<u8>, s: &str) {
    use crate::message::byte_scan::{JsonEscaped, find};
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(s.len() + 2);
    out.push(b'"');
    let mut rest = s.as_bytes();
    while let Some(i) = find::<JsonEscaped>(rest) {
        let (run, from) = rest.split_at(i);
        out.extend_from_slice(run);
        let Some((&b, after)) = from.split_first() else {
            break;
        };
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xF)],
            ]),
        }
        rest = after;
    }
    out.extend_from_slice(rest);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The bytes serde_json writes, whatever the string holds and
        /// wherever the escaped bytes fall in the scan's blocks.
        #[test]
        fn the_bytes_serde_json_writes(
            s in "[\\x00-\\x1f\"\\\\a-z\u{7f}\u{e9}\u{2028}\u{FFFF}]{0,80}|\\PC{0,80}|[a-z]{30,70}[\"\\x01]",
        ) {
            let mut out = Vec::new();
            string(&mut out, &s);
            proptest::prop_assert_eq!(out, serde_json::to_vec(&s).expect("json"));
        }
    }

    #[test]
    fn every_escape_at_every_offset_of_a_block() {
        for b in 0u8..0x80 {
            let c = char::from(b).to_string();
            for at in [0, 1, 31, 32, 33, 63, 64, 70] {
                let s = format!("{}{c}{}", "a".repeat(at), "é".repeat(20));
                let mut out = Vec::new();
                string(&mut out, &s);
                assert_eq!(out, serde_json::to_vec(&s).expect("json"), "{b} at {at}");
            }
        }
    }
}
