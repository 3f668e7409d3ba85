//! The extendible-hash core shared by [`crate::PageHash`] and [`crate::IntMap`]: directory, pages,
//! tenants, splits, sheds, merges, iteration, scan and sampling. The entry encoding is the
//! [`Codec`]'s business; this file never interprets entry bytes itself.
//!
//! ```text
//!  directory: Vec<u64>, 2^global_depth words, slot = top global_depth bits of the hash
//!  word:  | page address (8 KiB-aligned, bits 13..63) | 0000 | tenant: 3 | depth: 6 |
//!          bits 63..13                                          8..6        5..0
//!
//!  bucket = (prefix, depth): the hashes whose top `depth` bits equal `prefix`; it owns the
//!  2^(global_depth - depth) consecutive slots starting at prefix << (global_depth - depth).
//!  page   = up to 8 buckets ("tenants"), each in one slot of the page's tenant table;
//!           slot t owns runs 16t..16t+16 (groups 2t and 2t+1), an entry's run is 16t + home
//! ```
//!
//! # Why pages hold several buckets
//! Classic extendible hashing has one bucket per page; a full page splits into two half-full
//! pages and pages average ln 2 = 69% full. With uniform hashing all pages fill at the same pace,
//! so at a given size the whole table sits somewhere on a 50%..100% sawtooth. Here a bucket is
//! kept around an eighth of a page: when a page has no room for an entry it *sheds* one of its
//! buckets to the map's spare page (a page with room) or to a fresh page, so pages run between
//! ~7/8 and full, and spares fill up with shed buckets until they are full too. A page that is
//! down to a single bucket splits that bucket three levels deep (into eight) in place, first
//! doubling the directory if needed; a bucket grown past an eighth of a page is split in place
//! before anything is shed. No page is ever rehashed as a whole table; one insert moves at most
//! one bucket (an eighth of a page on average, bounded by a page).
//!
//! Which bucket is shed: the one closest to the spare's free bytes per free tenant slot. A
//! spare has eight slots; filled with small buckets it ran out of slots ~40% full, and pages
//! averaged 0.92 full; sized to the spare, spares fill and pages average ~0.94 (measured, 1M
//! 16+16-byte strings).
//!
//! # Insert, in order
//! 1. `place`: append to the entry's home run if the page has the room anywhere (the page slides
//!    its groups to bring the room to the run, `page.rs`);
//! 2. else `make_room` (split and/or shed), then retry; at most `INSERT_ROUNDS_MAX` rounds.
//!
//! # Why a bucket owns its runs
//! A bucket's entries are exactly the runs of its tenant slot, so every bucket's size is two
//! group sizes, a move copies two groups to another page as they are (entry bytes depend on
//! neither the slot nor the page), a split hashes the split bucket's entries only, and a scan
//! step reads sixteen runs. When any run could hold any bucket's entries, a make-room round
//! hashed every key of the page to learn their buckets and compacted every group to pull one
//! bucket out: 1.23G instructions for 300k 16+16-byte inserts, against 0.78G now (IntMap: 1.22G
//! against 0.55G; `insert_profile` under callgrind). The price: a page with fewer than eight
//! buckets leaves the runs of its empty slots unused, so its runs hold ~10% more entries
//! (entry-weighted mean 2.9 against 2.6 at 300k strings; pages hold 7 buckets most of the time)
//! and a lookup's guess of where its run lies is rougher: hits cost the same instructions, and
//! `maps_bench` lookups took ~8% longer.
//!
//! # Bytes per entry
//! Pages are the only per-entry cost besides the directory (8 B per slot, ~8 slots per page):
//! `bytes/entry = 8192 / (entries per page) + ~0.6`. A page's run area is 7789 B; at ~0.94 fill
//! it holds ~209 16+16-byte string entries (34 B + hint: 39.9 B/entry measured) or ~488 random
//! u64 pairs (15 B with the hint). Redis's dict spends 24 B on the dictEntry and 8-16 B on the
//! bucket array before the key and value objects.
//!
//! Invariants (checked by `validate`):
//! - every slot's word names a page in `pages`, a live tenant slot of it, and that tenant's depth;
//!   the tenant's prefix equals `slot >> (global_depth - depth)`; each tenant owns exactly
//!   2^(global_depth - depth) slots;
//! - every entry lives in a run of a live tenant slot `t`, its hash has that tenant's prefix, its
//!   hint is `hint_of(h)`, and its run is `16t + home_of(h)` (a lookup reads exactly one run);
//! - `len == sum of the pages' entry counts`; `used_bytes == sum of the pages' used_bytes` (kept
//!   by every call that changes a page, so `fill_ratio` and `sparse` read no page);
//!   `at_global` counts the tenants whose depth is the global depth;
//! - the compaction bins are pages of the map, none named twice; no page has zero tenants (a
//!   page whose last bucket moves out is freed at once).
//!
//! # Merging
//! A bucket (p, d) and its *buddy* (p ^ 1, d) (same depth, prefix differing in the last bit)
//! merge into (p >> 1, d - 1): both are brought to one page, then the odd one's runs join the
//! even one's runs of the same homes (`rebuild_merged`; IntMap entries are re-encoded, since
//! they store the hash bits below their depth). Empty pages are freed, and the directory halves
//! while no bucket is at the global depth (then every pair of sibling slots holds one word).
//! Merges happen in two places:
//! - *On removal.* After a removal leaves a page under a quarter full, each of its buckets
//!   merges with its buddy while the two fit in one page under three quarters full, moving one
//!   of them across pages when they live apart; buckets that cannot merge move to the spare page
//!   (or the page becomes the spare). So a map emptied down to a few entries ends as one page at
//!   depth 0.
//! - *In compaction* (below), where the merged bucket must stay within a quarter page.
//!
//! # Compaction
//! Uniform removals thin every page at the same pace: removing every other key of a full map
//! leaves each page ~47% full, no page ever falls under the quarter that merges on removal,
//! and the map keeps every page (1M 16+16-byte strings: `memory_bytes` stays 1.00 of the full
//! load). And pages cannot simply be refilled: a page holds at most eight buckets, and eight
//! buckets halved by removals fill half a page. So compaction first merges buddies, then moves
//! buckets out of sparse pages into a few pages being filled, the *bins*, and frees the pages
//! that empty (`compact.rs`). The owner calls [`Table::compact_step`] with a budget of work
//! units from a cron, while [`Table::sparse`] holds:
//!
//! ```text
//!  sparse   <=> pages >= 2 and (a pass is under way, or the last pass freed > pages / 32,
//!               or used_bytes < 3/4 * (pages - 1) * AREA and no fruitless pass since the
//!               map last grew a page or lost a page's worth of bytes)
//!  merge    (p, d) + (p ^ 1, d) -> (p >> 1, d - 1)  iff  size(p) + size(p ^ 1) <= AREA / 4
//!               and (used(page(p)) < 4/5 AREA or used(page(p ^ 1)) < 4/5 AREA
//!                    or d == global_depth and 2^global_depth > 32 * pages)
//!  evacuate bucket b of page P, P not a bin, used(P) < 7/8 AREA:
//!               b -> the bin B minimising free(B) with free(B) >= size(b) and a free slot;
//!               no such bin: P becomes a bin (up to 4 bins; the fullest one is dropped)
//!  step     units = visits + merges + moves <= budget + VISIT_UNITS_MAX   (= budget + 14)
//! ```
//!
//! Hysteresis against the splits of `make_room`: an insert splits a bucket only when its page
//! is full (one past AREA/8 where the directory reaches; one past AREA/4 even if that doubles
//! the directory); compaction merges only up to AREA/4, only where a page is sparse, and the
//! owner runs it only while the map is sparse, which a finished run leaves behind (fill ~0.95
//! against the 3/4 that starts one). A pass walks the hash space with a scan
//! cursor, so the SCAN guarantee below holds across compaction steps as across removals: a
//! move keeps a bucket's prefix and depth, and a merge keeps the buckets tiling the hash space.
//!
//! Measured, 1M 16-byte `key:%012d` keys with 16-byte values (`examples/compact_profile.rs`):
//! after removing every other key and compacting, `memory_bytes` is 0.50 of the full load (fill
//! 0.95, 39.9 B/entry as when freshly loaded) after ~120 ms; after removing nine keys in ten,
//! 0.10; after removing all, one page. Random u64 pairs in an IntMap: 0.49, 0.11, one page.
//!
//! # Scan
//! The cursor is a position in hash space. A step visits the bucket containing the cursor and
//! returns the position just past that bucket. Buckets always tile the hash space, so every hash
//! h >= cursor is in the bucket visited at the step whose range contains it, however buckets split
//! or merge between steps: Redis SCAN's guarantee, with duplicates only after merges. Two walks
//! write as they scan, in place and without moving an entry: `scan_setting_first_bytes` (the
//! meta byte) and `scan_rewriting` (PageHash's defragmenter, writing moved blobs' handles).

