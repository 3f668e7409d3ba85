//! The pub/sub suite's results: every round's samples, and per scenario and figure the median
//! over rounds of each server's figure with the median of the per-round ratios densekv / redis
//! (the evict suite's [`figure_row`], for the same reason: the two servers of a round ran
//! seconds apart, so pairing them cancels a noisy neighbour's slow minute); and the JSON
//! document (`pubsub.json`).
//!
//! Two lists of rows: `figures`, the summary table (messages/s of each throughput scenario,
//! p50 / p99 / p99.9 of the fan-out: above 1 is faster for the first, below 1 for the second),
//! and `details` (deliveries/s, the publishers' own time, the fan-out's maximum and late sends).
//! The text is in `pubsub_markdown.rs`.

use serde::Serialize;

use crate::evict_report::{FigureRow, Pick, figure_row};
use crate::machine::MachineInfo;
use crate::pubsub_driver::{FanoutResult, ThroughputResult};
use crate::server_proc::ServerKind;
use crate::server_report::Versions;
use crate::stats::impl_sample;

/// The suite's parameters.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PubsubConfig {
    pub quick: bool,
    pub rounds: usize,
    /// Subscriber counts of the channel scenario.
    pub channel_subscribers: Vec<usize>,
    pub pattern_subscribers: usize,
    pub pattern: &'static str,
    pub channel: &'static str,
    /// Deliveries (messages × subscribers) each throughput measurement aims at; the message
    /// count is this over the subscribers, rounded up to whole batches of every publisher.
    pub deliveries: u64,
    pub publishers: usize,
    pub depth: usize,
    pub subscriber_threads: usize,
    pub fanout_subscribers: usize,
    pub fanout_rate_per_sec: u32,
    pub fanout_secs: f64,
    pub maxclients: u32,
    /// The time bound of each measurement (one scenario on one server).
    pub limit_secs: u64,
}

/// One throughput measurement of one server in one round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThroughputSample {
    pub server: ServerKind,
    pub round: usize,
    pub scenario: String,
    pub subscribers: usize,
    pub pattern: bool,
    #[serde(flatten)]
    pub result: ThroughputResult,
}

/// One fan-out measurement of one server in one round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FanoutSample {
    pub server: ServerKind,
    pub round: usize,
    pub subscribers: usize,
    pub rate_per_sec: u32,
    #[serde(flatten)]
    pub result: FanoutResult,
}

impl_sample!(ThroughputSample, FanoutSample);

/// Everything `pubsub.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct PubsubReport {
    pub suite: &'static str,
    pub command: String,
    pub machine: MachineInfo,
    pub versions: Versions,
    pub config: PubsubConfig,
    pub figures: Vec<FigureRow>,
    pub details: Vec<FigureRow>,
    pub throughput_rounds: Vec<ThroughputSample>,
    pub fanout_rounds: Vec<FanoutSample>,
    pub notes: Vec<String>,
    pub failures: Vec<String>,
}

/// The name of a throughput scenario.
pub fn throughput_scenario(subscribers: usize, pattern: bool) -> String {
    let plural = if subscribers == 1 { "" } else { "s" };
    if pattern {
        format!("PSUBSCRIBE news.*, {subscribers} subscriber{plural}")
    } else {
        format!("PUBLISH, {subscribers} subscriber{plural}")
    }
}

/// The name of the fan-out scenario.
pub fn fanout_scenario(subscribers: usize) -> String {
    format!("fan-out to {subscribers}")
}

/// The scenarios of `samples` in the order they first appear.
fn scenarios(samples: &[ThroughputSample]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for sample in samples {
        if !names.contains(&sample.scenario.as_str()) {
            names.push(&sample.scenario);
        }
    }
    names
}

/// The rows of `figures` for every throughput scenario.
fn throughput_rows(
    samples: &[ThroughputSample],
    figures: &[(&str, usize, Pick<ThroughputSample>)],
) -> Vec<FigureRow> {
    let mut rows = Vec::new();
    for scenario in scenarios(samples) {
        let of: Vec<&ThroughputSample> =
            samples.iter().filter(|s| s.scenario == scenario).collect();
        for (figure, decimals, pick) in figures {
            rows.push(figure_row(scenario, figure, *decimals, &of, pick));
        }
    }
    rows
}

