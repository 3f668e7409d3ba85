//! Set values: five encodings chosen by content and size, converted automatically, never back
//! down (as Redis never turns a hashtable set back into an intset).
//!
//! ```text
//!  tag  encoding           OBJECT ENCODING  holds                               where
//!   8   SET_INTSET         "intset"         <= 512 integers, sorted, 2/4/8 B    inline bytes
//!   9   SET_SMALL          "hashtable"      <= 128 members of <= 64 B, hinted   inline bytes
//!  15   SET_FLAT           "hashtable"      members of <= 256 B: maps::FlatMap  boxed, <= 32 KiB
//!  10   SET_PAGES          "hashtable"      any members: PageHash, empty values boxed
//!  11   SET_INTS           "hashtable"      integers: maps::IntSet              boxed
//!
//!  new set, first member:   integer -> INTSET;  <= 64 B -> SMALL;  <= 256 B -> FLAT;  else PAGES
//!  INTSET + integer, full (512)          -> INTS
//!  INTSET + non-integer: fits SMALL      -> SMALL, else FLAT (or PAGES if it does not fit)
//!  SMALL + member past 128 or > 64 B     -> FLAT (PAGES for a member > 256 B)
//!  FLAT + member > 256 B, or past 32 KiB -> PAGES
//!  INTS + non-integer                    -> FLAT if all fit, else PAGES
//! ```
//! Redis 7.0 reports every set of strings as "hashtable" (listpack sets came in 7.2), so only
//! the intset's name differs, and no conversion ever changes what OBJECT ENCODING says except
//! intset -> hashtable, exactly where Redis converts.
//!
//! FLAT bounds. The buffer stays <= 32 KiB (`maps::flat::BYTES_MAX`): past it a PageHash, whose
//! pages fill to ~60-90%, costs no more, and a bigger buffer would make each rebuild (a copy of
//! the whole set) a visible latency step. Members are <= `FLAT_MEMBER_BYTES_MAX` = 256 B: the
//! length varints stay <= 2 bytes, a 32 KiB set still holds >= ~100 of the longest members (so a
//! few long ones do not flip a set to pages early), and a probe's key compare stays short; longer
//! members are what PageHash keeps out of line anyway. A FLAT set is 1 B of hint + 2 B of offset
//! per slot (80-90% full) + 1 B of length + the member + ~6% of arena slack: 1,000 `m:<i>`
//! members cost ~10 KB, where a PageHash spends two 8 KiB pages.
//! "Integer" means the canonical decimal text of an i64 (`value::parse_i64`): "7" is one, "07"
//! and "+7" are strings, exactly Redis's `isSdsRepresentableAsLongLong`. The inline layouts are in
//! `set_inline.rs`. A member of a PAGES set is a PageHash key with an empty value: 4 bytes of
//! entry framing (meta, two length varints, hint) next to the member's bytes, packed several to a
//! 64-byte piece (see maps' `pagehash.rs`); an INTS member is 8..15 bytes of remainder-coded key.
//!
//! Operations read a set through `SetView` (no copy: replies are written from the stored bytes)
//! and change it with `add`, `remove`, `pop` and `store` (which picks the encoding of a new set
//! from its members, for SINTERSTORE and friends and for `import`). Invariant: no key holds an
//! empty set (the last removal deletes the key).

// The inline encodings live in their own file, a child of this module (so `types/mod.rs` needs
// no line for them).
#[path = "set_inline.rs"]
pub mod inline;

use crate::object::{Object, tag};
use crate::shard::{Shard, Slot, StoreError, Ttl};
use crate::value::{Kind, parse_i64};
use heap::Heap;
use inline::{INTSET_ENTRIES_MAX, SMALL_ENTRIES_MAX, SMALL_VALUE_MAX_BYTES, intset, small};
use maps::flat::{self, FlatInsert, FlatMap};
use maps::{IntSet, PageHash};

/// Longest member a FLAT set holds (see the module doc for why 256).
pub const FLAT_MEMBER_BYTES_MAX: usize = 256;

