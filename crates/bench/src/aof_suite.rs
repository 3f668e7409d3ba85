//! `bench aof`: densekv's append-only file against redis-server 7.0 in one run: throughput under
//! each `appendfsync` policy, the memory a BGREWRITEAOF costs while every key is overwritten,
//! and how long a rewrite and a load from the AOF take. Prints progress on stderr and the tables
//! on stdout, writes `bench-results/aof.json` and (on a full run) the `## Append-only file`
//! section of `docs/BENCHMARKS.md`.
//!
//! Dimensions: server × figure × round, and for throughput appendfsync × pipeline × test. Each
//! round runs every figure on densekv and on redis-server, one after the other (who goes first
//! alternates by round), each on a fresh server in an empty temporary directory of its own, all
//! on one disk:
//!
//! 1. **Throughput** (`aof_throughput.rs`): redis-benchmark `-t set,incr,lpush` at `-P 1` and
//!    `-P 16` under `appendfsync always`, `everysec` and `no`.
//! 2. **BGREWRITEAOF peak memory** (`persist_bgsave.rs`, the persist suite's BGSAVE figure with
//!    the job swapped): peak / before while N keys are overwritten during a rewrite slowed by
//!    `rdb-key-save-delay`.
//! 3. **Rewrite and load times** (`aof_timing.rs`): BGREWRITEAOF of N keys on an idle server,
//!    then M SETs, and a restart on base + incremental file.
//!
//! Shared pieces: `persist_server.rs` (directories, keys, INFO, the background job),
//! `aof_report.rs` (medians, JSON), `aof_markdown.rs` (tables, the Markdown section), and the
//! server suite's process handling and redis-benchmark runner. Measurements run one at a time,
//! as in the persist suite: on two cores a second server would take the first one's core.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::aof_markdown::{self, markdown_section, render};
use crate::aof_report::{AofConfig, AofReport, headlines, throughput_summary, timing_summary};
use crate::aof_throughput::{self, PIPELINES, POLICIES, ThroughputSample};
use crate::aof_timing::{self, TimingSample};
use crate::machine::MachineInfo;
use crate::persist_bgsave::{self, BgsaveSample};
use crate::persist_report::bgsave_summary;
use crate::persist_server::{self, BackgroundJob};
use crate::persist_suite::{DelayArgs, PeerArgs, ordered};
use crate::server_proc::ServerKind;
use crate::server_rb::CLIENTS;
use crate::server_report::Versions;
use crate::stats::ratio;
use crate::suite::{self, Failures, SuiteRun};

/// A figure of the suite; the value of `--only`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Figure {
    Throughput,
    Memory,
    Timing,
}

/// redis-benchmark's `-n` at `-P 1`: 3–10 s per test at the 15,000–50,000 rps the two servers
/// reach here with the AOF on.
const REQUESTS_P1: u64 = 150_000;
/// At `-P 16`: 3–12 s at 120,000–500,000 rps.
const REQUESTS_P16: u64 = 1_500_000;
/// SETs in the incremental file of the load figure.
const INCR_SETS: u64 = 200_000;

/// Arguments of `bench aof`.
#[derive(Debug, Clone, Args)]
pub struct AofArgs {
    /// Keys of the rewrite figures [default: 1000000, quick: 100000].
    #[arg(long)]
    pub n: Option<u64>,
    /// A smoke run: N = 100000, a tenth of the requests and SETs, one round.
    #[arg(long)]
    pub quick: bool,
    /// Rounds [default: 3, quick: 1].
    #[arg(long)]
    pub rounds: Option<usize>,
    /// redis-benchmark requests per test at -P 1 [default: 150000, quick: 15000].
    #[arg(long)]
    pub requests_p1: Option<u64>,
    /// redis-benchmark requests per test at -P 16 [default: 1500000, quick: 150000].
    #[arg(long)]
    pub requests_p16: Option<u64>,
    /// SETs after the rewrite, loaded from the incremental file [default: 200000, quick: 20000].
    #[arg(long)]
    pub incr_sets: Option<u64>,
    #[command(flatten)]
    pub peers: PeerArgs,
    #[command(flatten)]
    pub delays: DelayArgs,
    /// Only these figures, comma-separated [default: throughput,memory,timing].
    #[arg(long = "only", value_enum, value_delimiter = ',')]
    pub figures: Vec<Figure>,
}

