//! The chunked list encoding (lists past the packed bound, `list_packed.rs`): a deque of packed
//! chunks, Redis's quicklist of listpacks.
//!
//! ```text
//!  ListObj { chunks: VecDeque<Chunk>, len, chunk_max }                       48 bytes
//!
//!  Chunk { buf: Buf (heap pointer, cap), head, mid, tail, front, count }      40 bytes
//!   buf: [ gap | front entry … front entry | back entry … back entry | gap ]
//!          0    head                        mid                        tail   cap
//!
//!  front entry: [ len: LEB128 varint | bytes ]      back entry: [ bytes | len varint, reversed ]
//!               a 10-byte element takes 11 bytes either way (list_codec.rs)
//! ```
//! A chunk is two runs of entries that meet at `mid`: the front run is read head → mid, the back
//! run tail → mid, so each entry needs its length on one side only. Both ends of a chunk keep a
//! gap, so a push at either end writes an entry into the gap (no memmove), and a pop moves `head`
//! or `tail`: O(1) at both ends. When a pop empties one run of a chunk holding two or more
//! entries, the chunk is rebalanced (`Chunk::balance`): the back run is rewritten as front
//! entries and the back half of the result as back entries again, in place, O(chunk bytes), and
//! only after the pops of half the entries since the last time: amortised O(1) per pop (a deque
//! made of two stacks). Pushes at one end lengthen one run only, so whenever a chunk's data moves
//! (its buffer grows, or a push shifts it) and when it fills, runs off by more than 1:3 are
//! evened out (`Chunk::even_out`, O(chunk) with the move): LINDEX near the head of a list built
//! by RPUSH walks a few front entries, not the whole back run backwards. Reading walks each run
//! in its own direction; an iterator that must cross
//! a run the other way first notes the run's entry ends (`Iter`, `RevIter`). A change in the
//! middle (LSET, LINSERT, LREM, LTRIM's cut) first rewrites the chunk as one front run
//! (`Chunk::flatten`), works on it, and rebalances: O(chunk bytes), as the memmove already was.
//!
//! Invariants (checked by `validate`):
//! - `head <= mid <= tail <= cap`; `buf[head..mid]` is exactly `front` front entries and
//!   `buf[mid..tail]` exactly `count − front` back entries;
//! - `count >= 2 ⇒ 1 <= front < count` (each run holds an entry, so `first` and `last` are O(1));
//! - no chunk is empty; `len == Σ count`;
//! - `tail − head <= chunk_max` unless `count == 1` (one oversized element alone).
//!
//! Sizing. A chunk holds at most `chunk_max` bytes of entries: by default `CHUNK_MAX_BYTES` =
//! 8 KiB, Redis's default `list-max-listpack-size -2`; a list created under -1 … -5 takes Redis's
//! 4 … 64 KiB node size and keeps it (as a quicklist keeps its fill; merge and shrink thresholds
//! scale with it; the figures below are for 8 KiB). The same bound keeps memory per element
//! comparable, and bounds what one insert or delete in the middle moves (≤ 8 KiB) and what an
//! index scan inside a chunk reads. A count bound (Redis's positive fill) was rejected: with tiny
//! elements it would make chunks small and the per-chunk overhead large, and bytes are what
//! memmove and scans cost. Buffers live in the shard heap (`list_raw.rs`, which says why) and
//! grow by an eighth, rounded to the heap's size classes, from 64 bytes up to 8 KiB (see
//! `grown_capacity` for why an eighth), placing the data so that the free space lies on the side
//! that is growing; when the pushing side has no gap, the data is moved only if at least a
//! quarter of the buffer is free (so a move of `used` bytes buys at least `cap/8` bytes of
//! pushes), otherwise a new chunk starts: a full chunk fed at one end and drained at the other (a
//! queue) never memmoves per push. After deletions a chunk under 2 KiB merges with a neighbour
//! when both fit in 6 KiB, and a buffer less than a quarter used halves (hysteresis against the
//! growth).
//!
//! Memory: a full chunk of 10-byte elements holds 744 of them in 8184 of its 8192 bytes, plus
//! 40 bytes of `Chunk` in the deque: ≈ 11.06 bytes per element. Redis's listpack spends 12
//! (1 encoding byte + 10 + 1 backlen) plus a 32-byte quicklistNode and the listpack header per
//! node; see docs/types.md for the measured figures. Elements that are integers are stored
//! as text: a listpack's integer encoding saves at most 2–3 bytes for 10-digit numbers, and text
//! lets LRANGE reply with a copy of the stored bytes.

use super::list_codec::{
    encode_back, encode_front, entry_size, read_backward, read_forward, to_back, to_front,
};
use super::list_raw::{Buf, capacity_at_least};
use heap::Heap;
use std::collections::VecDeque;

pub use super::list_edit::List;

/// Most bytes of entries in a chunk by default (one oversized entry may exceed it, alone):
/// Redis's `list-max-listpack-size -2`. A list takes its bound from the shard's `Limits` when it
/// is created and keeps it, as a Redis quicklist keeps the fill it was created with.
pub const CHUNK_MAX_BYTES: usize = 8192;
/// The largest bound a list may have (`list-max-listpack-size -5`).
pub const CHUNK_BYTES_CAP: usize = 65536;
/// Smallest buffer a chunk allocates.
const CHUNK_MIN_BYTES: usize = 64;

const _: () = assert!(size_of::<Chunk>() == 40);
const _: () = assert!(size_of::<ListObj>() == 48);

// ---------------------------------------------------------------------------------------------
// Chunk.

#[derive(Debug)]
struct Chunk {
    buf: Buf,
    head: u32,
    /// Where the front run ends and the back run starts.
    mid: u32,
    tail: u32,
    /// Entries in the front run.
    front: u32,
    count: u32,
}

/// Which end of a chunk or list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Front,
    Back,
}

/// The buffer for `bytes` of entries in a list whose chunks hold at most `max` bytes: the whole
/// heap size class (its slack is room for pushes, not waste), within the bound unless one
/// oversized entry needs more.
fn capacity_for(bytes: usize, max: usize) -> usize {
    if bytes > max {
        capacity_at_least(bytes)
    } else {
        capacity_at_least(bytes.max(CHUNK_MIN_BYTES)).min(max)
    }
}

