//! A delivery's frame the codec cannot read, read tolerantly, so that one
//! message can never end the connection (and with it stall its queue and
//! every queue after it).
//!
//! AMQP 0-9-1 short strings are octets, but amq-protocol parses them as
//! UTF-8 and refuses a frame that holds one that is not: a routing key or
//! exchange name, a short-string property (`message-id`, `type`, `app-id`,
//! ...) or a header's name. The broker takes and delivers such messages
//! from any publisher. The frame is length-delimited, so it is read again
//! here: each short string that is not UTF-8 is given to the codec with
//! `?` in place of every octet that is not part of UTF-8 text (its length
//! unchanged), and its octets are kept ([`RawText`]) for what must not be
//! changed: the attribute it becomes, a FIFO id made from it. A content
//! header whose properties still cannot be read is read without its
//! headers, and failing that with no properties at all; the delivery then
//! says why ([`Notes::fault`]) and the drain rejects it to the dead-letter
//! exchange (`UnreadableMessage`). So does one whose headers nest deeper
//! than the codec's recursion can take ([`nesting`]).

use amq_protocol::frame::{AMQPContentHeader, AMQPFrame, parse_frame};

use super::layout::{self, HEADER, METHOD};
use super::nesting::{self, MAX_NESTING};
use super::{RawText, TextField};

/// What a frame's reading found beyond what the codec returns.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Notes {
    /// Short strings that were not UTF-8, and their octets.
    pub(crate) raw: Vec<RawText>,
    /// Why the message cannot be read whole (part of its properties left
    /// out): the drain rejects it.
    pub(crate) fault: Option<String>,
}

/// Parse the whole frame `frame`, which the codec must take entirely.
fn parse(frame: &[u8]) -> Option<AMQPFrame> {
    match parse_frame(frame) {
        Ok(([], parsed)) => Some(parsed),
        _ => None,
    }
}

/// When the headers of the content header `frame` nest deeper than the
/// codec can recurse: the frame read without them, and why.
pub(super) fn deep_headers(frame: &[u8]) -> Option<(AMQPFrame, Notes)> {
    let depth = nesting::too_deep(frame)?;
    let stripped = layout::without_headers(frame)?;
    let (parsed, mut notes) = match parse(&stripped) {
        Some(f) => (f, Notes::default()),
        None => mend(&stripped)?,
    };
    notes.fault.get_or_insert_with(|| {
        format!(
            "its headers nest {depth} tables or arrays deep, more than the {MAX_NESTING} this function reads"
        )
    });
    Some((parsed, notes))
}

/// `frame`, which the codec refused, read tolerantly when it is a
/// delivery's (`basic.deliver`, `basic.get-ok` or a content header);
/// `None` for any other frame.
pub(super) fn mend(frame: &[u8]) -> Option<(AMQPFrame, Notes)> {
    let mut copy = frame.to_vec();
    let mut notes = Notes::default();
    match layout::frame_type(frame)? {
        METHOD => {
            for (field, text) in layout::delivery_strings(frame)? {
                fix(&mut copy, text, field, &mut notes);
            }
            Some((parse(&copy)?, notes))
        }
        HEADER => mend_header(frame, copy, notes),
        _ => None,
    }
}

fn mend_header(frame: &[u8], mut copy: Vec<u8>, mut notes: Notes) -> Option<(AMQPFrame, Notes)> {
    if let Some(found) = layout::header_layout(frame) {
        for (field, text) in found.strings {
            fix(&mut copy, text, Some(field), &mut notes);
        }
        if let Some(table) = found.headers {
            let mut names = Vec::new();
            nesting::walk_table(&frame[table.clone()], |name| names.push(name));
            for name in names {
                fix(
                    &mut copy,
                    table.start + name.start..table.start + name.end,
                    Some(TextField::HeaderName),
                    &mut notes,
                );
            }
        }
        if let Some(parsed) = parse(&copy) {
            return Some((parsed, notes));
        }
    }
    if let Some(stripped) = layout::without_headers(&copy)
        && let Some(parsed) = parse(&stripped)
    {
        notes.raw.retain(|r| r.field != TextField::HeaderName);
        notes.fault = Some("its headers cannot be read".into());
        return Some((parsed, notes));
    }
    let (class_id, body_size) = layout::class_and_body_size(frame)?;
    let channel = layout::channel(frame)?;
    let header = AMQPContentHeader {
        class_id,
        body_size,
        properties: Default::default(),
    };
    let notes = Notes {
        raw: Vec::new(),
        fault: Some("its properties cannot be read".into()),
    };
    Some((AMQPFrame::Header(channel, header), notes))
}

/// When the short string at `text` of `frame` is not UTF-8: keep its
/// octets (for `field`, if it is one the delivery keeps) and write `?` over
/// each octet that is not part of UTF-8 text.
fn fix(
    frame: &mut [u8],
    text: std::ops::Range<usize>,
    field: Option<TextField>,
    notes: &mut Notes,
) {
    let Some(bytes) = frame.get_mut(text) else {
        return;
    };
    if std::str::from_utf8(bytes).is_ok() {
        return;
    }
    if let Some(field) = field {
        notes.raw.push(RawText {
            field,
            bytes: bytes.to_vec(),
        });
    }
    let mut at = 0;
    let chunks: Vec<(usize, usize)> = bytes
        .utf8_chunks()
        .map(|c| (c.valid().len(), c.invalid().len()))
        .collect();
    for (valid, invalid) in chunks {
        at += valid;
        bytes[at..at + invalid].fill(b'?');
        at += invalid;
    }
}

#[cfg(test)]
mod tests;
