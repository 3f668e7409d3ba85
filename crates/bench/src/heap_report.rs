//! Turns the children's reports into the heap suite's three tables and its JSON document.
//!
//! * **Allocators** (workload × allocator): median ns/op over the rounds of all passes, their
//!   spread `(max - min) / median`, peak RSS (`VmHWM` of the child), `RSS/live` (the child's
//!   resident bytes above its baseline at the sample point, per live requested byte: 1.00 would be
//!   a perfectly dense allocator), minor page faults per op in the timed rounds (memory handed
//!   back to the OS and faulted in again), and time and peak-RSS ratios against mimalloc measured
//!   in the same run (the time ratio paired by pass, see [`paired_time_ratio`]).
//! * **Descriptors**: the census time per descriptor for `Heap<32>` and `Heap<64>`, the resident
//!   bytes the descriptors cost, cache misses where `perf` counts them, and the 32/64 ratio.
//! * **Accounting**: densekv's `stats().resident_bytes` against the child's `VmRSS` at the same
//!   moment. The issue asks for agreement within 10%. The check uses the resident bytes *above the
//!   child's baseline* (`VmRSS` before the heap's first request): the baseline is the harness's
//!   own binary, stack and slot table, which no allocator can know about and which would
//!   otherwise decide the outcome on the small-footprint loops. The raw ratio is printed too.

use std::fmt::Write as _;

use serde::Serialize;

use crate::alloc::AllocatorId;
use crate::child::ChildReport;
use crate::machine::MachineInfo;
use crate::stats::{median, ratio, spread};
use crate::workload::{Sizes, Workload};

const MIB: f64 = 1024.0 * 1024.0;
/// The bound on |resident estimate / measured resident - 1|.
pub const ACCOUNTING_TOLERANCE: f64 = 0.10;

/// One line of the allocator table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllocRow {
    pub workload: Workload,
    pub allocator: AllocatorId,
    pub median_ns_per_op: f64,
    pub spread: Option<f64>,
    pub peak_rss_mib: f64,
    pub rss_per_live_byte: Option<f64>,
    /// Minor page faults per op in the timed rounds.
    pub faults_per_op: Option<f64>,
    pub time_vs_mimalloc: Option<f64>,
    pub rss_vs_mimalloc: Option<f64>,
    pub build_ns_per_op: Option<f64>,
}

/// One line of the descriptor table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DescriptorRow {
    pub allocator: AllocatorId,
    pub descriptor_bytes: usize,
    pub blocks: u64,
    pub median_ns_per_descriptor: f64,
    pub median_census_ms: f64,
    pub build_ns_per_block: Option<f64>,
    /// Resident bytes above the baseline after the build: the descriptors' pages.
    pub resident_mib: f64,
    pub cache_misses_per_census: Option<f64>,
    pub time_vs_64: Option<f64>,
}

/// One line of the accounting check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccountingRow {
    pub workload: Workload,
    pub allocator: AllocatorId,
    pub heap_resident_mib: f64,
    pub vm_rss_mib: f64,
    pub baseline_mib: f64,
    /// `resident_bytes / (VmRSS - baseline)`: the checked ratio.
    pub ratio_vs_rss_above_baseline: Option<f64>,
    /// `resident_bytes / VmRSS`, for reference.
    pub ratio_vs_rss: Option<f64>,
    /// `measure_resident_bytes()` (mincore) and its ratio to `VmRSS - baseline`.
    pub heap_measured_mib: Option<f64>,
    pub measured_ratio_vs_rss_above_baseline: Option<f64>,
    /// The estimate is within tolerance.
    pub within_tolerance: bool,
    /// The measured figure is within tolerance (the fallback for workloads that allocate memory
    /// they never touch, where any allocator's page-level estimate overshoots).
    pub measured_within_tolerance: bool,
}

/// A child that did not produce a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    pub workload: Workload,
    pub allocator: AllocatorId,
    pub error: String,
}

