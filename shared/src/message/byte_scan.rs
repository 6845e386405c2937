//! Scanning text eight bytes at a time for the bytes a rule cares about:
//! those below a bound (control characters) and a few exact values. The one
//! word-at-a-time test behind [`crate::message::encode::is_sqs_text`] and the direct
//! client's JSON escape check (`direct::wire`); each reads byte by byte only
//! from the first word this finds something in.

const ONES: u64 = u64::from_ne_bytes([1; 8]);
const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);

/// Whether some byte of `x` is zero (exact for "some byte").
fn has_zero_byte(x: u64) -> bool {
    x.wrapping_sub(ONES) & !x & HIGH != 0
}

/// The length of the longest run of whole eight-byte words at the start of
/// `bytes` in which no byte is below `below` (at most 0x80) or equal to one
/// of `equal`. Everything from there on must be read byte by byte; nothing
/// before it holds such a byte.
#[inline]
pub(crate) fn clean_words(bytes: &[u8], below: u8, equal: &[u8]) -> usize {
    let mut clean = 0;
    for chunk in bytes.chunks_exact(8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_ne_bytes(word);
        // Some byte below `below`: exact for "some byte" when below <= 0x80.
        let low = x.wrapping_sub(ONES * u64::from(below)) & !x & HIGH != 0;
        if low
            || equal
                .iter()
                .any(|&e| has_zero_byte(x ^ (ONES * u64::from(e))))
        {
            break;
        }
        clean += 8;
    }
    clean
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_at_the_first_word_with_a_wanted_byte() {
        let mut text = [b'a'; 40];
        assert_eq!(clean_words(&text, 0x20, b"\""), 40);
        for at in 0..40 {
            for bad in [0u8, 0x1f, b'"'] {
                text[at] = bad;
                assert_eq!(clean_words(&text, 0x20, b"\""), at / 8 * 8, "{bad} at {at}");
                text[at] = b'a';
            }
        }
        // The tail shorter than a word is never counted clean.
        assert_eq!(clean_words(b"abcdefghij", 0x20, &[]), 8);
        assert_eq!(clean_words(b"", 0x20, &[]), 0);
        // Bytes above the bound and not in `equal` pass, 0x80 and up included.
        assert_eq!(
            clean_words(
                &[0x20, 0x7f, 0x80, 0xff, 0xee, 0xf0, b' ', b'~'],
                0x20,
                &[0xef]
            ),
            8
        );
        assert_eq!(
            clean_words(
                &[0x20, 0x7f, 0x80, 0xff, 0xef, 0xf0, b' ', b'~'],
                0x20,
                &[0xef]
            ),
            0
        );
    }
}
