//! The 8 KiB page: a header, a run index with one slot per 64-byte piece, and a dense run area in
//! which the entries of each run sit back to back, crossing piece boundaries freely.
//!
//! ```text
//!  page (8192 bytes = 128 pieces x 64, one heap block, 8 KiB-aligned)
//!  +---------------------------------------------------------------------------------+
//!  | header 51 B | run index 64 x 5 B  | group ends 16 x 2 B | run area 7789 B        |
//!  +---------------------------------------------------------------------------------+
//!  0             51                    371                   403                   8192
//!
//!  page header (little-endian)
//!   0  u16 entry_count        sum of the runs' counts
//!   2  u16 used_bytes         hints + entries over all runs
//!   4  u8  tenant_count       occupied tenant slots (1..=8)
//!   5  u8  magic = 0xD6
//!   6  u8  kind               0 = byte strings (PageHash), 1 = integers (IntMap)
//!   7  u32 page_index         position in the map's page list
//!  11  8 x tenant slot        { u32 prefix, u8 depth }, depth 0xFF = empty slot
//!
//!  run index: slot p is bits (p % 2) * 20 .. + 20 of the 5-byte LE pair at 51 + (p / 2) * 5:
//!             start (13 bits, offset from byte 403) | count (7 bits, <= 127) << 13
//!  group end g (u16 LE): byte where the last run of group g (runs 8g..8g+8) ends
//!
//!  run area: runs in home order, grouped by eight; gaps (zero bytes) only after a group
//!  +--------------------------------------+-----+--------------------------------+-----+---
//!  | run 0 | run 1 | ... | run 7          | gap | run 8 | ... | run 15           | gap | ...
//!  +--------------------------------------+-----+--------------------------------+-----+---
//!  run p = | hints[count] | entry 0 | entry 1 | ... |     (entries encoded by the map's codec)
//! ```
//!
//! The table names an entry's run (its bucket's tenant slot and four hash bits, `table.rs`); a
//! lookup reads that run's index slot and then only that run: it never examines an entry of
//! another run, so the probe bound of the piece-bin format holds with a distance of zero.
//! Hints come first in the run so one word load compares up to eight of them (SWAR) before any
//! entry byte is decoded.
//!
//! Invariants (checked by `validate`):
//! - runs of a group are contiguous: `end(p) == start(p + 1)` inside a group, the last run ends
//!   at the group end; the gap from a group end to the next group's start (or the page end) is
//!   zero bytes; group 0 starts at the run area's first byte;
//! - `end(p) == start(p) + count(p) + sum(entry lengths)`;
//! - `entry_count == sum(count)` and `used_bytes == sum(end(p) - start(p))`, so
//!   `used_bytes + sum(gaps) == AREA_BYTES` (every byte of the run area is a hint, an entry byte
//!   or a gap byte).
//!
//! Why groups with gaps: with a single gap at the page's end an insert would move half the
//! page (~3.7 KiB) on average. A gap after every eighth run bounds the common insert to moving
//! the tail of its group (~250 B); a group whose gap is too small takes room from the nearest
//! groups on either side by sliding them (`ensure_gap`), so the page fills to its last byte
//! before the table has to split or shed. Storing the group ends (32 B) spares a decode of the
//! group's last run on every insert and removal.
//!
//! Tenants: a page holds the entries of up to eight *buckets* (hash prefixes with their own
//! depth) — see `table.rs` for why, and for which runs a bucket owns. This module only stores
//! the tenant table; it does not interpret it. `take_group` and `spread_gaps` serve moving a
//! bucket's groups out of a page.
//!
//! All functions here are safe code over a `[u8; 8192]`; `raw.rs` turns heap pointers into
//! `&Page`/`&mut Page`.

/// Bytes in a page (one heap block).
pub const PAGE_BYTES: usize = heap::BLOCK_BYTES;
/// Bytes in a piece: the page is addressed as 128 of them, one run index slot each.
pub const PIECE_BYTES: usize = 64;
/// Pieces in a page (homes, runs).
pub const PIECE_COUNT: usize = PAGE_BYTES / PIECE_BYTES;
/// First byte of the tenant table.
const TENANTS_AT: usize = 11;
/// Bytes of the page header.
pub const HEADER_BYTES: usize = TENANTS_AT + TENANT_SLOTS * 5;
/// Bytes of a pair of run index slots (20 bits each).
const SLOT_PAIR_BYTES: usize = 5;
/// Runs per group (a gap follows each group).
pub const GROUP_RUNS: usize = 8;
/// Groups per page.
pub const GROUP_COUNT: usize = PIECE_COUNT / GROUP_RUNS;
/// First byte of the group-end array.
const GROUP_ENDS_AT: usize = HEADER_BYTES + PIECE_COUNT / 2 * SLOT_PAIR_BYTES;
/// First byte of the run area.
pub const AREA_START: usize = GROUP_ENDS_AT + GROUP_COUNT * 2;
/// Bytes of the run area: what hints and entries can use.
pub const AREA_BYTES: usize = PAGE_BYTES - AREA_START;
/// Most entries one run can hold (7 bits of the index slot). Uniform hashing puts ~2..12
/// entries in a run; a run that reaches this makes its bucket split (`table.rs`), so a flood
/// of keys aimed at one run costs splits, not longer probes.
pub const RUN_COUNT_MAX: usize = (1 << 7) - 1;
/// Tenant slots per page.
pub const TENANT_SLOTS: usize = 8;
/// Depth value of an empty tenant slot.
pub const NO_TENANT: u8 = 0xFF;
/// Largest entry (hint byte not included); longer keys and values go out of line.
pub const ENTRY_BYTES_MAX: usize = 120;
/// Size of the scratch buffers entries are encoded into.
pub const ENTRY_BUF_BYTES: usize = 128;
const MAGIC: u8 = 0xD6;
const START_MASK: u32 = (1 << 13) - 1;

const _: () = assert!(PIECE_COUNT == 128);
const _: () = assert!(AREA_START == 403 && AREA_BYTES == 7789);
const _: () = assert!(AREA_BYTES <= START_MASK as usize);
const _: () = assert!(ENTRY_BYTES_MAX < ENTRY_BUF_BYTES);

/// What `Page::edit_runs` does with an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    Keep,
    Drop,
    Rewrite,
}

/// What kind of entries a page holds (checked by `validate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bytes = 0,
    Int = 1,
}

/// A copy of a page's tenant table: what decoding an entry's hash needs from the page.
#[derive(Clone, Copy, Debug)]
pub struct Tenants {
    slots: [(u32, u8); TENANT_SLOTS],
}

impl Tenants {
    /// Tenant in slot `t`: `(prefix, depth)`, or `None` for an empty slot.
    #[inline]
    pub fn get(&self, t: usize) -> Option<(u32, u8)> {
        let (prefix, depth) = self.slots[t];
        (depth != NO_TENANT).then_some((prefix, depth))
    }
}

