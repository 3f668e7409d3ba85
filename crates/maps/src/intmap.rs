//! `IntMap` (u64 -> u64) and `IntSet` (u64): the extendible hash with integer entries that store
//! only the bits of the key their position does not imply.
//!
//! The key's hash `h = mix(key)` is a keyed *bijection* (`hash.rs`), so the key can be recovered
//! from `h`, and `h` from where the entry lives:
//!
//! ```text
//!  h = | bucket prefix: depth bits | rest: 49 - depth bits | hint: 8 | home: 7 |
//!        from the tenant table       stored in the entry    hint byte  the entry's run
//!
//!  entry (remainder form)                        entry (literal form, small keys)
//!  +-----+--------+-----------------+---------+  +-----+-------------+---------+
//!  | hdr | [dist] | key field: K B  | value   |  | hdr | key: LEB128 | value   |
//!  +-----+--------+-----------------+---------+  +-----+-------------+---------+
//!  hdr = vlen (low nibble, 0..=8) | form (high nibble):
//!        0..=13  remainder form, distance to home = form (always 0 in the run format: every
//!                entry lives in its home run; kept so the form nibble stays one encoding)
//!        14      remainder form, distance in the next byte (unused, see above)
//!        15      literal form: the key itself as a varint (no tenant, no distance)
//!  key field = (rest << 3 | tenant slot), K = ceil((52 - depth) / 8) bytes, little-endian
//!  value     = minimal little-endian bytes (0 bytes for 0; a set stores every value as 0)
//! ```
//!
//! Whichever form is shorter is written, so sequential keys (< 2^21: 3-byte varint) take the
//! literal form and random keys the remainder form. The tenant slot sits in the low three bits of
//! the key field's first byte, so `len_of` finds the depth (hence K) from the page's tenant table.
//!
//! Bytes per entry, 1M random pairs (depth 14..16, K = 5): hint 1 + hdr 1 + key 5 + value 8 = 15,
//! packed byte by byte in a 7789-byte run area: 15.8 B/pair at full pages, ~17.5 B/pair measured
//! with ~0.94 page fill and the directory (20.3 with the piece bins it replaced). Sequential pairs
//! below 2^20: hint 1 + hdr 1 + key 3 + value 3 = 8, ~9 B/pair measured (11.1 before). Redis: dictEntry 24 -> 32 + bucket 8..16 +
//! two small sds ~ 72..80 B/pair; hashbrown `HashMap<u64,u64>`: 17 B per bucket at up to 7/8 load,
//! 35.7 B/pair at 1M (just after a doubling).

use crate::hash::IntHasher;
use crate::page::{ENTRY_BUF_BYTES, Kind, PIECE_COUNT, Page, Tenants};
use crate::table::{Codec, Config, DepthOf, Depths, Placement, Table};
use crate::{MapError, varint};
use heap::Heap;

const FORM_DISTANCE_BYTE: u8 = 14;
const FORM_LITERAL: u8 = 15;

/// Bytes of the key field at `depth`.
#[inline]
fn key_bytes(depth: u8) -> usize {
    (52 - depth as usize).div_ceil(8)
}

/// The bits of `h` between the prefix and the hint.
#[inline]
fn rest_of(h: u64, depth: u8) -> u64 {
    (h << depth) >> (u32::from(depth) + 15)
}

/// LEB128 length of the varint at the start of `bytes`.
#[inline]
fn varint_len_at(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|&b| b < 0x80)
        .expect("terminated varint")
        + 1
}

/// The integer entry codec.
#[derive(Clone, Copy, Debug)]
pub struct IntCodec {
    hasher: IntHasher,
}

impl IntCodec {
    /// Writes the entry for `key -> value` placed at `at`; returns its length.
    fn encode(
        key: u64,
        value: u64,
        h: u64,
        at: Placement,
        out: &mut [u8; ENTRY_BUF_BYTES],
    ) -> usize {
        let vlen = varint::le_len(value);
        let k = key_bytes(at.depth);
        let literal_len = varint::len(key);
        let escape = at.distance >= usize::from(FORM_DISTANCE_BYTE);
        let mut n = 1;
        if literal_len < k + usize::from(escape) {
            out[0] = (FORM_LITERAL << 4) | vlen as u8;
            n += varint::put(&mut out[1..], key);
        } else {
            if escape {
                out[0] = (FORM_DISTANCE_BYTE << 4) | vlen as u8;
                out[1] = at.distance as u8;
                n += 1;
            } else {
                out[0] = ((at.distance as u8) << 4) | vlen as u8;
            }
            let field = (rest_of(h, at.depth) << 3) | at.tenant as u64;
            varint::put_le(&mut out[n..], field, k);
            n += k;
        }
        varint::put_le(&mut out[n..], value, vlen);
        n + vlen
    }

