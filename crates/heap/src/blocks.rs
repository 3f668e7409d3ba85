//! Block groups: runs of contiguous blocks inside a megablock, for slabs and medium objects.
//!
//! ```text
//!  megablock:  [hdr][ GROUP TAIL TAIL ][ FREE ·stale· FREE_TAIL ][ SLAB ][ CACHED TAIL ] …
//!                    └ live group, 3 ┘  └── free run: boundary tags ┘       └ quick cache ┘
//! ```
//! A free run is described by its first descriptor (`FREE`, `blocks` = length, `aux` = dirty
//! blocks in it) and its last (`FREE_TAIL`, `blocks` = distance back). Freeing a group looks at
//! the descriptor just before it and just after it and merges with free neighbours in O(1), as
//! boundary tags do; runs never cross a megablock.
//!
//! Free runs wait in two sets of 127 exact-length lists (a run is at most 127 blocks), one for
//! dirty runs (`aux > 0`: some block may be resident) and one for clean runs (all purged), each
//! with a 128-bit bitmap of non-empty lists. Taking `n` blocks is one bit scan per set for the
//! smallest fitting length (best fit; a dirty run wins a tie, its pages are already faulted in)
//! and one split. Keeping the dirty runs apart is what makes purging cheap: the longest dirty run
//! is the highest bit of one bitmap, so a purge never walks the clean runs (a fragmented heap can
//! hold tens of thousands of them).
//!
//! Medium groups (32 KiB–512 KiB and exact block multiples) that are freed first park in a small
//! LIFO quick cache per length (≤ 8 each, ≤ 4 MiB in all) without coalescing, so an alloc/free loop
//! of one size never splits and merges (the `json` and `mir` benchmarks). Pages of the keyspace
//! (8 KiB) take this path too. A live group grows in place into a free run right after it, and
//! shrinks in place by giving its tail back (`resize_group`, for `Heap::realloc`).
//!
//! Giving memory back: every block handed out gets `FLAG_DIRTY`; a free run's `aux` counts its
//! dirty blocks. Two mechanisms purge dirty runs (longest first: best fit reuses the shortest runs
//! first, so the longest are the least likely to be reused, and one `madvise` frees the most):
//! * a hard bound, inline: when the dirty free blocks pass `dirty_bytes_max`, they are purged
//!   until half that remains, so a mass delete never holds more than that;
//! * the time schedule (`decay.rs`): below the bound, what is not reused within
//!   `dirty_decay_ms` is purged by `Heap::decay`.
//!
//! A purged run of 127 blocks (a wholly free megablock) goes back to the arena instead, which also
//! drops its descriptor page; wholly free megablocks are otherwise kept like any dirty run, so a
//! heap that empties and refills a megablock within the decay time faults nothing in.
//!
//! Invariants: `Runs::free_blocks == Σ length of listed runs`, `Runs::dirty_blocks == Σ aux ==
//! number of FLAG_DIRTY blocks inside free runs`, a run is on a dirty list iff its `aux > 0`, no
//! two free runs are adjacent, and every block of a megablock's blocks 1..128 is in exactly one
//! live group, slab, cached group or free run (checked by `Heap::validate`).

use crate::desc::{BlockDesc, FLAG_DIRTY, NIL, kind};
use crate::large::MegaSlot;
use crate::{BLOCK_BYTES, BLOCKS_PER_MEGABLOCK, Heap, HeapError, os};
use std::ptr::NonNull;

/// Longest free run: every block of a megablock but its descriptor block.
pub(crate) const RUN_MAX: u32 = BLOCKS_PER_MEGABLOCK as u32 - 1;
/// Longest medium group: just under `LARGE_MIN_BYTES`.
const GROUP_MAX: u32 = 64;
const QUICK_PER_LENGTH_MAX: u8 = 8;
const QUICK_BLOCKS_MAX: u64 = 512;
/// Index of the dirty and the clean set of run lists.
pub(crate) const DIRTY: usize = 0;
pub(crate) const CLEAN: usize = 1;

