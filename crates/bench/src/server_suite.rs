//! `bench server`: densekv against redis-server in one run: memory per entry for every workload,
//! redis-benchmark throughput and latency for every standard test at `-P 1` and `-P 16`, and the
//! growth of both with N. Prints progress on stderr and the tables on stdout, writes
//! `bench-results/server.json`, `docs/BENCHMARKS.md` (keeping the persist suite's section), and
//! the charts (through `bench/plot.py`).
//!
//! Dimensions: server × memory workload (`server_workload.rs`) × N, and server × redis-benchmark
//! test × pipeline depth × round. Order of work:
//!
//! 1. **Memory and growth.** For every N (10⁵, 10⁶, 10⁷ with `--with-10m`; the main table is the
//!    one at `--n`), every workload, densekv then redis-server: a fresh server, load, measure,
//!    read back, stop (`server_memory.rs`). After `strings`, both loaded servers stay up for
//!    `set`/`get` at `-r N` (the growth throughput), then stop.
//! 2. **Throughput.** A throwaway densekv is probed for every test's commands (`server_rb::probe`);
//!    tests it answers with an error are `n/a`. Then `--rounds` rounds of: for `-P 1` and
//!    `-P 16`, both servers started fresh, and every test run on one and then on the other (who
//!    goes first alternates by test and by round), so a ratio compares figures taken seconds
//!    apart. redis-server runs every test; densekv the ones it supports. The idle server of a
//!    pair sleeps in its event loop and takes no CPU from the measured one.
//!
//! Issue #31's sorted-set figures (`server_zsets.rs`) ride on both parts: the `zset_big` and
//! `zset_mid` cases run once after the memory workloads (in the default run and with
//! `--workload zset_big,zset_mid`), and the `zrangebyscore`, `zrank` and `zadd_big` tests run
//! after redis-benchmark's own, each on both servers after loading its zset into both (`--test`
//! picks tests). The report judges the issue's targets on them (`server_report.rs`).
//!
//! Measurements run one at a time: on two cores, a second server or benchmark running beside
//! them would take a core from the one being measured.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};

use crate::heap_suite::workspace_root;
use crate::machine::MachineInfo;
use crate::persist_markdown;
use crate::server_memory::{self, MemoryMeasurement, Outcome};
use crate::server_proc::{ServerKind, ServerProcess};
use crate::server_rb::{self, CLIENTS, KEYSPACE};
use crate::server_report::{
    BenchRun, Config, MemoryRow, ServerSuiteReport, ThroughputRow, Versions, ZsetBigRow,
    ZsetMidRow, issue_targets, markdown, render, throughput_rows, worst_ratio, zset_mid_rows,
};
use crate::server_workload::{MemWorkload, WorkloadChoice};
use crate::server_zsets::{self, ZsetCase};
use crate::suite::{self, SuiteRun};

const PIPELINES: [u32; 2] = [1, 16];
/// `-P 16` runs this many times the requests of `-P 1` (it is that much faster per request).
const P16_REQUEST_FACTOR: u64 = 5;
/// The `lrange_*` tests run this fraction of the `-P 1` requests at both depths: their replies
/// carry 100–600 elements. At a tenth, a `-P 1` run lasted a quarter of a second, too short to
/// compare on a shared machine.
const LRANGE_DIVISOR: u64 = 2;
const GROWTH_TESTS: [&str; 2] = ["set", "get"];

/// A part of the suite; the value of `--only`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Part {
    Memory,
    Throughput,
    Growth,
}

