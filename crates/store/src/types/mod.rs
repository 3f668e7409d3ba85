//! The collection types: one module per type with its encodings, its read view, the operations
//! of `Edit<T>` on it and its conversions. Each type implements `Collection` (`edit.rs`), which is
//! how `Shard::read`, `Shard::update` and the builders reach it.

pub mod hash;
pub mod list;
mod list_codec;
mod list_edit;
pub mod list_packed;
mod list_raw;
pub mod list_view;
pub mod set;
pub mod zset;
pub mod zset_index;
pub mod zset_tree;