/// Free-run lists: `heads[DIRTY]` for runs with a dirty block, `heads[CLEAN]` for purged ones.
#[derive(Debug)]
pub(crate) struct Runs {
    heads: [[u32; RUN_MAX as usize + 1]; 2],
    nonempty: [[u64; 2]; 2],
    pub free_blocks: u64,
    pub dirty_blocks: u64,
}

impl Runs {
    pub fn new() -> Runs {
        Runs {
            heads: [[NIL; RUN_MAX as usize + 1]; 2],
            nonempty: [[0; 2]; 2],
            free_blocks: 0,
            dirty_blocks: 0,
        }
    }

    /// Smallest length `>= n` with a non-empty list in `set`.
    #[inline]
    fn fit(&self, set: usize, n: u32) -> Option<u32> {
        let nonempty = &self.nonempty[set];
        let (word, bit) = ((n / 64) as usize, n % 64);
        let low = nonempty[word] & (u64::MAX << bit);
        if low != 0 {
            return Some(word as u32 * 64 + low.trailing_zeros());
        }
        if word == 0 && nonempty[1] != 0 {
            return Some(64 + nonempty[1].trailing_zeros());
        }
        None
    }

    /// Longest length with a non-empty list in `set`.
    #[inline]
    fn longest(&self, set: usize) -> Option<u32> {
        let nonempty = &self.nonempty[set];
        if nonempty[1] != 0 {
            Some(64 + nonempty[1].ilog2())
        } else if nonempty[0] != 0 {
            Some(nonempty[0].ilog2())
        } else {
            None
        }
    }

    pub fn head(&self, set: usize, len: u32) -> u32 {
        self.heads[set][len as usize]
    }
}

/// Freed medium groups waiting for reuse, one LIFO stack per length.
#[derive(Debug)]
pub(crate) struct Quick {
    heads: [u32; GROUP_MAX as usize + 1],
    counts: [u8; GROUP_MAX as usize + 1],
    pub blocks: u64,
}

impl Quick {
    pub fn new() -> Quick {
        Quick {
            heads: [NIL; GROUP_MAX as usize + 1],
            counts: [0; GROUP_MAX as usize + 1],
            blocks: 0,
        }
    }
}

impl<const D: usize> Heap<D> {
    /// Allocates a medium group of `n` blocks.
    pub(crate) fn alloc_group(&mut self, n: u32) -> Result<NonNull<u8>, HeapError> {
        debug_assert!((1..=GROUP_MAX).contains(&n));
        let head = self.quick.heads[n as usize];
        let head = if head == NIL {
            self.take_blocks(n, kind::GROUP)?
        } else {
            let d = self.arena.desc::<D>(head);
            self.quick.heads[n as usize] = d.get().next;
            self.quick.counts[n as usize] -= 1;
            self.quick.blocks -= n as u64;
            d.update(|d| d.kind = kind::GROUP);
            self.counters.blocks_taken += u64::from(n);
            head
        };
        self.counters.group_blocks += n as u64;
        Ok(self.arena.block_ptr(head))
    }

    /// Frees a medium group of `n` blocks.
    ///
    /// # Safety
    /// `ptr` is a live group of `n` blocks from [`Heap::alloc_group`].
    pub(crate) unsafe fn free_group(&mut self, ptr: NonNull<u8>, n: u32) {
        let head = self.arena.block_of(ptr);
        let d = self.arena.desc::<D>(head);
        debug_assert!(
            d.kind() == kind::GROUP && d.blocks() == n,
            "bad free of a group"
        );
        self.counters.group_blocks -= n as u64;
        let len = n as usize;
        if self.quick.counts[len] < QUICK_PER_LENGTH_MAX
            && self.quick.blocks + n as u64 <= QUICK_BLOCKS_MAX
        {
            d.update(|d| {
                d.kind = kind::CACHED;
                d.next = self.quick.heads[len];
            });
            self.quick.heads[len] = head;
            self.quick.counts[len] += 1;
            self.quick.blocks += n as u64;
        } else {
            self.give_blocks(head, n);
        }
    }

