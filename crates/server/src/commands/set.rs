//! Set commands (Redis's `t_set.c`): SADD, SREM, SISMEMBER, SMISMEMBER, SCARD, SMEMBERS,
//! SRANDMEMBER, SPOP, SMOVE, SINTER, SINTERCARD, SINTERSTORE, SUNION, SUNIONSTORE, SDIFF,
//! SDIFFSTORE and SSCAN, with Redis 7.0's arities, replies (sets are `~` in RESP3, SRANDMEMBER's
//! and SMISMEMBER's replies arrays) and error texts.
//!
//! The encodings and their conversions are the store's (`store::Set`); single-key commands reply
//! straight from the stored bytes through a `SetView`. Multi-key commands may span shards: they
//! read what they need from one key at a time into owned data (the smallest set for SINTER, every
//! set for SUNION, the first for SDIFF), filter it by membership lookups in the others, then build
//! the destination. A `*STORE` destination is overwritten whatever its type, and deleted when the
//! result is empty, as Redis does.
//!
//! Keyspace events, as `t_set.c` sends them: `sadd` after `new` when SADD created the set;
//! `srem` and `spop`, each followed by `del` when the set emptied; SMOVE's `srem` (and `del`)
//! on the source, then `new` and `sadd` on the destination; `sinterstore`, `sunionstore`,
//! `sdiffstore` (after `new`), or `del` when the result is empty; `keymiss` for each key a read
//! finds missing.
//!
//! SPOP picks at random, so it is written to the append-only file as what it removed: one
//! `SREM key member` per member, or `DEL key` when its count took the whole set (`t_set.c`).

use super::args::{COUNT_OUT_OF_RANGE, is, parse_i64};
use super::keys::{created, keymiss};
use super::random::{self, Picks};
use crate::command::{Ctx, DENYOOM, FAST, K1, K12, KALL, Keys, READONLY, Spec, WRITE, table};
use crate::notify::class;
use resp::ReplyWriter;
use store::{Set, SetView, Str};

/// SINTERSTORE and friends: the destination, then the sources (all keys).
const KSTORE: Keys = KALL;

pub static COMMANDS: &[Spec] = table! {
    // name        arity, flags,                  keys,                                member, handler
    "sadd",        -3,    WRITE | DENYOOM | FAST, K1,                                  2,      sadd;
    "srem",        -3,    WRITE | FAST,           K1,                                  2,      srem;
    "sismember",   3,     READONLY | FAST,        K1,                                  2,      sismember;
    "smismember",  -3,    READONLY | FAST,        K1,                                  2,      smismember;
    "scard",       2,     READONLY | FAST,        K1,                                  0,      scard;
    "smembers",    2,     READONLY,               K1,                                  0,      smembers;
    "srandmember", -2,    READONLY,               K1,                                  0,      srandmember;
    "spop",        -2,    WRITE | FAST,           K1,                                  0,      spop;
    "smove",       4,     WRITE | FAST,           K12,                                 0,      smove;
    "sinter",      -2,    READONLY,               KALL,                                0,      sinter;
    "sintercard",  -3,    READONLY,               Keys::NumKeys { at: 1, also: None }, 0,      sintercard;
    "sinterstore", -3,    WRITE | DENYOOM,        KSTORE,                              0,      sinterstore;
    "sunion",      -2,    READONLY,               KALL,                                0,      sunion;
    "sunionstore", -3,    WRITE | DENYOOM,        KSTORE,                              0,      sunionstore;
    "sdiff",       -2,    READONLY,               KALL,                                0,      sdiff;
    "sdiffstore",  -3,    WRITE | DENYOOM,        KSTORE,                              0,      sdiffstore;
    "sscan",       -3,    READONLY,               K1,                                  0,      sscan;
};

#[inline]
fn reply_member(out: &mut ReplyWriter<'_>, m: Str<'_>) {
    match m {
        Str::Int(v) => out.bulk_integer(v),
        Str::Bytes(b) => out.bulk(b),
    }
}

pub fn sadd(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let key = args[1];
    let added = ctx.write::<Set, _>(key, true, |s, _| {
        // A set being created starts empty; a stored one never is.
        let was_new = s.is_empty();
        let mut added = 0;
        for m in &args[2..] {
            added += usize::from(s.add(m)?);
        }
        Ok((added, was_new))
    });
    if let Some(added) = added {
        let (added, was_new) = added.unwrap_or((0, false));
        if was_new {
            created(ctx, key);
        }
        if added > 0 {
            ctx.touch(ctx.db(), key);
            ctx.notify(class::SET, "sadd", key);
        }
        ctx.out.integer(added as i64);
    }
}

