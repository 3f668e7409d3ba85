//! Hash values: five encodings chosen by content and size, converting automatically.
//!
//! ```text
//!  encoding    OBJECT ENCODING  holds                                     chosen while
//!  HashRecord  listpack         inline: shape id + values (`shape`)       fields follow a shape:
//!                                                                         no integer field names,
//!                                                                         values ≤ 64 B, ≤ 64
//!                                                                         fields, ≤ 512 B record
//!  HashSmall   listpack         boxed `maps::SmallMap`                    ≤ 8 pairs of ≤ 64 B
//!  HashFlat    listpack or      boxed `maps::FlatMap`                     strings ≤ 256 B, the
//!              hashtable (*)                                              buffer ≤ 32 KiB
//!  HashInts    listpack or      boxed `IntHash` (hash_ints.rs)            every field and value
//!              hashtable (*)                                              a canonical i64, > 8
//!  HashPages   as flat (*)      boxed `maps::PageHash`                    anything larger
//! ```
//! Conversions (each rebuilds the whole hash, so each is amortised by the growth that caused it):
//! record → small/ints/flat when a pair breaks a record's bounds (an integer field name, a long
//! value, the shape tree refuses the transition, the record outgrows 512 bytes); small → ints
//! (all integers) or flat past 8 pairs or 64-byte strings; flat → ints (all integers) or pages
//! when its buffer would pass 32 KiB or a string is longer than `FLAT_BYTES_MAX`; ints →
//! flat/pages when a non-integer arrives; pages → flat when HDEL leaves ≤ 4 pairs. A new hash
//! starts as a record, or small when its first field looks like an integer (integer field names
//! are data, not a shape: `mediabucket:<n> <id>` would otherwise spend the shape tree). A rebuild
//! streams the old pairs into the new encoding; only the small sources (records, small maps and
//! a pages hash shrunk to ≤ 4 pairs, whose pages the new encoding cannot read while it allocates
//! in the same heap) are copied out first.
//!
//! (*) OBJECT ENCODING answers as Redis 7.0 would: "listpack" while the hash has never held more
//! pairs than hash-max-listpack-entries nor a field or value longer than hash-max-listpack-value
//! (the shard's `Limits`: 512 and 64 by default), "hashtable" once it has, and never back (Redis
//! does not convert a hashtable back). Records and small maps hold only what is within those
//! bounds (a write that would pass them converts first); flat, ints and pages hashes keep a
//! sticky `hashtable` bit (512 pairs of 64-byte strings need ~70 KB, more
//! than a flat buffer, so even a pages hash may still be a "listpack"). The bit is lost when
//! RENAME or COPY rebuilds a hash in another shard (the logical view carries no encoding), where
//! Redis keeps the object's encoding.
//!
//! Flat bounds: 256 B per field or value keeps the length varints ≤ 2 bytes and ≥ ~60 of the
//! longest pairs in one 32 KiB buffer, while covering the values the listpack bound (64 B) turns
//! away for Redis; a longer string goes to pages, which keep long values out of line anyway.
//!
//! Shape holds: a stored record holds its shape once, and so does a copy being edited
//! (`edit.rs`); `record::set` and `remove` move the copy's hold as its shape changes.
//!
//! Field order: records and small maps keep insertion order (Redis's listpack order); ints and
//! pages iterate in table order, as Redis's dict does.

#[path = "hash_ints.rs"]
pub mod ints;

use crate::edit::{Builder, Collection, Edit, Work, sealed::Internal};
use crate::encoding::{Encoding, Kind, tag};
use crate::error::StoreError;
use crate::limits::Limits;
use crate::object::Object;
use crate::shard::Slot;
use heap::Heap;
use ints::{IntHash, int_pair};
use maps::flat::{FlatInsert, FlatMap};
use maps::{PageHash, SmallInsert, SmallMap};
use shape::{ShapeTree, Str, TooComplex, canonical_i64, record};

/// Most pairs a small (SmallMap) hash holds.
pub const SMALL_PAIRS_MAX: usize = 8;
/// Longest field or value a record or small hash holds (Redis's default hash-max-listpack-value;
/// a lower limit holds them to less).
pub const VALUE_BYTES_MAX: usize = 64;
/// Largest record, in bytes (it is rewritten whole on every change).
pub const RECORD_BYTES_MAX: usize = 512;
/// A pages hash that HDEL shrinks to this many pairs becomes flat (hysteresis: it grew past
/// 32 KiB or held a long string).
pub const SHRINK_PAIRS: usize = 4;
/// Longest field or value a flat hash holds (see the module doc for why 256).
pub const FLAT_BYTES_MAX: usize = 256;

