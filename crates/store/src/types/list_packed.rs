//! The packed list encoding (`ListPacked`, inline in the keyspace entry, OBJECT ENCODING
//! "quicklist" as every Redis 7.0 list): a list of at most `bound` bytes of entries, one run of
//! `list_codec` front entries, rewritten whole on every change as Redis's listpack is.
//!
//! ```text
//!  +-----------+----------+----------+-----------------------------------------+-------------+
//!  | count u16 | level u8 | used u16 | entry* head → tail (used bytes)         | room: zeros |
//!  +-----------+----------+----------+-----------------------------------------+-------------+
//!  entry = [ len: LEB128 varint | bytes ]                 (a 10-byte element takes 11 bytes)
//!  level = log2 of the chunk bound the list was created under (Redis's fill: 12 … 16 for
//!          list-max-listpack-size -1 … -5), kept so that the chunks it becomes are that size
//!  bound = min(2^level / 2, PACKED_MAX_BYTES)           (4 KiB at the default 8 KiB chunks)
//!  payload length = a heap size class (`Heap::usable_size`), ≥ HEADER_BYTES + used
//! ```
//! Why packed: a boxed list pays for its `Object` box (64 bytes resident through malloc), its
//! chunk deque and its `Chunk`; for a list of 100 short elements that is over 1 B per element.
//!
//! Why room: the payload is stored out of line at its exact length, so a length that is a size
//! class wastes nothing, and the room grows as a chunk's buffer does (`list.rs`,
//! `grown_capacity`): by an eighth, rounded up to a class. Growing by exactly what each push
//! needs would walk every list through every class; lists that grow side by side (10,000 lists
//! pushed in turn) then leave the classes that their final lengths straddle full of the holes
//! of the lists that moved on: measured, 28 % of the heap's slabs empty, against 2.5 % with
//! growth by an eighth, which skips classes and so passes the final lengths through fewer of
//! them. A payload less than a quarter used shrinks to twice its use (hysteresis).
//!
//! Invariants (checked by `validate`): `count` entries fill `used` bytes exactly and the room
//! after them is zeros; `12 <= level <= 16`; the payload's length is `Heap::usable_size` of
//! itself; `1 <= count` in a stored list; `used <= bound` always: every edit that adds bytes
//! asks `fits` first and converts the list into chunks when it would pass the bound
//! (`Edit::fit`), and nothing converts chunks back. So `count <= used <= 4 KiB` (every entry
//! takes a byte) fit their 16 bits.
//!
//! Cost: every change copies the payload out and back (`edit.rs`), at most `bound` bytes and
//! its room; element access walks the entries from the head, as a listpack's does.

use super::list_codec::{encode_front, entry_size, read_forward};
use heap::Heap;

/// Bytes of the header: the count, the level and the bytes of entries.
pub const HEADER_BYTES: usize = 5;
/// Most bytes of entries a packed list holds, whatever its chunk bound: each change copies the
/// payload twice, so the bound is what one push may cost.
pub const PACKED_MAX_BYTES: usize = 4096;
/// Levels of the chunk bounds lists are created with (4 KiB … 64 KiB; `limits.rs`).
const LEVELS: std::ops::RangeInclusive<u8> = 12..=16;

/// An empty packed list whose chunks will hold at most `chunk_bytes` (rounded to a power of two
/// within 4 … 64 KiB, Redis's node sizes).
pub fn empty(chunk_bytes: usize) -> Vec<u8> {
    let level = chunk_bytes.next_power_of_two().trailing_zeros() as u8;
    let mut bytes = vec![0; <Heap>::usable_size(HEADER_BYTES)];
    bytes[2] = level.clamp(*LEVELS.start(), *LEVELS.end());
    bytes
}

pub fn count(bytes: &[u8]) -> usize {
    usize::from(u16::from_le_bytes([bytes[0], bytes[1]]))
}

fn set_count(bytes: &mut [u8], n: usize) {
    let n = u16::try_from(n).expect("a packed list holds fewer than 2^16 entries");
    bytes[..2].copy_from_slice(&n.to_le_bytes());
}

