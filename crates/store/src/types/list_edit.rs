//! How the shared edit machinery (`edit.rs`) reaches lists: the `List` type marker, its
//! `Collection` impl, and the changes an `Edit<List>` makes in either encoding.
//!
//! ```text
//!  Shard::read::<List>    ─▶ ListView: Packed(&payload) │ Chunks(&ListObj)    (list_view.rs)
//!  Shard::update::<List>  ─▶ &mut Edit<List> ─ view() ─▶ ListView             (reads)
//!                                            └ push_back, pop_end, set, … ─┬▶ list_packed::…
//!                                                                          └▶ ListObj::…(heap)
//! ```
//! The common LPUSH/RPUSH and LPOP/RPOP of a packed list with room skip the copy: the
//! `Shard::*_list_in_place` methods below edit the payload where it is stored, with one lookup,
//! doing exactly what the copying edit would or nothing (`list_packed.rs`'s `*_in_place`).
//!
//! A new list starts packed (`list_packed.rs`, inline in its keyspace entry) and becomes chunks
//! (`list.rs`, boxed) before the first change that would leave it past its packed bound
//! (`fit`), for good: nothing converts chunks back, so a list popped small again stays boxed
//! (Redis 7.0 never converts either; every list is a "quicklist" to OBJECT ENCODING). Every
//! change goes through a method here, which marks the edit changed and lends `ListObj` the
//! heap, so no caller can change a list with a heap other than its shard's.

use super::list::ListObj;
use super::list_codec::entry_size;
use super::list_packed as packed;
use super::list_view::{ListIter, ListView};
use crate::edit::{Builder, Collection, Edit, Work, sealed::Internal};
use crate::encoding::{Encoding, Kind, tag};
use crate::error::StoreError;
use crate::limits::Limits;
use crate::object::Object;
use crate::shard::{Shard, Slot};
use heap::Heap;
use shape::ShapeTree;

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

    fn is_inline(t: u8) -> bool {
        t == tag::LIST_PACKED
    }

    fn new_work(_heap: &mut Heap, limits: &Limits) -> Result<Work<'static, ListObj>, StoreError> {
        Ok(Work::Inline(
            tag::LIST_PACKED,
            packed::empty(limits.list_chunk_bytes),
        ))
    }

    fn inline_len(_t: u8, bytes: &[u8], _shapes: &ShapeTree) -> usize {
        packed::count(bytes)
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
    type View<'a> = ListView<'a>;

    fn view(slot: Slot<'_>) -> Option<ListView<'_>> {
        match slot {
            Slot::Inline {
                tag: tag::LIST_PACKED,
                bytes,
                ..
            } => Some(ListView::Packed(bytes)),
            Slot::Boxed {
                object: Object::List(list),
                ..
            } => Some(ListView::Chunks(list)),
            _ => None,
        }
    }
}

/// What a change works on: the packed copy, or the chunks and their heap.
enum Target<'e> {
    Packed(&'e mut Vec<u8>),
    Chunks(&'e mut ListObj, &'e mut Heap),
}

/// Reads of a list being changed, and its changes (see the module doc).
impl Edit<'_, List> {
    /// The list as it is now.
    pub fn view(&self) -> ListView<'_> {
        match &self.work {
            Work::Inline(_, b) => ListView::Packed(b),
            Work::Borrowed(l) => ListView::Chunks(l),
            Work::Owned(l) => ListView::Chunks(l),
        }
    }

    /// The element at the `left` end if true, else the right one.
    pub fn end(&self, left: bool) -> Option<&[u8]> {
        self.view().end(left)
    }

    /// The elements from `index` towards the tail.
    pub fn iter_from(&self, index: usize) -> ListIter<'_> {
        self.view().iter_from(index)
    }

    /// The list in its encoding, the edit marked changed.
    fn target(&mut self) -> Target<'_> {
        self.changed = true;
        let Edit { work, heap, .. } = self;
        match work {
            Work::Inline(_, b) => Target::Packed(b),
            Work::Borrowed(l) => Target::Chunks(l, heap),
            Work::Owned(l) => Target::Chunks(l, heap),
        }
    }

    /// Converts a packed list into chunks, before a change that adds an entry of `add` bytes
    /// and removes `sub` bytes of entries, when the change would leave it past its bound: a
    /// packed list never holds more (so its count fits 16 bits and its copies stay short).
    fn fit(&mut self, add: usize, sub: usize) {
        let Work::Inline(_, b) = &self.work else {
            return;
        };
        if !packed::fits(b, add, sub) {
            let max = packed::chunk_bytes(b);
            let list = ListObj::from_entries(self.heap, max, packed::entries(b), packed::count(b));
            self.become_owned(list);
        }
    }

    /// Bytes of the packed entry at `index` (0 when out of range or not packed).
    fn packed_entry_bytes(&self, index: usize) -> usize {
        match &self.work {
            Work::Inline(_, b) => packed::get(b, index).map_or(0, |v| entry_size(v.len())),
            _ => 0,
        }
    }

    pub fn push_front(&mut self, value: &[u8]) {
        self.fit(entry_size(value.len()), 0);
        match self.target() {
            Target::Packed(b) => packed::push_front(b, value),
            Target::Chunks(l, heap) => l.push_front(heap, value),
        }
    }

    pub fn push_back(&mut self, value: &[u8]) {
        self.fit(entry_size(value.len()), 0);
        match self.target() {
            Target::Packed(b) => packed::push_back(b, value),
            Target::Chunks(l, heap) => l.push_back(heap, value),
        }
    }

    /// Removes the element at the `left` end if true, else the right one (false when empty).
    pub fn pop_end(&mut self, left: bool) -> bool {
        match self.target() {
            Target::Packed(b) => packed::pop_end(b, left),
            Target::Chunks(l, heap) => l.pop_end(heap, left),
        }
    }

    /// Replaces element `index`; false when out of range.
    pub fn set(&mut self, index: usize, value: &[u8]) -> bool {
        if index < self.len() {
            self.fit(entry_size(value.len()), self.packed_entry_bytes(index));
        }
        match self.target() {
            Target::Packed(b) => packed::set(b, index, value),
            Target::Chunks(l, heap) => l.set(heap, index, value),
        }
    }

    /// Inserts `value` so that it becomes element `index` (`index <= len`).
    pub fn insert(&mut self, index: usize, value: &[u8]) {
        self.fit(entry_size(value.len()), 0);
        match self.target() {
            Target::Packed(b) => packed::insert(b, index, value),
            Target::Chunks(l, heap) => l.insert(heap, index, value),
        }
    }

    /// Removes `count` elements starting at `start` (clamped to the list).
    pub fn remove_range(&mut self, start: usize, count: usize) {
        match self.target() {
            Target::Packed(b) => packed::remove_range(b, start, count),
            Target::Chunks(l, heap) => l.remove_range(heap, start, count),
        }
    }

    /// Keeps elements `start..=end` only; `None` empties the list (`ListObj::trim`).
    pub fn trim(&mut self, keep: Option<(usize, usize)>) {
        match self.target() {
            Target::Packed(b) => packed::trim(b, keep),
            Target::Chunks(l, heap) => l.trim(heap, keep),
        }
    }

    /// Removes up to `limit` elements equal to `value` (0: all), from the tail when `from_tail`.
    pub fn remove_matching(&mut self, value: &[u8], limit: usize, from_tail: bool) -> usize {
        match self.target() {
            Target::Packed(b) => packed::remove_matching(b, value, limit, from_tail),
            Target::Chunks(l, heap) => l.remove_matching(heap, value, limit, from_tail),
        }
    }
}

