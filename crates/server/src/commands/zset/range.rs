//! The ranges of a sorted set: by rank, by score (`zslParseRange`'s bounds) and by lex, with
//! LIMIT, REV and the STORE form (ZRANGE and its older names, ZRANGESTORE), and what counts or
//! removes by the same ranges (ZCOUNT, ZLEXCOUNT, ZREMRANGEBY*).

// Scores are compared exactly, as Redis compares its doubles (-0 == 0, no epsilon).
#![allow(clippy::float_cmp)]

use super::{note_miss, notify_removed, parse_long, reply_score};
use crate::command::Ctx;
use crate::commands::args::is;
use crate::number::{is_space, strtod_whole};
use resp::{Protocol, ReplyWriter};
use store::ZSetView;

const RANGE_NOT_FLOAT: &str = "ERR min or max is not a float";
const RANGE_NOT_LEX: &str = "ERR min or max not valid string range item";

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
fn span(z: ZSetView<'_>, range: &Range<'_>, rev: bool, offset: i64, limit: i64) -> Span {
    let empty = Span {
        start: 0,
        count: 0,
        rev,
    };
    // Ranks [first, last) in range.
    let (first, last) = match range {
        Range::Rank(start, end) => return rank_span(z.len(), *start, *end, rev),
        Range::Score(r) if r.is_empty() => return empty,
        Range::Score(r) => (
            z.count_before(|s, _| r.gte_min(s)),
            z.count_before(|s, _| !r.lte_max(s)),
        ),
        Range::Lex(r) if r.is_empty() => return empty,
        Range::Lex(r) => (
            z.count_before(|_, m| r.gte_min(m)),
            z.count_before(|_, m| !r.lte_max(m)),
        ),
    };
    let len = z.len();
    if last <= first || offset < 0 || (offset > 0 && offset as usize >= len) {
        return empty;
    }
    let (total, offset) = (last - first, offset as usize);
    if offset >= total {
        return empty;
    }
    let count = if limit >= 0 {
        (total - offset).min(limit as usize)
    } else {
        total - offset
    };
    let start = if rev {
        last - 1 - offset
    } else {
        first + offset
    };
    Span { start, count, rev }
}

/// The span of ranks `start..=end` (negative counts from the end) of a set of `len`, as
/// ZRANGE by rank clamps them.
fn rank_span(len: usize, start: i64, end: i64, rev: bool) -> Span {
    let n = len as i64;
    let start = if start < 0 { n + start } else { start }.max(0);
    let end = if end < 0 { n + end } else { end };
    if start > end || start >= n {
        return Span {
            start: 0,
            count: 0,
            rev,
        };
    }
    let (a, b) = (start as usize, end.min(n - 1) as usize);
    Span {
        start: if rev { len - 1 - a } else { a },
        count: b - a + 1,
        rev,
    }
}

/// Writes `count` (member, score?) results in ZRANGE's shape.
pub(super) fn reply_entries<'a>(
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

/// The options of a ZRANGE-family command.
#[derive(Clone, Copy, Debug)]
struct RangeOptions {
    kind: RangeKind,
    rev: bool,
    withscores: bool,
    offset: i64,
    /// -1: no LIMIT.
    limit: i64,
}

/// Reads the options after the range (`args[at + 3..]`); `rev` and `kind` are preset by the
/// older command names. Replies the error and returns `None` on a bad option.
fn range_options(
    ctx: &mut Ctx<'_, '_>,
    args: &[&[u8]],
    at: usize,
    store: bool,
    (mut kind, mut rev): (RangeKind, Option<bool>),
) -> Option<RangeOptions> {
    let (mut withscores, mut offset, mut limit) = (false, 0i64, -1i64);
    let mut j = at + 3;
    while j < args.len() {
        let a = args[j];
        if !store && is(a, "withscores") {
            withscores = true;
        } else if is(a, "limit") && args.len() > j + 2 {
            offset = parse_long(ctx, args[j + 1], None)?;
            limit = parse_long(ctx, args[j + 2], None)?;
            j += 2;
        } else if rev.is_none() && is(a, "rev") {
            rev = Some(true);
        } else if kind == RangeKind::Auto && is(a, "bylex") {
            kind = RangeKind::Lex;
        } else if kind == RangeKind::Auto && is(a, "byscore") {
            kind = RangeKind::Score;
        } else {
            ctx.syntax_error();
            return None;
        }
        j += 1;
    }
    if kind == RangeKind::Auto {
        kind = RangeKind::Rank;
    }
    let rev = rev.unwrap_or(false);
    Some(RangeOptions {
        kind,
        rev,
        withscores,
        offset,
        limit,
    })
}

