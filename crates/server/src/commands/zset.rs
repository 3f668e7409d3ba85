//! Sorted-set commands (Redis's `t_zset.c`): ZADD and its options, scores and ranks, ranges by
//! rank, score and lex (and their STORE and REV forms), pops, random members, the set algebra
//! (ZUNION/ZINTER/ZDIFF and their STORE forms, ZINTERCARD; plain sets count as score 1) and ZSCAN.
//!
//! The encodings are `store::types::zset`'s: a packed inline payload edited as an owned copy and
//! stored back, or the boxed index changed in place. Scores parse as Redis parses them (`strtod`
//! with its rules, see `parse_score` and `parse_bound`) and reply as `addReplyDouble` writes them
//! (`%.17g`; a RESP3 double). The blocking pops (BZPOPMIN, BZPOPMAX, BZMPOP) are built elsewhere on
//! `pop_for_blocked` and `reply_popped`.

// Scores are compared exactly, as Redis compares its doubles (-0 == 0, no epsilon).
#![allow(clippy::float_cmp)]

use super::is;
use crate::command::Ctx;
use crate::command::{DENYOOM, FAST, K1, K12, Keys, READONLY, Spec, WRITE, parse_i64, spec};
use resp::{Protocol, ReplyWriter};
use std::collections::{HashMap, HashSet};
use store::object::tag;
use store::types::zset::{self, ZMut, ZRef, packed};
use store::{Exported, Kind, Object, Portable, Shard, Slot, Ttl};

const NAN_ERROR: &str = "ERR resulting score is not a number (NaN)";
const NOT_FLOAT: &str = "ERR value is not a valid float";
const RANGE_NOT_FLOAT: &str = "ERR min or max is not a float";
const RANGE_NOT_LEX: &str = "ERR min or max not valid string range item";

// ---------------------------------------------------------------------------------------------
// Parsing

