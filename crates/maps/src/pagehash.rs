//! `PageHash`: byte-string keys to tagged byte-string values, in the extendible hash of
//! `table.rs`. The keyspace of a database and every large hash/set is one of these.
//!
//! ```text
//!  entry (in its home run; its hint byte is in the run's hint array)
//!
//!  short form: 3 <= key len <= 16, value len <= 16, both inline
//!  +------+-------------------------------+-----------+-------------+
//!  | meta | lens = (klen - 3) * 17 + vlen | key bytes | value bytes |
//!  +------+-------------------------------+-----------+-------------+
//!    1 B    1 B, 0..=237
//!
//!  long form: anything else
//!  +------+--------------------+---------------+---------------+---------------+---------------+
//!  | meta | 0xFC | ko | vo<<1 | key len varint| key or handle | val len varint| value | handle|
//!  +------+--------------------+---------------+---------------+---------------+---------------+
//!    1 B    ko/vo: key/value out of line         inline: len bytes; out of line: 5-byte handle
//!
//!  meta (owned by the store crate; the map stores it, never interprets it)
//!   bits 0..=3  value type / encoding tag   bit 4  has TTL   bits 5..=6  access level   bit 7  epoch
//!
//!  key blob (out of line):   [hash: u64 LE][key bytes]      8 + key len bytes
//!  value blob (out of line):  [value bytes][slack]           capacity_for(value len) bytes
//! ```
//!
//! An entry is at most `ENTRY_BYTES_MAX` (120) bytes. The key is inline unless it cannot fit
//! with the smallest form of the value; the value is inline whenever it fits: runs pack entries
//! byte by byte, so an inline value costs exactly its length, always less than a blob. Keys and
//! values of any length (0 bytes to many MiB) work.
//!
//! Why a short form: the keyspace's typical entry (a 16-byte key, a value of up to 16 bytes:
//! a short string, or an integer as varint bytes with its tag in `meta`) then spends one byte
//! on both lengths. Long-form entries pay one byte more than two bare varints would.
//!
//! Bytes per entry for 16-byte keys and values: 1 + 1 + 16 + 16 = 34 + 1 hint = 35 B in a run;
//! pages hold a 7789-byte run area behind 403 B of header, run index and group ends (`page.rs`),
//! so at the measured ~93.6% fill a page holds ~208 such entries: ~39.4 B/entry plus ~0.6 B of
//! directory and page list, 39.9 B measured (sections 5 and 8 of docs/page-format.md). Redis for the same: dictEntry 24 -> 32 + bucket
//! 8..16 + key sds (3 + 16 + 1 -> 32) + robj with embedded value (16 + 3 + 16 + 1 -> 48)
//! ~ 120..128 B.
//!
//! # Value blobs grow in place
//! `edit_value` resizes a value where it is (APPEND, SETRANGE, SETBIT): an out-of-line value's
//! blob grows by `Heap::realloc`, which stays in place or remaps when it can, so a value built by
//! appends is not copied whole on every append. For that to cost amortised O(1) per appended
//! byte a blob needs slack, and for the slack to need no stored capacity it is a pure function of
//! the value's length, which every path that allocates, frees, resizes, moves, accounts or
//! validates a value blob recomputes:
//!
//! ```text
//!  capacity_for(len) = len                                  len <= 32 KiB  (VALUE_EXACT_MAX_BYTES)
//!                    = ceil(len / step) * step              len >  32 KiB
//!                      step = 2^(floor(log2(len - 1)) - 3)  (1/8 of the power of two below len)
//!
//!  0 <= capacity_for(len) - len < len / 8            (slack under 12.5%; 0 in the exact band)
//!  a <= b  =>  capacity_for(a) <= capacity_for(b)     (monotone; every 2^k is a grid point)
//! ```
//!
//! Up to 32 KiB the heap's slab classes already round a request to the same grid (eight classes
//! per doubling, `heap/src/class.rs`), so a blob is asked for at its exact length and a realloc
//! within its class stays in its slot. Past it the steps coarsen with the size: 4 KiB from
//! 32 KiB, 128 KiB from 1 MiB, 32 MiB from 256 MiB. Growth by appends crosses eight grid points
//! per doubling; at each the heap resizes in place (a group into the free run after it, a large
//! region within or past its megablocks) or moves the blob (a copy of at most 16 times the bytes
//! appended since the last crossing, or `mremap` from 16 MiB, no copy): amortised O(1) per
//! byte, and a 512 MiB value holds 512 MiB. Measured (`examples/value_growth.rs`): 512 MiB by
//! 1 MiB appends in 0.41 s at a 515 MiB peak RSS (the copying path: 104 s, 1027 MiB); 100k
//! appends of 10 B at 110-240 ns each, flat (copying: 2.3 µs rising to 46 µs).
//!
//! Rejected: doubling below a bound (sds's policy below 1 MiB). The capacity is a function of
//! the length, so an insert pays it too: a 33 KiB value SET once would hold 64 KiB for life,
//! where sds pays that slack only after an append because it stores its capacity. Storing one
//! would cost a varint per out-of-line entry; an eighth of slack costs at most what the heap's
//! own size classes cost, and insert and edit then share one rule.
//!
//! Failure: an `Err` (out of memory, `Full`) from `edit_value` or an overwrite leaves the map as
//! it was. Blobs are allocated or resized first and the entry rewritten last; an entry that
//! must grow past its page's room is inserted anew before the old one is removed (`rewrite`);
//! and when a blob must be resized after its entry grew (a longer length varint), the entry
//! takes its new size first, naming the old blob, and is restored if the heap refuses.
//!
//! # Active defragmentation
//! `defrag_step` walks the buckets with a SCAN cursor and moves every key or value blob that
//! `Heap::defrag_hint` flags (a slot in a sparse slab) to a fresh allocation of the same size,
//! writing its new handle into the entry in place: the entry keeps its length and hash, so no
//! bucket changes and the SCAN guarantee holds across steps. Pages are whole heap blocks, not
//! slab slots; compaction (`compact_step`) is what gives them back.

use crate::hash::BytesHasher;
use crate::page::{ENTRY_BUF_BYTES, ENTRY_BYTES_MAX, Kind, Tenants};
use crate::raw::{self, HANDLE_BYTES};
use crate::table::{Codec, Config, Loc, Placement, Table};
use crate::{DefragCounts, MapError, Meta, varint};
use heap::Heap;

/// Where a key or value is, inside an entry.
#[derive(Clone, Copy, Debug)]
struct Field {
    len: usize,
    out_of_line: bool,
    /// Offset in the entry of the bytes (inline) or the handle.
    at: usize,
}

impl Field {
    fn stored_len(self) -> usize {
        if self.out_of_line {
            HANDLE_BYTES
        } else {
            self.len
        }
    }
}

