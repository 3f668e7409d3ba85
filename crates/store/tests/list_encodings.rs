//! Lists through the shard's typed API across both encodings: a list starts packed inline
//! (`ListPacked`), becomes chunks (`List`) at the first change that leaves it past its packed
//! bound, and stays chunks. Random edits on several keys go to the shard and to a
//! `VecDeque` model; after every step the shard validates (packed payloads included), each
//! key's elements match the model in both directions, and its encoding is the one its history
//! says.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use store::types::list_packed::PACKED_MAX_BYTES;
use store::{Encoding, Limits, List, ListView, Shard, ShardConfig, View};

/// An element: one of a few lengths that cross the one-byte varint, of one of three bytes.
fn value(rng: &mut SmallRng) -> Vec<u8> {
    let len = [1, 8, 12, 16, 40, 130, 700][rng.gen_range(0..7)];
    vec![b'a' + rng.gen_range(0..3u8); len]
}

/// Bytes of entries a packed list of `model` takes (a varint length per element).
fn entry_bytes(model: &VecDeque<Vec<u8>>) -> usize {
    model
        .iter()
        .map(|v| v.len() + if v.len() < 128 { 1 } else { 2 })
        .sum()
}

struct Key {
    name: Vec<u8>,
    model: VecDeque<Vec<u8>>,
    /// Whether the list has been chunks since it was created.
    boxed: bool,
}

fn step(shard: &mut Shard, rng: &mut SmallRng, key: &mut Key) {
    let model = &mut key.model;
    let len = model.len();
    let op = rng.gen_range(0..10);
    shard
        .update::<List, _>(0, &key.name, 0, true, |l| {
            match op {
                0..=2 => {
                    let v = value(rng);
                    l.push_back(&v);
                    model.push_back(v);
                }
                3 | 4 => {
                    let v = value(rng);
                    l.push_front(&v);
                    model.push_front(v);
                }
                5 => {
                    let left = rng.gen_range(0..2) == 0;
                    assert_eq!(
                        l.end(left),
                        if left { model.front() } else { model.back() }.map(|v| &v[..])
                    );
                    assert_eq!(l.pop_end(left), len > 0);
                    if left {
                        model.pop_front()
                    } else {
                        model.pop_back()
                    };
                }
                6 => {
                    let (i, v) = (rng.gen_range(0..len + 1), value(rng));
                    assert_eq!(l.set(i, &v), i < len);
                    if i < len {
                        model[i] = v;
                    }
                }
                7 => {
                    let (i, v) = (rng.gen_range(0..len + 1), value(rng));
                    l.insert(i, &v);
                    model.insert(i, v);
                }
                8 if len > 0 => {
                    let start = rng.gen_range(0..len);
                    let end = start + rng.gen_range(0..len - start);
                    l.trim(Some((start, end)));
                    *model = model.range(start..=end).cloned().collect();
                }
                _ => {
                    let (start, n) = (rng.gen_range(0..len + 1), rng.gen_range(0..3));
                    l.remove_range(start, n);
                    let start = start.min(len);
                    model.drain(start..(start + n).min(len));
                }
            }
            Ok(())
        })
        .unwrap();
    if model.is_empty() {
        key.boxed = false;
    } else if entry_bytes(model) > PACKED_MAX_BYTES {
        key.boxed = true;
    }
}

fn check(shard: &mut Shard, key: &Key) {
    shard.validate().unwrap();
    let model = &key.model;
    let read = shard
        .read::<List, _>(0, &key.name, 0, |l: ListView<'_>| {
            assert_eq!(l.len(), model.len());
            assert!(l.iter_from(0).eq(model.iter().map(|v| &v[..])));
            if let Some(last) = model.len().checked_sub(1) {
                assert!(l.rev_from(last).eq(model.iter().rev().map(|v| &v[..])));
                let mid = model.len() / 2;
                assert_eq!(l.get(mid), Some(&model[mid][..]));
                assert!(l.iter_from(mid).eq(model.range(mid..).map(|v| &v[..])));
            }
            matches!(l, ListView::Chunks(_))
        })
        .unwrap();
    match read {
        None => assert!(model.is_empty()),
        Some(chunks) => {
            // Chunks for good once past the bound; packed while it never was.
            assert_eq!(chunks, key.boxed, "{} elements", model.len());
            let want = if chunks {
                Encoding::List
            } else {
                Encoding::ListPacked
            };
            assert_eq!(shard.encoding(0, &key.name, 0), Some(want));
        }
    }
}

