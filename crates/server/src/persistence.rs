//! The RDB file of a running server (Redis's `rdbSave`, `rdbLoad`, `prepareForShutdown`): SAVE,
//! the save at shutdown, DEBUG RELOAD and FLUSHALL's save write the whole keyspace with
//! `persist::rdb`, and startup loads it back. The file format is `persist`'s; this file owns the
//! file system side and the counters INFO persistence shows.
//!
//! ```text
//!  save:  all shards locked ─▶ temp-<pid>.rdb in `dir` (1 MiB buffered, record by record)
//!         ─▶ fsync ─▶ rename to `dbfilename` ─▶ fsync of the directory
//!  load:  `dir`/`dbfilename` read whole ─▶ persist::rdb::read ─▶ each key into its shard
//!         (keys whose TTL has passed are skipped, as a Redis master skips them)
//! ```
//! A save holds every shard's lock from start to end, so the file is the dataset at one
//! instant, and a client's write waits for it: this is SAVE's blocking contract. A crash at any
//! point leaves the previous file whole (the rename is the commit). The background save
//! (BGSAVE, and the `save` points that trigger it) is `bgsave.rs`; it shares the options, the
//! commit and the incremental fsync written here.

use crate::server::{Server, unix_ms};
use persist::rdb::{self, SaveOptions};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use store::Shard;

/// What INFO persistence and LASTSAVE report.
#[derive(Debug, Default)]
pub struct State {
    /// Unix seconds of the last successful save (startup time until one happens).
    pub last_save_secs: AtomicU64,
    /// The dirty counter at the last successful save.
    pub dirty_at_save: AtomicU64,
    /// Saves attempted (`rdb_saves`).
    pub saves: AtomicU64,
    /// Keys the last load stored and skipped as expired (`rdb_last_load_keys_*`).
    pub last_load_keys_loaded: AtomicU64,
    pub last_load_keys_expired: AtomicU64,
    /// The running background save (`bgsave.rs`).
    pub bgsave: crate::bgsave::Running,
    /// BGSAVE SCHEDULE (or BGSAVE in a transaction) asked for a save the cron starts.
    pub bgsave_scheduled: AtomicBool,
    /// Whether the last background save worked (`rdb_last_bgsave_status`); a SAVE that works
    /// sets it too, as Redis's `rdbSave` does.
    pub last_bgsave_ok: AtomicBool,
    /// Seconds the last background save took (`rdb_last_bgsave_time_sec`; -1: none yet).
    pub last_bgsave_secs: AtomicI64,
    /// Unix seconds when a background save was last started (the retry delay's clock).
    pub last_bgsave_try_secs: AtomicU64,
}

impl State {
    pub fn new() -> State {
        State {
            last_save_secs: AtomicU64::new(unix_ms() / 1000),
            last_bgsave_ok: AtomicBool::new(true),
            last_bgsave_secs: AtomicI64::new(-1),
            ..State::default()
        }
    }
}

/// Changes since the last save (`rdb_changes_since_last_save`).
pub fn changes_since_save(server: &Server) -> u64 {
    let dirty = server.hot.get(|c| &c.dirty);
    dirty.saturating_sub(server.persistence.dirty_at_save.load(Ordering::Relaxed))
}

/// Writes every shard's keyspace to `dbfilename` in the working directory (which is `dir`);
/// the caller holds every shard. `Err` is what the log gets.
pub fn save(server: &Server, shards: &mut [&mut Shard]) -> Result<(), String> {
    let dirty = server.hot.get(|c| &c.dirty);
    let (filename, options) = save_options(server, shards);
    let incremental = server.config.read().rdb_save_incremental_fsync;
    let result = write_file(&filename, shards, options, incremental);
    let state = &server.persistence;
    state.saves.fetch_add(1, Ordering::Relaxed);
    match &result {
        Ok(()) => {
            state.dirty_at_save.store(dirty, Ordering::Relaxed);
            state
                .last_save_secs
                .store(unix_ms() / 1000, Ordering::Relaxed);
            state.last_bgsave_ok.store(true, Ordering::Relaxed);
            crate::log::notice("DB saved on disk");
        }
        Err(e) => crate::log::warning(e),
    }
    result
}

/// The file name and the writer's options of a save starting now.
pub fn save_options(server: &Server, shards: &[&mut Shard]) -> (String, SaveOptions) {
    let c = server.config.read();
    let used_mem_bytes = shards
        .iter()
        .map(|s| s.heap().stats().allocated_bytes)
        .sum();
    let options = SaveOptions {
        compress: c.rdbcompression,
        checksum: c.rdbchecksum,
        ctime_secs: unix_ms() / 1000,
        used_mem_bytes,
    };
    (c.dbfilename.clone(), options)
}

