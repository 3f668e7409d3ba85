//! The 8 KiB page: a small header and 128 pieces of 64 bytes holding variable-length entries.
//!
//! ```text
//!  page (8192 bytes = 128 pieces x 64, one heap block, 8 KiB-aligned)
//!  +--------------------------------------------------------------+
//!  | piece 0:  header (56 B) | piece hdr (3) | 5 B of entries     |  bytes     0 ..   64
//!  | piece 1:  piece hdr (3) | hints | entries ... | free         |  bytes    64 ..  128
//!  | ...                                                          |
//!  | piece 127                                                    |  bytes 8128 .. 8192
//!  +--------------------------------------------------------------+
//!
//!  page header (little-endian)
//!   0  u16 entry_count        sum of the pieces' counts
//!   2  u16 used_bytes         sum of the pieces' `used`
//!   4  u8  probe_limit        pieces an insert may try from the home piece (1..=128)
//!   5  u8  tenant_count       occupied tenant slots (1..=8)
//!   6  u8  magic = 0xD5
//!   7  u8  kind               0 = byte strings (PageHash), 1 = integers (IntMap)
//!   8  u32 page_index         position in the map's page list
//!  12  u32 reserved (0)
//!  16  8 x tenant slot        { u32 prefix, u8 depth }, depth 0xFF = empty slot
//!
//!  piece (64 bytes; piece 0 starts at byte 56)
//!  +-------+------+-------+------------------+----------------------+---------+
//!  | count | used | spill | hints[count]     | entries (back to back)| free    |
//!  +-------+------+-------+------------------+----------------------+---------+
//!     1 B    1 B    1 B     1 B per entry      encoded by the map's codec
//! ```
//!
//! `used = count + sum(entry lengths)` and `used + free == capacity` with capacity 61 (piece 0:
//! 5). `spill` is the largest distance (in pieces) from this piece, as a home, to where an entry
//! homed here was ever placed; lookups probe `home ..= home + spill` and no further. It is an
//! upper bound: removals do not lower it (a page rebuild does).
//!
//! Entries never straddle pieces: a lookup touches one 64-byte line per probed piece. The cost is
//! the tail of each piece that no entry fits in (half an entry on average).
//!
//! Tenants: a page holds the entries of up to eight *buckets* (hash prefixes with their own
//! depth) — see `table.rs` for why. This module only stores the table; it does not interpret it.
//!
//! All functions here are safe code over a `[u8; 8192]`; `raw.rs` turns heap pointers into
//! `&Page`/`&mut Page`.

/// Bytes in a page (one heap block).
pub const PAGE_BYTES: usize = heap::BLOCK_BYTES;
/// Bytes in a piece.
pub const PIECE_BYTES: usize = 64;
/// Pieces in a page.
pub const PIECE_COUNT: usize = PAGE_BYTES / PIECE_BYTES;
/// Bytes of the page header (in piece 0).
pub const HEADER_BYTES: usize = 56;
/// Bytes of a piece header (count, used, spill).
pub const PIECE_HEADER_BYTES: usize = 3;
/// Payload capacity (hints + entries) of pieces 1..=127.
pub const PIECE_CAPACITY: usize = PIECE_BYTES - PIECE_HEADER_BYTES;
/// Tenant slots per page.
pub const TENANT_SLOTS: usize = 8;
/// Depth value of an empty tenant slot.
pub const NO_TENANT: u8 = 0xFF;
/// Largest entry a piece can hold (hint byte not included).
pub const ENTRY_BYTES_MAX: usize = PIECE_CAPACITY - 1;
const MAGIC: u8 = 0xD5;

const _: () = assert!(PIECE_COUNT == 128);
const _: () = assert!(HEADER_BYTES == 16 + TENANT_SLOTS * 5);
const _: () = assert!(HEADER_BYTES + PIECE_HEADER_BYTES < PIECE_BYTES);

/// What kind of entries a page holds (checked by `validate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bytes = 0,
    Int = 1,
}

/// A copy of a page's tenant table: what decoding an entry's hash needs from the page.
#[derive(Clone, Copy, Debug)]
pub struct Tenants {
    slots: [(u32, u8); TENANT_SLOTS],
}

