//! Fitting a message's properties and headers into SQS attributes.
//!
//! SQS takes at most ten attributes per message, names of `A-Za-z0-9_-.`
//! only (no `AWS.`/`Amazon.` prefix), and counts every attribute's bytes in
//! the message size. AMQP headers know none of these rules: a dead-lettered
//! message alone carries `x-death`, `x-first-death-exchange`,
//! `x-first-death-queue`, `x-first-death-reason`, `x-last-death-*`... Headers
//! must never cost a message, so:
//!
//! 1. every property and header that SQS takes as an attribute of its own
//!    keeps one, in order (properties first, then headers as the source gave
//!    them), as long as slots are left: ten, less one for the body-encoding
//!    marker when the body will be encoded, less one for the claim check's
//!    size attribute under `OVERSIZE_POLICY=offload`, less those the
//!    routing rules set (`ROUTES`: they are fitted around, [`fit_beside`]);
//! 2. the rest (names SQS refuses, names the forwarder reserves, and what
//!    found no slot) is carried in **one** `String` attribute,
//!    [`FOLDED_ATTRIBUTE`], holding a JSON object of name → value (text as
//!    JSON strings, numbers as numbers, booleans, tables and arrays as JSON,
//!    bytes that are not UTF-8 as `{"base64": "..."}`); a `Binary`
//!    attribute with the same JSON as UTF-8 bytes when the text holds a
//!    character SQS refuses in a `String`;
//! 3. if the attributes would push the message over the largest message the
//!    queue takes, the largest headers are left out, one at a time, until
//!    the message fits (counted in `HeadersDropped`, logged by name). The
//!    body is never touched: a body too large on its own is the oversize
//!    policy's business, as before.
//!
//! What was folded or dropped is counted (`HeadersFolded`,
//! `HeadersDropped`) and logged by header name (never by value).

use serde_json::{Map, Value};
use sqs_forwarder::message::encode::{check_attribute, is_sqs_text};
use sqs_forwarder::send::offload::{LEGACY_SIZE_ATTRIBUTE, SIZE_ATTRIBUTE};
use sqs_forwarder::{Attribute, BodyEncoding, Forwarder, OversizePolicy};

use crate::values::{FieldValue, attribute, bytes_json};

/// The attribute that carries the headers (and properties) that have no
/// attribute of their own.
pub const FOLDED_ATTRIBUTE: &str = "amqp.headers";

/// Room kept for a claim-check pointer under `OVERSIZE_POLICY=offload`: its
/// body (the pointer JSON with a bucket of at most 63 and a key of at most
/// 512 + 36 characters) and its size attribute take less than this.
const POINTER_ALLOWANCE: usize = 1024;

/// SQS's limit on attributes per message.
const MAX_ATTRIBUTES: usize = sqs_forwarder::message::limits::MAX_ATTRIBUTES;

/// What the forwarder will do to a message that bears on its attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Room {
    /// `BODY_ENCODING`.
    pub body_encoding: BodyEncoding,
    /// `ENCODING_ATTRIBUTE`: the marker an encoded body gets.
    pub marker_attribute: String,
    /// Whether oversize messages are offloaded (one slot goes to the size
    /// attribute, and the body may become a short pointer).
    pub offload: bool,
    /// The largest message the queue takes, body and attributes.
    pub largest_message: usize,
}

impl Default for Room {
    fn default() -> Self {
        Room {
            body_encoding: BodyEncoding::Auto,
            marker_attribute: sqs_forwarder::message::encode::DEFAULT_ENCODING_ATTRIBUTE.to_owned(),
            offload: false,
            largest_message: sqs_forwarder::message::limits::MAX_MESSAGE_BYTES,
        }
    }
}

impl Room {
    /// The room a forwarder leaves.
    pub fn of<T: sqs_forwarder::Transport>(forwarder: &Forwarder<T>) -> Self {
        let rules = forwarder.rules();
        let settings = forwarder.settings();
        Room {
            body_encoding: rules.body_encoding,
            marker_attribute: rules.marker_attribute.clone(),
            offload: settings.oversize == OversizePolicy::Offload,
            largest_message: settings.limits.largest_message(),
        }
    }

