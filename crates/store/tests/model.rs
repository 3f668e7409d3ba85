//! Model-based randomized test of a shard: puts with every TTL mode, takes, TTL changes, lazy and
//! active expiry, SCAN and RANDOMKEY against a `HashMap` model under a simulated clock. After each
//! step the shard's answer must match the model (expired keys read as missing), and `validate()`
//! checks the maps and the per-db TTL counts.

use heap::HeapConfig;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};
use store::{Shard, ShardConfig, Str, Ttl};

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

fn run(seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut shard = Shard::new(&ShardConfig {
        databases: 2,
        heap: HeapConfig {
            reserve_bytes: 2 << 30,
            ..HeapConfig::default()
        },
        map: maps::Config {
            seed: Some(seed),
            ..maps::Config::default()
        },
    })
    .unwrap();
    let mut models = [HashMap::new(), HashMap::new()];
    let mut now = 1_000_000u64;
    let enabled: Vec<bool> = (0..7).map(|i| i == 0 || rng.gen_bool(0.75)).collect();
    for step in 0..4000 {
        let db = rng.gen_range(0..2);
        let key = random_key(&mut rng);
        let model = &mut models[db];
        let op = rng.gen_range(0..7);
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
                let got = shard.take(db, &key, now);
                assert_eq!(got.is_some(), expected.is_some(), "seed {seed} step {step}");
                if let (Some(got), Some(expected)) = (got, expected) {
                    assert_eq!(Str::of(got.tag, &got.payload).to_vec(), expected.value);
                }
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
        // Every key reads back as the model says.
        for (k, m) in model.iter() {
            let got = shard.with_entry(db, k, now, |e| {
                (Str::of(e.tag, e.payload).to_vec(), e.expire_at_ms)
            });
            let expected = live(model, k, now).map(|m| (m.value, m.expire_at));
            assert_eq!(
                got, expected,
                "seed {seed} step {step} key {:?}",
                m.expire_at
            );
        }
        if step % 50 == 0 {
            shard.validate().unwrap();
        }
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
