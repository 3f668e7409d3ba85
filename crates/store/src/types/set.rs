//! Set values: five encodings chosen by content and size, converted automatically, never back
//! down (as Redis never turns a hashtable set back into an intset).
//!
//! ```text
//!  encoding    OBJECT ENCODING  holds                               where
//!  SetIntset   "intset"         <= min(L, 512) integers, sorted      inline bytes
//!  SetSmall    "hashtable"      <= 128 members of <= 64 B, hinted   inline bytes
//!  SetFlat     "hashtable"      members of <= 256 B: maps::FlatMap  boxed, <= 32 KiB
//!  SetPages    "hashtable"      any members: PageHash, empty values boxed
//!  SetInts     "intset" while   integers: maps::IntSet              boxed
//!              <= L, then "hashtable" for good (a sticky bit)
//!
//!  L = set-max-intset-entries (the shard's `Limits`, 512 by default)
//!  new set, first member:   integer -> INTSET;  <= 64 B -> SMALL;  <= 256 B -> FLAT;  else PAGES
//!  INTSET + integer, full (min(L, 512))   -> INTS
//!  INTSET + non-integer: fits SMALL      -> SMALL, else FLAT (or PAGES if it does not fit)
//!  SMALL + member past 128 or > 64 B     -> FLAT (PAGES for a member > 256 B)
//!  FLAT + member > 256 B, or past 32 KiB -> PAGES
//!  INTS + non-integer                    -> FLAT if all fit, else PAGES
//! ```
//! Redis 7.0 reports every set of strings as "hashtable" (listpack sets came in 7.2), so only
//! the intset's name differs, and what OBJECT ENCODING says changes only from intset to
//! hashtable, at the write where Redis converts (past L members, or the first non-integer). An
//! INTS set within a raised L iterates in table order where Redis's intset is sorted.
//!
//! FLAT bounds. The buffer stays <= 32 KiB (`maps::flat::BYTES_MAX`): past it a PageHash, whose
//! pages fill to ~60-90%, costs no more, and a bigger buffer would make each rebuild (a copy of
//! the whole set) a visible latency step. Members are <= `FLAT_MEMBER_BYTES_MAX` = 256 B: the
//! length varints stay <= 2 bytes, a 32 KiB set still holds >= ~100 of the longest members (so a
//! few long ones do not flip a set to pages early), and a probe's key compare stays short; longer
//! members are what PageHash keeps out of line anyway. A FLAT set is 1 B of hint + 2 B of offset
//! per slot (80-90% full) + 1 B of length + the member + ~6% of arena slack: 1,000 `m:<i>`
//! members cost ~10 KB, where a PageHash spends two 8 KiB pages.
//! "Integer" means the canonical decimal text of an i64 (`shape::canonical_i64`): "7" is one,
//! "07" and "+7" are strings, exactly Redis's `isSdsRepresentableAsLongLong`. The inline layouts
//! are in `set_inline.rs`. A member of a PAGES set is a PageHash key with an empty value: 4 bytes
//! of entry framing (meta, two length varints, hint) next to the member's bytes, packed several to
//! a 64-byte piece (see maps' `pagehash.rs`); an INTS member is 8..15 bytes of remainder-coded key.
//!
//! A set is read through `SetView` (no copy: replies are written from the stored bytes) and
//! changed through `Edit<Set>` (`add`, `remove`, `pop`). Conversions from FLAT and INTS stream
//! the members into the new encoding; only an inline set (at most 4 KiB) is read whole first.

// The inline encodings live in their own file, a child of this module (so `types/mod.rs` needs
// no line for them).
#[path = "set_inline.rs"]
pub mod inline;

use crate::edit::{Builder, Collection, Edit, Work, sealed::Internal};
use crate::encoding::{Encoding, Kind, tag};
use crate::error::StoreError;
use crate::limits::Limits;
use crate::object::Object;
use crate::shard::Slot;
use heap::Heap;
use inline::{INTSET_ENTRIES_MAX, SMALL_ENTRIES_MAX, SMALL_VALUE_MAX_BYTES, intset, small};
use maps::flat::{self, FlatInsert, FlatMap};
use maps::{IntSet, PageHash};
use shape::{ShapeTree, Str, canonical_i64};

