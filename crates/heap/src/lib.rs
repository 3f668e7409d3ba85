//! densekv's block heap: where the keyspace lives — every PageHash page and out-of-line blob,
//! small maps, int sets, the maps of sets and hashes, and list chunks.
//!
//! Not every byte of data: FlatMap buffers, int-table hashes, sorted-set trees and member
//! indexes, and the boxes of collection objects come from the global allocator, which the server
//! counts (its `alloc.rs`) and adds to this heap's figures in INFO's `used_memory`.
//!
//! ```text
//!  request size            served by                          file
//!  1 B ..= 32 KiB          slot in a size-class slab (88)     slab.rs, class.rs
//!  (not a multiple of 8 KiB)
//!  n · 8 KiB, or           group of n contiguous blocks       blocks.rs
//!  32 KiB .. 512 KiB       (free runs coalesce; quick cache)
//!  512 KiB ..= 16 MiB      large region of whole megablocks    large.rs
//!                          from the large-block cache (8 classes)
//!  > 16 MiB                large region of ⌈size / 1 MiB⌉
//!                          megablocks ("direct": never cached)
//! ```
//!
//! Memory comes from one reserved range of address space (`arena.rs`) in 1 MiB megablocks, each cut
//! into 128 blocks of 8 KiB; block 0 of a megablock holds the 32-byte descriptors of all 128
//! (`desc.rs`), found from any interior pointer by masking and shifting (after GHC's block
//! allocator and its 32-byte `bdescr`). Large regions start on a megablock boundary, where no slab
//! slot or group can start (block 0 is always the descriptor area), so `free` tells them apart
//! by alignment and keeps their few facts in a per-megablock side table.
//!
//! # Giving memory back
//! Freed memory that stays resident waits in three pools: dirty free runs and the quick cache
//! (`blocks.rs`), one kept empty slab per size class (`slab.rs`), and the large cache
//! (`large.rs`). Two mechanisms drain them:
//! ```text
//!  hard bound, inline in free     dirty runs > dirty_bytes_max (8 MiB) → purge longest to half;
//!                                 large cache > large_cache_bytes_max (64 MiB) → coldest pending,
//!                                 released in batches of release_batch_bytes (8 MiB)
//!  time schedule, Heap::decay     what is not reused within dirty_decay_ms (1 s) → purged, down to
//!  (owner calls every ~100 ms)    dirty_reserve_bytes (256 KiB) of blocks while blocks are
//!                                 taken, to none after a decay time without; empty slabs kept
//!                                 1 s → back to the runs; bounded work per call (decay.rs)
//!  Heap::purge (MEMORY PURGE)     all of it, now
//! ```
//! A purged run is `MADV_DONTNEED`ed in place; a purged wholly free megablock goes back to the
//! arena (which also drops its descriptor page). A direct region goes back to the arena (purged)
//! as soon as it is freed. Without the owner's `decay` calls only the hard bounds act, and up to
//! `dirty_bytes_max` of freed blocks stay resident for good: that was the 4–8 MiB per shard that
//! stayed after a server deleted every key.
//!
//! `realloc` keeps an allocation in place when it can (same slab class; a group shrinking or
//! growing into the free run after it; a large region shrinking, or growing into free megablocks
//! after it), and moves a large region of 16 MiB or more by remapping its pages (`mremap`), so a
//! value grown by appends costs its size once, not twice, and never a copy of itself.
//!
//! # Defragmentation
//! The heap never moves an object itself: its owners hold the pointers. It tells an active
//! defragmenter what to move: [`Heap::defrag_hint`] answers per pointer (a slab that is not the
//! class's current one and is emptier than its peers, jemalloc's rule) and [`Heap::fragmentation`]
//! counts slab occupancy per class (`check.rs`). Moving the hinted objects (alloc, copy, free) lets
//! their slabs empty and go back.
//!
//! # Threading contract
//! One heap per owning thread. The server runs one shard per thread and each shard owns one heap;
//! every method takes `&mut self` (or `&self`), so the fast paths take no lock and touch no atomic.
//! `Heap` is `Send` (a shard may be built on one thread and moved to its own) but not `Sync`, and
//! it is not a general-purpose multi-threaded `malloc`: a pointer must be freed to the heap that
//! allocated it, by that heap's owner.
//!
//! # Accounting
//! `stats()` reports live requested bytes, live usable bytes per size class, committed address
//! space, an estimate of resident bytes (descriptor pages + blocks in use + dirty free blocks +
//! touched pages of large regions), the pools decay drains, and the fragmentation ratio. The
//! estimate tracks the process's VmRSS within 10% on the benchmarks and after decay and purge
//! (`tests/decay_rss.rs`, `docs/heap.md`).

#![deny(unsafe_op_in_unsafe_fn)]

mod arena;
mod blocks;
mod check;
mod class;
mod decay;
pub mod desc;
mod large;
mod os;
mod slab;
mod stats;

