//! Running a script or function to its reply: the checks before it starts
//! (`scriptPrepareForRun`), the run itself with every shard held (`luaCallFunction`), and how
//! its result or error becomes the caller's reply.
//!
//! ```text
//!  checks (flags, _RO, MISCONF, OOM) ─▶ Running: started, eval?, wrote = false
//!   ─▶ Run { locks: all shards, script client: caller's db, RESP2 } made current
//!   ─▶ drive(f, …) ─▶ Ok(value) ─▶ lua_to_reply          (in the protocol the script chose)
//!                   ─▶ Err({err, source, line}) ─▶ -<err> script: <name>, on <source>:<line>.
//!   ─▶ Running cleared; the VM's memory published for INFO (`used_memory_vm_eval` or
//!      `used_memory_vm_functions`)
//! ```

use super::convert;
use super::flags::Flags;
use super::run::{Current, Run};
use crate::client::ClientState;
use crate::command::Ctx;
use mlua::{Function, Lua, Value};
use std::sync::atomic::Ordering;

/// What is about to run.
#[derive(Debug)]
pub struct Target<'a> {
    /// The name errors give (`script: <name>`): the sha of an EVAL script, a function's name.
    pub name: &'a str,
    pub flags: Flags,
    /// EVAL_RO, EVALSHA_RO, FCALL_RO.
    pub ro_command: bool,
    pub eval: bool,
    /// The FCALL that calls a function, as FUNCTION STATS shows it (empty for EVAL).
    pub command: &'a [&'a [u8]],
}

/// `scriptPrepareForRun`'s refusals: `Some(error text)` when the script may not start.
fn refusal(ctx: &Ctx<'_, '_>, target: &Target<'_>) -> Option<String> {
    let flags = target.flags;
    if flags.compat {
        return None;
    }
    let server = ctx.server;
    if !flags.has(super::flags::NO_WRITES) {
        if crate::bgsave::writes_denied(server) {
            return Some("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts.".into());
        }
        if let Some(text) = crate::aof::write_denied(server) {
            let cause = text.rsplit(": ").next().unwrap_or_default().to_owned();
            return Some(format!(
                "MISCONF Redis is configured to persist data to AOF, but it's currently unable to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts. AOF error: {cause}"
            ));
        }
        if target.ro_command {
            return Some("ERR Can not execute a script with write flag using *_ro command.".into());
        }
    }
    if server.eviction.over_limit()
        && !flags.has(super::flags::ALLOW_OOM)
        && !flags.has(super::flags::NO_WRITES)
    {
        return Some("OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'".into());
    }
    None
}

/// Runs `function` (compiled in `lua`, started by `driver` with `arguments`) as `target` for
/// the caller in `ctx`, with `script_client` as the client its commands run as, and replies.
pub fn run(
    ctx: &mut Ctx<'_, '_>,
    lua: &Lua,
    driver: &Function,
    function: &Function,
    arguments: mlua::MultiValue,
    target: &Target<'_>,
    script_client: &mut ClientState,
) {
    if let Some(text) = refusal(ctx, target) {
        return ctx.error(&text);
    }
    let server = ctx.server;
    let running = &server.scripting.running;
    mark_running(running, target);
    script_client.db = ctx.client.db;
    script_client.protocol = resp::Protocol::Resp2;
    let mut run = Run {
        server,
        locks: ctx.locks,
        client: script_client,
        now_ms: ctx.now_ms,
        read_only: target.flags.read_only(target.ro_command),
        allow_oom: target.flags.has(super::flags::ALLOW_OOM)
            || target.flags.has(super::flags::NO_WRITES),
        oom_at_start: server.eviction.over_limit(),
        propagate: true,
        reply: Vec::new(),
    };
    let queued_before = crate::propagate::pending_len();
    let outcome = {
        let _current = Current::enter(&mut run);
        super::busy::arm();
        let outcome = super::vm::drive(lua, driver, function, arguments);
        super::busy::disarm();
        if super::lua_ext::take_hook_raised() {
            // Killed: the hook now fires at every line; back to every HOOK_PERIOD instructions.
            super::lua_ext::set_count_hook(lua, None, super::busy::HOOK_PERIOD);
        }
        if lua.used_memory() > super::vm::COLLECT_ABOVE {
            // A script that built much (or failed at the limit) leaves garbage Lua 5.1's
            // collector, paced by the heap's size, may never reach before the limit: every
            // later allocation would fail. Collect it now.
            let _ = lua.gc_collect();
        }
        outcome
    };
    let protocol = run.client.protocol;
    running.started_ms.store(0, Ordering::Release);
    running.busy.store(false, Ordering::Release);
    if server.shutdown.load(Ordering::Acquire) {
        // Stopped by SHUTDOWN NOSAVE: Redis exits mid-script, so nothing it did is written to
        // the AOF and its caller gets no reply.
        crate::propagate::truncate_pending(queued_before);
        ctx.client.close_now = true;
        return;
    }
    reply(ctx, outcome, protocol, target.name);
    let thread = ctx.client.shared.thread;
    let published = if target.eval {
        &server.scripting.vm_bytes
    } else {
        &server.scripting.function_vm_bytes
    };
    if let Some(slot) = published.get(thread) {
        slot.store(lua.used_memory(), Ordering::Relaxed);
    }
}

