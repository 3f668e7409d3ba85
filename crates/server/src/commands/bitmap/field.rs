//! BITFIELD and BITFIELD_RO: signed (`i1` … `i64`) and unsigned (`u1` … `u63`) integers at any
//! bit offset of a string, as Redis's `bitfieldGeneric` reads, writes and increments them.
//!
//! A field is big-endian across bytes, its most significant bit the string's bit `offset` (bit
//! `7 - offset % 8` of byte `offset / 8`, as for SETBIT). The example of `bitops.c`, 23 as a
//! 5-bit unsigned at offset 7 of zeros:
//!
//! ```text
//!  SET u5 7 23  →  00000001 01110000      (23 = 10111: bit 7 of the string, then bits 8–11)
//! ```
//!
//! `#n` as an offset means the n-th field of the type's width (`n × bits`).
//!
//! The arguments are all parsed before anything runs, in order, each error replied as Redis
//! words it. Then, when any operation writes, the string is grown (zero-filled) once to hold the
//! farthest bit written, and the operations run in order on its bytes in place
//! (`Shard::edit_string`); a read-only list only looks. OVERFLOW applies to the operations that
//! follow it: WRAP (modular, the default), SAT (clamp to the type's range) or FAIL (write
//! nothing and reply nil). Overflow is judged as Redis's `checkSignedBitfieldOverflow` and
//! `checkUnsignedBitfieldOverflow` judge it, in the same wrapping 64-bit arithmetic.
//!
//! Keyspace events: `setbit` when an operation changed a value (or the key was created or
//! grown and an operation ran), after `new` when the command created the key; `keymiss` when a
//! read-only list finds no key.

use super::{SYNTAX, bit_offset, read_bytes};
use crate::command::Ctx;
use crate::commands::args::{is, parse_i64};
use crate::commands::keys::created;
use crate::notify::class;

const TYPE_ERROR: &str = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Get,
    Set,
    IncrBy,
}

/// What a write does when the value does not fit the type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// A field's type: signedness and width in bits (1–64 signed, 1–63 unsigned).
#[derive(Clone, Copy, Debug)]
struct Type {
    signed: bool,
    bits: u32,
}

/// One parsed operation.
#[derive(Clone, Copy, Debug)]
struct Op {
    kind: Kind,
    ty: Type,
    offset: u64,
    /// SET's value or INCRBY's increment.
    value: i64,
    overflow: Overflow,
}

pub fn bitfield(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    run(ctx, args, false);
}

pub fn bitfield_ro(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    run(ctx, args, true);
}

fn run(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], readonly_command: bool) {
    let Some(ops) = parse(ctx, &args[2..]) else {
        return;
    };
    let highest_written = ops
        .iter()
        .filter(|op| op.kind != Kind::Get)
        .map(|op| op.offset + u64::from(op.ty.bits) - 1)
        .max();
    match highest_written {
        None => read_only(ctx, args[1], &ops),
        Some(_) if readonly_command => {
            ctx.error("ERR BITFIELD_RO only supports the GET subcommand");
        }
        Some(highest) => write(ctx, args[1], &ops, highest),
    }
}

/// Parses the operations in order, replying the first error as Redis does.
fn parse(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Option<Vec<Op>> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 0;
    while j < args.len() {
        let left = args.len() - j - 1;
        let kind = match args[j] {
            a if is(a, "get") && left >= 2 => Kind::Get,
            a if is(a, "set") && left >= 3 => Kind::Set,
            a if is(a, "incrby") && left >= 3 => Kind::IncrBy,
            a if is(a, "overflow") && left >= 1 => {
                overflow = match args[j + 1] {
                    w if is(w, "wrap") => Overflow::Wrap,
                    w if is(w, "sat") => Overflow::Sat,
                    w if is(w, "fail") => Overflow::Fail,
                    _ => {
                        ctx.error("ERR Invalid OVERFLOW type specified");
                        return None;
                    }
                };
                j += 2;
                continue;
            }
            _ => {
                ctx.error(SYNTAX);
                return None;
            }
        };
        let Some(ty) = field_type(args[j + 1]) else {
            ctx.error(TYPE_ERROR);
            return None;
        };
        let offset = bit_offset(ctx, args[j + 2], Some(ty.bits))?;
        let value = if kind == Kind::Get {
            0
        } else if let Some(v) = parse_i64(args[j + 3]) {
            v
        } else {
            ctx.not_integer();
            return None;
        };
        ops.push(Op {
            kind,
            ty,
            offset,
            value,
            overflow,
        });
        j += if kind == Kind::Get { 3 } else { 4 };
    }
    Some(ops)
}

/// `i<bits>` or `u<bits>`, as Redis's `getBitfieldTypeFromArgument` reads them.
fn field_type(arg: &[u8]) -> Option<Type> {
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return None,
    };
    let bits = parse_i64(&arg[1..])?;
    let max = if signed { 64 } else { 63 };
    (1..=max).contains(&bits).then_some(Type {
        signed,
        bits: bits as u32,
    })
}

