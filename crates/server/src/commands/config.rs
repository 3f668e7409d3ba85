//! CONFIG GET / SET / REWRITE / RESETSTAT / HELP, as redis-server 7.0's `configGetCommand`,
//! `configSetCommand` and `rewriteConfig` do them, over the directive table of `config/`.
//!
//! * GET: any number of patterns; a name without `*?[` is looked up exactly (hidden directives
//!   only this way, and the reply names it as it was asked), a pattern is matched, without case,
//!   against every name and alias. Each directive answers once; RESP3 gets a map. The pairs come
//!   sorted by name (Redis's come in its dict's order, which is no order a client can use).
//! * SET: every pair is looked up and checked first (unknown, immutable, protected, duplicate:
//!   the first problem wins and nothing changes); then all values are set on a copy of the
//!   configuration, then the run-time applies of the changed ones run (each once); a failed set
//!   or apply restores the working directory and re-applies the old values, so CONFIG SET is
//!   all or nothing. Only then does the copy replace the configuration.
//! * REWRITE: `config::rewrite_file` on the file the server started from.
//!
//! Each handler takes the full argument list (`CONFIG GET …` is `args[0..]`): the subcommand
//! table of CONFIG (in `server.rs`) points `config|get` straight at [`get`].

use crate::command::Ctx;
use crate::config::{self, Apply, Config, Named, SetContext, effects, flag};
use std::sync::atomic::Ordering;

/// CONFIG GET pattern [pattern …].
pub fn get(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let mut matches: Vec<(String, &'static config::Directive)> = Vec::new();
    let seen = |matches: &Vec<(String, _)>, name: &[u8]| {
        matches
            .iter()
            .any(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name))
    };
    for &pattern in &args[2..] {
        if !pattern.iter().any(|b| matches!(b, b'[' | b'*' | b'?')) {
            if !seen(&matches, pattern)
                && let Some(named) = config::lookup(pattern)
            {
                matches.push((
                    String::from_utf8_lossy(pattern).into_owned(),
                    named.directive,
                ));
            }
            continue;
        }
        let lower = pattern.to_ascii_lowercase();
        for named in config::names() {
            if named.directive.has(flag::HIDDEN) || seen(&matches, named.name.as_bytes()) {
                continue;
            }
            if store::glob::matches(&lower, named.name.as_bytes()) {
                matches.push((named.name.to_string(), named.directive));
            }
        }
    }
    matches.sort_by_key(|(name, _)| name.to_ascii_lowercase());
    let values: Vec<Vec<u8>> = {
        let config = ctx.server.config.read();
        matches
            .iter()
            .map(|(_, d)| config::get(&config, d))
            .collect()
    };
    ctx.out.map_len(matches.len());
    for ((name, _), value) in matches.iter().zip(values) {
        ctx.out.bulk(name.as_bytes());
        ctx.out.bulk(&value);
    }
}

/// CONFIG SETs run one at a time: each works on a copy of the configuration, which a
/// concurrent one would otherwise overwrite.
static SET_LOCK: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

fn set_failed(name: &str, reason: &str) -> String {
    format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}")
}

/// The directives of CONFIG SET's pairs, or the first problem's error reply.
fn lookup_pairs(ctx: &Ctx<'_, '_>, pairs: &[&[u8]]) -> Result<Vec<Named>, String> {
    let protected_ok = config::allow_protected(
        ctx.server.config.read().enable_protected_configs,
        &ctx.client.shared.addr,
    );
    let mut chosen: Vec<Named> = Vec::new();
    for pair in pairs.chunks(2) {
        let asked = String::from_utf8_lossy(pair[0]);
        let Some(named) = config::lookup(pair[0]) else {
            return Err(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{asked}'"
            ));
        };
        let d = named.directive;
        if d.has(flag::IMMUTABLE) {
            return Err(set_failed(&asked, "can't set immutable config"));
        }
        if d.has(flag::PROTECTED) && !protected_ok {
            return Err(set_failed(&asked, "can't set protected config"));
        }
        if chosen.iter().any(|c| c.id == named.id) {
            return Err(set_failed(&asked, "duplicate parameter"));
        }
        chosen.push(named);
    }
    Ok(chosen)
}

