//! The persist suite's results: medians over rounds per server, densekv/redis ratios, and the
//! JSON document (`bench-results/persist.json`).
//!
//! * **BGSAVE peak memory**: per server, the medians of before, peak and peak/before over the
//!   rounds that count (the overwrite ended before the save); the ratio densekv/redis is of the
//!   two peak/before medians (below 1: densekv's save costs less memory).
//! * **p99 during BGSAVE**: per test and server, the medians of p99 without and with saves, and
//!   the median of the per-round ratios with/without (a round's two runs are seconds apart).
//! * **SAVE and load**: per server, the medians of each time; the ratio is the median of the
//!   per-round densekv/redis (below 1: densekv is faster). The two servers of a round run
//!   seconds apart, so pairing them cancels a noisy neighbour's slow minute, as the server
//!   suite's rps ratios do; a ratio of medians could pair one server's quiet round with the
//!   other's loud one.
//! * **Headlines**: one line per figure with densekv's target and whether it is met.
//!
//! The tables and the Markdown are in `persist_markdown.rs`.

use serde::Serialize;

use crate::machine::MachineInfo;
use crate::persist_bgsave::BgsaveSample;
use crate::persist_latency::{LatencySample, TESTS};
use crate::persist_speed::SpeedSample;
use crate::server_proc::ServerKind;
use crate::server_report::Versions;
use crate::stats::{self, impl_sample, median, paired_ratios};

/// densekv's targets: peak/before of a save under a full overwrite, p99 with/without saves.
pub const TARGET_PEAK_RATIO: f64 = 1.10;
pub const TARGET_P99_RATIO: f64 = 2.0;

/// The suite's parameters.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PersistConfig {
    pub n: u64,
    pub quick: bool,
    pub rounds: usize,
    /// `rdb-key-save-delay` during the overwrite.
    pub densekv_delay: i32,
    pub redis_delay: i32,
    /// redis-benchmark's `-n` per run of the latency figure.
    pub requests: u64,
    pub clients: u32,
    pub batch_len: u64,
    pub poll_ms: u64,
    /// The exact redis-benchmark command (with `P` for the port).
    pub benchmark_command: String,
}

/// One server's BGSAVE memory over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BgsaveSummary {
    pub server: ServerKind,
    pub delay: i32,
    pub rounds: usize,
    pub rounds_counted: usize,
    pub before_bytes: Option<f64>,
    pub peak_bytes: Option<f64>,
    pub peak_ratio: Option<f64>,
    pub save_secs: Option<f64>,
    pub overwrite_secs: Option<f64>,
}

/// One test on one server over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencySummary {
    pub test: String,
    pub server: ServerKind,
    pub p99_without_ms: Option<f64>,
    pub p99_with_ms: Option<f64>,
    /// Median of the per-round p99 with / without.
    pub ratio: Option<f64>,
    pub saves_started: Option<f64>,
    pub busy_fraction: Option<f64>,
}

/// One time of the SAVE and load figure, both servers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpeedSummary {
    pub figure: &'static str,
    pub densekv_secs: Option<f64>,
    pub redis_secs: Option<f64>,
    pub ratio: Option<f64>,
}

/// One line of the summary: a figure, both servers, and densekv's target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Headline {
    /// What is compared; built at run time by the aof suite (`appendfsync always: set -P 1`).
    pub figure: String,
    pub densekv: Option<f64>,
    pub redis: Option<f64>,
    /// densekv / redis, where comparing the two figures means something.
    pub ratio: Option<f64>,
    /// densekv's target, as text (`densekv <= 1.10`, `ratio <= 1.0`).
    pub target: String,
    /// Whether the target is met; `None` without a figure.
    pub met: Option<bool>,
}

/// Everything `bench-results/persist.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct PersistReport {
    pub suite: &'static str,
    pub command: String,
    pub machine: MachineInfo,
    pub versions: Versions,
    pub config: PersistConfig,
    /// One line per figure, with densekv's targets.
    pub headlines: Vec<Headline>,
    pub bgsave: Vec<BgsaveSummary>,
    /// densekv's peak/before over redis-server's.
    pub bgsave_ratio: Option<f64>,
    pub latency: Vec<LatencySummary>,
    pub speed: Vec<SpeedSummary>,
    pub bgsave_rounds: Vec<BgsaveSample>,
    pub latency_rounds: Vec<LatencySample>,
    pub speed_rounds: Vec<SpeedSample>,
    pub notes: Vec<String>,
    pub failures: Vec<String>,
}

