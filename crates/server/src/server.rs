//! The state every I/O thread shares: configuration, the shards of the keyspace, statistics, the
//! client registry, and WATCH bookkeeping.
//!
//! ```text
//!  Server ── config: RwLock<Config>
//!         ├─ shards: [Mutex<Shard>; n]     key → shard by a per-process seeded hash
//!         ├─ clients: id → Arc<ClientShared>   (CLIENT LIST / KILL across threads)
//!         ├─ watches: (db, key) → watcher ids   (checked only when `watched > 0`)
//!         ├─ hot: per-thread counters every command bumps (`hot_stats.rs`)
//!         └─ stats: atomics, per-command error counters, error counts, slow log
//! ```
//! Locking order: shards in ascending index, then (briefly, never while waiting for another)
//! `watches`, `clients`, `errorstats`, `slowlog`. A command holds the shard locks of its keys for
//! its whole execution, which is what makes each command (and, with every shard locked, each
//! EXEC) atomic.

use crate::config::Config;
use crate::hot_stats::HotStats;
use parking_lot::{Mutex, MutexGuard, RwLock};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::BuildHasher;
use std::iter::StepBy;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use store::{Shard, ShardConfig};

/// What other threads may see of a client.
#[derive(Debug)]
pub struct ClientShared {
    pub id: u64,
    pub addr: String,
    pub laddr: String,
    pub fd: i32,
    pub thread: usize,
    pub created: Instant,
    pub info: Mutex<ClientInfo>,
    /// Set by CLIENT KILL (or shutdown): the owning thread closes the connection.
    pub killed: AtomicBool,
    /// Set when a key this client WATCHes is modified: its EXEC will fail.
    pub watch_dirty: AtomicBool,
    /// Unix ms of the last command (CLIENT LIST idle, `timeout`); an atomic so the owning thread
    /// updates it per command without a lock.
    pub last_interaction_ms: AtomicU64,
    /// Table index + 1 of the last command run (0: none yet).
    pub last_cmd: AtomicUsize,
    /// The connection's buffers as its thread last published them.
    pub buffers: BufferStats,
    /// Blocked in BLPOP & co. (CLIENT LIST's `b` flag); set and cleared under `Server::blocking`.
    pub blocked: AtomicBool,
}

/// A connection's buffers, published by its thread after each turn for CLIENT LIST and INFO
/// (relaxed atomics: a reader sees a recent, not a synchronized, picture).
#[derive(Debug, Default)]
pub struct BufferStats {
    /// Received bytes not yet consumed (CLIENT LIST `qbuf`).
    pub query_bytes: AtomicUsize,
    /// Room left in the query buffer (`qbuf-free`).
    pub query_free_bytes: AtomicUsize,
    /// Reply bytes not yet written.
    pub reply_bytes: AtomicUsize,
    /// Capacity of the reply buffer (`rbs`).
    pub reply_capacity_bytes: AtomicUsize,
    /// Everything the connection holds: its records and both buffers (`tot-mem`).
    pub total_bytes: AtomicUsize,
}

/// Mutable facts about a client for CLIENT LIST / INFO.
#[derive(Clone, Debug, Default)]
pub struct ClientInfo {
    pub name: String,
    pub lib_name: String,
    pub lib_ver: String,
    pub db: usize,
    pub resp: u8,
    pub multi: i64,
    pub watching: usize,
    pub no_evict: bool,
    /// In MONITOR mode (CLIENT LIST's `O`).
    pub monitor: bool,
    /// Channels, patterns and shard channels subscribed to (`sub`, `psub`, `ssub`).
    pub subscriptions: (usize, usize, usize),
    pub no_touch: bool,
    /// CLIENT LIST's `t`, `R`, `B` and `redir=` (`tracking.rs`).
    pub tracking: crate::tracking::ListState,
}

/// Counters of one command for INFO commandstats that only errors bump (calls and µs are in
/// `Server::hot`).
#[derive(Debug, Default)]
pub struct CommandStat {
    pub rejected: AtomicU64,
    pub failed: AtomicU64,
}

/// Server-wide counters for INFO stats.
#[derive(Debug, Default)]
pub struct Stats {
    pub connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    pub total_errors: AtomicU64,
    pub expired_keys_active: AtomicU64,
}

/// One slow-log entry.
#[derive(Clone, Debug)]
pub struct SlowEntry {
    pub id: u64,
    pub time_unix: u64,
    pub usec: u64,
    pub args: Vec<Vec<u8>>,
    pub addr: String,
    pub name: String,
}

