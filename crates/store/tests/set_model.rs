//! Model-based randomized test of the set encodings and their conversions: the same adds,
//! removes, pops and stores go to a shard's sets and to `BTreeSet` models. Operation kinds are
//! switched on and off per round at random, and member pools are chosen so each round lives
//! in a different encoding (integers only: intset then ints; short strings: small then flat;
//! thousands of short strings: flat then pages past 32 KiB; long strings: flat, and pages past
//! 256 B; mixes crossing from intset to small to flat). After each step the set's answers (len,
//! membership of present and absent members, all members, random picks) must match the model,
//! the encoding must be the one the content rules imply, OBJECT ENCODING must be Redis 7.0's
//! ("intset" or "hashtable"), and `Shard::validate` checks the layouts, the counts per encoding
//! and that no empty set is stored.

use heap::HeapConfig;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use store::types::set;
use store::{Encoding, Limits, Set, Shard, ShardConfig, StoreError, Ttl};

const KEYS: usize = 4;

fn shard(seed: u64) -> Shard {
    Shard::new(&ShardConfig {
        databases: 1,
        heap: HeapConfig {
            reserve_bytes: 1 << 30,
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

/// Which members a round draws from.
#[derive(Clone, Copy, Debug)]
enum Pool {
    Ints,
    WideInts,
    Short,
    Long,
    Mixed,
    Many,
}

fn member(rng: &mut SmallRng, pool: Pool) -> Vec<u8> {
    match pool {
        Pool::Ints => rng.gen_range(-700i64..700).to_string().into_bytes(),
        Pool::WideInts => match rng.gen_range(0..4) {
            0 => rng.r#gen::<i64>().to_string().into_bytes(),
            1 => rng.gen_range(-70_000i64..70_000).to_string().into_bytes(),
            2 => i64::MIN.to_string().into_bytes(),
            _ => rng.gen_range(-10i64..10).to_string().into_bytes(),
        },
        Pool::Short => format!("s{}", rng.gen_range(0..200)).into_bytes(),
        Pool::Long => {
            let n = if rng.gen_bool(0.05) {
                300
            } else {
                rng.gen_range(60..80)
            };
            vec![b'a' + rng.gen_range(0..20u8); n]
        }
        Pool::Many => format!("member:{}", rng.gen_range(0..6000)).into_bytes(),
        Pool::Mixed => match rng.gen_range(0..6) {
            0 => b"007".to_vec(),
            1 => b"-0".to_vec(),
            2 => format!("s{}", rng.gen_range(0..50)).into_bytes(),
            3 => Vec::new(),
            _ => rng.gen_range(-300i64..300).to_string().into_bytes(),
        },
    }
}

/// The encoding the content rules imply for a set that started empty and grew to `model` (sets
/// never convert back down, so only the upper bounds are checked).
fn check_encoding(t: Encoding, model: &BTreeSet<Vec<u8>>, all_ints_ever: bool) {
    let ints = model.iter().all(|m| store::canonical_i64(m).is_some());
    match t {
        Encoding::SetIntset => assert!(ints && model.len() <= 512, "intset with {model:?}"),
        Encoding::SetSmall => assert!(
            model.len() <= 128 && model.iter().all(|m| m.len() <= 64),
            "small set past its bounds"
        ),
        Encoding::SetInts => assert!(ints && all_ints_ever, "ints set holding a string"),
        Encoding::SetFlat => assert!(
            model.iter().all(|m| m.len() <= set::FLAT_MEMBER_BYTES_MAX),
            "flat set with a long member"
        ),
        Encoding::SetPages => {}
        other => panic!("{other:?} is not a set encoding"),
    }
}

fn members_of(shard: &mut Shard, key: &[u8]) -> Option<BTreeSet<Vec<u8>>> {
    shard
        .read::<Set, _>(0, key, 0, |v| v.to_vec().into_iter().collect())
        .expect("a set or nothing")
}

fn encoding_of(shard: &mut Shard, key: &[u8]) -> Option<Encoding> {
    shard.encoding(0, key, 0)
}

fn add(shard: &mut Shard, key: &[u8], members: &[&[u8]]) -> Result<usize, StoreError> {
    shard
        .update::<Set, _>(0, key, 0, true, |s| {
            let mut added = 0;
            for m in members {
                added += usize::from(s.add(m)?);
            }
            Ok(added)
        })
        .map(|n| n.unwrap_or(0))
}

#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn run(seed: u64, vary_limits: bool) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut shard = shard(seed);
    let mut models: Vec<BTreeSet<Vec<u8>>> = vec![BTreeSet::new(); KEYS];
    let mut ints_ever = [true; KEYS];
    // A write left the set with more than set-max-intset-entries members (Redis's intset is a
    // hashtable from then on).
    let mut passed = [false; KEYS];
    let mut limits = Limits::default();
    let mut counter = 0u64;
    let mut random = move || {
        counter = counter.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = counter;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z ^ (z >> 31)
    };
    for _round in 0..30 {
        if vary_limits {
            let choices = [0, 1, 5, 100, 512, 600, 2000];
            limits.set_intset_entries = choices[rng.gen_range(0..choices.len())];
            shard.set_limits(limits);
        }
        let pool = [
            Pool::Ints,
            Pool::WideInts,
            Pool::Short,
            Pool::Long,
            Pool::Mixed,
            Pool::Many,
        ][rng.gen_range(0..6)];
        let enabled: [bool; 5] = std::array::from_fn(|_| rng.gen_bool(0.7));
        let bulk = if matches!(pool, Pool::Many) {
            rng.gen_range(40..200)
        } else {
            rng.gen_range(1..40)
        };
        for _step in 0..300 {
            let k = rng.gen_range(0..KEYS);
            let key = format!("set{k}").into_bytes();
            let model = &mut models[k];
            match rng.gen_range(0..5) {
                0 if enabled[0] => {
                    let adds: Vec<Vec<u8>> = (0..rng.gen_range(1..=bulk))
                        .map(|_| member(&mut rng, pool))
                        .collect();
                    let refs: Vec<&[u8]> = adds.iter().map(Vec::as_slice).collect();
                    let before = model.len();
                    for m in &adds {
                        model.insert(m.clone());
                    }
                    if before == 0 {
                        ints_ever[k] = true;
                        passed[k] = false;
                    }
                    passed[k] |= model.len() > limits.set_intset_entries;
                    if adds.iter().any(|m| store::canonical_i64(m).is_none()) {
                        ints_ever[k] = false;
                    }
                    let added = add(&mut shard, &key, &refs).unwrap();
                    assert_eq!(added, model.len() - before);
                }
                1 if enabled[1] => {
                    let rem: Vec<Vec<u8>> = (0..rng.gen_range(1..5))
                        .map(|_| member(&mut rng, pool))
                        .collect();
                    let refs: Vec<&[u8]> = rem.iter().map(Vec::as_slice).collect();
                    let expected = rem
                        .iter()
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .filter(|m| model.remove(*m))
                        .count();
                    let removed = shard
                        .update::<Set, _>(0, &key, 0, false, |s| {
                            Ok(refs.iter().filter(|m| s.remove(m)).count())
                        })
                        .unwrap()
                        .unwrap_or(0);
                    assert_eq!(removed, expected);
                }
                2 if enabled[2] => {
                    let count = rng.gen_range(0..model.len() + 3);
                    let mut popped = Vec::new();
                    let n = shard
                        .update::<Set, _>(0, &key, 0, false, |s| {
                            Ok(s.pop(count, &mut random, |m| popped.push(m.to_vec())))
                        })
                        .unwrap()
                        .unwrap_or(0);
                    assert_eq!(n, count.min(model.len()));
                    assert_eq!(popped.len(), n);
                    for m in &popped {
                        assert!(model.remove(m), "popped a non-member or a member twice");
                    }
                }
                3 if enabled[3] => {
                    // Store a copy of another key's members (SUNIONSTORE's path).
                    let src = rng.gen_range(0..KEYS);
                    let copy: Vec<Vec<u8>> = models[src].iter().cloned().collect();
                    let mut b = shard.builder::<Set>().unwrap();
                    for m in &copy {
                        b.insert(m).unwrap();
                    }
                    b.finish(0, &key, None).unwrap();
                    ints_ever[k] = copy.iter().all(|m| store::canonical_i64(m).is_some());
                    passed[k] = copy.len() > limits.set_intset_entries;
                    models[k] = copy.into_iter().collect();
                }
                4 if enabled[4] => {
                    shard
                        .put_string(0, &key, b"a string", Ttl::Clear, 0)
                        .unwrap();
                    assert_eq!(add(&mut shard, &key, &[b"x"]), Err(StoreError::WrongType));
                    shard.remove(0, &key, 0);
                    model.clear();
                }
                _ => {}
            }
            let intset = ints_ever[k] && !passed[k];
            check(
                &mut shard,
                &key,
                &models[k],
                ints_ever[k],
                intset,
                &mut rng,
                pool,
            );
        }
    }
    for k in 0..KEYS {
        let key = format!("set{k}").into_bytes();
        let viewed = shard.view(0, &key, 0, |v, _| match v {
            store::View::Set(s) => s.iter().map(|m| m.to_vec()).collect::<BTreeSet<_>>(),
            other => panic!("{other:?} is not a set"),
        });
        assert_eq!(viewed.unwrap_or_default(), models[k], "logical view");
    }
}

fn check(
    shard: &mut Shard,
    key: &[u8],
    model: &BTreeSet<Vec<u8>>,
    ints_ever: bool,
    intset: bool,
    rng: &mut SmallRng,
    pool: Pool,
) {
    shard.validate().unwrap();
    match members_of(shard, key) {
        None => assert!(model.is_empty(), "key gone but model holds {}", model.len()),
        Some(got) => {
            assert!(!got.is_empty(), "an empty set was kept");
            assert_eq!(&got, model);
            let t = encoding_of(shard, key).unwrap();
            check_encoding(t, model, ints_ever);
            // Redis's rule: an intset while every member ever added was an integer and no write
            // left more than set-max-intset-entries members.
            let want = if intset { "intset" } else { "hashtable" };
            assert_eq!(shard.object_encoding(0, key, 0), Some(want));
            let probe = member(rng, pool);
            let answer = shard
                .read::<Set, _>(0, key, 0, |v| {
                    (
                        v.len(),
                        v.contains(&probe),
                        v.random(rng.r#gen()).map(|m| m.to_vec()),
                    )
                })
                .unwrap()
                .unwrap();
            assert_eq!(answer.0, model.len());
            assert_eq!(answer.1, model.contains(&probe));
            assert!(
                model.contains(&answer.2.unwrap()),
                "random pick not a member"
            );
        }
    }
}

/// `DENSEKV_SEED`, or `default`.
fn seed(default: u64) -> u64 {
    std::env::var("DENSEKV_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[test]
fn sets_match_the_model() {
    let seed = seed(0x5E7_0002);
    for i in 0..6 {
        run(seed + i, false);
    }
}

#[test]
fn sets_follow_configured_intset_limits() {
    let seed = seed(0x5E7_0102);
    for i in 0..4 {
        run(seed + i, true);
    }
}

/// The thresholds, one step at a time: 512 integers stay an intset, the 513th makes an ints set;
/// a string into a 127-integer intset makes a small set, into a 128-integer one a flat set; 128
/// short strings stay small, the 129th or a 65-byte one makes flat; a string into an ints set
/// makes flat; a 257-byte member or a full 32 KiB buffer makes pages.
#[test]
fn conversions_happen_exactly_at_the_thresholds() {
    let mut shard = shard(7);
    let add = |shard: &mut Shard, key: &[u8], m: &[u8]| {
        add(shard, key, &[m]).unwrap();
        encoding_of(shard, key).unwrap()
    };
    for i in 0..512 {
        assert_eq!(
            add(&mut shard, b"i", i.to_string().as_bytes()),
            Encoding::SetIntset
        );
    }
    assert_eq!(add(&mut shard, b"i", b"512"), Encoding::SetInts);
    assert_eq!(add(&mut shard, b"i", b"x"), Encoding::SetFlat);
    for (n, expect) in [(127, Encoding::SetSmall), (128, Encoding::SetFlat)] {
        let key = format!("n{n}").into_bytes();
        for i in 0..n {
            add(&mut shard, &key, i.to_string().as_bytes());
        }
        assert_eq!(
            add(&mut shard, &key, b"str"),
            expect,
            "string into {n} integers"
        );
    }
    for i in 0..128 {
        assert_eq!(
            add(&mut shard, b"s", format!("m{i}").as_bytes()),
            Encoding::SetSmall
        );
    }
    assert_eq!(add(&mut shard, b"s", b"m128"), Encoding::SetFlat);
    assert_eq!(shard.object_encoding(0, b"s", 0), Some("hashtable"));
    let mut i = 129;
    while add(&mut shard, b"s", format!("m{i}").as_bytes()) == Encoding::SetFlat {
        i += 1;
    }
    assert_eq!(encoding_of(&mut shard, b"s"), Some(Encoding::SetPages));
    assert!(i > 2500, "a flat set of short members holds thousands: {i}");
    assert_eq!(add(&mut shard, b"l", &[b'z'; 64]), Encoding::SetSmall);
    assert_eq!(add(&mut shard, b"l", &[b'z'; 65]), Encoding::SetFlat);
    assert_eq!(add(&mut shard, b"l", &[b'z'; 256]), Encoding::SetFlat);
    assert_eq!(add(&mut shard, b"l", &[b'z'; 257]), Encoding::SetPages);
    assert_eq!(add(&mut shard, b"w", b"1"), Encoding::SetIntset);
    assert_eq!(
        add(&mut shard, b"w", i64::MIN.to_string().as_bytes()),
        Encoding::SetIntset
    );
    assert_eq!(members_of(&mut shard, b"w").unwrap().len(), 2);
    shard.validate().unwrap();
}
