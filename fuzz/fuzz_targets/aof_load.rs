//! Fuzz target `aof_load`: arbitrary bytes as an AOF file and as a manifest, the checks of
//! `persist::fuzz_check`'s AOF mode (a command stream that ends, a cut tail whose reported end
//! reads back as the same whole items, a manifest parsed or refused with Redis's texts). The
//! same inputs reach the server's replay in `crates/server/src/aof/load.rs`'s seeded mutation
//! test, which runs on stable. Seeds: `fuzz/corpus/rdb_load/` files whose mode byte is 3 mod 4.
//!
//! Run: `cargo +nightly fuzz run aof_load -- -max_total_time=120 -rss_limit_mb=1024`

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut input = Vec::with_capacity(data.len() + 1);
    input.push(3);
    input.extend_from_slice(data);
    persist::fuzz_check(&input);
});
