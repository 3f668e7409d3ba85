//! A shard: one heap, the keyspaces of every database for the keys that hash to it, and its
//! shape tree. The server runs shards behind one lock each; everything here is single-threaded.
//!
//! ```text
//!  Shard ── heap (all bytes of this shard)
//!        ├─ dbs[0..databases]: keys: PageHash (created on first write), expires: count, avg_ttl
//!        └─ shapes: ShapeTree (hash records)
//! ```
//!
//! Expiry is lazy on every access (`with_entry`, `remove`, `take`, … treat a key whose time has
//! passed as missing and delete it) and active: `active_expire` walks the keyspace with the SCAN
//! cursor, checking only entries whose meta has the TTL bit, and deletes what has expired, bounded
//! by the number of entries it may look at per call (the server calls it from its cron with a
//! CPU budget, as Redis's `activeExpireCycle` does). The cursor survives between calls, so every
//! key is visited once per pass however the table splits and merges. A per-db count of keys with a
//! TTL lets the cycle skip databases with none.
//!
//! Invariant: `expires[db] == number of entries in dbs[db] whose meta has the TTL bit`.

use crate::object::{self, HANDLE_BYTES, Object, Portable};
use crate::value::{Kind, tag};
use heap::{Heap, HeapConfig};
use maps::{MapError, Meta, PageHash, ValueRef};
use shape::ShapeTree;

/// A value as read from the keyspace.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    pub tag: u8,
    pub expire_at_ms: Option<u64>,
    pub payload: &'a [u8],
}

impl Entry<'_> {
    pub fn kind(&self) -> Kind {
        Kind::of_tag(self.tag)
    }

    fn expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms.is_some_and(|at| at <= now_ms)
    }
}

/// An entry taken out of the keyspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedEntry {
    pub tag: u8,
    pub expire_at_ms: Option<u64>,
    pub payload: Vec<u8>,
}

/// What to do with a key's TTL when its value is replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ttl {
    /// Drop any TTL (plain SET).
    Clear,
    /// Keep the TTL the key had (KEEPTTL, APPEND, INCR…).
    Keep,
    /// Expire at this Unix time in milliseconds.
    At(u64),
}

impl Ttl {
    /// The TTL an entry read with `expire_at_ms` keeps when it is rewritten.
    pub fn of(expire_at_ms: Option<u64>) -> Ttl {
        expire_at_ms.map_or(Ttl::Clear, Ttl::At)
    }
}

/// A key's value as a collection command sees it (`Shard::with_slot`).
#[derive(Debug)]
pub enum Slot<'a> {
    /// No such key (or its TTL passed).
    Missing,
    /// A string or an inline collection encoding: the payload bytes, to be rewritten whole with
    /// `Shard::put` (pass `Ttl::of(expire_at_ms)` to keep the TTL).
    Inline {
        tag: u8,
        expire_at_ms: Option<u64>,
        bytes: &'a [u8],
        shapes: &'a mut ShapeTree,
    },
    /// A boxed collection, changed in place. A change of encoding that changes the tag is
    /// recorded with `Shard::set_tag`; an emptied collection is deleted with `Shard::remove`.
    Boxed {
        tag: u8,
        expire_at_ms: Option<u64>,
        object: &'a mut Object,
        heap: &'a mut Heap,
        shapes: &'a mut ShapeTree,
    },
}

/// A value lifted out of a shard (RENAME and COPY across shards, SORT, persistence).
#[derive(Clone, Debug, PartialEq)]
pub enum Exported {
    /// A string: its tag and payload, valid in any shard.
    String { tag: u8, payload: Vec<u8> },
    /// A collection in its shard-independent form.
    Coll(Portable),
}