    /// Resizes the live group at `ptr` from `old` to `new` blocks without moving it: shrinking
    /// gives the tail back to the free runs; growing takes the front of the free run right after
    /// the group. Returns false, changing nothing, when the run is missing or too short.
    pub(crate) fn resize_group(&mut self, ptr: NonNull<u8>, old: u32, new: u32) -> bool {
        let head = self.arena.block_of(ptr);
        let d = self.arena.desc::<D>(head);
        debug_assert!(d.kind() == kind::GROUP && d.blocks() == old);
        if new <= old {
            if new < old {
                d.update(|d| d.blocks = new);
                self.counters.group_blocks -= (old - new) as u64;
                self.give_blocks(head + new, old - new);
            }
            return true;
        }
        let index = head % BLOCKS_PER_MEGABLOCK as u32;
        if index + new > BLOCKS_PER_MEGABLOCK as u32 {
            return false;
        }
        let extra = new - old;
        let right = self.arena.desc::<D>(head + old).get();
        if right.kind != kind::FREE || right.blocks < extra {
            return false;
        }
        let (len, dirty) = self.unlink_run(head + old);
        let was_dirty = self.claim_tails(head, old, new);
        d.update(|d| d.blocks = new);
        if len > extra {
            self.push_run(head + new, len - extra, dirty - was_dirty);
        }
        self.counters.group_blocks += extra as u64;
        true
    }

    /// Coalesces every group in the quick cache back into free runs.
    pub(crate) fn flush_quick(&mut self) {
        for len in 1..=GROUP_MAX {
            let mut head = self.quick.heads[len as usize];
            while head != NIL {
                let next = self.arena.desc::<D>(head).get().next;
                self.give_blocks(head, len);
                head = next;
            }
            self.quick.heads[len as usize] = NIL;
            self.quick.counts[len as usize] = 0;
        }
        self.quick.blocks = 0;
    }

    /// Takes `n` contiguous blocks, marks them dirty, and writes their descriptors as one unit
    /// headed by a descriptor of `head_kind` (its other fields zeroed for the caller to fill).
    pub(crate) fn take_blocks(&mut self, n: u32, head_kind: u8) -> Result<u32, HeapError> {
        let found = match (self.runs.fit(DIRTY, n), self.runs.fit(CLEAN, n)) {
            (Some(dirty), Some(clean)) if clean < dirty => Some((CLEAN, clean)),
            (Some(dirty), _) => Some((DIRTY, dirty)),
            (None, clean) => clean.map(|clean| (CLEAN, clean)),
        };
        let (set, len) = if let Some(found) = found {
            found
        } else {
            self.add_megablock()?;
            (CLEAN, RUN_MAX)
        };
        let head = self.runs.heads[set][len as usize];
        let (len, dirty) = self.unlink_run(head);
        let d = self.arena.desc::<D>(head);
        let head_flags = d.get().flags;
        let was_dirty = u32::from(head_flags & FLAG_DIRTY) + self.claim_tails(head, 1, n);
        d.set(BlockDesc {
            flags: head_flags | FLAG_DIRTY,
            kind: head_kind,
            blocks: n,
            next: NIL,
            prev: NIL,
            ..BlockDesc::default()
        });
        if len > n {
            self.push_run(head + n, len - n, dirty - was_dirty);
        }
        self.counters.blocks_taken += u64::from(n);
        Ok(head)
    }

    /// Writes blocks `from..to` of the unit headed at `head` as its tails (each giving its
    /// distance back) and marks them dirty; returns how many of them were dirty already.
    fn claim_tails(&self, head: u32, from: u32, to: u32) -> u32 {
        let mut was_dirty = 0;
        for i in from..to {
            let d = self.arena.desc::<D>(head + i);
            let flags = d.get().flags;
            was_dirty += u32::from(flags & FLAG_DIRTY);
            d.set(BlockDesc {
                flags: flags | FLAG_DIRTY,
                kind: kind::TAIL,
                blocks: i,
                ..BlockDesc::default()
            });
        }
        was_dirty
    }