use crate::MapError;
use crate::hash::{DEPTH_LIMIT, TENANT_RUNS, hint_of, home_of, prefix_of, run_of};
use crate::page::{
    AREA_BYTES, ENTRY_BUF_BYTES, Edit, GROUP_RUNS, Kind, PAGE_BYTES, PIECE_COUNT, Page,
    RUN_COUNT_MAX, TENANT_SLOTS, Tenants,
};
use crate::raw::PagePtr;
use heap::Heap;

// Compaction works on the directory and the pages as privately as the rest of this file, so it
// is a child module; its own file keeps this one readable.
#[path = "compact.rs"]
mod compact;
pub use compact::CompactProgress;

/// Where an entry is being placed: what a position-dependent encoding needs to know.
#[derive(Clone, Copy, Debug)]
pub struct Placement {
    pub depth: u8,
}

/// The entry encoding of one map kind.
pub trait Codec {
    const KIND: Kind;
    /// Whether an entry's bytes depend on its bucket's depth (IntMap stores only the hash bits
    /// below it): splits and merges then re-encode the bucket's entries. Entries never depend
    /// on their tenant slot, so moving a bucket to another page copies its bytes.
    const ENCODES_DEPTH: bool;
    /// Length of the entry starting at `bytes[0]` (from its own bytes: walking a run reads
    /// nothing else).
    fn len_of(bytes: &[u8]) -> usize;
    /// Full 64-bit hash of an entry with `hint` stored in run `piece` of a page with `tenants`
    /// (the run names the entry's tenant slot, `piece / 16`, and its home, `piece % 16`).
    fn hash_of(&self, heap: &Heap, tenants: &Tenants, piece: usize, hint: u8, bytes: &[u8]) -> u64;
    /// Encodes the entry `bytes` (full hash `h`) for `at`; returns its length in `out`; a
    /// deeper `at.depth` never makes it longer.
    fn reencode(
        &self,
        bytes: &[u8],
        h: u64,
        at: Placement,
        out: &mut [u8; ENTRY_BUF_BYTES],
    ) -> usize;
    /// Frees whatever the entry owns outside its page.
    fn release(heap: &mut Heap, bytes: &[u8]);
    /// Whether all entries of a run have one length (IntMap). A lookup then finds its
    /// candidate at index x length instead of walking the entries before it; writers keep the
    /// invariant through [`Codec::widths`] and [`Codec::write_width`].
    const UNIFORM_RUNS: bool = false;
    /// The lengths (bit n: n bytes; entries are at most 120) the entry `bytes` with hash `h`
    /// can be written in at `at`. A codec that never pads writes an entry only as it is.
    fn widths(&self, bytes: &[u8], h: u64, at: Placement) -> u128 {
        let _ = (h, at);
        1 << bytes.len()
    }
    /// Writes the entry `bytes` with hash `h` for `at` in exactly `width` bytes (a length
    /// [`Codec::widths`] gives); returns `width`.
    fn write_width(
        &self,
        bytes: &[u8],
        h: u64,
        at: Placement,
        width: usize,
        out: &mut [u8; ENTRY_BUF_BYTES],
    ) -> usize {
        let _ = (h, at);
        assert_eq!(width, bytes.len(), "an entry is written only as it is");
        out[..width].copy_from_slice(bytes);
        width
    }
}

/// Where a found entry is.
#[derive(Clone, Copy, Debug)]
pub struct Loc {
    pub page: PagePtr,
    pub piece: usize,
    pub index: usize,
    /// Offset in the run's entry bytes.
    pub offset: usize,
    pub len: usize,
    /// The entry's first byte in the page (valid until the page changes).
    pub at: usize,
}

/// The run area's size: what `used_bytes` is measured against.
pub const PAYLOAD_BYTES: usize = AREA_BYTES;
/// A page under this is underfull: its buckets move out after a removal.
const FILL_LOW_BYTES: usize = PAYLOAD_BYTES / 4;
/// Buddy buckets merge only in pages under this (hysteresis against the split at full).
const COALESCE_BELOW_BYTES: usize = PAYLOAD_BYTES * 3 / 4;
/// Levels a lone bucket splits by at once: into 2^3 = 8.
const SPLIT_LEVELS: u8 = 3;
/// Bound on make-room rounds in one insert (each round sheds a bucket or splits one).
const INSERT_ROUNDS_MAX: usize = 4 * (DEPTH_LIMIT as usize) + 64;
const WORD_LOW_MASK: u64 = (PAGE_BYTES as u64) - 1;
/// How many lookups ahead [`Table::pipelined`] starts a lookup's loads: a miss to memory
/// (~100 ns here) over a lookup's compute (~10-20 ns) wants about eight in flight.
pub const PIPELINE_AHEAD: usize = 8;

/// Map-level tunables.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Bound on the pieces a lookup may examine (1..=128). Every entry lives in the one run its
    /// bucket's slot and hash name, so a lookup examines exactly one run whatever this says;
    /// the field is kept for configuration compatibility.
    pub probe_count_max: u8,
    /// Deepest bucket (and directory) depth, 0..=32. At this depth a full page reports
    /// [`MapError::Full`].
    pub depth_max: u8,
    /// `Some(seed)`: reproducible hashing (tests, benchmarks). `None`: per-process random seed.
    pub seed: Option<u64>,
    /// Test hook: ANDed into every byte-string hash to force collisions. Keep `u64::MAX`.
    #[doc(hidden)]
    pub hash_mask: u64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            probe_count_max: 16,
            depth_max: DEPTH_LIMIT,
            seed: None,
            hash_mask: u64::MAX,
        }
    }
}

#[inline]
fn word(page: PagePtr, tenant: usize, depth: u8) -> u64 {
    page.addr() | ((tenant as u64) << 6) | u64::from(depth)
}

#[inline]
fn unword(w: u64) -> (PagePtr, usize, u8) {
    (
        PagePtr::from_addr(w & !WORD_LOW_MASK),
        ((w >> 6) & 7) as usize,
        (w & 63) as u8,
    )
}

/// Borrow a page of this table for reading.
#[inline]
fn pg<'a>(ptr: PagePtr) -> &'a Page {
    // SAFETY: every `PagePtr` reaching here is in `Table::pages` (live until `free_page`), and
    // the table hands out page references only for the duration of a `&self`/`&mut self`
    // borrow, never a `&mut Page` to the same page at the same time (callers keep at most one
    // mutable page reference, and `move_tenant` asserts its two pages differ).
    unsafe { ptr.get() }
}

/// Borrow a page of this table for writing.
#[inline]
#[allow(clippy::mut_from_ref)]
/// The scan cursor just past the bucket in tenant slot `tenant` of `page` at `depth` (0 when it
/// ends the hash space).
fn bucket_end(page: &Page, tenant: usize, depth: u8) -> u64 {
    if depth == 0 {
        return 0;
    }
    let (prefix, _) = page.tenant(tenant).expect("live tenant");
    let end = (u128::from(prefix) + 1) << (64 - u32::from(depth));
    if end >> 64 != 0 { 0 } else { end as u64 }
}

