//! Seeded hashing for every map in this crate.
//!
//! ```text
//!  64-bit hash, most significant bit first (PageHash and IntMap):
//!  +----------------------+---------------------------+----------+--------+---------+
//!  | bucket prefix: depth | rest: 49 - depth bits     | hint: 8  | low: 3 | home: 4 |
//!  +----------------------+---------------------------+----------+--------+---------+
//!   63               64-d  (64-d-1) ..            15   14 ..   7   6 .. 4   3 ..   0
//! ```
//!
//! The directory is addressed by the top bits; the bucket's tenant slot `t` (from the directory
//! word) and the home (low four bits) name the entry's run, `16t + home`; the one-byte hint is
//! the eight bits above bit 6. The three never overlap while the depth stays at or below
//! [`DEPTH_LIMIT`] (32 < 49). Bits 4..=6 place nothing (an IntMap entry stores them).
//!
//! # Byte strings: foldhash with a per-process random seed
//! Keys are hashed with `foldhash::quality`, seeded from a process-wide random [`SharedSeed`]
//! plus a per-map 64-bit seed. We picked it over SipHash-1-3 for speed (about 2 ns versus 12 ns
//! for a 16-byte key; the lookup target is 1.5x hashbrown, which itself uses foldhash). Its
//! flooding resistance rests on the secret 448 bits of seed: an attacker who cannot observe hash
//! values cannot aim keys at one page. What an attacker *could* force is bounded anyway: probing
//! is bounded per page (a lookup reads one run of at most 127 entries); a bucket's run that
//! reaches that count splits the bucket, so colliding keys cost splits, not longer probes; and at `depth_max` the map reports [`crate::MapError::Full`]. A server that wants
//! cryptographic resistance swaps this one function for SipHash-1-3; nothing else depends on
//! which hash it is. (SmallMap hints use foldhash's `fast` steps with fixed seeds: a SmallMap
//! lookup compares at most eight keys whatever the hints, so they need no secret.)
//!
//! # Integers: a keyed bijective mix
//! [`IntHasher::mix`] is a keyed permutation of `u64` (xor key, xorshift-multiply, xor key,
//! xorshift-multiply, xorshift). Because it is invertible, an [`crate::IntMap`] stores only the
//! hash bits its position does not imply and recovers the key with [`IntHasher::unmix`].
//!
//! Keys below 2^32 (ids, counters: most integer keys) take a second family whose hash carries
//! only 32 bits of information, so that their entries store fewer bits:
//!
//! ```text
//!  x = perm32(key)                    a keyed permutation of u32, same construction
//!  h = | x: 32 bits | 0: 17 bits | x & 0x7fff: hint and home |
//! ```
//!
//! The prefix (top bits of `x`), the hint and the home (low 15 bits of `x`) come from where the
//! entry lives, so only the 17 - depth bits of `x` between them are stored. The two families'
//! hashes may coincide; an entry's form says which family it is, and a lookup only compares
//! entries of its key's family.
//!
//! [`SharedSeed`]: foldhash::SharedSeed

use foldhash::SharedSeed;
use std::hash::{BuildHasher, Hasher};

/// Deepest directory the maps allow: bucket prefixes are stored as `u32`.
pub const DEPTH_LIMIT: u8 = 32;

const M1: u64 = 0xbf58_476d_1ce4_e5b9;
const M2: u64 = 0x94d0_49bb_1331_11eb;

/// Multiplicative inverse of an odd `m` modulo 2^64 (Newton's iteration doubles the correct bits).
const fn inverse(m: u64) -> u64 {
    let mut inv = m;
    let mut round = 0;
    while round < 6 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(m.wrapping_mul(inv)));
        round += 1;
    }
    inv
}
/// Multiplicative inverse of an odd `m` modulo 2^32.
const fn inverse32(m: u32) -> u32 {
    let mut inv = m;
    let mut round = 0;
    while round < 5 {
        inv = inv.wrapping_mul(2u32.wrapping_sub(m.wrapping_mul(inv)));
        round += 1;
    }
    inv
}
const N1: u32 = 0x7feb_352d;
const N2: u32 = 0x846c_a68b;
const N1_INV: u32 = inverse32(N1);
const N2_INV: u32 = inverse32(N2);
const _: () = assert!(N1.wrapping_mul(N1_INV) == 1 && N2.wrapping_mul(N2_INV) == 1);
const M1_INV: u64 = inverse(M1);
const M2_INV: u64 = inverse(M2);
const _: () = assert!(M1.wrapping_mul(M1_INV) == 1 && M2.wrapping_mul(M2_INV) == 1);

/// A random 64-bit value drawn once per process from the OS (through std's `RandomState`).
pub fn process_random() -> u64 {
    use std::sync::OnceLock;
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64))
}

/// splitmix64: a cheap, well-mixed step for deriving seeds and random choices.
pub fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(M1);
    z = (z ^ (z >> 27)).wrapping_mul(M2);
    z ^ (z >> 31)
}

/// Hashes byte strings; one per map, cheap to copy.
#[derive(Clone, Debug)]
pub struct BytesHasher {
    state: foldhash::quality::SeedableRandomState,
}

impl BytesHasher {
    /// `Some(seed)` gives a reproducible hash (tests); `None` a per-process random one.
    pub fn new(seed: Option<u64>) -> Self {
        let state = match seed {
            Some(s) => {
                foldhash::quality::SeedableRandomState::with_seed(s, SharedSeed::global_fixed())
            }
            None => foldhash::quality::SeedableRandomState::with_seed(
                process_random(),
                SharedSeed::global_random(),
            ),
        };
        Self { state }
    }