/// Arguments of `bench server`.
// Command-line switches are independent yes/no flags; an enum per flag would only rename them.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Default, Args)]
pub struct ServerArgs {
    /// Entries per memory workload for the main table [default: 1000000, quick: 2000].
    #[arg(long)]
    pub n: Option<u64>,
    /// A smoke run: N = 2000, growth at 1000 and 2000, 2000 requests, one round.
    #[arg(long)]
    pub quick: bool,
    /// Add N = 10,000,000 to the growth curve (minutes and a few GiB per server).
    #[arg(long = "with-10m")]
    pub with_10m: bool,
    /// Rounds of the throughput part [default: 3, quick: 1].
    #[arg(long)]
    pub rounds: Option<usize>,
    /// redis-benchmark requests per test at -P 1; -P 16 runs 5× as many, lrange_* half
    /// [default: 100000, quick: 2000].
    #[arg(long)]
    pub requests: Option<u64>,
    /// The densekv binary [default: `cargo build --release -p server`, then
    /// `<target>/release/densekv`].
    #[arg(long)]
    pub densekv: Option<PathBuf>,
    /// Measure redis-server only (densekv's figures are all n/a).
    #[arg(long)]
    pub no_densekv: bool,
    /// The redis-server binary [default: redis-server].
    #[arg(long)]
    pub redis: Option<PathBuf>,
    /// The redis-benchmark binary [default: redis-benchmark].
    #[arg(long)]
    pub redis_benchmark: Option<PathBuf>,
    /// Only these memory workloads, comma-separated [default: all]. `zset_big` (one zset of 10⁶
    /// members) and `zset_mid` (MEMORY USAGE of zsets of 129, 300, 1000 members) are measured
    /// once, not at every N.
    #[arg(long = "workload", value_enum, value_delimiter = ',')]
    pub workloads: Vec<WorkloadChoice>,
    /// Only these throughput tests, comma-separated [default: all: redis-benchmark's standard
    /// tests, then zrangebyscore, zrank, zadd_big].
    #[arg(long = "test", value_delimiter = ',',
          value_parser = clap::builder::PossibleValuesParser::new(server_rb::all_tests()))]
    pub tests: Vec<String>,
    /// Only these parts, comma-separated [default: memory,throughput,growth].
    #[arg(long = "only", value_enum, value_delimiter = ',')]
    pub parts: Vec<Part>,
    /// Seconds to wait after a load before reading memory (then until VmRSS is still for 2 s)
    /// [default: 12, above jemalloc's 10 s decay; quick: 0].
    #[arg(long)]
    pub settle_secs: Option<u64>,
    /// Directory for `server.json` [default: `bench-results/` in the workspace root].
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// Directory for BENCHMARKS.md and the charts [default: `docs/`; not written with --quick
    /// unless given].
    #[arg(long)]
    pub docs_dir: Option<PathBuf>,
    /// Write no BENCHMARKS.md and no charts.
    #[arg(long)]
    pub no_docs: bool,
}

/// The resolved settings of one run.
#[derive(Debug)]
struct Plan {
    config: Config,
    workloads: Vec<MemWorkload>,
    zset_cases: Vec<ZsetCase>,
    /// The throughput tests, in running order.
    tests: Vec<&'static str>,
    memory: bool,
    throughput: bool,
    growth: bool,
    /// Every N to measure memory at, ascending (the growth sizes plus `n`).
    sizes: Vec<u64>,
    redis: PathBuf,
    redis_benchmark: PathBuf,
    densekv: Option<PathBuf>,
}

impl Plan {
    fn new(args: &ServerArgs) -> Self {
        let wants = |part| args.parts.is_empty() || args.parts.contains(&part);
        let n = args.n.unwrap_or(if args.quick { 2000 } else { 1_000_000 });
        let requests_p1 = args
            .requests
            .unwrap_or(if args.quick { 2000 } else { 100_000 });
        let mut growth_sizes = if args.quick {
            vec![1000, 2000]
        } else {
            vec![100_000, 1_000_000]
        };
        if args.with_10m {
            growth_sizes.push(10_000_000);
        }
        let growth = wants(Part::Growth);
        let mut sizes = if growth {
            growth_sizes.clone()
        } else {
            Vec::new()
        };
        if wants(Part::Memory) {
            sizes.push(n);
        }
        sizes.sort_unstable();
        sizes.dedup();
        let (workloads, zset_cases) = WorkloadChoice::split(&args.workloads);
        Self {
            config: Config {
                n,
                quick: args.quick,
                rounds: suite::rounds(args.rounds, args.quick),
                requests_p1,
                requests_p16: requests_p1 * P16_REQUEST_FACTOR,
                lrange_requests: (requests_p1 / LRANGE_DIVISOR).max(100),
                clients: CLIENTS,
                keyspace: KEYSPACE,
                growth_sizes: if growth { growth_sizes } else { Vec::new() },
                sample_count: server_memory::SAMPLE_COUNT,
                batch_len: server_memory::BATCH_LEN,
                settle_secs: args.settle_secs.map_or(
                    if args.quick {
                        0.0
                    } else {
                        server_memory::SETTLE_DEFAULT.as_secs_f64()
                    },
                    |s| s as f64,
                ),
                zset_big_members: if args.quick {
                    server_zsets::BIG_MEMBERS_QUICK
                } else {
                    server_zsets::BIG_MEMBERS
                },
                zset_members_per_zadd: server_zsets::MEMBERS_PER_ZADD,
                zset_mid_sizes: server_zsets::MID_SIZES.to_vec(),
            },
            workloads,
            zset_cases,
            tests: server_rb::all_tests()
                .filter(|t| args.tests.is_empty() || args.tests.iter().any(|a| a == t))
                .collect(),
            memory: wants(Part::Memory),
            throughput: wants(Part::Throughput),
            growth,
            sizes,
            redis: args.redis.clone().unwrap_or_else(|| "redis-server".into()),
            redis_benchmark: args
                .redis_benchmark
                .clone()
                .unwrap_or_else(|| "redis-benchmark".into()),
            densekv: None,
        }
    }

