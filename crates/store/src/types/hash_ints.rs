//! `IntHash`: a hash whose every field and value is an integer (HASH_INTS), as an open-addressing
//! table of fixed-width slots whose byte widths adapt to the largest integer stored.
//!
//! ```text
//!  bytes: slot_count slots, back to back, no header
//!  slot:  | key: key_width bytes LE | value: value_width bytes LE |
//!         key   = zigzag(field) + 1   (0 marks an empty slot; i64::MIN is never a field here)
//!         value = two's complement, sign-extended from value_width bytes
//!  home(field) = (mix(zigzag(field) ^ seed) · slot_count) >> 64       (multiply-shift "fastrange")
//! ```
//! Lookups probe linearly from the home slot to the first empty slot: O(1) expected at the load
//! this table keeps (at most 85%). Deletion shifts the following entries of the cluster back
//! (no tombstones), so a probe never walks past garbage.
//!
//! Growth is ×2 while small and ×1.25 from 64 slots on, so the load stays between 68% and 85%;
//! a table whose load drops under 25% is rebuilt at 150% of its length. Widths only widen (a wider
//! integer rebuilds the table at the new width).
//!
//! Bytes per field for the "Instagram" bucket (1,000 fields `0..999`, values ≤ 2·10⁹): key width 2,
//! value width 4 (two's complement), 6 bytes a slot at 1,000/1,151 load: 6.9 B/field. Redis stores the same as a
//! dict (`hash-max-listpack-entries 128` is exceeded): dictEntry 24 + two sds ~ 67 B/field.
//! `maps::IntMap` (8 KiB pages) would cost ~16 B/field at this size.
//!
//! Invariants: `len == occupied slots`; every entry is reachable from its home slot without
//! crossing an empty slot; `len * 100 <= slot_count * 85`.
//!
//! HSCAN cursors are positions in hash space (`mix` values): one step returns the entries whose
//! hash lies in `[cursor, next)`. The hash of a field does not depend on the table's size, so an
//! entry present during a whole scan is returned exactly once however the table grows or shrinks.

use maps::varint::{unzigzag, zigzag};

/// Smallest table.
const SLOTS_MIN: usize = 8;
/// Load limit, in percent.
const LOAD_MAX_PERCENT: usize = 85;

/// Fields (canonical decimal i64 other than `i64::MIN`) to values.
#[derive(Debug, Clone)]
pub struct IntHash {
    bytes: Vec<u8>,
    slot_count: usize,
    len: usize,
    key_width: usize,
    value_width: usize,
    seed: u64,
}

/// Bytes needed to hold `x` (at least one).
fn width_of(x: u64) -> usize {
    ((64 - x.leading_zeros() as usize).div_ceil(8)).max(1)
}

/// Bytes whose two's complement holds `v` (at least one): 2·10⁹ takes 4.
fn signed_width_of(v: i64) -> usize {
    let significant = if v < 0 {
        64 - v.leading_ones()
    } else {
        64 - v.leading_zeros()
    };
    (significant as usize + 1).div_ceil(8).clamp(1, 8)
}

