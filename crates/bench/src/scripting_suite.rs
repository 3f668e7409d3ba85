//! `bench scripting`: densekv's Lua scripting against redis-server 7.0 in one run: how many
//! `EVALSHA` requests a second the servers answer, and how quickly `SCRIPT KILL` stops a busy
//! script. Prints progress on stderr and the tables on stdout, and writes `scripting.json` and
//! `scripting.md` (the Markdown section, to be pasted into `docs/BENCHMARKS.md` by hand) into
//! the output directory.
//!
//! Dimensions: server × scenario × round. Each round runs every scenario on densekv and on
//! redis-server, one after the other (who goes first alternates by round), each on a fresh
//! server (`scripting_driver.rs` has the method):
//!
//! 1. **evalsha** — redis-benchmark's custom command `evalsha <sha> 1 key:__rand_int__` over
//!    100,000 keys, 50 clients, at `-P 1` and `-P 16`: requests/s.
//! 2. **kill** — with `busy-reply-threshold 100`, a busy `EVAL` (an endless `while` loop, or a
//!    counted `for` loop of 10⁹ steps) killed with `SCRIPT KILL` once a `PING` reads `-BUSY`,
//!    from a connection opened before the EVAL or after the -BUSY: ms to the kill's `+OK`, ms
//!    from it to the script's error reply, and whether `GET x` was answered -BUSY meanwhile.
//!    Each round's figure is the median of `--kills` kills on the one server.
//!
//! Shared pieces: `scripting_driver.rs` (the measurements, each given only a port),
//! `scripting_report.rs` (medians, ratios, JSON), `scripting_markdown.rs` (the section; the
//! tables are the pub/sub suite's); the server suite's process handling and redis-benchmark
//! runner. A densekv that answers `SCRIPT LOAD` with an error is not measured (a note says so)
//! so that the suite still reports redis-server's figures; `--no-densekv` skips it on purpose,
//! and `--densekv $(command -v redis-server)` runs the whole suite against two redis-servers
//! (how it was checked before densekv had EVAL). Measurements run one at a time: on two cores a
//! second server would take the measured one's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::machine::MachineInfo;
use crate::persist_suite::{PeerArgs, ordered};
use crate::scripting_driver::{
    self, BusyScript, EvalshaParams, KillParams, KillerOpened, load_incr,
};
use crate::scripting_markdown::{self, markdown_section, render};
use crate::scripting_report::{
    self, EvalshaSample, KillSample, ScriptingConfig, ScriptingReport, evalsha_scenario,
    kill_scenario,
};
use crate::server_proc::{ServerKind, ServerProcess};
use crate::server_report::Versions;
use crate::server_resp::Connection;
use crate::suite::{self, Failures, SuiteRun};

/// A scenario of the suite; the value of `--only`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    Evalsha,
    Kill,
}

/// redis-benchmark's `-P` values.
const PIPELINES: [u32; 2] = [1, 16];

/// Arguments of `bench scripting`.
#[derive(Debug, Clone, Args)]
pub struct ScriptingArgs {
    /// A smoke run: a tenth of the requests, 2 kills per scenario, one round.
    #[arg(long)]
    pub quick: bool,
    /// Rounds [default: 3, quick: 1].
    #[arg(long)]
    pub rounds: Option<usize>,
    /// redis-benchmark requests at -P 1 [default: 200000, quick: 20000].
    #[arg(long)]
    pub requests: Option<u64>,
    /// redis-benchmark requests at -P 16 [default: 1000000, quick: 100000].
    #[arg(long)]
    pub requests_p16: Option<u64>,
    /// Kills per scenario, server and round; the round's figure is their median [default: 5,
    /// quick: 2].
    #[arg(long)]
    pub kills: Option<usize>,
    /// `GET x` commands sent during each busy period.
    #[arg(long, default_value_t = 3)]
    pub gets: usize,
    /// Only these busy scripts, comma-separated [default: while,counted].
    #[arg(long = "script", value_enum, value_delimiter = ',')]
    pub scripts: Vec<BusyScript>,
    /// The time bound of each measurement step (a reply, the wait for -BUSY), in seconds.
    #[arg(long, default_value_t = 60)]
    pub limit_secs: u64,
    /// Measure redis-server only (densekv is neither built nor started).
    #[arg(long)]
    pub no_densekv: bool,
    /// The binaries and the output directory (the BGSAVE delays and --no-docs are not used
    /// here: the section goes to `scripting.md` in the output directory).
    #[command(flatten)]
    pub peers: PeerArgs,
    /// Only these scenarios, comma-separated [default: evalsha,kill].
    #[arg(long = "only", value_enum, value_delimiter = ',')]
    pub scenarios: Vec<Scenario>,
}

