//! Size classes for slab objects: which slot size a request gets, and how many blocks a slab of
//! that class spans.
//!
//! ```text
//!  class sizes (bytes)                         spacing            classes
//!  8, 16, 24, … 256                            8                  32
//!  288, 320, … 512                             32   (8 / doubling) 8
//!  576, … 1024 · 1152, … 2048 · … · 18432, … 32768                 8 per doubling, 48
//! ```
//! 88 classes in all. Eight classes per doubling bound the rounding waste of a request by 1/9 of
//! its class and average it to about 1/17 (5.9%) for sizes spread evenly over a doubling; below
//! 256 bytes the 8-byte spacing keeps the waste of the typical 16–512 B object near 3%. Four classes
//! per doubling (jemalloc) would average 11%, which the heap's ≤ 6% goal rules out.
//!
//! A slab of class `s` spans the fewest blocks `n ≤ 16` whose tail waste
//! `(n · 8192) mod s` is at most 1/64 of the slab (else the `n` with the least waste), so a 9 KiB
//! class takes 9 blocks holding exactly 8 slots rather than 1 block holding none.
//!
//! Invariants: `SIZES` is strictly increasing and every size is a multiple of 8 (8-byte
//! alignment of every slot); `class_of(n)` is the smallest class with `SIZES[c] >= n`.

use crate::BLOCK_BYTES;

/// Largest request served from slabs. Larger ones (and exact multiples of a block) take whole
/// block groups.
pub const SMALL_MAX_BYTES: usize = 32 << 10;

/// Number of slab size classes.
pub const CLASS_COUNT: usize = 88;

/// Slot size of every class.
pub static SIZES: [u32; CLASS_COUNT] = build_sizes();

/// Blocks spanned by one slab of each class.
pub static SLAB_BLOCKS: [u8; CLASS_COUNT] = build_slab_blocks();

/// `CLASS_OF_8[(n + 7) / 8]` is the class of a request of `n` bytes, for `1 <= n <= SMALL_MAX_BYTES`.
static CLASS_OF_8: [u8; SMALL_MAX_BYTES / 8 + 1] = build_class_table();

const fn build_sizes() -> [u32; CLASS_COUNT] {
    let mut sizes = [0u32; CLASS_COUNT];
    let mut i = 0;
    while i < 32 {
        sizes[i] = 8 * (i as u32 + 1);
        i += 1;
    }
    let mut base = 256u32;
    while i < CLASS_COUNT {
        let step = base / 8;
        let mut k = 1;
        while k <= 8 {
            sizes[i] = base + step * k;
            i += 1;
            k += 1;
        }
        base *= 2;
    }
    sizes
}

const fn build_slab_blocks() -> [u8; CLASS_COUNT] {
    let sizes = build_sizes();
    let mut out = [0u8; CLASS_COUNT];
    let mut c = 0;
    while c < CLASS_COUNT {
        let size = sizes[c] as usize;
        let mut best_n = 0;
        let mut best_waste = usize::MAX;
        let mut n = 1;
        while n <= 16 {
            let bytes = n * BLOCK_BYTES;
            if bytes >= size {
                let waste = bytes % size;
                // waste/bytes <= 1/64, compared without division.
                if waste * 64 <= bytes {
                    best_n = n;
                    break;
                }
                // Compare waste fractions: waste/bytes < best_waste/best_bytes.
                if best_n == 0 || waste * (best_n * BLOCK_BYTES) < best_waste * bytes {
                    best_n = n;
                    best_waste = waste;
                }
            }
            n += 1;
        }
        out[c] = best_n as u8;
        c += 1;
    }
    out
}

const fn build_class_table() -> [u8; SMALL_MAX_BYTES / 8 + 1] {
    let sizes = build_sizes();
    let mut table = [0u8; SMALL_MAX_BYTES / 8 + 1];
    let mut class = 0;
    let mut units = 1;
    while units <= SMALL_MAX_BYTES / 8 {
        while (sizes[class] as usize) < units * 8 {
            class += 1;
        }
        table[units] = class as u8;
        units += 1;
    }
    table
}

const _: () = assert!(SIZES_LAST == SMALL_MAX_BYTES as u32);
const SIZES_LAST: u32 = build_sizes()[CLASS_COUNT - 1];

/// The class of a request of `size` bytes, `1 <= size <= SMALL_MAX_BYTES`.
#[inline]
pub fn class_of(size: usize) -> usize {
    debug_assert!((1..=SMALL_MAX_BYTES).contains(&size));
    CLASS_OF_8[size.div_ceil(8)] as usize
}

/// Slots in one slab of `class`.
#[inline]
pub fn slab_capacity(class: usize) -> u32 {
    (SLAB_BLOCKS[class] as usize * BLOCK_BYTES / SIZES[class] as usize) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_increase_and_are_aligned() {
        for pair in SIZES.windows(2) {
            assert!(pair[0] < pair[1]);
        }
        assert!(SIZES.iter().all(|s| s % 8 == 0));
        assert_eq!(SIZES[0], 8);
    }

    #[test]
    fn class_of_is_smallest_fitting_class() {
        for size in 1..=SMALL_MAX_BYTES {
            let c = class_of(size);
            assert!(SIZES[c] as usize >= size, "size {size}");
            if c > 0 {
                assert!((SIZES[c - 1] as usize) < size, "size {size}");
            }
        }
    }

    #[test]
    fn slabs_hold_at_least_one_slot_and_waste_little() {
        for c in 0..CLASS_COUNT {
            let bytes = SLAB_BLOCKS[c] as usize * BLOCK_BYTES;
            let cap = slab_capacity(c) as usize;
            assert!(cap >= 1 && u16::try_from(cap).is_ok(), "class {c}");
            let waste = bytes - cap * SIZES[c] as usize;
            assert!(waste * 16 <= bytes, "class {c} wastes {waste} of {bytes}");
        }
    }

    #[test]
    fn average_rounding_waste_is_at_most_six_percent() {
        // Requests spread evenly over 16..=4096 bytes and over each doubling above.
        let mut requested = 0u64;
        let mut given = 0u64;
        for size in 16..=SMALL_MAX_BYTES {
            requested += size as u64;
            given += SIZES[class_of(size)] as u64;
        }
        let waste = (given - requested) as f64 / requested as f64;
        assert!(waste <= 0.06, "average waste {waste}");
        let mut requested = 0u64;
        let mut given = 0u64;
        for size in 16..=512 {
            requested += size as u64;
            given += SIZES[class_of(size)] as u64;
        }
        let waste = (given - requested) as f64 / requested as f64;
        assert!(waste <= 0.06, "average waste 16..512: {waste}");
    }
}
