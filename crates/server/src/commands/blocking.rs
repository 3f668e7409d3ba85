//! The blocking list and sorted-set commands: BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP,
//! BZPOPMIN, BZPOPMAX, BZMPOP.
//!
//! Each parses its timeout first (Redis's order of errors), then behaves as its non-blocking
//! twin on the first key that holds data; if none does, it blocks the client on all its keys
//! (`crate::blocking`), or replies a null array inside MULTI/EXEC, where nothing may block. When
//! a key receives data, `serve` runs the same pop for the first client blocked on it.
//!
//! None is written to the append-only file as it was sent (a replay could block, or pop
//! another key): each is written as the plain command it amounted to, on both paths, as
//! Redis 7.0 writes them (`t_list.c`, `t_zset.c`, `blocked.c`):
//!
//! ```text
//!  BLPOP/BRPOP           → LPOP|RPOP key               BLMPOP → LPOP|RPOP key <popped>
//!  BZPOPMIN/BZPOPMAX     → ZPOPMIN|ZPOPMAX key         BZMPOP → ZPOPMIN|ZPOPMAX key <popped>
//!  BRPOPLPUSH            → RPOPLPUSH src dst
//!  BLMOVE                → LMOVE src dst <wherefrom> <whereto>   (as sent when served at
//!                          once; `left`/`right` in lower case, Redis's shared words, when a
//!                          blocked client is served)
//! ```

use crate::blocking::{self, BlockOp};
use crate::command::{
    BLOCKING, COMMANDS, Ctx, DENYOOM, FAST, Keys, NOSCRIPT, READONLY, Spec, WRITE, table,
};
use crate::commands::{is, list, zset};
use store::Kind;

const KEYS_BUT_LAST: Keys = Keys::Range {
    first: 1,
    last: -2,
    step: 1,
};
const KEYS_12: Keys = Keys::Range {
    first: 1,
    last: 2,
    step: 1,
};
const KEYS_COUNTED: Keys = Keys::NumKeys { at: 2, also: None };

pub static LIST_COMMANDS: &[Spec] = table! {
    // name       arity, flags,                                 keys,          member, handler
    "blpop",      -3,    WRITE | NOSCRIPT | BLOCKING,           KEYS_BUT_LAST, 0,      blpop;
    "brpop",      -3,    WRITE | NOSCRIPT | BLOCKING,           KEYS_BUT_LAST, 0,      brpop;
    "brpoplpush", 4,     WRITE | DENYOOM | NOSCRIPT | BLOCKING, KEYS_12,       0,      brpoplpush;
    "blmove",     6,     WRITE | DENYOOM | NOSCRIPT | BLOCKING, KEYS_12,       0,      blmove;
    "blmpop",     -5,    WRITE | BLOCKING,                      KEYS_COUNTED,  0,      blmpop;
};

pub static ZSET_COMMANDS: &[Spec] = table! {
    // name     arity, flags,                              keys,          member, handler
    "bzpopmin", -3,    WRITE | NOSCRIPT | BLOCKING | FAST, KEYS_BUT_LAST, 0,      bzpopmin;
    "bzpopmax", -3,    WRITE | NOSCRIPT | BLOCKING | FAST, KEYS_BUT_LAST, 0,      bzpopmax;
    "bzmpop",   -5,    WRITE | BLOCKING,                   KEYS_COUNTED,  0,      bzmpop;
};

/// Silences the unused-import lint for flags only some builds use.
const _: u32 = READONLY;

/// The type of `key`'s value, if it exists.
fn kind_of(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Option<Kind> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    ctx.shard(key).kind(db, key, now)
}

/// Finds the first key holding a `want` value; `Err` after replying WRONGTYPE.
fn first_ready(ctx: &mut Ctx<'_, '_>, keys: &[&[u8]], want: Kind) -> Result<Option<usize>, ()> {
    for (i, &key) in keys.iter().enumerate() {
        let kind = kind_of(ctx, key);
        super::keys::expired_so_far(ctx);
        match kind {
            None => {}
            Some(k) if k == want => return Ok(Some(i)),
            Some(_) => {
                ctx.wrong_type();
                return Err(());
            }
        }
    }
    Ok(None)
}

