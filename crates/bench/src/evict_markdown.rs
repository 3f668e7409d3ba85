//! The evict suite's text: the tables printed on stdout and the Markdown section written to
//! `evict.md` in the output directory (method, command, the summary against densekv's targets,
//! one table per scenario, the charts), from an [`EvictReport`]. The section is meant to be
//! pasted into `docs/BENCHMARKS.md` by hand; the suite never edits that file.

use std::fmt::Write as _;

use crate::evict_cache;
use crate::evict_fill;
use crate::evict_report::{
    EvictReport, FigureRow, TARGET_ALL_RSS_RATIO, TARGET_HALF_RATIO, TARGET_LFU_MISS_RATIO,
    TARGET_RECENT_FRACTION, TARGET_RPS_RATIO, TARGET_USED_RATIO,
};
use crate::evict_throughput;
use crate::persist_markdown::{
    command_block, generated_by, headline_table, notes_and_failures, notes_and_failures_plain,
};
use crate::server_report::{num, ratio_text, table};

/// The heading that starts the section.
pub const SECTION_HEADING: &str = "## Eviction and memory return";

/// The scenarios, in the order the tables show them.
const SCENARIOS: [&str; 6] = [
    "delete-half",
    "delete-all",
    "lru-fill",
    "zipf allkeys-lfu",
    "zipf allkeys-lru",
    "throughput",
];

/// A row's cells under densekv, redis and densekv/redis: both medians with the row's decimals,
/// and the ratio (the pub/sub suite's tables show them too).
pub fn compared(row: &FigureRow) -> [String; 3] {
    [
        num(row.densekv, row.decimals),
        num(row.redis, row.decimals),
        ratio_text(row.ratio),
    ]
}

/// A table of figure rows with the rounds each ratio pairs: first the cells `label` takes from
/// a row, then [`compared`]'s and the rounds paired; `header` names every column. The pub/sub
/// suite's details table is one too.
pub fn paired_table<'a>(
    header: &[&str],
    rows: impl IntoIterator<Item = &'a FigureRow>,
    label: impl Fn(&FigureRow) -> Vec<String>,
    markdown: bool,
) -> String {
    let body: Vec<Vec<String>> = rows
        .into_iter()
        .map(|row| {
            let mut cells = label(row);
            cells.extend(compared(row));
            cells.push(row.rounds_paired.to_string());
            cells
        })
        .collect();
    table(header, &body, markdown)
}

/// The table of one scenario's figures.
pub fn figure_table(rows: &[&FigureRow], markdown: bool) -> String {
    let header = [
        "figure",
        "densekv",
        "redis",
        "densekv/redis",
        "rounds paired",
    ];
    let label = |row: &FigureRow| vec![row.figure.clone()];
    paired_table(&header, rows.iter().copied(), label, markdown)
}

fn rows_of<'a>(report: &'a EvictReport, scenario: &str) -> Vec<&'a FigureRow> {
    report
        .figures
        .iter()
        .filter(|r| r.scenario == scenario)
        .collect()
}

/// The text printed on stdout at the end of a run.
pub fn render(report: &EvictReport) -> String {
    let mut out = String::new();
    let c = &report.config;
    for scenario in SCENARIOS {
        let rows = rows_of(report, scenario);
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\n{scenario}: {}; medians of {} rounds, the ratio the median of per-round densekv / \
             redis\n",
            caption(scenario, report),
            c.rounds
        );
        out.push_str(&figure_table(&rows, false));
    }
    if !report.headlines.is_empty() {
        out.push_str("\nsummary: medians, with densekv's targets\n\n");
        out.push_str(&headline_table(&report.headlines, false));
    }
    notes_and_failures_plain(&mut out, &report.notes, &report.failures);
    out
}