pub fn srem(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let key = args[1];
    let removed = ctx.write::<Set, _>(key, false, |s, _| {
        let removed = args[2..].iter().filter(|m| s.remove(m)).count();
        Ok((removed, s.is_empty()))
    });
    if let Some(removed) = removed {
        let (removed, emptied) = removed.unwrap_or((0, false));
        if removed > 0 {
            ctx.touch(ctx.db(), key);
            notify_removed(ctx, key, "srem", emptied);
        }
        ctx.out.integer(removed as i64);
    }
}

/// The events of members removed from the set at `key`: `event` (`srem`, `spop`), then `del`
/// when the set emptied (the store deleted it).
fn notify_removed(ctx: &mut Ctx<'_, '_>, key: &[u8], event: &str, emptied: bool) {
    ctx.notify(class::SET, event, key);
    if emptied {
        ctx.notify(class::GENERIC, "del", key);
    }
}

pub fn sismember(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if let Some(found) = ctx.read::<Set, _>(args[1], |v, _| v.contains(args[2])) {
        ctx.out.integer(i64::from(found == Some(true)));
        if found.is_none() {
            keymiss(ctx, args[1]);
        }
    }
}

pub fn smismember(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let found = ctx.read::<Set, _>(args[1], |v, out| {
        out.array_len(args.len() - 2);
        for m in &args[2..] {
            out.integer(i64::from(v.contains(m)));
        }
    });
    if found == Some(None) {
        ctx.out.array_len(args.len() - 2);
        for _ in 2..args.len() {
            ctx.out.integer(0);
        }
        keymiss(ctx, args[1]);
    }
}

pub fn scard(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if let Some(len) = ctx.read::<Set, _>(args[1], |v, _| v.len()) {
        ctx.out.integer(len.unwrap_or(0) as i64);
        if len.is_none() {
            keymiss(ctx, args[1]);
        }
    }
}

pub fn smembers(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let found = ctx.read::<Set, _>(args[1], |v, out| {
        out.set_len(v.len());
        v.for_each(|m| reply_member(out, m));
    });
    if found == Some(None) {
        ctx.out.set_len(0);
        keymiss(ctx, args[1]);
    }
}

pub fn srandmember(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len() > 3 {
        return ctx.syntax_error();
    }
    if args.len() == 2 {
        let found = ctx.read::<Set, _>(args[1], |v, out| {
            if let Some(m) = v.random(random::random()) {
                reply_member(out, m);
            }
        });
        if found == Some(None) {
            ctx.out.null();
            keymiss(ctx, args[1]);
        }
        return;
    }
    let Some(count) = parse_i64(args[2]) else {
        return ctx.not_integer();
    };
    if count == i64::MIN {
        return ctx.error(COUNT_OUT_OF_RANGE);
    }
    match ctx.read::<Set, _>(args[1], |v, out| random_members(out, v, count)) {
        Some(None) => {
            ctx.out.array_len(0);
            keymiss(ctx, args[1]);
        }
        Some(Some(false)) => ctx.error(random::TOO_MANY),
        _ => {}
    }
}

/// SRANDMEMBER with a count (`random::plan`'s cases); false when it is too many to answer.
fn random_members(out: &mut ReplyWriter<'_>, v: SetView<'_>, count: i64) -> bool {
    match random::plan(count, v.len()) {
        Picks::TooMany => return false,
        Picks::Repeats(n) => {
            out.array_len(n);
            for _ in 0..n {
                if let Some(m) = v.random(random::random()) {
                    reply_member(out, m);
                }
            }
        }
        Picks::All => {
            out.array_len(v.len());
            v.for_each(|m| reply_member(out, m));
        }
        Picks::Distinct(n) => {
            let draw = || v.random(random::random()).expect("sets are never empty");
            let picks = random::distinct(n, v.len(), || v.members(), draw);
            out.array_len(n);
            for m in picks {
                reply_member(out, m);
            }
        }
    }
    true
}

pub fn spop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len() > 3 {
        return ctx.syntax_error();
    }
    let key = args[1];
    let count = match args.get(2).map(|a| parse_i64(a)) {
        None => None,
        Some(Some(n)) if n >= 0 => Some(n as usize),
        Some(_) => return ctx.error("ERR value is out of range, must be positive"),
    };
    // The members popped, for the SREMs the pop is written as; not kept when the count takes
    // the whole set, which is written as DEL.
    let mut removed: Vec<Vec<u8>> = Vec::new();
    let popped = ctx.write::<Set, _>(key, false, |s, out| {
        let n = count.unwrap_or(1);
        let whole = count.is_some() && n >= s.len();
        if count.is_some() {
            out.set_len(n.min(s.len()));
        }
        if n == 0 {
            return Ok((0, whole, false));
        }
        let popped = s.pop(n, &mut random::random, |m| {
            reply_member(out, m);
            if !whole {
                removed.push(m.to_vec());
            }
        });
        Ok((popped, whole, s.is_empty()))
    });
    match (popped, count) {
        (None, _) => {}
        (Some(None), None) => ctx.out.null(),
        (Some(None), Some(_)) => ctx.out.set_len(0),
        (Some(Some((n, whole, emptied))), _) => {
            if n > 0 {
                ctx.touch(ctx.db(), key);
                notify_removed(ctx, key, "spop", emptied);
                propagate_spop(ctx, key, whole, &removed);
            }
        }
    }
}

