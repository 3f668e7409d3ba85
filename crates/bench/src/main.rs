//! `bench`: densekv's benchmarks, each suite measured against its peer in the same run and
//! reported as medians, ratios and bytes.
//!
//! ```text
//! cargo run --release -p bench -- heap [--quick] [--rounds N] [--workload W,..] [--alloc A,..]
//! cargo run --release -p bench -- server [--n N] [--quick] [--with-10m] [--rounds N] [--densekv PATH]
//!                                        [--only P,..] [--workload W,..] [--test T,..]
//! cargo run --release -p bench -- persist [--quick] [--rounds N] [--densekv PATH] [--n N]
//! cargo run --release -p bench -- aof [--quick] [--rounds N] [--densekv PATH] [--n N]
//! cargo run --release -p bench -- evict [--quick] [--rounds N] [--densekv PATH] [--only S,..]
//! cargo run --release -p bench -- pubsub [--quick] [--rounds N] [--densekv PATH] [--only S,..]
//! cargo run --release -p bench -- scripting [--quick] [--rounds N] [--densekv PATH] [--only S,..]
//! cargo run --release -p bench -- types [--quick] [--rounds N] [--densekv PATH] [--only S,..]
//! cargo run --release -p bench -- shapes [--quick] [--records N]
//! cargo run --release -p bench -- all  [--quick] [--rounds N]
//! ```
//!
//! Suites are subcommands: `heap` today (densekv's heap against mimalloc, jemalloc and the system
//! allocator; see `workload.rs` for its dimensions and `docs/heap-bench.md`); `maps`, `shapes`,
//! `server`, `persist` and `aof` (densekv against redis-server) join as their crates land, and
//! `all` runs every suite there is. Each suite prints its tables and writes
//! `bench-results/<suite>.json` in the workspace root. Measurements that need a clean process
//! (peak RSS) re-execute this binary through a hidden subcommand (`heap-child`).
//!
//! `server` measures the densekv binary against redis-server (memory per entry, redis-benchmark
//! throughput, growth; see `server_suite.rs` and `docs/BENCHMARKS.md`), in modules `server_*`:
//! `server_workload` (memory workloads), `server_zsets` (issue #31's sorted-set cases and
//! prefilled zset tests), `server_resp` (a raw RESP client), `server_proc`
//! (the server processes), `server_memory` (one memory measurement), `server_rb`
//! (redis-benchmark), `server_report` (tables, JSON, Markdown) and `server_suite` (the run).
//!
//! `persist` (`persist_*`: BGSAVE memory, latency during saves, SAVE and load) and `aof`
//! (`aof_*`: throughput under each appendfsync, BGREWRITEAOF memory through the persist suite's
//! BGSAVE measurement, rewrite and load times) share `persist_server` and the server suite's
//! process handling.
//!
//! `evict` (`evict_*`: memory returned after DEL, writes past `maxmemory` under LRU, a Zipf
//! cache under LFU and LRU, SET throughput while evicting) writes its JSON and Markdown into the
//! output directory only, and its charts through `bench/plot_evict.py`.
//!
//! `pubsub` (`pubsub_*`: PUBLISH throughput to 1, 10 and 100 subscribers and to 10 pattern
//! subscribers, delivery latency to 1,000 subscribers) writes its JSON and Markdown into the
//! output directory only, like `evict`.
//!
//! `scripting` (`scripting_*`: EVALSHA throughput through redis-benchmark at -P 1 and 16,
//! SCRIPT KILL latency of a busy script, -BUSY replies meanwhile) writes its JSON and Markdown
//! into the output directory only, like `pubsub`.
//!
//! `types` (`types_*`: a 10⁸-bit bitmap's memory built sparse, dense and by growth, and BITCOUNT;
//! PFADD and PFCOUNT throughput over dense HyperLogLogs; a 10⁶-member geo set's memory and
//! GEOSEARCH throughput) writes its JSON and Markdown into the output directory only, like
//! `scripting`.
//!
//! Modules: `alloc` (the allocators behind one trait), `workload` (what is measured), `child`
//! (one measurement in its own process), `heap_suite` (running the children), `heap_report`
//! (tables and JSON), `machine` (`/proc`, perf, date), `rng`, `stats` (medians, paired ratios)
//! and `suite` (what every suite's run shares: the clock, the failures, the command line).