/// The hash type (`Shard::read::<Hash>`, `Shard::update::<Hash>`).
#[derive(Debug)]
pub enum Hash {}

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

fn fits_small(field: &[u8], value: &[u8]) -> bool {
    field.len() <= VALUE_BYTES_MAX && value.len() <= VALUE_BYTES_MAX
}

fn fits_flat(field: &[u8], value: &[u8]) -> bool {
    field.len() <= FLAT_BYTES_MAX && value.len() <= FLAT_BYTES_MAX
}

/// A pair as the encodings' bounds see it: (field length, value length, both integers).
fn measure(field: Str<'_>, value: Str<'_>) -> (usize, usize, bool) {
    let is_pair = field.as_int().is_some_and(|k| k != i64::MIN) && value.as_int().is_some();
    (field.len(), value.len(), is_pair)
}

/// Builds the boxed encoding for the distinct pairs `pairs()` yields (called once per pass over
/// them), in order. `hashtable`: the hash has passed the listpack bounds (the caller judges the
/// write being made, as Redis judges only the pairs a command writes).
fn build<'p, I>(
    heap: &mut Heap,
    pairs: impl Fn() -> I,
    hashtable: bool,
) -> Result<HashObj, StoreError>
where
    I: Iterator<Item = (Str<'p>, Str<'p>)>,
{
    let (mut count, mut longest, mut all_ints, mut bytes) = (0usize, 0usize, true, 0usize);
    for (f, v) in pairs() {
        let (fl, vl, ints) = measure(f, v);
        count += 1;
        longest = longest.max(fl).max(vl);
        all_ints &= ints;
        bytes += fl + vl + 5;
    }
    if !hashtable && count <= SMALL_PAIRS_MAX && longest <= VALUE_BYTES_MAX {
        return build_small(heap, pairs());
    }
    // Integer pairs go to the int table whatever their count: ~8 B per pair where a flat map
    // spends the digits plus ~6 B (the `mediabucket` workload: 8.6 B per field against 20).
    if all_ints {
        let mut t = IntHash::with_capacity(count);
        for (f, v) in pairs() {
            t.insert(f.as_int().expect("integer"), v.as_int().expect("integer"));
        }
        return Ok(HashObj::Ints(Box::new(t), hashtable));
    }
    // Each pair needs its bytes, two length bytes and >= 3 of slot: a cheap bound first.
    if longest <= FLAT_BYTES_MAX && bytes <= maps::flat::BYTES_MAX {
        let mut map = FlatMap::new_map();
        let fits = pairs()
            .all(|(f, v)| f.with_bytes(|f| v.with_bytes(|v| map.insert(f, v) != FlatInsert::Full)));
        if fits {
            return Ok(HashObj::Flat { map, hashtable });
        }
    }
    let mut p = PageHash::with_config(heap, &maps::Config::default())?;
    for (f, v) in pairs() {
        if let Err(e) = f.with_bytes(|f| v.with_bytes(|v| p.insert(heap, f, v))) {
            p.destroy(heap);
            return Err(e.into());
        }
    }
    Ok(HashObj::Pages(Box::new(p), hashtable))
}

