//! The server suite's results: rows built from the measurements, the tables printed on stdout,
//! the JSON document (`bench-results/server.json`) and `docs/BENCHMARKS.md`.
//!
//! * **Memory** (workload × server at N): bytes of resident memory per entry
//!   (ΔVmRSS / N), `used_memory` per entry, and densekv/redis ratios (below 1 is denser).
//! * **Throughput** (test × pipeline depth): the median over rounds of requests/s, p50 and p99
//!   latency per server, and densekv/redis ratios. The rps ratio is the median of the per-round
//!   ratios: the two servers of one round run back to back, so pairing by round cancels a noisy
//!   neighbour's slow minute (the heap suite pairs by pass for the same reason). Above 1 is faster.
//! * **Growth**: the memory rows at every N, and `set`/`get` on a server already holding N
//!   `strings` keys (`-r N`, so every `GET` hits).
//!
//! * **Sorted sets (issue #31)**: the big zset's resident and `used_memory` bytes per member,
//!   the mid-size zsets' `MEMORY USAGE` per member, and one line per figure the issue sets a
//!   target for (the persist suite's [`Headline`]): ≤ 48 B/member for the big zset, ≤ 0.5× redis
//!   for the mid-size ones, ≥ 1.0× redis's rps for every sorted-set and `lrange_*` test.
//!
//! A value that could not be measured is `n/a` (densekv lacks a command), `FAILED` (a wrong
//! value, a crash) or `-` (a ratio without both sides).

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::machine::MachineInfo;
use crate::persist_markdown::headline_table;
use crate::persist_report::Headline;
use crate::server_memory::{MemoryMeasurement, Outcome};
use crate::server_proc::ServerKind;
use crate::server_rb::{self, BenchSample};
use crate::server_workload::MemWorkload;
use crate::server_zsets::{self, MidFigure};
use crate::stats::{median, ratio};

/// The throughput tests issue #31 sets its ≥ 1.0× target for.
pub const ISSUE_TESTS: [&str; 9] = [
    "zadd",
    "zpopmin",
    "lrange_100",
    "lrange_300",
    "lrange_500",
    "lrange_600",
    "zrangebyscore",
    "zrank",
    "zadd_big",
];

/// One workload at one N, both servers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryRow {
    pub workload: MemWorkload,
    pub command: &'static str,
    pub entry_unit: &'static str,
    pub entries: u64,
    pub densekv: MemoryMeasurement,
    pub redis: MemoryMeasurement,
    pub densekv_rss_per_entry: Option<f64>,
    pub redis_rss_per_entry: Option<f64>,
    pub densekv_used_per_entry: Option<f64>,
    pub redis_used_per_entry: Option<f64>,
    /// densekv / redis of the resident bytes per entry.
    pub rss_ratio: Option<f64>,
    pub used_ratio: Option<f64>,
}

impl MemoryRow {
    pub fn new(
        workload: MemWorkload,
        densekv: MemoryMeasurement,
        redis: MemoryMeasurement,
    ) -> Self {
        let (d_rss, r_rss) = (densekv.rss_per_entry(), redis.rss_per_entry());
        let (d_used, r_used) = (densekv.used_per_entry(), redis.used_per_entry());
        Self {
            workload,
            command: workload.describe(),
            entry_unit: workload.entry_unit(),
            entries: redis.entries,
            rss_ratio: d_rss.and_then(|d| ratio(d, r_rss)),
            used_ratio: d_used.and_then(|d| ratio(d, r_used)),
            densekv_rss_per_entry: d_rss,
            redis_rss_per_entry: r_rss,
            densekv_used_per_entry: d_used,
            redis_used_per_entry: r_used,
            densekv,
            redis,
        }
    }
}

/// Issue #31's big zset (`server_zsets.rs`), both servers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ZsetBigRow {
    pub members: u64,
    pub densekv: MemoryMeasurement,
    pub redis: MemoryMeasurement,
    pub densekv_rss_per_member: Option<f64>,
    pub redis_rss_per_member: Option<f64>,
    pub densekv_used_per_member: Option<f64>,
    pub redis_used_per_member: Option<f64>,
    /// densekv / redis of the resident bytes per member.
    pub rss_ratio: Option<f64>,
    pub used_ratio: Option<f64>,
}

impl ZsetBigRow {
    pub fn new(densekv: MemoryMeasurement, redis: MemoryMeasurement) -> Self {
        let (d_rss, r_rss) = (densekv.rss_per_entry(), redis.rss_per_entry());
        let (d_used, r_used) = (densekv.used_per_entry(), redis.used_per_entry());
        Self {
            members: redis.entries,
            rss_ratio: d_rss.and_then(|d| ratio(d, r_rss)),
            used_ratio: d_used.and_then(|d| ratio(d, r_used)),
            densekv_rss_per_member: d_rss,
            redis_rss_per_member: r_rss,
            densekv_used_per_member: d_used,
            redis_used_per_member: r_used,
            densekv,
            redis,
        }
    }
}

/// One of issue #31's mid-size zsets: `MEMORY USAGE key SAMPLES 0` on both servers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ZsetMidRow {
    pub members: u64,
    pub densekv_bytes: Option<u64>,
    pub redis_bytes: Option<u64>,
    pub densekv_per_member: Option<f64>,
    pub redis_per_member: Option<f64>,
    /// densekv / redis of the bytes per member.
    pub ratio: Option<f64>,
    /// `ok`, `n/a` or `FAILED`: how each server's measurement ended.
    pub densekv_status: &'static str,
    pub redis_status: &'static str,
}

