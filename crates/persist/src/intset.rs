//! Intsets: a sorted array of distinct integers, Redis's encoding for a small set whose members
//! are all integers (RDB type 11). [`encode`] writes what Redis writes for a set built by SADD;
//! [`decode`] accepts exactly what `intsetValidateIntegrity(deep=1)` accepts.
//!
//! ```text
//!  0          4          8
//!  ┌──────────┬──────────┬─────────┬─────────┬─────┬───────────┐
//!  │ encoding │  length  │ value 0 │ value 1 │ ... │ value n-1 │
//!  │  u32 LE  │  u32 LE  │ width bytes each, signed, LE        │
//!  └──────────┴──────────┴─────────┴─────────┴─────┴───────────┘
//!  encoding = width ∈ {2, 4, 8}
//! ```
//!
//! Invariants (checked by [`decode`]):
//! - `bytes.len() == 8 + length * width`;
//! - `length >= 1` (Redis deletes an empty set rather than store one);
//! - `value[i] < value[i + 1]`: sorted, no duplicates.
//!
//! Redis does not require the width to be the smallest that fits: `intsetRemove` never narrows
//! it, so a set that once held 2^40 and lost it keeps 8-byte values. [`decode`] accepts any of
//! the three widths; [`encode`] picks the smallest, as Redis does while a set only grows.
//! Bytes per member: 2, 4 or 8, against Redis's the same (this is Redis's format).

use crate::FormatError;

const HEADER_SIZE: usize = 8;

