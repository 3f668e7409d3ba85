//! Sorted-set commands (Redis's `t_zset.c`), one concern per file: here ZADD and its options,
//! ZINCRBY, ZREM, the single-member reads, ZRANDMEMBER, ZSCAN and the table; `range.rs` the
//! ranges by rank, score and lex (and their STORE, REV and REMRANGE forms); `pop.rs` the pops
//! (and what the blocking pops build on); `algebra.rs` ZUNION/ZINTER/ZDIFF, their STORE forms and
//! ZINTERCARD (plain sets count as score 1).
//!
//! The encodings are the store's (`store::ZSet`): a packed inline payload or the boxed index,
//! read through a `ZSetView` and changed through `Shard::update::<ZSet>`. Scores parse as Redis
//! parses them (`crate::number::parse_score`) and reply as `addReplyDouble` writes them
//! (`%.17g`; a RESP3 double).
//!
//! Keyspace events, as `t_zset.c` sends them: `zadd` (or `zincr` with INCR and ZINCRBY) when a
//! member was added or updated, after `new` when ZADD created the set; `zrem`,
//! `zremrangebyrank`/`score`/`lex`, `zpopmin`/`zpopmax`, each followed by `del` when the set
//! emptied; `zunionstore`, `zinterstore`, `zdiffstore`, `zrangestore` (after `new`), or `del`
//! when the result is empty; `keymiss` for each key a read finds missing.

// Scores are compared exactly, as Redis compares its doubles (-0 == 0, no epsilon).
#![allow(clippy::float_cmp)]

pub mod algebra;
pub mod pop;
pub mod range;

use super::args::{is, parse_i64};
use super::keys::{created, keymiss};
use super::random::{self, Picks};
use crate::command::{Ctx, DENYOOM, FAST, K1, K12, Keys, READONLY, Spec, WRITE, table};
use crate::notify::class;
use crate::number::parse_score;
use algebra::{zdiff, zdiffstore, zinter, zintercard, zinterstore, zunion, zunionstore};
use pop::{zmpop, zpopmax, zpopmin};
use range::{
    zcount, zlexcount, zrange, zrangebylex, zrangebyscore, zrangestore, zremrangebylex,
    zremrangebyrank, zremrangebyscore, zrevrange, zrevrangebylex, zrevrangebyscore,
};
use resp::{Protocol, ReplyWriter};
use store::{Edit, StoreError, ZSet};

pub use pop::{pop_for_blocked, propagate_pop, reply_popped};

const NAN_ERROR: &str = "ERR resulting score is not a number (NaN)";
const NOT_FLOAT: &str = "ERR value is not a valid float";

/// `getLongFromObjectOrReply` with an optional message.
fn parse_long(ctx: &mut Ctx<'_, '_>, arg: &[u8], msg: Option<&str>) -> Option<i64> {
    let v = parse_i64(arg);
    if v.is_none() {
        match msg {
            Some(m) => ctx.error(m),
            None => ctx.not_integer(),
        }
    }
    v
}

/// `getRangeLongFromObjectOrReply`, with its error text (Redis 7.0 writes "value must between").
fn parse_long_in(
    ctx: &mut Ctx<'_, '_>,
    arg: &[u8],
    min: i64,
    max: i64,
    msg: Option<&str>,
) -> Option<i64> {
    let v = parse_long(ctx, arg, msg)?;
    if v < min || v > max {
        match msg {
            Some(m) => ctx.error(m),
            None => ctx.error(&format!(
                "ERR value is out of range, value must between {min} and {max}"
            )),
        }
        return None;
    }
    Some(v)
}

// ---------------------------------------------------------------------------------------------
// Access to a key's zset

/// Writes a score as `addReplyDouble` does (ZSCORE, ZPOPMIN, WITHSCORES…).
pub fn reply_score(out: &mut ReplyWriter<'_>, score: f64) {
    out.double(score);
}

