//! Connection commands: PING, ECHO, QUIT, SELECT, HELLO, AUTH, RESET, and CLIENT, a container
//! whose subcommands (`client|list`…) are table lines of their own (TRACKING, CACHING, GETREDIR
//! and TRACKINGINFO are in `tracking.rs`).
//!
//! There is one user, `default`, whose password is `requirepass` (none: every connection starts
//! authenticated). HELLO switches the connection between RESP2 and RESP3 and replies with the
//! server map Redis 7 sends.

use super::args::{is, parse_i64};
use crate::client::ReplyMode;
use crate::command::{
    ADMIN, ALLOW_BUSY, Ctx, FAST, LOADING, NO_AUTH, NOKEYS, NONE, NOSCRIPT, STALE, Spec,
    TXN_CONTROL, container, table,
};
use crate::server::{ClientShared, unix_ms};
use resp::Protocol;
use std::sync::atomic::Ordering;

pub static COMMANDS: &[Spec] = table! {
    // name   arity, flags,                                                                  keys,   member, handler,   subcommands
    "ping",   -1,    FAST,                                                                   NOKEYS, 0,      ping;
    "echo",   2,     LOADING | STALE | FAST,                                                 NOKEYS, 0,      echo;
    "quit",   -1,    NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | TXN_CONTROL, NOKEYS, 0,      quit;
    "select", 2,     FAST | STALE | LOADING,                                                 NOKEYS, 0,      select;
    "hello",  -1,    NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY,               NOKEYS, 0,      hello;
    "auth",   -2,    NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY,               NOKEYS, 0,      auth;
    "reset",  1,     NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | TXN_CONTROL, NOKEYS, 0,      reset;
    "monitor", 1,    ADMIN | NOSCRIPT | LOADING | STALE,                                     NOKEYS, 0,      monitor;
    "client", -2,    NONE,                                                                   NOKEYS, 0,      container, CLIENT_SUBCOMMANDS;
};

/// CLIENT's subcommands. SETINFO and NO-TOUCH are Redis 7.2's, kept for the clients that send
/// them (redis-py 5 sends CLIENT SETINFO on connect); their metadata is densekv's own
/// (`scripts/command_meta_extra.json`).
static CLIENT_SUBCOMMANDS: &[Spec] = table! {
    // name            arity, flags,                              keys,   member, handler
    "client|id",       2,     NOSCRIPT | LOADING | STALE,         NOKEYS, 0,      client_id;
    "client|info",     2,     NOSCRIPT | LOADING | STALE,         NOKEYS, 0,      client_info;
    "client|list",     -2,    ADMIN | NOSCRIPT | LOADING | STALE, NOKEYS, 0,      client_list;
    "client|kill",     -3,    ADMIN | NOSCRIPT | LOADING | STALE, NOKEYS, 0,      client_kill;
    "client|getname",  2,     NOSCRIPT | LOADING | STALE,         NOKEYS, 0,      client_getname;
    "client|setname",  3,     NOSCRIPT | LOADING | STALE,         NOKEYS, 0,      client_setname;
    "client|setinfo",  4,     NOSCRIPT | LOADING | STALE,         NOKEYS, 0,      client_setinfo;
    "client|reply",    3,     NOSCRIPT | LOADING | STALE,         NOKEYS, 0,      client_reply;
    "client|pause",    -3,    ADMIN | NOSCRIPT | LOADING | STALE, NOKEYS, 0,      client_pause;
    "client|unpause",  2,     ADMIN | NOSCRIPT | LOADING | STALE, NOKEYS, 0,      client_unpause;
    "client|unblock",  -3,    ADMIN | NOSCRIPT | LOADING | STALE, NOKEYS, 0,      client_unblock;
    "client|no-evict", 3,     ADMIN | NOSCRIPT | LOADING | STALE, NOKEYS, 0,      client_no_evict;
    "client|no-touch", 3,     NOSCRIPT | LOADING | STALE,         NOKEYS, 0,      client_no_touch;
    "client|tracking", -3,    NOSCRIPT | LOADING | STALE,         NOKEYS, 0,      super::tracking::client_tracking;
    "client|caching",  3,     NOSCRIPT | LOADING | STALE,         NOKEYS, 0,      super::tracking::client_caching;
    "client|getredir", 2,     NOSCRIPT | LOADING | STALE,         NOKEYS, 0,      super::tracking::client_getredir;
    "client|trackinginfo", 2, NOSCRIPT | LOADING | STALE,         NOKEYS, 0,      super::tracking::client_trackinginfo;
    "client|help",     2,     LOADING | STALE,                    NOKEYS, 0,      client_help;
};

