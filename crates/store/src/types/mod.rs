//! The collection types: one module per type with its encodings, its operations and its
//! conversions. The server's command handlers call these through `Shard::with_slot`.
//!
//! Each module exports the same four things the keyspace needs:
//! `XObj` (its boxed encodings: `destroy`, `memory_bytes`, `encoding_name`),
//! `export_inline` / `export_object` (to the shard-independent `Portable` form) and `import`
//! (from it, choosing the encoding this shard would).

pub mod hash;
pub mod list;
pub mod set;
pub mod zset;
pub mod zset_tree;

use crate::object::{Object, Portable, tag};
use crate::shard::{Shard, StoreError, Ttl};
use heap::Heap;
use shape::ShapeTree;

/// The `Portable` form of an inline collection payload.
pub fn export_inline(shapes: &ShapeTree, t: u8, bytes: &[u8]) -> Portable {
    match t {
        tag::HASH_RECORD => Portable::Hash(hash::export_inline(shapes, t, bytes)),
        tag::SET_INTSET | tag::SET_SMALL => Portable::Set(set::export_inline(t, bytes)),
        tag::ZSET_PACKED => Portable::ZSet(zset::export_inline(t, bytes)),
        _ => unreachable!("tag {t} is not an inline collection"),
    }
}

/// The `Portable` form of a boxed collection.
pub fn export_object(heap: &Heap, object: &Object) -> Portable {
    match object {
        Object::Hash(o) => Portable::Hash(o.export(heap)),
        Object::List(o) => Portable::List(o.export(heap)),
        Object::Set(o) => Portable::Set(o.export(heap)),
        Object::ZSet(o) => Portable::ZSet(o.export(heap)),
    }
}

/// Stores `value` under `key` in `shard` (replacing what was there).
pub fn import(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    value: Portable,
    ttl: Ttl,
    now_ms: u64,
) -> Result<(), StoreError> {
    match value {
        Portable::Hash(pairs) => hash::import(shard, db, key, pairs, ttl, now_ms),
        Portable::List(items) => list::import(shard, db, key, items, ttl, now_ms),
        Portable::Set(members) => set::import(shard, db, key, members, ttl, now_ms),
        Portable::ZSet(entries) => zset::import(shard, db, key, entries, ttl, now_ms),
    }
}