/// Shortest key of the short form.
const SHORT_KEY_MIN: usize = 3;
/// Longest key and value of the short form.
const SHORT_LEN_MAX: usize = 16;
/// Values of the short form's value length (0..=16).
const SHORT_VALUE_LENS: usize = SHORT_LEN_MAX + 1;
/// Lens bytes below this are short forms.
const SHORT_CODES: u8 = ((SHORT_LEN_MAX - SHORT_KEY_MIN + 1) * SHORT_VALUE_LENS) as u8;
/// Lens byte of the long form (ORed with 1 = key out of line, 2 = value out of line).
const LONG_FORM: u8 = 0xFC;
const _: () = assert!(SHORT_CODES <= LONG_FORM);

/// Per lens byte of the short form: (key length, whole entry length); (0, 0) for the others.
/// A load instead of a division by 17 on every entry a walk or a make-room pass decodes.
static SHORT_LENS: [(u8, u8); 256] = {
    let mut table = [(0u8, 0u8); 256];
    let mut lens = 0;
    while lens < SHORT_CODES as usize {
        let klen = lens / SHORT_VALUE_LENS + SHORT_KEY_MIN;
        let vlen = lens % SHORT_VALUE_LENS;
        table[lens] = (klen as u8, (2 + klen + vlen) as u8);
        lens += 1;
    }
    table
};

/// Value blobs up to this length are allocated at their exact length (see the module doc).
pub const VALUE_EXACT_MAX_BYTES: usize = heap::SMALL_MAX_BYTES;
/// Past the exact band a blob's capacity is a multiple of 1/2^3 of the power of two below its
/// length: eight grid points per doubling, slack under 1/8.
const GRID_STEPS_LOG2: u32 = 3;

/// Bytes of the blob that holds an out-of-line value of `len` bytes: `len` up to
/// [`VALUE_EXACT_MAX_BYTES`], then `len` rounded up to 1/8 of the power of two below it (module
/// doc, "Value blobs grow in place"). Pure and monotone, so it never needs storing.
pub fn capacity_for(len: usize) -> usize {
    if len <= VALUE_EXACT_MAX_BYTES {
        return len;
    }
    let below_log2 = usize::BITS - 1 - (len - 1).leading_zeros();
    let step = 1usize << (below_log2 - GRID_STEPS_LOG2);
    // Only a length within a step of `usize::MAX` overflows; no heap can hold it anyway.
    len.checked_next_multiple_of(step).unwrap_or(usize::MAX)
}

/// Decodes the layout of an entry.
#[inline]
fn parse(bytes: &[u8]) -> (Field, Field) {
    let lens = bytes[1];
    if lens < SHORT_CODES {
        let (klen, len) = SHORT_LENS[usize::from(lens)];
        let (klen, len) = (usize::from(klen), usize::from(len));
        let key = Field {
            len: klen,
            out_of_line: false,
            at: 2,
        };
        let value = Field {
            len: len - 2 - klen,
            out_of_line: false,
            at: 2 + klen,
        };
        return (key, value);
    }
    debug_assert_eq!(lens & !3, LONG_FORM);
    let (klen, kn) = varint::get(&bytes[2..]);
    let key = Field {
        len: klen as usize,
        out_of_line: lens & 1 != 0,
        at: 2 + kn,
    };
    let v_at = key.at + key.stored_len();
    let (vlen, vn) = varint::get(&bytes[v_at..]);
    let value = Field {
        len: vlen as usize,
        out_of_line: lens & 2 != 0,
        at: v_at + vn,
    };
    (key, value)
}

/// Bytes of a field, wherever they live.
#[inline]
fn field_bytes<'a>(heap: &'a Heap, entry: &'a [u8], field: Field, blob_skip: usize) -> &'a [u8] {
    if field.out_of_line {
        let handle = raw::get_handle(&entry[field.at..]);
        // SAFETY: an out-of-line field's handle names a live blob of `blob_skip + len` bytes
        // owned by the entry, which the caller's borrow of the map keeps alive.
        let blob = unsafe { raw::blob(heap, handle, blob_skip + field.len) };
        &blob[blob_skip..]
    } else {
        &entry[field.at..field.at + field.len]
    }
}

/// Bytes of a key blob (hash + key).
const KEY_BLOB_HEADER_BYTES: usize = 8;

/// The byte-string entry codec.
#[derive(Clone, Debug)]
pub struct BytesCodec {
    hasher: BytesHasher,
    hash_mask: u64,
}

impl BytesCodec {
    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash(key) & self.hash_mask
    }
}

impl Codec for BytesCodec {
    const KIND: Kind = Kind::Bytes;
    const ENCODES_DEPTH: bool = false;

    #[inline]
    fn len_of(bytes: &[u8]) -> usize {
        let short = SHORT_LENS[usize::from(bytes[1])].1;
        if short != 0 {
            return usize::from(short);
        }
        let (_, value) = parse(bytes);
        value.at + value.stored_len()
    }

    fn hash_of(&self, heap: &Heap, _: &Tenants, _piece: usize, _hint: u8, bytes: &[u8]) -> u64 {
        let (key, _) = parse(bytes);
        if key.out_of_line {
            let handle = raw::get_handle(&bytes[key.at..]);
            // SAFETY: a key blob is live while its entry is, and starts with the 8-byte hash.
            let blob = unsafe { raw::blob(heap, handle, KEY_BLOB_HEADER_BYTES) };
            u64::from_le_bytes(blob.try_into().expect("8 bytes"))
        } else {
            self.hash(&bytes[key.at..key.at + key.len])
        }
    }

    fn reencode(
        &self,
        bytes: &[u8],
        _: u64,
        _: Placement,
        out: &mut [u8; ENTRY_BUF_BYTES],
    ) -> usize {
        out[..bytes.len()].copy_from_slice(bytes);
        bytes.len()
    }

    fn release(heap: &mut Heap, bytes: &[u8]) {
        let (key, value) = parse(bytes);
        let sizes = [
            (key, KEY_BLOB_HEADER_BYTES + key.len),
            (value, capacity_for(value.len)),
        ];
        for (field, size) in sizes {
            if field.out_of_line {
                // SAFETY: the entry owns this blob of exactly `size` bytes (a key blob's header
                // and key; a value blob's `capacity_for` its length); the entry is being
                // removed, so the blob is freed once and never read again.
                unsafe { raw::blob_free(heap, raw::get_handle(&bytes[field.at..]), size) };
            }
        }
    }
}

/// A value as stored: its meta byte and bytes (borrowed from the page or the heap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueRef<'a> {
    pub meta: Meta,
    pub bytes: &'a [u8],
}

/// Byte-string map in heap pages; see the module doc for the entry format.
#[derive(Debug)]
pub struct PageHash {
    table: Table<BytesCodec>,
    /// Usable bytes of the out-of-line blobs this map owns.
    blob_bytes: usize,
}

/// Where a key or value of an entry being written is: its bytes, or the handle of its blob.
#[derive(Clone, Copy, Debug)]
enum Stored<'a> {
    Inline(&'a [u8]),
    Blob(u64),
}

/// How a resized out-of-line value gets its bytes (`PageHash::resize_blob_value`).
enum Fill<'a, F> {
    /// Kept up to the new length, zero past the old one, then edited by `F`.
    Edit(F),
    /// Replaced by these bytes (an overwrite): nothing is zeroed first.
    Copy(&'a [u8]),
}

