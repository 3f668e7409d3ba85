//! The types suite's results: every round's samples; per scenario and figure the median over
//! rounds of each server's figure and the median of the per-round ratios densekv / redis (the
//! evict suite's [`FigureRow`], through the scripting suite's [`rows`]); the summary lines with
//! densekv's targets (the persist suite's [`Headline`]); and the JSON document (`types.json`).
//!
//! The targets, all on the ratio densekv / redis:
//!
//! | scenario | figure | target |
//! |---|---|---|
//! | bitmap sparse, dense, growth | ΔVmRSS MiB | ≤ 1.00 |
//! | bitmap sparse, dense, growth | BITCOUNT calls/s | ≥ 1.00 |
//! | PFADD, -P 16 | requests/s | ≥ 1.00 |
//! | PFADD, -P 1 | requests/s | none (reference) |
//! | PFCOUNT 10 keys, -P 1 and -P 16 | requests/s | ≥ 1.00 |
//! | geo | ΔVmRSS bytes/member | ≤ 0.60 |
//! | geo | GEOSEARCH/s, 16 in flight and 1 in flight | ≥ 1.00 |
//!
//! Beside them the details (used_memory, load times, latencies, the checks' figures) and the
//! notes: where densekv's `used_memory` delta is more than 10 % from its VmRSS delta, and where
//! the two servers' GEOSEARCH replies differed. The text is in `types_markdown.rs`.

use serde::Serialize;

use crate::evict_report::{FigureRow, Pick};
use crate::machine::MachineInfo;
use crate::persist_report::Headline;
use crate::scripting_report::{Scenario, rows};
use crate::server_proc::ServerKind;
use crate::server_report::Versions;
use crate::stats::impl_sample;
use crate::types_bitmap::{BitmapBuild, BitmapResult};
use crate::types_geo::GeoResult;
use crate::types_hll::HllResult;

/// How far densekv's Δused_memory / ΔVmRSS may be from 1 before a note says so.
pub const ACCOUNTING_TOLERANCE: f64 = 0.10;
/// The geo scenario's memory target: densekv's bytes per member at most this × redis-server's.
pub const GEO_MEMORY_RATIO_MAX: f64 = 0.6;

/// The suite's parameters.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TypesConfig {
    pub quick: bool,
    pub rounds: usize,
    /// The least wait between a load and its second memory reading.
    pub settle_secs: f64,
    pub bitmap_bits: u64,
    pub sparse_offsets: u64,
    pub growth_step_bits: u64,
    pub dense_chunk_bytes: u64,
    pub bitcount_calls: usize,
    pub clients: u32,
    pub pfadd_keys: u64,
    pub pfadd_prefill_per_key: u64,
    /// The exact redis-benchmark commands (`P` for the port, `N` for the requests, `1|16`).
    pub pfadd_command: String,
    pub pfadd_requests_p1: u64,
    pub pfadd_requests_p16: u64,
    pub pfcount_keys: usize,
    pub pfcount_elements_per_key: u64,
    pub pfcount_command: String,
    pub pfcount_requests_p1: u64,
    pub pfcount_requests_p16: u64,
    pub geo_members: u64,
    pub geo_radius_km: u64,
    pub geo_queries: usize,
    pub geo_count: usize,
    pub geo_depth: usize,
}

/// One bitmap measurement of one server in one round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BitmapSample {
    pub server: ServerKind,
    pub round: usize,
    pub scenario: String,
    pub build: BitmapBuild,
    #[serde(flatten)]
    pub result: BitmapResult,
}

/// Which HyperLogLog command redis-benchmark sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HllCommand {
    Pfadd,
    Pfcount,
}

/// One PFADD or PFCOUNT measurement of one server in one round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HllSample {
    pub server: ServerKind,
    pub round: usize,
    pub scenario: String,
    pub command: HllCommand,
    pub pipeline: u32,
    #[serde(flatten)]
    pub result: HllResult,
}

/// One geo measurement of one server in one round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GeoSample {
    pub server: ServerKind,
    pub round: usize,
    pub scenario: String,
    #[serde(flatten)]
    pub result: GeoResult,
}

impl_sample!(BitmapSample, HllSample, GeoSample);

