//! LZF, the compression Redis applies to RDB strings over 20 bytes (its bundled liblzf 3.6).
//!
//! # Stream format
//!
//! A stream is a sequence of tokens; the first byte's top three bits say which:
//!
//! ```text
//! literal run   000LLLLL  <L+1 bytes>            copy the next L+1 (1..=32) input bytes
//! short ref     LLLooooo  oooooooo               copy L+2 (3..=8) bytes from distance o+1
//! long ref      111ooooo  LLLLLLLL  oooooooo     copy L+9 (9..=264) bytes from distance o+1
//! ```
//!
//! The 13-bit `o` is split high bits in the first byte, low bits in the last; the distance
//! `o + 1` (1..=8192) counts back from the current end of the output, and a reference may overlap
//! the bytes it produces (distance 1, length 100 repeats one byte 100 times). There is no header
//! and no terminator: the RDB record around the stream carries both lengths.
//!
//! # Compressor
//!
//! [`compress`] follows liblzf's `lzf_compress` as Redis builds it (`HLOG 16`, `VERY_FAST`), so
//! for the same input it emits the same bytes as redis-server: a 65,536-slot table, indexed by a
//! hash of the next three bytes, remembers the last position with that hash; a candidate at
//! distance ≤ 8192 whose three bytes really match is extended greedily up to 264 bytes; after a
//! match, the two positions before the new cursor are hashed in as well. One difference cannot
//! be mirrored: liblzf leaves its table uninitialised (stack garbage), which can, rarely, let it
//! find a match a fresh table would not; densekv always starts from an empty table, which is what
//! liblzf does in the common case. (Checked against redis-server 7.0.15 on 2,100 strings of
//! 21 bytes to 70 KB, compressible and not: same bytes, same raw fallbacks.) The table is one per
//! thread, reused: each slot holds `generation << 32 | position`, and a slot written by an
//! earlier call (another generation) reads as empty, so every call sees a fresh table without
//! clearing 512 KiB (an RDB save compresses millions of short strings).
//!
//! Redis stores a string compressed only when `lzf_compress` succeeds with an output buffer of
//! `len - 4` bytes (`rdbSaveLzfStringObject`): compression has to save at least four bytes.
//! liblzf's space checks are slightly conservative (it gives up when a back reference *might* not
//! fit), and [`compress`] repeats those exact checks so that it falls back to raw storage for
//! exactly the strings Redis does.
//!
//! # Decompressor
//!
//! [`decompress`] treats its input as hostile: it refuses an `out_len` more than
//! [`EXPANSION_MAX`] (88) times the input's length before allocating, allocates exactly
//! `out_len` otherwise, and checks every token before applying it (literal past the end of the
//! input, reference before the start of the output, any write past `out_len`, a stream that
//! ends early). Invariant on success: `output.len() == out_len` and the whole input was consumed.
//!
//! One case is stricter than Redis: liblzf reports an error as "0 bytes written", so Redis takes
//! any stream that fails at once as a valid empty string when the stated length is 0. densekv
//! rejects such a stream; only an empty stream decodes to an empty string.

use crate::FormatError;

/// Longest literal run one token can hold.
const LITERAL_MAX: usize = 1 << 5;
/// Back-reference distances are 1..=8192; liblzf's `off` (distance - 1) must stay below this.
const OFFSET_LIMIT: usize = 1 << 13;
/// Longest back reference: 7 + 255 encoded, plus the implied 2.
const MATCH_MAX: usize = (1 << 8) + (1 << 3);
/// liblzf's `HLOG`: the hash table has 2^16 slots.
const HASH_LOG: u32 = 16;
const HASH_SLOTS: usize = 1 << HASH_LOG;

/// The most output one input byte can stand for: a long reference is 3 bytes for 264 bytes of
/// output, and a literal is worse. A stream of `n` bytes that claims to expand to more than
/// `n * EXPANSION_MAX` bytes is corrupt, which lets [`decompress`] refuse it before allocating.
pub const EXPANSION_MAX: usize = MATCH_MAX / 3;

