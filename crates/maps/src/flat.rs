//! `FlatMap`: a medium-sized byte-string map (or set) in one contiguous buffer of the global
//! allocator: an open-addressed table of one-byte hints and `u16` offsets into an arena of
//! packed entries. It fills the gap between `SmallMap` (<= 8 pairs) and `PageHash` (whose
//! smallest size is one 8 KiB page): a hash of 20 short fields costs ~300 B here.
//!
//! ```text
//!  buf: Box<[u8]>, at most BYTES_MAX (32 KiB)
//!  +---------------------+-------------------------------+---------------------------------+
//!  | hints: u8 x slots   | offsets: u16 LE x slots       | arena: entries, then free bytes |
//!  +---------------------+-------------------------------+---------------------------------+
//!   0                     slots                           3 x slots                   buf.len()
//!
//!  hint   0 = empty, 1 = tombstone, 2..=255 = occupied (eight bits of the key's hash)
//!  offset where the slot's entry starts, relative to the arena
//!  entry  [key len varint][key]                         set mode (no values)
//!         [lens][key][value]                             map mode, key <= 15 B, value <= 14 B
//!         [0xFF][key len varint][value len varint][key][value]   map mode, longer
//!  lens   key len * 15 + value len (0..=239); 240..=254 never occur
//! ```
//!
//! **Addressing.** The home slot of a key is `fastrange(h, slots) = (h * slots) >> 64` of its
//! 64-bit hash (the crate's per-process seeded foldhash), so the slot count need not be a power
//! of two and a rebuild grows the table by 1.125x rather than 2x: slack stays small. Collisions
//! probe linearly; a probe compares the hint byte (the hash's low eight bits, which `fastrange`
//! hardly uses) before it touches the offset and key, so a miss reads ~1 key in 256 candidates.
//!
//! **Changes.** An insert appends its entry to the arena. A removal turns its slot into a
//! tombstone (or empty when the next slot is empty, which ends no probe chain) and leaves its
//! entry's bytes dead; a value replaced by one of another length is appended anew and the old
//! bytes go dead. When the table would pass 90% of its slots used (live + tombstones), a rebuild
//! rehashes the live entries into a fresh buffer sized for 80% load, with arena room for the
//! entries the table takes before it is 90% full again (at their average size), so the two run
//! out together; an arena that runs out first is compacted into a buffer with the same slot
//! count. A rebuild moves at most the live bytes and is paid for by the 1/9 or more of inserts
//! since the last one, so inserts are amortised O(1) (~9 entry copies each). A removal that
//! leaves fewer than a quarter of the slots live shrinks the buffer the same way. If the rebuilt
//! buffer would pass `BYTES_MAX`, `insert` answers [`FlatInsert::Full`] and changes nothing; the
//! caller converts to a `PageHash`.
//!
//! **Invariants** (checked by [`FlatMap::validate`]):
//! `3 x slots + arena capacity == buf.len() <= BYTES_MAX`;
//! `live + tombstones < slots` when `slots > 0` (an empty slot ends every probe);
//! `sum(live entry bytes) + dead_bytes == arena_end <= arena capacity`;
//! every occupied slot's hint is its key's, and a lookup of its key finds that slot.
//!
//! **Bytes per entry.** 3 bytes of slot / load (~0.85 on average: 3.5 B) + the lengths (a set
//! member's varint; one byte for a short pair, like the page's short form, else 1 + a varint
//! each) + the key (and value) + ~6% of it as arena slack. Computed over the buffers alone:
//! 1,000 sets of 1,000 `m:<i>` members cost 4.7 B per member beyond its bytes, 1,000 hashes of
//! 100 `f<i>` -> `v<i>` pairs 5.4 B per pair (6.5 B with a varint per length). Redis 7.0's
//! hashtable spends ~70 B per element (dictEntry, bucket, two sds headers and malloc slack);
//! its listpack (hashes <= 512 pairs) ~2 B per string plus the strings, with no hashing (a
//! lookup is a linear scan).

use crate::hash::{BytesHasher, splitmix};
use crate::varint;
use std::sync::OnceLock;

/// Largest buffer a FlatMap grows to; past it the caller converts to a page-based map.
pub const BYTES_MAX: usize = 32 * 1024;

