//! Seeded model-based randomized tests of `PageHash` (and `SmallMap` conversion) against
//! `std::collections::HashMap`, validating every page after every operation.

use heap::Heap;
use maps::{Config, Meta, PageHash};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
/// Debug builds run a quarter of the operations (the release suite is the thorough one).
const SCALE: usize = if cfg!(debug_assertions) { 4 } else { 1 };

use std::collections::{HashMap, HashSet};

type Model = HashMap<Vec<u8>, (Vec<u8>, Meta)>;

/// A length from a mix that covers 0, inline, the inline/out-of-line boundary, large and
/// (rarely, when `huge`) more than 1 MiB.
fn length(rng: &mut SmallRng, huge: bool) -> usize {
    match rng.gen_range(0..100) {
        0..=4 => 0,
        5..=59 => rng.gen_range(1..20),
        60..=89 => rng.gen_range(20..70),
        90..=98 => rng.gen_range(70..5_000),
        _ if huge && rng.gen_bool(0.3) => (1 << 20) + rng.gen_range(1..1000),
        _ => rng.gen_range(1..8),
    }
}

/// Keys are drawn from a bounded pool so that gets, overwrites and removes hit.
fn pool(rng: &mut SmallRng, n: usize, huge: bool) -> Vec<Vec<u8>> {
    let mut seen = HashSet::new();
    let mut keys = Vec::new();
    if huge {
        // Always the extremes: the empty key and keys over 1 MiB.
        keys.push(Vec::new());
        keys.push(vec![7u8; (1 << 20) + 5]);
        keys.push(vec![7u8; (1 << 20) + 6]);
        seen.extend(keys.iter().cloned());
    }
    while keys.len() < n {
        let len = length(rng, huge);
        let key: Vec<u8> = (0..len).map(|_| rng.r#gen()).collect();
        if seen.insert(key.clone()) {
            keys.push(key);
        }
    }
    keys
}

fn bytes(rng: &mut SmallRng, huge: bool) -> Vec<u8> {
    let len = length(rng, huge);
    let b: u8 = rng.r#gen();
    (0..len).map(|i| b.wrapping_add(i as u8)).collect()
}

fn check_all(map: &PageHash, heap: &Heap, model: &Model) {
    let mut got: Model = HashMap::new();
    for (k, v) in map.iter(heap) {
        assert!(
            got.insert(k.to_vec(), (v.bytes.to_vec(), v.meta)).is_none(),
            "duplicate key in iter"
        );
    }
    assert_eq!(got.len(), model.len());
    assert!(got == *model, "iteration differs from the model");
}

/// A scan step from `cursor` that flips the top meta bit of every entry it visits, in the map
/// and in the model.
fn flip_scanned(map: &mut PageHash, heap: &Heap, model: &mut Model, cursor: u64) {
    map.scan_update_meta(heap, cursor, |k, v| {
        let flipped = Meta(v.meta.0 ^ 0x80);
        model.get_mut(k).expect("a visited key is in the model").1 = flipped;
        Some(flipped)
    });
}

/// A new length for an edit of a value of `old` bytes: appends (small and large), shrinks,
/// and jumps across the inline/out-of-line boundary and the exact-capacity band.
fn edit_length(rng: &mut SmallRng, old: usize, huge: bool) -> usize {
    match rng.gen_range(0..10) {
        0..=3 => old + rng.gen_range(0..24),
        4 => old + rng.gen_range(0..3_000),
        5 => old / rng.gen_range(1..4),
        6 => rng.gen_range(90..140),
        7 if huge => old + rng.gen_range(0..(300 << 10)),
        7 => maps::VALUE_EXACT_MAX_BYTES + rng.gen_range(0..9_000) - 4_500,
        _ => length(rng, huge),
    }
}

/// An edit through `edit_value`, done to the model too: resize (keep, zero-extend), then write
/// `data` at `at` (clipped to the new length).
fn edit(map: &mut PageHash, heap: &mut Heap, model: &mut Model, key: &[u8], rng: &mut SmallRng) {
    let huge = rng.gen_bool(0.05);
    let old_len = model.get(key).map_or(0, |e| e.0.len());
    let new_len = edit_length(rng, old_len, huge);
    let at = rng.gen_range(0..=new_len);
    let data: Vec<u8> = (0..rng.gen_range(0..40)).map(|_| rng.r#gen()).collect();
    let write = |bytes: &mut [u8]| {
        let end = (at + data.len()).min(bytes.len());
        bytes[at..end].copy_from_slice(&data[..end - at]);
    };
    let mut expected_len = None;
    let existed = map
        .edit_value(heap, key, new_len, |bytes| {
            expected_len = Some(bytes.len());
            write(bytes);
        })
        .unwrap();
    assert_eq!(existed, model.contains_key(key));
    if let Some(entry) = model.get_mut(key) {
        assert_eq!(expected_len, Some(new_len), "f sees the whole new value");
        entry.0.resize(new_len, 0);
        write(&mut entry.0);
    } else {
        assert_eq!(expected_len, None, "f is not called for an absent key");
    }
}

/// An edit through `edit_in_place`, done to the model too: `data` written at `at` (clipped to
/// the value) and a new meta, lengths unchanged.
fn edit_here(
    map: &mut PageHash,
    heap: &mut Heap,
    model: &mut Model,
    key: &[u8],
    rng: &mut SmallRng,
) {
    let old_len = model.get(key).map_or(0, |e| e.0.len());
    let at = rng.gen_range(0..=old_len);
    let data: Vec<u8> = (0..rng.gen_range(0..40)).map(|_| rng.r#gen()).collect();
    let new_meta = Meta(rng.r#gen());
    let write = |bytes: &mut [u8]| {
        let end = (at + data.len()).min(bytes.len());
        bytes[at..end].copy_from_slice(&data[..end - at]);
    };
    let seen = map.edit_in_place(heap, key, |meta, bytes| {
        let before = (*meta, bytes.len());
        write(bytes);
        *meta = new_meta;
        before
    });
    match model.get_mut(key) {
        Some(entry) => {
            assert_eq!(
                seen,
                Some((entry.1, old_len)),
                "f sees the meta and the whole value"
            );
            write(&mut entry.0);
            entry.1 = new_meta;
        }
        None => assert_eq!(seen, None, "f is not called for an absent key"),
    }
}

/// A batch through the pipelined path: present and absent keys, repeats.
fn get_batch(map: &PageHash, heap: &Heap, model: &Model, keys: &[Vec<u8>], rng: &mut SmallRng) {
    let batch: Vec<&Vec<u8>> = (0..rng.gen_range(0..40))
        .map(|_| &keys[rng.gen_range(0..keys.len())])
        .collect();
    let mut seen = 0;
    map.get_many(heap, &batch, |i, v| {
        assert_eq!(i, seen, "get_many answers in order");
        seen += 1;
        let got = v.map(|v| (v.bytes.to_vec(), v.meta));
        assert_eq!(got.as_ref(), model.get(batch[i]), "get_many");
    });
    assert_eq!(seen, batch.len());
}

/// A defrag step from `cursor`: nothing it does is visible (values, metas and lengths stay;
/// `validate` after it checks the moved blobs).
fn defrag(map: &mut PageHash, heap: &mut Heap, cursor: u64) {
    let mut moved = 0;
    let (_, counts) = map.defrag_step(heap, cursor, || moved += 1);
    assert_eq!(counts.hits, moved);
}

fn run(seed: u64, ops: usize, pool_size: usize, config: Config, huge: bool) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut heap = Heap::new().unwrap();
    let mut map = PageHash::with_config(&mut heap, &config).unwrap();
    let mut model: Model = HashMap::new();
    let keys = pool(&mut rng, pool_size, huge);
    let enabled: [bool; 6] = std::array::from_fn(|_| rng.gen_bool(0.7));
    for step in 0..ops {
        let key = &keys[rng.gen_range(0..keys.len())];
        let late = step > ops / 2;
        match rng.gen_range(0..11) {
            0..=2 => {
                let v = bytes(&mut rng, huge);
                let existed = map.insert(&mut heap, key, &v).unwrap();
                let meta = model.get(key).map_or(Meta::default(), |e| e.1);
                assert_eq!(existed, model.insert(key.clone(), (v, meta)).is_some());
            }
            3 if enabled[0] => {
                let v = bytes(&mut rng, huge);
                let meta = Meta::new(rng.gen_range(0..16), rng.r#gen(), rng.gen_range(0..4));
                let existed = map.insert_with_meta(&mut heap, key, &v, meta).unwrap();
                assert_eq!(existed, model.insert(key.clone(), (v, meta)).is_some());
            }
            4 if enabled[1] || late => {
                assert_eq!(map.remove(&mut heap, key), model.remove(key).is_some());
            }
            5 if enabled[2] || late => assert_eq!(map.take(&mut heap, key), model.remove(key)),
            6 if enabled[3] => {
                let meta = Meta(rng.r#gen());
                assert_eq!(map.set_meta(&heap, key, meta), model.contains_key(key));
                if let Some(e) = model.get_mut(key) {
                    e.1 = meta;
                }
            }
            7 if enabled[4] && step % 50 == 0 => {
                check_all(&map, &heap, &model);
                get_batch(&map, &heap, &model, &keys, &mut rng);
            }
            8 if enabled[5] && step % 13 == 0 => match map.sample(&heap, rng.r#gen()) {
                Some((k, v)) => assert_eq!(model.get(k), Some(&(v.bytes.to_vec(), v.meta))),
                None => assert!(model.is_empty()),
            },
            8 if step % 7 == 0 => flip_scanned(&mut map, &heap, &mut model, rng.r#gen()),
            9 if rng.gen_bool(0.3) => edit_here(&mut map, &mut heap, &mut model, key, &mut rng),
            9 => edit(&mut map, &mut heap, &mut model, key, &mut rng),
            10 if step % 5 == 0 => defrag(&mut map, &mut heap, rng.r#gen()),
            _ => {
                let got = map.get(&heap, key).map(|v| (v.bytes.to_vec(), v.meta));
                assert_eq!(got.as_ref(), model.get(key), "seed {seed} step {step}: get");
            }
        }
        assert_eq!(map.len(), model.len());
        map.validate(&heap)
            .unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
    }
    check_all(&map, &heap, &model);
    assert!(map.memory_bytes() >= map.shape().page_count * maps::PAGE_BYTES);
    map.destroy(&mut heap);
    let stats = heap.stats();
    assert_eq!(
        stats.requested_bytes, 0,
        "destroy freed every page and blob"
    );
}

#[test]
fn pagehash_matches_hashmap() {
    for seed in 0..10 {
        let probe = [1u8, 2, 4, 16, 128][seed as usize % 5];
        let config = Config {
            probe_count_max: probe,
            seed: Some(seed),
            ..Config::default()
        };
        run(
            seed,
            5_000 / SCALE,
            if seed % 2 == 0 { 300 } else { 3_000 },
            config,
            false,
        );
    }
}

#[test]
fn pagehash_with_keys_and_values_over_one_mebibyte() {
    run(
        100,
        1_500 / SCALE,
        200,
        Config {
            seed: Some(100),
            ..Config::default()
        },
        true,
    );
}

#[test]
fn pagehash_all_keys_colliding_on_hint() {
    // Every hash has hint 0: lookups decode every candidate of the piece and still find the right
    // key; the hint-match path is exercised at its worst.
    let config = Config {
        seed: Some(7),
        hash_mask: !(0xFF << 7),
        ..Config::default()
    };
    run(7, 4_000 / SCALE, 2_000, config, false);
}

#[test]
fn pagehash_all_keys_in_one_run_split_their_buckets() {
    // Every hash has the same low 15 bits (home and hint): each bucket's entries share one run,
    // which fills to 127 entries long before its page does; inserts then split the bucket (or
    // shed another one to free a slot), and lookups decode every candidate of the run.
    let config = Config {
        seed: Some(11),
        hash_mask: !0x7FFF,
        ..Config::default()
    };
    run(11, 6_000 / SCALE, 3_000, config, false);
    // Short entries: runs fill (127) long before pages do, again and again as buckets split.
    let mut heap = Heap::new().unwrap();
    let mut map = PageHash::with_config(&mut heap, &config).unwrap();
    let n = 20_000 / SCALE as u32;
    for i in 0..n {
        assert!(!map.insert(&mut heap, &i.to_le_bytes(), b"v").unwrap());
        if i % 997 == 0 {
            map.validate(&heap).unwrap();
        }
    }
    map.validate(&heap).unwrap();
    for i in 0..n {
        assert_eq!(map.get(&heap, &i.to_le_bytes()).unwrap().bytes, b"v");
    }
    for i in 0..n {
        assert!(map.remove(&mut heap, &i.to_le_bytes()));
        if i % 997 == 0 {
            map.validate(&heap).unwrap();
        }
    }
    assert_eq!(map.len(), 0);
    map.validate(&heap).unwrap();
    map.destroy(&mut heap);
}

#[test]
fn pagehash_all_keys_colliding_entirely_report_full_not_corruption() {
    // Identical hashes cannot be separated by splitting: their run fills (127 entries), then
    // the map reports Full at its maximum depth.
    let mut heap = Heap::new().unwrap();
    let config = Config {
        seed: Some(1),
        hash_mask: 0,
        depth_max: 4,
        ..Config::default()
    };
    let mut map = PageHash::with_config(&mut heap, &config).unwrap();
    let mut n = 0u32;
    let err = loop {
        match map.insert(&mut heap, &n.to_le_bytes(), b"v") {
            Ok(_) => n += 1,
            Err(e) => break e,
        }
        assert!(n < 10_000);
    };
    assert_eq!(err, maps::MapError::Full);
    map.validate(&heap).unwrap();
    for i in 0..n {
        assert_eq!(map.get(&heap, &i.to_le_bytes()).unwrap().bytes, b"v");
    }
    map.destroy(&mut heap);
}

#[test]
fn pagehash_grows_and_merges_down_to_one_page() {
    let mut heap = Heap::new().unwrap();
    let mut map = PageHash::with_config(
        &mut heap,
        &Config {
            seed: Some(3),
            ..Config::default()
        },
    )
    .unwrap();
    let key = |i: u32| format!("key:{i:08}").into_bytes();
    for i in 0..40_000 {
        map.insert(&mut heap, &key(i), &i.to_le_bytes()).unwrap();
    }
    map.validate(&heap).unwrap();
    assert!(map.shape().page_count > 50, "{:?}", map.shape());
    for i in 5..40_000 {
        assert!(map.remove(&mut heap, &key(i)));
    }
    map.validate(&heap).unwrap();
    let shape = map.shape();
    assert_eq!((shape.page_count, shape.global_depth), (1, 0), "{shape:?}");
    for i in 0..5 {
        assert_eq!(map.get(&heap, &key(i)).unwrap().bytes, i.to_le_bytes());
    }
    map.destroy(&mut heap);
}

#[test]
fn pagehash_scan_with_concurrent_mutation_returns_every_stable_key() {
    for seed in 0..4 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut heap = Heap::new().unwrap();
        let mut map = PageHash::with_config(
            &mut heap,
            &Config {
                seed: Some(seed),
                ..Config::default()
            },
        )
        .unwrap();
        let stable = pool(&mut rng, 3_000, false);
        for k in &stable {
            map.insert(&mut heap, k, b"s").unwrap();
        }
        let mut churn: Vec<Vec<u8>> = Vec::new();
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        let mut cursor = 0;
        for steps in 0.. {
            cursor = map.scan(&heap, cursor, |k, _| {
                seen.insert(k.to_vec());
            });
            let n = rng.gen_range(0..300);
            if rng.gen_bool(0.5) {
                for _ in 0..n {
                    let k: Vec<u8> = (0..rng.gen_range(1..40)).map(|_| rng.r#gen()).collect();
                    if !map.insert(&mut heap, &k, b"c").unwrap() {
                        churn.push(k);
                    }
                }
            } else {
                for _ in 0..n.min(churn.len()) {
                    let k = churn.swap_remove(rng.gen_range(0..churn.len()));
                    assert!(map.remove(&mut heap, &k));
                }
            }
            map.validate(&heap).unwrap();
            if cursor == 0 {
                break;
            }
            assert!(steps < 100_000);
        }
        for k in &stable {
            assert!(seen.contains(k), "seed {seed}: scan missed a key");
        }
        map.destroy(&mut heap);
    }
}

#[test]
fn pagehash_clear_frees_everything_and_stays_usable() {
    let mut heap = Heap::new().unwrap();
    let mut map = PageHash::new(&mut heap).unwrap();
    for i in 0..20_000u32 {
        let value = vec![b'v'; (i % 100) as usize];
        map.insert(&mut heap, &i.to_le_bytes(), &value).unwrap();
    }
    map.clear(&mut heap).unwrap();
    assert_eq!(map.len(), 0);
    assert_eq!(map.shape().page_count, 1);
    assert_eq!(heap.stats().requested_bytes, maps::PAGE_BYTES as u64);
    map.insert(&mut heap, b"k", b"v").unwrap();
    assert_eq!(map.get(&heap, b"k").unwrap().bytes, b"v");
    map.validate(&heap).unwrap();
    map.destroy(&mut heap);
    assert_eq!(heap.stats().requested_bytes, 0);
}

#[test]
fn pagehash_one_mebibyte_keys_and_values_round_trip_and_free() {
    let mut heap = Heap::new().unwrap();
    let mut map = PageHash::new(&mut heap).unwrap();
    let mib = 1 << 20;
    let big_key: Vec<u8> = (0..mib).map(|i| (i * 7) as u8).collect();
    let big_value: Vec<u8> = (0..mib).map(|i| (i * 13) as u8).collect();
    // A 1 MiB key with a 1 MiB value, a 1 MiB key with a short value, a short key with a 1 MiB
    // value, among short 16+16 entries that share their pages.
    map.insert(&mut heap, &big_key, &big_value).unwrap();
    map.insert(&mut heap, &big_key[1..], b"short").unwrap();
    map.insert(&mut heap, b"short-key", &big_value).unwrap();
    for i in 0..2_000u32 {
        let k = format!("key:{i:012}");
        map.insert(&mut heap, k.as_bytes(), &[i as u8; 16]).unwrap();
    }
    map.validate(&heap).unwrap();
    assert_eq!(
        map.get(&heap, &big_key).unwrap().bytes,
        big_value.as_slice()
    );
    assert_eq!(map.get(&heap, &big_key[1..]).unwrap().bytes, b"short");
    assert_eq!(
        map.get(&heap, b"short-key").unwrap().bytes,
        big_value.as_slice()
    );
    assert_eq!(map.iter(&heap).filter(|(k, _)| k.len() == mib).count(), 1);
    // Overwrite the big value with a short one and back; take and remove free the blobs.
    map.insert(&mut heap, &big_key, b"now short").unwrap();
    assert_eq!(map.get(&heap, &big_key).unwrap().bytes, b"now short");
    map.insert(&mut heap, &big_key, &big_value).unwrap();
    let (taken, _) = map.take(&mut heap, &big_key).unwrap();
    assert_eq!(taken, big_value);
    assert!(map.remove(&mut heap, &big_key[1..]));
    assert!(map.remove(&mut heap, b"short-key"));
    map.validate(&heap).unwrap();
    assert!(
        map.memory_bytes() < 2_000 * 64,
        "blobs freed: {}",
        map.memory_bytes()
    );
    map.destroy(&mut heap);
    assert_eq!(heap.stats().requested_bytes, 0);
}

#[test]
fn pagehash_dense_16_byte_entries_pack_across_pieces() {
    // 16-byte keys and values are 34-byte entries + hint, stored inline back to back across
    // 64-byte pieces: the whole map (pages, directory, no blobs) stays near 40 B per entry.
    let mut heap = Heap::new().unwrap();
    let mut map = PageHash::with_config(
        &mut heap,
        &Config {
            seed: Some(3),
            ..Config::default()
        },
    )
    .unwrap();
    // `expensive-checks` validates the whole map after every insert: keep that run small.
    let n: u32 = if cfg!(feature = "expensive-checks") {
        5_000
    } else {
        200_000
    };
    for i in 0..n {
        let k = format!("key:{i:012}");
        let v = format!("{i:016}");
        map.insert(&mut heap, k.as_bytes(), v.as_bytes()).unwrap();
        if i % 20_000 == 0 {
            map.validate(&heap).unwrap();
        }
    }
    map.validate(&heap).unwrap();
    let per_entry = map.memory_bytes() as f64 / f64::from(n);
    if n >= 100_000 {
        assert!(per_entry < 42.0, "{per_entry} B/entry");
        assert!(map.shape().fill_ratio > 0.88, "{:?}", map.shape());
    }
    for i in (0..n).step_by(7) {
        let k = format!("key:{i:012}");
        assert_eq!(
            map.get(&heap, k.as_bytes()).unwrap().bytes,
            format!("{i:016}").as_bytes()
        );
    }
    map.destroy(&mut heap);
}
