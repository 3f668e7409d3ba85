//! `IntMap` (u64 -> u64) and `IntSet` (u64): the extendible hash with integer entries that store
//! only the bits of the key their position does not imply.
//!
//! The key's hash `h = mix(key)` is a keyed *bijection* (`hash.rs`), so the key can be recovered
//! from `h`, and `h` from where the entry lives. Keys below 2^32 ("short" keys) and the others
//! ("wide") hash by two families:
//!
//! ```text
//!  wide:  h = | bucket prefix: depth bits | rest: 49 - depth bits   | hint: 8 | low: 3 | home: 4 |
//!  short: h = | x = perm32(key): 32 bits                  | 0: 17   | x & 0x7fff                 |
//!               prefix: top depth bits of x, mid: the 17 - depth bits below it
//!               (from the tenant table)      (stored)              (hint byte) (stored) (the run)
//!
//!  entry (remainder forms)                     entry (literal form)
//!  +-----+---------------------+---------+     +-----+-------------+---------+
//!  | hdr | key field: K bytes  | value   |     | hdr | key: LEB128 | value   |
//!  +-----+---------------------+---------+     +-----+-------------+---------+
//!  hdr = value form (low nibble) | key form (high nibble):
//!        1..=7   wide remainder form, K = form:  key field = rest << 3 | low,
//!                K = ceil((52 - depth) / 8)
//!        9..=11  short remainder form, K = form - 8:  key field = mid << 3 | low,
//!                K = ceil((max(17 - depth, 0) + 3) / 8)
//!        15      literal form: the key itself as a varint
//!  value, by the low nibble v:
//!        0..=8   literal: v minimal little-endian bytes (0 bytes for 0; a set's values are 0)
//!        9..=15  key-relative: v - 9 little-endian bytes of zigzag(value - key), so a value
//!                equal to its key takes no bytes (ids mapped to themselves or to near ids)
//! ```
//!
//! The shortest form is written (a tie goes to the literal, which no split rewrites; a value
//! is key-relative only when that is strictly shorter). The field's length is in the form, so
//! walking a run decodes no page header. The run gives the bucket's tenant slot (its prefix and
//! depth) and the hash's low four bits; hash bits 4..=6 sit in the low three bits of the field's
//! first byte. So an entry depends on its bucket's depth but not on its slot or page: moving a
//! bucket copies its bytes, and only splits and merges re-encode.
//!
//! All entries of a run have one length (`Codec::UNIFORM_RUNS`), so a lookup finds the
//! candidate of hint match `i` at `i x length` without walking the run. An entry is written
//! longer than its shortest form when its run needs it: fields and values zero-extended, a
//! literal key as an over-long varint ([`widths_of`] gives the lengths an entry can take, and
//! 16 bytes is one of every entry's).
//!
//! Bytes per entry, 1M random pairs (depth 14..16, K = 5): hint 1 + hdr 1 + key 5 + value 8 = 15,
//! packed byte by byte in a 7789-byte run area: 15.8 B/pair at full pages, ~17.2 B/pair measured
//! with ~0.94 page fill and the directory. 1M sequential pairs `i -> i` (short keys, depth
//! 11..12, K = 1..2): hint 1 + hdr 1 + key 1..2, the value key-relative (0 bytes): 3.9 B/pair
//! measured (6.8 with literal 3-byte values; 9.0 with the literal key form, which needs 3 bytes
//! for keys below 2^21). Redis: dictEntry 24 -> 32 + bucket 8..16 + two small sds
//! ~ 72..80 B/pair; hashbrown `HashMap<u64,u64>`: 17 B per bucket at up to 7/8 load, 35.7 B/pair
//! at 1M (just after a doubling).

use crate::hash::IntHasher;
use crate::hash::TENANT_RUNS;
use crate::page::{ENTRY_BUF_BYTES, Kind, Page, Tenants};
use crate::table::{Codec, Config, Placement, Table};
use crate::{MapError, varint};
use heap::Heap;