impl Tenants {
    /// Tenant in slot `t`: `(prefix, depth)`, or `None` for an empty slot.
    #[inline]
    pub fn get(&self, t: usize) -> Option<(u32, u8)> {
        let (prefix, depth) = self.slots[t];
        (depth != NO_TENANT).then_some((prefix, depth))
    }
}

/// One page. Always used by reference: either a heap block (`raw.rs`) or a boxed scratch page.
#[repr(C, align(64))]
pub struct Page {
    pub bytes: [u8; PAGE_BYTES],
}

impl std::fmt::Debug for Page {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Page")
            .field("entry_count", &self.entry_count())
            .field("used_bytes", &self.used_bytes())
            .field("tenant_count", &self.tenant_count())
            .finish_non_exhaustive()
    }
}

/// First byte of piece `p` (its piece header).
#[inline]
pub const fn piece_start(p: usize) -> usize {
    if p == 0 {
        HEADER_BYTES
    } else {
        p * PIECE_BYTES
    }
}

/// Payload capacity of piece `p`.
#[inline]
pub const fn piece_capacity(p: usize) -> usize {
    (p + 1) * PIECE_BYTES - piece_start(p) - PIECE_HEADER_BYTES
}

impl Page {
    /// A zeroed page on the Rust heap (page-level tests).
    #[cfg(test)]
    pub fn boxed() -> Box<Page> {
        Box::new(Page {
            bytes: [0; PAGE_BYTES],
        })
    }

    fn u16_at(&self, at: usize) -> u16 {
        u16::from_le_bytes([self.bytes[at], self.bytes[at + 1]])
    }