fn median_of<T>(items: &[&T], pick: impl Fn(&T) -> f64) -> Option<f64> {
    median(&items.iter().map(|item| pick(item)).collect::<Vec<_>>())
}

/// Medians of each server's counted rounds.
pub fn bgsave_summary(samples: &[BgsaveSample], kind: ServerKind, delay: i32) -> BgsaveSummary {
    let all: Vec<&BgsaveSample> = samples.iter().filter(|s| s.server == kind).collect();
    let counted: Vec<&BgsaveSample> = all.iter().copied().filter(|s| s.counted).collect();
    BgsaveSummary {
        server: kind,
        delay,
        rounds: all.len(),
        rounds_counted: counted.len(),
        before_bytes: median_of(&counted, |s| s.before_bytes as f64),
        peak_bytes: median_of(&counted, |s| s.peak_bytes as f64),
        peak_ratio: median_of(&counted, BgsaveSample::ratio),
        save_secs: median_of(&counted, |s| s.save_secs),
        overwrite_secs: median_of(&counted, |s| s.overwrite_secs),
    }
}

/// One row per (test, server).
pub fn latency_summary(samples: &[LatencySample]) -> Vec<LatencySummary> {
    let mut rows = Vec::new();
    for test in TESTS {
        for kind in ServerKind::BOTH {
            let of: Vec<&LatencySample> = samples
                .iter()
                .filter(|s| s.server == kind && s.test == test)
                .collect();
            rows.push(LatencySummary {
                test: test.to_owned(),
                server: kind,
                p99_without_ms: median_of(&of, |s| s.p99_without_ms),
                p99_with_ms: median_of(&of, |s| s.p99_with_ms),
                ratio: median_of(&of, LatencySample::ratio),
                saves_started: median_of(&of, |s| s.saves_started as f64),
                busy_fraction: median_of(&of, |s| s.busy_fraction),
            });
        }
    }
    rows
}

impl_sample!(SpeedSample);

/// Reads one time from a sample.
type SpeedPick = fn(&SpeedSample) -> Option<f64>;

