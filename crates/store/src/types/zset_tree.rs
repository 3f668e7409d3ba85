//! The ordered half of a large sorted set, and where its members live: a B+tree over
//! (score, member) whose inner nodes count the entries below each child, so rank ↔ entry is
//! O(log n) in both directions (ZRANK, ZRANGE by index, ZREMRANGEBYRANK), as Redis's skiplist
//! spans make it. Each member is stored once, here; the member index beside it (`zset_index.rs`)
//! only names the leaf that holds it, so the tree reports every entry it moves between leaves.
//!
//! ```text
//!  Tree ── leaves: Vec<Leaf>   (arena with stable u32 ids; a freed slot goes on free_leaves)
//!       ├─ inners: Vec<Inner>  (arena; free_inners)
//!       └─ root (a leaf id when height == 0, else an inner id)
//!
//!  Leaf  { data, count, prev, next, last_insert }   40 B; leaves are chained in key order
//!  data: entry*, capacity a multiple of LEAF_CAP_STEP (64 B)
//!  entry = [head varint][score][member bytes]
//!          head = member len << 2 | form
//!          form 1: score is an integer, |i| <= 2^53 and not -0: zigzag varint (1–8 B)
//!          form 2: score is m / 10^e, e in 1..=3, exactly: varint of zigzag(m) << 2 | e
//!          form 0: score is an f64, 8 bytes LE
//!
//!  Inner { children, counts, seps }    children.len() == counts.len() == seps.len()
//!  counts[i] = entries below children[i];  seps[i] (i ≥ 1) = a key with
//!  max(child i-1) < seps[i] <= min(child i); seps[0] is never read.
//! ```
//! Invariants: `sum(counts) == entries below the node`, `len == entries in all leaves`, every
//! leaf and inner node is non-empty (except a root leaf), and the separators order the children
//! (checked by `validate`). Deleting keys keeps the separators valid (a lower bound stays a lower
//! bound), so only splits write separators. A separator is `(score of the right leaf's first
//! entry, empty member)` when that score is above the left leaf's last one, so most separators
//! own no bytes; only a split inside a run of equal scores copies a member. A leaf splits when
//! its data exceeds `LEAF_BYTES_MAX` and merges with a sibling when it falls under a quarter of
//! it; an inner node splits above `INNER_CHILDREN_MAX` children and is removed when empty. Inner
//! nodes do not merge: the height stays bounded by the largest size the set ever had (log₃₂),
//! which is the alternative we took over a full rebalancing B-tree to keep this file small.
//!
//! Splits. A leaf splits in half by bytes, except when inserts arrive in order: an insert right
//! after (or right before) the previous insert into the same leaf splits the leaf just past the
//! new entry, so the part the run has passed stays full. Ascending scores, or an ascending
//! stream of members inserted among others (time-ordered keys, a counter), then fill leaves to
//! ~100 % instead of the ~50 % an even split leaves behind the run, and random inserts still
//! split evenly. Before splitting, an overfull leaf moves entries into a sibling under the same
//! parent that has room for them (`shift_left`, `shift_right`, as a B*-tree redistributes):
//! two interleaved ascending runs then fill leaves to ~90 %, random scores to ~80 %.
//!
//! Moves. `insert` and `remove` call `moved(member, from leaf, to leaf)` for every entry a split,
//! a shift or a merge carries to another leaf (not for the entry being inserted: `insert` returns its
//! leaf). A split moves at most one leaf's entries and happens once per ~half a leaf of inserts,
//! so the reports are amortised O(1) per insert.
//!
//! Bytes per entry: head 1 + score (integral scores up to ±2^20: 1–3 B, else 8) + member, in
//! leaves 70–100 % full rounded up to 64 B, plus the 40-byte `Leaf` per ~20 entries and under
//! 1/20 of a separator. For 19-byte members with small integer scores ≈ 26 B; the member index
//! adds ≈ 10 B. Redis's skiplist node for the same is ≈ 48–64 B plus its sds member (32 B) and
//! its dict entry (≈ 40 B), which we compare in `zset.rs`.

use maps::varint;
use std::cmp::Ordering;

const NIL: u32 = u32::MAX;
/// A leaf splits when its data grows past this. 512 B (~20 entries of 20-byte members) keeps a
/// split's copy, a pop's memmove and a member search in the leaf (ZSCORE) short; larger leaves
/// would save `Leaf` and separator bytes at the cost of longer linear scans.
pub const LEAF_BYTES_MAX: usize = 512;
/// Leaf buffers grow and shrink in steps of this many bytes: 64 wastes 32 B per leaf on average
/// (~7 %) and reallocates every two or three inserts; doubling (Vec's default) wasted ~25 %.
const LEAF_CAP_STEP: usize = 64;
const INNER_CHILDREN_MAX: usize = 48;
/// Largest magnitude an integer-form score has: every integer up to it is an exact f64.
const INT_SCORE_MAX: f64 = 9_007_199_254_740_992.0;