pub use class::{CLASS_COUNT, SIZES as CLASS_SIZES, SMALL_MAX_BYTES};
pub use large::{LARGE_CLASS_BYTES, LARGE_DIRECT_MIN_BYTES};
pub use stats::{BlockCensus, BlockUsage, ClassOccupancy, Fragmentation, HeapStats};

use arena::Arena;
use std::ptr::NonNull;

/// Bytes in a megablock; megablocks are aligned to their size.
pub const MEGABLOCK_BYTES: usize = 1 << 20;
/// Bytes in a block.
pub const BLOCK_BYTES: usize = 8 << 10;
/// Blocks in a megablock, block 0 (the descriptor area) included.
pub const BLOCKS_PER_MEGABLOCK: usize = MEGABLOCK_BYTES / BLOCK_BYTES;
/// Requests from this size on are served by the large-block cache.
pub const LARGE_MIN_BYTES: usize = 512 << 10;

/// Tunables; `HeapConfig::default()` suits a server shard.
#[derive(Clone, Debug)]
pub struct HeapConfig {
    /// Address space reserved up front (costs no memory). Bounds the heap's size.
    pub reserve_bytes: usize,
    /// Cached large regions kept for reuse before the coldest are released.
    pub large_cache_bytes_max: usize,
    /// Large regions are released to the OS once this many bytes are pending.
    pub release_batch_bytes: usize,
    /// Freed block bytes kept resident for reuse before the heap purges them at once (the hard
    /// bound; below it, decay purges on a time schedule).
    pub dirty_bytes_max: usize,
    /// Freed memory not reused within about this long goes back to the OS when the owner calls
    /// [`Heap::decay`] (jemalloc's `dirty_decay_ms`); 0 purges at every call.
    pub dirty_decay_ms: u64,
    /// Freed block bytes that decay leaves resident, for churn (a free and an alloc a second
    /// apart should not cost page faults), while blocks are being taken: a heap that took none
    /// for `dirty_decay_ms` keeps none.
    pub dirty_reserve_bytes: usize,
}

impl Default for HeapConfig {
    fn default() -> HeapConfig {
        HeapConfig {
            reserve_bytes: 64 << 30,
            large_cache_bytes_max: 64 << 20,
            release_batch_bytes: 8 << 20,
            dirty_bytes_max: 8 << 20,
            dirty_decay_ms: 1000,
            dirty_reserve_bytes: 256 << 10,
        }
    }
}

/// Why an allocation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapError {
    /// The reservation is exhausted or the OS refused memory.
    OutOfMemory,
    /// The request (or the configured reservation) cannot be represented.
    TooLarge,
}

impl std::fmt::Display for HeapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeapError::OutOfMemory => f.write_str("out of memory"),
            HeapError::TooLarge => f.write_str("allocation too large"),
        }
    }
}

impl std::error::Error for HeapError {}

/// Which allocator part serves a request of a given size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Small(usize),
    Medium(u32),
    Large,
}

#[inline(always)]
fn route(size: usize) -> Route {
    let size = size.max(1);
    if size <= SMALL_MAX_BYTES && !size.is_multiple_of(BLOCK_BYTES) {
        Route::Small(class::class_of(size))
    } else if size < LARGE_MIN_BYTES {
        Route::Medium(size.div_ceil(BLOCK_BYTES) as u32)
    } else {
        Route::Large
    }
}

/// A block heap. `DESC_BYTES` is the descriptor stride: 32 (the dense layout) or 64 (padded to a
/// cache line, kept to measure the dense layout against).
#[derive(Debug)]
pub struct Heap<const DESC_BYTES: usize = 32> {
    arena: Arena,
    runs: blocks::Runs,
    quick: blocks::Quick,
    slabs: slab::Slabs,
    large: large::LargeCache,
    /// Per-megablock facts for megablocks that are not block land (large regions), indexed by
    /// megablock number; `blockland` counts the block-land megablocks.
    mega: Vec<large::MegaSlot>,
    decay: decay::Decay,
    counters: stats::Counters,
    config: HeapConfig,
}

// SAFETY: a heap owns its whole reservation and every pointer inside it; nothing in it refers to
// thread-local state, so moving it to another thread (with all its memory) is sound. It is not
// `Sync`: every method needs exclusive or single-threaded access.
unsafe impl<const D: usize> Send for Heap<D> {}

/// A heap with 32-byte descriptors (the default layout).
pub type DenseHeap = Heap<32>;
/// A heap with descriptors padded to 64 bytes, for measurement.
pub type PaddedHeap = Heap<64>;

impl<const DESC_BYTES: usize> Heap<DESC_BYTES> {
    const LAYOUT_OK: () = assert!(DESC_BYTES == 32 || DESC_BYTES == 64);

    pub fn new() -> Result<Self, HeapError> {
        Self::with_config(HeapConfig::default())
    }

