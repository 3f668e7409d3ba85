//! Collection values (hash, list, set, sorted set) in the keyspace: their tags, which of them are
//! stored inline and which behind a handle, and the one place a handle becomes a reference.
//!
//! ```text
//!  tag  type   encoding (OBJECT ENCODING)   payload in the keyspace entry
//!   3   hash   record   ("listpack")        inline bytes: shape id + values (crate `shape`)
//!   4   hash   small    ("listpack")        handle → Object::Hash
//!   5   hash   pages    ("hashtable")       handle → Object::Hash
//!   6   hash   ints     ("hashtable")       handle → Object::Hash
//!   7   list   chunks   ("quicklist"/"listpack")  handle → Object::List
//!   8   set    intset   ("intset")          inline bytes
//!   9   set    small    ("hashtable")       inline bytes
//!  10   set    pages    ("hashtable")       handle → Object::Set
//!  11   set    ints     ("hashtable")       handle → Object::Set
//!  12   zset   packed   ("listpack")        inline bytes
//!  13   zset   index    ("skiplist")        handle → Object::ZSet
//!  14   hash   flat     ("listpack"/"hashtable")  handle → Object::Hash
//!  15   set    flat     ("hashtable")       handle → Object::Set
//!
//!
//!  Meta tags are four bits: 14 and 15 are the last two.
//!  handle payload: 8 bytes, little-endian address of a `Box<Object>` (global allocator)
//! ```
//! Inline encodings are rewritten whole on every change (they are small and bounded, as Redis's
//! listpacks are); boxed ones are changed in place through `Shard::object_mut`. The keyspace owns
//! the box: every path that drops or overwrites an entry with a boxed tag destroys its object
//! (`Shard::put`, `remove`, expiry, `flush`, `Drop`); `Shard::take` hands ownership to the caller,
//! who puts the entry back (RENAME/MOVE within a shard) or destroys it. An object may own memory
//! of its shard's heap (pages of a PageHash), so a box never moves between shards: RENAME and
//! COPY across shards go through `Portable`, the heap-independent form of a value.
//!
//! Which encoding each type picks, the thresholds and the conversions are the type modules'
//! (`types/*.rs`); `docs/types.md` has the whole picture.

use crate::types::{hash::HashObj, list::ListObj, set::SetObj, zset::ZSetObj};
use heap::Heap;

/// Collection tags (strings are 0–2, see `value::tag`).
pub mod tag {
    pub const HASH_RECORD: u8 = 3;
    pub const HASH_SMALL: u8 = 4;
    pub const HASH_PAGES: u8 = 5;
    pub const HASH_INTS: u8 = 6;
    pub const LIST: u8 = 7;
    pub const SET_INTSET: u8 = 8;
    pub const SET_SMALL: u8 = 9;
    pub const SET_PAGES: u8 = 10;
    pub const SET_INTS: u8 = 11;
    pub const ZSET_PACKED: u8 = 12;
    pub const ZSET_INDEX: u8 = 13;
    pub const HASH_FLAT: u8 = 14;
    pub const SET_FLAT: u8 = 15;
}

// Every boxed collection pays for one `Object` (plus its malloc header): large parts of the
// variants (a PageHash is 104 bytes) are boxed so it stays at 48.
const _: () = assert!(std::mem::size_of::<Object>() <= 48);

/// Whether entries with `tag` hold a handle to a boxed `Object` rather than inline bytes.
#[inline]
pub fn is_boxed(t: u8) -> bool {
    matches!(
        t,
        tag::HASH_SMALL
            | tag::HASH_PAGES
            | tag::HASH_INTS
            | tag::LIST
            | tag::SET_PAGES
            | tag::SET_INTS
            | tag::ZSET_INDEX
            | tag::HASH_FLAT
            | tag::SET_FLAT
    )
}

/// Bytes of a handle payload.
pub const HANDLE_BYTES: usize = 8;

/// A collection too large (or too irregular) to be rewritten whole on every change.
#[derive(Debug)]
pub enum Object {
    Hash(HashObj),
    List(ListObj),
    Set(SetObj),
    ZSet(ZSetObj),
}

impl Object {
    /// Frees what the object owns in its shard's heap.
    pub fn destroy(self, heap: &mut Heap) {
        match self {
            Object::Hash(o) => o.destroy(heap),
            Object::List(o) => o.destroy(heap),
            Object::Set(o) => o.destroy(heap),
            Object::ZSet(o) => o.destroy(heap),
        }
    }

