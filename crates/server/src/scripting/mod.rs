//! Server-side Lua (EVAL, EVALSHA, SCRIPT, FUNCTION): Lua 5.1 through `mlua`, built from source
//! with the crate, as Redis embeds Lua 5.1.
//!
//! `libs` holds the libraries Redis loads besides Lua's own (`cjson`, `cmsgpack`, `struct`,
//! `bit`), written in Rust against Redis 7.0's behavior.

pub mod api;
pub mod busy;
pub mod convert;
pub mod eval;
pub mod exec;
pub mod flags;
pub mod functions;
pub mod fuzz;
pub mod libs;
pub mod lua_ext;
pub mod rand;
pub mod run;
pub mod state;
pub mod vm;
