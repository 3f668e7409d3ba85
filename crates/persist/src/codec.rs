//! RDB primitives, as Redis 7.0's `rdb.c` writes and reads them: lengths, strings (integer,
//! LZF or raw), doubles and expiry times, plus the type and opcode numbers of `rdb.h`. DUMP
//! payloads and RDB files are built from these and nothing else.
//!
//! # Lengths (`rdbSaveLen`, `rdbLoadLenByRef`)
//!
//! The top two bits of the first byte choose the form. Multi-byte lengths are **big-endian**
//! (Redis uses `htonl`), unlike almost everything else in the format:
//!
//! ```text
//! 00LLLLLL                          len < 64
//! 01LLLLLL LLLLLLLL                 len < 16384        (14 bits, high bits first)
//! 10000000 <4 bytes BE>             len <= u32::MAX
//! 10000001 <8 bytes BE>             any other u64
//! 11EEEEEE                          not a length: a string in special encoding E (below)
//! 10xxxxxx (other)                  invalid
//! ```
//!
//! The writer always picks the shortest form; the reader accepts any form (Redis does).
//!
//! # Strings (`rdbSaveRawString`, `rdbGenericLoadStringObject`)
//!
//! ```text
//! <len> <len bytes>                                   raw
//! 0xC0 <i8>                                           INT8   } the decimal text of the value,
//! 0xC1 <i16 LE>                                       INT16  } little-endian; chosen when the
//! 0xC2 <i32 LE>                                       INT32  } string is ≤ 11 bytes of canonical
//!                                                               decimal (`string2ll`) in i32 range
//! 0xC3 <compressed len> <original len> <LZF stream>   LZF, for strings over 20 bytes that
//!                                                     compress by at least 4 bytes
//! ```
//!
//! Canonical means what `string2ll` accepts: `0`, or an optional `-` then a digit 1-9 then
//! digits. `"007"`, `"+1"`, `" 1"` and `"-0"` stay raw because reading them back as integers
//! would not give the same bytes.
//!
//! # Numbers
//!
//! Binary doubles (RDB_TYPE_ZSET_2 scores, `rdbSaveBinaryDoubleValue`) are the 8 IEEE-754 bytes,
//! little-endian, bit for bit (NaN payloads and -0.0 survive). Old doubles (RDB_TYPE_ZSET,
//! `rdbLoadDoubleValue`) are a length byte, with 253 = NaN, 254 = +inf, 255 = -inf, else that
//! many bytes of decimal text. Expire times are little-endian: 8 bytes of milliseconds after
//! `EXPIRETIME_MS`, 4 bytes of seconds after the old `EXPIRETIME`.
//!
//! # Reading hostile input
//!
//! [`Reader`] never indexes past its slice and never allocates from a length it has not checked:
//! a raw string is borrowed from the input once its length is known to fit; an LZF string's
//! compressed length must fit in the input and its original length must be at most
//! [`STRING_MAX_BYTES`] and at most what that much LZF can expand to
//! ([`lzf::EXPANSION_MAX`] = 88 bytes per input byte). The worst a hostile payload can make it
//! allocate is therefore 88 times its own size, capped at 512 MiB.

use std::borrow::Cow;

use crate::{FormatError, lzf};

/// The RDB format version densekv writes: Redis 7.0's.
pub const RDB_VERSION: u16 = 10;

/// The longest string the reader will decompress: Redis's `proto-max-bulk-len` default, so no
/// value read from disk is larger than a client could have written.
pub const STRING_MAX_BYTES: u64 = 512 << 20;

/// Value types (`RDB_TYPE_*` in rdb.h); the byte before each key in an RDB file and the first
/// byte of a DUMP payload.
pub mod rdb_type {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    /// Zset with binary double scores.
    pub const ZSET_2: u8 = 5;
    /// Redis refuses to load this (pre-4.0 module values without the opcode annotations).
    pub const MODULE: u8 = 6;
    pub const MODULE_2: u8 = 7;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    /// Quicklist whose nodes are listpacks (Redis 7).
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS_2: u8 = 19;
}