    fn set_u16_at(&mut self, at: usize, v: u16) {
        self.bytes[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }

    /// Clears the page and writes a fresh header with no tenants.
    pub fn init(&mut self, kind: Kind, probe_limit: u8, page_index: u32) {
        self.bytes.fill(0);
        self.bytes[4] = probe_limit;
        self.bytes[6] = MAGIC;
        self.bytes[7] = kind as u8;
        self.bytes[8..12].copy_from_slice(&page_index.to_le_bytes());
        for t in 0..TENANT_SLOTS {
            self.bytes[16 + t * 5 + 4] = NO_TENANT;
        }
    }

    pub fn entry_count(&self) -> usize {
        self.u16_at(0) as usize
    }

    pub fn used_bytes(&self) -> usize {
        self.u16_at(2) as usize
    }

    pub fn probe_limit(&self) -> usize {
        self.bytes[4] as usize
    }

    pub fn set_probe_limit(&mut self, limit: u8) {
        self.bytes[4] = limit;
    }

    pub fn tenant_count(&self) -> usize {
        self.bytes[5] as usize
    }

    pub fn page_index(&self) -> usize {
        u32::from_le_bytes(self.bytes[8..12].try_into().expect("4 bytes")) as usize
    }

    pub fn set_page_index(&mut self, index: usize) {
        self.bytes[8..12].copy_from_slice(&(index as u32).to_le_bytes());
    }

    /// Tenant in slot `t`: `(prefix, depth)`, or `None` for an empty slot.
    #[inline]
    pub fn tenant(&self, t: usize) -> Option<(u32, u8)> {
        let at = 16 + t * 5;
        let depth = self.bytes[at + 4];
        (depth != NO_TENANT).then(|| {
            (
                u32::from_le_bytes(self.bytes[at..at + 4].try_into().expect("4 bytes")),
                depth,
            )
        })
    }

    /// A copy of the tenant table.
    #[inline]
    pub fn tenants(&self) -> Tenants {
        Tenants {
            slots: std::array::from_fn(|t| {
                let at = 16 + t * 5;
                let prefix =
                    u32::from_le_bytes(self.bytes[at..at + 4].try_into().expect("4 bytes"));
                (prefix, self.bytes[at + 4])
            }),
        }
    }

    /// Depth of tenant slot `t` (`NO_TENANT` if empty).
    #[inline]
    pub fn tenant_depth(&self, t: usize) -> u8 {
        self.bytes[16 + t * 5 + 4]
    }

    /// Depth of every slot (`NO_TENANT` for empty ones), for codecs that need it to decode.
    #[inline]
    pub fn tenant_depths(&self) -> [u8; TENANT_SLOTS] {
        std::array::from_fn(|t| self.bytes[16 + t * 5 + 4])
    }

    pub fn set_tenant(&mut self, t: usize, tenant: Option<(u32, u8)>) {
        let at = 16 + t * 5;
        let was = self.bytes[at + 4] != NO_TENANT;
        if let Some((prefix, depth)) = tenant {
            assert!(depth != NO_TENANT);
            self.bytes[at..at + 4].copy_from_slice(&prefix.to_le_bytes());
            self.bytes[at + 4] = depth;
            self.bytes[5] += u8::from(!was);
        } else {
            self.bytes[at..at + 4].fill(0);
            self.bytes[at + 4] = NO_TENANT;
            self.bytes[5] -= u8::from(was);
        }
    }

    /// The lowest empty tenant slot, if any.
    pub fn free_tenant_slot(&self) -> Option<usize> {
        (0..TENANT_SLOTS).find(|&t| self.bytes[16 + t * 5 + 4] == NO_TENANT)
    }

    /// Slot of the tenant whose prefix `h` falls in, if this page hosts it.
    pub fn tenant_of_hash(&self, h: u64) -> Option<usize> {
        (0..TENANT_SLOTS).find(|&t| {
            self.tenant(t)
                .is_some_and(|(prefix, depth)| crate::hash::prefix_of(h, depth) == prefix)
        })
    }

    #[inline]
    pub fn piece_count(&self, p: usize) -> usize {
        self.bytes[piece_start(p)] as usize
    }

    #[inline]
    pub fn piece_used(&self, p: usize) -> usize {
        self.bytes[piece_start(p) + 1] as usize
    }

    #[inline]
    pub fn spill(&self, p: usize) -> usize {
        self.bytes[piece_start(p) + 2] as usize
    }

    pub fn raise_spill(&mut self, p: usize, distance: usize) {
        let at = piece_start(p) + 2;
        if (self.bytes[at] as usize) < distance {
            self.bytes[at] = distance as u8;
        }
    }

    /// The hint bytes of piece `p`.
    #[inline]
    pub fn hints(&self, p: usize) -> &[u8] {
        let s = piece_start(p) + PIECE_HEADER_BYTES;
        &self.bytes[s..s + self.piece_count(p)]
    }

    /// The entry bytes of piece `p` (all entries, back to back).
    #[inline]
    pub fn entries(&self, p: usize) -> &[u8] {
        let s = piece_start(p) + PIECE_HEADER_BYTES;
        &self.bytes[s + self.piece_count(p)..s + self.piece_used(p)]
    }

    /// Whether an entry of `len` bytes (plus its hint) fits in piece `p`.
    #[inline]
    pub fn fits(&self, p: usize, len: usize) -> bool {
        self.piece_used(p) + 1 + len <= piece_capacity(p)
    }

    /// Appends an entry to piece `p`. The caller checked `fits`.
    pub fn push(&mut self, p: usize, hint: u8, entry: &[u8]) {
        assert!(self.fits(p, entry.len()), "push into a full piece");
        let s = piece_start(p);
        let (count, used) = (self.piece_count(p), self.piece_used(p));
        let hints_end = s + PIECE_HEADER_BYTES + count;
        let end = s + PIECE_HEADER_BYTES + used;
        // Shift the entries one byte up to make room for the new hint.
        self.bytes.copy_within(hints_end..end, hints_end + 1);
        self.bytes[hints_end] = hint;
        self.bytes[end + 1..end + 1 + entry.len()].copy_from_slice(entry);
        self.bytes[s] = (count + 1) as u8;
        self.bytes[s + 1] = (used + 1 + entry.len()) as u8;
        self.set_u16_at(0, self.u16_at(0) + 1);
        self.set_u16_at(2, self.u16_at(2) + 1 + entry.len() as u16);
    }

    /// Removes entry `index` (at `offset` in `entries(p)`, `len` bytes) from piece `p`.
    pub fn remove(&mut self, p: usize, index: usize, offset: usize, len: usize) {
        let s = piece_start(p);
        let (count, used) = (self.piece_count(p), self.piece_used(p));
        assert!(index < count && count + offset + len <= used);
        let h0 = s + PIECE_HEADER_BYTES;
        let entry_at = h0 + count + offset;
        // Close the entry's gap, then the hint's gap (entries move down by one more byte).
        self.bytes.copy_within(entry_at + len..h0 + used, entry_at);
        self.bytes
            .copy_within(h0 + index + 1..h0 + used - len, h0 + index);
        self.bytes[h0 + used - len - 1..h0 + used].fill(0);
        self.bytes[s] = (count - 1) as u8;
        self.bytes[s + 1] = (used - 1 - len) as u8;
        self.set_u16_at(0, self.u16_at(0) - 1);
        self.set_u16_at(2, self.u16_at(2) - 1 - len as u16);
    }

    /// Removes the last entry of piece `p` (`len` bytes): undoes the latest `push` there.
    pub fn pop_last(&mut self, p: usize, len: usize) {
        let (count, used) = (self.piece_count(p), self.piece_used(p));
        self.remove(p, count - 1, used - count - len, len);
    }

    /// Replaces the entry at (`index`, `offset`, `old_len`) by `entry` in place if piece `p` has
    /// room; returns false (and changes nothing) if not.
    pub fn replace(&mut self, p: usize, offset: usize, old_len: usize, entry: &[u8]) -> bool {
        let s = piece_start(p);
        let (count, used) = (self.piece_count(p), self.piece_used(p));
        let new_used = used - old_len + entry.len();
        if new_used > piece_capacity(p) {
            return false;
        }
        let at = s + PIECE_HEADER_BYTES + count + offset;
        let end = s + PIECE_HEADER_BYTES + used;
        self.bytes.copy_within(at + old_len..end, at + entry.len());
        self.bytes[at..at + entry.len()].copy_from_slice(entry);
        if new_used < used {
            let new_end = s + PIECE_HEADER_BYTES + new_used;
            self.bytes[new_end..end].fill(0);
        }
        self.bytes[s + 1] = new_used as u8;
        let page_used = self.u16_at(2) as usize - used + new_used;
        self.set_u16_at(2, page_used as u16);
        true
    }

    /// Empties piece `p` (its spill is kept: entries homed there may live further on).
    pub fn clear_piece(&mut self, p: usize) {
        let s = piece_start(p);
        let (count, used) = (self.piece_count(p), self.piece_used(p));
        self.bytes[s + PIECE_HEADER_BYTES..s + PIECE_HEADER_BYTES + used].fill(0);
        self.bytes[s] = 0;
        self.bytes[s + 1] = 0;
        self.set_u16_at(0, self.u16_at(0) - count as u16);
        self.set_u16_at(2, self.u16_at(2) - used as u16);
    }

    /// Rewrites piece `p` keeping the entries whose index bit is clear in `drop_mask` and passing
    /// each kept entry through `rewrite(hint, bytes, out) -> len`, which must not grow it.
    pub fn rewrite_piece(
        &mut self,
        p: usize,
        len_of: impl Fn(&[u8]) -> usize,
        drop_mask: u64,
        mut rewrite: impl FnMut(u8, &[u8], &mut [u8; PIECE_BYTES]) -> usize,
    ) {
        let s = piece_start(p);
        let mut old = [0u8; PIECE_BYTES];
        let n = (p + 1) * PIECE_BYTES - s;
        old[..n].copy_from_slice(&self.bytes[s..s + n]);
        let count = old[0] as usize;
        self.clear_piece(p);
        let hints = PIECE_HEADER_BYTES;
        let mut offset = hints + count;
        let mut out = [0u8; PIECE_BYTES];
        for i in 0..count {
            let len = len_of(&old[offset..]);
            if drop_mask & (1 << i) == 0 {
                let new_len = rewrite(old[hints + i], &old[offset..offset + len], &mut out);
                assert!(new_len <= len, "rewrite grew an entry");
                self.push(p, old[hints + i], &out[..new_len]);
            }
            offset += len;
        }
    }

    /// Finds the first entry of piece `p` with hint `hint` that `eq` accepts: `eq` gets the
    /// bytes from the candidate to the end of the piece's entries and returns the entry's length
    /// if it is the one. Returns `(index, offset, len)`. Only hint matches are decoded, and
    /// `len_of` is called only to skip the entries before a candidate.
    #[inline]
    pub fn find(
        &self,
        p: usize,
        hint: u8,
        len_of: impl Fn(&[u8]) -> usize,
        mut eq: impl FnMut(&[u8]) -> Option<usize>,
    ) -> Option<(usize, usize, usize)> {
        let entries = self.entries(p);
        let (mut walked, mut offset) = (0usize, 0usize);
        let count = self.piece_count(p);
        let hints_at = piece_start(p) + PIECE_HEADER_BYTES;
        // Fast path: up to eight hints read as one word straight from the page (the bytes past
        // `count` are masked off; the read stays inside the page).
        if count <= 8 && hints_at + 8 <= PAGE_BYTES {
            let word = u64::from_le_bytes(
                self.bytes[hints_at..hints_at + 8]
                    .try_into()
                    .expect("8 bytes"),
            );
            let mut mask = crate::hint::match_word(word, hint, count);
            while mask != 0 {
                let index = mask.trailing_zeros() as usize / 8;
                mask &= mask - 1;
                while walked < index {
                    offset += len_of(&entries[offset..]);
                    walked += 1;
                }
                if let Some(len) = eq(&entries[offset..]) {
                    return Some((index, offset, len));
                }
            }
            return None;
        }
        for index in crate::hint::matches(self.hints(p), hint) {
            while walked < index {
                offset += len_of(&entries[offset..]);
                walked += 1;
            }
            if let Some(len) = eq(&entries[offset..]) {
                return Some((index, offset, len));
            }
        }
        None
    }

    /// Visits every entry of piece `p`: `f(index, offset, hint, bytes)`.
    #[inline]
    pub fn for_each_in_piece(
        &self,
        p: usize,
        len_of: impl Fn(&[u8]) -> usize,
        mut f: impl FnMut(usize, usize, u8, &[u8]),
    ) {
        let entries = self.entries(p);
        let hints = self.hints(p);
        let mut offset = 0;
        for (index, &hint) in hints.iter().enumerate() {
            let len = len_of(&entries[offset..]);
            f(index, offset, hint, &entries[offset..offset + len]);
            offset += len;
        }
    }

    /// Entry at position `index` of piece `p`: `(hint, offset, bytes)`.
    pub fn entry_at(
        &self,
        p: usize,
        index: usize,
        len_of: impl Fn(&[u8]) -> usize,
    ) -> (u8, usize, &[u8]) {
        let entries = self.entries(p);
        let mut offset = 0;
        for _ in 0..index {
            offset += len_of(&entries[offset..]);
        }
        let len = len_of(&entries[offset..]);
        (self.hints(p)[index], offset, &entries[offset..offset + len])
    }

    /// Recounts and re-walks every piece: the structural invariants that hold whatever the codec.
    /// `len_of` must decode each entry fully (it is how entries are re-decoded).
    pub fn validate(&self, kind: Kind, len_of: impl Fn(&[u8]) -> usize) -> Result<(), String> {
        if self.bytes[6] != MAGIC || self.bytes[7] != kind as u8 {
            return Err("bad magic or kind".into());
        }
        let limit = self.probe_limit();
        if limit == 0 || limit > PIECE_COUNT {
            return Err(format!("probe_limit {limit}"));
        }
        let tenants = (0..TENANT_SLOTS)
            .filter(|&t| self.tenant(t).is_some())
            .count();
        if tenants != self.tenant_count() || tenants == 0 {
            return Err(format!(
                "tenant_count {} but {tenants} slots used",
                self.tenant_count()
            ));
        }
        let (mut count, mut used) = (0usize, 0usize);
        for p in 0..PIECE_COUNT {
            let (c, u) = (self.piece_count(p), self.piece_used(p));
            if u > piece_capacity(p) || c > u {
                return Err(format!("piece {p}: count {c} used {u}"));
            }
            let entries = self.entries(p);
            let mut offset = 0;
            for i in 0..c {
                if offset >= entries.len() {
                    return Err(format!("piece {p}: entry {i} starts past used"));
                }
                let len = len_of(&entries[offset..]);
                if len == 0 || len > ENTRY_BYTES_MAX {
                    return Err(format!("piece {p}: entry {i} len {len}"));
                }
                offset += len;
            }
            if offset + c != u {
                return Err(format!(
                    "piece {p}: entries take {offset} + {c} hints, used says {u}"
                ));
            }
            let s = piece_start(p) + PIECE_HEADER_BYTES;
            if self.bytes[s + u..(p + 1) * PIECE_BYTES]
                .iter()
                .any(|&b| b != 0)
            {
                return Err(format!("piece {p}: free bytes not zero"));
            }
            count += c;
            used += u;
        }
        if count != self.entry_count() || used != self.used_bytes() {
            return Err(format!(
                "header says {} entries / {} bytes, pieces hold {count} / {used}",
                self.entry_count(),
                self.used_bytes()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A trivial codec for page-level tests: first byte is the entry length.
    fn len_of(b: &[u8]) -> usize {
        b[0] as usize
    }

    fn entry(len: usize, fill: u8) -> Vec<u8> {
        let mut v = vec![fill; len];
        v[0] = len as u8;
        v
    }

    #[test]
    fn push_find_replace_remove_against_a_model() {
        let mut page = Page::boxed();
        page.init(Kind::Bytes, 16, 0);
        page.set_tenant(0, Some((0, 0)));
        let mut model: Vec<Vec<(u8, Vec<u8>)>> = vec![Vec::new(); PIECE_COUNT];
        let mut x = 5u64;
        for step in 0..20_000u32 {
            x = crate::hash::splitmix(x);
            let p = (x % 128) as usize;
            let hint = (x >> 8) as u8 % 4;
            match (x >> 16) % 3 {
                0 => {
                    let e = entry(1 + (x >> 20) as usize % 20, step as u8);
                    if page.fits(p, e.len()) {
                        page.push(p, hint, &e);
                        model[p].push((hint, e));
                    }
                }
                1 if !model[p].is_empty() => {
                    let i = (x >> 24) as usize % model[p].len();
                    let (h, want) = model[p][i].clone();
                    let found = page.find(p, h, len_of, |b| {
                        (b[..len_of(b)] == *want.as_slice()).then(|| len_of(b))
                    });
                    let (index, offset, len) = found.expect("present");
                    assert_eq!(model[p][index].1, want);
                    if x & (1 << 40) == 0 {
                        page.remove(p, index, offset, len);
                        model[p].remove(index);
                    } else {
                        let e = entry(1 + (x >> 30) as usize % 20, 0xEE);
                        if page.replace(p, offset, len, &e) {
                            model[p][index].1 = e;
                        }
                    }
                }
                _ => {}
            }
            page.validate(Kind::Bytes, len_of).unwrap();
            let mut got = Vec::new();
            page.for_each_in_piece(p, len_of, |_, _, h, b| got.push((h, b.to_vec())));
            assert_eq!(got, model[p]);
        }
    }

    #[test]
    fn tenants_round_trip() {
        let mut page = Page::boxed();
        page.init(Kind::Int, 16, 3);
        assert_eq!(page.free_tenant_slot(), Some(0));
        page.set_tenant(0, Some((5, 3)));
        page.set_tenant(2, Some((0xFFFF_FFFF, 32)));
        assert_eq!(page.tenant_count(), 2);
        assert_eq!(page.tenant(2), Some((0xFFFF_FFFF, 32)));
        assert_eq!(page.free_tenant_slot(), Some(1));
        assert_eq!(page.tenant_of_hash(5u64 << 61), Some(0));
        page.set_tenant(0, None);
        assert_eq!(page.tenant_count(), 1);
        assert_eq!(page.page_index(), 3);
        page.validate(Kind::Int, len_of).unwrap();
    }
}