/// CONFIG SET name value [name value …].
pub fn set(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len() % 2 == 1 {
        return ctx.error("ERR syntax error");
    }
    let pairs = &args[2..];
    let chosen = match lookup_pairs(ctx, pairs) {
        Ok(chosen) => chosen,
        Err(text) => return ctx.error(&text),
    };
    let _serial = SET_LOCK.lock();
    let old = ctx.server.config.read().clone();
    let cwd = std::env::current_dir().ok();
    let mut next = old.clone();
    let mut applies: Vec<(Apply, &str)> = Vec::new();
    for (named, pair) in chosen.iter().zip(pairs.chunks(2)) {
        let d = named.directive;
        let values = config::split_set_value(d, pair[1]);
        match config::set(&mut next, d, &values, SetContext::default()) {
            Ok(changed) => {
                if changed && d.apply != Apply::None && !applies.iter().any(|(a, _)| *a == d.apply)
                {
                    applies.push((d.apply, named.name));
                }
            }
            Err(reason) => {
                restore_cwd(cwd.as_deref());
                return ctx.error(&set_failed(named.name, &reason));
            }
        }
    }
    for &(apply, name) in &applies {
        if let Err(reason) = effects::apply(ctx.server, apply, &mut next) {
            crate::log::warning(&format!(
                "Failed applying new configuration. Possibly related to new {name} setting. Restoring previous settings."
            ));
            restore(ctx, cwd.as_deref(), &old, &applies);
            return ctx.error(&set_failed(name, &reason));
        }
    }
    if applies.iter().any(|(a, _)| *a == Apply::EncodingLimits) {
        share_limits(ctx, effects::store_limits(&next));
    }
    if applies.iter().any(|(a, _)| *a == Apply::Eviction) {
        share_access_policy(ctx, crate::evict::access_policy(&next));
    }
    let append_only = applies.iter().any(|(a, _)| *a == Apply::AppendOnly);
    let on = next.appendonly;
    *ctx.server.config.write() = next;
    if append_only && let Err(reason) = switch_append_only(ctx, on) {
        crate::log::warning(&reason);
        *ctx.server.config.write() = old;
        return ctx.error(&set_failed(
            "appendonly",
            "Unable to turn on AOF. Check server logs.",
        ));
    }
    ctx.ok();
}

/// `appendonly` changed: the AOF is switched on (a rewrite starts) or off, every shard held.
fn switch_append_only(ctx: &mut Ctx<'_, '_>, on: bool) -> Result<(), String> {
    ctx.with_all_shards(|server, shards| {
        if on {
            crate::aof::rewrite::turn_on(server, shards)
        } else {
            crate::aof::rewrite::turn_off(server);
            Ok(())
        }
    })
}

/// Hands new encoding thresholds to every shard.
fn share_limits(ctx: &mut Ctx<'_, '_>, limits: store::Limits) {
    ctx.with_all_shards(|_, shards| shards.iter_mut().for_each(|s| s.set_limits(limits)));
}

/// Hands the access policy (LRU or LFU, `lfu-log-factor`) to every shard.
fn share_access_policy(ctx: &mut Ctx<'_, '_>, access: store::AccessPolicy) {
    ctx.with_all_shards(|_, shards| {
        for shard in shards.iter_mut() {
            shard.set_access_policy(access);
        }
    });
}

/// Puts the working directory back (the one side effect a set itself has: `dir`'s chdir).
fn restore_cwd(cwd: Option<&std::path::Path>) {
    if let Some(cwd) = cwd
        && std::env::current_dir().ok().as_deref() != Some(cwd)
    {
        let _ = std::env::set_current_dir(cwd);
    }
}

/// Undoes a CONFIG SET whose apply failed: the old directory, the old values' applies.
fn restore(
    ctx: &Ctx<'_, '_>,
    cwd: Option<&std::path::Path>,
    old: &Config,
    applies: &[(Apply, &str)],
) {
    restore_cwd(cwd);
    let mut old = old.clone();
    for &(apply, _) in applies {
        if let Err(e) = effects::apply(ctx.server, apply, &mut old) {
            crate::log::warning(&format!(
                "Failed applying restored failed CONFIG SET command: {e}"
            ));
        }
    }
}

/// CONFIG REWRITE: the running configuration into the file the server started from.
pub fn rewrite(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let config = ctx.server.config.read().clone();
    let Some(path) = config.config_file.as_deref() else {
        return ctx.error("ERR The server is running without a config file");
    };
    match config::rewrite_file(&config, path, effects::umask(), false) {
        Ok(()) => {
            crate::log::warning("CONFIG REWRITE executed with success.");
            ctx.ok();
        }
        Err(e) => {
            crate::log::warning(&format!("CONFIG REWRITE failed: {e}"));
            ctx.error(&format!("ERR Rewriting config file: {e}"));
        }
    }
}

/// CONFIG RESETSTAT: zeroes the counters INFO reports and empties the slow log.
pub fn resetstat(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let st = &ctx.server.stats;
    for counter in [
        &st.connections_received,
        &st.rejected_connections,
        &st.net_input_bytes,
        &st.net_output_bytes,
        &st.total_errors,
        &st.expired_keys_active,
    ] {
        counter.store(0, Ordering::Relaxed);
    }
    ctx.server.hot.reset();
    for s in &*ctx.server.command_stats {
        s.failed.store(0, Ordering::Relaxed);
        s.rejected.store(0, Ordering::Relaxed);
    }
    ctx.server.errorstats.lock().clear();
    ctx.server.slowlog.lock().entries.clear();
    ctx.ok();
}

/// CONFIG HELP.
pub fn help(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let lines = [
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT",
        "    Reset statistics reported by the INFO command.",
        "REWRITE",
        "    Rewrite the configuration file.",
        "HELP",
        "    Prints this help.",
    ];
    ctx.out.array_len(lines.len());
    for line in lines {
        ctx.out.simple(line.as_bytes());
    }
}
