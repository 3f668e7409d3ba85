//! `PageHash::defrag_step`, the active defragmenter's walk: a seeded model test. A map of
//! out-of-line keys and values loses a random 80% of its entries, which leaves the heap's slabs
//! sparse; defrag passes (with other operations and a SCAN running between their steps, and
//! `validate` after every step) must move the hinted blobs, keep every value readable, keep the
//! SCAN guarantee, and leave the slabs fuller and fewer.

use heap::Heap;
use maps::{Config, DefragCounts, PageHash};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};

/// Debug builds run a quarter of the entries (the release suite is the thorough one).
const SCALE: usize = if cfg!(debug_assertions) { 4 } else { 1 };

type Model = HashMap<Vec<u8>, Vec<u8>>;

/// A key: mostly 16 bytes (inline), one in eight 150-250 bytes (a key blob).
fn key(rng: &mut SmallRng, i: usize) -> Vec<u8> {
    let mut k = format!("key:{i:012}").into_bytes();
    if rng.gen_ratio(1, 8) {
        k.resize(rng.gen_range(150..250), b'#');
    }
    k
}

/// A value that lives in a slab slot: 120 B .. 3 KiB, out of line.
fn value(rng: &mut SmallRng) -> Vec<u8> {
    let b: u8 = rng.r#gen();
    (0..rng.gen_range(120..3_000))
        .map(|i| b ^ i as u8)
        .collect()
}

fn check_all(map: &PageHash, heap: &Heap, model: &Model) {
    assert_eq!(map.len(), model.len());
    for (k, v) in model {
        assert!(
            map.get(heap, k).unwrap().bytes == v.as_slice(),
            "value read back"
        );
    }
}

/// Slab bytes and their occupancy (live / slab bytes).
fn slabs(heap: &Heap) -> (u64, f64) {
    let f = heap.fragmentation();
    (
        f.slab_bytes,
        f.live_bytes as f64 / f.slab_bytes.max(1) as f64,
    )
}

/// A map under defragmentation, its model, and what runs between the steps.
struct Run {
    rng: SmallRng,
    heap: Heap,
    map: PageHash,
    model: Model,
    /// Keys outside the stable set, which the operations between steps remove, edit or add.
    churn: Vec<Vec<u8>>,
    fresh: usize,
    /// A SCAN running across the defrag steps, one step per defrag step, and what it returned.
    scan_cursor: u64,
    scan_done: bool,
    scanned: HashSet<Vec<u8>>,
}