/// Bytes written between two fsyncs of a file being saved, with `rdb-save-incremental-fsync`
/// (Redis's REDIS_AUTOSYNC_BYTES): the final fsync then has little left to flush, so it does
/// not stall the disk for everyone at once.
pub const SYNC_EVERY_BYTES: u64 = 32 << 20;

/// A file being saved, fsynced every `every` bytes.
#[derive(Debug)]
pub struct SyncEvery {
    file: File,
    every: Option<u64>,
    unsynced: u64,
}

impl SyncEvery {
    pub fn new(file: File, every: Option<u64>) -> SyncEvery {
        SyncEvery {
            file,
            every,
            unsynced: 0,
        }
    }

    /// The final fsync.
    pub fn finish(self) -> std::io::Result<()> {
        self.file.sync_all()
    }
}

impl Write for SyncEvery {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.unsynced += n as u64;
        if self.every.is_some_and(|every| self.unsynced >= every) {
            self.file.sync_data()?;
            self.unsynced = 0;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Commits a written and fsynced temp file: renames it to `filename` and fsyncs the directory.
pub fn commit(temp: &str, filename: &str) -> Result<(), String> {
    let failed = |what: &str, e: std::io::Error| {
        format!("Failed {what} ({}): {e}", Path::new(filename).display())
    };
    std::fs::rename(temp, filename).map_err(|e| failed("renaming the temp RDB file", e))?;
    File::open(".")
        .and_then(|d| d.sync_all())
        .map_err(|e| failed("syncing the directory", e))
}

/// Writes the file through a temporary one, fsyncs it, renames it into place and fsyncs the
/// directory.
fn write_file(
    filename: &str,
    shards: &mut [&mut Shard],
    options: SaveOptions,
    incremental: bool,
) -> Result<(), String> {
    let temp = format!("temp-{}.rdb", std::process::id());
    let failed = |what: &str, e: std::io::Error| {
        let _ = std::fs::remove_file(&temp);
        format!("Failed {what} ({}): {e}", Path::new(filename).display())
    };
    let file = File::create(&temp).map_err(|e| {
        let cwd =
            std::env::current_dir().map_or_else(|_| "unknown".into(), |p| p.display().to_string());
        format!(
            "Failed opening the temp RDB file {temp} (in server root dir {cwd}) for saving: {e}"
        )
    })?;
    let out = SyncEvery::new(file, incremental.then_some(SYNC_EVERY_BYTES));
    let mut w = rdb::Writer::new(BufWriter::with_capacity(1 << 20, out), options)
        .map_err(|e| failed("writing the RDB header", e))?;
    write_keyspace(&mut w, shards).map_err(|e| failed("writing the keyspace", e))?;
    w.finish()
        .and_then(|mut b| b.flush().map(|()| b))
        .map_err(|e| failed("writing the RDB file", e))?
        .into_inner()
        .map_err(|e| failed("flushing the RDB file", e.into_error()))?
        .finish()
        .map_err(|e| failed("syncing the RDB file", e))?;
    commit(&temp, filename).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

fn write_keyspace<W: Write>(
    w: &mut rdb::Writer<W>,
    shards: &mut [&mut Shard],
) -> std::io::Result<()> {
    let databases = shards.first().map_or(0, |s| s.databases());
    for db in 0..databases {
        let keys: usize = shards.iter().map(|s| s.len(db)).sum();
        if keys == 0 {
            continue;
        }
        let expires = shards.iter().map(|s| s.expires(db)).sum();
        w.select_db(db, keys, expires)?;
        for shard in shards.iter_mut() {
            let mut result = Ok(());
            shard.for_each_entry(db, |e| {
                if result.is_ok() {
                    result = w.entry(&e);
                }
            });
            result?;
        }
    }
    Ok(())
}

/// Loads `dbfilename` from the working directory into the shards, if the file exists:
/// `Ok(None)` when there is none. The caller holds every shard; keys are added to what is there
/// (replacing a key of the same name).
pub fn load(server: &Server, shards: &mut [&mut Shard]) -> Result<Option<usize>, String> {
    let filename = server.config.read().dbfilename.clone();
    let bytes = match std::fs::read(&filename) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let now = unix_ms();
    let databases = shards.first().map_or(0, |s| s.databases());
    let (mut expired, mut failed) = (0usize, None);
    let mut batch: Vec<Record> = Vec::with_capacity(LOAD_BATCH);
    let loaded = rdb::read(&bytes, databases, |db, key, value, expire_at| {
        if expire_at.is_some_and(|at| at <= now) {
            expired += 1;
            return;
        }
        batch.push((server.shard_of(&key), db, key, value, expire_at));
        if batch.len() == LOAD_BATCH {
            store_batch(shards, &mut batch, &mut failed);
        }
    })
    .map_err(|e| e.to_string())?;
    store_batch(shards, &mut batch, &mut failed);
    if let Some(e) = failed {
        return Err(e.to_string());
    }
    log_loaded(&loaded, expired, now);
    let state = &server.persistence;
    let stored = loaded.keys - expired;
    state
        .last_load_keys_loaded
        .store(stored as u64, Ordering::Relaxed);
    state
        .last_load_keys_expired
        .store(expired as u64, Ordering::Relaxed);
    Ok(Some(stored))
}

/// A key read from the file: its shard (hashed once), database, name, value, expiry (borrowing
/// the file's bytes where they are stored raw).
type Record<'a> = (
    usize,
    usize,
    std::borrow::Cow<'a, [u8]>,
    persist::value::Value<'a>,
    Option<u64>,
);

/// Keys stored per batch: their lookups are prefetched stage by stage first, as a pipeline's
/// are (`net/prefetch.rs`), so the cache misses of one key overlap the others'. (A 1M-key load
/// spent half its time in the lookup's misses and the page's memmove without it.)
const LOAD_BATCH: usize = 16;

/// Stores `batch` (emptying it) in the shards; the first failure is kept in `failed`.
fn store_batch(
    shards: &mut [&mut Shard],
    batch: &mut Vec<Record<'_>>,
    failed: &mut Option<store::StoreError>,
) {
    for stage in 0..3 {
        for (shard, db, key, ..) in batch.iter() {
            shards[*shard].prefetch(*db, key, stage);
        }
    }
    for (shard, db, key, value, expire_at) in batch.drain(..) {
        let shard = &mut *shards[shard];
        if let Err(e) = persist::value::store(&value, shard, db, &key, expire_at)
            && failed.is_none()
        {
            *failed = Some(e);
        }
    }
}

/// Redis's log lines of a load.
fn log_loaded(loaded: &rdb::Loaded, expired: usize, now_ms: u64) {
    let aux = |name: &[u8]| {
        loaded
            .aux
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    };
    if let Some(v) = aux(b"redis-ver") {
        crate::log::notice(&format!("Loading RDB produced by version {v}"));
    }
    if let Some(ctime) = aux(b"ctime").and_then(|c| c.parse::<u64>().ok()) {
        let age = (now_ms / 1000).saturating_sub(ctime);
        crate::log::notice(&format!("RDB age {age} seconds"));
    }
    if let Some(mem) = aux(b"used-mem").and_then(|m| m.parse::<f64>().ok()) {
        crate::log::notice(&format!(
            "RDB memory usage when created {:.2} Mb",
            mem / 1024.0 / 1024.0
        ));
    }
    crate::log::notice(&format!(
        "Done loading RDB, keys loaded: {}, keys expired: {expired}.",
        loaded.keys - expired
    ));
}

/// Startup: loads the RDB file if there is one (Redis's `loadDataFromDisk`).
pub fn load_at_startup(server: &Server) -> Result<(), String> {
    let started = std::time::Instant::now();
    let mut guards: Vec<_> = (0..server.shard_count())
        .map(|i| server.lock_shard(i))
        .collect();
    let mut shards: Vec<&mut Shard> = guards.iter_mut().map(|g| &mut **g).collect();
    let loaded = load(server, &mut shards)
        .map_err(|e| format!("Fatal error loading the DB: {e}. Exiting."))?;
    if loaded.is_some() {
        crate::log::notice(&format!(
            "DB loaded from disk: {:.3} seconds",
            started.elapsed().as_secs_f64()
        ));
    }
    Ok(())
}

/// The start of a shutdown (Redis's `prepareForShutdown`): a running background save is
/// aborted and its temp file removed, as Redis kills its child; then whether the shutdown
/// saves: SAVE and NOSAVE decide, else the configured `save` points.
pub fn begin_shutdown(server: &Server, save: bool, nosave: bool) -> bool {
    if crate::bgsave::running(server).is_some() {
        crate::log::warning("There is a background save in progress. Aborting it!");
        crate::bgsave::abort(server);
    }
    !nosave && (save || !server.config.read().save.is_empty())
}

/// The save before exiting (`prepareForShutdown`): whether the server may exit (the save
/// worked, or `force` says to exit anyway).
pub fn save_before_exit(server: &Server, shards: &mut [&mut Shard], force: bool) -> bool {
    crate::log::notice("Saving the final RDB snapshot before exiting.");
    if save(server, shards).is_ok() {
        return true;
    }
    if force {
        crate::log::warning("Error trying to save the DB. Exit anyway.");
    } else {
        crate::log::warning("Error trying to save the DB, can't exit.");
    }
    force
}
