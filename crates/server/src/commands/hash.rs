//! Hash commands (Redis's `t_hash.c`): HSET and friends over the encodings of
//! `store::types::hash` (record, small, ints, pages), with Redis 7.0's arity, replies and errors.
//!
//! Reads reply straight from the stored bytes inside `Shard::with_slot` (`hash::view`); writes go
//! through `hash::update`, which picks and converts encodings and stores the result. Order of the
//! checks follows Redis: argument errors that Redis finds before the lookup (HINCRBY's increment,
//! HRANDFIELD's count, HSCAN's cursor) come before WRONGTYPE; HSCAN's options after it.

use super::is;
use crate::command::{Ctx, DENYOOM, FAST, K1, READONLY, Spec, WRITE, arity_error, parse_i64, spec};
use resp::ReplyWriter;
use std::cell::Cell;
use store::glob::Glob;
use store::types::hash::{self, HashError, HashRef, Value};

pub static COMMANDS: &[Spec] = &[
    spec(
        "hset",
        -4,
        WRITE | DENYOOM | FAST,
        K1,
        "hash",
        "2.0.0",
        "Set the string value of a hash field",
        hset,
    ),
    spec(
        "hsetnx",
        4,
        WRITE | DENYOOM | FAST,
        K1,
        "hash",
        "2.0.0",
        "Set the value of a hash field, only if the field does not exist",
        hsetnx,
    ),
    spec(
        "hmset",
        -4,
        WRITE | DENYOOM | FAST,
        K1,
        "hash",
        "2.0.0",
        "Set multiple hash fields to multiple values",
        hmset,
    ),
    spec(
        "hget",
        3,
        READONLY | FAST,
        K1,
        "hash",
        "2.0.0",
        "Get the value of a hash field",
        hget,
    ),
    spec(
        "hmget",
        -3,
        READONLY | FAST,
        K1,
        "hash",
        "2.0.0",
        "Get the values of all the given hash fields",
        hmget,
    ),
    spec(
        "hgetall",
        2,
        READONLY,
        K1,
        "hash",
        "2.0.0",
        "Get all the fields and values in a hash",
        hgetall,
    ),
    spec(
        "hdel",
        -3,
        WRITE | FAST,
        K1,
        "hash",
        "2.0.0",
        "Delete one or more hash fields",
        hdel,
    ),
    spec(
        "hlen",
        2,
        READONLY | FAST,
        K1,
        "hash",
        "2.0.0",
        "Get the number of fields in a hash",
        hlen,
    ),
    spec(
        "hexists",
        3,
        READONLY | FAST,
        K1,
        "hash",
        "2.0.0",
        "Determine if a hash field exists",
        hexists,
    ),
    spec(
        "hkeys",
        2,
        READONLY,
        K1,
        "hash",
        "2.0.0",
        "Get all the fields in a hash",
        hkeys,
    ),
    spec(
        "hvals",
        2,
        READONLY,
        K1,
        "hash",
        "2.0.0",
        "Get all the values in a hash",
        hvals,
    ),
    spec(
        "hstrlen",
        3,
        READONLY | FAST,
        K1,
        "hash",
        "3.2.0",
        "Get the length of the value of a hash field",
        hstrlen,
    ),
    spec(
        "hincrby",
        4,
        WRITE | DENYOOM | FAST,
        K1,
        "hash",
        "2.0.0",
        "Increment the integer value of a hash field by the given number",
        hincrby,
    ),
    spec(
        "hincrbyfloat",
        4,
        WRITE | DENYOOM | FAST,
        K1,
        "hash",
        "2.6.0",
        "Increment the float value of a hash field by the given amount",
        hincrbyfloat,
    ),
    spec(
        "hrandfield",
        -2,
        READONLY,
        K1,
        "hash",
        "6.2.0",
        "Get one or multiple random fields from a hash",
        hrandfield,
    ),
    spec(
        "hscan",
        -3,
        READONLY,
        K1,
        "hash",
        "2.8.0",
        "Incrementally iterate hash fields and associated values",
        hscan,
    ),
];

fn bulk_value(out: &mut ReplyWriter<'_>, v: Value<'_>) {
    match v {
        Value::Bytes(b) => out.bulk(b),
        Value::Int(i) => out.bulk_integer(i),
    }
}

/// Runs `f` with the hash at `key` (`None` when missing) and the reply writer; replies
/// WRONGTYPE instead when the key holds another type.
fn read(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    f: impl FnOnce(Option<HashRef<'_>>, &mut ReplyWriter<'_>),
) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (shard, out) = ctx.shard_and_out(key);
    let ok = shard.with_slot(db, key, now, |slot| match hash::view(slot) {
        Ok(h) => {
            f(h, out);
            true
        }
        Err(hash::WrongType) => false,
    });
    if !ok {
        ctx.wrong_type();
    }
}

