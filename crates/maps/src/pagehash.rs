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
//!   bits 0..=3  value type / encoding tag      bit 4  has TTL      bits 5..=7  LFU counter
//!
//!  key blob (out of line):   [hash: u64 LE][key bytes]     value blob: [value bytes]
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

use crate::hash::BytesHasher;
use crate::page::{ENTRY_BUF_BYTES, ENTRY_BYTES_MAX, Kind, Tenants};
use crate::raw::{self, HANDLE_BYTES};
use crate::table::{Codec, Config, Loc, Placement, Table};
use crate::{MapError, Meta, varint};
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
        for (field, extra) in [(key, KEY_BLOB_HEADER_BYTES), (value, 0)] {
            if field.out_of_line {
                // SAFETY: the entry owns this blob of exactly `extra + len` bytes; the entry is
                // being removed, so the blob is freed once and never read again.
                unsafe {
                    raw::blob_free(heap, raw::get_handle(&bytes[field.at..]), extra + field.len);
                }
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

/// Writes a length field and the key/value (inline) or a handle; returns bytes written.
fn put_field(out: &mut [u8], len: usize, handle: Option<u64>, bytes: &[u8]) -> usize {
    let n = varint::put(out, len as u64);
    if let Some(h) = handle {
        raw::put_handle(&mut out[n..], h);
        n + HANDLE_BYTES
    } else {
        out[n..n + len].copy_from_slice(bytes);
        n + len
    }
}

fn inline_len(len: usize) -> usize {
    varint::len(len as u64) + len
}

fn handle_len(len: usize) -> usize {
    varint::len(len as u64) + HANDLE_BYTES
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

    /// Replaces the value of the entry at `loc` (whose key is `key`, hash `h`); returns its old
    /// meta. `meta: None` keeps it.
    fn overwrite(
        &mut self,
        heap: &mut Heap,
        h: u64,
        loc: &Loc,
        key: &[u8],
        value: &[u8],
        meta: Option<Meta>,
    ) -> Result<Meta, MapError> {
        let mut buf = [0u8; ENTRY_BUF_BYTES];
        let old = self.table.entry(loc);
        let (k, v) = parse(old);
        let key_handle = k.out_of_line.then(|| raw::get_handle(&old[k.at..]));
        let old_meta = Meta(old[0]);
        if v.out_of_line {
            let handle = raw::get_handle(&old[v.at..]);
            // SAFETY: the old value blob belongs to this entry, whose value field is rewritten
            // below, so the blob is freed once and not read again.
            unsafe { raw::blob_free(heap, handle, v.len) };
            self.blob_bytes -= <Heap>::usable_size(v.len);
        }
        let n = self.build_entry(
            heap,
            h,
            key,
            key_handle,
            value,
            meta.unwrap_or(old_meta),
            &mut buf,
        )?;
        if !self.table.replace(loc, &buf[..n]) {
            self.table.remove_unmerged(loc);
            self.table.insert_new(heap, h, |_, out| {
                out[..n].copy_from_slice(&buf[..n]);
                n
            })?;
        }
        self.check(heap);
        Ok(old_meta)
    }

    /// Encodes an entry into `buf`, moving the value and then the key out of line as needed to
    /// stay within `ENTRY_BYTES_MAX`. `key_handle` reuses an existing key blob.
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
        buf[0] = meta.0;
        let (klen, vlen) = (key.len(), value.len());
        if key_handle.is_none()
            && (SHORT_KEY_MIN..=SHORT_LEN_MAX).contains(&klen)
            && vlen <= SHORT_LEN_MAX
        {
            buf[1] = ((klen - SHORT_KEY_MIN) * SHORT_VALUE_LENS + vlen) as u8;
            buf[2..2 + klen].copy_from_slice(key);
            buf[2 + klen..2 + klen + vlen].copy_from_slice(value);
            return Ok(2 + klen + vlen);
        }
        let smallest_value = inline_len(vlen).min(handle_len(vlen));
        let key_handle = match key_handle {
            Some(handle) => Some(handle),
            None if 2 + inline_len(klen) + smallest_value <= ENTRY_BYTES_MAX => None,
            None => {
                let handle = raw::blob_alloc(heap, &[&h.to_le_bytes(), key])?;
                self.blob_bytes += <Heap>::usable_size(KEY_BLOB_HEADER_BYTES + key.len());
                Some(handle)
            }
        };
        let at = 2 + put_field(&mut buf[2..], klen, key_handle, key);
        let (n, value_out_of_line) = self.put_value(heap, buf, at, value)?;
        buf[1] = LONG_FORM | u8::from(key_handle.is_some()) | (u8::from(value_out_of_line) << 1);
        debug_assert!(n <= ENTRY_BYTES_MAX);
        Ok(n)
    }

    /// Writes the value field at `at` in `buf`: inline whenever the entry stays within
    /// `ENTRY_BYTES_MAX`. Runs pack entries byte by byte, so an inline value costs exactly its
    /// length, always less than a blob (handle + size class). Returns the entry's length and
    /// whether the value went out of line.
    fn put_value(
        &mut self,
        heap: &mut Heap,
        buf: &mut [u8; ENTRY_BUF_BYTES],
        at: usize,
        value: &[u8],
    ) -> Result<(usize, bool), MapError> {
        if at + inline_len(value.len()) <= ENTRY_BYTES_MAX {
            return Ok((
                at + put_field(&mut buf[at..], value.len(), None, value),
                false,
            ));
        }
        let handle = raw::blob_alloc(heap, &[value])?;
        self.blob_bytes += <Heap>::usable_size(value.len());
        Ok((
            at + put_field(&mut buf[at..], value.len(), Some(handle), value),
            true,
        ))
    }

    fn release(&mut self, heap: &mut Heap, entry: &[u8]) {
        let (k, v) = parse(entry);
        if k.out_of_line {
            self.blob_bytes -= <Heap>::usable_size(KEY_BLOB_HEADER_BYTES + k.len);
        }
        if v.out_of_line {
            self.blob_bytes -= <Heap>::usable_size(v.len);
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

    pub fn validate(&self, heap: &Heap) -> Result<(), String> {
        self.table.validate(heap)
    }

    #[inline]
    fn check(&self, heap: &Heap) {
        if cfg!(feature = "expensive-checks") {
            self.validate(heap).expect("PageHash invariants");
        }
        let _ = heap;
    }
}
