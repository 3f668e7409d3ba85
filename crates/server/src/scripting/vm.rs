//! The Lua VMs: one for EVAL scripts and one for functions on each I/O thread, built as Redis
//! 7.0 builds its two (`scriptingInit`, `luaEngineInitEngine`).
//!
//! ```text
//!  globals: base (print, dofile, loadfile, getfenv, setfenv, newproxy removed) · table · string · math · cjson · struct
//!           · cmsgpack · bit · redis · pcall (Redis's: an error table becomes its text)
//!  math.random / math.randomseed → Redis's generator (api.rs)
//!  debug: used to build the driver, then removed
//!  every table reachable from the globals, and their metatables, read-only; the globals'
//!  metatable raises "Script attempted to access nonexistent global variable '…'"
//! ```
//! A script runs under the *driver*: a Lua function holding `debug.getinfo` from before `debug`
//! was removed, which calls it with `xpcall` and Redis's `__redis__err__handler` as the handler,
//! as Redis's `luaCallFunction` does with `lua_pcall`: at the error, its stack still in place,
//! a non-table error `e` becomes `{err = "ERR " .. tostring(e)}` and the source and line of the
//! script code that raised it are added (skipping one C frame: the `error` or `redis.call`
//! that raised it). An error the handler never sees (out of memory) is wrapped the same way,
//! without a place.

use super::lua_ext;
use super::{api, libs};
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value};

/// The driver; see the module comment. `prepare`, when given, runs first (EVAL's KEYS and
/// ARGV setter). Returns what `xpcall` does: `true, result` when the
/// script ended, `false, error` when it failed ([`drive`] reads them). The `xpcall` is its
/// last line on purpose: a killed script's hook fires at every new line until the run is
/// over, and no line of the driver may start after the script.
const DRIVER: &str = r"
local getinfo = debug.getinfo
local xpcall, type, tostring = xpcall, type, tostring
local function handler(err)
  local i = getinfo(2, 'nSl')
  if i and i.what == 'C' then i = getinfo(3, 'nSl') end
  if type(err) ~= 'table' then err = {err = 'ERR ' .. tostring(err)} end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end
local target, keys, argv
local function bare() return target() end
local function with_arrays() return target(keys, argv) end
return function(f, k, a, prepare)
  if prepare then prepare() end
  target, keys, argv = f, k, a
  return xpcall(k == nil and bare or with_arrays, handler)
end
";

/// Runs `function` under `driver` with `arguments` (none for a script or a library's code, the
/// KEYS and ARGV arrays for a function): `Ok(result)`, or `Err` with the error as a table of
/// Redis's shape (an error the handler never saw, out of memory, is wrapped here as it would
/// have wrapped it). The outer `Err` is a failure of the call itself.
pub fn drive(
    lua: &Lua,
    driver: &Function,
    function: &Function,
    arguments: mlua::MultiValue,
) -> mlua::Result<Result<Value, Table>> {
    let mut all = mlua::MultiValue::with_capacity(arguments.len() + 1);
    all.push_back(Value::Function(function.clone()));
    all.extend(arguments);
    let (ok, result) = driver.call::<(bool, Value)>(all)?;
    Ok(match (ok, result) {
        (true, value) => Ok(value),
        (false, Value::Table(error)) => Err(error),
        (false, other) => {
            let text = match &other {
                Value::String(s) => s.as_bytes().to_vec(),
                other => other.type_name().as_bytes().to_vec(),
            };
            let error = lua.create_table()?;
            error.raw_set("err", lua.create_string([&b"ERR "[..], &text].concat())?)?;
            Err(error)
        }
    })
}

/// Most memory one VM may take; past it an allocation fails with Lua's `not enough memory`.
pub const MEMORY_LIMIT: usize = 1 << 30;

/// A VM above this size after a run is collected in full (`exec::run`); an ordinary script
/// leaves a VM of well under a MiB.
pub const COLLECT_ABOVE: usize = 32 << 20;

