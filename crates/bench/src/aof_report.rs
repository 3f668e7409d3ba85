//! The aof suite's results: medians over rounds per server, densekv/redis ratios, and the JSON
//! document (`bench-results/aof.json`).
//!
//! * **Throughput** per (policy, pipeline, test): the medians of each server's rps and p99, and
//!   the median of the per-round ratios densekv/redis (above 1: densekv is faster). The two
//!   servers of a round run seconds apart, so pairing them cancels a noisy neighbour's slow
//!   minute; a ratio of medians could pair one server's quiet round with the other's loud one.
//!   densekv's target: ≥ 1.0 in every cell of `always` and `everysec`; `no` is for reference.
//! * **BGREWRITEAOF peak memory**: the persist suite's BGSAVE summary ([`bgsave_summary`]) of
//!   the rewrite's rounds; densekv's target: peak/before ≤ 1.10.
//! * **Rewrite and load times**: per server, the medians of each figure; the ratio is the median
//!   of the per-round densekv/redis (below 1: densekv is faster). No target: they are reported.
//!
//! The tables and the Markdown are in `aof_markdown.rs`.

use serde::Serialize;

use crate::aof_throughput::{PIPELINES, POLICIES, TESTS, ThroughputSample};
use crate::aof_timing::TimingSample;
use crate::machine::MachineInfo;
use crate::persist_bgsave::BgsaveSample;
use crate::persist_report::{BgsaveSummary, Headline, TARGET_PEAK_RATIO};
use crate::server_proc::ServerKind;
use crate::server_report::Versions;
use crate::stats::{impl_sample, median, median_of, paired_ratios};

/// densekv's target for densekv/redis rps under `always` and `everysec`.
pub const TARGET_RPS_RATIO: f64 = 1.0;

/// The policies the throughput target applies to; `no` is measured for reference.
pub fn has_target(policy: &str) -> bool {
    policy != "no"
}

/// The suite's parameters.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AofConfig {
    pub n: u64,
    pub quick: bool,
    pub rounds: usize,
    /// redis-benchmark's `-n` at `-P 1` and at `-P 16`.
    pub requests_p1: u64,
    pub requests_p16: u64,
    pub clients: u32,
    /// redis-benchmark's `-r`.
    pub keyspace: u64,
    /// SETs after the rewrite, in the incremental file the load figure reads.
    pub incr_sets: u64,
    /// `rdb-key-save-delay` during the rewrite's overwrite.
    pub densekv_delay: i32,
    pub redis_delay: i32,
    pub batch_len: u64,
    pub poll_ms: u64,
    /// The exact redis-benchmark commands, one per pipeline (with `P` for the port).
    pub benchmark_commands: Vec<String>,
}

/// One (policy, pipeline, test) over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThroughputSummary {
    pub policy: &'static str,
    pub pipeline: u32,
    pub test: &'static str,
    pub densekv_rps: Option<f64>,
    pub redis_rps: Option<f64>,
    /// Median of the per-round densekv / redis rps.
    pub ratio: Option<f64>,
    /// Rounds with both servers' figures, and those of them where densekv's rps was at least
    /// redis-server's: how one-sided the median is on this noisy machine.
    pub rounds_paired: usize,
    pub rounds_ahead: usize,
    pub densekv_p99_ms: Option<f64>,
    pub redis_p99_ms: Option<f64>,
    /// Medians of the rewrites each server ran on its own during the run.
    pub densekv_rewrites: Option<f64>,
    pub redis_rewrites: Option<f64>,
    /// Whether the ratio meets [`TARGET_RPS_RATIO`]; `None` for `no` and without a ratio.
    pub met: Option<bool>,
}

/// One figure of the rewrite and load times (or file sizes), both servers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingSummary {
    pub figure: &'static str,
    pub densekv: Option<f64>,
    pub redis: Option<f64>,
    pub ratio: Option<f64>,
}

