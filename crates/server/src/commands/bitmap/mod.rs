//! Bitmap commands (Redis's `bitops.c`): SETBIT, GETBIT, BITCOUNT, BITPOS and BITOP here;
//! BITFIELD and BITFIELD_RO in `field.rs`; the byte scans (population count, first set or clear
//! bit) in `scan.rs`.
//!
//! A bitmap is a string. Bit `n` is bit `7 - n % 8` of byte `n / 8`:
//!
//! ```text
//!  SETBIT k 0 1, SETBIT k 9 1  →  byte 0: 1000_0000   byte 1: 0100_0000   (GET k = "\x80\x40")
//! ```
//!
//! Reads see an integer-encoded string as its decimal digits, as Redis's
//! `getObjectReadOnlyString` does. Writes go through the store's `Shard::edit_string`, which
//! turns the string raw (as Redis's `dbUnshareStringValue`) and grows it zero-filled in place by
//! the map's capacity steps, so a bitmap grown one SETBIT at a time costs amortized O(1) per
//! byte rather than a copy per growth. A bit offset must satisfy `offset / 8 <
//! proto-max-bulk-len` (512 MB by default: bits 0 … 2³² − 1), as Redis's
//! `getBitOffsetFromArgument` checks before anything is allocated.
//!
//! Keyspace events, as `bitops.c` sends them: `setbit` when SETBIT or BITFIELD changed the
//! string (a new key, a longer string or a different bit), after `new` when the write created
//! the key; BITOP's `set` (after `new`), or `del` when its result is empty and the destination
//! existed; `keymiss` for each read lookup that misses.

mod field;
pub mod scan;

use super::args::{NOT_INTEGER, is, parse_i64};
use super::keys::{created, expired_so_far, keymiss, looked_up};
use crate::command::{Ctx, DENYOOM, FAST, K1, Keys, READONLY, Spec, WRITE, table};
use crate::notify::class;
use field::{bitfield, bitfield_ro};
use store::{Str, Ttl};

const SYNTAX: &str = "ERR syntax error";
const OFFSET_ERROR: &str = "ERR bit offset is not an integer or out of range";
const BIT_ERROR: &str = "ERR bit is not an integer or out of range";

/// BITOP's keys: the destination at 2, then every source.
const BITOP_KEYS: Keys = Keys::Range {
    first: 2,
    last: -1,
    step: 1,
};

pub static COMMANDS: &[Spec] = table! {
    // name         arity, flags,           keys,       member, handler
    "setbit",       4,     WRITE | DENYOOM, K1,         0,      setbit;
    "getbit",       3,     READONLY | FAST, K1,         0,      getbit;
    "bitcount",     -2,    READONLY,        K1,         0,      bitcount;
    "bitpos",       -3,    READONLY,        K1,         0,      bitpos;
    "bitop",        -4,    WRITE | DENYOOM, BITOP_KEYS, 0,      bitop;
    "bitfield",     -2,    WRITE | DENYOOM, K1,         0,      bitfield;
    "bitfield_ro",  -2,    READONLY | FAST, K1,         0,      bitfield_ro;
};

/// Redis's `getBitOffsetFromArgument`: the bit offset `arg` names, replying the error and
/// returning `None` when it is not an integer, is negative or lies past `proto-max-bulk-len`
/// bytes. With `hash_bits` (BITFIELD), `#n` names the n-th field of that width: `n × bits`,
/// multiplied as Redis multiplies (wrapping; a product past the limit is refused).
fn bit_offset(ctx: &mut Ctx<'_, '_>, arg: &[u8], hash_bits: Option<u32>) -> Option<u64> {
    let (digits, scale) = match (arg.first(), hash_bits) {
        (Some(b'#'), Some(bits)) => (&arg[1..], i64::from(bits)),
        _ => (arg, 1),
    };
    let max_bytes = ctx.server.config.read().proto_max_bulk_len;
    match parse_i64(digits).map(|n| n.wrapping_mul(scale)) {
        Some(n) if n >= 0 && ((n >> 3) as u64) < max_bytes => Some(n as u64),
        _ => {
            ctx.error(OFFSET_ERROR);
            None
        }
    }
}