/// Longest member a FLAT set holds (see the module doc for why 256).
pub const FLAT_MEMBER_BYTES_MAX: usize = 256;

/// Probes per insert for a set's PageHash (the maps default is 16). Set entries are short (4
/// bytes of framing next to the member), so letting an insert look further before its page sheds
/// a bucket fills pages fuller: one set of 1M `m:<i>` members measured 8.3 B of overhead per
/// member at 16 probes, 8.0 at 32, 7.2 at 64. Lookups probe only up to their home piece's spill.
const PAGES_PROBE_COUNT_MAX: u8 = 64;

/// The set type (`Shard::read::<Set>`, `Shard::update::<Set>`).
#[derive(Debug)]
pub enum Set {}

/// The boxed encodings of a set.
#[derive(Debug)]
pub enum SetObj {
    /// Any members: a PageHash whose values are all empty.
    Pages(Box<PageHash>),
    /// Integers only (`i64` stored as its two's-complement `u64`), with the sticky `hashtable`
    /// bit: the set has passed `set-max-intset-entries` (an integer set past the inline
    /// intset's 512 but within a raised limit is still Redis's "intset").
    Ints(Box<IntSet>, bool),
    /// Members of <= `FLAT_MEMBER_BYTES_MAX` bytes in one buffer of <= 32 KiB.
    Flat(FlatMap),
}

impl SetObj {
    pub fn destroy(self, heap: &mut Heap) {
        match self {
            SetObj::Pages(p) => p.destroy(heap),
            SetObj::Ints(s, _) => s.destroy(heap),
            SetObj::Flat(_) => {}
        }
    }

    pub fn memory_bytes(&self) -> usize {
        match self {
            SetObj::Pages(p) => std::mem::size_of::<PageHash>() + p.memory_bytes(),
            SetObj::Ints(s, _) => std::mem::size_of::<IntSet>() + s.memory_bytes(),
            SetObj::Flat(f) => f.memory_bytes(),
        }
    }