pub fn ping(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len() <= 2 && ctx.client.subscribed() && ctx.client.protocol == Protocol::Resp2 {
        // Subscribed mode: a message-shaped reply, `pong` and the argument or "".
        ctx.out.array_len(2);
        ctx.out.bulk(b"pong");
        return ctx.out.bulk(args.get(1).copied().unwrap_or(b""));
    }
    match args.len() {
        1 => ctx.out.simple(b"PONG"),
        2 => ctx.out.bulk(args[1]),
        _ => ctx.error("ERR wrong number of arguments for 'ping' command"),
    }
}

pub fn echo(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    ctx.out.bulk(args[1]);
}

pub fn quit(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    ctx.ok();
    ctx.client.close_after_reply = true;
}

pub fn select(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(n) = super::keys::db_index(ctx, args[1]) else {
        return;
    };
    ctx.client.db = n;
    ctx.client.shared.info.lock().db = n;
    ctx.ok();
}

/// Checks `user`/`pass` against the default user; replies on failure.
fn check_password(ctx: &mut Ctx<'_, '_>, user: &[u8], pass: &[u8]) -> bool {
    let required = ctx.server.config.read().requirepass.clone();
    match required {
        Some(p) if user == b"default" && p == pass => {
            ctx.client.authenticated = true;
            true
        }
        None if user == b"default" => {
            ctx.client.authenticated = true;
            true
        }
        _ => {
            ctx.error("WRONGPASS invalid username-password pair or user is disabled.");
            false
        }
    }
}

pub fn auth(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len() > 3 {
        return ctx.syntax_error();
    }
    if args.len() == 2 && ctx.server.config.read().requirepass.is_none() {
        return ctx.error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
    }
    let (user, pass) = if args.len() == 3 {
        (args[1], args[2])
    } else {
        (&b"default"[..], args[1])
    };
    if check_password(ctx, user, pass) {
        ctx.ok();
    }
}

pub fn hello(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let mut protocol = None;
    let mut i = 1;
    if args.len() >= 2 {
        match parse_i64(args[1]) {
            Some(2) => protocol = Some(Protocol::Resp2),
            Some(3) => protocol = Some(Protocol::Resp3),
            Some(_) => return ctx.error("NOPROTO unsupported protocol version"),
            None => return ctx.error("ERR Protocol version is not an integer or out of range"),
        }
        i = 2;
    }
    let mut auth: Option<(&[u8], &[u8])> = None;
    let mut name: Option<&[u8]> = None;
    while i < args.len() {
        let more = args.len() - i - 1;
        if is(args[i], "auth") && more >= 2 {
            auth = Some((args[i + 1], args[i + 2]));
            i += 3;
        } else if is(args[i], "setname") && more >= 1 {
            name = Some(args[i + 1]);
            i += 2;
        } else {
            let text = format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(args[i])
            );
            return ctx.error(&text);
        }
    }
    if let Some((user, pass)) = auth {
        if !check_password(ctx, user, pass) {
            return;
        }
    } else if !ctx.client.authenticated && ctx.server.config.read().requirepass.is_some() {
        return ctx.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
    }
    if let Some(name) = name {
        if !valid_name(name) {
            return ctx
                .error("ERR Client names cannot contain spaces, newlines or special characters.");
        }
        ctx.client.shared.info.lock().name = String::from_utf8_lossy(name).into_owned();
    }
    if let Some(p) = protocol {
        ctx.client.protocol = p;
        ctx.out.set_protocol(p);
        ctx.client.shared.info.lock().resp = if p == Protocol::Resp3 { 3 } else { 2 };
    }
    let proto = if ctx.client.protocol == Protocol::Resp3 {
        3
    } else {
        2
    };
    ctx.out.map_len(7);
    ctx.out.bulk(b"server");
    ctx.out.bulk(b"redis");
    ctx.out.bulk(b"version");
    ctx.out.bulk(crate::REDIS_VERSION.as_bytes());
    ctx.out.bulk(b"proto");
    ctx.out.integer(proto);
    ctx.out.bulk(b"id");
    ctx.out.integer(ctx.client.shared.id as i64);
    ctx.out.bulk(b"mode");
    ctx.out.bulk(b"standalone");
    ctx.out.bulk(b"role");
    ctx.out.bulk(b"master");
    ctx.out.bulk(b"modules");
    ctx.out.array_len(0);
}