/// Calls `f` with the bytes of the string at `key` (an integer as its decimal digits):
/// `Ok(None)` when the key is missing (and a `keymiss` event is sent), `Err(())` after replying
/// WRONGTYPE. Nothing is copied.
fn read_bytes<R>(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    f: impl FnOnce(&[u8]) -> R,
) -> Result<Option<R>, ()> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let found = ctx.shard(key).get_string(db, key, now, |s| match s {
        Str::Bytes(bytes) => f(bytes),
        Str::Int(i) => {
            let mut digits = [0u8; 20];
            let mut cursor = std::io::Cursor::new(&mut digits[..]);
            std::io::Write::write_fmt(&mut cursor, format_args!("{i}")).expect("20 digits fit");
            let len = cursor.position() as usize;
            f(&digits[..len])
        }
    });
    match found {
        Ok(None) => {
            keymiss(ctx, key);
            Ok(None)
        }
        Ok(Some(r)) => Ok(Some(r)),
        Err(e) => {
            ctx.store_error(e);
            Err(())
        }
    }
}

/// Replies an integer, or the error text.
fn reply(ctx: &mut Ctx<'_, '_>, result: Result<i64, &str>) {
    match result {
        Ok(n) => ctx.out.integer(n),
        Err(text) => ctx.error(text),
    }
}

pub fn setbit(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let key = args[1];
    let Some(offset) = bit_offset(ctx, args[2], None) else {
        return;
    };
    let on = match parse_i64(args[3]) {
        Some(v) if v & !1 == 0 => v == 1,
        _ => return ctx.error(BIT_ERROR),
    };
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (byte, mask) = ((offset >> 3) as usize, 0x80u8 >> (offset & 7));
    let edited = ctx
        .shard(key)
        .edit_string(db, key, now, (byte + 1, true), |bytes, before| {
            let was = bytes[byte] & mask != 0;
            let grew = before != Some(bytes.len());
            if grew || was != on {
                bytes[byte] = if on {
                    bytes[byte] | mask
                } else {
                    bytes[byte] & !mask
                };
            }
            (was, grew || was != on, before.is_none())
        });
    let (was, changed, is_new) = match edited {
        Ok(done) => done.expect("edit_string creates a missing key"),
        Err(e) => return ctx.store_error(e),
    };
    if is_new {
        created(ctx, key);
    }
    if changed {
        ctx.touch(db, key);
        ctx.notify(class::STRING, "setbit", key);
    }
    ctx.out.integer(i64::from(was));
}

pub fn getbit(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(offset) = bit_offset(ctx, args[2], None) else {
        return;
    };
    let (byte, mask) = ((offset >> 3) as usize, 0x80u8 >> (offset & 7));
    if let Ok(bit) = read_bytes(ctx, args[1], |b| {
        b.get(byte).is_some_and(|&v| v & mask != 0)
    }) {
        ctx.out.integer(i64::from(bit.unwrap_or(false)));
    }
}

/// A BITCOUNT or BITPOS range resolved as Redis resolves it: inclusive byte indices, and the
/// masks of the bits outside a BIT range in its first and last byte (0 when none).
#[derive(Clone, Copy, Debug)]
struct Span {
    start: i64,
    end: i64,
    first_outside: u8,
    last_outside: u8,
}

