//! BGREWRITEAOF without fork, and turning the AOF on and off (Redis's
//! `rewriteAppendOnlyFileBackground`, `backgroundRewriteDoneHandler`, `startAppendOnly`,
//! `stopAppendOnly`, `aofOpenIfNeededOnServerStart`).
//!
//! ```text
//!  start (every shard held, so no command is between its write and its append):
//!     write out the buffer ─▶ new incremental file <n+1>.incr.aof (or, waiting for the first
//!     base, temp-<name>.incr) ─▶ manifest naming it ─▶ appends go there from now on
//!     ─▶ bgsave::start_rewrite: a snapshot of this instant, walked by the I/O threads
//!  writer thread: temp-rewriteaof-bg-<pid>.aof (RDB with aof-base 1, or commands), fsync
//!  done: rename to <dir>/<name>.<b+1>.base.rdb|aof ─▶ (waiting: temp incr renamed to the
//!     next incr name) ─▶ manifest: new base, older incrementals and the old base history
//!     ─▶ history deleted (unless aof-disable-auto-gc) ─▶ aof_rewrites, sizes, status
//! ```
//! The new base holds exactly the dataset at the switch, and the incremental file exactly the
//! commands after it, so base + incrementals replay to the dataset at every step; a crash
//! before the manifest names the new base leaves the old manifest, whose files are all still
//! there (history is deleted only after the new manifest is in place).

use super::files::{self, Layout};
use crate::bgsave;
use crate::server::{Server, unix_ms};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use store::Shard;

/// What INFO persistence shows of rewrites.
#[derive(Debug)]
pub struct Status {
    /// A rewrite waits for the running job (`aof_rewrite_scheduled`).
    pub scheduled: AtomicBool,
    pub last_ok: AtomicBool,
    /// Rewrites started (`aof_rewrites`) and failed in a row.
    pub rewrites: AtomicU64,
    pub consecutive_failures: AtomicU64,
    /// Seconds the last rewrite took (-1: none yet).
    pub last_secs: AtomicI64,
    /// Unix seconds the running rewrite started.
    pub started_secs: AtomicU64,
}

impl Default for Status {
    fn default() -> Status {
        Status {
            scheduled: AtomicBool::new(false),
            last_ok: AtomicBool::new(true),
            rewrites: AtomicU64::new(0),
            consecutive_failures: AtomicU64::new(0),
            last_secs: AtomicI64::new(-1),
            started_secs: AtomicU64::new(0),
        }
    }
}

/// What BGREWRITEAOF got.
#[derive(Debug, PartialEq, Eq)]
pub enum Started {
    Started,
    /// Another job runs: the rewrite starts when it ends.
    Scheduled,
    AlreadyRunning,
}

/// Whether a rewrite is running.
pub fn running(server: &Server) -> bool {
    bgsave::running(server).is_some_and(|j| j.target != bgsave::Target::Rdb)
}

/// Starts a rewrite with every shard held (`shards`), or schedules it behind the running job.
pub fn start(server: &Server, shards: &mut [&mut Shard]) -> Result<Started, String> {
    if running(server) {
        return Ok(Started::AlreadyRunning);
    }
    if bgsave::running(server).is_some() {
        server.aof.rewrite.scheduled.store(true, Ordering::Relaxed);
        return Ok(Started::Scheduled);
    }
    let result = begin(server, shards);
    if let Err(e) = &result {
        server.aof.rewrite.last_ok.store(false, Ordering::Relaxed);
        crate::log::warning(e);
    }
    result
}

fn begin(server: &Server, shards: &mut [&mut Shard]) -> Result<Started, String> {
    let aof = &server.aof;
    let rdb = server.config.read().aof_use_rdb_preamble;
    if aof.feeding() {
        switch_incr(server)?;
    }
    if !bgsave::start_rewrite(server, shards, rdb)? {
        aof.rewrite.scheduled.store(true, Ordering::Relaxed);
        return Ok(Started::Scheduled);
    }
    aof.rewrite.scheduled.store(false, Ordering::Relaxed);
    aof.rewrite.rewrites.fetch_add(1, Ordering::Relaxed);
    aof.rewrite
        .started_secs
        .store(unix_ms() / 1000, Ordering::Relaxed);
    crate::log::notice("Background append only file rewriting started");
    Ok(Started::Started)
}

/// Appends go to a new incremental file from here on (`openNewIncrAofForAppend`): the next in
/// the manifest, or the temporary one while the AOF waits for its first base.
fn switch_incr(server: &Server) -> Result<(), String> {
    let mut layout = server.aof.files.lock();
    layout.ensure_dir()?;
    if layout.waiting {
        let path = layout.path(layout.temp_incr_name().as_bytes());
        let file = files::create_append(&path)?;
        server.aof.switch_file(Some(file));
        crate::log::notice(&format!(
            "Creating AOF incr file {} on background rewrite",
            layout.temp_incr_name()
        ));
        return Ok(());
    }
    let (incr, manifest) = layout.next_incr(&layout.manifest);
    let file = files::create_append(&layout.path(&incr.name))?;
    layout.persist(&manifest)?;
    layout.manifest = manifest;
    server.aof.switch_file(Some(file));
    crate::log::notice(&format!(
        "Creating AOF incr file {} on background rewrite",
        String::from_utf8_lossy(&incr.name)
    ));
    Ok(())
}

