//! Model-based randomized tests of the hash encodings (`store::Hash`) against std maps.
//!
//! One seeded stream of HSET / HDEL / HGET / whole-hash reads per key family runs on a `Shard`
//! and on a `BTreeMap<field, value>` per key. Families steer each encoding and every conversion:
//! record-like names (record → small/flat), integers (small → ints → flat/pages), binary
//! fields (small → flat → pages on a long string, pages → flat with the shrink), and big integer /
//! string hashes of up to ~4000 fields (flat → pages past 32 KiB). After every step the touched
//! key is compared whole, its encoding checked against the rules the module doc states, its OBJECT
//! ENCODING against Redis 7.0's rule (listpack until a write left it with more pairs than
//! hash-max-listpack-entries or wrote a string longer than hash-max-listpack-value: 512 and 64,
//! or thresholds changed every 2,000 steps in the second test), and at the end every key is deleted and the shape tree must be back to its root: a hold leaked or
//! released twice by a conversion would show there; `Shard::validate` (every encoding's own
//! invariants, the counts per encoding, the shape holds) runs after every step. `IntHash` has its
//! own model test with its invariant validator. Set `DENSEKV_SEED` to change the seed.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use store::types::hash::{self, ints::IntHash};
use store::{Encoding, Hash, Limits, Shard, ShardConfig};