/// MONITOR: from now on the connection is shown every command the server runs (`monitor.rs`).
pub fn monitor(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    if ctx.client.in_exec {
        return ctx.error("ERR MONITOR isn't allowed for DENY BLOCKING client");
    }
    let sub = crate::pubsub::Sub {
        id: ctx.client.shared.id,
        thread: ctx.client.shared.thread,
    };
    if ctx.server.monitors.add(sub) {
        ctx.client.monitor = true;
        ctx.client.shared.info.lock().monitor = true;
        ctx.ok();
    }
}

pub fn reset(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    crate::pubsub::forget(ctx.server, ctx.client);
    ctx.server.monitors.remove(ctx.client.shared.id);
    ctx.client.monitor = false;
    crate::tracking::disable(ctx.server, ctx.client);
    ctx.client.multi = None;
    ctx.client.multi_error = false;
    let watched = std::mem::take(&mut ctx.client.watched);
    ctx.server.unwatch(&ctx.client.shared, &watched);
    ctx.client
        .shared
        .watch_dirty
        .store(false, Ordering::Relaxed);
    ctx.client.db = 0;
    ctx.client.reply_mode = ReplyMode::On;
    if ctx.server.config.read().requirepass.is_some() {
        ctx.client.authenticated = false;
    }
    ctx.client.protocol = Protocol::Resp2;
    ctx.out.set_protocol(Protocol::Resp2);
    {
        let mut info = ctx.client.shared.info.lock();
        info.db = 0;
        info.name.clear();
        info.resp = 2;
        info.multi = -1;
        info.no_evict = false;
        info.no_touch = false;
        info.monitor = false;
    }
    ctx.out.simple(b"RESET");
}

fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

/// One CLIENT LIST / CLIENT INFO line; the client running it (`current`: its id and the
/// command's name) shows that command, as in Redis, where `lastcmd` is set before it runs.
fn client_line(client: &ClientShared, current: (u64, &str)) -> String {
    let info = client.info.lock().clone();
    let now = unix_ms();
    let age = client.created.elapsed().as_secs();
    let idle = now.saturating_sub(client.last_interaction_ms.load(Ordering::Relaxed)) / 1000;
    let cmd = if client.id == current.0 {
        current.1.to_string()
    } else {
        match client.last_cmd.load(Ordering::Relaxed) {
            0 => "NULL".into(),
            last => crate::command::COMMANDS[last - 1].name.to_string(),
        }
    };
    let b = Buffers::of(client);
    format!(
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem=0 multi-mem=0 rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events={} cmd={} user=default redir={} resp={} lib-name={} lib-ver={}",
        client.id,
        client.addr,
        client.laddr,
        client.fd,
        info.name,
        age,
        idle,
        client_flags(client, &info),
        info.db,
        info.subscriptions.0,
        info.subscriptions.1,
        info.subscriptions.2,
        info.multi,
        b.qbuf,
        b.qbuf_free,
        b.rbs,
        b.rbs,
        b.obl,
        b.oll,
        b.omem,
        b.tot_mem,
        if b.obl > 0 { "rw" } else { "r" },
        cmd,
        info.tracking.redir(),
        info.resp,
        info.lib_name,
        info.lib_ver
    )
}

/// Redis's `getClientType` name: `pubsub` for a client with subscriptions, else `normal`
/// (densekv has no replicas or masters; a MONITOR client is `normal`, as in Redis).
fn client_type(client: &ClientShared) -> &'static str {
    let (channels, patterns, shard_channels) = client.info.lock().subscriptions;
    if channels + patterns + shard_channels > 0 {
        "pubsub"
    } else {
        "normal"
    }
}