/// The buffer a chunk of `cap` bytes grows to when it needs `need > cap` bytes: an eighth more,
/// rounded up to a size class (one or two classes up: the heap has eight per doubling), for ~6
/// copies per byte pushed; a copy is of at most one chunk (8 KiB by default).
///
/// The factor decides fragmentation, not only slack: lists that grow side by side (the `lists`
/// benchmark: 10⁴ lists, a push to each in turn) all pass through the same capacities, and when
/// their final sizes straddle one, the lists that moved past it leave holes in its slabs that no
/// later list fills. A simulation of that load (list lengths 30 … 300, 8–16-byte elements)
/// measured the heap's resident bytes per byte of entries, mean (worst):
/// ```text
///  grow by        +1 class   +1/10   +1/8          +1/6    +3/16   +1/4    ×2
///  resident/data  1.40       1.29    1.16 (1.35)   1.31    1.33    1.39    1.36
/// ```
/// Growing by one class keeps the least slack (4–7 %) but leaves the most holes; a quarter
/// (the glibc-era choice) and doubling lose in slack what they save in holes.
fn grown_capacity(cap: usize, need: usize, max: usize) -> usize {
    capacity_for(need.max(cap + cap / 8).min(max.max(need)), max)
}

impl Chunk {
    /// An empty chunk of `cap` bytes whose gap lies on the side `grows` (pushes go there).
    fn new(heap: &mut Heap, cap: usize, grows: Side) -> Chunk {
        let at = if grows == Side::Front { cap as u32 } else { 0 };
        Chunk {
            buf: Buf::alloc(heap, cap),
            head: at,
            mid: at,
            tail: at,
            front: 0,
            count: 0,
        }
    }

    /// Gives the buffer back to the heap.
    fn free(self, heap: &mut Heap) {
        self.buf.free(heap);
    }

    #[inline]
    fn used(&self) -> usize {
        (self.tail - self.head) as usize
    }

    #[inline]
    fn cap(&self) -> usize {
        self.buf.cap()
    }

    #[inline]
    fn bytes(&self) -> &[u8] {
        self.buf.bytes()
    }

    #[inline]
    fn data(&self) -> &[u8] {
        &self.bytes()[self.head as usize..self.tail as usize]
    }

    /// Whether the chunk is one front run (after `flatten`, before `balance`).
    #[inline]
    fn is_flat(&self) -> bool {
        self.front == self.count && self.mid == self.tail
    }

    /// Moves `head`, `mid` and `tail` so that the data starts at `before`.
    fn place(&mut self, before: usize) {
        let (used, front_bytes) = (self.used(), (self.mid - self.head) as usize);
        self.head = before as u32;
        self.mid = (before + front_bytes) as u32;
        self.tail = (before + used) as u32;
    }

    /// Replaces the buffer by `buf` (the data already copied into it at `before`), freeing the
    /// old one.
    fn replace_buf(&mut self, heap: &mut Heap, buf: Buf, before: usize) {
        std::mem::replace(&mut self.buf, buf).free(heap);
        self.place(before);
    }

    /// Moves the data into a buffer of `cap` bytes (possibly the same one), leaving `before`
    /// bytes of gap in front of it.
    fn relayout(&mut self, heap: &mut Heap, cap: usize, before: usize) {
        let used = self.used();
        debug_assert!(before + used <= cap);
        if cap == self.cap() {
            let (head, tail) = (self.head as usize, self.tail as usize);
            self.buf.bytes_mut().copy_within(head..tail, before);
            self.place(before);
        } else {
            let mut buf = Buf::alloc(heap, cap);
            buf.bytes_mut()[before..before + used].copy_from_slice(self.data());
            self.replace_buf(heap, buf, before);
        }
    }

    /// Makes `s` bytes of gap on `side`; false when the chunk would pass `max` bytes and a new
    /// chunk should take the entry instead.
    fn room(&mut self, heap: &mut Heap, side: Side, s: usize, max: usize) -> bool {
        let used = self.used();
        if used + s > max {
            return false;
        }
        let gap = match side {
            Side::Front => self.head as usize,
            Side::Back => self.cap() - self.tail as usize,
        };
        if gap >= s {
            return true;
        }
        let free = self.cap() - used;
        let (cap, spare) = if free >= s && free >= self.cap() / 4 {
            // Move in place; three quarters of the spare room go to the side that grows.
            let spare = free - s;
            (self.cap(), spare - spare / 4)
        } else if self.cap() >= max {
            return false;
        } else {
            // All the spare room goes to the side that grows, so a list pushed at one end fills
            // its chunks to the brim.
            let cap = grown_capacity(self.cap(), used + s, max);
            (cap, cap - used - s)
        };
        let before = match side {
            Side::Front => s + spare,
            Side::Back => cap - used - s - spare,
        };
        self.relayout(heap, cap, before);
        // Pushes at one end leave the runs lopsided, and an index walk from the other end
        // would cross the long run against its direction (O(chunk)): even them out while the
        // data is being moved anyway. Moves come once per ≥ cap/8 bytes pushed, so this is
        // amortised O(1) per push, and the runs are never off by more than what was pushed
        // since the last move.
        self.even_out();
        true
    }

    /// Writes `value` (an entry of `s` bytes) into the gap on `side`: a front entry before
    /// `head` or a back entry after `tail`.
    fn push(&mut self, side: Side, value: &[u8], s: usize) {
        match side {
            Side::Front => {
                self.head -= s as u32;
                let at = self.head as usize;
                encode_front(&mut self.buf.bytes_mut()[at..at + s], value);
                self.front += 1;
            }
            Side::Back => {
                let at = self.tail as usize;
                encode_back(&mut self.buf.bytes_mut()[at..at + s], value);
                self.tail += s as u32;
            }
        }
        self.count += 1;
        self.balance();
    }

    /// The value of the front entry at `at`.
    #[inline]
    fn value_forward(&self, at: usize) -> &[u8] {
        let (v, n, _) = read_forward(self.bytes(), at);
        &self.bytes()[v..v + n]
    }

    /// The value of the back entry ending at `end`.
    #[inline]
    fn value_backward(&self, end: usize) -> &[u8] {
        let (start, n) = read_backward(self.bytes(), end);
        &self.bytes()[start..start + n]
    }

