//! The command table and dispatch.
//!
//! One static table (`COMMANDS`) drives everything: name lookup, arity checks with Redis's error
//! texts, which shards a command must lock (from its key positions), AUTH and MULTI rules, and the
//! replies of COMMAND COUNT / INFO / DOCS / LIST / GETKEYS. A command runs with the locks of its
//! keys' shards held (ascending index, so two commands can never deadlock); keyless commands that
//! look at the whole keyspace, and EXEC, hold every shard.

use crate::client::ClientState;
use crate::server::Server;
use parking_lot::MutexGuard;
use resp::ReplyWriter;
use std::sync::atomic::Ordering;
use store::Shard;

/// Command flags.
pub mod flag {
    pub const WRITE: u32 = 1;
    pub const READONLY: u32 = 1 << 1;
    pub const ADMIN: u32 = 1 << 2;
    pub const FAST: u32 = 1 << 3;
    pub const NO_AUTH: u32 = 1 << 4;
    pub const NO_MULTI: u32 = 1 << 5;
    pub const DENYOOM: u32 = 1 << 6;
    pub const LOADING: u32 = 1 << 7;
    pub const STALE: u32 = 1 << 8;
    pub const NOSCRIPT: u32 = 1 << 9;
    pub const ALLOW_BUSY: u32 = 1 << 10;
    /// Runs in MULTI instead of being queued (EXEC, DISCARD, MULTI, WATCH, QUIT, RESET).
    pub const TXN_CONTROL: u32 = 1 << 11;

    pub const NAMES: [(u32, &str); 11] = [
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (NOSCRIPT, "noscript"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (NO_MULTI, "no_multi"),
        (ALLOW_BUSY, "allow_busy"),
    ];
}

/// Which arguments are keys.
#[derive(Clone, Copy, Debug)]
pub enum Keys {
    /// No keys, and no need to see the keyspace (PING, ECHO, CLIENT…).
    None,
    /// No key arguments, but the command reads or writes the whole keyspace: lock every shard.
    All,
    /// Keys at `first`, `first + step`, … up to `last` (negative counts from the end).
    Range {
        first: usize,
        last: isize,
        step: usize,
    },
    /// A `numkeys` argument at `at`, then that many keys (ZUNIONSTORE dst 2 a b, BLMPOP 0 2 a b):
    /// `also` is a key before it (ZUNIONSTORE's destination), if any. A bad `numkeys` yields only
    /// `also`; the handler reports the error before it touches any other key.
    NumKeys { at: usize, also: Option<usize> },
}

pub type Handler = fn(&mut Ctx<'_, '_>, &[&[u8]]);

/// One command.
#[derive(Debug)]
pub struct Spec {
    pub name: &'static str,
    pub arity: i32,
    pub flags: u32,
    pub keys: Keys,
    pub group: &'static str,
    pub since: &'static str,
    pub summary: &'static str,
    pub handler: Handler,
}

/// The shard locks a command holds while it runs.
pub struct Locks<'a> {
    guards: smallvec::SmallVec<[(usize, MutexGuard<'a, Shard>); 2]>,
}

impl std::fmt::Debug for Locks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.guards.iter().map(|(i, _)| i))
            .finish()
    }
}

