//! Hash commands (Redis's `t_hash.c`): HSET and friends, with Redis 7.0's arity, replies and
//! errors, over `store::Hash` (the store picks and converts the encodings).
//!
//! Reads reply straight from the stored bytes inside `Shard::read::<Hash>`; writes go through
//! `Shard::update::<Hash>`, which creates, converts and deletes an emptied hash. Order of the
//! checks follows Redis: argument errors that Redis finds before the lookup (HINCRBY's increment,
//! HRANDFIELD's count, HSCAN's cursor) come before WRONGTYPE; HSCAN's options after it.
//!
//! Keyspace events, as `t_hash.c` sends them: `hset` (HSET, HMSET, and HSETNX when it set),
//! `hincrby`, `hincrbyfloat`, each after `new` when the write created the hash; `hdel`, then
//! `del` when it emptied the hash; `keymiss` when a read finds no key.
//!
//! HINCRBYFLOAT is written to the append-only file as `HSET key field <new value>`, as Redis
//! writes it, so that no float formatting can differ on replay.

use super::args::{COUNT_OUT_OF_RANGE, is, parse_i64};
use super::keys::{created, keymiss};
use super::random::{self, Picks};
use crate::command::{Ctx, DENYOOM, FAST, K1, READONLY, Spec, WRITE, arity_error, table};
use crate::notify::class;
use resp::ReplyWriter;
use store::{Hash, HashView, Str};

pub static COMMANDS: &[Spec] = table! {
    // name         arity, flags,                  keys, member, handler
    "hset",         -4,    WRITE | DENYOOM | FAST, K1,   2,      hset;
    "hsetnx",       4,     WRITE | DENYOOM | FAST, K1,   2,      hsetnx;
    "hmset",        -4,    WRITE | DENYOOM | FAST, K1,   2,      hmset;
    "hget",         3,     READONLY | FAST,        K1,   2,      hget;
    "hmget",        -3,    READONLY | FAST,        K1,   2,      hmget;
    "hgetall",      2,     READONLY,               K1,   0,      hgetall;
    "hdel",         -3,    WRITE | FAST,           K1,   2,      hdel;
    "hlen",         2,     READONLY | FAST,        K1,   0,      hlen;
    "hexists",      3,     READONLY | FAST,        K1,   2,      hexists;
    "hkeys",        2,     READONLY,               K1,   0,      hkeys;
    "hvals",        2,     READONLY,               K1,   0,      hvals;
    "hstrlen",      3,     READONLY | FAST,        K1,   2,      hstrlen;
    "hincrby",      4,     WRITE | DENYOOM | FAST, K1,   2,      hincrby;
    "hincrbyfloat", 4,     WRITE | DENYOOM | FAST, K1,   2,      hincrbyfloat;
    "hrandfield",   -2,    READONLY,               K1,   0,      hrandfield;
    "hscan",        -3,    READONLY,               K1,   0,      hscan;
};

fn bulk_value(out: &mut ReplyWriter<'_>, v: Str<'_>) {
    match v {
        Str::Bytes(b) => out.bulk(b),
        Str::Int(i) => out.bulk_integer(i),
    }
}

/// Runs `f` with the hash at `key` (`None` when missing, after its `keymiss`) and the reply
/// writer; replies WRONGTYPE instead when the key holds another type.
fn read(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    f: impl FnOnce(Option<HashView<'_>>, &mut ReplyWriter<'_>),
) {
    let mut f = Some(f);
    if ctx.read::<Hash, _>(key, |h, out| (f.take().expect("once"))(Some(h), out)) == Some(None) {
        keymiss(ctx, key);
        (f.take().expect("not called"))(None, &mut ctx.out);
    }
}

/// The events of a hash write that succeeded: `new` when it created the hash (Redis's
/// `hashTypeLookupWriteOrCreate` adds it first), then `event`.
fn notify_write(ctx: &mut Ctx<'_, '_>, key: &[u8], was_new: bool, event: &str) {
    if was_new {
        created(ctx, key);
    }
    ctx.notify(class::HASH, event, key);
}

