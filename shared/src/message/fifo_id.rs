//! FIFO group and deduplication ids: one rule for what SQS takes, one way to
//! make any value into an id it takes.
//!
//! SQS takes 1..=128 ASCII letters, digits and punctuation characters
//! (``!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~``: 0x21..=0x7E, no space) as a
//! `MessageGroupId` or `MessageDeduplicationId`. A value
//! from an event (a partition key, a routing key, an object key) may be
//! longer or hold anything; [`or_hashed`] keeps a value SQS takes as it is
//! and replaces any other by a hash the caller chooses, so the same value
//! always gives the same id (a redelivered message keeps its group and its
//! deduplication id) and different values do not share one. Each function
//! keeps its own hash: ids already deployed must stay what they were.

use std::borrow::Cow;

pub use crate::message::limits::MAX_ID_CHARS;

/// Whether SQS takes `value` as a group or deduplication id.
pub fn is_valid(value: &str) -> bool {
    !value.is_empty() && value.len() <= MAX_ID_CHARS && value.bytes().all(|b| b.is_ascii_graphic())
}

/// `value` when SQS takes it as an id, else `prefix` followed by the hex of
/// `digest(value)`.
pub fn or_hashed<'a, D: AsRef<[u8]>>(
    value: &'a str,
    prefix: &str,
    digest: impl FnOnce(&str) -> D,
) -> Cow<'a, str> {
    if is_valid(value) {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(hashed(prefix, digest(value)))
    }
}

/// `prefix` followed by the lower-case hex of `digest`.
pub fn hashed(prefix: &str, digest: impl AsRef<[u8]>) -> String {
    let digest = digest.as_ref();
    let mut id = String::with_capacity(prefix.len() + 2 * digest.len());
    id.push_str(prefix);
    id.push_str(&hex::encode(digest));
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_sqs_takes() {
        assert!(is_valid("orders.eu-1"));
        assert!(is_valid(&"k".repeat(MAX_ID_CHARS)));
        assert!(!is_valid(""));
        assert!(!is_valid(&"k".repeat(MAX_ID_CHARS + 1)));
        assert!(!is_valid("with space"));
        assert!(!is_valid("zürich"));
        assert!(!is_valid("tab\there"));
    }

    #[test]
    fn only_what_sqs_refuses_is_hashed() {
        let calls = std::cell::Cell::new(0);
        let digest = |v: &str| {
            calls.set(calls.get() + 1);
            v.bytes().rev().collect::<Vec<u8>>()
        };
        assert_eq!(or_hashed("ok", "x-", digest), "ok");
        assert_eq!(calls.get(), 0, "a valid id is not hashed");
        assert_eq!(or_hashed("a b", "x-", digest), "x-622061");
        assert_eq!(hashed("md5-", [0x00, 0xab, 0xff]), "md5-00abff");
    }
}
