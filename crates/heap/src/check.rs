//! Walks over the descriptors: the census, the defragmenter hooks, and `validate`, the full
//! consistency check run by the tests and by the `expensive-checks` feature after every call.
//!
//! Every walk visits a megablock's units head to head: a head descriptor says how many blocks its
//! unit spans, so a walk reads one descriptor per unit (every descriptor, when every block is its
//! own unit) and never a stale interior one.

use crate::desc::{BlockDesc, FLAG_DIRTY, NIL, kind};
use crate::large::MegaSlot;
use crate::stats::{BlockCensus, BlockUsage};
use crate::{BLOCK_BYTES, BLOCKS_PER_MEGABLOCK, Heap, MEGABLOCK_BYTES};
use std::ptr::NonNull;

impl<const D: usize> Heap<D> {
    /// Visits the head descriptor of every unit (slab, group, cached group, free run) of every
    /// block-land megablock.
    fn for_each_unit(&self, mut f: impl FnMut(u32, BlockDesc)) {
        for (megablock, slot) in self.mega.iter().enumerate() {
            if slot.state != MegaSlot::BLOCKS {
                continue;
            }
            let first = (megablock * BLOCKS_PER_MEGABLOCK) as u32;
            let mut index = 1;
            while index < BLOCKS_PER_MEGABLOCK as u32 {
                let desc = self.arena.desc::<D>(first + index).get();
                f(first + index, desc);
                // A zero length would be a corrupt descriptor; stepping one block keeps the walk
                // bounded and `validate` reports it.
                index += desc.blocks.max(1);
            }
        }
    }

    /// Counts blocks by kind by reading the descriptors.
    pub fn census(&self) -> BlockCensus {
        let mut census = BlockCensus {
            megablocks: self.counters.blockland_megablocks,
            ..BlockCensus::default()
        };
        self.for_each_unit(|_, desc| {
            census.descriptors_read += 1;
            let blocks = desc.blocks as u64;
            match desc.kind {
                kind::SLAB => {
                    census.slab_blocks += blocks;
                    census.live_slots += desc.used as u64;
                }
                kind::GROUP => census.group_blocks += blocks,
                kind::CACHED => census.cached_blocks += blocks,
                kind::FREE => census.free_blocks += blocks,
                _ => {}
            }
        });
        census
    }

    /// How full the unit holding `ptr` is: a slab's live slots against its capacity, or a whole
    /// group or large region.
    pub fn block_usage(&self, ptr: NonNull<u8>) -> BlockUsage {
        assert!(self.contains(ptr), "pointer outside the heap");
        if self.arena.offset_of(ptr).is_multiple_of(MEGABLOCK_BYTES) {
            let slot = self.mega[self.arena.offset_of(ptr) / MEGABLOCK_BYTES];
            let bytes = slot.touched_pages as usize * 4096;
            return BlockUsage {
                used_bytes: bytes,
                capacity_bytes: slot.megablocks as usize * MEGABLOCK_BYTES,
                live_objects: 1,
            };
        }
        let (_, desc) = self.unit_of(ptr);
        match desc.kind {
            kind::SLAB => BlockUsage {
                used_bytes: desc.used as usize * desc.slot_bytes as usize,
                capacity_bytes: desc.capacity as usize * desc.slot_bytes as usize,
                live_objects: desc.used as usize,
            },
            kind::GROUP => BlockUsage {
                used_bytes: desc.blocks as usize * BLOCK_BYTES,
                capacity_bytes: desc.blocks as usize * BLOCK_BYTES,
                live_objects: 1,
            },
            _ => BlockUsage {
                capacity_bytes: desc.blocks as usize * BLOCK_BYTES,
                ..BlockUsage::default()
            },
        }
    }

    /// Calls `f(object, slot bytes)` for every live object of the unit holding `ptr` (the
    /// defragmenter's walk: it can move each object and free the old copy afterwards).
    pub fn for_each_live(&self, ptr: NonNull<u8>, mut f: impl FnMut(NonNull<u8>, usize)) {
        assert!(self.contains(ptr), "pointer outside the heap");
        if self.arena.offset_of(ptr).is_multiple_of(MEGABLOCK_BYTES) {
            let slot = self.mega[self.arena.offset_of(ptr) / MEGABLOCK_BYTES];
            if slot.state == MegaSlot::LIVE {
                f(ptr, slot.touched_pages as usize * 4096);
            }
            return;
        }
        let (head, desc) = self.unit_of(ptr);
        let base = self.arena.block_ptr(head);
        match desc.kind {
            kind::GROUP => f(base, desc.blocks as usize * BLOCK_BYTES),
            kind::SLAB => {
                let free = self.free_slots(head, &desc);
                let slot_bytes = desc.slot_bytes as usize;
                for slot in 0..(desc.aux as usize / slot_bytes) {
                    if free[slot / 64] & (1 << (slot % 64)) == 0 {
                        // SAFETY: the slot is below the bump offset, inside the slab.
                        f(unsafe { base.add(slot * slot_bytes) }, slot_bytes);
                    }
                }
            }
            _ => {}
        }
    }

    /// The head block and descriptor of the unit holding `ptr`.
    fn unit_of(&self, ptr: NonNull<u8>) -> (u32, BlockDesc) {
        let mut head = self.arena.block_of(ptr);
        let mut desc = self.arena.desc::<D>(head).get();
        if desc.kind == kind::TAIL || desc.kind == kind::FREE_TAIL {
            head -= desc.blocks;
            desc = self.arena.desc::<D>(head).get();
        }
        (head, desc)
    }