    fn requests(&self, pipeline: u32) -> u64 {
        if pipeline == 1 {
            self.config.requests_p1
        } else {
            self.config.requests_p16
        }
    }

    fn binary(&self, kind: ServerKind) -> Option<&Path> {
        match kind {
            ServerKind::Densekv => self.densekv.as_deref(),
            ServerKind::Redis => Some(&self.redis),
        }
    }
}

/// What the run collects as it goes.
#[derive(Debug, Default)]
struct Results {
    memory: Vec<MemoryRow>,
    growth_memory: Vec<MemoryRow>,
    growth_throughput: Vec<ThroughputRow>,
    throughput: Vec<ThroughputRow>,
    zset_big: Option<ZsetBigRow>,
    zset_mid: Vec<ZsetMidRow>,
    runs: Vec<BenchRun>,
    commands: Vec<String>,
    not_applicable: Vec<String>,
    failures: Vec<String>,
}

/// Runs the suite. `Ok(false)` when it completed but something failed (a wrong value read back,
/// a crash); `n/a` is not a failure.
pub fn run(args: &ServerArgs) -> Result<bool, String> {
    let run = SuiteRun::start("server");
    let mut plan = Plan::new(args);
    ensure_redis(&plan.redis)?;
    let (densekv, densekv_status) = resolve_densekv(args);
    plan.densekv = densekv;
    eprintln!("densekv: {densekv_status}");
    let versions = Versions::read(
        &plan.redis,
        Some(&plan.redis_benchmark),
        plan.densekv.as_deref(),
        densekv_status.clone(),
    );
    let mut results = Results::default();
    if plan.densekv.is_none() {
        results
            .not_applicable
            .push(format!("densekv: {densekv_status}"));
    }
    run_memory(&plan, &mut results);
    if plan.memory {
        run_zsets(&plan, &mut results);
    }
    if plan.throughput {
        run_throughput(&plan, &mut results);
    }
    let targets = issue_targets(
        results.zset_big.as_ref(),
        &results.zset_mid,
        &results.throughput,
    );
    let report = ServerSuiteReport {
        suite: "server",
        command: suite::command_line(),
        machine: MachineInfo::read(),
        versions,
        worst: worst_ratio(&results.throughput),
        config: plan.config,
        memory: results.memory,
        throughput: results.throughput,
        growth_memory: results.growth_memory,
        growth_throughput: results.growth_throughput,
        issue_targets: targets,
        zset_big: results.zset_big,
        zset_mid: results.zset_mid,
        benchmark_commands: results.commands,
        not_applicable: results.not_applicable,
        failures: results.failures,
        runs: results.runs,
    };
    print!("{}", render(&report));
    write_outputs(args, &report)?;
    run.finish();
    Ok(report.failures.is_empty())
}

/// Checks that redis-server runs; if the default one is missing, installs the Debian packages.
pub fn ensure_redis(redis: &Path) -> Result<(), String> {
    if server_rb::version(redis).is_some() {
        return Ok(());
    }
    if redis != Path::new("redis-server") {
        return Err(format!("{} does not run", redis.display()));
    }
    eprintln!(
        "redis-server not found: installing it with `apt-get install -y redis-server redis-tools`"
    );
    let installed = Command::new("apt-get")
        .args(["install", "-y", "redis-server", "redis-tools"])
        .status()
        .is_ok_and(|s| s.success());
    if installed && server_rb::version(redis).is_some() {
        Ok(())
    } else {
        Err("redis-server is missing and apt-get could not install it".to_owned())
    }
}

/// The densekv binary to measure, or why there is none.
pub fn resolve_densekv(args: &ServerArgs) -> (Option<PathBuf>, String) {
    if args.no_densekv {
        return (None, "not measured (--no-densekv)".to_owned());
    }
    if let Some(path) = &args.densekv {
        return if path.is_file() {
            (Some(path.clone()), "ok".to_owned())
        } else {
            (None, format!("{} does not exist", path.display()))
        };
    }
    let root = workspace_root();
    eprintln!("building densekv: cargo build --release -p server");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let built = Command::new(cargo)
        .args(["build", "--release", "-p", "server"])
        .current_dir(&root)
        .output();
    match built {
        Ok(out) if out.status.success() => {
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| root.join("target"), PathBuf::from);
            let path = target.join("release").join("densekv");
            if path.is_file() {
                (Some(path), "ok".to_owned())
            } else {
                (
                    None,
                    format!("built, but {} does not exist", path.display()),
                )
            }
        }
        Ok(out) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let last = stderr
                .lines()
                .find(|l| l.starts_with("error"))
                .or_else(|| stderr.lines().rfind(|l| !l.trim().is_empty()))
                .unwrap_or("");
            (
                None,
                format!("`cargo build --release -p server` failed: {}", last.trim()),
            )
        }
        Err(e) => (None, format!("cannot run cargo: {e}")),
    }
}

