//! `bench types`: densekv's bitmaps, HyperLogLogs and geo sets against redis-server 7.0 in one
//! run: the memory a large bitmap and a large geo set take, and how fast BITCOUNT, PFADD,
//! PFCOUNT and GEOSEARCH are answered. Prints progress on stderr and the tables on stdout, and
//! writes `types.json` and `types.md` (the Markdown section, to be pasted into
//! `docs/BENCHMARKS.md` by hand) into the output directory.
//!
//! Dimensions: server × scenario × round. Each round runs every scenario on densekv and on
//! redis-server, one after the other (who goes first alternates by round), each on a fresh
//! server:
//!
//! 1. **bitmap** (`types_bitmap.rs`) — a 10⁸-bit bitmap in one key built *sparse* (the last bit,
//!    then SETBIT at 100,000 random offsets), *dense* (SETRANGE of random bytes over every byte)
//!    and by *growth* (SETBIT one bit per 4 KiB page at increasing offsets): ΔVmRSS, and
//!    BITCOUNT of the whole key, one call at a time (calls/s from the median call).
//! 2. **pfadd** (`types_hll.rs`) — redis-benchmark `PFADD hll:__rand_int__
//!    ele:__rand_int__:__rand_int__:__rand_int__` with `-r 100` over 100 prefilled dense
//!    HyperLogLogs, at `-P 1` and `-P 16`: requests/s.
//! 3. **pfcount** (`types_hll.rs`) — redis-benchmark `PFCOUNT` of 10 dense HyperLogLogs of
//!    100,000 elements each, at `-P 1` and `-P 16`: requests/s.
//! 4. **geo** (`types_geo.rs`) — 10⁶ members GEOADDed into one key: ΔVmRSS per member; then
//!    `GEOSEARCH … BYRADIUS <r> km ASC COUNT 10` at random points, r holding ~100 members,
//!    16 in flight and one at a time from our own client: queries/s.
//!
//! Shared pieces: `types_driver.rs` (checked pipelined loads, memory around a load, timed
//! calls, probes), `types_report.rs` (medians, ratios, targets, JSON), `types_markdown.rs`
//! (the text); the server suite's process handling, memory protocol, redis-benchmark runner and
//! RESP client, and the other peer suites' figure rows and tables.
//!
//! A densekv that answers one of a scenario's commands with an error is not measured in that
//! scenario: before the rounds each scenario's commands are sent once to a fresh densekv (a
//! probe), and an error reply during a measurement does the same for the rounds after it. The
//! note names the command and the reply, the scenario's densekv column shows `-` and its target
//! *densekv not measured*, and the other scenarios and redis-server's figures are still
//! measured; this is not a failure of the run (a crash or a wrong reply is).
//! `--no-densekv` skips densekv on purpose, and `--densekv $(command -v redis-server)` runs the
//! whole suite against two redis-servers (how it was checked before densekv had the commands).
//! Measurements run one at a time: on two cores a second server would take the measured one's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::machine::MachineInfo;
use crate::persist_suite::{PeerArgs, ordered};
use crate::server_proc::{ServerKind, ServerProcess};
use crate::server_report::Versions;
use crate::suite::{self, Failures, SuiteRun};
use crate::types_bitmap::{self, BitmapBuild, BitmapParams};
use crate::types_driver::{Expect, MeasureError, probe};
use crate::types_geo::{self, GeoParams};
use crate::types_hll::{self, HllParams};
use crate::types_markdown::{SECTION_HEADING, markdown_section, render};
use crate::types_report::{
    self, BitmapSample, GEO_SCENARIO, GeoSample, HllCommand, HllSample, NotMeasured, TypesConfig,
    TypesReport, bitmap_scenario, hll_scenario,
};

/// A scenario of the suite; the value of `--only`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    Bitmap,
    Pfadd,
    Pfcount,
    Geo,
}

impl Scenario {
    pub const ALL: [Self; 4] = [Self::Bitmap, Self::Pfadd, Self::Pfcount, Self::Geo];

