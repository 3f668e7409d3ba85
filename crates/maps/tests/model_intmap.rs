//! Seeded model-based randomized tests of `IntMap`/`IntSet` against `std::collections::HashMap`.
//! Each run toggles operation kinds at random and validates every page after every operation.

use heap::Heap;
use maps::{AREA_BYTES, Config, IntMap, IntSet, MapError};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
/// Debug builds run a quarter of the operations (the release suite is the thorough one).
const SCALE: usize = if cfg!(debug_assertions) { 4 } else { 1 };

use std::collections::{HashMap, HashSet};

fn config(seed: u64, probe: u8) -> Config {
    Config {
        probe_count_max: probe,
        seed: Some(seed),
        ..Config::default()
    }
}

/// Keys from one of several distributions, chosen per run.
fn key(rng: &mut SmallRng, kind: u32, space: u64) -> u64 {
    match kind {
        0 => rng.gen_range(0..space), // small, sequential-ish: literal form
        1 => rng.gen_range(0..space).wrapping_mul(0x9e37_79b9_7f4a_7c15), // random 64-bit
        // Below 2^32, many past 2^21: the short form, beside literals.
        3 => rng.gen_range(0..space.min(1 << 32)) | (rng.gen_range(0..1 << 11) << 21),
        // Every distribution in one map: runs mix families and entry lengths.
        4 => {
            let kind = rng.gen_range(0..4);
            key(rng, kind, space)
        }
        _ => {
            if rng.gen_bool(0.5) {
                rng.gen_range(0..space)
            } else {
                u64::MAX - rng.gen_range(0..space)
            }
        }
    }
}

/// Values of every form: literal ones, and near their key (key-relative, wrapping at both
/// ends of the u64 range).
fn value(rng: &mut SmallRng, key: u64) -> u64 {
    match rng.gen_range(0..7) {
        0 => 0,
        1 => rng.gen_range(0..300),
        2 => rng.r#gen(),
        3 => u64::MAX,
        4 => key,
        5 => key.wrapping_add(rng.gen_range(0..1 << 20)),
        _ => {
            let bits = rng.gen_range(1..50);
            key.wrapping_sub(rng.gen_range(0..1 << bits))
        }
    }
}

fn run(seed: u64, ops: usize, space: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut heap = Heap::new().unwrap();
    let probe = [1u8, 2, 4, 16, 128][rng.gen_range(0..5)];
    let mut map = IntMap::with_config(&mut heap, &config(seed, probe)).unwrap();
    let mut model: HashMap<u64, u64> = HashMap::new();
    let kind = rng.gen_range(0..5);
    // Operation kinds toggled per run: insert always on, others at random.
    let enabled: [bool; 5] = std::array::from_fn(|_| rng.gen_bool(0.7));
    let grow_phase = ops / 2;
    for step in 0..ops {
        let op = rng.gen_range(0..6);
        let k = key(&mut rng, kind, space);
        match op {
            0 | 1 => {
                let v = value(&mut rng, k);
                assert_eq!(
                    map.insert(&mut heap, k, v).unwrap(),
                    model.insert(k, v),
                    "insert {k}"
                );
            }
            2 if enabled[0] || step > grow_phase => {
                assert_eq!(map.remove(&mut heap, k), model.remove(&k), "remove {k}");
            }
            3 if enabled[1] => {
                // Remove an existing key (removals of absent keys alone would rarely hit).
                if let Some(&k) = model.keys().next() {
                    assert_eq!(map.remove(&mut heap, k), model.remove(&k));
                }
            }
            4 if enabled[2] => {
                assert_eq!(map.get(k), model.get(&k).copied(), "get {k}");
                if step % 32 == 0 {
                    // A batch through the pipelined path: present and absent keys, repeats.
                    let batch: Vec<u64> = (0..rng.gen_range(0..40))
                        .map(|_| key(&mut rng, kind, space))
                        .collect();
                    let mut seen = 0;
                    map.get_many(&batch, |i, v| {
                        assert_eq!(i, seen, "get_many answers in order");
                        seen += 1;
                        assert_eq!(v, model.get(&batch[i]).copied(), "get_many {}", batch[i]);
                    });
                    assert_eq!(seen, batch.len());
                }
            }
            5 if enabled[3] && step % 64 == 0 => {
                let got: HashMap<u64, u64> = map.iter().collect();
                assert_eq!(got.len(), map.len());
                assert_eq!(got, model);
            }
            _ if enabled[4] && step % 97 == 0 => {
                if let Some((k, v)) = map.sample(rng.r#gen()) {
                    assert_eq!(model.get(&k), Some(&v));
                } else {
                    assert!(model.is_empty());
                }
            }
            _ => {}
        }
        assert_eq!(map.len(), model.len());
        map.validate(&heap)
            .unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
    }
    for (k, v) in &model {
        assert_eq!(map.get(*k), Some(*v));
    }
    let all: Vec<u64> = model.keys().copied().collect();
    map.get_many(&all, |i, v| assert_eq!(v, model.get(&all[i]).copied()));
    map.destroy(&mut heap);
}