fn split(value: ValueRef<'_>) -> Entry<'_> {
    if value.meta.has_ttl() {
        let (at, payload) = value.bytes.split_at(8);
        Entry {
            tag: value.meta.tag(),
            expire_at_ms: Some(u64::from_le_bytes(at.try_into().expect("8-byte TTL"))),
            payload,
        }
    } else {
        Entry {
            tag: value.meta.tag(),
            expire_at_ms: None,
            payload: value.bytes,
        }
    }
}

#[derive(Debug, Default)]
struct Db {
    keys: Option<PageHash>,
    expires: usize,
    expire_cursor: u64,
    /// Running estimate of the average remaining TTL, in ms (INFO keyspace `avg_ttl`).
    avg_ttl_ms: u64,
    /// Keys per value tag (INFO's encoding statistics).
    tags: [u64; 16],
}

/// Shard construction parameters.
#[derive(Clone, Debug)]
pub struct ShardConfig {
    pub databases: usize,
    pub heap: HeapConfig,
    pub map: maps::Config,
}

impl Default for ShardConfig {
    fn default() -> ShardConfig {
        ShardConfig {
            databases: 16,
            heap: HeapConfig::default(),
            map: maps::Config::default(),
        }
    }
}

/// Why a keyspace write failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreError {
    OutOfMemory,
}

impl From<MapError> for StoreError {
    fn from(_: MapError) -> StoreError {
        StoreError::OutOfMemory
    }
}

impl From<heap::HeapError> for StoreError {
    fn from(_: heap::HeapError) -> StoreError {
        StoreError::OutOfMemory
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OOM command not allowed when used memory > 'maxmemory'.")
    }
}

impl std::error::Error for StoreError {}

/// Counts from one active-expiry call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpireRound {
    pub sampled: usize,
    pub expired: usize,
    /// True when the pass over the database finished (the cursor wrapped).
    pub pass_done: bool,
}

/// One shard of the keyspace.
#[derive(Debug)]
pub struct Shard {
    heap: Heap,
    dbs: Vec<Db>,
    pub shapes: ShapeTree,
    map_config: maps::Config,
    /// The value bytes of the entry being written (TTL prefix + payload).
    value_buf: Vec<u8>,
    /// The payload of the string being written.
    string_buf: Vec<u8>,
    expired_keys: u64,
}

// SAFETY: a shard owns its heap and every map whose pages and blobs live in that heap; the maps'
// raw pointers point only into this shard's own heap, and the shard is moved or shared (behind a
// mutex) only as a whole, so no pointer ever outlives or escapes the memory it refers to. The heap
// itself is `Send` (one owner at a time), and whoever holds the shard is that owner.
unsafe impl Send for Shard {}

impl Shard {
    pub fn new(config: &ShardConfig) -> Result<Shard, StoreError> {
        Ok(Shard {
            heap: Heap::with_config(config.heap.clone())?,
            dbs: (0..config.databases).map(|_| Db::default()).collect(),
            shapes: ShapeTree::default(),
            map_config: config.map,
            value_buf: Vec::with_capacity(256),
            string_buf: Vec::with_capacity(256),
            expired_keys: 0,
        })
    }

    pub fn heap(&self) -> &Heap {
        &self.heap
    }

    /// The shard's heap, to build a boxed collection in (`put_object` then stores it).
    pub fn heap_mut(&mut self) -> &mut Heap {
        &mut self.heap
    }

    /// The heap and the shape tree at once (a hash record converting to a boxed encoding reads
    /// the tree while it builds in the heap).
    pub fn heap_and_shapes(&mut self) -> (&mut Heap, &mut ShapeTree) {
        (&mut self.heap, &mut self.shapes)
    }

    /// Gives the shard heap's freed-but-resident memory back to the OS now (MEMORY PURGE).
    pub fn purge(&mut self) {
        self.heap.purge();
    }

    pub fn databases(&self) -> usize {
        self.dbs.len()
    }

    /// Keys stored in `db`, counting ones whose TTL passed but that were not yet deleted (as
    /// Redis's DBSIZE does).
    pub fn len(&self, db: usize) -> usize {
        self.dbs[db].keys.as_ref().map_or(0, PageHash::len)
    }

    pub fn is_empty(&self, db: usize) -> bool {
        self.len(db) == 0
    }

    /// Keys of `db` with a TTL.
    pub fn expires(&self, db: usize) -> usize {
        self.dbs[db].expires
    }

    pub fn avg_ttl_ms(&self, db: usize) -> u64 {
        self.dbs[db].avg_ttl_ms
    }

    /// Keys per value tag over every database (INFO's encoding statistics).
    pub fn tag_counts(&self) -> [u64; 16] {
        let mut total = [0u64; 16];
        for d in &self.dbs {
            for (t, n) in total.iter_mut().zip(d.tags) {
                *t += n;
            }
        }
        total
    }