    /// The first element: the front run's first, or the only entry, in the back run.
    #[inline]
    fn first(&self) -> &[u8] {
        if self.front > 0 {
            self.value_forward(self.head as usize)
        } else {
            self.value_backward(self.tail as usize)
        }
    }

    /// The last element: the back run's last, or the only entry, in the front run.
    #[inline]
    fn last(&self) -> &[u8] {
        if self.count > self.front {
            self.value_backward(self.tail as usize)
        } else {
            self.value_forward(self.head as usize)
        }
    }

    fn pop(&mut self, side: Side) {
        // Each arm takes its side's run, or the only entry when that run is empty.
        let from_front_run = match side {
            Side::Front => self.front > 0,
            Side::Back => self.count == self.front,
        };
        if from_front_run {
            match side {
                Side::Front => self.head = read_forward(self.bytes(), self.head as usize).2 as u32,
                Side::Back => self.mid = self.head,
            }
            self.front -= 1;
        } else {
            match side {
                Side::Front => self.mid = self.tail,
                Side::Back => self.tail = read_backward(self.bytes(), self.tail as usize).0 as u32,
            }
        }
        if self.count == 1 {
            // The only entry went: both ends meet where the data was.
            self.head = self.mid.min(self.tail);
            self.mid = self.head;
            self.tail = self.head;
        }
        self.count -= 1;
        self.balance();
    }

    /// Restores `count >= 2 ⇒ 1 <= front < count` after a push or pop emptied one run.
    #[inline]
    fn balance(&mut self) {
        if self.count >= 2 && (self.front == 0 || self.front == self.count) {
            self.flatten();
            self.split_runs();
        }
    }

    /// Rebalances a chunk whose runs are lopsided (one holds under a quarter of the entries).
    fn even_out(&mut self) {
        let (front, count) = (self.front as usize, self.count as usize);
        if count >= 4 && (front * 4 < count || front * 4 > count * 3) {
            self.flatten();
            self.split_runs();
        }
    }

    /// Rewrites the back run as front entries: the chunk becomes one front run.
    fn flatten(&mut self) {
        let (mid, tail) = (self.mid as usize, self.tail as usize);
        to_front(self.buf.bytes_mut(), mid, tail);
        self.mid = self.tail;
        self.front = self.count;
    }

    /// Turns the back half of a flat chunk into the back run (a chunk of two or more entries).
    fn split_runs(&mut self) {
        debug_assert!(self.is_flat());
        if self.count < 2 {
            return;
        }
        let keep = self.count / 2;
        let cut = self.offset_of(keep as usize);
        let tail = self.tail as usize;
        to_back(self.buf.bytes_mut(), cut, tail);
        self.mid = cut as u32;
        self.front = keep;
    }

    /// Byte offset of entry `index` of a flat chunk (0 ≤ index ≤ count; `count` gives `tail`).
    fn offset_of(&self, index: usize) -> usize {
        debug_assert!(self.is_flat() && index <= self.count as usize);
        let mut at = self.head as usize;
        for _ in 0..index {
            at = read_forward(self.bytes(), at).2;
        }
        at
    }

    /// The value of entry `index` (< count), walking its run from the chunk's nearer end.
    fn get(&self, index: usize) -> &[u8] {
        debug_assert!(index < self.count as usize);
        if index < self.front as usize {
            let mut at = self.head as usize;
            for _ in 0..index {
                at = read_forward(self.bytes(), at).2;
            }
            self.value_forward(at)
        } else {
            self.value_backward(self.back_end(index))
        }
    }

    /// End offset of entry `index` of the back run (`front <= index < count`).
    fn back_end(&self, index: usize) -> usize {
        let mut end = self.tail as usize;
        for _ in index + 1..self.count as usize {
            end = read_backward(self.bytes(), end).0;
        }
        end
    }

    /// Replaces the bytes `from..to` of a flat chunk's data with `size` new bytes and returns
    /// where they start (the caller writes a front entry there). Moves the shorter side;
    /// reallocates when no gap fits.
    fn splice(
        &mut self,
        heap: &mut Heap,
        (from, to): (usize, usize),
        size: usize,
        max: usize,
    ) -> usize {
        debug_assert!(self.is_flat());
        let at = self.splice_bytes(heap, (from, to), size, max);
        self.mid = self.tail;
        at
    }

    fn splice_bytes(
        &mut self,
        heap: &mut Heap,
        (from, to): (usize, usize),
        size: usize,
        max: usize,
    ) -> usize {
        let (head, tail) = (self.head as usize, self.tail as usize);
        let old = to - from;
        if size <= old {
            let shrink = old - size;
            if from - head <= tail - to {
                self.buf.bytes_mut().copy_within(head..from, head + shrink);
                self.head += shrink as u32;
                return from + shrink;
            }
            self.buf.bytes_mut().copy_within(to..tail, to - shrink);
            self.tail -= shrink as u32;
            return from;
        }
        let grow = size - old;
        let front_ok = head >= grow;
        let back_ok = self.cap() - tail >= grow;
        if front_ok && (!back_ok || from - head <= tail - to) {
            self.buf.bytes_mut().copy_within(head..from, head - grow);
            self.head -= grow as u32;
            return from - grow;
        }
        if back_ok {
            self.buf.bytes_mut().copy_within(to..tail, to + grow);
            self.tail += grow as u32;
            return from;
        }
        let used = self.used() + grow;
        let cap = capacity_for(used + used / 4, max).max(used);
        let before = (cap - used) / 2;
        let mut buf = Buf::alloc(heap, cap);
        let prefix = from - head;
        let suffix_at = before + prefix + size;
        let bytes = buf.bytes_mut();
        bytes[before..before + prefix].copy_from_slice(&self.bytes()[head..from]);
        bytes[suffix_at..suffix_at + (tail - to)].copy_from_slice(&self.bytes()[to..tail]);
        std::mem::replace(&mut self.buf, buf).free(heap);
        self.head = before as u32;
        self.tail = (before + used) as u32;
        before + prefix
    }