/// The boxed encodings of a set.
#[derive(Debug)]
pub enum SetObj {
    /// Any members: a PageHash whose values are all empty.
    Pages(Box<PageHash>),
    /// Integers only (`i64` stored as its two's-complement `u64`).
    Ints(Box<IntSet>),
    /// Members of <= `FLAT_MEMBER_BYTES_MAX` bytes in one buffer of <= 32 KiB.
    Flat(FlatMap),
}

impl SetObj {
    pub fn destroy(self, heap: &mut Heap) {
        match self {
            SetObj::Pages(p) => p.destroy(heap),
            SetObj::Ints(s) => s.destroy(heap),
            SetObj::Flat(_) => {}
        }
    }

    pub fn memory_bytes(&self) -> usize {
        match self {
            SetObj::Pages(p) => std::mem::size_of::<PageHash>() + p.memory_bytes(),
            SetObj::Ints(s) => std::mem::size_of::<IntSet>() + s.memory_bytes(),
            SetObj::Flat(f) => f.memory_bytes(),
        }
    }

    pub fn encoding_name(&self) -> &'static str {
        "hashtable"
    }

    pub fn export(&self, heap: &Heap) -> Vec<Vec<u8>> {
        SetView::of_obj(self, heap).to_vec()
    }

    pub fn len(&self) -> usize {
        match self {
            SetObj::Pages(p) => p.len(),
            SetObj::Ints(s) => s.len(),
            SetObj::Flat(f) => f.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keyspace tag of this encoding.
    pub fn tag(&self) -> u8 {
        match self {
            SetObj::Pages(_) => tag::SET_PAGES,
            SetObj::Ints(_) => tag::SET_INTS,
            SetObj::Flat(_) => tag::SET_FLAT,
        }
    }

    /// Adds `m`; true if it was new. Converts INTS to FLAT or PAGES when `m` is not an
    /// integer, FLAT to PAGES when `m` is too long or the buffer is full.
    pub fn insert(&mut self, heap: &mut Heap, m: &[u8]) -> Result<bool, StoreError> {
        // Bounded: each pass answers or converts one step up (INTS → FLAT → PAGES).
        for _ in 0..3 {
            match self {
                SetObj::Ints(s) => match parse_i64(m) {
                    Some(v) => return Ok(s.insert(heap, v as u64)?),
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
            SetObj::Ints(s) => parse_i64(m).is_some_and(|v| s.remove(heap, v as u64)),
            SetObj::Flat(f) => f.remove(m),
        }
    }

    /// Rewrites an INTS or FLAT set as the next encoding up: INTS (a non-integer arrived)
    /// becomes FLAT when its members fit one, else PAGES; FLAT becomes PAGES.
    fn convert(&mut self, heap: &mut Heap) -> Result<(), StoreError> {
        let next = {
            let members: Vec<Member<'_>> = match &*self {
                SetObj::Ints(s) => s.iter().map(|v| Member::Int(v as i64)).collect(),
                SetObj::Flat(f) => f.iter().map(|(k, _)| Member::Bytes(k)).collect(),
                SetObj::Pages(_) => return Ok(()),
            };
            if matches!(self, SetObj::Ints(_))
                && let Some(flat) = build_flat(members.iter().copied())
            {
                SetObj::Flat(flat)
            } else {
                SetObj::Pages(Box::new(build_pages(heap, members.iter().copied())?))
            }
        };
        std::mem::replace(self, next).destroy(heap);
        Ok(())
    }

    /// A new boxed set of the distinct `members`: INTS when they are integers an intset can no
    /// longer take (a full one overflowing, or more), else FLAT when they fit one, else PAGES.
    fn build<'m>(
        heap: &mut Heap,
        members: impl Iterator<Item = Member<'m>> + Clone,
    ) -> Result<SetObj, StoreError> {
        let all_ints = members
            .clone()
            .all(|m| matches!(m, Member::Int(_)) || m.as_int().is_some());
        if all_ints && members.clone().count() >= INTSET_ENTRIES_MAX {
            let mut s = IntSet::new(heap)?;
            for m in members {
                if let Err(e) = s.insert(heap, m.as_int().expect("all integers") as u64) {
                    s.destroy(heap);
                    return Err(e.into());
                }
            }
            return Ok(SetObj::Ints(Box::new(s)));
        }
        if let Some(flat) = build_flat(members.clone()) {
            return Ok(SetObj::Flat(flat));
        }
        Ok(SetObj::Pages(Box::new(build_pages(heap, members)?)))
    }
}

/// A FLAT set of the distinct `members`, or `None` when one is too long or they do not fit.
fn build_flat<'m>(members: impl Iterator<Item = Member<'m>> + Clone) -> Option<FlatMap> {
    // A cheap bound first, so a large set is not half built before it is refused: each member
    // needs its bytes, a length byte and >= 3 bytes of slot.
    let mut bytes = 0usize;
    for m in members.clone() {
        let len = match m {
            Member::Int(_) => 20,
            Member::Bytes(b) if b.len() > FLAT_MEMBER_BYTES_MAX => return None,
            Member::Bytes(b) => b.len(),
        };
        bytes += len + 4;
        if bytes > flat::BYTES_MAX {
            return None;
        }
    }
    let mut f = FlatMap::new_set();
    let mut digits = itoa_buf();
    for m in members {
        let text = match m {
            Member::Int(v) => format_i64(&mut digits, v),
            Member::Bytes(b) => b,
        };
        if f.insert(text, b"") == FlatInsert::Full {
            return None;
        }
    }
    Some(f)
}

