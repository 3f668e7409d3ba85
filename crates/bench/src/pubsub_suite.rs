//! `bench pubsub`: densekv's publish/subscribe against redis-server 7.0 in one run: how many
//! messages a second PUBLISH delivers to every subscriber, and how long a delivery takes when
//! one message goes to a thousand subscribers. Prints progress on stderr and the tables on
//! stdout, and writes `pubsub.json` and `pubsub.md` (the Markdown section, to be pasted into
//! `docs/BENCHMARKS.md` by hand) into the output directory.
//!
//! Dimensions: server × scenario × round. Each round runs every scenario on densekv and on
//! redis-server, one after the other (who goes first alternates by round), each on a fresh
//! server started with `--maxclients 4000` (`pubsub_driver.rs` has the method):
//!
//! 1. **channel** — PUBLISH throughput to one channel with 1, 10 and 100 subscribers: 4
//!    publisher connections pipelining 16 deep, until every subscriber has every message.
//! 2. **pattern** — the same with 10 subscribers on `PSUBSCRIBE news.*`, publishing to
//!    `news.<n>`: the pattern-matching path.
//! 3. **fanout** — 1,000 subscribers on one channel, one publisher at 25 messages/s carrying
//!    its send time: p50, p99 and p99.9 of delivery latency over every delivery.
//!
//! Why 25 messages/s and not more: on the 2-core VM one fan-out of a message to 1,000 sockets
//! keeps redis-server busy for about 15 ms (a write, and a wake-up of the reader, per socket),
//! so at 200 messages/s (a 5 ms interval) the server never catches up, the queue grows through
//! the run and the percentiles measure the backlog (p50 ≈ 19 ms at 200/s against ≈ 6 ms at
//! 25–50/s), a figure that depends on the run's length. At 25/s each fan-out ends before the
//! next message leaves, so the latency is that of one fan-out; `--fanout-rate` changes it, and
//! the *late sends* detail shows when a rate saturates a server.
//!
//! Shared pieces: `pubsub_wire.rs` (the pushes and payloads), `pubsub_subscribers.rs` (many
//! subscribed sockets on a few epoll threads), `pubsub_driver.rs` (the two measurements, each
//! given only a port), `pubsub_report.rs` (medians, ratios, JSON), `pubsub_markdown.rs` (tables,
//! the section); the server suite's process handling and the evict suite's figure rows. A
//! densekv that answers PUBLISH with `-ERR unknown command` is not measured (a note says so) so
//! that the suite still reports redis-server's figures; `--no-densekv` skips it on purpose.
//! Measurements run one at a time: on two cores a second server would take the measured one's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::machine::MachineInfo;
use crate::persist_suite::{PeerArgs, ordered};
use crate::pubsub_driver::{self, FanoutParams, ThroughputParams};
use crate::pubsub_markdown::{self, markdown_section, render};
use crate::pubsub_report::{
    self, FanoutSample, PubsubConfig, PubsubReport, ThroughputSample, throughput_scenario,
};
use crate::pubsub_subscribers::raise_open_files;
use crate::server_proc::{ServerKind, ServerProcess};
use crate::server_report::Versions;
use crate::server_resp::{Connection, Reply};
use crate::suite::{self, Failures, SuiteRun};

/// A scenario of the suite; the value of `--only`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    Channel,
    Pattern,
    Fanout,
}

/// Subscriber counts of the channel scenario.
const CHANNEL_SUBSCRIBERS: [usize; 3] = [1, 10, 100];
/// Subscribers of the pattern scenario.
const PATTERN_SUBSCRIBERS: usize = 10;
/// Messages per second of the fan-out: one fan-out at a time (module doc).
const FANOUT_RATE_DEFAULT: u32 = 25;
/// The servers' `maxclients` at least: the fan-out's thousand subscribers with room to spare.
const MAXCLIENTS_MIN: u32 = 4000;
/// File descriptors the harness needs besides the subscribers' sockets (publishers, the
/// servers' log files, the probe, stdio, epoll instances).
const OPEN_FILES_SPARE: u64 = 256;