/// One row per time, with the ratio densekv/redis.
pub fn speed_summary(samples: &[SpeedSample]) -> Vec<SpeedSummary> {
    let figures: [(&'static str, SpeedPick); 5] = [
        ("SAVE s", |s| Some(s.save_secs)),
        ("restart to first PONG s", |s| Some(s.ready_secs)),
        ("logged load s", |s| s.loaded_secs),
        ("other's file: to first PONG s", |s| s.cross_ready_secs),
        ("other's file: logged load s", |s| s.cross_loaded_secs),
    ];
    let all: Vec<&SpeedSample> = samples.iter().collect();
    figures
        .into_iter()
        .map(|(figure, pick)| SpeedSummary {
            figure,
            densekv_secs: stats::median_of(&all, ServerKind::Densekv, pick),
            redis_secs: stats::median_of(&all, ServerKind::Redis, pick),
            ratio: median(&paired_ratios(&all, pick)),
        })
        .collect()
}

/// The summary lines: BGSAVE peak/before, p99 with/without per test, SAVE and logged load.
pub fn headlines(
    bgsave: &[BgsaveSummary],
    bgsave_ratio: Option<f64>,
    latency: &[LatencySummary],
    speed: &[SpeedSummary],
) -> Vec<Headline> {
    let mut lines = Vec::new();
    let peak = |kind| bgsave.iter().find(|b| b.server == kind)?.peak_ratio;
    if !bgsave.is_empty() {
        let densekv = peak(ServerKind::Densekv);
        lines.push(Headline {
            figure: "BGSAVE peak/before".to_owned(),
            densekv,
            redis: peak(ServerKind::Redis),
            ratio: bgsave_ratio,
            target: format!("densekv <= {TARGET_PEAK_RATIO:.2}"),
            met: densekv.map(|d| d <= TARGET_PEAK_RATIO),
        });
    }
    for (test, figure) in [
        ("set", "set p99 with/without BGSAVE"),
        ("get", "get p99 with/without BGSAVE"),
    ] {
        let of = |kind| {
            latency
                .iter()
                .find(|l| l.test == test && l.server == kind)?
                .ratio
        };
        if latency.iter().any(|l| l.test == test) {
            let densekv = of(ServerKind::Densekv);
            lines.push(Headline {
                figure: figure.to_owned(),
                densekv,
                redis: of(ServerKind::Redis),
                ratio: None,
                target: format!("densekv <= {TARGET_P99_RATIO:.1}"),
                met: densekv.map(|d| d <= TARGET_P99_RATIO),
            });
        }
    }
    for (name, figure) in [
        ("SAVE s", "SAVE seconds"),
        ("logged load s", "load seconds (logged)"),
    ] {
        if let Some(row) = speed.iter().find(|r| r.figure == name) {
            lines.push(Headline {
                figure: figure.to_owned(),
                densekv: row.densekv_secs,
                redis: row.redis_secs,
                ratio: row.ratio,
                target: "ratio <= 1.0".to_owned(),
                met: row.ratio.map(|r| r <= 1.0),
            });
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::{bgsave_summary, headlines, latency_summary, speed_summary};
    use crate::persist_bgsave::BgsaveSample;
    use crate::persist_latency::LatencySample;
    use crate::persist_speed::SpeedSample;
    use crate::server_proc::ServerKind;

    fn bgsave(server: ServerKind, peak_mib: u64, counted: bool) -> BgsaveSample {
        BgsaveSample {
            round: 1,
            server,
            delay: 3,
            before_bytes: 100 << 20,
            peak_bytes: peak_mib << 20,
            save_secs: 4.0,
            overwrite_secs: 2.0,
            counted,
            samples: 400,
            child_seen: server == ServerKind::Redis,
        }
    }

    #[test]
    fn bgsave_medians_skip_rounds_that_do_not_count() {
        let samples = [
            bgsave(ServerKind::Densekv, 105, true),
            bgsave(ServerKind::Densekv, 101, false),
            bgsave(ServerKind::Densekv, 107, true),
            bgsave(ServerKind::Redis, 195, true),
        ];
        let densekv = bgsave_summary(&samples, ServerKind::Densekv, 3);
        assert_eq!((densekv.rounds_counted, densekv.rounds), (2, 3));
        assert!((densekv.peak_ratio.unwrap() - 1.06).abs() < 1e-9);
        let none = bgsave_summary(&samples[1..2], ServerKind::Densekv, 3);
        assert_eq!(none.peak_ratio, None);
    }

    #[test]
    fn latency_ratio_is_the_median_of_round_ratios() {
        let sample = |round, with| LatencySample {
            round,
            server: ServerKind::Densekv,
            test: "set".into(),
            p99_without_ms: 1.0,
            p99_with_ms: with,
            rps_without: 1000.0,
            rps_with: 900.0,
            saves_started: 4,
            busy_fraction: 0.95,
        };
        let rows = latency_summary(&[sample(1, 1.5), sample(2, 3.0), sample(3, 2.0)]);
        let set = &rows[0];
        assert_eq!(
            (set.test.as_str(), set.server),
            ("set", ServerKind::Densekv)
        );
        assert!((set.ratio.unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(rows[1].ratio, None);
    }

    #[test]
    fn speed_ratios_are_densekv_over_redis() {
        let sample = |server, round, save_secs| SpeedSample {
            round,
            server,
            save_secs,
            ready_secs: 1.0,
            loaded_secs: Some(0.5),
            cross_ready_secs: None,
            cross_loaded_secs: Some(0.25),
        };
        let rows = speed_summary(&[
            sample(ServerKind::Densekv, 1, 0.5),
            sample(ServerKind::Redis, 1, 1.0),
        ]);
        assert!((rows[0].ratio.unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(rows[3].ratio, None);
        assert!((rows[4].ratio.unwrap() - 1.0).abs() < 1e-12);
        // Rounds pair: ratios 0.5 and 2.0 have the median 1.25; the medians' ratio would be 1.
        let rows = speed_summary(&[
            sample(ServerKind::Densekv, 1, 1.0),
            sample(ServerKind::Redis, 1, 2.0),
            sample(ServerKind::Densekv, 2, 4.0),
            sample(ServerKind::Redis, 2, 2.0),
        ]);
        assert!((rows[0].ratio.unwrap() - 1.25).abs() < 1e-12);
    }

    #[test]
    fn headlines_check_the_targets() {
        let bgsave = [
            bgsave_summary(
                &[bgsave(ServerKind::Densekv, 105, true)],
                ServerKind::Densekv,
                3,
            ),
            bgsave_summary(
                &[bgsave(ServerKind::Redis, 195, true)],
                ServerKind::Redis,
                -10,
            ),
        ];
        let lines = headlines(&bgsave, Some(1.05 / 1.95), &[], &[]);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].met, Some(true));
        assert!((lines[0].redis.unwrap() - 1.95).abs() < 1e-9);
    }
}
