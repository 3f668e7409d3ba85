//! `bench evict`: how densekv gives memory back and keeps to `maxmemory`, against redis-server
//! 7.0 in one run. Prints progress on stderr and the tables on stdout, writes `evict.json` and
//! `evict.md` (the Markdown section, to be pasted into `docs/BENCHMARKS.md` by hand) into the
//! output directory, and draws two charts with `bench/plot_evict.py`.
//!
//! Dimensions: server × scenario × round (× policy in the cache scenario). Each round runs every
//! scenario on densekv and on redis-server, one after the other (who goes first alternates by
//! round), each on a fresh server:
//!
//! 1. **delete-half** and 2. **delete-all** (`evict_delete.rs`): 1M keys of 16-byte values, DEL
//!    of every other key or of all, then VmRSS and used_memory every 100 ms for 6 s; the figure
//!    is the reading at 5 s over the one before the deletes.
//! 3. **lru-fill** (`evict_fill.rs`): 1.5M SETs of 100-byte values under `--maxmemory 32mb
//!    allkeys-lru`: failed writes, max used_memory / maxmemory, survival of the newest keys, keys
//!    held.
//! 4. **zipf** (`evict_cache.rs`, `evict_zipf.rs`): a Zipf(0.99) GET-then-SET-on-miss stream over
//!    2M keys under `--maxmemory 16mb`, `allkeys-lfu` then `allkeys-lru`: the miss ratio.
//! 5. **throughput** (`evict_throughput.rs`): redis-benchmark SET -P 16 over 10M keys on a
//!    server filled past `--maxmemory 32mb allkeys-lru`.
//!
//! Shared pieces: `evict_server.rs` (keys, values, loads, INFO, the time bound, the sampling
//! grid), `evict_report.rs` (medians, ratios, targets, JSON), `evict_markdown.rs` (tables and
//! the section), and the server suite's process handling, RESP client and redis-benchmark CSV
//! parser. Every measurement has a time bound (`--limit-secs`); a server that never evicts
//! misses its targets but never stalls the run. Measurements run one at a time: on two cores a
//! second server would take the measured one's core.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::evict_cache::{self, CacheParams, CacheSample};
use crate::evict_delete::{self, DeleteParams, DeleteSample, Deletion};
use crate::evict_fill::{self, FillSample};
use crate::evict_markdown::{self, markdown_section, render};
use crate::evict_report::{self, EvictConfig, EvictReport};
use crate::evict_server::{Deadline, SAMPLE_INTERVAL};
use crate::evict_throughput::{self, ThroughputSample};
use crate::heap_suite::workspace_root;
use crate::machine::MachineInfo;
use crate::persist_suite::{PeerArgs, ordered};
use crate::server_proc::ServerKind;
use crate::server_report::Versions;
use crate::suite::{self, Failures, SuiteRun};

/// A scenario of the suite; the value of `--only`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    DeleteHalf,
    DeleteAll,
    LruFill,
    Zipf,
    Throughput,
}

/// Arguments of `bench evict`.
#[derive(Debug, Clone, Args)]
pub struct EvictArgs {
    /// A smoke run: a tenth of the keys and requests, shorter sampling, one round.
    #[arg(long)]
    pub quick: bool,
    /// Rounds [default: 3, quick: 1].
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Keys of the delete scenarios [default: 1000000, quick: 100000].
    #[arg(long)]
    pub n: Option<u64>,
    /// Seconds sampled after the deletes [default: 6, quick: 3].
    #[arg(long)]
    pub observe_secs: Option<f64>,
    /// Seconds after the deletes at which the figure is read [default: 5, quick: 2].
    #[arg(long)]
    pub at_secs: Option<f64>,
    /// SETs of the lru-fill scenario [default: 1500000, quick: 300000].
    #[arg(long)]
    pub fill_sets: Option<u64>,
    /// Distinct keys of the Zipf stream [default: 2000000].
    #[arg(long)]
    pub zipf_keys: Option<u64>,
    /// Warm-up requests of the Zipf stream [default: 2000000, quick: 200000].
    #[arg(long)]
    pub zipf_warmup: Option<u64>,
    /// Measured requests of the Zipf stream [default: 3000000, quick: 300000].
    #[arg(long)]
    pub zipf_requests: Option<u64>,
    /// redis-benchmark requests of the throughput scenario [default: 2000000, quick: 200000].
    #[arg(long)]
    pub requests: Option<u64>,
    /// The time bound of each measurement (one scenario on one server), in seconds.
    #[arg(long, default_value_t = 300)]
    pub limit_secs: u64,
    /// Where the charts go [default: `docs/` on a full run; the output directory with --quick
    /// or --no-docs].
    #[arg(long)]
    pub charts_dir: Option<PathBuf>,
    /// The binaries and the output directory (the BGSAVE delays are not used here; --no-docs
    /// sends the charts to the output directory).
    #[command(flatten)]
    pub peers: PeerArgs,
    /// Only these scenarios, comma-separated [default: all five].
    #[arg(long = "only", value_enum, value_delimiter = ',')]
    pub scenarios: Vec<Scenario>,
}

