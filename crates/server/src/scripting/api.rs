//! The `redis` table scripts call, and the two functions Redis replaces in `math`, as Redis
//! 7.0's `script_lua.c` and `eval.c` define them: the same arguments checks, the same error
//! texts, raised (`luaError`: the `{err = …}` table) or returned, as each C function does.
//!
//! Every function is a library function of `libs` (a C trampoline around the Rust body), so a
//! raised error comes from a C frame, as Redis's do: the error handler then reports the line of
//! the script that called it.

use super::convert;
use super::libs::{self, Args, Fail, Outcome, Ret};
use super::run::{Called, Current, REPL_AOF, REPL_REPLICA};
use mlua::{Lua, Table, Value};

/// Redis's `LL_*` levels.
const LOG_LEVELS: [(&str, i64); 4] = [
    ("LOG_DEBUG", 0),
    ("LOG_VERBOSE", 1),
    ("LOG_NOTICE", 2),
    ("LOG_WARNING", 3),
];

/// The version scripts see (`REDIS_VERSION`, `REDIS_VERSION_NUM`): the Redis version densekv
/// answers as, so scripts that test for features take Redis 7.0's branch.
pub const REDIS_VERSION: &str = crate::REDIS_VERSION;

/// `luaPushError` (plain text: the code is `ERR`) or, for `-CODE msg`, `luaPushErrorBuff`'s
/// reading of the code; `counted`: flagged `ignore_error_stats_update`.
pub fn error_value(lua: &Lua, text: &str, counted: bool) -> mlua::Result<Value> {
    let table = if let Some(coded) = text.strip_prefix('-') {
        convert::error_table(lua, coded.as_bytes())?
    } else {
        convert::error_table(lua, format!("ERR {text}").as_bytes())?
    };
    if !counted {
        table.raw_set("ignore_error_stats_update", Value::Nil)?;
    }
    Ok(Value::Table(table))
}

/// Raises `text` as `luaPushError` + `luaError` do.
fn raise(lua: &Lua, text: &str) -> Outcome {
    Err(Fail::Value(error_value(lua, text, false)?))
}

fn one(value: impl mlua::IntoLua, lua: &Lua) -> Outcome {
    Ok(Ret::One(value.into_lua(lua)?))
}

/// One argument of `redis.call`: a Lua string's bytes, borrowed, or a number's text.
enum Arg {
    Borrowed(mlua::BorrowedBytes),
    Number(Vec<u8>),
}

impl std::ops::Deref for Arg {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Arg::Borrowed(bytes) => bytes,
            Arg::Number(text) => text,
        }
    }
}

/// `luaArgsToRedisArgv`: strings as they are, numbers as `%.17g`; `Err` with Redis's text.
fn command_args(args: &Args) -> Result<smallvec::SmallVec<[Arg; 6]>, &'static str> {
    if args.count() == 0 {
        return Err("Please specify at least one argument for this redis lib call");
    }
    (1..=args.count())
        .map(|n| match args.get(n) {
            Some(Value::String(s)) => Ok(Arg::Borrowed(s.as_bytes())),
            Some(v @ (Value::Integer(_) | Value::Number(_))) => {
                let n = libs::number(v).unwrap_or_default();
                Ok(Arg::Number(
                    resp::double::g17(n).as_str().as_bytes().to_vec(),
                ))
            }
            _ => Err("Lua redis lib command arguments must be strings or integers"),
        })
        .collect()
}

/// `redis.call` (`raise`) and `redis.pcall`.
fn call(lua: &Lua, args: &Args, raise_errors: bool) -> Outcome {
    let argv = match command_args(args) {
        Ok(argv) => argv,
        Err(text) if raise_errors => return raise(lua, text),
        Err(text) => return Ok(Ret::One(error_value(lua, text, false)?)),
    };
    let argv: smallvec::SmallVec<[&[u8]; 6]> = argv.iter().map(|a| &**a).collect();
    let result = Current::with(|run| match run.call(&argv) {
        Called::Reply => convert::reply_to_lua(lua, &run.reply).map(|(v, _)| (v, false)),
        Called::Refused(text) => error_value(lua, &text, true).map(|v| (v, true)),
    });
    called(lua, result, raise_errors)
}

/// What `redis.call`'s fast path (`lua_ext::redis_call_fast`) leaves to `finish`: the command
/// ran and its reply waits in the run, it was refused, or no script runs.
#[derive(Debug)]
enum Pending {
    Reply,
    Refused(String),
    Outside,
}

thread_local! {
    static PENDING: std::cell::RefCell<Option<Pending>> = const { std::cell::RefCell::new(None) };
}

