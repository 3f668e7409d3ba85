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
    /// A background save's walk is not done (the I/O threads check it every loop turn).
    pub bgsave_walking: AtomicBool,
    /// BGSAVE SCHEDULE (or BGSAVE in a transaction) asked for a save the cron starts.
    pub bgsave_scheduled: AtomicBool,
    /// Whether the last background save worked (`rdb_last_bgsave_status`); a SAVE that works
    /// sets it too, as Redis's `rdbSave` does.
    pub last_bgsave_ok: AtomicBool,
    /// A load in progress (`rdb_load.rs`).
    pub load: crate::rdb_load::Progress,
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
        aof_base: false,
        functions: server.scripting.library_codes(),
    };
    (c.dbfilename.clone(), options)
}

/// The µs that Redis's testing delays (`rdb-key-save-delay`, `key-load-delay`) add for `keys`
/// keys: `delay` per key, or when negative 1 per `-delay` keys (Redis's `debugDelay` sleeps
/// 1 µs with probability 1 / -delay); 0 when unset.
pub fn debug_delay_us(delay: i32, keys: u64) -> u64 {
    match delay {
        0 => 0,
        d if d > 0 => u64::from(d.unsigned_abs()).saturating_mul(keys),
        d => keys / u64::from(d.unsigned_abs()),
    }
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
    w.keyspace(shards)
        .map_err(|e| failed("writing the keyspace", e))?;
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

/// Writes the whole keyspace held as `shards` to `temp` as an AOF base, an RDB (with
/// `aof-base 1`) or commands (opened by a `#TS:` annotation when `annotate`), and fsyncs it
/// (the base `appendonly yes` starts from when there are no files yet).
pub fn write_base(
    temp: &str,
    shards: &mut [&mut Shard],
    options: SaveOptions,
    rdb: bool,
    annotate: bool,
) -> Result<(), String> {
    let failed = |e: std::io::Error| {
        let _ = std::fs::remove_file(temp);
        format!("Error writing the AOF base {temp}: {e}")
    };
    let file = File::create(temp).map_err(failed)?;
    let mut out = BufWriter::with_capacity(1 << 20, SyncEvery::new(file, None));
    if rdb {
        let mut w = rdb::Writer::new(out, options).map_err(failed)?;
        w.keyspace(shards).map_err(failed)?;
        out = w.finish().map_err(failed)?;
    } else {
        if annotate {
            let ts = format!("#TS:{}\r\n", unix_ms() / 1000);
            out.write_all(ts.as_bytes()).map_err(failed)?;
        }
        let mut loads = Vec::new();
        persist::aof_base::encode_functions(&mut loads, &options.functions);
        out.write_all(&loads).map_err(failed)?;
        write_commands(&mut out, shards).map_err(failed)?;
    }
    out.flush().map_err(failed)?;
    out.into_inner()
        .map_err(|e| failed(e.into_error()))?
        .finish()
        .map_err(failed)
}

/// Every key of `shards` as the commands that rebuild it, SELECT before each database.
fn write_commands(out: &mut impl Write, shards: &mut [&mut Shard]) -> std::io::Result<()> {
    let databases = shards.first().map_or(0, |s| s.databases());
    let mut bytes = Vec::new();
    for db in 0..databases {
        if shards.iter().all(|s| s.len(db) == 0) {
            continue;
        }
        persist::aof_base::encode_select(&mut bytes, db);
        for shard in shards.iter_mut() {
            let mut result = Ok(());
            shard.for_each_entry(db, |e| {
                persist::aof_base::encode_entry(&mut bytes, &e);
                if bytes.len() >= 1 << 16 && result.is_ok() {
                    result = out.write_all(&bytes);
                    bytes.clear();
                }
            });
            result?;
        }
    }
    out.write_all(&bytes)
}

/// The start of a shutdown (Redis's `prepareForShutdown`): a running background save is
/// aborted and its temp file removed, as Redis kills its child; then whether the shutdown
/// saves: SAVE and NOSAVE decide, else the configured `save` points.
pub fn begin_shutdown(server: &Server, save: bool, nosave: bool) -> bool {
    if crate::bgsave::running_save(server).is_some() {
        crate::log::warning("There is a background save in progress. Aborting it!");
    } else if crate::aof::rewrite::running(server) {
        crate::log::warning("There is a background AOF rewrite in progress. Killing it!");
    }
    crate::bgsave::abort(server);
    if server.aof.feeding() {
        crate::log::notice("Calling fsync() on the AOF file.");
        server.aof.flush_and_sync();
    }
    // A save while loading would write a partial dataset over the file being loaded.
    let loading = server.persistence.load.loading.load(Ordering::Relaxed);
    !loading && !nosave && (save || !server.config.read().save.is_empty())
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
