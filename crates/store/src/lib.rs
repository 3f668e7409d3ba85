//! The keyspace: databases of keys on PageHash, value encodings, and expiry.
//!
//! ```text
//!  server ──(lock shard i)──▶ Shard ── heap
//!                                   ├─ db 0..15: PageHash  key → [ttl?] payload   (meta: tag, TTL bit)
//!                                   └─ shapes
//! ```
//! A key lives in exactly one shard, chosen by the server from the key's hash. Everything in this
//! crate is single-threaded and does no I/O: `shard.rs` holds the keyspace operations (lookup with
//! lazy expiry, put with TTL handling, take, scan, random key, active expiry), `value.rs` the
//! per-entry encoding of values and TTLs, `glob.rs` the KEYS/SCAN pattern matcher.

pub mod glob;
pub mod object;
pub mod shard;
pub mod types;
pub mod value;

pub use object::{Object, Portable};
pub use shard::{
    Entry, ExpireRound, Exported, OwnedEntry, Shard, ShardConfig, Slot, StoreError, Ttl,
};
pub use value::{Kind, Str};