/// Part 1: memory at every N, with the growth throughput on `strings`.
fn run_memory(plan: &Plan, results: &mut Results) {
    let total = plan.sizes.len() * plan.workloads.len();
    let mut step = 0;
    for &n in &plan.sizes {
        for &workload in &plan.workloads {
            step += 1;
            let keep_up = plan.growth
                && workload == MemWorkload::Strings
                && plan.config.growth_sizes.contains(&n);
            let prefix = format!("[memory {step}/{total}] {:<7} N={n}", workload.name());
            let (row, servers) = measure_pair(plan, workload, n, keep_up, &prefix, results);
            if let Some(servers) = servers {
                growth_throughput(plan, n, servers, results);
            }
            if n == plan.config.n && plan.memory {
                results.memory.push(row.clone());
            }
            if plan.growth && plan.config.growth_sizes.contains(&n) {
                results.growth_memory.push(row);
            }
        }
    }
}

/// Measures one workload at one N on both servers; with `keep_up`, returns both loaded servers.
fn measure_pair(
    plan: &Plan,
    workload: MemWorkload,
    n: u64,
    keep_up: bool,
    prefix: &str,
    results: &mut Results,
) -> (MemoryRow, Option<Vec<ServerProcess>>) {
    let mut measured = Vec::new();
    let mut kept = Vec::new();
    for kind in ServerKind::BOTH {
        eprint!("{prefix} {:<8}", kind.name());
        let clock = Instant::now();
        let (m, server) = match plan.binary(kind) {
            None => (
                MemoryMeasurement::not_applicable(n, "densekv not available".into()),
                None,
            ),
            Some(binary) => match ServerProcess::start(kind, binary) {
                Err(e) => (MemoryMeasurement::failed(n, e), None),
                Ok(mut server) => {
                    let settle = Duration::from_secs_f64(plan.config.settle_secs);
                    let m = server_memory::measure(&mut server, workload, n, settle);
                    (m, Some(server))
                }
            },
        };
        let secs = clock.elapsed().as_secs_f64();
        match &m.outcome {
            server_memory::Outcome::Ok => eprintln!(
                " {:>8.1} B/entry  used {:>8}  verified {}/{}  ({secs:.1} s)",
                m.rss_per_entry().unwrap_or(f64::NAN),
                m.used_per_entry()
                    .map_or_else(|| "-".to_owned(), |u| format!("{u:.1}")),
                m.verified_entries,
                server_memory::SAMPLE_COUNT.min(n as usize),
            ),
            server_memory::Outcome::NotApplicable(why) => {
                eprintln!(" n/a: {why}");
                if plan.densekv.is_some() || kind == ServerKind::Redis {
                    results.not_applicable.push(format!(
                        "{} {} N={n}: {why}",
                        kind.name(),
                        workload.name()
                    ));
                }
            }
            server_memory::Outcome::Failed(why) => {
                eprintln!(" FAILED: {why}");
                results
                    .failures
                    .push(format!("{} {} N={n}: {why}", kind.name(), workload.name()));
            }
        }
        if let Some(note) = &m.verify_note {
            eprintln!("{prefix} {:<8} not verified: {note}", kind.name());
        }
        if let Some(server) = server
            && keep_up
            && m.outcome == server_memory::Outcome::Ok
        {
            kept.push(server);
        }
        measured.push(m);
    }
    let redis = measured.pop().expect("two measurements");
    let densekv = measured.pop().expect("two measurements");
    let servers = (keep_up && !kept.is_empty()).then_some(kept);
    (MemoryRow::new(workload, densekv, redis), servers)
}

/// Part 1b: issue #31's sorted-set cases (`server_zsets.rs`), each once, on a fresh server per
/// kind.
fn run_zsets(plan: &Plan, results: &mut Results) {
    for &case in &plan.zset_cases {
        match case {
            ZsetCase::Big => zset_big(plan, results),
            ZsetCase::Mid => zset_mid(plan, results),
        }
    }
}