/// Opcodes (`RDB_OPCODE_*` in rdb.h): bytes that take the place of a value type in an RDB file.
pub mod opcode {
    /// Function library (Redis 7.0 GA).
    pub const FUNCTION2: u8 = 245;
    /// Function library as written by 7.0 release candidates 1 and 2.
    pub const FUNCTION: u8 = 246;
    pub const MODULE_AUX: u8 = 247;
    /// LRU idle time of the next key.
    pub const IDLE: u8 = 248;
    /// LFU frequency of the next key.
    pub const FREQ: u8 = 249;
    /// Auxiliary field: two strings, name and value.
    pub const AUX: u8 = 250;
    /// Hash table size hints for the current database.
    pub const RESIZEDB: u8 = 251;
    /// Expire time of the next key, milliseconds, 8 bytes little-endian.
    pub const EXPIRETIME_MS: u8 = 252;
    /// Expire time of the next key, seconds, 4 bytes little-endian (old files).
    pub const EXPIRETIME: u8 = 253;
    pub const SELECTDB: u8 = 254;
    pub const EOF: u8 = 255;
}

/// Special string encodings, the low six bits of a `11EEEEEE` length byte (`RDB_ENC_*`).
pub mod string_encoding {
    pub const INT8: u8 = 0;
    pub const INT16: u8 = 1;
    pub const INT32: u8 = 2;
    pub const LZF: u8 = 3;
}

/// Top two bits of a length byte: 6-bit length, 14-bit length, 32/64-bit length, encoding.
const LEN_6BIT: u8 = 0;
const LEN_14BIT: u8 = 1;
const LEN_32BIT: u8 = 0x80;
const LEN_64BIT: u8 = 0x81;
const LEN_ENCODED: u8 = 3;

/// `rdbSaveRawString` tries integer encoding only up to this length (`"-2147483648"`).
const INT_TEXT_MAX_BYTES: usize = 11;
/// `rdbSaveRawString` does not try LZF at or below this length.
const LZF_MIN_BYTES: usize = 20;

pub fn put_u8(out: &mut Vec<u8>, v: u8) {
    out.push(v);
}