/// An error reply was written.
struct Replied;

/// Runs a write on the hash at `key`; `Err` after replying an error.
fn write<R>(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    create: bool,
    f: impl FnOnce(&mut hash::HashMut<'_>) -> Result<R, store::StoreError>,
) -> Result<Option<R>, Replied> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    match hash::update(ctx.shard(key), db, key, now, create, f) {
        Ok(r) => Ok(r),
        Err(HashError::WrongType) => {
            ctx.wrong_type();
            Err(Replied)
        }
        Err(HashError::OutOfMemory) => {
            ctx.oom();
            Err(Replied)
        }
    }
}

fn set_pairs(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Option<i64> {
    if args.len() % 2 == 1 {
        let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
        ctx.error(&arity_error(&name));
        return None;
    }
    let key = args[1];
    let created = write(ctx, key, true, |h| {
        let mut created = 0;
        for pair in args[2..].chunks_exact(2) {
            created += i64::from(h.set(pair[0], pair[1])?);
        }
        Ok(created)
    })
    .ok()??;
    ctx.touch(ctx.db(), key);
    Some(created)
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
    let Ok(Some(set)) = write(ctx, key, true, |h| {
        if h.contains(field) {
            return Ok(false);
        }
        h.set(field, value)
    }) else {
        return;
    };
    if set {
        ctx.touch(ctx.db(), key);
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
        h.for_each(|f, v| {
            bulk_value(out, f);
            bulk_value(out, v);
        });
    });
}

fn keys_or_values(ctx: &mut Ctx<'_, '_>, key: &[u8], values: bool) {
    read(ctx, key, |h, out| {
        let Some(h) = h else {
            out.array_len(0);
            return;
        };
        out.array_len(h.len());
        h.for_each(|f, v| bulk_value(out, if values { v } else { f }));
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
    let Ok(removed) = write(ctx, key, false, |h| {
        let mut removed = 0;
        for field in &args[2..] {
            removed += i64::from(h.remove(field)?);
            if h.is_empty() {
                break;
            }
        }
        Ok(removed)
    }) else {
        return;
    };
    let removed = removed.unwrap_or(0);
    if removed > 0 {
        ctx.touch(ctx.db(), key);
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

pub fn hincrby(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (key, field) = (args[1], args[2]);
    let Some(incr) = parse_i64(args[3]) else {
        return ctx.not_integer();
    };
    let Ok(Some(done)) = write(ctx, key, true, |h| {
        let old = match h.get(field) {
            None => 0,
            Some(Value::Int(i)) => i,
            Some(Value::Bytes(b)) => match parse_i64(b) {
                Some(i) => i,
                None => return Ok(Err("ERR hash value is not an integer")),
            },
        };
        let Some(new) = old.checked_add(incr) else {
            return Ok(Err("ERR increment or decrement would overflow"));
        };
        h.set(field, new.to_string().as_bytes())?;
        Ok(Ok(new))
    }) else {
        return;
    };
    match done {
        Ok(new) => {
            ctx.touch(ctx.db(), key);
            ctx.out.integer(new);
        }
        Err(e) => ctx.error(e),
    }
}

pub fn hincrbyfloat(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    use crate::longdouble::{FloatError, incr_by_float};
    let (key, field, incr) = (args[1], args[2], args[3]);
    match incr_by_float(None, incr) {
        Ok(_) => {}
        Err(FloatError::NotFloat) => return ctx.error("ERR value is not a valid float"),
        Err(FloatError::NanOrInfinity) => return ctx.error("ERR value is NaN or Infinity"),
    }
    let Ok(Some(done)) = write(ctx, key, true, |h| {
        let old = h.get(field).map(|v| v.to_vec());
        match incr_by_float(old.as_deref(), incr) {
            Ok(text) => {
                h.set(field, &text)?;
                Ok(Ok(text))
            }
            Err(FloatError::NotFloat) => Ok(Err("ERR hash value is not a float")),
            Err(FloatError::NanOrInfinity) => {
                Ok(Err("ERR increment would produce NaN or Infinity"))
            }
        }
    }) else {
        return;
    };
    match done {
        Ok(text) => {
            ctx.touch(ctx.db(), key);
            ctx.out.bulk(&text);
        }
        Err(e) => ctx.error(e),
    }
}

thread_local! {
    static RNG: Cell<u64> = Cell::new({
        use std::hash::{BuildHasher, RandomState};
        RandomState::new().hash_one(0u64) | 1
    });
}

/// A random u64 (xorshift64, per thread).
fn random() -> u64 {
    RNG.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    })
}

fn reply_pair(out: &mut ReplyWriter<'_>, f: &[u8], v: &[u8], withvalues: bool) {
    if withvalues && out.protocol() != resp::Protocol::Resp2 {
        out.array_len(2);
    }
    out.bulk(f);
    if withvalues {
        out.bulk(v);
    }
}

pub fn hrandfield(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len() == 2 {
        return read(ctx, args[1], |h, out| {
            match h.and_then(|h| h.sample(random())) {
                Some((f, _)) => out.bulk(&f),
                None => out.null(),
            }
        });
    }
    let Some(count) = parse_i64(args[2]) else {
        return ctx.not_integer();
    };
    if count == i64::MIN {
        return ctx.error(
            "ERR value is out of range, value must between -9223372036854775807 and \
             9223372036854775807",
        );
    }
    if args.len() > 4 || (args.len() == 4 && !is(args[3], "withvalues")) {
        return ctx.syntax_error();
    }
    let withvalues = args.len() == 4;
    if withvalues && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return ctx.error("ERR value is out of range");
    }
    read(ctx, args[1], |h, out| {
        let Some(h) = h else {
            out.array_len(0);
            return;
        };
        random_fields(&h, out, count, withvalues);
    });
}

/// HRANDFIELD with a count: Redis's four cases (repeats, the whole hash, a few picks, most of it).
fn random_fields(h: &HashRef<'_>, out: &mut ReplyWriter<'_>, count: i64, withvalues: bool) {
    let size = h.len();
    let header = |out: &mut ReplyWriter<'_>, n: usize| {
        if withvalues && out.protocol() == resp::Protocol::Resp2 {
            out.array_len(n * 2);
        } else {
            out.array_len(n);
        }
    };
    if count == 0 {
        out.array_len(0);
        return;
    }
    let n = count.unsigned_abs();
    if count < 0 || n == 1 {
        let n = n as usize;
        header(out, n);
        for _ in 0..n {
            let (f, v) = h.sample(random()).expect("hashes are never empty");
            reply_pair(out, &f, &v, withvalues);
        }
        return;
    }
    if n >= size as u64 {
        header(out, size);
        h.for_each(|f, v| {
            if withvalues && out.protocol() != resp::Protocol::Resp2 {
                out.array_len(2);
            }
            bulk_value(out, f);
            if withvalues {
                bulk_value(out, v);
            }
        });
        return;
    }
    let n = n as usize;
    let mut pairs = h.pairs();
    // Partial Fisher–Yates: the first n of a random permutation are n distinct picks.
    for i in 0..n {
        let j = i + (random() % (pairs.len() - i) as u64) as usize;
        pairs.swap(i, j);
    }
    header(out, n);
    for (f, v) in &pairs[..n] {
        reply_pair(out, f, v, withvalues);
    }
}