/// Records an outcome that is not `Ok` as the run's `n/a` (densekv's, when densekv is there to
/// refuse) or failure.
fn note_outcome(
    plan: &Plan,
    results: &mut Results,
    kind: ServerKind,
    what: &str,
    outcome: &Outcome,
) {
    match outcome {
        Outcome::Ok => {}
        Outcome::NotApplicable(why) => {
            eprintln!(" n/a: {why}");
            if plan.densekv.is_some() || kind == ServerKind::Redis {
                results
                    .not_applicable
                    .push(format!("{} {what}: {why}", kind.name()));
            }
        }
        Outcome::Failed(why) => {
            eprintln!(" FAILED: {why}");
            results
                .failures
                .push(format!("{} {what}: {why}", kind.name()));
        }
    }
}

/// The big zset on each server: ΔVmRSS and Δused_memory per member.
fn zset_big(plan: &Plan, results: &mut Results) {
    let members = plan.config.zset_big_members;
    let mut measured = Vec::new();
    for kind in ServerKind::BOTH {
        eprint!("[memory] zset_big members={members} {:<8}", kind.name());
        let clock = Instant::now();
        let m = match plan.binary(kind) {
            None => MemoryMeasurement::not_applicable(members, "densekv not available".into()),
            Some(binary) => match ServerProcess::start(kind, binary) {
                Err(e) => MemoryMeasurement::failed(members, e),
                Ok(mut server) => {
                    let settle = Duration::from_secs_f64(plan.config.settle_secs);
                    server_zsets::measure_big(&mut server, members, settle)
                }
            },
        };
        if m.outcome == Outcome::Ok {
            eprintln!(
                " {:>8.1} B/member  used {:>8}  load {:.1} s  verified {}  ({:.1} s)",
                m.rss_per_entry().unwrap_or(f64::NAN),
                m.used_per_entry()
                    .map_or_else(|| "-".to_owned(), |u| format!("{u:.1}")),
                m.load_secs,
                m.verified_entries,
                clock.elapsed().as_secs_f64()
            );
        }
        note_outcome(plan, results, kind, "zset_big", &m.outcome);
        measured.push(m);
    }
    let redis = measured.pop().expect("two measurements");
    let densekv = measured.pop().expect("two measurements");
    results.zset_big = Some(ZsetBigRow::new(densekv, redis));
}

/// The mid-size zsets on each server: `MEMORY USAGE` per member.
fn zset_mid(plan: &Plan, results: &mut Results) {
    let sizes = &plan.config.zset_mid_sizes;
    let mut figures = Vec::new();
    for kind in ServerKind::BOTH {
        eprint!("[memory] zset_mid members={sizes:?} {:<8}", kind.name());
        let clock = Instant::now();
        let measured = match plan.binary(kind) {
            None => Err(Outcome::NotApplicable("densekv not available".into())),
            Some(binary) => ServerProcess::start(kind, binary)
                .map_err(Outcome::Failed)
                .and_then(|server| server_zsets::measure_mid(&server, sizes)),
        };
        match &measured {
            Ok(figures) => eprintln!(
                " {}  ({:.1} s)",
                figures
                    .iter()
                    .map(|f| format!(
                        "{}: {:.1} B/member",
                        f.members,
                        f.bytes as f64 / f.members as f64
                    ))
                    .collect::<Vec<_>>()
                    .join("  "),
                clock.elapsed().as_secs_f64()
            ),
            Err(outcome) => note_outcome(plan, results, kind, "zset_mid", outcome),
        }
        figures.push(measured);
    }
    results.zset_mid = zset_mid_rows(sizes, &figures[0], &figures[1]);
}

/// `set`/`get` at `-r N` against servers holding N `strings` keys, alternating over rounds.
fn growth_throughput(plan: &Plan, n: u64, servers: Vec<ServerProcess>, results: &mut Results) {
    let mut runs = Vec::new();
    for round in 1..=plan.config.rounds {
        for pipeline in PIPELINES {
            for server in ordered(&servers, round) {
                let args = server_rb::arguments(
                    server.port,
                    plan.requests(pipeline),
                    n,
                    pipeline,
                    &GROWTH_TESTS,
                );
                eprint!(
                    "[growth N={n}] round {round} -P {pipeline:<2} {:<8} set,get",
                    server.kind.name()
                );
                match server_rb::run(&plan.redis_benchmark, &args) {
                    Ok(samples) => {
                        eprintln!("  {}", rps_summary(&samples));
                        runs.push(BenchRun {
                            round,
                            server: server.kind,
                            pipeline,
                            keyspace: n,
                            samples,
                        });
                    }
                    Err(e) => {
                        eprintln!("  FAILED: {e}");
                        results
                            .failures
                            .push(format!("growth {} N={n}: {e}", server.kind.name()));
                    }
                }
            }
        }
    }
    drop(servers);
    let missing: Vec<(String, String)> = if plan.densekv.is_none() {
        GROWTH_TESTS
            .iter()
            .map(|t| ((*t).to_owned(), "densekv not available".to_owned()))
            .collect()
    } else {
        Vec::new()
    };
    results
        .growth_throughput
        .extend(throughput_rows(&runs, &GROWTH_TESTS, &PIPELINES, &missing));
    results.runs.extend(runs);
}

