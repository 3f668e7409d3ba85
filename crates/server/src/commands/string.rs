//! String commands (Redis's `t_string.c`): GET/SET and their variants, counters, ranges, LCS.
//!
//! Values are stored by `store::value`: canonical integers as varints (`int` encoding), other
//! strings as bytes (`embstr` up to 44 bytes, `raw` above or once modified in place). Redis's limit
//! on a string's length is `proto-max-bulk-len` (512 MB by default), checked before any growth.
//!
//! The append-only file gets what a replay needs to give the same string, as Redis 7.0's
//! `t_string.c` writes it (`Ctx::propagate_as`):
//!
//! ```text
//!  SET … EX|PX|EXAT|PXAT, SETEX, PSETEX → SET key value PXAT <ms>      (other options dropped)
//!  SET … GET (no expire time)           → the SET without its GET tokens
//!  GETEX                                → PEXPIREAT key <ms> | PERSIST key | DEL key (nothing
//!                                         when it changed nothing)
//!  GETDEL → DEL key     GETSET → SET key value     INCRBYFLOAT → SET key <new value> KEEPTTL
//! ```
//! A past EXAT/PXAT of GETEX writes UNLINK instead of DEL under `lazyfree-lazy-expire`, GETDEL
//! under `lazyfree-lazy-user-del`, as Redis picks.
//!
//! Keyspace events, as `t_string.c` sends them: `set` (then `expire` when the write gave a TTL)
//! for SET and its variants, MSET, MSETNX and GETSET, each after `new` when the key did not
//! exist; `incrby` (INCR, DECR, INCRBY, DECRBY), `incrbyfloat`, `append`, `setrange`; GETDEL's
//! `del`; GETEX's `expire`, `persist` or `del`; `keymiss` where a read misses (GET, MGET,
//! STRLEN, GETRANGE, LCS, and the GET of SET … GET, GETSET, GETDEL, GETEX).

use super::args::{decimal, deletion, is, parse_i64};
use super::keys::{created, keymiss, looked_up};
use crate::command::{Ctx, DENYOOM, FAST, K1, K12, KALL, KPAIRS, READONLY, Spec, WRITE, table};
use crate::notify::class;
use store::{Patch, StoreError, Str, Ttl};

/// Reads a string value as owned bytes: `Ok(None)` when missing, `Err(())` after replying
/// WRONGTYPE.
fn read(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Result<Option<Vec<u8>>, ()> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    ctx.shard(key)
        .get_string(db, key, now, |s| s.to_vec())
        .map_err(|e| ctx.store_error(e))
}

