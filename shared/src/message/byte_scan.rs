//! Finding, in text, the next byte a rule cares about: the one scan behind
//! [`crate::message::encode::is_sqs_text`] (control characters and the lead
//! byte of U+FFFE and U+FFFF) and the JSON escaper of
//! [`crate::message::json`] (control characters, `"` and `\`).
//!
//! The text is read 32 bytes at a time: each of the block's four 64-bit
//! words is tested for the wanted bytes all at once (a word has a byte
//! below `n` when `(x - n×0x01…) & !x` has a high bit set, and a byte equal
//! to `e` when `x ^ e×0x01…` has a zero byte), the four results are OR-ed,
//! and only a block with a hit is read byte by byte, to say where. One
//! branch per 32 bytes, about two instructions a byte: on a 55 KB JSON body
//! the escape scan and copy cost about a fifth of serde_json's byte-by-byte
//! escaping (bench/notes, "per-byte path"). The compiler does not vectorise
//! a byte loop at the functions' `opt-level = "s"`, and `unsafe` SIMD is
//! kept out of the crate, so the words are plain integers.

/// The block read at once.
const BLOCK: usize = 32;
const ONES: u64 = u64::from_ne_bytes([1; 8]);
const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);

/// What a scan looks for.
pub(crate) trait Wanted {
    /// Whether `b` is wanted.
    fn byte(b: u8) -> bool;
    /// Non-zero when a byte of `x` is wanted, and only then.
    fn word(x: u64) -> u64;
}

/// The bytes JSON escapes inside a string: control characters, `"`, `\`.
pub(crate) struct JsonEscaped;

impl Wanted for JsonEscaped {
    #[inline(always)]
    fn byte(b: u8) -> bool {
        b < 0x20 || b == b'"' || b == b'\\'
    }

    #[inline(always)]
    fn word(x: u64) -> u64 {
        // All three values are below 0x80, so one and-not with `x` serves
        // the three tests: a byte of `q` or `s` has its high bit where the
        // byte of `x` has it.
        let q = x ^ (ONES * u64::from(b'"'));
        let s = x ^ (ONES * u64::from(b'\\'));
        (x.wrapping_sub(ONES * 0x20) | q.wrapping_sub(ONES) | s.wrapping_sub(ONES)) & !x & HIGH
    }
}

/// The bytes the SQS character rule must look at in valid UTF-8: control
/// characters (tab, line feed and carriage return pass) and `0xEF`, the
/// lead byte of U+FFFE and U+FFFF.
pub(crate) struct SqsSuspect;

impl Wanted for SqsSuspect {
    #[inline(always)]
    fn byte(b: u8) -> bool {
        b < 0x20 || b == 0xEF
    }

    #[inline(always)]
    fn word(x: u64) -> u64 {
        let e = x ^ (ONES * 0xEF);
        ((x.wrapping_sub(ONES * 0x20) & !x) | (e.wrapping_sub(ONES) & !e)) & HIGH
    }
}

#[inline(always)]
fn word(block: &[u8; BLOCK], i: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(bytes) = block.get(i * 8..i * 8 + 8) {
        w.copy_from_slice(bytes);
    }
    u64::from_ne_bytes(w)
}

/// The offset of the first byte of `bytes` that `W` wants.
#[inline(always)]
pub(crate) fn find<W: Wanted>(bytes: &[u8]) -> Option<usize> {
    let (blocks, tail) = bytes.as_chunks::<BLOCK>();
    for (n, block) in blocks.iter().enumerate() {
        let hit = W::word(word(block, 0))
            | W::word(word(block, 1))
            | W::word(word(block, 2))
            | W::word(word(block, 3));
        if hit != 0 {
            return block
                .iter()
                .position(|&b| W::byte(b))
                .map(|i| n * BLOCK + i);
        }
    }
    tail.iter()
        .position(|&b| W::byte(b))
        .map(|i| blocks.len() * BLOCK + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_wanted_byte_at_every_offset() {
        // Across blocks, in the tail, and with a second one after it.
        for len in [0usize, 1, 31, 32, 33, 64, 95, 100] {
            let mut text = vec![b'a'; len];
            assert_eq!(find::<JsonEscaped>(&text), None, "{len}");
            for at in 0..len {
                for bad in [0u8, 0x1f, b'"', b'\\'] {
                    text[at] = bad;
                    if at + 3 < len {
                        text[at + 3] = b'"';
                    }
                    assert_eq!(
                        find::<JsonEscaped>(&text),
                        Some(at),
                        "{bad} at {at} of {len}"
                    );
                    text.fill(b'a');
                }
            }
        }
        // Bytes above the bound and not named pass, 0x80 and up included.
        let high: Vec<u8> = (0x20..=0xffu8)
            .filter(|&b| b != b'"' && b != b'\\')
            .collect();
        assert_eq!(find::<JsonEscaped>(&high), None);
        let clean: Vec<u8> = (0x20..=0xffu8).filter(|&b| b != 0xEF).collect();
        assert_eq!(find::<SqsSuspect>(&clean), None);
        let mut with_ef = clean.clone();
        with_ef.insert(70, 0xEF);
        assert_eq!(find::<SqsSuspect>(&with_ef), Some(70));
        assert_eq!(find::<SqsSuspect>(b"\t"), Some(0));
    }

    proptest::proptest! {
        /// The first wanted byte, as a byte-by-byte search finds it, for
        /// any bytes (biased towards the wanted ones and their neighbours).
        #[test]
        fn the_same_answer_as_a_byte_loop(
            bytes in proptest::collection::vec(proptest::prop_oneof![
                8 => 0x20u8..0x7f,
                1 => proptest::num::u8::ANY,
                1 => proptest::sample::select(vec![0u8, 0x1f, 0x20, b'"', b'\\', 0x21, 0x5b, 0x5d, 0xee, 0xef, 0xf0, 0x7f, 0x80, 0xa2, 0xdc]),
            ], 0..140),
        ) {
            proptest::prop_assert_eq!(find::<JsonEscaped>(&bytes), bytes.iter().position(|&b| JsonEscaped::byte(b)));
            proptest::prop_assert_eq!(find::<SqsSuspect>(&bytes), bytes.iter().position(|&b| SqsSuspect::byte(b)));
        }
    }
}
