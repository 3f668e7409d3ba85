//! `struct`: Roberto Ierusalimschy's struct library (`lua_struct.c`, v1.7 as Redis ships it),
//! packing Lua values into binary strings and back, as built for x86-64 Linux.
//!
//! A format is a string of options, read up to its first NUL byte (the C code walks a C string):
//!
//! ```text
//!   >  <         big / little endian (default: little, the native order)
//!   !n           maximum alignment n (a power of 2; default 1, `!` alone means 8)
//!   b B          signed / unsigned char         1 byte
//!   h H          short                          2 bytes
//!   l L          long                           8 bytes
//!   T            size_t                         8 bytes
//!   i I  in In   int, or an n-byte integer      4 bytes, n <= 32
//!   f d          float / double                 4 / 8 bytes
//!   c  cn        n chars (c0: whole string when packing, the previous result's length when
//!                unpacking)
//!   s            zero-terminated string
//!   x            one padding byte
//!   ' '          ignored
//! ```
//!
//! An item of size `s` is aligned to `min(s, align)` (never for `c`), padding with zero bytes.
//! Integers are 64-bit `long` underneath: packing converts the double to 64 bits (negative
//! numbers through `long`, others through `unsigned long`, with x86-64's conversions of
//! out-of-range values) and writes `n` bytes, zeros past the eighth; unpacking keeps the last 8
//! bytes read and sign-extends from bit `8n - 1` taken modulo 64 (the shift count x86 uses).
//! The format `z` that other struct libraries have does not exist here: it is an invalid option.

use mlua::{Lua, Table, Value};

use super::{
    Args, Fail, Outcome, Ret, function, number, stack_fits, stack_overflow, trunc_i64, trunc_u64,
};

/// `MAXINTSIZE`: the largest `i`/`I` size.
const INT_SIZE_MAX: usize = 32;
/// `MAXALIGN` on x86-64: the alignment of a double in a struct.
const ALIGN_MAX: usize = 8;

/// The `struct` table.
pub(crate) fn module(lua: &Lua) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    table.set("pack", function(lua, pack)?)?;
    table.set("unpack", function(lua, unpack)?)?;
    table.set("size", function(lua, size)?)?;
    Ok(table)
}

/// The state a format carries along: byte order and maximum alignment.
#[derive(Clone, Copy, Debug)]
struct Header {
    big_endian: bool,
    align: usize,
}

impl Default for Header {
    fn default() -> Header {
        Header {
            big_endian: false,
            align: 1,
        }
    }
}

/// A format being read, one option at a time.
struct Format {
    bytes: Vec<u8>,
    at: usize,
}

impl Format {
    fn new(lua: &Lua, args: &Args) -> Result<Format, Fail> {
        let text = args.check_string(lua, 1)?;
        let text = text.as_bytes();
        let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
        Ok(Format {
            bytes: text[..end].to_vec(),
            at: 0,
        })
    }

    fn next_option(&mut self) -> Option<u8> {
        let option = self.bytes.get(self.at).copied();
        self.at += usize::from(option.is_some());
        option
    }

    /// `getnum`: a decimal number at the cursor, or `default` when there is none.
    fn number(&mut self, default: usize) -> Result<usize, Fail> {
        if !self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut value: i32 = 0;
        while let Some(&digit @ b'0'..=b'9') = self.bytes.get(self.at) {
            let digit = i32::from(digit - b'0');
            if value > i32::MAX / 10 || value * 10 > i32::MAX - digit {
                return Err(Fail::error("integral size overflow"));
            }
            value = value * 10 + digit;
            self.at += 1;
        }
        Ok(value as usize)
    }

    /// `optsize`: the size of an option's item (0 for options without data).
    fn size(&mut self, option: u8) -> Result<usize, Fail> {
        Ok(match option {
            b'b' | b'B' | b'x' => 1,
            b'h' | b'H' => 2,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.number(1)?,
            b'i' | b'I' => {
                let size = self.number(4)?;
                if size > INT_SIZE_MAX {
                    return Err(Fail::error(format!(
                        "integral size {size} is larger than limit of {INT_SIZE_MAX}"
                    )));
                }
                size
            }
            _ => 0,
        })
    }

