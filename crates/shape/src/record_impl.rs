//! Shaped records: a shape id and the values of its fields, back to back.
//!
//! ```text
//!  record := shape_id:u32 (little-endian) value*            (one value per field of the shape)
//!  value, by its first byte b (after listpack's encodings):
//!    0xxxxxxx              integer 0..=127, nothing follows
//!    10llllll  bytes       string of l = 0..=63 bytes
//!    110lllll  varint(m)   string of 64 + l + 32·m bytes, which follow the varint
//!    11100nnn  n+1 bytes   integer, two's complement little-endian in the fewest bytes (1..=8)
//!    11101xxx … 11111111   unused (a record holding one is corrupt)
//! ```
//! A value is stored as an integer only when its bytes are the canonical decimal form of an i64
//! (no sign but `-`, no leading zeros, not `-0`), so every value reads back byte for byte, as
//! Redis's listpack does with integer-looking strings. `age 42` costs 1 byte, a 10-digit Unix
//! timestamp 5, a 10-byte string 11.
//!
//! Bytes per record for `user:N` (name `user<r>`, email `u<i>@example.com`, age, city,
//! created): 4 (shape) + 11 + 19 + 1 + 8 + 5 ≈ 48, against ~100 for the same hash as a listpack
//! with its field names (Redis then adds its key, dictEntry and robj: ~180 resident).
//!
//! Operations keep Redis's listpack order: HSET of a new field appends it (the record moves to
//! the child shape), HSET of an existing field rewrites the value in place, HDEL removes the value
//! and moves the record to the shape of the remaining fields in their order.

use crate::str::{Str, canonical_i64};
use crate::tree::{ROOT, ShapeId, ShapeTree, TooComplex};
use maps::varint;

/// Reads a varint at `*pos`, advancing it. Records are built by this module, so a malformed one
/// is a bug, reported by a panic rather than wrong data.
fn read_varint(bytes: &[u8], pos: &mut usize) -> usize {
    let (v, n) = varint::get(&bytes[*pos..]);
    *pos += n;
    v as usize
}

/// Appends the encoding of `value`.
pub fn encode_value(out: &mut Vec<u8>, value: &[u8]) {
    if let Some(i) = canonical_i64(value) {
        if (0..128).contains(&i) {
            out.push(i as u8);
        } else {
            // Fewest bytes whose two's complement holds i.
            let significant = if i < 0 {
                64 - i.leading_ones()
            } else {
                64 - i.leading_zeros()
            };
            let n = (significant as usize + 1).div_ceil(8).clamp(1, 8);
            out.push(0xE0 | (n as u8 - 1));
            out.extend_from_slice(&i.to_le_bytes()[..n]);
        }
        return;
    }
    let len = value.len();
    if len < 64 {
        out.push(0x80 | len as u8);
    } else {
        let rest = len - 64;
        out.push(0xC0 | (rest & 0x1f) as u8);
        varint::push(out, (rest >> 5) as u64);
    }
    out.extend_from_slice(value);
}

/// Decodes the value at `*pos`, advancing past it.
pub fn decode_value<'a>(bytes: &'a [u8], pos: &mut usize) -> Str<'a> {
    let b = bytes[*pos];
    *pos += 1;
    let len = match b {
        0x00..=0x7F => return Str::Int(i64::from(b)),
        0x80..=0xBF => (b & 0x3f) as usize,
        0xC0..=0xDF => 64 + (b & 0x1f) as usize + (read_varint(bytes, pos) << 5),
        0xE0..=0xE7 => {
            let n = (b & 7) as usize + 1;
            let mut le = [0u8; 8];
            le[..n].copy_from_slice(&bytes[*pos..*pos + n]);
            *pos += n;
            // Sign-extend from n bytes.
            let shift = 64 - 8 * n as u32;
            return Str::Int((i64::from_le_bytes(le) << shift) >> shift);
        }
        _ => panic!("corrupt value header {b:#x} in a shaped record"),
    };
    let start = *pos;
    *pos += len;
    Str::Bytes(&bytes[start..start + len])
}

/// A record of no fields (shape ROOT).
pub fn empty() -> Vec<u8> {
    ROOT.to_le_bytes().to_vec()
}

/// The shape of a record.
#[inline]
pub fn shape(record: &[u8]) -> ShapeId {
    u32::from_le_bytes(record[..4].try_into().expect("record holds a shape id"))
}

fn set_shape(record: &mut [u8], shape: ShapeId) {
    record[..4].copy_from_slice(&shape.to_le_bytes());
}

/// Byte range of value `index`.
fn value_span(record: &[u8], index: usize) -> (usize, usize) {
    let mut pos = 4;
    for _ in 0..index {
        decode_value(record, &mut pos);
    }
    let start = pos;
    decode_value(record, &mut pos);
    (start, pos)
}

/// Number of fields.
pub fn len(tree: &ShapeTree, record: &[u8]) -> usize {
    tree.field_count(shape(record))
}

/// HGET.
pub fn get<'a>(tree: &mut ShapeTree, record: &'a [u8], field: &[u8]) -> Option<Str<'a>> {
    let index = tree.field_index(shape(record), field)?;
    let (start, _) = value_span(record, index);
    let mut pos = start;
    Some(decode_value(record, &mut pos))
}

