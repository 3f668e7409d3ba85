//! Replies between Redis and Lua, both ways, as Redis 7.0's `script_lua.c` converts them.
//!
//! Redis → Lua (`redis.call`'s result; `reply_to_lua` over the command's RESP bytes):
//!
//! ```text
//!  :n        → number          $bulk → string        $-1 / *-1 → false
//!  *n […]    → table 1..n      +ok   → {ok = "…"}     -ERR x → {err = "ERR x"} (raised by call)
//!  RESP3:    _ → nil   #t/#f → true/false   ,d → {double = d}   (n → {big_number = "n"}
//!            %n → {map = {k = v…}}   ~n → {set = {m = true…}}   =fmt:s → {verbatim_string =
//!            {format = fmt, string = s}}   |attributes → skipped
//! ```
//!
//! Lua → Redis (a script's return value; `lua_to_reply`), in `script` protocol (`redis.setresp`):
//!
//! ```text
//!  string → bulk     number → integer (truncated toward zero)    nil, function… → null
//!  boolean: RESP2 script → :1 or null; RESP3 script → #t/#f (:1/:0 to a RESP2 caller)
//!  table: {err = s} → -s   {ok = s} → +s   {double = n} → double   {big_number = s}
//!         {verbatim_string = {format, string}}   {map = t} → map   {set = t} → set
//!         else the array t[1], t[2]… up to the first nil
//! ```
//! The checks go in that order, each by `rawget`, as Redis's do; a table nested deeper than
//! `DEPTH_MAX` is replied as an error rather than overflowing the stack (Redis checks the Lua
//! stack instead, `reached lua stack limit`).

use mlua::{Lua, Table, Value};
use resp::{Protocol, ReplyWriter};

/// Nesting a reply may have in either direction.
const DEPTH_MAX: usize = 1000;

/// The Lua value of the one RESP reply at the start of `bytes`, and the bytes it took. `Err`
/// for bytes that are not a complete reply (which densekv's own commands never produce).
pub fn reply_to_lua(lua: &Lua, bytes: &[u8]) -> mlua::Result<(Value, usize)> {
    let mut parser = Parser { bytes, pos: 0 };
    let value = parser.value(lua, 0)?;
    Ok((value, parser.pos))
}

/// A reply `redis.call`'s fast path pushes itself (`lua_ext::redis_call_fast`): the kinds most
/// commands answer, whose Lua values take no table but `{ok = …}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Simple<'a> {
    /// `:n` → a number.
    Integer(i64),
    /// `$-1` or `*-1` → false.
    False,
    /// `$n` → a string.
    Bulk(&'a [u8]),
    /// `+text` → `{ok = text}`.
    Status(&'a [u8]),
}

/// The first reply in `bytes` when it is `Simple`, converted as `reply_to_lua` would.
pub fn simple_reply(bytes: &[u8]) -> Option<Simple<'_>> {
    let mut parser = Parser { bytes, pos: 1 };
    match *bytes.first()? {
        b':' => parser.number().ok().map(Simple::Integer),
        b'$' => match parser.number().ok()? {
            -1 => Some(Simple::False),
            len => parser
                .blob(usize::try_from(len).ok()?)
                .ok()
                .map(Simple::Bulk),
        },
        b'+' => parser.line().ok().map(Simple::Status),
        b'*' => (parser.number().ok()? == -1).then_some(Simple::False),
        _ => None,
    }
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
}

fn malformed() -> mlua::Error {
    mlua::Error::runtime("malformed reply")
}