impl Default for ScriptingArgs {
    /// What the command line gives without options.
    fn default() -> Self {
        Self {
            quick: false,
            rounds: None,
            requests: None,
            requests_p16: None,
            kills: None,
            gets: 3,
            scripts: Vec::new(),
            limit_secs: 60,
            no_densekv: false,
            peers: PeerArgs::default(),
            scenarios: Vec::new(),
        }
    }
}

impl ScriptingArgs {
    /// The defaults with `all`'s `--quick` and peers.
    pub fn for_all(quick: bool, peers: PeerArgs) -> Self {
        Self {
            quick,
            peers,
            ..Self::default()
        }
    }
}

/// The resolved settings of one run.
#[derive(Debug)]
struct Plan {
    config: ScriptingConfig,
    scenarios: Vec<Scenario>,
    scripts: Vec<BusyScript>,
    /// `None` when densekv is not measured.
    densekv: Option<PathBuf>,
    densekv_status: String,
    redis: PathBuf,
    redis_benchmark: PathBuf,
    notes: Vec<String>,
}

impl Plan {
    fn config(args: &ScriptingArgs) -> ScriptingConfig {
        // The command with placeholders: `-p P -n N -P 1|16`.
        let args_shown = scripting_driver::benchmark_arguments(
            0,
            EvalshaParams {
                requests: 0,
                pipeline: 0,
            },
            "SHA",
        );
        let shown = args_shown
            .iter()
            .enumerate()
            .map(
                |(i, arg)| match i.checked_sub(1).map(|j| args_shown[j].as_str()) {
                    Some("-p") => "P",
                    Some("-n") => "N",
                    Some("-P") => "1|16",
                    _ => arg.as_str(),
                },
            )
            .collect::<Vec<_>>()
            .join(" ");
        let quick = args.quick;
        ScriptingConfig {
            quick,
            rounds: suite::rounds(args.rounds, quick),
            script: scripting_driver::INCR_SCRIPT,
            requests_p1: args
                .requests
                .unwrap_or(if quick { 20_000 } else { 200_000 })
                .max(1),
            requests_p16: args
                .requests_p16
                .unwrap_or(if quick { 100_000 } else { 1_000_000 })
                .max(1),
            clients: scripting_driver::CLIENTS,
            keyspace: scripting_driver::KEYSPACE,
            benchmark_command: format!("redis-benchmark {shown}"),
            busy_threshold_ms: scripting_driver::BUSY_THRESHOLD_MS,
            poll_ms: scripting_driver::POLL_INTERVAL.as_millis() as u64,
            kills: args.kills.unwrap_or(if quick { 2 } else { 5 }).max(1),
            gets_per_kill: args.gets,
            limit_secs: args.limit_secs.max(1),
        }
    }

    /// The plan, with densekv built (unless `--no-densekv`) and probed for `SCRIPT LOAD`.
    fn resolve(args: &ScriptingArgs) -> Result<Self, String> {
        let mut plan = Self {
            config: Self::config(args),
            scenarios: if args.scenarios.is_empty() {
                vec![Scenario::Evalsha, Scenario::Kill]
            } else {
                args.scenarios.clone()
            },
            scripts: if args.scripts.is_empty() {
                BusyScript::ALL.to_vec()
            } else {
                args.scripts.clone()
            },
            densekv: None,
            densekv_status: "not measured (--no-densekv)".to_owned(),
            redis: args.peers.redis(),
            redis_benchmark: args.peers.redis_benchmark(),
            notes: Vec::new(),
        };
        if args.no_densekv {
            crate::server_suite::ensure_redis(&plan.redis)?;
            return Ok(plan);
        }
        let (densekv, status) = args.peers.binaries()?;
        match probe_scripting(&densekv)? {
            None => {
                plan.densekv = Some(densekv);
                plan.densekv_status = status;
            }
            Some(error) => {
                plan.densekv_status = format!("not measured: {error}");
                plan.notes.push(format!(
                    "densekv ({}) refuses scripting ({error}): only redis-server was measured",
                    densekv.display()
                ));
            }
        }
        Ok(plan)
    }