/// `read` as Redis's `getGenericCommand` looks the key up (SET … GET, GETSET, GETDEL): a miss
/// is a `keymiss`.
fn read_get(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Result<Option<Vec<u8>>, ()> {
    let old = read(ctx, key)?;
    if old.is_none() {
        keymiss(ctx, key);
    }
    Ok(old)
}

/// The events of a string written whole (Redis's `setKey`, then the command's own): `new` when
/// the lookup before the write found no key (`existed`, `None` when it was skipped), `set`, and
/// `expire` when the write gave the key a TTL.
fn notify_set(ctx: &mut Ctx<'_, '_>, key: &[u8], existed: Option<bool>, expire: bool) {
    if existed == Some(false) {
        created(ctx, key);
    }
    ctx.notify(class::STRING, "set", key);
    if expire {
        ctx.notify(class::GENERIC, "expire", key);
    }
}

fn count_lookup(ctx: &Ctx<'_, '_>, hit: bool) {
    if hit {
        ctx.server.hot.add(|c| &c.keyspace_hits, 1);
    } else {
        ctx.server.hot.add(|c| &c.keyspace_misses, 1);
    }
}

/// Replies with the string at `key` (GET's core); returns false after WRONGTYPE.
fn reply_value(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> bool {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (shard, out) = ctx.shard_and_out(key);
    let found = shard.get_string(db, key, now, |s| bulk_str(out, s));
    count_lookup(ctx, !matches!(found, Ok(None)));
    match found {
        Ok(None) => {
            ctx.out.null();
            keymiss(ctx, key);
            true
        }
        Ok(Some(())) => true,
        Err(e) => {
            ctx.store_error(e);
            false
        }
    }
}

/// Writes a string value as a bulk reply.
#[inline]
fn bulk_str(out: &mut resp::ReplyWriter<'_>, s: Str<'_>) {
    match s {
        Str::Bytes(b) => out.bulk(b),
        Str::Int(i) => out.bulk_integer(i),
    }
}

fn store(ctx: &mut Ctx<'_, '_>, key: &[u8], value: &[u8], ttl: Ttl) -> bool {
    let (db, now) = (ctx.db(), ctx.now_ms);
    if let Err(e) = ctx.shard(key).put_string(db, key, value, ttl, now) {
        ctx.store_error(e);
        return false;
    }
    ctx.touch(db, key);
    true
}

pub static COMMANDS: &[Spec] = table! {
    // name        arity, flags,                  keys,   member, handler
    "get",         2,     READONLY | FAST,        K1,     0,      get;
    "set",         -3,    WRITE | DENYOOM,        K1,     0,      set;
    "setnx",       3,     WRITE | DENYOOM | FAST, K1,     0,      setnx;
    "setex",       4,     WRITE | DENYOOM,        K1,     0,      setex;
    "psetex",      4,     WRITE | DENYOOM,        K1,     0,      psetex;
    "mget",        -2,    READONLY | FAST,        KALL,   0,      mget;
    "mset",        -3,    WRITE | DENYOOM,        KPAIRS, 0,      mset;
    "msetnx",      -3,    WRITE | DENYOOM,        KPAIRS, 0,      msetnx;
    "getset",      3,     WRITE | DENYOOM | FAST, K1,     0,      getset;
    "getdel",      2,     WRITE | FAST,           K1,     0,      getdel;
    "getex",       -2,    WRITE | FAST,           K1,     0,      getex;
    "append",      3,     WRITE | DENYOOM | FAST, K1,     0,      append;
    "strlen",      2,     READONLY | FAST,        K1,     0,      strlen;
    "incr",        2,     WRITE | DENYOOM | FAST, K1,     0,      incr;
    "decr",        2,     WRITE | DENYOOM | FAST, K1,     0,      decr;
    "incrby",      3,     WRITE | DENYOOM | FAST, K1,     0,      incrby;
    "decrby",      3,     WRITE | DENYOOM | FAST, K1,     0,      decrby;
    "incrbyfloat", 3,     WRITE | DENYOOM | FAST, K1,     0,      incrbyfloat;
    "getrange",    4,     READONLY,               K1,     0,      getrange;
    "substr",      4,     READONLY,               K1,     0,      getrange;
    "setrange",    4,     WRITE | DENYOOM,        K1,     0,      setrange;
    "lcs",         -3,    READONLY,               K12,    0,      lcs;
};

pub fn get(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    reply_value(ctx, args[1]);
}

/// SET's expiry unit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Seconds,
    Millis,
}

/// Turns an EX/PX/EXAT/PXAT argument into an absolute time in ms, replying on error.
fn expire_at(
    ctx: &mut Ctx<'_, '_>,
    arg: &[u8],
    unit: Unit,
    absolute: bool,
    command: &str,
) -> Option<u64> {
    let Some(n) = parse_i64(arg) else {
        ctx.not_integer();
        return None;
    };
    let invalid = format!("ERR invalid expire time in '{command}' command");
    if n <= 0 {
        ctx.error(&invalid);
        return None;
    }
    let ms = if unit == Unit::Seconds {
        n.checked_mul(1000)
    } else {
        Some(n)
    };
    let at = ms.and_then(|ms| {
        if absolute {
            Some(ms)
        } else {
            ms.checked_add(ctx.now_ms as i64)
        }
    });
    if let Some(at) = at {
        Some(at as u64)
    } else {
        ctx.error(&invalid);
        None
    }
}

/// Which command's options `parse_options` reads (Redis's `COMMAND_SET` / `COMMAND_GET`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum OptionsOf {
    Set,
    GetEx,
}