/// One row per size of `sizes` from each server's figures (or why it has none).
pub fn zset_mid_rows(
    sizes: &[u64],
    densekv: &Result<Vec<MidFigure>, Outcome>,
    redis: &Result<Vec<MidFigure>, Outcome>,
) -> Vec<ZsetMidRow> {
    let bytes = |figures: &Result<Vec<MidFigure>, Outcome>, members: u64| {
        figures
            .as_ref()
            .ok()?
            .iter()
            .find(|f| f.members == members)
            .map(|f| f.bytes)
    };
    let status = |figures: &Result<Vec<MidFigure>, Outcome>| match figures {
        Ok(_) => Outcome::Ok.short(),
        Err(outcome) => outcome.short(),
    };
    sizes
        .iter()
        .map(|&members| {
            let (d, r) = (bytes(densekv, members), bytes(redis, members));
            let per_member = |b: Option<u64>| b.map(|b| b as f64 / members as f64);
            let (d_per, r_per) = (per_member(d), per_member(r));
            ZsetMidRow {
                members,
                densekv_bytes: d,
                redis_bytes: r,
                densekv_per_member: d_per,
                redis_per_member: r_per,
                ratio: d_per.and_then(|d| ratio(d, r_per)),
                densekv_status: status(densekv),
                redis_status: status(redis),
            }
        })
        .collect()
}

/// Whether `value` meets `target` as the tables print it (two decimals for ratios), so a
/// printed 1.00x is never judged short of 1.0.
fn judged(value: Option<f64>, met: impl Fn(f64) -> bool) -> Option<bool> {
    value.map(|v| met((v * 100.0).round() / 100.0))
}

/// One line per figure issue #31 sets a target for (module doc), those measured in this run.
pub fn issue_targets(
    big: Option<&ZsetBigRow>,
    mid: &[ZsetMidRow],
    throughput: &[ThroughputRow],
) -> Vec<Headline> {
    let mut lines = Vec::new();
    if let Some(big) = big {
        let target = server_zsets::BIG_TARGET_BYTES_PER_MEMBER;
        lines.push(Headline {
            figure: format!("zset_big ({} members): resident B/member", big.members),
            densekv: big.densekv_rss_per_member,
            redis: big.redis_rss_per_member,
            ratio: big.rss_ratio,
            target: format!("densekv <= {target:.0}"),
            met: big.densekv_rss_per_member.map(|d| d <= target),
        });
    }
    for row in mid {
        let target = server_zsets::MID_TARGET_RATIO;
        lines.push(Headline {
            figure: format!("zset_mid ({} members): MEMORY USAGE B/member", row.members),
            densekv: row.densekv_per_member,
            redis: row.redis_per_member,
            ratio: row.ratio,
            target: format!("ratio <= {target:.2}"),
            met: judged(row.ratio, |r| r <= target),
        });
    }
    for row in throughput
        .iter()
        .filter(|row| ISSUE_TESTS.contains(&row.test.as_str()))
    {
        lines.push(Headline {
            figure: format!("{} -P {}: requests/s", row.test, row.pipeline),
            densekv: row.densekv.as_ref().map(|s| s.rps),
            redis: row.redis.as_ref().map(|s| s.rps),
            ratio: row.rps_ratio,
            target: "ratio >= 1.00".to_owned(),
            met: judged(row.rps_ratio, |r| r >= 1.0),
        });
    }
    lines
}

/// One redis-benchmark run of one server: every test's sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchRun {
    pub round: usize,
    pub server: ServerKind,
    pub pipeline: u32,
    /// `-r`: the keyspace size.
    pub keyspace: u64,
    pub samples: Vec<BenchSample>,
}

/// Medians over the rounds of one (server, test, pipeline).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchStat {
    pub rps: f64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub rps_rounds: Vec<f64>,
}

/// One test at one pipeline depth, both servers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThroughputRow {
    pub test: String,
    pub pipeline: u32,
    pub keyspace: u64,
    pub densekv: Option<BenchStat>,
    pub redis: Option<BenchStat>,
    /// Why densekv has no figure (`n/a: -ERR unknown command ...`).
    pub densekv_note: Option<String>,
    /// densekv / redis requests per second, median of per-round ratios.
    pub rps_ratio: Option<f64>,
    /// densekv / redis p99 latency (below 1 is better).
    pub p99_ratio: Option<f64>,
}

fn stat(runs: &[&BenchRun], test: &str) -> Option<(BenchStat, Vec<(usize, f64)>)> {
    let hits: Vec<(usize, &BenchSample)> = runs
        .iter()
        .filter_map(|run| {
            let sample = run.samples.iter().find(|s| s.test == test)?;
            Some((run.round, sample))
        })
        .collect();
    let rps_rounds: Vec<f64> = hits.iter().map(|(_, s)| s.rps).collect();
    let latency = |pick: fn(&BenchSample) -> Option<f64>| {
        let values: Vec<f64> = hits.iter().filter_map(|(_, s)| pick(s)).collect();
        median(&values)
    };
    let stat = BenchStat {
        rps: median(&rps_rounds)?,
        p50_ms: latency(|s| s.p50_ms),
        p99_ms: latency(|s| s.p99_ms),
        rps_rounds: rps_rounds.clone(),
    };
    Some((
        stat,
        hits.iter().map(|(round, s)| (*round, s.rps)).collect(),
    ))
}

