//! Hash values: five encodings chosen by content and size, converting automatically.
//!
//! ```text
//!  tag  encoding   OBJECT ENCODING  holds                                   chosen while
//!   3   record     listpack         inline: shape id + values (`shape`)     fields follow a shape:
//!                                                                           no integer field names,
//!                                                                           values ≤ 64 B, ≤ 64
//!                                                                           fields, ≤ 512 B record
//!   4   small      listpack         boxed `maps::SmallMap`                  ≤ 8 pairs of ≤ 64 B
//!  14   flat       listpack or      boxed `maps::FlatMap`                   strings ≤ 256 B, the
//!                  hashtable (*)                                            buffer ≤ 32 KiB
//!   6   ints       listpack or      boxed `IntHash` (hash_ints.rs)          every field and value
//!                  hashtable (*)                                            a canonical i64, > 8
//!   5   pages      as flat (*)      boxed `maps::PageHash`                  anything larger
//! ```
//! Conversions (each rebuilds the whole hash, so each is amortised by the growth that caused it):
//! record → small/ints/flat when a pair breaks a record's bounds (an integer field name, a long
//! value, the shape tree refuses the transition, the record outgrows 512 bytes); small → ints
//! (all integers) or flat past 8 pairs or 64-byte strings; flat → ints (all integers) or pages
//! when its buffer would pass 32 KiB or a string is longer than `FLAT_BYTES_MAX`; ints →
//! flat/pages when a non-integer arrives; pages → flat when HDEL leaves ≤ 4 pairs. A new hash starts as a record, or small when
//! its first field looks like an integer (integer field names are data, not a shape:
//! `mediabucket:<n> <id>` would otherwise spend the shape tree).
//!
//! (*) OBJECT ENCODING answers as Redis 7.0 would: "listpack" while the hash has never held more
//! than 512 pairs (hash-max-listpack-entries) nor a field or value longer than 64 B
//! (hash-max-listpack-value), "hashtable" once it has, and never back (Redis does not convert a
//! hashtable back). Records and small maps are within those bounds by construction; flat, ints
//! and pages hashes keep a sticky `hashtable` bit (512 pairs of 64-byte strings need ~70 KB, more
//! than a flat buffer, so even a pages hash may still be a "listpack"). The bit is lost when RENAME or COPY moves a hash across shards
//! (the portable form carries no encoding), where Redis keeps the object's encoding.
//!
//! Flat bounds: 256 B per field or value keeps the length varints ≤ 2 bytes and ≥ ~60 of the
//! longest pairs in one 32 KiB buffer, while covering the values the listpack bound (64 B) turns
//! away for Redis; a longer string goes to pages, which keep long values out of line anyway.
//!
//! Shape holds: a record holds its shape once. Writes work on a copy of the record; `record::set`
//! and `remove` move the copy's hold, and the keyspace releases the *stored* record's shape when
//! the entry is removed or overwritten by another tag. So an update first pins the stored shape
//! (one extra hold): when the result is a record the pin is dropped, otherwise (converted or
//! emptied) the copy's hold is dropped and the pin is the hold the keyspace releases.
//!
//! Field order: records and small maps keep insertion order (Redis's listpack order); ints and
//! pages iterate in table order, as Redis's dict does.

#[path = "hash_ints.rs"]
pub mod ints;

use crate::object::{Object, tag};
use crate::shard::{Shard, Slot, StoreError, Ttl};
use heap::Heap;
use ints::{IntHash, int_pair};
use maps::flat::{FlatInsert, FlatMap};
use maps::{PageHash, SmallInsert, SmallMap};
use shape::record;
use shape::{ShapeId, ShapeTree, TooComplex};

pub use shape::record::Value;