fn build_small<'p>(
    heap: &mut Heap,
    pairs: impl Iterator<Item = (Str<'p>, Str<'p>)>,
) -> Result<HashObj, StoreError> {
    let mut m = SmallMap::new(heap)?;
    for (f, v) in pairs {
        let done = f.with_bytes(|f| v.with_bytes(|v| m.insert(heap, f, v)));
        if !matches!(done, Ok(SmallInsert::Inserted | SmallInsert::Replaced)) {
            m.destroy(heap);
            return Err(StoreError::OutOfMemory);
        }
    }
    Ok(HashObj::Small(m))
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

    pub fn encoding(&self) -> Encoding {
        match self {
            HashObj::Small(_) => Encoding::HashSmall,
            HashObj::Pages(..) => Encoding::HashPages,
            HashObj::Ints(..) => Encoding::HashInts,
            HashObj::Flat { .. } => Encoding::HashFlat,
        }
    }

    /// Whether the hash has passed Redis's listpack bounds (OBJECT ENCODING "hashtable").
    fn is_hashtable(&self) -> bool {
        match self {
            HashObj::Small(_) => false,
            HashObj::Flat { hashtable, .. }
            | HashObj::Pages(_, hashtable)
            | HashObj::Ints(_, hashtable) => *hashtable,
        }
    }

    pub fn encoding_name(&self) -> &'static str {
        if self.is_hashtable() {
            "hashtable"
        } else {
            "listpack"
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

    /// The PageHash of a pages hash (for prefetching a field's lookup).
    pub fn members_map(&self) -> Option<&PageHash> {
        match self {
            HashObj::Pages(p, _) => Some(p),
            _ => None,
        }
    }

    /// Checks the encoding's invariants and bounds (tests and `Shard::validate`).
    pub fn validate(&self, heap: &Heap) -> Result<(), String> {
        if self.is_empty() {
            return Err("empty hash stored".into());
        }
        match self {
            HashObj::Small(m) => m.validate(),
            HashObj::Pages(p, _) => p.validate(heap),
            HashObj::Ints(t, _) => t.validate(),
            HashObj::Flat { map, .. } => map.validate(),
        }
    }

    fn get<'a>(&'a self, heap: &'a Heap, field: &[u8]) -> Option<Str<'a>> {
        match self {
            HashObj::Small(m) => m.get(field).map(|v| Str::Bytes(v.bytes)),
            HashObj::Pages(p, _) => p.get(heap, field).map(|v| Str::Bytes(v.bytes)),
            HashObj::Flat { map, .. } => map.get(field).map(Str::Bytes),
            HashObj::Ints(t, _) => {
                let k = canonical_i64(field).filter(|&k| k != i64::MIN)?;
                t.get(k).map(Str::Int)
            }
        }
    }

    fn iter<'a>(&'a self, heap: &'a Heap) -> Box<dyn Iterator<Item = (Str<'a>, Str<'a>)> + 'a> {
        match self {
            HashObj::Small(m) => {
                Box::new(m.iter().map(|(k, v)| (Str::Bytes(k), Str::Bytes(v.bytes))))
            }
            HashObj::Pages(p, _) => Box::new(
                p.iter(heap)
                    .map(|(k, v)| (Str::Bytes(k), Str::Bytes(v.bytes))),
            ),
            HashObj::Ints(t, _) => Box::new(t.iter().map(|(k, v)| (Str::Int(k), Str::Int(v)))),
            HashObj::Flat { map, .. } => {
                Box::new(map.iter().map(|(k, v)| (Str::Bytes(k), Str::Bytes(v))))
            }
        }
    }
}

/// A hash being read, in whichever encoding it is.
#[derive(Debug)]
pub struct HashView<'a>(Inner<'a>);

#[derive(Debug)]
enum Inner<'a> {
    Record {
        tree: &'a mut ShapeTree,
        bytes: &'a [u8],
    },
    Obj {
        obj: &'a HashObj,
        heap: &'a Heap,
    },
}

