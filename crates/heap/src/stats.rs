//! What the heap reports about itself: the figures behind INFO memory.
//!
//! `allocated_bytes` is Redis's `used_memory` (live bytes at their usable size, as zmalloc counts
//! them); `resident_bytes` estimates the process's share of VmRSS that the heap causes:
//!
//! ```text
//!  resident = block-land megablocks × descriptor pages (4 KiB dense, 8 KiB padded)
//!           + (slab + group + quick-cached + dirty free) blocks × 8 KiB
//!           + touched pages of live, cached and pending large regions
//! ```
//! `dirty_bytes` (freed block land not yet purged: dirty free blocks and the quick cache),
//! `empty_slab_bytes` (kept empty slabs) and `large_cache_bytes` are the parts of it that
//! `Heap::decay` gives back over time and `Heap::purge` at once; `decayed_bytes` counts what decay
//! has released so far.
//! Blocks handed out are counted as resident whether or not the caller touched every page, and a
//! slab's not-yet-bumped slots too, so the estimate errs high by at most one partly used slab per
//! class; purged runs and arena-free megablocks are not counted (`MADV_DONTNEED` took them).
//! `fragmentation_ratio = resident / allocated`, Redis's `mem_fragmentation_ratio` for the heap.
//! A caller that allocates blocks it never writes (the descriptor benchmark allocates 4 GiB and
//! touches none of it) sees the estimate overshoot, as jemalloc's `stats.resident` does for the
//! same reason; `measure_resident_bytes` asks the kernel instead.

use crate::class::{CLASS_COUNT, SIZES};
use crate::{BLOCK_BYTES, Heap, MEGABLOCK_BYTES};

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub requested_bytes: u64,
    pub group_blocks: u64,
    pub blockland_megablocks: u64,
    /// Blocks handed out by `take_blocks` or the quick cache since the heap was made (what
    /// tells `decay` whether the block pool's reserve is being used).
    pub blocks_taken: u64,
}

/// The heap's accounting, from [`Heap::stats`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeapStats {
    /// Live bytes as the callers requested them.
    pub requested_bytes: u64,
    /// Live bytes at their usable size: slab slots, groups, page-rounded large regions.
    pub allocated_bytes: u64,
    pub small_bytes: u64,
    pub medium_bytes: u64,
    pub large_bytes: u64,
    /// `(slot size, live bytes)` for every size class with live slots.
    pub class_bytes: Vec<(usize, u64)>,
    /// Address space committed from the OS.
    pub reserved_bytes: u64,
    /// Estimate of resident memory (see the module block).
    pub resident_bytes: u64,
    /// Bytes of freed large regions held for reuse (cached and pending release).
    pub large_cache_bytes: u64,
    /// Freed blocks not yet purged: dirty blocks of free runs and groups in the quick cache.
    pub dirty_bytes: u64,
    /// Blocks of empty slabs kept for reuse (at most one per size class).
    pub empty_slab_bytes: u64,
    /// Resident bytes released by [`Heap::decay`] since the heap was made.
    pub decayed_bytes: u64,
    /// Megablocks committed / used as block land / free in the arena.
    pub megablocks: u64,
    pub blockland_megablocks: u64,
    pub free_megablocks: u64,
    /// `resident_bytes / allocated_bytes` (0 when nothing is allocated).
    pub fragmentation_ratio: f64,
}

/// How full the block holding a pointer is, from [`Heap::block_usage`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockUsage {
    pub used_bytes: usize,
    pub capacity_bytes: usize,
    pub live_objects: usize,
}

/// Blocks by kind, from a walk of every descriptor ([`Heap::census`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockCensus {
    pub megablocks: u64,
    pub slab_blocks: u64,
    pub group_blocks: u64,
    pub cached_blocks: u64,
    pub free_blocks: u64,
    pub live_slots: u64,
    /// Slabs with no live slot.
    pub empty_slabs: u64,
    pub descriptors_read: u64,
}

/// Slab occupancy of one size class, from [`Heap::fragmentation`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassOccupancy {
    pub slot_bytes: usize,
    /// Bytes of one slab of the class.
    pub slab_bytes: usize,
    pub slabs: u64,
    pub full_slabs: u64,
    pub empty_slabs: u64,
    pub live_slots: u64,
    /// Slots of all the class's slabs.
    pub capacity_slots: u64,
    /// Slabs by occupancy `used / capacity` in [0, ¼), [¼, ½), [½, ¾), [¾, 1].
    pub occupancy_quartiles: [u64; 4],
    /// Slabs for which [`Heap::defrag_hint`] answers true, and the live slots in them: what an
    /// active defragmenter would move, and the slabs that moving it would empty.
    pub hinted_slabs: u64,
    pub hinted_slots: u64,
}

