//! FUNCTION and FCALL (Redis's `functions.c`). Libraries live in `crate::scripting::functions`;
//! FCALL runs with every shard locked, as EVAL does.

use crate::command::flag::{
    ALLOW_BUSY, DENYOOM, LOADING, MAY_REPLICATE, NO_MANDATORY_KEYS, NONE, NOSCRIPT, READONLY,
    SKIP_MONITOR, STALE, WRITE,
};
use crate::command::{ALL, Ctx, NOKEYS, Spec, container, table};
use crate::scripting::{busy, flags, functions};

const FCALL_FLAGS: u32 = NOSCRIPT | SKIP_MONITOR | MAY_REPLICATE | NO_MANDATORY_KEYS | STALE;
const FCALL_RO_FLAGS: u32 = NOSCRIPT | SKIP_MONITOR | NO_MANDATORY_KEYS | STALE | READONLY;

pub static COMMANDS: &[Spec] = table! {
    // name          arity, flags,           keys,   member, handler,   subcommands
    "fcall",         -3,    FCALL_FLAGS,     ALL,    0,      fcall;
    "fcall_ro",      -3,    FCALL_RO_FLAGS,  ALL,    0,      fcall_ro;
    "function",      -2,    NONE,            NOKEYS, 0,      container, FUNCTION_SUBCOMMANDS;
};

static FUNCTION_SUBCOMMANDS: &[Spec] = table! {
    // name                arity, flags,                        keys,   member, handler
    "function|load",       -3,    NOSCRIPT | WRITE | DENYOOM,   NOKEYS, 0,      load;
    "function|delete",     3,     NOSCRIPT | WRITE,             NOKEYS, 0,      delete;
    "function|flush",      -2,    NOSCRIPT | WRITE,             NOKEYS, 0,      flush;
    "function|list",       -2,    NOSCRIPT,                     NOKEYS, 0,      list;
    "function|dump",       2,     NOSCRIPT,                     NOKEYS, 0,      dump;
    "function|restore",    -3,    NOSCRIPT | WRITE | DENYOOM,   NOKEYS, 0,      restore;
    "function|stats",      2,     NOSCRIPT | ALLOW_BUSY,        NOKEYS, 0,      stats;
    "function|kill",       2,     NOSCRIPT | ALLOW_BUSY,        NOKEYS, 0,      kill;
    "function|help",       2,     LOADING | STALE,              NOKEYS, 0,      help;
};

pub fn fcall(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    functions::fcall(ctx, args, false);
}

pub fn fcall_ro(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    functions::fcall(ctx, args, true);
}

/// A library change is a change of the dataset: counted dirty, written to the AOF.
fn changed(ctx: &mut Ctx<'_, '_>) {
    ctx.effects.dirty.set(ctx.effects.dirty.get() + 1);
    ctx.server.hot.local().add(|c| &c.dirty, 1);
}

fn load(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let mut replace = false;
    let mut at = 2;
    while at < args.len() - 1 {
        if super::is(args[at], "replace") {
            replace = true;
            at += 1;
            continue;
        }
        return ctx.error(&format!(
            "ERR Unknown option given: {}",
            String::from_utf8_lossy(args[at])
        ));
    }
    let loaded = functions::load(
        &mut ctx.server.scripting.libraries.write(),
        args[at],
        replace,
    );
    match loaded {
        Ok(name) => {
            changed(ctx);
            ctx.out.bulk(name.as_bytes());
        }
        Err(text) => ctx.error(&format!("ERR {text}")),
    }
}

fn delete(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let name = String::from_utf8_lossy(args[2]);
    if !functions::remove(&mut ctx.server.scripting.libraries.write(), &name) {
        return ctx.error("ERR Library not found");
    }
    changed(ctx);
    ctx.ok();
}

fn flush(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len() > 3 {
        return super::server::subcommand_syntax_error(ctx, args);
    }
    let valid = match args {
        [_, _] => true,
        [_, _, mode] => super::is(mode, "sync") || super::is(mode, "async"),
        _ => false,
    };
    if !valid {
        return ctx.error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    }
    functions::clear(ctx.server);
    changed(ctx);
    ctx.ok();
}

