//! The measuring child: `bench heap-child --alloc A --workload W [--rounds N] [--quick]`.
//!
//! Peak RSS (`VmHWM`) only ever grows, so two measurements in one process would blur into each
//! other. The parent therefore re-executes its own binary once per (allocator, workload); the
//! child runs every round, then prints exactly one JSON line on stdout:
//!
//! ```text
//! {"allocator":"mimalloc","workload":"json","rounds":7,"ops_per_round":65536,
//!  "ns_per_op":[812.1,...],"build_ns_per_op":null,"peak_rss_bytes":...,"rss_bytes":...,
//!  "baseline_rss_bytes":...,"sample_rss_bytes":...,"allocator_resident_bytes":null,
//!  "live_requested_bytes":262144,"timed_minor_faults":0}
//! ```
//!
//! Nothing else goes to stdout; a panic goes to stderr with a non-zero exit, which the parent
//! reports as that pair's failure while the rest of the suite goes on.

use std::io::Write;

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::alloc::{AllocatorId, with_allocator};
use crate::machine;
use crate::workload::{Run, Sizes, Workload, run_descriptors};

/// Arguments of the hidden `heap-child` subcommand.
#[derive(Debug, Clone, Args)]
pub struct ChildArgs {
    #[arg(long = "alloc", value_enum)]
    pub allocator: AllocatorId,
    #[arg(long, value_enum)]
    pub workload: Workload,
    #[arg(long)]
    pub rounds: Option<usize>,
    #[arg(long)]
    pub quick: bool,
    /// `descriptors` only: build the heap but skip the census (the baseline of a perf difference).
    #[arg(long)]
    pub skip_census: bool,
}

impl ChildArgs {
    /// The command-line form of these arguments, for re-executing the binary.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "heap-child".to_owned(),
            "--alloc".to_owned(),
            self.allocator.name().to_owned(),
            "--workload".to_owned(),
            self.workload.name().to_owned(),
        ];
        if let Some(rounds) = self.rounds {
            args.extend(["--rounds".to_owned(), rounds.to_string()]);
        }
        if self.quick {
            args.push("--quick".to_owned());
        }
        if self.skip_census {
            args.push("--skip-census".to_owned());
        }
        args
    }
}

/// The one line a child prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildReport {
    pub allocator: AllocatorId,
    pub workload: Workload,
    pub rounds: usize,
    pub ops_per_round: u64,
    pub ns_per_op: Vec<f64>,
    pub build_ns_per_op: Option<f64>,
    /// `VmHWM` at exit: the process's peak, the number compared across allocators.
    pub peak_rss_bytes: u64,
    /// `VmRSS` at exit, after the workload freed everything.
    pub rss_bytes: u64,
    pub baseline_rss_bytes: u64,
    pub sample_rss_bytes: u64,
    pub allocator_resident_bytes: Option<u64>,
    #[serde(default)]
    pub allocator_measured_bytes: Option<u64>,
    pub live_requested_bytes: u64,
    /// Minor page faults during the timed rounds, all rounds together.
    pub timed_minor_faults: u64,
    /// `(pass, median ns/op of that pass)`, filled in by the parent when it merges passes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_medians: Vec<(usize, f64)>,
}