    /// Whether the forwarder will base64-encode this body.
    fn encodes(&self, body: &[u8]) -> bool {
        match self.body_encoding {
            BodyEncoding::Always => true,
            BodyEncoding::Never => false,
            BodyEncoding::Auto => !std::str::from_utf8(body).is_ok_and(is_sqs_text),
        }
    }

    fn reserved(&self, name: &str) -> bool {
        name == FOLDED_ATTRIBUTE
            || name == self.marker_attribute
            || name == SIZE_ATTRIBUTE
            || name == LEGACY_SIZE_ATTRIBUTE
    }
}

/// The attributes of one message, and what did not get one of its own.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fitted {
    /// The attributes, [`FOLDED_ATTRIBUTE`] last when there is one.
    pub attributes: Vec<Attribute>,
    /// Names carried in [`FOLDED_ATTRIBUTE`].
    pub folded: Vec<String>,
    /// Names left out for size.
    pub dropped: Vec<String>,
}

enum Slot {
    /// An attribute of its own, and the field's value should it be folded.
    Own(Attribute, FieldValue),
    Folded(String, Value),
}

impl Slot {
    fn name(&self) -> &str {
        match self {
            Slot::Own(a, _) => &a.name,
            Slot::Folded(n, _) => n,
        }
    }

    /// Bytes it adds to the message (roughly, for a folded one: its JSON).
    fn cost(&self) -> usize {
        match self {
            Slot::Own(a, _) => a.size(),
            Slot::Folded(n, v) => n.len() + v.to_string().len() + 4,
        }
    }
}

/// Fit `fields` (properties first, then headers, in order) onto a message
/// with this `body`.
pub fn fit(fields: Vec<(String, FieldValue)>, body: &[u8], room: &Room) -> Fitted {
    fit_beside(fields, body, room, &[])
}

/// [`fit`] onto a message that already carries `taken` (the routing rules'
/// attributes, `ROUTES`): they keep their slots, names and bytes, and a
/// field of the same name is folded rather than put in their place. When
/// `taken` leaves no slot, or holds [`FOLDED_ATTRIBUTE`] itself, what would
/// be folded is left out (listed in [`Fitted::dropped`]).
pub fn fit_beside(
    fields: Vec<(String, FieldValue)>,
    body: &[u8],
    room: &Room,
    taken: &[Attribute],
) -> Fitted {
    let encoded = room.encodes(body);
    let slots_left = MAX_ATTRIBUTES
        .saturating_sub(usize::from(encoded) + usize::from(room.offload) + taken.len());
    let is_taken = |name: &str| taken.iter().any(|a| a.name == name);

    // Own attribute or folded, in the fields' order.
    let mut slots: Vec<Slot> = Vec::with_capacity(fields.len());
    for (name, value) in fields {
        let Some(a) = attribute(&name, &value) else {
            continue; // empty or void: no SQS form, folded or not
        };
        let own = check_attribute(&a).is_ok()
            && !room.reserved(&name)
            && !is_taken(&name)
            && !slots.iter().any(|s| s.name() == name);
        if own {
            slots.push(Slot::Own(a, value));
        } else {
            slots.push(Slot::Folded(name, json(&value)));
        }
    }
    let mut dropped = Vec::new();
    let owns = slots.iter().filter(|s| matches!(s, Slot::Own(..))).count();
    let any_folded = owns < slots.len();
    if slots_left == 0 || is_taken(FOLDED_ATTRIBUTE) {
        // Nothing can be folded (no slot for the folded attribute, or the
        // rules use its name): the first owns keep a slot, the rest is
        // left out.
        let mut keep = slots_left;
        slots.retain(|s| {
            let kept = matches!(s, Slot::Own(..)) && keep > 0;
            if kept {
                keep -= 1;
            } else {
                dropped.push(s.name().to_owned());
            }
            kept
        });
    } else if owns > slots_left || (any_folded && owns >= slots_left) {
        // One slot goes to the folded attribute; the last owns give theirs up.
        let mut keep = slots_left.saturating_sub(1);
        for s in &mut slots {
            if let Slot::Own(a, value) = s {
                if keep > 0 {
                    keep -= 1;
                } else {
                    *s = Slot::Folded(std::mem::take(&mut a.name).into_owned(), json(value));
                }
            }
        }
    }

    // Bytes: the body as SQS will count it (a pointer's under offload), and
    // the marker.
    let body_cost = if encoded {
        body.len().div_ceil(3) * 4 + room.marker_attribute.len() + "String".len() + "base64".len()
    } else {
        body.len()
    };
    let body_cost = if room.offload {
        body_cost.min(POINTER_ALLOWANCE)
    } else {
        body_cost
    };
    let taken_size: usize = taken.iter().map(Attribute::size).sum();
    // Assembled once for the common case (everything fits); again after
    // each header left out for size.
    let mut attributes = assemble(&slots);
    if let Some(room_for_attributes) = room
        .largest_message
        .checked_sub(body_cost)
        .and_then(|left| left.checked_sub(taken_size))
    {
        loop {
            let size: usize = attributes.iter().map(Attribute::size).sum();
            if size <= room_for_attributes {
                break;
            }
            let Some((largest, _)) = slots.iter().enumerate().max_by_key(|(_, s)| s.cost()) else {
                break;
            };
            dropped.push(slots.remove(largest).name().to_owned());
            attributes = assemble(&slots);
        }
    }
    // A body too large on its own: the oversize policy decides, attributes
    // or not.

    let folded = slots
        .iter()
        .filter_map(|s| match s {
            Slot::Folded(n, _) => Some(n.clone()),
            Slot::Own(..) => None,
        })
        .collect();
    Fitted {
        attributes,
        folded,
        dropped,
    }
}