/// Short remainder forms are this plus the field's length (9..=11).
const FORM_SHORT_BASE: u8 = 8;
const FORM_LITERAL: u8 = 15;
/// Bits of a short key's `x` stored in no position: between the prefix and the low 15.
const SHORT_MID_BITS: u8 = 17;
/// Value forms from this one on are key-relative, with `form - VALUE_RELATIVE` bytes.
const VALUE_RELATIVE: u8 = 9;
/// Most bytes a key-relative value takes (forms 9..=15).
const VALUE_RELATIVE_BYTES_MAX: usize = 6;
/// Most bytes of a wide key's field (forms 1..=7) and of a short key's (forms 9..=11).
const WIDE_FIELD_BYTES_MAX: usize = 7;
const SHORT_FIELD_BYTES_MAX: usize = 3;
/// A length every entry can be written in (a wide key as field and literal value: 1 + 7 + 8;
/// any other key as a literal varint of up to 5 bytes, padded, and a literal value), so a
/// run can always agree on one width.
const WIDTH_COMMON: usize = 16;

/// Bytes of the value per value form, one nibble each: 0..=8 for the literal forms 0..=8,
/// 0..=6 for the key-relative forms 9..=15.
const VALUE_BYTES: u64 = 0x6543_2108_7654_3210;

/// Bytes of the value, from the entry's header byte.
#[inline]
const fn value_bytes(hdr: u8) -> usize {
    ((VALUE_BYTES >> ((hdr & 15) * 4)) & 15) as usize
}

/// Length of the entry per header byte, for the remainder forms (0 for the literal form,
/// whose key is a varint): walks decode a length with one load.
static ENTRY_LENS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut hdr = 0;
    while hdr < 256 {
        if hdr >> 4 != FORM_LITERAL as usize {
            table[hdr] = (1 + field_bytes(hdr as u8) + value_bytes(hdr as u8)) as u8;
        }
        hdr += 1;
    }
    table
};

/// `value` as stored key-relative: zigzag(value - key), small for values near the key.
#[inline]
fn relative_of(key: u64, value: u64) -> u64 {
    varint::zigzag(value.wrapping_sub(key) as i64)
}

/// The value form and its bytes for `value` under `key`: literal, or key-relative when that
/// is strictly shorter.
#[inline]
fn value_form(key: u64, value: u64) -> (u8, u64, usize) {
    let literal = varint::le_len(value);
    let zigzag = relative_of(key, value);
    let relative = varint::le_len(zigzag);
    if relative < literal && relative <= VALUE_RELATIVE_BYTES_MAX {
        (VALUE_RELATIVE + relative as u8, zigzag, relative)
    } else {
        (literal as u8, value, literal)
    }
}

/// The value whose bytes (`value_bytes(hdr)` of them) start `bytes`, for `key`.
#[inline]
fn value_at(hdr: u8, key: u64, bytes: &[u8]) -> u64 {
    let stored = varint::get_le(bytes, value_bytes(hdr));
    if hdr & 15 >= VALUE_RELATIVE {
        key.wrapping_add(varint::unzigzag(stored) as u64)
    } else {
        stored
    }
}

/// Bytes of the key field at `depth`.
#[inline]
fn key_bytes(depth: u8) -> usize {
    (52 - depth as usize).div_ceil(8)
}

/// The bits of `h` between the prefix and the hint.
#[inline]
fn rest_of(h: u64, depth: u8) -> u64 {
    (h << depth) >> (u32::from(depth) + 15)
}

/// Bytes of the key field of a remainder-form entry, from its header byte.
#[inline]
const fn field_bytes(hdr: u8) -> usize {
    ((hdr >> 4) & 7) as usize
}

/// Hash bits 4..=6: below the hint, above the home, so stored in the key field's low three
/// bits (the run gives the home and the tenant slot).
#[inline]
fn low_of(h: u64) -> u64 {
    (h >> 4) & 7
}

/// Bytes of a short key's field at `depth`: its stored bits and hash bits 4..=6.
#[inline]
fn short_key_bytes(depth: u8) -> usize {
    (usize::from(SHORT_MID_BITS.saturating_sub(depth)) + 3).div_ceil(8)
}

