//! Sorted-set values: two encodings, chosen by size as Redis 7.0 chooses listpack or skiplist.
//!
//! ```text
//!  ZSetPacked (inline payload, "listpack"): see zset_packed.rs
//!
//!  ZSetIndex (boxed ZSetObj, "skiplist")
//!  ZSetObj ── tree:  zset_tree::Tree, a counted B+tree whose leaves hold the (score, member)
//!          │         entries, each member once                        (ranks: O(log n))
//!          └─ index: zset_index::Index, member fingerprint → the leaf holding it
//!                    (ZSCORE: hash, one probe, a scan of one ≤ 512-byte leaf: O(1))
//! ```
//! Thresholds are the shard's `Limits` (by default Redis's: a set stays packed while it has at
//! most 128 members, `zset-max-listpack-entries`, and no member is longer than 64 bytes,
//! `zset-max-listpack-value`; never more than `PACKED_ENTRIES_CAP` members); it converts to the
//! index as soon as a write crosses either. Like Redis 7.0 it never converts back in place. A
//! value built whole (`Shard::zset_builder`) starts as the index when its size is known to pass
//! the thresholds, and packed otherwise, converting when an insert crosses one, as Redis's
//! ZRANGESTORE and ZUNIONSTORE build theirs.
//!
//! Invariants: packed `count` == entries, entries strictly increasing by (score, member); index
//! `index.len() == tree.len()`, and the index files exactly the multiset of (fingerprint of
//! member, leaf) over the tree's entries (`ZSetObj::validate`). Scores are never NaN (the
//! commands refuse them), so (score, member) is a total order; -0 and 0 compare equal as in
//! Redis and the member decides.
//!
//! Bytes per member (19-byte members, integer scores below 2^20): packed 1 + 1..3 + 1 + 19 ≈
//! 23 B; index ≈ 23 B of entry in leaves 70–100 % full, ≈ 2 B of leaf header and separator, and
//! ≈ 10 B of index slot: ≈ 36–45 B. Redis's skiplist encoding: node (≈ 48–64 B) + sds (32 B) +
//! dictEntry (32 B) + bucket (8–16 B) ≈ 130 B. Measured figures are in `docs/types.md`.

#[path = "zset_packed.rs"]
pub mod packed;

use crate::edit::{Builder, Collection, Edit, Work, sealed::Internal};
use crate::encoding::{Encoding, Kind, tag};
use crate::error::StoreError;
use crate::limits::Limits;
use crate::object::Object;
use crate::shard::{Shard, Slot};
use crate::types::zset_index::{self as index, Index};
use crate::types::zset_tree::{Pos, Tree, cmp_key};
use heap::Heap;
use shape::ShapeTree;
use std::cmp::Ordering;

/// Most members a packed zset holds whatever `zset-max-listpack-entries` says (its count is a
/// u16, and every change rewrites the whole payload).
pub const PACKED_ENTRIES_CAP: usize = u16::MAX as usize;

/// Whether a zset of `count` members whose longest member has `member_len_max` bytes is packed
/// under `limits`.
pub fn fits_packed(limits: &Limits, count: usize, member_len_max: usize) -> bool {
    count <= limits.zset_listpack_entries.min(PACKED_ENTRIES_CAP)
        && member_len_max <= limits.zset_listpack_value
}

/// The sorted-set type (`Shard::read::<ZSet>`, `Shard::update::<ZSet>`).
#[derive(Debug)]
pub enum ZSet {}

/// The boxed (index) encoding of a zset.
#[derive(Debug)]
pub struct ZSetObj {
    /// Boxed so that `Object` stays as small as its other variants.
    tree: Box<Tree>,
    index: Box<Index>,
}

/// A member found in the index: its score, its slot in the index, and its place in the tree.
#[derive(Clone, Copy, Debug)]
struct Found {
    score: f64,
    slot: usize,
    pos: Pos,
}

impl ZSetObj {
    pub fn new() -> ZSetObj {
        ZSetObj {
            tree: Box::default(),
            index: Box::default(),
        }
    }

