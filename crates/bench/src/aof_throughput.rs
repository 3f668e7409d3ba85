//! The aof suite's first figure: redis-benchmark's throughput with the append-only file on, under
//! each `appendfsync` policy, at `-P 1` and `-P 16`.
//!
//! ```text
//! per (policy, pipeline), on each server:
//!   fresh server in an empty directory: --appendonly yes --appendfsync <always|everysec|no>
//!                                       --save ""   (and --dir, --enable-debug-command yes)
//!   redis-benchmark -h 127.0.0.1 -p P -c 50 -n R -r 100000 -P <1|16> --csv -t set,incr,lpush
//!   INFO persistence: aof_rewrites, aof_delayed_fsync
//! rps per (policy, pipeline, test); the ratio is densekv / redis of the same round
//! ```
//!
//! A fresh server per (policy, pipeline) so that one run's file never slows the next: both
//! servers start from an empty directory, with the same AOF to create. Both keep their default
//! `auto-aof-rewrite-percentage 100` and `auto-aof-rewrite-min-size 64mb` (a million of
//! redis-benchmark's SETs append about 45 MB), so a long run may rewrite on its own as a user's
//! server would: the sample records how many rewrites ran (`aof_rewrites`) and how often a write
//! waited for an `everysec` fsync still running (`aof_delayed_fsync`), the two things besides
//! the fsyncs themselves that set a policy's cost.
//!
//! The tests are redis-benchmark's own: `set` writes `key:<12 digits>` of the 100,000-key
//! keyspace, `incr` `counter:<12 digits>`, `lpush` pushes onto the one list `mylist`. Each is a
//! write the AOF must append, so under `always` each reply waits for an fsync that covers it
//! (both servers group the fsync: one per event-loop turn, for every client served in it).

use std::path::Path;

use serde::Serialize;

use crate::persist_server::{self, TempDir};
use crate::server_proc::{ServerKind, info_field};
use crate::server_rb::{self, BenchSample};

/// The `appendfsync` policies, strictest first.
pub const POLICIES: [&str; 3] = ["always", "everysec", "no"];
/// redis-benchmark's `-P` depths.
pub const PIPELINES: [u32; 2] = [1, 16];
/// The tests, each a write the AOF appends.
pub const TESTS: [&str; 3] = ["set", "incr", "lpush"];
/// `-r`: the keyspace of `set` and `incr`.
pub const KEYSPACE: u64 = 100_000;

/// One test in one round on one server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThroughputSample {
    pub round: usize,
    pub server: ServerKind,
    pub policy: &'static str,
    pub pipeline: u32,
    pub test: String,
    pub rps: f64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// `aof_rewrites` after the run: rewrites the server started on its own during it.
    pub aof_rewrites: u64,
    /// `aof_delayed_fsync` after the run (`everysec`: writes that waited for a running fsync).
    pub aof_delayed_fsync: u64,
}

/// redis-benchmark's arguments for one run.
pub fn arguments(port: u16, requests: u64, pipeline: u32) -> Vec<String> {
    server_rb::arguments(port, requests, KEYSPACE, pipeline, &TESTS)
}

/// The server options of `policy`, on top of `persist_server::start_in`'s `--save ""`.
pub fn server_options(policy: &str) -> [&str; 4] {
    ["--appendonly", "yes", "--appendfsync", policy]
}

/// Runs the three tests at `pipeline` on a fresh `kind` server under `policy`.
pub fn measure(
    kind: ServerKind,
    binary: &Path,
    redis_benchmark: &Path,
    policy: &'static str,
    pipeline: u32,
    requests: u64,
    round: usize,
) -> Result<Vec<ThroughputSample>, String> {
    let dir = TempDir::new(&format!("aof-{policy}-p{pipeline}-{}", kind.name()))?;
    let server = persist_server::start_in_with(kind, binary, &dir, &server_options(policy))?;
    let ran = server_rb::run(redis_benchmark, &arguments(server.port, requests, pipeline))?;
    let mut connection = persist_server::connect(server.port)?;
    let info = persist_server::info_persistence(&mut connection)?;
    let field = |name: &str| {
        info_field(&info, name).ok_or_else(|| format!("INFO persistence has no {name}"))
    };
    if field("aof_enabled")? != 1 {
        return Err("INFO persistence says aof_enabled:0".to_owned());
    }
    let (aof_rewrites, aof_delayed_fsync) = (field("aof_rewrites")?, field("aof_delayed_fsync")?);
    TESTS
        .iter()
        .map(|&test| {
            let sample: &BenchSample = ran
                .iter()
                .find(|s| s.test == test)
                .ok_or_else(|| format!("redis-benchmark gave no {test} row"))?;
            Ok(ThroughputSample {
                round,
                server: kind,
                policy,
                pipeline,
                test: test.to_owned(),
                rps: sample.rps,
                p50_ms: sample.p50_ms,
                p99_ms: sample.p99_ms,
                aof_rewrites,
                aof_delayed_fsync,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{arguments, server_options};

    #[test]
    fn command_lines() {
        assert_eq!(
            arguments(7000, 150_000, 16).join(" "),
            "-h 127.0.0.1 -p 7000 -c 50 -n 150000 -r 100000 -P 16 --csv -t set,incr,lpush"
        );
        assert_eq!(
            server_options("everysec").join(" "),
            "--appendonly yes --appendfsync everysec"
        );
    }
}
