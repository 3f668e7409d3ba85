//! The background save without fork (BGSAVE, the `save` points' timers, BGSAVE SCHEDULE): the
//! file holds exactly the dataset at the instant BGSAVE replied, while clients keep writing.
//!
//! ```text
//!  BGSAVE   every shard held: store::Shard::snapshot_begin(ChunkSink) in each, sizes noted,
//!           then "+Background saving started" (the instant the file stands for)
//!  walk     the I/O threads, each over the shards it expires (`Walker`): snapshot_step with
//!           the shard held, in the time the thread would have waited for events (100 µs at a
//!           time, then as long a pause while clients are active), and 25 µs per 500 µs while
//!           it never idles; paused while the writer is 4 chunks behind, and by
//!           rdb-key-save-delay
//!  writes   a client's write to a key the walk has not reached hands its pre-image to the
//!           shard's sink first (the store's `preserve`)
//!  sinks    records encoded into CHUNK_BYTES chunks of one database each
//!           ──▶ bounded channel (CHANNEL_CHUNKS) ──▶
//!  writer   thread: SELECTDB when the database changes ─▶ temp-bg-<pid>.rdb ─▶ EOF, CRC
//!           ─▶ fsync ─▶ rename to dbfilename ─▶ fsync of the directory ─▶ INFO's status
//! ```
//! Memory: what a save holds beyond the dataset is the chunks in flight, at most
//! `(shards + CHANNEL_CHUNKS + 1) × CHUNK_BYTES` (a record bigger than a chunk is one chunk of
//! its own size): a sink whose chunk finds the channel full waits for the writer, and so does
//! the client whose write filled it. The writer never takes a shard, so that wait always ends.
//!
//! Why the walk runs on the I/O threads: a walker thread of its own held a shard's lock for
//! each step, and whenever the scheduler preempted it there, the clients of that shard waited
//! a whole time slice (p99 9× on the 2-core benchmark machine). Walking between a thread's own
//! turns takes no lock another thread waits on, and a request that arrives meanwhile waits at
//! most one 100 µs walk. The writer runs at nice 19: it holds nothing a client needs unless the
//! channel fills, which the walk's pause keeps it far from.
//!
//! A save that fails (the disk, the directory) sets `rdb_last_bgsave_status:err`, which with
//! `stop-writes-on-bgsave-error` and save points refuses writes with MISCONF (`dispatch.rs`)
//! until a save works. An aborted save (FLUSHALL, SHUTDOWN, as Redis kills its child) writes
//! nothing and leaves the status as it was. Either way the walk still runs to its end, cheaply
//! (nothing is encoded), because it is what returns every entry's epoch bit to rest, and the
//! job ends only then: the writer drains the channel until every sink is gone, so a new save
//! never meets a snapshot still running.
//!
//! The same job writes the base of a rewritten append-only file (`Target::AofBase`, started by
//! `aof/rewrite.rs` after it switched the incremental file with every shard held): an RDB with
//! `aof-base 1`, or commands (`persist::aof_base`), to `temp-rewriteaof-bg-<pid>.aof`, which
//! `aof::rewrite::done` puts in place. One job runs at a time, as Redis has one child.

use crate::persistence::{self, SYNC_EVERY_BYTES, SyncEvery};
use crate::server::{Server, unix_ms};
use parking_lot::Mutex;
use persist::rdb::{self, SaveOptions};
use std::fs::File;
use std::io::BufWriter;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::{Duration, Instant};
use store::{Entry, Shard, SnapshotSink};

/// Bytes of records a sink gathers before handing them to the writer.
const CHUNK_BYTES: usize = 64 * 1024;
/// Chunks waiting for the writer at most: a client's write blocks only past this, which the
/// walk never brings it near (it pauses at `WALK_PAUSE_CHUNKS`).
const CHANNEL_CHUNKS: usize = 32;
/// Chunks in flight at which the walk waits for the writer.
const WALK_PAUSE_CHUNKS: usize = 4;
/// Entries a walk step looks at (~tens of µs).
const WALK_STEP: usize = 64;
/// Time an I/O thread spends walking in a loop turn that had no events: the walk runs in the
/// time the thread would have waited, and a request arriving meanwhile waits at most this.
const WALK_BUDGET_IDLE: Duration = Duration::from_micros(100);
/// A thread that never idles still walks, this long at most once per `BUSY_WALK_PERIOD` (~5%
/// of it), so a save always ends.
const WALK_BUDGET_BUSY: Duration = Duration::from_micros(25);
const BUSY_WALK_PERIOD: Duration = Duration::from_micros(500);
/// How long the walk waits when the writer is behind (half the channel full).
const WRITER_WAIT: Duration = Duration::from_micros(200);
/// Seconds after a failed background save before a save point may try again
/// (Redis's CONFIG_BGSAVE_RETRY_DELAY).
const RETRY_DELAY_SECS: u64 = 5;

