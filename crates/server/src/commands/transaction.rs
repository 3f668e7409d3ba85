//! MULTI / EXEC / DISCARD / WATCH / UNWATCH (Redis's `multi.c`).
//!
//! Commands after MULTI are checked (name, arity, auth) and queued; a rejected one makes EXEC
//! fail with EXECABORT. EXEC locks every shard, so the queued commands run with no other command
//! between them on any thread. WATCH registers the client on each key; any command that modifies
//! a watched key (on any connection, this one included) marks the watchers dirty, and a dirty EXEC
//! replies with a null array. A watched key that existed when watched and has expired by EXEC time
//! counts as modified, as in Redis 7.

use crate::command::{
    Ctx, FAST, KALL, LOADING, Locks, NOKEYS, NOSCRIPT, STALE, Spec, TXN_CONTROL, table,
};
use std::sync::atomic::Ordering;

pub static COMMANDS: &[Spec] = table! { group: "transactions";
    // name    arity, flags,                                           keys,   member, since,   handler, summary
    "multi",   1,     NOSCRIPT | LOADING | STALE | FAST | TXN_CONTROL, NOKEYS, 0,      "1.2.0", multi,   "Starts a transaction.";
    "exec",    1,     NOSCRIPT | LOADING | STALE | TXN_CONTROL,        NOKEYS, 0,      "1.2.0", exec,    "Executes all commands in a transaction.";
    "discard", 1,     NOSCRIPT | LOADING | STALE | FAST | TXN_CONTROL, NOKEYS, 0,      "2.0.0", discard, "Discards a transaction.";
    "watch",   -2,    NOSCRIPT | LOADING | STALE | FAST | TXN_CONTROL, KALL,   0,      "2.2.0", watch,   "Monitors changes to keys to determine the execution of a transaction.";
    "unwatch", 1,     NOSCRIPT | LOADING | STALE | FAST,               NOKEYS, 0,      "2.2.0", unwatch, "Forgets about watched keys of a transaction.";
};

pub fn multi(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    if ctx.client.multi.is_some() {
        return ctx.error("ERR MULTI calls can not be nested");
    }
    ctx.client.multi = Some(Vec::new());
    ctx.client.multi_error = false;
    ctx.client.shared.info.lock().multi = 0;
    ctx.ok();
}

fn unwatch_all(ctx: &mut Ctx<'_, '_>) {
    let watched = std::mem::take(&mut ctx.client.watched);
    ctx.client.watched_live.clear();
    ctx.server.unwatch(&ctx.client.shared, &watched);
    ctx.client
        .shared
        .watch_dirty
        .store(false, Ordering::Relaxed);
    ctx.client.shared.info.lock().watching = 0;
}

fn end_multi(ctx: &mut Ctx<'_, '_>) {
    ctx.client.multi = None;
    ctx.client.multi_error = false;
    ctx.client.shared.info.lock().multi = -1;
    unwatch_all(ctx);
}

pub fn exec(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let Some(queue) = ctx.client.multi.take() else {
        return ctx.error("ERR EXEC without MULTI");
    };
    if ctx.client.multi_error {
        end_multi(ctx);
        return ctx.error("EXECABORT Transaction discarded because of previous errors.");
    }
    let server = ctx.server;
    let mut locks = Locks::all(server);
    let now = ctx.now_ms;
    let expired =
        ctx.client
            .watched
            .iter()
            .zip(&ctx.client.watched_live)
            .any(|((db, key), &live)| {
                let mut shard_guard = locks.iter_mut().nth(server.shard_of(key));
                live && shard_guard
                    .as_mut()
                    .is_some_and(|shard| !shard.contains(*db, key, now))
            });
    if ctx.client.shared.watch_dirty.load(Ordering::Relaxed) || expired {
        drop(locks);
        end_multi(ctx);
        ctx.out.null_array();
        return;
    }
    let Ctx {
        client,
        out,
        now_ms,
        ..
    } = ctx;
    let now = *now_ms;
    client.in_exec = true;
    crate::dispatch::run_queued(server, client, out.out_mut(), &mut locks, queue, now);
    client.in_exec = false;
    drop(locks);
    end_multi(ctx);
}

pub fn discard(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    if ctx.client.multi.is_none() {
        return ctx.error("ERR DISCARD without MULTI");
    }
    end_multi(ctx);
    ctx.ok();
}

pub fn watch(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if ctx.client.multi.is_some() {
        return ctx.error("ERR WATCH inside MULTI is not allowed");
    }
    let (db, now) = (ctx.db(), ctx.now_ms);
    for &key in &args[1..] {
        if ctx.client.watched.iter().any(|(d, k)| *d == db && k == key) {
            continue;
        }
        let live = ctx.shard(key).contains(db, key, now);
        ctx.server.watch(db, key, &ctx.client.shared);
        ctx.client.watched.push((db, key.to_vec()));
        ctx.client.watched_live.push(live);
    }
    ctx.client.shared.info.lock().watching = ctx.client.watched.len();
    ctx.ok();
}

pub fn unwatch(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    unwatch_all(ctx);
    ctx.ok();
}
