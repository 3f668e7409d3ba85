//! Redis's on-disk formats, written and read by densekv: the RDB value codec (what DUMP, RESTORE
//! and the RDB file share) over the store's typed API. The store and the crates below it stay
//! free of I/O; this crate turns values into Redis's bytes and back, and treats every byte it
//! reads as hostile (lengths checked against the input before anything is allocated, every
//! embedded structure validated as Redis's `sanitize-dump-payload yes` does).
//!
//! | file | what it holds |
//! |---|---|
//! | `aof.rs` | Redis 7's AOF, read side: the multi-part manifest and a file's command stream |
//! | `crc64.rs` | Redis's CRC-64 (Jones polynomial, reflected), the RDB and DUMP trailer |
//! | `lzf.rs` | LZF compression, as Redis's bundled liblzf (strings over 20 bytes) |
//! | `codec.rs` | RDB primitives: lengths, strings (integer, raw, LZF), doubles; a bounded reader |
//! | `listpack.rs` | listpacks (Redis 7's small hashes, zsets and list nodes): write and validate |
//! | `ziplist.rs` | ziplists (Redis ≤ 6's): validate and read |
//! | `intset.rs` | intsets: write and validate |
//! | `zipmap.rs` | zipmaps (Redis ≤ 2.6 hashes): validate and read |
//! | `value.rs` | one value: its RDB type and object, from a store view and back into a shard |
//! | `dump.rs` | DUMP payloads: a value, the RDB version and a CRC-64 |
//! | `rdb.rs` | RDB files: header, AUX fields, databases, keys with expiries, EOF and CRC-64 |
//! | `fuzz.rs` | the `rdb_load` fuzz target's checks (RDB files whole and windowed, DUMP payloads) |

pub mod aof;
pub mod aof_base;
pub mod codec;
pub mod crc64;
pub mod dump;
mod fuzz;
pub mod intset;
pub mod listpack;
pub mod lzf;
pub mod rdb;
pub mod value;
pub mod ziplist;
pub mod zipmap;

pub use fuzz::fuzz_check;

use std::fmt;

/// The format tests' fixtures: hex bytes separated by spaces, `78*63` being the byte 0x78
/// repeated 63 times (Redis's bytes printed that way, so long strings stay readable).
#[cfg(test)]
mod test_hex {
    pub fn hex(text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        for token in text.split_whitespace() {
            let (byte, times) = token.split_once('*').unwrap_or((token, "1"));
            let byte = u8::from_str_radix(byte, 16).unwrap();
            out.extend(std::iter::repeat_n(byte, times.parse().unwrap()));
        }
        out
    }
}

/// What is wrong with bytes that claim to be in one of Redis's formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatError(pub &'static str);

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for FormatError {}

/// One element of a listpack or ziplist: Redis stores an element that is the canonical text of
/// an integer as the integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry<'a> {
    Int(i64),
    Str(&'a [u8]),
}