/// The running save, if any: one lock so BGSAVE, the cron and INFO agree on one job.
pub type Running = Mutex<Option<Arc<Job>>>;

/// What a background job writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The RDB file (BGSAVE, save points).
    Rdb,
    /// The base of a rewritten append-only file (BGREWRITEAOF, `aof/rewrite.rs`): an RDB with
    /// `aof-base 1` when `rdb`, else commands.
    AofBase { rdb: bool },
}

/// One background save, shared by its sinks, its threads and INFO.
#[derive(Debug)]
pub struct Job {
    pub target: Target,
    /// Set by FLUSHALL and SHUTDOWN: the file is not written.
    aborted: AtomicBool,
    /// The writer failed: sinks stop encoding.
    failed: AtomicBool,
    started: Instant,
    /// The dirty counter when the save began: what is left after it is the changes since.
    dirty_at_start: u64,
    /// Keys the snapshot had (`current_save_keys_total`) and has handed over so far.
    pub keys_total: u64,
    pub keys_saved: AtomicU64,
    /// Per shard: its snapshot is still walking.
    walking: Box<[AtomicBool]>,
    /// Chunks sent and not yet taken by the writer.
    in_flight: AtomicUsize,
    /// µs after `started` before which the walk waits (`rdb-key-save-delay`).
    next_step_us: AtomicU64,
}

impl Job {
    /// Seconds since the save began (`rdb_current_bgsave_time_sec`).
    pub fn elapsed_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// Stops the save: nothing is written, the status stays (FLUSHALL, SHUTDOWN).
    pub fn abort(&self) {
        self.aborted.store(true, Ordering::Relaxed);
    }

    /// FLUSHALL, SHUTDOWN or CONFIG SET appendonly no stopped the job.
    pub fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::Relaxed)
    }

    fn discarding(&self) -> bool {
        self.aborted.load(Ordering::Relaxed) || self.failed.load(Ordering::Relaxed)
    }
}

/// What BGSAVE replies.
#[derive(Debug, PartialEq, Eq)]
pub enum Started {
    Started,
    /// A save is running already.
    InProgress,
}

/// A chunk of encoded records of one database.
struct Chunk {
    db: usize,
    bytes: Vec<u8>,
}

/// The sink of one shard: encodes each entry into its chunk and hands full chunks over.
struct ChunkSink {
    job: Arc<Job>,
    tx: SyncSender<Chunk>,
    compress: bool,
    /// Records as commands (an AOF base without the RDB preamble).
    commands: bool,
    db: usize,
    bytes: Vec<u8>,
}

impl ChunkSink {
    fn send(&mut self) {
        if self.bytes.is_empty() {
            return;
        }
        let bytes = std::mem::replace(&mut self.bytes, Vec::with_capacity(CHUNK_BYTES));
        self.job.in_flight.fetch_add(1, Ordering::Relaxed);
        if self.tx.send(Chunk { db: self.db, bytes }).is_err() {
            // The writer has stopped: nothing more is encoded.
            self.job.failed.store(true, Ordering::Relaxed);
        }
    }
}

impl SnapshotSink for ChunkSink {
    fn entry(&mut self, db: usize, entry: Entry<'_>) {
        self.job.keys_saved.fetch_add(1, Ordering::Relaxed);
        if self.job.discarding() {
            return;
        }
        if db != self.db {
            self.send();
            self.db = db;
        }
        if self.commands {
            persist::aof_base::encode_entry(&mut self.bytes, &entry);
        } else {
            rdb::encode_entry(&mut self.bytes, &entry, self.compress);
        }
        if self.bytes.len() >= CHUNK_BYTES {
            self.send();
        }
    }

    fn finish(&mut self) {
        if !self.job.discarding() {
            self.send();
        }
    }
}

