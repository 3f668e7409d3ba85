//! The command table and dispatch.
//!
//! One static table (`COMMANDS`) drives name lookup, arity checks with Redis's error texts, which
//! shards a command must lock (from its key positions), and the AUTH, MULTI and DEBUG rules. A
//! container (CONFIG, CLIENT, OBJECT, MEMORY, SLOWLOG, LATENCY, COMMAND) carries a table of its
//! subcommands, each a command of its own named `container|sub` with its own arity, flags, keys
//! and handler, resolved from `args[1]` as Redis's `lookupCommand` does:
//!
//! ```text
//!  COMMANDS: … "config" ─┬─ "config|get"        index i, then i+1 … i+n for its subcommands
//!                        ├─ "config|set"        (commandstats, MULTI queue and CLIENT LIST
//!                        └─ …                    name a subcommand by its own index)
//!  CONFIG            → "config" (arity -2 fails: 'config')
//!  CONFIG GET        → "config|get" (arity -3 fails: 'config|get')
//!  CONFIG NOPE       → unknown subcommand 'NOPE'. Try CONFIG HELP.
//! ```
//!
//! What COMMAND replies (flags, ACL categories, key specs, docs) comes from Redis's own command
//! metadata (`commands/introspect`); a unit test holds every line's arity and flags to it. A
//! command runs with the locks of its keys' shards held (ascending index, so two commands can
//! never deadlock); keyless commands that look at the whole keyspace, and EXEC, hold every shard.

use crate::client::ClientState;
use crate::server::Server;
use parking_lot::MutexGuard;
use resp::ReplyWriter;
use std::sync::atomic::Ordering;
use store::{Collection, Edit, Shard, StoreError};

/// Command flags: Redis's command flags (`CMD_*` in `server.h`, spelled as the command JSON files
/// spell them in [`flag::REDIS_NAMES`]), minus the Sentinel-only ones, plus densekv's
/// `TXN_CONTROL`. A unit test pins every table line's flags to the command metadata
/// (`commands/introspect`), which is what COMMAND INFO replies from; dispatch reads `NO_AUTH`,
/// `NO_MULTI`, `PROTECTED`, `SKIP_SLOWLOG` and `TXN_CONTROL` from the line itself.
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
    pub const BLOCKING: u32 = 1 << 12;
    pub const PUBSUB: u32 = 1 << 13;
    pub const SKIP_MONITOR: u32 = 1 << 14;
    /// Never in the slow log (EXEC: its commands are logged one by one).
    pub const SKIP_SLOWLOG: u32 = 1 << 15;
    pub const ASKING: u32 = 1 << 16;
    pub const NO_MANDATORY_KEYS: u32 = 1 << 17;
    /// Allowed only as `enable-debug-command` says (DEBUG), checked by dispatch before AUTH.
    pub const PROTECTED: u32 = 1 << 18;
    pub const NO_ASYNC_LOADING: u32 = 1 << 19;
    pub const MAY_REPLICATE: u32 = 1 << 20;
    pub const TOUCHES_ARBITRARY_KEYS: u32 = 1 << 21;

    /// No flags.
    pub const NONE: u32 = 0;

    /// Each Redis flag with the name the command JSON files give it.
    pub const REDIS_NAMES: [(u32, &str); 21] = [
        (WRITE, "WRITE"),
        (READONLY, "READONLY"),
        (DENYOOM, "DENYOOM"),
        (ADMIN, "ADMIN"),
        (PUBSUB, "PUBSUB"),
        (NOSCRIPT, "NOSCRIPT"),
        (BLOCKING, "BLOCKING"),
        (LOADING, "LOADING"),
        (STALE, "STALE"),
        (SKIP_MONITOR, "SKIP_MONITOR"),
        (SKIP_SLOWLOG, "SKIP_SLOWLOG"),
        (ASKING, "ASKING"),
        (FAST, "FAST"),
        (NO_AUTH, "NO_AUTH"),
        (MAY_REPLICATE, "MAY_REPLICATE"),
        (NO_MANDATORY_KEYS, "NO_MANDATORY_KEYS"),
        (PROTECTED, "PROTECTED"),
        (NO_ASYNC_LOADING, "NO_ASYNC_LOADING"),
        (NO_MULTI, "NO_MULTI"),
        (ALLOW_BUSY, "ALLOW_BUSY"),
        (TOUCHES_ARBITRARY_KEYS, "TOUCHES_ARBITRARY_KEYS"),
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

pub use flag::{
    ADMIN, ALLOW_BUSY, ASKING, BLOCKING, DENYOOM, FAST, LOADING, MAY_REPLICATE, NO_ASYNC_LOADING,
    NO_AUTH, NO_MANDATORY_KEYS, NO_MULTI, NONE, NOSCRIPT, PROTECTED, PUBSUB, READONLY,
    SKIP_MONITOR, SKIP_SLOWLOG, STALE, TOUCHES_ARBITRARY_KEYS, TXN_CONTROL, WRITE,
};

/// No key arguments (PING, CLIENT…).
pub const NOKEYS: Keys = Keys::None;
/// The whole keyspace (KEYS, DBSIZE, INFO…).
pub const ALL: Keys = Keys::All;
/// The key at argument 1.
pub const K1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};
/// The keys at arguments 1 and 2 (RENAME, LMOVE…).
pub const K12: Keys = Keys::Range {
    first: 1,
    last: 2,
    step: 1,
};
/// Every argument from 1 on (DEL, MGET…).
pub const KALL: Keys = Keys::Range {
    first: 1,
    last: -1,
    step: 1,
};
/// Every other argument from 1 on (MSET key value …).
pub const KPAIRS: Keys = Keys::Range {
    first: 1,
    last: -1,
    step: 2,
};