impl Builder<'_, List> {
    /// Appends an element at the tail.
    pub fn push_back(&mut self, value: &[u8]) {
        self.edit(|l| l.push_back(value));
    }
}

/// LPUSH/RPUSH and LPOP/RPOP on a packed list, where it is stored (see the module doc).
impl Shard {
    /// Pushes `values` at the head (`left`) or the tail of the packed list at `key` in place:
    /// its new length, or `None` (nothing done) when the key is missing, expired, not a packed
    /// list or short of room, or a snapshot is under way; the caller then takes `update`.
    pub fn push_list_in_place(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        left: bool,
        values: &[&[u8]],
    ) -> Option<usize> {
        self.packed_list_in_place(db, key, now_ms, |bytes| {
            packed::push_in_place(bytes, left, values).then(|| packed::count(bytes))
        })
    }

    /// Pops the head (`left`) or tail element of the packed list at `key` in place, after `f`
    /// has read it: `f`'s result, or `None` (nothing done, `f` not called) for the cases
    /// `push_list_in_place` declines, and when the pop would empty the list or shrink its
    /// payload.
    pub fn pop_list_in_place<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        left: bool,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Option<R> {
        self.packed_list_in_place(db, key, now_ms, |bytes| {
            packed::pop_in_place(bytes, left, f)
        })
    }

    /// Runs `f` on the payload of the live packed list at `key`, where it is stored, and counts
    /// a write access when `f` changed it (`Some`), as `update` would have.
    fn packed_list_in_place<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(&mut [u8]) -> Option<R>,
    ) -> Option<R> {
        self.edit_live_in_place(db, key, now_ms, (tag::LIST_PACKED, true), f)
    }
}