/// SPOP is written as Redis's `spopCommand` and `spopWithCountCommand` write it, since which
/// members a replay would pick is random: `DEL key` when the count took the whole set, else
/// one `SREM key member` per member popped (more than one become one MULTI … EXEC block).
fn propagate_spop(ctx: &mut Ctx<'_, '_>, key: &[u8], whole: bool, removed: &[Vec<u8>]) {
    if whole {
        return ctx.propagate_as(&[b"DEL", key]);
    }
    for member in removed {
        ctx.propagate_as(&[b"SREM", key, member]);
    }
}

pub fn smove(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (src, dst, member) = (args[1], args[2], args[3]);
    // Both keys are looked up first (either lookup may expire its key), as Redis does.
    let src_kind = ctx.shard(src).kind(db, src, now);
    super::keys::expired_so_far(ctx);
    let dst_kind = ctx.shard(dst).kind(db, dst, now);
    let Some(src_kind) = src_kind else {
        return ctx.out.integer(0);
    };
    if src_kind != store::Kind::Set || dst_kind.is_some_and(|k| k != store::Kind::Set) {
        return ctx.wrong_type();
    }
    if src == dst {
        let found = ctx.read::<Set, _>(src, |v, _| v.contains(member));
        return ctx.out.integer(i64::from(found == Some(Some(true))));
    }
    match ctx.write::<Set, _>(src, false, |s, _| Ok((s.remove(member), s.is_empty()))) {
        None => return,
        Some(Some((true, emptied))) => {
            ctx.touch(db, src);
            notify_removed(ctx, src, "srem", emptied);
        }
        Some(_) => return ctx.out.integer(0),
    }
    if let Some(Some(added)) = ctx.write::<Set, _>(dst, true, |s, _| s.add(member)) {
        if dst_kind.is_none() {
            created(ctx, dst);
        }
        ctx.touch(db, dst);
        if added {
            ctx.notify(class::SET, "sadd", dst);
        }
        ctx.out.integer(1);
    }
}

/// The sizes of the sets at `keys` (`None`: missing, a `keymiss`), or `Err` after replying
/// WRONGTYPE: Redis's `lookupKeyRead` of every input, in order, before anything is computed.
fn sizes(ctx: &mut Ctx<'_, '_>, keys: &[&[u8]]) -> Result<Vec<Option<usize>>, ()> {
    let mut sizes = Vec::with_capacity(keys.len());
    for &key in keys {
        let size = ctx.read::<Set, _>(key, |v, _| v.len()).ok_or(())?;
        if size.is_none() {
            keymiss(ctx, key);
        }
        sizes.push(size);
    }
    Ok(sizes)
}

/// The members of the set at `key` (empty when missing; the type was checked by `sizes`).
fn members_of(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Vec<Vec<u8>> {
    ctx.read::<Set, _>(key, |v, _| v.to_vec())
        .flatten()
        .unwrap_or_default()
}

/// Keeps the `candidates` that the set at `key` holds (`keep == true`) or does not hold.
fn filter_by(ctx: &mut Ctx<'_, '_>, key: &[u8], candidates: &mut Vec<Vec<u8>>, keep: bool) {
    let kept = ctx.read::<Set, _>(key, |v, _| {
        candidates.retain(|m| v.contains(m) == keep);
    });
    if kept != Some(Some(())) && keep {
        candidates.clear();
    }
}

/// The intersection of the sets at `keys` (every key type-checked first, as Redis does).
fn intersection(ctx: &mut Ctx<'_, '_>, keys: &[&[u8]]) -> Result<Vec<Vec<u8>>, ()> {
    let sizes = sizes(ctx, keys)?;
    if sizes.iter().any(Option::is_none) {
        return Ok(Vec::new());
    }
    let smallest = (0..keys.len())
        .min_by_key(|&i| sizes[i])
        .expect("at least one key");
    let mut result = members_of(ctx, keys[smallest]);
    for &key in keys {
        if result.is_empty() {
            break;
        }
        if key != keys[smallest] {
            filter_by(ctx, key, &mut result, true);
        }
    }
    Ok(result)
}

fn union(ctx: &mut Ctx<'_, '_>, keys: &[&[u8]]) -> Result<Vec<Vec<u8>>, ()> {
    sizes(ctx, keys)?;
    let mut seen: std::collections::HashSet<Vec<u8>, foldhash::fast::RandomState> =
        std::collections::HashSet::default();
    let mut result = Vec::new();
    for &key in keys {
        ctx.read::<Set, _>(key, |v, _| {
            v.for_each(|m| {
                let text = m.to_vec();
                if seen.insert(text.clone()) {
                    result.push(text);
                }
            });
        });
    }
    Ok(result)
}

fn difference(ctx: &mut Ctx<'_, '_>, keys: &[&[u8]]) -> Result<Vec<Vec<u8>>, ()> {
    sizes(ctx, keys)?;
    let mut result = members_of(ctx, keys[0]);
    for &key in &keys[1..] {
        if result.is_empty() {
            break;
        }
        filter_by(ctx, key, &mut result, false);
    }
    Ok(result)
}

#[derive(Clone, Copy)]
enum Op {
    Inter,
    Union,
    Diff,
}

impl Op {
    /// The event of its STORE form.
    fn store_event(self) -> &'static str {
        match self {
            Op::Inter => "sinterstore",
            Op::Union => "sunionstore",
            Op::Diff => "sdiffstore",
        }
    }
}

