//! Validation and encoding: from a [`Message`] to an [`Entry`] that SQS accepts.
//!
//! SQS accepts in bodies and `String` attribute values only the characters
//! `#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF`, and
//! rejects anything else with `InvalidMessageContents`. Valid text is sent
//! untouched. Bytes that are not such text, and text that is not, are handled
//! by the [`BodyEncoding`] policy: by default they are base64-encoded and the
//! message gets a marker attribute (`sqs-forwarder.encoding: base64`) so
//! consumers know to decode.
//!
//! Everything else SQS would reject for the message alone (attribute names,
//! types and values, group and deduplication ids, delays) is checked here too,
//! so such a message fails at once with a clear reason instead of costing a
//! call.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::message::limits::{MAX_ATTRIBUTES, MAX_DELAY_SECONDS, MAX_ID_CHARS, message_size};
use crate::message::{Attribute, AttributeValue, Body, Message};
use crate::send::outcome::Failure;

/// What to do with a body SQS would not accept as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BodyEncoding {
    /// Send valid text untouched; base64-encode anything else and mark it.
    #[default]
    Auto,
    /// Base64-encode every body and mark it (consumers always decode).
    Always,
    /// Never encode: a body SQS would reject fails with
    /// `InvalidMessageContents`.
    Never,
}

/// The value of the marker attribute on an encoded body.
pub const ENCODING_MARKER_VALUE: &str = "base64";
/// The default name of the marker attribute.
pub const DEFAULT_ENCODING_ATTRIBUTE: &str = "sqs-forwarder.encoding";

/// How the encoder treats bodies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeRules {
    /// The body policy.
    pub body_encoding: BodyEncoding,
    /// Name of the marker attribute added to encoded bodies.
    pub marker_attribute: String,
    /// Whether the target is a FIFO queue (no per-message delay there).
    pub fifo: bool,
    /// Group id used when a message has none (required on FIFO queues).
    pub default_group_id: Option<String>,
    /// Whether the FIFO queue deduplicates by content; `Some(false)` means a
    /// message without a deduplication id would be rejected.
    pub content_based_deduplication: Option<bool>,
}

impl Default for EncodeRules {
    fn default() -> Self {
        EncodeRules {
            body_encoding: BodyEncoding::Auto,
            marker_attribute: DEFAULT_ENCODING_ATTRIBUTE.into(),
            fifo: false,
            default_group_id: None,
            content_based_deduplication: None,
        }
    }
}

/// A message as it will be sent: valid, encoded, and sized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The body, valid SQS text.
    pub body: String,
    /// Validated attributes, the encoding marker included.
    pub attributes: Vec<Attribute>,
    /// Message group id.
    pub group_id: Option<String>,
    /// Deduplication id.
    pub deduplication_id: Option<String>,
    /// Delay in seconds.
    pub delay_seconds: Option<i32>,
    /// Whether the body was base64-encoded.
    pub encoded: bool,
    /// The size SQS counts for this entry.
    pub size: usize,
}

