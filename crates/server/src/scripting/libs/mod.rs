//! The Lua libraries Redis 7.0 loads besides Lua's base, table, string and math: `cjson`,
//! `cmsgpack`, `struct` and `bit`.
//!
//! Each library is written in Rust against the C sources Redis 7.0.15 ships in `deps/lua/src`
//! (`lua_cjson.c`, `lua_cmsgpack.c`, `lua_struct.c`, `lua_bit.c`), and behaves as those do on
//! x86-64 Linux, byte for byte: the same output, the same values, the same error messages.
//!
//! # How a library function raises errors
//!
//! The C libraries raise three kinds of errors, and a script sees the difference:
//!
//! - `luaL_error`: the message gets the position of the *calling* Lua code in front
//!   (`user_script:1: Missing bytes in input.`), and none when called straight from `pcall`.
//! - `luaL_argerror`: `bad argument #N to 'name' (...)`, where `name` is how the caller named the
//!   function (`'encode'`, or `'?'` under `pcall(cjson.encode, ...)`), with `self` not counted
//!   for a method call.
//! - errors raised by the Lua core from inside the C function (`table index is nil` from
//!   `lua_settable`), which carry no position.
//!
//! An `mlua` callback that fails raises a userdata wrapping a Rust error, not a string, and it
//! cannot learn its caller's name. So every library function is a small C function, the
//! *trampoline* below, holding the Rust body as its upvalue: the trampoline calls the body, which
//! returns `(code, a, b)` rather than raising, and then returns its results or raises with the
//! real `luaL_where`/`luaL_argerror`, exactly as the C function would from the same frame. The
//! alternative, a Lua wrapper calling `error(msg, 0)`, loses the name of a tail-called function
//! and cannot place the position prefix.
//!
//! # Emulated limits
//!
//! The C code checks the Lua stack with `lua_checkstack`/`luaL_checkstack`, which fail once a C
//! frame would hold more than `LUAI_MAXCSTACK` = 8000 slots. Those failures decide where deep
//! nesting and long result lists stop, so the Rust code counts the slots the C code would hold
//! (`C_STACK_SLOTS_MAX`) and fails at the same element with the same message. That bound also
//! bounds every loop over nesting here: decoding and JSON encoding keep an explicit stack instead
//! of recursing, so no input can overflow the Rust stack of the thread running the script.
//!
//! Numbers are Lua 5.1's doubles. Where the C code converts a double to an integer type
//! (`(int)k`, `(int64_t)n`, `(size_t)d`), x86-64's `cvttsd2si` decides what out-of-range values
//! become (the "integer indefinite" value, `i32::MIN`/`i64::MIN`); `trunc_i32`, `trunc_i64` and
//! `trunc_u64` reproduce it, where Rust's saturating `as` would not.
//!
//! Open tables are parked in a Lua table (`Nest`) rather than held one mlua reference each:
//! mlua keeps references on one auxiliary Lua stack, itself limited to about 8000 slots.
//!
//! # What depends on the Lua core
//!
//! `cjson.encode` writes object keys, and `cmsgpack.pack` map entries, in `next` order, so they
//! match Redis only as far as the Lua core lays tables out the same way. Redis's Lua hashes every
//! byte of a string, where stock Lua 5.1.5 (mlua's vendored one) samples strings of 32 bytes or
//! more: tables with such keys iterate in another order. Keys hashed by address (tables,
//! functions) differ from run to run on Redis itself.

use std::ffi::c_int;
use std::ptr;

use mlua::{Function, Lua, MultiValue, Table, Value, ffi};

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
pub mod structlib;

/// `LUAI_MAXCSTACK`: the most Lua stack slots one C function frame may hold.
pub(crate) const C_STACK_SLOTS_MAX: usize = 8000;