    /// Shrinks a buffer that is more than twice the size its data needs.
    fn fit(&mut self, heap: &mut Heap, max: usize) {
        let used = self.used();
        let cap = capacity_for(used + used / 4, max).max(used);
        if cap * 2 <= self.cap() {
            self.relayout(heap, cap, (cap - used) / 2);
        }
    }

    /// Splits off the entries of a flat chunk from byte offset `at` into a new flat chunk.
    fn split_off(&mut self, heap: &mut Heap, at: usize, entries: u32, max: usize) -> Chunk {
        debug_assert!(self.is_flat());
        let moved = self.tail as usize - at;
        let cap = capacity_for(moved + moved / 4, max).max(moved);
        let mut rest = Chunk::new(heap, cap, Side::Back);
        let before = (cap - moved) / 2;
        rest.buf.bytes_mut()[before..before + moved]
            .copy_from_slice(&self.bytes()[at..self.tail as usize]);
        rest.head = before as u32;
        rest.tail = (before + moved) as u32;
        rest.mid = rest.tail;
        rest.count = self.count - entries;
        rest.front = rest.count;
        self.count = entries;
        self.front = entries;
        self.tail = at as u32;
        self.mid = self.tail;
        rest
    }

    /// Removes the entries of a flat chunk that start at `doomed` (ascending offsets), moving
    /// the others towards `head`.
    fn remove_entries(&mut self, doomed: &[usize]) {
        debug_assert!(self.is_flat());
        let (mut read, mut write) = (self.head as usize, self.head as usize);
        let mut next = doomed.iter().copied().peekable();
        while read < self.tail as usize {
            let end = read_forward(self.bytes(), read).2;
            if next.peek() == Some(&read) {
                next.next();
            } else {
                if read != write {
                    self.buf.bytes_mut().copy_within(read..end, write);
                }
                write += end - read;
            }
            read = end;
        }
        self.tail = write as u32;
        self.mid = self.tail;
        self.count -= doomed.len() as u32;
        self.front = self.count;
    }

    /// Checks the chunk's invariants (module doc).
    fn validate(&self) -> Result<(), String> {
        let (head, mid, tail) = (self.head as usize, self.mid as usize, self.tail as usize);
        if head > mid || mid > tail || tail > self.cap() {
            return Err(format!(
                "head {head} mid {mid} tail {tail} cap {}",
                self.cap()
            ));
        }
        if self.count >= 2 && (self.front == 0 || self.front >= self.count) {
            return Err(format!("{} entries, {} in front", self.count, self.front));
        }
        let (mut at, mut n) = (head, 0u32);
        while at < mid {
            at = read_forward(self.bytes(), at).2;
            n += 1;
        }
        if at != mid || n != self.front {
            return Err(format!(
                "front run: {n} entries to {at}, front {}",
                self.front
            ));
        }
        let mut end = tail;
        while end > mid {
            end = read_backward(self.bytes(), end).0;
            n += 1;
        }
        if end != mid || n != self.count {
            return Err(format!(
                "back run: {n} entries to {end}, count {}",
                self.count
            ));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// ListObj.

/// A list: a deque of chunks (see the module doc). Its chunk buffers live in the shard heap, so
/// changes take the heap (`Edit<List>` lends it, `list_edit.rs`), and a list must be
/// `destroy`ed with it; reads need no heap, so a list must not outlive it (`list_raw.rs`).
#[derive(Debug)]
pub struct ListObj {
    chunks: VecDeque<Chunk>,
    len: usize,
    /// Most bytes of entries in one chunk (`CHUNK_MAX_BYTES` unless the list was created under
    /// another `list-max-listpack-size`).
    chunk_max: u32,
}

impl Default for ListObj {
    fn default() -> ListObj {
        ListObj::with_chunk_bytes(CHUNK_MAX_BYTES)
    }
}

/// A list's chunks outside the heap (`ListObj::copy_out`).
#[derive(Debug)]
pub struct ListCopy {
    chunk_max: u32,
    len: usize,
    /// Per chunk: entry bytes, the front run's bytes, entries in the front run, entries.
    chunks: Vec<(Vec<u8>, u32, u32, u32)>,
}

impl ListCopy {
    /// The list again, its chunks in `heap` (the same chunks, each in a fitting buffer).
    pub fn into_list(self, heap: &mut Heap) -> ListObj {
        let mut list = ListObj::with_chunk_bytes(self.chunk_max as usize);
        list.chunks.reserve_exact(self.chunks.len());
        for (data, front_bytes, front, count) in self.chunks {
            let cap = capacity_for(data.len(), list.chunk_bytes());
            let mut c = Chunk::new(heap, cap, Side::Back);
            c.buf.bytes_mut()[..data.len()].copy_from_slice(&data);
            c.mid = front_bytes;
            c.tail = data.len() as u32;
            c.front = front;
            c.count = count;
            list.chunks.push_back(c);
        }
        list.len = self.len;
        list
    }
}

/// Walks the elements from an index towards the tail (`ListObj::iter_from`): the front run of
/// a chunk forwards, then its back run from the entry ends noted by walking it backwards once.
#[derive(Debug)]
pub struct Iter<'a> {
    chunks: &'a VecDeque<Chunk>,
    chunk: usize,
    /// Next front entry's offset, while below the chunk's `mid`.
    at: usize,
    /// End offsets of the back run's entries still to yield, the next one last.
    ends: Vec<u32>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        loop {
            let c = self.chunks.get(self.chunk)?;
            if self.at < c.mid as usize {
                let (v, n, end) = read_forward(c.bytes(), self.at);
                self.at = end;
                return Some(&c.bytes()[v..v + n]);
            }
            if self.at == c.mid as usize && c.tail > c.mid {
                // Entering the back run: note where each entry ends.
                self.at = usize::MAX;
                self.ends.clear();
                self.ends.extend(back_ends(c, c.tail as usize));
            }
            if let Some(end) = self.ends.pop() {
                return Some(c.value_backward(end as usize));
            }
            self.chunk += 1;
            self.at = self.chunks.get(self.chunk).map_or(0, |c| c.head as usize);
        }
    }
}

/// End offsets of the back-run entries of `c` ending at or before `end`, last entry first.
fn back_ends(c: &Chunk, end: usize) -> impl Iterator<Item = u32> + '_ {
    let mid = c.mid as usize;
    std::iter::successors((end > mid).then_some(end), move |&e| {
        let start = read_backward(c.bytes(), e).0;
        (start > mid).then_some(start)
    })
    .map(|e| e as u32)
}

