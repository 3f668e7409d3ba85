//! `cmsgpack`: lua-cmsgpack 0.4.0 (`lua_cmsgpack.c`), MessagePack for Lua 5.1, with the
//! encoding choices that library makes.
//!
//! Encoding, one value after another for `pack(...)`:
//!
//! ```text
//!   string            fixstr a0+len | d9 len8 | da len16 | db len32   (never bin8/16/32)
//!   boolean           c2 false | c3 true
//!   number            an integer when (int64_t)x == x (so -0 is 0, 2^63 is a double):
//!                       00..7f, e0..ff fixints, cc/cd/ce/cf unsigned, d0/d1/d2/d3 signed,
//!                       the smallest that fits; otherwise ca float32 when (float)x == x
//!                       (infinities too), else cb float64; big-endian
//!   table             an array (90+n | dc n16 | dd n32) when its keys are exactly 1..n, n < 2^31,
//!                     the empty table included; otherwise a map (80+n | de | df) in `next` order
//!   table at depth 16 and anything else (nil, functions, userdata): c0 nil
//! ```
//!
//! Decoding accepts what this encoder writes plus d0..d3, ca/cb and every length form; bin, ext
//! and `c1` are "Bad data format". uint64 values pass through a signed 64-bit integer, so those
//! above 2^63 come back negative, as in Redis. A map key that decodes to nil or NaN raises
//! `table index is nil`/`is NaN` from `lua_settable`.
//!
//! The C decoder recurses and `unpack` leaves every value on the Lua stack, so nesting and the
//! count of values stop where `luaL_checkstack` does (module comment of `libs`): we count slots
//! the same way, S for a value's frame, S+1 for its table, S+2 inside it.

use mlua::{Lua, Table, Value};

use super::{
    Args, Fail, Nest, Outcome, Ret, function, number, stack_fits, stack_overflow, trunc_i64,
};

/// `LUACMSGPACK_MAX_NESTING`: tables nested deeper than this encode as nil.
const NESTING_MAX: usize = 16;

/// The `cmsgpack` table.
pub(crate) fn module(lua: &Lua) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    table.set("pack", function(lua, pack)?)?;
    table.set("unpack", function(lua, unpack)?)?;
    table.set("unpack_one", function(lua, unpack_one)?)?;
    table.set("unpack_limit", function(lua, unpack_limit)?)?;
    table.set("_NAME", "cmsgpack")?;
    table.set("_VERSION", "lua-cmsgpack 0.4.0")?;
    table.set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    table.set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(table)
}

/// `cmsgpack.pack(...)`: every argument encoded, concatenated.
fn pack(lua: &Lua, args: &Args) -> Outcome {
    let count = args.count();
    if count == 0 {
        return Err(Fail::arg(0, "MessagePack pack needs input."));
    }
    if !stack_fits(count, count) {
        return Err(Fail::arg(0, "Too many arguments for MessagePack pack."));
    }
    let mut out = Vec::new();
    for (i, value) in (1..=count).filter_map(|n| args.get(n)).enumerate() {
        // The arguments and the strings of those already packed are on the C stack.
        let slots = count + i;
        if !stack_fits(slots, 1) {
            return Err(stack_overflow("in function mp_check"));
        }
        encode(&mut out, value, 0, slots + 1)?;
    }
    Ok(Ret::One(Value::String(lua.create_string(out)?)))
}