const EMPTY: u8 = 0;
const TOMB: u8 = 1;
/// Hint, offset.
const SLOT_BYTES: usize = 3;
/// A table with more used slots (live + tombstones) than this percentage is rebuilt.
const LOAD_MAX_PCT: usize = 90;
/// The load a rebuild sizes the table for: it grows by 90/80 = 1.125x, so the table is 85% full
/// on average (3.5 B of slot per entry).
const LOAD_REBUILD_PCT: usize = 80;
/// A rebuild leaves at least `live bytes / ARENA_SLACK_DIV` of free arena.
const ARENA_SLACK_DIV: usize = 16;
/// Tries of the rejection sampler before it falls back to the next occupied slot.
const SAMPLE_TRIES: usize = 64;

const _: () = assert!(BYTES_MAX <= u16::MAX as usize && LOAD_MAX_PCT < 100);

/// What [`FlatMap::insert`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlatInsert {
    /// The key was new.
    Inserted,
    /// The key was there; its value (if the map has values) is replaced.
    Replaced,
    /// The map would pass [`BYTES_MAX`]: nothing changed.
    Full,
}

fn hasher() -> &'static BytesHasher {
    static HASHER: OnceLock<BytesHasher> = OnceLock::new();
    HASHER.get_or_init(|| BytesHasher::new(None))
}

#[inline]
fn fastrange(h: u64, n: usize) -> usize {
    ((u128::from(h) * n as u128) >> 64) as usize
}

/// A map-mode pair up to these lengths has its lengths in one byte (`key * 15 + value`).
const LENS_KEY_MAX: usize = 15;
const LENS_VALUE_MAX: usize = 14;
/// A map-mode entry starting with this byte has its two lengths as varints after it.
const LENS_ESCAPE: u8 = 0xFF;

const _: () = assert!(LENS_KEY_MAX * (LENS_VALUE_MAX + 1) + LENS_VALUE_MAX < LENS_ESCAPE as usize);

/// Bytes of the length header of a map-mode pair.
#[inline]
fn lens_bytes(key_len: usize, value_len: usize) -> usize {
    if key_len <= LENS_KEY_MAX && value_len <= LENS_VALUE_MAX {
        1
    } else {
        1 + varint::len(key_len as u64) + varint::len(value_len as u64)
    }
}

/// Writes the length header of a map-mode pair; returns its byte count.
#[inline]
fn put_lens(out: &mut [u8], key_len: usize, value_len: usize) -> usize {
    if key_len <= LENS_KEY_MAX && value_len <= LENS_VALUE_MAX {
        out[0] = (key_len * (LENS_VALUE_MAX + 1) + value_len) as u8;
        1
    } else {
        out[0] = LENS_ESCAPE;
        let n = 1 + varint::put(&mut out[1..], key_len as u64);
        n + varint::put(&mut out[n..], value_len as u64)
    }
}

/// `(key len, value len, header bytes)` of the map-mode pair starting `a`. Garbage (a byte in
/// 240..=254) is not checked here; `check_entry` rejects it.
#[inline]
fn get_lens(a: &[u8]) -> (usize, usize, usize) {
    let b = a[0];
    if b == LENS_ESCAPE {
        let (k, n) = varint::get(&a[1..]);
        let (v, m) = varint::get(&a[1 + n..]);
        (k as usize, v as usize, 1 + n + m)
    } else {
        let b = usize::from(b);
        (b / (LENS_VALUE_MAX + 1), b % (LENS_VALUE_MAX + 1), 1)
    }
}

/// Bytes of an entry with a `key_len` key and (in map mode) a `value_len` value.
#[inline]
fn entry_bytes(values: bool, key_len: usize, value_len: usize) -> usize {
    if values {
        lens_bytes(key_len, value_len) + key_len + value_len
    } else {
        varint::len(key_len as u64) + key_len
    }
}

/// A byte-string map (or, without values, a set) in one buffer; see the module doc.
#[derive(Clone, Debug, Default)]
pub struct FlatMap {
    buf: Box<[u8]>,
    slot_count: u16,
    len: u16,
    tomb_count: u16,
    /// Arena bytes in use, live or dead (the next entry goes here).
    arena_end: u16,
    dead_bytes: u16,
    values: bool,
    /// Tests: every key gets the same hint, so every probe compares keys.
    same_hints: bool,
}

impl FlatMap {
    /// An empty map of key/value pairs (no allocation until the first insert).
    pub fn new_map() -> Self {
        Self {
            values: true,
            ..Self::default()
        }
    }

