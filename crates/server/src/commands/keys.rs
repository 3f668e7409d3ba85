//! Generic key commands (Redis's `db.c`, `expire.c`, `object.c`): DEL, EXISTS, TYPE, RENAME,
//! COPY, MOVE, KEYS, SCAN, RANDOMKEY, the EXPIRE family, TTL, PERSIST, and OBJECT, a container
//! whose subcommands (`object|encoding`…) are table lines of their own.
//!
//! SCAN's cursor spans the shards: the low 32 bits are the shard index and the high bits the
//! shard's PageHash cursor, a position in hash space whose low 32 bits are always zero (buckets are
//! at most 32 bits deep). A full SCAN walks shard 0 to the end, then shard 1, and so on, so every
//! key present for the whole scan is returned at least once.
//!
//! RENAME, MOVE and COPY are the store's (`Shard::rename`, `Shard::copy`, `store::rename_between`,
//! `store::copy_between`): they complete or leave both keys as they were.
//!
//! Keyspace events, as `db.c` and `expire.c` send them: `del` for each key DEL and UNLINK
//! delete; `new` (the destination is added), then `rename_from` and `rename_to` for RENAME,
//! `move_from` and `move_to` for MOVE, `copy_to` for COPY; `expire` for the EXPIRE family, or
//! `del` when the time is already past; `persist`; `keymiss` where EXISTS, TOUCH, TYPE, COPY's
//! source and the TTL family miss. The helpers every family shares for `keymiss` and `new` are
//! here, as Redis's `lookupKey` and `dbAdd` are in `db.c`.
//!
//! In the append-only file, EXPIRE, PEXPIRE and EXPIREAT are written as `PEXPIREAT key <ms>` and
//! their NX/XX/GT/LT options as sent (Redis's `expireGenericCommand`), and a time already past
//! as the DEL (UNLINK under `lazyfree-lazy-expire`) it amounted to; the rest are deterministic
//! (RENAME, MOVE and COPY carry absolute expire times) and written as sent.

use super::args::{decimal, deletion, is, parse_cursor, parse_i64, scan_options};
use super::random;
use crate::command::{
    ALL, Ctx, DENYOOM, FAST, K1, K12, KALL, Keys, LOADING, NOKEYS, NONE, READONLY, STALE, Spec,
    TOUCHES_ARBITRARY_KEYS, WRITE, container, table,
};
use crate::notify::class;
use store::glob::Glob;
use store::{Kind, Relocated, StoreError};

const SHARD_BITS: u64 = 0xFFFF_FFFF;

/// A read lookup of `key` found nothing: the `keymiss` event (class `m`), which Redis's
/// `lookupKeyRead` sends. The read commands call it where their lookup misses; the lookups
/// Redis makes with `LOOKUP_NONOTIFY` (OBJECT, the blocked clients' checks) and every write
/// lookup (`lookupKeyWrite`) send none.
pub fn keymiss(ctx: &mut Ctx<'_, '_>, key: &[u8]) {
    ctx.notify(class::KEY_MISS, "keymiss", key);
}

/// `key` was created: the `new` event (class `n`) Redis's `dbAdd` sends, ahead of the event of
/// the command that created it.
pub fn created(ctx: &mut Ctx<'_, '_>, key: &[u8]) {
    ctx.notify(class::NEW, "new", key);
}

/// Announces now the keys the command's lookups have expired so far (their `expired` events,
/// `propagate::expired_in_command`). A command that looks up several keys with no event of its
/// own between the lookups calls it after each: the store logs expiries per shard, and left to
/// the command's end they would be announced in shard order, not in the order of the lookups.
pub fn expired_so_far(ctx: &mut Ctx<'_, '_>) {
    crate::propagate::expired_in_command(ctx);
}

/// Redis's `lookupKeyWrite` ahead of a write that replaces `key` whole (`setKey`, RENAME's
/// destination): whether `key` exists, an expired one deleted first. Only the keyspace events
/// need it (`expired`, and `new` when the key did not exist), so without those classes the
/// lookup is skipped: `None`.
pub fn looked_up(ctx: &mut Ctx<'_, '_>, db: usize, key: &[u8]) -> Option<bool> {
    if !crate::notify::enabled(ctx.server, class::NEW | class::EXPIRED) {
        return None;
    }
    let now = ctx.now_ms;
    Some(ctx.shard(key).contains(db, key, now))
}

