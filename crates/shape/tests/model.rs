//! Model-based randomized test: HSET/HDEL/HGET/HGETALL on many records, against an ordered
//! `HashMap<key, Vec<(field, value)>>` model. A record whose shape refuses a transition falls back
//! to a plain list of pairs (as the store falls back to SmallMap/PageHash), and keeps being checked
//! against the model. Seeds switch the field-name pool between record-like (few shared names) and
//! data-like (unique names), and operation kinds on and off.

// Both outcomes of each model step are spelled out as match arms: clearer than if-let-else here.
#![allow(clippy::single_match_else)]

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shape::Str;
use shape::record;
use shape::{ShapeLimits, ShapeTree};
use std::collections::HashMap;

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

enum Hash {
    Shaped(Vec<u8>),
    Plain(Pairs),
}

fn plain_of(tree: &ShapeTree, rec: &[u8]) -> Pairs {
    record::iter(tree, rec)
        .map(|(f, v)| (f.to_vec(), v.to_vec()))
        .collect()
}

fn random_field(rng: &mut SmallRng, unique_share: f64) -> Vec<u8> {
    const COMMON: [&str; 8] = [
        "name",
        "email",
        "age",
        "city",
        "created",
        "zip",
        "",
        "a-much-longer-field-name",
    ];
    if rng.gen_bool(unique_share) {
        format!("f{}", rng.gen_range(0..100_000)).into_bytes()
    } else {
        COMMON[rng.gen_range(0..COMMON.len())].as_bytes().to_vec()
    }
}

fn random_value(rng: &mut SmallRng) -> Vec<u8> {
    match rng.gen_range(0..6) {
        0 => rng.gen_range(0..128).to_string().into_bytes(),
        1 => rng.gen_range(i64::MIN..=i64::MAX).to_string().into_bytes(),
        2 => format!("0{}", rng.gen_range(0..100)).into_bytes(),
        3 => Vec::new(),
        4 => (0..rng.gen_range(60..300))
            .map(|_| rng.r#gen::<u8>())
            .collect(),
        _ => (0..rng.gen_range(1..20))
            .map(|_| rng.gen_range(b'a'..=b'z'))
            .collect(),
    }
}

/// Returns (fallbacks, records still shaped at the end) so the caller can check both paths ran.
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn run(seed: u64) -> (usize, usize) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let unique_share = [0.0, 0.02, 0.3, 1.0][rng.gen_range(0..4)];
    let limits = ShapeLimits {
        transitions_max: rng.gen_range(1..=16),
        fields_max: rng.gen_range(2..=64),
        shapes_max: rng.gen_range(8..=4096),
        ..ShapeLimits::default()
    };
    let shapes_max = limits.shapes_max;
    let mut tree = ShapeTree::new(limits);
    let enabled = [
        true,
        rng.gen_bool(0.8),
        rng.gen_bool(0.8),
        rng.gen_bool(0.5),
    ];
    let mut hashes: HashMap<u32, Hash> = HashMap::new();
    let mut model: HashMap<u32, Pairs> = HashMap::new();
    for _ in 0..20_000 {
        let key = rng.gen_range(0..200u32);
        let op = rng.gen_range(0..4);
        if !enabled[op] {
            continue;
        }
        let field = random_field(&mut rng, unique_share);
        match op {
            0 => {
                let value = random_value(&mut rng);
                let pairs = model.entry(key).or_default();
                let expect_new = match pairs.iter_mut().find(|(f, _)| *f == field) {
                    Some(pair) => {
                        pair.1.clone_from(&value);
                        false
                    }
                    None => {
                        pairs.push((field.clone(), value.clone()));
                        true
                    }
                };
                let hash = hashes
                    .entry(key)
                    .or_insert_with(|| Hash::Shaped(record::empty()));
                let is_new = match hash {
                    Hash::Shaped(rec) => match record::set(&mut tree, rec, &field, &value) {
                        Ok(is_new) => is_new,
                        Err(_) => {
                            let mut plain = plain_of(&tree, rec);
                            record::release(&mut tree, rec);
                            plain.push((field.clone(), value.clone()));
                            *hash = Hash::Plain(plain);
                            true
                        }
                    },
                    Hash::Plain(pairs) => match pairs.iter_mut().find(|(f, _)| *f == field) {
                        Some(pair) => {
                            pair.1 = value;
                            false
                        }
                        None => {
                            pairs.push((field, value));
                            true
                        }
                    },
                };
                assert_eq!(is_new, expect_new, "seed {seed}");
            }
            1 => {
                let expected = model.get_mut(&key).and_then(|pairs| {
                    let i = pairs.iter().position(|(f, _)| *f == field)?;
                    Some(pairs.remove(i))
                });
                let removed = match hashes.get_mut(&key) {
                    None => false,
                    Some(Hash::Shaped(rec)) => match record::remove(&mut tree, rec, &field) {
                        Ok(removed) => removed,
                        Err(_) => {
                            let mut plain = plain_of(&tree, rec);
                            record::release(&mut tree, rec);
                            plain.retain(|(f, _)| *f != field);
                            hashes.insert(key, Hash::Plain(plain));
                            true
                        }
                    },
                    Some(Hash::Plain(pairs)) => {
                        let before = pairs.len();
                        pairs.retain(|(f, _)| *f != field);
                        pairs.len() < before
                    }
                };
                assert_eq!(removed, expected.is_some(), "seed {seed}");
                if model.get(&key).is_some_and(Vec::is_empty) {
                    model.remove(&key);
                    if let Some(Hash::Shaped(rec)) = hashes.remove(&key) {
                        record::release(&mut tree, &rec);
                    }
                }
            }
            2 => {
                let expected = model
                    .get(&key)
                    .and_then(|pairs| pairs.iter().find(|(f, _)| *f == field))
                    .map(|(_, v)| v.clone());
                let got = match hashes.get(&key) {
                    None => None,
                    Some(Hash::Shaped(rec)) => {
                        record::get(&mut tree, rec, &field).map(|v: Str| v.to_vec())
                    }
                    Some(Hash::Plain(pairs)) => pairs
                        .iter()
                        .find(|(f, _)| *f == field)
                        .map(|(_, v)| v.clone()),
                };
                assert_eq!(got, expected, "seed {seed}");
            }
            _ => {
                let expected = model.get(&key).cloned().unwrap_or_default();
                let got = match hashes.get(&key) {
                    None => Vec::new(),
                    Some(Hash::Shaped(rec)) => plain_of(&tree, rec),
                    Some(Hash::Plain(pairs)) => pairs.clone(),
                };
                assert_eq!(got, expected, "seed {seed}: HGETALL order");
            }
        }
        assert!(tree.len() <= shapes_max, "tree exceeded its bound");
    }
    let fallbacks = tree.stats().too_complex as usize;
    let mut shaped = 0;
    for (_, hash) in hashes.drain() {
        if let Hash::Shaped(rec) = hash {
            shaped += usize::from(record::len(&tree, &rec) > 0);
            record::release(&mut tree, &rec);
        }
    }
    assert!(
        tree.is_empty(),
        "seed {seed}: {} shapes left after deleting every hash",
        tree.len()
    );
    (fallbacks, shaped)
}

