//! Block descriptors: 32 bytes per 8 KiB block, two per cache line, at the head of each megablock.
//!
//! ```text
//!  megablock (1 MiB, 1 MiB-aligned)
//!  ┌──────────────── block 0 (8 KiB) ────────────────┬─ block 1 ─┬─ … ─┬─ block 127 ─┐
//!  │ desc 0 │ desc 1 │ … │ desc 127 │ (unused 4 KiB)  │   data    │     │    data     │
//!  └────────────────── 128 × 32 B = 4 KiB ───────────┴───────────┴─────┴─────────────┘
//!
//!  BlockDesc (32 bytes, little-endian fields, `repr(C)`)
//!   0        4        8        12       16       20     22     24   25    26    27  28       32
//!  ┌────────┬────────┬────────┬────────┬────────┬──────┬──────┬────┬─────┬─────┬───┬────────┐
//!  │free_hd │ next   │ prev   │ blocks │ aux    │ used │ cap  │kind│class│flags│ - │slot_sz │
//!  └────────┴────────┴────────┴────────┴────────┴──────┴──────┴────┴─────┴─────┴───┴────────┘
//!   free_hd  slab: byte offset of the first free slot from the slab start, or NIL
//!   next/prev block index of the neighbour in whatever list holds this head, or NIL
//!   blocks   head: length of the group/run in blocks; TAIL/FREE_TAIL: distance back to the head
//!   aux      slab: byte offset of the first never-used slot (bump); free run: its dirty blocks
//!   used/cap slab: live slots / slots
//!   kind     HEADER, FREE, FREE_TAIL, SLAB, GROUP, TAIL, CACHED (0 = never written)
//!   class    slab: size class
//!   flags    DIRTY: the block was handed out since it was last purged (may be resident)
//!   slot_sz  slab: slot bytes (a copy of SIZES[class], to save a table load on free)
//! ```
//!
//! The descriptor of the block holding any address `p` is found by arithmetic alone:
//! `megablock = p & !(1 MiB - 1)`, `index = (p - megablock) >> 13`,
//! `desc = megablock + index * DESC_BYTES`. Block indices are global (`offset_from_base >> 13`),
//! so a link is 4 bytes and a block's address is `base + index * 8 KiB`: no pointer to the block's
//! start, no owner pointer, no lookup table. GHC shrank its `bdescr` from 64 to 32 bytes the same way
//! (32-bit free offset, 32-bit links, derived start). `Heap<64>` pads each descriptor to 64 bytes so
//! the two layouts can be measured against each other; 128 × 64 B = 8 KiB still fits block 0.
//!
//! Invariants: a block's descriptor is meaningful only where the block-run walk in `blocks.rs`
//! reaches it: heads of groups, slabs and free runs, the TAIL descriptors of live groups and slabs,
//! and the last descriptor of a free run. Interior descriptors of free runs are stale.

/// Descriptor of one block. The field comments in the module block give their meaning.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockDesc {
    pub free_head: u32,
    pub next: u32,
    pub prev: u32,
    pub blocks: u32,
    pub aux: u32,
    pub used: u16,
    pub capacity: u16,
    pub kind: u8,
    pub class: u8,
    pub flags: u8,
    pub reserved: u8,
    pub slot_bytes: u32,
}

const _: () = assert!(std::mem::size_of::<BlockDesc>() == 32);
const _: () = assert!(std::mem::align_of::<BlockDesc>() == 4);
const _: () = assert!(crate::BLOCKS_PER_MEGABLOCK * 64 <= crate::BLOCK_BYTES);

/// "No block" in links and free-slot offsets.
pub const NIL: u32 = u32::MAX;

/// Descriptor kinds.
pub mod kind {
    /// Never written (a fresh, zeroed megablock).
    pub const UNSET: u8 = 0;
    /// Block 0 of a megablock: the descriptor area itself.
    pub const HEADER: u8 = 1;
    /// Head of a free run (`blocks` = run length, `aux` = dirty blocks in it).
    pub const FREE: u8 = 2;
    /// Last block of a free run of two or more (`blocks` = distance back to the head).
    pub const FREE_TAIL: u8 = 3;
    /// Head of a slab of small objects.
    pub const SLAB: u8 = 4;
    /// Head of a medium block group (one object).
    pub const GROUP: u8 = 5;
    /// Non-head block of a live slab or group (`blocks` = distance back to the head).
    pub const TAIL: u8 = 6;
    /// Head of a freed group parked in the quick cache, not yet coalesced.
    pub const CACHED: u8 = 7;
}

/// Descriptor flag bits.
pub const FLAG_DIRTY: u8 = 1;

/// A raw pointer to one descriptor inside committed arena memory.
///
/// Every accessor is safe: a `DescPtr` is only made by [`DescPtr::new`], whose caller promises the
/// address lies in the committed descriptor area of a megablock, and committed memory stays mapped
/// and writable for the heap's whole life. The fields are plain integers, so any bit pattern read is
/// a valid value; the heap is single-threaded (`!Sync`), so there are no data races.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DescPtr(*mut BlockDesc);

impl DescPtr {
    /// # Safety
    /// `ptr` is 4-aligned and points at a descriptor slot of a committed megablock of a live heap,
    /// and the `DescPtr` is not used after that heap is dropped.
    #[inline(always)]
    pub unsafe fn new(ptr: *mut BlockDesc) -> DescPtr {
        DescPtr(ptr)
    }

    #[inline(always)]
    pub fn get(self) -> BlockDesc {
        // SAFETY: `new`'s contract: the slot is mapped, aligned and only this thread touches it.
        unsafe { self.0.read() }
    }

    #[inline(always)]
    pub fn set(self, desc: BlockDesc) {
        // SAFETY: as in `get`.
        unsafe { self.0.write(desc) }
    }

    /// Applies `f` to the descriptor in place.
    #[inline(always)]
    pub fn update<R>(self, f: impl FnOnce(&mut BlockDesc) -> R) -> R {
        // SAFETY: as in `get`; the reference lives only for the call and no other reference to this
        // descriptor exists meanwhile (the heap's methods take `&mut self` and hold no other).
        unsafe { f(&mut *self.0) }
    }

    #[inline(always)]
    pub fn kind(self) -> u8 {
        // SAFETY: as in `get`; a field read through the raw pointer creates no reference.
        unsafe { (*self.0).kind }
    }

    #[inline(always)]
    pub fn blocks(self) -> u32 {
        // SAFETY: as in `kind`.
        unsafe { (*self.0).blocks }
    }

    pub fn as_ptr(self) -> *mut BlockDesc {
        self.0
    }
}