mod alloc;
mod aof_markdown;
mod aof_report;
mod aof_suite;
mod aof_throughput;
mod aof_timing;
mod child;
mod evict_cache;
mod evict_delete;
mod evict_fill;
mod evict_markdown;
mod evict_report;
mod evict_server;
mod evict_suite;
mod evict_throughput;
mod evict_zipf;
mod heap_report;
mod heap_suite;
mod machine;
mod persist_bgsave;
mod persist_latency;
mod persist_markdown;
mod persist_report;
mod persist_server;
mod persist_speed;
mod persist_suite;
mod pubsub_driver;
mod pubsub_markdown;
mod pubsub_report;
mod pubsub_subscribers;
mod pubsub_suite;
mod pubsub_wire;
mod rng;
mod scripting_driver;
mod scripting_markdown;
mod scripting_report;
mod scripting_suite;
mod server_memory;
mod server_proc;
mod server_rb;
mod server_report;
mod server_resp;
mod server_suite;
mod server_workload;
mod server_zsets;
mod shapes_suite;
mod stats;
mod suite;
mod types_bitmap;
mod types_driver;
mod types_geo;
mod types_hll;
mod types_markdown;
mod types_report;
mod types_suite;
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
    /// densekv's server against redis-server: memory per entry, throughput, growth.
    Server(server_suite::ServerArgs),
    /// densekv's persistence against redis-server: BGSAVE memory, p99 during BGSAVE, SAVE/load.
    Persist(persist_suite::PersistArgs),
    /// densekv's append-only file against redis-server: throughput per appendfsync,
    /// BGREWRITEAOF memory and time, load.
    Aof(aof_suite::AofArgs),
    /// densekv's memory return and eviction against redis-server: RSS after DEL, writes past
    /// maxmemory, a Zipf cache's miss ratio under LFU and LRU, SET throughput while evicting.
    Evict(evict_suite::EvictArgs),
    /// densekv's publish/subscribe against redis-server: PUBLISH throughput to 1, 10, 100
    /// subscribers and to pattern subscribers, delivery latency to 1,000 subscribers.
    Pubsub(pubsub_suite::PubsubArgs),
    /// densekv's Lua scripting against redis-server: EVALSHA throughput at -P 1 and 16,
    /// SCRIPT KILL latency of a busy script.
    Scripting(scripting_suite::ScriptingArgs),
    /// densekv's bitmaps, HyperLogLogs and geo sets against redis-server: memory of a 10⁸-bit
    /// bitmap and of 10⁶ geo members, BITCOUNT, PFADD, PFCOUNT and GEOSEARCH throughput.
    Types(types_suite::TypesArgs),
    /// Shaped hashes against SmallMap, hashbrown and Redis's listpack: lookups and bytes/record.
    Shapes(ShapesArgs),
    /// Every suite there is: heap, shapes, server, persist, aof, evict, pubsub, scripting, then
    /// types (same --quick and --out-dir).
    All(heap_suite::HeapArgs),
    /// One measurement in a fresh process (run by `heap`, not by hand).
    #[command(hide = true)]
    HeapChild(child::ChildArgs),
}

/// Options of the shapes suite.
#[derive(Debug, clap::Args)]
struct ShapesArgs {
    /// A small, fast run (tests, smoke checks).
    #[arg(long)]
    quick: bool,
    /// Records in the memory measurement.
    #[arg(long, default_value_t = 1_000_000)]
    records: usize,
    /// Timed rounds per lookup measurement (the median is reported).
    #[arg(long, default_value_t = 7)]
    rounds: usize,
}

impl ShapesArgs {
    fn options(&self) -> shapes_suite::Options {
        if self.quick {
            shapes_suite::Options {
                records: 10_000,
                rounds: 3,
                lookups: 20_000,
            }
        } else {
            shapes_suite::Options {
                records: self.records,
                rounds: self.rounds,
                lookups: 1_000_000,
            }
        }
    }
}

/// `all`: every suite in turn, each with `args`'s --quick and --out-dir.
fn run_all(args: &heap_suite::HeapArgs) -> Result<bool, String> {
    let heap_ok = heap_suite::run(args)?;
    let shapes = ShapesArgs {
        quick: args.quick,
        records: 1_000_000,
        rounds: 7,
    };
    shapes_suite::run(shapes.options()).map_err(|e| e.to_string())?;
    let server = server_suite::ServerArgs {
        quick: args.quick,
        out_dir: args.out_dir.clone(),
        ..server_suite::ServerArgs::default()
    };
    let server_ok = server_suite::run(&server)?;
    let peers = persist_suite::PeerArgs {
        out_dir: args.out_dir.clone(),
        ..persist_suite::PeerArgs::default()
    };
    let persist = persist_suite::PersistArgs {
        quick: args.quick,
        peers: peers.clone(),
        ..persist_suite::PersistArgs::default()
    };
    let persist_ok = persist_suite::run(&persist)?;
    let aof = aof_suite::AofArgs {
        quick: args.quick,
        peers: peers.clone(),
        ..aof_suite::AofArgs::default()
    };
    let aof_ok = aof_suite::run(&aof)?;
    let evict = evict_suite::EvictArgs {
        quick: args.quick,
        peers: peers.clone(),
        ..evict_suite::EvictArgs::default()
    };
    let evict_ok = evict_suite::run(&evict)?;
    let pubsub = pubsub_suite::PubsubArgs {
        quick: args.quick,
        peers: peers.clone(),
        ..pubsub_suite::PubsubArgs::default()
    };
    let pubsub_ok = pubsub_suite::run(&pubsub)?;
    let scripting = scripting_suite::ScriptingArgs::for_all(args.quick, peers.clone());
    let scripting_ok = scripting_suite::run(&scripting)?;
    let peers_ok = persist_ok && aof_ok && evict_ok && pubsub_ok && scripting_ok;
    types_suite::run(&types_suite::TypesArgs::for_all(args.quick, peers))
        .map(|types_ok| heap_ok && server_ok && peers_ok && types_ok)
}

fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Suite::Heap(args) => heap_suite::run(&args),
        Suite::Server(args) => server_suite::run(&args),
        Suite::Persist(args) => persist_suite::run(&args),
        Suite::Aof(args) => aof_suite::run(&args),
        Suite::Evict(args) => evict_suite::run(&args),
        Suite::Pubsub(args) => pubsub_suite::run(&args),
        Suite::Scripting(args) => scripting_suite::run(&args),
        Suite::Types(args) => types_suite::run(&args),
        Suite::Shapes(args) => shapes_suite::run(args.options())
            .map(|()| true)
            .map_err(|e| e.to_string()),
        Suite::All(args) => run_all(&args),
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