/// The bits of a short key's `x = h >> 32` between its prefix and its low 15 bits.
#[inline]
fn short_rest_of(h: u64, depth: u8) -> u64 {
    let bits = SHORT_MID_BITS.saturating_sub(depth);
    ((h >> 32) >> 15) & ((1 << bits) - 1)
}

/// LEB128 length of the varint at the start of `bytes`.
#[inline]
fn varint_len_at(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|&b| b < 0x80)
        .expect("terminated varint")
        + 1
}

/// Bits `lo..=hi` of a width mask (bit n: n bytes; `hi` < 128).
#[inline]
const fn width_range(lo: usize, hi: usize) -> u128 {
    ((1u128 << (hi + 1)) - 1) & !((1u128 << lo) - 1)
}

/// One way to write an entry: its key as a remainder field or a literal varint, its value
/// literal or key-relative, each in a range of byte counts. A field or a value is
/// zero-extended to more bytes; a literal key is padded as an over-long varint (continuation
/// bytes of 0x80).
#[derive(Clone, Copy)]
struct Writing {
    key_literal: bool,
    key_bytes: (usize, usize),
    relative: bool,
    value_bytes: (usize, usize),
}

/// The ways `key -> value` can be written at `depth`, most preferred first (a key-relative
/// value only where it fits in [`VALUE_RELATIVE_BYTES_MAX`]).
#[inline]
fn writings(key: u64, value: u64, depth: u8) -> impl Iterator<Item = Writing> {
    let field = if key >> 32 == 0 {
        (short_key_bytes(depth), SHORT_FIELD_BYTES_MAX)
    } else {
        (key_bytes(depth), WIDE_FIELD_BYTES_MAX)
    };
    let literal = (varint::len(key), varint::LEN_MAX);
    let values = [
        (false, (varint::le_len(value), 8)),
        (
            true,
            (
                varint::le_len(relative_of(key, value)),
                VALUE_RELATIVE_BYTES_MAX,
            ),
        ),
    ];
    [(false, field), (true, literal)]
        .into_iter()
        .flat_map(move |(key_literal, key_bytes)| {
            values.map(|(relative, value_bytes)| Writing {
                key_literal,
                key_bytes,
                relative,
                value_bytes,
            })
        })
        .filter(|w| w.value_bytes.0 <= w.value_bytes.1)
}

/// The lengths `key -> value` can be written in at `depth` (bit n: n bytes). Always holds
/// [`WIDTH_COMMON`].
fn widths_of(key: u64, value: u64, depth: u8) -> u128 {
    let mask = writings(key, value, depth).fold(0, |m, w| {
        m | width_range(
            1 + w.key_bytes.0 + w.value_bytes.0,
            1 + w.key_bytes.1 + w.value_bytes.1,
        )
    });
    debug_assert!(mask & (1 << WIDTH_COMMON) != 0);
    mask
}

/// Writes `key -> value` at `depth` in exactly `width` bytes (a length [`widths_of`] gives).
fn encode_width(
    key: u64,
    value: u64,
    h: u64,
    depth: u8,
    width: usize,
    out: &mut [u8; ENTRY_BUF_BYTES],
) -> usize {
    let body = width - 1;
    let w = writings(key, value, depth)
        .find(|w| {
            let (lo, hi) = (
                w.key_bytes.0 + w.value_bytes.0,
                w.key_bytes.1 + w.value_bytes.1,
            );
            lo <= body && body <= hi
        })
        .expect("a width from widths_of");
    let k = w.key_bytes.0.max(body.saturating_sub(w.value_bytes.1));
    let v = body - k;
    let (vform, stored) = if w.relative {
        (VALUE_RELATIVE + v as u8, relative_of(key, value))
    } else {
        (v as u8, value)
    };
    if w.key_literal {
        out[0] = (FORM_LITERAL << 4) | vform;
        varint::put_padded(&mut out[1..], key, k);
    } else if key >> 32 == 0 {
        out[0] = ((FORM_SHORT_BASE + k as u8) << 4) | vform;
        varint::put_le(&mut out[1..], (short_rest_of(h, depth) << 3) | low_of(h), k);
    } else {
        out[0] = ((k as u8) << 4) | vform;
        varint::put_le(&mut out[1..], (rest_of(h, depth) << 3) | low_of(h), k);
    }
    varint::put_le(&mut out[1 + k..], stored, v);
    width
}