impl<'a> Parser<'a> {
    /// The line after the type byte, without its CRLF.
    fn line(&mut self) -> mlua::Result<&'a [u8]> {
        let bytes: &'a [u8] = self.bytes;
        let rest = &bytes[self.pos..];
        let end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(malformed)?;
        self.pos += end + 2;
        Ok(&rest[..end])
    }

    fn number(&mut self) -> mlua::Result<i64> {
        let line = self.line()?;
        std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(malformed)
    }

    /// `len` bytes and their CRLF.
    fn blob(&mut self, len: usize) -> mlua::Result<&'a [u8]> {
        let end = self.pos.checked_add(len).ok_or_else(malformed)?;
        if end + 2 > self.bytes.len() {
            return Err(malformed());
        }
        let bytes: &'a [u8] = self.bytes;
        let blob = &bytes[self.pos..end];
        self.pos = end + 2;
        Ok(blob)
    }

    fn value(&mut self, lua: &Lua, depth: usize) -> mlua::Result<Value> {
        if depth > DEPTH_MAX {
            return Err(mlua::Error::runtime("reached lua stack limit"));
        }
        let kind = *self.bytes.get(self.pos).ok_or_else(malformed)?;
        self.pos += 1;
        match kind {
            b':' => Ok(Value::Number(self.number()? as f64)),
            b'$' => match self.number()? {
                -1 => Ok(Value::Boolean(false)),
                len => Ok(Value::String(lua.create_string(self.blob(len as usize)?)?)),
            },
            b'+' => {
                let line = self.line()?.to_vec();
                one_field(lua, "ok", Value::String(lua.create_string(&line)?))
            }
            b'-' => {
                let line = self.line()?.to_vec();
                error_table(lua, &line).map(Value::Table)
            }
            b'*' | b'>' => match self.number()? {
                -1 => Ok(Value::Boolean(false)),
                len => self.array(lua, len as usize, depth),
            },
            _ => self.resp3(lua, kind, depth),
        }
    }

    /// The RESP3-only types.
    fn resp3(&mut self, lua: &Lua, kind: u8, depth: usize) -> mlua::Result<Value> {
        match kind {
            b'_' => {
                self.line()?;
                Ok(Value::Nil)
            }
            b'#' => Ok(Value::Boolean(self.line()? == b"t")),
            b',' => {
                let line = self.line()?.to_vec();
                let d = parse_double(&line).ok_or_else(malformed)?;
                one_field(lua, "double", Value::Number(d))
            }
            b'(' => {
                let line = self.line()?.to_vec();
                one_field(lua, "big_number", Value::String(lua.create_string(&line)?))
            }
            b'=' => {
                let len = self.number()? as usize;
                let blob = self.blob(len)?.to_vec();
                let (format, text) = blob.split_at(blob.len().min(4));
                let inner = lua.create_table()?;
                inner.raw_set("string", lua.create_string(text)?)?;
                inner.raw_set("format", lua.create_string(&format[..format.len().min(3)])?)?;
                one_field(lua, "verbatim_string", Value::Table(inner))
            }
            b'%' => self.map(lua, depth),
            b'~' => self.set(lua, depth),
            b'|' => {
                // Attributes are not shown to scripts: skipped, then the reply they precede.
                let pairs = self.number()? as usize;
                for _ in 0..pairs * 2 {
                    self.value(lua, depth + 1)?;
                }
                self.value(lua, depth)
            }
            _ => Err(malformed()),
        }
    }

    fn array(&mut self, lua: &Lua, len: usize, depth: usize) -> mlua::Result<Value> {
        let table = lua.create_table()?;
        for i in 1..=len {
            let v = self.value(lua, depth + 1)?;
            table.raw_set(i, v)?;
        }
        Ok(Value::Table(table))
    }

    fn map(&mut self, lua: &Lua, depth: usize) -> mlua::Result<Value> {
        let pairs = self.number()? as usize;
        let inner = lua.create_table()?;
        for _ in 0..pairs {
            let k = self.value(lua, depth + 1)?;
            let v = self.value(lua, depth + 1)?;
            inner.raw_set(k, v)?;
        }
        one_field(lua, "map", Value::Table(inner))
    }

    fn set(&mut self, lua: &Lua, depth: usize) -> mlua::Result<Value> {
        let len = self.number()? as usize;
        let inner = lua.create_table()?;
        for _ in 0..len {
            let m = self.value(lua, depth + 1)?;
            inner.raw_set(m, true)?;
        }
        one_field(lua, "set", Value::Table(inner))
    }
}

/// RESP3's double text (`inf`, `-inf`, `nan` included).
fn parse_double(line: &[u8]) -> Option<f64> {
    match line {
        b"inf" => Some(f64::INFINITY),
        b"-inf" => Some(f64::NEG_INFINITY),
        b"nan" | b"-nan" => Some(f64::NAN),
        _ => std::str::from_utf8(line).ok()?.parse().ok(),
    }
}

