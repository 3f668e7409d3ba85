//! `SmallMap`: up to eight field/value pairs in one packed heap allocation, after Ruby's ar_table.
//!
//! ```text
//!  one heap allocation (8-byte aligned)
//!   0  u8[8]  hints          hint of pair i in byte i, never 0; empty slots 0 (hint.rs)
//!   8  u8     count          pairs, 0..=8
//!   9  u8     reserved (0)
//!  10  u16    used           bytes of the pair area
//!  12  u16    alloc_bytes    size requested from the heap (for realloc/free)
//!  14  u16    reserved (0)
//!  16  u16[8] offsets        start of pair i in the pair area
//!  32  pairs  [meta u8][key len u8][key][value len u8][value] ...
//! ```
//!
//! A lookup hashes the key once, matches its hint against the eight hint bytes with one SWAR
//! compare and decodes only the candidates; a different key with the same hint (probability
//! 1/256 per stored pair) is a *hint miss*. The counters [`hint_stats`] (hit / miss / not found,
//! Ruby's `artable_hint_*`) are per thread, which is per shard in the server.
//!
//! Bytes: 32 + sum(3 + key + value) rounded up to the heap's size class; 4 pairs of 8-byte fields
//! and values: 32 + 76 = 108 -> 112 B (28 B/pair). Redis's listpack for the same needs
//! 7 + 4 x 2 x 10 + 1 = 88 B, but is a linear scan with no hints; hashbrown
//! `HashMap<Vec<u8>, Vec<u8>>` with four 10-byte pairs: 672 B measured (glibc chunks of the table
//! and its eight vectors).
//!
//! Past eight pairs, or a key or value longer than [`SmallMap::FIELD_BYTES_MAX`], `insert`
//! answers [`SmallInsert::NeedsConversion`] and changes nothing; the caller converts with
//! [`SmallMap::into_pagehash`] and inserts there.

use crate::pagehash::ValueRef;
use crate::{Config, MapError, Meta, PageHash};
use heap::Heap;
use std::cell::Cell;
use std::ptr::NonNull;

const HEADER_BYTES: usize = 32;
/// Most pairs a SmallMap holds.
pub const PAIRS_MAX: usize = 8;

thread_local! {
    static HINT_HIT: Cell<u64> = const { Cell::new(0) };
    static HINT_MISS: Cell<u64> = const { Cell::new(0) };
    static NOT_FOUND: Cell<u64> = const { Cell::new(0) };
}

/// This thread's SmallMap lookup counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HintStats {
    /// Lookups that found their key.
    pub hint_hit: u64,
    /// Candidates whose hint matched but whose key differed.
    pub hint_miss: u64,
    /// Lookups that did not find their key.
    pub not_found: u64,
}

/// This thread's counters (INFO reads them on each shard's thread).
pub fn hint_stats() -> HintStats {
    HintStats {
        hint_hit: HINT_HIT.with(Cell::get),
        hint_miss: HINT_MISS.with(Cell::get),
        not_found: NOT_FOUND.with(Cell::get),
    }
}

pub fn reset_hint_stats() {
    HINT_HIT.with(|c| c.set(0));
    HINT_MISS.with(|c| c.set(0));
    NOT_FOUND.with(|c| c.set(0));
}

#[inline(always)]
fn bump(counter: &'static std::thread::LocalKey<Cell<u64>>) {
    counter.with(|c| c.set(c.get() + 1));
}

/// The hint hash's two seeds. They are fixed, not drawn per process: a lookup compares at most
/// eight keys whatever the hints, so hints an attacker made collide would cost no more than a
/// map of eight pairs with the same first byte of hash, and constants in the instruction stream
/// spare every lookup the load and check of a lazily seeded static.
const SEEDS: [u64; 2] = [0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344];

/// The hint hash of a key of at most 16 bytes: foldhash's short-input step (the key's first and
/// last words, each xored with a seed, through one folded multiply).
#[inline(always)]
fn short_hash(key: &[u8]) -> u64 {
    let (a, b) = crate::hint::edge_words(key);
    let m = u128::from(a ^ SEEDS[0]) * u128::from(b ^ SEEDS[1] ^ key.len() as u64);
    (m as u64) ^ ((m >> 64) as u64)
}

/// The hint hash of a longer key: foldhash's `fast` variant (one folded multiply fewer than
/// `quality`; hints need only eight good bits).
#[inline(never)]
fn long_hash(key: &[u8]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = foldhash::fast::FixedState::with_seed(SEEDS[0]).build_hasher();
    h.write(key);
    h.finish()
}

