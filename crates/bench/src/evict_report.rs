//! The evict suite's results: per scenario and figure, the median over rounds of each server's
//! figure and the median of the per-round ratios densekv / redis; the summary lines against
//! densekv's targets; and the JSON document (`evict.json`).
//!
//! The ratio pairs the two servers of one round, which ran seconds apart (and, in the cache
//! scenario, on the same key stream): a noisy neighbour's slow minute then moves both sides of a
//! ratio, where a ratio of medians could pair one server's quiet round with the other's loud one.
//!
//! Targets that a server ignoring `maxmemory` would meet by not evicting (keys held, miss ratio,
//! SET throughput under eviction) count as met only when densekv's own max used_memory /
//! maxmemory in that scenario is within [`TARGET_USED_RATIO`]; the headline says so.
//!
//! The tables and the Markdown are in `evict_markdown.rs`.

use serde::Serialize;

use crate::evict_cache::{self, CacheSample};
use crate::evict_delete::{DeleteSample, Deletion};
use crate::evict_fill::{self, FillSample};
use crate::evict_throughput::ThroughputSample;
use crate::machine::MachineInfo;
use crate::persist_report::Headline;
use crate::server_proc::ServerKind;
use crate::server_report::Versions;
use crate::stats::{Sample, impl_sample, median, median_of, paired_ratios};

/// densekv's targets: VmRSS and used_memory at `at` over full, after `delete-half`.
pub const TARGET_HALF_RATIO: f64 = 0.60;
/// VmRSS at `at` over full after `delete-all`.
pub const TARGET_ALL_RSS_RATIO: f64 = 0.15;
/// Max used_memory / maxmemory.
pub const TARGET_USED_RATIO: f64 = 1.05;
/// The share of the last keys written still there after the fill ("the most recent survive").
pub const TARGET_RECENT_FRACTION: f64 = 0.99;
/// The cache's miss ratio under allkeys-lfu, densekv / redis.
pub const TARGET_LFU_MISS_RATIO: f64 = 0.75;
/// SET rps under eviction, densekv / redis.
pub const TARGET_RPS_RATIO: f64 = 1.0;

/// The fill's figure that sums the failed writes of every round.
pub const FAILED_ALL_ROUNDS: &str = "failed writes, all rounds";

/// The suite's parameters.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EvictConfig {
    pub quick: bool,
    pub rounds: usize,
    /// Keys of the delete scenarios, seconds sampled after the deletes, when the figure is read.
    pub n: u64,
    pub observe_secs: f64,
    pub at_secs: f64,
    pub sample_ms: u64,
    pub fill_sets: u64,
    pub fill_value_bytes: usize,
    pub fill_batch_len: u64,
    pub fill_maxmemory: &'static str,
    pub recent_window: u64,
    pub zipf_keys: u64,
    pub zipf_exponent: f64,
    pub zipf_warmup: u64,
    pub zipf_requests: u64,
    pub zipf_batch_len: u64,
    pub zipf_maxmemory: &'static str,
    pub throughput_maxmemory: &'static str,
    pub throughput_requests: u64,
    /// The exact redis-benchmark command (with `P` for the port).
    pub benchmark_command: String,
    /// The time bound of each measurement (one scenario on one server).
    pub limit_secs: u64,
}

/// One figure of one scenario, both servers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureRow {
    /// `delete-half`, `lru-fill`, `zipf allkeys-lfu`, `throughput`.
    pub scenario: String,
    pub figure: String,
    pub densekv: Option<f64>,
    pub redis: Option<f64>,
    /// Median of the per-round densekv / redis; `None` where a round's redis figure is 0.
    pub ratio: Option<f64>,
    /// Rounds with both servers' figures.
    pub rounds_paired: usize,
    /// Decimals the tables show the two figures with (0 for counts, 1 for MiB).
    pub decimals: usize,
}

/// Everything `evict.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct EvictReport {
    pub suite: &'static str,
    pub command: String,
    pub machine: MachineInfo,
    pub versions: Versions,
    pub config: EvictConfig,
    pub headlines: Vec<Headline>,
    pub figures: Vec<FigureRow>,
    /// Every round's samples, the memory series for the charts among them.
    pub delete_rounds: Vec<DeleteSample>,
    pub fill_rounds: Vec<FillSample>,
    pub cache_rounds: Vec<CacheSample>,
    pub throughput_rounds: Vec<ThroughputSample>,
    pub notes: Vec<String>,
    pub failures: Vec<String>,
}