/// The fast path's run of `argv` (every argument a string): `true` with the reply copied into
/// `copy`; `false` when the reply cannot be had (refused, no script), left for `finish`.
pub fn run_fast(argv: &[&[u8]], copy: &mut Vec<u8>) -> bool {
    let ran = Current::with(|run| match run.call(argv) {
        Called::Reply => {
            copy.clear();
            copy.extend_from_slice(&run.reply);
            None
        }
        Called::Refused(text) => Some(Pending::Refused(text)),
    });
    let pending = match ran {
        Some(None) => return true,
        Some(Some(pending)) => pending,
        None => Pending::Outside,
    };
    PENDING.with_borrow_mut(|p| *p = Some(pending));
    false
}

/// The fast path ran the command but cannot push its reply (an error, an array, RESP3): `finish`
/// converts it from the run.
pub fn reply_left_to_finish() {
    PENDING.with_borrow_mut(|p| *p = Some(Pending::Reply));
}

/// The end of a `redis.call` (`raise`) or `redis.pcall` the fast path began: what `call` does
/// after running the command.
fn finish(lua: &Lua, raise_errors: bool) -> Outcome {
    let result = match PENDING.with_borrow_mut(Option::take) {
        Some(Pending::Reply) => {
            Current::with(|run| convert::reply_to_lua(lua, &run.reply).map(|(v, _)| (v, false)))
        }
        Some(Pending::Refused(text)) => Some(error_value(lua, &text, true).map(|v| (v, true))),
        Some(Pending::Outside) | None => None,
    };
    called(lua, result, raise_errors)
}

/// A run command's Lua value (and whether it was refused), raised as `redis.call` raises errors;
/// `None` when no script runs.
fn called(lua: &Lua, result: Option<mlua::Result<(Value, bool)>>, raise_errors: bool) -> Outcome {
    let Some(result) = result else {
        return raise(
            lua,
            "redis.call/pcall can only be called inside a script invocation",
        );
    };
    let (value, refused) = result?;
    let is_error = refused
        || matches!(&value, Value::Table(t) if t.raw_get::<Value>("err").is_ok_and(|e| !e.is_nil()));
    if raise_errors && is_error {
        return Err(Fail::Value(value));
    }
    Ok(Ret::One(value))
}