/// Everything `bench-results/heap.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct HeapSuiteReport {
    pub suite: &'static str,
    pub command: String,
    pub machine: MachineInfo,
    pub sizes: Sizes,
    /// How the descriptor scan's cache behaviour was measured.
    pub descriptor_metric: String,
    pub allocators: Vec<AllocRow>,
    pub descriptors: Vec<DescriptorRow>,
    pub accounting: Vec<AccountingRow>,
    pub failures: Vec<Failure>,
    /// The children's raw reports, every round's timing included.
    pub raw: Vec<ChildReport>,
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB
}

/// Merges the `(pass, report)`s of one (allocator, workload) pair into one report, in the order
/// pairs first appear: the rounds of all passes are concatenated (the reported median is taken
/// over all of them), each pass's own median is kept for the paired ratios, the peak RSS is the
/// highest pass's, and the accounting sample is the first pass's (the workloads are
/// deterministic, so the samples agree to a page or two).
pub fn merge_passes(reports: Vec<(usize, ChildReport)>) -> Vec<ChildReport> {
    let mut merged: Vec<ChildReport> = Vec::new();
    for (pass, mut report) in reports {
        if let Some(pass_median) = median(&report.ns_per_op) {
            report.pass_medians = vec![(pass, pass_median)];
        }
        match merged
            .iter_mut()
            .find(|m| m.allocator == report.allocator && m.workload == report.workload)
        {
            Some(m) => {
                m.rounds += report.rounds;
                m.ns_per_op.extend(report.ns_per_op);
                m.peak_rss_bytes = m.peak_rss_bytes.max(report.peak_rss_bytes);
                m.timed_minor_faults += report.timed_minor_faults;
                m.pass_medians.extend(report.pass_medians);
            }
            None => merged.push(report),
        }
    }
    merged
}

