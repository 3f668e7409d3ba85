//! Server commands: INFO, DBSIZE, FLUSHDB/FLUSHALL, SWAPDB, TIME, SHUTDOWN, SLOWLOG, LATENCY,
//! LOLWUT, and the CONFIG and MEMORY table lines (their handlers are `config.rs` and
//! `memory.rs`; DEBUG is `debug.rs`, COMMAND is `introspect/`). CONFIG, MEMORY, SLOWLOG and
//! LATENCY are containers: each subcommand is a table line of its own (`config|get`…).
//!
//! INFO has Redis 7's sections and field names (the ones tools such as redis_exporter read), plus
//! densekv's own memory figures: heap accounting, SmallMap hint counters and shape-cache counters.

use super::args::{is, parse_i64};
use super::config;
use crate::client::ClientState;
use crate::command::COMMANDS as ALL_COMMANDS;
use crate::command::{
    ADMIN, ALL, ALLOW_BUSY, Ctx, FAST, LOADING, NO_MULTI, NOKEYS, NONE, NOSCRIPT, READONLY, STALE,
    Spec, WRITE, container, table,
};
use crate::config::Config;
use crate::server::{Server, SlowEntry, unix_ms};
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

pub static COMMANDS: &[Spec] = table! {
    // name     arity, flags,                                                      keys,   member, handler,   subcommands
    "info",     -1,    STALE | LOADING,                                            ALL,    0,      info;
    "dbsize",   1,     READONLY | FAST,                                            ALL,    0,      dbsize;
    "flushdb",  -1,    WRITE,                                                      ALL,    0,      flushdb;
    "flushall", -1,    WRITE,                                                      ALL,    0,      flushall;
    "swapdb",   3,     WRITE | FAST,                                               ALL,    0,      swapdb;
    "config",   -2,    NONE,                                                       NOKEYS, 0,      container, CONFIG_SUBCOMMANDS;
    "time",     1,     FAST | LOADING | STALE,                                     NOKEYS, 0,      time;
    "shutdown", -1,    ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY, NOKEYS, 0,      shutdown;
    "memory",   -2,    NONE,                                                       NOKEYS, 0,      container, super::memory::SUBCOMMANDS;
    "slowlog",  -2,    NONE,                                                       NOKEYS, 0,      container, SLOWLOG_SUBCOMMANDS;
    "latency",  -2,    NONE,                                                       NOKEYS, 0,      container, LATENCY_SUBCOMMANDS;
    "lolwut",   -1,    READONLY | FAST,                                            NOKEYS, 0,      lolwut;
};

static CONFIG_SUBCOMMANDS: &[Spec] = table! {
    // name             arity, flags,                              keys,   member, handler
    "config|get",       -3,    ADMIN | NOSCRIPT | LOADING | STALE, NOKEYS, 0,      config::get;
    "config|set",       -4,    ADMIN | NOSCRIPT | LOADING | STALE, NOKEYS, 0,      config::set;
    "config|resetstat", 2,     ADMIN | NOSCRIPT | LOADING | STALE, NOKEYS, 0,      config::resetstat;
    "config|rewrite",   2,     ADMIN | NOSCRIPT | LOADING | STALE, NOKEYS, 0,      config::rewrite;
    "config|help",      2,     LOADING | STALE,                    NOKEYS, 0,      config::help;
};

static SLOWLOG_SUBCOMMANDS: &[Spec] = table! {
    // name          arity, flags,                   keys,   member, handler
    "slowlog|get",   -2,    ADMIN | LOADING | STALE, NOKEYS, 0,      slowlog_get;
    "slowlog|len",   2,     ADMIN | LOADING | STALE, NOKEYS, 0,      slowlog_len;
    "slowlog|reset", 2,     ADMIN | LOADING | STALE, NOKEYS, 0,      slowlog_reset;
    "slowlog|help",  2,     LOADING | STALE,         NOKEYS, 0,      slowlog_help;
};

static LATENCY_SUBCOMMANDS: &[Spec] = table! {
    // name            arity, flags,                              keys,   member, handler
    "latency|latest",  2,     ADMIN | NOSCRIPT | LOADING | STALE, NOKEYS, 0,      latency_latest;
    "latency|history", 3,     ADMIN | NOSCRIPT | LOADING | STALE, NOKEYS, 0,      latency_history;
    "latency|reset",   -2,    ADMIN | NOSCRIPT | LOADING | STALE, NOKEYS, 0,      latency_reset;
    "latency|doctor",  2,     ADMIN | NOSCRIPT | LOADING | STALE, NOKEYS, 0,      latency_doctor;
    "latency|help",    2,     LOADING | STALE,                    NOKEYS, 0,      latency_help;
};