    /// An empty set: entries have no value field.
    pub fn new_set() -> Self {
        Self::default()
    }

    /// Tests: the same map with every hint equal, so each probe falls through to the key compare.
    #[doc(hidden)]
    #[must_use]
    pub fn with_same_hints(mut self) -> Self {
        assert!(self.is_empty(), "hints are chosen before the first insert");
        self.same_hints = true;
        self
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether entries carry a value (a map) or not (a set).
    pub fn has_values(&self) -> bool {
        self.values
    }

    /// Bytes the map owns outside itself (its buffer).
    pub fn memory_bytes(&self) -> usize {
        self.buf.len()
    }

    #[inline]
    fn hint_of(&self, h: u64) -> u8 {
        if self.same_hints {
            return 2;
        }
        let b = h as u8;
        if b < 2 { b | 0x80 } else { b }
    }

    #[inline]
    fn arena_start(&self) -> usize {
        self.slot_count as usize * SLOT_BYTES
    }

    #[inline]
    fn offset(&self, slot: usize) -> usize {
        let at = self.slot_count as usize + 2 * slot;
        u16::from_le_bytes([self.buf[at], self.buf[at + 1]]) as usize
    }

    fn set_offset(&mut self, slot: usize, offset: usize) {
        let at = self.slot_count as usize + 2 * slot;
        self.buf[at..at + 2].copy_from_slice(&(offset as u16).to_le_bytes());
    }

    /// The key, value and byte length of the entry at arena `offset`.
    #[inline]
    fn entry(&self, offset: usize) -> (&[u8], &[u8], usize) {
        let a = &self.buf[self.arena_start() + offset..];
        if !self.values {
            let (klen, n) = varint::get(a);
            let key_end = n + klen as usize;
            return (&a[n..key_end], &[], key_end);
        }
        let (klen, vlen, n) = get_lens(a);
        let key_end = n + klen;
        let value_end = key_end + vlen;
        (&a[n..key_end], &a[key_end..value_end], value_end)
    }

    /// `Ok(slot)` of `key`, or `Err(slot)` where it would be inserted (the first tombstone on its
    /// probe path, else the empty slot that ended it). The table must have slots.
    fn find(&self, key: &[u8], h: u64) -> Result<usize, usize> {
        let n = self.slot_count as usize;
        let hint = self.hint_of(h);
        let mut i = fastrange(h, n);
        let mut free = None;
        // Bounded: an empty slot always exists (live + tombstones < slots), at most n steps.
        for _ in 0..n {
            let b = self.buf[i];
            if b == EMPTY {
                return Err(free.unwrap_or(i));
            }
            if b == TOMB {
                free.get_or_insert(i);
            } else if b == hint && crate::hint::key_eq(self.entry(self.offset(i)).0, key) {
                return Ok(i);
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
        Err(free.expect("a full table keeps a free slot"))
    }

    fn slot_of(&self, key: &[u8]) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        self.find(key, hasher().hash(key)).ok()
    }

    /// The value of `key` (empty for a set member).
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.slot_of(key).map(|s| self.entry(self.offset(s)).1)
    }

    #[inline]
    pub fn contains(&self, key: &[u8]) -> bool {
        self.slot_of(key).is_some()
    }

    /// Inserts `key` (with `value` in map mode; ignored in set mode) or replaces its value.
    pub fn insert(&mut self, key: &[u8], value: &[u8]) -> FlatInsert {
        let value = if self.values { value } else { &[] };
        let need = entry_bytes(self.values, key.len(), value.len());
        let h = hasher().hash(key);
        if self.slot_count == 0 && self.rebuild(1, need, true).is_err() {
            return FlatInsert::Full;
        }
        match self.find(key, h) {
            Ok(slot) => {
                if self.values && self.replace(slot, key, value, need).is_err() {
                    return FlatInsert::Full;
                }
                FlatInsert::Replaced
            }
            Err(mut slot) => {
                let used = self.len as usize + self.tomb_count as usize;
                let grows = self.buf[slot] == EMPTY;
                let over =
                    (used + usize::from(grows)) * 100 > self.slot_count as usize * LOAD_MAX_PCT;
                if over || self.arena_free() < need {
                    if self.rebuild(1, need, over).is_err() {
                        return FlatInsert::Full;
                    }
                    slot = self.find(key, h).expect_err("the key is not in the map");
                }
                if self.buf[slot] == TOMB {
                    self.tomb_count -= 1;
                }
                self.buf[slot] = self.hint_of(h);
                let offset = self.append(key, value);
                self.set_offset(slot, offset);
                self.len += 1;
                FlatInsert::Inserted
            }
        }
    }

    /// Replaces the value of the entry in `slot` (in place when the length is unchanged).
    fn replace(&mut self, slot: usize, key: &[u8], value: &[u8], need: usize) -> Result<(), ()> {
        let offset = self.offset(slot);
        let (_, old, old_bytes) = self.entry(offset);
        if old.len() == value.len() {
            let start = self.arena_start() + offset + old_bytes - old.len();
            self.buf[start..start + value.len()].copy_from_slice(value);
            return Ok(());
        }
        if self.arena_free() < need {
            // The rebuild keeps the old entry; its bytes go dead below, in the new arena.
            self.rebuild(0, need, false)?;
            let slot = self
                .find(key, hasher().hash(key))
                .expect("the key is in the map");
            return self.replace(slot, key, value, need);
        }
        let new_offset = self.append(key, value);
        self.set_offset(slot, new_offset);
        self.dead_bytes += old_bytes as u16;
        Ok(())
    }

    fn arena_free(&self) -> usize {
        self.buf.len() - self.arena_start() - self.arena_end as usize
    }

    /// Writes an entry at the arena's end (there is room) and returns its offset.
    fn append(&mut self, key: &[u8], value: &[u8]) -> usize {
        let offset = self.arena_end as usize;
        let mut at = self.arena_start() + offset;
        if self.values {
            at += put_lens(&mut self.buf[at..], key.len(), value.len());
        } else {
            at += varint::put(&mut self.buf[at..], key.len() as u64);
        }
        self.buf[at..at + key.len()].copy_from_slice(key);
        at += key.len();
        if self.values {
            self.buf[at..at + value.len()].copy_from_slice(value);
            at += value.len();
        }
        self.arena_end = (at - self.arena_start()) as u16;
        offset
    }

    /// Removes `key`; true if it was there.
    pub fn remove(&mut self, key: &[u8]) -> bool {
        let Some(slot) = self.slot_of(key) else {
            return false;
        };
        let (_, _, bytes) = self.entry(self.offset(slot));
        self.dead_bytes += bytes as u16;
        self.len -= 1;
        let next = if slot + 1 == self.slot_count as usize {
            0
        } else {
            slot + 1
        };
        if self.buf[next] == EMPTY {
            self.buf[slot] = EMPTY;
        } else {
            self.buf[slot] = TOMB;
            self.tomb_count += 1;
        }
        if self.len == 0 {
            *self = Self {
                values: self.values,
                same_hints: self.same_hints,
                ..Self::default()
            };
        } else if self.len as usize * 4 < self.slot_count as usize {
            // Shrinking needs no more bytes than the map has, so it cannot fail.
            let _ = self.rebuild(0, 0, true);
        }
        true
    }

    /// Rehashes the live entries into a buffer sized for `extra_entries` more entries of
    /// `extra_bytes` in all; `Err` (nothing changed) when it would pass `BYTES_MAX`.
    fn rebuild(
        &mut self,
        extra_entries: usize,
        extra_bytes: usize,
        resize: bool,
    ) -> Result<(), ()> {
        let live_entries = self.len as usize + extra_entries;
        let live_bytes = self.arena_end as usize - self.dead_bytes as usize + extra_bytes;
        let keep = self.slot_count as usize;
        let slots = if !resize && (live_entries + 1) * 100 <= keep * LOAD_MAX_PCT {
            keep
        } else {
            (live_entries * 100 / LOAD_REBUILD_PCT + 1).max(4)
        };
        // Room for the entries the table takes before it must grow (at their average size), so
        // the arena and the table run out together; at least 1/16 for value replacements.
        let headroom = (slots * LOAD_MAX_PCT / 100).saturating_sub(live_entries);
        let slack = (headroom * live_bytes / live_entries.max(1)).max(live_bytes / ARENA_SLACK_DIV);
        let arena = live_bytes + slack;
        let total = slots * SLOT_BYTES + arena;
        if total > BYTES_MAX {
            return Err(());
        }
        let mut next = Self {
            buf: vec![0u8; total].into_boxed_slice(),
            slot_count: slots as u16,
            len: 0,
            tomb_count: 0,
            arena_end: 0,
            dead_bytes: 0,
            values: self.values,
            same_hints: self.same_hints,
        };
        for (k, v) in self.iter() {
            let h = hasher().hash(k);
            let slot = next.find(k, h).expect_err("keys are distinct");
            next.buf[slot] = next.hint_of(h);
            let offset = next.append(k, v);
            next.set_offset(slot, offset);
            next.len += 1;
        }
        *self = next;
        Ok(())
    }

    /// Every (key, value) in table order (values are empty for a set).
    pub fn iter(&self) -> Iter<'_> {
        Iter { map: self, slot: 0 }
    }

