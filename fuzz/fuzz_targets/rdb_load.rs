//! Fuzz target `rdb_load`: arbitrary bytes as an RDB file (read whole and through the loader's
//! windows, which must agree), as a DUMP payload (which must round-trip), or as an AOF command
//! stream and manifest (whose cut tail must read back as the same items). The checks live in
//! `persist::fuzz_check` so that `crates/persist/tests/fuzz_corpus.rs` replays
//! `fuzz/corpus/rdb_load/` on stable without libFuzzer.
//!
//! Run: `cargo +nightly fuzz run rdb_load -- -max_total_time=120 -rss_limit_mb=1024`

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    persist::fuzz_check(data);
});
