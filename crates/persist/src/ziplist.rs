//! Ziplists: the compact sequence Redis ≤ 6 wrote for small lists (RDB type 10, and inside
//! quicklist nodes, type 14), small zsets (12) and small hashes (13). Redis 7 converts them to
//! listpacks on load and never writes them; densekv likewise only reads them. [`validate`]
//! accepts exactly what `ziplistValidateIntegrity(deep=1)` accepts.
//!
//! ```text
//!  0        4        8      10                                         zlbytes-1
//!  ┌────────┬────────┬──────┬───────────────────────┬─────┬───────────────┬────┐
//!  │zlbytes │ zltail │zllen │ entry 0               │ ... │ entry n-1     │ FF │
//!  │ u32 LE │ u32 LE │u16 LE│ prevlen enc [data]    │     │ (at zltail)   │    │
//!  └────────┴────────┴──────┴───────────────────────┴─────┴───────────────┴────┘
//!
//!  prevlen: 1 byte 0..=253, or FE + u32 LE (the previous entry's whole size, 0 for the first)
//!
//!  encoding (first byte)           header    data        value
//!  00LLLLLL                        1         L bytes     string, L < 64
//!  01LLLLLL LLLLLLLL               2         L bytes     string, L 14 bits BIG-endian
//!  10xxxxxx L:u32 BIG-endian       5         L bytes     string (xxxxxx ignored, as Redis)
//!  C0 / D0 / E0                    1         2 / 4 / 8   i16 / i32 / i64, LE
//!  F0                              1         3           i24, LE
//!  FE                              1         1           i8
//!  F1..=FD                         1         0           immediate 0..=12 (byte - F1)
//!  other 11xxxxxx                  invalid
//! ```
//!
//! Invariants (checked by [`validate`]):
//! - `zlbytes == bytes.len() >= 11`, the last byte is `FF`, `zltail <= zlbytes - 1`;
//! - entries tile `10..zlbytes-1` exactly, each one ending at or before the `FF`;
//! - each entry's prevlen equals the previous entry's size (0 for the first), and reaches no
//!   further back than the first entry;
//! - `zltail` is the offset of the last entry when there is one (an empty ziplist's `zltail`
//!   only has to be in range, as Redis writes 10 there);
//! - `zllen == number of entries`, unless `zllen == 65535` ("unknown").
//!
//! Redis accepts non-canonical forms it never writes (a 5-byte prevlen holding a small size, a
//! 14-bit header on a short string, an integer in a wider encoding than needed) and so do we.
//! Bytes per entry against a listpack: the same idea with the length in front instead of
//! behind, which made insertions cascade; Redis 7 replaced it for that reason.

use crate::{Entry, FormatError};

/// `zlbytes` (u32), `zltail` (u32), `zllen` (u16).
const HEADER_SIZE: usize = 10;
const END: u8 = 0xFF;
/// A prevlen's first byte at or above this means four length bytes follow.
const BIG_PREVLEN: u8 = 0xFE;
const COUNT_UNKNOWN: u16 = u16::MAX;

const _: () = assert!(HEADER_SIZE == 4 + 4 + 2);

/// Validates a ziplist completely and returns its number of elements.
pub fn validate(zl: &[u8]) -> Result<usize, FormatError> {
    walk(zl, |_| {})
}

/// Validates a ziplist and returns its elements in order; strings borrow from `zl`.
pub fn entries(zl: &[u8]) -> Result<Vec<Entry<'_>>, FormatError> {
    // Every entry takes at least 2 bytes, so the capacity is bounded by the input's size.
    let claimed = zl
        .get(8..10)
        .map_or(0, |c| u16::from_le_bytes([c[0], c[1]]));
    let mut out = Vec::with_capacity(usize::from(claimed).min(zl.len() / 2));
    walk(zl, |entry| out.push(entry))?;
    Ok(out)
}

