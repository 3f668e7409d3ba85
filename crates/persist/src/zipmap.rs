//! Zipmaps: the string-to-string map Redis ≤ 2.6 wrote for small hashes (RDB type 9). Redis 7
//! converts them on load and never writes them; densekv only reads them. [`pairs`] accepts what
//! `zipmapValidateIntegrity(deep=1)` followed by rdb.c's duplicate-field check accepts, except
//! for the one non-canonical form noted below.
//!
//! ```text
//!  0
//!  ┌───────┬────────────────────┬──────────────────────────────┬─────┬────┐
//!  │ zmlen │ len  key           │ len  free  value  free bytes │ ... │ FF │
//!  │  u8   │ (1|5) bytes        │ (1|5)  u8  bytes  [free]     │     │    │
//!  └───────┴────────────────────┴──────────────────────────────┴─────┴────┘
//!  len: one byte 0..=253, or FE then u32 LE (a length of 254 or more)
//!  zmlen: the number of pairs, or 254 and up when Redis stopped counting
//! ```
//!
//! Invariants (checked by [`pairs`]):
//! - the last byte is `FF`, and the pairs tile `1..len-1` exactly;
//! - every key, value and trailing free space lies before the `FF`;
//! - at least one pair, and `zmlen == count` unless `zmlen == 254`;
//! - no key appears twice.
//!
//! Quirks kept from Redis: the `free` byte may say anything up to 255 (Redis writes at most 4);
//! a value's length byte `FF` is read as `FE`, a 5-byte length (a key's `FF` ends the map). One
//! quirk not kept: Redis's validator skips a 5-byte length that holds a value below 254, but its
//! iterator (`zipmapNext`) then skips only 1 byte and reads the wrong bytes. Redis 7.0.15 then
//! loads garbage, fails, or crashes, depending on the bytes that follow (seen with RESTORE and
//! `sanitize-dump-payload yes`); we reject such a length, since no consistent reading exists.

use std::collections::HashSet;

use crate::FormatError;

/// A length's first byte at or above this means four length bytes follow.
const BIG_LEN: u8 = 0xFE;
const END: u8 = 0xFF;

/// A field and its value, borrowed from the zipmap.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// Validates a zipmap and returns its (key, value) pairs in order, borrowed from `zm`.
pub fn pairs(zm: &[u8]) -> Result<Vec<Pair<'_>>, FormatError> {
    if zm.len() < 2 {
        return Err(FormatError("zipmap: shorter than its header"));
    }
    let end = zm.len() - 1;
    if zm[end] != END {
        return Err(FormatError("zipmap: missing terminator"));
    }
    let mut out = Vec::new();
    let mut keys = HashSet::new();
    let mut pos = 1;
    // Each pair takes at least 3 bytes, so the loop ends within `zm.len() / 3` steps; `out`
    // and `keys` grow with the pairs actually present, not with a claimed count.
    while zm[pos] != END {
        let (key, after_key) = read_string(zm, pos, end)?;
        let (value, next) = read_value(zm, after_key, end)?;
        if !keys.insert(key) {
            return Err(FormatError("zipmap: duplicate key"));
        }
        out.push((key, value));
        pos = next;
    }
    // The loop stops at the first FF, which must be the last byte.
    if pos != end {
        return Err(FormatError("zipmap: terminator before the end"));
    }
    if out.is_empty() {
        return Err(FormatError("zipmap: empty"));
    }
    if zm[0] != BIG_LEN && usize::from(zm[0]) != out.len() {
        return Err(FormatError("zipmap: header count differs from the pairs"));
    }
    Ok(out)
}

/// The key at `pos`: its bytes and the position after them, which must not pass `end`.
fn read_string(zm: &[u8], pos: usize, end: usize) -> Result<(&[u8], usize), FormatError> {
    let (len, len_size) = read_len(zm, pos, end)?;
    let start = pos + len_size;
    let after = start as u64 + len;
    if after > end as u64 {
        return Err(FormatError("zipmap: key runs past the end"));
    }
    Ok((&zm[start..after as usize], after as usize))
}

/// The value at `pos` (length, free byte, bytes, free space): its bytes and the position of the
/// next key, which must not pass `end`.
fn read_value(zm: &[u8], pos: usize, end: usize) -> Result<(&[u8], usize), FormatError> {
    let (len, len_size) = read_len(zm, pos, end)?;
    let free_pos = pos + len_size;
    let start = free_pos + 1;
    // `read_len` left `free_pos <= end`, so the free byte is in bounds.
    let after = start as u64 + len + u64::from(zm[free_pos]);
    if after > end as u64 {
        return Err(FormatError("zipmap: value runs past the end"));
    }
    Ok((&zm[start..start + len as usize], after as usize))
}

