//! `bench persist`: densekv's persistence against redis-server 7.0 in one run: the memory a
//! BGSAVE costs while every key is overwritten, redis-benchmark's p99 while saves run, and the
//! speed of SAVE and of loading the file. Prints progress on stderr and the tables on stdout,
//! writes `bench-results/persist.json` and (on a full run) the `## Persistence` section of
//! `docs/BENCHMARKS.md`.
//!
//! Dimensions: server × figure × round. Each round runs every figure on densekv and on
//! redis-server, one after the other (who goes first alternates by round), each on a fresh
//! server in a temporary directory of its own:
//!
//! 1. **BGSAVE peak memory** (`persist_bgsave.rs`): peak / before while N keys are overwritten
//!    during a save slowed by `rdb-key-save-delay` (`--densekv-delay`, `--redis-delay`).
//! 2. **p99 during BGSAVE** (`persist_latency.rs`): redis-benchmark `set,get` without saves and
//!    with saves back to back.
//! 3. **SAVE and load** (`persist_speed.rs`): SAVE, a restart on the file, and each server
//!    loading the other's file.
//!
//! Shared pieces: `persist_server.rs` (directories, keys, INFO), `persist_report.rs` (medians,
//! JSON), `persist_markdown.rs` (tables, the Markdown section), and the server suite's process
//! handling, RESP client and redis-benchmark runner. Measurements run one at a time: on two
//! cores a second server would take the core the measured one's save or benchmark needs.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::heap_suite::{workspace_root, write_json};
use crate::machine::MachineInfo;
use crate::persist_bgsave::{self, BgsaveSample};
use crate::persist_latency::{self, LatencySample};
use crate::persist_markdown::{self, markdown_section, render};
use crate::persist_report::{
    PersistConfig, PersistReport, bgsave_summary, headlines, latency_summary, speed_summary,
};
use crate::persist_server::{self, BackgroundJob, TempDir};
use crate::persist_speed::{self, SpeedSample};
use crate::server_proc::ServerKind;
use crate::server_rb::CLIENTS;
use crate::server_report::Versions;
use crate::server_suite::{self, ServerArgs};
use crate::stats::ratio;
use crate::suite::{self, Failures, SuiteRun};

/// A figure of the suite; the value of `--only`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Figure {
    Bgsave,
    Latency,
    Speed,
}

/// densekv's `rdb-key-save-delay` during the overwrite: 3 µs per key makes a save of 10⁶ keys
/// last about 3 s, past the overwrite's one to two.
pub const DENSEKV_DELAY_DEFAULT: i32 = 10;
/// redis-server's: one ~50 µs sleep per ten keys in probability, about 5 s for 10⁶ keys.
pub const REDIS_DELAY_DEFAULT: i32 = -10;

/// Arguments of `bench persist`.
#[derive(Debug, Clone, Args)]
pub struct PersistArgs {
    /// Keys in the dataset [default: 1000000, quick: 100000].
    #[arg(long)]
    pub n: Option<u64>,
    /// A smoke run: N = 100000, 20000 requests, one round.
    #[arg(long)]
    pub quick: bool,
    /// Rounds [default: 3, quick: 1].
    #[arg(long)]
    pub rounds: Option<usize>,
    /// redis-benchmark requests per test and run of the latency figure [default: 200000,
    /// quick: 20000].
    #[arg(long)]
    pub requests: Option<u64>,
    #[command(flatten)]
    pub peers: PeerArgs,
    #[command(flatten)]
    pub delays: DelayArgs,
    /// Only these figures, comma-separated [default: bgsave,latency,speed].
    #[arg(long = "only", value_enum, value_delimiter = ',')]
    pub figures: Vec<Figure>,
}

