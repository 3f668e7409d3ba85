//! The types suite's bitmap scenario: one key holding a bitmap of 10⁸ bits (12,500,000 bytes),
//! built three ways on a fresh server each, then its resident memory and `BITCOUNT` over the
//! whole key.
//!
//! ```text
//! sparse  SETBIT bitmap 99999999 1, then SETBIT bitmap <o> 1 at 100,000 offsets o drawn
//!         uniformly below 10⁸ (seed fixed): every reply :0, or :1 for a repeated offset
//! dense   SETRANGE bitmap <o> <65,536 random bytes> for o = 0, 65536, … up to 12,500,000
//!         (the last chunk shorter): reply :<o + chunk length>
//! growth  SETBIT bitmap <k·32768> 1 for k = 0 … 3051 (one bit per 4 KiB page, each SETBIT
//!         lengthening the string by 4 KiB), then SETBIT bitmap 99999999 1: every reply :0
//! warm-up the build's first 50 commands, then DEL bitmap (types_driver: first-use costs)
//! then    STRLEN bitmap → :12500000 (skipped if refused), BITCOUNT bitmap → the bits set,
//!         then BITCOUNT bitmap N times, one at a time: ms per call
//! ```
//!
//! Why the sparse build sets bit 99,999,999 *first*: the key has its final length (12.5 MB, of
//! which 0.8 % of the bytes are non-zero) from the first command, so the figure compares how
//! the two servers hold a mostly-zero bitmap of a given length, not how they grow one — growth
//! is the third build, where each SETBIT extends the string by one page (3,053 extensions:
//! a server that copied the whole string on each would copy ~19 GB). Setting the last bit last
//! would have changed little anyway: the largest of the first ten random offsets is already
//! above 9·10⁷ on average.
//!
//! The dense build writes random bytes (about half the bits set) with SETRANGE rather than
//! SETBIT: 10⁸ SETBITs would take minutes per server. All three loads are pipelined in batches
//! of at most 1,000 commands or 1 MiB, and every reply is checked; BITCOUNT must equal the bits
//! the harness set (a server that answers fast and wrong fails the measurement).

use std::collections::HashSet;
use std::time::Duration;

use clap::ValueEnum;
use serde::Serialize;

use crate::rng::SplitMix64;
use crate::server_proc::ServerProcess;
use crate::server_resp::Reply;
use crate::stats::median;
use crate::types_driver::{
    MeasureError, MemoryDelta, Step, ask, measure_load, open, run_steps, time_calls,
};

/// The bitmap's length in bits…
pub const BITS: u64 = 100_000_000;
/// …and in bytes.
pub const BYTES: u64 = BITS / 8;
/// The random offsets of the sparse build.
pub const SPARSE_OFFSETS: u64 = 100_000;
/// The growth build's step: one bit per 4 KiB page.
pub const GROWTH_STEP_BITS: u64 = 8 * 4096;
/// The dense build's SETRANGE chunk.
pub const DENSE_CHUNK_BYTES: u64 = 64 * 1024;
/// The one key every build writes.
pub const KEY: &str = "bitmap";
const SPARSE_SEED: u64 = 0x5e7b_1700;
const DENSE_SEED: u64 = 0xde45_e000;

/// How the bitmap is built; the value of `--bitmap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BitmapBuild {
    /// The last bit, then 100,000 random bits.
    Sparse,
    /// Every byte written with random bytes by SETRANGE.
    Dense,
    /// One bit per 4 KiB page at increasing offsets, then the last bit.
    Growth,
}

impl BitmapBuild {
    pub const ALL: [Self; 3] = [Self::Sparse, Self::Dense, Self::Growth];

    pub fn name(self) -> &'static str {
        match self {
            Self::Sparse => "sparse",
            Self::Dense => "dense",
            Self::Growth => "growth",
        }
    }

    /// The load's commands, each with its reply, and the bits they set.
    pub fn steps(self) -> (Vec<Step>, u64) {
        match self {
            Self::Sparse => sparse_steps(),
            Self::Dense => dense_steps(),
            Self::Growth => growth_steps(),
        }
    }
}

fn setbit(offset: u64, reply: i64) -> Step {
    Step::new(&["SETBIT", KEY, &offset.to_string(), "1"], reply)
}

fn sparse_steps() -> (Vec<Step>, u64) {
    let mut rng = SplitMix64::new(SPARSE_SEED);
    let mut set = HashSet::with_capacity(SPARSE_OFFSETS as usize + 1);
    set.insert(BITS - 1);
    let mut steps = vec![setbit(BITS - 1, 0)];
    for _ in 0..SPARSE_OFFSETS {
        let offset = rng.below(BITS);
        let was_set = !set.insert(offset);
        steps.push(setbit(offset, i64::from(was_set)));
    }
    (steps, set.len() as u64)
}

fn dense_steps() -> (Vec<Step>, u64) {
    let mut rng = SplitMix64::new(DENSE_SEED);
    let mut bits = 0;
    let mut steps = Vec::new();
    let mut offset = 0;
    while offset < BYTES {
        let len = DENSE_CHUNK_BYTES.min(BYTES - offset) as usize;
        let mut chunk = Vec::with_capacity(len + 8);
        while chunk.len() < len {
            chunk.extend_from_slice(&rng.next_u64().to_le_bytes());
        }
        chunk.truncate(len);
        bits += chunk.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
        let offset_text = offset.to_string();
        let args: [&[u8]; 4] = [b"SETRANGE", KEY.as_bytes(), offset_text.as_bytes(), &chunk];
        steps.push(Step::new(&args, (offset + len as u64) as i64));
        offset += len as u64;
    }
    (steps, bits)
}

