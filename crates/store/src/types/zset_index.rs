//! The member index of a large sorted set: for every member, which leaf of the tree
//! (`zset_tree.rs`) holds it, found by hash and without a copy of the member.
//!
//! ```text
//!  slots: Box<[u64]>, homes + pad(homes) of them
//!  +------------------------------------------------------------+-------------+
//!  | home slots 0 .. homes                                      | pad         |
//!  +------------------------------------------------------------+-------------+
//!  slot  = fp << 32 | leaf      fp   the top 32 bits of the member's 64-bit hash
//!                               leaf the id of the tree leaf that holds the member
//!  EMPTY = u64::MAX             (leaf id u32::MAX is never used)
//!  home(fp) = (fp · homes) >> 32           monotone in fp, for any slot count
//! ```
//! **Ordered linear probing** (Amble and Knuth's ordered hash tables). Invariants, checked by
//! [`Index::validate`]:
//! - the occupied slots, read left to right, have non-decreasing fp;
//! - every entry sits at or after its home, and no empty slot lies between them;
//! - `len` == occupied slots, and `len · 8 <= homes · 7` after every insert.
//!
//! A lookup starts at the home of its fp and stops at an empty slot or a larger fp, so a miss
//! reads about as few slots as a hit (a plain linear probe at 7/8 load reads ~32 on a miss).
//! An insert goes after the equal fps and shifts the run up to the next empty slot right by
//! one; a removal shifts the entries after it left while they sit past their home (backward
//! shift, no tombstones). Entries never wrap around: those that spill past the last home go
//! into the pad, and an insert that would run off its end rebuilds the table larger.
//!
//! **The member is not here.** The slots whose fp equals the member's are candidates, and the
//! caller searches each candidate's leaf for the member's bytes; a candidate that does not hold
//! it belongs to another member with the same fp (one pair in 2^32). Two members with one fp
//! are interchangeable to the index: it holds a multiset of (fp, leaf), so when the tree moves
//! a member to another leaf, [`Index::relabel`] may rewrite any slot with that (fp, from leaf).
//!
//! **Sizes.** An insert that would take the table past 7/8 of its home slots rebuilds it for 3/4
//! (1.17× larger): one pass over the slots in order, sequential memory. A removal that leaves it
//! under 1/4 full rebuilds it for 3/4 too. The rebuild is O(n) and amortised O(1) per insert
//! (every rebuild is paid for by the n/6 inserts since the last); it is not incremental, which
//! for a million members is a ~5 ms pause once per 170,000 inserts (Redis's dict rehashes
//! incrementally but doubles, holding both tables meanwhile).
//!
//! **Scans** (ZSCAN). Because home is monotone in fp, ordering by fp is the same at every table
//! size, and a cursor is an fp: a step returns the members whose fp lies in [cursor, next), and
//! the members present throughout a scan are all returned however the table resizes between
//! steps, as Redis's reverse-binary cursor guarantees for its dict.
//!
//! **Bytes per member**: 8 / load, the load between 3/4 and 7/8: ≈ 10 B, plus the pad (1/128).
//! Redis's dict spends a 24-byte dictEntry (32 with malloc's rounding) and 8–16 B of bucket on
//! each member, plus the sds copy of the member that the skiplist shares.

use maps::BytesHasher;
use std::sync::OnceLock;

const EMPTY: u64 = u64::MAX;
/// The smallest table (homes) a non-empty index has.
const HOMES_MIN: usize = 8;
/// Pad slots after the homes: entries pushed past the last home land here.
fn pad_of(homes: usize) -> usize {
    16 + homes / 128
}

fn hasher() -> &'static BytesHasher {
    static HASHER: OnceLock<BytesHasher> = OnceLock::new();
    HASHER.get_or_init(|| BytesHasher::new(None))
}

/// The 32-bit fingerprint the index files `member` under.
#[inline]
pub fn fingerprint(member: &[u8]) -> u32 {
    (hasher().hash(member) >> 32) as u32
}

#[inline]
fn fp_of(slot: u64) -> u32 {
    (slot >> 32) as u32
}

#[inline]
fn leaf_of(slot: u64) -> u32 {
    slot as u32
}

/// The member → leaf index of a large zset.
#[derive(Debug, Default)]
pub struct Index {
    slots: Vec<u64>,
    homes: usize,
    len: usize,
}

impl Index {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots in the table, the pad included.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Bytes of the slot array (with its allocator header).
    pub fn memory_bytes(&self) -> usize {
        if self.slots.capacity() == 0 {
            0
        } else {
            self.slots.capacity() * 8 + 16
        }
    }

    #[inline]
    fn home(&self, fp: u32) -> usize {
        ((u64::from(fp) * self.homes as u64) >> 32) as usize
    }

