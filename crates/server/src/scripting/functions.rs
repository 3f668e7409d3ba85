//! FUNCTION libraries (Redis's `functions.c`): the registry every thread shares.
//!
//! ```text
//!  Registry { libraries: name → Library { code, functions }, functions: name → library,
//!             generation }       a function name is unique across libraries
//!  each change bumps `generation`; a thread whose function VM loaded an older generation
//!  reloads every library's code into a fresh VM before its next FCALL
//! ```

use super::exec::{self, Target};
use super::libs::{self, Args, Fail, Outcome, Ret};
use super::vm::FunctionVm;
use crate::client::ClientState;
use crate::command::Ctx;
use crate::server::Server;
use mlua::{Function, Lua, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::collections::HashMap;

/// One registered function.
#[derive(Clone, Debug)]
pub struct FunctionInfo {
    pub name: String,
    pub description: Option<Vec<u8>>,
    /// `flags::NAMES` bits.
    pub flags: u32,
}

/// One library: its whole code (shebang included) and its functions.
#[derive(Clone, Debug)]
pub struct Library {
    pub name: String,
    pub code: Vec<u8>,
    pub functions: Vec<FunctionInfo>,
}

/// The loaded libraries.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    pub libraries: BTreeMap<String, Library>,
    /// Function name → library name.
    pub functions: BTreeMap<String, String>,
    pub generation: u64,
}

/// Most time a library's code may run at FUNCTION LOAD (Redis's `LOAD_TIMEOUT_MS`).
const LOAD_TIMEOUT_MS: u64 = 500;

const BAD_NAME: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// `functionsVerifyName`.
fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A function `redis.register_function` registered while its library loads.
struct Registered {
    info: FunctionInfo,
    callback: Function,
}

thread_local! {
    /// The functions of the library loading on this thread (`None`: no FUNCTION LOAD runs).
    static LOADING: RefCell<Option<Vec<Registered>>> = const { RefCell::new(None) };
    /// When the library's code started (the load hook's timeout).
    static LOAD_STARTED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A thread's function VM: every library of `generation` loaded, its functions by name.
struct Slot {
    vm: FunctionVm,
    generation: u64,
    /// By lowercase name: the callback, its flags and the name as registered (what errors and
    /// FUNCTION STATS show).
    functions: HashMap<String, (Function, u32, String)>,
    client: ClientState,
}

thread_local! {
    static SLOT: RefCell<Option<Slot>> = const { RefCell::new(None) };
}

/// The library shebang: `(engine, name, code from the shebang's newline on)`.
fn metadata(code: &[u8]) -> Result<(Vec<u8>, String, usize), String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err("Invalid library metadata".into());
    };
    let (mut bytes, mut spans) = (Vec::new(), Vec::new());
    if resp::inline::split_args(&code[..end], &mut bytes, &mut spans).is_err() || spans.is_empty() {
        return Err("Invalid library metadata".into());
    }
    let part = |i: usize| &bytes[spans[i].clone()];
    let engine = part(0).get(2..).unwrap_or_default().to_vec();
    let mut name = None;
    for i in 1..spans.len() {
        let p = part(i);
        if p.len() >= 5 && p[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(String::from_utf8_lossy(&p[5..]).into_owned());
            continue;
        }
        return Err(format!(
            "Invalid metadata value given: {}",
            String::from_utf8_lossy(p)
        ));
    }
    let name = name.ok_or("Library name was not given")?;
    Ok((engine, name, end))
}

/// `redis.register_function`: records the function in the library loading on this thread.
fn register_function(lua: &Lua, args: &Args) -> Outcome {
    let raise =
        |text: &str| -> Outcome { Err(Fail::Value(super::api::error_value(lua, text, false)?)) };
    if LOADING.with(|l| l.borrow().is_none()) {
        return raise("redis.register_function can only be called on FUNCTION LOAD command");
    }
    let registered = match args.count() {
        1 => named_arguments(lua, args),
        2 => positional_arguments(lua, args),
        _ => Err("wrong number of arguments to redis.register_function"),
    };
    let registered = match registered {
        Ok(r) => r,
        Err(text) => return raise(text),
    };
    let added = LOADING.with(|l| {
        let mut loading = l.borrow_mut();
        let list = loading.as_mut().expect("checked above");
        if !valid_name(registered.info.name.as_bytes()) {
            return Err(BAD_NAME);
        }
        if list.iter().any(|r| r.info.name == registered.info.name) {
            return Err("Function already exists in the library");
        }
        list.push(registered);
        Ok(())
    });
    match added {
        Ok(()) => Ok(Ret::List(lua.create_table()?, 0)),
        Err(text) => raise(text),
    }
}

