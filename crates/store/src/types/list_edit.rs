//! How the shared edit machinery (`edit.rs`) reaches lists: the `List` type marker, its
//! `Collection` impl, and the changes an `Edit<List>` makes, which pass the edit's heap to
//! `ListObj` (chunk buffers live in the shard heap, `list_raw.rs`).
//!
//! ```text
//!  Shard::read::<List>    ─▶ &ListObj              reads need no heap (the chunks hold pointers)
//!  Shard::update::<List>  ─▶ &mut Edit<List> ─ deref ─▶ &ListObj   (reads)
//!                                            └ push_back, pop_end, set, … ─▶ ListObj::…(heap)
//! ```
//! Lists have one encoding and no inline form, so an edit always works on a `ListObj`, borrowed
//! in place or owned (a list being created). There is no `DerefMut`: every change goes through
//! a method here, which marks the edit changed and lends `ListObj` the heap, so no caller can
//! change a list with a heap other than its shard's.

use super::list::ListObj;
use crate::edit::{Builder, Collection, Edit, Work, sealed::Internal};
use crate::encoding::{Encoding, Kind};
use crate::error::StoreError;
use crate::limits::Limits;
use crate::object::Object;
use crate::shard::Slot;
use heap::Heap;
use shape::ShapeTree;
use std::ops::Deref;

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

    fn is_inline(_t: u8) -> bool {
        false
    }

    fn new_work(_heap: &mut Heap, limits: &Limits) -> Result<Work<'static, ListObj>, StoreError> {
        Ok(Work::Owned(ListObj::with_chunk_bytes(
            limits.list_chunk_bytes,
        )))
    }

    fn inline_len(_t: u8, _bytes: &[u8], _shapes: &ShapeTree) -> usize {
        unreachable!("lists have no inline encoding")
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
    type View<'a> = &'a ListObj;

    fn view(slot: Slot<'_>) -> Option<&ListObj> {
        match slot {
            Slot::Boxed {
                object: Object::List(list),
                ..
            } => Some(list),
            _ => None,
        }
    }
}

/// A list being changed reads as a `ListObj`.
impl Deref for Edit<'_, List> {
    type Target = ListObj;

    fn deref(&self) -> &ListObj {
        match &self.work {
            Work::Borrowed(l) => l,
            Work::Owned(l) => l,
            Work::Inline(..) => unreachable!("lists have no inline encoding"),
        }
    }
}

/// The changes of `ListObj`, each lent the edit's heap (see the module doc).
impl Edit<'_, List> {
    /// The list and its heap, the edit marked changed.
    fn list_mut(&mut self) -> (&mut ListObj, &mut Heap) {
        self.changed = true;
        self.object().expect("lists have no inline encoding")
    }

    pub fn push_front(&mut self, value: &[u8]) {
        let (l, heap) = self.list_mut();
        l.push_front(heap, value);
    }

    pub fn push_back(&mut self, value: &[u8]) {
        let (l, heap) = self.list_mut();
        l.push_back(heap, value);
    }

    /// Removes the element at the `left` end if true, else the right one (false when empty).
    pub fn pop_end(&mut self, left: bool) -> bool {
        let (l, heap) = self.list_mut();
        l.pop_end(heap, left)
    }

    /// Replaces element `index`; false when out of range.
    pub fn set(&mut self, index: usize, value: &[u8]) -> bool {
        let (l, heap) = self.list_mut();
        l.set(heap, index, value)
    }

    /// Inserts `value` so that it becomes element `index` (`index <= len`).
    pub fn insert(&mut self, index: usize, value: &[u8]) {
        let (l, heap) = self.list_mut();
        l.insert(heap, index, value);
    }

    /// Removes `count` elements starting at `start` (clamped to the list).
    pub fn remove_range(&mut self, start: usize, count: usize) {
        let (l, heap) = self.list_mut();
        l.remove_range(heap, start, count);
    }

    /// Keeps elements `start..=end` only; `None` empties the list (`ListObj::trim`).
    pub fn trim(&mut self, keep: Option<(usize, usize)>) {
        let (l, heap) = self.list_mut();
        l.trim(heap, keep);
    }

    /// Removes up to `limit` elements equal to `value` (0: all), from the tail when `from_tail`.
    pub fn remove_matching(&mut self, value: &[u8], limit: usize, from_tail: bool) -> usize {
        let (l, heap) = self.list_mut();
        l.remove_matching(heap, value, limit, from_tail)
    }
}

impl Builder<'_, List> {
    /// Appends an element at the tail.
    pub fn push_back(&mut self, value: &[u8]) {
        self.edit(|l| l.push_back(value));
    }
}
