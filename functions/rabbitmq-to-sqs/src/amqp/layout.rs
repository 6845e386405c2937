//! Where a delivery's fields lie in its frames, found without parsing them:
//! the short strings of `basic.deliver` and `basic.get-ok` and of a content
//! header's properties, the headers table, the body size. The read buffer
//! uses it to look at a content header's headers before the codec does
//! ([`super::nesting`]), and to mend a frame the codec refuses
//! ([`super::mend`]).
//!
//! A frame here is whole: type (1 octet), channel (2), payload size (4),
//! payload, end octet.

use std::ops::Range;

use super::TextField;
use super::octets::{short_string_at, u16_at, u32_at, u64_at};

/// Where the payload starts in a frame.
const PAYLOAD_AT: usize = 7;
/// A frame's type: a method.
pub(super) const METHOD: u8 = 1;
/// A frame's type: a content header.
pub(super) const HEADER: u8 = 2;
/// A frame's type: a content body.
pub(super) const BODY: u8 = 3;
/// The octet that ends every frame.
pub(super) const FRAME_END: u8 = 0xCE;

/// The `basic` class, and its methods that carry a delivery.
const BASIC: u16 = 60;
const DELIVER: u16 = 60;
const GET_OK: u16 = 71;

/// In a content header's payload: class id (2), weight (2) and body size
/// (8) come before the property flags.
const FLAGS_AT: usize = 12;
/// The property flags, highest bit first, and what each property is.
const CONTENT_TYPE: u16 = 0x8000;
const CONTENT_ENCODING: u16 = 0x4000;
const HEADERS: u16 = 0x2000;
const DELIVERY_MODE: u16 = 0x1000;
const PRIORITY: u16 = 0x0800;
const CORRELATION_ID: u16 = 0x0400;
const REPLY_TO: u16 = 0x0200;
const EXPIRATION: u16 = 0x0100;
const MESSAGE_ID: u16 = 0x0080;
const TIMESTAMP: u16 = 0x0040;
const TYPE: u16 = 0x0020;
const USER_ID: u16 = 0x0010;
const APP_ID: u16 = 0x0008;
const CLUSTER_ID: u16 = 0x0004;
/// More flags follow (never set by a basic content header).
const CONTINUED: u16 = 0x0001;

/// What a property is, in flag order.
enum Kind {
    Short(TextField),
    Table,
    Octet,
    LongLong,
}

const PROPERTIES: [(u16, Kind); 14] = [
    (CONTENT_TYPE, Kind::Short(TextField::ContentType)),
    (CONTENT_ENCODING, Kind::Short(TextField::ContentEncoding)),
    (HEADERS, Kind::Table),
    (DELIVERY_MODE, Kind::Octet),
    (PRIORITY, Kind::Octet),
    (CORRELATION_ID, Kind::Short(TextField::CorrelationId)),
    (REPLY_TO, Kind::Short(TextField::ReplyTo)),
    (EXPIRATION, Kind::Short(TextField::Expiration)),
    (MESSAGE_ID, Kind::Short(TextField::MessageId)),
    (TIMESTAMP, Kind::LongLong),
    (TYPE, Kind::Short(TextField::Type)),
    (USER_ID, Kind::Short(TextField::UserId)),
    (APP_ID, Kind::Short(TextField::AppId)),
    (CLUSTER_ID, Kind::Short(TextField::ClusterId)),
];

/// A frame's type, if it has one.
pub(super) fn frame_type(frame: &[u8]) -> Option<u8> {
    frame.first().copied()
}

/// The payload of a whole frame.
pub(super) fn payload(frame: &[u8]) -> Option<&[u8]> {
    frame.get(PAYLOAD_AT..frame.len().checked_sub(1)?)
}

/// The short strings of a delivery's method frame (`basic.deliver` or
/// `basic.get-ok`) and where each lies in the frame: the field it is
/// (`None`: the consumer tag, this client's own) and its text's range.
/// `None` for any other frame, or one too short for its fields.
pub(super) fn delivery_strings(frame: &[u8]) -> Option<Vec<(Option<TextField>, Range<usize>)>> {
    if frame_type(frame)? != METHOD {
        return None;
    }
    let p = payload(frame)?;
    if u16_at(p, 0)? != BASIC {
        return None;
    }
    let mut at = 4;
    let mut out = Vec::with_capacity(3);
    match u16_at(p, 2)? {
        DELIVER => {
            let tag = short_string_at(p, at)?;
            at = tag.end;
            out.push((None, tag));
        }
        GET_OK => {}
        _ => return None,
    }
    at += 8 + 1; // delivery tag, redelivered
    let exchange = short_string_at(p, at)?;
    let key = short_string_at(p, exchange.end)?;
    out.push((Some(TextField::Exchange), exchange));
    out.push((Some(TextField::RoutingKey), key));
    Some(
        out.into_iter()
            .map(|(f, r)| (f, r.start + PAYLOAD_AT..r.end + PAYLOAD_AT))
            .collect(),
    )
}