/// CLIENT LIST's `flags=`, in Redis's order.
fn client_flags(client: &ClientShared, info: &crate::server::ClientInfo) -> String {
    let mut flags = String::new();
    let (channels, patterns, shard_channels) = info.subscriptions;
    for (on, flag) in [
        (info.monitor, 'O'),
        (channels + patterns + shard_channels > 0, 'P'),
        (info.multi >= 0, 'x'),
        (client.blocked.load(Ordering::Relaxed), 'b'),
        (info.tracking.on, 't'),
        (info.tracking.broken, 'R'),
        (info.tracking.bcast, 'B'),
        (client.watch_dirty.load(Ordering::Relaxed), 'd'),
        (info.no_evict, 'e'),
        (info.no_touch, 'T'),
    ] {
        if on {
            flags.push(flag);
        }
    }
    if flags.is_empty() {
        flags.push('N');
    }
    flags
}

/// A connection's buffers in CLIENT LIST's terms. densekv has one reply buffer per connection
/// where Redis has a 16 KiB buffer (`obl` bytes used of `rbs`) and a list of 16 KiB blocks
/// after it (`oll` blocks holding `omem` bytes); the pending reply bytes are reported split the
/// same way, so `omem` is 0 for a client whose replies fit 16 KiB, as in Redis, and it is the
/// figure `client-output-buffer-limit` is checked against.
struct Buffers {
    qbuf: usize,
    qbuf_free: usize,
    rbs: usize,
    obl: usize,
    oll: usize,
    omem: usize,
    tot_mem: usize,
}

impl Buffers {
    fn of(client: &ClientShared) -> Buffers {
        const CHUNK: usize = 16 << 10;
        let b = &client.buffers;
        let pending = b.reply_bytes.load(Ordering::Relaxed);
        let obl = pending.min(CHUNK);
        let omem = pending - obl;
        Buffers {
            qbuf: b.query_bytes.load(Ordering::Relaxed),
            qbuf_free: b.query_free_bytes.load(Ordering::Relaxed),
            rbs: b.reply_capacity_bytes.load(Ordering::Relaxed).min(CHUNK),
            obl,
            oll: omem.div_ceil(CHUNK),
            omem,
            tot_mem: b.total_bytes.load(Ordering::Relaxed),
        }
    }
}

const CLIENT_HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
    "SETINFO <option> <value>",
    "    Set client meta attr. Options are:",
    "    * LIB-NAME: the client lib name.",
    "    * LIB-VER: the client lib version.",
    "HELP",
    "    Prints this help.",
];

fn on_off(ctx: &mut Ctx<'_, '_>, arg: &[u8]) -> Option<bool> {
    if is(arg, "on") {
        Some(true)
    } else if is(arg, "off") {
        Some(false)
    } else {
        ctx.syntax_error();
        None
    }
}

pub fn client_help(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    ctx.out.array_len(CLIENT_HELP.len());
    for line in CLIENT_HELP {
        ctx.out.simple(line.as_bytes());
    }
}

pub fn client_id(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    ctx.out.integer(ctx.client.shared.id as i64);
}

/// CLIENT INFO: this connection's CLIENT LIST line.
pub fn client_info(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let line = client_line(&ctx.client.shared, (ctx.client.shared.id, "client|info")) + "\n";
    ctx.out.verbatim(line.as_bytes(), *b"txt");
}

/// CLIENT GETNAME: the connection's name, or null when it has none.
pub fn client_getname(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let name = ctx.client.shared.info.lock().name.clone();
    if name.is_empty() {
        ctx.out.null();
    } else {
        ctx.out.bulk(name.as_bytes());
    }
}

/// CLIENT SETNAME: names the connection, if the name has no spaces or special characters.
pub fn client_setname(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let name = args[2];
    if !valid_name(name) {
        return ctx
            .error("ERR Client names cannot contain spaces, newlines or special characters.");
    }
    ctx.client.shared.info.lock().name = String::from_utf8_lossy(name).into_owned();
    ctx.ok();
}

