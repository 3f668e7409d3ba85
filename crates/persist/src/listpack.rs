//! Listpacks: Redis 7's compact sequence of strings and integers, the payload of a small hash
//! (RDB type 16), a small zset (17) and each quicklist node of a list (18). Written by
//! [`Writer`] byte for byte as Redis's `lpAppend` writes them; read by [`validate`] and
//! [`entries`], which accept exactly what `lpValidateIntegrity(deep=1)` accepts.
//!
//! ```text
//!  0       4     6                                                     total-1
//!  ┌───────┬─────┬──────────────────────┬──────────────────────┬─────┬────┐
//!  │ total │count│ entry 0              │ entry 1              │ ... │ FF │
//!  │u32 LE │u16LE│ enc [data] backlen   │ enc [data] backlen   │     │    │
//!  └───────┴─────┴──────────────────────┴──────────────────────┴─────┴────┘
//!
//!  first byte of an entry          entry (encoding + data)      value
//!  0xxxxxxx                        1 byte                       uint 0..=127
//!  10LLLLLL  data[L]               1 + L                        string, L < 64
//!  110xxxxx  yyyyyyyy              2 bytes                      int -4096..=4095 (13 bits)
//!  1110LLLL  LLLLLLLL  data[L]     2 + L   (L big-endian 12b)   string, L < 4096
//!  F0  L:u32 LE  data[L]           5 + L                        string
//!  F1  i16 LE / F2 i24 LE / F3 i32 LE / F4 i64 LE               ints, 3/4/5/9 bytes
//!  F5..=FE                         invalid
//!  FF                              end of the listpack (not an entry)
//! ```
//!
//! Integers are two's complement in their width (13 bits for `110xxxxx`, the high 5 bits in
//! the first byte). The backlen after each entry holds the entry's size (encoding + data) so the
//! listpack can be walked from the end: 1 to 5 bytes, read right to left, 7 bits per byte, the
//! bit 0x80 set on every byte but the leftmost (the most significant, which is written first).
//!
//! Invariants (checked by [`validate`]):
//! - `total == bytes.len()`, `bytes.len() >= 7`, and the last byte is `FF`;
//! - entries tile `6..total-1` exactly: `FF` appears as the first byte of an entry only at
//!   `total - 1`;
//! - for every entry, `size(encoding + data) + size(backlen) <= remaining bytes before FF`, and
//!   the backlen decoded right to left equals `size(encoding + data)`;
//! - `count == number of entries`, unless `count == 65535` ("unknown": Redis stops counting
//!   there and readers must walk).
//!
//! Bytes per entry against Redis: identical by construction, this is Redis's format. A field
//! `"a"` costs 3 bytes (`81 61 02`), a value 1 costs 2 (`01 01`), so a small hash pays about
//! 5 bytes of overhead per pair.
//!
//! Redis's validator accepts encodings it never writes (a 12-bit header on a 5-byte string, a
//! 13-bit header on the integer 3, a backlen whose bytes run into the data when its value still
//! matches); we accept them too, since a DUMP that Redis restores must restore here. Where Redis
//! would overflow (a 32-bit string length near 4 GiB wraps its `uint32_t` entry size), we do the
//! arithmetic in `u64` and reject.

use crate::{Entry, FormatError};

/// `total` (u32) and `count` (u16).
const HEADER_SIZE: usize = 6;
const EOF: u8 = 0xFF;
/// The header's count once Redis stops counting.
const COUNT_UNKNOWN: u16 = u16::MAX;
/// Redis's backlen is at most 5 bytes of 7 bits.
const BACKLEN_SIZE_MAX: usize = 5;

const _: () = assert!(HEADER_SIZE == 4 + 2);
const _: () = assert!(BACKLEN_SIZE_MAX * 7 >= 32);

/// Builds a listpack by appending elements, as Redis's `lpAppend` does on an empty `lpNew`.
#[derive(Debug)]
pub struct Writer {
    /// The header (filled in by `finish`) and the entries so far; the `FF` comes last.
    bytes: Vec<u8>,
    entry_count: usize,
}