/// Installs the four libraries as the globals `cjson`, `struct`, `cmsgpack` and `bit`, in the
/// order Redis's `luaLoadLibraries` loads them.
pub fn register(lua: &Lua) -> mlua::Result<()> {
    let globals = lua.globals();
    globals.set("cjson", cjson::module(lua)?)?;
    globals.set("struct", structlib::module(lua)?)?;
    globals.set("cmsgpack", cmsgpack::module(lua)?)?;
    globals.set("bit", bit::module(lua)?)?;
    Ok(())
}

/// How a library function fails; see the module comment.
#[derive(Debug)]
pub(crate) enum Fail {
    /// `luaL_error`: the caller's position goes in front.
    Error(Vec<u8>),
    /// `luaL_argerror(narg, message)`.
    Arg(c_int, Vec<u8>),
    /// Raised as it is, without a position.
    Raw(Vec<u8>),
    /// Any value raised as it is (the `{err = …}` tables of the `redis` API).
    Value(Value),
    /// A failure of `mlua` itself (memory, the reference stack), passed on unchanged.
    Lua(mlua::Error),
}

impl From<mlua::Error> for Fail {
    fn from(e: mlua::Error) -> Fail {
        Fail::Lua(e)
    }
}

impl Fail {
    /// `luaL_error` with a message.
    pub(crate) fn error(message: impl Into<Vec<u8>>) -> Fail {
        Fail::Error(message.into())
    }

    /// `luaL_argerror(narg, message)`.
    pub(crate) fn arg(narg: usize, message: impl Into<Vec<u8>>) -> Fail {
        Fail::Arg(narg as c_int, message.into())
    }
}

/// What a library function returns.
#[derive(Debug)]
pub(crate) enum Ret {
    /// One value.
    One(Value),
    /// `count` values, stored at 1..=count in the table (holes are nils). A table rather than a
    /// `Vec<Value>`: thousands of results would each pin a slot of mlua's reference stack.
    List(Table, usize),
}

pub(crate) type Outcome = Result<Ret, Fail>;

/// The trampoline's codes: what the Rust body returned as its first value.
const RET_ONE: i64 = 0;
const RET_LIST: i64 = 1;
const RAISE_ERROR: i64 = 2;
const RAISE_ARG: i64 = 3;
const RAISE_RAW: i64 = 4;

/// Wraps a library function's Rust body into a Lua function that returns or raises as the C
/// library function does.
pub(crate) fn function(
    lua: &Lua,
    body: impl Fn(&Lua, &Args) -> Outcome + 'static,
) -> mlua::Result<Function> {
    let inner = self::body(lua, body)?;
    // SAFETY: the closure runs with exactly the one argument pushed (the Rust body) on the
    // stack; `lua_pushcclosure` pops it as the upvalue and leaves the new function as the one
    // result, which is what `exec_raw` reads back.
    unsafe {
        lua.exec_raw::<Function>(inner, |state| {
            ffi::lua_pushcclosure(state, trampoline, 1);
        })
    }
}

/// A library function's Rust body as the Lua function [`call_body`] calls: it returns three
/// values, a code (`RET_*`, `RAISE_*`) and what goes with it.
pub(crate) fn body(
    lua: &Lua,
    body: impl Fn(&Lua, &Args) -> Outcome + 'static,
) -> mlua::Result<Function> {
    lua.create_function(move |lua, args: MultiValue| {
        let args = Args {
            values: args.into_vec(),
        };
        let message = |m: Vec<u8>| lua.create_string(m).map(Value::String);
        Ok(match body(lua, &args) {
            Ok(Ret::One(v)) => (RET_ONE, v, Value::Nil),
            Ok(Ret::List(t, n)) => (RET_LIST, Value::Table(t), Value::Number(n as f64)),
            Err(Fail::Error(m)) => (RAISE_ERROR, message(m)?, Value::Nil),
            Err(Fail::Arg(narg, m)) => (RAISE_ARG, message(m)?, Value::Number(f64::from(narg))),
            Err(Fail::Raw(m)) => (RAISE_RAW, message(m)?, Value::Nil),
            Err(Fail::Value(v)) => (RAISE_RAW, v, Value::Nil),
            Err(Fail::Lua(e)) => return Err(e),
        })
    })
}

