//! The pops of a sorted set: ZPOPMIN, ZPOPMAX and ZMPOP, and the helpers the blocking pops
//! (BZPOPMIN, BZPOPMAX, BZMPOP, `commands/blocking.rs`) build on. ZMPOP and the blocking pops
//! are written to the append-only file as the ZPOPMIN/ZPOPMAX they amounted to (`propagate_pop`).

use super::{notify_removed, parse_long_in, reply_score};
use crate::command::Ctx;
use crate::commands::args::{decimal, is};
use resp::{Protocol, ReplyWriter};

/// Pops up to `count` entries from the zset at `key` (lowest first, or highest with `max`),
/// deleting the key when emptied, touching it and sending the pop's events; `None` if the key is
/// missing or not a zset.
/// For the blocking pops (BZPOPMIN, BZPOPMAX, BZMPOP), which reply with `reply_popped`.
pub fn pop_for_blocked(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    max: bool,
    count: usize,
) -> Option<Vec<(Vec<u8>, f64)>> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let popped = ctx
        .shard(key)
        .update::<store::ZSet, _>(db, key, now, false, |z| {
            let mut v = Vec::new();
            for _ in 0..count {
                match z.pop(max, |s, m| (m.to_vec(), s)) {
                    Some(e) => v.push(e),
                    None => break,
                }
            }
            Ok((v, z.is_empty()))
        })
        .ok()
        .flatten()?;
    let (popped, emptied) = popped;
    if !popped.is_empty() {
        ctx.touch(db, key);
        notify_removed(ctx, key, pop_event(max), emptied);
    }
    Some(popped)
}

/// The event of a pop from the low or (`max`) high end.
fn pop_event(max: bool) -> &'static str {
    if max { "zpopmax" } else { "zpopmin" }
}

/// ZMPOP, BZMPOP, BZPOPMIN and BZPOPMAX are written as the plain pop they amounted to, as
/// Redis's `genericZpopCommand`, `blockingGenericZpopCommand` and
/// `serveClientsBlockedOnSortedSetKey` write them: `ZPOPMIN|ZPOPMAX key`, or
/// `ZPOPMIN|ZPOPMAX key <count>` with the number of entries popped for the M forms. A replay
/// then names the one key that was popped and can never block.
pub fn propagate_pop(ctx: &mut Ctx<'_, '_>, key: &[u8], max: bool, count: Option<usize>) {
    let name: &[u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
    match count {
        Some(n) => ctx.propagate_as(&[name, key, &decimal(n as i64)]),
        None => ctx.propagate_as(&[name, key]),
    }
}

/// Writes popped entries as ZPOPMIN does: member then score for each, each pair in its own
/// 2-array when `nested` (ZPOPMIN with COUNT in RESP3, ZMPOP); the caller writes the enclosing
/// array header.
pub fn reply_popped(out: &mut ReplyWriter<'_>, entries: &[(Vec<u8>, f64)], nested: bool) {
    for (m, s) in entries {
        if nested {
            out.array_len(2);
        }
        out.bulk(m);
        reply_score(out, *s);
    }
}

fn zpop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], max: bool) {
    if args.len() > 3 {
        return ctx.syntax_error();
    }
    let mut count: i64 = -1;
    if args.len() == 3 {
        match parse_long_in(
            ctx,
            args[2],
            0,
            i64::MAX,
            Some("ERR value is out of range, must be positive"),
        ) {
            Some(c) => count = c,
            None => return,
        }
    }
    let key = args[1];
    let nested = ctx.out.protocol() == Protocol::Resp3 && count != -1;
    let result = ctx.write::<store::ZSet, _>(key, false, |z, out| {
        if count == 0 {
            out.array_len(0);
            return Ok((0, false));
        }
        let n = z.len().min(if count == -1 { 1 } else { count as usize });
        out.array_len(if nested { n } else { n * 2 });
        for _ in 0..n {
            z.pop(max, |s, m| {
                if nested {
                    out.array_len(2);
                }
                out.bulk(m);
                reply_score(out, s);
            });
        }
        Ok((n, z.is_empty()))
    });
    match result {
        Some(None) => ctx.out.array_len(0),
        Some(Some((n, emptied))) if n > 0 => {
            ctx.touch(ctx.db(), key);
            notify_removed(ctx, key, pop_event(max), emptied);
        }
        None | Some(Some(_)) => {}
    }
}

pub fn zpopmin(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    zpop(ctx, args, false);
}

pub fn zpopmax(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    zpop(ctx, args, true);
}

pub fn zmpop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(numkeys) = parse_long_in(
        ctx,
        args[1],
        1,
        i64::MAX,
        Some("ERR numkeys should be greater than 0"),
    ) else {
        return;
    };
    let where_at = 2usize.saturating_add(usize::try_from(numkeys).unwrap_or(usize::MAX));
    if where_at >= args.len() {
        return ctx.syntax_error();
    }
    let max = if is(args[where_at], "min") {
        false
    } else if is(args[where_at], "max") {
        true
    } else {
        return ctx.syntax_error();
    };
    let mut count: i64 = -1;
    let mut j = where_at + 1;
    while j < args.len() {
        if count == -1 && is(args[j], "count") && j + 1 < args.len() {
            j += 1;
            match parse_long_in(
                ctx,
                args[j],
                1,
                i64::MAX,
                Some("ERR count should be greater than 0"),
            ) {
                Some(c) => count = c,
                None => return,
            }
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    let count = if count == -1 { 1 } else { count as usize };
    for key in &args[2..where_at] {
        match ctx.read::<store::ZSet, _>(key, |_, _| ()) {
            None => return,
            Some(None) => crate::commands::keys::expired_so_far(ctx),
            Some(Some(())) => {
                let popped = pop_for_blocked(ctx, key, max, count).unwrap_or_default();
                if !popped.is_empty() {
                    propagate_pop(ctx, key, max, Some(popped.len()));
                }
                ctx.out.array_len(2);
                ctx.out.bulk(key);
                ctx.out.array_len(popped.len());
                reply_popped(&mut ctx.out, &popped, true);
                return;
            }
        }
    }
    ctx.out.null_array();
}