    pub fn name(self) -> &'static str {
        match self {
            Self::Bitmap => "bitmap",
            Self::Pfadd => "pfadd",
            Self::Pfcount => "pfcount",
            Self::Geo => "geo",
        }
    }

    /// How the names of the scenario's rows start (`bitmap sparse`, `PFADD, -P 16`, …).
    fn row_prefix(self) -> &'static str {
        match self {
            Self::Bitmap => "bitmap ",
            Self::Pfadd => "PFADD",
            Self::Pfcount => "PFCOUNT",
            Self::Geo => GEO_SCENARIO,
        }
    }

    /// The commands a probe sends once, each with the reply kind it must get: every command
    /// the scenario sends, in the forms it sends them (the largest bitmap offset, a multi-key
    /// PFCOUNT, GEOSEARCH with the options the queries use).
    fn probe_commands(self) -> &'static [(&'static [&'static str], Expect)] {
        match self {
            Self::Bitmap => &[
                (&["SETBIT", "probe:bits", "99999999", "1"], Expect::Integer),
                (&["SETRANGE", "probe:bytes", "0", "ab"], Expect::Integer),
                (&["BITCOUNT", "probe:bits"], Expect::Integer),
            ],
            Self::Pfadd => &[
                (&["PFADD", "probe:hll", "a", "b", "c"], Expect::Integer),
                (&["PFCOUNT", "probe:hll"], Expect::Integer),
            ],
            Self::Pfcount => &[
                (&["PFADD", "probe:hll", "a", "b"], Expect::Integer),
                (&["PFADD", "probe:hll2", "b", "c"], Expect::Integer),
                (&["PFCOUNT", "probe:hll", "probe:hll2"], Expect::Integer),
            ],
            Self::Geo => &[
                (
                    &["GEOADD", "probe:geo", "13.361389", "38.115556", "a"],
                    Expect::Integer,
                ),
                (
                    &[
                        "GEOSEARCH",
                        "probe:geo",
                        "FROMLONLAT",
                        "15",
                        "37",
                        "BYRADIUS",
                        "200",
                        "km",
                        "ASC",
                        "COUNT",
                        "10",
                    ],
                    Expect::Array,
                ),
            ],
        }
    }
}

/// redis-benchmark's `-P` values.
const PIPELINES: [u32; 2] = [1, 16];

/// Arguments of `bench types`.
#[derive(Debug, Clone, Args)]
pub struct TypesArgs {
    /// A smoke run (under a minute): a tenth of the requests, geo members, queries and BITCOUNT
    /// calls, a fifth of the PFCOUNTs, a quarter of the PFADD prefill, a 1 s settle, one round.
    #[arg(long)]
    pub quick: bool,
    /// Rounds [default: 3, quick: 1].
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Seconds to wait after a load before reading memory (then until VmRSS is still for 2 s)
    /// [default: 12, above jemalloc's 10 s decay; quick: 1].
    #[arg(long)]
    pub settle_secs: Option<u64>,
    /// BITCOUNT calls timed per bitmap [default: 200, quick: 20].
    #[arg(long)]
    pub bitcount_calls: Option<usize>,
    /// Elements prefilled into each of the PFADD scenario's keys [default: 20000, quick: 5000].
    #[arg(long)]
    pub pfadd_prefill: Option<u64>,
    /// redis-benchmark requests of PFADD at -P 1 [default: 200000, quick: 20000].
    #[arg(long)]
    pub requests: Option<u64>,
    /// redis-benchmark requests of PFADD at -P 16 [default: 5000000, quick: 500000]: a run of
    /// several seconds (10⁶ requests took under one, and single readings scattered ±20 %).
    #[arg(long)]
    pub requests_p16: Option<u64>,
    /// redis-benchmark requests of PFCOUNT, at each -P [default: 20000, quick: 4000].
    #[arg(long)]
    pub pfcount_requests: Option<u64>,
    /// Members of the geo key [default: 1000000, quick: 100000].
    #[arg(long)]
    pub geo_members: Option<u64>,
    /// GEOSEARCH queries, at each depth [default: 20000, quick: 2000].
    #[arg(long)]
    pub geo_queries: Option<usize>,
    /// Only these bitmap builds, comma-separated [default: sparse,dense,growth].
    #[arg(long = "bitmap", value_enum, value_delimiter = ',')]
    pub builds: Vec<BitmapBuild>,
    /// Measure redis-server only (densekv is neither built nor started).
    #[arg(long)]
    pub no_densekv: bool,
    /// The binaries and the output directory (the BGSAVE delays and --no-docs are not used
    /// here: the section goes to `types.md` in the output directory).
    #[command(flatten)]
    pub peers: PeerArgs,
    /// Only these scenarios, comma-separated [default: bitmap,pfadd,pfcount,geo].
    #[arg(long = "only", value_enum, value_delimiter = ',')]
    pub scenarios: Vec<Scenario>,
}

