//! Failure paths of the operations that write more than one place: RENAME, MOVE and COPY (within
//! a shard and between two), the builders, and a collection created by its first write (LPUSH on
//! a new key). A write is made to fail at each point it can (`Shard::puts_before_failure`, and a
//! heap too small for the value), and afterwards both keys must hold what they held before, the
//! shard's invariants must hold (`validate`: counts, holds, layouts), and the heap must hold no
//! more than before (nothing half-built stays behind).

use crate::{Hash, List, Relocated, Set, Shard, ShardConfig, StoreError, Ttl, View, ZSet};
use heap::HeapConfig;

/// A value in Redis's terms as text, equal for equal values whatever their encodings.
pub(crate) fn render(view: View<'_>) -> String {
    match view {
        View::String(s) => format!("string {:?}", s.to_vec()),
        View::List(l) => format!("list {:?}", l.iter_from(0).collect::<Vec<_>>()),
        View::Set(s) => {
            let mut m: Vec<Vec<u8>> = s.iter().map(|m| m.to_vec()).collect();
            m.sort();
            format!("set {m:?}")
        }
        View::Hash(h) => {
            let mut p = h.pairs();
            p.sort();
            format!("hash {p:?}")
        }
        View::ZSet(z) => format!("zset {:?}", z.to_vec()),
    }
}

/// The value of `key` in Redis's terms, for comparing before and after.
fn snapshot(shard: &mut Shard, db: usize, key: &[u8]) -> Option<(String, Option<u64>)> {
    shard.view(db, key, 0, |v, expire_at| (render(v), expire_at))
}

/// A shard holding one key of every kind and encoding family in db 0, with TTLs on some.
fn stocked() -> Shard {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    shard
        .put_string(0, b"str", b"hello", Ttl::At(1 << 50), 0)
        .unwrap();
    shard.put_string(0, b"int", b"42", Ttl::Clear, 0).unwrap();
    shard
        .update::<Hash, _>(0, b"record", 0, true, |h| {
            h.set(b"name", b"ann")?;
            h.set(b"age", b"42")
        })
        .unwrap();
    shard
        .update::<Hash, _>(0, b"pages", 0, true, |h| {
            (0..300).try_for_each(|i| {
                h.set(format!("field{i}").as_bytes(), &[b'v'; 300])
                    .map(drop)
            })
        })
        .unwrap();
    shard
        .update::<Set, _>(0, b"intset", 0, true, |s| s.add(b"7"))
        .unwrap();
    shard
        .update::<Set, _>(0, b"bigset", 0, true, |s| {
            (0..5000).try_for_each(|i| s.add(format!("member:{i}").as_bytes()).map(drop))
        })
        .unwrap();
    shard
        .update::<List, _>(0, b"list", 0, true, |l| {
            (0..1000).for_each(|i| l.push_back(format!("e{i}").as_bytes()));
            Ok(())
        })
        .unwrap();
    shard
        .update::<ZSet, _>(0, b"zset", 0, true, |z| {
            (0..300).try_for_each(|i| z.insert(format!("z{i}").as_bytes(), f64::from(i)))
        })
        .unwrap();
    assert!(shard.set_expire(0, b"zset", Some(1 << 50), 0).unwrap());
    shard.validate().unwrap();
    shard
}

const KEYS: [&[u8]; 8] = [
    b"str", b"int", b"record", b"pages", b"intset", b"bigset", b"list", b"zset",
];

/// Runs `op` with the shard's next write failing, and checks that nothing changed.
fn fails_cleanly(shard: &mut Shard, op: impl FnOnce(&mut Shard) -> Result<Relocated, StoreError>) {
    let before: Vec<_> = (0..2)
        .flat_map(|db| KEYS.iter().map(move |k| (db, *k)))
        .map(|(db, k)| snapshot(shard, db, k))
        .collect();
    let (allocated, shapes) = (shard.heap().stats().allocated_bytes, shard.shapes().len());
    shard.puts_before_failure = Some(0);
    assert_eq!(op(shard), Err(StoreError::OutOfMemory));
    shard.puts_before_failure = None;
    let after: Vec<_> = (0..2)
        .flat_map(|db| KEYS.iter().map(move |k| (db, *k)))
        .map(|(db, k)| snapshot(shard, db, k))
        .collect();
    assert_eq!(before, after, "a failed write changed the keyspace");
    assert_eq!(
        shard.heap().stats().allocated_bytes,
        allocated,
        "heap memory leaked"
    );
    assert_eq!(shard.shapes().len(), shapes);
    shard.validate().unwrap();
}

