//! CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO: client-side caching's commands, with
//! Redis 7.0's checks in its order and its error texts (`clientCommand` in src/networking.c);
//! the table lines are in `connection.rs`'s CLIENT table, the subsystem in `crate::tracking`.

use super::args::{is, parse_i64};
use crate::command::Ctx;
use crate::tracking::Options;

/// An error reply whose text carries arguments as they are (prefixes need not be UTF-8).
fn error_bytes(ctx: &mut Ctx<'_, '_>, text: &[u8]) {
    ctx.failed = true;
    ctx.server.count_error(text);
    ctx.out.error(text);
}

/// `arg` as C's `%s` prints it: up to its first NUL byte.
fn c_str(arg: &[u8]) -> &[u8] {
    arg.iter()
        .position(|&b| b == 0)
        .map_or(arg, |end| &arg[..end])
}

/// Redis's `stringCheckPrefix`: one is a prefix of the other.
fn overlap(a: &[u8], b: &[u8]) -> bool {
    let len = a.len().min(b.len());
    a[..len] == b[..len]
}

/// Redis's `checkPrefixCollisionsOrReply`: no new prefix may overlap one the client has or
/// another new one; replies the error and returns false when one does.
///
/// Redis 7.0.15 returns the index of the first prefix of an overlapping new pair, so an overlap
/// found for any but the first new prefix replies the error and then enables tracking and
/// replies OK as well — two replies to one command. densekv replies the error alone and
/// changes nothing, which is what Redis means to do (and does for the first prefix).
fn prefixes_collide(ctx: &mut Ctx<'_, '_>, prefixes: &[&[u8]]) -> bool {
    let existing: Vec<Box<[u8]>> = ctx
        .client
        .tracking
        .as_ref()
        .map(|t| t.prefixes.iter().cloned().collect())
        .unwrap_or_default();
    for (i, &prefix) in prefixes.iter().enumerate() {
        if let Some(old) = existing.iter().find(|old| overlap(old, prefix)) {
            let text = [
                &b"ERR Prefix '"[..],
                c_str(prefix),
                b"' overlaps with an existing prefix '",
                c_str(old),
                b"'. Prefixes for a single client must not overlap.",
            ]
            .concat();
            error_bytes(ctx, &text);
            return true;
        }
        if let Some(&other) = prefixes[i + 1..].iter().find(|&&p| overlap(prefix, p)) {
            let text = [
                &b"ERR Prefix '"[..],
                c_str(prefix),
                b"' overlaps with another provided prefix '",
                c_str(other),
                b"'. Prefixes for a single client must not overlap.",
            ]
            .concat();
            error_bytes(ctx, &text);
            return true;
        }
    }
    false
}

/// What CLIENT TRACKING's options say: the redirect target, the modes, the prefixes.
struct Request<'a> {
    redirect: u64,
    options: Options,
    prefixes: Vec<&'a [u8]>,
}

/// Parses the options after ON/OFF as Redis does, replying the first error (an unknown option,
/// a second REDIRECT, a target that is not an integer or not connected) in argument order.
fn parse<'a>(ctx: &mut Ctx<'_, '_>, args: &[&'a [u8]]) -> Option<Request<'a>> {
    let mut request = Request {
        redirect: 0,
        options: Options::default(),
        prefixes: Vec::new(),
    };
    let mut j = 3;
    while j < args.len() {
        let more = j + 1 < args.len();
        let option = args[j];
        if is(option, "redirect") && more {
            j += 1;
            if request.redirect != 0 {
                ctx.error("ERR A client can only redirect to a single other client");
                return None;
            }
            let Some(id) = parse_i64(args[j]) else {
                ctx.not_integer();
                return None;
            };
            // Redis keeps the id as a uint64: a negative one names no client.
            request.redirect = id as u64;
            if !ctx.server.clients.lock().contains_key(&request.redirect) {
                ctx.error("ERR The client ID you want redirect to does not exist");
                return None;
            }
        } else if is(option, "bcast") {
            request.options.bcast = true;
        } else if is(option, "optin") {
            request.options.optin = true;
        } else if is(option, "optout") {
            request.options.optout = true;
        } else if is(option, "noloop") {
            request.options.noloop = true;
        } else if is(option, "prefix") && more {
            j += 1;
            request.prefixes.push(args[j]);
        } else {
            ctx.syntax_error();
            return None;
        }
        j += 1;
    }
    Some(request)
}

