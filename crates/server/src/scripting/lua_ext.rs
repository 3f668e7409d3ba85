//! The functions densekv's patched Lua 5.1.5 adds to the C API, and safe wrappers for them.
//!
//! Redis 7.0 embeds a patched Lua 5.1.5, and scripts can tell. Its globals (`_G`) and the library
//! tables (`string`, `redis`, `cjson`, ...) are *read-only*: a script that assigns a global
//! (`x = 1`), stores into a library table (`string.foo = 1`, `rawset(_G, 'x', 1)`,
//! `table.insert(bit, 1)`) or replaces a metatable (`setmetatable(_G, {})`) fails with
//! `Attempt to modify a readonly table`, while reads are as fast as ever. Stock Lua has no such
//! thing (a `__newindex` metamethod does not see `rawset`, nor stores into existing keys), so
//! densekv carries the same patch as Redis, in `vendor/lua-src/lua-5.1.5` (built by `mlua-sys`
//! through the workspace's `[patch.crates-io]` override of `lua-src`;
//! `vendor/lua-src/PATCHES.md` lists every change):
//!
//! - a `readonly` flag in every table, and two API functions to set and read it:
//!   [`set_readonly`] and [`is_readonly`] wrap `lua_enablereadonlytable` and
//!   `lua_isreadonlytable`. A read-only table refuses every store: assignment (whether or not it
//!   has a `__newindex` metamethod, as in Redis), `rawset`, `lua_rawseti` (so `table.insert`,
//!   `table.remove` and `table.sort`), and `setmetatable`. Reads (`t.k`, `rawget`, `pairs`, `#t`)
//!   are untouched.
//!
//! The other raw C functions a script run goes through live here too, each with its stack
//! discipline stated at its `// SAFETY:` comment: `redis.pcall` as Redis replaces Lua's
//! ([`redis_pcall`]), the busy-script count hook ([`set_count_hook`]), the setter of KEYS and
//! ARGV the EVAL driver calls first ([`keys_and_args_setter`]), and `redis.call`'s fast path
//! ([`redis_call_fast`]), which runs a command with string arguments and pushes a simple reply
//! without going through `mlua`.
//!
//! # Writing to a read-only table from Rust
//!
//! The patched Lua raises the error from inside `lua_rawset`, `lua_rawseti` and
//! `lua_setmetatable`, and `mlua` calls those *outside* a protected call in several places:
//! `Table::set` and `Table::push` on a table without a metatable, `Table::raw_set`, `raw_push`
//! and `raw_seti` when no memory limit is set, and `Table::raw_pop`, `Table::clear` and
//! `Table::set_metatable` always. An error raised there has no handler of its own: Lua 5.1 exits
//! the process, or, during a script, `longjmp`s across `mlua`'s Rust frames. So Rust code must
//! not write to a read-only table through `mlua` (`Table::raw_insert`, and `raw_remove` of an
//! integer key, are protected, and fail cleanly): turn the flag off with [`set_readonly`] first,
//! or write from Lua code, which runs protected.

use std::ffi::c_int;

use mlua::ffi::{self, lua_State};
use mlua::{Lua, Table};

// The functions densekv's Lua adds (vendor/lua-src/PATCHES.md). None of them raises a Lua error
// (with `LUA_USE_APICHECK`, a misuse fails an `assert` instead), so the plain C ABI is right: no
// `longjmp` ever crosses these frames.
unsafe extern "C" {
    /// Marks (`enabled != 0`) or unmarks the table at `objindex` read-only. The value at
    /// `objindex` must be a table, and not the registry.
    pub fn lua_enablereadonlytable(state: *mut lua_State, objindex: c_int, enabled: c_int);

    /// 1 if the table at `objindex` is read-only, else 0. The value at `objindex` must be a table.
    pub fn lua_isreadonlytable(state: *mut lua_State, objindex: c_int) -> c_int;
}

