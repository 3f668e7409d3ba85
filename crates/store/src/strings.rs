//! The typed string operations: reads that hand out the stored bytes (or integer) in place,
//! writes that choose the encoding (`value.rs`), and the one-lookup read-modify-write of the
//! counters (INCR and friends).

use crate::encoding::{Encoding, tag};
use crate::error::StoreError;
use crate::shard::{Shard, Ttl, split_value};
use crate::value::{self, encode_int, is_string, str_of};
use shape::Str;

/// Where `patch_raw_string` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Patch {
    /// At the end (APPEND).
    Append,
    /// At this offset (SETRANGE).
    At(usize),
}

impl Shard {
    /// Calls `f` with the string at `key`: `Ok(None)` when the key is missing, `Err(WrongType)`
    /// when it holds another type.
    #[inline]
    pub fn get_string<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(Str<'_>) -> R,
    ) -> Result<Option<R>, StoreError> {
        match self.with_entry(db, key, now_ms, |e| {
            is_string(e.tag).then(|| f(str_of(e.tag, e.payload)))
        }) {
            None => Ok(None),
            Some(Some(r)) => Ok(Some(r)),
            Some(None) => Err(StoreError::WrongType),
        }
    }

    /// Stores a string value, choosing its encoding (integer, embstr or raw), replacing whatever
    /// was there.
    pub fn put_string(
        &mut self,
        db: usize,
        key: &[u8],
        value: &[u8],
        ttl: Ttl,
        now_ms: u64,
    ) -> Result<(), StoreError> {
        let expire_at = self.expire_for(db, key, ttl, now_ms);
        if let Some(t) = value::bytes_tag(value) {
            // Not an integer: the bytes are the payload, stored without a copy.
            return self.put_raw(db, key, t, Encoding::of_inline(t), value, expire_at);
        }
        let mut payload = std::mem::take(&mut self.string_buf);
        payload.clear();
        let t = value::encode_string(value, &mut payload);
        let stored = self.put_raw(db, key, t, Encoding::of_inline(t), &payload, expire_at);
        self.string_buf = payload;
        stored
    }

    /// Stores a string as bytes whatever they spell (`raw`): what Redis keeps after APPEND and
    /// SETRANGE, which modify a string in place.
    pub fn put_string_raw(
        &mut self,
        db: usize,
        key: &[u8],
        value: &[u8],
        ttl: Ttl,
        now_ms: u64,
    ) -> Result<(), StoreError> {
        let expire_at = self.expire_for(db, key, ttl, now_ms);
        self.put_raw(db, key, tag::STR_RAW, Encoding::StrRaw, value, expire_at)
    }

    /// Writes `bytes` at `at` of the raw string at `key` in place, growing it (zero-filled) as
    /// needed, and returns its new length: APPEND and SETRANGE without copying the string. The
    /// value grows within its allocation or by the map's capacity steps (`maps::capacity_for`:
    /// geometric up to a bound, then 1/8 steps), so building a big string by appends is
    /// amortized O(1) per byte. `Ok(None)`, and nothing done, when `key` holds no raw string
    /// (missing, an integer or a short embstr: the caller rewrites those whole, which makes
    /// them raw as Redis does); the caller has checked the type and the size limit.
    pub fn patch_raw_string(
        &mut self,
        db: usize,
        key: &[u8],
        at: Patch,
        bytes: &[u8],
        now_ms: u64,
    ) -> Result<Option<usize>, StoreError> {
        let found = self.with_entry(db, key, now_ms, |e| {
            (e.tag, e.payload.len(), e.expire_at_ms.is_some())
        });
        let Some((tag::STR_RAW, len, has_ttl)) = found else {
            return Ok(None);
        };
        let offset = match at {
            Patch::Append => len,
            Patch::At(offset) => offset,
        };
        let end = offset + bytes.len();
        let new_len = len.max(end);
        let prefix = if has_ttl { 8 } else { 0 };
        self.preserve(db, key);
        let keys = self.dbs[db].keys.as_mut().expect("the key was found");
        keys.edit_value(&mut self.heap, key, prefix + new_len, |value| {
            value[prefix + offset..prefix + end].copy_from_slice(bytes);
        })?;
        Ok(Some(new_len))
    }