/// Arguments of `bench pubsub`.
#[derive(Debug, Clone, Args)]
pub struct PubsubArgs {
    /// A smoke run: a tenth of the deliveries, a two-second fan-out, one round.
    #[arg(long)]
    pub quick: bool,
    /// Rounds [default: 3, quick: 1].
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Deliveries (messages × subscribers) per throughput measurement [default: 3000000,
    /// quick: 300000].
    #[arg(long)]
    pub deliveries: Option<u64>,
    /// Publisher connections of the throughput scenarios.
    #[arg(long, default_value_t = 4)]
    pub publishers: usize,
    /// PUBLISH commands per pipelined write of each publisher.
    #[arg(long, default_value_t = 16)]
    pub depth: usize,
    /// Harness threads serving the subscribers' sockets.
    #[arg(long, default_value_t = 2)]
    pub subscriber_threads: usize,
    /// Subscribers of the fan-out scenario.
    #[arg(long, default_value_t = 1000)]
    pub fanout_subscribers: usize,
    /// Messages per second the fan-out's publisher sends (see the module doc for why so few).
    #[arg(long, default_value_t = FANOUT_RATE_DEFAULT)]
    pub fanout_rate: u32,
    /// Seconds the fan-out's publisher sends for [default: 4, quick: 2].
    #[arg(long)]
    pub fanout_secs: Option<f64>,
    /// The time bound of each measurement (one scenario on one server), in seconds.
    #[arg(long, default_value_t = 120)]
    pub limit_secs: u64,
    /// Measure redis-server only (densekv is neither built nor started).
    #[arg(long)]
    pub no_densekv: bool,
    /// The binaries and the output directory (the BGSAVE delays and --no-docs are not used
    /// here: the section goes to `pubsub.md` in the output directory).
    #[command(flatten)]
    pub peers: PeerArgs,
    /// Only these scenarios, comma-separated [default: channel,pattern,fanout].
    #[arg(long = "only", value_enum, value_delimiter = ',')]
    pub scenarios: Vec<Scenario>,
}

impl Default for PubsubArgs {
    /// What the command line gives without options.
    fn default() -> Self {
        Self {
            quick: false,
            rounds: None,
            deliveries: None,
            publishers: 4,
            depth: 16,
            subscriber_threads: 2,
            fanout_subscribers: 1000,
            fanout_rate: FANOUT_RATE_DEFAULT,
            fanout_secs: None,
            limit_secs: 120,
            no_densekv: false,
            peers: PeerArgs::default(),
            scenarios: Vec::new(),
        }
    }
}

/// The resolved settings of one run.
#[derive(Debug)]
struct Plan {
    config: PubsubConfig,
    scenarios: Vec<Scenario>,
    /// `None` when densekv is not measured.
    densekv: Option<PathBuf>,
    densekv_status: String,
    redis: PathBuf,
    notes: Vec<String>,
}

/// Messages per publisher for `deliveries` over `subscribers`: whole batches of `depth`.
fn messages_per_publisher(
    deliveries: u64,
    subscribers: usize,
    publishers: usize,
    depth: usize,
) -> u64 {
    let messages = deliveries.div_ceil(subscribers.max(1) as u64).max(1);
    let per_publisher = messages.div_ceil(publishers.max(1) as u64);
    per_publisher.div_ceil(depth.max(1) as u64) * depth.max(1) as u64
}

impl Plan {
    fn config(args: &PubsubArgs) -> PubsubConfig {
        let maxclients = (args.fanout_subscribers + args.publishers + 16) as u32;
        PubsubConfig {
            quick: args.quick,
            rounds: suite::rounds(args.rounds, args.quick),
            channel_subscribers: CHANNEL_SUBSCRIBERS.to_vec(),
            pattern_subscribers: PATTERN_SUBSCRIBERS,
            pattern: pubsub_driver::PATTERN,
            channel: pubsub_driver::CHANNEL,
            deliveries: args
                .deliveries
                .unwrap_or(if args.quick { 300_000 } else { 3_000_000 }),
            publishers: args.publishers.max(1),
            depth: args.depth.max(1),
            subscriber_threads: args.subscriber_threads.max(1),
            fanout_subscribers: args.fanout_subscribers.max(1),
            fanout_rate_per_sec: args.fanout_rate.max(1),
            fanout_secs: args
                .fanout_secs
                .unwrap_or(if args.quick { 2.0 } else { 4.0 }),
            maxclients: maxclients.max(MAXCLIENTS_MIN),
            limit_secs: args.limit_secs,
        }
    }

