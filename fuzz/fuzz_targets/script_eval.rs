//! Fuzz target `script_eval`: arbitrary script text and arguments through EVAL, EVALSHA,
//! FUNCTION LOAD and FCALL (and their read-only forms, in RESP2 and RESP3, inside MULTI or not)
//! on an in-process server, which must never crash, hang, answer with a malformed reply, or be
//! left unable to serve the next command. The checks live in
//! `server::scripting::fuzz::fuzz_check` (input layout there) so that
//! `crates/server/tests/fuzz_scripting.rs` replays `fuzz/corpus/script_eval/` on stable without
//! libFuzzer.
//!
//! Run: `cargo +nightly fuzz run script_eval -- -max_total_time=600 -rss_limit_mb=4096 -timeout=30`
//! (the Lua VM alone may take 1 GiB; a script runs at most ~60 ms before the harness kills it).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    server::scripting::fuzz::fuzz_check(data);
});
