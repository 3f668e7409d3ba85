//! `Shard::upsert_int` (INCR's one-lookup write): a missing key is created, a live one is
//! rewritten keeping its TTL, an expired one is replaced as if missing (its TTL count and, for a
//! collection, its object released), and a live collection is refused with WRONGTYPE. The shard's
//! invariants (`validate`: TTL count, keys per encoding) are checked after every step.

use store::{Encoding, List, Shard, ShardConfig, StoreError, Str, Ttl};

fn incr(shard: &mut Shard, key: &[u8], now: u64) -> Result<i64, StoreError> {
    shard
        .upsert_int(0, key, now, |current| -> Result<i64, ()> {
            Ok(current.map_or(0, |s| s.as_int().expect("an integer")) + 1)
        })
        .map(|r| r.expect("f accepts"))
}

fn get(shard: &mut Shard, key: &[u8], now: u64) -> Option<(Encoding, Option<u64>, Vec<u8>)> {
    let value = shard.get_string(0, key, now, |s| s.to_vec()).ok()??;
    let expire_at = shard.expire_at(0, key, now)?;
    Some((shard.encoding(0, key, now)?, expire_at, value))
}

#[test]
fn upsert_creates_rewrites_and_replaces_expired_entries() {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    let now = 1_000_000;
    assert_eq!(incr(&mut shard, b"new", now), Ok(1));
    assert_eq!(
        get(&mut shard, b"new", now),
        Some((Encoding::StrInt, None, b"1".to_vec()))
    );
    shard.validate().unwrap();

    shard
        .put_string(0, b"ttl", b"41", Ttl::At(now + 5_000), now)
        .unwrap();
    assert_eq!(incr(&mut shard, b"ttl", now), Ok(42));
    assert_eq!(
        get(&mut shard, b"ttl", now),
        Some((Encoding::StrInt, Some(now + 5_000), b"42".to_vec()))
    );
    assert_eq!(shard.expires(0), 1);
    shard.validate().unwrap();

    // Past its TTL the key is missing to INCR, and the new value has no TTL.
    let later = now + 10_000;
    assert_eq!(incr(&mut shard, b"ttl", later), Ok(1));
    assert_eq!(
        get(&mut shard, b"ttl", later),
        Some((Encoding::StrInt, None, b"1".to_vec()))
    );
    assert_eq!(shard.expires(0), 0);
    assert_eq!(shard.expired_keys(), 1);
    shard.validate().unwrap();

    // A refusal writes nothing.
    let refused = shard.upsert_int(0, b"ttl", later, |_| Err::<i64, _>("no"));
    assert_eq!(refused, Ok(Err("no")));
    assert_eq!(
        get(&mut shard, b"ttl", later).map(|e| e.2),
        Some(b"1".to_vec())
    );

    // A live collection is not rewritten; an expired one is replaced and its object freed
    // (a list past the packed bound, so boxed).
    shard
        .update::<List, _>(0, b"list", now, true, |l| {
            for _ in 0..50 {
                l.push_back(&[b'x'; 100]);
            }
            Ok(())
        })
        .unwrap();
    assert!(
        shard
            .set_expire(0, b"list", Some(now + 5_000), now)
            .unwrap()
    );
    assert_eq!(incr(&mut shard, b"list", now), Err(StoreError::WrongType));
    assert_eq!(shard.encoding(0, b"list", now), Some(Encoding::List));
    shard.validate().unwrap();
    assert_eq!(incr(&mut shard, b"list", later), Ok(1));
    assert_eq!(
        get(&mut shard, b"list", later),
        Some((Encoding::StrInt, None, b"1".to_vec()))
    );
    assert_eq!(shard.expires(0), 0);
    assert_eq!(shard.encoding_counts()[Encoding::List.slot()], 0);
    shard.validate().unwrap();
    assert_eq!(Str::Int(1).to_vec(), b"1");
}