impl Default for AofArgs {
    /// What the command line gives without options.
    fn default() -> Self {
        Self {
            n: None,
            quick: false,
            rounds: None,
            requests_p1: None,
            requests_p16: None,
            incr_sets: None,
            peers: PeerArgs::default(),
            delays: DelayArgs::default(),
            figures: Vec::new(),
        }
    }
}

/// The resolved settings of one run.
#[derive(Debug)]
struct Plan {
    config: AofConfig,
    figures: Vec<Figure>,
    densekv: PathBuf,
    redis: PathBuf,
    redis_benchmark: PathBuf,
}

impl Plan {
    fn new(args: &AofArgs, densekv: PathBuf) -> Self {
        let scaled = |given: Option<u64>, full: u64| {
            given.unwrap_or(if args.quick { full / 10 } else { full })
        };
        let requests_p1 = scaled(args.requests_p1, REQUESTS_P1);
        let requests_p16 = scaled(args.requests_p16, REQUESTS_P16);
        let benchmark_commands = PIPELINES
            .iter()
            .map(|&pipeline| {
                let requests = if pipeline == 1 {
                    requests_p1
                } else {
                    requests_p16
                };
                let shown = aof_throughput::arguments(0, requests, pipeline)
                    .into_iter()
                    .map(|a| if a == "0" { "P".to_owned() } else { a })
                    .collect::<Vec<_>>()
                    .join(" ");
                format!("redis-benchmark {shown}")
            })
            .collect();
        Self {
            config: AofConfig {
                n: args
                    .n
                    .unwrap_or(if args.quick { 100_000 } else { 1_000_000 }),
                quick: args.quick,
                rounds: suite::rounds(args.rounds, args.quick),
                requests_p1,
                requests_p16,
                clients: CLIENTS,
                keyspace: aof_throughput::KEYSPACE,
                incr_sets: scaled(args.incr_sets, INCR_SETS),
                densekv_delay: args.delays.densekv_delay,
                redis_delay: args.delays.redis_delay,
                batch_len: persist_server::BATCH_LEN,
                poll_ms: persist_server::POLL_INTERVAL.as_millis() as u64,
                benchmark_commands,
            },
            figures: if args.figures.is_empty() {
                vec![Figure::Throughput, Figure::Memory, Figure::Timing]
            } else {
                args.figures.clone()
            },
            densekv,
            redis: args.peers.redis(),
            redis_benchmark: args.peers.redis_benchmark(),
        }
    }

    fn binary(&self, kind: ServerKind) -> &Path {
        match kind {
            ServerKind::Densekv => &self.densekv,
            ServerKind::Redis => &self.redis,
        }
    }

    fn delay(&self, kind: ServerKind) -> i32 {
        match kind {
            ServerKind::Densekv => self.config.densekv_delay,
            ServerKind::Redis => self.config.redis_delay,
        }
    }

    fn requests(&self, pipeline: u32) -> u64 {
        if pipeline == 1 {
            self.config.requests_p1
        } else {
            self.config.requests_p16
        }
    }

    fn wants(&self, figure: Figure) -> bool {
        self.figures.contains(&figure)
    }
}

/// What the run collects as it goes.
#[derive(Debug, Default)]
struct Results {
    throughput: Vec<ThroughputSample>,
    memory: Vec<BgsaveSample>,
    timing: Vec<TimingSample>,
    notes: Vec<String>,
    failures: Failures,
}

