//! The persist suite's text: the tables printed on stdout and the `## Persistence` section of
//! `docs/BENCHMARKS.md` (method, command, the summary against densekv's targets, one table per
//! figure), from a [`PersistReport`].
//!
//! The section lives in the file the server suite writes whole; that suite keeps it and the aof
//! suite's ([`section`], [`splice`]), and this one replaces only its own, in place or at the end
//! ([`splice_at`], which the aof suite uses for its section too).
//!
//! What the text of every suite beside redis-server shares is here too, written once: the
//! summary table ([`headline_table`]), a section method's opening and closing sentences
//! ([`generated_by`], [`command_block`]) and the notes and failures at the end
//! ([`notes_and_failures`], [`notes_and_failures_plain`]).

use std::fmt::Write as _;

use crate::machine::MachineInfo;
use crate::persist_report::{
    BgsaveSummary, Headline, LatencySummary, PersistReport, SpeedSummary, TARGET_P99_RATIO,
    TARGET_PEAK_RATIO,
};
use crate::server_report::{Versions, num, ratio_text, table};

/// The heading that starts this suite's section of `docs/BENCHMARKS.md`.
pub const SECTION_HEADING: &str = "## Persistence";

/// The summary table.
pub fn headline_table(rows: &[Headline], markdown: bool) -> String {
    let header = [
        "figure",
        "densekv",
        "redis",
        "densekv/redis",
        "target",
        "met",
    ];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            vec![
                row.figure.clone(),
                figure(row.densekv),
                figure(row.redis),
                ratio_text(row.ratio),
                row.target.clone(),
                match row.met {
                    Some(true) => "yes".to_owned(),
                    Some(false) => "NO".to_owned(),
                    None => "-".to_owned(),
                },
            ]
        })
        .collect();
    table(&header, &body, markdown)
}

/// A headline's figure: three decimals for ratios and seconds, none for rates in the thousands
/// (the aof suite's requests per second).
fn figure(value: Option<f64>) -> String {
    match value {
        Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
        _ => num(value, 3),
    }
}

fn mib(bytes: Option<f64>) -> Option<f64> {
    bytes.map(|b| b / f64::from(1u32 << 20))
}

/// The BGSAVE memory table.
pub fn bgsave_table(rows: &[BgsaveSummary], markdown: bool) -> String {
    job_table(rows, "save s", markdown)
}

/// The memory table of a background job (BGSAVE, BGREWRITEAOF), whose time is `job_column`.
pub fn job_table(rows: &[BgsaveSummary], job_column: &str, markdown: bool) -> String {
    let header = [
        "server",
        "D",
        "rounds counted",
        "before MiB",
        "peak MiB",
        "peak/before",
        job_column,
        "overwrite s",
    ];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            vec![
                row.server.name().to_owned(),
                row.delay.to_string(),
                format!("{}/{}", row.rounds_counted, row.rounds),
                num(mib(row.before_bytes), 1),
                num(mib(row.peak_bytes), 1),
                num(row.peak_ratio, 3),
                num(row.save_secs, 2),
                num(row.overwrite_secs, 2),
            ]
        })
        .collect();
    table(&header, &body, markdown)
}

/// The p99 table.
pub fn latency_table(rows: &[LatencySummary], markdown: bool) -> String {
    let header = [
        "test",
        "server",
        "p99 without ms",
        "p99 with ms",
        "with/without",
        "saves per run",
        "save running",
    ];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            vec![
                row.test.clone(),
                row.server.name().to_owned(),
                num(row.p99_without_ms, 3),
                num(row.p99_with_ms, 3),
                ratio_text(row.ratio),
                num(row.saves_started, 0),
                row.busy_fraction
                    .map_or_else(|| "-".to_owned(), |b| format!("{:.0}%", b * 100.0)),
            ]
        })
        .collect();
    table(&header, &body, markdown)
}

/// The SAVE and load table.
pub fn speed_table(rows: &[SpeedSummary], markdown: bool) -> String {
    let header = ["figure", "densekv", "redis", "densekv/redis"];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            vec![
                row.figure.to_owned(),
                num(row.densekv_secs, 3),
                num(row.redis_secs, 3),
                ratio_text(row.ratio),
            ]
        })
        .collect();
    table(&header, &body, markdown)
}

