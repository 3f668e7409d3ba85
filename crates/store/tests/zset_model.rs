//! Seeded model-based tests of the zset encodings against a `BTreeMap` model: the counted B+tree
//! (ranks, selects, predicates, both iteration directions), the index (map + tree), the packed
//! encoding through `ZMut`, and the conversion by size in `store_entries`. Set `DENSEKV_SEED` to
//! explore other seeds.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use store::object::tag;
use store::types::zset::{self, ZMut, ZRef, ZSetObj, packed};
use store::types::zset_tree::{Tree, cmp_key};
use store::{Shard, ShardConfig, Slot, Ttl};

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
    match rng.gen_range(0..6) {
        0 => f64::from(rng.gen_range(-5..5)),
        1 => rng.gen_range(-1e6..1e6),
        2 => f64::INFINITY,
        3 => -0.0,
        _ => f64::from(rng.gen_range(0..1000)),
    }
}

fn check_view(view: ZRef<'_>, model: &BTreeMap<Vec<u8>, f64>, rng: &mut SmallRng) {
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
}

#[test]
fn tree_matches_model() {
    let mut rng = SmallRng::seed_from_u64(seed());
    for round in 0..6 {
        let mut tree = Tree::default();
        let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
        let space = [10, 100, 2_000, 20_000, 5_000, 300][round];
        let remove_bias = rng.gen_range(0.2..0.6);
        for step in 0..30_000 {
            let m = member(&mut rng, space);
            if rng.gen_bool(remove_bias) {
                if let Some(s) = model.remove(&m) {
                    tree.remove(s, &m);
                }
            } else if let Some(old) = model.get(&m).copied() {
                let s = score(&mut rng);
                tree.remove(old, &m);
                tree.insert(s, &m);
                model.insert(m, s);
            } else {
                let s = score(&mut rng);
                tree.insert(s, &m);
                model.insert(m, s);
            }
            if step % 5_000 == 0 {
                tree.validate().unwrap();
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
            tree.remove(s, &m);
        }
        tree.validate().unwrap();
        assert!(tree.is_empty());
        assert_eq!(tree.first(), None);
    }
}

#[test]
fn index_and_packed_match_model() {
    let mut rng = SmallRng::seed_from_u64(seed() ^ 0x5eed);
    let mut heap = heap::Heap::new().unwrap();
    for round in 0..8 {
        let mut obj = ZSetObj::new(&mut heap).unwrap();
        let mut bytes = packed::empty();
        let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
        let space = [5, 40, 150, 1_000, 60, 130, 10_000, 20][round];
        for step in 0..4_000 {
            let m = member(&mut rng, space);
            let use_packed = model.len() < 200;
            match rng.gen_range(0..10) {
                0..=5 => {
                    let s = score(&mut rng);
                    for z in [ZMut::Index(&mut obj, &mut heap)]
                        .into_iter()
                        .chain(use_packed.then_some(ZMut::Packed(&mut bytes, None)))
                    {
                        let mut z = z;
                        match z.score(&m) {
                            Some(old) => z.update(&m, old, s).unwrap(),
                            None => z.insert(&m, s).unwrap(),
                        }
                    }
                    model.insert(m, s);
                }
                6 | 7 => {
                    let want = model.remove(&m);
                    assert_eq!(ZMut::Index(&mut obj, &mut heap).remove(&m), want);
                    if use_packed {
                        assert_eq!(ZMut::Packed(&mut bytes, None).remove(&m), want);
                    }
                }
                8 => {
                    let max = rng.gen_bool(0.5);
                    let want = sorted(&model);
                    let want = if max { want.last() } else { want.first() };
                    let got = ZMut::Index(&mut obj, &mut heap).pop(max, |s, m| (s, m.to_vec()));
                    assert_eq!(got.as_ref(), want);
                    if use_packed {
                        let got = ZMut::Packed(&mut bytes, None).pop(max, |s, m| (s, m.to_vec()));
                        assert_eq!(got.as_ref(), want);
                    }
                    if let Some((_, m)) = got {
                        model.remove(&m);
                    }
                }
                _ => {
                    if model.is_empty() {
                        continue;
                    }
                    let a = rng.gen_range(0..model.len());
                    let b = rng.gen_range(a..model.len().min(a + 20));
                    let mut want = sorted(&model);
                    let gone: Vec<(f64, Vec<u8>)> = want.drain(a..=b).collect();
                    assert_eq!(
                        ZMut::Index(&mut obj, &mut heap).remove_ranks(a, b),
                        gone.len()
                    );
                    if use_packed {
                        assert_eq!(
                            ZMut::Packed(&mut bytes, None).remove_ranks(a, b),
                            gone.len()
                        );
                    }
                    for (_, m) in gone {
                        model.remove(&m);
                    }
                }
            }
            if model.len() >= 200 {
                bytes = packed::empty();
            }
            if step % 500 == 0 {
                obj.validate(&heap).unwrap();
                check_view(ZRef::Index(&obj, &heap), &model, &mut rng);
                if model.len() < 200 {
                    check_view(ZRef::Packed(&bytes), &model, &mut rng);
                }
            }
        }
        obj.validate(&heap).unwrap();
        check_view(ZRef::Index(&obj, &heap), &model, &mut rng);
        let exported: BTreeMap<Vec<u8>, f64> = obj.export(&heap).into_iter().collect();
        assert_eq!(exported, model);
        obj.destroy(&mut heap);
    }
}

#[test]
fn store_entries_converts_by_size() {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    let cases: [(usize, usize, u8); 5] = [
        (1, 5, tag::ZSET_PACKED),
        (128, 5, tag::ZSET_PACKED),
        (129, 5, tag::ZSET_INDEX),
        (3, 64, tag::ZSET_PACKED),
        (3, 65, tag::ZSET_INDEX),
    ];
    for (count, len, want_tag) in cases {
        let entries: Vec<(Vec<u8>, f64)> = (0..count)
            .map(|i| {
                let mut m = format!("{i:05}").into_bytes();
                m.resize(len.max(5), b'y');
                (m, i as f64 / 3.0)
            })
            .collect();
        zset::store_entries(&mut shard, 0, b"k", &entries, Ttl::Clear, 0).unwrap();
        let got = shard.with_slot(0, b"k", 0, |slot| match slot {
            Slot::Inline { tag, bytes, .. } => (tag, ZRef::Packed(bytes).to_vec()),
            Slot::Boxed {
                tag, object, heap, ..
            } => match object {
                store::Object::ZSet(o) => (tag, ZRef::Index(o, heap).to_vec()),
                _ => panic!("not a zset"),
            },
            Slot::Missing => panic!("missing"),
        });
        assert_eq!(got.0, want_tag, "{count} members of {len} bytes");
        assert_eq!(got.1, entries);
    }
    assert!(shard.remove(0, b"k", 0));
    shard.validate().unwrap();
}