/// Only GETs: the key is read (missing reads as zeros), never created.
fn read_only(ctx: &mut Ctx<'_, '_>, key: &[u8], ops: &[Op]) {
    let values = read_bytes(ctx, key, |bytes| {
        ops.iter().map(|op| get(bytes, op)).collect::<Vec<_>>()
    });
    let values = match values {
        Ok(Some(values)) => values,
        Ok(None) => ops.iter().map(|op| get(&[], op)).collect(),
        Err(()) => return,
    };
    ctx.out.array_len(values.len());
    for v in values {
        ctx.out.integer(v);
    }
}

/// At least one write: the string grows to hold bit `highest`, then every operation runs.
fn write(ctx: &mut Ctx<'_, '_>, key: &[u8], ops: &[Op], highest: u64) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let min_len = (highest >> 3) as usize + 1;
    let edited = ctx
        .shard(key)
        .edit_string(db, key, now, (min_len, true), |bytes, before| {
            let grew = before != Some(bytes.len());
            let mut changes = 0;
            let replies: Vec<Option<i64>> = ops
                .iter()
                .map(|op| {
                    let (reply, changed) = apply(bytes, op);
                    let wrote = op.kind != Kind::Get && reply.is_some();
                    changes += usize::from(wrote && (grew || changed));
                    reply
                })
                .collect();
            (replies, changes, before.is_none())
        });
    let (replies, changes, is_new) = match edited {
        Ok(done) => done.expect("edit_string creates a missing key"),
        Err(e) => return ctx.store_error(e),
    };
    if is_new {
        created(ctx, key);
    }
    ctx.out.array_len(replies.len());
    for reply in replies {
        match reply {
            Some(v) => ctx.out.integer(v),
            None => ctx.out.null(),
        }
    }
    if changes > 0 {
        // Redis signals the key once and adds one change per operation that wrote
        // (`server.dirty += changes`).
        ctx.touch(db, key);
        ctx.count_changes((changes - 1) as u32);
        ctx.notify(class::STRING, "setbit", key);
    }
}

/// Runs one operation on `bytes` (long enough for every write): its reply (`None`: a FAIL
/// overflow, nothing written) and whether it changed the stored value.
fn apply(bytes: &mut [u8], op: &Op) -> (Option<i64>, bool) {
    if op.kind == Kind::Get {
        return (Some(get(bytes, op)), false);
    }
    let (bits, offset) = (u64::from(op.ty.bits), op.offset);
    let old = read_field(bytes, offset, bits);
    let (new, reply, overflowed) = if op.ty.signed {
        signed_step(op, sign_extend(old, bits))
    } else {
        unsigned_step(op, old)
    };
    if overflowed && op.overflow == Overflow::Fail {
        return (None, false);
    }
    write_field(bytes, offset, bits, new);
    let field = u64::MAX >> (64 - bits);
    (Some(reply), (new ^ old) & field != 0)
}

/// A signed SET or INCRBY: the bits to store, the reply, and whether it overflowed.
fn signed_step(op: &Op, old: i64) -> (u64, i64, bool) {
    let bits = u64::from(op.ty.bits);
    if op.kind == Kind::IncrBy {
        let (overflow, limit) = signed_overflow(old, op.value, bits, op.overflow);
        let new = if overflow == 0 {
            old.wrapping_add(op.value)
        } else {
            limit
        };
        (new as u64, new, overflow != 0)
    } else {
        let (overflow, limit) = signed_overflow(op.value, 0, bits, op.overflow);
        let new = if overflow == 0 { op.value } else { limit };
        (new as u64, old, overflow != 0)
    }
}

/// An unsigned SET or INCRBY: the bits to store, the reply, and whether it overflowed.
fn unsigned_step(op: &Op, old: u64) -> (u64, i64, bool) {
    let bits = u64::from(op.ty.bits);
    if op.kind == Kind::IncrBy {
        let (overflow, limit) = unsigned_overflow(old, op.value, bits, op.overflow);
        let new = if overflow == 0 {
            old.wrapping_add(op.value as u64)
        } else {
            limit
        };
        (new, new as i64, overflow != 0)
    } else {
        let value = op.value as u64;
        let (overflow, limit) = unsigned_overflow(value, 0, bits, op.overflow);
        let new = if overflow == 0 { value } else { limit };
        (new, old as i64, overflow != 0)
    }
}

/// A GET: the field read from `bytes`, zero-padded past their end.
fn get(bytes: &[u8], op: &Op) -> i64 {
    // As Redis does, the (up to) nine bytes holding the field are copied zero-padded.
    let byte = (op.offset >> 3) as usize;
    let mut window = [0u8; 9];
    if byte < bytes.len() {
        let n = (bytes.len() - byte).min(9);
        window[..n].copy_from_slice(&bytes[byte..byte + n]);
    }
    let bits = u64::from(op.ty.bits);
    let value = read_field(&window, op.offset & 7, bits);
    if op.ty.signed {
        sign_extend(value, bits)
    } else {
        value as i64
    }
}

