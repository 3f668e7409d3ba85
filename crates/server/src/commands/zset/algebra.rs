//! The algebra of sorted sets: ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD, with
//! WEIGHTS and AGGREGATE; a plain set is an input whose members all score 1.

// Scores are compared exactly, as Redis compares its doubles (-0 == 0, no epsilon).
#![allow(clippy::float_cmp)]

use super::range::reply_entries;
use super::{parse_long, parse_long_in};
use crate::command::Ctx;
use crate::commands::args::is;
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
            Err(e) => return ctx.store_error(e),
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
    result.sort_by(store::types::zset::order);
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

/// Stores a computed result (rank order) at `dst` and replies its size; an empty result deletes
/// `dst`. Packed when it fits, as Redis converts its result (`zsetConvertToListpackIfNeeded`).
fn store_result(ctx: &mut Ctx<'_, '_>, dst: &[u8], entries: &[(Vec<u8>, f64)]) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let shard = ctx.shard(dst);
    if entries.is_empty() {
        if shard.remove(db, dst, now) {
            ctx.touch(db, dst);
        }
        return ctx.out.integer(0);
    }
    let longest = entries.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
    let stored = shard
        .zset_builder(entries.len(), longest)
        .and_then(|mut b| {
            for (m, s) in entries {
                b.insert(m, *s)?;
            }
            b.finish(db, dst, None)
        });
    if let Err(e) = stored {
        return ctx.store_error(e);
    }
    ctx.touch(db, dst);
    ctx.signal_ready(db, dst);
    ctx.out.integer(entries.len() as i64);
}