/// What a split or a merge reports for each entry it carries to another leaf:
/// `(member, from leaf, to leaf)`.
pub type Moved<'a> = &'a mut dyn FnMut(&[u8], u32, u32);

/// Orders two (score, member) keys as Redis does: by score, then by member bytes.
#[inline]
pub fn cmp_key(sa: f64, ma: &[u8], sb: f64, mb: &[u8]) -> Ordering {
    match sa.partial_cmp(&sb) {
        Some(Ordering::Equal) | None => ma.cmp(mb),
        Some(o) => o,
    }
}

/// The integer a score is stored as, when it has the integer form (a -0 keeps the f64 form, so
/// its sign survives as in Redis's skiplist).
#[inline]
#[allow(clippy::float_cmp)] // exactly integral is the point
fn int_form(s: f64) -> Option<i64> {
    (s == s.trunc() && s.abs() <= INT_SCORE_MAX && !(s == 0.0 && s.is_sign_negative()))
        .then_some(s as i64)
}

/// Powers of ten by a decimal score's exponent (index 0 is unused).
const POW10: [f64; 4] = [1.0, 10.0, 100.0, 1000.0];

/// A score's stored form, the low two bits of its entry's head.
const FORM_F64: u64 = 0;
const FORM_INT: u64 = 1;
const FORM_DECIMAL: u64 = 2;

/// The compact form of a score, `(form, varint payload)`, when it has one: an integer, or a
/// decimal `m / 10^e` (e in 1..=3, |m| <= 2^53) that divides back to exactly its bits. Prices,
/// half points and millisecond timestamps in seconds then take 2–7 bytes instead of 8.
#[inline]
fn compact(s: f64) -> Option<(u64, u64)> {
    if let Some(i) = int_form(s) {
        return Some((FORM_INT, varint::zigzag(i)));
    }
    if s.is_nan() || s.abs() > INT_SCORE_MAX / 1000.0 {
        return None;
    }
    (1..=3u64).find_map(|e| {
        let m = (s * POW10[e as usize]).round() as i64;
        ((m as f64 / POW10[e as usize]).to_bits() == s.to_bits())
            .then(|| (FORM_DECIMAL, varint::zigzag(m) << 2 | e))
    })
}

/// Bytes the entry of (s, m) takes.
#[inline]
fn entry_size(s: f64, m: &[u8]) -> usize {
    let score = compact(s).map_or(8, |(_, p)| varint::len(p));
    varint::len((m.len() as u64) << 2) + score + m.len()
}

/// Writes the entry of (s, m) into `out`, exactly `entry_size(s, m)` long.
fn entry_write(out: &mut [u8], s: f64, m: &[u8]) {
    let form = compact(s);
    let head = (m.len() as u64) << 2 | form.map_or(FORM_F64, |(f, _)| f);
    let mut at = varint::put(out, head);
    if let Some((_, p)) = form {
        at += varint::put(&mut out[at..], p);
    } else {
        out[at..at + 8].copy_from_slice(&s.to_le_bytes());
        at += 8;
    }
    out[at..].copy_from_slice(m);
}

/// Decodes the score of form `form` at the start of `bytes`: (score, bytes read).
#[inline]
fn score_at(bytes: &[u8], form: u64) -> (f64, usize) {
    if form == FORM_F64 {
        return (
            f64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")),
            8,
        );
    }
    let (p, n) = varint::get(bytes);
    if form == FORM_INT {
        (varint::unzigzag(p) as f64, n)
    } else {
        (varint::unzigzag(p >> 2) as f64 / POW10[(p & 3) as usize], n)
    }
}

/// Decodes the entry at `off` of a leaf: (score, member, offset of the next entry).
#[inline]
pub fn entry_at(data: &[u8], off: usize) -> (f64, &[u8], usize) {
    let (head, n) = varint::get(&data[off..]);
    let (score, k) = score_at(&data[off + n..], head & 3);
    let at = off + n + k;
    let end = at + (head >> 2) as usize;
    (score, &data[at..end], end)
}

/// The member's byte range of the entry at `off` (its end is the next entry's offset), without
/// decoding the score.
#[inline]
fn member_span(data: &[u8], off: usize) -> (usize, usize) {
    let (head, n) = varint::get(&data[off..]);
    let at = off + n;
    let score_bytes = if head & 3 == FORM_F64 {
        8
    } else {
        data[at..].iter().position(|&b| b < 0x80).expect("varint") + 1
    };
    let start = at + score_bytes;
    (start, start + (head >> 2) as usize)
}

/// Reports to `moved` every entry of `data`, carried from leaf `from` to leaf `to`, but the one
/// numbered `skip` when the first is numbered `first` (the entry being inserted; NIL for none).
fn report_moves(data: &[u8], first: u32, skip: u32, from: u32, to: u32, moved: Moved<'_>) {
    let (mut off, mut i) = (0, first);
    while off < data.len() {
        let (start, end) = member_span(data, off);
        if i != skip {
            moved(&data[start..end], from, to);
        }
        (off, i) = (end, i + 1);
    }
}