/// The text printed on stdout at the end of a run.
pub fn render(report: &PersistReport) -> String {
    let mut out = String::new();
    let c = &report.config;
    if !report.bgsave.is_empty() {
        let _ = writeln!(
            out,
            "\nBGSAVE under a full overwrite of N = {} keys: peak / before of resident memory \
             (redis-server: parent VmRSS + the child's private memory); medians of the counted \
             rounds\n",
            c.n
        );
        out.push_str(&bgsave_table(&report.bgsave, false));
        let _ = writeln!(
            out,
            "densekv/redis of peak/before: {} (densekv's target: peak/before <= {TARGET_PEAK_RATIO:.2})",
            ratio_text(report.bgsave_ratio)
        );
    }
    if !report.latency.is_empty() {
        let _ = writeln!(
            out,
            "\np99 latency without and with back-to-back BGSAVEs: {}; medians of {} rounds \
             (densekv's target: with/without <= {TARGET_P99_RATIO:.1})\n",
            c.benchmark_command, c.rounds
        );
        out.push_str(&latency_table(&report.latency, false));
    }
    if !report.speed.is_empty() {
        let _ = writeln!(
            out,
            "\nSAVE and load of N = {} keys; medians of {} rounds, the ratio the median of \
             per-round densekv / redis (below 1: densekv is faster)\n",
            c.n, c.rounds
        );
        out.push_str(&speed_table(&report.speed, false));
    }
    if !report.headlines.is_empty() {
        out.push_str("\nsummary: medians, with densekv's targets\n\n");
        out.push_str(&headline_table(&report.headlines, false));
    }
    notes_and_failures_plain(&mut out, &report.notes, &report.failures);
    out
}

/// The `## Persistence` section of `docs/BENCHMARKS.md`, ending in a blank line.
pub fn markdown_section(report: &PersistReport) -> String {
    let mut out = String::new();
    let c = &report.config;
    let _ = writeln!(
        out,
        "{SECTION_HEADING}: BGSAVE memory, latency during BGSAVE, SAVE and load\n\n\
         {}, on an ephemeral port, in a temporary directory of its own (`--dir`, `--save \"\"`, \
         `--appendonly no`, `--enable-debug-command yes`). The dataset is `DEBUG POPULATE {} key \
         16`: N keys `key:0` … `key:<N-1>` of 16-byte values. JSON in \
         `bench-results/persist.json`; the code is `crates/bench/src/persist_*.rs`. {}",
        generated_by(&report.command, &report.machine, &report.versions, c.rounds),
        c.n,
        command_block(&report.command)
    );
    out.push_str(&headline_table(&report.headlines, true));
    out.push_str("\nThe figures in detail:\n\n");
    markdown_bgsave(&mut out, report);
    markdown_latency(&mut out, report);
    markdown_speed(&mut out, report);
    notes_and_failures(&mut out, &report.notes, &report.failures);
    out
}

/// The run's notes and failed measurements as a list (nothing when there are none): the end of
/// every peer suite's section.
pub fn notes_and_failures(out: &mut String, notes: &[String], failures: &[String]) {
    if notes.is_empty() && failures.is_empty() {
        return;
    }
    for note in notes {
        let _ = writeln!(out, "- note: {note}");
    }
    for failure in failures {
        let _ = writeln!(out, "- FAILED: {failure}");
    }
    out.push('\n');
}

/// The run's notes and failed measurements, one a line: the end of every peer suite's text on
/// stdout (the section's list is [`notes_and_failures`]).
pub fn notes_and_failures_plain(out: &mut String, notes: &[String], failures: &[String]) {
    for note in notes {
        let _ = writeln!(out, "note: {note}");
    }
    for failure in failures {
        let _ = writeln!(out, "FAILED: {failure}");
    }
}

/// How every peer suite's section opens its method: the command, the date, the rounds and
/// redis-server's version, up to "every server fresh"; the servers' options that follow are
/// each suite's own.
pub fn generated_by(
    command: &str,
    machine: &MachineInfo,
    versions: &Versions,
    rounds: usize,
) -> String {
    format!(
        "Generated by `{command}` on {}, a 2-core shared machine: medians over {rounds} rounds, \
         densekv and redis-server ({}) measured one after the other in each round (who goes \
         first alternates), every server fresh",
        machine.date_utc,
        versions.redis_server.as_deref().unwrap_or("unknown")
    )
}

