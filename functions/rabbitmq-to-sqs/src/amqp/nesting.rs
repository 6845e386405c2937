//! How deep a message's headers nest, found before they are parsed.
//!
//! amq-protocol parses field tables and arrays recursively, with no depth
//! limit, and each level takes about 1.6 KB of stack: a publisher's header
//! nesting some 5,000 arrays (25 KB, within one frame) would overflow the
//! main thread's 8 MiB stack, and the process would abort before the drain
//! sees the message, at every poll of its queue. So the headers table of
//! each content header is walked here first, without recursion; when it
//! nests deeper than [`MAX_NESTING`], the frame is parsed without it
//! ([`without_headers`]) and the delivery says why ([`super::Delivery::fault`]),
//! so the drain can reject it to the dead-letter exchange.

use super::wire::u32_at;

/// The deepest nesting of tables and arrays parsed (`x-death` needs 3;
/// the mapping writes at most 16 levels as JSON).
pub(super) const MAX_NESTING: usize = 64;

/// The `headers` property's bit in the content header's property flags.
const HEADERS_FLAG: u16 = 0x2000;
/// `content-type` and `content-encoding`, the two short strings before it.
const BEFORE_HEADERS: [u16; 2] = [0x8000, 0x4000];
/// Class id, weight and body size come before the property flags.
const FLAGS_AT: usize = 12;

/// How deep the field table at the start of `bytes` (its length first)
/// nests, counted without recursion, as far as it is well formed: where it
/// is not, the parser stops at the same place and no deeper.
pub(super) fn table_depth(bytes: &[u8]) -> usize {
    let Some(len) = u32_at(bytes, 0) else {
        return 0;
    };
    let Some(end) = len.checked_add(4).filter(|e| *e <= bytes.len()) else {
        return 0;
    };
    // The open containers: where each ends, and whether it is a table
    // (its entries have names) rather than an array.
    let mut open: Vec<(usize, bool)> = vec![(end, true)];
    let mut deepest = 1;
    let mut at = 4;
    while let Some(&(end, table)) = open.last() {
        if at == end {
            open.pop();
            continue;
        }
        if at > end {
            break;
        }
        if table {
            let Some(name) = bytes.get(at) else { break };
            at += 1 + usize::from(*name);
        }
        let Some(kind) = bytes.get(at) else { break };
        at += 1;
        let size = match kind {
            b't' | b'b' | b'B' => 1,
            b's' | b'U' | b'u' => 2,
            b'I' | b'i' | b'f' => 4,
            b'L' | b'l' | b'd' | b'T' => 8,
            b'D' => 5,
            b'V' => 0,
            b'S' | b'x' => match u32_at(bytes, at).and_then(|n| n.checked_add(4)) {
                Some(n) => n,
                None => break,
            },
            b'A' | b'F' => {
                let Some(inner) = u32_at(bytes, at).and_then(|n| n.checked_add(at + 4)) else {
                    break;
                };
                if inner > end {
                    break;
                }
                open.push((inner, *kind == b'F'));
                deepest = deepest.max(open.len());
                at += 4;
                continue;
            }
            _ => break,
        };
        at = at.saturating_add(size);
    }
    deepest
}

/// Where the headers table starts in a content header's payload, if it
/// has one.
fn headers_at(payload: &[u8]) -> Option<usize> {
    let flags = payload.get(FLAGS_AT..FLAGS_AT + 2)?;
    let flags = u16::from_be_bytes([flags[0], flags[1]]);
    if flags & HEADERS_FLAG == 0 || flags & 1 != 0 {
        return None;
    }
    let mut at = FLAGS_AT + 2;
    for bit in BEFORE_HEADERS {
        if flags & bit != 0 {
            at += 1 + usize::from(*payload.get(at)?);
        }
    }
    (at < payload.len()).then_some(at)
}

/// When the headers of the content header frame `frame` (type 2, whole,
/// its end octet included) nest deeper than [`MAX_NESTING`]: how deep,
/// and the same frame without them.
pub(super) fn without_headers(frame: &[u8]) -> Option<(usize, Vec<u8>)> {
    let payload = frame.get(7..frame.len().checked_sub(1)?)?;
    let at = headers_at(payload)?;
    let depth = table_depth(&payload[at..]);
    if depth <= MAX_NESTING {
        return None;
    }
    let table_end = u32_at(payload, at)?.checked_add(at + 4)?;
    let rest = payload.get(table_end..)?;
    let mut out = Vec::with_capacity(frame.len());
    out.extend_from_slice(&frame[..3]);
    let size = u32::try_from(at + rest.len()).ok()?;
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(&payload[..FLAGS_AT]);
    let flags = u16::from_be_bytes([payload[FLAGS_AT], payload[FLAGS_AT + 1]]) & !HEADERS_FLAG;
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&payload[FLAGS_AT + 2..at]);
    out.extend_from_slice(rest);
    out.push(0xCE);
    Some((depth, out))
}

/// A table whose one entry nests `levels` arrays, innermost holding a
/// boolean: built from the inside out, without recursion.
#[cfg(test)]
pub(crate) fn nested(levels: usize) -> Vec<u8> {
    let mut inner: Vec<u8> = vec![b't', 1];
    for _ in 0..levels {
        let mut outer = vec![b'A'];
        outer.extend_from_slice(&(inner.len() as u32).to_be_bytes());
        outer.extend_from_slice(&inner);
        inner = outer;
    }
    let mut entry = vec![1, b'k'];
    entry.extend_from_slice(&inner);
    let mut table = (entry.len() as u32).to_be_bytes().to_vec();
    table.extend_from_slice(&entry);
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_is_counted_without_recursion() {
        assert_eq!(table_depth(&[0, 0, 0, 0]), 1);
        assert_eq!(table_depth(&nested(0)), 1);
        assert_eq!(table_depth(&nested(3)), 4);
        // Far deeper than any stack would take recursively.
        assert_eq!(table_depth(&nested(200_000)), 200_001);
    }

    #[test]
    fn malformed_tables_stop_the_count_where_the_parser_stops() {
        let mut t = nested(10);
        t.truncate(20);
        assert!(table_depth(&t) <= 10);
        assert_eq!(table_depth(&[0, 0, 0, 9, 1]), 0);
        assert_eq!(table_depth(&[]), 0);
        let unknown = [0, 0, 0, 3, 1, b'k', b'?'];
        assert_eq!(table_depth(&unknown), 1);
    }
}