/// Slab occupancy of the whole heap, from [`Heap::fragmentation`]: the census a defragmenter
/// needs to decide whether to run (free slot bytes against slab bytes) and what it would gain.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fragmentation {
    /// Every class with at least one slab, in size order.
    pub classes: Vec<ClassOccupancy>,
    /// Bytes held by slabs.
    pub slab_bytes: u64,
    /// Bytes of live slots.
    pub live_bytes: u64,
    /// `slab_bytes - live_bytes`: free slots and slab tail waste, resident but holding nothing.
    pub free_slot_bytes: u64,
    /// Live bytes in hinted slabs (what a defragmenter would copy) and the bytes of those slabs
    /// (what would go back to the free runs once they empty).
    pub hinted_bytes: u64,
    pub hinted_slab_bytes: u64,
}

impl<const D: usize> Heap<D> {
    /// Resident bytes of the heap measured page by page with `mincore(2)`: exact where
    /// `resident_bytes` is an estimate, but it costs one syscall per 64 MiB of committed memory and
    /// a pass over a byte per page, so INFO and benchmarks call it, hot paths never.
    pub fn measure_resident_bytes(&self) -> u64 {
        let len = self.arena.committed_megablocks() as usize * MEGABLOCK_BYTES;
        if len == 0 {
            return 0;
        }
        // SAFETY: the committed prefix of the reservation is mapped and 1 MiB-aligned.
        (unsafe { crate::os::resident_pages(self.arena.base(), len) } * 4096) as u64
    }

    /// The resident estimate of the module block, in O(1).
    pub(crate) fn resident_estimate(&self) -> u64 {
        let desc_page_bytes = (128 * D).next_multiple_of(4096) as u64;
        let blocks_resident = self.slabs.blocks
            + self.counters.group_blocks
            + self.quick.blocks
            + self.runs.dirty_blocks;
        self.counters.blockland_megablocks * desc_page_bytes
            + blocks_resident * BLOCK_BYTES as u64
            + self.large.touched_bytes
    }

    /// `stats().allocated_bytes` in O(1): what `maxmemory` counts of this heap, read after every
    /// command while a limit is set.
    #[inline]
    pub fn allocated_bytes(&self) -> u64 {
        self.slabs.live_bytes
            + self.counters.group_blocks * BLOCK_BYTES as u64
            + self.large.live_bytes
    }

    /// The heap's accounting.
    pub fn stats(&self) -> HeapStats {
        let mut class_bytes = Vec::new();
        let mut small_bytes = 0;
        for class in 0..CLASS_COUNT {
            let live = self.slabs.classes[class].live_slots;
            if live > 0 {
                let bytes = live * SIZES[class] as u64;
                class_bytes.push((SIZES[class] as usize, bytes));
                small_bytes += bytes;
            }
        }
        let medium_bytes = self.counters.group_blocks * BLOCK_BYTES as u64;
        let large_bytes = self.large.live_bytes;
        let allocated_bytes = small_bytes + medium_bytes + large_bytes;
        let resident_bytes = self.resident_estimate();
        let committed = self.arena.committed_megablocks() as u64;
        HeapStats {
            requested_bytes: self.counters.requested_bytes,
            allocated_bytes,
            small_bytes,
            medium_bytes,
            large_bytes,
            class_bytes,
            reserved_bytes: committed * MEGABLOCK_BYTES as u64,
            resident_bytes,
            large_cache_bytes: self.large.cached_bytes + self.large.pending_bytes,
            dirty_bytes: (self.runs.dirty_blocks + self.quick.blocks) * BLOCK_BYTES as u64,
            empty_slab_bytes: self.empty_slab_blocks() * BLOCK_BYTES as u64,
            decayed_bytes: self.decay.released_bytes,
            megablocks: committed,
            blockland_megablocks: self.counters.blockland_megablocks,
            free_megablocks: self.arena.free_megablocks() as u64,
            fragmentation_ratio: if allocated_bytes == 0 {
                0.0
            } else {
                resident_bytes as f64 / allocated_bytes as f64
            },
        }
    }
}