/// How the persistence suites (`persist`, `aof`) slow the background job during the overwrite.
#[derive(Debug, Clone, Copy, Args)]
pub struct DelayArgs {
    /// densekv's rdb-key-save-delay during the overwrite: µs per key.
    #[arg(long, default_value_t = DENSEKV_DELAY_DEFAULT, allow_negative_numbers = true)]
    pub densekv_delay: i32,
    /// redis-server's rdb-key-save-delay during the overwrite: negative, 1 µs per that many keys
    /// (in probability).
    #[arg(long, default_value_t = REDIS_DELAY_DEFAULT, allow_negative_numbers = true)]
    pub redis_delay: i32,
}

impl Default for DelayArgs {
    /// What the command line gives without options.
    fn default() -> Self {
        Self {
            densekv_delay: DENSEKV_DELAY_DEFAULT,
            redis_delay: REDIS_DELAY_DEFAULT,
        }
    }
}

/// The options the suites beside redis-server share: the binaries and where the results go.
#[derive(Debug, Clone, Args)]
pub struct PeerArgs {
    /// The densekv binary [default: `cargo build --release -p server`, then
    /// `<target>/release/densekv`].
    #[arg(long)]
    pub densekv: Option<PathBuf>,
    /// The redis-server binary [default: redis-server].
    #[arg(long)]
    pub redis: Option<PathBuf>,
    /// The redis-benchmark binary [default: redis-benchmark].
    #[arg(long)]
    pub redis_benchmark: Option<PathBuf>,
    /// Directory for the suite's JSON [default: `bench-results/` in the workspace root].
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// Write no section of the suite into `docs/BENCHMARKS.md` (never written with --quick).
    #[arg(long)]
    pub no_docs: bool,
}

impl Default for PeerArgs {
    /// What the command line gives without options.
    fn default() -> Self {
        Self {
            densekv: None,
            redis: None,
            redis_benchmark: None,
            out_dir: None,
            no_docs: false,
        }
    }
}

impl PeerArgs {
    /// Checks that redis-server runs; returns the densekv binary (built unless given) and how
    /// it was found (the report's `densekv_status`).
    pub fn binaries(&self) -> Result<(PathBuf, String), String> {
        server_suite::ensure_redis(&self.redis())?;
        let (densekv, densekv_status) = server_suite::resolve_densekv(&ServerArgs {
            densekv: self.densekv.clone(),
            ..ServerArgs::default()
        });
        let densekv = densekv.ok_or_else(|| format!("densekv: {densekv_status}"))?;
        Ok((densekv, densekv_status))
    }

    /// The redis-server binary.
    pub fn redis(&self) -> PathBuf {
        self.redis.clone().unwrap_or_else(|| "redis-server".into())
    }

    /// The redis-benchmark binary.
    pub fn redis_benchmark(&self) -> PathBuf {
        self.redis_benchmark
            .clone()
            .unwrap_or_else(|| "redis-benchmark".into())
    }

    /// The output directory: `--out-dir`, else `bench-results/` in the workspace root.
    pub fn results_dir(&self) -> PathBuf {
        self.out_dir
            .clone()
            .unwrap_or_else(|| workspace_root().join("bench-results"))
    }

    /// Writes the JSON as `json_name`, and unless `quick` or `--no-docs` the section `heading`
    /// of `docs/BENCHMARKS.md` (`section`).
    pub fn write_outputs(
        &self,
        quick: bool,
        json_name: &str,
        report: &impl serde::Serialize,
        heading: &str,
        section: impl FnOnce() -> String,
    ) -> Result<(), String> {
        let json_path = write_json(&self.results_dir(), json_name, report)?;
        println!("\nwrote {}", json_path.display());
        if quick || self.no_docs {
            return Ok(());
        }
        let md_path = workspace_root().join("docs").join("BENCHMARKS.md");
        let doc = std::fs::read_to_string(&md_path).unwrap_or_default();
        std::fs::write(
            &md_path,
            persist_markdown::splice_at(&doc, heading, &section()),
        )
        .map_err(|e| format!("cannot write {}: {e}", md_path.display()))?;
        println!("wrote the {heading} section of {}", md_path.display());
        Ok(())
    }

