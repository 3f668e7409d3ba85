//! The read-ahead hooks the server calls before running a pipelined batch: `Shard::prefetch`
//! must accept any database and key (missing, empty keyspace) without effect, and
//! `Shard::members` must name the structure that finds a collection's members — the set's or
//! hash's PageHash (`Shard::members_map`), the sorted set's member index — and nothing for
//! strings, lists, compact encodings and missing keys.

use maps::PageHash;
use store::{Encoding, Hash, List, Members, Set, Shard, ShardConfig, Ttl, ZSet};

#[test]
fn prefetch_accepts_any_key() {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    for stage in 0..3 {
        shard.prefetch(0, b"missing", stage);
        shard.prefetch(15, b"", stage);
    }
    shard.put_string(0, b"k", b"v", Ttl::Clear, 0).unwrap();
    for stage in 0..3 {
        shard.prefetch(0, b"k", stage);
        shard.prefetch(0, b"other", stage);
    }
    assert_eq!(shard.members_map(0, b"k").map(PageHash::len), None);
    assert_eq!(shard.members_map(0, b"missing").map(PageHash::len), None);
}

#[test]
fn members_map_is_the_collections_own() {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    // Members and values longer than 256 bytes put sets and hashes in their pages encoding.
    let long = |c: u8, i: u8| {
        let mut v = vec![c; 300];
        v[0] = i;
        v
    };
    shard
        .update::<Set, _>(0, b"s", 0, true, |s| {
            (0..3u8).try_for_each(|i| s.add(&long(b'm', i)).map(drop))
        })
        .unwrap();
    shard
        .update::<Hash, _>(0, b"h", 0, true, |h| {
            (0..5u8).try_for_each(|i| h.set(&[b'f', i], &long(b'v', i)).map(drop))
        })
        .unwrap();
    let mut z = shard.zset_builder(200, 2).unwrap();
    for i in 0..200u8 {
        z.insert(&[b'z', i], 1.0).unwrap();
    }
    z.finish(0, b"z", None).unwrap();
    assert_eq!(shard.encoding(0, b"s", 0), Some(Encoding::SetPages));
    assert_eq!(shard.encoding(0, b"h", 0), Some(Encoding::HashPages));
    assert_eq!(shard.encoding(0, b"z", 0), Some(Encoding::ZSetIndex));
    assert_eq!(shard.members_map(0, b"s").map(PageHash::len), Some(3));
    assert_eq!(shard.members_map(0, b"h").map(PageHash::len), Some(5));
    // A sorted set's index finds members without a PageHash.
    assert_eq!(shard.members_map(0, b"z").map(PageHash::len), None);
    assert!(matches!(shard.members(0, b"z"), Some(Members::ZSet(_))));
    assert!(matches!(shard.members(0, b"s"), Some(Members::Map(_))));
    let members = shard.members(0, b"z").unwrap();
    for stage in 0..3 {
        members.prefetch(members.hash(&[b'z', 7]), stage);
    }
    assert_eq!(shard.members_map(1, b"s").map(PageHash::len), None);
    // A list is boxed but has no map; a small set has none either.
    shard
        .update::<List, _>(0, b"l", 0, true, |l| {
            l.push_back(b"x");
            Ok(())
        })
        .unwrap();
    shard
        .update::<ZSet, _>(0, b"small", 0, true, |z| z.insert(b"m", 1.0))
        .unwrap();
    assert_eq!(shard.members_map(0, b"l").map(PageHash::len), None);
    assert_eq!(shard.members_map(0, b"small").map(PageHash::len), None);
    assert!(shard.members(0, b"l").is_none() && shard.members(0, b"small").is_none());
    shard.validate().unwrap();
}