impl Default for TypesArgs {
    /// What the command line gives without options.
    fn default() -> Self {
        Self {
            quick: false,
            rounds: None,
            settle_secs: None,
            bitcount_calls: None,
            pfadd_prefill: None,
            requests: None,
            requests_p16: None,
            pfcount_requests: None,
            geo_members: None,
            geo_queries: None,
            builds: Vec::new(),
            no_densekv: false,
            peers: PeerArgs::default(),
            scenarios: Vec::new(),
        }
    }
}

impl TypesArgs {
    /// The defaults with `all`'s `--quick` and peers.
    pub fn for_all(quick: bool, peers: PeerArgs) -> Self {
        Self {
            quick,
            peers,
            ..Self::default()
        }
    }
}

/// `redis-benchmark <args>` with the port, the request count and the pipeline depth shown as
/// `P`, `N` and `1|16`.
fn shown_benchmark(args: &[String]) -> String {
    let words: Vec<&str> = args
        .iter()
        .enumerate()
        .map(
            |(i, arg)| match i.checked_sub(1).map(|j| args[j].as_str()) {
                Some("-p") => "P",
                Some("-n") => "N",
                Some("-P") => "1|16",
                _ => arg.as_str(),
            },
        )
        .collect();
    format!("redis-benchmark {}", words.join(" "))
}

/// The resolved settings of one run.
#[derive(Debug)]
struct Plan {
    config: TypesConfig,
    scenarios: Vec<Scenario>,
    builds: Vec<BitmapBuild>,
    /// `None` when densekv is not measured.
    densekv: Option<PathBuf>,
    densekv_status: String,
    redis: PathBuf,
    redis_benchmark: PathBuf,
}

impl Plan {
    fn config(args: &TypesArgs) -> TypesConfig {
        let quick = args.quick;
        let pick = |given: Option<u64>, full: u64, smoke: u64| {
            given.unwrap_or(if quick { smoke } else { full }).max(1)
        };
        let zero = HllParams {
            prefill_per_key: 0,
            requests: 0,
            pipeline: 0,
        };
        let geo_members = pick(args.geo_members, 1_000_000, 100_000);
        TypesConfig {
            quick,
            rounds: suite::rounds(args.rounds, quick),
            settle_secs: args.settle_secs.unwrap_or(if quick {
                1
            } else {
                crate::server_memory::SETTLE_DEFAULT.as_secs()
            }) as f64,
            bitmap_bits: types_bitmap::BITS,
            sparse_offsets: types_bitmap::SPARSE_OFFSETS,
            growth_step_bits: types_bitmap::GROWTH_STEP_BITS,
            dense_chunk_bytes: types_bitmap::DENSE_CHUNK_BYTES,
            bitcount_calls: pick(args.bitcount_calls.map(|c| c as u64), 200, 20) as usize,
            clients: types_hll::CLIENTS,
            pfadd_keys: types_hll::PFADD_KEYS,
            pfadd_prefill_per_key: pick(args.pfadd_prefill, 20_000, 5_000),
            pfadd_command: shown_benchmark(&types_hll::pfadd_arguments(0, zero)),
            pfadd_requests_p1: pick(args.requests, 200_000, 20_000),
            pfadd_requests_p16: pick(args.requests_p16, 5_000_000, 500_000),
            pfcount_keys: types_hll::PFCOUNT_KEYS,
            pfcount_elements_per_key: types_hll::PFCOUNT_ELEMENTS,
            pfcount_command: shown_benchmark(&types_hll::pfcount_arguments(0, zero)),
            pfcount_requests_p1: pick(args.pfcount_requests, 20_000, 4_000),
            pfcount_requests_p16: pick(args.pfcount_requests, 20_000, 4_000),
            geo_members,
            geo_radius_km: types_geo::radius_km(geo_members),
            geo_queries: pick(args.geo_queries.map(|q| q as u64), 20_000, 2_000) as usize,
            geo_count: types_geo::COUNT,
            geo_depth: types_geo::DEPTH,
        }
    }