impl_sample!(DeleteSample, FillSample, CacheSample, ThroughputSample);

/// Reads one figure from a sample.
pub type Pick<T> = fn(&T) -> Option<f64>;

/// The row of `figure`: each server's median and the median of the per-round ratios.
pub fn figure_row<T: Sample>(
    scenario: &str,
    figure: &str,
    decimals: usize,
    samples: &[&T],
    pick: impl Fn(&T) -> Option<f64>,
) -> FigureRow {
    let ratios = paired_ratios(samples, &pick);
    FigureRow {
        scenario: scenario.to_owned(),
        figure: figure.to_owned(),
        densekv: median_of(samples, ServerKind::Densekv, &pick),
        redis: median_of(samples, ServerKind::Redis, &pick),
        ratio: median(&ratios),
        rounds_paired: ratios.len(),
        decimals,
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 20)
}

/// The rows of the delete scenarios; `at_secs` names the reading.
pub fn delete_rows(samples: &[DeleteSample], at_secs: f64) -> Vec<FigureRow> {
    let at_rss = format!("VmRSS at {at_secs} s / full");
    let at_used = format!("used_memory at {at_secs} s / full");
    let at_mib = format!("VmRSS at {at_secs} s MiB");
    let figures: [(&str, usize, Pick<DeleteSample>); 7] = [
        (&at_rss, 3, |s| s.rss_ratio),
        (&at_used, 3, |s| s.used_ratio),
        ("VmRSS empty MiB", 1, |s| Some(mib(s.empty_rss_bytes))),
        ("VmRSS full MiB", 1, |s| Some(mib(s.full_rss_bytes))),
        (&at_mib, 1, |s| s.rss_at_bytes.map(mib)),
        ("used_memory full MiB", 1, |s| s.full_used_bytes.map(mib)),
        ("DEL seconds", 3, |s| Some(s.delete_secs)),
    ];
    let mut rows = Vec::new();
    for deletion in Deletion::BOTH {
        let of: Vec<&DeleteSample> = samples.iter().filter(|s| s.deletion == deletion).collect();
        if of.is_empty() {
            continue;
        }
        for (figure, decimals, pick) in &figures {
            rows.push(figure_row(deletion.name(), figure, *decimals, &of, pick));
        }
    }
    rows
}

/// The rows of the lru-fill scenario.
pub fn fill_rows(samples: &[FillSample]) -> Vec<FigureRow> {
    let recent = format!("last {} keys present", evict_fill::RECENT_WINDOW);
    let figures: [(&str, usize, Pick<FillSample>); 7] = [
        ("failed writes", 0, |s| Some(s.failed_writes as f64)),
        ("max used_memory / maxmemory", 3, |s| s.max_used_ratio),
        (&recent, 4, |s| s.recent_fraction),
        ("keys held (DBSIZE)", 0, |s| Some(s.dbsize as f64)),
        ("evicted_keys", 0, |s| s.evicted_keys.map(|e| e as f64)),
        ("VmRSS at the end MiB", 1, |s| Some(mib(s.final_rss_bytes))),
        ("fill seconds", 2, |s| Some(s.fill_secs)),
    ];
    let of: Vec<&FillSample> = samples.iter().collect();
    if of.is_empty() {
        return Vec::new();
    }
    let mut rows: Vec<FigureRow> = figures
        .iter()
        .map(|(figure, decimals, pick)| figure_row("lru-fill", figure, *decimals, &of, pick))
        .collect();
    let failed = |kind: ServerKind| {
        let of_kind = samples.iter().filter(|s| s.server == kind);
        Some(of_kind.map(|s| s.failed_writes as f64).sum())
    };
    rows.push(FigureRow {
        scenario: "lru-fill".to_owned(),
        figure: FAILED_ALL_ROUNDS.to_owned(),
        densekv: failed(ServerKind::Densekv),
        redis: failed(ServerKind::Redis),
        ratio: None,
        rounds_paired: 0,
        decimals: 0,
    });
    rows
}

