//! The evict suite's fifth scenario (`throughput`): redis-benchmark's SET throughput on a
//! server that is full, so that every write of a new key evicts.
//!
//! ```text
//! fresh server --maxmemory 32mb --maxmemory-policy allkeys-lru
//!   fill: SET key:%012d <16 bytes>, 1000 per write, until INFO shows used_memory ≥ maxmemory
//!         or evicted_keys > 0, then a quarter as many keys again (at most 4M keys in all)
//!   redis-benchmark -h 127.0.0.1 -p P -c 50 -n 2000000 -r 10000000 -P 16 --csv -t set -d 16
//!   meanwhile INFO memory every 100 ms: the highest used_memory
//!   after: used_memory, evicted_keys, DBSIZE
//! figure: rps (densekv / redis), max used_memory / maxmemory during the run
//! ```
//!
//! `-r 10000000` spreads the SETs over ten million keys, so nearly every one names a key the
//! server does not hold and must make room for it: the figure is the cost of eviction on the
//! write path. The fill first brings the server to its limit so the run starts in that state
//! rather than spending its first seconds below it.
//!
//! densekv's target: rps ≥ redis-server's, counted as met only when densekv's used_memory
//! stayed within 1.05 × maxmemory (a server that evicts nothing does less work per SET).

use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::evict_server::{self, Deadline, SAMPLE_INTERVAL};
use crate::server_proc::ServerKind;
use crate::server_rb;
use crate::server_resp::Connection;

pub const MAXMEMORY: &str = "32mb";
pub const POLICY: &str = "allkeys-lru";
/// redis-benchmark's `-r`, `-P` and `-d`.
pub const KEYSPACE: u64 = 10_000_000;
pub const PIPELINE: u32 = 16;
pub const VALUE_BYTES: usize = 16;
/// The fill's end: a quarter past the first key that met the limit.
const FILL_EXTRA_DIVISOR: u64 = 4;
/// The fill stops here whatever the memory says.
pub const FILL_KEYS_MAX: u64 = 4_000_000;

/// One run on one server in one round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThroughputSample {
    pub round: usize,
    pub server: ServerKind,
    /// Keys the fill wrote, and when the limit was first met (`None`: never within the fill).
    pub filled_keys: u64,
    pub limit_met_at_key: Option<u64>,
    pub fill_secs: f64,
    pub maxmemory_bytes: Option<u64>,
    pub rps: f64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// The highest used_memory seen during the benchmark (and right after), over the limit.
    pub max_used_bytes: Option<u64>,
    pub max_used_ratio: Option<f64>,
    pub evicted_before: Option<u64>,
    pub evicted_after: Option<u64>,
    pub dbsize_after: u64,
}

/// redis-benchmark's arguments.
pub fn arguments(port: u16, requests: u64) -> Vec<String> {
    let mut args = server_rb::arguments(port, requests, KEYSPACE, PIPELINE, &["set"]);
    args.extend(["-d".to_owned(), VALUE_BYTES.to_string()]);
    args
}

