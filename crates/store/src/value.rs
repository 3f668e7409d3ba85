//! How a string sits in its keyspace entry (meta tags 0–2, see `encoding.rs`).
//!
//! ```text
//!  tag  value                         payload                          OBJECT ENCODING
//!   0   string ≤ 44 bytes             the bytes                        embstr
//!   1   string > 44 bytes, or grown   the bytes                        raw
//!       by APPEND/SETRANGE
//!   2   string, canonical i64         zigzag LEB128 varint (1–10 B)    int
//! ```
//! Strings are stored inline in the page when entry and key fit a piece and out of line in the
//! heap otherwise — the map decides; the store only hands it bytes. `key:%012d` → 16 random bytes
//! costs 1 (hint) + 1 (meta) + 1 + 16 + 1 + 16 bytes; `media:<id>` → an integer up to 2·10⁹ costs
//! a 5-byte varint instead of 10 digits.

use crate::encoding::{EMBSTR_MAX_BYTES, tag};
use maps::varint;
use shape::{Str, canonical_i64};

/// Appends the payload of string `value` to `out` and returns its tag: canonical integers become
/// varints, everything else stays bytes.
/// The tag of `value` stored as its own bytes (embstr or raw), `None` when it is an integer
/// (`encode_string` then writes its varint).
pub(crate) fn bytes_tag(value: &[u8]) -> Option<u8> {
    if canonical_i64(value).is_some() {
        None
    } else if value.len() <= EMBSTR_MAX_BYTES {
        Some(tag::STR_EMBSTR)
    } else {
        Some(tag::STR_RAW)
    }
}

pub(crate) fn encode_string(value: &[u8], out: &mut Vec<u8>) -> u8 {
    if let Some(i) = canonical_i64(value) {
        encode_int(i, out)
    } else {
        out.extend_from_slice(value);
        if value.len() <= EMBSTR_MAX_BYTES {
            tag::STR_EMBSTR
        } else {
            tag::STR_RAW
        }
    }
}

/// Appends the payload of an integer.
pub(crate) fn encode_int(i: i64, out: &mut Vec<u8>) -> u8 {
    varint::push(out, varint::zigzag(i));
    tag::STR_INT
}

/// The string an entry with string tag `t` and `payload` holds.
#[inline]
pub(crate) fn str_of(t: u8, payload: &[u8]) -> Str<'_> {
    if t == tag::STR_INT {
        Str::Int(varint::unzigzag(varint::get(payload).0))
    } else {
        Str::Bytes(payload)
    }
}

/// Whether meta tag `t` is a string's.
#[inline]
pub(crate) fn is_string(t: u8) -> bool {
    matches!(t, tag::STR_EMBSTR | tag::STR_RAW | tag::STR_INT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_and_integers_shrink() {
        for case in [
            &b"0"[..],
            b"-1",
            b"2000000000",
            b"9223372036854775807",
            b"-9223372036854775808",
            b"007",
            b"",
            b"abc",
            b"1e3",
            b" 1",
        ] {
            let mut out = Vec::new();
            let t = encode_string(case, &mut out);
            assert_eq!(str_of(t, &out).to_vec(), case);
            assert_eq!(str_of(t, &out).len(), case.len());
        }
        let mut out = Vec::new();
        assert_eq!(encode_string(b"2000000000", &mut out), tag::STR_INT);
        assert_eq!(out.len(), 5);
        out.clear();
        assert_eq!(encode_string(&[b'x'; 45], &mut out), tag::STR_RAW);
        out.clear();
        assert_eq!(encode_string(&[b'x'; 44], &mut out), tag::STR_EMBSTR);
        for i in [0, -1, 1 << 40, i64::MIN, i64::MAX] {
            let mut grown = Vec::new();
            encode_int(i, &mut grown);
            assert_eq!(str_of(tag::STR_INT, &grown), Str::Int(i));
        }
    }
}
