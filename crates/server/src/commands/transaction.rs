//! MULTI / EXEC / DISCARD / WATCH / UNWATCH (Redis's `multi.c`).
//!
//! Commands after MULTI are checked (name, arity, auth) and queued; a rejected one makes EXEC
//! fail with EXECABORT. EXEC locks every shard, so the queued commands run with no other command
//! between them on any thread. WATCH registers the client on each key; any command that modifies
//! a watched key (on any connection, this one included) marks the watchers dirty, and a dirty EXEC
//! replies with a null array. A watched key that existed when watched and has expired by EXEC time
//! counts as modified, as in Redis 7.

use crate::client::ClientState;
use crate::command::{
    ALLOW_BUSY, Ctx, FAST, KALL, LOADING, Locks, NOKEYS, NOSCRIPT, SKIP_SLOWLOG, STALE, Spec,
    TXN_CONTROL, table,
};
use crate::server::Server;
use std::sync::atomic::Ordering;

pub static COMMANDS: &[Spec] = table! {
    // name    arity, flags,                                                        keys,   member, handler
    "multi",   1,     NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | TXN_CONTROL, NOKEYS, 0,      multi;
    "exec",    1,     NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG | TXN_CONTROL,      NOKEYS, 0,      exec;
    "discard", 1,     NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | TXN_CONTROL, NOKEYS, 0,      discard;
    "watch",   -2,    NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | TXN_CONTROL, KALL,   0,      watch;
    "unwatch", 1,     NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,               NOKEYS, 0,      unwatch;
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
    unwatch_client(ctx.server, ctx.client);
}

fn unwatch_client(server: &Server, client: &mut ClientState) {
    let watched = std::mem::take(&mut client.watched);
    client.watched_live.clear();
    server.unwatch(&client.shared, &watched);
    client.shared.watch_dirty.store(false, Ordering::Relaxed);
    client.shared.info.lock().watching = 0;
}

fn end_multi(ctx: &mut Ctx<'_, '_>) {
    discard_transaction(ctx.server, ctx.client);
}

/// Ends the client's transaction, if any, and forgets its watched keys (Redis's
/// `discardTransaction`): DISCARD, EXEC, and dispatch when it rejects an EXEC.
pub fn discard_transaction(server: &Server, client: &mut ClientState) {
    client.multi = None;
    client.multi_error = false;
    client.shared.info.lock().multi = -1;
    unwatch_client(server, client);
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
                    .is_some_and(|shard| !is_live(shard, *db, key, now))
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
    crate::propagate::exec_done(server);
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
        let live = is_live(ctx.shard(key), db, key, now);
        ctx.server.watch(db, key, &ctx.client.shared);
        ctx.client.watched.push((db, key.to_vec()));
        ctx.client.watched_live.push(live);
    }
    ctx.client.shared.info.lock().watching = ctx.client.watched.len();
    ctx.ok();
}

/// Whether `key` is stored with its TTL not passed, deleting nothing: Redis's WATCH and EXEC only
/// check (`keyIsExpired`), so an expired key stays for a lookup or active expiry to delete and
/// announce (`expired`), as in Redis.
fn is_live(shard: &mut store::Shard, db: usize, key: &[u8], now_ms: u64) -> bool {
    shard
        .peek(db, key, |e| e.expire_at_ms.is_none_or(|at| at > now_ms))
        .unwrap_or(false)
}

pub fn unwatch(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    unwatch_all(ctx);
    ctx.ok();
}
