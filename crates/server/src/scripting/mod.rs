//! Server-side Lua (EVAL, EVALSHA, SCRIPT, FUNCTION): Lua 5.1 through `mlua`, built from source
//! with the crate, as Redis embeds Lua 5.1.
//!
//! `libs` holds the libraries Redis loads besides Lua's own (`cjson`, `cmsgpack`, `struct`,
//! `bit`), written in Rust against Redis 7.0's behavior.

pub mod convert;
pub mod libs;
pub mod rand;