    pub fn with_config(config: HeapConfig) -> Result<Self, HeapError> {
        let () = Self::LAYOUT_OK;
        Ok(Heap {
            arena: Arena::new(config.reserve_bytes)?,
            runs: blocks::Runs::new(),
            quick: blocks::Quick::new(),
            slabs: slab::Slabs::new(),
            large: large::LargeCache::new(),
            mega: Vec::new(),
            decay: decay::Decay::new(config.dirty_decay_ms),
            counters: stats::Counters::default(),
            config,
        })
    }

    /// Allocates at least `size` bytes (0 is taken as 1), 8-byte aligned. A request of a multiple
    /// of `BLOCK_BYTES` below `LARGE_MIN_BYTES` is block-aligned; a large one is
    /// megablock-aligned.
    #[inline]
    pub fn alloc(&mut self, size: usize) -> Result<NonNull<u8>, HeapError> {
        let ptr = match route(size) {
            Route::Small(class) => self.alloc_small(class)?,
            Route::Medium(blocks) => self.alloc_group(blocks)?,
            Route::Large => self.alloc_large(size)?,
        };
        self.counters.requested_bytes += size as u64;
        self.check_if_expensive();
        Ok(ptr)
    }

    /// As [`Heap::alloc`], with the bytes zeroed.
    pub fn alloc_zeroed(&mut self, size: usize) -> Result<NonNull<u8>, HeapError> {
        let ptr = self.alloc(size)?;
        // SAFETY: `ptr` was just allocated with at least `size` bytes.
        unsafe { ptr.as_ptr().write_bytes(0, size) };
        Ok(ptr)
    }

    /// Frees an allocation.
    ///
    /// # Safety
    /// `ptr` was returned by `alloc`, `alloc_zeroed` or `realloc` of this heap for exactly `size`
    /// bytes, has not been freed since, and is not used after this call.
    #[inline]
    pub unsafe fn free(&mut self, ptr: NonNull<u8>, size: usize) {
        // SAFETY: for all three arms, the caller's contract, and `route` is the same function
        // that chose where `ptr` came from.
        unsafe {
            match route(size) {
                Route::Small(_) => self.free_small(ptr),
                Route::Medium(blocks) => self.free_group(ptr, blocks),
                Route::Large => self.free_large(ptr, size),
            }
        }
        self.counters.requested_bytes -= size as u64;
        self.check_if_expensive();
    }

    /// Resizes an allocation, keeping its contents up to `min(old_size, new_size)`. It stays in
    /// place when it can: a slab slot whose size class does not change; a medium group that
    /// shrinks, or grows into the free run right after it; a large region that shrinks (its tail
    /// goes back to the arena), stays within its megablocks, or grows into free megablocks right
    /// after it (or past the arena's high-water mark). Otherwise it moves: a large region of
    /// 16 MiB or more by remapping its pages (`mremap`, no copy, no second resident copy), anything
    /// else by alloc, copy, free.
    ///
    /// # Safety
    /// As [`Heap::free`] for `(ptr, old_size)`. On success the old pointer is dead (unless it is
    /// the one returned); on error the old allocation is untouched.
    pub unsafe fn realloc(
        &mut self,
        ptr: NonNull<u8>,
        old_size: usize,
        new_size: usize,
    ) -> Result<NonNull<u8>, HeapError> {
        let in_place = match (route(old_size), route(new_size)) {
            (Route::Small(old), Route::Small(new)) => old == new,
            (Route::Medium(old), Route::Medium(new)) => self.resize_group(ptr, old, new),
            (Route::Large, Route::Large) => {
                // SAFETY: the caller's contract, and both sizes route to large regions.
                let ptr = unsafe { self.realloc_large(ptr, old_size, new_size)? };
                self.check_if_expensive();
                return Ok(ptr);
            }
            _ => false,
        };
        if in_place {
            self.counters.requested_bytes =
                self.counters.requested_bytes - old_size as u64 + new_size as u64;
            self.check_if_expensive();
            return Ok(ptr);
        }
        let new = self.alloc(new_size)?;
        // SAFETY: both allocations are live, distinct, and at least min(old, new) bytes long.
        unsafe {
            std::ptr::copy_nonoverlapping(ptr.as_ptr(), new.as_ptr(), old_size.min(new_size));
            self.free(ptr, old_size);
        }
        Ok(new)
    }

    /// The bytes an allocation of `size` really occupies.
    pub fn usable_size(size: usize) -> usize {
        match route(size) {
            Route::Small(class) => class::SIZES[class] as usize,
            Route::Medium(blocks) => blocks as usize * BLOCK_BYTES,
            Route::Large => large::usable_size(size),
        }
    }

    /// Compact handle for `ptr`: its byte offset from the heap's base, below `reserve_bytes`.
    #[inline]
    pub fn offset_of(&self, ptr: NonNull<u8>) -> u64 {
        debug_assert!(self.contains(ptr));
        self.arena.offset_of(ptr) as u64
    }

