//! Loading the RDB file (Redis's `rdbLoad`, `loadDataFromDisk`): at startup, while clients are
//! already connected and get `-LOADING`, and for DEBUG RELOAD. The file is read through a
//! window, never whole; each window's records are parsed with no shard held, then stored with
//! the shards held only for that window, so INFO and the other commands allowed while loading
//! are served in between.
//!
//! ```text
//!  dir/dbfilename ──read──▶ window (1 MiB; doubled while one record does not fit)
//!        ──persist::rdb::Stream::feed──▶ records borrowing the window, one part per worker
//!        (part w: the keys of shards i with i % workers == w)
//!        ──workers (one thread per core, at most 4), each into its own shards, in batches of
//!          16 with their lookups prefetched──▶ shards (held for this window only)
//!  keys whose TTL has passed are skipped and counted, as a Redis master skips them
//! ```
//! Storing dominates a load (the page inserts), and shards share nothing, so a 2-core machine
//! loads 1M small keys in ~0.75 of the time one thread takes. A window's records cost ~90 B
//! each until they are stored (~3 MB for a 1 MiB window of small keys).
//! INFO persistence shows `loading:1` and the `loading_*` progress fields meanwhile, and the
//! log gets a progress line every second. `key-load-delay` (Redis's testing knob) sleeps per
//! key, between windows of 64 keys, with no shard held.

use crate::server::{Server, unix_ms};
use persist::rdb::Stream;
use persist::value::Value;
use std::borrow::Cow;
use std::fs::File;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use store::Shard;

/// Bytes of the file read at a time (a record larger than this grows the window).
const WINDOW_BYTES: usize = 1 << 20;
/// Keys stored per prefetched batch (`store_part`).
const LOAD_BATCH: usize = 16;
/// Records in a window below which storing them is not worth a thread per part.
const PARALLEL_RECORDS_MIN: usize = 4096;
/// Threads that store a window's records at most (each into its own shards).
const WORKERS_MAX: usize = 4;
/// Keys per window while `key-load-delay` slows the load.
const DELAYED_WINDOW_KEYS: usize = 64;

/// What INFO shows of a load in progress.
#[derive(Debug, Default)]
pub struct Progress {
    /// A load at startup is running: commands without the `loading` flag get `-LOADING`.
    pub loading: AtomicBool,
    pub start_secs: AtomicU64,
    pub total_bytes: AtomicU64,
    pub loaded_bytes: AtomicU64,
    /// The file's `used-mem` AUX field.
    pub rdb_used_mem: AtomicU64,
}

/// A key read from the file: its shard (hashed once), database, name, value, expiry (borrowing
/// the window's bytes where they are stored raw).
type Record<'a> = (usize, usize, Cow<'a, [u8]>, Value<'a>, Option<u64>);

/// Runs `f` with every shard held: the loader's only access to them, once per window.
pub type Hold<'h> = &'h mut dyn FnMut(&mut dyn FnMut(&mut [&mut Shard]));

/// Loads `dbfilename` from the working directory into the shards, if the file exists:
/// `Ok(None)` when there is none. `hold` gives the shards for each window; keys are added to
/// what is there (replacing a key of the same name).
pub fn load(server: &Server, hold: Hold<'_>) -> Result<Option<usize>, String> {
    let filename = server.config.read().dbfilename.clone();
    load_path(server, std::path::Path::new(&filename), hold)
}

/// Loads the RDB file at `path` (an AOF's base, or `dbfilename`) as `load` does.
pub fn load_path(
    server: &Server,
    path: &std::path::Path,
    hold: Hold<'_>,
) -> Result<Option<usize>, String> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let progress = &server.persistence.load;
    progress
        .start_secs
        .store(unix_ms() / 1000, Ordering::Relaxed);
    progress.loaded_bytes.store(0, Ordering::Relaxed);
    progress.rdb_used_mem.store(0, Ordering::Relaxed);
    let total = file.metadata().map_or(0, |m| m.len());
    progress.total_bytes.store(total, Ordering::Relaxed);
    let databases = server.config.read().databases;
    let mut load = Load {
        server,
        stream: Stream::new(databases),
        now_ms: unix_ms(),
        expired: 0,
        failed: None,
        workers: workers(server),
        logged_aux: false,
        last_log: Instant::now(),
    };
    load.run(&mut file, hold)?;
    let stored = load.stream.keys() - load.expired;
    let expired = load.expired;
    let loaded = load.stream.finish().map_err(|e| e.to_string())?;
    crate::scripting::functions::install(server, &loaded.functions)?;
    crate::log::notice(&format!(
        "Done loading RDB, keys loaded: {stored}, keys expired: {expired}."
    ));
    let state = &server.persistence;
    state
        .last_load_keys_loaded
        .store(stored as u64, Ordering::Relaxed);
    state
        .last_load_keys_expired
        .store(expired as u64, Ordering::Relaxed);
    Ok(Some(stored))
}