    fn binary(&self, kind: ServerKind) -> Option<&Path> {
        match kind {
            ServerKind::Densekv => self.densekv.as_deref(),
            ServerKind::Redis => Some(&self.redis),
        }
    }

    /// The servers measured in `round`, in that round's order.
    fn order(&self, round: usize) -> Vec<ServerKind> {
        ordered(round)
            .into_iter()
            .filter(|&kind| self.binary(kind).is_some())
            .collect()
    }

    fn wants(&self, scenario: Scenario) -> bool {
        self.scenarios.contains(&scenario)
    }

    fn limit(&self) -> Duration {
        Duration::from_secs(self.config.limit_secs)
    }

    fn requests(&self, pipeline: u32) -> u64 {
        if pipeline == 1 {
            self.config.requests_p1
        } else {
            self.config.requests_p16
        }
    }
}

/// Starts densekv and loads the EVALSHA script once: `None` when that works, the refused
/// command and its reply when it does not (`SCRIPT LOAD replied -ERR unknown command ...`
/// before scripting lands).
fn probe_scripting(densekv: &Path) -> Result<Option<String>, String> {
    let server = ServerProcess::start(ServerKind::Densekv, densekv)?;
    let mut connection = Connection::open(server.port, Duration::from_secs(10))
        .map_err(|e| format!("densekv: cannot connect: {e}"))?;
    Ok(load_incr(&mut connection).err())
}

/// What the run collects as it goes.
#[derive(Debug, Default)]
struct Results {
    evalsha: Vec<EvalshaSample>,
    kills: Vec<KillSample>,
    failures: Failures,
}

/// Runs the suite. `Ok(false)` when it completed but a measurement failed.
pub fn run(args: &ScriptingArgs) -> Result<bool, String> {
    let run = SuiteRun::start("scripting");
    let plan = Plan::resolve(args)?;
    for note in &plan.notes {
        eprintln!("note: {note}");
    }
    let mut results = Results::default();
    for round in 1..=plan.config.rounds {
        run_round(&plan, round, &mut results);
    }
    let report = report(&plan, results);
    print!("{}", render(&report));
    let section = || markdown_section(&report);
    let heading = scripting_markdown::SECTION_HEADING;
    args.peers
        .write_json_and_section("scripting", &report, heading, section)?;
    run.finish();
    Ok(report.failures.is_empty())
}

fn run_round(plan: &Plan, round: usize, results: &mut Results) {
    let label = format!("[round {round}/{}]", plan.config.rounds);
    if plan.wants(Scenario::Evalsha) {
        for pipeline in PIPELINES {
            for kind in plan.order(round) {
                evalsha_round(plan, round, kind, pipeline, &label, results);
            }
        }
    }
    if plan.wants(Scenario::Kill) {
        for &script in &plan.scripts {
            for killer in KillerOpened::BOTH {
                for kind in plan.order(round) {
                    kill_round(plan, round, kind, script, killer, &label, results);
                }
            }
        }
    }
}

/// Runs `measure` against a fresh `kind` server; `Err` also when the server died meanwhile.
fn on_fresh_server<T>(
    plan: &Plan,
    kind: ServerKind,
    measure: impl FnOnce(u16) -> Result<T, String>,
) -> Result<T, String> {
    let binary = plan
        .binary(kind)
        .ok_or_else(|| format!("{} is not measured", kind.name()))?;
    let mut server = ServerProcess::start(kind, binary)?;
    let measured = measure(server.port);
    if !server.is_running() {
        return Err(format!("the server exited: {}", server.log_tail()));
    }
    measured
}