/// Builds the parts both VMs share: libraries, `pcall`, the math replacements, the driver.
/// Returns the VM, its `redis` table (not yet global) and the driver.
fn base() -> mlua::Result<(Lua, Function)> {
    let libs_loaded = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG;
    // SAFETY: `debug` is loaded only to build the driver (which keeps `debug.getinfo`) and is
    // removed from the globals before any script runs; scripts never see it, so they cannot
    // use it to break the VM's invariants.
    let lua = unsafe { Lua::unsafe_new_with(libs_loaded, LuaOptions::new()) };
    lua.set_memory_limit(MEMORY_LIMIT)?;
    let globals = lua.globals();
    // Not in Redis 7.0.15's globals: the file loaders and `print`, and `getfenv`, `setfenv`
    // and `newproxy`, which it removed to keep scripts inside the sandbox.
    for name in [
        "print", "dofile", "loadfile", "getfenv", "setfenv", "newproxy",
    ] {
        globals.raw_set(name, Value::Nil)?;
    }
    libs::register(&lua)?;
    globals.raw_set("pcall", lua_ext::redis_pcall(&lua)?)?;
    let math: Table = globals.raw_get("math")?;
    api::replace_math(&lua, &math)?;
    let driver: Function = lua.load(DRIVER).set_name("@err_handler_def").call(())?;
    // The busy-script hook stays installed; each run switches its check on and off
    // (`busy::arm`), which costs nothing in the VM.
    lua_ext::set_count_hook(&lua, None, super::busy::HOOK_PERIOD);
    Ok((lua, driver))
}

/// Ends the set-up: `debug` gone, the globals' missing-name error, every reachable table
/// read-only.
fn lock(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    globals.raw_set("debug", Value::Nil)?;
    let meta = lua.create_table()?;
    meta.raw_set("__index", api::missing_global(lua)?)?;
    globals.set_metatable(Some(meta))?;
    protect(lua, globals)?;
    // The metatable of strings (`{__index = string}`) is not reachable from the globals, yet
    // Redis's is read-only too.
    let strings: Table = lua.load("return getmetatable('')").call(())?;
    protect(lua, &strings)
}

/// `luaSetTableProtectionRecursively`: `table`, every table reachable from it, and their
/// metatables, read-only.
pub fn protect(lua: &Lua, table: &Table) -> mlua::Result<()> {
    let mut pending = vec![table.clone()];
    while let Some(t) = pending.pop() {
        if lua_ext::is_readonly(lua, &t) {
            continue;
        }
        lua_ext::set_readonly(lua, &t, true)?;
        for pair in t.clone().pairs::<Value, Value>() {
            if let (_, Value::Table(inner)) = pair? {
                pending.push(inner);
            }
        }
        if let Some(meta) = t.metatable() {
            pending.push(meta);
        }
    }
    Ok(())
}

/// The EVAL VM of one thread.
#[derive(Debug)]
pub struct EvalVm {
    pub lua: Lua,
    pub driver: Function,
    /// Sets KEYS and ARGV from what is staged (`lua_ext::keys_and_args_setter`).
    set_keys_and_args: Function,
    /// Compiled scripts by sha (Redis keeps them in the registry as `f_<sha>`).
    pub scripts: std::collections::HashMap<String, Function, foldhash::fast::RandomState>,
    /// `Scripting::flushes` when this VM was built.
    pub flushes: u64,
}

impl EvalVm {
    pub fn new(flushes: u64) -> mlua::Result<EvalVm> {
        let (lua, driver) = base()?;
        let globals = lua.globals();
        let redis = lua.create_table()?;
        api::fill_redis_table(&lua, &redis)?;
        api::fill_eval_extras(&lua, &redis)?;
        globals.raw_set("redis", redis)?;
        // Redis keeps its error handler as a global of the EVAL VM; scripts can see it.
        let handler: Function = lua
            .load(ERROR_HANDLER)
            .set_name("@err_handler_def")
            .call(())?;
        globals.raw_set("__redis__err__handler", handler)?;
        // Present from the start, so that setting them per run never grows the globals.
        globals.raw_set("KEYS", lua.create_table()?)?;
        globals.raw_set("ARGV", lua.create_table()?)?;
        let set_keys_and_args = lua_ext::keys_and_args_setter(&lua, &globals)?;
        lock(&lua, &globals)?;
        Ok(EvalVm {
            lua,
            driver,
            set_keys_and_args,
            scripts: std::collections::HashMap::default(),
            flushes,
        })
    }

