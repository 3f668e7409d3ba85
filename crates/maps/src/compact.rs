//! Compaction of a table left sparse by removals: buddy buckets merge and buckets move out of
//! sparse pages into a few pages being filled ("bins"), so that whole pages empty out and go
//! back to the heap. A child of `table.rs` (it works on the directory and pages as privately as
//! the rest of the table does); the rules and their equations are in `table.rs`, "Compaction".
//!
//! ```text
//!  cursor: hash position of the next bucket to visit (0 = a pass begins); a visit:
//!   1. merge:  (p, d) + (p ^ 1, d) -> (p >> 1, d - 1)   while size(p) + size(p ^ 1) <= AREA/4
//!              and one of their pages is sparse (used < 4/5 AREA), or both are at the global
//!              depth of an oversized directory; at most VISIT_MERGES_MAX levels. Buddies on
//!              two pages first come together: into the fuller page, else the other, else a bin
//!   2. repack: the bucket, if its page uses < 7/8 AREA and is not a bin, moves to the bin with
//!              the fewest free bytes that takes it (best fit); if none does, its page becomes
//!              a bin
//!  bins:  up to BINS pages being filled, forgotten when a pass begins
//!  units: visits + merges + moves; a call stops at the first visit boundary past its budget
//! ```
//!
//! Why the walk goes in hash order: the cursor is a scan cursor (a step visits the bucket
//! holding it and moves just past that bucket), so a pass visits every bucket once however the
//! buckets merge under it, and a pass that merges bottom-up meets each pair of buddies after
//! both halves were visited. A walk over the page list would be simpler, but freeing a page
//! swaps the last page into its place and the walk would skip it or need a second cursor.

use super::{Codec, PAYLOAD_BYTES, TENANT_RUNS, Table, bucket_end, pg, tenant_groups};
use crate::page::TENANT_SLOTS;
use crate::raw::PagePtr;
use heap::Heap;

/// Pages a pass fills at once. With one, a bucket too big for the page being filled closes it
/// however much room it has left (next fit). Fill after compacting a map thinned to half, and
/// to a tenth (1M 16+16-byte strings): one bin 0.911 and 0.902, four 0.926 and 0.936, eight
/// 0.928 and 0.946; four leave at most four pages part-filled at the end of a pass.
const BINS: usize = 4;
/// Largest bucket a merge makes: a quarter page. A bucket past a quarter page splits on the
/// first full page whatever the directory depth (`make_room`), so merging further would be
/// undone by the next insert burst. At an eighth (the size inserts split at) the buckets that
/// removals halved mostly cannot merge back, and a page's eight tenant slots of such buckets
/// hold far less than a page: memory after removing every other key and compacting was 0.72
/// of the full load (fill 0.65), against 0.51 at a quarter, 0.51 at a sixth, 0.51 at a third.
const MERGE_BYTES_MAX: usize = PAYLOAD_BYTES / 4;
/// A page using fewer bytes than this gives its buckets to the bins. Growth keeps pages ~7/8
/// to full, so a pass over a map that was not thinned moves few buckets (177 of 33,681 at 1M
/// 16+16-byte strings). Measured after removing every other key, fill after compaction: 4/5
/// 0.926, 7/8 0.950, 9/10 0.959, but at 9/10 a pass over an unthinned map moves 2,073 buckets.
const EVACUATE_BELOW_BYTES: usize = PAYLOAD_BYTES * 7 / 8;
/// Buddies merge only if one of their pages uses fewer bytes than this (or to halve the
/// directory, below). A merge in dense pages frees no page, and the next insert burst would
/// split the bucket again: without the condition a pass over an unthinned map merged 3,828
/// buckets (IntMap: 2,583, in 190 ms, each merge re-encoding a page), with it a handful.
const SPARSE_PAGE_BYTES: usize = PAYLOAD_BYTES * 4 / 5;
/// Buddies in two dense pages merge only while the directory has more than this many slots
/// per page and they are at the global depth: merging them frees no page, and the next insert
/// burst would split them again, but the directory halves only once no bucket is at its depth.
/// A map grown by inserts has 8-16 slots per page; one thinned to a tenth has ten times that,
/// and its directory would be 12% of its bytes.
const DIR_SLOTS_PER_PAGE_MAX: usize = 32;
/// A map is sparse when its bytes would fit in one page fewer at this fill (numerator,
/// denominator): well under what a pass reaches (~0.9), so passes do not follow each other.
const SPARSE_FILL: (usize, usize) = (3, 4);
/// A pass that frees more than this share of the pages (1/32) is followed by another. The
/// first pass over a map thinned to half leaves a fifth of its pages under 60% full: pages the
/// walk had passed before merges took buckets out of them, and bins closed early. Measured at
/// 1M 16+16-byte strings: one pass leaves 2,801 pages at fill 0.80 (memory 0.59 of the full
/// load), the passes that follow take it to 2,365 pages at fill 0.95 (0.50).
const AGAIN_FREED_SHARE: usize = 32;
/// Merge levels one visit climbs at most (each is at most two bucket moves and a rebuild): a
/// map thinned to a tenth needs 3-4, and the next pass climbs further.
const VISIT_MERGES_MAX: usize = 4;

