//! The collection types: one module per type with its encodings, its read view, the operations
//! of `Edit<T>` on it and its conversions. Each type implements `Collection` (`edit.rs`), which is
//! how `Shard::read`, `Shard::update` and the builders reach it.

pub mod hash;
pub mod list;
pub mod set;
pub mod zset;
pub mod zset_tree;