pub type Handler = fn(&mut Ctx<'_, '_>, &[&[u8]]);

/// One command, or one subcommand of a container (CONFIG GET is `config|get`).
#[derive(Debug)]
pub struct Spec {
    /// Redis's full name: `get`, or `<container>|<subcommand>` (`config|get`), as error texts,
    /// INFO commandstats, CLIENT LIST and COMMAND report it.
    pub name: &'static str,
    pub arity: i32,
    pub flags: u32,
    pub keys: Keys,
    /// The argument naming a field or member of the collection at the command's one key (the
    /// read-ahead in `net.rs` prefetches its lookup); 0 for none.
    pub member: u8,
    pub handler: Handler,
    /// A container's subcommands (CONFIG, CLIENT, OBJECT…), looked up by `args[1]`; empty for
    /// every other command.
    pub subcommands: &'static [Spec],
}

impl Spec {
    /// The name a client types: `get` for `config|get`, the whole name for a top-level command.
    pub fn short_name(&self) -> &'static str {
        self.name.rsplit('|').next().unwrap_or(self.name)
    }

    /// Whether this is a subcommand of a container.
    pub fn is_subcommand(&self) -> bool {
        self.name.contains('|')
    }
}

/// The handler of a container that has no behaviour of its own (CONFIG, CLIENT…). Dispatch never
/// runs it: such a container's arity (-2) sends `CONFIG` alone to the arity error and `CONFIG x`
/// to a subcommand or to the unknown-subcommand error. It answers that error anyway rather than
/// panic, should a table line ever give a container a looser arity.
pub fn container(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let text = [&b"ERR "[..], &unknown_subcommand_text(args)].concat();
    ctx.failed = true;
    ctx.server.count_error(&text);
    ctx.out.error(&text);
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

    /// Locks `shards` as `of` does, but gives up (releasing what it took) once a script has run
    /// past `busy-reply-threshold` while it waited: the caller replies `-BUSY` rather than wait
    /// for the script to end.
    pub fn of_unless_busy(
        server: &'a Server,
        mut shards: smallvec::SmallVec<[usize; 4]>,
    ) -> Option<Locks<'a>> {
        shards.sort_unstable();
        shards.dedup();
        let mut guards = smallvec::SmallVec::new();
        for i in shards {
            guards.push((i, server.lock_shard_unless_busy(i)?));
        }
        Some(Locks { guards })
    }

    pub fn all(server: &'a Server) -> Locks<'a> {
        // In ascending order already; built directly (a script takes them on every run).
        Locks {
            guards: (0..server.shard_count())
                .map(|i| (i, server.lock_shard(i)))
                .collect(),
        }
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

    /// Two different locked shards at once (RENAME and COPY between shards).
    pub fn pair(&mut self, a: usize, b: usize) -> (&mut Shard, &mut Shard) {
        let at = |index: usize| {
            self.guards
                .iter()
                .position(|(i, _)| *i == index)
                .expect("a command touched a shard it did not lock")
        };
        let (ia, ib) = (at(a), at(b));
        assert_ne!(ia, ib, "pair takes two different shards");
        let (low, high) = self.guards.split_at_mut(ia.max(ib));
        let (first, second) = (&mut *low[ia.min(ib)].1, &mut *high[0].1);
        if ia < ib {
            (first, second)
        } else {
            (second, first)
        }
    }

    /// Every locked shard (all of them, for keyless keyspace commands).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Shard> {
        self.guards.iter_mut().map(|(_, g)| &mut **g)
    }

    /// The held shards with their indices.
    pub fn iter_indexed(&mut self) -> impl Iterator<Item = (usize, &mut Shard)> {
        self.guards.iter_mut().map(|(i, g)| (*i, &mut **g))
    }
}