/// Starts a background save of `shards` (every shard, held by the caller): the file will be
/// the dataset as it is now. `Err` when it cannot start (the temp file, the threads), which
/// counts as a failed save, as a failed fork does in Redis.
pub fn start(server: &Server, shards: &mut [&mut Shard]) -> Result<Started, String> {
    let state = &server.persistence;
    let mut running = state.bgsave.lock();
    if running.is_some() {
        return Ok(Started::InProgress);
    }
    state
        .last_bgsave_try_secs
        .store(unix_ms() / 1000, Ordering::Relaxed);
    let (filename, options) = persistence::save_options(server, shards);
    let job = begin(server, shards, Target::Rdb, filename, options).inspect_err(|_| {
        state.last_bgsave_ok.store(false, Ordering::Relaxed);
    })?;
    state.saves.fetch_add(1, Ordering::Relaxed);
    state.bgsave_walking.store(true, Ordering::Relaxed);
    *running = Some(job);
    server.aof.set_job_running(true);
    crate::log::notice("Background saving started");
    Ok(Started::Started)
}

/// Starts the background rewrite of the append-only file's base (`aof/rewrite.rs`, which has
/// switched the incremental file with every shard held): the job is the one slot BGSAVE uses,
/// as Redis has one child at a time. `Ok(false)` when a job runs already.
pub fn start_rewrite(
    server: &Server,
    shards: &mut [&mut Shard],
    rdb: bool,
) -> Result<bool, String> {
    let mut running = server.persistence.bgsave.lock();
    if running.is_some() {
        return Ok(false);
    }
    let (_, mut options) = persistence::save_options(server, shards);
    options.aof_base = true;
    let job = begin(
        server,
        shards,
        Target::AofBase { rdb },
        String::new(),
        options,
    )?;
    server
        .persistence
        .bgsave_walking
        .store(true, Ordering::Relaxed);
    *running = Some(job);
    server.aof.set_job_running(true);
    Ok(true)
}

/// `start`'s work: the job, its threads, and a snapshot begun in every shard.
fn begin(
    server: &Server,
    shards: &mut [&mut Shard],
    target: Target,
    filename: String,
    options: SaveOptions,
) -> Result<Arc<Job>, String> {
    let handle = server.handle().ok_or("the server is not running")?;
    let databases = shards.first().map_or(0, |s| s.databases());
    let sizes: Vec<(usize, usize)> = (0..databases)
        .map(|db| {
            let keys = shards.iter().map(|s| s.len(db)).sum();
            (keys, shards.iter().map(|s| s.expires(db)).sum())
        })
        .collect();
    let job = Arc::new(Job {
        target,
        aborted: AtomicBool::new(false),
        failed: AtomicBool::new(false),
        started: Instant::now(),
        dirty_at_start: server.hot.get(|c| &c.dirty),
        keys_total: sizes.iter().map(|&(k, _)| k as u64).sum(),
        keys_saved: AtomicU64::new(0),
        walking: (0..shards.len()).map(|_| AtomicBool::new(true)).collect(),
        in_flight: AtomicUsize::new(0),
        next_step_us: AtomicU64::new(0),
    });
    let temp = temp_name(target);
    let file = File::create(&temp).map_err(|e| format!("Can't save in background: {e}"))?;
    let (tx, rx) = sync_channel(CHANNEL_CHUNKS);
    let compress = options.compress;
    let writer = {
        let (job, server) = (Arc::clone(&job), Arc::clone(&handle));
        let annotate = server.config.read().aof_timestamp_enabled;
        let incremental = match target {
            Target::Rdb => server.config.read().rdb_save_incremental_fsync,
            Target::AofBase { .. } => server.config.read().aof_rewrite_incremental_fsync,
        };
        move || {
            let out = SyncEvery::new(file, incremental.then_some(SYNC_EVERY_BYTES));
            let result = match target {
                Target::AofBase { rdb: false } => {
                    write_commands(out, &options.functions, &rx, &job, annotate)
                }
                _ => write(out, options, &sizes, &rx, &job),
            };
            if result.is_err() {
                // The sinks stop encoding; the job ends once every shard's walk has (each
                // drops its sender then), so a new save never meets a snapshot still running.
                job.failed.store(true, Ordering::Relaxed);
                for _ in &rx {
                    job.in_flight.fetch_sub(1, Ordering::Relaxed);
                }
            }
            finish(&server, &job, result, &temp, &filename);
        }
    };
    spawn("bgsave-writer", writer).inspect_err(|_| {
        let _ = std::fs::remove_file(temp_name(target));
    })?;
    for shard in shards.iter_mut() {
        shard.snapshot_begin(Box::new(ChunkSink {
            job: Arc::clone(&job),
            tx: tx.clone(),
            compress,
            commands: target == Target::AofBase { rdb: false },
            db: 0,
            bytes: Vec::with_capacity(CHUNK_BYTES),
        }));
    }
    drop(tx);
    Ok(job)
}