fn evalsha_round(
    plan: &Plan,
    round: usize,
    kind: ServerKind,
    pipeline: u32,
    label: &str,
    results: &mut Results,
) {
    let scenario = evalsha_scenario(pipeline);
    eprint!("{label} {scenario:<48} {:<8}", kind.name());
    let params = EvalshaParams {
        requests: plan.requests(pipeline),
        pipeline,
    };
    let measured = on_fresh_server(plan, kind, |port| {
        scripting_driver::evalsha_throughput(&plan.redis_benchmark, port, params)
    });
    match measured {
        Ok(result) => {
            eprintln!(
                " {:.0} requests/s over {} requests (p50 {} ms, {} keys)",
                result.rps,
                result.requests,
                result.p50_ms.map_or("?".to_owned(), |v| format!("{v:.3}")),
                result.keys
            );
            results.evalsha.push(EvalshaSample {
                server: kind,
                round,
                scenario,
                pipeline,
                result,
            });
        }
        Err(e) => results
            .failures
            .record(format!("{} {scenario} round {round}: {e}", kind.name())),
    }
}

fn kill_round(
    plan: &Plan,
    round: usize,
    kind: ServerKind,
    script: BusyScript,
    killer: KillerOpened,
    label: &str,
    results: &mut Results,
) {
    let scenario = kill_scenario(script, killer);
    eprint!("{label} {scenario:<48} {:<8}", kind.name());
    let params = KillParams {
        script,
        killer,
        kills: plan.config.kills,
        gets: plan.config.gets_per_kill,
    };
    let measured = on_fresh_server(plan, kind, |port| {
        scripting_driver::kill_latency(port, params, plan.limit())
    });
    match measured {
        Ok(result) => {
            eprintln!(
                " busy after {:.1} ms; SCRIPT KILL → +OK {:.3} ms, → script error {:.3} ms; \
                 GET -BUSY {}/{}",
                result.busy_after_ms,
                result.kill_ok_ms,
                result.script_error_ms,
                result.gets_busy,
                result.gets
            );
            results.kills.push(KillSample {
                server: kind,
                round,
                scenario,
                script,
                killer,
                result,
            });
        }
        Err(e) => results
            .failures
            .record(format!("{} {scenario} round {round}: {e}", kind.name())),
    }
}

fn report(plan: &Plan, results: Results) -> ScriptingReport {
    let mut notes = plan.notes.clone();
    notes.extend(scripting_report::busy_notes(&results.kills));
    ScriptingReport {
        suite: "scripting",
        command: suite::command_line(),
        machine: MachineInfo::read(),
        versions: Versions::read(
            &plan.redis,
            Some(&plan.redis_benchmark),
            plan.densekv.as_deref(),
            plan.densekv_status.clone(),
        ),
        config: plan.config.clone(),
        figures: scripting_report::summary_rows(&results.evalsha, &results.kills),
        details: scripting_report::detail_rows(&results.evalsha, &results.kills),
        evalsha_rounds: results.evalsha,
        kill_rounds: results.kills,
        notes,
        failures: results.failures.into_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::{Plan, ScriptingArgs};

    #[test]
    fn defaults_and_quick() {
        let c = Plan::config(&ScriptingArgs::default());
        assert_eq!(
            (c.rounds, c.requests_p1, c.requests_p16),
            (3, 200_000, 1_000_000)
        );
        assert_eq!((c.kills, c.gets_per_kill, c.busy_threshold_ms), (5, 3, 100));
        assert_eq!(
            c.benchmark_command,
            "redis-benchmark -h 127.0.0.1 -p P -c 50 -n N -r 100000 -P 1|16 --csv evalsha SHA \
             1 key:__rand_int__"
        );
        let quick = ScriptingArgs {
            quick: true,
            kills: Some(0),
            ..ScriptingArgs::default()
        };
        let c = Plan::config(&quick);
        assert_eq!(
            (c.rounds, c.requests_p1, c.requests_p16),
            (1, 20_000, 100_000)
        );
        assert_eq!(c.kills, 1);
    }
}
