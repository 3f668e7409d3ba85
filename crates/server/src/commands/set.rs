//! Set commands (Redis's `t_set.c`): SADD, SREM, SISMEMBER, SMISMEMBER, SCARD, SMEMBERS,
//! SRANDMEMBER, SPOP, SMOVE, SINTER, SINTERCARD, SINTERSTORE, SUNION, SUNIONSTORE, SDIFF,
//! SDIFFSTORE and SSCAN, with Redis 7.0's arities, replies (sets are `~` in RESP3, SRANDMEMBER's
//! and SMISMEMBER's replies arrays) and error texts.
//!
//! The encodings and their conversions are `store::types::set`'s; single-key commands reply
//! straight from the stored bytes through a `SetView`. Multi-key commands may span shards: they
//! read what they need from one key at a time into owned data (the smallest set for SINTER, every
//! set for SUNION, the first for SDIFF), filter it by membership lookups in the others, then write
//! the destination. A `*STORE` destination is overwritten whatever its type, and deleted when the
//! result is empty, as Redis does.
//!
//! Random picks (SPOP, SRANDMEMBER) use a per-thread wyrand generator seeded from the clock.

use super::is;
use crate::command::{Ctx, Keys, READONLY, Spec, WRITE, parse_i64, spec};
use crate::command::{DENYOOM, FAST, K1, K12, KALL};
use resp::ReplyWriter;
use std::cell::Cell;
use store::Ttl;
use store::types::set::{self, Member, SetError, SetView};

/// SINTERSTORE and friends: the destination, then the sources (all keys).
const KSTORE: Keys = KALL;

pub static COMMANDS: &[Spec] = &[
    spec(
        "sadd",
        -3,
        WRITE | DENYOOM | FAST,
        K1,
        "set",
        "1.0.0",
        "Add one or more members to a set",
        sadd,
    ),
    spec(
        "srem",
        -3,
        WRITE | FAST,
        K1,
        "set",
        "1.0.0",
        "Remove one or more members from a set",
        srem,
    ),
    spec(
        "sismember",
        3,
        READONLY | FAST,
        K1,
        "set",
        "1.0.0",
        "Determine if a given value is a member of a set",
        sismember,
    ),
    spec(
        "smismember",
        -3,
        READONLY | FAST,
        K1,
        "set",
        "6.2.0",
        "Returns the membership associated with the given elements for a set",
        smismember,
    ),
    spec(
        "scard",
        2,
        READONLY | FAST,
        K1,
        "set",
        "1.0.0",
        "Get the number of members in a set",
        scard,
    ),
    spec(
        "smembers",
        2,
        READONLY,
        K1,
        "set",
        "1.0.0",
        "Get all the members in a set",
        smembers,
    ),
    spec(
        "srandmember",
        -2,
        READONLY,
        K1,
        "set",
        "1.0.0",
        "Get one or multiple random members from a set",
        srandmember,
    ),
    spec(
        "spop",
        -2,
        WRITE | FAST,
        K1,
        "set",
        "1.0.0",
        "Remove and return one or multiple random members from a set",
        spop,
    ),
    spec(
        "smove",
        4,
        WRITE | FAST,
        K12,
        "set",
        "1.0.0",
        "Move a member from one set to another",
        smove,
    ),
    spec(
        "sinter",
        -2,
        READONLY,
        KALL,
        "set",
        "1.0.0",
        "Intersect multiple sets",
        sinter,
    ),
    spec(
        "sintercard",
        -3,
        READONLY,
        Keys::NumKeys { at: 1, also: None },
        "set",
        "7.0.0",
        "Intersect multiple sets and return the cardinality of the result",
        sintercard,
    ),
    spec(
        "sinterstore",
        -3,
        WRITE | DENYOOM,
        KSTORE,
        "set",
        "1.0.0",
        "Intersect multiple sets and store the resulting set in a key",
        sinterstore,
    ),
    spec(
        "sunion",
        -2,
        READONLY,
        KALL,
        "set",
        "1.0.0",
        "Add multiple sets",
        sunion,
    ),
    spec(
        "sunionstore",
        -3,
        WRITE | DENYOOM,
        KSTORE,
        "set",
        "1.0.0",
        "Add multiple sets and store the resulting set in a key",
        sunionstore,
    ),
    spec(
        "sdiff",
        -2,
        READONLY,
        KALL,
        "set",
        "1.0.0",
        "Subtract multiple sets",
        sdiff,
    ),
    spec(
        "sdiffstore",
        -3,
        WRITE | DENYOOM,
        KSTORE,
        "set",
        "1.0.0",
        "Subtract multiple sets and store the resulting set in a key",
        sdiffstore,
    ),
    spec(
        "sscan",
        -3,
        READONLY,
        K1,
        "set",
        "2.8.0",
        "Incrementally iterate Set elements",
        sscan,
    ),
];

