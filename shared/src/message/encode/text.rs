//! The characters SQS accepts in a body or a `String` attribute value.

/// Whether SQS accepts this character in a body or `String` attribute value.
pub fn is_sqs_char(c: char) -> bool {
    matches!(c, '\u{9}' | '\u{A}' | '\u{D}' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

/// Whether SQS accepts this text as a body or `String` attribute value: the
/// same answer as `s.chars().all(is_sqs_char)`, read a block at a time.
///
/// In valid UTF-8 the characters SQS refuses are the control characters
/// below U+0020 other than tab, line feed and carriage return (one byte
/// each), and U+FFFE and U+FFFF (`EF BF BE`, `EF BF BF`; `EF` is only ever
/// a lead byte); surrogates cannot occur. So the text is scanned for a
/// byte below `0x20` or an `0xEF` (`byte_scan`, vectorised), each one found
/// is looked at, and the scan goes on after it.
pub fn is_sqs_text(s: &str) -> bool {
    use crate::message::byte_scan::{SqsSuspect, find};
    let mut rest = s.as_bytes();
    while let Some(i) = find::<SqsSuspect>(rest) {
        let accepted = match rest[i] {
            b'\t' | b'\n' | b'\r' => true,
            0xEF => {
                !(rest.get(i + 1) == Some(&0xBF) && matches!(rest.get(i + 2), Some(0xBE | 0xBF)))
            }
            _ => false,
        };
        if !accepted {
            return false;
        }
        rest = &rest[i + 1..];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn is_sqs_text_is_the_character_rule(
            s in proptest::string::string_regex("(.|[\\x00-\\x1f]|\u{FFFE}|\u{FFFF}|\u{FFFD}|\u{EFFF}){0,40}").expect("regex")
        ) {
            proptest::prop_assert_eq!(is_sqs_text(&s), s.chars().all(is_sqs_char), "{:?}", s);
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
}