/// The arguments Redis replaces with `(redacted)` wherever it shows a command (slow log, later
/// MONITOR): AUTH's password (and user), HELLO's AUTH pair, and the values of CONFIG SET's
/// sensitive directives (`requirepass`, `masterauth`, `masteruser`).
pub(crate) fn secret_arguments(name: &str, args: &[&[u8]]) -> smallvec::SmallVec<[usize; 4]> {
    let mut secret = smallvec::SmallVec::new();
    match name {
        "auth" if args.len() <= 3 => secret.extend(1..args.len()),
        "hello" => {
            let mut j = 2;
            while j < args.len() {
                let more = args.len() - 1 - j;
                if is(args[j], "auth") && more >= 2 {
                    secret.extend([j + 1, j + 2]);
                    j += 2;
                } else if is(args[j], "setname") && more >= 1 {
                    j += 1;
                }
                j += 1;
            }
        }
        "config|set" => {
            for (at, pair) in args[2..].chunks(2).enumerate() {
                let sensitive = crate::config::lookup(pair[0])
                    .is_some_and(|n| n.directive.has(crate::config::flag::SENSITIVE));
                if sensitive && pair.len() == 2 {
                    secret.push(2 + at * 2 + 1);
                }
            }
        }
        _ => {}
    }
    secret
}

/// Records a command in the slow log when it took at least `slowlog-log-slower-than` µs (a
/// negative threshold logs nothing), keeping the newest `slowlog-max-len` entries.
pub fn slowlog_record(
    server: &Server,
    client: &ClientState,
    spec: &Spec,
    args: &[&[u8]],
    usec: u64,
) {
    let threshold = server.slowlog_slower_than.load(Ordering::Relaxed);
    if threshold < 0 || i64::try_from(usec).unwrap_or(i64::MAX) < threshold {
        return;
    }
    let max_len = usize::try_from(server.config.read().slowlog_max_len).unwrap_or(usize::MAX);
    if max_len == 0 {
        return;
    }
    let secret = secret_arguments(spec.name, args);
    let mut log = server.slowlog.lock();
    let id = log.next_id;
    log.next_id += 1;
    let mut kept: Vec<Vec<u8>> = args
        .iter()
        .enumerate()
        .take(31)
        .map(|(i, a)| {
            if secret.contains(&i) {
                b"(redacted)".to_vec()
            } else if a.len() > 128 {
                let mut v = a[..128].to_vec();
                v.extend_from_slice(format!("... ({} more bytes)", a.len() - 128).as_bytes());
                v
            } else {
                a.to_vec()
            }
        })
        .collect();
    if args.len() > 32 {
        kept.push(format!("... ({} more arguments)", args.len() - 31).into_bytes());
    } else if args.len() == 32 {
        kept.push(if secret.contains(&31) {
            b"(redacted)".to_vec()
        } else {
            args[31].to_vec()
        });
    }
    log.entries.push_front(SlowEntry {
        id,
        time_unix: unix_ms() / 1000,
        usec,
        args: kept,
        addr: client.shared.addr.clone(),
        name: client.shared.info.lock().name.clone(),
    });
    log.entries.truncate(max_len);
}

fn section_wanted(sections: &[String], name: &str, default: bool) -> bool {
    if sections.is_empty() {
        return default;
    }
    sections.iter().any(|s| {
        s == name
            || s == "all" && name != "modules"
            || s == "everything"
            || (s == "default" && default)
    })
}

