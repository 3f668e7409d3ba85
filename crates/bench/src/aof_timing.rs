//! The aof suite's third figure: how long BGREWRITEAOF of N keys takes on an idle server, and how
//! long a restart takes to load the append-only file it left (the base, plus an incremental
//! file of M SETs).
//!
//! ```text
//! fresh server (--appendonly yes) in dir A ─ DEBUG POPULATE N key 16
//!   ─ BGREWRITEAOF, timed from its reply to the first look (every 10 ms) at INFO persistence
//!     with aof_rewrite_in_progress:0 and aof_rewrite_scheduled:0
//!   ─ SET key:<12 digits> new:<12 digits> for i < M, pipelined 1000 per write: the incremental
//!     file (everysec, the default)
//!   ─ stop (SIGTERM: both fsync the AOF and exit)
//! start again in A: spawn → first PONG (timed), DBSIZE == N + M, and the log's
//!   "DB loaded from append only file: X seconds" (the whole load), "DB loaded from base file
//!   <name>: X seconds" and "DB loaded from incr file <name>: X seconds"
//! ```
//!
//! The rewrite's time is the client's, so redis-server's includes up to one cron period (100 ms
//! at `hz 10`) between its child's exit and the parent noticing it, which is also when the
//! rewrite is done for a client of redis-server. The SETs name keys DEBUG POPULATE did not make
//! (`key:000000000042`, not `key:42`), so the restart must hold N + M keys: the count checks
//! that both files were read. The sizes of the two files are recorded beside the times.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::persist_server::{self, BackgroundJob, TempDir};
use crate::server_proc::ServerKind;

/// The directory both servers keep the AOF in (`appenddirname`'s default).
const APPEND_DIR: &str = "appendonlydir";

/// One server in one round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingSample {
    pub round: usize,
    pub server: ServerKind,
    /// BGREWRITEAOF's reply to the first look that found it over.
    pub rewrite_secs: f64,
    /// Bytes of the base file and of the incremental files when the server stopped.
    pub base_bytes: u64,
    pub incr_bytes: u64,
    /// Spawn to the first PONG of the restart.
    pub ready_secs: f64,
    /// "DB loaded from append only file" of the restart.
    pub loaded_secs: Option<f64>,
    /// "DB loaded from base file" and "DB loaded from incr file".
    pub base_loaded_secs: Option<f64>,
    pub incr_loaded_secs: Option<f64>,
}

/// Runs one round on fresh `kind` servers.
pub fn measure(
    kind: ServerKind,
    binary: &Path,
    n: u64,
    incr_sets: u64,
    round: usize,
) -> Result<TimingSample, String> {
    let job = BackgroundJob::Bgrewriteaof;
    let dir = TempDir::new(&format!("aof-load-{}", kind.name()))?;
    let rewrite_secs = {
        let server = persist_server::start_in_with(kind, binary, &dir, job.server_options())?;
        let mut connection = persist_server::connect(server.port)?;
        persist_server::populate(&mut connection, n)?;
        job.start(&mut connection)?;
        let clock = Instant::now();
        persist_server::wait_done(&mut connection, job)?;
        let rewrite_secs = clock.elapsed().as_secs_f64();
        persist_server::set_all(
            server.port,
            incr_sets,
            persist_server::benchmark_key,
            persist_server::new_value,
            |_| Ok(()),
        )?;
        rewrite_secs
    };
    let (base_bytes, incr_bytes) = file_sizes(&dir.path().join(APPEND_DIR))?;
    let server = persist_server::start_in_with(kind, binary, &dir, job.server_options())?;
    let mut connection = persist_server::connect(server.port)?;
    let keys = persist_server::dbsize(&mut connection)?;
    if keys != n + incr_sets {
        return Err(format!(
            "the restart holds {keys} keys, not {n} + {incr_sets}"
        ));
    }
    let log = server.log_text();
    Ok(TimingSample {
        round,
        server: kind,
        rewrite_secs,
        base_bytes,
        incr_bytes,
        ready_secs: server.ready_secs,
        loaded_secs: persist_server::logged_secs(&log, "DB loaded from append only file"),
        base_loaded_secs: persist_server::logged_secs(&log, "DB loaded from base file"),
        incr_loaded_secs: persist_server::logged_secs(&log, "DB loaded from incr file"),
    })
}

/// The bytes of the `*.base.*` and `*.incr.*` files in `dir` (the manifest, and anything else,
/// counts in neither).
fn file_sizes(dir: &Path) -> Result<(u64, u64), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let (mut base, mut incr) = (0, 0);
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let bytes = entry.metadata().map_or(0, |m| m.len());
        if name.contains(".base.") {
            base += bytes;
        } else if name.contains(".incr.") {
            incr += bytes;
        }
    }
    Ok((base, incr))
}

#[cfg(test)]
mod tests {
    use super::file_sizes;
    use crate::persist_server::TempDir;

    #[test]
    fn file_sizes_split_base_and_incremental_files() {
        let dir = TempDir::new("aof-sizes").unwrap();
        let write = |name: &str, len: usize| std::fs::write(dir.path().join(name), vec![0; len]);
        write("appendonly.aof.2.base.rdb", 100).unwrap();
        write("appendonly.aof.2.incr.aof", 10).unwrap();
        write("appendonly.aof.3.incr.aof", 5).unwrap();
        write("appendonly.aof.manifest", 90).unwrap();
        assert_eq!(file_sizes(dir.path()).unwrap(), (100, 15));
        assert!(file_sizes(&dir.path().join("missing")).is_err());
    }
}