/// Whether SQS accepts this character in a body or `String` attribute value.
pub fn is_sqs_char(c: char) -> bool {
    matches!(c, '\u{9}' | '\u{A}' | '\u{D}' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

/// Whether SQS accepts this text as a body or `String` attribute value: the
/// same answer as `s.chars().all(is_sqs_char)`, read a word at a time.
///
/// In valid UTF-8 the characters SQS refuses are the control characters
/// below U+0020 other than tab, line feed and carriage return (one byte
/// each), and U+FFFE and U+FFFF (`EF BF BE`, `EF BF BF`; `EF` is only ever
/// a lead byte); surrogates cannot occur. So eight bytes at a time are
/// tested for a byte below `0x20` or an `0xEF`, and only from the first
/// word that has one is the text read byte by byte.
pub fn is_sqs_text(s: &str) -> bool {
    let bytes = s.as_bytes();
    let start = crate::message::byte_scan::clean_words(bytes, 0x20, &[0xEF]);
    let rest = &bytes[start..];
    rest.iter().enumerate().all(|(i, &b)| match b {
        b'\t' | b'\n' | b'\r' => true,
        0..0x20 => false,
        0xEF => !(rest.get(i + 1) == Some(&0xBF) && matches!(rest.get(i + 2), Some(0xBE | 0xBF))),
        _ => true,
    })
}

fn invalid(code: &str, message: impl Into<String>) -> Failure {
    Failure::permanent(code, message)
}

/// Turn a message into an entry, or say why SQS would never accept it.
///
/// The size is not checked against limits here: that is the job of the
/// oversize policy, which knows the queue.
pub fn prepare<P>(message: Message<P>, rules: &EncodeRules) -> (P, Result<Entry, Failure>) {
    let Message {
        body,
        attributes,
        group_id,
        deduplication_id,
        delay_seconds,
        position,
    } = message;
    (
        position,
        prepare_parts(
            body,
            attributes,
            group_id,
            deduplication_id,
            delay_seconds,
            rules,
        ),
    )
}

fn prepare_parts(
    body: Body,
    mut attributes: Vec<Attribute>,
    group_id: Option<String>,
    deduplication_id: Option<String>,
    delay_seconds: Option<i32>,
    rules: &EncodeRules,
) -> Result<Entry, Failure> {
    if body.is_empty() {
        return Err(invalid(
            crate::send::codes::EMPTY_BODY,
            "SQS does not accept an empty message body",
        ));
    }
    for a in &attributes {
        check_attribute(a)?;
    }
    for (i, a) in attributes.iter().enumerate() {
        if attributes[..i].iter().any(|b| b.name == a.name) {
            return Err(invalid(
                crate::send::codes::INVALID_ATTRIBUTE_NAME,
                format!("attribute {:?} appears more than once", a.name),
            ));
        }
    }

    let (body, encoded) = encode_body(body, rules.body_encoding)?;
    if encoded {
        if attributes.iter().any(|a| a.name == rules.marker_attribute) {
            return Err(invalid(
                crate::send::codes::INVALID_ATTRIBUTE_NAME,
                format!(
                    "attribute {:?} is reserved for the body-encoding marker",
                    rules.marker_attribute
                ),
            ));
        }
        attributes.push(Attribute::string(
            rules.marker_attribute.clone(),
            ENCODING_MARKER_VALUE,
        ));
    }
    if attributes.len() > MAX_ATTRIBUTES {
        return Err(invalid(
            crate::send::codes::TOO_MANY_ATTRIBUTES,
            format!(
                "{} attributes{}; SQS allows at most {MAX_ATTRIBUTES}",
                attributes.len(),
                if encoded {
                    " (with the body-encoding marker)"
                } else {
                    ""
                }
            ),
        ));
    }

    let group_id = group_id.or_else(|| rules.default_group_id.clone());
    if let Some(g) = &group_id {
        check_id("message group id", crate::send::codes::INVALID_GROUP_ID, g)?;
    } else if rules.fifo {
        return Err(invalid(
            crate::send::codes::MISSING_GROUP_ID,
            "the target is a FIFO queue and the message has no group id",
        ));
    }
    if let Some(d) = &deduplication_id {
        check_id(
            "deduplication id",
            crate::send::codes::INVALID_DEDUPLICATION_ID,
            d,
        )?;
    } else if rules.fifo && rules.content_based_deduplication == Some(false) {
        return Err(invalid(
            crate::send::codes::MISSING_DEDUPLICATION_ID,
            "the FIFO queue has no content-based deduplication and the message has no deduplication id",
        ));
    }
    if let Some(d) = delay_seconds {
        if rules.fifo {
            return Err(invalid(
                crate::send::codes::INVALID_DELAY,
                "FIFO queues take no per-message delay",
            ));
        }
        if !(0..=MAX_DELAY_SECONDS).contains(&d) {
            return Err(invalid(
                crate::send::codes::INVALID_DELAY,
                format!("delay {d} s is outside 0..={MAX_DELAY_SECONDS}"),
            ));
        }
    }

    let size = message_size(&body, &attributes);
    Ok(Entry {
        body,
        attributes,
        group_id,
        deduplication_id,
        delay_seconds,
        encoded,
        size,
    })
}

fn encode_body(body: Body, policy: BodyEncoding) -> Result<(String, bool), Failure> {
    let text = match body {
        Body::Text(s) => Ok(s),
        Body::Bytes(b) => String::from_utf8(b).map_err(|e| e.into_bytes()),
    };
    match (text, policy) {
        (Ok(s), BodyEncoding::Auto | BodyEncoding::Never) if is_sqs_text(&s) => Ok((s, false)),
        (Ok(s), BodyEncoding::Auto | BodyEncoding::Always) => Ok((BASE64.encode(s), true)),
        (Err(b), BodyEncoding::Auto | BodyEncoding::Always) => Ok((BASE64.encode(b), true)),
        (Ok(_), BodyEncoding::Never) => Err(invalid(
            crate::send::codes::INVALID_MESSAGE_CONTENTS,
            "the body holds characters SQS rejects and BODY_ENCODING is never",
        )),
        (Err(_), BodyEncoding::Never) => Err(invalid(
            crate::send::codes::INVALID_MESSAGE_CONTENTS,
            "the body is not UTF-8 text and BODY_ENCODING is never",
        )),
    }
}

/// Check an attribute the way SQS would.
pub fn check_attribute(a: &Attribute) -> Result<(), Failure> {
    let name = &a.name;
    // One pass: allowed characters, no leading, trailing or double period.
    let name_ok = !name.is_empty()
        && name.len() <= 256
        && name
            .bytes()
            .try_fold(b'.', |previous, b| {
                let allowed = b.is_ascii_alphanumeric()
                    || matches!(b, b'_' | b'-')
                    || (b == b'.' && previous != b'.');
                allowed.then_some(b)
            })
            .is_some_and(|last| last != b'.');
    let prefixed = |p: &str| {
        name.get(..p.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(p))
    };
    if !name_ok || prefixed("aws.") || prefixed("amazon.") {
        return Err(invalid(
            crate::send::codes::INVALID_ATTRIBUTE_NAME,
            format!(
                "attribute name {name:?} is not allowed: 1..256 of A-Z a-z 0-9 _ - ., no leading, trailing or double period, no AWS./Amazon. prefix"
            ),
        ));
    }
    let (base, custom) = match a.data_type.split_once('.') {
        Some((b, c)) => (b, Some(c)),
        None => (a.data_type.as_ref(), None),
    };
    let kind_ok = matches!(
        (base, &a.value),
        ("String", AttributeValue::String(_))
            | ("Number", AttributeValue::Number(_))
            | ("Binary", AttributeValue::Binary(_))
    );
    let custom_ok = custom.is_none_or(|c| {
        !c.is_empty()
            && c.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    });
    if !kind_ok || !custom_ok || a.data_type.len() > 256 {
        return Err(invalid(
            crate::send::codes::INVALID_ATTRIBUTE_TYPE,
            format!(
                "attribute {name:?} has data type {:?}, which does not match its value or is malformed",
                a.data_type
            ),
        ));
    }
    match &a.value {
        AttributeValue::String(s) if s.is_empty() || !is_sqs_text(s) => Err(invalid(
            crate::send::codes::INVALID_ATTRIBUTE_VALUE,
            format!("attribute {name:?}: a String value must be non-empty SQS text"),
        )),
        AttributeValue::Number(n) if !is_number(n) => Err(invalid(
            crate::send::codes::INVALID_ATTRIBUTE_VALUE,
            format!("attribute {name:?}: {n:?} is not a number"),
        )),
        AttributeValue::Binary(b) if b.is_empty() => Err(invalid(
            crate::send::codes::INVALID_ATTRIBUTE_VALUE,
            format!("attribute {name:?}: a Binary value must be non-empty"),
        )),
        _ => Ok(()),
    }
}

/// A decimal number as SQS takes it: sign, digits, fraction, exponent, with at
/// most 38 significant digits.
fn is_number(s: &str) -> bool {
    let t = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, f),
        None => (mantissa, ""),
    };
    let digits_ok = (!int.is_empty() || !frac.is_empty())
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit());
    // Significant digits: int and frac together, without the leading and
    // trailing zeros.
    let digits = || int.bytes().chain(frac.bytes());
    let total = int.len() + frac.len();
    let leading = digits().take_while(|&b| b == b'0').count();
    let trailing = if leading == total {
        0
    } else {
        digits().rev().take_while(|&b| b == b'0').count()
    };
    let significant = total - leading - trailing;
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.len() <= 3 && e.bytes().all(|b| b.is_ascii_digit())
    });
    digits_ok && exponent_ok && significant <= 38
}

