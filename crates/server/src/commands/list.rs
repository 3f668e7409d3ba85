//! List commands (Redis's `t_list.c`): pushes and pops at both ends, ranges, LINDEX/LSET,
//! LINSERT, LREM, LTRIM, LPOS, the moves (RPOPLPUSH, LMOVE) and LMPOP.
//!
//! Lists are `store::List` (a deque of packed chunks); every read replies straight from the
//! chunk bytes through `Shard::read::<List>`, so LRANGE copies each element once, into the reply.
//! Writes go through `Shard::update::<List>`, which creates a list and deletes an emptied one,
//! as Redis never keeps empty collections. Argument errors are checked in the order Redis checks
//! them (some before the key lookup, some after), since that decides which error a bad command
//! gets.
//!
//! The blocking variants (BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP) are registered by the
//! blocking layer, which calls `pop_for_blocked` and `move_for_blocked` when a key it waits on
//! becomes ready.
//!
//! Keyspace events, as `t_list.c` sends them: `lpush`/`rpush` after `new` when the push created
//! the list; `lpop`/`rpop`, `ltrim`, `lrem`, each followed by `del` when the list emptied;
//! `lset`, `linsert`; LMOVE's push on the destination (and its `new`) before its pop on the
//! source (and its `del`), as `lmoveGenericCommand` sends them; `keymiss` when LLEN, LINDEX,
//! LRANGE or LPOS find no key. The blocking pops send what their plain twins send, whether they
//! pop at once or serve a blocked client.
//!
//! LMPOP and the blocking pops are written to the append-only file as the plain pop they
//! amounted to (`propagate_pop`); the other list commands are deterministic and written as sent.

use super::args::{decimal, is, parse_i64};
use super::keys::{created, keymiss};
use crate::command::{
    Ctx, DENYOOM, FAST, K1, K12, Keys, READONLY, Spec, WRITE, arity_error, table,
};
use crate::notify::class;
use resp::ReplyWriter;
use store::{Edit, List, ListView, StoreError};

pub static COMMANDS: &[Spec] = table! {
    // name      arity, flags,                  keys,       member, handler
    "lpush",     -3,    WRITE | DENYOOM | FAST, K1,         0,      lpush;
    "rpush",     -3,    WRITE | DENYOOM | FAST, K1,         0,      rpush;
    "lpushx",    -3,    WRITE | DENYOOM | FAST, K1,         0,      lpushx;
    "rpushx",    -3,    WRITE | DENYOOM | FAST, K1,         0,      rpushx;
    "lpop",      -2,    WRITE | FAST,           K1,         0,      lpop;
    "rpop",      -2,    WRITE | FAST,           K1,         0,      rpop;
    "llen",      2,     READONLY | FAST,        K1,         0,      llen;
    "lindex",    3,     READONLY,               K1,         0,      lindex;
    "lset",      4,     WRITE | DENYOOM,        K1,         0,      lset;
    "lrange",    4,     READONLY,               K1,         0,      lrange;
    "ltrim",     4,     WRITE,                  K1,         0,      ltrim;
    "lrem",      4,     WRITE,                  K1,         0,      lrem;
    "linsert",   5,     WRITE | DENYOOM,        K1,         0,      linsert;
    "lpos",      -3,    READONLY,               K1,         0,      lpos;
    "rpoplpush", 3,     WRITE | DENYOOM,        K12,        0,      rpoplpush;
    "lmove",     5,     WRITE | DENYOOM,        K12,        0,      lmove;
    "lmpop",     -4,    WRITE,                  LMPOP_KEYS, 0,      lmpop;
};

/// Runs `f` on the list at `key` and the reply writer: `Ok(None)` when the key is missing.
fn read<R>(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    f: impl FnOnce(ListView<'_>, &mut ReplyWriter<'_>) -> R,
) -> Result<Option<R>, StoreError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (shard, out) = ctx.shard_and_out(key);
    shard.read::<List, _>(db, key, now, |list| f(list, out))
}