    /// The pointer whose [`Heap::offset_of`] is `offset`.
    #[inline]
    pub fn ptr_at(&self, offset: u64) -> NonNull<u8> {
        assert!((offset as usize) < self.arena.reserve_bytes());
        // SAFETY: the offset is inside the reservation (asserted), so the sum is in bounds of one
        // mapping and not null. Forming the pointer is all this does; reading it is the caller's
        // business.
        unsafe { self.arena.base().add(offset as usize) }
    }

    /// Whether `ptr` lies inside this heap's committed memory.
    pub fn contains(&self, ptr: NonNull<u8>) -> bool {
        let base = self.arena.base().as_ptr() as usize;
        let p = ptr.as_ptr() as usize;
        p >= base && p < base + self.arena.committed_megablocks() as usize * MEGABLOCK_BYTES
    }

    /// Gives every freed-but-resident byte back to the OS now (MEMORY PURGE): kept empty slabs
    /// and the quick cache go back to the free runs, every dirty run is purged (wholly free
    /// megablocks return to the arena), and pending and cached large regions are released.
    /// Returns the resident bytes released (by the `stats()` estimate). Unbounded work: a walk of
    /// the dirty runs, at most `dirty_bytes_max` of them, and of the large cache.
    pub fn purge(&mut self) -> usize {
        let before = self.resident_estimate();
        let mut budget = u32::MAX;
        self.release_empty_slabs(0, &mut budget);
        self.flush_quick();
        self.purge_runs(0, &mut budget);
        self.release_large_cache();
        self.decay.rest();
        self.check_if_expensive();
        before.saturating_sub(self.resident_estimate()) as usize
    }