/// Spawns the writer thread at the lowest CPU priority (nice 19), so that on a busy machine
/// the I/O threads preempt it rather than the other way round. It holds no shard, and the
/// walk keeps the channel far from full, so no client waits for it in practice.
fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), String> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            // SAFETY: setpriority on this thread's own id (Linux: a thread id is a process id
            // for PRIO_PROCESS) only lowers this thread's scheduling priority.
            unsafe {
                let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
                libc::setpriority(libc::PRIO_PROCESS, tid, 19);
            }
            f();
        })
        .map(drop)
        .map_err(|e| format!("Can't save in background: {e}"))
}

/// An I/O thread's share of a background save's walk: it walks the shards it expires, in the
/// time it would otherwise wait for events, and a little while busy.
#[derive(Debug)]
pub struct Walker {
    last_busy_walk: Instant,
    /// The previous turn had events: clients are active, so an idle turn's walk is followed by
    /// a pause of the same length rather than by another walk.
    clients_active: bool,
}

impl Default for Walker {
    fn default() -> Walker {
        Walker {
            last_busy_walk: Instant::now(),
            clients_active: false,
        }
    }
}

impl Walker {
    /// After a loop turn of thread `index` of `threads` (`busy`: the turn had events): walks
    /// if there is a walk and it is this turn's to take. Returns when to call again: `None`
    /// with nothing of this thread's left to walk, `Some(0)` at once, later while
    /// `rdb-key-save-delay` or the writer holds the walk back.
    pub fn turn(
        &mut self,
        server: &Server,
        index: usize,
        threads: usize,
        busy: bool,
    ) -> Option<Duration> {
        if !server.persistence.bgsave_walking.load(Ordering::Relaxed) {
            return None;
        }
        let clients_active = std::mem::replace(&mut self.clients_active, busy);
        if busy {
            let since = self.last_busy_walk.elapsed();
            if let Some(wait) = BUSY_WALK_PERIOD.checked_sub(since).filter(|w| !w.is_zero()) {
                return Some(wait);
            }
            self.last_busy_walk = Instant::now();
        }
        let next = walk_some(server, index, threads, busy)?;
        // Between clients' requests the walk takes at most half the idle time, leaving the
        // rest of the CPU to the machine (on a small one, to the clients themselves).
        Some(if clients_active && next.is_zero() {
            WALK_BUDGET_IDLE
        } else {
            next
        })
    }
}

/// Steps of the snapshot in thread `index`'s shards for up to a budget, skipping a shard
/// another thread holds (see `Walker::turn`).
fn walk_some(server: &Server, index: usize, threads: usize, busy: bool) -> Option<Duration> {
    let job = running(server)?;
    let now_us = job.started.elapsed().as_micros() as u64;
    let due_us = job.next_step_us.load(Ordering::Relaxed);
    if now_us < due_us {
        return Some(Duration::from_micros(due_us - now_us));
    }
    if job.in_flight.load(Ordering::Relaxed) >= WALK_PAUSE_CHUNKS {
        return Some(WRITER_WAIT);
    }
    let started = Instant::now();
    let budget = if busy {
        WALK_BUDGET_BUSY
    } else {
        WALK_BUDGET_IDLE
    };
    let saved_before = job.keys_saved.load(Ordering::Relaxed);
    let mut left = false;
    for i in server.active_expire_shards(index, threads) {
        if !job.walking[i].load(Ordering::Relaxed) {
            continue;
        }
        if started.elapsed() < budget
            && let Some(mut shard) = server.try_lock_shard(i)
        {
            while started.elapsed() < budget {
                if shard.snapshot_step(WALK_STEP) {
                    job.walking[i].store(false, Ordering::Relaxed);
                    break;
                }
            }
        }
        left |= job.walking[i].load(Ordering::Relaxed);
    }
    if !job.walking.iter().any(|w| w.load(Ordering::Relaxed)) {
        server
            .persistence
            .bgsave_walking
            .store(false, Ordering::Relaxed);
    }
    let delay = server.config.read().rdb_key_save_delay;
    if delay != 0 {
        let keys = job.keys_saved.load(Ordering::Relaxed) - saved_before;
        let due =
            job.started.elapsed().as_micros() as u64 + persistence::debug_delay_us(delay, keys);
        job.next_step_us.store(due, Ordering::Relaxed);
    }
    left.then_some(Duration::ZERO)
}

