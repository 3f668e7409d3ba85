//! Clients blocked in BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP, BZPOPMIN, BZPOPMAX and BZMPOP.
//!
//! ```text
//!  BLPOP k1 k2 0 ── keys empty ──▶ register: queues[(db,k1)] += id, queues[(db,k2)] += id
//!        (shard locks held, so no push can slip between the check and the registration)
//!  LPUSH k2 x ──▶ signal_ready(db,k2) ──▶ ready_keys ──▶ after the command: serve_ready()
//!        for each ready key, the first client of its queue (FIFO, by blocking time) is served
//!        with the key's shards locked: its pop runs here, its reply goes to its thread's inbox,
//!        and that thread's loop is woken to send it and resume the client's input.
//!  deadline passed ──▶ time_out(id): null array, unless a server already took it out
//! ```
//! One mutex (`Server::blocking`) holds the queues and the blocked clients. Lock order: shard
//! locks first, then this mutex — the blocking handlers hold their keys' shards when they
//! register, and `serve_ready` locks the shards before it looks at the queue again — so no
//! cycle can form. A client is in `clients` exactly while it is blocked; whoever removes it
//! (serve, timeout, disconnect) owns its reply.

use crate::client::ClientState;
use crate::command::{Ctx, Locks};
use crate::server::{ClientShared, Server};
use resp::{Protocol, ReplyWriter};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// What a blocked client does once one of its keys has data.
#[derive(Clone, Debug)]
pub enum BlockOp {
    /// BLPOP/BRPOP (`count: None`) and BLMPOP (`Some(count)`).
    ListPop { left: bool, count: Option<usize> },
    /// BRPOPLPUSH/BLMOVE.
    ListMove {
        dst: Vec<u8>,
        from_left: bool,
        to_left: bool,
    },
    /// BZPOPMIN/BZPOPMAX (`count: None`) and BZMPOP (`Some(count)`).
    ZPop { max: bool, count: Option<usize> },
}

/// One blocked client.
#[derive(Debug)]
pub struct Blocked {
    pub shared: Arc<ClientShared>,
    pub db: usize,
    pub protocol: Protocol,
    pub keys: Vec<Vec<u8>>,
    pub op: BlockOp,
}

/// The blocked clients and, per key, who waits on it in blocking order.
#[derive(Debug, Default)]
pub struct Blocking {
    queues: HashMap<(usize, Vec<u8>), VecDeque<u64>>,
    clients: HashMap<u64, Blocked>,
}

impl Blocking {
    fn unlink(&mut self, id: u64) -> Option<Blocked> {
        let blocked = self.clients.remove(&id)?;
        blocked.shared.blocked.store(false, Ordering::Relaxed);
        for key in &blocked.keys {
            let slot = (blocked.db, key.clone());
            if let Some(queue) = self.queues.get_mut(&slot) {
                queue.retain(|&c| c != id);
                if queue.is_empty() {
                    self.queues.remove(&slot);
                }
            }
        }
        Some(blocked)
    }
}

/// Blocks the running client on `keys` (called by a handler that found every key empty, with
/// the keys' shards still locked). The client's connection stops running commands until it is
/// served or times out.
pub fn block(ctx: &mut Ctx<'_, '_>, keys: &[&[u8]], op: BlockOp, deadline_ms: Option<u64>) {
    let server = ctx.server;
    let id = ctx.client.shared.id;
    let db = ctx.db();
    let mut b = server.blocking.lock();
    for &key in keys {
        let queue = b.queues.entry((db, key.to_vec())).or_default();
        if !queue.contains(&id) {
            queue.push_back(id);
        }
    }
    let mut unique: Vec<Vec<u8>> = Vec::with_capacity(keys.len());
    for &key in keys {
        if !unique.iter().any(|k| k == key) {
            unique.push(key.to_vec());
        }
    }
    b.clients.insert(
        id,
        Blocked {
            shared: Arc::clone(&ctx.client.shared),
            db,
            protocol: ctx.client.protocol,
            keys: unique,
            op,
        },
    );
    ctx.client.shared.blocked.store(true, Ordering::Relaxed);
    server.blocked_clients.fetch_add(1, Ordering::Relaxed);
    ctx.client.blocked = Some(deadline_ms.unwrap_or(u64::MAX));
}

/// Serves the clients blocked on keys that received data, until no ready key is left (a served
/// BLMOVE may make its destination ready in turn).
pub fn serve_ready(server: &Server, now_ms: u64) {
    loop {
        let ready: Vec<(usize, Vec<u8>)> = {
            let mut list = server.ready_keys.lock();
            server.ready_pending.store(false, Ordering::Relaxed);
            std::mem::take(&mut *list)
        };
        if ready.is_empty() {
            return;
        }
        for (db, key) in ready {
            serve_key(server, db, &key, now_ms);
        }
    }
}

