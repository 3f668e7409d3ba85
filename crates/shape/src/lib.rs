//! Shapes (after Ruby 3.2's object shapes): hashes that share field names share one shape.
//!
//! Most Redis hashes are records — millions of `user:N` keys with the same field names — and Redis
//! stores every field name again in every hash (a listpack of `name value name value …`). densekv
//! stores each distinct sequence of field names once, as a path in a [`ShapeTree`], and a hash
//! whose fields follow a shape stores a 4-byte shape id and its values back to back ([`record`]).
//!
//! ```text
//!  ShapeTree                         record of user:1 (47 bytes instead of ~100 in a listpack)
//!  root ─ name ─ email ─ age ─ city ─ created(#5)      ┌────────┬──────┬──────┬───┬─────┬─────┐
//!                         └─ zip (#6)                  │shape #5│"u123"│"u1@…"│ 42│"Oslo│ 1.7e9│
//!                                                      └────────┴──────┴──────┴───┴─────┴─────┘
//! ```
//! `tree.rs` holds the tree (transitions, field lookup, the (shape, field) lookup cache, reference
//! counts and reclaim, the limits that make input that looks like data fall back); `record.rs`
//! the record byte format and HSET/HDEL/HGET on it. The crate does no I/O and keeps no pointers
//! into caller memory: the store decides where a record's bytes live (inline in the keyspace entry
//! or in the heap) and hands them in as slices.

mod record_impl;
mod str;
mod tree;

pub use str::{I64_TEXT_BYTES_MAX, Str, canonical_i64, format_i64};
pub use tree::{ROOT, ShapeId, ShapeLimits, ShapeStats, ShapeTree, TooComplex};

/// The shaped-record byte format and the hash operations on it.
pub mod record {
    pub use crate::record_impl::*;
}