    /// The entry in `slot` if it is occupied.
    fn occupied(&self, slot: usize) -> Option<(&[u8], &[u8])> {
        (self.buf[slot] > TOMB).then(|| {
            let (k, v, _) = self.entry(self.offset(slot));
            (k, v)
        })
    }

    /// An entry chosen by the random number `r`, uniformly: random slots until one is occupied
    /// (the load is >= 1/4 after any shrink, so 64 tries miss with odds below 1e-8; then the
    /// next occupied slot is taken, slightly biased).
    pub fn sample(&self, r: u64) -> Option<(&[u8], &[u8])> {
        if self.len == 0 {
            return None;
        }
        let n = self.slot_count as usize;
        let mut x = r;
        for _ in 0..SAMPLE_TRIES {
            if let Some(e) = self.occupied(fastrange(x, n)) {
                return Some(e);
            }
            x = splitmix(x);
        }
        let start = fastrange(x, n);
        (0..n).find_map(|i| self.occupied((start + i) % n))
    }

    /// Checks every invariant of the module doc (tests and `expensive-checks`).
    pub fn validate(&self) -> Result<(), String> {
        if self.slot_count == 0 {
            return if self.buf.is_empty() && self.len == 0 && self.arena_end == 0 {
                Ok(())
            } else {
                Err("an empty table with bytes".into())
            };
        }
        let slots = self.slot_count as usize;
        if self.buf.len() > BYTES_MAX
            || self.arena_start() + self.arena_end as usize > self.buf.len()
        {
            return Err(format!(
                "buffer {} B, slots {slots}, arena end {}",
                self.buf.len(),
                self.arena_end
            ));
        }
        let (mut live, mut tombs, mut live_bytes) = (0usize, 0usize, 0usize);
        for slot in 0..slots {
            match self.buf[slot] {
                EMPTY => {}
                TOMB => tombs += 1,
                hint => {
                    live += 1;
                    let offset = self.offset(slot);
                    let bytes = self.check_entry(offset)?;
                    live_bytes += bytes;
                    let key = self.entry(offset).0;
                    let h = hasher().hash(key);
                    if hint != self.hint_of(h) {
                        return Err(format!("slot {slot}: wrong hint"));
                    }
                    if self.find(key, h) != Ok(slot) {
                        return Err(format!("slot {slot}: its key is found elsewhere"));
                    }
                }
            }
        }
        if live != self.len as usize || tombs != self.tomb_count as usize || live + tombs >= slots {
            return Err(format!(
                "{live} live + {tombs} tombs of {slots}; len {}",
                self.len
            ));
        }
        if live_bytes + self.dead_bytes as usize != self.arena_end as usize {
            return Err(format!(
                "live {live_bytes} B + dead {} B != arena end {}",
                self.dead_bytes, self.arena_end
            ));
        }
        Ok(())
    }