/// Runs one measurement and prints its report line.
pub fn run(args: &ChildArgs) -> Result<(), String> {
    let sizes = Sizes::new(args.quick, args.rounds, None);
    let measurement = match (args.workload, args.allocator) {
        (Workload::Descriptors, AllocatorId::Densekv) => {
            run_descriptors::<32>(&sizes, !args.skip_census)
        }
        (Workload::Descriptors, AllocatorId::Densekv64) => {
            run_descriptors::<64>(&sizes, !args.skip_census)
        }
        (Workload::Descriptors, other) => {
            return Err(format!(
                "descriptors runs on densekv and densekv-64 only, not {}",
                other.name()
            ));
        }
        (workload, allocator) => with_allocator(allocator, Run { workload, sizes }),
    };
    let memory = machine::memory();
    let report = ChildReport {
        allocator: args.allocator,
        workload: args.workload,
        rounds: sizes.rounds,
        ops_per_round: measurement.ops_per_round,
        ns_per_op: measurement.ns_per_op,
        build_ns_per_op: measurement.build_ns_per_op,
        peak_rss_bytes: memory.peak_rss_bytes,
        rss_bytes: memory.rss_bytes,
        baseline_rss_bytes: measurement.baseline_rss_bytes,
        sample_rss_bytes: measurement.sample_rss_bytes,
        allocator_resident_bytes: measurement.allocator_resident_bytes,
        allocator_measured_bytes: measurement.allocator_measured_bytes,
        live_requested_bytes: measurement.live_requested_bytes,
        timed_minor_faults: measurement.timed_minor_faults,
        pass_medians: Vec::new(),
    };
    let line = serde_json::to_string(&report).map_err(|e| e.to_string())?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .map_err(|e| e.to_string())
}

/// Finds and parses the report line in a child's stdout: the last line that starts with `{`
/// (tolerating anything a library might print before it).
pub fn parse_report(stdout: &str) -> Result<ChildReport, String> {
    let line = stdout
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| "child printed no report line".to_owned())?;
    serde_json::from_str(line).map_err(|e| format!("bad child report line ({e}): {line}"))
}

#[cfg(test)]
mod tests {
    use super::{ChildArgs, ChildReport, parse_report};
    use crate::alloc::AllocatorId;
    use crate::workload::Workload;

    fn sample() -> ChildReport {
        ChildReport {
            allocator: AllocatorId::Densekv64,
            workload: Workload::Descriptors,
            rounds: 3,
            ops_per_round: 1000,
            ns_per_op: vec![1.5, 2.0, 1.25],
            build_ns_per_op: Some(40.0),
            peak_rss_bytes: 10 << 20,
            rss_bytes: 9 << 20,
            baseline_rss_bytes: 2 << 20,
            sample_rss_bytes: 9 << 20,
            allocator_resident_bytes: Some(7 << 20),
            allocator_measured_bytes: Some(7 << 20),
            live_requested_bytes: 1 << 30,
            timed_minor_faults: 17,
            pass_medians: Vec::new(),
        }
    }

    #[test]
    fn report_line_round_trips() {
        let report = sample();
        let line = serde_json::to_string(&report).unwrap();
        assert!(line.contains("\"allocator\":\"densekv-64\""));
        assert!(line.contains("\"workload\":\"descriptors\""));
        assert_eq!(parse_report(&format!("{line}\n")).unwrap(), report);
    }

    #[test]
    fn parser_skips_noise_and_takes_the_last_line() {
        let mut older = sample();
        older.rounds = 1;
        let text = format!(
            "warning: something\n{}\n  {}  \n\n",
            serde_json::to_string(&older).unwrap(),
            serde_json::to_string(&sample()).unwrap()
        );
        assert_eq!(parse_report(&text).unwrap(), sample());
    }

    #[test]
    fn parser_reports_missing_and_malformed_lines() {
        assert!(parse_report("").unwrap_err().contains("no report line"));
        assert!(
            parse_report("{\"allocator\":\"nope\"}")
                .unwrap_err()
                .contains("bad child report")
        );
        let truncated = &serde_json::to_string(&sample()).unwrap()[..40];
        assert!(parse_report(truncated).is_err());
    }

    #[test]
    fn args_round_trip_through_clap() {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(subcommand)]
            command: Sub,
        }
        #[derive(clap::Subcommand)]
        enum Sub {
            HeapChild(ChildArgs),
        }
        let args = ChildArgs {
            allocator: AllocatorId::Jemalloc,
            workload: Workload::Mir,
            rounds: Some(4),
            quick: true,
            skip_census: false,
        };
        let mut argv = vec!["bench".to_owned()];
        argv.extend(args.to_args());
        let Sub::HeapChild(parsed) = Wrapper::parse_from(argv).command;
        assert_eq!(parsed.to_args(), args.to_args());
    }
}