/// What a handler's store access gave: `None` when an error was replied, else the result
/// (`None` for a missing key).
pub type Replied<R> = Option<Option<R>>;

/// Everything a command handler works with.
pub struct Ctx<'s, 'c> {
    pub server: &'s Server,
    pub client: &'c mut ClientState,
    pub out: ReplyWriter<'c>,
    pub locks: &'c mut Locks<'s>,
    pub now_ms: u64,
    /// Set by handlers whose reply was an error (commandstats `failed_calls`).
    pub failed: bool,
    /// What the command changed and how it is written to the append-only file.
    pub effects: crate::propagate::Effects,
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
        self.store_error(StoreError::WrongType);
    }

    pub fn not_integer(&mut self) {
        self.error(crate::commands::args::NOT_INTEGER);
    }

    /// The reply for a store operation that failed (WRONGTYPE, OOM, a full bucket).
    pub fn store_error(&mut self, e: StoreError) {
        self.error(e.reply_text());
    }

    /// Runs `f` with every shard, in shard order: through the locks EXEC holds (all of them),
    /// else taking them all (a command that names no keys holds none of its own).
    pub fn with_all_shards<R>(&mut self, f: impl FnOnce(&Server, &mut [&mut Shard]) -> R) -> R {
        let mut all;
        let locks = if self.locks.iter_mut().next().is_some() {
            &mut *self.locks
        } else {
            all = Locks::all(self.server);
            &mut all
        };
        let mut shards: Vec<&mut Shard> = locks.iter_mut().collect();
        assert_eq!(
            shards.len(),
            self.server.shard_count(),
            "every shard or none is held"
        );
        f(self.server, &mut shards)
    }

    /// `n` more changes for the dirty counter and the append-only file, without signalling a
    /// key (Redis's `server.dirty += n` alone): a command that changed one key several times
    /// touches it once and counts the rest here.
    pub fn count_changes(&self, n: u32) {
        self.effects.dirty.set(self.effects.dirty.get() + n);
        self.server.hot.add(|c| &c.dirty, u64::from(n));
    }

    /// The key was modified: WATCH, the dirty counter and the append-only file learn of it.
    pub fn touch(&self, db: usize, key: &[u8]) {
        self.effects.dirty.set(self.effects.dirty.get() + 1);
        self.server.touch(db, key);
    }

    /// The command is written to the append-only file as `args` (one more command each call)
    /// instead of as it was sent: Redis's `rewriteClientCommandVector` and `alsoPropagate`.
    pub fn propagate_as(&mut self, args: &[&[u8]]) {
        self.effects.replace_with(args);
    }

    /// The command is written to the append-only file even if it changed nothing.
    pub fn force_propagation(&mut self) {
        self.effects.forced = true;
    }

    /// Redis's `notifyKeyspaceEvent(class, event, key, db)` for the client's database: publishes
    /// the event if its class is enabled (`notify.rs`).
    #[inline]
    pub fn notify(&mut self, class: i32, event: &str, key: &[u8]) {
        let db = self.client.db;
        self.notify_db(class, event, key, db);
    }

    /// `notify` for database `db` (MOVE, COPY … DB, SWAPDB).
    pub fn notify_db(&mut self, class: i32, event: &str, key: &[u8], db: usize) {
        if !crate::notify::enabled(self.server, class) {
            return;
        }
        // Keys this command's lookups expired are announced first: in Redis the lookup itself
        // publishes `expired`, before anything the command does after it.
        crate::propagate::expired_in_command(self);
        self.publish_event(class, event, key, db);
    }

    /// Publishes one keyspace event as this client's (`notify.rs`), without first announcing
    /// the keys the command expired (`notify_db` does that).
    pub(crate) fn publish_event(&mut self, class: i32, event: &str, key: &[u8], db: usize) {
        let server = self.server;
        self.with_push_out(|client, out| {
            let publisher = crate::pubsub::Publisher::of(client, out);
            crate::notify::notify(server, class, event, key, db, Some(publisher));
        });
    }

    /// Runs `f` with where the client's push frames go: its reply buffer, or, while CLIENT
    /// REPLY is OFF or SKIP, `ClientState::pushes` (sent after the command: Redis sends
    /// pushes whatever the reply mode).
    pub fn with_push_out<R>(&mut self, f: impl FnOnce(&mut ClientState, &mut Vec<u8>) -> R) -> R {
        if self.client.reply_mode == crate::client::ReplyMode::On {
            return f(self.client, self.out.out_mut());
        }
        let mut pushes = std::mem::take(&mut self.client.pushes);
        let result = f(self.client, &mut pushes);
        self.client.pushes = pushes;
        result
    }

    /// `key` received elements: clients blocked on it (BLPOP, BZPOPMIN…) may be served.
    pub fn signal_ready(&self, db: usize, key: &[u8]) {
        self.server.signal_ready(db, key);
    }

    /// Calls `f` with the `T` at `key` and the reply writer (`Some(None)`: the key is missing),
    /// or replies the store's error (WRONGTYPE) and returns `None`.
    pub fn read<T: Collection, R>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(T::View<'_>, &mut ReplyWriter<'c>) -> R,
    ) -> Replied<R> {
        let (db, now) = (self.db(), self.now_ms);
        let (shard, out) = self.shard_and_out(key);
        match shard.read::<T, _>(db, key, now, |v| f(v, out)) {
            Ok(r) => Some(r),
            Err(e) => {
                self.store_error(e);
                None
            }
        }
    }

    /// Runs `f` on the `T` at `key` for writing, creating it when `create` (an emptied one is
    /// deleted), or replies the store's error and returns `None`.
    pub fn write<T: Collection, R>(
        &mut self,
        key: &[u8],
        create: bool,
        f: impl FnOnce(&mut Edit<'_, T>, &mut ReplyWriter<'c>) -> Result<R, StoreError>,
    ) -> Replied<R> {
        let (db, now) = (self.db(), self.now_ms);
        let (shard, out) = self.shard_and_out(key);
        match shard.update::<T, _>(db, key, now, create, |v| f(v, out)) {
            Ok(r) => Some(r),
            Err(e) => {
                self.store_error(e);
                None
            }
        }
    }

    /// The start every collection SCAN shares (HSCAN, SSCAN, ZSCAN), in Redis's order of checks:
    /// the cursor, the key's type, then the options. A missing key gets the empty scan reply (and
    /// a `keymiss` event: Redis's `lookupKeyReadOrReply`).
    /// `None` when a reply was written.
    pub fn scan_start<T: Collection>(
        &mut self,
        args: &[&[u8]],
    ) -> Option<(u64, crate::commands::args::ScanOptions)> {
        let Some(cursor) = crate::commands::args::parse_cursor(args[2]) else {
            self.error("ERR invalid cursor");
            return None;
        };
        if self.read::<T, _>(args[1], |_, _| ())?.is_none() {
            self.notify(crate::notify::class::KEY_MISS, "keymiss", args[1]);
            self.out.array_len(2);
            self.out.bulk(b"0");
            self.out.array_len(0);
            return None;
        }
        match crate::commands::args::scan_options(&args[3..], false) {
            Ok(options) => Some((cursor, options)),
            Err(e) => {
                self.error(e);
                None
            }
        }
    }

    /// The end every *STORE command shares: `build` makes the result at `dst` in its shard
    /// (replacing what was there), or `dst` is deleted when the result is empty (`count == 0`);
    /// then `dst` is touched, its waiters signalled, and `count` replied. The keyspace events
    /// are Redis's `setKey` then `event` (`sinterstore`, `zunionstore`, `sortstore`…: its class
    /// and name) for a stored result, `del` for a deleted destination.
    pub fn store_result(
        &mut self,
        dst: &[u8],
        count: usize,
        (class, event): (i32, &str),
        build: impl FnOnce(&mut Shard, usize) -> Result<(), StoreError>,
    ) {
        use crate::notify::class::{EXPIRED, GENERIC, NEW};
        let (db, now) = (self.db(), self.now_ms);
        if count == 0 {
            // Redis's `dbDelete`: whatever is stored goes, its TTL unchecked (an expired
            // destination is deleted, not expired).
            if self.shard(dst).delete_stored(db, dst) {
                self.touch(db, dst);
                self.notify(GENERIC, "del", dst);
            }
            return self.out.integer(0);
        }
        // `setKey` looks the destination up first (`lookupKeyWrite`: it may expire) to add it
        // (`new`) or overwrite it; the lookup is only needed for those events.
        let looked = crate::notify::enabled(self.server, NEW | EXPIRED);
        let existed = looked && self.shard(dst).contains(db, dst, now);
        if let Err(e) = build(self.shard(dst), db) {
            return self.store_error(e);
        }
        self.touch(db, dst);
        if looked && !existed {
            self.notify(NEW, "new", dst);
        }
        self.notify(class, event, dst);
        self.signal_ready(db, dst);
        self.out.integer(count as i64);
    }

    /// Writes a string value as a bulk reply.
    pub fn bulk_str(&mut self, value: store::Str<'_>) {
        match value {
            store::Str::Bytes(b) => self.out.bulk(b),
            store::Str::Int(i) => self.out.bulk_integer(i),
        }
    }
}

