//! The evict suite's fourth scenario (`zipf`): a server used as a cache too small for its keys,
//! where the eviction policy decides the miss ratio. Run under `allkeys-lfu`, then under
//! `allkeys-lru`, on both servers, with the same key stream.
//!
//! ```text
//! fresh server --maxmemory 16mb --maxmemory-policy allkeys-lfu|allkeys-lru
//!   stream: ranks of Zipf(0.99) over 2M keys (evict_zipf.rs), seed fixed per round
//!   per batch of 64 ranks:  GET key(rank - 1) × 64            one pipelined write
//!                           SET key(rank - 1) <16 bytes> for each nil reply   a second one
//!   every 16 batches:       INFO memory used_memory, the maximum kept
//!   2M requests of warm-up, then 3M measured: misses / GETs
//! figures: the measured miss ratio per policy (densekv / redis), max used_memory / maxmemory
//! ```
//!
//! A request is one GET, and a miss costs one SET more, the read-through pattern of a cache in
//! front of a database. The warm-up fills the cache and lets the policy learn the stream before
//! anything is counted. The ratio pairs the two servers of a round, which saw the same stream;
//! rounds use different seeds. With 16 MB, redis-server holds about 130,000 of the 2M keys
//! (6.5%); the 130,000 most frequent get 81% of a Zipf(0.99) stream's requests, so even a
//! policy that knew the ranks would miss 19% there. A denser server holds more of the head at
//! the same limit (400,000 keys get 89%), and a better policy keeps the head rather than the
//! most recent.
//!
//! densekv's target under `allkeys-lfu`: miss ratio ≤ 0.75 × redis-server's, counted as met
//! only when its max used_memory / maxmemory ≤ 1.05 (a server that ignores the limit keeps
//! every key and misses only on first sight). `allkeys-lru` is reported beside it.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::evict_server::{self, Deadline};
use crate::evict_zipf::Zipf;
use crate::server_proc::ServerKind;
use crate::server_resp::{Reply, encode};

/// The policies, in running order.
pub const POLICIES: [&str; 2] = ["allkeys-lfu", "allkeys-lru"];
pub const MAXMEMORY: &str = "16mb";
/// Bytes of each value.
pub const VALUE_BYTES: usize = 16;
/// GETs per pipelined write.
pub const BATCH_LEN: u64 = 64;
/// Batches between two reads of `used_memory`.
pub const POLL_BATCHES: u64 = 16;
pub const EXPONENT: f64 = 0.99;
/// The stream's seed in round r is `SEED + r`.
const SEED: u64 = 0x21BF_0000_0000_0000;

/// The scenario's parameters.
#[derive(Debug, Clone, Copy)]
pub struct CacheParams {
    /// Distinct keys of the stream.
    pub keys: u64,
    /// Requests before the counting starts, and counted.
    pub warmup: u64,
    pub requests: u64,
}

/// One policy on one server in one round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CacheSample {
    pub round: usize,
    pub server: ServerKind,
    pub policy: &'static str,
    pub keys: u64,
    pub warmup: u64,
    pub requests: u64,
    /// nil replies to the measured GETs, over the measured GETs.
    pub misses: u64,
    pub miss_ratio: f64,
    /// Error replies to the SETs after a miss (warm-up included).
    pub failed_writes: u64,
    pub maxmemory_bytes: Option<u64>,
    pub max_used_bytes: Option<u64>,
    pub max_used_ratio: Option<f64>,
    pub dbsize: u64,
    pub evicted_keys: Option<u64>,
    /// Measured requests per second (GETs, the SETs they cost included in the time).
    pub requests_per_sec: f64,
}

/// Counts of one phase of the stream.
#[derive(Debug, Default, Clone, Copy)]
struct Phase {
    gets: u64,
    misses: u64,
    failed_writes: u64,
    max_used_bytes: Option<u64>,
}

