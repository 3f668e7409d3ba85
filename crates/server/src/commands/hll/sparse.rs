//! The sparse HyperLogLog registers: a run-length code of the 16384 registers, after the
//! 16-byte header, made of three opcodes (Redis's `hyperloglog.c`, byte for byte):
//!
//! ```text
//!  ZERO   00xxxxxx            xxxxxx + 1 registers (1 … 64) at 0
//!  XZERO  01xxxxxx yyyyyyyy   xxxxxxyyyyyyyy + 1 registers (1 … 16384) at 0
//!  VAL    1vvvvvxx            xx + 1 registers (1 … 4) at vvvvv + 1 (1 … 32)
//!
//!  empty HLL:  XZERO:16384                      (2 bytes: 0x7f 0xff)
//!  registers 1000 = 2, 1020 = 3, 1021 = 3:
//!              XZERO:1000 VAL:2,1 ZERO:19 VAL:3,2 XZERO:15362
//! ```
//!
//! Invariant of a valid sparse HLL: the opcodes' runs add up to exactly 16384 registers
//! (`Σ run == REGISTERS`). A register above 32 cannot be written sparse, and a write that would
//! make the string longer than `hll-sparse-max-bytes` is not made sparse either: both promote
//! the HLL to the dense form (`dense.rs`).
//!
//! The strings come from clients (SET, RESTORE), so nothing here trusts them: every walk is
//! bounded by the string's length and stops at the first run past register 16383 (corrupt, as
//! Redis 7.0.15 with the CVE-2025-32023 fix says). Where an XZERO's second byte lies past the end,
//! it is the byte Redis reads there: its sds string's NUL terminator, 0, in a stored string, and
//! during a rewrite whatever Redis's writes left there (`Rewrite`).

use super::dense;
use super::repr::{Corrupt, DENSE, DENSE_BYTES, ENCODING_AT, HEADER_BYTES, REGISTERS, invalidate};

/// The largest register value a VAL opcode holds.
pub const VAL_VALUE_MAX: u8 = 32;
const VAL_LEN_MAX: usize = 4;
const ZERO_LEN_MAX: usize = 64;
const VAL_BIT: u8 = 0x80;
const XZERO_BIT: u8 = 0x40;
/// How many opcodes, from the one before the write, Redis tries to merge after a write.
const MERGE_SCAN_MAX: usize = 5;

/// One opcode: the run it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Zero(usize),
    XZero(usize),
    Val { value: u8, len: usize },
}

impl Op {
    /// How many registers the opcode covers.
    pub fn len(self) -> usize {
        match self {
            Op::Zero(len) | Op::XZero(len) | Op::Val { len, .. } => len,
        }
    }

    /// The registers' value.
    pub fn value(self) -> u8 {
        match self {
            Op::Val { value, .. } => value,
            Op::Zero(_) | Op::XZero(_) => 0,
        }
    }

    /// The opcode's length in bytes.
    fn bytes(self) -> usize {
        if matches!(self, Op::XZero(_)) { 2 } else { 1 }
    }
}

fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}

fn is_xzero(b: u8) -> bool {
    b & 0xc0 == XZERO_BIT
}

fn is_val(b: u8) -> bool {
    b & VAL_BIT != 0
}

fn val_of(b: u8) -> (u8, usize) {
    (((b >> 2) & 0x1f) + 1, usize::from(b & 3) + 1)
}

/// The VAL byte for `len` (1 … 4) registers at `value` (1 … 32).
fn val_byte(value: u8, len: usize) -> u8 {
    debug_assert!((1..=VAL_VALUE_MAX).contains(&value) && (1..=VAL_LEN_MAX).contains(&len));
    ((value - 1) << 2 | (len as u8 - 1)) | VAL_BIT
}