/// Walks the elements from an index towards the head (`ListObj::rev_from`): the back run of a
/// chunk backwards, then its front run from the entry starts noted by walking it forwards once.
#[derive(Debug)]
pub struct RevIter<'a> {
    chunks: &'a VecDeque<Chunk>,
    /// The chunk after the one being read (0: done).
    chunk: usize,
    /// End offset of the next back entry to yield, while above the chunk's `mid`.
    at: usize,
    /// Start offsets of the front run's entries still to yield, the next one last.
    starts: Vec<u32>,
}

impl<'a> Iterator for RevIter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        loop {
            let c = self.chunks.get(self.chunk.checked_sub(1)?)?;
            if self.at > c.mid as usize && self.at != usize::MAX {
                let (start, n) = read_backward(c.bytes(), self.at);
                self.at = start;
                return Some(&c.bytes()[start..start + n]);
            }
            if self.at == c.mid as usize {
                // Entering the front run: note where each entry starts.
                self.at = usize::MAX;
                self.starts.clear();
                self.starts.extend(front_starts(c, c.mid as usize));
            }
            if let Some(start) = self.starts.pop() {
                return Some(c.value_forward(start as usize));
            }
            self.chunk -= 1;
            self.at = match self.chunk {
                0 => 0,
                i => self.chunks[i - 1].tail as usize,
            };
        }
    }
}

/// Start offsets of the front-run entries of `c` that end at or before `end`, first entry first.
fn front_starts(c: &Chunk, end: usize) -> impl Iterator<Item = u32> + '_ {
    let head = c.head as usize;
    std::iter::successors((head < end).then_some(head), move |&at| {
        let next = read_forward(c.bytes(), at).2;
        (next < end).then_some(next)
    })
    .map(|at| at as u32)
}

impl ListObj {
    pub fn new() -> ListObj {
        ListObj::default()
    }

    /// An empty list whose chunks hold at most `max` bytes (kept within 64 bytes … 64 KiB).
    pub fn with_chunk_bytes(max: usize) -> ListObj {
        ListObj {
            chunks: VecDeque::new(),
            len: 0,
            chunk_max: max.clamp(CHUNK_MIN_BYTES, CHUNK_BYTES_CAP) as u32,
        }
    }

    /// The byte bound of this list's chunks.
    pub fn chunk_bytes(&self) -> usize {
        self.chunk_max as usize
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Gives every chunk's buffer back to `heap` (the one the list was built in).
    pub fn destroy(self, heap: &mut Heap) {
        for c in self.chunks {
            c.free(heap);
        }
    }

    /// Bytes owned: the deque's buffer and every chunk's buffer.
    pub fn memory_bytes(&self) -> usize {
        size_of::<ListObj>()
            + self.chunks.capacity() * size_of::<Chunk>()
            + self.chunk_buffer_bytes()
    }

    /// Bytes of the chunk buffers, which live in the shard heap.
    pub fn chunk_buffer_bytes(&self) -> usize {
        self.chunks.iter().map(Chunk::cap).sum()
    }

    /// Redis 7.0 reports every list as a quicklist.
    pub fn encoding_name(&self) -> &'static str {
        "quicklist"
    }

    /// A list of `items`, in order, in `heap`.
    pub fn from_items<I: IntoIterator<Item = T>, T: AsRef<[u8]>>(
        heap: &mut Heap,
        items: I,
    ) -> ListObj {
        let mut list = ListObj::new();
        for item in items {
            list.push_back(heap, item.as_ref());
        }
        list
    }

    /// The list's chunks copied out of the heap, for COPY: the source is read under a shared
    /// borrow of its shard, then `ListCopy::into_list` builds the copy in the same heap.
    pub fn copy_out(&self) -> ListCopy {
        ListCopy {
            chunk_max: self.chunk_max,
            len: self.len,
            chunks: self
                .chunks
                .iter()
                .map(|c| (c.data().to_vec(), c.mid - c.head, c.front, c.count))
                .collect(),
        }
    }

    /// A list of chunks bounded by `max` bytes holding `count` elements given as one run of
    /// front entries within the bound (a packed list's, `list_packed.rs`, at most half of it):
    /// one chunk with an eighth of room to grow, as the list is being pushed past its packed
    /// bound; no chunk when there are no entries.
    pub(crate) fn from_entries(heap: &mut Heap, max: usize, entries: &[u8], count: usize) -> Self {
        let mut list = ListObj::with_chunk_bytes(max);
        let (used, max) = (entries.len(), list.chunk_bytes());
        assert!(used <= max, "packed entries fit one chunk");
        if count == 0 {
            return list;
        }
        let mut c = Chunk::new(heap, capacity_for(used + used / 8, max), Side::Back);
        c.buf.bytes_mut()[..used].copy_from_slice(entries);
        (c.mid, c.tail) = (used as u32, used as u32);
        (c.front, c.count) = (count as u32, count as u32);
        c.split_runs();
        list.chunks.reserve_exact(1);
        list.chunks.push_back(c);
        list.len = count;
        list
    }

    fn push(&mut self, heap: &mut Heap, side: Side, value: &[u8]) {
        let s = entry_size(value.len());
        let end = match side {
            Side::Front => self.chunks.front_mut(),
            Side::Back => self.chunks.back_mut(),
        };
        let max = self.chunk_max as usize;
        if let Some(c) = end {
            if c.room(heap, side, s, max) {
                c.push(side, value, s);
                self.len += 1;
                return;
            }
            // The chunk is full and pushes move on: even out its runs, which pushes at one end
            // left lopsided, so an index walk inside it reads at most half of it (as from the
            // nearer end of one run). O(chunk) once per chunk filled.
            c.even_out();
        }
        let mut fresh = Chunk::new(heap, capacity_for(s, max), side);
        fresh.push(side, value, s);
        if self.chunks.is_empty() {
            // Most lists are one chunk: room for exactly that one (40 bytes), not the deque's
            // default of four; a second chunk grows it to four.
            self.chunks.reserve_exact(1);
        }
        match side {
            Side::Front => self.chunks.push_front(fresh),
            Side::Back => self.chunks.push_back(fresh),
        }
        self.len += 1;
    }