/// Compresses `input` as Redis would for an RDB string, or returns `None` when Redis would store
/// it raw: inputs of 4 bytes or fewer, and any input whose compressed form does not fit in
/// `input.len() - 4` bytes under liblzf's space checks.
pub fn compress(input: &[u8]) -> Option<Vec<u8>> {
    if input.len() <= 4 {
        return None;
    }
    // Positions are stamped in 32 bits: a longer input (4 GiB; strings stop at 512 MiB unless
    // proto-max-bulk-len is raised past it) is stored raw.
    if input.len() > u32::MAX as usize {
        return None;
    }
    TABLE.with(|cell| {
        let mut guard = cell.borrow_mut();
        let (table, generation) = &mut *guard;
        if table.is_empty() || *generation == u64::from(u32::MAX) {
            *table = vec![0; HASH_SLOTS];
            *generation = 0;
        }
        *generation += 1;
        Compressor::new(input, input.len() - 4, table, *generation).run()
    })
}

/// liblzf's hash of the three bytes at a position: only the low 24 bits of `v` matter, since the
/// shifted term keeps bits 8..24 and the multiplied term bits 0..16 before the mask.
fn hash_slot(v: u32) -> usize {
    ((v >> (3 * 8 - HASH_LOG)).wrapping_sub(v.wrapping_mul(5)) as usize) & (HASH_SLOTS - 1)
}

fn three_bytes(input: &[u8], pos: usize) -> u32 {
    (u32::from(input[pos]) << 16) | (u32::from(input[pos + 1]) << 8) | u32::from(input[pos + 2])
}

/// State of one `compress` call. `out` always ends with the header byte reserved for the open
/// literal run followed by that run's `literal_count` bytes; the header is written when the run
/// closes (or dropped if the run is empty), as liblzf does.
struct Compressor<'a> {
    input: &'a [u8],
    out: Vec<u8>,
    /// The output must stay within this many bytes (Redis passes `len - 4`).
    budget: usize,
    literal_count: usize,
    /// Last position seen per hash slot, stamped with `generation`; 0 means empty, which costs
    /// nothing because liblzf never references position 0 either (`ref > in_data`).
    table: &'a mut [u64],
    generation: u64,
}

thread_local! {
    /// The hash table `compress` reuses, and the generation of its last call.
    static TABLE: std::cell::RefCell<(Vec<u64>, u64)> = const { std::cell::RefCell::new((Vec::new(), 0)) };
}

impl<'a> Compressor<'a> {
    fn new(input: &'a [u8], budget: usize, table: &'a mut [u64], generation: u64) -> Self {
        let mut out = Vec::with_capacity(budget + 1);
        out.push(0); // header of the first literal run
        Compressor {
            input,
            out,
            budget,
            literal_count: 0,
            table,
            generation,
        }
    }

    /// The position last stored in `slot` by this call (0: none).
    fn slot(&self, slot: usize) -> usize {
        let stamped = self.table[slot];
        if stamped >> 32 == self.generation {
            (stamped & u64::from(u32::MAX)) as usize
        } else {
            0
        }
    }

    fn remember(&mut self, slot: usize, pos: usize) {
        self.table[slot] = self.generation << 32 | pos as u64;
    }

    fn run(mut self) -> Option<Vec<u8>> {
        let input = self.input;
        let mut pos = 0;
        while pos + 2 < input.len() {
            let slot = hash_slot(three_bytes(input, pos));
            let candidate = self.slot(slot);
            self.remember(slot, pos);
            if candidate > 0 && pos - candidate - 1 < OFFSET_LIMIT && self.matches3(candidate, pos)
            {
                let len = self.match_len(candidate, pos);
                self.emit_reference(pos - candidate - 1, len)?;
                pos += len;
                if pos + 2 >= input.len() {
                    break;
                }
                // VERY_FAST: hash the two positions just before the cursor as well.
                for back in [2, 1] {
                    self.remember(hash_slot(three_bytes(input, pos - back)), pos - back);
                }
            } else {
                if self.out.len() >= self.budget {
                    return None;
                }
                self.push_literal(input[pos]);
                pos += 1;
            }
        }
        // liblzf's closing check: the at most two bytes left plus a run header must fit.
        if self.out.len() + 3 > self.budget {
            return None;
        }
        for &byte in &input[pos..] {
            self.push_literal(byte);
        }
        self.close_run();
        Some(self.out)
    }

