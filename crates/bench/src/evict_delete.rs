//! The evict suite's first two scenarios: how much memory a server gives back after DEL of half
//! its keys (`delete-half`) or of all of them (`delete-all`), and how soon.
//!
//! ```text
//! fresh server, no maxmemory ─ VmRSS (empty)
//!   ─ SET key:%012d <16 random alphanumeric bytes> for i < N, 1000 per write
//!   ─ wait until VmRSS has not moved for 300 ms (at most 3 s): full VmRSS, full used_memory
//!   ─ DEL key(i) for every odd i (delete-half) or every i (delete-all), 1000 per write,
//!     each reply :1, sampling between writes on the 100 ms grid
//!   ─ from the last DEL reply (t = 0): VmRSS and used_memory every 100 ms for 6 s
//!   ─ DBSIZE == N - deleted
//! figures: VmRSS(t = 5 s) / full VmRSS, used_memory(t = 5 s) / full used_memory, the series
//! ```
//!
//! `VmRSS` is what the machine pays; `used_memory` is what the server's allocator says it holds.
//! The two part when the allocator keeps freed pages (jemalloc's dirty-page decay, redis-server's
//! default, returns them over ~10 s; a page with one live entry left in it cannot be returned
//! at all): a server that frees its entries but not its pages shows a low `used_memory` and a
//! high `VmRSS`. The reading at 5 s is the first sample at or after 5 s (its exact time is
//! kept), so a server too busy to answer `INFO` on time is read late, not early.
//!
//! densekv's targets: both ratios ≤ 0.60 after `delete-half` (half the entries gone, with some
//! slack for pages that keep a survivor), `VmRSS` ≤ 0.15 after `delete-all`.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::evict_server::{
    self, BATCH_LEN, Deadline, MemoryPoint, SAMPLE_INTERVAL, SampleClock, value_at,
};
use crate::server_proc::{ServerKind, ServerProcess};
use crate::server_resp::{Connection, Reply, encode};

/// Bytes of each value.
pub const VALUE_BYTES: usize = 16;

/// Which keys a scenario deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Deletion {
    /// Every odd index: half the keys, spread over every page.
    Half,
    /// Every key.
    All,
}

impl Deletion {
    pub const BOTH: [Self; 2] = [Self::Half, Self::All];

    pub fn name(self) -> &'static str {
        match self {
            Self::Half => "delete-half",
            Self::All => "delete-all",
        }
    }

    /// Whether the key of `index` is deleted.
    pub fn deletes(self, index: u64) -> bool {
        match self {
            Self::Half => index % 2 == 1,
            Self::All => true,
        }
    }

    /// How many of `n` keys are deleted.
    pub fn deleted(self, n: u64) -> u64 {
        match self {
            Self::Half => n / 2,
            Self::All => n,
        }
    }
}

/// The scenario's parameters.
#[derive(Debug, Clone, Copy)]
pub struct DeleteParams {
    /// Keys loaded.
    pub n: u64,
    /// How long the memory is sampled after the deletes.
    pub observe: Duration,
    /// When the figure is read, from the deletes' end.
    pub at: Duration,
}

/// One scenario on one server in one round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeleteSample {
    pub round: usize,
    pub server: ServerKind,
    pub deletion: Deletion,
    pub n: u64,
    pub deleted: u64,
    /// `VmRSS` of the fresh server.
    pub empty_rss_bytes: u64,
    /// After the load, once still.
    pub full_rss_bytes: u64,
    pub full_used_bytes: Option<u64>,
    pub load_secs: f64,
    pub delete_secs: f64,
    /// The reading at `at` (its actual time from the deletes' end, then the figures).
    pub at_secs: Option<f64>,
    pub rss_at_bytes: Option<u64>,
    pub used_at_bytes: Option<u64>,
    /// The figures: the readings at `at` over the full ones.
    pub rss_ratio: Option<f64>,
    pub used_ratio: Option<f64>,
    /// Samples during the deletes (t < 0) and after them.
    pub series: Vec<MemoryPoint>,
}