/// The opcode at `at` (< `bytes.len()`); an XZERO cut by the end reads `past_end` as its
/// second byte (see `Rewrite`).
fn op_at(bytes: &[u8], at: usize, past_end: u8) -> Op {
    let b = bytes[at];
    if is_zero(b) {
        Op::Zero(usize::from(b & 0x3f) + 1)
    } else if is_xzero(b) {
        let low = bytes.get(at + 1).copied().unwrap_or(past_end);
        Op::XZero((usize::from(b & 0x3f) << 8 | usize::from(low)) + 1)
    } else {
        let (value, len) = val_of(b);
        Op::Val { value, len }
    }
}

/// The opcodes of a sparse HLL as stored (header included in `hll`), with their offsets.
pub fn ops(hll: &[u8]) -> impl Iterator<Item = (usize, Op)> + '_ {
    ops_with(hll, 0)
}

/// `ops` with the byte past the end (`Rewrite::past_end`).
fn ops_with(hll: &[u8], past_end: u8) -> impl Iterator<Item = (usize, Op)> + '_ {
    let mut at = HEADER_BYTES;
    std::iter::from_fn(move || {
        if at >= hll.len() {
            return None;
        }
        let op = op_at(hll, at, past_end);
        let here = at;
        at += op.bytes();
        Some((here, op))
    })
}

/// The bytes of an empty sparse HLL (Redis's `createHLLObject`): the header with a valid cached
/// cardinality of 0, then XZERO:16384.
pub fn new() -> Vec<u8> {
    let mut hll = Vec::with_capacity(HEADER_BYTES + 2);
    hll.resize(HEADER_BYTES, 0);
    hll[..4].copy_from_slice(b"HYLL");
    hll[ENCODING_AT] = super::repr::SPARSE;
    push_zeros(&mut hll, REGISTERS);
    hll
}

/// Appends a run of `len` (1 … 16384) zero registers: ZERO up to 64, XZERO above, as Redis
/// splits a run.
fn push_zeros(out: &mut Vec<u8>, len: usize) {
    debug_assert!((1..=REGISTERS).contains(&len));
    if len > ZERO_LEN_MAX {
        let l = len - 1;
        out.push((l >> 8) as u8 | XZERO_BIT);
        out.push((l & 0xff) as u8);
    } else {
        out.push(len as u8 - 1);
    }
}

