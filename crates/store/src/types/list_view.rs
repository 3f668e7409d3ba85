//! The read view of a list in either encoding: packed inline (`list_packed.rs`) or chunks
//! (`list.rs`). Commands, persistence and DEBUG read lists only through it.
//!
//! ```text
//!  ListView::Packed(&[u8])     the keyspace payload: [count u16][level u8][entry]*
//!  ListView::Chunks(&ListObj)  the boxed deque of chunks
//! ```

use super::list::{self, ListObj};
use super::list_packed as packed;

/// A list as it is stored, read in place.
#[derive(Clone, Copy, Debug)]
pub enum ListView<'a> {
    Packed(&'a [u8]),
    Chunks(&'a ListObj),
}

impl<'a> ListView<'a> {
    pub fn len(&self) -> usize {
        match self {
            ListView::Packed(b) => packed::count(b),
            ListView::Chunks(l) => l.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `index` (0-based from the head), if any.
    pub fn get(&self, index: usize) -> Option<&'a [u8]> {
        match *self {
            ListView::Packed(b) => packed::get(b, index),
            ListView::Chunks(l) => l.get(index),
        }
    }

    /// The element at the `left` end if true, else the right one.
    pub fn end(&self, left: bool) -> Option<&'a [u8]> {
        match *self {
            ListView::Packed(b) if left => packed::get(b, 0),
            ListView::Packed(b) => packed::last(b),
            ListView::Chunks(l) => l.end(left),
        }
    }

    /// The elements from `index` towards the tail.
    pub fn iter_from(&self, index: usize) -> ListIter<'a> {
        match *self {
            ListView::Packed(b) => ListIter::Packed(packed::iter_from(b, index)),
            ListView::Chunks(l) => ListIter::Chunks(l.iter_from(index)),
        }
    }

    /// The elements from `index` towards the head (none when `index >= len`).
    pub fn rev_from(&self, index: usize) -> ListRevIter<'a> {
        match *self {
            ListView::Packed(b) => ListRevIter::Packed {
                bytes: b,
                starts: if index < packed::count(b) {
                    packed::starts_through(b, index)
                } else {
                    Vec::new()
                },
            },
            ListView::Chunks(l) => ListRevIter::Chunks(l.rev_from(index)),
        }
    }

    /// Redis 7.0 reports every list as a quicklist.
    pub fn encoding_name(&self) -> &'static str {
        "quicklist"
    }

    /// Chunks (quicklist nodes): a packed list is one.
    pub fn chunk_count(&self) -> usize {
        match self {
            ListView::Packed(_) => 1,
            ListView::Chunks(l) => l.chunk_count(),
        }
    }

    /// The byte bound of the list's chunks (its Redis fill).
    pub fn chunk_bytes(&self) -> usize {
        match self {
            ListView::Packed(b) => packed::chunk_bytes(b),
            ListView::Chunks(l) => l.chunk_bytes(),
        }
    }

    /// Bytes of entries, lengths included.
    pub fn entry_bytes(&self) -> usize {
        match self {
            ListView::Packed(b) => packed::entries(b).len(),
            ListView::Chunks(l) => l.entry_bytes(),
        }
    }
}

/// The elements from an index towards the tail (`ListView::iter_from`).
#[derive(Debug)]
pub enum ListIter<'a> {
    Packed(packed::Iter<'a>),
    Chunks(list::Iter<'a>),
}

impl<'a> Iterator for ListIter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        match self {
            ListIter::Packed(i) => i.next(),
            ListIter::Chunks(i) => i.next(),
        }
    }
}

/// The elements from an index towards the head (`ListView::rev_from`); a packed list's are
/// read from the entry starts noted on the way in.
#[derive(Debug)]
pub enum ListRevIter<'a> {
    Packed { bytes: &'a [u8], starts: Vec<u32> },
    Chunks(list::RevIter<'a>),
}

impl<'a> Iterator for ListRevIter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        match self {
            ListRevIter::Packed { bytes, starts } => {
                let at = starts.pop()?;
                Some(packed::value_at(bytes, at as usize))
            }
            ListRevIter::Chunks(i) => i.next(),
        }
    }
}