    /// Returns the `n` blocks at `head` to the free runs, merging with free neighbours.
    pub(crate) fn give_blocks(&mut self, head: u32, n: u32) {
        let index = head as usize % BLOCKS_PER_MEGABLOCK;
        let (mut start, mut len, mut dirty) = (head, n, n);
        if index > 1 {
            let left = self.arena.desc::<D>(head - 1).get();
            let left_head = match left.kind {
                kind::FREE => Some(head - 1),
                kind::FREE_TAIL => Some(head - 1 - left.blocks),
                _ => None,
            };
            if let Some(left_head) = left_head {
                let (l_len, l_dirty) = self.unlink_run(left_head);
                start = left_head;
                len += l_len;
                dirty += l_dirty;
            }
        }
        if index + (n as usize) < BLOCKS_PER_MEGABLOCK {
            let right = self.arena.desc::<D>(head + n);
            if right.kind() == kind::FREE {
                let (r_len, r_dirty) = self.unlink_run(head + n);
                len += r_len;
                dirty += r_dirty;
            }
        }
        self.push_run(start, len, dirty);
        let dirty_max = (self.config.dirty_bytes_max / BLOCK_BYTES) as u64;
        if self.runs.dirty_blocks > dirty_max {
            let mut budget = u32::MAX;
            self.purge_runs(dirty_max / 2, &mut budget);
        }
    }

    /// Purges dirty free runs, longest first, until at most `target` dirty blocks remain or
    /// `budget` runs were purged (each purge takes one from it).
    pub(crate) fn purge_runs(&mut self, target: u64, budget: &mut u32) {
        while self.runs.dirty_blocks > target && *budget > 0 {
            let Some(len) = self.runs.longest(DIRTY) else {
                return;
            };
            self.purge_run(self.runs.heads[DIRTY][len as usize]);
            *budget -= 1;
        }
    }

    /// Purges one dirty run: a whole free megablock goes back to the arena, any other run is
    /// `MADV_DONTNEED`ed in place and moves to the clean lists.
    fn purge_run(&mut self, head: u32) {
        let (len, _) = self.unlink_run(head);
        if len == RUN_MAX {
            let megablock = head / BLOCKS_PER_MEGABLOCK as u32;
            self.mega[megablock as usize] = MegaSlot::default();
            self.counters.blockland_megablocks -= 1;
            // SAFETY: every block of the megablock is free (one run of RUN_MAX, just unlinked, so
            // no list refers to its descriptors) and it holds no live object.
            unsafe { self.arena.free(megablock, 1) };
            return;
        }
        // SAFETY: a free run holds no live object and is committed; blocks are page-aligned.
        unsafe { os::purge(self.arena.block_ptr(head), len as usize * BLOCK_BYTES) };
        // Purging zeroed nothing of the descriptors (they live in block 0), so the flags are
        // cleared by hand.
        for i in 0..len {
            self.arena
                .desc::<D>(head + i)
                .update(|d| d.flags &= !FLAG_DIRTY);
        }
        self.push_run(head, len, 0);
    }

    /// Commits a fresh megablock as block land: one free run of blocks 1..128.
    fn add_megablock(&mut self) -> Result<(), HeapError> {
        let megablock = self.take_megablocks(1)?;
        self.mega[megablock as usize] = MegaSlot::BLOCKLAND;
        self.counters.blockland_megablocks += 1;
        let first = megablock * BLOCKS_PER_MEGABLOCK as u32;
        self.arena.desc::<D>(first).set(BlockDesc {
            kind: kind::HEADER,
            blocks: 1,
            ..BlockDesc::default()
        });
        // The arena hands out zeroed memory, so the other descriptors start UNSET and clean.
        self.push_run(first + 1, RUN_MAX, 0);
        Ok(())
    }

