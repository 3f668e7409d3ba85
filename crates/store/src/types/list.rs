//! List values: one encoding, a deque of packed chunks (Redis's quicklist of listpacks).
//!
//! ```text
//!  ListObj { chunks: VecDeque<Chunk>, len, chunk_max }
//!
//!  Chunk { buf: Box<[u8]>, head, tail, count }      32 bytes
//!   buf: [ gap | entry | entry | … | entry | gap ]
//!          0    head                      tail   cap
//!
//!  entry: [ len: LEB128 varint | bytes (len) | len: LEB128 varint, bytes reversed ]
//!         a 10-byte element is 1 + 10 + 1 = 12 bytes; up to 127 bytes the overhead is 2
//! ```
//! The forward varint lets an iterator walk head → tail, the reversed one (its first LEB128
//! byte is the entry's last byte) lets it walk tail → head, as a listpack's backlen does. Both
//! ends of a chunk keep a gap, so a push at either end writes into the gap (no memmove), and a
//! pop moves `head` or `tail`: O(1) at both ends.
//!
//! Invariants (checked by `validate`):
//! - `head <= tail <= buf.len()`; `buf[head..tail]` is exactly `count` well-formed entries;
//! - no chunk is empty; `len == Σ count`;
//! - `tail - head <= chunk_max` unless `count == 1` (one oversized element alone).
//!
//! Sizing. A chunk holds at most `chunk_max` bytes of entries: by default `CHUNK_MAX_BYTES` =
//! 8 KiB, Redis's default `list-max-listpack-size -2`; a list created under -1 … -5 takes Redis's
//! 4 … 64 KiB node size and keeps it (as a quicklist keeps its fill; merge and shrink thresholds
//! scale with it; the figures below are for 8 KiB). The same bound keeps memory per element comparable, and bounds
//! what one insert or delete in the middle moves (≤ 8 KiB) and what an index scan inside a chunk
//! reads. A count bound (Redis's positive fill) was rejected: with tiny elements it would make
//! chunks small and the per-chunk overhead large, and bytes are what memmove and scans cost.
//! Buffers grow by a quarter from 64 bytes up to 8 KiB, placing the data so that most of the free
//! space lies on the side that is growing; when the pushing side has no gap, the data is moved
//! only if at least a quarter of the buffer is free (so a move of `used` bytes buys at least
//! `cap/8` bytes of pushes), otherwise a new chunk starts: a full chunk fed at one end and drained
//! at the other (a queue) never memmoves per push. After deletions a chunk under 2 KiB merges
//! with a neighbour when both fit in 6 KiB, and a buffer less than a quarter used halves
//! (hysteresis against the doubling).
//!
//! Memory: a full chunk of 10-byte elements holds 682 of them in 8184 of its 8192 bytes, plus
//! 32 bytes of `Chunk` in the deque: ≈ 12.05 bytes per element. Redis's listpack spends 12
//! (1 encoding byte + 10 + 1 backlen) plus a 32-byte quicklistNode and the listpack header per
//! node; see docs/types.md for the measured figures. Elements that are integers are stored
//! as text: a listpack's integer encoding saves at most 2–3 bytes for 10-digit numbers, and text
//! lets LRANGE reply with a copy of the stored bytes.

use crate::edit::{Builder, Collection, Edit, Work, sealed::Internal};
use crate::encoding::{Encoding, Kind};
use crate::error::StoreError;
use crate::limits::Limits;
use crate::object::Object;
use crate::shard::Slot;
use heap::Heap;
use maps::varint;
use shape::ShapeTree;
use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};

/// Most bytes of entries in a chunk by default (one oversized entry may exceed it, alone):
/// Redis's `list-max-listpack-size -2`. A list takes its bound from the shard's `Limits` when it
/// is created and keeps it, as a Redis quicklist keeps the fill it was created with.
pub const CHUNK_MAX_BYTES: usize = 8192;
/// The largest bound a list may have (`list-max-listpack-size -5`).
pub const CHUNK_BYTES_CAP: usize = 65536;
/// Smallest buffer a chunk allocates.
const CHUNK_MIN_BYTES: usize = 64;

const _: () = assert!(size_of::<Chunk>() == 32);

// ---------------------------------------------------------------------------------------------
// Entry codec.

