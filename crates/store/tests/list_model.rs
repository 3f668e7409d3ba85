//! Model-based randomized test of the list encoding (`store::ListObj`): the same
//! operations go to a `ListObj` and to a `VecDeque<Vec<u8>>`, and every answer and the whole
//! contents must agree; the chunk invariants are validated after every operation.
//!
//! Each round switches operation kinds on and off at random (a round of only pushes at one end
//! fills whole chunks, one of only pops and LREMs drains and merges them) and picks element sizes
//! around the codec's and the chunk's boundaries: empty, 127/128 bytes (one- and two-byte
//! varints), and now and then larger than a whole chunk. Seeded: `DENSEKV_SEED` overrides the
//! fixed default.

use heap::Heap;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use store::types::list::{CHUNK_MAX_BYTES, ListObj};

fn seed() -> u64 {
    std::env::var("DENSEKV_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x1157_0001)
}

fn element(rng: &mut SmallRng, pool: bool) -> Vec<u8> {
    if pool {
        // A small alphabet of values so LREM/LINSERT-style matches happen.
        return format!("v{}", rng.gen_range(0..6)).into_bytes();
    }
    let len = match rng.gen_range(0..100) {
        0..=4 => 0,
        5..=9 => rng.gen_range(126..130),
        10 => rng.gen_range(CHUNK_MAX_BYTES - 10..CHUNK_MAX_BYTES + 300),
        11 if rng.gen_bool(0.1) => rng.gen_range(4090..4400),
        11..=14 => rng.gen_range(200..3000),
        _ => rng.gen_range(1..20),
    };
    (0..len).map(|_| rng.gen_range(b'a'..=b'z')).collect()
}

fn compare(list: &ListObj, model: &VecDeque<Vec<u8>>) {
    list.validate().unwrap();
    assert_eq!(list.len(), model.len());
    let ours: Vec<&[u8]> = list.iter_from(0).collect();
    let theirs: Vec<&[u8]> = model.iter().map(Vec::as_slice).collect();
    assert_eq!(ours, theirs);
}

#[test]
fn list_matches_vecdeque() {
    run(seed(), 200, ListObj::new());
}

/// The chunk bounds of `list-max-listpack-size` -1 and -5 (4 and 64 KiB).
#[test]
fn lists_of_other_chunk_bounds_match_vecdeque() {
    run(seed() ^ 0x4, 60, ListObj::with_chunk_bytes(4096));
    run(seed() ^ 0x64, 60, ListObj::with_chunk_bytes(65536));
}

#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn run(seed: u64, rounds: usize, mut list: ListObj) {
    let mut heap = Heap::new().unwrap();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut model: VecDeque<Vec<u8>> = VecDeque::new();
    for round in 0..rounds {
        let enabled: Vec<bool> = (0..12).map(|_| rng.gen_bool(0.6)).collect();
        let pool = rng.gen_bool(0.5);
        for _ in 0..400 {
            let op = rng.gen_range(0..12);
            if !enabled[op] {
                continue;
            }
            let len = model.len();
            match op {
                0 | 1 => {
                    for _ in 0..rng.gen_range(1..20) {
                        let v = element(&mut rng, pool);
                        if op == 0 {
                            list.push_front(&mut heap, &v);
                            model.push_front(v);
                        } else {
                            list.push_back(&mut heap, &v);
                            model.push_back(v);
                        }
                    }
                }
                2 => {
                    assert_eq!(list.front(), model.front().map(Vec::as_slice));
                    assert_eq!(list.pop_front(&mut heap), model.pop_front().is_some());
                }
                3 => {
                    assert_eq!(list.back(), model.back().map(Vec::as_slice));
                    assert_eq!(list.pop_back(&mut heap), model.pop_back().is_some());
                }
                4 => {
                    let i = rng.gen_range(0..=len + 2);
                    assert_eq!(list.get(i), model.get(i).map(Vec::as_slice));
                }
                5 if len > 0 => {
                    let i = rng.gen_range(0..len);
                    let v = element(&mut rng, pool);
                    assert!(list.set(&mut heap, i, &v));
                    model[i] = v;
                }
                6 => {
                    let i = rng.gen_range(0..=len);
                    let v = element(&mut rng, pool);
                    list.insert(&mut heap, i, &v);
                    model.insert(i, v);
                }
                7 => {
                    let start = rng.gen_range(0..=len + 1);
                    let count = rng.gen_range(0..=len / 3 + 2);
                    list.remove_range(&mut heap, start, count);
                    for _ in 0..count.min(len.saturating_sub(start)) {
                        model.remove(start);
                    }
                }
                8 if rng.gen_bool(0.2) => {
                    if len == 0 || rng.gen_bool(0.1) {
                        list.trim(&mut heap, None);
                        model.clear();
                    } else {
                        let a = rng.gen_range(0..len);
                        let b = rng.gen_range(a..len);
                        list.trim(&mut heap, Some((a, b)));
                        model.truncate(b + 1);
                        model.drain(..a);
                    }
                }
                9 => {
                    let v = element(&mut rng, true);
                    let limit = rng.gen_range(0..4);
                    let from_tail = rng.gen_bool(0.5);
                    let got = list.remove_matching(&mut heap, &v, limit, from_tail);
                    let mut removed = 0;
                    let mut keep: Vec<bool> = vec![true; len];
                    let order: Vec<usize> = if from_tail {
                        (0..len).rev().collect()
                    } else {
                        (0..len).collect()
                    };
                    for i in order {
                        if limit != 0 && removed == limit {
                            break;
                        }
                        if model[i] == v {
                            keep[i] = false;
                            removed += 1;
                        }
                    }
                    let mut flags = keep.into_iter();
                    model.retain(|_| flags.next().unwrap());
                    assert_eq!(got, removed);
                }
                10 if len > 0 => {
                    let i = rng.gen_range(0..len);
                    let n = rng.gen_range(0..len + 2);
                    let ours: Vec<&[u8]> = list.iter_from(i).take(n).collect();
                    let theirs: Vec<&[u8]> =
                        model.iter().skip(i).take(n).map(Vec::as_slice).collect();
                    assert_eq!(ours, theirs);
                    let ours: Vec<&[u8]> = list.rev_from(i).take(n).collect();
                    let theirs: Vec<&[u8]> = model
                        .iter()
                        .take(i + 1)
                        .rev()
                        .take(n)
                        .map(Vec::as_slice)
                        .collect();
                    assert_eq!(ours, theirs);
                }
                11 => {
                    let all: Vec<Vec<u8>> = list.iter_from(0).map(<[u8]>::to_vec).collect();
                    assert_eq!(all, Vec::from(model.clone()));
                }
                _ => {}
            }
            list.validate()
                .unwrap_or_else(|e| panic!("seed {seed} round {round} op {op}: {e}"));
        }
        compare(&list, &model);
        // Keep the lists from growing without bound.
        if model.len() > 5000 {
            list.trim(&mut heap, None);
            model.clear();
        }
    }
    // Every chunk buffer the operations freed went back: only the live ones remain.
    let live = list.chunk_buffer_bytes();
    assert_eq!(heap.stats().requested_bytes as usize, live, "seed {seed}");
    list.destroy(&mut heap);
    assert_eq!(
        heap.stats().requested_bytes,
        0,
        "seed {seed}: chunks leaked"
    );
}