/// If the entry starting `bytes` (in a bucket at `depth`) is `key`'s, whose hash is `h`: its
/// length and value.
#[inline(always)]
fn entry_match(bytes: &[u8], key: u64, h: u64, depth: u8) -> Option<(usize, u64)> {
    let hdr = bytes[0];
    let vlen = value_bytes(hdr);
    let form = hdr >> 4;
    if form == FORM_LITERAL {
        let (k, n) = varint::get(&bytes[1..]);
        if k != key {
            return None;
        }
        return Some((1 + n + vlen, value_at(hdr, key, &bytes[1 + n..])));
    }
    // An entry of the other family may share the hash bits its position holds.
    let short = key >> 32 == 0;
    if (form > FORM_SHORT_BASE) != short {
        return None;
    }
    let rest = if short {
        short_rest_of(h, depth)
    } else {
        rest_of(h, depth)
    };
    let k = field_bytes(hdr);
    if varint::get_le(&bytes[1..], k) != (rest << 3) | low_of(h) {
        return None;
    }
    Some((1 + k + vlen, value_at(hdr, key, &bytes[1 + k..])))
}

/// The integer entry codec.
#[derive(Clone, Copy, Debug)]
pub struct IntCodec {
    hasher: IntHasher,
}

impl IntCodec {
    /// Writes the entry for `key -> value` placed at `at`; returns its length.
    fn encode(
        key: u64,
        value: u64,
        h: u64,
        at: Placement,
        out: &mut [u8; ENTRY_BUF_BYTES],
    ) -> usize {
        let (vform, stored, vlen) = value_form(key, value);
        let literal_len = varint::len(key);
        let (form, field, k) = if key >> 32 == 0 {
            let k = short_key_bytes(at.depth);
            let field = (short_rest_of(h, at.depth) << 3) | low_of(h);
            (FORM_SHORT_BASE + k as u8, field, k)
        } else {
            let k = key_bytes(at.depth);
            (k as u8, (rest_of(h, at.depth) << 3) | low_of(h), k)
        };
        let mut n = 1;
        // The shortest form is written; a tie goes to the literal, which no split rewrites.
        if literal_len <= k {
            out[0] = (FORM_LITERAL << 4) | vform;
            n += varint::put(&mut out[1..], key);
        } else {
            out[0] = (form << 4) | vform;
            varint::put_le(&mut out[1..], field, k);
            n += k;
        }
        varint::put_le(&mut out[n..], stored, vlen);
        n + vlen
    }

    /// The value of the entry `bytes`, whose key is `key`.
    #[inline]
    fn value_of(bytes: &[u8], key: u64) -> u64 {
        value_at(bytes[0], key, &bytes[bytes.len() - value_bytes(bytes[0])..])
    }

    /// The (key, value) of the entry `bytes` with `hint` in run `piece` of `page`.
    #[inline]
    fn pair_of(&self, page: &Page, piece: usize, hint: u8, bytes: &[u8]) -> (u64, u64) {
        let key = if bytes[0] >> 4 == FORM_LITERAL {
            varint::get(&bytes[1..]).0
        } else {
            self.key_from(
                bytes,
                Self::hash_of_field(&page.tenants(), piece, hint, bytes),
            )
        };
        (key, Self::value_of(bytes, key))
    }

    /// The key of an entry whose hash is `h`, by its form (the families' hashes may coincide).
    #[inline]
    fn key_from(&self, bytes: &[u8], h: u64) -> u64 {
        match bytes[0] >> 4 {
            FORM_LITERAL => varint::get(&bytes[1..]).0,
            f if f > FORM_SHORT_BASE => u64::from(self.hasher.unperm32((h >> 32) as u32)),
            _ => self.hasher.unmix(h),
        }
    }