fn pg_mut<'a>(ptr: PagePtr) -> &'a mut Page {
    // SAFETY: as in `pg`; callers hold no other reference to this page while they use it.
    unsafe { ptr.get_mut() }
}

/// The extendible hash over pages; generic in the entry encoding.
#[derive(Debug)]
pub struct Table<C> {
    pub codec: C,
    dir: Vec<u64>,
    global_depth: u8,
    pages: Vec<PagePtr>,
    spare: Option<PagePtr>,
    len: usize,
    probe_count_max: u8,
    depth_max: u8,
    /// Buckets whose depth is the global depth. The directory can halve while there are none:
    /// a removal that leaves a page underfull asks, and scanning the directory to answer made
    /// each such removal O(directory) (5% of ZPOPMIN draining a 400k-member sorted set).
    at_global: u32,
    /// Sum of the pages' `used_bytes`, kept by every call that changes a page, so that
    /// [`Table::fill_ratio`] and [`Table::sparse`] read no page (a cron asks them of every
    /// large map; summing 5,000 page headers per question is a cache miss each).
    used_bytes: usize,
    /// Where the compaction walk is and which pages it fills (`compact.rs`). Boxed: a large
    /// hash or set is a table too, and the store counts `size_of` of each.
    compact: Box<compact::Compaction>,
}