/// Bytes an entry holding `len` bytes takes.
#[inline]
pub fn entry_size(len: usize) -> usize {
    len + 2 * varint::len(len as u64)
}

/// Writes the entry of `value` into `dst`, which is exactly `entry_size(value.len())` long.
#[inline]
fn encode(dst: &mut [u8], value: &[u8]) {
    let n = value.len();
    let h = varint::len(n as u64);
    debug_assert_eq!(dst.len(), n + 2 * h);
    if h == 1 {
        dst[0] = n as u8;
        dst[1..=n].copy_from_slice(value);
        dst[n + 1] = n as u8;
        return;
    }
    let mut rest = n;
    for i in 0..h {
        let more = if i + 1 < h { 0x80 } else { 0 };
        let byte = (rest & 0x7f) as u8 | more;
        dst[i] = byte;
        dst[h + n + (h - 1 - i)] = byte;
        rest >>= 7;
    }
    dst[h..h + n].copy_from_slice(value);
}

/// The entry starting at `at`: (value start, value length, entry end).
#[inline]
fn read_forward(buf: &[u8], at: usize) -> (usize, usize, usize) {
    let b = buf[at];
    if b < 0x80 {
        let n = b as usize;
        return (at + 1, n, at + 2 + n);
    }
    let (mut n, mut shift, mut i) = (0usize, 0, at);
    loop {
        let b = buf[i];
        n |= ((b & 0x7f) as usize) << shift;
        i += 1;
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    let h = i - at;
    (i, n, i + n + h)
}

/// The entry ending at `end`: (entry start, value start, value length).
#[inline]
fn read_backward(buf: &[u8], end: usize) -> (usize, usize, usize) {
    let b = buf[end - 1];
    if b < 0x80 {
        let n = b as usize;
        return (end - 2 - n, end - 1 - n, n);
    }
    let (mut n, mut shift, mut i) = (0usize, 0, end - 1);
    loop {
        let b = buf[i];
        n |= ((b & 0x7f) as usize) << shift;
        if b < 0x80 {
            break;
        }
        shift += 7;
        i -= 1;
    }
    let h = end - i;
    let value = i - n;
    (value - h, value, n)
}

// ---------------------------------------------------------------------------------------------
// Chunk.

#[derive(Clone, Debug)]
struct Chunk {
    buf: Box<[u8]>,
    head: u32,
    tail: u32,
    count: u32,
}

/// Which end of a chunk or list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Front,
    Back,
}

/// The buffer for `bytes` of entries in a list whose chunks hold at most `max` bytes.
fn capacity_for(bytes: usize, max: usize) -> usize {
    if bytes > max {
        bytes
    } else {
        bytes.max(CHUNK_MIN_BYTES).next_power_of_two()
    }
}

impl Chunk {
    /// An empty chunk of `cap` bytes whose gap lies on the side `grows` (pushes go there).
    fn new(cap: usize, grows: Side) -> Chunk {
        let at = if grows == Side::Front { cap as u32 } else { 0 };
        Chunk {
            buf: vec![0u8; cap].into_boxed_slice(),
            head: at,
            tail: at,
            count: 0,
        }
    }

    #[inline]
    fn used(&self) -> usize {
        (self.tail - self.head) as usize
    }

    #[inline]
    fn cap(&self) -> usize {
        self.buf.len()
    }

    #[inline]
    fn data(&self) -> &[u8] {
        &self.buf[self.head as usize..self.tail as usize]
    }

    /// Moves the data into a buffer of `cap` bytes (possibly the same one), leaving `before`
    /// bytes of gap in front of it.
    fn relayout(&mut self, cap: usize, before: usize) {
        let used = self.used();
        debug_assert!(before + used <= cap);
        if cap == self.cap() {
            self.buf
                .copy_within(self.head as usize..self.tail as usize, before);
        } else {
            let mut buf = vec![0u8; cap].into_boxed_slice();
            buf[before..before + used].copy_from_slice(self.data());
            self.buf = buf;
        }
        self.head = before as u32;
        self.tail = (before + used) as u32;
    }