    /// The driver's arguments for a run whose KEYS and ARGV are staged
    /// (`lua_ext::stage_keys_and_args`): no arrays, and the setter to call first.
    pub fn run_arguments(&self) -> mlua::MultiValue {
        mlua::MultiValue::from_vec(vec![
            Value::Nil,
            Value::Nil,
            Value::Function(self.set_keys_and_args.clone()),
        ])
    }
}

/// A Lua array of strings (`luaCreateArray`).
pub fn array(lua: &Lua, items: &[&[u8]]) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        table.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(table)
}

/// Redis's `__redis__err__handler`, which EVAL scripts can see and call as a global.
const ERROR_HANDLER: &str = r"
local dbg = debug
return function(err)
  local i = dbg.getinfo(2,'nSl')
  if i and i.what == 'C' then
    i = dbg.getinfo(3,'nSl')
  end
  if type(err) ~= 'table' then
    err = {err='ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end
";

/// The function VM of one thread (`luaEngineInitEngine`). Functions run with `env`: an empty
/// read-only table whose metatable reads through to the globals. While FUNCTION LOAD runs a
/// library's code, the metatable reads through to `load_api` instead: `redis` with only
/// `register_function`, `log` and the version, and nothing else (every other name raises the
/// missing-global error).
#[derive(Debug)]
pub struct FunctionVm {
    pub lua: Lua,
    pub driver: Function,
    pub env: Table,
    env_meta: Table,
    globals: Table,
    load_api: Table,
}

impl FunctionVm {
    /// Builds the VM; `register` makes its `redis.register_function`.
    pub fn new_with(
        register: impl FnOnce(&Lua) -> mlua::Result<Function>,
    ) -> mlua::Result<FunctionVm> {
        let (lua, driver) = base()?;
        let register = register(&lua)?;
        let globals = lua.globals();
        let redis = lua.create_table()?;
        api::fill_redis_table(&lua, &redis)?;
        globals.raw_set("redis", redis)?;
        lock(&lua, &globals)?;
        let missing = || -> mlua::Result<Table> {
            let meta = lua.create_table()?;
            meta.raw_set("__index", api::missing_global(&lua)?)?;
            Ok(meta)
        };
        let load_redis = lua.create_table()?;
        load_redis.raw_set("register_function", register)?;
        api::fill_log_and_version(&lua, &load_redis)?;
        load_redis.set_metatable(Some(missing()?))?;
        let load_api = lua.create_table()?;
        load_api.raw_set("redis", load_redis)?;
        load_api.set_metatable(Some(missing()?))?;
        protect(&lua, &load_api)?;
        let env_meta = lua.create_table()?;
        env_meta.raw_set("__index", globals.clone())?;
        let env = lua.create_table()?;
        env.set_metatable(Some(env_meta.clone()))?;
        lua_ext::set_readonly(&lua, &env_meta, true)?;
        lua_ext::set_readonly(&lua, &env, true)?;
        Ok(FunctionVm {
            lua,
            driver,
            env,
            env_meta,
            globals,
            load_api,
        })
    }

    /// Points the functions' globals at the load-time API (`loading`) or back at the globals.
    pub fn set_loading(&self, loading: bool) -> mlua::Result<()> {
        let target = if loading {
            &self.load_api
        } else {
            &self.globals
        };
        lua_ext::set_readonly(&self.lua, &self.env_meta, false)?;
        let set = self.env_meta.raw_set("__index", target.clone());
        lua_ext::set_readonly(&self.lua, &self.env_meta, true)?;
        set
    }
}