impl<'a> Locks<'a> {
    pub fn none() -> Locks<'a> {
        Locks {
            guards: smallvec::SmallVec::new(),
        }
    }

    /// Locks `shards` (any order, duplicates allowed) in ascending order.
    pub fn of(server: &'a Server, mut shards: smallvec::SmallVec<[usize; 4]>) -> Locks<'a> {
        shards.sort_unstable();
        shards.dedup();
        Locks {
            guards: shards
                .into_iter()
                .map(|i| (i, server.lock_shard(i)))
                .collect(),
        }
    }

    pub fn all(server: &'a Server) -> Locks<'a> {
        Locks::of(server, (0..server.shard_count()).collect())
    }

    /// Locks the shards of `keys`; one key (the common case) takes no sort.
    pub fn of_keys(server: &'a Server, keys: &[&[u8]]) -> Locks<'a> {
        if let [key] = keys {
            let index = server.shard_of(key);
            let mut guards = smallvec::SmallVec::new();
            guards.push((index, server.lock_shard(index)));
            return Locks { guards };
        }
        Locks::of(server, keys.iter().map(|k| server.shard_of(k)).collect())
    }

    fn get(&mut self, index: usize) -> &mut Shard {
        let at = self
            .guards
            .iter()
            .position(|(i, _)| *i == index)
            .expect("a command touched a shard it did not lock");
        &mut self.guards[at].1
    }

    /// Every locked shard (all of them, for keyless keyspace commands).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Shard> {
        self.guards.iter_mut().map(|(_, g)| &mut **g)
    }
}

/// Everything a command handler works with.
pub struct Ctx<'s, 'c> {
    pub server: &'s Server,
    pub client: &'c mut ClientState,
    pub out: ReplyWriter<'c>,
    pub locks: &'c mut Locks<'s>,
    pub now_ms: u64,
    /// Set by handlers whose reply was an error (commandstats `failed_calls`).
    pub failed: bool,
}

impl std::fmt::Debug for Ctx<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("db", &self.client.db)
            .finish_non_exhaustive()
    }
}

impl<'c> Ctx<'_, 'c> {
    /// The shard holding `key` (locked by dispatch).
    #[inline]
    pub fn shard(&mut self, key: &[u8]) -> &mut Shard {
        let index = self.server.shard_of(key);
        self.locks.get(index)
    }

    pub fn db(&self) -> usize {
        self.client.db
    }

    /// The shard holding `key` and the reply writer at once, so a value can be replied straight
    /// from the page it lives in.
    #[inline]
    pub fn shard_and_out(&mut self, key: &[u8]) -> (&mut Shard, &mut ReplyWriter<'c>) {
        let index = self.server.shard_of(key);
        (self.locks.get(index), &mut self.out)
    }

    /// An error reply (counted in INFO errorstats).
    pub fn error(&mut self, text: &str) {
        self.failed = true;
        self.server.count_error(text.as_bytes());
        self.out.error(text.as_bytes());
    }

    pub fn ok(&mut self) {
        self.out.simple(b"OK");
    }

    pub fn syntax_error(&mut self) {
        self.error("ERR syntax error");
    }

    pub fn wrong_type(&mut self) {
        self.error("WRONGTYPE Operation against a key holding the wrong kind of value");
    }

    pub fn not_integer(&mut self) {
        self.error("ERR value is not an integer or out of range");
    }

    pub fn oom(&mut self) {
        self.error("OOM command not allowed when used memory > 'maxmemory'.");
    }

    /// The key was modified: WATCH and the dirty counter learn of it.
    pub fn touch(&self, db: usize, key: &[u8]) {
        self.server.touch(db, key);
    }

    /// `key` received elements: clients blocked on it (BLPOP, BZPOPMIN…) may be served.
    pub fn signal_ready(&self, db: usize, key: &[u8]) {
        self.server.signal_ready(db, key);
    }

    /// Writes a string value as a bulk reply.
    pub fn bulk_str(&mut self, value: store::Str<'_>) {
        match value {
            store::Str::Bytes(b) => self.out.bulk(b),
            store::Str::Int(i) => self.out.bulk_integer(i),
        }
    }
}

/// Parses an integer argument as Redis's `getLongLongFromObjectOrReply` does.
pub fn parse_i64(arg: &[u8]) -> Option<i64> {
    store::value::parse_i64(arg)
}

/// The command named `name` (ASCII case-insensitive).
pub fn lookup(name: &[u8]) -> Option<(usize, &'static Spec)> {
    if name.len() > 32 {
        return None;
    }
    let mut lower = [0u8; 32];
    for (d, s) in lower.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    let lower = &lower[..name.len()];
    let index = INDEX.with(|index| index.get(lower).copied())?;
    Some((index, COMMANDS[index]))
}

