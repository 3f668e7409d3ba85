//! A shard: one heap, the keyspaces of every database for the keys that hash to it, and its
//! shape tree. The server runs shards behind one lock each; everything here is single-threaded.
//!
//! ```text
//!  Shard ── heap (the pages and blobs of this shard)
//!        ├─ dbs[0..databases]: keys: PageHash (created on first write), expires: count,
//!        │                     counts[Encoding]: keys per encoding, expire cursor, avg_ttl
//!        └─ shapes: ShapeTree (hash records)
//!
//!  PageHash entry value bytes:  [expire_at_ms: u64 LE]?  payload
//!                                └ present iff meta.has_ttl: a key without a TTL pays nothing
//! ```
//! This file holds the raw entries: lookup with lazy expiry, the one function that writes an
//! entry (`put_raw`), the one that takes one out (`take_raw`), scans, random keys and active
//! expiry. Those raw functions are private to the crate: the public API is typed (`strings.rs`,
//! `edit.rs`, `keyops.rs`, `view.rs`), and only values built by this crate reach `put_raw`.
//! Every change to a key (`put_raw`, `take_raw`, `update`, the INCR upsert) first calls
//! `preserve`, which hands the key's pre-image to a running snapshot (`snapshot.rs`), and every
//! written entry takes its epoch bit from `new_meta`.
//!
//! Expiry is lazy on every access (a key whose time has passed is missing and is deleted) and
//! active: `active_expire` walks the keyspace with the SCAN cursor, checking only entries whose
//! meta has the TTL bit, bounded by the entries it may look at per call (the server calls it from
//! its cron with a CPU budget, as Redis's `activeExpireCycle` does). The cursor survives between
//! calls, so every key is visited once per pass however the table splits and merges.
//!
//! Ownership: an entry with tag `BOXED` owns its object, a `HASH_RECORD` entry one hold on its
//! shape. `put_raw` takes over what the new payload owns and releases what the overwritten one
//! owned (unless it is the same handle); `take_raw` hands ownership to its caller.
//!
//! Invariants, for every database `d` (checked by `validate`):
//! - `expires[d] == #{entries of d whose meta has the TTL bit}`;
//! - `counts[d][e] == #{entries of d in encoding e}`;
//! - for every shape `s`: `shapes.holds(s) == #{record entries of any d whose shape is s}`.

use crate::access::{Access, AccessPolicy};
use crate::defrag::DefragWalk;
use crate::encoding::{ENCODING_SLOTS, Encoding, tag};
use crate::error::StoreError;
use crate::evict::Hand;
use crate::limits::Limits;
use crate::object::{self, HANDLE_BYTES, Handle, Object};
use crate::types::{zset::ZSetObj, zset_index};
use heap::{Heap, HeapConfig};
use maps::{Meta, PageHash, ValueRef};
use shape::ShapeTree;

/// A live entry as read from its page.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EntryRef<'a> {
    pub tag: u8,
    pub expire_at_ms: Option<u64>,
    pub payload: &'a [u8],
}

impl EntryRef<'_> {
    fn expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms.is_some_and(|at| at <= now_ms)
    }

    /// The entry's encoding.
    pub(crate) fn encoding(&self) -> Encoding {
        if self.tag == tag::BOXED {
            // SAFETY: `EntryRef`s are made by `split` from a map's entry that is live, or that
            // `take_raw` just took out and whose object it has not released; the shard borrow
            // the bytes come from excludes mutable references to the object meanwhile.
            unsafe { object::object_ref(&object::handle_of(self.payload)) }.encoding()
        } else {
            Encoding::of_inline(self.tag)
        }
    }
}

/// An entry taken out of the keyspace (`take_raw`): its owner until stored again or released.
#[derive(Debug)]
#[must_use = "an entry taken out owns its payload: store it back or release it"]
pub(crate) struct Taken {
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

/// A key's value as the typed operations see it (`Shard::with_slot`).
#[derive(Debug)]
pub enum Slot<'a> {
    /// No such key (or its TTL passed).
    Missing,
    /// A string or an inline collection encoding: the payload bytes.
    Inline {
        tag: u8,
        expire_at_ms: Option<u64>,
        bytes: &'a [u8],
        shapes: &'a mut ShapeTree,
    },
    /// A boxed collection.
    Boxed {
        expire_at_ms: Option<u64>,
        object: &'a mut Object,
        heap: &'a mut Heap,
        shapes: &'a mut ShapeTree,
    },
}