/// The top-level command named `name` (ASCII case-insensitive): a command or a container, never
/// a subcommand (`config|get` is not a name a client can send as `args[0]`).
pub fn lookup(name: &[u8]) -> Option<(usize, &'static Spec)> {
    if name.len() > NAME_LEN_MAX {
        // Only a name given by rename-command can be this long.
        if !has_renames() {
            return None;
        }
        let lower = name.to_ascii_lowercase();
        let index = INDEX.with(|index| index.get(&lower).copied())?;
        return Some((index, COMMANDS[index]));
    }
    let mut lower = [0u8; NAME_LEN_MAX];
    for (d, s) in lower.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    let lower = &lower[..name.len()];
    let index = INDEX.with(|index| index.get(lower).copied())?;
    Some((index, COMMANDS[index]))
}

/// Longer names are no command's (the longest is 23 bytes, `command|getkeysandflags`), unless
/// rename-command gave one.
const NAME_LEN_MAX: usize = 32;

/// The subcommand `name` of the container at table index `index` (ASCII case-insensitive).
fn lookup_subcommand(
    index: usize,
    container: &'static Spec,
    name: &[u8],
) -> Option<(usize, &'static Spec)> {
    container
        .subcommands
        .iter()
        .position(|sub| sub.short_name().as_bytes().eq_ignore_ascii_case(name))
        .map(|at| (index + 1 + at, &container.subcommands[at]))
}