fn compute(ctx: &mut Ctx<'_, '_>, op: Op, keys: &[&[u8]]) -> Result<Vec<Vec<u8>>, ()> {
    match op {
        Op::Inter => intersection(ctx, keys),
        Op::Union => union(ctx, keys),
        Op::Diff => difference(ctx, keys),
    }
}

fn reply_members(ctx: &mut Ctx<'_, '_>, op: Op, keys: &[&[u8]]) {
    if let Ok(members) = compute(ctx, op, keys) {
        ctx.out.set_len(members.len());
        for m in &members {
            ctx.out.bulk(m);
        }
    }
}

fn store_members(ctx: &mut Ctx<'_, '_>, op: Op, args: &[&[u8]]) {
    let dst = args[1];
    let Ok(members) = compute(ctx, op, &args[2..]) else {
        return;
    };
    ctx.store_result(
        dst,
        members.len(),
        (class::SET, op.store_event()),
        |shard, db| {
            let mut b = shard.builder::<Set>()?;
            for m in &members {
                b.insert(m)?;
            }
            b.finish(db, dst, None)
        },
    );
}

pub fn sinter(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    reply_members(ctx, Op::Inter, &args[1..]);
}

pub fn sunion(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    reply_members(ctx, Op::Union, &args[1..]);
}

pub fn sdiff(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    reply_members(ctx, Op::Diff, &args[1..]);
}

pub fn sinterstore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    store_members(ctx, Op::Inter, args);
}

pub fn sunionstore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    store_members(ctx, Op::Union, args);
}

pub fn sdiffstore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    store_members(ctx, Op::Diff, args);
}

pub fn sintercard(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let numkeys = match parse_i64(args[1]) {
        Some(n) if n > 0 => n as usize,
        _ => return ctx.error("ERR numkeys should be greater than 0"),
    };
    if numkeys > args.len() - 2 {
        return ctx.error("ERR Number of keys can't be greater than number of args");
    }
    let mut limit = 0usize;
    let mut i = 2 + numkeys;
    while i < args.len() {
        if is(args[i], "limit") && i + 1 < args.len() {
            match parse_i64(args[i + 1]) {
                Some(n) if n >= 0 => limit = n as usize,
                _ => return ctx.error("ERR LIMIT can't be negative"),
            }
            i += 2;
        } else {
            return ctx.syntax_error();
        }
    }
    if let Ok(members) = intersection(ctx, &args[2..2 + numkeys]) {
        let card = if limit == 0 {
            members.len()
        } else {
            members.len().min(limit)
        };
        ctx.out.integer(card as i64);
    }
}

pub fn sscan(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some((cursor, options)) = ctx.scan_start::<Set>(args) else {
        return;
    };
    let scanned = ctx.read::<Set, _>(args[1], |v, _| scan_set(v, cursor, options.count));
    let (next, mut found) = scanned.flatten().unwrap_or_default();
    found.retain(|m| options.matches(m));
    ctx.out.array_len(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array_len(found.len());
    for m in &found {
        ctx.out.bulk(m);
    }
}

/// One SSCAN call: at least `count` members unless the scan ends, at most ten steps per
/// requested member, as Redis's `maxiterations`.
fn scan_set(v: SetView<'_>, mut cursor: u64, count: usize) -> (u64, Vec<Vec<u8>>) {
    let mut found: Vec<Vec<u8>> = Vec::new();
    if v.scans_whole() {
        v.for_each(|m| found.push(m.to_vec()));
        return (0, found);
    }
    for _ in 0..count.saturating_mul(10) {
        cursor = v.scan_step(cursor, |m| found.push(m.to_vec()));
        if cursor == 0 || found.len() >= count {
            break;
        }
    }
    (cursor, found)
}
