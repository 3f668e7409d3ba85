//! Seeded model-based randomized tests of `FlatMap` (map and set mode) against
//! `std::collections::HashMap`/`HashSet`. Each run switches operation kinds on and off at random,
//! draws keys of 0..~300 bytes from a run-specific distribution, and validates the whole map after
//! every operation; one family of runs gives every key the same hint so each probe compares keys.

use maps::flat::{BYTES_MAX, FlatInsert, FlatMap};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};

/// Debug builds run a quarter of the operations (the release suite is the thorough one).
const SCALE: usize = if cfg!(debug_assertions) { 4 } else { 1 };

fn key(rng: &mut SmallRng, kind: u32, space: u32) -> Vec<u8> {
    let i = rng.gen_range(0..space);
    match kind {
        0 => format!("m:{i}").into_bytes(),
        1 => {
            // 0..~300 bytes, derived from i so keys repeat.
            let n = (i as usize * 7919) % 301;
            (0..n).map(|j| (i as usize + j) as u8).collect()
        }
        _ => {
            if i % 10 == 0 {
                Vec::new()
            } else {
                i.to_le_bytes()[..(i % 4 + 1) as usize].to_vec()
            }
        }
    }
}

fn value(rng: &mut SmallRng) -> Vec<u8> {
    let n = match rng.gen_range(0..4) {
        0 => 0,
        1 => rng.gen_range(0..8),
        2 => rng.gen_range(0..300),
        _ => 3,
    };
    (0..n).map(|_| rng.r#gen()).collect()
}

fn check_map(map: &FlatMap, model: &HashMap<Vec<u8>, Vec<u8>>) {
    map.validate().unwrap();
    assert_eq!(map.len(), model.len());
    assert!(map.memory_bytes() <= BYTES_MAX);
}

fn run_map(seed: u64, ops: usize, same_hints: bool) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut map = FlatMap::new_map();
    if same_hints {
        map = map.with_same_hints();
    }
    let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    let kind = rng.gen_range(0..3);
    let space = [20, 200, 3000][rng.gen_range(0..3)];
    let enabled: Vec<bool> = (0..5).map(|_| rng.gen_bool(0.8)).collect();
    for _ in 0..ops {
        let k = key(&mut rng, kind, space);
        match rng.gen_range(0..5) {
            0 | 1 if enabled[0] => {
                let v = value(&mut rng);
                match map.insert(&k, &v) {
                    FlatInsert::Inserted => assert!(model.insert(k, v).is_none()),
                    FlatInsert::Replaced => assert!(model.insert(k, v).is_some()),
                    // Full changes nothing: the model keeps what it had.
                    FlatInsert::Full => {}
                }
            }
            2 if enabled[1] => assert_eq!(map.remove(&k), model.remove(&k).is_some()),
            3 if enabled[2] => assert_eq!(map.get(&k), model.get(&k).map(Vec::as_slice)),
            4 if enabled[3] => {
                if let Some((k, v)) = map.sample(rng.r#gen()) {
                    assert_eq!(model.get(k).map(Vec::as_slice), Some(v));
                } else {
                    assert!(model.is_empty());
                }
            }
            _ => {
                let seen: HashMap<Vec<u8>, Vec<u8>> =
                    map.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
                assert_eq!(seen.len(), map.len(), "iteration repeats no key");
                assert_eq!(seen, model);
            }
        }
        check_map(&map, &model);
    }
    // A map that refused inserts still answers every lookup.
    for (k, v) in &model {
        assert_eq!(map.get(k), Some(v.as_slice()));
    }
}

fn run_set(seed: u64, ops: usize, same_hints: bool) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut set = FlatMap::new_set();
    if same_hints {
        set = set.with_same_hints();
    }
    let mut model: HashSet<Vec<u8>> = HashSet::new();
    let kind = rng.gen_range(0..3);
    let space = [20, 500, 5000][rng.gen_range(0..3)];
    let remove_weight = rng.gen_range(1..4);
    for _ in 0..ops {
        let k = key(&mut rng, kind, space);
        let op = rng.gen_range(0..6 + remove_weight);
        match op {
            0..=2 => match set.insert(&k, b"ignored") {
                FlatInsert::Inserted => assert!(model.insert(k)),
                FlatInsert::Replaced => assert!(model.contains(&k)),
                FlatInsert::Full => assert!(!model.contains(&k)),
            },
            3 => assert_eq!(set.contains(&k), model.contains(&k)),
            4 => {
                let got: HashSet<Vec<u8>> = set
                    .iter()
                    .map(|(k, v)| {
                        assert!(v.is_empty());
                        k.to_vec()
                    })
                    .collect();
                assert_eq!(got, model);
            }
            5 => assert_eq!(set.sample(rng.r#gen()).is_some(), !model.is_empty()),
            _ => assert_eq!(set.remove(&k), model.remove(&k)),
        }
        set.validate().unwrap();
        assert_eq!(set.len(), model.len());
        assert!(set.memory_bytes() <= BYTES_MAX);
    }
}

#[test]
fn map_matches_hashmap() {
    for seed in 0..24 {
        run_map(seed, 6000 / SCALE, false);
    }
}

#[test]
fn set_matches_hashset() {
    for seed in 100..124 {
        run_set(seed, 8000 / SCALE, false);
    }
}

#[test]
fn all_colliding_hints() {
    for seed in 200..206 {
        run_map(seed, 3000 / SCALE, true);
        run_set(seed, 3000 / SCALE, true);
    }
}

#[test]
fn fills_then_empties() {
    // Grow to Full, then drain: every rebuild (growth, compaction, shrink) runs.
    let mut set = FlatMap::new_set();
    let mut model = Vec::new();
    let mut i = 0u32;
    while set.insert(format!("member:{i}").as_bytes(), b"") == FlatInsert::Inserted {
        model.push(format!("member:{i}"));
        i += 1;
    }
    set.validate().unwrap();
    for (n, m) in model.iter().enumerate() {
        assert!(set.remove(m.as_bytes()));
        if n % 97 == 0 {
            set.validate().unwrap();
        }
    }
    assert!(set.is_empty());
    set.validate().unwrap();
}