/// SET and GETEX options, as Redis's `parseExtendedStringArgumentsOrReply` reads them.
#[derive(Default)]
struct StringOptions<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    /// The last expire option: its argument, unit and whether it is absolute.
    expire: Option<(&'a [u8], Unit, bool)>,
}

/// Parses `args` (the options only). Repeating an option is allowed (the last expire value
/// wins); only conflicting options (NX with XX, two different expire kinds, KEEPTTL or PERSIST
/// with an expire) are a syntax error, as in Redis. Replies and returns `None` on error.
fn parse_options<'a>(
    ctx: &mut Ctx<'_, '_>,
    args: &[&'a [u8]],
    of: OptionsOf,
) -> Option<StringOptions<'a>> {
    let mut o = StringOptions::default();
    let mut kind: Option<&str> = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        let next = args.get(i + 1).copied();
        let expire_kind = ["ex", "px", "exat", "pxat"].into_iter().find(|k| is(a, k));
        if of == OptionsOf::Set && is(a, "nx") && !o.xx {
            o.nx = true;
        } else if of == OptionsOf::Set && is(a, "xx") && !o.nx {
            o.xx = true;
        } else if of == OptionsOf::Set && is(a, "get") {
            o.get = true;
        } else if of == OptionsOf::Set && is(a, "keepttl") && !o.persist && kind.is_none() {
            o.keepttl = true;
        } else if of == OptionsOf::GetEx && is(a, "persist") && !o.keepttl && kind.is_none() {
            o.persist = true;
        } else if let (Some(k), Some(next)) = (expire_kind, next)
            && !o.keepttl
            && !o.persist
            && kind.is_none_or(|previous| previous == k)
        {
            kind = Some(k);
            let unit = if k == "ex" || k == "exat" {
                Unit::Seconds
            } else {
                Unit::Millis
            };
            o.expire = Some((next, unit, k.ends_with("at")));
            i += 1;
        } else {
            ctx.syntax_error();
            return None;
        }
        i += 1;
    }
    Some(o)
}

pub fn set(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (key, value) = (args[1], args[2]);
    let Some(options) = parse_options(ctx, &args[3..], OptionsOf::Set) else {
        return;
    };
    let StringOptions {
        nx,
        xx,
        get,
        keepttl,
        expire,
        ..
    } = options;
    let ttl = match expire {
        Some((arg, unit, absolute)) => match expire_at(ctx, arg, unit, absolute, "set") {
            Some(at) => Ttl::At(at),
            None => return,
        },
        None if keepttl => Ttl::Keep,
        None => Ttl::Clear,
    };
    let (db, now) = (ctx.db(), ctx.now_ms);
    let old = if get {
        match read_get(ctx, key) {
            Ok(old) => Some(old),
            Err(()) => return,
        }
    } else {
        None
    };
    // Redis's `lookupKeyWrite`, which NX and XX need, and the events (`looked_up`).
    let exists = match &old {
        Some(old) => Some(old.is_some()),
        None if nx || xx => Some(ctx.shard(key).contains(db, key, now)),
        None => looked_up(ctx, db, key),
    };
    if (nx && exists == Some(true)) || (xx && exists == Some(false)) {
        match old {
            Some(Some(v)) => ctx.out.bulk(&v),
            _ => ctx.out.null(),
        }
        return;
    }
    if !store(ctx, key, value, ttl) {
        return;
    }
    notify_set(ctx, key, exists, matches!(ttl, Ttl::At(_)));
    if let Ttl::At(at) = ttl {
        propagate_set_pxat(ctx, key, value, at);
    } else if get {
        // Written without its GET tokens (they may repeat), the other options as they were;
        // only options can sit from the fourth argument on when no expire time is among them.
        let kept: Vec<&[u8]> = args
            .iter()
            .enumerate()
            .filter(|&(i, a)| i < 3 || !is(a, "get"))
            .map(|(_, &a)| a)
            .collect();
        ctx.propagate_as(&kept);
    }
    match old {
        Some(Some(v)) => ctx.out.bulk(&v),
        Some(None) => ctx.out.null(),
        None => ctx.ok(),
    }
}