/// Checks the option combination and parses the range bounds (swapped for REV by score or lex),
/// in Redis's order of errors.
fn parse_range<'a>(
    ctx: &mut Ctx<'_, '_>,
    o: &RangeOptions,
    (min, max): (&'a [u8], &'a [u8]),
) -> Option<Range<'a>> {
    let error = |ctx: &mut Ctx<'_, '_>, e: &str| {
        ctx.error(e);
        None
    };
    if o.limit != -1 && o.kind == RangeKind::Rank {
        return error(
            ctx,
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if o.withscores && o.kind == RangeKind::Lex {
        return error(
            ctx,
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        );
    }
    let (min, max) = if o.rev && o.kind != RangeKind::Rank {
        (max, min)
    } else {
        (min, max)
    };
    match o.kind {
        RangeKind::Score => match ScoreRange::parse(min, max) {
            Some(r) => Some(Range::Score(r)),
            None => error(ctx, RANGE_NOT_FLOAT),
        },
        RangeKind::Lex => match LexRange::parse(min, max) {
            Some(r) => Some(Range::Lex(r)),
            None => error(ctx, RANGE_NOT_LEX),
        },
        RangeKind::Rank | RangeKind::Auto => {
            let a = parse_long(ctx, min, None)?;
            let b = parse_long(ctx, max, None)?;
            Some(Range::Rank(a, b))
        }
    }
}

/// ZRANGE and its relatives: `at` is the index of the source key; `store` is the destination
/// (ZRANGESTORE); `kind` and `rev` are what the older command names preset.
fn range_generic(
    ctx: &mut Ctx<'_, '_>,
    args: &[&[u8]],
    at: usize,
    store: Option<&[u8]>,
    kind: RangeKind,
    rev: Option<bool>,
) {
    let key = args[at];
    let Some(o) = range_options(ctx, args, at, store.is_some(), (kind, rev)) else {
        return;
    };
    let Some(range) = parse_range(ctx, &o, (args[at + 1], args[at + 2])) else {
        return;
    };
    if let Some(dst) = store {
        return store_range(ctx, key, dst, &range, o.rev, (o.offset, o.limit));
    }
    let found = ctx.read::<store::ZSet, _>(key, |z, out| {
        let sp = span(z, &range, o.rev, o.offset, o.limit);
        reply_entries(out, sp.count, o.withscores, z.iter(sp.start, sp.rev));
    });
    if found == Some(None) {
        ctx.out.array_len(0);
    }
    note_miss(ctx, key, found.as_ref());
}

/// ZRANGESTORE: adds the range's entries to a new zset at `dst` in the order they come, as
/// Redis 7.0 does: the destination starts as the index when a rank range is known to pass 128
/// entries, packed otherwise, converting when an add crosses a threshold (the entries added
/// before that lose a -0 score, as a listpack's do). An empty range deletes `dst`.
fn store_range(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    dst: &[u8],
    range: &Range<'_>,
    rev: bool,
    (offset, limit): (i64, i64),
) {
    let got = ctx.read::<store::ZSet, _>(key, |z, _| {
        let sp = span(z, range, rev, offset, limit);
        let entries: Vec<(f64, Vec<u8>)> = z
            .iter(sp.start, sp.rev)
            .take(sp.count)
            .map(|(s, m)| (s, m.to_vec()))
            .collect();
        entries
    });
    note_miss(ctx, key, got.as_ref());
    let Some(entries) = got else {
        return;
    };
    let entries = entries.unwrap_or_default();
    let hint = if matches!(range, Range::Rank(..)) {
        entries.len()
    } else {
        0
    };
    let event = (crate::notify::class::ZSET, "zrangestore");
    ctx.store_result(dst, entries.len(), event, |shard, db| {
        let mut b = shard.zset_builder(hint, 0)?;
        for (s, m) in &entries {
            b.insert(m, *s)?;
        }
        b.finish(db, dst, None)
    });
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
    count_in(ctx, args[1], &Range::Score(r));
}

/// ZCOUNT's and ZLEXCOUNT's reply: the entries of the sorted set at `key` in `range`.
fn count_in(ctx: &mut Ctx<'_, '_>, key: &[u8], range: &Range<'_>) {
    let found = ctx.read::<store::ZSet, _>(key, |z, _| span(z, range, false, 0, -1).count);
    if let Some(n) = found {
        ctx.out.integer(n.unwrap_or(0) as i64);
    }
    note_miss(ctx, key, found.as_ref());
}

pub fn zlexcount(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(r) = LexRange::parse(args[2], args[3]) else {
        return ctx.error(RANGE_NOT_LEX);
    };
    count_in(ctx, args[1], &Range::Lex(r));
}

fn remrange(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], range: &Range<'_>) {
    let key = args[1];
    let result = ctx.write::<store::ZSet, _>(key, false, |z, _| {
        let sp = span(z.view(), range, false, 0, -1);
        if sp.count == 0 {
            return Ok((0, false));
        }
        Ok((
            z.remove_ranks(sp.start, sp.start + sp.count - 1),
            z.is_empty(),
        ))
    });
    if let Some(n) = result {
        let (n, emptied) = n.unwrap_or((0, false));
        if n > 0 {
            ctx.touch(ctx.db(), key);
            let event = match range {
                Range::Rank(..) => "zremrangebyrank",
                Range::Score(_) => "zremrangebyscore",
                Range::Lex(_) => "zremrangebylex",
            };
            notify_removed(ctx, key, event, emptied);
        }
        ctx.out.integer(n as i64);
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