/// Bytes of entries.
fn used(bytes: &[u8]) -> usize {
    usize::from(u16::from_le_bytes([bytes[3], bytes[4]]))
}

/// Where the entries end.
fn end(bytes: &[u8]) -> usize {
    HEADER_BYTES + used(bytes)
}

fn set_end(bytes: &mut [u8], end: usize) {
    let used = u16::try_from(end - HEADER_BYTES).expect("a packed list holds under 64 KiB");
    bytes[3..5].copy_from_slice(&used.to_le_bytes());
}

/// The chunk bound the list was created under.
pub fn chunk_bytes(bytes: &[u8]) -> usize {
    1 << bytes[2]
}

/// Most bytes of entries the list may hold packed.
pub fn bound(bytes: &[u8]) -> usize {
    (chunk_bytes(bytes) / 2).min(PACKED_MAX_BYTES)
}

/// The entries, header and room excluded.
pub fn entries(bytes: &[u8]) -> &[u8] {
    &bytes[HEADER_BYTES..end(bytes)]
}

/// Whether the list holds more than it may stay packed with.
pub fn over_bound(bytes: &[u8]) -> bool {
    used(bytes) > bound(bytes)
}

/// Whether the list stays within its bound after gaining an entry of `add` bytes and losing
/// `sub` bytes of entries.
pub fn fits(bytes: &[u8], add: usize, sub: usize) -> bool {
    (used(bytes) - sub).saturating_add(add) <= bound(bytes)
}

/// The elements from the head.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    /// The payload up to the end of its entries.
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.at >= self.bytes.len() {
            return None;
        }
        let (v, n, end) = read_forward(self.bytes, self.at);
        self.at = end;
        Some(&self.bytes[v..v + n])
    }
}

/// The elements from `index` towards the tail.
pub fn iter_from(bytes: &[u8], index: usize) -> Iter<'_> {
    Iter {
        bytes: &bytes[..end(bytes)],
        at: offset_of(bytes, index),
    }
}

/// Byte offset of entry `index`; the end of the entries when `index >= count`.
fn offset_of(bytes: &[u8], index: usize) -> usize {
    let (mut at, end) = (HEADER_BYTES, end(bytes));
    for _ in 0..index {
        if at >= end {
            break;
        }
        at = read_forward(bytes, at).2;
    }
    at
}

/// Element `index`, if any.
pub fn get(bytes: &[u8], index: usize) -> Option<&[u8]> {
    iter_from(bytes, index).next()
}

/// The last element, if any.
pub fn last(bytes: &[u8]) -> Option<&[u8]> {
    let n = count(bytes);
    if n == 0 { None } else { get(bytes, n - 1) }
}

/// Start offsets of entries `0..=index` (`index < count`), in order: what a walk towards the
/// head reads back (`ListView::rev_from`).
pub fn starts_through(bytes: &[u8], index: usize) -> Vec<u32> {
    let mut starts = Vec::with_capacity(index + 1);
    let mut at = HEADER_BYTES;
    for _ in 0..=index {
        starts.push(at as u32);
        at = read_forward(bytes, at).2;
    }
    starts
}

/// The value of the entry starting at `at`.
pub fn value_at(bytes: &[u8], at: usize) -> &[u8] {
    let (v, n, _) = read_forward(bytes, at);
    &bytes[v..v + n]
}

/// Gives the payload room for `extra` more bytes of entries: an eighth more, rounded up to a
/// size class, when it has too little (see the module doc).
fn make_room(bytes: &mut Vec<u8>, extra: usize) {
    let need = end(bytes) + extra;
    if need > bytes.len() {
        let len = <Heap>::usable_size(need.max(bytes.len() + bytes.len() / 8));
        bytes.resize(len, 0);
    }
}

/// Shrinks a payload less than a quarter used to twice its use (a size class).
fn give_back_room(bytes: &mut Vec<u8>) {
    let end = end(bytes);
    if end < bytes.len() / 4 {
        bytes.truncate(<Heap>::usable_size(2 * end).min(bytes.len()));
    }
}

