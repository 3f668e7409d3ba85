//! The typed access every collection type shares: `Shard::read::<T>` for a view of a key's value,
//! `Shard::update::<T>` to change it, and `Shard::builder::<T>` to make a new one from a stream
//! of elements. Creating a key, copying an inline encoding out and storing it back, converting
//! between encodings, counting keys per encoding and deleting an emptied key happen here, once,
//! for every type; `types/*.rs` only say what their encodings are and how an edit changes them.
//!
//! ```text
//!  update::<T>(db, key, now, create, f)
//!    key missing ──create──▶ Work::Inline(empty) or Work::Owned(new object) ─┐
//!    inline T    ─────────▶ Work::Inline(copy of the payload)  ──────────────┼─▶ f(&mut Edit)
//!    boxed T     ─────────▶ Work::Borrowed(&mut object, in place) ─────┐     │   converts
//!    other type  ─────────▶ Err(WrongType)                             │     │   Inline → Owned
//!                                                                      ▼     ▼
//!                     empty: delete the key   changed: recount   empty: delete   changed: put
//! ```
//! Invariants: a stored collection is never empty; a boxed encoding never goes back inline (a
//! conversion of a borrowed object replaces it in place, so `Work::Borrowed` stays borrowed);
//! an inline copy holds what a stored payload would (a record's shape hold), so storing it moves
//! the hold into the keyspace and discarding it releases it. When `f` fails, an inline copy or a
//! new object is discarded and the key keeps its old value; a borrowed object keeps what `f` did
//! before the failure (as Redis keeps the members a multi-member write added), and is still
//! counted, or deleted if `f` emptied it.

use crate::encoding::{Encoding, Kind, tag};
use crate::error::StoreError;
use crate::limits::Limits;
use crate::object::Object;
use crate::shard::{Shard, Slot, release_payload};
use heap::Heap;
use shape::ShapeTree;
use std::fmt::Debug;

/// What an edit works on.
#[derive(Debug)]
pub enum Work<'a, O> {
    /// An inline encoding, as an owned copy of its payload: (meta tag, bytes).
    Inline(u8, Vec<u8>),
    /// The stored object, changed in place.
    Borrowed(&'a mut O),
    /// A new object: created, or converted from an inline copy; stored when the edit ends.
    Owned(O),
}

impl<O> Work<'_, O> {
    /// The same work without the borrow (never called on `Borrowed`).
    fn detach(self) -> Work<'static, O> {
        match self {
            Work::Inline(t, bytes) => Work::Inline(t, bytes),
            Work::Owned(o) => Work::Owned(o),
            Work::Borrowed(_) => unreachable!("a borrowed object is never detached"),
        }
    }
}

pub(crate) mod sealed {
    use super::{Debug, Encoding, Heap, Limits, Object, ShapeTree, StoreError, Work};

    /// What the shared machinery needs of a collection type; private to the crate, so only the
    /// store's own types implement `Collection`.
    pub trait Internal: Sized + 'static {
        type Obj: Debug;
        fn object_mut(o: &mut Object) -> Option<&mut Self::Obj>;
        fn wrap(o: Self::Obj) -> Object;
        fn is_inline(t: u8) -> bool;
        /// The value a created key starts from, under the shard's thresholds.
        fn new_work(
            heap: &mut Heap,
            limits: &Limits,
        ) -> Result<Work<'static, Self::Obj>, StoreError>;
        fn inline_len(t: u8, bytes: &[u8], shapes: &ShapeTree) -> usize;
        fn obj_len(o: &Self::Obj) -> usize;
        fn obj_encoding(o: &Self::Obj) -> Encoding;
        fn obj_destroy(o: Self::Obj, heap: &mut Heap);
    }
}

