//! Boxed values and their handles: the one place where a keyspace payload becomes a reference.
//!
//! ```text
//!  keyspace entry, meta tag 15 (BOXED):  payload = handle: 8 bytes, little-endian address of a
//!                                                  Box<Object> (global allocator)
//!  Object ─ Hash(HashObj)   small │ flat │ ints │ pages   (types/hash.rs)
//!         ├ List(ListObj)   chunks                      (types/list.rs)
//!         ├ Set(SetObj)     flat │ ints │ pages           (types/set.rs)
//!         └ ZSet(ZSetObj)   index: tree + member index   (types/zset.rs)
//! ```
//! Ownership: the keyspace entry that holds a handle owns its object. Only `shard.rs` makes,
//! stores and frees handles (`into_handle`, `from_handle`), and only through the crate-private
//! raw entry functions, whose callers give the tag from the value they store; nothing outside the
//! crate can put bytes under tag 15, so no safe code can forge a handle. Every path that drops or
//! overwrites a boxed entry (`Shard::remove`, overwrites, expiry, `flush`, `Drop`) destroys its
//! object; RENAME and MOVE within a shard move the handle to the new entry and forget the old one
//! without freeing. An object may own memory of its shard's heap (pages of a PageHash), so a box
//! never moves between shards: RENAME and COPY across shards rebuild the value from its logical
//! view (`view.rs`).

use crate::encoding::Encoding;
use crate::types::{hash::HashObj, list::ListObj, set::SetObj, zset::ZSetObj};
use heap::Heap;

/// Bytes of a handle payload.
pub(crate) const HANDLE_BYTES: usize = 8;

/// A handle payload (owned by the entry it was read from).
pub(crate) type Handle = [u8; HANDLE_BYTES];

// Every boxed collection pays for one `Object` (plus its malloc header): large parts of the
// variants (a PageHash is 104 bytes) are boxed so it stays at 48.
const _: () = assert!(std::mem::size_of::<Object>() <= 48);

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
            // A sorted set's tree and index live in the global allocator.
            Object::ZSet(o) => drop(o),
        }
    }

    pub fn encoding(&self) -> Encoding {
        match self {
            Object::Hash(o) => o.encoding(),
            Object::List(_) => Encoding::List,
            Object::Set(o) => o.encoding(),
            Object::ZSet(_) => Encoding::ZSetIndex,
        }
    }

    /// OBJECT ENCODING of the object (a hash answers by its history, see `types/hash.rs`).
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

    /// Checks the object's own invariants (tests and `Shard::validate`).
    pub fn validate(&self, heap: &Heap) -> Result<(), String> {
        match self {
            Object::Hash(o) => o.validate(heap),
            Object::List(o) if o.is_empty() => Err("empty list stored".into()),
            Object::List(o) => o.validate(),
            Object::Set(o) => o.validate(heap),
            Object::ZSet(o) => o.validate(),
        }
    }
}

/// Boxes `object` and returns the handle payload that owns it.
pub(crate) fn into_handle(object: Object) -> Handle {
    (Box::into_raw(Box::new(object)) as usize as u64).to_le_bytes()
}

/// The handle at the start of a boxed entry's payload.
pub(crate) fn handle_of(payload: &[u8]) -> Handle {
    payload[..HANDLE_BYTES]
        .try_into()
        .expect("a handle payload is 8 bytes")
}

fn address(handle: &Handle) -> *mut Object {
    u64::from_le_bytes(*handle) as usize as *mut Object
}

/// The object a handle points to.
///
/// # Safety
/// `handle` must be the payload of a live keyspace entry with tag `BOXED` (so it was made by
/// `into_handle` and not yet passed to `from_handle`), and no other reference to the object may
/// exist for `'a`. A `&mut Shard` borrow for `'a`, during which the entry is neither removed nor
/// overwritten, guarantees both.
pub(crate) unsafe fn object_mut<'a>(handle: &Handle) -> &'a mut Object {
    // SAFETY: per the contract, the address came from `Box::into_raw` and the box is still
    // owned by the entry, so it is valid, aligned and not aliased for `'a`.
    unsafe { &mut *address(handle) }
}

/// A shared view of the object a handle points to.
///
/// # Safety
/// `handle` must be the payload of a live keyspace entry with tag `BOXED`, and no mutable
/// reference to the object may exist for `'a` (a `&Shard` borrow for `'a` guarantees both).
pub(crate) unsafe fn object_ref<'a>(handle: &Handle) -> &'a Object {
    // SAFETY: per the contract, the address came from `Box::into_raw`, the box is still owned by
    // the entry and nothing mutates it for `'a`.
    unsafe { &*address(handle) }
}

/// Takes back ownership of the object a handle owns.
///
/// # Safety
/// `handle` must come from `into_handle` and this must be the only `from_handle` for it: the
/// entry holding it has been removed or overwritten, or never stored.
pub(crate) unsafe fn from_handle(handle: &Handle) -> Object {
    // SAFETY: per the contract, the address came from `Box::into_raw` and ownership returns here
    // exactly once.
    *unsafe { Box::from_raw(address(handle)) }
}