/// Replaces the entry bytes `from..to` by the entry of `value`, growing the room if need be.
fn splice_entry(bytes: &mut Vec<u8>, (from, to): (usize, usize), value: &[u8]) {
    let (s, old) = (entry_size(value.len()), to - from);
    if s > old {
        make_room(bytes, s - old);
    }
    write_entry(bytes, (from, to), value);
}

/// Replaces the entry bytes `from..to` by the entry of `value`, in a payload with the room.
fn write_entry(bytes: &mut [u8], (from, to): (usize, usize), value: &[u8]) {
    let (s, old, end) = (entry_size(value.len()), to - from, end(bytes));
    bytes.copy_within(to..end, from + s);
    let new_end = end + s - old;
    if new_end < end {
        bytes[new_end..end].fill(0);
    }
    set_end(bytes, new_end);
    encode_front(&mut bytes[from..from + s], value);
}

/// Removes the entry bytes `from..to`, then gives back room as `give_back_room` says.
fn cut(bytes: &mut Vec<u8>, (from, to): (usize, usize)) {
    remove_bytes(bytes, (from, to));
    give_back_room(bytes);
}

/// Removes the entry bytes `from..to`, zeroing what they leave free.
fn remove_bytes(bytes: &mut [u8], (from, to): (usize, usize)) {
    let end = end(bytes);
    bytes.copy_within(to..end, from);
    let new_end = end - (to - from);
    bytes[new_end..end].fill(0);
    set_end(bytes, new_end);
}

/// Pushes `values` one by one at the head (`left`) or the tail of a payload edited where it is
/// stored, when its room takes them all within the bound; false (nothing done) otherwise.
pub fn push_in_place(bytes: &mut [u8], left: bool, values: &[&[u8]]) -> bool {
    let total: usize = values.iter().map(|v| entry_size(v.len())).sum();
    if end(bytes) + total > bytes.len() || !fits(bytes, total, 0) {
        return false;
    }
    for v in values {
        let at = if left { HEADER_BYTES } else { end(bytes) };
        write_entry(bytes, (at, at), v);
    }
    add_count(bytes, values.len());
    true
}

/// Pops the element at the head (`left`) or the tail of a payload edited where it is stored,
/// after `f` has read it, when the list keeps an element and the payload its size (`cut` would
/// not shrink it); `None` (nothing done, `f` not called) otherwise.
pub fn pop_in_place<R>(bytes: &mut [u8], left: bool, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
    let n = count(bytes);
    if n < 2 {
        return None;
    }
    let from = offset_of(bytes, if left { 0 } else { n - 1 });
    let to = read_forward(bytes, from).2;
    if end(bytes) - (to - from) < bytes.len() / 4 {
        return None;
    }
    let out = f(value_at(bytes, from));
    remove_bytes(bytes, (from, to));
    set_count(bytes, n - 1);
    Some(out)
}

fn add_count(bytes: &mut [u8], added: usize) {
    let n = count(bytes) + added;
    set_count(bytes, n);
}

/// Appends `value` at the tail.
pub fn push_back(bytes: &mut Vec<u8>, value: &[u8]) {
    let end = end(bytes);
    splice_entry(bytes, (end, end), value);
    add_count(bytes, 1);
}

/// Prepends `value` at the head.
pub fn push_front(bytes: &mut Vec<u8>, value: &[u8]) {
    splice_entry(bytes, (HEADER_BYTES, HEADER_BYTES), value);
    add_count(bytes, 1);
}

/// Removes the element at the `left` end if true, else the right one; false when empty.
pub fn pop_end(bytes: &mut Vec<u8>, left: bool) -> bool {
    let n = count(bytes);
    if n == 0 {
        return false;
    }
    let index = if left { 0 } else { n - 1 };
    remove_range(bytes, index, 1);
    true
}

/// Replaces element `index`; false when out of range.
pub fn set(bytes: &mut Vec<u8>, index: usize, value: &[u8]) -> bool {
    if index >= count(bytes) {
        return false;
    }
    let from = offset_of(bytes, index);
    let to = read_forward(bytes, from).2;
    splice_entry(bytes, (from, to), value);
    true
}