/// Runs `f` on the list at `key` for writing (created when `create`): `Ok(None)` when the key is
/// missing and not created. An emptied list is deleted.
fn write<R>(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    create: bool,
    f: impl FnOnce(&mut Edit<'_, List>, &mut ReplyWriter<'_>) -> R,
) -> Result<Option<R>, StoreError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (shard, out) = ctx.shard_and_out(key);
    shard.update::<List, _>(db, key, now, create, |list| Ok(f(list, out)))
}

/// Whether `key` holds a list: `Ok(false)` when it is missing, `Err(WrongType)` when it holds
/// another type (LMOVE checks its source, then its destination, before popping).
fn list_or_missing(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Result<bool, StoreError> {
    read(ctx, key, |_, _| ()).map(|found| found.is_some())
}

/// Pushes `values` at one end of the list at `key`, creating it unless `only_existing`.
/// Returns the new length (0 when `only_existing` and the key is missing).
fn push_values(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    values: &[&[u8]],
    left: bool,
    only_existing: bool,
) -> Result<usize, StoreError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (shard, _) = ctx.shard_and_out(key);
    let pushed = match shard.push_list_in_place(db, key, now, left, values) {
        Some(len) => Some((len, false)),
        None => write(ctx, key, !only_existing, |list, _| {
            // A list being created starts empty; a stored one never is.
            let was_new = list.is_empty();
            for v in values {
                if left {
                    list.push_front(v);
                } else {
                    list.push_back(v);
                }
            }
            (list.len(), was_new)
        })?,
    };
    let Some((len, was_new)) = pushed else {
        return Ok(0);
    };
    ctx.touch(db, key);
    if was_new {
        created(ctx, key);
    }
    ctx.notify(class::LIST, if left { "lpush" } else { "rpush" }, key);
    ctx.signal_ready(db, key);
    Ok(len)
}

fn push(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], left: bool, only_existing: bool) {
    match push_values(ctx, args[1], &args[2..], left, only_existing) {
        Ok(len) => ctx.out.integer(len as i64),
        Err(e) => ctx.store_error(e),
    }
}

pub fn lpush(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    push(ctx, args, true, false);
}

pub fn rpush(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    push(ctx, args, false, false);
}

pub fn lpushx(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    push(ctx, args, true, true);
}

pub fn rpushx(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    push(ctx, args, false, true);
}

/// Pops up to `count` elements from one end of the list, writing them as bulk strings (the
/// caller wrote the array header, or wants a single bulk).
fn pop_into(list: &mut Edit<'_, List>, out: &mut ReplyWriter<'_>, left: bool, count: usize) {
    for _ in 0..count {
        let Some(v) = list.end(left) else { break };
        out.bulk(v);
        list.pop_end(left);
    }
}

/// The events of a pop that took elements from `key` (Redis's `listElementsRemoved`): `lpop` or
/// `rpop`, then `del` when the list is now empty (the store deleted it).
fn notify_popped(ctx: &mut Ctx<'_, '_>, key: &[u8], left: bool, emptied: bool) {
    ctx.notify(class::LIST, if left { "lpop" } else { "rpop" }, key);
    if emptied {
        ctx.notify(class::GENERIC, "del", key);
    }
}

/// Parses a count argument that must be ≥ 0 (`getPositiveLongFromObjectOrReply`).
fn positive(ctx: &mut Ctx<'_, '_>, arg: &[u8], message: &str) -> Option<usize> {
    match parse_i64(arg) {
        Some(n) if n >= 0 => Some(n as usize),
        _ => {
            ctx.error(message);
            None
        }
    }
}