/// The writer thread's end of a rewrite: on success the new base is put in place and named by
/// the manifest; either way the status is set and a waiting AOF tries again.
pub fn done(server: &Server, job: &bgsave::Job, result: Result<(), String>, temp: &str) {
    let status = &server.aof.rewrite;
    let aborted = job.is_aborted();
    let result = result.and_then(|()| {
        if aborted {
            return Err("aborted".into());
        }
        crate::log::notice("Background AOF rewrite terminated with success");
        install(server, temp)
    });
    let _ = std::fs::remove_file(temp);
    status
        .last_secs
        .store(job.elapsed_secs() as i64, Ordering::Relaxed);
    match result {
        Ok(()) => {
            status.last_ok.store(true, Ordering::Relaxed);
            status.consecutive_failures.store(0, Ordering::Relaxed);
            crate::log::notice("Background AOF rewrite finished successfully");
        }
        Err(_) if aborted => crate::log::notice("Background AOF rewrite aborted"),
        Err(e) => {
            status.last_ok.store(false, Ordering::Relaxed);
            status.consecutive_failures.fetch_add(1, Ordering::Relaxed);
            crate::log::warning(&e);
            crate::log::warning("Background AOF rewrite terminated with error");
        }
    }
    if server.aof.files.lock().waiting {
        // Redis schedules another try while the AOF waits to be switched on.
        status.scheduled.store(true, Ordering::Relaxed);
    }
}

/// Renames the finished base into place and writes the manifest that names it.
fn install(server: &Server, temp: &str) -> Result<(), String> {
    let mut guard = server.aof.files.lock();
    let layout: &mut Layout = &mut guard;
    layout.ensure_dir()?;
    let rdb = temp_is_rdb(temp);
    let base = layout.next_base_name(rdb);
    let base_path = layout.path(&base);
    std::fs::rename(temp, &base_path).map_err(|e| {
        format!(
            "Error trying to rename the temporary AOF base file {temp} into {}: {e}",
            base_path.display()
        )
    })?;
    let mut manifest = layout.manifest.clone();
    manifest.new_base(base.clone());
    if layout.waiting {
        let (incr, with_incr) = layout.next_incr(&manifest);
        manifest = with_incr;
        let from = layout.path(layout.temp_incr_name().as_bytes());
        std::fs::rename(&from, layout.path(&incr.name)).map_err(|e| {
            let _ = std::fs::remove_file(&base_path);
            format!(
                "Error trying to rename the temporary AOF incr file {} into {}: {e}",
                from.display(),
                String::from_utf8_lossy(&incr.name)
            )
        })?;
    }
    manifest.retire_incrs(server.aof.feeding());
    layout.persist(&manifest).inspect_err(|_| {
        let _ = std::fs::remove_file(&base_path);
    })?;
    layout.manifest = manifest;
    layout.waiting = false;
    let base_size = layout.base_size();
    server.aof.base_size.store(base_size, Ordering::Relaxed);
    let incr = if server.aof.feeding() {
        server.aof.incr_len()
    } else {
        0
    };
    server
        .aof
        .current_size
        .store(base_size + incr, Ordering::Relaxed);
    if !server.config.read().aof_disable_auto_gc
        && let Err(e) = layout.delete_history()
    {
        crate::log::warning(&e);
    }
    Ok(())
}

/// Whether a finished temp base is an RDB (it starts with `REDIS`).
fn temp_is_rdb(temp: &str) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 5];
    std::fs::File::open(temp)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == b"REDIS"
}

/// Thread 0's cron: a scheduled rewrite once no job runs, and the automatic rewrite when the
/// files grew past `auto-aof-rewrite-percentage` of the last base (and at least
/// `auto-aof-rewrite-min-size`).
pub fn cron(server: &Server) {
    let aof = &server.aof;
    if bgsave::running(server).is_some() || server.persistence.load.loading.load(Ordering::Relaxed)
    {
        return;
    }
    let due =
        aof.rewrite.scheduled.load(Ordering::Relaxed) || (aof.feeding() && growth_due(server));
    if !due {
        return;
    }
    let mut guards: Vec<_> = (0..server.shard_count())
        .map(|i| server.lock_shard(i))
        .collect();
    let mut shards: Vec<&mut Shard> = guards.iter_mut().map(|g| &mut **g).collect();
    let _ = start(server, &mut shards);
}