/// Inserts `value` so that it becomes element `index` (`index <= count`).
pub fn insert(bytes: &mut Vec<u8>, index: usize, value: &[u8]) {
    debug_assert!(index <= count(bytes));
    let at = offset_of(bytes, index);
    splice_entry(bytes, (at, at), value);
    add_count(bytes, 1);
}

/// Removes `n` elements starting at `start` (clamped to the list).
pub fn remove_range(bytes: &mut Vec<u8>, start: usize, n: usize) {
    let len = count(bytes);
    let start = start.min(len);
    let n = n.min(len - start);
    let from = offset_of(bytes, start);
    let mut to = from;
    for _ in 0..n {
        to = read_forward(bytes, to).2;
    }
    cut(bytes, (from, to));
    set_count(bytes, len - n);
}

/// Keeps elements `start..=end` only (`end < count`); `None` empties the list.
pub fn trim(bytes: &mut Vec<u8>, keep: Option<(usize, usize)>) {
    match keep {
        None => remove_range(bytes, 0, count(bytes)),
        Some((start, end)) => {
            remove_range(bytes, end + 1, count(bytes));
            remove_range(bytes, 0, start);
        }
    }
}

/// Removes up to `limit` elements equal to `value` (0: all), the first ones from the tail when
/// `from_tail`; returns how many went.
pub fn remove_matching(bytes: &mut Vec<u8>, value: &[u8], limit: usize, from_tail: bool) -> usize {
    let matches = iter_from(bytes, 0).filter(|v| *v == value).count();
    let removed = if limit == 0 {
        matches
    } else {
        matches.min(limit)
    };
    // Matches `first..first + removed` (in list order) go; one pass moves the rest down.
    let first = if from_tail { matches - removed } else { 0 };
    let (mut k, mut write, end) = (0, HEADER_BYTES, end(bytes));
    let mut read = HEADER_BYTES;
    while read < end {
        let (v, n, next) = read_forward(bytes, read);
        let matched = bytes[v..v + n] == *value;
        if !(matched && (first..first + removed).contains(&k)) {
            bytes.copy_within(read..next, write);
            write += next - read;
        }
        k += usize::from(matched);
        read = next;
    }
    bytes[write..end].fill(0);
    set_end(bytes, write);
    let n = count(bytes) - removed;
    set_count(bytes, n);
    give_back_room(bytes);
    removed
}