    fn push_run(&mut self, head: u32, len: u32, dirty: u32) {
        debug_assert!((1..=RUN_MAX).contains(&len) && dirty <= len);
        self.arena.desc::<D>(head).update(|d| {
            d.kind = kind::FREE;
            d.blocks = len;
            d.aux = dirty;
        });
        if len > 1 {
            self.arena.desc::<D>(head + len - 1).update(|d| {
                d.kind = kind::FREE_TAIL;
                d.blocks = len - 1;
            });
        }
        let set = if dirty > 0 { DIRTY } else { CLEAN };
        self.arena
            .list_push::<D>(&mut self.runs.heads[set][len as usize], head);
        self.runs.nonempty[set][len as usize / 64] |= 1 << (len % 64);
        self.runs.free_blocks += len as u64;
        self.runs.dirty_blocks += dirty as u64;
    }

    /// Takes the run headed at `head` out of its list; returns its length and dirty count.
    fn unlink_run(&mut self, head: u32) -> (u32, u32) {
        let desc = self.arena.desc::<D>(head).get();
        debug_assert_eq!(desc.kind, kind::FREE);
        let len = desc.blocks;
        let set = if desc.aux > 0 { DIRTY } else { CLEAN };
        self.arena
            .list_unlink::<D>(&mut self.runs.heads[set][len as usize], &desc);
        if self.runs.heads[set][len as usize] == NIL {
            self.runs.nonempty[set][len as usize / 64] &= !(1 << (len % 64));
        }
        self.runs.free_blocks -= len as u64;
        self.runs.dirty_blocks -= desc.aux as u64;
        (len, desc.aux)
    }

    /// Takes `count` megablocks from the arena and grows the side table to cover them.
    pub(crate) fn take_megablocks(&mut self, count: u32) -> Result<u32, HeapError> {
        let start = self.arena.alloc(count)?;
        self.cover_committed();
        Ok(start)
    }

    /// Takes the `count` megablocks starting at `at` from the arena, if they are free (or above
    /// the high-water mark and inside the reservation); false, changing nothing, otherwise.
    pub(crate) fn extend_megablocks(&mut self, at: u32, count: u32) -> bool {
        let taken = self.arena.take_at(at, count);
        self.cover_committed();
        taken
    }

    fn cover_committed(&mut self) {
        let committed = self.arena.committed_megablocks() as usize;
        if self.mega.len() < committed {
            self.mega.resize(committed, MegaSlot::default());
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{BLOCK_BYTES, Heap, HeapConfig};

    #[test]
    fn groups_grow_and_shrink_in_place() {
        let mut heap = Heap::<32>::with_config(HeapConfig {
            reserve_bytes: 1 << 30,
            ..HeapConfig::default()
        })
        .unwrap();
        let a = heap.alloc(40 << 10).unwrap();
        // SAFETY: 40 KiB allocated.
        unsafe { a.as_ptr().write_bytes(4, 40 << 10) };
        let mut size = 40 << 10;
        for new in [100 << 10, 300 << 10, 64 << 10, 16 << 10, 400 << 10] {
            // SAFETY: `a` is live with `size` bytes.
            let b = unsafe { heap.realloc(a, size, new).unwrap() };
            assert_eq!(a, b, "{size} -> {new} in place");
            // SAFETY: the smaller of the two sizes is kept and allocated.
            let kept = unsafe { std::slice::from_raw_parts(b.as_ptr(), size.min(new)) };
            assert!(kept.iter().all(|&x| x == 4));
            // SAFETY: `new` bytes are allocated.
            unsafe { b.as_ptr().write_bytes(4, new) };
            size = new;
            heap.validate();
            assert_eq!(
                heap.stats().medium_bytes,
                (new.div_ceil(BLOCK_BYTES) * BLOCK_BYTES) as u64
            );
        }
        // A neighbour right after it: growing moves.
        let next = heap.alloc(BLOCK_BYTES).unwrap();
        assert_eq!(heap.offset_of(next), heap.offset_of(a) + size as u64);
        // SAFETY: `a` is live with `size` bytes.
        let c = unsafe { heap.realloc(a, size, size + BLOCK_BYTES).unwrap() };
        assert_ne!(a, c);
        heap.validate();
        // SAFETY: live, freed once with their sizes.
        unsafe {
            heap.free(c, size + BLOCK_BYTES);
            heap.free(next, BLOCK_BYTES);
        }
        assert_eq!(heap.stats().allocated_bytes, 0);
    }
}
