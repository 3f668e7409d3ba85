//! The large-block cache (after hakmem's BigCache): allocations of 512 KiB and more.
//!
//! ```text
//!  class      512K  1M   2M   3M   4M   6M   8M   16M     > 16M
//!  megablocks  1    1    2    3    4    6    8    16      ⌈size / 1M⌉ ("direct")
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
//! megablocks returned to the arena in one batch. Below that bound, `Heap::decay` releases the
//! coldest regions that were not reused within `dirty_decay_ms` (`decay.rs`). Direct regions
//! (above 16 MiB) go back to the arena, purged, as soon as they are freed: caching a value that big
//! would hold its memory for a reuse that rarely comes.
//!
//! Resizing (`realloc_large`): a region's megablock count grows with its size (a class's count, or
//! ⌈size / 1 MiB⌉ above 16 MiB), so a shrink gives the tail megablocks back to the arena and
//! purges the touched pages past the new end, and a growth first tries the arena's megablocks right
//! after the region (`Arena::take_at`: free ones, or fresh ones past the high-water mark, where a
//! value growing alone usually sits). Only if those are taken does the region move, and from
//! `REMAP_MIN_BYTES` (16 MiB) on it moves by remapping its pages (`os::remap`): no copy, no moment
//! with two resident copies. A 512 MiB value built by ×1.5 appends peaks at 512 MiB instead of
//! 908 MiB, and a 128 MiB one built by 1 MiB appends takes 0.1–0.2 s where the previous `realloc`
//! took 15 s (`benches/decay.rs`).
//!
//! A region's usable size is its request rounded up to 4 KiB pages: that is what the caller can
//! touch and what counts as resident; the rest of the class's megablocks is address space only.
//!
//! Invariants: `cached_bytes == Σ class bytes over the stacks`; `pending_bytes == Σ class bytes
//! over pending`; `touched_bytes == Σ touched pages × 4 KiB` over live, cached and pending regions;
//! a region's touched pages fit in its megablocks (checked by `Heap::validate`).

use crate::{Heap, HeapError, MEGABLOCK_BYTES, os};
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
const PAGES_PER_MEGABLOCK: u32 = (MEGABLOCK_BYTES / PAGE_BYTES) as u32;
const DECAY_PERIOD: u32 = 64;
/// A region this large moves by remapping its pages rather than copying them. Below it a copy is
/// cheap (≤ 4 ms), and every remap splits the arena's mapping: keeping remaps to direct-sized
/// regions bounds the extra kernel mappings by reservation / 16 MiB, far below `vm.max_map_count`.
const REMAP_MIN_BYTES: usize = 16 << 20;
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