    /// The hash of a remainder-form entry: the prefix from its tenant, the bits its field
    /// stores, and the low 15 bits from the hint and the home (the entry's run). A short key's
    /// bits are those of `x` (past depth 17 its prefix reaches into the low 15 bits, which then
    /// agree with them).
    fn hash_of_field(tenants: &Tenants, piece: usize, hint: u8, bytes: &[u8]) -> u64 {
        let (prefix, depth) = tenants
            .get(piece / TENANT_RUNS)
            .expect("entry in a live tenant's run");
        let field = varint::get_le(&bytes[1..], field_bytes(bytes[0]));
        let low = ((field >> 3) << 15)
            | (u64::from(hint) << 7)
            | ((field & 7) << 4)
            | (piece % TENANT_RUNS) as u64;
        let top = |bits: u32| {
            if depth == 0 {
                0
            } else {
                u64::from(prefix) << (bits - u32::from(depth))
            }
        };
        if bytes[0] >> 4 > FORM_SHORT_BASE {
            IntHasher::short_hash((top(32) | low) as u32)
        } else {
            top(64) | low
        }
    }
}

impl Codec for IntCodec {
    const KIND: Kind = Kind::Int;
    const ENCODES_DEPTH: bool = true;

    #[inline]
    fn len_of(bytes: &[u8]) -> usize {
        match ENTRY_LENS[usize::from(bytes[0])] {
            0 => 1 + varint_len_at(&bytes[1..]) + value_bytes(bytes[0]),
            len => usize::from(len),
        }
    }

    fn hash_of(
        &self,
        _heap: &Heap,
        tenants: &Tenants,
        piece: usize,
        hint: u8,
        bytes: &[u8],
    ) -> u64 {
        if bytes[0] >> 4 == FORM_LITERAL {
            self.hasher.mix(varint::get(&bytes[1..]).0)
        } else {
            Self::hash_of_field(tenants, piece, hint, bytes)
        }
    }

    fn reencode(
        &self,
        bytes: &[u8],
        h: u64,
        at: Placement,
        out: &mut [u8; ENTRY_BUF_BYTES],
    ) -> usize {
        // A remainder-form entry was written so because its key's literal was longer than its
        // field; at a depth where the field is no longer (a split or a move), that still holds,
        // and the value's form and bytes depend on the key and value alone. So the entry is
        // rebuilt from the hash and its own value bytes, without recovering the key.
        let form = bytes[0] >> 4;
        if form != FORM_LITERAL {
            let short = form > FORM_SHORT_BASE;
            let (k, rest) = if short {
                (short_key_bytes(at.depth), short_rest_of(h, at.depth))
            } else {
                (key_bytes(at.depth), rest_of(h, at.depth))
            };
            if k <= field_bytes(bytes[0]) {
                let vlen = value_bytes(bytes[0]);
                let form = if short {
                    FORM_SHORT_BASE + k as u8
                } else {
                    k as u8
                };
                out[0] = (form << 4) | (bytes[0] & 15);
                varint::put_le(&mut out[1..], (rest << 3) | low_of(h), k);
                out[1 + k..1 + k + vlen].copy_from_slice(&bytes[bytes.len() - vlen..]);
                return 1 + k + vlen;
            }
        }
        let key = self.key_from(bytes, h);
        Self::encode(key, Self::value_of(bytes, key), h, at, out)
    }

    fn release(_heap: &mut Heap, _bytes: &[u8]) {}

    const UNIFORM_RUNS: bool = true;

    fn widths(&self, bytes: &[u8], h: u64, at: Placement) -> u128 {
        let key = self.key_from(bytes, h);
        widths_of(key, Self::value_of(bytes, key), at.depth)
    }

    fn write_width(
        &self,
        bytes: &[u8],
        h: u64,
        at: Placement,
        width: usize,
        out: &mut [u8; ENTRY_BUF_BYTES],
    ) -> usize {
        let key = self.key_from(bytes, h);
        encode_width(key, Self::value_of(bytes, key), h, at.depth, width, out)
    }
}

