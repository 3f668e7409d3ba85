//! Sorted-set values: two encodings, chosen by size as Redis 7.0 chooses listpack or skiplist.
//!
//! ```text
//!  ZSET_PACKED (tag 12, inline payload, "listpack")
//!  +-----------+-------------------------------------------------------------+
//!  | count u16 | entry*  in (score, member) order                            |
//!  +-----------+-------------------------------------------------------------+
//!  entry = [form: 1 B][score][member len varint][member bytes]
//!          form 0: score is an f64, 8 bytes LE
//!          form 1: score is an integer |i| <= 2^62 (-0 is stored as 0, as Redis's
//!                  listpack does), zigzag varint
//!
//!  ZSET_INDEX (tag 13, boxed ZSetObj, "skiplist")
//!  ZSetObj ── map:  PageHash member → score (f64 LE, 8 B) in the shard heap   (ZSCORE: O(1))
//!          └─ tree: zset_tree::Tree, a counted B+tree over (score, member)    (ranks: O(log n))
//! ```
//! Thresholds are Redis's defaults: a set stays packed while it has at most 128 members
//! (`zset-max-listpack-entries`) and no member is longer than 64 bytes (`zset-max-listpack-value`);
//! it converts to the index as soon as a write crosses either. Like Redis 7.0 it never converts
//! back in place; a result created whole (ZUNIONSTORE, ZRANGESTORE…, `import`) is packed or
//! indexed by its size.
//!
//! Invariants: packed `count` == entries, entries strictly increasing by (score, member); index
//! `map.len() == tree.len()` and every (member, score) of the map is in the tree. Scores are never
//! NaN (the commands refuse them), so (score, member) is a total order; -0 and 0 compare equal as
//! in Redis and the member decides.
//!
//! Bytes per member (20-byte members, integer scores): packed 1 + 1..3 + 1 + 20 ≈ 24 B;
//! index ≈ 64 B in the map (one 64-byte piece for a 31-byte entry) + ≈ 40 B in the tree. Redis's
//! skiplist encoding: node (≈ 48–64 B) + sds (32 B) + dictEntry (32 B) + bucket (8–16 B) ≈ 130 B.
//! Measured figures are in `docs/types.md`.

use crate::object::{Object, tag};
use crate::shard::{Shard, StoreError, Ttl};
use crate::types::zset_tree::{Pos, Tree, cmp_key};
use heap::Heap;
use maps::PageHash;
use std::cmp::Ordering;

/// `zset-max-listpack-entries`.
pub const PACKED_ENTRIES_MAX: usize = 128;
/// `zset-max-listpack-value`.
pub const PACKED_VALUE_MAX: usize = 64;

/// Whether a zset of `count` members whose longest member has `member_len_max` bytes is packed.
pub fn fits_packed(count: usize, member_len_max: usize) -> bool {
    count <= PACKED_ENTRIES_MAX && member_len_max <= PACKED_VALUE_MAX
}

/// The packed (inline) encoding.
pub mod packed {
    use super::{Ordering, cmp_key};
    use crate::types::zset_tree::{varint_get, varint_put};

    const HEADER_BYTES: usize = 2;
    /// `double2ll`'s range: |score| <= LLONG_MAX / 2.
    const INT_LIMIT: f64 = (i64::MAX / 2) as f64;

    /// An empty packed zset.
    pub fn empty() -> Vec<u8> {
        vec![0, 0]
    }

    pub fn count(bytes: &[u8]) -> usize {
        usize::from(u16::from_le_bytes([bytes[0], bytes[1]]))
    }

    fn set_count(bytes: &mut [u8], n: usize) {
        let n = u16::try_from(n).expect("packed zsets are small");
        bytes[..2].copy_from_slice(&n.to_le_bytes());
    }

    /// Appends an entry (the caller keeps the order).
    #[allow(clippy::float_cmp)] // exactly integral is the point
    pub fn put_entry(out: &mut Vec<u8>, score: f64, member: &[u8]) {
        // Redis's listpack stores a score that `double2ll` takes as an integer (so -0 as 0).
        if score == score.trunc() && score.abs() <= INT_LIMIT {
            out.push(1);
            let i = score as i64;
            varint_put(out, ((i << 1) ^ (i >> 63)) as u64);
        } else {
            out.push(0);
            out.extend_from_slice(&score.to_le_bytes());
        }
        varint_put(out, member.len() as u64);
        out.extend_from_slice(member);
    }