#[derive(Debug, Default)]
pub struct SlowLog {
    pub entries: std::collections::VecDeque<SlowEntry>,
    pub next_id: u64,
}

/// A watched key: (database, key).
type WatchKey = (usize, Vec<u8>);

/// Freed heap bytes each shard keeps resident for reuse (see `Server::new`).
const SHARD_DIRTY_RESERVE_BYTES: usize = 64 << 10;

/// The shared state of one densekv process.
#[derive(Debug)]
pub struct Server {
    pub config: RwLock<Config>,
    shards: Box<[Mutex<Shard>]>,
    hasher: foldhash::fast::RandomState,
    pub stats: Stats,
    /// The counters every command bumps, per I/O thread (`hot_stats.rs`).
    pub hot: HotStats,
    pub command_stats: Box<[CommandStat]>,
    pub errorstats: Mutex<HashMap<String, u64>>,
    pub slowlog: Mutex<SlowLog>,
    /// `slowlog-log-slower-than`, read by every command without the config lock.
    pub slowlog_slower_than: AtomicI64,
    pub clients: Mutex<HashMap<u64, Arc<ClientShared>>>,
    pub connected: AtomicUsize,
    next_client_id: AtomicU64,
    watches: Mutex<HashMap<WatchKey, Vec<Arc<ClientShared>>>>,
    watched: AtomicUsize,
    pub shutdown: AtomicBool,
    pub started: Instant,
    pub started_unix_ms: u64,
    /// The last save and the dirty counter then (`persistence.rs`).
    pub persistence: crate::persistence::State,
    /// The append-only file (`aof/`).
    pub aof: crate::aof::Aof,
    /// Highest `used_memory` seen (INFO, MEMORY STATS and the cron update it).
    pub used_memory_peak: AtomicU64,
    /// `maxmemory`: the gauge, the check and eviction (`evict.rs`).
    pub eviction: crate::evict::Eviction,
    /// `activedefrag` (`defrag.rs`).
    pub defrag: crate::defrag::Defrag,
    /// `used_memory` once startup was done (MEMORY STATS `startup.allocated`).
    initial_memory: AtomicU64,
    /// Samples of (ms, total commands) for `instantaneous_ops_per_sec`.
    pub ops_samples: Mutex<std::collections::VecDeque<(u64, u64)>>,
    pub run_id: String,
    pub wakers: RwLock<Vec<Arc<mio::Waker>>>,
    pub port: AtomicUsize,
    /// One clone of each listening socket, for CONFIG SET port / bind to shut down (`net.rs`).
    pub listeners: Mutex<Vec<std::net::TcpListener>>,
    /// Per I/O thread: listening sockets a rebind left for it to swap in.
    pub rebound: Box<[Mutex<Option<Vec<std::net::TcpListener>>>]>,
    /// Clients blocked in BLPOP & co. (0: pushes skip the ready list).
    pub blocked_clients: AtomicUsize,
    /// Keys that received elements while clients were blocked (served after the command).
    pub ready_keys: Mutex<Vec<(usize, Vec<u8>)>>,
    /// `ready_keys` is not empty (checked after every command without taking the lock).
    pub ready_pending: AtomicBool,
    /// Blocked clients and the keys they wait on (`blocking.rs`).
    pub blocking: Mutex<crate::blocking::Blocking>,
    /// Per I/O thread: output for its connections from commands on other threads (`mail.rs`).
    pub mail: crate::mail::Mailboxes,
    /// CLIENT PAUSE (`pause.rs`).
    pub pause: crate::pause::Pause,
    /// Clients in MONITOR mode (`monitor.rs`).
    pub monitors: crate::monitor::Monitors,
    /// Scripts and functions (`scripting/`).
    pub scripting: crate::scripting::state::Scripting,
    /// Channels, patterns and their subscribers (`pubsub.rs`).
    pub pubsub: crate::pubsub::PubSub,
    /// Client-side caching: tracked keys, BCAST prefixes, tracking clients (`tracking.rs`).
    pub tracking: crate::tracking::Tracking,
    /// `notify-keyspace-events` as Redis's class bits (`notify.rs`), read by every notification.
    pub notify_flags: std::sync::atomic::AtomicI32,
    /// Whether the cron deletes expired keys nobody reads (DEBUG SET-ACTIVE-EXPIRE; Redis's
    /// `active_expire_enabled`). Lazy expiry on access is not affected.
    pub active_expire_enabled: AtomicBool,
    /// DEBUG PAUSE-CRON: the cron's keyspace work (active expiry) stops until it is cleared.
    pub cron_paused: AtomicBool,
    /// The `Arc` the server runs in (`handle`), for threads that outlive a command.
    me: std::sync::OnceLock<std::sync::Weak<Server>>,
}