/// `lua_isstring` and its bytes.
fn string_of(lua: &Lua, value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(_) | Value::Number(_) => lua
            .coerce_string(value.clone())
            .ok()
            .flatten()
            .map(|s| s.as_bytes().to_vec()),
        _ => None,
    }
}

fn positional_arguments(lua: &Lua, args: &Args) -> Result<Registered, &'static str> {
    let name = args
        .get(1)
        .and_then(|v| string_of(lua, v))
        .ok_or("first argument to redis.register_function must be a string")?;
    let Some(Value::Function(callback)) = args.get(2) else {
        return Err("second argument to redis.register_function must be a function");
    };
    Ok(Registered {
        info: FunctionInfo {
            name: String::from_utf8_lossy(&name).into_owned(),
            description: None,
            flags: 0,
        },
        callback: callback.clone(),
    })
}

fn named_arguments(lua: &Lua, args: &Args) -> Result<Registered, &'static str> {
    let Some(Value::Table(table)) = args.get(1) else {
        return Err(
            "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).",
        );
    };
    let (mut name, mut description, mut callback, mut flags) = (None, None, None, 0);
    for pair in table.clone().pairs::<Value, Value>() {
        let Ok((key, value)) = pair else {
            return Err("named argument key given to redis.register_function is not a string");
        };
        let Some(key) = string_of(lua, &key) else {
            return Err("named argument key given to redis.register_function is not a string");
        };
        match key.to_ascii_lowercase().as_slice() {
            b"function_name" => {
                name = Some(string_of(lua, &value).ok_or(
                    "function_name argument given to redis.register_function must be a string",
                )?);
            }
            b"description" => {
                description = Some(string_of(lua, &value).ok_or(
                    "description argument given to redis.register_function must be a string",
                )?);
            }
            b"callback" => match value {
                Value::Function(f) => callback = Some(f),
                _ => {
                    return Err(
                        "callback argument given to redis.register_function must be a function",
                    );
                }
            },
            b"flags" => {
                let Value::Table(list) = value else {
                    return Err(
                        "flags argument to redis.register_function must be a table representing function flags",
                    );
                };
                flags = read_flags(lua, &list).ok_or("unknown flag given")?;
            }
            _ => return Err("unknown argument given to redis.register_function"),
        }
    }
    let name = name.ok_or("redis.register_function must get a function name argument")?;
    let callback = callback.ok_or("redis.register_function must get a callback argument")?;
    Ok(Registered {
        info: FunctionInfo {
            name: String::from_utf8_lossy(&name).into_owned(),
            description,
            flags,
        },
        callback,
    })
}

/// `luaRegisterFunctionReadFlags`: `t[1]`, `t[2]`… up to the first nil, each a flag name
/// (any case).
fn read_flags(lua: &Lua, list: &mlua::Table) -> Option<u32> {
    let mut flags = 0;
    for i in 1.. {
        let value: Value = list.get(i).ok()?;
        if value.is_nil() {
            break;
        }
        let name = string_of(lua, &value)?.to_ascii_lowercase();
        flags |= super::flags::by_name(&name)?;
    }
    Some(flags)
}

/// The load hook's check: past `LOAD_TIMEOUT_MS`, the library's code is stopped.
fn load_timeout() -> Option<&'static str> {
    let started = LOAD_STARTED.get();
    (super::busy::now_ms().saturating_sub(started) > LOAD_TIMEOUT_MS)
        .then_some("FUNCTION LOAD timeout")
}