pub fn info(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let sections: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_lowercase())
        .collect();
    let server = ctx.server;
    let config = server.config.read().clone();
    let now = unix_ms();
    let uptime = (now - server.started_unix_ms) / 1000;
    let mut text = String::new();
    let mut section = |name: &str, default: bool, body: &mut dyn FnMut(&mut String)| {
        if section_wanted(&sections, name, default) {
            if !text.is_empty() {
                text.push_str("\r\n");
            }
            let title = format!("{}{}", name[..1].to_uppercase(), &name[1..]);
            let _ = write!(text, "# {title}\r\n");
            body(&mut text);
        }
    };
    section("server", true, &mut |t| {
        info_server(t, server, &config, now, uptime);
    });
    section("clients", true, &mut |t| info_clients(t, server, &config));
    let mem = super::memory::totals(ctx);
    section("memory", true, &mut |t| {
        super::memory::info_section(t, server, &mem, &config);
    });
    section("persistence", true, &mut |t| info_persistence(t, server));
    let expired: u64 = ctx.locks.iter_mut().map(|s| s.expired_keys()).sum();
    section("stats", true, &mut |t| info_stats(t, server, expired));
    section("replication", true, &mut |t| info_replication(t, server));
    section("cpu", true, &mut info_cpu);
    section("modules", false, &mut |_| {});
    section("commandstats", false, &mut |t| info_commandstats(t, server));
    section("errorstats", true, &mut |t| info_errorstats(t, server));
    section("cluster", true, &mut |t| {
        t.push_str("cluster_enabled:0\r\n");
    });
    let keyspace = keyspace_lines(ctx, config.databases);
    section("keyspace", true, &mut |t| {
        for line in &keyspace {
            t.push_str(line);
        }
    });
    ctx.out.verbatim(text.as_bytes(), *b"txt");
}

/// Writes INFO's server section: versions, process, port, clock and configuration file.
fn info_server(t: &mut String, server: &Server, config: &Config, now: u64, uptime: u64) {
    let _ = write!(
        t,
        "redis_version:{}\r\ndensekv_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:standalone\r\nos:{} {}\r\narch_bits:64\r\nmonotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\nprocess_id:{}\r\nprocess_supervised:no\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{}\r\nconfigured_hz:{}\r\nio_threads_active:{}\r\nexecutable:{}\r\nconfig_file:{}\r\n",
        crate::REDIS_VERSION,
        crate::DENSEKV_VERSION,
        std::env::consts::OS,
        std::env::consts::ARCH,
        std::process::id(),
        server.run_id,
        server.port.load(Ordering::Relaxed),
        now * 1000,
        uptime,
        uptime / 86400,
        config.hz,
        config.hz,
        usize::from(config.io_threads > 1),
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        config.config_file.clone().unwrap_or_default(),
    );
}

/// Writes INFO's clients section: connected, maximum and blocked clients.
fn info_clients(t: &mut String, server: &Server, config: &Config) {
    let (_, max_query, max_reply) = server.client_memory();
    let _ = write!(
        t,
        "connected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\nclient_recent_max_input_buffer:{max_query}\r\nclient_recent_max_output_buffer:{max_reply}\r\nblocked_clients:{}\r\ntracking_clients:{}\r\nclients_in_timeout_table:{}\r\n",
        server.connected.load(Ordering::Relaxed),
        config.maxclients,
        server.blocked_clients.load(Ordering::Relaxed),
        server.tracking.counts().0,
        server.blocked_clients.load(Ordering::Relaxed)
    );
}

/// Writes INFO's persistence section (`crate::persistence`, `crate::bgsave` and `crate::aof`
/// keep the figures). There is no fork, so the copy-on-write fields are 0.
fn info_persistence(t: &mut String, server: &Server) {
    let p = &server.persistence;
    let job = crate::bgsave::running(server);
    let save = crate::bgsave::running_save(server);
    let (processed, total) = job.as_ref().map_or((0, 0), |j| {
        (j.keys_saved.load(Ordering::Relaxed), j.keys_total)
    });
    let perc = if total == 0 {
        0.0
    } else {
        processed as f64 * 100.0 / total as f64
    };
    let _ = write!(
        t,
        "loading:{}\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:{perc:.2}\r\ncurrent_save_keys_processed:{processed}\r\ncurrent_save_keys_total:{total}\r\nrdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\nrdb_last_bgsave_time_sec:{}\r\nrdb_current_bgsave_time_sec:{}\r\nrdb_saves:{}\r\nrdb_last_cow_size:0\r\nrdb_last_load_keys_expired:{}\r\nrdb_last_load_keys_loaded:{}\r\n",
        u8::from(p.load.loading.load(Ordering::Relaxed)),
        crate::persistence::changes_since_save(server),
        u8::from(save.is_some()),
        p.last_save_secs.load(Ordering::Relaxed),
        if p.last_bgsave_ok.load(Ordering::Relaxed) {
            "ok"
        } else {
            "err"
        },
        p.last_bgsave_secs.load(Ordering::Relaxed),
        save.as_ref().map_or(-1, |j| j.elapsed_secs() as i64),
        p.saves.load(Ordering::Relaxed),
        p.last_load_keys_expired.load(Ordering::Relaxed),
        p.last_load_keys_loaded.load(Ordering::Relaxed),
    );
    info_aof(t, server);
    if p.load.loading.load(Ordering::Relaxed) {
        info_loading(t, &p.load);
    }
}