/// Makes `table` read-only (`on`) or writable again (`!on`), as Redis 7.0 does to its globals and
/// library tables. While read-only, every store into the table from Lua raises
/// `Attempt to modify a readonly table`; see the module documentation for stores from Rust.
///
/// `table` must belong to `lua` (`mlua` panics otherwise). Fails only if Lua cannot set up the
/// call (out of memory or stack).
pub fn set_readonly(lua: &Lua, table: &Table, on: bool) -> mlua::Result<()> {
    // SAFETY: `exec_raw` calls the closure in a protected call with exactly its argument,
    // `table`, on the stack, at index 1, and mlua pushes a `Table` as a Lua table (not the
    // registry, which mlua never hands out as a `Table`): what `lua_enablereadonlytable` needs.
    // The closure pops it, leaving no results, which is what `()` reads back.
    unsafe {
        lua.exec_raw::<()>(table, |state| {
            lua_enablereadonlytable(state, 1, c_int::from(on));
            ffi::lua_pop(state, 1);
        })
    }
}

/// Where a run's KEYS and ARGV are: slices the caller of `stage_keys_and_args` holds.
type StagedArrays = (*const [&'static [u8]], *const [&'static [u8]]);

thread_local! {
    /// The KEYS and ARGV of the EVAL about to run (`stage_keys_and_args`), for the setter its
    /// driver calls.
    static STAGED: std::cell::Cell<Option<StagedArrays>> = const { std::cell::Cell::new(None) };
}

/// KEYS and ARGV staged for the next run; unstaged when dropped. It borrows the slices, so
/// it cannot outlive them.
#[derive(Debug)]
pub struct Staged<'a> {
    _borrows: std::marker::PhantomData<&'a [&'a [u8]]>,
}

impl Drop for Staged<'_> {
    fn drop(&mut self) {
        STAGED.set(None);
    }
}

/// Stages `keys` and `args` for the setter ([`keys_and_args_setter`]) the EVAL driver calls
/// first thing, inside its protected call: no protected call of its own per run.
pub fn stage_keys_and_args<'a>(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Staged<'a> {
    // The lifetimes are erased: the setter reads the slices only while the `Staged` guard,
    // which the caller holds across the run, keeps them staged.
    let erase =
        |items: &[&[u8]]| std::ptr::slice_from_raw_parts(items.as_ptr().cast(), items.len());
    STAGED.set(Some((erase(keys), erase(args))));
    Staged {
        _borrows: std::marker::PhantomData,
    }
}

/// The C function that sets `globals.KEYS` and `globals.ARGV` to fresh arrays of what is
/// staged (Redis's `luaCreateArray` and `lua_setglobal`), lifting `globals`' read-only flag
/// only around the two stores. `globals` must hold both names already (the stores then
/// allocate nothing, so nothing can fail while the flag is off).
pub fn keys_and_args_setter(lua: &Lua, globals: &Table) -> mlua::Result<mlua::Function> {
    // SAFETY: `exec_raw` calls the closure with `globals` alone on the stack; `lua_pushcclosure`
    // pops it as upvalue 1 and leaves the function, the one result.
    unsafe {
        lua.exec_raw::<mlua::Function>(globals, |state| {
            ffi::lua_pushcclosure(state, set_keys_and_args_c, 1);
        })
    }
}

unsafe extern "C-unwind" fn set_keys_and_args_c(state: *mut lua_State) -> c_int {
    let Some((keys, args)) = STAGED.get() else {
        return 0;
    };
    // SAFETY: the staged slices belong to the `Staged` guard's caller, alive for the whole run
    // (the driver calls this before the script). The two arrays are built first: an allocation
    // failure raises there, with the globals still read-only and nothing in this frame to
    // drop. The stores into the globals then reuse existing slots (the names exist, as this
    // function's contract requires), so nothing raises while the flag is off. `luaL_checkstack`
    // makes room for the five values held at once.
    unsafe {
        ffi::luaL_checkstack(state, 6, std::ptr::null());
        push_array(state, &*keys);
        push_array(state, &*args);
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
        lua_enablereadonlytable(state, -1, 0);
        ffi::lua_pushstring(state, c"KEYS".as_ptr());
        ffi::lua_pushvalue(state, -4);
        ffi::lua_rawset(state, -3);
        ffi::lua_pushstring(state, c"ARGV".as_ptr());
        ffi::lua_pushvalue(state, -3);
        ffi::lua_rawset(state, -3);
        lua_enablereadonlytable(state, -1, 1);
        ffi::lua_settop(state, -4);
    }
    0
}