/// Resolves `start`/`end` (negative from the end, clamped) over a string of `len` bytes, in
/// bits when `bits`; a BIT range that is not empty becomes the bytes holding it plus masks.
fn span(len: i64, (start, end): (i64, i64), bits: bool) -> Span {
    let total = if bits { len << 3 } else { len };
    let start = if start < 0 { total + start } else { start }.max(0);
    let end = if end < 0 { total + end } else { end }
        .max(0)
        .min(total - 1);
    if bits && start <= end {
        return Span {
            start: start >> 3,
            end: end >> 3,
            first_outside: !((1u16 << (8 - (start & 7))) - 1) as u8,
            last_outside: ((1u16 << (7 - (end & 7))) - 1) as u8,
        };
    }
    Span {
        start,
        end,
        first_outside: 0,
        last_outside: 0,
    }
}

/// BIT or BYTE (case-insensitive): whether the range is in bits.
fn unit(arg: &[u8]) -> Result<bool, &'static str> {
    if is(arg, "bit") {
        Ok(true)
    } else if is(arg, "byte") {
        Ok(false)
    } else {
        Err(SYNTAX)
    }
}

pub fn bitcount(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    // Redis looks the key up before it reads the range: a missing key counts 0 whatever follows.
    match read_bytes(ctx, args[1], |bytes| count_bits(bytes, &args[2..])) {
        Ok(Some(result)) => reply(ctx, result),
        Ok(None) => ctx.out.integer(0),
        Err(()) => {}
    }
}

/// BITCOUNT of `bytes` over `range` (nothing, or start end [BIT|BYTE]).
fn count_bits(bytes: &[u8], range: &[&[u8]]) -> Result<i64, &'static str> {
    let len = bytes.len() as i64;
    let span = match range {
        [] => span(len, (0, len - 1), false),
        [start, end, unit_arg @ ..] if unit_arg.len() <= 1 => {
            let start = parse_i64(start).ok_or(NOT_INTEGER)?;
            let end = parse_i64(end).ok_or(NOT_INTEGER)?;
            if start < 0 && end < 0 && start > end {
                return Ok(0);
            }
            let bits = unit_arg.first().map_or(Ok(false), |u| unit(u))?;
            span(len, (start, end), bits)
        }
        _ => return Err(SYNTAX),
    };
    if span.start > span.end {
        return Ok(0);
    }
    let (start, end) = (span.start as usize, span.end as usize);
    let outside = [
        bytes[start] & span.first_outside,
        bytes[end] & span.last_outside,
    ];
    Ok((scan::popcount(&bytes[start..=end]) - scan::popcount(&outside)) as i64)
}

pub fn bitpos(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let bit = match parse_i64(args[2]) {
        Some(b @ (0 | 1)) => b == 1,
        Some(_) => return ctx.error("ERR The bit argument must be 1 or 0."),
        None => return ctx.not_integer(),
    };
    match read_bytes(ctx, args[1], |bytes| find_bit(bytes, bit, &args[3..])) {
        Ok(Some(result)) => reply(ctx, result),
        // A missing key reads as endless clear bits.
        Ok(None) => ctx.out.integer(if bit { -1 } else { 0 }),
        Err(()) => {}
    }
}

/// BITPOS of `bit` in `bytes` over `range` (nothing, or start [end [BIT|BYTE]]), as Redis's
/// `bitposCommand` computes it, masks and all: -1 for none, and for a clear bit searched to the
/// end of the string without an explicit end, the first bit past it.
fn find_bit(bytes: &[u8], bit: bool, range: &[&[u8]]) -> Result<i64, &'static str> {
    let len = bytes.len() as i64;
    if range.len() > 3 {
        return Err(SYNTAX);
    }
    let (span, end_given) = match range {
        [] => (span(len, (0, len - 1), false), false),
        [start, rest @ ..] => {
            let start = parse_i64(start).ok_or(NOT_INTEGER)?;
            let bits = rest.get(1).map_or(Ok(false), |u| unit(u))?;
            let end = match rest.first() {
                Some(end) => parse_i64(end).ok_or(NOT_INTEGER)?,
                None if bits => (len << 3) + 7,
                None => len - 1,
            };
            (span(len, (start, end), bits), !rest.is_empty())
        }
    };
    if span.start > span.end {
        return Ok(-1);
    }
    let (start, bytes_left, pos) = scan_span(bytes, bit, span);
    if end_given && !bit && pos == Some(bytes_left << 3) {
        return Ok(-1);
    }
    Ok(pos.map_or(-1, |p| p as i64 + ((start as i64) << 3)))
}