/// Grows `data` so that `extra` more bytes fit, in `LEAF_CAP_STEP` steps.
fn reserve_step(data: &mut Vec<u8>, extra: usize) {
    let want = data.len() + extra;
    if want > data.capacity() {
        data.reserve_exact(want.next_multiple_of(LEAF_CAP_STEP) - data.len());
    }
}

/// Gives back a buffer's capacity beyond the step that holds its length, once more than
/// `slack` bytes of it are spare: a split or a shift passes 0, a removal one step (so that a
/// remove and an insert in turn do not reallocate each time).
fn trim_step(data: &mut Vec<u8>, slack: usize) {
    let want = data.len().next_multiple_of(LEAF_CAP_STEP);
    if data.capacity() > want + slack {
        data.shrink_to(want);
    }
}

#[derive(Debug, Default)]
struct Leaf {
    data: Vec<u8>,
    count: u32,
    prev: u32,
    next: u32,
    /// Entry index of the last insert into this leaf (NIL when none since its last split):
    /// the next split is uneven when the next insert lands right after or right before it (see
    /// "Splits"). Per leaf, so that inserts alternating between runs in different places (two
    /// ascending streams) are each seen in order. It fills what would be padding.
    last_insert: u32,
}

const _: () = assert!(std::mem::size_of::<Leaf>() == 40);

#[derive(Debug)]
struct Sep {
    score: f64,
    member: Box<[u8]>,
}

impl Sep {
    fn none() -> Sep {
        Sep {
            score: 0.0,
            member: Box::default(),
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    children: Vec<u32>,
    counts: Vec<u32>,
    seps: Vec<Sep>,
}

impl Inner {
    /// The child whose range holds key (s, m): the last i ≥ 1 with seps[i] <= key, else 0.
    fn child_for(&self, s: f64, m: &[u8]) -> usize {
        // seps[1..] is sorted: binary search for the count of seps <= key.
        let seps = &self.seps[1..];
        seps.partition_point(|sep| cmp_key(sep.score, &sep.member, s, m) != Ordering::Greater)
    }
}

/// A position in the tree: a leaf and a byte offset in its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    pub leaf: u32,
    pub off: usize,
}

/// The ordered index of a large zset.
#[derive(Debug)]
pub struct Tree {
    leaves: Vec<Leaf>,
    inners: Vec<Inner>,
    free_leaves: Vec<u32>,
    free_inners: Vec<u32>,
    root: u32,
    height: u32,
    len: usize,
    first: u32,
    last: u32,
    /// Scratch path of (inner id, child index) from the root, reused between calls.
    path: Vec<(u32, u32)>,
    /// Scratch bytes for entries on their way between leaves, reused between calls.
    scratch: Vec<u8>,
}

impl Default for Tree {
    fn default() -> Tree {
        Tree {
            leaves: vec![Leaf {
                data: Vec::new(),
                count: 0,
                prev: NIL,
                next: NIL,
                last_insert: NIL,
            }],
            inners: Vec::new(),
            free_leaves: Vec::new(),
            free_inners: Vec::new(),
            root: 0,
            height: 0,
            len: 0,
            first: 0,
            last: 0,
            path: Vec::new(),
            scratch: Vec::new(),
        }
    }
}

impl Tree {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held by the tree: the capacities of its vectors and separators, plus the 8-byte
    /// allocator header of each leaf buffer (most of its allocations).
    pub fn memory_bytes(&self) -> usize {
        let leaves: usize = self
            .leaves
            .iter()
            .map(|l| l.data.capacity() + if l.data.capacity() > 0 { 8 } else { 0 })
            .sum();
        let inners: usize = self
            .inners
            .iter()
            .map(|n| {
                n.children.capacity() * 8
                    + n.seps.capacity() * std::mem::size_of::<Sep>()
                    + n.seps.iter().map(|s| s.member.len()).sum::<usize>()
            })
            .sum();
        leaves
            + inners
            + self.leaves.capacity() * std::mem::size_of::<Leaf>()
            + self.inners.capacity() * std::mem::size_of::<Inner>()
            + (self.free_leaves.capacity() + self.free_inners.capacity()) * 4
    }

    fn alloc_leaf(&mut self, leaf: Leaf) -> u32 {
        if let Some(id) = self.free_leaves.pop() {
            self.leaves[id as usize] = leaf;
            id
        } else {
            // By an eighth, not Vec's doubling: the arena is ~2 B per entry and a doubling
            // would leave up to half of it unused.
            if self.leaves.len() == self.leaves.capacity() {
                self.leaves.reserve_exact(self.leaves.len() / 8 + 4);
            }
            self.leaves.push(leaf);
            (self.leaves.len() - 1) as u32
        }
    }