/// Runs the suite. `Ok(false)` when it completed but something failed or a rewrite round did
/// not count.
pub fn run(args: &AofArgs) -> Result<bool, String> {
    let run = SuiteRun::start("aof");
    let (densekv, densekv_status) = args.peers.binaries()?;
    let plan = Plan::new(args, densekv);
    let mut results = Results::default();
    for round in 1..=plan.config.rounds {
        run_round(&plan, round, &mut results);
    }
    let report = report(&plan, densekv_status, results);
    print!("{}", render(&report));
    let section = || markdown_section(&report);
    let heading = aof_markdown::SECTION_HEADING;
    args.peers
        .write_outputs(args.quick, "aof.json", &report, heading, section)?;
    run.finish();
    let all_counted = report.rewrite_memory_rounds.iter().all(|s| s.counted);
    Ok(report.failures.is_empty() && all_counted)
}

fn run_round(plan: &Plan, round: usize, results: &mut Results) {
    let label = format!("[round {round}/{}]", plan.config.rounds);
    if plan.wants(Figure::Throughput) {
        for policy in POLICIES {
            for pipeline in PIPELINES {
                for kind in ordered(round) {
                    throughput_round(plan, round, (policy, pipeline), kind, &label, results);
                }
            }
        }
    }
    if plan.wants(Figure::Memory) {
        for kind in ordered(round) {
            memory_round(plan, round, kind, &label, results);
        }
    }
    if plan.wants(Figure::Timing) {
        for kind in ordered(round) {
            timing_round(plan, round, kind, &label, results);
        }
    }
}

