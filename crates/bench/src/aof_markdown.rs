//! The aof suite's text: the tables printed on stdout and the `## Append-only file` section of
//! `docs/BENCHMARKS.md` (method, command, the summary against densekv's targets, one table per
//! figure), from an [`AofReport`]. The section is spliced in place, or after the last section,
//! by `persist_markdown::splice_at`; the server suite keeps it when it writes the file anew.

use std::fmt::Write as _;

use crate::aof_report::{AofReport, TARGET_RPS_RATIO, ThroughputSummary, TimingSummary};
use crate::persist_markdown::{
    command_block, generated_by, headline_table, job_table, notes_and_failures,
    notes_and_failures_plain,
};
use crate::persist_report::TARGET_PEAK_RATIO;
use crate::server_report::{num, ratio_text, table};

/// The heading that starts this suite's section of `docs/BENCHMARKS.md`.
pub const SECTION_HEADING: &str = "## Append-only file";

/// The throughput table: one row per (policy, pipeline, test).
pub fn throughput_table(rows: &[ThroughputSummary], markdown: bool) -> String {
    let header = [
        "appendfsync",
        "-P",
        "test",
        "densekv rps",
        "redis rps",
        "densekv/redis",
        "rounds ahead",
        "densekv p99 ms",
        "redis p99 ms",
        "auto rewrites d/r",
        "met",
    ];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            vec![
                row.policy.to_owned(),
                row.pipeline.to_string(),
                row.test.to_owned(),
                num(row.densekv_rps, 0),
                num(row.redis_rps, 0),
                ratio_text(row.ratio),
                format!("{}/{}", row.rounds_ahead, row.rounds_paired),
                num(row.densekv_p99_ms, 3),
                num(row.redis_p99_ms, 3),
                format!(
                    "{}/{}",
                    num(row.densekv_rewrites, 0),
                    num(row.redis_rewrites, 0)
                ),
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

/// The rewrite and load table.
pub fn timing_table(rows: &[TimingSummary], markdown: bool) -> String {
    let header = ["figure", "densekv", "redis", "densekv/redis"];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            vec![
                row.figure.to_owned(),
                num(row.densekv, 3),
                num(row.redis, 3),
                ratio_text(row.ratio),
            ]
        })
        .collect();
    table(&header, &body, markdown)
}

/// The text printed on stdout at the end of a run.
pub fn render(report: &AofReport) -> String {
    let mut out = String::new();
    let c = &report.config;
    if !report.throughput.is_empty() {
        let _ = writeln!(
            out,
            "\nthroughput with the AOF on, a fresh server per (appendfsync, -P); medians of {} \
             rounds, the ratio the median of per-round densekv / redis (densekv's target: >= \
             {TARGET_RPS_RATIO:.1} under always and everysec)\n",
            c.rounds
        );
        for command in &c.benchmark_commands {
            let _ = writeln!(out, "  {command}");
        }
        out.push('\n');
        out.push_str(&throughput_table(&report.throughput, false));
    }
    if !report.rewrite_memory.is_empty() {
        let _ = writeln!(
            out,
            "\nBGREWRITEAOF under a full overwrite of N = {} keys: peak / before of resident \
             memory (redis-server: parent VmRSS + the child's private memory); medians of the \
             counted rounds\n",
            c.n
        );
        out.push_str(&job_table(&report.rewrite_memory, "rewrite s", false));
        let _ = writeln!(
            out,
            "densekv/redis of peak/before: {} (densekv's target: peak/before <= \
             {TARGET_PEAK_RATIO:.2})",
            ratio_text(report.rewrite_memory_ratio)
        );
    }
    if !report.timing.is_empty() {
        let _ = writeln!(
            out,
            "\nBGREWRITEAOF of N = {} keys on an idle server, then {} SETs, and a restart on the \
             AOF; medians of {} rounds, the ratio the median of per-round densekv / redis \
             (below 1: densekv is faster or smaller)\n",
            c.n, c.incr_sets, c.rounds
        );
        out.push_str(&timing_table(&report.timing, false));
    }
    if !report.headlines.is_empty() {
        out.push_str("\nsummary: medians, with densekv's targets\n\n");
        out.push_str(&headline_table(&report.headlines, false));
    }
    notes_and_failures_plain(&mut out, &report.notes, &report.failures);
    out
}

/// The `## Append-only file` section of `docs/BENCHMARKS.md`, ending in a blank line.
pub fn markdown_section(report: &AofReport) -> String {
    let mut out = String::new();
    let c = &report.config;
    let _ = writeln!(
        out,
        "{SECTION_HEADING}: throughput under appendfsync, BGREWRITEAOF memory and time, load\n\n\
         {}, on an ephemeral port, in an empty temporary directory of its own on the same disk \
         (`--dir`, `--save \"\"`, `--appendonly yes`, `--enable-debug-command yes`; everything \
         else at both servers' defaults, `aof-use-rdb-preamble yes` and automatic rewrites at \
         100% growth past 64 MB among them). JSON in `bench-results/aof.json`; the code is \
         `crates/bench/src/aof_*.rs` and the persist suite's BGSAVE measurement. {}",
        generated_by(&report.command, &report.machine, &report.versions, c.rounds),
        command_block(&report.command)
    );
    out.push_str(&headline_table(&report.headlines, true));
    out.push_str("\nThe figures in detail:\n\n");
    markdown_throughput(&mut out, report);
    markdown_rewrite_memory(&mut out, report);
    markdown_timing(&mut out, report);
    notes_and_failures(&mut out, &report.notes, &report.failures);
    out
}