impl<'a> HashView<'a> {
    /// The view of a stored object, read through shared borrows (`entries.rs`).
    pub(crate) fn of_obj(obj: &'a HashObj, heap: &'a Heap) -> HashView<'a> {
        HashView(Inner::Obj { obj, heap })
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Inner::Record { tree, bytes } => record::len(tree, bytes),
            Inner::Obj { obj, .. } => obj.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `field`.
    pub fn get(&mut self, field: &[u8]) -> Option<Str<'_>> {
        match &mut self.0 {
            Inner::Record { tree, bytes } => record::get(tree, bytes, field),
            Inner::Obj { obj, heap } => obj.get(heap, field),
        }
    }

    /// Every (field, value) in the encoding's order: records and small maps in insertion order,
    /// the others in table order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (Str<'_>, Str<'_>)> + '_> {
        match &self.0 {
            Inner::Record { tree, bytes } => {
                Box::new(record::iter(tree, bytes).map(|(k, v)| (Str::Bytes(k), v)))
            }
            Inner::Obj { obj, heap } => obj.iter(heap),
        }
    }

    /// Every pair, copied out.
    pub fn pairs(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()
    }

    /// Whether HSCAN returns the hash whole at cursor 0 (records, small and flat maps: at most
    /// 32 KiB, as Redis does for its listpacks).
    pub fn scans_whole(&self) -> bool {
        matches!(
            self.0,
            Inner::Record { .. }
                | Inner::Obj {
                    obj: HashObj::Small(_) | HashObj::Flat { .. },
                    ..
                }
        )
    }

    /// A random pair chosen by `r` (uniform for the compact encodings; for the others as their
    /// table samples).
    pub fn sample(&self, r: u64) -> Option<(Str<'_>, Str<'_>)> {
        let len = self.len();
        if len == 0 {
            return None;
        }
        match &self.0 {
            Inner::Obj {
                obj: HashObj::Pages(p, _),
                heap,
            } => p
                .sample(heap, r)
                .map(|(k, v)| (Str::Bytes(k), Str::Bytes(v.bytes))),
            Inner::Obj {
                obj: HashObj::Ints(t, _),
                ..
            } => t.sample(r).map(|(k, v)| (Str::Int(k), Str::Int(v))),
            Inner::Obj {
                obj: HashObj::Flat { map, .. },
                ..
            } => map.sample(r).map(|(k, v)| (Str::Bytes(k), Str::Bytes(v))),
            _ => self.iter().nth((r % len as u64) as usize),
        }
    }

    /// One HSCAN step: calls `f` with some pairs and returns the next cursor (0 when done).
    /// Compact encodings return everything at once with cursor 0.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(Str<'_>, Str<'_>)) -> u64 {
        match &self.0 {
            Inner::Obj {
                obj: HashObj::Pages(p, _),
                heap,
            } => {
                let (mut cursor, mut seen) = (cursor, 0);
                // One bucket per step, bounded as Redis bounds its dictScan calls.
                for _ in 0..count.max(1) * 10 {
                    cursor = p.scan(heap, cursor, |k, v| {
                        seen += 1;
                        f(Str::Bytes(k), Str::Bytes(v.bytes));
                    });
                    if cursor == 0 || seen >= count {
                        break;
                    }
                }
                cursor
            }
            Inner::Obj {
                obj: HashObj::Ints(t, _),
                ..
            } => t.scan(cursor, count, |k, v| f(Str::Int(k), Str::Int(v))),
            _ => {
                self.iter().for_each(|(k, v)| f(k, v));
                0
            }
        }
    }
}

impl<'b> IntoIterator for &'b HashView<'_> {
    type Item = (Str<'b>, Str<'b>);
    type IntoIter = Box<dyn Iterator<Item = (Str<'b>, Str<'b>)> + 'b>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl Internal for Hash {
    type Obj = HashObj;

    fn object_mut(o: &mut Object) -> Option<&mut HashObj> {
        match o {
            Object::Hash(h) => Some(h),
            _ => None,
        }
    }

    fn wrap(o: HashObj) -> Object {
        Object::Hash(o)
    }

    fn is_inline(t: u8) -> bool {
        t == tag::HASH_RECORD
    }

    fn new_work(_heap: &mut Heap, _limits: &Limits) -> Result<Work<'static, HashObj>, StoreError> {
        Ok(Work::Inline(tag::HASH_RECORD, record::empty()))
    }

    fn inline_len(_t: u8, bytes: &[u8], shapes: &ShapeTree) -> usize {
        record::len(shapes, bytes)
    }

    fn obj_len(o: &HashObj) -> usize {
        o.len()
    }

    fn obj_encoding(o: &HashObj) -> Encoding {
        o.encoding()
    }

    fn obj_destroy(o: HashObj, heap: &mut Heap) {
        o.destroy(heap);
    }
}

impl Collection for Hash {
    const KIND: Kind = Kind::Hash;
    type View<'a> = HashView<'a>;