#[test]
fn lists_convert_once_and_match_the_model() {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    let mut rng = SmallRng::seed_from_u64(0x2545_F491_4F6C_DD1D);
    let mut keys: Vec<Key> = (0..4)
        .map(|i| Key {
            name: format!("list:{i}").into_bytes(),
            model: VecDeque::new(),
            boxed: false,
        })
        .collect();
    let mut converted = 0;
    for _ in 0..6_000 {
        let k = rng.gen_range(0..keys.len());
        let was = keys[k].boxed;
        step(&mut shard, &mut rng, &mut keys[k]);
        converted += usize::from(!was && keys[k].boxed);
        check(&mut shard, &keys[k]);
        if keys[k].model.len() > 400 {
            shard
                .update::<List, _>(0, &keys[k].name, 0, false, |l| {
                    l.trim(None);
                    Ok(())
                })
                .unwrap();
            keys[k].model.clear();
            keys[k].boxed = false;
            check(&mut shard, &keys[k]);
        }
    }
    assert!(converted >= 4, "only {converted} conversions exercised");
}

#[test]
fn a_packed_list_keeps_its_chunk_size_through_conversion() {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    shard.set_limits(Limits {
        list_chunk_bytes: 4096,
        ..Limits::default()
    });
    let push = |shard: &mut Shard, n: usize| {
        shard
            .update::<List, _>(0, b"l", 0, true, |l| {
                (0..n).for_each(|i| l.push_back(format!("{i:09}").as_bytes()));
                Ok(())
            })
            .unwrap();
    };
    push(&mut shard, 10);
    // Later lists take the new size; this one keeps the one it was created with.
    shard.set_limits(Limits::default());
    let fill = |shard: &mut Shard| {
        shard
            .read::<List, _>(0, b"l", 0, |l| (l.chunk_bytes(), l.chunk_count(), l.len()))
            .unwrap()
            .unwrap()
    };
    assert_eq!(fill(&mut shard), (4096, 1, 10));
    assert_eq!(shard.encoding(0, b"l", 0), Some(Encoding::ListPacked));
    // At a 4 KiB chunk bound a list stays packed up to 2 KiB of entries: 204 ten-byte ones.
    push(&mut shard, 194);
    assert_eq!(shard.encoding(0, b"l", 0), Some(Encoding::ListPacked));
    push(&mut shard, 1);
    assert_eq!(shard.encoding(0, b"l", 0), Some(Encoding::List));
    assert_eq!(fill(&mut shard), (4096, 1, 205));
    push(&mut shard, 385);
    let (bytes, chunks, len) = fill(&mut shard);
    assert_eq!((bytes, len), (4096, 590));
    assert!(
        chunks >= 2,
        "590 ten-byte entries fill more than one 4 KiB chunk"
    );
    let logical = shard.view(0, b"l", 0, |v, _| match v {
        View::List(l) => l.iter_from(0).count(),
        _ => 0,
    });
    assert_eq!(logical, Some(590));
    shard.validate().unwrap();
}

#[test]
fn an_element_past_the_bound_goes_straight_to_chunks() {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    let big = vec![b'x'; 100_000];
    for (key, before) in [(&b"new"[..], 0), (b"some", 3)] {
        shard
            .update::<List, _>(0, key, 0, true, |l| {
                (0..before).for_each(|_| l.push_back(b"small"));
                l.push_front(&big);
                l.push_back(b"tail");
                Ok(())
            })
            .unwrap();
        assert_eq!(shard.encoding(0, key, 0), Some(Encoding::List));
        let (len, first, last) = shard
            .read::<List, _>(0, key, 0, |l| {
                (
                    l.len(),
                    l.end(true).map(<[u8]>::len),
                    l.end(false).map(<[u8]>::to_vec),
                )
            })
            .unwrap()
            .unwrap();
        assert_eq!(
            (len, first, last),
            (before + 2, Some(big.len()), Some(b"tail".to_vec()))
        );
        shard.validate().unwrap();
    }
}