/// Everything `bench-results/aof.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct AofReport {
    pub suite: &'static str,
    pub command: String,
    pub machine: MachineInfo,
    pub versions: Versions,
    pub config: AofConfig,
    /// One line per figure, with densekv's targets.
    pub headlines: Vec<Headline>,
    pub throughput: Vec<ThroughputSummary>,
    pub rewrite_memory: Vec<BgsaveSummary>,
    /// densekv's peak/before over redis-server's.
    pub rewrite_memory_ratio: Option<f64>,
    pub timing: Vec<TimingSummary>,
    pub throughput_rounds: Vec<ThroughputSample>,
    pub rewrite_memory_rounds: Vec<BgsaveSample>,
    pub timing_rounds: Vec<TimingSample>,
    pub notes: Vec<String>,
    pub failures: Vec<String>,
}

impl_sample!(ThroughputSample, TimingSample);

/// One row per (policy, pipeline, test), in that order.
pub fn throughput_summary(samples: &[ThroughputSample]) -> Vec<ThroughputSummary> {
    let mut rows = Vec::new();
    for policy in POLICIES {
        for pipeline in PIPELINES {
            for test in TESTS {
                let of: Vec<&ThroughputSample> = samples
                    .iter()
                    .filter(|s| s.policy == policy && s.pipeline == pipeline && s.test == test)
                    .collect();
                if of.is_empty() {
                    continue;
                }
                let ratios = paired_ratios(&of, |s| Some(s.rps));
                let ratio = median(&ratios);
                let rewrites = |kind| median_of(&of, kind, |s| Some(s.aof_rewrites as f64));
                rows.push(ThroughputSummary {
                    policy,
                    pipeline,
                    test,
                    densekv_rps: median_of(&of, ServerKind::Densekv, |s| Some(s.rps)),
                    redis_rps: median_of(&of, ServerKind::Redis, |s| Some(s.rps)),
                    ratio,
                    rounds_paired: ratios.len(),
                    rounds_ahead: ratios.iter().filter(|&&r| r >= 1.0).count(),
                    densekv_p99_ms: median_of(&of, ServerKind::Densekv, |s| s.p99_ms),
                    redis_p99_ms: median_of(&of, ServerKind::Redis, |s| s.p99_ms),
                    densekv_rewrites: rewrites(ServerKind::Densekv),
                    redis_rewrites: rewrites(ServerKind::Redis),
                    met: ratio
                        .filter(|_| has_target(policy))
                        .map(|r| r >= TARGET_RPS_RATIO),
                });
            }
        }
    }
    rows
}

/// Reads one figure from a timing sample.
type TimingPick = fn(&TimingSample) -> Option<f64>;