    #[inline]
    fn value_of(bytes: &[u8]) -> u64 {
        let vlen = (bytes[0] & 15) as usize;
        varint::get_le(&bytes[bytes.len() - vlen..], vlen)
    }

    #[inline]
    fn key_of(&self, page: &Page, piece: usize, hint: u8, bytes: &[u8]) -> u64 {
        if bytes[0] >> 4 == FORM_LITERAL {
            varint::get(&bytes[1..]).0
        } else {
            self.hasher
                .unmix(Self::hash_of_remainder(&page.tenants(), piece, hint, bytes))
        }
    }

    fn hash_of_remainder(tenants: &Tenants, piece: usize, hint: u8, bytes: &[u8]) -> u64 {
        let form = bytes[0] >> 4;
        let (distance, at) = if form == FORM_DISTANCE_BYTE {
            (bytes[1] as usize, 2)
        } else {
            (form as usize, 1)
        };
        let tenant = (bytes[at] & 7) as usize;
        let (prefix, depth) = tenants.get(tenant).expect("entry names a live tenant");
        let field = varint::get_le(&bytes[at..], key_bytes(depth));
        let home = (piece + PIECE_COUNT - distance) % PIECE_COUNT;
        let top = if depth == 0 {
            0
        } else {
            u64::from(prefix) << (64 - u32::from(depth))
        };
        top | ((field >> 3) << 15) | (u64::from(hint) << 7) | home as u64
    }
}

impl Codec for IntCodec {
    const KIND: Kind = Kind::Int;
    const STORES_TENANT: bool = true;
    const REENCODE_NEEDS_HASH: bool = true;

    #[inline]
    fn len_of(depths: impl DepthOf, bytes: &[u8]) -> usize {
        let vlen = (bytes[0] & 15) as usize;
        match bytes[0] >> 4 {
            FORM_LITERAL => 1 + varint_len_at(&bytes[1..]) + vlen,
            FORM_DISTANCE_BYTE => 2 + key_bytes(depths.depth_of((bytes[2] & 7) as usize)) + vlen,
            _ => 1 + key_bytes(depths.depth_of((bytes[1] & 7) as usize)) + vlen,
        }
    }

    #[inline]
    fn stored_tenant(bytes: &[u8]) -> Option<usize> {
        match bytes[0] >> 4 {
            FORM_LITERAL => None,
            FORM_DISTANCE_BYTE => Some((bytes[2] & 7) as usize),
            _ => Some((bytes[1] & 7) as usize),
        }
    }

    fn hash_of(
        &self,
        _heap: &Heap,
        tenants: &Tenants,
        piece: usize,
        hint: u8,
        bytes: &[u8],
    ) -> u64 {
        if bytes[0] >> 4 == FORM_LITERAL {
            self.hasher.mix(varint::get(&bytes[1..]).0)
        } else {
            Self::hash_of_remainder(tenants, piece, hint, bytes)
        }
    }

    fn reencode(
        &self,
        bytes: &[u8],
        _depths: Depths,
        h: u64,
        at: Placement,
        out: &mut [u8; ENTRY_BUF_BYTES],
    ) -> usize {
        Self::encode(self.hasher.unmix(h), Self::value_of(bytes), h, at, out)
    }

    fn release(_heap: &mut Heap, _bytes: &[u8]) {}
}

/// A u64 -> u64 map in heap pages; see the module doc for the entry format.
#[derive(Debug)]
pub struct IntMap {
    table: Table<IntCodec>,
}

impl IntMap {
    /// An empty map (one page) with the default config.
    pub fn new(heap: &mut Heap) -> Result<Self, MapError> {
        Self::with_config(heap, &Config::default())
    }