/// A collection type: `Hash`, `List`, `Set` or `ZSet`.
pub trait Collection: sealed::Internal {
    const KIND: Kind;
    /// A read-only view of a value of this type, in whichever encoding it is.
    type View<'a>;
    #[doc(hidden)]
    fn view(slot: Slot<'_>) -> Option<Self::View<'_>>;
}

/// A value of type `T` being changed (`Shard::update`) or built (`Builder`). The operations are
/// the types' own (`types/*.rs`); they convert between encodings as the value grows.
#[derive(Debug)]
pub struct Edit<'a, T: Collection> {
    pub(crate) work: Work<'a, T::Obj>,
    pub(crate) heap: &'a mut Heap,
    pub(crate) shapes: &'a mut ShapeTree,
    /// The shard's encoding thresholds.
    pub(crate) limits: Limits,
    /// Whether an inline copy changed (it is stored back only then).
    pub(crate) changed: bool,
}

impl<T: Collection> Edit<'_, T> {
    /// Elements in the value.
    pub fn len(&self) -> usize {
        match &self.work {
            Work::Inline(t, bytes) => T::inline_len(*t, bytes, self.shapes),
            Work::Borrowed(o) => T::obj_len(o),
            Work::Owned(o) => T::obj_len(o),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Replaces an inline copy by `object` (a conversion): the copy's holds go.
    pub(crate) fn become_owned(&mut self, object: T::Obj) {
        if let Work::Inline(t, bytes) = &self.work {
            release_payload(self.heap, self.shapes, *t, bytes);
        }
        self.work = Work::Owned(object);
        self.changed = true;
    }

    /// The object being changed (not an inline copy) and the heap it lives in.
    pub(crate) fn object(&mut self) -> Option<(&mut T::Obj, &mut Heap)> {
        match &mut self.work {
            Work::Borrowed(o) => Some((o, self.heap)),
            Work::Owned(o) => Some((o, self.heap)),
            Work::Inline(..) => None,
        }
    }
}

/// Takes the hold a copy of an inline payload needs (a record's shape).
fn hold_copy(shapes: &mut ShapeTree, t: u8, bytes: &[u8]) {
    if t == tag::HASH_RECORD {
        shapes.retain(shape::record::shape(bytes));
    }
}

/// What `update` found under the key.
enum Found<R> {
    Missing,
    Inline(u8, Option<u64>, Vec<u8>),
    /// A boxed value, already changed in place: the result, the encodings before and after,
    /// and whether it is now empty.
    Done(Result<R, StoreError>, Encoding, Encoding, bool),
}

impl Shard {
    /// Calls `f` with a view of the `T` at `key`: `Ok(None)` when the key is missing,
    /// `Err(WrongType)` when it holds another type.
    #[inline]
    pub fn read<T: Collection, R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(T::View<'_>) -> R,
    ) -> Result<Option<R>, StoreError> {
        self.with_slot(db, key, now_ms, |slot| match slot {
            Slot::Missing => Ok(None),
            slot => T::view(slot)
                .map(|v| Some(f(v)))
                .ok_or(StoreError::WrongType),
        })
    }

    /// Runs `f` on the `T` at `key` for writing and stores what it becomes (see the module doc):
    /// `Ok(None)` when the key is missing and `create` is false. A created key has no TTL; an
    /// existing one keeps its TTL.
    #[inline]
    pub fn update<T: Collection, R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        create: bool,
        f: impl FnOnce(&mut Edit<'_, T>) -> Result<R, StoreError>,
    ) -> Result<Option<R>, StoreError> {
        let mut f = Some(f);
        let limits = self.limits;
        self.preserve(db, key);
        let found = self.with_slot(db, key, now_ms, |slot| locate::<T, R>(slot, limits, &mut f))?;
        match found {
            Found::Done(result, before, after, empty) => {
                if before != after {
                    self.recount(db, before, after);
                }
                if empty {
                    self.remove_unexpired(db, key);
                }
                result.map(Some)
            }
            Found::Missing if !create => Ok(None),
            Found::Missing => {
                let work = T::new_work(&mut self.heap, &self.limits)?;
                let f = f.take().expect("not called yet");
                self.edit_detached(db, key, work, false, None, f).map(Some)
            }
            Found::Inline(t, expire_at, bytes) => {
                let f = f.take().expect("not called yet");
                self.edit_detached(db, key, Work::Inline(t, bytes), true, expire_at, f)
                    .map(Some)
            }
        }
    }

    /// Moves one key's count from encoding `before` to `after` (a boxed value converted in place).
    fn recount(&mut self, db: usize, before: Encoding, after: Encoding) {
        let counts = &mut self.dbs[db].counts;
        counts[before.slot()] -= 1;
        counts[after.slot()] += 1;
    }

    /// Runs `f` on work that is not stored (an inline copy, a new value) and stores the result
    /// under `key`: replaced when it changed, deleted when emptied (`existed`: something is
    /// stored there now).
    fn edit_detached<T: Collection, R>(
        &mut self,
        db: usize,
        key: &[u8],
        work: Work<'static, T::Obj>,
        existed: bool,
        expire_at: Option<u64>,
        f: impl FnOnce(&mut Edit<'_, T>) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let mut edit = Edit {
            work,
            heap: &mut self.heap,
            shapes: &mut self.shapes,
            limits: self.limits,
            changed: false,
        };
        let result = f(&mut edit);
        let changed = edit.changed || !existed;
        let work = edit.work.detach();
        match result {
            Ok(r) => {
                self.store_work::<T>(db, key, work, changed, existed, expire_at)?;
                Ok(r)
            }
            Err(e) => {
                self.discard::<T>(work);
                Err(e)
            }
        }
    }

    /// Stores detached work under `key` (see `edit_detached`).
    pub(crate) fn store_work<T: Collection>(
        &mut self,
        db: usize,
        key: &[u8],
        work: Work<'static, T::Obj>,
        changed: bool,
        existed: bool,
        expire_at: Option<u64>,
    ) -> Result<(), StoreError> {
        let empty = match &work {
            Work::Inline(t, bytes) => T::inline_len(*t, bytes, &self.shapes) == 0,
            Work::Owned(o) => T::obj_len(o) == 0,
            Work::Borrowed(_) => unreachable!("detached work"),
        };
        if empty || !changed {
            self.discard::<T>(work);
            if empty && existed {
                self.remove_unexpired(db, key);
            }
            return Ok(());
        }
        match work {
            Work::Inline(t, bytes) => {
                let stored = self.put_raw(db, key, t, Encoding::of_inline(t), &bytes, expire_at);
                if stored.is_err() {
                    release_payload(&mut self.heap, &mut self.shapes, t, &bytes);
                }
                stored
            }
            Work::Owned(o) => self.put_object(db, key, T::wrap(o), expire_at),
            Work::Borrowed(_) => unreachable!("detached work"),
        }
    }

    /// Deletes a key known to be live (its value was just read).
    pub(crate) fn remove_unexpired(&mut self, db: usize, key: &[u8]) {
        if let Some(taken) = self.take_raw(db, key) {
            self.release(taken);
        }
    }

    /// Frees detached work that will not be stored.
    pub(crate) fn discard<T: Collection>(&mut self, work: Work<'static, T::Obj>) {
        match work {
            Work::Inline(t, bytes) => release_payload(&mut self.heap, &mut self.shapes, t, &bytes),
            Work::Owned(o) => T::obj_destroy(o, &mut self.heap),
            Work::Borrowed(_) => unreachable!("detached work"),
        }
    }

    /// A builder of a new `T`, stored under a key only by `Builder::finish`.
    pub fn builder<T: Collection>(&mut self) -> Result<Builder<'_, T>, StoreError> {
        let draft = Draft::new(self)?;
        Ok(Builder {
            shard: self,
            draft: Some(draft),
        })
    }
}