    /// Writes `<suite>.json` and `<suite>.md`, the section `heading` (`section`) to be pasted
    /// into `docs/BENCHMARKS.md` by hand, into the output directory; returns the JSON's path.
    /// The suites that never edit `docs/BENCHMARKS.md` (`evict`, `pubsub`) write this way.
    pub fn write_json_and_section(
        &self,
        suite: &str,
        report: &impl serde::Serialize,
        heading: &str,
        section: impl FnOnce() -> String,
    ) -> Result<PathBuf, String> {
        let out_dir = self.results_dir();
        let json_path = write_json(&out_dir, &format!("{suite}.json"), report)?;
        println!("\nwrote {}", json_path.display());
        let md_path = out_dir.join(format!("{suite}.md"));
        std::fs::write(&md_path, section())
            .map_err(|e| format!("cannot write {}: {e}", md_path.display()))?;
        println!(
            "wrote {} (the {heading} section, to paste into docs/BENCHMARKS.md)",
            md_path.display()
        );
        Ok(json_path)
    }
}

impl Default for PersistArgs {
    /// What the command line gives without options.
    fn default() -> Self {
        Self {
            n: None,
            quick: false,
            rounds: None,
            requests: None,
            peers: PeerArgs::default(),
            delays: DelayArgs::default(),
            figures: Vec::new(),
        }
    }
}

/// The resolved settings of one run.
#[derive(Debug)]
struct Plan {
    config: PersistConfig,
    figures: Vec<Figure>,
    densekv: PathBuf,
    redis: PathBuf,
    redis_benchmark: PathBuf,
}