    pub fn with_config(heap: &mut Heap, config: &Config) -> Result<Self, MapError> {
        let codec = IntCodec {
            hasher: IntHasher::new(config.seed),
        };
        Ok(Self {
            table: Table::new(heap, codec, config)?,
        })
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.len() == 0
    }

    /// The hash of `key` and, if present, its entry and value (decoded where the key matched,
    /// so a lookup reads the run once).
    #[inline]
    fn find(&self, key: u64) -> (u64, Option<(crate::table::Loc, u64)>) {
        let h = self.table.codec.hasher.mix(key);
        (h, self.find_hashed(key, h))
    }

    #[inline]
    fn find_hashed(&self, key: u64, h: u64) -> Option<(crate::table::Loc, u64)> {
        let mut value = 0;
        let loc = self.table.find(h, |tenant, depth, distance, bytes| {
            let vlen = (bytes[0] & 15) as usize;
            let form = bytes[0] >> 4;
            if form == FORM_LITERAL {
                let (k, n) = varint::get(&bytes[1..]);
                if k != key {
                    return None;
                }
                value = varint::get_le(&bytes[1 + n..], vlen);
                return Some(1 + n + vlen);
            }
            let (d, at) = if form == FORM_DISTANCE_BYTE {
                (bytes[1] as usize, 2)
            } else {
                (form as usize, 1)
            };
            // The tenant check comes first: another tenant's entry may have a shorter field.
            let k = key_bytes(depth);
            let hit = d == distance
                && usize::from(bytes[at] & 7) == tenant
                && varint::get_le(&bytes[at..], k) == (rest_of(h, depth) << 3) | tenant as u64;
            if !hit {
                return None;
            }
            value = varint::get_le(&bytes[at + k..], vlen);
            Some(at + k + vlen)
        });
        loc.map(|loc| (loc, value))
    }

    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        self.find(key).1.map(|(_, value)| value)
    }

    /// Looks up every key of `keys` in order, calling `f(i, value)`: the same answers as
    /// [`IntMap::get`] per key, with the cache misses of several lookups overlapped
    /// (`Table::pipelined`). For batches: MGET-like commands, joins, bulk reads.
    #[inline]
    pub fn get_many(&self, keys: &[u64], mut f: impl FnMut(usize, Option<u64>)) {
        let hasher = self.table.codec.hasher;
        self.table.pipelined(
            keys.len(),
            |i| hasher.mix(keys[i]),
            |i, h| f(i, self.find_hashed(keys[i], h).map(|(_, v)| v)),
        );
    }

    pub fn contains_key(&self, key: u64) -> bool {
        self.find(key).1.is_some()
    }

    /// Inserts or overwrites; returns the previous value.
    pub fn insert(
        &mut self,
        heap: &mut Heap,
        key: u64,
        value: u64,
    ) -> Result<Option<u64>, MapError> {
        let (h, found) = self.find(key);
        let Some((loc, old)) = found else {
            self.table
                .insert_new(heap, h, |at, out| IntCodec::encode(key, value, h, at, out))?;
            self.check(heap);
            return Ok(None);
        };
        if old != value {
            let mut buf = [0u8; ENTRY_BUF_BYTES];
            let n = IntCodec::encode(key, value, h, self.table.placement_at(&loc, h), &mut buf);
            if !self.table.replace(&loc, &buf[..n]) {
                // The value grew past the page's room: move the entry (make_room runs first).
                self.table.remove_unmerged(&loc);
                self.table
                    .insert_new(heap, h, |at, out| IntCodec::encode(key, value, h, at, out))?;
            }
        }
        self.check(heap);
        Ok(Some(old))
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, heap: &mut Heap, key: u64) -> Option<u64> {
        let (loc, old) = self.find(key).1?;
        self.table.remove(heap, &loc);
        self.check(heap);
        Some(old)
    }

    /// Every (key, value), in page order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.table.entries().map(|(page, piece, hint, bytes)| {
            (
                self.table.codec.key_of(page, piece, hint, bytes),
                IntCodec::value_of(bytes),
            )
        })
    }

    /// One SCAN step (see `table.rs`): calls `f` for a bucket's entries, returns the next cursor
    /// (0 = done). Start with 0.
    pub fn scan(&self, heap: &Heap, cursor: u64, mut f: impl FnMut(u64, u64)) -> u64 {
        self.table.scan(heap, cursor, |page, piece, hint, bytes| {
            f(
                self.table.codec.key_of(page, piece, hint, bytes),
                IntCodec::value_of(bytes),
            );
        })
    }

    /// A random entry chosen by the random number `r`.
    pub fn sample(&self, r: u64) -> Option<(u64, u64)> {
        self.table.sample(r, |page, piece, hint, bytes| {
            (
                self.table.codec.key_of(page, piece, hint, bytes),
                IntCodec::value_of(bytes),
            )
        })
    }

    /// Heap bytes held (pages) plus the directory and page list.
    pub fn memory_bytes(&self) -> usize {
        self.table.memory_bytes()
    }

    /// Pages, global depth and fill, for tests and INFO.
    pub fn shape(&self) -> crate::Shape {
        self.table.shape()
    }

    /// Mean runs probed by a hit and by a miss: 1 and 1, every entry living in its home run
    /// (diagnostics for INFO and benchmarks).
    pub fn probe_stats(&self, heap: &Heap) -> (f64, f64) {
        self.table.probe_stats(heap)
    }

    /// Removes everything, keeping one empty page.
    pub fn clear(&mut self, heap: &mut Heap) -> Result<(), MapError> {
        self.table.free_all(heap);
        self.table = Table::new(heap, self.table.codec, &self.table.config())?;
        Ok(())
    }

    /// Frees every page. Dropping a map without this leaks its pages into the heap.
    pub fn destroy(mut self, heap: &mut Heap) {
        self.table.free_all(heap);
    }

    /// Full invariant check (every page and entry); see `table.rs`.
    pub fn validate(&self, heap: &Heap) -> Result<(), String> {
        self.table.validate(heap)
    }

    #[inline]
    fn check(&self, heap: &Heap) {
        if cfg!(feature = "expensive-checks") {
            self.validate(heap).expect("IntMap invariants");
        }
        let _ = heap;
    }

    /// The hash the map uses for `key` (tests build colliding keys from it).
    #[doc(hidden)]
    pub fn hash_of_key(&self, key: u64) -> u64 {
        self.table.codec.hasher.mix(key)
    }

    /// The key whose hash is `h` (inverse of `hash_of_key`).
    #[doc(hidden)]
    pub fn key_of_hash(&self, h: u64) -> u64 {
        self.table.codec.hasher.unmix(h)
    }
}

