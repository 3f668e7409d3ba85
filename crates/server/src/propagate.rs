//! What a command hands to the append-only file: commands that replay to the same dataset
//! (Redis's `call` → `alsoPropagate` → `propagatePendingCommands`), appended while the command
//! still holds its shards, so the file's order agrees with the order of the writes.
//!
//! ```text
//!  handler ─ ctx.touch ──────────▶ Effects.dirty += 1          (Redis's server.dirty)
//!          ─ ctx.propagate_as ───▶ Effects.replaced += [argv]  (SET … EX 10 → SET … PXAT t)
//!          ─ ctx.force_propagation (FLUSHALL, FLUSHDB: written even when nothing changed)
//!  a keyspace event (`Ctx::notify`) and the end of the command, shards still held:
//!     DEL of each key the held shards deleted by expiry (the store's expiry log), and its
//!     `expired` event (`expired_in_command`), so both come before what the command does next
//!  end of the command (`command_done`):
//!     replaced?  each replacement : (WRITE flag ∧ (dirty > 0 ∨ forced))?  the argv itself
//!     ──▶ PENDING (this thread's, encoded)
//!  not inside EXEC ──▶ flush: Aof::append, as one MULTI … EXEC block when more than one
//!  EXEC: the queued commands' effects gather in PENDING, flushed once before EXEC lets go of
//!  the shards (`exec_done`)
//! ```
//! Invariant: PENDING is empty whenever a thread holds no shard for a command: every path that
//! fills it (`command_done`, `expired`) flushes before its shards are released, except inside
//! EXEC, which flushes before it releases its own.

use crate::command::{Ctx, flag};
use crate::notify::class;
use crate::server::Server;
use std::cell::{Cell, RefCell};
use store::Shard;

/// What a handler says about its command's effects.
#[derive(Debug, Default)]
pub struct Effects {
    /// Changes the command made (each `Ctx::touch`).
    pub dirty: Cell<u32>,
    /// The commands written instead of the command itself; `Some(empty)` writes none.
    pub replaced: Option<Vec<Vec<Vec<u8>>>>,
    /// Written even when nothing changed (FLUSHALL and FLUSHDB, as Redis forces them).
    pub forced: bool,
}

impl Effects {
    /// One more command to write instead of the command itself.
    pub fn replace_with(&mut self, args: &[&[u8]]) {
        self.replaced
            .get_or_insert_with(Vec::new)
            .push(args.iter().map(|a| a.to_vec()).collect());
    }

    /// The command writes nothing, even if it changed something (SPOP's effects are its
    /// SREMs, given one by one).
    pub fn suppress(&mut self) {
        self.replaced.get_or_insert_with(Vec::new);
    }
}

/// One command to append: its database and its RESP encoding.
type Op = (usize, Vec<u8>);

thread_local! {
    /// This thread's commands waiting to be appended (see the module doc's invariant).
    static PENDING: RefCell<Vec<Op>> = const { RefCell::new(Vec::new()) };
}

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    persist::aof_base::encode_command(&mut out, args);
    out
}

/// The deletion a key's expiry is written as: DEL, or UNLINK with `lazyfree-lazy-expire`.
fn expiry_deletion(server: &Server) -> &'static [u8] {
    if server.config.read().lazyfree_lazy_expire {
        b"UNLINK"
    } else {
        b"DEL"
    }
}

/// What a key's expiry leaves, once the store has deleted it: a DEL (or UNLINK) queued for the
/// append-only file while it is fed, the invalidation of clients that track it, and the
/// `expired` keyspace event (Redis's `deleteExpiredKeyAndPropagate`). `publish` sends the
/// event; it is only called when the class is on.
fn bury_expired(
    server: &Server,
    expired: &[(usize, Vec<u8>)],
    mut publish: impl FnMut(usize, &[u8]),
) {
    if expired.is_empty() {
        return;
    }
    crate::tracking::deleted(server, expired);
    if server.aof.feeding() {
        let del = expiry_deletion(server);
        PENDING.with(|pending| {
            let mut pending = pending.borrow_mut();
            for (db, key) in expired {
                pending.push((*db, encode(&[del, key])));
            }
        });
    }
    if crate::notify::enabled(server, class::EXPIRED) {
        for (db, key) in expired {
            publish(*db, key);
        }
    }
}

/// The keys the command's shards deleted by expiry since they were last asked (its lookups
/// expire keys lazily, as Redis's `expireIfNeeded` does): their DELs are queued and their
/// `expired` events published now. Called before every keyspace event the command sends
/// (`Ctx::notify`) and when it ends, so each `expired` comes ahead of the events of what the
/// command did after the lookup, as in Redis, where the lookup itself publishes it. Keys
/// expired in different shards between two calls come in shard order.
pub fn expired_in_command(ctx: &mut Ctx<'_, '_>) {
    if !ctx.locks.iter_mut().any(|shard| shard.has_expired()) {
        return;
    }
    let mut expired = Vec::new();
    for shard in ctx.locks.iter_mut() {
        let mut taken = shard.take_expired();
        if expired.is_empty() {
            expired = taken;
        } else {
            expired.append(&mut taken);
        }
    }
    let server = ctx.server;
    bury_expired(server, &expired, |db, key| {
        ctx.publish_event(class::EXPIRED, "expired", key, db);
    });
}

