//! Every stored entry as it is, for the commands that look at the dataset rather than serve it
//! (DEBUG DIGEST, DIGEST-VALUE, OBJECT today; RDB and AOF rewrite later): a walk over all the
//! entries of a database (`Shard::for_each_entry`) and a look at one key (`Shard::peek`), each
//! handing out an `Entry`: the key, the logical `View` of its value (`view.rs`), its expiry, the
//! name OBJECT ENCODING gives it and where it lives.
//!
//! ```text
//!  db's PageHash ──iter──▶ (key, [ttl] payload) ──entry_of──▶ Entry { key, view, expire_at_ms }
//!                                  │ tag 0–6: the payload read in place (strings, records,
//!                                  │          inline sets, packed zsets)
//!                                  └ tag 15:  the boxed object, through a shared borrow
//! ```
//! Unlike every other read, neither expires anything: a key whose TTL has passed but that lazy or
//! active expiry has not deleted yet is still stored, and Redis's DEBUG DIGEST and DIGEST-VALUE
//! see such keys (they walk and probe the dict itself, not `lookupKey`), so these do too; the
//! caller gets the expiry and decides. Neither changes the keyspace: the walk visits every stored
//! entry exactly once, in map order, which callers must not rely on (DEBUG DIGEST xors its
//! per-key digests, so order does not matter to it).
//!
//! The views borrow the entry's bytes and objects in place; nothing is copied. A walk takes
//! `&mut Shard` only because a shaped hash record's view holds the shape tree mutably (lookups
//! in it cache); the map, the heap and every object are only read.

use crate::encoding::{Encoding, tag};
use crate::keyops::inline_encoding_name;
use crate::object::{self, Object};
use crate::shard::{EntryRef, Shard, Slot, split_value};
use crate::types::hash::HashView;
use crate::types::list_view::ListView;
use crate::types::set::SetView;
use crate::types::zset::ZSetView;
use crate::view::{View, of_slot};
use heap::Heap;
use shape::ShapeTree;

/// One stored entry: its key, the logical view of its value, its expiry (passed or not).
#[derive(Debug)]
pub struct Entry<'a> {
    pub key: &'a [u8],
    pub view: View<'a>,
    /// Unix ms at which the key expires; it may lie in the past (see the module doc).
    pub expire_at_ms: Option<u64>,
    encoding: Encoding,
    object_encoding: &'static str,
    address: usize,
}

impl Entry<'_> {
    /// The encoding densekv stores the value in (INFO's `densekv_keys_<name>`).
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// What OBJECT ENCODING replies for the value (Redis 7.0's names).
    pub fn object_encoding(&self) -> &'static str {
        self.object_encoding
    }

    /// Where the value lives: the boxed object's address, or the payload's inside its page (it
    /// moves when the page's entries do). For display only (DEBUG OBJECT's `Value at:`).
    pub fn address(&self) -> usize {
        self.address
    }
}

/// The `Entry` of a stored entry read from its page.
pub(crate) fn entry_of<'a>(
    key: &'a [u8],
    entry: EntryRef<'a>,
    heap: &'a Heap,
    shapes: &'a mut ShapeTree,
) -> Entry<'a> {
    let expire_at_ms = entry.expire_at_ms;
    if entry.tag != tag::BOXED {
        let view = of_slot(Slot::Inline {
            tag: entry.tag,
            expire_at_ms,
            bytes: entry.payload,
            shapes,
        })
        .expect("an inline payload is a value");
        return Entry {
            key,
            view,
            expire_at_ms,
            encoding: Encoding::of_inline(entry.tag),
            object_encoding: inline_encoding_name(entry.tag),
            address: entry.payload.as_ptr() as usize,
        };
    }
    // SAFETY: the handle is the payload of an entry that is stored in its map, read under a
    // borrow of the shard that lasts `'a`, during which nothing can remove the entry or take a
    // mutable reference to its object (the shape tree borrowed mutably holds no objects).
    let object = unsafe { object::object_ref(&object::handle_of(entry.payload)) };
    let view = match object {
        Object::Hash(h) => View::Hash(HashView::of_obj(h, heap)),
        Object::List(l) => View::List(ListView::Chunks(l)),
        Object::Set(s) => View::Set(SetView::of_obj(s, heap)),
        Object::ZSet(z) => View::ZSet(ZSetView::of_index(z)),
    };
    Entry {
        key,
        view,
        expire_at_ms,
        encoding: object.encoding(),
        object_encoding: object.encoding_name(),
        address: std::ptr::from_ref(object) as usize,
    }
}

