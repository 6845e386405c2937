//! How deep a message's headers nest, found before they are parsed.
//!
//! amq-protocol parses field tables and arrays recursively, with no depth
//! limit, and each level takes about 1.6 KB of stack: a publisher's header
//! nesting some 5,000 arrays (25 KB, within one frame) would overflow the
//! main thread's 8 MiB stack, and the process would abort before the drain
//! sees the message, at every poll of its queue. So the headers table of
//! each content header is walked here first, without recursion; when it
//! nests deeper than [`MAX_NESTING`] ([`too_deep`]), the frame is parsed
//! without it and the delivery says why ([`super::Delivery::fault`]),
//! so the drain can reject it to the dead-letter exchange. The same walk
//! finds every entry's name at any depth, for mending names that are not
//! UTF-8 ([`super::mend`]).

use std::ops::Range;

use super::octets::u32_at;

/// The deepest nesting of tables and arrays parsed (`x-death` needs 3;
/// the mapping writes at most 16 levels as JSON).
pub(super) const MAX_NESTING: usize = 64;

/// How deep the field table at the start of `bytes` (its length first)
/// nests, counted without recursion, as far as it is well formed: where it
/// is not, the parser stops at the same place and no deeper.
pub(super) fn table_depth(bytes: &[u8]) -> usize {
    walk_table(bytes, |_| {})
}

/// Walk the field table at the start of `bytes` (its length first) without
/// recursion, as far as it is well formed: how deep it nests, and where the
/// name (a short string's text) of each entry lies, at any depth, handed to
/// `name` in order.
pub(super) fn walk_table(bytes: &[u8], mut name: impl FnMut(Range<usize>)) -> usize {
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
            let Some(len) = bytes.get(at) else { break };
            let text = at + 1..at + 1 + usize::from(*len);
            if text.end > end {
                break;
            }
            at = text.end;
            name(text);
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

/// How deep the headers of the content header frame `frame` (whole, its
/// end octet included) nest, when that is deeper than [`MAX_NESTING`]: the
/// frame must then be parsed without them
/// ([`super::layout::without_headers`]).
pub(super) fn too_deep(frame: &[u8]) -> Option<usize> {
    let table = super::layout::headers_table(frame)?;
    let depth = table_depth(frame.get(table)?);
    (depth > MAX_NESTING).then_some(depth)
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
