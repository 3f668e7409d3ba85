//! Seeded model-based tests of the zset encodings against a `BTreeMap` model: the counted B+tree
//! (ranks, selects, predicates, both iteration directions), the packed encoding and the index
//! (map + tree) through `Shard::update::<ZSet>` (one key that converts by size, one kept as the
//! index from the start), and the builder's choice by size. `Shard::validate` runs after every
//! step. Set `DENSEKV_SEED` to explore other seeds.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap, HashSet};
use store::types::zset::ZSetObj;
use store::types::zset_tree::{Tree, cmp_key};
use store::{Edit, Encoding, Limits, Shard, ShardConfig, StoreError, ZSet, ZSetView};

fn seed() -> u64 {
    std::env::var("DENSEKV_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7)
}

/// The model: member → score, and the sorted (score, member) list derived from it.
fn sorted(model: &BTreeMap<Vec<u8>, f64>) -> Vec<(f64, Vec<u8>)> {
    let mut v: Vec<(f64, Vec<u8>)> = model.iter().map(|(m, s)| (*s, m.clone())).collect();
    v.sort_by(|a, b| cmp_key(a.0, &a.1, b.0, &b.1));
    v
}

fn member(rng: &mut SmallRng, space: u32) -> Vec<u8> {
    let n = rng.gen_range(0..space);
    let mut m = format!("m{n}").into_bytes();
    if rng.gen_ratio(1, 20) {
        m.extend(std::iter::repeat_n(b'x', rng.gen_range(50..200)));
    }
    m
}

fn score(rng: &mut SmallRng) -> f64 {
    match rng.gen_range(0..7) {
        0 => f64::from(rng.gen_range(-5..5)),
        6 => f64::from(rng.gen_range(-50_000..50_000)) / 100.0,
        1 => rng.gen_range(-1e6..1e6),
        2 => f64::INFINITY,
        3 => -0.0,
        _ => f64::from(rng.gen_range(0..1000)),
    }
}

fn check_view(view: ZSetView<'_>, model: &BTreeMap<Vec<u8>, f64>, rng: &mut SmallRng) {
    let want = sorted(model);
    assert_eq!(view.len(), want.len());
    let got: Vec<(f64, Vec<u8>)> = view.iter(0, false).map(|(s, m)| (s, m.to_vec())).collect();
    assert_eq!(got, want);
    if want.is_empty() {
        return;
    }
    for _ in 0..5 {
        let r = rng.gen_range(0..want.len());
        let (s, m) = &want[r];
        assert_eq!(view.rank(m), Some((r, *s)));
        assert_eq!(view.score(m), Some(*s));
        let fwd: Vec<(f64, Vec<u8>)> = view
            .iter(r, false)
            .take(40)
            .map(|(s, m)| (s, m.to_vec()))
            .collect();
        assert_eq!(fwd, want[r..(r + 40).min(want.len())]);
        let rev: Vec<(f64, Vec<u8>)> = view
            .iter(r, true)
            .take(300)
            .map(|(s, m)| (s, m.to_vec()))
            .collect();
        let mut expect: Vec<(f64, Vec<u8>)> = want[r.saturating_sub(299)..=r].to_vec();
        expect.reverse();
        assert_eq!(rev, expect);
        let bound = score(rng);
        let before = view.count_before(|s, _| s >= bound);
        assert_eq!(before, want.iter().filter(|(s, _)| *s < bound).count());
    }
    assert_eq!(view.score(b"absent"), None);
    // A whole ZSCAN returns every member once, with its score, whatever the step count.
    let (mut cursor, mut scanned) = (0, Vec::new());
    let count = rng.gen_range(1..30);
    loop {
        cursor = view.scan(cursor, count, |m, s| scanned.push((s, m.to_vec())));
        if cursor == 0 {
            break;
        }
    }
    scanned.sort_by(|a, b| cmp_key(a.0, &a.1, b.0, &b.1));
    assert_eq!(scanned, want);
}

/// Applies a move report to the model of which leaf holds each member.
fn follow(leaves: &mut HashMap<Vec<u8>, u32>) -> impl FnMut(&[u8], u32, u32) + '_ {
    |m: &[u8], from: u32, to: u32| {
        let at = leaves.get_mut(m).expect("a moved member is in the tree");
        assert_eq!(*at, from, "moved from a leaf that did not hold it");
        *at = to;
    }
}

