//! `bench heap`: runs every (allocator, workload) pair of the heap suite in its own child
//! process, one after another, then prints the tables and writes `bench-results/heap.json`.
//!
//! Children run sequentially: on a two-core machine two children would compete for cores and
//! memory bandwidth and skew each other. Within a pass the order is workload-major (all
//! allocators of `json`, then of `mir`, ...), so the runs compared by a ratio are close together
//! in time; and the suite makes several passes (default 5), so a slow minute of a noisy
//! neighbour lands on one child of a pair, not on all of its rounds. A pair's reports from all
//! passes are merged (`heap_report::merge_passes`) before medians are taken.
//!
//! The descriptor scan runs under `perf stat -e cache-misses` when this machine counts that event
//! (checked once with `perf stat -e cache-misses true`); the scan's own misses are the difference
//! between a run with the census and a run that only builds the heap. Where the event is
//! `<not supported>` (virtual machines, including the development machine) the scan is compared
//! by time alone, and the output says so.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;

use crate::alloc::AllocatorId;
use crate::child::{ChildArgs, ChildReport, parse_report};
use crate::heap_report::{
    Failure, HeapSuiteReport, accounting_rows, alloc_rows, descriptor_rows, merge_misses,
    merge_passes, render,
};
use crate::machine::{self, MachineInfo};
use crate::workload::{Sizes, Workload};

/// Arguments of `bench heap`.
#[derive(Debug, Clone, Default, Args)]
pub struct HeapArgs {
    /// A tiny smoke version of every workload (seconds, not minutes); used by the tests.
    #[arg(long)]
    pub quick: bool,
    /// Timed rounds per child process [default: 5, quick: 3].
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Passes over the whole suite, one child per (allocator, workload) in each; the median is
    /// taken over the rounds of all passes [default: 5, quick: 1].
    #[arg(long)]
    pub passes: Option<usize>,
    /// Only these workloads, comma-separated [default: all].
    #[arg(long = "workload", value_enum, value_delimiter = ',')]
    pub workloads: Vec<Workload>,
    /// Only these allocators, comma-separated [default: densekv, mimalloc, jemalloc, system].
    #[arg(long = "alloc", value_enum, value_delimiter = ',')]
    pub allocators: Vec<AllocatorId>,
    /// Directory for `heap.json` [default: `bench-results/` in the workspace root].
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// A child still running after this many seconds is killed and reported as failed.
    #[arg(long, default_value_t = 600)]
    pub child_timeout_secs: u64,
}

impl HeapArgs {
    /// The children to run, in order.
    pub fn jobs(&self) -> Vec<ChildArgs> {
        let wants_workload = |w: Workload| self.workloads.is_empty() || self.workloads.contains(&w);
        let wants_allocator =
            |a: AllocatorId| self.allocators.is_empty() || self.allocators.contains(&a);
        let job = |workload, allocator| ChildArgs {
            allocator,
            workload,
            rounds: self.rounds,
            quick: self.quick,
            skip_census: false,
        };
        let mut jobs = Vec::new();
        for workload in Workload::COMPARED
            .into_iter()
            .filter(|w| wants_workload(*w))
        {
            for allocator in AllocatorId::COMPARED
                .into_iter()
                .filter(|a| wants_allocator(*a))
            {
                jobs.push(job(workload, allocator));
            }
        }
        if wants_workload(Workload::Descriptors) {
            for allocator in [AllocatorId::Densekv, AllocatorId::Densekv64] {
                jobs.push(job(Workload::Descriptors, allocator));
            }
        }
        jobs
    }
}