// ---------------------------------------------------------------------------------------------
// ZADD, ZINCRBY, ZREM

/// ZADD's options (and ZINCRBY, which is ZADD with INCR).
#[derive(Clone, Copy, Debug, Default)]
struct ZaddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What ZADD did to the set.
#[derive(Clone, Copy, Debug, Default)]
struct ZaddOutcome {
    added: i64,
    updated: i64,
    processed: i64,
    /// The score of the last member processed (ZADD INCR's reply).
    last: f64,
    /// An increment made a NaN: ZADD stopped there.
    nan: bool,
}

pub fn zadd(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    zadd_generic(ctx, args, ZaddFlags::default());
}

pub fn zincrby(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let flags = ZaddFlags {
        incr: true,
        ..ZaddFlags::default()
    };
    zadd_generic(ctx, args, flags);
}

/// Reads ZADD's options from `args[2..]` into `flags`; returns the index of the first pair.
fn zadd_options(args: &[&[u8]], flags: &mut ZaddFlags) -> usize {
    let mut at = 2;
    while let Some(opt) = args.get(at) {
        let flag = if is(opt, "nx") {
            &mut flags.nx
        } else if is(opt, "xx") {
            &mut flags.xx
        } else if is(opt, "ch") {
            &mut flags.ch
        } else if is(opt, "incr") {
            &mut flags.incr
        } else if is(opt, "gt") {
            &mut flags.gt
        } else if is(opt, "lt") {
            &mut flags.lt
        } else {
            break;
        };
        *flag = true;
        at += 1;
    }
    at
}

/// The error ZADD's option combination and pair count get, in Redis's order of checks.
fn zadd_conflict(f: ZaddFlags, pairs: usize) -> Option<&'static str> {
    if pairs == 0 || !pairs.is_multiple_of(2) {
        Some("ERR syntax error")
    } else if f.nx && f.xx {
        Some("ERR XX and NX options at the same time are not compatible")
    } else if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        Some("ERR GT, LT, and/or NX options at the same time are not compatible")
    } else if f.incr && pairs > 2 {
        Some("ERR INCR option supports a single increment-element pair")
    } else {
        None
    }
}

fn zadd_generic(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], mut flags: ZaddFlags) {
    let key = args[1];
    let pairs = &args[zadd_options(args, &mut flags)..];
    if let Some(e) = zadd_conflict(flags, pairs.len()) {
        return ctx.error(e);
    }
    let mut scores: smallvec::SmallVec<[f64; 8]> = smallvec::SmallVec::new();
    for pair in pairs.chunks(2) {
        match parse_score(pair[0]) {
            Some(s) => scores.push(s),
            None => return ctx.error(NOT_FLOAT),
        }
    }
    let members = pairs.chunks(2).map(|p| p[1]).zip(scores.iter().copied());
    let mut was_new = false;
    let Some(done) = ctx.write::<ZSet, _>(key, !flags.xx, |z, _| {
        // A set being created starts empty; a stored one never is.
        was_new = z.is_empty();
        zadd_apply(z, flags, members)
    }) else {
        return;
    };
    let done = done.unwrap_or_default();
    let db = ctx.db();
    if was_new {
        created(ctx, key);
    }
    if done.added + done.updated > 0 {
        ctx.touch(db, key);
        ctx.notify(class::ZSET, if flags.incr { "zincr" } else { "zadd" }, key);
    }
    if done.added > 0 {
        ctx.signal_ready(db, key);
    }
    if done.nan {
        ctx.error(NAN_ERROR);
    } else if flags.incr && done.processed > 0 {
        reply_score(&mut ctx.out, done.last);
    } else if flags.incr {
        ctx.out.null();
    } else {
        ctx.out
            .integer(done.added + if flags.ch { done.updated } else { 0 });
    }
}