fn pop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], left: bool) {
    let name = if left { "lpop" } else { "rpop" };
    if args.len() > 3 {
        return ctx.error(&arity_error(name));
    }
    let count = match args.get(2) {
        None => None,
        Some(arg) => match positive(ctx, arg, "ERR value is out of range, must be positive") {
            Some(n) => Some(n),
            None => return,
        },
    };
    let key = args[1];
    if count.is_none() {
        let (db, now) = (ctx.db(), ctx.now_ms);
        let (shard, out) = ctx.shard_and_out(key);
        if shard
            .pop_list_in_place(db, key, now, left, |v| out.bulk(v))
            .is_some()
        {
            ctx.touch(db, key);
            return notify_popped(ctx, key, left, false);
        }
    }
    let result = write(ctx, key, false, |list, out| {
        match count {
            None => pop_into(list, out, left, 1),
            Some(n) => {
                let n = n.min(list.len());
                out.array_len(n);
                pop_into(list, out, left, n);
            }
        }
        list.is_empty()
    });
    match result {
        Err(e) => ctx.store_error(e),
        Ok(None) if count.is_some() => ctx.out.null_array(),
        Ok(None) => ctx.out.null(),
        Ok(Some(_)) if count == Some(0) => {}
        Ok(Some(emptied)) => {
            ctx.touch(ctx.db(), key);
            notify_popped(ctx, key, left, emptied);
        }
    }
}

pub fn lpop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    pop(ctx, args, true);
}

pub fn rpop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    pop(ctx, args, false);
}

/// For the blocking pops: pops up to `count` elements from the `left` (else right) end of the
/// list at `key`, deleting the key when it empties, touching it and sending the pop's events.
/// `None` when the key is missing or not a list (the caller has checked the type).
pub fn pop_for_blocked(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    left: bool,
    count: usize,
) -> Option<Vec<Vec<u8>>> {
    let (items, emptied) = write(ctx, key, false, |list, _| {
        let mut items = Vec::with_capacity(count.min(list.len()));
        while items.len() < count {
            let Some(v) = list.end(left) else { break };
            items.push(v.to_vec());
            list.pop_end(left);
        }
        (items, list.is_empty())
    })
    .ok()
    .flatten()?;
    if items.is_empty() {
        return None;
    }
    ctx.touch(ctx.db(), key);
    notify_popped(ctx, key, left, emptied);
    Some(items)
}

/// LMPOP, BLMPOP, BLPOP and BRPOP are written as the plain pop they amounted to, as Redis's
/// `mpopGenericCommand`, `blockingPopGenericCommand` and `serveClientBlockedOnList` write
/// them: `LPOP|RPOP key`, or `LPOP|RPOP key <count>` with the number of elements popped for
/// the M forms. A replay then names the one key that was popped and can never block.
pub fn propagate_pop(ctx: &mut Ctx<'_, '_>, key: &[u8], left: bool, count: Option<usize>) {
    let name: &[u8] = if left { b"LPOP" } else { b"RPOP" };
    match count {
        Some(n) => ctx.propagate_as(&[name, key, &decimal(n as i64)]),
        None => ctx.propagate_as(&[name, key]),
    }
}

pub fn llen(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    match read(ctx, args[1], |list, _| list.len()) {
        Ok(Some(len)) => ctx.out.integer(len as i64),
        Ok(None) => {
            ctx.out.integer(0);
            keymiss(ctx, args[1]);
        }
        Err(e) => ctx.store_error(e),
    }
}

/// A list index (negative counts from the tail) resolved against `len`.
fn resolve(index: i64, len: usize) -> Option<usize> {
    let i = if index < 0 { len as i64 + index } else { index };
    (0..len as i64).contains(&i).then_some(i as usize)
}

pub fn lindex(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let index = parse_i64(args[2]);
    let result = read(ctx, args[1], |list, out| {
        let index = index?;
        match resolve(index, list.len()).and_then(|i| list.get(i)) {
            Some(v) => out.bulk(v),
            None => out.null(),
        }
        Some(())
    });
    match result {
        Err(e) => ctx.store_error(e),
        Ok(None) => {
            ctx.out.null();
            keymiss(ctx, args[1]);
        }
        Ok(Some(None)) => ctx.not_integer(),
        Ok(Some(Some(()))) => {}
    }
}

