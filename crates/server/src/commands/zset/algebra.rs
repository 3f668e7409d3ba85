//! The algebra of sorted sets: ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD, with
//! WEIGHTS and AGGREGATE; a plain set is an input whose members all score 1.

// Scores are compared exactly, as Redis compares its doubles (-0 == 0, no epsilon).
#![allow(clippy::float_cmp)]

use super::range::reply_entries;
use super::{parse_long, parse_long_in};
use crate::command::Ctx;
use crate::commands::args::is;
use crate::notify::class::ZSET as ZSET_CLASS;
use crate::number::parse_score;
use std::collections::{HashMap, HashSet};
use store::{Kind, Set, StoreError, ZSet};

/// A zset's entries copied out: (member, score) in rank order.
type Entries = Vec<(Vec<u8>, f64)>;

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
fn read_input(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Result<Option<Entries>, StoreError> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let shard = ctx.shard(key);
    match shard.kind(db, key, now) {
        None => Ok(None),
        Some(Kind::ZSet) => shard.read::<ZSet, _>(db, key, now, |z| z.to_vec()),
        Some(Kind::Set) => shard.read::<Set, _>(db, key, now, |s| {
            let mut members = Vec::with_capacity(s.len());
            s.for_each(|m| members.push((m.to_vec(), 1.0)));
            members
        }),
        Some(_) => Err(StoreError::WrongType),
    }
}

/// The options after the keys: WEIGHTS (one per input, stored beside it), AGGREGATE,
/// WITHSCORES and ZINTERCARD's LIMIT.
#[derive(Clone, Copy, Debug)]
struct SetOpOptions {
    how: Aggregate,
    withscores: bool,
    /// ZINTERCARD's LIMIT (0: none).
    limit: i64,
}

/// The command's form: which operation, whether it stores (`dst`) or only counts.
#[derive(Clone, Copy, Debug)]
struct Form<'a> {
    op: SetOp,
    dst: Option<&'a [u8]>,
    card_only: bool,
}

/// Reads the options from `args[from..]`, setting each input's weight; replies the error and
/// returns `None` on a bad one.
fn setop_options(
    ctx: &mut Ctx<'_, '_>,
    args: &[&[u8]],
    from: usize,
    form: Form<'_>,
    inputs: &mut [(Entries, f64)],
) -> Option<SetOpOptions> {
    let algebra = form.op != SetOp::Diff && !form.card_only;
    let (mut o, mut j) = (
        SetOpOptions {
            how: Aggregate::Sum,
            withscores: false,
            limit: 0,
        },
        from,
    );
    while j < args.len() {
        let remaining = args.len() - j;
        if algebra && remaining > inputs.len() && is(args[j], "weights") {
            for (input, w) in inputs.iter_mut().zip(&args[j + 1..]) {
                let Some(w) = parse_score(w) else {
                    ctx.error("ERR weight value is not a float");
                    return None;
                };
                input.1 = w;
            }
            j += 1 + inputs.len();
        } else if algebra && remaining >= 2 && is(args[j], "aggregate") {
            o.how = match args[j + 1] {
                a if is(a, "sum") => Aggregate::Sum,
                a if is(a, "min") => Aggregate::Min,
                a if is(a, "max") => Aggregate::Max,
                _ => {
                    ctx.syntax_error();
                    return None;
                }
            };
            j += 2;
        } else if form.dst.is_none() && !form.card_only && is(args[j], "withscores") {
            o.withscores = true;
            j += 1;
        } else if form.card_only && remaining >= 2 && is(args[j], "limit") {
            let too_low = Some("ERR LIMIT can't be negative");
            o.limit = parse_long_in(ctx, args[j + 1], 0, i64::MAX, too_low)?;
            j += 2;
        } else {
            ctx.syntax_error();
            return None;
        }
    }
    Some(o)
}

/// The inputs named by `numkeys` at `args[numkeys_at]` and the keys after it, each with weight 1;
/// replies the error and returns `None` on a bad count or a key of another type.
fn setop_inputs(
    ctx: &mut Ctx<'_, '_>,
    args: &[&[u8]],
    numkeys_at: usize,
) -> Option<Vec<(Entries, f64)>> {
    let setnum = parse_long(ctx, args[numkeys_at], None)?;
    if setnum < 1 {
        let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
        ctx.error(&format!(
            "ERR at least 1 input key is needed for '{name}' command"
        ));
        return None;
    }
    if setnum > (args.len() - numkeys_at - 1) as i64 {
        ctx.syntax_error();
        return None;
    }
    let keys = &args[numkeys_at + 1..=numkeys_at + setnum as usize];
    let mut inputs = Vec::with_capacity(keys.len());
    // Every input is looked up (`lookupKeyRead`: a miss is a `keymiss`) before the options
    // are read, as Redis does.
    for key in keys {
        match read_input(ctx, key) {
            Err(e) => {
                ctx.store_error(e);
                return None;
            }
            Ok(v) => {
                if v.is_none() {
                    crate::commands::keys::keymiss(ctx, key);
                }
                inputs.push((v.unwrap_or_default(), 1.0));
            }
        }
    }
    Some(inputs)
}