/// What [`SmallMap::insert`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmallInsert {
    Inserted,
    Replaced,
    /// Nothing changed: the pair does not fit a SmallMap; convert and insert into the PageHash.
    NeedsConversion,
}

/// Up to eight byte-string pairs in one heap allocation; see the module doc.
#[derive(Debug)]
pub struct SmallMap {
    ptr: NonNull<u8>,
}

fn pair_len(key: &[u8], value: &[u8]) -> usize {
    3 + key.len() + value.len()
}

/// Writes a pair at the start of `out` (which has room for `pair_len(key, value)` bytes).
fn write_pair(out: &mut [u8], meta: Meta, key: &[u8], value: &[u8]) {
    let (k, v) = (key.len(), value.len());
    out[0] = meta.0;
    out[1] = k as u8;
    out[2..2 + k].copy_from_slice(key);
    out[2 + k] = v as u8;
    out[3 + k..3 + k + v].copy_from_slice(value);
}

/// Splits a pair at the start of `bytes`: (meta, key, value, total length).
#[inline]
fn split_pair(bytes: &[u8]) -> (Meta, &[u8], &[u8], usize) {
    let k_end = 2 + bytes[1] as usize;
    let v_at = k_end + 1;
    let v_end = v_at + bytes[k_end] as usize;
    (Meta(bytes[0]), &bytes[2..k_end], &bytes[v_at..v_end], v_end)
}

impl SmallMap {
    /// Longest key or value a SmallMap keeps (Redis's hash-max-listpack-value default).
    pub const FIELD_BYTES_MAX: usize = 64;

    pub fn new(heap: &mut Heap) -> Result<Self, MapError> {
        let ptr = heap.alloc_zeroed(HEADER_BYTES)?;
        let mut map = Self { ptr };
        map.set_u16(12, HEADER_BYTES as u16);
        Ok(map)
    }

    fn header(&self) -> &[u8] {
        // SAFETY: the allocation is at least HEADER_BYTES long, initialised, and owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), HEADER_BYTES) }
    }

    fn u16_at(&self, at: usize) -> usize {
        u16::from_le_bytes([self.header()[at], self.header()[at + 1]]) as usize
    }

    fn set_u16(&mut self, at: usize, v: u16) {
        // SAFETY: `at + 2 <= HEADER_BYTES` (callers use header offsets), the allocation is owned
        // by `self` and `&mut self` excludes other references to it.
        unsafe {
            std::ptr::copy_nonoverlapping(v.to_le_bytes().as_ptr(), self.ptr.as_ptr().add(at), 2);
        }
    }

