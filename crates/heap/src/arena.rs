//! The arena: one reserved range of address space, handed out in 1 MiB megablocks.
//!
//! ```text
//!  base (1 MiB-aligned)                                     base + reserve_bytes
//!  ├── committed (RW) ────────────────────────┼── reserved (PROT_NONE) ───────────┤
//!  │ mb 0 │ mb 1 │ … │ mb committed-1 │
//!                                     ▲ high-water mark: grows, never shrinks
//! ```
//! A megablock is either block land (block 0 holds descriptors, blocks 1..128 serve slabs and
//! groups), part of a large region, or free. Free megablocks below the high-water mark sit in
//! `free_ranges` (start → length, coalesced), already purged so they read as zero; `alloc` takes
//! the first range that fits before it raises the mark; `take_at` takes the megablocks right after
//! a large region, so the region grows in place. Everything is indexed by number
//! (`megablock = offset >> 20`, `block = offset >> 13`), so a block index times 8 KiB is its
//! offset from `base` and a 4-byte block index is a complete link.
//!
//! Invariants: `committed_megablocks * MEGABLOCK_BYTES <= reserve_bytes`; the free ranges are
//! disjoint, non-adjacent, and lie below `committed_megablocks`;
//! `free_megablocks == Σ len(free_ranges)`.

use crate::desc::{BlockDesc, DescPtr, NIL};
use crate::{BLOCK_BYTES, BLOCKS_PER_MEGABLOCK, HeapError, MEGABLOCK_BYTES, os};
use std::collections::BTreeMap;
use std::ptr::NonNull;

#[derive(Debug)]
pub(crate) struct Arena {
    base: NonNull<u8>,
    reserve_bytes: usize,
    committed_megablocks: u32,
    /// Blocks below the high-water mark; a block index below this has mapped descriptors.
    committed_blocks: u32,
    free_ranges: BTreeMap<u32, u32>,
    free_megablocks: u32,
}

impl Arena {
    pub fn new(reserve_bytes: usize) -> Result<Arena, HeapError> {
        let reserve_bytes = reserve_bytes.next_multiple_of(MEGABLOCK_BYTES);
        if reserve_bytes == 0 || reserve_bytes / BLOCK_BYTES > u32::MAX as usize {
            return Err(HeapError::TooLarge);
        }
        let base = os::reserve(reserve_bytes, MEGABLOCK_BYTES)?;
        Ok(Arena {
            base,
            reserve_bytes,
            committed_megablocks: 0,
            committed_blocks: 0,
            free_ranges: BTreeMap::new(),
            free_megablocks: 0,
        })
    }

    #[inline(always)]
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    pub fn reserve_bytes(&self) -> usize {
        self.reserve_bytes
    }

    pub fn committed_megablocks(&self) -> u32 {
        self.committed_megablocks
    }

    pub fn free_megablocks(&self) -> u32 {
        self.free_megablocks
    }

    /// Takes `count` contiguous megablocks: the first free range that fits, else fresh ones above
    /// the high-water mark. Either way their memory reads as zero.
    pub fn alloc(&mut self, count: u32) -> Result<u32, HeapError> {
        let fit = self
            .free_ranges
            .iter()
            .find(|&(_, &len)| len >= count)
            .map(|(&start, &len)| (start, len));
        if let Some((start, len)) = fit {
            self.free_ranges.remove(&start);
            if len > count {
                self.free_ranges.insert(start + count, len - count);
            }
            self.free_megablocks -= count;
            return Ok(start);
        }
        let start = self.committed_megablocks;
        let end = start as usize + count as usize;
        if end * MEGABLOCK_BYTES > self.reserve_bytes {
            return Err(HeapError::OutOfMemory);
        }
        // SAFETY: [start, end) megablocks lie inside the reservation (checked just above) and above
        // the high-water mark, so nothing else uses them.
        unsafe { os::commit(self.megablock_ptr(start), count as usize * MEGABLOCK_BYTES)? };
        self.committed_megablocks = end as u32;
        self.committed_blocks = (end * BLOCKS_PER_MEGABLOCK) as u32;
        Ok(start)
    }

    /// Takes exactly megablocks `[at, at + count)` if they are free: inside one free range, or a
    /// free range reaching the high-water mark followed by fresh megablocks, or fresh megablocks
    /// starting at the mark. This is how a large region grows in place (the arena's `mremap`).
    /// Returns false, changing nothing, when any of them is in use or past the reservation.
    pub fn take_at(&mut self, at: u32, count: u32) -> bool {
        let free_len = self.free_ranges.get(&at).copied().unwrap_or(0);
        if free_len >= count {
            self.free_ranges.remove(&at);
            if free_len > count {
                self.free_ranges.insert(at + count, free_len - count);
            }
            self.free_megablocks -= count;
            return true;
        }
        // Fewer free megablocks than asked: the rest must come from above the mark.
        if at + free_len != self.committed_megablocks {
            return false;
        }
        let fresh = count - free_len;
        let end = self.committed_megablocks as usize + fresh as usize;
        if end * MEGABLOCK_BYTES > self.reserve_bytes {
            return false;
        }
        // SAFETY: the fresh megablocks lie inside the reservation (checked just above) and above
        // the high-water mark, so nothing else uses them.
        let committed = unsafe {
            os::commit(
                self.megablock_ptr(self.committed_megablocks),
                fresh as usize * MEGABLOCK_BYTES,
            )
        };
        if committed.is_err() {
            return false;
        }
        if free_len > 0 {
            self.free_ranges.remove(&at);
            self.free_megablocks -= free_len;
        }
        self.committed_megablocks = end as u32;
        self.committed_blocks = (end * BLOCKS_PER_MEGABLOCK) as u32;
        true
    }