impl Default for Writer {
    fn default() -> Self {
        Self::new()
    }
}

impl Writer {
    pub fn new() -> Self {
        Writer {
            bytes: vec![0; HEADER_SIZE],
            entry_count: 0,
        }
    }

    /// Appends an element given as text. Redis stores the text as an integer when it is the
    /// canonical form of an i64 (`"12"`, `"-7"`; not `"007"`, `"+1"`, `"-0"` or `" 1"`), which
    /// is why a reader gets back [`Entry::Int`] for it.
    ///
    /// # Panics
    /// If `s` is 4 GiB or longer, which no listpack can hold.
    pub fn push_str(&mut self, s: &[u8]) {
        // `lpStringToInt64` is Redis's `string2ll`: canonical decimal text within i64.
        match resp::string2ll(s) {
            Some(v) => self.push_int(v),
            None => self.push_string(s),
        }
    }

    /// Appends an integer in the smallest of Redis's integer encodings that holds it.
    pub fn push_int(&mut self, v: i64) {
        let start = self.bytes.len();
        encode_int(&mut self.bytes, v);
        self.end_entry(start);
    }

    /// Elements appended so far.
    pub fn entry_count(&self) -> usize {
        self.entry_count
    }

    /// The length of the listpack `finish` will return: Redis callers bound a listpack's size
    /// (`lpSafeToAdd`, the `*-max-listpack-*` limits) before they append.
    pub fn size_bytes(&self) -> usize {
        self.bytes.len() + 1
    }

    /// The finished listpack.
    ///
    /// # Panics
    /// If it would exceed 4 GiB, where Redis's `lpInsert` refuses the append; callers bound
    /// sizes far below that.
    pub fn finish(mut self) -> Vec<u8> {
        self.bytes.push(EOF);
        let total = u32::try_from(self.bytes.len()).expect("listpack over 4 GiB");
        // Redis increments the count up to 65535 and then leaves it there.
        let count = u16::try_from(self.entry_count).unwrap_or(COUNT_UNKNOWN);
        self.bytes[0..4].copy_from_slice(&total.to_le_bytes());
        self.bytes[4..6].copy_from_slice(&count.to_le_bytes());
        self.bytes
    }

    fn push_string(&mut self, s: &[u8]) {
        let len = u32::try_from(s.len()).expect("listpack element over 4 GiB");
        let start = self.bytes.len();
        if len < 64 {
            self.bytes.push(0x80 | len as u8);
        } else if len < 4096 {
            self.bytes.push(0xE0 | (len >> 8) as u8);
            self.bytes.push(len as u8);
        } else {
            self.bytes.push(0xF0);
            self.bytes.extend_from_slice(&len.to_le_bytes());
        }
        self.bytes.extend_from_slice(s);
        self.end_entry(start);
    }

    /// Writes the backlen of the entry that began at `start`.
    fn end_entry(&mut self, start: usize) {
        let (backlen, size) = encode_backlen((self.bytes.len() - start) as u64);
        self.bytes.extend_from_slice(&backlen[..size]);
        self.entry_count += 1;
    }
}

/// Validates a listpack completely and returns its number of elements.
pub fn validate(lp: &[u8]) -> Result<usize, FormatError> {
    walk(lp, |_| {})
}

/// Validates a listpack and returns its elements in order; strings borrow from `lp`.
pub fn entries(lp: &[u8]) -> Result<Vec<Entry<'_>>, FormatError> {
    // Every entry takes at least 2 bytes, so this capacity is bounded by the input's size
    // whatever the header claims.
    let claimed = lp.get(4..6).map_or(0, |c| u16::from_le_bytes([c[0], c[1]]));
    let mut out = Vec::with_capacity(usize::from(claimed).min(lp.len() / 2));
    walk(lp, |entry| out.push(entry))?;
    Ok(out)
}

