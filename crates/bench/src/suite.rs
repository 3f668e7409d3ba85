//! What the suites' runs share, written once: the start and end of a run against servers
//! ([`SuiteRun`]: the Ctrl-C handler, the total time), the measurements that failed on the way
//! ([`Failures`]), the round count of the suites beside redis-server ([`rounds`]) and the command
//! line every report records ([`command_line`]).
//!
//! The `--quick` and `--rounds` options themselves stay in each suite's arguments rather than in
//! a flattened struct: their help says what `--quick` shrinks in that suite and what a round is
//! there (heap: timed rounds per child, 5 by default; server: rounds of the throughput part), and
//! `persist` and `aof` list `--n` before them. Only the resolution is shared.

use std::time::Instant;

use crate::server_proc;

/// One run of a suite that starts servers: from the Ctrl-C handler that stops them to the line
/// with the run's total time.
#[derive(Debug)]
pub struct SuiteRun {
    suite: &'static str,
    started: Instant,
}

impl SuiteRun {
    /// Installs the handler that stops this run's servers on Ctrl-C, and starts the clock.
    pub fn start(suite: &'static str) -> Self {
        server_proc::install_interrupt_handler();
        Self {
            suite,
            started: Instant::now(),
        }
    }

    /// Prints `<suite> suite: N s in all` on stdout.
    pub fn finish(&self) {
        println!(
            "\n{} suite: {:.0} s in all",
            self.suite,
            self.started.elapsed().as_secs_f64()
        );
    }
}

/// The measurements of a run that failed, each shown on stderr as it fails; the report lists
/// them, and a run with any ends with a failure exit status.
#[derive(Debug, Default)]
pub struct Failures(Vec<String>);

impl Failures {
    /// Prints `FAILED: what` under the progress line and keeps `what` for the report.
    pub fn record(&mut self, what: String) {
        eprintln!("  FAILED: {what}");
        self.0.push(what);
    }

    /// The failures, for the report.
    pub fn into_vec(self) -> Vec<String> {
        self.0
    }
}

/// Rounds of a suite beside redis-server: `given`, else 3 (1 with `--quick`); at least 1.
pub fn rounds(given: Option<usize>, quick: bool) -> usize {
    given.unwrap_or(if quick { 1 } else { 3 }).max(1)
}

/// The command line as the reports record it: `bench` and this run's arguments.
pub fn command_line() -> String {
    std::iter::once("bench".to_owned())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::{Failures, rounds};

    #[test]
    fn rounds_default_to_three_and_one_when_quick() {
        assert_eq!(rounds(None, false), 3);
        assert_eq!(rounds(None, true), 1);
        assert_eq!(rounds(Some(5), true), 5);
        assert_eq!(rounds(Some(0), false), 1);
    }

    #[test]
    fn failures_are_kept_in_order() {
        let mut failures = Failures::default();
        failures.record("a".to_owned());
        failures.record("b".to_owned());
        assert_eq!(failures.into_vec(), ["a", "b"]);
    }
}