/// The servers in running order for step `step` (a round, or a round plus a test's index):
/// densekv first at odd steps, redis first at even ones.
fn ordered(servers: &[ServerProcess], step: usize) -> Vec<&ServerProcess> {
    let mut ordered: Vec<&ServerProcess> = servers.iter().collect();
    if step.is_multiple_of(2) {
        ordered.reverse();
    }
    ordered
}

fn rps_summary(samples: &[server_rb::BenchSample]) -> String {
    samples
        .iter()
        .map(|s| format!("{} {:.0}", s.test, s.rps))
        .collect::<Vec<_>>()
        .join("  ")
}

/// Part 2: every redis-benchmark test at -P 1 and -P 16, both servers, `rounds` times.
///
/// Per round and depth, both servers start fresh and every test runs on one and then straight
/// on the other (who goes first alternates by test and by round), so the two figures a ratio
/// is taken from are seconds apart. Run server by server, a test's two figures were half a
/// minute apart, and the shared machine's load drifts on that scale: single-round ratios of one
/// test ranged 0.64–1.49.
fn run_throughput(plan: &Plan, results: &mut Results) {
    let unsupported = densekv_unsupported(plan, results);
    for (test, why) in &unsupported {
        if plan.densekv.is_some() {
            results
                .not_applicable
                .push(format!("densekv {test}: {why}"));
        }
    }
    let mut runs = Vec::new();
    for round in 1..=plan.config.rounds {
        for pipeline in PIPELINES {
            let label = format!(
                "[throughput] round {round}/{} -P {pipeline:<2}",
                plan.config.rounds
            );
            let servers = start_servers(plan, &label, results);
            let mut taken: Vec<(ServerKind, server_rb::BenchSample)> = Vec::new();
            let clock = Instant::now();
            for (index, &test) in plan.tests.iter().enumerate() {
                let runs_on = |kind: ServerKind| {
                    kind == ServerKind::Redis || !unsupported.iter().any(|(u, _)| u == test)
                };
                let prefilled = prefill_zset(plan, &servers, test, runs_on, results);
                for server in ordered(&servers, round + index) {
                    if !runs_on(server.kind) || !prefilled.contains(&server.kind) {
                        continue;
                    }
                    if let Some(sample) =
                        throughput_test(plan, server.kind, server.port, pipeline, test, results)
                    {
                        taken.push((server.kind, sample));
                    }
                }
            }
            eprintln!(
                "{label} {} tests on {} servers ({:.1} s)",
                plan.tests.len(),
                servers.len(),
                clock.elapsed().as_secs_f64()
            );
            for server in &servers {
                runs.push(BenchRun {
                    round,
                    server: server.kind,
                    pipeline,
                    keyspace: KEYSPACE,
                    samples: taken
                        .iter()
                        .filter(|(kind, _)| *kind == server.kind)
                        .map(|(_, sample)| sample.clone())
                        .collect(),
                });
            }
        }
    }
    results.throughput = throughput_rows(&runs, &plan.tests, &PIPELINES, &unsupported);
    results.runs.extend(runs);
}

/// Before a test of [`server_zsets::zset_tests`], loads its zset into every server it runs on,
/// the same members on each; returns the servers ready for `test` (all of them for a built-in
/// test, which needs no prefill). A server whose prefill failed is a failure and sits the test
/// out.
fn prefill_zset(
    plan: &Plan,
    servers: &[ServerProcess],
    test: &str,
    runs_on: impl Fn(ServerKind) -> bool,
    results: &mut Results,
) -> Vec<ServerKind> {
    let Some(zset_test) = server_zsets::zset_test(test, plan.config.quick) else {
        return servers.iter().map(|s| s.kind).collect();
    };
    let mut ready = Vec::new();
    for server in servers.iter().filter(|s| runs_on(s.kind)) {
        let clock = Instant::now();
        match server_zsets::prefill(server.port, &zset_test) {
            Ok(()) => {
                eprintln!(
                    "[throughput] {test}: {} prefilled with {} members ({:.1} s)",
                    server.kind.name(),
                    zset_test.members,
                    clock.elapsed().as_secs_f64()
                );
                ready.push(server.kind);
            }
            Err(e) => {
                eprintln!(
                    "[throughput] {test}: {} prefill FAILED: {e}",
                    server.kind.name()
                );
                results.failures.push(format!(
                    "throughput {} {test} prefill: {e}",
                    server.kind.name()
                ));
            }
        }
    }
    ready
}