/// Adds or updates each (member, score) as ZADD's flags say.
fn zadd_apply<'m>(
    z: &mut Edit<'_, ZSet>,
    f: ZaddFlags,
    members: impl Iterator<Item = (&'m [u8], f64)>,
) -> Result<ZaddOutcome, StoreError> {
    let mut done = ZaddOutcome::default();
    for (member, score) in members {
        let Some(cur) = z.score(member) else {
            if !f.xx {
                z.insert(member, score)?;
                (done.added, done.processed, done.last) =
                    (done.added + 1, done.processed + 1, score);
            }
            continue;
        };
        let new = if f.incr { cur + score } else { score };
        if new.is_nan() && !f.nx {
            done.nan = true;
            return Ok(done);
        }
        if f.nx || (f.lt && new >= cur) || (f.gt && new <= cur) {
            continue;
        }
        if new != cur {
            z.update(member, cur, new)?;
            done.updated += 1;
        }
        (done.processed, done.last) = (done.processed + 1, new);
    }
    Ok(done)
}

pub fn zrem(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let key = args[1];
    let result = ctx.write::<ZSet, _>(key, false, |z, _| {
        let mut deleted = 0;
        for m in &args[2..] {
            if z.remove(m).is_some() {
                deleted += 1;
            }
            if z.is_empty() {
                break;
            }
        }
        Ok((deleted, z.is_empty()))
    });
    if let Some(n) = result {
        let (n, emptied) = n.unwrap_or((0, false));
        if n > 0 {
            ctx.touch(ctx.db(), key);
            notify_removed(ctx, key, "zrem", emptied);
        }
        ctx.out.integer(n);
    }
}

/// The events of entries removed from the sorted set at `key`: `event` (`zrem`, `zpopmin`…),
/// then `del` when the set emptied (the store deleted it).
pub(crate) fn notify_removed(ctx: &mut Ctx<'_, '_>, key: &[u8], event: &str, emptied: bool) {
    ctx.notify(class::ZSET, event, key);
    if emptied {
        ctx.notify(class::GENERIC, "del", key);
    }
}

/// Sends the `keymiss` of a read of `key` (`Ctx::read`'s result, borrowed) that found no key.
pub(crate) fn note_miss<R>(ctx: &mut Ctx<'_, '_>, key: &[u8], found: Option<&Option<R>>) {
    if matches!(found, Some(None)) {
        keymiss(ctx, key);
    }
}

// ---------------------------------------------------------------------------------------------
// Single-member reads

pub fn zcard(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let found = ctx.read::<ZSet, _>(args[1], |z, _| z.len());
    if let Some(n) = found {
        ctx.out.integer(n.unwrap_or(0) as i64);
    }
    note_miss(ctx, args[1], found.as_ref());
}

pub fn zscore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let member = args[2];
    let found = ctx.read::<ZSet, _>(args[1], |z, out| match z.score(member) {
        Some(s) => {
            reply_score(out, s);
            true
        }
        None => false,
    });
    if let Some(done) = found
        && done != Some(true)
    {
        ctx.out.null();
    }
    note_miss(ctx, args[1], found.as_ref());
}

pub fn zmscore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let members = &args[2..];
    let Some(found) = ctx.read::<ZSet, _>(args[1], |z, out| {
        out.array_len(members.len());
        for m in members {
            match z.score(m) {
                Some(s) => reply_score(out, s),
                None => out.null(),
            }
        }
    }) else {
        return;
    };
    if found.is_none() {
        ctx.out.array_len(members.len());
        for _ in members {
            ctx.out.null();
        }
        keymiss(ctx, args[1]);
    }
}

fn rank_generic(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], rev: bool) {
    let member = args[2];
    let found = ctx.read::<ZSet, _>(args[1], |z, _| {
        z.rank(member)
            .map(|(r, _)| if rev { z.len() - 1 - r } else { r })
    });
    if let Some(r) = found {
        match r.flatten() {
            Some(r) => ctx.out.integer(r as i64),
            None => ctx.out.null(),
        }
    }
    note_miss(ctx, args[1], found.as_ref());
}