/// A SET that gave its key an expire time (EX, PX, EXAT, PXAT, SETEX, PSETEX) is written as
/// `SET key value PXAT <ms>`, its other options dropped, as Redis's `setGenericCommand` does:
/// a relative time replayed later would expire the key later.
fn propagate_set_pxat(ctx: &mut Ctx<'_, '_>, key: &[u8], value: &[u8], at: u64) {
    let at = decimal(at as i64);
    ctx.propagate_as(&[b"SET", key, value, b"PXAT", &at]);
}

pub fn setnx(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    if ctx.shard(args[1]).contains(db, args[1], now) {
        ctx.out.integer(0);
    } else if store(ctx, args[1], args[2], Ttl::Clear) {
        notify_set(ctx, args[1], Some(false), false);
        ctx.out.integer(1);
    }
}

fn setex_generic(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], unit: Unit, command: &str) {
    let Some(at) = expire_at(ctx, args[2], unit, false, command) else {
        return;
    };
    let existed = looked_up(ctx, ctx.db(), args[1]);
    if store(ctx, args[1], args[3], Ttl::At(at)) {
        notify_set(ctx, args[1], existed, true);
        propagate_set_pxat(ctx, args[1], args[3], at);
        ctx.ok();
    }
}

pub fn setex(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setex_generic(ctx, args, Unit::Seconds, "setex");
}

pub fn psetex(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setex_generic(ctx, args, Unit::Millis, "psetex");
}

pub fn mget(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    ctx.out.array_len(args.len() - 1);
    let (db, now) = (ctx.db(), ctx.now_ms);
    for &key in &args[1..] {
        let (shard, out) = ctx.shard_and_out(key);
        let found = shard.get_string(db, key, now, |s| bulk_str(out, s));
        if found != Ok(Some(())) {
            ctx.out.null();
        }
        if found == Ok(None) {
            keymiss(ctx, key);
        }
        count_lookup(ctx, found == Ok(Some(())));
    }
}

pub fn mset(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len().is_multiple_of(2) {
        ctx.error("ERR wrong number of arguments for 'mset' command");
        return;
    }
    if store_pairs(ctx, args) {
        ctx.ok();
    }
}