impl<C: Codec> Table<C> {
    pub fn new(heap: &mut Heap, codec: C, config: &Config) -> Result<Self, MapError> {
        assert!(
            (1..=PIECE_COUNT).contains(&(config.probe_count_max as usize)),
            "probe_count_max in 1..=128"
        );
        assert!(config.depth_max <= DEPTH_LIMIT, "depth_max <= 32");
        let mut table = Self {
            codec,
            dir: Vec::new(),
            global_depth: 0,
            pages: Vec::new(),
            spare: None,
            len: 0,
            probe_count_max: config.probe_count_max,
            depth_max: config.depth_max,
            at_global: 1,
            used_bytes: 0,
            compact: Box::default(),
        };
        let page = table.new_page(heap)?;
        pg_mut(page).set_tenant(0, Some((0, 0)));
        table.dir.push(word(page, 0, 0));
        Ok(table)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes this table holds: its pages plus directory and page list (not the codec's blobs).
    pub fn memory_bytes(&self) -> usize {
        self.pages.len() * PAGE_BYTES + self.dir.capacity() * 8 + self.pages.capacity() * 8
    }

    /// Sum of the pages' `used_bytes` over their payload capacity (O(1): the sum is kept).
    pub fn fill_ratio(&self) -> f64 {
        self.used_bytes as f64 / (self.pages.len().max(1) * PAYLOAD_BYTES) as f64
    }

    /// Records that a page's `used_bytes` went from `before` to `after`. The sum includes
    /// `before`, so it cannot underflow.
    #[inline]
    fn account(&mut self, before: usize, after: usize) {
        self.used_bytes = self.used_bytes + after - before;
    }

    #[inline]
    fn locate(&self, h: u64) -> (PagePtr, usize, u8) {
        let slot = if self.global_depth == 0 {
            0
        } else {
            (h >> (64 - u32::from(self.global_depth))) as usize
        };
        unword(self.dir[slot])
    }

    /// One stage of a lookup of hash `h` done ahead of time, so that lookups of several keys
    /// overlap their cache misses instead of taking them one after another: stage 0 starts
    /// loading the directory word, 1 the page's index slot, 2 the run. Each stage reads what
    /// the previous one loaded; calling them in order over a batch of keys (all keys stage 0,
    /// then all stage 1, ...) gives each load a batch's time to arrive.
    #[inline]
    pub fn prefetch(&self, h: u64, stage: u8) {
        match stage {
            0 => {
                let slot = if self.global_depth == 0 {
                    0
                } else {
                    (h >> (64 - u32::from(self.global_depth))) as usize
                };
                crate::raw::prefetch(&self.dir[slot]);
            }
            1 => {
                let (ptr, tenant, _) = self.locate(h);
                pg(ptr).prefetch_index(run_of(tenant, h));
            }
            _ => {
                let (ptr, tenant, _) = self.locate(h);
                pg(ptr).prefetch_run_at(run_of(tenant, h));
            }
        }
    }

    /// Runs `lookup(i, hash(i))` for `i` in `0..n`, in order, with the cache misses of later
    /// lookups started early: stage 1 (the index slot) [`PIPELINE_AHEAD`] lookups ahead and
    /// stage 2 (the run) half as far ahead, so a lookup finds its lines loaded, as the CPU
    /// overlaps the misses of a flat table's independent probes by itself. Each hash is
    /// computed once.
    #[inline]
    pub fn pipelined(
        &self,
        n: usize,
        hash: impl Fn(usize) -> u64,
        mut lookup: impl FnMut(usize, u64),
    ) {
        const RING: usize = 2 * PIPELINE_AHEAD;
        let mut ring = [0u64; RING];
        for j in 0..n.min(PIPELINE_AHEAD) {
            ring[j] = hash(j);
            self.prefetch(ring[j], 1);
        }
        for &h in &ring[..n.min(PIPELINE_AHEAD / 2)] {
            self.prefetch(h, 2);
        }
        for i in 0..n {
            let j = i + PIPELINE_AHEAD;
            if j < n {
                ring[j % RING] = hash(j);
                self.prefetch(ring[j % RING], 1);
            }
            let k = i + PIPELINE_AHEAD / 2;
            if k < n {
                self.prefetch(ring[k % RING], 2);
            }
            lookup(i, ring[i % RING]);
        }
    }

    /// Finds the entry with hash `h` that `eq(depth, bytes)` accepts (`depth` of the bucket
    /// `h` is in); `eq` gets the bytes from the candidate on and returns the entry's length if
    /// it matches.
    #[inline(always)]
    pub fn find(&self, h: u64, mut eq: impl FnMut(u8, &[u8]) -> Option<usize>) -> Option<Loc> {
        let (ptr, tenant, depth) = self.locate(h);
        let page = pg(ptr);
        let (run, hint) = (run_of(tenant, h), hint_of(h));
        page.prefetch_run(run);
        // Every entry lives in its home run: the one run is the whole probe.
        let (index, offset, len, at) = page.find(
            run,
            hint,
            C::UNIFORM_RUNS,
            |b| C::len_of(b),
            |b| eq(depth, b),
        )?;
        Some(Loc {
            page: ptr,
            piece: run,
            index,
            offset,
            len,
            at,
        })
    }

    /// The bytes of a found entry.
    #[allow(clippy::unused_self)] // the borrow of `self` bounds how long the page bytes are lent
    pub fn entry(&self, loc: &Loc) -> &[u8] {
        pg(loc.page).bytes_at(loc.at, loc.len)
    }

    /// The placement `loc` has (for re-encoding an entry where it is).
    #[allow(clippy::unused_self)] // keeps `loc` tied to this table's pages
    pub fn placement_at(&self, loc: &Loc) -> Placement {
        let tenant = loc.piece / TENANT_RUNS;
        let depth = pg(loc.page).tenant(tenant).expect("live tenant").1;
        Placement { depth }
    }

    /// Overwrites a found entry in place if the page has room; false if not (nothing changed).
    pub fn replace(&mut self, loc: &Loc, entry: &[u8]) -> bool {
        let page = pg_mut(loc.page);
        let before = page.used_bytes();
        let done = page.replace(loc.piece, loc.offset, loc.len, entry);
        self.account(before, page.used_bytes());
        done
    }

    /// Removes a found entry (the caller released what it owns), then merges if underfull.
    pub fn remove(&mut self, heap: &mut Heap, loc: &Loc) {
        self.remove_unmerged(loc);
        if pg(loc.page).used_bytes() < FILL_LOW_BYTES {
            self.after_underfull(heap, loc.page);
        }
    }

    /// Removes a found entry without merging (it is about to be re-inserted).
    pub fn remove_unmerged(&mut self, loc: &Loc) {
        pg_mut(loc.page).remove(loc.piece, loc.index, loc.offset, loc.len);
        // The hint and the entry's bytes leave the page.
        self.used_bytes -= 1 + loc.len;
        self.len -= 1;
    }

    /// The config this table was made with (seed aside).
    pub fn config(&self) -> Config {
        Config {
            probe_count_max: self.probe_count_max,
            depth_max: self.depth_max,
            ..Config::default()
        }
    }

    /// Size and shape, for tests, benchmarks and INFO.
    pub fn shape(&self) -> crate::Shape {
        crate::Shape {
            page_count: self.pages.len(),
            global_depth: self.global_depth,
            bucket_count: self.pages.iter().map(|&p| pg(p).tenant_count()).sum(),
            fill_ratio: self.fill_ratio(),
            directory_bytes: self.dir.capacity() * 8,
        }
    }

    /// Diagnostics: (mean runs probed by a hit, mean runs probed by a miss). Every entry lives
    /// in its home run, so both are 1 whenever the map holds entries; kept for INFO and the
    /// benchmarks, which printed the piece-bin format's probe lengths.
    #[allow(clippy::unused_self)]
    pub fn probe_stats(&self, _heap: &Heap) -> (f64, f64) {
        (1.0, 1.0)
    }

    /// Every entry in page order: `(page, piece, hint, bytes)`.
    pub fn entries(&self) -> Entries<'_, C> {
        Entries {
            table: self,
            page: 0,
            piece: 0,
            index: 0,
            offset: 0,
        }
    }

    /// Inserts an entry known to be absent; `encode(placement, out)` writes it for a placement.
    pub fn insert_new(
        &mut self,
        heap: &mut Heap,
        h: u64,
        mut encode: impl FnMut(Placement, &mut [u8; ENTRY_BUF_BYTES]) -> usize,
    ) -> Result<(), MapError> {
        for _ in 0..INSERT_ROUNDS_MAX {
            let (ptr, tenant, depth) = self.locate(h);
            let page = pg_mut(ptr);
            let before = page.used_bytes();
            if place(&self.codec, heap, page, h, tenant, depth, &mut encode) {
                // More than the entry when its run was rewritten in another length (IntMap).
                self.account(before, page.used_bytes());
                self.len += 1;
                return Ok(());
            }
            let run_full = page.piece_count(run_of(tenant, h)) >= RUN_COUNT_MAX;
            self.make_room(heap, ptr, tenant, run_full)?;
        }
        Err(MapError::Full)
    }

    fn new_page(&mut self, heap: &mut Heap) -> Result<PagePtr, MapError> {
        let ptr = PagePtr::alloc(heap)?;
        pg_mut(ptr).init(C::KIND, self.pages.len() as u32);
        self.pages.push(ptr);
        self.compact.grew();
        Ok(ptr)
    }

    /// Frees a page none of whose tenants is left (so none of its bytes is used).
    fn free_page(&mut self, heap: &mut Heap, ptr: PagePtr) {
        let index = pg(ptr).page_index();
        assert_eq!(self.pages[index], ptr);
        debug_assert_eq!(pg(ptr).used_bytes(), 0, "a freed page holds no entry");
        self.compact.forget(ptr);
        self.pages.swap_remove(index);
        if let Some(&moved) = self.pages.get(index) {
            pg_mut(moved).set_page_index(index);
        }
        if self.spare == Some(ptr) {
            self.spare = None;
        }
        // SAFETY: the page came from `new_page`, was just removed from `pages` and no directory
        // slot names it (all its tenants moved out), so nothing uses it after this.
        unsafe { ptr.free(heap) };
    }

    /// Points every slot of bucket (prefix, depth) at `w`.
    fn set_bucket(&mut self, prefix: u32, depth: u8, w: u64) {
        let shift = u32::from(self.global_depth - depth);
        let start = (prefix as usize) << shift;
        self.dir[start..start + (1usize << shift)].fill(w);
    }

    fn double(&mut self) {
        assert!(self.global_depth < self.depth_max);
        let old = std::mem::take(&mut self.dir);
        self.dir = old.iter().flat_map(|&w| [w, w]).collect();
        self.global_depth += 1;
        self.at_global = 0;
    }

    fn try_halve(&mut self) {
        // Bounded: the depth drops by one per round. With no bucket at the global depth, every
        // bucket owns an even run of slots, so each pair of sibling slots holds one word.
        while self.global_depth > 0 && self.at_global == 0 {
            debug_assert!(self.dir.chunks_exact(2).all(|pair| pair[0] == pair[1]));
            self.dir = self.dir.iter().step_by(2).copied().collect();
            self.global_depth -= 1;
            // A bucket at the global depth owns exactly one slot: count them in the pass the
            // halving already made over the directory.
            let g = u64::from(self.global_depth);
            self.at_global = self.dir.iter().filter(|&&w| w & 63 == g).count() as u32;
        }
    }

    /// Makes room for an insert into `tenant` of page `ptr`, which has no room for it: the page
    /// is full, or (`run_full`) the entry's run holds `RUN_COUNT_MAX` entries.
    fn make_room(
        &mut self,
        heap: &mut Heap,
        ptr: PagePtr,
        tenant: usize,
        run_full: bool,
    ) -> Result<(), MapError> {
        let page = pg(ptr);
        if run_full {
            // Only splitting the bucket spreads its run over more runs; a page without a free
            // slot first sheds another bucket to make one.
            let depth = page.tenant(tenant).expect("live tenant").1;
            if depth >= self.depth_max {
                return Err(MapError::Full);
            }
            if page.free_tenant_slot().is_some() {
                self.split_in_place(heap, ptr, tenant, 1);
                return Ok(());
            }
            return self.shed(heap, ptr, Some(tenant));
        }
        if page.tenant_count() == 1 {
            let depth = page.tenant(tenant).expect("live tenant").1;
            // The page is full to its last byte (an insert may use any free byte of it), so a
            // lone bucket splits only when it really fills a page: a flood of hashes sharing
            // their prefix bits doubles the directory once per page of such keys, up to
            // `depth_max`, where the map reports Full.
            if depth >= self.depth_max {
                return Err(MapError::Full);
            }
            let levels = SPLIT_LEVELS.min(self.depth_max - depth);
            self.split_in_place(heap, ptr, tenant, levels);
            return self.shed(heap, ptr, None);
        }
        // Buckets grow where they live; one that has grown past an eighth of the page is split
        // in place (as free slots allow) before anything is shed, so that what moves stays
        // small and the page keeps most of its fill (shedding half a page would leave a
        // half-empty page). Measured at 1M random pairs: a quarter-page threshold gives 20.7
        // B/pair, an eighth 20.3 B/pair, for ~25% more insert time.
        //
        // Splitting past the global depth doubles the directory (8 B per slot). In growth that
        // is due when the buckets at the global depth are near the split size on average; but
        // under uniform hashing a few pass an eighth of a page by chance long before (at 1M
        // 16+16-byte strings, depth 16: 15 entries on average, 28 for an eighth), and one such
        // bucket would double the directory for the table's last few splits: 40.46 B per entry
        // instead of 39.94 in 2 builds of 25. So while the average bucket at the global depth
        // is under 2/3 of the split size, only a bucket past a quarter page (a chance of ~1e-11
        // per bucket) splits deeper than the directory reaches; the others are shed whole.
        let sizes = tenant_sizes(page);
        let largest = (0..TENANT_SLOTS).max_by_key(|&t| sizes[t]).expect("slots");
        let free_slots = TENANT_SLOTS - page.tenant_count();
        let depth = page.tenant(largest).expect("live tenant").1;
        // At most the pages' payload over the slots (pages run 85-100% full).
        let mean_at_global = (self.pages.len() * PAYLOAD_BYTES) >> self.global_depth;
        let deepest = if sizes[largest] > PAYLOAD_BYTES / 4 || mean_at_global > PAYLOAD_BYTES / 12 {
            self.depth_max
        } else {
            self.global_depth
        };
        if sizes[largest] > PAYLOAD_BYTES / 8 && free_slots > 0 && depth < deepest {
            let mut levels = 1u8;
            while levels < SPLIT_LEVELS
                && (1usize << (levels + 1)) - 1 <= free_slots
                && depth + levels < deepest
                && sizes[largest] >> (levels + 1) >= PAYLOAD_BYTES / 16
            {
                levels += 1;
            }
            self.split_in_place(heap, ptr, largest, levels);
        }
        self.shed(heap, ptr, None)
    }

    /// Splits the page's bucket in slot `tenant` into 2^levels buckets, all staying in the page:
    /// the new buckets take free slots, and the entries whose prefix is theirs move from the
    /// bucket's runs to the same home runs of their slot. Hashes the bucket's entries only.
    fn split_in_place(&mut self, heap: &mut Heap, ptr: PagePtr, tenant: usize, levels: u8) {
        let page = pg_mut(ptr);
        let before = page.used_bytes();
        let (prefix, depth) = page.tenant(tenant).expect("live tenant");
        // The old tenant table decodes entries while the page is being re-encoded.
        let old_tenants = page.tenants();
        if depth == self.global_depth {
            self.at_global -= 1;
        }
        while self.global_depth < depth + levels {
            self.double();
        }
        // Part i of the split (prefix `prefix << levels | i`) goes to slot `slot_of[i]`.
        let parts = 1usize << levels;
        let mut slot_of = [tenant; TENANT_SLOTS];
        let new_depth = depth + levels;
        for (i, slot) in slot_of.iter_mut().enumerate().take(parts) {
            if i > 0 {
                *slot = page.free_tenant_slot().expect("caller checked free slots");
            }
            let part = (prefix << levels) | i as u32;
            page.set_tenant(*slot, Some((part, new_depth)));
            self.set_bucket(part, new_depth, word(ptr, *slot, new_depth));
        }
        if new_depth == self.global_depth {
            self.at_global += parts as u32;
        }
        let part_of = |h: u64| (prefix_of(h, new_depth) & (parts as u32 - 1)) as usize;
        // What leaves the bucket's runs, per part: the append batches of its slot's two groups.
        let size = page.groups_used(tenant_groups(tenant));
        let mut moved: [Batch; TENANT_SLOTS] = std::array::from_fn(|i| {
            Batch::with_capacity(if 0 < i && i < parts { size } else { 0 })
        });
        let codec = &self.codec;
        let at = Placement { depth: new_depth };
        let mut out = [0u8; ENTRY_BUF_BYTES];
        page.edit_runs(
            tenant_groups(tenant),
            |_| true,
            |b| C::len_of(b),
            |p, _, hint, bytes| {
                let h = codec.hash_of(heap, &old_tenants, p, hint, bytes);
                let i = part_of(h);
                if i == 0 {
                    return if C::ENCODES_DEPTH {
                        Edit::Rewrite
                    } else {
                        Edit::Keep
                    };
                }
                let n = codec.reencode(bytes, h, at, &mut out);
                moved[i].push(p % TENANT_RUNS, hint, &out[..n]);
                Edit::Drop
            },
            |p, hint, bytes, out| {
                let h = codec.hash_of(heap, &old_tenants, p, hint, bytes);
                codec.reencode(bytes, h, at, out)
            },
        );
        for i in 1..parts {
            moved[i].append_to(page, slot_of[i]);
        }
        if C::UNIFORM_RUNS {
            // Re-encoded for the deeper depth, a run's entries may now differ in length; each
            // such run is rewritten in the narrowest length they all take. The old run's
            // length is one of them (fields only shorten), so no run grows past its old bytes.
            for &t in &slot_of[..parts] {
                for p in t * TENANT_RUNS..(t + 1) * TENANT_RUNS {
                    if !page.run_is_uniform(p, |b| C::len_of(b)) {
                        let fixed = rewidth_run(&self.codec, heap, page, p, at, u128::MAX, 0);
                        assert!(fixed.is_some(), "a split run fits in its old bytes");
                    }
                }
            }
        }
        // IntMap entries re-encoded for the deeper depth may have shortened.
        self.account(before, page.used_bytes());
    }

    /// Moves one bucket out of the full page `ptr` (not `keep`): to the spare page if one fits,
    /// else to a new page.
    fn shed(&mut self, heap: &mut Heap, ptr: PagePtr, keep: Option<usize>) -> Result<(), MapError> {
        let page = pg(ptr);
        let sizes = tenant_sizes(page);
        // Which bucket goes is a trade between the two pages: a small one keeps this page
        // full, but the spare has eight tenant slots, and a spare whose slots ran out on small
        // buckets is left part-empty. So the victim is the bucket closest to the spare's room
        // per free slot (a fresh page: a page per eight slots). Buckets under 1/32 of a page
        // would free too little to be worth a round (unless that is all there is).
        let live = |t: usize| page.tenant(t).is_some() && Some(t) != keep;
        let big: Vec<usize> = (0..TENANT_SLOTS)
            .filter(|&t| live(t) && sizes[t] >= PAYLOAD_BYTES / 32)
            .collect();
        let tenants = if big.is_empty() {
            (0..TENANT_SLOTS).filter(|&t| live(t)).collect()
        } else {
            big
        };
        let pick = |free: usize, slots: usize| {
            let target = free / slots.max(1);
            tenants
                .iter()
                .copied()
                .filter(|&t| sizes[t] <= free)
                .min_by_key(|&t| sizes[t].abs_diff(target))
        };
        if let Some(spare) = self.spare.filter(|&s| s != ptr) {
            let sp = pg(spare);
            let slots = TENANT_SLOTS - sp.tenant_count();
            if slots > 0
                && let Some(victim) = pick(PAYLOAD_BYTES - sp.used_bytes(), slots)
                && self.move_tenant(ptr, victim, spare)
            {
                return Ok(());
            }
        }
        let Some(victim) = pick(PAYLOAD_BYTES, TENANT_SLOTS) else {
            return Err(MapError::Full);
        };
        let fresh = self.new_page(heap)?;
        // A bucket always fits an empty page (it came from one); the check is defensive.
        if !self.move_tenant(ptr, victim, fresh) {
            self.free_page(heap, fresh);
            return Err(MapError::Full);
        }
        if pg(fresh).used_bytes() < PAYLOAD_BYTES / 2 {
            self.spare = Some(fresh);
        }
        Ok(())
    }

    /// Moves tenant `victim` of page `from` into page `to` (a free tenant slot there). All or
    /// nothing: false (and nothing changed) if `to` has no free slot or too few free bytes.
    ///
    /// A bucket's entries are the runs of its slot, and their bytes depend on neither the slot
    /// nor the page: the move takes the slot's two groups out of `from` and appends each, as
    /// it is, to the same group of the new slot in `to`. Nothing is hashed or decoded.
    fn move_tenant(&mut self, from: PagePtr, victim: usize, to: PagePtr) -> bool {
        assert_ne!(from, to);
        let (src, dst) = (pg(from), pg(to));
        let Some(slot) = dst.free_tenant_slot() else {
            return false;
        };
        if src.groups_used(tenant_groups(victim)) > dst.free_bytes() {
            return false;
        }
        let (prefix, depth) = src.tenant(victim).expect("live tenant");
        let src = pg_mut(from);
        let batch = Batch::take(src, victim);
        src.set_tenant(victim, None);
        src.spread_gaps();
        let dst = pg_mut(to);
        dst.set_tenant(slot, Some((prefix, depth)));
        batch.append_to(dst, slot);
        self.set_bucket(prefix, depth, word(to, slot, depth));
        true
    }

    /// A removal left `ptr` under a quarter full. First each of its buckets merges with its
    /// buddy bucket as far up as sizes allow (moving one of them across pages when they live
    /// apart); then, if the page survives, its buckets move to the spare page, or it becomes the
    /// spare. Work is bounded: at most 8 buckets x 32 levels of merges, each O(page).
    fn after_underfull(&mut self, heap: &mut Heap, ptr: PagePtr) {
        for t in 0..TENANT_SLOTS {
            let Some((prefix, depth)) = pg(ptr).tenant(t) else {
                continue;
            };
            let pos = if depth == 0 {
                0
            } else {
                u64::from(prefix) << (64 - u32::from(depth))
            };
            if self.merge_up(heap, pos, ptr) {
                self.try_halve();
                return;
            }
        }
        match self.spare {
            Some(spare)
                if spare != ptr
                    && pg(spare).used_bytes() + pg(ptr).used_bytes() < COALESCE_BELOW_BYTES =>
            {
                for t in 0..TENANT_SLOTS {
                    if pg(ptr).tenant(t).is_some() && !self.move_tenant(ptr, t, spare) {
                        break;
                    }
                }
                if pg(ptr).tenant_count() == 0 {
                    self.free_page(heap, ptr);
                }
            }
            Some(spare) if spare != ptr => {
                if pg(ptr).used_bytes() < pg(spare).used_bytes() {
                    self.spare = Some(ptr);
                }
            }
            _ => self.spare = Some(ptr),
        }
        self.try_halve();
    }

    /// Merges the bucket holding hash position `pos` with its buddy, repeatedly, while the buddy
    /// is a whole bucket of the same depth and the two fit in one page under three quarters full.
    /// Returns whether page `watch` was freed on the way.
    fn merge_up(&mut self, heap: &mut Heap, pos: u64, watch: PagePtr) -> bool {
        let mut freed = false;
        for _ in 0..DEPTH_LIMIT {
            let (a, a_t, depth) = self.locate(pos);
            if depth == 0 {
                break;
            }
            let bit = 1u64 << (64 - u32::from(depth));
            let (b, b_t, buddy_depth) = self.locate(pos ^ bit);
            if buddy_depth != depth {
                break;
            }
            if a == b {
                if pg(a).used_bytes() >= COALESCE_BELOW_BYTES {
                    break;
                }
            } else {
                if pg(a).used_bytes() + pg(b).used_bytes() >= COALESCE_BELOW_BYTES {
                    break;
                }
                // Move from the page with fewer entries (usually the one that just went
                // underfull, which may then be freed) when the other has a free tenant slot.
                let (a_free, b_free) = (
                    pg(a).free_tenant_slot().is_some(),
                    pg(b).free_tenant_slot().is_some(),
                );
                let (src, src_t, dst) =
                    if a_free && (!b_free || pg(b).entry_count() <= pg(a).entry_count()) {
                        (b, b_t, a)
                    } else {
                        (a, a_t, b)
                    };
                if !self.move_tenant(src, src_t, dst) {
                    break;
                }
                if pg(src).tenant_count() == 0 {
                    freed |= src == watch;
                    self.free_page(heap, src);
                }
            }
            let (page, even, _) = self.locate(pos & !bit);
            let (_, odd, _) = self.locate(pos | bit);
            if !matches!(self.rebuild_merged(heap, page, even, odd), Ok(true)) {
                break;
            }
        }
        freed
    }

    /// Rebuilds page `ptr` with buddy tenants `a` (even prefix) and `b` merged into `a`.
    /// `Ok(false)`, and nothing changed, if the merged bucket does not fit the page.
    fn rebuild_merged(
        &mut self,
        heap: &mut Heap,
        ptr: PagePtr,
        a: usize,
        b: usize,
    ) -> Result<bool, MapError> {
        let page = pg(ptr);
        let (prefix, depth) = page.tenant(a).expect("live tenant");
        if !C::ENCODES_DEPTH {
            // Entries that do not depend on the depth keep their bytes: b's runs join a's runs
            // of the same homes, two group moves as in a bucket move, nothing hashed.
            // (Re-placing every entry of the page here made draining a large map spend ~7% of
            // its time in merges, in bursts of 100+ µs.)
            if (0..TENANT_RUNS).any(|i| {
                page.piece_count(a * TENANT_RUNS + i) + page.piece_count(b * TENANT_RUNS + i)
                    > RUN_COUNT_MAX
            }) {
                return Ok(false);
            }
            let page = pg_mut(ptr);
            let batch = Batch::take(page, b);
            page.set_tenant(b, None);
            page.set_tenant(a, Some((prefix >> 1, depth - 1)));
            batch.append_to(page, a);
            self.set_bucket(prefix >> 1, depth - 1, word(ptr, a, depth - 1));
            if depth == self.global_depth {
                self.at_global -= 2;
            }
            return Ok(true);
        }
        let scratch_ptr = PagePtr::alloc(heap)?;
        let scratch = pg_mut(scratch_ptr);
        scratch.init(C::KIND, page.page_index() as u32);
        for t in 0..TENANT_SLOTS {
            if t != b {
                scratch.set_tenant(t, page.tenant(t));
            }
        }
        scratch.set_tenant(a, Some((prefix >> 1, depth - 1)));
        let new_depths = scratch.tenant_depths();
        let tenants = page.tenants();
        let shared: &Heap = heap;
        let mut ok = true;
        page.for_each_entry(
            |b| C::len_of(b),
            |piece, _, hint, bytes| {
                if !ok {
                    return;
                }
                let h = self.codec.hash_of(shared, &tenants, piece, hint, bytes);
                let t = piece / TENANT_RUNS;
                let t = if t == b { a } else { t };
                let codec = &self.codec;
                ok = place(codec, shared, scratch, h, t, new_depths[t], |at, out| {
                    codec.reencode(bytes, h, at, out)
                });
            },
        );
        if ok {
            // Re-encoded for the shallower depth, entries may have grown.
            self.account(page.used_bytes(), scratch.used_bytes());
            pg_mut(ptr).bytes.copy_from_slice(&scratch.bytes);
            self.set_bucket(prefix >> 1, depth - 1, word(ptr, a, depth - 1));
            if depth == self.global_depth {
                self.at_global -= 2;
            }
        }
        // SAFETY: the scratch page was allocated above and is not referenced after this.
        unsafe { scratch_ptr.free(heap) };
        Ok(ok)
    }

    /// One SCAN step from `cursor`: visits the bucket holding that hash position, returns the
    /// next cursor (0 when the scan is complete).
    pub fn scan(&self, cursor: u64, mut f: impl FnMut(&Page, usize, u8, &[u8])) -> u64 {
        let (ptr, tenant, depth) = self.locate(cursor);
        let page = pg(ptr);
        // The bucket's entries are exactly its slot's runs.
        for run in tenant * TENANT_RUNS..(tenant + 1) * TENANT_RUNS {
            page.for_each_in_piece(
                run,
                |b| C::len_of(b),
                |_, _, hint, bytes| f(page, run, hint, bytes),
            );
        }
        bucket_end(page, tenant, depth)
    }

    /// A SCAN step (as `scan`) in which `f` may give each entry a new first byte (`Some`),
    /// written once the bucket was visited. The first byte is the user's (PageHash's meta): the
    /// table never reads it, so no invariant depends on it.
    pub fn scan_setting_first_bytes(
        &mut self,
        cursor: u64,
        mut f: impl FnMut(&Page, usize, u8, &[u8]) -> Option<u8>,
    ) -> u64 {
        let (ptr, tenant, depth) = self.locate(cursor);
        let page = pg(ptr);
        let mut writes: Vec<(usize, u8)> = Vec::new();
        for run in tenant * TENANT_RUNS..(tenant + 1) * TENANT_RUNS {
            let base = page.entries_at(run);
            page.for_each_in_piece(
                run,
                |b| C::len_of(b),
                |_, offset, hint, bytes| {
                    if let Some(byte) = f(page, run, hint, bytes) {
                        writes.push((base + offset, byte));
                    }
                },
            );
        }
        let next = bucket_end(page, tenant, depth);
        let page = pg_mut(ptr);
        for (at, byte) in writes {
            page.set_byte(at, byte);
        }
        next
    }

    /// A SCAN step (as `scan`) in which `f` may rewrite each entry in place: it gets a copy of
    /// the entry's bytes and returns whether it changed them, keeping their length and every
    /// byte the codec's `len_of` and `hash_of` read (PageHash's defragmenter writes a moved
    /// blob's new handle; the blob's contents, the key hash among them, are the same). So no
    /// entry leaves its run and no invariant changes.
    pub fn scan_rewriting(&mut self, cursor: u64, mut f: impl FnMut(&mut [u8]) -> bool) -> u64 {
        let (ptr, tenant, depth) = self.locate(cursor);
        let page = pg(ptr);
        let mut writes: Vec<(usize, usize, [u8; ENTRY_BUF_BYTES])> = Vec::new();
        for run in tenant * TENANT_RUNS..(tenant + 1) * TENANT_RUNS {
            let base = page.entries_at(run);
            page.for_each_in_piece(
                run,
                |b| C::len_of(b),
                |_, offset, _, bytes| {
                    let mut copy = [0u8; ENTRY_BUF_BYTES];
                    copy[..bytes.len()].copy_from_slice(bytes);
                    if f(&mut copy[..bytes.len()]) {
                        debug_assert_eq!(C::len_of(&copy), bytes.len());
                        writes.push((base + offset, bytes.len(), copy));
                    }
                },
            );
        }
        let next = bucket_end(page, tenant, depth);
        let page = pg_mut(ptr);
        for (at, len, bytes) in &writes {
            page.set_bytes(*at, &bytes[..*len]);
        }
        next
    }

    /// A random entry from the random number `r`. Tables of up to `SAMPLE_EXACT_PAGES` pages pick
    /// uniformly over entries (an index into the pages' counts, so a half-empty spare page is not
    /// over-sampled in a small set); larger ones pick a page uniformly, then one of its entries,
    /// biased only by how unevenly their pages are filled (~0.94 ± a few %).
    /// `f(page, piece, hint, bytes)`.
    pub fn sample<R>(&self, r: u64, f: impl FnOnce(&Page, usize, u8, &[u8]) -> R) -> Option<R> {
        /// Up to this many pages a sample walks the page counts (one header read each).
        const SAMPLE_EXACT_PAGES: usize = 64;
        if self.len == 0 {
            return None;
        }
        let n = self.pages.len();
        let (page, mut k) = if n <= SAMPLE_EXACT_PAGES {
            let mut i = (r % self.len as u64) as usize;
            let mut found = None;
            for &ptr in &self.pages {
                let page = pg(ptr);
                if i < page.entry_count() {
                    found = Some((page, i));
                    break;
                }
                i -= page.entry_count();
            }
            found?
        } else {
            let start = (r % n as u64) as usize;
            // Bounded: at most one pass over the pages (some page holds an entry since len > 0).
            let page = (0..n)
                .map(|i| pg(self.pages[(start + i) % n]))
                .find(|p| p.entry_count() > 0)?;
            let k = (crate::hash::splitmix(r) % page.entry_count() as u64) as usize;
            (page, k)
        };
        for piece in 0..PIECE_COUNT {
            let count = page.piece_count(piece);
            if k < count {
                let (hint, _, bytes) = page.entry_at(piece, k, |b| C::len_of(b));
                return Some(f(page, piece, hint, bytes));
            }
            k -= count;
        }
        None
    }

    /// Frees every entry's out-of-page bytes and every page; leaves the table with no pages (the
    /// caller drops it or re-creates it).
    pub fn free_all(&mut self, heap: &mut Heap) {
        for ptr in std::mem::take(&mut self.pages) {
            pg(ptr).for_each_entry(|b| C::len_of(b), |_, _, _, bytes| C::release(heap, bytes));
            // SAFETY: every page in `pages` came from `new_page`; the list was taken, so none is
            // freed twice or used again.
            unsafe { ptr.free(heap) };
        }
        self.dir.clear();
        self.at_global = 0;
        self.spare = None;
        self.len = 0;
        self.used_bytes = 0;
        *self.compact = compact::Compaction::default();
    }

    /// Full check of every invariant listed in the module doc. `Err` describes the first breach.
    pub fn validate(&self, heap: &Heap) -> Result<(), String> {
        let (mut total, mut used) = (0, 0);
        let mut slots_of = TenantSlots::new();
        let mut at_global = 0u32;
        for (i, &ptr) in self.pages.iter().enumerate() {
            let page = pg(ptr);
            let tenants = page.tenants();
            page.validate(C::KIND, |b| C::len_of(b))?;
            if page.page_index() != i {
                return Err(format!("page {i} says index {}", page.page_index()));
            }
            for t in 0..TENANT_SLOTS {
                if let Some((_, d)) = page.tenant(t) {
                    slots_of.insert((ptr.addr(), t), (1usize << (self.global_depth - d), 0usize));
                    at_global += u32::from(d == self.global_depth);
                }
            }
            total += page.entry_count();
            used += page.used_bytes();
            self.validate_entries(heap, page, &tenants)?;
        }
        if total != self.len {
            return Err(format!("len {} but pages hold {total}", self.len));
        }
        if used != self.used_bytes {
            return Err(format!(
                "used_bytes {} but pages use {used}",
                self.used_bytes
            ));
        }
        self.compact.validate(&self.pages)?;
        if at_global != self.at_global {
            return Err(format!(
                "{} buckets at the global depth, counted {at_global}",
                self.at_global
            ));
        }
        if self.dir.len() != 1 << self.global_depth {
            return Err("directory size".into());
        }
        self.validate_directory(&mut slots_of)?;
        if let Some((k, v)) = slots_of.iter().find(|(_, (want, got))| want != got) {
            return Err(format!("tenant {k:?}: slots {v:?}"));
        }
        if let Some(spare) = self.spare
            && !self.pages.contains(&spare)
        {
            return Err("spare is not a page of the map".into());
        }
        Ok(())
    }

    /// Checks that every entry of `page` lies in the tenant, run and hint its hash names, and (for
    /// codecs with uniform runs) that each run's entries share one length.
    fn validate_entries(&self, heap: &Heap, page: &Page, tenants: &Tenants) -> Result<(), String> {
        let mut err = None;
        for piece in 0..PIECE_COUNT {
            let mut run_len = None;
            page.for_each_in_piece(
                piece,
                |b| C::len_of(b),
                |_, _, hint, bytes| {
                    if C::UNIFORM_RUNS && *run_len.get_or_insert(bytes.len()) != bytes.len() {
                        err = Some(format!(
                            "run {piece}: entries of lengths {run_len:?} and {}",
                            bytes.len()
                        ));
                    }
                    let t = piece / TENANT_RUNS;
                    let Some((prefix, depth)) = page.tenant(t) else {
                        err = Some(format!("entry in run {piece} of empty slot {t}"));
                        return;
                    };
                    let h = self.codec.hash_of(heap, tenants, piece, hint, bytes);
                    if prefix_of(h, depth) != prefix {
                        err = Some(format!("entry in run {piece}: not in tenant {t}"));
                    } else if hint != hint_of(h) {
                        err = Some(format!(
                            "entry in run {piece}: hint {hint} != {}",
                            hint_of(h)
                        ));
                    } else if home_of(h) != piece % TENANT_RUNS {
                        err = Some(format!("entry in run {piece}: home {}", home_of(h)));
                    }
                },
            );
        }
        err.map_or(Ok(()), Err)
    }

    /// Checks that every directory slot names a listed page's tenant whose prefix and depth cover
    /// the slot, counting each tenant's slots in `slots_of`.
    fn validate_directory(&self, slots_of: &mut TenantSlots) -> Result<(), String> {
        for (slot, &w) in self.dir.iter().enumerate() {
            let (ptr, t, d) = unword(w);
            let page = self
                .pages
                .get(pg(ptr).page_index())
                .filter(|&&p| p == ptr)
                .map(|&p| pg(p));
            let Some(page) = page else {
                return Err(format!("slot {slot}: unknown page"));
            };
            match page.tenant(t) {
                Some((prefix, depth))
                    if depth == d && prefix as usize == slot >> (self.global_depth - d) => {}
                other => return Err(format!("slot {slot}: word depth {d}, tenant {other:?}")),
            }
            slots_of.get_mut(&(ptr.addr(), t)).expect("tenant listed").1 += 1;
        }
        Ok(())
    }
}

/// For each tenant, keyed by (page address, tenant slot): the directory slots it should own and
/// the slots found pointing at it.
type TenantSlots = std::collections::HashMap<(u64, usize), (usize, usize)>;

/// The two groups that hold tenant slot `t`'s runs.
fn tenant_groups(t: usize) -> std::ops::Range<usize> {
    let first = t * TENANT_RUNS / GROUP_RUNS;
    first..first + TENANT_RUNS / GROUP_RUNS
}

/// Bytes (entries and hints) of each tenant slot of `page`: its two groups.
fn tenant_sizes(page: &Page) -> [usize; TENANT_SLOTS] {
    std::array::from_fn(|t| page.groups_used(tenant_groups(t)))
}

/// Entries bound for the runs of one tenant slot, in run order: the [`Page::append_group`]
/// batches of the slot's two groups. Filled by [`Batch::push`] (an entry at a time, in
/// non-decreasing home order) or [`Batch::take`] (a whole slot).
#[derive(Debug, Default)]
struct Batch {
    counts: [usize; TENANT_RUNS],
    lens: [usize; TENANT_RUNS],
    hints: Vec<u8>,
    entries: Vec<u8>,
}

impl Batch {
    /// An empty batch with room for `bytes` of hints and entries.
    fn with_capacity(bytes: usize) -> Batch {
        Batch {
            hints: Vec::with_capacity(bytes / 2),
            entries: Vec::with_capacity(bytes),
            ..Batch::default()
        }
    }

