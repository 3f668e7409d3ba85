//! Slabs: small objects (1 B – 32 KiB) in slots of one size class, packed into block groups.
//!
//! ```text
//!  slab of class 48 B, 1 block (170 slots, 32 B tail waste)
//!  ┌────┬────┬────┬────┬────┬─────────────── never used ───────────────┬──┐
//!  │live│free│live│free│live│ … bump (desc.aux) ─▶                      │  │
//!  └────┴─┬──┴────┴─▲──┴────┴────────────────────────────────────────────┴──┘
//!         └─ next ──┘   free slots hold the u32 offset of the next free slot; desc.free_head
//!                       starts the chain, NIL ends it
//! ```
//! The slab's whole state is its head descriptor (`free_head`, bump offset in `aux`, `used`,
//! `capacity`, `class`, `slot_bytes`): no per-slab header inside the data, so a slab of 16-byte
//! slots holds exactly 512 of them. Slots are handed out from the free chain first (the most
//! recently freed slot, still in cache), then by bumping, so a fresh slab is never written
//! ahead of use and its untouched pages stay out of memory. Each class keeps a doubly linked list
//! of slabs with a free slot (through the descriptors' `next`/`prev`); allocation takes from its
//! head (the class's current allocation slab), a slab that fills leaves the list, and a slab that
//! empties goes back to the block runs unless it is the class's only one with a free slot (so a
//! class that oscillates around one slab does not churn). That kept empty slab is remembered
//! (`Slabs::empty`, and its class's bit in `Slabs::empty_classes`) with the decay epoch it
//! emptied in; `Heap::decay` gives its blocks back once it has stayed empty for `dirty_decay_ms`,
//! and `Heap::purge` at once. Otherwise one empty slab per class would pin its megablock (and the
//! dirty free blocks around it) after every key is deleted.
//!
//! Invariants (per slab): `used + chain_length + (capacity - aux / slot_bytes) == capacity`; a slab
//! is on its class list iff `used < capacity`; `Slabs::live_slots[c] == Σ used` over slabs of c;
//! a class has at most one empty slab, and `Slabs::empty[c]` is NIL or a live slab of class c
//! (possibly no longer empty), with the class's bit set in `empty_classes` iff it is not NIL.

use crate::class::{self, CLASS_COUNT, SIZES, SLAB_BLOCKS};
use crate::desc::{NIL, kind};
use crate::{Heap, HeapError};
use std::ptr::NonNull;

#[derive(Clone, Copy, Debug)]
pub(crate) struct SlabClass {
    /// First slab with a free slot, or NIL.
    pub partial: u32,
    pub partial_count: u32,
    pub live_slots: u64,
    pub slabs: u64,
}

#[derive(Debug)]
pub(crate) struct Slabs {
    pub classes: [SlabClass; CLASS_COUNT],
    /// Blocks held by all slabs.
    pub blocks: u64,
    /// Σ live_slots × slot size over the classes (`Heap::allocated_bytes` in O(1)).
    pub live_bytes: u64,
    /// Per class, the slab kept when it emptied (see the module block), or NIL, and the decay
    /// epoch it emptied in. Kept apart from `classes`, which the fast paths read, so a class's hot
    /// state stays 24 bytes.
    pub empty: [u32; CLASS_COUNT],
    pub empty_epoch: [u64; CLASS_COUNT],
    /// Bit `c` is set iff `empty[c]` is not NIL.
    pub empty_classes: u128,
}

const _: () = assert!(CLASS_COUNT <= 128);
const _: () = assert!(std::mem::size_of::<SlabClass>() == 24);

impl Slabs {
    pub fn new() -> Slabs {
        Slabs {
            classes: [SlabClass {
                partial: NIL,
                partial_count: 0,
                live_slots: 0,
                slabs: 0,
            }; CLASS_COUNT],
            blocks: 0,
            live_bytes: 0,
            empty: [NIL; CLASS_COUNT],
            empty_epoch: [0; CLASS_COUNT],
            empty_classes: 0,
        }
    }
}

impl<const D: usize> Heap<D> {
    #[inline]
    pub(crate) fn alloc_small(&mut self, class: usize) -> Result<NonNull<u8>, HeapError> {
        let mut head = self.slabs.classes[class].partial;
        if head == NIL {
            head = self.add_slab(class)?;
        }
        let slab = self.arena.block_ptr(head);
        let d = self.arena.desc::<D>(head);
        let (offset, full) = d.update(|d| {
            let offset = if d.free_head == NIL {
                let offset = d.aux;
                d.aux += d.slot_bytes;
                offset
            } else {
                let offset = d.free_head;
                // SAFETY: `offset` is a free slot of this slab (it heads the free chain), inside
                // the slab's committed blocks and 8-aligned; `free_small` wrote the next link there.
                d.free_head = unsafe { slab.add(offset as usize).cast::<u32>().read() };
                offset
            };
            d.used += 1;
            (offset, d.used == d.capacity)
        });
        debug_assert!((offset as usize) < SLAB_BLOCKS[class] as usize * crate::BLOCK_BYTES);
        if full {
            self.unlink_partial(class, head);
        }
        self.slabs.classes[class].live_slots += 1;
        self.slabs.live_bytes += u64::from(SIZES[class]);
        // SAFETY: the slot lies inside the slab (checked above in debug builds; by construction of
        // the free chain and bump offset otherwise).
        Ok(unsafe { slab.add(offset as usize) })
    }