    /// Makes `s` bytes of gap on `side`; false when the chunk would pass `max` bytes and a new
    /// chunk should take the entry instead.
    fn room(&mut self, side: Side, s: usize, max: usize) -> bool {
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
            // Grow by a quarter (rounded to 16 bytes, the allocator's granule): the slack of a
            // list that stops growing averages ~12% instead of doubling's ~33%, for 4 copies per
            // byte instead of 2 — chunks are at most 8 KiB by default. All the spare room goes to the side
            // that grows, so a list pushed at one end fills its chunks to the brim.
            let grown = (self.cap() + self.cap() / 4).next_multiple_of(16);
            let cap = grown.clamp(used + s, max);
            (cap, cap - used - s)
        };
        let before = match side {
            Side::Front => s + spare,
            Side::Back => cap - used - s - spare,
        };
        self.relayout(cap, before);
        true
    }

    fn push(&mut self, side: Side, value: &[u8], s: usize) {
        let at = match side {
            Side::Front => {
                self.head -= s as u32;
                self.head as usize
            }
            Side::Back => {
                self.tail += s as u32;
                self.tail as usize - s
            }
        };
        encode(&mut self.buf[at..at + s], value);
        self.count += 1;
    }

    #[inline]
    fn first(&self) -> &[u8] {
        let (v, n, _) = read_forward(&self.buf, self.head as usize);
        &self.buf[v..v + n]
    }

    #[inline]
    fn last(&self) -> &[u8] {
        let (_, v, n) = read_backward(&self.buf, self.tail as usize);
        &self.buf[v..v + n]
    }

    fn pop(&mut self, side: Side) {
        match side {
            Side::Front => self.head = read_forward(&self.buf, self.head as usize).2 as u32,
            Side::Back => self.tail = read_backward(&self.buf, self.tail as usize).0 as u32,
        }
        self.count -= 1;
    }

    /// Byte offset of entry `index` (0 ≤ index ≤ count; `count` gives `tail`), walking from the
    /// nearer end.
    fn offset_of(&self, index: usize) -> usize {
        let count = self.count as usize;
        debug_assert!(index <= count);
        if index <= count / 2 {
            let mut at = self.head as usize;
            for _ in 0..index {
                at = read_forward(&self.buf, at).2;
            }
            at
        } else {
            let mut at = self.tail as usize;
            for _ in index..count {
                at = read_backward(&self.buf, at).0;
            }
            at
        }
    }

    /// Replaces the bytes `from..to` of the data with `size` new bytes and returns where they
    /// start (the caller writes them). Moves the shorter side; reallocates when no gap fits.
    fn splice(&mut self, from: usize, to: usize, size: usize, max: usize) -> usize {
        let (head, tail) = (self.head as usize, self.tail as usize);
        let old = to - from;
        if size <= old {
            let shrink = old - size;
            if from - head <= tail - to {
                self.buf.copy_within(head..from, head + shrink);
                self.head += shrink as u32;
                return from + shrink;
            }
            self.buf.copy_within(to..tail, to - shrink);
            self.tail -= shrink as u32;
            return from;
        }
        let grow = size - old;
        let front_ok = head >= grow;
        let back_ok = self.cap() - tail >= grow;
        if front_ok && (!back_ok || from - head <= tail - to) {
            self.buf.copy_within(head..from, head - grow);
            self.head -= grow as u32;
            return from - grow;
        }
        if back_ok {
            self.buf.copy_within(to..tail, to + grow);
            self.tail += grow as u32;
            return from;
        }
        let used = self.used() + grow;
        let cap = capacity_for(used + used / 4, max);
        let before = (cap - used) / 2;
        let mut buf = vec![0u8; cap].into_boxed_slice();
        let prefix = from - head;
        buf[before..before + prefix].copy_from_slice(&self.buf[head..from]);
        let suffix_at = before + prefix + size;
        buf[suffix_at..suffix_at + (tail - to)].copy_from_slice(&self.buf[to..tail]);
        self.buf = buf;
        self.head = before as u32;
        self.tail = (before + used) as u32;
        before + prefix
    }

    /// Shrinks a buffer that is more than twice the size its data needs.
    fn fit(&mut self, max: usize) {
        let used = self.used();
        let cap = capacity_for(used + used / 4, max);
        if cap * 2 <= self.cap() {
            self.relayout(cap, (cap - used) / 2);
        }
    }

    /// Splits off the entries from byte offset `at` into a new chunk.
    fn split_off(&mut self, at: usize, entries: u32, max: usize) -> Chunk {
        let moved = self.tail as usize - at;
        let cap = capacity_for(moved + moved / 4, max);
        let mut rest = Chunk::new(cap, Side::Back);
        let before = (cap - moved) / 2;
        rest.buf[before..before + moved].copy_from_slice(&self.buf[at..self.tail as usize]);
        rest.head = before as u32;
        rest.tail = (before + moved) as u32;
        rest.count = self.count - entries;
        self.count = entries;
        self.tail = at as u32;
        rest
    }
}

