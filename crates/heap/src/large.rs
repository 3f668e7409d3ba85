//! The large-block cache (after hakmem's BigCache): allocations of 512 KiB and more.
//!
//! ```text
//!  class      512K  1M   2M   3M   4M   6M   8M   16M     > 16M
//!  megablocks  1    1    2    3    4    6    8    16      ⌈size / 1M⌉, mapped directly
//!  stacks     [..] [..] [..] [..] [..] [..] [..] [..]     (not cached)
//!              └ front: coldest … back: hottest ┘
//! ```
//! A large region is a run of whole megablocks, so it starts on a 1 MiB boundary, where no slab slot
//! or group can start; its facts (class, megablocks, pages touched) sit in the per-megablock side
//! table `Heap::mega` under its first megablock. A freed region of a class goes on that class's
//! stack and the next allocation of the class takes the most recently freed one (warm pages, no
//! faults). Each class counts its allocations; the counts halve every `DECAY_PERIOD` large
//! allocations so the cache follows a changing workload. When the cache holds more than
//! `large_cache_bytes_max`, the oldest region of the class with the lowest count (coldest first)
//! moves to a pending list, and once `release_batch_bytes` are pending they are all purged and their
//! megablocks returned to the arena in one batch. Regions above 16 MiB are released as soon as
//! they are freed.
//!
//! A region's usable size is its request rounded up to 4 KiB pages: that is what the caller can
//! touch and what counts as resident; the rest of the class's megablocks is address space only.
//!
//! Invariants: `cached_bytes == Σ class bytes over the stacks`; `pending_bytes == Σ class bytes
//! over pending`; `touched_bytes == Σ touched pages × 4 KiB` over live, cached and pending regions.

use crate::{Heap, HeapError, MEGABLOCK_BYTES};
use std::collections::VecDeque;
use std::ptr::NonNull;

/// Class sizes of the large-block cache.
pub const LARGE_CLASS_BYTES: [usize; 8] = [
    512 << 10,
    1 << 20,
    2 << 20,
    3 << 20,
    4 << 20,
    6 << 20,
    8 << 20,
    16 << 20,
];
/// Requests from this size on are mapped directly and never cached.
pub const LARGE_DIRECT_MIN_BYTES: usize = (16 << 20) + 1;
const PAGE_BYTES: usize = 4096;
const DECAY_PERIOD: u32 = 64;
const DIRECT: u8 = u8::MAX;

/// The cache class of a large request, or `None` above 16 MiB.
pub(crate) fn class_of(size: usize) -> Option<usize> {
    LARGE_CLASS_BYTES.iter().position(|&bytes| size <= bytes)
}

pub(crate) fn usable_size(size: usize) -> usize {
    size.next_multiple_of(PAGE_BYTES)
}

fn megablocks_for(bytes: usize) -> u32 {
    bytes.div_ceil(MEGABLOCK_BYTES) as u32
}

/// What a megablock is, for megablocks that start a large region and for block land (state 0:
/// neither — free, or inside a region).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MegaSlot {
    pub state: u8,
    pub class: u8,
    pub megablocks: u32,
    pub touched_pages: u32,
}

impl MegaSlot {
    pub const BLOCKS: u8 = 1;
    pub const LIVE: u8 = 2;
    pub const CACHED: u8 = 3;
    pub const PENDING: u8 = 4;
    pub const BLOCKLAND: MegaSlot = MegaSlot {
        state: MegaSlot::BLOCKS,
        class: 0,
        megablocks: 1,
        touched_pages: 0,
    };
}

#[derive(Debug, Default)]
pub(crate) struct LargeCache {
    pub stacks: [VecDeque<u32>; 8],
    score: [u32; 8],
    allocations: u32,
    pending: Vec<u32>,
    pub cached_bytes: u64,
    pub pending_bytes: u64,
    pub live_bytes: u64,
    pub touched_bytes: u64,
}

impl LargeCache {
    pub fn new() -> LargeCache {
        LargeCache::default()
    }

    /// Counts one allocation of `class` and ages every count once per period.
    fn count(&mut self, class: usize) {
        self.score[class] = self.score[class].saturating_add(1);
        self.allocations += 1;
        if self.allocations.is_multiple_of(DECAY_PERIOD) {
            for score in &mut self.score {
                *score /= 2;
            }
        }
    }

    /// The class whose oldest region goes first: the lowest count, the larger class on ties.
    fn coldest(&self) -> Option<usize> {
        (0..8)
            .rev()
            .filter(|&c| !self.stacks[c].is_empty())
            .min_by_key(|&c| self.score[c])
    }
}