    /// Calls `f` with the bytes of the string at `key`, writable in place, after growing them
    /// (zero-filled) to at least `min_len` bytes: the bitmap and HyperLogLog writes (SETBIT,
    /// BITFIELD, PFADD, PFCOUNT's cached cardinality) without copying the string. An integer or
    /// embstr is first rewritten as raw bytes, keeping its TTL (Redis's `dbUnshareStringValue`:
    /// such a string reads `raw` afterwards, as in Redis). A missing key is created as `min_len`
    /// zero bytes without a TTL when `create` is set, else `Ok(None)` and nothing is done.
    /// `f` also gets the string's length before the call (`None`: it was created), so that the
    /// caller can tell whether it grew. Growth takes the map's capacity steps
    /// (`maps::capacity_for`), so a bitmap grown bit by bit is amortized O(1) per byte. The
    /// caller has checked the size limit.
    pub fn edit_string<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        (min_len, create): (usize, bool),
        f: impl FnOnce(&mut [u8], Option<usize>) -> R,
    ) -> Result<Option<R>, StoreError> {
        let f = match self.edit_raw_in_place(db, key, now_ms, min_len, f) {
            Ok(done) => return Ok(Some(done)),
            Err(f) => f,
        };
        let found = self.with_entry(db, key, now_ms, |e| {
            let bytes = (e.tag != tag::STR_RAW && is_string(e.tag))
                .then(|| str_of(e.tag, e.payload).to_vec());
            (
                is_string(e.tag),
                bytes,
                e.payload.len(),
                e.expire_at_ms.is_some(),
            )
        });
        let (len, has_ttl, created) = match found {
            None if !create => return Ok(None),
            None => {
                self.put_string_raw(db, key, b"", Ttl::Clear, now_ms)?;
                (0, false, true)
            }
            Some((false, ..)) => return Err(StoreError::WrongType),
            Some((true, Some(bytes), _, has_ttl)) => {
                self.put_string_raw(db, key, &bytes, Ttl::Keep, now_ms)?;
                (bytes.len(), has_ttl, false)
            }
            Some((true, None, len, has_ttl)) => (len, has_ttl, false),
        };
        let prefix = if has_ttl { 8 } else { 0 };
        let new_len = len.max(min_len);
        self.preserve(db, key);
        let keys = self.dbs[db].keys.as_mut().expect("the key is stored");
        let mut out = None;
        keys.edit_value(&mut self.heap, key, prefix + new_len, |value| {
            out = Some(f(&mut value[prefix..], (!created).then_some(len)));
        })?;
        Ok(Some(out.expect("the key is stored, so f ran")))
    }

    /// Lets `f` edit the bytes of the raw string at `key` where they lie, with one lookup (a
    /// dense HyperLogLog's registers). `None`, `f` not called, unless `key` holds a live raw
    /// string and no snapshot is under way: the caller then takes the general path.
    pub fn edit_raw_string<R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> Option<R> {
        self.edit_raw_in_place(db, key, now_ms, 0, |bytes, _| f(bytes))
            .ok()
    }

    /// `edit_string`'s common case with one lookup: a live raw string already `min_len` long,
    /// no snapshot under way (so nothing to preserve), is edited where it lies and its access
    /// counted. Anything else hands `f` back for the general path.
    fn edit_raw_in_place<R, F: FnOnce(&mut [u8], Option<usize>) -> R>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        min_len: usize,
        f: F,
    ) -> Result<R, F> {
        let mut f = Some(f);
        let done = self.edit_live_in_place(db, key, now_ms, (tag::STR_RAW, false), |payload| {
            let len = payload.len();
            if len < min_len {
                return None;
            }
            f.take().map(|f| f(payload, Some(len)))
        });
        done.ok_or_else(|| f.expect("not called, so not taken"))
    }

    /// Rewrites the string at `key` as an integer with a single lookup (INCR…): `f` sees the
    /// current string (`None` when the key is missing or expired) and returns the new value, or
    /// an error of its own to write nothing. An existing key keeps its TTL; a new one has none.
    /// `Err(WrongType)` when the key holds another type (`f` is not called).
    pub fn upsert_int<E>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(Option<Str<'_>>) -> Result<i64, E>,
    ) -> Result<Result<i64, E>, StoreError> {
        let mut out = std::mem::take(&mut self.value_buf);
        let written = self.upsert_int_in(db, key, now_ms, &mut out, f);
        crate::shard::trim_scratch(&mut out);
        self.value_buf = out;
        let (result, write) = written?;
        if let Some((old, expired)) = write {
            let d = &mut self.dbs[db];
            if let Some(old) = old {
                d.counts[old.slot()] -= 1;
            }
            d.counts[Encoding::StrInt.slot()] += 1;
            if expired {
                // The expired entry's TTL went with it.
                d.expires -= 1;
                self.note_expired(db, key);
            }
        }
        Ok(result)
    }

    /// `upsert_int`'s lookup and write: returns `f`'s result and, when it wrote, the encoding it
    /// replaced and whether that entry had expired. One lookup, unless the key holds an expired
    /// collection: that is deleted first (an overwrite in place would leak what it owns), and
    /// the lookup runs once more on the now missing key.
    #[allow(clippy::type_complexity)]
    fn upsert_int_in<E>(
        &mut self,
        db: usize,
        key: &[u8],
        now_ms: u64,
        out: &mut Vec<u8>,
        f: impl FnOnce(Option<Str<'_>>) -> Result<i64, E>,
    ) -> Result<(Result<i64, E>, Option<(Option<Encoding>, bool)>), StoreError> {
        let mut f = Some(f);
        self.preserve(db, key);
        let new_meta = self.new_meta(tag::STR_INT, false);
        for _ in 0..2 {
            self.keys_mut(db)?;
            let keys = self.dbs[db].keys.as_mut().expect("created above");
            let (mut result, mut write, mut blocked) = (None, None, None);
            let access = &mut self.access;
            keys.upsert_with(&mut self.heap, key, out, |old, out| {
                let old = old.map(|v| (v.meta, split_value(v)));
                let live = old.filter(|(_, e)| e.expire_at_ms.is_none_or(|at| at > now_ms));
                if old.is_some_and(|(_, e)| !is_string(e.tag)) {
                    blocked = Some(live.is_some());
                    return None;
                }
                let next =
                    (f.take().expect("called once"))(live.map(|(_, e)| str_of(e.tag, e.payload)));
                let new = next.as_ref().ok().copied();
                result = Some(next);
                let meta = match live {
                    Some((meta, e)) => {
                        if let Some(at) = e.expire_at_ms {
                            out.extend_from_slice(&at.to_le_bytes());
                        }
                        let meta = access.touched(meta).unwrap_or(meta);
                        meta.with_tag(tag::STR_INT)
                    }
                    None => new_meta,
                };
                encode_int(new?, out);
                write = Some((
                    old.map(|(_, e)| Encoding::of_inline(e.tag)),
                    old.is_some() && live.is_none(),
                ));
                Some(meta)
            })?;
            match blocked {
                Some(true) => return Err(StoreError::WrongType),
                Some(false) => self.delete_expired(db, key),
                None => return Ok((result.expect("f ran"), write)),
            }
        }
        unreachable!("an expired collection is deleted before the second lookup")
    }
}