/// A PAGES set of the distinct `members`.
fn build_pages<'m>(
    heap: &mut Heap,
    members: impl Iterator<Item = Member<'m>>,
) -> Result<PageHash, StoreError> {
    let mut pages = new_pages(heap)?;
    let mut digits = itoa_buf();
    for m in members {
        let text = match m {
            Member::Int(v) => format_i64(&mut digits, v),
            Member::Bytes(b) => b,
        };
        if let Err(e) = pages.insert(heap, text, b"") {
            pages.destroy(heap);
            return Err(e.into());
        }
    }
    Ok(pages)
}

/// Probes per insert for a set's PageHash (the maps default is 16). Set entries are short (4
/// bytes of framing next to the member), so letting an insert look further before its page sheds
/// a bucket fills pages fuller: one set of 1M `m:<i>` members measured 8.3 B of overhead per
/// member at 16 probes, 8.0 at 32, 7.2 at 64. Lookups probe only up to their home piece's spill.
const PAGES_PROBE_COUNT_MAX: u8 = 64;

fn new_pages(heap: &mut Heap) -> Result<PageHash, maps::MapError> {
    PageHash::with_config(
        heap,
        &maps::Config {
            probe_count_max: PAGES_PROBE_COUNT_MAX,
            ..maps::Config::default()
        },
    )
}

/// Decimal formatting without allocation.
fn itoa_buf() -> [u8; 20] {
    [0u8; 20]
}

fn format_i64(buf: &mut [u8; 20], v: i64) -> &[u8] {
    let mut n = v.unsigned_abs();
    let mut at = buf.len();
    // Bounded: at most 20 digits.
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        // i64::MIN has 19 digits, so there is room for the sign.
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

/// A member as stored: an integer of an integer encoding, or bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Member<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

impl Member<'_> {
    /// The member's text, as the client sees it.
    pub fn to_vec(self) -> Vec<u8> {
        match self {
            Member::Int(v) => v.to_string().into_bytes(),
            Member::Bytes(b) => b.to_vec(),
        }
    }

    /// The integer the member's text is the canonical form of.
    pub fn as_int(self) -> Option<i64> {
        match self {
            Member::Int(v) => Some(v),
            Member::Bytes(b) => parse_i64(b),
        }
    }
}

/// What a set operation can fail with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetError {
    /// The key holds another type.
    WrongType,
    OutOfMemory,
}

impl From<StoreError> for SetError {
    fn from(_: StoreError) -> SetError {
        SetError::OutOfMemory
    }
}

impl From<maps::MapError> for SetError {
    fn from(_: maps::MapError) -> SetError {
        SetError::OutOfMemory
    }
}