    fn alloc_inner(&mut self, inner: Inner) -> u32 {
        if let Some(id) = self.free_inners.pop() {
            self.inners[id as usize] = inner;
            id
        } else {
            self.inners.push(inner);
            (self.inners.len() - 1) as u32
        }
    }

    /// Walks from the root to the leaf whose range holds (s, m), recording the path.
    fn descend(&mut self, s: f64, m: &[u8]) -> u32 {
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        let mut node = self.root;
        for _ in 0..self.height {
            let inner = &self.inners[node as usize];
            let i = inner.child_for(s, m);
            path.push((node, i as u32));
            node = inner.children[i];
        }
        self.path = path;
        node
    }

    /// Inserts (s, m), which must not be present; returns the leaf that holds it. Entries a
    /// split moves go to `moved`.
    pub fn insert(&mut self, s: f64, m: &[u8], moved: Moved<'_>) -> u32 {
        let leaf_id = self.descend(s, m);
        for &(n, i) in &self.path {
            self.inners[n as usize].counts[i as usize] += 1;
        }
        let leaf = &mut self.leaves[leaf_id as usize];
        let (mut off, mut index) = (0, 0u32);
        while off < leaf.data.len() {
            let (es, em, next) = entry_at(&leaf.data, off);
            if cmp_key(es, em, s, m) == Ordering::Greater {
                break;
            }
            off = next;
            index += 1;
        }
        let size = entry_size(s, m);
        reserve_step(&mut leaf.data, size);
        let old_len = leaf.data.len();
        leaf.data.resize(old_len + size, 0);
        leaf.data.copy_within(off..old_len, off + size);
        entry_write(&mut leaf.data[off..off + size], s, m);
        leaf.count += 1;
        self.len += 1;
        let in_order =
            leaf.last_insert != NIL && (leaf.last_insert + 1 == index || leaf.last_insert == index);
        leaf.last_insert = index;
        if leaf.data.len() <= LEAF_BYTES_MAX || leaf.count < 2 {
            return leaf_id;
        }
        if let Some(held) = self.shift_left(leaf_id, index, moved) {
            return held;
        }
        if let Some(held) = self.shift_right(leaf_id, index, moved) {
            return held;
        }
        let leaf = &self.leaves[leaf_id as usize];
        let at = if !in_order {
            None
        } else if index + 1 < leaf.count {
            Some(index + 1)
        } else {
            Some(index)
        };
        let (right, left_count) = self.split_leaf(leaf_id, at, index, moved);
        if index >= left_count {
            self.leaves[leaf_id as usize].last_insert = NIL;
            self.leaves[right as usize].last_insert = index - left_count;
            right
        } else {
            leaf_id
        }
    }

    /// Before splitting an overfull leaf: moves its first entries into its left sibling (under
    /// the same parent) when that makes the leaf fit and the sibling has room for them, as a
    /// B*-tree redistributes. Returns the leaf that now holds the inserted entry (index
    /// `inserted`), or None when the sibling is missing or too full.
    fn shift_left(&mut self, leaf_id: u32, inserted: u32, moved: Moved<'_>) -> Option<u32> {
        let &(parent, i) = self.path.last()?;
        if i == 0 {
            return None;
        }
        let left_id = self.inners[parent as usize].children[i as usize - 1];
        let data = &self.leaves[leaf_id as usize].data;
        let (mut off, mut k) = (0, 0u32);
        while data.len() - off > LEAF_BYTES_MAX {
            off = entry_at(data, off).2;
            k += 1;
        }
        let left_len = self.leaves[left_id as usize].data.len();
        if k >= self.leaves[leaf_id as usize].count || left_len + off > LEAF_BYTES_MAX {
            return None;
        }
        let mut head = std::mem::take(&mut self.scratch);
        head.clear();
        head.extend(self.leaves[leaf_id as usize].data.drain(..off));
        report_moves(&head, 0, inserted, leaf_id, left_id, moved);
        let left = &mut self.leaves[left_id as usize];
        let left_count = left.count;
        reserve_step(&mut left.data, head.len());
        left.data.extend_from_slice(&head);
        self.scratch = head;
        left.count += k;
        left.last_insert = if inserted < k {
            left_count + inserted
        } else {
            NIL
        };
        let leaf = &mut self.leaves[leaf_id as usize];
        trim_step(&mut leaf.data, 0);
        leaf.count -= k;
        leaf.last_insert = inserted.checked_sub(k).unwrap_or(NIL);
        let sep = Self::separator(
            &self.leaves[left_id as usize].data,
            &self.leaves[leaf_id as usize].data,
        );
        let p = &mut self.inners[parent as usize];
        p.counts[i as usize - 1] += k;
        p.counts[i as usize] -= k;
        p.seps[i as usize] = sep;
        Some(if inserted < k { left_id } else { leaf_id })
    }

