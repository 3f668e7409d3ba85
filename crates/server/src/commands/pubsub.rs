//! The pub/sub family: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their UNSUBSCRIBEs, PUBLISH,
//! SPUBLISH and PUBSUB's introspection. The registry and delivery are `crate::pubsub`.
//! Shard channels behave as in a Redis without cluster mode: one more namespace, never matched by
//! patterns, counted apart.

use super::server::subcommand_syntax_error;
use crate::command::flag::{FAST, LOADING, MAY_REPLICATE, NONE, NOSCRIPT, PUBSUB, STALE};
use crate::command::{Ctx, NOKEYS, Spec, container, table};
use crate::pubsub::{self, Kind, Publisher};

pub static COMMANDS: &[Spec] = table! {
    // name          arity, flags,                                             keys,   member, handler,   subcommands
    "subscribe",     -2,    PUBSUB | NOSCRIPT | LOADING | STALE,               NOKEYS, 0,      subscribe;
    "unsubscribe",   -1,    PUBSUB | NOSCRIPT | LOADING | STALE,               NOKEYS, 0,      unsubscribe;
    "psubscribe",    -2,    PUBSUB | NOSCRIPT | LOADING | STALE,               NOKEYS, 0,      psubscribe;
    "punsubscribe",  -1,    PUBSUB | NOSCRIPT | LOADING | STALE,               NOKEYS, 0,      punsubscribe;
    "publish",       3,     PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE,   NOKEYS, 0,      publish;
    "ssubscribe",    -2,    PUBSUB | NOSCRIPT | LOADING | STALE,               NOKEYS, 0,      ssubscribe;
    "sunsubscribe",  -1,    PUBSUB | NOSCRIPT | LOADING | STALE,               NOKEYS, 0,      sunsubscribe;
    "spublish",      3,     PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE,   NOKEYS, 0,      spublish;
    "pubsub",        -2,    NONE,                                              NOKEYS, 0,      container, PUBSUB_SUBCOMMANDS;
};

static PUBSUB_SUBCOMMANDS: &[Spec] = table! {
    // name                   arity, flags,                    keys,   member, handler
    "pubsub|channels",        -2,    PUBSUB | LOADING | STALE, NOKEYS, 0,      channels;
    "pubsub|numsub",          -2,    PUBSUB | LOADING | STALE, NOKEYS, 0,      numsub;
    "pubsub|numpat",          2,     PUBSUB | LOADING | STALE, NOKEYS, 0,      numpat;
    "pubsub|shardchannels",   -2,    PUBSUB | LOADING | STALE, NOKEYS, 0,      shardchannels;
    "pubsub|shardnumsub",     -2,    PUBSUB | LOADING | STALE, NOKEYS, 0,      shardnumsub;
    "pubsub|help",            2,     LOADING | STALE,          NOKEYS, 0,      help;
};

fn subscribe_kind(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], kind: Kind, name: &str) {
    // Inside MULTI a subscribe is allowed (Redis keeps it for compatibility); a client that
    // must get one reply per command cannot subscribe (Redis's CLIENT_DENY_BLOCKING: the
    // transactions of scripts, later).
    if ctx.client.in_exec && kind == Kind::Shard {
        return ctx.error(&format!(
            "ERR {name} isn't allowed for a DENY BLOCKING client"
        ));
    }
    let server = ctx.server;
    ctx.with_push_out(|client, out| pubsub::subscribe(server, client, out, kind, &args[1..]));
}

pub fn subscribe(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    subscribe_kind(ctx, args, Kind::Channel, "SUBSCRIBE");
}

pub fn psubscribe(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    subscribe_kind(ctx, args, Kind::Pattern, "PSUBSCRIBE");
}

pub fn ssubscribe(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    subscribe_kind(ctx, args, Kind::Shard, "SSUBSCRIBE");
}

fn unsubscribe_kind(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], kind: Kind) {
    let server = ctx.server;
    ctx.with_push_out(|client, out| {
        pubsub::unsubscribe(server, client, Some(out), kind, &args[1..]);
    });
}

pub fn unsubscribe(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    unsubscribe_kind(ctx, args, Kind::Channel);
}

pub fn punsubscribe(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    unsubscribe_kind(ctx, args, Kind::Pattern);
}

pub fn sunsubscribe(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    unsubscribe_kind(ctx, args, Kind::Shard);
}

fn publish_kind(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], sharded: bool) {
    let server = ctx.server;
    let receivers = ctx.with_push_out(|client, out| {
        let publisher = Publisher::of(client, out);
        pubsub::publish(server, sharded, args[1], args[2], Some(publisher))
    });
    ctx.out.integer(receivers as i64);
}

pub fn publish(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    publish_kind(ctx, args, false);
}

pub fn spublish(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    publish_kind(ctx, args, true);
}

fn list_channels(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], shard: bool) {
    if args.len() > 3 {
        return subcommand_syntax_error(ctx, args);
    }
    let channels = ctx.server.pubsub.channels(shard, args.get(2).copied());
    ctx.out.array_len(channels.len());
    for channel in &channels {
        ctx.out.bulk(channel);
    }
}

fn count_subscribers(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], shard: bool) {
    // RESP3 clients get a map (Redis replies with an array of pairs in both protocols).
    ctx.out.array_len((args.len() - 2) * 2);
    for &channel in &args[2..] {
        ctx.out.bulk(channel);
        let count = ctx.server.pubsub.numsub(shard, channel);
        ctx.out.integer(count as i64);
    }
}

pub fn channels(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    list_channels(ctx, args, false);
}

pub fn shardchannels(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    list_channels(ctx, args, true);
}

pub fn numsub(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    count_subscribers(ctx, args, false);
}

pub fn shardnumsub(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    count_subscribers(ctx, args, true);
}

pub fn numpat(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let count = ctx.server.pubsub.numpat();
    ctx.out.integer(count as i64);
}

pub fn help(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    const LINES: &[&str] = &[
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Prints this help.",
    ];
    super::server::help(ctx, LINES);
}