    fn matches3(&self, candidate: usize, pos: usize) -> bool {
        self.input[candidate..candidate + 3] == self.input[pos..pos + 3]
    }

    /// Length of the match at `pos`, extended exactly as liblzf does: at least 3; when more than
    /// 16 bytes may match, bytes 3..19 are compared unconditionally (its unrolled loop), so the
    /// cap is then at least 19, otherwise `MATCH_MAX` and the input end (less 2) bound it.
    fn match_len(&self, candidate: usize, pos: usize) -> usize {
        let input = self.input;
        let len_max = (input.len() - pos - 2).min(MATCH_MAX);
        let cap = if len_max > 16 {
            len_max.max(19)
        } else {
            len_max.max(3)
        };
        let mut len = 3;
        while len < cap && input[candidate + len] == input[pos + len] {
            len += 1;
        }
        len
    }

    /// Closes the open literal run and writes a back reference of `len` bytes (3..=264) at
    /// `offset` (distance - 1), then opens a new run.
    fn emit_reference(&mut self, offset: usize, len: usize) -> Option<()> {
        // liblzf reserves room for the longest reference and the next run header.
        let empty_run = usize::from(self.literal_count == 0);
        if self.out.len() - empty_run + 4 >= self.budget {
            return None;
        }
        self.close_run();
        let encoded = len - 2;
        let offset_high = (offset >> 8) as u8;
        if encoded < 7 {
            self.out.push(offset_high + ((encoded as u8) << 5));
        } else {
            self.out.push(offset_high + (7 << 5));
            self.out.push((encoded - 7) as u8);
        }
        self.out.push(offset as u8);
        self.out.push(0); // header of the next literal run
        self.literal_count = 0;
        Some(())
    }

    fn push_literal(&mut self, byte: u8) {
        self.out.push(byte);
        self.literal_count += 1;
        if self.literal_count == LITERAL_MAX {
            self.close_run();
            self.out.push(0);
            self.literal_count = 0;
        }
    }

    /// Writes the open run's header, or removes the reserved header if the run is empty.
    fn close_run(&mut self) {
        if self.literal_count == 0 {
            self.out.pop();
        } else {
            let header = self.out.len() - self.literal_count - 1;
            self.out[header] = (self.literal_count - 1) as u8;
        }
    }
}

/// Decodes an LZF stream that must expand to exactly `out_len` bytes. `out_len` is allocated up
/// front, so the caller bounds it (the RDB reader caps it at the largest string it accepts).
pub fn decompress(input: &[u8], out_len: usize) -> Result<Vec<u8>, FormatError> {
    if out_len > input.len().saturating_mul(EXPANSION_MAX) {
        return Err(FormatError(
            "LZF stated length beyond what the data can expand to",
        ));
    }
    let mut out = Vec::with_capacity(out_len);
    let mut pos = 0;
    while pos < input.len() {
        let ctrl = usize::from(input[pos]);
        pos += 1;
        if ctrl < LITERAL_MAX {
            pos = copy_literal(input, pos, ctrl + 1, &mut out, out_len)?;
        } else {
            pos = copy_reference(input, pos, ctrl, &mut out, out_len)?;
        }
    }
    if out.len() != out_len {
        return Err(FormatError("LZF data shorter than its stated length"));
    }
    Ok(out)
}

