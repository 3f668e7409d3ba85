//! The logical view of a value: its content in Redis's terms, whatever its encoding, for the code
//! that moves values (RENAME and COPY across shards here; DUMP/RESTORE, RDB, AOF rewrite and
//! replication later), and the rebuild that turns such a view back into the densest encoding.
//!
//! ```text
//!  View::String(Str)          the bytes, or the integer they spell
//!  View::List(ListView)       elements head → tail            (ListView::iter_from(0))
//!  View::Set(SetView)         members                          (SetView::iter → Str)
//!  View::Hash(HashView)       (field, value) pairs             (HashView::iter → (Str, Str))
//!  View::ZSet(ZSetView)       (member, score) in rank order    (ZSetView::iter(0, false))
//! ```
//! Every view knows its length before it is iterated (RDB writes lengths first), and every
//! iterator borrows the stored bytes: nothing is copied until a consumer copies it. `rebuild`
//! streams a view into a `Builder` of the destination shard, element by element, so a big
//! collection never passes through a whole-value intermediate.

use crate::edit::Collection;
use crate::encoding::{Encoding, Kind};
use crate::error::StoreError;
use crate::shard::{Shard, Slot, Ttl};
use crate::types::hash::{Hash, HashView};
use crate::types::list::List;
use crate::types::list_view::ListView;
use crate::types::set::{Set, SetView};
use crate::types::zset::{ZSet, ZSetView};
use crate::value::str_of;
use shape::Str;

/// A value in Redis's terms, read in place.
#[derive(Debug)]
pub enum View<'a> {
    String(Str<'a>),
    List(ListView<'a>),
    Set(SetView<'a>),
    Hash(HashView<'a>),
    ZSet(ZSetView<'a>),
}

impl View<'_> {
    /// Elements of a collection (1 for a string).
    pub fn len(&self) -> usize {
        match self {
            View::String(_) => 1,
            View::List(l) => l.len(),
            View::Set(s) => s.len(),
            View::Hash(h) => h.len(),
            View::ZSet(z) => z.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The view of the value in `slot` (`None` for a missing key).
pub(crate) fn of_slot(slot: Slot<'_>) -> Option<View<'_>> {
    let kind = match &slot {
        Slot::Missing => return None,
        Slot::Inline { tag: t, .. } => Encoding::of_inline(*t).kind(),
        Slot::Boxed { object, .. } => object.encoding().kind(),
    };
    Some(match kind {
        Kind::String => match slot {
            Slot::Inline { tag: t, bytes, .. } => View::String(str_of(t, bytes)),
            _ => unreachable!("strings are inline"),
        },
        Kind::List => View::List(List::view(slot)?),
        Kind::Set => View::Set(Set::view(slot)?),
        Kind::Hash => View::Hash(Hash::view(slot)?),
        Kind::ZSet => View::ZSet(ZSet::view(slot)?),
    })
}

impl Shard {
    /// Calls `f` with the logical view of `key`'s value and its expiry (`None` when missing).
    pub fn view<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(View<'_>, Option<u64>) -> R,
    ) -> Option<R> {
        self.with_slot(db, key, now_ms, |slot| {
            let expire_at = match &slot {
                Slot::Missing => None,
                Slot::Inline { expire_at_ms, .. } | Slot::Boxed { expire_at_ms, .. } => {
                    *expire_at_ms
                }
            };
            of_slot(slot).map(|v| f(v, expire_at))
        })
    }
}

/// Stores the value `view` shows under `key` of `dst` with `expire_at`, in the encoding `dst`
/// would choose for it, replacing whatever was there. On `Err` the key keeps its old value.
/// `view` must not borrow `dst` (it comes from another shard).
pub fn rebuild(
    dst: &mut Shard,
    db: usize,
    key: &[u8],
    view: &View<'_>,
    expire_at: Option<u64>,
) -> Result<(), StoreError> {
    match view {
        View::String(s) => {
            let ttl = expire_at.map_or(Ttl::Clear, Ttl::At);
            s.with_bytes(|b| dst.put_string(db, key, b, ttl, 0))
        }
        View::List(l) => {
            let mut b = dst.builder::<List>()?;
            l.iter_from(0).for_each(|v| b.push_back(v));
            b.finish(db, key, expire_at)
        }
        View::Set(s) => {
            let mut b = dst.builder::<Set>()?;
            for m in s {
                m.with_bytes(|m| b.insert(m))?;
            }
            b.finish(db, key, expire_at)
        }
        View::Hash(h) => {
            let mut b = dst.builder::<Hash>()?;
            for (f, v) in h {
                f.with_bytes(|f| v.with_bytes(|v| b.insert(f, v)))?;
            }
            b.finish(db, key, expire_at)
        }
        View::ZSet(z) => {
            let longest = z.iter(0, false).map(|(_, m)| m.len()).max().unwrap_or(0);
            let mut b = dst.zset_builder(z.len(), longest)?;
            for (score, member) in z.iter(0, false) {
                b.insert(member, score)?;
            }
            b.finish(db, key, expire_at)
        }
    }
}