fn markdown_throughput(out: &mut String, report: &AofReport) {
    if report.throughput.is_empty() {
        return;
    }
    let c = &report.config;
    let _ = writeln!(
        out,
        "**Throughput with the AOF on.** For each `appendfsync` policy and each pipeline depth, \
         a fresh server (`--appendfsync always|everysec|no`) and one redis-benchmark run of the \
         three write tests; `set` and `incr` over `-r {}` keys, `lpush` onto one list. Under \
         `always` a reply leaves only after an fsync covers its write (both servers fsync once \
         per event-loop turn for every client served in it); under `everysec` a background \
         fsync runs once a second; under `no` the kernel writes back when it likes. *auto \
         rewrites d/r* is the median number of rewrites densekv / redis-server started on their \
         own during the run. *densekv/redis* is the median of the per-round ratios (above 1: \
         densekv is faster), so it may fall on the other side of 1 from the two medians' \
         ratio; *rounds ahead* counts the rounds where densekv's rps was at least \
         redis-server's. densekv's target: ≥ {TARGET_RPS_RATIO:.1} in every cell of \
         `always` and `everysec` (`no` is for reference). Commands (`P` is the port):\n\n```sh",
        c.keyspace
    );
    for command in &c.benchmark_commands {
        let _ = writeln!(out, "{command}");
    }
    out.push_str("```\n\n");
    out.push_str(&throughput_table(&report.throughput, true));
    out.push('\n');
}

fn markdown_rewrite_memory(out: &mut String, report: &AofReport) {
    if report.rewrite_memory.is_empty() {
        return;
    }
    let c = &report.config;
    let _ = writeln!(
        out,
        "**BGREWRITEAOF peak memory under a full overwrite.** The persist suite's BGSAVE figure \
         with `BGREWRITEAOF` in its place and the AOF on: `DEBUG POPULATE {} key 16`, *before* \
         = `VmRSS` once still, `CONFIG SET rdb-key-save-delay D` (densekv D = {}, redis-server \
         D = {}; both servers' rewrites write an RDB base and honour it), `BGREWRITEAOF`, and at \
         once `SET key:<i> <new 16-byte value>` for every i from one connection in pipelined \
         batches of {} (each SET appended to the AOF too, `appendfsync everysec`), while the \
         memory is sampled every {} ms until `INFO persistence` shows \
         `aof_rewrite_in_progress:0` and `aof_rewrite_scheduled:0`. densekv's memory is its \
         `VmRSS`; redis-server's the parent's `VmRSS` plus the rewrite child's `Private_Clean + \
         Private_Dirty`. A round counts only if the rewrite was still running when the \
         overwrite's last batch was sent. densekv's target: peak/before ≤ {:.2}.\n",
        c.n, c.densekv_delay, c.redis_delay, c.batch_len, c.poll_ms, TARGET_PEAK_RATIO
    );
    out.push_str(&job_table(&report.rewrite_memory, "rewrite s", true));
    let _ = writeln!(
        out,
        "\ndensekv/redis of peak/before: {}.\n",
        ratio_text(report.rewrite_memory_ratio)
    );
}

fn markdown_timing(out: &mut String, report: &AofReport) {
    if report.timing.is_empty() {
        return;
    }
    let c = &report.config;
    let _ = writeln!(
        out,
        "**BGREWRITEAOF and load times.** A fresh server with the AOF on, `DEBUG POPULATE {} key \
         16`, `BGREWRITEAOF` timed from its reply to the first look (every {} ms) at `INFO \
         persistence` that finds no rewrite running or scheduled (redis-server's includes up to \
         100 ms until its cron reaps the child); then {} `SET key:%012d <16 bytes>` of new keys \
         (pipelined, `everysec`) into the incremental file, a SIGTERM, and a restart on the \
         directory: spawn to the first PONG, and the servers' own log lines `DB loaded from \
         append only file`, `… from base file` and `… from incr file` (both log them), with \
         `DBSIZE` checked against {}. The file sizes are those at the stop. *densekv/redis* is \
         the median of the per-round ratios.\n",
        c.n,
        c.poll_ms,
        c.incr_sets,
        c.n + c.incr_sets
    );
    out.push_str(&timing_table(&report.timing, true));
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::{throughput_table, timing_table};
    use crate::aof_report::{ThroughputSummary, TimingSummary};

    #[test]
    fn tables_show_medians_ratios_and_targets() {
        let row = ThroughputSummary {
            policy: "always",
            pipeline: 16,
            test: "set",
            densekv_rps: Some(300_000.4),
            redis_rps: Some(150_000.0),
            ratio: Some(2.0),
            rounds_paired: 3,
            rounds_ahead: 2,
            densekv_p99_ms: Some(1.5),
            redis_p99_ms: None,
            densekv_rewrites: Some(1.0),
            redis_rewrites: Some(2.0),
            met: Some(true),
        };
        let text = throughput_table(&[row], true);
        assert!(text.contains(
            "| always | 16 | set | 300000 | 150000 | 2.00x | 2/3 | 1.500 | - | 1/2 | yes |"
        ));
        let timing = TimingSummary {
            figure: "BGREWRITEAOF idle s",
            densekv: Some(0.25),
            redis: Some(1.0),
            ratio: Some(0.25),
        };
        assert!(timing_table(&[timing], false).contains("0.250"));
    }
}