    /// `shift_left`'s mirror: moves the last entries of an overfull leaf to the front of its
    /// right sibling.
    fn shift_right(&mut self, leaf_id: u32, inserted: u32, moved: Moved<'_>) -> Option<u32> {
        let &(parent, i) = self.path.last()?;
        let right_id = *self.inners[parent as usize].children.get(i as usize + 1)?;
        let data = &self.leaves[leaf_id as usize].data;
        let (mut off, mut k) = (0, 0u32);
        while off < data.len() && off <= LEAF_BYTES_MAX {
            let next = entry_at(data, off).2;
            if next > LEAF_BYTES_MAX {
                break;
            }
            off = next;
            k += 1;
        }
        let count = self.leaves[leaf_id as usize].count;
        let right_len = self.leaves[right_id as usize].data.len();
        if k == 0 || right_len + data.len() - off > LEAF_BYTES_MAX {
            return None;
        }
        let mut tail = std::mem::take(&mut self.scratch);
        tail.clear();
        tail.extend(self.leaves[leaf_id as usize].data.drain(off..));
        report_moves(&tail, k, inserted, leaf_id, right_id, moved);
        let right = &mut self.leaves[right_id as usize];
        reserve_step(&mut right.data, tail.len());
        right.data.splice(0..0, tail.iter().copied());
        self.scratch = tail;
        right.count += count - k;
        right.last_insert = inserted.checked_sub(k).unwrap_or(NIL);
        let leaf = &mut self.leaves[leaf_id as usize];
        trim_step(&mut leaf.data, 0);
        leaf.count = k;
        if inserted >= k {
            leaf.last_insert = NIL;
        }
        let sep = Self::separator(
            &self.leaves[leaf_id as usize].data,
            &self.leaves[right_id as usize].data,
        );
        let p = &mut self.inners[parent as usize];
        p.counts[i as usize] -= count - k;
        p.counts[i as usize + 1] += count - k;
        p.seps[i as usize + 1] = sep;
        Some(if inserted >= k { right_id } else { leaf_id })
    }

    /// Where a leaf splits: `(byte offset, entries before it)`, before entry `at` when given,
    /// else at the first entry boundary past half its bytes (never leaving a side empty).
    fn split_point(data: &[u8], at: Option<u32>) -> (usize, u32) {
        let (mut off, mut count) = (0, 0);
        if let Some(at) = at {
            while count < at {
                off = entry_at(data, off).2;
                count += 1;
            }
            return (off, count);
        }
        let (half, mut prev) = (data.len() / 2, 0);
        while off < half || count == 0 {
            prev = off;
            off = entry_at(data, off).2;
            count += 1;
        }
        if off == data.len() {
            // One huge entry after small ones: split before the last entry instead.
            return (prev, count - 1);
        }
        (off, count)
    }

    /// Splits a leaf (path set by `descend`); the new leaf takes the entries from the split
    /// point on, and each but the new entry (index `inserted`) is reported to `moved`. Returns
    /// the new leaf and the entries left behind.
    fn split_leaf(
        &mut self,
        leaf_id: u32,
        at: Option<u32>,
        inserted: u32,
        moved: Moved<'_>,
    ) -> (u32, u32) {
        let leaf = &mut self.leaves[leaf_id as usize];
        let (off, left_count) = Self::split_point(&leaf.data, at);
        // A fresh buffer whose capacity is a whole step, like every leaf buffer's (odd sizes
        // would leave odd-sized holes in the allocator when they next grow).
        let mut right_data =
            Vec::with_capacity((leaf.data.len() - off).next_multiple_of(LEAF_CAP_STEP));
        right_data.extend_from_slice(&leaf.data[off..]);
        leaf.data.truncate(off);
        trim_step(&mut leaf.data, 0);
        let right_count = leaf.count - left_count;
        leaf.count = left_count;
        let old_next = leaf.next;
        let sep = Self::separator(&leaf.data, &right_data);
        let right = self.alloc_leaf(Leaf {
            data: right_data,
            count: right_count,
            prev: leaf_id,
            next: old_next,
            last_insert: NIL,
        });
        let data = &self.leaves[right as usize].data;
        report_moves(data, left_count, inserted, leaf_id, right, moved);
        self.leaves[leaf_id as usize].next = right;
        if old_next == NIL {
            self.last = right;
        } else {
            self.leaves[old_next as usize].prev = right;
        }
        self.insert_child(
            self.path.len(),
            leaf_id,
            right,
            left_count,
            right_count,
            sep,
        );
        (right, left_count)
    }

    /// The separator between two adjacent leaves' data: the right one's first score alone when
    /// it is above the left one's last score (a key below every member of that score), else its
    /// whole first key.
    fn separator(left: &[u8], right: &[u8]) -> Sep {
        let (rs, rm, _) = entry_at(right, 0);
        let mut off = 0;
        let mut left_score = f64::NEG_INFINITY;
        while off < left.len() {
            let (s, _, next) = entry_at(left, off);
            (left_score, off) = (s, next);
        }
        if left_score < rs {
            Sep {
                score: rs,
                member: Box::default(),
            }
        } else {
            Sep {
                score: rs,
                member: rm.into(),
            }
        }
    }

