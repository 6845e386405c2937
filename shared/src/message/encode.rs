//! Validation and encoding: from a [`Message`](crate::message::Message) to an [`Entry`] that SQS accepts.
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
//!
//! The steps, a file each: `prepare.rs` turns a message into an entry (the
//! body policy, the marker, the FIFO and delay rules, the size);
//! `validate.rs` checks attributes and ids as SQS would; `text.rs` is the
//! character rule SQS applies to text.

mod prepare;
mod text;
mod validate;

use std::sync::Arc;

use crate::message::Attribute;
use crate::send::outcome::Failure;

pub use prepare::prepare;
pub use text::{is_sqs_char, is_sqs_text};
pub use validate::{check_attribute, is_sqs_number};

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

fn invalid(code: &str, message: impl Into<String>) -> Failure {
    Failure::permanent(code, message)
}

/// A shared, immutable entry ready to be put in a batch.
pub type SharedEntry = Arc<Entry>;