    pub fn len(&self) -> usize {
        self.header()[8] as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn used(&self) -> usize {
        self.u16_at(10)
    }

    fn alloc_bytes(&self) -> usize {
        self.u16_at(12)
    }

    /// The whole live part: header and pairs.
    #[inline]
    fn bytes(&self) -> &[u8] {
        // SAFETY: header + `used` pair bytes are initialised and within the allocation
        // (`HEADER_BYTES + used <= alloc_bytes` is kept by `insert`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), HEADER_BYTES + self.used()) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        let n = self.alloc_bytes();
        // SAFETY: the allocation is `alloc_bytes` long, initialised up to HEADER_BYTES + used
        // and written before it is read beyond that; `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), n) }
    }

    #[inline]
    fn offset(&self, i: usize) -> usize {
        self.u16_at(16 + 2 * i)
    }

    /// The pair starting at byte `at` of the allocation: (meta, key, value), with no bounds
    /// checks (a lookup's hot path).
    ///
    /// # Safety
    /// `at` must be `HEADER_BYTES + offset(i)` for a live pair `i < len()`.
    #[inline(always)]
    unsafe fn pair_at(&self, at: usize) -> (Meta, &[u8], &[u8]) {
        let p = self.ptr.as_ptr();
        // SAFETY: the caller names a live pair: its three length bytes, key and value lie in
        // the header + `used` bytes, which are initialised, inside the allocation, and not
        // written while `&self` lends them.
        unsafe {
            let k_len = usize::from(*p.add(at + 1));
            let v_len = usize::from(*p.add(at + 2 + k_len));
            (
                Meta(*p.add(at)),
                std::slice::from_raw_parts(p.add(at + 2), k_len),
                std::slice::from_raw_parts(p.add(at + 3 + k_len), v_len),
            )
        }
    }

    /// Index of `key`, where its pair starts in `bytes()`, and its value, counting hint hits,
    /// misses and not-founds. One pass: the eight hints at once, then only the candidates' pairs.
    #[inline(always)]
    fn position(&self, key: &[u8], hint: u8) -> Option<(usize, usize, ValueRef<'_>)> {
        let header: &[u8; HEADER_BYTES] = self.header().try_into().expect("header");
        let hints = u64::from_le_bytes(header[..8].try_into().expect("8 bytes"));
        let mut mask = crate::hint::match_word(hints, hint, PAIRS_MAX);
        if mask == 0 {
            bump(&NOT_FOUND);
            return None;
        }
        // Bounded: at most eight candidates.
        while mask != 0 {
            let i = mask.trailing_zeros() as usize / 8;
            mask &= mask - 1;
            let at = HEADER_BYTES
                + u16::from_le_bytes(header[16 + 2 * i..18 + 2 * i].try_into().expect("2 bytes"))
                    as usize;
            // SAFETY: hint `i` matched, and hints are never 0 while empty slots hold 0, so pair
            // `i` is live and `at` is its start (`validate` checks both invariants).
            let (meta, k, value) = unsafe { self.pair_at(at) };
            if crate::hint::key_eq(k, key) {
                bump(&HINT_HIT);
                return Some((i, at, ValueRef { meta, bytes: value }));
            }
            bump(&HINT_MISS);
        }
        bump(&NOT_FOUND);
        None
    }

    #[inline]
    fn hint(key: &[u8]) -> u8 {
        let h = if key.len() <= 16 {
            short_hash(key)
        } else {
            long_hash(key)
        };
        // Never 0: the hint bytes of empty slots are 0, so a lookup compares all eight bytes
        // without masking by the count (folding 0 into 1 moves the false-match rate per stored
        // hint from 1/256 to ~1/254).
        let b = (h >> 7) as u8;
        b | u8::from(b == 0)
    }

    /// The value of `key`. One pass over one slice: hints, then only the candidates' pairs.
    #[inline(always)]
    pub fn get(&self, key: &[u8]) -> Option<ValueRef<'_>> {
        self.position(key, Self::hint(key))
            .map(|(_, _, value)| value)
    }

    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Inserts or overwrites (keeping the meta of an overwritten pair; new pairs get meta 0).
    pub fn insert(
        &mut self,
        heap: &mut Heap,
        key: &[u8],
        value: &[u8],
    ) -> Result<SmallInsert, MapError> {
        if key.len() > Self::FIELD_BYTES_MAX || value.len() > Self::FIELD_BYTES_MAX {
            return Ok(SmallInsert::NeedsConversion);
        }
        let hint = Self::hint(key);
        match self.position(key, hint) {
            Some((i, _, _)) => {
                self.replace_at(heap, i, key, value)?;
                Ok(SmallInsert::Replaced)
            }
            None if self.len() == PAIRS_MAX => Ok(SmallInsert::NeedsConversion),
            None => {
                self.push(heap, hint, Meta::default(), key, value)?;
                Ok(SmallInsert::Inserted)
            }
        }
    }

    /// Overwrites pair `i`'s value keeping its place in the order (as a listpack does) and its
    /// meta: the old bytes leave the pair area, the new pair goes to its end, `offsets[i]` follows.
    fn replace_at(
        &mut self,
        heap: &mut Heap,
        i: usize,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), MapError> {
        let (count, used) = (self.len(), self.used());
        let start = self.offset(i);
        let (meta, _, _, n) = split_pair(&self.bytes()[HEADER_BYTES + start..]);
        let new_len = pair_len(key, value);
        let need = HEADER_BYTES + used - n + new_len;
        if need > self.alloc_bytes() {
            // SAFETY: `ptr` came from this heap with size `alloc_bytes`, and is replaced by the
            // result (the old pointer is not used again).
            self.ptr = unsafe { heap.realloc(self.ptr, self.alloc_bytes(), need)? };
            self.set_u16(12, need as u16);
        }
        for j in 0..count {
            let off = self.offset(j);
            if j != i && off > start {
                self.set_u16(16 + 2 * j, (off - n) as u16);
            }
        }
        let bytes = self.bytes_mut();
        bytes.copy_within(
            HEADER_BYTES + start + n..HEADER_BYTES + used,
            HEADER_BYTES + start,
        );
        write_pair(&mut bytes[HEADER_BYTES + used - n..], meta, key, value);
        self.set_u16(16 + 2 * i, (used - n) as u16);
        self.set_u16(10, (used - n + new_len) as u16);
        Ok(())
    }