/// Blocks on `keys`, or replies null when the client may not block (inside EXEC).
fn block_or_null(ctx: &mut Ctx<'_, '_>, keys: &[&[u8]], op: BlockOp, deadline: Option<u64>) {
    if ctx.client.in_exec {
        ctx.out.null_array();
        return;
    }
    blocking::block(ctx, keys, op, deadline);
}

fn pop_reply_list(ctx: &mut Ctx<'_, '_>, key: &[u8], values: &[Vec<u8>], counted: bool) {
    if counted {
        ctx.out.array_len(2);
        ctx.out.bulk(key);
        ctx.out.array_len(values.len());
        for v in values {
            ctx.out.bulk(v);
        }
    } else {
        ctx.out.array_len(2);
        ctx.out.bulk(key);
        ctx.out.bulk(&values[0]);
    }
}

fn pop_reply_zset(ctx: &mut Ctx<'_, '_>, key: &[u8], values: &[(Vec<u8>, f64)], counted: bool) {
    if counted {
        ctx.out.array_len(2);
        ctx.out.bulk(key);
        ctx.out.array_len(values.len());
        for (member, score) in values {
            ctx.out.array_len(2);
            ctx.out.bulk(member);
            ctx.out.double(*score);
        }
    } else {
        let (member, score) = &values[0];
        ctx.out.array_len(3);
        ctx.out.bulk(key);
        ctx.out.bulk(member);
        ctx.out.double(*score);
    }
}

/// Runs `op` for a client blocked on `key`, which just received data; false if `key` holds no
/// data of the right kind (the client stays blocked). The shards of `key` (and of a move's
/// destination) are locked by the caller.
pub fn serve(ctx: &mut Ctx<'_, '_>, key: &[u8], op: &BlockOp) -> bool {
    match op {
        BlockOp::ListPop { left, count } => {
            if kind_of(ctx, key) != Some(Kind::List) {
                return false;
            }
            let Some(values) = list::pop_for_blocked(ctx, key, *left, count.unwrap_or(1)) else {
                return false;
            };
            list::propagate_pop(ctx, key, *left, count.map(|_| values.len()));
            pop_reply_list(ctx, key, &values, count.is_some());
            true
        }
        BlockOp::ListMove {
            dst,
            from_left,
            to_left,
        } => {
            if kind_of(ctx, key) != Some(Kind::List) {
                return false;
            }
            if kind_of(ctx, dst).is_some_and(|k| k != Kind::List) {
                // Redis leaves the client blocked when the destination has the wrong type.
                return false;
            }
            match list::move_for_blocked(ctx, key, dst, *from_left, *to_left) {
                Ok(Some(value)) => {
                    propagate_served_move(ctx, key, dst, *from_left, *to_left);
                    ctx.out.bulk(&value);
                    true
                }
                _ => false,
            }
        }
        BlockOp::ZPop { max, count } => {
            if kind_of(ctx, key) != Some(Kind::ZSet) {
                return false;
            }
            let Some(values) = zset::pop_for_blocked(ctx, key, *max, count.unwrap_or(1)) else {
                return false;
            };
            zset::propagate_pop(ctx, key, *max, count.map(|_| values.len()));
            pop_reply_zset(ctx, key, &values, count.is_some());
            true
        }
    }
}