/// For commands that look up one member or field of the collection at their key: which
/// argument it is (the read-ahead in `net.rs` prefetches it). Names compared case-insensitively.
pub fn member_arg(name: &[u8]) -> Option<usize> {
    // Only set, hash and sorted-set commands qualify; the first letter rules out the rest cheaply.
    if !matches!(name.first()?.to_ascii_lowercase(), b's' | b'h' | b'z') || name.len() > 12 {
        return None;
    }
    let mut lower = [0u8; 12];
    for (d, s) in lower.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    match &lower[..name.len()] {
        b"sadd" | b"srem" | b"sismember" | b"smismember" | b"hset" | b"hsetnx" | b"hget"
        | b"hmget" | b"hmset" | b"hdel" | b"hexists" | b"hstrlen" | b"hincrby"
        | b"hincrbyfloat" | b"zscore" | b"zmscore" | b"zrem" | b"zrank" | b"zrevrank" => Some(2),
        b"zadd" | b"zincrby" => Some(3),
        _ => None,
    }
}

thread_local! {
    /// Name → table index. foldhash rather than SipHash: the names are ours, not an attacker's.
    static INDEX: std::collections::HashMap<Vec<u8>, usize, foldhash::fast::FixedState> =
        COMMANDS.iter().enumerate().map(|(i, s)| (s.name.as_bytes().to_vec(), i)).collect();
}

/// Key argument positions of `spec` for `args`.
pub fn key_positions(spec: &Spec, args: &[&[u8]]) -> smallvec::SmallVec<[usize; 4]> {
    match spec.keys {
        Keys::None | Keys::All => smallvec::SmallVec::new(),
        Keys::NumKeys { at, also } => {
            let count = args
                .get(at)
                .and_then(|a| parse_i64(a))
                .filter(|&n| n > 0 && (n as usize) < args.len() - at);
            let mut positions: smallvec::SmallVec<[usize; 4]> =
                also.filter(|&i| i < args.len()).into_iter().collect();
            if let Some(count) = count {
                positions.extend(at + 1..=at + count as usize);
            }
            positions
        }
        Keys::Range { first, last, step } => {
            let end = if last < 0 {
                args.len() as isize + last
            } else {
                last
            };
            if end < first as isize {
                return smallvec::SmallVec::new();
            }
            (first..=end as usize)
                .step_by(step)
                .filter(|&i| i < args.len())
                .collect()
        }
    }
}

/// Locks what `spec` needs for `args`.
pub fn locks_for<'a>(server: &'a Server, spec: &Spec, args: &[&[u8]]) -> Locks<'a> {
    match spec.keys {
        Keys::None => Locks::none(),
        Keys::All => Locks::all(server),
        Keys::Range {
            first: 1,
            last: 1,
            step: 1,
        } if args.len() > 1 => Locks::of_keys(server, &args[1..2]),
        Keys::Range { .. } | Keys::NumKeys { .. } => Locks::of(
            server,
            key_positions(spec, args)
                .into_iter()
                .map(|i| server.shard_of(args[i]))
                .collect(),
        ),
    }
}

