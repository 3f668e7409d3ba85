//! The keyspace: databases of keys on PageHash, the value types and their encodings, expiry.
//!
//! ```text
//!  server ──(lock shard i)──▶ Shard ── heap
//!                                   ├─ db 0..15: PageHash  key → [ttl?] payload   (meta: tag, TTL bit)
//!                                   └─ shapes
//! ```
//! A key lives in exactly one shard, chosen by the server from the key's hash. Everything in this
//! crate is single-threaded and does no I/O. The store is the one owner of encodings and
//! handles: its public API is typed, and nothing outside it can store bytes under a tag or make
//! a reference from a payload.
//!
//! | file | what it holds |
//! |---|---|
//! | `encoding.rs` | the meta tags, the `Encoding` of every value, `Kind` (TYPE) |
//! | `shard.rs` | raw entries: lookup with lazy expiry, the one write and the one take |
//! | `walk.rs` | SCAN steps, random keys, active expiry |
//! | `access.rs` | the two access bits per key: LRU recency or LFU frequency class |
//! | `evict.rs` | the hand: aging, and eviction by the `maxmemory-policy` pickers |
//! | `defrag.rs` | the active defragmenter's walk: out-of-line keys and values out of sparse slabs |
//! | `entries.rs` | every stored entry as it is (expired or not): a walk and a peek, typed |
//! | `snapshot.rs` | point-in-time snapshots of a running shard (the forkless BGSAVE) |
//! | `strings.rs` | string reads and writes, the INCR read-modify-write |
//! | `limits.rs` | the configurable encoding thresholds (Redis's `*-max-listpack-*` & co.) |
//! | `edit.rs` | `read::<T>`, `update::<T>`, builders: creation, conversion, deletion, once |
//! | `keyops.rs` | TYPE, TTL, OBJECT, MEMORY USAGE; RENAME, MOVE, COPY that complete or undo |
//! | `view.rs` | the logical view of a value, and its rebuild in another shard |
//! | `object.rs` | boxed values and their handles (the crate's raw pointers) |
//! | `types/*.rs` | each type's encodings and operations |
//! | `value.rs`, `glob.rs` | the string payload codec; the KEYS/SCAN pattern matcher |
//!
//! A handle cannot be forged from outside the crate; the raw write is not part of the API:
//! ```compile_fail
//! let mut shard = store::Shard::new(&store::ShardConfig::default()).unwrap();
//! shard.put_raw(0, b"k", 15, store::Encoding::List, &[0x41; 8], None);
//! ```

#![deny(unsafe_op_in_unsafe_fn)]

mod access;
mod defrag;
mod edit;
mod encoding;
mod entries;
mod error;
mod evict;
pub mod glob;
mod keyops;
mod limits;
mod object;
mod shard;
mod snapshot;
mod strings;
pub mod types;
mod value;
mod view;
mod walk;

pub use access::AccessPolicy;
pub use defrag::DefragCounts;
pub use edit::{Builder, Collection, Edit};
pub use encoding::{EMBSTR_MAX_BYTES, ENCODING_SLOTS, Encoding, Kind};
pub use entries::Entry;
pub use error::StoreError;
pub use evict::{EvictRequest, EvictStep, Picker, Scope};
pub use keyops::{Relocated, copy_between, rename_between};
pub use limits::Limits;
pub use shape::{Str, canonical_i64};
pub use shard::{ExpireRound, Members, Shard, ShardConfig, Ttl};
pub use snapshot::SnapshotSink;
pub use strings::Patch;
pub use types::hash::{Hash, HashView};
pub use types::list::{List, ListObj};
pub use types::list_view::{ListIter, ListRevIter, ListView};
pub use types::set::{Set, SetView};
pub use types::zset::{ZIter, ZSet, ZSetView, order as zset_order};
pub use view::View;
pub use walk::Walked;

#[cfg(test)]
mod snapshot_model;
#[cfg(test)]
mod tests;