fn throughput_round(
    plan: &Plan,
    round: usize,
    (policy, pipeline): (&'static str, u32),
    kind: ServerKind,
    label: &str,
    results: &mut Results,
) {
    eprint!("{label} {policy:<8} -P {pipeline:<2} {:<8}", kind.name());
    let measured = aof_throughput::measure(
        kind,
        plan.binary(kind),
        &plan.redis_benchmark,
        policy,
        pipeline,
        plan.requests(pipeline),
        round,
    );
    match measured {
        Ok(samples) => {
            for s in &samples {
                eprint!("  {} {:>8.0} rps", s.test, s.rps);
            }
            if let Some(s) = samples.first() {
                eprint!(
                    "  auto rewrites {}  delayed fsyncs {}",
                    s.aof_rewrites, s.aof_delayed_fsync
                );
            }
            eprintln!();
            results.throughput.extend(samples);
        }
        Err(e) => results.failures.record(format!(
            "{} {policy} -P {pipeline} round {round}: {e}",
            kind.name()
        )),
    }
}

fn memory_round(plan: &Plan, round: usize, kind: ServerKind, label: &str, results: &mut Results) {
    let delay = plan.delay(kind);
    eprint!("{label} rewrite memory {:<8} D={delay:<4}", kind.name());
    let job = BackgroundJob::Bgrewriteaof;
    match persist_bgsave::measure(job, kind, plan.binary(kind), plan.config.n, delay, round) {
        Ok(sample) => {
            eprintln!(
                " before {:>7.1} MiB  peak {:>7.1} MiB  {:.3}x  rewrite {:.2} s  overwrite {:.2} s{}",
                sample.before_bytes as f64 / f64::from(1u32 << 20),
                sample.peak_bytes as f64 / f64::from(1u32 << 20),
                sample.ratio(),
                sample.save_secs,
                sample.overwrite_secs,
                if sample.counted { "" } else { "  NOT COUNTED" }
            );
            if !sample.counted {
                results.notes.push(format!(
                    "{} rewrite memory round {round}: the rewrite ({:.2} s) ended before the \
                     overwrite's last batch (overwrite {:.2} s) with D = {delay}; the round does \
                     not count (raise the delay)",
                    kind.name(),
                    sample.save_secs,
                    sample.overwrite_secs
                ));
            }
            if kind == ServerKind::Redis && !sample.child_seen {
                results.notes.push(format!(
                    "redis rewrite memory round {round}: no child process was seen during the \
                     rewrite"
                ));
            }
            results.memory.push(sample);
        }
        Err(e) => results
            .failures
            .record(format!("{} rewrite memory round {round}: {e}", kind.name())),
    }
}

fn timing_round(plan: &Plan, round: usize, kind: ServerKind, label: &str, results: &mut Results) {
    eprint!("{label} rewrite and load {:<8}", kind.name());
    let c = &plan.config;
    match aof_timing::measure(kind, plan.binary(kind), c.n, c.incr_sets, round) {
        Ok(sample) => {
            eprintln!(
                " BGREWRITEAOF {:.3} s  restart to PONG {:.3} s  logged load {}  (base {}, incr \
                 {})",
                sample.rewrite_secs,
                sample.ready_secs,
                seconds(sample.loaded_secs),
                seconds(sample.base_loaded_secs),
                seconds(sample.incr_loaded_secs)
            );
            results.timing.push(sample);
        }
        Err(e) => results.failures.record(format!(
            "{} rewrite and load round {round}: {e}",
            kind.name()
        )),
    }
}

fn seconds(value: Option<f64>) -> String {
    value.map_or_else(|| "- (no log line)".to_owned(), |v| format!("{v:.3} s"))
}

fn report(plan: &Plan, densekv_status: String, results: Results) -> AofReport {
    let throughput = throughput_summary(&results.throughput);
    let rewrite_memory: Vec<_> = if plan.wants(Figure::Memory) {
        ServerKind::BOTH
            .iter()
            .map(|&kind| bgsave_summary(&results.memory, kind, plan.delay(kind)))
            .collect()
    } else {
        Vec::new()
    };
    let rewrite_memory_ratio = match &rewrite_memory[..] {
        [d, r] => d.peak_ratio.and_then(|d| ratio(d, r.peak_ratio)),
        _ => None,
    };
    let timing = if plan.wants(Figure::Timing) {
        timing_summary(&results.timing)
    } else {
        Vec::new()
    };
    AofReport {
        suite: "aof",
        command: suite::command_line(),
        machine: MachineInfo::read(),
        versions: Versions::read(
            &plan.redis,
            Some(&plan.redis_benchmark),
            Some(&plan.densekv),
            densekv_status,
        ),
        config: plan.config.clone(),
        headlines: headlines(&throughput, &rewrite_memory, rewrite_memory_ratio, &timing),
        throughput,
        rewrite_memory,
        rewrite_memory_ratio,
        timing,
        throughput_rounds: results.throughput,
        rewrite_memory_rounds: results.memory,
        timing_rounds: results.timing,
        notes: results.notes,
        failures: results.failures.into_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::{AofArgs, Figure, Plan};

    #[test]
    fn defaults_and_quick() {
        let plan = Plan::new(&AofArgs::default(), "densekv".into());
        let c = &plan.config;
        assert_eq!((c.n, c.rounds, c.incr_sets), (1_000_000, 3, 200_000));
        assert_eq!((c.requests_p1, c.requests_p16), (150_000, 1_500_000));
        assert_eq!((c.densekv_delay, c.redis_delay), (10, -10));
        assert_eq!(
            c.benchmark_commands,
            [
                "redis-benchmark -h 127.0.0.1 -p P -c 50 -n 150000 -r 100000 -P 1 --csv -t set,incr,lpush",
                "redis-benchmark -h 127.0.0.1 -p P -c 50 -n 1500000 -r 100000 -P 16 --csv -t set,incr,lpush",
            ]
        );
        assert!(plan.wants(Figure::Throughput) && plan.wants(Figure::Timing));
        assert_eq!((plan.requests(1), plan.requests(16)), (150_000, 1_500_000));
        let quick = AofArgs {
            quick: true,
            figures: vec![Figure::Memory],
            ..AofArgs::default()
        };
        let plan = Plan::new(&quick, "densekv".into());
        let c = &plan.config;
        assert_eq!((c.n, c.rounds, c.incr_sets), (100_000, 1, 20_000));
        assert_eq!((c.requests_p1, c.requests_p16), (15_000, 150_000));
        assert!(!plan.wants(Figure::Throughput) && plan.wants(Figure::Memory));
    }
}