/// Runs a library's code in `vm` and returns what it registered (`luaEngineCreate`).
fn run_library(vm: &FunctionVm, code: &[u8]) -> Result<Vec<Registered>, String> {
    let chunk = vm
        .lua
        .load(code)
        .set_name("@user_function")
        .set_mode(mlua::chunk::ChunkMode::Text)
        .set_environment(vm.env.clone())
        .into_function()
        .map_err(|e| format!("Error compiling function: {}", super::eval::lua_message(&e)))?;
    vm.set_loading(true)
        .map_err(|e| super::eval::lua_message(&e))?;
    LOADING.with(|l| *l.borrow_mut() = Some(Vec::new()));
    LOAD_STARTED.set(super::busy::now_ms());
    super::lua_ext::set_count_hook(&vm.lua, Some(load_timeout), super::busy::HOOK_PERIOD);
    let outcome = super::vm::drive(&vm.lua, &vm.driver, &chunk, mlua::MultiValue::new());
    // Back to the busy-script hook every VM keeps (the libraries also load into a thread's
    // function VM, which then runs them), at its period even if the load timed out.
    super::lua_ext::set_count_hook(&vm.lua, None, super::busy::HOOK_PERIOD);
    super::lua_ext::take_hook_raised();
    let registered = LOADING.with(|l| l.borrow_mut().take()).unwrap_or_default();
    let _ = vm.set_loading(false);
    match outcome {
        Ok(Ok(_)) => Ok(registered),
        Ok(Err(error)) => {
            let message = match error.raw_get::<Value>("err") {
                Ok(Value::String(s)) => s.to_string_lossy(),
                _ => String::new(),
            };
            Err(format!("Error registering functions: {message}"))
        }
        Err(e) => Err(format!(
            "Error registering functions: {}",
            super::eval::lua_message(&e)
        )),
    }
}

/// Loads `code` into `registry` (Redis's `functionsCreateWithLibraryCtx`): the library's
/// name, or the error text (without `ERR `).
pub fn load(registry: &mut Registry, code: &[u8], replace: bool) -> Result<String, String> {
    let (engine, name, _) = metadata(code)?;
    if !valid_name(name.as_bytes()) {
        return Err(BAD_NAME.into());
    }
    if !engine.eq_ignore_ascii_case(b"lua") {
        return Err(format!(
            "Engine '{}' not found",
            String::from_utf8_lossy(&engine)
        ));
    }
    if registry.libraries.contains_key(&name) && !replace {
        return Err(format!("Library '{name}' already exists"));
    }
    let vm = new_vm().map_err(|e| e.to_string())?;
    let (_, _, at) = metadata(code)?;
    let registered = run_library(&vm, &code[at..])?;
    if registered.is_empty() {
        return Err("No functions registered".into());
    }
    for r in &registered {
        if registry
            .functions
            .get(&r.info.name)
            .is_some_and(|library| *library != name)
        {
            return Err(format!("Function {} already exists", r.info.name));
        }
    }
    remove(registry, &name);
    for r in &registered {
        registry.functions.insert(r.info.name.clone(), name.clone());
    }
    registry.libraries.insert(
        name.clone(),
        Library {
            name: name.clone(),
            code: code.to_vec(),
            functions: registered.into_iter().map(|r| r.info).collect(),
        },
    );
    registry.generation += 1;
    Ok(name)
}

/// Adds the libraries a data file held (`codes`, from an RDB's FUNCTION2 records), replacing
/// any of the same name, all or none: the error names the library that failed to load, as
/// Redis's `rdbFunctionLoad` logs it.
pub fn install(server: &Server, codes: &[Vec<u8>]) -> Result<(), String> {
    if codes.is_empty() {
        return Ok(());
    }
    let mut registry = server.scripting.libraries.write();
    let mut next = registry.clone();
    for code in codes {
        load(&mut next, code, true).map_err(|e| format!("Failed loading library, {e}"))?;
    }
    next.generation = registry.generation + 1;
    *registry = next;
    Ok(())
}

/// `current` with `incoming`'s libraries added (Redis's `libraryJoin`): a library of the same
/// name is an error, or with `replace` gives way; a function of the same name in a library
/// that stays is an error.
pub fn join(current: &Registry, incoming: Registry, replace: bool) -> Result<Registry, String> {
    let mut joined = current.clone();
    for name in incoming.libraries.keys() {
        if joined.libraries.contains_key(name) {
            if !replace {
                return Err(format!("Library {name} already exists"));
            }
            remove(&mut joined, name);
        }
    }
    if let Some(function) = incoming
        .functions
        .keys()
        .find(|f| joined.functions.contains_key(*f))
    {
        return Err(format!("Function {function} already exists"));
    }
    joined.functions.extend(incoming.functions);
    joined.libraries.extend(incoming.libraries);
    Ok(joined)
}

