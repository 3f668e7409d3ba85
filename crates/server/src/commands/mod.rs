//! Command implementations, one family per file (as Redis keeps one `t_<type>.c` per type).

pub mod blocking;
pub mod connection;
pub mod hash;
pub mod keys;
pub mod list;
pub mod server;
pub mod set;
pub mod sort;
pub mod string;
pub mod transaction;
pub mod zset;

/// `arg` equals `word`, ignoring ASCII case (option names).
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}