    /// The plan, with densekv built (unless `--no-densekv`) and probed for PUBLISH.
    fn resolve(args: &PubsubArgs) -> Result<Self, String> {
        let mut plan = Self {
            config: Self::config(args),
            scenarios: if args.scenarios.is_empty() {
                vec![Scenario::Channel, Scenario::Pattern, Scenario::Fanout]
            } else {
                args.scenarios.clone()
            },
            densekv: None,
            densekv_status: "not measured (--no-densekv)".to_owned(),
            redis: args.peers.redis(),
            notes: Vec::new(),
        };
        if args.no_densekv {
            crate::server_suite::ensure_redis(&plan.redis)?;
            return Ok(plan);
        }
        let (densekv, status) = args.peers.binaries()?;
        match probe_publish(&densekv, &plan.server_options())? {
            None => {
                plan.densekv = Some(densekv);
                plan.densekv_status = status;
            }
            Some(error) => {
                plan.densekv_status = format!("not measured: PUBLISH replied {error}");
                plan.notes.push(format!(
                    "densekv ({}) answers PUBLISH with {error}: only redis-server was measured",
                    densekv.display()
                ));
            }
        }
        Ok(plan)
    }

    fn server_options(&self) -> Vec<String> {
        vec![
            "--maxclients".to_owned(),
            self.config.maxclients.to_string(),
        ]
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

    fn throughput_params(&self, subscribers: usize, pattern: bool) -> ThroughputParams {
        let c = &self.config;
        ThroughputParams {
            subscribers,
            pattern,
            publishers: c.publishers,
            depth: c.depth,
            messages_per_publisher: messages_per_publisher(
                c.deliveries,
                subscribers,
                c.publishers,
                c.depth,
            ),
            subscriber_threads: c.subscriber_threads,
        }
    }

    fn fanout_params(&self) -> FanoutParams {
        let c = &self.config;
        FanoutParams {
            subscribers: c.fanout_subscribers,
            rate_per_sec: c.fanout_rate_per_sec,
            secs: c.fanout_secs,
            subscriber_threads: c.subscriber_threads,
        }
    }
}

/// Starts densekv and sends `PUBLISH` once: `None` when it answers with an integer, the reply
/// when it does not (`-ERR unknown command 'publish'` before pub/sub lands).
fn probe_publish(densekv: &Path, options: &[String]) -> Result<Option<String>, String> {
    let server = ServerProcess::start_with(ServerKind::Densekv, densekv, options)?;
    let mut connection = Connection::open(server.port, Duration::from_secs(10))
        .map_err(|e| format!("densekv: cannot connect: {e}"))?;
    match connection.command(&["PUBLISH", "bench.probe", "x"]) {
        Ok(Reply::Integer(_)) => Ok(None),
        Ok(reply) => Ok(Some(reply.to_string())),
        Err(e) => Err(format!("densekv: PUBLISH: {e}")),
    }
}

/// What the run collects as it goes.
#[derive(Debug, Default)]
struct Results {
    throughput: Vec<ThroughputSample>,
    fanout: Vec<FanoutSample>,
    failures: Failures,
}

/// Runs the suite. `Ok(false)` when it completed but a measurement failed.
pub fn run(args: &PubsubArgs) -> Result<bool, String> {
    let run = SuiteRun::start("pubsub");
    let plan = Plan::resolve(args)?;
    let needed = plan.config.fanout_subscribers as u64 + OPEN_FILES_SPARE;
    let limit = raise_open_files(needed)?;
    if limit < needed {
        return Err(format!(
            "the open-files limit is {limit}, below the {needed} the fan-out needs (ulimit -Hn)"
        ));
    }
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
    let heading = pubsub_markdown::SECTION_HEADING;
    args.peers
        .write_json_and_section("pubsub", &report, heading, section)?;
    run.finish();
    Ok(report.failures.is_empty())
}

fn run_round(plan: &Plan, round: usize, results: &mut Results) {
    let label = format!("[round {round}/{}]", plan.config.rounds);
    let mut throughput = Vec::new();
    if plan.wants(Scenario::Channel) {
        throughput.extend(plan.config.channel_subscribers.iter().map(|&s| (s, false)));
    }
    if plan.wants(Scenario::Pattern) {
        throughput.push((plan.config.pattern_subscribers, true));
    }
    for (subscribers, pattern) in throughput {
        for kind in plan.order(round) {
            throughput_round(plan, round, kind, subscribers, pattern, &label, results);
        }
    }
    if plan.wants(Scenario::Fanout) {
        for kind in plan.order(round) {
            fanout_round(plan, round, kind, &label, results);
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
    let mut server = ServerProcess::start_with(kind, binary, &plan.server_options())?;
    let measured = measure(server.port);
    if !server.is_running() {
        return Err(format!("the server exited: {}", server.log_tail()));
    }
    measured
}

fn throughput_round(
    plan: &Plan,
    round: usize,
    kind: ServerKind,
    subscribers: usize,
    pattern: bool,
    label: &str,
    results: &mut Results,
) {
    let scenario = throughput_scenario(subscribers, pattern);
    eprint!("{label} {scenario:<32} {:<8}", kind.name());
    let params = plan.throughput_params(subscribers, pattern);
    let measured = on_fresh_server(plan, kind, |port| {
        pubsub_driver::throughput(port, params, plan.limit())
    });
    match measured {
        Ok(result) => {
            eprintln!(
                " {} messages in {:.2} s: {:.0} messages/s, {:.0} deliveries/s (publishers done \
                 at {:.2} s)",
                result.messages,
                result.deliver_secs,
                result.messages_per_sec,
                result.deliveries_per_sec,
                result.publish_secs
            );
            results.throughput.push(ThroughputSample {
                server: kind,
                round,
                scenario,
                subscribers,
                pattern,
                result,
            });
        }
        Err(e) => results
            .failures
            .record(format!("{} {scenario} round {round}: {e}", kind.name())),
    }
}

fn fanout_round(plan: &Plan, round: usize, kind: ServerKind, label: &str, results: &mut Results) {
    let params = plan.fanout_params();
    let scenario = pubsub_report::fanout_scenario(params.subscribers);
    eprint!("{label} {scenario:<32} {:<8}", kind.name());
    let measured = on_fresh_server(plan, kind, |port| {
        pubsub_driver::fanout(port, params, plan.limit())
    });
    match measured {
        Ok(result) => {
            eprintln!(
                " {} deliveries: p50 {:.3} ms  p99 {:.3} ms  p99.9 {:.3} ms  max {:.3} ms  \
                 late sends {}",
                result.deliveries,
                result.p50_ms,
                result.p99_ms,
                result.p999_ms,
                result.max_ms,
                result.late_sends
            );
            results.fanout.push(FanoutSample {
                server: kind,
                round,
                subscribers: params.subscribers,
                rate_per_sec: params.rate_per_sec,
                result,
            });
        }
        Err(e) => results
            .failures
            .record(format!("{} {scenario} round {round}: {e}", kind.name())),
    }
}

fn report(plan: &Plan, results: Results) -> PubsubReport {
    PubsubReport {
        suite: "pubsub",
        command: suite::command_line(),
        machine: MachineInfo::read(),
        versions: Versions::read(
            &plan.redis,
            None,
            plan.densekv.as_deref(),
            plan.densekv_status.clone(),
        ),
        config: plan.config.clone(),
        figures: pubsub_report::summary_rows(&results.throughput, &results.fanout),
        details: pubsub_report::detail_rows(&results.throughput, &results.fanout),
        throughput_rounds: results.throughput,
        fanout_rounds: results.fanout,
        notes: plan.notes.clone(),
        failures: results.failures.into_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::{Plan, PubsubArgs, Scenario, messages_per_publisher};

    #[test]
    fn message_counts_fill_whole_batches() {
        // 3M deliveries to 1 subscriber: 3M messages, 750000 per publisher (a multiple of 16).
        assert_eq!(messages_per_publisher(3_000_000, 1, 4, 16), 750_000);
        // To 100: 30000 messages, 7500 per publisher, rounded up to 7504.
        assert_eq!(messages_per_publisher(3_000_000, 100, 4, 16), 7504);
        assert_eq!(messages_per_publisher(10, 1000, 4, 16), 16);
    }

    #[test]
    fn defaults_and_quick() {
        let c = Plan::config(&PubsubArgs::default());
        assert_eq!((c.rounds, c.deliveries, c.fanout_secs), (3, 3_000_000, 4.0));
        assert_eq!(c.fanout_rate_per_sec, 25);
        assert_eq!((c.publishers, c.depth, c.maxclients), (4, 16, 4000));
        assert_eq!(c.channel_subscribers, vec![1, 10, 100]);
        let quick = PubsubArgs {
            quick: true,
            fanout_subscribers: 5000,
            scenarios: vec![Scenario::Fanout],
            ..PubsubArgs::default()
        };
        let c = Plan::config(&quick);
        assert_eq!((c.rounds, c.deliveries, c.fanout_secs), (1, 300_000, 2.0));
        assert_eq!(c.maxclients, 5020);
    }
}