    fn view(slot: Slot<'_>) -> Option<HashView<'_>> {
        match slot {
            Slot::Inline {
                tag: tag::HASH_RECORD,
                bytes,
                shapes,
                ..
            } => Some(HashView(Inner::Record {
                tree: shapes,
                bytes,
            })),
            Slot::Boxed {
                object: Object::Hash(obj),
                heap,
                ..
            } => Some(HashView(Inner::Obj { obj, heap })),
            _ => None,
        }
    }
}

impl Edit<'_, Hash> {
    /// The hash as it is now.
    pub fn view(&mut self) -> HashView<'_> {
        HashView(match &self.work {
            Work::Inline(_, r) => Inner::Record {
                tree: self.shapes,
                bytes: r,
            },
            Work::Borrowed(o) => Inner::Obj {
                obj: o,
                heap: self.heap,
            },
            Work::Owned(o) => Inner::Obj {
                obj: o,
                heap: self.heap,
            },
        })
    }

    /// The value of `field`.
    pub fn get(&mut self, field: &[u8]) -> Option<Str<'_>> {
        match &self.work {
            Work::Inline(_, r) => record::get(self.shapes, r, field),
            Work::Borrowed(o) => o.get(self.heap, field),
            Work::Owned(o) => o.get(self.heap, field),
        }
    }

    pub fn contains(&mut self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Converts a record copy to the boxed encoding its pairs call for.
    /// `hashtable`: the write being made passed the listpack bounds.
    fn convert_record(&mut self, hashtable: bool) -> Result<(), StoreError> {
        let Work::Inline(_, r) = &self.work else {
            return Ok(());
        };
        // A record holds at most 64 short pairs: copied out, as the tree is borrowed meanwhile.
        let pairs: Vec<(&[u8], Str<'_>)> = record::iter(self.shapes, r).collect();
        let obj = build(
            self.heap,
            || pairs.iter().map(|&(k, v)| (Str::Bytes(k), v)),
            hashtable,
        )?;
        self.become_owned(obj);
        Ok(())
    }

    /// HSET of one pair: true when the field is new.
    pub fn set(&mut self, field: &[u8], value: &[u8]) -> Result<bool, StoreError> {
        self.changed = true;
        let limits = self.limits;
        if let Work::Inline(_, r) = &mut self.work {
            if canonical_i64(field).is_none()
                && fits_small(field, value)
                && limits.hash_pair_fits(field.len(), value.len())
            {
                // On `Err(TooComplex)` the record is unchanged: convert, then insert below.
                if let Ok(new) = record::set(self.shapes, r, field, value) {
                    // Past the entries bound the hash is Redis's hashtable from this write.
                    let past = record::len(self.shapes, r) > limits.hash_listpack_entries;
                    if past || r.len() > RECORD_BYTES_MAX {
                        self.convert_record(past)?;
                    }
                    return Ok(new);
                }
            }
            // The pair is judged against the bounds as it goes into the converted hash.
            self.convert_record(false)?;
        }
        let heap = &mut *self.heap;
        let obj = match &mut self.work {
            Work::Borrowed(o) => &mut **o,
            Work::Owned(o) => o,
            Work::Inline(..) => unreachable!("converted above"),
        };
        if let Some(new) = obj_set(obj, heap, field, value, &limits)? {
            return Ok(new);
        }
        // The pair does not fit the encoding: rebuild with it included.
        rebuild_with(obj, heap, field, value, &limits)
    }

    /// HDEL of one field: true when it was there.
    pub fn remove(&mut self, field: &[u8]) -> Result<bool, StoreError> {
        if let Work::Inline(_, r) = &mut self.work {
            match record::remove(self.shapes, r, field) {
                Ok(found) => {
                    self.changed |= found;
                    return Ok(found);
                }
                Err(TooComplex) => self.convert_record(false)?,
            }
        }
        let (obj, heap) = self.object().expect("converted above");
        let found = match obj {
            HashObj::Small(m) => m.remove(field),
            HashObj::Ints(t, _) => canonical_i64(field)
                .filter(|&k| k != i64::MIN)
                .is_some_and(|k| t.remove(k)),
            HashObj::Pages(p, _) => p.remove(heap, field),
            HashObj::Flat { map, .. } => map.remove(field),
        };
        if found {
            shrink(obj, heap)?;
        }
        self.changed |= found;
        Ok(found)
    }
}

/// A pages hash left with a few pairs in an 8 KiB page becomes flat (~100 B). OBJECT ENCODING
/// does not change (the sticky bit moves along).
fn shrink(obj: &mut HashObj, heap: &mut Heap) -> Result<(), StoreError> {
    let HashObj::Pages(p, hashtable) = obj else {
        return Ok(());
    };
    if p.len() > SHRINK_PAIRS || p.is_empty() {
        return Ok(());
    }
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = p
        .iter(heap)
        .map(|(k, v)| (k.to_vec(), v.bytes.to_vec()))
        .collect();
    if pairs.iter().all(|(f, v)| fits_flat(f, v)) {
        let pairs_of = || pairs.iter().map(|(f, v)| (Str::Bytes(f), Str::Bytes(v)));
        let rebuilt = build(heap, pairs_of, *hashtable)?;
        std::mem::replace(obj, rebuilt).destroy(heap);
    }
    Ok(())
}

/// Rebuilds `obj` with (`field`, `value`) set, for a pair its encoding cannot take.
fn rebuild_with(
    obj: &mut HashObj,
    heap: &mut Heap,
    field: &[u8],
    value: &[u8],
    limits: &Limits,
) -> Result<bool, StoreError> {
    let new = obj.get(heap, field).is_none();
    let hashtable = obj.is_hashtable()
        || !limits.hash_pair_fits(field.len(), value.len())
        || obj.len() + usize::from(new) > limits.hash_listpack_entries;
    let rebuilt = if let HashObj::Small(m) = obj {
        // At most eight pairs in the heap the new encoding allocates in: copied out first.
        let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = m
            .iter()
            .filter(|(k, _)| *k != field)
            .map(|(k, v)| (k.to_vec(), v.bytes.to_vec()))
            .collect();
        pairs.push((field.to_vec(), value.to_vec()));
        build(
            heap,
            || pairs.iter().map(|(f, v)| (Str::Bytes(f), Str::Bytes(v))),
            hashtable,
        )?
    } else {
        // Flat and ints hashes live outside the heap: their pairs stream into the new encoding.
        let placeholder = HashObj::Flat {
            map: FlatMap::new_map(),
            hashtable,
        };
        let source = std::mem::replace(obj, placeholder);
        let pairs = || {
            let old: Box<dyn Iterator<Item = (Str<'_>, Str<'_>)>> = match &source {
                HashObj::Flat { map, .. } => {
                    Box::new(map.iter().map(|(k, v)| (Str::Bytes(k), Str::Bytes(v))))
                }
                HashObj::Ints(t, _) => Box::new(t.iter().map(|(k, v)| (Str::Int(k), Str::Int(v)))),
                HashObj::Small(_) | HashObj::Pages(..) => unreachable!("handled apart"),
            };
            old.filter(|(k, _)| k.with_bytes(|k| k != field))
                .chain(std::iter::once((Str::Bytes(field), Str::Bytes(value))))
        };
        match build(heap, pairs, hashtable) {
            Ok(built) => {
                source.destroy(heap);
                built
            }
            Err(e) => {
                *obj = source;
                return Err(e);
            }
        }
    };
    std::mem::replace(obj, rebuilt).destroy(heap);
    Ok(new)
}

/// HSET of one pair into a boxed encoding: `Some(new)`, or `None` (nothing changed) when the pair
/// does not fit the encoding. A small map takes only what keeps the hash a listpack (it has no
/// sticky bit); the others set theirs when the pair passes `limits`.
fn obj_set(
    obj: &mut HashObj,
    heap: &mut Heap,
    field: &[u8],
    value: &[u8],
    limits: &Limits,
) -> Result<Option<bool>, StoreError> {
    let pair_fits = limits.hash_pair_fits(field.len(), value.len());
    let past = |len: usize| len > limits.hash_listpack_entries || !pair_fits;
    Ok(match obj {
        HashObj::Pages(p, hashtable) => {
            let new = !p.insert(heap, field, value)?;
            *hashtable |= past(p.len());
            Some(new)
        }
        HashObj::Small(_) if !pair_fits => None,
        HashObj::Small(m)
            if m.len() + usize::from(m.get(field).is_none()) > limits.hash_listpack_entries =>
        {
            None
        }
        HashObj::Small(m) => match m.insert(heap, field, value)? {
            SmallInsert::Inserted => Some(true),
            SmallInsert::Replaced => Some(false),
            SmallInsert::NeedsConversion => None,
        },
        HashObj::Ints(t, hashtable) => int_pair(field, value).map(|(k, v)| {
            let new = t.insert(k, v);
            *hashtable |= past(t.len());
            new
        }),
        HashObj::Flat { map, hashtable } if fits_flat(field, value) => {
            match map.insert(field, value) {
                FlatInsert::Full => None,
                done => {
                    *hashtable |= past(map.len());
                    Some(done == FlatInsert::Inserted)
                }
            }
        }
        HashObj::Flat { .. } => None,
    })
}

impl Builder<'_, Hash> {
    /// Adds a pair; false when the field was already there (its value is replaced).
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> Result<bool, StoreError> {
        self.edit(|h| h.set(field, value))
    }
}
