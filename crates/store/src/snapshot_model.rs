//! Model test of point-in-time snapshots (`snapshot.rs`): random writes of every kind run between
//! the steps of a snapshot's walk, and when the walk ends the sink must have received exactly
//! the dataset as it was when the snapshot began: every key once, with its value and expiry of
//! that instant, and nothing written since. `validate` (which checks the epoch bits) runs after
//! every step, and several snapshots run back to back so the epoch bit's meaning flips.

use crate::tests::render;
use crate::{Entry, Hash, List, Set, Shard, ShardConfig, SnapshotSink, Ttl, ZSet};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// (db, key) → (value as text, expiry).
type Dataset = BTreeMap<(usize, Vec<u8>), (String, Option<u64>)>;

fn dataset(shard: &mut Shard) -> Dataset {
    let mut all = Dataset::new();
    for db in 0..shard.databases() {
        shard.for_each_entry(db, |e| {
            all.insert((db, e.key.to_vec()), (render(e.view), e.expire_at_ms));
        });
    }
    all
}

/// Collects what a snapshot hands over; a key handed over twice is recorded as a failure.
#[derive(Default)]
struct Collected {
    entries: Dataset,
    twice: Vec<(usize, Vec<u8>)>,
    finished: bool,
}

struct Sink(Arc<Mutex<Collected>>);

impl SnapshotSink for Sink {
    fn entry(&mut self, db: usize, e: Entry<'_>) {
        let mut c = self.0.lock().unwrap();
        let key = (db, e.key.to_vec());
        let old = c
            .entries
            .insert(key.clone(), (render(e.view), e.expire_at_ms));
        if old.is_some() {
            c.twice.push(key);
        }
    }

    fn finish(&mut self) {
        self.0.lock().unwrap().finished = true;
    }
}

const DBS: usize = 3;

/// One random write (or read that may expire a key).
fn write(shard: &mut Shard, rng: &mut SmallRng, now: u64) {
    let db = rng.gen_range(0..DBS);
    let key = format!("k{}", rng.gen_range(0..300)).into_bytes();
    let n = rng.gen_range(0..40);
    let member = format!("m{n}").into_bytes();
    let _ = match rng.gen_range(0..100) {
        0..=29 => {
            let ttl = if rng.gen_bool(0.2) {
                Ttl::At(now + rng.gen_range(0..50))
            } else {
                Ttl::Clear
            };
            shard
                .put_string(
                    db,
                    &key,
                    format!("v{}", rng.r#gen::<u16>()).as_bytes(),
                    ttl,
                    now,
                )
                .map(drop)
        }
        30..=39 => shard
            .update::<Hash, _>(db, &key, now, true, |h| h.set(&member, b"x").map(drop))
            .map(drop),
        40..=49 => shard
            .update::<List, _>(db, &key, now, true, |l| {
                l.push_back(&member);
                Ok(())
            })
            .map(drop),
        50..=57 => shard
            .update::<Set, _>(db, &key, now, true, |s| s.add(&member).map(drop))
            .map(drop),
        58..=64 => shard
            .update::<ZSet, _>(db, &key, now, true, |z| match z.score(&member) {
                Some(old) => z.update(&member, old, f64::from(n)),
                None => z.insert(&member, f64::from(n)),
            })
            .map(drop),
        65..=79 => {
            shard.remove(db, &key, now);
            Ok(())
        }
        80..=87 => shard.set_expire(db, &key, Some(now + 5), now).map(drop),
        88..=95 => shard
            .upsert_int(db, &key, now, |_| Ok::<i64, ()>(7))
            .map(drop),
        96..=97 => {
            shard.flush(db);
            Ok(())
        }
        _ => {
            shard.swap_dbs(db, rng.gen_range(0..DBS));
            Ok(())
        }
    };
}

#[test]
fn a_snapshot_is_the_dataset_at_its_start() {
    for seed in 0..12u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let config = ShardConfig {
            databases: DBS,
            ..ShardConfig::default()
        };
        let mut shard = Shard::new(&config).unwrap();
        let mut now = 1_000;
        for round in 0..4 {
            for _ in 0..rng.gen_range(200..3000) {
                write(&mut shard, &mut rng, now);
            }
            let before = dataset(&mut shard);
            let collected = Arc::new(Mutex::new(Collected::default()));
            shard.snapshot_begin(Box::new(Sink(Arc::clone(&collected))));
            shard.validate().unwrap();
            let mut steps = 0;
            loop {
                for _ in 0..rng.gen_range(0..20) {
                    write(&mut shard, &mut rng, now);
                    now += rng.gen_range(0..3);
                    shard.validate().unwrap();
                }
                steps += 1;
                if shard.snapshot_step(rng.gen_range(1..60)) {
                    break;
                }
                shard.validate().unwrap();
                assert!(steps < 100_000, "seed {seed}: the walk does not end");
            }
            shard.validate().unwrap();
            assert!(!shard.snapshot_running());
            let c = collected.lock().unwrap();
            assert!(c.finished, "seed {seed} round {round}: finish not called");
            assert!(
                c.twice.is_empty(),
                "seed {seed} round {round}: twice {:?}",
                c.twice
            );
            assert_eq!(c.entries, before, "seed {seed} round {round}");
        }
    }
}