/// Samples kept for `instantaneous_ops_per_sec` (Redis's STATS_METRIC_SAMPLES).
const OPS_SAMPLES: usize = 16;

/// Microseconds since the Unix epoch.
pub fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Milliseconds since the Unix epoch.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The keyspace's shards as `config` sets them up.
fn new_shards(config: &Config) -> Result<Box<[Mutex<Shard>]>, store::StoreError> {
    let shard_config = ShardConfig {
        databases: config.databases,
        limits: crate::config::effects::store_limits(config),
        heap: heap::HeapConfig {
            // Each shard keeps 64 KiB of freed blocks resident for churn (eight pages), not the
            // heap's default 256 KiB: 0.5 MiB over eight shards, so an emptied server shrinks
            // to near its empty size; a shard that takes no block for a decay time keeps none.
            dirty_reserve_bytes: SHARD_DIRTY_RESERVE_BYTES,
            ..heap::HeapConfig::default()
        },
        ..ShardConfig::default()
    };
    let access = crate::evict::access_policy(config);
    (0..config.shards)
        .map(|_| {
            let mut shard = Shard::new(&shard_config)?;
            shard.set_access_policy(access);
            Ok(Mutex::new(shard))
        })
        .collect()
}

/// A run id: 40 hex digits from the process's random hasher seed.
fn new_run_id() -> String {
    let state = foldhash::fast::RandomState::default();
    let mut id = String::with_capacity(80);
    for i in 0..5u64 {
        let _ = write!(id, "{:016x}", state.hash_one(i));
    }
    id.truncate(40);
    id
}

impl Server {
    pub fn new(config: Config) -> Result<Server, store::StoreError> {
        let aof = crate::aof::Aof::new(&config);
        let eviction = crate::evict::Eviction::new(&config);
        let config_shards = config.shards;
        let shards = new_shards(&config)?;
        let run_id = new_run_id();
        Ok(Server {
            port: AtomicUsize::new(config.port as usize),
            blocked_clients: AtomicUsize::new(0),
            ready_keys: Mutex::new(Vec::new()),
            ready_pending: AtomicBool::new(false),
            blocking: Mutex::new(crate::blocking::Blocking::default()),
            listeners: Mutex::new(Vec::new()),
            rebound: (0..config.io_threads.max(1))
                .map(|_| Mutex::new(None))
                .collect(),
            mail: crate::mail::Mailboxes::new(config.io_threads),
            pubsub: crate::pubsub::PubSub::default(),
            monitors: crate::monitor::Monitors::default(),
            scripting: crate::scripting::state::Scripting::new(config.io_threads),
            pause: crate::pause::Pause::default(),
            tracking: crate::tracking::Tracking::new(&config),
            notify_flags: std::sync::atomic::AtomicI32::new(config.notify_keyspace_events),
            slowlog_slower_than: AtomicI64::new(config.slowlog_log_slower_than),
            hot: HotStats::new(config.io_threads.max(1), crate::command::COMMANDS.len()),
            config: RwLock::new(config),
            shards,
            hasher: foldhash::fast::RandomState::default(),
            stats: Stats::default(),
            command_stats: (0..crate::command::COMMANDS.len())
                .map(|_| CommandStat::default())
                .collect(),
            errorstats: Mutex::new(HashMap::new()),
            slowlog: Mutex::new(SlowLog::default()),
            clients: Mutex::new(HashMap::new()),
            connected: AtomicUsize::new(0),
            next_client_id: AtomicU64::new(1),
            watches: Mutex::new(HashMap::new()),
            watched: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
            started: Instant::now(),
            started_unix_ms: unix_ms(),
            persistence: crate::persistence::State::new(),
            aof,
            used_memory_peak: AtomicU64::new(0),
            eviction,
            defrag: crate::defrag::Defrag::new(config_shards),
            initial_memory: AtomicU64::new(0),
            ops_samples: Mutex::new(std::collections::VecDeque::with_capacity(OPS_SAMPLES)),
            run_id,
            wakers: RwLock::new(Vec::new()),
            active_expire_enabled: AtomicBool::new(true),
            cron_paused: AtomicBool::new(false),
            me: std::sync::OnceLock::new(),
        })
    }

    /// Records the `Arc` the server runs in, so `handle` can give it to background threads.
    pub fn set_handle(self: &Arc<Server>) {
        let _ = self.me.set(Arc::downgrade(self));
    }

