//! Persistence commands (Redis's `rdb.c`, `db.c`): SAVE writes the RDB file while every shard
//! is held, so it is the dataset at one instant and writers wait for it (SAVE's contract);
//! LASTSAVE reports when the last save succeeded. The file side is `crate::persistence`.

use crate::command::{
    ADMIN, Ctx, FAST, LOADING, NO_ASYNC_LOADING, NO_MULTI, NOKEYS, NOSCRIPT, STALE, Spec, table,
};

pub static COMMANDS: &[Spec] = table! {
    // name      arity, flags,                                    keys,   member, handler
    "save",      1,     NO_ASYNC_LOADING | ADMIN | NOSCRIPT | NO_MULTI, NOKEYS, 0,      save;
    "lastsave",  1,     LOADING | STALE | FAST,                   NOKEYS, 0,      lastsave;
};

pub fn save(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    match ctx.with_all_shards(crate::persistence::save) {
        Ok(()) => ctx.ok(),
        // Redis replies its bare shared error; the reason is in the log.
        Err(_) => ctx.error("ERR"),
    }
}

pub fn lastsave(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let secs = ctx
        .server
        .persistence
        .last_save_secs
        .load(std::sync::atomic::Ordering::Relaxed);
    ctx.out.integer(secs as i64);
}