    /// The slot of the first candidate for `fp` whose leaf `holds` accepts, if any.
    pub fn find(&self, fp: u32, mut holds: impl FnMut(u32) -> bool) -> Option<usize> {
        let mut i = self.home(fp);
        while let Some(&slot) = self.slots.get(i) {
            if slot == EMPTY || fp_of(slot) > fp {
                return None;
            }
            if fp_of(slot) == fp && holds(leaf_of(slot)) {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    /// Loads the cache line of `fp`'s home slot (ahead of a lookup).
    #[inline]
    pub fn prefetch(&self, fp: u32) {
        if let Some(slot) = self.slots.get(self.home(fp)) {
            maps::prefetch(slot);
        }
    }

    /// Files a member with fingerprint `fp` under `leaf`.
    pub fn insert(&mut self, fp: u32, leaf: u32) {
        debug_assert!(leaf != u32::MAX);
        if (self.len + 1) * 8 > self.homes * 7 {
            self.rebuild(self.len + 1);
        }
        let slot = u64::from(fp) << 32 | u64::from(leaf);
        while !self.try_insert(fp, slot) {
            // Ran off the pad: a larger table spreads the tail.
            self.rebuild(self.homes + self.homes / 4);
        }
        self.len += 1;
    }

    /// Places `slot` after the entries with fps up to `fp`, shifting the run after it right;
    /// false (and no change) when the run reaches the end of the pad.
    fn try_insert(&mut self, fp: u32, slot: u64) -> bool {
        let mut i = self.home(fp);
        while i < self.slots.len() && self.slots[i] != EMPTY && fp_of(self.slots[i]) <= fp {
            i += 1;
        }
        let Some(gap) = self.slots[i.min(self.slots.len())..]
            .iter()
            .position(|&s| s == EMPTY)
        else {
            return false;
        };
        self.slots.copy_within(i..i + gap, i + 1);
        self.slots[i] = slot;
        true
    }

    /// Removes the entry in slot `i` (from [`Index::find`]).
    pub fn remove_at(&mut self, mut i: usize) {
        debug_assert!(self.slots[i] != EMPTY);
        while let Some(&next) = self.slots.get(i + 1) {
            if next == EMPTY || self.home(fp_of(next)) > i {
                break;
            }
            self.slots[i] = next;
            i += 1;
        }
        self.slots[i] = EMPTY;
        self.len -= 1;
        if self.homes > HOMES_MIN && self.len * 4 < self.homes {
            self.rebuild(self.len);
        }
    }

    /// Records that a member with fingerprint `fp` moved from leaf `from` to leaf `to`.
    pub fn relabel(&mut self, fp: u32, from: u32, to: u32) {
        let i = self
            .find(fp, |leaf| leaf == from)
            .expect("zset index: a moved member is filed under its old leaf");
        self.slots[i] = u64::from(fp) << 32 | u64::from(to);
    }

    /// Rebuilds the table for `len` entries at 3/4 load (at least `HOMES_MIN` homes), keeping
    /// the order; grows it further in the rare case the entries would run off the pad.
    fn rebuild(&mut self, len: usize) {
        let mut homes = (len * 4 / 3 + 1).max(HOMES_MIN);
        loop {
            if let Some(slots) = self.relaid(homes) {
                self.slots = slots;
                self.homes = homes;
                return;
            }
            homes += homes / 4;
        }
    }

    /// The entries laid out in a table of `homes` homes, or None if they overflow its pad.
    fn relaid(&self, homes: usize) -> Option<Vec<u64>> {
        let total = homes + pad_of(homes);
        let mut slots = Vec::with_capacity(total);
        for &slot in self.slots.iter().filter(|&&s| s != EMPTY) {
            let home = ((u64::from(fp_of(slot)) * homes as u64) >> 32) as usize;
            if home > slots.len() {
                slots.resize(home, EMPTY);
            }
            if slots.len() == total {
                return None;
            }
            slots.push(slot);
        }
        slots.resize(total, EMPTY);
        Some(slots)
    }

    /// One ZSCAN step from fingerprint `cursor`: pushes onto `leaves` the leaf of every entry
    /// with fp in [cursor, end), taking entries until at least `count` and never splitting a
    /// run of equal fps, and returns `end` (2^32 when the scan reached the last entry).
    pub fn scan(&self, cursor: u32, count: usize, leaves: &mut Vec<u32>) -> u64 {
        let mut i = self.home(cursor);
        let mut taken = 0;
        let mut last_fp = None;
        while let Some(&slot) = self.slots.get(i) {
            i += 1;
            if slot == EMPTY || fp_of(slot) < cursor {
                continue;
            }
            let fp = fp_of(slot);
            if taken >= count && last_fp != Some(fp) {
                return u64::from(fp);
            }
            leaves.push(leaf_of(slot));
            taken += 1;
            last_fp = Some(fp);
        }
        1 << 32
    }

    /// Every (fp, leaf) entry (validation).
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.slots
            .iter()
            .filter(|&&s| s != EMPTY)
            .map(|&s| (fp_of(s), leaf_of(s)))
    }

    /// Checks the invariants of the module doc.
    pub fn validate(&self) -> Result<(), String> {
        if self.slots.len()
            != if self.homes == 0 {
                0
            } else {
                self.homes + pad_of(self.homes)
            }
        {
            return Err("index: slot count is not homes + pad".into());
        }
        let (mut count, mut last_fp, mut run_start) = (0, 0u32, 0usize);
        for (i, &slot) in self.slots.iter().enumerate() {
            if slot == EMPTY {
                run_start = i + 1;
                continue;
            }
            let (fp, home) = (fp_of(slot), self.home(fp_of(slot)));
            if count > 0 && fp < last_fp {
                return Err(format!("index: slot {i} out of fp order"));
            }
            if home > i || home < run_start {
                return Err(format!("index: slot {i} before its home or past a gap"));
            }
            if leaf_of(slot) == u32::MAX {
                return Err(format!("index: slot {i} names no leaf"));
            }
            (count, last_fp) = (count + 1, fp);
        }
        if count != self.len {
            return Err(format!("index: len {} != entries {count}", self.len));
        }
        if self.len * 8 > self.homes * 7 {
            return Err("index: past 7/8 load".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn sorted(mut v: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
        v.sort_unstable();
        v
    }

    /// Checks that a full scan covers [0, 2^32) in adjacent steps, each taking exactly the
    /// model's entries with fps in its range.
    fn check_scan(ix: &Index, model: &[(u32, u32)], count: usize) {
        let (mut cursor, mut covered) = (0u64, 0usize);
        loop {
            let mut leaves = Vec::new();
            let hi = ix.scan(cursor as u32, count, &mut leaves);
            assert!(hi > cursor, "a step must advance");
            let mut want: Vec<u32> = model
                .iter()
                .filter(|(fp, _)| (cursor..hi).contains(&u64::from(*fp)))
                .map(|&(_, leaf)| leaf)
                .collect();
            want.sort_unstable();
            leaves.sort_unstable();
            assert_eq!(leaves, want);
            covered += leaves.len();
            if hi == 1 << 32 {
                break;
            }
            cursor = hi;
        }
        assert_eq!(covered, model.len());
    }

    /// The index against a multiset model of (fp, leaf), with `validate` after every step; fp
    /// spaces from 16 values (long runs of equal fps) to all 2^32.
    #[test]
    fn index_matches_multiset_model() {
        for (round, fp_space) in [16u64, 1 << 12, 1 << 32].into_iter().enumerate() {
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (round as u64 + 1));
            let mut ix = Index::default();
            let mut model: Vec<(u32, u32)> = Vec::new();
            let grow_bias = [6, 5, 7][round];
            for step in 0..12_000 {
                let op = rng.below(10);
                if op < grow_bias || model.is_empty() {
                    let e = (rng.below(fp_space) as u32, rng.below(50) as u32);
                    ix.insert(e.0, e.1);
                    model.push(e);
                } else if op < 9 {
                    let k = rng.below(model.len() as u64) as usize;
                    let (fp, leaf) = model.swap_remove(k);
                    let slot = ix.find(fp, |l| l == leaf).expect("present");
                    ix.remove_at(slot);
                } else {
                    let k = rng.below(model.len() as u64) as usize;
                    let to = rng.below(50) as u32;
                    ix.relabel(model[k].0, model[k].1, to);
                    model[k].1 = to;
                }
                ix.validate().unwrap();
                assert_eq!(ix.len(), model.len());
                if step % 500 == 0 {
                    assert_eq!(sorted(ix.entries().collect()), sorted(model.clone()));
                    check_scan(&ix, &model, 1 + step % 7);
                }
            }
            // Drain it: the table shrinks with it.
            while let Some((fp, leaf)) = model.pop() {
                let slot = ix.find(fp, |l| l == leaf).expect("present");
                ix.remove_at(slot);
                ix.validate().unwrap();
            }
            assert!(ix.is_empty());
            assert!(ix.memory_bytes() <= (HOMES_MIN * 2 + pad_of(HOMES_MIN * 2)) * 8 + 16);
        }
    }

    /// A lookup of an absent fp stops early and finds nothing; candidates are offered in order
    /// until one is accepted.
    #[test]
    fn find_offers_every_candidate() {
        let mut ix = Index::default();
        for leaf in 0..5 {
            ix.insert(7, leaf);
        }
        ix.insert(3, 9);
        let mut offered = Vec::new();
        assert_eq!(
            ix.find(7, |l| {
                offered.push(l);
                false
            }),
            None
        );
        assert_eq!(sorted(offered.iter().map(|&l| (7, l)).collect()).len(), 5);
        assert!(ix.find(8, |_| true).is_none());
        assert!(ix.find(3, |l| l == 9).is_some());
    }
}