    pub fn encoding_name(&self) -> &'static str {
        match self {
            SetObj::Ints(_, false) => "intset",
            _ => "hashtable",
        }
    }

    pub fn encoding(&self) -> Encoding {
        match self {
            SetObj::Pages(_) => Encoding::SetPages,
            SetObj::Ints(..) => Encoding::SetInts,
            SetObj::Flat(_) => Encoding::SetFlat,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            SetObj::Pages(p) => p.len(),
            SetObj::Ints(s, _) => s.len(),
            SetObj::Flat(f) => f.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The PageHash of a pages set (for prefetching a member's lookup).
    pub fn members_map(&self) -> Option<&PageHash> {
        match self {
            SetObj::Pages(p) => Some(p),
            _ => None,
        }
    }

    /// Adds `m`; true if it was new. Converts INTS to FLAT or PAGES when `m` is not an
    /// integer, FLAT to PAGES when `m` is too long or the buffer is full.
    pub fn insert(
        &mut self,
        heap: &mut Heap,
        m: &[u8],
        limits: &Limits,
    ) -> Result<bool, StoreError> {
        // Bounded: each pass answers or converts one step up (INTS → FLAT → PAGES).
        for _ in 0..3 {
            match self {
                SetObj::Ints(s, hashtable) => match canonical_i64(m) {
                    Some(v) => {
                        let added = s.insert(heap, v as u64)?;
                        *hashtable |= s.len() > limits.set_intset_entries;
                        return Ok(added);
                    }
                    None => self.convert(heap)?,
                },
                SetObj::Flat(f) if m.len() <= FLAT_MEMBER_BYTES_MAX => match f.insert(m, b"") {
                    FlatInsert::Inserted => return Ok(true),
                    FlatInsert::Replaced => return Ok(false),
                    FlatInsert::Full => self.convert(heap)?,
                },
                SetObj::Flat(_) => self.convert(heap)?,
                SetObj::Pages(p) => return Ok(!p.insert(heap, m, b"")?),
            }
        }
        unreachable!("PAGES takes any member")
    }

    /// Removes `m`; true if it was there.
    pub fn remove(&mut self, heap: &mut Heap, m: &[u8]) -> bool {
        match self {
            SetObj::Pages(p) => p.remove(heap, m),
            SetObj::Ints(s, _) => canonical_i64(m).is_some_and(|v| s.remove(heap, v as u64)),
            SetObj::Flat(f) => f.remove(m),
        }
    }

    /// Rewrites an INTS or FLAT set as the next encoding up: INTS (a non-integer arrived)
    /// becomes FLAT when its members fit one, else PAGES; FLAT becomes PAGES. The members
    /// stream from the old encoding: a FLAT set lives outside the heap, and an INTS set's
    /// integers are read a bucket at a time, so neither is copied whole.
    fn convert(&mut self, heap: &mut Heap) -> Result<(), StoreError> {
        let next = match &*self {
            SetObj::Ints(s, _) => {
                let members: Vec<i64> = s.iter().map(|v| v as i64).collect();
                let texts = || members.iter().map(|&v| Str::Int(v));
                match build_flat(texts()) {
                    Some(flat) => SetObj::Flat(flat),
                    None => SetObj::Pages(Box::new(build_pages(heap, texts())?)),
                }
            }
            SetObj::Flat(f) => SetObj::Pages(Box::new(build_pages(
                heap,
                f.iter().map(|(k, _)| Str::Bytes(k)),
            )?)),
            SetObj::Pages(_) => return Ok(()),
        };
        std::mem::replace(self, next).destroy(heap);
        Ok(())
    }

    /// A new boxed set of the distinct `members`: INTS when they are integers an inline intset
    /// can no longer take (a full one overflowing, or more), else FLAT when they fit one, else
    /// PAGES.
    fn build<'m>(
        heap: &mut Heap,
        members: impl Iterator<Item = Str<'m>> + Clone,
        limits: &Limits,
    ) -> Result<SetObj, StoreError> {
        let all_ints = members.clone().all(|m| m.as_int().is_some());
        let count = members.clone().count();
        if all_ints && count >= intset_inline_max(limits) {
            let mut s = IntSet::new(heap)?;
            for m in members {
                if let Err(e) = s.insert(heap, m.as_int().expect("all integers") as u64) {
                    s.destroy(heap);
                    return Err(e.into());
                }
            }
            return Ok(SetObj::Ints(Box::new(s), count > limits.set_intset_entries));
        }
        if let Some(flat) = build_flat(members.clone()) {
            return Ok(SetObj::Flat(flat));
        }
        Ok(SetObj::Pages(Box::new(build_pages(heap, members)?)))
    }

    /// Checks the encoding's invariants and bounds (tests and `Shard::validate`).
    pub fn validate(&self, heap: &Heap) -> Result<(), String> {
        if self.is_empty() {
            return Err("empty set stored".into());
        }
        match self {
            SetObj::Pages(p) => p.validate(heap),
            SetObj::Ints(s, _) => s.validate(heap),
            SetObj::Flat(f) => {
                if f.iter().any(|(m, _)| m.len() > FLAT_MEMBER_BYTES_MAX) {
                    return Err("flat set member past its bound".into());
                }
                f.validate()
            }
        }
    }
}

/// A FLAT set of the distinct `members`, or `None` when one is too long or they do not fit.
fn build_flat<'m>(members: impl Iterator<Item = Str<'m>> + Clone) -> Option<FlatMap> {
    // A cheap bound first, so a large set is not half built before it is refused: each member
    // needs its bytes, a length byte and >= 3 bytes of slot.
    let mut bytes = 0usize;
    for m in members.clone() {
        let len = match m {
            Str::Int(_) => shape::I64_TEXT_BYTES_MAX,
            Str::Bytes(b) if b.len() > FLAT_MEMBER_BYTES_MAX => return None,
            Str::Bytes(b) => b.len(),
        };
        bytes += len + 4;
        if bytes > flat::BYTES_MAX {
            return None;
        }
    }
    let mut f = FlatMap::new_set();
    for m in members {
        if m.with_bytes(|text| f.insert(text, b"")) == FlatInsert::Full {
            return None;
        }
    }
    Some(f)
}

