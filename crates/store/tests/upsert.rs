//! `Shard::upsert_with` (INCR's one-lookup write): a missing key is created, a live one is
//! rewritten keeping its TTL, an expired one is replaced as if missing (its TTL count and, for a
//! boxed collection, its object released), and an owning entry is never rewritten. The shard's
//! invariants (`validate`: TTL count, keys per tag) are checked after every step.

use store::object::tag as ctag;
use store::types::list::ListObj;
use store::value::{self, tag};
use store::{Object, Shard, ShardConfig, Str, Ttl};

fn incr(shard: &mut Shard, key: &[u8], now: u64) -> Option<i64> {
    shard
        .upsert_with(0, key, now, |e, out| {
            let current = match e {
                None => 0,
                Some(e) if !store::shard::is_string(e.tag) => return (None, None),
                Some(e) => match Str::of(e.tag, e.payload) {
                    Str::Int(i) => i,
                    Str::Bytes(b) => value::parse_i64(b).expect("an integer"),
                },
            };
            value::encode_int(current + 1, out);
            (Some(tag::STR_INT), Some(current + 1))
        })
        .unwrap()
}

fn get(shard: &mut Shard, key: &[u8], now: u64) -> Option<(u8, Option<u64>, Vec<u8>)> {
    shard.with_entry(0, key, now, |e| {
        (e.tag, e.expire_at_ms, Str::of(e.tag, e.payload).to_vec())
    })
}

#[test]
fn upsert_creates_rewrites_and_replaces_expired_entries() {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    let now = 1_000_000;
    assert_eq!(incr(&mut shard, b"new", now), Some(1));
    assert_eq!(
        get(&mut shard, b"new", now),
        Some((tag::STR_INT, None, b"1".to_vec()))
    );
    shard.validate().unwrap();

    shard
        .put_string(0, b"ttl", b"41", Ttl::At(now + 5_000), now)
        .unwrap();
    assert_eq!(incr(&mut shard, b"ttl", now), Some(42));
    assert_eq!(
        get(&mut shard, b"ttl", now),
        Some((tag::STR_INT, Some(now + 5_000), b"42".to_vec()))
    );
    assert_eq!(shard.expires(0), 1);
    shard.validate().unwrap();

    // Past its TTL the key is missing to INCR, and the new value has no TTL.
    let later = now + 10_000;
    assert_eq!(incr(&mut shard, b"ttl", later), Some(1));
    assert_eq!(
        get(&mut shard, b"ttl", later),
        Some((tag::STR_INT, None, b"1".to_vec()))
    );
    assert_eq!(shard.expires(0), 0);
    assert_eq!(shard.expired_keys(), 1);
    shard.validate().unwrap();

    // A live collection is not rewritten; an expired one is replaced and its object freed.
    let list = Object::List(ListObj::new());
    shard
        .put_object(0, b"list", ctag::LIST, list, Ttl::At(now + 5_000), now)
        .unwrap();
    assert_eq!(incr(&mut shard, b"list", now), None);
    assert_eq!(get(&mut shard, b"list", now).map(|e| e.0), Some(ctag::LIST));
    shard.validate().unwrap();
    assert_eq!(incr(&mut shard, b"list", later), Some(1));
    assert_eq!(
        get(&mut shard, b"list", later),
        Some((tag::STR_INT, None, b"1".to_vec()))
    );
    assert_eq!(shard.expires(0), 0);
    assert_eq!(shard.tag_counts()[usize::from(ctag::LIST)], 0);
    shard.validate().unwrap();
}
