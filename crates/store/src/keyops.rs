//! Operations on whole keys: type, TTL, encoding and memory introspection, and the moves —
//! RENAME, MOVE and COPY within a shard (`Shard::rename`, `Shard::copy`) or between two
//! (`rename_between`, `copy_between`). A move either completes or leaves both keys as they
//! were: the destination is written first, and the source goes only once that succeeded.
//!
//! Within a shard a value moves as its entry: a boxed value's handle goes to the new entry and
//! the old entry is forgotten, not freed. A copy within a shard rebuilds a boxed value a bounded
//! batch of elements at a time, since its source pages and the copy share the heap; across shards
//! a value is rebuilt from its logical view (`view.rs`).

use crate::edit::{Collection, Draft, Edit};
use crate::encoding::{Encoding, Kind, tag};
use crate::error::StoreError;
use crate::object::{HANDLE_BYTES, Object};
use crate::shard::{Shard, Slot};
use crate::types::hash::Hash;
use crate::types::list::List;
use crate::types::list_view::ListView;
use crate::types::set::Set;
use crate::types::zset::ZSet;
use crate::value::{is_string, str_of};
use crate::view::rebuild;
use heap::Heap;

/// How a move or copy ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relocated {
    Done,
    /// The source key does not exist.
    NoSource,
    /// The destination exists and replacing it was not asked for.
    TargetExists,
}

/// Why a move or copy does not happen, in Redis's order of checks: no source, or a destination
/// that exists (`dst_live`, asked only then) and may not be replaced.
fn refused(src_live: bool, replace: bool, dst_live: impl FnOnce() -> bool) -> Option<Relocated> {
    if !src_live {
        Some(Relocated::NoSource)
    } else if !replace && dst_live() {
        Some(Relocated::TargetExists)
    } else {
        None
    }
}

/// OBJECT ENCODING's name (Redis 7.0's) of an inline payload with meta tag `t`; a boxed value
/// names its own (`Object::encoding_name`).
pub(crate) fn inline_encoding_name(t: u8) -> &'static str {
    match Encoding::of_inline(t) {
        Encoding::StrEmbstr => "embstr",
        Encoding::StrRaw => "raw",
        Encoding::StrInt => "int",
        Encoding::SetIntset => "intset",
        // Redis 7.0 has no listpack sets (they came in 7.2).
        Encoding::SetSmall => "hashtable",
        // Redis 7.0 has no listpack lists either: every list is a quicklist.
        Encoding::ListPacked => "quicklist",
        _ => "listpack",
    }
}

/// An entry's payload copied out, holding what a stored payload holds (a record's shape): what
/// a move or copy within a shard writes under the new key.
struct Copied {
    tag: u8,
    encoding: Encoding,
    expire_at_ms: Option<u64>,
    payload: Vec<u8>,
}