    /// OBJECT ENCODING of the object (a list reports `listpack` or `quicklist` by size).
    pub fn encoding_name(&self) -> &'static str {
        match self {
            Object::Hash(o) => o.encoding_name(),
            Object::List(o) => o.encoding_name(),
            Object::Set(o) => o.encoding_name(),
            Object::ZSet(o) => o.encoding_name(),
        }
    }

    /// Bytes the object uses, its box included (MEMORY USAGE).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Object>()
            + match self {
                Object::Hash(o) => o.memory_bytes(),
                Object::List(o) => o.memory_bytes(),
                Object::Set(o) => o.memory_bytes(),
                Object::ZSet(o) => o.memory_bytes(),
            }
    }
}

/// Boxes `object` and returns the handle payload that owns it.
pub(crate) fn into_handle(object: Object) -> [u8; HANDLE_BYTES] {
    (Box::into_raw(Box::new(object)) as usize as u64).to_le_bytes()
}

fn address(payload: &[u8]) -> *mut Object {
    let bytes: [u8; HANDLE_BYTES] = payload[..HANDLE_BYTES]
        .try_into()
        .expect("a handle payload is 8 bytes");
    u64::from_le_bytes(bytes) as usize as *mut Object
}

/// The object a handle payload points to.
///
/// # Safety
/// `payload` must be the payload of a live keyspace entry with a boxed tag (so it was made by
/// `into_handle` and not yet passed to `from_handle`), and no other reference to the object may
/// exist for `'a`. The shard's `&mut self` guarantees both for `Shard::object_mut`.
pub(crate) unsafe fn object_of<'a>(payload: &[u8]) -> &'a mut Object {
    // SAFETY: per the contract, the address came from `Box::into_raw` and the box is still
    // owned by the entry, so it is valid, aligned and not aliased for `'a`.
    unsafe { &mut *address(payload) }
}

/// A shared view of the object a handle payload points to.
///
/// # Safety
/// `payload` must be the payload of a live keyspace entry with a boxed tag, and no mutable
/// reference to the object may exist for `'a` (a `&Shard` borrow for `'a` guarantees both).
pub(crate) unsafe fn object_ref<'a>(payload: &[u8]) -> &'a Object {
    // SAFETY: per the contract, the address came from `Box::into_raw`, the box is still owned by
    // the entry and nothing mutates it for `'a`.
    unsafe { &*address(payload) }
}

/// Takes back ownership of the object a handle payload owns.
///
/// # Safety
/// `payload` must come from `into_handle` and this must be the only `from_handle` for it: the
/// entry holding it is being dropped or overwritten (or was taken out of the keyspace).
pub(crate) unsafe fn from_handle(payload: &[u8]) -> Object {
    // SAFETY: per the contract, the address came from `Box::into_raw` and ownership returns here
    // exactly once.
    *unsafe { Box::from_raw(address(payload)) }
}

/// A value in a form that does not depend on any shard (no handles, no shape ids): what RENAME
/// and COPY carry between shards, and what SORT and the persistence layer read.
#[derive(Clone, Debug, PartialEq)]
pub enum Portable {
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    List(Vec<Vec<u8>>),
    Set(Vec<Vec<u8>>),
    /// (member, score) in rank order.
    ZSet(Vec<(Vec<u8>, f64)>),
}

/// The name of a value tag in INFO's encoding statistics (`densekv_keys_<name>`).
pub fn tag_name(t: u8) -> Option<&'static str> {
    Some(match t {
        0 => "string_embstr",
        1 => "string_raw",
        2 => "string_int",
        tag::HASH_RECORD => "hash_record",
        tag::HASH_SMALL => "hash_small",
        tag::HASH_PAGES => "hash_pages",
        tag::HASH_INTS => "hash_ints",
        tag::LIST => "list",
        tag::SET_INTSET => "set_intset",
        tag::SET_SMALL => "set_small",
        tag::SET_PAGES => "set_pages",
        tag::SET_INTS => "set_ints",
        tag::ZSET_PACKED => "zset_packed",
        tag::ZSET_INDEX => "zset_index",
        tag::HASH_FLAT => "hash_flat",
        tag::SET_FLAT => "set_flat",
        _ => return None,
    })
}

/// The OBJECT ENCODING name of an inline collection tag (boxed ones ask their object: a flat or
/// ints hash answers by its history). Redis 7.0 has no listpack sets (they came in 7.2): a set
/// of strings is a "hashtable" however small.
pub fn encoding_name(t: u8) -> &'static str {
    match t {
        tag::HASH_RECORD | tag::HASH_SMALL | tag::HASH_FLAT | tag::ZSET_PACKED => "listpack",
        tag::HASH_PAGES
        | tag::HASH_INTS
        | tag::SET_SMALL
        | tag::SET_PAGES
        | tag::SET_INTS
        | tag::SET_FLAT => "hashtable",
        tag::LIST => "quicklist",
        tag::SET_INTSET => "intset",
        tag::ZSET_INDEX => "skiplist",
        _ => "unknown",
    }
}