/// The scan of `find_bit` over a non-empty span: the first byte, masked, when the range starts
/// inside it; the whole bytes; the last byte, masked. Returns where the scan that answered
/// started, how many bytes it had left, and the position it found in them.
fn scan_span(bytes: &[u8], bit: bool, span: Span) -> (usize, u64, Option<u64>) {
    let masked = |byte: u8, outside: u8| if bit { byte & !outside } else { byte | outside };
    let (mut start, end) = (span.start as usize, span.end as usize);
    let mut left = (end - start + 1) as u64;
    if span.first_outside != 0 {
        let mut first = masked(bytes[start], span.first_outside);
        if span.last_outside != 0 && left == 1 {
            first = masked(first, span.last_outside);
        }
        let pos = scan::first_bit(&[first], bit);
        if left == 1 || pos.is_some_and(|p| p != 8) {
            return (start, left, pos);
        }
        start += 1;
        left -= 1;
    }
    let whole = left - u64::from(span.last_outside != 0);
    if whole > 0 {
        let pos = scan::first_bit(&bytes[start..start + whole as usize], bit);
        if left == whole || pos.is_some_and(|p| p != whole << 3) {
            return (start, left, pos);
        }
        start += whole as usize;
        left -= whole;
    }
    let pos = scan::first_bit(&[masked(bytes[end], span.last_outside)], bit);
    (start, left, pos)
}

/// BITOP's operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

pub fn bitop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let op = match args[1] {
        a if is(a, "and") => BitOp::And,
        a if is(a, "or") => BitOp::Or,
        a if is(a, "xor") => BitOp::Xor,
        a if is(a, "not") => BitOp::Not,
        _ => return ctx.syntax_error(),
    };
    if op == BitOp::Not && args.len() != 4 {
        return ctx.error("ERR BITOP NOT must be called with a single source key.");
    }
    let mut sources = Vec::with_capacity(args.len() - 3);
    for &key in &args[3..] {
        match read_bytes(ctx, key, <[u8]>::to_vec) {
            Ok(found) => sources.push(found.unwrap_or_default()),
            Err(()) => return,
        }
        expired_so_far(ctx);
    }
    let result = combine(op, &sources);
    store_result(ctx, args[2], &result);
    ctx.out.integer(result.len() as i64);
}

/// BITOP's result: as long as the longest source, the shorter ones read as zero-padded.
fn combine(op: BitOp, sources: &[Vec<u8>]) -> Vec<u8> {
    let len = sources.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = sources[0].clone();
    out.resize(len, 0);
    match op {
        BitOp::Not => out.iter_mut().for_each(|b| *b = !*b),
        BitOp::And => {
            for source in &sources[1..] {
                out.iter_mut()
                    .zip(source.iter().chain(std::iter::repeat(&0)))
                    .for_each(|(o, s)| *o &= s);
            }
        }
        BitOp::Or | BitOp::Xor => {
            for source in &sources[1..] {
                let pairs = out.iter_mut().zip(source);
                if op == BitOp::Or {
                    pairs.for_each(|(o, s)| *o |= s);
                } else {
                    pairs.for_each(|(o, s)| *o ^= s);
                }
            }
        }
    }
    out
}

