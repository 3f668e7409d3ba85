//! One memory measurement: a fresh server, N entries of one workload loaded through a pipelined
//! connection, resident memory and `used_memory` before and after, and a read-back check.
//!
//! ```text
//! start server ─ PING ─ VmRSS₀, used₀ ─ load N (batches of 1000, every reply checked)
//!   ─ settle: wait ≥ 12 s, then until VmRSS is still for 2 s ─ VmRSS₁, used₁
//!   ─ read back 1000 sampled entries
//! bytes/entry = (VmRSS₁ − VmRSS₀) / N        used/entry = (used₁ − used₀) / N
//! ```
//!
//! Why wait 12 s: redis-server's jemalloc returns freed pages to the kernel through a background
//! thread with a 10 s dirty-page decay (`opt.dirty_decay_ms: 10000` in `MEMORY MALLOC-STATS`).
//! Loading 10⁶ `zsets` entries leaves 70 MB resident that decays to 32 MB over the next ~8 s while
//! `used_memory` stays at 20 MB; measured at "still for 1 s" it reported 55 bytes per member
//! where the settled figure is about 20. Waiting out the decay measures what the data costs,
//! not what the allocator has not yet returned, and treats densekv the same way.
//!
//! A workload the server does not implement shows up as `-ERR unknown command` on the first
//! reply and is reported `n/a`; any other unexpected reply, a crash or a wrong value read back
//! is a failure, reported loudly and counted in the exit code. The check is in [`verify`], kept
//! apart from the socket so the tests can feed it a wrong value.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::server_proc::{REPLY_TIMEOUT, ServerProcess};
use crate::server_resp::{Connection, Reply, encode};
use crate::server_workload::{MemWorkload, sample_indices};

/// Commands per pipelined write.
pub const BATCH_LEN: u64 = 1000;
/// Entries read back after the load.
pub const SAMPLE_COUNT: usize = 1000;
/// After the load, `VmRSS` must be unchanged this long (and `settle` must have passed).
pub(crate) const QUIET_STILL: Duration = Duration::from_secs(2);
/// The longest wait for quiet beyond `settle`: a server still changing then is measured anyway.
pub(crate) const QUIET_SLACK: Duration = Duration::from_secs(20);
/// The default settle time: above jemalloc's 10 s dirty-page decay.
pub const SETTLE_DEFAULT: Duration = Duration::from_secs(12);

/// How a measurement ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", content = "detail", rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    /// The server lacks a command the workload needs (or the binary is missing).
    NotApplicable(String),
    Failed(String),
}

impl Outcome {
    pub fn short(&self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::NotApplicable(_) => "n/a",
            Self::Failed(_) => "FAILED",
        }
    }
}

/// The memory of one (server, workload, N).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryMeasurement {
    pub outcome: Outcome,
    pub entries: u64,
    pub rss_before_bytes: u64,
    pub rss_after_bytes: u64,
    pub used_memory_before_bytes: Option<u64>,
    pub used_memory_after_bytes: Option<u64>,
    pub load_secs: f64,
    /// Sampled entries read back and found equal (0 when the read command is unsupported).
    pub verified_entries: usize,
    /// Why the sample was not read back, when it was not.
    pub verify_note: Option<String>,
}

impl MemoryMeasurement {
    pub fn not_applicable(entries: u64, why: String) -> Self {
        Self::empty(entries, Outcome::NotApplicable(why))
    }

    pub fn failed(entries: u64, why: String) -> Self {
        Self::empty(entries, Outcome::Failed(why))
    }

    fn empty(entries: u64, outcome: Outcome) -> Self {
        Self {
            outcome,
            entries,
            rss_before_bytes: 0,
            rss_after_bytes: 0,
            used_memory_before_bytes: None,
            used_memory_after_bytes: None,
            load_secs: 0.0,
            verified_entries: 0,
            verify_note: None,
        }
    }

    /// `(VmRSS after − VmRSS before) / N`, for a successful measurement.
    pub fn rss_per_entry(&self) -> Option<f64> {
        (self.outcome == Outcome::Ok && self.entries > 0).then(|| {
            (self.rss_after_bytes as f64 - self.rss_before_bytes as f64) / self.entries as f64
        })
    }

    /// `(used_memory after − before) / N`, when the server reports `used_memory`.
    pub fn used_per_entry(&self) -> Option<f64> {
        let (before, after) = (
            self.used_memory_before_bytes?,
            self.used_memory_after_bytes?,
        );
        (self.outcome == Outcome::Ok && self.entries > 0)
            .then(|| (after as f64 - before as f64) / self.entries as f64)
    }

    pub fn entries_per_sec(&self) -> Option<f64> {
        (self.outcome == Outcome::Ok && self.load_secs > 0.0)
            .then(|| self.entries as f64 / self.load_secs)
    }
}