/// `s` read whole as `strtod` reads it (no leading space here): decimal, `inf`, `infinity`,
/// `nan` (any case, signed) and hex floats (`0x10`, `-0x1.8p3`). `None` unless all of `s` is used.
pub fn strtod_whole(s: &[u8]) -> Option<f64> {
    let (negative, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.len() > 2 && body[0] == b'0' && (body[1] | 0x20) == b'x' {
        let v = parse_hex(&body[2..])?;
        return Some(if negative { -v } else { v });
    }
    // Rust's float grammar is strtod's decimal and inf/nan grammar.
    std::str::from_utf8(s).ok()?.parse::<f64>().ok()
}

/// The digits of a hex float after `0x`: hex digits, an optional fraction, an optional binary
/// exponent `p[+-]digits`. Exact while the mantissa fits 53 bits (what clients send).
fn parse_hex(s: &[u8]) -> Option<f64> {
    let mut mantissa = 0f64;
    let mut exponent: i64 = 0;
    let mut digits = 0;
    let mut i = 0;
    let mut in_fraction = false;
    while i < s.len() {
        let b = s[i];
        if b == b'.' && !in_fraction {
            in_fraction = true;
        } else if let Some(d) = (b as char).to_digit(16) {
            mantissa = mantissa * 16.0 + f64::from(d);
            if in_fraction {
                exponent -= 4;
            }
            digits += 1;
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < s.len() {
        if s[i] | 0x20 != b'p' {
            return None;
        }
        let e: i64 = std::str::from_utf8(&s[i + 1..]).ok()?.parse().ok()?;
        if s[i + 1..].first() == Some(&b'+') && s.len() == i + 2 {
            return None;
        }
        exponent = exponent.saturating_add(e);
    }
    Some(mantissa * 2f64.powi(exponent.clamp(-2000, 2000) as i32))
}

pub fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

pub fn is_inf_literal(s: &[u8]) -> bool {
    let t = s
        .strip_prefix(b"+")
        .or_else(|| s.strip_prefix(b"-"))
        .unwrap_or(s);
    t.eq_ignore_ascii_case(b"inf") || t.eq_ignore_ascii_case(b"infinity")
}

/// Redis's `string2d`: the whole argument is a float, no leading space, no NaN, and no overflow
/// to infinity or underflow to zero.
pub fn parse_score(s: &[u8]) -> Option<f64> {
    if s.is_empty() || is_space(s[0]) {
        return None;
    }
    let v = strtod_whole(s)?;
    if v.is_nan() {
        return None;
    }
    if v.is_infinite() && !is_inf_literal(s) {
        return None;
    }
    if v == 0.0
        && s.iter()
            .take_while(|&&b| b != b'e' && b != b'E')
            .any(|b| (b'1'..=b'9').contains(b))
    {
        return None;
    }
    Some(v)
}

/// One bound of a score range (`zslParseRange`): `(` makes it exclusive; the rest goes through
/// plain `strtod`, which skips leading space, reads an empty string as 0 and lets overflow become
/// infinity; NaN is refused.
fn parse_bound(s: &[u8]) -> Option<(f64, bool)> {
    let (excl, rest) = match s.first() {
        Some(b'(') => (true, &s[1..]),
        _ => (false, s),
    };
    let start = rest
        .iter()
        .position(|&b| !is_space(b))
        .unwrap_or(rest.len());
    let rest = &rest[start..];
    let v = if rest.is_empty() && start == 0 {
        0.0
    } else {
        strtod_whole(rest)?
    };
    (!v.is_nan()).then_some((v, excl))
}

#[derive(Clone, Copy, Debug)]
struct ScoreRange {
    min: f64,
    max: f64,
    minex: bool,
    maxex: bool,
}

impl ScoreRange {
    fn parse(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
        let (min, minex) = parse_bound(min)?;
        let (max, maxex) = parse_bound(max)?;
        Some(ScoreRange {
            min,
            max,
            minex,
            maxex,
        })
    }

    fn gte_min(&self, s: f64) -> bool {
        if self.minex {
            s > self.min
        } else {
            s >= self.min
        }
    }

    fn lte_max(&self, s: f64) -> bool {
        if self.maxex {
            s < self.max
        } else {
            s <= self.max
        }
    }

    fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.minex || self.maxex))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LexBound<'a> {
    Min,
    Max,
    Incl(&'a [u8]),
    Excl(&'a [u8]),
}

impl<'a> LexBound<'a> {
    fn parse(s: &'a [u8]) -> Option<LexBound<'a>> {
        match s.first()? {
            b'+' if s.len() == 1 => Some(LexBound::Max),
            b'-' if s.len() == 1 => Some(LexBound::Min),
            b'(' => Some(LexBound::Excl(&s[1..])),
            b'[' => Some(LexBound::Incl(&s[1..])),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct LexRange<'a> {
    min: LexBound<'a>,
    max: LexBound<'a>,
}

impl LexRange<'_> {
    fn parse<'a>(min: &'a [u8], max: &'a [u8]) -> Option<LexRange<'a>> {
        Some(LexRange {
            min: LexBound::parse(min)?,
            max: LexBound::parse(max)?,
        })
    }

    fn gte_min(&self, m: &[u8]) -> bool {
        match self.min {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Incl(b) => m >= b,
            LexBound::Excl(b) => m > b,
        }
    }

    fn lte_max(&self, m: &[u8]) -> bool {
        match self.max {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Incl(b) => m <= b,
            LexBound::Excl(b) => m < b,
        }
    }

    /// `zslIsInLexRange`'s emptiness test (`sdscmplex` with the sentinels).
    fn is_empty(&self) -> bool {
        fn rank(b: LexBound<'_>) -> (u8, &[u8]) {
            match b {
                LexBound::Min => (0, b""),
                LexBound::Incl(s) | LexBound::Excl(s) => (1, s),
                LexBound::Max => (2, b""),
            }
        }
        let (a, b) = (rank(self.min), rank(self.max));
        let excl = matches!(self.min, LexBound::Excl(_)) || matches!(self.max, LexBound::Excl(_));
        a > b || (a == b && excl)
    }
}

/// `getLongFromObjectOrReply` with an optional message.
fn parse_long(ctx: &mut Ctx<'_, '_>, arg: &[u8], msg: Option<&str>) -> Option<i64> {
    let v = parse_i64(arg);
    if v.is_none() {
        match msg {
            Some(m) => ctx.error(m),
            None => ctx.not_integer(),
        }
    }
    v
}

/// `getRangeLongFromObjectOrReply`.
fn parse_long_in(
    ctx: &mut Ctx<'_, '_>,
    arg: &[u8],
    min: i64,
    max: i64,
    msg: Option<&str>,
) -> Option<i64> {
    let v = parse_long(ctx, arg, msg)?;
    if v < min || v > max {
        match msg {
            Some(m) => ctx.error(m),
            None => ctx.error(&format!(
                "ERR value is out of range, must be between {min} and {max}"
            )),
        }
        return None;
    }
    Some(v)
}

// ---------------------------------------------------------------------------------------------
// Access to a key's zset

/// Why a zset could not be read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fail {
    WrongType,
    Oom,
}

fn report(ctx: &mut Ctx<'_, '_>, fail: Fail) {
    match fail {
        Fail::WrongType => ctx.wrong_type(),
        Fail::Oom => ctx.oom(),
    }
}

/// Runs `f` on the zset at `key` (`Ok(None)` when missing, `Err` on another type).
fn with_zset<R>(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    now: u64,
    f: impl FnOnce(ZRef<'_>) -> R,
) -> Result<Option<R>, Fail> {
    shard.with_slot(db, key, now, |slot| match slot {
        Slot::Missing => Ok(None),
        Slot::Inline {
            tag: tag::ZSET_PACKED,
            bytes,
            ..
        } => Ok(Some(f(ZRef::Packed(bytes)))),
        Slot::Boxed {
            object: Object::ZSet(o),
            heap,
            ..
        } => Ok(Some(f(ZRef::Index(o, heap)))),
        _ => Err(Fail::WrongType),
    })
}

/// The zset at `key` read in the handler's shard, replying with the reply writer at hand;
/// replies WRONGTYPE itself and returns `None` then.
fn read<R>(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    f: impl FnOnce(ZRef<'_>, &mut ReplyWriter<'_>) -> R,
) -> Replied<R> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (shard, out) = ctx.shard_and_out(key);
    match with_zset(shard, db, key, now, |z| f(z, out)) {
        Ok(r) => Some(r),
        Err(fail) => {
            report(ctx, fail);
            None
        }
    }
}

/// `None` when an error was replied, else what `f` returned (`None` for a missing key).
type Replied<R> = Option<Option<R>>;

/// A zset's entries copied out: (member, score) in rank order.
type Entries = Vec<(Vec<u8>, f64)>;

enum Found<R> {
    Missing,
    Packed(Vec<u8>, Option<u64>),
    Done(R, bool),
    Wrong,
}

/// Runs `f` on the zset at `key` for writing (`Ok(None)` when missing and `!create`). A missing
/// key starts as an empty packed zset (stored only if `f` adds to it); an emptied one is deleted;
/// a packed one converts itself when an insert crosses a threshold (`ZMut::insert`).
fn with_zset_mut<R>(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    now: u64,
    create: bool,
    f: impl FnOnce(&mut ZMut<'_>) -> R,
) -> Result<Option<R>, Fail> {
    let mut f = Some(f);
    let found = shard.with_slot(db, key, now, |slot| match slot {
        Slot::Missing => Found::Missing,
        Slot::Inline {
            tag: tag::ZSET_PACKED,
            bytes,
            expire_at_ms,
            ..
        } => Found::Packed(bytes.to_vec(), expire_at_ms),
        Slot::Boxed {
            object: Object::ZSet(o),
            heap,
            ..
        } => {
            let mut z = ZMut::Index(o, heap);
            let r = (f.take().expect("called once"))(&mut z);
            Found::Done(r, z.is_empty())
        }
        _ => Found::Wrong,
    });
    let (bytes, expire_at_ms, existed) = match found {
        Found::Wrong => return Err(Fail::WrongType),
        Found::Done(r, empty) => {
            if empty {
                shard.remove(db, key, now);
            }
            return Ok(Some(r));
        }
        Found::Missing if !create => return Ok(None),
        Found::Missing => (packed::empty(), None, false),
        Found::Packed(b, e) => (b, e, true),
    };
    let f = f.take().expect("not called yet");
    let ttl = Ttl::of(expire_at_ms);
    let mut buf = bytes.clone();
    let mut z = ZMut::Packed(&mut buf, Some(shard.heap_mut()));
    let r = f(&mut z);
    let empty = z.is_empty();
    if let Some(obj) = z.into_owned() {
        if empty {
            obj.destroy(shard.heap_mut());
            if existed {
                shard.remove(db, key, now);
            }
        } else {
            shard
                .put_object(db, key, tag::ZSET_INDEX, Object::ZSet(obj), ttl, now)
                .map_err(|_| Fail::Oom)?;
        }
        return Ok(Some(r));
    }
    if buf == bytes {
        return Ok(Some(r));
    }
    if empty {
        if existed {
            shard.remove(db, key, now);
        }
        return Ok(Some(r));
    }
    shard
        .put(db, key, tag::ZSET_PACKED, &buf, ttl, now)
        .map_err(|_| Fail::Oom)?;
    Ok(Some(r))
}

/// Writes a score as `addReplyDouble` does (ZSCORE, ZPOPMIN, WITHSCORES…).
pub fn reply_score(out: &mut ReplyWriter<'_>, score: f64) {
    out.double(score);
}

// ---------------------------------------------------------------------------------------------
// ZADD, ZINCRBY, ZREM

const ZADD_NX: u8 = 1;
const ZADD_XX: u8 = 2;
const ZADD_GT: u8 = 4;
const ZADD_LT: u8 = 8;
const ZADD_CH: u8 = 16;
const ZADD_INCR: u8 = 32;

pub fn zadd(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    zadd_generic(ctx, args, 0);
}

pub fn zincrby(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    zadd_generic(ctx, args, ZADD_INCR);
}

fn zadd_generic(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], mut flags: u8) {
    let key = args[1];
    let mut at = 2;
    while at < args.len() {
        let opt = args[at];
        flags |= if is(opt, "nx") {
            ZADD_NX
        } else if is(opt, "xx") {
            ZADD_XX
        } else if is(opt, "ch") {
            ZADD_CH
        } else if is(opt, "incr") {
            ZADD_INCR
        } else if is(opt, "gt") {
            ZADD_GT
        } else if is(opt, "lt") {
            ZADD_LT
        } else {
            break;
        };
        at += 1;
    }
    let pairs = &args[at..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return ctx.syntax_error();
    }
    let (nx, xx, gt, lt) = (
        flags & ZADD_NX != 0,
        flags & ZADD_XX != 0,
        flags & ZADD_GT != 0,
        flags & ZADD_LT != 0,
    );
    let incr = flags & ZADD_INCR != 0;
    if nx && xx {
        return ctx.error("ERR XX and NX options at the same time are not compatible");
    }
    if (nx && (gt || lt)) || (gt && lt) {
        return ctx.error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if incr && pairs.len() > 2 {
        return ctx.error("ERR INCR option supports a single increment-element pair");
    }
    let mut scores: smallvec::SmallVec<[f64; 8]> = smallvec::SmallVec::new();
    for pair in pairs.chunks(2) {
        match parse_score(pair[0]) {
            Some(s) => scores.push(s),
            None => return ctx.error(NOT_FLOAT),
        }
    }
    let (db, now) = (ctx.db(), ctx.now_ms);
    let shard = ctx.shard(key);
    // (added, updated, processed, last score, NaN met)
    let result = with_zset_mut(shard, db, key, now, !xx, |z| {
        let (mut added, mut updated, mut processed) = (0i64, 0i64, 0i64);
        let mut last = 0.0;
        for (pair, &score) in pairs.chunks(2).zip(&scores) {
            let member = pair[1];
            if let Some(cur) = z.score(member) {
                if nx {
                    continue;
                }
                let new = if incr { cur + score } else { score };
                if new.is_nan() {
                    return Ok::<_, store::StoreError>((added, updated, processed, last, true));
                }
                if (lt && new >= cur) || (gt && new <= cur) {
                    continue;
                }
                if new != cur {
                    z.update(member, cur, new)?;
                    updated += 1;
                }
                processed += 1;
                last = new;
            } else {
                if xx {
                    continue;
                }
                z.insert(member, score)?;
                added += 1;
                processed += 1;
                last = score;
            }
        }
        Ok((added, updated, processed, last, false))
    });
    let (added, updated, processed, last, nan) = match result {
        Err(fail) => return report(ctx, fail),
        Ok(None) => (0, 0, 0, 0.0, false),
        Ok(Some(Err(_))) => return ctx.oom(),
        Ok(Some(Ok(r))) => r,
    };
    if added + updated > 0 {
        ctx.touch(db, key);
    }
    if added > 0 {
        ctx.signal_ready(db, key);
    }
    if nan {
        return ctx.error(NAN_ERROR);
    }
    if incr {
        if processed > 0 {
            reply_score(&mut ctx.out, last);
        } else {
            ctx.out.null();
        }
    } else {
        ctx.out.integer(if flags & ZADD_CH != 0 {
            added + updated
        } else {
            added
        });
    }
}

pub fn zrem(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let key = args[1];
    let (db, now) = (ctx.db(), ctx.now_ms);
    let result = with_zset_mut(ctx.shard(key), db, key, now, false, |z| {
        let mut deleted = 0;
        for m in &args[2..] {
            if z.remove(m).is_some() {
                deleted += 1;
            }
            if z.is_empty() {
                break;
            }
        }
        deleted
    });
    match result {
        Err(fail) => report(ctx, fail),
        Ok(n) => {
            let n = n.unwrap_or(0);
            if n > 0 {
                ctx.touch(db, key);
            }
            ctx.out.integer(n);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Single-member reads

pub fn zcard(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if let Some(n) = read(ctx, args[1], |z, _| z.len()) {
        ctx.out.integer(n.unwrap_or(0) as i64);
    }
}

pub fn zscore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let member = args[2];
    if let Some(done) = read(ctx, args[1], |z, out| match z.score(member) {
        Some(s) => {
            reply_score(out, s);
            true
        }
        None => false,
    }) && done != Some(true)
    {
        ctx.out.null();
    }
}

pub fn zmscore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let members = &args[2..];
    let Some(found) = read(ctx, args[1], |z, out| {
        out.array_len(members.len());
        for m in members {
            match z.score(m) {
                Some(s) => reply_score(out, s),
                None => out.null(),
            }
        }
    }) else {
        return;
    };
    if found.is_none() {
        ctx.out.array_len(members.len());
        for _ in members {
            ctx.out.null();
        }
    }
}

fn rank_generic(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], rev: bool) {
    let member = args[2];
    if let Some(r) = read(ctx, args[1], |z, _| {
        z.rank(member)
            .map(|(r, _)| if rev { z.len() - 1 - r } else { r })
    }) {
        match r.flatten() {
            Some(r) => ctx.out.integer(r as i64),
            None => ctx.out.null(),
        }
    }
}

pub fn zrank(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    rank_generic(ctx, args, false);
}

pub fn zrevrank(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    rank_generic(ctx, args, true);
}

// ---------------------------------------------------------------------------------------------
// Ranges

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RangeKind {
    Auto,
    Rank,
    Score,
    Lex,
}

/// What a range selects, resolved against one zset: ranks `start..start+count` walked upward or
/// (rev) downward from `start`.
#[derive(Clone, Copy, Debug)]
struct Span {
    start: usize,
    count: usize,
    rev: bool,
}

/// The parsed range of a ZRANGE-family command.
enum Range<'a> {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange<'a>),
}

/// Resolves `range` with LIMIT (`offset`, `limit` < 0: no limit) against `z`.
fn span(z: ZRef<'_>, range: &Range<'_>, rev: bool, offset: i64, limit: i64) -> Span {
    let len = z.len();
    let empty = Span {
        start: 0,
        count: 0,
        rev,
    };
    let (first, last) = match range {
        Range::Rank(start, end) => {
            let n = len as i64;
            let mut start = if *start < 0 { n + start } else { *start };
            let mut end = if *end < 0 { n + end } else { *end };
            start = start.max(0);
            if start > end || start >= n {
                return empty;
            }
            end = end.min(n - 1);
            let (a, b) = (start as usize, end as usize);
            return if rev {
                Span {
                    start: len - 1 - a,
                    count: b - a + 1,
                    rev,
                }
            } else {
                Span {
                    start: a,
                    count: b - a + 1,
                    rev,
                }
            };
        }
        Range::Score(r) => {
            if r.is_empty() {
                return empty;
            }
            // Ranks [first, last) in range.
            (
                z.count_before(|s, _| r.gte_min(s)),
                z.count_before(|s, _| !r.lte_max(s)),
            )
        }
        Range::Lex(r) => {
            if r.is_empty() {
                return empty;
            }
            (
                z.count_before(|_, m| r.gte_min(m)),
                z.count_before(|_, m| !r.lte_max(m)),
            )
        }
    };
    if last <= first || offset < 0 || (offset > 0 && offset as usize >= len) {
        return empty;
    }
    let total = last - first;
    let offset = offset as usize;
    if offset >= total {
        return empty;
    }
    let mut count = total - offset;
    if limit >= 0 {
        count = count.min(limit as usize);
    }
    if rev {
        Span {
            start: last - 1 - offset,
            count,
            rev,
        }
    } else {
        Span {
            start: first + offset,
            count,
            rev,
        }
    }
}

/// Writes `count` (member, score?) results in ZRANGE's shape.
fn reply_entries<'a>(
    out: &mut ReplyWriter<'_>,
    count: usize,
    withscores: bool,
    entries: impl Iterator<Item = (f64, &'a [u8])>,
) {
    let resp3 = out.protocol() == Protocol::Resp3;
    out.array_len(if withscores && !resp3 {
        count * 2
    } else {
        count
    });
    for (s, m) in entries.take(count) {
        if withscores && resp3 {
            out.array_len(2);
        }
        out.bulk(m);
        if withscores {
            reply_score(out, s);
        }
    }
}

/// ZRANGE and its relatives: `at` is the index of the source key; `store` is the destination
/// (ZRANGESTORE).
fn range_generic(
    ctx: &mut Ctx<'_, '_>,
    args: &[&[u8]],
    at: usize,
    store: Option<&[u8]>,
    mut kind: RangeKind,
    mut rev: Option<bool>,
) {
    let key = args[at];
    let (mut min_i, mut max_i) = (at + 1, at + 2);
    let mut withscores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut j = at + 3;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = args[j];
        if store.is_none() && is(a, "withscores") {
            withscores = true;
        } else if is(a, "limit") && left >= 2 {
            let Some(o) = parse_long(ctx, args[j + 1], None) else {
                return;
            };
            let Some(l) = parse_long(ctx, args[j + 2], None) else {
                return;
            };
            (offset, limit) = (o, l);
            j += 2;
        } else if rev.is_none() && is(a, "rev") {
            rev = Some(true);
        } else if kind == RangeKind::Auto && is(a, "bylex") {
            kind = RangeKind::Lex;
        } else if kind == RangeKind::Auto && is(a, "byscore") {
            kind = RangeKind::Score;
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    if kind == RangeKind::Auto {
        kind = RangeKind::Rank;
    }
    if limit != -1 && kind == RangeKind::Rank {
        return ctx.error(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if withscores && kind == RangeKind::Lex {
        return ctx.error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    if rev && kind != RangeKind::Rank {
        std::mem::swap(&mut min_i, &mut max_i);
    }
    let range = match kind {
        RangeKind::Score => match ScoreRange::parse(args[min_i], args[max_i]) {
            Some(r) => Range::Score(r),
            None => return ctx.error(RANGE_NOT_FLOAT),
        },
        RangeKind::Lex => match LexRange::parse(args[min_i], args[max_i]) {
            Some(r) => Range::Lex(r),
            None => return ctx.error(RANGE_NOT_LEX),
        },
        _ => {
            let Some(a) = parse_long(ctx, args[min_i], None) else {
                return;
            };
            let Some(b) = parse_long(ctx, args[max_i], None) else {
                return;
            };
            Range::Rank(a, b)
        }
    };
    if let Some(dst) = store {
        let got = {
            let (db, now) = (ctx.db(), ctx.now_ms);
            with_zset(ctx.shard(key), db, key, now, |z| {
                let sp = span(z, &range, rev, offset, limit);
                let mut v: Vec<(Vec<u8>, f64)> = z
                    .iter(sp.start, sp.rev)
                    .take(sp.count)
                    .map(|(s, m)| (m.to_vec(), s))
                    .collect();
                // Redis builds the destination by adding the results in this order to a listpack
                // (unless a rank range already knows it is too long), converting it when an add
                // crosses a threshold; the scores added before that lose their -0.
                let listpack_first = !matches!(range, Range::Rank(..)) || v.len() <= 128;
                if listpack_first {
                    for (i, (m, s)) in v.iter_mut().enumerate() {
                        if i + 1 > zset::PACKED_ENTRIES_MAX || m.len() > zset::PACKED_VALUE_MAX {
                            break;
                        }
                        if *s == 0.0 {
                            *s = 0.0;
                        }
                    }
                }
                v.sort_by(zset::order);
                v
            })
        };
        match got {
            Err(fail) => report(ctx, fail),
            Ok(v) => store_result(ctx, dst, &v.unwrap_or_default()),
        }
        return;
    }
    if let Some(found) = read(ctx, key, |z, out| {
        let sp = span(z, &range, rev, offset, limit);
        reply_entries(out, sp.count, withscores, z.iter(sp.start, sp.rev));
    }) && found.is_none()
    {
        ctx.out.array_len(0);
    }
}

/// Stores a computed result (rank order) at `dst` and replies its size; an empty result deletes
/// `dst`.
fn store_result(ctx: &mut Ctx<'_, '_>, dst: &[u8], entries: &[(Vec<u8>, f64)]) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let shard = ctx.shard(dst);
    if entries.is_empty() {
        if shard.remove(db, dst, now) {
            ctx.touch(db, dst);
        }
        ctx.out.integer(0);
        return;
    }
    if zset::store_entries(shard, db, dst, entries, Ttl::Clear, now).is_err() {
        return ctx.oom();
    }
    ctx.touch(db, dst);
    ctx.signal_ready(db, dst);
    ctx.out.integer(entries.len() as i64);
}

pub fn zrange(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    range_generic(ctx, args, 1, None, RangeKind::Auto, None);
}

pub fn zrangestore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    range_generic(ctx, args, 2, Some(args[1]), RangeKind::Auto, None);
}

pub fn zrevrange(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    range_generic(ctx, args, 1, None, RangeKind::Rank, Some(true));
}

pub fn zrangebyscore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    range_generic(ctx, args, 1, None, RangeKind::Score, Some(false));
}

pub fn zrevrangebyscore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    range_generic(ctx, args, 1, None, RangeKind::Score, Some(true));
}

pub fn zrangebylex(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    range_generic(ctx, args, 1, None, RangeKind::Lex, Some(false));
}

pub fn zrevrangebylex(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    range_generic(ctx, args, 1, None, RangeKind::Lex, Some(true));
}

pub fn zcount(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(r) = ScoreRange::parse(args[2], args[3]) else {
        return ctx.error(RANGE_NOT_FLOAT);
    };
    let range = Range::Score(r);
    if let Some(n) = read(ctx, args[1], |z, _| span(z, &range, false, 0, -1).count) {
        ctx.out.integer(n.unwrap_or(0) as i64);
    }
}

pub fn zlexcount(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(r) = LexRange::parse(args[2], args[3]) else {
        return ctx.error(RANGE_NOT_LEX);
    };
    let range = Range::Lex(r);
    if let Some(n) = read(ctx, args[1], |z, _| span(z, &range, false, 0, -1).count) {
        ctx.out.integer(n.unwrap_or(0) as i64);
    }
}

fn remrange(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], range: &Range<'_>) {
    let key = args[1];
    let (db, now) = (ctx.db(), ctx.now_ms);
    let result = with_zset_mut(ctx.shard(key), db, key, now, false, |z| {
        let sp = span(z.view(), range, false, 0, -1);
        if sp.count == 0 {
            return 0;
        }
        z.remove_ranks(sp.start, sp.start + sp.count - 1)
    });
    match result {
        Err(fail) => report(ctx, fail),
        Ok(n) => {
            let n = n.unwrap_or(0);
            if n > 0 {
                ctx.touch(db, key);
            }
            ctx.out.integer(n as i64);
        }
    }
}

pub fn zremrangebyrank(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(a) = parse_long(ctx, args[2], None) else {
        return;
    };
    let Some(b) = parse_long(ctx, args[3], None) else {
        return;
    };
    remrange(ctx, args, &Range::Rank(a, b));
}

pub fn zremrangebyscore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    match ScoreRange::parse(args[2], args[3]) {
        Some(r) => remrange(ctx, args, &Range::Score(r)),
        None => ctx.error(RANGE_NOT_FLOAT),
    }
}

pub fn zremrangebylex(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    match LexRange::parse(args[2], args[3]) {
        Some(r) => remrange(ctx, args, &Range::Lex(r)),
        None => ctx.error(RANGE_NOT_LEX),
    }
}

// ---------------------------------------------------------------------------------------------
// Pops

/// Pops up to `count` entries from the zset at `key` (lowest first, or highest with `max`),
/// deleting the key when emptied and touching it; `None` if the key is missing or not a zset.
/// For the blocking pops (BZPOPMIN, BZPOPMAX, BZMPOP), which reply with `reply_popped`.
/// Rewrites a packed sorted set as an index (SORT does this in Redis, and it is visible: the index
/// keeps a -0 score that the packed form stores as 0). Anything else is left alone.
pub fn convert_to_index(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    now: u64,
) -> Result<(), store::StoreError> {
    let packed_bytes = shard.with_slot(db, key, now, |slot| match slot {
        Slot::Inline {
            tag: t,
            bytes,
            expire_at_ms,
            ..
        } if t == tag::ZSET_PACKED => Some((bytes.to_vec(), expire_at_ms)),
        _ => None,
    });
    let Some((bytes, expire_at_ms)) = packed_bytes else {
        return Ok(());
    };
    let obj = zset::ZSetObj::from_entries(
        shard.heap_mut(),
        packed::iter(&bytes).map(|(score, member, _, _)| (score, member)),
    )?;
    shard.put_object(
        db,
        key,
        tag::ZSET_INDEX,
        Object::ZSet(obj),
        Ttl::of(expire_at_ms),
        now,
    )
}

pub fn pop_for_blocked(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    max: bool,
    count: usize,
) -> Option<Vec<(Vec<u8>, f64)>> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let popped = with_zset_mut(ctx.shard(key), db, key, now, false, |z| {
        let mut v = Vec::new();
        for _ in 0..count {
            match z.pop(max, |s, m| (m.to_vec(), s)) {
                Some(e) => v.push(e),
                None => break,
            }
        }
        v
    })
    .ok()
    .flatten()?;
    if !popped.is_empty() {
        ctx.touch(db, key);
    }
    Some(popped)
}

