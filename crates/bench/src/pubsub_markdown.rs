//! The pub/sub suite's text: the tables printed on stdout and the Markdown section written to
//! `pubsub.md` in the output directory (method, command, the summary table — scenario, densekv,
//! redis-server, ratio — and the details), from a [`PubsubReport`]. As with the evict suite,
//! the section is pasted into `docs/BENCHMARKS.md` by hand; the suite never edits that file.

use std::fmt::Write as _;

use crate::evict_markdown::{compared, paired_table};
use crate::evict_report::FigureRow;
use crate::persist_markdown::{
    command_block, generated_by, notes_and_failures, notes_and_failures_plain,
};
use crate::pubsub_driver::PATTERN_CHANNELS;
use crate::pubsub_report::PubsubReport;
use crate::server_report::table;

/// The heading that starts the section.
pub const SECTION_HEADING: &str = "## Pub/sub";

/// The summary table: one line per scenario and figure.
pub fn summary_table(rows: &[FigureRow], markdown: bool) -> String {
    let header = ["scenario", "densekv", "redis-server", "densekv/redis"];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let [densekv, redis, ratio] = compared(row);
            vec![
                format!("{}: {}", row.scenario, row.figure),
                densekv,
                redis,
                ratio,
            ]
        })
        .collect();
    table(&header, &body, markdown)
}

/// The details table, with the rounds each ratio pairs.
pub fn detail_table(rows: &[FigureRow], markdown: bool) -> String {
    let header = [
        "scenario",
        "figure",
        "densekv",
        "redis-server",
        "densekv/redis",
        "rounds paired",
    ];
    let label = |row: &FigureRow| vec![row.scenario.clone(), row.figure.clone()];
    paired_table(&header, rows, label, markdown)
}

/// The text printed on stdout at the end of a run.
pub fn render(report: &PubsubReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\npub/sub: medians of {} rounds; densekv/redis is the median of per-round ratios \
         (messages/s: above 1 is faster; latency: below 1 is shorter)\n",
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
pub fn markdown_section(report: &PubsubReport) -> String {
    let mut out = String::new();
    let c = &report.config;
    let _ = writeln!(
        out,
        "{SECTION_HEADING}: PUBLISH throughput and fan-out latency\n\n\
         {} on an ephemeral port with `--save \"\" --appendonly no --maxclients {}`, \
         everything else at both servers' defaults. Every measurement is bounded by {} s. \
         *densekv/redis* is the median of the per-round ratios: above 1 is faster for \
         messages/s, below 1 is shorter for latencies. JSON and this text in the run's output \
         directory (`pubsub.json`, `pubsub.md`); the code is `crates/bench/src/pubsub_*.rs`. {}",
        generated_by(&report.command, &report.machine, &report.versions, c.rounds),
        c.maxclients,
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
fn method(out: &mut String, report: &PubsubReport) {
    let c = &report.config;
    let counts: Vec<String> = c.channel_subscribers.iter().map(usize::to_string).collect();
    let _ = writeln!(
        out,
        "**PUBLISH throughput.** S subscriber connections ({} of them; `SUBSCRIBE {}`) or {} \
         (`PSUBSCRIBE {}`), served by {} harness threads polling their sockets with epoll, \
         all confirmed before anything is published; then {} publisher connections each send \
         their share of M messages as `PUBLISH <channel> <16-byte payload>` in pipelined \
         batches of {} (the channel is `{}`, or `news.<sequence mod {PATTERN_CHANNELS}>` for \
         the pattern), every reply checked to be `:S`. M is {} deliveries over S, rounded up \
         to whole batches. The clock runs from the publishers' start until the last subscriber \
         has received all M messages; each payload names its publisher and sequence, and a \
         subscriber that misses, repeats or reorders one fails the measurement. messages/s = \
         M / that time (*deliveries/s* = S × messages/s).\n\n\
         **Fan-out latency.** {} subscribers on `{}` (densekv's io-threads each accept their \
         share of them; redis-server serves all from its one event loop), one publisher sending `PUBLISH {} <send time>` one at \
         a time at {} messages/s on a fixed grid for {} s, the send time a monotonic \
         nanosecond clock of the harness; every subscriber takes receive time − send time for \
         every message, and the percentiles are over all deliveries of the run. *late sends* \
         counts messages sent more than one interval behind the grid (the previous reply was \
         slow).\n",
        counts.join(", "),
        c.channel,
        c.pattern_subscribers,
        c.pattern,
        c.subscriber_threads,
        c.publishers,
        c.depth,
        c.channel,
        c.deliveries,
        c.fanout_subscribers,
        c.channel,
        c.channel,
        c.fanout_rate_per_sec,
        c.fanout_secs
    );
}

#[cfg(test)]
mod tests {
    use super::{SECTION_HEADING, markdown_section, render, summary_table};
    use crate::evict_report::FigureRow;
    use crate::machine::MachineInfo;
    use crate::pubsub_report::{PubsubConfig, PubsubReport};
    use crate::server_report::Versions;

    fn row(scenario: &str, figure: &str, densekv: Option<f64>, redis: f64) -> FigureRow {
        FigureRow {
            scenario: scenario.to_owned(),
            figure: figure.to_owned(),
            densekv,
            redis: Some(redis),
            ratio: densekv.map(|d| d / redis),
            rounds_paired: usize::from(densekv.is_some()) * 3,
            decimals: if figure == "messages/s" { 0 } else { 3 },
        }
    }

    fn report() -> PubsubReport {
        PubsubReport {
            suite: "pubsub",
            command: "bench pubsub --rounds 3".to_owned(),
            machine: MachineInfo::read(),
            versions: Versions {
                redis_server: Some("Redis server v=7.0.15".to_owned()),
                redis_benchmark: None,
                densekv_path: None,
                densekv_status: "ok".to_owned(),
            },
            config: PubsubConfig {
                rounds: 3,
                channel_subscribers: vec![1, 10, 100],
                ..PubsubConfig::default()
            },
            figures: vec![
                row(
                    "PUBLISH, 1 subscriber",
                    "messages/s",
                    Some(500_000.4),
                    250_000.0,
                ),
                row("fan-out to 1000", "p99 ms", None, 1.5),
            ],
            details: Vec::new(),
            throughput_rounds: Vec::new(),
            fanout_rounds: Vec::new(),
            notes: vec!["densekv has no PUBLISH".to_owned()],
            failures: Vec::new(),
        }
    }

    #[test]
    fn the_section_has_the_command_and_the_summary() {
        let report = report();
        let md = markdown_section(&report);
        assert!(md.starts_with(SECTION_HEADING));
        assert!(md.contains("cargo run --release -p bench -- pubsub --rounds 3"));
        assert!(md.contains("| scenario | densekv | redis-server | densekv/redis |"));
        assert!(md.contains("| PUBLISH, 1 subscriber: messages/s | 500000 | 250000 | 2.00x |"));
        assert!(md.contains("| fan-out to 1000: p99 ms | - | 1.500 | - |"));
        assert!(md.contains("(1, 10, 100 of them;"));
        assert!(md.contains("- note: densekv has no PUBLISH"));
        let text = render(&report);
        assert!(text.contains("note: densekv has no PUBLISH"));
        assert!(!text.contains('|'), "stdout tables are plain text");
        assert!(summary_table(&report.figures, false).starts_with("scenario"));
    }
}