/// CLIENT SETINFO: records the name or the version of the client's library.
pub fn client_setinfo(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (option, value) = (args[2], args[3]);
    let text = String::from_utf8_lossy(value).into_owned();
    if !value.iter().all(|&b| (b'!'..=b'~').contains(&b)) {
        return ctx.error(&format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            String::from_utf8_lossy(option).to_lowercase()
        ));
    }
    if is(option, "lib-name") {
        ctx.client.shared.info.lock().lib_name = text;
    } else if is(option, "lib-ver") {
        ctx.client.shared.info.lock().lib_ver = text;
    } else {
        return ctx.error(&format!(
            "ERR Unrecognized option '{}'",
            String::from_utf8_lossy(option)
        ));
    }
    ctx.ok();
}

/// CLIENT REPLY: switches the connection's replies on, off, or off for the next command only.
pub fn client_reply(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let mode = args[2];
    if is(mode, "on") {
        ctx.client.reply_mode = ReplyMode::On;
        ctx.ok();
    } else if is(mode, "off") {
        ctx.client.reply_mode = ReplyMode::Off;
    } else if is(mode, "skip") {
        ctx.client.reply_mode = ReplyMode::Skip;
    } else {
        ctx.syntax_error();
    }
}

/// CLIENT PAUSE timeout [WRITE|ALL] (`pause.rs`).
pub fn client_pause(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    use crate::pause::Kind;
    if args.len() > 4 {
        return super::server::subcommand_syntax_error(ctx, args);
    }
    let kind = match args.get(3) {
        None => Kind::All,
        Some(mode) if is(mode, "write") => Kind::Write,
        Some(mode) if is(mode, "all") => Kind::All,
        Some(_) => return ctx.error("ERR CLIENT PAUSE mode must be WRITE or ALL"),
    };
    let Some(ms) = parse_i64(args[2]) else {
        return ctx.error("ERR timeout is not an integer or out of range");
    };
    if ms < 0 {
        return ctx.error("ERR timeout is negative");
    }
    // Redis adds the time now only to a positive timeout: 0 is a pause that already ended.
    let end = if ms > 0 {
        ctx.now_ms.saturating_add(ms as u64)
    } else {
        0
    };
    ctx.server.pause.pause(kind, end, ctx.now_ms);
    ctx.ok();
}

/// CLIENT UNPAUSE: lifts the pause; every thread retries what it postponed.
pub fn client_unpause(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    ctx.server.pause.unpause();
    ctx.server.wake_all();
    ctx.ok();
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: ends a client's BLPOP & co. as if it timed out, or with
/// an `-UNBLOCKED` error.
pub fn client_unblock(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len() > 4 {
        return super::server::subcommand_syntax_error(ctx, args);
    }
    let error = match args.get(3) {
        None => false,
        Some(reason) if is(reason, "timeout") => false,
        Some(reason) if is(reason, "error") => true,
        Some(_) => return ctx.error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
    };
    let Some(id) = parse_i64(args[2]) else {
        return ctx.not_integer();
    };
    let unblocked =
        u64::try_from(id).is_ok_and(|id| crate::blocking::unblock(ctx.server, id, error));
    ctx.out.integer(i64::from(unblocked));
}

/// CLIENT NO-EVICT: sets or clears the connection's no-evict flag.
pub fn client_no_evict(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    client_no_flag(ctx, args[1], args[2]);
}

/// CLIENT NO-TOUCH: sets or clears the connection's no-touch flag.
pub fn client_no_touch(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    client_no_flag(ctx, args[1], args[2]);
}

/// CLIENT NO-EVICT and CLIENT NO-TOUCH (`sub`): sets or clears that flag of the connection.
fn client_no_flag(ctx: &mut Ctx<'_, '_>, sub: &[u8], arg: &[u8]) {
    let Some(on) = on_off(ctx, arg) else {
        return;
    };
    let mut info = ctx.client.shared.info.lock();
    if is(sub, "no-evict") {
        info.no_evict = on;
    } else {
        info.no_touch = on;
    }
    drop(info);
    ctx.ok();
}

pub fn client_list(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let mut ids: Option<Vec<u64>> = None;
    let mut kind: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        if is(args[i], "type") && i + 1 < args.len() {
            let t = args[i + 1];
            if !["normal", "master", "replica", "slave", "pubsub"]
                .iter()
                .any(|k| is(t, k))
            {
                return ctx.error(&format!(
                    "ERR Unknown client type '{}'",
                    String::from_utf8_lossy(t)
                ));
            }
            kind = Some(t);
            i += 2;
        } else if is(args[i], "id") && i + 1 < args.len() {
            let mut list = ids.take().unwrap_or_default();
            for a in &args[i + 1..] {
                match parse_i64(a) {
                    Some(id) if id > 0 => list.push(id as u64),
                    _ => return ctx.error("ERR Invalid client ID"),
                }
            }
            ids = Some(list);
            i = args.len();
        } else {
            return ctx.syntax_error();
        }
    }
    let mut clients: Vec<_> = ctx.server.clients.lock().values().cloned().collect();
    clients.sort_by_key(|c| c.id);
    let mut text = String::new();
    for c in clients {
        if ids.as_ref().is_some_and(|ids| !ids.contains(&c.id))
            || kind.is_some_and(|k| !is(k, client_type(&c)))
        {
            continue;
        }
        text.push_str(&client_line(&c, (ctx.client.shared.id, "client|list")));
        text.push('\n');
    }
    ctx.out.verbatim(text.as_bytes(), *b"txt");
}