pub fn zrank(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    rank_generic(ctx, args, false);
}

pub fn zrevrank(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    rank_generic(ctx, args, true);
}

// ---------------------------------------------------------------------------------------------
// ZRANDMEMBER and ZSCAN

/// ZRANDMEMBER without a count: one member, or null.
fn random_member(ctx: &mut Ctx<'_, '_>, key: &[u8]) {
    let found = ctx.read::<ZSet, _>(key, |z, out| {
        let (_, m) = z.sample(random::random()).expect("zsets are never empty");
        out.bulk(m);
    });
    if found == Some(None) {
        ctx.out.null();
        keymiss(ctx, key);
    }
}

pub fn zrandmember(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len() == 2 {
        return random_member(ctx, args[1]);
    }
    let Some(l) = parse_long_in(ctx, args[2], -i64::MAX, i64::MAX, None) else {
        return;
    };
    let withscores = match args.len() {
        3 => false,
        4 if is(args[3], "withscores") => true,
        _ => return ctx.syntax_error(),
    };
    if withscores && !(-i64::MAX / 2..=i64::MAX / 2).contains(&l) {
        return ctx.error("ERR value is out of range");
    }
    let found = ctx.read::<ZSet, _>(args[1], |z, out| {
        let len = z.len();
        let resp3 = out.protocol() == Protocol::Resp3;
        let emit = |out: &mut ReplyWriter<'_>, s: f64, m: &[u8]| {
            if withscores && resp3 {
                out.array_len(2);
            }
            out.bulk(m);
            if withscores {
                reply_score(out, s);
            }
        };
        let header = |out: &mut ReplyWriter<'_>, n: usize| {
            out.array_len(if withscores && !resp3 { n * 2 } else { n });
        };
        let entry = |rank: usize| z.iter(rank, false).next().expect("rank below len");
        match random::plan(l, len) {
            Picks::TooMany => return false,
            Picks::Repeats(n) => {
                header(out, n);
                for _ in 0..n {
                    let (s, m) = entry(random::below(len));
                    emit(out, s, m);
                }
            }
            Picks::All => {
                header(out, len);
                z.iter(0, false).for_each(|(s, m)| emit(out, s, m));
            }
            Picks::Distinct(n) => {
                let ranks = random::distinct(n, len, || (0..len).collect(), || random::below(len));
                header(out, n);
                ranks
                    .into_iter()
                    .map(entry)
                    .for_each(|(s, m)| emit(out, s, m));
            }
        }
        true
    });
    match found {
        Some(None) => {
            ctx.out.array_len(0);
            keymiss(ctx, args[1]);
        }
        Some(Some(false)) => ctx.error(random::TOO_MANY),
        _ => {}
    }
}

/// `d2string`: how a listpack holds a score (ZSCAN of a small zset prints it so).
fn d2string(s: f64) -> Vec<u8> {
    if s == 0.0 {
        return if s.is_sign_negative() {
            b"-0".to_vec()
        } else {
            b"0".to_vec()
        };
    }
    let limit = (i64::MAX / 2) as f64;
    if s.is_finite() && s == s.trunc() && (-limit..=limit).contains(&s) {
        return (s as i64).to_string().into_bytes();
    }
    resp::double::g17(s).as_bytes().to_vec()
}

