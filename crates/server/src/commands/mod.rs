//! Command implementations, one family per file (as Redis keeps one `t_<type>.c` per type).

pub mod connection;
pub mod keys;
pub mod server;
pub mod string;
pub mod transaction;

/// `arg` equals `word`, ignoring ASCII case (option names).
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}