fn growth_steps() -> (Vec<Step>, u64) {
    let mut steps: Vec<Step> = (0..BITS.div_ceil(GROWTH_STEP_BITS))
        .map(|k| setbit(k * GROWTH_STEP_BITS, 0))
        .collect();
    steps.push(setbit(BITS - 1, 0));
    let bits = steps.len() as u64;
    (steps, bits)
}

/// One bitmap measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BitmapParams {
    pub build: BitmapBuild,
    /// BITCOUNT calls timed.
    pub bitcount_calls: usize,
    /// The least wait between the load and the second memory reading.
    pub settle: Duration,
}

/// Its result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BitmapResult {
    /// Commands of the load.
    pub commands: u64,
    #[serde(flatten)]
    pub memory: MemoryDelta,
    /// `STRLEN bitmap`; `None` when the server refuses STRLEN on it.
    pub strlen_bytes: Option<u64>,
    /// `BITCOUNT bitmap`, equal to the bits the load set.
    pub bits_set: u64,
    pub bitcount_calls: usize,
    /// The median and the slowest BITCOUNT call, ms.
    pub bitcount_ms: f64,
    pub bitcount_max_ms: f64,
}

impl BitmapResult {
    /// BITCOUNT calls a second, from the median call.
    pub fn bitcount_per_sec(&self) -> Option<f64> {
        (self.bitcount_ms > 0.0).then(|| 1e3 / self.bitcount_ms)
    }
}

/// Builds the bitmap in `server` (fresh), reads its memory, checks it and times BITCOUNT.
pub fn measure(server: &ServerProcess, params: BitmapParams) -> Result<BitmapResult, MeasureError> {
    let (steps, bits) = params.build.steps();
    let ((), memory) = measure_load(server, params.settle, (&steps, KEY), |c| {
        run_steps(c, &steps)
    })?;
    let mut connection = open(server.port, "BITCOUNT")?;
    let strlen_bytes = match ask(&mut connection, &["STRLEN", KEY]) {
        Ok(Reply::Integer(n)) if n as u64 == BYTES => Some(BYTES),
        Ok(other) => {
            return Err(MeasureError::Failed(format!(
                "STRLEN {KEY} replied {other}, expected :{BYTES}"
            )));
        }
        Err(MeasureError::Refused(_)) => None,
        Err(failed) => return Err(failed),
    };
    let expected = bits as i64;
    let check = |reply: &Reply| match reply {
        Reply::Integer(n) if *n == expected => Ok(()),
        other => Err(format!("replied {other}, expected :{expected}")),
    };
    // The first call checks the count before anything is timed (and pages the key in).
    time_calls(&mut connection, &["BITCOUNT", KEY], 1, check)?;
    let times_ms = time_calls(
        &mut connection,
        &["BITCOUNT", KEY],
        params.bitcount_calls.max(1),
        check,
    )?;
    Ok(BitmapResult {
        commands: steps.len() as u64,
        memory,
        strlen_bytes,
        bits_set: bits,
        bitcount_calls: times_ms.len(),
        bitcount_ms: median(&times_ms).unwrap_or(0.0),
        bitcount_max_ms: times_ms.iter().copied().fold(0.0, f64::max),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::{BITS, BYTES, BitmapBuild, BitmapParams, KEY, measure};
    use crate::server_proc::{ServerKind, ServerProcess};

    #[test]
    fn the_builds_reach_the_last_bit_with_the_replies_they_expect() {
        let (sparse, bits) = BitmapBuild::Sparse.steps();
        assert_eq!(sparse.len(), 100_001);
        assert_eq!(sparse[0].args[2], b"99999999");
        let repeats = sparse.iter().filter(|s| s.reply == Some(1)).count() as u64;
        assert_eq!(bits + repeats, 100_001);
        assert!(repeats < 200, "{repeats} repeated offsets");

        let (dense, bits) = BitmapBuild::Dense.steps();
        let last = dense.last().unwrap();
        assert_eq!(last.reply, Some(BYTES as i64));
        assert_eq!(dense.len(), BYTES.div_ceil(65_536) as usize);
        let half = BITS / 2;
        assert!(bits.abs_diff(half) < half / 1000, "{bits} bits set");

        let (growth, bits) = BitmapBuild::Growth.steps();
        assert_eq!((growth.len(), bits), (3053, 3053));
        assert_eq!(growth[3051].args[2], b"99975168");
        assert!(
            growth
                .iter()
                .all(|s| s.reply == Some(0) && s.args[1] == KEY.as_bytes())
        );
    }

    /// The growth build (the quickest) against a redis-server this test starts.
    #[test]
    fn measures_a_real_redis_server() {
        let server = ServerProcess::start(ServerKind::Redis, Path::new("redis-server"))
            .expect("redis-server starts");
        let params = BitmapParams {
            build: BitmapBuild::Growth,
            bitcount_calls: 3,
            settle: Duration::ZERO,
        };
        let result = measure(&server, params).unwrap();
        assert_eq!((result.bits_set, result.strlen_bytes), (3053, Some(BYTES)));
        assert!(result.memory.rss_delta_bytes() > 10e6, "{result:?}");
        assert!(result.bitcount_ms > 0.0 && result.bitcount_per_sec().unwrap() > 1.0);
    }
}