/// After a command ran, its shards still held: queues its effects and, outside EXEC, appends
/// them. `args` is the command as the client sent it, written as it is when nothing replaced
/// it, it has the WRITE flag and it changed something.
pub fn command_done(ctx: &mut Ctx<'_, '_>, flags: u32, args: &[&[u8]]) {
    // Always, even with the AOF off: the expiry log is kept for the `expired` events too.
    expired_in_command(ctx);
    let server = ctx.server;
    if !server.aof.feeding() {
        return;
    }
    let db = ctx.client.db;
    PENDING.with(|pending| {
        let mut pending = pending.borrow_mut();
        if let Some(commands) = ctx.effects.replaced.take() {
            for command in commands {
                let args: Vec<&[u8]> = command.iter().map(Vec::as_slice).collect();
                pending.push((db, encode(&args)));
            }
        } else {
            let changed = ctx.effects.dirty.get() > 0 || ctx.effects.forced;
            if flags & flag::WRITE != 0 && changed {
                pending.push((db, encode(args)));
            }
        }
    });
    if !ctx.client.in_exec {
        flush(server);
    }
}

/// How many commands wait in PENDING (a script's `redis.set_repl` drops what follows).
pub fn pending_len() -> usize {
    PENDING.with(|pending| pending.borrow().len())
}

/// Drops what was queued after the first `len` commands: the effects of a script's command
/// run while `redis.set_repl` excluded the append-only file.
pub fn truncate_pending(len: usize) {
    PENDING.with(|pending| pending.borrow_mut().truncate(len));
}

/// What is queued and how far this thread has appended, set aside while a busy script's
/// thread serves its other connections (whose commands flush the queue as they end).
#[derive(Debug)]
pub struct SetAside {
    pending: Vec<Op>,
    appended: u64,
}

/// Takes the queue (`SetAside`) and leaves it empty.
pub fn set_aside() -> SetAside {
    SetAside {
        pending: PENDING.with(|pending| std::mem::take(&mut *pending.borrow_mut())),
        appended: APPENDED.get(),
    }
}

/// Puts back what `set_aside` took, ahead of anything queued since.
pub fn restore(held: SetAside) {
    PENDING.with(|pending| {
        let mut pending = pending.borrow_mut();
        let later = std::mem::replace(&mut *pending, held.pending);
        pending.extend(later);
    });
    APPENDED.set(APPENDED.get().max(held.appended));
}

/// EXEC's end, before it lets go of every shard: its commands' effects as one block.
pub fn exec_done(server: &Server) {
    flush(server);
}

/// Active expiry (or eviction, which deletes the expired keys it meets) deleted keys in
/// `shard` (held): their DELs are appended and their `expired` events published now, by no
/// client.
pub fn expired(server: &Server, shard: &mut Shard) {
    let expired = shard.take_expired();
    bury_expired(server, &expired, |db, key| {
        crate::notify::notify(server, class::EXPIRED, "expired", key, db, None);
    });
    flush_each(server);
}

/// Eviction deleted `keys` (a shard of theirs held): a DEL each, or UNLINK under
/// `lazyfree-lazy-eviction` (Redis's `propagateDeletion`), appended now.
pub fn evicted(server: &Server, keys: &[(usize, Vec<u8>)], lazy: bool) {
    if !server.aof.feeding() {
        return;
    }
    let del: &[u8] = if lazy { b"UNLINK" } else { b"DEL" };
    PENDING.with(|pending| {
        let mut pending = pending.borrow_mut();
        for (db, key) in keys {
            pending.push((*db, encode(&[del, key])));
        }
    });
    flush_each(server);
}

/// Appends what is pending, more than one command as one MULTI … EXEC block (Redis 7.0 wraps
/// whatever one command or one EXEC propagated).
fn flush(server: &Server) {
    let ops = PENDING.with(|pending| std::mem::take(&mut *pending.borrow_mut()));
    if !ops.is_empty() {
        let end = server.aof.append(&ops, ops.len() > 1);
        APPENDED.set(APPENDED.get().max(end));
    }
}

/// Appends what is pending, each command on its own (active expiry's DELs).
fn flush_each(server: &Server) {
    let ops = PENDING.with(|pending| std::mem::take(&mut *pending.borrow_mut()));
    if !ops.is_empty() {
        let end = server.aof.append(&ops, false);
        APPENDED.set(APPENDED.get().max(end));
    }
}

thread_local! {
    /// The end, in the append-only stream, of what this thread appended last: its replies
    /// wait until the file holds (`appendfsync always`: and has synced) that far.
    static APPENDED: Cell<u64> = const { Cell::new(0) };
}

/// How far the append-only stream must reach before this thread's replies may leave.
pub fn appended_here() -> u64 {
    APPENDED.get()
}