// ---------------------------------------------------------------------------------------------
// ListObj.

/// A list: a deque of chunks (see the module doc). It lives outside the shard heap (chunks are
/// global-allocator buffers, counted in `used_memory` by the server's allocator), so a clone
/// needs no heap.
#[derive(Clone, Debug)]
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

/// Walks the elements from an index towards the tail (`ListObj::iter_from`).
#[derive(Debug)]
pub struct Iter<'a> {
    chunks: &'a VecDeque<Chunk>,
    chunk: usize,
    at: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let mut c = self.chunks.get(self.chunk)?;
        if self.at >= c.tail as usize {
            self.chunk += 1;
            c = self.chunks.get(self.chunk)?;
            self.at = c.head as usize;
        }
        let (v, n, end) = read_forward(&c.buf, self.at);
        self.at = end;
        Some(&c.buf[v..v + n])
    }
}

/// Walks the elements from an index towards the head (`ListObj::rev_from`).
#[derive(Debug)]
pub struct RevIter<'a> {
    chunks: &'a VecDeque<Chunk>,
    /// The chunk after the one being read (0: done).
    chunk: usize,
    /// End offset of the next entry to yield.
    at: usize,
}

impl<'a> Iterator for RevIter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.chunk == 0 {
            return None;
        }
        let mut c = &self.chunks[self.chunk - 1];
        if self.at <= c.head as usize {
            self.chunk -= 1;
            if self.chunk == 0 {
                return None;
            }
            c = &self.chunks[self.chunk - 1];
            self.at = c.tail as usize;
        }
        let (start, v, n) = read_backward(&c.buf, self.at);
        self.at = start;
        Some(&c.buf[v..v + n])
    }
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

    pub fn destroy(self, _heap: &mut Heap) {}

    /// Bytes owned: the deque's buffer and every chunk's buffer.
    pub fn memory_bytes(&self) -> usize {
        size_of::<ListObj>()
            + self.chunks.capacity() * size_of::<Chunk>()
            + self.chunks.iter().map(Chunk::cap).sum::<usize>()
    }

    /// Redis 7.0 reports every list as a quicklist.
    pub fn encoding_name(&self) -> &'static str {
        "quicklist"
    }

    /// A list of `items`, in order.
    pub fn from_items<I: IntoIterator<Item = T>, T: AsRef<[u8]>>(items: I) -> ListObj {
        let mut list = ListObj::new();
        for item in items {
            list.push_back(item.as_ref());
        }
        list
    }

    fn push(&mut self, side: Side, value: &[u8]) {
        let s = entry_size(value.len());
        let end = match side {
            Side::Front => self.chunks.front_mut(),
            Side::Back => self.chunks.back_mut(),
        };
        let max = self.chunk_max as usize;
        if let Some(c) = end
            && c.room(side, s, max)
        {
            c.push(side, value, s);
            self.len += 1;
            return;
        }
        let mut fresh = Chunk::new(capacity_for(s, max), side);
        fresh.push(side, value, s);
        if self.chunks.is_empty() {
            // Most lists are one chunk: room for exactly that one (32 bytes), not the deque's
            // default of four; a second chunk grows it to four.
            self.chunks.reserve_exact(1);
        }
        match side {
            Side::Front => self.chunks.push_front(fresh),
            Side::Back => self.chunks.push_back(fresh),
        }
        self.len += 1;
    }

    pub fn push_front(&mut self, value: &[u8]) {
        self.push(Side::Front, value);
    }

    pub fn push_back(&mut self, value: &[u8]) {
        self.push(Side::Back, value);
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

    fn pop(&mut self, side: Side) -> bool {
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
        self.settle(i);
        true
    }

    /// Removes the first element (false when empty). Read it with `front` first.
    pub fn pop_front(&mut self) -> bool {
        self.pop(Side::Front)
    }

    /// Removes the last element (false when empty). Read it with `back` first.
    pub fn pop_back(&mut self) -> bool {
        self.pop(Side::Back)
    }

    /// Removes the element at the `left` end if true, else the right one.
    pub fn pop_end(&mut self, left: bool) -> bool {
        if left {
            self.pop_front()
        } else {
            self.pop_back()
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
        let c = &self.chunks[i];
        let (v, n, _) = read_forward(&c.buf, c.offset_of(k));
        Some(&c.buf[v..v + n])
    }

    /// The elements from `index` towards the tail.
    pub fn iter_from(&self, index: usize) -> Iter<'_> {
        if index >= self.len {
            return Iter {
                chunks: &self.chunks,
                chunk: self.chunks.len(),
                at: 0,
            };
        }
        let (i, k) = self.locate(index);
        Iter {
            chunks: &self.chunks,
            chunk: i,
            at: self.chunks[i].offset_of(k),
        }
    }

    /// The elements from `index` (< len) towards the head.
    pub fn rev_from(&self, index: usize) -> RevIter<'_> {
        if index >= self.len {
            return RevIter {
                chunks: &self.chunks,
                chunk: 0,
                at: 0,
            };
        }
        let (i, k) = self.locate(index);
        RevIter {
            chunks: &self.chunks,
            chunk: i + 1,
            at: self.chunks[i].offset_of(k + 1),
        }
    }

    /// Replaces element `index`; false when out of range.
    pub fn set(&mut self, index: usize, value: &[u8]) -> bool {
        if index >= self.len {
            return false;
        }
        let (i, k) = self.locate(index);
        let max = self.chunk_max as usize;
        let c = &mut self.chunks[i];
        let from = c.offset_of(k);
        let to = read_forward(&c.buf, from).2;
        let s = entry_size(value.len());
        let at = c.splice(from, to, s, max);
        encode(&mut c.buf[at..at + s], value);
        self.fix_size(i);
        true
    }

    /// Inserts `value` so that it becomes element `index` (`index <= len`).
    pub fn insert(&mut self, index: usize, value: &[u8]) {
        debug_assert!(index <= self.len);
        if index == 0 {
            return self.push_front(value);
        }
        if index == self.len {
            return self.push_back(value);
        }
        let (i, k) = self.locate(index);
        let max = self.chunk_max as usize;
        let c = &mut self.chunks[i];
        let from = c.offset_of(k);
        let s = entry_size(value.len());
        let at = c.splice(from, from, s, max);
        encode(&mut c.buf[at..at + s], value);
        c.count += 1;
        self.len += 1;
        self.fix_size(i);
    }

    /// Splits chunk `i` in halves while it holds more than the list's chunk bound and more than
    /// one entry (after an insert or a set grew it).
    fn fix_size(&mut self, i: usize) {
        let max = self.chunk_max as usize;
        let c = &mut self.chunks[i];
        if c.used() <= max || c.count < 2 {
            return;
        }
        // The entry boundary nearest the middle byte, keeping one entry on each side.
        let middle = c.head as usize + c.used() / 2;
        let (mut at, mut entries) = (read_forward(&c.buf, c.head as usize).2, 1u32);
        while entries + 1 < c.count {
            let next = read_forward(&c.buf, at).2;
            if next > middle {
                break;
            }
            at = next;
            entries += 1;
        }
        let rest = c.split_off(at, entries, max);
        c.fit(max);
        self.chunks.insert(i + 1, rest);
        self.fix_size(i + 1);
        self.fix_size(i);
    }

    /// After a deletion in chunk `i`: drops it when empty, merges it with a neighbour when both
    /// are small (under a quarter of the bound, and together under three quarters, leaving room
    /// for pushes), halves its buffer when it is mostly empty.
    fn settle(&mut self, i: usize) {
        let max = self.chunk_max as usize;
        let c = &self.chunks[i];
        if c.count == 0 {
            self.chunks.remove(i);
            return;
        }
        let used = c.used();
        if used < max / 4 {
            let fits = |j: usize| self.chunks[j].used() + used <= max * 3 / 4;
            if i > 0 && fits(i - 1) {
                return self.merge(i - 1);
            }
            if i + 1 < self.chunks.len() && fits(i + 1) {
                return self.merge(i);
            }
        }
        let c = &mut self.chunks[i];
        if c.cap() > CHUNK_MIN_BYTES && used * 4 < c.cap() && c.cap() <= max {
            let cap = c.cap() / 2;
            c.relayout(cap, (cap - used) / 2);
        }
    }

    /// Merges chunk `i + 1` into chunk `i` (a fresh buffer, data centred).
    fn merge(&mut self, i: usize) {
        let max = self.chunk_max as usize;
        let next = self.chunks.remove(i + 1).expect("a neighbour");
        let c = &mut self.chunks[i];
        let used = c.used() + next.used();
        let cap = capacity_for(used + used / 4, max).min(max.max(used));
        let before = (cap - used) / 2;
        let mut buf = vec![0u8; cap].into_boxed_slice();
        buf[before..before + c.used()].copy_from_slice(c.data());
        buf[before + c.used()..before + used].copy_from_slice(next.data());
        c.buf = buf;
        c.head = before as u32;
        c.tail = (before + used) as u32;
        c.count += next.count;
    }

    /// Removes `count` elements starting at `start` (clamped to the list).
    pub fn remove_range(&mut self, start: usize, count: usize) {
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
                self.chunks.remove(i);
            } else {
                let from = c.offset_of(k);
                let mut to = from;
                for _ in 0..n {
                    to = read_forward(&c.buf, to).2;
                }
                c.splice(from, to, 0, max);
                c.count -= n as u32;
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
                self.settle(j);
            }
        }
    }

    /// Keeps elements `start..=end` only (both already clamped: `start <= end < len`); with
    /// `None` empties the list.
    pub fn trim(&mut self, keep: Option<(usize, usize)>) {
        match keep {
            None => {
                self.chunks.clear();
                self.len = 0;
            }
            Some((start, end)) => {
                let len = self.len;
                self.remove_range(end + 1, len - end - 1);
                self.remove_range(0, start);
            }
        }
    }

    /// Removes up to `limit` elements equal to `value` (0: all), scanning from the tail when
    /// `from_tail`. Returns how many were removed.
    pub fn remove_matching(&mut self, value: &[u8], limit: usize, from_tail: bool) -> usize {
        let mut removed = 0usize;
        let mut doomed: Vec<usize> = Vec::new();
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
            doomed.clear();
            if from_tail {
                let mut at = c.tail as usize;
                while at > c.head as usize && (limit == 0 || removed < limit) {
                    let (start, v, n) = read_backward(&c.buf, at);
                    if &c.buf[v..v + n] == value {
                        doomed.push(start);
                        removed += 1;
                    }
                    at = start;
                }
                doomed.reverse();
            } else {
                let mut at = c.head as usize;
                while at < c.tail as usize && (limit == 0 || removed < limit) {
                    let (v, n, end) = read_forward(&c.buf, at);
                    if &c.buf[v..v + n] == value {
                        doomed.push(at);
                        removed += 1;
                    }
                    at = end;
                }
            }
            if doomed.is_empty() {
                continue;
            }
            // Compact forward, skipping the doomed entries.
            let (mut read, mut write) = (c.head as usize, c.head as usize);
            let mut next = doomed.iter().copied().peekable();
            while read < c.tail as usize {
                let end = read_forward(&c.buf, read).2;
                if next.peek() == Some(&read) {
                    next.next();
                } else {
                    if read != write {
                        c.buf.copy_within(read..end, write);
                    }
                    write += end - read;
                }
                read = end;
            }
            c.tail = write as u32;
            c.count -= doomed.len() as u32;
            touched.push(i);
        }
        self.len -= removed;
        // Settle from the highest index down so earlier indexes stay valid.
        touched.sort_unstable();
        for &i in touched.iter().rev() {
            if i < self.chunks.len() {
                self.settle(i);
            }
        }
        removed
    }

    /// Checks the invariants of the module doc.
    pub fn validate(&self) -> Result<(), String> {
        let mut total = 0usize;
        for (i, c) in self.chunks.iter().enumerate() {
            if c.head > c.tail || c.tail as usize > c.cap() {
                return Err(format!("chunk {i}: head {} tail {}", c.head, c.tail));
            }
            if c.count == 0 {
                return Err(format!("chunk {i} is empty"));
            }
            if c.used() > self.chunk_max as usize && c.count > 1 {
                return Err(format!("chunk {i}: {} bytes in {}", c.used(), c.count));
            }
            let (mut at, mut n) = (c.head as usize, 0u32);
            while at < c.tail as usize {
                let (_, len, end) = read_forward(&c.buf, at);
                let (start, _, back_len) = read_backward(&c.buf, end);
                if start != at || back_len != len {
                    return Err(format!("chunk {i}: bad entry at {at}"));
                }
                at = end;
                n += 1;
            }
            if at != c.tail as usize || n != c.count {
                return Err(format!("chunk {i}: {n} entries, count {}", c.count));
            }
            total += n as usize;
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

/// The list type (`Shard::read::<List>`, `Shard::update::<List>`).
#[derive(Debug)]
pub enum List {}

impl Internal for List {
    type Obj = ListObj;

    fn object_mut(o: &mut Object) -> Option<&mut ListObj> {
        match o {
            Object::List(l) => Some(l),
            _ => None,
        }
    }

    fn wrap(o: ListObj) -> Object {
        Object::List(o)
    }

    fn is_inline(_t: u8) -> bool {
        false
    }

    fn new_work(_heap: &mut Heap, limits: &Limits) -> Result<Work<'static, ListObj>, StoreError> {
        Ok(Work::Owned(ListObj::with_chunk_bytes(
            limits.list_chunk_bytes,
        )))
    }

    fn inline_len(_t: u8, _bytes: &[u8], _shapes: &ShapeTree) -> usize {
        unreachable!("lists have no inline encoding")
    }

    fn obj_len(o: &ListObj) -> usize {
        o.len()
    }

    fn obj_encoding(_o: &ListObj) -> Encoding {
        Encoding::List
    }

    fn obj_destroy(o: ListObj, heap: &mut Heap) {
        o.destroy(heap);
    }
}

impl Collection for List {
    const KIND: Kind = Kind::List;
    type View<'a> = &'a ListObj;

    fn view(slot: Slot<'_>) -> Option<&ListObj> {
        match slot {
            Slot::Boxed {
                object: Object::List(list),
                ..
            } => Some(list),
            _ => None,
        }
    }
}

/// A list being changed is a `ListObj` (lists have one encoding and no inline form).
impl Deref for Edit<'_, List> {
    type Target = ListObj;

    fn deref(&self) -> &ListObj {
        match &self.work {
            Work::Borrowed(l) => l,
            Work::Owned(l) => l,
            Work::Inline(..) => unreachable!("lists have no inline encoding"),
        }
    }
}

