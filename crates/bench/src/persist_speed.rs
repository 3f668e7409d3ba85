//! The persist suite's third figure: how long SAVE takes and how long a restart takes to load
//! the file, and a check that each server loads the other's file (ported from the Python
//! script that measured these before, now deleted).
//!
//! ```text
//! per server:  fresh server in dir A ─ DEBUG POPULATE N key 16 ─ SAVE (timed at the client)
//!              ─ stop ─ start again in A: spawn → first PONG (timed), the log's
//!                "DB loaded from disk: X seconds", DBSIZE == N ─ stop
//! then:        densekv started on a copy of redis-server's dump.rdb, and redis-server on a copy
//!              of densekv's: DBSIZE == N, the logged load seconds
//! ```
//!
//! SAVE's time is the client's: from the command's write to its `+OK`. The restart's is from the
//! spawn to the first PONG (`ServerProcess::ready_secs`, polled every 5 ms; redis-server answers
//! `-LOADING` until it is done, densekv does not answer before), which adds the process start and
//! the connection to the load itself; the logged figure is the server's own timing of the load.
//! The stop after SAVE is a SIGTERM, which saves nothing again: the servers run with `--save ""`.

use std::path::Path;

use serde::Serialize;

use crate::persist_server::{self, TempDir};
use crate::server_proc::ServerKind;
use crate::server_resp::Reply;

/// One server in one round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpeedSample {
    pub round: usize,
    pub server: ServerKind,
    pub save_secs: f64,
    /// Spawn to the first PONG, restarting on its own file.
    pub ready_secs: f64,
    /// "DB loaded from disk" of that restart.
    pub loaded_secs: Option<f64>,
    /// Spawn to the first PONG on a copy of the other server's file.
    pub cross_ready_secs: Option<f64>,
    /// "DB loaded from disk" of that start.
    pub cross_loaded_secs: Option<f64>,
}

/// SAVE and a restart on the file, on fresh `kind` servers working in `dir`.
pub fn save_and_reload(
    kind: ServerKind,
    binary: &Path,
    n: u64,
    dir: &TempDir,
    round: usize,
) -> Result<SpeedSample, String> {
    let save_secs = {
        let server = persist_server::start_in(kind, binary, dir)?;
        let mut connection = persist_server::connect(server.port)?;
        persist_server::populate(&mut connection, n)?;
        let clock = std::time::Instant::now();
        match connection.command(&["SAVE"]) {
            Ok(Reply::Simple(s)) if s == "OK" => clock.elapsed().as_secs_f64(),
            Ok(reply) => return Err(format!("SAVE: {reply}")),
            Err(e) => return Err(format!("SAVE: {e}")),
        }
    };
    let (ready_secs, loaded_secs) = load(kind, binary, n, dir)?;
    Ok(SpeedSample {
        round,
        server: kind,
        save_secs,
        ready_secs,
        loaded_secs,
        cross_ready_secs: None,
        cross_loaded_secs: None,
    })
}

/// Starts `kind` on a copy of `other`'s file and records that start in `sample`.
pub fn cross_load(
    sample: &mut SpeedSample,
    binary: &Path,
    n: u64,
    other: &TempDir,
) -> Result<(), String> {
    let kind = sample.server;
    let dir = TempDir::new(&format!("cross-{}", kind.name()))?;
    std::fs::copy(other.dump(), dir.dump())
        .map_err(|e| format!("copying {}: {e}", other.dump().display()))?;
    let (ready, loaded) = load(kind, binary, n, &dir)
        .map_err(|e| format!("{} loading the other server's file: {e}", kind.name()))?;
    sample.cross_ready_secs = Some(ready);
    sample.cross_loaded_secs = loaded;
    Ok(())
}

/// Starts `kind` in `dir` (on its `dump.rdb`), checks that it holds `n` keys, and returns the
/// spawn-to-PONG seconds and the logged load seconds.
fn load(
    kind: ServerKind,
    binary: &Path,
    n: u64,
    dir: &TempDir,
) -> Result<(f64, Option<f64>), String> {
    let server = persist_server::start_in(kind, binary, dir)?;
    let mut connection = persist_server::connect(server.port)?;
    let keys = persist_server::dbsize(&mut connection)?;
    if keys != n {
        return Err(format!("loaded {keys} keys of {n}"));
    }
    Ok((
        server.ready_secs,
        persist_server::loaded_secs(&server.log_text()),
    ))
}