/// What `args` name, as Redis's `lookupCommand` and `commandCheckExistence` see it.
#[derive(Clone, Copy, Debug)]
pub enum Found {
    /// A command, subcommand, or a container given alone (`CONFIG`, which then fails its arity).
    Command(usize, &'static Spec),
    /// `args[0]` is a container but `args[1]` none of its subcommands.
    UnknownSubcommand,
    UnknownCommand,
}

/// Resolves `args` (at least one) to the command that runs them: `args[0]`, then `args[1]` when
/// `args[0]` is a container and there is an `args[1]`.
pub fn resolve(args: &[&[u8]]) -> Found {
    let Some((index, spec)) = lookup(args[0]) else {
        return Found::UnknownCommand;
    };
    match args.get(1) {
        Some(sub) if !spec.subcommands.is_empty() => match lookup_subcommand(index, spec, sub) {
            Some((i, s)) => Found::Command(i, s),
            None => Found::UnknownSubcommand,
        },
        _ => Found::Command(index, spec),
    }
}

/// The command a full name designates (COMMAND INFO / DOCS `config|get`), as Redis's
/// `lookupCommandBySds`: `name` or `container|sub`, nothing deeper, a container by itself.
pub fn lookup_full_name(name: &[u8]) -> Option<(usize, &'static Spec)> {
    let mut parts = name.splitn(3, |&b| b == b'|');
    let base = parts.next()?;
    let (index, spec) = lookup(base)?;
    match (parts.next(), parts.next()) {
        (None, _) => Some((index, spec)),
        (Some(sub), None) => lookup_subcommand(index, spec, sub),
        (Some(_), Some(_)) => None,
    }
}

/// For commands that look up one member or field of the collection at their key: which
/// argument it is (the read-ahead in `net.rs` prefetches it), from the command table.
pub fn member_arg(spec: &Spec) -> Option<usize> {
    (spec.member != 0).then_some(usize::from(spec.member))
}

/// The `rename-command` pairs of the configuration, lowercase, in file order (set once, before
/// any command runs).
static RENAMES: std::sync::OnceLock<Vec<(Vec<u8>, Vec<u8>)>> = std::sync::OnceLock::new();

/// Applies `rename-command`: each command is known by its new name only, and one renamed to ""
/// is gone, as Redis's rename moves the command's key in its command dict. COMMAND INFO and the
/// statistics keep the real name, as in Redis. Call once at startup.
pub fn set_renames(renames: &[(String, String)]) {
    let lower = renames
        .iter()
        .map(|(from, to)| {
            (
                from.as_bytes().to_ascii_lowercase(),
                to.as_bytes().to_ascii_lowercase(),
            )
        })
        .collect();
    let _ = RENAMES.set(lower);
}

/// Whether rename-command changed any name (the dispatch's shortcut by name is then off).
pub fn has_renames() -> bool {
    RENAMES.get().is_some_and(|r| !r.is_empty())
}

thread_local! {
    /// Top-level name → table index, renames applied. foldhash rather than SipHash: the names
    /// are ours, not an attacker's.
    static INDEX: std::collections::HashMap<Vec<u8>, usize, foldhash::fast::FixedState> = {
        let mut index: std::collections::HashMap<Vec<u8>, usize, foldhash::fast::FixedState> =
            COMMANDS
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.is_subcommand())
                .map(|(i, s)| (s.name.as_bytes().to_vec(), i))
                .collect();
        for (from, to) in RENAMES.get().into_iter().flatten() {
            if let Some(i) = index.remove(from)
                && !to.is_empty()
            {
                index.insert(to.clone(), i);
            }
        }
        index
    };
}