    /// The plan, with densekv built (unless `--no-densekv`).
    fn resolve(args: &TypesArgs) -> Result<Self, String> {
        let mut plan = Self {
            config: Self::config(args),
            scenarios: if args.scenarios.is_empty() {
                Scenario::ALL.to_vec()
            } else {
                args.scenarios.clone()
            },
            builds: if args.builds.is_empty() {
                BitmapBuild::ALL.to_vec()
            } else {
                args.builds.clone()
            },
            densekv: None,
            densekv_status: "not measured (--no-densekv)".to_owned(),
            redis: args.peers.redis(),
            redis_benchmark: args.peers.redis_benchmark(),
        };
        if args.no_densekv {
            crate::server_suite::ensure_redis(&plan.redis)?;
        } else {
            let (densekv, status) = args.peers.binaries()?;
            plan.densekv = Some(densekv);
            plan.densekv_status = status;
        }
        Ok(plan)
    }

    fn binary(&self, kind: ServerKind) -> Option<&Path> {
        match kind {
            ServerKind::Densekv => self.densekv.as_deref(),
            ServerKind::Redis => Some(&self.redis),
        }
    }

    fn wants(&self, scenario: Scenario) -> bool {
        self.scenarios.contains(&scenario)
    }

    fn settle(&self) -> Duration {
        Duration::from_secs_f64(self.config.settle_secs)
    }

    fn hll_params(&self, command: HllCommand, pipeline: u32) -> HllParams {
        let c = &self.config;
        let (prefill_per_key, requests) = match (command, pipeline) {
            (HllCommand::Pfadd, 1) => (c.pfadd_prefill_per_key, c.pfadd_requests_p1),
            (HllCommand::Pfadd, _) => (c.pfadd_prefill_per_key, c.pfadd_requests_p16),
            (HllCommand::Pfcount, 1) => (c.pfcount_elements_per_key, c.pfcount_requests_p1),
            (HllCommand::Pfcount, _) => (c.pfcount_elements_per_key, c.pfcount_requests_p16),
        };
        HllParams {
            prefill_per_key,
            requests,
            pipeline,
        }
    }
}

/// What the run collects as it goes.
#[derive(Debug, Default)]
struct Results {
    bitmap: Vec<BitmapSample>,
    hll: Vec<HllSample>,
    geo: Vec<GeoSample>,
    /// The servers and scenarios not measured, and why (one entry each).
    refused: Vec<(ServerKind, Scenario, String)>,
    failures: Failures,
}

impl Results {
    fn refuses(&self, kind: ServerKind, scenario: Scenario) -> bool {
        self.refused
            .iter()
            .any(|(k, s, _)| *k == kind && *s == scenario)
    }

    fn refuse(&mut self, kind: ServerKind, scenario: Scenario, why: &str) {
        if !self.refuses(kind, scenario) {
            // Redis's unknown-command error ends in a space.
            self.refused
                .push((kind, scenario, why.trim_end().to_owned()));
        }
    }
}

/// Sends every wanted scenario's probe commands to a fresh densekv of its own (so a crash in
/// one probe spoils no other); a refusal marks the scenario not measured on densekv.
fn probe_densekv(plan: &Plan, results: &mut Results) {
    let Some(densekv) = plan.densekv.as_deref() else {
        return;
    };
    for scenario in plan.scenarios.clone() {
        let probed = ServerProcess::start(ServerKind::Densekv, densekv)
            .and_then(|server| probe(server.port, scenario.probe_commands()));
        match probed {
            Ok(None) => {}
            Ok(Some(refusal)) => {
                eprintln!(
                    "densekv not measured in {}: {}",
                    scenario.name(),
                    refusal.trim_end()
                );
                results.refuse(ServerKind::Densekv, scenario, &refusal);
            }
            Err(error) => {
                results
                    .failures
                    .record(format!("densekv {} probe: {error}", scenario.name()));
                results.refuse(ServerKind::Densekv, scenario, &error);
            }
        }
    }
}

