//! Compaction (`compact_step`, `sparse`) of `PageHash`, `IntMap` and `IntSet`: seeded
//! model-based runs against `std::collections::HashMap` with compaction steps interleaved and
//! every invariant validated after every operation, SCAN's guarantee across compaction steps,
//! the bound on a step's work, and the memory given back after uniform removals.

use heap::Heap;
use maps::{CompactProgress, Config, IntMap, IntSet, PageHash};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};

/// Debug builds run a quarter of the operations (the release suite is the thorough one);
/// `expensive-checks` validates the whole map after every insert, so maps built for their size
/// alone shrink by `BIG_SCALE` there.
const SCALE: usize = if cfg!(debug_assertions) { 4 } else { 1 };
const BIG_SCALE: usize = if cfg!(feature = "expensive-checks") {
    40
} else {
    SCALE
};
/// Whether the maps built for their size have it (the memory bounds are asserted only then: a
/// map of a few pages ends with part-filled bins).
const FULL_SIZE: bool = BIG_SCALE == SCALE;

fn config(seed: u64) -> Config {
    Config {
        seed: Some(seed),
        ..Config::default()
    }
}

/// Checks a step's report against its budget: at most one visit's work past the budget, and
/// no more moves or merges than a visit allows.
fn check_step(p: CompactProgress, budget: usize) {
    assert!(
        p.units() <= budget + CompactProgress::VISIT_UNITS_MAX,
        "{p:?} over budget {budget}"
    );
    assert!(p.units() >= budget || p.pass_done, "{p:?} stopped early");
    assert!(p.visited > 0 || budget == 0, "{p:?}");
}

/// The compaction interface the three map kinds share.
trait Compact {
    fn sparse(&self) -> bool;
    fn step(&mut self, heap: &mut Heap, budget: usize) -> CompactProgress;
}

impl Compact for PageHash {
    fn sparse(&self) -> bool {
        PageHash::sparse(self)
    }
    fn step(&mut self, heap: &mut Heap, budget: usize) -> CompactProgress {
        self.compact_step(heap, budget)
    }
}

impl Compact for IntMap {
    fn sparse(&self) -> bool {
        IntMap::sparse(self)
    }
    fn step(&mut self, heap: &mut Heap, budget: usize) -> CompactProgress {
        self.compact_step(heap, budget)
    }
}

impl Compact for IntSet {
    fn sparse(&self) -> bool {
        IntSet::sparse(self)
    }
    fn step(&mut self, heap: &mut Heap, budget: usize) -> CompactProgress {
        self.compact_step(heap, budget)
    }
}

/// Steps of 64 units while `sparse()` holds; the loop must end (fruitless passes go quiet).
/// Returns the number of steps.
fn compact_to_end(map: &mut impl Compact, heap: &mut Heap) -> usize {
    let mut steps = 0;
    while map.sparse() {
        check_step(map.step(heap, 64), 64);
        steps += 1;
        assert!(steps < 1_000_000, "compaction does not end");
    }
    steps
}