/// A load under way.
struct Load<'s> {
    server: &'s Server,
    stream: Stream,
    now_ms: u64,
    expired: usize,
    /// The first key that could not be stored.
    failed: Option<store::StoreError>,
    /// Threads storing each window's records (1 while `key-load-delay` slows the load).
    workers: usize,
    logged_aux: bool,
    last_log: Instant,
}

impl Load<'_> {
    /// Reads the file window by window until the stream ends.
    fn run(&mut self, file: &mut File, hold: Hold<'_>) -> Result<(), String> {
        let delay = self.server.config.read().key_load_delay;
        let max_keys = if delay == 0 {
            usize::MAX
        } else {
            DELAYED_WINDOW_KEYS
        };
        let mut window = vec![0u8; WINDOW_BYTES];
        let (mut filled, mut eof) = (0, false);
        while !self.stream.ended() {
            while !eof && filled < window.len() {
                let n = file
                    .read(&mut window[filled..])
                    .map_err(|e| e.to_string())?;
                eof = n == 0;
                filled += n;
            }
            let keys_before = self.stream.keys();
            let consumed = self.window(&window[..filled], eof, max_keys, hold)?;
            if let Some(e) = self.failed.take() {
                return Err(e.to_string());
            }
            self.report(consumed);
            window.copy_within(consumed..filled, 0);
            filled -= consumed;
            if consumed == 0 && filled == window.len() {
                window.resize(window.len() * 2, 0);
            }
            let keys = (self.stream.keys() - keys_before) as u64;
            std::thread::sleep(Duration::from_micros(crate::persistence::debug_delay_us(
                delay, keys,
            )));
        }
        Ok(())
    }

    /// Parses the whole records of one window, then stores them with the shards held, in
    /// parallel over disjoint shards; returns the bytes consumed.
    fn window(
        &mut self,
        bytes: &[u8],
        last: bool,
        max_keys: usize,
        hold: Hold<'_>,
    ) -> Result<usize, String> {
        let workers = self.workers;
        // Room for the most records the window can hold (a record takes at least a type byte
        // and two one-byte strings, and rarely fewer than 32 bytes), so the parts never grow by
        // copying; pages never written are never touched.
        let room = bytes.len().min(max_keys.saturating_mul(32)) / 32 / workers + 16;
        let mut parts: Vec<Vec<Record<'_>>> =
            (0..workers).map(|_| Vec::with_capacity(room)).collect();
        let Load {
            server,
            stream,
            now_ms,
            expired,
            failed,
            ..
        } = self;
        let consumed = stream
            .feed(bytes, last, max_keys, |db, key, value, expire_at| {
                if expire_at.is_some_and(|at| at <= *now_ms) {
                    *expired += 1;
                    return;
                }
                let shard = server.shard_of(&key);
                parts[shard % workers].push((shard, db, key, value, expire_at));
            })
            .map_err(|e| e.to_string())?;
        hold(&mut |shards| store_parts(shards, &parts, failed));
        Ok(consumed)
    }

    /// Progress: INFO's fields, the AUX lines once, a log line a second.
    fn report(&mut self, consumed: usize) {
        let progress = &self.server.persistence.load;
        let loaded = progress
            .loaded_bytes
            .fetch_add(consumed as u64, Ordering::Relaxed)
            + consumed as u64;
        if !self.logged_aux && (self.stream.keys() > 0 || self.stream.ended()) {
            self.log_aux();
            self.logged_aux = true;
        }
        if self.last_log.elapsed() >= Duration::from_secs(1) && !self.stream.ended() {
            self.last_log = Instant::now();
            let total = progress.total_bytes.load(Ordering::Relaxed).max(1);
            crate::log::notice(&format!(
                "Loading RDB: {} keys, {loaded} of {total} bytes ({:.1}%)",
                self.stream.keys(),
                loaded as f64 * 100.0 / total as f64
            ));
        }
    }

    /// Redis's log lines for the file's AUX fields.
    fn log_aux(&self) {
        let aux = |name: &[u8]| {
            self.stream
                .aux()
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        };
        if let Some(v) = aux(b"redis-ver") {
            crate::log::notice(&format!("Loading RDB produced by version {v}"));
        }
        if let Some(ctime) = aux(b"ctime").and_then(|c| c.parse::<u64>().ok()) {
            let age = (self.now_ms / 1000).saturating_sub(ctime);
            crate::log::notice(&format!("RDB age {age} seconds"));
        }
        if let Some(mem) = aux(b"used-mem").and_then(|m| m.parse::<u64>().ok()) {
            let progress = &self.server.persistence.load;
            progress.rdb_used_mem.store(mem, Ordering::Relaxed);
            crate::log::notice(&format!(
                "RDB memory usage when created {:.2} Mb",
                mem as f64 / 1024.0 / 1024.0
            ));
        }
    }
}