    /// Builds an index holding `entries` (members distinct).
    pub fn from_entries<'a>(entries: impl Iterator<Item = (f64, &'a [u8])>) -> ZSetObj {
        let mut obj = ZSetObj::new();
        for (s, m) in entries {
            obj.insert(m, s);
        }
        obj
    }

    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Tree>()
            + std::mem::size_of::<Index>()
            + self.tree.memory_bytes()
            + self.index.memory_bytes()
    }

    pub fn encoding_name(&self) -> &'static str {
        "skiplist"
    }

    pub fn len(&self) -> usize {
        self.tree.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// One line of figures (DEBUG HTSTATS-KEY): members, leaves, index slots and load, bytes.
    pub fn stats_line(&self) -> String {
        let slots = self.index.slot_count();
        format!(
            "members {}, tree leaves {}, index slots {} (load {:.2}), {} bytes",
            self.len(),
            self.tree.leaf_ids().count(),
            slots,
            self.len() as f64 / slots.max(1) as f64,
            self.memory_bytes()
        )
    }

    /// Loads the index slot of a member with fingerprint `fp` (ahead of its lookup).
    pub fn prefetch(&self, fp: u32) {
        self.index.prefetch(fp);
    }

    /// Looks `member` up: the index names candidate leaves, the leaf holds the member.
    fn find(&self, member: &[u8]) -> Option<Found> {
        let (mut score, mut pos) = (0.0, Pos { leaf: 0, off: 0 });
        let slot = self.index.find(index::fingerprint(member), |leaf| {
            self.tree
                .find_in_leaf(leaf, member)
                .map(|(s, off)| (score, pos) = (s, Pos { leaf, off }))
                .is_some()
        })?;
        Some(Found { score, slot, pos })
    }

    /// (0-based rank from the lowest, score) of `member`: the tree counts the entries before
    /// the place the index found.
    pub fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        let found = self.find(member)?;
        Some((
            self.tree.rank_at(found.score, member, found.pos),
            found.score,
        ))
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|f| f.score)
    }

    /// Inserts into the tree, keeping the index's leaf of every member a split moves.
    fn tree_insert(&mut self, member: &[u8], score: f64) {
        let index = &mut self.index;
        let leaf = self.tree.insert(score, member, &mut |m, from, to| {
            index.relabel(index::fingerprint(m), from, to);
        });
        index.insert(index::fingerprint(member), leaf);
    }

    /// Removes from the tree (the member's slot already removed from the index).
    fn tree_remove(&mut self, member: &[u8], score: f64) {
        let index = &mut self.index;
        self.tree.remove(score, member, &mut |m, from, to| {
            index.relabel(index::fingerprint(m), from, to);
        });
    }

    /// Adds a member that is not present.
    pub fn insert(&mut self, member: &[u8], score: f64) {
        self.tree_insert(member, score);
    }

    /// Changes the score of a present member from `old` to `new`.
    pub fn update(&mut self, member: &[u8], old: f64, new: f64) {
        if let Some(found) = self.find(member) {
            self.index.remove_at(found.slot);
        }
        self.tree_remove(member, old);
        self.tree_insert(member, new);
    }

    /// Removes `member`, returning its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let found = self.find(member)?;
        self.index.remove_at(found.slot);
        self.tree_remove(member, found.score);
        Some(found.score)
    }

    /// Removes the present entry (score, member) (popping, with the member already known).
    pub fn remove_entry(&mut self, score: f64, member: &[u8]) {
        let removed = self.remove(member);
        debug_assert_eq!(removed.map(f64::to_bits), Some(score.to_bits()));
    }

    /// One ZSCAN step from `cursor` (an index fingerprint): calls `f` with the members whose
    /// fingerprints the step covers and returns the next cursor, 0 when done.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], f64)) -> u64 {
        let Ok(lo) = u32::try_from(cursor) else {
            return 0;
        };
        let mut leaves = Vec::new();
        let hi = self.index.scan(lo, count.max(1), &mut leaves);
        leaves.sort_unstable();
        leaves.dedup();
        for &leaf in &leaves {
            for (s, m) in self.tree.leaf_entries(leaf) {
                if (u64::from(lo)..hi).contains(&u64::from(index::fingerprint(m))) {
                    f(m, s);
                }
            }
        }
        if hi >= 1 << 32 { 0 } else { hi }
    }

    /// Checks the invariants (tests and `Shard::validate`): both halves', and that the index
    /// files exactly the tree's (fingerprint, leaf) pairs.
    pub fn validate(&self) -> Result<(), String> {
        if self.is_empty() {
            return Err("empty zset stored".into());
        }
        self.tree.validate()?;
        self.index.validate()?;
        let mut want = std::collections::HashMap::<(u32, u32), i64>::new();
        for leaf in self.tree.leaf_ids() {
            for (_, m) in self.tree.leaf_entries(leaf) {
                *want.entry((index::fingerprint(m), leaf)).or_default() += 1;
            }
        }
        for e in self.index.entries() {
            *want.entry(e).or_default() -= 1;
        }
        if want.values().any(|&n| n != 0) {
            return Err("index does not file the tree's members under their leaves".into());
        }
        Ok(())
    }
}