fn one_field(lua: &Lua, name: &str, value: Value) -> mlua::Result<Value> {
    let table = lua.create_table()?;
    table.raw_set(name, value)?;
    Ok(Value::Table(table))
}

/// Redis's `luaPushErrorBuff` for an error reply `CODE msg` (without its `-`): the table
/// `{err = "CODE msg"}` (a message without a space gets the code `ERR`), flagged as already
/// counted in the error statistics.
pub fn error_table(lua: &Lua, text: &[u8]) -> mlua::Result<Table> {
    let (code, msg) = match text.iter().position(|&b| b == b' ') {
        Some(space) => (&text[..space], &text[space + 1..]),
        None => (&b"ERR"[..], text),
    };
    let msg = trim_crlf(msg);
    let mut full = Vec::with_capacity(code.len() + 1 + msg.len());
    full.extend_from_slice(code);
    full.push(b' ');
    full.extend_from_slice(msg);
    let table = lua.create_table()?;
    table.raw_set("err", lua.create_string(&full)?)?;
    table.raw_set("ignore_error_stats_update", true)?;
    Ok(table)
}

/// `sdstrim(msg, "\r\n")`: CR and LF off both ends.
fn trim_crlf(mut s: &[u8]) -> &[u8] {
    while let [b'\r' | b'\n', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b'\r' | b'\n'] = s {
        s = rest;
    }
    s
}