/// The key of every OBJECT subcommand but HELP.
const K2: Keys = Keys::Range {
    first: 2,
    last: 2,
    step: 1,
};

static OBJECT_SUBCOMMANDS: &[Spec] = table! {
    // name            arity, flags,           keys,   member, handler
    "object|encoding", 3,     READONLY,        K2,     0,      object_encoding;
    "object|refcount", 3,     READONLY,        K2,     0,      object_refcount;
    "object|freq",     3,     READONLY,        K2,     0,      object_freq;
    "object|idletime", 3,     READONLY,        K2,     0,      object_idletime;
    "object|help",     2,     LOADING | STALE, NOKEYS, 0,      object_help;
};

pub static COMMANDS: &[Spec] = table! {
    // name        arity, flags,                             keys,   member, handler,     subcommands
    "object",      -2,    NONE,                              NOKEYS, 0,      container,   OBJECT_SUBCOMMANDS;
    "del",         -2,    WRITE,                             KALL,   0,      del;
    "unlink",      -2,    WRITE | FAST,                      KALL,   0,      del;
    "exists",      -2,    READONLY | FAST,                   KALL,   0,      exists;
    "touch",       -2,    READONLY | FAST,                   KALL,   0,      touch;
    "type",        2,     READONLY | FAST,                   K1,     0,      type_;
    "rename",      3,     WRITE,                             K12,    0,      rename;
    "renamenx",    3,     WRITE | FAST,                      K12,    0,      renamenx;
    "copy",        -3,    WRITE | DENYOOM,                   K12,    0,      copy;
    "move",        3,     WRITE | FAST,                      K1,     0,      move_;
    "keys",        2,     READONLY,                          ALL,    0,      keys;
    "scan",        -2,    READONLY | TOUCHES_ARBITRARY_KEYS, ALL,    0,      scan;
    "randomkey",   1,     READONLY | TOUCHES_ARBITRARY_KEYS, ALL,    0,      randomkey;
    "expire",      -3,    WRITE | FAST,                      K1,     0,      expire;
    "pexpire",     -3,    WRITE | FAST,                      K1,     0,      pexpire;
    "expireat",    -3,    WRITE | FAST,                      K1,     0,      expireat;
    "pexpireat",   -3,    WRITE | FAST,                      K1,     0,      pexpireat;
    "ttl",         2,     READONLY | FAST,                   K1,     0,      ttl;
    "pttl",        2,     READONLY | FAST,                   K1,     0,      pttl;
    "expiretime",  2,     READONLY | FAST,                   K1,     0,      expiretime;
    "pexpiretime", 2,     READONLY | FAST,                   K1,     0,      pexpiretime;
    "persist",     2,     WRITE | FAST,                      K1,     0,      persist;
};

pub fn del(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut deleted = 0;
    for &key in &args[1..] {
        if ctx.shard(key).remove(db, key, now) {
            ctx.touch(db, key);
            ctx.notify(class::GENERIC, "del", key);
            deleted += 1;
        } else {
            // An expired key is deleted as expired, not as DEL'd.
            expired_so_far(ctx);
        }
    }
    ctx.out.integer(deleted);
}

/// TOUCH: EXISTS that counts as a use of each key (its access bits, `store::AccessPolicy`).
pub fn touch(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut count = 0;
    for &key in &args[1..] {
        if ctx.shard(key).touch_key(db, key, now) {
            count += 1;
        } else {
            keymiss(ctx, key);
        }
    }
    ctx.out.integer(count);
}

pub fn exists(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut count = 0;
    for &key in &args[1..] {
        if ctx.shard(key).contains(db, key, now) {
            count += 1;
        } else {
            keymiss(ctx, key);
        }
    }
    ctx.out.integer(count);
}

pub fn type_(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let kind = ctx.shard(args[1]).kind(db, args[1], now);
    ctx.out.simple(kind.map_or("none", Kind::name).as_bytes());
    if kind.is_none() {
        keymiss(ctx, args[1]);
    }
}

