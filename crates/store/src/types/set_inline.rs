//! The two inline set encodings: the payload bytes in the keyspace entry *are* the set, rewritten
//! whole on every change (bounded by the conversion thresholds, as Redis's intsets and listpacks
//! are).
//!
//! ```text
//!  SetIntset (meta tag 4)                      SetSmall (meta tag 5)
//!  +-------+----+----+-----+----+              +-------+-----------------+----------------------+
//!  | width | v0 | v1 | ... | vN |              | count | hint0 .. hintN  | len m0 | len m1 | .. |
//!  +-------+----+----+-----+----+              +-------+-----------------+----------------------+
//!    1 B    width bytes each, LE,                1 B     one byte each     1 B + bytes per member
//!           signed, strictly ascending
//! ```
//! **Intset.** `width` is 2, 4 or 8: the smallest that holds every element (grown when a wider
//! one arrives, never shrunk, as Redis's `intsetUpgradeAndAdd`). Lookup is a binary search.
//! Invariant: `(len - 1) % width == 0`, elements strictly ascending. Bytes per element: `width`
//! (Redis: the same plus a 8-byte header instead of our 1).
//!
//! **Small.** Up to `SMALL_ENTRIES_MAX` (128) members of up to `SMALL_VALUE_MAX_BYTES` (64)
//! bytes, in insertion order (a removal closes the gap). The hints are one byte of a hash of each
//! member; a lookup compares hints first and touches a member's bytes only when its hint matches
//! (1 in 256 for a miss), so a miss over 128 members reads 128 hint bytes and sums the lengths.
//! Invariant: `len == 1 + count + sum(1 + len_i)`, members distinct. Bytes per member: its
//! length + 2 (Redis 7.2's listpack: length + 2..3, no hints; 7.0 uses a hashtable here).
//!
//! Both are rebuilt into a caller's buffer (`out`) rather than edited in place: the keyspace
//! stores the new payload with one write (`edit.rs`). An empty intset (the width byte alone) is
//! what a new set starts from; it is never stored.

/// Redis's `set-max-intset-entries`.
pub const INTSET_ENTRIES_MAX: usize = 512;
/// Redis 7.2's `set-max-listpack-entries`.
pub const SMALL_ENTRIES_MAX: usize = 128;
/// Redis 7.2's `set-max-listpack-value`.
pub const SMALL_VALUE_MAX_BYTES: usize = 64;