/// Pushes a new array of `items` as strings.
///
/// # Safety
///
/// `state` is valid with room for two more values; it may raise (out of memory).
unsafe fn push_array(state: *mut lua_State, items: &[&[u8]]) {
    // SAFETY: per the contract.
    unsafe {
        ffi::lua_createtable(state, c_int::try_from(items.len()).unwrap_or(0), 0);
        for (i, item) in items.iter().enumerate() {
            ffi::lua_pushlstring(state, item.as_ptr().cast(), item.len());
            ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
        }
    }
}

/// `redis.call` or `redis.pcall` with a fast path: a C function whose upvalues are the
/// function's general body (`general`) and the body that ends a run begun here (`finish`),
/// both made by `libs::body`. When every argument is a string it runs the command itself
/// (`api::run_fast`) and pushes a [`convert::Simple`] reply directly; anything else (a number
/// argument, a refused command, an error or aggregate reply) goes to a body from this same
/// frame, so errors are raised where the general path raises them.
pub fn redis_call_fast(
    lua: &Lua,
    general: &mlua::Function,
    finish: &mlua::Function,
) -> mlua::Result<mlua::Function> {
    // SAFETY: `exec_raw` calls the closure with `general` and `finish` on the stack;
    // `lua_pushcclosure` pops both as upvalues 1 and 2 and leaves the function, the one result.
    unsafe {
        lua.exec_raw::<mlua::Function>((general, finish), |state| {
            ffi::lua_pushcclosure(state, redis_call_fast_c, 2);
        })
    }
}