/// Builds one row per (test, pipeline) from the raw runs. `unsupported` holds densekv's probe
/// failures (test, error); those tests have no densekv figure and say why.
pub fn throughput_rows(
    runs: &[BenchRun],
    tests: &[&str],
    pipelines: &[u32],
    unsupported: &[(String, String)],
) -> Vec<ThroughputRow> {
    let mut rows = Vec::new();
    for &pipeline in pipelines {
        for &test in tests {
            let of = |server: ServerKind| -> Vec<&BenchRun> {
                runs.iter()
                    .filter(|r| r.server == server && r.pipeline == pipeline)
                    .collect()
            };
            let densekv = stat(&of(ServerKind::Densekv), test);
            let redis = stat(&of(ServerKind::Redis), test);
            let keyspace = runs.first().map_or(0, |r| r.keyspace);
            let paired: Vec<f64> = match (&densekv, &redis) {
                (Some((_, d)), Some((_, r))) => d
                    .iter()
                    .filter_map(|(round, rps)| {
                        let peer = r.iter().find(|(pr, _)| pr == round).map(|(_, p)| *p);
                        ratio(*rps, peer)
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let densekv = densekv.map(|(s, _)| s);
            let redis = redis.map(|(s, _)| s);
            let note = unsupported
                .iter()
                .find(|(t, _)| t == test)
                .map(|(_, why)| format!("n/a: {why}"))
                .or_else(|| densekv.is_none().then(|| "no result".to_owned()));
            rows.push(ThroughputRow {
                test: test.to_owned(),
                pipeline,
                keyspace,
                p99_ratio: match (&densekv, &redis) {
                    (Some(d), Some(r)) => d.p99_ms.and_then(|d| ratio(d, r.p99_ms)),
                    _ => None,
                },
                rps_ratio: median(&paired),
                densekv_note: note,
                densekv,
                redis,
            });
        }
    }
    rows
}

/// The lowest rps ratio among the rows that have one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Worst {
    pub test: String,
    pub pipeline: u32,
    pub rps_ratio: f64,
}

pub fn worst_ratio(rows: &[ThroughputRow]) -> Option<Worst> {
    rows.iter()
        .filter_map(|row| {
            row.rps_ratio.map(|r| Worst {
                test: row.test.clone(),
                pipeline: row.pipeline,
                rps_ratio: r,
            })
        })
        .min_by(|a, b| a.rps_ratio.total_cmp(&b.rps_ratio))
}

/// Versions and where the servers came from.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Versions {
    pub redis_server: Option<String>,
    pub redis_benchmark: Option<String>,
    pub densekv_path: Option<String>,
    /// `ok`, or why densekv was not measured at all.
    pub densekv_status: String,
}

impl Versions {
    /// The versions the binaries report (`redis_benchmark` where the suite runs it) and the
    /// densekv binary measured, if any.
    pub fn read(
        redis: &Path,
        redis_benchmark: Option<&Path>,
        densekv: Option<&Path>,
        densekv_status: String,
    ) -> Self {
        Self {
            redis_server: server_rb::version(redis),
            redis_benchmark: redis_benchmark.and_then(server_rb::version),
            densekv_path: densekv.map(|p| p.display().to_string()),
            densekv_status,
        }
    }
}

/// The suite's parameters.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Config {
    pub n: u64,
    pub quick: bool,
    pub rounds: usize,
    pub requests_p1: u64,
    pub requests_p16: u64,
    /// Requests of each `lrange_*` test, at either depth.
    pub lrange_requests: u64,
    pub clients: u32,
    pub keyspace: u64,
    pub growth_sizes: Vec<u64>,
    pub sample_count: usize,
    pub batch_len: u64,
    /// Seconds waited after a load before memory is read (at least; then until `VmRSS` is still).
    pub settle_secs: f64,
    /// Members of issue #31's big zset, and members per ZADD of its load.
    pub zset_big_members: u64,
    pub zset_members_per_zadd: u64,
    /// Members of each mid-size zset.
    pub zset_mid_sizes: Vec<u64>,
}

/// Everything `bench-results/server.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct ServerSuiteReport {
    pub suite: &'static str,
    pub command: String,
    pub machine: MachineInfo,
    pub versions: Versions,
    pub config: Config,
    pub memory: Vec<MemoryRow>,
    pub throughput: Vec<ThroughputRow>,
    pub worst: Option<Worst>,
    pub growth_memory: Vec<MemoryRow>,
    pub growth_throughput: Vec<ThroughputRow>,
    pub zset_big: Option<ZsetBigRow>,
    pub zset_mid: Vec<ZsetMidRow>,
    /// Issue #31's targets, judged on this run's figures.
    pub issue_targets: Vec<Headline>,
    /// The exact redis-benchmark command lines (with `P` for the port).
    pub benchmark_commands: Vec<String>,
    pub not_applicable: Vec<String>,
    pub failures: Vec<String>,
    pub runs: Vec<BenchRun>,
}

pub fn num(value: Option<f64>, precision: usize) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.precision$}"))
}

pub fn ratio_text(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}x"))
}

/// A per-entry figure, or why there is none.
fn per_entry(m: &MemoryMeasurement, value: Option<f64>) -> String {
    match (&m.outcome, value) {
        (Outcome::Ok, Some(v)) => format!("{v:.1}"),
        (Outcome::Ok, None) => "-".to_owned(),
        (outcome, _) => outcome.short().to_owned(),
    }
}

/// Entries per second through the pipelined loader, or why there is no figure.
fn load_rate(m: &MemoryMeasurement) -> String {
    match (&m.outcome, m.entries_per_sec()) {
        (Outcome::Ok, Some(rate)) => format!("{rate:.0}"),
        (Outcome::Ok, None) => "-".to_owned(),
        (outcome, _) => outcome.short().to_owned(),
    }
}

