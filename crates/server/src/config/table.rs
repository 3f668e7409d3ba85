//! The directive table: Redis 7.0's `static_configs[]` (in its order: bools, strings, sds,
//! enums, numbers by C type, TLS, specials) followed by densekv's own directives, one line each.
//!
//! ```text
//!  field: type = default;  "name" | "alias",  flags,  kind(…),  status,  apply;
//! ```
//!
//! The `directives!` macro turns the lines into the [`Config`] struct (one typed field each, so
//! the code that reads a setting reads a field), its `Default`, and [`DIRECTIVES`], whose
//! entries carry a getter and a setter for their field. Names, aliases, flags, bounds, defaults
//! and validators were transcribed from redis-7.0.15/src/config.c; `differential_config.rs`
//! checks every one against a running redis-server (names and aliases from CONFIG GET *,
//! defaults from a fresh server, bounds and validators from the errors of CONFIG SET).
//!
//! Defaults that differ from Redis's, on purpose: `bind` (loopback only, where Redis binds every
//! interface and relies on protected mode) and `io-threads` (half the cores: densekv's threads
//! each run a whole event loop; Redis's default 1 means "no extra I/O threads").

use super::special::{self as sp};
use super::value::{enum_name_of, enum_value_of};
use super::{
    Apply, BoolSpec, Directive, EnumSpec, Kind, NumSpec, NumType, SpecialSpec, Status, StrSpec,
    flag::{
        DEBUG, DENY_LOADING, HIDDEN, IMMUTABLE, MODIFIABLE, MULTI_ARG, PROTECTED, SENSITIVE,
        VOLATILE,
    },
    num::{INTEGER, MEMORY, OCTAL, PERCENT},
};
use std::sync::LazyLock;

const INT_MAX: i64 = i32::MAX as i64;
const INT_MIN: i64 = i32::MIN as i64;
const UINT_MAX: i64 = u32::MAX as i64;
const LONG_MAX: i64 = i64::MAX;
const LLONG_MAX: i64 = i64::MAX;
/// `ULLONG_MAX` as Redis stores it in a `long long` bound: -1, compared as unsigned.
const ULLONG_MAX: i64 = -1;

// What the statuses say, once each.
const AOF: Status =
    Status::Works("as Redis 7.0's multi-part append-only file (docs/persistence.md)");
const EVICTION: Status = Status::Works(
    "two access bits per key and a CLOCK hand per shard stand in for Redis's 24-bit clock and sampling (docs/memory.md)",
);
const CLIENT_EVICTION: Status = Status::Planned("client eviction (maxmemory-clients)");
const MESSAGING: Status = Status::Works("as Redis 7.0 (docs/messaging.md)");
const HLL: Status = Status::Planned("HyperLogLog");
const REPLICATION: Status = Status::NoEffect("densekv has no replication");
const CLUSTER: Status = Status::NoEffect("densekv has no cluster mode");
const TLS: Status = Status::NoEffect("densekv has no TLS listener");
const DEFRAG: Status = Status::Works(
    "moves out-of-line keys and values out of mostly empty slabs (the heap's defrag hint); pages are repacked by compaction (docs/memory.md)",
);
const LAZYFREE: Status = Status::NoEffect(
    "densekv frees values in the foreground: a freed block goes straight back to its shard's heap",
);
const CPULIST: Status = Status::NoEffect("densekv does not pin threads to CPUs");
const STREAMS: Status = Status::NoEffect("densekv has no streams yet");
const PROC_TITLE: Status = Status::NoEffect("densekv does not rewrite its process title");
const TRACKING: Status =
    Status::NoEffect("densekv has no latency tracking (INFO latencystats) yet");
const NOTHING_TO_DO: Status = Status::NoEffect(
    "a debugging knob of Redis's loading, saving and watchdog that densekv has no counterpart of",
);
const RUNS: Status = Status::Works("");
const HASH_THRESHOLD: Status = Status::Maps(
    "records and small maps hold only hashes within it; OBJECT ENCODING says listpack until a write passes it, as Redis converts",
);
const INTSET_THRESHOLD: Status = Status::Maps(
    "the inline intset holds up to min(it, 512) integers, a boxed integer set up to it; OBJECT ENCODING says intset until a write passes it",
);
const ZSET_THRESHOLD: Status = Status::Maps(
    "the packed sorted set (inline, Redis's listpack) holds what is within it (at most 65,535 members), the index the rest",
);
const LIST_THRESHOLD: Status = Status::Maps(
    "the byte bound of a list chunk: -1..-5 are Redis's 4..64 KiB; a positive count keeps Redis's 8 KiB safety bound (chunks are bounded by bytes, not counts)",
);

/// `maxmemory-policy` (Redis's `MAXMEMORY_*` values).
pub static MAXMEMORY_POLICY: &[(&str, i32)] = &[
    ("volatile-lru", 1),
    ("volatile-lfu", 258),
    ("volatile-random", 768),
    ("volatile-ttl", 512),
    ("allkeys-lru", 1029),
    ("allkeys-lfu", 1286),
    ("allkeys-random", 1540),
    ("noeviction", 1792),
];
/// `syslog-facility` (`LOG_USER`, `LOG_LOCAL0`…).
pub static SYSLOG_FACILITY: &[(&str, i32)] = &[
    ("user", 8),
    ("local0", 128),
    ("local1", 136),
    ("local2", 144),
    ("local3", 152),
    ("local4", 160),
    ("local5", 168),
    ("local6", 176),
    ("local7", 184),
];
pub static LOGLEVEL: &[(&str, i32)] =
    &[("debug", 0), ("verbose", 1), ("notice", 2), ("warning", 3)];