impl Default for ZSetObj {
    fn default() -> ZSetObj {
        ZSetObj::new()
    }
}

/// Read access to a zset in either encoding.
#[derive(Clone, Copy, Debug)]
pub struct ZSetView<'a>(Inner<'a>);

#[derive(Clone, Copy, Debug)]
enum Inner<'a> {
    Packed(&'a [u8]),
    Index(&'a ZSetObj),
}

impl<'a> ZSetView<'a> {
    /// The view of a stored index, read through shared borrows (`entries.rs`).
    pub(crate) fn of_index(obj: &'a ZSetObj) -> ZSetView<'a> {
        ZSetView(Inner::Index(obj))
    }

    pub fn len(&self) -> usize {
        match self.0 {
            Inner::Packed(b) => packed::count(b),
            Inner::Index(o) => o.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self.0 {
            Inner::Packed(b) => packed::find(b, member).map(|(s, _, _)| s),
            Inner::Index(o) => o.score(member),
        }
    }

    /// (0-based rank from the lowest, score) of `member`.
    pub fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        match self.0 {
            Inner::Packed(b) => packed::iter(b)
                .enumerate()
                .find(|(_, (_, m, _, _))| *m == member)
                .map(|(i, (s, _, _, _))| (i, s)),
            Inner::Index(o) => o.rank(member),
        }
    }

    /// How many entries come before the first one for which `at_or_after` holds (a predicate
    /// false then true along the order).
    pub fn count_before(&self, at_or_after: impl Fn(f64, &[u8]) -> bool) -> usize {
        match self.0 {
            Inner::Packed(b) => packed::iter(b)
                .take_while(|(s, m, _, _)| !at_or_after(*s, m))
                .count(),
            Inner::Index(o) => o.tree.count_before(at_or_after),
        }
    }

    /// Iterates (score, member) from rank `start` upward, or downward when `rev` (rank counted
    /// from the lowest either way).
    pub fn iter(&self, start: usize, rev: bool) -> ZIter<'a> {
        let len = self.len();
        if start >= len {
            return ZIter::Done;
        }
        match self.0 {
            Inner::Packed(b) if !rev => {
                let mut off = packed::start();
                for _ in 0..start {
                    off = packed::entry_at(b, off).2;
                }
                ZIter::PackedFwd { bytes: b, off }
            }
            Inner::Packed(b) => ZIter::PackedRev {
                bytes: b,
                offsets: packed::offsets(b),
                next: start + 1,
            },
            Inner::Index(o) if !rev => ZIter::TreeFwd {
                tree: &o.tree,
                pos: Some(o.tree.select(start)),
            },
            Inner::Index(o) => {
                let pos = o.tree.select(start);
                let mut offsets = Vec::new();
                o.tree.offsets(pos.leaf, &mut offsets);
                let next = offsets.iter().position(|&x| x == pos.off).expect("entry") + 1;
                ZIter::TreeRev {
                    tree: &o.tree,
                    leaf: pos.leaf,
                    offsets,
                    next,
                }
            }
        }
    }

    /// The entries in rank order, copied out.
    pub fn to_vec(&self) -> Vec<(Vec<u8>, f64)> {
        self.iter(0, false).map(|(s, m)| (m.to_vec(), s)).collect()
    }

    /// Whether ZSCAN returns the set whole at cursor 0 (the packed encoding, whose integral
    /// scores Redis replies as integers).
    pub fn scans_whole(&self) -> bool {
        matches!(self.0, Inner::Packed(_))
    }

    /// One ZSCAN step: calls `f` with some (member, score) entries and returns the next cursor
    /// (0 when done); a packed set is returned whole.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], f64)) -> u64 {
        match self.0 {
            Inner::Packed(b) => {
                packed::iter(b).for_each(|(s, m, _, _)| f(m, s));
                0
            }
            Inner::Index(o) => o.scan(cursor, count, f),
        }
    }

    /// The entry of rank `r % len` (ZRANDMEMBER), or `None` when empty.
    pub fn sample(&self, r: u64) -> Option<(f64, &'a [u8])> {
        let len = self.len() as u64;
        (len > 0).then(|| {
            self.iter((r % len) as usize, false)
                .next()
                .expect("rank below len")
        })
    }

    /// Checks a packed set's layout and bounds.
    fn validate_packed(bytes: &[u8]) -> Result<(), String> {
        let entries: Vec<(f64, &[u8])> = packed::iter(bytes).map(|(s, m, _, _)| (s, m)).collect();
        if entries.len() != packed::count(bytes) || entries.is_empty() {
            return Err("packed count wrong or empty".into());
        }
        // The thresholds may have been lowered since it was written: only the cap is an invariant.
        if entries.len() > PACKED_ENTRIES_CAP {
            return Err("packed set past its cap".into());
        }
        if entries
            .windows(2)
            .any(|w| cmp_key(w[0].0, w[0].1, w[1].0, w[1].1) != Ordering::Less)
        {
            return Err("packed entries out of order".into());
        }
        Ok(())
    }
}