    /// `controloptions`: endianness, alignment and spaces; anything else is invalid.
    fn control(&mut self, option: u8, header: &mut Header) -> Result<(), Fail> {
        match option {
            b' ' => {}
            b'>' => header.big_endian = true,
            b'<' => header.big_endian = false,
            b'!' => {
                let align = self.number(ALIGN_MAX)?;
                if !align.is_power_of_two() {
                    return Err(Fail::error(format!(
                        "alignment {align} is not a power of 2"
                    )));
                }
                header.align = align;
            }
            _ => {
                let mut message = b"invalid format option '".to_vec();
                message.extend([option, b'\'']);
                return Err(Fail::arg(1, message));
            }
        }
        Ok(())
    }
}

/// `gettoalign`: padding bytes before an item of `size` at offset `len`.
fn padding(len: usize, header: Header, option: u8, size: usize) -> usize {
    if size == 0 || option == b'c' {
        return 0;
    }
    let size = size.min(header.align);
    size.wrapping_sub(len & size.wrapping_sub(1)) & size.wrapping_sub(1)
}

fn is_integer_option(option: u8) -> bool {
    matches!(
        option,
        b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I'
    )
}

/// `struct.pack(fmt, ...)`.
fn pack(lua: &Lua, args: &Args) -> Outcome {
    let mut format = Format::new(lua, args)?;
    // `b_pack` pushes a nil after its arguments: a missing one is "got nil", not "no value"
    // (and, every option taking the next argument, nothing past that nil is ever read).
    let args = &args.with_extra([Value::Nil]);
    let mut header = Header::default();
    let mut out = Vec::new();
    let mut arg = 2;
    while let Some(option) = format.next_option() {
        let mut size = format.size(option)?;
        let pad = padding(out.len(), header, option, size);
        out.resize(out.len() + pad, 0);
        match option {
            _ if is_integer_option(option) => {
                let n = args.check_number(lua, arg)?;
                arg += 1;
                put_integer(&mut out, n, header.big_endian, size);
            }
            b'x' => out.push(0),
            b'f' => {
                let n = args.check_number(lua, arg)?;
                arg += 1;
                put_ordered(&mut out, &(n as f32).to_le_bytes(), header.big_endian);
            }
            b'd' => {
                let n = args.check_number(lua, arg)?;
                arg += 1;
                put_ordered(&mut out, &n.to_le_bytes(), header.big_endian);
            }
            b'c' | b's' => {
                let text = args.check_string(lua, arg)?;
                let text = text.as_bytes();
                arg += 1;
                if size == 0 {
                    size = text.len();
                }
                if text.len() < size {
                    // The C code checks after moving past the argument: it names the next one.
                    return Err(Fail::arg(arg, "string too short"));
                }
                out.extend_from_slice(&text[..size]);
                if option == b's' {
                    out.push(0);
                }
            }
            _ => format.control(option, &mut header)?,
        }
    }
    Ok(Ret::One(Value::String(lua.create_string(out)?)))
}

/// `putinteger`: `n` as `size` bytes of a 64-bit integer.
fn put_integer(out: &mut Vec<u8>, n: f64, big_endian: bool, size: usize) {
    let mut value = if n < 0.0 {
        trunc_i64(n) as u64
    } else {
        trunc_u64(n)
    };
    let start = out.len();
    out.resize(start + size, 0);
    let bytes = &mut out[start..];
    for i in 0..size {
        let at = if big_endian { size - 1 - i } else { i };
        bytes[at] = value as u8;
        value = value.checked_shr(8).unwrap_or(0);
    }
}

/// Appends little-endian bytes in the format's order.
fn put_ordered(out: &mut Vec<u8>, little_endian: &[u8], big_endian: bool) {
    if big_endian {
        out.extend(little_endian.iter().rev());
    } else {
        out.extend_from_slice(little_endian);
    }
}

/// `getinteger`: `bytes` as an integer; only the last 8 bytes read survive the shifts.
fn get_integer(bytes: &[u8], big_endian: bool, signed: bool) -> f64 {
    let fold = |l: u64, &b: &u8| (l << 8) | u64::from(b);
    let l = if big_endian {
        bytes.iter().fold(0, fold)
    } else {
        bytes.iter().rev().fold(0, fold)
    };
    if !signed {
        return l as f64;
    }
    let shift = (bytes.len() as i64 * 8 - 1) & 63;
    let mask = u64::MAX << shift;
    let l = if l & mask != 0 { l | mask } else { l };
    l as i64 as f64
}