macro_rules! impl_scenario {
    ($($t:ty),*) => {$(
        impl Scenario for $t {
            fn scenario(&self) -> &str {
                &self.scenario
            }
        }
    )*};
}
impl_scenario!(BitmapSample, HllSample, GeoSample);

/// A scenario densekv (or redis-server) was not measured in, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotMeasured {
    pub server: ServerKind,
    pub scenario: String,
    pub reason: String,
}

/// Everything `types.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct TypesReport {
    pub suite: &'static str,
    pub command: String,
    pub machine: MachineInfo,
    pub versions: Versions,
    pub config: TypesConfig,
    /// The summary figures with densekv's targets.
    pub headlines: Vec<Headline>,
    pub figures: Vec<FigureRow>,
    pub details: Vec<FigureRow>,
    pub bitmap_rounds: Vec<BitmapSample>,
    pub hll_rounds: Vec<HllSample>,
    pub geo_rounds: Vec<GeoSample>,
    pub not_measured: Vec<NotMeasured>,
    pub notes: Vec<String>,
    pub failures: Vec<String>,
}

/// The name of a bitmap scenario.
pub fn bitmap_scenario(build: BitmapBuild) -> String {
    format!("bitmap {}", build.name())
}

/// The name of a PFADD or PFCOUNT scenario.
pub fn hll_scenario(command: HllCommand, pipeline: u32) -> String {
    match command {
        HllCommand::Pfadd => format!("PFADD, -P {pipeline}"),
        HllCommand::Pfcount => format!("PFCOUNT 10 keys, -P {pipeline}"),
    }
}

/// The name of the geo scenario.
pub const GEO_SCENARIO: &str = "geo";

const MIB: f64 = (1u64 << 20) as f64;

const BITMAP_RSS: &str = "ΔVmRSS MiB";
const BITCOUNT_RATE: &str = "BITCOUNT calls/s";
const HLL_RATE: &str = "requests/s";
const GEO_RSS: &str = "ΔVmRSS bytes/member";
const GEO_PIPELINED: &str = "GEOSEARCH/s, 16 in flight";
const GEO_SINGLE: &str = "GEOSEARCH/s, 1 in flight";
const USED_OVER_RSS: &str = "used_memory Δ / ΔVmRSS";

/// The summary rows: the figures the targets are about.
pub fn summary_rows(
    bitmap: &[BitmapSample],
    hll: &[HllSample],
    geo: &[GeoSample],
) -> Vec<FigureRow> {
    let mut out = rows(
        bitmap,
        &[
            (BITMAP_RSS, 2, |s| {
                Some(s.result.memory.rss_delta_bytes() / MIB)
            }),
            (BITCOUNT_RATE, 1, |s| s.result.bitcount_per_sec()),
        ],
    );
    out.extend(rows(hll, &[(HLL_RATE, 0, |s| Some(s.result.rps))]));
    let geo_figures: [(&str, usize, Pick<GeoSample>); 3] = [
        (GEO_RSS, 1, |s| Some(s.result.rss_per_member())),
        (GEO_PIPELINED, 0, |s| Some(s.result.pipelined_per_sec)),
        (GEO_SINGLE, 0, |s| Some(s.result.single_per_sec)),
    ];
    out.extend(rows(geo, &geo_figures));
    out
}