fn set_pairs(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Option<i64> {
    if args.len() % 2 == 1 {
        let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
        ctx.error(&arity_error(&name));
        return None;
    }
    let key = args[1];
    let (added, was_new) = ctx.write::<Hash, _>(key, true, |h, _| {
        // A hash being created starts empty; a stored one never is.
        let was_new = h.is_empty();
        let mut added = 0;
        for pair in args[2..].chunks_exact(2) {
            added += i64::from(h.set(pair[0], pair[1])?);
        }
        Ok((added, was_new))
    })??;
    ctx.touch(ctx.db(), key);
    notify_write(ctx, key, was_new, "hset");
    Some(added)
}

pub fn hset(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if let Some(n) = set_pairs(ctx, args) {
        ctx.out.integer(n);
    }
}

pub fn hmset(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if set_pairs(ctx, args).is_some() {
        ctx.ok();
    }
}

pub fn hsetnx(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (key, field, value) = (args[1], args[2], args[3]);
    let Some(Some((set, was_new))) = ctx.write::<Hash, _>(key, true, |h, _| {
        if h.contains(field) {
            return Ok((false, false));
        }
        let was_new = h.is_empty();
        Ok((h.set(field, value)?, was_new))
    }) else {
        return;
    };
    if set {
        ctx.touch(ctx.db(), key);
        notify_write(ctx, key, was_new, "hset");
    }
    ctx.out.integer(i64::from(set));
}

pub fn hget(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let field = args[2];
    read(ctx, args[1], |mut h, out| {
        match h.as_mut().and_then(|h| h.get(field)) {
            Some(v) => bulk_value(out, v),
            None => out.null(),
        }
    });
}

pub fn hmget(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let fields = &args[2..];
    read(ctx, args[1], |mut h, out| {
        out.array_len(fields.len());
        for field in fields {
            match h.as_mut().and_then(|h| h.get(field)) {
                Some(v) => bulk_value(out, v),
                None => out.null(),
            }
        }
    });
}

pub fn hgetall(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    read(ctx, args[1], |h, out| {
        let Some(h) = h else {
            out.map_len(0);
            return;
        };
        out.map_len(h.len());
        for (f, v) in &h {
            bulk_value(out, f);
            bulk_value(out, v);
        }
    });
}

fn keys_or_values(ctx: &mut Ctx<'_, '_>, key: &[u8], values: bool) {
    read(ctx, key, |h, out| {
        let Some(h) = h else {
            out.array_len(0);
            return;
        };
        out.array_len(h.len());
        for (f, v) in &h {
            bulk_value(out, if values { v } else { f });
        }
    });
}

pub fn hkeys(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    keys_or_values(ctx, args[1], false);
}

pub fn hvals(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    keys_or_values(ctx, args[1], true);
}

pub fn hdel(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let key = args[1];
    let Some(removed) = ctx.write::<Hash, _>(key, false, |h, _| {
        let mut removed = 0;
        for field in &args[2..] {
            removed += i64::from(h.remove(field)?);
            if h.is_empty() {
                break;
            }
        }
        Ok((removed, h.is_empty()))
    }) else {
        return;
    };
    let (removed, emptied) = removed.unwrap_or((0, false));
    if removed > 0 {
        ctx.touch(ctx.db(), key);
        ctx.notify(class::HASH, "hdel", key);
        if emptied {
            ctx.notify(class::GENERIC, "del", key);
        }
    }
    ctx.out.integer(removed);
}

pub fn hlen(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    read(ctx, args[1], |h, out| {
        out.integer(h.map_or(0, |h| h.len() as i64));
    });
}

pub fn hexists(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let field = args[2];
    read(ctx, args[1], |mut h, out| {
        let found = h.as_mut().is_some_and(|h| h.get(field).is_some());
        out.integer(i64::from(found));
    });
}

pub fn hstrlen(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let field = args[2];
    read(ctx, args[1], |mut h, out| {
        let len = h.as_mut().and_then(|h| h.get(field)).map_or(0, |v| v.len());
        out.integer(len as i64);
    });
}

/// Runs a read-modify-write of one field (HINCRBY, HINCRBYFLOAT): `next` sees the old value and
/// returns the new one's text and what to reply, or an error text. Touches the key and sends
/// `event`; `None` after replying an error.
fn update_field<T>(
    ctx: &mut Ctx<'_, '_>,
    (key, field): (&[u8], &[u8]),
    event: &str,
    next: impl FnOnce(Option<Str<'_>>) -> Result<(Vec<u8>, T), &'static str>,
) -> Option<T> {
    let mut was_new = false;
    let done = ctx.write::<Hash, _>(key, true, |h, _| {
        was_new = h.is_empty();
        match next(h.get(field)) {
            Ok((text, r)) => h.set(field, &text).map(|_| Ok(r)),
            Err(e) => Ok(Err(e)),
        }
    })??;
    match done {
        Ok(r) => {
            ctx.touch(ctx.db(), key);
            notify_write(ctx, key, was_new, event);
            Some(r)
        }
        Err(e) => {
            ctx.error(e);
            None
        }
    }
}

pub fn hincrby(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(incr) = parse_i64(args[3]) else {
        return ctx.not_integer();
    };
    let next = |old: Option<Str<'_>>| {
        let old = match old {
            None => 0,
            Some(v) => v.as_int().ok_or("ERR hash value is not an integer")?,
        };
        let new = old
            .checked_add(incr)
            .ok_or("ERR increment or decrement would overflow")?;
        Ok((Str::Int(new).to_vec(), new))
    };
    if let Some(new) = update_field(ctx, (args[1], args[2]), "hincrby", next) {
        ctx.out.integer(new);
    }
}

pub fn hincrbyfloat(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    use crate::longdouble::{FloatError, incr_by_float};
    let incr = args[3];
    match incr_by_float(None, incr) {
        Ok(_) => {}
        Err(FloatError::NotFloat) => return ctx.error("ERR value is not a valid float"),
        Err(FloatError::NanOrInfinity) => return ctx.error("ERR value is NaN or Infinity"),
    }
    let next = |old: Option<Str<'_>>| {
        let old = old.map(|v| v.to_vec());
        match incr_by_float(old.as_deref(), incr) {
            Ok(text) => Ok((text.clone(), text)),
            Err(FloatError::NotFloat) => Err("ERR hash value is not a float"),
            Err(FloatError::NanOrInfinity) => Err("ERR increment would produce NaN or Infinity"),
        }
    };
    if let Some(text) = update_field(ctx, (args[1], args[2]), "hincrbyfloat", next) {
        // Written as the value it gave (Redis's `hincrbyfloatCommand`), so that no float
        // formatting can differ on replay.
        ctx.propagate_as(&[b"HSET", args[1], args[2], &text]);
        ctx.out.bulk(&text);
    }
}