/// INFO's AOF fields, Redis's names and order.
fn info_aof(t: &mut String, server: &Server) {
    let aof = &server.aof;
    let rw = &aof.rewrite;
    let running = crate::aof::rewrite::running(server);
    let current = if running {
        crate::server::unix_ms() / 1000 - rw.started_secs.load(Ordering::Relaxed)
    } else {
        0
    };
    let status = |ok: bool| if ok { "ok" } else { "err" };
    let _ = write!(
        t,
        "aof_enabled:{}\r\naof_rewrite_in_progress:{}\r\naof_rewrite_scheduled:{}\r\naof_last_rewrite_time_sec:{}\r\naof_current_rewrite_time_sec:{}\r\naof_last_bgrewrite_status:{}\r\naof_rewrites:{}\r\naof_rewrites_consecutive_failures:{}\r\naof_last_write_status:{}\r\naof_last_cow_size:0\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n",
        u8::from(aof.feeding()),
        u8::from(running),
        u8::from(rw.scheduled.load(Ordering::Relaxed)),
        rw.last_secs.load(Ordering::Relaxed),
        if running { current as i64 } else { -1 },
        status(rw.last_ok.load(Ordering::Relaxed)),
        rw.rewrites.load(Ordering::Relaxed),
        rw.consecutive_failures.load(Ordering::Relaxed),
        status(!aof.write_failed.load(Ordering::Relaxed)),
    );
    if server.config.read().appendonly {
        let _ = write!(
            t,
            "aof_current_size:{}\r\naof_base_size:{}\r\naof_pending_rewrite:{}\r\naof_buffer_length:{}\r\naof_pending_bio_fsync:{}\r\naof_delayed_fsync:{}\r\n",
            aof.current_size.load(Ordering::Relaxed),
            aof.base_size.load(Ordering::Relaxed),
            u8::from(rw.scheduled.load(Ordering::Relaxed)),
            aof.buffer_len(),
            u8::from(aof.fsync_pending()),
            aof.delayed_fsync.load(Ordering::Relaxed),
        );
    }
}

/// INFO's fields of a load in progress, with Redis's percentage and ETA arithmetic.
fn info_loading(t: &mut String, load: &crate::rdb_load::Progress) {
    let start = load.start_secs.load(Ordering::Relaxed);
    let total = load.total_bytes.load(Ordering::Relaxed);
    let used_mem = load.rdb_used_mem.load(Ordering::Relaxed);
    let loaded = load.loaded_bytes.load(Ordering::Relaxed);
    let (perc, remaining) = if total > 0 {
        (
            loaded as f64 * 100.0 / total as f64,
            total.saturating_sub(loaded),
        )
    } else if used_mem > 0 {
        let perc = (loaded as f64 * 100.0 / used_mem as f64).min(99.99);
        (perc, used_mem.saturating_sub(loaded).max(1))
    } else {
        (0.0, 1)
    };
    let elapsed = (crate::server::unix_ms() / 1000).saturating_sub(start);
    let eta = if elapsed == 0 {
        1
    } else {
        elapsed * remaining / (loaded + 1)
    };
    let _ = write!(
        t,
        "loading_start_time:{start}\r\nloading_total_bytes:{total}\r\nloading_rdb_used_mem:{used_mem}\r\nloading_loaded_bytes:{loaded}\r\nloading_loaded_perc:{perc:.2}\r\nloading_eta_seconds:{eta}\r\n"
    );
}