/// Calls `f(first, len, value)` for each run in order, then says whether the runs cover exactly
/// the 16384 registers. A run that would pass register 16383 makes the HLL corrupt at once, as
/// in Redis 7.0.15 with the CVE-2025-32023 fix (the oracle's build): before it, `int` run
/// sums of a long enough string wrapped and wrote out of bounds. `f` only sees runs within
/// the registers.
fn walk(hll: &[u8], past_end: u8, mut f: impl FnMut(usize, usize, u8)) -> Result<(), Corrupt> {
    let mut index = 0;
    for (_, op) in ops_with(hll, past_end) {
        let len = op.len();
        if index + len > REGISTERS {
            return Err(Corrupt);
        }
        f(index, len, op.value());
        index += len;
    }
    if index == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// Adds each register's value to `histogram` (`hllSparseRegHisto`); `Err` when the runs do not
/// cover exactly 16384 registers.
pub fn histogram(hll: &[u8], histogram: &mut [u32; 64]) -> Result<(), Corrupt> {
    walk(hll, 0, |_, len, value| {
        histogram[usize::from(value)] += len as u32;
    })
}

/// Raises `max[i]` to register `i` for every register (`hllMerge`'s sparse case). On `Err`,
/// `max` may have been partly raised (the command then fails, as Redis's does).
pub fn merge_into(hll: &[u8], max: &mut [u8; REGISTERS]) -> Result<(), Corrupt> {
    walk(hll, 0, |first, len, value| {
        for m in &mut max[first..first + len] {
            *m = (*m).max(value);
        }
    })
}

/// The dense form of a sparse HLL (`hllSparseToDense`): the header copied (cached cardinality
/// included) with the dense encoding, the registers written out.
pub fn to_dense(hll: &[u8]) -> Result<Vec<u8>, Corrupt> {
    to_dense_with(hll, 0)
}

/// `to_dense` with the byte past the end (`Rewrite::past_end`).
fn to_dense_with(hll: &[u8], past_end: u8) -> Result<Vec<u8>, Corrupt> {
    let mut out = vec![0u8; DENSE_BYTES];
    out[..HEADER_BYTES].copy_from_slice(&hll[..HEADER_BYTES]);
    out[ENCODING_AT] = DENSE;
    let registers = &mut out[HEADER_BYTES..];
    walk(hll, past_end, |first, len, value| {
        if value != 0 {
            for i in first..first + len {
                dense::set(registers, i, value);
            }
        }
    })?;
    Ok(out)
}

/// PFDEBUG DECODE's text: `z:<len>` for ZERO, `Z:<len>` for XZERO, `v:<value>,<len>` for VAL,
/// separated by spaces. No validation: every opcode is shown.
pub fn decode(hll: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut out = Vec::new();
    for (_, op) in ops(hll) {
        // Writing to a Vec cannot fail.
        let _ = match op {
            Op::Zero(len) => write!(out, "z:{len} "),
            Op::XZero(len) => write!(out, "Z:{len} "),
            Op::Val { value, len } => write!(out, "v:{value},{len} "),
        };
    }
    out.pop();
    out
}

/// Where `locate` found the opcode covering a register.
struct Found {
    /// The opcode's offset.
    at: usize,
    /// Its first register.
    first: usize,
    op: Op,
    /// The previous opcode's offset, if any.
    prev: Option<usize>,
}

/// The opcode covering register `index` (Step 1 of `hllSparseSet`); `None` when the opcodes
/// end before it.
fn locate(hll: &[u8], past_end: u8, index: usize) -> Option<Found> {
    let mut first = 0;
    let mut prev = None;
    for (at, op) in ops_with(hll, past_end) {
        if index < first + op.len() {
            return Some(Found {
                at,
                first,
                op,
                prev,
            });
        }
        prev = Some(at);
        first += op.len();
    }
    None
}

/// An HLL being rewritten by one command (PFADD, PFMERGE, PFSELFTEST): its bytes, and the byte
/// Redis's string holds just past them. That byte is the sds NUL terminator, read as the
/// second byte of an XZERO cut by the end, until `set` rewrites such a cut XZERO: Redis then
/// copies its new opcodes one byte past the string's new end, and the next write reads that
/// byte there. Tracking it keeps a command's writes Redis's byte for byte; a stored string
/// starts every command with 0 there (Redis's may keep the stale byte from one to the next).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rewrite {
    pub bytes: Vec<u8>,
    pub past_end: u8,
}

impl Rewrite {
    pub fn new(bytes: Vec<u8>) -> Rewrite {
        Rewrite { bytes, past_end: 0 }
    }
}

/// `hllSparseSet`: raises register `index` to `count` if lower, rewriting the opcodes in place
/// as Redis does (so the bytes are Redis's); true when the register changed, with the cached
/// cardinality invalidated. Promotes the HLL to dense when `count` is above 32 or the string
/// would grow past `max_bytes` (the cache is then left as it was; the caller invalidates it).
/// `Err` when the opcodes do not reach `index`, or a promotion finds the HLL corrupt; the HLL
/// is then unchanged.
pub fn set(hll: &mut Rewrite, index: usize, count: u8, max_bytes: u64) -> Result<bool, Corrupt> {
    if count > VAL_VALUE_MAX {
        return promote(hll, index, count);
    }
    let found = locate(&hll.bytes, hll.past_end, index).ok_or(Corrupt)?;
    let Found {
        at,
        first,
        op,
        prev,
    } = found;
    match op {
        Op::Val { value, .. } if value >= count => return Ok(false),
        Op::Val { len: 1, .. } | Op::Zero(1) => {
            hll.bytes[at] = val_byte(count, 1);
            merge_adjacent(hll, prev);
            return Ok(true);
        }
        _ => {}
    }
    let (seq, seq_len) = split(op, index - first, count);
    let old_len = op.bytes();
    if seq_len > old_len && (hll.bytes.len() + seq_len - old_len) as u64 > max_bytes {
        return promote(hll, index, count);
    }
    // An XZERO cut by the end (`at + 2 == len + 1`) grows the string by `seq_len - 2`: the last
    // byte of its replacement lands past the new end, where the next write reads it.
    let bytes = &mut hll.bytes;
    let cut = at + old_len > bytes.len();
    let new_len = bytes.len() + seq_len - old_len;
    let end = (at + old_len).min(bytes.len());
    bytes.splice(at..end, seq[..seq_len].iter().copied());
    bytes.truncate(new_len);
    hll.past_end = if cut { seq[seq_len - 1] } else { 0 };
    merge_adjacent(hll, prev);
    Ok(true)
}