/// MSET's and MSETNX's writes, each key as Redis's `setKey` writes it (a lookup, then `new`
/// when missing, then `set`); false after replying an error.
fn store_pairs(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> bool {
    let db = ctx.db();
    for pair in args[1..].chunks(2) {
        let existed = looked_up(ctx, db, pair[0]);
        if !store(ctx, pair[0], pair[1], Ttl::Clear) {
            return false;
        }
        notify_set(ctx, pair[0], existed, false);
    }
    true
}

pub fn msetnx(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len().is_multiple_of(2) {
        ctx.error("ERR wrong number of arguments for 'msetnx' command");
        return;
    }
    let (db, now) = (ctx.db(), ctx.now_ms);
    if args[1..].chunks(2).any(|pair| {
        let exists = ctx.shard(pair[0]).contains(db, pair[0], now);
        super::keys::expired_so_far(ctx);
        exists
    }) {
        ctx.out.integer(0);
        return;
    }
    if store_pairs(ctx, args) {
        ctx.out.integer(1);
    }
}

pub fn getset(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Ok(old) = read_get(ctx, args[1]) else {
        return;
    };
    if store(ctx, args[1], args[2], Ttl::Clear) {
        notify_set(ctx, args[1], Some(old.is_some()), false);
        ctx.propagate_as(&[b"SET", args[1], args[2]]);
        match old {
            Some(v) => ctx.out.bulk(&v),
            None => ctx.out.null(),
        }
    }
}

pub fn getdel(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Ok(old) = read_get(ctx, args[1]) else {
        return;
    };
    match old {
        Some(v) => {
            let (db, now) = (ctx.db(), ctx.now_ms);
            ctx.shard(args[1]).remove(db, args[1], now);
            ctx.touch(db, args[1]);
            ctx.notify(class::GENERIC, "del", args[1]);
            let del = deletion(ctx.server.config.read().lazyfree_lazy_user_del);
            ctx.propagate_as(&[del, args[1]]);
            ctx.out.bulk(&v);
        }
        None => ctx.out.null(),
    }
}

pub fn getex(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let key = args[1];
    let Some(options) = parse_options(ctx, &args[2..], OptionsOf::GetEx) else {
        return;
    };
    let change = if options.persist {
        Some(None)
    } else {
        options.expire.map(Some)
    };
    // Redis looks the key up before it validates the expire time: a missing key is a null
    // reply whatever the time says.
    let Ok(value) = read(ctx, key) else { return };
    let Some(value) = value else {
        count_lookup(ctx, false);
        ctx.out.null();
        keymiss(ctx, key);
        return;
    };
    count_lookup(ctx, true);
    let at = match change {
        Some(Some((arg, unit, absolute))) => match expire_at(ctx, arg, unit, absolute, "getex") {
            Some(at) => Some(Some(at)),
            None => return,
        },
        Some(None) => Some(None),
        None => None,
    };
    if let Some(at) = at
        && !getex_apply(ctx, key, at)
    {
        return;
    }
    ctx.out.bulk(&value);
}

/// GETEX's change to the key's expire time (`Some(ms)`, or `None` for PERSIST), written as
/// Redis's `getexCommand` writes it: never as GETEX, but as the PEXPIREAT, PERSIST, or DEL
/// (UNLINK with lazyfree-lazy-expire) it amounted to; nothing when PERSIST found no TTL.
/// False after replying the store's error.
fn getex_apply(ctx: &mut Ctx<'_, '_>, key: &[u8], at: Option<u64>) -> bool {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let result = match at {
        // An EXAT/PXAT already in the past deletes the key at once (relative times are
        // positive, so only absolute ones can be past).
        Some(at) if at <= now => {
            ctx.shard(key).remove(db, key, now);
            ctx.touch(db, key);
            ctx.notify(class::GENERIC, "del", key);
            let del = deletion(ctx.server.config.read().lazyfree_lazy_expire);
            ctx.propagate_as(&[del, key]);
            Ok(())
        }
        Some(at) => ctx.shard(key).set_expire(db, key, Some(at), now).map(|_| {
            ctx.touch(db, key);
            ctx.notify(class::GENERIC, "expire", key);
            ctx.propagate_as(&[b"PEXPIREAT", key, &decimal(at as i64)]);
        }),
        None if !matches!(ctx.shard(key).expire_at(db, key, now), Some(Some(_))) => Ok(()),
        None => ctx.shard(key).set_expire(db, key, None, now).map(|_| {
            ctx.touch(db, key);
            ctx.notify(class::GENERIC, "persist", key);
            ctx.propagate_as(&[b"PERSIST", key]);
        }),
    };
    result.map_err(|e| ctx.store_error(e)).is_ok()
}

fn max_len(ctx: &Ctx<'_, '_>) -> u64 {
    ctx.server.config.read().proto_max_bulk_len
}

pub fn append(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let key = args[1];
    let (db, now) = (ctx.db(), ctx.now_ms);
    let len = match ctx.shard(key).get_string(db, key, now, |s| s.len()) {
        Ok(len) => len,
        Err(e) => return ctx.store_error(e),
    };
    if (len.unwrap_or(0) + args[2].len()) as u64 > max_len(ctx) {
        return ctx.error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    }
    // A raw string grows in place; anything else is rewritten whole below (and becomes raw).
    if patched_in_place(ctx, key, Patch::Append, args[2]) {
        ctx.notify(class::STRING, "append", key);
        return;
    }
    let Ok(old) = read(ctx, key) else { return };
    let existed = old.is_some();
    let mut value = old.unwrap_or_default();
    value.extend_from_slice(args[2]);
    // APPEND to a string leaves it raw even when it spells an integer, as Redis does; a new key
    // is stored as SET stores it (int, embstr or raw: Redis's `tryObjectEncoding`).
    let shard = ctx.shard(key);
    let stored = if existed {
        shard.put_string_raw(db, key, &value, Ttl::Keep, now)
    } else {
        shard.put_string(db, key, &value, Ttl::Keep, now)
    };
    if let Err(e) = stored {
        return ctx.store_error(e);
    }
    ctx.touch(db, key);
    if len.is_none() {
        created(ctx, key);
    }
    ctx.notify(class::STRING, "append", key);
    ctx.out.integer(value.len() as i64);
}

/// APPEND's and SETRANGE's in-place write into a raw string (`Shard::patch_raw_string`): true
/// when it was done and replied to (the new length, or the store's error); false when `key`
/// holds no raw string and the caller rewrites it whole.
fn patched_in_place(ctx: &mut Ctx<'_, '_>, key: &[u8], at: Patch, bytes: &[u8]) -> bool {
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.shard(key).patch_raw_string(db, key, at, bytes, now) {
        Ok(Some(len)) => {
            ctx.touch(db, key);
            ctx.out.integer(len as i64);
            true
        }
        Ok(None) => false,
        Err(e) => {
            ctx.store_error(e);
            true
        }
    }
}

pub fn strlen(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    match ctx.shard(args[1]).get_string(db, args[1], now, |s| s.len()) {
        Ok(Some(len)) => ctx.out.integer(len as i64),
        Ok(None) => {
            ctx.out.integer(0);
            keymiss(ctx, args[1]);
        }
        Err(e) => ctx.store_error(e),
    }
}

fn incr_generic(ctx: &mut Ctx<'_, '_>, key: &[u8], by: i64) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    // One lookup: the value is rewritten where it is (keeping its TTL), or created.
    let mut missing = false;
    let updated = ctx.shard(key).upsert_int(db, key, now, |current| {
        missing = current.is_none();
        let current = match current {
            None => 0,
            Some(s) => s.as_int().ok_or(crate::commands::args::NOT_INTEGER)?,
        };
        current
            .checked_add(by)
            .ok_or("ERR increment or decrement would overflow")
    });
    match updated {
        Err(e) => ctx.store_error(e),
        Ok(Err(text)) => ctx.error(text),
        Ok(Ok(next)) => {
            ctx.touch(db, key);
            if missing {
                created(ctx, key);
            }
            ctx.notify(class::STRING, "incrby", key);
            ctx.out.integer(next);
        }
    }
}