/// An iterator over a zset's (score, member) entries.
#[derive(Debug)]
pub enum ZIter<'a> {
    Done,
    PackedFwd {
        bytes: &'a [u8],
        off: usize,
    },
    PackedRev {
        bytes: &'a [u8],
        offsets: Vec<usize>,
        next: usize,
    },
    TreeFwd {
        tree: &'a Tree,
        pos: Option<Pos>,
    },
    TreeRev {
        tree: &'a Tree,
        leaf: u32,
        offsets: Vec<usize>,
        next: usize,
    },
}

impl<'a> Iterator for ZIter<'a> {
    type Item = (f64, &'a [u8]);

    fn next(&mut self) -> Option<(f64, &'a [u8])> {
        match self {
            ZIter::Done => None,
            ZIter::PackedFwd { bytes, off } => {
                if *off >= bytes.len() {
                    return None;
                }
                let (s, m, next) = packed::entry_at(bytes, *off);
                *off = next;
                Some((s, m))
            }
            ZIter::PackedRev {
                bytes,
                offsets,
                next,
            } => {
                if *next == 0 {
                    return None;
                }
                *next -= 1;
                let (s, m, _) = packed::entry_at(bytes, offsets[*next]);
                Some((s, m))
            }
            ZIter::TreeFwd { tree, pos } => {
                let p = (*pos)?;
                *pos = tree.next(p);
                Some(tree.get(p))
            }
            ZIter::TreeRev {
                tree,
                leaf,
                offsets,
                next,
            } => {
                if *next == 0 {
                    let prev = tree.prev_leaf(*leaf)?;
                    *leaf = prev;
                    tree.offsets(prev, offsets);
                    *next = offsets.len();
                }
                *next -= 1;
                Some(tree.get(Pos {
                    leaf: *leaf,
                    off: offsets[*next],
                }))
            }
        }
    }
}

/// Checks a stored packed zset payload (`Shard::validate`).
pub(crate) fn validate_packed(bytes: &[u8]) -> Result<(), String> {
    ZSetView::validate_packed(bytes)
}

impl Internal for ZSet {
    type Obj = ZSetObj;

    fn object_mut(o: &mut Object) -> Option<&mut ZSetObj> {
        match o {
            Object::ZSet(z) => Some(z),
            _ => None,
        }
    }

    fn wrap(o: ZSetObj) -> Object {
        Object::ZSet(o)
    }

    fn is_inline(t: u8) -> bool {
        t == tag::ZSET_PACKED
    }

    fn new_work(_heap: &mut Heap, _limits: &Limits) -> Result<Work<'static, ZSetObj>, StoreError> {
        Ok(Work::Inline(tag::ZSET_PACKED, packed::empty()))
    }