    /// The server's `Arc` (for a thread that outlives the command starting it, as BGSAVE's do);
    /// `None` before `set_handle`.
    pub fn handle(&self) -> Option<Arc<Server>> {
        self.me.get().and_then(std::sync::Weak::upgrade)
    }

    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The shards whose expired keys cron thread `index` of `threads` deletes this round
    /// (`shard % threads == index`): none while DEBUG SET-ACTIVE-EXPIRE 0 or DEBUG PAUSE-CRON 1
    /// holds.
    pub fn active_expire_shards(&self, index: usize, threads: usize) -> StepBy<Range<usize>> {
        let on = self.active_expire_enabled.load(Ordering::Relaxed)
            && !self.cron_paused.load(Ordering::Relaxed);
        let end = if on { self.shard_count() } else { index };
        (index..end).step_by(threads.max(1))
    }

    /// The shard holding `key`.
    #[inline]
    pub fn shard_of(&self, key: &[u8]) -> usize {
        (self.hasher.hash_one(key) % self.shards.len() as u64) as usize
    }

    /// The shard's lock if it is free right now (for work that may simply be skipped).
    pub fn try_lock_shard(&self, index: usize) -> Option<MutexGuard<'_, Shard>> {
        self.shards[index].try_lock()
    }

    pub fn lock_shard(&self, index: usize) -> MutexGuard<'_, Shard> {
        self.shards[index].lock()
    }

    /// Locks shard `index`, unless a script turns busy while this waits for it (`None`).
    pub fn lock_shard_unless_busy(&self, index: usize) -> Option<MutexGuard<'_, Shard>> {
        loop {
            if let Some(guard) =
                self.shards[index].try_lock_for(std::time::Duration::from_millis(2))
            {
                return Some(guard);
            }
            if self.scripting.busy() {
                return None;
            }
        }
    }

    pub fn next_client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers `client` as watching `key` of `db`.
    pub fn watch(&self, db: usize, key: &[u8], client: &Arc<ClientShared>) {
        let mut watches = self.watches.lock();
        let list = watches.entry((db, key.to_vec())).or_default();
        if !list.iter().any(|c| c.id == client.id) {
            list.push(Arc::clone(client));
            self.watched.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Drops every watch of `client` on the given keys.
    pub fn unwatch(&self, client: &ClientShared, keys: &[(usize, Vec<u8>)]) {
        let mut watches = self.watches.lock();
        for key in keys {
            if let Some(list) = watches.get_mut(key) {
                let before = list.len();
                list.retain(|c| c.id != client.id);
                self.watched
                    .fetch_sub(before - list.len(), Ordering::Relaxed);
                if list.is_empty() {
                    watches.remove(key);
                }
            }
        }
    }

    /// `key` received elements (LPUSH, ZADD, LMOVE's destination…): clients blocked on it may
    /// be served. Free when nobody is blocked.
    #[inline]
    pub fn signal_ready(&self, db: usize, key: &[u8]) {
        if self.blocked_clients.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut ready = self.ready_keys.lock();
        if !ready.iter().any(|(d, k)| *d == db && k == key) {
            ready.push((db, key.to_vec()));
        }
        self.ready_pending.store(true, Ordering::Relaxed);
    }

    /// The client state of a client with no connection (the AOF loader's, Redis's fake
    /// client): id 0, no address, no socket.
    pub fn fake_client(&self) -> Arc<ClientShared> {
        self.fake_client_named("")
    }

    /// A client with no connection whose address reads `addr` (MONITOR shows a script's
    /// commands as coming from `lua`).
    pub fn fake_client_named(&self, addr: &str) -> Arc<ClientShared> {
        Arc::new(ClientShared {
            id: 0,
            addr: addr.to_owned(),
            laddr: String::new(),
            fd: -1,
            thread: 0,
            created: Instant::now(),
            info: Mutex::new(ClientInfo::default()),
            killed: AtomicBool::new(false),
            watch_dirty: AtomicBool::new(false),
            last_interaction_ms: AtomicU64::new(unix_ms()),
            last_cmd: AtomicUsize::new(0),
            buffers: BufferStats::default(),
            blocked: AtomicBool::new(false),
        })
    }

    /// A key was modified: clients watching it will fail their EXEC.
    #[inline]
    pub fn touch(&self, db: usize, key: &[u8]) {
        self.hot.add(|c| &c.dirty, 1);
        crate::tracking::touched(self, key);
        if self.watched.load(Ordering::Relaxed) == 0 {
            return;
        }
        if let Some(list) = self.watches.lock().get(&(db, key.to_vec())) {
            for c in list {
                c.watch_dirty.store(true, Ordering::Relaxed);
            }
        }
    }

    /// The watched keys of `db` (or of every db): FLUSHDB, FLUSHALL and SWAPDB touch those that
    /// exist, as Redis's `touchAllWatchedKeysInDb` does.
    pub fn watched_keys(&self, db: Option<usize>) -> Vec<WatchKey> {
        if self.watched.load(Ordering::Relaxed) == 0 {
            return Vec::new();
        }
        self.watches
            .lock()
            .keys()
            .filter(|(d, _)| db.is_none_or(|db| db == *d))
            .cloned()
            .collect()
    }

    /// Marks the watchers of `key` dirty without counting a change (the flush already did).
    pub fn touch_watchers(&self, db: usize, key: &[u8]) {
        if self.watched.load(Ordering::Relaxed) == 0 {
            return;
        }
        if let Some(list) = self.watches.lock().get(&(db, key.to_vec())) {
            for c in list {
                c.watch_dirty.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Records the command counter for the ops/sec estimate (called from thread 0's cron).
    pub fn sample_ops(&self, now_ms: u64) {
        let total = self.hot.get(|c| &c.commands_processed);
        let mut samples = self.ops_samples.lock();
        if samples.len() == OPS_SAMPLES {
            samples.pop_front();
        }
        samples.push_back((now_ms, total));
    }

    /// Commands per second over the sampled window, as Redis's `getInstantaneousMetric`.
    pub fn instantaneous_ops_per_sec(&self) -> u64 {
        let samples = self.ops_samples.lock();
        match (samples.front(), samples.back()) {
            (Some(&(t0, c0)), Some(&(t1, c1))) if t1 > t0 => (c1 - c0) * 1000 / (t1 - t0),
            _ => 0,
        }
    }

    /// What the connected clients hold, as their threads last published it: (the sum of their
    /// total memory, the largest query buffer, the largest reply buffer) — INFO's
    /// `mem_clients_normal` and `client_recent_max_input/output_buffer`.
    pub fn client_memory(&self) -> (usize, usize, usize) {
        let clients = self.clients.lock();
        clients
            .values()
            .fold((0, 0, 0), |(total, query, reply), c| {
                let b = &c.buffers;
                let q = b.query_bytes.load(Ordering::Relaxed)
                    + b.query_free_bytes.load(Ordering::Relaxed);
                let r = b
                    .reply_capacity_bytes
                    .load(Ordering::Relaxed)
                    .max(b.reply_bytes.load(Ordering::Relaxed));
                (
                    total + b.total_bytes.load(Ordering::Relaxed),
                    query.max(q),
                    reply.max(r),
                )
            })
    }

    /// Records `used_memory` before the dataset loads: MEMORY STATS' `startup.allocated`, what
    /// an empty server of this configuration uses (Redis's `initial_memory_usage`).
    pub fn note_initial_memory(&self) {
        let heaps: u64 = self.shards.iter().map(|s| s.lock().heap_bytes()).sum();
        let used = crate::alloc::allocated_bytes() as u64 + heaps;
        self.initial_memory.store(used, Ordering::Relaxed);
    }

    /// `used_memory` once startup was done (see `note_initial_memory`).
    pub fn initial_memory(&self) -> u64 {
        self.initial_memory.load(Ordering::Relaxed)
    }

    /// Raises the recorded peak to `used` and returns the peak.
    pub fn note_used_memory(&self, used: u64) -> u64 {
        self.used_memory_peak
            .fetch_max(used, Ordering::Relaxed)
            .max(used)
    }

    /// Counts an error reply by its code (INFO errorstats).
    pub fn count_error(&self, text: &[u8]) {
        self.stats.total_errors.fetch_add(1, Ordering::Relaxed);
        let code = text.split(|&b| b == b' ').next().unwrap_or(b"ERR");
        let code = String::from_utf8_lossy(code).into_owned();
        *self.errorstats.lock().entry(code).or_default() += 1;
    }

    /// Marks `client` killed and tells its thread to close it (CLIENT KILL).
    pub fn kill(&self, client: &ClientShared) {
        client.killed.store(true, Ordering::Relaxed);
        self.mail
            .post_one(self, client.thread, client.id, crate::mail::Mail::Kill);
    }

    /// Wakes I/O thread `thread` (mail for it, a kill).
    pub fn wake(&self, thread: usize) {
        if let Some(waker) = self.wakers.read().get(thread) {
            let _ = waker.wake();
        }
    }

    /// Wakes every I/O thread (shutdown, CLIENT KILL).
    pub fn wake_all(&self) {
        for waker in self.wakers.read().iter() {
            let _ = waker.wake();
        }
    }
}