/// Runs one command whose locks are held, counting it in commandstats.
///
/// `mark` is when the caller started on this command (the previous command's end, in a batch);
/// the command's time is measured from it and `mark` moves to the command's end, so a batch
/// reads the clock once per command rather than twice. The time includes this command's
/// parsing and dispatch (well under a microsecond).
#[allow(clippy::too_many_arguments)]
pub fn run<'s>(
    server: &'s Server,
    client: &mut ClientState,
    out: &mut Vec<u8>,
    locks: &mut Locks<'s>,
    index: usize,
    args: &[&[u8]],
    now_ms: u64,
    mark: &mut crate::clock::Mark,
) {
    let spec = COMMANDS[index];
    let mut ctx = Ctx {
        server,
        out: ReplyWriter::new(out, client.protocol),
        client,
        locks,
        now_ms,
        failed: false,
    };
    // A bug in a handler must not take its I/O thread (and every client on it) down: the panic
    // is logged by the panic hook, the client gets an error, and the server keeps serving.
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        (spec.handler)(&mut ctx, args);
    }));
    if ran.is_err() {
        crate::log::warning(&format!(
            "command '{}' panicked; replied with an error",
            spec.name
        ));
        ctx.error(&format!(
            "ERR internal error while running '{}' (see the server log)",
            spec.name
        ));
    }
    let failed = ctx.failed;
    let ended = crate::clock::now();
    let usec = crate::clock::micros(*mark, ended);
    *mark = ended;
    let hot = server.hot.local();
    hot.add(|c| &c.calls[index], 1);
    hot.add(|c| &c.usec[index], usec);
    hot.add(|c| &c.commands_processed, 1);
    if failed {
        server.command_stats[index]
            .failed
            .fetch_add(1, Ordering::Relaxed);
    }
    crate::commands::server::slowlog_record(server, client, args, usec);
}

/// The text Redis sends for an unknown command.
pub fn unknown_command_error(args: &[&[u8]]) -> String {
    let mut text = format!(
        "ERR unknown command '{}', with args beginning with: ",
        String::from_utf8_lossy(&args[0][..args[0].len().min(128)])
    );
    for arg in args.iter().skip(1).take(128) {
        text.push('\'');
        text.push_str(&String::from_utf8_lossy(&arg[..arg.len().min(128)]));
        text.push_str("' ");
    }
    text
}

pub fn arity_error(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// Whether `args` satisfy `arity` (positive: exact; negative: at least).
pub fn arity_ok(arity: i32, argc: usize) -> bool {
    if arity >= 0 {
        argc == arity as usize
    } else {
        argc >= arity.unsigned_abs() as usize
    }
}

macro_rules! cmd {
    ($name:literal, $arity:expr, $flags:expr, $keys:expr, $group:literal, $since:literal, $summary:literal, $handler:path) => {
        Spec {
            name: $name,
            arity: $arity,
            flags: $flags,
            keys: $keys,
            group: $group,
            since: $since,
            summary: $summary,
            handler: $handler,
        }
    };
}

use crate::commands::{connection as conn, keys, server as admin, string, transaction as txn};
use Keys::{All, None as NoKeys};
pub use flag::{
    ADMIN, DENYOOM, FAST, LOADING, NO_AUTH, NO_MULTI, NOSCRIPT, READONLY, STALE, TXN_CONTROL, WRITE,
};

pub const K1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};
pub const K12: Keys = Keys::Range {
    first: 1,
    last: 2,
    step: 1,
};
pub const KALL: Keys = Keys::Range {
    first: 1,
    last: -1,
    step: 1,
};
pub const KPAIRS: Keys = Keys::Range {
    first: 1,
    last: -1,
    step: 2,
};

/// Every command densekv knows: the core table, then one table per collection type, in the
/// order COMMAND LIST reports them. An index into this list identifies a command (commandstats).
pub static COMMANDS: std::sync::LazyLock<Vec<&'static Spec>> = std::sync::LazyLock::new(|| {
    [
        CORE,
        crate::commands::hash::COMMANDS,
        crate::commands::list::COMMANDS,
        crate::commands::set::COMMANDS,
        crate::commands::zset::COMMANDS,
        crate::commands::sort::COMMANDS,
        crate::commands::blocking::COMMANDS,
    ]
    .into_iter()
    .flatten()
    .collect()
});

/// A table entry (for the per-type tables in `commands/*.rs`).
#[allow(clippy::too_many_arguments)]
pub const fn spec(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: Keys,
    group: &'static str,
    since: &'static str,
    summary: &'static str,
    handler: Handler,
) -> Spec {
    Spec {
        name,
        arity,
        flags,
        keys,
        group,
        since,
        summary,
        handler,
    }
}