fn setop_generic(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], numkeys_at: usize, form: Form<'_>) {
    let Some(mut inputs) = setop_inputs(ctx, args, numkeys_at) else {
        return;
    };
    let from = numkeys_at + 1 + inputs.len();
    let Some(o) = setop_options(ctx, args, from, form, &mut inputs) else {
        return;
    };
    if form.op != SetOp::Diff {
        inputs.sort_by_key(|(v, _)| v.len());
    }
    let mut result = match form.op {
        SetOp::Inter if form.card_only => {
            return ctx.out.integer(inter_card(&inputs, o.limit));
        }
        SetOp::Inter => intersection(&inputs, o.how),
        SetOp::Union => union(&inputs, o.how),
        SetOp::Diff => difference(&inputs),
    };
    result.sort_by(store::zset_order);
    match form.dst {
        Some(d) => store_result(ctx, d, form.op, &result),
        None => reply_entries(
            &mut ctx.out,
            result.len(),
            o.withscores,
            result.iter().map(|(m, s)| (*s, m.as_slice())),
        ),
    }
}

/// The other inputs as member → score lookups.
fn lookups(inputs: &[(Entries, f64)]) -> Vec<HashMap<&[u8], f64>> {
    inputs
        .iter()
        .map(|(v, _)| v.iter().map(|(m, s)| (m.as_slice(), *s)).collect())
        .collect()
}

/// A member of the first (smallest) input with its aggregated score, if every input holds it.
fn in_all(
    inputs: &[(Entries, f64)],
    others: &[HashMap<&[u8], f64>],
    (m, s): &(Vec<u8>, f64),
    how: Aggregate,
) -> Option<f64> {
    let mut score = inputs[0].1 * s;
    if score.is_nan() {
        score = 0.0;
    }
    for (i, lookup) in others.iter().enumerate() {
        aggregate(&mut score, lookup.get(m.as_slice())? * inputs[i + 1].1, how);
    }
    Some(score)
}

fn intersection(inputs: &[(Entries, f64)], how: Aggregate) -> Entries {
    let others = lookups(&inputs[1..]);
    inputs[0]
        .0
        .iter()
        .filter_map(|e| in_all(inputs, &others, e, how).map(|s| (e.0.clone(), s)))
        .collect()
}

/// ZINTERCARD: the size of the intersection, counting no further than `limit` (0: no limit).
fn inter_card(inputs: &[(Entries, f64)], limit: i64) -> i64 {
    let others = lookups(&inputs[1..]);
    let mut card = 0;
    for e in &inputs[0].0 {
        if in_all(inputs, &others, e, Aggregate::Sum).is_some() {
            card += 1;
            if limit > 0 && card >= limit {
                break;
            }
        }
    }
    card
}

fn union(inputs: &[(Entries, f64)], how: Aggregate) -> Entries {
    let mut acc: HashMap<&[u8], f64> = HashMap::new();
    for (v, w) in inputs {
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

fn difference(inputs: &[(Entries, f64)]) -> Entries {
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

fn form(op: SetOp, dst: Option<&[u8]>, card_only: bool) -> Form<'_> {
    Form { op, dst, card_only }
}

pub fn zunion(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setop_generic(ctx, args, 1, form(SetOp::Union, None, false));
}

pub fn zinter(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setop_generic(ctx, args, 1, form(SetOp::Inter, None, false));
}

pub fn zdiff(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setop_generic(ctx, args, 1, form(SetOp::Diff, None, false));
}

pub fn zintercard(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setop_generic(ctx, args, 1, form(SetOp::Inter, None, true));
}

pub fn zunionstore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setop_generic(ctx, args, 2, form(SetOp::Union, Some(args[1]), false));
}

pub fn zinterstore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setop_generic(ctx, args, 2, form(SetOp::Inter, Some(args[1]), false));
}

pub fn zdiffstore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    setop_generic(ctx, args, 2, form(SetOp::Diff, Some(args[1]), false));
}

/// Stores a computed result (rank order) at `dst` and replies its size; an empty result deletes
/// `dst`. Packed when it fits, as Redis converts its result (`zsetConvertToListpackIfNeeded`).
fn store_result(ctx: &mut Ctx<'_, '_>, dst: &[u8], op: SetOp, entries: &[(Vec<u8>, f64)]) {
    let longest = entries.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
    let event = match op {
        SetOp::Union => "zunionstore",
        SetOp::Inter => "zinterstore",
        SetOp::Diff => "zdiffstore",
    };
    ctx.store_result(dst, entries.len(), (ZSET_CLASS, event), |shard, db| {
        let mut b = shard.zset_builder(entries.len(), longest)?;
        for (m, s) in entries {
            b.insert(m, *s)?;
        }
        b.finish(db, dst, None)
    });
}