/// Writes a length field and the key/value (inline) or a handle; returns bytes written.
fn put_field(out: &mut [u8], len: usize, stored: Stored<'_>) -> usize {
    let n = varint::put(out, len as u64);
    match stored {
        Stored::Blob(handle) => {
            raw::put_handle(&mut out[n..], handle);
            n + HANDLE_BYTES
        }
        Stored::Inline(bytes) => {
            debug_assert_eq!(bytes.len(), len);
            out[n..n + len].copy_from_slice(bytes);
            n + len
        }
    }
}

fn inline_len(len: usize) -> usize {
    varint::len(len as u64) + len
}

fn handle_len(len: usize) -> usize {
    varint::len(len as u64) + HANDLE_BYTES
}

fn short_fits(klen: usize, vlen: usize) -> bool {
    (SHORT_KEY_MIN..=SHORT_LEN_MAX).contains(&klen) && vlen <= SHORT_LEN_MAX
}

/// Where an entry's key and value go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    key_out_of_line: bool,
    value_out_of_line: bool,
}

/// The placement rule of the module doc: a key goes out of line when it cannot fit with the
/// smallest form of its value (or already has a blob, which an overwrite keeps); the value is
/// inline whenever the entry then stays within `ENTRY_BYTES_MAX`.
fn layout(klen: usize, key_has_blob: bool, vlen: usize) -> Layout {
    if !key_has_blob && short_fits(klen, vlen) {
        return Layout {
            key_out_of_line: false,
            value_out_of_line: false,
        };
    }
    let smallest_value = inline_len(vlen).min(handle_len(vlen));
    let key_out_of_line = key_has_blob || 2 + inline_len(klen) + smallest_value > ENTRY_BYTES_MAX;
    let at = 2 + if key_out_of_line {
        handle_len(klen)
    } else {
        inline_len(klen)
    };
    Layout {
        key_out_of_line,
        value_out_of_line: at + inline_len(vlen) > ENTRY_BYTES_MAX,
    }
}

