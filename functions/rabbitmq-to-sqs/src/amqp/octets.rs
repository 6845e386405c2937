//! Reading AMQP's fixed-size fields and short strings out of a frame's
//! bytes, without parsing the frame: what the read buffer, the nesting walk
//! and the mending of unreadable frames share.

/// The big-endian 32-bit length at `at` in `bytes`, if they hold it.
pub(super) fn u32_at(bytes: &[u8], at: usize) -> Option<usize> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    usize::try_from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])).ok()
}

/// The big-endian 16-bit number at `at` in `bytes`, if they hold it.
pub(super) fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    let b = bytes.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

/// The big-endian 64-bit number at `at` in `bytes`, if they hold it.
pub(super) fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let b = bytes.get(at..at.checked_add(8)?)?;
    let mut n = [0u8; 8];
    n.copy_from_slice(b);
    Some(u64::from_be_bytes(n))
}

/// Where the text of the short string at `at` lies (its length octet
/// first), if `bytes` hold all of it.
pub(super) fn short_string_at(bytes: &[u8], at: usize) -> Option<std::ops::Range<usize>> {
    let len = usize::from(*bytes.get(at)?);
    let text = at + 1..at + 1 + len;
    (text.end <= bytes.len()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_big_endian_and_only_when_whole() {
        let b = [0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(u32_at(&b, 0), Some(0x0102));
        assert_eq!(u16_at(&b, 2), Some(0x0102));
        assert_eq!(u64_at(&b, 2), Some(0x0102_0304_0506_0708));
        assert_eq!(u32_at(&b, 7), None);
        assert_eq!(u16_at(&b, 9), None);
        assert_eq!(u64_at(&b, 3), None);
        assert_eq!(u32_at(&b, usize::MAX), None);
    }

    #[test]
    fn a_short_string_is_found_by_its_length_octet() {
        let b = [3, b'a', b'b', b'c', 9, b'x'];
        assert_eq!(short_string_at(&b, 0), Some(1..4));
        assert_eq!(short_string_at(&b, 4), None, "9 octets announced, 1 there");
        assert_eq!(short_string_at(&b, 6), None);
    }
}