pub static SUPERVISED: &[(&str, i32)] = &[("upstart", 3), ("systemd", 2), ("auto", 1), ("no", 0)];
static AOF_FSYNC: &[(&str, i32)] = &[("everysec", 2), ("always", 1), ("no", 0)];
/// `shutdown-on-sigterm` / `-sigint` bit flags.
pub static SHUTDOWN_ON_SIG: &[(&str, i32)] = &[
    ("default", 0),
    ("save", 1),
    ("nosave", 2),
    ("now", 4),
    ("force", 8),
];
static REPL_DISKLESS_LOAD: &[(&str, i32)] = &[("disabled", 0), ("on-empty-db", 1), ("swapdb", 2)];
static TLS_AUTH_CLIENTS: &[(&str, i32)] = &[("no", 0), ("yes", 1), ("optional", 2)];
/// `oom-score-adj`: `yes` is `relative`.
pub static OOM_SCORE_ADJ: &[(&str, i32)] =
    &[("no", 0), ("yes", 1), ("relative", 1), ("absolute", 2)];
static ACL_PUBSUB_DEFAULT: &[(&str, i32)] = &[("allchannels", 8), ("resetchannels", 0)];
static SANITIZE_DUMP: &[(&str, i32)] = &[("no", 0), ("yes", 1), ("clients", 2)];
/// `enable-protected-configs`, `enable-debug-command`, `enable-module-command`.
pub static PROTECTED_ACTION: &[(&str, i32)] = &[("no", 0), ("yes", 1), ("local", 2)];
static ENDPOINT_TYPE: &[(&str, i32)] = &[("ip", 0), ("hostname", 1), ("unknown-endpoint", 2)];
static PROPAGATION_ERROR: &[(&str, i32)] = &[("ignore", 0), ("panic", 1), ("panic-on-replicas", 2)];

/// A yes/no directive stored in a `bool` field.
macro_rules! yesno {
    ($f:ident, $valid:expr) => {
        Kind::Bool(BoolSpec {
            get: |c| c.$f,
            set: |c, v| c.$f = v,
            valid: $valid,
        })
    };
}

/// A C-string directive stored in a `String` field.
macro_rules! string {
    ($f:ident, $null_if_empty:expr, $valid:expr) => {
        Kind::Str(StrSpec {
            get: |c| c.$f.as_bytes(),
            set: |c, v| c.$f = String::from_utf8_lossy(v).into_owned(),
            null_if_empty: $null_if_empty,
            binary: false,
            valid: $valid,
        })
    };
}

/// A binary-safe (sds) directive stored in an `Option<Vec<u8>>` field; empty is `None`.
macro_rules! sds {
    ($f:ident,) => {
        Kind::Str(StrSpec {
            get: |c| c.$f.as_deref().unwrap_or_default(),
            set: |c, v| c.$f = (!v.is_empty()).then(|| v.to_vec()),
            null_if_empty: true,
            binary: true,
            valid: None,
        })
    };
}

/// An enum directive stored as its value in an `i32` field.
macro_rules! enumeration {
    ($f:ident, $names:expr, $valid:expr) => {
        Kind::Enum(EnumSpec {
            names: $names,
            get: |c| c.$f,
            set: |c, v| c.$f = v,
            valid: $valid,
        })
    };
}

/// An enum directive stored as its name in a `String` field (fields other modules read).
macro_rules! named {
    ($f:ident, $names:expr) => {
        Kind::Enum(EnumSpec {
            names: $names,
            get: |c| enum_value_of($names, &c.$f),
            set: |c, v| c.$f = enum_name_of($names, v).to_string(),
            valid: None,
        })
    };
}

/// A numeric directive stored in a field of any integer type (the bounds keep it in range).
macro_rules! number {
    ($f:ident, $ty:ident, $lower:expr, $upper:expr, $flags:expr, $valid:expr) => {
        Kind::Num(NumSpec {
            ty: NumType::$ty,
            lower: $lower,
            upper: $upper,
            flags: $flags,
            get: |c| c.$f as i64,
            set: |c, v| c.$f = v as _,
            valid: $valid,
        })
    };
}

/// A directive with its own set, get and rewrite (`special.rs`).
macro_rules! special {
    ($f:ident, $set:path, $get:path, $rewrite:path) => {
        Kind::Special(SpecialSpec {
            set: $set,
            get: $get,
            rewrite: $rewrite,
        })
    };
}

macro_rules! alias {
    () => {
        None
    };
    ($alias:literal) => {
        Some($alias)
    };
}

macro_rules! directives {
    ($( $field:ident : $ty:ty = $default:expr ; $name:literal $(| $alias:literal)? , $flags:expr , $kind:ident ( $($arg:tt)* ) , $status:expr , $apply:ident ; )*) => {
        /// Every setting: one field per directive (named after it; `timeout` is `timeout_secs`),
        /// plus what the file says beyond directives.
        #[derive(Clone, Debug)]
        pub struct Config {
            $( pub $field: $ty, )*
            /// `client-output-buffer-limit replica …` (hard, soft, soft seconds).
            pub output_limit_replica: (u64, u64, u64),
            /// `client-output-buffer-limit pubsub …` (hard, soft, soft seconds).
            pub output_limit_pubsub: (u64, u64, u64),
            /// The absolute path of the config file the server started from (CONFIG REWRITE).
            pub config_file: Option<String>,
            /// `rename-command from to` lines in file order (`to` empty: the command is removed).
            pub renames: Vec<(String, String)>,
            /// A `save` line was read from the file: later ones add save points to it.
            pub save_from_file: bool,
        }

        impl Default for Config {
            fn default() -> Config {
                Config {
                    $( $field: $default, )*
                    output_limit_replica: (256 << 20, 64 << 20, 60),
                    output_limit_pubsub: (32 << 20, 8 << 20, 60),
                    config_file: None,
                    renames: Vec::new(),
                    save_from_file: false,
                }
            }
        }

        /// Every directive, in Redis's table order, then densekv's own.
        #[allow(clippy::unnecessary_cast)]
        pub static DIRECTIVES: &[Directive] = &[
            $( Directive {
                name: $name,
                alias: alias!($($alias)?),
                flags: $flags,
                kind: $kind!($field, $($arg)*),
                status: $status,
                apply: Apply::$apply,
            }, )*
        ];
    };
}