/// A read-only view of a set, in whichever encoding it is.
#[derive(Clone, Copy, Debug)]
pub enum SetView<'a> {
    Intset(&'a [u8]),
    Small(&'a [u8]),
    Pages(&'a PageHash, &'a Heap),
    Ints(&'a IntSet, &'a Heap),
    Flat(&'a FlatMap),
}

impl<'a> SetView<'a> {
    fn of_obj(set: &'a SetObj, heap: &'a Heap) -> SetView<'a> {
        match set {
            SetObj::Pages(p) => SetView::Pages(p, heap),
            SetObj::Ints(s) => SetView::Ints(s, heap),
            SetObj::Flat(f) => SetView::Flat(f),
        }
    }

    /// The view of an inline set payload.
    pub fn of_inline(t: u8, bytes: &'a [u8]) -> SetView<'a> {
        if t == tag::SET_INTSET {
            SetView::Intset(bytes)
        } else {
            SetView::Small(bytes)
        }
    }

    pub fn len(&self) -> usize {
        match self {
            SetView::Intset(b) => intset::len(b),
            SetView::Small(b) => small::len(b),
            SetView::Pages(p, _) => p.len(),
            SetView::Ints(s, _) => s.len(),
            SetView::Flat(f) => f.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether SSCAN returns the set whole at cursor 0: the inline encodings and FLAT (at most
    /// 32 KiB), as Redis does for its intsets.
    pub fn scans_whole(&self) -> bool {
        matches!(
            self,
            SetView::Intset(_) | SetView::Small(_) | SetView::Flat(_)
        )
    }

    #[inline]
    pub fn contains(&self, m: &[u8]) -> bool {
        match self {
            SetView::Intset(b) => parse_i64(m).is_some_and(|v| intset::contains(b, v)),
            SetView::Small(b) => small::contains(b, m),
            SetView::Pages(p, heap) => p.contains_key(heap, m),
            SetView::Ints(s, _) => parse_i64(m).is_some_and(|v| s.contains(v as u64)),
            SetView::Flat(f) => f.contains(m),
        }
    }

    /// Calls `f` with every member (intsets in ascending order, others in storage order).
    pub fn for_each(&self, mut f: impl FnMut(Member<'_>)) {
        match self {
            SetView::Intset(b) => intset::iter(b).for_each(|v| f(Member::Int(v))),
            SetView::Small(b) => small::members(b).for_each(|m| f(Member::Bytes(m))),
            SetView::Pages(p, heap) => p.iter(heap).for_each(|(k, _)| f(Member::Bytes(k))),
            SetView::Ints(s, _) => s.iter().for_each(|v| f(Member::Int(v as i64))),
            SetView::Flat(m) => m.iter().for_each(|(k, _)| f(Member::Bytes(k))),
        }
    }

    /// A member chosen by the random number `r` (uniform for the inline encodings; for the
    /// boxed ones uniform over pages, then over a page's entries), or `None` when empty.
    pub fn random(&self, r: u64) -> Option<Member<'a>> {
        let len = self.len() as u64;
        if len == 0 {
            return None;
        }
        Some(match *self {
            SetView::Intset(b) => Member::Int(intset::get(b, (r % len) as usize)),
            SetView::Small(b) => Member::Bytes(small::get(b, (r % len) as usize)),
            SetView::Pages(p, heap) => Member::Bytes(p.sample(heap, r)?.0),
            SetView::Ints(s, _) => Member::Int(s.sample(r)? as i64),
            SetView::Flat(f) => Member::Bytes(f.sample(r)?.0),
        })
    }

    /// One SSCAN step from `cursor`: calls `f` for one bucket's members and returns the next
    /// cursor (0 = done). Inline and FLAT sets are visited whole and always return 0 (Redis does
    /// the same for its compact encodings; a FLAT set is <= 32 KiB, so one reply is bounded).
    pub fn scan_step(&self, cursor: u64, mut f: impl FnMut(Member<'_>)) -> u64 {
        match self {
            SetView::Intset(_) | SetView::Small(_) | SetView::Flat(_) => {
                self.for_each(f);
                0
            }
            SetView::Pages(p, heap) => p.scan(heap, cursor, |k, _| f(Member::Bytes(k))),
            SetView::Ints(s, _) => s.scan(cursor, |v| f(Member::Int(v as i64))),
        }
    }

    /// Every member, borrowed from the set.
    pub fn members(&self) -> Vec<Member<'a>> {
        let mut out = Vec::with_capacity(self.len());
        match *self {
            SetView::Intset(b) => out.extend(intset::iter(b).map(Member::Int)),
            SetView::Small(b) => out.extend(small::members(b).map(Member::Bytes)),
            SetView::Pages(p, heap) => out.extend(p.iter(heap).map(|(k, _)| Member::Bytes(k))),
            SetView::Ints(s, _) => out.extend(s.iter().map(|v| Member::Int(v as i64))),
            SetView::Flat(f) => out.extend(f.iter().map(|(k, _)| Member::Bytes(k))),
        }
        out
    }

    /// Every member, owned.
    pub fn to_vec(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::with_capacity(self.len());
        self.for_each(|m| out.push(m.to_vec()));
        out
    }
}

/// Calls `f` with a view of the set at `key`: `Ok(None)` when the key is missing.
pub fn read<R>(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    now_ms: u64,
    f: impl FnOnce(SetView<'_>) -> R,
) -> Result<Option<R>, SetError> {
    shard.with_slot(db, key, now_ms, |slot| match slot {
        Slot::Missing => Ok(None),
        Slot::Inline { tag: t, bytes, .. } if Kind::of_tag(t) == Kind::Set => {
            Ok(Some(f(SetView::of_inline(t, bytes))))
        }
        Slot::Boxed {
            object: Object::Set(set),
            heap,
            ..
        } => Ok(Some(f(SetView::of_obj(set, heap)))),
        _ => Err(SetError::WrongType),
    })
}

/// What `with_slot` found for a write.
enum Found {
    Missing,
    /// An inline set's tag, payload (a copy, or the rewritten one) and TTL.
    Inline(u8, Vec<u8>, Ttl),
    /// Done in place: the result, the new tag if the encoding changed, and whether the set is
    /// now empty (so the key goes).
    Boxed(usize, Option<u8>, bool),
    /// Done: the result, and the payload to store (`None`: the set is now empty).
    Rewrite(usize, Option<(u8, Vec<u8>, Ttl)>),
}

/// Adds `members` to the set at `key` (creating it); returns how many were new.
pub fn add(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    now_ms: u64,
    members: &[&[u8]],
) -> Result<usize, SetError> {
    let found = shard.with_slot(db, key, now_ms, |slot| match slot {
        Slot::Missing => Ok(Found::Missing),
        Slot::Inline {
            tag: t,
            bytes,
            expire_at_ms,
            ..
        } if Kind::of_tag(t) == Kind::Set => {
            Ok(Found::Inline(t, bytes.to_vec(), Ttl::of(expire_at_ms)))
        }
        Slot::Boxed {
            tag: t,
            object: Object::Set(set),
            heap,
            ..
        } => {
            let mut added = 0;
            for m in members {
                added += usize::from(set.insert(heap, m)?);
            }
            let retag = (set.tag() != t).then(|| set.tag());
            Ok(Found::Boxed(added, retag, false))
        }
        _ => Err(SetError::WrongType),
    })?;
    match found {
        Found::Missing => add_inline(shard, db, key, now_ms, 0, Vec::new(), Ttl::Clear, members),
        Found::Inline(t, bytes, ttl) => add_inline(shard, db, key, now_ms, t, bytes, ttl, members),
        Found::Boxed(added, retag, _) => {
            if let Some(t) = retag {
                shard.set_tag(db, key, t);
            }
            Ok(added)
        }
        Found::Rewrite(..) => unreachable!("add rewrites outside the slot"),
    }
}

/// `add` on an inline set (`t == 0`: no set yet), converting to a boxed one when a threshold is
/// crossed.
#[allow(clippy::too_many_arguments)]
fn add_inline(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    now_ms: u64,
    mut t: u8,
    mut cur: Vec<u8>,
    ttl: Ttl,
    members: &[&[u8]],
) -> Result<usize, SetError> {
    let mut out = Vec::with_capacity(cur.len() + 16);
    let mut added = 0;
    for (i, &m) in members.iter().enumerate() {
        match add_one_inline(t, &cur, m, &mut out) {
            Step::Present => continue,
            Step::Added(new_tag) => {
                t = new_tag;
                std::mem::swap(&mut cur, &mut out);
                added += 1;
                continue;
            }
            Step::Overflow => {}
        }
        // A threshold is crossed: the set becomes boxed with everything so far plus the rest.
        let heap = shard.heap_mut();
        let mut set = if t == 0 {
            SetObj::build(heap, std::iter::empty())?
        } else {
            build_from_view(heap, SetView::of_inline(t, &cur))?
        };
        for m in &members[i..] {
            match set.insert(heap, m) {
                Ok(true) => added += 1,
                Ok(false) => {}
                Err(e) => {
                    set.destroy(heap);
                    return Err(e.into());
                }
            }
        }
        let new_tag = set.tag();
        shard.put_object(db, key, new_tag, Object::Set(set), ttl, now_ms)?;
        return Ok(added);
    }
    if added > 0 {
        shard.put(db, key, t, &cur, ttl, now_ms)?;
    }
    Ok(added)
}

/// What adding one member to an inline set did.
enum Step {
    Present,
    /// Added: `out` holds the new payload, with this tag.
    Added(u8),
    /// The set must become boxed.
    Overflow,
}

/// Adds `m` to the inline set `cur` with tag `t` (0: no set yet), writing the new payload to
/// `out`.
fn add_one_inline(t: u8, cur: &[u8], m: &[u8], out: &mut Vec<u8>) -> Step {
    let int = parse_i64(m);
    let fits_small = m.len() <= SMALL_VALUE_MAX_BYTES;
    match (t, int) {
        (0, Some(v)) => {
            intset::build(&[v], out);
            Step::Added(tag::SET_INTSET)
        }
        (0, None) if fits_small => {
            small::append(&[], m, out);
            Step::Added(tag::SET_SMALL)
        }
        (tag::SET_INTSET, Some(v)) => match intset::find(cur, v) {
            Ok(_) => Step::Present,
            Err(_) if intset::len(cur) >= INTSET_ENTRIES_MAX => Step::Overflow,
            Err(at) => {
                intset::insert(cur, at, v, out);
                Step::Added(tag::SET_INTSET)
            }
        },
        (tag::SET_INTSET, None) if fits_small && intset::len(cur) < SMALL_ENTRIES_MAX => {
            let texts: Vec<Vec<u8>> = intset::iter(cur)
                .map(|v| v.to_string().into_bytes())
                .collect();
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

/// A boxed set holding the members of an inline view.
fn build_from_view(heap: &mut Heap, view: SetView<'_>) -> Result<SetObj, StoreError> {
    match view {
        SetView::Intset(b) => SetObj::build(heap, intset::iter(b).map(Member::Int)),
        SetView::Small(b) => SetObj::build(heap, small::members(b).map(Member::Bytes)),
        SetView::Pages(..) | SetView::Ints(..) | SetView::Flat(_) => {
            unreachable!("only inline sets are rebuilt")
        }
    }
}

/// Removes `members` from the set at `key`; returns how many were there. The key goes when the
/// set empties.
pub fn remove(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    now_ms: u64,
    members: &[&[u8]],
) -> Result<usize, SetError> {
    let found = shard.with_slot(db, key, now_ms, |slot| match slot {
        Slot::Missing => Ok(Found::Missing),
        Slot::Inline {
            tag: t,
            bytes,
            expire_at_ms,
            ..
        } if Kind::of_tag(t) == Kind::Set => {
            Ok(remove_inline(t, bytes, Ttl::of(expire_at_ms), members))
        }
        Slot::Boxed {
            object: Object::Set(set),
            heap,
            ..
        } => {
            let removed = members.iter().filter(|m| set.remove(heap, m)).count();
            Ok(Found::Boxed(removed, None, set.is_empty()))
        }
        _ => Err(SetError::WrongType),
    })?;
    finish(shard, db, key, now_ms, found)
}

/// Applies what a slot closure decided: store a rewritten payload, delete an emptied set.
fn finish(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    now_ms: u64,
    found: Found,
) -> Result<usize, SetError> {
    match found {
        Found::Missing => Ok(0),
        Found::Inline(..) => unreachable!("inline sets are rewritten in the slot"),
        Found::Boxed(n, retag, empty) => {
            if empty {
                shard.remove(db, key, now_ms);
            } else if let Some(t) = retag {
                shard.set_tag(db, key, t);
            }
            Ok(n)
        }
        Found::Rewrite(n, payload) => {
            match payload {
                None => {
                    shard.remove(db, key, now_ms);
                }
                Some((t, bytes, ttl)) => shard.put(db, key, t, &bytes, ttl, now_ms)?,
            }
            Ok(n)
        }
    }
}

fn remove_inline(t: u8, bytes: &[u8], ttl: Ttl, members: &[&[u8]]) -> Found {
    let mut cur = bytes.to_vec();
    let mut out = Vec::with_capacity(cur.len());
    let mut removed = 0;
    for m in members {
        if t == tag::SET_INTSET {
            let Some(at) = parse_i64(m).and_then(|v| intset::find(&cur, v).ok()) else {
                continue;
            };
            intset::remove(&cur, at, &mut out);
        } else {
            let Some((i, at)) = small::find(&cur, m) else {
                continue;
            };
            if small::len(&cur) == 1 {
                return Found::Rewrite(removed + 1, None);
            }
            small::remove(&cur, i, at, &mut out);
        }
        std::mem::swap(&mut cur, &mut out);
        removed += 1;
        if t == tag::SET_INTSET && intset::len(&cur) == 0 {
            return Found::Rewrite(removed, None);
        }
    }
    if removed == 0 {
        return Found::Missing;
    }
    Found::Rewrite(removed, Some((t, cur, ttl)))
}

/// Removes up to `count` random members from the set at `key`, calling `f` with each (before it
/// is removed, so it can be replied from the stored bytes); returns how many. `random` supplies
/// the random numbers. O(count) for boxed sets, O(size) for inline ones, never quadratic.
pub fn pop(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    now_ms: u64,
    count: usize,
    random: &mut dyn FnMut() -> u64,
    mut f: impl FnMut(Member<'_>),
) -> Result<usize, SetError> {
    let found = shard.with_slot(db, key, now_ms, |slot| match slot {
        Slot::Missing => Ok(Found::Missing),
        Slot::Inline {
            tag: t,
            bytes,
            expire_at_ms,
            ..
        } if Kind::of_tag(t) == Kind::Set => Ok(pop_inline(
            t,
            bytes,
            Ttl::of(expire_at_ms),
            count,
            random,
            &mut f,
        )),
        Slot::Boxed {
            object: Object::Set(set),
            heap,
            ..
        } => {
            let len = set.len();
            if count >= len {
                SetView::of_obj(set, heap).for_each(&mut f);
                return Ok(Found::Boxed(len, None, true));
            }
            let mut scratch: Vec<u8> = Vec::new();
            for _ in 0..count {
                let r = random();
                match set {
                    SetObj::Pages(p) => {
                        let (m, _) = p.sample(heap, r).expect("count < len: not empty");
                        f(Member::Bytes(m));
                        scratch.clear();
                        scratch.extend_from_slice(m);
                        p.remove(heap, &scratch);
                    }
                    SetObj::Ints(s) => {
                        let v = s.sample(r).expect("count < len: not empty");
                        f(Member::Int(v as i64));
                        s.remove(heap, v);
                    }
                    SetObj::Flat(flat) => {
                        let (m, _) = flat.sample(r).expect("count < len: not empty");
                        f(Member::Bytes(m));
                        scratch.clear();
                        scratch.extend_from_slice(m);
                        flat.remove(&scratch);
                    }
                }
            }
            Ok(Found::Boxed(count, None, false))
        }
        _ => Err(SetError::WrongType),
    })?;
    finish(shard, db, key, now_ms, found)
}

fn pop_inline(
    t: u8,
    bytes: &[u8],
    ttl: Ttl,
    count: usize,
    random: &mut dyn FnMut() -> u64,
    f: &mut impl FnMut(Member<'_>),
) -> Found {
    let view = SetView::of_inline(t, bytes);
    let len = view.len();
    if count >= len {
        view.for_each(f);
        return Found::Rewrite(len, None);
    }
    // A partial Fisher-Yates shuffle picks `count` distinct positions uniformly.
    let mut order: Vec<u16> = (0..len as u16).collect();
    for i in 0..count {
        let j = i + (random() % (len - i) as u64) as usize;
        order.swap(i, j);
    }
    let mut out = Vec::with_capacity(bytes.len());
    if t == tag::SET_INTSET {
        for &i in &order[..count] {
            f(Member::Int(intset::get(bytes, i as usize)));
        }
        let mut rest: Vec<i64> = order[count..]
            .iter()
            .map(|&i| intset::get(bytes, i as usize))
            .collect();
        rest.sort_unstable();
        intset::build(&rest, &mut out);
    } else {
        let all: Vec<&[u8]> = small::members(bytes).collect();
        for &i in &order[..count] {
            f(Member::Bytes(all[i as usize]));
        }
        small::build(order[count..].iter().map(|&i| all[i as usize]), &mut out);
    }
    Found::Rewrite(count, Some((t, out, ttl)))
}

/// Stores the distinct `members` under `key` as a new set (replacing whatever was there) in the
/// encoding a set with these members would have; an empty list deletes the key.
pub fn store(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    members: &[Vec<u8>],
    ttl: Ttl,
    now_ms: u64,
) -> Result<(), StoreError> {
    if members.is_empty() {
        shard.remove(db, key, now_ms);
        return Ok(());
    }
    let mut out = Vec::new();
    if members.len() <= INTSET_ENTRIES_MAX
        && let Some(mut ints) = members
            .iter()
            .map(|m| parse_i64(m))
            .collect::<Option<Vec<i64>>>()
    {
        ints.sort_unstable();
        intset::build(&ints, &mut out);
        return shard.put(db, key, tag::SET_INTSET, &out, ttl, now_ms);
    }
    if members.len() <= SMALL_ENTRIES_MAX
        && members.iter().all(|m| m.len() <= SMALL_VALUE_MAX_BYTES)
    {
        small::build(members.iter().map(Vec::as_slice), &mut out);
        return shard.put(db, key, tag::SET_SMALL, &out, ttl, now_ms);
    }
    let set = SetObj::build(shard.heap_mut(), members.iter().map(|m| Member::Bytes(m)))?;
    let t = set.tag();
    shard.put_object(db, key, t, Object::Set(set), ttl, now_ms)
}

/// Stores an imported set (RENAME/COPY across shards).
#[allow(
    clippy::needless_pass_by_value,
    reason = "the signature is the one every type's import shares (types/mod.rs)"
)]
pub fn import(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    value: Vec<Vec<u8>>,
    ttl: Ttl,
    now_ms: u64,
) -> Result<(), StoreError> {
    store(shard, db, key, &value, ttl, now_ms)
}

/// The members of an inline set payload.
pub fn export_inline(t: u8, bytes: &[u8]) -> Vec<Vec<u8>> {
    SetView::of_inline(t, bytes).to_vec()
}

/// Checks the invariants of the set at `key` (tests): layout, and the tag matching the
/// encoding's content rules.
pub fn validate(shard: &mut Shard, db: usize, key: &[u8], now_ms: u64) -> Result<(), String> {
    shard.with_slot(db, key, now_ms, |slot| match slot {
        Slot::Missing => Ok(()),
        Slot::Inline { tag: t, bytes, .. } if t == tag::SET_INTSET => {
            intset::validate(bytes)?;
            if intset::len(bytes) > INTSET_ENTRIES_MAX {
                return Err("intset too long".into());
            }
            Ok(())
        }
        Slot::Inline { tag: t, bytes, .. } if t == tag::SET_SMALL => {
            small::validate(bytes)?;
            if small::len(bytes) > SMALL_ENTRIES_MAX
                || small::members(bytes).any(|m| m.len() > SMALL_VALUE_MAX_BYTES)
            {
                return Err("small set past its bounds".into());
            }
            Ok(())
        }
        Slot::Boxed {
            tag: t,
            object: Object::Set(set),
            heap,
            ..
        } => {
            if set.tag() != t {
                return Err(format!("tag {t} for a {} set", set.tag()));
            }
            if set.is_empty() {
                return Err("empty set stored".into());
            }
            match set {
                SetObj::Pages(p) => p.validate(heap),
                SetObj::Ints(s) => s.validate(heap),
                SetObj::Flat(f) => {
                    if f.iter().any(|(m, _)| m.len() > FLAT_MEMBER_BYTES_MAX) {
                        return Err("flat set member past its bound".into());
                    }
                    f.validate()
                }
            }
        }
        _ => Err("not a set".into()),
    })
}