pub fn incr(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    incr_generic(ctx, args[1], 1);
}

pub fn decr(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    incr_generic(ctx, args[1], -1);
}

pub fn incrby(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    match parse_i64(args[2]) {
        Some(by) => incr_generic(ctx, args[1], by),
        None => ctx.not_integer(),
    }
}

pub fn decrby(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    match parse_i64(args[2]) {
        Some(i64::MIN) => ctx.error("ERR decrement would overflow"),
        Some(by) => incr_generic(ctx, args[1], -by),
        None => ctx.not_integer(),
    }
}

/// INCRBYFLOAT: parse, add and format in the platform's long double, as Redis does (see
/// `longdouble.rs`; an f64 sum prints other digits for inputs as plain as `10.5 + 0.1`).
pub fn incrbyfloat(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let key = args[1];
    let Ok(old) = read(ctx, key) else { return };
    let text = match crate::longdouble::incr_by_float(old.as_deref(), args[2]) {
        Ok(text) => text,
        Err(crate::longdouble::FloatError::NotFloat) => {
            return ctx.error("ERR value is not a valid float");
        }
        Err(crate::longdouble::FloatError::NanOrInfinity) => {
            return ctx.error("ERR increment would produce NaN or Infinity");
        }
    };
    let (db, now) = (ctx.db(), ctx.now_ms);
    if let Err(e) = ctx.shard(key).put_string(db, key, &text, Ttl::Keep, now) {
        return ctx.store_error(e);
    }
    ctx.touch(db, key);
    if old.is_none() {
        created(ctx, key);
    }
    ctx.notify(class::STRING, "incrbyfloat", key);
    // Written as the value it gave, so that no float formatting can differ on replay.
    ctx.propagate_as(&[b"SET", key, &text, b"KEEPTTL"]);
    ctx.out.bulk(&text);
}