fn copy_literal(
    input: &[u8],
    pos: usize,
    count: usize,
    out: &mut Vec<u8>,
    out_len: usize,
) -> Result<usize, FormatError> {
    if out.len() + count > out_len {
        return Err(FormatError("LZF literal past the stated length"));
    }
    let literal = input
        .get(pos..pos + count)
        .ok_or(FormatError("LZF literal past the end of the input"))?;
    out.extend_from_slice(literal);
    Ok(pos + count)
}

/// Applies the back reference whose first byte `ctrl` was just read; `pos` is the next byte.
fn copy_reference(
    input: &[u8],
    mut pos: usize,
    ctrl: usize,
    out: &mut Vec<u8>,
    out_len: usize,
) -> Result<usize, FormatError> {
    const TRUNCATED: FormatError = FormatError("LZF back reference truncated");
    let mut len = ctrl >> 5;
    if len == 7 {
        len += usize::from(*input.get(pos).ok_or(TRUNCATED)?);
        pos += 1;
    }
    let offset_low = usize::from(*input.get(pos).ok_or(TRUNCATED)?);
    pos += 1;
    let distance = (((ctrl & 0x1f) << 8) | offset_low) + 1;
    let len = len + 2;
    if out.len() + len > out_len {
        return Err(FormatError("LZF back reference past the stated length"));
    }
    if distance > out.len() {
        return Err(FormatError(
            "LZF back reference before the start of the output",
        ));
    }
    let start = out.len() - distance;
    if distance >= len {
        out.extend_from_within(start..start + len);
    } else {
        // Overlapping copy: each byte may be one this same reference just produced.
        for i in start..start + len {
            out.push(out[i]);
        }
    }
    Ok(pos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn round_trip(data: &[u8]) {
        if let Some(packed) = compress(data) {
            assert!(packed.len() <= data.len() - 4, "saved fewer than 4 bytes");
            assert_eq!(decompress(&packed, data.len()).unwrap(), data);
        }
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Streams taken from `DUMP` on redis-server 7.0.15 (the LZF body of the RDB string, after
    /// `c3 <compressed len> <original len>`), with the value that was `SET`.
    fn redis_vectors() -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut bytes_512: Vec<u8> = (0..=255).collect();
        bytes_512.extend(0..=255);
        let raw_512 = [
            "1f000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
            "1f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
            "1f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f",
            "1f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
            "1fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf",
            "1fc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf",
            "1fe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
            "0000e0f4ff01feff",
        ]
        .concat();
        vec![
            (b"a".repeat(60), hex("016161e02f00016161")),
            (b"a".repeat(21), hex("016161e00a00")),
            (b"x".repeat(64), hex("017878e03300017878")),
            (b"abc".repeat(10), hex("0361626361e00f02016263")),
            (bytes_512, hex(&raw_512)),
        ]
    }

    #[test]
    fn decodes_redis_streams() {
        for (value, packed) in redis_vectors() {
            assert_eq!(decompress(&packed, value.len()).unwrap(), value);
        }
    }

    #[test]
    fn compresses_to_redis_bytes() {
        for (value, packed) in redis_vectors() {
            assert_eq!(
                compress(&value).unwrap(),
                packed,
                "value of {} bytes",
                value.len()
            );
        }
    }

    #[test]
    fn short_inputs_are_not_compressed() {
        for len in 0..=4 {
            assert_eq!(compress(&b"aaaa"[..len]), None);
        }
        // Redis keeps 20 `a`s raw (rdbSaveRawString skips LZF at ≤ 20 bytes), but LZF itself
        // would save bytes: the 20-byte floor belongs to the codec, not to this module.
        round_trip(&[b'a'; 20]);
    }

    #[test]
    fn round_trips_short_inputs() {
        let mut rng = SmallRng::seed_from_u64(1);
        for len in 0..64 {
            for alphabet in [1u8, 2, 4, 255] {
                let data: Vec<u8> = (0..len).map(|_| rng.gen_range(0..=alphabet)).collect();
                round_trip(&data);
            }
        }
    }

    #[test]
    fn round_trips_random_data() {
        let mut rng = SmallRng::seed_from_u64(0x1f2e_3d4c);
        for _ in 0..300 {
            let len = rng.gen_range(0..20_000);
            let alphabet = *[1u8, 3, 16, 255].get(rng.gen_range(0..4)).unwrap();
            let data: Vec<u8> = (0..len).map(|_| rng.gen_range(0..=alphabet)).collect();
            round_trip(&data);
        }
    }

    #[test]
    fn incompressible_data_falls_back() {
        let mut rng = SmallRng::seed_from_u64(7);
        let data: Vec<u8> = (0..4096).map(|_| rng.r#gen()).collect();
        assert_eq!(compress(&data), None);
    }

    #[test]
    fn round_trips_repetitive_data() {
        let long_run = vec![b'z'; 1 << 20];
        let packed = compress(&long_run).unwrap();
        // Each 264-byte reference costs 3 bytes.
        assert!(packed.len() < long_run.len() / 80);
        assert_eq!(decompress(&packed, long_run.len()).unwrap(), long_run);

        let text = b"the quick brown fox jumps over the lazy dog. ".repeat(1000);
        round_trip(&text);
        // A repeat just inside and just beyond the 8192-byte window.
        let mut rng = SmallRng::seed_from_u64(3);
        for gap in [8180, 8192, 8200] {
            let block: Vec<u8> = (0..gap).map(|_| rng.r#gen()).collect();
            round_trip(&block.repeat(3));
        }
    }

    #[test]
    fn rejects_hostile_streams() {
        let cases: &[(&[u8], usize, &str)] = &[
            (&[0x02, b'a', b'b'], 3, "literal past the end of the input"),
            (&[0x01, b'a', b'b'], 1, "literal past the stated length"),
            (&[0x00, b'a', 0x20], 4, "back reference truncated"),
            (&[0x00, b'a', 0xe0, 0x00], 12, "back reference truncated"),
            (&[0x00, b'a', 0x20, 0x01], 4, "before the start"),
            (&[0x20, 0x00], 3, "before the start"),
            (&[0x00, b'a', 0x20, 0x00], 3, "past the stated length"),
            (&[0x00, b'a'], 2, "shorter than its stated length"),
            (&[], 1, "beyond what the data can expand to"),
        ];
        for &(input, out_len, want) in cases {
            let err = decompress(input, out_len).unwrap_err();
            assert!(err.0.contains(want), "{input:?}: got {err}, wanted {want}");
        }
        assert_eq!(decompress(&[], 0).unwrap(), b"");
        // 4 GiB claimed from 3 bytes is refused before anything is allocated.
        let err = decompress(&[0x00, b'a', 0xe0], 1 << 32).unwrap_err();
        assert!(err.0.contains("beyond what the data can expand to"));
        // The densest valid stream: one literal, then 264-byte references.
        let mut dense = vec![0x00, b'a'];
        for _ in 0..10 {
            dense.extend_from_slice(&[0xe0, 0xff, 0x00]);
        }
        assert_eq!(decompress(&dense, 1 + 2640).unwrap(), vec![b'a'; 2641]);
    }

    #[test]
    fn truncated_and_mutated_streams_never_panic() {
        let data = b"abcabcabcabc-hello-hello-hello-0123456789-0123456789".repeat(4);
        let packed = compress(&data).unwrap();
        for cut in 0..packed.len() {
            assert!(
                decompress(&packed[..cut], data.len()).is_err(),
                "cut at {cut}"
            );
        }
        let mut rng = SmallRng::seed_from_u64(9);
        for _ in 0..2000 {
            let mut bad = packed.clone();
            let i = rng.gen_range(0..bad.len());
            bad[i] = rng.r#gen();
            // Any result is fine as long as it is exact or an error.
            if let Ok(out) = decompress(&bad, data.len()) {
                assert_eq!(out.len(), data.len());
            }
        }
    }
}