thread_local! {
    static RNG: Cell<u64> = Cell::new(initial_seed());
}

fn initial_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let local = 0u8;
    nanos ^ (std::ptr::addr_of!(local) as u64).rotate_left(32)
}

/// wyrand: one multiply per number, good enough statistics for sampling.
fn random() -> u64 {
    RNG.with(|state| {
        let s = state.get().wrapping_add(0xa076_1d64_78bd_642f);
        state.set(s);
        let t = u128::from(s) * u128::from(s ^ 0xe703_7ed1_a0b4_28db);
        ((t >> 64) as u64) ^ (t as u64)
    })
}

fn fail(ctx: &mut Ctx<'_, '_>, e: SetError) {
    match e {
        SetError::WrongType => ctx.wrong_type(),
        SetError::OutOfMemory => ctx.oom(),
    }
}

#[inline]
fn reply_member(out: &mut ReplyWriter<'_>, m: Member<'_>) {
    match m {
        Member::Int(v) => out.bulk_integer(v),
        Member::Bytes(b) => out.bulk(b),
    }
}

/// The member's text (integers formatted).
fn member_text(m: Member<'_>) -> Vec<u8> {
    m.to_vec()
}

pub fn sadd(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now, key) = (ctx.db(), ctx.now_ms, args[1]);
    match set::add(ctx.shard(key), db, key, now, &args[2..]) {
        Ok(added) => {
            if added > 0 {
                ctx.touch(db, key);
            }
            ctx.out.integer(added as i64);
        }
        Err(e) => fail(ctx, e),
    }
}

pub fn srem(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now, key) = (ctx.db(), ctx.now_ms, args[1]);
    match set::remove(ctx.shard(key), db, key, now, &args[2..]) {
        Ok(removed) => {
            if removed > 0 {
                ctx.touch(db, key);
            }
            ctx.out.integer(removed as i64);
        }
        Err(e) => fail(ctx, e),
    }
}

pub fn sismember(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now, key) = (ctx.db(), ctx.now_ms, args[1]);
    match set::read(ctx.shard(key), db, key, now, |v| v.contains(args[2])) {
        Ok(found) => ctx.out.integer(i64::from(found == Some(true))),
        Err(e) => fail(ctx, e),
    }
}

pub fn smismember(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now, key) = (ctx.db(), ctx.now_ms, args[1]);
    let (shard, out) = ctx.shard_and_out(key);
    let result = set::read(shard, db, key, now, |v| {
        out.array_len(args.len() - 2);
        for m in &args[2..] {
            out.integer(i64::from(v.contains(m)));
        }
    });
    match result {
        Ok(Some(())) => {}
        Ok(None) => {
            ctx.out.array_len(args.len() - 2);
            for _ in 2..args.len() {
                ctx.out.integer(0);
            }
        }
        Err(e) => fail(ctx, e),
    }
}

pub fn scard(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now, key) = (ctx.db(), ctx.now_ms, args[1]);
    match set::read(ctx.shard(key), db, key, now, |v| v.len()) {
        Ok(len) => ctx.out.integer(len.unwrap_or(0) as i64),
        Err(e) => fail(ctx, e),
    }
}

pub fn smembers(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now, key) = (ctx.db(), ctx.now_ms, args[1]);
    let (shard, out) = ctx.shard_and_out(key);
    let result = set::read(shard, db, key, now, |v| {
        out.set_len(v.len());
        v.for_each(|m| reply_member(out, m));
    });
    match result {
        Ok(Some(())) => {}
        Ok(None) => ctx.out.set_len(0),
        Err(e) => fail(ctx, e),
    }
}

pub fn srandmember(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len() > 3 {
        return ctx.syntax_error();
    }
    let (db, now, key) = (ctx.db(), ctx.now_ms, args[1]);
    if args.len() == 2 {
        let (shard, out) = ctx.shard_and_out(key);
        let result = set::read(shard, db, key, now, |v| {
            if let Some(m) = v.random(random()) {
                reply_member(out, m);
            }
        });
        match result {
            Ok(Some(())) => {}
            Ok(None) => ctx.out.null(),
            Err(e) => fail(ctx, e),
        }
        return;
    }
    let Some(count) = parse_i64(args[2]) else {
        return ctx.not_integer();
    };
    if count == i64::MIN {
        return ctx.error(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        );
    }
    let (shard, out) = ctx.shard_and_out(key);
    let result = set::read(shard, db, key, now, |v| random_members(out, v, count));
    match result {
        Ok(Some(())) => {}
        Ok(None) => ctx.out.array_len(0),
        Err(e) => fail(ctx, e),
    }
}