/// Encodes an entry whose key and value are placed already (as [`layout`] says); returns its
/// length. The short form is used exactly when both are inline and short enough.
fn encode(
    buf: &mut [u8; ENTRY_BUF_BYTES],
    meta: Meta,
    (klen, key): (usize, Stored<'_>),
    (vlen, value): (usize, Stored<'_>),
) -> usize {
    buf[0] = meta.0;
    if let (Stored::Inline(k), Stored::Inline(v)) = (key, value)
        && short_fits(klen, vlen)
    {
        buf[1] = ((klen - SHORT_KEY_MIN) * SHORT_VALUE_LENS + vlen) as u8;
        buf[2..2 + klen].copy_from_slice(k);
        buf[2 + klen..2 + klen + vlen].copy_from_slice(v);
        return 2 + klen + vlen;
    }
    let at = 2 + put_field(&mut buf[2..], klen, key);
    let n = at + put_field(&mut buf[at..], vlen, value);
    let out_of_line = |s: Stored<'_>| u8::from(matches!(s, Stored::Blob(_)));
    buf[1] = LONG_FORM | out_of_line(key) | (out_of_line(value) << 1);
    debug_assert!(n <= ENTRY_BYTES_MAX);
    n
}

impl PageHash {
    pub fn new(heap: &mut Heap) -> Result<Self, MapError> {
        Self::with_config(heap, &Config::default())
    }

    pub fn with_config(heap: &mut Heap, config: &Config) -> Result<Self, MapError> {
        let codec = BytesCodec {
            hasher: BytesHasher::new(config.seed),
            hash_mask: config.hash_mask,
        };
        Ok(Self {
            table: Table::new(heap, codec, config)?,
            blob_bytes: 0,
        })
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.len() == 0
    }

    #[inline]
    fn find(&self, heap: &Heap, key: &[u8]) -> (u64, Option<Loc>) {
        let h = self.table.codec.hash(key);
        (h, self.find_hashed(heap, key, h))
    }

    #[inline]
    fn find_hashed(&self, heap: &Heap, key: &[u8], h: u64) -> Option<Loc> {
        self.table.find(h, |_, entry| {
            let (k, v) = parse(entry);
            let hit = k.len == key.len()
                && crate::hint::key_eq(field_bytes(heap, entry, k, KEY_BLOB_HEADER_BYTES), key);
            hit.then_some(v.at + v.stored_len())
        })
    }

    fn value_ref<'a>(heap: &'a Heap, entry: &'a [u8]) -> ValueRef<'a> {
        let (_, v) = parse(entry);
        ValueRef {
            meta: Meta(entry[0]),
            bytes: field_bytes(heap, entry, v, 0),
        }
    }

    fn key_ref<'a>(heap: &'a Heap, entry: &'a [u8]) -> &'a [u8] {
        let (k, _) = parse(entry);
        field_bytes(heap, entry, k, KEY_BLOB_HEADER_BYTES)
    }

    /// Hash of `key` for [`PageHash::prefetch`] (the hash every lookup of `key` computes).
    #[inline]
    pub fn hash_key(&self, key: &[u8]) -> u64 {
        self.table.codec.hash(key)
    }

    /// Stage `stage` (0, 1, 2) of a lookup of the key with hash `h`, done ahead: see
    /// `Table::prefetch`. A hint only: it changes nothing and costs a few loads.
    #[inline]
    pub fn prefetch(&self, h: u64, stage: u8) {
        self.table.prefetch(h, stage);
    }

    #[inline]
    pub fn get<'a>(&'a self, heap: &'a Heap, key: &[u8]) -> Option<ValueRef<'a>> {
        let (_, loc) = self.find(heap, key);
        loc.map(|loc| Self::value_ref(heap, self.table.entry(&loc)))
    }

    /// Looks up every key of `keys` in order, calling `f(i, value)`: the same answers as
    /// [`PageHash::get`] per key, with the cache misses of several lookups overlapped
    /// (`Table::pipelined`). For batches: MGET-like commands, bulk reads.
    #[inline]
    pub fn get_many<'a, K: AsRef<[u8]>>(
        &'a self,
        heap: &'a Heap,
        keys: &[K],
        mut f: impl FnMut(usize, Option<ValueRef<'a>>),
    ) {
        self.table.pipelined(
            keys.len(),
            |i| self.table.codec.hash(keys[i].as_ref()),
            |i, h| {
                let loc = self.find_hashed(heap, keys[i].as_ref(), h);
                f(
                    i,
                    loc.map(|loc| Self::value_ref(heap, self.table.entry(&loc))),
                );
            },
        );
    }

    pub fn contains_key(&self, heap: &Heap, key: &[u8]) -> bool {
        self.find(heap, key).1.is_some()
    }

    /// Inserts or overwrites; a new entry gets meta 0, an overwritten one keeps its meta.
    /// Returns whether the key existed.
    pub fn insert(&mut self, heap: &mut Heap, key: &[u8], value: &[u8]) -> Result<bool, MapError> {
        self.upsert(heap, key, value, None, |_| {})
            .map(|old| old.is_some())
    }

    /// Inserts or overwrites, setting the meta byte. Returns whether the key existed.
    pub fn insert_with_meta(
        &mut self,
        heap: &mut Heap,
        key: &[u8],
        value: &[u8],
        meta: Meta,
    ) -> Result<bool, MapError> {
        self.upsert(heap, key, value, Some(meta), |_| {})
            .map(|old| old.is_some())
    }

    /// Inserts or overwrites with `meta`, returning the meta of the entry it replaced (`None`
    /// when the key was new): one lookup where `meta` followed by `insert_with_meta` costs two.
    pub fn replace_with_meta(
        &mut self,
        heap: &mut Heap,
        key: &[u8],
        value: &[u8],
        meta: Meta,
    ) -> Result<Option<Meta>, MapError> {
        self.upsert(heap, key, value, Some(meta), |_| {})
    }

    /// `replace_with_meta` that first shows the value it overwrites to `on_old` (the keyspace
    /// frees the object an overwritten handle points to).
    pub fn replace_with_meta_then(
        &mut self,
        heap: &mut Heap,
        key: &[u8],
        value: &[u8],
        meta: Meta,
        on_old: impl FnOnce(ValueRef<'_>),
    ) -> Result<Option<Meta>, MapError> {
        self.upsert(heap, key, value, Some(meta), on_old)
    }

    fn upsert(
        &mut self,
        heap: &mut Heap,
        key: &[u8],
        value: &[u8],
        meta: Option<Meta>,
        on_old: impl FnOnce(ValueRef<'_>),
    ) -> Result<Option<Meta>, MapError> {
        let (h, loc) = self.find(heap, key);
        let mut buf = [0u8; ENTRY_BUF_BYTES];
        let Some(loc) = loc else {
            let n = self.build_entry(
                heap,
                h,
                key,
                None,
                value,
                meta.unwrap_or_default(),
                &mut buf,
            )?;
            let result = self.table.insert_new(heap, h, |_, out| {
                out[..n].copy_from_slice(&buf[..n]);
                n
            });
            if let Err(e) = result {
                self.release(heap, &buf[..n]);
                return Err(e);
            }
            self.check(heap);
            return Ok(None);
        };
        on_old(Self::value_ref(heap, self.table.entry(&loc)));
        let old_meta = self.overwrite(heap, h, &loc, key, value, meta)?;
        Ok(Some(old_meta))
    }

    /// Writes the value of `key` from its current one with one lookup: `f` sees the old value
    /// (`None` if `key` is absent) and appends the new one to `out` (cleared first), returning
    /// its meta, or returns `None` to leave the map as it is. Returns whether `f` wrote.
    pub fn upsert_with(
        &mut self,
        heap: &mut Heap,
        key: &[u8],
        out: &mut Vec<u8>,
        f: impl FnOnce(Option<ValueRef<'_>>, &mut Vec<u8>) -> Option<Meta>,
    ) -> Result<bool, MapError> {
        let (h, loc) = self.find(heap, key);
        out.clear();
        let old = loc
            .as_ref()
            .map(|loc| Self::value_ref(heap, self.table.entry(loc)));
        let Some(meta) = f(old, out) else {
            return Ok(false);
        };
        if let Some(loc) = loc {
            self.overwrite(heap, h, &loc, key, out, Some(meta))?;
            return Ok(true);
        }
        let mut buf = [0u8; ENTRY_BUF_BYTES];
        let n = self.build_entry(heap, h, key, None, out, meta, &mut buf)?;
        let result = self.table.insert_new(heap, h, |_, slot| {
            slot[..n].copy_from_slice(&buf[..n]);
            n
        });
        if let Err(e) = result {
            self.release(heap, &buf[..n]);
            return Err(e);
        }
        self.check(heap);
        Ok(true)
    }

    /// Resizes the value of `key` to `new_len` bytes in place and lets `f` edit it: the value
    /// keeps its first `min(old, new_len)` bytes, bytes past the old length are zero, the meta
    /// byte is kept, and `f` gets all `new_len` bytes (APPEND, SETRANGE, SETBIT on big strings).
    /// Returns false, doing nothing, if `key` is absent.
    ///
    /// An out-of-line value's blob is resized by `Heap::realloc` to `capacity_for(new_len)`
    /// bytes, so growing a value by appends costs amortised O(1) per byte (module doc); a value
    /// that no longer fits in its entry moves out of line, and one that fits again moves back in.
    ///
    /// On `Err` (out of memory, or `Full`) the entry is unchanged. `f` may then have run on a
    /// scratch copy of a short value, whose edit is dropped.
    pub fn edit_value(
        &mut self,
        heap: &mut Heap,
        key: &[u8],
        new_len: usize,
        f: impl FnOnce(&mut [u8]),
    ) -> Result<bool, MapError> {
        let (h, loc) = self.find(heap, key);
        let Some(loc) = loc else { return Ok(false) };
        let mut old = [0u8; ENTRY_BUF_BYTES];
        old[..loc.len].copy_from_slice(self.table.entry(&loc));
        let old = &old[..loc.len];
        let (k, v) = parse(old);
        if v.out_of_line && layout(k.len, k.out_of_line, new_len).value_out_of_line {
            let meta = Meta(old[0]);
            self.resize_blob_value(heap, (h, key), &loc, old, new_len, meta, Fill::Edit(f))?;
        } else {
            self.edit_moving_value(heap, (h, key), &loc, old, new_len, f)?;
        }
        self.check(heap);
        Ok(true)
    }

    /// Lets `f` edit the meta byte and the value bytes of `key` where they are, with one lookup
    /// and no length change (a register of a dense HyperLogLog, a bit of a bitmap that does not
    /// grow): an out-of-line value's blob is handed over as is, an inline value is edited in a
    /// copy of its entry that then replaces the entry at the same size. `None` if `key` is
    /// absent; the meta byte is the store's, so `f` may change it as it sees fit.
    pub fn edit_in_place<R>(
        &mut self,
        heap: &mut Heap,
        key: &[u8],
        f: impl FnOnce(&mut Meta, &mut [u8]) -> R,
    ) -> Option<R> {
        let (_, loc) = self.find(heap, key);
        let loc = loc?;
        let mut entry = [0u8; ENTRY_BUF_BYTES];
        entry[..loc.len].copy_from_slice(self.table.entry(&loc));
        let (_, v) = parse(&entry[..loc.len]);
        let mut meta = Meta(entry[0]);
        let out = if v.out_of_line {
            let handle = raw::get_handle(&entry[v.at..]);
            // SAFETY: the entry owns this blob with its first `v.len` bytes initialised, and
            // `&mut self` keeps every other reference to it away while `f` runs.
            f(&mut meta, unsafe { raw::blob_mut(heap, handle, v.len) })
        } else {
            f(&mut meta, &mut entry[v.at..v.at + v.len])
        };
        if !v.out_of_line || meta.0 != entry[0] {
            entry[0] = meta.0;
            let same_size = self.table.replace(&loc, &entry[..loc.len]);
            assert!(same_size, "same-size replace always fits");
        }
        self.check(heap);
        Some(out)
    }

    /// `edit_value` for a value that is inline before or after: a short value is edited in a
    /// scratch copy and the entry rewritten; a value leaving the entry gets a fresh blob, which
    /// `f` edits once the entry names it; a blob left behind is freed last.
    fn edit_moving_value(
        &mut self,
        heap: &mut Heap,
        (h, key): (u64, &[u8]),
        loc: &Loc,
        old: &[u8],
        new_len: usize,
        f: impl FnOnce(&mut [u8]),
    ) -> Result<(), MapError> {
        let (k, v) = parse(old);
        let lay = layout(k.len, k.out_of_line, new_len);
        let (key_stored, fresh_key) = self.place_key(heap, (h, key), old, lay)?;
        let keep = v.len.min(new_len);
        let meta = Meta(old[0]);
        let mut buf = [0u8; ENTRY_BUF_BYTES];
        if lay.value_out_of_line {
            // Only an inline value gets here (a blob that stays one is resized instead).
            let prefix = &old[v.at..v.at + keep];
            let handle = match self.alloc_value_blob(heap, prefix, new_len) {
                Ok(handle) => handle,
                Err(e) => {
                    self.discard_key_blob(heap, fresh_key, k.len);
                    return Err(e);
                }
            };
            let n = encode(
                &mut buf,
                meta,
                (k.len, key_stored),
                (new_len, Stored::Blob(handle)),
            );
            if let Err(e) = self.rewrite(heap, h, loc, &buf[..n]) {
                self.free_value_blob(heap, handle, new_len);
                self.discard_key_blob(heap, fresh_key, k.len);
                return Err(e);
            }
            // SAFETY: the entry just written owns the blob, whose first `new_len` bytes
            // `blob_alloc` initialised; `&mut self` keeps every other reference to it away.
            f(unsafe { raw::blob_mut(heap, handle, new_len) });
            return Ok(());
        }
        let mut value = [0u8; ENTRY_BUF_BYTES];
        value[..keep].copy_from_slice(&field_bytes(heap, old, v, 0)[..keep]);
        f(&mut value[..new_len]);
        let inline = Stored::Inline(&value[..new_len]);
        let n = encode(&mut buf, meta, (k.len, key_stored), (new_len, inline));
        if let Err(e) = self.rewrite(heap, h, loc, &buf[..n]) {
            self.discard_key_blob(heap, fresh_key, k.len);
            return Err(e);
        }
        if v.out_of_line {
            self.free_value_blob(heap, raw::get_handle(&old[v.at..]), v.len);
        }
        Ok(())
    }

    /// Gives the out-of-line value of the entry at `loc` (bytes `old`) the length `new_len`,
    /// which stays out of line, and the meta `meta`: the blob is resized from
    /// `capacity_for(old len)` to `capacity_for(new_len)` bytes (in place when the heap can),
    /// the entry rewritten, then the bytes filled. An entry that grows (a longer length varint,
    /// a key leaving it) first takes its new size still naming the old blob, since making room
    /// in its page may fail; it is restored if the blob then cannot grow. So on `Err` nothing
    /// has changed.
    #[allow(clippy::too_many_arguments)]
    fn resize_blob_value(
        &mut self,
        heap: &mut Heap,
        (h, key): (u64, &[u8]),
        loc: &Loc,
        old: &[u8],
        new_len: usize,
        meta: Meta,
        fill: Fill<'_, impl FnOnce(&mut [u8])>,
    ) -> Result<(), MapError> {
        let (k, v) = parse(old);
        let lay = layout(k.len, k.out_of_line, new_len);
        debug_assert!(v.out_of_line && lay.value_out_of_line);
        let old_handle = raw::get_handle(&old[v.at..]);
        let (key_stored, fresh_key) = self.place_key(heap, (h, key), old, lay)?;
        let mut buf = [0u8; ENTRY_BUF_BYTES];
        let key_field = (k.len, key_stored);
        let n = encode(
            &mut buf,
            meta,
            key_field,
            (new_len, Stored::Blob(old_handle)),
        );
        let grows = n > loc.len;
        if grows && let Err(e) = self.rewrite(heap, h, loc, &buf[..n]) {
            self.discard_key_blob(heap, fresh_key, k.len);
            return Err(e);
        }
        let (old_capacity, new_capacity) = (capacity_for(v.len), capacity_for(new_len));
        // An overwrite writes every byte itself: zeroing the growth first would be wasted.
        let zeroed_len = match fill {
            Fill::Edit(_) => new_len,
            Fill::Copy(_) => new_len.min(v.len),
        };
        // SAFETY: the entry owns this blob of `capacity_for(v.len)` bytes with `v.len`
        // initialised; if the resize succeeds, the entry is rewritten below to name the blob it
        // returns, so the old handle is not used again.
        let resized = unsafe {
            raw::blob_resize(
                heap,
                old_handle,
                (old_capacity, v.len),
                (new_capacity, zeroed_len),
            )
        };
        let handle = match resized {
            Ok(handle) => handle,
            Err(e) => {
                if grows {
                    let at = self
                        .find_hashed(heap, key, h)
                        .expect("the entry is in the map");
                    let restored = self.table.replace(&at, old);
                    assert!(
                        restored,
                        "a shorter entry always fits where a longer one was"
                    );
                }
                self.discard_key_blob(heap, fresh_key, k.len);
                return Err(e.into());
            }
        };
        self.blob_bytes =
            self.blob_bytes + <Heap>::usable_size(new_capacity) - <Heap>::usable_size(old_capacity);
        let n = encode(&mut buf, meta, key_field, (new_len, Stored::Blob(handle)));
        let at = if grows {
            self.find_hashed(heap, key, h)
                .expect("the entry is in the map")
        } else {
            *loc
        };
        let written = self.table.replace(&at, &buf[..n]);
        assert!(
            written,
            "an entry no longer than the one it replaces always fits"
        );
        match fill {
            // SAFETY: the entry just written owns the blob, whose first `new_len` bytes are
            // initialised (kept, or zeroed by `blob_resize`); `&mut self` keeps every other
            // reference to it away.
            Fill::Edit(f) => f(unsafe { raw::blob_mut(heap, handle, new_len) }),
            Fill::Copy(bytes) => {
                // SAFETY: as above, but for the bytes past `zeroed_len`, which `blob_write`
                // initialises (it writes all `new_len` of them) without reading them.
                unsafe { raw::blob_write(heap, handle, bytes) };
            }
        }
        Ok(())
    }

    /// Replaces the value of the entry at `loc` (whose key is `key`, hash `h`); returns its old
    /// meta. `meta: None` keeps it. On error the entry is unchanged.
    fn overwrite(
        &mut self,
        heap: &mut Heap,
        h: u64,
        loc: &Loc,
        key: &[u8],
        value: &[u8],
        meta: Option<Meta>,
    ) -> Result<Meta, MapError> {
        let mut old = [0u8; ENTRY_BUF_BYTES];
        old[..loc.len].copy_from_slice(self.table.entry(loc));
        let old = &old[..loc.len];
        let (k, v) = parse(old);
        let old_meta = Meta(old[0]);
        let meta = meta.unwrap_or(old_meta);
        if v.out_of_line && layout(k.len, k.out_of_line, value.len()).value_out_of_line {
            // Resizing the old blob instead of allocating a second one: a big value overwritten
            // by another is never held twice, and the heap resizes it in place when it can.
            let fill = Fill::<fn(&mut [u8])>::Copy(value);
            self.resize_blob_value(heap, (h, key), loc, old, value.len(), meta, fill)?;
        } else {
            let key_handle = k.out_of_line.then(|| raw::get_handle(&old[k.at..]));
            let mut buf = [0u8; ENTRY_BUF_BYTES];
            let n = self.build_entry(heap, h, key, key_handle, value, meta, &mut buf)?;
            if let Err(e) = self.rewrite(heap, h, loc, &buf[..n]) {
                self.release_fresh(heap, &buf[..n], key_handle.is_some());
                return Err(e);
            }
            if v.out_of_line {
                self.free_value_blob(heap, raw::get_handle(&old[v.at..]), v.len);
            }
        }
        self.check(heap);
        Ok(old_meta)
    }

    /// Rewrites the entry at `loc` (hash `h`) as `new`: in place if its page has the room, else
    /// the new entry is inserted and then the old one removed, so that if no room can be made
    /// (`Err`: out of memory, or `Full`) the old entry is still there, untouched. (Removing first
    /// would free room for the re-insert of the old entry on failure, but the failed insert may
    /// have shed its bucket to a page without that room.)
    fn rewrite(&mut self, heap: &mut Heap, h: u64, loc: &Loc, new: &[u8]) -> Result<(), MapError> {
        if self.table.replace(loc, new) {
            return Ok(());
        }
        let mut old = [0u8; ENTRY_BUF_BYTES];
        old[..loc.len].copy_from_slice(self.table.entry(loc));
        let old = &old[..loc.len];
        self.table.insert_new(heap, h, |_, out| {
            out[..new.len()].copy_from_slice(new);
            new.len()
        })?;
        // Only a longer entry fails to replace in place, so the two differ in length and the old
        // one is found by its bytes, wherever the insert moved its bucket.
        debug_assert!(new.len() > old.len());
        let at = self
            .table
            .find(h, |_, b| {
                let hit = BytesCodec::len_of(b) == old.len() && b[..old.len()] == *old;
                hit.then_some(old.len())
            })
            .expect("the old entry is still in the map");
        self.table.remove(heap, &at);
        Ok(())
    }

    /// Encodes an entry into `buf`, moving the value and then the key out of line as needed to
    /// stay within `ENTRY_BYTES_MAX`. `key_handle` reuses an existing key blob. On error nothing
    /// is allocated.
    #[allow(clippy::too_many_arguments)]
    fn build_entry(
        &mut self,
        heap: &mut Heap,
        h: u64,
        key: &[u8],
        key_handle: Option<u64>,
        value: &[u8],
        meta: Meta,
        buf: &mut [u8; ENTRY_BUF_BYTES],
    ) -> Result<usize, MapError> {
        let lay = layout(key.len(), key_handle.is_some(), value.len());
        let (key_stored, fresh_key) = match key_handle {
            Some(handle) => (Stored::Blob(handle), None),
            None if lay.key_out_of_line => {
                let handle = self.alloc_key_blob(heap, h, key)?;
                (Stored::Blob(handle), Some(handle))
            }
            None => (Stored::Inline(key), None),
        };
        let value_stored = if lay.value_out_of_line {
            match self.alloc_value_blob(heap, value, value.len()) {
                Ok(handle) => Stored::Blob(handle),
                Err(e) => {
                    self.discard_key_blob(heap, fresh_key, key.len());
                    return Err(e);
                }
            }
        } else {
            Stored::Inline(value)
        };
        Ok(encode(
            buf,
            meta,
            (key.len(), key_stored),
            (value.len(), value_stored),
        ))
    }

    /// How the key of an entry being rewritten is stored under layout `lay`: its blob if it has
    /// one (kept), a fresh blob if it must leave the entry now (returned second, for the caller
    /// to discard on failure), else inline.
    fn place_key<'k>(
        &mut self,
        heap: &mut Heap,
        (h, key): (u64, &'k [u8]),
        old: &[u8],
        lay: Layout,
    ) -> Result<(Stored<'k>, Option<u64>), MapError> {
        let (k, _) = parse(old);
        if k.out_of_line {
            return Ok((Stored::Blob(raw::get_handle(&old[k.at..])), None));
        }
        if lay.key_out_of_line {
            let handle = self.alloc_key_blob(heap, h, key)?;
            return Ok((Stored::Blob(handle), Some(handle)));
        }
        Ok((Stored::Inline(key), None))
    }

    fn alloc_key_blob(&mut self, heap: &mut Heap, h: u64, key: &[u8]) -> Result<u64, MapError> {
        let size = KEY_BLOB_HEADER_BYTES + key.len();
        let handle = raw::blob_alloc(heap, size, size, &[&h.to_le_bytes(), key])?;
        self.blob_bytes += <Heap>::usable_size(size);
        Ok(handle)
    }

    /// Frees a key blob allocated for an entry that was not written after all.
    fn discard_key_blob(&mut self, heap: &mut Heap, fresh: Option<u64>, klen: usize) {
        if let Some(handle) = fresh {
            let size = KEY_BLOB_HEADER_BYTES + klen;
            // SAFETY: the blob was just allocated by `alloc_key_blob` with this size, and no
            // entry of the map names it.
            unsafe { raw::blob_free(heap, handle, size) };
            self.blob_bytes -= <Heap>::usable_size(size);
        }
    }

    /// Allocates the blob of an out-of-line value of `len` bytes (`capacity_for(len)` bytes),
    /// holding `prefix` and zeroes after it up to `len`.
    fn alloc_value_blob(
        &mut self,
        heap: &mut Heap,
        prefix: &[u8],
        len: usize,
    ) -> Result<u64, MapError> {
        let capacity = capacity_for(len);
        let handle = raw::blob_alloc(heap, capacity, len, &[prefix])?;
        self.blob_bytes += <Heap>::usable_size(capacity);
        Ok(handle)
    }

    /// Frees the blob of an out-of-line value of `len` bytes that no entry names any more.
    fn free_value_blob(&mut self, heap: &mut Heap, handle: u64, len: usize) {
        let capacity = capacity_for(len);
        // SAFETY: a value blob of `len` bytes was allocated or resized to `capacity_for(len)`
        // bytes; the caller's entry no longer names it (rewritten, or never written), so it is
        // freed once and not read again.
        unsafe { raw::blob_free(heap, handle, capacity) };
        self.blob_bytes -= <Heap>::usable_size(capacity);
    }

    /// Frees the blobs of an entry built by `build_entry` that was not written after all; the
    /// key blob only if it was fresh (not `key_reused` from the entry being overwritten).
    fn release_fresh(&mut self, heap: &mut Heap, entry: &[u8], key_reused: bool) {
        let (k, v) = parse(entry);
        if v.out_of_line {
            self.free_value_blob(heap, raw::get_handle(&entry[v.at..]), v.len);
        }
        if k.out_of_line && !key_reused {
            self.discard_key_blob(heap, Some(raw::get_handle(&entry[k.at..])), k.len);
        }
    }

    fn release(&mut self, heap: &mut Heap, entry: &[u8]) {
        let (k, v) = parse(entry);
        if k.out_of_line {
            self.blob_bytes -= <Heap>::usable_size(KEY_BLOB_HEADER_BYTES + k.len);
        }
        if v.out_of_line {
            self.blob_bytes -= <Heap>::usable_size(capacity_for(v.len));
        }
        BytesCodec::release(heap, entry);
    }

    /// Removes `key`; true if it was there.
    pub fn remove(&mut self, heap: &mut Heap, key: &[u8]) -> bool {
        let (_, loc) = self.find(heap, key);
        let Some(loc) = loc else { return false };
        let mut entry = [0u8; ENTRY_BUF_BYTES];
        entry[..loc.len].copy_from_slice(self.table.entry(&loc));
        self.release(heap, &entry[..loc.len]);
        self.table.remove(heap, &loc);
        self.check(heap);
        true
    }

    /// Removes `key` and returns its value and meta.
    pub fn take(&mut self, heap: &mut Heap, key: &[u8]) -> Option<(Vec<u8>, Meta)> {
        let (_, loc) = self.find(heap, key);
        let loc = loc?;
        let v = Self::value_ref(heap, self.table.entry(&loc));
        let out = (v.bytes.to_vec(), v.meta);
        let mut entry = [0u8; ENTRY_BUF_BYTES];
        entry[..loc.len].copy_from_slice(self.table.entry(&loc));
        self.release(heap, &entry[..loc.len]);
        self.table.remove(heap, &loc);
        self.check(heap);
        Some(out)
    }

    /// The meta byte of `key`.
    pub fn meta(&self, heap: &Heap, key: &[u8]) -> Option<Meta> {
        self.find(heap, key)
            .1
            .map(|loc| Meta(self.table.entry(&loc)[0]))
    }

    /// Sets the meta byte of `key` in place; false if absent.
    pub fn set_meta(&mut self, heap: &Heap, key: &[u8], meta: Meta) -> bool {
        self.update_meta(heap, key, |_| meta)
    }

    /// Replaces the meta byte of `key` in place by `f(meta)`, with one lookup; false if absent.
    pub fn update_meta(&mut self, heap: &Heap, key: &[u8], f: impl FnOnce(Meta) -> Meta) -> bool {
        let (_, loc) = self.find(heap, key);
        let Some(loc) = loc else { return false };
        let mut entry = [0u8; ENTRY_BUF_BYTES];
        entry[..loc.len].copy_from_slice(self.table.entry(&loc));
        entry[0] = f(Meta(entry[0])).0;
        let same_size = self.table.replace(&loc, &entry[..loc.len]);
        assert!(same_size, "same-size replace always fits");
        true
    }

    /// Every (key, value), in page order.
    pub fn iter<'a>(
        &'a self,
        heap: &'a Heap,
    ) -> impl Iterator<Item = (&'a [u8], ValueRef<'a>)> + 'a {
        self.table
            .entries()
            .map(move |(_, _, _, e)| (Self::key_ref(heap, e), Self::value_ref(heap, e)))
    }

    /// One SCAN step (see `table.rs`): calls `f` for one bucket's entries, returns the next
    /// cursor (0 = done). Start with 0.
    pub fn scan(&self, heap: &Heap, cursor: u64, mut f: impl FnMut(&[u8], ValueRef<'_>)) -> u64 {
        self.table.scan(cursor, |_, _, _, e| {
            f(Self::key_ref(heap, e), Self::value_ref(heap, e));
        })
    }

    /// A SCAN step (as `scan`) in which `f` may give each entry a new meta byte (`Some`), set
    /// in place without another lookup (a snapshot's walk marks what it saved this way).
    pub fn scan_update_meta(
        &mut self,
        heap: &Heap,
        cursor: u64,
        mut f: impl FnMut(&[u8], ValueRef<'_>) -> Option<Meta>,
    ) -> u64 {
        self.table.scan_setting_first_bytes(cursor, |_, _, _, e| {
            f(Self::key_ref(heap, e), Self::value_ref(heap, e)).map(|m| m.0)
        })
    }

    /// A random entry chosen by the random number `r` (RANDOMKEY, eviction sampling).
    pub fn sample<'a>(&'a self, heap: &'a Heap, r: u64) -> Option<(&'a [u8], ValueRef<'a>)> {
        self.table
            .sample(r, |_, _, _, e| (e.as_ptr(), e.len()))
            .map(|(ptr, len)| {
                // SAFETY: `ptr..ptr+len` is an entry inside a page of this map, live for `'a`
                // (pages are freed only through `&mut self`); re-borrowing it for `'a` is sound.
                let e = unsafe { std::slice::from_raw_parts(ptr, len) };
                (Self::key_ref(heap, e), Self::value_ref(heap, e))
            })
    }

    /// Pages, directory, page list and out-of-line blobs (usable sizes).
    pub fn memory_bytes(&self) -> usize {
        self.table.memory_bytes() + self.blob_bytes
    }

    pub fn shape(&self) -> crate::Shape {
        self.table.shape()
    }

    #[doc(hidden)]
    pub fn page_census(&self) -> Vec<(usize, usize, bool)> {
        self.table.page_census()
    }

    /// Used bytes of the pages over their payload capacity (O(1); blobs not counted).
    pub fn fill_ratio(&self) -> f64 {
        self.table.fill_ratio()
    }

    /// Whether [`PageHash::compact_step`] is worth calling: the pages would hold the entries
    /// in one page fewer at 3/4 fill, or a compaction pass is under way. O(1).
    pub fn sparse(&self) -> bool {
        self.table.sparse()
    }

    /// One bounded step of compaction (`table.rs`, "Compaction"): merges buddy buckets and
    /// moves buckets out of sparse pages, freeing the pages that empty, for `budget` work
    /// units (a bucket visited, merged or moved each; at most a page's bytes copied per unit).
    /// Keys stay where lookups find them, and a SCAN running across steps still returns every
    /// key present throughout.
    pub fn compact_step(&mut self, heap: &mut Heap, budget: usize) -> crate::CompactProgress {
        let progress = self.table.compact_step(heap, budget);
        self.check(heap);
        progress
    }

    /// One step of active defragmentation: visits the bucket holding the SCAN `cursor` (as
    /// [`PageHash::scan`]) and moves every out-of-line key or value blob that
    /// `Heap::defrag_hint` flags to a fresh allocation of the same size (alloc, copy, free),
    /// writing the new handle into its entry in place and calling `on_moved` once per blob
    /// moved. Returns the next cursor (0: the pass is done) and what was moved and checked.
    ///
    /// Bounded: one bucket (at most a page of entries, two blobs each, each at most a slab
    /// slot of 32 KiB, since larger blobs are never hinted). Pages themselves are heap blocks,
    /// not slab slots: `compact_step` gives them back. Entries keep their lengths and hashes,
    /// so a SCAN, a compaction pass or another defrag pass running across steps keeps its
    /// guarantee. A blob with no memory to move to stays where it is (a miss).
    pub fn defrag_step(
        &mut self,
        heap: &mut Heap,
        cursor: u64,
        mut on_moved: impl FnMut(),
    ) -> (u64, DefragCounts) {
        let mut counts = DefragCounts::default();
        let next = self.table.scan_rewriting(cursor, |entry| {
            let (k, v) = parse(entry);
            let blobs = [
                (
                    k,
                    KEY_BLOB_HEADER_BYTES + k.len,
                    KEY_BLOB_HEADER_BYTES + k.len,
                ),
                (v, capacity_for(v.len), v.len),
            ];
            let mut changed = false;
            for (field, size, len) in blobs {
                if !field.out_of_line {
                    continue;
                }
                let handle = raw::get_handle(&entry[field.at..]);
                if !raw::blob_defrag_hint(heap, handle) {
                    counts.misses += 1;
                    continue;
                }
                // SAFETY: the entry owns this blob of exactly `size` bytes with `len` of them
                // initialised; on success the entry's copy gets the new handle, which
                // `scan_rewriting` writes back before anything reads the entry again.
                match unsafe { raw::blob_move(heap, handle, size, len) } {
                    Ok(moved) => {
                        raw::put_handle(&mut entry[field.at..], moved);
                        changed = true;
                        counts.hits += 1;
                        on_moved();
                    }
                    Err(_) => counts.misses += 1,
                }
            }
            changed
        });
        self.check(heap);
        (next, counts)
    }

    /// Removes everything, keeping one empty page.
    pub fn clear(&mut self, heap: &mut Heap) -> Result<(), MapError> {
        let config = self.table.config();
        self.table.free_all(heap);
        self.blob_bytes = 0;
        self.table = Table::new(heap, self.table.codec.clone(), &config)?;
        Ok(())
    }

    /// Frees every page and blob. Dropping a map without this leaks them into the heap.
    pub fn destroy(mut self, heap: &mut Heap) {
        self.table.free_all(heap);
    }

    /// Checks the table's invariants (`table.rs`), then the blobs': every blob lies in a heap
    /// unit of its size (`8 + key len` for a key, `capacity_for(len)` for a value: a slab slot
    /// or group of exactly `usable_size`, or a large region of at least it), and
    /// `blob_bytes == Σ usable_size over all blobs`.
    pub fn validate(&self, heap: &Heap) -> Result<(), String> {
        self.table.validate(heap)?;
        let mut blob_bytes = 0;
        for (_, _, _, entry) in self.table.entries() {
            let (k, v) = parse(entry);
            for (field, size) in [(k, KEY_BLOB_HEADER_BYTES + k.len), (v, capacity_for(v.len))] {
                if !field.out_of_line {
                    continue;
                }
                let usable = <Heap>::usable_size(size);
                let handle = raw::get_handle(&entry[field.at..]);
                let Some((object_bytes, objects)) = raw::blob_unit(heap, handle) else {
                    return Err(format!("blob {handle:#x} lies outside the heap"));
                };
                let fits = if size >= heap::LARGE_MIN_BYTES {
                    object_bytes >= usable
                } else {
                    object_bytes == usable
                };
                if objects == 0 || !fits {
                    return Err(format!(
                        "blob of {size} B (usable {usable} B, field length {}) lies in a unit \
                         of {objects} objects of {object_bytes} B",
                        field.len
                    ));
                }
                blob_bytes += usable;
            }
        }
        if blob_bytes != self.blob_bytes {
            return Err(format!(
                "blob_bytes {} but the blobs take {blob_bytes}",
                self.blob_bytes
            ));
        }
        Ok(())
    }

    #[inline]
    fn check(&self, heap: &Heap) {
        if cfg!(feature = "expensive-checks") {
            self.validate(heap).expect("PageHash invariants");
        }
        let _ = heap;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_is_exact_then_on_a_grid_of_eighths() {
        for len in [0, 1, 17, 120, 4096, 8192, VALUE_EXACT_MAX_BYTES] {
            assert_eq!(capacity_for(len), len);
        }
        assert_eq!(capacity_for(VALUE_EXACT_MAX_BYTES + 1), 36 << 10);
        assert_eq!(capacity_for(64 << 10), 64 << 10);
        assert_eq!(capacity_for((64 << 10) + 1), 72 << 10);
        assert_eq!(capacity_for((1 << 20) + 1), (1 << 20) + (128 << 10));
        assert_eq!(capacity_for(512 << 20), 512 << 20);
        assert_eq!(capacity_for((512 << 20) + 1), 576 << 20);
        assert_eq!(capacity_for(usize::MAX), usize::MAX);
    }

    #[test]
    fn capacity_is_monotone_with_slack_under_an_eighth() {
        let mut previous = 0;
        let mut len = 0usize;
        while len < 1 << 34 {
            let capacity = capacity_for(len);
            assert!(capacity >= previous, "monotone at {len}");
            assert!(
                capacity >= len && capacity - len <= len / 8,
                "slack at {len}"
            );
            if len > VALUE_EXACT_MAX_BYTES {
                // Every grid point is its own capacity, so a length never rounds twice.
                assert_eq!(capacity_for(capacity), capacity);
            }
            previous = capacity;
            len += 1 + len / 97;
        }
    }

    #[test]
    fn layout_agrees_with_encode_and_parse() {
        for klen in [0, 2, 3, 16, 17, 60, 100, 110, 113, 114, 118, 300] {
            for vlen in [0, 1, 16, 17, 50, 90, 101, 104, 117, 118, 130, 20_000] {
                for key_has_blob in [false, true] {
                    let lay = layout(klen, key_has_blob, vlen);
                    let (key, value) = (vec![b'k'; klen], vec![b'v'; vlen]);
                    let key_stored = if lay.key_out_of_line {
                        Stored::Blob(7)
                    } else {
                        Stored::Inline(&key)
                    };
                    let value_stored = if lay.value_out_of_line {
                        Stored::Blob(9)
                    } else {
                        Stored::Inline(&value)
                    };
                    let mut buf = [0u8; ENTRY_BUF_BYTES];
                    let n = encode(&mut buf, Meta(5), (klen, key_stored), (vlen, value_stored));
                    assert!(n <= ENTRY_BYTES_MAX, "{klen}+{vlen}: {n} bytes");
                    assert_eq!(BytesCodec::len_of(&buf), n);
                    let (k, v) = parse(&buf[..n]);
                    assert_eq!((k.len, v.len), (klen, vlen));
                    assert_eq!(k.out_of_line, lay.key_out_of_line || key_has_blob);
                    assert_eq!(v.out_of_line, lay.value_out_of_line);
                }
            }
        }
    }
}