    /// Adds an entry for home run `home` (0..16) of the slot.
    fn push(&mut self, home: usize, hint: u8, entry: &[u8]) {
        self.counts[home] += 1;
        self.lens[home] += entry.len();
        self.hints.push(hint);
        self.entries.extend_from_slice(entry);
    }

    /// Empties the runs of slot `tenant` of `page` into a batch (its two groups, in order).
    fn take(page: &mut Page, tenant: usize) -> Batch {
        let mut batch = Batch::with_capacity(page.groups_used(tenant_groups(tenant)));
        for (k, g) in tenant_groups(tenant).enumerate() {
            let runs = k * GROUP_RUNS..(k + 1) * GROUP_RUNS;
            let counts: &mut [usize; GROUP_RUNS] = (&mut batch.counts[runs.clone()])
                .try_into()
                .expect("a group");
            let lens: &mut [usize; GROUP_RUNS] =
                (&mut batch.lens[runs]).try_into().expect("a group");
            page.take_group(g, counts, lens, &mut batch.hints, &mut batch.entries);
        }
        batch
    }

    /// Appends the batch to the runs of slot `tenant` of `page`, which has the room.
    fn append_to(&self, page: &mut Page, tenant: usize) {
        let (mut h_at, mut e_at) = (0, 0);
        for (k, g) in tenant_groups(tenant).enumerate() {
            let runs = k * GROUP_RUNS..(k + 1) * GROUP_RUNS;
            let counts: &[usize; GROUP_RUNS] =
                self.counts[runs.clone()].try_into().expect("a group");
            let lens: &[usize; GROUP_RUNS] = self.lens[runs].try_into().expect("a group");
            let (c, n) = (counts.iter().sum::<usize>(), lens.iter().sum::<usize>());
            if c > 0 {
                page.append_group(
                    g,
                    counts,
                    lens,
                    &self.hints[h_at..h_at + c],
                    &self.entries[e_at..e_at + n],
                );
            }
            h_at += c;
            e_at += n;
        }
    }
}

/// Places an entry in `page` as tenant `tenant` at `depth`: appended to its home run, the page
/// bringing free bytes from wherever they are. False if the page has no room. With
/// `C::UNIFORM_RUNS` the entry takes the run's length, or, if it cannot be written in that
/// length, the run's entries are rewritten in the narrowest length all of them can take.
#[inline]
fn place<C: Codec>(
    codec: &C,
    heap: &Heap,
    page: &mut Page,
    h: u64,
    tenant: usize,
    depth: u8,
    mut encode: impl FnMut(Placement, &mut [u8; ENTRY_BUF_BYTES]) -> usize,
) -> bool {
    let at = Placement { depth };
    let mut buf = [0u8; ENTRY_BUF_BYTES];
    let mut len = encode(at, &mut buf);
    let run = run_of(tenant, h);
    if C::UNIFORM_RUNS {
        let width = page.first_len(run, |b| C::len_of(b));
        if width != 0 && len != width {
            let mine = codec.widths(&buf[..len], h, at);
            let target = if mine & (1 << width) != 0 {
                width
            } else {
                match rewidth_run(codec, heap, page, run, at, mine, len) {
                    Some(target) => target,
                    None => return false,
                }
            };
            let entry = buf;
            len = codec.write_width(&entry[..len], h, at, target, &mut buf);
        }
    }
    if !page.fits(run, len) {
        return false;
    }
    page.push(run, hint_of(h), &buf[..len]);
    true
}

/// Rewrites the entries of run `p` (at `at`) in the narrowest length they and a new entry
/// (`len` bytes, lengths `mine`; `len` 0 and `mine` all ones for none) can all be written in,
/// if the page then still has room for the new entry; returns that length. `None`, and
/// nothing changed, if not.
#[cold]
fn rewidth_run<C: Codec>(
    codec: &C,
    heap: &Heap,
    page: &mut Page,
    p: usize,
    at: Placement,
    mine: u128,
    len: usize,
) -> Option<usize> {
    let tenants = page.tenants();
    let mut common = mine;
    page.for_each_in_piece(
        p,
        |b| C::len_of(b),
        |_, _, hint, bytes| {
            let h = codec.hash_of(heap, &tenants, p, hint, bytes);
            common &= codec.widths(bytes, h, at);
        },
    );
    let target = common.trailing_zeros() as usize;
    let count = page.piece_count(p);
    let old = page.entries(p).len();
    let new_entry = if len == 0 { 0 } else { 1 + target };
    if (len > 0 && count >= RUN_COUNT_MAX) || page.free_bytes() + old < count * target + new_entry {
        return None;
    }
    let mut entries = Vec::with_capacity(count * target);
    let mut out = [0u8; ENTRY_BUF_BYTES];
    page.for_each_in_piece(
        p,
        |b| C::len_of(b),
        |_, _, hint, bytes| {
            let h = codec.hash_of(heap, &tenants, p, hint, bytes);
            let n = codec.write_width(bytes, h, at, target, &mut out);
            entries.extend_from_slice(&out[..n]);
        },
    );
    page.set_run_entries(p, &entries);
    Some(target)
}

/// Iterator over a table's entries (see [`Table::entries`]).
#[derive(Debug)]
pub struct Entries<'a, C> {
    table: &'a Table<C>,
    page: usize,
    piece: usize,
    index: usize,
    offset: usize,
}

impl<'a, C: Codec> Iterator for Entries<'a, C> {
    type Item = (&'a Page, usize, u8, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        // Bounded: each round advances an entry, a piece or a page.
        loop {
            let ptr = *self.table.pages.get(self.page)?;
            let page = pg(ptr);
            if self.piece == PIECE_COUNT {
                self.page += 1;
                self.piece = 0;
                continue;
            }
            if self.index < page.piece_count(self.piece) {
                let entries = page.entries(self.piece);
                let len = C::len_of(&entries[self.offset..]);
                let item = (
                    page,
                    self.piece,
                    page.hints(self.piece)[self.index],
                    &entries[self.offset..self.offset + len],
                );
                self.index += 1;
                self.offset += len;
                return Some(item);
            }
            self.piece += 1;
            self.index = 0;
            self.offset = 0;
        }
    }
}