/// Notes `target` as the script running now (what SCRIPT KILL, FUNCTION KILL and FUNCTION
/// STATS look at), its clock started.
fn mark_running(running: &super::state::Running, target: &Target<'_>) {
    {
        // Refilled in place: no allocation once the buffers have grown.
        let mut name = running.name.lock();
        name.0.clear();
        name.0.push_str(target.name);
        name.1.clear();
        name.1.extend(target.command.iter().map(|a| a.to_vec()));
    }
    running.wrote.store(false, Ordering::Relaxed);
    running.kill.store(false, Ordering::Relaxed);
    running.eval.store(target.eval, Ordering::Relaxed);
    running
        .started_ms
        .store(super::busy::now_ms().max(1), Ordering::Release);
}

/// The caller's reply for what the script `name` ended with, written in `protocol` (the one
/// the script chose).
fn reply(
    ctx: &mut Ctx<'_, '_>,
    outcome: mlua::Result<Result<Value, mlua::Table>>,
    protocol: resp::Protocol,
    name: &str,
) {
    match outcome {
        Ok(Ok(value)) => {
            let errors = convert::lua_to_reply(&value, protocol, &mut ctx.out);
            ctx.failed |= errors.any;
            for error in errors.counted {
                ctx.server.count_error(&error);
            }
        }
        Ok(Err(error)) => reply_error(ctx, name, &error),
        Err(e) => ctx.error(&format!(
            "ERR Error running script {name}, {:.100}",
            e.to_string()
        )),
    }
}

/// The reply for a script that failed with `error` (a table, as the driver makes every error):
/// its `err`, and where in the script it was raised.
fn reply_error(ctx: &mut Ctx<'_, '_>, name: &str, error: &mlua::Table) {
    let text_of = |field: &str| -> Option<Vec<u8>> {
        match error.raw_get::<Value>(field).ok()? {
            Value::String(s) => Some(s.as_bytes().to_vec()),
            v @ (Value::Integer(_) | Value::Number(_)) => Some(
                resp::double::g17(super::libs::number(&v)?)
                    .as_str()
                    .as_bytes()
                    .to_vec(),
            ),
            _ => None,
        }
    };
    let mut text = text_of("err").unwrap_or_default();
    if let (Some(source), Some(line)) = (text_of("source"), text_of("line")) {
        text.extend_from_slice(format!(" script: {name}, on ").as_bytes());
        text.extend_from_slice(&source);
        text.push(b':');
        text.extend_from_slice(&line);
        text.push(b'.');
    }
    let counted = matches!(
        error.raw_get::<Value>("ignore_error_stats_update"),
        Ok(Value::Boolean(true))
    );
    ctx.failed = true;
    if !counted {
        ctx.server.count_error(&text);
    }
    ctx.out.error(&text);
}