thread_local! {
    /// The fast path's copy of a command's reply (kept for its capacity).
    static FAST_REPLY: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Most arguments the fast path takes; more go the general way.
const FAST_ARGS_MAX: c_int = 16;

unsafe extern "C-unwind" fn redis_call_fast_c(state: *mut lua_State) -> c_int {
    // SAFETY: Lua calls this with a valid state and its arguments at 1..=nargs; upvalues 1 and
    // 2 are bodies (`redis_call_fast`), as `call_body` requires. The argument slices point into
    // strings on the stack, alive until this returns, and are dropped (with the `SmallVec`)
    // before any call that may raise. The reply copy is held in `ManuallyDrop`, so no value
    // with a destructor lives across the pushes: an allocation failure raising there unwinds a
    // frame with nothing to drop (the buffer leaks). `lua_checkstack` makes room for the three
    // values a status reply pushes.
    unsafe {
        let nargs = ffi::lua_gettop(state);
        let strings = (1..=nargs).all(|i| ffi::lua_type(state, i) == ffi::LUA_TSTRING);
        if nargs == 0 || nargs > FAST_ARGS_MAX || !strings {
            return crate::scripting::libs::call_body(state, 1);
        }
        let mut copy = std::mem::ManuallyDrop::new(FAST_REPLY.take());
        let ran = {
            let argv: smallvec::SmallVec<[&[u8]; FAST_ARGS_MAX as usize]> = (1..=nargs)
                .map(|i| {
                    let mut len = 0;
                    let bytes = ffi::lua_tolstring(state, i, &raw mut len);
                    std::slice::from_raw_parts(bytes.cast::<u8>(), len)
                })
                .collect();
            crate::scripting::api::run_fast(&argv, &mut copy)
        };
        let simple = if ran {
            super::convert::simple_reply(&copy)
        } else {
            None
        };
        let pushed = match simple {
            Some(reply) => {
                ffi::luaL_checkstack(state, 3, std::ptr::null());
                push_simple(state, reply);
                true
            }
            None => false,
        };
        FAST_REPLY.set(std::mem::ManuallyDrop::into_inner(copy));
        if pushed {
            return 1;
        }
        if ran {
            crate::scripting::api::reply_left_to_finish();
        }
        crate::scripting::libs::call_body(state, 2)
    }
}

/// Pushes `reply` as `convert::reply_to_lua` converts it.
///
/// # Safety
///
/// `state` is valid with room for three more values.
unsafe fn push_simple(state: *mut lua_State, reply: super::convert::Simple<'_>) {
    use super::convert::Simple;
    // SAFETY: per the contract, the state is valid and has the room these pushes take.
    unsafe {
        match reply {
            Simple::Integer(n) => ffi::lua_pushnumber(state, n as ffi::lua_Number),
            Simple::False => ffi::lua_pushboolean(state, 0),
            Simple::Bulk(bytes) => {
                ffi::lua_pushlstring(state, bytes.as_ptr().cast(), bytes.len());
            }
            Simple::Status(text) => {
                ffi::lua_createtable(state, 0, 1);
                ffi::lua_pushstring(state, c"ok".as_ptr());
                ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
                ffi::lua_rawset(state, -3);
            }
        }
    }
}

/// Whether `table` is read-only (see [`set_readonly`]).
///
/// `table` must belong to `lua` (`mlua` panics otherwise). Answers `false` if Lua cannot set up
/// the call (out of memory or stack); a table it wrongly calls writable still refuses stores.
pub fn is_readonly(lua: &Lua, table: &Table) -> bool {
    // SAFETY: `exec_raw` calls the closure in a protected call with exactly its argument,
    // `table`, on the stack, at index 1, and mlua pushes a `Table` as a Lua table: what
    // `lua_isreadonlytable` needs. The closure replaces it with one boolean, the one result
    // `bool` reads back; `lua_pushboolean` has the slot it needs, as `exec_raw` checks the stack
    // for at least three more values.
    let readonly = unsafe {
        lua.exec_raw::<bool>(table, |state| {
            let readonly = lua_isreadonlytable(state, 1);
            ffi::lua_pop(state, 1);
            ffi::lua_pushboolean(state, readonly);
        })
    };
    readonly.unwrap_or(false)
}

/// Redis's `pcall` (`luaRedisPcall`), which replaces Lua's in both VMs: as Lua's, except that
/// an error that is a table with a string `err` field comes back as that string (Redis 7's
/// errors are tables; older scripts expect the text).
pub fn redis_pcall(lua: &Lua) -> mlua::Result<mlua::Function> {
    // SAFETY: `exec_raw` runs the closure in a protected call with an empty stack; it pushes
    // one C function, which is the one result read back as a `Function`.
    unsafe {
        lua.exec_raw::<mlua::Function>((), |state| {
            ffi::lua_pushcfunction(state, redis_pcall_c);
        })
    }
}

unsafe extern "C-unwind" fn redis_pcall_c(state: *mut lua_State) -> c_int {
    // SAFETY: Lua calls this with a valid state and its arguments on the stack. Every index
    // used exists: the placeholder pushed at 1, then the function and its arguments (a missing
    // function is pushed as nil, so calling it fails inside the protected call); after a failed
    // call, the error value is on top. Nothing here owns memory a longjmp could leak.
    unsafe {
        if ffi::lua_gettop(state) == 0 {
            ffi::lua_pushnil(state);
        }
        let argc = ffi::lua_gettop(state);
        ffi::lua_pushboolean(state, 1);
        ffi::lua_insert(state, 1);
        if ffi::lua_pcall(state, argc - 1, ffi::LUA_MULTRET, 0) != 0 {
            ffi::lua_remove(state, 1);
            if ffi::lua_istable(state, -1) != 0 {
                ffi::lua_getfield(state, -1, c"err".as_ptr());
                if ffi::lua_isstring(state, -1) != 0 {
                    ffi::lua_replace(state, -2);
                }
            }
            ffi::lua_pushboolean(state, 0);
            ffi::lua_insert(state, 1);
        }
        ffi::lua_gettop(state)
    }
}

/// What the count hook asks before each period: `Some(reason)` stops the script with the
/// error `{err = "ERR <reason>"}`.
pub type HookCheck = fn() -> Option<&'static str>;

thread_local! {
    static HOOK_CHECK: std::cell::Cell<Option<HookCheck>> = const { std::cell::Cell::new(None) };
    /// The hook raised an error (and left its thread hooked at every line) since last asked.
    static HOOK_RAISED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a count hook on this thread raised an error since the last call: its VM is then
/// hooked at every line, and wants `set_count_hook` again before its next script.
pub fn take_hook_raised() -> bool {
    HOOK_RAISED.replace(false)
}

/// Makes `check` the question this thread's count hooks ask (`None`: they ask nothing), without
/// touching any VM: the cheap half of [`set_count_hook`] for a VM whose hook is installed
/// already (each script run switches it on and off).
pub fn set_hook_check(check: Option<HookCheck>) {
    HOOK_CHECK.set(check);
}

/// Sets (`Some`) or removes the count hook of `lua`'s main thread, which coroutines started
/// from it inherit: every `period` instructions it calls `check` (Redis's `luaMaskCountHook`
/// and FUNCTION LOAD's `luaEngineLoadHook`); the check is the thread's, as
/// [`set_hook_check`] sets it. Once `check` answers `Some`, the hook raises the error and from
/// then on fires at every line of that coroutine, so a `pcall` in the script cannot keep it
/// running.
/// A `period` of 0 removes the hook.
pub fn set_count_hook(lua: &Lua, check: Option<HookCheck>, period: i32) {
    HOOK_CHECK.set(check);
    // SAFETY: `exec_raw` runs the closure with a valid state and an empty stack; `lua_sethook`
    // only stores the hook in the state and cannot fail.
    let _ = unsafe {
        lua.exec_raw::<()>((), |state| {
            if period > 0 {
                ffi::lua_sethook(state, Some(count_hook), ffi::LUA_MASKCOUNT, period);
            } else {
                ffi::lua_sethook(state, None, 0, 0);
            }
        })
    };
}

unsafe extern "C-unwind" fn count_hook(state: *mut lua_State, _ar: *mut ffi::lua_Debug) {
    let Some(check) = HOOK_CHECK.get() else {
        return;
    };
    let Some(reason) = check() else {
        return;
    };
    HOOK_RAISED.set(true);
    // SAFETY: Lua calls the hook with a valid state. The error table is built with API calls
    // that have room (a hook gets LUA_MINSTACK free slots) and raised with `lua_error`, which
    // does not return; no Rust value with a destructor is alive here (`reason` is static).
    unsafe {
        ffi::lua_sethook(state, Some(count_hook), ffi::LUA_MASKLINE, 0);
        ffi::lua_newtable(state);
        ffi::lua_pushlstring(state, c"ERR ".as_ptr(), 4);
        ffi::lua_pushlstring(state, reason.as_ptr().cast(), reason.len());
        ffi::lua_concat(state, 2);
        ffi::lua_setfield(state, -2, c"err".as_ptr());
        ffi::lua_error(state);
    }
}

#[cfg(test)]
mod tests {
    use mlua::Value;

    use super::*;

    const READONLY: &str = "Attempt to modify a readonly table";

    /// A Lua state with the global `t = {a = 1, 10, 20}`, read-only.
    fn readonly_t() -> (Lua, Table) {
        let lua = Lua::new();
        let t: Table = lua.load("t = {a = 1, 10, 20} return t").eval().unwrap();
        set_readonly(&lua, &t, true).unwrap();
        (lua, t)
    }

    /// Runs `body` as a function under `pcall` and returns the error message it raised, or
    /// `None` if it did not fail.
    fn error_of(lua: &Lua, body: &str) -> Option<String> {
        let (ok, message): (bool, Value) = lua
            .load(format!("return pcall(function() {body} end)"))
            .set_name("=test")
            .eval()
            .unwrap();
        if ok {
            None
        } else {
            Some(message.to_string().unwrap())
        }
    }

    /// Whether `t` still holds exactly `{a = 1, 10, 20}` and has no metatable.
    fn t_unchanged(lua: &Lua) -> bool {
        lua.load(
            "local n = 0 for _ in pairs(t) do n = n + 1 end \
             return n == 3 and t.a == 1 and t[1] == 10 and t[2] == 20 \
             and getmetatable(t) == nil",
        )
        .eval()
        .unwrap()
    }

    #[test]
    fn readonly_table_refuses_assignment() {
        let (lua, _t) = readonly_t();
        let positioned = format!("test:1: {READONLY}");
        // A new key, an existing key, an array slot, and deleting a key.
        for body in ["t.x = 1", "t.a = 2", "t[1] = 0", "t.a = nil", "t[3] = 30"] {
            assert_eq!(
                error_of(&lua, body).as_deref(),
                Some(positioned.as_str()),
                "{body}"
            );
        }
        assert!(t_unchanged(&lua));
    }

    #[test]
    fn readonly_table_refuses_raw_and_library_writes() {
        let (lua, _t) = readonly_t();
        // Raised from inside a C function, so without a position, as in Redis.
        for body in [
            "rawset(t, 'x', 1)",
            "rawset(t, 'a', 2)",
            "setmetatable(t, {})",
            "table.insert(t, 1)",
            "table.insert(t, 1, 5)",
            "table.remove(t)",
            "table.sort(t, function(a, b) return a > b end)",
        ] {
            assert_eq!(error_of(&lua, body).as_deref(), Some(READONLY), "{body}");
        }
        assert!(t_unchanged(&lua));
    }

    #[test]
    fn readonly_table_ignores_newindex() {
        // Redis checks read-only before looking for `__newindex`: a metamethod does not open a
        // way around it.
        let lua = Lua::new();
        let t: Table = lua
            .load(
                "called = false \
                 t = setmetatable({}, {__newindex = function() called = true end}) \
                 return t",
            )
            .eval()
            .unwrap();
        set_readonly(&lua, &t, true).unwrap();
        assert_eq!(
            error_of(&lua, "t.x = 1").unwrap(),
            format!("test:1: {READONLY}")
        );
        assert!(!lua.globals().get::<bool>("called").unwrap());
    }

    #[test]
    fn readonly_table_reads() {
        let (lua, t) = readonly_t();
        let ok: bool = lua
            .load(
                "local sum = 0 for _, v in ipairs(t) do sum = sum + v end \
                 local keys = 0 for _ in pairs(t) do keys = keys + 1 end \
                 local n = 0 for _ in next, t do n = n + 1 end \
                 return t.a == 1 and rawget(t, 'a') == 1 and t.missing == nil \
                 and #t == 2 and sum == 30 and keys == 3 and n == 3 \
                 and table.concat(t, ',') == '10,20' and select('#', unpack(t)) == 2",
            )
            .eval()
            .unwrap();
        assert!(ok);
        assert_eq!(t.get::<i64>("a").unwrap(), 1);
        assert_eq!(t.raw_get::<i64>(2).unwrap(), 20);
    }

    #[test]
    fn readonly_flag_toggles() {
        let (lua, t) = readonly_t();
        assert!(is_readonly(&lua, &t));
        // Other tables, and tables made afterwards, are writable.
        let fresh: Table = lua.load("return {}").eval().unwrap();
        assert!(!is_readonly(&lua, &fresh));
        assert!(!is_readonly(&lua, &lua.globals()));

        set_readonly(&lua, &t, false).unwrap();
        assert!(!is_readonly(&lua, &t));
        assert_eq!(
            error_of(
                &lua,
                "t.x = 1 rawset(t, 'y', 2) table.insert(t, 30) setmetatable(t, {})"
            ),
            None
        );
        let ok: bool = lua
            .load("return t.x == 1 and t.y == 2 and t[3] == 30 and getmetatable(t) ~= nil")
            .eval()
            .unwrap();
        assert!(ok);

        set_readonly(&lua, &t, true).unwrap();
        assert!(is_readonly(&lua, &t));
        assert_eq!(
            error_of(&lua, "t.z = 1").unwrap(),
            format!("test:1: {READONLY}")
        );
    }

    #[test]
    fn readonly_globals() {
        // What Redis 7.0 does to `_G`: assigning a global fails, reading one works.
        let lua = Lua::new();
        let globals = lua.globals();
        set_readonly(&lua, &globals, true).unwrap();
        assert_eq!(
            error_of(&lua, "x = 1").unwrap(),
            format!("test:1: {READONLY}")
        );
        assert_eq!(
            error_of(&lua, "rawset(_G, 'x', 1)").as_deref(),
            Some(READONLY)
        );
        assert_eq!(error_of(&lua, "local x = type(print) return x"), None);
        set_readonly(&lua, &globals, false).unwrap();
        assert_eq!(error_of(&lua, "x = 1"), None);
        assert_eq!(globals.get::<i64>("x").unwrap(), 1);
    }
}