pub(crate) fn split_value(value: ValueRef<'_>) -> EntryRef<'_> {
    if value.meta.has_ttl() {
        let (at, payload) = value.bytes.split_at(8);
        EntryRef {
            tag: value.meta.tag(),
            expire_at_ms: Some(u64::from_le_bytes(at.try_into().expect("8-byte TTL"))),
            payload,
        }
    } else {
        EntryRef {
            tag: value.meta.tag(),
            expire_at_ms: None,
            payload: value.bytes,
        }
    }
}

#[derive(Debug)]
pub(crate) struct Db {
    pub keys: Option<PageHash>,
    pub expires: usize,
    pub expire_cursor: u64,
    /// Running estimate of the average remaining TTL, in ms (INFO keyspace `avg_ttl`).
    pub avg_ttl_ms: u64,
    /// Keys per encoding (INFO's encoding statistics).
    pub counts: [u64; ENCODING_SLOTS],
}

impl Default for Db {
    fn default() -> Db {
        Db {
            keys: None,
            expires: 0,
            expire_cursor: 0,
            avg_ttl_ms: 0,
            counts: [0; ENCODING_SLOTS],
        }
    }
}

/// Shard construction parameters.
#[derive(Clone, Debug)]
pub struct ShardConfig {
    pub databases: usize,
    pub heap: HeapConfig,
    pub map: maps::Config,
    /// The encoding thresholds (`Shard::set_limits` changes them later).
    pub limits: Limits,
}

impl Default for ShardConfig {
    fn default() -> ShardConfig {
        ShardConfig {
            databases: 16,
            heap: HeapConfig::default(),
            map: maps::Config::default(),
            limits: Limits::default(),
        }
    }
}

/// The member map of a collection, for prefetching lookups in it (`Shard::members`): which
/// encoding it belongs to stays the store's.
#[derive(Clone, Copy, Debug)]
pub enum Members<'a> {
    /// A set's or hash's member map.
    Map(&'a PageHash),
    /// A sorted set's member index.
    ZSet(&'a ZSetObj),
}

impl Members<'_> {
    /// The hash `prefetch` takes for `member`.
    #[inline]
    pub fn hash(&self, member: &[u8]) -> u64 {
        match self {
            Members::Map(map) => map.hash_key(member),
            Members::ZSet(_) => u64::from(zset_index::fingerprint(member)),
        }
    }

    /// Stage `stage` (0, 1, 2) of the lookup of the member hashed to `hash` (see
    /// `maps::PageHash::prefetch`): loads cache lines, changes nothing. A sorted set's lookup
    /// has one stage, its index slot (the leaf it names is read by the command).
    #[inline]
    pub fn prefetch(&self, hash: u64, stage: u8) {
        match self {
            Members::Map(map) => map.prefetch(hash, stage),
            Members::ZSet(z) if stage == 0 => z.prefetch(hash as u32),
            Members::ZSet(_) => {}
        }
    }
}

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
    pub(crate) heap: Heap,
    pub(crate) dbs: Vec<Db>,
    pub(crate) shapes: ShapeTree,
    map_config: maps::Config,
    /// The encoding thresholds every edit reads.
    pub(crate) limits: Limits,
    /// The value bytes of the entry being written (TTL prefix + payload).
    pub(crate) value_buf: Vec<u8>,
    /// The payload of the string being written.
    pub(crate) string_buf: Vec<u8>,
    pub(crate) expired_keys: u64,
    /// How accesses set the entries' access bits (`access.rs`).
    pub(crate) access: Access,
    /// Where eviction's and aging's walk of the keyspace is (`evict.rs`).
    pub(crate) hand: Hand,
    /// Where the active defragmenter's walk is (`defrag.rs`).
    pub(crate) defrag: DefragWalk,
    /// Keys deleted because their TTL passed, (database, name), oldest first, until the server
    /// takes them (`take_expired`) to write each to the append-only file as a DEL and publish its
    /// `expired` keyspace event. Always kept: the server takes it after every command and every
    /// expiry or eviction step, so it holds what one of those expired, no more.
    pub(crate) expired_log: Vec<(usize, Vec<u8>)>,
    /// The epoch bit of entries that are saved or newer than the running snapshot; with none
    /// running, every entry's (`snapshot.rs`).
    pub(crate) fresh: bool,
    /// The running snapshot, if any.
    pub(crate) snapshot: Option<Box<crate::snapshot::Snapshot>>,
    /// Test hook: the number of `put_raw` calls that succeed before one fails (then it is
    /// cleared), to check that every operation leaves the keyspace whole when a write fails.
    #[cfg(test)]
    pub(crate) puts_before_failure: Option<u32>,
}

