//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (Redis's `eval.c`). The scripts themselves
//! run in `crate::scripting`: every shard is locked for them (`ALL`), which is what makes a
//! script atomic whichever shards its keys live on.

use crate::command::flag::{
    ALLOW_BUSY, LOADING, MAY_REPLICATE, NO_MANDATORY_KEYS, NONE, NOSCRIPT, READONLY, SKIP_MONITOR,
    STALE,
};
use crate::command::{ALL, Ctx, NOKEYS, Spec, container, table};
use crate::scripting::{busy, eval};

const EVAL_FLAGS: u32 = NOSCRIPT | SKIP_MONITOR | MAY_REPLICATE | NO_MANDATORY_KEYS | STALE;
const EVAL_RO_FLAGS: u32 = NOSCRIPT | SKIP_MONITOR | NO_MANDATORY_KEYS | STALE | READONLY;

pub static COMMANDS: &[Spec] = table! {
    // name          arity, flags,          keys,   member, handler,   subcommands
    "eval",          -3,    EVAL_FLAGS,     ALL,    0,      eval_command;
    "evalsha",       -3,    EVAL_FLAGS,     ALL,    0,      evalsha;
    "eval_ro",       -3,    EVAL_RO_FLAGS,  ALL,    0,      eval_ro;
    "evalsha_ro",    -3,    EVAL_RO_FLAGS,  ALL,    0,      evalsha_ro;
    "script",        -2,    NONE,           NOKEYS, 0,      container, SCRIPT_SUBCOMMANDS;
};

static SCRIPT_SUBCOMMANDS: &[Spec] = table! {
    // name             arity, flags,                  keys,   member, handler
    "script|load",      3,     NOSCRIPT | STALE,       NOKEYS, 0,      load;
    "script|exists",    -3,    NOSCRIPT,               NOKEYS, 0,      exists;
    "script|flush",     -2,    NOSCRIPT,               NOKEYS, 0,      flush;
    "script|kill",      2,     NOSCRIPT | ALLOW_BUSY,  NOKEYS, 0,      kill;
    "script|debug",     3,     NOSCRIPT,               NOKEYS, 0,      debug;
    "script|help",      2,     LOADING | STALE,        NOKEYS, 0,      help;
};

pub fn eval_command(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    eval::eval(ctx, args, false, false);
}

pub fn evalsha(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    eval::eval(ctx, args, true, false);
}

pub fn eval_ro(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    eval::eval(ctx, args, false, true);
}

pub fn evalsha_ro(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    eval::eval(ctx, args, true, true);
}

fn load(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    match eval::create(ctx.server, args[2]) {
        Ok((sha, _)) => ctx.out.bulk(sha.as_bytes()),
        Err(text) => ctx.error(&text),
    }
}

fn exists(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    ctx.out.array_len(args.len() - 2);
    for sha in &args[2..] {
        let found = ctx.server.scripting.cached(sha).is_some();
        ctx.out.integer(i64::from(found));
    }
}

fn flush(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let valid = match args {
        [_, _] => true,
        [_, _, mode] => super::is(mode, "sync") || super::is(mode, "async"),
        _ => false,
    };
    if !valid {
        return ctx.error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    }
    ctx.server.scripting.flush();
    ctx.ok();
}

fn kill(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    match busy::kill(ctx.server, true) {
        Ok(()) => ctx.ok(),
        Err(text) => ctx.error(text),
    }
}

/// SCRIPT DEBUG: `NO` (the only mode densekv runs scripts in) is accepted; `YES` and `SYNC`
/// ask for Redis's Lua debugger, which densekv does not have, and get an error saying so.
fn debug(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let mode = args[2];
    if super::is(mode, "no") {
        ctx.ok();
    } else if super::is(mode, "yes") || super::is(mode, "sync") {
        ctx.error("ERR The Lua debugger (SCRIPT DEBUG YES|SYNC) is not available in densekv");
    } else {
        ctx.error("ERR Use SCRIPT DEBUG YES/SYNC/NO");
    }
}

fn help(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    const LINES: &[&str] = &[
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed.",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.",
    ];
    super::server::help(ctx, LINES);
}
