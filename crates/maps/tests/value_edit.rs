//! `PageHash::edit_value`: values grown and shrunk in place (APPEND, SETRANGE, SETBIT), their
//! blobs sized by `capacity_for`, mixed with the insert path, and out of memory leaving the entry
//! as it was. The seeded model test of every operation together is `model_pagehash.rs`.

use heap::{Heap, HeapConfig};
use maps::{Config, MapError, Meta, PageHash, capacity_for};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

fn map(heap: &mut Heap, seed: u64) -> PageHash {
    PageHash::with_config(
        heap,
        &Config {
            seed: Some(seed),
            ..Config::default()
        },
    )
    .unwrap()
}

/// Appends `data` to the value of `key` through `edit_value`.
fn append(map: &mut PageHash, heap: &mut Heap, key: &[u8], data: &[u8]) -> Result<bool, MapError> {
    let old = map.get(heap, key).map_or(0, |v| v.bytes.len());
    map.edit_value(heap, key, old + data.len(), |v| {
        v[old..].copy_from_slice(data);
    })
}

#[test]
fn edit_of_an_absent_key_does_nothing() {
    let mut heap = Heap::new().unwrap();
    let mut map = map(&mut heap, 1);
    let done = map
        .edit_value(&mut heap, b"nope", 10, |_| panic!("not called"))
        .unwrap();
    assert!(!done);
    assert!(map.is_empty());
    map.destroy(&mut heap);
    assert_eq!(heap.stats().requested_bytes, 0);
}

#[test]
fn edit_keeps_meta_zero_extends_truncates_and_crosses_every_form() {
    let mut heap = Heap::new().unwrap();
    let mut map = map(&mut heap, 2);
    let meta = Meta::new(3, true, 2);
    // Keys of the short form, a long inline key, and a key that must leave the entry once its
    // value's length varint grows (110 + 3 + 8 > 120).
    let keys: [&[u8]; 3] = [b"k16-bytes-key-01", &[b'L'; 60], &[b'X'; 110]];
    for key in keys {
        map.insert_with_meta(&mut heap, key, b"abc", meta).unwrap();
        let mut model = b"abc".to_vec();
        for new_len in [
            5, 16, 17, 100, 119, 200, 16_383, 16_384, 40_000, 33_000, 70, 3, 0, 50_000, 10,
        ] {
            let fill = new_len as u8;
            map.edit_value(&mut heap, key, new_len, |v| {
                assert_eq!(v.len(), new_len);
                if let Some(last) = v.last_mut() {
                    *last = fill;
                }
            })
            .unwrap();
            model.resize(new_len, 0);
            if let Some(last) = model.last_mut() {
                *last = fill;
            }
            let got = map.get(&heap, key).unwrap();
            assert_eq!(got.meta, meta, "meta kept");
            assert!(
                got.bytes == model.as_slice(),
                "value after resize to {new_len}"
            );
            map.validate(&heap).unwrap();
        }
    }
    map.destroy(&mut heap);
    assert_eq!(heap.stats().requested_bytes, 0, "no blob leaked");
}