pub fn lset(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (key, value) = (args[1], args[3]);
    let index = parse_i64(args[2]);
    let result = write(ctx, key, false, |list, _| {
        let index = index?;
        Some(resolve(index, list.len()).is_some_and(|i| list.set(i, value)))
    });
    match result {
        Err(e) => ctx.store_error(e),
        Ok(None) => ctx.error("ERR no such key"),
        Ok(Some(None)) => ctx.not_integer(),
        Ok(Some(Some(false))) => ctx.error("ERR index out of range"),
        Ok(Some(Some(true))) => {
            ctx.touch(ctx.db(), key);
            ctx.notify(class::LIST, "lset", key);
            ctx.ok();
        }
    }
}

/// Redis's range clamping (`addListRangeReply`, LTRIM): the inclusive range `start..=end` of a
/// list of `len`, or `None` when it is empty.
fn clamp_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { len + start } else { start }.max(0);
    let end = if end < 0 { len + end } else { end };
    if start > end || start >= len {
        return None;
    }
    Some((start as usize, end.min(len - 1) as usize))
}

/// Parses the two integer arguments of LRANGE/LTRIM, replying on error.
fn two_ints(ctx: &mut Ctx<'_, '_>, a: &[u8], b: &[u8]) -> Option<(i64, i64)> {
    let parsed = parse_i64(a).zip(parse_i64(b));
    if parsed.is_none() {
        ctx.not_integer();
    }
    parsed
}

pub fn lrange(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some((start, end)) = two_ints(ctx, args[2], args[3]) else {
        return;
    };
    let result = read(ctx, args[1], |list, out| {
        match clamp_range(start, end, list.len()) {
            None => out.array_len(0),
            Some((from, to)) => {
                out.array_len(to - from + 1);
                for v in list.iter_from(from).take(to - from + 1) {
                    out.bulk(v);
                }
            }
        }
    });
    match result {
        Err(e) => ctx.store_error(e),
        Ok(None) => {
            ctx.out.array_len(0);
            keymiss(ctx, args[1]);
        }
        Ok(Some(())) => {}
    }
}

pub fn ltrim(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some((start, end)) = two_ints(ctx, args[2], args[3]) else {
        return;
    };
    let key = args[1];
    let result = write(ctx, key, false, |list, _| {
        let keep = clamp_range(start, end, list.len());
        list.trim(keep);
        list.is_empty()
    });
    match result {
        Err(e) => ctx.store_error(e),
        Ok(None) => ctx.ok(),
        Ok(Some(emptied)) => {
            ctx.touch(ctx.db(), key);
            // Sent even when nothing was trimmed, as Redis does.
            ctx.notify(class::LIST, "ltrim", key);
            if emptied {
                ctx.notify(class::GENERIC, "del", key);
            }
            ctx.ok();
        }
    }
}

pub fn lrem(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(count) = parse_i64(args[2]) else {
        return ctx.not_integer();
    };
    let (key, value) = (args[1], args[3]);
    let result = write(ctx, key, false, |list, _| {
        let removed = list.remove_matching(value, count.unsigned_abs() as usize, count < 0);
        (removed, list.is_empty())
    });
    match result {
        Err(e) => ctx.store_error(e),
        Ok(None) => ctx.out.integer(0),
        Ok(Some((removed, emptied))) => {
            if removed > 0 {
                ctx.touch(ctx.db(), key);
                ctx.notify(class::LIST, "lrem", key);
            }
            if emptied {
                ctx.notify(class::GENERIC, "del", key);
            }
            ctx.out.integer(removed as i64);
        }
    }
}

pub fn linsert(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let after = if is(args[2], "after") {
        true
    } else if is(args[2], "before") {
        false
    } else {
        return ctx.syntax_error();
    };
    let (key, pivot, value) = (args[1], args[3], args[4]);
    let result = write(ctx, key, false, |list, _| {
        let at = list.iter_from(0).position(|e| e == pivot)?;
        list.insert(at + usize::from(after), value);
        Some(list.len())
    });
    match result {
        Err(e) => ctx.store_error(e),
        Ok(None) => ctx.out.integer(0),
        Ok(Some(None)) => ctx.out.integer(-1),
        Ok(Some(Some(len))) => {
            let db = ctx.db();
            ctx.touch(db, key);
            ctx.notify(class::LIST, "linsert", key);
            ctx.signal_ready(db, key);
            ctx.out.integer(len as i64);
        }
    }
}