    fn inline_len(_t: u8, bytes: &[u8], _shapes: &ShapeTree) -> usize {
        packed::count(bytes)
    }

    fn obj_len(o: &ZSetObj) -> usize {
        o.len()
    }

    fn obj_encoding(_o: &ZSetObj) -> Encoding {
        Encoding::ZSetIndex
    }

    fn obj_destroy(o: ZSetObj, _heap: &mut Heap) {
        drop(o);
    }
}

impl Collection for ZSet {
    const KIND: Kind = Kind::ZSet;
    type View<'a> = ZSetView<'a>;

    fn view(slot: Slot<'_>) -> Option<ZSetView<'_>> {
        match slot {
            Slot::Inline {
                tag: tag::ZSET_PACKED,
                bytes,
                ..
            } => Some(ZSetView(Inner::Packed(bytes))),
            Slot::Boxed {
                object: Object::ZSet(o),
                ..
            } => Some(ZSetView(Inner::Index(o))),
            _ => None,
        }
    }
}

impl Edit<'_, ZSet> {
    /// The set as it is now.
    pub fn view(&self) -> ZSetView<'_> {
        ZSetView(match &self.work {
            Work::Inline(_, b) => Inner::Packed(b),
            Work::Borrowed(o) => Inner::Index(o),
            Work::Owned(o) => Inner::Index(o),
        })
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.view().score(member)
    }

    /// Converts a packed set to the index (before an insert would cross a threshold).
    fn convert(&mut self) {
        let Work::Inline(_, b) = &self.work else {
            return;
        };
        let obj = ZSetObj::from_entries(packed::iter(b).map(|(s, m, _, _)| (s, m)));
        self.become_owned(obj);
    }

    /// Adds an absent member, converting a packed set first when the insert crosses a
    /// threshold, as Redis's `zsetAdd` does.
    pub fn insert(&mut self, member: &[u8], score: f64) -> Result<(), StoreError> {
        if let Work::Inline(_, b) = &self.work
            && !fits_packed(&self.limits, packed::count(b) + 1, member.len())
        {
            self.convert();
        }
        self.changed = true;
        match &mut self.work {
            Work::Inline(_, b) => {
                packed::insert(b, score, member);
                Ok(())
            }
            Work::Borrowed(o) => {
                o.insert(member, score);
                Ok(())
            }
            Work::Owned(o) => {
                o.insert(member, score);
                Ok(())
            }
        }
    }

    /// Moves a present member from score `old` to `new`.
    pub fn update(&mut self, member: &[u8], old: f64, new: f64) -> Result<(), StoreError> {
        self.changed = true;
        match &mut self.work {
            Work::Inline(_, b) => {
                let (_, a, e) = packed::find(b, member).expect("present");
                packed::remove(b, a, e);
                packed::insert(b, new, member);
                Ok(())
            }
            Work::Borrowed(o) => {
                o.update(member, old, new);
                Ok(())
            }
            Work::Owned(o) => {
                o.update(member, old, new);
                Ok(())
            }
        }
    }

    /// Removes `member`, returning its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let removed = match &mut self.work {
            Work::Inline(_, b) => packed::find(b, member).map(|(s, a, e)| {
                packed::remove(b, a, e);
                s
            }),
            Work::Borrowed(o) => o.remove(member),
            Work::Owned(o) => o.remove(member),
        };
        self.changed |= removed.is_some();
        removed
    }

    /// Removes the lowest (or highest, `max`) entry and hands it to `f`.
    pub fn pop<R>(&mut self, max: bool, f: impl FnOnce(f64, &[u8]) -> R) -> Option<R> {
        let popped = match &mut self.work {
            Work::Inline(_, b) => {
                let (s, m, a, e) = if max {
                    packed::iter(b).last()?
                } else {
                    packed::iter(b).next()?
                };
                let r = f(s, m);
                packed::remove(b, a, e);
                Some(r)
            }
            Work::Borrowed(o) => pop_index(o, max, f),
            Work::Owned(o) => pop_index(o, max, f),
        };
        self.changed |= popped.is_some();
        popped
    }

    /// Removes the entries of ranks `start..=end` (from the lowest); returns how many.
    pub fn remove_ranks(&mut self, start: usize, end: usize) -> usize {
        let victims: Vec<(f64, Vec<u8>)> = self
            .view()
            .iter(start, false)
            .take(end + 1 - start)
            .map(|(s, m)| (s, m.to_vec()))
            .collect();
        self.changed |= !victims.is_empty();
        match &mut self.work {
            Work::Inline(_, b) => {
                let mut from = packed::start();
                for _ in 0..start {
                    from = packed::entry_at(b, from).2;
                }
                let mut to = from;
                for _ in 0..victims.len() {
                    to = packed::entry_at(b, to).2;
                }
                b.drain(from..to);
                let n = packed::count(b) - victims.len();
                b[..2].copy_from_slice(&(n as u16).to_le_bytes());
            }
            Work::Borrowed(o) => victims.iter().for_each(|(s, m)| o.remove_entry(*s, m)),
            Work::Owned(o) => victims.iter().for_each(|(s, m)| o.remove_entry(*s, m)),
        }
        victims.len()
    }

    /// Converts a packed set to the index whatever its size (SORT does this in Redis, and it is
    /// visible: the index keeps a -0 score that the packed form stores as 0).
    /// (Infallible since the index lives in the global allocator; a `Result` still, like the
    /// other `Edit` operations that edit closures chain with `?`.)
    pub fn force_index(&mut self) -> Result<(), StoreError> {
        self.convert();
        Ok(())
    }
}