/// The checks of CLIENT TRACKING ON against the options and the client's current mode, in
/// Redis's order; replies the error and returns false on the first that fails.
fn compatible(ctx: &mut Ctx<'_, '_>, request: &Request<'_>) -> bool {
    let options = request.options;
    let current = ctx
        .client
        .tracking
        .as_ref()
        .map(|t| (t.bcast, t.optin, t.optout));
    let text = if !options.bcast && !request.prefixes.is_empty() {
        "ERR PREFIX option requires BCAST mode to be enabled"
    } else if current.is_some_and(|(bcast, _, _)| bcast != options.bcast) {
        "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
    } else if options.bcast && (options.optin || options.optout) {
        "ERR OPTIN and OPTOUT are not compatible with BCAST"
    } else if options.optin && options.optout {
        "ERR You can't specify both OPTIN mode and OPTOUT mode"
    } else if current
        .is_some_and(|(_, optin, optout)| (options.optin && optout) || (options.optout && optin))
    {
        "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
    } else {
        return !(options.bcast && prefixes_collide(ctx, &request.prefixes));
    };
    ctx.error(text);
    false
}

/// CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p]… [OPTIN] [OPTOUT] [NOLOOP].
pub fn client_tracking(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(request) = parse(ctx, args) else {
        return;
    };
    if is(args[2], "on") {
        if !compatible(ctx, &request) {
            return;
        }
        crate::tracking::enable(
            ctx.server,
            ctx.client,
            request.redirect,
            request.options,
            &request.prefixes,
        );
    } else if is(args[2], "off") {
        crate::tracking::disable(ctx.server, ctx.client);
    } else {
        return ctx.syntax_error();
    }
    ctx.ok();
}

/// CLIENT CACHING YES|NO: whether the next command's keys are tracked, in OPTIN (YES) or
/// OPTOUT (NO) mode.
pub fn client_caching(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(mode) = ctx.client.tracking.as_deref_mut() else {
        return ctx.error(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        );
    };
    let text = if is(args[2], "yes") {
        if mode.optin {
            mode.caching = true;
            None
        } else {
            Some("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
        }
    } else if is(args[2], "no") {
        if mode.optout {
            mode.caching = true;
            None
        } else {
            Some("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
        }
    } else {
        return ctx.syntax_error();
    };
    match text {
        Some(text) => ctx.error(text),
        None => ctx.ok(),
    }
}

/// CLIENT GETREDIR: the redirect target while tracking (0: none), else -1.
pub fn client_getredir(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let redirect = ctx
        .client
        .tracking
        .as_ref()
        .map_or(-1, |t| t.redirect as i64);
    ctx.out.integer(redirect);
}

/// CLIENT TRACKINGINFO: a map of the flags (a set), the redirect target and the prefixes.
pub fn client_trackinginfo(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let broken = ctx.client.shared.info.lock().tracking.broken;
    let mode = ctx.client.tracking.as_deref();
    let mut flags: Vec<&[u8]> = vec![if mode.is_some() { b"on" } else { b"off" }];
    let mut prefixes: Vec<&[u8]> = Vec::new();
    if let Some(mode) = mode {
        for (on, name) in [
            (mode.bcast, &b"bcast"[..]),
            (mode.optin, b"optin"),
            (mode.optin && mode.caching, b"caching-yes"),
            (mode.optout, b"optout"),
            (mode.optout && mode.caching, b"caching-no"),
            (mode.noloop, b"noloop"),
            (broken, b"broken_redirect"),
        ] {
            if on {
                flags.push(name);
            }
        }
        prefixes.extend(mode.prefixes.iter().map(|p| &**p));
    }
    let redirect = mode.map_or(-1, |t| t.redirect as i64);
    let out = &mut ctx.out;
    out.map_len(3);
    out.bulk(b"flags");
    out.set_len(flags.len());
    for flag in flags {
        out.bulk(flag);
    }
    out.bulk(b"redirect");
    out.integer(redirect);
    out.bulk(b"prefixes");
    out.array_len(prefixes.len());
    for prefix in prefixes {
        out.bulk(prefix);
    }
}