/// A served BRPOPLPUSH is written as `RPOPLPUSH src dst`, a served BLMOVE as
/// `LMOVE src dst left|right left|right`. Which of the two blocked is the client's last
/// command, as Redis asks `receiver->lastcmd`: the client registered it before its command
/// let go of the shards this serve holds, and runs nothing else while blocked. (The two
/// replay alike; only the words differ.)
fn propagate_served_move(
    ctx: &mut Ctx<'_, '_>,
    src: &[u8],
    dst: &[u8],
    from_left: bool,
    to_left: bool,
) {
    let last = ctx
        .client
        .shared
        .last_cmd
        .load(std::sync::atomic::Ordering::Relaxed);
    if last
        .checked_sub(1)
        .is_some_and(|i| COMMANDS[i].name == "brpoplpush")
    {
        return ctx.propagate_as(&[b"RPOPLPUSH", src, dst]);
    }
    let word = |left: bool| -> &'static [u8] { if left { b"left" } else { b"right" } };
    ctx.propagate_as(&[b"LMOVE", src, dst, word(from_left), word(to_left)]);
}

fn blocking_pop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], left: bool) {
    let Some(deadline) = blocking::parse_timeout(ctx, args[args.len() - 1]) else {
        return;
    };
    let keys = &args[1..args.len() - 1];
    let Ok(found) = first_ready(ctx, keys, Kind::List) else {
        return;
    };
    if let Some(i) = found
        && let Some(values) = list::pop_for_blocked(ctx, keys[i], left, 1)
    {
        list::propagate_pop(ctx, keys[i], left, None);
        pop_reply_list(ctx, keys[i], &values, false);
        return;
    }
    block_or_null(ctx, keys, BlockOp::ListPop { left, count: None }, deadline);
}

pub fn blpop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    blocking_pop(ctx, args, true);
}

pub fn brpop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    blocking_pop(ctx, args, false);
}

/// BRPOPLPUSH and BLMOVE: `written_as` is the command a move done at once is written as.
fn blocking_move(
    ctx: &mut Ctx<'_, '_>,
    (src, dst): (&[u8], &[u8]),
    (from_left, to_left): (bool, bool),
    timeout: &[u8],
    written_as: &[&[u8]],
) {
    let Some(deadline) = blocking::parse_timeout(ctx, timeout) else {
        return;
    };
    let Ok(found) = first_ready(ctx, &[src], Kind::List) else {
        return;
    };
    if found.is_some() {
        match list::move_for_blocked(ctx, src, dst, from_left, to_left) {
            Ok(Some(value)) => {
                ctx.propagate_as(written_as);
                ctx.out.bulk(&value);
            }
            Ok(None) => ctx.out.null(),
            Err(e) => ctx.store_error(e),
        }
        return;
    }
    if ctx.client.in_exec {
        // Redis's BLMOVE answers a null bulk (not a null array) when it may not block.
        ctx.out.null();
        return;
    }
    let op = BlockOp::ListMove {
        dst: dst.to_vec(),
        from_left,
        to_left,
    };
    blocking::block(ctx, &[src], op, deadline);
}

pub fn brpoplpush(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let written_as: [&[u8]; 3] = [b"RPOPLPUSH", args[1], args[2]];
    blocking_move(ctx, (args[1], args[2]), (false, true), args[3], &written_as);
}

/// LEFT / RIGHT.
fn side(arg: &[u8]) -> Option<bool> {
    if is(arg, "left") {
        Some(true)
    } else if is(arg, "right") {
        Some(false)
    } else {
        None
    }
}

pub fn blmove(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (Some(from_left), Some(to_left)) = (side(args[3]), side(args[4])) else {
        return ctx.syntax_error();
    };
    // The directions as they were sent, case and all (Redis keeps `c->argv[3]`, `[4]`).
    let written_as: [&[u8]; 5] = [b"LMOVE", args[1], args[2], args[3], args[4]];
    blocking_move(
        ctx,
        (args[1], args[2]),
        (from_left, to_left),
        args[5],
        &written_as,
    );
}

/// BLMPOP/BZMPOP's parsed arguments: keys, first side (LEFT/MIN), count.
type MPop<'a> = (Vec<&'a [u8]>, bool, Option<usize>);