impl Run {
    /// Loads `n` entries and removes a random 80%; returns the run and the stable keys (half
    /// of what is left), which a SCAN running alongside the passes must return.
    fn load_and_thin(seed: u64, n: usize) -> (Run, HashSet<Vec<u8>>) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut heap = Heap::new().unwrap();
        let config = Config {
            seed: Some(seed),
            ..Config::default()
        };
        let mut map = PageHash::with_config(&mut heap, &config).unwrap();
        let mut model = Model::new();
        for i in 0..n {
            let (k, v) = (key(&mut rng, i), value(&mut rng));
            map.insert(&mut heap, &k, &v).unwrap();
            model.insert(k, v);
        }
        let mut keys: Vec<Vec<u8>> = model.keys().cloned().collect();
        keys.shuffle(&mut rng);
        for k in keys.drain(..n * 4 / 5) {
            assert!(map.remove(&mut heap, &k));
            model.remove(&k);
        }
        map.validate(&heap).unwrap();
        let stable = keys[..keys.len() / 2].iter().cloned().collect();
        let run = Run {
            rng,
            heap,
            map,
            model,
            churn: keys[keys.len() / 2..].to_vec(),
            fresh: n,
            scan_cursor: 0,
            scan_done: false,
            scanned: HashSet::new(),
        };
        (run, stable)
    }

    /// What runs between two defrag steps: a SCAN step, and a removal, an edit or an insert.
    fn between_steps(&mut self, step: usize) {
        if !self.scan_done {
            let scanned = &mut self.scanned;
            self.scan_cursor = self.map.scan(&self.heap, self.scan_cursor, |k, _| {
                scanned.insert(k.to_vec());
            });
            self.scan_done = self.scan_cursor == 0;
        }
        if !step.is_multiple_of(4) || self.churn.is_empty() {
            return;
        }
        let (heap, map, model) = (&mut self.heap, &mut self.map, &mut self.model);
        let k = self
            .churn
            .swap_remove(self.rng.gen_range(0..self.churn.len()));
        match self.rng.gen_range(0..3) {
            0 => {
                assert!(map.remove(heap, &k));
                model.remove(&k);
            }
            1 => {
                let old = model[&k].len();
                map.edit_value(heap, &k, old + 7, |v| v[old..].fill(9))
                    .unwrap();
                model.get_mut(&k).unwrap().resize(old + 7, 9);
                self.churn.push(k);
            }
            _ => {
                let (k, v) = (key(&mut self.rng, self.fresh), value(&mut self.rng));
                self.fresh += 1;
                map.insert(heap, &k, &v).unwrap();
                model.insert(k.clone(), v);
                self.churn.push(k);
            }
        }
    }

    /// One defrag pass from cursor 0 to 0, validating after every step.
    fn pass(&mut self) -> DefragCounts {
        let (mut cursor, mut counts, mut moved) = (0, DefragCounts::default(), 0);
        for step in 0.. {
            let (next, c) = self.map.defrag_step(&mut self.heap, cursor, || moved += 1);
            counts += c;
            self.map
                .validate(&self.heap)
                .unwrap_or_else(|e| panic!("step {step}: {e}"));
            self.between_steps(step);
            cursor = next;
            if cursor == 0 {
                break;
            }
            assert!(step < 1_000_000, "a pass ends");
        }
        assert_eq!(counts.hits, moved, "on_moved once per blob moved");
        check_all(&self.map, &self.heap, &self.model);
        counts
    }
}

#[test]
fn defrag_passes_move_hinted_blobs_and_empty_sparse_slabs() {
    for seed in 0..2u64 {
        let (mut run, stable) = Run::load_and_thin(seed, 24_000 / SCALE);
        let (slab_bytes_before, occupancy_before) = slabs(&run.heap);
        assert!(
            run.heap.fragmentation().hinted_bytes > 0,
            "removals left sparse slabs"
        );
        let mut total = DefragCounts::default();
        for _ in 0..6 {
            let counts = run.pass();
            total += counts;
            if counts.hits == 0 {
                break;
            }
        }
        assert!(run.scan_done);
        for k in &stable {
            assert!(
                run.scanned.contains(k),
                "seed {seed}: the SCAN missed a stable key"
            );
        }
        let (slab_bytes_after, occupancy_after) = slabs(&run.heap);
        eprintln!(
            "seed {seed}: {total:?}; slabs {slab_bytes_before} -> {slab_bytes_after} B, \
             occupancy {occupancy_before:.3} -> {occupancy_after:.3}"
        );
        assert!(total.hits > 0 && total.misses > 0, "{total:?}");
        assert!(
            occupancy_after > occupancy_before + 0.2,
            "slabs fuller: {occupancy_before:.3} -> {occupancy_after:.3}"
        );
        assert!(
            slab_bytes_after * 10 < slab_bytes_before * 7,
            "slab bytes fell: {slab_bytes_before} -> {slab_bytes_after}"
        );
        run.heap.validate();
        run.map.destroy(&mut run.heap);
        assert_eq!(run.heap.stats().requested_bytes, 0);
    }
}

#[test]
fn defrag_of_a_map_without_blobs_checks_nothing() {
    let mut heap = Heap::new().unwrap();
    let mut map = PageHash::new(&mut heap).unwrap();
    for i in 0..5_000u32 {
        map.insert(
            &mut heap,
            format!("key:{i:012}").as_bytes(),
            &i.to_le_bytes(),
        )
        .unwrap();
    }
    let mut cursor = 0;
    loop {
        let (next, counts) = map.defrag_step(&mut heap, cursor, || panic!("nothing to move"));
        assert_eq!(counts, DefragCounts::default());
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    map.validate(&heap).unwrap();
    map.destroy(&mut heap);
}