/// Checks the header, then every entry in order, handing each to `visit`. Each step advances
/// by at least 2 bytes (prevlen and encoding), so the loop ends within `zl.len() / 2` steps.
fn walk<'a>(zl: &'a [u8], mut visit: impl FnMut(Entry<'a>)) -> Result<usize, FormatError> {
    if zl.len() < HEADER_SIZE + 1 {
        return Err(FormatError("ziplist: shorter than its header"));
    }
    let zlbytes = read_u32_le(zl, 0);
    if u64::from(zlbytes) != zl.len() as u64 {
        return Err(FormatError(
            "ziplist: header size differs from the payload's",
        ));
    }
    let end = zl.len() - 1;
    if zl[end] != END {
        return Err(FormatError("ziplist: missing terminator"));
    }
    let tail = read_u32_le(zl, 4) as usize;
    if tail > end {
        return Err(FormatError("ziplist: tail offset out of range"));
    }
    let mut pos = HEADER_SIZE;
    let mut prev: Option<(usize, usize)> = None; // (offset, size) of the previous entry
    let mut count = 0usize;
    while zl[pos] != END {
        let (entry, size) = read_entry(zl, pos, end, prev.map_or(0, |(_, size)| size))?;
        visit(entry);
        prev = Some((pos, size));
        pos += size;
        count += 1;
    }
    if pos != end {
        return Err(FormatError("ziplist: terminator before the end"));
    }
    if prev.is_some_and(|(offset, _)| offset != tail) {
        return Err(FormatError("ziplist: tail offset is not the last entry"));
    }
    let claimed = u16::from_le_bytes([zl[8], zl[9]]);
    if claimed != COUNT_UNKNOWN && usize::from(claimed) != count {
        return Err(FormatError(
            "ziplist: header count differs from the entries",
        ));
    }
    Ok(count)
}

/// Decodes the entry at `pos` (whose first byte is not `FF`), returning it with its size. It
/// must end at or before `end` (the `FF`) and its prevlen must be `prev_size`.
fn read_entry(
    zl: &[u8],
    pos: usize,
    end: usize,
    prev_size: usize,
) -> Result<(Entry<'_>, usize), FormatError> {
    const PAST_END: FormatError = FormatError("ziplist: entry runs past the end");
    let (prevlen, prevlen_size) = if zl[pos] < BIG_PREVLEN {
        (u64::from(zl[pos]), 1)
    } else {
        let b = zl.get(pos + 1..pos + 5).ok_or(PAST_END)?;
        (u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])), 5)
    };
    let enc_pos = pos + prevlen_size;
    let (header_size, data_size, is_str) = encoding_at(zl, enc_pos)?;
    let size = (prevlen_size + header_size) as u64 + data_size;
    if pos as u64 + size > end as u64 {
        return Err(PAST_END);
    }
    // Redis checks the prevlen reaches no further back than the first entry before comparing
    // it; with the comparison below that check can only fail alongside it.
    if prevlen != prev_size as u64 {
        return Err(FormatError(
            "ziplist: prevlen differs from the previous entry's size",
        ));
    }
    // `pos + size <= end < zl.len()`: the slices below are in bounds.
    let size = size as usize;
    let data = &zl[enc_pos + header_size..pos + size];
    let entry = if is_str {
        Entry::Str(data)
    } else {
        Entry::Int(decode_int(zl[enc_pos], data))
    };
    Ok((entry, size))
}

/// The encoding at `pos`: its header size, its data size, and whether it is a string.
fn encoding_at(zl: &[u8], pos: usize) -> Result<(usize, u64, bool), FormatError> {
    const PAST_END: FormatError = FormatError("ziplist: entry header runs past the end");
    let first = *zl.get(pos).ok_or(PAST_END)?;
    Ok(match first {
        0x00..=0x3F => (1, u64::from(first & 0x3F), true),
        0x40..=0x7F => {
            let low = *zl.get(pos + 1).ok_or(PAST_END)?;
            (2, u64::from(first & 0x3F) << 8 | u64::from(low), true)
        }
        // Redis masks the first byte with 0xC0 before comparing, so 0x81..=0xBF read as 0x80.
        0x80..=0xBF => {
            let b = zl.get(pos + 1..pos + 5).ok_or(PAST_END)?;
            (
                5,
                u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
                true,
            )
        }
        0xC0 => (1, 2, false),
        0xD0 => (1, 4, false),
        0xE0 => (1, 8, false),
        0xF0 => (1, 3, false),
        0xFE => (1, 1, false),
        0xF1..=0xFD => (1, 0, false),
        _ => return Err(FormatError("ziplist: invalid entry encoding")),
    })
}

/// The value of an integer entry from its encoding byte and its (little-endian) data.
fn decode_int(encoding: u8, data: &[u8]) -> i64 {
    if data.is_empty() {
        // Immediate: F1 is 0, FD is 12.
        return i64::from(encoding & 0x0F) - 1;
    }
    let mut le = [0u8; 8];
    le[..data.len()].copy_from_slice(data);
    // Sign-extend from the top bit of the data's width.
    let unused_bits = 8 * (8 - data.len()) as u32;
    (i64::from_le_bytes(le) << unused_bits) >> unused_bits
}