/// Serves the clients waiting on one key, first blocked first, while the key has data.
fn serve_key(server: &Server, db: usize, key: &[u8], now_ms: u64) {
    loop {
        // Who is first, and what it would lock (read without the shard locks, checked again
        // with them below).
        let (id, op) = {
            let b = server.blocking.lock();
            let Some(&id) = b.queues.get(&(db, key.to_vec())).and_then(VecDeque::front) else {
                return;
            };
            (id, b.clients[&id].op.clone())
        };
        let mut shards: smallvec::SmallVec<[usize; 4]> = smallvec::smallvec![server.shard_of(key)];
        if let BlockOp::ListMove { dst, .. } = &op {
            shards.push(server.shard_of(dst));
        }
        let mut locks = Locks::of(server, shards);
        let mut b = server.blocking.lock();
        let still_first = b
            .queues
            .get(&(db, key.to_vec()))
            .and_then(VecDeque::front)
            .is_some_and(|&first| first == id);
        if !still_first {
            continue;
        }
        let blocked = &b.clients[&id];
        if gone(blocked) {
            // Its thread has not closed it yet; the element stays for the next client.
            let blocked = b.unlink(id).expect("checked above");
            drop(b);
            server.blocked_clients.fetch_sub(1, Ordering::Relaxed);
            server.kill(&blocked.shared);
            continue;
        }
        let mut state = ClientState::new(Arc::clone(&blocked.shared), true);
        state.db = blocked.db;
        state.protocol = blocked.protocol;
        let mut reply = Vec::new();
        let served = {
            let mut ctx = Ctx {
                server,
                out: ReplyWriter::new(&mut reply, state.protocol),
                client: &mut state,
                locks: &mut locks,
                now_ms,
                failed: false,
                effects: crate::propagate::Effects::default(),
            };
            let served = crate::commands::blocking::serve(&mut ctx, key, &op);
            // Only what `serve` gave (its pop as LPOP, LMOVE, ZPOPMIN…) is written.
            crate::propagate::command_done(&mut ctx, 0, &[]);
            served
        };
        if !served {
            // The key holds no data of the right kind (any more): nobody else can be served.
            return;
        }
        let blocked = b.unlink(id).expect("checked above");
        drop(b);
        drop(locks);
        server.blocked_clients.fetch_sub(1, Ordering::Relaxed);
        deliver(server, &blocked.shared, reply);
    }
}

/// Whether a blocked client can no longer take a reply: killed, or its peer closed (its thread
/// may not have read the FIN yet). `Server::blocking` is held, so the client is still registered
/// and its thread has not closed its socket: `close` unlinks it first.
fn gone(blocked: &Blocked) -> bool {
    blocked.shared.killed.load(Ordering::Relaxed) || crate::net::peer_gone(blocked.shared.fd)
}

/// Hands a served client's reply to its thread and wakes that thread.
fn deliver(server: &Server, client: &ClientShared, reply: Vec<u8>) {
    server.mail.post_one(
        server,
        client.thread,
        client.id,
        crate::mail::Mail::Reply(reply),
    );
}

/// Ends the blocking of a client whose deadline passed: true if it was still blocked (the caller
/// sends the timeout reply), false if a server got to it first (its reply is in the inbox).
pub fn time_out(server: &Server, id: u64) -> bool {
    let removed = server.blocking.lock().unlink(id).is_some();
    if removed {
        server.blocked_clients.fetch_sub(1, Ordering::Relaxed);
    }
    removed
}

/// CLIENT UNBLOCK: ends the blocking of client `id`, which gets the timeout reply or, with
/// `error`, an `-UNBLOCKED` error, through its thread's mailbox. False if it was not blocked.
pub fn unblock(server: &Server, id: u64, error: bool) -> bool {
    let Some(blocked) = server.blocking.lock().unlink(id) else {
        return false;
    };
    server.blocked_clients.fetch_sub(1, Ordering::Relaxed);
    let mut reply = Vec::new();
    if error {
        let text = b"UNBLOCKED client unblocked via CLIENT UNBLOCK";
        server.count_error(text);
        ReplyWriter::new(&mut reply, blocked.protocol).error(text);
    } else {
        timeout_reply(&mut reply, blocked.protocol);
    }
    deliver(server, &blocked.shared, reply);
    true
}

/// Forgets a client that disconnected while blocked.
pub fn forget(server: &Server, id: u64) {
    time_out(server, id);
}

/// The reply of a blocking command that timed out (or may not block, inside MULTI).
pub fn timeout_reply(out: &mut Vec<u8>, protocol: Protocol) {
    ReplyWriter::new(out, protocol).null_array();
}

/// Parses a blocking timeout (seconds, fractional allowed) as Redis 7.0 does
/// (`getTimeoutFromObjectOrReply`): `Some(None)` is 0 = forever, else the deadline in Unix ms.
/// Redis adds the time now in a signed 64-bit integer and keeps the deadline as an unsigned one,
/// so a sum past `i64::MAX` is a deadline that never comes: here, one past `i64::MAX` too.
pub fn parse_timeout(ctx: &mut Ctx<'_, '_>, arg: &[u8]) -> Option<Option<u64>> {
    let Some(ms) = crate::longdouble::timeout_ms(arg) else {
        ctx.error("ERR timeout is not a float or out of range");
        return None;
    };
    if ms < 0 {
        ctx.error("ERR timeout is negative");
        return None;
    }
    if ms == 0 {
        return Some(None);
    }
    Some(Some((ms as u64).saturating_add(ctx.now_ms)))
}
