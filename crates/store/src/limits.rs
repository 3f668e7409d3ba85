//! The encoding thresholds a client can configure: Redis's `hash-max-listpack-*`,
//! `set-max-intset-entries`, `zset-max-listpack-*` and `list-max-listpack-size`, as one value a
//! shard holds (`Shard::set_limits`) and every edit reads.
//!
//! ```text
//!  threshold                  steers in densekv                          OBJECT ENCODING
//!  hash_listpack_entries/value records and small maps hold only hashes     "listpack" until a
//!                              within both; flat, ints and pages hashes    write passes either,
//!                              keep the sticky "hashtable" bit by them     then "hashtable"
//!  set_intset_entries          the inline intset holds ≤ min(limit, 512);  "intset" while all
//!                              an integer set past 512 but within the      integers and ≤ limit
//!                              limit is a boxed IntSet still called intset
//!  zset_listpack_entries/value the packed zset (≤ min(limit, 65,535)       "listpack" while
//!                              members, members ≤ the value limit)         packed
//!  list_chunk_bytes            a list chunk's byte bound                   "quicklist" always
//! ```
//! Invariants: a write that crosses a threshold converts as Redis's does at the same write, so
//! OBJECT ENCODING answers as redis-server with the same configuration would (up to the caps:
//! a zset of more than 65,535 members is never packed, whatever the limit). Lowering a threshold
//! converts nothing by itself: values change encoding at their next write, as in Redis. The
//! defaults are Redis 7.0's, and at the defaults every encoding is chosen exactly as before the
//! thresholds were configurable.

/// The configurable encoding thresholds (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `hash-max-listpack-entries`.
    pub hash_listpack_entries: usize,
    /// `hash-max-listpack-value`: the longest field or value of a listpack hash.
    pub hash_listpack_value: usize,
    /// `set-max-intset-entries`.
    pub set_intset_entries: usize,
    /// `zset-max-listpack-entries`.
    pub zset_listpack_entries: usize,
    /// `zset-max-listpack-value`: the longest member of a listpack zset.
    pub zset_listpack_value: usize,
    /// The byte bound of a list chunk (`Limits::list_chunk_bytes_for`).
    pub list_chunk_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            hash_listpack_entries: 512,
            hash_listpack_value: 64,
            set_intset_entries: 512,
            zset_listpack_entries: 128,
            zset_listpack_value: 64,
            list_chunk_bytes: 8192,
        }
    }
}

/// Redis's quicklist node sizes for `list-max-listpack-size` -1 … -5 (`optimization_level`).
const LIST_CHUNK_LEVELS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
/// Redis's `SIZE_SAFETY_LIMIT`: the byte bound of a node under a positive (count) fill.
const LIST_SAFETY_BYTES: usize = 8192;

impl Limits {
    /// The chunk byte bound for `list-max-listpack-size`: -1 … -5 are Redis's 4 … 64 KiB (below
    /// -5, 64 KiB, as Redis clamps); a positive entry count keeps Redis's 8 KiB safety bound, the
    /// part of it that densekv's byte-bounded chunks can follow (a count bound would shrink chunks
    /// of small elements and grow the per-chunk cost, see `types/list.rs`).
    pub fn list_chunk_bytes_for(list_max_listpack_size: i64) -> usize {
        if list_max_listpack_size >= 0 {
            return LIST_SAFETY_BYTES;
        }
        let level = usize::try_from(-(list_max_listpack_size + 1)).unwrap_or(usize::MAX);
        LIST_CHUNK_LEVELS[level.min(LIST_CHUNK_LEVELS.len() - 1)]
    }

    /// Whether a hash field and value are both within the listpack value bound.
    #[inline]
    pub(crate) fn hash_pair_fits(&self, field: usize, value: usize) -> bool {
        field <= self.hash_listpack_value && value <= self.hash_listpack_value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_sizes_map_as_redis_sizes_its_nodes() {
        assert_eq!(Limits::list_chunk_bytes_for(-2), 8192);
        assert_eq!(Limits::list_chunk_bytes_for(-1), 4096);
        assert_eq!(Limits::list_chunk_bytes_for(-5), 65536);
        assert_eq!(Limits::list_chunk_bytes_for(-6), 65536);
        assert_eq!(Limits::list_chunk_bytes_for(i64::from(i32::MIN)), 65536);
        assert_eq!(Limits::list_chunk_bytes_for(0), 8192);
        assert_eq!(Limits::list_chunk_bytes_for(128), 8192);
        assert_eq!(
            Limits::default().list_chunk_bytes,
            Limits::list_chunk_bytes_for(-2)
        );
    }
}