/// Writes an intset of `values`, which must be strictly ascending and not empty.
///
/// # Panics
/// If `values` is empty, unsorted, holds duplicates, or has 2^32 members or more: the caller's
/// set is then not one Redis could have stored as an intset.
pub fn encode(values: &[i64]) -> Vec<u8> {
    assert!(
        !values.is_empty(),
        "intset: Redis never stores an empty set"
    );
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "intset: values must be strictly ascending"
    );
    let length = u32::try_from(values.len()).expect("intset: 2^32 members or more");
    let width = values.iter().map(|&v| width_of(v)).max().unwrap_or(2);
    let mut out = Vec::with_capacity(HEADER_SIZE + values.len() * width);
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&length.to_le_bytes());
    for v in values {
        // The low `width` bytes of a value that fits in `width` bytes are its two's
        // complement in that width.
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

/// Validates an intset and returns its members in ascending order.
pub fn decode(bytes: &[u8]) -> Result<Vec<i64>, FormatError> {
    let header = bytes
        .get(..HEADER_SIZE)
        .ok_or(FormatError("intset: shorter than its header"))?;
    let width = match u32::from_le_bytes([header[0], header[1], header[2], header[3]]) {
        w @ (2 | 4 | 8) => w as usize,
        _ => return Err(FormatError("intset: invalid encoding")),
    };
    let length = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    // u64: `length * width` can exceed u32 (Redis computes it in size_t for the same reason).
    if HEADER_SIZE as u64 + u64::from(length) * width as u64 != bytes.len() as u64 {
        return Err(FormatError(
            "intset: length differs from the payload's size",
        ));
    }
    if length == 0 {
        return Err(FormatError("intset: empty"));
    }
    // The size check above bounds `length` by the input's size, so this allocation is too.
    let mut values = Vec::with_capacity(length as usize);
    for chunk in bytes[HEADER_SIZE..].chunks_exact(width) {
        let v = read_signed_le(chunk);
        if values.last().is_some_and(|&prev| v <= prev) {
            return Err(FormatError("intset: values not strictly ascending"));
        }
        values.push(v);
    }
    Ok(values)
}

/// The smallest of Redis's widths that holds `v`, as `_intsetValueEncoding`.
fn width_of(v: i64) -> usize {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

/// A little-endian two's complement integer of 2, 4 or 8 bytes.
fn read_signed_le(bytes: &[u8]) -> i64 {
    let mut le = [0u8; 8];
    le[..bytes.len()].copy_from_slice(bytes);
    let unused_bits = 8 * (8 - bytes.len()) as u32;
    (i64::from_le_bytes(le) << unused_bits) >> unused_bits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_hex::hex;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    // Intsets from Redis 7.0.15's DUMP (type byte 11), RDB string header and trailer removed.
    const REDIS_CASES: [(&[i64], &str); 4] = [
        // SADD s16 1 2 3
        (&[1, 2, 3], "02 00 00 00 03 00 00 00 01 00 02 00 03 00"),
        // SADD s32 1 70000 -40000
        (
            &[-40_000, 1, 70_000],
            "04 00 00 00 03 00 00 00 c0 63 ff ff 01 00 00 00 70 11 01 00",
        ),
        // SADD s64 -5 5000000000 7
        (
            &[-5, 7, 5_000_000_000],
            "08 00 00 00 03 00 00 00 fb ff ff ff ff ff ff ff \
             07 00 00 00 00 00 00 00 00 f2 05 2a 01 00 00 00",
        ),
        // SADD sext -9223372036854775808 9223372036854775807 0
        (
            &[i64::MIN, 0, i64::MAX],
            "08 00 00 00 03 00 00 00 00 00 00 00 00 00 00 80 \
             00 00 00 00 00 00 00 00 ff ff ff ff ff ff ff 7f",
        ),
    ];

    #[test]
    fn matches_redis_bytes() {
        for (values, bytes) in REDIS_CASES {
            assert_eq!(encode(values), hex(bytes), "{values:?}");
            assert_eq!(decode(&hex(bytes)), Ok(values.to_vec()));
        }
    }

    #[test]
    fn picks_the_smallest_width() {
        let cases: [(i64, u8); 6] = [
            (i64::from(i16::MAX), 2),
            (i64::from(i16::MIN), 2),
            (i64::from(i16::MAX) + 1, 4),
            (i64::from(i32::MIN), 4),
            (i64::from(i32::MIN) - 1, 8),
            (i64::from(i32::MAX) + 1, 8),
        ];
        for (v, width) in cases {
            let bytes = encode(&[v]);
            assert_eq!(bytes[0], width, "{v}");
            assert_eq!(decode(&bytes), Ok(vec![v]));
        }
    }

    #[test]
    fn accepts_a_wider_encoding_than_needed() {
        // What a set that held 2^40 and lost it looks like: 8-byte values that would fit in 2.
        let bytes = hex("08 00 00 00 01 00 00 00 05 00 00 00 00 00 00 00");
        assert_eq!(decode(&bytes), Ok(vec![5]));
    }

    #[test]
    fn rejects_malformed_intsets() {
        let bad = [
            ("", "empty payload"),
            ("02 00 00 00 00 00 00", "short header"),
            ("02 00 00 00 00 00 00 00", "no members"),
            ("03 00 00 00 01 00 00 00 01 00 00", "width 3"),
            ("00 00 00 00 00 00 00 00", "width 0"),
            ("02 00 00 00 02 00 00 00 01 00", "length too high"),
            ("02 00 00 00 01 00 00 00 01 00 02 00", "length too low"),
            ("02 00 00 00 02 00 00 00 02 00 01 00", "descending"),
            ("02 00 00 00 02 00 00 00 02 00 02 00", "duplicate"),
            ("02 00 00 00 ff ff ff ff 01 00", "length near 2^32"),
            ("08 00 00 00 00 00 00 20 01 00", "length * width past u32"),
        ];
        for (text, why) in bad {
            assert!(decode(&hex(text)).is_err(), "{why}");
        }
    }

    #[test]
    fn rejects_every_truncation_and_survives_every_flip() {
        for (_, text) in REDIS_CASES {
            let bytes = hex(text);
            for len in 0..bytes.len() {
                assert!(decode(&bytes[..len]).is_err(), "truncated at {len}");
            }
            for i in 0..bytes.len() {
                for mask in [0x01, 0x02, 0x10, 0x80, 0xFF] {
                    let mut bad = bytes.clone();
                    bad[i] ^= mask;
                    if let Ok(values) = decode(&bad) {
                        assert!(values.windows(2).all(|w| w[0] < w[1]));
                    }
                }
            }
        }
    }

    /// Seeded model test: random sets against a sorted, deduplicated Vec.
    #[test]
    fn random_sets_round_trip() {
        let mut rng = SmallRng::seed_from_u64(11);
        for _ in 0..500 {
            let shift = rng.gen_range(0..64);
            let mut model: Vec<i64> = (0..rng.gen_range(1..100))
                .map(|_| rng.r#gen::<i64>() >> shift)
                .collect();
            model.sort_unstable();
            model.dedup();
            let bytes = encode(&model);
            assert_eq!(decode(&bytes), Ok(model));
        }
    }

    #[test]
    #[should_panic(expected = "strictly ascending")]
    fn encode_refuses_unsorted_values() {
        encode(&[2, 1]);
    }
}