    /// The byte length of the entry at `offset`, checked to lie inside the used arena.
    fn check_entry(&self, offset: usize) -> Result<usize, String> {
        let end = self.arena_end as usize;
        let arena = &self.buf[self.arena_start()..self.arena_start() + end];
        let bad = || format!("entry at {offset} runs past the arena end {end}");
        // Lengths stay below BYTES_MAX: three varint bytes at most; `(len, bytes)`.
        let read_varint = |at: usize| -> Result<(usize, usize), String> {
            let rest = arena.get(at..).filter(|r| !r.is_empty()).ok_or_else(bad)?;
            let n = rest
                .iter()
                .take(3)
                .position(|b| b & 0x80 == 0)
                .ok_or_else(bad)?
                + 1;
            Ok((varint::get(rest).0 as usize, n))
        };
        let at = if self.values {
            let &b = arena.get(offset).ok_or_else(bad)?;
            if b == LENS_ESCAPE {
                let (klen, n) = read_varint(offset + 1)?;
                let (vlen, m) = read_varint(offset + 1 + n)?;
                if klen <= LENS_KEY_MAX && vlen <= LENS_VALUE_MAX {
                    return Err(format!(
                        "entry at {offset}: escaped lengths fit the lens byte"
                    ));
                }
                offset + 1 + n + m + klen + vlen
            } else if usize::from(b) > LENS_KEY_MAX * (LENS_VALUE_MAX + 1) + LENS_VALUE_MAX {
                return Err(format!("entry at {offset}: bad lens byte {b}"));
            } else {
                let (klen, vlen, n) = get_lens(&arena[offset..]);
                offset + n + klen + vlen
            }
        } else {
            let (klen, n) = read_varint(offset)?;
            offset + n + klen
        };
        if at > end {
            return Err(bad());
        }
        Ok(at - offset)
    }
}

