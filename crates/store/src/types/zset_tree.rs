//! The ordered half of a large sorted set: a B+tree over (score, member) whose inner nodes count
//! the entries below each child, so rank ↔ entry is O(log n) in both directions (ZRANK,
//! ZRANGE by index, ZREMRANGEBYRANK), as Redis's skiplist spans make it.
//!
//! ```text
//!  Tree ── leaves: Vec<Leaf>   (arena; a freed slot goes on free_leaves)
//!       ├─ inners: Vec<Inner>  (arena; free_inners)
//!       └─ root (a leaf id when height == 0, else an inner id)
//!
//!  Leaf  { data, count, prev, next }   leaves are chained in key order
//!  data: entry*   entry = [score: f64 LE, 8 B][member len varint][member bytes]
//!
//!  Inner { children, counts, seps }    children.len() == counts.len() == seps.len()
//!  counts[i] = entries below children[i];  seps[i] (i ≥ 1) = a key with
//!  max(child i-1) < seps[i] <= min(child i); seps[0] is never read.
//! ```
//! Invariants: `sum(counts) == entries below the node`, `len == entries in all leaves`, every
//! leaf and inner node is non-empty (except a root leaf), and the separators order the children
//! (checked by `validate`). Deleting keys keeps the separators valid (a lower bound stays a lower
//! bound), so only splits write separators. A leaf splits when its data exceeds `LEAF_BYTES_MAX`
//! and merges with a sibling when it falls under a quarter of it; an inner node splits above
//! `INNER_CHILDREN_MAX` children and is removed when empty. Inner nodes do not merge: the height
//! stays bounded by the largest size the set ever had (log₃₂), which is the alternative we took
//! over a full rebalancing B-tree to keep this file small.
//!
//! Bytes per entry: 8 (score) + 1 (length) + member, leaves 50–100 % full after splits, plus
//! ~1/20 of a separator per entry in the inner nodes; for 20-byte members ≈ 40 B. The member →
//! score map beside it (`zset.rs`) adds its own share. Redis's skiplist node for the same is
//! ≈ 48–64 B plus its sds member (32 B) — and the dict entry, which we compare in `zset.rs`.

use maps::varint;
use std::cmp::Ordering;

const NIL: u32 = u32::MAX;
/// A leaf splits when its data grows past this (256 B keeps a split's copy and a pop's memmove
/// short; larger leaves would save inner-node space at the cost of longer linear scans).
pub const LEAF_BYTES_MAX: usize = 512;
const INNER_CHILDREN_MAX: usize = 48;

/// Orders two (score, member) keys as Redis does: by score, then by member bytes.
#[inline]
pub fn cmp_key(sa: f64, ma: &[u8], sb: f64, mb: &[u8]) -> Ordering {
    match sa.partial_cmp(&sb) {
        Some(Ordering::Equal) | None => ma.cmp(mb),
        Some(o) => o,
    }
}

/// Decodes the entry at `off` of a leaf: (score, member, offset of the next entry).
#[inline]
pub fn entry_at(data: &[u8], off: usize) -> (f64, &[u8], usize) {
    let score = f64::from_le_bytes(data[off..off + 8].try_into().expect("8 bytes"));
    let (len, n) = varint::get(&data[off + 8..]);
    let start = off + 8 + n;
    let end = start + len as usize;
    (score, &data[start..end], end)
}

fn entry_put(out: &mut Vec<u8>, score: f64, member: &[u8]) {
    out.extend_from_slice(&score.to_le_bytes());
    varint::push(out, member.len() as u64);
    out.extend_from_slice(member);
}

#[derive(Debug, Default)]
struct Leaf {
    data: Vec<u8>,
    count: u32,
    prev: u32,
    next: u32,
}

#[derive(Debug)]
struct Sep {
    score: f64,
    member: Box<[u8]>,
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
}

impl Default for Tree {
    fn default() -> Tree {
        Tree {
            leaves: vec![Leaf {
                data: Vec::new(),
                count: 0,
                prev: NIL,
                next: NIL,
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

    /// Bytes held by the tree (capacities of its vectors and separators).
    pub fn memory_bytes(&self) -> usize {
        let leaves: usize = self.leaves.iter().map(|l| l.data.capacity()).sum();
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
    }

    fn alloc_leaf(&mut self, leaf: Leaf) -> u32 {
        if let Some(id) = self.free_leaves.pop() {
            self.leaves[id as usize] = leaf;
            id
        } else {
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

    /// Inserts (s, m); the member must not be present.
    pub fn insert(&mut self, s: f64, m: &[u8]) {
        let leaf_id = self.descend(s, m);
        for &(n, i) in &self.path {
            self.inners[n as usize].counts[i as usize] += 1;
        }
        let leaf = &mut self.leaves[leaf_id as usize];
        let mut off = 0;
        while off < leaf.data.len() {
            let (es, em, next) = entry_at(&leaf.data, off);
            if cmp_key(es, em, s, m) == Ordering::Greater {
                break;
            }
            off = next;
        }
        let mut entry = Vec::with_capacity(m.len() + 10);
        entry_put(&mut entry, s, m);
        leaf.data.splice(off..off, entry);
        leaf.count += 1;
        self.len += 1;
        if leaf.data.len() > LEAF_BYTES_MAX && leaf.count >= 2 {
            self.split_leaf(leaf_id);
        }
    }

    fn split_leaf(&mut self, leaf_id: u32) {
        let leaf = &mut self.leaves[leaf_id as usize];
        let half = leaf.data.len() / 2;
        let mut off = 0;
        let mut left_count = 0;
        while off < half || left_count == 0 {
            off = entry_at(&leaf.data, off).2;
            left_count += 1;
        }
        if off == leaf.data.len() {
            // One huge entry after small ones: split before the last entry instead.
            let mut o = 0;
            left_count = 0;
            let mut prev = 0;
            while o < leaf.data.len() {
                prev = o;
                o = entry_at(&leaf.data, o).2;
                left_count += 1;
            }
            off = prev;
            left_count -= 1;
        }
        let right_data = leaf.data.split_off(off);
        leaf.data.shrink_to(LEAF_BYTES_MAX + 64);
        let right_count = leaf.count - left_count;
        leaf.count = left_count;
        let old_next = leaf.next;
        let (sep_s, sep_m, _) = entry_at(&right_data, 0);
        let sep = Sep {
            score: sep_s,
            member: sep_m.into(),
        };
        let right = self.alloc_leaf(Leaf {
            data: right_data,
            count: right_count,
            prev: leaf_id,
            next: old_next,
        });
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
                seps: vec![
                    Sep {
                        score: 0.0,
                        member: Box::default(),
                    },
                    sep,
                ],
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
            let promoted = std::mem::replace(
                &mut seps[0],
                Sep {
                    score: 0.0,
                    member: Box::default(),
                },
            );
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

    /// Removes (s, m), which must be present.
    pub fn remove(&mut self, s: f64, m: &[u8]) {
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
        leaf.count -= 1;
        self.len -= 1;
        self.rebalance_leaf(leaf_id);
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
    fn rebalance_leaf(&mut self, leaf_id: u32) {
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
        let left = &mut self.leaves[l as usize];
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