    /// Bitmap of the free-chain slots of a slab; the chain walk is bounded by the capacity.
    fn free_slots(&self, head: u32, desc: &BlockDesc) -> Vec<u64> {
        let base = self.arena.block_ptr(head);
        let mut bits = vec![0u64; (desc.capacity as usize).div_ceil(64)];
        let mut offset = desc.free_head;
        let mut steps = 0;
        while offset != NIL {
            assert!(steps < desc.capacity as usize, "slab free chain is cyclic");
            assert!(
                offset < desc.aux && offset.is_multiple_of(desc.slot_bytes),
                "bad free-chain link"
            );
            let slot = (offset / desc.slot_bytes) as usize;
            assert!(
                bits[slot / 64] & (1 << (slot % 64)) == 0,
                "slot freed twice"
            );
            bits[slot / 64] |= 1 << (slot % 64);
            // SAFETY: `offset` is a free slot inside the slab (asserted above), holding a link.
            offset = unsafe { base.add(offset as usize).cast::<u32>().read() };
            steps += 1;
        }
        bits
    }

    /// Checks every invariant of the heap, panicking on the first broken one. Costs a walk of every
    /// descriptor, free run and free chain: for tests and the `expensive-checks` feature.
    pub fn validate(&self) {
        let mut free_blocks = 0;
        let mut dirty_blocks = 0;
        let mut slab_blocks = 0;
        let mut group_blocks = 0;
        let mut cached_blocks = 0;
        let mut live_slots = [0u64; crate::CLASS_COUNT];
        let mut previous_free = false;
        let mut previous_megablock = u32::MAX;
        self.for_each_unit(|head, desc| {
            let megablock = head / BLOCKS_PER_MEGABLOCK as u32;
            if megablock != previous_megablock {
                previous_free = false;
                previous_megablock = megablock;
            }
            let index = head % BLOCKS_PER_MEGABLOCK as u32;
            assert!(desc.blocks >= 1 && index + desc.blocks <= BLOCKS_PER_MEGABLOCK as u32);
            let is_free = desc.kind == kind::FREE;
            assert!(
                !(is_free && previous_free),
                "adjacent free runs at block {head}"
            );
            previous_free = is_free;
            match desc.kind {
                kind::FREE => {
                    free_blocks += desc.blocks as u64;
                    dirty_blocks += desc.aux as u64;
                    self.validate_free_run(head, &desc);
                }
                kind::SLAB | kind::GROUP | kind::CACHED => {
                    self.validate_tails(head, &desc);
                    match desc.kind {
                        kind::SLAB => {
                            slab_blocks += desc.blocks as u64;
                            live_slots[desc.class as usize] += desc.used as u64;
                            self.validate_slab(head, &desc);
                        }
                        kind::GROUP => group_blocks += desc.blocks as u64,
                        _ => cached_blocks += desc.blocks as u64,
                    }
                }
                other => panic!("unit at block {head} has kind {other}"),
            }
        });
        assert_eq!(free_blocks, self.runs.free_blocks, "free blocks");
        assert_eq!(dirty_blocks, self.runs.dirty_blocks, "dirty blocks");
        assert_eq!(slab_blocks, self.slabs.blocks, "slab blocks");
        assert_eq!(group_blocks, self.counters.group_blocks, "group blocks");
        assert_eq!(cached_blocks, self.quick.blocks, "quick-cached blocks");
        for (class, &live) in live_slots.iter().enumerate() {
            assert_eq!(
                live, self.slabs.classes[class].live_slots,
                "live slots of {class}"
            );
        }
        assert_eq!(self.listed_free_blocks(), free_blocks, "listed free blocks");
    }

    /// Checks a free run's dirty count against its flagged blocks, and its tail descriptor.
    fn validate_free_run(&self, head: u32, desc: &BlockDesc) {
        let flagged = (0..desc.blocks)
            .filter(|i| self.arena.desc::<D>(head + i).get().flags & FLAG_DIRTY != 0)
            .count();
        assert_eq!(flagged, desc.aux as usize, "dirty count of run at {head}");
        if desc.blocks > 1 {
            let tail = self.arena.desc::<D>(head + desc.blocks - 1).get();
            assert_eq!(tail.kind, kind::FREE_TAIL, "run at {head} lacks its tail");
            assert_eq!(tail.blocks, desc.blocks - 1);
        }
    }

    /// Checks that every interior block of an allocated unit is a tail giving its distance to the
    /// head.
    fn validate_tails(&self, head: u32, desc: &BlockDesc) {
        for i in 1..desc.blocks {
            let tail = self.arena.desc::<D>(head + i).get();
            assert_eq!((tail.kind, tail.blocks), (kind::TAIL, i), "tail {head}+{i}");
        }
    }

    /// Checks that a slab's used, free-chain and unbumped slots add up to its capacity.
    fn validate_slab(&self, head: u32, desc: &BlockDesc) {
        let free = self.free_slots(head, desc);
        let chain: u32 = free.iter().map(|w| w.count_ones()).sum();
        let unbumped = desc.capacity as u32 - desc.aux / desc.slot_bytes;
        assert_eq!(
            desc.used as u32 + chain + unbumped,
            desc.capacity as u32,
            "slab at {head}: used + free != capacity"
        );
    }

    /// Walks every free-run list, checking each entry's kind and length, and returns the blocks
    /// they hold.
    fn listed_free_blocks(&self) -> u64 {
        (1..=crate::blocks::RUN_MAX)
            .map(|len| {
                let mut count = 0;
                let mut head = self.runs.head(len);
                while head != NIL {
                    let desc = self.arena.desc::<D>(head).get();
                    assert_eq!((desc.kind, desc.blocks), (kind::FREE, len), "list {len}");
                    count += len as u64;
                    head = desc.next;
                }
                count
            })
            .sum()
    }
}