/// Checks the header, then every entry in order, handing each to `visit`. Each step advances
/// by at least 2 bytes, so the loop ends within `lp.len() / 2` steps.
fn walk<'a>(lp: &'a [u8], mut visit: impl FnMut(Entry<'a>)) -> Result<usize, FormatError> {
    if lp.len() < HEADER_SIZE + 1 {
        return Err(FormatError("listpack: shorter than its header"));
    }
    let total = u32::from_le_bytes([lp[0], lp[1], lp[2], lp[3]]);
    if u64::from(total) != lp.len() as u64 {
        return Err(FormatError(
            "listpack: header size differs from the payload's",
        ));
    }
    let end = lp.len() - 1;
    if lp[end] != EOF {
        return Err(FormatError("listpack: missing terminator"));
    }
    let mut pos = HEADER_SIZE;
    let mut count = 0usize;
    while lp[pos] != EOF {
        let (entry, next) = read_entry(lp, pos, end)?;
        visit(entry);
        pos = next;
        count += 1;
    }
    if pos != end {
        return Err(FormatError("listpack: terminator before the end"));
    }
    let claimed = u16::from_le_bytes([lp[4], lp[5]]);
    if claimed != COUNT_UNKNOWN && usize::from(claimed) != count {
        return Err(FormatError(
            "listpack: header count differs from the entries",
        ));
    }
    Ok(count)
}

/// What an entry's first bytes say: the size of its encoding header and of its data.
#[derive(Clone, Copy)]
enum Kind {
    /// An integer whose whole entry (header and value) is `size` bytes.
    Int { size: usize },
    /// A string of `len` bytes after a header of `header` bytes.
    Str { header: usize, len: u64 },
}

/// Decodes the entry at `pos` (whose first byte is not `FF`) and returns it with the position
/// of the next entry; every entry must end, backlen included, at or before `end` (the `FF`).
fn read_entry(lp: &[u8], pos: usize, end: usize) -> Result<(Entry<'_>, usize), FormatError> {
    let kind = kind_at(lp, pos)?;
    let size = match kind {
        Kind::Int { size } => size as u64,
        Kind::Str { header, len } => header as u64 + len,
    };
    let (_, backlen_size) = encode_backlen(size);
    let next = pos as u64 + size + backlen_size as u64;
    if next > end as u64 {
        return Err(FormatError("listpack: entry runs past the end"));
    }
    // `next <= end < lp.len()`, so every index below is in bounds.
    let next = next as usize;
    if decode_backlen(lp, next - 1) != Some(size) {
        return Err(FormatError(
            "listpack: backlen differs from the entry's size",
        ));
    }
    let entry = match kind {
        Kind::Int { size } => Entry::Int(decode_int(&lp[pos..pos + size])),
        Kind::Str { header, len } => {
            let data = pos + header;
            Entry::Str(&lp[data..data + len as usize])
        }
    };
    Ok((entry, next))
}

/// Classifies the entry at `pos` from its first byte and, for long strings, its length bytes.
fn kind_at(lp: &[u8], pos: usize) -> Result<Kind, FormatError> {
    let first = lp[pos];
    let length_bytes = |n: usize| {
        lp.get(pos + 1..pos + 1 + n)
            .ok_or(FormatError("listpack: entry header runs past the end"))
    };
    Ok(match first {
        0x00..=0x7F => Kind::Int { size: 1 },
        0x80..=0xBF => Kind::Str {
            header: 1,
            len: u64::from(first & 0x3F),
        },
        0xC0..=0xDF => Kind::Int { size: 2 },
        0xE0..=0xEF => {
            let low = length_bytes(1)?[0];
            Kind::Str {
                header: 2,
                len: u64::from(first & 0x0F) << 8 | u64::from(low),
            }
        }
        0xF0 => {
            let b = length_bytes(4)?;
            Kind::Str {
                header: 5,
                len: u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            }
        }
        0xF1 => Kind::Int { size: 3 },
        0xF2 => Kind::Int { size: 4 },
        0xF3 => Kind::Int { size: 5 },
        0xF4 => Kind::Int { size: 9 },
        0xF5..=0xFF => return Err(FormatError("listpack: invalid entry encoding")),
    })
}