/// What a call of `compact_step` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactProgress {
    /// Buckets visited.
    pub visited: usize,
    /// Buddy merges (two buckets became one).
    pub merged: usize,
    /// Buckets moved to another page (to meet a buddy, or out of a sparse page).
    pub moved: usize,
    /// Pages freed to the heap.
    pub freed: usize,
    /// This call finished a pass over the whole hash space (the next call starts another).
    pub pass_done: bool,
}

impl CompactProgress {
    /// Most work units one visit spends: the visit, per merge level the merge and two moves,
    /// and a move out of a sparse page. A call spends at most its budget plus this.
    pub const VISIT_UNITS_MAX: usize = 1 + VISIT_MERGES_MAX * 3 + 1;

    /// Work units spent: one per visit, merge and move (each copies at most a page's bytes).
    pub fn units(&self) -> usize {
        self.visited + self.merged + self.moved
    }

    /// Adds `other`'s counts (a caller summing the steps of a pass).
    pub fn add(&mut self, other: CompactProgress) {
        self.visited += other.visited;
        self.merged += other.merged;
        self.moved += other.moved;
        self.freed += other.freed;
        self.pass_done |= other.pass_done;
    }
}

/// The compaction walk's state, kept in the table between calls.
#[derive(Debug, Default)]
pub(super) struct Compaction {
    /// Hash position of the next bucket to visit; 0 between passes.
    cursor: u64,
    /// Pages the pass is filling; never evacuated while they are bins.
    bins: [Option<PagePtr>; BINS],
    /// Merges plus freed pages since the pass began: a pass with none found nothing to do.
    pass_gain: usize,
    /// Pages when the pass began, and pages it freed.
    pass_pages: usize,
    pass_freed: usize,
    /// The last pass freed over `1 / AGAIN_FREED_SHARE` of the pages: another one follows.
    again: bool,
    /// The table's used bytes when a whole pass merged and freed nothing. The map is not called
    /// sparse again until a page's worth of bytes more is gone or it grows a page, so an owner
    /// polling `sparse()` does not run fruitless passes over a map that cannot shrink.
    idle_used: Option<usize>,
}

impl Compaction {
    /// The map grew a page: whatever the last pass found, a new one may find more.
    pub(super) fn grew(&mut self) {
        self.idle_used = None;
    }

    /// Page `ptr` is being freed: it can be a bin no more.
    pub(super) fn forget(&mut self, ptr: PagePtr) {
        for bin in &mut self.bins {
            if *bin == Some(ptr) {
                *bin = None;
            }
        }
    }

    /// Every bin is a page of the map, named once.
    pub(super) fn validate(&self, pages: &[PagePtr]) -> Result<(), String> {
        for (i, bin) in self.bins.iter().enumerate() {
            let Some(bin) = bin else { continue };
            if !pages.contains(bin) {
                return Err(format!("compaction bin {i} is not a page of the map"));
            }
            if self.bins[..i].contains(&Some(*bin)) {
                return Err(format!("compaction bin {i} named twice"));
            }
        }
        Ok(())
    }
}

/// Bytes (hints and entries) of the bucket in tenant slot `t` of `page`.
fn bucket_bytes(page: PagePtr, t: usize) -> usize {
    pg(page).groups_used(tenant_groups(t))
}

/// Entries of the bucket in tenant slot `t` of `page`.
fn bucket_entries(page: PagePtr, t: usize) -> usize {
    let p = pg(page);
    (t * TENANT_RUNS..(t + 1) * TENANT_RUNS)
        .map(|run| p.piece_count(run))
        .sum()
}

/// Empty tenant slots of `page`.
fn free_slots(page: PagePtr) -> usize {
    TENANT_SLOTS - pg(page).tenant_count()
}