enum ScanError {
    Syntax,
    NotInteger,
}

fn scan_options(args: &[&[u8]]) -> Result<(Option<Glob>, usize), ScanError> {
    let mut glob = None;
    let mut count = 10usize;
    let mut i = 3;
    while i < args.len() {
        if i + 1 >= args.len() {
            return Err(ScanError::Syntax);
        }
        if is(args[i], "count") {
            match parse_i64(args[i + 1]) {
                Some(n) if n >= 1 => count = usize::try_from(n).unwrap_or(usize::MAX),
                Some(_) => return Err(ScanError::Syntax),
                None => return Err(ScanError::NotInteger),
            }
        } else if is(args[i], "match") {
            let g = Glob::new(args[i + 1]);
            glob = (!g.is_everything()).then_some(g);
        } else {
            return Err(ScanError::Syntax);
        }
        i += 2;
    }
    Ok((glob, count))
}

pub fn hscan(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(cursor) = super::keys::parse_cursor(args[2]) else {
        return ctx.error("ERR invalid cursor");
    };
    let options = scan_options(args);
    let mut error = None;
    read(ctx, args[1], |h, out| {
        let Some(h) = h else {
            out.array_len(2);
            out.bulk(b"0");
            out.array_len(0);
            return;
        };
        let (glob, count) = match options {
            Ok(o) => o,
            Err(e) => {
                error = Some(e);
                return;
            }
        };
        let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let next = h.scan(cursor, count, |f, v| {
            let f = f.to_vec();
            if glob.as_ref().is_none_or(|g| g.matches(&f)) {
                found.push((f, v.to_vec()));
            }
        });
        out.array_len(2);
        out.bulk(next.to_string().as_bytes());
        out.array_len(found.len() * 2);
        for (f, v) in &found {
            out.bulk(f);
            out.bulk(v);
        }
    });
    match error {
        Some(ScanError::Syntax) => ctx.syntax_error(),
        Some(ScanError::NotInteger) => ctx.not_integer(),
        None => {}
    }
}