/// HSET of one field: `Ok(true)` when the field is new. On `Err` the record is unchanged and
/// the caller stores the hash as a plain map instead.
pub fn set(
    tree: &mut ShapeTree,
    record: &mut Vec<u8>,
    field: &[u8],
    value: &[u8],
) -> Result<bool, TooComplex> {
    let current = shape(record);
    if let Some(index) = tree.field_index(current, field) {
        let (start, end) = value_span(record, index);
        let mut encoded = Vec::with_capacity(value.len() + 2);
        encode_value(&mut encoded, value);
        record.splice(start..end, encoded);
        return Ok(false);
    }
    let next = tree.add_field(current, field)?;
    set_shape(record, next);
    encode_value(record, value);
    Ok(true)
}

/// HDEL of one field: `Ok(true)` when it was there. On `Err` (the remaining fields would need a
/// shape the limits refuse) the record is unchanged and the caller converts the hash.
pub fn remove(
    tree: &mut ShapeTree,
    record: &mut Vec<u8>,
    field: &[u8],
) -> Result<bool, TooComplex> {
    let current = shape(record);
    let Some(index) = tree.field_index(current, field) else {
        return Ok(false);
    };
    let next = {
        let fields = tree.fields(current);
        let remaining: Vec<Vec<u8>> = fields
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != index)
            .map(|(_, f)| f.to_vec())
            .collect();
        tree.shape_of(remaining.iter().map(Vec::as_slice))?
    };
    tree.release(current);
    let (start, end) = value_span(record, index);
    record.drain(start..end);
    set_shape(record, next);
    Ok(true)
}

/// The record's fields and values in order (HGETALL).
pub fn iter<'a>(
    tree: &'a ShapeTree,
    record: &'a [u8],
) -> impl Iterator<Item = (&'a [u8], Str<'a>)> {
    let fields = tree.fields(shape(record));
    let mut pos = 4;
    fields
        .into_iter()
        .map(move |field| (field, decode_value(record, &mut pos)))
}

/// Drops a record: its shape loses one holder.
pub fn release(tree: &mut ShapeTree, record: &[u8]) {
    tree.release(shape(record));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_byte_for_byte() {
        let cases: [&[u8]; 14] = [
            b"",
            b"0",
            b"-0",
            b"007",
            b"42",
            b"-42",
            b"+1",
            b"9223372036854775807",
            b"-9223372036854775808",
            b"9223372036854775808",
            b"1.5",
            b"abc",
            b" 1",
            b"4611686018427387904",
        ];
        for case in cases {
            let mut out = Vec::new();
            encode_value(&mut out, case);
            let mut pos = 0;
            let value = decode_value(&out, &mut pos);
            assert_eq!(pos, out.len());
            assert_eq!(value.to_vec(), case, "{:?}", String::from_utf8_lossy(case));
            assert_eq!(value.len(), case.len());
        }
        assert_eq!(canonical_i64(b"-0"), None);
        assert_eq!(canonical_i64(b"007"), None);
        assert_eq!(canonical_i64(b"-9223372036854775808"), Some(i64::MIN));
        let mut out = Vec::new();
        encode_value(&mut out, b"42");
        assert_eq!(out.len(), 1, "small integers take one byte");
        out.clear();
        encode_value(&mut out, b"1700000000");
        assert_eq!(
            out.len(),
            5,
            "a Unix timestamp takes a header and four bytes"
        );
        for i in [
            -129i64,
            -128,
            -1,
            127,
            128,
            255,
            256,
            32767,
            32768,
            i64::MAX,
            i64::MIN,
        ] {
            let text = i.to_string();
            out.clear();
            encode_value(&mut out, text.as_bytes());
            let mut pos = 0;
            assert_eq!(decode_value(&out, &mut pos), Str::Int(i));
            assert_eq!(pos, out.len());
        }
        let long = vec![b'x'; 5000];
        out.clear();
        encode_value(&mut out, &long);
        let mut pos = 0;
        assert_eq!(decode_value(&out, &mut pos), Str::Bytes(&long));
    }

    #[test]
    fn set_get_remove_keep_listpack_order() {
        let mut tree = ShapeTree::default();
        let mut rec = empty();
        assert_eq!(set(&mut tree, &mut rec, b"name", b"ann"), Ok(true));
        assert_eq!(set(&mut tree, &mut rec, b"age", b"42"), Ok(true));
        assert_eq!(set(&mut tree, &mut rec, b"city", b"Oslo"), Ok(true));
        assert_eq!(set(&mut tree, &mut rec, b"age", b"43"), Ok(false));
        assert_eq!(get(&mut tree, &rec, b"age"), Some(Str::Int(43)));
        assert_eq!(remove(&mut tree, &mut rec, b"name"), Ok(true));
        assert_eq!(remove(&mut tree, &mut rec, b"name"), Ok(false));
        let all: Vec<_> = iter(&tree, &rec)
            .map(|(f, v)| (f.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(
            all,
            vec![
                (b"age".to_vec(), b"43".to_vec()),
                (b"city".to_vec(), b"Oslo".to_vec())
            ]
        );
        let mut other = empty();
        set(&mut tree, &mut other, b"age", b"1").unwrap();
        set(&mut tree, &mut other, b"city", b"x").unwrap();
        assert_eq!(
            shape(&other),
            shape(&rec),
            "same fields in the same order share a shape"
        );
        release(&mut tree, &rec);
        release(&mut tree, &other);
        assert!(tree.is_empty());
    }
}