/// SRANDMEMBER with a count, Redis's four cases: repeats allowed (negative count) or a single
/// pick; the whole set; most of the set (drop random members from a copy); a few members
/// (sample until that many distinct).
fn random_members(out: &mut ReplyWriter<'_>, v: SetView<'_>, count: i64) {
    let size = v.len();
    let wanted = count.unsigned_abs() as usize;
    if count == 0 {
        out.array_len(0);
    } else if count < 0 || count == 1 {
        out.array_len(wanted);
        for _ in 0..wanted {
            if let Some(m) = v.random(random()) {
                reply_member(out, m);
            }
        }
    } else if wanted >= size {
        out.array_len(size);
        v.for_each(|m| reply_member(out, m));
    } else if wanted * 3 > size {
        let mut all = v.members();
        // Bounded: one removal per round, `size - wanted` rounds.
        while all.len() > wanted {
            let i = (random() % all.len() as u64) as usize;
            all.swap_remove(i);
        }
        out.array_len(wanted);
        for m in all {
            reply_member(out, m);
        }
    } else {
        let mut picked: std::collections::HashSet<Member<'_>, foldhash::fast::RandomState> =
            std::collections::HashSet::with_capacity_and_hasher(
                wanted,
                foldhash::fast::RandomState::default(),
            );
        let mut order = Vec::with_capacity(wanted);
        // Terminates with probability 1: at most a third of the set is wanted, so each draw is
        // new with probability >= 2/3 (less for a lumpy page sample, still bounded away from 0).
        while order.len() < wanted {
            if let Some(m) = v.random(random())
                && picked.insert(m)
            {
                order.push(m);
            }
        }
        out.array_len(wanted);
        for m in order {
            reply_member(out, m);
        }
    }
}

pub fn spop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len() > 3 {
        return ctx.syntax_error();
    }
    let (db, now, key) = (ctx.db(), ctx.now_ms, args[1]);
    if args.len() == 2 {
        let (shard, out) = ctx.shard_and_out(key);
        match set::pop(shard, db, key, now, 1, &mut random, |m| {
            reply_member(out, m);
        }) {
            Ok(0) => ctx.out.null(),
            Ok(_) => ctx.touch(db, key),
            Err(e) => fail(ctx, e),
        }
        return;
    }
    let count = match parse_i64(args[2]) {
        Some(n) if n >= 0 => n as usize,
        _ => return ctx.error("ERR value is out of range, must be positive"),
    };
    let len = match set::read(ctx.shard(key), db, key, now, |v| v.len()) {
        Ok(Some(len)) => len,
        Ok(None) => return ctx.out.set_len(0),
        Err(e) => return fail(ctx, e),
    };
    if count == 0 {
        return ctx.out.set_len(0);
    }
    ctx.out.set_len(count.min(len));
    let (shard, out) = ctx.shard_and_out(key);
    match set::pop(shard, db, key, now, count, &mut random, |m| {
        reply_member(out, m);
    }) {
        Ok(_) => ctx.touch(db, key),
        Err(e) => fail(ctx, e),
    }
}

pub fn smove(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (src, dst, member) = (args[1], args[2], args[3]);
    let Some(src_kind) = ctx.shard(src).with_entry(db, src, now, |e| e.kind()) else {
        return ctx.out.integer(0);
    };
    let dst_kind = ctx.shard(dst).with_entry(db, dst, now, |e| e.kind());
    if src_kind != store::Kind::Set || dst_kind.is_some_and(|k| k != store::Kind::Set) {
        return ctx.wrong_type();
    }
    if src == dst {
        let found = set::read(ctx.shard(src), db, src, now, |v| v.contains(member));
        return ctx.out.integer(i64::from(found == Ok(Some(true))));
    }
    match set::remove(ctx.shard(src), db, src, now, &[member]) {
        Ok(0) => return ctx.out.integer(0),
        Ok(_) => ctx.touch(db, src),
        Err(e) => return fail(ctx, e),
    }
    match set::add(ctx.shard(dst), db, dst, now, &[member]) {
        Ok(_) => {
            ctx.touch(db, dst);
            ctx.out.integer(1);
        }
        Err(e) => fail(ctx, e),
    }
}

