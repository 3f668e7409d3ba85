//! How a value sits in its keyspace entry.
//!
//! ```text
//!  PageHash entry value bytes:
//!    [expire_at_ms: u64 LE]?  payload
//!     └ present iff meta.has_ttl — a key without a TTL pays nothing, one with a TTL 8 bytes
//!
//!  meta byte (stored by the map, owned here):  LFU:3 │ has_ttl:1 │ tag:4
//!
//!  tag  value                         payload                          OBJECT ENCODING
//!   0   string ≤ 44 bytes             the bytes                        embstr
//!   1   string > 44 bytes, or grown   the bytes                        raw
//!       by APPEND/SETRANGE
//!   2   string, canonical i64         zigzag LEB128 varint (1–10 B)    int
//!  3–13 reserved for the collection types (hash, list, set, sorted set)
//! ```
//! Strings are stored inline in the page when entry and key fit a piece and out of line in the
//! heap otherwise — the map decides; the store only hands it bytes. `key:%012d` → 16 random bytes
//! costs 1 (hint) + 1 (meta) + 1 + 16 + 1 + 16 bytes; `media:<id>` → an integer up to 2·10⁹ costs
//! a 5-byte varint instead of 10 digits.

/// Value tags (the low 4 bits of the meta byte).
pub mod tag {
    pub const STR_EMBSTR: u8 = 0;
    pub const STR_RAW: u8 = 1;
    pub const STR_INT: u8 = 2;
}

/// Longest string Redis keeps as `embstr`.
pub const EMBSTR_MAX_BYTES: usize = 44;

/// What TYPE reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    String,
    Hash,
    List,
    Set,
    ZSet,
}

impl Kind {
    pub fn of_tag(tag: u8) -> Kind {
        match tag {
            tag::STR_EMBSTR | tag::STR_RAW | tag::STR_INT => Kind::String,
            3..=6 | 14 => Kind::Hash,
            7 => Kind::List,
            8..=11 | 15 => Kind::Set,
            _ => Kind::ZSet,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Hash => "hash",
            Kind::List => "list",
            Kind::Set => "set",
            Kind::ZSet => "zset",
        }
    }
}

/// The OBJECT ENCODING name of a tag.
pub fn encoding_name(tag: u8) -> &'static str {
    match tag {
        tag::STR_EMBSTR => "embstr",
        tag::STR_RAW => "raw",
        tag::STR_INT => "int",
        _ => "unknown",
    }
}

/// The i64 whose canonical decimal form is exactly `bytes` (Redis's `string2ll`).
pub use shape::record::canonical_i64 as parse_i64;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(bytes: &[u8]) -> u64 {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            break;
        }
    }
    v
}

/// Appends the payload of string `value` to `out` and returns its tag: canonical integers become
/// varints, everything else stays bytes.
pub fn encode_string(value: &[u8], out: &mut Vec<u8>) -> u8 {
    if let Some(i) = parse_i64(value) {
        put_varint(out, ((i << 1) ^ (i >> 63)) as u64);
        tag::STR_INT
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
pub fn encode_int(i: i64, out: &mut Vec<u8>) -> u8 {
    let mut fixed = [0u8; 10];
    let len = encode_int_into(i, &mut fixed);
    out.extend_from_slice(&fixed[..len]);
    tag::STR_INT
}

/// Writes the payload of an integer into `out` (10 bytes hold any i64); returns its length.
pub fn encode_int_into(i: i64, out: &mut [u8; 10]) -> usize {
    let mut v = ((i << 1) ^ (i >> 63)) as u64;
    let mut n = 0;
    while v >= 0x80 {
        out[n] = v as u8 | 0x80;
        v >>= 7;
        n += 1;
    }
    out[n] = v as u8;
    n + 1
}

/// The integer of a `STR_INT` payload.
pub fn decode_int(payload: &[u8]) -> i64 {
    let z = get_varint(payload);
    (z >> 1) as i64 ^ -((z & 1) as i64)
}

/// A string value as it can be replied: borrowed bytes, or an integer to format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Str<'a> {
    Bytes(&'a [u8]),
    Int(i64),
}

impl Str<'_> {
    pub fn of(tag: u8, payload: &[u8]) -> Str<'_> {
        if tag == tag::STR_INT {
            Str::Int(decode_int(payload))
        } else {
            Str::Bytes(payload)
        }
    }

    pub fn len(&self) -> usize {
        match *self {
            Str::Bytes(b) => b.len(),
            Str::Int(i) => {
                let digits = i
                    .unsigned_abs()
                    .checked_ilog10()
                    .map_or(1, |d| d as usize + 1);
                digits + usize::from(i < 0)
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn write_to(&self, out: &mut Vec<u8>) {
        match *self {
            Str::Bytes(b) => out.extend_from_slice(b),
            Str::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        }
    }

    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        self.write_to(&mut out);
        out
    }
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
            let tag = encode_string(case, &mut out);
            assert_eq!(Str::of(tag, &out).to_vec(), case);
            assert_eq!(Str::of(tag, &out).len(), case.len());
        }
        let mut out = Vec::new();
        assert_eq!(encode_string(b"2000000000", &mut out), tag::STR_INT);
        assert_eq!(out.len(), 5);
        out.clear();
        assert_eq!(encode_string(&[b'x'; 45], &mut out), tag::STR_RAW);
        for i in [0, -1, 1 << 40, i64::MIN, i64::MAX] {
            let mut fixed = [0u8; 10];
            let len = encode_int_into(i, &mut fixed);
            assert_eq!(decode_int(&fixed[..len]), i);
            let mut grown = Vec::new();
            encode_int(i, &mut grown);
            assert_eq!(grown, &fixed[..len]);
        }
        assert_eq!(
            encoding_name(encode_string(&[b'x'; 44], &mut Vec::new())),
            "embstr"
        );
    }
}