/// Runs `deletion` on a fresh `kind` server.
pub fn measure(
    kind: ServerKind,
    binary: &Path,
    deletion: Deletion,
    params: DeleteParams,
    round: usize,
    deadline: &Deadline,
) -> Result<DeleteSample, String> {
    let server = evict_server::start(kind, binary, &[])?;
    let mut connection = evict_server::connect(server.port)?;
    let empty_rss_bytes = server.rss_bytes();
    let clock = Instant::now();
    evict_server::load(&mut connection, params.n, VALUE_BYTES, deadline)?;
    let load_secs = clock.elapsed().as_secs_f64();
    let ms = Duration::from_millis;
    let full_rss_bytes = server.wait_quiet(ms(300), ms(200), ms(3000));
    let full_used_bytes = evict_server::used_memory(&mut connection)?;
    let (mut series, delete_secs) = delete(&server, &mut connection, deletion, params.n, deadline)?;
    let deleted = deletion.deleted(params.n);
    observe(
        &server,
        &mut connection,
        params.observe,
        deleted,
        &mut series,
        deadline,
    )?;
    let left = evict_server::dbsize(&mut connection)?;
    if left != params.n - deleted {
        return Err(format!(
            "DBSIZE is {left} after the deletes, not {}",
            params.n - deleted
        ));
    }
    let at = params.at.as_secs_f64();
    let rss_at = value_at(&series, at, |p| Some(p.rss_bytes));
    let used_at = value_at(&series, at, |p| p.used_bytes);
    Ok(DeleteSample {
        round,
        server: kind,
        deletion,
        n: params.n,
        deleted,
        empty_rss_bytes,
        full_rss_bytes,
        full_used_bytes,
        load_secs,
        delete_secs,
        at_secs: rss_at.map(|(t, _)| t),
        rss_at_bytes: rss_at.map(|(_, v)| v),
        used_at_bytes: used_at.map(|(_, v)| v),
        rss_ratio: rss_at.and_then(|(_, v)| evict_server::fraction(Some(v), Some(full_rss_bytes))),
        used_ratio: used_at.and_then(|(_, v)| evict_server::fraction(Some(v), full_used_bytes)),
        series,
    })
}

/// The deletes, with a sample whenever one is due between two writes. Returns the samples
/// (their times counted back from the last reply, so negative) and the deletes' seconds.
fn delete(
    server: &ServerProcess,
    connection: &mut Connection,
    deletion: Deletion,
    n: u64,
    deadline: &Deadline,
) -> Result<(Vec<MemoryPoint>, f64), String> {
    let mut series = Vec::new();
    let mut clock = SampleClock::new(SAMPLE_INTERVAL);
    let started = Instant::now();
    let mut encoded = Vec::new();
    let (mut start, mut sent) = (0, 0);
    while start < n {
        deadline.check("DEL")?;
        let elapsed = started.elapsed();
        if clock.take(elapsed) {
            let t = elapsed.as_secs_f64();
            series.push(evict_server::sample(server, connection, t, sent)?);
        }
        let end = (start + BATCH_LEN).min(n);
        encoded.clear();
        let mut count = 0;
        for index in (start..end).filter(|&i| deletion.deletes(i)) {
            encode(&["DEL", evict_server::key(index).as_str()], &mut encoded);
            count += 1;
        }
        let what = format!("DEL batch at {start}");
        let replies = evict_server::pipeline(connection, &encoded, count, &what)?;
        if let Some(bad) = replies.iter().find(|r| **r != Reply::Integer(1)) {
            return Err(format!("{what}: {bad}"));
        }
        sent += count;
        start = end;
    }
    let delete_secs = started.elapsed().as_secs_f64();
    for point in &mut series {
        point.t_secs -= delete_secs;
    }
    Ok((series, delete_secs))
}

/// Samples every [`SAMPLE_INTERVAL`] from now (t = 0) to `observe` inclusive, after `done` DELs.
fn observe(
    server: &ServerProcess,
    connection: &mut Connection,
    observe: Duration,
    done: u64,
    series: &mut Vec<MemoryPoint>,
    deadline: &Deadline,
) -> Result<(), String> {
    let mut clock = SampleClock::new(SAMPLE_INTERVAL);
    let started = Instant::now();
    while clock.next_due() <= observe {
        deadline.check("sampling after the deletes")?;
        thread::sleep(clock.next_due().saturating_sub(started.elapsed()));
        let elapsed = started.elapsed();
        if clock.take(elapsed) {
            let t = elapsed.as_secs_f64();
            series.push(evict_server::sample(server, connection, t, done)?);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Deletion;

    #[test]
    fn deletions_pick_their_keys() {
        let picked = |d: Deletion| (0..10).filter(|&i| d.deletes(i)).count() as u64;
        assert_eq!(picked(Deletion::Half), Deletion::Half.deleted(10));
        assert_eq!(picked(Deletion::All), Deletion::All.deleted(10));
        assert_eq!(Deletion::Half.deleted(1_000_001), 500_000);
        assert!(!Deletion::Half.deletes(0) && Deletion::Half.deletes(999_999));
        assert_eq!(
            (Deletion::Half.name(), Deletion::All.name()),
            ("delete-half", "delete-all")
        );
    }
}