/// LPOS options.
struct Lpos {
    rank: i64,
    /// `None`: no COUNT (reply a single index); `Some(0)`: all matches.
    count: Option<usize>,
    maxlen: usize,
}

fn lpos_options(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Option<Lpos> {
    let mut o = Lpos {
        rank: 1,
        count: None,
        maxlen: 0,
    };
    let mut j = 3;
    while j < args.len() {
        let more = j + 1 < args.len();
        if is(args[j], "rank") && more {
            j += 1;
            let Some(rank) = parse_i64(args[j]) else {
                ctx.not_integer();
                return None;
            };
            if rank == 0 {
                ctx.error(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the \
                     second ... or use negative to start from the end of the list",
                );
                return None;
            }
            o.rank = rank;
        } else if is(args[j], "count") && more {
            j += 1;
            o.count = Some(positive(ctx, args[j], "ERR COUNT can't be negative")?);
        } else if is(args[j], "maxlen") && more {
            j += 1;
            o.maxlen = positive(ctx, args[j], "ERR MAXLEN can't be negative")?;
        } else {
            ctx.syntax_error();
            return None;
        }
        j += 1;
    }
    Some(o)
}

/// The indexes LPOS reports, as `lposCommand` finds them (its arithmetic wraps as C's does for
/// RANK -9223372036854775808).
fn lpos_scan(list: ListView<'_>, value: &[u8], o: &Lpos) -> Vec<i64> {
    let from_tail = o.rank < 0;
    let rank = if from_tail {
        o.rank.wrapping_neg()
    } else {
        o.rank
    };
    let len = list.len();
    let elements: Box<dyn Iterator<Item = &[u8]>> = if from_tail {
        Box::new(list.rev_from(len.saturating_sub(1)))
    } else {
        Box::new(list.iter_from(0))
    };
    let mut found = Vec::new();
    let mut matches: i64 = 0;
    for (index, e) in elements.enumerate() {
        if o.maxlen != 0 && index >= o.maxlen {
            break;
        }
        if e != value {
            continue;
        }
        matches += 1;
        if matches < rank {
            continue;
        }
        found.push(if from_tail {
            (len - index - 1) as i64
        } else {
            index as i64
        });
        match o.count {
            None => break,
            Some(0) => {}
            Some(c) => {
                if matches.wrapping_sub(rank).wrapping_add(1) >= c as i64 {
                    break;
                }
            }
        }
    }
    found
}

pub fn lpos(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(o) = lpos_options(ctx, args) else {
        return;
    };
    let found = read(ctx, args[1], |list, _| lpos_scan(list, args[2], &o));
    if matches!(found, Ok(None)) {
        keymiss(ctx, args[1]);
    }
    match (found, o.count) {
        (Err(e), _) => ctx.store_error(e),
        (Ok(None), Some(_)) => ctx.out.array_len(0),
        (Ok(None), None) => ctx.out.null(),
        (Ok(Some(found)), Some(_)) => {
            ctx.out.array_len(found.len());
            for i in found {
                ctx.out.integer(i);
            }
        }
        (Ok(Some(found)), None) => match found.first() {
            Some(&i) => ctx.out.integer(i),
            None => ctx.out.null(),
        },
    }
}

/// The LMOVE core: pops from one end of `src` and pushes at one end of `dst`, returning the
/// element (`None` when `src` is missing). Deletes `src` when it empties; touches both keys,
/// sends the events and signals `dst` ready. Used by LMOVE, RPOPLPUSH and the blocking
/// BLMOVE/BRPOPLPUSH.
pub fn move_for_blocked(
    ctx: &mut Ctx<'_, '_>,
    src: &[u8],
    dst: &[u8],
    from_left: bool,
    to_left: bool,
) -> Result<Option<Vec<u8>>, StoreError> {
    // Redis replies nil for a missing source before it looks at the destination (a lookup
    // that may expire it: the `expired` events come in that order too).
    if !list_or_missing(ctx, src)? {
        return Ok(None);
    }
    let dst_ok = list_or_missing(ctx, dst);
    let popped = write(ctx, src, false, |list, _| {
        if dst_ok.is_err() {
            return None;
        }
        let value = list.end(from_left)?.to_vec();
        list.pop_end(from_left);
        if src == dst {
            if to_left {
                list.push_front(&value);
            } else {
                list.push_back(&value);
            }
        }
        Some((value, list.is_empty()))
    })?;
    let Some(popped) = popped else {
        return Ok(None);
    };
    let Some((value, emptied)) = popped else {
        return Err(StoreError::WrongType);
    };
    let db = ctx.db();
    ctx.touch(db, src);
    // Redis pushes on the destination (`new`, `lpush`/`rpush`) before it sends the source's
    // pop (and `del`); the store popped first, which no event shows.
    if src == dst {
        ctx.notify(class::LIST, if to_left { "lpush" } else { "rpush" }, dst);
        ctx.signal_ready(db, dst);
    } else {
        push_values(ctx, dst, &[&value], to_left, false)?;
    }
    notify_popped(ctx, src, from_left, emptied);
    Ok(Some(value))
}

fn lmove_reply(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], from_left: bool, to_left: bool) {
    match move_for_blocked(ctx, args[1], args[2], from_left, to_left) {
        Err(e) => ctx.store_error(e),
        Ok(None) => ctx.out.null(),
        Ok(Some(v)) => ctx.out.bulk(&v),
    }
}