fn read_u32_le(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_hex::hex;

    /// A ziplist as Redis ≤ 6 wrote it (`ziplistPush` at the tail): smallest encodings, 1-byte
    /// prevlen below 254. Test-only: densekv never writes ziplists.
    fn build(elements: &[Entry]) -> Vec<u8> {
        let mut body = Vec::new();
        let mut prev_size = 0usize;
        let mut tail = HEADER_SIZE;
        for e in elements {
            tail = HEADER_SIZE + body.len();
            let start = body.len();
            if prev_size < 254 {
                body.push(prev_size as u8);
            } else {
                body.push(0xFE);
                body.extend_from_slice(&(prev_size as u32).to_le_bytes());
            }
            encode(&mut body, *e);
            prev_size = body.len() - start;
        }
        let total = HEADER_SIZE + body.len() + 1;
        let mut zl = Vec::with_capacity(total);
        zl.extend_from_slice(&(total as u32).to_le_bytes());
        zl.extend_from_slice(&(tail as u32).to_le_bytes());
        let count = u16::try_from(elements.len()).unwrap_or(COUNT_UNKNOWN);
        zl.extend_from_slice(&count.to_le_bytes());
        zl.extend_from_slice(&body);
        zl.push(END);
        zl
    }

    /// `zipStoreEntryEncoding` plus `zipTryEncoding`'s smallest integer width.
    fn encode(out: &mut Vec<u8>, e: Entry) {
        match e {
            Entry::Str(s) if s.len() < 64 => out.push(s.len() as u8),
            Entry::Str(s) if s.len() < 16384 => {
                out.extend_from_slice(&(0x4000 | s.len() as u16).to_be_bytes());
            }
            Entry::Str(s) => {
                out.push(0x80);
                out.extend_from_slice(&(s.len() as u32).to_be_bytes());
            }
            Entry::Int(v @ 0..=12) => out.push(0xF1 + v as u8),
            Entry::Int(v) => {
                let (enc, width) = match v {
                    -128..=127 => (0xFE, 1),
                    -32_768..=32_767 => (0xC0, 2),
                    -8_388_608..=8_388_607 => (0xF0, 3),
                    -2_147_483_648..=2_147_483_647 => (0xD0, 4),
                    _ => (0xE0, 8),
                };
                out.push(enc);
                out.extend_from_slice(&v.to_le_bytes()[..width]);
            }
        }
        if let Entry::Str(s) = e {
            out.extend_from_slice(s);
        }
    }

    #[test]
    fn reads_the_examples_in_redis_ziplist_c() {
        // "2" and "5", then "Hello World" appended.
        let zl = hex("0f 00 00 00 0c 00 00 00 02 00 00 f3 02 f6 ff");
        assert_eq!(entries(&zl), Ok(vec![Entry::Int(2), Entry::Int(5)]));
        let zl = hex(
            "1c 00 00 00 0e 00 00 00 03 00 00 f3 02 f6 02 0b 48 65 6c 6c 6f 20 57 6f 72 6c 64 ff",
        );
        assert_eq!(
            entries(&zl),
            Ok(vec![
                Entry::Int(2),
                Entry::Int(5),
                Entry::Str(b"Hello World")
            ])
        );
        assert_eq!(build(&entries(&zl).unwrap()), zl);
    }

    #[test]
    fn reads_every_integer_encoding_by_hand() {
        // One entry each, written out by hand: i8 -2, i16 -300, i24 0x123456, i32 -10^7,
        // i64 i64::MIN, immediates 0 and 12.
        let zl = hex("2b 00 00 00 28 00 00 00 07 00 \
             00 fe fe \
             03 c0 d4 fe \
             04 f0 56 34 12 \
             05 d0 80 69 67 ff \
             06 e0 00 00 00 00 00 00 00 80 \
             0a f1 \
             02 fd \
             ff");
        let want = [-2, -300, 0x12_3456, -10_000_000, i64::MIN, 0, 12].map(Entry::Int);
        assert_eq!(entries(&zl), Ok(want.to_vec()));
        assert_eq!(build(&want), zl);
    }

    #[test]
    fn reads_every_width_at_its_limits() {
        let ints = [
            0,
            12,
            13,
            -1,
            127,
            -128,
            128,
            -129,
            32_767,
            -32_768,
            32_768,
            8_388_607,
            -8_388_608,
            8_388_608,
            i64::from(i32::MAX),
            i64::from(i32::MIN),
            i64::from(i32::MAX) + 1,
            i64::MAX,
            i64::MIN,
        ];
        let want: Vec<Entry> = ints.iter().map(|&v| Entry::Int(v)).collect();
        let zl = build(&want);
        assert_eq!(entries(&zl), Ok(want));
    }

    #[test]
    fn reads_every_string_class_and_big_prevlens() {
        let lens = [0usize, 63, 64, 253, 254, 16_383, 16_384, 3];
        let texts: Vec<Vec<u8>> = lens.iter().map(|&n| vec![b's'; n]).collect();
        let want: Vec<Entry> = texts.iter().map(|t| Entry::Str(t)).collect();
        let zl = build(&want);
        // The third entry, after "" (2 bytes) and 63 bytes (65): prevlen 65, then the 14-bit
        // length 64 big-endian.
        assert_eq!(zl[HEADER_SIZE + 2 + 65..][..3], [65, 0x40, 0x40]);
        assert_eq!(entries(&zl), Ok(want));
    }

    #[test]
    fn accepts_what_redis_accepts_but_never_writes() {
        // A 5-byte prevlen holding 2, "ab" under a 14-bit header, and a 32-bit string header
        // with its ignored low bits set (0x81).
        let zl = hex("1d 00 00 00 15 00 00 00 03 00 \
             00 f2 \
             fe 02 00 00 00 40 02 61 62 \
             09 81 00 00 00 01 63 \
             ff");
        assert_eq!(
            entries(&zl),
            Ok(vec![Entry::Int(1), Entry::Str(b"ab"), Entry::Str(b"c")])
        );
        // An empty ziplist, its tail anywhere in range.
        assert_eq!(validate(&hex("0b 00 00 00 0a 00 00 00 00 00 ff")), Ok(0));
        assert_eq!(validate(&hex("0b 00 00 00 03 00 00 00 00 00 ff")), Ok(0));
        // Count unknown.
        assert_eq!(
            validate(&hex("0d 00 00 00 0a 00 00 00 ff ff 00 f1 ff")),
            Ok(1)
        );
    }

    #[test]
    fn count_saturates_at_65535() {
        let want: Vec<Entry> = (0..70_000).map(|i| Entry::Int(i % 13)).collect();
        let zl = build(&want);
        assert_eq!(zl[8..10], [0xFF, 0xFF]);
        assert_eq!(validate(&zl), Ok(70_000));
    }

    #[test]
    fn rejects_malformed_ziplists() {
        let bad = [
            (
                "0b 00 00 00 0a 00 00 00 00 00",
                "no room for the terminator",
            ),
            (
                "0c 00 00 00 0a 00 00 00 00 00 ff",
                "size larger than the payload",
            ),
            ("0b 00 00 00 0a 00 00 00 00 00 fe", "no terminator"),
            (
                "0b 00 00 00 0b 00 00 00 00 00 ff",
                "tail past the terminator",
            ),
            (
                "0d 00 00 00 0b 00 00 00 01 00 00 f1 ff",
                "tail not at the last entry",
            ),
            ("0d 00 00 00 0a 00 00 00 02 00 00 f1 ff", "count too high"),
            (
                "0d 00 00 00 0a 00 00 00 01 00 01 f1 ff",
                "first prevlen not 0",
            ),
            (
                "0f 00 00 00 0c 00 00 00 02 00 00 f1 01 f1 ff",
                "prevlen too small",
            ),
            ("0d 00 00 00 0a 00 00 00 01 00 00 c1 ff", "invalid encoding"),
            (
                "0d 00 00 00 0a 00 00 00 01 00 00 ff ff",
                "invalid encoding FF",
            ),
            (
                "0e 00 00 00 0a 00 00 00 01 00 00 f1 ff ff",
                "terminator inside",
            ),
            (
                "0e 00 00 00 0a 00 00 00 01 00 00 02 61 ff",
                "string past the end",
            ),
            (
                "0e 00 00 00 0a 00 00 00 01 00 00 c0 01 ff",
                "int past the end",
            ),
            (
                "0e 00 00 00 0a 00 00 00 01 00 00 80 ff ff",
                "32-bit header past end",
            ),
            (
                "0e 00 00 00 0a 00 00 00 01 00 fe 00 00 ff",
                "prevlen past the end",
            ),
        ];
        for (text, why) in bad {
            assert!(validate(&hex(text)).is_err(), "{why}");
            assert!(entries(&hex(text)).is_err(), "{why}");
        }
    }

    fn sample() -> Vec<u8> {
        let long = vec![b'q'; 300];
        build(&[
            Entry::Str(b"field"),
            Entry::Int(7),
            Entry::Str(&long),
            Entry::Int(-70_000),
            Entry::Int(i64::MAX),
            Entry::Str(b""),
            Entry::Int(300),
        ])
    }

    #[test]
    fn rejects_every_truncation() {
        let zl = sample();
        for len in 0..zl.len() {
            assert!(validate(&zl[..len]).is_err(), "truncated at {len}");
            if len > HEADER_SIZE {
                let mut cut = zl[..len].to_vec();
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
        let zl = sample();
        for i in 0..zl.len() {
            for mask in [0x01, 0x02, 0x10, 0x40, 0x80, 0xFF] {
                let mut bad = zl.clone();
                bad[i] ^= mask;
                let count = validate(&bad);
                assert_eq!(entries(&bad).map(|e| e.len()), count);
            }
        }
    }
}