impl DerefMut for Edit<'_, List> {
    fn deref_mut(&mut self) -> &mut ListObj {
        self.changed = true;
        match &mut self.work {
            Work::Borrowed(l) => l,
            Work::Owned(l) => l,
            Work::Inline(..) => unreachable!("lists have no inline encoding"),
        }
    }
}

impl Builder<'_, List> {
    /// Appends an element at the tail.
    pub fn push_back(&mut self, value: &[u8]) {
        self.edit(|l| l.push_back(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codec_round_trips_every_length_class() {
        for n in [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            let value: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
            let s = entry_size(n);
            let mut buf = vec![0xAAu8; s + 4];
            encode(&mut buf[2..2 + s], &value);
            let (v, len, end) = read_forward(&buf, 2);
            assert_eq!((len, end), (n, 2 + s));
            assert_eq!(&buf[v..v + len], &value[..]);
            let (start, v2, len2) = read_backward(&buf, 2 + s);
            assert_eq!((start, v2, len2), (2, v, n));
        }
    }

    #[test]
    fn queue_at_full_chunk_does_not_grow_chunks() {
        let mut l = ListObj::new();
        for i in 0..700 {
            l.push_back(format!("{i:010}").as_bytes());
        }
        for i in 700..20_000 {
            l.push_front(format!("{i:010}").as_bytes());
            assert!(l.pop_back());
        }
        l.validate().unwrap();
        assert_eq!(l.len(), 700);
        assert!(l.chunk_count() <= 3, "{} chunks", l.chunk_count());
    }
}