/// The tree against the model, with the leaf of every member followed through the moves the
/// tree reports (what the member index relies on): after every check, each member is where the
/// reports say.
#[test]
fn tree_matches_model() {
    let mut rng = SmallRng::seed_from_u64(seed());
    for round in 0..6 {
        let mut tree = Tree::default();
        let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
        let mut leaves: HashMap<Vec<u8>, u32> = HashMap::new();
        let space = [10, 100, 2_000, 20_000, 5_000, 300][round];
        let remove_bias = rng.gen_range(0.2..0.6);
        // Some rounds insert in runs of ascending scores (the uneven splits).
        let ascending = round % 2 == 1;
        let mut next_score = 0.0;
        for step in 0..30_000 {
            let m = member(&mut rng, space);
            let s = if ascending && rng.gen_bool(0.8) {
                next_score += 1.0;
                next_score
            } else {
                score(&mut rng)
            };
            if rng.gen_bool(remove_bias) {
                if let Some(s) = model.remove(&m) {
                    tree.remove(s, &m, &mut follow(&mut leaves));
                    leaves.remove(&m);
                }
            } else if let Some(old) = model.get(&m).copied() {
                tree.remove(old, &m, &mut follow(&mut leaves));
                let leaf = tree.insert(s, &m, &mut follow(&mut leaves));
                leaves.insert(m.clone(), leaf);
                model.insert(m, s);
            } else {
                let leaf = tree.insert(s, &m, &mut follow(&mut leaves));
                leaves.insert(m.clone(), leaf);
                model.insert(m, s);
            }
            if step % 1_000 == 0 {
                tree.validate().unwrap();
                for (m, &leaf) in &leaves {
                    assert_eq!(
                        tree.find_in_leaf(leaf, m).map(|f| f.0),
                        model.get(m).copied()
                    );
                }
            }
            assert_eq!(tree.len(), model.len());
        }
        tree.validate().unwrap();
        let want = sorted(&model);
        for (r, (s, m)) in want.iter().enumerate().step_by(7) {
            assert_eq!(tree.rank(*s, m), r);
            assert_eq!(tree.get(tree.select(r)), (*s, m.as_slice()));
        }
        // Drain it completely from both ends.
        let mut left = want;
        while !left.is_empty() {
            let (s, m) = if rng.gen_bool(0.5) {
                left.remove(0)
            } else {
                left.pop().unwrap()
            };
            tree.remove(s, &m, &mut follow(&mut leaves));
            leaves.remove(&m);
            if left.len().is_multiple_of(97) {
                tree.validate().unwrap();
                for (m, &leaf) in &leaves {
                    assert!(tree.find_in_leaf(leaf, m).is_some());
                }
            }
        }
        tree.validate().unwrap();
        assert!(tree.is_empty());
        assert_eq!(tree.first(), None);
    }
}

/// Scores keep their exact value and sign in the leaves' three score forms (integer, decimal and
/// f64).
#[test]
fn tree_keeps_scores_exact() {
    let scores = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        1.5,
        9_007_199_254_740_992.0,
        9_007_199_254_740_994.0,
        -9_007_199_254_740_992.0,
        1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE,
        0.1,
        -2.5,
        12.99,
        0.001,
        1e-4,
        4.567,
        1_700_000_000.123,
        -1_700_000_000.5,
        9_007_199_254_740.5,
        9_007_199_254_740.993,
        -0.5,
        1.0 / 3.0,
    ];
    let mut tree = Tree::default();
    for (i, &s) in scores.iter().enumerate() {
        tree.insert(s, format!("m{i}").as_bytes(), &mut |_, _, _| {});
    }
    tree.validate().unwrap();
    for (i, &s) in scores.iter().enumerate() {
        let leaf = tree.leaf_ids().next().unwrap();
        let (got, _) = tree.find_in_leaf(leaf, format!("m{i}").as_bytes()).unwrap();
        assert_eq!(got.to_bits(), s.to_bits(), "score {s}");
    }
}

/// One model operation on a zset edit, returning what it answered (for comparing two keys).
fn apply(z: &mut Edit<'_, ZSet>, op: &Op) -> Result<Answer, StoreError> {
    Ok(match op {
        Op::Set(m, s) => {
            match z.score(m) {
                Some(old) => z.update(m, old, *s)?,
                None => z.insert(m, *s)?,
            }
            Answer::None
        }
        Op::Remove(m) => Answer::Score(z.remove(m)),
        Op::Pop(max) => Answer::Popped(z.pop(*max, |s, m| (s, m.to_vec()))),
        Op::RemoveRanks(a, b) => Answer::Count(z.remove_ranks(*a, *b)),
    })
}

#[derive(Debug)]
enum Op {
    Set(Vec<u8>, f64),
    Remove(Vec<u8>),
    Pop(bool),
    RemoveRanks(usize, usize),
}

#[derive(Debug, PartialEq)]
enum Answer {
    None,
    Score(Option<f64>),
    Popped(Option<(f64, Vec<u8>)>),
    Count(usize),
}