/// A PAGES set of the distinct `members`.
fn build_pages<'m>(
    heap: &mut Heap,
    members: impl Iterator<Item = Str<'m>>,
) -> Result<PageHash, StoreError> {
    let config = maps::Config {
        probe_count_max: PAGES_PROBE_COUNT_MAX,
        ..maps::Config::default()
    };
    let mut pages = PageHash::with_config(heap, &config)?;
    for m in members {
        if let Err(e) = m.with_bytes(|text| pages.insert(heap, text, b"")) {
            pages.destroy(heap);
            return Err(e.into());
        }
    }
    Ok(pages)
}

/// A read-only view of a set, in whichever encoding it is.
#[derive(Clone, Copy, Debug)]
pub struct SetView<'a>(Inner<'a>);

#[derive(Clone, Copy, Debug)]
enum Inner<'a> {
    Intset(&'a [u8]),
    Small(&'a [u8]),
    Pages(&'a PageHash, &'a Heap),
    Ints(&'a IntSet),
    Flat(&'a FlatMap),
}

impl<'a> SetView<'a> {
    /// The view of a stored object, read through shared borrows (also `entries.rs`).
    pub(crate) fn of_obj(set: &'a SetObj, heap: &'a Heap) -> SetView<'a> {
        SetView(match set {
            SetObj::Pages(p) => Inner::Pages(p, heap),
            SetObj::Ints(s, _) => Inner::Ints(s),
            SetObj::Flat(f) => Inner::Flat(f),
        })
    }

    fn of_inline(t: u8, bytes: &'a [u8]) -> SetView<'a> {
        SetView(if t == tag::SET_INTSET {
            Inner::Intset(bytes)
        } else {
            Inner::Small(bytes)
        })
    }

    pub fn len(&self) -> usize {
        match self.0 {
            Inner::Intset(b) => intset::len(b),
            Inner::Small(b) => small::len(b),
            Inner::Pages(p, _) => p.len(),
            Inner::Ints(s) => s.len(),
            Inner::Flat(f) => f.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether SSCAN returns the set whole at cursor 0: the inline encodings and FLAT (at most
    /// 32 KiB), as Redis does for its intsets.
    pub fn scans_whole(&self) -> bool {
        matches!(self.0, Inner::Intset(_) | Inner::Small(_) | Inner::Flat(_))
    }

    #[inline]
    pub fn contains(&self, m: &[u8]) -> bool {
        match self.0 {
            Inner::Intset(b) => canonical_i64(m).is_some_and(|v| intset::contains(b, v)),
            Inner::Small(b) => small::contains(b, m),
            Inner::Pages(p, heap) => p.contains_key(heap, m),
            Inner::Ints(s) => canonical_i64(m).is_some_and(|v| s.contains(v as u64)),
            Inner::Flat(f) => f.contains(m),
        }
    }

    /// Every member (intsets in ascending order, others in storage order).
    pub fn iter(&self) -> Box<dyn Iterator<Item = Str<'a>> + 'a> {
        match self.0 {
            Inner::Intset(b) => Box::new(intset::iter(b).map(Str::Int)),
            Inner::Small(b) => Box::new(small::members(b).map(Str::Bytes)),
            Inner::Pages(p, heap) => Box::new(p.iter(heap).map(|(k, _)| Str::Bytes(k))),
            Inner::Ints(s) => Box::new(s.iter().map(|v| Str::Int(v as i64))),
            Inner::Flat(m) => Box::new(m.iter().map(|(k, _)| Str::Bytes(k))),
        }
    }

    /// Calls `f` with every member, in `iter`'s order.
    pub fn for_each(&self, mut f: impl FnMut(Str<'_>)) {
        match self.0 {
            Inner::Intset(b) => intset::iter(b).for_each(|v| f(Str::Int(v))),
            Inner::Small(b) => small::members(b).for_each(|m| f(Str::Bytes(m))),
            Inner::Pages(p, heap) => p.iter(heap).for_each(|(k, _)| f(Str::Bytes(k))),
            Inner::Ints(s) => s.iter().for_each(|v| f(Str::Int(v as i64))),
            Inner::Flat(m) => m.iter().for_each(|(k, _)| f(Str::Bytes(k))),
        }
    }

    /// A member chosen by the random number `r` (uniform for the inline encodings; for the
    /// boxed ones uniform over pages, then over a page's entries), or `None` when empty.
    pub fn random(&self, r: u64) -> Option<Str<'a>> {
        let len = self.len() as u64;
        if len == 0 {
            return None;
        }
        Some(match self.0 {
            Inner::Intset(b) => Str::Int(intset::get(b, (r % len) as usize)),
            Inner::Small(b) => Str::Bytes(small::get(b, (r % len) as usize)),
            Inner::Pages(p, heap) => Str::Bytes(p.sample(heap, r)?.0),
            Inner::Ints(s) => Str::Int(s.sample(r)? as i64),
            Inner::Flat(f) => Str::Bytes(f.sample(r)?.0),
        })
    }

    /// One SSCAN step from `cursor`: calls `f` for one bucket's members and returns the next
    /// cursor (0 = done). Inline and FLAT sets are visited whole and always return 0 (Redis does
    /// the same for its compact encodings; a FLAT set is <= 32 KiB, so one reply is bounded).
    pub fn scan_step(&self, cursor: u64, mut f: impl FnMut(Str<'_>)) -> u64 {
        match self.0 {
            Inner::Intset(_) | Inner::Small(_) | Inner::Flat(_) => {
                self.for_each(f);
                0
            }
            Inner::Pages(p, heap) => p.scan(heap, cursor, |k, _| f(Str::Bytes(k))),
            Inner::Ints(s) => s.scan(cursor, |v| f(Str::Int(v as i64))),
        }
    }

    /// Every member, borrowed from the set.
    pub fn members(&self) -> Vec<Str<'a>> {
        let mut out = Vec::with_capacity(self.len());
        out.extend(self.iter());
        out
    }

    /// Every member, owned.
    pub fn to_vec(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::with_capacity(self.len());
        self.for_each(|m| out.push(m.to_vec()));
        out
    }

    /// Checks an inline set's layout and bounds.
    fn validate_inline(&self) -> Result<(), String> {
        match self.0 {
            Inner::Intset(b) => {
                intset::validate(b)?;
                if intset::len(b) > INTSET_ENTRIES_MAX || intset::len(b) == 0 {
                    return Err("intset empty or too long".into());
                }
                Ok(())
            }
            Inner::Small(b) => {
                small::validate(b)?;
                if small::len(b) > SMALL_ENTRIES_MAX
                    || small::members(b).any(|m| m.len() > SMALL_VALUE_MAX_BYTES)
                {
                    return Err("small set past its bounds".into());
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

impl<'a> IntoIterator for &SetView<'a> {
    type Item = Str<'a>;
    type IntoIter = Box<dyn Iterator<Item = Str<'a>> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl Internal for Set {
    type Obj = SetObj;

    fn object_mut(o: &mut Object) -> Option<&mut SetObj> {
        match o {
            Object::Set(s) => Some(s),
            _ => None,
        }
    }

    fn wrap(o: SetObj) -> Object {
        Object::Set(o)
    }

    fn is_inline(t: u8) -> bool {
        t == tag::SET_INTSET || t == tag::SET_SMALL
    }

    fn new_work(_heap: &mut Heap, _limits: &Limits) -> Result<Work<'static, SetObj>, StoreError> {
        let mut empty = Vec::new();
        intset::build(&[], &mut empty);
        Ok(Work::Inline(tag::SET_INTSET, empty))
    }

    fn inline_len(t: u8, bytes: &[u8], _shapes: &ShapeTree) -> usize {
        SetView::of_inline(t, bytes).len()
    }

    fn obj_len(o: &SetObj) -> usize {
        o.len()
    }

    fn obj_encoding(o: &SetObj) -> Encoding {
        o.encoding()
    }

    fn obj_destroy(o: SetObj, heap: &mut Heap) {
        o.destroy(heap);
    }
}

impl Collection for Set {
    const KIND: Kind = Kind::Set;
    type View<'a> = SetView<'a>;

    fn view(slot: Slot<'_>) -> Option<SetView<'_>> {
        match slot {
            Slot::Inline { tag: t, bytes, .. } if Set::is_inline(t) => {
                Some(SetView::of_inline(t, bytes))
            }
            Slot::Boxed {
                object: Object::Set(set),
                heap,
                ..
            } => Some(SetView::of_obj(set, heap)),
            _ => None,
        }
    }
}

/// Checks a stored inline set payload (`Shard::validate`).
pub(crate) fn validate_inline(t: u8, bytes: &[u8]) -> Result<(), String> {
    SetView::of_inline(t, bytes).validate_inline()
}

/// What adding one member to an inline set did.
enum Step {
    Present,
    /// Added: `out` holds the new payload, with this tag.
    Added(u8),
    /// The set must become boxed.
    Overflow,
}

/// Most members an inline intset holds under `limits` (Redis converts an intset past
/// `set-max-intset-entries`; the inline layout stops at `INTSET_ENTRIES_MAX`).
fn intset_inline_max(limits: &Limits) -> usize {
    limits.set_intset_entries.min(INTSET_ENTRIES_MAX)
}

/// Adds `m` to the inline set `cur` with tag `t`, writing the new payload to `out`; an intset
/// holds at most `intset_max` members.
fn add_one_inline(t: u8, cur: &[u8], m: &[u8], intset_max: usize, out: &mut Vec<u8>) -> Step {
    let int = canonical_i64(m);
    let fits_small = m.len() <= SMALL_VALUE_MAX_BYTES;
    match (t, int) {
        (tag::SET_INTSET, Some(v)) => match intset::find(cur, v) {
            Ok(_) => Step::Present,
            Err(_) if intset::len(cur) >= intset_max => Step::Overflow,
            Err(at) => {
                intset::insert(cur, at, v, out);
                Step::Added(tag::SET_INTSET)
            }
        },
        (tag::SET_INTSET, None) if fits_small && intset::len(cur) < SMALL_ENTRIES_MAX => {
            let texts: Vec<Vec<u8>> = intset::iter(cur).map(|v| Str::Int(v).to_vec()).collect();
            let mut converted = Vec::new();
            small::build(texts.iter().map(Vec::as_slice), &mut converted);
            small::append(&converted, m, out);
            Step::Added(tag::SET_SMALL)
        }
        (tag::SET_SMALL, _) => {
            if small::contains(cur, m) {
                Step::Present
            } else if small::len(cur) < SMALL_ENTRIES_MAX && fits_small {
                small::append(cur, m, out);
                Step::Added(tag::SET_SMALL)
            } else {
                Step::Overflow
            }
        }
        _ => Step::Overflow,
    }
}

impl Edit<'_, Set> {
    /// The set as it is now.
    pub fn view(&self) -> SetView<'_> {
        match &self.work {
            Work::Inline(t, bytes) => SetView::of_inline(*t, bytes),
            Work::Borrowed(o) => SetView::of_obj(o, self.heap),
            Work::Owned(o) => SetView::of_obj(o, self.heap),
        }
    }

    /// Adds `m`; true if it was new.
    pub fn add(&mut self, m: &[u8]) -> Result<bool, StoreError> {
        if let Work::Inline(t, cur) = &mut self.work {
            let mut out = Vec::with_capacity(cur.len() + m.len() + 2);
            match add_one_inline(*t, cur, m, intset_inline_max(&self.limits), &mut out) {
                Step::Present => return Ok(false),
                Step::Added(new_tag) => {
                    (*t, *cur) = (new_tag, out);
                    self.changed = true;
                    return Ok(true);
                }
                Step::Overflow => {
                    // A threshold is crossed: the set becomes boxed with everything so far.
                    let view = SetView::of_inline(*t, cur);
                    let obj = SetObj::build(self.heap, view.members().into_iter(), &self.limits)?;
                    self.become_owned(obj);
                }
            }
        }
        let limits = self.limits;
        let (obj, heap) = self.object().expect("boxed above");
        let added = obj.insert(heap, m, &limits)?;
        self.changed |= added;
        Ok(added)
    }

    /// Removes `m`; true if it was there.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        let removed = match &mut self.work {
            Work::Inline(t, cur) => remove_inline(*t, cur, m),
            Work::Borrowed(o) => o.remove(self.heap, m),
            Work::Owned(o) => o.remove(self.heap, m),
        };
        self.changed |= removed;
        removed
    }

    /// Removes up to `count` random members, calling `f` with each (before it is removed, so it
    /// can be replied from the stored bytes); returns how many. `random` supplies the random
    /// numbers. O(count) for boxed sets, O(size) for inline ones, never quadratic.
    pub fn pop(
        &mut self,
        count: usize,
        random: &mut dyn FnMut() -> u64,
        mut f: impl FnMut(Str<'_>),
    ) -> usize {
        let len = self.len();
        if count >= len {
            self.view().for_each(&mut f);
            self.clear();
            return len;
        }
        self.changed = true;
        match &mut self.work {
            Work::Inline(t, cur) => pop_inline(*t, cur, count, random, &mut f),
            Work::Borrowed(o) => pop_boxed(o, self.heap, count, random, &mut f),
            Work::Owned(o) => pop_boxed(o, self.heap, count, random, &mut f),
        }
        count
    }

    /// Empties the set (the key is deleted when the edit ends).
    fn clear(&mut self) {
        self.changed = true;
        match &mut self.work {
            Work::Inline(t, cur) => {
                intset::build(&[], cur);
                *t = tag::SET_INTSET;
            }
            Work::Borrowed(o) => {
                let empty = SetObj::Flat(FlatMap::new_set());
                std::mem::replace(&mut **o, empty).destroy(self.heap);
            }
            Work::Owned(o) => {
                std::mem::replace(o, SetObj::Flat(FlatMap::new_set())).destroy(self.heap);
            }
        }
    }
}

/// Removes `m` from an inline payload in place; true if it was there.
fn remove_inline(t: u8, cur: &mut Vec<u8>, m: &[u8]) -> bool {
    let mut out = Vec::with_capacity(cur.len());
    if t == tag::SET_INTSET {
        let Some(at) = canonical_i64(m).and_then(|v| intset::find(cur, v).ok()) else {
            return false;
        };
        intset::remove(cur, at, &mut out);
    } else {
        let Some((i, at)) = small::find(cur, m) else {
            return false;
        };
        small::remove(cur, i, at, &mut out);
    }
    *cur = out;
    true
}

fn pop_inline(
    t: u8,
    cur: &mut Vec<u8>,
    count: usize,
    random: &mut dyn FnMut() -> u64,
    f: &mut impl FnMut(Str<'_>),
) {
    let len = SetView::of_inline(t, cur).len();
    // A partial Fisher-Yates shuffle picks `count` distinct positions uniformly.
    let mut order: Vec<u16> = (0..len as u16).collect();
    for i in 0..count {
        let j = i + (random() % (len - i) as u64) as usize;
        order.swap(i, j);
    }
    let mut out = Vec::with_capacity(cur.len());
    if t == tag::SET_INTSET {
        for &i in &order[..count] {
            f(Str::Int(intset::get(cur, i as usize)));
        }
        let mut rest: Vec<i64> = order[count..]
            .iter()
            .map(|&i| intset::get(cur, i as usize))
            .collect();
        rest.sort_unstable();
        intset::build(&rest, &mut out);
    } else {
        let all: Vec<&[u8]> = small::members(cur).collect();
        for &i in &order[..count] {
            f(Str::Bytes(all[i as usize]));
        }
        small::build(order[count..].iter().map(|&i| all[i as usize]), &mut out);
    }
    *cur = out;
}

fn pop_boxed(
    set: &mut SetObj,
    heap: &mut Heap,
    count: usize,
    random: &mut dyn FnMut() -> u64,
    f: &mut impl FnMut(Str<'_>),
) {
    let mut scratch: Vec<u8> = Vec::new();
    for _ in 0..count {
        let r = random();
        match set {
            SetObj::Pages(p) => {
                let (m, _) = p.sample(heap, r).expect("count < len: not empty");
                f(Str::Bytes(m));
                scratch.clear();
                scratch.extend_from_slice(m);
                p.remove(heap, &scratch);
            }
            SetObj::Ints(s, _) => {
                let v = s.sample(r).expect("count < len: not empty");
                f(Str::Int(v as i64));
                s.remove(heap, v);
            }
            SetObj::Flat(flat) => {
                let (m, _) = flat.sample(r).expect("count < len: not empty");
                f(Str::Bytes(m));
                scratch.clear();
                scratch.extend_from_slice(m);
                flat.remove(&scratch);
            }
        }
    }
}

impl Builder<'_, Set> {
    /// Adds a member; false when it was already there.
    pub fn insert(&mut self, member: &[u8]) -> Result<bool, StoreError> {
        self.edit(|s| s.add(member))
    }
}