/// The rows of the cache scenario, per policy.
pub fn cache_rows(samples: &[CacheSample]) -> Vec<FigureRow> {
    let figures: [(&str, usize, Pick<CacheSample>); 6] = [
        ("miss ratio", 4, |s| Some(s.miss_ratio)),
        ("max used_memory / maxmemory", 3, |s| s.max_used_ratio),
        ("keys held (DBSIZE)", 0, |s| Some(s.dbsize as f64)),
        ("failed writes", 0, |s| Some(s.failed_writes as f64)),
        ("evicted_keys", 0, |s| s.evicted_keys.map(|e| e as f64)),
        ("requests/s", 0, |s| Some(s.requests_per_sec)),
    ];
    let mut rows = Vec::new();
    for policy in evict_cache::POLICIES {
        let of: Vec<&CacheSample> = samples.iter().filter(|s| s.policy == policy).collect();
        if of.is_empty() {
            continue;
        }
        let scenario = format!("zipf {policy}");
        for (figure, decimals, pick) in &figures {
            rows.push(figure_row(&scenario, figure, *decimals, &of, pick));
        }
    }
    rows
}

/// The rows of the throughput scenario.
pub fn throughput_rows(samples: &[ThroughputSample]) -> Vec<FigureRow> {
    let figures: [(&str, usize, Pick<ThroughputSample>); 6] = [
        ("SET rps", 0, |s| Some(s.rps)),
        ("p99 ms", 3, |s| s.p99_ms),
        ("max used_memory / maxmemory", 3, |s| s.max_used_ratio),
        ("keys filled first", 0, |s| Some(s.filled_keys as f64)),
        ("evicted_keys in the run", 0, |s| {
            Some(
                s.evicted_after?
                    .saturating_sub(s.evicted_before.unwrap_or(0)) as f64,
            )
        }),
        ("keys held after (DBSIZE)", 0, |s| {
            Some(s.dbsize_after as f64)
        }),
    ];
    let of: Vec<&ThroughputSample> = samples.iter().collect();
    if of.is_empty() {
        return Vec::new();
    }
    figures
        .iter()
        .map(|(figure, decimals, pick)| figure_row("throughput", figure, *decimals, &of, pick))
        .collect()
}

/// How a headline's target is judged.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// densekv's figure is 0 (a sum over every round, so one bad round shows).
    Zero,
    /// densekv's median at most this.
    AtMost(f64),
    /// densekv's median at least this.
    AtLeast(f64),
    /// The ratio at most this, while densekv kept its memory within the limit.
    RatioAtMost(f64),
    /// The ratio at least this, likewise.
    RatioAtLeast(f64),
    /// Reported, not judged.
    None,
}

/// The summary lines, one per target (and the LRU cache's miss ratio for reference).
pub fn headlines(rows: &[FigureRow], at_secs: f64) -> Vec<Headline> {
    let recent = format!("last {} keys present", evict_fill::RECENT_WINDOW);
    let at_rss = format!("VmRSS at {at_secs} s / full");
    let at_used = format!("used_memory at {at_secs} s / full");
    let used = "max used_memory / maxmemory";
    let lines: [(&str, &str, Target); 10] = [
        ("delete-half", &at_rss, Target::AtMost(TARGET_HALF_RATIO)),
        ("delete-half", &at_used, Target::AtMost(TARGET_HALF_RATIO)),
        ("delete-all", &at_rss, Target::AtMost(TARGET_ALL_RSS_RATIO)),
        ("lru-fill", FAILED_ALL_ROUNDS, Target::Zero),
        ("lru-fill", used, Target::AtMost(TARGET_USED_RATIO)),
        ("lru-fill", &recent, Target::AtLeast(TARGET_RECENT_FRACTION)),
        ("lru-fill", "keys held (DBSIZE)", Target::None),
        (
            "zipf allkeys-lfu",
            "miss ratio",
            Target::RatioAtMost(TARGET_LFU_MISS_RATIO),
        ),
        ("zipf allkeys-lru", "miss ratio", Target::None),
        (
            "throughput",
            "SET rps",
            Target::RatioAtLeast(TARGET_RPS_RATIO),
        ),
    ];
    let find = |scenario: &str, figure: &str| {
        rows.iter()
            .find(|r| r.scenario == scenario && r.figure == figure)
    };
    lines
        .iter()
        .filter_map(|&(scenario, figure, target)| {
            let row = find(scenario, figure)?;
            let within = find(scenario, used)
                .and_then(|r| r.densekv)
                .is_some_and(|u| u <= TARGET_USED_RATIO);
            let (text, met) = match target {
                Target::Zero => ("densekv = 0".to_owned(), row.densekv.map(|d| d == 0.0)),
                Target::AtMost(t) => (format!("densekv <= {t:.2}"), row.densekv.map(|d| d <= t)),
                Target::AtLeast(t) => (format!("densekv >= {t:.2}"), row.densekv.map(|d| d >= t)),
                Target::RatioAtMost(t) => (
                    format!("ratio <= {t:.2}, within maxmemory"),
                    row.ratio.map(|r| r <= t && within),
                ),
                Target::RatioAtLeast(t) => (
                    format!("ratio >= {t:.2}, within maxmemory"),
                    row.ratio.map(|r| r >= t && within),
                ),
                Target::None => ("none (reference)".to_owned(), None),
            };
            Some(Headline {
                figure: format!("{scenario}: {figure}"),
                densekv: row.densekv,
                redis: row.redis,
                ratio: row.ratio,
                target: text,
                met,
            })
        })
        .collect()
}