/// A content header's layout: its short-string properties and where each
/// lies, and where its headers table lies, as ranges of the frame.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct HeaderLayout {
    pub(super) strings: Vec<(TextField, Range<usize>)>,
    pub(super) headers: Option<Range<usize>>,
}

/// The layout of the content header frame `frame`, as far as its property
/// flags and lengths allow; `None` when it is not a content header or its
/// flags cannot be read.
pub(super) fn header_layout(frame: &[u8]) -> Option<HeaderLayout> {
    if frame_type(frame)? != HEADER {
        return None;
    }
    let p = payload(frame)?;
    let flags = u16_at(p, FLAGS_AT)?;
    if flags & CONTINUED != 0 {
        return None;
    }
    let mut layout = HeaderLayout::default();
    let mut at = FLAGS_AT + 2;
    for (bit, kind) in PROPERTIES {
        if flags & bit == 0 {
            continue;
        }
        match kind {
            Kind::Short(field) => {
                let text = short_string_at(p, at)?;
                at = text.end;
                layout
                    .strings
                    .push((field, text.start + PAYLOAD_AT..text.end + PAYLOAD_AT));
            }
            Kind::Table => {
                let end = u32_at(p, at)?.checked_add(at + 4)?;
                if end > p.len() {
                    return None;
                }
                layout.headers = Some(at + PAYLOAD_AT..end + PAYLOAD_AT);
                at = end;
            }
            Kind::Octet => at += 1,
            Kind::LongLong => at += 8,
        }
    }
    Some(layout)
}

/// Where the headers table lies in the content header frame `frame`
/// (its length first), if it has one. Only the two short strings before
/// it are read, so a frame whose later properties are unreadable still
/// has its headers found.
pub(super) fn headers_table(frame: &[u8]) -> Option<Range<usize>> {
    if frame_type(frame)? != HEADER {
        return None;
    }
    let p = payload(frame)?;
    let flags = u16_at(p, FLAGS_AT)?;
    if flags & HEADERS == 0 || flags & CONTINUED != 0 {
        return None;
    }
    let mut at = FLAGS_AT + 2;
    for bit in [CONTENT_TYPE, CONTENT_ENCODING] {
        if flags & bit != 0 {
            at = short_string_at(p, at)?.end;
        }
    }
    let end = u32_at(p, at)?.checked_add(at + 4)?;
    (end <= p.len()).then_some(at + PAYLOAD_AT..end + PAYLOAD_AT)
}

/// The content header frame `frame` without its headers table (and its
/// flag); `None` when it has none.
pub(super) fn without_headers(frame: &[u8]) -> Option<Vec<u8>> {
    let table = headers_table(frame)?;
    let p = payload(frame)?;
    let flags = u16_at(p, FLAGS_AT)? & !HEADERS;
    let size = u32::try_from(p.len() - table.len()).ok()?;
    let mut out = Vec::with_capacity(frame.len() - table.len());
    out.extend_from_slice(&frame[..3]);
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(&p[..FLAGS_AT]);
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&frame[PAYLOAD_AT + FLAGS_AT + 2..table.start]);
    out.extend_from_slice(&frame[table.end..]);
    Some(out)
}

/// A content header's class id and body size, read from its first
/// fields: what a delivery needs when nothing else of the header can be
/// read.
pub(super) fn class_and_body_size(frame: &[u8]) -> Option<(u16, u64)> {
    if frame_type(frame)? != HEADER {
        return None;
    }
    let p = payload(frame)?;
    Some((u16_at(p, 0)?, u64_at(p, 4)?))
}

/// A content body frame's payload, if `frame` is one and ends as a frame
/// must.
pub(super) fn body(frame: &[u8]) -> Option<&[u8]> {
    if frame_type(frame)? != BODY || frame.last() != Some(&FRAME_END) {
        return None;
    }
    payload(frame)
}

/// The channel of a whole frame.
pub(super) fn channel(frame: &[u8]) -> Option<u16> {
    u16_at(frame, 1)
}

#[cfg(test)]
pub(crate) mod tests;