/// `redis.sha1hex(s)`.
fn sha1hex(lua: &Lua, args: &Args) -> Outcome {
    if args.count() != 1 {
        return raise(lua, "wrong number of arguments");
    }
    let data = match args.get(1) {
        Some(v @ (Value::String(_) | Value::Integer(_) | Value::Number(_))) => lua
            .coerce_string(v.clone())?
            .map(|s| s.as_bytes().to_vec())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    one(super::state::sha1_hex(&data), lua)
}

/// `redis.error_reply(s)` and `redis.status_reply(s)`: a one-field table, or (not raised) the
/// error of a wrong call.
fn single_field(lua: &Lua, args: &Args, error: bool) -> Outcome {
    let text = match (args.count(), args.get(1)) {
        (1, Some(Value::String(s))) => s.clone(),
        _ => {
            return Ok(Ret::One(error_value(
                lua,
                "wrong number or type of arguments",
                false,
            )?));
        }
    };
    if error {
        let bytes = text.as_bytes();
        let coded = if bytes.first() == Some(&b'-') {
            bytes[1..].to_vec()
        } else {
            bytes.to_vec()
        };
        let table = convert::error_table(lua, &coded)?;
        table.raw_set("ignore_error_stats_update", Value::Nil)?;
        return Ok(Ret::One(Value::Table(table)));
    }
    let table = lua.create_table()?;
    table.raw_set("ok", text)?;
    Ok(Ret::One(Value::Table(table)))
}

/// `redis.log(level, …)`.
fn log(lua: &Lua, args: &Args) -> Outcome {
    if args.count() < 2 {
        return raise(lua, "redis.log() requires two arguments or more.");
    }
    let Some(level) = args.to_number(lua, 1)? else {
        return raise(lua, "First argument must be a number (log level).");
    };
    let level = level as i32;
    if !(0..=3).contains(&level) {
        return raise(lua, "Invalid debug level.");
    }
    let mut text = Vec::new();
    for n in 2..=args.count() {
        let piece = match args.get(n) {
            Some(v @ (Value::String(_) | Value::Integer(_) | Value::Number(_))) => {
                lua.coerce_string(v.clone())?
            }
            _ => None,
        };
        if let Some(piece) = piece {
            if n != 2 {
                text.push(b' ');
            }
            text.extend_from_slice(&piece.as_bytes());
        }
    }
    crate::log::at_level(level, &String::from_utf8_lossy(&text));
    Ok(Ret::List(lua.create_table()?, 0))
}

/// `redis.setresp(2|3)`.
fn setresp(lua: &Lua, args: &Args) -> Outcome {
    let Some(()) = Current::with(|_| ()) else {
        return raise(
            lua,
            "redis.setresp can only be called inside a script invocation",
        );
    };
    if args.count() != 1 {
        return raise(lua, "redis.setresp() requires one argument.");
    }
    let resp = args.to_number(lua, 1)?.unwrap_or(0.0) as i32;
    let protocol = match resp {
        2 => resp::Protocol::Resp2,
        3 => resp::Protocol::Resp3,
        _ => return raise(lua, "RESP version must be 2 or 3."),
    };
    Current::with(|run| run.client.protocol = protocol);
    Ok(Ret::List(lua.create_table()?, 0))
}

/// `redis.set_repl(flags)`.
fn set_repl(lua: &Lua, args: &Args) -> Outcome {
    let Some(()) = Current::with(|_| ()) else {
        return raise(
            lua,
            "redis.set_repl can only be called inside a script invocation",
        );
    };
    if args.count() != 1 {
        return raise(lua, "redis.set_repl() requires two arguments.");
    }
    let flags = args.to_number(lua, 1)?.unwrap_or(0.0) as i32;
    if i64::from(flags) & !(REPL_AOF | REPL_REPLICA) != 0 {
        return raise(
            lua,
            "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
        );
    }
    Current::with(|run| run.propagate = i64::from(flags) & REPL_AOF != 0);
    Ok(Ret::List(lua.create_table()?, 0))
}

/// `redis.acl_check_cmd(cmd, …)`: densekv has one user, allowed everything, so a known
/// command is always permitted.
fn acl_check_cmd(lua: &Lua, args: &Args) -> Outcome {
    let Some(()) = Current::with(|_| ()) else {
        return raise(
            lua,
            "redis.acl_check_cmd can only be called inside a script invocation",
        );
    };
    let argv = match command_args(args) {
        Ok(argv) => argv,
        Err(text) => return raise(lua, text),
    };
    let argv: Vec<&[u8]> = argv.iter().map(|a| &**a).collect();
    match crate::command::resolve(&argv) {
        crate::command::Found::Command(..) => one(true, lua),
        _ => raise(lua, "Invalid command passed to redis.acl_check_cmd()"),
    }
}

/// `math.random` on Redis's generator.
fn math_random(lua: &Lua, args: &Args) -> Outcome {
    const OUTSIDE: &str = "math.random can only be called inside a script invocation";
    if Current::with(|_| ()).is_none() {
        return Err(Fail::error(OUTSIDE));
    }
    // More than two arguments: the C function draws, then fails (`wrong number of arguments`).
    let mut ints = vec![0; 3];
    if args.count() <= 2 {
        ints.clear();
        for n in 1..=args.count() {
            ints.push(super::rand::check_int(args.check_number(lua, n)?));
        }
    }
    match Current::with(|run| run.server.scripting.rand.lock().random(&ints)) {
        Some(Ok(r)) => one(r, lua),
        Some(Err(text)) => Err(random_error(text)),
        None => Err(Fail::error(OUTSIDE)),
    }
}

/// `Rand48::random`'s error as the C function raises it.
fn random_error(text: &str) -> Fail {
    match text.strip_prefix("bad argument #") {
        Some(rest) if rest.starts_with('1') => Fail::arg(1, "interval is empty"),
        Some(_) => Fail::arg(2, "interval is empty"),
        None => Fail::error(text),
    }
}

/// `math.randomseed(n)`.
fn math_randomseed(lua: &Lua, args: &Args) -> Outcome {
    if Current::with(|_| ()).is_none() {
        return Err(Fail::error(
            "math.randomseed can only be called inside a script invocation",
        ));
    }
    let seed = super::rand::check_int(args.check_number(lua, 1)?);
    Current::with(|run| run.server.scripting.rand.lock().seed(seed));
    Ok(Ret::List(lua.create_table()?, 0))
}

/// The `__index` of the protected globals (`luaProtectedTableError`).
pub fn missing_global(lua: &Lua) -> mlua::Result<mlua::Function> {
    libs::function(lua, |lua, args| {
        if args.count() != 2 {
            return Err(Fail::error(
                "Wrong number of arguments to luaProtectedTableError",
            ));
        }
        let name = match args.get(2) {
            Some(v @ (Value::String(_) | Value::Integer(_) | Value::Number(_))) => {
                lua.coerce_string(v.clone())?
            }
            _ => None,
        };
        let Some(name) = name else {
            return Err(Fail::error(
                "Second argument to luaProtectedTableError must be a string or number",
            ));
        };
        Err(Fail::error(format!(
            "Script attempted to access nonexistent global variable '{}'",
            String::from_utf8_lossy(&name.as_bytes())
        )))
    })
}

/// Sets the `redis` functions of EVAL scripts and function bodies on `redis`.
pub fn fill_redis_table(lua: &Lua, redis: &Table) -> mlua::Result<()> {
    for (name, raise_errors) in [("call", true), ("pcall", false)] {
        let general = libs::body(lua, move |l, a| call(l, a, raise_errors))?;
        let finish = libs::body(lua, move |l, _| finish(l, raise_errors))?;
        let fast = super::lua_ext::redis_call_fast(lua, &general, &finish)?;
        redis.raw_set(name, fast)?;
    }
    fill_log_and_version(lua, redis)?;
    redis.raw_set("setresp", libs::function(lua, setresp)?)?;
    redis.raw_set("sha1hex", libs::function(lua, sha1hex)?)?;
    redis.raw_set(
        "error_reply",
        libs::function(lua, |l, a| single_field(l, a, true))?,
    )?;
    redis.raw_set(
        "status_reply",
        libs::function(lua, |l, a| single_field(l, a, false))?,
    )?;
    redis.raw_set("set_repl", libs::function(lua, set_repl)?)?;
    redis.raw_set("REPL_NONE", 0)?;
    redis.raw_set("REPL_AOF", REPL_AOF)?;
    redis.raw_set("REPL_SLAVE", REPL_REPLICA)?;
    redis.raw_set("REPL_REPLICA", REPL_REPLICA)?;
    redis.raw_set("REPL_ALL", REPL_AOF | REPL_REPLICA)?;
    redis.raw_set("acl_check_cmd", libs::function(lua, acl_check_cmd)?)?;
    Ok(())
}

/// `redis.log`, the `LOG_*` levels and the version fields (also what a library sees while
/// FUNCTION LOAD runs it).
pub fn fill_log_and_version(lua: &Lua, redis: &Table) -> mlua::Result<()> {
    redis.raw_set("log", libs::function(lua, log)?)?;
    for (name, level) in LOG_LEVELS {
        redis.raw_set(name, level)?;
    }
    redis.raw_set("REDIS_VERSION_NUM", version_num(REDIS_VERSION))?;
    redis.raw_set("REDIS_VERSION", REDIS_VERSION)?;
    Ok(())
}

/// EVAL's extras (`eval.c`): the debugger entry points, which do nothing without the
/// debugger, and the deprecated `replicate_commands`.
pub fn fill_eval_extras(lua: &Lua, redis: &Table) -> mlua::Result<()> {
    redis.raw_set("breakpoint", libs::function(lua, |l, _| one(false, l))?)?;
    redis.raw_set(
        "debug",
        libs::function(lua, |l, _| Ok(Ret::List(l.create_table()?, 0)))?,
    )?;
    redis.raw_set(
        "replicate_commands",
        libs::function(lua, |l, _| one(true, l))?,
    )?;
    Ok(())
}

/// Replaces `math.random` and `math.randomseed`.
pub fn replace_math(lua: &Lua, math: &Table) -> mlua::Result<()> {
    math.raw_set("random", libs::function(lua, math_random)?)?;
    math.raw_set("randomseed", libs::function(lua, math_randomseed)?)?;
    Ok(())
}

/// `REDIS_VERSION_NUM`: 0x00MMmmpp.
fn version_num(version: &str) -> i64 {
    let mut parts = version.split('.').map(|p| p.parse::<i64>().unwrap_or(0));
    let (major, minor, patch) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    (major << 16) | (minor << 8) | patch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_num_packs_three_bytes() {
        assert_eq!(version_num("7.0.15"), 0x0007_000f);
    }

    #[test]
    fn error_values_have_redis_codes() {
        let lua = Lua::new();
        let err = |v: Value| match v {
            Value::Table(t) => (
                t.raw_get::<String>("err").unwrap(),
                t.raw_get::<Option<bool>>("ignore_error_stats_update")
                    .unwrap(),
            ),
            _ => panic!("not a table"),
        };
        assert_eq!(
            err(error_value(&lua, "Unknown Redis command called from script", true).unwrap()),
            (
                "ERR Unknown Redis command called from script".into(),
                Some(true)
            )
        );
        assert_eq!(
            err(error_value(&lua, "-OOM no room\r\n", false).unwrap()),
            ("OOM no room".into(), None)
        );
    }
}