// SAFETY: a shard owns its heap and every map whose pages and blobs live in that heap, and every
// boxed object its entries' handles own; the raw pointers in them point only into this shard's
// own heap or its own boxes, and the shard is moved or shared (behind a mutex) only as a whole,
// so no pointer ever outlives or escapes the memory it refers to. The heap itself is `Send` (one
// owner at a time), and whoever holds the shard is that owner.
unsafe impl Send for Shard {}

impl Shard {
    pub fn new(config: &ShardConfig) -> Result<Shard, StoreError> {
        Ok(Shard {
            heap: Heap::with_config(config.heap.clone())?,
            dbs: (0..config.databases).map(|_| Db::default()).collect(),
            shapes: ShapeTree::default(),
            map_config: config.map,
            limits: config.limits,
            value_buf: Vec::with_capacity(256),
            string_buf: Vec::with_capacity(256),
            expired_keys: 0,
            access: Access::default(),
            hand: Hand::default(),
            defrag: DefragWalk::default(),
            expired_log: Vec::new(),
            fresh: false,
            snapshot: None,
            #[cfg(test)]
            puts_before_failure: None,
        })
    }

    /// The encoding thresholds edits follow from now on (CONFIG SET of Redis's
    /// `*-max-listpack-*` & co.); stored values convert at their next write, as in Redis.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    pub fn heap(&self) -> &Heap {
        &self.heap
    }

    /// Bytes the shard's heap has handed out (what `maxmemory` counts of the shard).
    pub fn heap_bytes(&self) -> u64 {
        self.heap.allocated_bytes()
    }

    /// The shape tree of the shard's hash records (statistics).
    pub fn shapes(&self) -> &ShapeTree {
        &self.shapes
    }

    /// Gives the shard heap's freed-but-resident memory back to the OS now (MEMORY PURGE).
    pub fn purge(&mut self) -> usize {
        self.heap.purge()
    }

    /// Gives memory freed and not reused for a while back to the OS (the heap's decay, called
    /// about every 100 ms with a monotonic clock in ms); the bytes released.
    pub fn decay(&mut self, now_ms: u64) -> usize {
        self.heap.decay(now_ms)
    }

    /// Merges and repacks the keyspace pages that deletes left sparse (`maps`' compaction), for
    /// up to about `budget` work units (a bucket visited, merged or moved: at most a page
    /// copied each); false when no database needed it. Freed pages go back to the heap at once.
    pub fn compact(&mut self, budget: usize) -> bool {
        /// Units per `compact_step` call.
        const STEP_UNITS: usize = 16;
        let (mut spent, mut worked) = (0, false);
        for d in &mut self.dbs {
            let Some(keys) = d.keys.as_mut() else {
                continue;
            };
            while spent < budget && keys.sparse() {
                spent += keys.compact_step(&mut self.heap, STEP_UNITS).units().max(1);
                worked = true;
            }
        }
        worked
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

    /// Keys per encoding over every database, indexed by `Encoding::slot`.
    pub fn encoding_counts(&self) -> [u64; ENCODING_SLOTS] {
        let mut total = [0u64; ENCODING_SLOTS];
        for d in &self.dbs {
            for (t, n) in total.iter_mut().zip(d.counts) {
                *t += n;
            }
        }
        total
    }

    /// Keys deleted because their TTL passed, lazily or actively.
    pub fn expired_keys(&self) -> u64 {
        self.expired_keys
    }

    /// Bytes the keyspace structures of `db` use (pages and directory, out-of-line blobs).
    pub fn memory_bytes(&self, db: usize) -> usize {
        self.dbs[db].keys.as_ref().map_or(0, PageHash::memory_bytes)
    }

    /// The shape of `db`'s keyspace map (pages, directory depth, buckets, fill), `None` before
    /// its first write (DEBUG HTSTATS).
    pub fn keyspace_shape(&self, db: usize) -> Option<maps::Shape> {
        self.dbs[db].keys.as_ref().map(PageHash::shape)
    }

    /// Calls `f` with the live entry of `key`, deleting it instead if its TTL has passed; the
    /// access counts for eviction (`access.rs`).
    #[inline]
    pub(crate) fn with_entry<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(EntryRef<'_>) -> R,
    ) -> Option<R> {
        let (r, meta) = self.peek_entry_meta(db, key, now_ms, f)?;
        self.touch(db, key, meta);
        Some(r)
    }

    /// `with_entry` for a look that is not a use (TYPE, TTL, OBJECT, EXISTS: Redis's
    /// LOOKUP_NOTOUCH): the access bits stay as they are.
    #[inline]
    pub(crate) fn peek_entry<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(EntryRef<'_>) -> R,
    ) -> Option<R> {
        self.peek_entry_meta(db, key, now_ms, f).map(|(r, _)| r)
    }

    #[inline]
    fn peek_entry_meta<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(EntryRef<'_>) -> R,
    ) -> Option<(R, Meta)> {
        let keys = self.dbs[db].keys.as_ref()?;
        let value = keys.get(&self.heap, key)?;
        let meta = value.meta;
        let entry = split_value(value);
        if !entry.expired(now_ms) {
            return Some((f(entry), meta));
        }
        self.delete_expired(db, key);
        None
    }

    /// Records a use of the live entry `key`, whose meta is `meta` (`access.rs`): a second
    /// lookup, only when its access bits change.
    #[inline]
    pub(crate) fn touch(&mut self, db: usize, key: &[u8], meta: Meta) {
        if let Some(meta) = self.access.touched(meta)
            && let Some(keys) = self.dbs[db].keys.as_mut()
        {
            keys.set_meta(&self.heap, key, meta);
        }
    }

    /// Calls `f` with the value of `key` (see `Slot`), deleting the key first if its TTL has
    /// passed; the access counts for eviction (`access.rs`).
    #[inline]
    pub(crate) fn with_slot<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(Slot<'_>) -> R,
    ) -> R {
        let (r, meta) = self.peek_slot_meta(db, key, now_ms, f);
        if let Some(meta) = meta {
            self.touch(db, key, meta);
        }
        r
    }

    /// `with_slot` for a look that is not a use (OBJECT ENCODING, MEMORY USAGE).
    #[inline]
    pub(crate) fn peek_slot<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(Slot<'_>) -> R,
    ) -> R {
        self.peek_slot_meta(db, key, now_ms, f).0
    }

    /// `f`'s result, and the meta of the live entry `f` saw (`None`: missing).
    #[inline]
    fn peek_slot_meta<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(Slot<'_>) -> R,
    ) -> (R, Option<Meta>) {
        let Some(keys) = self.dbs[db].keys.as_ref() else {
            return (f(Slot::Missing), None);
        };
        let Some(value) = keys.get(&self.heap, key) else {
            return (f(Slot::Missing), None);
        };
        let meta = value.meta;
        let entry = split_value(value);
        if entry.expired(now_ms) {
            self.delete_expired(db, key);
            return (f(Slot::Missing), None);
        }
        if entry.tag != tag::BOXED {
            let r = f(Slot::Inline {
                tag: entry.tag,
                expire_at_ms: entry.expire_at_ms,
                bytes: entry.payload,
                shapes: &mut self.shapes,
            });
            return (r, Some(meta));
        }
        let (expire_at_ms, handle) = (entry.expire_at_ms, object::handle_of(entry.payload));
        // SAFETY: the handle is the payload of a live boxed entry, and `&mut self` excludes every
        // other reference to its object for the duration of `f`, which cannot reach the map.
        let object = unsafe { object::object_mut(&handle) };
        let r = f(Slot::Boxed {
            expire_at_ms,
            object,
            heap: &mut self.heap,
            shapes: &mut self.shapes,
        });
        (r, Some(meta))
    }

    pub(crate) fn delete_expired(&mut self, db: usize, key: &[u8]) {
        if let Some(taken) = self.take_raw(db, key) {
            self.note_expired(db, key);
            self.release(taken);
        }
    }

    /// Counts a key deleted because its TTL passed, and logs it (`take_expired`).
    pub(crate) fn note_expired(&mut self, db: usize, key: &[u8]) {
        self.expired_keys += 1;
        self.expired_log.push((db, key.to_vec()));
    }

    /// Whether keys were deleted by expiry since `take_expired` was last called.
    #[inline]
    pub fn has_expired(&self) -> bool {
        !self.expired_log.is_empty()
    }

    /// The keys deleted by expiry since the last call, oldest first, as (database, name).
    pub fn take_expired(&mut self) -> Vec<(usize, Vec<u8>)> {
        std::mem::take(&mut self.expired_log)
    }

    /// The keyspace of `db`, created on first write.
    pub(crate) fn keys_mut(&mut self, db: usize) -> Result<&mut PageHash, StoreError> {
        let d = &mut self.dbs[db];
        if d.keys.is_none() {
            d.keys = Some(PageHash::with_config(&mut self.heap, &self.map_config)?);
        }
        Ok(d.keys.as_mut().expect("created above"))
    }

    /// Runs `f` on the payload of the live entry at `key` whose meta tag is `t`, where it is
    /// stored, with one lookup: the in-place fast paths (a raw string's bytes, a packed list's
    /// push or pop). `None`, `f` not called, while a snapshot is under way (the entry would
    /// have to be preserved first) or when the key is missing, expired or of another tag; `f`
    /// declines with `None` too. When `f` returns `Some`, the access is counted: as a write
    /// when `write` (what `put_raw` would count), else as a touch.
    pub(crate) fn edit_live_in_place<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        (t, write): (u8, bool),
        f: impl FnOnce(&mut [u8]) -> Option<R>,
    ) -> Option<R> {
        if self.snapshot.is_some() {
            return None;
        }
        let Shard {
            dbs, heap, access, ..
        } = self;
        let keys = dbs[db].keys.as_mut()?;
        keys.edit_in_place(heap, key, |meta, value| {
            let prefix = if meta.has_ttl() { 8 } else { 0 };
            let live = !meta.has_ttl()
                || u64::from_le_bytes(value[..8].try_into().expect("8-byte TTL")) > now_ms;
            if meta.tag() != t || !live {
                return None;
            }
            let out = f(&mut value[prefix..])?;
            if write {
                *meta = meta.with_level(access.written(Some(meta.level())));
            } else if let Some(touched) = access.touched(*meta) {
                *meta = touched;
            }
            Some(out)
        })
        .flatten()
    }

    /// Stores `payload` under `key` with meta tag `t` (encoding `encoding`) and `expire_at`,
    /// replacing whatever was there; the entry takes over what the payload owns (a handle, a
    /// record's shape hold), and what the overwritten entry owned is released unless it is the
    /// same handle. On `Err` nothing changed (the caller still owns the payload).
    pub(crate) fn put_raw(
        &mut self,
        db: usize,
        key: &[u8],
        t: u8,
        encoding: Encoding,
        payload: &[u8],
        expire_at: Option<u64>,
    ) -> Result<(), StoreError> {
        #[cfg(test)]
        if let Some(n) = self.puts_before_failure {
            self.puts_before_failure = n.checked_sub(1);
            if n == 0 {
                return Err(StoreError::OutOfMemory);
            }
        }
        self.preserve(db, key);
        self.keys_mut(db)?;
        self.value_buf.clear();
        if let Some(at) = expire_at {
            self.value_buf.extend_from_slice(&at.to_le_bytes());
            self.value_buf.extend_from_slice(payload);
        }
        let old_level = match self.access.policy {
            AccessPolicy::Lru => None,
            AccessPolicy::Lfu { .. } => self.dbs[db]
                .keys
                .as_ref()
                .and_then(|k| k.meta(&self.heap, key))
                .map(Meta::level),
        };
        let level = self.access.written(old_level);
        let meta = Meta::new(t, expire_at.is_some(), level).with_epoch(self.fresh);
        let d = &mut self.dbs[db];
        let keys = d.keys.as_mut().expect("created above");
        // What the overwritten entry owned, released after the write.
        let mut overwritten: Option<(Encoding, u8, Handle)> = None;
        // The entry's value: the payload itself, or behind its TTL in the scratch buffer.
        let value = if expire_at.is_some() {
            &self.value_buf[..]
        } else {
            payload
        };
        let old = keys.replace_with_meta_then(&mut self.heap, key, value, meta, |old| {
            let old = split_value(old);
            let mut owned = [0u8; HANDLE_BYTES];
            let n = old.payload.len().min(HANDLE_BYTES);
            owned[..n].copy_from_slice(&old.payload[..n]);
            overwritten = Some((old.encoding(), old.tag, owned));
        })?;
        match (old.is_some_and(Meta::has_ttl), expire_at.is_some()) {
            (false, true) => d.expires += 1,
            (true, false) => d.expires -= 1,
            _ => {}
        }
        d.counts[encoding.slot()] += 1;
        if let Some((old_encoding, old_tag, owned)) = overwritten {
            d.counts[old_encoding.slot()] -= 1;
            let same_handle = t == tag::BOXED && payload.get(..HANDLE_BYTES) == Some(&owned[..]);
            if !same_handle {
                release_payload(&mut self.heap, &mut self.shapes, old_tag, &owned);
            }
        }
        trim_scratch(&mut self.value_buf);
        Ok(())
    }

    /// Boxes `object` and stores it under `key`; on `Err` the object is destroyed and the key
    /// keeps its old value.
    pub(crate) fn put_object(
        &mut self,
        db: usize,
        key: &[u8],
        object: Object,
        expire_at: Option<u64>,
    ) -> Result<(), StoreError> {
        let encoding = object.encoding();
        let handle = object::into_handle(object);
        let stored = self.put_raw(db, key, tag::BOXED, encoding, &handle, expire_at);
        if stored.is_err() {
            // SAFETY: the put failed, so no entry holds the handle; it is reclaimed once.
            unsafe { object::from_handle(&handle) }.destroy(&mut self.heap);
        }
        stored
    }

    /// The expiry a write with `ttl` gives `key`.
    pub(crate) fn expire_for(
        &mut self,
        db: usize,
        key: &[u8],
        ttl: Ttl,
        now_ms: u64,
    ) -> Option<u64> {
        match ttl {
            Ttl::Clear => None,
            Ttl::At(at) => Some(at),
            Ttl::Keep => self
                .with_entry(db, key, now_ms, |e| e.expire_at_ms)
                .flatten(),
        }
    }

    /// Removes `key`'s entry, expired or not, and hands over what it owns.
    pub(crate) fn take_raw(&mut self, db: usize, key: &[u8]) -> Option<Taken> {
        self.preserve(db, key);
        let d = &mut self.dbs[db];
        let (bytes, meta) = d.keys.as_mut()?.take(&mut self.heap, key)?;
        let entry = split_value(ValueRef {
            meta,
            bytes: &bytes,
        });
        // The object of a boxed entry is still alive: the caller owns it from here.
        let encoding = entry.encoding();
        d.counts[encoding.slot()] -= 1;
        if meta.has_ttl() {
            d.expires -= 1;
        }
        Some(Taken {
            tag: entry.tag,
            expire_at_ms: entry.expire_at_ms,
            payload: entry.payload.to_vec(),
        })
    }

    /// Frees what a taken entry owns.
    #[allow(clippy::needless_pass_by_value)] // by value: the caller gives up what it owned
    pub(crate) fn release(&mut self, taken: Taken) {
        release_payload(&mut self.heap, &mut self.shapes, taken.tag, &taken.payload);
    }

    /// Deletes `key`; true if it existed and had not expired.
    pub fn remove(&mut self, db: usize, key: &[u8], now_ms: u64) -> bool {
        let Some(taken) = self.take_raw(db, key) else {
            return false;
        };
        let live = taken.expire_at_ms.is_none_or(|at| at > now_ms);
        if !live {
            self.note_expired(db, key);
        }
        self.release(taken);
        live
    }

    /// Deletes whatever is stored under `key`, its TTL unchecked (Redis's `dbDelete`, which a
    /// command calls on a key it has not looked up: an expired key is deleted as any other,
    /// not expired); true if something was stored.
    pub fn delete_stored(&mut self, db: usize, key: &[u8]) -> bool {
        let Some(taken) = self.take_raw(db, key) else {
            return false;
        };
        self.release(taken);
        true
    }

    /// Whether `key` exists (and has not expired).
    pub fn contains(&mut self, db: usize, key: &[u8], now_ms: u64) -> bool {
        self.peek_entry(db, key, now_ms, |_| ()).is_some()
    }

    /// Removes every key of `db`, giving its pages back to the heap.
    pub fn flush(&mut self, db: usize) {
        self.drain(db);
        let d = &mut self.dbs[db];
        if let Some(keys) = d.keys.take() {
            destroy_entries(keys, &mut self.heap, &mut self.shapes);
        }
        self.dbs[db] = Db::default();
    }

    /// Exchanges the whole keyspaces of `a` and `b` (SWAPDB); cannot fail.
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        self.drain(a);
        self.drain(b);
        self.dbs.swap(a, b);
    }

    /// Stage `stage` (0, 1, 2) of a lookup of `key` in `db`, done ahead of the command that
    /// will look it up (see `maps::PageHash::prefetch`): loads cache lines, changes nothing.
    #[inline]
    pub fn prefetch(&self, db: usize, key: &[u8], stage: u8) {
        if let Some(keys) = self.dbs.get(db).and_then(|d| d.keys.as_ref()) {
            keys.prefetch(keys.hash_key(key), stage);
        }
    }

    /// The structure that finds the members of the collection at `key`, when it has one (sets
    /// and hashes in the pages encoding, sorted-set indexes): for prefetching a member's lookup
    /// ahead of the command. Expired or not, it is only read.
    pub fn members(&self, db: usize, key: &[u8]) -> Option<Members<'_>> {
        match self.boxed_object(db, key)? {
            Object::Set(set) => set.members_map().map(Members::Map),
            Object::Hash(hash) => hash.members_map().map(Members::Map),
            Object::ZSet(zset) => Some(Members::ZSet(zset)),
            Object::List(_) => None,
        }
    }

    /// The PageHash that holds the members of the set or hash at `key`, when its encoding has
    /// one (DEBUG HTSTATS-KEY, tests of which encodings have one).
    pub fn members_map(&self, db: usize, key: &[u8]) -> Option<&PageHash> {
        match self.boxed_object(db, key)? {
            Object::Set(set) => set.members_map(),
            Object::Hash(hash) => hash.members_map(),
            Object::ZSet(_) | Object::List(_) => None,
        }
    }

    /// The object at `key` when its value is boxed.
    fn boxed_object(&self, db: usize, key: &[u8]) -> Option<&Object> {
        let entry = split_value(self.dbs.get(db)?.keys.as_ref()?.get(&self.heap, key)?);
        if entry.tag != tag::BOXED {
            return None;
        }
        // SAFETY: a boxed entry's payload is the handle of the live object it owns; `&self` keeps
        // the entry, and so the object, alive and unchanged for the returned borrow.
        Some(unsafe { object::object_ref(&object::handle_of(entry.payload)) })
    }

    /// Checks the keyspace maps, the objects, and the counts and holds of the module doc.
    pub fn validate(&self) -> Result<(), String> {
        let mut holds = std::collections::HashMap::<shape::ShapeId, u32>::new();
        for (i, d) in self.dbs.iter().enumerate() {
            let Some(keys) = d.keys.as_ref() else {
                continue;
            };
            keys.validate(&self.heap)?;
            let (mut with_ttl, mut counts) = (0, [0u64; ENCODING_SLOTS]);
            for (_, v) in keys.iter(&self.heap) {
                let entry = split_value(v);
                with_ttl += usize::from(entry.expire_at_ms.is_some());
                counts[entry.encoding().slot()] += 1;
                match entry.tag {
                    tag::BOXED => {
                        // SAFETY: a live boxed entry read under `&self`.
                        let object =
                            unsafe { object::object_ref(&object::handle_of(entry.payload)) };
                        object.validate(&self.heap)?;
                    }
                    tag::HASH_RECORD => {
                        *holds
                            .entry(shape::record::shape(entry.payload))
                            .or_default() += 1;
                    }
                    tag::SET_INTSET | tag::SET_SMALL => {
                        crate::types::set::validate_inline(entry.tag, entry.payload)?;
                    }
                    tag::ZSET_PACKED => crate::types::zset::validate_packed(entry.payload)?,
                    tag::LIST_PACKED => crate::types::list_packed::validate(entry.payload)?,
                    _ => {}
                }
            }
            if counts != d.counts {
                return Err(format!(
                    "db {i}: keys per encoding {counts:?}, counts say {:?}",
                    d.counts
                ));
            }
            if with_ttl != d.expires {
                return Err(format!(
                    "db {i}: {with_ttl} keys with a TTL, count says {}",
                    d.expires
                ));
            }
        }
        self.validate_snapshot()?;
        self.shapes
            .check_holds(|s| holds.get(&s).copied().unwrap_or(0))
    }

    /// The meta of an entry written now: tag `t`, the TTL bit, the epoch bit of entries newer
    /// than any running snapshot, and the access level of a new key (`access.rs`).
    pub(crate) fn new_meta(&mut self, t: u8, has_ttl: bool) -> Meta {
        let level = self.access.written(None);
        Meta::new(t, has_ttl, level).with_epoch(self.fresh)
    }
}