/// LPUSH/RPUSH/LPOP/RPOP as the server runs them: in place when the store can, else `update`.
fn push_or_update(shard: &mut Shard, key: &[u8], now: u64, left: bool, values: &[&[u8]]) -> bool {
    if shard
        .push_list_in_place(0, key, now, left, values)
        .is_some()
    {
        return true;
    }
    shard
        .update::<List, _>(0, key, now, true, |l| {
            for v in values {
                if left {
                    l.push_front(v);
                } else {
                    l.push_back(v);
                }
            }
            Ok(())
        })
        .unwrap();
    false
}

fn pop_or_update(shard: &mut Shard, key: &[u8], now: u64, left: bool) -> (Option<Vec<u8>>, bool) {
    if let Some(v) = shard.pop_list_in_place(0, key, now, left, <[u8]>::to_vec) {
        return (Some(v), true);
    }
    let popped = shard
        .update::<List, _>(0, key, now, false, |l| {
            let v = l.end(left).map(<[u8]>::to_vec);
            l.pop_end(left);
            Ok(v)
        })
        .unwrap();
    (popped.flatten(), false)
}

#[test]
fn in_place_pushes_and_pops_match_the_model() {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    let mut rng = SmallRng::seed_from_u64(0x1234_5678_9ABC_DEF1);
    let mut key = Key {
        name: b"queue".to_vec(),
        model: VecDeque::new(),
        boxed: false,
    };
    let (mut in_place, mut steps) = (0, 0);
    for round in 0..40 {
        // Every other round the key has a TTL, so the payload sits behind one.
        if round % 2 == 1 && !key.model.is_empty() {
            shard.set_expire(0, &key.name, Some(1_000_000), 0).unwrap();
        }
        for _ in 0..300 {
            let left = rng.gen_range(0..2) == 0;
            if rng.gen_range(0..2) == 0 {
                let values: Vec<Vec<u8>> =
                    (0..=rng.gen_range(0..2)).map(|_| value(&mut rng)).collect();
                let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
                in_place += usize::from(push_or_update(&mut shard, &key.name, 0, left, &refs));
                for v in values {
                    if left {
                        key.model.push_front(v);
                    } else {
                        key.model.push_back(v);
                    }
                }
            } else {
                let (got, done) = pop_or_update(&mut shard, &key.name, 0, left);
                in_place += usize::from(done);
                let want = if left {
                    key.model.pop_front()
                } else {
                    key.model.pop_back()
                };
                assert_eq!(got, want);
            }
            steps += 1;
            if key.model.is_empty() {
                key.boxed = false;
            } else if entry_bytes(&key.model) > PACKED_MAX_BYTES {
                key.boxed = true;
            }
            check(&mut shard, &key);
        }
        // Drain, so the next round starts packed again.
        while pop_or_update(&mut shard, &key.name, 0, true).0.is_some() {}
        key.model.clear();
        key.boxed = false;
    }
    assert!(in_place * 5 > steps, "{in_place} of {steps} in place");
    // An expired list is never edited in place: the general path deletes it.
    push_or_update(&mut shard, b"gone", 0, false, &[b"a", b"b"]);
    shard.set_expire(0, b"gone", Some(10), 0).unwrap();
    assert_eq!(
        shard.push_list_in_place(0, b"gone", 20, false, &[b"c"]),
        None
    );
    assert_eq!(
        shard.pop_list_in_place(0, b"gone", 20, true, <[u8]>::to_vec),
        None
    );
    assert_eq!(
        shard.push_list_in_place(0, b"gone", 5, false, &[b"c"]),
        Some(3)
    );
}