/// Results of `struct.unpack`, kept in a Lua table: thousands of strings would otherwise each
/// pin a slot of mlua's reference stack.
struct Results {
    table: Table,
    count: usize,
}

impl Results {
    fn push(&mut self, value: Value) -> Result<(), Fail> {
        self.count += 1;
        self.table.raw_set(self.count, value)?;
        Ok(())
    }

    fn pop(&mut self) -> Result<Value, Fail> {
        let value = self.table.raw_get(self.count)?;
        self.table.raw_set(self.count, Value::Nil)?;
        self.count -= 1;
        Ok(value)
    }
}

/// `struct.unpack(fmt, data [, pos])`: the values, then the position after them.
fn unpack(lua: &Lua, args: &Args) -> Outcome {
    let mut format = Format::new(lua, args)?;
    let data = args.check_string(lua, 2)?;
    let data = data.as_bytes();
    let len = data.len();
    let mut pos = args.opt_integer(lua, 3, 1)? as u64 as usize;
    if pos == 0 {
        return Err(Fail::arg(3, "offset must be 1 or greater"));
    }
    pos -= 1;
    let mut header = Header::default();
    let mut results = Results {
        table: lua.create_table()?,
        count: 0,
    };
    while let Some(option) = format.next_option() {
        let mut size = format.size(option)?;
        pos = pos.wrapping_add(padding(pos, header, option, size));
        if size > len || pos > len - size {
            return Err(too_short());
        }
        if !stack_fits(args.count() + results.count, 2) {
            return Err(stack_overflow("too many results"));
        }
        let value = match option {
            b'c' | b's' => {
                let (text, used) = unpack_string(lua, option, &data, pos, size, &mut results)?;
                size = used;
                Some(text)
            }
            b'x' => None,
            b'f' | b'd' => Some(unpack_number(option, &data[pos..], size, header)),
            _ if is_integer_option(option) => {
                Some(unpack_number(option, &data[pos..], size, header))
            }
            _ => {
                format.control(option, &mut header)?;
                None
            }
        };
        if let Some(value) = value {
            results.push(value)?;
        }
        pos = pos.wrapping_add(size);
    }
    let next = (pos.wrapping_add(1) as i64) as f64;
    results.push(Value::Number(next))?;
    Ok(Ret::List(results.table, results.count))
}

fn too_short() -> Fail {
    Fail::arg(2, "data string too short")
}

/// An integer, `f` or `d` option's value from the `size` bytes at the start of `bytes`.
fn unpack_number(option: u8, bytes: &[u8], size: usize, header: Header) -> Value {
    let n = match option {
        b'f' => f64::from(f32::from_le_bytes(ordered::<4>(bytes, header.big_endian))),
        b'd' => f64::from_le_bytes(ordered::<8>(bytes, header.big_endian)),
        _ => get_integer(
            &bytes[..size],
            header.big_endian,
            option.is_ascii_lowercase(),
        ),
    };
    Value::Number(n)
}

/// A `c` or `s` option's string at `pos` and the bytes it uses (with `s`'s NUL).
fn unpack_string(
    lua: &Lua,
    option: u8,
    data: &[u8],
    pos: usize,
    size: usize,
    results: &mut Results,
) -> Result<(Value, usize), Fail> {
    let (start, end, used) = if option == b's' {
        let Some(len) = data[pos..].iter().position(|&b| b == 0) else {
            return Err(Fail::error("unfinished string in data"));
        };
        (pos, pos + len, len + 1)
    } else {
        let size = if size == 0 {
            let size = previous_size(lua, results)?;
            if size > data.len() || pos > data.len() - size {
                return Err(too_short());
            }
            size
        } else {
            size
        };
        (pos, pos + size, size)
    };
    Ok((Value::String(lua.create_string(&data[start..end])?), used))
}