/// Writes INFO's stats section: connection, command, traffic, keyspace and error counters.
fn info_stats(t: &mut String, server: &Server, expired: u64) {
    let st = &server.stats;
    let (exceeded_total, exceeded_current) = server.eviction.exceeded_ms();
    let (channels, patterns, shard_channels) = server.pubsub.sizes();
    let (_, tracking_keys, tracking_items, tracking_prefixes) = server.tracking.counts();
    let _ = write!(
        t,
        "total_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nrejected_connections:{}\r\nexpired_keys:{}\r\nevicted_keys:{}\r\nevicted_clients:0\r\ntotal_eviction_exceeded_time:{}\r\ncurrent_eviction_exceeded_time:{}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{channels}\r\npubsub_patterns:{patterns}\r\npubsubshard_channels:{shard_channels}\r\nactive_defrag_hits:{}\r\nactive_defrag_misses:{}\r\nactive_defrag_key_hits:{}\r\nactive_defrag_key_misses:{}\r\ntracking_total_keys:{}\r\ntracking_total_items:{}\r\ntracking_total_prefixes:{}\r\ntotal_error_replies:{}\r\n",
        st.connections_received.load(Ordering::Relaxed),
        server.hot.get(|c| &c.commands_processed),
        server.instantaneous_ops_per_sec(),
        st.net_input_bytes.load(Ordering::Relaxed),
        st.net_output_bytes.load(Ordering::Relaxed),
        st.rejected_connections.load(Ordering::Relaxed),
        expired,
        server.eviction.evicted_keys.load(Ordering::Relaxed),
        exceeded_total,
        exceeded_current,
        server.hot.get(|c| &c.keyspace_hits),
        server.hot.get(|c| &c.keyspace_misses),
        server.defrag.hits.load(Ordering::Relaxed),
        server.defrag.misses.load(Ordering::Relaxed),
        server.defrag.hits.load(Ordering::Relaxed),
        server.defrag.misses.load(Ordering::Relaxed),
        tracking_keys,
        tracking_items,
        tracking_prefixes,
        st.total_errors.load(Ordering::Relaxed),
    );
}

/// Writes INFO's replication section: always a master without replicas.
fn info_replication(t: &mut String, server: &Server) {
    let _ = write!(
        t,
        "role:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\nmaster_replid:{}\r\nmaster_repl_offset:0\r\nrepl_backlog_active:0\r\n",
        server.run_id
    );
}

/// Writes INFO's cpu section: the process's user and system time.
fn info_cpu(t: &mut String) {
    let (user, sys) = cpu_times();
    let _ = write!(
        t,
        "used_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\nused_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\n"
    );
}

/// Writes INFO's commandstats section: one line per command or subcommand (by its full name,
/// `cmdstat_config|get`) that was called, failed or rejected at least once, as Redis's
/// `genRedisInfoStringCommandStats` (a container given alone is rejected under its own name).
fn info_commandstats(t: &mut String, server: &Server) {
    for (i, spec) in ALL_COMMANDS.iter().enumerate() {
        let s = &server.command_stats[i];
        let calls = server.hot.get(|c| &c.calls[i]);
        let (rejected, failed) = (
            s.rejected.load(Ordering::Relaxed),
            s.failed.load(Ordering::Relaxed),
        );
        if calls == 0 && rejected == 0 && failed == 0 {
            continue;
        }
        let usec = server.hot.get(|c| &c.usec[i]);
        // Redis divides in single precision: `(float)microseconds / calls`.
        let per_call = if calls == 0 {
            0.0
        } else {
            f64::from(usec as f32 / calls as f32)
        };
        let _ = write!(
            t,
            "cmdstat_{}:calls={calls},usec={usec},usec_per_call={per_call:.2},rejected_calls={rejected},failed_calls={failed}\r\n",
            spec.name,
        );
    }
}

/// Writes INFO's errorstats section: one line per error code, sorted.
fn info_errorstats(t: &mut String, server: &Server) {
    let mut errors: Vec<_> = server
        .errorstats
        .lock()
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    errors.sort();
    for (code, count) in errors {
        let _ = write!(t, "errorstat_{code}:count={count}\r\n");
    }
}

/// INFO's keyspace lines: keys, expiring keys and average TTL of every non-empty database.
fn keyspace_lines(ctx: &mut Ctx<'_, '_>, databases: usize) -> Vec<String> {
    let mut keyspace = Vec::new();
    for db in 0..databases {
        let (mut keys, mut expires, mut ttl_sum, mut ttl_n) = (0, 0, 0u64, 0u64);
        for shard in ctx.locks.iter_mut() {
            keys += shard.len(db);
            expires += shard.expires(db);
            let avg = shard.avg_ttl_ms(db);
            if avg > 0 {
                ttl_sum += avg;
                ttl_n += 1;
            }
        }
        if keys > 0 {
            keyspace.push(format!(
                "db{db}:keys={keys},expires={expires},avg_ttl={}\r\n",
                ttl_sum.checked_div(ttl_n).unwrap_or(0)
            ));
        }
    }
    keyspace
}

fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &raw mut usage);
        usage
    };
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}

/// Before a flush: marks the watchers of the watched keys that exist in `db` (or any db) dirty.
fn touch_existing_watched(ctx: &mut Ctx<'_, '_>, db: Option<usize>) {
    let server = ctx.server;
    let now = ctx.now_ms;
    for (d, key) in server.watched_keys(db) {
        if ctx.shard(&key).contains(d, &key, now) {
            server.touch_watchers(d, &key);
        }
    }
}

pub fn dbsize(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let db = ctx.db();
    let total: usize = ctx.locks.iter_mut().map(|s| s.len(db)).sum();
    ctx.out.integer(total as i64);
}

fn flush_mode_ok(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> bool {
    match args.len() {
        1 => true,
        2 if is(args[1], "async") || is(args[1], "sync") => true,
        _ => {
            ctx.syntax_error();
            false
        }
    }
}

pub fn flushdb(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if !flush_mode_ok(ctx, args) {
        return;
    }
    let db = ctx.db();
    touch_existing_watched(ctx, Some(db));
    for shard in ctx.locks.iter_mut() {
        shard.flush(db);
    }
    crate::tracking::flushed(ctx.server);
    // Written to the append-only file even when the database was empty, as Redis forces it.
    ctx.force_propagation();
    ctx.ok();
}

pub fn flushall(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if !flush_mode_ok(ctx, args) {
        return;
    }
    touch_existing_watched(ctx, None);
    // Redis kills a running background save here: the flushed data is not saved after all.
    crate::bgsave::abort_save(ctx.server);
    for shard in ctx.locks.iter_mut() {
        for db in 0..shard.databases() {
            shard.flush(db);
        }
    }
    crate::tracking::flushed(ctx.server);
    // Redis's flushAllDataAndResetRDB: with save points the empty dataset is saved at once (a
    // failure is only logged), and the flush itself then counts as one change.
    if !ctx.server.config.read().save.is_empty() {
        let _ = ctx.with_all_shards(crate::persistence::save);
    }
    ctx.server.hot.add(|c| &c.dirty, 1);
    // Written to the append-only file even when every database was empty, as Redis forces it.
    ctx.force_propagation();
    ctx.ok();
}

pub fn swapdb(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let databases = ctx.server.config.read().databases;
    // Redis reads both indexes with getIntFromObjectOrReply: a value outside a C int is as
    // invalid as a word, and the first index is checked before the second.
    let index = |arg: &[u8]| parse_i64(arg).filter(|&i| i32::try_from(i).is_ok());
    let Some(a) = index(args[1]) else {
        return ctx.error("ERR invalid first DB index");
    };
    let Some(b) = index(args[2]) else {
        return ctx.error("ERR invalid second DB index");
    };
    if a < 0 || b < 0 || a as usize >= databases || b as usize >= databases {
        return ctx.error("ERR DB index is out of range");
    }
    let (a, b) = (a as usize, b as usize);
    // A watched key is touched when it exists in either db: its value changes either way.
    let server = ctx.server;
    let now = ctx.now_ms;
    for (db, key) in server.watched_keys(None) {
        if db == a || db == b {
            let shard = ctx.shard(&key);
            if shard.contains(a, &key, now) || shard.contains(b, &key, now) {
                server.touch_watchers(db, &key);
            }
        }
    }
    for shard in ctx.locks.iter_mut() {
        shard.swap_dbs(a, b);
    }
    // Redis counts every SWAPDB that succeeds as a change (`server.dirty++`, even of a database
    // with itself), so it is always written to the append-only file; it touches no key.
    ctx.server.hot.add(|c| &c.dirty, 1);
    ctx.force_propagation();
    ctx.ok();
}

/// Redis's `addReplySubcommandSyntaxError`: a subcommand whose handler rejects its argument
/// count beyond what the table's arity already checked (SLOWLOG GET 1 2).
pub(crate) fn subcommand_syntax_error(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let mut text = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
    let sub = args[1];
    let sub = &sub[..sub
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(sub.len())
        .min(128)];
    text.extend_from_slice(sub);
    text.extend_from_slice(b"'. Try ");
    text.extend(args[0].iter().map(u8::to_ascii_uppercase));
    text.extend_from_slice(b" HELP.");
    ctx.failed = true;
    ctx.server.count_error(&text);
    ctx.out.error(&text);
}

pub(super) fn help(ctx: &mut Ctx<'_, '_>, lines: &[&str]) {
    ctx.out.array_len(lines.len());
    for line in lines {
        ctx.out.simple(line.as_bytes());
    }
}

pub fn time(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    ctx.out.array_len(2);
    ctx.out.bulk(now.as_secs().to_string().as_bytes());
    ctx.out.bulk(now.subsec_micros().to_string().as_bytes());
}

pub fn shutdown(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (mut save, mut nosave, mut force, mut abort, mut other) =
        (false, false, false, false, false);
    for &a in &args[1..] {
        if is(a, "save") {
            save = true;
        } else if is(a, "nosave") {
            nosave = true;
        } else if is(a, "force") {
            force = true;
        } else if is(a, "now") {
            other = true;
        } else if is(a, "abort") {
            abort = true;
        } else {
            return ctx.syntax_error();
        }
    }
    if (abort && (save || nosave || force || other)) || (save && nosave) {
        return ctx.syntax_error();
    }
    if abort {
        return ctx.error("ERR No shutdown in progress.");
    }
    if !nosave && ctx.server.scripting.busy() {
        // Only SHUTDOWN NOSAVE stops a busy script (Redis's `shutdownCommand`).
        return ctx.error(crate::scripting::busy::busy_error(ctx.server));
    }
    crate::log::warning("User requested shutdown...");
    if crate::persistence::begin_shutdown(ctx.server, save, nosave) {
        let may_exit = ctx.with_all_shards(|server, shards| {
            crate::persistence::save_before_exit(server, shards, force)
        });
        if !may_exit {
            return ctx.error("ERR Errors trying to SHUTDOWN. Check logs.");
        }
    }
    ctx.server.shutdown.store(true, Ordering::Relaxed);
    ctx.server.wake_all();
    ctx.client.close_now = true;
}

/// SLOWLOG GET [count]: the newest `count` entries (10 by default, -1 for all).
pub fn slowlog_get(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    // The table's arity (-2) admits any count of arguments; Redis's handler takes at most one.
    if args.len() > 3 {
        return subcommand_syntax_error(ctx, args);
    }
    let count = match args.get(2).map(|a| parse_i64(a)) {
        None => 10,
        Some(Some(n)) if n >= -1 => {
            if n == -1 {
                usize::MAX
            } else {
                n as usize
            }
        }
        Some(_) => return ctx.error("ERR count should be greater than or equal to -1"),
    };
    let entries: Vec<SlowEntry> = ctx
        .server
        .slowlog
        .lock()
        .entries
        .iter()
        .take(count)
        .cloned()
        .collect();
    ctx.out.array_len(entries.len());
    for e in entries {
        ctx.out.array_len(6);
        ctx.out.integer(e.id as i64);
        ctx.out.integer(e.time_unix as i64);
        ctx.out.integer(e.usec as i64);
        ctx.out.array_len(e.args.len());
        for a in &e.args {
            ctx.out.bulk(a);
        }
        ctx.out.bulk(e.addr.as_bytes());
        ctx.out.bulk(e.name.as_bytes());
    }
}

pub fn slowlog_len(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let len = ctx.server.slowlog.lock().entries.len();
    ctx.out.integer(len as i64);
}

pub fn slowlog_reset(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    ctx.server.slowlog.lock().entries.clear();
    ctx.ok();
}

pub fn slowlog_help(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    help(
        ctx,
        &[
            "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
            "HELP",
            "    Prints this help.",
        ],
    );
}

/// LATENCY LATEST: densekv records no latency events, so there is nothing to list.
pub fn latency_latest(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    ctx.out.array_len(0);
}

/// LATENCY HISTORY event: no event has samples.
pub fn latency_history(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    ctx.out.array_len(0);
}

/// LATENCY RESET [event …]: the number of event series reset, none.
pub fn latency_reset(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    ctx.out.integer(0);
}

pub fn latency_doctor(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    ctx.out.verbatim(b"Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sleep tonight.\n", *b"txt");
}

pub fn latency_help(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    help(
        ctx,
        &[
            "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HELP",
            "    Prints this help.",
        ],
    );
}

pub fn lolwut(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let text = format!(
        "densekv: the same keys in a fraction of the memory.\nRedis ver. {}\n",
        crate::REDIS_VERSION
    );
    ctx.out.verbatim(text.as_bytes(), *b"txt");
}