    #[inline]
    pub fn hash(&self, bytes: &[u8]) -> u64 {
        let mut h = self.state.build_hasher();
        h.write(bytes);
        h.finish()
    }
}

/// The keyed bijection on `u64` used by [`crate::IntMap`].
#[derive(Clone, Copy, Debug)]
pub struct IntHasher {
    k0: u64,
    k1: u64,
}

impl IntHasher {
    pub fn new(seed: Option<u64>) -> Self {
        let s = seed.unwrap_or_else(process_random);
        Self {
            k0: splitmix(s),
            k1: splitmix(s ^ 0x0123_4567_89ab_cdef),
        }
    }

    /// The hash of `key`: the short family below 2^32 (see the module doc), else the wide one.
    #[inline]
    pub fn mix(self, key: u64) -> u64 {
        if key >> 32 == 0 {
            Self::short_hash(self.perm32(key as u32))
        } else {
            self.mix_wide(key)
        }
    }

    /// The hash of a short key whose permuted value is `x`.
    #[inline]
    pub fn short_hash(x: u32) -> u64 {
        let x = u64::from(x);
        (x << 32) | (x & 0x7fff)
    }

    /// The keyed permutation of `u32` behind short keys' hashes.
    #[inline]
    pub fn perm32(self, key: u32) -> u32 {
        let mut x = key ^ self.k0 as u32;
        x = (x ^ (x >> 16)).wrapping_mul(N1);
        x ^= self.k1 as u32;
        x = (x ^ (x >> 15)).wrapping_mul(N2);
        x ^ (x >> 16)
    }

    /// Inverse of [`IntHasher::perm32`].
    #[inline]
    pub fn unperm32(self, x: u32) -> u32 {
        // `x ^= x >> 16` is its own inverse on 32 bits; `x ^= x >> 15` needs x >> 30 too.
        let mut x = x ^ (x >> 16);
        x = x.wrapping_mul(N2_INV);
        x = x ^ (x >> 15) ^ (x >> 30);
        x ^= self.k1 as u32;
        x = x.wrapping_mul(N1_INV);
        x ^= x >> 16;
        x ^ self.k0 as u32
    }

    /// The wide family: a keyed permutation of `u64`.
    #[inline]
    pub fn mix_wide(self, key: u64) -> u64 {
        let mut x = key ^ self.k0;
        x = (x ^ (x >> 32)).wrapping_mul(M1);
        x ^= self.k1;
        x = (x ^ (x >> 29)).wrapping_mul(M2);
        x ^ (x >> 32)
    }

    /// Inverse of [`IntHasher::mix_wide`].
    #[inline]
    pub fn unmix(self, h: u64) -> u64 {
        // Each step of `mix` undone in reverse order. `x ^= x >> s` with s >= 32 is its own
        // inverse; for s = 29 the inverse needs the second term x >> 58.
        let mut x = h ^ (h >> 32);
        x = x.wrapping_mul(M2_INV);
        x = x ^ (x >> 29) ^ (x >> 58);
        x ^= self.k1;
        x = x.wrapping_mul(M1_INV);
        x ^= x >> 32;
        x ^ self.k0
    }
}

/// Runs of a page that belong to one tenant slot: tenant `t` owns runs `16t..16t + 16`.
pub const TENANT_RUNS: usize = 16;

/// Home of a hash within its tenant's runs (its low four bits).
#[inline]
pub fn home_of(h: u64) -> usize {
    (h & (TENANT_RUNS as u64 - 1)) as usize
}

/// The run of a page an entry with hash `h` lives in when its bucket is in tenant slot `tenant`.
#[inline]
pub fn run_of(tenant: usize, h: u64) -> usize {
    tenant * TENANT_RUNS + home_of(h)
}

/// One-byte hint (bits 7..15) of a hash.
#[inline]
pub fn hint_of(h: u64) -> u8 {
    (h >> 7) as u8
}

/// Bucket prefix of `h` at `depth` (0 for depth 0).
#[inline]
pub fn prefix_of(h: u64, depth: u8) -> u32 {
    if depth == 0 {
        0
    } else {
        (h >> (64 - u32::from(depth))) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_is_a_bijection() {
        let m = IntHasher::new(Some(7));
        let mut x = 1u64;
        for i in 0..100_000u64 {
            x = splitmix(x ^ i);
            for k in [x, i, u64::MAX - i] {
                assert_eq!(m.unmix(m.mix_wide(k)), k);
            }
            let short = (x >> 7) as u32;
            for k in [short, i as u32, u32::MAX - i as u32] {
                assert_eq!(m.unperm32(m.perm32(k)), k);
                let h = m.mix(u64::from(k));
                assert_eq!(h >> 32, u64::from(m.perm32(k)));
                assert_eq!(h & 0xffff_ffff, (h >> 32) & 0x7fff);
            }
        }
        // Sequential short keys spread over prefixes, hints and homes like random ones.
        let mut homes = [0u32; 128];
        let mut tops = [0u32; 16];
        for k in 0..(1u64 << 16) {
            let h = m.mix(k);
            homes[(h & 127) as usize] += 1;
            tops[(h >> 60) as usize] += 1;
        }
        assert!(homes.iter().all(|&c| (384..640).contains(&c)), "{homes:?}");
        assert!(tops.iter().all(|&c| (3584..4608).contains(&c)), "{tops:?}");
    }

    #[test]
    fn seeds_change_hashes() {
        assert_ne!(
            BytesHasher::new(Some(1)).hash(b"abc"),
            BytesHasher::new(Some(2)).hash(b"abc")
        );
        assert_ne!(
            IntHasher::new(Some(1)).mix(5),
            IntHasher::new(Some(2)).mix(5)
        );
    }
}
