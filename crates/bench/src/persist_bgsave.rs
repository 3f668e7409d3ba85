//! The persist suite's first figure: the memory a background save costs while every key is
//! overwritten, as the peak over the resident memory before. The aof suite measures BGREWRITEAOF
//! the same way ([`BackgroundJob`]): the same dataset, delay and overwrite, with `--appendonly
//! yes`, so the overwrite's SETs are appended to the AOF too, as a client's would be.
//!
//! ```text
//! fresh server ─ DEBUG POPULATE N key 16 ─ before = VmRSS (once still for 0.5 s)
//!   ─ CONFIG SET rdb-key-save-delay D ─ BGSAVE | BGREWRITEAOF
//!   ─┬─ writer thread: SET key:<i> new:<i> for every i, batches of 1000, one connection
//!    └─ every 10 ms: memory now; INFO persistence; until rdb_bgsave_in_progress:0 (a rewrite:
//!       aof_rewrite_in_progress:0 and aof_rewrite_scheduled:0)
//! peak / before      counted only when the job still ran as the overwrite's last batch left
//! ```
//!
//! What "memory now" is differs by design. densekv saves from a thread of its own process, so
//! everything the save holds (pre-images handed to it, chunks in flight) is in its `VmRSS`.
//! redis-server forks: the child shares every page with the parent until one of them writes it,
//! and then each holds a private copy, so the total is the parent's `VmRSS` plus the child's
//! private pages (`Private_Clean + Private_Dirty` of `/proc/<child>/smaps_rollup`; its shared
//! pages are already in the parent's figure). One formula covers both: `VmRSS` plus the private
//! memory of every live child, and densekv has none. A rewrite is the same in both servers: an
//! RDB body (`aof-use-rdb-preamble yes`) written by the fork's child, or by densekv's walk.
//!
//! The save delay makes the save outlast the overwrite, so the peak is what a save costs when
//! every key changes under it (the worst case for copy-on-write, and for densekv's pre-images).
//! In densekv, `D > 0` holds the walk back D µs per key it encodes; a key a client overwrote
//! first was already handed to the save as a pre-image and costs the walk no delay, so once the
//! overwrite has touched every key the walk ends at once: densekv's save ends with the
//! overwrite's last batch, as long as the walk alone would be much slower (D = 10: 10 s for 10⁶
//! keys against an overwrite of 1–1.6 s here; with D = 3 the walk had saved the last batch's keys
//! itself in some rounds, so they did not count). In Redis 7, `D < 0` sleeps 1 µs with
//! probability 1/-D per key, and the kernel's timer slack makes each sleep 50–100 µs: D = -10
//! makes a save of 10⁶ keys last 10–13 s against an overwrite of 2.3–3.5 s (the parent's
//! copy-on-write faults slow it). A round where the save ended before the overwrite's last batch
//! measured a cheaper case: it is reported and not counted.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::machine;
use crate::persist_server::{self, BackgroundJob, POLL_INTERVAL, TempDir};
use crate::server_proc::{ServerKind, ServerProcess};
use crate::server_resp::Connection;

/// After the populate, `VmRSS` must be unchanged this long before it is read as "before".
const BEFORE_STILL: Duration = Duration::from_millis(500);
/// The longest wait for that stillness.
const BEFORE_LIMIT: Duration = Duration::from_secs(10);

/// One round of one server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BgsaveSample {
    pub round: usize,
    pub server: ServerKind,
    /// The `rdb-key-save-delay` the save ran with.
    pub delay: i32,
    pub before_bytes: u64,
    pub peak_bytes: u64,
    /// From BGSAVE's reply to the first `rdb_bgsave_in_progress:0` (or BGREWRITEAOF's to the
    /// first look that found no rewrite running or scheduled).
    pub save_secs: f64,
    /// From the job's reply to the last reply of the overwrite.
    pub overwrite_secs: f64,
    /// Whether the job was still running when the overwrite's last batch was sent: the round
    /// counts only then (every key but that batch's was overwritten during the job, and those
    /// were sent before it could end).
    pub counted: bool,
    /// Memory samples taken while the job ran.
    pub samples: usize,
    /// Whether a child process was seen during the job (redis-server's fork).
    pub child_seen: bool,
}

