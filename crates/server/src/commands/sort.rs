//! SORT and SORT_RO: sort the elements of a list, set or sorted set numerically or as strings,
//! optionally by weights read from other keys (`BY weight_*`, `BY hash_*->field`), projecting
//! other keys (`GET #`, `GET obj_*`), with LIMIT, DESC and STORE — Redis 7.0's `sort.c`, option by
//! option, including its error order and its tie-breaking (equal numeric weights compare the
//! elements as binary strings, so the order is deterministic).
//!
//! BY and GET patterns can name any key, so SORT locks every shard (`Keys::All`); the sorted key
//! is read once, through its logical view (`Shard::view`).
//!
//! Keyspace events, as `sort.c` sends them: `keymiss` for a missing sorted key and for each BY
//! or GET lookup that finds no key (in the order Redis looks them up: every element's BY
//! weight in the key's order, then the GETs of the result); STORE's `sortstore` (after `new`),
//! or `del` when the result is empty.

use crate::command::{ALL, Ctx, DENYOOM, READONLY, Spec, WRITE, table};
use crate::commands::is;
use crate::number;
use store::{Hash, List, StoreError, View, ZSet};

pub static COMMANDS: &[Spec] = table! {
    // name    arity, flags,           keys, member, handler
    "sort",    -2,    WRITE | DENYOOM, ALL,  0,      sort;
    "sort_ro", -2,    READONLY,        ALL,  0,      sort_ro;
};

pub fn sort(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    sort_generic(ctx, args, false);
}

pub fn sort_ro(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    sort_generic(ctx, args, true);
}

/// What the SORT options say.
struct Options<'a> {
    desc: bool,
    alpha: bool,
    limit: Option<(i64, i64)>,
    store: Option<&'a [u8]>,
    by: Option<&'a [u8]>,
    dont_sort: bool,
    gets: Vec<&'a [u8]>,
}

/// Parses the options; replies and returns `None` on error.
fn parse<'a>(ctx: &mut Ctx<'_, '_>, args: &[&'a [u8]], readonly: bool) -> Option<Options<'a>> {
    let mut o = Options {
        desc: false,
        alpha: false,
        limit: None,
        store: None,
        by: None,
        dont_sort: false,
        gets: Vec::new(),
    };
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let arg = args[j];
        if is(arg, "asc") {
            o.desc = false;
        } else if is(arg, "desc") {
            o.desc = true;
        } else if is(arg, "alpha") {
            o.alpha = true;
        } else if is(arg, "limit") && left >= 2 {
            let (Some(start), Some(count)) = (
                super::args::parse_i64(args[j + 1]),
                super::args::parse_i64(args[j + 2]),
            ) else {
                ctx.not_integer();
                return None;
            };
            o.limit = Some((start, count));
            j += 2;
        } else if !readonly && is(arg, "store") && left >= 1 {
            o.store = Some(args[j + 1]);
            j += 1;
        } else if is(arg, "by") && left >= 1 {
            o.by = Some(args[j + 1]);
            o.dont_sort = !args[j + 1].contains(&b'*');
            j += 1;
        } else if is(arg, "get") && left >= 1 {
            o.gets.push(args[j + 1]);
            j += 1;
        } else {
            ctx.syntax_error();
            return None;
        }
        j += 1;
    }
    Some(o)
}

