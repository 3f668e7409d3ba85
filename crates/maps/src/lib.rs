//! Compact maps for densekv: where every key of the keyspace and every field of a large hash or
//! set lives.
//!
//! ```text
//!  PageHash   bytes -> (meta, bytes)   extendible hash over 8 KiB heap pages       pagehash.rs
//!  IntMap     u64 -> u64               same table, entries store only the key bits  intmap.rs
//!  IntSet     u64                      IntMap with zero-byte values                 intmap.rs
//!  SmallMap   <= 8 pairs               one packed heap allocation, 8 hints in a u64 smallmap.rs
//!
//!  table.rs   directory, buckets ("tenants"), split / shed / merge, scan, sampling
//!  compact.rs compaction of a thinned table in bounded steps: buddy merges, repacking, freeing
//!  page.rs    the 8 KiB page: header, run index (128 runs, 16 per bucket slot), dense runs
//!  raw.rs     the unsafe core: heap pointers to pages and blobs
//!  hash.rs    seeded hashing (foldhash for bytes, a keyed bijective mix for u64)
//!  hint.rs    SWAR matching of eight one-byte hints at once
//!  varint.rs  LEB128 and minimal little-endian integers
//! ```
//!
//! The maps do not own the heap: mutating calls take `&mut heap::Heap` (one heap per shard, shared
//! by the keyspace and every collection in it), reads that may touch out-of-line bytes take
//! `&Heap`. `Drop` cannot reach the heap, so `destroy(heap)` frees a map; a map dropped without it
//! leaks its pages into the heap, which is reclaimed when the shard's heap dies.
//!
//! Removals give pages back by themselves only when a page falls under a quarter full; after
//! uniform removals the owner calls `compact_step` while `sparse()` holds (`table.rs`,
//! "Compaction"). Blobs (out-of-line keys and values) are heap slab slots that removals leave
//! scattered; `PageHash::defrag_step` moves the ones the heap flags so that sparse slabs empty.
//! IntMap and IntSet entries own nothing outside their pages, so they need no such step.
//!
//! A value grows in place with `PageHash::edit_value`: its blob has `capacity_for(len)` bytes,
//! a pure function of the length with under 1/8 slack past 32 KiB (`pagehash.rs`).
//!
//! The byte layouts, the split/merge/compaction rules and the bytes-per-entry arithmetic are in
//! `docs/page-format.md`.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod flat;
mod hash;
mod hint;
mod intmap;
mod page;
mod pagehash;
mod raw;
mod smallmap;
mod table;
pub mod varint;

pub use hash::{BytesHasher, DEPTH_LIMIT};
pub use intmap::{IntMap, IntSet};
pub use page::{AREA_BYTES, PAGE_BYTES, PIECE_BYTES, PIECE_COUNT};
pub use pagehash::{PageHash, VALUE_EXACT_MAX_BYTES, ValueRef, capacity_for};
pub use raw::prefetch;
pub use smallmap::{HintStats, SmallInsert, SmallMap, hint_stats, reset_hint_stats};
pub use table::{CompactProgress, Config};

/// What can go wrong in a map operation (input or the heap; never a bug, which panics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// The heap could not provide memory.
    OutOfMemory,
    /// A page at `depth_max` has no room left for the entry (only reachable with a
    /// lowered `depth_max` or a flood of colliding hashes).
    Full,
}

impl std::fmt::Display for MapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MapError::OutOfMemory => f.write_str("out of memory"),
            MapError::Full => f.write_str("map is full at its maximum depth"),
        }
    }
}

impl std::error::Error for MapError {}

impl From<heap::HeapError> for MapError {
    fn from(_: heap::HeapError) -> Self {
        MapError::OutOfMemory
    }
}

/// The per-entry metadata byte the store keeps with each value (the maps store it, never read
/// it; its tag values are the store's `encoding.rs`).
///
/// ```text
///  bit  7     | 6 5 | 4       | 3 2 1 0
///       epoch | access level | has TTL | value type / encoding tag
/// ```
/// The epoch bit marks which side of a running snapshot an entry is on (the store's
/// `snapshot.rs`); the maps copy it with the entry like every other bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Meta(pub u8);

impl Meta {
    /// Meta from its parts (`tag < 16`, `level < 4`), epoch bit clear.
    pub fn new(tag: u8, has_ttl: bool, level: u8) -> Self {
        assert!(tag < 16 && level < 4);
        Meta(tag | (u8::from(has_ttl) << 4) | (level << 5))
    }

    pub fn tag(self) -> u8 {
        self.0 & 15
    }

    pub fn has_ttl(self) -> bool {
        self.0 & 16 != 0
    }

    /// The access level eviction reads (the store's LRU or LFU class, 0..=3).
    pub fn level(self) -> u8 {
        (self.0 >> 5) & 3
    }

    pub fn epoch(self) -> bool {
        self.0 & 128 != 0
    }

    #[must_use]
    pub fn with_tag(self, tag: u8) -> Self {
        assert!(tag < 16);
        Meta((self.0 & !15) | tag)
    }

    #[must_use]
    pub fn with_ttl(self, has_ttl: bool) -> Self {
        Meta((self.0 & !16) | (u8::from(has_ttl) << 4))
    }

    #[must_use]
    pub fn with_level(self, level: u8) -> Self {
        assert!(level < 4);
        Meta((self.0 & !(3 << 5)) | (level << 5))
    }

    #[must_use]
    pub fn with_epoch(self, epoch: bool) -> Self {
        Meta((self.0 & !128) | (u8::from(epoch) << 7))
    }
}

/// What one [`PageHash::defrag_step`] did, in the terms of Redis's INFO
/// (`active_defrag_hits` / `active_defrag_misses`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefragCounts {
    /// Blobs moved out of a sparse slab.
    pub hits: u64,
    /// Blobs checked and left where they are: not hinted by the heap, or no memory to move
    /// them to.
    pub misses: u64,
}

impl std::ops::AddAssign for DefragCounts {
    fn add_assign(&mut self, other: Self) {
        self.hits += other.hits;
        self.misses += other.misses;
    }
}

/// Size and shape of a page-based map.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub page_count: usize,
    pub global_depth: u8,
    /// Buckets (tenants) over all pages.
    pub bucket_count: usize,
    /// Used payload bytes over payload capacity, all pages.
    pub fill_ratio: f64,
    pub directory_bytes: usize,
}