fn stat_cell(
    stat: Option<&BenchStat>,
    note: Option<&String>,
    pick: fn(&BenchStat) -> Option<f64>,
    precision: usize,
) -> String {
    match (stat, note) {
        (Some(s), _) => num(pick(s), precision),
        (None, Some(n)) if n.starts_with("n/a") => "n/a".to_owned(),
        (None, _) => "-".to_owned(),
    }
}

/// The memory table, as plain text (`markdown == false`) or a Markdown table.
pub fn memory_table(rows: &[MemoryRow], markdown: bool) -> String {
    let header = [
        "workload",
        "N",
        "entry",
        "densekv B/entry",
        "redis B/entry",
        "ratio",
        "densekv used/entry",
        "redis used/entry",
        "used ratio",
    ];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            vec![
                row.workload.name().to_owned(),
                row.entries.to_string(),
                row.entry_unit.to_owned(),
                per_entry(&row.densekv, row.densekv_rss_per_entry),
                per_entry(&row.redis, row.redis_rss_per_entry),
                ratio_text(row.rss_ratio),
                per_entry(&row.densekv, row.densekv_used_per_entry),
                per_entry(&row.redis, row.redis_used_per_entry),
                ratio_text(row.used_ratio),
            ]
        })
        .collect();
    table(&header, &body, markdown)
}

/// The throughput table.
pub fn throughput_table(rows: &[ThroughputRow], markdown: bool) -> String {
    let header = [
        "test",
        "-P",
        "densekv rps",
        "redis rps",
        "rps ratio",
        "densekv p50 ms",
        "redis p50 ms",
        "densekv p99 ms",
        "redis p99 ms",
        "p99 ratio",
    ];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let note = row.densekv_note.as_ref();
            let d = row.densekv.as_ref();
            let r = row.redis.as_ref();
            vec![
                row.test.clone(),
                row.pipeline.to_string(),
                stat_cell(d, note, |s| Some(s.rps), 0),
                stat_cell(r, None, |s| Some(s.rps), 0),
                ratio_text(row.rps_ratio),
                stat_cell(d, note, |s| s.p50_ms, 3),
                stat_cell(r, None, |s| s.p50_ms, 3),
                stat_cell(d, note, |s| s.p99_ms, 3),
                stat_cell(r, None, |s| s.p99_ms, 3),
                ratio_text(row.p99_ratio),
            ]
        })
        .collect();
    table(&header, &body, markdown)
}

/// Issue #31's big zset: one line, bytes per member on both servers.
pub fn zset_big_table(row: &ZsetBigRow, markdown: bool) -> String {
    let header = [
        "members",
        "densekv B/member",
        "redis B/member",
        "ratio",
        "densekv used/member",
        "redis used/member",
        "used ratio",
        "densekv load/s",
        "redis load/s",
    ];
    let body = vec![vec![
        row.members.to_string(),
        per_entry(&row.densekv, row.densekv_rss_per_member),
        per_entry(&row.redis, row.redis_rss_per_member),
        ratio_text(row.rss_ratio),
        per_entry(&row.densekv, row.densekv_used_per_member),
        per_entry(&row.redis, row.redis_used_per_member),
        ratio_text(row.used_ratio),
        load_rate(&row.densekv),
        load_rate(&row.redis),
    ]];
    table(&header, &body, markdown)
}

/// Issue #31's mid-size zsets: `MEMORY USAGE` and bytes per member on both servers.
pub fn zset_mid_table(rows: &[ZsetMidRow], markdown: bool) -> String {
    let header = [
        "members",
        "densekv bytes",
        "redis bytes",
        "densekv B/member",
        "redis B/member",
        "ratio",
    ];
    let cell = |value: Option<String>, status: &str| value.unwrap_or_else(|| status.to_owned());
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let (d, r) = (row.densekv_status, row.redis_status);
            vec![
                row.members.to_string(),
                cell(row.densekv_bytes.map(|b| b.to_string()), d),
                cell(row.redis_bytes.map(|b| b.to_string()), r),
                cell(row.densekv_per_member.map(|v| format!("{v:.1}")), d),
                cell(row.redis_per_member.map(|v| format!("{v:.1}")), r),
                ratio_text(row.ratio),
            ]
        })
        .collect();
    table(&header, &body, markdown)
}

/// Growth: one line per (workload, N) for memory.
pub fn growth_table(rows: &[MemoryRow], markdown: bool) -> String {
    let header = [
        "workload",
        "N",
        "densekv B/entry",
        "redis B/entry",
        "ratio",
        "densekv load/s",
        "redis load/s",
    ];
    let mut sorted: Vec<&MemoryRow> = rows.iter().collect();
    sorted.sort_by_key(|r| {
        (
            MemWorkload::ALL.iter().position(|w| *w == r.workload),
            r.entries,
        )
    });
    let body: Vec<Vec<String>> = sorted
        .iter()
        .map(|row| {
            vec![
                row.workload.name().to_owned(),
                row.entries.to_string(),
                per_entry(&row.densekv, row.densekv_rss_per_entry),
                per_entry(&row.redis, row.redis_rss_per_entry),
                ratio_text(row.rss_ratio),
                load_rate(&row.densekv),
                load_rate(&row.redis),
            ]
        })
        .collect();
    table(&header, &body, markdown)
}

/// Growth: `set`/`get` throughput against a server holding N keys.
pub fn growth_throughput_table(rows: &[ThroughputRow], markdown: bool) -> String {
    let header = [
        "N keys",
        "test",
        "-P",
        "densekv rps",
        "redis rps",
        "rps ratio",
        "p99 ratio",
    ];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let note = row.densekv_note.as_ref();
            vec![
                row.keyspace.to_string(),
                row.test.clone(),
                row.pipeline.to_string(),
                stat_cell(row.densekv.as_ref(), note, |s| Some(s.rps), 0),
                stat_cell(row.redis.as_ref(), None, |s| Some(s.rps), 0),
                ratio_text(row.rps_ratio),
                ratio_text(row.p99_ratio),
            ]
        })
        .collect();
    table(&header, &body, markdown)
}