/// A looked-up value: a string, or nothing (missing key, wrong type, missing field).
fn lookup_by_pattern(ctx: &mut Ctx<'_, '_>, pattern: &[u8], element: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(element.to_vec());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    // A hash dereference: `->` after the `*`, followed by at least one byte.
    let arrow = pattern[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|p| star + 1 + p)
        .filter(|&p| p + 2 < pattern.len());
    let (key_pattern, field) = match arrow {
        Some(p) => (&pattern[..p], Some(&pattern[p + 2..])),
        None => (pattern, None),
    };
    let mut key = Vec::with_capacity(key_pattern.len() + element.len());
    key.extend_from_slice(&key_pattern[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(&key_pattern[star + 1..]);
    let (db, now) = (ctx.db(), ctx.now_ms);
    let shard = ctx.shard(&key);
    // `Ok(None)`: no key (a `keymiss`); another type or a missing field is no value.
    let found = match field {
        None => shard.get_string(db, &key, now, |s| Some(s.to_vec())),
        Some(field) => {
            shard.read::<Hash, _>(db, &key, now, |mut h| h.get(field).map(|v| v.to_vec()))
        }
    };
    match found {
        Ok(None) => {
            super::keys::keymiss(ctx, &key);
            None
        }
        Ok(Some(value)) => value,
        Err(_) => None,
    }
}

/// `strtod` as SORT uses it on a C string: the bytes up to the first NUL, leading space skipped,
/// and then all of them must be used (an empty string is 0; a string of only spaces is not); no
/// overflow or underflow (glibc sets ERANGE for subnormal results too), not NaN. Hex floats and
/// `inf` are numbers.
fn parse_weight(bytes: &[u8]) -> Option<f64> {
    let c_string = bytes.split(|&b| b == 0).next().unwrap_or_default();
    if c_string.is_empty() {
        return Some(0.0);
    }
    let start = c_string.iter().position(|&b| !number::is_space(b))?;
    let text = &c_string[start..];
    let value = number::strtod_whole(text)?;
    if value.is_nan() || (value.is_infinite() && !number::is_inf_literal(text)) {
        return None;
    }
    if value != 0.0 && value.abs() < f64::MIN_POSITIVE {
        return None;
    }
    let mantissa_nonzero = {
        let body = text
            .strip_prefix(b"+")
            .or_else(|| text.strip_prefix(b"-"))
            .unwrap_or(text);
        let hex = body.len() > 2 && body[0] == b'0' && (body[1] | 0x20) == b'x';
        let digits: &[u8] = if hex { &body[2..] } else { body };
        let end = digits
            .iter()
            .position(|&b| {
                if hex {
                    b | 0x20 == b'p'
                } else {
                    b | 0x20 == b'e'
                }
            })
            .unwrap_or(digits.len());
        digits[..end]
            .iter()
            .any(|&b| b.is_ascii_hexdigit() && b != b'0' && (hex || b.is_ascii_digit()))
    };
    if value == 0.0 && mantissa_nonzero {
        return None;
    }
    Some(value)
}

/// Converts the sorted set at `key` to the index encoding.
fn to_index(shard: &mut store::Shard, db: usize, key: &[u8], now: u64) -> Result<(), StoreError> {
    // A closure: the method path is not general over the edit's lifetime.
    #[allow(clippy::redundant_closure_for_method_calls)]
    shard
        .update::<ZSet, _>(db, key, now, false, |z| z.force_index())
        .map(drop)
}

struct Item {
    element: Vec<u8>,
    score: f64,
    by: Option<Vec<u8>>,
}

fn sort_generic(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], readonly: bool) {
    let Some(mut o) = parse(ctx, args, readonly) else {
        return;
    };
    let Some((elements, is_set, ordered)) = sorted_elements(ctx, args[1]) else {
        return;
    };
    // A set in no particular order would make STORE's result arbitrary: sort it as strings.
    if o.dont_sort && is_set && o.store.is_some() {
        o.dont_sort = false;
        o.alpha = true;
        o.by = None;
    }
    let (start, end) = limit_range(o.limit, elements.len() as i64);
    let mut items: Vec<Item> = elements
        .into_iter()
        .map(|element| Item {
            element,
            score: 0.0,
            by: None,
        })
        .collect();
    if o.dont_sort && ordered && o.desc {
        items.reverse();
    }
    if !o.dont_sort {
        if !weigh(ctx, &o, &mut items) {
            return ctx.error("ERR One or more scores can't be converted into double");
        }
        sort_items(&o, &mut items);
    }
    let range: Vec<Item> = if end >= start {
        items
            .into_iter()
            .skip(start as usize)
            .take((end - start + 1) as usize)
            .collect()
    } else {
        Vec::new()
    };
    match o.store {
        None => reply_sorted(ctx, &o.gets, &range),
        Some(dst) => store_sorted(ctx, dst, &o.gets, range),
    }
}

/// The elements of the list, set or sorted set at `key` (none when missing), whether it is a
/// set and whether its order means something; replies WRONGTYPE (or a store error) and returns
/// `None` for another type.
fn sorted_elements(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Option<(Vec<Vec<u8>>, bool, bool)> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    // Redis converts a listpack sorted set to a skiplist before sorting it, for good; the
    // encoding shows afterwards (a -0 score survives in a skiplist, not in a listpack).
    if ctx.shard(key).kind(db, key, now) == Some(store::Kind::ZSet)
        && let Err(e) = to_index(ctx.shard(key), db, key, now)
    {
        ctx.store_error(e);
        return None;
    }
    let elements = ctx.shard(key).view(db, key, now, |v, _| match v {
        View::List(l) => Some((l.iter_from(0).map(<[u8]>::to_vec).collect(), false, true)),
        View::Set(s) => Some((s.to_vec(), true, false)),
        View::ZSet(z) => Some((
            z.iter(0, false).map(|(_, m)| m.to_vec()).collect(),
            false,
            true,
        )),
        View::String(_) | View::Hash(_) => None,
    });
    match elements {
        None => {
            super::keys::keymiss(ctx, key);
            Some((Vec::new(), false, true))
        }
        Some(Some(found)) => Some(found),
        Some(None) => {
            ctx.wrong_type();
            None
        }
    }
}

/// LIMIT's `(offset, count)` clamped to a `len`-element result as `sortCommand` clamps it:
/// the inclusive range `start..=end` (empty when `end < start`).
fn limit_range(limit: Option<(i64, i64)>, len: i64) -> (i64, i64) {
    let (limit_start, limit_count) = limit.unwrap_or((0, -1));
    let mut start = limit_start.max(0).min(len);
    let limit_count = limit_count.max(-1).min(len);
    let mut end = if limit_count < 0 {
        len - 1
    } else {
        start + limit_count - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    (start, end)
}

/// Reads each element's weight (BY) or its own value: a score, or the BY value for ALPHA.
/// False when a weight is not a number.
fn weigh(ctx: &mut Ctx<'_, '_>, o: &Options<'_>, items: &mut [Item]) -> bool {
    let mut converted = true;
    for item in items {
        let by_value = match o.by {
            Some(pattern) => match lookup_by_pattern(ctx, pattern, &item.element) {
                Some(v) => v,
                None => continue,
            },
            None => item.element.clone(),
        };
        if o.alpha {
            if o.by.is_some() {
                item.by = Some(by_value);
            }
        } else {
            match parse_weight(&by_value) {
                Some(score) => item.score = score,
                None => converted = false,
            }
        }
    }
    converted
}

/// Sorts as Redis does: numerically with ties broken by the elements as binary strings, or
/// ALPHA by strcoll() (C strings: they end at the first NUL; a byte-order locale is assumed)
/// unless it stores them, then as binary strings. Its qsort (glibc's merge sort) is stable, as
/// this sort is, so ties keep the input order.
fn sort_items(o: &Options<'_>, items: &mut [Item]) {
    let c_strings = o.store.is_none();
    let text = |b: &[u8]| -> usize {
        if c_strings {
            b.iter().position(|&c| c == 0).unwrap_or(b.len())
        } else {
            b.len()
        }
    };
    let (alpha, by, desc) = (o.alpha, o.by.is_some(), o.desc);
    items.sort_by(|a, b| {
        let cmp = if !alpha {
            a.score
                .partial_cmp(&b.score)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.element.cmp(&b.element))
        } else if by {
            match (&a.by, &b.by) {
                (None, None) => std::cmp::Ordering::Equal,
                (None, Some(_)) => std::cmp::Ordering::Less,
                (Some(_), None) => std::cmp::Ordering::Greater,
                (Some(x), Some(y)) => x[..text(x)].cmp(&y[..text(y)]),
            }
        } else {
            a.element[..text(&a.element)].cmp(&b.element[..text(&b.element)])
        };
        if desc { cmp.reverse() } else { cmp }
    });
}

/// Replies the sorted range, each element or what its GET patterns find.
fn reply_sorted(ctx: &mut Ctx<'_, '_>, gets: &[&[u8]], range: &[Item]) {
    ctx.out.array_len(range.len() * gets.len().max(1));
    for item in range {
        if gets.is_empty() {
            ctx.out.bulk(&item.element);
        }
        for pattern in gets {
            match lookup_by_pattern(ctx, pattern, &item.element) {
                Some(v) => ctx.out.bulk(&v),
                None => ctx.out.null(),
            }
        }
    }
}

/// SORT … STORE: the sorted range (or what its GET patterns find) becomes a list at `dst`; an
/// empty result deletes `dst`.
fn store_sorted(ctx: &mut Ctx<'_, '_>, dst: &[u8], gets: &[&[u8]], range: Vec<Item>) {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for item in range {
        if gets.is_empty() {
            out.push(item.element);
            continue;
        }
        for pattern in gets {
            out.push(lookup_by_pattern(ctx, pattern, &item.element).unwrap_or_default());
        }
    }
    let event = (crate::notify::class::LIST, "sortstore");
    ctx.store_result(dst, out.len(), event, |shard, db| {
        let mut b = shard.builder::<List>()?;
        for v in &out {
            b.push_back(v);
        }
        b.finish(db, dst, None)
    });
}