    /// Decodes the entry at `off`: (score, member, offset of the next entry).
    #[inline]
    pub fn entry_at(bytes: &[u8], off: usize) -> (f64, &[u8], usize) {
        let (score, mut at) = if bytes[off] == 1 {
            let (z, n) = varint_get(&bytes[off + 1..]);
            let i = ((z >> 1) as i64) ^ -((z & 1) as i64);
            (i as f64, off + 1 + n)
        } else {
            let s = f64::from_le_bytes(bytes[off + 1..off + 9].try_into().expect("8 bytes"));
            (s, off + 9)
        };
        let (len, n) = varint_get(&bytes[at..]);
        at += n;
        let end = at + len as usize;
        (score, &bytes[at..end], end)
    }

    /// Offset of the first entry.
    pub fn start() -> usize {
        HEADER_BYTES
    }

    /// Iterates (score, member, entry start, entry end).
    pub fn iter(bytes: &[u8]) -> impl Iterator<Item = (f64, &[u8], usize, usize)> + '_ {
        let mut off = HEADER_BYTES;
        std::iter::from_fn(move || {
            if off >= bytes.len() {
                return None;
            }
            let (s, m, next) = entry_at(bytes, off);
            let start = off;
            off = next;
            Some((s, m, start, next))
        })
    }

    /// The score of `member` and the byte range of its entry.
    pub fn find(bytes: &[u8], member: &[u8]) -> Option<(f64, usize, usize)> {
        iter(bytes)
            .find(|(_, m, _, _)| *m == member)
            .map(|(s, _, a, b)| (s, a, b))
    }

    /// Removes the entry at `start..end`.
    pub fn remove(bytes: &mut Vec<u8>, start: usize, end: usize) {
        bytes.drain(start..end);
        let n = count(bytes) - 1;
        set_count(bytes, n);
    }

    /// Inserts (score, member) in order; the member must be absent.
    pub fn insert(bytes: &mut Vec<u8>, score: f64, member: &[u8]) {
        let at = iter(bytes)
            .find(|(s, m, _, _)| cmp_key(*s, m, score, member) == Ordering::Greater)
            .map_or(bytes.len(), |(_, _, a, _)| a);
        let mut entry = Vec::with_capacity(member.len() + 12);
        put_entry(&mut entry, score, member);
        bytes.splice(at..at, entry);
        let n = count(bytes) + 1;
        set_count(bytes, n);
    }

    /// Encodes entries already in order.
    pub fn encode<'a>(entries: impl Iterator<Item = (f64, &'a [u8])>) -> Vec<u8> {
        let mut out = empty();
        let mut n = 0;
        for (s, m) in entries {
            put_entry(&mut out, s, m);
            n += 1;
        }
        set_count(&mut out, n);
        out
    }

    /// Offsets of every entry (for walking backwards).
    pub fn offsets(bytes: &[u8]) -> Vec<usize> {
        iter(bytes).map(|(_, _, a, _)| a).collect()
    }
}

/// The boxed (index) encoding of a zset.
#[derive(Debug)]
pub struct ZSetObj {
    /// Boxed, as the tree is, so that `Object` stays small (a boxed collection's fixed cost).
    map: Box<PageHash>,
    /// Boxed so that `Object` stays as small as its other variants.
    tree: Box<Tree>,
}

impl ZSetObj {
    pub fn new(heap: &mut Heap) -> Result<ZSetObj, StoreError> {
        Ok(ZSetObj {
            map: Box::new(PageHash::new(heap)?),
            tree: Box::default(),
        })
    }

    /// The member → score map (for prefetching a member's lookup).
    pub fn members_map(&self) -> &PageHash {
        &self.map
    }

    /// Builds an index holding `entries` (members distinct).
    pub fn from_entries<'a>(
        heap: &mut Heap,
        entries: impl Iterator<Item = (f64, &'a [u8])>,
    ) -> Result<ZSetObj, StoreError> {
        let mut obj = ZSetObj::new(heap)?;
        for (s, m) in entries {
            if let Err(e) = obj.insert(heap, m, s) {
                obj.destroy(heap);
                return Err(e);
            }
        }
        Ok(obj)
    }