/// Checks the encoding's invariants of a stored payload (see the module doc).
pub fn validate(bytes: &[u8]) -> Result<(), String> {
    if bytes.len() < HEADER_BYTES || !LEVELS.contains(&bytes[2]) || end(bytes) > bytes.len() {
        let n = bytes.len().min(HEADER_BYTES);
        return Err(format!(
            "packed list header {:?} of {}",
            &bytes[..n],
            bytes.len()
        ));
    }
    let (mut at, mut n, end) = (HEADER_BYTES, 0, end(bytes));
    while at < end {
        let (_, len, next) = read_forward(bytes, at);
        if next > end || entry_size(len) != next - at {
            return Err(format!("packed list entry at {at} runs to {next} of {end}"));
        }
        (at, n) = (next, n + 1);
    }
    if n != count(bytes) || n == 0 {
        return Err(format!("packed list: {n} entries, count {}", count(bytes)));
    }
    if bytes[end..].iter().any(|&b| b != 0) || bytes.len() != <Heap>::usable_size(bytes.len()) {
        return Err(format!(
            "packed list room {end}..{} not zeros in a class",
            bytes.len()
        ));
    }
    if over_bound(bytes) {
        return Err(format!(
            "packed list of {} bytes of entries, bound {}",
            used(bytes),
            bound(bytes)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::collections::VecDeque;

    /// An element: one of a few lengths that cross the one-byte varint, of one of three bytes.
    fn value(rng: &mut SmallRng) -> Vec<u8> {
        let len = [0, 1, 5, 12, 127, 128, 300][rng.gen_range(0..7)];
        vec![b'a' + rng.gen_range(0..3u8); len]
    }

    fn check(bytes: &[u8], model: &VecDeque<Vec<u8>>) {
        assert_eq!(count(bytes), model.len());
        let ours: Vec<&[u8]> = iter_from(bytes, 0).collect();
        assert!(ours.iter().eq(model.iter()), "{ours:?} != {model:?}");
        if !model.is_empty() {
            let mid = model.len() / 2;
            assert_eq!(get(bytes, mid), Some(&model[mid][..]));
            assert_eq!(last(bytes), model.back().map(|v| &v[..]));
            let back: Vec<&[u8]> = starts_through(bytes, mid)
                .iter()
                .rev()
                .map(|&s| value_at(bytes, s as usize))
                .collect();
            assert!(back.iter().eq(model.range(..=mid).rev()));
            validate(bytes).unwrap();
        }
    }

    /// What REM removes from `model`: up to `limit` (0: all) copies of `v`, from the tail when
    /// `from_tail`; returns how many.
    fn remove_in_model(
        model: &mut VecDeque<Vec<u8>>,
        v: &[u8],
        limit: usize,
        from_tail: bool,
    ) -> usize {
        let limit = if limit == 0 { usize::MAX } else { limit };
        let mut hits: Vec<usize> = (0..model.len()).filter(|&i| model[i] == v).collect();
        if from_tail {
            hits.reverse();
        }
        hits.truncate(limit);
        hits.sort_unstable();
        for &i in hits.iter().rev() {
            model.remove(i);
        }
        hits.len()
    }

    /// One random edit, to the payload and the model alike.
    fn random_edit(rng: &mut SmallRng, bytes: &mut Vec<u8>, model: &mut VecDeque<Vec<u8>>) {
        let len = model.len();
        match rng.gen_range(0..13) {
            0..=4 => {
                let v = value(rng);
                push_back(bytes, &v);
                model.push_back(v);
            }
            5 | 6 => {
                let v = value(rng);
                push_front(bytes, &v);
                model.push_front(v);
            }
            7 => {
                let left = rng.gen_range(0..2) == 0;
                assert_eq!(pop_end(bytes, left), len > 0);
                let _ = if left {
                    model.pop_front()
                } else {
                    model.pop_back()
                };
            }
            8 => {
                let (i, v) = (rng.gen_range(0..len + 2), value(rng));
                assert_eq!(set(bytes, i, &v), i < len);
                if i < len {
                    model[i] = v;
                }
            }
            9 => {
                let (i, v) = (rng.gen_range(0..len + 1), value(rng));
                insert(bytes, i, &v);
                model.insert(i, v);
            }
            10 => {
                let (start, n) = (rng.gen_range(0..len + 2), rng.gen_range(0..4));
                remove_range(bytes, start, n);
                let start = start.min(len);
                model.drain(start..(start + n).min(len));
            }
            11 if len > 0 => {
                let start = rng.gen_range(0..len);
                let end = start + rng.gen_range(0..len - start);
                trim(bytes, Some((start, end)));
                *model = model.range(start..=end).cloned().collect();
            }
            _ => {
                let v = value(rng);
                let (limit, from_tail) = (rng.gen_range(0..3), rng.gen_range(0..2) == 0);
                let removed = remove_matching(bytes, &v, limit, from_tail);
                assert_eq!(removed, remove_in_model(model, &v, limit, from_tail));
            }
        }
    }

    #[test]
    fn edits_match_a_deque_model() {
        let mut rng = SmallRng::seed_from_u64(0x9E37_79B9_7F4A_7C15);
        let (mut bytes, mut model) = (empty(4096), VecDeque::new());
        let mut resets = 0;
        for step in 0..20_000 {
            random_edit(&mut rng, &mut bytes, &mut model);
            if over_bound(&bytes) {
                // Past the bound the edit converts the list; start again, and check that
                // emptying hands the room back.
                trim(&mut bytes, None);
                model.clear();
                assert_eq!(
                    bytes.len(),
                    <Heap>::usable_size(2 * HEADER_BYTES),
                    "step {step}"
                );
                resets += 1;
            }
            check(&bytes, &model);
        }
        assert!(resets >= 10, "the bound was reached {resets} times");
    }

    /// Pushes `values` in place and by copying; true when in place took them. Where it did not,
    /// the in-place payload becomes the copy (as the store then takes the copying path).
    fn push_both(
        in_place: &mut Vec<u8>,
        copied: &mut Vec<u8>,
        left: bool,
        values: &[&[u8]],
    ) -> bool {
        let total: usize = values.iter().map(|v| entry_size(v.len())).sum();
        let room = end(in_place) + total <= in_place.len() && fits(in_place, total, 0);
        assert_eq!(push_in_place(in_place, left, values), room);
        for v in values {
            if left {
                push_front(copied, v);
            } else {
                push_back(copied, v);
            }
        }
        if !room {
            *in_place = copied.clone();
        }
        room
    }

    /// Pops in place and by copying; true when in place did. It may decline only a pop that
    /// empties the list or shrinks the payload.
    fn pop_both(in_place: &mut Vec<u8>, copied: &mut Vec<u8>, left: bool) -> bool {
        let want = if left { get(copied, 0) } else { last(copied) }.map(<[u8]>::to_vec);
        let n = count(in_place);
        let done = pop_in_place(in_place, left, <[u8]>::to_vec);
        pop_end(copied, left);
        if let Some(v) = &done {
            assert_eq!(Some(v), want.as_ref());
        } else {
            assert!(
                n < 2 || copied.len() < in_place.len(),
                "declined a plain pop"
            );
            *in_place = copied.clone();
        }
        done.is_some()
    }

    #[test]
    fn in_place_edits_match_the_copying_ones() {
        let mut rng = SmallRng::seed_from_u64(0xD1B5_4A32_D192_ED03);
        let (mut copied, mut in_place) = (empty(8192), empty(8192));
        let (mut pushed, mut popped) = (0, 0);
        for _ in 0..20_000 {
            let left = rng.gen_range(0..2) == 0;
            if rng.gen_range(0..3) > 0 {
                let values: Vec<Vec<u8>> =
                    (0..=rng.gen_range(0..3)).map(|_| value(&mut rng)).collect();
                let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
                pushed += usize::from(push_both(&mut in_place, &mut copied, left, &refs));
            } else {
                popped += usize::from(pop_both(&mut in_place, &mut copied, left));
            }
            // Same bytes, room included: in place does what copying does, or nothing.
            assert_eq!(in_place, copied);
            if over_bound(&copied) {
                trim(&mut copied, None);
                in_place = copied.clone();
            }
        }
        assert!(
            pushed > 1000 && popped > 1000,
            "{pushed} pushes, {popped} pops in place"
        );
    }

    #[test]
    fn bounds_follow_the_chunk_size() {
        assert_eq!(bound(&empty(8192)), 4096);
        assert_eq!(bound(&empty(4096)), 2048);
        assert_eq!(bound(&empty(65536)), PACKED_MAX_BYTES);
        assert_eq!(chunk_bytes(&empty(5000)), 8192);
        assert_eq!(chunk_bytes(&empty(64)), 4096);
        let mut bytes = empty(4096);
        while !over_bound(&bytes) {
            push_back(&mut bytes, b"0123456789");
        }
        assert_eq!(count(&bytes), 2048 / 11 + 1);
        assert!(validate(&bytes).is_err());
    }

    #[test]
    fn validate_rejects_broken_payloads() {
        let mut bytes = empty(8192);
        assert!(validate(&bytes).is_err(), "empty");
        push_back(&mut bytes, b"abc");
        validate(&bytes).unwrap();
        let mut wrong_count = bytes.clone();
        wrong_count[0] = 2;
        assert!(validate(&wrong_count).is_err());
        let mut room = bytes.clone();
        *room.last_mut().unwrap() = 1;
        assert!(validate(&room).is_err());
        let mut short = bytes.clone();
        short[3] += 1;
        assert!(validate(&short).is_err());
        let mut level = bytes.clone();
        level[2] = 3;
        assert!(validate(&level).is_err());
    }
}