impl Plan {
    fn new(args: &PersistArgs, densekv: PathBuf) -> Self {
        let n = args
            .n
            .unwrap_or(if args.quick { 100_000 } else { 1_000_000 });
        let requests = args
            .requests
            .unwrap_or(if args.quick { 20_000 } else { 200_000 });
        let shown = persist_latency::arguments(0, requests, n)
            .into_iter()
            .map(|a| if a == "0" { "P".to_owned() } else { a })
            .collect::<Vec<_>>()
            .join(" ");
        Self {
            config: PersistConfig {
                n,
                quick: args.quick,
                rounds: suite::rounds(args.rounds, args.quick),
                densekv_delay: args.delays.densekv_delay,
                redis_delay: args.delays.redis_delay,
                requests,
                clients: CLIENTS,
                batch_len: persist_server::BATCH_LEN,
                poll_ms: persist_server::POLL_INTERVAL.as_millis() as u64,
                benchmark_command: format!("redis-benchmark {shown}"),
            },
            figures: if args.figures.is_empty() {
                vec![Figure::Bgsave, Figure::Latency, Figure::Speed]
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

    fn wants(&self, figure: Figure) -> bool {
        self.figures.contains(&figure)
    }
}

/// What the run collects as it goes.
#[derive(Debug, Default)]
struct Results {
    bgsave: Vec<BgsaveSample>,
    latency: Vec<LatencySample>,
    speed: Vec<SpeedSample>,
    notes: Vec<String>,
    failures: Failures,
}

/// The servers in running order for `round`: densekv first at odd rounds, redis at even ones
/// (the aof suite's order too).
pub fn ordered(round: usize) -> [ServerKind; 2] {
    let [d, r] = ServerKind::BOTH;
    if round.is_multiple_of(2) {
        [r, d]
    } else {
        [d, r]
    }
}

/// Runs the suite. `Ok(false)` when it completed but something failed or a BGSAVE round did
/// not count.
pub fn run(args: &PersistArgs) -> Result<bool, String> {
    let run = SuiteRun::start("persist");
    let (densekv, densekv_status) = args.peers.binaries()?;
    let plan = Plan::new(args, densekv);
    let mut results = Results::default();
    for round in 1..=plan.config.rounds {
        run_round(&plan, round, &mut results);
    }
    let report = report(&plan, densekv_status, results);
    print!("{}", render(&report));
    let section = || markdown_section(&report);
    let heading = persist_markdown::SECTION_HEADING;
    args.peers
        .write_outputs(args.quick, "persist.json", &report, heading, section)?;
    run.finish();
    let all_counted = report.bgsave_rounds.iter().all(|s| s.counted);
    Ok(report.failures.is_empty() && all_counted)
}

fn run_round(plan: &Plan, round: usize, results: &mut Results) {
    let label = format!("[round {round}/{}]", plan.config.rounds);
    if plan.wants(Figure::Bgsave) {
        for kind in ordered(round) {
            bgsave_round(plan, round, kind, &label, results);
        }
    }
    if plan.wants(Figure::Latency) {
        for kind in ordered(round) {
            latency_round(plan, round, kind, &label, results);
        }
    }
    if plan.wants(Figure::Speed) {
        speed_round(plan, round, &label, results);
    }
}

fn bgsave_round(plan: &Plan, round: usize, kind: ServerKind, label: &str, results: &mut Results) {
    let delay = plan.delay(kind);
    eprint!("{label} bgsave  {:<8} D={delay:<4}", kind.name());
    let n = plan.config.n;
    let job = BackgroundJob::Bgsave;
    match persist_bgsave::measure(job, kind, plan.binary(kind), n, delay, round) {
        Ok(sample) => {
            eprintln!(
                " before {:>7.1} MiB  peak {:>7.1} MiB  {:.3}x  save {:.2} s  overwrite {:.2} s{}",
                sample.before_bytes as f64 / f64::from(1u32 << 20),
                sample.peak_bytes as f64 / f64::from(1u32 << 20),
                sample.ratio(),
                sample.save_secs,
                sample.overwrite_secs,
                if sample.counted { "" } else { "  NOT COUNTED" }
            );
            if !sample.counted {
                results.notes.push(format!(
                    "{} bgsave round {round}: the save ({:.2} s) ended before the overwrite's \
                     last batch (overwrite {:.2} s) with D = {delay}; the round does not count \
                     (raise the delay)",
                    kind.name(),
                    sample.save_secs,
                    sample.overwrite_secs
                ));
            }
            if kind == ServerKind::Redis && !sample.child_seen {
                results.notes.push(format!(
                    "redis bgsave round {round}: no child process was seen during the save"
                ));
            }
            results.bgsave.push(sample);
        }
        Err(e) => results
            .failures
            .record(format!("{} bgsave round {round}: {e}", kind.name())),
    }
}

fn latency_round(plan: &Plan, round: usize, kind: ServerKind, label: &str, results: &mut Results) {
    eprint!("{label} latency {:<8}", kind.name());
    let c = &plan.config;
    let measured = persist_latency::measure(
        kind,
        plan.binary(kind),
        &plan.redis_benchmark,
        c.n,
        c.requests,
        round,
    );
    match measured {
        Ok(samples) => {
            for s in &samples {
                eprint!(
                    "  {} p99 {:.3} → {:.3} ms ({:.2}x)",
                    s.test,
                    s.p99_without_ms,
                    s.p99_with_ms,
                    s.ratio()
                );
            }
            if let Some(s) = samples.first() {
                eprint!(
                    "  {} saves, running {:.0}%",
                    s.saves_started,
                    s.busy_fraction * 100.0
                );
            }
            eprintln!();
            results.latency.extend(samples);
        }
        Err(e) => results
            .failures
            .record(format!("{} latency round {round}: {e}", kind.name())),
    }
}

/// SAVE and reload on both servers, then each on the other's file.
fn speed_round(plan: &Plan, round: usize, label: &str, results: &mut Results) {
    let mut done: Vec<(SpeedSample, TempDir)> = Vec::new();
    for kind in ordered(round) {
        eprint!("{label} speed   {:<8}", kind.name());
        let outcome = TempDir::new(&format!("speed-{}", kind.name())).and_then(|dir| {
            persist_speed::save_and_reload(kind, plan.binary(kind), plan.config.n, &dir, round)
                .map(|sample| (sample, dir))
        });
        match outcome {
            Ok((sample, dir)) => {
                eprintln!(
                    " SAVE {:.3} s  restart to PONG {:.3} s  logged load {}",
                    sample.save_secs,
                    sample.ready_secs,
                    seconds(sample.loaded_secs)
                );
                done.push((sample, dir));
            }
            Err(e) => results
                .failures
                .record(format!("{} speed round {round}: {e}", kind.name())),
        }
    }
    if let [(first, first_dir), (second, second_dir)] = &mut done[..] {
        for (sample, other) in [(first, &*second_dir), (second, &*first_dir)] {
            let kind = sample.server;
            eprint!("{label} cross   {:<8}", kind.name());
            match persist_speed::cross_load(sample, plan.binary(kind), plan.config.n, other) {
                Ok(()) => eprintln!(
                    " the other's file: to PONG {}  logged load {}",
                    seconds(sample.cross_ready_secs),
                    seconds(sample.cross_loaded_secs)
                ),
                Err(e) => results.failures.record(format!("speed round {round}: {e}")),
            }
        }
    }
    results
        .speed
        .extend(done.into_iter().map(|(sample, _)| sample));
}

fn seconds(value: Option<f64>) -> String {
    value.map_or_else(|| "- (no log line)".to_owned(), |v| format!("{v:.3} s"))
}

fn report(plan: &Plan, densekv_status: String, results: Results) -> PersistReport {
    let bgsave: Vec<_> = if plan.wants(Figure::Bgsave) {
        ServerKind::BOTH
            .iter()
            .map(|&kind| bgsave_summary(&results.bgsave, kind, plan.delay(kind)))
            .collect()
    } else {
        Vec::new()
    };
    let bgsave_ratio = match &bgsave[..] {
        [d, r] => d.peak_ratio.and_then(|d| ratio(d, r.peak_ratio)),
        _ => None,
    };
    let latency = if plan.wants(Figure::Latency) {
        latency_summary(&results.latency)
    } else {
        Vec::new()
    };
    let speed = if plan.wants(Figure::Speed) {
        speed_summary(&results.speed)
    } else {
        Vec::new()
    };
    PersistReport {
        suite: "persist",
        command: suite::command_line(),
        machine: MachineInfo::read(),
        versions: Versions::read(
            &plan.redis,
            Some(&plan.redis_benchmark),
            Some(&plan.densekv),
            densekv_status,
        ),
        config: plan.config.clone(),
        headlines: headlines(&bgsave, bgsave_ratio, &latency, &speed),
        bgsave,
        bgsave_ratio,
        latency,
        speed,
        bgsave_rounds: results.bgsave,
        latency_rounds: results.latency,
        speed_rounds: results.speed,
        notes: results.notes,
        failures: results.failures.into_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::{Figure, PersistArgs, Plan, ordered};
    use crate::server_proc::ServerKind;

    #[test]
    fn defaults_and_quick() {
        let plan = Plan::new(&PersistArgs::default(), "densekv".into());
        assert_eq!((plan.config.n, plan.config.rounds), (1_000_000, 3));
        assert_eq!(plan.config.requests, 200_000);
        assert_eq!(
            (plan.config.densekv_delay, plan.config.redis_delay),
            (10, -10)
        );
        assert_eq!(
            plan.config.benchmark_command,
            "redis-benchmark -h 127.0.0.1 -p P -c 50 -n 200000 -r 1000000 -P 1 --csv -t set,get -d 16"
        );
        assert!(plan.wants(Figure::Bgsave) && plan.wants(Figure::Speed));
        let quick = PersistArgs {
            quick: true,
            figures: vec![Figure::Speed],
            ..PersistArgs::default()
        };
        let plan = Plan::new(&quick, "densekv".into());
        assert_eq!((plan.config.n, plan.config.rounds), (100_000, 1));
        assert!(!plan.wants(Figure::Bgsave));
    }

    #[test]
    fn who_goes_first_alternates() {
        assert_eq!(ordered(1), [ServerKind::Densekv, ServerKind::Redis]);
        assert_eq!(ordered(2), [ServerKind::Redis, ServerKind::Densekv]);
    }
}