/// Stores each part's records, part `w` holding the records of the shards `i` with
/// `i % parts.len() == w`: on a thread of its own each when there are enough records to be
/// worth it. The first failure is kept in `failed`.
fn store_parts(
    shards: &mut [&mut Shard],
    parts: &[Vec<Record<'_>>],
    failed: &mut Option<store::StoreError>,
) {
    let workers = parts.len();
    let mut groups: Vec<Vec<&mut Shard>> = (0..workers).map(|_| Vec::new()).collect();
    for (i, shard) in shards.iter_mut().enumerate() {
        groups[i % workers].push(&mut **shard);
    }
    let mut fails: Vec<Option<store::StoreError>> = vec![None; workers];
    let records: usize = parts.iter().map(Vec::len).sum();
    if workers == 1 || records < PARALLEL_RECORDS_MIN {
        for ((group, part), fail) in groups.iter_mut().zip(parts).zip(&mut fails) {
            store_part(group, workers, part, fail);
        }
    } else {
        std::thread::scope(|scope| {
            for ((group, part), fail) in groups.iter_mut().zip(parts).zip(&mut fails) {
                scope.spawn(move || store_part(group, workers, part, fail));
            }
        });
    }
    if failed.is_none() {
        *failed = fails.into_iter().flatten().next();
    }
}

/// Stores `records` into `group`, the shards `i` with `i % workers` equal to the part's index
/// (shard `i` is `group[i / workers]`), in batches whose lookups are prefetched stage by stage
/// first, as a pipeline's are (`net/prefetch.rs`), so the cache misses of one key overlap the
/// others'. (A 1M-key load spent half its time in the lookup's misses and the page's memmove
/// without it.)
fn store_part(
    group: &mut [&mut Shard],
    workers: usize,
    records: &[Record<'_>],
    failed: &mut Option<store::StoreError>,
) {
    for batch in records.chunks(LOAD_BATCH) {
        for stage in 0..3 {
            for (shard, db, key, ..) in batch {
                group[shard / workers].prefetch(*db, key, stage);
            }
        }
        for (shard, db, key, value, expire_at) in batch {
            let shard = &mut *group[shard / workers];
            if let Err(e) = persist::value::store(value, shard, *db, key, *expire_at)
                && failed.is_none()
            {
                *failed = Some(e);
            }
        }
    }
}

/// Threads to store a window with: the machine's cores, at most `WORKERS_MAX` and the shard
/// count; 1 while `key-load-delay` is set.
fn workers(server: &Server) -> usize {
    if server.config.read().key_load_delay != 0 {
        return 1;
    }
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(WORKERS_MAX)
        .min(server.shard_count())
}

/// Loads the shards DEBUG RELOAD holds.
pub fn load_held(server: &Server, shards: &mut [&mut Shard]) -> Result<Option<usize>, String> {
    load(server, &mut |f| f(shards))
}

/// Startup (Redis's `loadDataFromDisk`): loads the RDB file if there is one, with
/// `loading:1` meanwhile; each window holds every shard.
pub fn load_at_startup(server: &Server) -> Result<(), String> {
    let started = Instant::now();
    let progress = &server.persistence.load;
    let mut hold = |f: &mut dyn FnMut(&mut [&mut Shard])| {
        let mut guards: Vec<_> = (0..server.shard_count())
            .map(|i| server.lock_shard(i))
            .collect();
        let mut shards: Vec<&mut Shard> = guards.iter_mut().map(|g| &mut **g).collect();
        f(&mut shards);
    };
    let loaded = load(server, &mut hold);
    progress.loading.store(false, Ordering::Relaxed);
    let loaded = loaded.map_err(|e| format!("Fatal error loading the DB: {e}. Exiting."))?;
    if loaded.is_some() {
        crate::log::notice(&format!(
            "DB loaded from disk: {:.3} seconds",
            started.elapsed().as_secs_f64()
        ));
    }
    Ok(())
}