#[cfg(test)]
mod tests {
    use crate::{Shard, ShardConfig, StoreError, Ttl, View};

    fn bytes_of(shard: &mut Shard, key: &[u8]) -> Option<(Vec<u8>, Option<u64>)> {
        shard.view(0, key, 0, |v, at| match v {
            View::String(s) => (s.to_vec(), at),
            _ => panic!("not a string"),
        })
    }

    /// `edit_string` creates, grows (zero-filled), turns an integer or embstr into raw bytes
    /// keeping its TTL, refuses other types, and leaves a missing key alone without `create`.
    #[test]
    fn edit_string_grows_in_place_and_keeps_the_ttl() {
        let mut shard = Shard::new(&ShardConfig::default()).unwrap();
        let none = shard.edit_string(0, b"m", 0, (4, false), |_, _| ());
        assert_eq!(none.unwrap(), None);
        assert_eq!(bytes_of(&mut shard, b"m"), None);
        let created = shard.edit_string(0, b"m", 0, (3, true), |b, before| {
            b[2] = 7;
            (b.len(), before)
        });
        assert_eq!(created.unwrap(), Some((3, None)));
        assert_eq!(bytes_of(&mut shard, b"m"), Some((vec![0, 0, 7], None)));
        for len in [1, 100, 5000, 70_000] {
            let before = bytes_of(&mut shard, b"m").unwrap().0.len();
            let seen = shard.edit_string(0, b"m", 0, (len, true), |b, before| {
                b[len - 1] ^= 1;
                (b.len(), before)
            });
            assert_eq!(seen.unwrap(), Some((len.max(3), Some(before))));
            shard.validate().unwrap();
        }
        let (bytes, _) = bytes_of(&mut shard, b"m").unwrap();
        assert_eq!(bytes.len(), 70_000);
        assert_eq!(bytes.iter().filter(|&&b| b != 0).count(), 5);
        shard
            .put_string(0, b"i", b"123", Ttl::At(1 << 50), 0)
            .unwrap();
        let grown = shard.edit_string(0, b"i", 0, (5, true), |b, _| b.to_vec());
        assert_eq!(grown.unwrap(), Some(b"123\0\0".to_vec()));
        assert_eq!(
            bytes_of(&mut shard, b"i"),
            Some((b"123\0\0".to_vec(), Some(1 << 50)))
        );
        assert_eq!(shard.object_encoding(0, b"i", 0), Some("raw"));
        shard.put_string(0, b"e", b"abc", Ttl::Clear, 0).unwrap();
        let same = shard.edit_string(0, b"e", 0, (0, true), |b, _| b.to_vec());
        assert_eq!(same.unwrap(), Some(b"abc".to_vec()));
        shard
            .update::<crate::Set, _>(0, b"s", 0, true, |s| s.add(b"x"))
            .unwrap();
        let wrong = shard.edit_string(0, b"s", 0, (1, true), |_, _| ());
        assert!(matches!(wrong, Err(StoreError::WrongType)));
        shard.validate().unwrap();
    }