impl Shard {
    /// Calls `f` with every entry stored in `db`, expired or not, in map order; deletes nothing.
    pub fn for_each_entry(&mut self, db: usize, mut f: impl FnMut(Entry<'_>)) {
        let Shard {
            heap, dbs, shapes, ..
        } = self;
        let Some(keys) = dbs[db].keys.as_ref() else {
            return;
        };
        for (key, value) in keys.iter(heap) {
            f(entry_of(key, split_value(value), heap, shapes));
        }
    }

    /// Calls `f` with the entry of `key` if it is stored, expired or not (`None` when it is
    /// not); deletes nothing.
    pub fn peek<R>(&mut self, db: usize, key: &[u8], f: impl FnOnce(Entry<'_>) -> R) -> Option<R> {
        let Shard {
            heap, dbs, shapes, ..
        } = self;
        let value = dbs[db].keys.as_ref()?.get(heap, key)?;
        Some(f(entry_of(key, split_value(value), heap, shapes)))
    }
}

#[cfg(test)]
mod tests {
    //! A model test: random writes of every type and encoding go to a shard and to a `BTreeMap`
    //! of logical values; the walk must yield exactly the model (keys whose TTL passed
    //! included), `peek` must agree with it key by key and miss what it lacks, and neither may
    //! change the shard.

    use super::*;
    use crate::{Hash, List, Set, ShardConfig, Ttl, ZSet};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::collections::{BTreeMap, BTreeSet, btree_map};

    /// Per database: key → (value, expiry).
    type Db = BTreeMap<Vec<u8>, (Model, Option<u64>)>;

    /// A value in Redis's terms, order-free where Redis's type is.
    #[derive(Clone, Debug, PartialEq)]
    enum Model {
        String(Vec<u8>),
        List(Vec<Vec<u8>>),
        Set(BTreeSet<Vec<u8>>),
        Hash(BTreeMap<Vec<u8>, Vec<u8>>),
        ZSet(BTreeMap<Vec<u8>, u64>),
    }

    fn model_of(view: &View<'_>) -> Model {
        match view {
            View::String(s) => Model::String(s.to_vec()),
            View::List(l) => Model::List(l.iter_from(0).map(<[u8]>::to_vec).collect()),
            View::Set(s) => Model::Set(s.iter().map(|m| m.to_vec()).collect()),
            View::Hash(h) => Model::Hash(h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()),
            View::ZSet(z) => Model::ZSet(
                z.iter(0, false)
                    .map(|(s, m)| (m.to_vec(), s.to_bits()))
                    .collect(),
            ),
        }
    }

    /// An element: small integers (intsets, int tables) or text of any length class.
    fn element(rng: &mut SmallRng) -> Vec<u8> {
        match rng.gen_range(0..4) {
            0 => rng.gen_range(-50i64..50).to_string().into_bytes(),
            1 => format!("m{}", rng.gen_range(0..400)).into_bytes(),
            2 => vec![b'x'; rng.gen_range(60..200)],
            _ => format!(
                "{}:{}",
                rng.gen_range(0..9),
                "y".repeat(rng.gen_range(0..20))
            )
            .into_bytes(),
        }
    }

    fn write(shard: &mut Shard, rng: &mut SmallRng, db: usize, key: &[u8], model: &mut Model) {
        let most = if rng.gen_bool(0.2) { 700 } else { 8 };
        let n = rng.gen_range(1..most);
        for _ in 0..n {
            let e = element(rng);
            match model {
                Model::String(v) => {
                    shard.put_string(db, key, &e, Ttl::Keep, 0).unwrap();
                    *v = e;
                }
                Model::List(l) => {
                    shard
                        .update::<List, _>(db, key, 0, true, |l| {
                            l.push_back(&e);
                            Ok(())
                        })
                        .unwrap();
                    l.push(e);
                }
                Model::Set(s) => {
                    shard
                        .update::<Set, _>(db, key, 0, true, |s| s.add(&e))
                        .unwrap();
                    s.insert(e);
                }
                Model::Hash(h) => {
                    let v = element(rng);
                    shard
                        .update::<Hash, _>(db, key, 0, true, |h| h.set(&e, &v))
                        .unwrap();
                    h.insert(e, v);
                }
                Model::ZSet(z) => {
                    let score = f64::from(rng.gen_range(-100i32..100)) / 4.0;
                    if let btree_map::Entry::Vacant(slot) = z.entry(e) {
                        shard
                            .update::<ZSet, _>(db, key, 0, true, |z| z.insert(slot.key(), score))
                            .unwrap();
                        slot.insert(score.to_bits());
                    }
                }
            }
        }
    }

    fn check(shard: &mut Shard, model: &[Db]) {
        for (db, expected) in model.iter().enumerate() {
            let mut seen = BTreeMap::new();
            shard.for_each_entry(db, |e| {
                assert_eq!(e.encoding().kind(), e.view_kind(), "{:?}", e.key);
                let fresh = seen.insert(e.key.to_vec(), (model_of(&e.view), e.expire_at_ms));
                assert!(fresh.is_none(), "{:?} walked twice", e.key);
            });
            assert_eq!(&seen, expected, "db {db}");
            for (key, want) in expected {
                let got = shard.peek(db, key, |e| (model_of(&e.view), e.expire_at_ms));
                assert_eq!(got.as_ref(), Some(want), "peek {key:?}");
            }
            assert!(shard.peek(db, b"never-written", |_| ()).is_none());
            assert_eq!(shard.len(db), expected.len(), "the walk deleted nothing");
        }
    }

    impl Entry<'_> {
        fn view_kind(&self) -> crate::Kind {
            match self.view {
                View::String(_) => crate::Kind::String,
                View::List(_) => crate::Kind::List,
                View::Set(_) => crate::Kind::Set,
                View::Hash(_) => crate::Kind::Hash,
                View::ZSet(_) => crate::Kind::ZSet,
            }
        }
    }

    #[test]
    fn walk_and_peek_see_every_stored_entry_as_the_model_has_it() {
        for seed in 0..4u64 {
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut shard = Shard::new(&ShardConfig::default()).unwrap();
            let mut model: Vec<Db> = vec![BTreeMap::new(); 3];
            for step in 0..300 {
                let db = rng.gen_range(0..3);
                let key = format!("k{}", rng.gen_range(0..60)).into_bytes();
                if rng.gen_bool(0.1) {
                    shard.remove(db, &key, 0);
                    model[db].remove(&key);
                    continue;
                }
                let entry = model[db].entry(key.clone()).or_insert_with(|| {
                    let fresh = match rng.gen_range(0..5) {
                        0 => Model::String(Vec::new()),
                        1 => Model::List(Vec::new()),
                        2 => Model::Set(BTreeSet::new()),
                        3 => Model::Hash(BTreeMap::new()),
                        _ => Model::ZSet(BTreeMap::new()),
                    };
                    (fresh, None)
                });
                write(&mut shard, &mut rng, db, &key, &mut entry.0);
                // TTLs in the past too: written at time 0, they have passed for any later read,
                // and the walk must still see the key.
                if rng.gen_bool(0.3) {
                    let at = rng.gen_range(1..1_000_000);
                    assert!(shard.set_expire(db, &key, Some(at), 0).unwrap());
                    entry.1 = Some(at);
                }
                if step % 50 == 49 {
                    check(&mut shard, &model);
                }
            }
            check(&mut shard, &model);
            shard.validate().unwrap();
        }
    }
}