pub fn getrange(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (Some(mut start), Some(mut end)) = (parse_i64(args[2]), parse_i64(args[3])) else {
        return ctx.not_integer();
    };
    let Ok(value) = read(ctx, args[1]) else {
        return;
    };
    let Some(value) = value else {
        ctx.out.bulk(b"");
        return keymiss(ctx, args[1]);
    };
    let len = value.len() as i64;
    if start < 0 && end < 0 && start > end {
        ctx.out.bulk(b"");
        return;
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        ctx.out.bulk(b"");
    } else {
        ctx.out.bulk(&value[start as usize..=end as usize]);
    }
}

pub fn setrange(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let key = args[1];
    let Some(offset) = parse_i64(args[2]) else {
        return ctx.not_integer();
    };
    if offset < 0 {
        ctx.error("ERR offset is out of range");
        return;
    }
    let patch = args[3];
    let (db, now) = (ctx.db(), ctx.now_ms);
    let len = match ctx.shard(key).get_string(db, key, now, |s| s.len()) {
        Ok(len) => len,
        Err(e) => return ctx.store_error(e),
    };
    if patch.is_empty() {
        return ctx.out.integer(len.unwrap_or(0) as i64);
    }
    let end = (offset as u64).saturating_add(patch.len() as u64);
    if end > max_len(ctx) {
        ctx.error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        return;
    }
    let (offset, end) = (offset as usize, end as usize);
    // A raw string is patched in place; anything else is rewritten whole (and becomes raw).
    if patched_in_place(ctx, key, Patch::At(offset), patch) {
        ctx.notify(class::STRING, "setrange", key);
        return;
    }
    let Ok(old) = read(ctx, key) else { return };
    let exists = old.is_some();
    let mut value = old.unwrap_or_default();
    if value.len() < end {
        value.resize(end, 0);
    }
    value[offset..end].copy_from_slice(patch);
    let ttl = if exists { Ttl::Keep } else { Ttl::Clear };
    if let Err(e) = ctx.shard(key).put_string_raw(db, key, &value, ttl, now) {
        return ctx.store_error(e);
    }
    ctx.touch(db, key);
    if !exists {
        created(ctx, key);
    }
    ctx.notify(class::STRING, "setrange", key);
    ctx.out.integer(value.len() as i64);
}

/// LCS's options.
#[derive(Clone, Copy, Debug, Default)]
struct LcsOptions {
    len: bool,
    idx: bool,
    with_match_len: bool,
    min_match: i64,
}

/// A matching range: (start, end) in the first string, then in the second.
type Match = ((usize, usize), (usize, usize));