/// The `bits`-bit unsigned value at bit `offset` of `bytes` (`getUnsignedBitfield`).
fn read_field(bytes: &[u8], offset: u64, bits: u64) -> u64 {
    (offset..offset + bits).fold(0, |value, at| {
        let bit = (bytes[(at >> 3) as usize] >> (7 - (at & 7))) & 1;
        (value << 1) | u64::from(bit)
    })
}

/// Writes the low `bits` bits of `value` at bit `offset` of `bytes` (`setUnsignedBitfield`).
fn write_field(bytes: &mut [u8], offset: u64, bits: u64, value: u64) {
    for j in 0..bits {
        let bit = (value >> (bits - 1 - j)) & 1;
        let at = offset + j;
        let mask = 0x80u8 >> (at & 7);
        let byte = &mut bytes[(at >> 3) as usize];
        *byte = if bit == 1 {
            *byte | mask
        } else {
            *byte & !mask
        };
    }
}

/// Two's complement of a `bits`-bit field (`getSignedBitfield`).
fn sign_extend(value: u64, bits: u64) -> i64 {
    if bits < 64 && value & (1 << (bits - 1)) != 0 {
        (value | (u64::MAX << bits)) as i64
    } else {
        value as i64
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: 1 (overflow), -1 (underflow) or 0, and the value to
/// store instead under WRAP or SAT.
fn unsigned_overflow(value: u64, incr: i64, bits: u64, mode: Overflow) -> (i32, u64) {
    let max = (1u64 << bits) - 1;
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = value.wrapping_neg() as i64;
    let wrapped = value.wrapping_add(incr as u64) & !(u64::MAX << bits);
    if value > max || (incr > 0 && incr > max_incr) {
        (1, if mode == Overflow::Sat { max } else { wrapped })
    } else if incr < 0 && incr < min_incr {
        (-1, if mode == Overflow::Sat { 0 } else { wrapped })
    } else {
        (0, 0)
    }
}

/// Redis's `checkSignedBitfieldOverflow`, as `unsigned_overflow` for a signed field.
fn signed_overflow(value: i64, incr: i64, bits: u64, mode: Overflow) -> (i32, i64) {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let wrapped = || {
        let sum = (value as u64).wrapping_add(incr as u64);
        if bits == 64 {
            sum as i64
        } else if sum & (1 << (bits - 1)) != 0 {
            (sum | (u64::MAX << bits)) as i64
        } else {
            (sum & !(u64::MAX << bits)) as i64
        }
    };
    let full = bits == 64;
    if value > max || (!full && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr) {
        (
            1,
            if mode == Overflow::Sat {
                max
            } else {
                wrapped()
            },
        )
    } else if value < min
        || (!full && incr < min_incr)
        || (value < 0 && incr < 0 && incr < min_incr)
    {
        (
            -1,
            if mode == Overflow::Sat {
                min
            } else {
                wrapped()
            },
        )
    } else {
        (0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout example of `bitops.c`: 23 as a 5-bit unsigned at offset 7 of zeros.
    #[test]
    fn fields_are_big_endian_across_bytes() {
        let mut bytes = [0u8; 2];
        write_field(&mut bytes, 7, 5, 23);
        assert_eq!(bytes, [0b0000_0001, 0b0111_0000]);
        assert_eq!(read_field(&bytes, 7, 5), 23);
        assert_eq!(sign_extend(read_field(&bytes, 7, 5), 5), -9);
    }

    /// Overflow results as Redis's `tests/unit/bitfield.tcl` expects them.
    #[test]
    fn overflow_wraps_saturates_and_fails_as_redis() {
        assert_eq!(unsigned_overflow(255, 1, 8, Overflow::Wrap), (1, 0));
        assert_eq!(unsigned_overflow(255, 1, 8, Overflow::Sat), (1, 255));
        assert_eq!(unsigned_overflow(0, -1, 8, Overflow::Wrap), (-1, 255));
        assert_eq!(unsigned_overflow(0, -1, 8, Overflow::Sat), (-1, 0));
        assert_eq!(unsigned_overflow(u64::MAX, 0, 8, Overflow::Wrap), (1, 255));
        assert_eq!(signed_overflow(127, 1, 8, Overflow::Wrap), (1, -128));
        assert_eq!(signed_overflow(127, 1, 8, Overflow::Sat), (1, 127));
        assert_eq!(signed_overflow(-128, -1, 8, Overflow::Wrap), (-1, 127));
        assert_eq!(signed_overflow(-128, -1, 8, Overflow::Sat), (-1, -128));
        assert_eq!(
            signed_overflow(i64::MAX, 1, 64, Overflow::Wrap),
            (1, i64::MIN)
        );
        assert_eq!(
            signed_overflow(i64::MIN, -1, 64, Overflow::Sat),
            (-1, i64::MIN)
        );
        assert_eq!(signed_overflow(5, 10, 64, Overflow::Wrap), (0, 0));
    }
}