/// Runs the suite. `Ok(false)` when it completed but a measurement failed.
pub fn run(args: &TypesArgs) -> Result<bool, String> {
    let run = SuiteRun::start("types");
    let plan = Plan::resolve(args)?;
    let mut results = Results::default();
    probe_densekv(&plan, &mut results);
    for round in 1..=plan.config.rounds {
        run_round(&plan, round, &mut results);
    }
    let report = report(&plan, results);
    print!("{}", render(&report));
    let section = || markdown_section(&report);
    args.peers
        .write_json_and_section("types", &report, SECTION_HEADING, section)?;
    run.finish();
    Ok(report.failures.is_empty())
}

fn run_round(plan: &Plan, round: usize, results: &mut Results) {
    let label = format!("[round {round}/{}]", plan.config.rounds);
    if plan.wants(Scenario::Bitmap) {
        for &build in &plan.builds {
            for kind in servers(plan, results, Scenario::Bitmap, round) {
                bitmap_round(plan, round, kind, build, &label, results);
            }
        }
    }
    for (scenario, command) in [
        (Scenario::Pfadd, HllCommand::Pfadd),
        (Scenario::Pfcount, HllCommand::Pfcount),
    ] {
        if plan.wants(scenario) {
            for pipeline in PIPELINES {
                for kind in servers(plan, results, scenario, round) {
                    hll_round(plan, round, kind, command, pipeline, &label, results);
                }
            }
        }
    }
    if plan.wants(Scenario::Geo) {
        for kind in servers(plan, results, Scenario::Geo, round) {
            geo_round(plan, round, kind, &label, results);
        }
    }
}

/// The servers measured in `scenario` in `round`, in that round's order.
fn servers(plan: &Plan, results: &Results, scenario: Scenario, round: usize) -> Vec<ServerKind> {
    ordered(round)
        .into_iter()
        .filter(|&kind| plan.binary(kind).is_some() && !results.refuses(kind, scenario))
        .collect()
}

/// Runs `measure` against a fresh `kind` server, printing the progress line's start; a refusal
/// marks the scenario not measured on that server, any other error is a failure.
#[allow(clippy::too_many_arguments)]
fn on_fresh_server<T>(
    plan: &Plan,
    results: &mut Results,
    round: usize,
    kind: ServerKind,
    scenario: Scenario,
    name: &str,
    label: &str,
    measure: impl FnOnce(&ServerProcess) -> Result<T, MeasureError>,
) -> Option<T> {
    eprint!("{label} {name:<24} {:<8}", kind.name());
    let measured = match plan.binary(kind) {
        None => Err(MeasureError::Failed(format!(
            "{} is not measured",
            kind.name()
        ))),
        Some(binary) => match ServerProcess::start(kind, binary) {
            Err(e) => Err(MeasureError::Failed(e)),
            Ok(mut server) => {
                let measured = measure(&server);
                if server.is_running() {
                    measured
                } else {
                    Err(MeasureError::Failed(format!(
                        "the server exited: {}",
                        server.log_tail()
                    )))
                }
            }
        },
    };
    match measured {
        Ok(value) => Some(value),
        Err(MeasureError::Refused(why)) => {
            eprintln!(" not measured: {why}");
            results.refuse(kind, scenario, &why);
            None
        }
        Err(MeasureError::Failed(why)) => {
            eprintln!();
            results
                .failures
                .record(format!("{} {name} round {round}: {why}", kind.name()));
            None
        }
    }
}

fn mib(bytes: f64) -> f64 {
    bytes / f64::from(1u32 << 20)
}