/// A key of 1..40 bytes (short and long entry forms), sometimes over the inline limit.
fn bytes_key(rng: &mut SmallRng) -> Vec<u8> {
    let len = if rng.gen_bool(0.05) {
        rng.gen_range(100..300)
    } else {
        rng.gen_range(1..40)
    };
    (0..len).map(|_| rng.r#gen()).collect()
}

fn bytes_value(rng: &mut SmallRng) -> Vec<u8> {
    let len = match rng.gen_range(0..10) {
        0 => 0,
        1 => rng.gen_range(100..400),
        _ => rng.gen_range(1..24),
    };
    vec![rng.r#gen(); len]
}

/// Phases of growth and of thinning, with compaction steps of random budgets among the
/// operations; the map answers as the model does and validates after every operation.
fn run_pagehash(seed: u64, ops: usize, config: &Config) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut heap = Heap::new().unwrap();
    let mut map = PageHash::with_config(&mut heap, config).unwrap();
    let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut done = CompactProgress::default();
    for step in 0..ops {
        // Thirds: grow, thin to ~a tenth, grow again while compacting.
        let grow = match step * 3 / ops {
            0 => 0.9,
            1 => 0.15,
            _ => 0.6,
        };
        match rng.gen_range(0..10) {
            0..=5 if rng.gen_bool(grow) => {
                let k = bytes_key(&mut rng);
                let v = bytes_value(&mut rng);
                let existed = map.insert(&mut heap, &k, &v).unwrap();
                assert_eq!(existed, model.insert(k.clone(), v).is_some());
                if !existed {
                    keys.push(k);
                }
            }
            0..=5 if !keys.is_empty() => {
                let k = keys.swap_remove(rng.gen_range(0..keys.len()));
                assert!(map.remove(&mut heap, &k), "seed {seed} step {step}");
                model.remove(&k);
            }
            6..=8 => {
                let budget = [0, 1, 3, 16, 64, 300][rng.gen_range(0..6)];
                let p = map.compact_step(&mut heap, budget);
                check_step(p, budget);
                done.add(p);
            }
            _ if !keys.is_empty() => {
                let k = &keys[rng.gen_range(0..keys.len())];
                let got = map.get(&heap, k).map(|v| v.bytes.to_vec());
                assert_eq!(got.as_ref(), model.get(k), "seed {seed} step {step}");
            }
            _ => {}
        }
        assert_eq!(map.len(), model.len());
        map.validate(&heap)
            .unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
    }
    assert!(
        done.merged > 0 && done.moved > 0 && done.freed > 0,
        "seed {seed}: {done:?}"
    );
    compact_to_end(&mut map, &mut heap);
    map.validate(&heap).unwrap();
    let got: HashMap<Vec<u8>, Vec<u8>> = map
        .iter(&heap)
        .map(|(k, v)| (k.to_vec(), v.bytes.to_vec()))
        .collect();
    assert!(got == model, "seed {seed}: the map differs from the model");
    map.destroy(&mut heap);
    assert_eq!(heap.stats().requested_bytes, 0, "every page and blob freed");
}

#[test]
fn pagehash_compaction_matches_hashmap() {
    for seed in 0..6 {
        run_pagehash(seed, 25_000 / SCALE, &config(seed));
    }
}

#[test]
fn pagehash_compaction_with_every_key_in_one_run_of_its_bucket() {
    // Every hash has the same low 15 bits: runs fill to 127 entries long before pages do, so
    // merges are refused for their runs' counts; compaction must still end and stay valid.
    let config = Config {
        seed: Some(11),
        hash_mask: !0x7FFF,
        ..Config::default()
    };
    run_pagehash(11, 20_000 / SCALE, &config);
}

/// An IntMap key from one of several distributions (the entry forms differ per family).
fn int_key(rng: &mut SmallRng, kind: u32) -> u64 {
    match kind {
        0 => rng.gen_range(0..200_000),
        1 => rng.r#gen(),
        2 => rng.gen_range(0..1u64 << 32),
        _ => {
            let kind = rng.gen_range(0..3);
            int_key(rng, kind)
        }
    }
}

fn run_intmap(seed: u64, ops: usize) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut heap = Heap::new().unwrap();
    let mut map = IntMap::with_config(&mut heap, &config(seed)).unwrap();
    let mut model: HashMap<u64, u64> = HashMap::new();
    let mut keys: Vec<u64> = Vec::new();
    let mut done = CompactProgress::default();
    let kind = rng.gen_range(0..4);
    for step in 0..ops {
        let grow = match step * 3 / ops {
            0 => 0.9,
            1 => 0.15,
            _ => 0.6,
        };
        match rng.gen_range(0..10) {
            0..=5 if rng.gen_bool(grow) => {
                let k = int_key(&mut rng, kind);
                let v = if rng.gen_bool(0.5) { k } else { rng.r#gen() };
                let old = map.insert(&mut heap, k, v).unwrap();
                assert_eq!(old, model.insert(k, v), "seed {seed} step {step}");
                if old.is_none() {
                    keys.push(k);
                }
            }
            0..=5 if !keys.is_empty() => {
                let k = keys.swap_remove(rng.gen_range(0..keys.len()));
                assert_eq!(map.remove(&mut heap, k), model.remove(&k));
            }
            6..=8 => {
                let budget = [0, 1, 3, 16, 64, 300][rng.gen_range(0..6)];
                let p = map.compact_step(&mut heap, budget);
                check_step(p, budget);
                done.add(p);
            }
            _ if !keys.is_empty() => {
                let k = keys[rng.gen_range(0..keys.len())];
                assert_eq!(
                    map.get(k),
                    model.get(&k).copied(),
                    "seed {seed} step {step}"
                );
            }
            _ => {}
        }
        assert_eq!(map.len(), model.len());
        map.validate(&heap)
            .unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
    }
    assert!(
        done.merged > 0 && done.moved > 0 && done.freed > 0,
        "seed {seed}: {done:?}"
    );
    compact_to_end(&mut map, &mut heap);
    map.validate(&heap).unwrap();
    let got: HashMap<u64, u64> = map.iter().collect();
    assert_eq!(got, model, "seed {seed}");
    map.destroy(&mut heap);
    assert_eq!(heap.stats().requested_bytes, 0);
}

#[test]
fn intmap_compaction_matches_hashmap() {
    for seed in 0..6 {
        run_intmap(seed, 30_000 / SCALE);
    }
}

#[test]
fn intset_compaction_keeps_every_member() {
    let mut rng = SmallRng::seed_from_u64(5);
    let mut heap = Heap::new().unwrap();
    let mut set = IntSet::new(&mut heap).unwrap();
    let members: Vec<u64> = (0..(60_000 / BIG_SCALE) as u64)
        .map(|_| rng.r#gen())
        .collect();
    for &m in &members {
        assert!(set.insert(&mut heap, m).unwrap());
    }
    let full = set.memory_bytes();
    for &m in members.iter().filter(|&&m| m % 8 != 0) {
        assert!(set.remove(&mut heap, m));
    }
    assert!(set.sparse() || !FULL_SIZE);
    compact_to_end(&mut set, &mut heap);
    set.validate(&heap).unwrap();
    // An eighth of the members kept: well under a quarter of the full load's bytes.
    assert!(
        set.memory_bytes() * 4 < full || !FULL_SIZE,
        "{full} -> {}",
        set.memory_bytes()
    );
    let kept: HashSet<u64> = members.iter().copied().filter(|m| m % 8 == 0).collect();
    assert_eq!(set.iter().collect::<HashSet<u64>>(), kept);
    set.destroy(&mut heap);
}

/// SCAN from 0 to 0 with compaction steps, removals and inserts between its steps: every key
/// present throughout is returned.
#[test]
fn pagehash_scan_across_compaction_returns_every_stable_key() {
    for seed in 0..4 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut heap = Heap::new().unwrap();
        let mut map = PageHash::with_config(&mut heap, &config(seed)).unwrap();
        let stable: Vec<Vec<u8>> = (0..(3_000 * SCALE / BIG_SCALE) as u32)
            .map(|i| format!("stable:{i}").into_bytes())
            .collect();
        let mut churn: Vec<Vec<u8>> = (0..(30_000 * SCALE / BIG_SCALE) as u32)
            .map(|i| format!("churn:{i}").into_bytes())
            .collect();
        for k in stable.iter().chain(&churn) {
            map.insert(&mut heap, k, b"0123456789abcdef").unwrap();
        }
        let mut seen = HashSet::new();
        let (mut cursor, mut steps, mut merged) = (0, 0, 0);
        loop {
            cursor = map.scan(&heap, cursor, |k, _| {
                seen.insert(k.to_vec());
            });
            steps += 1;
            // Thin the churn keys so that buckets merge and pages empty under the cursor.
            for _ in 0..rng.gen_range(0..600).min(churn.len()) {
                let k = churn.swap_remove(rng.gen_range(0..churn.len()));
                assert!(map.remove(&mut heap, &k));
            }
            if rng.gen_bool(0.1) {
                let k = format!("new:{steps}").into_bytes();
                map.insert(&mut heap, &k, b"x").unwrap();
            }
            merged += map.compact_step(&mut heap, rng.gen_range(1..200)).merged;
            map.validate(&heap).unwrap();
            if cursor == 0 {
                break;
            }
            assert!(steps < 100_000);
        }
        assert!(
            merged > 0 || !FULL_SIZE,
            "seed {seed}: no merge during the scan"
        );
        for k in &stable {
            assert!(seen.contains(k), "seed {seed}: scan missed a key");
        }
        map.destroy(&mut heap);
    }
}

#[test]
fn intmap_scan_across_compaction_returns_every_stable_key() {
    for seed in 0..4 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut heap = Heap::new().unwrap();
        let mut map = IntMap::with_config(&mut heap, &config(seed)).unwrap();
        let stable: Vec<u64> = (0..4_000 * SCALE / BIG_SCALE)
            .map(|_| rng.r#gen())
            .collect();
        let mut churn: Vec<u64> = (0..40_000 * SCALE / BIG_SCALE)
            .map(|_| rng.r#gen())
            .collect();
        for &k in stable.iter().chain(&churn) {
            map.insert(&mut heap, k, k ^ 1).unwrap();
        }
        let mut seen = HashSet::new();
        let (mut cursor, mut steps, mut merged) = (0, 0, 0);
        loop {
            cursor = map.scan(cursor, |k, v| {
                assert_eq!(v, k ^ 1);
                seen.insert(k);
            });
            steps += 1;
            for _ in 0..rng.gen_range(0..800).min(churn.len()) {
                let k = churn.swap_remove(rng.gen_range(0..churn.len()));
                assert!(map.remove(&mut heap, k).is_some());
            }
            merged += map.compact_step(&mut heap, rng.gen_range(1..200)).merged;
            map.validate(&heap).unwrap();
            if cursor == 0 {
                break;
            }
            assert!(steps < 100_000);
        }
        assert!(
            merged > 0 || !FULL_SIZE,
            "seed {seed}: no merge during the scan"
        );
        for k in &stable {
            assert!(seen.contains(k), "seed {seed}: scan missed key {k}");
        }
        map.destroy(&mut heap);
    }
}

/// 16-byte `key:%012d` keys with 16-byte values, the keyspace's typical entry.
fn key(i: u32) -> [u8; 16] {
    let mut k = [0u8; 16];
    k.copy_from_slice(format!("key:{i:012}").as_bytes());
    k
}

#[test]
fn pagehash_uniform_removals_then_compaction_give_the_pages_back() {
    let n = (200_000 / BIG_SCALE) as u32;
    let mut heap = Heap::new().unwrap();
    let mut map = PageHash::with_config(&mut heap, &config(9)).unwrap();
    for i in 0..n {
        map.insert(&mut heap, &key(i), format!("{i:016}").as_bytes())
            .unwrap();
    }
    let fresh = map.memory_bytes() as f64 / f64::from(n);
    assert!(
        !map.sparse(),
        "a freshly loaded map is not sparse: {:?}",
        map.shape()
    );
    // Every other key, then all but a tenth, then everything.
    for (label, keep) in [("50%", 2), ("90%", 10)] {
        for i in (0..n).filter(|i| i % keep != 0) {
            map.remove(&mut heap, &key(i));
        }
        assert!(map.sparse() || !FULL_SIZE, "{label}: {:?}", map.shape());
        compact_to_end(&mut map, &mut heap);
        map.validate(&heap).unwrap();
        let per_entry = map.memory_bytes() as f64 / map.len() as f64;
        let shape = map.shape();
        assert!(
            per_entry <= 1.25 * fresh || !FULL_SIZE,
            "{label} removed: {per_entry:.1} B/entry against {fresh:.1} fresh, {shape:?}"
        );
        assert!(
            shape.fill_ratio >= 0.85 || !FULL_SIZE,
            "{label} removed: {shape:?}"
        );
        for i in (0..n).step_by(keep as usize * 7) {
            let want = format!("{i:016}");
            assert_eq!(map.get(&heap, &key(i)).unwrap().bytes, want.as_bytes());
        }
    }
    for i in (0..n).step_by(10) {
        map.remove(&mut heap, &key(i));
    }
    compact_to_end(&mut map, &mut heap);
    map.validate(&heap).unwrap();
    let shape = map.shape();
    assert_eq!(
        (map.len(), shape.page_count, shape.global_depth),
        (0, 1, 0),
        "{shape:?}"
    );
    map.destroy(&mut heap);
    assert_eq!(heap.stats().requested_bytes, 0);
}

#[test]
fn intmap_uniform_removals_then_compaction_give_the_pages_back() {
    let n = (200_000 / BIG_SCALE) as u64;
    let mut rng = SmallRng::seed_from_u64(4);
    let keys: Vec<u64> = (0..n).map(|_| rng.r#gen()).collect();
    let mut heap = Heap::new().unwrap();
    let mut map = IntMap::with_config(&mut heap, &config(4)).unwrap();
    for &k in &keys {
        map.insert(&mut heap, k, k >> 3).unwrap();
    }
    let fresh = map.memory_bytes() as f64 / n as f64;
    for (label, keep) in [("50%", 2), ("90%", 10)] {
        for (_, &k) in keys.iter().enumerate().filter(|(i, _)| i % keep != 0) {
            map.remove(&mut heap, k);
        }
        compact_to_end(&mut map, &mut heap);
        map.validate(&heap).unwrap();
        let per_entry = map.memory_bytes() as f64 / map.len() as f64;
        let shape = map.shape();
        assert!(
            per_entry <= 1.25 * fresh || !FULL_SIZE,
            "{label} removed: {per_entry:.2} B/entry against {fresh:.2} fresh, {shape:?}"
        );
        assert!(
            shape.fill_ratio >= 0.85 || !FULL_SIZE,
            "{label} removed: {shape:?}"
        );
    }
    for (i, &k) in keys.iter().enumerate() {
        assert_eq!(map.get(k), (i % 10 == 0).then_some(k >> 3));
    }
    for &k in keys.iter().step_by(10) {
        map.remove(&mut heap, k);
    }
    compact_to_end(&mut map, &mut heap);
    let shape = map.shape();
    assert_eq!(
        (map.len(), shape.page_count, shape.global_depth),
        (0, 1, 0),
        "{shape:?}"
    );
    map.destroy(&mut heap);
}

#[test]
fn sparse_is_false_for_dense_and_tiny_maps_and_true_until_a_started_pass_ends() {
    let mut heap = Heap::new().unwrap();
    let mut map = PageHash::with_config(&mut heap, &config(2)).unwrap();
    assert!(!map.sparse(), "one page is never sparse");
    let n = (20_000 * SCALE / BIG_SCALE).max(4_000) as u32;
    for i in 0..n {
        map.insert(&mut heap, &key(i), b"v").unwrap();
    }
    assert!(!map.sparse(), "{:?}", map.shape());
    // A pass over a dense map frees nothing, and leaves `sparse` false when it ends.
    let mut total = CompactProgress::default();
    while !total.pass_done {
        total.add(map.compact_step(&mut heap, 32));
    }
    // It may empty a page or two that growth left under 7/8 full, never enough for another.
    assert!(total.freed * 32 <= map.shape().page_count, "{total:?}");
    assert!(!map.sparse());
    map.validate(&heap).unwrap();
    // Thinned, it is sparse until compaction is done; a started pass keeps it sparse until
    // the pass ends even if the fill crossed the threshold.
    for i in (0..n).filter(|i| i % 3 != 0) {
        map.remove(&mut heap, &key(i));
    }
    assert!(map.sparse(), "{:?}", map.shape());
    let p = map.compact_step(&mut heap, 1);
    assert!(!p.pass_done && map.sparse());
    let steps = compact_to_end(&mut map, &mut heap);
    assert!(steps > 0);
    assert!(
        map.shape().fill_ratio > 0.85 || !FULL_SIZE,
        "{:?}",
        map.shape()
    );
    map.destroy(&mut heap);
}

#[test]
fn a_map_compaction_cannot_shrink_goes_quiet_after_one_fruitless_pass() {
    // Every hash has the same low 15 bits, so each bucket's entries share one run, and 6-byte
    // entries fill a run's 127 slots at ~760 bytes: buddies of ~100 entries cannot merge, and
    // pages of eight such buckets are ~60% full with no tenant slot free. The map stays under
    // 3/4 fill whatever compaction does; `sparse` must turn false after a pass that merges and
    // frees nothing, and stay false until the map changes by a page's worth.
    let config = Config {
        seed: Some(21),
        hash_mask: !0x7FFF,
        ..Config::default()
    };
    let mut heap = Heap::new().unwrap();
    let mut map = PageHash::with_config(&mut heap, &config).unwrap();
    let n = (60_000 * SCALE / BIG_SCALE).max(6_000) as u32;
    for i in 0..n {
        map.insert(&mut heap, &i.to_le_bytes()[..3], b"").unwrap();
    }
    let before = map.shape();
    assert!(before.fill_ratio < 0.7 && map.sparse(), "{before:?}");
    let steps = compact_to_end(&mut map, &mut heap);
    // One pass of visits, 64 per step (a move or two at most besides).
    assert!(
        steps <= before.bucket_count / 60 + 2,
        "{steps} steps, {before:?}"
    );
    assert!(
        !map.sparse() && map.shape().fill_ratio < 0.75,
        "{:?}",
        map.shape()
    );
    map.validate(&heap).unwrap();
    // A few removals do not wake it; a page's worth of bytes (6 per entry) does.
    let mut i = 0u32;
    while i < 10 {
        assert!(map.remove(&mut heap, &i.to_le_bytes()[..3]));
        i += 1;
    }
    assert!(!map.sparse());
    while i < 10 + maps::AREA_BYTES as u32 / 6 + 1 {
        assert!(map.remove(&mut heap, &i.to_le_bytes()[..3]));
        i += 1;
    }
    assert!(map.sparse(), "{:?}", map.shape());
    compact_to_end(&mut map, &mut heap);
    map.validate(&heap).unwrap();
    map.destroy(&mut heap);
}