/// Stores BITOP's result at `dest` as Redis's `setKey` does (raw, without a TTL), or deletes
/// `dest` when the result is empty.
fn store_result(ctx: &mut Ctx<'_, '_>, dest: &[u8], result: &[u8]) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    if result.is_empty() {
        if ctx.shard(dest).remove(db, dest, now) {
            ctx.touch(db, dest);
            ctx.notify(class::GENERIC, "del", dest);
        }
        return;
    }
    let existed = looked_up(ctx, db, dest);
    if let Err(e) = ctx
        .shard(dest)
        .put_string_raw(db, dest, result, Ttl::Clear, now)
    {
        return ctx.store_error(e);
    }
    ctx.touch(db, dest);
    if existed == Some(false) {
        created(ctx, dest);
    }
    ctx.notify(class::STRING, "set", dest);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<Vec<u8>> {
        text.split(' ')
            .filter(|a| !a.is_empty())
            .map(|a| a.as_bytes().to_vec())
            .collect()
    }

    fn count(bytes: &[u8], range: &str) -> Result<i64, &'static str> {
        let owned = args(range);
        let range: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        count_bits(bytes, &range)
    }

    fn pos(bytes: &[u8], bit: bool, range: &str) -> Result<i64, &'static str> {
        let owned = args(range);
        let range: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        find_bit(bytes, bit, &range)
    }

    /// Cases from Redis's `tests/unit/bitops.tcl` and the documentation's examples.
    #[test]
    fn counts_and_positions_match_redis_examples() {
        assert_eq!(count(b"foobar", ""), Ok(26));
        assert_eq!(count(b"foobar", "0 0"), Ok(4));
        assert_eq!(count(b"foobar", "1 1"), Ok(6));
        assert_eq!(count(b"foobar", "1 1 BYTE"), Ok(6));
        assert_eq!(count(b"foobar", "5 30 BIT"), Ok(17));
        assert_eq!(count(b"foobar", "-1 -2"), Ok(0));
        assert_eq!(count(b"foobar", "-1 -2 nonsense"), Ok(0));
        assert_eq!(count(b"foobar", "0 1 nonsense"), Err(SYNTAX));
        assert_eq!(count(b"foobar", "0"), Err(SYNTAX));
        assert_eq!(count(b"", "0 -1"), Ok(0));
        assert_eq!(pos(b"\xff\xf0\x00", false, ""), Ok(12));
        assert_eq!(pos(b"\x00\xff\xf0", true, "0"), Ok(8));
        assert_eq!(pos(b"\x00\xff\xf0", true, "2"), Ok(16));
        assert_eq!(pos(b"\x00\x00\x00", true, ""), Ok(-1));
        assert_eq!(pos(b"\xff\xff\xff", false, ""), Ok(24));
        assert_eq!(pos(b"\xff\xff\xff", false, "0"), Ok(24));
        assert_eq!(pos(b"\xff\xff\xff", false, "0 -1"), Ok(-1));
        assert_eq!(pos(b"\x00\xff\xf0", true, "2 -1 BYTE"), Ok(16));
        assert_eq!(pos(b"\x00\xff\xf0", true, "7 15 BIT"), Ok(8));
        assert_eq!(pos(b"\x00\xff\xf0", true, "7 -3 BIT"), Ok(8));
        assert_eq!(pos(b"\xff\x00", false, "3 5 BIT"), Ok(-1));
        assert_eq!(pos(b"\xff\x00", false, "3 10 BIT"), Ok(8));
    }

    #[test]
    fn bitop_pads_short_sources_with_zeros() {
        let a = b"\xff\x0f\x01".to_vec();
        let b = b"\x0f".to_vec();
        assert_eq!(
            combine(BitOp::And, &[a.clone(), b.clone()]),
            b"\x0f\x00\x00"
        );
        assert_eq!(combine(BitOp::Or, &[b.clone(), a.clone()]), b"\xff\x0f\x01");
        assert_eq!(
            combine(BitOp::Xor, &[a.clone(), b.clone()]),
            b"\xf0\x0f\x01"
        );
        assert_eq!(combine(BitOp::Not, &[a]), b"\x00\xf0\xfe");
        assert_eq!(combine(BitOp::Or, &[Vec::new(), Vec::new()]), b"");
    }
}