/// Writes popped entries as ZPOPMIN does: member then score for each, each pair in its own
/// 2-array when `nested` (ZPOPMIN with COUNT in RESP3, ZMPOP); the caller writes the enclosing
/// array header.
pub fn reply_popped(out: &mut ReplyWriter<'_>, entries: &[(Vec<u8>, f64)], nested: bool) {
    for (m, s) in entries {
        if nested {
            out.array_len(2);
        }
        out.bulk(m);
        reply_score(out, *s);
    }
}

fn zpop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], max: bool) {
    if args.len() > 3 {
        return ctx.syntax_error();
    }
    let mut count: i64 = -1;
    if args.len() == 3 {
        match parse_long_in(
            ctx,
            args[2],
            0,
            i64::MAX,
            Some("ERR value is out of range, must be positive"),
        ) {
            Some(c) => count = c,
            None => return,
        }
    }
    let key = args[1];
    let nested = ctx.out.protocol() == Protocol::Resp3 && count != -1;
    let (db, now) = (ctx.db(), ctx.now_ms);
    let (shard, out) = ctx.shard_and_out(key);
    let result = with_zset_mut(shard, db, key, now, false, |z| {
        if count == 0 {
            out.array_len(0);
            return 0;
        }
        let n = z.len().min(if count == -1 { 1 } else { count as usize });
        out.array_len(if nested { n } else { n * 2 });
        for _ in 0..n {
            z.pop(max, |s, m| {
                if nested {
                    out.array_len(2);
                }
                out.bulk(m);
                reply_score(out, s);
            });
        }
        n
    });
    match result {
        Err(fail) => report(ctx, fail),
        Ok(None) => ctx.out.array_len(0),
        Ok(Some(n)) => {
            if n > 0 {
                ctx.touch(db, key);
            }
        }
    }
}

