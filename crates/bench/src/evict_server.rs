//! What the evict suite's measurements share: a server started with the scenario's memory
//! options, the dataset's keys and values, pipelined writes, `INFO` fields, a time bound on every
//! measurement, and the fixed grid the memory is sampled on.
//!
//! ```text
//! <binary> --port P --bind 127.0.0.1 --save "" --appendonly no
//!          [--maxmemory 32mb --maxmemory-policy allkeys-lru|allkeys-lfu]
//! key(i)   = key:%012d                     (redis-benchmark's `-r` keys: key:000000000042)
//! value(i) = 16 (or 100) bytes of [0-9A-Za-z], drawn from SplitMix64 seeded by i
//! SET key(i) value(i)   pipelined, BATCH_LEN per write, every reply +OK
//! INFO memory           used_memory:<bytes>, maxmemory:<bytes>
//! INFO stats            evicted_keys:<count>
//! ```
//!
//! A value is a function of its key's index, not of a stream, so every scenario, server and
//! round writes the same bytes for the same key without threading a generator through; the
//! values are random rather than `value:<i>` so that neither server can share or compress them.
//!
//! The servers are [`ServerProcess`]es (`server_proc.rs`): started on ephemeral ports and
//! stopped by pid in `Drop`, so a measurement that returns an error (or panics) stops its
//! server on the way out. Every measurement holds a [`Deadline`]: its loops are bounded by
//! count and checked against it, and every reply by [`REPLY_TIMEOUT`], so a server that stops
//! answering or never evicts costs at most the deadline, never a hang.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::rng::SplitMix64;
use crate::server_proc::{ServerKind, ServerProcess, info_field};
use crate::server_resp::{Connection, Reply, encode};

/// Commands per pipelined write of the loads, deletes and existence checks.
pub const BATCH_LEN: u64 = 1000;
/// How long one reply may take: a batch of a thousand commands, or an `INFO`, on a server that
/// may be evicting. Far above what either needs, far below the measurement's deadline.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(30);
/// Between two memory samples.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);
/// The values' alphabet.
const ALPHANUMERIC: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// Mixed into each key's index to seed its value, so that value(0) is not SplitMix64(0)'s.
const VALUE_SEED: u64 = 0x5EED_E71C_7000_0001;

/// The time bound of one measurement (one scenario on one server).
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    started: Instant,
    limit: Duration,
}

impl Deadline {
    pub fn new(limit: Duration) -> Self {
        Self {
            started: Instant::now(),
            limit,
        }
    }

    /// `Err` naming `what` once the limit has passed.
    pub fn check(&self, what: &str) -> Result<(), String> {
        if self.started.elapsed() > self.limit {
            return Err(format!(
                "{what}: over the measurement's {} s limit (--limit-secs)",
                self.limit.as_secs()
            ));
        }
        Ok(())
    }

    /// The time left, zero once over.
    pub fn remaining(&self) -> Duration {
        self.limit.saturating_sub(self.started.elapsed())
    }
}

/// One sample of a server's memory.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemoryPoint {
    /// Seconds from the phase's reference instant (the deletes' end, the fill's start); negative
    /// for a sample taken while the deletes still ran.
    pub t_secs: f64,
    /// `VmRSS` of the server.
    pub rss_bytes: u64,
    /// `used_memory` of `INFO memory`.
    pub used_bytes: Option<u64>,
    /// Commands of the phase sent so far (DELs of the deletes, SETs of the fill).
    pub done: u64,
}

/// Sample times on a fixed grid: sample k is due at k × interval from the start. A late sample
/// does not shift the later ones (no drift), and one more than an interval late skips the ticks
/// it missed rather than taking them in a burst.
#[derive(Debug, Clone, Copy)]
pub struct SampleClock {
    interval: Duration,
    next: Duration,
}

impl SampleClock {
    /// A clock whose first sample is due at once.
    pub fn new(interval: Duration) -> Self {
        debug_assert!(!interval.is_zero());
        Self {
            interval,
            next: Duration::ZERO,
        }
    }

    /// Whether a sample is due at `elapsed`; if so, the next one is due at the first tick after
    /// `elapsed`.
    pub fn take(&mut self, elapsed: Duration) -> bool {
        if elapsed < self.next {
            return false;
        }
        let ticks = elapsed.as_nanos() / self.interval.as_nanos() + 1;
        self.next = self.interval * u32::try_from(ticks).unwrap_or(u32::MAX);
        true
    }

    /// When the next sample is due.
    pub fn next_due(&self) -> Duration {
        self.next
    }
}