fn pop_index<R>(o: &mut ZSetObj, max: bool, f: impl FnOnce(f64, &[u8]) -> R) -> Option<R> {
    let (s, m) = if max { o.tree.last()? } else { o.tree.first()? };
    let r = f(s, m);
    // A copy of the member: the tree it points into changes while it is removed.
    let member = held::Member::from(m);
    o.remove_entry(s, member.as_slice());
    // Pops come in runs (ZPOPMIN with a count, a pipeline of them, a blocked consumer): the
    // next pop's index slot starts loading now, while the reply is written.
    if let Some((_, next)) = if max { o.tree.last() } else { o.tree.first() } {
        o.index.prefetch(index::fingerprint(next));
    }
    Some(r)
}

impl Shard {
    /// A builder of a sorted set of about `count_hint` members, the longest `member_bytes_hint`
    /// bytes: it starts as the index when those pass the packed thresholds, packed otherwise
    /// (converting when an insert crosses one), as Redis 7.0's ZRANGESTORE and ZUNIONSTORE
    /// create their destinations.
    pub fn zset_builder(
        &mut self,
        count_hint: usize,
        member_bytes_hint: usize,
    ) -> Result<Builder<'_, ZSet>, StoreError> {
        let limits = self.limits;
        let mut builder = self.builder::<ZSet>()?;
        if !fits_packed(&limits, count_hint, member_bytes_hint) {
            // A closure: the method path is not general over the edit's lifetime.
            #[allow(clippy::redundant_closure_for_method_calls)]
            builder.edit(|z| z.force_index())?;
        }
        Ok(builder)
    }
}

impl Builder<'_, ZSet> {
    /// Adds a member, or moves it to `score`: false when it was already there.
    pub fn insert(&mut self, member: &[u8], score: f64) -> Result<bool, StoreError> {
        self.edit(|z| match z.score(member) {
            Some(old) => z.update(member, old, score).map(|()| false),
            None => z.insert(member, score).map(|()| true),
        })
    }
}

/// Orders two entries as a zset does (for callers building results).
pub fn order(a: &(Vec<u8>, f64), b: &(Vec<u8>, f64)) -> Ordering {
    cmp_key(a.1, &a.0, b.1, &b.0)
}

/// A member copied out of the structure it is about to be removed from, on the stack when short.
mod held {
    pub enum Member {
        Short([u8; 64], usize),
        Long(Vec<u8>),
    }

    impl Member {
        pub fn from(m: &[u8]) -> Member {
            if m.len() <= 64 {
                let mut b = [0u8; 64];
                b[..m.len()].copy_from_slice(m);
                Member::Short(b, m.len())
            } else {
                Member::Long(m.to_vec())
            }
        }

        pub fn as_slice(&self) -> &[u8] {
            match self {
                Member::Short(b, n) => &b[..*n],
                Member::Long(v) => v,
            }
        }
    }
}