pub fn zpopmin(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    zpop(ctx, args, false);
}

pub fn zpopmax(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    zpop(ctx, args, true);
}

pub fn zmpop(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(numkeys) = parse_long_in(
        ctx,
        args[1],
        1,
        i64::MAX,
        Some("ERR numkeys should be greater than 0"),
    ) else {
        return;
    };
    let where_at = 2usize.saturating_add(usize::try_from(numkeys).unwrap_or(usize::MAX));
    if where_at >= args.len() {
        return ctx.syntax_error();
    }
    let max = if is(args[where_at], "min") {
        false
    } else if is(args[where_at], "max") {
        true
    } else {
        return ctx.syntax_error();
    };
    let mut count: i64 = -1;
    let mut j = where_at + 1;
    while j < args.len() {
        if count == -1 && is(args[j], "count") && j + 1 < args.len() {
            j += 1;
            match parse_long_in(
                ctx,
                args[j],
                1,
                i64::MAX,
                Some("ERR count should be greater than 0"),
            ) {
                Some(c) => count = c,
                None => return,
            }
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    let count = if count == -1 { 1 } else { count as usize };
    let (db, now) = (ctx.db(), ctx.now_ms);
    for key in &args[2..where_at] {
        let exists = with_zset(ctx.shard(key), db, key, now, |_| ());
        match exists {
            Err(fail) => return report(ctx, fail),
            Ok(None) => {}
            Ok(Some(())) => {
                let popped = pop_for_blocked(ctx, key, max, count).unwrap_or_default();
                ctx.out.array_len(2);
                ctx.out.bulk(key);
                ctx.out.array_len(popped.len());
                reply_popped(&mut ctx.out, &popped, true);
                return;
            }
        }
    }
    ctx.out.null_array();
}

// ---------------------------------------------------------------------------------------------
// ZRANDMEMBER

fn random_source(ctx: &Ctx<'_, '_>) -> impl FnMut() -> u64 + use<> {
    let mut seed = ctx.now_ms
        ^ 0x9E37_79B9_7F4A_7C15
        ^ (ctx.client.shared.id << 32)
        ^ u64::from(std::process::id());
    RANDOM_CALLS.with(|c| {
        let n = c.get().wrapping_add(1);
        c.set(n);
        seed ^= n.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    });
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

thread_local! {
    static RANDOM_CALLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

pub fn zrandmember(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let mut next = random_source(ctx);
    if args.len() == 2 {
        if let Some(found) = read(ctx, args[1], |z, out| {
            let r = (next() % z.len() as u64) as usize;
            let (_, m) = z.iter(r, false).next().expect("r < len");
            out.bulk(m);
        }) && found.is_none()
        {
            ctx.out.null();
        }
        return;
    }
    let Some(l) = parse_long_in(ctx, args[2], -i64::MAX, i64::MAX, None) else {
        return;
    };
    let withscores = match args.len() {
        3 => false,
        4 if is(args[3], "withscores") => true,
        _ => return ctx.syntax_error(),
    };
    if withscores && !(-i64::MAX / 2..=i64::MAX / 2).contains(&l) {
        return ctx.error("ERR value is out of range");
    }
    let found = read(ctx, args[1], |z, out| {
        let len = z.len();
        let resp3 = out.protocol() == Protocol::Resp3;
        let emit = |out: &mut ReplyWriter<'_>, s: f64, m: &[u8]| {
            if withscores && resp3 {
                out.array_len(2);
            }
            out.bulk(m);
            if withscores {
                reply_score(out, s);
            }
        };
        let header = |out: &mut ReplyWriter<'_>, n: usize| {
            out.array_len(if withscores && !resp3 { n * 2 } else { n });
        };
        if l == 0 {
            return out.array_len(0);
        }
        if l < 0 || l == 1 {
            let n = l.unsigned_abs() as usize;
            header(out, n);
            for _ in 0..n {
                let r = (next() % len as u64) as usize;
                let (s, m) = z.iter(r, false).next().expect("r < len");
                emit(out, s, m);
            }
            return;
        }
        let n = l as usize;
        if n >= len {
            header(out, len);
            for (s, m) in z.iter(0, false) {
                emit(out, s, m);
            }
            return;
        }
        // n distinct ranks: a partial Fisher-Yates shuffle over the ranks.
        let mut ranks: Vec<usize> = (0..len).collect();
        for i in 0..n {
            let j = i + (next() % (len - i) as u64) as usize;
            ranks.swap(i, j);
        }
        header(out, n);
        for &r in &ranks[..n] {
            let (s, m) = z.iter(r, false).next().expect("r < len");
            emit(out, s, m);
        }
    });
    if let Some(None) = found {
        ctx.out.array_len(0);
    }
}

// ---------------------------------------------------------------------------------------------
// ZUNION, ZINTER, ZDIFF (and STORE), ZINTERCARD

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

fn aggregate(target: &mut f64, val: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += val;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if val < *target {
                *target = val;
            }
        }
        Aggregate::Max => {
            if val > *target {
                *target = val;
            }
        }
    }
}