/// A fresh server of each kind there is a binary for; one that does not start is a failure.
fn start_servers(plan: &Plan, label: &str, results: &mut Results) -> Vec<ServerProcess> {
    let mut servers = Vec::new();
    for kind in ServerKind::BOTH {
        let Some(binary) = plan.binary(kind) else {
            continue;
        };
        match ServerProcess::start(kind, binary) {
            Ok(server) => servers.push(server),
            Err(e) => {
                eprintln!("{label} {} FAILED: {e}", kind.name());
                results
                    .failures
                    .push(format!("throughput {}: {e}", kind.name()));
            }
        }
    }
    servers
}

/// Probes a throwaway densekv for every test; all tests are unsupported without a densekv.
fn densekv_unsupported(plan: &Plan, results: &mut Results) -> Vec<(String, String)> {
    let all = |why: &str| {
        plan.tests
            .iter()
            .map(|t| ((*t).to_owned(), why.to_owned()))
            .collect()
    };
    let Some(binary) = plan.binary(ServerKind::Densekv) else {
        return all("densekv not available");
    };
    match ServerProcess::start(ServerKind::Densekv, binary) {
        Ok(server) => match server_rb::probe(server.port, &plan.tests) {
            Ok(unsupported) => unsupported,
            Err(e) => {
                results.failures.push(format!("densekv probe: {e}"));
                all("probe failed")
            }
        },
        Err(e) => {
            results.failures.push(format!("densekv: {e}"));
            all("did not start")
        }
    }
}

/// One redis-benchmark run of `test` on the server at `port`: its sample, `None` when it failed.
fn throughput_test(
    plan: &Plan,
    kind: ServerKind,
    port: u16,
    pipeline: u32,
    test: &str,
    results: &mut Results,
) -> Option<server_rb::BenchSample> {
    let requests = if test.starts_with("lrange_") {
        plan.config.lrange_requests
    } else {
        plan.requests(pipeline)
    };
    let zset_test = server_zsets::zset_test(test, plan.config.quick);
    let args = match &zset_test {
        Some(z) => server_rb::command_arguments(port, requests, z.keyspace, pipeline, z.command),
        None => server_rb::arguments(port, requests, KEYSPACE, pipeline, &[test]),
    };
    let shown: Vec<String> = args
        .iter()
        .map(|a| {
            if *a == port.to_string() {
                "P".into()
            } else {
                a.clone()
            }
        })
        .collect();
    let command = format!("redis-benchmark {}", shown.join(" "));
    if !results.commands.contains(&command) {
        results.commands.push(command);
    }
    let failed = |results: &mut Results, e: String| {
        eprintln!(
            "[throughput] {} -P {pipeline} {test} FAILED: {e}",
            kind.name()
        );
        results.failures.push(format!(
            "throughput {} -P {pipeline} {test}: {e}",
            kind.name()
        ));
        None
    };
    match server_rb::run(&plan.redis_benchmark, &args) {
        Ok(samples) => match zset_test.map_or_else(
            || samples.iter().find(|s| s.test == test).cloned(),
            |z| server_rb::command_sample(samples.clone(), z.command, test),
        ) {
            Some(sample) => Some(sample),
            None => failed(results, "no result row".to_owned()),
        },
        Err(e) => failed(results, e),
    }
}

/// Writes the JSON, and unless asked not to, BENCHMARKS.md and the charts.
fn write_outputs(args: &ServerArgs, report: &ServerSuiteReport) -> Result<(), String> {
    let root = workspace_root();
    let out_dir = args
        .out_dir
        .clone()
        .unwrap_or_else(|| root.join("bench-results"));
    let json_path = crate::heap_suite::write_json(&out_dir, "server.json", report)?;
    println!("\nwrote {}", json_path.display());
    let docs_dir = match (&args.docs_dir, args.quick) {
        _ if args.no_docs => return Ok(()),
        (Some(dir), _) => dir.clone(),
        (None, true) => return Ok(()),
        (None, false) => root.join("docs"),
    };
    let md_path = docs_dir.join("BENCHMARKS.md");
    // The persist suite's section lives in the same file: keep it.
    let kept = std::fs::read_to_string(&md_path)
        .ok()
        .and_then(|old| persist_markdown::section(&old));
    let text = match kept {
        Some(section) => persist_markdown::splice(&markdown(report), &section),
        None => markdown(report),
    };
    std::fs::create_dir_all(&docs_dir)
        .and_then(|()| std::fs::write(&md_path, text))
        .map_err(|e| format!("cannot write {}: {e}", md_path.display()))?;
    println!("wrote {}", md_path.display());
    plot(&root, "plot.py", &json_path, &docs_dir);
    Ok(())
}