pub fn zscan(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some((cursor, options)) = ctx.scan_start::<ZSet>(args) else {
        return;
    };
    let scanned = ctx.read::<ZSet, _>(args[1], |z, _| {
        let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        // A packed zset holds integral scores as integers, and ZSCAN prints them so.
        let text = if z.scans_whole() {
            d2string
        } else {
            |s| resp::double::g17(s).as_bytes().to_vec()
        };
        let next = z.scan(cursor, options.count, |m, s| {
            if options.matches(m) {
                found.push((m.to_vec(), text(s)));
            }
        });
        (next, found)
    });
    let (next, found) = scanned.flatten().unwrap_or_default();
    ctx.out.array_len(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array_len(found.len() * 2);
    for (m, s) in &found {
        ctx.out.bulk(m);
        ctx.out.bulk(s);
    }
}

// ---------------------------------------------------------------------------------------------
// The table

/// Keys counted by the argument at `count_at`; a destination key before it (the STORE forms).
const fn numkeys(count_at: usize) -> Keys {
    Keys::NumKeys {
        at: count_at,
        also: if count_at > 1 { Some(1) } else { None },
    }
}

pub static COMMANDS: &[Spec] = table! {
    // name             arity, flags,                  keys,       member, handler
    "zadd",             -4,    WRITE | DENYOOM | FAST, K1,         3,      zadd;
    "zincrby",          4,     WRITE | DENYOOM | FAST, K1,         3,      zincrby;
    "zrem",             -3,    WRITE | FAST,           K1,         2,      zrem;
    "zcard",            2,     READONLY | FAST,        K1,         0,      zcard;
    "zscore",           3,     READONLY | FAST,        K1,         2,      zscore;
    "zmscore",          -3,    READONLY | FAST,        K1,         2,      zmscore;
    "zrank",            3,     READONLY | FAST,        K1,         2,      zrank;
    "zrevrank",         3,     READONLY | FAST,        K1,         2,      zrevrank;
    "zcount",           4,     READONLY | FAST,        K1,         0,      zcount;
    "zlexcount",        4,     READONLY | FAST,        K1,         0,      zlexcount;
    "zrange",           -4,    READONLY,               K1,         0,      zrange;
    "zrangestore",      -5,    WRITE | DENYOOM,        K12,        0,      zrangestore;
    "zrevrange",        -4,    READONLY,               K1,         0,      zrevrange;
    "zrangebyscore",    -4,    READONLY,               K1,         0,      zrangebyscore;
    "zrevrangebyscore", -4,    READONLY,               K1,         0,      zrevrangebyscore;
    "zrangebylex",      -4,    READONLY,               K1,         0,      zrangebylex;
    "zrevrangebylex",   -4,    READONLY,               K1,         0,      zrevrangebylex;
    "zremrangebyrank",  4,     WRITE,                  K1,         0,      zremrangebyrank;
    "zremrangebyscore", 4,     WRITE,                  K1,         0,      zremrangebyscore;
    "zremrangebylex",   4,     WRITE,                  K1,         0,      zremrangebylex;
    "zpopmin",          -2,    WRITE | FAST,           K1,         0,      zpopmin;
    "zpopmax",          -2,    WRITE | FAST,           K1,         0,      zpopmax;
    "zmpop",            -4,    WRITE,                  numkeys(1), 0,      zmpop;
    "zrandmember",      -2,    READONLY,               K1,         0,      zrandmember;
    "zunion",           -3,    READONLY,               numkeys(1), 0,      zunion;
    "zinter",           -3,    READONLY,               numkeys(1), 0,      zinter;
    "zdiff",            -3,    READONLY,               numkeys(1), 0,      zdiff;
    "zintercard",       -3,    READONLY,               numkeys(1), 0,      zintercard;
    "zunionstore",      -4,    WRITE | DENYOOM,        numkeys(2), 0,      zunionstore;
    "zinterstore",      -4,    WRITE | DENYOOM,        numkeys(2), 0,      zinterstore;
    "zdiffstore",       -4,    WRITE | DENYOOM,        numkeys(2), 0,      zdiffstore;
    "zscan",            -3,    READONLY,               K1,         0,      zscan;
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d2string_matches_listpack_scores() {
        assert_eq!(d2string(1e17), b"100000000000000000");
        assert_eq!(d2string(-0.0), b"-0");
        assert_eq!(d2string(1.5), b"1.5");
        assert_eq!(d2string(f64::INFINITY), b"inf");
    }
}