impl Default for EvictArgs {
    /// What the command line gives without options.
    fn default() -> Self {
        Self {
            quick: false,
            rounds: None,
            n: None,
            observe_secs: None,
            at_secs: None,
            fill_sets: None,
            zipf_keys: None,
            zipf_warmup: None,
            zipf_requests: None,
            requests: None,
            limit_secs: 300,
            charts_dir: None,
            peers: PeerArgs::default(),
            scenarios: Vec::new(),
        }
    }
}

/// The resolved settings of one run.
#[derive(Debug)]
struct Plan {
    config: EvictConfig,
    scenarios: Vec<Scenario>,
    densekv: PathBuf,
    redis: PathBuf,
    redis_benchmark: PathBuf,
}

impl Plan {
    fn new(args: &EvictArgs, densekv: PathBuf) -> Self {
        let pick = |given: Option<u64>, full: u64, quick: u64| {
            given.unwrap_or(if args.quick { quick } else { full })
        };
        let pick_secs = |given: Option<f64>, full: f64, quick: f64| {
            given.unwrap_or(if args.quick { quick } else { full })
        };
        let throughput_requests = pick(args.requests, 2_000_000, 200_000);
        let shown = evict_throughput::arguments(0, throughput_requests)
            .into_iter()
            .map(|a| if a == "0" { "P".to_owned() } else { a })
            .collect::<Vec<_>>()
            .join(" ");
        Self {
            config: EvictConfig {
                quick: args.quick,
                rounds: suite::rounds(args.rounds, args.quick),
                n: pick(args.n, 1_000_000, 100_000),
                observe_secs: pick_secs(args.observe_secs, 6.0, 3.0),
                at_secs: pick_secs(args.at_secs, 5.0, 2.0),
                sample_ms: SAMPLE_INTERVAL.as_millis() as u64,
                fill_sets: pick(args.fill_sets, 1_500_000, 300_000),
                fill_value_bytes: evict_fill::VALUE_BYTES,
                fill_batch_len: evict_fill::BATCH_LEN,
                fill_maxmemory: evict_fill::MAXMEMORY,
                recent_window: evict_fill::RECENT_WINDOW,
                zipf_keys: pick(args.zipf_keys, 2_000_000, 2_000_000).max(1),
                zipf_exponent: evict_cache::EXPONENT,
                zipf_warmup: pick(args.zipf_warmup, 2_000_000, 200_000),
                zipf_requests: pick(args.zipf_requests, 3_000_000, 300_000),
                zipf_batch_len: evict_cache::BATCH_LEN,
                zipf_maxmemory: evict_cache::MAXMEMORY,
                throughput_maxmemory: evict_throughput::MAXMEMORY,
                throughput_requests,
                benchmark_command: format!("redis-benchmark {shown}"),
                limit_secs: args.limit_secs,
            },
            scenarios: if args.scenarios.is_empty() {
                vec![
                    Scenario::DeleteHalf,
                    Scenario::DeleteAll,
                    Scenario::LruFill,
                    Scenario::Zipf,
                    Scenario::Throughput,
                ]
            } else {
                args.scenarios.clone()
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

    fn wants(&self, scenario: Scenario) -> bool {
        self.scenarios.contains(&scenario)
    }

    /// A fresh time bound for one measurement.
    fn deadline(&self) -> Deadline {
        Deadline::new(Duration::from_secs(self.config.limit_secs))
    }

    fn delete_params(&self) -> DeleteParams {
        DeleteParams {
            n: self.config.n,
            observe: Duration::from_secs_f64(self.config.observe_secs),
            at: Duration::from_secs_f64(self.config.at_secs),
        }
    }

    fn cache_params(&self) -> CacheParams {
        CacheParams {
            keys: self.config.zipf_keys,
            warmup: self.config.zipf_warmup,
            requests: self.config.zipf_requests,
        }
    }
}

/// What the run collects as it goes.
#[derive(Debug, Default)]
struct Results {
    delete: Vec<DeleteSample>,
    fill: Vec<FillSample>,
    cache: Vec<CacheSample>,
    throughput: Vec<ThroughputSample>,
    failures: Failures,
}

/// Runs the suite. `Ok(false)` when it completed but a measurement failed; missed targets are
/// results, not failures.
pub fn run(args: &EvictArgs) -> Result<bool, String> {
    let run = SuiteRun::start("evict");
    let (densekv, densekv_status) = args.peers.binaries()?;
    let plan = Plan::new(args, densekv);
    let c = &plan.config;
    if !(c.at_secs >= 0.0 && c.at_secs <= c.observe_secs) {
        return Err(format!(
            "--at-secs {} must lie within --observe-secs {}",
            c.at_secs, c.observe_secs
        ));
    }
    let mut results = Results::default();
    for round in 1..=plan.config.rounds {
        run_round(&plan, round, &mut results);
    }
    let report = report(&plan, densekv_status, results);
    print!("{}", render(&report));
    write_outputs(args, &report)?;
    run.finish();
    Ok(report.failures.is_empty())
}

fn run_round(plan: &Plan, round: usize, results: &mut Results) {
    let label = format!("[round {round}/{}]", plan.config.rounds);
    for (scenario, deletion) in [
        (Scenario::DeleteHalf, Deletion::Half),
        (Scenario::DeleteAll, Deletion::All),
    ] {
        if plan.wants(scenario) {
            for kind in ordered(round) {
                delete_round(plan, round, deletion, kind, &label, results);
            }
        }
    }
    if plan.wants(Scenario::LruFill) {
        for kind in ordered(round) {
            fill_round(plan, round, kind, &label, results);
        }
    }
    if plan.wants(Scenario::Zipf) {
        for policy in evict_cache::POLICIES {
            for kind in ordered(round) {
                cache_round(plan, round, policy, kind, &label, results);
            }
        }
    }
    if plan.wants(Scenario::Throughput) {
        for kind in ordered(round) {
            throughput_round(plan, round, kind, &label, results);
        }
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 20)
}

fn ratio_or_dash(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"))
}

fn delete_round(
    plan: &Plan,
    round: usize,
    deletion: Deletion,
    kind: ServerKind,
    label: &str,
    results: &mut Results,
) {
    eprint!("{label} {:<12} {:<8}", deletion.name(), kind.name());
    let params = plan.delete_params();
    let deadline = plan.deadline();
    match evict_delete::measure(kind, plan.binary(kind), deletion, params, round, &deadline) {
        Ok(s) => {
            eprintln!(
                " empty {:.1} MiB  full {:.1} MiB  DEL {:.2} s  at {} s: VmRSS/full {}  \
                 used/full {}",
                mib(s.empty_rss_bytes),
                mib(s.full_rss_bytes),
                s.delete_secs,
                s.at_secs
                    .map_or_else(|| "-".to_owned(), |t| format!("{t:.2}")),
                ratio_or_dash(s.rss_ratio),
                ratio_or_dash(s.used_ratio)
            );
            results.delete.push(s);
        }
        Err(e) => results.failures.record(format!(
            "{} {} round {round}: {e}",
            kind.name(),
            deletion.name()
        )),
    }
}

fn fill_round(plan: &Plan, round: usize, kind: ServerKind, label: &str, results: &mut Results) {
    eprint!("{label} lru-fill     {:<8}", kind.name());
    let sets = plan.config.fill_sets;
    match evict_fill::measure(kind, plan.binary(kind), sets, round, &plan.deadline()) {
        Ok(s) => {
            eprintln!(
                " {:.1} s  failed {}  max used/maxmemory {}  last keys {}/{}  DBSIZE {}  \
                 evicted {}",
                s.fill_secs,
                s.failed_writes,
                ratio_or_dash(s.max_used_ratio),
                s.recent_present,
                s.recent_checked,
                s.dbsize,
                s.evicted_keys
                    .map_or_else(|| "-".to_owned(), |e| e.to_string())
            );
            results.fill.push(s);
        }
        Err(e) => results
            .failures
            .record(format!("{} lru-fill round {round}: {e}", kind.name())),
    }
}

fn cache_round(
    plan: &Plan,
    round: usize,
    policy: &'static str,
    kind: ServerKind,
    label: &str,
    results: &mut Results,
) {
    eprint!("{label} zipf {policy} {:<8}", kind.name());
    let params = plan.cache_params();
    let deadline = plan.deadline();
    match evict_cache::measure(kind, plan.binary(kind), policy, params, round, &deadline) {
        Ok(s) => {
            eprintln!(
                " miss ratio {:.4}  max used/maxmemory {}  DBSIZE {}  {:.0} req/s",
                s.miss_ratio,
                ratio_or_dash(s.max_used_ratio),
                s.dbsize,
                s.requests_per_sec
            );
            results.cache.push(s);
        }
        Err(e) => results
            .failures
            .record(format!("{} zipf {policy} round {round}: {e}", kind.name())),
    }
}

fn throughput_round(
    plan: &Plan,
    round: usize,
    kind: ServerKind,
    label: &str,
    results: &mut Results,
) {
    eprint!("{label} throughput   {:<8}", kind.name());
    let measured = evict_throughput::measure(
        kind,
        plan.binary(kind),
        &plan.redis_benchmark,
        plan.config.throughput_requests,
        round,
        &plan.deadline(),
    );
    match measured {
        Ok(s) => {
            eprintln!(
                " filled {} keys ({:.1} s)  SET {:.0} rps  max used/maxmemory {}  DBSIZE {}",
                s.filled_keys,
                s.fill_secs,
                s.rps,
                ratio_or_dash(s.max_used_ratio),
                s.dbsize_after
            );
            results.throughput.push(s);
        }
        Err(e) => results
            .failures
            .record(format!("{} throughput round {round}: {e}", kind.name())),
    }
}

fn report(plan: &Plan, densekv_status: String, results: Results) -> EvictReport {
    let c = &plan.config;
    let mut figures = evict_report::delete_rows(&results.delete, c.at_secs);
    figures.extend(evict_report::fill_rows(&results.fill));
    figures.extend(evict_report::cache_rows(&results.cache));
    figures.extend(evict_report::throughput_rows(&results.throughput));
    EvictReport {
        suite: "evict",
        command: suite::command_line(),
        machine: MachineInfo::read(),
        versions: Versions::read(
            &plan.redis,
            Some(&plan.redis_benchmark),
            Some(&plan.densekv),
            densekv_status,
        ),
        config: c.clone(),
        headlines: evict_report::headlines(&figures, c.at_secs),
        notes: evict_report::limit_notes(&figures),
        figures,
        delete_rounds: results.delete,
        fill_rounds: results.fill,
        cache_rounds: results.cache,
        throughput_rounds: results.throughput,
        failures: results.failures.into_vec(),
    }
}

/// Writes `evict.json` and `evict.md` into the output directory and draws the charts.
fn write_outputs(args: &EvictArgs, report: &EvictReport) -> Result<(), String> {
    let section = || markdown_section(report);
    let heading = evict_markdown::SECTION_HEADING;
    let json_path = args
        .peers
        .write_json_and_section("evict", report, heading, section)?;
    let root = workspace_root();
    let charts_dir = match &args.charts_dir {
        Some(dir) => dir.clone(),
        None if args.quick || args.peers.no_docs => args.peers.results_dir(),
        None => root.join("docs"),
    };
    crate::server_suite::plot(&root, "plot_evict.py", &json_path, &charts_dir);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{EvictArgs, Plan, Scenario};

    #[test]
    fn defaults_and_quick() {
        let plan = Plan::new(&EvictArgs::default(), "densekv".into());
        let c = &plan.config;
        assert_eq!((c.n, c.rounds, c.fill_sets), (1_000_000, 3, 1_500_000));
        assert_eq!((c.observe_secs, c.at_secs), (6.0, 5.0));
        assert_eq!(
            (c.zipf_keys, c.zipf_warmup, c.zipf_requests),
            (2_000_000, 2_000_000, 3_000_000)
        );
        assert_eq!(
            c.benchmark_command,
            "redis-benchmark -h 127.0.0.1 -p P -c 50 -n 2000000 -r 10000000 -P 16 --csv -t set -d 16"
        );
        assert!(plan.wants(Scenario::DeleteHalf) && plan.wants(Scenario::Throughput));
        let quick = EvictArgs {
            quick: true,
            scenarios: vec![Scenario::Zipf],
            zipf_requests: Some(1000),
            ..EvictArgs::default()
        };
        let plan = Plan::new(&quick, "densekv".into());
        let c = &plan.config;
        assert_eq!((c.n, c.rounds, c.fill_sets), (100_000, 1, 300_000));
        assert_eq!((c.zipf_warmup, c.zipf_requests), (200_000, 1000));
        assert!(plan.wants(Scenario::Zipf) && !plan.wants(Scenario::LruFill));
    }
}