/// Moves (or with `copy`, copies) `src` of database `src_db` to `dst` of `dst_db`, in one shard
/// or between two; `replace`: the destination may exist.
fn relocate(
    ctx: &mut Ctx<'_, '_>,
    (src_db, src): (usize, &[u8]),
    (dst_db, dst): (usize, &[u8]),
    replace: bool,
    copy: bool,
) -> Result<Relocated, StoreError> {
    let now = ctx.now_ms;
    let (from, to) = (ctx.server.shard_of(src), ctx.server.shard_of(dst));
    if from == to {
        let shard = ctx.shard(src);
        return if copy {
            shard.copy(src_db, src, dst_db, dst, replace, now)
        } else {
            shard.rename(src_db, src, dst_db, dst, replace, now)
        };
    }
    let (a, b) = ctx.locks.pair(from, to);
    if copy {
        store::copy_between(a, b, src_db, src, dst_db, dst, replace, now)
    } else {
        store::rename_between(a, b, src_db, src, dst_db, dst, replace, now)
    }
}

/// Moves `src` to `dst` in the current db; `nx`: only if `dst` is free.
fn rename_generic(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], nx: bool) {
    let (src, dst) = (args[1], args[2]);
    let (db, now) = (ctx.db(), ctx.now_ms);
    if src == dst {
        if !ctx.shard(src).contains(db, src, now) {
            return ctx.error("ERR no such key");
        }
        return if nx { ctx.out.integer(0) } else { ctx.ok() };
    }
    if !nx {
        // Redis looks the destination up (`lookupKeyWrite`, which may expire it) once it has
        // found the source; the store's move looks at it only when it may not replace it.
        look_up_target(ctx, (db, src), (db, dst));
    }
    match relocate(ctx, (db, src), (db, dst), !nx, false) {
        Err(e) => ctx.store_error(e),
        Ok(Relocated::NoSource) => ctx.error("ERR no such key"),
        Ok(Relocated::TargetExists) => ctx.out.integer(0),
        Ok(Relocated::Done) => {
            ctx.touch(db, src);
            ctx.touch(db, dst);
            // The destination is deleted, if it existed, and added again (`dbAdd`): `new`.
            created(ctx, dst);
            ctx.notify(class::GENERIC, "rename_from", src);
            ctx.notify(class::GENERIC, "rename_to", dst);
            ctx.signal_ready(db, dst);
            if nx { ctx.out.integer(1) } else { ctx.ok() }
        }
    }
}

/// The lookups Redis makes of a move's source and then of its destination before it replaces
/// the destination (RENAME, COPY … REPLACE): for their keyspace events only (`looked_up`), as
/// the store's move replaces an expired destination without looking at it.
fn look_up_target(
    ctx: &mut Ctx<'_, '_>,
    (src_db, src): (usize, &[u8]),
    (dst_db, dst): (usize, &[u8]),
) {
    if looked_up(ctx, src_db, src) == Some(true) {
        looked_up(ctx, dst_db, dst);
    }
}

pub fn rename(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    rename_generic(ctx, args, false);
}

pub fn renamenx(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    rename_generic(ctx, args, true);
}

/// Parses a C `int` argument as Redis's `getIntFromObjectOrReply` does, replying on error.
pub fn parse_int(ctx: &mut Ctx<'_, '_>, arg: &[u8]) -> Option<i64> {
    let Some(n) = parse_i64(arg) else {
        ctx.not_integer();
        return None;
    };
    if i32::try_from(n).is_err() {
        ctx.error("ERR value is out of range, value must between -2147483648 and 2147483647");
        return None;
    }
    Some(n)
}

/// Parses a database index argument, replying on error.
pub fn db_index(ctx: &mut Ctx<'_, '_>, arg: &[u8]) -> Option<usize> {
    let n = parse_int(ctx, arg)?;
    let databases = ctx.server.config.read().databases;
    if n < 0 || n as usize >= databases {
        ctx.error("ERR DB index is out of range");
        return None;
    }
    Some(n as usize)
}