/// The C function behind every library function: calls the Rust body (upvalue 1) with its
/// arguments, then returns the results or raises from this frame, so that `luaL_where(L, 1)`
/// names the caller and `luaL_argerror` finds the name the caller used.
unsafe extern "C-unwind" fn trampoline(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this with a valid state; upvalue 1 is the body `function` stored.
    unsafe { call_body(state, 1) }
}

/// The trampoline's work, for any C function whose upvalue `upvalue` is a [`body`]: calls it
/// with the function's arguments and returns its results or raises from the calling C
/// function's frame (`redis.call`'s fast path delegates here too).
///
/// # Safety
///
/// `state` is the state Lua called a C function with, that function's upvalue `upvalue` is a
/// function made by [`body`], and the caller's frame holds nothing to drop (a raise unwinds
/// through it).
pub(crate) unsafe fn call_body(state: *mut ffi::lua_State, upvalue: c_int) -> c_int {
    // SAFETY: per this function's contract, upvalue `upvalue` is a body, which returns exactly
    // three values (or raises, which unwinds through here: this frame holds nothing to drop).
    // `lua_error` and `luaL_argerror` do not return.
    unsafe {
        let nargs = ffi::lua_gettop(state);
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(upvalue));
        ffi::lua_insert(state, 1);
        ffi::lua_call(state, nargs, 3);
        match ffi::lua_tointeger(state, 1) {
            RET_ONE => {
                ffi::lua_settop(state, 2);
                1
            }
            RET_LIST => {
                let count = ffi::lua_tointeger(state, 3) as c_int;
                ffi::lua_settop(state, 2);
                ffi::lua_remove(state, 1);
                ffi::luaL_checkstack_(state, count, c"too many results".as_ptr());
                for index in 1..=count {
                    ffi::lua_rawgeti(state, 1, ffi::lua_Integer::from(index));
                }
                count
            }
            RAISE_ERROR => {
                ffi::luaL_where(state, 1);
                ffi::lua_pushvalue(state, 2);
                ffi::lua_concat(state, 2);
                ffi::lua_error(state)
            }
            RAISE_ARG => {
                let narg = ffi::lua_tointeger(state, 3) as c_int;
                let message = ffi::lua_tolstring(state, 2, ptr::null_mut());
                ffi::luaL_argerror(state, narg, message)
            }
            _ => {
                ffi::lua_settop(state, 2);
                ffi::lua_error(state)
            }
        }
    }
}

/// A library function's arguments, read with the C API's conversion rules.
#[derive(Debug)]
pub(crate) struct Args {
    values: Vec<Value>,
}

impl Args {
    /// These arguments with `extra` values after them on the stack.
    pub(crate) fn with_extra(&self, extra: impl IntoIterator<Item = Value>) -> Args {
        let mut values = self.values.clone();
        values.extend(extra);
        Args { values }
    }

    /// `lua_gettop`.
    pub(crate) fn count(&self) -> usize {
        self.values.len()
    }

    /// Argument `n` (from 1), `None` past the last one (Lua's "none").
    pub(crate) fn get(&self, n: usize) -> Option<&Value> {
        n.checked_sub(1).and_then(|i| self.values.get(i))
    }