/// Notes on what the figures mean: where densekv did not hold its limit, the targets that
/// depend on it are not met, and why.
pub fn limit_notes(rows: &[FigureRow]) -> Vec<String> {
    rows.iter()
        .filter(|r| r.figure == "max used_memory / maxmemory")
        .filter_map(|r| {
            let used = r.densekv?;
            (used > TARGET_USED_RATIO).then(|| {
                format!(
                    "{}: densekv's max used_memory reached {used:.2}x maxmemory (redis {}): \
                     densekv did not hold the limit, so the scenario's other figures describe a \
                     server that kept every key, and its targets marked within maxmemory count \
                     as not met",
                    r.scenario,
                    r.redis
                        .map_or_else(|| "-".to_owned(), |v| format!("{v:.2}x"))
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{FigureRow, figure_row, headlines, limit_notes};
    use crate::evict_throughput::ThroughputSample;
    use crate::server_proc::ServerKind;

    fn tput(server: ServerKind, round: usize, rps: f64, used: f64) -> ThroughputSample {
        ThroughputSample {
            round,
            server,
            filled_keys: 100,
            limit_met_at_key: Some(80),
            fill_secs: 1.0,
            maxmemory_bytes: Some(100),
            rps,
            p50_ms: None,
            p99_ms: Some(1.0),
            max_used_bytes: Some(used as u64),
            max_used_ratio: Some(used / 100.0),
            evicted_before: Some(1),
            evicted_after: Some(11),
            dbsize_after: 50,
        }
    }

    fn row(scenario: &str, figure: &str, densekv: f64, redis: f64) -> FigureRow {
        FigureRow {
            scenario: scenario.to_owned(),
            figure: figure.to_owned(),
            densekv: Some(densekv),
            redis: Some(redis),
            ratio: Some(densekv / redis),
            rounds_paired: 1,
            decimals: 3,
        }
    }

    #[test]
    fn rows_pair_rounds_for_the_ratio() {
        let (d, r) = (ServerKind::Densekv, ServerKind::Redis);
        let samples = [
            tput(d, 1, 100.0, 90.0),
            tput(r, 1, 200.0, 99.0),
            tput(d, 2, 400.0, 90.0),
            tput(r, 2, 100.0, 99.0),
            tput(d, 3, 300.0, 90.0),
        ];
        let of: Vec<&ThroughputSample> = samples.iter().collect();
        let rps = figure_row("throughput", "SET rps", 0, &of, |s| Some(s.rps));
        // Ratios 0.5 and 4.0 (round 3 has no peer): median 2.25; the medians' would be 2.
        assert!((rps.ratio.unwrap() - 2.25).abs() < 1e-12);
        assert_eq!(
            (rps.densekv, rps.redis, rps.rounds_paired),
            (Some(300.0), Some(150.0), 2)
        );
        let rows = super::throughput_rows(&samples);
        let evicted = rows
            .iter()
            .find(|r| r.figure == "evicted_keys in the run")
            .unwrap();
        assert_eq!(evicted.densekv, Some(10.0));
    }

    #[test]
    fn ratio_targets_need_densekv_within_its_limit() {
        let used = "max used_memory / maxmemory";
        let mut rows = vec![
            row("throughput", "SET rps", 300.0, 100.0),
            row("throughput", used, 3.0, 1.0),
            row("delete-all", "VmRSS at 5 s / full", 0.1, 0.9),
        ];
        let lines = headlines(&rows, 5.0);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].figure, "delete-all: VmRSS at 5 s / full");
        assert_eq!((lines[0].met, lines[1].met), (Some(true), Some(false)));
        assert_eq!(lines[1].target, "ratio >= 1.00, within maxmemory");
        assert_eq!(limit_notes(&rows).len(), 1);
        rows[1] = row("throughput", used, 1.01, 1.0);
        assert_eq!(headlines(&rows, 5.0)[1].met, Some(true));
        assert!(limit_notes(&rows).is_empty());
    }
}