impl BgsaveSample {
    /// Peak over before.
    pub fn ratio(&self) -> f64 {
        self.peak_bytes as f64 / self.before_bytes.max(1) as f64
    }
}

/// The memory of the server and its children now, and whether it has a child.
fn footprint(server: &ServerProcess) -> (u64, bool) {
    let children = machine::children(server.pid());
    let private: u64 = children
        .iter()
        .map(|&pid| machine::private_bytes(pid))
        .sum();
    (server.rss_bytes() + private, !children.is_empty())
}

/// Runs one round of `job` on a fresh `kind` server.
pub fn measure(
    job: BackgroundJob,
    kind: ServerKind,
    binary: &Path,
    n: u64,
    delay: i32,
    round: usize,
) -> Result<BgsaveSample, String> {
    let dir = TempDir::new(&format!("{}-{}", job.name(), kind.name()))?;
    let server = persist_server::start_in_with(kind, binary, &dir, job.server_options())?;
    let mut connection = persist_server::connect(server.port)?;
    persist_server::populate(&mut connection, n)?;
    let before_bytes = server.wait_quiet(BEFORE_STILL, Duration::ZERO, BEFORE_LIMIT);
    persist_server::set_save_delay(&mut connection, delay)?;
    job.start(&mut connection)?;
    let started = Instant::now();
    let port = server.port;
    let writer = thread::spawn(move || {
        let mut saving_at_last = false;
        persist_server::set_all(
            port,
            n,
            persist_server::populated_key,
            persist_server::new_value,
            |c| {
                saving_at_last = job.in_progress(c)?;
                Ok(())
            },
        )
        .map(|()| (Instant::now(), saving_at_last))
    });
    let watched = watch_job(job, &server, &mut connection, started);
    let (overwrite_end, saving_at_last) = writer
        .join()
        .map_err(|_| "the overwrite thread panicked".to_owned())??;
    let watched = watched?;
    Ok(BgsaveSample {
        round,
        server: kind,
        delay,
        before_bytes,
        peak_bytes: watched.peak_bytes,
        save_secs: (watched.end - started).as_secs_f64(),
        overwrite_secs: (overwrite_end - started).as_secs_f64(),
        counted: saving_at_last,
        samples: watched.samples,
        child_seen: watched.child_seen,
    })
}

/// What [`watch_job`] saw.
struct Watched {
    peak_bytes: u64,
    end: Instant,
    samples: usize,
    child_seen: bool,
}

/// Samples the memory every [`POLL_INTERVAL`] until `INFO persistence` says `job` is over.
/// A sample is taken before each look, so the last one precedes the look that saw the end.
fn watch_job(
    job: BackgroundJob,
    server: &ServerProcess,
    connection: &mut Connection,
    started: Instant,
) -> Result<Watched, String> {
    let mut watched = Watched {
        peak_bytes: 0,
        end: started,
        samples: 0,
        child_seen: false,
    };
    loop {
        let (bytes, child) = footprint(server);
        watched.peak_bytes = watched.peak_bytes.max(bytes);
        watched.child_seen |= child;
        watched.samples += 1;
        if !job.in_progress(connection)? {
            watched.end = Instant::now();
            return Ok(watched);
        }
        job.within_limit(started)?;
        thread::sleep(POLL_INTERVAL);
    }
}

#[cfg(test)]
mod tests {
    use super::BgsaveSample;
    use crate::server_proc::ServerKind;

    #[test]
    fn ratio_is_peak_over_before() {
        let sample = BgsaveSample {
            round: 1,
            server: ServerKind::Redis,
            delay: -10,
            before_bytes: 100 << 20,
            peak_bytes: 195 << 20,
            save_secs: 5.0,
            overwrite_secs: 2.0,
            counted: true,
            samples: 500,
            child_seen: true,
        };
        assert!((sample.ratio() - 1.95).abs() < 1e-12);
    }
}