/// The detail rows.
pub fn detail_rows(
    bitmap: &[BitmapSample],
    hll: &[HllSample],
    geo: &[GeoSample],
) -> Vec<FigureRow> {
    let bitmap_figures: [(&str, usize, Pick<BitmapSample>); 6] = [
        ("used_memory Δ MiB", 2, |s| {
            Some(s.result.memory.used_delta_bytes()? / MIB)
        }),
        (USED_OVER_RSS, 3, |s| s.result.memory.used_over_rss()),
        ("load ms", 1, |s| Some(s.result.memory.load_secs * 1e3)),
        ("BITCOUNT ms, median call", 3, |s| {
            Some(s.result.bitcount_ms)
        }),
        ("BITCOUNT ms, slowest call", 3, |s| {
            Some(s.result.bitcount_max_ms)
        }),
        ("bits set (BITCOUNT)", 0, |s| Some(s.result.bits_set as f64)),
    ];
    let mut out = rows(bitmap, &bitmap_figures);
    let hll_figures: [(&str, usize, Pick<HllSample>); 7] = [
        ("server CPU µs per request", 3, |s| {
            s.result.server_cpu_us_per_request
        }),
        ("p50 ms", 3, |s| s.result.p50_ms),
        ("p99 ms", 3, |s| s.result.p99_ms),
        ("prefill s", 2, |s| Some(s.result.prefill_secs)),
        ("PFCOUNT after the prefill", 0, |s| {
            Some(s.result.count_after_prefill as f64)
        }),
        ("dense keys after the prefill", 0, |s| {
            s.result.dense_keys.map(|d| d as f64)
        }),
        ("keys after the run", 0, |s| {
            Some(s.result.keys_after as f64)
        }),
    ];
    out.extend(rows(hll, &hll_figures));
    let geo_figures: [(&str, usize, Pick<GeoSample>); 6] = [
        ("ΔVmRSS MiB", 1, |s| {
            Some(s.result.memory.rss_delta_bytes() / MIB)
        }),
        ("used_memory Δ bytes/member", 1, |s| {
            s.result.used_per_member()
        }),
        (USED_OVER_RSS, 3, |s| s.result.memory.used_over_rss()),
        ("GEOADD members/s", 0, |s| {
            Some(s.result.members as f64 / s.result.memory.load_secs)
        }),
        ("members within r (mean, 100 queries)", 1, |s| {
            Some(s.result.within_radius_mean)
        }),
        ("members per reply (mean)", 2, |s| {
            Some(s.result.results_mean)
        }),
    ];
    out.extend(rows(geo, &geo_figures));
    out
}

/// How a headline's target is judged.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    RatioAtMost(f64),
    RatioAtLeast(f64),
    /// Reported, not judged.
    Reference,
}

/// The target of a summary row.
fn target(row: &FigureRow) -> Target {
    match (row.scenario.as_str(), row.figure.as_str()) {
        (_, BITMAP_RSS) => Target::RatioAtMost(1.0),
        (_, GEO_RSS) => Target::RatioAtMost(GEO_MEMORY_RATIO_MAX),
        // The PFADD target is at -P 16; -P 1 is beside it for reference.
        (scenario, HLL_RATE) if scenario == hll_scenario(HllCommand::Pfadd, 1) => Target::Reference,
        _ => Target::RatioAtLeast(1.0),
    }
}

/// One summary line per summary row, with its target, judged on the ratio as the tables print
/// it (two decimals): a ratio of 1.003 shows as 1.00x and meets `<= 1.00`, since a difference
/// of 0.3 % is below what one reading of two servers resolves, and a table reading "1.00x, NO"
/// would only puzzle its reader.
pub fn headlines(rows: &[FigureRow]) -> Vec<Headline> {
    rows.iter()
        .map(|row| {
            let shown = row.ratio.map(|r| (r * 100.0).round() / 100.0);
            let (text, met) = match target(row) {
                Target::RatioAtMost(t) => (format!("ratio <= {t:.2}"), shown.map(|r| r <= t)),
                Target::RatioAtLeast(t) => (format!("ratio >= {t:.2}"), shown.map(|r| r >= t)),
                Target::Reference => ("none (reference)".to_owned(), None),
            };
            Headline {
                figure: format!("{}: {}", row.scenario, row.figure),
                densekv: row.densekv,
                redis: row.redis,
                ratio: row.ratio,
                target: text,
                met,
            }
        })
        .collect()
}

/// A note for every scenario where densekv's Δused_memory / ΔVmRSS (median over rounds) is more
/// than [`ACCOUNTING_TOLERANCE`] from 1, or where densekv reports no `used_memory`.
pub fn accounting_notes(details: &[FigureRow], measured: &[(String, bool)]) -> Vec<String> {
    let mut notes = Vec::new();
    for (scenario, has_densekv) in measured {
        if !has_densekv {
            continue;
        }
        let ratio = details
            .iter()
            .find(|r| &r.scenario == scenario && r.figure == USED_OVER_RSS)
            .and_then(|r| r.densekv);
        match ratio {
            None => notes.push(format!(
                "{scenario}: densekv reported no used_memory delta to check against its VmRSS \
                 delta"
            )),
            Some(r) if (r - 1.0).abs() > ACCOUNTING_TOLERANCE => notes.push(format!(
                "{scenario}: densekv's used_memory delta is {r:.3}x its VmRSS delta, outside \
                 the ±{:.0} % its accounting should hold",
                ACCOUNTING_TOLERANCE * 100.0
            )),
            Some(_) => {}
        }
    }
    notes
}