pub fn copy(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (src, dst) = (args[1], args[2]);
    let db = ctx.db();
    let (mut target, mut replace) = (db, false);
    let mut i = 3;
    while i < args.len() {
        if is(args[i], "replace") {
            replace = true;
        } else if is(args[i], "db") && i + 1 < args.len() {
            let Some(d) = db_index(ctx, args[i + 1]) else {
                return;
            };
            target = d;
            i += 1;
        } else {
            return ctx.syntax_error();
        }
        i += 1;
    }
    if src == dst && target == db {
        ctx.error("ERR source and destination objects are the same");
        return;
    }
    if replace {
        look_up_target(ctx, (db, src), (target, dst));
    }
    match relocate(ctx, (db, src), (target, dst), replace, true) {
        Err(e) => ctx.store_error(e),
        Ok(Relocated::NoSource) => {
            // COPY looks its source up for reading (`lookupKeyRead`).
            keymiss(ctx, src);
            ctx.out.integer(0);
        }
        Ok(Relocated::TargetExists) => ctx.out.integer(0),
        Ok(Relocated::Done) => {
            ctx.touch(target, dst);
            ctx.notify_db(class::NEW, "new", dst, target);
            ctx.notify_db(class::GENERIC, "copy_to", dst, target);
            ctx.signal_ready(target, dst);
            ctx.out.integer(1);
        }
    }
}

pub fn move_(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let key = args[1];
    let db = ctx.db();
    let Some(target) = db_index(ctx, args[2]) else {
        return;
    };
    if target == db {
        ctx.error("ERR source and destination objects are the same");
        return;
    }
    match relocate(ctx, (db, key), (target, key), false, false) {
        Err(e) => ctx.store_error(e),
        Ok(Relocated::NoSource | Relocated::TargetExists) => ctx.out.integer(0),
        Ok(Relocated::Done) => {
            ctx.touch(db, key);
            ctx.touch(target, key);
            ctx.notify_db(class::NEW, "new", key, target);
            ctx.notify(class::GENERIC, "move_from", key);
            ctx.notify_db(class::GENERIC, "move_to", key, target);
            ctx.signal_ready(target, key);
            ctx.out.integer(1);
        }
    }
}

pub fn keys(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let glob = Glob::new(args[1]);
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut found: Vec<Vec<u8>> = Vec::new();
    for shard in ctx.locks.iter_mut() {
        let mut cursor = 0;
        loop {
            cursor = shard.scan(db, cursor, now, |key, _| {
                if glob.matches(key) {
                    found.push(key.to_vec());
                }
            });
            if cursor == 0 {
                break;
            }
        }
    }
    ctx.out.array_len(found.len());
    for key in found {
        ctx.out.bulk(&key);
    }
}