fn read_le(bytes: &[u8]) -> u64 {
    let mut le = [0u8; 8];
    le[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(le)
}

/// The pair as integers when both are canonical decimal i64 (and the field is not `i64::MIN`).
pub fn int_pair(field: &[u8], value: &[u8]) -> Option<(i64, i64)> {
    let k = shape::canonical_i64(field)?;
    let v = shape::canonical_i64(value)?;
    (k != i64::MIN).then_some((k, v))
}

impl Default for IntHash {
    fn default() -> IntHash {
        IntHash::new()
    }
}

impl IntHash {
    pub fn new() -> IntHash {
        IntHash::with_capacity(0)
    }

    /// A table that holds `count` fields without growing.
    pub fn with_capacity(count: usize) -> IntHash {
        let slot_count = (count * 100 / LOAD_MAX_PERCENT + 1).max(SLOTS_MIN);
        let seed = {
            use std::hash::{BuildHasher, RandomState};
            RandomState::new().hash_one(0u64)
        };
        IntHash {
            bytes: vec![0; slot_count * 2],
            slot_count,
            len: 0,
            key_width: 1,
            value_width: 1,
            seed,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held: the slot array and the header.
    pub fn memory_bytes(&self) -> usize {
        self.bytes.capacity() + std::mem::size_of::<IntHash>()
    }

    fn slot_bytes(&self) -> usize {
        self.key_width + self.value_width
    }

    fn mix(&self, zz: u64) -> u64 {
        // SplitMix64's finalizer: a bijection, so distinct fields never share a hash.
        let mut x = zz ^ self.seed;
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    }

    fn home_of_hash(&self, h: u64) -> usize {
        ((u128::from(h) * self.slot_count as u128) >> 64) as usize
    }

    /// Stored key (zigzag + 1, 0 = empty) of slot `i`.
    fn key_at(&self, i: usize) -> u64 {
        let at = i * self.slot_bytes();
        read_le(&self.bytes[at..at + self.key_width])
    }

    fn value_at(&self, i: usize) -> i64 {
        let at = i * self.slot_bytes() + self.key_width;
        let shift = 64 - 8 * self.value_width as u32;
        ((read_le(&self.bytes[at..at + self.value_width]) << shift) as i64) >> shift
    }

    fn write_slot(&mut self, i: usize, stored_key: u64, value: i64) {
        let (kw, vw) = (self.key_width, self.value_width);
        let at = i * (kw + vw);
        self.bytes[at..at + kw].copy_from_slice(&stored_key.to_le_bytes()[..kw]);
        self.bytes[at + kw..at + kw + vw].copy_from_slice(&value.to_le_bytes()[..vw]);
    }

    fn copy_slot(&mut self, from: usize, to: usize) {
        let w = self.slot_bytes();
        self.bytes.copy_within(from * w..from * w + w, to * w);
    }

    fn clear_slot(&mut self, i: usize) {
        let w = self.slot_bytes();
        self.bytes[i * w..i * w + w].fill(0);
    }

    /// Slot holding `stored_key`, or `Err(first empty slot of its probe)`.
    fn find(&self, stored_key: u64) -> Result<usize, usize> {
        let mut i = self.home_of_hash(self.mix(stored_key - 1));
        // The load limit leaves empty slots, so the probe ends within slot_count steps.
        for _ in 0..self.slot_count {
            match self.key_at(i) {
                0 => return Err(i),
                k if k == stored_key => return Ok(i),
                _ => {}
            }
            i = if i + 1 == self.slot_count { 0 } else { i + 1 };
        }
        unreachable!("an IntHash always has an empty slot")
    }

    pub fn get(&self, field: i64) -> Option<i64> {
        debug_assert_ne!(field, i64::MIN);
        self.find(zigzag(field) + 1).ok().map(|i| self.value_at(i))
    }

    /// Inserts or overwrites; true when the field is new.
    pub fn insert(&mut self, field: i64, value: i64) -> bool {
        debug_assert_ne!(field, i64::MIN);
        let stored_key = zigzag(field) + 1;
        let (kw, vw) = (width_of(stored_key), signed_width_of(value));
        if kw > self.key_width || vw > self.value_width {
            let slots = self.slot_count;
            self.rebuild(slots, kw.max(self.key_width), vw.max(self.value_width));
        }
        match self.find(stored_key) {
            Ok(i) => {
                self.write_slot(i, stored_key, value);
                false
            }
            Err(mut i) => {
                if (self.len + 1) * 100 > self.slot_count * LOAD_MAX_PERCENT {
                    let grown = if self.slot_count < 64 {
                        self.slot_count * 2
                    } else {
                        self.slot_count + self.slot_count / 4
                    };
                    self.rebuild(grown, self.key_width, self.value_width);
                    i = self.find(stored_key).expect_err("the field is new");
                }
                self.write_slot(i, stored_key, value);
                self.len += 1;
                true
            }
        }
    }

    /// Removes `field`; true if it was there.
    pub fn remove(&mut self, field: i64) -> bool {
        let Ok(mut hole) = self.find(zigzag(field) + 1) else {
            return false;
        };
        self.clear_slot(hole);
        self.len -= 1;
        // Backward shift: move each following entry of the cluster into the hole when the hole
        // lies between its home and its slot (cyclically).
        let n = self.slot_count;
        let mut j = hole;
        for _ in 0..n {
            j = if j + 1 == n { 0 } else { j + 1 };
            let k = self.key_at(j);
            if k == 0 {
                break;
            }
            let home = self.home_of_hash(self.mix(k - 1));
            if (j + n - home) % n >= (j + n - hole) % n {
                self.copy_slot(j, hole);
                self.clear_slot(j);
                hole = j;
            }
        }
        if self.slot_count > SLOTS_MIN && self.len * 4 < self.slot_count {
            let slots = (self.len * 3 / 2 + 1).max(SLOTS_MIN);
            self.rebuild(slots, self.key_width, self.value_width);
        }
        true
    }

    fn rebuild(&mut self, slot_count: usize, key_width: usize, value_width: usize) {
        let old = std::mem::replace(
            self,
            IntHash {
                bytes: vec![0; slot_count * (key_width + value_width)],
                slot_count,
                len: 0,
                key_width,
                value_width,
                seed: self.seed,
            },
        );
        for i in 0..old.slot_count {
            let k = old.key_at(i);
            if k != 0 {
                let slot = self.find(k).expect_err("keys are distinct");
                self.write_slot(slot, k, old.value_at(i));
                self.len += 1;
            }
        }
    }

    /// Every (field, value), in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        (0..self.slot_count).filter_map(move |i| {
            let k = self.key_at(i);
            (k != 0).then(|| (unzigzag(k - 1), self.value_at(i)))
        })
    }

    /// A random entry chosen by `r`: the first occupied slot from a random one. Slots after long
    /// clusters' gaps are a little likelier, as with Redis's dictGetRandomKey buckets.
    pub fn sample(&self, r: u64) -> Option<(i64, i64)> {
        if self.len == 0 {
            return None;
        }
        let start = self.home_of_hash(r);
        (0..self.slot_count)
            .map(|d| (start + d) % self.slot_count)
            .find(|&i| self.key_at(i) != 0)
            .map(|i| (unzigzag(self.key_at(i) - 1), self.value_at(i)))
    }

    /// One HSCAN step: calls `f` with the entries whose hash lies in `[cursor, next)`, covering
    /// about `count` slots' worth of hash space (more while nothing is found, at most ten times
    /// that); returns `next`, 0 when the scan is complete.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(i64, i64)) -> u64 {
        let span = (u64::MAX / self.slot_count as u64).saturating_mul(count.max(1) as u64);
        let mut from = cursor;
        let mut found = 0;
        for _ in 0..10 {
            let to = from.checked_add(span);
            let end_slot = to.map_or(self.slot_count, |to| self.home_of_hash(to));
            let start = self.home_of_hash(from);
            // Walk from the home of `from` to the first empty slot at or after the home of `to`
            // (entries of the range may sit displaced past it), at most one lap.
            for p in start..=start + self.slot_count {
                let i = p % self.slot_count;
                let k = self.key_at(i);
                if k == 0 {
                    if p >= end_slot {
                        break;
                    }
                } else {
                    let h = self.mix(k - 1);
                    if h >= from && to.is_none_or(|to| h < to) {
                        f(unzigzag(k - 1), self.value_at(i));
                        found += 1;
                    }
                }
            }
            match to {
                None => return 0,
                Some(to) => from = to,
            }
            if found > 0 {
                break;
            }
        }
        from
    }

    /// Checks the invariants (tests).
    pub fn validate(&self) -> Result<(), String> {
        let n = self.slot_count;
        if self.bytes.len() != n * self.slot_bytes() {
            return Err("slot array size".into());
        }
        let mut occupied = 0;
        for i in 0..n {
            let k = self.key_at(i);
            if k == 0 {
                continue;
            }
            occupied += 1;
            let home = self.home_of_hash(self.mix(k - 1));
            let mut p = home;
            while p != i {
                if self.key_at(p) == 0 {
                    return Err(format!("slot {i} unreachable from its home {home}"));
                }
                p = (p + 1) % n;
            }
        }
        if occupied != self.len {
            return Err(format!("{occupied} occupied slots, len {}", self.len));
        }
        if self.len * 100 > n * LOAD_MAX_PERCENT {
            return Err("over the load limit".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_and_widths() {
        for i in [
            0i64,
            1,
            -1,
            127,
            -128,
            999,
            2_000_000_000,
            i64::MAX,
            i64::MIN + 1,
        ] {
            assert_eq!(unzigzag(zigzag(i)), i);
        }
        assert_eq!(width_of(0), 1);
        assert_eq!(width_of(255), 1);
        assert_eq!(width_of(256), 2);
        assert_eq!(width_of(u64::MAX), 8);
        assert_eq!(signed_width_of(2_000_000_000), 4);
        assert_eq!(signed_width_of(-128), 1);
        assert_eq!(signed_width_of(128), 2);
        assert_eq!(signed_width_of(i64::MIN), 8);
        assert_eq!(int_pair(b"007", b"1"), None);
        assert_eq!(int_pair(b"-9223372036854775808", b"1"), None);
        assert_eq!(int_pair(b"7", b"-3"), Some((7, -3)));
    }

    #[test]
    fn bucket_of_a_thousand_fields_is_compact() {
        let mut t = IntHash::new();
        for i in 0..1000 {
            assert!(t.insert(i, 1_999_999_999 - i));
        }
        t.validate().unwrap();
        let per_field = t.bytes.capacity() as f64 / 1000.0;
        // 6-byte slots at 69–85% load; the target is 10 B/field.
        assert!(per_field <= 9.0, "{per_field} B/field");
        for i in 0..1000 {
            assert_eq!(t.get(i), Some(1_999_999_999 - i));
        }
        assert_eq!(t.get(1000), None);
    }

    #[test]
    fn scan_survives_resizes() {
        let mut t = IntHash::new();
        for i in 0..500 {
            t.insert(i, i);
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut steps = 0;
        loop {
            cursor = t.scan(cursor, 10, |k, _| {
                seen.insert(k);
            });
            steps += 1;
            // Grow and shrink the table while the scan runs; 0..250 stay throughout.
            if steps == 3 {
                for i in 500..3000 {
                    t.insert(i, i);
                }
            }
            if steps == 6 {
                for i in 250..3000 {
                    t.remove(i);
                }
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..250 {
            assert!(seen.contains(&i), "{i} missed");
        }
    }
}