impl Shard {
    /// The type of `key`'s value (TYPE).
    pub fn kind(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<Kind> {
        self.peek_entry(db, key, now_ms, |e| e.encoding().kind())
    }

    /// The expiry of a live key: `None` when missing, `Some(None)` without a TTL.
    pub fn expire_at(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<Option<u64>> {
        self.peek_entry(db, key, now_ms, |e| e.expire_at_ms)
    }

    /// The encoding of `key`'s value.
    pub fn encoding(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<Encoding> {
        self.peek_entry(db, key, now_ms, |e| e.encoding())
    }

    /// OBJECT ENCODING of `key`'s value, with Redis 7.0's names.
    pub fn object_encoding(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<&'static str> {
        self.peek_slot(db, key, now_ms, |slot| match slot {
            Slot::Missing => None,
            Slot::Inline { tag: t, .. } => Some(inline_encoding_name(t)),
            Slot::Boxed { object, .. } => Some(object.encoding_name()),
        })
    }

    /// Whether `key` holds one of the integers 0..9999 that Redis shares (OBJECT REFCOUNT
    /// reports them with refcount INT_MAX); `None` when missing.
    pub fn is_shared_integer(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<bool> {
        self.peek_entry(db, key, now_ms, |e| {
            is_string(e.tag)
                && matches!(str_of(e.tag, e.payload), shape::Str::Int(i) if (0..10_000).contains(&i))
        })
    }

    /// MEMORY USAGE of `key`: its entry in the page, out-of-line copies, and its object.
    pub fn memory_usage(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<usize> {
        self.peek_slot(db, key, now_ms, |slot| {
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

    /// Sets or clears the TTL of a live key; `Ok(false)` when the key does not exist.
    pub fn set_expire(
        &mut self,
        db: usize,
        key: &[u8],
        expire_at_ms: Option<u64>,
        now_ms: u64,
    ) -> Result<bool, StoreError> {
        let Some(copied) = self.copy_entry(db, key, now_ms) else {
            return Ok(false);
        };
        // The same handle is written back, so the object stays; a record's copy holds its shape.
        self.write_copied(db, key, &copied, expire_at_ms)?;
        Ok(true)
    }

    /// The live entry of `key`, copied out with the holds a stored copy needs.
    fn copy_entry(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<Copied> {
        let copied = self.with_entry(db, key, now_ms, |e| Copied {
            tag: e.tag,
            encoding: e.encoding(),
            expire_at_ms: e.expire_at_ms,
            payload: e.payload.to_vec(),
        })?;
        if copied.tag == tag::HASH_RECORD {
            self.shapes.retain(shape::record::shape(&copied.payload));
        }
        Some(copied)
    }

    /// Writes a copied entry under `key`; on `Err` the copy's hold is dropped and nothing changed.
    fn write_copied(
        &mut self,
        db: usize,
        key: &[u8],
        c: &Copied,
        expire_at: Option<u64>,
    ) -> Result<(), StoreError> {
        let stored = self.put_raw(db, key, c.tag, c.encoding, &c.payload, expire_at);
        if stored.is_err() && c.tag == tag::HASH_RECORD {
            shape::record::release(&mut self.shapes, &c.payload);
        }
        stored
    }

    /// Moves `src` of `src_db` to `dst` of `dst_db` in this shard (RENAME, RENAMENX, MOVE),
    /// keeping its TTL; the destination is replaced only when `replace`. `src` and `dst` must
    /// differ (as a key or a database).
    pub fn rename(
        &mut self,
        src_db: usize,
        src: &[u8],
        dst_db: usize,
        dst: &[u8],
        replace: bool,
        now_ms: u64,
    ) -> Result<Relocated, StoreError> {
        debug_assert!(src != dst || src_db != dst_db);
        let src_live = self.contains(src_db, src, now_ms);
        if let Some(no) = refused(src_live, replace, || self.contains(dst_db, dst, now_ms)) {
            return Ok(no);
        }
        let copied = self.copy_entry(src_db, src, now_ms).expect("checked live");
        self.write_copied(dst_db, dst, &copied, copied.expire_at_ms)?;
        // The destination owns the value now: the source entry goes without freeing a boxed
        // value (its handle moved), while a record's source drops its own shape hold.
        let taken = self.take_raw(src_db, src).expect("still stored");
        if taken.tag != tag::BOXED {
            self.release(taken);
        }
        Ok(Relocated::Done)
    }

    /// Copies `src` of `src_db` to `dst` of `dst_db` in this shard (COPY), keeping its TTL; the
    /// destination is replaced only when `replace`. `src` and `dst` must differ (as a key or a
    /// database).
    pub fn copy(
        &mut self,
        src_db: usize,
        src: &[u8],
        dst_db: usize,
        dst: &[u8],
        replace: bool,
        now_ms: u64,
    ) -> Result<Relocated, StoreError> {
        debug_assert!(src != dst || src_db != dst_db);
        let kind = self.kind(src_db, src, now_ms);
        if let Some(no) = refused(kind.is_some(), replace, || {
            self.contains(dst_db, dst, now_ms)
        }) {
            return Ok(no);
        }
        let copied = self.copy_entry(src_db, src, now_ms).expect("checked live");
        if copied.tag != tag::BOXED {
            self.write_copied(dst_db, dst, &copied, copied.expire_at_ms)?;
            return Ok(Relocated::Done);
        }
        let expire_at = copied.expire_at_ms;
        match kind.expect("checked live") {
            Kind::List => {
                let copy = self.read::<List, _>(src_db, src, now_ms, |v| match v {
                    ListView::Chunks(l) => l.copy_out(),
                    ListView::Packed(_) => unreachable!("a boxed list is chunks"),
                })?;
                let list = copy.expect("checked live").into_list(&mut self.heap);
                self.put_object(dst_db, dst, Object::List(list), expire_at)?;
            }
            Kind::Hash => self
                .copy_hash(src_db, src, now_ms)?
                .finish(self, dst_db, dst, expire_at)?,
            Kind::Set => self
                .copy_set(src_db, src, now_ms)?
                .finish(self, dst_db, dst, expire_at)?,
            Kind::ZSet => self
                .copy_zset(src_db, src, now_ms)?
                .finish(self, dst_db, dst, expire_at)?,
            Kind::String => unreachable!("strings are inline"),
        }
        Ok(Relocated::Done)
    }

    /// A draft of the boxed `T` at `src`, copied a batch at a time: `read` fills the batch from a
    /// cursor and returns the next one (0 when done), `write` adds one element to the draft.
    fn copy_batches<T: Collection, I>(
        &mut self,
        db: usize,
        src: &[u8],
        now_ms: u64,
        mut draft: Draft<T>,
        read: impl for<'v> Fn(T::View<'v>, u64, &mut Vec<I>) -> u64,
        write: impl Fn(&mut Edit<'_, T>, &I) -> Result<(), StoreError>,
    ) -> Result<Draft<T>, StoreError> {
        let (mut batch, mut cursor) = (Vec::new(), 0);
        // Bounded: every step advances the source's cursor, which ends at 0.
        loop {
            batch.clear();
            let next = self
                .read::<T, _>(db, src, now_ms, |v| read(v, cursor, &mut batch))?
                .unwrap_or(0);
            let wrote = draft.edit(self, |e| batch.iter().try_for_each(|item| write(e, item)));
            if let Err(e) = wrote {
                draft.discard(self);
                return Err(e);
            }
            if next == 0 {
                return Ok(draft);
            }
            cursor = next;
        }
    }

    fn copy_hash(&mut self, db: usize, src: &[u8], now_ms: u64) -> Result<Draft<Hash>, StoreError> {
        let draft = Draft::new(self)?;
        self.copy_batches(
            db,
            src,
            now_ms,
            draft,
            |h, cursor, out: &mut Vec<(Vec<u8>, Vec<u8>)>| {
                h.scan(cursor, 64, |f, v| out.push((f.to_vec(), v.to_vec())))
            },
            |h, (f, v)| h.set(f, v).map(drop),
        )
    }

    fn copy_set(&mut self, db: usize, src: &[u8], now_ms: u64) -> Result<Draft<Set>, StoreError> {
        let draft = Draft::new(self)?;
        self.copy_batches(
            db,
            src,
            now_ms,
            draft,
            |s, cursor, out: &mut Vec<Vec<u8>>| s.scan_step(cursor, |m| out.push(m.to_vec())),
            |s, m| s.add(m).map(drop),
        )
    }

    fn copy_zset(&mut self, db: usize, src: &[u8], now_ms: u64) -> Result<Draft<ZSet>, StoreError> {
        let mut draft = Draft::<ZSet>::new(self)?;
        // A boxed source is an index; so is its copy, as in Redis (an index keeps -0 scores).
        // A closure: the method path is not general over the edit's lifetime.
        #[allow(clippy::redundant_closure_for_method_calls)]
        if let Err(e) = draft.edit(self, |z| z.force_index()) {
            draft.discard(self);
            return Err(e);
        }
        self.copy_batches(
            db,
            src,
            now_ms,
            draft,
            |z, cursor, out: &mut Vec<(Vec<u8>, f64)>| {
                z.scan(cursor, 64, |m, s| out.push((m.to_vec(), s)))
            },
            |z, (m, s)| z.insert(m, *s),
        )
    }
}

/// RENAME (and RENAMENX) between two shards: `src` of `src_db` in `from` becomes `dst` of
/// `dst_db` in `to`, rebuilt in `to`'s heap, keeping its TTL; the destination is replaced only
/// when `replace`. On `Err` both keys are as they were.
#[allow(clippy::too_many_arguments)]
pub fn rename_between(
    from: &mut Shard,
    to: &mut Shard,
    src_db: usize,
    src: &[u8],
    dst_db: usize,
    dst: &[u8],
    replace: bool,
    now_ms: u64,
) -> Result<Relocated, StoreError> {
    let copied = copy_between(from, to, src_db, src, dst_db, dst, replace, now_ms)?;
    if copied == Relocated::Done {
        from.remove(src_db, src, now_ms);
    }
    Ok(copied)
}

/// COPY between two shards: `dst` of `dst_db` in `to` becomes a copy of `src` of `src_db` in
/// `from`, with its TTL; the destination is replaced only when `replace`. On `Err` the
/// destination is as it was.
#[allow(clippy::too_many_arguments)]
pub fn copy_between(
    from: &mut Shard,
    to: &mut Shard,
    src_db: usize,
    src: &[u8],
    dst_db: usize,
    dst: &[u8],
    replace: bool,
    now_ms: u64,
) -> Result<Relocated, StoreError> {
    let src_live = from.contains(src_db, src, now_ms);
    if let Some(no) = refused(src_live, replace, || to.contains(dst_db, dst, now_ms)) {
        return Ok(no);
    }
    // A string's payload means the same in every shard: it moves as it is, so a raw string
    // that spells an integer (APPEND, SETRANGE) stays raw, as Redis keeps the object.
    let string = from
        .with_entry(src_db, src, now_ms, |e| {
            is_string(e.tag).then(|| (e.tag, e.payload.to_vec(), e.expire_at_ms))
        })
        .flatten();
    if let Some((t, payload, expire_at)) = string {
        to.put_raw(dst_db, dst, t, Encoding::of_inline(t), &payload, expire_at)?;
        return Ok(Relocated::Done);
    }
    from.view(src_db, src, now_ms, |view, expire_at| {
        rebuild(to, dst_db, dst, &view, expire_at)
    })
    .expect("checked live")?;
    Ok(Relocated::Done)
}
