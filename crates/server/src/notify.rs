//! Keyspace notifications (`notify-keyspace-events`): Redis's `notifyKeyspaceEvent`.
//!
//! A command that changes a key calls `Ctx::notify(class, event, key)` at the point Redis's
//! command calls `notifyKeyspaceEvent`; the store's expiry and the eviction call `notify` when
//! they delete. With the class enabled, the event is published, as any PUBLISH is, as
//! `__keyspace@<db>__:<key>` → `<event>` (with `K`) and `__keyevent@<db>__:<event>` → `<key>`
//! (with `E`). The classes are cached in an atomic (`Server::notify_flags`), so with
//! notifications off (the default) a call costs one load, and with nobody subscribed, two.

use crate::pubsub::{Publisher, publish};
use crate::server::Server;
use std::sync::atomic::Ordering;

/// The event classes, Redis's `NOTIFY_*` bits.
pub mod class {
    /// `K`: `__keyspace@<db>__:` channels.
    pub const KEYSPACE: i32 = 1;
    /// `E`: `__keyevent@<db>__:` channels.
    pub const KEYEVENT: i32 = 1 << 1;
    /// `g`: generic commands (DEL, EXPIRE, RENAME…).
    pub const GENERIC: i32 = 1 << 2;
    /// `$`: string commands.
    pub const STRING: i32 = 1 << 3;
    /// `l`: list commands.
    pub const LIST: i32 = 1 << 4;
    /// `s`: set commands.
    pub const SET: i32 = 1 << 5;
    /// `h`: hash commands.
    pub const HASH: i32 = 1 << 6;
    /// `z`: sorted set commands.
    pub const ZSET: i32 = 1 << 7;
    /// `x`: expired events.
    pub const EXPIRED: i32 = 1 << 8;
    /// `e`: evicted events.
    pub const EVICTED: i32 = 1 << 9;
    /// `t`: stream commands.
    pub const STREAM: i32 = 1 << 10;
    /// `m`: key misses (not part of `A`).
    pub const KEY_MISS: i32 = 1 << 11;
    /// `d`: module key types.
    pub const MODULE: i32 = 1 << 13;
    /// `n`: new keys (not part of `A`).
    pub const NEW: i32 = 1 << 14;
    /// The class characters of `A` in Redis's order, `d` and `n` last.
    pub const CLASS_FLAGS: [(u8, i32); 11] = [
        (b'g', GENERIC),
        (b'$', STRING),
        (b'l', LIST),
        (b's', SET),
        (b'h', HASH),
        (b'z', ZSET),
        (b'x', EXPIRED),
        (b'e', EVICTED),
        (b't', STREAM),
        (b'd', MODULE),
        (b'n', NEW),
    ];
    /// `A`: every class but `m` (key misses) and `n` (new keys).
    pub const ALL: i32 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// Whether events of `class` are published at all.
#[inline]
pub fn enabled(server: &Server, class: i32) -> bool {
    server.notify_flags.load(Ordering::Relaxed) & class != 0
}

/// Publishes `event` on `key` of database `db` if its class is enabled. `publisher` is the
/// client whose command caused it (its own subscription gets the message ahead of its reply).
pub fn notify(
    server: &Server,
    class: i32,
    event: &str,
    key: &[u8],
    db: usize,
    mut publisher: Option<Publisher<'_>>,
) {
    let flags = server.notify_flags.load(Ordering::Relaxed);
    if flags & class == 0 || !server.pubsub.anyone() {
        return;
    }
    let mut channel = Vec::with_capacity(24 + key.len().max(event.len()));
    if flags & class::KEYSPACE != 0 {
        channel.extend_from_slice(format!("__keyspace@{db}__:").as_bytes());
        channel.extend_from_slice(key);
        publish(
            server,
            false,
            &channel,
            event.as_bytes(),
            publisher.as_mut().map(Publisher::reborrow),
        );
    }
    if flags & class::KEYEVENT != 0 {
        channel.clear();
        channel.extend_from_slice(format!("__keyevent@{db}__:{event}").as_bytes());
        publish(server, false, &channel, key, publisher);
    }
}