#[test]
fn intmap_matches_hashmap() {
    for seed in 0..16 {
        run(
            seed,
            6_000 / SCALE,
            if seed % 2 == 0 { 3_000 } else { 1 << 40 },
        );
    }
}

#[test]
fn intmap_large_then_drain_merges_down_to_one_page() {
    let mut heap = Heap::new().unwrap();
    let mut map = IntMap::with_config(&mut heap, &config(1, 16)).unwrap();
    let mut rng = SmallRng::seed_from_u64(3);
    let keys: Vec<u64> = (0..60_000).map(|_| rng.r#gen()).collect();
    for (i, &k) in keys.iter().enumerate() {
        map.insert(&mut heap, k, i as u64).unwrap();
    }
    map.validate(&heap).unwrap();
    let grown = map.shape();
    assert!(grown.page_count > 50 && grown.global_depth > 5, "{grown:?}");
    for (i, &k) in keys.iter().enumerate().skip(10) {
        assert_eq!(map.remove(&mut heap, k), Some(i as u64));
        if i % 1000 == 0 {
            map.validate(&heap).unwrap();
        }
    }
    map.validate(&heap).unwrap();
    let shrunk = map.shape();
    assert_eq!(shrunk.page_count, 1, "{shrunk:?}");
    assert_eq!(shrunk.global_depth, 0, "{shrunk:?}");
    for (i, &k) in keys.iter().enumerate().take(10) {
        assert_eq!(map.get(k), Some(i as u64));
    }
    map.destroy(&mut heap);
}

#[test]
fn intmap_short_keys_in_a_deep_map_and_past_depth_17() {
    let mut heap = Heap::new().unwrap();
    let mut map = IntMap::with_config(&mut heap, &config(21, 16)).unwrap();
    let mut model = HashMap::new();
    // 200k sequential keys (a deep map: the short form with 0..2 stored bits), then 6,000 keys
    // whose permuted values share their top 20 bits, so their bucket splits past depth 17,
    // where the prefix reaches into the bits that hint and home already hold.
    let mut keys: Vec<u64> = (0..200_000).collect();
    let insert = |map: &mut IntMap, heap: &mut Heap, model: &mut HashMap<u64, u64>, i, k| {
        assert_eq!(
            map.insert(heap, k, i as u64).unwrap(),
            model.insert(k, i as u64)
        );
        if i % 20_000 == 0 {
            map.validate(heap).unwrap();
        }
    };
    for (i, &k) in keys.iter().enumerate() {
        insert(&mut map, &mut heap, &mut model, i, k);
    }
    // Sequential keys mapped to themselves: hint + header + a key field of one or two bytes
    // (two where buckets are shallower than depth 12), the value being key-relative (0 bytes):
    // 4.6 B/pair here, where 3-byte literal values made it 7.6.
    let per_pair = map.memory_bytes() as f64 / keys.len() as f64;
    assert!(per_pair < 5.0, "{per_pair} B/pair");
    let deep: Vec<u64> = (0..6_000u32)
        .map(|j| map.key_of_short((0x5a5a5 << 12) | j))
        .collect();
    for (i, &k) in deep.iter().enumerate() {
        insert(&mut map, &mut heap, &mut model, keys.len() + i, k);
    }
    keys.extend(deep);
    map.validate(&heap).unwrap();
    assert!(map.shape().global_depth > 17, "{:?}", map.shape());
    let got: HashMap<u64, u64> = map.iter().collect();
    assert_eq!(got, model);
    for (i, &k) in keys.iter().enumerate().step_by(3) {
        assert_eq!(map.remove(&mut heap, k), model.remove(&k), "remove {i}");
    }
    map.validate(&heap).unwrap();
    for (k, v) in &model {
        assert_eq!(map.get(*k), Some(*v));
    }
    map.destroy(&mut heap);
}

#[test]
fn intmap_all_keys_colliding_on_hint_and_home() {
    let mut heap = Heap::new().unwrap();
    let mut map = IntMap::with_config(&mut heap, &config(9, 16)).unwrap();
    let mut rng = SmallRng::seed_from_u64(4);
    // Keys whose hashes share hint and home piece: only the prefix and rest bits differ.
    let keys: Vec<u64> = (0..3_000)
        .map(|_| {
            let h: u64 = rng.r#gen();
            map.key_of_hash((h & !0x7fff) | (0xAB << 7) | 5)
        })
        .collect();
    for (i, &k) in keys.iter().enumerate() {
        map.insert(&mut heap, k, i as u64).unwrap();
        if i % 100 == 0 {
            map.validate(&heap).unwrap();
        }
    }
    map.validate(&heap).unwrap();
    for (i, &k) in keys.iter().enumerate() {
        assert_eq!(map.get(k), Some(i as u64));
    }
    map.destroy(&mut heap);
}

#[test]
fn intmap_buckets_outgrowing_the_rest_double_the_directory_only_past_a_quarter_page() {
    let mut heap = Heap::new().unwrap();
    let mut map = IntMap::with_config(&mut heap, &config(31, 16)).unwrap();
    let mut model = HashMap::new();
    let mut rng = SmallRng::seed_from_u64(6);
    let mut insert = |map: &mut IntMap, heap: &mut Heap, k: u64, v: u64| {
        assert_eq!(map.insert(heap, k, v).unwrap(), model.insert(k, v));
    };
    // Random pairs (~16 B per entry with its hint) until the directory has just doubled from
    // 256 slots or more: the average bucket at the global depth is then far below the split
    // size (an eighth of a page).
    let mut depth = map.shape().global_depth;
    while map.shape().global_depth == depth || depth < 8 {
        depth = map.shape().global_depth;
        insert(&mut map, &mut heap, rng.r#gen(), rng.r#gen());
    }
    let shape = map.shape();
    let depth = shape.global_depth;
    assert!(
        (shape.page_count * AREA_BYTES) >> depth < AREA_BYTES / 12,
        "{shape:?}"
    );
    // The 16 least-filled buckets at the global depth (a bucket there may hold up to a quarter
    // page before this rule splits it) take 80 keys each whose hashes share their prefix: ~1.3
    // KB more, past an eighth of a page and short of a quarter. Such a bucket is shed whole
    // when its page fills. (Split at an eighth, as shallower buckets are, they doubled the
    // directory here after 1,073 of the 1,280 keys.)
    let mut per_prefix = vec![0usize; 1 << depth];
    for (k, _) in map.iter() {
        per_prefix[(map.hash_of_key(k) >> (64 - depth)) as usize] += 1;
    }
    let mut by_fill: Vec<usize> = (0..per_prefix.len()).collect();
    by_fill.sort_by_key(|&p| (per_prefix[p], p));
    let prefixes: Vec<u64> = by_fill[..16]
        .iter()
        .map(|&p| (p as u64) << (64 - depth))
        .collect();
    let crafted: Vec<u64> = (0..80 * 16)
        .map(|i| map.key_of_hash(prefixes[i % 16] | (rng.r#gen::<u64>() >> depth)))
        .collect();
    for (i, &k) in crafted.iter().enumerate() {
        insert(&mut map, &mut heap, k, rng.r#gen::<u64>() | 1 << 63);
        assert_eq!(map.shape().global_depth, depth, "after {} keys", i + 1);
    }
    map.validate(&heap).unwrap();
    // A page's worth more into one of them: it passes a quarter page and splits deeper.
    let more: Vec<u64> = (0..600)
        .map(|_| map.key_of_hash(prefixes[0] | (rng.r#gen::<u64>() >> depth)))
        .collect();
    for &k in &more {
        insert(&mut map, &mut heap, k, rng.r#gen::<u64>() | 1 << 63);
    }
    map.validate(&heap).unwrap();
    assert!(map.shape().global_depth > depth, "{:?}", map.shape());
    let got: HashMap<u64, u64> = map.iter().collect();
    assert_eq!(got, model);
    map.destroy(&mut heap);
}

#[test]
fn intmap_at_maximum_depth_probes_the_whole_page_then_reports_full() {
    let mut heap = Heap::new().unwrap();
    let cfg = Config {
        depth_max: 2,
        probe_count_max: 4,
        seed: Some(5),
        ..Config::default()
    };
    let mut map = IntMap::with_config(&mut heap, &cfg).unwrap();
    let mut model = HashMap::new();
    let mut rng = SmallRng::seed_from_u64(5);
    let mut full = false;
    for i in 0..100_000u64 {
        let k: u64 = rng.r#gen();
        match map.insert(&mut heap, k, i) {
            Ok(_) => {
                model.insert(k, i);
            }
            Err(MapError::Full) => {
                full = true;
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(full);
    map.validate(&heap).unwrap();
    let shape = map.shape();
    assert_eq!(shape.global_depth, 2);
    // Four pages whose entries pack byte by byte: the first insert fails only when one page is
    // out of room to its last bytes, so the pages are nearly full.
    assert!(shape.fill_ratio > 0.95, "{shape:?}");
    assert_eq!(map.iter().collect::<HashMap<_, _>>(), model);
    map.destroy(&mut heap);
}

#[test]
fn intmap_scan_with_concurrent_mutation_returns_every_stable_key() {
    for seed in 0..6 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut heap = Heap::new().unwrap();
        let mut map = IntMap::with_config(&mut heap, &config(seed, 16)).unwrap();
        let stable: Vec<u64> = (0..5_000).map(|_| rng.r#gen()).collect();
        for &k in &stable {
            map.insert(&mut heap, k, 1).unwrap();
        }
        let mut churn: Vec<u64> = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor = 0;
        let mut steps = 0;
        loop {
            cursor = map.scan(cursor, |k, _| {
                seen.insert(k);
            });
            steps += 1;
            // Grow and shrink between steps so buckets split and merge under the cursor.
            let n = rng.gen_range(0..400);
            if rng.gen_bool(0.5) {
                for _ in 0..n {
                    let k = rng.r#gen();
                    map.insert(&mut heap, k, 2).unwrap();
                    churn.push(k);
                }
            } else {
                for _ in 0..n.min(churn.len()) {
                    let k = churn.swap_remove(rng.gen_range(0..churn.len()));
                    map.remove(&mut heap, k);
                }
            }
            map.validate(&heap).unwrap();
            if cursor == 0 {
                break;
            }
            assert!(steps < 100_000);
        }
        for k in &stable {
            assert!(seen.contains(k), "seed {seed}: key {k} missed by scan");
        }
        map.destroy(&mut heap);
    }
}

#[test]
fn intset_matches_hashset() {
    let mut rng = SmallRng::seed_from_u64(77);
    let mut heap = Heap::new().unwrap();
    let mut set = IntSet::with_config(&mut heap, &config(77, 16)).unwrap();
    let mut model = HashSet::new();
    for _ in 0..20_000 {
        let k = rng.gen_range(0..5_000u64) * 7919;
        if rng.gen_bool(0.6) {
            assert_eq!(set.insert(&mut heap, k).unwrap(), model.insert(k));
        } else {
            assert_eq!(set.remove(&mut heap, k), model.remove(&k));
        }
        assert_eq!(set.contains(k), model.contains(&k));
    }
    set.validate(&heap).unwrap();
    assert_eq!(set.iter().collect::<HashSet<_>>(), model);
    set.destroy(&mut heap);
}

#[test]
fn intmap_clear_and_value_growth_in_place() {
    let mut heap = Heap::new().unwrap();
    let mut map = IntMap::with_config(&mut heap, &config(2, 16)).unwrap();
    // Values grow from 0 bytes to 8 bytes: entries outgrow their pieces and move.
    for round in 0..4u32 {
        for k in 0..20_000u64 {
            let v = if round == 3 {
                u64::MAX - k
            } else {
                k << (20 * round)
            };
            map.insert(&mut heap, k * 977, v).unwrap();
        }
        map.validate(&heap).unwrap();
    }
    for k in 0..20_000u64 {
        assert_eq!(map.get(k * 977), Some(u64::MAX - k));
    }
    map.clear(&mut heap).unwrap();
    assert!(map.is_empty() && map.get(977).is_none());
    map.insert(&mut heap, 1, 2).unwrap();
    assert_eq!(map.get(1), Some(2));
    map.destroy(&mut heap);
    assert_eq!(heap.stats().requested_bytes, 0);
}