/// The attributes of `slots`: the own ones in order, then the folded ones
/// in one attribute.
fn assemble(slots: &[Slot]) -> Vec<Attribute> {
    let mut attributes = Vec::with_capacity(slots.len().min(MAX_ATTRIBUTES));
    let mut folded = Map::new();
    for s in slots {
        match s {
            Slot::Own(a, _) => attributes.push(a.clone()),
            Slot::Folded(n, v) => {
                folded.insert(n.clone(), v.clone());
            }
        }
    }
    if !folded.is_empty() {
        let text = Value::Object(folded).to_string();
        attributes.push(if is_sqs_text(&text) {
            Attribute::string(FOLDED_ATTRIBUTE, text)
        } else {
            Attribute::binary(FOLDED_ATTRIBUTE, text.into_bytes())
        });
    }
    attributes
}

/// A field value in the folded JSON.
fn json(value: &FieldValue) -> Value {
    match value {
        FieldValue::Text(s) => Value::String(s.clone()),
        FieldValue::Bytes(b) => bytes_json(b),
        FieldValue::Number(n) => serde_json::from_str::<serde_json::Number>(n)
            .map_or_else(|_| Value::String(n.clone()), Value::Number),
        FieldValue::Bool(b) => Value::Bool(*b),
        // Our own JSON, nested at most `mapping::MAX_DEPTH` levels.
        FieldValue::Json(s) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
        FieldValue::Void => Value::Null,
    }
}

/// Count and log what [`fit`] folded and dropped for one message.
pub fn report(fitted: &Fitted, queue: &str) {
    if !fitted.folded.is_empty() {
        metrics::counter!(crate::metric::HEADERS_FOLDED).increment(fitted.folded.len() as u64);
        tracing::info!(
            queue,
            folded = ?fitted.folded,
            "headers without an SQS attribute of their own (too many, or a name SQS refuses) are carried in the {FOLDED_ATTRIBUTE} attribute"
        );
    }
    if !fitted.dropped.is_empty() {
        metrics::counter!(crate::metric::HEADERS_DROPPED).increment(fitted.dropped.len() as u64);
        tracing::warn!(
            queue,
            dropped = ?fitted.dropped,
            "headers left out: with them the message would exceed the largest message the queue takes"
        );
    }
}

#[cfg(test)]
mod tests;