/// One line on what a scenario did.
fn caption(scenario: &str, report: &EvictReport) -> String {
    let c = &report.config;
    match scenario {
        "delete-half" | "delete-all" => format!(
            "{} keys loaded, {} deleted, memory {} s after the last DEL over the memory after the \
             load",
            c.n,
            if scenario == "delete-half" {
                "every other key"
            } else {
                "every key"
            },
            c.at_secs
        ),
        "lru-fill" => format!(
            "{} SETs of {}-byte values to distinct keys under --maxmemory {} allkeys-lru",
            c.fill_sets, c.fill_value_bytes, c.fill_maxmemory
        ),
        "throughput" => format!(
            "{} after a fill past --maxmemory {} allkeys-lru",
            c.benchmark_command, c.throughput_maxmemory
        ),
        _ => format!(
            "Zipf({}) over {} keys, GET then SET on a miss, {} warm-up requests then {} \
             measured, --maxmemory {}",
            c.zipf_exponent, c.zipf_keys, c.zipf_warmup, c.zipf_requests, c.zipf_maxmemory
        ),
    }
}

/// The section, ending in a blank line.
pub fn markdown_section(report: &EvictReport) -> String {
    let mut out = String::new();
    let c = &report.config;
    let _ = writeln!(
        out,
        "{SECTION_HEADING}: DEL, maxmemory under LRU and LFU, eviction throughput\n\n\
         {} on an ephemeral port with `--save \"\" --appendonly no` and, where a scenario says \
         so, `--maxmemory` and `--maxmemory-policy`; everything else at both servers' defaults. \
         Every measurement is bounded by {} s. *densekv/redis* is the median of the per-round \
         ratios. JSON and this text in the run's output directory (`evict.json`, `evict.md`); \
         the code is `crates/bench/src/evict_*.rs`, the charts `bench/plot_evict.py`. {}",
        generated_by(&report.command, &report.machine, &report.versions, c.rounds),
        c.limit_secs,
        command_block(&report.command)
    );
    out.push_str(&headline_table(&report.headlines, true));
    let _ = writeln!(
        out,
        "\nTargets marked *within maxmemory* count as met only when densekv's max used_memory / \
         maxmemory in that scenario is at most {TARGET_USED_RATIO:.2}: a server that ignores the \
         limit keeps every key, misses only on first sight and evicts nothing, and would meet \
         them for the wrong reason.\n\nThe figures in detail:\n"
    );
    markdown_delete(&mut out, report);
    markdown_fill(&mut out, report);
    markdown_cache(&mut out, report);
    markdown_throughput(&mut out, report);
    notes_and_failures(&mut out, &report.notes, &report.failures);
    out
}

fn push_table(out: &mut String, report: &EvictReport, scenario: &str) {
    let rows = rows_of(report, scenario);
    if !rows.is_empty() {
        let _ = writeln!(out, "*{scenario}*\n");
        out.push_str(&figure_table(&rows, true));
        out.push('\n');
    }
}

fn markdown_delete(out: &mut String, report: &EvictReport) {
    if rows_of(report, "delete-half").is_empty() && rows_of(report, "delete-all").is_empty() {
        return;
    }
    let c = &report.config;
    let _ = writeln!(
        out,
        "**Memory returned after DEL.** A fresh server without a limit, `SET key:%012d <16 \
         random alphanumeric bytes>` for {} keys (pipelined, 1000 per write), *full* = `VmRSS` \
         once it has not moved for 300 ms and `used_memory` of `INFO memory`; then `DEL` of \
         every other key (*delete-half*) or of every key (*delete-all*), single-key and \
         pipelined, each reply `:1`, and `VmRSS` (`/proc/<pid>/status`) with `used_memory` \
         sampled every {} ms from the first DEL until {} s after the last reply. The figure is \
         the first sample at or after {} s. `VmRSS` is what the machine pays, `used_memory` \
         what the allocator says it holds: the two part when freed pages stay resident. \
         densekv's targets: both ≤ {TARGET_HALF_RATIO:.2} of full after delete-half, `VmRSS` ≤ \
         {TARGET_ALL_RSS_RATIO:.2} after delete-all.\n\n\
         ![VmRSS after DEL of half and of all keys](bench-evict-delete.png)\n",
        c.n, c.sample_ms, c.observe_secs, c.at_secs
    );
    push_table(out, report, "delete-half");
    push_table(out, report, "delete-all");
}