/// The opcodes that replace `op` when its register at `offset` (from its first) becomes
/// `count` (Step 2, case D, of `hllSparseSet`): at most XZERO VAL XZERO, 5 bytes.
fn split(op: Op, offset: usize, count: u8) -> ([u8; 5], usize) {
    let mut seq = Vec::with_capacity(5);
    let after = op.len() - 1 - offset;
    match op {
        Op::Zero(_) | Op::XZero(_) => {
            if offset != 0 {
                push_zeros(&mut seq, offset);
            }
            seq.push(val_byte(count, 1));
            if after != 0 {
                push_zeros(&mut seq, after);
            }
        }
        Op::Val { value, .. } => {
            if offset != 0 {
                seq.push(val_byte(value, offset));
            }
            seq.push(val_byte(count, 1));
            if after != 0 {
                seq.push(val_byte(value, after));
            }
        }
    }
    let mut out = [0u8; 5];
    out[..seq.len()].copy_from_slice(&seq);
    (out, seq.len())
}

/// Step 4 of `hllSparseSet`: from the opcode before the write (or the first), up to five
/// opcodes on, merges each VAL with the next when they hold the same value and fit one VAL;
/// then invalidates the cached cardinality.
fn merge_adjacent(rewrite: &mut Rewrite, prev: Option<usize>) {
    let hll = &mut rewrite.bytes;
    let mut p = prev.unwrap_or(HEADER_BYTES);
    let mut scan = MERGE_SCAN_MAX;
    while p < hll.len() && scan > 0 {
        scan -= 1;
        let b = hll[p];
        if is_xzero(b) {
            p += 2;
            continue;
        }
        if is_zero(b) {
            p += 1;
            continue;
        }
        if p + 1 < hll.len() && is_val(hll[p + 1]) {
            let ((v1, l1), (v2, l2)) = (val_of(b), val_of(hll[p + 1]));
            if v1 == v2 && l1 + l2 <= VAL_LEN_MAX {
                hll[p + 1] = val_byte(v1, l1 + l2);
                hll.remove(p);
                // Redis moves the byte past the end down with the rest, then writes its NUL
                // over it.
                rewrite.past_end = 0;
                // Stay on the merged opcode: it may merge with the next one too.
                continue;
            }
        }
        p += 1;
    }
    invalidate(hll);
}