/// One row per figure of the rewrite and load times, and the files' sizes in MiB.
pub fn timing_summary(samples: &[TimingSample]) -> Vec<TimingSummary> {
    let figures: [(&'static str, TimingPick); 7] = [
        ("BGREWRITEAOF idle s", |s| Some(s.rewrite_secs)),
        ("restart to first PONG s", |s| Some(s.ready_secs)),
        ("logged load s (base + incr)", |s| s.loaded_secs),
        ("logged base load s", |s| s.base_loaded_secs),
        ("logged incr load s", |s| s.incr_loaded_secs),
        ("base file MiB", |s| {
            Some(s.base_bytes as f64 / f64::from(1u32 << 20))
        }),
        ("incr file MiB", |s| {
            Some(s.incr_bytes as f64 / f64::from(1u32 << 20))
        }),
    ];
    let all: Vec<&TimingSample> = samples.iter().collect();
    figures
        .into_iter()
        .map(|(figure, pick)| TimingSummary {
            figure,
            densekv: median_of(&all, ServerKind::Densekv, pick),
            redis: median_of(&all, ServerKind::Redis, pick),
            ratio: median(&paired_ratios(&all, pick)),
        })
        .collect()
}

/// The summary lines: the lowest rps ratio of each policy, the rewrite's peak/before, the idle
/// rewrite's and the load's seconds.
pub fn headlines(
    throughput: &[ThroughputSummary],
    rewrite_memory: &[BgsaveSummary],
    rewrite_memory_ratio: Option<f64>,
    timing: &[TimingSummary],
) -> Vec<Headline> {
    let mut lines = Vec::new();
    for policy in POLICIES {
        let lowest = throughput
            .iter()
            .filter(|row| row.policy == policy)
            .filter_map(|row| Some((row, row.ratio?)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((row, lowest)) = lowest {
            let cells_met = throughput
                .iter()
                .filter(|row| row.policy == policy)
                .all(|row| row.met == Some(true));
            lines.push(Headline {
                figure: format!(
                    "appendfsync {policy}: lowest rps ratio ({} -P {})",
                    row.test, row.pipeline
                ),
                densekv: row.densekv_rps,
                redis: row.redis_rps,
                ratio: Some(lowest),
                target: if has_target(policy) {
                    format!("ratio >= {TARGET_RPS_RATIO:.1} in every cell")
                } else {
                    "none (reference)".to_owned()
                },
                met: has_target(policy).then_some(cells_met),
            });
        }
    }
    let peak = |kind| rewrite_memory.iter().find(|b| b.server == kind)?.peak_ratio;
    if !rewrite_memory.is_empty() {
        let densekv = peak(ServerKind::Densekv);
        lines.push(Headline {
            figure: "BGREWRITEAOF peak/before".to_owned(),
            densekv,
            redis: peak(ServerKind::Redis),
            ratio: rewrite_memory_ratio,
            target: format!("densekv <= {TARGET_PEAK_RATIO:.2}"),
            met: densekv.map(|d| d <= TARGET_PEAK_RATIO),
        });
    }
    for (name, figure) in [
        ("BGREWRITEAOF idle s", "BGREWRITEAOF idle seconds"),
        ("logged load s (base + incr)", "AOF load seconds (logged)"),
    ] {
        if let Some(row) = timing.iter().find(|r| r.figure == name) {
            lines.push(Headline {
                figure: figure.to_owned(),
                densekv: row.densekv,
                redis: row.redis,
                ratio: row.ratio,
                target: "-".to_owned(),
                met: None,
            });
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::{headlines, throughput_summary, timing_summary};
    use crate::aof_throughput::ThroughputSample;
    use crate::aof_timing::TimingSample;
    use crate::server_proc::ServerKind;

    fn tput(server: ServerKind, round: usize, policy: &'static str, rps: f64) -> ThroughputSample {
        ThroughputSample {
            round,
            server,
            policy,
            pipeline: 1,
            test: "set".to_owned(),
            rps,
            p50_ms: Some(0.5),
            p99_ms: Some(1.0),
            aof_rewrites: 0,
            aof_delayed_fsync: 0,
        }
    }

    #[test]
    fn throughput_ratios_pair_rounds_and_targets_skip_no() {
        let (d, r) = (ServerKind::Densekv, ServerKind::Redis);
        let rows = throughput_summary(&[
            tput(d, 1, "always", 100.0),
            tput(r, 1, "always", 200.0),
            tput(d, 2, "always", 400.0),
            tput(r, 2, "always", 100.0),
            tput(d, 1, "no", 50.0),
            tput(r, 1, "no", 100.0),
        ]);
        assert_eq!(rows.len(), 2);
        // Rounds pair: ratios 0.5 and 4.0 have the median 2.25; the medians' would be 250 / 150.
        assert!((rows[0].ratio.unwrap() - 2.25).abs() < 1e-12);
        assert_eq!(rows[0].met, Some(true));
        assert_eq!((rows[0].rounds_ahead, rows[0].rounds_paired), (1, 2));
        assert_eq!((rows[1].policy, rows[1].met), ("no", None));
        let lines = headlines(&rows, &[], None, &[]);
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0].figure,
            "appendfsync always: lowest rps ratio (set -P 1)"
        );
        assert_eq!(lines[0].met, Some(true));
        assert_eq!(lines[1].met, None);
    }

    #[test]
    fn timing_rows_have_both_servers() {
        let sample = |server, rewrite_secs| TimingSample {
            round: 1,
            server,
            rewrite_secs,
            base_bytes: 1 << 20,
            incr_bytes: 1 << 19,
            ready_secs: 1.0,
            loaded_secs: Some(0.9),
            base_loaded_secs: Some(0.6),
            incr_loaded_secs: None,
        };
        let rows = timing_summary(&[
            sample(ServerKind::Densekv, 0.5),
            sample(ServerKind::Redis, 2.0),
        ]);
        assert!((rows[0].ratio.unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(rows[4].densekv, None);
        assert!((rows[6].redis.unwrap() - 0.5).abs() < 1e-12);
    }
}
