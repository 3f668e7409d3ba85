//! Command implementations, one family per file (as Redis keeps one `t_<type>.c` per type), each
//! declaring its table next to its handlers (`command::table!`). Pieces more than one family
//! uses live once: `args.rs` (option words, integers, SCAN cursors and options) and `random.rs`
//! (the per-thread generator and the RANDMEMBER plan); score parsing is `crate::number`.

pub mod args;
pub mod bitmap;
pub mod blocking;
pub mod config;
pub mod connection;
pub mod debug;
pub mod dump;
pub mod function;
pub mod geo;
pub mod hash;
pub mod hll;
pub mod introspect;
pub mod keys;
pub mod list;
pub mod memory;
pub mod persistence;
pub mod pubsub;
pub mod random;
pub mod scripting;
pub mod server;
pub mod set;
pub mod sort;
pub mod string;
pub mod tracking;
pub mod transaction;
pub mod zset;

pub use args::is;
