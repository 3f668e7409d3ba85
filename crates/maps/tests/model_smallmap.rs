//! Seeded model-based randomized test of `SmallMap` against `std::collections::HashMap`, with
//! conversion into `PageHash` when it answers `NeedsConversion`.

use heap::Heap;
use maps::{Config, Meta, PageHash, SmallInsert, SmallMap};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

enum Either {
    Small(SmallMap),
    Big(PageHash),
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn smallmap_matches_hashmap_and_converts() {
    let mut conversions = 0;
    for seed in 0..300u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut heap = Heap::new().unwrap();
        let mut map = Either::Small(SmallMap::new(&mut heap).unwrap());
        let mut model: HashMap<Vec<u8>, (Vec<u8>, Meta)> = HashMap::new();
        let key_space = rng.gen_range(2..14);
        let big_values = rng.gen_bool(0.2);
        for _ in 0..200 {
            let key = format!("f{}", rng.gen_range(0..key_space))
                .repeat(rng.gen_range(0..3))
                .into_bytes();
            match rng.gen_range(0..5) {
                0 | 1 => {
                    let len = if big_values && rng.gen_bool(0.05) {
                        100
                    } else {
                        rng.gen_range(0..20)
                    };
                    let value = vec![rng.r#gen::<u8>(); len];
                    let meta = model.get(&key).map_or(Meta::default(), |e| e.1);
                    let existed = model.insert(key.clone(), (value.clone(), meta)).is_some();
                    match &mut map {
                        Either::Small(small) => {
                            match small.insert(&mut heap, &key, &value).unwrap() {
                                SmallInsert::Inserted => assert!(!existed),
                                SmallInsert::Replaced => assert!(existed),
                                SmallInsert::NeedsConversion => {
                                    assert!(
                                        value.len() > SmallMap::FIELD_BYTES_MAX
                                            || (!existed && small.len() == 8)
                                    );
                                    let Either::Small(small) = std::mem::replace(
                                        &mut map,
                                        Either::Small(SmallMap::new(&mut heap).unwrap()),
                                    ) else {
                                        unreachable!()
                                    };
                                    let mut big =
                                        small.into_pagehash(&mut heap, &Config::default()).unwrap();
                                    assert_eq!(
                                        big.insert(&mut heap, &key, &value).unwrap(),
                                        existed
                                    );
                                    if let Either::Small(placeholder) =
                                        std::mem::replace(&mut map, Either::Big(big))
                                    {
                                        placeholder.destroy(&mut heap);
                                    }
                                    conversions += 1;
                                }
                            }
                        }
                        Either::Big(big) => {
                            assert_eq!(big.insert(&mut heap, &key, &value).unwrap(), existed);
                        }
                    }
                }
                2 => {
                    let removed = model.remove(&key).is_some();
                    match &mut map {
                        Either::Small(s) => assert_eq!(s.remove(&key), removed),
                        Either::Big(b) => assert_eq!(b.remove(&mut heap, &key), removed),
                    }
                }
                3 => {
                    let meta = Meta(rng.r#gen());
                    let present = model.get_mut(&key).map(|e| e.1 = meta).is_some();
                    match &mut map {
                        Either::Small(s) => assert_eq!(s.set_meta(&key, meta), present),
                        Either::Big(b) => assert_eq!(b.set_meta(&heap, &key, meta), present),
                    }
                }
                _ => {
                    let got = match &map {
                        Either::Small(s) => s.get(&key).map(|v| (v.bytes.to_vec(), v.meta)),
                        Either::Big(b) => b.get(&heap, &key).map(|v| (v.bytes.to_vec(), v.meta)),
                    };
                    assert_eq!(got.as_ref(), model.get(&key));
                }
            }
            let all: HashMap<Vec<u8>, (Vec<u8>, Meta)> = match &map {
                Either::Small(s) => {
                    s.validate().unwrap();
                    assert!(s.len() <= 8);
                    s.iter()
                        .map(|(k, v)| (k.to_vec(), (v.bytes.to_vec(), v.meta)))
                        .collect()
                }
                Either::Big(b) => {
                    b.validate(&heap).unwrap();
                    b.iter(&heap)
                        .map(|(k, v)| (k.to_vec(), (v.bytes.to_vec(), v.meta)))
                        .collect()
                }
            };
            assert_eq!(all, model);
        }
        match map {
            Either::Small(s) => s.destroy(&mut heap),
            Either::Big(b) => b.destroy(&mut heap),
        }
        assert_eq!(heap.stats().requested_bytes, 0);
    }
    assert!(conversions > 20, "conversions exercised: {conversions}");
}

#[test]
fn smallmap_hint_counters_count_hits_misses_and_not_found() {
    let mut heap = Heap::new().unwrap();
    let mut map = SmallMap::new(&mut heap).unwrap();
    for i in 0..8u8 {
        assert_eq!(
            map.insert(&mut heap, &[i], &[i]).unwrap(),
            SmallInsert::Inserted
        );
    }
    maps::reset_hint_stats();
    for i in 0..8u8 {
        assert_eq!(map.get(&[i]).unwrap().bytes, &[i]);
    }
    let misses = 20_000u32;
    for i in 0..misses {
        assert!(map.get(&i.to_le_bytes()).is_none());
    }
    let stats = maps::hint_stats();
    assert_eq!(stats.hint_hit, 8);
    assert_eq!(stats.not_found, u64::from(misses));
    // Each miss compares against 8 hints: expect 8/256 false matches per lookup.
    let rate = stats.hint_miss as f64 / f64::from(misses);
    assert!(rate > 0.01 && rate < 0.07, "hint miss rate {rate}");
    map.destroy(&mut heap);
}

/// Iteration order is insertion order, and an overwrite keeps the pair's place (as a Redis
/// listpack does, so HGETALL of a small hash lists fields as Redis would): checked against a
/// `Vec` of pairs after every operation.
#[test]
fn smallmap_keeps_insertion_order_across_overwrites() {
    for seed in 0..200u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut heap = Heap::new().unwrap();
        let mut small = SmallMap::new(&mut heap).unwrap();
        let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for _ in 0..300 {
            let key = format!("k{}", rng.gen_range(0..10)).into_bytes();
            if rng.gen_bool(0.7) {
                let value = vec![b'v'; rng.gen_range(0..40)];
                let result = small.insert(&mut heap, &key, &value).unwrap();
                let full = model.len() == 8;
                match model.iter_mut().find(|(k, _)| *k == key) {
                    Some(pair) => {
                        assert!(matches!(result, SmallInsert::Replaced));
                        pair.1 = value;
                    }
                    None if full => {
                        assert!(matches!(result, SmallInsert::NeedsConversion));
                    }
                    None => {
                        assert!(matches!(result, SmallInsert::Inserted));
                        model.push((key, value));
                    }
                }
            } else {
                let was = model.iter().position(|(k, _)| *k == key);
                assert_eq!(small.remove(&key), was.is_some());
                if let Some(i) = was {
                    model.remove(i);
                }
            }
            small.validate().unwrap();
            let got: Vec<(Vec<u8>, Vec<u8>)> = small
                .iter()
                .map(|(k, v)| (k.to_vec(), v.bytes.to_vec()))
                .collect();
            assert_eq!(got, model, "seed {seed}");
        }
        small.destroy(&mut heap);
    }
}