pub fn scan(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(cursor) = parse_cursor(args[1]) else {
        ctx.error("ERR invalid cursor");
        return;
    };
    let options = match scan_options(&args[2..], true) {
        Ok(o) => o,
        Err(e) => return ctx.error(e),
    };
    let (db, now) = (ctx.db(), ctx.now_ms);
    let shards = ctx.server.shard_count() as u64;
    let mut shard_index = cursor & SHARD_BITS;
    let mut inner = cursor & !SHARD_BITS;
    let mut found: Vec<Vec<u8>> = Vec::new();
    let mut steps = 0;
    let mut guards: Vec<&mut store::Shard> = ctx.locks.iter_mut().collect();
    let count = options.count;
    while shard_index < shards && found.len() < count && steps < count.saturating_mul(10) {
        let shard = &mut *guards[shard_index as usize];
        inner = shard.scan_and_reclaim(db, inner, now, |key, walked| {
            if options
                .kind
                .as_ref()
                .is_some_and(|t| walked.kind().name().as_bytes() != t.as_slice())
            {
                return;
            }
            if options.matches(key) {
                found.push(key.to_vec());
            }
        });
        steps += 1;
        if inner == 0 {
            shard_index += 1;
        }
    }
    let next = if shard_index >= shards {
        0
    } else {
        inner | shard_index
    };
    ctx.out.array_len(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array_len(found.len());
    for key in found {
        ctx.out.bulk(&key);
    }
}

pub fn randomkey(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let next = random::random;
    let mut shards: Vec<&mut store::Shard> = ctx.locks.iter_mut().collect();
    // Pick a shard in proportion to its size, then a key inside it.
    for _ in 0..8 {
        let total: usize = shards.iter().map(|s| s.len(db)).sum();
        if total == 0 {
            break;
        }
        let mut pick = (next() % total as u64) as usize;
        let index = shards.iter().position(|s| {
            let len = s.len(db);
            if pick < len {
                true
            } else {
                pick -= len;
                false
            }
        });
        if let Some(index) = index
            && let Some(key) = shards[index].random_key(db, now, next)
        {
            ctx.out.bulk(&key);
            return;
        }
    }
    ctx.out.null();
}

/// EXPIRE-family options.
#[derive(Clone, Copy, Default)]
struct ExpireFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

fn expire_generic(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], millis: bool, absolute: bool, name: &str) {
    let key = args[1];
    let mut flags = ExpireFlags::default();
    for &a in &args[3..] {
        if is(a, "nx") {
            flags.nx = true;
        } else if is(a, "xx") {
            flags.xx = true;
        } else if is(a, "gt") {
            flags.gt = true;
        } else if is(a, "lt") {
            flags.lt = true;
        } else {
            ctx.error(&format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(a)
            ));
            return;
        }
    }
    if flags.nx && (flags.xx || flags.gt || flags.lt) {
        return ctx.error("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if flags.gt && flags.lt {
        return ctx.error("ERR GT and LT options at the same time are not compatible");
    }
    // Redis checks the options before the time argument.
    let Some(n) = parse_i64(args[2]) else {
        return ctx.not_integer();
    };
    let (db, now) = (ctx.db(), ctx.now_ms);
    let ms = if millis { Some(n) } else { n.checked_mul(1000) };
    let at = ms.and_then(|ms| {
        if absolute {
            Some(ms)
        } else {
            ms.checked_add(now as i64)
        }
    });
    let Some(at) = at else {
        ctx.error(&format!("ERR invalid expire time in '{name}' command"));
        return;
    };
    let Some(current) = ctx.shard(key).expire_at(db, key, now) else {
        ctx.out.integer(0);
        return;
    };
    let allowed = match current {
        None => !flags.xx && !flags.gt,
        Some(cur) => !flags.nx && (!flags.gt || at > cur as i64) && (!flags.lt || at < cur as i64),
    };
    if !allowed {
        ctx.out.integer(0);
        return;
    }
    if at <= now as i64 {
        ctx.shard(key).remove(db, key, now);
        ctx.touch(db, key);
        ctx.notify(class::GENERIC, "del", key);
        let del = deletion(ctx.server.config.read().lazyfree_lazy_expire);
        ctx.propagate_as(&[del, key]);
        return ctx.out.integer(1);
    }
    if let Err(e) = ctx.shard(key).set_expire(db, key, Some(at as u64), now) {
        return ctx.store_error(e);
    }
    ctx.touch(db, key);
    ctx.notify(class::GENERIC, "expire", key);
    propagate_expire(ctx, args, millis, absolute, at);
    ctx.out.integer(1);
}

/// An EXPIRE-family command that set a time is written as `PEXPIREAT key <ms>` followed by its
/// options as sent (NX, XX, GT, LT: they held when it ran, so they hold on replay), as Redis's
/// `expireGenericCommand` rewrites only the name and the time. PEXPIREAT itself is written
/// as it came, time and all.
fn propagate_expire(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], millis: bool, absolute: bool, at: i64) {
    if millis && absolute {
        return;
    }
    let at = decimal(at);
    let mut rewritten: Vec<&[u8]> = Vec::with_capacity(args.len());
    rewritten.extend_from_slice(&[b"PEXPIREAT", args[1], &at]);
    rewritten.extend_from_slice(&args[3..]);
    ctx.propagate_as(&rewritten);
}

pub fn expire(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    expire_generic(ctx, args, false, false, "expire");
}

pub fn pexpire(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    expire_generic(ctx, args, true, false, "pexpire");
}

pub fn expireat(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    expire_generic(ctx, args, false, true, "expireat");
}