/// The rows of `figures` for the fan-out.
fn fanout_rows(
    samples: &[FanoutSample],
    figures: &[(&str, usize, Pick<FanoutSample>)],
) -> Vec<FigureRow> {
    let Some(first) = samples.first() else {
        return Vec::new();
    };
    let scenario = fanout_scenario(first.subscribers);
    let of: Vec<&FanoutSample> = samples.iter().collect();
    figures
        .iter()
        .map(|(figure, decimals, pick)| figure_row(&scenario, figure, *decimals, &of, pick))
        .collect()
}

/// The summary rows.
pub fn summary_rows(throughput: &[ThroughputSample], fanout: &[FanoutSample]) -> Vec<FigureRow> {
    let mut rows = throughput_rows(
        throughput,
        &[("messages/s", 0, |s| Some(s.result.messages_per_sec))],
    );
    rows.extend(fanout_rows(
        fanout,
        &[
            ("p50 ms", 3, |s| Some(s.result.p50_ms)),
            ("p99 ms", 3, |s| Some(s.result.p99_ms)),
            ("p99.9 ms", 3, |s| Some(s.result.p999_ms)),
        ],
    ));
    rows
}

/// The detail rows.
pub fn detail_rows(throughput: &[ThroughputSample], fanout: &[FanoutSample]) -> Vec<FigureRow> {
    let mut rows = throughput_rows(
        throughput,
        &[
            ("messages", 0, |s| Some(s.result.messages as f64)),
            ("deliveries/s", 0, |s| Some(s.result.deliveries_per_sec)),
            ("publish s", 3, |s| Some(s.result.publish_secs)),
            ("deliver s", 3, |s| Some(s.result.deliver_secs)),
        ],
    );
    rows.extend(fanout_rows(
        fanout,
        &[
            ("deliveries", 0, |s| Some(s.result.deliveries as f64)),
            ("max ms", 3, |s| Some(s.result.max_ms)),
            ("late sends", 0, |s| Some(s.result.late_sends as f64)),
        ],
    ));
    rows
}

#[cfg(test)]
mod tests {
    use super::{
        FanoutSample, ThroughputSample, detail_rows, fanout_scenario, summary_rows,
        throughput_scenario,
    };
    use crate::pubsub_driver::{FanoutResult, ThroughputResult};
    use crate::server_proc::ServerKind;

    fn throughput(server: ServerKind, round: usize, rate: f64) -> ThroughputSample {
        ThroughputSample {
            server,
            round,
            scenario: throughput_scenario(10, false),
            subscribers: 10,
            pattern: false,
            result: ThroughputResult {
                messages: 1000,
                publish_secs: 1.0,
                deliver_secs: 1000.0 / rate,
                messages_per_sec: rate,
                deliveries_per_sec: rate * 10.0,
            },
        }
    }

    fn fanout(server: ServerKind, round: usize, p50_ms: f64) -> FanoutSample {
        FanoutSample {
            server,
            round,
            subscribers: 1000,
            rate_per_sec: 200,
            result: FanoutResult {
                messages: 600,
                deliveries: 600_000,
                p50_ms,
                p99_ms: p50_ms * 2.0,
                p999_ms: p50_ms * 3.0,
                max_ms: p50_ms * 4.0,
                late_sends: 0,
            },
        }
    }

    #[test]
    fn rows_pair_rounds_and_take_medians() {
        let (d, r) = (ServerKind::Densekv, ServerKind::Redis);
        let throughput = [
            throughput(d, 1, 200.0),
            throughput(r, 1, 100.0),
            throughput(d, 2, 300.0),
            throughput(r, 2, 100.0),
            throughput(d, 3, 100.0),
            throughput(r, 3, 100.0),
        ];
        let fanout = [fanout(d, 1, 1.0), fanout(r, 1, 2.0)];
        let rows = summary_rows(&throughput, &fanout);
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0].scenario, "PUBLISH, 10 subscribers");
        assert_eq!((rows[0].densekv, rows[0].redis), (Some(200.0), Some(100.0)));
        assert_eq!((rows[0].ratio, rows[0].rounds_paired), (Some(2.0), 3));
        assert_eq!(rows[1].scenario, fanout_scenario(1000));
        assert_eq!(
            (rows[3].figure.as_str(), rows[3].ratio),
            ("p99.9 ms", Some(0.5))
        );
        let details = detail_rows(&throughput, &fanout);
        assert!(details.iter().any(|r| r.figure == "deliveries/s"));
        assert!(summary_rows(&[], &[]).is_empty());
        assert_eq!(throughput_scenario(1, false), "PUBLISH, 1 subscriber");
        assert_eq!(
            throughput_scenario(10, true),
            "PSUBSCRIBE news.*, 10 subscribers"
        );
    }
}