/// The writer: chunks to the file, until every sink is done; then the end of the file and its
/// fsync. `Err` is the log's text.
fn write(
    out: SyncEvery,
    options: SaveOptions,
    sizes: &[(usize, usize)],
    rx: &Receiver<Chunk>,
    job: &Job,
) -> Result<(), String> {
    let failed = |e: std::io::Error| format!("Write error saving DB on disk: {e}");
    let mut w =
        rdb::Writer::new(BufWriter::with_capacity(CHUNK_BYTES, out), options).map_err(failed)?;
    let mut selected: Option<usize> = None;
    let mut sized = vec![false; sizes.len()];
    for chunk in rx {
        job.in_flight.fetch_sub(1, Ordering::Relaxed);
        if job.aborted.load(Ordering::Relaxed) {
            return Err("aborted".into());
        }
        if selected != Some(chunk.db) {
            let first = !std::mem::replace(&mut sized[chunk.db], true);
            w.select(chunk.db, first.then_some(sizes[chunk.db]))
                .map_err(failed)?;
            selected = Some(chunk.db);
        }
        w.records(&chunk.bytes).map_err(failed)?;
    }
    if job.aborted.load(Ordering::Relaxed) {
        return Err("aborted".into());
    }
    let out = w
        .finish()
        .map_err(failed)?
        .into_inner()
        .map_err(|e| failed(e.into_error()))?;
    out.finish().map_err(failed)
}

/// The writer of a base in command form: a `#TS:` annotation first with
/// `aof-timestamp-enabled` (`annotate`), as Redis's rewrite forces one; SELECT when the
/// database changes, then the chunks' commands, then the fsync.
fn write_commands(
    out: SyncEvery,
    functions: &[Vec<u8>],
    rx: &Receiver<Chunk>,
    job: &Job,
    annotate: bool,
) -> Result<(), String> {
    use std::io::Write;
    let failed = |e: std::io::Error| format!("Write error writing the AOF base: {e}");
    let mut w = BufWriter::with_capacity(CHUNK_BYTES, out);
    if annotate {
        w.write_all(format!("#TS:{}\r\n", unix_ms() / 1000).as_bytes())
            .map_err(failed)?;
    }
    let mut loads = Vec::new();
    persist::aof_base::encode_functions(&mut loads, functions);
    w.write_all(&loads).map_err(failed)?;
    let mut selected: Option<usize> = None;
    let mut select = Vec::new();
    for chunk in rx {
        job.in_flight.fetch_sub(1, Ordering::Relaxed);
        if job.aborted.load(Ordering::Relaxed) {
            return Err("aborted".into());
        }
        if selected != Some(chunk.db) {
            select.clear();
            persist::aof_base::encode_select(&mut select, chunk.db);
            w.write_all(&select).map_err(failed)?;
            selected = Some(chunk.db);
        }
        w.write_all(&chunk.bytes).map_err(failed)?;
    }
    if job.aborted.load(Ordering::Relaxed) {
        return Err("aborted".into());
    }
    let out = w.into_inner().map_err(|e| failed(e.into_error()))?;
    out.finish().map_err(failed)
}