/// Reads an input of the set algebra: a zset's entries, or a set's members with score 1.
fn read_input(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Result<Option<Entries>, Fail> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let shard = ctx.shard(key);
    let kind = shard.with_entry(db, key, now, |e| Kind::of_tag(e.tag));
    match kind {
        None => Ok(None),
        Some(Kind::ZSet) => with_zset(shard, db, key, now, |z| z.to_vec()),
        Some(Kind::Set) => match shard.export(db, key, now) {
            Some((Exported::Coll(Portable::Set(members)), _)) => {
                Ok(Some(members.into_iter().map(|m| (m, 1.0)).collect()))
            }
            _ => Ok(None),
        },
        Some(_) => Err(Fail::WrongType),
    }
}

fn setop_generic(
    ctx: &mut Ctx<'_, '_>,
    args: &[&[u8]],
    dst: Option<&[u8]>,
    numkeys_at: usize,
    op: SetOp,
    card_only: bool,
) {
    let Some(setnum) = parse_long(ctx, args[numkeys_at], None) else {
        return;
    };
    if setnum < 1 {
        let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
        return ctx.error(&format!(
            "ERR at least 1 input key is needed for '{name}' command"
        ));
    }
    if setnum > (args.len() - numkeys_at - 1) as i64 {
        return ctx.syntax_error();
    }
    let setnum = setnum as usize;
    let keys = &args[numkeys_at + 1..numkeys_at + 1 + setnum];
    let mut inputs: Vec<(Entries, f64)> = Vec::with_capacity(setnum);
    for key in keys {
        match read_input(ctx, key) {
            Err(fail) => return report(ctx, fail),
            Ok(v) => inputs.push((v.unwrap_or_default(), 1.0)),
        }
    }
    let mut how = Aggregate::Sum;
    let mut withscores = false;
    let mut limit: i64 = 0;
    let mut j = numkeys_at + 1 + setnum;
    while j < args.len() {
        let remaining = args.len() - j;
        if op != SetOp::Diff && !card_only && remaining > setnum && is(args[j], "weights") {
            j += 1;
            for input in &mut inputs {
                match parse_score(args[j]) {
                    Some(w) => input.1 = w,
                    None => return ctx.error("ERR weight value is not a float"),
                }
                j += 1;
            }
        } else if op != SetOp::Diff && !card_only && remaining >= 2 && is(args[j], "aggregate") {
            let a = args[j + 1];
            how = if is(a, "sum") {
                Aggregate::Sum
            } else if is(a, "min") {
                Aggregate::Min
            } else if is(a, "max") {
                Aggregate::Max
            } else {
                return ctx.syntax_error();
            };
            j += 2;
        } else if dst.is_none() && !card_only && is(args[j], "withscores") {
            withscores = true;
            j += 1;
        } else if card_only && remaining >= 2 && is(args[j], "limit") {
            match parse_long_in(
                ctx,
                args[j + 1],
                0,
                i64::MAX,
                Some("ERR LIMIT can't be negative"),
            ) {
                Some(l) => limit = l,
                None => return,
            }
            j += 2;
        } else {
            return ctx.syntax_error();
        }
    }
    if op != SetOp::Diff {
        inputs.sort_by_key(|(v, _)| v.len());
    }
    let result: Vec<(Vec<u8>, f64)> = match op {
        SetOp::Inter => {
            let lookups: Vec<HashMap<&[u8], f64>> = inputs[1..]
                .iter()
                .map(|(v, _)| v.iter().map(|(m, s)| (m.as_slice(), *s)).collect())
                .collect();
            let mut out = Vec::new();
            let mut card = 0i64;
            for (m, s) in &inputs[0].0 {
                let mut score = inputs[0].1 * s;
                if score.is_nan() {
                    score = 0.0;
                }
                let mut all = true;
                for (i, lookup) in lookups.iter().enumerate() {
                    if let Some(v) = lookup.get(m.as_slice()) {
                        aggregate(&mut score, v * inputs[i + 1].1, how);
                    } else {
                        all = false;
                        break;
                    }
                }
                if all {
                    if card_only {
                        card += 1;
                        if limit > 0 && card >= limit {
                            break;
                        }
                    } else {
                        out.push((m.clone(), score));
                    }
                }
            }
            if card_only {
                ctx.out.integer(card);
                return;
            }
            out
        }
        SetOp::Union => {
            let mut acc: HashMap<&[u8], f64> = HashMap::new();
            for (v, w) in &inputs {
                for (m, s) in v {
                    let mut score = w * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    acc.entry(m.as_slice())
                        .and_modify(|t| aggregate(t, score, how))
                        .or_insert(score);
                }
            }
            acc.into_iter().map(|(m, s)| (m.to_vec(), s)).collect()
        }
        SetOp::Diff => {
            let others: Vec<HashSet<&[u8]>> = inputs[1..]
                .iter()
                .map(|(v, _)| v.iter().map(|(m, _)| m.as_slice()).collect())
                .collect();
            inputs[0]
                .0
                .iter()
                .filter(|(m, _)| !others.iter().any(|o| o.contains(m.as_slice())))
                .cloned()
                .collect()
        }
    };
    let mut result = result;
    result.sort_by(zset::order);
    match dst {
        Some(d) => store_result(ctx, d, &result),
        None => reply_entries(
            &mut ctx.out,
            result.len(),
            withscores,
            result.iter().map(|(m, s)| (*s, m.as_slice())),
        ),
    }
}

