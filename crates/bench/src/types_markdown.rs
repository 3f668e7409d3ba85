//! The types suite's text: the tables printed on stdout and the Markdown section written to
//! `types.md` in the output directory (the opening, the command, the summary against densekv's
//! targets — the persist suite's headline table —, how each scenario was measured, and the
//! details — the pub/sub suite's table), from a [`TypesReport`]. As with the scripting suite,
//! the section is pasted into `docs/BENCHMARKS.md` by hand; the suite never edits that file.

use std::fmt::Write as _;

use crate::persist_markdown::{
    command_block, generated_by, headline_table, notes_and_failures, notes_and_failures_plain,
};
use crate::pubsub_markdown::detail_table;
use crate::types_report::{ACCOUNTING_TOLERANCE, TypesReport};

/// The heading that starts the section.
pub const SECTION_HEADING: &str = "## Bitmaps, HyperLogLog and geo";

/// The text printed on stdout at the end of a run.
pub fn render(report: &TypesReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\ntypes: medians of {} rounds; densekv/redis is the median of per-round ratios \
         (rates: above 1 is faster; memory: below 1 is smaller)\n",
        report.config.rounds
    );
    out.push_str(&headline_table(&report.headlines, false));
    if !report.details.is_empty() {
        out.push_str("\ndetails\n\n");
        out.push_str(&detail_table(&report.details, false));
    }
    notes_and_failures_plain(&mut out, &report.notes, &report.failures);
    out
}

/// The section, ending in a blank line.
pub fn markdown_section(report: &TypesReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{SECTION_HEADING}: memory, BITCOUNT, PFADD, PFCOUNT and GEOSEARCH\n\n\
         {} on an ephemeral port with `--save \"\" --appendonly no`, everything else at both \
         servers' defaults. *densekv/redis* is the median of the per-round ratios: above 1 is \
         faster for rates, below 1 is smaller for memory; *met* judges densekv's target on that \
         ratio. Memory is the server process's resident memory (VmRSS in `/proc/<pid>/status`) \
         after the load minus before it (the first reading after a warm-up: the load's first \
         commands on its key, then DEL, so code a command pages in on first use and other \
         first-use costs are in both servers' baselines), the second read once VmRSS has been still for 2 s at least {} s \
         after the load, then after a `MEMORY PURGE` (both servers return freed memory at once: \
         the figure is what the data holds, not how far the allocator's decay has got); the \
         details give `used_memory` from INFO beside it (densekv's \
         should be within {:.0} % of its VmRSS delta). JSON and this text in the run's output \
         directory (`types.json`, `types.md`); the code is `crates/bench/src/types_*.rs`. {}",
        generated_by(
            &report.command,
            &report.machine,
            &report.versions,
            report.config.rounds
        ),
        report.config.settle_secs,
        ACCOUNTING_TOLERANCE * 100.0,
        command_block(&report.command)
    );
    out.push_str(&headline_table(&report.headlines, true));
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
fn method(out: &mut String, report: &TypesReport) {
    let c = &report.config;
    let _ = writeln!(
        out,
        "**Bitmaps.** One key of {bits} bits ({bytes} bytes), built three ways, each on a fresh \
         server: *sparse* is `SETBIT bitmap 99999999 1` first (so the key has its full length \
         from the first command), then `SETBIT` at {sparse} offsets drawn uniformly below \
         {bits}; *dense* writes every byte with random bytes by `SETRANGE` in {chunk}-byte \
         chunks at increasing offsets; *growth* is `SETBIT` at offsets 0, {step}, 2·{step}, … \
         below {bits} (one bit per 4 KiB page, each lengthening the string) and then at \
         99999999. Loads are pipelined (at most 1,000 commands or 1 MiB a write) and every \
         reply is checked; `STRLEN` must then be {bytes} and `BITCOUNT bitmap` the bits set. \
         *BITCOUNT calls/s* is 1,000 / the median ms of {calls} `BITCOUNT bitmap` calls sent \
         one at a time on one connection (after one untimed call).\n\n\
         **PFADD.** {pfadd_keys} keys `hll:000000000000` … `hll:{last:012}` prefilled with \
         {prefill} elements each (PFADDs of 1,000 elements; each key's PFCOUNT checked within \
         5 %), so every key is a dense HyperLogLog (*dense keys after the prefill* is what \
         `PFDEBUG ENCODING` says, where answered); then `{pfadd}` with `-n {pfadd_p1}` at \
         `-P 1` and `-n {pfadd_p16}` at `-P 16`. redis-benchmark draws *each* `__rand_int__` \
         anew below `-r`, so the key is one of the {pfadd_keys} and the element one of 10⁶ per \
         key (three placeholders): mostly new elements, all into dense HyperLogLogs; `DBSIZE` \
         must still be {pfadd_keys} after the run.\n\n\
         **PFCOUNT.** {pfcount_keys} keys `hllc:0` … `hllc:9` of {pfcount_elements} distinct \
         elements each (PFADDs of 1,000; each key's PFCOUNT and the ten keys' PFCOUNT checked \
         within 3 %), then `{pfcount}` with `-n {pfcount_p1}` at `-P 1` and `-n {pfcount_p16}` \
         at `-P 16`: each request merges the ten dense HyperLogLogs and estimates the union.\n\n\
         **Geo.** `GEOADD geo <lon> <lat> m:<i> …` of {members} members, 100 a command and 10 \
         commands a write, the points uniform over the sphere between latitudes ±85.05 (not \
         uniform in degrees, so every circle of a given radius holds the same number of members \
         on average); *ΔVmRSS bytes/member* is ΔVmRSS / {members}. Then {queries} queries at \
         points drawn the same way, the same points on both servers: `GEOSEARCH geo FROMLONLAT \
         <lon> <lat> BYRADIUS {radius} km ASC COUNT {count}`, the radius chosen to hold ~100 \
         members (*members within r* counts them over 100 queries without COUNT), so each query \
         finds and orders ~100 members and replies the nearest {count}. Our own RESP client \
         sends them on one connection, {depth} written at a time before their replies are read \
         (*16 in flight*), then one at a time; a digest of the replies must agree between the \
         two, and a note says when densekv's differs from redis-server's.\n",
        bits = c.bitmap_bits,
        bytes = c.bitmap_bits / 8,
        sparse = c.sparse_offsets,
        chunk = c.dense_chunk_bytes,
        step = c.growth_step_bits,
        calls = c.bitcount_calls,
        pfadd_keys = c.pfadd_keys,
        last = c.pfadd_keys.saturating_sub(1),
        prefill = c.pfadd_prefill_per_key,
        pfadd = c.pfadd_command,
        pfadd_p1 = c.pfadd_requests_p1,
        pfadd_p16 = c.pfadd_requests_p16,
        pfcount_keys = c.pfcount_keys,
        pfcount_elements = c.pfcount_elements_per_key,
        pfcount = c.pfcount_command,
        pfcount_p1 = c.pfcount_requests_p1,
        pfcount_p16 = c.pfcount_requests_p16,
        members = c.geo_members,
        queries = c.geo_queries,
        radius = c.geo_radius_km,
        count = c.geo_count,
        depth = c.geo_depth,
    );
}