/// Check a group or deduplication id: 1..=128 of ASCII letters, digits and
/// punctuation.
fn check_id(what: &str, code: &str, id: &str) -> Result<(), Failure> {
    if crate::message::fifo_id::is_valid(id) {
        Ok(())
    } else {
        Err(invalid(
            code,
            format!(
                "{what} {id:?} must be 1..={MAX_ID_CHARS} ASCII letters, digits or punctuation"
            ),
        ))
    }
}

/// A shared, immutable entry ready to be put in a batch.
pub type SharedEntry = Arc<Entry>;

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> EncodeRules {
        EncodeRules::default()
    }

    #[test]
    fn valid_text_is_untouched() {
        let (_, e) = prepare(Message::new("héllo 🌍\ttab", 0), &rules());
        let e = e.expect("valid");
        assert_eq!(e.body, "héllo 🌍\ttab");
        assert!(!e.encoded);
        assert!(e.attributes.is_empty());
        assert_eq!(e.size, "héllo 🌍\ttab".len());
    }

    #[test]
    fn invalid_text_is_base64_and_marked() {
        let (_, e) = prepare(Message::new("a\u{0}b\u{FFFF}", 0), &rules());
        let e = e.expect("encoded");
        assert!(e.encoded);
        assert_eq!(
            BASE64.decode(&e.body).expect("b64"),
            "a\u{0}b\u{FFFF}".as_bytes()
        );
        assert_eq!(
            e.attributes,
            vec![Attribute::string(DEFAULT_ENCODING_ATTRIBUTE, "base64")]
        );
        assert_eq!(
            e.size,
            e.body.len() + DEFAULT_ENCODING_ATTRIBUTE.len() + "String".len() + "base64".len()
        );
    }

    #[test]
    fn binary_is_encoded_but_utf8_bytes_are_not() {
        let (_, e) = prepare(Message::new(vec![0xF3u8, 0x89, 0x9A, 0xC2], 0), &rules());
        assert!(e.expect("enc").encoded);
        let (_, e) = prepare(Message::new(b"{\"a\":1}".to_vec(), 0), &rules());
        let e = e.expect("text");
        assert!(!e.encoded);
        assert_eq!(e.body, "{\"a\":1}");
    }

    #[test]
    fn policies_always_and_never() {
        let always = EncodeRules {
            body_encoding: BodyEncoding::Always,
            ..rules()
        };
        let (_, e) = prepare(Message::new("plain", 0), &always);
        assert_eq!(e.expect("enc").body, BASE64.encode("plain"));
        let never = EncodeRules {
            body_encoding: BodyEncoding::Never,
            ..rules()
        };
        let (_, e) = prepare(Message::new(vec![0xFFu8], 0), &never);
        let f = e.expect_err("rejected");
        assert_eq!(f.code, "InvalidMessageContents");
        assert!(!f.retryable);
        let (_, e) = prepare(Message::new("ok", 0), &never);
        assert!(e.is_ok());
    }

    #[test]
    fn marker_needs_room_among_ten_attributes() {
        let mut m = Message::new(vec![0u8, 1, 2], 0);
        for i in 0..10 {
            m = m.attribute(Attribute::string(format!("a{i}"), "v"));
        }
        let (_, e) = prepare(m, &rules());
        assert_eq!(e.expect_err("too many").code, "TooManyAttributes");
    }

    #[test]
    fn attribute_sizes_count_name_type_and_value() {
        let m = Message::new("ü", 0)
            .attribute(Attribute::string("k", "vé"))
            .attribute(Attribute::number("n", 12))
            .attribute(Attribute::binary("b", vec![1u8, 2, 3]).with_data_type("Binary.x"));
        let (_, e) = prepare(m, &rules());
        let e = e.expect("valid");
        assert_eq!(e.size, 2 + (1 + 6 + 3) + (1 + 6 + 2) + (1 + 8 + 3));
    }

    #[test]
    fn bad_attributes_are_named() {
        for (a, code) in [
            (Attribute::string("AWS.thing", "v"), "InvalidAttributeName"),
            (Attribute::string("a b", "v"), "InvalidAttributeName"),
            (Attribute::string("a..b", "v"), "InvalidAttributeName"),
            (Attribute::string(".lead", "v"), "InvalidAttributeName"),
            (Attribute::string("trail.", "v"), "InvalidAttributeName"),
            (Attribute::string(".", "v"), "InvalidAttributeName"),
            (Attribute::string("aWs.y", "v"), "InvalidAttributeName"),
            (Attribute::string("Amazon.x", "v"), "InvalidAttributeName"),
            (
                Attribute::string("x".repeat(257), "v"),
                "InvalidAttributeName",
            ),
            (Attribute::string("ok", ""), "InvalidAttributeValue"),
            (Attribute::string("ok", "\u{1}"), "InvalidAttributeValue"),
            (Attribute::number("n", "1.2.3"), "InvalidAttributeValue"),
            (Attribute::number("n", "1e"), "InvalidAttributeValue"),
            (
                Attribute::string("t", "x").with_data_type("Number"),
                "InvalidAttributeType",
            ),
            (
                Attribute::string("t", "x").with_data_type("Text"),
                "InvalidAttributeType",
            ),
        ] {
            let (_, e) = prepare(Message::new("b", 0).attribute(a.clone()), &rules());
            assert_eq!(e.expect_err("invalid").code, code, "{a:?}");
        }
        for n in ["0", "-1.5", "+3e10", ".5", "5.", "1E-7"] {
            assert!(is_number(n), "{n}");
        }
        let dup = Message::new("b", 0)
            .attribute(Attribute::string("a", "1"))
            .attribute(Attribute::string("a", "2"));
        assert_eq!(
            prepare(dup, &rules()).1.expect_err("dup").code,
            "InvalidAttributeName"
        );
    }

    #[test]
    fn fifo_rules() {
        let fifo = EncodeRules {
            fifo: true,
            content_based_deduplication: Some(false),
            ..rules()
        };
        let (_, e) = prepare(Message::new("b", 0).deduplication_id("d"), &fifo);
        assert_eq!(e.expect_err("no group").code, "MissingGroupId");
        let (_, e) = prepare(Message::new("b", 0).group_id("g"), &fifo);
        assert_eq!(e.expect_err("no dedup").code, "MissingDeduplicationId");
        let (_, e) = prepare(
            Message::new("b", 0)
                .group_id("g")
                .deduplication_id("d")
                .delay_seconds(5),
            &fifo,
        );
        assert_eq!(e.expect_err("delay").code, "InvalidDelay");
        let with_default = EncodeRules {
            default_group_id: Some("all".into()),
            ..fifo
        };
        let (_, e) = prepare(Message::new("b", 0).deduplication_id("d"), &with_default);
        assert_eq!(e.expect("ok").group_id.as_deref(), Some("all"));
        let (_, e) = prepare(
            Message::new("b", 0)
                .group_id("x".repeat(129))
                .deduplication_id("d"),
            &with_default,
        );
        assert_eq!(e.expect_err("long").code, "InvalidGroupId");
        let (_, e) = prepare(
            Message::new("b", 0).group_id("g").deduplication_id("é"),
            &with_default,
        );
        assert_eq!(e.expect_err("charset").code, "InvalidDeduplicationId");
    }

    #[test]
    fn standard_delay_bounds() {
        let (_, e) = prepare(Message::new("b", 0).delay_seconds(901), &rules());
        assert_eq!(e.expect_err("delay").code, "InvalidDelay");
        let (_, e) = prepare(Message::new("b", 0).delay_seconds(900), &rules());
        assert_eq!(e.expect("ok").delay_seconds, Some(900));
    }

    proptest::proptest! {
        #[test]
        fn is_sqs_text_is_the_character_rule(
            s in proptest::string::string_regex("(.|[\\x00-\\x1f]|\u{FFFE}|\u{FFFF}|\u{FFFD}|\u{EFFF}){0,40}").expect("regex")
        ) {
            proptest::prop_assert_eq!(is_sqs_text(&s), s.chars().all(is_sqs_char), "{:?}", s);
        }

        #[test]
        fn attribute_names_follow_the_written_rule(name in "[a-zA-Z0-9_.\\- é]{0,12}") {
            let lower = name.to_ascii_lowercase();
            let rule = !name.is_empty()
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
                && !name.starts_with('.')
                && !name.ends_with('.')
                && !name.contains("..")
                && !lower.starts_with("aws.")
                && !lower.starts_with("amazon.");
            let checked = check_attribute(&Attribute::string(name.clone(), "v")).is_ok();
            proptest::prop_assert_eq!(checked, rule, "{:?}", name);
        }

        #[test]
        fn significant_digits_are_counted_as_written(int in "[0-9]{0,45}", frac in "[0-9]{0,45}") {
            let n = format!("{int}.{frac}");
            let joined = format!("{int}{frac}");
            let significant = joined.trim_start_matches('0').trim_end_matches('0').len();
            proptest::prop_assert_eq!(is_number(&n), significant <= 38 && !joined.is_empty(), "{}", n);
        }
    }

    #[test]
    fn refused_characters_at_every_offset_of_a_word() {
        for bad in ["\u{0}", "\u{1f}", "\u{FFFE}", "\u{FFFF}"] {
            for at in 0..20 {
                let s = format!("{}{bad}{}", "a".repeat(at), "b".repeat(20 - at));
                assert!(!is_sqs_text(&s), "{s:?}");
            }
        }
        for good in ["\t", "\n", "\r", "\u{FFFD}", "\u{EFFF}", "\u{F0000}", "é"] {
            let s = format!("{}{good}{}", "a".repeat(9), "b".repeat(9));
            assert!(is_sqs_text(&s), "{s:?}");
        }
    }

    #[test]
    fn empty_body_fails() {
        let (_, e) = prepare(Message::new("", 0), &rules());
        assert_eq!(e.expect_err("empty").code, "EmptyBody");
    }
}