#[test]
fn failed_renames_and_moves_keep_both_keys() {
    let mut shard = stocked();
    for src in KEYS {
        for dst in KEYS.iter().filter(|&&d| d != src) {
            fails_cleanly(&mut shard, |s| s.rename(0, src, 0, dst, true, 0));
        }
        // MOVE: the same key into another database.
        fails_cleanly(&mut shard, |s| s.rename(0, src, 1, src, false, 0));
    }
    // And they succeed afterwards, moving the value whole.
    let want = snapshot(&mut shard, 0, b"bigset");
    assert_eq!(
        shard.rename(0, b"bigset", 1, b"bigset", false, 0),
        Ok(Relocated::Done)
    );
    assert_eq!(snapshot(&mut shard, 1, b"bigset"), want);
    assert_eq!(snapshot(&mut shard, 0, b"bigset"), None);
    shard.validate().unwrap();
}

#[test]
fn failed_copies_keep_the_destination_and_free_the_copy() {
    let mut shard = stocked();
    for src in KEYS {
        for dst in KEYS.iter().filter(|&&d| d != src) {
            fails_cleanly(&mut shard, |s| s.copy(0, src, 0, dst, true, 0));
        }
        fails_cleanly(&mut shard, |s| s.copy(0, src, 1, src, true, 0));
    }
    for src in KEYS {
        let want = snapshot(&mut shard, 0, src);
        assert_eq!(shard.copy(0, src, 1, src, false, 0), Ok(Relocated::Done));
        assert_eq!(snapshot(&mut shard, 1, src), want, "copy of {src:?}");
        assert_eq!(snapshot(&mut shard, 0, src), want);
    }
    shard.validate().unwrap();
}

#[test]
fn failed_moves_between_shards_keep_both_keys() {
    let mut from = stocked();
    let mut to = stocked();
    for src in KEYS {
        for dst in KEYS {
            let before = (snapshot(&mut from, 0, src), snapshot(&mut to, 0, dst));
            let allocated = to.heap().stats().allocated_bytes;
            to.puts_before_failure = Some(0);
            let renamed = crate::rename_between(&mut from, &mut to, 0, src, 0, dst, true, 0);
            assert_eq!(renamed, Err(StoreError::OutOfMemory));
            to.puts_before_failure = None;
            let copied = {
                to.puts_before_failure = Some(0);
                crate::copy_between(&mut from, &mut to, 0, src, 0, dst, true, 0)
            };
            to.puts_before_failure = None;
            assert_eq!(copied, Err(StoreError::OutOfMemory));
            assert_eq!(
                (snapshot(&mut from, 0, src), snapshot(&mut to, 0, dst)),
                before
            );
            assert_eq!(
                to.heap().stats().allocated_bytes,
                allocated,
                "{src:?} → {dst:?}"
            );
            from.validate().unwrap();
            to.validate().unwrap();
        }
    }
    let want = snapshot(&mut from, 0, b"pages");
    let moved = crate::rename_between(&mut from, &mut to, 0, b"pages", 1, b"p", false, 0);
    assert_eq!(moved, Ok(Relocated::Done));
    assert_eq!(snapshot(&mut to, 1, b"p"), want);
    assert_eq!(snapshot(&mut from, 0, b"pages"), None);
}

#[test]
fn a_new_list_whose_write_fails_is_not_stored() {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    shard.puts_before_failure = Some(0);
    let pushed = shard.update::<List, _>(0, b"q", 0, true, |l| {
        l.push_front(b"x");
        Ok(l.len())
    });
    assert_eq!(pushed, Err(StoreError::OutOfMemory));
    assert!(!shard.contains(0, b"q", 0));
    assert_eq!(shard.len(0), 0);
    shard.validate().unwrap();
    let pushed = shard.update::<List, _>(0, b"q", 0, true, |l| {
        l.push_front(b"x");
        Ok(l.len())
    });
    assert_eq!(pushed, Ok(Some(1)));
}

