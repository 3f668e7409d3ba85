//! The read-ahead hooks the server calls before running a pipelined batch: `Shard::prefetch`
//! must accept any database and key (missing, empty keyspace) without effect, and
//! `Shard::members_map` must name the map that holds a collection's members — the set's or hash's
//! PageHash, the sorted set's member map — and nothing for strings, lists and missing keys.

use maps::PageHash;
use store::object::tag as ctag;
use store::types::{hash::HashObj, list::ListObj, set::SetObj, zset::ZSetObj};
use store::value::tag;
use store::{Object, Shard, ShardConfig, Ttl};

#[test]
fn prefetch_accepts_any_key() {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    for stage in 0..3 {
        shard.prefetch(0, b"missing", stage);
        shard.prefetch(15, b"", stage);
    }
    shard
        .put(0, b"k", tag::STR_RAW, b"v", Ttl::Clear, 0)
        .unwrap();
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
    let heap = shard.heap_mut();
    let mut set = PageHash::new(heap).unwrap();
    let mut hash = PageHash::new(heap).unwrap();
    for i in 0..3u8 {
        set.insert(heap, &[b'm', i], b"").unwrap();
    }
    for i in 0..5u8 {
        hash.insert(heap, &[b'f', i], b"v").unwrap();
    }
    let members: Vec<Vec<u8>> = (0..7u8).map(|i| vec![b'z', i]).collect();
    let zset = ZSetObj::from_entries(heap, members.iter().map(|m| (1.0, m.as_slice()))).unwrap();
    let set = Object::Set(SetObj::Pages(Box::new(set)));
    let hash = Object::Hash(HashObj::Pages(Box::new(hash), true));
    shard
        .put_object(0, b"s", ctag::SET_PAGES, set, Ttl::Clear, 0)
        .unwrap();
    shard
        .put_object(0, b"h", ctag::HASH_PAGES, hash, Ttl::Clear, 0)
        .unwrap();
    shard
        .put_object(0, b"z", ctag::ZSET_INDEX, Object::ZSet(zset), Ttl::Clear, 0)
        .unwrap();
    assert_eq!(shard.members_map(0, b"s").map(PageHash::len), Some(3));
    assert_eq!(shard.members_map(0, b"h").map(PageHash::len), Some(5));
    assert_eq!(shard.members_map(0, b"z").map(PageHash::len), Some(7));
    assert_eq!(shard.members_map(1, b"s").map(PageHash::len), None);
    // A list is boxed but has no map.
    let list = Object::List(ListObj::new());
    shard
        .put_object(0, b"l", ctag::LIST, list, Ttl::Clear, 0)
        .unwrap();
    assert_eq!(shard.members_map(0, b"l").map(PageHash::len), None);
}
