//! The packed sorted-set encoding (`ZSetPacked`, inline in the keyspace entry, "listpack"):
//! within the shard's `zset-max-listpack-*` limits (by default 128 members of at most 64 bytes;
//! never more than 65,535), in (score, member) order, rewritten whole on every change as Redis's
//! listpack is.
//!
//! ```text
//!  +-----------+-------------------------------------------------------------+
//!  | count u16 | entry*  in (score, member) order                            |
//!  +-----------+-------------------------------------------------------------+
//!  entry = [form: 1 B][score][member len varint][member bytes]
//!          form 0: score is an f64, 8 bytes LE
//!          form 1: score is an integer |i| <= 2^62 (-0 is stored as 0, as Redis's
//!                  listpack does), zigzag varint
//! ```
//! Invariant: `count` == entries, entries strictly increasing by (score, member).

use crate::types::zset_tree::cmp_key;
use maps::varint;
use std::cmp::Ordering;

const HEADER_BYTES: usize = 2;
/// `double2ll`'s range: |score| <= LLONG_MAX / 2.
const INT_LIMIT: f64 = (i64::MAX / 2) as f64;

/// An empty packed zset.
pub fn empty() -> Vec<u8> {
    vec![0, 0]
}

pub fn count(bytes: &[u8]) -> usize {
    usize::from(u16::from_le_bytes([bytes[0], bytes[1]]))
}

fn set_count(bytes: &mut [u8], n: usize) {
    let n = u16::try_from(n).expect("packed zsets are small");
    bytes[..2].copy_from_slice(&n.to_le_bytes());
}

/// Appends an entry (the caller keeps the order).
#[allow(clippy::float_cmp)] // exactly integral is the point
pub fn put_entry(out: &mut Vec<u8>, score: f64, member: &[u8]) {
    // Redis's listpack stores a score that `double2ll` takes as an integer (so -0 as 0).
    if score == score.trunc() && score.abs() <= INT_LIMIT {
        out.push(1);
        let i = score as i64;
        varint::push(out, varint::zigzag(i));
    } else {
        out.push(0);
        out.extend_from_slice(&score.to_le_bytes());
    }
    varint::push(out, member.len() as u64);
    out.extend_from_slice(member);
}

/// Decodes the entry at `off`: (score, member, offset of the next entry).
#[inline]
pub fn entry_at(bytes: &[u8], off: usize) -> (f64, &[u8], usize) {
    let (score, mut at) = if bytes[off] == 1 {
        let (z, n) = varint::get(&bytes[off + 1..]);
        let i = varint::unzigzag(z);
        (i as f64, off + 1 + n)
    } else {
        let s = f64::from_le_bytes(bytes[off + 1..off + 9].try_into().expect("8 bytes"));
        (s, off + 9)
    };
    let (len, n) = varint::get(&bytes[at..]);
    at += n;
    let end = at + len as usize;
    (score, &bytes[at..end], end)
}

/// Offset of the first entry.
pub fn start() -> usize {
    HEADER_BYTES
}

/// Iterates (score, member, entry start, entry end).
pub fn iter(bytes: &[u8]) -> impl Iterator<Item = (f64, &[u8], usize, usize)> + '_ {
    let mut off = HEADER_BYTES;
    std::iter::from_fn(move || {
        if off >= bytes.len() {
            return None;
        }
        let (s, m, next) = entry_at(bytes, off);
        let start = off;
        off = next;
        Some((s, m, start, next))
    })
}

/// The score of `member` and the byte range of its entry.
pub fn find(bytes: &[u8], member: &[u8]) -> Option<(f64, usize, usize)> {
    iter(bytes)
        .find(|(_, m, _, _)| *m == member)
        .map(|(s, _, a, b)| (s, a, b))
}

/// Removes the entry at `start..end`.
pub fn remove(bytes: &mut Vec<u8>, start: usize, end: usize) {
    bytes.drain(start..end);
    let n = count(bytes) - 1;
    set_count(bytes, n);
}

/// Inserts (score, member) in order; the member must be absent.
pub fn insert(bytes: &mut Vec<u8>, score: f64, member: &[u8]) {
    let at = iter(bytes)
        .find(|(s, m, _, _)| cmp_key(*s, m, score, member) == Ordering::Greater)
        .map_or(bytes.len(), |(_, _, a, _)| a);
    let mut entry = Vec::with_capacity(member.len() + 12);
    put_entry(&mut entry, score, member);
    bytes.splice(at..at, entry);
    let n = count(bytes) + 1;
    set_count(bytes, n);
}

/// Encodes entries already in order.
pub fn encode<'a>(entries: impl Iterator<Item = (f64, &'a [u8])>) -> Vec<u8> {
    let mut out = empty();
    let mut n = 0;
    for (s, m) in entries {
        put_entry(&mut out, s, m);
        n += 1;
    }
    set_count(&mut out, n);
    out
}

/// Offsets of every entry (for walking backwards).
pub fn offsets(bytes: &[u8]) -> Vec<usize> {
    iter(bytes).map(|(_, _, a, _)| a).collect()
}