/// How every peer suite's section closes its method: the command as `cargo run` runs it.
pub fn command_block(command: &str) -> String {
    format!("The command:\n\n```sh\n{}\n```\n", cargo_command(command))
}

/// `bench <suite> ...` as `cargo run --release -p bench -- <suite> ...`.
pub fn cargo_command(command: &str) -> String {
    let args = command.strip_prefix("bench ").unwrap_or(command);
    format!("cargo run --release -p bench -- {args}")
}

fn markdown_bgsave(out: &mut String, report: &PersistReport) {
    if report.bgsave.is_empty() {
        return;
    }
    let c = &report.config;
    let _ = writeln!(
        out,
        "**BGSAVE peak memory under a full overwrite.** *Before* is the server's `VmRSS` after \
         the populate. Then `CONFIG SET rdb-key-save-delay D` (densekv D = {}: {} µs per key \
         its walk encodes, while a key a client overwrites first reaches the save as a \
         pre-image at no delay, so its save ends with the overwrite; redis-server D = {}: \
         1 µs with probability 1/{} per key, each such sleep 50–100 µs with the kernel's timer \
         slack), `BGSAVE`, and at once `SET key:<i> <new 16-byte value>` \
         for every i from one connection in pipelined batches of {}, while the memory is sampled \
         every {} ms until `INFO persistence` shows `rdb_bgsave_in_progress:0`. densekv does not \
         fork: its memory is its `VmRSS`. redis-server's is the parent's `VmRSS` plus the \
         child's `Private_Clean + Private_Dirty` (`/proc/<child>/smaps_rollup`, the child found \
         in `/proc/<pid>/task/<pid>/children`). A round counts only if the save was still running \
         when the overwrite's last batch was sent (D is chosen so it is). densekv's target: \
         peak/before ≤ {:.2}.\n",
        c.densekv_delay,
        c.densekv_delay,
        c.redis_delay,
        c.redis_delay.unsigned_abs(),
        c.batch_len,
        c.poll_ms,
        TARGET_PEAK_RATIO
    );
    out.push_str(&bgsave_table(&report.bgsave, true));
    let _ = writeln!(
        out,
        "\ndensekv/redis of peak/before: {}.\n",
        ratio_text(report.bgsave_ratio)
    );
}

fn markdown_latency(out: &mut String, report: &PersistReport) {
    if report.latency.is_empty() {
        return;
    }
    let c = &report.config;
    let _ = writeln!(
        out,
        "**p99 latency during BGSAVE.** The N keys are loaded under redis-benchmark's own names \
         (`key:%012d`, 16-byte values) so that `-r N` makes every SET overwrite a saved key and \
         every GET hit; `rdb-key-save-delay` is 0. redis-benchmark runs once with no save \
         (*without*) and once while a thread sends `BGSAVE` whenever `INFO persistence` (read \
         every {} ms) shows none running (*with*; *saves per run* and *save running*, the share \
         of its looks that found a save, show how well the saves covered the run). \
         *with/without* is the median over rounds of each round's p99 with / p99 without. \
         densekv's target: ≤ {:.1}. Command (`P` is the port):\n\n```sh\n{}\n```\n",
        c.poll_ms, TARGET_P99_RATIO, c.benchmark_command
    );
    out.push_str(&latency_table(&report.latency, true));
    out.push('\n');
}

fn markdown_speed(out: &mut String, report: &PersistReport) {
    if report.speed.is_empty() {
        return;
    }
    out.push_str(
        "**SAVE and load.** `SAVE` timed at the client; then the server restarted on its file, \
         timed from the spawn to the first PONG answered (polled every 5 ms), and the server's \
         own log line `DB loaded from disk: X seconds` (both log it), with `DBSIZE` checked \
         against N. Each server then starts on a copy of the other's `dump.rdb` (`DBSIZE` \
         checked), which shows the files move both ways. *densekv/redis* is the median of the \
         per-round ratios (a round's two servers run seconds apart); targets ≤ 1.0 for SAVE and \
         load.\n\n",
    );
    out.push_str(&speed_table(&report.speed, true));
    out.push('\n');
}

/// The headings of the sections other suites write into the server suite's file, in the order
/// they follow its own: this suite's, the aof, evict, pubsub and scripting suites'.
const KEPT_HEADINGS: [&str; 5] = [
    SECTION_HEADING,
    crate::aof_markdown::SECTION_HEADING,
    crate::evict_markdown::SECTION_HEADING,
    crate::pubsub_markdown::SECTION_HEADING,
    crate::scripting_markdown::SECTION_HEADING,
];

