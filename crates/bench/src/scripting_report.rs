//! The scripting suite's results: every round's samples, and per scenario and figure the median
//! over rounds of each server's figure with the median of the per-round ratios densekv / redis
//! (the evict suite's [`figure_row`], as in the pub/sub suite); and the JSON document
//! (`scripting.json`).
//!
//! Two lists of rows: `figures`, the summary table (EVALSHA requests/s: above 1 is faster; the
//! kill latencies: below 1 is shorter), and `details` (redis-benchmark's p50 and p99, the keys a
//! run created, how long the script ran before -BUSY, the slowest kill, the `GET x` counts).
//! The text is in `scripting_markdown.rs`.

use serde::Serialize;

use crate::evict_report::{FigureRow, Pick, figure_row};
use crate::machine::MachineInfo;
use crate::scripting_driver::{BusyScript, EvalshaResult, KillResult, KillerOpened};
use crate::server_proc::ServerKind;
use crate::server_report::Versions;
use crate::stats::impl_sample;

/// The suite's parameters.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ScriptingConfig {
    pub quick: bool,
    pub rounds: usize,
    pub script: &'static str,
    /// redis-benchmark's `-n` at `-P 1` and at `-P 16`.
    pub requests_p1: u64,
    pub requests_p16: u64,
    pub clients: u32,
    pub keyspace: u64,
    /// The exact redis-benchmark command (`P` for the port, `SHA` for the script's).
    pub benchmark_command: String,
    pub busy_threshold_ms: u64,
    pub poll_ms: u64,
    /// Kills per scenario, server and round (the round's figure is their median).
    pub kills: usize,
    /// `GET x` commands per kill.
    pub gets_per_kill: usize,
    /// The time bound of each measurement (one scenario on one server).
    pub limit_secs: u64,
}

/// One EVALSHA measurement of one server in one round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalshaSample {
    pub server: ServerKind,
    pub round: usize,
    pub scenario: String,
    pub pipeline: u32,
    #[serde(flatten)]
    pub result: EvalshaResult,
}

/// One kill-latency measurement of one server in one round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KillSample {
    pub server: ServerKind,
    pub round: usize,
    pub scenario: String,
    pub script: BusyScript,
    pub killer: KillerOpened,
    #[serde(flatten)]
    pub result: KillResult,
}

impl_sample!(EvalshaSample, KillSample);

/// Everything `scripting.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct ScriptingReport {
    pub suite: &'static str,
    pub command: String,
    pub machine: MachineInfo,
    pub versions: Versions,
    pub config: ScriptingConfig,
    pub figures: Vec<FigureRow>,
    pub details: Vec<FigureRow>,
    pub evalsha_rounds: Vec<EvalshaSample>,
    pub kill_rounds: Vec<KillSample>,
    pub notes: Vec<String>,
    pub failures: Vec<String>,
}

/// The name of an EVALSHA scenario.
pub fn evalsha_scenario(pipeline: u32) -> String {
    format!("EVALSHA INCR, -P {pipeline}")
}

/// The name of a kill scenario.
pub fn kill_scenario(script: BusyScript, killer: KillerOpened) -> String {
    format!(
        "SCRIPT KILL, {}, killer opened {}",
        script.name(),
        killer.name()
    )
}

/// A sample's scenario name.
pub(crate) trait Scenario {
    fn scenario(&self) -> &str;
}

impl Scenario for EvalshaSample {
    fn scenario(&self) -> &str {
        &self.scenario
    }
}

impl Scenario for KillSample {
    fn scenario(&self) -> &str {
        &self.scenario
    }
}

/// The rows of `figures` for every scenario of `samples`, scenarios in their first order.
pub(crate) fn rows<T: Scenario + crate::stats::Sample>(
    samples: &[T],
    figures: &[(&str, usize, Pick<T>)],
) -> Vec<FigureRow> {
    let mut names: Vec<&str> = Vec::new();
    for sample in samples {
        if !names.contains(&sample.scenario()) {
            names.push(sample.scenario());
        }
    }
    let mut rows = Vec::new();
    for scenario in names {
        let of: Vec<&T> = samples
            .iter()
            .filter(|s| s.scenario() == scenario)
            .collect();
        for (figure, decimals, pick) in figures {
            rows.push(figure_row(scenario, figure, *decimals, &of, pick));
        }
    }
    rows
}

/// The summary rows.
pub fn summary_rows(evalsha: &[EvalshaSample], kills: &[KillSample]) -> Vec<FigureRow> {
    let mut out = rows(evalsha, &[("requests/s", 0, |s| Some(s.result.rps))]);
    out.extend(rows(
        kills,
        &[
            ("SCRIPT KILL → +OK ms", 3, |s| Some(s.result.kill_ok_ms)),
            ("+OK → script error ms", 3, |s| {
                Some(s.result.script_error_ms)
            }),
        ],
    ));
    out
}