impl<'a> IntoIterator for &'a FlatMap {
    type Item = (&'a [u8], &'a [u8]);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Iterator returned by [`FlatMap::iter`].
#[derive(Debug)]
pub struct Iter<'a> {
    map: &'a FlatMap,
    slot: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let map = self.map;
        // Bounded by the slot count.
        while self.slot < map.slot_count as usize {
            let slot = self.slot;
            self.slot += 1;
            if let Some(e) = map.occupied(slot) {
                return Some(e);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lens_byte_holds_short_pairs_and_escapes_the_rest() {
        for (k, v, header) in [
            (0, 0, 1),
            (15, 14, 1),
            (16, 14, 3),
            (15, 15, 3),
            (200, 3, 4),
        ] {
            assert_eq!(lens_bytes(k, v), header, "{k}/{v}");
            let mut out = [0u8; 8];
            assert_eq!(put_lens(&mut out, k, v), header);
            assert_eq!(get_lens(&out), (k, v, header));
            let mut m = FlatMap::new_map();
            let (key, value) = (vec![b'k'; k], vec![b'v'; v]);
            assert_eq!(m.insert(&key, &value), FlatInsert::Inserted);
            assert_eq!(m.get(&key), Some(&value[..]));
            m.validate().unwrap();
        }
    }

    #[test]
    fn grows_to_the_limit_then_reports_full() {
        let mut s = FlatMap::new_set();
        let mut i = 0u32;
        loop {
            let m = format!("m:{i}");
            match s.insert(m.as_bytes(), b"") {
                FlatInsert::Inserted => {}
                FlatInsert::Full => break,
                FlatInsert::Replaced => panic!("distinct members"),
            }
            i += 1;
        }
        s.validate().unwrap();
        assert!(s.memory_bytes() <= BYTES_MAX);
        assert!(s.len() > 2500, "{} members fit", s.len());
        assert_eq!(s.insert(b"m:0", b""), FlatInsert::Replaced);
        for j in 0..i {
            assert!(s.contains(format!("m:{j}").as_bytes()));
        }
    }

    #[test]
    fn a_map_replaces_values_of_any_length() {
        let mut m = FlatMap::new_map();
        for i in 0..100 {
            assert_eq!(
                m.insert(format!("f{i}").as_bytes(), b"v"),
                FlatInsert::Inserted
            );
        }
        for i in 0..100 {
            let v = "x".repeat(i % 7);
            assert_eq!(
                m.insert(format!("f{i}").as_bytes(), v.as_bytes()),
                FlatInsert::Replaced
            );
            m.validate().unwrap();
        }
        assert_eq!(m.get(b"f13"), Some(&b"xxxxxx"[..]));
        assert_eq!(m.get(b"f14"), Some(&b""[..]));
        assert_eq!(m.get(b"nope"), None);
        for i in 0..100 {
            assert!(m.remove(format!("f{i}").as_bytes()));
            m.validate().unwrap();
        }
        assert!(m.is_empty());
        assert_eq!(m.memory_bytes(), 0);
    }

    #[test]
    fn samples_reach_every_entry() {
        let mut m = FlatMap::new_set();
        for i in 0..50 {
            m.insert(&[i], b"");
        }
        let mut seen = [0u32; 50];
        let mut r = 1u64;
        for _ in 0..50_000 {
            r = splitmix(r);
            seen[m.sample(r).unwrap().0[0] as usize] += 1;
        }
        // Uniform: 1000 each expected; six standard deviations is ~190.
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }
}