fn reply_pair(out: &mut ReplyWriter<'_>, f: Str<'_>, v: Str<'_>, withvalues: bool) {
    if withvalues && out.protocol() != resp::Protocol::Resp2 {
        out.array_len(2);
    }
    bulk_value(out, f);
    if withvalues {
        bulk_value(out, v);
    }
}

pub fn hrandfield(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len() == 2 {
        return read(ctx, args[1], |h, out| {
            match h.as_ref().and_then(|h| h.sample(random::random())) {
                Some((f, _)) => bulk_value(out, f),
                None => out.null(),
            }
        });
    }
    let Some(count) = parse_i64(args[2]) else {
        return ctx.not_integer();
    };
    if count == i64::MIN {
        return ctx.error(COUNT_OUT_OF_RANGE);
    }
    if args.len() > 4 || (args.len() == 4 && !is(args[3], "withvalues")) {
        return ctx.syntax_error();
    }
    let withvalues = args.len() == 4;
    if withvalues && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return ctx.error("ERR value is out of range");
    }
    let mut answered = true;
    read(ctx, args[1], |h, out| match h {
        None => out.array_len(0),
        Some(h) => answered = random_fields(&h, out, count, withvalues),
    });
    if !answered {
        ctx.error(random::TOO_MANY);
    }
}

/// HRANDFIELD with a count (`random::plan`'s cases); false when it is too many to answer.
fn random_fields(
    h: &HashView<'_>,
    out: &mut ReplyWriter<'_>,
    count: i64,
    withvalues: bool,
) -> bool {
    let header = |out: &mut ReplyWriter<'_>, n: usize| {
        let resp2_pairs = withvalues && out.protocol() == resp::Protocol::Resp2;
        out.array_len(if resp2_pairs { n * 2 } else { n });
    };
    match random::plan(count, h.len()) {
        Picks::TooMany => return false,
        Picks::Repeats(n) => {
            header(out, n);
            for _ in 0..n {
                let (f, v) = h.sample(random::random()).expect("hashes are never empty");
                reply_pair(out, f, v, withvalues);
            }
        }
        Picks::All => {
            header(out, h.len());
            h.iter()
                .for_each(|(f, v)| reply_pair(out, f, v, withvalues));
        }
        Picks::Distinct(n) => {
            let draw = || h.sample(random::random()).expect("hashes are never empty");
            let picks = random::distinct(n, h.len(), || h.iter().collect(), draw);
            header(out, n);
            for (f, v) in picks {
                reply_pair(out, f, v, withvalues);
            }
        }
    }
    true
}

pub fn hscan(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some((cursor, options)) = ctx.scan_start::<Hash>(args) else {
        return;
    };
    let scanned = ctx.read::<Hash, _>(args[1], |h, _| {
        let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let next = h.scan(cursor, options.count, |f, v| {
            let f = f.to_vec();
            if options.matches(&f) {
                found.push((f, v.to_vec()));
            }
        });
        (next, found)
    });
    let (next, found) = scanned.flatten().unwrap_or_default();
    ctx.out.array_len(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array_len(found.len() * 2);
    for (f, v) in &found {
        ctx.out.bulk(f);
        ctx.out.bulk(v);
    }
}