/// The length `c0` reads: the previous result, which must be a number (or a string Lua reads as
/// one), and which it replaces.
fn previous_size(lua: &Lua, results: &mut Results) -> Result<usize, Fail> {
    let needs = || Fail::error("format 'c0' needs a previous size");
    if results.count == 0 {
        return Err(needs());
    }
    let previous: Value = results.table.raw_get(results.count)?;
    let size = match &previous {
        Value::String(s) => lua.coerce_number(Value::String(s.clone()))?,
        other => number(other),
    };
    let size = size.ok_or_else(needs)?;
    results.pop()?;
    Ok(trunc_u64(size) as usize)
}

/// `N` bytes in little-endian order from bytes in the format's order.
fn ordered<const N: usize>(bytes: &[u8], big_endian: bool) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[..N]);
    if big_endian {
        out.reverse();
    }
    out
}

/// `struct.size(fmt)`: the size of a format without variable-length items.
fn size(lua: &Lua, args: &Args) -> Outcome {
    let mut format = Format::new(lua, args)?;
    let mut header = Header::default();
    let mut pos: usize = 0;
    while let Some(option) = format.next_option() {
        let size = format.size(option)?;
        pos = pos.wrapping_add(padding(pos, header, option, size));
        if option == b's' {
            return Err(Fail::arg(1, "option 's' has no fixed size"));
        }
        if option == b'c' && size == 0 {
            return Err(Fail::arg(1, "option 'c0' has no fixed size"));
        }
        if !option.is_ascii_alphanumeric() {
            format.control(option, &mut header)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(Ret::One(Value::Number(pos as i64 as f64)))
}

#[cfg(test)]
mod tests {

    fn eval(code: &str) -> String {
        super::super::eval_for_test(code)
    }

    #[test]
    fn packs_with_alignment_and_order() {
        assert_eq!(
            eval("return hex(struct.pack('>!4 b i', 1, 2))"),
            "0100000000000002"
        );
        assert_eq!(eval("return hex(struct.pack('<h', -2))"), "feff");
        assert_eq!(
            eval("return hex(struct.pack('<i9', -1))"),
            "ffffffffffffffff00"
        );
        assert_eq!(
            eval("return hex(struct.pack('<L', 2^64))"),
            "0000000000000000"
        );
        assert_eq!(
            eval("return hex(struct.pack('<L', 0/0))"),
            "0000000000000080"
        );
        assert_eq!(
            eval("return hex(struct.pack('s c0 c2', 'ab', 'cd', 'efg'))"),
            "61620063646566"
        );
        assert_eq!(eval("return hex(struct.pack('>f', 1.5))"), "3fc00000");
    }

    #[test]
    fn unpacks() {
        assert_eq!(
            eval("return table.concat({struct.unpack('<i16', string.rep('\\255', 16))}, ',')"),
            "-1,17"
        );
        assert_eq!(
            eval("return table.concat({struct.unpack('b c0 s', '\\3abcxy\\0', 1)}, ',')"),
            "abc,xy,8"
        );
        assert_eq!(
            eval("return tostring(select(1, struct.unpack('', 'x', -1)))"),
            "-1"
        );
        assert_eq!(eval("return tostring(struct.size('!8 b d c3 z'))"), "19");
    }

    #[test]
    fn errors() {
        let cases = [
            (
                "struct.pack('c5', 'ab')",
                "bad argument #3 to 'pack' (string too short)",
            ),
            (
                "struct.pack('i33', 1)",
                "integral size 33 is larger than limit of 32",
            ),
            ("struct.pack('!3')", "alignment 3 is not a power of 2"),
            (
                "struct.pack('q')",
                "bad argument #1 to 'pack' (invalid format option 'q')",
            ),
            (
                "struct.unpack('i', 'abc')",
                "bad argument #2 to 'unpack' (data string too short)",
            ),
            (
                "struct.unpack('c0', 'abc')",
                "format 'c0' needs a previous size",
            ),
            ("struct.unpack('s', 'abc')", "unfinished string in data"),
            (
                "struct.unpack('b', 'a', 0)",
                "bad argument #3 to 'unpack' (offset must be 1 or greater)",
            ),
            (
                "struct.size('s')",
                "bad argument #1 to 'size' (option 's' has no fixed size)",
            ),
            ("struct.pack('i99999999999')", "integral size overflow"),
        ];
        for (call, expected) in cases {
            let code = format!("return select(2, pcall(function() local x = {call} end))");
            assert_eq!(eval(&code), format!("t:1: {expected}"), "{call}");
        }
    }
}