    /// After node `left` (at depth `depth`, whose parent is path[depth-1]) split off `right`,
    /// links `right` into the parent (or grows a new root).
    fn insert_child(
        &mut self,
        depth: usize,
        left: u32,
        right: u32,
        left_count: u32,
        right_count: u32,
        sep: Sep,
    ) {
        if depth == 0 {
            let root = self.alloc_inner(Inner {
                children: vec![left, right],
                counts: vec![left_count, right_count],
                seps: vec![Sep::none(), sep],
            });
            self.root = root;
            self.height += 1;
            return;
        }
        let (parent, i) = self.path[depth - 1];
        let i = i as usize;
        let p = &mut self.inners[parent as usize];
        p.counts[i] = left_count;
        p.children.insert(i + 1, right);
        p.counts.insert(i + 1, right_count);
        p.seps.insert(i + 1, sep);
        if p.children.len() > INNER_CHILDREN_MAX {
            let mid = p.children.len() / 2;
            let children = p.children.split_off(mid);
            let counts = p.counts.split_off(mid);
            let mut seps = p.seps.split_off(mid);
            let promoted = std::mem::replace(&mut seps[0], Sep::none());
            let lc: u32 = p.counts.iter().sum();
            let rc: u32 = counts.iter().sum();
            let new = self.alloc_inner(Inner {
                children,
                counts,
                seps,
            });
            self.insert_child(depth - 1, parent, new, lc, rc, promoted);
        }
    }

    /// Removes (s, m), which must be present. Entries a merge moves go to `moved`.
    pub fn remove(&mut self, s: f64, m: &[u8], moved: Moved<'_>) {
        let leaf_id = self.descend(s, m);
        for &(n, i) in &self.path {
            self.inners[n as usize].counts[i as usize] -= 1;
        }
        let leaf = &mut self.leaves[leaf_id as usize];
        let mut off = 0;
        loop {
            assert!(off < leaf.data.len(), "zset tree: removing a missing key");
            let (es, em, next) = entry_at(&leaf.data, off);
            if cmp_key(es, em, s, m) == Ordering::Equal {
                leaf.data.drain(off..next);
                break;
            }
            off = next;
        }
        trim_step(&mut leaf.data, LEAF_CAP_STEP);
        leaf.count -= 1;
        self.len -= 1;
        self.rebalance_leaf(leaf_id, moved);
    }

    fn unlink_leaf(&mut self, id: u32) {
        let Leaf { prev, next, .. } = std::mem::take(&mut self.leaves[id as usize]);
        if prev == NIL {
            self.first = next;
        } else {
            self.leaves[prev as usize].next = next;
        }
        if next == NIL {
            self.last = prev;
        } else {
            self.leaves[next as usize].prev = prev;
        }
        self.free_leaves.push(id);
    }

    /// After a removal from `leaf_id` (path still set): frees an empty leaf, or merges an
    /// underfull one with its right (or left) sibling when both fit one leaf.
    fn rebalance_leaf(&mut self, leaf_id: u32, moved: Moved<'_>) {
        if self.height == 0 {
            return;
        }
        let depth = self.path.len();
        let (parent, i) = self.path[depth - 1];
        let i = i as usize;
        if self.leaves[leaf_id as usize].count == 0 {
            self.unlink_leaf(leaf_id);
            self.remove_child(depth, i);
            return;
        }
        let size = self.leaves[leaf_id as usize].data.len();
        if size >= LEAF_BYTES_MAX / 4 {
            return;
        }
        let p = &self.inners[parent as usize];
        let (left_i, right_i) = if i + 1 < p.children.len() {
            (i, i + 1)
        } else if i > 0 {
            (i - 1, i)
        } else {
            return;
        };
        let (l, r) = (p.children[left_i], p.children[right_i]);
        if self.leaves[l as usize].data.len() + self.leaves[r as usize].data.len()
            > LEAF_BYTES_MAX * 3 / 4
        {
            return;
        }
        let right_data = std::mem::take(&mut self.leaves[r as usize].data);
        let right_count = self.leaves[r as usize].count;
        report_moves(&right_data, 0, NIL, r, l, moved);
        let left = &mut self.leaves[l as usize];
        reserve_step(&mut left.data, right_data.len());
        left.data.extend_from_slice(&right_data);
        left.count += right_count;
        self.unlink_leaf(r);
        let p = &mut self.inners[parent as usize];
        p.counts[left_i] += right_count;
        self.remove_child(depth, right_i);
    }