/// The default configuration, for CONFIG REWRITE's "is it at its default" and refused values.
pub fn defaults() -> &'static Config {
    static DEFAULTS: LazyLock<Config> = LazyLock::new(Config::default);
    &DEFAULTS
}

/// Half the cores, 1 to 8: the event loops do all of a command's work (parse, execute, reply),
/// and the kernel's network stack and the clients on the same host need the rest. On 2 cores,
/// one loop beside redis-benchmark measured level or better than two, without the lock waits of
/// a preempted lock holder.
fn default_io_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    (cores / 2).clamp(1, 8)
}

directives! {
    // ---- bools ----
    rdbchecksum: bool = true; "rdbchecksum", IMMUTABLE, yesno(None), Status::Works("the CRC-64 trailer of RDB files (0 when off)"), None;
    daemonize: bool = false; "daemonize", IMMUTABLE, yesno(None), Status::Works("forks into the background after reading the configuration (not when supervised)"), None;
    io_threads_do_reads: bool = false; "io-threads-do-reads", DEBUG | IMMUTABLE, yesno(None), Status::NoEffect("densekv's io-threads always read, parse and run their clients' commands"), None;
    always_show_logo: bool = false; "always-show-logo", IMMUTABLE, yesno(None), Status::Works("the startup banner, also when the log is not a terminal"), None;
    protected_mode: bool = true; "protected-mode", MODIFIABLE, yesno(None), Status::Works("non-loopback clients are refused while no password is set"), None;
    rdbcompression: bool = true; "rdbcompression", MODIFIABLE, yesno(None), Status::Works("LZF for strings over 20 bytes in RDB files and DUMP payloads"), None;
    rdb_del_sync_files: bool = false; "rdb-del-sync-files", MODIFIABLE, yesno(None), Status::Works("RDB files made only for replication are deleted; densekv has no replication, so every RDB file it writes is the persistence file and is kept"), None;
    activerehashing: bool = true; "activerehashing", MODIFIABLE, yesno(None), Status::NoEffect("PageHash splits pages incrementally and never rehashes a table"), None;
    stop_writes_on_bgsave_error: bool = true; "stop-writes-on-bgsave-error", MODIFIABLE, yesno(None), Status::Works("after a failed background save, with save points, writes and PING get MISCONF until a save works"), None;
    set_proc_title: bool = true; "set-proc-title", IMMUTABLE, yesno(None), PROC_TITLE, None;
    dynamic_hz: bool = true; "dynamic-hz", MODIFIABLE, yesno(None), Status::NoEffect("the cron runs at `hz` whatever the number of clients"), None;
    lazyfree_lazy_eviction: bool = false; "lazyfree-lazy-eviction", DEBUG | MODIFIABLE, yesno(None), Status::Works("evicted keys go to the append-only file as UNLINK instead of DEL, as in Redis; their memory is freed at once either way"), Eviction;
    lazyfree_lazy_expire: bool = false; "lazyfree-lazy-expire", DEBUG | MODIFIABLE, yesno(None), LAZYFREE, None;
    lazyfree_lazy_server_del: bool = false; "lazyfree-lazy-server-del", DEBUG | MODIFIABLE, yesno(None), LAZYFREE, None;
    lazyfree_lazy_user_del: bool = false; "lazyfree-lazy-user-del", DEBUG | MODIFIABLE, yesno(None), LAZYFREE, None;
    lazyfree_lazy_user_flush: bool = false; "lazyfree-lazy-user-flush", DEBUG | MODIFIABLE, yesno(None), LAZYFREE, None;
    repl_disable_tcp_nodelay: bool = false; "repl-disable-tcp-nodelay", MODIFIABLE, yesno(None), REPLICATION, None;
    repl_diskless_sync: bool = true; "repl-diskless-sync", DEBUG | MODIFIABLE, yesno(None), REPLICATION, None;
    aof_rewrite_incremental_fsync: bool = true; "aof-rewrite-incremental-fsync", MODIFIABLE, yesno(None), AOF, None;
    no_appendfsync_on_rewrite: bool = false; "no-appendfsync-on-rewrite", MODIFIABLE, yesno(None), AOF, AofOptions;
    cluster_require_full_coverage: bool = true; "cluster-require-full-coverage", MODIFIABLE, yesno(None), CLUSTER, None;
    rdb_save_incremental_fsync: bool = true; "rdb-save-incremental-fsync", MODIFIABLE, yesno(None), Status::Works("a file being saved is fsynced every 32 MiB"), None;
    aof_load_truncated: bool = true; "aof-load-truncated", MODIFIABLE, yesno(None), AOF, None;
    aof_use_rdb_preamble: bool = true; "aof-use-rdb-preamble", MODIFIABLE, yesno(None), AOF, None;
    aof_timestamp_enabled: bool = false; "aof-timestamp-enabled", MODIFIABLE, yesno(None), AOF, AofOptions;
    cluster_replica_no_failover: bool = false; "cluster-replica-no-failover" | "cluster-slave-no-failover", MODIFIABLE, yesno(None), CLUSTER, None;
    replica_lazy_flush: bool = false; "replica-lazy-flush" | "slave-lazy-flush", MODIFIABLE, yesno(None), REPLICATION, None;
    replica_serve_stale_data: bool = true; "replica-serve-stale-data" | "slave-serve-stale-data", MODIFIABLE, yesno(None), REPLICATION, None;
    replica_read_only: bool = true; "replica-read-only" | "slave-read-only", DEBUG | MODIFIABLE, yesno(None), REPLICATION, None;
    replica_ignore_maxmemory: bool = true; "replica-ignore-maxmemory" | "slave-ignore-maxmemory", MODIFIABLE, yesno(None), REPLICATION, None;
    jemalloc_bg_thread: bool = true; "jemalloc-bg-thread", MODIFIABLE, yesno(None), Status::NoEffect("densekv has no jemalloc: its block heap purges freed runs itself"), None;
    activedefrag: bool = false; "activedefrag", DEBUG | MODIFIABLE, yesno(None), DEFRAG, None;
    syslog_enabled: bool = false; "syslog-enabled", IMMUTABLE, yesno(None), Status::Works("log lines also go to syslog(3)"), None;
    cluster_enabled: bool = false; "cluster-enabled", IMMUTABLE, yesno(None), Status::Refused("cluster mode"), None;
    appendonly: bool = false; "appendonly", MODIFIABLE | DENY_LOADING, yesno(None), AOF, AppendOnly;
    cluster_allow_reads_when_down: bool = false; "cluster-allow-reads-when-down", MODIFIABLE, yesno(None), CLUSTER, None;
    cluster_allow_pubsubshard_when_down: bool = true; "cluster-allow-pubsubshard-when-down", MODIFIABLE, yesno(None), CLUSTER, None;
    crash_log_enabled: bool = true; "crash-log-enabled", MODIFIABLE, yesno(None), Status::Works("a panic writes the bug report before the process aborts"), CrashLog;
    crash_memcheck_enabled: bool = true; "crash-memcheck-enabled", MODIFIABLE, yesno(None), Status::NoEffect("densekv's crash report runs no memory test"), None;
    use_exit_on_panic: bool = false; "use-exit-on-panic", MODIFIABLE | HIDDEN, yesno(None), Status::NoEffect("a densekv panic always aborts"), None;
    disable_thp: bool = true; "disable-thp", IMMUTABLE, yesno(None), Status::Works("prctl(PR_SET_THP_DISABLE) at startup"), None;
    cluster_allow_replica_migration: bool = true; "cluster-allow-replica-migration", MODIFIABLE, yesno(None), CLUSTER, None;
    replica_announced: bool = true; "replica-announced", MODIFIABLE, yesno(None), REPLICATION, None;
    latency_tracking: bool = true; "latency-tracking", MODIFIABLE, yesno(None), TRACKING, None;
    aof_disable_auto_gc: bool = false; "aof-disable-auto-gc", MODIFIABLE, yesno(None), AOF, None;
    replica_ignore_disk_write_errors: bool = false; "replica-ignore-disk-write-errors", MODIFIABLE, yesno(None), REPLICATION, None;

    // ---- strings ----
    aclfile: String = String::new(); "aclfile", IMMUTABLE, string(false, None), Status::Refused("ACL files"), None;
    unixsocket: String = String::new(); "unixsocket", IMMUTABLE, string(true, None), Status::Refused("Unix sockets"), None;
    pidfile: String = String::new(); "pidfile", IMMUTABLE, string(true, None), Status::Works("written at startup, removed at exit"), None;
    replica_announce_ip: String = String::new(); "replica-announce-ip" | "slave-announce-ip", MODIFIABLE, string(true, None), REPLICATION, None;
    masteruser: String = String::new(); "masteruser", MODIFIABLE | SENSITIVE, string(true, None), REPLICATION, None;
    cluster_announce_ip: String = String::new(); "cluster-announce-ip", MODIFIABLE, string(true, None), CLUSTER, None;
    cluster_config_file: String = "nodes.conf".into(); "cluster-config-file", IMMUTABLE, string(false, None), CLUSTER, None;
    cluster_announce_hostname: String = String::new(); "cluster-announce-hostname", MODIFIABLE, string(true, Some(sp::valid_hostname)), CLUSTER, None;
    syslog_ident: String = "redis".into(); "syslog-ident", IMMUTABLE, string(false, None), Status::Works("the syslog(3) identity"), None;
    dbfilename: String = "dump.rdb".into(); "dbfilename", MODIFIABLE | PROTECTED, string(false, Some(sp::valid_db_filename)), Status::Works("the RDB file SAVE and shutdown write and startup loads, in dir"), None;
    appendfilename: String = "appendonly.aof".into(); "appendfilename", IMMUTABLE, string(false, Some(sp::valid_aof_filename)), AOF, None;
    appenddirname: String = "appendonlydir".into(); "appenddirname", IMMUTABLE, string(false, Some(sp::valid_aof_dirname)), AOF, None;
    server_cpulist: String = String::new(); "server_cpulist", IMMUTABLE, string(true, None), CPULIST, None;
    bio_cpulist: String = String::new(); "bio_cpulist", IMMUTABLE, string(true, None), CPULIST, None;
    aof_rewrite_cpulist: String = String::new(); "aof_rewrite_cpulist", IMMUTABLE, string(true, None), CPULIST, None;
    bgsave_cpulist: String = String::new(); "bgsave_cpulist", IMMUTABLE, string(true, None), CPULIST, None;
    ignore_warnings: String = String::new(); "ignore-warnings", MODIFIABLE, string(false, None), Status::NoEffect("densekv runs none of the kernel checks it silences"), None;
    proc_title_template: String = "{title} {listen-addr} {server-mode}".into(); "proc-title-template", MODIFIABLE, string(false, Some(sp::valid_proc_title)), PROC_TITLE, None;
    bind_source_addr: String = String::new(); "bind-source-addr", MODIFIABLE, string(true, None), REPLICATION, None;
    logfile: String = String::new(); "logfile", IMMUTABLE, string(false, None), Status::Works("empty: standard output"), None;

    // ---- sds ----
    masterauth: Option<Vec<u8>> = None; "masterauth", MODIFIABLE | SENSITIVE, sds(), REPLICATION, None;
    requirepass: Option<Vec<u8>> = None; "requirepass", MODIFIABLE | SENSITIVE, sds(), Status::Works("the default user's password (AUTH, HELLO AUTH)"), None;

    // ---- enums ----
    supervised: i32 = 0; "supervised", IMMUTABLE, enumeration(SUPERVISED, None), Status::Works("systemd: READY=1 over $NOTIFY_SOCKET once listening; upstart: SIGSTOP"), None;
    syslog_facility: i32 = 128; "syslog-facility", IMMUTABLE, enumeration(SYSLOG_FACILITY, None), Status::Works("the syslog(3) facility"), None;
    repl_diskless_load: i32 = 0; "repl-diskless-load", DEBUG | MODIFIABLE | DENY_LOADING, enumeration(REPL_DISKLESS_LOAD, None), REPLICATION, None;
    loglevel: String = "notice".into(); "loglevel", MODIFIABLE, named(LOGLEVEL), Status::Works("CONFIG SET changes it at once"), LogLevel;
    maxmemory_policy: String = "noeviction".into(); "maxmemory-policy", MODIFIABLE, named(MAXMEMORY_POLICY), EVICTION, Eviction;
    appendfsync: i32 = 2; "appendfsync", MODIFIABLE, enumeration(AOF_FSYNC, None), AOF, AofOptions;
    oom_score_adj: i32 = 0; "oom-score-adj", MODIFIABLE, enumeration(OOM_SCORE_ADJ, None), Status::Works("writes /proc/self/oom_score_adj as Redis's setOOMScoreAdj"), OomScore;
    acl_pubsub_default: i32 = 0; "acl-pubsub-default", MODIFIABLE, enumeration(ACL_PUBSUB_DEFAULT, None), Status::NoEffect("densekv has only the default user, who may use every channel"), None;
    sanitize_dump_payload: i32 = 0; "sanitize-dump-payload", DEBUG | MODIFIABLE, enumeration(SANITIZE_DUMP, None), Status::NoEffect("densekv has no RESTORE yet"), None;
    enable_protected_configs: i32 = 0; "enable-protected-configs", IMMUTABLE, enumeration(PROTECTED_ACTION, None), Status::Works("whether CONFIG SET may change dir and dbfilename"), None;
    enable_debug_command: String = "no".into(); "enable-debug-command", IMMUTABLE, named(PROTECTED_ACTION), Status::Works("whether DEBUG is allowed"), None;
    enable_module_command: i32 = 0; "enable-module-command", IMMUTABLE, enumeration(PROTECTED_ACTION, None), Status::NoEffect("densekv has no MODULE command"), None;
    cluster_preferred_endpoint_type: i32 = 0; "cluster-preferred-endpoint-type", MODIFIABLE, enumeration(ENDPOINT_TYPE, None), CLUSTER, None;
    propagation_error_behavior: i32 = 0; "propagation-error-behavior", MODIFIABLE, enumeration(PROPAGATION_ERROR, None), Status::NoEffect("nothing is propagated: densekv has no replication and no AOF yet"), None;
    shutdown_on_sigint: i32 = 0; "shutdown-on-sigint", MODIFIABLE | MULTI_ARG, enumeration(SHUTDOWN_ON_SIG, Some(sp::valid_shutdown_flags)), Status::Works("save, nosave and force steer the final RDB save as in Redis; now changes nothing (there are no replicas to wait for)"), None;
    shutdown_on_sigterm: i32 = 0; "shutdown-on-sigterm", MODIFIABLE | MULTI_ARG, enumeration(SHUTDOWN_ON_SIG, Some(sp::valid_shutdown_flags)), Status::Works("save, nosave and force steer the final RDB save as in Redis; now changes nothing (there are no replicas to wait for)"), None;

    // ---- int ----
    databases: usize = 16; "databases", IMMUTABLE, number(Int, 1, INT_MAX, INTEGER, None), RUNS, None;
    port: u16 = 6379; "port", MODIFIABLE, number(Int, 0, 65535, INTEGER, None), Status::Works("CONFIG SET of a new port needs the network loop to listen again (docs/config.md, CONFIG)"), Port;
    io_threads: usize = default_io_threads(); "io-threads", DEBUG | IMMUTABLE, number(Int, 1, 128, INTEGER, None), Status::Works("event-loop threads, each running its clients' commands; default half the cores (1-8)"), None;
    auto_aof_rewrite_percentage: i32 = 100; "auto-aof-rewrite-percentage", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), AOF, None;
    cluster_replica_validity_factor: i32 = 10; "cluster-replica-validity-factor" | "cluster-slave-validity-factor", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), CLUSTER, None;
    list_max_listpack_size: i32 = -2; "list-max-listpack-size" | "list-max-ziplist-size", MODIFIABLE, number(Int, INT_MIN, INT_MAX, INTEGER, None), LIST_THRESHOLD, EncodingLimits;
    tcp_keepalive: u64 = 300; "tcp-keepalive", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), Status::Works("keepalive probes on every accepted client socket after this many idle seconds, then every third of it, three times, as Redis's anetKeepAlive; a change applies to new connections"), None;
    cluster_migration_barrier: i32 = 1; "cluster-migration-barrier", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), CLUSTER, None;
    active_defrag_cycle_min: i32 = 1; "active-defrag-cycle-min", MODIFIABLE, number(Int, 1, 99, INTEGER, None), DEFRAG, None;
    active_defrag_cycle_max: i32 = 25; "active-defrag-cycle-max", MODIFIABLE, number(Int, 1, 99, INTEGER, None), DEFRAG, None;
    active_defrag_threshold_lower: i32 = 10; "active-defrag-threshold-lower", MODIFIABLE, number(Int, 0, 1000, INTEGER, None), DEFRAG, None;
    active_defrag_threshold_upper: i32 = 100; "active-defrag-threshold-upper", MODIFIABLE, number(Int, 0, 1000, INTEGER, None), DEFRAG, None;
    lfu_log_factor: i32 = 10; "lfu-log-factor", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), EVICTION, Eviction;
    lfu_decay_time: i32 = 1; "lfu-decay-time", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), EVICTION, Eviction;
    replica_priority: i32 = 100; "replica-priority" | "slave-priority", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), REPLICATION, None;
    repl_diskless_sync_delay: i32 = 5; "repl-diskless-sync-delay", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), REPLICATION, None;
    maxmemory_samples: i32 = 5; "maxmemory-samples", MODIFIABLE, number(Int, 1, INT_MAX, INTEGER, None), EVICTION, Eviction;
    maxmemory_eviction_tenacity: i32 = 10; "maxmemory-eviction-tenacity", MODIFIABLE, number(Int, 0, 100, INTEGER, None), EVICTION, Eviction;
    timeout_secs: u64 = 0; "timeout", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), Status::Works("idle clients are closed by their thread's cron"), None;
    replica_announce_port: i32 = 0; "replica-announce-port" | "slave-announce-port", MODIFIABLE, number(Int, 0, 65535, INTEGER, None), REPLICATION, None;
    tcp_backlog: u32 = 511; "tcp-backlog", IMMUTABLE, number(Int, 0, INT_MAX, INTEGER, None), RUNS, None;
    cluster_port: i32 = 0; "cluster-port", IMMUTABLE, number(Int, 0, 65535, INTEGER, None), CLUSTER, None;
    cluster_announce_bus_port: i32 = 0; "cluster-announce-bus-port", MODIFIABLE, number(Int, 0, 65535, INTEGER, None), CLUSTER, None;
    cluster_announce_port: i32 = 0; "cluster-announce-port", MODIFIABLE, number(Int, 0, 65535, INTEGER, None), CLUSTER, None;
    cluster_announce_tls_port: i32 = 0; "cluster-announce-tls-port", MODIFIABLE, number(Int, 0, 65535, INTEGER, None), CLUSTER, None;
    repl_timeout: i32 = 60; "repl-timeout", MODIFIABLE, number(Int, 1, INT_MAX, INTEGER, None), REPLICATION, None;
    repl_ping_replica_period: i32 = 10; "repl-ping-replica-period" | "repl-ping-slave-period", MODIFIABLE, number(Int, 1, INT_MAX, INTEGER, None), REPLICATION, None;
    list_compress_depth: i32 = 0; "list-compress-depth", DEBUG | MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), Status::NoEffect("densekv does not compress list chunks: its density comes from packing, and an LZF pass would cost every read of an inner chunk"), None;
    rdb_key_save_delay: i32 = 0; "rdb-key-save-delay", MODIFIABLE | HIDDEN, number(Int, INT_MIN, INT_MAX, INTEGER, None), Status::Works("the background save's walk sleeps this many µs per key (when negative, 1 µs per that many keys), outside every lock: a testing knob, as in Redis"), None;
    key_load_delay: i32 = 0; "key-load-delay", MODIFIABLE | HIDDEN, number(Int, INT_MIN, INT_MAX, INTEGER, None), Status::Works("loading sleeps this many µs per key (when negative, 1 µs per that many keys), holding no shard: a testing knob, as in Redis"), None;
    active_expire_effort: i32 = 1; "active-expire-effort", MODIFIABLE, number(Int, 1, 10, INTEGER, None), Status::NoEffect("densekv's active expiry has a fixed budget: 25% of each cron period"), None;
    hz: u32 = 10; "hz", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), Status::Works("kept within 1-500, as Redis does"), Hz;
    min_replicas_to_write: i32 = 0; "min-replicas-to-write" | "min-slaves-to-write", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), Status::Refused("replication"), None;
    min_replicas_max_lag: i32 = 10; "min-replicas-max-lag" | "min-slaves-max-lag", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), REPLICATION, None;
    watchdog_period: i32 = 0; "watchdog-period", MODIFIABLE | HIDDEN, number(Int, 0, INT_MAX, INTEGER, None), NOTHING_TO_DO, None;
    shutdown_timeout: i32 = 10; "shutdown-timeout", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), Status::Works("there are no replicas to wait for, so shutdown never waits"), None;
    repl_diskless_sync_max_replicas: i32 = 0; "repl-diskless-sync-max-replicas", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), REPLICATION, None;

    // ---- unsigned int ----
    maxclients: usize = 10_000; "maxclients", MODIFIABLE, number(UInt, 1, UINT_MAX, INTEGER, None), Status::Works("raises RLIMIT_NOFILE as Redis's adjustOpenFilesLimit, lowering maxclients when it cannot"), MaxClients;
    unixsocketperm: u32 = 0; "unixsocketperm", IMMUTABLE, number(UInt, 0, 0o777, OCTAL, None), Status::NoEffect("densekv listens on no Unix socket"), None;
    socket_mark_id: u32 = 0; "socket-mark-id", IMMUTABLE, number(UInt, 0, UINT_MAX, INTEGER, None), Status::NoEffect("listening sockets get no SO_MARK yet"), None;

    // ---- unsigned long ----
    active_defrag_max_scan_fields: u64 = 1000; "active-defrag-max-scan-fields", MODIFIABLE, number(ULong, 1, LONG_MAX, INTEGER, None), DEFRAG, None;
    slowlog_max_len: u64 = 128; "slowlog-max-len", MODIFIABLE, number(ULong, 0, LONG_MAX, INTEGER, None), RUNS, None;
    acllog_max_len: u64 = 128; "acllog-max-len", MODIFIABLE, number(ULong, 0, LONG_MAX, INTEGER, None), Status::NoEffect("densekv has no ACL log"), None;

    // ---- long long ----
    busy_reply_threshold: i64 = 5000; "busy-reply-threshold" | "lua-time-limit", MODIFIABLE, number(LongLong, 0, LONG_MAX, INTEGER, None), Status::Works("after this many ms a script is busy: other clients get -BUSY, SCRIPT KILL and FUNCTION KILL reach it"), None;
    cluster_node_timeout: i64 = 15000; "cluster-node-timeout", MODIFIABLE, number(LongLong, 0, LLONG_MAX, INTEGER, None), CLUSTER, None;
    slowlog_log_slower_than: i64 = 10_000; "slowlog-log-slower-than", MODIFIABLE, number(LongLong, -1, LLONG_MAX, INTEGER, None), RUNS, SlowLog;
    latency_monitor_threshold: i64 = 0; "latency-monitor-threshold", MODIFIABLE, number(LongLong, 0, LLONG_MAX, INTEGER, None), Status::NoEffect("LATENCY records no events yet"), None;
    proto_max_bulk_len: u64 = 512 << 20; "proto-max-bulk-len", DEBUG | MODIFIABLE, number(LongLong, 1 << 20, LONG_MAX, MEMORY, None), RUNS, None;
    stream_node_max_entries: i64 = 100; "stream-node-max-entries", MODIFIABLE, number(LongLong, 0, LLONG_MAX, INTEGER, None), STREAMS, None;
    repl_backlog_size: i64 = 1 << 20; "repl-backlog-size", MODIFIABLE, number(LongLong, 1, LLONG_MAX, MEMORY, None), REPLICATION, ReplBacklog;

    // ---- unsigned long long ----
    maxmemory: u64 = 0; "maxmemory", MODIFIABLE, number(ULongLong, 0, ULLONG_MAX, MEMORY, None), EVICTION, Eviction;
    cluster_link_sendbuf_limit: u64 = 0; "cluster-link-sendbuf-limit", MODIFIABLE, number(ULongLong, 0, ULLONG_MAX, MEMORY, None), CLUSTER, None;

    // ---- size_t ----
    hash_max_listpack_entries: u64 = 512; "hash-max-listpack-entries" | "hash-max-ziplist-entries", MODIFIABLE, number(SizeT, 0, LONG_MAX, INTEGER, None), HASH_THRESHOLD, EncodingLimits;
    set_max_intset_entries: u64 = 512; "set-max-intset-entries", MODIFIABLE, number(SizeT, 0, LONG_MAX, INTEGER, None), INTSET_THRESHOLD, EncodingLimits;
    zset_max_listpack_entries: u64 = 128; "zset-max-listpack-entries" | "zset-max-ziplist-entries", MODIFIABLE, number(SizeT, 0, LONG_MAX, INTEGER, None), ZSET_THRESHOLD, EncodingLimits;
    active_defrag_ignore_bytes: u64 = 100 << 20; "active-defrag-ignore-bytes", MODIFIABLE, number(SizeT, 1, LLONG_MAX, MEMORY, None), DEFRAG, None;
    hash_max_listpack_value: u64 = 64; "hash-max-listpack-value" | "hash-max-ziplist-value", MODIFIABLE, number(SizeT, 0, LONG_MAX, MEMORY, None), HASH_THRESHOLD, EncodingLimits;
    stream_node_max_bytes: u64 = 4096; "stream-node-max-bytes", MODIFIABLE, number(SizeT, 0, LONG_MAX, MEMORY, None), STREAMS, None;
    zset_max_listpack_value: u64 = 64; "zset-max-listpack-value" | "zset-max-ziplist-value", MODIFIABLE, number(SizeT, 0, LONG_MAX, MEMORY, None), ZSET_THRESHOLD, EncodingLimits;
    hll_sparse_max_bytes: u64 = 3000; "hll-sparse-max-bytes", MODIFIABLE, number(SizeT, 0, LONG_MAX, MEMORY, None), HLL, None;
    tracking_table_max_keys: u64 = 1_000_000; "tracking-table-max-keys", MODIFIABLE, number(SizeT, 0, LONG_MAX, INTEGER, None), MESSAGING, Tracking;
    client_query_buffer_limit: u64 = 1 << 30; "client-query-buffer-limit", DEBUG | MODIFIABLE, number(SizeT, 1 << 20, LONG_MAX, MEMORY, None), RUNS, None;
    maxmemory_clients: i64 = 0; "maxmemory-clients", MODIFIABLE, number(SSizeT, -100, i64::MAX, MEMORY | PERCENT, None), CLIENT_EVICTION, None;

    // ---- time_t, off_t ----
    repl_backlog_ttl: i64 = 3600; "repl-backlog-ttl", MODIFIABLE, number(TimeT, 0, LONG_MAX, INTEGER, None), REPLICATION, None;
    auto_aof_rewrite_min_size: i64 = 64 << 20; "auto-aof-rewrite-min-size", MODIFIABLE, number(OffT, 0, LLONG_MAX, MEMORY, None), AOF, None;
    loading_process_events_interval_bytes: i64 = 2 << 20; "loading-process-events-interval-bytes", MODIFIABLE | HIDDEN, number(OffT, 1024, INT_MAX, INTEGER, None), NOTHING_TO_DO, None;

    // ---- TLS (Debian's redis-server is built with it) ----
    tls_port: u16 = 0; "tls-port", MODIFIABLE, number(Int, 0, 65535, INTEGER, None), Status::Refused("TLS"), None;
    tls_session_cache_size: i32 = 20 * 1024; "tls-session-cache-size", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), TLS, None;
    tls_session_cache_timeout: i32 = 300; "tls-session-cache-timeout", MODIFIABLE, number(Int, 0, INT_MAX, INTEGER, None), TLS, None;
    tls_cluster: bool = false; "tls-cluster", MODIFIABLE, yesno(None), TLS, None;
    tls_replication: bool = false; "tls-replication", MODIFIABLE, yesno(None), TLS, None;
    tls_auth_clients: i32 = 1; "tls-auth-clients", MODIFIABLE, enumeration(TLS_AUTH_CLIENTS, None), TLS, None;
    tls_prefer_server_ciphers: bool = false; "tls-prefer-server-ciphers", MODIFIABLE, yesno(None), TLS, None;
    tls_session_caching: bool = true; "tls-session-caching", MODIFIABLE, yesno(None), TLS, None;
    tls_cert_file: String = String::new(); "tls-cert-file", VOLATILE | MODIFIABLE, string(true, None), TLS, None;
    tls_key_file: String = String::new(); "tls-key-file", VOLATILE | MODIFIABLE, string(true, None), TLS, None;
    tls_key_file_pass: String = String::new(); "tls-key-file-pass", MODIFIABLE, string(true, None), TLS, None;
    tls_client_cert_file: String = String::new(); "tls-client-cert-file", VOLATILE | MODIFIABLE, string(true, None), TLS, None;
    tls_client_key_file: String = String::new(); "tls-client-key-file", VOLATILE | MODIFIABLE, string(true, None), TLS, None;
    tls_client_key_file_pass: String = String::new(); "tls-client-key-file-pass", MODIFIABLE, string(true, None), TLS, None;
    tls_dh_params_file: String = String::new(); "tls-dh-params-file", VOLATILE | MODIFIABLE, string(true, None), TLS, None;
    tls_ca_cert_file: String = String::new(); "tls-ca-cert-file", VOLATILE | MODIFIABLE, string(true, None), TLS, None;
    tls_ca_cert_dir: String = String::new(); "tls-ca-cert-dir", VOLATILE | MODIFIABLE, string(true, None), TLS, None;
    tls_protocols: String = String::new(); "tls-protocols", MODIFIABLE, string(true, None), TLS, None;
    tls_ciphers: String = String::new(); "tls-ciphers", MODIFIABLE, string(true, None), TLS, None;
    tls_ciphersuites: String = String::new(); "tls-ciphersuites", MODIFIABLE, string(true, None), TLS, None;

    // ---- specials ----
    dir: String = String::new(); "dir", MODIFIABLE | PROTECTED | DENY_LOADING, special(sp::dir_set, sp::dir_get, sp::dir_rewrite), Status::Works("the working directory (chdir), where files are written"), None;
    save: Vec<(i64, i64)> = vec![(3600, 1), (300, 100), (60, 10000)]; "save", MODIFIABLE | MULTI_ARG, special(sp::save_set, sp::save_get, sp::save_rewrite), Status::Works("save points start the forkless background save on their timers; shutdown and FLUSHALL save as in Redis"), None;
    output_limit_normal: (u64, u64, u64) = (0, 0, 0); "client-output-buffer-limit", MODIFIABLE | MULTI_ARG, special(sp::obuf_set, sp::obuf_get, sp::obuf_rewrite), Status::Works("the normal and pubsub classes (a client with subscriptions is pubsub); the replica limit is kept for when replicas exist"), None;
    oom_score_adj_values: [i32; 3] = [0, 200, 800]; "oom-score-adj-values", MODIFIABLE | MULTI_ARG, special(sp::oom_set, sp::oom_get, sp::oom_rewrite), Status::Works("the primary's value is used (densekv forks no children and is never a replica)"), OomScore;
    notify_keyspace_events: i32 = 0; "notify-keyspace-events", MODIFIABLE, special(sp::notify_set, sp::notify_get, sp::notify_rewrite), MESSAGING, Messaging;
    bind: Vec<String> = vec!["127.0.0.1".into(), "-::1".into()]; "bind", MODIFIABLE | MULTI_ARG, special(sp::bind_set, sp::bind_get, sp::bind_rewrite), Status::Works("default loopback only; CONFIG SET of new addresses needs the network loop to listen again (docs/config.md, CONFIG)"), Bind;
    replicaof: Option<(String, i64)> = None; "replicaof" | "slaveof", IMMUTABLE | MULTI_ARG, special(sp::replicaof_set, sp::replicaof_get, sp::replicaof_rewrite), Status::Refused("replication"), None;
    latency_tracking_info_percentiles: Vec<f64> = vec![50.0, 99.0, 99.9]; "latency-tracking-info-percentiles", MODIFIABLE | MULTI_ARG, special(sp::percentiles_set, sp::percentiles_get, sp::percentiles_rewrite), TRACKING, None;

    // ---- densekv's own ----
    shards: usize = 8; "shards", IMMUTABLE, number(Int, 1, 1024, INTEGER, None), Status::Works("keyspace shards, one lock and one heap each"), None;
    busy_poll_us: u64 = 100; "busy-poll-us", MODIFIABLE, number(Int, 0, 1_000_000, INTEGER, None), Status::Works("microseconds an event loop polls without sleeping after a turn with work (0: never)"), None;
}

/// Whether `name` is a directive densekv adds (not in Redis).
pub fn densekv_only(name: &str) -> bool {
    matches!(name, "shards" | "busy-poll-us")
}
