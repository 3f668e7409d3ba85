//! Walks over the descriptors: the census, the defragmenter hooks (`block_usage`, `for_each_live`,
//! `defrag_hint`, `fragmentation`), and `validate`, the full consistency check run by the tests and
//! by the `expensive-checks` feature after every call.
//!
//! The defragmenter's question — is moving this object worth it? — is answered as jemalloc's
//! `get_defrag_hint` answers it for Redis's active defrag: yes when the object's slab is not the
//! class's current allocation slab (new objects go there, so moving out of it gains nothing), is
//! not full, and is used no more than 1⅛ × the average of the class's other non-full slabs.
//! Moving its objects (alloc new, copy, free old) then fills the fuller slabs and lets this one
//! empty and go back to the block runs; the ⅛ slack keeps a class whose slabs are all equally
//! sparse from stalling. An absolute bound ("less than half full") was rejected: it leaves a class of slabs
//! that are all 60% full at 60% for good.
//!
//! Every walk visits a megablock's units head to head: a head descriptor says how many blocks its
//! unit spans, so a walk reads one descriptor per unit (every descriptor, when every block is its
//! own unit) and never a stale interior one.

use crate::blocks::{CLEAN, DIRTY};
use crate::class::{CLASS_COUNT, SIZES, SLAB_BLOCKS};
use crate::desc::{BlockDesc, FLAG_DIRTY, NIL, kind};
use crate::large::MegaSlot;
use crate::stats::{BlockCensus, BlockUsage, ClassOccupancy, Fragmentation};
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
                    census.empty_slabs += u64::from(desc.used == 0);
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

    /// Whether moving the live object at `ptr` (alloc new, copy, free old) would help a slab
    /// empty: true when it is a slab slot whose slab is not the class's current allocation slab,
    /// is not full, and is no fuller than 1⅛ × the average of the class's other non-full slabs
    /// (see the module block). False for medium groups and large regions: their freed blocks are
    /// purged whole, so moving them gives no memory back. O(1): two descriptor reads.
    pub fn defrag_hint(&self, ptr: NonNull<u8>) -> bool {
        if !self.contains(ptr) || self.arena.offset_of(ptr).is_multiple_of(MEGABLOCK_BYTES) {
            return false;
        }
        let (head, desc) = self.unit_of(ptr);
        desc.kind == kind::SLAB && self.slab_is_sparse(head, &desc)
    }

    /// The rule of [`Heap::defrag_hint`] for the slab headed at `head`.
    fn slab_is_sparse(&self, head: u32, desc: &BlockDesc) -> bool {
        let class = &self.slabs.classes[desc.class as usize];
        if head == class.partial || desc.used >= desc.capacity {
            return false;
        }
        // Not full, so on the partial list, behind the current slab: at least two partial slabs.
        let capacity = desc.capacity as u64;
        let full_slabs = class.slabs - class.partial_count as u64;
        let current_used = self.arena.desc::<D>(class.partial).get().used as u64;
        let other_slabs = class.partial_count as u64 - 1;
        let other_live = class.live_slots - full_slabs * capacity - current_used;
        desc.used as u64 * other_slabs <= other_live + other_live / 8
    }

    /// Slab occupancy per size class, by a walk of every descriptor (like [`Heap::census`]).
    pub fn fragmentation(&self) -> Fragmentation {
        let mut classes: Vec<ClassOccupancy> = (0..CLASS_COUNT)
            .map(|c| ClassOccupancy {
                slot_bytes: SIZES[c] as usize,
                slab_bytes: SLAB_BLOCKS[c] as usize * BLOCK_BYTES,
                ..ClassOccupancy::default()
            })
            .collect();
        self.for_each_unit(|head, desc| {
            if desc.kind != kind::SLAB {
                return;
            }
            let (used, capacity) = (desc.used as u64, desc.capacity as u64);
            let class = &mut classes[desc.class as usize];
            class.slabs += 1;
            class.live_slots += used;
            class.capacity_slots += capacity;
            class.full_slabs += u64::from(used == capacity);
            class.empty_slabs += u64::from(used == 0);
            class.occupancy_quartiles[(used * 4 / capacity).min(3) as usize] += 1;
            if self.slab_is_sparse(head, &desc) {
                class.hinted_slabs += 1;
                class.hinted_slots += used;
            }
        });
        classes.retain(|c| c.slabs > 0);
        let mut out = Fragmentation::default();
        for c in &classes {
            out.slab_bytes += c.slabs * c.slab_bytes as u64;
            out.live_bytes += c.live_slots * c.slot_bytes as u64;
            out.hinted_bytes += c.hinted_slots * c.slot_bytes as u64;
            out.hinted_slab_bytes += c.hinted_slabs * c.slab_bytes as u64;
        }
        out.free_slot_bytes = out.slab_bytes - out.live_bytes;
        out.classes = classes;
        out
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
        let live_bytes: u64 = (0..crate::CLASS_COUNT)
            .map(|c| live_slots[c] * u64::from(crate::class::SIZES[c]))
            .sum();
        assert_eq!(live_bytes, self.slabs.live_bytes, "live slab bytes");
        assert_eq!(self.listed_free_blocks(), free_blocks, "listed free blocks");
        self.validate_empty_slabs();
        self.validate_large();
    }

    /// Checks the large regions' side-table facts against the cache's counters.
    fn validate_large(&self) {
        let (mut touched, mut cached, mut pending) = (0, 0, 0);
        for (megablock, slot) in self.mega.iter().enumerate() {
            if !matches!(
                slot.state,
                MegaSlot::LIVE | MegaSlot::CACHED | MegaSlot::PENDING
            ) {
                continue;
            }
            assert!(
                slot.touched_pages as usize * 4096 <= slot.megablocks as usize * MEGABLOCK_BYTES,
                "region at megablock {megablock} touched past its end"
            );
            touched += slot.touched_pages as u64 * 4096;
            let class_bytes = crate::LARGE_CLASS_BYTES
                .get(slot.class as usize)
                .map_or(0, |&b| b as u64);
            match slot.state {
                MegaSlot::CACHED => cached += class_bytes,
                MegaSlot::PENDING => pending += class_bytes,
                _ => {}
            }
        }
        assert_eq!(touched, self.large.touched_bytes, "touched bytes");
        assert_eq!(cached, self.large.cached_bytes, "cached bytes");
        assert_eq!(pending, self.large.pending_bytes, "pending bytes");
    }

    /// Checks the kept empty slabs: each recorded one is a live slab of its class, and the bitmap
    /// marks exactly the classes that record one.
    fn validate_empty_slabs(&self) {
        for class in 0..CLASS_COUNT {
            let empty = self.slabs.empty[class];
            let marked = self.slabs.empty_classes & (1 << class) != 0;
            assert_eq!(marked, empty != NIL, "empty-slab bit of class {class}");
            if empty != NIL {
                let desc = self.arena.desc::<D>(empty).get();
                assert_eq!(
                    (desc.kind, desc.class as usize),
                    (kind::SLAB, class),
                    "kept empty slab of class {class}"
                );
            }
        }
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

    /// Walks every free-run list, checking each entry's kind, length and set (dirty iff it has a
    /// dirty block), and returns the blocks they hold.
    fn listed_free_blocks(&self) -> u64 {
        let mut count = 0;
        for set in [DIRTY, CLEAN] {
            for len in 1..=crate::blocks::RUN_MAX {
                let mut head = self.runs.head(set, len);
                while head != NIL {
                    let desc = self.arena.desc::<D>(head).get();
                    assert_eq!((desc.kind, desc.blocks), (kind::FREE, len), "list {len}");
                    assert_eq!(desc.aux > 0, set == DIRTY, "run at {head} in the wrong set");
                    count += len as u64;
                    head = desc.next;
                }
            }
        }
        count
    }
}

