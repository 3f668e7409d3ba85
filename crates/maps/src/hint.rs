//! SWAR hint matching: compare one hint byte against eight stored hints with a few word operations.
//!
//! ```text
//!  word  = 8 hint bytes (little-endian load)      h0 h1 h2 h3 h4 h5 h6 h7
//!  x     = word ^ (hint * 0x0101_0101_0101_0101)  zero byte <=> match
//!  t     = ((x & 0x7f..7f) + 0x7f..7f) | x         high bit set <=> byte non-zero (exact: no carry
//!                                                  crosses bytes, unlike the `x - 0x01..` trick)
//!  mask  = !t & 0x80..80 & valid                   one bit per matching position
//! ```
//!
//! A hint is eight hash bits the entry's address did not use, so two different keys in the same
//! piece share a hint with probability 1/256 (Ruby's ar_table hints). Callers decode a key only for
//! positions in the mask. This is the single place hint matching happens; a SIMD variant would
//! replace these functions and nothing else.

const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HI: u64 = 0x8080_8080_8080_8080;
const ONES: u64 = 0x0101_0101_0101_0101;

/// Bit 8*i+7 set for each byte i of `word` equal to `hint`, among the first `count` bytes (<= 8).
#[inline]
pub fn match_word(word: u64, hint: u8, count: usize) -> u64 {
    let x = word ^ (u64::from(hint).wrapping_mul(ONES));
    let t = ((x & LO7).wrapping_add(LO7)) | x;
    let valid = if count >= 8 {
        u64::MAX
    } else {
        (1u64 << (count * 8)) - 1
    };
    !t & HI & valid
}

/// Two words that together hold every byte of `s` (at most 16 bytes): its first and last 8
/// bytes, its first and last 4, or its first byte and its middle and last ones. Equal slices of
/// one length give equal words and different ones different words; SmallMap hashes them.
#[inline(always)]
pub fn edge_words(s: &[u8]) -> (u64, u64) {
    let n = s.len();
    debug_assert!(n <= 16);
    if n >= 8 {
        let w = |at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8"));
        (w(0), w(n - 8))
    } else if n >= 4 {
        let w = |at: usize| u64::from(u32::from_le_bytes(s[at..at + 4].try_into().expect("4")));
        (w(0), w(n - 4))
    } else if n > 0 {
        (
            u64::from(s[0]),
            u64::from(s[n / 2]) << 8 | u64::from(s[n - 1]),
        )
    } else {
        (0, 0)
    }
}

/// `a == b` for the short keys a hint match leads to, without a call to `memcmp`: keys of up to
/// 16 bytes are compared as their two [`edge_words`]; longer keys fall back to the slice
/// compare. The candidate is decoded only after its hint matched, so this runs about once per
/// lookup.
#[inline(always)]
pub fn key_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        if n > 16 {
            return a == b;
        }
        // The common case spelled out: through `edge_words` SmallMap hits measured ~8% slower.
        let w = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8"));
        return (w(a, 0) ^ w(b, 0)) | (w(a, n - 8) ^ w(b, n - 8)) == 0;
    }
    let ((a0, a1), (b0, b1)) = (edge_words(a), edge_words(b));
    (a0 ^ b0) | (a1 ^ b1) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_eq_is_slice_equality() {
        let mut x = 5u64;
        for _ in 0..20_000 {
            x = crate::hash::splitmix(x);
            let n = (x % 40) as usize;
            let a: Vec<u8> = (0..n).map(|i| (x >> (i % 7)) as u8 & 3).collect();
            let mut b = a.clone();
            match (x >> 50) % 3 {
                0 => {}
                1 if n > 0 => b[(x >> 20) as usize % n] ^= 1 << ((x >> 30) % 8),
                _ => b.truncate(n.saturating_sub(1)),
            }
            assert_eq!(key_eq(&a, &b), a == b, "{a:?} {b:?}");
            assert_eq!(key_eq(&b, &a), a == b);
        }
    }

    /// Positions in `hints` equal to `hint`, eight at a time, as `Page::find` walks a run.
    fn matches(hints: &[u8], hint: u8) -> Vec<usize> {
        let mut out = vec![];
        for (base, chunk) in hints.chunks(8).enumerate() {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            let mut mask = match_word(u64::from_le_bytes(buf), hint, chunk.len());
            while mask != 0 {
                out.push(base * 8 + mask.trailing_zeros() as usize / 8);
                mask &= mask - 1;
            }
        }
        out
    }

    #[test]
    fn matches_exactly_the_equal_bytes() {
        let mut x = 99u64;
        for _ in 0..2000 {
            x = crate::hash::splitmix(x);
            let n = (x % 20) as usize;
            let hints: Vec<u8> = (0..n).map(|i| ((x >> (i % 8)) as u8) & 0x83).collect();
            let hint = (x >> 40) as u8 & 0x83;
            let want: Vec<usize> = (0..n).filter(|&i| hints[i] == hint).collect();
            assert_eq!(matches(&hints, hint), want);
        }
        // 0x80 / 0x00 neighbours are where the naive trick gives false positives.
        assert_eq!(matches(&[0x00, 0x80, 0x01, 0x00], 0x00), vec![0, 3]);
    }
}