/// The flags function `name` was registered with (any case), if it exists.
pub fn flags_of(server: &Server, name: &str) -> Option<super::flags::Flags> {
    let registry = server.scripting.libraries.read();
    let (_, library) = registry
        .functions
        .iter()
        .find(|(function, _)| function.eq_ignore_ascii_case(name))?;
    let info = registry
        .libraries
        .get(library)?
        .functions
        .iter()
        .find(|f| f.name.eq_ignore_ascii_case(name))?;
    Some(super::flags::Flags {
        compat: false,
        bits: info.flags,
    })
}

/// Removes every library (FUNCTION FLUSH, and a reload that empties the dataset, as Redis's
/// `emptyData` does).
pub fn clear(server: &Server) {
    let mut registry = server.scripting.libraries.write();
    registry.libraries.clear();
    registry.functions.clear();
    registry.generation += 1;
}

/// Removes library `name` and its functions; whether it existed.
pub fn remove(registry: &mut Registry, name: &str) -> bool {
    let Some(library) = registry.libraries.remove(name) else {
        return false;
    };
    for f in &library.functions {
        registry.functions.remove(&f.name);
    }
    registry.generation += 1;
    true
}

/// A function VM with `redis.register_function`.
fn new_vm() -> mlua::Result<FunctionVm> {
    FunctionVm::new_with(|lua| libs::function(lua, register_function))
}

/// Runs `f` with this thread's function VM, rebuilt with every library first when the
/// registry changed since it was built.
fn with_vm<R>(server: &Server, f: impl FnOnce(&mut Slot) -> R) -> Result<R, String> {
    SLOT.with(|slot| {
        let mut slot = slot.borrow_mut();
        let registry = server.scripting.libraries.read();
        if slot
            .as_ref()
            .is_none_or(|s| s.generation != registry.generation)
        {
            *slot = None;
            let vm = new_vm().map_err(|e| e.to_string())?;
            let mut functions = HashMap::new();
            for library in registry.libraries.values() {
                let (_, _, at) = metadata(&library.code)?;
                for r in run_library(&vm, &library.code[at..])? {
                    // Function names are found in any case, as Redis's dictionary finds them.
                    functions.insert(
                        r.info.name.to_ascii_lowercase(),
                        (r.callback, r.info.flags, r.info.name),
                    );
                }
            }
            *slot = Some(Slot {
                vm,
                generation: registry.generation,
                functions,
                client: super::eval::script_client(server),
            });
        }
        drop(registry);
        Ok(f(slot.as_mut().expect("built above")))
    })
}

/// FCALL and FCALL_RO: `args` = [command, function, numkeys, keys…, args…].
pub fn fcall(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], ro: bool) {
    if ctx.server.monitors.any() {
        crate::monitor::feed(
            ctx.server,
            ctx.client,
            if ro { "fcall_ro" } else { "fcall" },
            args,
        );
    }
    let name = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    let numkeys = crate::commands::args::parse_i64(args[2]);
    let server = ctx.server;
    let outcome = with_vm(server, |slot| {
        // Redis looks the function up before it reads numkeys.
        let Some((function, flags, registered)) = slot.functions.get(&name).cloned() else {
            return ctx.error("ERR Function not found");
        };
        let Some(numkeys) = numkeys else {
            return ctx.error("ERR Bad number of keys provided");
        };
        if numkeys > (args.len() - 3) as i64 {
            return ctx.error("ERR Number of keys can't be greater than number of args");
        }
        if numkeys < 0 {
            return ctx.error("ERR Number of keys can't be negative");
        }
        let (keys, argv) = args[3..].split_at(numkeys as usize);
        let lua = &slot.vm.lua;
        let arguments = match (super::vm::array(lua, keys), super::vm::array(lua, argv)) {
            (Ok(k), Ok(a)) => mlua::MultiValue::from_vec(vec![Value::Table(k), Value::Table(a)]),
            (Err(e), _) | (_, Err(e)) => return ctx.error(&format!("ERR {e}")),
        };
        let target = Target {
            name: &registered,
            flags: super::flags::Flags {
                compat: false,
                bits: flags,
            },
            ro_command: ro,
            eval: false,
            command: args,
        };
        exec::run(
            ctx,
            lua,
            &slot.vm.driver,
            &function,
            arguments,
            &target,
            &mut slot.client,
        );
    });
    if let Err(text) = outcome {
        ctx.error(&format!("ERR {text}"));
    }
}