fn seed() -> u64 {
    std::env::var("DENSEKV_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x4A54_0002)
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn field(rng: &mut SmallRng, family: u8) -> Vec<u8> {
    match family {
        b'u' if rng.gen_bool(0.97) => {
            let names = ["name", "email", "age", "city", "created", "zip", "phone"];
            names[rng.gen_range(0..names.len())].as_bytes().to_vec()
        }
        b'u' | b'n' => rng.gen_range(-3..20).to_string().into_bytes(),
        b'b' => rng.gen_range(0..300).to_string().into_bytes(),
        b'i' => rng.gen_range(0..10_000).to_string().into_bytes(),
        b'g' => format!("field:{}", rng.gen_range(0..4000)).into_bytes(),
        _ => match rng.gen_range(0..8) {
            0 => vec![b'F'; 70],
            1 if rng.gen_bool(0.2) => vec![b'L'; 300],
            1 => Vec::new(),
            _ => format!("f{}", rng.gen_range(0..14)).into_bytes(),
        },
    }
}

fn value(rng: &mut SmallRng, family: u8) -> Vec<u8> {
    if family == b'i' {
        return rng
            .gen_range(-10..2_000_000_000i64)
            .to_string()
            .into_bytes();
    }
    match rng.gen_range(0..30) {
        0 => vec![b'v'; 65],
        1 => b"007".to_vec(),
        2 => b"x".to_vec(),
        3 => i64::MIN.to_string().into_bytes(),
        _ if family == b'n' || family == b'b' => rng
            .gen_range(-10..2_000_000_000i64)
            .to_string()
            .into_bytes(),
        _ => format!("val{}", rng.gen_range(0..100)).into_bytes(),
    }
}

/// (encoding, pairs in the encoding's order) of `key`, or `None` when missing.
fn read(shard: &mut Shard, key: &[u8]) -> Option<(Encoding, Pairs)> {
    let pairs = shard
        .read::<Hash, _>(0, key, 0, |h| h.pairs())
        .expect("a hash")?;
    Some((shard.encoding(0, key, 0).expect("present"), pairs))
}

/// Checks `key` against its model; returns its encoding (`None` when missing).
fn check(
    shard: &mut Shard,
    key: &[u8],
    model: &Model,
    hashtable: bool,
    step: usize,
) -> Option<Encoding> {
    let Some((t, pairs)) = read(shard, key) else {
        assert!(model.is_empty(), "step {step}: {key:?} missing");
        return None;
    };
    let mut sorted = pairs.clone();
    sorted.sort();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(f, v)| (f.clone(), v.clone())).collect();
    assert_eq!(sorted, want, "step {step}: contents of {key:?}");
    let ints = model
        .iter()
        .all(|(f, v)| hash::ints::int_pair(f, v).is_some());
    let fits_small = model
        .iter()
        .all(|(f, v)| f.len() <= hash::VALUE_BYTES_MAX && v.len() <= hash::VALUE_BYTES_MAX);
    let fits_flat = model
        .iter()
        .all(|(f, v)| f.len() <= hash::FLAT_BYTES_MAX && v.len() <= hash::FLAT_BYTES_MAX);
    match t {
        Encoding::HashRecord => assert!(fits_small, "step {step}: record with a long value"),
        Encoding::HashSmall => assert!(model.len() <= hash::SMALL_PAIRS_MAX && fits_small),
        Encoding::HashFlat => assert!(fits_flat, "step {step}: flat hash with a long string"),
        Encoding::HashInts => assert!(ints, "step {step}: ints hash holds a non-integer"),
        // Pages hold anything: they do not convert back to ints once a non-integer left, and a
        // long value overwritten by a short one leaves a few short pairs there until a delete.
        Encoding::HashPages => {}
        other => panic!("step {step}: {other:?}"),
    }
    let want = if hashtable { "hashtable" } else { "listpack" };
    assert_eq!(
        shard.object_encoding(0, key, 0),
        Some(want),
        "step {step}: OBJECT ENCODING of {key:?} ({t:?})"
    );
    shard
        .validate()
        .unwrap_or_else(|e| panic!("step {step}: {e}"));
    Some(t)
}

#[test]
fn hash_encodings_match_a_btreemap() {
    run(seed(), 120_000, false);
}

#[test]
fn hash_encodings_follow_configured_thresholds() {
    run(seed() ^ 0x11, 40_000, true);
}

/// Thresholds a configuration may set, from none to past every internal bound.
fn random_limits(rng: &mut SmallRng) -> Limits {
    let entries = [0, 1, 3, 8, 9, 40, 512, 5000];
    let values = [0, 2, 10, 64, 65, 200, 1000];
    Limits {
        hash_listpack_entries: entries[rng.gen_range(0..entries.len())],
        hash_listpack_value: values[rng.gen_range(0..values.len())],
        ..Limits::default()
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn run(seed: u64, steps: usize, vary_limits: bool) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut limits = Limits::default();
    let mut shard = Shard::new(&ShardConfig::default()).expect("shard");
    let keys: Vec<Vec<u8>> = ["u0", "u1", "u2", "n0", "n1", "r0", "r1", "b0", "i0", "g0"]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();
    let mut models: HashMap<Vec<u8>, Model> = HashMap::new();
    // Keys whose hash has passed Redis's listpack bounds since it was created.
    let mut hashtable: HashMap<Vec<u8>, bool> = HashMap::new();
    let mut tags_seen = std::collections::HashSet::new();
    // Operation kinds switched on and off per phase, so hashes both grow large and drain.
    let mut weights = [4u32, 3, 2, 1];
    for step in 0..steps {
        if vary_limits && step % 2_000 == 0 {
            limits = random_limits(&mut rng);
            shard.set_limits(limits);
        }
        if step % 5_000 == 0 {
            for w in &mut weights {
                *w = rng.gen_range(0..5);
            }
            weights[0] = weights[0].max(1);
        }
        let key = keys[rng.gen_range(0..keys.len())].clone();
        let family = key[0];
        let model = models.entry(key.clone()).or_default();
        let total: u32 = weights.iter().sum();
        let mut pick = rng.gen_range(0..total);
        let op = weights
            .iter()
            .position(|&w| {
                if pick < w {
                    true
                } else {
                    pick -= w;
                    false
                }
            })
            .unwrap();
        match op {
            0 => {
                let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..rng.gen_range(1..4))
                    .map(|_| (field(&mut rng, family), value(&mut rng, family)))
                    .collect();
                let created = shard
                    .update::<Hash, _>(0, &key, 0, true, |h| {
                        let mut n = 0;
                        for (f, v) in &pairs {
                            n += usize::from(h.set(f, v)?);
                        }
                        Ok(n)
                    })
                    .unwrap()
                    .unwrap();
                let mut want = 0;
                let sticky = hashtable.entry(key.clone()).or_default();
                for (f, v) in pairs {
                    *sticky |= f.len() > limits.hash_listpack_value
                        || v.len() > limits.hash_listpack_value;
                    want += usize::from(model.insert(f, v).is_none());
                    *sticky |= model.len() > limits.hash_listpack_entries;
                }
                assert_eq!(created, want, "step {step}: new fields");
            }
            1 | 3 => {
                let fields: Vec<Vec<u8>> = (0..rng.gen_range(1..4))
                    .map(|_| field(&mut rng, family))
                    .collect();
                let removed = shard
                    .update::<Hash, _>(0, &key, 0, false, |h| {
                        let mut n = 0;
                        for f in &fields {
                            n += usize::from(h.remove(f)?);
                        }
                        Ok(n)
                    })
                    .unwrap()
                    .unwrap_or(0);
                let want = fields.iter().filter(|f| model.remove(*f).is_some()).count();
                assert_eq!(removed, want, "step {step}: removed fields");
            }
            _ => {
                let f = field(&mut rng, family);
                let got = shard
                    .read::<Hash, _>(0, &key, 0, |mut h| h.get(&f).map(|v| v.to_vec()))
                    .unwrap()
                    .flatten();
                assert_eq!(got.as_ref(), model.get(&f), "step {step}: get");
            }
        }
        if model.is_empty() {
            hashtable.remove(&key);
        }
        let sticky = hashtable.get(&key).copied().unwrap_or(false);
        tags_seen.insert(check(&mut shard, &key, model, sticky, step));
    }
    for t in [
        Encoding::HashRecord,
        Encoding::HashSmall,
        Encoding::HashFlat,
        Encoding::HashInts,
        Encoding::HashPages,
    ] {
        assert!(
            tags_seen.contains(&Some(t)),
            "no step saw {t:?}: {tags_seen:?}"
        );
    }
    for key in &keys {
        shard.remove(0, key, 0);
    }
    assert!(
        shard.shapes().is_empty(),
        "shape holds leaked or double-released: {} shapes live",
        shard.shapes().len()
    );
}

#[test]
fn records_keep_insertion_order_and_release_their_shapes() {
    let mut shard = Shard::new(&ShardConfig::default()).expect("shard");
    for i in 0..100 {
        let key = format!("user:{i}");
        shard
            .update::<Hash, _>(0, key.as_bytes(), 0, true, |h| {
                for (f, v) in [
                    ("name", "ann"),
                    ("email", "a@x"),
                    ("age", "42"),
                    ("city", "Oslo"),
                ] {
                    h.set(f.as_bytes(), v.as_bytes())?;
                }
                Ok(())
            })
            .unwrap();
    }
    let (t, pairs) = read(&mut shard, b"user:7").unwrap();
    assert_eq!(t, Encoding::HashRecord);
    let names: Vec<&[u8]> = pairs.iter().map(|(f, _)| f.as_slice()).collect();
    assert_eq!(names, [&b"name"[..], b"email", b"age", b"city"]);
    assert_eq!(
        shard.shapes().len(),
        5,
        "one chain of four shapes plus the root"
    );
    // Conversions in both directions on one key.
    shard
        .update::<Hash, _>(0, b"user:7", 0, false, |h| h.set(b"12", b"x"))
        .unwrap();
    assert_eq!(read(&mut shard, b"user:7").unwrap().0, Encoding::HashSmall);
    // small → flat past 8 pairs, still a listpack to OBJECT ENCODING until 512 pairs.
    let grow = |shard: &mut Shard, from: usize, to: usize| {
        shard
            .update::<Hash, _>(0, b"user:7", 0, false, |h| {
                for i in from..to {
                    h.set(format!("f{i}").as_bytes(), b"v")?;
                }
                Ok(())
            })
            .unwrap();
    };
    grow(&mut shard, 0, 4);
    assert_eq!(read(&mut shard, b"user:7").unwrap().0, Encoding::HashFlat);
    assert_eq!(shard.object_encoding(0, b"user:7", 0), Some("listpack"));
    // Five record pairs + f0..f506: 512 pairs.
    grow(&mut shard, 4, 507);
    assert_eq!(read(&mut shard, b"user:7").unwrap().0, Encoding::HashFlat);
    assert_eq!(shard.object_encoding(0, b"user:7", 0), Some("listpack"));
    grow(&mut shard, 507, 509);
    assert_eq!(read(&mut shard, b"user:7").unwrap().0, Encoding::HashFlat);
    assert_eq!(shard.object_encoding(0, b"user:7", 0), Some("hashtable"));
    // flat → pages past 32 KiB.
    grow(&mut shard, 509, 5000);
    assert_eq!(read(&mut shard, b"user:7").unwrap().0, Encoding::HashPages);
    for i in 0..100 {
        shard.remove(0, format!("user:{i}").as_bytes(), 0);
    }
    assert!(shard.shapes().is_empty());
}

#[test]
fn int_hash_matches_a_hashmap() {
    let mut rng = SmallRng::seed_from_u64(seed() ^ 1);
    let mut t = IntHash::new();
    let mut model: HashMap<i64, i64> = HashMap::new();
    for step in 0..200_000 {
        // Phases that grow (wide keys and values now and then) and drain the table.
        let grow = (step / 20_000) % 2 == 0;
        let k = if rng.gen_bool(0.01) {
            rng.r#gen::<i64>().max(i64::MIN + 1)
        } else {
            rng.gen_range(-50..3000)
        };
        match rng.gen_range(0..10) {
            0..=4 if grow => {
                let v = if rng.gen_bool(0.01) {
                    rng.r#gen()
                } else {
                    rng.gen_range(0..1000)
                };
                assert_eq!(t.insert(k, v), model.insert(k, v).is_none(), "step {step}");
            }
            0..=5 => assert_eq!(t.remove(k), model.remove(&k).is_some(), "step {step}"),
            _ => assert_eq!(t.get(k), model.get(&k).copied(), "step {step}"),
        }
        assert_eq!(t.len(), model.len());
        if step % 997 == 0 {
            t.validate().unwrap_or_else(|e| panic!("step {step}: {e}"));
            let mut all: Vec<(i64, i64)> = t.iter().collect();
            all.sort_unstable();
            let mut want: Vec<(i64, i64)> = model.iter().map(|(&k, &v)| (k, v)).collect();
            want.sort_unstable();
            assert_eq!(all, want, "step {step}");
            let mut scanned = Vec::new();
            let mut cursor = 0;
            loop {
                cursor = t.scan(cursor, 7, |k, v| scanned.push((k, v)));
                if cursor == 0 {
                    break;
                }
            }
            scanned.sort_unstable();
            assert_eq!(scanned, want, "step {step}: a scan returns each entry once");
        }
    }
}