/// One page. Always used by reference: either a heap block (`raw.rs`) or a boxed scratch page.
#[repr(C, align(64))]
pub struct Page {
    pub bytes: [u8; PAGE_BYTES],
}

impl std::fmt::Debug for Page {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Page")
            .field("entry_count", &self.entry_count())
            .field("used_bytes", &self.used_bytes())
            .field("tenant_count", &self.tenant_count())
            .finish_non_exhaustive()
    }
}

/// Last run of group `g`.
#[inline]
const fn last_run(g: usize) -> usize {
    g * GROUP_RUNS + GROUP_RUNS - 1
}

impl Page {
    /// A zeroed page on the Rust heap (page-level tests).
    #[cfg(test)]
    pub fn boxed() -> Box<Page> {
        Box::new(Page {
            bytes: [0; PAGE_BYTES],
        })
    }

    #[inline]
    fn u16_at(&self, at: usize) -> u16 {
        u16::from_le_bytes([self.bytes[at], self.bytes[at + 1]])
    }

    #[inline]
    fn set_u16_at(&mut self, at: usize, v: u16) {
        self.bytes[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }

    /// Clears the page and writes a fresh header with no tenants; the free bytes are spread
    /// evenly over the sixteen group gaps.
    pub fn init(&mut self, kind: Kind, page_index: u32) {
        self.bytes.fill(0);
        self.bytes[5] = MAGIC;
        self.bytes[6] = kind as u8;
        self.set_page_index(page_index as usize);
        for t in 0..TENANT_SLOTS {
            self.bytes[TENANTS_AT + t * 5 + 4] = NO_TENANT;
        }
        for g in 0..GROUP_COUNT {
            let start = AREA_START + g * AREA_BYTES / GROUP_COUNT;
            for p in g * GROUP_RUNS..(g + 1) * GROUP_RUNS {
                self.set_slot(p, start, 0);
            }
            self.set_group_end(g, start);
        }
    }

    pub fn entry_count(&self) -> usize {
        self.u16_at(0) as usize
    }

    pub fn used_bytes(&self) -> usize {
        self.u16_at(2) as usize
    }

    /// Bytes of the run area that are neither hints nor entries.
    pub fn free_bytes(&self) -> usize {
        AREA_BYTES - self.used_bytes()
    }

    pub fn tenant_count(&self) -> usize {
        self.bytes[4] as usize
    }

    pub fn page_index(&self) -> usize {
        u32::from_le_bytes(self.bytes[7..11].try_into().expect("4 bytes")) as usize
    }

    pub fn set_page_index(&mut self, index: usize) {
        self.bytes[7..11].copy_from_slice(&(index as u32).to_le_bytes());
    }

    /// Tenant in slot `t`: `(prefix, depth)`, or `None` for an empty slot.
    #[inline]
    pub fn tenant(&self, t: usize) -> Option<(u32, u8)> {
        let at = TENANTS_AT + t * 5;
        let depth = self.bytes[at + 4];
        (depth != NO_TENANT).then(|| {
            (
                u32::from_le_bytes(self.bytes[at..at + 4].try_into().expect("4 bytes")),
                depth,
            )
        })
    }

    /// A copy of the tenant table.
    #[inline]
    pub fn tenants(&self) -> Tenants {
        Tenants {
            slots: std::array::from_fn(|t| {
                let at = TENANTS_AT + t * 5;
                let prefix =
                    u32::from_le_bytes(self.bytes[at..at + 4].try_into().expect("4 bytes"));
                (prefix, self.bytes[at + 4])
            }),
        }
    }

    /// Depth of every slot (`NO_TENANT` for empty ones), for codecs that need it to decode.
    #[inline]
    pub fn tenant_depths(&self) -> [u8; TENANT_SLOTS] {
        std::array::from_fn(|t| self.bytes[TENANTS_AT + t * 5 + 4])
    }

    pub fn set_tenant(&mut self, t: usize, tenant: Option<(u32, u8)>) {
        let at = TENANTS_AT + t * 5;
        let was = self.bytes[at + 4] != NO_TENANT;
        if let Some((prefix, depth)) = tenant {
            assert!(depth != NO_TENANT);
            self.bytes[at..at + 4].copy_from_slice(&prefix.to_le_bytes());
            self.bytes[at + 4] = depth;
            self.bytes[4] += u8::from(!was);
        } else {
            self.bytes[at..at + 4].fill(0);
            self.bytes[at + 4] = NO_TENANT;
            self.bytes[4] -= u8::from(was);
        }
    }

    /// The lowest empty tenant slot, if any.
    pub fn free_tenant_slot(&self) -> Option<usize> {
        (0..TENANT_SLOTS).find(|&t| self.bytes[TENANTS_AT + t * 5 + 4] == NO_TENANT)
    }

    /// `(start, count)` of run `p`: its first byte in the page and its number of entries.
    #[inline]
    fn slot(&self, p: usize) -> (usize, usize) {
        let at = HEADER_BYTES + p / 2 * SLOT_PAIR_BYTES;
        // The 8-byte load stays inside the page (the last pair is followed by the group ends).
        let pair = u64::from_le_bytes(self.bytes[at..at + 8].try_into().expect("8 bytes"));
        let v = (pair >> ((p % 2) * 20)) as u32;
        (
            AREA_START + (v & START_MASK) as usize,
            ((v >> 13) & 0x7F) as usize,
        )
    }

    #[inline]
    fn set_slot(&mut self, p: usize, start: usize, count: usize) {
        debug_assert!((AREA_START..=PAGE_BYTES).contains(&start) && count <= RUN_COUNT_MAX);
        let v = (start - AREA_START) as u64 | ((count as u64) << 13);
        let at = HEADER_BYTES + p / 2 * SLOT_PAIR_BYTES;
        let mut pair = [0u8; 8];
        pair[..5].copy_from_slice(&self.bytes[at..at + 5]);
        let shift = (p % 2) * 20;
        let pair = (u64::from_le_bytes(pair) & !(0xF_FFFF << shift)) | (v << shift);
        self.bytes[at..at + 5].copy_from_slice(&pair.to_le_bytes()[..5]);
    }

    #[inline]
    fn run_start(&self, p: usize) -> usize {
        self.slot(p).0
    }

    /// Moves the starts of runs `from..to` by `delta`: one add per slot pair. The starts stay
    /// in 0..8192 (13 bits), so no carry or borrow crosses from one 20-bit slot to the next.
    #[inline]
    fn shift_starts(&mut self, from: usize, to: usize, delta: isize) {
        if from >= to {
            return;
        }
        let d = delta.unsigned_abs() as u64;
        for pair in from / 2..=(to - 1) / 2 {
            // The pair's even slot is in range unless it is just below `from`, its odd slot
            // unless it is `to`: masks, not branches.
            let add =
                (d * u64::from(2 * pair >= from)) | ((d << 20) * u64::from(2 * pair + 1 < to));
            // An 8-byte load and store: the three bytes past the pair go back unchanged (the
            // last pair is followed by the group ends), and no start carries out of its bits.
            let at = HEADER_BYTES + pair * SLOT_PAIR_BYTES;
            let word: &mut [u8; 8] = (&mut self.bytes[at..at + 8]).try_into().expect("8 bytes");
            let v = u64::from_le_bytes(*word);
            *word = if delta >= 0 { v + add } else { v - add }.to_le_bytes();
        }
    }

    #[inline]
    fn group_end(&self, g: usize) -> usize {
        self.u16_at(GROUP_ENDS_AT + 2 * g) as usize
    }

    #[inline]
    fn set_group_end(&mut self, g: usize, end: usize) {
        self.set_u16_at(GROUP_ENDS_AT + 2 * g, end as u16);
    }

    /// First byte after group `g`'s gap: the next group's start, or the page end.
    #[inline]
    fn group_limit(&self, g: usize) -> usize {
        if g + 1 < GROUP_COUNT {
            self.run_start((g + 1) * GROUP_RUNS)
        } else {
            PAGE_BYTES
        }
    }

    /// Byte just past run `p`.
    #[inline]
    pub fn run_end(&self, p: usize) -> usize {
        if p % GROUP_RUNS == GROUP_RUNS - 1 {
            self.group_end(p / GROUP_RUNS)
        } else {
            self.run_start(p + 1)
        }
    }

    /// Starts loading where run `p` probably is (its place in a page ~15/16 full with its
    /// bytes spread evenly over the groups) while the caller reads its index slot: the two
    /// loads overlap instead of following each other. The guess reads nothing from the page,
    /// so a lookup of a byte-string map touches no header line.
    #[inline]
    pub fn prefetch_run(&self, p: usize) {
        const USED_PER_RUN: usize = AREA_BYTES * 15 / 16 / PIECE_COUNT;
        let g = p / GROUP_RUNS;
        let group_at = AREA_START + g * AREA_BYTES / GROUP_COUNT;
        let at = (group_at + (p % GROUP_RUNS) * USED_PER_RUN).min(PAGE_BYTES - 1);
        crate::raw::prefetch(&self.bytes[at]);
    }

    /// Starts loading what a lookup in run `p` reads first: `p`'s index slot (a lookup reads
    /// nothing else from the page before the run).
    #[inline]
    pub fn prefetch_index(&self, p: usize) {
        crate::raw::prefetch(&self.bytes[HEADER_BYTES + p / 2 * SLOT_PAIR_BYTES]);
    }

    /// Starts loading run `p` itself (its first two cache lines), from its index slot.
    #[inline]
    pub fn prefetch_run_at(&self, p: usize) {
        let (start, count) = self.slot(p);
        if count > 0 {
            crate::raw::prefetch(&self.bytes[start]);
            crate::raw::prefetch(&self.bytes[(start + 64).min(PAGE_BYTES - 1)]);
        }
    }

    /// Number of entries homed at piece `p`.
    #[inline]
    pub fn piece_count(&self, p: usize) -> usize {
        self.slot(p).1
    }

    /// The hint bytes of run `p`.
    #[inline]
    pub fn hints(&self, p: usize) -> &[u8] {
        let (s, c) = self.slot(p);
        &self.bytes[s..s + c]
    }

    /// `len` bytes from byte `at` of the page (an entry [`Page::find`] located).
    #[inline]
    pub fn bytes_at(&self, at: usize, len: usize) -> &[u8] {
        &self.bytes[at..at + len]
    }

    /// The entry bytes of run `p` (all entries, back to back).
    #[inline]
    pub fn entries(&self, p: usize) -> &[u8] {
        &self.bytes[self.entries_at(p)..self.run_end(p)]
    }

    /// The byte where run `p`'s entries start (after its hints).
    #[inline]
    pub fn entries_at(&self, p: usize) -> usize {
        let (s, c) = self.slot(p);
        s + c
    }

    /// Sets byte `at` of the page: an entry's first byte, which the map's user owns (PageHash's
    /// meta) and the page never interprets.
    #[inline]
    pub fn set_byte(&mut self, at: usize, byte: u8) {
        self.bytes[at] = byte;
    }

    /// Overwrites bytes of an entry in place from `at`, keeping its length: bytes the map's
    /// codec owns and the page never interprets (PageHash's meta byte, a moved blob's handle).
    #[inline]
    pub fn set_bytes(&mut self, at: usize, bytes: &[u8]) {
        self.bytes[at..at + bytes.len()].copy_from_slice(bytes);
    }

    /// Whether an entry of `len` bytes (plus its hint) fits in run `p`: the page has the room
    /// somewhere (`ensure_gap` brings it to the run's group) and the run's count has room.
    #[inline]
    pub fn fits(&self, p: usize, len: usize) -> bool {
        self.used_bytes() + 1 + len <= AREA_BYTES && self.piece_count(p) < RUN_COUNT_MAX
    }

    fn add_totals(&mut self, entries: isize, bytes: isize) {
        let count = self.entry_count().wrapping_add_signed(entries);
        let used = self.used_bytes().wrapping_add_signed(bytes);
        self.set_u16_at(0, count as u16);
        self.set_u16_at(2, used as u16);
    }

    /// Bytes used by groups `g` (its runs, not its gap).
    #[inline]
    fn group_used(&self, g: usize) -> usize {
        self.group_end(g) - self.run_start(g * GROUP_RUNS)
    }

    /// Slides group `g` (its runs and group end) by `delta` bytes; the caller keeps the target
    /// range inside the gaps around it and zeroes what the group leaves behind.
    fn slide_group(&mut self, g: usize, delta: isize) {
        let (start, end) = (self.run_start(g * GROUP_RUNS), self.group_end(g));
        self.bytes
            .copy_within(start..end, start.wrapping_add_signed(delta));
        self.shift_starts(g * GROUP_RUNS, (g + 1) * GROUP_RUNS, delta);
        self.set_group_end(g, end.wrapping_add_signed(delta));
    }

    /// Makes group `g`'s gap at least `need` bytes by sliding neighbouring groups towards their
    /// own gaps: to the right (groups g+1.. move right) or to the left (groups ..=g move left),
    /// whichever moves fewer bytes, or both when neither side alone has the room. False if the
    /// page lacks `need` free bytes (nothing changed). Bounded: at most 16 groups move, each
    /// once per side.
    fn ensure_gap(&mut self, g: usize, need: usize) -> bool {
        let gap = self.group_limit(g) - self.group_end(g);
        if gap >= need {
            return true;
        }
        if self.free_bytes() < need {
            return false;
        }
        let want = need - gap;
        let (right_room, right_cost) = self.scan_right(g, want);
        let (left_room, left_cost) = self.scan_left(g, want);
        // A slide costs the bytes of the groups it moves whatever the room it brings, so it
        // brings half of the surplus the moved groups' gaps hold too: the next inserts into this
        // group then find room without a slide.
        if right_room >= want && (left_room < want || right_cost <= left_cost) {
            self.take_right(g, want + (right_room - want) / 2);
        } else if left_room >= want {
            self.take_left(g, want + (left_room - want) / 2);
        } else {
            self.take_right(g, right_room);
            self.take_left(g, want - right_room);
        }
        debug_assert!(self.group_limit(g) - self.group_end(g) >= need);
        true
    }

    /// Room the gaps right of group `g` hold, up to the first group where it reaches `want`,
    /// and the bytes of the groups that would move.
    fn scan_right(&self, g: usize, want: usize) -> (usize, usize) {
        let (mut room, mut cost) = (0, 0);
        for j in g + 1..GROUP_COUNT {
            cost += self.group_used(j);
            room += self.group_limit(j) - self.group_end(j);
            if room >= want {
                break;
            }
        }
        (room, cost)
    }

    /// Room the gaps left of group `g` hold, up to the first group where it reaches `want`, and
    /// the bytes of the groups that would move.
    fn scan_left(&self, g: usize, want: usize) -> (usize, usize) {
        let (mut room, mut cost) = (0, 0);
        for j in (0..g).rev() {
            cost += self.group_used(j + 1);
            room += self.group_limit(j) - self.group_end(j);
            if room >= want {
                break;
            }
        }
        (room, cost)
    }

    /// Moves `want` bytes of gap from the groups right of `g` into `g`'s gap: group g+1 moves
    /// right by `want`, and each later group by what the gaps before it could not absorb.
    fn take_right(&mut self, g: usize, want: usize) {
        if want == 0 {
            return;
        }
        let mut shifts = [0usize; GROUP_COUNT];
        let mut remaining = want;
        let mut last = g;
        for (j, shift) in shifts.iter_mut().enumerate().skip(g + 1) {
            *shift = remaining;
            last = j;
            let gap = self.group_limit(j) - self.group_end(j);
            if gap >= remaining {
                break;
            }
            remaining -= gap;
        }
        let freed_at = self.run_start((g + 1) * GROUP_RUNS);
        for j in (g + 1..=last).rev() {
            self.slide_group(j, shifts[j] as isize);
        }
        self.bytes[freed_at..freed_at + want].fill(0);
    }

    /// Moves `want` bytes of gap from the groups left of `g` into `g`'s gap: group g moves left
    /// by `want`, and each earlier group by what the gaps after it could not absorb.
    fn take_left(&mut self, g: usize, want: usize) {
        if want == 0 {
            return;
        }
        let mut shifts = [0usize; GROUP_COUNT];
        let mut remaining = want;
        let mut first = g;
        for j in (1..=g).rev() {
            shifts[j] = remaining;
            first = j;
            let gap = self.group_limit(j - 1) - self.group_end(j - 1);
            if gap >= remaining {
                break;
            }
            remaining -= gap;
        }
        let freed_end = self.group_end(g);
        for (j, &shift) in shifts.iter().enumerate().take(g + 1).skip(first) {
            self.slide_group(j, -(shift as isize));
        }
        self.bytes[freed_end - want..freed_end].fill(0);
    }

    /// Resizes the `old` bytes at `at` (inside run `p`, or at its end) to `new` bytes by moving
    /// the rest of `p`'s group; the group's gap must already have the room. The new bytes hold
    /// whatever was there (the caller writes them); bytes given up become zero gap bytes.
    fn resize_in_group(&mut self, p: usize, at: usize, old: usize, new: usize) {
        let g = p / GROUP_RUNS;
        let end = self.group_end(g);
        self.bytes.copy_within(at + old..end, at + new);
        let delta = new as isize - old as isize;
        if new < old {
            self.bytes[end - (old - new)..end].fill(0);
        }
        self.shift_starts(p + 1, last_run(g) + 1, delta);
        self.set_group_end(g, end.wrapping_add_signed(delta));
        self.add_totals(0, delta);
    }

    /// Appends an entry to run `p`. The caller checked `fits`.
    pub fn push(&mut self, p: usize, hint: u8, entry: &[u8]) {
        assert!(self.fits(p, entry.len()), "push into a full page");
        let n = entry.len() + 1;
        let room = self.ensure_gap(p / GROUP_RUNS, n);
        debug_assert!(room);
        let end = self.run_end(p);
        self.resize_in_group(p, end, 0, n);
        let (s, c) = self.slot(p);
        // The entries move up one byte to make room for the new hint.
        self.bytes.copy_within(s + c..end, s + c + 1);
        self.bytes[s + c] = hint;
        self.bytes[end + 1..end + n].copy_from_slice(entry);
        self.set_slot(p, s, c + 1);
        self.add_totals(1, 0);
    }

    /// Appends entries to the runs of group `g` in one pass: run `g * 8 + i` gets `counts[i]`
    /// entries of `lens[i]` bytes in all, whose hints are the next `counts[i]` bytes of `hints`
    /// and whose bytes are the next `lens[i]` bytes of `entries`. What a series of `push`es
    /// would do, with one slide for the room and one move per run instead of a move of the
    /// group's tail per entry. The caller checked the room: `free_bytes()` holds the batch and
    /// no run passes `RUN_COUNT_MAX`.
    pub fn append_group(
        &mut self,
        g: usize,
        counts: &[usize; GROUP_RUNS],
        lens: &[usize; GROUP_RUNS],
        hints: &[u8],
        entries: &[u8],
    ) {
        let total = hints.len() + entries.len();
        assert!(
            counts.iter().sum::<usize>() == hints.len()
                && lens.iter().sum::<usize>() == entries.len()
        );
        let room = self.ensure_gap(g, total);
        assert!(room, "append_group into a full page");
        let first = g * GROUP_RUNS;
        let mut old = [((0, 0), 0); GROUP_RUNS];
        for (i, run) in old.iter_mut().enumerate() {
            run.0 = self.slot(first + i);
        }
        for i in 0..GROUP_RUNS - 1 {
            old[i].1 = old[i + 1].0.0;
        }
        old[GROUP_RUNS - 1].1 = self.group_end(g);
        // Where each run's batch starts in `hints` / `entries`, and how far the run moves up
        // (by the batches of the runs before it).
        let (mut h_at, mut e_at, mut shift) = ([0; GROUP_RUNS], [0; GROUP_RUNS], [0; GROUP_RUNS]);
        for i in 1..GROUP_RUNS {
            h_at[i] = h_at[i - 1] + counts[i - 1];
            e_at[i] = e_at[i - 1] + lens[i - 1];
            shift[i] = shift[i - 1] + counts[i - 1] + lens[i - 1];
        }
        // Last run first: every run moves up, into bytes its successor has already vacated
        // (or the gap), so nothing is overwritten before it has moved. Runs that gain nothing
        // move by the same shift as their neighbours up to the previous run that gains, so a
        // stretch of them moves as one block.
        let mut stretch: Option<(usize, usize, usize)> = None; // (start, end, shift)
        for i in (0..GROUP_RUNS).rev() {
            let ((s, c), end) = old[i];
            let (k, n) = (counts[i], lens[i]);
            if k == 0 {
                if shift[i] > 0 {
                    let hi = stretch.map_or(end, |(_, hi, _)| hi);
                    stretch = Some((s, hi, shift[i]));
                    self.set_slot(first + i, s + shift[i], c);
                }
                continue;
            }
            if let Some((lo, hi, by)) = stretch.take() {
                self.bytes.copy_within(lo..hi, lo + by);
            }
            let to = s + shift[i];
            let entries_to = to + c + k;
            self.bytes.copy_within(s + c..end, entries_to);
            let tail = entries_to + (end - s - c);
            self.bytes[tail..tail + n].copy_from_slice(&entries[e_at[i]..e_at[i] + n]);
            self.bytes.copy_within(s..s + c, to);
            self.bytes[to + c..to + c + k].copy_from_slice(&hints[h_at[i]..h_at[i] + k]);
            self.set_slot(first + i, to, c + k);
        }
        if let Some((lo, hi, by)) = stretch {
            self.bytes.copy_within(lo..hi, lo + by);
        }
        let end = self.group_end(g);
        self.set_group_end(g, end + total);
        self.add_totals(hints.len() as isize, total as isize);
    }

    /// Removes entry `index` (at `offset` in `entries(p)`, `len` bytes) from run `p`.
    pub fn remove(&mut self, p: usize, index: usize, offset: usize, len: usize) {
        let (s, c) = self.slot(p);
        assert!(index < c && s + c + offset + len <= self.run_end(p));
        let at = s + c + offset;
        // Close the hint's gap first (the hints after it and the entries before the removed one
        // move down a byte); the hole is then the `len + 1` bytes just before the next entry.
        self.bytes.copy_within(s + index + 1..at, s + index);
        self.resize_in_group(p, at - 1, len + 1, 0);
        self.set_slot(p, s, c - 1);
        self.add_totals(-1, 0);
    }

    /// The length of run `p`'s first entry (0 for an empty run): every entry's, in a run of
    /// uniform length.
    #[inline]
    pub fn first_len(&self, p: usize, len_of: impl Fn(&[u8]) -> usize) -> usize {
        let (s, c) = self.slot(p);
        if c == 0 {
            0
        } else {
            len_of(&self.bytes[s + c..])
        }
    }

    /// Whether the entries of run `p` all have one length.
    pub fn run_is_uniform(&self, p: usize, len_of: impl Fn(&[u8]) -> usize) -> bool {
        let (s, c) = self.slot(p);
        let end = self.run_end(p);
        if c < 2 {
            return true;
        }
        let width = len_of(&self.bytes[s + c..end]);
        let mut at = s + c;
        (0..c).all(|_| {
            let len = len_of(&self.bytes[at..end]);
            at += len;
            len == width
        })
    }

    /// Replaces the entry bytes of run `p` (its hints stay) by `entries`, which hold as many
    /// entries. The caller checked that the page has the room.
    pub fn set_run_entries(&mut self, p: usize, entries: &[u8]) {
        let old = self.entries(p).len();
        if entries.len() > old {
            let room = self.ensure_gap(p / GROUP_RUNS, entries.len() - old);
            assert!(room, "set_run_entries without room");
        }
        let (s, c) = self.slot(p);
        self.resize_in_group(p, s + c, old, entries.len());
        self.bytes[s + c..s + c + entries.len()].copy_from_slice(entries);
    }

    /// Replaces the entry at `offset` (`old_len` bytes) of run `p` by `entry`; returns false
    /// (and changes nothing) if the page lacks the room to grow it.
    pub fn replace(&mut self, p: usize, offset: usize, old_len: usize, entry: &[u8]) -> bool {
        if entry.len() > old_len && !self.ensure_gap(p / GROUP_RUNS, entry.len() - old_len) {
            return false;
        }
        let (s, c) = self.slot(p);
        let at = s + c + offset;
        if entry.len() != old_len {
            self.resize_in_group(p, at, old_len, entry.len());
        }
        self.bytes[at..at + entry.len()].copy_from_slice(entry);
        true
    }

    /// Empties group `g` into an [`Page::append_group`] batch: per run its entry count
    /// (`counts`) and entry bytes (`lens`), its hints appended to `hints` and its entries to
    /// `entries`, run after run. The group's bytes become gap.
    pub fn take_group(
        &mut self,
        g: usize,
        counts: &mut [usize; GROUP_RUNS],
        lens: &mut [usize; GROUP_RUNS],
        hints: &mut Vec<u8>,
        entries: &mut Vec<u8>,
    ) {
        let first = g * GROUP_RUNS;
        let start = self.run_start(first);
        let end = self.group_end(g);
        let mut total = 0;
        for i in 0..GROUP_RUNS {
            let ((s, c), e) = (self.slot(first + i), self.run_end(first + i));
            counts[i] = c;
            lens[i] = e - s - c;
            hints.extend_from_slice(&self.bytes[s..s + c]);
            entries.extend_from_slice(&self.bytes[s + c..e]);
            self.set_slot(first + i, start, 0);
            total += c;
        }
        self.bytes[start..end].fill(0);
        self.set_group_end(g, start);
        self.add_totals(-(total as isize), -((end - start) as isize));
    }

    /// Spreads the page's free bytes over the groups' gaps in proportion to the groups' bytes
    /// (what uniform inserts will ask of each), sliding every group once. After a bucket's two
    /// groups leave a page, its free bytes sit in one place, and each insert elsewhere would
    /// slide the groups in between to fetch a share; one pass here costs about what those
    /// slides would cost for the first few inserts.
    pub fn spread_gaps(&mut self) {
        let used = self.used_bytes();
        let free = AREA_BYTES - used;
        let mut starts = [0usize; GROUP_COUNT];
        let mut at = AREA_START;
        let mut given = 0;
        for (g, start) in starts.iter_mut().enumerate() {
            *start = at;
            let bytes = self.group_used(g);
            let share = if g + 1 == GROUP_COUNT {
                free - given
            } else {
                free * bytes / used.max(1)
            };
            given += share;
            at += bytes + share;
        }
        // Groups moving down go first, lowest first; then groups moving up, highest first:
        // each lands where no group that has yet to move still is.
        for (g, &to) in starts.iter().enumerate() {
            let from = self.run_start(g * GROUP_RUNS);
            if to < from {
                self.slide_group(g, to as isize - from as isize);
            }
        }
        for (g, &to) in starts.iter().enumerate().rev() {
            let from = self.run_start(g * GROUP_RUNS);
            if to > from {
                self.slide_group(g, to as isize - from as isize);
            }
        }
        for g in 0..GROUP_COUNT {
            let (end, limit) = (self.group_end(g), self.group_limit(g));
            self.bytes[end..limit].fill(0);
        }
    }

    /// Bytes (hints and entries) of the runs of groups `groups`.
    #[inline]
    pub fn groups_used(&self, groups: std::ops::Range<usize>) -> usize {
        groups.map(|g| self.group_used(g)).sum()
    }

    /// Edits the runs of `groups` that `touch` names in one pass: `decide(piece, index, hint,
    /// bytes)` keeps, drops or rewrites each of their entries; `rewrite(piece, hint, bytes, out)`
    /// returns a rewritten entry's new length, never longer than it was. Each group is compacted once
    /// (runs only shrink, so they move down within their group); other runs are not decoded,
    /// only moved down as blocks after a change before them in their group.
    pub fn edit_runs(
        &mut self,
        groups: std::ops::Range<usize>,
        touch: impl Fn(usize) -> bool,
        len_of: impl Fn(&[u8]) -> usize,
        mut decide: impl FnMut(usize, usize, u8, &[u8]) -> Edit,
        mut rewrite: impl FnMut(usize, u8, &[u8], &mut [u8; ENTRY_BUF_BYTES]) -> usize,
    ) {
        let mut entries: Vec<u8> = Vec::new();
        let mut edits = [Edit::Keep; RUN_COUNT_MAX];
        let mut hints = [0u8; RUN_COUNT_MAX];
        let mut out = [0u8; ENTRY_BUF_BYTES];
        for g in groups {
            let old_end = self.group_end(g);
            let mut write = self.run_start(g * GROUP_RUNS);
            for p in g * GROUP_RUNS..(g + 1) * GROUP_RUNS {
                // `p`'s slot and end are still the old ones: only runs before it moved.
                let ((s, c), end) = (self.slot(p), self.run_end(p));
                if !touch(p) {
                    if write != s {
                        self.bytes.copy_within(s..end, write);
                        self.set_slot(p, write, c);
                    }
                    write += end - s;
                    continue;
                }
                let mut changed = false;
                let mut at = s + c;
                for (i, edit) in edits.iter_mut().enumerate().take(c) {
                    let len = len_of(&self.bytes[at..end]);
                    *edit = decide(p, i, self.bytes[s + i], &self.bytes[at..at + len]);
                    changed |= *edit != Edit::Keep;
                    at += len;
                }
                if !changed {
                    self.bytes.copy_within(s..end, write);
                    self.set_slot(p, write, c);
                    write += end - s;
                    continue;
                }
                entries.clear();
                let (mut kept, mut at) = (0, s + c);
                for (i, &edit) in edits.iter().enumerate().take(c) {
                    let len = len_of(&self.bytes[at..end]);
                    let (hint, bytes) = (self.bytes[s + i], &self.bytes[at..at + len]);
                    let new = match edit {
                        Edit::Keep => Some(bytes),
                        Edit::Drop => None,
                        Edit::Rewrite => {
                            let n = rewrite(p, hint, bytes, &mut out);
                            assert!(n <= len, "rewrite grew an entry");
                            Some(&out[..n])
                        }
                    };
                    if let Some(new) = new {
                        entries.extend_from_slice(new);
                        hints[kept] = hint;
                        kept += 1;
                    }
                    at += len;
                }
                self.bytes[write..write + kept].copy_from_slice(&hints[..kept]);
                let entries_at = write + kept;
                self.bytes[entries_at..entries_at + entries.len()].copy_from_slice(&entries);
                self.set_slot(p, write, kept);
                let new_len = kept + entries.len();
                self.add_totals(
                    kept as isize - c as isize,
                    new_len as isize - (end - s) as isize,
                );
                write += new_len;
            }
            self.bytes[write..old_end].fill(0);
            self.set_group_end(g, write);
        }
    }

    /// Finds the first entry of run `p` with hint `hint` that `eq` accepts: `eq` gets the bytes
    /// from the candidate to the end of the page and returns the entry's length if it is the
    /// one. Returns `(index, offset, len, at)`, `at` the entry's first byte in the page. Only
    /// hint matches are decoded, and `len_of` is called only to skip the entries before a
    /// candidate; in a `uniform` run (all entries of one length) the candidate of index `i` is
    /// at `i` times the first entry's length, with no walk.
    ///
    /// One loop for every run length, eight hints per word, with one call site for each
    /// closure: the compiler inlines both, and a lookup is a few dozen instructions.
    #[inline(always)]
    pub fn find(
        &self,
        p: usize,
        hint: u8,
        uniform: bool,
        len_of: impl Fn(&[u8]) -> usize,
        mut eq: impl FnMut(&[u8]) -> Option<usize>,
    ) -> Option<(usize, usize, usize, usize)> {
        let (s, count) = self.slot(p);
        let entries_at = s + count;
        let (mut walked, mut offset, mut base) = (0usize, 0usize, 0usize);
        while base < count {
            let mut mask = crate::hint::match_word(self.word_at(s + base), hint, count - base);
            while mask != 0 {
                let index = base + mask.trailing_zeros() as usize / 8;
                mask &= mask - 1;
                if uniform {
                    offset = index * len_of(&self.bytes[entries_at..]);
                } else {
                    while walked < index {
                        offset += len_of(&self.bytes[entries_at + offset..]);
                        walked += 1;
                    }
                }
                if let Some(len) = eq(&self.bytes[entries_at + offset..]) {
                    return Some((index, offset, len, entries_at + offset));
                }
            }
            base += 8;
        }
        None
    }

    /// The eight bytes from `at` as a little-endian word, zeros past the page's end.
    #[inline(always)]
    fn word_at(&self, at: usize) -> u64 {
        if let Some(b) = self.bytes.get(at..at + 8) {
            u64::from_le_bytes(b.try_into().expect("8 bytes"))
        } else {
            let mut b = [0u8; 8];
            for (i, &x) in self.bytes[at..].iter().enumerate() {
                b[i] = x;
            }
            u64::from_le_bytes(b)
        }
    }

    /// Visits every entry of run `p`: `f(index, offset, hint, bytes)`.
    #[inline]
    pub fn for_each_in_piece(
        &self,
        p: usize,
        len_of: impl Fn(&[u8]) -> usize,
        mut f: impl FnMut(usize, usize, u8, &[u8]),
    ) {
        let entries = self.entries(p);
        let hints = self.hints(p);
        let mut offset = 0;
        for (index, &hint) in hints.iter().enumerate() {
            let len = len_of(&entries[offset..]);
            f(index, offset, hint, &entries[offset..offset + len]);
            offset += len;
        }
    }

    /// Visits every entry of the page, run by run: `f(piece, index, hint, bytes)`. Each run's
    /// slot is decoded once (an entry's length comes from its own bytes, so no run end is
    /// needed): make-room rounds walk whole pages with this.
    #[inline]
    pub fn for_each_entry(
        &self,
        len_of: impl Fn(&[u8]) -> usize,
        mut f: impl FnMut(usize, usize, u8, &[u8]),
    ) {
        for p in 0..PIECE_COUNT {
            let (s, c) = self.slot(p);
            let mut at = s + c;
            for index in 0..c {
                let len = len_of(&self.bytes[at..]);
                f(p, index, self.bytes[s + index], &self.bytes[at..at + len]);
                at += len;
            }
        }
    }

    /// Entry at position `index` of run `p`: `(hint, offset, bytes)`.
    pub fn entry_at(
        &self,
        p: usize,
        index: usize,
        len_of: impl Fn(&[u8]) -> usize,
    ) -> (u8, usize, &[u8]) {
        let entries = self.entries(p);
        let mut offset = 0;
        for _ in 0..index {
            offset += len_of(&entries[offset..]);
        }
        let len = len_of(&entries[offset..]);
        (self.hints(p)[index], offset, &entries[offset..offset + len])
    }

    /// Re-walks every run: the structural invariants that hold whatever the codec (module doc).
    /// `len_of` must decode each entry fully (it is how entries are re-decoded).
    pub fn validate(&self, kind: Kind, len_of: impl Fn(&[u8]) -> usize) -> Result<(), String> {
        if self.bytes[5] != MAGIC || self.bytes[6] != kind as u8 {
            return Err("bad magic or kind".into());
        }
        let tenants = (0..TENANT_SLOTS)
            .filter(|&t| self.tenant(t).is_some())
            .count();
        if tenants != self.tenant_count() || tenants == 0 {
            return Err(format!(
                "tenant_count {} but {tenants} slots used",
                self.tenant_count()
            ));
        }
        let (mut count, mut used, mut gaps) = (0usize, 0usize, 0usize);
        if self.run_start(0) != AREA_START {
            return Err("group 0 does not start the run area".into());
        }
        for g in 0..GROUP_COUNT {
            for p in g * GROUP_RUNS..(g + 1) * GROUP_RUNS {
                let (s, c) = self.slot(p);
                let end = self.run_end(p);
                if s + c > end || end > PAGE_BYTES {
                    return Err(format!("run {p}: start {s} count {c} end {end}"));
                }
                let mut at = s + c;
                for i in 0..c {
                    if at >= end {
                        return Err(format!("run {p}: entry {i} starts past its end"));
                    }
                    let len = len_of(&self.bytes[at..end]);
                    if len == 0 || len > ENTRY_BYTES_MAX {
                        return Err(format!("run {p}: entry {i} len {len}"));
                    }
                    at += len;
                }
                if at != end {
                    return Err(format!("run {p}: entries end at {at}, run at {end}"));
                }
                count += c;
                used += end - s;
            }
            let (end, limit) = (self.group_end(g), self.group_limit(g));
            if end > limit {
                return Err(format!("group {g}: ends at {end} past {limit}"));
            }
            if self.bytes[end..limit].iter().any(|&b| b != 0) {
                return Err(format!("group {g}: gap bytes not zero"));
            }
            gaps += limit - end;
        }
        if count != self.entry_count() || used != self.used_bytes() || used + gaps != AREA_BYTES {
            return Err(format!(
                "header says {} entries / {} bytes, runs hold {count} / {used}, gaps {gaps}",
                self.entry_count(),
                self.used_bytes()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A trivial codec for page-level tests: first byte is the entry length.
    fn len_of(b: &[u8]) -> usize {
        b[0] as usize
    }

    fn entry(len: usize, fill: u8) -> Vec<u8> {
        let mut v = vec![fill; len];
        v[0] = len as u8;
        v
    }

    fn check_run(page: &Page, p: usize, model: &[(u8, Vec<u8>)]) {
        let mut got = Vec::new();
        page.for_each_in_piece(p, len_of, |_, _, h, b| got.push((h, b.to_vec())));
        assert_eq!(got, model);
    }

    /// The expected entries of every run: `(hint, entry)` in run order.
    type Model = Vec<Vec<(u8, Vec<u8>)>>;

    /// Pushes an entry of a random length onto run `p` if it fits, mirroring it in the model.
    fn push_one(page: &mut Page, model: &mut Model, x: u64, step: u32, p: usize, hint: u8) {
        let e = entry(1 + (x >> 20) as usize % 60, step as u8);
        if page.fits(p, e.len()) {
            page.push(p, hint, &e);
            model[p].push((hint, e));
        } else {
            assert!(page.free_bytes() < e.len() + 1);
        }
    }

    /// Finds a random entry of the non-empty run `p`, then removes it or replaces it with a new
    /// one, mirroring that in the model.
    fn find_then_remove_or_replace(page: &mut Page, model: &mut Model, x: u64, p: usize) {
        let i = (x >> 24) as usize % model[p].len();
        let (h, want) = model[p][i].clone();
        let found = page.find(p, h, false, len_of, |b| {
            (b[..len_of(b)] == *want.as_slice()).then(|| len_of(b))
        });
        let (index, offset, len, at) = found.expect("present");
        assert_eq!(model[p][index].1, want);
        assert_eq!(page.bytes_at(at, len), want.as_slice());
        if x & (1 << 40) == 0 {
            page.remove(p, index, offset, len);
            model[p].remove(index);
        } else {
            let e = entry(1 + (x >> 30) as usize % 60, 0xEE);
            if page.replace(p, offset, len, &e) {
                model[p][index].1 = e;
            } else {
                assert!(page.free_bytes() + len < e.len());
            }
        }
    }

    /// Appends a random batch to the runs of `p`'s group when it has room, mirroring it in the
    /// model; returns whether it was appended.
    fn append_a_batch(page: &mut Page, model: &mut Model, x: u64, p: usize) -> bool {
        // A batch for the runs of p's group, what a bucket move appends.
        let g = p / GROUP_RUNS;
        let (mut counts, mut lens) = ([0; GROUP_RUNS], [0; GROUP_RUNS]);
        let (mut hints, mut bytes, mut added) = (Vec::new(), Vec::new(), Vec::new());
        let mut y = x;
        // Sized to the free bytes, sometimes past them (the no-room answer).
        let budget = (x >> 32) as usize % (page.free_bytes() + 64);
        for i in 0..GROUP_RUNS {
            y = crate::hash::splitmix(y);
            for _ in 0..y % 4 {
                y = crate::hash::splitmix(y);
                let e = entry(1 + (y >> 8) as usize % 40, (y >> 50) as u8);
                if hints.len() + bytes.len() + e.len() + 1 > budget {
                    break;
                }
                counts[i] += 1;
                lens[i] += e.len();
                hints.push((y >> 20) as u8);
                bytes.extend_from_slice(&e);
                added.push((g * GROUP_RUNS + i, (y >> 20) as u8, e));
            }
        }
        let room = hints.len() + bytes.len() <= page.free_bytes()
            && (0..GROUP_RUNS)
                .all(|i| page.piece_count(g * GROUP_RUNS + i) + counts[i] <= RUN_COUNT_MAX);
        if room {
            page.append_group(g, &counts, &lens, &hints, &bytes);
            for (run, h, e) in added {
                model[run].push((h, e));
            }
        }
        for i in 0..GROUP_RUNS {
            check_run(page, g * GROUP_RUNS + i, &model[g * GROUP_RUNS + i]);
        }
        room
    }

    /// Takes every entry of `p`'s group, checks them against the model, then puts them back or
    /// drops them.
    fn take_a_group(page: &mut Page, model: &mut Model, x: u64, p: usize) {
        // Empty p's group (what moving a bucket takes from its page), and put the
        // batch back half of the time.
        let g = p / GROUP_RUNS;
        let (mut counts, mut lens) = ([0; GROUP_RUNS], [0; GROUP_RUNS]);
        let (mut hints, mut bytes) = (Vec::new(), Vec::new());
        let used = page.used_bytes();
        page.take_group(g, &mut counts, &mut lens, &mut hints, &mut bytes);
        let runs = &mut model[g * GROUP_RUNS..(g + 1) * GROUP_RUNS];
        let want_hints: Vec<u8> = runs.iter().flatten().map(|(h, _)| *h).collect();
        let want_bytes: Vec<u8> = runs.iter().flatten().flat_map(|(_, e)| e.clone()).collect();
        assert_eq!((&hints, &bytes), (&want_hints, &want_bytes));
        for (i, run) in runs.iter().enumerate() {
            assert_eq!(counts[i], run.len());
            assert_eq!(lens[i], run.iter().map(|(_, e)| e.len()).sum::<usize>());
        }
        assert_eq!(page.used_bytes(), used - hints.len() - bytes.len());
        if x & (1 << 50) == 0 {
            page.append_group(g, &counts, &lens, &hints, &bytes);
        } else {
            runs.iter_mut().for_each(Vec::clear);
            page.spread_gaps();
        }
    }

    #[test]
    fn push_find_replace_remove_against_a_model() {
        let mut page = Page::boxed();
        page.init(Kind::Bytes, 0);
        page.set_tenant(0, Some((0, 0)));
        let mut model: Model = vec![Vec::new(); PIECE_COUNT];
        let mut x = 5u64;
        let mut appended = 0;
        for step in 0..40_000u32 {
            x = crate::hash::splitmix(x);
            // A skewed home distribution makes some groups take room from far away.
            let p = if x.is_multiple_of(4) {
                17
            } else {
                (x % 128) as usize
            };
            let hint = (x >> 8) as u8 % 4;
            match (x >> 16) % 4 {
                0 => push_one(&mut page, &mut model, x, step, p, hint),
                1 if !model[p].is_empty() => {
                    find_then_remove_or_replace(&mut page, &mut model, x, p);
                }
                3 => appended += usize::from(append_a_batch(&mut page, &mut model, x, p)),
                2 if (x >> 40).is_multiple_of(16) => take_a_group(&mut page, &mut model, x, p),
                _ => {}
            }
            page.validate(Kind::Bytes, len_of).unwrap();
            check_run(&page, p, &model[p]);
        }
        for (p, run) in model.iter().enumerate() {
            check_run(&page, p, run);
        }
        assert!(appended > 1000, "{appended} batches appended");
        let mut walked: Model = vec![Vec::new(); PIECE_COUNT];
        page.for_each_entry(len_of, |p, i, h, b| {
            assert_eq!(i, walked[p].len());
            walked[p].push((h, b.to_vec()));
        });
        assert_eq!(walked, model);
    }

    #[test]
    fn entries_cross_piece_boundaries_and_the_page_fills_to_its_last_byte() {
        let mut page = Page::boxed();
        page.init(Kind::Bytes, 0);
        page.set_tenant(0, Some((0, 0)));
        // 35-byte entries (a 16-byte key and value with meta and lengths + hint) in two home
        // pieces: they cross 64-byte boundaries everywhere, and their group takes room from
        // every other group until the page has no room for one more.
        let mut n = 0;
        while page.fits(40 + n % 2, 35) {
            page.push(40 + n % 2, n as u8, &entry(35, n as u8));
            n += 1;
            page.validate(Kind::Bytes, len_of).unwrap();
        }
        assert_eq!(n, AREA_BYTES / 36);
        assert!(page.free_bytes() < 36);
        let (count, run) = (page.piece_count(40), page.entries(40));
        assert!((0..count).any(|i| (page.run_start(40) + count + i * 35) % PIECE_BYTES > 64 - 35));
        for i in 0..count {
            assert_eq!(
                &run[i * 35..(i + 1) * 35],
                entry(35, 2 * i as u8).as_slice()
            );
        }
        // Edit: drop every other entry of run 40, shorten the rest; leave run 41 alone.
        let run41 = page.entries(41).to_vec();
        page.edit_runs(
            0..GROUP_COUNT,
            |_| true,
            len_of,
            |p, i, _, _| match (p, i % 2) {
                (40, 0) => Edit::Rewrite,
                (40, _) => Edit::Drop,
                _ => Edit::Keep,
            },
            |_, _, b, out| {
                out[..10].copy_from_slice(&b[..10]);
                out[0] = 10;
                10
            },
        );
        page.validate(Kind::Bytes, len_of).unwrap();
        assert_eq!(page.piece_count(40), count.div_ceil(2));
        assert_eq!(page.entries(41), run41.as_slice());
        assert_eq!(page.used_bytes(), count.div_ceil(2) * 11 + n / 2 * 36);
        // A run holds at most RUN_COUNT_MAX entries, whatever room the page has.
        page.edit_runs(
            0..GROUP_COUNT,
            |p| p != 7,
            len_of,
            |_, _, _, _| Edit::Drop,
            |_, _, _, _| 0,
        );
        assert_eq!(page.used_bytes(), 0);
        while page.fits(41, 1) {
            page.push(41, 0, &entry(1, 0));
        }
        assert_eq!(page.piece_count(41), RUN_COUNT_MAX);
        page.validate(Kind::Bytes, len_of).unwrap();
    }

    #[test]
    fn tenants_round_trip() {
        let mut page = Page::boxed();
        page.init(Kind::Int, 3);
        assert_eq!(page.free_tenant_slot(), Some(0));
        page.set_tenant(0, Some((5, 3)));
        page.set_tenant(2, Some((0xFFFF_FFFF, 32)));
        assert_eq!(page.tenant_count(), 2);
        assert_eq!(page.tenant(2), Some((0xFFFF_FFFF, 32)));
        assert_eq!(page.free_tenant_slot(), Some(1));
        assert_eq!(page.tenants().get(0), Some((5, 3)));
        assert_eq!(page.tenants().get(1), None);
        page.set_tenant(0, None);
        assert_eq!(page.tenant_count(), 1);
        assert_eq!(page.page_index(), 3);
        page.validate(Kind::Int, len_of).unwrap();
    }
}