/// Lays out a table: right-aligned padded columns, or Markdown (left column left-aligned,
/// numbers right-aligned).
pub fn table(header: &[&str], body: &[Vec<String>], markdown: bool) -> String {
    let mut out = String::new();
    if markdown {
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let align: Vec<&str> = (0..header.len())
            .map(|i| if i == 0 { "---" } else { "---:" })
            .collect();
        let _ = writeln!(out, "|{}|", align.join("|"));
        for row in body {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        return out;
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            body.iter()
                .map(|row| row.get(i).map_or(0, String::len))
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, &w))| {
                if i == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    let _ = writeln!(out, "{}", line(&header));
    for row in body {
        let _ = writeln!(out, "{}", line(row));
    }
    out
}

/// The text printed on stdout at the end of a run.
pub fn render(report: &ServerSuiteReport) -> String {
    let mut out = String::new();
    if !report.memory.is_empty() {
        let _ = writeln!(
            out,
            "\nmemory at N = {}: resident bytes per entry (ΔVmRSS / N) and used_memory per entry; \
             ratio = densekv / redis\n",
            report.config.n
        );
        out.push_str(&memory_table(&report.memory, false));
    }
    if !report.throughput.is_empty() {
        let _ = writeln!(
            out,
            "\nthroughput: redis-benchmark -c {} -r {}, medians of {} rounds; rps ratio = median \
             of per-round densekv / redis\n",
            report.config.clients, report.config.keyspace, report.config.rounds
        );
        out.push_str(&throughput_table(&report.throughput, false));
        match &report.worst {
            Some(w) => {
                let _ = writeln!(
                    out,
                    "\nworst rps ratio: {} at -P {}: {:.2}x",
                    w.test, w.pipeline, w.rps_ratio
                );
            }
            None => out.push_str("\nworst rps ratio: - (no test measured on both servers)\n"),
        }
    }
    render_zsets(&mut out, report);
    if !report.growth_memory.is_empty() {
        out.push_str("\ngrowth: memory per entry and load rate at every N\n\n");
        out.push_str(&growth_table(&report.growth_memory, false));
    }
    if !report.growth_throughput.is_empty() {
        out.push_str("\ngrowth: set/get against a server holding N `strings` keys (-r N)\n\n");
        out.push_str(&growth_throughput_table(&report.growth_throughput, false));
    }
    for note in &report.not_applicable {
        let _ = writeln!(out, "n/a: {note}");
    }
    for failure in &report.failures {
        let _ = writeln!(out, "\nFAILED: {failure}");
    }
    out
}

/// The sorted-set tables and issue #31's targets, on stdout.
fn render_zsets(out: &mut String, report: &ServerSuiteReport) {
    if let Some(big) = &report.zset_big {
        let _ = writeln!(
            out,
            "\nzset_big: one zset of {} members member:%012d, {} a ZADD; ΔVmRSS and used_memory \
             per member\n",
            big.members, report.config.zset_members_per_zadd
        );
        out.push_str(&zset_big_table(big, false));
    }
    if !report.zset_mid.is_empty() {
        out.push_str("\nzset_mid: MEMORY USAGE key SAMPLES 0 per member\n\n");
        out.push_str(&zset_mid_table(&report.zset_mid, false));
    }
    if !report.issue_targets.is_empty() {
        out.push_str("\nissue #31 targets (sorted sets and lists)\n\n");
        out.push_str(&headline_table(&report.issue_targets, false));
    }
}

/// `docs/BENCHMARKS.md`.
pub fn markdown(report: &ServerSuiteReport) -> String {
    let mut out = String::new();
    let m = &report.machine;
    let v = &report.versions;
    let unknown = || "unknown".to_owned();
    let _ = writeln!(
        out,
        "# Benchmarks: densekv against redis-server\n\n\
         Generated by `{}` on {}. Every figure below comes from one run of that command, both \
         servers on the same machine, one measured at a time; regenerate with the same command \
         (`bench/plot.py` draws the charts from `bench-results/server.json`).\n",
        report.command, m.date_utc
    );
    let _ = writeln!(
        out,
        "## Machine and versions\n\n\
         - CPU: {} ({} logical CPUs, `nproc`), {:.1} GiB memory, Linux {}\n\
         - redis-server: {}\n- redis-benchmark: {}\n- densekv: {} ({})\n\n\
         The machine is a shared 2-core VM: other tenants' load moves absolute numbers by tens of \
         percent between minutes, which is why every throughput figure is a median over rounds and \
         the ratios pair the two servers' runs of one test, taken seconds apart.\n",
        m.cpu_model,
        m.nproc,
        m.mem_total_bytes as f64 / (1u64 << 30) as f64,
        m.kernel,
        v.redis_server.clone().unwrap_or_else(unknown),
        v.redis_benchmark.clone().unwrap_or_else(unknown),
        v.densekv_path
            .clone()
            .unwrap_or_else(|| "not found".to_owned()),
        v.densekv_status,
    );
    markdown_memory(&mut out, report);
    markdown_throughput(&mut out, report);
    markdown_zsets(&mut out, report);
    markdown_growth(&mut out, report);
    if !report.not_applicable.is_empty() || !report.failures.is_empty() {
        out.push_str("## Not measured\n\n");
        for note in &report.not_applicable {
            let _ = writeln!(out, "- n/a: {note}");
        }
        for failure in &report.failures {
            let _ = writeln!(out, "- FAILED: {failure}");
        }
        out.push('\n');
    }
    out
}

fn markdown_memory(out: &mut String, report: &ServerSuiteReport) {
    if report.memory.is_empty() {
        return;
    }
    let c = &report.config;
    let _ = writeln!(
        out,
        "## Memory per entry\n\n\
         ![bytes per entry](bench-memory.png)\n\n\
         For each workload a fresh server is started (`--save \"\" --appendonly no`, ephemeral \
         port), its `VmRSS` (from `/proc/<pid>/status`) and `used_memory` (from `INFO memory`) are \
         read, N = {} entries are loaded through one pipelined connection (batches of {} \
         commands, every reply checked), the harness waits {:.0} s and then until `VmRSS` has \
         been still for 2 s (redis-server's jemalloc returns freed pages over a 10 s decay; \
         reading earlier overstates list and sorted-set costs up to 2.5×), reads both again and reads back {} sampled entries, failing on any difference. \
         *B/entry* is ΔVmRSS / N; *used/entry* is Δ`used_memory` / N; ratios are densekv / redis \
         (below 1 means densekv is denser). An entry is what one command adds: a key for the \
         string workloads, a field for `bucket`, a whole 5-field hash for `users` (the data-types \
         issue's target is per user), an item, member or member/score for lists, sets and zsets \
         (spread over 10,000 keys each).\n",
        c.n, c.batch_len, c.settle_secs, c.sample_count
    );
    out.push_str("| workload | command |\n|---|---|\n");
    for row in &report.memory {
        let _ = writeln!(out, "| {} | `{}` |", row.workload.name(), row.command);
    }
    out.push('\n');
    out.push_str(&memory_table(&report.memory, true));
    out.push('\n');
}

fn markdown_throughput(out: &mut String, report: &ServerSuiteReport) {
    if report.throughput.is_empty() {
        return;
    }
    let c = &report.config;
    let _ = writeln!(
        out,
        "## Throughput and latency\n\n\
         ![throughput ratio](bench-throughput.png)\n\n\
         redis-benchmark with {} clients and random keys (`-r {}`), every standard test, at `-P 1` \
         and `-P 16`; {} rounds, each on a fresh pair of servers, running every test on one and \
         then straight on the other (who goes first alternates by test and by round). Figures are \
         medians over rounds; the rps ratio is the median of per-round ratios densekv / redis \
         (above 1 means densekv is faster); the p99 ratio is below 1 when densekv's tail is \
         shorter. The `lrange_*` tests run {} requests at either depth. Commands (`P` is the \
         ephemeral port):\n",
        c.clients, c.keyspace, c.rounds, c.lrange_requests
    );
    out.push_str("```sh\n");
    for command in &report.benchmark_commands {
        let _ = writeln!(out, "{command}");
    }
    out.push_str("```\n\n");
    out.push_str(&throughput_table(&report.throughput, true));
    match &report.worst {
        Some(w) => {
            let _ = writeln!(
                out,
                "\n**Worst throughput ratio:** `{}` at `-P {}`: {:.2}x.\n",
                w.test, w.pipeline, w.rps_ratio
            );
        }
        None => out.push_str("\n**Worst throughput ratio:** none measured on both servers.\n\n"),
    }
}

fn markdown_zsets(out: &mut String, report: &ServerSuiteReport) {
    if report.zset_big.is_none() && report.zset_mid.is_empty() && report.issue_targets.is_empty() {
        return;
    }
    let c = &report.config;
    out.push_str(
        "## Sorted sets and lists (issue #31)\n\n\
         Members are `member:%012d` (19 bytes) with score `i` for even `i` and `i × 1.5` for odd \
         `i`. The issue's targets: at most 48 resident bytes per member of a large zset, at most \
         half of redis-server's `MEMORY USAGE` per member for mid-size zsets, and at least \
         redis-server's requests per second for every sorted-set and `lrange_*` test.\n\n",
    );
    if let Some(big) = &report.zset_big {
        let _ = writeln!(
            out,
            "**One zset of {} members**, loaded into a fresh server by ZADDs of {} members \
             each, one command at a time, the load's connection closed before memory is read \
             again; then measured as the memory table above (settle, ΔVmRSS and Δ`used_memory` \
             per member, sampled `ZSCORE` read-back).\n",
            big.members, c.zset_members_per_zadd
        );
        out.push_str(&zset_big_table(big, true));
        out.push('\n');
    }
    if !report.zset_mid.is_empty() {
        out.push_str(
            "**Mid-size zsets**, each loaded by one ZADD into one fresh server per kind: \
             `MEMORY USAGE key SAMPLES 0` (every member counted) per member. All are past \
             redis-server's `zset-max-listpack-entries` (128), so redis-server holds skiplists.\n\n",
        );
        out.push_str(&zset_mid_table(&report.zset_mid, true));
        out.push('\n');
    }
    if !report.issue_targets.is_empty() {
        out.push_str(
            "**Targets.** The throughput lines come from the table above; `zrangebyscore`, \
             `zrank` and `zadd_big` run commands of their own against a zset prefilled the same \
             way on both servers before each run (`zbench`: 1,000 members; `zbig`: the big \
             zset's size, with `-r` twice that, so half the ZADDs update a member and half add \
             one).\n\n",
        );
        out.push_str(&headline_table(&report.issue_targets, true));
        out.push('\n');
    }
}

fn markdown_growth(out: &mut String, report: &ServerSuiteReport) {
    if report.growth_memory.is_empty() {
        return;
    }
    let sizes: Vec<String> = report
        .config
        .growth_sizes
        .iter()
        .map(u64::to_string)
        .collect();
    let _ = writeln!(
        out,
        "## Growth\n\n![memory growth](bench-growth.png)\n\n\
         Memory per entry and load rate (entries per second through the pipelined loader) at \
         N = {}, measured as above.\n",
        sizes.join(", ")
    );
    out.push_str(&growth_table(&report.growth_memory, true));
    if !report.growth_throughput.is_empty() {
        out.push_str(
            "\n`set` and `get` from redis-benchmark (same options, `-r N`) against the server \
             still holding the N keys of the `strings` workload, so every `GET` finds its key \
             (the workload's keys are redis-benchmark's `key:%012d`):\n\n",
        );
        out.push_str(&growth_throughput_table(&report.growth_throughput, true));
    }
    out.push('\n');
}

#[cfg(test)]
// The expected figures are sums and halves of small integers, exact in binary floating point.
#[allow(clippy::float_cmp)]
mod tests {
    use super::{
        BenchRun, Config, MemoryRow, ServerSuiteReport, Versions, ZsetBigRow, ZsetMidRow,
        issue_targets, markdown, memory_table, render, throughput_rows, worst_ratio, zset_mid_rows,
    };
    use crate::machine::MachineInfo;
    use crate::server_memory::{MemoryMeasurement, Outcome};
    use crate::server_proc::ServerKind;
    use crate::server_rb::BenchSample;
    use crate::server_workload::MemWorkload;
    use crate::server_zsets::MidFigure;

    fn measured(entries: u64, rss_delta: u64) -> MemoryMeasurement {
        let mut m = MemoryMeasurement::not_applicable(entries, String::new());
        m.outcome = Outcome::Ok;
        m.rss_before_bytes = 1 << 20;
        m.rss_after_bytes = (1 << 20) + rss_delta;
        m.used_memory_before_bytes = Some(1000);
        m.used_memory_after_bytes = Some(1000 + rss_delta / 2);
        m.load_secs = 1.0;
        m
    }

    fn run(round: usize, server: ServerKind, rps: &[(&str, f64)]) -> BenchRun {
        BenchRun {
            round,
            server,
            pipeline: 1,
            keyspace: 1_000_000,
            samples: rps
                .iter()
                .map(|(test, rps)| BenchSample {
                    test: (*test).to_owned(),
                    rps: *rps,
                    avg_ms: Some(0.5),
                    p50_ms: Some(0.4),
                    p99_ms: Some(rps / 100_000.0),
                })
                .collect(),
        }
    }

    /// `zrank` runs whose per-round ratios are 1.2 and 0.9.
    fn zrank_runs() -> Vec<BenchRun> {
        [
            (1, ServerKind::Densekv, 120_000.0),
            (1, ServerKind::Redis, 100_000.0),
            (2, ServerKind::Densekv, 90_000.0),
            (2, ServerKind::Redis, 100_000.0),
        ]
        .into_iter()
        .map(|(round, server, rps)| run(round, server, &[("zrank", rps)]))
        .collect()
    }

    fn zset_rows() -> (ZsetBigRow, Vec<ZsetMidRow>) {
        let zset_big = ZsetBigRow::new(measured(1000, 40_000), measured(1000, 100_000));
        let mid = |members, bytes| MidFigure { members, bytes };
        let zset_mid = zset_mid_rows(
            &[129, 300],
            &Ok(vec![mid(129, 2580), mid(300, 6600)]),
            &Ok(vec![mid(129, 12_900), mid(300, 30_000)]),
        );
        (zset_big, zset_mid)
    }

    fn report() -> ServerSuiteReport {
        let memory = vec![
            MemoryRow::new(
                MemWorkload::Strings,
                measured(1000, 44_000),
                measured(1000, 130_000),
            ),
            MemoryRow::new(
                MemWorkload::Bucket,
                MemoryMeasurement::not_applicable(1000, "-ERR unknown command 'HSET'".into()),
                measured(1000, 67_000),
            ),
        ];
        let runs = vec![
            run(
                1,
                ServerKind::Densekv,
                &[("set", 110_000.0), ("get", 90_000.0)],
            ),
            run(
                1,
                ServerKind::Redis,
                &[("set", 100_000.0), ("get", 100_000.0), ("hset", 80_000.0)],
            ),
            run(
                2,
                ServerKind::Redis,
                &[("set", 50_000.0), ("get", 100_000.0), ("hset", 80_000.0)],
            ),
            run(
                2,
                ServerKind::Densekv,
                &[("set", 60_000.0), ("get", 95_000.0)],
            ),
        ];
        let unsupported = vec![("hset".to_owned(), "HSET: -ERR unknown command".to_owned())];
        let tests = ["set", "get", "hset", "zrank"];
        let mut runs = runs;
        runs.extend(zrank_runs());
        let throughput = throughput_rows(&runs, &tests, &[1], &unsupported);
        let (zset_big, zset_mid) = zset_rows();
        let targets = issue_targets(Some(&zset_big), &zset_mid, &throughput);
        ServerSuiteReport {
            suite: "server",
            command: "bench server --quick".into(),
            machine: MachineInfo::read(),
            versions: Versions {
                densekv_status: "ok".into(),
                ..Versions::default()
            },
            config: Config {
                n: 1000,
                rounds: 2,
                clients: 50,
                keyspace: 1_000_000,
                ..Config::default()
            },
            worst: worst_ratio(&throughput),
            growth_memory: memory.clone(),
            memory,
            throughput,
            growth_throughput: Vec::new(),
            zset_big: Some(zset_big),
            zset_mid,
            issue_targets: targets,
            benchmark_commands: vec!["redis-benchmark -h 127.0.0.1 -p P -t set".into()],
            not_applicable: vec!["densekv hset: HSET: -ERR unknown command".into()],
            failures: Vec::new(),
            runs,
        }
    }

    #[test]
    fn memory_rows_divide_by_entries_and_compare_with_redis() {
        let r = report();
        let strings = &r.memory[0];
        assert_eq!(strings.densekv_rss_per_entry, Some(44.0));
        assert_eq!(strings.redis_rss_per_entry, Some(130.0));
        assert!((strings.rss_ratio.unwrap() - 44.0 / 130.0).abs() < 1e-12);
        assert_eq!(strings.densekv_used_per_entry, Some(22.0));
        let bucket = &r.memory[1];
        assert_eq!(bucket.densekv_rss_per_entry, None);
        assert_eq!(bucket.rss_ratio, None);
        let text = memory_table(&r.memory, false);
        let bucket_line = text.lines().find(|l| l.starts_with("bucket")).unwrap();
        assert!(
            bucket_line.contains("n/a") && bucket_line.contains("67.0"),
            "{bucket_line}"
        );
    }

    #[test]
    fn throughput_ratios_pair_rounds_and_mark_unsupported_tests() {
        let r = report();
        let set = &r.throughput[0];
        assert_eq!(set.densekv.as_ref().unwrap().rps, 85_000.0);
        // Per-round ratios 1.1 and 1.2, median 1.15 (the ratio of medians would be 1.133).
        assert!((set.rps_ratio.unwrap() - 1.15).abs() < 1e-9);
        let hset = &r.throughput[2];
        assert!(hset.densekv.is_none() && hset.rps_ratio.is_none());
        assert!(hset.densekv_note.as_deref().unwrap().starts_with("n/a"));
        let worst = r.worst.unwrap();
        assert_eq!((worst.test.as_str(), worst.pipeline), ("get", 1));
        assert!((worst.rps_ratio - 0.925).abs() < 1e-9);
    }

    #[test]
    fn zset_rows_and_issue_targets() {
        let r = report();
        let big = r.zset_big.as_ref().unwrap();
        assert_eq!(big.densekv_rss_per_member, Some(40.0));
        assert!((big.rss_ratio.unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(r.zset_mid[0].densekv_per_member, Some(20.0));
        assert_eq!(r.zset_mid[0].redis_per_member, Some(100.0));
        assert_eq!(r.zset_mid[1].ratio, Some(0.22));
        let lines: Vec<(&str, Option<bool>)> = r
            .issue_targets
            .iter()
            .map(|h| (h.figure.as_str(), h.met))
            .collect();
        assert_eq!(
            lines,
            [
                ("zset_big (1000 members): resident B/member", Some(true)),
                ("zset_mid (129 members): MEMORY USAGE B/member", Some(true)),
                ("zset_mid (300 members): MEMORY USAGE B/member", Some(true)),
                // Per-round ratios 1.2 and 0.9: the median 1.05 meets ≥ 1.0; set is no issue test.
                ("zrank -P 1: requests/s", Some(true)),
            ]
        );
        assert_eq!(r.issue_targets[0].target, "densekv <= 48");
        // A server that refused MEMORY USAGE leaves its side n/a and the ratio unjudged.
        let refused = Err(crate::server_memory::Outcome::NotApplicable("-ERR".into()));
        let rows = zset_mid_rows(
            &[129],
            &refused,
            &Ok(vec![MidFigure {
                members: 129,
                bytes: 1290,
            }]),
        );
        assert_eq!((rows[0].densekv_status, rows[0].ratio), ("n/a", None));
        let targets = issue_targets(None, &rows, &[]);
        assert_eq!(targets[0].met, None);
        let table = super::zset_mid_table(&rows, false);
        assert!(table.lines().nth(1).unwrap().contains("n/a"), "{table}");
    }

    #[test]
    fn tables_line_up_and_markdown_has_every_section() {
        let r = report();
        let text = render(&r);
        assert!(
            text.contains("worst rps ratio: get at -P 1: 0.93x"),
            "{text}"
        );
        let table = super::throughput_table(&r.throughput, false);
        let widths: Vec<usize> = table.lines().map(|l| l.chars().count()).collect();
        assert!(widths.windows(2).all(|w| w[0] == w[1]), "{table}");
        let md = markdown(&r);
        for needle in [
            "# Benchmarks",
            "## Machine and versions",
            "## Memory per entry",
            "bench-memory.png",
            "## Throughput and latency",
            "bench-throughput.png",
            "## Growth",
            "bench-growth.png",
            "**Worst throughput ratio:** `get` at `-P 1`: 0.93x",
            "- n/a: densekv hset",
            "| strings | 1000 | key | 44.0 | 130.0 | 0.34x |",
            "## Sorted sets and lists (issue #31)",
            "| zset_big (1000 members): resident B/member | 40.000 | 100.000 | 0.40x | densekv <= 48 | yes |",
            "| 129 | 2580 | 12900 | 20.0 | 100.0 | 0.20x |",
        ] {
            assert!(md.contains(needle), "missing {needle:?} in\n{md}");
        }
        // Every Markdown table row has as many cells as its header.
        for block in md.split("\n\n").filter(|b| b.starts_with("| ")) {
            let cells: Vec<usize> = block.lines().map(|l| l.matches('|').count()).collect();
            assert!(cells.windows(2).all(|w| w[0] == w[1]), "{block}");
        }
    }
}