/// After the writer: the rename on success, the temp file removed otherwise, and the status.
fn finish(server: &Server, job: &Job, result: Result<(), String>, temp: &str, filename: &str) {
    if job.target != Target::Rdb {
        crate::aof::rewrite::done(server, job, result, temp);
        *server.persistence.bgsave.lock() = None;
        server.aof.set_job_running(false);
        return;
    }
    let state = &server.persistence;
    let result = result.and_then(|()| persistence::commit(temp, filename));
    let aborted = job.aborted.load(Ordering::Relaxed);
    if result.is_err() {
        let _ = std::fs::remove_file(temp);
    }
    match result {
        _ if aborted => crate::log::notice("Background saving aborted"),
        Ok(()) => {
            crate::log::notice("DB saved on disk");
            state
                .dirty_at_save
                .store(job.dirty_at_start, Ordering::Relaxed);
            state
                .last_save_secs
                .store(unix_ms() / 1000, Ordering::Relaxed);
            state.last_bgsave_ok.store(true, Ordering::Relaxed);
            crate::log::notice("Background saving terminated with success");
        }
        Err(e) => {
            crate::log::warning(&e);
            state.last_bgsave_ok.store(false, Ordering::Relaxed);
            crate::log::warning("Background saving error");
        }
    }
    if !aborted {
        state
            .last_bgsave_secs
            .store(job.elapsed_secs() as i64, Ordering::Relaxed);
    }
    *state.bgsave.lock() = None;
    server.aof.set_job_running(false);
}

/// The running save, if any.
pub fn running(server: &Server) -> Option<Arc<Job>> {
    server.persistence.bgsave.lock().clone()
}

/// Aborts the running RDB save, if any (FLUSHALL, where Redis kills its RDB child; a rewrite
/// of the AOF goes on: the flush is in the new incremental file).
pub fn abort_save(server: &Server) {
    if running_save(server).is_some() {
        abort(server);
    }
}

/// Aborts the running job, if any (SHUTDOWN, where Redis kills its child).
pub fn abort(server: &Server) {
    if let Some(job) = running(server) {
        job.abort();
        let _ = std::fs::remove_file(temp_name(job.target));
    }
}

/// The running RDB save, if any (not a rewrite of the append-only file).
pub fn running_save(server: &Server) -> Option<Arc<Job>> {
    running(server).filter(|j| j.target == Target::Rdb)
}

/// The file a background job writes before its rename, in the working directory (Redis's
/// names, with the process id where Redis has the child's).
pub fn temp_name(target: Target) -> String {
    match target {
        Target::Rdb => format!("temp-bg-{}.rdb", std::process::id()),
        Target::AofBase { .. } => format!("temp-rewriteaof-bg-{}.aof", std::process::id()),
    }
}

/// Thread 0's cron: a scheduled BGSAVE, or a save point that is due, starts a save (Redis's
/// `serverCron`). Takes every shard only when it starts one.
pub fn cron(server: &Server) {
    let state = &server.persistence;
    if state.bgsave.lock().is_some() || state.load.loading.load(Ordering::Relaxed) {
        return;
    }
    let now = unix_ms() / 1000;
    let may_retry = state.last_bgsave_ok.load(Ordering::Relaxed)
        || now.saturating_sub(state.last_bgsave_try_secs.load(Ordering::Relaxed))
            > RETRY_DELAY_SECS;
    if !may_retry {
        return;
    }
    let due = if state.bgsave_scheduled.load(Ordering::Relaxed) {
        true
    } else {
        let changes = persistence::changes_since_save(server);
        let since = now.saturating_sub(state.last_save_secs.load(Ordering::Relaxed));
        let point = server
            .config
            .read()
            .save
            .iter()
            .copied()
            .find(|&(secs, n)| changes >= n as u64 && since > secs as u64);
        if let Some((secs, n)) = point {
            crate::log::notice(&format!("{n} changes in {secs} seconds. Saving..."));
        }
        point.is_some()
    };
    if due {
        let mut guards: Vec<_> = (0..server.shard_count())
            .map(|i| server.lock_shard(i))
            .collect();
        let mut shards: Vec<&mut Shard> = guards.iter_mut().map(|g| &mut **g).collect();
        if let Err(e) = start(server, &mut shards) {
            crate::log::warning(&e);
        }
        state.bgsave_scheduled.store(false, Ordering::Relaxed);
    }
}

/// Whether writes are refused with MISCONF: `stop-writes-on-bgsave-error` with save points,
/// after a failed background save (Redis's `writeCommandsDeniedByDiskError`).
pub fn writes_denied(server: &Server) -> bool {
    !server.persistence.last_bgsave_ok.load(Ordering::Relaxed) && {
        let c = server.config.read();
        c.stop_writes_on_bgsave_error && !c.save.is_empty()
    }
}