#[test]
fn pushes_at_one_end_fill_whole_chunks() {
    let mut heap = Heap::new().unwrap();
    let mut list = ListObj::new();
    for i in 0..100_000u32 {
        list.push_front(&mut heap, format!("{i:010}").as_bytes());
    }
    list.validate().unwrap();
    // 11-byte entries: 744 per 8 KiB chunk.
    assert_eq!(list.chunk_count(), 100_000usize.div_ceil(744));
    let per_element = list.memory_bytes() as f64 / 100_000.0;
    assert!(per_element < 11.5, "{per_element} bytes per element");
    assert_eq!(list.get(0), Some(&b"0000099999"[..]));
    assert_eq!(list.get(99_999), Some(&b"0000000000"[..]));
    // The other bounds fill their chunks the same way: 372 entries per 4 KiB, 5957 per 64 KiB.
    for (bytes, per_chunk) in [(4096, 372), (65536, 5957)] {
        let mut list = ListObj::with_chunk_bytes(bytes);
        for i in 0..100_000u32 {
            list.push_back(&mut heap, format!("{i:010}").as_bytes());
        }
        list.validate().unwrap();
        assert_eq!(list.chunk_count(), 100_000usize.div_ceil(per_chunk));
    }
}

#[test]
fn draining_merges_and_shrinks() {
    let mut heap = Heap::new().unwrap();
    let mut list = ListObj::from_items(&mut heap, (0..20_000u32).map(|i| format!("{i:08}")));
    // Remove every element but one in ten from the middle: chunks become small and merge.
    for i in 0..20_000u32 {
        if i % 10 != 0 {
            list.remove_matching(&mut heap, format!("{i:08}").as_bytes(), 1, false);
        }
    }
    list.validate().unwrap();
    assert_eq!(list.len(), 2000);
    // 2000 × 10 bytes fit in 20 KB: at most a handful of chunks, not the 30 of before.
    assert!(list.chunk_count() <= 5, "{} chunks", list.chunk_count());
}