pub fn zunion(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setop_generic(ctx, args, None, 1, SetOp::Union, false);
}

pub fn zinter(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setop_generic(ctx, args, None, 1, SetOp::Inter, false);
}

pub fn zdiff(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setop_generic(ctx, args, None, 1, SetOp::Diff, false);
}

pub fn zintercard(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setop_generic(ctx, args, None, 1, SetOp::Inter, true);
}

pub fn zunionstore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setop_generic(ctx, args, Some(args[1]), 2, SetOp::Union, false);
}

pub fn zinterstore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setop_generic(ctx, args, Some(args[1]), 2, SetOp::Inter, false);
}

pub fn zdiffstore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setop_generic(ctx, args, Some(args[1]), 2, SetOp::Diff, false);
}

// ---------------------------------------------------------------------------------------------
// ZSCAN

/// `d2string`: how a listpack holds a score (ZSCAN of a small zset prints it so).
fn d2string(s: f64) -> Vec<u8> {
    if s == 0.0 {
        return if s.is_sign_negative() {
            b"-0".to_vec()
        } else {
            b"0".to_vec()
        };
    }
    let limit = (i64::MAX / 2) as f64;
    if s.is_finite() && s == s.trunc() && (-limit..=limit).contains(&s) {
        return (s as i64).to_string().into_bytes();
    }
    resp::double::g17(s).as_bytes().to_vec()
}

