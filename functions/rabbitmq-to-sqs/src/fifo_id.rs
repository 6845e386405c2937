//! FIFO group and deduplication ids that SQS always takes.
//!
//! SQS takes 1..=128 printable ASCII characters as a `MessageGroupId` or
//! `MessageDeduplicationId`. A routing key may be 255 bytes of anything, a
//! message id or correlation id any text, so a value SQS would refuse is
//! replaced by `sha256:` and its hex SHA-256 (71 characters), through the
//! shared crate's one rule (`sqs_forwarder::message::fifo_id`): the same value always gives the same id
//! (a redelivered message keeps its group and its deduplication id), and
//! different values do not share one. A value SQS takes is used as it is.

use std::borrow::Cow;

use sha2::{Digest, Sha256};
pub use sqs_forwarder::message::fifo_id::{MAX_ID_CHARS, is_valid};

/// `value` when SQS takes it as an id, else `sha256:` and its hex SHA-256.
pub fn sqs_id(value: &str) -> Cow<'_, str> {
    sqs_forwarder::message::fifo_id::or_hashed(value, "sha256:", |v| Sha256::digest(v.as_bytes()))
}

/// The id of a value that is not UTF-8 (a routing key or message id as the
/// publisher sent its octets): `sha256:` and the hex SHA-256 of the octets.
/// SQS could never take the value itself, and no text's id is the same.
pub fn sqs_id_of_octets(octets: &[u8]) -> String {
    sqs_forwarder::message::fifo_id::hashed("sha256:", Sha256::digest(octets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_ids_stay_as_they_are() {
        assert_eq!(sqs_id("orders.eu"), "orders.eu");
        let longest = "k".repeat(MAX_ID_CHARS);
        assert_eq!(sqs_id(&longest), longest.as_str());
        assert_eq!(
            sqs_id("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
            "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
        );
    }

    #[test]
    fn octets_that_are_not_text_are_hashed_as_octets() {
        let latin1 = b"caf\xe9";
        let id = sqs_id_of_octets(latin1);
        assert!(is_valid(&id) && id.starts_with("sha256:"), "{id}");
        assert_eq!(sqs_id_of_octets(latin1), id, "same octets, same id");
        assert_ne!(sqs_id_of_octets(b"caf\xe8"), id);
        // The text the octets read as (`?` for the octet that is not
        // UTF-8), and that text's UTF-8 spelling, have other ids.
        assert_ne!(sqs_id("caf?"), id.as_str());
        assert_ne!(sqs_id("café"), id.as_str());
    }

    #[test]
    fn ids_sqs_refuses_are_hashed_deterministically() {
        for bad in [
            "k".repeat(MAX_ID_CHARS + 1),
            "orders eu".to_owned(),
            "commandes.été".to_owned(),
            "tab\there".to_owned(),
            String::new(),
        ] {
            let id = sqs_id(&bad).into_owned();
            assert!(is_valid(&id), "{bad:?} gave {id:?}");
            assert!(id.starts_with("sha256:") && id.len() == 71, "{id}");
            assert_eq!(sqs_id(&bad), id, "same value, same id");
        }
        assert_ne!(
            sqs_id(&"a".repeat(200)),
            sqs_id(&"a".repeat(201)),
            "different values, different ids"
        );
    }
}