#[test]
fn a_builder_out_of_heap_leaves_the_key_and_frees_what_it_built() {
    let mut shard = Shard::new(&ShardConfig {
        databases: 1,
        heap: HeapConfig {
            reserve_bytes: 4 << 20,
            ..HeapConfig::default()
        },
        map: maps::Config::default(),
        ..ShardConfig::default()
    })
    .unwrap();
    shard.put_string(0, b"dst", b"old", Ttl::Clear, 0).unwrap();
    let allocated = shard.heap().stats().allocated_bytes;
    let mut builder = shard.builder::<Set>().unwrap();
    let mut failed = None;
    for i in 0..1_000_000u32 {
        if let Err(e) = builder.insert(format!("a long enough member number {i}").as_bytes()) {
            failed = Some(e);
            break;
        }
    }
    assert_eq!(
        failed,
        Some(StoreError::OutOfMemory),
        "a 4 MiB heap cannot hold 1M members"
    );
    drop(builder);
    assert_eq!(shard.heap().stats().allocated_bytes, allocated);
    assert_eq!(
        shard.get_string(0, b"dst", 0, |s| s.to_vec()),
        Ok(Some(b"old".to_vec()))
    );
    shard.validate().unwrap();
}

#[test]
fn a_string_moved_between_shards_keeps_its_encoding_and_ttl() {
    let mut from = Shard::new(&ShardConfig::default()).unwrap();
    let mut to = Shard::new(&ShardConfig::default()).unwrap();
    // APPEND leaves "123" raw; Redis's RENAME keeps the object, so OBJECT ENCODING says "raw".
    from.put_string_raw(0, b"k", b"123", Ttl::At(1 << 50), 0)
        .unwrap();
    let moved = crate::rename_between(&mut from, &mut to, 0, b"k", 0, b"k2", false, 0);
    assert_eq!(moved, Ok(Relocated::Done));
    assert_eq!(to.encoding(0, b"k2", 0), Some(crate::Encoding::StrRaw));
    assert_eq!(to.expire_at(0, b"k2", 0), Some(Some(1 << 50)));
    assert!(!from.contains(0, b"k", 0));
    from.validate().unwrap();
    to.validate().unwrap();
}

/// The expiry log names every key deleted because its TTL passed — by a lookup, by a delete, by
/// INCR's overwrite, by active expiry — once, in order, and nothing else.
#[test]
fn the_expiry_log_names_each_expired_key_once() {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    let expired = |shard: &mut Shard, db: usize, key: &[u8]| {
        shard.put_string(db, key, b"v", Ttl::At(10), 0).unwrap();
    };
    for key in [&b"read"[..], b"del", b"incr", b"active"] {
        expired(&mut shard, 2, key);
    }
    shard
        .put_string(2, b"live", b"v", Ttl::At(1000), 0)
        .unwrap();
    shard.put_string(2, b"gone", b"v", Ttl::Clear, 0).unwrap();
    assert!(shard.take_expired().is_empty(), "writes expire nothing");
    assert!(!shard.contains(2, b"read", 100));
    assert!(!shard.remove(2, b"del", 100));
    assert!(
        shard.remove(2, b"gone", 100),
        "a live delete is not an expiry"
    );
    shard
        .upsert_int::<()>(2, b"incr", 100, |_| Ok(1))
        .unwrap()
        .unwrap();
    while shard.active_expire(2, 100, 100).expired > 0 {}
    let log = shard.take_expired();
    let names: Vec<&[u8]> = log.iter().map(|(_, k)| k.as_slice()).collect();
    assert_eq!(names, [&b"read"[..], b"del", b"incr", b"active"]);
    assert!(log.iter().all(|&(db, _)| db == 2));
    assert!(shard.take_expired().is_empty(), "taken once");
    shard.validate().unwrap();
}