fn random_op(rng: &mut SmallRng, space: u32, len: usize) -> Op {
    match rng.gen_range(0..10) {
        0..=5 => Op::Set(member(rng, space), score(rng)),
        6 | 7 => Op::Remove(member(rng, space)),
        8 => Op::Pop(rng.gen_bool(0.5)),
        _ if len == 0 => Op::Pop(false),
        _ => {
            let a = rng.gen_range(0..len);
            Op::RemoveRanks(a, rng.gen_range(a..len.min(a + 20)))
        }
    }
}

/// What the model answers to `op`, applying it.
fn model_apply(model: &mut BTreeMap<Vec<u8>, f64>, op: &Op) -> Answer {
    match op {
        Op::Set(m, s) => {
            model.insert(m.clone(), *s);
            Answer::None
        }
        Op::Remove(m) => Answer::Score(model.remove(m)),
        Op::Pop(max) => {
            let want = sorted(model);
            let got = if *max { want.last() } else { want.first() }.cloned();
            if let Some((_, m)) = &got {
                model.remove(m);
            }
            Answer::Popped(got)
        }
        Op::RemoveRanks(a, b) => {
            let gone: Vec<(f64, Vec<u8>)> = sorted(model).drain(*a..=*b).collect();
            for (_, m) in &gone {
                model.remove(m);
            }
            Answer::Count(gone.len())
        }
    }
}

#[test]
fn packed_and_index_match_model() {
    let mut rng = SmallRng::seed_from_u64(seed() ^ 0x5eed);
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    for round in 0..8 {
        let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
        let space = [5, 40, 150, 1_000, 60, 130, 10_000, 20][round];
        for step in 0..2_000 {
            let op = random_op(&mut rng, space, model.len());
            let want = model_apply(&mut model, &op);
            for key in [&b"natural"[..], b"indexed"] {
                let got = shard
                    .update::<ZSet, _>(0, key, 0, true, |z| {
                        if key == b"indexed" {
                            z.force_index()?;
                        }
                        apply(z, &op)
                    })
                    .unwrap()
                    .unwrap();
                assert_eq!(got, want, "round {round} step {step}: {op:?} on {key:?}");
                shard
                    .validate()
                    .unwrap_or_else(|e| panic!("step {step}: {e}"));
            }
            let natural = shard.encoding(0, b"natural", 0);
            let longest = model.keys().map(Vec::len).max().unwrap_or(0);
            if !model.is_empty() && model.len() <= 128 && longest <= 64 {
                // Never converted back: packed unless it once crossed a threshold.
                assert!(natural.is_some());
            }
            if step % 100 == 0 {
                for key in [&b"natural"[..], b"indexed"] {
                    shard
                        .read::<ZSet, _>(0, key, 0, |z| check_view(z, &model, &mut rng))
                        .unwrap();
                }
            }
        }
        shard.remove(0, b"natural", 0);
        shard.remove(0, b"indexed", 0);
        shard.validate().unwrap();
    }
}

#[test]
fn builder_chooses_the_encoding_by_size() {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    let cases: [(usize, usize, Encoding); 5] = [
        (1, 5, Encoding::ZSetPacked),
        (128, 5, Encoding::ZSetPacked),
        (129, 5, Encoding::ZSetIndex),
        (3, 64, Encoding::ZSetPacked),
        (3, 65, Encoding::ZSetIndex),
    ];
    for (count, len, want) in cases {
        let entries: Vec<(Vec<u8>, f64)> = (0..count)
            .map(|i| {
                let mut m = format!("{i:05}").into_bytes();
                m.resize(len.max(5), b'y');
                (m, i as f64 / 3.0)
            })
            .collect();
        let mut b = shard.zset_builder(count, len).unwrap();
        for (m, s) in &entries {
            assert!(b.insert(m, *s).unwrap());
        }
        b.finish(0, b"k", None).unwrap();
        assert_eq!(
            shard.encoding(0, b"k", 0),
            Some(want),
            "{count} members of {len} bytes"
        );
        let got = shard.read::<ZSet, _>(0, b"k", 0, |z| z.to_vec()).unwrap();
        assert_eq!(got, Some(entries));
        shard.validate().unwrap();
    }
    // A packed builder fed past the threshold converts, as ZRANGESTORE's destination does.
    let mut b = shard.zset_builder(0, 0).unwrap();
    for i in 0..200 {
        b.insert(format!("m{i:03}").as_bytes(), -0.0).unwrap();
    }
    b.finish(0, b"k", None).unwrap();
    assert_eq!(shard.encoding(0, b"k", 0), Some(Encoding::ZSetIndex));
    let negative_zeros = shard
        .read::<ZSet, _>(0, b"k", 0, |z| {
            z.iter(0, false)
                .filter(|(s, _)| s.is_sign_negative())
                .count()
        })
        .unwrap();
    // The first 128 went through the packed form, which stores -0 as 0.
    assert_eq!(negative_zeros, Some(200 - 128));
    assert!(shard.remove(0, b"k", 0));
    shard.validate().unwrap();
}

