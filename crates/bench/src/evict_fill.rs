//! The evict suite's third scenario (`lru-fill`): writing far past `maxmemory` under
//! `allkeys-lru`, where every write must succeed by evicting older keys, memory must stay at the
//! limit, and the newest keys must be the ones kept.
//!
//! ```text
//! fresh server --maxmemory 32mb --maxmemory-policy allkeys-lru
//!   for each batch of 100:  SET key:%012d <100 random alphanumeric bytes>   (distinct keys)
//!                           count the error replies (-OOM ...)
//!                           INFO memory: used_memory, the maximum kept
//!                           VmRSS and used_memory on the 100 ms grid, for the chart
//!   after 1.5M SETs:  EXISTS for each of the last 10,000 keys written
//!                     DBSIZE, INFO stats evicted_keys, VmRSS
//! figures: failed writes; max used_memory / maxmemory; the last keys' surviving fraction;
//!          DBSIZE (densekv / redis: how many more keys densekv keeps in the same bytes)
//! ```
//!
//! `used_memory` is read between batches, so a server that overshoots inside a batch of 100 and
//! evicts back before answering `INFO` is not caught; one hundred 100-byte SETs are ~15 KB, far
//! below the 5% slack of the target. The limit is read back from `INFO memory` (`maxmemory`),
//! so `32mb` means whatever the server made of it (both: 33,554,432 bytes).
//!
//! densekv's targets: no failed write; max used_memory / maxmemory ≤ 1.05; the most recent keys
//! survive (≥ 0.99 of the last 10,000). The keys held are reported for reference: the value's
//! 100 random bytes are most of each key's cost here (redis-server holds ~158,000 keys in 32 MB,
//! ~212 bytes a key; densekv ~139 bytes a key in `used_memory` without a limit), so the
//! threefold figure of the 16-byte dataset is not expected; the Zipf scenario measures that.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::evict_server::{self, Deadline, MemoryPoint, SAMPLE_INTERVAL, SampleClock};
use crate::server_proc::ServerKind;
use crate::server_resp::{Reply, encode};

/// The limit, as both servers' option spells it.
pub const MAXMEMORY: &str = "32mb";
pub const POLICY: &str = "allkeys-lru";
/// Bytes of each value.
pub const VALUE_BYTES: usize = 100;
/// SETs per pipelined write; `INFO memory` is read after each.
pub const BATCH_LEN: u64 = 100;
/// The last keys written whose survival is checked.
pub const RECENT_WINDOW: u64 = 10_000;

/// One run on one server in one round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FillSample {
    pub round: usize,
    pub server: ServerKind,
    pub sets: u64,
    /// Error replies to the SETs, and the first one's text.
    pub failed_writes: u64,
    pub first_error: Option<String>,
    /// `maxmemory` of `INFO memory`.
    pub maxmemory_bytes: Option<u64>,
    /// The highest `used_memory` read between batches, and over the limit.
    pub max_used_bytes: Option<u64>,
    pub max_used_ratio: Option<f64>,
    /// How many of the last `recent_checked` keys written still exist.
    pub recent_checked: u64,
    pub recent_present: u64,
    pub recent_fraction: Option<f64>,
    pub dbsize: u64,
    pub evicted_keys: Option<u64>,
    pub final_rss_bytes: u64,
    pub fill_secs: f64,
    /// VmRSS and used_memory against SETs sent, on the 100 ms grid.
    pub series: Vec<MemoryPoint>,
}

/// What the fill loop gathers.
#[derive(Debug, Default)]
struct Fill {
    failed_writes: u64,
    first_error: Option<String>,
    max_used_bytes: Option<u64>,
    series: Vec<MemoryPoint>,
}

/// Writes `sets` keys on a fresh `kind` server under the limit.
pub fn measure(
    kind: ServerKind,
    binary: &Path,
    sets: u64,
    round: usize,
    deadline: &Deadline,
) -> Result<FillSample, String> {
    let options = evict_server::memory_options(MAXMEMORY, POLICY);
    let server = evict_server::start(kind, binary, &options)?;
    let mut connection = evict_server::connect(server.port)?;
    let maxmemory_bytes = evict_server::maxmemory(&mut connection)?;
    let started = Instant::now();
    let mut fill = Fill::default();
    let mut clock = SampleClock::new(SAMPLE_INTERVAL);
    let mut encoded = Vec::new();
    let mut start = 0;
    while start < sets {
        deadline.check("lru-fill SETs")?;
        let end = (start + BATCH_LEN).min(sets);
        encoded.clear();
        for index in start..end {
            let (k, v) = (
                evict_server::key(index),
                evict_server::value(index, VALUE_BYTES),
            );
            encode(&["SET", k.as_str(), v.as_str()], &mut encoded);
        }
        let what = format!("SET batch at {start}");
        for reply in evict_server::pipeline(&mut connection, &encoded, end - start, &what)? {
            match reply {
                r if evict_server::is_ok(&r) => {}
                Reply::Error(text) => {
                    fill.failed_writes += 1;
                    fill.first_error.get_or_insert(text);
                }
                other => return Err(format!("{what}: {other}")),
            }
        }
        let elapsed = started.elapsed();
        if clock.take(elapsed) {
            let point = evict_server::sample(&server, &mut connection, elapsed.as_secs_f64(), end)?;
            fill.max_used_bytes = fill.max_used_bytes.max(point.used_bytes);
            fill.series.push(point);
        } else {
            let used = evict_server::used_memory(&mut connection)?;
            fill.max_used_bytes = fill.max_used_bytes.max(used);
        }
        start = end;
    }
    let fill_secs = started.elapsed().as_secs_f64();
    let last = evict_server::sample(&server, &mut connection, fill_secs, sets)?;
    fill.max_used_bytes = fill.max_used_bytes.max(last.used_bytes);
    fill.series.push(last);
    let recent_checked = RECENT_WINDOW.min(sets);
    let recent = sets - recent_checked..sets;
    let recent_present = evict_server::count_existing(&mut connection, recent, deadline)?;
    Ok(FillSample {
        round,
        server: kind,
        sets,
        failed_writes: fill.failed_writes,
        first_error: fill.first_error,
        maxmemory_bytes,
        max_used_bytes: fill.max_used_bytes,
        max_used_ratio: evict_server::fraction(fill.max_used_bytes, maxmemory_bytes),
        recent_checked,
        recent_present,
        recent_fraction: (recent_checked > 0)
            .then(|| recent_present as f64 / recent_checked as f64),
        dbsize: evict_server::dbsize(&mut connection)?,
        evicted_keys: evict_server::evicted_keys(&mut connection)?,
        final_rss_bytes: server.rss_bytes(),
        fill_secs,
        series: fill.series,
    })
}