/// Appends `len` in the shortest length form (`rdbSaveLen`).
pub fn put_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push((LEN_6BIT << 6) | len as u8);
    } else if len < 1 << 14 {
        out.extend_from_slice(&[(LEN_14BIT << 6) | (len >> 8) as u8, len as u8]);
    } else if let Ok(len) = u32::try_from(len) {
        out.push(LEN_32BIT);
        out.extend_from_slice(&len.to_be_bytes());
    } else {
        out.push(LEN_64BIT);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// Appends a string as `rdbSaveRawString` does: integer encoding when the bytes are a canonical
/// 32-bit integer, else LZF when `compress` (Redis's `rdbcompression`) and it pays, else raw.
pub fn put_string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    if s.len() <= INT_TEXT_MAX_BYTES
        && let Some(v) = resp::string2ll(s)
        && put_int_encoded(out, v)
    {
        return;
    }
    if compress
        && s.len() > LZF_MIN_BYTES
        && let Some(packed) = lzf::compress(s)
    {
        out.push((LEN_ENCODED << 6) | string_encoding::LZF);
        put_len(out, packed.len() as u64);
        put_len(out, s.len() as u64);
        out.extend_from_slice(&packed);
        return;
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Appends an integer-valued string (`rdbSaveLongLongAsStringObject`): integer encoding when it
/// fits 32 bits, else its decimal text, raw (Redis never compresses these: 20 bytes at most).
pub fn put_int_string(out: &mut Vec<u8>, v: i64) {
    if !put_int_encoded(out, v) {
        let text = v.to_string();
        put_len(out, text.len() as u64);
        out.extend_from_slice(text.as_bytes());
    }
}

/// Appends a double as 8 bytes little-endian (`rdbSaveBinaryDoubleValue`).
pub fn put_binary_double(out: &mut Vec<u8>, f: f64) {
    out.extend_from_slice(&f.to_le_bytes());
}

/// Appends an `EXPIRETIME_MS` payload: milliseconds, 8 bytes little-endian.
pub fn put_millis_le(out: &mut Vec<u8>, ms: u64) {
    out.extend_from_slice(&ms.to_le_bytes());
}

/// `rdbEncodeInteger`: the smallest of INT8/16/32 that holds `v`; false if none does.
fn put_int_encoded(out: &mut Vec<u8>, v: i64) -> bool {
    let tag = |encoding: u8| (LEN_ENCODED << 6) | encoding;
    if let Ok(v) = i8::try_from(v) {
        out.extend_from_slice(&[tag(string_encoding::INT8), v as u8]);
    } else if let Ok(v) = i16::try_from(v) {
        out.push(tag(string_encoding::INT16));
        out.extend_from_slice(&v.to_le_bytes());
    } else if let Ok(v) = i32::try_from(v) {
        out.push(tag(string_encoding::INT32));
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        return false;
    }
    true
}

/// What a length byte announced: a length, or a special string encoding (`RDB_ENC_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Len {
    Len(u64),
    Encoded(u8),
}

/// A cursor over bytes in an RDB file or DUMP payload. Every read is bounds-checked; on error the
/// position is unspecified and the caller is expected to give up on the whole input.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// What a read past the end of the input fails with.
pub const TRUNCATED: FormatError = FormatError("unexpected end of RDB data");

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The bytes consumed so far.
    pub fn consumed(&self) -> &'a [u8] {
        &self.bytes[..self.pos]
    }

    /// Bytes not yet consumed; `pos() + remaining()` is the input's length.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    pub fn u8(&mut self) -> Result<u8, FormatError> {
        let byte = *self.bytes.get(self.pos).ok_or(TRUNCATED)?;
        self.pos += 1;
        Ok(byte)
    }

    /// The next `n` bytes, borrowed from the input.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        if n > self.remaining() {
            return Err(TRUNCATED);
        }
        let slice = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], FormatError> {
        let mut array = [0; N];
        array.copy_from_slice(self.bytes(N)?);
        Ok(array)
    }

    pub fn u32_be(&mut self) -> Result<u32, FormatError> {
        self.array().map(u32::from_be_bytes)
    }

    pub fn u32_le(&mut self) -> Result<u32, FormatError> {
        self.array().map(u32::from_le_bytes)
    }

    pub fn u64_be(&mut self) -> Result<u64, FormatError> {
        self.array().map(u64::from_be_bytes)
    }

    pub fn u64_le(&mut self) -> Result<u64, FormatError> {
        self.array().map(u64::from_le_bytes)
    }

    /// A length or a special encoding (`rdbLoadLenByRef`).
    pub fn len(&mut self) -> Result<Len, FormatError> {
        let first = self.u8()?;
        Ok(match first >> 6 {
            LEN_ENCODED => Len::Encoded(first & 0x3f),
            LEN_6BIT => Len::Len(u64::from(first & 0x3f)),
            LEN_14BIT => Len::Len((u64::from(first & 0x3f) << 8) | u64::from(self.u8()?)),
            _ if first == LEN_32BIT => Len::Len(u64::from(self.u32_be()?)),
            _ if first == LEN_64BIT => Len::Len(self.u64_be()?),
            _ => return Err(FormatError("unknown RDB length encoding")),
        })
    }

    /// A plain length; a special-encoding byte here is an error.
    pub fn len_value(&mut self) -> Result<u64, FormatError> {
        match self.len()? {
            Len::Len(len) => Ok(len),
            Len::Encoded(_) => Err(FormatError("RDB string encoding where a length belongs")),
        }
    }

    /// A string in any of its encodings (`rdbGenericLoadStringObject`): raw strings are borrowed,
    /// integer and LZF strings are decoded into an owned buffer.
    pub fn string(&mut self) -> Result<Cow<'a, [u8]>, FormatError> {
        match self.len()? {
            Len::Len(len) => {
                let len = usize::try_from(len).map_err(|_| TRUNCATED)?;
                self.bytes(len).map(Cow::Borrowed)
            }
            Len::Encoded(string_encoding::INT8) => Ok(int_text(i64::from(self.u8()? as i8))),
            Len::Encoded(string_encoding::INT16) => {
                Ok(int_text(i64::from(i16::from_le_bytes(self.array()?))))
            }
            Len::Encoded(string_encoding::INT32) => {
                Ok(int_text(i64::from(i32::from_le_bytes(self.array()?))))
            }
            Len::Encoded(string_encoding::LZF) => self.lzf_string().map(Cow::Owned),
            Len::Encoded(_) => Err(FormatError("unknown RDB string encoding")),
        }
    }

    /// The rest of an LZF string, after its `0xC3` byte.
    fn lzf_string(&mut self) -> Result<Vec<u8>, FormatError> {
        let compressed_len = self.len_value()?;
        let original_len = self.len_value()?;
        if compressed_len > self.remaining() as u64 {
            return Err(FormatError("LZF string longer than the RDB data"));
        }
        if original_len > STRING_MAX_BYTES {
            return Err(FormatError("LZF string longer than the string size limit"));
        }
        // Both now fit in usize: one is at most the input's length, the other at most 512 MiB.
        let packed = self.bytes(compressed_len as usize)?;
        lzf::decompress(packed, original_len as usize)
    }

    /// A binary double (`rdbLoadBinaryDoubleValue`): 8 bytes little-endian, bit for bit.
    pub fn binary_double(&mut self) -> Result<f64, FormatError> {
        self.array().map(f64::from_le_bytes)
    }

    /// A double in the old text form (`rdbLoadDoubleValue`, RDB_TYPE_ZSET scores).
    ///
    /// Redis parses the text with `sscanf("%lg")`, which would also skip leading spaces and
    /// ignore trailing garbage; Redis never writes either (it writes `%.17g` or an integer), so
    /// densekv requires the whole text to be one number: decimal with optional sign, fraction and
    /// exponent, or `inf`/`infinity`/`nan` in any case. Hex floats are rejected too.
    pub fn old_double(&mut self) -> Result<f64, FormatError> {
        match self.u8()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            len => {
                let text = self.bytes(usize::from(len))?;
                std::str::from_utf8(text)
                    .ok()
                    .and_then(|text| text.parse().ok())
                    .ok_or(FormatError("invalid RDB double text"))
            }
        }
    }

    /// An `EXPIRETIME_MS` payload: Unix time in milliseconds, 8 bytes little-endian.
    pub fn millis_le(&mut self) -> Result<u64, FormatError> {
        self.u64_le()
    }

    /// An `EXPIRETIME` payload: Unix time in seconds, 4 bytes little-endian.
    pub fn seconds_le(&mut self) -> Result<u32, FormatError> {
        self.u32_le()
    }
}