#[cfg(test)]
mod tests {
    use crate::{Heap, HeapConfig};
    use std::ptr::NonNull;

    #[test]
    fn defrag_hint_points_at_sparse_slabs_and_moving_empties_them() {
        let mut heap = Heap::<32>::with_config(HeapConfig {
            reserve_bytes: 1 << 30,
            ..HeapConfig::default()
        })
        .unwrap();
        // 48-byte slots, 170 per one-block slab: 20 slabs, then 90% of the objects of the first
        // 16 freed (as deleting old keys does), the last four left full.
        let objects: Vec<NonNull<u8>> = (0..20 * 170).map(|_| heap.alloc(48).unwrap()).collect();
        let mut live = Vec::new();
        for (i, &ptr) in objects.iter().enumerate() {
            if i < 16 * 170 && i % 10 != 0 {
                // SAFETY: live, freed once.
                unsafe { heap.free(ptr, 48) };
            } else {
                // SAFETY: 48 bytes allocated.
                unsafe { ptr.as_ptr().write_bytes((i % 251) as u8, 48) };
                live.push((ptr, (i % 251) as u8));
            }
        }
        let current = heap.slabs.classes[crate::class::class_of(48)].partial;
        let fragmentation = heap.fragmentation();
        assert_eq!(fragmentation.classes.len(), 1);
        let class = fragmentation.classes[0];
        assert_eq!(
            (class.slabs, class.full_slabs, class.empty_slabs),
            (20, 4, 0)
        );
        assert_eq!(class.occupancy_quartiles, [16, 0, 0, 4]);
        assert_eq!(class.live_slots, live.len() as u64);
        // Every sparse slab but the current one (the last to get a free slot) is hinted.
        assert_eq!(class.hinted_slabs, 15);
        assert_eq!(class.hinted_slots, 15 * 17);
        assert_eq!(fragmentation.hinted_bytes, 15 * 17 * 48);
        assert_eq!(fragmentation.slab_bytes, 20 * 8192);
        for &(ptr, _) in &live {
            let in_current = heap.arena.block_of(ptr) == current;
            let in_full = heap.block_usage(ptr).live_objects == 170;
            assert_eq!(heap.defrag_hint(ptr), !in_current && !in_full, "{ptr:?}");
        }
        // The defragmenter's pass: move every hinted object (alloc, copy, free).
        let before = heap.census().slab_blocks;
        let mut moved = 0;
        for (ptr, fill) in &mut live {
            if heap.defrag_hint(*ptr) {
                let new = heap.alloc(48).unwrap();
                // SAFETY: both are live 48-byte slots.
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr.as_ptr(), new.as_ptr(), 48);
                    heap.free(*ptr, 48);
                }
                *ptr = new;
                moved += 1;
            }
            heap.validate();
            // SAFETY: the object is live with 48 bytes.
            let bytes = unsafe { std::slice::from_raw_parts(ptr.as_ptr(), 48) };
            assert!(bytes.iter().all(|b| b == fill));
        }
        let after = heap.census().slab_blocks;
        assert!(moved <= 15 * 17, "{moved}");
        // 16 sparse slabs held 272 objects: two slabs' worth after the move.
        assert!(after <= 4 + 3, "{before} -> {after} slabs");
        for (ptr, _) in live {
            // SAFETY: live, freed once.
            unsafe { heap.free(ptr, 48) };
        }
    }

    #[test]
    fn defrag_hint_is_false_for_groups_large_regions_and_foreign_pointers() {
        let mut heap = Heap::<32>::with_config(HeapConfig {
            reserve_bytes: 1 << 30,
            ..HeapConfig::default()
        })
        .unwrap();
        let group = heap.alloc(64 << 10).unwrap();
        let large = heap.alloc(1 << 20).unwrap();
        let lone = heap.alloc(100).unwrap();
        assert!(!heap.defrag_hint(group));
        assert!(!heap.defrag_hint(large));
        assert!(!heap.defrag_hint(lone), "the only slab is the current one");
        let mut outside = 0u64;
        assert!(!heap.defrag_hint(NonNull::from(&mut outside).cast()));
        // SAFETY: live, freed once with their sizes.
        unsafe {
            heap.free(group, 64 << 10);
            heap.free(large, 1 << 20);
            heap.free(lone, 100);
        }
    }
}
