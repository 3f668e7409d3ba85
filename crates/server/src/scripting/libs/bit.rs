//! `bit`: Lua BitOp 1.0.2 (`lua_bit.c`), bitwise operations on 32-bit integers held in Lua's
//! doubles.
//!
//! An argument becomes 32 bits the way BitOp does it on a double build: add 2^52 + 2^51 and keep
//! the low 32 bits of the sum's IEEE representation. For |x| < 2^51 that is x rounded to the
//! nearest integer (ties to even), modulo 2^32; beyond, it is whatever the sum's low bits are,
//! and this module computes the same sum, so the results agree everywhere (NaN and infinities
//! become 0). Results are signed: `(double)(int32_t)b`.
//!
//! A value that is not a number, nor a string Lua reads as one, is an error — unless its
//! conversion happens to be 0, which is what BitOp checks (`b == 0 && !lua_isnumber`): the
//! conversion of a non-number is always 0, so the check is exact. `band`, `bor` and `bxor` read
//! their arguments from the last to the second after the first, so the error names the last bad
//! argument, as in C.

use mlua::{Lua, Table, Value};

use super::{Args, Fail, Outcome, Ret, function};

/// 2^52 + 2^51: adding it leaves the integer part of a small double in the low mantissa bits.
const MAGIC: f64 = 6_755_399_441_055_744.0;

/// An operation on one argument's bits.
type Unary = fn(u32) -> u32;
/// An operation on two arguments' bits (or bits and a shift count).
type Binary = fn(u32, u32) -> u32;

/// The `bit` table.
pub(crate) fn module(lua: &Lua) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    let unary: [(&str, Unary); 3] = [
        ("tobit", |b| b),
        ("bnot", |b| !b),
        ("bswap", u32::swap_bytes),
    ];
    for (name, op) in unary {
        table.set(
            name,
            function(lua, move |lua, args| unary_op(lua, args, op))?,
        )?;
    }
    let folds: [(&str, Binary); 3] = [
        ("band", |a, b| a & b),
        ("bor", |a, b| a | b),
        ("bxor", |a, b| a ^ b),
    ];
    for (name, op) in folds {
        table.set(name, function(lua, move |lua, args| fold(lua, args, op))?)?;
    }
    let shifts: [(&str, Binary); 5] = [
        ("lshift", |b, n| b << n),
        ("rshift", |b, n| b >> n),
        ("arshift", |b, n| ((b as i32) >> n) as u32),
        ("rol", u32::rotate_left),
        ("ror", u32::rotate_right),
    ];
    for (name, op) in shifts {
        table.set(name, function(lua, move |lua, args| shift(lua, args, op))?)?;
    }
    table.set("tohex", function(lua, tohex)?)?;
    Ok(table)
}

/// BitOp's `barg`: argument `n` as 32 bits.
fn barg(lua: &Lua, args: &Args, n: usize) -> Result<u32, Fail> {
    let number = args.to_number(lua, n)?;
    let bits = to_bits(number.unwrap_or(0.0));
    if bits == 0 && number.is_none() {
        return Err(args.type_error(n, "number"));
    }
    Ok(bits)
}

/// The 32 bits BitOp takes from a double.
pub(crate) fn to_bits(x: f64) -> u32 {
    (x + MAGIC).to_bits() as u32
}

/// BitOp's `BRET`: the bits as a signed 32-bit number.
fn bret(bits: u32) -> Ret {
    Ret::One(Value::Number(f64::from(bits as i32)))
}

fn unary_op(lua: &Lua, args: &Args, op: Unary) -> Outcome {
    Ok(bret(op(barg(lua, args, 1)?)))
}

fn fold(lua: &Lua, args: &Args, op: Binary) -> Outcome {
    let mut bits = barg(lua, args, 1)?;
    for n in (2..=args.count()).rev() {
        bits = op(bits, barg(lua, args, n)?);
    }
    Ok(bret(bits))
}

fn shift(lua: &Lua, args: &Args, op: Binary) -> Outcome {
    let bits = barg(lua, args, 1)?;
    let count = barg(lua, args, 2)? & 31;
    Ok(bret(op(bits, count)))
}

/// `bit.tohex(x [, n])`: the low `|n|` hex digits (at most 8, default 8), upper case for a
/// negative `n`. For n = -2^31, whose negation overflows, gcc's code prints 8 upper-case digits.
fn tohex(lua: &Lua, args: &Args) -> Outcome {
    let bits = barg(lua, args, 1)?;
    let wanted = match args.get(2) {
        None => 8,
        Some(_) => barg(lua, args, 2)? as i32,
    };
    let upper = wanted < 0;
    let mut digits_count = wanted.wrapping_abs();
    if !(0..=8).contains(&digits_count) {
        digits_count = 8;
    }
    let digits: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let count = digits_count as usize;
    let mut text = vec![0u8; count];
    for (i, byte) in text.iter_mut().enumerate() {
        let shift = 4 * (count - 1 - i);
        *byte = digits[((bits >> shift) & 15) as usize];
    }
    Ok(Ret::One(Value::String(lua.create_string(text)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(code: &str) -> String {
        super::super::eval_for_test(code)
    }

    #[test]
    fn conversion_rounds_and_wraps() {
        assert_eq!(to_bits(1.5), 2);
        assert_eq!(to_bits(2.5), 2);
        assert_eq!(to_bits(-1.0), u32::MAX);
        assert_eq!(to_bits(4_294_967_296.0 + 5.0), 5);
        assert_eq!(to_bits(f64::INFINITY), 0);
        assert_eq!(to_bits(f64::NAN), 0);
    }

    #[test]
    fn operations() {
        assert_eq!(eval("return tostring(bit.tobit(2^31))"), "-2147483648");
        assert_eq!(eval("return tostring(bit.bnot(0))"), "-1");
        assert_eq!(eval("return tostring(bit.band(0xff, 0x0f, 0x3))"), "3");
        assert_eq!(eval("return tostring(bit.lshift(1, 35))"), "8");
        assert_eq!(eval("return tostring(bit.arshift(-256, 4))"), "-16");
        assert_eq!(eval("return tostring(bit.rshift(-1, 28))"), "15");
        assert_eq!(eval("return tostring(bit.rol(0x80000001, 1))"), "3");
        assert_eq!(eval("return tostring(bit.bswap(0x12345678))"), "2018915346");
        assert_eq!(eval("return bit.tohex(-1)"), "ffffffff");
        assert_eq!(eval("return bit.tohex(0xabcdef, -3)"), "DEF");
        assert_eq!(eval("return bit.tohex(0xabcdef, 2^31)"), "00ABCDEF");
        assert_eq!(eval("return bit.tohex(1, 0)"), "");
    }

    #[test]
    fn errors_name_the_argument() {
        assert_eq!(
            eval("return select(2, pcall(bit.band, 1, 'x', {}))"),
            "bad argument #3 to '?' (number expected, got table)"
        );
        assert_eq!(
            eval("return select(2, pcall(bit.tobit))"),
            "bad argument #1 to '?' (number expected, got no value)"
        );
        assert_eq!(eval("return tostring(bit.tobit(' 0x10 '))"), "16");
    }
}
