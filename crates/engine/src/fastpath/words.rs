//! Byte scans eight bytes at a time (one `u64`), for the short runs of coloured output: the text
//! between two colour sequences and the parameters of a sequence are a few bytes long, where a
//! loop a byte at a time (a bounds check and a compare or two per byte) or a call into `memchr`
//! cost more than the rest of the line's handling.
//!
//! Every byte of a word is tested on its own: the sums below never carry into the next byte, so
//! a mark is exact for each byte, not only for the first.

const LOW7: u64 = u64::from_ne_bytes([0x7f; 8]);
const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);

/// Each byte of a word set to `b`.
const fn splat(b: u8) -> u64 {
    u64::from_ne_bytes([b; 8])
}

/// The 8 bytes at `i`, the first in the lowest bits (whatever the machine's byte order).
fn word_at(buf: &[u8], i: usize) -> Option<u64> {
    let bytes: [u8; 8] = buf.get(i..i.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// The high bit of each byte of `word` set where that byte is in `lo..=hi` (`lo <= hi < 0x80`).
/// The 7-bit value plus at most 0x80 stays below 0x100: nothing carries between bytes.
pub(super) const fn in_range(word: u64, lo: u8, hi: u8) -> u64 {
    let low = word & LOW7;
    let at_least_lo = low + splat(0x80 - lo);
    let above_hi = low + splat(0x7f - hi);
    at_least_lo & !above_hi & !word & HIGH
}

/// Where the first byte at or after `from` is that ends a run: one `ends` marks (the high bit of
/// its byte, exact per byte, as [`in_range`] makes it) or `keeps` refuses (the same test on one
/// byte, for the last few bytes of `buf`); `buf.len()` when none does.
pub(super) fn run(
    buf: &[u8],
    from: usize,
    ends: impl Fn(u64) -> u64,
    keeps: impl Fn(u8) -> bool,
) -> usize {
    let mut i = from;
    while let Some(word) = word_at(buf, i) {
        let marks = ends(word) & HIGH;
        if marks != 0 {
            return i + (marks.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    let tail = buf.get(i..).unwrap_or_default();
    i + tail.iter().position(|&b| !keeps(b)).unwrap_or(tail.len())
}

/// Where the first `byte` (ASCII) in `buf` is, like `memchr`, for a byte usually found within
/// a few words (the ESC that starts a coloured line's next sequence): the first 32 bytes are
/// looked at here, the rest by `memchr`.
#[inline]
pub(crate) fn find_byte(byte: u8, buf: &[u8]) -> Option<usize> {
    debug_assert!(byte.is_ascii());
    let mut i = 0;
    while i < 32 {
        let Some(word) = word_at(buf, i) else {
            return buf[i..].iter().position(|&b| b == byte).map(|p| i + p);
        };
        let found = in_range(word, byte, byte);
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    memchr::memchr(byte, &buf[i..]).map(|p| i + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte values at the edges of each test, where a carry between bytes would show, and
    /// plain letters.
    const ALPHABET: [u8; 24] = [
        0x00, 0x01, 0x1a, 0x1b, 0x1c, 0x1f, 0x20, 0x21, 0x2f, 0x30, 0x39, 0x3a, 0x3b, 0x3f, 0x40,
        0x5f, 0x7e, 0x7f, 0x80, 0x9b, 0xa0, 0xff, b'a', b'5',
    ];

    fn byte_at_a_time(buf: &[u8], from: usize, keeps: impl Fn(u8) -> bool) -> usize {
        from + buf[from..].iter().take_while(|&&b| keeps(b)).count()
    }

    fn check(buf: &[u8]) {
        let printable = |b: u8| (0x20..=0x7e).contains(&b);
        assert_eq!(
            super::super::printable_run(buf),
            byte_at_a_time(buf, 0, printable),
            "{buf:x?}"
        );
        assert_eq!(find_byte(0x1b, buf), memchr::memchr(0x1b, buf), "{buf:x?}");
    }

    #[test]
    fn each_byte_value_at_each_place_ends_a_run_where_it_should() {
        for len in 0..40 {
            for at in 0..len {
                for bad in 0..=255u8 {
                    let mut buf = vec![b'5'; len];
                    buf[at] = bad;
                    check(&buf);
                }
            }
        }
    }

    #[test]
    fn the_word_scans_agree_with_a_byte_at_a_time_on_random_bytes() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..50_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 70) as usize;
            // Mostly one kind of byte, so that runs are long enough to span words.
            let common = ALPHABET[(seed >> 8) as usize % ALPHABET.len()];
            let buf: Vec<u8> = (0..len)
                .map(|k| {
                    let r = (seed >> (k % 50)) as usize ^ (k * 7);
                    if r.is_multiple_of(3) {
                        ALPHABET[r / 3 % ALPHABET.len()]
                    } else {
                        common
                    }
                })
                .collect();
            check(&buf);
        }
    }

    #[test]
    fn the_byte_search_looks_past_its_first_words() {
        for len in [31, 32, 33, 40, 100, 1000] {
            for at in (0..len).step_by(3) {
                let mut buf = vec![b'x'; len];
                buf[at] = 0x1b;
                assert_eq!(find_byte(0x1b, &buf), Some(at));
            }
            assert_eq!(find_byte(0x1b, &vec![b'x'; len]), None);
        }
    }
}
