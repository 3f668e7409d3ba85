//! LEB128 varints: seven bits per byte, least significant group first, high bit = "more follows".
//!
//! ```text
//!  value          bytes   example
//!  0 ..= 127        1     0x05             -> 5
//!  128 ..= 16383    2     0x80 0x01        -> 128
//!  u64::MAX        10     0xff x9, 0x01
//! ```
//!
//! Lengths of keys and values are varints. Integer *values* of the IntMap are instead stored as
//! minimal little-endian byte strings with the byte count in a nibble ([`le_len`]): a random
//! 64-bit value then costs 8 bytes plus half a byte, where LEB128 would cost 10.

/// Most bytes a varint takes (a u64 has ten groups of seven bits).
pub const LEN_MAX: usize = 10;

/// Bytes the varint of `v` takes.
#[inline]
pub fn len(v: u64) -> usize {
    // 1 + floor(bits / 7), with bits = 0 for v = 0.
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Writes `v` at the start of `out`, returns the bytes written. `out` must have room for `len(v)`.
#[inline]
pub fn put(out: &mut [u8], mut v: u64) -> usize {
    let mut i = 0;
    while v >= 0x80 {
        out[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

/// Writes `v` as exactly `n` LEB128 bytes (`len(v) <= n <= LEN_MAX`): over-long forms carry
/// 0x80 continuation bytes, which [`get`] reads as the same value.
pub fn put_padded(out: &mut [u8], v: u64, n: usize) {
    debug_assert!(len(v) <= n && n <= LEN_MAX);
    for (i, b) in out[..n].iter_mut().enumerate() {
        let more = if i + 1 < n { 0x80 } else { 0 };
        *b = ((v >> (7 * i).min(63)) as u8 & 0x7f) | more;
    }
}

/// Reads a varint at the start of `bytes`: `(value, bytes read)`. Panics on truncated input
/// (only the map's own bytes are ever decoded; `validate` checks them). One-byte varints (every
/// length below 64 after the `<< 1` flag) take the inlined fast path.
#[inline(always)]
pub fn get(bytes: &[u8]) -> (u64, usize) {
    let b0 = bytes[0];
    if b0 < 0x80 {
        (u64::from(b0), 1)
    } else {
        get_long(bytes)
    }
}

#[cold]
#[inline(never)]
fn get_long(bytes: &[u8]) -> (u64, usize) {
    let mut v = u64::from(bytes[0] & 0x7f);
    let mut shift = 7;
    let mut i = 1;
    // At most 10 bytes: the loop is bounded by the shift.
    while shift < 64 {
        let b = bytes[i];
        v |= u64::from(b & 0x7f) << shift;
        i += 1;
        if b < 0x80 {
            return (v, i);
        }
        shift += 7;
    }
    panic!("varint longer than 10 bytes");
}

/// Appends the varint of `v` to `out`.
#[inline]
pub fn push(out: &mut Vec<u8>, v: u64) {
    let mut buf = [0u8; LEN_MAX];
    let n = put(&mut buf, v);
    out.extend_from_slice(&buf[..n]);
}

/// Reads a varint that may be truncated or over-long: `None` instead of a panic, for bytes that
/// did not come from this crate's own writers.
pub fn get_checked(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(LEN_MAX) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some((v, i + 1));
        }
    }
    None
}

/// ZigZag: signed integers to unsigned ones that are small when the magnitude is small
/// (0, -1, 1, -2 … map to 0, 1, 2, 3 …), so a small negative number takes a short varint.
#[inline]
pub fn zigzag(i: i64) -> u64 {
    ((i << 1) ^ (i >> 63)) as u64
}

/// The inverse of [`zigzag`].
#[inline]
pub fn unzigzag(u: u64) -> i64 {
    (u >> 1) as i64 ^ -((u & 1) as i64)
}

/// Minimal little-endian byte count of `v` (0 for 0, 8 for values >= 2^56).
#[inline]
pub fn le_len(v: u64) -> usize {
    (64 - v.leading_zeros() as usize).div_ceil(8)
}

/// Writes the low `n` bytes of `v` little-endian.
#[inline]
pub fn put_le(out: &mut [u8], v: u64, n: usize) {
    for (i, b) in out[..n].iter_mut().enumerate() {
        *b = (v >> (8 * i)) as u8;
    }
}

/// Reads `n <= 8` little-endian bytes. A byte loop rather than `copy_from_slice`, which would
/// be a call to `memcpy` for a variable `n` on the lookup path.
#[inline]
pub fn get_le(bytes: &[u8], n: usize) -> u64 {
    if bytes.len() >= 8 {
        let word = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        return if n >= 8 {
            word
        } else {
            word & ((1u64 << (8 * n)) - 1)
        };
    }
    let mut v = 0u64;
    for (i, &b) in bytes[..n].iter().enumerate() {
        v |= u64::from(b) << (8 * i);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_and_checked_reads_refuse_bad_input() {
        for i in [0, -1, 1, i64::MIN, i64::MAX, -64, 63, 64] {
            assert_eq!(unzigzag(zigzag(i)), i);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(get_checked(&[]), None);
        assert_eq!(get_checked(&[0x80]), None);
        assert_eq!(get_checked(&[0xff; 11]), None);
    }

    #[test]
    fn round_trips() {
        let mut buf = [0u8; 10];
        let mut x = 0x1234_5678u64;
        let mut vals = vec![0, 1, 127, 128, 16383, 16384, u64::MAX, u64::MAX >> 1];
        for _ in 0..1000 {
            x = crate::hash::splitmix(x);
            vals.push(x >> (x % 64));
        }
        for v in vals {
            let n = put(&mut buf, v);
            assert_eq!(n, len(v));
            assert_eq!(get(&buf), (v, n));
            assert_eq!(get_checked(&buf[..n]), Some((v, n)));
            let mut pushed = Vec::new();
            push(&mut pushed, v);
            assert_eq!(pushed, &buf[..n]);
            let m = le_len(v);
            put_le(&mut buf, v, m);
            assert_eq!(get_le(&buf, m), v);
        }
    }
}