    fn push(
        &mut self,
        heap: &mut Heap,
        hint: u8,
        meta: Meta,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), MapError> {
        let n = pair_len(key, value);
        let (count, used) = (self.len(), self.used());
        let need = HEADER_BYTES + used + n;
        if need > self.alloc_bytes() {
            // SAFETY: `ptr` came from this heap with size `alloc_bytes`, and is replaced by the
            // result (the old pointer is not used again).
            self.ptr = unsafe { heap.realloc(self.ptr, self.alloc_bytes(), need)? };
            self.set_u16(12, need as u16);
        }
        let bytes = self.bytes_mut();
        write_pair(&mut bytes[HEADER_BYTES + used..], meta, key, value);
        bytes[count] = hint;
        bytes[8] = (count + 1) as u8;
        self.set_u16(16 + 2 * count, used as u16);
        self.set_u16(10, (used + n) as u16);
        Ok(())
    }

    fn remove_at(&mut self, i: usize) {
        let (count, used) = (self.len(), self.used());
        let start = self.offset(i);
        let n = split_pair(&self.bytes()[HEADER_BYTES + start..]).3;
        let offsets: Vec<usize> = (0..count).map(|j| self.offset(j)).collect();
        let bytes = self.bytes_mut();
        bytes.copy_within(
            HEADER_BYTES + start + n..HEADER_BYTES + used,
            HEADER_BYTES + start,
        );
        bytes.copy_within(i + 1..count, i);
        bytes[count - 1] = 0;
        bytes[8] = (count - 1) as u8;
        let mut k = 0;
        for (j, &off) in offsets.iter().enumerate() {
            if j != i {
                self.set_u16(16 + 2 * k, (if off > start { off - n } else { off }) as u16);
                k += 1;
            }
        }
        self.set_u16(16 + 2 * (count - 1), 0);
        self.set_u16(10, (used - n) as u16);
    }

    /// Removes `key`; true if it was there.
    pub fn remove(&mut self, key: &[u8]) -> bool {
        match self.position(key, Self::hint(key)) {
            Some((i, _, _)) => {
                self.remove_at(i);
                true
            }
            None => false,
        }
    }

    /// Sets the meta byte of `key`; false if absent.
    pub fn set_meta(&mut self, key: &[u8], meta: Meta) -> bool {
        let Some((_, at, _)) = self.position(key, Self::hint(key)) else {
            return false;
        };
        self.bytes_mut()[at] = meta.0;
        true
    }

    /// Every (key, value) in insertion order (an overwrite moves a pair to the end).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], ValueRef<'_>)> + '_ {
        (0..self.len()).map(move |i| {
            let (meta, k, v, _) = split_pair(&self.bytes()[HEADER_BYTES + self.offset(i)..]);
            (k, ValueRef { meta, bytes: v })
        })
    }

    /// Heap bytes held (the allocation's size class).
    pub fn memory_bytes(&self) -> usize {
        <Heap>::usable_size(self.alloc_bytes())
    }

    /// Moves every pair into a new PageHash and frees this map.
    pub fn into_pagehash(self, heap: &mut Heap, config: &Config) -> Result<PageHash, MapError> {
        let mut map = PageHash::with_config(heap, config)?;
        let pairs: Vec<(Vec<u8>, Vec<u8>, Meta)> = self
            .iter()
            .map(|(k, v)| (k.to_vec(), v.bytes.to_vec(), v.meta))
            .collect();
        for (k, v, meta) in pairs {
            map.insert_with_meta(heap, &k, &v, meta)?;
        }
        self.destroy(heap);
        Ok(map)
    }

    /// Frees the allocation. Dropping without this leaks it into the heap.
    pub fn destroy(self, heap: &mut Heap) {
        // SAFETY: `ptr` came from this heap with size `alloc_bytes` and `self` is consumed.
        unsafe { heap.free(self.ptr, self.alloc_bytes()) };
    }

    /// Recounts and re-decodes every pair.
    pub fn validate(&self) -> Result<(), String> {
        let bytes = self.bytes();
        let count = self.len();
        if count > PAIRS_MAX || HEADER_BYTES + self.used() > self.alloc_bytes() {
            return Err(format!(
                "count {count} used {} alloc {}",
                self.used(),
                self.alloc_bytes()
            ));
        }
        let mut offsets: Vec<usize> = (0..count).map(|i| self.offset(i)).collect();
        for (i, &off) in offsets.iter().enumerate() {
            let (_, k, _, _) = split_pair(&bytes[HEADER_BYTES + off..]);
            if bytes[i] != Self::hint(k) {
                return Err(format!("pair {i}: stale hint"));
            }
        }
        offsets.sort_unstable();
        let mut at = 0;
        for off in offsets {
            if off != at {
                return Err(format!("pair at {off}, expected {at}"));
            }
            at += split_pair(&bytes[HEADER_BYTES + off..]).3;
        }
        if at != self.used() || bytes[count..8].iter().any(|&b| b != 0) {
            return Err("pairs do not tile the used area".into());
        }
        Ok(())
    }
}