/// The sizes of the sets at `keys` (`None`: missing), or `Err` after replying WRONGTYPE.
fn sizes(ctx: &mut Ctx<'_, '_>, keys: &[&[u8]]) -> Result<Vec<Option<usize>>, ()> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut out = Vec::with_capacity(keys.len());
    for &key in keys {
        match set::read(ctx.shard(key), db, key, now, |v| v.len()) {
            Ok(len) => out.push(len),
            Err(e) => {
                fail(ctx, e);
                return Err(());
            }
        }
    }
    Ok(out)
}

/// The members of the set at `key` (empty when missing; the type was checked by `sizes`).
fn members_of(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Vec<Vec<u8>> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    set::read(ctx.shard(key), db, key, now, |v| v.to_vec())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Keeps the `candidates` that the set at `key` holds (`keep == true`) or does not hold.
fn filter_by(ctx: &mut Ctx<'_, '_>, key: &[u8], candidates: &mut Vec<Vec<u8>>, keep: bool) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let kept = set::read(ctx.shard(key), db, key, now, |v| {
        candidates.retain(|m| v.contains(m) == keep);
    });
    if !matches!(kept, Ok(Some(()))) && keep {
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
    let (db, now) = (ctx.db(), ctx.now_ms);
    let mut seen: std::collections::HashSet<Vec<u8>, foldhash::fast::RandomState> =
        std::collections::HashSet::default();
    let mut result = Vec::new();
    for &key in keys {
        let _ = set::read(ctx.shard(key), db, key, now, |v| {
            v.for_each(|m| {
                let text = member_text(m);
                if !seen.contains(&text) {
                    seen.insert(text.clone());
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
    let (db, now, dst) = (ctx.db(), ctx.now_ms, args[1]);
    let Ok(members) = compute(ctx, op, &args[2..]) else {
        return;
    };
    let shard = ctx.shard(dst);
    if members.is_empty() {
        if shard.remove(db, dst, now) {
            ctx.touch(db, dst);
        }
        return ctx.out.integer(0);
    }
    if set::store(shard, db, dst, &members, Ttl::Clear, now).is_err() {
        return ctx.oom();
    }
    ctx.touch(db, dst);
    ctx.out.integer(members.len() as i64);
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
    let Some(mut cursor) = super::keys::parse_cursor(args[2]) else {
        return ctx.error("ERR invalid cursor");
    };
    let (db, now, key) = (ctx.db(), ctx.now_ms, args[1]);
    match set::read(ctx.shard(key), db, key, now, |_| ()) {
        Ok(Some(())) => {}
        Ok(None) => {
            ctx.out.array_len(2);
            ctx.out.bulk(b"0");
            ctx.out.array_len(0);
            return;
        }
        Err(e) => return fail(ctx, e),
    }
    let mut glob = None;
    let mut count: i64 = 10;
    let mut i = 3;
    while i < args.len() {
        let more = i + 1 < args.len();
        if is(args[i], "count") && more {
            match parse_i64(args[i + 1]) {
                Some(n) if n >= 1 => count = n,
                Some(_) => return ctx.syntax_error(),
                None => return ctx.not_integer(),
            }
        } else if is(args[i], "match") && more {
            let g = store::glob::Glob::new(args[i + 1]);
            glob = (!g.is_everything()).then_some(g);
        } else {
            return ctx.syntax_error();
        }
        i += 2;
    }
    let mut found: Vec<Vec<u8>> = Vec::new();
    let _ = set::read(ctx.shard(key), db, key, now, |v| {
        if v.scans_whole() {
            v.for_each(|m| found.push(member_text(m)));
            cursor = 0;
            return;
        }
        let mut steps = 0i64;
        // Bounded: at most ten steps per requested element, as Redis's `maxiterations`.
        loop {
            cursor = v.scan_step(cursor, |m| found.push(member_text(m)));
            steps += 1;
            if cursor == 0 || found.len() as i64 >= count || steps >= count.saturating_mul(10) {
                break;
            }
        }
    });
    if let Some(g) = &glob {
        found.retain(|m| g.matches(m));
    }
    ctx.out.array_len(2);
    ctx.out.bulk(cursor.to_string().as_bytes());
    ctx.out.array_len(found.len());
    for m in &found {
        ctx.out.bulk(m);
    }
}