    /// Removes child `i` of the inner node at path[depth-1], freeing ancestors left empty and
    /// collapsing a root with one child.
    fn remove_child(&mut self, depth: usize, i: usize) {
        let (node, _) = self.path[depth - 1];
        let n = &mut self.inners[node as usize];
        n.children.remove(i);
        n.counts.remove(i);
        n.seps.remove(i);
        if n.children.is_empty() {
            self.inners[node as usize] = Inner::default();
            self.free_inners.push(node);
            if depth == 1 {
                // The root emptied: only possible when the whole tree emptied.
                let id = self.alloc_leaf(Leaf {
                    data: Vec::new(),
                    count: 0,
                    prev: NIL,
                    next: NIL,
                    last_insert: NIL,
                });
                self.root = id;
                self.height = 0;
                self.first = id;
                self.last = id;
            } else {
                let (_, pi) = self.path[depth - 2];
                self.remove_child(depth - 1, pi as usize);
            }
            return;
        }
        while self.height > 0 && self.inners[self.root as usize].children.len() == 1 {
            let old = self.root;
            self.root = self.inners[old as usize].children[0];
            self.inners[old as usize] = Inner::default();
            self.free_inners.push(old);
            self.height -= 1;
        }
    }

    /// The score and offset of `m` when leaf `leaf` holds it (a member index lookup). Compares
    /// lengths before bytes, and decodes a score only for the match.
    pub fn find_in_leaf(&self, leaf: u32, m: &[u8]) -> Option<(f64, usize)> {
        let data = &self.leaves.get(leaf as usize)?.data;
        let mut off = 0;
        while off < data.len() {
            let (start, end) = member_span(data, off);
            let len = end - start;
            // The last byte first: members of one set often share a prefix (`user:…`,
            // counters), so it rules out most entries of equal length without a memcmp call.
            if len == m.len() && (len == 0 || data[end - 1] == m[len - 1]) && &data[start..end] == m
            {
                return Some((entry_at(data, off).0, off));
            }
            off = end;
        }
        None
    }

    /// The (score, member) entries of one leaf, in order.
    pub fn leaf_entries(&self, leaf: u32) -> impl Iterator<Item = (f64, &[u8])> + '_ {
        let data = &self.leaves[leaf as usize].data;
        let mut off = 0;
        std::iter::from_fn(move || {
            (off < data.len()).then(|| {
                let (s, m, next) = entry_at(data, off);
                off = next;
                (s, m)
            })
        })
    }