/// Medians of the per-pass cache-miss counts of each allocator.
pub fn merge_misses(misses: &[(AllocatorId, f64)]) -> Vec<(AllocatorId, f64)> {
    let mut ids: Vec<AllocatorId> = Vec::new();
    for &(id, _) in misses {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids.into_iter()
        .filter_map(|id| {
            let counts: Vec<f64> = misses.iter().filter(|m| m.0 == id).map(|m| m.1).collect();
            median(&counts).map(|m| (id, m))
        })
        .collect()
}

/// The time ratio of `report` against `peer`, paired by pass: the median over the passes both
/// completed of (own median in that pass / peer's median in that pass). A noisy neighbour shifts
/// whole passes (all allocators of a pass together, by up to 1.7× on the development machine),
/// so pairing cancels what a ratio of overall medians would keep. Reports without pass medians
/// (not merged) fall back to the ratio of overall medians.
pub fn paired_time_ratio(report: &ChildReport, peer: &ChildReport) -> Option<f64> {
    if report.pass_medians.is_empty() || peer.pass_medians.is_empty() {
        return ratio(median(&report.ns_per_op)?, median(&peer.ns_per_op));
    }
    let ratios: Vec<f64> = report
        .pass_medians
        .iter()
        .filter_map(|&(pass, own)| {
            let theirs = peer.pass_medians.iter().find(|p| p.0 == pass)?.1;
            ratio(own, Some(theirs))
        })
        .collect();
    median(&ratios)
}

/// The allocator table, in the order the reports came in, with ratios against mimalloc's row
/// of the same workload.
pub fn alloc_rows(reports: &[ChildReport]) -> Vec<AllocRow> {
    let compared = || {
        reports
            .iter()
            .filter(|r| r.workload != Workload::Descriptors)
    };
    let peer = |workload: Workload| {
        compared().find(|r| r.workload == workload && r.allocator == AllocatorId::PEER)
    };
    compared()
        .filter_map(|r| {
            let median_ns = median(&r.ns_per_op)?;
            let peer = peer(r.workload);
            let rss_above = r.sample_rss_bytes.saturating_sub(r.baseline_rss_bytes);
            Some(AllocRow {
                workload: r.workload,
                allocator: r.allocator,
                median_ns_per_op: median_ns,
                spread: spread(&r.ns_per_op),
                peak_rss_mib: mib(r.peak_rss_bytes),
                rss_per_live_byte: ratio(rss_above as f64, Some(r.live_requested_bytes as f64)),
                faults_per_op: ratio(
                    r.timed_minor_faults as f64,
                    Some((r.ops_per_round * r.rounds as u64) as f64),
                ),
                time_vs_mimalloc: peer.and_then(|p| paired_time_ratio(r, p)),
                rss_vs_mimalloc: ratio(
                    r.peak_rss_bytes as f64,
                    peer.map(|p| p.peak_rss_bytes as f64),
                ),
                build_ns_per_op: r.build_ns_per_op,
            })
        })
        .collect()
}

/// The descriptor table; `cache_misses` pairs an allocator with its misses per census call.
pub fn descriptor_rows(
    reports: &[ChildReport],
    cache_misses: &[(AllocatorId, f64)],
) -> Vec<DescriptorRow> {
    let scans: Vec<&ChildReport> = reports
        .iter()
        .filter(|r| r.workload == Workload::Descriptors)
        .collect();
    let padded = scans
        .iter()
        .find(|r| r.allocator == AllocatorId::Densekv64)
        .and_then(|r| median(&r.ns_per_op));
    scans
        .iter()
        .filter_map(|r| {
            let median_ns = median(&r.ns_per_op)?;
            let blocks = r.live_requested_bytes / heap::BLOCK_BYTES as u64;
            let census_count = (r.ops_per_round / blocks.max(1)).max(1);
            Some(DescriptorRow {
                allocator: r.allocator,
                descriptor_bytes: if r.allocator == AllocatorId::Densekv64 {
                    64
                } else {
                    32
                },
                blocks,
                median_ns_per_descriptor: median_ns,
                median_census_ms: median_ns * (r.ops_per_round / census_count) as f64 / 1e6,
                build_ns_per_block: r.build_ns_per_op,
                resident_mib: mib(r.sample_rss_bytes.saturating_sub(r.baseline_rss_bytes)),
                cache_misses_per_census: cache_misses
                    .iter()
                    .find(|(id, _)| *id == r.allocator)
                    .map(|&(_, misses)| misses),
                time_vs_64: ratio(median_ns, padded),
            })
        })
        .collect()
}

/// The accounting check for every report that carries the heap's own resident estimate.
pub fn accounting_rows(reports: &[ChildReport]) -> Vec<AccountingRow> {
    reports
        .iter()
        .filter_map(|r| {
            let resident = r.allocator_resident_bytes? as f64;
            let above = r.sample_rss_bytes.saturating_sub(r.baseline_rss_bytes) as f64;
            let checked = ratio(resident, Some(above));
            Some(AccountingRow {
                workload: r.workload,
                allocator: r.allocator,
                heap_resident_mib: resident / MIB,
                vm_rss_mib: mib(r.sample_rss_bytes),
                baseline_mib: mib(r.baseline_rss_bytes),
                ratio_vs_rss_above_baseline: checked,
                ratio_vs_rss: ratio(resident, Some(r.sample_rss_bytes as f64)),
                within_tolerance: checked.is_some_and(|c| (c - 1.0).abs() <= ACCOUNTING_TOLERANCE),
                heap_measured_mib: r.allocator_measured_bytes.map(|m| m as f64 / MIB),
                measured_ratio_vs_rss_above_baseline: r
                    .allocator_measured_bytes
                    .and_then(|m| ratio(m as f64, Some(above))),
                measured_within_tolerance: r
                    .allocator_measured_bytes
                    .and_then(|m| ratio(m as f64, Some(above)))
                    .is_some_and(|c| (c - 1.0).abs() <= ACCOUNTING_TOLERANCE),
            })
        })
        .collect()
}

fn opt(value: Option<f64>, precision: usize, suffix: &str) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.precision$}{suffix}"))
}

/// The three tables and any failures, as printed at the end of a run.
pub fn render(report: &HeapSuiteReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nheap suite: medians of {} passes × {} rounds; ratios are against mimalloc in this run \
         (time: median of per-pass ratios; spread: (max - min) / median of all rounds)\n",
        report.sizes.passes, report.sizes.rounds
    );
    write_alloc_table(&mut out, &report.allocators);
    if !report.descriptors.is_empty() {
        write_descriptor_table(&mut out, &report.descriptor_metric, &report.descriptors);
    }
    if !report.accounting.is_empty() {
        write_accounting_table(&mut out, &report.accounting);
    }
    for failure in &report.failures {
        let _ = writeln!(
            out,
            "\nFAILED {} × {}: {}",
            failure.workload.name(),
            failure.allocator.name(),
            failure.error
        );
    }
    out
}