pub fn pexpireat(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    expire_generic(ctx, args, true, true, "pexpireat");
}

fn ttl_generic(ctx: &mut Ctx<'_, '_>, key: &[u8], millis: bool, absolute: bool) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.shard(key).expire_at(db, key, now) {
        None => {
            ctx.out.integer(-2);
            keymiss(ctx, key);
        }
        Some(None) => ctx.out.integer(-1),
        Some(Some(at)) => {
            let ttl = if absolute {
                at as i64
            } else {
                (at as i64 - now as i64).max(0)
            };
            // Rounded to the nearest second without overflow: an expire time near i64::MAX
            // (PEXPIREAT 9223372036854775807) gives 9223372036854776, as redis-server does.
            let seconds = ((i128::from(ttl) + 500) / 1000) as i64;
            ctx.out.integer(if millis { ttl } else { seconds });
        }
    }
}

pub fn ttl(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    ttl_generic(ctx, args[1], false, false);
}

pub fn pttl(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    ttl_generic(ctx, args[1], true, false);
}

pub fn expiretime(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    ttl_generic(ctx, args[1], false, true);
}

pub fn pexpiretime(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    ttl_generic(ctx, args[1], true, true);
}

pub fn persist(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let key = args[1];
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.shard(key).expire_at(db, key, now) {
        Some(Some(_)) => {
            if let Err(e) = ctx.shard(key).set_expire(db, key, None, now) {
                return ctx.store_error(e);
            }
            ctx.touch(db, key);
            ctx.notify(class::GENERIC, "persist", key);
            ctx.out.integer(1);
        }
        _ => ctx.out.integer(0),
    }
}

const OBJECT_HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];

pub fn object_help(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    ctx.out.array_len(OBJECT_HELP.len());
    for line in OBJECT_HELP {
        ctx.out.simple(line.as_bytes());
    }
}

/// Whether the key `args[2]` holds one of the integers Redis shares (`None`, with the null
/// reply written, when the key does not exist).
fn object_key(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Option<bool> {
    let key = args[2];
    let (db, now) = (ctx.db(), ctx.now_ms);
    let shared = ctx.shard(key).is_shared_integer(db, key, now);
    if shared.is_none() {
        ctx.out.null();
    }
    shared
}

/// OBJECT ENCODING: the name Redis would give the value's encoding.
pub fn object_encoding(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if object_key(ctx, args).is_none() {
        return;
    }
    let key = args[2];
    let (db, now) = (ctx.db(), ctx.now_ms);
    let name = ctx
        .shard(key)
        .object_encoding(db, key, now)
        .unwrap_or("unknown");
    ctx.out.bulk(name.as_bytes());
}

/// OBJECT REFCOUNT: Redis shares the integers 0..9999 (refcount INT_MAX); every other value has
/// one owner.
pub fn object_refcount(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(int) = object_key(ctx, args) else {
        return;
    };
    ctx.out.integer(if int { i64::from(i32::MAX) } else { 1 });
}

/// OBJECT FREQ: the LFU counter Redis would show for the key's access level (`store`'s
/// `access.rs`); only under an LFU policy, as in Redis.
pub fn object_freq(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if object_key(ctx, args).is_none() {
        return;
    }
    if !crate::evict::is_lfu(&ctx.server.config.read()) {
        return ctx.error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
    }
    let (key, db, now) = (args[2], ctx.db(), ctx.now_ms);
    let freq = ctx.shard(key).frequency(db, key, now).unwrap_or(0);
    ctx.out.integer(i64::from(freq));
}

/// OBJECT IDLETIME: seconds since the key's last use, estimated from its access level and the
/// shard's aging passes; not under an LFU policy, as in Redis.
pub fn object_idletime(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if object_key(ctx, args).is_none() {
        return;
    }
    if crate::evict::is_lfu(&ctx.server.config.read()) {
        return ctx.error("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
    }
    let (key, db, now) = (args[2], ctx.db(), ctx.now_ms);
    let idle = ctx.shard(key).idle_secs(db, key, now).unwrap_or(0);
    ctx.out.integer(i64::try_from(idle).unwrap_or(i64::MAX));
}