    /// Returns megablocks `[start, start + count)`, purging them first.
    ///
    /// # Safety
    /// The range came from [`Arena::alloc`] and holds no live object.
    pub unsafe fn free(&mut self, start: u32, count: u32) {
        debug_assert!(start + count <= self.committed_megablocks);
        // SAFETY: the caller guarantees the range is ours, committed and dead.
        unsafe { os::purge(self.megablock_ptr(start), count as usize * MEGABLOCK_BYTES) };
        let mut start = start;
        let mut count = count;
        self.free_megablocks += count;
        if let Some((&prev, &len)) = self.free_ranges.range(..start).next_back()
            && prev + len == start
        {
            self.free_ranges.remove(&prev);
            start = prev;
            count += len;
        }
        if let Some(len) = self.free_ranges.remove(&(start + count)) {
            count += len;
        }
        self.free_ranges.insert(start, count);
    }

    #[inline(always)]
    pub fn megablock_ptr(&self, megablock: u32) -> NonNull<u8> {
        self.block_ptr(megablock * BLOCKS_PER_MEGABLOCK as u32)
    }

    #[inline(always)]
    pub fn block_ptr(&self, block: u32) -> NonNull<u8> {
        // SAFETY: block * 8 KiB < reserve_bytes for every block number the heap forms (block
        // numbers come from offsets inside the reservation), so the sum stays inside one mapping
        // and cannot be null.
        unsafe { self.base.add(block as usize * BLOCK_BYTES) }
    }

    /// Global block number of the block holding `ptr`.
    #[inline(always)]
    pub fn block_of(&self, ptr: NonNull<u8>) -> u32 {
        ((ptr.as_ptr() as usize - self.base.as_ptr() as usize) / BLOCK_BYTES) as u32
    }

    #[inline(always)]
    pub fn offset_of(&self, ptr: NonNull<u8>) -> usize {
        ptr.as_ptr() as usize - self.base.as_ptr() as usize
    }

    /// The descriptor of `block`, stored at the head of its megablock, with stride `DESC_BYTES`.
    #[inline(always)]
    pub fn desc<const DESC_BYTES: usize>(&self, block: u32) -> DescPtr {
        assert!(
            block < self.committed_blocks,
            "block {block} is not committed"
        );
        let megablock = block as usize & !(BLOCKS_PER_MEGABLOCK - 1);
        let index = block as usize & (BLOCKS_PER_MEGABLOCK - 1);
        let offset = megablock * BLOCK_BYTES + index * DESC_BYTES;
        // SAFETY: the block is below the high-water mark (asserted), so its megablock's
        // descriptor area is committed; `offset` is 32-aligned; the arena outlives every DescPtr
        // because both live inside the heap and DescPtrs are never stored.
        // The cast is aligned: base is 1 MiB-aligned and offset a multiple of 32.
        #[allow(clippy::cast_ptr_alignment)]
        unsafe {
            DescPtr::new(self.base.as_ptr().add(offset).cast::<BlockDesc>())
        }
    }
}

impl Arena {
    /// Pushes `block` at the front of the descriptor list starting at `*head` (free-run lists,
    /// partial-slab lists: each is doubly linked through the descriptors' `next`/`prev`).
    pub fn list_push<const DESC_BYTES: usize>(&self, head: &mut u32, block: u32) {
        let old = *head;
        self.desc::<DESC_BYTES>(block).update(|d| {
            d.next = old;
            d.prev = NIL;
        });
        if old != NIL {
            self.desc::<DESC_BYTES>(old).update(|d| d.prev = block);
        }
        *head = block;
    }

    /// Unlinks the block whose descriptor is `desc` from the list starting at `*head`.
    pub fn list_unlink<const DESC_BYTES: usize>(&self, head: &mut u32, desc: &BlockDesc) {
        if desc.prev == NIL {
            *head = desc.next;
        } else {
            self.desc::<DESC_BYTES>(desc.prev)
                .update(|d| d.next = desc.next);
        }
        if desc.next != NIL {
            self.desc::<DESC_BYTES>(desc.next)
                .update(|d| d.prev = desc.prev);
        }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: `(base, reserve_bytes)` is exactly our reservation and the heap that owns the
        // arena is being dropped, so no pointer into it is used after.
        unsafe { os::unreserve(self.base, self.reserve_bytes) };
    }
}