pub fn client_kill(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let clients: Vec<_> = ctx.server.clients.lock().values().cloned().collect();
    if args.len() == 3 {
        let addr = String::from_utf8_lossy(args[2]);
        let Some(target) = clients.iter().find(|c| c.addr == addr) else {
            return ctx.error("ERR No such client");
        };
        kill(ctx, target);
        return ctx.ok();
    }
    let filters = match kill_filters(args) {
        Ok(filters) => filters,
        Err(text) => return ctx.error(&text),
    };
    let skip_me = !filters
        .iter()
        .any(|&(opt, value)| is(opt, "skipme") && is(value, "no"));
    let mut killed = 0;
    for c in &clients {
        if kill_matches(c, &filters) && !(skip_me && c.id == ctx.client.shared.id) {
            kill(ctx, c);
            killed += 1;
        }
    }
    ctx.out.integer(killed);
}

/// One CLIENT KILL `<option> <value>` pair.
type KillFilter<'a> = (&'a [u8], &'a [u8]);

/// CLIENT KILL's `<option> <value>` pairs, checked as Redis checks them (the error text when
/// one is wrong).
fn kill_filters<'a>(args: &[&'a [u8]]) -> Result<Vec<KillFilter<'a>>, String> {
    if !args.len().is_multiple_of(2) {
        return Err("ERR syntax error".into());
    }
    let mut filters = Vec::new();
    for pair in args[2..].chunks(2) {
        let (opt, value) = (pair[0], pair[1]);
        let text = String::from_utf8_lossy(value);
        if is(opt, "skipme") {
            if !is(value, "yes") && !is(value, "no") {
                return Err("ERR syntax error".into());
            }
        } else if is(opt, "id") {
            if parse_i64(value).is_none_or(|v| v <= 0) {
                return Err("ERR client-id should be greater than 0".into());
            }
        } else if is(opt, "type") {
            if !["normal", "master", "replica", "slave", "pubsub"]
                .iter()
                .any(|k| is(value, k))
            {
                return Err(format!("ERR Unknown client type '{text}'"));
            }
        } else if is(opt, "user") {
            if value != b"default" {
                return Err(format!("ERR No such user '{text}'"));
            }
        } else if !is(opt, "addr") && !is(opt, "laddr") {
            return Err("ERR syntax error".into());
        }
        filters.push((opt, value));
    }
    Ok(filters)
}

/// Whether client `c` passes every CLIENT KILL filter (SKIPME is applied by the caller).
fn kill_matches(c: &ClientShared, filters: &[KillFilter<'_>]) -> bool {
    filters.iter().all(|&(opt, value)| {
        let value = String::from_utf8_lossy(value);
        if is(opt, "id") {
            value.parse::<u64>().is_ok_and(|id| id == c.id)
        } else if is(opt, "addr") {
            c.addr == value
        } else if is(opt, "laddr") {
            c.laddr == value
        } else if is(opt, "type") {
            value.eq_ignore_ascii_case(client_type(c))
        } else {
            // USER (only `default` exists, checked by `kill_filters`) and SKIPME.
            true
        }
    })
}

fn kill(ctx: &mut Ctx<'_, '_>, target: &ClientShared) {
    if target.id == ctx.client.shared.id {
        ctx.client.close_after_reply = true;
        return;
    }
    ctx.server.kill(target);
}