/// The workspace root (two levels above this crate's manifest).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Runs the suite. `Ok(false)` when it completed but some child failed.
pub fn run(args: &HeapArgs) -> Result<bool, String> {
    let started = Instant::now();
    let sizes = Sizes::new(args.quick, args.rounds, args.passes);
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own binary: {e}"))?;
    let perf = machine::perf_counts_cache_misses();
    let descriptor_metric = if perf {
        "cache misses from `perf stat -e cache-misses` (census run minus build-only run), and time"
            .to_owned()
    } else {
        "time only: `perf stat -e cache-misses` reports <not supported> on this machine".to_owned()
    };
    let pass_jobs = args.jobs();
    let jobs: Vec<(usize, &ChildArgs)> = (1..=sizes.passes)
        .flat_map(|pass| pass_jobs.iter().map(move |job| (pass, job)))
        .collect();
    let timeout = Duration::from_secs(args.child_timeout_secs);
    let Children {
        raw,
        failures,
        misses,
    } = run_children(&exe, &jobs, sizes.passes, perf, timeout);
    let raw = merge_passes(raw);
    let misses = merge_misses(&misses);
    let report = HeapSuiteReport {
        suite: "heap",
        command: crate::suite::command_line(),
        machine: MachineInfo::read(),
        sizes,
        descriptor_metric,
        allocators: alloc_rows(&raw),
        descriptors: descriptor_rows(&raw, &misses),
        accounting: accounting_rows(&raw),
        failures,
        raw,
    };
    print!("{}", render(&report));
    let out_dir = args
        .out_dir
        .clone()
        .unwrap_or_else(|| workspace_root().join("bench-results"));
    let path = write_json(&out_dir, "heap.json", &report)?;
    println!(
        "\nwrote {} ({:.0} s in all)",
        path.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(report.failures.is_empty())
}

/// What the children of a run produced.
struct Children {
    /// `(pass, report)` of every child that completed.
    raw: Vec<(usize, ChildReport)>,
    failures: Vec<Failure>,
    /// Cache misses per `census()` call of each descriptor child run under `perf`.
    misses: Vec<(AllocatorId, f64)>,
}

/// Runs the `(pass, job)` children one after another, printing a progress line for each.
fn run_children(
    exe: &Path,
    jobs: &[(usize, &ChildArgs)],
    passes: usize,
    perf: bool,
    timeout: Duration,
) -> Children {
    let (mut raw, mut failures, mut misses) = (Vec::new(), Vec::new(), Vec::new());
    for (index, &(pass, job)) in jobs.iter().enumerate() {
        eprint!(
            "[{:>2}/{}] pass {pass}/{} {:<11} × {:<10} ",
            index + 1,
            jobs.len(),
            passes,
            job.workload.name(),
            job.allocator.name()
        );
        let child_started = Instant::now();
        let outcome = if perf && job.workload == Workload::Descriptors {
            run_descriptor_with_perf(exe, job, timeout).map(|(report, per_census)| {
                misses.push((job.allocator, per_census));
                report
            })
        } else {
            run_child(exe, job, timeout, false).map(|(report, _)| report)
        };
        let seconds = child_started.elapsed().as_secs_f64();
        match outcome {
            Ok(report) => {
                let median = crate::stats::median(&report.ns_per_op).unwrap_or(f64::NAN);
                eprintln!(
                    "{median:>10.1} ns/op  peak {:>7.1} MiB  ({seconds:.1} s)",
                    report.peak_rss_bytes as f64 / 1_048_576.0
                );
                raw.push((pass, report));
            }
            Err(error) => {
                eprintln!("FAILED ({seconds:.1} s)");
                failures.push(Failure {
                    workload: job.workload,
                    allocator: job.allocator,
                    error,
                });
            }
        }
    }
    Children {
        raw,
        failures,
        misses,
    }
}

/// Writes `report` as pretty JSON to `file` in `out_dir`, creating the directory; returns the
/// file's path (every suite's JSON goes through here).
pub fn write_json(
    out_dir: &Path,
    file: &str,
    report: &impl serde::Serialize,
) -> Result<PathBuf, String> {
    let path = out_dir.join(file);
    std::fs::create_dir_all(out_dir)
        .and_then(|()| {
            let json = serde_json::to_string_pretty(report).map_err(std::io::Error::other)?;
            std::fs::write(&path, json + "\n")
        })
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// Runs the descriptor child twice under `perf stat`: with the census, and building only. Returns
/// the census run's report and its cache misses per `census()` call.
fn run_descriptor_with_perf(
    exe: &Path,
    job: &ChildArgs,
    timeout: Duration,
) -> Result<(ChildReport, f64), String> {
    let (report, with_census) = run_child(exe, job, timeout, true)?;
    let build_only = ChildArgs {
        skip_census: true,
        ..job.clone()
    };
    let (_, without_census) = run_child(exe, &build_only, timeout, true)?;
    let counted = |misses: Option<u64>| misses.ok_or("perf printed no cache-misses count");
    let census_misses = counted(with_census)?.saturating_sub(counted(without_census)?);
    let census_calls = (report.ns_per_op.len() as u64 * report.ops_per_round)
        / (report.live_requested_bytes / heap::BLOCK_BYTES as u64).max(1);
    Ok((report, census_misses as f64 / census_calls.max(1) as f64))
}

/// Runs one child (under `perf stat` if asked), killing it after `timeout`. Returns its report
/// and, under perf, its cache-miss count.
fn run_child(
    exe: &Path,
    job: &ChildArgs,
    timeout: Duration,
    under_perf: bool,
) -> Result<(ChildReport, Option<u64>), String> {
    let mut command = if under_perf {
        let mut c = Command::new("perf");
        c.args(["stat", "-x,", "-e", "cache-misses", "--"]).arg(exe);
        c
    } else {
        Command::new(exe)
    };
    let mut child = command
        .args(job.to_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start child: {e}"))?;
    let (status, stdout, stderr) = crate::machine::wait_with_timeout(&mut child, timeout)?;
    let tail = || {
        let lines: Vec<&str> = stderr.lines().collect();
        lines[lines.len().saturating_sub(12)..].join("\n")
    };
    match status {
        None => Err(format!("killed after {} s\n{}", timeout.as_secs(), tail())),
        Some(status) if !status.success() => Err(format!("child exited with {status}\n{}", tail())),
        Some(_) => {
            let report = parse_report(&stdout).map_err(|e| format!("{e}\n{}", tail()))?;
            Ok((
                report,
                under_perf
                    .then(|| machine::parse_perf_csv(&stderr))
                    .flatten(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{HeapArgs, workspace_root};
    use crate::alloc::AllocatorId;
    use crate::workload::Workload;

    #[test]
    fn default_jobs_cover_every_pair_workload_major() {
        let jobs = HeapArgs::default().jobs();
        assert_eq!(jobs.len(), 4 * 4 + 2);
        assert_eq!(jobs[0].workload, Workload::Json);
        assert_eq!(jobs[0].allocator, AllocatorId::Densekv);
        assert_eq!(jobs[3].allocator, AllocatorId::System);
        assert_eq!(jobs[4].workload, Workload::Mir);
        assert_eq!(jobs[17].allocator, AllocatorId::Densekv64);
    }

    #[test]
    fn filters_select_jobs() {
        let args = HeapArgs {
            workloads: vec![Workload::Vm, Workload::Descriptors],
            allocators: vec![AllocatorId::Densekv, AllocatorId::Mimalloc],
            rounds: Some(2),
            ..HeapArgs::default()
        };
        let pairs: Vec<_> = args
            .jobs()
            .iter()
            .map(|j| (j.workload, j.allocator))
            .collect();
        assert_eq!(
            pairs,
            [
                (Workload::Vm, AllocatorId::Densekv),
                (Workload::Vm, AllocatorId::Mimalloc),
                (Workload::Descriptors, AllocatorId::Densekv),
                (Workload::Descriptors, AllocatorId::Densekv64),
            ]
        );
        assert!(args.jobs().iter().all(|j| j.rounds == Some(2)));
    }

    #[test]
    fn workspace_root_holds_the_workspace_manifest() {
        let manifest = std::fs::read_to_string(workspace_root().join("Cargo.toml")).unwrap();
        assert!(manifest.contains("[workspace]"));
    }
}