pub fn zscan(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(cursor) = super::keys::parse_cursor(args[2]) else {
        return ctx.error("ERR invalid cursor");
    };
    let key = args[1];
    let (db, now) = (ctx.db(), ctx.now_ms);
    let kind = ctx
        .shard(key)
        .with_entry(db, key, now, |e| Kind::of_tag(e.tag));
    match kind {
        None => {
            ctx.out.array_len(2);
            ctx.out.bulk(b"0");
            ctx.out.array_len(0);
            return;
        }
        Some(Kind::ZSet) => {}
        Some(_) => return ctx.wrong_type(),
    }
    let mut count: i64 = 10;
    let mut pattern: Option<store::glob::Glob> = None;
    let mut i = 3;
    while i < args.len() {
        let left = args.len() - i;
        if is(args[i], "count") && left >= 2 {
            let Some(c) = parse_long(ctx, args[i + 1], None) else {
                return;
            };
            if c < 1 {
                return ctx.syntax_error();
            }
            count = c;
        } else if is(args[i], "match") && left >= 2 {
            let g = store::glob::Glob::new(args[i + 1]);
            pattern = if g.is_everything() { None } else { Some(g) };
        } else {
            return ctx.syntax_error();
        }
        i += 2;
    }
    let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut next = 0;
    let keep = |m: &[u8]| pattern.as_ref().is_none_or(|g| g.matches(m));
    ctx.shard(key).with_slot(db, key, now, |slot| match slot {
        Slot::Inline { bytes, .. } => {
            for (s, m, _, _) in packed::iter(bytes) {
                if keep(m) {
                    found.push((m.to_vec(), d2string(s)));
                }
            }
        }
        Slot::Boxed {
            object: Object::ZSet(o),
            heap,
            ..
        } => {
            let mut c = cursor;
            let mut steps = count.saturating_mul(10);
            loop {
                c = o.scan(heap, c, |m, s| {
                    if keep(m) {
                        found.push((m.to_vec(), resp::double::g17(s).as_bytes().to_vec()));
                    }
                });
                steps -= 1;
                if c == 0 || steps <= 0 || found.len() as i64 >= count {
                    break;
                }
            }
            next = c;
        }
        _ => {}
    });
    ctx.out.array_len(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array_len(found.len() * 2);
    for (m, s) in &found {
        ctx.out.bulk(m);
        ctx.out.bulk(s);
    }
}

// ---------------------------------------------------------------------------------------------
// The table

/// Keys counted by the argument at `count_at`; a destination key before it (the STORE forms).
const fn numkeys(count_at: usize) -> Keys {
    Keys::NumKeys {
        at: count_at,
        also: if count_at > 1 { Some(1) } else { None },
    }
}

const G: &str = "sorted-set";

pub static COMMANDS: &[Spec] = &[
    spec(
        "zadd",
        -4,
        WRITE | DENYOOM | FAST,
        K1,
        G,
        "1.2.0",
        "Adds one or more members to a sorted set, or updates their scores.",
        zadd,
    ),
    spec(
        "zincrby",
        4,
        WRITE | DENYOOM | FAST,
        K1,
        G,
        "1.2.0",
        "Increments the score of a member in a sorted set.",
        zincrby,
    ),
    spec(
        "zrem",
        -3,
        WRITE | FAST,
        K1,
        G,
        "1.2.0",
        "Removes one or more members from a sorted set.",
        zrem,
    ),
    spec(
        "zcard",
        2,
        READONLY | FAST,
        K1,
        G,
        "1.2.0",
        "Returns the number of members in a sorted set.",
        zcard,
    ),
    spec(
        "zscore",
        3,
        READONLY | FAST,
        K1,
        G,
        "1.2.0",
        "Returns the score of a member in a sorted set.",
        zscore,
    ),
    spec(
        "zmscore",
        -3,
        READONLY | FAST,
        K1,
        G,
        "6.2.0",
        "Returns the score of one or more members in a sorted set.",
        zmscore,
    ),
    spec(
        "zrank",
        3,
        READONLY | FAST,
        K1,
        G,
        "2.0.0",
        "Returns the index of a member in a sorted set ordered by ascending scores.",
        zrank,
    ),
    spec(
        "zrevrank",
        3,
        READONLY | FAST,
        K1,
        G,
        "2.0.0",
        "Returns the index of a member in a sorted set ordered by descending scores.",
        zrevrank,
    ),
    spec(
        "zcount",
        4,
        READONLY | FAST,
        K1,
        G,
        "2.0.0",
        "Returns the count of members in a sorted set that have scores within a range.",
        zcount,
    ),
    spec(
        "zlexcount",
        4,
        READONLY | FAST,
        K1,
        G,
        "2.8.9",
        "Returns the number of members in a sorted set within a lexicographical range.",
        zlexcount,
    ),
    spec(
        "zrange",
        -4,
        READONLY,
        K1,
        G,
        "1.2.0",
        "Returns members in a sorted set within a range of indexes.",
        zrange,
    ),
    spec(
        "zrangestore",
        -5,
        WRITE | DENYOOM,
        K12,
        G,
        "6.2.0",
        "Stores a range of members from sorted set in a key.",
        zrangestore,
    ),
    spec(
        "zrevrange",
        -4,
        READONLY,
        K1,
        G,
        "1.2.0",
        "Returns members in a sorted set within a range of indexes in reverse order.",
        zrevrange,
    ),
    spec(
        "zrangebyscore",
        -4,
        READONLY,
        K1,
        G,
        "1.0.5",
        "Returns members in a sorted set within a range of scores.",
        zrangebyscore,
    ),
    spec(
        "zrevrangebyscore",
        -4,
        READONLY,
        K1,
        G,
        "2.2.0",
        "Returns members in a sorted set within a range of scores in reverse order.",
        zrevrangebyscore,
    ),
    spec(
        "zrangebylex",
        -4,
        READONLY,
        K1,
        G,
        "2.8.9",
        "Returns members in a sorted set within a lexicographical range.",
        zrangebylex,
    ),
    spec(
        "zrevrangebylex",
        -4,
        READONLY,
        K1,
        G,
        "2.8.9",
        "Returns members in a sorted set within a lexicographical range in reverse order.",
        zrevrangebylex,
    ),
    spec(
        "zremrangebyrank",
        4,
        WRITE,
        K1,
        G,
        "2.0.0",
        "Removes members in a sorted set within a range of indexes.",
        zremrangebyrank,
    ),
    spec(
        "zremrangebyscore",
        4,
        WRITE,
        K1,
        G,
        "1.2.0",
        "Removes members in a sorted set within a range of scores.",
        zremrangebyscore,
    ),
    spec(
        "zremrangebylex",
        4,
        WRITE,
        K1,
        G,
        "2.8.9",
        "Removes members in a sorted set within a lexicographical range.",
        zremrangebylex,
    ),
    spec(
        "zpopmin",
        -2,
        WRITE | FAST,
        K1,
        G,
        "5.0.0",
        "Returns the lowest-scoring members from a sorted set after removing them.",
        zpopmin,
    ),
    spec(
        "zpopmax",
        -2,
        WRITE | FAST,
        K1,
        G,
        "5.0.0",
        "Returns the highest-scoring members from a sorted set after removing them.",
        zpopmax,
    ),
    spec(
        "zmpop",
        -4,
        WRITE,
        numkeys(1),
        G,
        "7.0.0",
        "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them.",
        zmpop,
    ),
    spec(
        "zrandmember",
        -2,
        READONLY,
        K1,
        G,
        "6.2.0",
        "Returns one or more random members from a sorted set.",
        zrandmember,
    ),
    spec(
        "zunion",
        -3,
        READONLY,
        numkeys(1),
        G,
        "6.2.0",
        "Returns the union of multiple sorted sets.",
        zunion,
    ),
    spec(
        "zinter",
        -3,
        READONLY,
        numkeys(1),
        G,
        "6.2.0",
        "Returns the intersect of multiple sorted sets.",
        zinter,
    ),
    spec(
        "zdiff",
        -3,
        READONLY,
        numkeys(1),
        G,
        "6.2.0",
        "Returns the difference between multiple sorted sets.",
        zdiff,
    ),
    spec(
        "zintercard",
        -3,
        READONLY,
        numkeys(1),
        G,
        "7.0.0",
        "Returns the number of members of the intersect of multiple sorted sets.",
        zintercard,
    ),
    spec(
        "zunionstore",
        -4,
        WRITE | DENYOOM,
        numkeys(2),
        G,
        "2.0.0",
        "Stores the union of multiple sorted sets in a key.",
        zunionstore,
    ),
    spec(
        "zinterstore",
        -4,
        WRITE | DENYOOM,
        numkeys(2),
        G,
        "2.0.0",
        "Stores the intersect of multiple sorted sets in a key.",
        zinterstore,
    ),
    spec(
        "zdiffstore",
        -4,
        WRITE | DENYOOM,
        numkeys(2),
        G,
        "6.2.0",
        "Stores the difference of multiple sorted sets in a key.",
        zdiffstore,
    ),
    spec(
        "zscan",
        -3,
        READONLY,
        K1,
        G,
        "2.8.0",
        "Iterates over members and scores of a sorted set.",
        zscan,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_parse_like_string2d() {
        assert_eq!(parse_score(b"1e3"), Some(1000.0));
        assert_eq!(parse_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"nan"), None);
        assert_eq!(parse_score(b"1x"), None);
        assert_eq!(parse_score(b" 1"), None);
        assert_eq!(parse_score(b""), None);
        assert_eq!(parse_score(b"1e400"), None);
        assert_eq!(parse_score(b"1e-400"), None);
        assert_eq!(parse_score(b"0e-400"), Some(0.0));
        assert!(parse_score(b"-0").is_some_and(|v| v == 0.0 && v.is_sign_negative()));
        assert_eq!(parse_score(b"0x10"), Some(16.0));
        assert_eq!(parse_score(b"-0x1.8p1"), Some(-3.0));
        assert_eq!(parse_score(b"0x"), None);
        assert_eq!(parse_score(b"INF"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"-Infinity"), Some(f64::NEG_INFINITY));
    }

    #[test]
    fn bounds_parse_like_zsl_parse_range() {
        assert_eq!(parse_bound(b"(1"), Some((1.0, true)));
        assert_eq!(parse_bound(b"("), Some((0.0, true)));
        assert_eq!(parse_bound(b""), Some((0.0, false)));
        assert_eq!(parse_bound(b" 2"), Some((2.0, false)));
        assert_eq!(parse_bound(b"1e400"), Some((f64::INFINITY, false)));
        assert_eq!(parse_bound(b"nan"), None);
        assert_eq!(parse_bound(b"[1"), None);
    }

    #[test]
    fn lex_ranges() {
        let r = LexRange::parse(b"[b", b"(d").unwrap();
        assert!(r.gte_min(b"b") && !r.gte_min(b"a") && r.lte_max(b"c") && !r.lte_max(b"d"));
        assert!(LexRange::parse(b"+", b"-").unwrap().is_empty());
        assert!(LexRange::parse(b"(a", b"[a").unwrap().is_empty());
        assert!(!LexRange::parse(b"-", b"+").unwrap().is_empty());
        assert!(LexRange::parse(b"a", b"+").is_none());
    }

    #[test]
    fn d2string_matches_listpack_scores() {
        assert_eq!(d2string(1e17), b"100000000000000000");
        assert_eq!(d2string(-0.0), b"-0");
        assert_eq!(d2string(1.5), b"1.5");
        assert_eq!(d2string(f64::INFINITY), b"inf");
    }
}