fn markdown_fill(out: &mut String, report: &EvictReport) {
    if rows_of(report, "lru-fill").is_empty() {
        return;
    }
    let c = &report.config;
    let _ = writeln!(
        out,
        "**Writing past maxmemory under allkeys-lru.** A fresh server with `--maxmemory {} \
         --maxmemory-policy {}`; {} `SET key:%012d <{} random bytes>` of distinct keys in \
         pipelined batches of {}, counting error replies, with `used_memory` read after every \
         batch (the maximum is kept) and `VmRSS` sampled every {} ms for the chart; then \
         `EXISTS` for each of the last {} keys written, `DBSIZE` and `evicted_keys`. \
         densekv's targets: no failed write, max used_memory / maxmemory ≤ \
         {TARGET_USED_RATIO:.2}, ≥ {TARGET_RECENT_FRACTION:.2} of the last keys present; the \
         keys held are for reference (the values' 100 bytes are most of each key's cost).\n\n\
         ![used_memory and VmRSS during the fill](bench-evict-fill.png)\n",
        c.fill_maxmemory,
        evict_fill::POLICY,
        c.fill_sets,
        c.fill_value_bytes,
        c.fill_batch_len,
        c.sample_ms,
        c.recent_window
    );
    push_table(out, report, "lru-fill");
}

fn markdown_cache(out: &mut String, report: &EvictReport) {
    let lfu = format!("zipf {}", evict_cache::POLICIES[0]);
    let lru = format!("zipf {}", evict_cache::POLICIES[1]);
    if rows_of(report, &lfu).is_empty() && rows_of(report, &lru).is_empty() {
        return;
    }
    let c = &report.config;
    let _ = writeln!(
        out,
        "**A cache too small for its keys.** A fresh server with `--maxmemory {}` and \
         `allkeys-lfu`, then another with `allkeys-lru`; a Zipf({}) stream of ranks over {} \
         keys (rejection-inversion, seeded per round, the same stream for both servers of a \
         round): `GET key:%012d` in pipelined batches of {}, then `SET` of a 16-byte value for \
         each nil reply in a second write. {} requests warm the cache up, the next {} are \
         counted: the miss ratio is nil replies over GETs. `used_memory` is read every {} \
         batches. densekv's target: ≤ {TARGET_LFU_MISS_RATIO:.2}x redis-server's miss ratio \
         under allkeys-lfu (within maxmemory); allkeys-lru is for reference.\n",
        c.zipf_maxmemory,
        c.zipf_exponent,
        c.zipf_keys,
        c.zipf_batch_len,
        c.zipf_warmup,
        c.zipf_requests,
        evict_cache::POLL_BATCHES
    );
    push_table(out, report, &lfu);
    push_table(out, report, &lru);
}

fn markdown_throughput(out: &mut String, report: &EvictReport) {
    if rows_of(report, "throughput").is_empty() {
        return;
    }
    let c = &report.config;
    let _ = writeln!(
        out,
        "**SET throughput while evicting.** A fresh server with `--maxmemory {} \
         --maxmemory-policy {}`, filled with `SET key:%012d <16 bytes>` until `used_memory` \
         reaches the limit or a key is evicted, and a quarter as many keys again; then \
         redis-benchmark over {} keys, so nearly every SET names a new key and evicts (`P` is \
         the port), with `used_memory` read every {} ms meanwhile. densekv's target: rps ≥ \
         {TARGET_RPS_RATIO:.1}x redis-server's (within maxmemory).\n\n```sh\n{}\n```\n",
        c.throughput_maxmemory,
        evict_throughput::POLICY,
        evict_throughput::KEYSPACE,
        c.sample_ms,
        c.benchmark_command
    );
    push_table(out, report, "throughput");
}

#[cfg(test)]
mod tests {
    use super::{SECTION_HEADING, compared, figure_table, markdown_section, render};
    use crate::evict_report::{self, EvictConfig, EvictReport, FigureRow};
    use crate::machine::MachineInfo;
    use crate::server_report::Versions;