    pub fn push_front(&mut self, heap: &mut Heap, value: &[u8]) {
        self.push(heap, Side::Front, value);
    }

    pub fn push_back(&mut self, heap: &mut Heap, value: &[u8]) {
        self.push(heap, Side::Back, value);
    }

    pub fn front(&self) -> Option<&[u8]> {
        self.chunks.front().map(Chunk::first)
    }

    pub fn back(&self) -> Option<&[u8]> {
        self.chunks.back().map(Chunk::last)
    }

    /// The element at the `left` end if true, else the right one.
    pub fn end(&self, left: bool) -> Option<&[u8]> {
        if left { self.front() } else { self.back() }
    }

    fn pop(&mut self, heap: &mut Heap, side: Side) -> bool {
        let i = match side {
            Side::Front => 0,
            Side::Back => match self.chunks.len() {
                0 => return false,
                n => n - 1,
            },
        };
        let Some(c) = self.chunks.get_mut(i) else {
            return false;
        };
        c.pop(side);
        self.len -= 1;
        self.settle(heap, i);
        true
    }

    /// Removes the first element (false when empty). Read it with `front` first.
    pub fn pop_front(&mut self, heap: &mut Heap) -> bool {
        self.pop(heap, Side::Front)
    }

    /// Removes the last element (false when empty). Read it with `back` first.
    pub fn pop_back(&mut self, heap: &mut Heap) -> bool {
        self.pop(heap, Side::Back)
    }

    /// Removes the element at the `left` end if true, else the right one.
    pub fn pop_end(&mut self, heap: &mut Heap, left: bool) -> bool {
        if left {
            self.pop_front(heap)
        } else {
            self.pop_back(heap)
        }
    }

    /// (chunk index, index inside it) of element `index` (`index < len`), walking the chunks
    /// from the nearer end.
    fn locate(&self, index: usize) -> (usize, usize) {
        debug_assert!(index < self.len);
        if index < self.len / 2 {
            let mut rest = index;
            for (i, c) in self.chunks.iter().enumerate() {
                if rest < c.count as usize {
                    return (i, rest);
                }
                rest -= c.count as usize;
            }
        } else {
            let mut from_end = self.len - index;
            for (i, c) in self.chunks.iter().enumerate().rev() {
                if from_end <= c.count as usize {
                    return (i, c.count as usize - from_end);
                }
                from_end -= c.count as usize;
            }
        }
        unreachable!("index {index} < len {}", self.len)
    }