/// Thresholds changed every 500 steps (as CONFIG SET changes them): OBJECT ENCODING follows
/// Redis's rule, listpack until an insert leaves more than `zset-max-listpack-entries` members or
/// adds one longer than `zset-max-listpack-value`, then skiplist until the key is gone.
#[test]
fn packed_follows_configured_thresholds() {
    let mut rng = SmallRng::seed_from_u64(seed() ^ 0x1177);
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    let mut limits = Limits::default();
    let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
    let mut passed = false;
    let mut seen = [false; 2];
    for step in 0..20_000 {
        if step % 500 == 0 {
            limits.zset_listpack_entries = [0, 1, 5, 40, 128, 300][rng.gen_range(0..6)];
            limits.zset_listpack_value = [0, 3, 64, 100, 300][rng.gen_range(0..5)];
            shard.set_limits(limits);
        }
        let space = [5, 40, 150, 1_000][(step / 2_000) % 4];
        let op = random_op(&mut rng, space, model.len());
        if let Op::Set(m, _) = &op
            && !model.contains_key(m)
        {
            passed |= model.len() + 1 > limits.zset_listpack_entries
                || m.len() > limits.zset_listpack_value;
        }
        let want = model_apply(&mut model, &op);
        let got = shard
            .update::<ZSet, _>(0, b"z", 0, true, |z| apply(z, &op))
            .unwrap()
            .unwrap();
        assert_eq!(got, want, "step {step}: {op:?}");
        if model.is_empty() {
            passed = false;
        } else {
            let name = if passed { "skiplist" } else { "listpack" };
            assert_eq!(
                shard.object_encoding(0, b"z", 0),
                Some(name),
                "step {step}: {op:?} under {limits:?}"
            );
            seen[usize::from(passed)] = true;
        }
        shard
            .validate()
            .unwrap_or_else(|e| panic!("step {step}: {e}"));
    }
    assert_eq!(seen, [true, true], "both encodings seen");
}

/// Inserts in two interleaved ascending runs (the big-zset benchmark's pattern: score i for
/// even i, 1.5 i for odd i) keep leaves nearly full: the uneven splits and the shifts into
/// siblings leave ≥ 17 entries of ~25 B per 512-byte leaf, where even splits alone left 12.
#[test]
fn ordered_runs_fill_leaves() {
    let mut tree = Tree::default();
    let n = 200_000u32;
    for i in 0..n {
        let s = if i % 2 == 1 {
            f64::from(i) * 1.5
        } else {
            f64::from(i)
        };
        tree.insert(s, format!("member:{i:012}").as_bytes(), &mut |_, _, _| {});
    }
    tree.validate().unwrap();
    let per_leaf = f64::from(n) / tree.leaf_ids().count() as f64;
    let bytes_per_member = tree.memory_bytes() as f64 / f64::from(n);
    assert!(per_leaf >= 17.0, "{per_leaf:.1} entries per leaf");
    assert!(
        bytes_per_member <= 32.0,
        "{bytes_per_member:.1} B per member"
    );
}

/// ZSCAN's guarantee: a member present for the whole scan is returned, however the index grows
/// and shrinks between steps (its cursor is a fingerprint, the same at every table size).
#[test]
fn scan_returns_stable_members_across_resizes() {
    let mut z = ZSetObj::new();
    for i in 0..2_000 {
        z.insert(format!("s{i}").as_bytes(), f64::from(i));
    }
    let (mut seen, mut churn) = (HashSet::new(), Vec::new());
    let (mut cursor, mut step) = (0, 0);
    loop {
        cursor = z.scan(cursor, 10, |m, _| {
            seen.insert(m.to_vec());
        });
        if step < 60 {
            for j in 0..200 {
                let m = format!("t{step}-{j}").into_bytes();
                z.insert(&m, f64::from(j) / 4.0);
                churn.push(m);
            }
        } else {
            for m in churn.drain(..churn.len().min(300)) {
                assert!(z.remove(&m).is_some());
            }
        }
        step += 1;
        if cursor == 0 {
            break;
        }
    }
    z.validate().unwrap();
    assert!(
        step > 100,
        "the scan outlived the growth and the shrink ({step} steps)"
    );
    for i in 0..2_000 {
        assert!(seen.contains(format!("s{i}").as_bytes()), "s{i} missed");
    }
}
