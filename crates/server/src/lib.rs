//! The densekv server: a Redis 7.0-compatible server whose keyspace lives in compact PageHash
//! pages inside per-shard block heaps.
//!
//! ```text
//!  main.rs ─ config/ (redis.conf + --options, CONFIG) ─ log.rs
//!     └─ net/: io-threads × mio loop ── read ─▶ resp::Parser ─▶ dispatch.rs ─▶ command.rs table
//!                                          ▲                                      │ lock key shards
//!                                          └──── write ◀── resp::ReplyWriter ◀── commands/*.rs
//!  server.rs: shared state (shards, stats, clients, watches)      client.rs: per-connection state
//! ```
//!
//! # Threading model
//! `io-threads` threads (default: half the machine's cores, 1 to 8) each accept connections from the
//! shared listening socket and run them to completion in one mio event loop: no hand-off between
//! threads on the request path. The keyspace is cut into `shards` (default 8) by a per-process
//! seeded hash of the key; each shard is one `Mutex<store::Shard>` owning its own heap, so the heap's
//! single-owner contract holds (whoever holds the lock owns the heap). A command locks the shards of
//! its keys in ascending order, runs, and unlocks: two commands on different shards run in
//! parallel, multi-key commands are atomic, and no lock order can deadlock. Commands over the whole
//! keyspace (KEYS, SCAN, DBSIZE, FLUSHALL, INFO) and EXEC lock every shard. On a 2-core host the
//! default is one loop (the other core serves the kernel's network stack and the clients); with
//! more cores, loops run commands on different shards in parallel. A later step can pin one shard
//! per core and route requests to it.

pub mod alloc;
pub mod aof;
pub mod bgsave;
pub mod blocking;
pub mod client;
pub mod clock;
pub mod command;
pub mod commands;
pub mod config;
pub mod defrag;
pub mod dispatch;
pub mod evict;
pub mod hot_stats;
pub mod log;
pub mod longdouble;
pub mod mail;
pub mod monitor;
pub mod net;
pub mod notify;
pub mod number;
pub mod pause;
pub mod persistence;
pub mod propagate;
pub mod pubsub;
pub mod rdb_load;
pub mod scripting;
pub mod server;
pub mod tracking;

pub use config::Config;
pub use server::Server;

/// The Redis version densekv answers as (`redis_version` in INFO, `version` in HELLO).
pub const REDIS_VERSION: &str = "7.0.15";
/// densekv's own version.
pub const DENSEKV_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Loads the dataset (Redis's `loadDataFromDisk`): the AOF when `appendonly yes`, else the RDB
/// file; then opens the AOF for appending.
fn load_at_startup(server: &Server) -> Result<(), String> {
    if !server.config.read().appendonly {
        return rdb_load::load_at_startup(server);
    }
    // Clients wait (-LOADING) until appends have started, so no write goes unlogged.
    aof::load::load(server)?;
    aof::rewrite::open_at_startup(server)?;
    server
        .persistence
        .load
        .loading
        .store(false, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// Each I/O thread's stack. Scripts run on them, and Lua's C code recurses on the C stack
/// (pattern matching up to `LUA_MAXMATCHDEPTH` levels, `vendor/lua-src/PATCHES.md`): Redis runs
/// them on an 8 MiB main thread, Rust's default for a thread is 2 MiB. Only the pages a deep
/// script touches become resident.
pub const IO_THREAD_STACK: usize = 16 << 20;

/// Starts every I/O thread and blocks until shutdown.
pub fn run(config: Config) -> Result<(), String> {
    let threads = config.io_threads.max(1);
    log::install_crash_report();
    clock::init();
    command::set_renames(&config.renames);
    let server = std::sync::Arc::new(Server::new(config).map_err(|e| e.to_string())?);
    server.set_handle();
    log::notice("Server initialized");
    // Clients may connect from here on; until the file is loaded they get -LOADING.
    server
        .persistence
        .load
        .loading
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let listeners = net::bind(&server, threads).map_err(|e| e.to_string())?;
    let mut polls = Vec::new();
    for _ in 0..threads {
        let (poll, waker) = net::new_poll().map_err(|e| e.to_string())?;
        server.wakers.write().push(waker);
        polls.push(poll);
    }
    net::install_signal_handlers();
    log::notice(&format!(
        "densekv {} (Redis {}) started, pid={}, port={}, io-threads={}, shards={}",
        DENSEKV_VERSION,
        REDIS_VERSION,
        std::process::id(),
        server.port.load(std::sync::atomic::Ordering::Relaxed),
        threads,
        server.shard_count()
    ));
    let mut handles = Vec::new();
    for (index, (poll, listeners)) in polls.into_iter().zip(listeners).enumerate() {
        let server = std::sync::Arc::clone(&server);
        handles.push(
            std::thread::Builder::new()
                .name(format!("io-{index}"))
                .stack_size(IO_THREAD_STACK)
                .spawn(move || net::run_thread(&server, index, threads, listeners, poll))
                .map_err(|e| e.to_string())?,
        );
    }
    server.note_initial_memory();
    load_at_startup(&server)?;
    log::notice("Ready to accept connections tcp");
    config::effects::notify_ready(server.config.read().supervised);
    for handle in handles {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => unreachable!("a panic aborts the process (log::install_crash_report)"),
        }
    }
    log::notice("densekv is now ready to exit, bye bye...");
    Ok(())
}