fn int_text(v: i64) -> Cow<'static, [u8]> {
    Cow::Owned(v.to_string().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded_string(s: &[u8], compress: bool) -> Vec<u8> {
        let mut out = Vec::new();
        put_string(&mut out, s, compress);
        out
    }

    fn read_string(bytes: &[u8]) -> Result<Vec<u8>, FormatError> {
        let mut r = Reader::new(bytes);
        let s = r.string()?.into_owned();
        assert!(r.is_empty(), "trailing bytes after the string");
        Ok(s)
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn length_forms_at_every_boundary() {
        let cases: &[(u64, &[u8])] = &[
            (0, &[0x00]),
            (63, &[0x3f]),
            (64, &[0x40, 0x40]),
            (16383, &[0x7f, 0xff]),
            (16384, &[0x80, 0x00, 0x00, 0x40, 0x00]),
            (u32::MAX as u64, &[0x80, 0xff, 0xff, 0xff, 0xff]),
            (1 << 32, &[0x81, 0, 0, 0, 1, 0, 0, 0, 0]),
            (
                u64::MAX,
                &[0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            ),
        ];
        for &(len, want) in cases {
            let mut out = Vec::new();
            put_len(&mut out, len);
            assert_eq!(out, want, "len {len}");
            let mut r = Reader::new(&out);
            assert_eq!(r.len().unwrap(), Len::Len(len));
            assert!(r.is_empty());
        }
    }

    #[test]
    fn reader_accepts_non_shortest_lengths() {
        assert_eq!(Reader::new(&[0x40, 0x05]).len_value().unwrap(), 5);
        assert_eq!(Reader::new(&[0x80, 0, 0, 0, 5]).len_value().unwrap(), 5);
    }

    #[test]
    fn encoded_and_invalid_length_bytes() {
        assert_eq!(Reader::new(&[0xc3]).len().unwrap(), Len::Encoded(3));
        assert_eq!(Reader::new(&[0xff]).len().unwrap(), Len::Encoded(0x3f));
        assert!(Reader::new(&[0xc0]).len_value().is_err());
        for bad in [0x82, 0x90, 0xbf] {
            assert!(
                Reader::new(&[bad, 0, 0, 0, 0, 0, 0, 0, 0]).len().is_err(),
                "{bad:#x}"
            );
        }
    }

    #[test]
    fn strings_round_trip() {
        let long_text = b"compressible text, compressible text, compressible text".repeat(20);
        let binary: Vec<u8> = (0..=255).collect();
        let cases: &[&[u8]] = &[
            b"",
            b"0",
            b"-1",
            b"12345678901",
            b"2147483647",
            b"-2147483648",
            b"2147483648",
            b"007",
            b"+1",
            b" 1",
            b"-0",
            b"-",
            b"1-",
            &[b'a'; 20],
            &[b'a'; 21],
            &long_text,
            &binary,
        ];
        for &s in cases {
            for compress in [false, true] {
                assert_eq!(
                    read_string(&encoded_string(s, compress)).unwrap(),
                    s,
                    "{s:?}"
                );
            }
        }
    }

    #[test]
    fn integer_encoding_chooses_like_redis() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"0", &[0xc0, 0x00]),
            (b"-1", &[0xc0, 0xff]),
            (b"127", &[0xc0, 0x7f]),
            (b"128", &[0xc1, 0x80, 0x00]),
            (b"-32768", &[0xc1, 0x00, 0x80]),
            (b"32768", &[0xc2, 0x00, 0x80, 0x00, 0x00]),
            (b"2147483647", &[0xc2, 0xff, 0xff, 0xff, 0x7f]),
            (b"-2147483648", &[0xc2, 0x00, 0x00, 0x00, 0x80]),
        ];
        for &(s, want) in cases {
            assert_eq!(encoded_string(s, true), want, "{s:?}");
        }
        // Beyond 32 bits, not canonical, or too long: raw.
        for s in [
            &b"12345678901"[..],
            b"2147483648",
            b"007",
            b"+1",
            b" 1",
            b"-0",
            b"1 ",
        ] {
            let mut want = vec![s.len() as u8];
            want.extend_from_slice(s);
            assert_eq!(encoded_string(s, true), want, "{s:?}");
        }
    }

    #[test]
    fn compression_switch_and_threshold() {
        let s = [b'a'; 60];
        assert_eq!(encoded_string(&s, true)[0], 0xc3);
        assert_eq!(encoded_string(&s, false)[..2], [60, b'a']);
        // 20 bytes is never compressed, 21 is when it pays.
        assert_eq!(encoded_string(&[b'a'; 20], true)[0], 20);
        assert_eq!(encoded_string(&[b'a'; 21], true)[0], 0xc3);
    }

    #[test]
    fn int_strings() {
        for (v, want) in [
            (0i64, &b"\xc0\x00"[..]),
            (-129, b"\xc1\x7f\xff"),
            (i32::MIN as i64, b"\xc2\x00\x00\x00\x80"),
            (1 << 31, b"\x0a2147483648"),
            (i64::MIN, b"\x14-9223372036854775808"),
        ] {
            let mut out = Vec::new();
            put_int_string(&mut out, v);
            assert_eq!(out, want, "{v}");
            assert_eq!(read_string(&out).unwrap(), v.to_string().as_bytes());
        }
    }

    /// `SET k <value>` then `DUMP k` on redis-server 7.0.15, without the type byte (0) in front
    /// and the RDB version and CRC-64 (10 bytes) behind.
    const REDIS_DUMPS: &[(&[u8], &str)] = &[
        (b"", "00"),
        (b"0", "c000"),
        (b"-1", "c0ff"),
        (b"127", "c07f"),
        (b"128", "c18000"),
        (b"-128", "c080"),
        (b"-129", "c17fff"),
        (b"32767", "c1ff7f"),
        (b"32768", "c200800000"),
        (b"-32769", "c2ff7fffff"),
        (b"2147483647", "c2ffffff7f"),
        (b"2147483648", "0a32313437343833363438"),
        (b"-2147483648", "c200000080"),
        (b"-2147483649", "0b2d32313437343833363439"),
        (b"12345678901", "0b3132333435363738393031"),
        (b"007", "03303037"),
        (b"+1", "022b31"),
        (b" 1", "022031"),
        (b"-0", "022d30"),
        (b"hello", "0568656c6c6f"),
        (
            b"aaaaaaaaaaaaaaaaaaaa",
            "146161616161616161616161616161616161616161",
        ),
        (b"aaaaaaaaaaaaaaaaaaaaa", "c30615016161e00a00"),
        (
            b"abcabcabcabcabcabcabcabcabcabc",
            "c30b1e0361626361e00f02016263",
        ),
        (
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "c3093c016161e02f00016161",
        ),
        (
            b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "c3094040017878e03300017878",
        ),
    ];

    #[test]
    fn put_string_matches_redis_dump() {
        for &(value, dump) in REDIS_DUMPS {
            let ours = encoded_string(value, true);
            assert_eq!(ours, hex(dump), "{:?}", String::from_utf8_lossy(value));
            assert_eq!(read_string(&ours).unwrap(), value);
        }
    }

    #[test]
    fn reads_redis_lzf_dump_with_long_lengths() {
        // `SET k <Lorem ipsum …>` (123 bytes): Redis stored it raw with a 14-bit length.
        let lorem = b"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod \
            tempor incididunt ut labore et dolore magna aliqua.";
        let mut dump = vec![0x40, 0x7b];
        dump.extend_from_slice(lorem);
        assert_eq!(encoded_string(lorem, true), dump);
        // 64 `x`s: the original length 64 needs the 14-bit form inside the LZF header.
        let xs = hex("c3094040017878e03300017878");
        assert_eq!(read_string(&xs).unwrap(), [b'x'; 64]);
    }

    #[test]
    fn binary_doubles_are_bit_exact() {
        let nan_bits = 0x7ff8_0000_dead_beef_u64;
        for f in [
            0.0,
            -0.0,
            1.5,
            -1e300,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            let mut out = Vec::new();
            put_binary_double(&mut out, f);
            assert_eq!(out, f.to_le_bytes());
            assert_eq!(
                Reader::new(&out).binary_double().unwrap().to_bits(),
                f.to_bits()
            );
        }
        let mut out = Vec::new();
        put_binary_double(&mut out, f64::from_bits(nan_bits));
        assert_eq!(
            Reader::new(&out).binary_double().unwrap().to_bits(),
            nan_bits
        );
        assert_eq!(
            Reader::new(&1.0f64.to_le_bytes()[..7]).binary_double(),
            Err(TRUNCATED)
        );
    }

    fn old_double(bytes: &[u8]) -> Result<f64, FormatError> {
        Reader::new(bytes).old_double()
    }

    fn text_double(text: &str) -> Result<f64, FormatError> {
        let mut bytes = vec![text.len() as u8];
        bytes.extend_from_slice(text.as_bytes());
        old_double(&bytes)
    }

    #[test]
    fn old_doubles() {
        assert!(old_double(&[253]).unwrap().is_nan());
        assert_eq!(
            old_double(&[254]).unwrap().to_bits(),
            f64::INFINITY.to_bits()
        );
        assert_eq!(
            old_double(&[255]).unwrap().to_bits(),
            f64::NEG_INFINITY.to_bits()
        );
        for (text, want) in [
            ("1", 1.0),
            ("-2.5", -2.5),
            ("3.1415926535897931", std::f64::consts::PI),
            ("1.5e+20", 1.5e20),
            ("1.0000000000000001e+20", 1.000_000_000_000_000_1e20),
            ("1e-5", 1e-5),
            ("+.5", 0.5),
            ("5.", 5.0),
            ("inf", f64::INFINITY),
            ("-inf", f64::NEG_INFINITY),
            ("Infinity", f64::INFINITY),
        ] {
            // Bit equality: the text must parse to exactly the nearest double, as strtod does.
            assert_eq!(
                text_double(text).unwrap().to_bits(),
                want.to_bits(),
                "{text}"
            );
        }
        assert!(text_double("nan").unwrap().is_nan());
        for garbage in ["", "abc", "1.5x", " 1", "1 ", "--1", "1e", "0x10", "1\0"] {
            assert!(text_double(garbage).is_err(), "{garbage:?}");
        }
        assert!(old_double(&[3, b'1', b'.']).is_err(), "text past the end");
        assert!(old_double(&[0xff - 3, 0xff]).is_err());
    }

    #[test]
    fn expire_times() {
        let mut out = Vec::new();
        put_millis_le(&mut out, 1_700_000_000_123);
        out.extend_from_slice(&1_700_000_000u32.to_le_bytes());
        let mut r = Reader::new(&out);
        assert_eq!(r.millis_le().unwrap(), 1_700_000_000_123);
        assert_eq!(r.seconds_le().unwrap(), 1_700_000_000);
        assert!(r.is_empty());
        assert_eq!(r.seconds_le(), Err(TRUNCATED));
    }

    #[test]
    fn reader_position_and_bounds() {
        let mut r = Reader::new(b"\x01\x00\x00\x00\x02rest");
        assert_eq!(r.u8().unwrap(), 1);
        assert_eq!(r.u32_be().unwrap(), 2);
        assert_eq!((r.pos(), r.remaining()), (5, 4));
        assert!(r.bytes(5).is_err());
        assert_eq!(r.bytes(4).unwrap(), b"rest");
        assert!(r.is_empty());
        assert!(r.u8().is_err());
        assert_eq!(Reader::new(&[0; 8]).u64_be().unwrap(), 0);
    }

    #[test]
    fn hostile_strings_are_rejected() {
        let cases: &[(&[u8], &str)] = &[
            (&[0x05, b'a', b'b'], "unexpected end"),
            (
                &[0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
                "unexpected end",
            ),
            (&[0xbf, 0x00], "unknown RDB length encoding"),
            (&[0xc4], "unknown RDB string encoding"),
            (&[0xc1, 0x00], "unexpected end"),
            // LZF claiming 4 GiB, then 512 MiB + 1: over the string size limit.
            (
                &[0xc3, 0x02, 0x80, 0xff, 0xff, 0xff, 0xff, 0x00, 0x61],
                "size limit",
            ),
            (
                &[0xc3, 0x02, 0x80, 0x20, 0x00, 0x00, 0x01, 0x00, 0x61],
                "size limit",
            ),
            // 1 MiB from 2 bytes: under the limit, but no LZF stream expands that much.
            (
                &[0xc3, 0x02, 0x80, 0x00, 0x10, 0x00, 0x00, 0x00, 0x61],
                "can expand to",
            ),
            (&[0xc3, 0x05, 0x03, 0x00, 0x61], "longer than the RDB data"),
            (
                &[0xc3, 0xc0, 0x03, 0x00, 0x61],
                "encoding where a length belongs",
            ),
            (
                &[0xc3, 0x02, 0x03, 0x01, 0x61],
                "literal past the end of the input",
            ),
            (
                &[0xc3, 0x02, 0x03, 0x00, 0x61],
                "shorter than its stated length",
            ),
            (
                &[0xc3, 0x03, 0x01, 0x01, 0x61, 0x61],
                "literal past the stated length",
            ),
        ];
        for &(bytes, want) in cases {
            let err = read_string(bytes).unwrap_err();
            assert!(err.0.contains(want), "{bytes:x?}: got {err}, wanted {want}");
        }
    }

    #[test]
    fn every_truncation_is_an_error() {
        let mut valid = Vec::new();
        put_len(&mut valid, 1 << 40);
        put_len(&mut valid, 70_000);
        put_string(&mut valid, b"raw string value", true);
        put_string(&mut valid, b"-2147483648", true);
        put_string(&mut valid, b"-129", true);
        put_string(&mut valid, b"5", true);
        put_string(&mut valid, &b"abcdefgh".repeat(40), true);
        put_binary_double(&mut valid, 2.5);
        valid.extend_from_slice(&[3, b'1', b'.', b'5']);
        put_millis_le(&mut valid, 42);
        valid.extend_from_slice(&7u32.to_le_bytes());
        let read_all = |bytes: &[u8]| -> Result<(), FormatError> {
            let mut r = Reader::new(bytes);
            assert_eq!(r.len_value()?, 1 << 40);
            assert_eq!(r.len_value()?, 70_000);
            for _ in 0..5 {
                r.string()?;
            }
            r.binary_double()?;
            r.old_double()?;
            r.millis_le()?;
            r.seconds_le()?;
            Ok(())
        };
        read_all(&valid).unwrap();
        for cut in 0..valid.len() {
            assert!(read_all(&valid[..cut]).is_err(), "cut at {cut}");
        }
    }
}