/// Finds the `T` at a slot for `update`, running `f` in place on a boxed one.
#[inline]
fn locate<T: Collection, R>(
    slot: Slot<'_>,
    limits: Limits,
    f: &mut Option<impl FnOnce(&mut Edit<'_, T>) -> Result<R, StoreError>>,
) -> Result<Found<R>, StoreError> {
    match slot {
        Slot::Missing => Ok(Found::Missing),
        Slot::Inline {
            tag: t,
            expire_at_ms,
            bytes,
            shapes,
        } if T::is_inline(t) => {
            hold_copy(shapes, t, bytes);
            Ok(Found::Inline(t, expire_at_ms, bytes.to_vec()))
        }
        Slot::Boxed {
            object,
            heap,
            shapes,
            ..
        } => {
            let obj = T::object_mut(object).ok_or(StoreError::WrongType)?;
            let before = T::obj_encoding(obj);
            let mut edit = Edit {
                work: Work::Borrowed(obj),
                heap,
                shapes,
                limits,
                changed: false,
            };
            let result = (f.take().expect("called once"))(&mut edit);
            let Work::Borrowed(obj) = edit.work else {
                unreachable!("a borrowed object is converted in place")
            };
            let empty = T::obj_len(obj) == 0;
            Ok(Found::Done(result, before, T::obj_encoding(obj), empty))
        }
        Slot::Inline { .. } => Err(StoreError::WrongType),
    }
}

/// A value of type `T` being built outside the keyspace, given its shard on every call (a
/// copy within one shard reads the source between the calls). It must end with `finish` or
/// `discard`; `Builder` is the form that borrows the shard and frees an unfinished value itself.
#[derive(Debug)]
#[must_use = "a draft owns memory of its shard: finish or discard it"]
pub(crate) struct Draft<T: Collection> {
    work: Work<'static, T::Obj>,
}

impl<T: Collection> Draft<T> {
    pub(crate) fn new(shard: &mut Shard) -> Result<Draft<T>, StoreError> {
        Ok(Draft {
            work: T::new_work(&mut shard.heap, &shard.limits)?,
        })
    }

    /// Runs `f` on the value being built.
    pub(crate) fn edit<R>(
        &mut self,
        shard: &mut Shard,
        f: impl FnOnce(&mut Edit<'_, T>) -> R,
    ) -> R {
        let placeholder = Work::Inline(0, Vec::new());
        let mut edit = Edit {
            work: std::mem::replace(&mut self.work, placeholder),
            heap: &mut shard.heap,
            shapes: &mut shard.shapes,
            limits: shard.limits,
            changed: false,
        };
        let result = f(&mut edit);
        self.work = edit.work.detach();
        result
    }

    /// Stores the value under `key` with `expire_at`, replacing whatever was there; an empty
    /// value deletes the key. On `Err` the key keeps its old value and the draft is freed.
    pub(crate) fn finish(
        self,
        shard: &mut Shard,
        db: usize,
        key: &[u8],
        expire_at: Option<u64>,
    ) -> Result<(), StoreError> {
        let empty = match &self.work {
            Work::Inline(t, bytes) => T::inline_len(*t, bytes, &shard.shapes) == 0,
            Work::Owned(o) => T::obj_len(o) == 0,
            Work::Borrowed(_) => unreachable!("detached work"),
        };
        if empty {
            shard.discard::<T>(self.work);
            shard.remove_unexpired(db, key);
            return Ok(());
        }
        shard.store_work::<T>(db, key, self.work, true, false, expire_at)
    }

    pub(crate) fn discard(self, shard: &mut Shard) {
        shard.discard::<T>(self.work);
    }
}

/// A new value of type `T` built element by element in the shard's heap, choosing and converting
/// encodings as `update` would for the same elements added one by one; nothing is stored until
/// `finish`, and a builder dropped unfinished frees what it built.
#[derive(Debug)]
pub struct Builder<'a, T: Collection> {
    shard: &'a mut Shard,
    /// `None` once finished.
    draft: Option<Draft<T>>,
}

impl<T: Collection> Builder<'_, T> {
    /// Runs `f` on the value being built.
    pub fn edit<R>(&mut self, f: impl FnOnce(&mut Edit<'_, T>) -> R) -> R {
        let draft = self.draft.as_mut().expect("not finished");
        draft.edit(self.shard, f)
    }

    /// Elements so far.
    pub fn len(&mut self) -> usize {
        self.edit(|e| e.len())
    }

    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    /// Stores the value under `key` with `expire_at`, replacing whatever was there; an empty
    /// value deletes the key. On `Err` the key keeps its old value.
    pub fn finish(
        mut self,
        db: usize,
        key: &[u8],
        expire_at: Option<u64>,
    ) -> Result<(), StoreError> {
        let draft = self.draft.take().expect("finished once");
        draft.finish(self.shard, db, key, expire_at)
    }
}

impl<T: Collection> Drop for Builder<'_, T> {
    fn drop(&mut self) {
        if let Some(draft) = self.draft.take() {
            draft.discard(self.shard);
        }
    }
}