    /// The ids of the leaves in key order.
    pub fn leaf_ids(&self) -> impl Iterator<Item = u32> + '_ {
        let mut leaf = if self.is_empty() { NIL } else { self.first };
        std::iter::from_fn(move || {
            (leaf != NIL).then(|| {
                let id = leaf;
                leaf = self.leaves[id as usize].next;
                id
            })
        })
    }

    /// Entries strictly before the first entry for which `at_or_after` holds (a predicate that
    /// is false then true along the order).
    pub fn count_before(&self, at_or_after: impl Fn(f64, &[u8]) -> bool) -> usize {
        let mut node = self.root;
        let mut rank = 0usize;
        for _ in 0..self.height {
            let inner = &self.inners[node as usize];
            let seps = &inner.seps[1..];
            let i = seps.partition_point(|sep| !at_or_after(sep.score, &sep.member));
            rank += inner.counts[..i].iter().map(|&c| c as usize).sum::<usize>();
            node = inner.children[i];
        }
        let data = &self.leaves[node as usize].data;
        let mut off = 0;
        while off < data.len() {
            let (s, m, next) = entry_at(data, off);
            if at_or_after(s, m) {
                break;
            }
            rank += 1;
            off = next;
        }
        rank
    }

    /// 0-based rank of the present key (s, m).
    pub fn rank(&self, s: f64, m: &[u8]) -> usize {
        self.count_before(|es, em| cmp_key(es, em, s, m) != Ordering::Less)
    }

    /// 0-based rank of the present key (s, m) found at `pos`: the inner levels count as `rank`
    /// does, and in the leaf the entries before `pos` are skipped by their lengths alone.
    pub fn rank_at(&self, s: f64, m: &[u8], pos: Pos) -> usize {
        let mut node = self.root;
        let mut rank = 0usize;
        for _ in 0..self.height {
            let inner = &self.inners[node as usize];
            let i = inner.child_for(s, m);
            rank += inner.counts[..i].iter().map(|&c| c as usize).sum::<usize>();
            node = inner.children[i];
        }
        debug_assert_eq!(node, pos.leaf, "the key's leaf is where the index found it");
        let data = &self.leaves[node as usize].data;
        let mut off = 0;
        while off < pos.off {
            off = member_span(data, off).1;
            rank += 1;
        }
        rank
    }

    /// The position of the entry of rank `rank` (< len).
    pub fn select(&self, mut rank: usize) -> Pos {
        debug_assert!(rank < self.len);
        let mut node = self.root;
        for _ in 0..self.height {
            let inner = &self.inners[node as usize];
            let mut i = 0;
            while rank >= inner.counts[i] as usize {
                rank -= inner.counts[i] as usize;
                i += 1;
            }
            node = inner.children[i];
        }
        let data = &self.leaves[node as usize].data;
        let mut off = 0;
        for _ in 0..rank {
            off = entry_at(data, off).2;
        }
        Pos { leaf: node, off }
    }

    /// The entry at `pos`.
    pub fn get(&self, pos: Pos) -> (f64, &[u8]) {
        let (s, m, _) = entry_at(&self.leaves[pos.leaf as usize].data, pos.off);
        (s, m)
    }

    /// The position after `pos`, if any.
    pub fn next(&self, pos: Pos) -> Option<Pos> {
        let leaf = &self.leaves[pos.leaf as usize];
        let next = entry_at(&leaf.data, pos.off).2;
        if next < leaf.data.len() {
            return Some(Pos {
                leaf: pos.leaf,
                off: next,
            });
        }
        (leaf.next != NIL).then_some(Pos {
            leaf: leaf.next,
            off: 0,
        })
    }

    /// The offsets of every entry in `leaf` (for walking it backwards).
    pub fn offsets(&self, leaf: u32, out: &mut Vec<usize>) {
        out.clear();
        let data = &self.leaves[leaf as usize].data;
        let mut off = 0;
        while off < data.len() {
            out.push(off);
            off = entry_at(data, off).2;
        }
    }

    /// The leaf before `leaf`, if any.
    pub fn prev_leaf(&self, leaf: u32) -> Option<u32> {
        let p = self.leaves[leaf as usize].prev;
        (p != NIL).then_some(p)
    }

    /// The first entry, if any.
    pub fn first(&self) -> Option<(f64, &[u8])> {
        let data = &self.leaves[self.first as usize].data;
        (!data.is_empty()).then(|| {
            let (s, m, _) = entry_at(data, 0);
            (s, m)
        })
    }

    /// The last entry, if any.
    pub fn last(&self) -> Option<(f64, &[u8])> {
        let data = &self.leaves[self.last as usize].data;
        if data.is_empty() {
            return None;
        }
        let mut off = 0;
        loop {
            let (s, m, next) = entry_at(data, off);
            if next == data.len() {
                return Some((s, m));
            }
            off = next;
        }
    }

    /// Checks the invariants in the module doc (tests).
    pub fn validate(&self) -> Result<(), String> {
        let mut total = 0usize;
        let mut leaf = self.first;
        let mut prev: Option<(f64, Vec<u8>)> = None;
        let mut last_leaf = NIL;
        while leaf != NIL {
            let l = &self.leaves[leaf as usize];
            if l.prev != last_leaf {
                return Err(format!("leaf {leaf}: prev link {} != {last_leaf}", l.prev));
            }
            let mut off = 0;
            let mut count = 0;
            while off < l.data.len() {
                let (s, m, next) = entry_at(&l.data, off);
                if let Some((ps, pm)) = &prev
                    && cmp_key(*ps, pm, s, m) != Ordering::Less
                {
                    return Err("entries out of order".into());
                }
                prev = Some((s, m.to_vec()));
                off = next;
                count += 1;
            }
            if count != l.count {
                return Err(format!("leaf {leaf}: count {} != {count}", l.count));
            }
            if count == 0 && self.height > 0 {
                return Err(format!("leaf {leaf} empty below an inner node"));
            }
            total += count as usize;
            last_leaf = leaf;
            leaf = l.next;
        }
        if last_leaf != self.last {
            return Err("last leaf link".into());
        }
        if total != self.len {
            return Err(format!("len {} != entries {total}", self.len));
        }
        if self.height > 0 {
            self.validate_inner(self.root, self.height, None, None)?;
        }
        Ok(())
    }

    /// Checks counts and separator bounds below `node`; returns its entry count.
    fn validate_inner(
        &self,
        node: u32,
        height: u32,
        lo: Option<(f64, &[u8])>,
        hi: Option<(f64, &[u8])>,
    ) -> Result<usize, String> {
        if height == 0 {
            let data = &self.leaves[node as usize].data;
            let mut off = 0;
            while off < data.len() {
                let (s, m, next) = entry_at(data, off);
                if lo.is_some_and(|(ls, lm)| cmp_key(s, m, ls, lm) == Ordering::Less)
                    || hi.is_some_and(|(hs, hm)| cmp_key(s, m, hs, hm) != Ordering::Less)
                {
                    return Err(format!("leaf {node}: entry outside its separators"));
                }
                off = next;
            }
            return Ok(self.leaves[node as usize].count as usize);
        }
        let inner = &self.inners[node as usize];
        if inner.children.is_empty() {
            return Err(format!("inner {node} empty"));
        }
        let mut total = 0;
        for i in 0..inner.children.len() {
            let clo = if i == 0 {
                lo
            } else {
                Some((inner.seps[i].score, &*inner.seps[i].member))
            };
            let chi = inner.seps.get(i + 1).map(|s| (s.score, &*s.member)).or(hi);
            let c = self.validate_inner(inner.children[i], height - 1, clo, chi)?;
            if c != inner.counts[i] as usize {
                return Err(format!(
                    "inner {node} child {i}: count {} != {c}",
                    inner.counts[i]
                ));
            }
            total += c;
        }
        Ok(total)
    }
}