pub fn rpoplpush(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    lmove_reply(ctx, args, false, true);
}

/// LEFT → true, RIGHT → false (`getListPositionFromObjectOrReply`), replying on error.
fn side(ctx: &mut Ctx<'_, '_>, arg: &[u8]) -> Option<bool> {
    if is(arg, "left") {
        Some(true)
    } else if is(arg, "right") {
        Some(false)
    } else {
        ctx.syntax_error();
        None
    }
}

pub fn lmove(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(from_left) = side(ctx, args[3]) else {
        return;
    };
    let Some(to_left) = side(ctx, args[4]) else {
        return;
    };
    lmove_reply(ctx, args, from_left, to_left);
}

pub fn lmpop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let numkeys = match parse_i64(args[1]) {
        Some(n) if n >= 1 => n as usize,
        _ => return ctx.error("ERR numkeys should be greater than 0"),
    };
    let where_at = match numkeys.checked_add(2) {
        Some(at) if at < args.len() => at,
        _ => return ctx.syntax_error(),
    };
    let Some(left) = side(ctx, args[where_at]) else {
        return;
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < args.len() {
        if count.is_none() && is(args[j], "count") && j + 1 < args.len() {
            j += 1;
            match parse_i64(args[j]) {
                Some(n) if n >= 1 => count = Some(n as usize),
                _ => return ctx.error("ERR count should be greater than 0"),
            }
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    let count = count.unwrap_or(1);
    for &key in &args[2..where_at] {
        let result = write(ctx, key, false, |list, out| {
            let n = count.min(list.len());
            out.array_len(2);
            out.bulk(key);
            out.array_len(n);
            pop_into(list, out, left, n);
            (n, list.is_empty())
        });
        match result {
            Err(e) => return ctx.store_error(e),
            Ok(None) => super::keys::expired_so_far(ctx),
            Ok(Some((n, emptied))) => {
                ctx.touch(ctx.db(), key);
                notify_popped(ctx, key, left, emptied);
                return propagate_pop(ctx, key, left, Some(n));
            }
        }
    }
    ctx.out.null_array();
}

const LMPOP_KEYS: Keys = Keys::NumKeys { at: 1, also: None };