fn bitmap_round(
    plan: &Plan,
    round: usize,
    kind: ServerKind,
    build: BitmapBuild,
    label: &str,
    results: &mut Results,
) {
    let scenario = bitmap_scenario(build);
    let params = BitmapParams {
        build,
        bitcount_calls: plan.config.bitcount_calls,
        settle: plan.settle(),
    };
    let measured = on_fresh_server(
        plan,
        results,
        round,
        kind,
        Scenario::Bitmap,
        &scenario,
        label,
        |server| types_bitmap::measure(server, params),
    );
    if let Some(result) = measured {
        eprintln!(
            " ΔVmRSS {:.2} MiB (used_memory Δ {}), load {:.0} ms; BITCOUNT {:.3} ms ({} bits)",
            mib(result.memory.rss_delta_bytes()),
            result
                .memory
                .used_delta_bytes()
                .map_or("?".to_owned(), |u| format!("{:.2} MiB", mib(u))),
            result.memory.load_secs * 1e3,
            result.bitcount_ms,
            result.bits_set
        );
        results.bitmap.push(BitmapSample {
            server: kind,
            round,
            scenario,
            build,
            result,
        });
    }
}

fn hll_round(
    plan: &Plan,
    round: usize,
    kind: ServerKind,
    command: HllCommand,
    pipeline: u32,
    label: &str,
    results: &mut Results,
) {
    let scenario = hll_scenario(command, pipeline);
    let params = plan.hll_params(command, pipeline);
    let suite_scenario = match command {
        HllCommand::Pfadd => Scenario::Pfadd,
        HllCommand::Pfcount => Scenario::Pfcount,
    };
    let bench = &plan.redis_benchmark;
    let measured = on_fresh_server(
        plan,
        results,
        round,
        kind,
        suite_scenario,
        &scenario,
        label,
        |server| match command {
            HllCommand::Pfadd => types_hll::pfadd_throughput(bench, server, params),
            HllCommand::Pfcount => types_hll::pfcount_throughput(bench, server, params),
        },
    );
    if let Some(result) = measured {
        eprintln!(
            " {:.0} requests/s over {} (p50 {} ms); prefill {:.1} s, PFCOUNT {}",
            result.rps,
            result.requests,
            result.p50_ms.map_or("?".to_owned(), |v| format!("{v:.3}")),
            result.prefill_secs,
            result.count_after_prefill
        );
        results.hll.push(HllSample {
            server: kind,
            round,
            scenario,
            command,
            pipeline,
            result,
        });
    }
}

fn geo_round(plan: &Plan, round: usize, kind: ServerKind, label: &str, results: &mut Results) {
    let params = GeoParams {
        members: plan.config.geo_members,
        queries: plan.config.geo_queries,
        settle: plan.settle(),
    };
    let measured = on_fresh_server(
        plan,
        results,
        round,
        kind,
        Scenario::Geo,
        GEO_SCENARIO,
        label,
        |server| types_geo::measure(server, params),
    );
    if let Some(result) = measured {
        eprintln!(
            " {:.1} B/member ΔVmRSS, load {:.1} s; GEOSEARCH {:.0}/s 16 in flight, {:.0}/s one \
             at a time; {:.1} within {} km",
            result.rss_per_member(),
            result.memory.load_secs,
            result.pipelined_per_sec,
            result.single_per_sec,
            result.within_radius_mean,
            result.radius_km
        );
        results.geo.push(GeoSample {
            server: kind,
            round,
            scenario: GEO_SCENARIO.to_owned(),
            result,
        });
    }
}