/// The value of an integer entry, `raw` being its encoding byte and value bytes.
fn decode_int(raw: &[u8]) -> i64 {
    let mut le = [0u8; 8];
    match raw.len() {
        1 => i64::from(raw[0]),
        2 => {
            // 13-bit two's complement: shift the sign bit (bit 12) up to bit 15 and back.
            let v = u16::from(raw[0] & 0x1F) << 8 | u16::from(raw[1]);
            i64::from(((v << 3) as i16) >> 3)
        }
        n => {
            le[..n - 1].copy_from_slice(&raw[1..]);
            // Sign-extend from the value's top bit.
            let unused_bits = 8 * (9 - n) as u32;
            (i64::from_le_bytes(le) << unused_bits) >> unused_bits
        }
    }
}

/// Appends `v` in the smallest encoding that holds it, as `lpEncodeIntegerGetType`.
fn encode_int(out: &mut Vec<u8>, v: i64) {
    let le = v.to_le_bytes();
    match v {
        0..=127 => out.push(v as u8),
        -4096..=4095 => {
            let v13 = (v as u16) & 0x1FFF;
            out.extend_from_slice(&[0xC0 | (v13 >> 8) as u8, v13 as u8]);
        }
        -32_768..=32_767 => {
            out.push(0xF1);
            out.extend_from_slice(&le[..2]);
        }
        -8_388_608..=8_388_607 => {
            out.push(0xF2);
            out.extend_from_slice(&le[..3]);
        }
        -2_147_483_648..=2_147_483_647 => {
            out.push(0xF3);
            out.extend_from_slice(&le[..4]);
        }
        _ => {
            out.push(0xF4);
            out.extend_from_slice(&le);
        }
    }
}

/// The backlen for an entry of `size` bytes, as `lpEncodeBacklen` writes it: the most
/// significant 7-bit group first without the 0x80 bit, every following group with it. The
/// size thresholds (`< 16383`, not `<= 16383`, and so on) are Redis's, off by one from the
/// 7-bit boundaries; keeping them is what makes the bytes identical.
fn encode_backlen(size: u64) -> ([u8; BACKLEN_SIZE_MAX], usize) {
    let n = if size <= 127 {
        1
    } else if size < 16_383 {
        2
    } else if size < 2_097_151 {
        3
    } else if size < 268_435_455 {
        4
    } else {
        5
    };
    let mut out = [0u8; BACKLEN_SIZE_MAX];
    for (i, byte) in out[..n].iter_mut().enumerate() {
        let group = (size >> (7 * (n - 1 - i))) as u8;
        *byte = if i == 0 { group } else { group | 0x80 };
    }
    (out, n)
}

