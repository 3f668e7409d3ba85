//! `bench`: densekv's benchmarks, each suite measured against its peer in the same run and
//! reported as medians, ratios and bytes.
//!
//! ```text
//! cargo run --release -p bench -- heap [--quick] [--rounds N] [--workload W,..] [--alloc A,..]
//! cargo run --release -p bench -- all  [--quick] [--rounds N]
//! ```
//!
//! Suites are subcommands: `heap` today (densekv's heap against mimalloc, jemalloc and the system
//! allocator; see `workload.rs` for its dimensions and `docs/heap-bench.md`); `maps`, `shapes`
//! and `server` (densekv against redis-server) join as their crates land, and `all` runs every
//! suite there is. Each suite prints its tables and writes `bench-results/<suite>.json` in the
//! workspace root. Measurements that need a clean process (peak RSS) re-execute this binary
//! through a hidden subcommand (`heap-child`).
//!
//! Modules: `alloc` (the allocators behind one trait), `workload` (what is measured), `child`
//! (one measurement in its own process), `heap_suite` (running the children), `heap_report`
//! (tables and JSON), `machine` (`/proc`, perf, date), `rng` and `stats`.

mod alloc;
mod child;
mod heap_report;
mod heap_suite;
mod machine;
mod rng;
mod stats;
mod workload;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "bench",
    about = "densekv benchmarks against their peers",
    version
)]
struct Cli {
    #[command(subcommand)]
    command: Suite,
}

#[derive(Debug, Subcommand)]
enum Suite {
    /// densekv's heap against mimalloc, jemalloc and the system allocator.
    Heap(heap_suite::HeapArgs),
    /// Every suite there is (today: heap).
    All(heap_suite::HeapArgs),
    /// One measurement in a fresh process (run by `heap`, not by hand).
    #[command(hide = true)]
    HeapChild(child::ChildArgs),
}

fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Suite::Heap(args) | Suite::All(args) => heap_suite::run(&args),
        Suite::HeapChild(args) => child::run(&args).map(|()| true),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("some measurements failed; see above");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("bench: {error}");
            ExitCode::FAILURE
        }
    }
}