/// The class (or `DIRECT`) and megablock count of a region serving a large request of `size`.
fn shape_of(size: usize) -> (u8, u32) {
    match class_of(size) {
        Some(class) => (class as u8, megablocks_for(LARGE_CLASS_BYTES[class])),
        None => (DIRECT, megablocks_for(size)),
    }
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
    /// Regions moved by remapping their pages (for the tests: a copy ends in the same state).
    pub remaps: u64,
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

    /// Resizes a large region to another large size: in place when its megablocks suffice (the
    /// tail beyond the new size is given back) or the megablocks right after it are free (taken
    /// from the arena), else by moving it to a fresh range (pages remapped from
    /// `REMAP_MIN_BYTES` on, copied below).
    ///
    /// # Safety
    /// `ptr` is a live large allocation of `old` bytes from this heap, and `new` is a large size.
    /// On success the old pointer is dead; on error nothing changed.
    pub(crate) unsafe fn realloc_large(
        &mut self,
        ptr: NonNull<u8>,
        old: usize,
        new: usize,
    ) -> Result<NonNull<u8>, HeapError> {
        if new > self.arena.reserve_bytes() {
            return Err(HeapError::TooLarge);
        }
        let start = (self.arena.offset_of(ptr) / MEGABLOCK_BYTES) as u32;
        let slot = self.mega[start as usize];
        debug_assert_eq!(
            slot.state,
            MegaSlot::LIVE,
            "realloc of a pointer that is not large"
        );
        let (class, need) = shape_of(new);
        let new_pages = (usable_size(new) / PAGE_BYTES) as u32;
        let (at, touched_pages) = if need <= slot.megablocks && new >= old {
            (start, slot.touched_pages.max(new_pages))
        } else if need <= slot.megablocks {
            // Shrinking (a region's megablocks grow with its size, so only a shrink needs fewer).
            if need < slot.megablocks {
                // SAFETY: the tail megablocks belong to this live region and hold nothing the
                // caller may still use (it asked for `new` bytes).
                unsafe { self.arena.free(start + need, slot.megablocks - need) };
            }
            let kept_pages = slot.touched_pages.min(need * PAGES_PER_MEGABLOCK);
            if kept_pages > new_pages {
                let from = new_pages as usize * PAGE_BYTES;
                // SAFETY: the pages from the new end to the last kept touched page lie inside the
                // region's kept megablocks and are past what the caller may use.
                unsafe {
                    os::purge(
                        self.arena.megablock_ptr(start).add(from),
                        kept_pages as usize * PAGE_BYTES - from,
                    );
                }
            }
            (start, new_pages)
        } else if self.extend_megablocks(start + slot.megablocks, need - slot.megablocks) {
            (start, slot.touched_pages.max(new_pages))
        } else {
            let to = self.take_megablocks(need)?;
            // SAFETY: the caller's contract for the old region; `to` was just taken.
            unsafe { self.move_region(start, to, usable_size(old))? };
            self.mega[start as usize] = MegaSlot::default();
            // SAFETY: the old region's contents now live at `to`; nothing refers to it.
            unsafe { self.arena.free(start, slot.megablocks) };
            (to, new_pages)
        };
        self.mega[at as usize] = MegaSlot {
            state: MegaSlot::LIVE,
            class,
            megablocks: need,
            touched_pages,
        };
        self.large.touched_bytes = self.large.touched_bytes
            - slot.touched_pages as u64 * PAGE_BYTES as u64
            + touched_pages as u64 * PAGE_BYTES as u64;
        self.large.live_bytes =
            self.large.live_bytes - usable_size(old) as u64 + usable_size(new) as u64;
        self.counters.requested_bytes = self.counters.requested_bytes - old as u64 + new as u64;
        Ok(self.arena.megablock_ptr(at))
    }

    /// Moves the first `bytes` (a page multiple) of the region at megablock `from` to the
    /// megablocks taken at `to`. On error (the OS refused the remap and then lost the
    /// destination's mapping) `to` is abandoned, never to return to the arena, and `from` is
    /// untouched.
    ///
    /// # Safety
    /// `from` starts a live region of at least `bytes`; `to` was just taken from the arena with at
    /// least as many megablocks, and the two are disjoint.
    unsafe fn move_region(&mut self, from: u32, to: u32, bytes: usize) -> Result<(), HeapError> {
        let (src, dst) = (self.arena.megablock_ptr(from), self.arena.megablock_ptr(to));
        if bytes >= REMAP_MIN_BYTES {
            // SAFETY: both ranges are committed, megablock-aligned and disjoint; `dst` is fresh
            // and the source is not read again once moved (the caller frees it).
            match unsafe { os::remap(src, dst, bytes) } {
                os::Remap::Moved => {
                    self.large.remaps += 1;
                    return Ok(());
                }
                os::Remap::Refused => {}
                // The destination's address space is gone; leaving its megablocks out of the
                // arena is the only safe thing, and the caller keeps the old region.
                os::Remap::Lost => return Err(HeapError::OutOfMemory),
            }
        }
        // SAFETY: both ranges are at least `bytes` long, committed and disjoint.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_ptr(), bytes) };
        Ok(())
    }

    /// Decay of the large cache: releases every pending region, then the coldest cached regions
    /// until at most `limit` bytes stay cached or `budget` regions were released.
    pub(crate) fn shrink_large_cache(&mut self, limit: u64, budget: &mut u32) {
        if !self.large.pending.is_empty() {
            *budget = budget.saturating_sub(self.large.pending.len() as u32);
            self.release_pending();
        }
        while self.large.cached_bytes > limit && *budget > 0 {
            let Some(cold) = self.large.coldest() else {
                break;
            };
            let victim = self.large.stacks[cold]
                .pop_front()
                .expect("coldest has regions");
            self.large.cached_bytes -= LARGE_CLASS_BYTES[cold] as u64;
            self.release_region(victim);
            *budget -= 1;
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

#[cfg(test)]
mod tests {
    use crate::{Heap, HeapConfig, MEGABLOCK_BYTES};
    use std::ptr::NonNull;

    fn heap() -> Heap {
        Heap::with_config(HeapConfig {
            reserve_bytes: 4 << 30,
            ..HeapConfig::default()
        })
        .unwrap()
    }

    fn fill(ptr: NonNull<u8>, size: usize) {
        for page in (0..size).step_by(4096) {
            // SAFETY: `page < size`, inside the live allocation.
            unsafe { ptr.add(page).write((page / 4096) as u8 ^ 0x5A) };
        }
    }

    fn check(ptr: NonNull<u8>, size: usize) {
        for page in (0..size).step_by(4096) {
            // SAFETY: `page < size`, inside the live allocation.
            let got = unsafe { ptr.add(page).read() };
            assert_eq!(got, (page / 4096) as u8 ^ 0x5A, "page {page}");
        }
    }

    /// Reallocates `ptr` from `old` to `new`, checks the kept contents, and fills the rest.
    fn grow(heap: &mut Heap, ptr: NonNull<u8>, old: usize, new: usize) -> NonNull<u8> {
        let before = heap.stats().large_bytes;
        // SAFETY: `ptr` is live with `old` bytes; it is not used after.
        let moved = unsafe { heap.realloc(ptr, old, new).unwrap() };
        check(moved, old.min(new));
        fill(moved, new);
        heap.validate();
        let after = heap.stats().large_bytes;
        assert_eq!(
            after + super::usable_size(old) as u64,
            before + super::usable_size(new) as u64
        );
        moved
    }

    #[test]
    fn a_region_at_the_high_water_mark_grows_in_place() {
        let mut heap = heap();
        let mut size = 20 << 20;
        let first = heap.alloc(size).unwrap();
        fill(first, size);
        let mut ptr = first;
        // APPEND-like growth, by a quarter at a time, from 20 MiB to ~190 MiB: never a move.
        while size < 150 << 20 {
            let new = size + size / 4 + 1000;
            ptr = grow(&mut heap, ptr, size, new);
            size = new;
            assert_eq!(ptr, first);
        }
        let resident = heap.measure_resident_bytes();
        assert!(resident <= size as u64 + (1 << 20), "{resident} for {size}");
        // SAFETY: live, freed once.
        unsafe { heap.free(ptr, size) };
        assert_eq!(heap.stats().resident_bytes, 0);
        assert!(heap.measure_resident_bytes() < 1 << 20, "released at once");
    }

    #[test]
    fn a_region_grows_into_free_megablocks_after_it_else_moves() {
        let mut heap = heap();
        let a = heap.alloc(600 << 10).unwrap();
        let b = heap.alloc(20 << 20).unwrap();
        let c = heap.alloc(1 << 20).unwrap();
        // SAFETY: live, freed once; direct regions go straight back to the arena.
        unsafe { heap.free(b, 20 << 20) };
        // A 1 MiB-class region grows to 1 MiB (same megablock), then into b's megablocks.
        fill(a, 600 << 10);
        let a2 = grow(&mut heap, a, 600 << 10, 1 << 20);
        assert_eq!(a2, a);
        let a3 = grow(&mut heap, a2, 1 << 20, 5 << 20);
        assert_eq!(a3, a, "took the free megablocks after it");
        let a4 = grow(&mut heap, a3, 5 << 20, 21 << 20);
        assert_eq!(a4, a, "exactly up to c");
        let a5 = grow(&mut heap, a4, 21 << 20, 22 << 20);
        assert_ne!(a5, a, "c is in the way: moved");
        assert!(heap.offset_of(a5) > heap.offset_of(c));
        // SAFETY: live, freed once with their sizes.
        unsafe {
            heap.free(a5, 22 << 20);
            heap.free(c, 1 << 20);
        }
        heap.purge();
        assert_eq!(heap.stats().resident_bytes, 0);
    }

    #[test]
    fn a_moved_region_keeps_one_resident_copy() {
        let mut heap = heap();
        let size = 48 << 20;
        let a = heap.alloc(size).unwrap();
        fill(a, size);
        // SAFETY: the region is `size` bytes long; every byte written, so all of it is resident.
        unsafe { a.as_ptr().write_bytes(7, size) };
        let blocker = heap.alloc(700 << 10).unwrap();
        let before = heap.measure_resident_bytes();
        // SAFETY: live with `size` bytes.
        let b = unsafe { heap.realloc(a, size, 2 * size).unwrap() };
        assert_ne!(a, b);
        assert_eq!(heap.large.remaps, 1);
        let after = heap.measure_resident_bytes();
        // Remapped, not copied: the pages moved, so the old range holds none of them.
        assert!(after <= before + (1 << 20), "{before} -> {after}");
        // SAFETY: the first `size` bytes were kept.
        let kept = unsafe { std::slice::from_raw_parts(b.as_ptr(), size) };
        assert!(kept.iter().all(|&x| x == 7));
        // SAFETY: the old range is part of the arena again and reads as zero.
        assert_eq!(unsafe { a.as_ptr().read() }, 0);
        heap.validate();
        // SAFETY: live, freed once with their sizes.
        unsafe {
            heap.free(b, 2 * size);
            heap.free(blocker, 700 << 10);
        }
    }

    #[test]
    fn a_shrinking_region_gives_its_tail_back() {
        let mut heap = heap();
        let size = 64 << 20;
        let a = heap.alloc(size).unwrap();
        fill(a, size);
        let free_before = heap.stats().free_megablocks;
        let b = grow(&mut heap, a, size, (20 << 20) + 5000);
        assert_eq!(a, b);
        assert_eq!(heap.stats().free_megablocks, free_before + 43);
        let c = grow(&mut heap, b, (20 << 20) + 5000, 3 << 20);
        assert_eq!(a, c);
        let resident = heap.measure_resident_bytes();
        assert!(resident <= (3 << 20) + (64 << 10), "{resident}");
        assert_eq!(heap.stats().resident_bytes, 3 << 20);
        // Now a 3 MiB class region: freed, it is cached, and a 3 MiB request gets it back.
        // SAFETY: live, freed once.
        unsafe { heap.free(c, 3 << 20) };
        assert_eq!(heap.stats().large_cache_bytes, 3 << 20);
        let d = heap.alloc((2 << 20) + 1).unwrap();
        assert_eq!(d, a);
        // SAFETY: live, freed once.
        unsafe { heap.free(d, (2 << 20) + 1) };
        assert_eq!(heap.offset_of(a) as usize % MEGABLOCK_BYTES, 0);
    }
}