/// Reads a backlen right to left from `last`, as `lpDecodeBacklen`: `None` when more than 5
/// bytes carry the continuation bit.
fn decode_backlen(lp: &[u8], last: usize) -> Option<u64> {
    let mut value = 0u64;
    for i in 0..BACKLEN_SIZE_MAX {
        let byte = lp[last.checked_sub(i)?];
        value |= u64::from(byte & 0x7F) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_hex::hex;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn write(elements: &[&[u8]]) -> Vec<u8> {
        let mut w = Writer::new();
        for e in elements {
            w.push_str(e);
        }
        w.finish()
    }

    fn strs(v: &[&'static str]) -> Vec<&'static [u8]> {
        v.iter().map(|s| s.as_bytes()).collect()
    }

    // The fixtures below are listpacks taken from Redis 7.0.15's DUMP (rdbcompression off,
    // hash-max-listpack-value 5000) with the RDB type byte, string length, version and CRC
    // removed.

    /// `HSET h a 1 b hello c -7 d 1234567890123 e <"y" x 70>`
    const REDIS_HASH: &str = "75 00 00 00 0a 00 81 61 02 01 01 81 62 02 85 68 65 6c 6c 6f 06 \
        81 63 02 df f9 02 81 64 02 f4 cb 04 fb 71 1f 01 00 00 09 81 65 02 e0 46 79*70 48 ff";

    #[test]
    fn writes_redis_hash_bytes() {
        let y70 = "y".repeat(70);
        let elements = strs(&["a", "1", "b", "hello", "c", "-7", "d", "1234567890123", "e"]);
        let mut elements = elements;
        elements.push(y70.as_bytes());
        let want = hex(REDIS_HASH);
        assert_eq!(write(&elements), want);
        let got = entries(&want).unwrap();
        assert_eq!(got[1], Entry::Int(1));
        assert_eq!(got[3], Entry::Str(b"hello"));
        assert_eq!(got[5], Entry::Int(-7));
        assert_eq!(got[7], Entry::Int(1_234_567_890_123));
        assert_eq!(got[9], Entry::Str(y70.as_bytes()));
        assert_eq!(validate(&want), Ok(10));
    }

    /// Each integer width at both of its ends and one past them.
    const INTS: [i64; 22] = [
        0,
        127,
        128,
        -1,
        4095,
        -4096,
        4096,
        -4097,
        32767,
        -32768,
        32768,
        -32769,
        8_388_607,
        -8_388_608,
        8_388_608,
        -8_388_609,
        2_147_483_647,
        -2_147_483_648,
        2_147_483_648,
        -2_147_483_649,
        i64::MAX,
        i64::MIN,
    ];

    /// `HSET ints A 0 B 127 C 128 ...` with the values of `INTS`, fields `A`, `B`, ...
    const REDIS_INTS: &str = "bd 00 00 00 2c 00 81 41 02 00 01 81 42 02 7f 01 81 43 02 c0 80 02 \
        81 44 02 df ff 02 81 45 02 cf ff 02 81 46 02 d0 00 02 81 47 02 f1 00 10 03 81 48 02 f1 ff \
        ef 03 81 49 02 f1 ff 7f 03 81 4a 02 f1 00 80 03 81 4b 02 f2 00 80 00 04 81 4c 02 f2 ff 7f \
        ff 04 81 4d 02 f2 ff ff 7f 04 81 4e 02 f2 00 00 80 04 81 4f 02 f3 00 00 80 00 05 81 50 02 \
        f3 ff ff 7f ff 05 81 51 02 f3 ff ff ff 7f 05 81 52 02 f3 00 00 00 80 05 81 53 02 f4 00 00 \
        00 80 00 00 00 00 09 81 54 02 f4 ff ff ff 7f ff ff ff ff 09 81 55 02 f4 ff ff ff ff ff ff \
        ff 7f 09 81 56 02 f4 00 00 00 00 00 00 00 80 09 ff";

    #[test]
    fn writes_every_integer_width_as_redis() {
        let want = hex(REDIS_INTS);
        let fields: Vec<[u8; 1]> = (0..INTS.len() as u8).map(|i| [b'A' + i]).collect();
        // Once as text (the way HSET receives them), once as integers.
        let mut from_text = Writer::new();
        let mut from_int = Writer::new();
        for (field, v) in fields.iter().zip(INTS) {
            from_text.push_str(field);
            from_text.push_str(v.to_string().as_bytes());
            from_int.push_str(field);
            from_int.push_int(v);
        }
        assert_eq!(from_text.finish(), want);
        assert_eq!(from_int.finish(), want);
        let values: Vec<Entry> = entries(&want)
            .unwrap()
            .into_iter()
            .skip(1)
            .step_by(2)
            .collect();
        let expected: Vec<Entry> = INTS.iter().map(|&v| Entry::Int(v)).collect();
        assert_eq!(values, expected);
    }

    /// Texts that look like integers but are not canonical, so Redis keeps them as strings.
    const NOT_INTS: [&str; 12] = [
        "007",
        "-0",
        "+1",
        " 1",
        "9223372036854775808",
        "-9223372036854775809",
        "",
        "1.5",
        "-",
        "12345678901234567890",
        "00",
        "1 ",
    ];

    /// `HSET strs a 007 b -0 ...` with the values of `NOT_INTS`, fields `a`, `b`, ...
    const REDIS_NOT_INTS: &str = "8f 00 00 00 18 00 81 61 02 83 30 30 37 04 81 62 02 82 2d 30 03 \
        81 63 02 82 2b 31 03 81 64 02 82 20 31 03 81 65 02 93 39 32 32 33 33 37 32 30 33 36 38 35 \
        34 37 37 35 38 30 38 14 81 66 02 94 2d 39 32 32 33 33 37 32 30 33 36 38 35 34 37 37 35 38 \
        30 39 15 81 67 02 80 01 81 68 02 83 31 2e 35 04 81 69 02 81 2d 02 81 6a 02 94 31 32 33 34 \
        35 36 37 38 39 30 31 32 33 34 35 36 37 38 39 30 15 81 6b 02 82 30 30 03 81 6c 02 82 31 20 \
        03 ff";

    #[test]
    fn keeps_non_canonical_integers_as_strings() {
        let want = hex(REDIS_NOT_INTS);
        let mut w = Writer::new();
        for (i, s) in NOT_INTS.iter().enumerate() {
            w.push_str(&[b'a' + i as u8]);
            w.push_str(s.as_bytes());
        }
        assert_eq!(w.finish(), want);
        let values: Vec<Entry> = entries(&want)
            .unwrap()
            .into_iter()
            .skip(1)
            .step_by(2)
            .collect();
        let expected: Vec<Entry> = NOT_INTS.iter().map(|s| Entry::Str(s.as_bytes())).collect();
        assert_eq!(values, expected);
    }

    /// `HSET lens a "" b x c <x*63> d <x*64> e <x*127> f <x*128> g <x*4095> h <x*4096>`: every
    /// string header class and the 1-, 2- and 3-byte backlens.
    const REDIS_LENS: &str = "b9 21 00 00 10 00 81 61 02 80 01 81 62 02 81 78 02 81 63 02 bf \
        78*63 40 81 64 02 e0 40 78*64 42 81 65 02 e0 7f 78*127 01 81 81 66 02 e0 80 78*128 01 82 \
        81 67 02 ef ff 78*4095 20 81 81 68 02 f0 00 10 00 00 78*4096 20 85 ff";
    const LENS: [usize; 8] = [0, 1, 63, 64, 127, 128, 4095, 4096];

    #[test]
    fn writes_every_string_length_class_as_redis() {
        let want = hex(REDIS_LENS);
        let mut w = Writer::new();
        for (i, n) in LENS.iter().enumerate() {
            w.push_str(&[b'a' + i as u8]);
            w.push_str(&vec![b'x'; *n]);
        }
        assert_eq!(w.size_bytes(), want.len());
        assert_eq!(w.finish(), want);
        let got = entries(&want).unwrap();
        for (i, n) in LENS.iter().enumerate() {
            let x = vec![b'x'; *n];
            assert_eq!(got[2 * i + 1], Entry::Str(&x));
        }
    }

    /// `ZADD z 1 a 2.5 b -3 c`: member then score, by score; integral scores become integers.
    const REDIS_ZSET: &str =
        "1a 00 00 00 06 00 81 63 02 df fd 02 81 61 02 01 01 81 62 02 83 32 2e 35 04 ff";

    #[test]
    fn writes_redis_zset_bytes() {
        let want = hex(REDIS_ZSET);
        assert_eq!(write(&strs(&["c", "-3", "a", "1", "b", "2.5"])), want);
        assert_eq!(validate(&want), Ok(6));
    }

    #[test]
    fn count_saturates_at_65535_as_redis() {
        // `HSET big f0 0 f1 1 ... f32999 32999` (hash-max-listpack-entries 100000): Redis's
        // listpack is 380905 bytes with FNV-1a-64 0xcc9e8a123ec84d57 and the header
        // `e9 cf 05 00 ff ff`.
        let mut w = Writer::new();
        for i in 0..33_000 {
            w.push_str(format!("f{i}").as_bytes());
            w.push_str(i.to_string().as_bytes());
        }
        assert_eq!(w.entry_count(), 66_000);
        let lp = w.finish();
        assert_eq!(lp.len(), 380_905);
        assert_eq!(lp[..6], hex("e9 cf 05 00 ff ff"));
        let fnv = lp.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        assert_eq!(fnv, 0xcc9e_8a12_3ec8_4d57);
        assert_eq!(validate(&lp), Ok(66_000));
        // With the count unknown, Redis accepts any number of entries.
        assert_eq!(validate(&hex("09 00 00 00 ff ff 01 01 ff")), Ok(1));
    }

    #[test]
    fn empty_listpack() {
        let lp = Writer::new().finish();
        assert_eq!(lp, hex("07 00 00 00 00 00 ff"));
        assert_eq!(validate(&lp), Ok(0));
        assert_eq!(entries(&lp), Ok(vec![]));
    }

    #[test]
    fn backlen_bytes_match_redis_thresholds() {
        let cases: [(u64, &str); 8] = [
            (127, "7f"),
            (128, "01 80"),
            (16_382, "7f fe"),
            (16_383, "00 ff ff"),
            (2_097_150, "7f ff fe"),
            (2_097_151, "00 ff ff ff"),
            (268_435_455, "00 ff ff ff ff"),
            (u64::from(u32::MAX), "0f ff ff ff ff"),
        ];
        for (size, want) in cases {
            let (bytes, n) = encode_backlen(size);
            assert_eq!(bytes[..n], hex(want), "size {size}");
            assert_eq!(
                decode_backlen(&bytes[..n], n - 1),
                Some(size),
                "size {size}"
            );
        }
        assert_eq!(decode_backlen(&hex("80 80 80 80 80"), 4), None);
        assert_eq!(decode_backlen(&hex("80 80"), 1), None);
    }

    #[test]
    fn accepts_encodings_redis_accepts_but_never_writes() {
        // "ab" under a 12-bit header, 3 under a 13-bit header, "c" under a 32-bit header.
        let lp = hex("16 00 00 00 03 00 e0 02 61 62 04 c0 03 02 f0 01 00 00 00 63 06 ff");
        assert_eq!(
            entries(&lp),
            Ok(vec![Entry::Str(b"ab"), Entry::Int(3), Entry::Str(b"c")])
        );
    }

    #[test]
    fn rejects_malformed_headers_and_entries() {
        let bad = [
            ("", "empty"),
            ("07 00 00 00 00 00", "no room for the terminator"),
            ("08 00 00 00 00 00 ff", "size larger than the payload"),
            ("06 00 00 00 00 00 ff", "size smaller than the payload"),
            ("07 00 00 00 00 00 fe", "no terminator"),
            ("09 00 00 00 02 00 01 01 ff", "count too high"),
            ("09 00 00 00 00 00 01 01 ff", "count too low"),
            ("09 00 00 00 01 00 01 02 ff", "backlen too high"),
            ("09 00 00 00 01 00 f5 01 ff", "invalid encoding"),
            ("0a 00 00 00 01 00 01 01 ff ff", "terminator inside"),
            ("0a 00 00 00 01 00 82 61 03 ff", "string past the end"),
            (
                "0c 00 00 00 01 00 f0 ff ff ff ff ff",
                "32-bit length near 4 GiB",
            ),
            ("08 00 00 00 01 00 e0 ff", "12-bit header past the end"),
        ];
        for (text, why) in bad {
            assert!(validate(&hex(text)).is_err(), "{why}");
            assert!(entries(&hex(text)).is_err(), "{why}");
        }
    }

    #[test]
    fn rejects_every_truncation() {
        for fixture in [
            REDIS_HASH,
            REDIS_INTS,
            REDIS_NOT_INTS,
            REDIS_ZSET,
            REDIS_LENS,
        ] {
            let lp = hex(fixture);
            for len in 0..lp.len() {
                assert!(validate(&lp[..len]).is_err(), "truncated at {len}");
            }
            // The same bytes with the header's size fixed up still end early: an entry is cut
            // or the terminator is missing.
            for len in HEADER_SIZE + 1..lp.len() {
                let mut cut = lp[..len].to_vec();
                cut[..4].copy_from_slice(&(len as u32).to_le_bytes());
                assert!(
                    validate(&cut).is_err(),
                    "truncated at {len} with fixed size"
                );
            }
        }
    }

    #[test]
    fn survives_every_byte_flip() {
        for fixture in [REDIS_HASH, REDIS_INTS, REDIS_NOT_INTS, REDIS_ZSET] {
            let lp = hex(fixture);
            for i in 0..lp.len() {
                for mask in [0x01, 0x02, 0x10, 0x40, 0x80, 0xFF] {
                    let mut bad = lp.clone();
                    bad[i] ^= mask;
                    // Either outcome is fine; what matters is no panic and that both agree.
                    let count = validate(&bad);
                    assert_eq!(entries(&bad).map(|e| e.len()), count);
                }
            }
        }
    }

    #[test]
    fn survives_random_bytes_after_a_valid_header() {
        let mut rng = SmallRng::seed_from_u64(7);
        for _ in 0..20_000 {
            let len = rng.gen_range(7..40);
            let mut lp: Vec<u8> = (0..len).map(|_| rng.r#gen()).collect();
            lp[..4].copy_from_slice(&(len as u32).to_le_bytes());
            lp[len - 1] = EOF;
            let count = validate(&lp);
            assert_eq!(entries(&lp).map(|e| e.len()), count);
        }
    }

    #[test]
    fn parses_integers_as_string2ll() {
        let yes: [(&str, i64); 6] = [
            ("0", 0),
            ("-1", -1),
            ("9223372036854775807", i64::MAX),
            ("-9223372036854775808", i64::MIN),
            ("10", 10),
            ("-4096", -4096),
        ];
        for (text, v) in yes {
            assert_eq!(resp::string2ll(text.as_bytes()), Some(v), "{text}");
        }
        for text in NOT_INTS {
            assert_eq!(resp::string2ll(text.as_bytes()), None, "{text}");
        }
        assert_eq!(resp::string2ll(b"18446744073709551616"), None);
        assert_eq!(resp::string2ll(b"-18446744073709551615"), None);
    }

    /// Seeded model test: random elements (integers of every width, their text, look-alikes,
    /// strings of every length class) written and read back, against a plain list.
    #[test]
    fn random_elements_round_trip() {
        let mut rng = SmallRng::seed_from_u64(0x5eed);
        for _ in 0..300 {
            let mut w = Writer::new();
            let mut model: Vec<Vec<u8>> = Vec::new();
            for _ in 0..rng.gen_range(0..60) {
                let text = random_element(&mut rng);
                w.push_str(&text);
                model.push(text);
            }
            let lp = w.finish();
            let got = entries(&lp).unwrap();
            assert_eq!(got.len(), model.len());
            for (entry, text) in got.iter().zip(&model) {
                match *entry {
                    Entry::Int(v) => assert_eq!(v.to_string().as_bytes(), &text[..]),
                    Entry::Str(s) => {
                        assert_eq!(s, &text[..]);
                        assert_eq!(resp::string2ll(s), None);
                    }
                }
            }
        }
    }

    fn random_element(rng: &mut SmallRng) -> Vec<u8> {
        match rng.gen_range(0..5) {
            0 => {
                let bits = rng.gen_range(0..64);
                (rng.r#gen::<i64>() >> bits).to_string().into_bytes()
            }
            1 => format!("0{}", rng.r#gen::<u16>()).into_bytes(),
            2 => {
                let n = [0, 1, 63, 64, 4095, 4096, 5000][rng.gen_range(0..7)];
                vec![b'z'; n]
            }
            3 => (0..rng.gen_range(0..100)).map(|_| rng.r#gen()).collect(),
            _ => (0..rng.gen_range(1..22))
                .map(|_| b"0123456789-"[rng.gen_range(0..11)])
                .collect(),
        }
    }
}