fn list(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (mut with_code, mut pattern) = (false, None);
    let mut at = 2;
    while at < args.len() {
        let arg = args[at];
        at += 1;
        if super::is(arg, "withcode") && !with_code {
            with_code = true;
            continue;
        }
        if super::is(arg, "libraryname") && pattern.is_none() {
            let Some(p) = args.get(at) else {
                return ctx.error("ERR library name argument was not given");
            };
            pattern = Some(*p);
            at += 1;
            continue;
        }
        return ctx.error(&format!(
            "ERR Unknown argument {}",
            String::from_utf8_lossy(arg)
        ));
    }
    // Redis matches the pattern without regard to case (`stringmatchlen(…, nocase = 1)`).
    let glob = pattern.map(|p| store::glob::Glob::new(&p.to_ascii_lowercase()));
    let registry = ctx.server.scripting.libraries.read();
    let shown: Vec<_> = registry
        .libraries
        .values()
        .filter(|l| {
            glob.as_ref()
                .is_none_or(|g| g.matches(l.name.to_ascii_lowercase().as_bytes()))
        })
        .collect();
    let out = &mut ctx.out;
    out.array_len(shown.len());
    for library in shown {
        out.map_len(if with_code { 4 } else { 3 });
        out.bulk(b"library_name");
        out.bulk(library.name.as_bytes());
        out.bulk(b"engine");
        out.bulk(b"LUA");
        out.bulk(b"functions");
        out.array_len(library.functions.len());
        for f in &library.functions {
            out.map_len(3);
            out.bulk(b"name");
            out.bulk(f.name.as_bytes());
            out.bulk(b"description");
            match &f.description {
                Some(d) => out.bulk(d),
                None => out.null(),
            }
            out.bulk(b"flags");
            let names: Vec<&str> = flags::NAMES
                .iter()
                .filter(|(bit, _)| f.flags & bit != 0)
                .map(|(_, name)| *name)
                .collect();
            out.set_len(names.len());
            for name in names {
                // Redis's `functionListReplyFlags` replies them as status strings.
                out.simple(name.as_bytes());
            }
        }
        if with_code {
            out.bulk(b"library_code");
            out.bulk(&library.code);
        }
    }
}

fn dump(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let compress = ctx.server.config.read().rdbcompression;
    let registry = ctx.server.scripting.libraries.read();
    let codes: Vec<&[u8]> = registry
        .libraries
        .values()
        .map(|l| l.code.as_slice())
        .collect();
    let payload = persist::dump::create_functions(&codes, compress);
    drop(registry);
    ctx.out.bulk(&payload);
}

fn restore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let policy = match args.get(3) {
        None => "append",
        Some(p) if super::is(p, "append") => "append",
        Some(p) if super::is(p, "replace") => "replace",
        Some(p) if super::is(p, "flush") => "flush",
        Some(_) => {
            return ctx.error(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            );
        }
    };
    if args.len() > 4 {
        return ctx.error(
            "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
        );
    }
    let codes = match persist::dump::read_functions(args[2]) {
        Ok(codes) => codes,
        Err(persist::dump::FunctionsError::VersionOrChecksum) => {
            return ctx.error("ERR DUMP payload version or checksum are wrong");
        }
        Err(persist::dump::FunctionsError::Bad(text)) => return ctx.error(&format!("ERR {text}")),
    };
    // As Redis's `functionRestoreCommand`: the payload's libraries load on their own, then
    // join the current ones (`libraryJoin`), whose errors name no quotes.
    let mut incoming = functions::Registry::default();
    for code in &codes {
        if let Err(text) = functions::load(&mut incoming, code, false) {
            return ctx.error(&format!("ERR {text}"));
        }
    }
    let mut registry = ctx.server.scripting.libraries.write();
    let mut next = match policy {
        "flush" => incoming,
        _ => match functions::join(&registry, incoming, policy == "replace") {
            Ok(joined) => joined,
            Err(text) => return ctx.error(&format!("ERR {text}")),
        },
    };
    next.generation = registry.generation + 1;
    *registry = next;
    drop(registry);
    changed(ctx);
    ctx.ok();
}

fn stats(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let server = ctx.server;
    let running = &server.scripting.running;
    let started = running
        .started_ms
        .load(std::sync::atomic::Ordering::Acquire);
    if started != 0 && running.eval.load(std::sync::atomic::Ordering::Relaxed) {
        return ctx.error(busy::BUSY_EVAL);
    }
    let (libraries, functions_count) = {
        let registry = server.scripting.libraries.read();
        (registry.libraries.len(), registry.functions.len())
    };
    let out = &mut ctx.out;
    out.map_len(2);
    out.bulk(b"running_script");
    if started == 0 {
        out.null();
    } else {
        let (name, command) = running.name.lock().clone();
        out.map_len(3);
        out.bulk(b"name");
        out.bulk(name.as_bytes());
        out.bulk(b"command");
        out.array_len(command.len());
        for part in &command {
            out.bulk(part);
        }
        out.bulk(b"duration_ms");
        out.integer(busy::now_ms().saturating_sub(started) as i64);
    }
    out.bulk(b"engines");
    out.map_len(1);
    out.bulk(b"LUA");
    out.map_len(2);
    out.bulk(b"libraries_count");
    out.integer(libraries as i64);
    out.bulk(b"functions_count");
    out.integer(functions_count as i64);
}

fn kill(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    match busy::kill(ctx.server, false) {
        Ok(()) => ctx.ok(),
        Err(text) => ctx.error(text),
    }
}

fn help(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    const LINES: &[&str] = &[
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.",
    ];
    super::server::help(ctx, LINES);
}