    /// Frees a slab slot.
    ///
    /// # Safety
    /// `ptr` is a live slot from [`Heap::alloc_small`].
    #[inline]
    pub(crate) unsafe fn free_small(&mut self, ptr: NonNull<u8>) {
        let mut head = self.arena.block_of(ptr);
        let mut d = self.arena.desc::<D>(head);
        if d.kind() == kind::TAIL {
            head -= d.blocks();
            d = self.arena.desc::<D>(head);
        }
        debug_assert_eq!(
            d.kind(),
            kind::SLAB,
            "free of a pointer that is not a slab slot"
        );
        let slab = self.arena.block_ptr(head);
        let offset = (ptr.as_ptr() as usize - slab.as_ptr() as usize) as u32;
        let (class, was_full, empty) = d.update(|d| {
            debug_assert_eq!(offset % d.slot_bytes, 0, "free of an interior pointer");
            // SAFETY: the caller guarantees `ptr` is a live slot of at least 8 bytes, which from
            // now on belongs to the heap; slots are 8-aligned.
            unsafe { ptr.cast::<u32>().write(d.free_head) };
            d.free_head = offset;
            let was_full = d.used == d.capacity;
            d.used -= 1;
            (d.class as usize, was_full, d.used == 0)
        });
        self.slabs.classes[class].live_slots -= 1;
        self.slabs.live_bytes -= u64::from(SIZES[class]);
        if was_full {
            self.push_partial(class, head);
        }
        if empty {
            if self.slabs.classes[class].partial_count > 1 {
                self.release_slab(class, head);
            } else {
                self.keep_empty_slab(class, head);
            }
        }
    }

    /// Remembers `head`, the class's only slab with a free slot, as its empty slab.
    #[cold]
    fn keep_empty_slab(&mut self, class: usize, head: u32) {
        self.slabs.empty[class] = head;
        self.slabs.empty_epoch[class] = self.decay.epoch;
        self.slabs.empty_classes |= 1 << class;
    }

    /// Gives an empty slab's blocks back to the free runs.
    fn release_slab(&mut self, class: usize, head: u32) {
        debug_assert_eq!(self.arena.desc::<D>(head).get().used, 0);
        self.unlink_partial(class, head);
        let blocks = SLAB_BLOCKS[class] as u32;
        self.slabs.classes[class].slabs -= 1;
        if self.slabs.empty[class] == head {
            self.slabs.empty[class] = NIL;
            self.slabs.empty_classes &= !(1 << class);
        }
        self.slabs.blocks -= blocks as u64;
        self.give_blocks(head, blocks);
    }

    /// Releases the kept empty slabs that emptied at least `age_epochs` decay epochs ago (0: all
    /// of them), at most `budget` of them; forgets those that are in use again. Returns the blocks
    /// given back.
    pub(crate) fn release_empty_slabs(&mut self, age_epochs: u64, budget: &mut u32) -> u64 {
        let mut released = 0;
        let mut bits = self.slabs.empty_classes;
        while bits != 0 && *budget > 0 {
            let class = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let empty = self.slabs.empty[class];
            if self.arena.desc::<D>(empty).get().used != 0 {
                self.slabs.empty[class] = NIL;
                self.slabs.empty_classes &= !(1 << class);
            } else if self.decay.epoch - self.slabs.empty_epoch[class] >= age_epochs {
                self.release_slab(class, empty);
                released += SLAB_BLOCKS[class] as u64;
                *budget -= 1;
            }
        }
        released
    }

    /// Blocks of the kept slabs that are still empty.
    pub(crate) fn empty_slab_blocks(&self) -> u64 {
        let mut blocks = 0;
        let mut bits = self.slabs.empty_classes;
        while bits != 0 {
            let class = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if self.arena.desc::<D>(self.slabs.empty[class]).get().used == 0 {
                blocks += SLAB_BLOCKS[class] as u64;
            }
        }
        blocks
    }

    #[cold]
    fn add_slab(&mut self, class: usize) -> Result<u32, HeapError> {
        let blocks = SLAB_BLOCKS[class] as u32;
        let head = self.take_blocks(blocks, kind::SLAB)?;
        self.arena.desc::<D>(head).update(|d| {
            d.free_head = NIL;
            d.aux = 0;
            d.used = 0;
            d.capacity = class::slab_capacity(class) as u16;
            d.class = class as u8;
            d.slot_bytes = SIZES[class];
        });
        self.slabs.classes[class].slabs += 1;
        self.slabs.blocks += blocks as u64;
        self.push_partial(class, head);
        Ok(head)
    }

    fn push_partial(&mut self, class: usize, head: u32) {
        let c = &mut self.slabs.classes[class];
        self.arena.list_push::<D>(&mut c.partial, head);
        c.partial_count += 1;
    }

    fn unlink_partial(&mut self, class: usize, head: u32) {
        let desc = self.arena.desc::<D>(head).get();
        let c = &mut self.slabs.classes[class];
        self.arena.list_unlink::<D>(&mut c.partial, &desc);
        c.partial_count -= 1;
    }
}