    #[inline(always)]
    #[cfg_attr(not(feature = "expensive-checks"), allow(clippy::unused_self))]
    fn check_if_expensive(&self) {
        #[cfg(feature = "expensive-checks")]
        self.validate();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small_heap() -> Heap {
        Heap::with_config(HeapConfig {
            reserve_bytes: 2 << 30,
            ..HeapConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn routes_by_size() {
        assert_eq!(route(0), Route::Small(0));
        assert_eq!(route(8), Route::Small(0));
        assert_eq!(route(9), Route::Small(1));
        assert_eq!(route(BLOCK_BYTES), Route::Medium(1));
        assert_eq!(
            route(BLOCK_BYTES + 1),
            Route::Small(class::class_of(BLOCK_BYTES + 1))
        );
        assert_eq!(route(SMALL_MAX_BYTES + 1), Route::Medium(5));
        assert_eq!(route(LARGE_MIN_BYTES - 1), Route::Medium(64));
        assert_eq!(route(LARGE_MIN_BYTES), Route::Large);
    }

    #[test]
    fn descriptor_is_found_from_any_interior_pointer() {
        let mut heap = small_heap();
        // Fill two megablocks with single-block groups and check that the first and last byte of
        // each block map back to that block's descriptor, including at megablock edges.
        let blocks: Vec<_> = (0..2 * 127)
            .map(|_| heap.alloc(BLOCK_BYTES).unwrap())
            .collect();
        for &ptr in &blocks {
            let offset = heap.offset_of(ptr) as usize;
            assert_eq!(offset % BLOCK_BYTES, 0);
            assert_ne!(offset % MEGABLOCK_BYTES, 0, "block 0 is never handed out");
            let first = heap.arena.block_of(ptr);
            // SAFETY: BLOCK_BYTES - 1 stays inside the block.
            let last = heap.arena.block_of(unsafe { ptr.add(BLOCK_BYTES - 1) });
            assert_eq!(first, last);
            let desc = heap.arena.desc::<32>(first);
            let expected = heap.arena.megablock_ptr(first / 128).as_ptr() as usize
                + (first as usize % 128) * 32;
            assert_eq!(desc.as_ptr() as usize, expected);
            assert_eq!(desc.kind(), desc::kind::GROUP);
        }
        let edges: Vec<usize> = blocks
            .iter()
            .map(|&p| heap.offset_of(p) as usize % MEGABLOCK_BYTES / BLOCK_BYTES)
            .collect();
        assert!(edges.contains(&1) && edges.contains(&127));
        for ptr in blocks {
            // SAFETY: each block is live and freed once with its size.
            unsafe { heap.free(ptr, BLOCK_BYTES) };
        }
        heap.validate();
    }

    #[test]
    fn padded_descriptors_work_the_same() {
        let mut heap = Heap::<64>::with_config(HeapConfig {
            reserve_bytes: 1 << 30,
            ..HeapConfig::default()
        })
        .unwrap();
        let ptrs: Vec<_> = (1..2000)
            .map(|i| (heap.alloc(i * 7).unwrap(), i * 7))
            .collect();
        heap.validate();
        let census = heap.census();
        // Every size 7·i below 14 KiB is a slab slot: the descriptors must count all 1,999.
        assert_eq!((census.live_slots, census.group_blocks), (1999, 0));
        for (ptr, size) in ptrs {
            // SAFETY: live, freed once with its size.
            unsafe { heap.free(ptr, size) };
        }
        heap.validate();
        assert_eq!(heap.stats().allocated_bytes, 0);
    }

    #[test]
    fn freed_groups_coalesce_back_into_one_run() {
        let mut heap = small_heap();
        // Sizes that bypass the quick cache once it is full: many distinct lengths.
        let ptrs: Vec<_> = (1..=60)
            .map(|n| {
                (
                    heap.alloc(n * BLOCK_BYTES / 2 + 40 * 1024).unwrap(),
                    n * BLOCK_BYTES / 2 + 40 * 1024,
                )
            })
            .collect();
        heap.validate();
        for (ptr, size) in ptrs.into_iter().rev() {
            // SAFETY: live, freed once with its size.
            unsafe { heap.free(ptr, size) };
            heap.validate();
        }
        heap.flush_quick();
        heap.validate();
        let census = heap.census();
        assert_eq!(
            census.slab_blocks + census.group_blocks + census.cached_blocks,
            0
        );
        // Everything merged back: one free run per block-land megablock.
        assert_eq!(census.descriptors_read, census.megablocks);
    }

    #[test]
    fn slabs_reuse_freed_slots_first() {
        let mut heap = small_heap();
        let a = heap.alloc(48).unwrap();
        let b = heap.alloc(48).unwrap();
        // SAFETY: `a` is live and freed once.
        unsafe { heap.free(a, 48) };
        let c = heap.alloc(48).unwrap();
        assert_eq!(a, c, "the most recently freed slot is handed out again");
        assert_eq!(heap.block_usage(b).live_objects, 2);
        let mut seen = Vec::new();
        heap.for_each_live(b, |p, size| seen.push((p, size)));
        assert_eq!(seen, vec![(c, 48), (b, 48)], "slots in address order");
    }

    #[test]
    fn empty_slabs_return_their_blocks() {
        let mut heap = small_heap();
        let ptrs: Vec<_> = (0..10_000).map(|_| heap.alloc(100).unwrap()).collect();
        let slab_blocks = heap.census().slab_blocks;
        assert!(slab_blocks > 100);
        for ptr in ptrs {
            // SAFETY: live, freed once.
            unsafe { heap.free(ptr, 100) };
        }
        heap.validate();
        assert_eq!(
            heap.census().slab_blocks,
            1,
            "only the class's last slab is kept"
        );
    }

    #[test]
    fn large_regions_are_cached_and_reused() {
        let mut heap = small_heap();
        let a = heap.alloc(2 << 20).unwrap();
        assert_eq!(heap.offset_of(a) as usize % MEGABLOCK_BYTES, 0);
        // SAFETY: live, freed once.
        unsafe { heap.free(a, 2 << 20) };
        assert_eq!(heap.stats().large_cache_bytes, 2 << 20);
        let b = heap.alloc((2 << 20) - 100).unwrap();
        assert_eq!(a, b, "same class reuses the cached region");
        assert_eq!(heap.stats().large_cache_bytes, 0);
        // SAFETY: live, freed once.
        unsafe { heap.free(b, (2 << 20) - 100) };
        heap.purge();
        assert_eq!(heap.stats().large_cache_bytes, 0);
        assert_eq!(heap.stats().resident_bytes, 0);
    }

    #[test]
    fn large_cache_releases_coldest_in_batches() {
        let mut heap = Heap::<32>::with_config(HeapConfig {
            reserve_bytes: 2 << 30,
            large_cache_bytes_max: 16 << 20,
            release_batch_bytes: 8 << 20,
            ..HeapConfig::default()
        })
        .unwrap();
        // Make the 1 MiB class hot and 4 MiB cold.
        for _ in 0..40 {
            let p = heap.alloc(1 << 20).unwrap();
            // SAFETY: live, freed once.
            unsafe { heap.free(p, 1 << 20) };
        }
        let cold: Vec<_> = (0..4).map(|_| heap.alloc(4 << 20).unwrap()).collect();
        let hot: Vec<_> = (0..4).map(|_| heap.alloc(1 << 20).unwrap()).collect();
        for p in hot {
            // SAFETY: live, freed once.
            unsafe { heap.free(p, 1 << 20) };
        }
        for p in cold {
            // SAFETY: live, freed once.
            unsafe { heap.free(p, 4 << 20) };
        }
        // 4 MiB hot + 16 MiB cold = 20 MiB > 16 MiB: the cold class gave up a region, and since
        // 4 MiB pending is below the batch it has not been released yet.
        let stats = heap.stats();
        assert_eq!(heap.large.stacks[1].len(), 4, "hot class untouched");
        assert_eq!(heap.large.stacks[4].len(), 3);
        assert_eq!(heap.large.pending_bytes, 4 << 20);
        assert_eq!(stats.large_cache_bytes, 20 << 20);
        let extra: Vec<_> = (0..2).map(|_| heap.alloc(3 << 20).unwrap()).collect();
        for p in extra {
            // SAFETY: live, freed once.
            unsafe { heap.free(p, 3 << 20) };
        }
        assert_eq!(
            heap.large.pending_bytes, 0,
            "batch of >= 8 MiB released at once"
        );
        assert!(heap.large.cached_bytes <= 16 << 20);
        assert!(heap.stats().free_megablocks >= 8);
    }

    #[test]
    fn direct_regions_are_released_on_free() {
        let mut heap = small_heap();
        let size = 40 << 20;
        let p = heap.alloc(size).unwrap();
        // SAFETY: the region is `size` bytes long.
        unsafe { p.as_ptr().write_bytes(7, size) };
        assert_eq!(heap.stats().large_bytes, size as u64);
        // SAFETY: live, freed once.
        unsafe { heap.free(p, size) };
        let stats = heap.stats();
        assert_eq!(
            (
                stats.large_bytes,
                stats.large_cache_bytes,
                stats.resident_bytes
            ),
            (0, 0, 0)
        );
        assert_eq!(stats.free_megablocks, 40);
    }

    #[test]
    fn realloc_keeps_contents_across_every_route() {
        let mut heap = small_heap();
        let sizes = [
            1,
            8,
            100,
            4000,
            8192,
            9000,
            40_000,
            300_000,
            600_000,
            3 << 20,
            20 << 20,
            64,
        ];
        let mut ptr = heap.alloc(sizes[0]).unwrap();
        // SAFETY: one byte allocated.
        unsafe { ptr.write(0xAB) };
        for pair in sizes.windows(2) {
            // SAFETY: `ptr` is live with size pair[0].
            ptr = unsafe { heap.realloc(ptr, pair[0], pair[1]).unwrap() };
            // SAFETY: at least one byte is allocated.
            assert_eq!(unsafe { ptr.read() }, 0xAB);
            heap.validate();
        }
        // SAFETY: live, freed once.
        unsafe { heap.free(ptr, 64) };
        assert_eq!(heap.stats().requested_bytes, 0);
    }

    #[test]
    fn offsets_round_trip() {
        let mut heap = small_heap();
        for size in [1, 500, 8192, 100_000, 1 << 20] {
            let p = heap.alloc(size).unwrap();
            assert_eq!(heap.ptr_at(heap.offset_of(p)), p);
            assert!(heap.offset_of(p) < 1 << 40);
            // SAFETY: live, freed once.
            unsafe { heap.free(p, size) };
        }
    }

    #[test]
    fn measured_resident_follows_what_was_touched() {
        let mut heap = small_heap();
        let untouched: Vec<_> = (0..200).map(|_| heap.alloc(BLOCK_BYTES).unwrap()).collect();
        let before = heap.measure_resident_bytes();
        assert!(
            heap.stats().resident_bytes >= 200 * BLOCK_BYTES as u64,
            "estimate counts them"
        );
        assert!(
            before < 100 * BLOCK_BYTES as u64,
            "never written, so not resident: {before}"
        );
        for &p in &untouched {
            // SAFETY: each block is BLOCK_BYTES long and live.
            unsafe { p.as_ptr().write_bytes(1, BLOCK_BYTES) };
        }
        let after = heap.measure_resident_bytes();
        assert!(
            after >= before + 200 * BLOCK_BYTES as u64,
            "{before} -> {after}"
        );
        for p in untouched {
            // SAFETY: live, freed once.
            unsafe { heap.free(p, BLOCK_BYTES) };
        }
        heap.purge();
        assert!(heap.measure_resident_bytes() < after / 4);
    }

    #[test]
    fn exhausted_reservation_is_an_error_not_a_crash() {
        let mut heap = Heap::<32>::with_config(HeapConfig {
            reserve_bytes: 4 << 20,
            ..HeapConfig::default()
        })
        .unwrap();
        assert_eq!(heap.alloc(8 << 20), Err(HeapError::TooLarge));
        let mut live = Vec::new();
        loop {
            match heap.alloc(BLOCK_BYTES) {
                Ok(p) => live.push(p),
                Err(e) => {
                    assert_eq!(e, HeapError::OutOfMemory);
                    break;
                }
            }
        }
        assert_eq!(live.len(), 4 * 127);
        heap.validate();
    }

    #[test]
    fn dirty_blocks_are_purged_past_the_bound() {
        let mut heap = Heap::<32>::with_config(HeapConfig {
            reserve_bytes: 1 << 30,
            dirty_bytes_max: 1 << 20,
            ..HeapConfig::default()
        })
        .unwrap();
        // Distinct lengths so the quick cache does not hold them all.
        let ptrs: Vec<_> = (0..600)
            .map(|i| (heap.alloc(40_000 + i).unwrap(), 40_000 + i))
            .collect();
        for (p, size) in ptrs {
            // SAFETY: live, freed once.
            unsafe { heap.free(p, size) };
        }
        heap.validate();
        assert!(heap.runs.dirty_blocks * BLOCK_BYTES as u64 <= 1 << 20);
        // The quick cache (at most 8 groups of each length) is freed memory too.
        assert!(heap.stats().dirty_bytes <= (1 << 20) + 8 * 5 * BLOCK_BYTES as u64);
    }
}

/// `Heap::decay` and `Heap::purge` on whole heaps (the decay module's own tests cover its clock
/// and curve).
#[cfg(test)]
mod decay_tests {
    use super::decay::DECAY_STEPS_MAX;
    use super::*;

    fn heap_with(config: &HeapConfig) -> Heap {
        Heap::with_config(HeapConfig {
            reserve_bytes: 2 << 30,
            ..config.clone()
        })
        .unwrap()
    }

    /// Allocates `count` medium groups of distinct lengths (so the quick cache holds few of them),
    /// writes them, and returns them with their sizes.
    fn groups(heap: &mut Heap, count: usize) -> Vec<(NonNull<u8>, usize)> {
        (0..count)
            .map(|i| {
                let size = (5 + i % 40) * BLOCK_BYTES;
                let ptr = heap.alloc(size).unwrap();
                // SAFETY: `size` bytes were just allocated.
                unsafe { ptr.as_ptr().write_bytes(3, size) };
                (ptr, size)
            })
            .collect()
    }

    fn free_all(heap: &mut Heap, live: Vec<(NonNull<u8>, usize)>) {
        for (ptr, size) in live {
            // SAFETY: live, freed once with its size.
            unsafe { heap.free(ptr, size) };
        }
    }

    #[test]
    fn a_freed_burst_goes_back_within_the_decay_time() {
        let mut heap = heap_with(&HeapConfig {
            dirty_bytes_max: 64 << 20,
            dirty_reserve_bytes: 0,
            ..HeapConfig::default()
        });
        let live = groups(&mut heap, 300);
        free_all(&mut heap, live);
        let freed = heap.stats().dirty_bytes;
        assert!(freed > 40 << 20, "{freed}");
        let mut released = 0;
        let mut dirty = Vec::new();
        for now_ms in (10_000..=11_200).step_by(50) {
            released += heap.decay(now_ms);
            heap.validate();
            dirty.push(heap.stats().dirty_bytes);
        }
        // 50 ms steps: every other call falls between epochs and must change nothing.
        assert!(
            dirty
                .chunks(2)
                .all(|pair| pair.len() == 1 || pair[0] == pair[1])
        );
        // The first call is an epoch boundary: the burst enters the ring at age 0 at 10,000 ms,
        // is at age 4 (half kept) at 10,400 ms and at age 9 (none kept) at 10,900 ms.
        assert!(
            dirty[2] > freed * 8 / 10,
            "the first epochs keep most of it"
        );
        assert!(
            dirty[8] < freed * 6 / 10 && dirty[8] > freed * 4 / 10,
            "{dirty:?}"
        );
        assert_eq!(dirty[18], 0, "all of it after the decay time: {dirty:?}");
        let stats = heap.stats();
        assert_eq!(
            stats.resident_bytes, 0,
            "wholly free megablocks left block land"
        );
        assert_eq!(stats.decayed_bytes, released as u64);
        assert!(released as u64 >= freed);
    }

    #[test]
    fn decay_keeps_the_reserve_while_blocks_are_taken() {
        let reserve = 1 << 20;
        let mut heap = heap_with(&HeapConfig {
            dirty_reserve_bytes: reserve,
            ..HeapConfig::default()
        });
        // A steady churn that frees and reuses the same blocks every 20 ms keeps its pool: only
        // growth counts, and the pool never grows past what the first round freed.
        let mut live = groups(&mut heap, 40);
        for step in 0..200u64 {
            let half = live.split_off(20);
            free_all(&mut heap, half);
            live.extend(groups(&mut heap, 20));
            heap.decay(step * 20);
        }
        heap.validate();
        assert!(heap.stats().dirty_bytes <= reserve as u64);
        free_all(&mut heap, live);
        // While blocks are still being taken (one group every 100 ms), the reserve stays.
        for now_ms in (4_000..6_000).step_by(100) {
            let one = groups(&mut heap, 1);
            free_all(&mut heap, one);
            heap.decay(now_ms);
        }
        let dirty = heap.stats().dirty_bytes;
        assert!(dirty > 0 && dirty <= reserve as u64, "{dirty}");
        // The last block was taken at 5,900 ms; a whole decay time later the reserve goes too.
        for now_ms in (6_000..6_800).step_by(100) {
            heap.decay(now_ms);
        }
        assert!(heap.stats().dirty_bytes > 0, "not before the decay time");
        for now_ms in (6_800..7_000).step_by(100) {
            heap.decay(now_ms);
        }
        assert_eq!(heap.stats().dirty_bytes, 0);
        heap.validate();
    }

    #[test]
    fn decay_releases_empty_slabs_the_quick_cache_and_the_large_cache() {
        let mut heap = heap_with(&HeapConfig {
            dirty_reserve_bytes: 0,
            ..HeapConfig::default()
        });
        let small: Vec<_> = (0..3000)
            .map(|i| (heap.alloc(24 + i % 300).unwrap(), 24 + i % 300))
            .collect();
        let pages: Vec<_> = (0..8)
            .map(|_| (heap.alloc(BLOCK_BYTES).unwrap(), BLOCK_BYTES))
            .collect();
        let large = heap.alloc(3 << 20).unwrap();
        // SAFETY: the region is 3 MiB long.
        unsafe { large.as_ptr().write_bytes(1, 3 << 20) };
        free_all(&mut heap, small);
        free_all(&mut heap, pages);
        // SAFETY: live, freed once with its size.
        unsafe { heap.free(large, 3 << 20) };
        let stats = heap.stats();
        assert!(stats.empty_slab_bytes > 0);
        assert_eq!(stats.large_cache_bytes, 3 << 20);
        assert!(heap.quick.blocks > 0);
        for now_ms in (0..=2_000).step_by(100) {
            heap.decay(now_ms);
            heap.validate();
        }
        let stats = heap.stats();
        assert_eq!(
            (
                stats.empty_slab_bytes,
                stats.dirty_bytes,
                stats.large_cache_bytes
            ),
            (0, 0, 0)
        );
        assert_eq!(stats.resident_bytes, 0);
        assert_eq!(heap.census().slab_blocks, 0);
    }

    #[test]
    fn decay_work_is_bounded_and_resumes() {
        let mut heap = heap_with(&HeapConfig {
            dirty_bytes_max: 1 << 30,
            dirty_decay_ms: 0,
            dirty_reserve_bytes: 0,
            ..HeapConfig::default()
        });
        // Every other block freed: ~1,500 single-block dirty runs, one madvise each.
        let blocks: Vec<_> = (0..3000)
            .map(|_| heap.alloc(BLOCK_BYTES).unwrap())
            .collect();
        for &ptr in &blocks {
            // SAFETY: each block is live and BLOCK_BYTES long.
            unsafe { ptr.as_ptr().write_bytes(9, BLOCK_BYTES) };
        }
        heap.purge();
        let (keep, drop): (Vec<_>, Vec<_>) = blocks
            .into_iter()
            .enumerate()
            .partition(|(i, _)| i % 2 == 0);
        free_all(
            &mut heap,
            drop.into_iter().map(|(_, p)| (p, BLOCK_BYTES)).collect(),
        );
        let runs = heap.runs.dirty_blocks;
        assert!(runs > 1400);
        let mut calls = 0;
        while heap.runs.dirty_blocks > 0 {
            let before = heap.runs.dirty_blocks;
            heap.decay(1_000);
            assert!(before - heap.runs.dirty_blocks <= u64::from(DECAY_STEPS_MAX));
            calls += 1;
            assert!(calls < 20);
        }
        assert_eq!(calls, runs.div_ceil(u64::from(DECAY_STEPS_MAX)));
        assert_eq!(
            heap.decay(1_000),
            0,
            "caught up: back to waiting for the next epoch"
        );
        free_all(
            &mut heap,
            keep.into_iter().map(|(_, p)| (p, BLOCK_BYTES)).collect(),
        );
        heap.validate();
    }

    #[test]
    fn an_idle_heap_decays_nothing() {
        let mut heap = heap_with(&HeapConfig::default());
        for now_ms in (0..5_000).step_by(100) {
            assert_eq!(heap.decay(now_ms), 0);
        }
        let p = heap.alloc(100).unwrap();
        for now_ms in (5_000..10_000).step_by(100) {
            assert_eq!(heap.decay(now_ms), 0, "live memory is never decayed");
        }
        // SAFETY: live, freed once.
        unsafe { heap.free(p, 100) };
        assert!(heap.stats().empty_slab_bytes > 0);
        for now_ms in (10_000..12_000).step_by(100) {
            heap.decay(now_ms);
        }
        // The slab went back to the runs, and its one dirty block, within the reserve, went
        // back too: no block was taken for a decay time.
        let stats = heap.stats();
        assert_eq!((stats.empty_slab_bytes, stats.dirty_bytes), (0, 0));
        assert_eq!(heap.purge(), 0);
        assert_eq!(heap.stats().resident_bytes, 0);
    }
}