/// The detail rows.
pub fn detail_rows(evalsha: &[EvalshaSample], kills: &[KillSample]) -> Vec<FigureRow> {
    let mut out = rows(
        evalsha,
        &[
            ("p50 ms", 3, |s| s.result.p50_ms),
            ("p99 ms", 3, |s| s.result.p99_ms),
            ("keys after the run", 0, |s| Some(s.result.keys as f64)),
        ],
    );
    out.extend(rows(
        kills,
        &[
            ("EVAL → first -BUSY ms", 1, |s| {
                Some(s.result.busy_after_ms)
            }),
            ("slowest SCRIPT KILL → +OK ms", 3, |s| {
                Some(s.result.kill_ok_max_ms)
            }),
            ("GET x sent while busy", 0, |s| Some(s.result.gets as f64)),
            ("GET x answered -BUSY", 0, |s| {
                Some(s.result.gets_busy as f64)
            }),
        ],
    ));
    out
}

/// A note for every server and scenario where a `GET x` during the busy script was answered
/// with something other than -BUSY (what Redis answers), quoting the first such reply.
pub fn busy_notes(kills: &[KillSample]) -> Vec<String> {
    let mut notes = Vec::new();
    for kind in ServerKind::BOTH {
        let mut by_scenario: Vec<(&str, u64, u64, Option<&str>)> = Vec::new();
        for sample in kills.iter().filter(|s| s.server == kind) {
            let r = &sample.result;
            match by_scenario.iter_mut().find(|e| e.0 == sample.scenario) {
                Some(entry) => {
                    entry.1 += r.gets;
                    entry.2 += r.gets_busy;
                    entry.3 = entry.3.or(r.get_other_reply.as_deref());
                }
                None => by_scenario.push((
                    &sample.scenario,
                    r.gets,
                    r.gets_busy,
                    r.get_other_reply.as_deref(),
                )),
            }
        }
        for (scenario, gets, busy, other) in by_scenario {
            if busy < gets {
                notes.push(format!(
                    "{} answered {} of {gets} `GET x` during the busy script ({scenario}) with \
                     something other than -BUSY, first {}",
                    kind.name(),
                    gets - busy,
                    other.unwrap_or("?")
                ));
            }
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::{
        EvalshaSample, KillSample, busy_notes, detail_rows, evalsha_scenario, kill_scenario,
        summary_rows,
    };
    use crate::scripting_driver::{BusyScript, EvalshaResult, KillResult, KillerOpened};
    use crate::server_proc::ServerKind;

    fn evalsha(server: ServerKind, round: usize, rps: f64) -> EvalshaSample {
        EvalshaSample {
            server,
            round,
            scenario: evalsha_scenario(16),
            pipeline: 16,
            result: EvalshaResult {
                requests: 1000,
                rps,
                avg_ms: None,
                p50_ms: Some(1.0),
                p99_ms: None,
                keys: 990,
            },
        }
    }

    fn kill(server: ServerKind, round: usize, kill_ok_ms: f64, gets_busy: u64) -> KillSample {
        KillSample {
            server,
            round,
            scenario: kill_scenario(BusyScript::Counted, KillerOpened::Before),
            script: BusyScript::Counted,
            killer: KillerOpened::Before,
            result: KillResult {
                kills: 5,
                busy_after_ms: 101.0,
                kill_ok_ms,
                kill_ok_max_ms: kill_ok_ms * 2.0,
                script_error_ms: 0.25,
                gets: 15,
                gets_busy,
                get_other_reply: (gets_busy < 15).then(|| "\"1\"".to_owned()),
                script_error: "ERR killed".to_owned(),
            },
        }
    }

    #[test]
    fn rows_pair_rounds_and_take_medians() {
        let (d, r) = (ServerKind::Densekv, ServerKind::Redis);
        let evalsha = [
            evalsha(d, 1, 200.0),
            evalsha(r, 1, 100.0),
            evalsha(d, 2, 300.0),
            evalsha(r, 2, 100.0),
            evalsha(d, 3, 50.0),
            evalsha(r, 3, 100.0),
        ];
        let kills = [
            kill(d, 1, 1.0, 15),
            kill(r, 1, 4.0, 15),
            kill(r, 2, 2.0, 15),
        ];
        let rows = summary_rows(&evalsha, &kills);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].scenario, "EVALSHA INCR, -P 16");
        assert_eq!((rows[0].densekv, rows[0].redis), (Some(200.0), Some(100.0)));
        assert_eq!((rows[0].ratio, rows[0].rounds_paired), (Some(2.0), 3));
        assert_eq!(
            rows[1].scenario,
            "SCRIPT KILL, counted loop, killer opened before"
        );
        // Redis's median is over its two rounds; the ratio pairs round 1 only.
        assert_eq!((rows[1].redis, rows[1].ratio), (Some(3.0), Some(0.25)));
        assert_eq!(rows[1].rounds_paired, 1);
        let details = detail_rows(&evalsha, &kills);
        assert!(details.iter().any(|r| r.figure == "GET x answered -BUSY"));
        assert!(summary_rows(&[], &[]).is_empty());
    }

    #[test]
    fn a_get_served_during_the_busy_script_is_noted() {
        let (d, r) = (ServerKind::Densekv, ServerKind::Redis);
        assert!(busy_notes(&[kill(d, 1, 1.0, 15), kill(r, 1, 1.0, 15)]).is_empty());
        let notes = busy_notes(&[kill(d, 1, 1.0, 15), kill(d, 2, 1.0, 12)]);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with("densekv answered 3 of 30 `GET x`"),
            "{}",
            notes[0]
        );
        assert!(notes[0].ends_with("first \"1\""));
    }
}