/// The narrowest intset width that holds `v`.
#[inline]
pub fn width_of(v: i64) -> usize {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

/// Intset payloads.
pub mod intset {
    use super::width_of;

    #[inline]
    pub fn width(b: &[u8]) -> usize {
        b[0] as usize
    }

    #[inline]
    pub fn len(b: &[u8]) -> usize {
        (b.len() - 1) / width(b)
    }

    #[inline]
    pub fn get(b: &[u8], i: usize) -> i64 {
        let w = width(b);
        let at = 1 + i * w;
        let s = &b[at..at + w];
        match w {
            2 => i64::from(i16::from_le_bytes([s[0], s[1]])),
            4 => i64::from(i32::from_le_bytes(s.try_into().expect("4 bytes"))),
            _ => i64::from_le_bytes(s.try_into().expect("8 bytes")),
        }
    }

    /// Binary search: `Ok(index)` if present, else where it would go.
    pub fn find(b: &[u8], v: i64) -> Result<usize, usize> {
        if width_of(v) > width(b) {
            // Wider than every element: below all or above all.
            return Err(if v < 0 { 0 } else { len(b) });
        }
        let (mut lo, mut hi) = (0, len(b));
        // Bounded: the range halves each round.
        while lo < hi {
            let mid = usize::midpoint(lo, hi);
            match get(b, mid).cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    pub fn contains(b: &[u8], v: i64) -> bool {
        find(b, v).is_ok()
    }

    fn push(out: &mut Vec<u8>, w: usize, v: i64) {
        out.extend_from_slice(&v.to_le_bytes()[..w]);
    }

    /// An intset of the sorted, distinct `values`.
    pub fn build(values: &[i64], out: &mut Vec<u8>) {
        let w = values.iter().map(|&v| width_of(v)).max().unwrap_or(2);
        out.clear();
        out.push(w as u8);
        for &v in values {
            push(out, w, v);
        }
    }

    /// `b` with `v` inserted at `at` (from `find`), widened if needed, into `out`.
    pub fn insert(b: &[u8], at: usize, v: i64, out: &mut Vec<u8>) {
        let w = width(b).max(width_of(v));
        out.clear();
        out.reserve(1 + (len(b) + 1) * w);
        out.push(w as u8);
        if w == width(b) {
            out.extend_from_slice(&b[1..=at * w]);
            push(out, w, v);
            out.extend_from_slice(&b[1 + at * w..]);
        } else {
            for i in 0..at {
                push(out, w, get(b, i));
            }
            push(out, w, v);
            for i in at..len(b) {
                push(out, w, get(b, i));
            }
        }
    }

    /// `b` without the element at `at`, into `out`.
    pub fn remove(b: &[u8], at: usize, out: &mut Vec<u8>) {
        let w = width(b);
        out.clear();
        out.extend_from_slice(&b[..=at * w]);
        out.extend_from_slice(&b[1 + (at + 1) * w..]);
    }

    pub fn iter(b: &[u8]) -> impl Iterator<Item = i64> + Clone + '_ {
        (0..len(b)).map(move |i| get(b, i))
    }

    /// Checks the layout invariants (tests).
    pub fn validate(b: &[u8]) -> Result<(), String> {
        let w = *b.first().ok_or("empty payload")? as usize;
        if ![2, 4, 8].contains(&w) || !(b.len() - 1).is_multiple_of(w) {
            return Err(format!("bad width {w} for {} bytes", b.len()));
        }
        let values: Vec<i64> = iter(b).collect();
        if values.windows(2).any(|p| p[0] >= p[1]) {
            return Err("elements not strictly ascending".into());
        }
        Ok(())
    }
}

/// One byte of a hash of `m` (the small encoding's hint).
#[inline]
pub fn hint_of(m: &[u8]) -> u8 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (m.len() as u64).wrapping_mul(K);
    let mut chunks = m.chunks_exact(8);
    for c in &mut chunks {
        h = (h ^ u64::from_le_bytes(c.try_into().expect("8 bytes"))).wrapping_mul(K);
        h ^= h >> 29;
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    (h >> 56) as u8
}

/// Small-set payloads.
pub mod small {
    use super::hint_of;

    #[inline]
    pub fn len(b: &[u8]) -> usize {
        b[0] as usize
    }

    fn hints(b: &[u8]) -> &[u8] {
        &b[1..=len(b)]
    }

    /// The members, in stored order.
    pub fn members(b: &[u8]) -> Members<'_> {
        Members {
            b,
            at: 1 + len(b),
            left: len(b),
        }
    }

    /// Iterator over the members, in stored order.
    #[derive(Clone, Debug)]
    pub struct Members<'a> {
        b: &'a [u8],
        at: usize,
        left: usize,
    }

    impl<'a> Iterator for Members<'a> {
        type Item = &'a [u8];

        #[inline]
        fn next(&mut self) -> Option<&'a [u8]> {
            if self.left == 0 {
                return None;
            }
            self.left -= 1;
            let n = self.b[self.at] as usize;
            let m = &self.b[self.at + 1..self.at + 1 + n];
            self.at += 1 + n;
            Some(m)
        }
    }

    /// The index and byte offset of `m`, if present.
    pub fn find(b: &[u8], m: &[u8]) -> Option<(usize, usize)> {
        let h = hint_of(m);
        let mut at = 1 + len(b);
        for (i, &hint) in hints(b).iter().enumerate() {
            let n = b[at] as usize;
            if hint == h && n == m.len() && &b[at + 1..at + 1 + n] == m {
                return Some((i, at));
            }
            at += 1 + n;
        }
        None
    }

    pub fn contains(b: &[u8], m: &[u8]) -> bool {
        find(b, m).is_some()
    }

    /// Member `i` (walks the lengths before it).
    pub fn get(b: &[u8], i: usize) -> &[u8] {
        members(b).nth(i).expect("index below len")
    }

    /// A small set of distinct `items` (each at most 255 bytes, at most 255 of them).
    pub fn build<'m>(items: impl ExactSizeIterator<Item = &'m [u8]> + Clone, out: &mut Vec<u8>) {
        out.clear();
        out.push(items.len() as u8);
        out.extend(items.clone().map(hint_of));
        for m in items {
            out.push(m.len() as u8);
            out.extend_from_slice(m);
        }
    }

    /// `b` (possibly empty, meaning no set yet) with `m` appended, into `out`.
    pub fn append(b: &[u8], m: &[u8], out: &mut Vec<u8>) {
        out.clear();
        let count = if b.is_empty() { 0 } else { len(b) };
        out.reserve(b.len().max(1) + 2 + m.len());
        out.push(count as u8 + 1);
        if count > 0 {
            out.extend_from_slice(hints(b));
        }
        out.push(hint_of(m));
        if count > 0 {
            out.extend_from_slice(&b[1 + count..]);
        }
        out.push(m.len() as u8);
        out.extend_from_slice(m);
    }

    /// `b` without member `i` at byte offset `at` (from `find`), into `out`.
    pub fn remove(b: &[u8], i: usize, at: usize, out: &mut Vec<u8>) {
        let count = len(b);
        let n = b[at] as usize;
        out.clear();
        out.push(count as u8 - 1);
        out.extend_from_slice(&b[1..=i]);
        out.extend_from_slice(&b[i + 2..at]);
        out.extend_from_slice(&b[at + 1 + n..]);
    }

    /// Checks the layout invariants (tests).
    pub fn validate(b: &[u8]) -> Result<(), String> {
        let count = *b.first().ok_or("empty payload")? as usize;
        if count == 0 || b.len() < 1 + count {
            return Err("bad count".into());
        }
        let mut at = 1 + count;
        let mut seen = std::collections::HashSet::new();
        for i in 0..count {
            let n = *b.get(at).ok_or("truncated")? as usize;
            let m = b.get(at + 1..at + 1 + n).ok_or("truncated member")?;
            if b[1 + i] != hint_of(m) {
                return Err(format!("hint {i} wrong"));
            }
            if !seen.insert(m) {
                return Err("duplicate member".into());
            }
            at += 1 + n;
        }
        if at != b.len() {
            return Err("trailing bytes".into());
        }
        Ok(())
    }
}