/// What C's `(long long)` cast of a double gives on x86-64: truncation toward zero, and
/// `i64::MIN` for NaN and anything out of range (Redis replies that for `return 1/0`).
fn c_long_long(n: f64) -> i64 {
    // 2^63: `i64::MAX` rounds up to it as a double.
    const TWO_63: f64 = i64::MAX as f64;
    if n.is_nan() || !(-TWO_63..TWO_63).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// Writes `value`, a script's result, as Redis's `luaReplyToRedisReply` replies it to a
/// caller whose writer is `out`; `script` is the protocol the script chose (`redis.setresp`).
/// Returns the error replies it wrote.
pub fn lua_to_reply(value: &Value, script: Protocol, out: &mut ReplyWriter) -> Errors {
    let mut errors = Errors::default();
    write_value(value, script, out, 0, &mut errors);
    errors
}

/// The error replies a script's result held.
#[derive(Debug, Default)]
pub struct Errors {
    /// Those that count in the error statistics: not flagged `ignore_error_stats_update`
    /// (the flagged ones were counted when a command replied them).
    pub counted: Vec<Vec<u8>>,
    /// Whether there was any: the script's command then counts as failed either way
    /// (Redis's `afterErrorReply`).
    pub any: bool,
}

fn write_value(
    value: &Value,
    script: Protocol,
    out: &mut ReplyWriter,
    depth: usize,
    errors: &mut Errors,
) {
    if depth > DEPTH_MAX {
        return out.error(b"ERR reached lua stack limit");
    }
    match value {
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Boolean(b) => match (script, b) {
            (Protocol::Resp2, true) => out.integer(1),
            (Protocol::Resp2, false) => out.null(),
            (Protocol::Resp3, b) => out.boolean(*b),
        },
        Value::Integer(n) => out.integer(*n),
        Value::Number(n) => out.integer(c_long_long(*n)),
        Value::Table(t) => write_table(t, script, out, depth, errors),
        _ => out.null(),
    }
}

/// A table: one of the single-field forms, else an array.
fn write_table(
    t: &Table,
    script: Protocol,
    out: &mut ReplyWriter,
    depth: usize,
    errors: &mut Errors,
) {
    if let Ok(Value::String(err)) = t.raw_get::<Value>("err") {
        let text = crlf_to_spaces(&err.as_bytes());
        out.error(&text);
        errors.any = true;
        if !matches!(
            t.raw_get::<Value>("ignore_error_stats_update"),
            Ok(Value::Boolean(true))
        ) {
            errors.counted.push(text);
        }
        return;
    }
    if let Ok(Value::String(ok)) = t.raw_get::<Value>("ok") {
        return out.simple(&crlf_to_spaces(&ok.as_bytes()));
    }
    if let Ok(Value::Number(d)) = t.raw_get::<Value>("double") {
        return out.double(d);
    }
    if let Ok(Value::Integer(d)) = t.raw_get::<Value>("double") {
        return out.double(d as f64);
    }
    if let Ok(Value::String(n)) = t.raw_get::<Value>("big_number") {
        return out.big_number(&crlf_to_spaces(&n.as_bytes()));
    }
    if write_verbatim(t, out) {
        return;
    }
    if let Ok(Value::Table(map)) = t.raw_get::<Value>("map") {
        let deferred = out.deferred_map();
        let mut pairs = 0;
        for (k, v) in map.pairs::<Value, Value>().flatten() {
            write_value(&k, script, out, depth + 1, errors);
            write_value(&v, script, out, depth + 1, errors);
            pairs += 1;
        }
        return out.set_deferred_len(deferred, pairs);
    }
    if let Ok(Value::Table(set)) = t.raw_get::<Value>("set") {
        let deferred = out.deferred_set();
        let mut members = 0;
        for (k, _) in set.pairs::<Value, Value>().flatten() {
            write_value(&k, script, out, depth + 1, errors);
            members += 1;
        }
        return out.set_deferred_len(deferred, members);
    }
    let deferred = out.deferred_array();
    let mut len = 0;
    while let Ok(v) = t.raw_get::<Value>(len + 1) {
        if v.is_nil() {
            break;
        }
        write_value(&v, script, out, depth + 1, errors);
        len += 1;
    }
    out.set_deferred_len(deferred, len);
}

/// `sdsmapchars(s, "\r\n", "  ")`: a status, error or big number cannot carry a line break.
fn crlf_to_spaces(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect()
}

/// `{verbatim_string = {format = f, string = s}}`; false when `t` is not one.
fn write_verbatim(t: &Table, out: &mut ReplyWriter) -> bool {
    let Ok(Value::Table(v)) = t.raw_get::<Value>("verbatim_string") else {
        return false;
    };
    let (Ok(Value::String(format)), Ok(Value::String(text))) =
        (v.raw_get::<Value>("format"), v.raw_get::<Value>("string"))
    else {
        return false;
    };
    let mut ext = [b' '; 3];
    for (slot, &b) in ext.iter_mut().zip(format.as_bytes().iter()) {
        *slot = b;
    }
    out.verbatim(&text.as_bytes(), ext);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlua::{LuaOptions, StdLib};

    fn lua() -> Lua {
        Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH,
            LuaOptions::default(),
        )
        .expect("lua")
    }

    /// Runs `script` (which returns one value) and replies it as a script in `script_protocol`
    /// to a caller in `caller`.
    fn reply_of(script: &str, script_protocol: Protocol, caller: Protocol) -> Vec<u8> {
        let lua = lua();
        let value: Value = lua.load(script).eval().expect("eval");
        let mut out = Vec::new();
        lua_to_reply(
            &value,
            script_protocol,
            &mut ReplyWriter::new(&mut out, caller),
        );
        out
    }

    /// Lua → Redis as `luaReplyToRedisReply` converts, in both protocols.
    #[test]
    fn lua_values_become_replies() {
        let r2 = |s| reply_of(s, Protocol::Resp2, Protocol::Resp2);
        let r3 = |s| reply_of(s, Protocol::Resp3, Protocol::Resp3);
        assert_eq!(r2("return 'x'"), b"$1\r\nx\r\n");
        assert_eq!(r2("return 3.99"), b":3\r\n");
        assert_eq!(r2("return -3.99"), b":-3\r\n");
        assert_eq!(r2("return 1/0"), b":-9223372036854775808\r\n");
        assert_eq!(r2("return true"), b":1\r\n");
        assert_eq!(r2("return false"), b"$-1\r\n");
        assert_eq!(r2("return nil"), b"$-1\r\n");
        assert_eq!(r2("return {1, 'a', nil, 3}"), b"*2\r\n:1\r\n$1\r\na\r\n");
        assert_eq!(r2("return {err='BAD x\\ny'}"), b"-BAD x y\r\n");
        assert_eq!(r2("return {ok='fine'}"), b"+fine\r\n");
        assert_eq!(r2("return {double=1.5}"), b"$3\r\n1.5\r\n");
        assert_eq!(r3("return {double=1.5}"), b",1.5\r\n");
        assert_eq!(r3("return true"), b"#t\r\n");
        assert_eq!(
            reply_of("return false", Protocol::Resp3, Protocol::Resp2),
            b":0\r\n"
        );
        assert_eq!(r3("return {big_number='123'}"), b"(123\r\n");
        assert_eq!(r3("return {map={a=1}}"), b"%1\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(r2("return {map={a=1}}"), b"*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(r3("return {set={a=true}}"), b"~1\r\n$1\r\na\r\n");
        assert_eq!(
            r3("return {verbatim_string={format='txt', string='hi'}}"),
            b"=6\r\ntxt:hi\r\n"
        );
    }

    /// Redis → Lua as `redisProtocolToLuaType` converts, read back through Lua.
    #[test]
    fn replies_become_lua_values() {
        let lua = lua();
        let show = lua
            .load(
                "local function show(v)
                   if type(v) ~= 'table' then return type(v) .. ':' .. tostring(v) end
                   local keys = {}
                   for k in pairs(v) do keys[#keys + 1] = tostring(k) end
                   table.sort(keys)
                   local parts = {}
                   for _, k in ipairs(keys) do
                     local val = v[k] ~= nil and v[k] or v[tonumber(k)]
                     parts[#parts + 1] = k .. '=' .. show(val)
                   end
                   return '{' .. table.concat(parts, ',') .. '}'
                 end
                 return show",
            )
            .eval::<mlua::Function>()
            .expect("show");
        let of = |bytes: &[u8]| {
            let (value, used) = reply_to_lua(&lua, bytes).expect("parse");
            assert_eq!(used, bytes.len());
            show.call::<String>(value).expect("show")
        };
        assert_eq!(of(b":7\r\n"), "number:7");
        assert_eq!(of(b"$-1\r\n"), "boolean:false");
        assert_eq!(of(b"*-1\r\n"), "boolean:false");
        assert_eq!(of(b"$2\r\nab\r\n"), "string:ab");
        assert_eq!(of(b"+OK\r\n"), "{ok=string:OK}");
        assert_eq!(
            of(b"-WRONGTYPE Operation\r\n"),
            "{err=string:WRONGTYPE Operation,ignore_error_stats_update=boolean:true}"
        );
        assert_eq!(of(b"*2\r\n:1\r\n$1\r\nx\r\n"), "{1=number:1,2=string:x}");
        assert_eq!(of(b"_\r\n"), "nil:nil");
        assert_eq!(of(b"#f\r\n"), "boolean:false");
        assert_eq!(of(b",2.5\r\n"), "{double=number:2.5}");
        assert_eq!(of(b"(12\r\n"), "{big_number=string:12}");
        assert_eq!(of(b"%1\r\n$1\r\nk\r\n:1\r\n"), "{map={k=number:1}}");
        assert_eq!(of(b"~1\r\n$1\r\nm\r\n"), "{set={m=boolean:true}}");
        assert_eq!(
            of(b"=6\r\ntxt:hi\r\n"),
            "{verbatim_string={format=string:txt,string=string:hi}}"
        );
        assert_eq!(of(b"|1\r\n$1\r\na\r\n:1\r\n:5\r\n"), "number:5");
        assert!(reply_to_lua(&lua, b"$5\r\nab\r\n").is_err());
    }

    /// An error without a code gets `ERR`; CR and LF are trimmed off the message.
    #[test]
    fn error_tables_as_redis_builds_them() {
        let lua = lua();
        let t = error_table(&lua, b"oops\r\n").expect("table");
        assert_eq!(t.raw_get::<String>("err").expect("err"), "ERR oops");
        let t = error_table(&lua, b"NOSCRIPT No matching script").expect("table");
        assert_eq!(
            t.raw_get::<String>("err").expect("err"),
            "NOSCRIPT No matching script"
        );
    }
}
