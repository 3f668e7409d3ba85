//! The scripting suite's text: the tables printed on stdout and the Markdown section written to
//! `scripting.md` in the output directory (method, command, the summary table — scenario,
//! densekv, redis-server, ratio — and the details), from a [`ScriptingReport`]. The tables are
//! the pub/sub suite's; as with that suite, the section is pasted into `docs/BENCHMARKS.md` by
//! hand and the suite never edits that file.

use std::fmt::Write as _;

use crate::persist_markdown::{
    command_block, generated_by, notes_and_failures, notes_and_failures_plain,
};
use crate::pubsub_markdown::{detail_table, summary_table};
use crate::scripting_driver::BusyScript;
use crate::scripting_report::ScriptingReport;

/// The heading that starts the section.
pub const SECTION_HEADING: &str = "## Scripting";

/// The text printed on stdout at the end of a run.
pub fn render(report: &ScriptingReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nscripting: medians of {} rounds; densekv/redis is the median of per-round ratios \
         (requests/s: above 1 is faster; latency: below 1 is shorter)\n",
        report.config.rounds
    );
    out.push_str(&summary_table(&report.figures, false));
    if !report.details.is_empty() {
        out.push_str("\ndetails\n\n");
        out.push_str(&detail_table(&report.details, false));
    }
    notes_and_failures_plain(&mut out, &report.notes, &report.failures);
    out
}

/// The section, ending in a blank line.
pub fn markdown_section(report: &ScriptingReport) -> String {
    let mut out = String::new();
    let c = &report.config;
    let _ = writeln!(
        out,
        "{SECTION_HEADING}: EVALSHA throughput and SCRIPT KILL latency\n\n\
         {} on an ephemeral port with `--save \"\" --appendonly no`, everything else at both \
         servers' defaults. Every reply, and the wait for -BUSY, is bounded by {} s. *densekv/redis* is the median \
         of the per-round ratios: above 1 is faster for requests/s, below 1 is shorter for \
         latencies. JSON and this text in the run's output directory (`scripting.json`, \
         `scripting.md`); the code is `crates/bench/src/scripting_*.rs`. {}",
        generated_by(&report.command, &report.machine, &report.versions, c.rounds),
        c.limit_secs,
        command_block(&report.command)
    );
    out.push_str(&summary_table(&report.figures, true));
    out.push('\n');
    method(&mut out, report);
    if !report.details.is_empty() {
        out.push_str(&detail_table(&report.details, true));
        out.push('\n');
    }
    notes_and_failures(&mut out, &report.notes, &report.failures);
    out
}

/// How each scenario was measured.
fn method(out: &mut String, report: &ScriptingReport) {
    let c = &report.config;
    let _ = writeln!(
        out,
        "**EVALSHA throughput.** `SCRIPT LOAD \"{}\"`, one `EVALSHA` checked to return an \
         integer, then `{}` with `-n {}` at `-P 1` and `-n {}` at `-P 16` (every option before \
         the command: redis-benchmark sends everything after it as the command's words), which \
         draws each key from {} with `-r`. *requests/s* is redis-benchmark's; `DBSIZE` after \
         the run (*keys after the run*) shows the keys were spread.\n\n\
         **SCRIPT KILL latency.** `CONFIG SET busy-reply-threshold {}` (else `lua-time-limit`), \
         then per kill: one connection sends `EVAL \"{}\" 0` (*while loop*) or `EVAL \"{}\" 0` \
         (*counted loop*); another sends `PING` every {} ms until it reads `-BUSY` (*EVAL → \
         first -BUSY*); a third sends `GET x` {} times and counts the `-BUSY` replies (a note \
         names any other reply); then the killer, a connection opened before the EVAL was sent \
         (*before*: it may share a server I/O thread with the script's) or only now (*after*), \
         sends `SCRIPT KILL`. *SCRIPT KILL → +OK* is from writing it to reading `+OK`; *+OK → \
         script error* from that `+OK` to the script connection reading its error reply (read \
         on a thread of its own; negative when it came first); a `PING` must then answer \
         `+PONG`. Each round's figure is the median of {} kills on one fresh server.\n",
        crate::scripting_driver::INCR_SCRIPT,
        c.benchmark_command,
        c.requests_p1,
        c.requests_p16,
        c.keyspace,
        c.busy_threshold_ms,
        BusyScript::While.source(),
        BusyScript::Counted.source(),
        c.poll_ms,
        c.gets_per_kill,
        c.kills
    );
}

#[cfg(test)]
mod tests {
    use super::{SECTION_HEADING, markdown_section, render};
    use crate::evict_report::FigureRow;
    use crate::machine::MachineInfo;
    use crate::scripting_report::{ScriptingConfig, ScriptingReport};
    use crate::server_report::Versions;

    fn row(scenario: &str, figure: &str, densekv: Option<f64>, redis: f64) -> FigureRow {
        FigureRow {
            scenario: scenario.to_owned(),
            figure: figure.to_owned(),
            densekv,
            redis: Some(redis),
            ratio: densekv.map(|d| d / redis),
            rounds_paired: usize::from(densekv.is_some()) * 3,
            decimals: if figure == "requests/s" { 0 } else { 3 },
        }
    }

    #[test]
    fn the_section_has_the_command_and_the_summary() {
        let report = ScriptingReport {
            suite: "scripting",
            command: "bench scripting --rounds 3".to_owned(),
            machine: MachineInfo::read(),
            versions: Versions {
                redis_server: Some("Redis server v=7.0.15".to_owned()),
                ..Versions::default()
            },
            config: ScriptingConfig {
                rounds: 3,
                kills: 5,
                gets_per_kill: 3,
                benchmark_command: "redis-benchmark -p P evalsha SHA 1 key:__rand_int__".to_owned(),
                ..ScriptingConfig::default()
            },
            figures: vec![
                row("EVALSHA INCR, -P 1", "requests/s", Some(60_000.4), 50_000.0),
                row("SCRIPT KILL, while loop", "SCRIPT KILL → +OK ms", None, 1.5),
            ],
            details: Vec::new(),
            evalsha_rounds: Vec::new(),
            kill_rounds: Vec::new(),
            notes: vec!["densekv has no EVAL".to_owned()],
            failures: Vec::new(),
        };
        let md = markdown_section(&report);
        assert!(md.starts_with(SECTION_HEADING));
        assert!(md.contains("cargo run --release -p bench -- scripting --rounds 3"));
        assert!(md.contains("| EVALSHA INCR, -P 1: requests/s | 60000 | 50000 | 1.20x |"));
        assert!(md.contains("| SCRIPT KILL, while loop: SCRIPT KILL → +OK ms | - | 1.500 | - |"));
        assert!(md.contains("`EVAL \"for i = 1, 1e9 do end\" 0`"));
        assert!(md.contains("- note: densekv has no EVAL"));
        let text = render(&report);
        assert!(text.contains("note: densekv has no EVAL"));
        assert!(!text.contains('|'), "stdout tables are plain text");
    }
}
