//! Persistence commands (Redis's `rdb.c`, `db.c`): SAVE writes the RDB file while every shard
//! is held, so it is the dataset at one instant and writers wait for it (SAVE's contract);
//! BGSAVE starts the forkless background save, whose file is the dataset at the instant it
//! replied (`crate::bgsave`); LASTSAVE reports when the last save succeeded; BGREWRITEAOF
//! rewrites the append-only file's base on the same job slot (`crate::aof::rewrite`). The file
//! side is `crate::persistence`.

use crate::bgsave::{self, Started};
use crate::command::{
    ADMIN, Ctx, FAST, LOADING, NO_ASYNC_LOADING, NO_MULTI, NOKEYS, NOSCRIPT, STALE, Spec, table,
};
use std::sync::atomic::Ordering;

pub static COMMANDS: &[Spec] = table! {
    // name      arity, flags,                                    keys,   member, handler
    "save",      1,     NO_ASYNC_LOADING | ADMIN | NOSCRIPT | NO_MULTI, NOKEYS, 0,      save;
    "bgsave",    -1,    NO_ASYNC_LOADING | ADMIN | NOSCRIPT,      NOKEYS, 0,      bgsave;
    "lastsave",  1,     LOADING | STALE | FAST,                   NOKEYS, 0,      lastsave;
    "bgrewriteaof", 1,  NO_ASYNC_LOADING | ADMIN | NOSCRIPT,      NOKEYS, 0,      bgrewriteaof;
};

const IN_PROGRESS: &str = "ERR Background save already in progress";
/// BGSAVE while a rewrite of the AOF runs (Redis's text for its AOF child).
const REWRITE_ACTIVE: &str = "ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.";

pub fn save(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    if bgsave::running(ctx.server).is_some() {
        return ctx.error(IN_PROGRESS);
    }
    match ctx.with_all_shards(crate::persistence::save) {
        Ok(()) => ctx.ok(),
        // Redis replies its bare shared error; the reason is in the log.
        Err(_) => ctx.error("ERR"),
    }
}

/// BGSAVE [SCHEDULE]: inside a transaction the save is scheduled for the cron, as Redis does
/// while EXEC runs.
pub fn bgsave(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    match args {
        [_] => {}
        [_, schedule] if schedule.eq_ignore_ascii_case(b"schedule") => {}
        _ => return ctx.error("ERR syntax error"),
    }
    if crate::aof::rewrite::running(ctx.server) {
        if args.len() == 2 {
            let state = &ctx.server.persistence;
            state.bgsave_scheduled.store(true, Ordering::Relaxed);
            return ctx.out.simple(b"Background saving scheduled");
        }
        return ctx.error(REWRITE_ACTIVE);
    }
    if bgsave::running(ctx.server).is_some() {
        return ctx.error(IN_PROGRESS);
    }
    if ctx.client.in_exec {
        let state = &ctx.server.persistence;
        state.bgsave_scheduled.store(true, Ordering::Relaxed);
        return ctx.out.simple(b"Background saving scheduled");
    }
    match ctx.with_all_shards(bgsave::start) {
        Ok(Started::Started) => ctx.out.simple(b"Background saving started"),
        Ok(Started::InProgress) => ctx.error(IN_PROGRESS),
        Err(e) => {
            crate::log::warning(&e);
            ctx.error("ERR");
        }
    }
}

/// BGREWRITEAOF: a rewrite of the AOF's base starts now, or after the running job (or the
/// transaction) ends; with the AOF off it writes a base all the same, as Redis does.
pub fn bgrewriteaof(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    use crate::aof::rewrite::{self, Started};
    let server = ctx.server;
    if rewrite::running(server) {
        return ctx.error("ERR Background append only file rewriting already in progress");
    }
    if bgsave::running(server).is_some() || ctx.client.in_exec {
        server.aof.rewrite.scheduled.store(true, Ordering::Relaxed);
        server
            .aof
            .rewrite
            .consecutive_failures
            .store(0, Ordering::Relaxed);
        return ctx
            .out
            .simple(b"Background append only file rewriting scheduled");
    }
    match ctx.with_all_shards(rewrite::start) {
        Ok(Started::Started) => ctx
            .out
            .simple(b"Background append only file rewriting started"),
        Ok(Started::Scheduled) => ctx
            .out
            .simple(b"Background append only file rewriting scheduled"),
        Ok(Started::AlreadyRunning) => {
            ctx.error("ERR Background append only file rewriting already in progress");
        }
        Err(_) => ctx.error(
            "ERR Can't execute an AOF background rewriting. Please check the server logs for more information.",
        ),
    }
}

pub fn lastsave(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let secs = ctx
        .server
        .persistence
        .last_save_secs
        .load(Ordering::Relaxed);
    ctx.out.integer(secs as i64);
}
