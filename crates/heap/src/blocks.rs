//! Block groups: runs of contiguous blocks inside a megablock, for slabs and medium objects.
//!
//! ```text
//!  megablock:  [hdr][ GROUP TAIL TAIL ][ FREE ·stale· FREE_TAIL ][ SLAB ][ CACHED TAIL ] …
//!                    └ live group, 3 ┘  └── free run: boundary tags ┘       └ quick cache ┘
//! ```
//! A free run is described by its first descriptor (`FREE`, `blocks` = length, `aux` = dirty
//! blocks in it) and its last (`FREE_TAIL`, `blocks` = distance back). Freeing a group looks at
//! the descriptor just before it and just after it and merges with free neighbours in O(1), as
//! boundary tags do; runs never cross a megablock. Free runs wait in 127 exact-length lists (a run
//! is at most 127 blocks) with a 128-bit bitmap of non-empty lists, so taking `n` blocks is one
//! bit scan for the smallest fitting length (best fit) and one split.
//!
//! Medium groups (32 KiB–512 KiB and exact block multiples) that are freed first park in a small
//! LIFO quick cache per length (≤ 8 each, ≤ 4 MiB in all) without coalescing, so an alloc/free loop
//! of one size never splits and merges (the `json` and `mir` benchmarks). Pages of the keyspace
//! (8 KiB) take this path too.
//!
//! Dirty tracking: every block handed out gets `FLAG_DIRTY`; a free run's `aux` counts its dirty
//! blocks. When the dirty free blocks of the heap pass `dirty_bytes_max`, the largest dirty runs are
//! purged (`MADV_DONTNEED`) until half that remains, so resident memory falls after mass deletes
//! without paying page faults on every free/alloc cycle. A megablock that becomes one free run
//! of 127 blocks goes back to the arena when another such spare already exists.
//!
//! Invariants: `Runs::free_blocks == Σ length of listed runs`, `Runs::dirty_blocks == Σ aux ==
//! number of FLAG_DIRTY blocks inside free runs`, no two free runs are adjacent, and every block
//! of a megablock's blocks 1..128 is in exactly one live group, slab, cached group or free run
//! (checked by `Heap::validate`).

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

/// Free-run lists.
#[derive(Debug)]
pub(crate) struct Runs {
    heads: [u32; RUN_MAX as usize + 1],
    nonempty: [u64; 2],
    pub free_blocks: u64,
    pub dirty_blocks: u64,
}

impl Runs {
    pub fn new() -> Runs {
        Runs {
            heads: [NIL; RUN_MAX as usize + 1],
            nonempty: [0; 2],
            free_blocks: 0,
            dirty_blocks: 0,
        }
    }

    /// Smallest length `>= n` with a non-empty list.
    #[inline]
    fn fit(&self, n: u32) -> Option<u32> {
        let (word, bit) = ((n / 64) as usize, n % 64);
        let low = self.nonempty[word] & (u64::MAX << bit);
        if low != 0 {
            return Some(word as u32 * 64 + low.trailing_zeros());
        }
        if word == 0 && self.nonempty[1] != 0 {
            return Some(64 + self.nonempty[1].trailing_zeros());
        }
        None
    }

    pub fn head(&self, len: u32) -> u32 {
        self.heads[len as usize]
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
        let len = if let Some(len) = self.runs.fit(n) {
            len
        } else {
            self.add_megablock()?;
            RUN_MAX
        };
        let head = self.runs.heads[len as usize];
        let (len, dirty) = self.unlink_run(head);
        let mut was_dirty = 0;
        for i in 0..n {
            let d = self.arena.desc::<D>(head + i);
            let flags = d.get().flags;
            was_dirty += u32::from(flags & FLAG_DIRTY);
            let mut desc = BlockDesc {
                flags: flags | FLAG_DIRTY,
                kind: kind::TAIL,
                blocks: i,
                ..BlockDesc::default()
            };
            if i == 0 {
                desc.kind = head_kind;
                desc.blocks = n;
                desc.next = NIL;
                desc.prev = NIL;
            }
            d.set(desc);
        }
        if len > n {
            self.push_run(head + n, len - n, dirty - was_dirty);
        }
        Ok(head)
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
        if len == RUN_MAX && self.runs.heads[RUN_MAX as usize] != NIL {
            // A second wholly free megablock: give it back rather than keep two spares.
            let megablock = start / BLOCKS_PER_MEGABLOCK as u32;
            self.mega[megablock as usize] = MegaSlot::default();
            self.counters.blockland_megablocks -= 1;
            // SAFETY: every block of the megablock is free (one run of RUN_MAX) and its
            // descriptors are not referenced by any list (the run was never pushed).
            unsafe { self.arena.free(megablock, 1) };
            return;
        }
        self.push_run(start, len, dirty);
        let dirty_max = (self.config.dirty_bytes_max / BLOCK_BYTES) as u64;
        if self.runs.dirty_blocks > dirty_max {
            self.purge_runs(dirty_max / 2);
        }
    }

    /// Purges dirty free runs, longest first, until at most `target` dirty blocks remain.
    pub(crate) fn purge_runs(&mut self, target: u64) {
        for len in (1..=RUN_MAX).rev() {
            let mut head = self.runs.heads[len as usize];
            while head != NIL && self.runs.dirty_blocks > target {
                let d = self.arena.desc::<D>(head);
                let desc = d.get();
                if desc.aux > 0 {
                    // SAFETY: a free run holds no live object and is committed; blocks are
                    // page-aligned.
                    unsafe { os::purge(self.arena.block_ptr(head), len as usize * BLOCK_BYTES) };
                    // Purging zeroed nothing of the descriptors (they live in block 0), so the
                    // flags are cleared by hand.
                    for i in 0..len {
                        self.arena
                            .desc::<D>(head + i)
                            .update(|d| d.flags &= !FLAG_DIRTY);
                    }
                    self.runs.dirty_blocks -= desc.aux as u64;
                    d.update(|d| d.aux = 0);
                }
                head = desc.next;
            }
            if self.runs.dirty_blocks <= target {
                return;
            }
        }
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
        self.arena
            .list_push::<D>(&mut self.runs.heads[len as usize], head);
        self.runs.nonempty[len as usize / 64] |= 1 << (len % 64);
        self.runs.free_blocks += len as u64;
        self.runs.dirty_blocks += dirty as u64;
    }

    /// Takes the run headed at `head` out of its list; returns its length and dirty count.
    fn unlink_run(&mut self, head: u32) -> (u32, u32) {
        let desc = self.arena.desc::<D>(head).get();
        debug_assert_eq!(desc.kind, kind::FREE);
        let len = desc.blocks;
        self.arena
            .list_unlink::<D>(&mut self.runs.heads[len as usize], &desc);
        if self.runs.heads[len as usize] == NIL {
            self.runs.nonempty[len as usize / 64] &= !(1 << (len % 64));
        }
        self.runs.free_blocks -= len as u64;
        self.runs.dirty_blocks -= desc.aux as u64;
        (len, desc.aux)
    }

    /// Takes `count` megablocks from the arena and grows the side table to cover them.
    pub(crate) fn take_megablocks(&mut self, count: u32) -> Result<u32, HeapError> {
        let start = self.arena.alloc(count)?;
        let committed = self.arena.committed_megablocks() as usize;
        if self.mega.len() < committed {
            self.mega.resize(committed, MegaSlot::default());
        }
        Ok(start)
    }
}