    pub fn destroy(self, heap: &mut Heap) {
        self.map.destroy(heap);
    }

    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<PageHash>() + self.map.memory_bytes() + self.tree.memory_bytes()
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

    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    pub fn export(&self, _heap: &Heap) -> Vec<(Vec<u8>, f64)> {
        let mut out = Vec::with_capacity(self.len());
        let mut pos = (!self.is_empty()).then(|| self.tree.select(0));
        while let Some(p) = pos {
            let (s, m) = self.tree.get(p);
            out.push((m.to_vec(), s));
            pos = self.tree.next(p);
        }
        out
    }

    pub fn score(&self, heap: &Heap, member: &[u8]) -> Option<f64> {
        self.map
            .get(heap, member)
            .map(|v| f64::from_le_bytes(v.bytes[..8].try_into().expect("8-byte score")))
    }

    /// Adds a member that is not present.
    pub fn insert(&mut self, heap: &mut Heap, member: &[u8], score: f64) -> Result<(), StoreError> {
        self.map.insert(heap, member, &score.to_le_bytes())?;
        self.tree.insert(score, member);
        Ok(())
    }

    /// Changes the score of a present member from `old` to `new`.
    pub fn update(
        &mut self,
        heap: &mut Heap,
        member: &[u8],
        old: f64,
        new: f64,
    ) -> Result<(), StoreError> {
        self.map.insert(heap, member, &new.to_le_bytes())?;
        self.tree.remove(old, member);
        self.tree.insert(new, member);
        Ok(())
    }

    /// Removes `member`, returning its score.
    pub fn remove(&mut self, heap: &mut Heap, member: &[u8]) -> Option<f64> {
        let score = self.score(heap, member)?;
        self.map.remove(heap, member);
        self.tree.remove(score, member);
        Some(score)
    }

    /// Removes the present entry (score, member) (popping, with the member already known).
    pub fn remove_entry(&mut self, heap: &mut Heap, score: f64, member: &[u8]) {
        self.map.remove(heap, member);
        self.tree.remove(score, member);
    }

    /// One SCAN step over the members (ZSCAN of a large set).
    pub fn scan(&self, heap: &Heap, cursor: u64, mut f: impl FnMut(&[u8], f64)) -> u64 {
        self.map.scan(heap, cursor, |m, v| {
            f(
                m,
                f64::from_le_bytes(v.bytes[..8].try_into().expect("8-byte score")),
            );
        })
    }

    /// A random member chosen by `r` (ZRANDMEMBER).
    pub fn sample(&self, r: u64) -> (f64, &[u8]) {
        let rank = (r % self.len() as u64) as usize;
        self.tree.get(self.tree.select(rank))
    }

    /// Checks the invariants (tests).
    pub fn validate(&self, heap: &Heap) -> Result<(), String> {
        self.tree.validate()?;
        self.map.validate(heap)?;
        if self.map.len() != self.tree.len() {
            return Err(format!(
                "map has {} members, tree {}",
                self.map.len(),
                self.tree.len()
            ));
        }
        for (s, m) in ZRef::Index(self, heap).iter(0, false) {
            if self.score(heap, m) != Some(s) {
                return Err("tree entry without its map score".into());
            }
        }
        Ok(())
    }
}

/// Read access to a zset in either encoding.
#[derive(Clone, Copy, Debug)]
pub enum ZRef<'a> {
    Packed(&'a [u8]),
    Index(&'a ZSetObj, &'a Heap),
}

impl<'a> ZRef<'a> {
    pub fn len(&self) -> usize {
        match self {
            ZRef::Packed(b) => packed::count(b),
            ZRef::Index(o, _) => o.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            ZRef::Packed(b) => packed::find(b, member).map(|(s, _, _)| s),
            ZRef::Index(o, h) => o.score(h, member),
        }
    }