    /// `luaL_typename(L, n)`.
    pub(crate) fn type_name(&self, n: usize) -> &'static str {
        self.get(n).map_or("no value", type_name)
    }

    /// `lua_tonumber` when it converts (`lua_isnumber`): numbers, and strings Lua reads as one.
    pub(crate) fn to_number(&self, lua: &Lua, n: usize) -> Result<Option<f64>, Fail> {
        match self.get(n) {
            Some(Value::String(s)) => Ok(lua.coerce_number(Value::String(s.clone()))?),
            Some(v) => Ok(number(v)),
            None => Ok(None),
        }
    }

    /// `luaL_checknumber`.
    pub(crate) fn check_number(&self, lua: &Lua, n: usize) -> Result<f64, Fail> {
        self.to_number(lua, n)?
            .ok_or_else(|| self.type_error(n, "number"))
    }

    /// `luaL_checkinteger`: `lua_Integer` is 64 bits, converted with a truncating cast.
    pub(crate) fn check_integer(&self, lua: &Lua, n: usize) -> Result<i64, Fail> {
        self.check_number(lua, n).map(trunc_i64)
    }

    /// `luaL_optinteger`: the default for none or nil.
    pub(crate) fn opt_integer(&self, lua: &Lua, n: usize, default: i64) -> Result<i64, Fail> {
        match self.get(n) {
            None | Some(Value::Nil) => Ok(default),
            Some(_) => self.check_integer(lua, n),
        }
    }

    /// `luaL_checklstring`: strings, and numbers formatted as Lua does (`%.14g`).
    pub(crate) fn check_string(&self, lua: &Lua, n: usize) -> Result<mlua::LuaString, Fail> {
        match self.get(n) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v @ (Value::Integer(_) | Value::Number(_))) => lua
                .coerce_string(v.clone())?
                .ok_or_else(|| self.type_error(n, "string")),
            _ => Err(self.type_error(n, "string")),
        }
    }

    /// `luaL_typerror(L, n, expected)`.
    pub(crate) fn type_error(&self, n: usize, expected: &str) -> Fail {
        Fail::arg(n, format!("{expected} expected, got {}", self.type_name(n)))
    }
}

/// `lua_typename(L, lua_type(L, i))` for a value.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

/// The double of a number value (mlua reads integral numbers as `Integer`).
pub(crate) fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

/// The tables open while decoding or encoding nested data, deepest last, with the key pending
/// for each. Only the deepest table and its key are held from Rust; the ones above it are
/// parked in a Lua table. Holding an mlua reference per level would exhaust mlua's reference
/// stack (one Lua stack of about 8000 slots for the whole state) at the depths the emulated C
/// stack still allows, where Redis succeeds.
#[derive(Debug, Default)]
pub(crate) struct Nest {
    current: Option<(Table, Value)>,
    parked: Option<Table>,
    depth: usize,
}

impl Nest {
    /// Opens `table` below the current one.
    pub(crate) fn push(&mut self, lua: &Lua, table: Table) -> mlua::Result<()> {
        if let Some((above, key)) = self.current.take() {
            let parked = match self.parked.take() {
                Some(parked) => parked,
                None => lua.create_table()?,
            };
            parked.raw_set(2 * self.depth - 1, above)?;
            parked.raw_set(2 * self.depth, key)?;
            self.parked = Some(parked);
        }
        self.current = Some((table, Value::Nil));
        self.depth += 1;
        Ok(())
    }

    /// Closes the deepest table and returns it; the one above becomes current again.
    pub(crate) fn pop(&mut self) -> mlua::Result<Option<Table>> {
        let Some((table, _)) = self.current.take() else {
            return Ok(None);
        };
        self.depth -= 1;
        if let (Some(parked), true) = (&self.parked, self.depth > 0) {
            let above: Table = parked.raw_get(2 * self.depth - 1)?;
            let key: Value = parked.raw_get(2 * self.depth)?;
            self.current = Some((above, key));
        }
        Ok(Some(table))
    }

    /// The deepest open table.
    pub(crate) fn table(&self) -> Option<&Table> {
        self.current.as_ref().map(|(table, _)| table)
    }

    /// The key pending in the deepest table (nil when none).
    pub(crate) fn key(&self) -> Value {
        self.current
            .as_ref()
            .map_or(Value::Nil, |(_, key)| key.clone())
    }

    /// Sets the key pending in the deepest table.
    pub(crate) fn set_key(&mut self, key: Value) {
        if let Some((_, pending)) = self.current.as_mut() {
            *pending = key;
        }
    }
}

/// `(int)x` on x86-64: truncation, and `i32::MIN` for NaN and out-of-range values.
pub(crate) fn trunc_i32(x: f64) -> i32 {
    if x.is_nan() || x >= 2_147_483_648.0 || x <= -2_147_483_649.0 {
        i32::MIN
    } else {
        x as i32
    }
}