/// Fills a fresh `kind` server past its limit, then runs redis-benchmark against it.
pub fn measure(
    kind: ServerKind,
    binary: &Path,
    redis_benchmark: &Path,
    requests: u64,
    round: usize,
    deadline: &Deadline,
) -> Result<ThroughputSample, String> {
    let options = evict_server::memory_options(MAXMEMORY, POLICY);
    let server = evict_server::start(kind, binary, &options)?;
    let mut connection = evict_server::connect(server.port)?;
    let maxmemory_bytes = evict_server::maxmemory(&mut connection)?;
    let started = Instant::now();
    let (filled_keys, limit_met_at_key) = fill(&mut connection, maxmemory_bytes, deadline)?;
    let fill_secs = started.elapsed().as_secs_f64();
    let evicted_before = evict_server::evicted_keys(&mut connection)?;
    let args = arguments(server.port, requests);
    let (ran, max_used_bytes) = thread::scope(|scope| {
        let benchmark = scope.spawn(|| run_benchmark(redis_benchmark, &args, deadline));
        let mut max_used = None;
        while !benchmark.is_finished() {
            // An INFO that fails while the benchmark runs only loses a sample.
            if let Ok(used) = evict_server::used_memory(&mut connection) {
                max_used = max_used.max(used);
            }
            thread::sleep(SAMPLE_INTERVAL);
        }
        let ran = benchmark
            .join()
            .unwrap_or_else(|_| Err("the redis-benchmark thread panicked".to_owned()));
        (ran, max_used)
    });
    let sample = ran?
        .into_iter()
        .find(|s| s.test == "set")
        .ok_or("redis-benchmark gave no set row")?;
    let max_used_bytes = max_used_bytes.max(evict_server::used_memory(&mut connection)?);
    Ok(ThroughputSample {
        round,
        server: kind,
        filled_keys,
        limit_met_at_key,
        fill_secs,
        maxmemory_bytes,
        rps: sample.rps,
        p50_ms: sample.p50_ms,
        p99_ms: sample.p99_ms,
        max_used_bytes,
        max_used_ratio: evict_server::fraction(max_used_bytes, maxmemory_bytes),
        evicted_before,
        evicted_after: evict_server::evicted_keys(&mut connection)?,
        dbsize_after: evict_server::dbsize(&mut connection)?,
    })
}

/// SETs batches of [`evict_server::BATCH_LEN`] keys until the limit is met, then a quarter as
/// many again. Returns the keys written and the count at which the limit was first met.
fn fill(
    connection: &mut Connection,
    maxmemory_bytes: Option<u64>,
    deadline: &Deadline,
) -> Result<(u64, Option<u64>), String> {
    let batch = evict_server::BATCH_LEN;
    let (mut written, mut met_at, mut target) = (0u64, None, FILL_KEYS_MAX);
    while written < target {
        deadline.check("fill")?;
        let end = (written + batch).min(target);
        let mut encoded = Vec::new();
        for index in written..end {
            let (k, v) = (
                evict_server::key(index),
                evict_server::value(index, VALUE_BYTES),
            );
            crate::server_resp::encode(&["SET", k.as_str(), v.as_str()], &mut encoded);
        }
        let what = format!("fill SET batch at {written}");
        let replies = evict_server::pipeline(connection, &encoded, end - written, &what)?;
        if let Some(bad) = replies.iter().find(|r| !evict_server::is_ok(r)) {
            return Err(format!("{what}: {bad}"));
        }
        written = end;
        if met_at.is_none() && limit_met(connection, maxmemory_bytes)? {
            met_at = Some(written);
            target = (written + written / FILL_EXTRA_DIVISOR).min(FILL_KEYS_MAX);
        }
    }
    Ok((written, met_at))
}

/// Whether used_memory has reached the limit or a key was evicted.
fn limit_met(connection: &mut Connection, maxmemory_bytes: Option<u64>) -> Result<bool, String> {
    let evicted = evict_server::evicted_keys(connection)?.unwrap_or(0);
    let used = evict_server::used_memory(connection)?;
    Ok(evicted > 0 || matches!((used, maxmemory_bytes), (Some(u), Some(m)) if m > 0 && u >= m))
}

/// Runs redis-benchmark, killed (through its handle) when the measurement's time is up.
fn run_benchmark(
    binary: &Path,
    args: &[String],
    deadline: &Deadline,
) -> Result<Vec<server_rb::BenchSample>, String> {
    let mut child = Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    let limit = deadline.remaining().max(Duration::from_secs(1));
    let (status, stdout, stderr) = crate::machine::wait_with_timeout(&mut child, limit)?;
    match status {
        None => Err(format!(
            "redis-benchmark killed at the measurement's limit ({} s left at its start)",
            limit.as_secs()
        )),
        Some(status) if !status.success() => Err(format!(
            "redis-benchmark exited with {status}: {}",
            stderr.trim()
        )),
        Some(_) => Ok(server_rb::parse_csv(&stdout)),
    }
}

#[cfg(test)]
mod tests {
    use super::arguments;

    #[test]
    fn command_line() {
        assert_eq!(
            arguments(7000, 2_000_000).join(" "),
            "-h 127.0.0.1 -p 7000 -c 50 -n 2000000 -r 10000000 -P 16 --csv -t set -d 16"
        );
    }
}
