//! Fuzz target `hll_corrupt`: an arbitrary string stored under a key, then every HyperLogLog
//! command on it (PFCOUNT of one and of several keys, PFADD, PFMERGE from and into it, PFDEBUG
//! ENCODING, DECODE, GETREG and TODENSE) on an in-process server, which must answer each with a
//! well-formed reply (a count, OK, or WRONGTYPE / INVALIDOBJ), never crash, hang or allocate
//! from a length in the data, and keep serving. The checks live in
//! `server::commands::hll::fuzz_check` (input layout there) so that
//! `crates/server/tests/fuzz_hll.rs` replays the seeds and `fuzz/corpus/hll_corrupt/` on stable.
//!
//! Run: `cargo +nightly fuzz run hll_corrupt -- -max_total_time=600 -max_len=20000`
//! (`DENSEKV_WRITE_CORPUS=1 cargo test -p server --test fuzz_hll` writes the seeds first).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    server::commands::hll::fuzz_check(data);
});