/// Runs `bench/<script>` on a suite's JSON, installing matplotlib with pip first if it is
/// missing. A chart that cannot be drawn is a warning: the tables and the JSON are the results.
pub fn plot(root: &Path, script: &str, json: &Path, docs_dir: &Path) {
    let has_matplotlib = || {
        Command::new("python3")
            .args(["-c", "import matplotlib"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has_matplotlib() {
        eprintln!("matplotlib missing: installing it with `pip install matplotlib`");
        let _ = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "matplotlib"])
            .status();
    }
    let script = root.join("bench").join(script);
    let status = Command::new("python3")
        .arg(&script)
        .arg(json)
        .arg(docs_dir)
        .status();
    match status {
        Ok(s) if s.success() => println!("charts in {}", docs_dir.display()),
        Ok(s) => eprintln!("warning: {} exited with {s}; no charts", script.display()),
        Err(e) => eprintln!(
            "warning: cannot run python3 {}: {e}; no charts",
            script.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::{Part, Plan, ServerArgs};
    use crate::server_workload::{MemWorkload, WorkloadChoice};
    use crate::server_zsets::{self, ZsetCase};

    #[test]
    fn tests_and_zset_cases_are_selectable() {
        let plan = Plan::new(&ServerArgs::default());
        assert_eq!(plan.tests.len(), 22);
        assert_eq!(plan.tests[19..], ["zrangebyscore", "zrank", "zadd_big"]);
        assert_eq!(plan.zset_cases, [ZsetCase::Big, ZsetCase::Mid]);
        assert_eq!(plan.config.zset_big_members, server_zsets::BIG_MEMBERS);
        let plan = Plan::new(&ServerArgs {
            quick: true,
            tests: vec!["zadd_big".into(), "zrank".into()],
            workloads: vec![
                WorkloadChoice::Zset(ZsetCase::Mid),
                WorkloadChoice::PerN(MemWorkload::Lists),
            ],
            ..ServerArgs::default()
        });
        // Tests keep the suite's running order whatever order they were named in.
        assert_eq!(plan.tests, ["zrank", "zadd_big"]);
        assert_eq!(plan.workloads, [MemWorkload::Lists]);
        assert_eq!(plan.zset_cases, [ZsetCase::Mid]);
        assert_eq!(
            plan.config.zset_big_members,
            server_zsets::BIG_MEMBERS_QUICK
        );
    }

    #[test]
    fn the_command_line_takes_zset_workloads_and_tests() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            args: ServerArgs,
        }
        let cli = Cli::try_parse_from([
            "server",
            "--workload",
            "zset_big,zsets",
            "--test",
            "zrank,zadd",
        ])
        .unwrap();
        assert_eq!(
            cli.args.workloads,
            [
                WorkloadChoice::Zset(ZsetCase::Big),
                WorkloadChoice::PerN(MemWorkload::Zsets)
            ]
        );
        assert_eq!(cli.args.tests, ["zrank", "zadd"]);
        assert!(Cli::try_parse_from(["server", "--test", "zrevrank"]).is_err());
        assert!(Cli::try_parse_from(["server", "--workload", "zset_small"]).is_err());
    }

    #[test]
    fn default_plan_measures_growth_sizes_and_n_once() {
        let plan = Plan::new(&ServerArgs::default());
        assert_eq!(plan.sizes, [100_000, 1_000_000]);
        assert_eq!(plan.config.rounds, 3);
        assert_eq!(plan.config.requests_p16, 500_000);
        let plan = Plan::new(&ServerArgs {
            with_10m: true,
            n: Some(50_000),
            ..ServerArgs::default()
        });
        assert_eq!(plan.sizes, [50_000, 100_000, 1_000_000, 10_000_000]);
    }

    #[test]
    fn only_memory_measures_n_alone() {
        let args = ServerArgs {
            quick: true,
            parts: vec![Part::Memory],
            ..ServerArgs::default()
        };
        let plan = Plan::new(&args);
        assert_eq!(plan.sizes, [2000]);
        assert!(plan.memory && !plan.throughput && !plan.growth);
        assert!(plan.config.growth_sizes.is_empty());
    }
}