    /// Keys deleted because their TTL passed, lazily or actively.
    pub fn expired_keys(&self) -> u64 {
        self.expired_keys
    }

    /// Calls `f` with the live entry of `key`, deleting it instead if its TTL has passed.
    #[inline]
    pub fn with_entry<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(Entry<'_>) -> R,
    ) -> Option<R> {
        let keys = self.dbs[db].keys.as_ref()?;
        match keys.get(&self.heap, key) {
            None => return None,
            Some(value) => {
                let entry = split(value);
                if !entry.expired(now_ms) {
                    return Some(f(entry));
                }
            }
        }
        self.delete_expired(db, key);
        None
    }

    /// Whether `key` exists (and has not expired).
    pub fn contains(&mut self, db: usize, key: &[u8], now_ms: u64) -> bool {
        self.with_entry(db, key, now_ms, |_| ()).is_some()
    }

    /// The live entry of `key`, copied out.
    pub fn get_owned(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<OwnedEntry> {
        self.with_entry(db, key, now_ms, |e| OwnedEntry {
            tag: e.tag,
            expire_at_ms: e.expire_at_ms,
            payload: e.payload.to_vec(),
        })
    }

    fn delete_expired(&mut self, db: usize, key: &[u8]) {
        let d = &mut self.dbs[db];
        if let Some(keys) = d.keys.as_mut()
            && let Some((bytes, meta)) = keys.take(&mut self.heap, key)
        {
            d.expires -= 1;
            d.tags[usize::from(meta.tag())] -= 1;
            self.expired_keys += 1;
            let entry = split(ValueRef {
                meta,
                bytes: &bytes,
            });
            release_payload(&mut self.heap, &mut self.shapes, entry.tag, entry.payload);
        }
    }

    /// Stores `payload` under `key` with `tag`, replacing whatever was there.
    ///
    /// One lookup: the map's replace reports the meta of the entry it overwrote, which says
    /// whether the TTL count changes. Only `Ttl::Keep` reads the old entry first, for its TTL.
    pub fn put(
        &mut self,
        db: usize,
        key: &[u8],
        tag: u8,
        payload: &[u8],
        ttl: Ttl,
        now_ms: u64,
    ) -> Result<(), StoreError> {
        let expire_at = match ttl {
            Ttl::Clear => None,
            Ttl::At(at) => Some(at),
            Ttl::Keep => self
                .with_entry(db, key, now_ms, |e| e.expire_at_ms)
                .flatten(),
        };
        let d = &mut self.dbs[db];
        if d.keys.is_none() {
            d.keys = Some(PageHash::with_config(&mut self.heap, &self.map_config)?);
        }
        self.value_buf.clear();
        if let Some(at) = expire_at {
            self.value_buf.extend_from_slice(&at.to_le_bytes());
        }
        self.value_buf.extend_from_slice(payload);
        let meta = Meta::new(tag, expire_at.is_some(), 0);
        let keys = d.keys.as_mut().expect("created above");
        // What the overwritten entry owned: a boxed object, or a record's hold on its shape.
        let mut old_owned: Option<(u8, [u8; HANDLE_BYTES])> = None;
        let old =
            keys.replace_with_meta_then(&mut self.heap, key, &self.value_buf, meta, |old| {
                let old_tag = old.meta.tag();
                if object::is_boxed(old_tag) {
                    let handle = split(old).payload[..HANDLE_BYTES]
                        .try_into()
                        .expect("handle");
                    old_owned = Some((old_tag, handle));
                } else if old_tag == object::tag::HASH_RECORD {
                    // The shape id: the first 4 bytes of a record.
                    let mut id = [0u8; HANDLE_BYTES];
                    id[..4].copy_from_slice(&split(old).payload[..4]);
                    old_owned = Some((old_tag, id));
                }
            })?;
        match (old.is_some_and(Meta::has_ttl), expire_at.is_some()) {
            (false, true) => d.expires += 1,
            (true, false) => d.expires -= 1,
            _ => {}
        }
        if let Some(old) = old {
            d.tags[usize::from(old.tag())] -= 1;
        }
        d.tags[usize::from(tag)] += 1;
        if let Some((old_tag, owned)) = old_owned {
            if object::is_boxed(old_tag) {
                // A collection changed in place and stored back keeps its object.
                let same = object::is_boxed(tag) && payload.get(..HANDLE_BYTES) == Some(&owned[..]);
                if !same {
                    // SAFETY: the overwritten entry owned this handle and no longer exists.
                    unsafe { object::from_handle(&owned) }.destroy(&mut self.heap);
                }
            } else if tag != object::tag::HASH_RECORD {
                // A record rewritten as a record moved its hold itself (shape::record::set).
                shape::record::release(&mut self.shapes, &owned);
            }
        }
        Ok(())
    }

    /// Writes the value of `key` from its current one with a single lookup (INCR…): `f` sees the
    /// live entry (`None` if the key is missing or expired) and appends the new payload to `out`,
    /// returning its tag — or `None` to write nothing — and a result. An existing key keeps its
    /// TTL and LFU bits; a new one has no TTL. Only entries that own nothing (strings and inline
    /// collections other than records) are rewritten: for a boxed or record entry `f` is only
    /// asked for its result (it sees the tag and replies WRONGTYPE or reads it).
    pub fn upsert_with<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(Option<Entry<'_>>, &mut Vec<u8>) -> (Option<u8>, R),
    ) -> Result<R, StoreError> {
        if self.dbs[db].keys.is_none() {
            self.dbs[db].keys = Some(PageHash::with_config(&mut self.heap, &self.map_config)?);
        }
        let keys = self.dbs[db].keys.as_mut().expect("created above");
        let mut out = std::mem::take(&mut self.value_buf);
        let mut result = None;
        // (old tag if an entry was there, whether it had expired, new tag).
        let mut written: Option<(Option<u8>, bool, u8)> = None;
        let mut expired_unwritten = false;
        // What an expired owning entry that gets overwritten held, released afterwards.
        let mut released: Option<(u8, [u8; HANDLE_BYTES])> = None;
        let wrote = keys.upsert_with(&mut self.heap, key, &mut out, |old, out| {
            let stored = old.map(split);
            // An expired entry is missing to `f`; if `f` writes, the new value replaces it.
            let expired = stored.is_some_and(|e| e.expired(now_ms));
            let entry = stored.filter(|_| !expired);
            let owns = stored
                .is_some_and(|e| object::is_boxed(e.tag) || e.tag == object::tag::HASH_RECORD);
            if let Some(at) = entry.and_then(|e| e.expire_at_ms) {
                out.extend_from_slice(&at.to_le_bytes());
            }
            let (tag, r) = f(entry, out);
            result = Some(r);
            let Some(tag) = tag.filter(|_| !owns || expired) else {
                expired_unwritten = expired;
                return None;
            };
            if owns && let Some(e) = stored {
                let mut held = [0u8; HANDLE_BYTES];
                let n = e.payload.len().min(HANDLE_BYTES);
                held[..n].copy_from_slice(&e.payload[..n]);
                released = Some((e.tag, held));
            }
            debug_assert!(!object::is_boxed(tag) && tag != object::tag::HASH_RECORD);
            written = Some((stored.map(|e| e.tag), expired, tag));
            Some(match entry {
                Some(_) => old.expect("present").meta.with_tag(tag),
                None => Meta::new(tag, false, 0),
            })
        });
        self.value_buf = out;
        wrote?;
        if expired_unwritten {
            self.delete_expired(db, key);
        }
        if let Some((tag, held)) = released {
            release_payload(&mut self.heap, &mut self.shapes, tag, &held);
        }
        if let Some((old, expired, new)) = written {
            let d = &mut self.dbs[db];
            if let Some(old) = old {
                d.tags[usize::from(old)] -= 1;
            }
            d.tags[usize::from(new)] += 1;
            if expired {
                d.expires -= 1;
                self.expired_keys += 1;
            }
        }
        Ok(result.expect("f runs once"))
    }

    /// Stores a boxed collection under `key` (replacing whatever was there); the keyspace owns
    /// it from here on.
    pub fn put_object(
        &mut self,
        db: usize,
        key: &[u8],
        tag: u8,
        object: Object,
        ttl: Ttl,
        now_ms: u64,
    ) -> Result<(), StoreError> {
        debug_assert!(object::is_boxed(tag));
        let handle = object::into_handle(object);
        let result = self.put(db, key, tag, &handle, ttl, now_ms);
        if result.is_err() {
            // SAFETY: the put failed, so no entry holds the handle; it is reclaimed once.
            unsafe { object::from_handle(&handle) }.destroy(&mut self.heap);
        }
        result
    }

    /// Records a new tag for `key` whose boxed object changed encoding in place.
    pub fn set_tag(&mut self, db: usize, key: &[u8], tag: u8) {
        let heap = &self.heap;
        if let Some(keys) = self.dbs[db].keys.as_mut()
            && let Some(meta) = keys.meta(heap, key)
        {
            debug_assert_eq!(object::is_boxed(meta.tag()), object::is_boxed(tag));
            keys.set_meta(heap, key, meta.with_tag(tag));
            let tags = &mut self.dbs[db].tags;
            tags[usize::from(meta.tag())] -= 1;
            tags[usize::from(tag)] += 1;
        }
    }

    /// Stage `stage` (0, 1, 2) of a lookup of `key` in `db`, done ahead of the command that
    /// will look it up (see `maps::PageHash::prefetch`): loads cache lines, changes nothing.
    #[inline]
    pub fn prefetch(&self, db: usize, key: &[u8], stage: u8) {
        if let Some(keys) = self.dbs.get(db).and_then(|d| d.keys.as_ref()) {
            keys.prefetch(keys.hash_key(key), stage);
        }
    }

    /// The PageHash that holds the members of the collection at `key`, when it has one (sets
    /// and hashes in the pages encoding, sorted-set indexes): for prefetching a member's lookup
    /// ahead of the command (`PageHash::prefetch`). Expired or not, the map is only read.
    pub fn members_map(&self, db: usize, key: &[u8]) -> Option<&PageHash> {
        let entry = split(self.dbs.get(db)?.keys.as_ref()?.get(&self.heap, key)?);
        if !object::is_boxed(entry.tag) {
            return None;
        }
        // SAFETY: a boxed entry's payload is the handle of the live object it owns; `&self` keeps
        // the entry, and so the object, alive and unchanged for the returned borrow.
        let object = unsafe { object::object_ref(entry.payload) };
        match object {
            Object::Set(crate::types::set::SetObj::Pages(map))
            | Object::Hash(crate::types::hash::HashObj::Pages(map, _)) => Some(map),
            Object::ZSet(zset) => Some(zset.members_map()),
            _ => None,
        }
    }

    /// Calls `f` with the value of `key` as a collection command needs it (see `Slot`),
    /// deleting the key first if its TTL has passed.
    pub fn with_slot<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(Slot<'_>) -> R,
    ) -> R {
        let Some(keys) = self.dbs[db].keys.as_ref() else {
            return f(Slot::Missing);
        };
        let found = match keys.get(&self.heap, key) {
            None => return f(Slot::Missing),
            Some(value) => {
                let entry = split(value);
                if entry.expired(now_ms) {
                    None
                } else if object::is_boxed(entry.tag) {
                    let handle: [u8; HANDLE_BYTES] =
                        entry.payload[..HANDLE_BYTES].try_into().expect("handle");
                    Some((entry.tag, entry.expire_at_ms, handle))
                } else {
                    return f(Slot::Inline {
                        tag: entry.tag,
                        expire_at_ms: entry.expire_at_ms,
                        bytes: entry.payload,
                        shapes: &mut self.shapes,
                    });
                }
            }
        };
        let Some((tag, expire_at_ms, handle)) = found else {
            self.delete_expired(db, key);
            return f(Slot::Missing);
        };
        // SAFETY: the handle is the payload of a live entry with a boxed tag, and `&mut self`
        // excludes every other reference to its object for the duration of `f`.
        let object = unsafe { object::object_of(&handle) };
        f(Slot::Boxed {
            tag,
            expire_at_ms,
            object,
            heap: &mut self.heap,
            shapes: &mut self.shapes,
        })
    }

    /// The value of `key` lifted out in a shard-independent form (the key stays).
    pub fn export(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
    ) -> Option<(Exported, Option<u64>)> {
        self.with_slot(db, key, now_ms, |slot| match slot {
            Slot::Missing => None,
            Slot::Inline {
                tag,
                expire_at_ms,
                bytes,
                shapes,
            } => {
                let value = if crate::shard::is_string(tag) {
                    Exported::String {
                        tag,
                        payload: bytes.to_vec(),
                    }
                } else {
                    Exported::Coll(crate::types::export_inline(shapes, tag, bytes))
                };
                Some((value, expire_at_ms))
            }
            Slot::Boxed {
                expire_at_ms,
                object,
                heap,
                ..
            } => Some((
                Exported::Coll(crate::types::export_object(heap, object)),
                expire_at_ms,
            )),
        })
    }

    /// Stores an exported value under `key`, choosing the encoding this shard would.
    pub fn import(
        &mut self,
        db: usize,
        key: &[u8],
        value: Exported,
        ttl: Ttl,
        now_ms: u64,
    ) -> Result<(), StoreError> {
        match value {
            Exported::String { tag, payload } => self.put(db, key, tag, &payload, ttl, now_ms),
            Exported::Coll(portable) => crate::types::import(self, db, key, portable, ttl, now_ms),
        }
    }

    /// OBJECT ENCODING of `key`'s value.
    pub fn encoding(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<&'static str> {
        self.with_slot(db, key, now_ms, |slot| match slot {
            Slot::Missing => None,
            Slot::Inline { tag, .. } if is_string(tag) => Some(crate::value::encoding_name(tag)),
            Slot::Inline { tag, .. } => Some(object::encoding_name(tag)),
            Slot::Boxed { object, .. } => Some(object.encoding_name()),
        })
    }

    /// MEMORY USAGE of `key`: its entry in the page, out-of-line copies, and its object.
    pub fn memory_usage(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<usize> {
        self.with_slot(db, key, now_ms, |slot| {
            let (payload, ttl, object) = match slot {
                Slot::Missing => return None,
                Slot::Inline {
                    bytes,
                    expire_at_ms,
                    ..
                } => (bytes.len(), expire_at_ms.is_some(), 0),
                Slot::Boxed {
                    object,
                    expire_at_ms,
                    ..
                } => (HANDLE_BYTES, expire_at_ms.is_some(), object.memory_bytes()),
            };
            // Entry in its page: hint, meta, two length varints, key, TTL, payload; plus the
            // out-of-line copies when the pair does not fit a piece.
            let inline = 4 + key.len() + payload + if ttl { 8 } else { 0 };
            let entry = if inline > 60 {
                16 + Heap::<32>::usable_size(key.len() + 8) + Heap::<32>::usable_size(payload)
            } else {
                inline
            };
            Some(entry + object)
        })
    }

    /// Frees what the payload of an entry taken out with `take` owns (a boxed collection).
    #[allow(clippy::needless_pass_by_value)] // by value: the caller gives the handle up
    pub fn release(&mut self, entry: OwnedEntry) {
        release_payload(&mut self.heap, &mut self.shapes, entry.tag, &entry.payload);
    }

    /// Stores a string value, choosing its encoding (integer, embstr or raw).
    pub fn put_string(
        &mut self,
        db: usize,
        key: &[u8],
        value: &[u8],
        ttl: Ttl,
        now_ms: u64,
    ) -> Result<(), StoreError> {
        let mut payload = std::mem::take(&mut self.string_buf);
        payload.clear();
        let tag = crate::value::encode_string(value, &mut payload);
        let result = self.put(db, key, tag, &payload, ttl, now_ms);
        self.string_buf = payload;
        result
    }

    /// Deletes `key`; true if it existed and had not expired.
    pub fn remove(&mut self, db: usize, key: &[u8], now_ms: u64) -> bool {
        match self.take(db, key, now_ms) {
            Some(entry) => {
                self.release(entry);
                true
            }
            None => false,
        }
    }

    /// Deletes `key` and returns its entry, if it existed and had not expired.
    pub fn take(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<OwnedEntry> {
        let d = &mut self.dbs[db];
        let (bytes, meta) = d.keys.as_mut()?.take(&mut self.heap, key)?;
        d.tags[usize::from(meta.tag())] -= 1;
        let entry = split(ValueRef {
            meta,
            bytes: &bytes,
        });
        let owned = OwnedEntry {
            tag: entry.tag,
            expire_at_ms: entry.expire_at_ms,
            payload: entry.payload.to_vec(),
        };
        if owned.expire_at_ms.is_some() {
            d.expires -= 1;
        }
        if owned.expire_at_ms.is_some_and(|at| at <= now_ms) {
            self.expired_keys += 1;
            self.release(owned);
            return None;
        }
        Some(owned)
    }

    /// Sets or clears the TTL of a live key; false if the key does not exist.
    pub fn set_expire(
        &mut self,
        db: usize,
        key: &[u8],
        expire_at_ms: Option<u64>,
        now_ms: u64,
    ) -> Result<bool, StoreError> {
        let Some(entry) = self.get_owned(db, key, now_ms) else {
            return Ok(false);
        };
        let ttl = expire_at_ms.map_or(Ttl::Clear, Ttl::At);
        self.put(db, key, entry.tag, &entry.payload, ttl, now_ms)?;
        Ok(true)
    }

    /// Removes every key of `db`, giving its pages back to the heap.
    pub fn flush(&mut self, db: usize) {
        let d = &mut self.dbs[db];
        if let Some(keys) = d.keys.take() {
            destroy_objects(&keys, &mut self.heap, &mut self.shapes);
            keys.destroy(&mut self.heap);
        }
        d.expires = 0;
        d.expire_cursor = 0;
        d.avg_ttl_ms = 0;
        d.tags = [0; 16];
    }

    /// Moves the whole keyspace of `a` to `b` and back (SWAPDB).
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        self.dbs.swap(a, b);
    }

    /// One SCAN step over `db`: calls `f` with each live key of one bucket; returns the next
    /// cursor (0 when the pass is complete).
    pub fn scan(
        &self,
        db: usize,
        cursor: u64,
        now_ms: u64,
        mut f: impl FnMut(&[u8], Entry<'_>),
    ) -> u64 {
        let Some(keys) = self.dbs[db].keys.as_ref() else {
            return 0;
        };
        keys.scan(&self.heap, cursor, |key, value| {
            let entry = split(value);
            if !entry.expired(now_ms) {
                f(key, entry);
            }
        })
    }

    /// A SCAN step that also deletes the expired keys it walks past, as Redis's SCAN does
    /// (KEYS, `scan`, only skips them).
    pub fn scan_and_reclaim(
        &mut self,
        db: usize,
        cursor: u64,
        now_ms: u64,
        mut f: impl FnMut(&[u8], Entry<'_>),
    ) -> u64 {
        let Some(keys) = self.dbs[db].keys.as_ref() else {
            return 0;
        };
        let mut expired: Vec<Vec<u8>> = Vec::new();
        let next = keys.scan(&self.heap, cursor, |key, value| {
            let entry = split(value);
            if entry.expired(now_ms) {
                expired.push(key.to_vec());
            } else {
                f(key, entry);
            }
        });
        for key in expired {
            self.delete_expired(db, &key);
        }
        next
    }

    /// A random live key of `db` (RANDOMKEY), or `None` when empty. Expired keys met on the way
    /// are deleted; the number of attempts is bounded.
    pub fn random_key(
        &mut self,
        db: usize,
        now_ms: u64,
        mut random: impl FnMut() -> u64,
    ) -> Option<Vec<u8>> {
        for _ in 0..100 {
            let keys = self.dbs[db].keys.as_ref()?;
            let (key, expired) = {
                let (key, value) = keys.sample(&self.heap, random())?;
                (key.to_vec(), split(value).expired(now_ms))
            };
            if !expired {
                return Some(key);
            }
            self.delete_expired(db, &key);
        }
        None
    }

    /// Active expiry over `db`: looks at up to `budget` entries from the saved cursor and deletes
    /// those whose TTL has passed.
    pub fn active_expire(&mut self, db: usize, now_ms: u64, budget: usize) -> ExpireRound {
        let mut round = ExpireRound::default();
        let d = &self.dbs[db];
        let Some(keys) = d.keys.as_ref() else {
            return round;
        };
        if d.expires == 0 {
            return round;
        }
        let mut cursor = d.expire_cursor;
        let mut doomed: Vec<Vec<u8>> = Vec::new();
        let mut ttl_sum: u128 = 0;
        let mut ttl_count: u64 = 0;
        // Each step visits one bucket; a bucket holds a bounded number of entries, and both the
        // entries seen and the steps taken are capped.
        for _ in 0..budget.max(1) {
            cursor = keys.scan(&self.heap, cursor, |key, value| {
                if !value.meta.has_ttl() {
                    return;
                }
                round.sampled += 1;
                let entry = split(value);
                match entry.expire_at_ms {
                    Some(at) if at <= now_ms => doomed.push(key.to_vec()),
                    Some(at) => {
                        ttl_sum += u128::from(at - now_ms);
                        ttl_count += 1;
                    }
                    None => {}
                }
            });
            if cursor == 0 {
                round.pass_done = true;
                break;
            }
            if round.sampled >= budget {
                break;
            }
        }
        let d = &mut self.dbs[db];
        d.expire_cursor = cursor;
        if ttl_count > 0 {
            // Redis blends each sample into the running average with weight 2%.
            let sample = (ttl_sum / u128::from(ttl_count)) as u64;
            d.avg_ttl_ms = if d.avg_ttl_ms == 0 {
                sample
            } else {
                (d.avg_ttl_ms / 50) * 49 + sample / 50
            };
        }
        for key in doomed {
            self.delete_expired(db, &key);
            round.expired += 1;
        }
        round
    }

    /// Bytes the keyspace structures of `db` use (pages and directory, out-of-line blobs).
    pub fn memory_bytes(&self, db: usize) -> usize {
        self.dbs[db].keys.as_ref().map_or(0, PageHash::memory_bytes)
    }

    /// Checks the keyspace maps' invariants and the TTL counts (tests).
    pub fn validate(&self) -> Result<(), String> {
        for (i, d) in self.dbs.iter().enumerate() {
            let Some(keys) = d.keys.as_ref() else {
                continue;
            };
            keys.validate(&self.heap)?;
            let with_ttl = keys
                .iter(&self.heap)
                .filter(|(_, v)| v.meta.has_ttl())
                .count();
            let mut tags = [0u64; 16];
            for (_, v) in keys.iter(&self.heap) {
                tags[usize::from(v.meta.tag())] += 1;
            }
            if tags != d.tags {
                return Err(format!(
                    "db {i}: keys per tag {tags:?}, counts say {:?}",
                    d.tags
                ));
            }
            if with_ttl != d.expires {
                return Err(format!(
                    "db {i}: {with_ttl} keys with a TTL, count says {}",
                    d.expires
                ));
            }
        }
        Ok(())
    }
}

/// Frees what the payload of a removed entry owns: a boxed object, or a record's shape hold.
fn release_payload(heap: &mut Heap, shapes: &mut ShapeTree, tag: u8, payload: &[u8]) {
    if object::is_boxed(tag) {
        // SAFETY: callers pass the payload of an entry that was removed from its map (or taken
        // out and handed back), so the handle's ownership returns here exactly once.
        unsafe { object::from_handle(payload) }.destroy(heap);
    } else if tag == object::tag::HASH_RECORD {
        shape::record::release(shapes, payload);
    }
}

/// Releases what every entry of `keys` owns (the map itself is freed by the caller).
fn destroy_objects(keys: &PageHash, heap: &mut Heap, shapes: &mut ShapeTree) {
    let owned: Vec<(u8, Vec<u8>)> = keys
        .iter(heap)
        .filter(|(_, v)| object::is_boxed(v.meta.tag()) || v.meta.tag() == object::tag::HASH_RECORD)
        .map(|(_, v)| {
            let e = split(v);
            (
                e.tag,
                e.payload[..HANDLE_BYTES.min(e.payload.len())].to_vec(),
            )
        })
        .collect();
    for (tag, payload) in owned {
        release_payload(heap, shapes, tag, &payload);
    }
}

impl Drop for Shard {
    fn drop(&mut self) {
        for d in &mut self.dbs {
            if let Some(keys) = d.keys.take() {
                destroy_objects(&keys, &mut self.heap, &mut self.shapes);
                keys.destroy(&mut self.heap);
            }
        }
    }
}

/// Which tags are strings (for WRONGTYPE checks).
pub fn is_string(entry_tag: u8) -> bool {
    matches!(entry_tag, tag::STR_EMBSTR | tag::STR_RAW | tag::STR_INT)
}