#[test]
fn appends_build_a_value_that_inserts_and_overwrites_agree_with() {
    let mut rng = SmallRng::seed_from_u64(3);
    let mut heap = Heap::new().unwrap();
    let mut map = map(&mut heap, 3);
    let mut model: Vec<u8> = Vec::new();
    map.insert(&mut heap, b"built", b"").unwrap();
    let mut step = 0;
    while model.len() < 3 << 20 {
        let chunk: Vec<u8> = (0..rng.gen_range(1..if step % 50 == 0 { 200_000 } else { 700 }))
            .map(|_| rng.r#gen())
            .collect();
        append(&mut map, &mut heap, b"built", &chunk).unwrap();
        model.extend_from_slice(&chunk);
        if step % 25 == 0 {
            assert!(map.get(&heap, b"built").unwrap().bytes == model.as_slice());
            map.validate(&heap).unwrap();
            // The heap holds exactly one page and one blob of capacity_for(len) bytes.
            let expected = maps::PAGE_BYTES + capacity_for(model.len());
            assert_eq!(heap.stats().requested_bytes, expected as u64);
        }
        step += 1;
    }
    // Overwrite through the insert path (smaller, then larger), then keep appending.
    for len in [1 << 20, 5 << 20, 40_000, 100] {
        model = (0..len).map(|i| (i * 31) as u8).collect();
        map.insert(&mut heap, b"built", &model).unwrap();
        map.validate(&heap).unwrap();
        append(&mut map, &mut heap, b"built", b"tail").unwrap();
        model.extend_from_slice(b"tail");
        assert!(map.get(&heap, b"built").unwrap().bytes == model.as_slice());
        map.validate(&heap).unwrap();
        // Up to 111 bytes the value fits in the entry with its 5-byte key (2 + 6 + 1 + 111).
        let blob = if model.len() >= 112 {
            capacity_for(model.len())
        } else {
            0
        };
        let expected = maps::PAGE_BYTES + blob;
        assert_eq!(heap.stats().requested_bytes, expected as u64);
    }
    assert!(map.remove(&mut heap, b"built"));
    assert_eq!(heap.stats().requested_bytes, maps::PAGE_BYTES as u64);
    map.destroy(&mut heap);
}

#[test]
fn memory_bytes_counts_the_capacity_of_grown_blobs() {
    let mut heap = Heap::new().unwrap();
    let mut map = map(&mut heap, 4);
    map.insert(&mut heap, b"v", b"").unwrap();
    let pages = map.memory_bytes();
    for _ in 0..(4 << 10) {
        append(&mut map, &mut heap, b"v", &[7u8; 1024]).unwrap();
    }
    let len = 4 << 20;
    assert_eq!(map.get(&heap, b"v").unwrap().bytes.len(), len);
    let blob = <Heap>::usable_size(capacity_for(len));
    assert_eq!(map.memory_bytes() - pages, blob);
    assert_eq!(
        heap.stats().allocated_bytes,
        (maps::PAGE_BYTES + blob) as u64
    );
    map.validate(&heap).unwrap();
    map.destroy(&mut heap);
}

/// A heap whose reservation ends at `mib` MiB: allocations past it fail.
fn small_heap(mib: usize) -> Heap {
    Heap::with_config(HeapConfig {
        reserve_bytes: mib << 20,
        ..HeapConfig::default()
    })
    .unwrap()
}

#[test]
fn out_of_memory_leaves_the_entry_unchanged() {
    let mut heap = small_heap(16);
    let mut map = map(&mut heap, 5);
    let long_key = [b'X'; 110];
    let cases: [(&[u8], usize); 5] = [
        (b"inline", 10),              // inline value: the new blob fails
        (b"slab", 3_000),             // slab blob: realloc fails
        (b"big", 1_500_000),          // 3-byte length varint grows to 4: entry first, restored
        (&long_key, 1_000),           // the key would leave the entry: its blob is discarded
        (b"exactly-2MiB-1", 2 << 20), // a large region that cannot grow
    ];
    for (key, len) in cases {
        let value: Vec<u8> = (0..len).map(|i| i as u8).collect();
        map.insert_with_meta(&mut heap, key, &value, Meta(9))
            .unwrap();
        let before = heap.stats().requested_bytes;
        let memory = map.memory_bytes();
        let err = map.edit_value(&mut heap, key, 1 << 30, |_| panic!("no memory, no edit"));
        assert_eq!(err, Err(MapError::OutOfMemory));
        let got = map.get(&heap, key).unwrap();
        assert!(got.bytes == value.as_slice(), "value of {len} bytes kept");
        assert_eq!(got.meta, Meta(9));
        assert_eq!(heap.stats().requested_bytes, before, "nothing allocated");
        assert_eq!(map.memory_bytes(), memory);
        map.validate(&heap).unwrap();
        // An overwrite that cannot be served leaves it too.
        let huge = vec![1u8; 20 << 20];
        assert_eq!(
            map.insert(&mut heap, key, &huge),
            Err(MapError::OutOfMemory)
        );
        assert!(map.get(&heap, key).unwrap().bytes == value.as_slice());
        map.validate(&heap).unwrap();
        assert!(map.remove(&mut heap, key));
    }
    map.destroy(&mut heap);
    assert_eq!(heap.stats().requested_bytes, 0);
}

#[test]
fn random_edits_in_a_tight_heap_fail_cleanly() {
    for seed in 0..4 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut heap = small_heap(12);
        let mut map = map(&mut heap, seed);
        let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        let (mut failures, mut successes) = (0, 0);
        for step in 0..3_000 {
            let key = format!("key:{}", rng.gen_range(0..300)).into_bytes();
            let result = match rng.gen_range(0..10) {
                0..=5 => {
                    let old = model.get(&key).map_or(0, Vec::len);
                    let new_len = match rng.gen_range(0..4) {
                        0 => old + rng.gen_range(0..64),
                        1 => old + rng.gen_range(0..200_000),
                        2 => old / 2,
                        _ => rng.gen_range(0..3_000_000),
                    };
                    let byte = rng.r#gen::<u8>();
                    let result = map.edit_value(&mut heap, &key, new_len, |v| v.fill(byte));
                    if result == Ok(true) {
                        model.insert(key.clone(), vec![byte; new_len]);
                    }
                    result
                }
                6..=8 => {
                    let len = rng.gen_range(0..100_000);
                    let value = vec![rng.r#gen::<u8>(); len];
                    let result = map.insert(&mut heap, &key, &value);
                    if result.is_ok() {
                        model.insert(key.clone(), value);
                    }
                    result
                }
                _ => {
                    let removed = map.remove(&mut heap, &key);
                    assert_eq!(removed, model.remove(&key).is_some());
                    Ok(removed)
                }
            };
            match result {
                Ok(_) => successes += 1,
                Err(e) => {
                    assert_eq!(e, MapError::OutOfMemory);
                    failures += 1;
                }
            }
            let got = map.get(&heap, &key).map(|v| v.bytes.to_vec());
            assert_eq!(got.as_ref(), model.get(&key), "seed {seed} step {step}");
            if step % 20 == 0 {
                map.validate(&heap)
                    .unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
            }
        }
        assert!(
            failures > 50 && successes > 1_000,
            "{failures} / {successes}"
        );
        assert_eq!(map.len(), model.len());
        for (k, v) in &model {
            assert!(map.get(&heap, k).unwrap().bytes == v.as_slice());
        }
        map.destroy(&mut heap);
        assert_eq!(
            heap.stats().requested_bytes,
            0,
            "seed {seed}: nothing leaked"
        );
    }
}

#[test]
fn growing_entries_in_full_pages_of_a_full_heap_fail_cleanly() {
    // Fill a small heap with pages of short entries, then grow inline values (the entry must
    // move to another page, which needs memory) and overwrite them longer: some of it fails,
    // and then the old entry is still there, whole.
    let mut heap = small_heap(3);
    let mut map = map(&mut heap, 6);
    let key = |i: u32| format!("key:{i:012}").into_bytes();
    let mut n = 0;
    while map.insert(&mut heap, &key(n), &[n as u8; 16]).is_ok() {
        n += 1;
    }
    // Every tenth key goes: the pages keep their blocks with a little room in each.
    let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    for i in 0..n {
        if i % 10 == 0 {
            assert!(map.remove(&mut heap, &key(i)));
        } else {
            model.insert(key(i), vec![i as u8; 16]);
        }
    }
    map.validate(&heap).unwrap();
    let (mut failures, mut successes) = (0, 0);
    for i in (0..n).filter(|i| i % 10 != 0) {
        let k = key(i);
        let result = if i % 2 == 0 {
            map.edit_value(&mut heap, &k, 100, |v| v[99] = 1)
        } else {
            map.insert(&mut heap, &k, &[3u8; 90])
        };
        match result {
            Ok(_) => {
                successes += 1;
                let v = model.get_mut(&k).unwrap();
                if i % 2 == 0 {
                    v.resize(100, 0);
                    v[99] = 1;
                } else {
                    *v = vec![3u8; 90];
                }
            }
            Err(e) => {
                assert_eq!(e, MapError::OutOfMemory);
                failures += 1;
            }
        }
        if i % 4_999 == 0 {
            map.validate(&heap).unwrap();
        }
    }
    map.validate(&heap).unwrap();
    assert!(failures > 0 && successes > 0, "{failures} / {successes}");
    for (k, v) in &model {
        assert!(map.get(&heap, k).unwrap().bytes == v.as_slice());
    }
    assert_eq!(map.len(), model.len());
    map.destroy(&mut heap);
    assert_eq!(heap.stats().requested_bytes, 0);
}