    #[test]
    fn edit_raw_string_takes_only_live_raw_strings() {
        let mut shard = Shard::new(&ShardConfig::default()).unwrap();
        let edit = |shard: &mut Shard, key: &[u8], now| {
            shard.edit_raw_string(0, key, now, |b| {
                b[0] = b'X';
                b.len()
            })
        };
        assert_eq!(edit(&mut shard, b"none", 0), None);
        shard.put_string(0, b"int", b"123", Ttl::Clear, 0).unwrap();
        shard.put_string(0, b"emb", b"abc", Ttl::Clear, 0).unwrap();
        assert_eq!(
            (edit(&mut shard, b"int", 0), edit(&mut shard, b"emb", 0)),
            (None, None)
        );
        assert_eq!(bytes_of(&mut shard, b"emb"), Some((b"abc".to_vec(), None)));
        let long = vec![b'a'; 300];
        for (key, ttl) in [(&b"raw"[..], Ttl::Clear), (b"ttl", Ttl::At(100))] {
            shard.put_string_raw(0, key, &long, ttl, 0).unwrap();
            assert_eq!(edit(&mut shard, key, 50), Some(300));
            assert_eq!(bytes_of(&mut shard, key).unwrap().0[..2], *b"Xa");
        }
        assert_eq!(edit(&mut shard, b"ttl", 100), None, "expired");
        shard
            .put_string_raw(0, b"short", b"abc", Ttl::Clear, 0)
            .unwrap();
        assert_eq!(
            edit(&mut shard, b"short", 0),
            Some(3),
            "inline in its entry"
        );
        assert_eq!(
            bytes_of(&mut shard, b"short"),
            Some((b"Xbc".to_vec(), None))
        );
        shard.validate().unwrap();
    }
}