/// Runs the stream of `round` under `policy` on a fresh `kind` server.
pub fn measure(
    kind: ServerKind,
    binary: &Path,
    policy: &'static str,
    params: CacheParams,
    round: usize,
    deadline: &Deadline,
) -> Result<CacheSample, String> {
    let options = evict_server::memory_options(MAXMEMORY, policy);
    let server = evict_server::start(kind, binary, &options)?;
    let mut connection = evict_server::connect(server.port)?;
    let maxmemory_bytes = evict_server::maxmemory(&mut connection)?;
    let mut zipf = Zipf::new(params.keys, EXPONENT, SEED + round as u64);
    let warm = run_phase(&mut connection, &mut zipf, params.warmup, deadline)?;
    let started = Instant::now();
    let measured = run_phase(&mut connection, &mut zipf, params.requests, deadline)?;
    let secs = started.elapsed().as_secs_f64();
    let last_used = evict_server::used_memory(&mut connection)?;
    let max_used_bytes = warm
        .max_used_bytes
        .max(measured.max_used_bytes)
        .max(last_used);
    Ok(CacheSample {
        round,
        server: kind,
        policy,
        keys: params.keys,
        warmup: params.warmup,
        requests: measured.gets,
        misses: measured.misses,
        miss_ratio: if measured.gets == 0 {
            0.0
        } else {
            measured.misses as f64 / measured.gets as f64
        },
        failed_writes: warm.failed_writes + measured.failed_writes,
        maxmemory_bytes,
        max_used_bytes,
        max_used_ratio: evict_server::fraction(max_used_bytes, maxmemory_bytes),
        dbsize: evict_server::dbsize(&mut connection)?,
        evicted_keys: evict_server::evicted_keys(&mut connection)?,
        requests_per_sec: if secs > 0.0 {
            measured.gets as f64 / secs
        } else {
            0.0
        },
    })
}

/// `requests` GETs of the stream, with a SET after each miss.
fn run_phase(
    connection: &mut crate::server_resp::Connection,
    zipf: &mut Zipf,
    requests: u64,
    deadline: &Deadline,
) -> Result<Phase, String> {
    let mut phase = Phase::default();
    let mut indexes = Vec::with_capacity(BATCH_LEN as usize);
    let (mut gets, mut sets) = (Vec::new(), Vec::new());
    let mut batch = 0u64;
    while phase.gets < requests {
        deadline.check("zipf stream")?;
        let count = BATCH_LEN.min(requests - phase.gets);
        indexes.clear();
        indexes.extend((0..count).map(|_| zipf.sample() - 1));
        gets.clear();
        for &index in &indexes {
            encode(&["GET", evict_server::key(index).as_str()], &mut gets);
        }
        let replies = evict_server::pipeline(connection, &gets, count, "GET batch")?;
        sets.clear();
        let mut missed = 0;
        for (&index, reply) in indexes.iter().zip(&replies) {
            match reply {
                Reply::Bulk(None) => {
                    let (k, v) = (
                        evict_server::key(index),
                        evict_server::value(index, VALUE_BYTES),
                    );
                    encode(&["SET", k.as_str(), v.as_str()], &mut sets);
                    missed += 1;
                }
                Reply::Bulk(Some(_)) => {}
                other => return Err(format!("GET {}: {other}", evict_server::key(index))),
            }
        }
        for reply in evict_server::pipeline(connection, &sets, missed, "SET batch")? {
            match reply {
                r if evict_server::is_ok(&r) => {}
                Reply::Error(_) => phase.failed_writes += 1,
                other => return Err(format!("SET after a miss: {other}")),
            }
        }
        phase.gets += count;
        phase.misses += missed;
        batch += 1;
        if batch.is_multiple_of(POLL_BATCHES) {
            let used = evict_server::used_memory(connection)?;
            phase.max_used_bytes = phase.max_used_bytes.max(used);
        }
    }
    Ok(phase)
}