/// A note for each server that did not answer `MEMORY PURGE` with +OK: its memory figures were
/// read without the purge (`types_driver.rs`), so they may include freed memory not yet returned.
pub fn purge_notes(bitmap: &[BitmapSample], geo: &[GeoSample]) -> Vec<String> {
    let unpurged = |kind: ServerKind| {
        bitmap
            .iter()
            .filter(|s| s.server == kind)
            .map(|s| s.result.memory.purged)
            .chain(
                geo.iter()
                    .filter(|s| s.server == kind)
                    .map(|s| s.result.memory.purged),
            )
            .any(|purged| !purged)
    };
    ServerKind::BOTH
        .into_iter()
        .filter(|&kind| unpurged(kind))
        .map(|kind| {
            format!(
                "{} did not answer MEMORY PURGE with +OK: its memory was read after the settle                  alone, and may include freed memory its allocator had not yet returned",
                kind.name()
            )
        })
        .collect()
}

/// A note for every round whose two servers answered the GEOSEARCH queries differently.
pub fn geo_notes(geo: &[GeoSample]) -> Vec<String> {
    let mut notes = Vec::new();
    for d in geo.iter().filter(|s| s.server == ServerKind::Densekv) {
        let peer = geo
            .iter()
            .find(|r| r.server == ServerKind::Redis && r.round == d.round);
        if let Some(r) = peer
            && r.result.digest != d.result.digest
        {
            notes.push(format!(
                "geo round {}: densekv's GEOSEARCH replies differ from redis-server's (digest \
                 {} against {}; members per reply {:.2} against {:.2})",
                d.round,
                d.result.digest,
                r.result.digest,
                d.result.results_mean,
                r.result.results_mean
            ));
        }
    }
    notes
}

#[cfg(test)]
// The expected figures are small integers and halves, exact in binary floating point.
#[allow(clippy::float_cmp)]
mod tests {
    use super::{
        BitmapSample, GEO_SCENARIO, GeoSample, HllCommand, HllSample, accounting_notes,
        bitmap_scenario, detail_rows, geo_notes, headlines, hll_scenario, purge_notes,
        summary_rows,
    };
    use crate::server_proc::ServerKind;
    use crate::types_bitmap::{BitmapBuild, BitmapResult};
    use crate::types_driver::MemoryDelta;
    use crate::types_geo::GeoResult;
    use crate::types_hll::HllResult;

    fn memory(rss_delta_mib: u64, used_delta_mib: Option<u64>) -> MemoryDelta {
        MemoryDelta {
            rss_before_bytes: 8 << 20,
            rss_after_bytes: (8 + rss_delta_mib) << 20,
            used_memory_before_bytes: Some(1 << 20),
            used_memory_after_bytes: used_delta_mib.map(|u| (1 + u) << 20),
            load_secs: 0.5,
            purged: true,
        }
    }

    fn bitmap(server: ServerKind, round: usize, mib: u64, bitcount_ms: f64) -> BitmapSample {
        BitmapSample {
            server,
            round,
            scenario: bitmap_scenario(BitmapBuild::Sparse),
            build: BitmapBuild::Sparse,
            result: BitmapResult {
                commands: 100_001,
                memory: memory(mib, Some(mib)),
                strlen_bytes: Some(12_500_000),
                bits_set: 99_950,
                bitcount_calls: 200,
                bitcount_ms,
                bitcount_max_ms: bitcount_ms * 2.0,
            },
        }
    }

    fn hll(server: ServerKind, (command, pipeline): (HllCommand, u32), rps: f64) -> HllSample {
        HllSample {
            server,
            round: 1,
            scenario: hll_scenario(command, pipeline),
            command,
            pipeline,
            result: HllResult {
                requests: 1000,
                rps,
                avg_ms: None,
                p50_ms: Some(1.0),
                p99_ms: None,
                server_cpu_us_per_request: Some(0.5),
                prefill_secs: 1.0,
                count_after_prefill: 20_000,
                dense_keys: None,
                keys_after: 100,
            },
        }
    }