/// A length at `pos` and its size in bytes; the byte after it must not pass `end`.
fn read_len(zm: &[u8], pos: usize, end: usize) -> Result<(u64, usize), FormatError> {
    const PAST_END: FormatError = FormatError("zipmap: length runs past the end");
    if zm[pos] < BIG_LEN {
        return if pos < end {
            Ok((u64::from(zm[pos]), 1))
        } else {
            Err(PAST_END)
        };
    }
    if pos + 5 > end {
        return Err(PAST_END);
    }
    let b = &zm[pos + 1..pos + 5];
    let len = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    if len < u32::from(BIG_LEN) {
        return Err(FormatError("zipmap: 5-byte length below 254"));
    }
    Ok((u64::from(len), 5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_hex::hex;

    /// A zipmap as Redis ≤ 2.6 wrote it, with `free` spare bytes after each value. Test-only.
    fn build(count: u8, entries: &[(&[u8], &[u8])], free: u8) -> Vec<u8> {
        let mut zm = vec![count];
        for (key, value) in entries {
            push_len(&mut zm, key.len());
            zm.extend_from_slice(key);
            push_len(&mut zm, value.len());
            zm.push(free);
            zm.extend_from_slice(value);
            zm.extend(std::iter::repeat_n(0xAA, usize::from(free)));
        }
        zm.push(END);
        zm
    }

    fn push_len(out: &mut Vec<u8>, len: usize) {
        if len < 254 {
            out.push(len as u8);
        } else {
            out.push(BIG_LEN);
            out.extend_from_slice(&(len as u32).to_le_bytes());
        }
    }

    #[test]
    fn reads_the_example_in_redis_zipmap_c() {
        // "foo" => "bar", "hello" => "world"
        let zm = b"\x02\x03foo\x03\x00bar\x05hello\x05\x00world\xff";
        let want: Vec<(&[u8], &[u8])> = vec![(b"foo", b"bar"), (b"hello", b"world")];
        assert_eq!(pairs(zm), Ok(want.clone()));
        assert_eq!(build(2, &want, 0), zm);
    }

    #[test]
    fn reads_long_strings_free_space_and_empty_values() {
        let long_key = vec![b'k'; 254];
        let long_value = vec![b'v'; 70_000];
        let want: Vec<(&[u8], &[u8])> = vec![(&long_key, b"x"), (b"", &long_value), (b"e", b"")];
        for free in [0, 4, 255] {
            let zm = build(3, &want, free);
            assert_eq!(pairs(&zm), Ok(want.clone()), "free {free}");
        }
        // 254 and up: Redis stopped counting.
        assert_eq!(pairs(&build(254, &want, 1)), Ok(want.clone()));
    }

    #[test]
    fn reads_ff_as_a_five_byte_value_length() {
        // Value length FF with a u32 of 254: Redis's validator and iterator both read it as FE.
        let mut zm = hex("01 01 6b ff fe 00 00 00 00");
        zm.extend([b'v'; 254]);
        zm.push(END);
        let got = pairs(&zm).unwrap();
        assert_eq!(got, vec![(&b"k"[..], &[b'v'; 254][..])]);
    }

    #[test]
    fn rejects_malformed_zipmaps() {
        let bad = [
            ("", "empty payload"),
            ("00", "no terminator"),
            ("00 ff", "no pairs"),
            ("01 01 61 01 00 62 fe", "wrong terminator"),
            ("02 01 61 01 00 62 ff", "count too high"),
            ("00 01 61 01 00 62 ff", "count too low"),
            ("02 01 61 01 00 62 01 61 01 00 63 ff", "duplicate key"),
            ("01 02 61 ff", "key past the end"),
            ("01 01 61 ff", "value length missing"),
            ("01 01 61 01 ff", "free byte missing"),
            ("01 01 61 01 00 ff", "value past the end"),
            ("01 01 61 01 01 62 ff", "free space past the end"),
            ("01 01 61 01 00 62 ff ff", "terminator before the end"),
            (
                "01 fe 01 00 00 00 61 01 00 62 ff",
                "5-byte length below 254",
            ),
            ("01 fe 01 00 ff", "5-byte length cut"),
            ("01 01 61 fe ff ff ff ff ff 00 ff", "value near 4 GiB"),
        ];
        for (text, why) in bad {
            assert!(pairs(&hex(text)).is_err(), "{why}");
        }
    }

    fn sample() -> Vec<u8> {
        let long = vec![b'L'; 300];
        build(3, &[(b"name", b"densekv"), (&long, b"1"), (b"", &long)], 2)
    }

    #[test]
    fn rejects_every_truncation() {
        let zm = sample();
        for len in 0..zm.len() {
            assert!(pairs(&zm[..len]).is_err(), "truncated at {len}");
            // With a terminator put back, what remains is cut mid-pair or lost a pair (and the
            // count says 3); only the cut of the terminator itself gives the zipmap back.
            let mut cut = zm[..len].to_vec();
            cut.push(END);
            assert_eq!(
                pairs(&cut).is_ok(),
                len == zm.len() - 1,
                "truncated at {len}"
            );
        }
    }

    #[test]
    fn survives_every_byte_flip() {
        let zm = sample();
        for i in 0..zm.len() {
            for mask in [0x01, 0x02, 0x10, 0x80, 0xFF] {
                let mut bad = zm.clone();
                bad[i] ^= mask;
                let _ = pairs(&bad);
            }
        }
    }
}