/// The promotion to dense, then the write (`hllSparseSet`'s `promote:`). Redis asserts the
/// dense write changes the register; it always does, since the sparse walk that found the
/// register lower is the one `to_dense` replays.
fn promote(hll: &mut Rewrite, index: usize, count: u8) -> Result<bool, Corrupt> {
    hll.bytes = to_dense_with(&hll.bytes, hll.past_end)?;
    hll.past_end = 0;
    let changed = dense::raise(&mut hll.bytes[HEADER_BYTES..], index, count);
    debug_assert!(changed);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_ops(ops: &[u8]) -> Vec<u8> {
        let mut hll = new();
        hll.truncate(HEADER_BYTES);
        hll.extend_from_slice(ops);
        hll
    }

    fn set_at(hll: &mut Vec<u8>, index: usize, count: u8, max_bytes: u64) -> Result<bool, Corrupt> {
        let mut rewrite = Rewrite::new(std::mem::take(hll));
        let changed = set(&mut rewrite, index, count, max_bytes);
        *hll = rewrite.bytes;
        changed
    }

    /// Redis's own example: registers 1000 = 2, 1020 = 3, 1021 = 3.
    #[test]
    fn writes_redis_example() {
        let mut hll = new();
        assert_eq!(decode(&hll), b"Z:16384");
        for (index, count) in [(1000, 2), (1020, 3), (1021, 3)] {
            assert_eq!(set_at(&mut hll, index, count, 3000), Ok(true));
        }
        assert_eq!(decode(&hll), b"Z:1000 v:2,1 z:19 v:3,2 Z:15362");
        assert_eq!(set_at(&mut hll, 1021, 3, 3000), Ok(false));
        let mut h = [0u32; 64];
        histogram(&hll, &mut h).unwrap();
        assert_eq!((h[0], h[2], h[3]), (16381, 1, 2));
    }

    /// The walks refuse runs that do not add up to exactly 16384, trailing opcodes included.
    #[test]
    fn validation_matches_redis() {
        let short = with_ops(&[0x7f, 0xfe]); // XZERO:16383
        assert!(histogram(&short, &mut [0; 64]).is_err());
        assert!(to_dense(&short).is_err());
        let trailing_val = with_ops(&[0x7f, 0xff, 0x80]);
        assert!(histogram(&trailing_val, &mut [0; 64]).is_err());
        assert!(to_dense(&trailing_val).is_err());
        assert!(merge_into(&trailing_val, &mut [0; REGISTERS]).is_err());
        let trailing_zero = with_ops(&[0x7f, 0xff, 0x00]);
        assert!(to_dense(&trailing_zero).is_err());
        // A cut XZERO reads its missing byte as 0: 0x7f alone is XZERO:16129.
        let cut = with_ops(&[0x7f]);
        assert_eq!(decode(&cut), b"Z:16129");
        assert!(set_at(&mut cut.clone(), 16200, 1, 3000).is_err());
    }

    /// A cut XZERO written to loses the last byte of its replacement past the end, where the
    /// next write reads it, as in Redis.
    #[test]
    fn cut_xzero_is_rewritten_as_redis_does() {
        let mut hll = Rewrite::new(with_ops(&[0x7f]));
        assert_eq!(set(&mut hll, 100, 1, 3000), Ok(true));
        // XZERO:100 VAL:1,1 XZERO:16028, its last byte (0x9b) past the end.
        assert_eq!(&hll.bytes[HEADER_BYTES..], &[0x40, 99, 0x80, 0x7e]);
        assert_eq!(hll.past_end, 0x9b);
        // The tail reads XZERO:16028 again, so a write at 16000 splits it into XZERO:15899
        // VAL:2,1 XZERO:128, whose last byte lands past the end in turn.
        assert_eq!(set(&mut hll, 16_000, 2, 3000), Ok(true));
        assert_eq!(
            &hll.bytes[HEADER_BYTES..],
            &[0x40, 99, 0x80, 0x7e, 0x1a, 0x84, 0x40]
        );
        assert_eq!(hll.past_end, 0x7f);
    }

    #[test]
    fn promotes_past_max_bytes_or_value_32() {
        let mut hll = new();
        assert_eq!(set_at(&mut hll, 5, 33, 3000), Ok(true));
        assert_eq!(hll.len(), DENSE_BYTES);
        assert_eq!(dense::get(&hll[HEADER_BYTES..], 5), 33);
        let mut hll = new();
        assert_eq!(set_at(&mut hll, 5, 1, 18), Ok(true));
        assert_eq!(hll.len(), DENSE_BYTES);
    }
}
