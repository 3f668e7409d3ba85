//! Model-based randomized test of the keyspace: puts with every TTL mode, deletes, TTL changes,
//! lazy and active expiry, SCAN, RANDOMKEY, and RENAME / COPY / MOVE within a shard and between
//! two, against a `HashMap` model per database under a simulated clock. After each step every key
//! must read back as the model says (expired keys read as missing), and `validate()` checks the
//! maps, the per-db TTL counts and the counts per encoding.

use heap::HeapConfig;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};
use store::{Relocated, Shard, ShardConfig, Ttl};

#[derive(Clone, Debug, PartialEq)]
struct Model {
    value: Vec<u8>,
    expire_at: Option<u64>,
}

fn random_key(rng: &mut SmallRng) -> Vec<u8> {
    match rng.gen_range(0..10) {
        0 => Vec::new(),
        1 => vec![b'k'; rng.gen_range(100..3000)],
        _ => format!("key:{}", rng.gen_range(0..300)).into_bytes(),
    }
}

fn random_value(rng: &mut SmallRng) -> Vec<u8> {
    match rng.gen_range(0..5) {
        0 => rng.gen_range(i64::MIN..=i64::MAX).to_string().into_bytes(),
        1 => rng.gen_range(0..2_000_000_000i64).to_string().into_bytes(),
        2 => (0..rng.gen_range(0..100))
            .map(|_| rng.r#gen::<u8>())
            .collect(),
        3 => vec![b'v'; rng.gen_range(0..20_000)],
        _ => b"0123".to_vec(),
    }
}

fn live(model: &HashMap<Vec<u8>, Model>, key: &[u8], now: u64) -> Option<Model> {
    model
        .get(key)
        .filter(|m| m.expire_at.is_none_or(|at| at > now))
        .cloned()
}

fn new_shard(seed: u64) -> Shard {
    Shard::new(&ShardConfig {
        databases: 2,
        heap: HeapConfig {
            reserve_bytes: 2 << 30,
            ..HeapConfig::default()
        },
        map: maps::Config {
            seed: Some(seed),
            ..maps::Config::default()
        },
        ..ShardConfig::default()
    })
    .unwrap()
}

type Models = [HashMap<Vec<u8>, Model>; 2];

/// RENAME / COPY / MOVE of `src` (db `from`) to `dst` (db `to`) on the model: what the store
/// must answer, and the model changed accordingly.
fn relocate_model(
    models: &mut Models,
    (from, src): (usize, &[u8]),
    (to, dst): (usize, &[u8]),
    replace: bool,
    copy: bool,
    now: u64,
) -> Relocated {
    let Some(value) = live(&models[from], src, now) else {
        return Relocated::NoSource;
    };
    if !replace && live(&models[to], dst, now).is_some() {
        return Relocated::TargetExists;
    }
    if !copy {
        models[from].remove(src);
    }
    models[to].insert(dst.to_vec(), value);
    Relocated::Done
}

#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn run(seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut shard = new_shard(seed);
    // A second shard: RENAME and COPY between shards go through the logical view.
    let mut other = new_shard(seed ^ 1);
    let mut models: Models = [HashMap::new(), HashMap::new()];
    let mut now = 1_000_000u64;
    let enabled: Vec<bool> = (0..8).map(|i| i == 0 || rng.gen_bool(0.75)).collect();
    for step in 0..4000 {
        let db = rng.gen_range(0..2);
        let key = random_key(&mut rng);
        let op = rng.gen_range(0..8);
        if op == 7 && enabled[7] {
            relocate_step(&mut shard, &mut models, &mut rng, now, seed, step);
            round_trip_between(&mut shard, &mut other, &mut models, &mut rng, now);
            check_all(&mut shard, &models, now, seed, step);
            continue;
        }
        let model = &mut models[db];
        if !enabled[op] {
            continue;
        }
        match op {
            0 => {
                let value = random_value(&mut rng);
                let ttl = match rng.gen_range(0..3) {
                    0 => Ttl::Clear,
                    1 => Ttl::Keep,
                    _ => Ttl::At(now + rng.gen_range(1..500)),
                };
                let old = live(model, &key, now);
                shard.put_string(db, &key, &value, ttl, now).unwrap();
                let expire_at = match ttl {
                    Ttl::Clear => None,
                    Ttl::Keep => old.and_then(|m| m.expire_at),
                    Ttl::At(at) => Some(at),
                };
                model.insert(key, Model { value, expire_at });
            }
            1 => {
                let expected = live(model, &key, now);
                model.remove(&key);
                let got = shard.get_string(db, &key, now, |s| s.to_vec()).unwrap();
                assert_eq!(got, expected.map(|m| m.value), "seed {seed} step {step}");
                assert_eq!(shard.remove(db, &key, now), got.is_some());
            }
            2 => {
                let at = if rng.gen_bool(0.3) {
                    None
                } else {
                    Some(now + rng.gen_range(0..300))
                };
                let expected = live(model, &key, now).is_some();
                assert_eq!(shard.set_expire(db, &key, at, now).unwrap(), expected);
                if expected {
                    model.get_mut(&key).unwrap().expire_at = at;
                } else {
                    model.remove(&key);
                }
            }
            3 => now += rng.gen_range(0..200),
            4 => {
                let round = shard.active_expire(db, now, rng.gen_range(1..50));
                assert!(round.expired <= round.sampled);
                // Whatever active expiry deleted had expired: the model agrees it is gone.
                model.retain(|k, m| {
                    m.expire_at.is_none_or(|at| at > now) || shard.contains(db, k, now)
                });
            }
            5 => {
                let mut seen = HashSet::new();
                let mut cursor = 0;
                let mut steps = 0;
                loop {
                    cursor = shard.scan(db, cursor, now, |k, _| {
                        seen.insert(k.to_vec());
                    });
                    steps += 1;
                    assert!(steps < 100_000, "scan does not terminate");
                    if cursor == 0 {
                        break;
                    }
                }
                let expected: HashSet<Vec<u8>> = model
                    .keys()
                    .filter(|k| live(model, k, now).is_some())
                    .cloned()
                    .collect();
                assert_eq!(seen, expected, "seed {seed} step {step}: SCAN");
            }
            _ => {
                let got = shard.random_key(db, now, || rng.r#gen());
                match got {
                    Some(k) => assert!(live(model, &k, now).is_some(), "random key is live"),
                    None => assert!(model.keys().all(|k| live(model, k, now).is_none())),
                }
            }
        }
        check_all(&mut shard, &models, now, seed, step);
        shard.validate().unwrap();
    }
    shard.validate().unwrap();
    for db in 0..2 {
        shard.flush(db);
        assert_eq!(shard.len(db), 0);
    }
}

#[test]
fn shard_agrees_with_model() {
    for seed in 0..12 {
        run(seed);
    }
}

/// Every key of both databases reads back as the model says.
fn check_all(shard: &mut Shard, models: &Models, now: u64, seed: u64, step: usize) {
    for (db, model) in models.iter().enumerate() {
        for k in model.keys() {
            let value = shard.get_string(db, k, now, |s| s.to_vec()).unwrap();
            let got = value.map(|v| (v, shard.expire_at(db, k, now).expect("live")));
            let expected = live(model, k, now).map(|m| (m.value, m.expire_at));
            assert_eq!(got, expected, "seed {seed} step {step} db {db}");
        }
    }
}

/// RENAME, COPY or MOVE between random keys and databases of one shard.
fn relocate_step(
    shard: &mut Shard,
    models: &mut Models,
    rng: &mut SmallRng,
    now: u64,
    seed: u64,
    step: usize,
) {
    let (from, to) = (rng.gen_range(0..2), rng.gen_range(0..2));
    let (src, dst) = (random_key(rng), random_key(rng));
    if from == to && src == dst {
        return;
    }
    let (replace, copy) = (rng.gen_bool(0.5), rng.gen_bool(0.3));
    let want = relocate_model(models, (from, &src), (to, &dst), replace, copy, now);
    let got = if copy {
        shard.copy(from, &src, to, &dst, replace, now)
    } else {
        shard.rename(from, &src, to, &dst, replace, now)
    };
    assert_eq!(got.unwrap(), want, "seed {seed} step {step}: copy {copy}");
}

/// Moves a random key to `other` and back (RENAME between shards, both ways), then checks that
/// `other` holds nothing: a value crosses shards whole and leaves nothing behind.
fn round_trip_between(
    shard: &mut Shard,
    other: &mut Shard,
    models: &mut Models,
    rng: &mut SmallRng,
    now: u64,
) {
    let db = rng.gen_range(0..2);
    let key = random_key(rng);
    let present = live(&models[db], &key, now).is_some();
    let there = store::rename_between(shard, other, db, &key, db, b"parked", true, now).unwrap();
    assert_eq!(there == Relocated::Done, present);
    if present {
        assert!(!shard.contains(db, &key, now));
        let back = store::rename_between(other, shard, db, b"parked", db, &key, false, now);
        assert_eq!(back.unwrap(), Relocated::Done);
    }
    assert_eq!(other.len(db), 0);
    other.validate().unwrap();
}