fn lcs_options(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Option<LcsOptions> {
    let mut o = LcsOptions::default();
    let mut i = 3;
    while i < args.len() {
        let a = args[i];
        if is(a, "len") {
            o.len = true;
        } else if is(a, "idx") {
            o.idx = true;
        } else if is(a, "withmatchlen") {
            o.with_match_len = true;
        } else if is(a, "minmatchlen") && i + 1 < args.len() {
            let Some(n) = parse_i64(args[i + 1]) else {
                ctx.not_integer();
                return None;
            };
            o.min_match = n.max(0);
            i += 1;
        } else {
            ctx.syntax_error();
            return None;
        }
        i += 1;
    }
    Some(o)
}

/// LCS, in Redis's order of checks: both keys' types, then the options.
pub fn lcs(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    // Both keys are looked up (a miss is a `keymiss`) before either's type is checked, as
    // Redis does.
    let mut values = Vec::with_capacity(2);
    let mut wrong_type = false;
    for &key in &args[1..3] {
        match ctx.shard(key).get_string(db, key, now, |s| s.to_vec()) {
            Ok(Some(v)) => values.push(v),
            Ok(None) => {
                keymiss(ctx, key);
                values.push(Vec::new());
            }
            Err(StoreError::WrongType) => wrong_type = true,
            Err(e) => return ctx.store_error(e),
        }
    }
    if wrong_type {
        return ctx.error("ERR The specified keys must contain string values");
    }
    let Some(o) = lcs_options(ctx, args) else {
        return;
    };
    if o.len && o.idx {
        return ctx.error("ERR If you want both the length and indexes, please just use IDX.");
    }
    let (a, b) = (&values[0], &values[1]);
    let cells = (a.len() as u64 + 1).saturating_mul(b.len() as u64 + 1);
    if cells.saturating_mul(4) > max_len(ctx) {
        return ctx
            .error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    }
    let table = lcs_table(a, b);
    if o.len {
        return ctx.out.integer(i64::from(table[table.len() - 1]));
    }
    let (common, ranges) = lcs_walk(&table, a, b);
    if o.idx {
        reply_lcs_matches(ctx, &o, &ranges, common.len());
    } else {
        ctx.out.bulk(&common);
    }
}

/// The dynamic-programming table of LCS lengths: cell `(i, j)` (row width `b.len() + 1`) holds
/// the length of the longest common subsequence of `a[..i]` and `b[..j]`.
fn lcs_table(a: &[u8], b: &[u8]) -> Vec<u32> {
    let width = b.len() + 1;
    let mut table = vec![0u32; (a.len() + 1) * width];
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            table[i * width + j] = if a[i - 1] == b[j - 1] {
                table[(i - 1) * width + j - 1] + 1
            } else {
                table[(i - 1) * width + j].max(table[i * width + j - 1])
            };
        }
    }
    table
}

/// Walks the table back from the end: the LCS itself and its matching ranges, last first (the
/// order Redis reports them).
fn lcs_walk(table: &[u32], a: &[u8], b: &[u8]) -> (Vec<u8>, Vec<Match>) {
    let width = b.len() + 1;
    let total = table[a.len() * width + b.len()] as usize;
    let mut result = vec![0u8; total];
    let mut ranges: Vec<Match> = Vec::new();
    let (mut i, mut j, mut k) = (a.len(), b.len(), total);
    let mut current: Option<Match> = None;
    while i > 0 && j > 0 {
        if a[i - 1] == b[j - 1] {
            k -= 1;
            result[k] = a[i - 1];
            let (ai, bj) = (i - 1, j - 1);
            current = match current {
                Some(((a_start, a_end), (b_start, b_end)))
                    if a_start == ai + 1 && b_start == bj + 1 =>
                {
                    Some(((ai, a_end), (bj, b_end)))
                }
                Some(range) => {
                    ranges.push(range);
                    Some(((ai, ai), (bj, bj)))
                }
                None => Some(((ai, ai), (bj, bj))),
            };
            i -= 1;
            j -= 1;
        } else if table[(i - 1) * width + j] > table[i * width + j - 1] {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    ranges.extend(current);
    (result, ranges)
}

/// LCS IDX's reply: the matches at least MINMATCHLEN long, then the LCS length (`total`).
fn reply_lcs_matches(ctx: &mut Ctx<'_, '_>, o: &LcsOptions, ranges: &[Match], total: usize) {
    let kept: Vec<_> = ranges
        .iter()
        .filter(|((s, e), _)| (e - s + 1) as i64 >= o.min_match)
        .collect();
    ctx.out.map_len(2);
    ctx.out.bulk(b"matches");
    ctx.out.array_len(kept.len());
    for &&((a_start, a_end), (b_start, b_end)) in &kept {
        ctx.out.array_len(if o.with_match_len { 3 } else { 2 });
        ctx.out.array_len(2);
        ctx.out.integer(a_start as i64);
        ctx.out.integer(a_end as i64);
        ctx.out.array_len(2);
        ctx.out.integer(b_start as i64);
        ctx.out.integer(b_end as i64);
        if o.with_match_len {
            ctx.out.integer((a_end - a_start + 1) as i64);
        }
    }
    ctx.out.bulk(b"len");
    ctx.out.integer(total as i64);
}