impl<C: Codec> Table<C> {
    /// Whether compaction is worth running: the map's bytes would fit in one page fewer at 3/4
    /// fill, or a pass is under way, or the last pass freed over 1/32 of the pages. So an owner
    /// that calls [`Table::compact_step`] while this holds finishes what it began: stopping as
    /// soon as the fill crossed 3/4 would leave the pages the walk had not reached yet as
    /// sparse as they were. O(1).
    pub fn sparse(&self) -> bool {
        let pages = self.pages.len();
        if pages < 2 {
            return false;
        }
        if self.compact.cursor != 0 || self.compact.again {
            return true;
        }
        let (num, den) = SPARSE_FILL;
        self.used_bytes * den < (pages - 1) * PAYLOAD_BYTES * num
            && self
                .compact
                .idle_used
                .is_none_or(|idle| self.used_bytes + PAYLOAD_BYTES <= idle)
    }

    /// One bounded step of compaction: visits buckets from the cursor on, merging buddies and
    /// moving buckets out of sparse pages, until it has spent `budget` work units (a visit, a
    /// merge or a move each; at most `budget + CompactProgress::VISIT_UNITS_MAX` in all) or
    /// finished a pass. Repeated calls walk the whole hash space, then start over.
    pub fn compact_step(&mut self, heap: &mut Heap, budget: usize) -> CompactProgress {
        let mut progress = CompactProgress::default();
        // Bounded: every round spends a unit (the visit) and stops at the budget or pass end.
        while progress.units() < budget {
            let pos = self.compact.cursor;
            if pos == 0 {
                self.compact.bins = [None; BINS];
                self.compact.pass_gain = 0;
                self.compact.pass_freed = 0;
                self.compact.pass_pages = self.pages.len();
                self.compact.again = false;
            }
            self.visit(heap, pos, &mut progress);
            let (ptr, tenant, depth) = self.locate(pos);
            let next = bucket_end(pg(ptr), tenant, depth);
            self.compact.cursor = next;
            if next == 0 {
                self.end_pass();
                progress.pass_done = true;
                break;
            }
        }
        progress
    }

    /// A pass is over: asks for another if it freed many pages, remembers a fruitless one, and
    /// gives back the page list's spare capacity (the directory is rebuilt at its size whenever
    /// it halves).
    fn end_pass(&mut self) {
        let c = &mut self.compact;
        c.again = c.pass_freed * AGAIN_FREED_SHARE > c.pass_pages;
        c.idle_used = (c.pass_gain == 0).then_some(self.used_bytes);
        let len = self.pages.len();
        if self.pages.capacity() > 2 * len + 16 {
            self.pages.shrink_to(len + len / 8);
        }
    }

    /// Visits the bucket holding hash position `pos`: merges it up, then repacks it.
    fn visit(&mut self, heap: &mut Heap, pos: u64, progress: &mut CompactProgress) {
        progress.visited += 1;
        let mut merged = false;
        for _ in 0..VISIT_MERGES_MAX {
            if !self.merge_buddy(heap, pos, progress) {
                break;
            }
            merged = true;
        }
        if merged {
            self.try_halve();
        }
        self.repack(heap, pos, progress);
    }

    /// Merges the bucket holding `pos` with its buddy if both have its depth and the merged
    /// bucket stays within `MERGE_BYTES_MAX`, first bringing them to one page. Returns whether
    /// they merged.
    fn merge_buddy(&mut self, heap: &mut Heap, pos: u64, progress: &mut CompactProgress) -> bool {
        let (a, a_t, depth) = self.locate(pos);
        if depth == 0 {
            return false;
        }
        let bit = 1u64 << (64 - u32::from(depth));
        let (b, b_t, buddy_depth) = self.locate(pos ^ bit);
        let sparse = |p: PagePtr| pg(p).used_bytes() < SPARSE_PAGE_BYTES;
        let halving = depth == self.global_depth
            && self.dir.len() > DIR_SLOTS_PER_PAGE_MAX * self.pages.len();
        if buddy_depth != depth
            || !(sparse(a) || sparse(b) || halving)
            || bucket_bytes(a, a_t) + bucket_bytes(b, b_t) > MERGE_BYTES_MAX
            || (a != b && !self.bring_together(heap, (a, a_t), (b, b_t), progress))
        {
            return false;
        }
        let (page, even, _) = self.locate(pos & !bit);
        let (_, odd, _) = self.locate(pos | bit);
        if !matches!(self.rebuild_merged(heap, page, even, odd), Ok(true)) {
            return false;
        }
        progress.merged += 1;
        self.compact.pass_gain += 1;
        true
    }