/// Encodes one value at nesting `level`; `slots` is the C stack with the value on top.
fn encode(out: &mut Vec<u8>, value: &Value, level: usize, slots: usize) -> Result<(), Fail> {
    match value {
        Value::String(s) => encode_bytes(out, &s.as_bytes()),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(_) | Value::Number(_) => encode_number(out, number(value).unwrap_or(0.0)),
        Value::Table(t) if level < NESTING_MAX => encode_table(out, t, level, slots)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn encode_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = bytes.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend([0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend((len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend((len as u32).to_be_bytes());
    }
    out.extend_from_slice(bytes);
}

// Exact equality is the C code's test for "representable as an integer / a float".
#[allow(clippy::float_cmp)]
fn encode_number(out: &mut Vec<u8>, x: f64) {
    let integer = trunc_i64(x);
    if x.is_finite() && integer as f64 == x {
        encode_integer(out, integer);
    } else if f64::from(x as f32) == x {
        out.push(0xca);
        out.extend((x as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend(x.to_be_bytes());
    }
}

fn encode_integer(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        match n {
            0..=127 => out.push(n as u8),
            128..=0xff => out.extend([0xcc, n as u8]),
            0x100..=0xffff => {
                out.push(0xcd);
                out.extend((n as u16).to_be_bytes());
            }
            0x1_0000..=0xffff_ffff => {
                out.push(0xce);
                out.extend((n as u32).to_be_bytes());
            }
            _ => {
                out.push(0xcf);
                out.extend((n as u64).to_be_bytes());
            }
        }
    } else {
        match n {
            -32..=-1 => out.push(n as u8),
            -128..=-33 => out.extend([0xd0, n as u8]),
            -32768..=-129 => {
                out.push(0xd1);
                out.extend((n as i16).to_be_bytes());
            }
            -2_147_483_648..=-32769 => {
                out.push(0xd2);
                out.extend((n as i32).to_be_bytes());
            }
            _ => {
                out.push(0xd3);
                out.extend(n.to_be_bytes());
            }
        }
    }
}

/// Writes an array or map header: the fix form, then 16 and 32 bits.
fn encode_header(out: &mut Vec<u8>, count: usize, fix: u8, wide: u8) {
    if count <= 15 {
        out.push(fix | count as u8);
    } else if count <= 0xffff {
        out.push(wide);
        out.extend((count as u16).to_be_bytes());
    } else {
        out.push(wide + 1);
        out.extend((count as u32).to_be_bytes());
    }
}

fn encode_table(out: &mut Vec<u8>, table: &Table, level: usize, slots: usize) -> Result<(), Fail> {
    if !stack_fits(slots, 2) {
        return Err(stack_overflow("in function table_is_an_array"));
    }
    if let Some(len) = array_length(table)? {
        if !stack_fits(slots, 1) {
            return Err(stack_overflow("in function mp_encode_lua_table_as_array"));
        }
        encode_header(out, len, 0x90, 0xdc);
        for index in 1..=len {
            let value: Value = table.raw_get(index)?;
            encode(out, &value, level + 1, slots + 1)?;
        }
        return Ok(());
    }
    if !stack_fits(slots, 3) {
        return Err(stack_overflow("in function mp_encode_lua_table_as_map"));
    }
    let mut count = 0;
    for pair in table.pairs::<Value, mlua::Value>() {
        pair?;
        count += 1;
    }
    encode_header(out, count, 0x80, 0xde);
    for pair in table.pairs::<Value, Value>() {
        let (key, value) = pair?;
        encode(out, &key, level + 1, slots + 3)?;
        encode(out, &value, level + 1, slots + 2)?;
    }
    Ok(())
}

/// `table_is_an_array`: `Some(n)` when the keys are exactly 1..n (n < 2^31).
fn array_length(table: &Table) -> Result<Option<usize>, Fail> {
    let mut count: i64 = 0;
    let mut max: i64 = 0;
    for pair in table.pairs::<Value, Value>() {
        let (key, _) = pair?;
        let Some(k) = number(&key).filter(|&k| k > 0.0 && k < 2_147_483_648.0 && k.fract() == 0.0)
        else {
            return Ok(None);
        };
        max = max.max(k as i64);
        count += 1;
    }
    Ok((max == count).then_some(count as usize))
}

/// `cmsgpack.unpack(s)`: every value in `s`.
fn unpack(lua: &Lua, args: &Args) -> Outcome {
    // The C function leaves all its arguments on the stack below the values.
    unpack_full(lua, args, 0, 0, args.count())
}

/// `cmsgpack.unpack_one(s [, offset])`: the offset after one value, then the value.
fn unpack_one(lua: &Lua, args: &Args) -> Outcome {
    let offset = args.opt_integer(lua, 2, 0)?;
    unpack_full(lua, args, 1, offset, 1)
}

/// `cmsgpack.unpack_limit(s, limit [, offset])`: the offset after up to `limit` values, then
/// the values.
fn unpack_limit(lua: &Lua, args: &Args) -> Outcome {
    let limit = args.check_integer(lua, 2)?;
    let offset = args.opt_integer(lua, 3, 0)?;
    unpack_full(lua, args, limit, offset, 1)
}

/// `mp_unpack_full`. A limit and offset of 0 mean "everything, and no offset in the results";
/// the next offset is -1 once the input is used up.
fn unpack_full(lua: &Lua, args: &Args, limit: i64, offset: i64, base_slots: usize) -> Outcome {
    let input = args.check_string(lua, 1)?;
    let input = input.as_bytes();
    let len = input.len();
    if offset < 0 || limit < 0 {
        // The C code prints the length where it means the limit.
        return Err(Fail::error(format!(
            "Invalid request to unpack with offset of {} and limit of {}.",
            offset as i32, len as i32
        )));
    }
    if offset as u64 > len as u64 {
        return Err(Fail::error(format!(
            "Start offset {} greater than input length {}.",
            offset as i32, len as i32
        )));
    }
    let decode_all = limit == 0 && offset == 0;
    let limit = if decode_all {
        i64::from(i32::MAX)
    } else {
        limit
    };
    let mut cursor = Cursor {
        data: &input,
        at: offset as usize,
    };
    let results = lua.create_table()?;
    let first = usize::from(!decode_all) + 1;
    let mut count = 0;
    while cursor.left() > 0 && (count as i64) < limit {
        let value = decode(lua, &mut cursor, base_slots + count)?;
        results.raw_set(first + count, value)?;
        count += 1;
    }
    if decode_all {
        return Ok(Ret::List(results, count));
    }
    if !stack_fits(base_slots + count, 1) {
        return Err(stack_overflow("in function mp_unpack_full"));
    }
    let next = if cursor.left() == 0 {
        -1.0
    } else {
        cursor.at as f64
    };
    results.raw_set(1, next)?;
    Ok(Ret::List(results, count + 1))
}

/// The input being decoded.
struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

/// One decoded item: a complete value, or the header of an array or map whose elements follow.
enum Item {
    Value(Value),
    Container { array: bool, len: usize },
}

fn missing() -> Fail {
    Fail::error("Missing bytes in input.")
}

fn bad_format() -> Fail {
    Fail::error("Bad data format in input.")
}

impl Cursor<'_> {
    fn left(&self) -> usize {
        self.data.len() - self.at
    }

    /// `mp_cur_need`: the next `len` bytes, not consumed.
    fn need(&self, len: usize) -> Result<&[u8], Fail> {
        if self.left() < len {
            return Err(missing());
        }
        Ok(&self.data[self.at..self.at + len])
    }

    /// The big-endian integer in the `width` bytes after the type byte, consumed with it.
    fn uint(&mut self, width: usize) -> Result<u64, Fail> {
        let bytes = self.need(1 + width)?;
        let n = bytes[1..]
            .iter()
            .fold(0u64, |n, &b| (n << 8) | u64::from(b));
        self.at += 1 + width;
        Ok(n)
    }

    /// A string of `len` bytes after a header of `header` bytes.
    fn string(&mut self, lua: &Lua, header: usize, len: usize) -> Result<Item, Fail> {
        let bytes = self.need(header.saturating_add(len))?;
        let s = lua.create_string(&bytes[header..])?;
        self.at += header + len;
        Ok(Item::Value(Value::String(s)))
    }

    /// `mp_decode_to_lua_type` up to a container's header; `slots` is the C stack below it.
    fn item(&mut self, lua: &Lua, slots: usize) -> Result<Item, Fail> {
        let kind = *self.need(1)?.first().unwrap_or(&0);
        if !stack_fits(slots, 1) {
            return Err(stack_overflow(
                "too many return values at once; use unpack_one or unpack_limit instead.",
            ));
        }
        let n = |x: f64| Ok(Item::Value(Value::Number(x)));
        match kind {
            0xcc => n(self.uint(1)? as f64),
            0xcd => n(self.uint(2)? as f64),
            0xce => n(self.uint(4)? as f64),
            0xd0 => n(f64::from(self.uint(1)? as u8 as i8)),
            0xd1 => n(f64::from(self.uint(2)? as u16 as i16)),
            0xd2 => n(f64::from(self.uint(4)? as u32 as i32)),
            // uint64 too goes through lua_Integer, so values from 2^63 come back negative.
            0xcf | 0xd3 => n(self.uint(8)? as i64 as f64),
            0xca => n(f64::from(f32::from_bits(self.uint(4)? as u32))),
            0xcb => n(f64::from_bits(self.uint(8)?)),
            0xc0 | 0xc2 | 0xc3 => {
                self.at += 1;
                Ok(Item::Value(match kind {
                    0xc0 => Value::Nil,
                    _ => Value::Boolean(kind == 0xc3),
                }))
            }
            0xd9 => {
                let len = self.need(2)?[1] as usize;
                self.string(lua, 2, len)
            }
            0xda => {
                let bytes = self.need(3)?;
                let len = u16::from_be_bytes([bytes[1], bytes[2]]) as usize;
                self.string(lua, 3, len)
            }
            0xdb => {
                let len = self.uint(4)? as usize;
                self.string(lua, 0, len)
            }
            0xdc | 0xde => Ok(container(kind == 0xdc, self.uint(2)? as usize)),
            0xdd | 0xdf => Ok(container(kind == 0xdd, self.uint(4)? as usize)),
            _ => self.fixed(lua, kind),
        }
    }

    /// The types told by their first byte's high bits.
    fn fixed(&mut self, lua: &Lua, kind: u8) -> Result<Item, Fail> {
        if kind & 0x80 == 0 || kind & 0xe0 == 0xe0 {
            self.at += 1;
            return Ok(Item::Value(Value::Number(f64::from(kind as i8))));
        }
        if kind & 0xe0 == 0xa0 {
            return self.string(lua, 1, usize::from(kind & 0x1f));
        }
        if kind & 0xe0 == 0x80 {
            self.at += 1;
            return Ok(container(kind & 0xf0 == 0x90, usize::from(kind & 0xf)));
        }
        Err(bad_format())
    }
}

fn container(array: bool, len: usize) -> Item {
    Item::Container { array, len }
}

/// A container being filled while decoding (its table and pending key are in a `Nest`);
/// `slots` is the C stack below its table.
#[derive(Clone, Copy, Debug)]
struct Level {
    array: bool,
    left: usize,
    next: usize,
    slots: usize,
    has_key: bool,
}

/// Decodes one complete value. The C decoder recurses; this keeps the open containers on an
/// explicit stack and counts the C stack slots they would hold.
fn decode(lua: &Lua, cursor: &mut Cursor, base_slots: usize) -> Result<Value, Fail> {
    let mut open = Nest::default();
    let mut levels: Vec<Level> = Vec::new();
    loop {
        let slots = match levels.last() {
            None => base_slots,
            Some(level) if level.array => level.slots + 2,
            Some(level) => level.slots + 1 + usize::from(level.has_key),
        };
        let mut value = match cursor.item(lua, slots)? {
            Item::Value(value) => value,
            Item::Container { array, len } => {
                let table = lua.create_table()?;
                if array && !stack_fits(slots + 1, 1) {
                    return Err(stack_overflow("in function mp_decode_to_lua_array"));
                }
                if len == 0 {
                    Value::Table(table)
                } else {
                    open.push(lua, table)?;
                    levels.push(Level {
                        array,
                        left: len,
                        next: 1,
                        slots,
                        has_key: false,
                    });
                    continue;
                }
            }
        };
        // Store the value in its container, closing every container it completes.
        loop {
            let Some(level) = levels.last_mut() else {
                return Ok(value);
            };
            if !level.array && !level.has_key {
                level.has_key = true;
                open.set_key(value);
                break;
            }
            let Some(table) = open.table() else {
                return Ok(value);
            };
            if level.array {
                table.raw_set(level.next, value)?;
                level.next += 1;
            } else {
                set_field(table, open.key(), value)?;
                level.has_key = false;
            }
            level.left -= 1;
            if level.left > 0 {
                break;
            }
            levels.pop();
            value = open.pop()?.map_or(Value::Nil, Value::Table);
        }
    }
}

/// `lua_settable` on a fresh table: nil and NaN keys are the core's errors.
fn set_field(table: &Table, key: Value, value: Value) -> Result<(), Fail> {
    match key {
        Value::Nil => Err(Fail::Raw(b"table index is nil".to_vec())),
        Value::Number(n) if n.is_nan() => Err(Fail::Raw(b"table index is NaN".to_vec())),
        key => Ok(table.raw_set(key, value)?),
    }
}

#[cfg(test)]
mod tests {

    fn eval(code: &str) -> String {
        super::super::eval_for_test(code)
    }

    #[test]
    fn encodings() {
        let cases = [
            ("1, -1, 127, 128, -33, 65536", "01ff7fcc80d0dfce00010000"),
            ("-0.0, 0.5, 0.1", "00ca3f000000cb3fb999999999999a"),
            (
                "2^63, -2^63, 2^64 + 2^12",
                "ca5f000000d38000000000000000cb43f0000000000001",
            ),
            ("1/0, true, false, nil", "ca7f800000c3c2c0"),
            ("{}, {1, 2}, {[2] = 1}", "90920102810201"),
            (
                "string.rep('a', 32)",
                "d9206161616161616161616161616161616161616161616161616161616161616161",
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(
                eval(&format!("return hex(cmsgpack.pack({args}))")),
                expected,
                "{args}"
            );
        }
        let deep = "local t = {} for i = 1, 20 do t = {t} end return hex(cmsgpack.pack(t))";
        assert_eq!(eval(deep), format!("{}c0", "91".repeat(16)));
    }

    #[test]
    fn decodings() {
        assert_eq!(
            eval(
                "return table.concat({cmsgpack.unpack('\\207\\255\\255\\255\\255\\255\\255\\255\\255\\1')}, ',')"
            ),
            "-1,1"
        );
        assert_eq!(
            eval("return table.concat({cmsgpack.unpack_limit('\\1\\2\\3', 2, 1)}, ',')"),
            "-1,2,3"
        );
        assert_eq!(
            eval("return table.concat({cmsgpack.unpack_one('\\1\\2\\3')}, ',')"),
            "1,1"
        );
        assert_eq!(
            eval("return tostring(cmsgpack.unpack('\\145\\192')[1])"),
            "nil"
        );
    }

    #[test]
    fn errors() {
        let cases = [
            ("cmsgpack.unpack('\\196')", "t:1: Bad data format in input."),
            (
                "cmsgpack.unpack('\\146\\1')",
                "t:1: Missing bytes in input.",
            ),
            ("cmsgpack.unpack('\\129\\192\\1')", "table index is nil"),
            (
                "cmsgpack.unpack_one('ab', 5)",
                "t:1: Start offset 5 greater than input length 2.",
            ),
            (
                "cmsgpack.unpack_limit('ab', -1)",
                "t:1: Invalid request to unpack with offset of 0 and limit of 2.",
            ),
            (
                "cmsgpack.pack()",
                "t:1: bad argument #0 to 'pack' (MessagePack pack needs input.)",
            ),
            (
                "cmsgpack.unpack(string.rep('\\145', 5000))",
                "t:1: stack overflow (in function mp_decode_to_lua_array)",
            ),
        ];
        for (call, expected) in cases {
            let code = format!("return select(2, pcall(function() local x = {call} end))");
            assert_eq!(eval(&code), expected, "{call}");
        }
        let many = "return select('#', cmsgpack.unpack(string.rep('\\1', 7999)))";
        assert_eq!(eval(many), "7999");
        let too_many = "return select(2, pcall(cmsgpack.unpack, string.rep('\\1', 8000)))";
        assert_eq!(
            eval(too_many),
            "stack overflow (too many return values at once; use unpack_one or unpack_limit \
             instead.)"
        );
    }
}