/// The `## Persistence`, `## Append-only file`, `## Eviction and memory return`, `## Pub/sub`
/// and `## Scripting` sections of a `BENCHMARKS.md` text, each up to the next `## ` heading, joined in that order: what the
/// server suite keeps when it writes the file anew. `None` when there is none.
pub fn section(doc: &str) -> Option<String> {
    let kept: String = KEPT_HEADINGS
        .iter()
        .filter_map(|heading| section_at(doc, heading))
        .collect();
    (!kept.is_empty()).then_some(kept)
}

/// The section of `doc` whose heading line starts with `heading`, up to the next `## ` heading.
pub fn section_at(doc: &str, heading: &str) -> Option<String> {
    let (start, end) = section_bounds(doc, heading)?;
    Some(doc[start..end].to_owned())
}

/// `doc` with its `## Persistence` section (or, when it has none, its end) replaced by
/// `section`, which may hold more than one section.
pub fn splice(doc: &str, section: &str) -> String {
    splice_at(doc, SECTION_HEADING, section)
}

/// `doc` with the section under `heading` replaced by `section`, or with `section` appended.
pub fn splice_at(doc: &str, heading: &str, section: &str) -> String {
    if let Some((start, end)) = section_bounds(doc, heading) {
        format!("{}{section}{}", &doc[..start], &doc[end..])
    } else {
        let trimmed = doc.trim_end_matches('\n');
        format!("{trimmed}\n\n{section}")
    }
}

/// Byte offsets of a section: its heading's line start, and the next `## ` line's start.
fn section_bounds(doc: &str, heading: &str) -> Option<(usize, usize)> {
    let mut offset = 0;
    let mut start = None;
    for line in doc.split_inclusive('\n') {
        if line.starts_with("## ") {
            match start {
                None if line.starts_with(heading) => start = Some(offset),
                Some(s) => return Some((s, offset)),
                None => {}
            }
        }
        offset += line.len();
    }
    start.map(|s| (s, doc.len()))
}

#[cfg(test)]
mod tests {
    use super::{cargo_command, section, splice, splice_at};

    #[test]
    fn the_command_is_given_as_cargo_runs_it() {
        assert_eq!(
            cargo_command("bench persist --rounds 3"),
            "cargo run --release -p bench -- persist --rounds 3"
        );
    }

    #[test]
    fn the_section_is_replaced_in_place_or_appended() {
        let doc = "# B\n\n## Memory\n\nm\n\n## Persistence: old\n\nold\n\n## Growth\n\ng\n";
        assert_eq!(section(doc).unwrap(), "## Persistence: old\n\nold\n\n");
        let new = "## Persistence: new\n\nnew\n\n";
        assert_eq!(
            splice(doc, new),
            "# B\n\n## Memory\n\nm\n\n## Persistence: new\n\nnew\n\n## Growth\n\ng\n"
        );
        assert_eq!(
            splice("# B\n\n## Memory\n\nm\n", new),
            format!("# B\n\n## Memory\n\nm\n\n{new}")
        );
        assert_eq!(section("# B\n## Memory\n"), None);
    }

    #[test]
    fn the_server_suite_keeps_both_persistence_sections() {
        let doc = "# B\n\n## Persistence: p\n\np\n\n## Append-only file: a\n\na\n";
        let kept = section(doc).unwrap();
        assert_eq!(
            kept,
            "## Persistence: p\n\np\n\n## Append-only file: a\n\na\n"
        );
        assert_eq!(
            splice("# B\n\n## Memory\n\nm\n", &kept),
            format!("# B\n\n## Memory\n\nm\n\n{kept}")
        );
        let aof = "## Append-only file: new\n\nnew\n";
        assert_eq!(
            splice_at(doc, "## Append-only file", aof),
            format!("# B\n\n## Persistence: p\n\np\n\n{aof}")
        );
        assert_eq!(
            section("## Append-only file: a\n\na\n").unwrap(),
            "## Append-only file: a\n\na\n"
        );
        let with_evict = format!("{doc}\n## Eviction and memory return: e\n\ne\n");
        assert!(
            section(&with_evict)
                .unwrap()
                .ends_with("## Eviction and memory return: e\n\ne\n")
        );
    }
}