/// Key argument positions of `spec` for `args`.
pub fn key_positions(spec: &Spec, args: &[&[u8]]) -> smallvec::SmallVec<[usize; 4]> {
    match spec.keys {
        Keys::None | Keys::All => smallvec::SmallVec::new(),
        Keys::NumKeys { at, also } => {
            let count = args
                .get(at)
                .and_then(|a| crate::commands::args::parse_i64(a))
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

/// The shards `spec` needs for `args`.
fn shards_for(server: &Server, spec: &Spec, args: &[&[u8]]) -> smallvec::SmallVec<[usize; 4]> {
    match spec.keys {
        Keys::None => smallvec::SmallVec::new(),
        Keys::All => (0..server.shard_count()).collect(),
        Keys::Range { .. } | Keys::NumKeys { .. } => key_positions(spec, args)
            .into_iter()
            .map(|i| server.shard_of(args[i]))
            .collect(),
    }
}

/// Locks what `spec` needs for `args`, unless a script turns busy meanwhile (`None`: the
/// command gets `-BUSY`). While no script runs this is `locks_for`.
pub fn locks_unless_busy<'a>(server: &'a Server, spec: &Spec, args: &[&[u8]]) -> Option<Locks<'a>> {
    if !server.scripting.running_now() {
        return Some(locks_for(server, spec, args));
    }
    Locks::of_unless_busy(server, shards_for(server, spec, args))
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
    // Tracking's bookkeeping (who runs, what follows the reply) only while a client tracks.
    let tracking = server
        .tracking
        .active()
        .then(|| crate::tracking::enter(client, out.len()));
    let mut ctx = Ctx {
        server,
        out: ReplyWriter::new(out, client.protocol),
        client,
        locks,
        now_ms,
        failed: false,
        effects: crate::propagate::Effects::default(),
    };
    // A panic in a handler is a bug that may have left a shard half-edited: the panic hook
    // (`log::install_crash_report`) writes a bug report naming this command and aborts the
    // process, as Redis does on a failed assertion, so no client sees that shard again.
    crate::log::set_current_command(spec.name, args.len());
    (spec.handler)(&mut ctx, args);
    crate::log::clear_current_command();
    crate::propagate::command_done(&mut ctx, spec.flags, args);
    if server.monitors.any() && spec.flags & (flag::ADMIN | flag::SKIP_MONITOR) == 0 {
        crate::monitor::feed(server, ctx.client, spec.name, args);
    }
    if server.eviction.limited() {
        server.eviction.publish(ctx.locks);
    }
    let failed = ctx.failed;
    if let Some(tracking) = tracking {
        crate::tracking::leave(server, tracking, client, out, index, args);
    }
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
    if spec.flags & flag::SKIP_SLOWLOG == 0 {
        crate::commands::server::slowlog_record(server, client, spec, args, usec);
    }
}

/// `arg` as C's `%s` prints it: up to its first NUL byte.
fn c_str(arg: &[u8]) -> &[u8] {
    arg.iter()
        .position(|&b| b == 0)
        .map_or(arg, |end| &arg[..end])
}

/// `arg` as C's `%.{max}s` prints it: up to its first NUL byte, at most `max` bytes.
fn c_str_max(arg: &[u8], max: usize) -> &[u8] {
    let arg = c_str(arg);
    &arg[..arg.len().min(max)]
}

/// The text Redis sends, after `ERR `, for an unknown command (`commandCheckExistence`): the name
/// cut to 128 bytes, then each argument quoted (cut so that the list stays near 128 bytes) while
/// the list is under 128 bytes. Arguments are C strings there, so each ends at its first NUL
/// byte; other bytes, valid UTF-8 or not, are sent as they are (CR and LF become spaces when
/// the error is written).
pub fn unknown_command_text(args: &[&[u8]]) -> Vec<u8> {
    let mut list = Vec::new();
    for arg in &args[1..] {
        if list.len() >= 128 {
            break;
        }
        let room = 128 - list.len();
        list.push(b'\'');
        list.extend_from_slice(c_str_max(arg, room));
        list.extend_from_slice(b"' ");
    }
    let mut text = b"unknown command '".to_vec();
    text.extend_from_slice(c_str_max(args[0], 128));
    text.extend_from_slice(b"', with args beginning with: ");
    text.extend_from_slice(&list);
    text
}

/// The text Redis sends, after `ERR `, when `args[0]` is a container and `args[1]` none of its
/// subcommands: the subcommand cut to 128 bytes, the container as typed, upper-cased.
pub fn unknown_subcommand_text(args: &[&[u8]]) -> Vec<u8> {
    let mut text = b"unknown subcommand '".to_vec();
    text.extend_from_slice(c_str_max(args.get(1).copied().unwrap_or_default(), 128));
    text.extend_from_slice(b"'. Try ");
    text.extend(c_str(args[0]).iter().map(u8::to_ascii_uppercase));
    text.extend_from_slice(b" HELP.");
    text
}

/// The arity error of the command or subcommand named `name` (its full name, `config|get`).
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

/// Declares one command family's table, one line per command:
/// `name, arity, flags, keys, member, handler;` — `member` is the argument naming a field or
/// member of the key's collection (prefetched ahead of the command), 0 for none. A container's
/// line ends with its subcommand table: `"config", -2, NONE, NOKEYS, 0, container,
/// CONFIG_SUBCOMMANDS;`, whose lines are named `config|get` and so on. The table and the
/// prefetch come from these lines; COMMAND's replies come from Redis's command metadata for the
/// same names (`commands/introspect`), which a unit test holds to these lines.
macro_rules! table {
    ($($name:literal, $arity:expr, $flags:expr, $keys:expr, $member:literal, $handler:path
        $(, $subcommands:expr)?;)*) => {
        &[$($crate::command::Spec {
            name: $name,
            arity: $arity,
            flags: $flags,
            keys: $keys,
            member: $member,
            handler: $handler,
            subcommands: $crate::command::table!(@subcommands $($subcommands)?),
        }),*]
    };
    (@subcommands) => { &[] };
    (@subcommands $subcommands:expr) => { $subcommands };
}
pub(crate) use table;

/// Every command densekv knows: the core table, then one table per collection type, in the
/// order COMMAND LIST reports them, each container followed by its subcommands. An index into
/// this list identifies a command or subcommand (commandstats, the MULTI queue, CLIENT LIST's
/// `cmd`); a container's subcommands take the indices right after it.
pub static COMMANDS: std::sync::LazyLock<Vec<&'static Spec>> = std::sync::LazyLock::new(|| {
    use crate::commands as c;
    [
        c::connection::COMMANDS,
        c::server::COMMANDS,
        c::persistence::COMMANDS,
        c::debug::COMMANDS,
        c::introspect::COMMANDS,
        c::keys::COMMANDS,
        c::dump::COMMANDS,
        c::string::COMMANDS,
        c::bitmap::COMMANDS,
        c::hll::COMMANDS,
        c::transaction::COMMANDS,
        c::hash::COMMANDS,
        c::list::COMMANDS,
        c::set::COMMANDS,
        c::zset::COMMANDS,
        c::geo::COMMANDS,
        c::sort::COMMANDS,
        c::blocking::LIST_COMMANDS,
        c::blocking::ZSET_COMMANDS,
        c::pubsub::COMMANDS,
        c::scripting::COMMANDS,
        c::function::COMMANDS,
    ]
    .into_iter()
    .flatten()
    .flat_map(|spec| std::iter::once(spec).chain(spec.subcommands))
    .collect()
});

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command with a member argument has one key at 1 and can carry an argument at the
    /// member's position; the prefetch relies on it.
    #[test]
    fn member_args_name_real_single_key_commands() {
        let mut named = 0;
        for spec in COMMANDS.iter() {
            let Some(at) = member_arg(spec) else {
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
        }
        assert_eq!(named, 21);
        for name in ["get", "set", "smembers", "hgetall", "zrange"] {
            let (_, spec) = lookup(name.as_bytes()).expect("a command");
            assert_eq!(member_arg(spec), None, "{name}");
        }
    }
}