/// Redis's automatic rewrite rule.
fn growth_due(server: &Server) -> bool {
    let (percentage, min_size) = {
        let c = server.config.read();
        (c.auto_aof_rewrite_percentage, c.auto_aof_rewrite_min_size)
    };
    let current = server.aof.current_size.load(Ordering::Relaxed);
    if percentage == 0 || current < min_size.max(0) as u64 {
        return false;
    }
    let base = server.aof.base_size.load(Ordering::Relaxed).max(1);
    let growth = (current.saturating_sub(base)) * 100 / base;
    if growth < percentage as u64 {
        return false;
    }
    crate::log::notice(&format!(
        "Starting automatic rewriting of AOF on {growth}% growth"
    ));
    true
}

/// CONFIG SET appendonly yes (`startAppendOnly`): appends start at once, into a temporary
/// incremental file, and a rewrite writes the first base; the AOF is on when it ends.
pub fn turn_on(server: &Server, shards: &mut [&mut Shard]) -> Result<(), String> {
    {
        let mut layout = server.aof.files.lock();
        layout.waiting = true;
    }
    server.aof.set_feeding(true);
    if bgsave::running(server).is_some() {
        crate::log::warning(
            "AOF was enabled but there is already another background operation. An AOF background was scheduled to start when possible.",
        );
        let path = {
            let layout = server.aof.files.lock();
            layout.ensure_dir()?;
            layout.path(layout.temp_incr_name().as_bytes())
        };
        server.aof.switch_file(Some(files::create_append(&path)?));
        server.aof.rewrite.scheduled.store(true, Ordering::Relaxed);
        return Ok(());
    }
    match start(server, shards) {
        Ok(_) => Ok(()),
        Err(e) => {
            turn_off(server);
            Err(e)
        }
    }
}

/// CONFIG SET appendonly no (`stopAppendOnly`): everything appended is written and synced,
/// the file closed, a running rewrite aborted.
pub fn turn_off(server: &Server) {
    server.aof.flush_and_sync();
    server.aof.switch_file(None);
    server.aof.set_feeding(false);
    server.aof.files.lock().waiting = false;
    server.aof.rewrite.scheduled.store(false, Ordering::Relaxed);
    if running(server) {
        bgsave::abort(server);
    }
}

/// At startup, after loading (`aofOpenIfNeededOnServerStart`): with `appendonly yes`, a base
/// is written at once if there are no files yet, the last incremental file (or a new one) is
/// opened for appending, the manifest written, history deleted.
pub fn open_at_startup(server: &Server) -> Result<(), String> {
    if !server.config.read().appendonly {
        return Ok(());
    }
    let mut guards: Vec<_> = (0..server.shard_count())
        .map(|i| server.lock_shard(i))
        .collect();
    let mut shards: Vec<&mut Shard> = guards.iter_mut().map(|g| &mut **g).collect();
    let mut layout = server.aof.files.lock();
    layout.ensure_dir()?;
    let mut manifest = layout.manifest.clone();
    if manifest.base.is_none() && manifest.incrs.is_empty() {
        let rdb = server.config.read().aof_use_rdb_preamble;
        let name = layout.next_base_name(rdb);
        write_base_now(server, &mut shards, &layout.path(&name), rdb)?;
        crate::log::notice(&format!(
            "Creating AOF base file {} on server start",
            String::from_utf8_lossy(&name)
        ));
        manifest.new_base(name);
    }
    let (incr, opened) = if let Some(last) = manifest.incrs.last() {
        (last.name.clone(), "Opening")
    } else {
        let (incr, with_incr) = layout.next_incr(&manifest);
        manifest = with_incr;
        (incr.name, "Creating")
    };
    let file = files::open_append(&layout.path(&incr))?;
    layout.persist(&manifest)?;
    layout.manifest = manifest;
    crate::log::notice(&format!(
        "{opened} AOF incr file {} on server start",
        String::from_utf8_lossy(&incr)
    ));
    server
        .aof
        .base_size
        .store(layout.base_size(), Ordering::Relaxed);
    server
        .aof
        .current_size
        .store(layout.files_size(), Ordering::Relaxed);
    if !server.config.read().aof_disable_auto_gc
        && let Err(e) = layout.delete_history()
    {
        crate::log::warning(&e);
    }
    drop(layout);
    server.aof.switch_file(Some(file));
    server.aof.set_feeding(true);
    Ok(())
}

/// Writes the dataset as a base file now, every shard held (Redis's synchronous
/// `rewriteAppendOnlyFile` at startup).
fn write_base_now(
    server: &Server,
    shards: &mut [&mut Shard],
    path: &std::path::Path,
    rdb: bool,
) -> Result<(), String> {
    let temp = bgsave::temp_name(bgsave::Target::AofBase { rdb });
    let (_, mut options) = crate::persistence::save_options(server, shards);
    options.aof_base = true;
    let annotate = server.config.read().aof_timestamp_enabled;
    crate::persistence::write_base(&temp, shards, options, rdb, annotate)?;
    std::fs::rename(&temp, path).map_err(|e| {
        format!(
            "Error trying to rename the temporary AOF base file {temp} into {}: {e}",
            path.display()
        )
    })
}
