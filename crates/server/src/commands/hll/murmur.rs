//! The hash HyperLogLog feeds on: MurmurHash2, 64-bit version (`MurmurHash64A`), exactly as
//! Redis 7.0's `hyperloglog.c` computes it with the seed `0xadc83b19`, and `hllPatLen`, which
//! cuts a hash into a register index and a run length.
//!
//! ```text
//!  hash (64 bits):  [ 50 bits: run source | 14 bits: register index ]
//!  run length = trailing zeros of (hash >> 14 | 1 << 50) + 1          ∈ 1 ..= 51
//! ```
//!
//! The 8-byte blocks are read little-endian, as Redis reads them on x86-64 and arm64 (its
//! big-endian build assembles the same little-endian value byte by byte), so the registers an
//! element lands in, hence every stored HLL, are the same bytes as Redis's.

use super::repr::{REGISTERS, RUN_MAX};

/// Redis's seed for the HyperLogLog hash.
pub const SEED: u32 = 0xadc8_3b19;

const M: u64 = 0xc6a4_a793_5bd1_e995;
const R: u32 = 47;

/// `MurmurHash64A(key, len, seed)` as Redis computes it. Redis passes the length as a C `int`;
/// every length a client can send (at most `proto-max-bulk-len`, 512 MB by default) fits, and
/// the multiplication wraps as C's unsigned one does.
pub fn murmur64a(key: &[u8], seed: u32) -> u64 {
    let mut h = u64::from(seed) ^ (key.len() as u64).wrapping_mul(M);
    let mut blocks = key.chunks_exact(8);
    for block in &mut blocks {
        let mut k = u64::from_le_bytes(block.try_into().expect("an 8-byte chunk"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        // C's fall-through switch: byte i of the tail lands at bits 8·i, then one multiply.
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// `hllPatLen`: the register `element` updates and the length of the `000…1` pattern of its
/// hash (1 ..= [`RUN_MAX`]).
#[inline]
pub fn pattern(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    // The bit at 50 ends the run, so the count is at most Q + 1 = 51.
    let run = (hash >> 14) | (1 << 50);
    (index, run.trailing_zeros() as u8 + 1)
}

const _: () = assert!(REGISTERS == 1 << 14);
const _: () = assert!(RUN_MAX == 51);

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by Redis 7.0's `MurmurHash64A`, compiled from `hyperloglog.c` with gcc,
    /// for every tail length (0 to 7), whole blocks, and bytes above 0x7f.
    #[test]
    fn hash_is_redis_murmur64a() {
        let cases: &[(&[u8], u64)] = &[
            (b"", 0xd8df_ea65_85bc_9732),
            (b"a", 0x53d2_470a_9b43_b1a7),
            (b"ab", 0x0eae_d676_4371_42cf),
            (b"abc", 0x77ec_90ae_b374_e502),
            (b"abcd", 0xb079_ee3d_4420_2b3e),
            (b"abcde", 0x52a7_daa2_324a_0e8e),
            (b"abcdef", 0x3a4f_3a74_f538_b54f),
            (b"abcdefg", 0x22fe_613b_b08c_9602),
            (b"abcdefgh", 0xf3a6_5df5_5991_4567),
            (b"abcdefghi", 0x834f_ba4d_9152_daf7),
            (b"hello world, this is a longer key!", 0x3652_21ed_612d_21cf),
            (b"\xff\xfe\x80\x00z", 0xd652_7098_5954_17e2),
        ];
        for &(input, expected) in cases {
            assert_eq!(murmur64a(input, SEED), expected, "{input:?}");
        }
    }

    #[test]
    fn pattern_is_in_range() {
        for i in 0..10_000u32 {
            let (index, count) = pattern(&i.to_le_bytes());
            assert!(index < REGISTERS);
            assert!((1..=RUN_MAX).contains(&count));
        }
    }
}