/// Appends the allocator table (header and one line per row) to `out`.
fn write_alloc_table(out: &mut String, rows: &[AllocRow]) {
    let _ = writeln!(
        out,
        "{:<8} {:<10} {:>12} {:>7} {:>13} {:>9} {:>10} {:>12} {:>11} {:>10}",
        "workload",
        "allocator",
        "ns/op",
        "spread",
        "peak RSS MiB",
        "RSS/live",
        "faults/op",
        "time vs mi",
        "RSS vs mi",
        "build ns"
    );
    for row in rows {
        let _ = writeln!(
            out,
            "{:<8} {:<10} {:>12.1} {:>7} {:>13.1} {:>9} {:>10} {:>12} {:>11} {:>10}",
            row.workload.name(),
            row.allocator.name(),
            row.median_ns_per_op,
            opt(row.spread.map(|s| s * 100.0), 0, "%"),
            row.peak_rss_mib,
            opt(row.rss_per_live_byte, 2, ""),
            opt(row.faults_per_op, 2, ""),
            opt(row.time_vs_mimalloc, 2, "x"),
            opt(row.rss_vs_mimalloc, 2, "x"),
            opt(row.build_ns_per_op, 1, ""),
        );
    }
}

/// Appends the descriptor-scan table, titled with how its cache misses were measured, to `out`.
fn write_descriptor_table(out: &mut String, metric: &str, rows: &[DescriptorRow]) {
    let _ = writeln!(out, "\ndescriptor scan (census): {metric}");
    let _ = writeln!(
        out,
        "{:<11} {:>9} {:>8} {:>10} {:>10} {:>12} {:>13} {:>13} {:>9}",
        "allocator",
        "desc B",
        "blocks",
        "ns/desc",
        "census ms",
        "build ns/blk",
        "desc RSS MiB",
        "misses/census",
        "vs 64 B"
    );
    for row in rows {
        let _ = writeln!(
            out,
            "{:<11} {:>9} {:>8} {:>10.3} {:>10.2} {:>12} {:>13.1} {:>13} {:>9}",
            row.allocator.name(),
            row.descriptor_bytes,
            row.blocks,
            row.median_ns_per_descriptor,
            row.median_census_ms,
            opt(row.build_ns_per_block, 1, ""),
            row.resident_mib,
            opt(row.cache_misses_per_census, 0, ""),
            opt(row.time_vs_64, 2, "x"),
        );
    }
}

/// Appends the accounting table (estimate and mincore figure against `VmRSS`) to `out`.
fn write_accounting_table(out: &mut String, rows: &[AccountingRow]) {
    let _ = writeln!(
        out,
        "\naccounting: heap stats().resident_bytes vs VmRSS at the same moment \
         (checked: vs VmRSS above the child's baseline, within {:.0}%)",
        ACCOUNTING_TOLERANCE * 100.0
    );
    let _ = writeln!(
        out,
        "{:<12} {:<11} {:>13} {:>10} {:>12} {:>14} {:>12} {:>6} {:>13} {:>14} {:>6}",
        "workload",
        "allocator",
        "resident MiB",
        "VmRSS MiB",
        "baseline MiB",
        "res/(RSS-base)",
        "res/VmRSS",
        "ok",
        "mincore MiB",
        "mc/(RSS-base)",
        "ok"
    );
    for row in rows {
        let _ = writeln!(
            out,
            "{:<12} {:<11} {:>13.1} {:>10.1} {:>12.1} {:>14} {:>12} {:>6} {:>13} {:>14} {:>6}",
            row.workload.name(),
            row.allocator.name(),
            row.heap_resident_mib,
            row.vm_rss_mib,
            row.baseline_mib,
            opt(row.ratio_vs_rss_above_baseline, 3, ""),
            opt(row.ratio_vs_rss, 3, ""),
            if row.within_tolerance { "yes" } else { "NO" },
            opt(row.heap_measured_mib, 1, ""),
            opt(row.measured_ratio_vs_rss_above_baseline, 3, ""),
            if row.measured_within_tolerance {
                "yes"
            } else {
                "NO"
            },
        );
    }
}

