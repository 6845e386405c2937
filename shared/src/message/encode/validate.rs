//! Attributes and ids checked as SQS would check them, so a message SQS
//! would refuse fails at once, with its reason, instead of costing a call.

use crate::message::limits::MAX_ID_CHARS;
use crate::message::{Attribute, AttributeValue};
use crate::send::outcome::Failure;

use super::invalid;
use super::text::is_sqs_text;

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

/// The smallest and largest powers of ten of a number SQS takes: its
/// magnitude lies between 10^-128 and 10^126 (or it is zero).
const MIN_EXPONENT: i64 = -128;
const MAX_EXPONENT: i64 = 126;

/// Whether SQS takes `s` as a `Number` attribute's value: a decimal number
/// (sign, digits, fraction, exponent) with at most 38 significant digits,
/// zero or between 10^-128 and 10^126 in magnitude (the SQS developer
/// guide, "Message attribute data types"). A value outside them (a double
/// of 1e200, say) is refused by SQS; a caller with such a number sends it
/// as a `String`.
pub fn is_sqs_number(s: &str) -> bool {
    is_number(s)
}

/// A decimal number as SQS takes it: sign, digits, fraction, exponent, with at
/// most 38 significant digits, in SQS's range.
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
    if !(digits_ok && exponent_ok && significant <= 38) {
        return false;
    }
    if leading == total {
        return true; // zero
    }
    // The power of ten of the first significant digit.
    let exponent: i64 = exponent.map_or(0, |e| {
        let (negative, e) = match e.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, e.strip_prefix('+').unwrap_or(e)),
        };
        let n = e.parse::<i64>().unwrap_or(0);
        if negative { -n } else { n }
    });
    let order = int.len() as i64 - 1 - leading as i64 + exponent;
    let exactly_one = significant == 1 && digits().nth(leading) == Some(b'1');
    order >= MIN_EXPONENT && (order < MAX_EXPONENT || (order == MAX_EXPONENT && exactly_one))
}

/// Check a group or deduplication id: 1..=128 of ASCII letters, digits and
/// punctuation.
pub(super) fn check_id(what: &str, code: &str, id: &str) -> Result<(), Failure> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::message::encode::{EncodeRules, prepare};

    fn rules() -> EncodeRules {
        EncodeRules::default()
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
        for n in [
            "0", "-1.5", "+3e10", ".5", "5.", "1E-7", "0.000", "1e126", "-1E+126",
        ] {
            assert!(is_number(n), "{n}");
        }
        // SQS's range: 10^-128 to 10^126 in magnitude.
        let big = format!("1{}", "0".repeat(200)); // a double of 1e200, as Rust writes it
        let tiny = format!("0.{}5", "0".repeat(323)); // 5e-324
        for n in [
            big.as_str(),
            tiny.as_str(),
            "1e127",
            "1.1e126",
            "2e126",
            "-1e127",
            "9e-129",
            "0.1e-128",
        ] {
            assert!(!is_number(n), "{n}");
        }
        for n in ["1e-128", "10e-129", "9.99e125", "0.01e128"] {
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

    proptest::proptest! {
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
}