/// A u64 -> u64 map in heap pages; see the module doc for the entry format.
#[derive(Debug)]
pub struct IntMap {
    table: Table<IntCodec>,
}

impl IntMap {
    /// An empty map (one page) with the default config.
    pub fn new(heap: &mut Heap) -> Result<Self, MapError> {
        Self::with_config(heap, &Config::default())
    }

    pub fn with_config(heap: &mut Heap, config: &Config) -> Result<Self, MapError> {
        let codec = IntCodec {
            hasher: IntHasher::new(config.seed),
        };
        Ok(Self {
            table: Table::new(heap, codec, config)?,
        })
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.len() == 0
    }

    /// The hash of `key` and, if present, its entry and value (decoded where the key matched,
    /// so a lookup reads the run once).
    #[inline]
    fn find(&self, key: u64) -> (u64, Option<(crate::table::Loc, u64)>) {
        let h = self.table.codec.hasher.mix(key);
        (h, self.find_hashed(key, h))
    }

    #[inline]
    fn find_hashed(&self, key: u64, h: u64) -> Option<(crate::table::Loc, u64)> {
        let mut value = 0;
        let loc = self.table.find(h, |depth, bytes| {
            let (len, v) = entry_match(bytes, key, h, depth)?;
            value = v;
            Some(len)
        });
        loc.map(|loc| (loc, value))
    }

    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        self.find(key).1.map(|(_, value)| value)
    }

    /// Looks up every key of `keys` in order, calling `f(i, value)`: the same answers as
    /// [`IntMap::get`] per key, with the cache misses of several lookups overlapped
    /// (`Table::pipelined`). For batches: MGET-like commands, joins, bulk reads.
    #[inline]
    pub fn get_many(&self, keys: &[u64], mut f: impl FnMut(usize, Option<u64>)) {
        let hasher = self.table.codec.hasher;
        self.table.pipelined(
            keys.len(),
            |i| hasher.mix(keys[i]),
            |i, h| f(i, self.find_hashed(keys[i], h).map(|(_, v)| v)),
        );
    }

    pub fn contains_key(&self, key: u64) -> bool {
        self.get(key).is_some()
    }

    /// Inserts or overwrites; returns the previous value.
    pub fn insert(
        &mut self,
        heap: &mut Heap,
        key: u64,
        value: u64,
    ) -> Result<Option<u64>, MapError> {
        let (h, found) = self.find(key);
        let Some((loc, old)) = found else {
            self.table
                .insert_new(heap, h, |at, out| IntCodec::encode(key, value, h, at, out))?;
            self.check(heap);
            return Ok(None);
        };
        if old != value {
            // The entries of a run share one length: the new one takes the old one's if it can.
            let depth = self.table.placement_at(&loc).depth;
            let mut buf = [0u8; ENTRY_BUF_BYTES];
            if widths_of(key, value, depth) & (1 << loc.len) != 0 {
                let n = encode_width(key, value, h, depth, loc.len, &mut buf);
                let same_size = self.table.replace(&loc, &buf[..n]);
                assert!(same_size, "same-size replace always fits");
            } else {
                // Re-placed, the run is rewritten in a length both can take (make_room runs
                // first if the page lacks the room).
                self.table.remove_unmerged(&loc);
                self.table
                    .insert_new(heap, h, |at, out| IntCodec::encode(key, value, h, at, out))?;
            }
        }
        self.check(heap);
        Ok(Some(old))
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, heap: &mut Heap, key: u64) -> Option<u64> {
        let (loc, old) = self.find(key).1?;
        self.table.remove(heap, &loc);
        self.check(heap);
        Some(old)
    }

    /// Every (key, value), in page order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.table
            .entries()
            .map(|(page, piece, hint, bytes)| self.table.codec.pair_of(page, piece, hint, bytes))
    }

    /// One SCAN step (see `table.rs`): calls `f` for a bucket's entries, returns the next cursor
    /// (0 = done). Start with 0.
    pub fn scan(&self, cursor: u64, mut f: impl FnMut(u64, u64)) -> u64 {
        self.table.scan(cursor, |page, piece, hint, bytes| {
            let (key, value) = self.table.codec.pair_of(page, piece, hint, bytes);
            f(key, value);
        })
    }

    /// A random entry chosen by the random number `r`.
    pub fn sample(&self, r: u64) -> Option<(u64, u64)> {
        self.table.sample(r, |page, piece, hint, bytes| {
            self.table.codec.pair_of(page, piece, hint, bytes)
        })
    }

    /// Heap bytes held (pages) plus the directory and page list.
    pub fn memory_bytes(&self) -> usize {
        self.table.memory_bytes()
    }

    /// Pages, global depth and fill, for tests and INFO.
    pub fn shape(&self) -> crate::Shape {
        self.table.shape()
    }

    /// Used bytes of the pages over their payload capacity (O(1)).
    pub fn fill_ratio(&self) -> f64 {
        self.table.fill_ratio()
    }

    /// Whether [`IntMap::compact_step`] is worth calling: the pages would hold the entries in
    /// one page fewer at 3/4 fill, or a compaction pass is under way. O(1).
    pub fn sparse(&self) -> bool {
        self.table.sparse()
    }

    /// One bounded step of compaction (`table.rs`, "Compaction"): merges buddy buckets and
    /// moves buckets out of sparse pages, freeing the pages that empty, for `budget` work
    /// units (a bucket visited, merged or moved each; at most a page's bytes copied per unit).
    /// A SCAN running across steps still returns every key present throughout.
    pub fn compact_step(&mut self, heap: &mut Heap, budget: usize) -> crate::CompactProgress {
        let progress = self.table.compact_step(heap, budget);
        self.check(heap);
        progress
    }

    /// Mean runs probed by a hit and by a miss: 1 and 1, every entry living in its home run
    /// (diagnostics for INFO and benchmarks).
    pub fn probe_stats(&self, heap: &Heap) -> (f64, f64) {
        self.table.probe_stats(heap)
    }

    /// Removes everything, keeping one empty page.
    pub fn clear(&mut self, heap: &mut Heap) -> Result<(), MapError> {
        self.table.free_all(heap);
        self.table = Table::new(heap, self.table.codec, &self.table.config())?;
        Ok(())
    }

    /// Frees every page. Dropping a map without this leaks its pages into the heap.
    pub fn destroy(mut self, heap: &mut Heap) {
        self.table.free_all(heap);
    }

    /// Full invariant check (every page and entry); see `table.rs`.
    pub fn validate(&self, heap: &Heap) -> Result<(), String> {
        self.table.validate(heap)
    }

    #[inline]
    fn check(&self, heap: &Heap) {
        if cfg!(feature = "expensive-checks") {
            self.validate(heap).expect("IntMap invariants");
        }
        let _ = heap;
    }

    /// The hash the map uses for `key` (tests build colliding keys from it).
    #[doc(hidden)]
    pub fn hash_of_key(&self, key: u64) -> u64 {
        self.table.codec.hasher.mix(key)
    }

    /// The key at or above 2^32 whose hash is `h` (inverse of `hash_of_key` for such keys).
    #[doc(hidden)]
    pub fn key_of_hash(&self, h: u64) -> u64 {
        self.table.codec.hasher.unmix(h)
    }

    /// The key below 2^32 whose permuted value is `x` (its hash is `x`'s short hash).
    #[doc(hidden)]
    pub fn key_of_short(&self, x: u32) -> u64 {
        u64::from(self.table.codec.hasher.unperm32(x))
    }
}