#[cfg(test)]
// The expected values are built from small integers and halves, exact in binary floating point.
#[allow(clippy::float_cmp)]
mod tests {
    use super::{accounting_rows, alloc_rows, descriptor_rows, merge_misses, merge_passes};
    use crate::alloc::AllocatorId;
    use crate::child::ChildReport;
    use crate::workload::Workload;

    fn report(
        allocator: AllocatorId,
        workload: Workload,
        ns: &[f64],
        peak_mib: u64,
    ) -> ChildReport {
        ChildReport {
            allocator,
            workload,
            rounds: ns.len(),
            ops_per_round: 100,
            ns_per_op: ns.to_vec(),
            build_ns_per_op: None,
            peak_rss_bytes: peak_mib << 20,
            rss_bytes: 4 << 20,
            baseline_rss_bytes: 4 << 20,
            sample_rss_bytes: 12 << 20,
            allocator_resident_bytes: None,
            allocator_measured_bytes: None,
            live_requested_bytes: 8 << 20,
            timed_minor_faults: 0,
            pass_medians: Vec::new(),
        }
    }

    #[test]
    fn ratios_are_against_mimalloc_of_the_same_workload() {
        let reports = vec![
            report(
                AllocatorId::Densekv,
                Workload::Json,
                &[30.0, 20.0, 900.0],
                30,
            ),
            report(
                AllocatorId::Mimalloc,
                Workload::Json,
                &[10.0, 11.0, 9.0],
                20,
            ),
            report(AllocatorId::Mimalloc, Workload::Vm, &[1.0], 99),
        ];
        let rows = alloc_rows(&reports);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].median_ns_per_op, 30.0);
        assert_eq!(rows[0].time_vs_mimalloc, Some(3.0));
        assert_eq!(rows[0].rss_vs_mimalloc, Some(1.5));
        assert_eq!(rows[0].rss_per_live_byte, Some(1.0));
        assert_eq!(rows[1].time_vs_mimalloc, Some(1.0));
    }

    #[test]
    fn passes_merge_per_pair() {
        let reports = vec![
            (
                1,
                report(AllocatorId::Densekv, Workload::Json, &[1.0, 2.0], 30),
            ),
            (1, report(AllocatorId::Mimalloc, Workload::Json, &[3.0], 20)),
            (2, report(AllocatorId::Densekv, Workload::Json, &[5.0], 40)),
            (2, report(AllocatorId::Mimalloc, Workload::Json, &[4.0], 10)),
        ];
        let merged = merge_passes(reports);
        assert_eq!(merged[0].pass_medians, [(1, 1.5), (2, 5.0)]);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].ns_per_op, [1.0, 2.0, 5.0]);
        assert_eq!(merged[0].rounds, 3);
        assert_eq!(merged[0].peak_rss_bytes, 40 << 20);
        assert_eq!(merged[1].ns_per_op, [3.0, 4.0]);
        assert_eq!(merged[1].peak_rss_bytes, 20 << 20);
        let misses = merge_misses(&[
            (AllocatorId::Densekv, 10.0),
            (AllocatorId::Densekv64, 1.0),
            (AllocatorId::Densekv, 30.0),
            (AllocatorId::Densekv64, 3.0),
            (AllocatorId::Densekv, 20.0),
        ]);
        assert_eq!(
            misses,
            [(AllocatorId::Densekv, 20.0), (AllocatorId::Densekv64, 2.0)]
        );
    }

    #[test]
    fn rendered_rows_line_up_with_their_headers() {
        let raw = vec![
            report(AllocatorId::Densekv, Workload::Json, &[30.0], 30),
            report(AllocatorId::Mimalloc, Workload::Json, &[10.0], 20),
        ];
        let text = super::render(&super::HeapSuiteReport {
            suite: "heap",
            command: "bench heap".to_owned(),
            machine: crate::machine::MachineInfo::read(),
            sizes: crate::workload::Sizes::QUICK,
            descriptor_metric: "time".to_owned(),
            allocators: alloc_rows(&raw),
            descriptors: Vec::new(),
            accounting: Vec::new(),
            failures: Vec::new(),
            raw,
        });
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("json") || l.starts_with("workload"))
            .collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines
                .iter()
                .all(|l| l.chars().count() == lines[0].chars().count()),
            "{text}"
        );
        assert!(
            lines[1].contains("3.00x") && lines[2].contains("1.00x"),
            "{text}"
        );
    }

    #[test]
    fn time_ratio_pairs_passes() {
        // Pass 2 ran 2× slower for everyone; pass 3 of the peer failed.
        let reports = vec![
            (1, report(AllocatorId::Densekv, Workload::Vm, &[11.0], 1)),
            (1, report(AllocatorId::Mimalloc, Workload::Vm, &[10.0], 1)),
            (2, report(AllocatorId::Densekv, Workload::Vm, &[22.0], 1)),
            (2, report(AllocatorId::Mimalloc, Workload::Vm, &[20.0], 1)),
            (3, report(AllocatorId::Densekv, Workload::Vm, &[99.0], 1)),
            (4, report(AllocatorId::Densekv, Workload::Vm, &[12.0], 1)),
            (4, report(AllocatorId::Mimalloc, Workload::Vm, &[10.0], 1)),
        ];
        let rows = alloc_rows(&merge_passes(reports));
        let ratio = rows[0].time_vs_mimalloc.unwrap();
        assert!((ratio - 1.1).abs() < 1e-9, "{ratio}");
        assert_eq!(rows[1].time_vs_mimalloc, Some(1.0));
    }

    #[test]
    fn no_peer_means_no_ratio() {
        let rows = alloc_rows(&[report(AllocatorId::System, Workload::Small, &[5.0], 10)]);
        assert_eq!(rows[0].time_vs_mimalloc, None);
        assert_eq!(rows[0].rss_vs_mimalloc, None);
    }

    #[test]
    fn accounting_checks_resident_above_baseline() {
        let mut good = report(AllocatorId::Densekv, Workload::Small, &[1.0], 10);
        good.allocator_resident_bytes = Some(8 << 20); // 12 - 4 MiB above baseline
        let mut bad = report(AllocatorId::Densekv, Workload::Vm, &[1.0], 10);
        bad.allocator_resident_bytes = Some(6 << 20);
        let peer = report(AllocatorId::Mimalloc, Workload::Vm, &[1.0], 10);
        let rows = accounting_rows(&[good, bad, peer]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].ratio_vs_rss_above_baseline, Some(1.0));
        assert!(rows[0].within_tolerance);
        assert_eq!(rows[1].ratio_vs_rss_above_baseline, Some(0.75));
        assert!(!rows[1].within_tolerance);
    }

    #[test]
    fn descriptor_rows_compare_against_the_padded_layout() {
        let blocks = 1000u64;
        let mut dense = report(AllocatorId::Densekv, Workload::Descriptors, &[2.0], 10);
        let mut padded = report(AllocatorId::Densekv64, Workload::Descriptors, &[4.0], 10);
        for r in [&mut dense, &mut padded] {
            r.live_requested_bytes = blocks * heap::BLOCK_BYTES as u64;
            r.ops_per_round = blocks * 5; // five census calls per round
        }
        let rows = descriptor_rows(&[dense, padded], &[(AllocatorId::Densekv, 123.0)]);
        assert_eq!(rows[0].blocks, blocks);
        assert_eq!(rows[0].descriptor_bytes, 32);
        assert_eq!(rows[1].descriptor_bytes, 64);
        assert_eq!(rows[0].time_vs_64, Some(0.5));
        assert!((rows[0].median_census_ms - 0.002).abs() < 1e-12);
        assert_eq!(rows[0].cache_misses_per_census, Some(123.0));
        assert_eq!(rows[1].cache_misses_per_census, None);
    }
}