/// Most pairs a small (SmallMap) hash holds.
pub const SMALL_PAIRS_MAX: usize = 8;
/// Longest field or value a record or small hash holds (Redis's hash-max-listpack-value).
pub const VALUE_BYTES_MAX: usize = 64;
/// Largest record, in bytes (it is rewritten whole on every change).
pub const RECORD_BYTES_MAX: usize = 512;
/// A pages hash that HDEL shrinks to this many pairs becomes flat (hysteresis: it grew past
/// 32 KiB or held a long string).
pub const SHRINK_PAIRS: usize = 4;
/// Longest field or value a flat hash holds (see the module doc for why 256).
pub const FLAT_BYTES_MAX: usize = 256;
/// Redis's hash-max-listpack-entries (512 in 7.0; zsets use 128): past it OBJECT ENCODING says
/// "hashtable" for good.
pub const LISTPACK_ENTRIES_MAX: usize = 512;

/// The boxed encodings of a hash.
#[derive(Debug)]
pub enum HashObj {
    Small(SmallMap),
    /// `hashtable`: the hash has passed Redis's listpack bounds (see the module doc).
    Flat {
        map: FlatMap,
        hashtable: bool,
    },
    /// The bool is the same sticky `hashtable` bit: a hash of <= 512 pairs with values near
    /// 64 B outgrows a flat buffer while Redis still calls it a listpack.
    Pages(Box<PageHash>, bool),
    /// With the sticky `hashtable` bit (Redis keeps 9..512 integer pairs in a listpack).
    Ints(Box<IntHash>, bool),
}

/// A read of a hash that met another type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrongType;

/// Why a hash write failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashError {
    WrongType,
    OutOfMemory,
}

impl From<StoreError> for HashError {
    fn from(_: StoreError) -> HashError {
        HashError::OutOfMemory
    }
}

impl From<maps::MapError> for HashError {
    fn from(_: maps::MapError) -> HashError {
        HashError::OutOfMemory
    }
}

fn map_config() -> maps::Config {
    maps::Config::default()
}

fn fits_small(field: &[u8], value: &[u8]) -> bool {
    field.len() <= VALUE_BYTES_MAX && value.len() <= VALUE_BYTES_MAX
}

fn fits_flat(field: &[u8], value: &[u8]) -> bool {
    field.len() <= FLAT_BYTES_MAX && value.len() <= FLAT_BYTES_MAX
}

/// A flat map of `pairs`, or `None` when a string is too long or they do not fit 32 KiB.
fn build_flat(pairs: &[(Vec<u8>, Vec<u8>)]) -> Option<FlatMap> {
    if !pairs.iter().all(|(f, v)| fits_flat(f, v)) {
        return None;
    }
    // A cheap bound first: each pair needs its bytes, two length bytes and >= 3 of slot.
    let bytes: usize = pairs.iter().map(|(f, v)| f.len() + v.len() + 5).sum();
    if bytes > maps::flat::BYTES_MAX {
        return None;
    }
    let mut m = FlatMap::new_map();
    for (f, v) in pairs {
        if m.insert(f, v) == FlatInsert::Full {
            return None;
        }
    }
    Some(m)
}

/// Builds the boxed encoding for `pairs` (distinct fields), in order. `hashtable`: the hash
/// has already passed the listpack bounds (so it is not made small again).
fn build(
    heap: &mut Heap,
    pairs: &[(Vec<u8>, Vec<u8>)],
    hashtable: bool,
) -> Result<HashObj, StoreError> {
    let hashtable = hashtable
        || pairs.len() > LISTPACK_ENTRIES_MAX
        || !pairs.iter().all(|(f, v)| fits_small(f, v));
    if !hashtable && pairs.len() <= SMALL_PAIRS_MAX {
        let mut m = SmallMap::new(heap)?;
        for (f, v) in pairs {
            let done = m.insert(heap, f, v);
            if !matches!(done, Ok(SmallInsert::Inserted | SmallInsert::Replaced)) {
                m.destroy(heap);
                return Err(StoreError::OutOfMemory);
            }
        }
        return Ok(HashObj::Small(m));
    }
    // Integer pairs go to the int table whatever their count: ~8 B per pair where a flat map
    // spends the digits plus ~6 B (the `mediabucket` workload: 8.6 B per field against 20).
    let ints: Option<Vec<(i64, i64)>> = pairs.iter().map(|(f, v)| int_pair(f, v)).collect();
    if let Some(ints) = ints {
        let mut t = IntHash::with_capacity(ints.len());
        for (k, v) in ints {
            t.insert(k, v);
        }
        return Ok(HashObj::Ints(Box::new(t), hashtable));
    }
    if let Some(map) = build_flat(pairs) {
        return Ok(HashObj::Flat { map, hashtable });
    }
    let mut p = PageHash::with_config(heap, &map_config())?;
    for (f, v) in pairs {
        if let Err(e) = p.insert(heap, f, v) {
            p.destroy(heap);
            return Err(e.into());
        }
    }
    Ok(HashObj::Pages(Box::new(p), hashtable))
}