fn report(plan: &Plan, results: Results) -> TypesReport {
    let figures = types_report::summary_rows(&results.bitmap, &results.hll, &results.geo);
    let details = types_report::detail_rows(&results.bitmap, &results.hll, &results.geo);
    let not_measured: Vec<NotMeasured> = results
        .refused
        .iter()
        .map(|(server, scenario, reason)| NotMeasured {
            server: *server,
            scenario: scenario.name().to_owned(),
            reason: reason.clone(),
        })
        .collect();
    let mut notes: Vec<String> = not_measured
        .iter()
        .map(|n| {
            format!(
                "{} not measured in {}: {}",
                n.server.name(),
                n.scenario,
                n.reason
            )
        })
        .collect();
    let densekv_in = |scenario: &str| {
        let of = |s: &str, kind: ServerKind| s == scenario && kind == ServerKind::Densekv;
        results.bitmap.iter().any(|s| of(&s.scenario, s.server))
            || results.geo.iter().any(|s| of(&s.scenario, s.server))
    };
    let memory_scenarios: Vec<(String, bool)> = plan
        .builds
        .iter()
        .map(|&b| bitmap_scenario(b))
        .chain(std::iter::once(GEO_SCENARIO.to_owned()))
        .map(|s| {
            let has = densekv_in(&s);
            (s, has)
        })
        .collect();
    notes.extend(types_report::accounting_notes(&details, &memory_scenarios));
    notes.extend(types_report::purge_notes(&results.bitmap, &results.geo));
    notes.extend(types_report::geo_notes(&results.geo));
    let mut headlines = types_report::headlines(&figures);
    for headline in &mut headlines {
        let refused = |&(kind, scenario, _): &(ServerKind, Scenario, String)| {
            kind == ServerKind::Densekv && headline.figure.starts_with(scenario.row_prefix())
        };
        if headline.densekv.is_none() && results.refused.iter().any(refused) {
            headline.target.push_str("; densekv not measured");
        }
    }
    TypesReport {
        suite: "types",
        command: suite::command_line(),
        machine: MachineInfo::read(),
        versions: Versions::read(
            &plan.redis,
            Some(&plan.redis_benchmark),
            plan.densekv.as_deref(),
            plan.densekv_status.clone(),
        ),
        config: plan.config.clone(),
        headlines,
        figures,
        details,
        bitmap_rounds: results.bitmap,
        hll_rounds: results.hll,
        geo_rounds: results.geo,
        not_measured,
        notes,
        failures: results.failures.into_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::{Plan, Results, Scenario, TypesArgs, servers};
    use crate::server_proc::ServerKind;

    #[test]
    fn defaults_and_quick() {
        let c = Plan::config(&TypesArgs::default());
        assert_eq!((c.rounds, c.settle_secs, c.bitcount_calls), (3, 12.0, 200));
        assert_eq!(
            (
                c.pfadd_requests_p1,
                c.pfadd_requests_p16,
                c.pfcount_requests_p16
            ),
            (200_000, 5_000_000, 20_000)
        );
        assert_eq!(
            (c.geo_members, c.geo_radius_km, c.geo_queries),
            (1_000_000, 127, 20_000)
        );
        assert_eq!(
            c.pfadd_command,
            "redis-benchmark -h 127.0.0.1 -p P -c 50 -n N -r 100 -P 1|16 --csv PFADD \
             hll:__rand_int__ ele:__rand_int__:__rand_int__:__rand_int__"
        );
        assert!(c.pfcount_command.ends_with(
            "-P 1|16 --csv PFCOUNT hllc:0 hllc:1 hllc:2 hllc:3 \
             hllc:4 hllc:5 hllc:6 hllc:7 hllc:8 hllc:9"
        ));
        let quick = TypesArgs {
            quick: true,
            geo_queries: Some(0),
            ..TypesArgs::default()
        };
        let c = Plan::config(&quick);
        assert_eq!((c.rounds, c.settle_secs, c.geo_members), (1, 1.0, 100_000));
        assert_eq!((c.geo_radius_km, c.geo_queries), (402, 1));
    }

    #[test]
    fn a_refused_scenario_skips_densekv_only() {
        let mut plan = Plan::resolve(&TypesArgs {
            no_densekv: true,
            ..TypesArgs::default()
        })
        .unwrap();
        plan.densekv = Some("densekv".into());
        let mut results = Results::default();
        assert_eq!(
            servers(&plan, &results, Scenario::Geo, 2),
            [ServerKind::Redis, ServerKind::Densekv]
        );
        results.refuse(ServerKind::Densekv, Scenario::Geo, "GEOADD replied -ERR ");
        results.refuse(ServerKind::Densekv, Scenario::Geo, "again");
        assert_eq!(results.refused.len(), 1);
        assert_eq!(results.refused[0].2, "GEOADD replied -ERR");
        assert_eq!(
            servers(&plan, &results, Scenario::Geo, 1),
            [ServerKind::Redis]
        );
        assert_eq!(servers(&plan, &results, Scenario::Bitmap, 1).len(), 2);
    }
}