    fn row(scenario: &str, figure: &str, densekv: f64, redis: f64) -> FigureRow {
        FigureRow {
            scenario: scenario.to_owned(),
            figure: figure.to_owned(),
            densekv: Some(densekv),
            redis: Some(redis),
            ratio: Some(densekv / redis),
            rounds_paired: 3,
            decimals: 3,
        }
    }

    fn report() -> EvictReport {
        let figures = vec![
            row("delete-half", "VmRSS at 5 s / full", 0.5, 1.0),
            row("delete-all", "VmRSS at 5 s / full", 0.1, 0.9),
            row("lru-fill", "max used_memory / maxmemory", 1.3, 1.0),
            row("lru-fill", "keys held (DBSIZE)", 450_000.0, 150_000.0),
            row("zipf allkeys-lfu", "miss ratio", 0.1, 0.2),
        ];
        EvictReport {
            suite: "evict",
            command: "bench evict --rounds 3".to_owned(),
            machine: MachineInfo::read(),
            versions: Versions {
                redis_server: Some("Redis server v=7.0.15".to_owned()),
                redis_benchmark: None,
                densekv_path: None,
                densekv_status: "ok".to_owned(),
            },
            config: EvictConfig {
                rounds: 3,
                n: 1_000_000,
                at_secs: 5.0,
                observe_secs: 6.0,
                ..EvictConfig::default()
            },
            headlines: evict_report::headlines(&figures, 5.0),
            notes: evict_report::limit_notes(&figures),
            figures,
            delete_rounds: Vec::new(),
            fill_rounds: Vec::new(),
            cache_rounds: Vec::new(),
            throughput_rounds: Vec::new(),
            failures: vec!["redis throughput round 2: timed out".to_owned()],
        }
    }

    #[test]
    fn the_section_has_the_summary_the_scenarios_and_the_charts() {
        let report = report();
        let md = markdown_section(&report);
        assert!(md.starts_with(SECTION_HEADING));
        assert!(md.contains("cargo run --release -p bench -- evict --rounds 3"));
        assert!(md.contains("| delete-half: VmRSS at 5 s / full | 0.500 | 1.000 | 0.50x |"));
        // 3.00x keys, but densekv went past its limit: not met.
        assert!(md.contains(
            "| lru-fill: keys held (DBSIZE) | 450000 | 150000 | 3.00x | none (reference) | - |"
        ));
        assert!(md.contains("| zipf allkeys-lfu: miss ratio | 0.100 | 0.200 | 0.50x | ratio <= 0.75, within maxmemory | NO |"));
        assert!(md.contains("](bench-evict-delete.png)"));
        assert!(md.contains("](bench-evict-fill.png)"));
        assert!(md.contains("*zipf allkeys-lfu*"));
        assert!(
            !md.contains("*throughput*"),
            "a scenario that did not run has no table"
        );
        assert!(md.contains("- note: lru-fill: densekv's max used_memory reached 1.30x"));
        assert!(md.contains("- FAILED: redis throughput round 2: timed out"));
        let text = render(&report);
        assert!(text.contains("summary: medians, with densekv's targets"));
        assert!(text.contains("FAILED: redis throughput round 2"));
        assert!(!text.contains('|'), "stdout tables are plain text");
    }

    #[test]
    fn tables_show_medians_and_ratios() {
        let row = FigureRow {
            scenario: "delete-half".to_owned(),
            figure: "VmRSS at 5 s / full".to_owned(),
            densekv: Some(0.5512),
            redis: Some(0.98),
            ratio: Some(0.5624),
            rounds_paired: 3,
            decimals: 3,
        };
        let text = figure_table(&[&row], true);
        assert!(text.contains("| VmRSS at 5 s / full | 0.551 | 0.980 | 0.56x | 3 |"));
        assert!(figure_table(&[&row], false).starts_with("figure"));
        assert_eq!(compared(&row), ["0.551", "0.980", "0.56x"]);
        let row = FigureRow {
            densekv: Some(1_500_000.4),
            redis: None,
            decimals: 0,
            ..row
        };
        assert_eq!(compared(&row), ["1500000", "-", "0.56x"]);
    }
}
