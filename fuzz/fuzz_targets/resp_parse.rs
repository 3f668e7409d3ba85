//! Fuzz target `resp_parse`: arbitrary bytes through the RESP request parser (every limit
//! setting, authenticated and not, whole and in chunks), the inline splitter and the double
//! formatters. The checks live in `resp::fuzz_check` so that `crates/resp/tests/fuzz_corpus.rs`
//! replays `fuzz/corpus/resp_parse/` on stable without libFuzzer.
//!
//! Run: `cargo +nightly fuzz run resp_parse -- -max_total_time=120 -rss_limit_mb=512`

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    resp::fuzz_check(data);
});