/// Scratch buffers keep up to this much between writes; a bigger one (a big value went through)
/// is given back, so a 512 MB SET does not leave 512 MB behind.
const SCRATCH_KEEP_BYTES: usize = 64 << 10;

/// Gives a scratch buffer's memory back when a big value made it grow.
pub(crate) fn trim_scratch(buf: &mut Vec<u8>) {
    if buf.capacity() > SCRATCH_KEEP_BYTES {
        *buf = Vec::with_capacity(256);
    }
}

/// Frees what the payload of a removed entry owns: a boxed object, or a record's shape hold.
pub(crate) fn release_payload(heap: &mut Heap, shapes: &mut ShapeTree, t: u8, payload: &[u8]) {
    if t == tag::BOXED {
        // SAFETY: callers pass the payload of an entry that was removed from its map or
        // overwritten (or taken out and handed back), so the handle's ownership returns here
        // exactly once.
        unsafe { object::from_handle(&object::handle_of(payload)) }.destroy(heap);
    } else if t == tag::HASH_RECORD {
        shape::record::release(shapes, payload);
    }
}

/// Releases what every entry of `keys` owns, then the map itself.
fn destroy_entries(keys: PageHash, heap: &mut Heap, shapes: &mut ShapeTree) {
    let owned: Vec<(u8, Handle)> = keys
        .iter(heap)
        .map(|(_, v)| split_value(v))
        .filter(|e| e.tag == tag::BOXED || e.tag == tag::HASH_RECORD)
        .map(|e| {
            let mut held = [0u8; HANDLE_BYTES];
            held[..4].copy_from_slice(&e.payload[..4]);
            if e.tag == tag::BOXED {
                held = object::handle_of(e.payload);
            }
            (e.tag, held)
        })
        .collect();
    for (t, payload) in owned {
        release_payload(heap, shapes, t, &payload);
    }
    keys.destroy(heap);
}

impl Drop for Shard {
    fn drop(&mut self) {
        for d in &mut self.dbs {
            if let Some(keys) = d.keys.take() {
                destroy_entries(keys, &mut self.heap, &mut self.shapes);
            }
        }
    }
}
