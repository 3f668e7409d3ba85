//! SplitMix64: the fixed-seed generator every workload draws from.
//!
//! All allocators of one run must see exactly the same sequence of sizes and victims, so the
//! generator is deterministic, tiny (one `u64` of state) and cheap enough (a few ns per draw) not
//! to dominate an alloc/free step. We write it here instead of depending on `rand`: the output of
//! `SmallRng` is explicitly not stable across `rand` versions, and a benchmark whose sequence moves
//! under a dependency bump stops being comparable with its own history.

/// Sebastiano Vigna's SplitMix64 (the generator Java's `SplittableRandom` uses).
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` by multiply-shift (Lemire). Without rejection the bias is at most
    /// `bound / 2^64`, which no benchmark here can observe; rejection would add a branch per draw.
    pub fn below(&mut self, bound: u64) -> u64 {
        debug_assert!(bound > 0);
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }

    /// Uniform in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        debug_assert!(low <= high);
        low + self.below(high - low + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn matches_reference_output() {
        // First outputs of the reference C implementation seeded with 0.
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(rng.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn between_stays_in_range_and_hits_both_ends() {
        let mut rng = SplitMix64::new(7);
        let (mut saw_low, mut saw_high) = (false, false);
        for _ in 0..10_000 {
            let v = rng.between(16, 20);
            assert!((16..=20).contains(&v));
            saw_low |= v == 16;
            saw_high |= v == 20;
        }
        assert!(saw_low && saw_high);
    }
}
