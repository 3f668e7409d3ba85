//! DUMP and RESTORE (Redis's `cluster.c`): a value as a DUMP payload (`persist::dump`: the RDB
//! object, the RDB version and a CRC-64) and back. A payload from redis-server 7.0 restores
//! here and one from densekv restores there; the compact form is written where Redis's own
//! encoding would be compact (`persist::value`).
//!
//! RESTORE checks in Redis's order: the options (IDLETIME and FREQ exclude each other), an
//! existing key without REPLACE (BUSYKEY), the TTL, the payload's version and checksum, then the
//! value itself. A TTL already in the past restores nothing (and REPLACE still deletes the old
//! key), as in Redis. IDLETIME and FREQ are validated and otherwise ignored: densekv keeps no
//! access clock until eviction brings one.
//!
//! Keyspace events (Redis's): DUMP's `keymiss` for a missing key; RESTORE's `new` then
//! `restore`, or `del` when a TTL already past leaves only REPLACE's deletion.
//!
//! In the append-only file (Redis's `restoreCommand`): a relative TTL is written as the
//! absolute time it gave, `RESTORE key <ms> payload [options…] ABSTTL`, so that a replay does not
//! push the expiry later; a TTL already past that deleted an old key (REPLACE) is written as
//! `DEL key`; one that deleted nothing is not written at all.

use super::args::{decimal, is, parse_i64};
use super::keys::{created, keymiss};
use crate::command::{Ctx, DENYOOM, K1, READONLY, Spec, WRITE, table};
use crate::notify::class;
use persist::dump::{self, PayloadError};

pub static COMMANDS: &[Spec] = table! {
    // name      arity, flags,            keys, member, handler
    "dump",      2,     READONLY,         K1,   0,      dump;
    "restore",   -4,    WRITE | DENYOOM,  K1,   0,      restore;
};

pub fn dump(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now, key) = (ctx.db(), ctx.now_ms, args[1]);
    let compress = ctx.server.config.read().rdbcompression;
    let (shard, out) = ctx.shard_and_out(key);
    let Some(encoding) = shard.object_encoding(db, key, now) else {
        out.null();
        return keymiss(ctx, key);
    };
    let payload = shard.view(db, key, now, |view, _| {
        dump::create(&view, encoding, compress)
    });
    match payload {
        Some(p) => out.bulk(&p),
        None => out.null(),
    }
}

/// RESTORE's options.
#[derive(Debug, Default)]
struct Options {
    replace: bool,
    absttl: bool,
}

/// Reads RESTORE's options (from the fifth argument), replying the error on a bad one.
fn options(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Option<Options> {
    let mut o = Options::default();
    let (mut idletime, mut freq) = (false, false);
    let mut j = 4;
    while j < args.len() {
        let more = j + 1 < args.len();
        if is(args[j], "replace") {
            o.replace = true;
        } else if is(args[j], "absttl") {
            o.absttl = true;
        } else if is(args[j], "idletime") && more && !freq {
            let Some(idle) = parse_i64(args[j + 1]) else {
                ctx.not_integer();
                return None;
            };
            if idle < 0 {
                ctx.error("ERR Invalid IDLETIME value, must be >= 0");
                return None;
            }
            idletime = true;
            j += 1;
        } else if is(args[j], "freq") && more && !idletime {
            let Some(f) = parse_i64(args[j + 1]) else {
                ctx.not_integer();
                return None;
            };
            if !(0..=255).contains(&f) {
                ctx.error("ERR Invalid FREQ value, must be >= 0 and <= 255");
                return None;
            }
            freq = true;
            j += 1;
        } else {
            ctx.syntax_error();
            return None;
        }
        j += 1;
    }
    Some(o)
}

pub fn restore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now, key) = (ctx.db(), ctx.now_ms, args[1]);
    let Some(o) = options(ctx, args) else {
        return;
    };
    if !o.replace && ctx.shard(key).contains(db, key, now) {
        return ctx.error("BUSYKEY Target key name already exists.");
    }
    let Some(ttl) = parse_i64(args[2]) else {
        return ctx.not_integer();
    };
    if ttl < 0 {
        return ctx.error("ERR Invalid TTL value, must be >= 0");
    }
    let value = match dump::read(args[3]) {
        Ok(v) => v,
        Err(PayloadError::VersionOrChecksum) => {
            return ctx.error("ERR DUMP payload version or checksum are wrong");
        }
        Err(PayloadError::BadData(_)) => return ctx.error("ERR Bad data format"),
    };
    // Redis's `dbDelete`: REPLACE deletes whatever is stored, an expired key included.
    let deleted = o.replace && ctx.shard(key).delete_stored(db, key);
    // Redis adds in a C long long: a TTL near its top wraps into the past.
    let at = if ttl != 0 && !o.absttl {
        ttl.wrapping_add(now as i64)
    } else {
        ttl
    };
    if at != 0 && at <= now as i64 {
        if deleted {
            ctx.touch(db, key);
            ctx.notify(class::GENERIC, "del", key);
            ctx.propagate_as(&[b"DEL", key]);
        }
        return ctx.ok();
    }
    let expire_at = (at != 0).then_some(at as u64);
    if let Err(e) = persist::value::store(&value, ctx.shard(key), db, key, expire_at) {
        return ctx.store_error(e);
    }
    ctx.touch(db, key);
    // The old key (REPLACE) was deleted first: the restored one is always added (`dbAdd`).
    created(ctx, key);
    ctx.notify(class::GENERIC, "restore", key);
    if at != 0 && !o.absttl {
        // The time argument becomes the absolute time and ABSTTL is appended, the other
        // arguments as they were.
        let at = decimal(at);
        let mut written: Vec<&[u8]> = args.to_vec();
        written[2] = &at;
        written.push(b"ABSTTL");
        ctx.propagate_as(&written);
    }
    ctx.signal_ready(db, key);
    ctx.ok();
}