    /// Moves buddy buckets `a` and `b` (page, tenant slot) of two pages into one: the bucket
    /// of the page using fewer bytes goes to the other (that page empties sooner), else the
    /// other way, else both go to the bin with the fewest free bytes that takes them. False,
    /// and nothing moved, if no page has the room.
    fn bring_together(
        &mut self,
        heap: &mut Heap,
        a: (PagePtr, usize),
        b: (PagePtr, usize),
        progress: &mut CompactProgress,
    ) -> bool {
        let (fuller, emptier) = if pg(a.0).used_bytes() >= pg(b.0).used_bytes() {
            (a, b)
        } else {
            (b, a)
        };
        // Entries re-encoded for the shallower depth may grow (an IntMap key field takes up
        // to a byte more): the page that merges them keeps a byte per entry for that.
        let growth = if C::ENCODES_DEPTH {
            bucket_entries(a.0, a.1) + bucket_entries(b.0, b.1)
        } else {
            0
        };
        for (to, from) in [(fuller, emptier), (emptier, fuller)] {
            let need = bucket_bytes(from.0, from.1) + growth;
            if free_slots(to.0) > 0 && pg(to.0).free_bytes() >= need {
                return self.move_bucket(heap, from, to.0, progress);
            }
        }
        let need = bucket_bytes(a.0, a.1) + bucket_bytes(b.0, b.1) + growth;
        let Some(bin) = self.best_bin(need, 2, &[a.0, b.0]) else {
            return false;
        };
        self.move_bucket(heap, a, bin, progress) && self.move_bucket(heap, b, bin, progress)
    }

    /// Moves the bucket holding `pos` to the bin with the fewest free bytes that takes it, if its
    /// page is under `EVACUATE_BELOW_BYTES` and not a bin itself; if no bin takes it, its page
    /// becomes a bin (it keeps its buckets and takes others').
    fn repack(&mut self, heap: &mut Heap, pos: u64, progress: &mut CompactProgress) {
        let (page, t, _) = self.locate(pos);
        if self.compact.bins.contains(&Some(page)) || pg(page).used_bytes() >= EVACUATE_BELOW_BYTES
        {
            return;
        }
        if let Some(bin) = self.best_bin(bucket_bytes(page, t), 1, &[page]) {
            self.move_bucket(heap, (page, t), bin, progress);
        } else if free_slots(page) > 0 {
            self.open_bin(page);
        }
    }

    /// Diagnostics for `examples/compact_profile.rs`: (used bytes, tenants, is a bin) of every
    /// page.
    #[doc(hidden)]
    pub fn page_census(&self) -> Vec<(usize, usize, bool)> {
        self.pages
            .iter()
            .map(|&p| {
                (
                    pg(p).used_bytes(),
                    pg(p).tenant_count(),
                    self.compact.bins.contains(&Some(p)),
                )
            })
            .collect()
    }

    /// The bin (not in `exclude`) with the fewest free bytes among those with `slots` free
    /// tenant slots and `bytes` free bytes: best fit, which leaves the larger holes for the
    /// larger buckets.
    fn best_bin(&self, bytes: usize, slots: usize, exclude: &[PagePtr]) -> Option<PagePtr> {
        self.compact
            .bins
            .iter()
            .flatten()
            .copied()
            .filter(|bin| !exclude.contains(bin))
            .filter(|&bin| free_slots(bin) >= slots && pg(bin).free_bytes() >= bytes)
            .min_by_key(|&bin| pg(bin).free_bytes())
    }

    /// Makes `page` a bin, in an empty place or in place of the bin with the least room (a bin
    /// without a free slot has none).
    fn open_bin(&mut self, page: PagePtr) {
        let room = |bin: &Option<PagePtr>| {
            bin.map_or(0, |b| {
                if free_slots(b) > 0 {
                    1 + pg(b).free_bytes()
                } else {
                    0
                }
            })
        };
        let place = self
            .compact
            .bins
            .iter()
            .position(Option::is_none)
            .or_else(|| (0..BINS).min_by_key(|&i| room(&self.compact.bins[i])))
            .expect("BINS > 0");
        self.compact.bins[place] = Some(page);
    }

    /// Moves bucket `from` (page, tenant slot) to page `to`, freeing its page if that was its
    /// last bucket. False, and nothing changed, if `to` lacks the room.
    fn move_bucket(
        &mut self,
        heap: &mut Heap,
        from: (PagePtr, usize),
        to: PagePtr,
        progress: &mut CompactProgress,
    ) -> bool {
        if !self.move_tenant(from.0, from.1, to) {
            return false;
        }
        progress.moved += 1;
        if pg(from.0).tenant_count() == 0 {
            self.free_page(heap, from.0);
            progress.freed += 1;
            self.compact.pass_gain += 1;
            self.compact.pass_freed += 1;
        }
        true
    }
}