impl HashObj {
    pub fn destroy(self, heap: &mut Heap) {
        match self {
            HashObj::Small(m) => m.destroy(heap),
            HashObj::Pages(p, _) => p.destroy(heap),
            HashObj::Ints(..) | HashObj::Flat { .. } => {}
        }
    }

    pub fn memory_bytes(&self) -> usize {
        match self {
            HashObj::Small(m) => m.memory_bytes(),
            HashObj::Pages(p, _) => std::mem::size_of::<PageHash>() + p.memory_bytes(),
            HashObj::Ints(t, _) => t.memory_bytes(),
            HashObj::Flat { map, .. } => map.memory_bytes(),
        }
    }

    pub fn encoding_name(&self) -> &'static str {
        let hashtable = match self {
            HashObj::Small(_) => false,
            HashObj::Flat { hashtable, .. }
            | HashObj::Pages(_, hashtable)
            | HashObj::Ints(_, hashtable) => *hashtable,
        };
        if hashtable { "hashtable" } else { "listpack" }
    }

    /// Whether the hash has passed Redis's listpack bounds (OBJECT ENCODING "hashtable").
    fn is_hashtable(&self) -> bool {
        self.encoding_name() == "hashtable"
    }

    /// The keyspace tag of this encoding.
    pub fn tag(&self) -> u8 {
        match self {
            HashObj::Small(_) => tag::HASH_SMALL,
            HashObj::Pages(..) => tag::HASH_PAGES,
            HashObj::Ints(..) => tag::HASH_INTS,
            HashObj::Flat { .. } => tag::HASH_FLAT,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            HashObj::Small(m) => m.len(),
            HashObj::Pages(p, _) => p.len(),
            HashObj::Ints(t, _) => t.len(),
            HashObj::Flat { map, .. } => map.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn export(&self, heap: &Heap) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::with_capacity(self.len());
        HashRef::Obj { obj: self, heap }.for_each(|f, v| out.push((f.to_vec(), v.to_vec())));
        out
    }
}

/// A hash being read.
#[derive(Debug)]
pub enum HashRef<'a> {
    Record {
        tree: &'a mut ShapeTree,
        bytes: &'a [u8],
    },
    Obj {
        obj: &'a HashObj,
        heap: &'a Heap,
    },
}