/// The first point at or after `at_secs` and the figure `pick` reads from it; `None` when the
/// series ends before `at_secs` or the point has no such figure.
pub fn value_at(
    points: &[MemoryPoint],
    at_secs: f64,
    pick: impl Fn(&MemoryPoint) -> Option<u64>,
) -> Option<(f64, u64)> {
    let point = points.iter().find(|p| p.t_secs >= at_secs)?;
    Some((point.t_secs, pick(point)?))
}

/// The key of index `index`.
pub fn key(index: u64) -> String {
    format!("key:{index:012}")
}

/// The `len`-byte alphanumeric value of the key of index `index`.
pub fn value(index: u64, len: usize) -> String {
    let mut rng = SplitMix64::new(VALUE_SEED ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let bytes: Vec<u8> = (0..len)
        .map(|_| ALPHANUMERIC[rng.below(ALPHANUMERIC.len() as u64) as usize])
        .collect();
    String::from_utf8(bytes).unwrap_or_default()
}

/// `--maxmemory <limit> --maxmemory-policy <policy>`.
pub fn memory_options(maxmemory: &str, policy: &str) -> Vec<String> {
    ["--maxmemory", maxmemory, "--maxmemory-policy", policy]
        .map(str::to_owned)
        .to_vec()
}

/// Starts `kind` with `options` after `server_proc`'s defaults.
pub fn start(kind: ServerKind, binary: &Path, options: &[String]) -> Result<ServerProcess, String> {
    ServerProcess::start_with(kind, binary, options)
}

/// A connection to `port` whose replies may take [`REPLY_TIMEOUT`].
pub fn connect(port: u16) -> Result<Connection, String> {
    Connection::open(port, REPLY_TIMEOUT).map_err(|e| format!("cannot connect: {e}"))
}

/// The text of `INFO <section>`.
pub fn info(connection: &mut Connection, section: &str) -> Result<String, String> {
    match connection.command(&["INFO", section]) {
        Ok(Reply::Bulk(Some(text))) => Ok(String::from_utf8_lossy(&text).into_owned()),
        Ok(reply) => Err(format!("INFO {section}: {reply}")),
        Err(e) => Err(format!("INFO {section}: {e}")),
    }
}

/// `used_memory` of `INFO memory`, `None` when the server does not report it.
pub fn used_memory(connection: &mut Connection) -> Result<Option<u64>, String> {
    Ok(info_field(&info(connection, "memory")?, "used_memory"))
}

/// `maxmemory` of `INFO memory` as the server understood the option.
pub fn maxmemory(connection: &mut Connection) -> Result<Option<u64>, String> {
    Ok(info_field(&info(connection, "memory")?, "maxmemory"))
}

/// `evicted_keys` of `INFO stats`.
pub fn evicted_keys(connection: &mut Connection) -> Result<Option<u64>, String> {
    Ok(info_field(&info(connection, "stats")?, "evicted_keys"))
}

/// `DBSIZE`.
pub fn dbsize(connection: &mut Connection) -> Result<u64, String> {
    match connection.command(&["DBSIZE"]) {
        Ok(Reply::Integer(n)) => u64::try_from(n).map_err(|_| format!("DBSIZE: {n}")),
        Ok(reply) => Err(format!("DBSIZE: {reply}")),
        Err(e) => Err(format!("DBSIZE: {e}")),
    }
}

/// A memory sample of `server` now, `t_secs` from the phase's reference.
pub fn sample(
    server: &ServerProcess,
    connection: &mut Connection,
    t_secs: f64,
    done: u64,
) -> Result<MemoryPoint, String> {
    Ok(MemoryPoint {
        t_secs,
        rss_bytes: server.rss_bytes(),
        used_bytes: used_memory(connection)?,
        done,
    })
}

/// Sends `count` pre-encoded commands in one write and reads their replies.
pub fn pipeline(
    connection: &mut Connection,
    encoded: &[u8],
    count: u64,
    what: &str,
) -> Result<Vec<Reply>, String> {
    connection
        .pipeline(encoded, count as usize)
        .map_err(|e| format!("{what}: {e}"))
}

/// `SET key(i) value(i, value_bytes)` for every i in `0..n`, [`BATCH_LEN`] per write, every
/// reply `+OK`.
pub fn load(
    connection: &mut Connection,
    n: u64,
    value_bytes: usize,
    deadline: &Deadline,
) -> Result<(), String> {
    let mut encoded = Vec::new();
    let mut start = 0;
    while start < n {
        deadline.check("load")?;
        let end = (start + BATCH_LEN).min(n);
        encoded.clear();
        for index in start..end {
            let (k, v) = (key(index), value(index, value_bytes));
            encode(&["SET", k.as_str(), v.as_str()], &mut encoded);
        }
        let what = format!("SET batch at {start}");
        let replies = pipeline(connection, &encoded, end - start, &what)?;
        if let Some(bad) = replies.iter().find(|r| !is_ok(r)) {
            return Err(format!("{what}: {bad}"));
        }
        start = end;
    }
    Ok(())
}

/// How many of the keys of `indexes` exist, by single-key `EXISTS`, [`BATCH_LEN`] per write.
pub fn count_existing(
    connection: &mut Connection,
    indexes: std::ops::Range<u64>,
    deadline: &Deadline,
) -> Result<u64, String> {
    let mut encoded = Vec::new();
    let mut present = 0;
    let mut start = indexes.start;
    while start < indexes.end {
        deadline.check("EXISTS")?;
        let end = (start + BATCH_LEN).min(indexes.end);
        encoded.clear();
        for index in start..end {
            encode(&["EXISTS", key(index).as_str()], &mut encoded);
        }
        let what = format!("EXISTS batch at {start}");
        for reply in pipeline(connection, &encoded, end - start, &what)? {
            match reply {
                Reply::Integer(1) => present += 1,
                Reply::Integer(0) => {}
                other => return Err(format!("{what}: {other}")),
            }
        }
        start = end;
    }
    Ok(present)
}

/// Whether `reply` is `+OK`.
pub fn is_ok(reply: &Reply) -> bool {
    matches!(reply, Reply::Simple(s) if s == "OK")
}

/// `used / limit`, `None` without either.
pub fn fraction(used: Option<u64>, limit: Option<u64>) -> Option<f64> {
    match (used, limit) {
        (Some(used), Some(limit)) if limit > 0 => Some(used as f64 / limit as f64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{MemoryPoint, SampleClock, fraction, key, memory_options, value, value_at};

    fn point(t_secs: f64, rss_bytes: u64, used_bytes: Option<u64>) -> MemoryPoint {
        MemoryPoint {
            t_secs,
            rss_bytes,
            used_bytes,
            done: 0,
        }
    }

    #[test]
    fn keys_and_values_have_the_dataset_shape() {
        assert_eq!(key(42), "key:000000000042");
        let v = value(42, 16);
        assert_eq!(v.len(), 16);
        assert!(v.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(v, value(42, 16), "a value is a function of its index");
        assert_ne!(v, value(43, 16));
        assert_eq!(value(7, 100).len(), 100);
        assert_eq!(
            memory_options("32mb", "allkeys-lru").join(" "),
            "--maxmemory 32mb --maxmemory-policy allkeys-lru"
        );
    }

    #[test]
    fn the_clock_samples_on_a_grid_without_drift_or_bursts() {
        let ms = Duration::from_millis;
        let mut clock = SampleClock::new(ms(100));
        assert!(clock.take(ms(0)));
        assert_eq!(clock.next_due(), ms(100));
        assert!(!clock.take(ms(99)));
        // Late by 30 ms: the next is still due at 200, not at 230.
        assert!(clock.take(ms(130)));
        assert_eq!(clock.next_due(), ms(200));
        // Late by three ticks: one sample, then the grid again.
        assert!(clock.take(ms(520)));
        assert_eq!(clock.next_due(), ms(600));
        assert!(clock.take(ms(600)));
        assert_eq!(clock.next_due(), ms(700));
        // Sixty-one samples over 0..=6 s taken on time.
        let mut clock = SampleClock::new(ms(100));
        let taken = (0..=6000).filter(|&t| clock.take(ms(t))).count();
        assert_eq!(taken, 61);
    }

    #[test]
    fn value_at_takes_the_first_sample_at_or_after_the_time() {
        let series = [
            point(-0.2, 90, Some(80)),
            point(4.9, 60, Some(50)),
            point(5.03, 55, None),
            point(5.1, 50, Some(40)),
        ];
        assert_eq!(
            value_at(&series, 5.0, |p| Some(p.rss_bytes)),
            Some((5.03, 55))
        );
        assert_eq!(value_at(&series, 5.0, |p| p.used_bytes), None);
        assert_eq!(value_at(&series, -1.0, |p| p.used_bytes), Some((-0.2, 80)));
        assert_eq!(value_at(&series, 6.0, |p| Some(p.rss_bytes)), None);
        assert_eq!(fraction(Some(50), Some(200)), Some(0.25));
        assert_eq!(fraction(Some(50), Some(0)), None);
        assert_eq!(fraction(None, Some(1)), None);
    }
}
