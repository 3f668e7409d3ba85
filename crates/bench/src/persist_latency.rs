//! The persist suite's second figure: redis-benchmark's p99 latency with no save running, and
//! again while background saves run back to back.
//!
//! ```text
//! fresh server ─ N keys ─ CONFIG SET rdb-key-save-delay 0
//!   ─ redis-benchmark -h 127.0.0.1 -p P -c 50 -n R -r N -P 1 --csv -t set,get -d 16   (without)
//!   ─ keeper thread: every 10 ms, INFO persistence; BGSAVE whenever none runs
//!     redis-benchmark, the same command                                              (with)
//!   ─ keeper stops, the last save ends
//! ratio = p99 with / p99 without, per test and round; the median of those over rounds
//! ```
//!
//! The keys are redis-benchmark's own (`key:000000000042`, 16-byte values, loaded through the
//! pipelined SET loader) rather than DEBUG POPULATE's `key:42`: with `-r N` every SET then
//! overwrites a key the save may not have reached yet and every GET hits. With POPULATE's names
//! the SETs would all add new keys and the GETs all miss, which measures neither densekv's
//! pre-image path nor the copy-on-write faults of redis-server's parent, the costs a save adds.
//!
//! The keeper counts the saves it started and the fraction of its looks that found one running
//! (`busy`), so a run where the saves did not cover the benchmark shows as such.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use serde::Serialize;

use crate::persist_server::{self, POLL_INTERVAL, TempDir};
use crate::server_proc::ServerKind;
use crate::server_rb::{self, BenchSample};

/// The tests measured.
pub const TESTS: [&str; 2] = ["set", "get"];
/// `-d`: the value size of redis-benchmark's SETs, the dataset's value size.
pub const VALUE_BYTES: u32 = 16;

/// One test in one round on one server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencySample {
    pub round: usize,
    pub server: ServerKind,
    pub test: String,
    pub p99_without_ms: f64,
    pub p99_with_ms: f64,
    pub rps_without: f64,
    pub rps_with: f64,
    /// Background saves the keeper started during the "with" run.
    pub saves_started: u64,
    /// The fraction of the keeper's looks that found a save running.
    pub busy_fraction: f64,
}

impl LatencySample {
    /// p99 with saves over p99 without.
    pub fn ratio(&self) -> f64 {
        self.p99_with_ms / self.p99_without_ms
    }
}

/// What the keeper saw.
#[derive(Debug, Clone, Copy, Default)]
struct Kept {
    saves: u64,
    looks: u64,
    busy_looks: u64,
}

/// redis-benchmark's arguments for this figure.
pub fn arguments(port: u16, requests: u64, n: u64) -> Vec<String> {
    let mut args = server_rb::arguments(port, requests, n, 1, &TESTS);
    args.extend(["-d".to_owned(), VALUE_BYTES.to_string()]);
    args
}

/// Runs one round on a fresh `kind` server.
pub fn measure(
    kind: ServerKind,
    binary: &Path,
    redis_benchmark: &Path,
    n: u64,
    requests: u64,
    round: usize,
) -> Result<Vec<LatencySample>, String> {
    let dir = TempDir::new(&format!("latency-{}", kind.name()))?;
    let server = persist_server::start_in(kind, binary, &dir)?;
    let port = server.port;
    persist_server::set_all(
        port,
        n,
        persist_server::benchmark_key,
        persist_server::new_value,
        |_| Ok(()),
    )?;
    let mut connection = persist_server::connect(port)?;
    persist_server::set_save_delay(&mut connection, 0)?;
    let args = arguments(port, requests, n);
    let without = server_rb::run(redis_benchmark, &args)?;
    let stop = Arc::new(AtomicBool::new(false));
    let keeper = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || keep_saving(port, &stop))
    };
    let with = server_rb::run(redis_benchmark, &args);
    stop.store(true, Ordering::Relaxed);
    let kept = keeper
        .join()
        .map_err(|_| "the keeper thread panicked".to_owned())??;
    pair(round, kind, &without, &with?, kept)
}

/// Starts a background save whenever none runs, until `stop`; then waits for the last to end.
fn keep_saving(port: u16, stop: &AtomicBool) -> Result<Kept, String> {
    let mut connection = persist_server::connect(port)?;
    let mut kept = Kept::default();
    while !stop.load(Ordering::Relaxed) {
        kept.looks += 1;
        if persist_server::save_in_progress(&mut connection)? {
            kept.busy_looks += 1;
        } else {
            persist_server::bgsave(&mut connection)?;
            kept.saves += 1;
        }
        thread::sleep(POLL_INTERVAL);
    }
    persist_server::wait_saved(&mut connection)?;
    Ok(kept)
}

/// One sample per test from the two runs.
fn pair(
    round: usize,
    server: ServerKind,
    without: &[BenchSample],
    with: &[BenchSample],
    kept: Kept,
) -> Result<Vec<LatencySample>, String> {
    let find = |samples: &[BenchSample], test: &str| -> Result<(f64, f64), String> {
        let sample = samples
            .iter()
            .find(|s| s.test == test)
            .ok_or_else(|| format!("redis-benchmark gave no {test} row"))?;
        let p99 = sample
            .p99_ms
            .ok_or_else(|| format!("redis-benchmark gave no p99 for {test}"))?;
        Ok((p99, sample.rps))
    };
    TESTS
        .iter()
        .map(|&test| {
            let (p99_without_ms, rps_without) = find(without, test)?;
            let (p99_with_ms, rps_with) = find(with, test)?;
            Ok(LatencySample {
                round,
                server,
                test: test.to_owned(),
                p99_without_ms,
                p99_with_ms,
                rps_without,
                rps_with,
                saves_started: kept.saves,
                busy_fraction: kept.busy_looks as f64 / kept.looks.max(1) as f64,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{Kept, arguments, pair};
    use crate::server_proc::ServerKind;
    use crate::server_rb::parse_csv;

    #[test]
    fn command_line_adds_the_value_size() {
        assert_eq!(
            arguments(7000, 200_000, 1_000_000).join(" "),
            "-h 127.0.0.1 -p 7000 -c 50 -n 200000 -r 1000000 -P 1 --csv -t set,get -d 16"
        );
    }

    #[test]
    fn pairs_the_runs_by_test() {
        let header = "\"test\",\"rps\",\"p99_latency_ms\"\n";
        let without = parse_csv(&format!(
            "{header}\"SET\",\"1000\",\"1.0\"\n\"GET\",\"2000\",\"0.5\"\n"
        ));
        let with = parse_csv(&format!(
            "{header}\"SET\",\"900\",\"1.5\"\n\"GET\",\"1800\",\"1.0\"\n"
        ));
        let kept = Kept {
            saves: 3,
            looks: 10,
            busy_looks: 9,
        };
        let samples = pair(1, ServerKind::Densekv, &without, &with, kept).unwrap();
        assert_eq!(samples.len(), 2);
        assert!((samples[0].ratio() - 1.5).abs() < 1e-12);
        assert!((samples[1].ratio() - 2.0).abs() < 1e-12);
        assert!((samples[1].busy_fraction - 0.9).abs() < 1e-12);
        assert!(pair(1, ServerKind::Redis, &without[..1], &with, kept).is_err());
    }
}