/// Parses `numkeys key… <where> [COUNT n]` from `args[2..]` (BLMPOP/BZMPOP): the keys, the
/// direction word and the count. Replies and returns `None` on error, as Redis's
/// `mpopGenericCommand` does.
fn parse_mpop<'a>(
    ctx: &mut Ctx<'_, '_>,
    args: &[&'a [u8]],
    words: (&str, &str),
) -> Option<MPop<'a>> {
    let numkeys = super::args::parse_i64(args[2]);
    let Some(numkeys) = numkeys.filter(|&n| n > 0) else {
        ctx.error("ERR numkeys should be greater than 0");
        return None;
    };
    let numkeys = numkeys as usize;
    let where_at = 3 + numkeys;
    if numkeys > args.len() - 3 || where_at >= args.len() {
        ctx.syntax_error();
        return None;
    }
    let keys = args[3..where_at].to_vec();
    let first = if is(args[where_at], words.0) {
        true
    } else if is(args[where_at], words.1) {
        false
    } else {
        ctx.syntax_error();
        return None;
    };
    let mut count = None;
    let mut i = where_at + 1;
    while i < args.len() {
        if is(args[i], "count") && i + 1 < args.len() && count.is_none() {
            match super::args::parse_i64(args[i + 1]) {
                Some(n) if n > 0 => count = Some(n as usize),
                _ => {
                    ctx.error("ERR count should be greater than 0");
                    return None;
                }
            }
            i += 2;
        } else {
            ctx.syntax_error();
            return None;
        }
    }
    Some((keys, first, Some(count.unwrap_or(1))))
}

pub fn blmpop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    // Redis checks numkeys, the direction and COUNT before the timeout.
    let Some((keys, left, count)) = parse_mpop(ctx, args, ("left", "right")) else {
        return;
    };
    let Some(deadline) = blocking::parse_timeout(ctx, args[1]) else {
        return;
    };
    let Ok(found) = first_ready(ctx, &keys, Kind::List) else {
        return;
    };
    if let Some(i) = found
        && let Some(values) = list::pop_for_blocked(ctx, keys[i], left, count.unwrap_or(1))
    {
        list::propagate_pop(ctx, keys[i], left, Some(values.len()));
        pop_reply_list(ctx, keys[i], &values, true);
        return;
    }
    block_or_null(ctx, &keys, BlockOp::ListPop { left, count }, deadline);
}

fn blocking_zpop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], max: bool) {
    let Some(deadline) = blocking::parse_timeout(ctx, args[args.len() - 1]) else {
        return;
    };
    let keys = &args[1..args.len() - 1];
    let Ok(found) = first_ready(ctx, keys, Kind::ZSet) else {
        return;
    };
    if let Some(i) = found
        && let Some(values) = zset::pop_for_blocked(ctx, keys[i], max, 1)
    {
        zset::propagate_pop(ctx, keys[i], max, None);
        pop_reply_zset(ctx, keys[i], &values, false);
        return;
    }
    block_or_null(ctx, keys, BlockOp::ZPop { max, count: None }, deadline);
}

pub fn bzpopmin(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    blocking_zpop(ctx, args, false);
}

pub fn bzpopmax(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    blocking_zpop(ctx, args, true);
}

pub fn bzmpop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some((keys, min, count)) = parse_mpop(ctx, args, ("min", "max")) else {
        return;
    };
    let Some(deadline) = blocking::parse_timeout(ctx, args[1]) else {
        return;
    };
    let max = !min;
    let Ok(found) = first_ready(ctx, &keys, Kind::ZSet) else {
        return;
    };
    if let Some(i) = found
        && let Some(values) = zset::pop_for_blocked(ctx, keys[i], max, count.unwrap_or(1))
    {
        zset::propagate_pop(ctx, keys[i], max, Some(values.len()));
        pop_reply_zset(ctx, keys[i], &values, true);
        return;
    }
    block_or_null(ctx, &keys, BlockOp::ZPop { max, count }, deadline);
}
