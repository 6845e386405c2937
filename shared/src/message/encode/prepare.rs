//! From a [`Message`] to an [`Entry`]: the body encoded by its policy and
//! marked, attributes and ids validated, the FIFO and delay rules applied,
//! the size SQS counts.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::message::limits::{MAX_ATTRIBUTES, MAX_DELAY_SECONDS, message_size};
use crate::message::{Attribute, Body, Message};
use crate::send::outcome::Failure;

use super::text::is_sqs_text;
use super::validate::{check_attribute, check_id};
use super::{BodyEncoding, ENCODING_MARKER_VALUE, EncodeRules, Entry, invalid};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::encode::DEFAULT_ENCODING_ATTRIBUTE;

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

    #[test]
    fn empty_body_fails() {
        let (_, e) = prepare(Message::new("", 0), &rules());
        assert_eq!(e.expect_err("empty").code, "EmptyBody");
    }
}
