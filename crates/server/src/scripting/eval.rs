//! EVAL scripts: the script cache, compiling a script into this thread's VM, and running it
//! (Redis's `evalGenericCommand`, `luaCreateFunction`).
//!
//! A script is cached server-wide by its SHA-1 the first time it compiles (EVAL, SCRIPT
//! LOAD); each thread compiles it into its own VM on first use there. SCRIPT FLUSH empties the
//! cache and makes every thread rebuild its VM before its next script.

use super::exec::{self, Target};
use super::flags;
use super::state::{Script, sha1_hex};
use super::vm::EvalVm;
use crate::client::ClientState;
use crate::command::Ctx;
use crate::server::Server;
use mlua::Function;
use mlua::chunk::ChunkMode;
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// `shared.noscripterr`.
pub const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// A thread's EVAL VM and the client its scripts' commands run as.
struct Slot {
    vm: EvalVm,
    client: ClientState,
}

thread_local! {
    static SLOT: RefCell<Option<Slot>> = const { RefCell::new(None) };
}

/// The client scripts' commands run as (Redis's Lua client): MONITOR shows it as `lua`;
/// blocking commands do not block for it.
pub fn script_client(server: &Server) -> ClientState {
    let mut client = ClientState::new(server.fake_client_named("lua"), true);
    client.in_exec = true;
    client
}

/// Runs `f` with this thread's VM, rebuilt first if a SCRIPT FLUSH came since it was built.
fn with_vm<R>(
    server: &Server,
    f: impl FnOnce(&mut EvalVm, &mut ClientState) -> R,
) -> mlua::Result<R> {
    SLOT.with(|slot| {
        let mut slot = slot.borrow_mut();
        let flushes = server.scripting.flushes.load(Ordering::Acquire);
        if slot.as_ref().is_none_or(|s| s.vm.flushes != flushes) {
            *slot = None;
            *slot = Some(Slot {
                vm: EvalVm::new(flushes)?,
                client: script_client(server),
            });
        }
        let slot = slot.as_mut().expect("the VM was just built");
        Ok(f(&mut slot.vm, &mut slot.client))
    })
}

/// Compiles `script` in `vm` (`luaL_loadbuffer` of the code after the shebang, keeping its
/// newline so line numbers stay the user's). `Err`: Redis's error text.
fn compile(vm: &mut EvalVm, sha: &str, script: &Script) -> Result<Function, String> {
    if let Some(function) = vm.scripts.get(sha) {
        return Ok(function.clone());
    }
    let function = vm
        .lua
        .load(&script.body[script.code_at..])
        .set_name("@user_script")
        .set_mode(ChunkMode::Text)
        .into_function()
        .map_err(|e| {
            format!(
                "ERR Error compiling script (new function): {}",
                lua_message(&e)
            )
        })?;
    vm.scripts.insert(sha.to_owned(), function.clone());
    Ok(function)
}

/// The message Lua gave for `error`, without `mlua`'s decoration.
pub fn lua_message(error: &mlua::Error) -> String {
    match error {
        mlua::Error::SyntaxError { message, .. } | mlua::Error::RuntimeError(message) => {
            message.clone()
        }
        mlua::Error::MemoryError(message) => message.clone(),
        other => other.to_string(),
    }
}

/// Caches `body` as Redis's `luaCreateFunction` does (the shebang checked, the code compiled
/// in this thread's VM): its sha and the script, or Redis's error text.
pub fn create(server: &Server, body: &[u8]) -> Result<(String, Arc<Script>), String> {
    let sha = sha1_hex(body);
    if let Some(script) = server.scripting.cached(sha.as_bytes()) {
        return Ok((sha, script));
    }
    let (flags, code_at) = flags::from_shebang(body).map_err(|e| format!("ERR {e}"))?;
    let script = Script {
        body: body.to_vec(),
        flags,
        code_at,
    };
    with_vm(server, |vm, _| compile(vm, &sha, &script).map(drop))
        .map_err(|e| format!("ERR {}", lua_message(&e)))??;
    let script = server.scripting.add(sha.clone(), body, flags, code_at);
    Ok((sha, script))
}

/// EVAL, EVALSHA and their `_RO` forms: `args` = [command, script or sha, numkeys, keys…,
/// args…].
pub fn eval(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], by_sha: bool, ro: bool) {
    if ctx.server.monitors.any() {
        let name = if by_sha { "evalsha" } else { "eval" };
        crate::monitor::feed(ctx.server, ctx.client, name, args);
    }
    if by_sha && args[1].len() != 40 {
        return ctx.error(NOSCRIPT);
    }
    let Some(numkeys) = crate::commands::args::parse_i64(args[2]) else {
        return ctx.not_integer();
    };
    if numkeys > (args.len() - 3) as i64 {
        return ctx.error("ERR Number of keys can't be greater than number of args");
    }
    if numkeys < 0 {
        return ctx.error("ERR Number of keys can't be negative");
    }
    let found = if by_sha {
        let sha = super::state::lowercase_sha(args[1]);
        match sha.and_then(|sha| Some((sha, ctx.server.scripting.cached(args[1])?))) {
            Some(found) => Ok(found),
            None => Err(NOSCRIPT.to_owned()),
        }
    } else {
        create(ctx.server, args[1]).and_then(|(sha, script)| {
            let sha = super::state::lowercase_sha(sha.as_bytes()).ok_or(NOSCRIPT.to_owned())?;
            Ok((sha, script))
        })
    };
    let (sha, script) = match found {
        Ok(found) => found,
        Err(text) => return ctx.error(&text),
    };
    let sha = sha.as_str();
    let (keys, argv) = args[3..].split_at(numkeys as usize);
    let server = ctx.server;
    let outcome = with_vm(server, |vm, client| {
        let function = match compile(vm, sha, &script) {
            Ok(function) => function,
            Err(text) => return ctx.error(&text),
        };
        let _staged = super::lua_ext::stage_keys_and_args(keys, argv);
        let target = Target {
            name: sha,
            flags: script.flags,
            ro_command: ro,
            eval: true,
            command: &[],
        };
        let vm = &*vm;
        exec::run(
            ctx,
            &vm.lua,
            &vm.driver,
            &function,
            vm.run_arguments(),
            &target,
            client,
        );
    });
    if let Err(e) = outcome {
        ctx.error(&format!("ERR {}", lua_message(&e)));
    }
}