    /// Element `index` (0-based from the head), if any.
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        if index >= self.len {
            return None;
        }
        let (i, k) = self.locate(index);
        Some(self.chunks[i].get(k))
    }

    /// The elements from `index` towards the tail.
    pub fn iter_from(&self, index: usize) -> Iter<'_> {
        if index >= self.len {
            return Iter {
                chunks: &self.chunks,
                chunk: self.chunks.len(),
                at: 0,
                ends: Vec::new(),
            };
        }
        let (i, k) = self.locate(index);
        let c = &self.chunks[i];
        let mut iter = Iter {
            chunks: &self.chunks,
            chunk: i,
            at: c.head as usize,
            ends: Vec::new(),
        };
        if k < c.front as usize {
            for _ in 0..k {
                iter.at = read_forward(c.bytes(), iter.at).2;
            }
        } else {
            iter.at = usize::MAX;
            iter.ends
                .extend(back_ends(c, c.tail as usize).take(c.count as usize - k));
        }
        iter
    }

    /// The elements from `index` (< len) towards the head.
    pub fn rev_from(&self, index: usize) -> RevIter<'_> {
        if index >= self.len {
            return RevIter {
                chunks: &self.chunks,
                chunk: 0,
                at: 0,
                starts: Vec::new(),
            };
        }
        let (i, k) = self.locate(index);
        let c = &self.chunks[i];
        let mut iter = RevIter {
            chunks: &self.chunks,
            chunk: i + 1,
            at: usize::MAX,
            starts: Vec::new(),
        };
        if k < c.front as usize {
            let mut end = c.head as usize;
            for _ in 0..=k {
                end = read_forward(c.bytes(), end).2;
            }
            iter.starts.extend(front_starts(c, end));
        } else {
            iter.at = c.back_end(k);
        }
        iter
    }

    /// Replaces element `index`; false when out of range.
    pub fn set(&mut self, heap: &mut Heap, index: usize, value: &[u8]) -> bool {
        if index >= self.len {
            return false;
        }
        let (i, k) = self.locate(index);
        let max = self.chunk_max as usize;
        let c = &mut self.chunks[i];
        c.flatten();
        let from = c.offset_of(k);
        let to = read_forward(c.bytes(), from).2;
        let s = entry_size(value.len());
        let at = c.splice(heap, (from, to), s, max);
        encode_front(&mut c.buf.bytes_mut()[at..at + s], value);
        self.fix_size(heap, i);
        true
    }

    /// Inserts `value` so that it becomes element `index` (`index <= len`).
    pub fn insert(&mut self, heap: &mut Heap, index: usize, value: &[u8]) {
        debug_assert!(index <= self.len);
        if index == 0 {
            return self.push_front(heap, value);
        }
        if index == self.len {
            return self.push_back(heap, value);
        }
        let (i, k) = self.locate(index);
        let max = self.chunk_max as usize;
        let c = &mut self.chunks[i];
        c.flatten();
        let from = c.offset_of(k);
        let s = entry_size(value.len());
        let at = c.splice(heap, (from, from), s, max);
        encode_front(&mut c.buf.bytes_mut()[at..at + s], value);
        c.count += 1;
        c.front += 1;
        self.len += 1;
        self.fix_size(heap, i);
    }

    /// Splits the flat chunk `i` in halves while it holds more than the list's chunk bound and
    /// more than one entry (after an insert or a set grew it), then splits each into its runs.
    fn fix_size(&mut self, heap: &mut Heap, i: usize) {
        let max = self.chunk_max as usize;
        let c = &mut self.chunks[i];
        if c.used() <= max || c.count < 2 {
            c.split_runs();
            return;
        }
        // The entry boundary nearest the middle byte, keeping one entry on each side.
        let middle = c.head as usize + c.used() / 2;
        let (mut at, mut entries) = (read_forward(c.bytes(), c.head as usize).2, 1u32);
        while entries + 1 < c.count {
            let next = read_forward(c.bytes(), at).2;
            if next > middle {
                break;
            }
            at = next;
            entries += 1;
        }
        let rest = c.split_off(heap, at, entries, max);
        c.fit(heap, max);
        self.chunks.insert(i + 1, rest);
        self.fix_size(heap, i + 1);
        self.fix_size(heap, i);
    }

    /// After a deletion in chunk `i`: drops it when empty, merges it with a neighbour when both
    /// are small (under a quarter of the bound, and together under three quarters, leaving room
    /// for pushes), halves its buffer when it is mostly empty.
    fn settle(&mut self, heap: &mut Heap, i: usize) {
        let max = self.chunk_max as usize;
        let c = &self.chunks[i];
        if c.count == 0 {
            self.chunks.remove(i).expect("chunk i").free(heap);
            return;
        }
        let used = c.used();
        if used < max / 4 {
            let fits = |j: usize| self.chunks[j].used() + used <= max * 3 / 4;
            if i > 0 && fits(i - 1) {
                return self.merge(heap, i - 1);
            }
            if i + 1 < self.chunks.len() && fits(i + 1) {
                return self.merge(heap, i);
            }
        }
        let c = &mut self.chunks[i];
        if c.cap() > CHUNK_MIN_BYTES && used * 4 < c.cap() && c.cap() <= max {
            let cap = capacity_for(c.cap() / 2, max);
            c.relayout(heap, cap, (cap - used) / 2);
        }
    }

    /// Merges chunk `i + 1` into chunk `i` (a fresh buffer, data centred).
    fn merge(&mut self, heap: &mut Heap, i: usize) {
        let max = self.chunk_max as usize;
        let mut next = self.chunks.remove(i + 1).expect("a neighbour");
        let c = &mut self.chunks[i];
        c.flatten();
        next.flatten();
        let used = c.used() + next.used();
        let cap = capacity_for(used + used / 4, max).max(used);
        let before = (cap - used) / 2;
        let mut buf = Buf::alloc(heap, cap);
        let bytes = buf.bytes_mut();
        bytes[before..before + c.used()].copy_from_slice(c.data());
        bytes[before + c.used()..before + used].copy_from_slice(next.data());
        std::mem::replace(&mut c.buf, buf).free(heap);
        c.head = before as u32;
        c.tail = (before + used) as u32;
        c.mid = c.tail;
        c.count += next.count;
        c.front = c.count;
        c.split_runs();
        next.free(heap);
    }

    /// Removes `count` elements starting at `start` (clamped to the list).
    pub fn remove_range(&mut self, heap: &mut Heap, start: usize, count: usize) {
        let count = count.min(self.len.saturating_sub(start));
        if count == 0 {
            return;
        }
        let (first, k) = self.locate(start);
        let max = self.chunk_max as usize;
        let (mut i, mut k, mut left) = (first, k, count);
        while left > 0 {
            let c = &mut self.chunks[i];
            let n = left.min(c.count as usize - k);
            if n == c.count as usize {
                self.chunks.remove(i).expect("chunk i").free(heap);
            } else {
                c.flatten();
                let from = c.offset_of(k);
                let mut to = from;
                for _ in 0..n {
                    to = read_forward(c.bytes(), to).2;
                }
                c.splice(heap, (from, to), 0, max);
                c.count -= n as u32;
                c.front = c.count;
                c.split_runs();
                i += 1;
            }
            left -= n;
            k = 0;
        }
        self.len -= count;
        // Only the chunks cut at either end of the range changed; they now sit at `first` and
        // `first + 1`.
        for j in [first + 1, first] {
            if j < self.chunks.len() {
                self.settle(heap, j);
            }
        }
    }

    /// Keeps elements `start..=end` only (both already clamped: `start <= end < len`); with
    /// `None` empties the list.
    pub fn trim(&mut self, heap: &mut Heap, keep: Option<(usize, usize)>) {
        match keep {
            None => {
                for c in self.chunks.drain(..) {
                    c.free(heap);
                }
                self.len = 0;
            }
            Some((start, end)) => {
                let len = self.len;
                self.remove_range(heap, end + 1, len - end - 1);
                self.remove_range(heap, 0, start);
            }
        }
    }

    /// Removes up to `limit` elements equal to `value` (0: all), scanning from the tail when
    /// `from_tail`. Returns how many were removed.
    pub fn remove_matching(
        &mut self,
        heap: &mut Heap,
        value: &[u8],
        limit: usize,
        from_tail: bool,
    ) -> usize {
        let mut removed = 0usize;
        let (mut starts, mut doomed) = (Vec::new(), Vec::new());
        let order: Vec<usize> = if from_tail {
            (0..self.chunks.len()).rev().collect()
        } else {
            (0..self.chunks.len()).collect()
        };
        let mut touched = Vec::new();
        for i in order {
            if limit != 0 && removed == limit {
                break;
            }
            let c = &mut self.chunks[i];
            c.flatten();
            starts.clear();
            starts.extend(front_starts(c, c.tail as usize));
            doomed.clear();
            let mut scan = |at: &u32| {
                if (limit == 0 || removed < limit) && c.value_forward(*at as usize) == value {
                    doomed.push(*at as usize);
                    removed += 1;
                }
            };
            if from_tail {
                starts.iter().rev().for_each(&mut scan);
                doomed.reverse();
            } else {
                starts.iter().for_each(&mut scan);
            }
            if !doomed.is_empty() {
                c.remove_entries(&doomed);
                touched.push(i);
            }
            c.split_runs();
        }
        self.len -= removed;
        // Settle from the highest index down so earlier indexes stay valid.
        touched.sort_unstable();
        for &i in touched.iter().rev() {
            if i < self.chunks.len() {
                self.settle(heap, i);
            }
        }
        removed
    }

    /// Checks the invariants of the module doc.
    pub fn validate(&self) -> Result<(), String> {
        let mut total = 0usize;
        for (i, c) in self.chunks.iter().enumerate() {
            c.validate().map_err(|e| format!("chunk {i}: {e}"))?;
            if c.count == 0 {
                return Err(format!("chunk {i} is empty"));
            }
            if c.used() > self.chunk_max as usize && c.count > 1 {
                return Err(format!("chunk {i}: {} bytes in {}", c.used(), c.count));
            }
            total += c.count as usize;
        }
        if total == self.len {
            Ok(())
        } else {
            Err(format!("len {} but {total} entries", self.len))
        }
    }

    /// Chunks in the deque (tests, docs, DEBUG OBJECT's `ql_nodes`).
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Bytes of entries over every chunk, gaps excluded (DEBUG OBJECT's `ql_uncompressed_size`,
    /// as Redis sums its nodes' listpack sizes).
    pub fn entry_bytes(&self) -> usize {
        self.chunks.iter().map(|c| (c.tail - c.head) as usize).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_at_full_chunk_does_not_grow_chunks() {
        let mut heap = Heap::new().unwrap();
        let mut l = ListObj::new();
        for i in 0..700 {
            l.push_back(&mut heap, format!("{i:010}").as_bytes());
        }
        for i in 700..20_000 {
            l.push_front(&mut heap, format!("{i:010}").as_bytes());
            assert!(l.pop_back(&mut heap));
        }
        l.validate().unwrap();
        assert_eq!(l.len(), 700);
        assert!(l.chunk_count() <= 3, "{} chunks", l.chunk_count());
        l.destroy(&mut heap);
        assert_eq!(heap.stats().requested_bytes, 0);
    }

    /// A list pushed at one end keeps at most a quarter and a size class of slack, and its copy
    /// holds the same entries in the same chunks, in buffers of its own.
    #[test]
    fn growth_by_size_class_and_copy() {
        let mut heap = Heap::new().unwrap();
        let mut l = ListObj::new();
        for n in 1..=200usize {
            l.push_back(&mut heap, &vec![b'x'; 8 + n % 9]);
            l.validate().unwrap();
            let used = l.entry_bytes();
            let cap = l.chunk_buffer_bytes();
            assert!(
                cap <= (used + used / 4 + used / 8 + 16).max(CHUNK_MIN_BYTES),
                "{used} in {cap}"
            );
        }
        let copy = l.copy_out().into_list(&mut heap);
        copy.validate().unwrap();
        assert!(copy.iter_from(0).eq(l.iter_from(0)));
        assert_eq!(
            (copy.chunk_count(), copy.chunk_bytes()),
            (l.chunk_count(), l.chunk_bytes())
        );
        let live = l.chunk_buffer_bytes() + copy.chunk_buffer_bytes();
        assert_eq!(heap.stats().requested_bytes as usize, live);
        l.destroy(&mut heap);
        copy.destroy(&mut heap);
        assert_eq!(heap.stats().requested_bytes, 0);
    }

    /// Pops from one end drain that end's run; the chunk rebalances and every read stays right:
    /// the two runs' meeting point moves, the elements and their order never do.
    #[test]
    fn runs_rebalance_under_pops_and_pushes_at_both_ends() {
        let mut heap = Heap::new().unwrap();
        let mut l = ListObj::new();
        let mut model = VecDeque::new();
        for i in 0..300u32 {
            let v = format!("{i}").repeat(1 + i as usize % 50).into_bytes();
            if i % 3 == 0 {
                l.push_front(&mut heap, &v);
                model.push_front(v);
            } else {
                l.push_back(&mut heap, &v);
                model.push_back(v);
            }
            l.validate().unwrap();
        }
        for step in 0..600usize {
            let left = (step / 7) % 2 == 0;
            let want = if left { model.front() } else { model.back() };
            assert_eq!(l.end(left), want.map(Vec::as_slice), "step {step}");
            if step % 5 == 4 {
                let v = format!("p{step}").into_bytes();
                l.push_back(&mut heap, &v);
                model.push_back(v);
            } else {
                assert_eq!(l.pop_end(&mut heap, left), !model.is_empty());
                if left {
                    model.pop_front();
                } else {
                    model.pop_back();
                }
            }
            l.validate().unwrap();
            let n = model.len();
            assert!(l.iter_from(0).eq(model.iter().map(Vec::as_slice)));
            if n > 0 {
                assert!(l.rev_from(n - 1).eq(model.iter().rev().map(Vec::as_slice)));
                assert_eq!(l.get(n / 2), model.get(n / 2).map(Vec::as_slice));
            }
        }
        l.destroy(&mut heap);
        assert_eq!(heap.stats().requested_bytes, 0);
    }

    /// Pushes at one end leave a chunk's runs lopsided; a chunk that fills evens them out, so an
    /// index walk reads at most about half a full chunk.
    #[test]
    fn full_chunks_have_even_runs() {
        let mut heap = Heap::new().unwrap();
        let mut l = ListObj::new();
        for i in 0..10_000u32 {
            if i % 2 == 0 {
                l.push_back(&mut heap, format!("{i}").as_bytes());
            } else {
                l.push_front(&mut heap, format!("{i}").as_bytes());
            }
            l.validate().unwrap();
        }
        let inner = l.chunks.len() - 1;
        for c in l.chunks.range(1..inner) {
            let (front, count) = (c.front as usize, c.count as usize);
            assert!(
                front * 4 >= count && front * 4 <= count * 3,
                "{front} of {count}"
            );
        }
        l.destroy(&mut heap);
    }

    /// A chunk filled from one end and not yet full (a list built by RPUSH) keeps its runs
    /// within 1:3 too: each move of its data evens them out, so LINDEX near the head walks the
    /// front run from the head instead of crossing the long back run.
    #[test]
    fn growing_chunks_keep_even_runs() {
        let mut heap = Heap::new().unwrap();
        for side in [Side::Back, Side::Front] {
            let mut l = ListObj::new();
            for i in 0..600u32 {
                l.push(&mut heap, side, format!("elem{i:05}").as_bytes());
                let c = &l.chunks[0];
                let (front, count) = (c.front as usize, c.count as usize);
                if count >= 16 {
                    assert!(
                        front * 5 >= count && front * 5 <= count * 4,
                        "{side:?}: {front} of {count}"
                    );
                }
            }
            assert_eq!(l.chunk_count(), 1);
            l.validate().unwrap();
            l.destroy(&mut heap);
        }
    }
}