/// The connection, server, key, string and transaction commands.
static CORE: &[Spec] = &[
    // connection
    cmd!(
        "ping",
        -1,
        FAST | STALE,
        NoKeys,
        "connection",
        "1.0.0",
        "Returns the server's liveliness response.",
        conn::ping
    ),
    cmd!(
        "echo",
        2,
        FAST | STALE,
        NoKeys,
        "connection",
        "1.0.0",
        "Returns the given string.",
        conn::echo
    ),
    cmd!(
        "quit",
        -1,
        FAST | NO_AUTH | STALE | TXN_CONTROL | ALLOW_BUSY_,
        NoKeys,
        "connection",
        "1.0.0",
        "Closes the connection.",
        conn::quit
    ),
    cmd!(
        "select",
        2,
        FAST | STALE | LOADING,
        NoKeys,
        "connection",
        "1.0.0",
        "Changes the selected database.",
        conn::select
    ),
    cmd!(
        "hello",
        -1,
        FAST | NO_AUTH | STALE | LOADING | NOSCRIPT,
        NoKeys,
        "connection",
        "6.0.0",
        "Handshakes with the Redis server.",
        conn::hello
    ),
    cmd!(
        "auth",
        -2,
        FAST | NO_AUTH | STALE | LOADING | NOSCRIPT,
        NoKeys,
        "connection",
        "1.0.0",
        "Authenticates the connection.",
        conn::auth
    ),
    cmd!(
        "reset",
        1,
        FAST | NO_AUTH | STALE | LOADING | NOSCRIPT | TXN_CONTROL,
        NoKeys,
        "connection",
        "6.2.0",
        "Resets the connection.",
        conn::reset
    ),
    cmd!(
        "client",
        -2,
        STALE | LOADING | NOSCRIPT,
        NoKeys,
        "connection",
        "2.4.0",
        "A container for client connection commands.",
        conn::client
    ),
    // server
    cmd!(
        "info",
        -1,
        STALE | LOADING,
        All,
        "server",
        "1.0.0",
        "Returns information and statistics about the server.",
        admin::info
    ),
    cmd!(
        "dbsize",
        1,
        READONLY | FAST,
        All,
        "server",
        "1.0.0",
        "Returns the number of keys in the database.",
        admin::dbsize
    ),
    cmd!(
        "flushdb",
        -1,
        WRITE,
        All,
        "server",
        "1.0.0",
        "Removes all keys from the current database.",
        admin::flushdb
    ),
    cmd!(
        "flushall",
        -1,
        WRITE,
        All,
        "server",
        "1.0.0",
        "Removes all keys from all databases.",
        admin::flushall
    ),
    cmd!(
        "swapdb",
        3,
        WRITE | FAST,
        All,
        "server",
        "4.0.0",
        "Swaps two Redis databases.",
        admin::swapdb
    ),
    cmd!(
        "config",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        NoKeys,
        "server",
        "2.0.0",
        "A container for server configuration commands.",
        admin::config
    ),
    cmd!(
        "command",
        -1,
        LOADING | STALE,
        NoKeys,
        "server",
        "2.8.13",
        "Returns detailed information about all commands.",
        admin::command
    ),
    cmd!(
        "time",
        1,
        FAST | LOADING | STALE,
        NoKeys,
        "server",
        "2.6.0",
        "Returns the server time.",
        admin::time
    ),
    cmd!(
        "shutdown",
        -1,
        ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI,
        NoKeys,
        "server",
        "1.0.0",
        "Synchronously saves the database(s) to disk and shuts down the Redis server.",
        admin::shutdown
    ),
    cmd!(
        "memory",
        -2,
        READONLY,
        All,
        "server",
        "4.0.0",
        "A container for memory diagnostics commands.",
        admin::memory
    ),
    cmd!(
        "slowlog",
        -2,
        ADMIN | LOADING | STALE,
        NoKeys,
        "server",
        "2.2.12",
        "A container for slow log commands.",
        admin::slowlog
    ),
    cmd!(
        "latency",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        NoKeys,
        "server",
        "2.8.13",
        "A container for latency diagnostics commands.",
        admin::latency
    ),
    cmd!(
        "lolwut",
        -1,
        READONLY | FAST,
        NoKeys,
        "server",
        "5.0.0",
        "Displays computer art and the Redis version",
        admin::lolwut
    ),
    cmd!(
        "debug",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        All,
        "server",
        "1.0.0",
        "A container for debugging commands.",
        admin::debug
    ),
    // generic
    cmd!(
        "object",
        -2,
        READONLY,
        Keys::Range {
            first: 2,
            last: 2,
            step: 1
        },
        "generic",
        "2.2.3",
        "A container for object introspection commands.",
        keys::object
    ),
    cmd!(
        "del",
        -2,
        WRITE,
        KALL,
        "generic",
        "1.0.0",
        "Deletes one or more keys.",
        keys::del
    ),
    cmd!(
        "unlink",
        -2,
        WRITE | FAST,
        KALL,
        "generic",
        "4.0.0",
        "Asynchronously deletes one or more keys.",
        keys::del
    ),
    cmd!(
        "exists",
        -2,
        READONLY | FAST,
        KALL,
        "generic",
        "1.0.0",
        "Determines whether one or more keys exist.",
        keys::exists
    ),
    cmd!(
        "touch",
        -2,
        READONLY | FAST,
        KALL,
        "generic",
        "3.2.1",
        "Returns the number of existing keys out of those specified after updating the time they were last accessed.",
        keys::exists
    ),
    cmd!(
        "type",
        2,
        READONLY | FAST,
        K1,
        "generic",
        "1.0.0",
        "Determines the type of value stored at a key.",
        keys::type_
    ),
    cmd!(
        "rename",
        3,
        WRITE,
        K12,
        "generic",
        "1.0.0",
        "Renames a key and overwrites the destination.",
        keys::rename
    ),
    cmd!(
        "renamenx",
        3,
        WRITE | FAST,
        K12,
        "generic",
        "1.0.0",
        "Renames a key only when the target key name doesn't exist.",
        keys::renamenx
    ),
    cmd!(
        "copy",
        -3,
        WRITE | DENYOOM,
        K12,
        "generic",
        "6.2.0",
        "Copies the value of a key to a new key.",
        keys::copy
    ),
    cmd!(
        "move",
        3,
        WRITE | FAST,
        K1,
        "generic",
        "1.0.0",
        "Moves a key to another database.",
        keys::move_
    ),
    cmd!(
        "keys",
        2,
        READONLY,
        All,
        "generic",
        "1.0.0",
        "Returns all key names that match a pattern.",
        keys::keys
    ),
    cmd!(
        "scan",
        -2,
        READONLY,
        All,
        "generic",
        "2.8.0",
        "Iterates over the key names in the database.",
        keys::scan
    ),
    cmd!(
        "randomkey",
        1,
        READONLY,
        All,
        "generic",
        "1.0.0",
        "Returns a random key name from the database.",
        keys::randomkey
    ),
    cmd!(
        "expire",
        -3,
        WRITE | FAST,
        K1,
        "generic",
        "1.0.0",
        "Sets the expiration time of a key in seconds.",
        keys::expire
    ),
    cmd!(
        "pexpire",
        -3,
        WRITE | FAST,
        K1,
        "generic",
        "2.6.0",
        "Sets the expiration time of a key in milliseconds.",
        keys::pexpire
    ),
    cmd!(
        "expireat",
        -3,
        WRITE | FAST,
        K1,
        "generic",
        "1.2.0",
        "Sets the expiration time of a key to a Unix timestamp.",
        keys::expireat
    ),
    cmd!(
        "pexpireat",
        -3,
        WRITE | FAST,
        K1,
        "generic",
        "2.6.0",
        "Sets the expiration time of a key to a Unix milliseconds timestamp.",
        keys::pexpireat
    ),
    cmd!(
        "ttl",
        2,
        READONLY | FAST,
        K1,
        "generic",
        "1.0.0",
        "Returns the expiration time in seconds of a key.",
        keys::ttl
    ),
    cmd!(
        "pttl",
        2,
        READONLY | FAST,
        K1,
        "generic",
        "2.6.0",
        "Returns the expiration time in milliseconds of a key.",
        keys::pttl
    ),
    cmd!(
        "expiretime",
        2,
        READONLY | FAST,
        K1,
        "generic",
        "7.0.0",
        "Returns the expiration time of a key as a Unix timestamp.",
        keys::expiretime
    ),
    cmd!(
        "pexpiretime",
        2,
        READONLY | FAST,
        K1,
        "generic",
        "7.0.0",
        "Returns the expiration time of a key as a Unix milliseconds timestamp.",
        keys::pexpiretime
    ),
    cmd!(
        "persist",
        2,
        WRITE | FAST,
        K1,
        "generic",
        "2.2.0",
        "Removes the expiration time of a key.",
        keys::persist
    ),
    // string
    cmd!(
        "get",
        2,
        READONLY | FAST,
        K1,
        "string",
        "1.0.0",
        "Returns the string value of a key.",
        string::get
    ),
    cmd!(
        "set",
        -3,
        WRITE | DENYOOM,
        K1,
        "string",
        "1.0.0",
        "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.",
        string::set
    ),
    cmd!(
        "setnx",
        3,
        WRITE | DENYOOM | FAST,
        K1,
        "string",
        "1.0.0",
        "Set the string value of a key only when the key doesn't exist.",
        string::setnx
    ),
    cmd!(
        "setex",
        4,
        WRITE | DENYOOM,
        K1,
        "string",
        "2.0.0",
        "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.",
        string::setex
    ),
    cmd!(
        "psetex",
        4,
        WRITE | DENYOOM,
        K1,
        "string",
        "2.6.0",
        "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.",
        string::psetex
    ),
    cmd!(
        "mget",
        -2,
        READONLY | FAST,
        KALL,
        "string",
        "1.0.0",
        "Atomically returns the string values of one or more keys.",
        string::mget
    ),
    cmd!(
        "mset",
        -3,
        WRITE | DENYOOM,
        KPAIRS,
        "string",
        "1.0.1",
        "Atomically creates or modifies the string values of one or more keys.",
        string::mset
    ),
    cmd!(
        "msetnx",
        -3,
        WRITE | DENYOOM,
        KPAIRS,
        "string",
        "1.0.1",
        "Atomically modifies the string values of one or more keys only when all keys don't exist.",
        string::msetnx
    ),
    cmd!(
        "getset",
        3,
        WRITE | DENYOOM | FAST,
        K1,
        "string",
        "1.0.0",
        "Returns the previous string value of a key after setting it to a new value.",
        string::getset
    ),
    cmd!(
        "getdel",
        2,
        WRITE | FAST,
        K1,
        "string",
        "6.2.0",
        "Returns the string value of a key after deleting the key.",
        string::getdel
    ),
    cmd!(
        "getex",
        -2,
        WRITE | FAST,
        K1,
        "string",
        "6.2.0",
        "Returns the string value of a key after setting its expiration time.",
        string::getex
    ),
    cmd!(
        "append",
        3,
        WRITE | DENYOOM | FAST,
        K1,
        "string",
        "2.0.0",
        "Appends a string to the value of a key. Creates the key if it doesn't exist.",
        string::append
    ),
    cmd!(
        "strlen",
        2,
        READONLY | FAST,
        K1,
        "string",
        "2.2.0",
        "Returns the length of a string value.",
        string::strlen
    ),
    cmd!(
        "incr",
        2,
        WRITE | DENYOOM | FAST,
        K1,
        "string",
        "1.0.0",
        "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
        string::incr
    ),
    cmd!(
        "decr",
        2,
        WRITE | DENYOOM | FAST,
        K1,
        "string",
        "1.0.0",
        "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
        string::decr
    ),
    cmd!(
        "incrby",
        3,
        WRITE | DENYOOM | FAST,
        K1,
        "string",
        "1.0.0",
        "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
        string::incrby
    ),
    cmd!(
        "decrby",
        3,
        WRITE | DENYOOM | FAST,
        K1,
        "string",
        "1.0.0",
        "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.",
        string::decrby
    ),
    cmd!(
        "incrbyfloat",
        3,
        WRITE | DENYOOM | FAST,
        K1,
        "string",
        "2.6.0",
        "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
        string::incrbyfloat
    ),
    cmd!(
        "getrange",
        4,
        READONLY,
        K1,
        "string",
        "2.4.0",
        "Returns a substring of the string stored at a key.",
        string::getrange
    ),
    cmd!(
        "substr",
        4,
        READONLY,
        K1,
        "string",
        "1.0.0",
        "Returns a substring from a string value.",
        string::getrange
    ),
    cmd!(
        "setrange",
        4,
        WRITE | DENYOOM,
        K1,
        "string",
        "2.2.0",
        "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.",
        string::setrange
    ),
    cmd!(
        "lcs",
        -3,
        READONLY,
        K12,
        "string",
        "7.0.0",
        "Finds the longest common substring.",
        string::lcs
    ),
    // transactions
    cmd!(
        "multi",
        1,
        NOSCRIPT | LOADING | STALE | FAST | TXN_CONTROL,
        NoKeys,
        "transactions",
        "1.2.0",
        "Starts a transaction.",
        txn::multi
    ),
    cmd!(
        "exec",
        1,
        NOSCRIPT | LOADING | STALE | TXN_CONTROL,
        NoKeys,
        "transactions",
        "1.2.0",
        "Executes all commands in a transaction.",
        txn::exec
    ),
    cmd!(
        "discard",
        1,
        NOSCRIPT | LOADING | STALE | FAST | TXN_CONTROL,
        NoKeys,
        "transactions",
        "2.0.0",
        "Discards a transaction.",
        txn::discard
    ),
    cmd!(
        "watch",
        -2,
        NOSCRIPT | LOADING | STALE | FAST | TXN_CONTROL,
        KALL,
        "transactions",
        "2.2.0",
        "Monitors changes to keys to determine the execution of a transaction.",
        txn::watch
    ),
    cmd!(
        "unwatch",
        1,
        NOSCRIPT | LOADING | STALE | FAST,
        NoKeys,
        "transactions",
        "2.2.0",
        "Forgets about watched keys of a transaction.",
        txn::unwatch
    ),
];

const ALLOW_BUSY_: u32 = flag::ALLOW_BUSY;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command `member_arg` names exists, has one key at 1 and can carry an argument at the
    /// member's position; case does not matter, and other commands have no member argument.
    #[test]
    fn member_args_name_real_single_key_commands() {
        let mut named = 0;
        for spec in COMMANDS.iter() {
            let Some(at) = member_arg(spec.name.as_bytes()) else {
                continue;
            };
            named += 1;
            assert!(
                matches!(
                    spec.keys,
                    Keys::Range {
                        first: 1,
                        last: 1,
                        step: 1
                    }
                ),
                "{}",
                spec.name
            );
            assert!(spec.arity.unsigned_abs() as usize > at, "{}", spec.name);
            let upper = spec.name.to_ascii_uppercase();
            assert_eq!(member_arg(upper.as_bytes()), Some(at));
        }
        assert_eq!(named, 21);
        for name in [
            &b"get"[..],
            b"set",
            b"smembers",
            b"hgetall",
            b"zrange",
            b"",
            b"s",
        ] {
            assert_eq!(member_arg(name), None, "{}", String::from_utf8_lossy(name));
        }
    }
}