/// The hash in `slot`: `Ok(None)` when the key is missing, `Err` for another type.
pub fn view(slot: Slot<'_>) -> Result<Option<HashRef<'_>>, WrongType> {
    match slot {
        Slot::Missing => Ok(None),
        Slot::Inline {
            tag: tag::HASH_RECORD,
            bytes,
            shapes,
            ..
        } => Ok(Some(HashRef::Record {
            tree: shapes,
            bytes,
        })),
        Slot::Boxed {
            object: Object::Hash(obj),
            heap,
            ..
        } => Ok(Some(HashRef::Obj { obj, heap })),
        _ => Err(WrongType),
    }
}

impl HashRef<'_> {
    pub fn len(&self) -> usize {
        match self {
            HashRef::Record { tree, bytes } => record::len(tree, bytes),
            HashRef::Obj { obj, .. } => obj.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `field`.
    pub fn get(&mut self, field: &[u8]) -> Option<Value<'_>> {
        match self {
            HashRef::Record { tree, bytes } => record::get(tree, bytes, field),
            HashRef::Obj { obj, heap } => obj_get(obj, heap, field),
        }
    }

    /// Every (field, value) in the encoding's order.
    pub fn for_each(&self, mut f: impl FnMut(Value<'_>, Value<'_>)) {
        match self {
            HashRef::Record { tree, bytes } => {
                for (k, v) in record::iter(tree, bytes) {
                    f(Value::Bytes(k), v);
                }
            }
            HashRef::Obj { obj, heap } => match obj {
                HashObj::Small(m) => m
                    .iter()
                    .for_each(|(k, v)| f(Value::Bytes(k), Value::Bytes(v.bytes))),
                HashObj::Pages(p, _) => p
                    .iter(heap)
                    .for_each(|(k, v)| f(Value::Bytes(k), Value::Bytes(v.bytes))),
                HashObj::Ints(t, _) => t.iter().for_each(|(k, v)| f(Value::Int(k), Value::Int(v))),
                HashObj::Flat { map, .. } => map
                    .iter()
                    .for_each(|(k, v)| f(Value::Bytes(k), Value::Bytes(v))),
            },
        }
    }

    /// Every pair, copied out.
    pub fn pairs(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::with_capacity(self.len());
        self.for_each(|f, v| out.push((f.to_vec(), v.to_vec())));
        out
    }

    /// Whether HSCAN returns the hash whole at cursor 0 (records, small and flat maps: at
    /// most 32 KiB, as Redis does for its listpacks).
    pub fn is_compact(&self) -> bool {
        matches!(
            self,
            HashRef::Record { .. }
                | HashRef::Obj {
                    obj: HashObj::Small(_) | HashObj::Flat { .. },
                    ..
                }
        )
    }

    /// A random pair chosen by `r`, copied out.
    pub fn sample(&self, r: u64) -> Option<(Vec<u8>, Vec<u8>)> {
        let len = self.len();
        if len == 0 {
            return None;
        }
        match self {
            HashRef::Obj {
                obj: HashObj::Pages(p, _),
                heap,
            } => p
                .sample(heap, r)
                .map(|(k, v)| (k.to_vec(), v.bytes.to_vec())),
            HashRef::Obj {
                obj: HashObj::Ints(t, _),
                ..
            } => t
                .sample(r)
                .map(|(k, v)| (k.to_string().into_bytes(), v.to_string().into_bytes())),
            HashRef::Obj {
                obj: HashObj::Flat { map, .. },
                ..
            } => map.sample(r).map(|(k, v)| (k.to_vec(), v.to_vec())),
            _ => {
                let pick = (r % len as u64) as usize;
                let mut out = None;
                let mut i = 0;
                self.for_each(|f, v| {
                    if i == pick {
                        out = Some((f.to_vec(), v.to_vec()));
                    }
                    i += 1;
                });
                out
            }
        }
    }

    /// One HSCAN step over a hashtable encoding: calls `f` with some pairs and returns the next
    /// cursor (0 when done). Compact encodings return everything at once with cursor 0.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(Value<'_>, Value<'_>)) -> u64 {
        match self {
            HashRef::Obj {
                obj: HashObj::Pages(p, _),
                heap,
            } => {
                let mut cursor = cursor;
                let mut seen = 0;
                // One bucket per step, bounded as Redis bounds its dictScan calls.
                for _ in 0..count.max(1) * 10 {
                    cursor = p.scan(heap, cursor, |k, v| {
                        seen += 1;
                        f(Value::Bytes(k), Value::Bytes(v.bytes));
                    });
                    if cursor == 0 || seen >= count {
                        break;
                    }
                }
                cursor
            }
            HashRef::Obj {
                obj: HashObj::Ints(t, _),
                ..
            } => t.scan(cursor, count, |k, v| f(Value::Int(k), Value::Int(v))),
            _ => {
                self.for_each(f);
                0
            }
        }
    }
}

fn obj_get<'a>(obj: &'a HashObj, heap: &'a Heap, field: &[u8]) -> Option<Value<'a>> {
    match obj {
        HashObj::Small(m) => m.get(field).map(|v| Value::Bytes(v.bytes)),
        HashObj::Pages(p, _) => p.get(heap, field).map(|v| Value::Bytes(v.bytes)),
        HashObj::Flat { map, .. } => map.get(field).map(Value::Bytes),
        HashObj::Ints(t, _) => {
            let k = record::canonical_i64(field).filter(|&k| k != i64::MIN)?;
            t.get(k).map(Value::Int)
        }
    }
}