impl<const D: usize> Heap<D> {
    pub(crate) fn alloc_large(&mut self, size: usize) -> Result<NonNull<u8>, HeapError> {
        if size > self.arena.reserve_bytes() {
            return Err(HeapError::TooLarge);
        }
        let pages = (usable_size(size) / PAGE_BYTES) as u32;
        let start = match class_of(size) {
            Some(class) => {
                self.large.count(class);
                if let Some(start) = self.large.stacks[class].pop_back() {
                    self.large.cached_bytes -= LARGE_CLASS_BYTES[class] as u64;
                    let slot = &mut self.mega[start as usize];
                    slot.state = MegaSlot::LIVE;
                    if pages > slot.touched_pages {
                        self.large.touched_bytes +=
                            (pages - slot.touched_pages) as u64 * PAGE_BYTES as u64;
                        slot.touched_pages = pages;
                    }
                    start
                } else {
                    self.new_region(class as u8, megablocks_for(LARGE_CLASS_BYTES[class]), pages)?
                }
            }
            None => self.new_region(DIRECT, megablocks_for(size), pages)?,
        };
        self.large.live_bytes += usable_size(size) as u64;
        Ok(self.arena.megablock_ptr(start))
    }

    fn new_region(&mut self, class: u8, megablocks: u32, pages: u32) -> Result<u32, HeapError> {
        let start = self.take_megablocks(megablocks)?;
        self.mega[start as usize] = MegaSlot {
            state: MegaSlot::LIVE,
            class,
            megablocks,
            touched_pages: pages,
        };
        self.large.touched_bytes += pages as u64 * PAGE_BYTES as u64;
        Ok(start)
    }

    /// Frees a large region.
    ///
    /// # Safety
    /// `ptr` is a live large allocation of `size` bytes from this heap.
    pub(crate) unsafe fn free_large(&mut self, ptr: NonNull<u8>, size: usize) {
        let start = (self.arena.offset_of(ptr) / MEGABLOCK_BYTES) as u32;
        let slot = self.mega[start as usize];
        debug_assert_eq!(
            slot.state,
            MegaSlot::LIVE,
            "free of a pointer that is not large"
        );
        self.large.live_bytes -= usable_size(size) as u64;
        if slot.class == DIRECT {
            self.release_region(start);
            return;
        }
        let class = slot.class as usize;
        self.mega[start as usize].state = MegaSlot::CACHED;
        self.large.stacks[class].push_back(start);
        self.large.cached_bytes += LARGE_CLASS_BYTES[class] as u64;
        while self.large.cached_bytes > self.config.large_cache_bytes_max as u64 {
            let Some(cold) = self.large.coldest() else {
                break;
            };
            let victim = self.large.stacks[cold]
                .pop_front()
                .expect("coldest has regions");
            self.large.cached_bytes -= LARGE_CLASS_BYTES[cold] as u64;
            self.mega[victim as usize].state = MegaSlot::PENDING;
            self.large.pending.push(victim);
            self.large.pending_bytes += LARGE_CLASS_BYTES[cold] as u64;
        }
        if self.large.pending_bytes >= self.config.release_batch_bytes as u64 {
            self.release_pending();
        }
    }

    /// Keeps a large region in place when its new size is in the same class.
    pub(crate) fn resize_large_in_place(&mut self, ptr: NonNull<u8>, old: usize, new: usize) {
        let start = self.arena.offset_of(ptr) / MEGABLOCK_BYTES;
        self.large.live_bytes =
            self.large.live_bytes - usable_size(old) as u64 + usable_size(new) as u64;
        self.counters.requested_bytes = self.counters.requested_bytes - old as u64 + new as u64;
        let pages = (usable_size(new) / PAGE_BYTES) as u32;
        let slot = &mut self.mega[start];
        if pages > slot.touched_pages {
            self.large.touched_bytes += (pages - slot.touched_pages) as u64 * PAGE_BYTES as u64;
            slot.touched_pages = pages;
        }
    }

    /// Moves every cached region to pending and releases all pending regions.
    pub(crate) fn release_large_cache(&mut self) {
        for class in 0..8 {
            while let Some(start) = self.large.stacks[class].pop_front() {
                self.large.pending.push(start);
            }
        }
        self.large.cached_bytes = 0;
        self.release_pending();
    }

    fn release_pending(&mut self) {
        let pending = std::mem::take(&mut self.large.pending);
        for &start in &pending {
            self.release_region(start);
        }
        self.large.pending = pending;
        self.large.pending.clear();
        self.large.pending_bytes = 0;
    }

    fn release_region(&mut self, start: u32) {
        let slot = std::mem::take(&mut self.mega[start as usize]);
        self.large.touched_bytes -= slot.touched_pages as u64 * PAGE_BYTES as u64;
        // SAFETY: the region is dead (freed by its owner, or sitting in the cache or pending list,
        // from which it has just been taken) and spans exactly `slot.megablocks` megablocks.
        unsafe { self.arena.free(start, slot.megablocks) };
    }
}