    fn geo(server: ServerKind, rss_delta_mib: u64, used: Option<u64>, digest: &str) -> GeoSample {
        GeoSample {
            server,
            round: 1,
            scenario: GEO_SCENARIO.to_owned(),
            result: GeoResult {
                members: 1 << 20,
                radius_km: 127,
                memory: memory(rss_delta_mib, used),
                queries: 100,
                pipelined_per_sec: 100.0,
                single_per_sec: 50.0,
                results_mean: 10.0,
                within_radius_mean: 99.0,
                digest: digest.to_owned(),
            },
        }
    }

    #[test]
    fn summary_rows_carry_their_targets() {
        let (d, r) = (ServerKind::Densekv, ServerKind::Redis);
        let bitmaps = [bitmap(d, 1, 6, 1.0), bitmap(r, 1, 12, 2.0)];
        let hlls = [
            hll(d, (HllCommand::Pfadd, 1), 100.0),
            hll(r, (HllCommand::Pfadd, 1), 200.0),
            hll(d, (HllCommand::Pfadd, 16), 100.0),
            hll(r, (HllCommand::Pfadd, 16), 200.0),
            hll(d, (HllCommand::Pfcount, 16), 100.0),
            hll(r, (HllCommand::Pfcount, 16), 50.0),
        ];
        let geos = [geo(d, 50, Some(50), "a"), geo(r, 100, Some(90), "a")];
        let rows = summary_rows(&bitmaps, &hlls, &geos);
        let lines = headlines(&rows);
        let line = |figure: &str| lines.iter().find(|l| l.figure == figure).unwrap();
        let rss = line("bitmap sparse: ΔVmRSS MiB");
        assert_eq!(
            (rss.densekv, rss.ratio, rss.met),
            (Some(6.0), Some(0.5), Some(true))
        );
        let bitcount = line("bitmap sparse: BITCOUNT calls/s");
        assert_eq!((bitcount.densekv, bitcount.met), (Some(1000.0), Some(true)));
        let pfadd = line("PFADD, -P 1: requests/s");
        assert_eq!(
            (pfadd.met, pfadd.target.as_str()),
            (None, "none (reference)")
        );
        let pfadd = line("PFADD, -P 16: requests/s");
        assert_eq!(
            (pfadd.met, pfadd.target.as_str()),
            (Some(false), "ratio >= 1.00")
        );
        assert_eq!(line("PFCOUNT 10 keys, -P 16: requests/s").met, Some(true));
        let geo_rss = line("geo: ΔVmRSS bytes/member");
        assert_eq!((geo_rss.densekv, geo_rss.ratio), (Some(50.0), Some(0.5)));
        assert_eq!(geo_rss.met, Some(true));
        assert_eq!(line("geo: GEOSEARCH/s, 1 in flight").met, Some(true));
    }

    #[test]
    fn notes_on_accounting_and_differing_replies() {
        let (d, r) = (ServerKind::Densekv, ServerKind::Redis);
        let geos = [geo(d, 100, Some(80), "a"), geo(r, 100, Some(90), "b")];
        let details = detail_rows(&[], &[], &geos);
        let measured = [(super::GEO_SCENARIO.to_owned(), true)];
        let notes = accounting_notes(&details, &measured);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("0.800x its VmRSS delta"), "{}", notes[0]);
        let same = [geo(d, 100, Some(95), "a"), geo(r, 100, Some(90), "b")];
        assert!(accounting_notes(&detail_rows(&[], &[], &same), &measured).is_empty());
        let unreported = [geo(d, 100, None, "a")];
        let notes = accounting_notes(&detail_rows(&[], &[], &unreported), &measured);
        assert!(notes[0].contains("no used_memory delta"), "{}", notes[0]);
        assert_eq!(geo_notes(&geos).len(), 1);
        assert!(geo_notes(&same[..1]).is_empty());
        assert!(purge_notes(&[], &geos).is_empty());
        let mut unpurged = geo(d, 100, Some(95), "a");
        unpurged.result.memory.purged = false;
        let notes = purge_notes(&[], &[unpurged, geo(r, 100, Some(90), "a")]);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with("densekv did not answer MEMORY PURGE"),
            "{}",
            notes[0]
        );
    }
}