    /// (0-based rank from the lowest, score) of `member`.
    pub fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        match self {
            ZRef::Packed(b) => packed::iter(b)
                .enumerate()
                .find(|(_, (_, m, _, _))| *m == member)
                .map(|(i, (s, _, _, _))| (i, s)),
            ZRef::Index(o, h) => {
                let s = o.score(h, member)?;
                Some((o.tree.rank(s, member), s))
            }
        }
    }

    /// How many entries come before the first one for which `at_or_after` holds (a predicate
    /// false then true along the order).
    pub fn count_before(&self, at_or_after: impl Fn(f64, &[u8]) -> bool) -> usize {
        match self {
            ZRef::Packed(b) => packed::iter(b)
                .take_while(|(s, m, _, _)| !at_or_after(*s, m))
                .count(),
            ZRef::Index(o, _) => o.tree.count_before(at_or_after),
        }
    }

    /// Iterates (score, member) from rank `start` upward, or downward when `rev` (rank counted
    /// from the lowest either way).
    pub fn iter(&self, start: usize, rev: bool) -> ZIter<'a> {
        let len = self.len();
        if start >= len {
            return ZIter::Done;
        }
        match *self {
            ZRef::Packed(b) if !rev => {
                let mut off = packed::start();
                for _ in 0..start {
                    off = packed::entry_at(b, off).2;
                }
                ZIter::PackedFwd { bytes: b, off }
            }
            ZRef::Packed(b) => ZIter::PackedRev {
                bytes: b,
                offsets: packed::offsets(b),
                next: start + 1,
            },
            ZRef::Index(o, _) if !rev => ZIter::TreeFwd {
                tree: &o.tree,
                pos: Some(o.tree.select(start)),
            },
            ZRef::Index(o, _) => {
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

/// Write access to a zset in either encoding. A packed zset is edited as an owned copy of its
/// payload (the command stores it back); the index is changed in place.
///
/// A packed set given a heap converts itself, as Redis's `zsetAdd` does, just before an insert
/// that would cross a threshold: it becomes `Owned`, an index the caller then stores. Without a
/// heap it stays packed whatever its size (the caller converts).
#[derive(Debug)]
pub enum ZMut<'a> {
    Packed(&'a mut Vec<u8>, Option<&'a mut Heap>),
    Index(&'a mut ZSetObj, &'a mut Heap),
    Owned(Box<ZSetObj>, &'a mut Heap),
}

impl ZMut<'_> {
    pub fn view(&self) -> ZRef<'_> {
        match self {
            ZMut::Packed(b, _) => ZRef::Packed(b),
            ZMut::Index(o, h) => ZRef::Index(o, h),
            ZMut::Owned(o, h) => ZRef::Index(o, h),
        }
    }

    pub fn len(&self) -> usize {
        self.view().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.view().score(member)
    }

    /// Adds an absent member.
    pub fn insert(&mut self, member: &[u8], score: f64) -> Result<(), StoreError> {
        if let ZMut::Packed(b, heap) = self
            && heap.is_some()
            && !fits_packed(packed::count(b) + 1, member.len())
        {
            let heap = heap.take().expect("checked");
            let obj = ZSetObj::from_entries(heap, packed::iter(b).map(|(s, m, _, _)| (s, m)))?;
            *self = ZMut::Owned(Box::new(obj), heap);
        }
        match self {
            ZMut::Packed(b, _) => {
                packed::insert(b, score, member);
                Ok(())
            }
            ZMut::Index(o, h) => o.insert(h, member, score),
            ZMut::Owned(o, h) => o.insert(h, member, score),
        }
    }

    /// The index this set converted into, if it did.
    pub fn into_owned(self) -> Option<ZSetObj> {
        match self {
            ZMut::Owned(o, _) => Some(*o),
            _ => None,
        }
    }

    /// Moves a present member from score `old` to `new`.
    pub fn update(&mut self, member: &[u8], old: f64, new: f64) -> Result<(), StoreError> {
        match self {
            ZMut::Packed(b, _) => {
                let (_, a, e) = packed::find(b, member).expect("present");
                packed::remove(b, a, e);
                packed::insert(b, new, member);
                Ok(())
            }
            ZMut::Index(o, h) => o.update(h, member, old, new),
            ZMut::Owned(o, h) => o.update(h, member, old, new),
        }
    }

    /// Removes `member`, returning its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match self {
            ZMut::Packed(b, _) => {
                let (s, a, e) = packed::find(b, member)?;
                packed::remove(b, a, e);
                Some(s)
            }
            ZMut::Index(o, h) => o.remove(h, member),
            ZMut::Owned(o, h) => o.remove(h, member),
        }
    }

    /// Removes the lowest (or highest, `max`) entry and hands it to `f`.
    pub fn pop<R>(&mut self, max: bool, f: impl FnOnce(f64, &[u8]) -> R) -> Option<R> {
        match self {
            ZMut::Packed(b, _) => {
                let (s, m, a, e) = if max {
                    packed::iter(b).last()?
                } else {
                    packed::iter(b).next()?
                };
                let r = f(s, m);
                packed::remove(b, a, e);
                Some(r)
            }
            ZMut::Index(o, h) => Self::pop_index(o, h, max, f),
            ZMut::Owned(o, h) => Self::pop_index(o, h, max, f),
        }
    }

    fn pop_index<R>(
        o: &mut ZSetObj,
        h: &mut Heap,
        max: bool,
        f: impl FnOnce(f64, &[u8]) -> R,
    ) -> Option<R> {
        let (s, m) = if max { o.tree.last()? } else { o.tree.first()? };
        let r = f(s, m);
        // A copy of the member: the tree it points into changes while it is removed.
        let member = held::Member::from(m);
        o.remove_entry(h, s, member.as_slice());
        // Pops come in runs (ZPOPMIN with a count, a pipeline of them, a blocked consumer), so
        // the next pops' map entries start loading now, one stage per pop: the next member's
        // page header (its directory word was loaded by the previous pop) and the directory
        // word of the member after it. Both stages at once stalled on the directory word.
        if let Some((_, next)) = if max { o.tree.last() } else { o.tree.first() } {
            o.map.prefetch(o.map.hash_key(next), 1);
        }
        let len = o.tree.len();
        if len > 1 {
            let (_, after) = o.tree.get(o.tree.select(if max { len - 2 } else { 1 }));
            o.map.prefetch(o.map.hash_key(after), 0);
        }
        Some(r)
    }

    /// Removes the entries of ranks `start..=end` (from the lowest); returns how many.
    pub fn remove_ranks(&mut self, start: usize, end: usize) -> usize {
        let victims: Vec<(f64, Vec<u8>)> = self
            .view()
            .iter(start, false)
            .take(end + 1 - start)
            .map(|(s, m)| (s, m.to_vec()))
            .collect();
        match self {
            ZMut::Packed(b, _) => {
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
            ZMut::Index(o, h) => {
                for (s, m) in &victims {
                    o.remove_entry(h, *s, m);
                }
            }
            ZMut::Owned(o, h) => {
                for (s, m) in &victims {
                    o.remove_entry(h, *s, m);
                }
            }
        }
        victims.len()
    }
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

/// Stores `entries` (in rank order, members distinct) under `key`, packed or indexed by size.
pub fn store_entries(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    entries: &[(Vec<u8>, f64)],
    ttl: Ttl,
    now_ms: u64,
) -> Result<(), StoreError> {
    let longest = entries.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
    if fits_packed(entries.len(), longest) {
        let bytes = packed::encode(entries.iter().map(|(m, s)| (*s, m.as_slice())));
        shard.put(db, key, tag::ZSET_PACKED, &bytes, ttl, now_ms)
    } else {
        let obj =
            ZSetObj::from_entries(shard.heap_mut(), entries.iter().map(|(m, s)| (*s, &m[..])))?;
        shard.put_object(db, key, tag::ZSET_INDEX, Object::ZSet(obj), ttl, now_ms)
    }
}

pub fn import(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    mut value: Vec<(Vec<u8>, f64)>,
    ttl: Ttl,
    now_ms: u64,
) -> Result<(), StoreError> {
    value.sort_by(|a, b| cmp_key(a.1, &a.0, b.1, &b.0));
    store_entries(shard, db, key, &value, ttl, now_ms)
}

pub fn export_inline(_tag: u8, bytes: &[u8]) -> Vec<(Vec<u8>, f64)> {
    ZRef::Packed(bytes).to_vec()
}

/// Orders two entries as a zset does (for callers building results).
pub fn order(a: &(Vec<u8>, f64), b: &(Vec<u8>, f64)) -> Ordering {
    cmp_key(a.1, &a.0, b.1, &b.0)
}