/// A set of u64: an [`IntMap`] whose values are all 0 (which take no bytes).
#[derive(Debug)]
pub struct IntSet {
    map: IntMap,
}

impl IntSet {
    pub fn new(heap: &mut Heap) -> Result<Self, MapError> {
        Ok(Self {
            map: IntMap::new(heap)?,
        })
    }

    pub fn with_config(heap: &mut Heap, config: &Config) -> Result<Self, MapError> {
        Ok(Self {
            map: IntMap::with_config(heap, config)?,
        })
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn contains(&self, key: u64) -> bool {
        self.map.contains_key(key)
    }

    /// Adds `key`; true if it was not there.
    pub fn insert(&mut self, heap: &mut Heap, key: u64) -> Result<bool, MapError> {
        Ok(self.map.insert(heap, key, 0)?.is_none())
    }

    /// Removes `key`; true if it was there.
    pub fn remove(&mut self, heap: &mut Heap, key: u64) -> bool {
        self.map.remove(heap, key).is_some()
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.map.iter().map(|(k, _)| k)
    }

    pub fn scan(&self, heap: &Heap, cursor: u64, mut f: impl FnMut(u64)) -> u64 {
        self.map.scan(heap, cursor, |k, _| f(k))
    }

    pub fn sample(&self, r: u64) -> Option<u64> {
        self.map.sample(r).map(|(k, _)| k)
    }

    pub fn memory_bytes(&self) -> usize {
        self.map.memory_bytes()
    }

    pub fn destroy(self, heap: &mut Heap) {
        self.map.destroy(heap);
    }

    pub fn validate(&self, heap: &Heap) -> Result<(), String> {
        self.map.validate(heap)
    }
}