/// A set of u64: an [`IntMap`] whose values are all 0 (which take no bytes).
#[derive(Debug)]
pub struct IntSet {
    map: IntMap,
}

impl IntSet {
    pub fn new(heap: &mut Heap) -> Result<Self, MapError> {
        Ok(Self {
            map: IntMap::new(heap)?,
        })
    }

    pub fn with_config(heap: &mut Heap, config: &Config) -> Result<Self, MapError> {
        Ok(Self {
            map: IntMap::with_config(heap, config)?,
        })
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn contains(&self, key: u64) -> bool {
        self.map.contains_key(key)
    }

    /// Adds `key`; true if it was not there.
    pub fn insert(&mut self, heap: &mut Heap, key: u64) -> Result<bool, MapError> {
        Ok(self.map.insert(heap, key, 0)?.is_none())
    }

    /// Removes `key`; true if it was there.
    pub fn remove(&mut self, heap: &mut Heap, key: u64) -> bool {
        self.map.remove(heap, key).is_some()
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.map.iter().map(|(k, _)| k)
    }

    pub fn scan(&self, cursor: u64, mut f: impl FnMut(u64)) -> u64 {
        self.map.scan(cursor, |k, _| f(k))
    }

    pub fn sample(&self, r: u64) -> Option<u64> {
        self.map.sample(r).map(|(k, _)| k)
    }

    pub fn memory_bytes(&self) -> usize {
        self.map.memory_bytes()
    }

    /// See [`IntMap::sparse`].
    pub fn sparse(&self) -> bool {
        self.map.sparse()
    }

    /// See [`IntMap::compact_step`].
    pub fn compact_step(&mut self, heap: &mut Heap, budget: usize) -> crate::CompactProgress {
        self.map.compact_step(heap, budget)
    }

    pub fn destroy(self, heap: &mut Heap) {
        self.map.destroy(heap);
    }

    pub fn validate(&self, heap: &Heap) -> Result<(), String> {
        self.map.validate(heap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// Keys of both families and literal-sized ones, values of every form.
    fn pair(rng: &mut SmallRng) -> (u64, u64) {
        let key = match rng.gen_range(0..4) {
            0 => rng.gen_range(0..300),
            1 => rng.r#gen::<u64>() >> rng.gen_range(32..64),
            2 => rng.r#gen::<u64>() >> rng.gen_range(0..32),
            _ => u64::MAX - rng.gen_range(0..300),
        };
        let value = match rng.gen_range(0..5) {
            0 => 0,
            1 => key,
            2 => key.wrapping_add(rng.gen_range(0..1 << 20)),
            3 => rng.r#gen::<u64>() >> rng.gen_range(0..64),
            _ => u64::MAX,
        };
        (key, value)
    }

    #[test]
    fn every_width_an_entry_can_take_encodes_to_it_and_decodes_back() {
        let mut rng = SmallRng::seed_from_u64(7);
        let hasher = IntHasher::new(Some(7));
        for _ in 0..20_000 {
            let (key, value) = pair(&mut rng);
            let h = hasher.mix(key);
            let depth = rng.gen_range(0..=32);
            let mut out = [0u8; ENTRY_BUF_BYTES];
            let minimal = IntCodec::encode(key, value, h, Placement { depth }, &mut out);
            let mask = widths_of(key, value, depth);
            assert_eq!(
                mask.trailing_zeros() as usize,
                minimal,
                "{key} {value} {depth}"
            );
            assert_ne!(mask & (1 << WIDTH_COMMON), 0);
            for width in 0..32 {
                if mask & (1 << width) == 0 {
                    continue;
                }
                let mut out = [0xAAu8; ENTRY_BUF_BYTES];
                assert_eq!(encode_width(key, value, h, depth, width, &mut out), width);
                assert_eq!(
                    IntCodec::len_of(&out),
                    width,
                    "{key} {value} {depth} {width}"
                );
                assert_eq!(entry_match(&out, key, h, depth), Some((width, value)));
                assert_eq!(IntCodec::value_of(&out[..width], key), value);
            }
        }
    }

    #[test]
    fn padded_varints_read_back() {
        let mut buf = [0u8; varint::LEN_MAX];
        for v in [0, 1, 127, 128, 1 << 32, u64::MAX >> 1, u64::MAX] {
            for n in varint::len(v)..=varint::LEN_MAX {
                varint::put_padded(&mut buf, v, n);
                assert_eq!(varint::get(&buf), (v, n));
            }
        }
    }
}