#[cfg(test)]
mod tests {
    use super::{SECTION_HEADING, markdown_section, render};
    use crate::machine::MachineInfo;
    use crate::persist_report::Headline;
    use crate::server_report::Versions;
    use crate::types_report::{TypesConfig, TypesReport};

    #[test]
    fn the_section_has_the_command_the_targets_and_the_method() {
        let report = TypesReport {
            suite: "types",
            command: "bench types --rounds 5".to_owned(),
            machine: MachineInfo::read(),
            versions: Versions {
                redis_server: Some("Redis server v=7.0.15".to_owned()),
                ..Versions::default()
            },
            config: TypesConfig {
                rounds: 5,
                bitmap_bits: 100_000_000,
                pfadd_keys: 100,
                geo_radius_km: 127,
                geo_count: 10,
                ..TypesConfig::default()
            },
            headlines: vec![Headline {
                figure: "geo: ΔVmRSS bytes/member".to_owned(),
                densekv: Some(40.0),
                redis: Some(100.0),
                ratio: Some(0.4),
                target: "ratio <= 0.60".to_owned(),
                met: Some(true),
            }],
            figures: Vec::new(),
            details: Vec::new(),
            bitmap_rounds: Vec::new(),
            hll_rounds: Vec::new(),
            geo_rounds: Vec::new(),
            not_measured: Vec::new(),
            notes: vec!["densekv not measured in geo: GEOADD refused".to_owned()],
            failures: Vec::new(),
        };
        let md = markdown_section(&report);
        assert!(md.starts_with(SECTION_HEADING));
        assert!(md.contains("cargo run --release -p bench -- types --rounds 5"));
        assert!(
            md.contains(
                "| geo: ΔVmRSS bytes/member | 40.000 | 100.000 | 0.40x | ratio <= 0.60 | yes |"
            ),
            "{md}"
        );
        assert!(md.contains("`hll:000000000099`"));
        assert!(md.contains("BYRADIUS 127 km ASC COUNT 10"));
        assert!(md.contains("- note: densekv not measured in geo"));
        let text = render(&report);
        assert!(text.contains("note: densekv not measured in geo"));
        assert!(!text.contains('|'), "stdout tables are plain text");
    }
}