/// Loads `n` entries of `workload` into `server` (which must be fresh) and measures it, reading
/// the memory after at least `settle`.
pub fn measure(
    server: &mut ServerProcess,
    workload: MemWorkload,
    n: u64,
    settle: Duration,
) -> MemoryMeasurement {
    let mut connection = match Connection::open(server.port, REPLY_TIMEOUT) {
        Ok(c) => c,
        Err(e) => return MemoryMeasurement::failed(n, format!("cannot connect: {e}")),
    };
    let mut result = MemoryMeasurement::empty(n, Outcome::Ok);
    result.rss_before_bytes =
        server.wait_quiet(Duration::from_millis(300), Duration::ZERO, QUIET_SLACK);
    result.used_memory_before_bytes = server.used_memory();
    // A smoke run (no settle time, tiny N) only needs the server to have answered everything.
    let still = if settle.is_zero() {
        Duration::from_millis(300)
    } else {
        QUIET_STILL
    };
    let started = Instant::now();
    if let Err(outcome) = load(&mut connection, workload, n) {
        let mut failed = MemoryMeasurement::empty(n, outcome);
        if let Outcome::Failed(why) = &mut failed.outcome
            && !server.is_running()
        {
            let _ = write!(why, " (server exited: {})", server.log_tail());
        }
        return failed;
    }
    result.load_secs = started.elapsed().as_secs_f64();
    result.rss_after_bytes = server.wait_quiet(still, settle, settle + QUIET_SLACK);
    result.used_memory_after_bytes = server.used_memory();
    let sample = sample_indices(n, SAMPLE_COUNT);
    match read_back(&mut connection, workload, &sample) {
        Ok(replies) => match verify(workload, &sample, &replies) {
            Ok(()) => result.verified_entries = sample.len(),
            Err(why) => result.outcome = Outcome::Failed(why),
        },
        Err(ReadBack::Unsupported(why)) => result.verify_note = Some(why),
        Err(ReadBack::Io(why)) => result.outcome = Outcome::Failed(why),
    }
    result
}

/// Sends the load commands in batches and checks every reply.
fn load(connection: &mut Connection, workload: MemWorkload, n: u64) -> Result<(), Outcome> {
    let mut encoded = Vec::new();
    let mut first = 0;
    while first < n {
        let end = (first + BATCH_LEN).min(n);
        encoded.clear();
        for i in first..end {
            encode(&workload.load_command(i), &mut encoded);
        }
        let replies = connection
            .pipeline(&encoded, (end - first) as usize)
            .map_err(|e| Outcome::Failed(format!("loading entry {first}..{end}: {e}")))?;
        for (i, reply) in (first..end).zip(replies) {
            if reply.is_unknown_command() && i == 0 {
                return Err(Outcome::NotApplicable(format!("{reply}")));
            }
            let expected = workload.load_reply(i);
            if reply != expected {
                return Err(Outcome::Failed(format!(
                    "loading entry {i}: expected {expected}, got {reply}"
                )));
            }
        }
        first = end;
    }
    Ok(())
}

enum ReadBack {
    Unsupported(String),
    Io(String),
}

fn read_back(
    connection: &mut Connection,
    workload: MemWorkload,
    sample: &[u64],
) -> Result<Vec<Reply>, ReadBack> {
    let mut encoded = Vec::new();
    for &i in sample {
        encode(&workload.check(i).0, &mut encoded);
    }
    let replies = connection
        .pipeline(&encoded, sample.len())
        .map_err(|e| ReadBack::Io(format!("reading back: {e}")))?;
    match replies.first() {
        Some(reply) if reply.is_unknown_command() => Err(ReadBack::Unsupported(format!(
            "read-back command unsupported: {reply}"
        ))),
        _ => Ok(replies),
    }
}

/// Compares read-back replies with what the workload loaded; the error names up to three
/// differing entries and how many differ in all.
pub fn verify(workload: MemWorkload, sample: &[u64], replies: &[Reply]) -> Result<(), String> {
    if replies.len() != sample.len() {
        return Err(format!(
            "read back {} replies for {} entries",
            replies.len(),
            sample.len()
        ));
    }
    let wrong: Vec<String> = sample
        .iter()
        .zip(replies)
        .filter_map(|(&i, reply)| {
            let (args, expected) = workload.check(i);
            (*reply != expected).then(|| {
                let command: Vec<_> = args.iter().map(|a| String::from_utf8_lossy(a)).collect();
                format!("{}: expected {expected}, got {reply}", command.join(" "))
            })
        })
        .collect();
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of {} values read back differ: {}",
            wrong.len(),
            sample.len(),
            wrong[..wrong.len().min(3)].join("; ")
        ))
    }
}

#[cfg(test)]
// The expected figures are small integers, exact in binary floating point.
#[allow(clippy::float_cmp)]
mod tests {
    use super::{MemoryMeasurement, Outcome, verify};
    use crate::server_resp::Reply;
    use crate::server_workload::{MemWorkload, sample_indices};

    #[test]
    fn verify_accepts_the_loaded_values_and_catches_one_wrong_value() {
        for workload in MemWorkload::ALL {
            let sample = sample_indices(50_000, 100);
            let mut replies: Vec<Reply> = sample.iter().map(|&i| workload.check(i).1).collect();
            assert_eq!(verify(workload, &sample, &replies), Ok(()));
            replies[37] = Reply::bulk("wrong");
            let error = verify(workload, &sample, &replies).unwrap_err();
            assert!(
                error.starts_with("1 of 100 values read back differ"),
                "{error}"
            );
            replies.pop();
            assert!(verify(workload, &sample, &replies).is_err());
        }
    }

    #[test]
    fn per_entry_figures() {
        let mut m = MemoryMeasurement::empty(1000, Outcome::Ok);
        m.rss_before_bytes = 8_000_000;
        m.rss_after_bytes = 8_130_000;
        m.used_memory_before_bytes = Some(1_000_000);
        m.used_memory_after_bytes = Some(1_090_000);
        m.load_secs = 0.5;
        assert_eq!(m.rss_per_entry(), Some(130.0));
        assert_eq!(m.used_per_entry(), Some(90.0));
        assert_eq!(m.entries_per_sec(), Some(2000.0));
        let na = MemoryMeasurement::not_applicable(1000, "-ERR unknown command".into());
        assert_eq!(na.rss_per_entry(), None);
        assert_eq!(na.outcome.short(), "n/a");
    }
}