#[test]
fn records_agree_with_model() {
    let (mut fallbacks, mut shaped) = (0, 0);
    for seed in 0..40 {
        let (f, s) = run(seed);
        fallbacks += f;
        shaped += s;
    }
    assert!(
        fallbacks > 100 && shaped > 1000,
        "fallbacks {fallbacks}, shaped {shaped}"
    );
}

/// 1,000,000 hashes whose field names are all unique: nearly all must fall back, the tree must stay
/// bounded, and the total must stay within 1.1× of storing every hash unshaped.
#[test]
fn unique_field_names_stay_bounded() {
    let mut tree = ShapeTree::default();
    let mut shaped_bytes = 0usize;
    let mut plain_bytes = 0usize;
    let mut unshaped_bytes = 0usize;
    let mut records = Vec::new();
    for i in 0..1_000_000u32 {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..3)
            .map(|j| {
                (
                    format!("u{i}:{j}").into_bytes(),
                    format!("{}", i * 7 + j).into_bytes(),
                )
            })
            .collect();
        // The unshaped encoding: a listpack-like run of (len, field, len, value).
        let packed: usize = pairs.iter().map(|(f, v)| 2 + f.len() + v.len()).sum();
        unshaped_bytes += packed;
        let mut rec = record::empty();
        let mut fell_back = false;
        for (f, v) in &pairs {
            if record::set(&mut tree, &mut rec, f, v).is_err() {
                fell_back = true;
                break;
            }
        }
        if fell_back {
            record::release(&mut tree, &rec);
            plain_bytes += packed;
        } else {
            shaped_bytes += rec.len();
            records.push(rec);
        }
    }
    let total = shaped_bytes + plain_bytes + tree.memory_bytes();
    assert!(tree.len() <= 1 + 16 * 3, "tree grew to {}", tree.len());
    assert!(
        total as f64 <= 1.1 * unshaped_bytes as f64,
        "shaped path {total} bytes vs unshaped {unshaped_bytes}"
    );
    for rec in records {
        record::release(&mut tree, &rec);
    }
    assert!(tree.is_empty());
}