/// `(int64_t)x` on x86-64: truncation, and `i64::MIN` for NaN and out-of-range values.
pub(crate) fn trunc_i64(x: f64) -> i64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if x.is_nan() || !(-TWO_63..TWO_63).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// `(uint64_t)x` as gcc compiles it for x86-64: values below 2^63 (and NaN) go through the
/// signed conversion, larger ones are converted less 2^63 with the top bit flipped back, so
/// 2^64 and infinity become 0.
pub(crate) fn trunc_u64(x: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if x >= TWO_63 {
        (trunc_i64(x - TWO_63) as u64) ^ (1 << 63)
    } else {
        trunc_i64(x) as u64
    }
}

/// The emulated `lua_checkstack(L, extra)` of a C frame holding `used` slots.
pub(crate) fn stack_fits(used: usize, extra: usize) -> bool {
    used + extra <= C_STACK_SLOTS_MAX
}

/// `luaL_checkstack`'s error: `stack overflow (message)`.
pub(crate) fn stack_overflow(message: &str) -> Fail {
    Fail::error(format!("stack overflow ({message})"))
}

/// For the libraries' unit tests: `code` run in a Lua with Redis's standard libraries and
/// these four (chunk name `t`), with `hex(s)` defined for binary results.
#[cfg(test)]
pub(crate) fn eval_for_test(code: &str) -> String {
    use mlua::{LuaOptions, StdLib};
    let lua = Lua::new_with(
        StdLib::TABLE | StdLib::STRING | StdLib::MATH,
        LuaOptions::default(),
    )
    .expect("lua");
    register(&lua).expect("register");
    let prelude = "local function hex(s) return (s:gsub('.', function(c) \
                   return string.format('%02x', c:byte()) end)) end ";
    lua.load(format!("{prelude}{code}"))
        .set_name("@t")
        .eval::<String>()
        .expect("eval")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncations_follow_x86() {
        assert_eq!(trunc_i32(2_147_483_647.9), i32::MAX);
        assert_eq!(trunc_i32(2_147_483_648.0), i32::MIN);
        assert_eq!(trunc_i32(-2_147_483_648.5), i32::MIN);
        assert_eq!(trunc_i32(f64::NAN), i32::MIN);
        assert_eq!(trunc_i32(-3.7), -3);
        assert_eq!(trunc_i64(1e19), i64::MIN);
        assert_eq!(trunc_i64(-9_223_372_036_854_775_808.0), i64::MIN);
        assert_eq!(trunc_i64(f64::INFINITY), i64::MIN);
        assert_eq!(trunc_u64(18_446_744_073_709_551_616.0), 0);
        assert_eq!(trunc_u64(f64::INFINITY), 0);
        assert_eq!(trunc_u64(f64::NAN), 1 << 63);
        assert_eq!(trunc_u64(-1.0), u64::MAX);
        assert_eq!(trunc_u64(9_223_372_036_854_775_808.0), 1 << 63);
    }

    #[test]
    fn errors_are_strings_with_the_callers_position() {
        let lua = Lua::new();
        register(&lua).unwrap();
        let direct: String = lua
            .load("local ok, e = pcall(cmsgpack.unpack, '\\196') return e")
            .eval()
            .unwrap();
        assert_eq!(direct, "Bad data format in input.");
        let nested: String = lua
            .load("local ok, e = pcall(function() return cmsgpack.unpack('\\196') end) return e")
            .set_name("@user_script")
            .eval()
            .unwrap();
        assert_eq!(nested, "user_script:1: Bad data format in input.");
        let named: String = lua
            .load("local ok, e = pcall(function() return cjson.encode(1, 2) end) return e")
            .set_name("@user_script")
            .eval()
            .unwrap();
        assert_eq!(
            named,
            "user_script:1: bad argument #1 to 'encode' (expected 1 argument)"
        );
    }
}