#[derive(Debug)]
enum Work<'a> {
    Record(Vec<u8>),
    Borrowed(&'a mut HashObj),
    Owned(HashObj),
}

/// A hash being written (see `update`).
#[derive(Debug)]
pub struct HashMut<'a> {
    work: Work<'a>,
    tree: &'a mut ShapeTree,
    heap: &'a mut Heap,
    changed: bool,
}

impl HashMut<'_> {
    pub fn len(&self) -> usize {
        match &self.work {
            Work::Record(r) => record::len(self.tree, r),
            Work::Borrowed(o) => o.len(),
            Work::Owned(o) => o.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `field`.
    pub fn get(&mut self, field: &[u8]) -> Option<Value<'_>> {
        match &self.work {
            Work::Record(r) => record::get(self.tree, r, field),
            Work::Borrowed(o) => obj_get(o, self.heap, field),
            Work::Owned(o) => obj_get(o, self.heap, field),
        }
    }

    pub fn contains(&mut self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    fn obj(&mut self) -> &mut HashObj {
        match &mut self.work {
            Work::Borrowed(o) => o,
            Work::Owned(o) => o,
            Work::Record(_) => unreachable!("a record is not an object"),
        }
    }

    /// Converts a record to the boxed encoding its pairs call for; the copy's shape hold goes.
    fn convert_record(&mut self) -> Result<(), StoreError> {
        let Work::Record(r) = &self.work else {
            return Ok(());
        };
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = record::iter(self.tree, r)
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect();
        let obj = build(self.heap, &pairs, false)?;
        record::release(self.tree, r);
        self.work = Work::Owned(obj);
        Ok(())
    }

    /// HSET of one pair: true when the field is new.
    pub fn set(&mut self, field: &[u8], value: &[u8]) -> Result<bool, StoreError> {
        self.changed = true;
        if let Work::Record(r) = &mut self.work {
            if record::canonical_i64(field).is_none() && fits_small(field, value) {
                match record::set(self.tree, r, field, value) {
                    Ok(new) if r.len() <= RECORD_BYTES_MAX => return Ok(new),
                    Ok(new) => {
                        self.convert_record()?;
                        return Ok(new);
                    }
                    // The record is unchanged: convert, then insert below.
                    Err(TooComplex) => {}
                }
            }
            self.convert_record()?;
        }
        let heap = &mut *self.heap;
        let obj: &mut HashObj = match &mut self.work {
            Work::Borrowed(o) => o,
            Work::Owned(o) => o,
            Work::Record(_) => unreachable!("converted above"),
        };
        if let Some(new) = obj_set(obj, heap, field, value)? {
            return Ok(new);
        }
        // The pair does not fit the encoding: rebuild with it included.
        let hashtable = obj.is_hashtable();
        let mut pairs = HashRef::Obj { obj, heap }.pairs();
        let new = if let Some(pair) = pairs.iter_mut().find(|(f, _)| f == field) {
            pair.1 = value.to_vec();
            false
        } else {
            pairs.push((field.to_vec(), value.to_vec()));
            true
        };
        let rebuilt = build(heap, &pairs, hashtable)?;
        std::mem::replace(obj, rebuilt).destroy(heap);
        Ok(new)
    }

    /// HDEL of one field: true when it was there.
    pub fn remove(&mut self, field: &[u8]) -> Result<bool, StoreError> {
        if let Work::Record(r) = &mut self.work {
            match record::remove(self.tree, r, field) {
                Ok(found) => {
                    self.changed |= found;
                    return Ok(found);
                }
                Err(TooComplex) => self.convert_record()?,
            }
        }
        let heap = &mut *self.heap;
        let obj: &mut HashObj = match &mut self.work {
            Work::Borrowed(o) => o,
            Work::Owned(o) => o,
            Work::Record(_) => unreachable!("converted above"),
        };
        let found = match obj {
            HashObj::Small(m) => m.remove(field),
            HashObj::Ints(t, _) => record::canonical_i64(field)
                .filter(|&k| k != i64::MIN)
                .is_some_and(|k| t.remove(k)),
            HashObj::Pages(p, _) => p.remove(heap, field),
            HashObj::Flat { map, .. } => map.remove(field),
        };
        self.changed |= found;
        if let HashObj::Pages(p, _) = obj
            && found
            && p.len() <= SHRINK_PAIRS
            && !p.is_empty()
        {
            // A few pairs left in an 8 KiB page: a flat map holds them in ~100 B. OBJECT
            // ENCODING does not change (the sticky bit moves along).
            let hashtable = obj.is_hashtable();
            let pairs = HashRef::Obj { obj, heap }.pairs();
            if pairs.iter().all(|(f, v)| fits_flat(f, v)) {
                let rebuilt = build(heap, &pairs, hashtable)?;
                std::mem::replace(obj, rebuilt).destroy(heap);
            }
        }
        Ok(found)
    }
}

/// HSET of one pair into a boxed encoding: `Some(new)`, or `None` (nothing changed) when the pair
/// does not fit the encoding.
fn obj_set(
    obj: &mut HashObj,
    heap: &mut Heap,
    field: &[u8],
    value: &[u8],
) -> Result<Option<bool>, StoreError> {
    Ok(match obj {
        HashObj::Pages(p, hashtable) => {
            let new = !p.insert(heap, field, value)?;
            *hashtable |= p.len() > LISTPACK_ENTRIES_MAX || !fits_small(field, value);
            Some(new)
        }
        HashObj::Small(m) => match m.insert(heap, field, value)? {
            SmallInsert::Inserted => Some(true),
            SmallInsert::Replaced => Some(false),
            SmallInsert::NeedsConversion => None,
        },
        HashObj::Ints(t, hashtable) => int_pair(field, value).map(|(k, v)| {
            let new = t.insert(k, v);
            *hashtable |= t.len() > LISTPACK_ENTRIES_MAX;
            new
        }),
        HashObj::Flat { map, hashtable } if fits_flat(field, value) => {
            match map.insert(field, value) {
                FlatInsert::Full => None,
                done => {
                    *hashtable |= map.len() > LISTPACK_ENTRIES_MAX || !fits_small(field, value);
                    Some(done == FlatInsert::Inserted)
                }
            }
        }
        HashObj::Flat { .. } => None,
    })
}

/// Runs `f` on the hash at `key` for writing, then stores the result: `Ok(None)` when the key is
/// missing and `create` is false (nothing stored). A new hash gets `ttl`; an existing one keeps
/// its TTL. An emptied hash is deleted.
pub fn update<R>(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    now_ms: u64,
    create: bool,
    f: impl FnOnce(&mut HashMut<'_>) -> Result<R, StoreError>,
) -> Result<Option<R>, HashError> {
    update_with_ttl(shard, db, key, now_ms, create, Ttl::Clear, f)
}

enum Found {
    Missing,
    Record(Vec<u8>, Option<u64>),
    /// A boxed hash, already updated in place: (result, tag before, tag after, now empty).
    Done(Result<(), StoreError>, u8, u8, bool),
}

fn update_with_ttl<R>(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    now_ms: u64,
    create: bool,
    ttl_new: Ttl,
    f: impl FnOnce(&mut HashMut<'_>) -> Result<R, StoreError>,
) -> Result<Option<R>, HashError> {
    let mut f = Some(f);
    let mut result = None;
    let found = shard.with_slot(db, key, now_ms, |slot| match slot {
        Slot::Missing => Ok(Found::Missing),
        Slot::Inline {
            tag: tag::HASH_RECORD,
            bytes,
            expire_at_ms,
            shapes,
        } => {
            // Pin the stored record's shape (see the module doc).
            shapes.retain(record::shape(bytes));
            Ok(Found::Record(bytes.to_vec(), expire_at_ms))
        }
        Slot::Boxed {
            tag: before,
            object: Object::Hash(obj),
            heap,
            shapes,
            ..
        } => {
            let mut h = HashMut {
                work: Work::Borrowed(obj),
                tree: shapes,
                heap,
                changed: false,
            };
            let f = f.take().expect("called once");
            let done = f(&mut h).map(|r| result = Some(r));
            let after = h.obj().tag();
            let empty = h.is_empty();
            Ok(Found::Done(done, before, after, empty))
        }
        _ => Err(HashError::WrongType),
    })?;
    match found {
        Found::Done(done, before, after, empty) => {
            if empty {
                shard.remove(db, key, now_ms);
            } else if before != after {
                shard.set_tag(db, key, after);
            }
            done?;
            Ok(result)
        }
        Found::Missing if !create => Ok(None),
        Found::Missing => {
            let f = f.take().expect("called once");
            commit_unboxed(shard, db, key, now_ms, None, record::empty(), ttl_new, f)
        }
        Found::Record(bytes, expire_at_ms) => {
            let f = f.take().expect("called once");
            let pin = Some(record::shape(&bytes));
            commit_unboxed(shard, db, key, now_ms, pin, bytes, Ttl::of(expire_at_ms), f)
        }
    }
}

/// Runs `f` on a record copy (of the stored record whose shape is `pin`ned, or a new one) and
/// stores what it became.
#[allow(clippy::too_many_arguments)]
fn commit_unboxed<R>(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    now_ms: u64,
    pin: Option<ShapeId>,
    bytes: Vec<u8>,
    ttl: Ttl,
    f: impl FnOnce(&mut HashMut<'_>) -> Result<R, StoreError>,
) -> Result<Option<R>, HashError> {
    let (heap, tree) = shard.heap_and_shapes();
    let mut h = HashMut {
        work: Work::Record(bytes),
        tree,
        heap,
        changed: false,
    };
    let outcome = f(&mut h);
    let changed = h.changed;
    let empty = h.is_empty();
    let work = h.work;
    let result = match outcome {
        Ok(r) => r,
        Err(e) => {
            // Undo: drop what the copy holds; the stored entry is unchanged and keeps its hold.
            match work {
                Work::Record(r) => record::release(&mut shard.shapes, &r),
                Work::Owned(o) => o.destroy(shard.heap_mut()),
                Work::Borrowed(_) => unreachable!(),
            }
            // The stored entry is unchanged; the pin is its one hold again.
            return Err(e.into());
        }
    };
    match work {
        Work::Record(r) if empty => {
            // Every hold of the copy is gone with its fields; the pin is what the keyspace
            // releases with the entry.
            record::release(&mut shard.shapes, &r);
            if pin.is_some() {
                shard.remove(db, key, now_ms);
            }
        }
        Work::Record(r) => {
            if (changed || pin.is_none())
                && let Err(e) = shard.put(db, key, tag::HASH_RECORD, &r, ttl, now_ms)
            {
                record::release(&mut shard.shapes, &r);
                return Err(e.into());
            }
            if let Some(s) = pin {
                shard.shapes.release(s);
            }
        }
        Work::Owned(o) if o.is_empty() => {
            o.destroy(shard.heap_mut());
            if pin.is_some() {
                shard.remove(db, key, now_ms);
            }
        }
        Work::Owned(o) => {
            let t = o.tag();
            shard.put_object(db, key, t, Object::Hash(o), ttl, now_ms)?;
        }
        Work::Borrowed(_) => unreachable!("records are worked on as copies"),
    }
    Ok(Some(result))
}

/// Stores `pairs` (distinct fields) under `key`, replacing what was there, in the encoding a
/// hash built by HSET of the same pairs would have.
// The signature is the frame's (`types::import` hands every type its owned value).
#[allow(clippy::needless_pass_by_value)]
pub fn import(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
    ttl: Ttl,
    now_ms: u64,
) -> Result<(), StoreError> {
    shard.remove(db, key, now_ms);
    if pairs.is_empty() {
        return Ok(());
    }
    let ttl = match ttl {
        Ttl::Keep => Ttl::Clear,
        t => t,
    };
    match update_with_ttl(shard, db, key, now_ms, true, ttl, |h| {
        for (f, v) in &pairs {
            h.set(f, v)?;
        }
        Ok(())
    }) {
        Ok(_) => Ok(()),
        Err(_) => Err(StoreError::OutOfMemory),
    }
}

/// The pairs of a record payload.
pub fn export_inline(shapes: &ShapeTree, _tag: u8, bytes: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    record::iter(shapes, bytes)
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect()
}
