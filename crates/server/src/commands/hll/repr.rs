//! A HyperLogLog as the bytes of a string value, Redis 7.0's format byte for byte: the header,
//! the check Redis makes before trusting a string (`isHLLObjectOrReply`), the cached
//! cardinality, and the operations the commands run on either encoding (`hllAdd`, `hllCount`,
//! `hllMerge`).
//!
//! ```text
//!  offset 0    4    5        8                16
//!         +----+----+--------+----------------+---------------------------------------+
//!         |HYLL| E  | 0 0 0  | cardinality    | registers: dense (12288 bytes, 16384 × |
//!         |    |    | unused | u64 LE; bit 63 | 6 bits, dense.rs) or sparse opcodes    |
//!         |    |    |        | set = stale    | (sparse.rs)                            |
//!         +----+----+--------+----------------+---------------------------------------+
//!  E = 0 dense (the string is exactly 12304 bytes), 1 sparse (any length ≥ 16)
//! ```
//!
//! The cache holds the last PFCOUNT; any write that changes a register sets its top bit
//! (`card[7] |= 0x80`), and PFCOUNT recomputes and rewrites it. A fresh HLL is sparse with a
//! valid cached 0. Invariants of a string this module made: `len == DENSE_BYTES` when dense;
//! the sparse runs cover exactly 16384 registers, each ≤ 32, and the string is at most
//! `hll-sparse-max-bytes` long unless it was created that way. Strings from clients satisfy
//! only what [`check`] checks; everything else is verified as it is read, never trusted.
//!
//! Size: 12304 bytes dense, as in Redis; sparse ~2 bytes per non-zero register at low
//! cardinality (267 bytes for 100 elements, ~3000 bytes — the default switch — near 2000).

use super::{dense, estimate, murmur, sparse};
pub use sparse::Rewrite;

/// The header: magic, encoding, 3 unused bytes, cached cardinality.
pub const HEADER_BYTES: usize = 16;
/// HLL_P = 14: the registers an element's hash picks from.
pub const REGISTERS: usize = 1 << 14;
/// The largest value a 6-bit register holds.
pub const REGISTER_MAX: u8 = 63;
/// The longest `000…1` run a hash gives: 64 − 14 + 1.
pub const RUN_MAX: u8 = 51;
/// The dense registers' bytes.
pub const DENSE_REGISTER_BYTES: usize = REGISTERS * 6 / 8;
/// A dense HLL's exact length.
pub const DENSE_BYTES: usize = HEADER_BYTES + DENSE_REGISTER_BYTES;
/// The offset of the encoding byte.
pub const ENCODING_AT: usize = 4;
/// The offset of the cached cardinality.
const CARD_AT: usize = 8;
/// Encoding byte values.
pub const DENSE: u8 = 0;
pub const SPARSE: u8 = 1;

const _: () = assert!(DENSE_BYTES == 12_304);
const _: () = assert!(HEADER_BYTES == CARD_AT + 8);

/// The HLL is corrupt: Redis's `INVALIDOBJ Corrupted HLL object detected`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt;

/// The two encodings a valid header names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Dense,
    Sparse,
}

/// Redis's `isHLLObjectOrReply` on a string's bytes: at least a header, the magic, an encoding
/// of 0 or 1, and exactly `DENSE_BYTES` when dense. `None` is `WRONGTYPE Key is not a valid
/// HyperLogLog string value.` (an integer-encoded string never gets here: it fails first).
pub fn check(bytes: &[u8]) -> Option<Encoding> {
    if bytes.len() < HEADER_BYTES || bytes[..4] != *b"HYLL" {
        return None;
    }
    match bytes[ENCODING_AT] {
        DENSE if bytes.len() == DENSE_BYTES => Some(Encoding::Dense),
        SPARSE => Some(Encoding::Sparse),
        _ => None,
    }
}

/// The cached cardinality, `None` when stale.
pub fn cached(bytes: &[u8]) -> Option<u64> {
    let card = u64::from_le_bytes(bytes[CARD_AT..HEADER_BYTES].try_into().expect("8 bytes"));
    (card >> 63 == 0).then_some(card)
}

/// Stores `card` as the cached cardinality (2^63, Redis's result for an impossible histogram,
/// reads back as stale).
pub fn store_cached(bytes: &mut [u8], card: u64) {
    bytes[CARD_AT..HEADER_BYTES].copy_from_slice(&card.to_le_bytes());
}

/// Marks the cached cardinality stale (`HLL_INVALIDATE_CACHE`).
pub fn invalidate(bytes: &mut [u8]) {
    bytes[HEADER_BYTES - 1] |= 0x80;
}

/// `hllDenseAdd` on a whole dense string, in place; true when a register changed (the caller
/// invalidates the cache once for all its elements, as PFADD does).
#[inline]
pub fn dense_add(hll: &mut [u8], element: &[u8]) -> bool {
    let (index, count) = murmur::pattern(element);
    dense::raise(&mut hll[HEADER_BYTES..], index, count)
}

/// Whether adding `element` to a whole dense string would raise a register.
#[inline]
pub fn dense_raises(hll: &[u8], element: &[u8]) -> bool {
    let (index, count) = murmur::pattern(element);
    count > dense::get(&hll[HEADER_BYTES..], index)
}

/// `hllAdd`: adds `element` to a checked HLL of either encoding; a sparse one may grow or be
/// promoted to dense (`sparse::set`). True when a register changed; `Err` when the sparse
/// opcodes turn out corrupt (`hll` may then hold the writes of earlier calls, as in Redis).
pub fn add(hll: &mut Rewrite, element: &[u8], sparse_max_bytes: u64) -> Result<bool, Corrupt> {
    match hll.bytes[ENCODING_AT] {
        DENSE => Ok(dense_add(&mut hll.bytes, element)),
        SPARSE => {
            let (index, count) = murmur::pattern(element);
            sparse::set(hll, index, count, sparse_max_bytes)
        }
        _ => Err(Corrupt),
    }
}

/// `hllSparseSet` or `hllDenseSet` by encoding: raises register `index` to `count` (PFMERGE's
/// write of its result).
pub fn raise(hll: &mut Rewrite, index: usize, count: u8, sparse_max_bytes: u64) {
    if hll.bytes[ENCODING_AT] == DENSE {
        dense::raise(&mut hll.bytes[HEADER_BYTES..], index, count);
    } else {
        // The destination was merged, hence checked, before: this cannot fail, and Redis
        // ignores the result too.
        let _ = sparse::set(hll, index, count, sparse_max_bytes);
    }
}

/// `hllCount` of a checked HLL: its estimate, `Err` when sparse and corrupt.
pub fn count(hll: &[u8], encoding: Encoding) -> Result<u64, Corrupt> {
    let mut histogram = [0u32; 64];
    match encoding {
        Encoding::Dense => dense::histogram(&hll[HEADER_BYTES..], &mut histogram),
        Encoding::Sparse => sparse::histogram(hll, &mut histogram)?,
    }
    Ok(estimate::estimate(&histogram))
}

/// `hllMerge`: raises `max[i]` to register `i` of a checked HLL.
pub fn merge_into(
    hll: &[u8],
    encoding: Encoding,
    max: &mut [u8; REGISTERS],
) -> Result<(), Corrupt> {
    match encoding {
        Encoding::Dense => {
            dense::merge_into(&hll[HEADER_BYTES..], max);
            Ok(())
        }
        Encoding::Sparse => sparse::merge_into(hll, max),
    }
}

/// `hllCount` of the `HLL_RAW` form (one byte per register), PFCOUNT's union of several keys.
pub fn count_registers(max: &[u8; REGISTERS]) -> u64 {
    let mut histogram = [0u32; 64];
    for &r in max {
        histogram[usize::from(r & REGISTER_MAX)] += 1;
    }
    estimate::estimate(&histogram)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// The registers of a checked HLL, one byte each.
    fn registers_of(hll: &[u8]) -> [u8; REGISTERS] {
        let dense = match check(hll).expect("a valid header") {
            Encoding::Dense => hll.to_vec(),
            Encoding::Sparse => sparse::to_dense(hll).expect("valid sparse opcodes"),
        };
        std::array::from_fn(|i| dense::get(&dense[HEADER_BYTES..], i))
    }

    /// What must hold after every write: a valid header, the length of its encoding (a sparse
    /// string no longer than the limit, or than an empty one), runs covering exactly 16384
    /// registers, the model's registers, a stale cache after a change, and the estimate of
    /// the model's registers.
    fn check_invariants(hll: &[u8], model: &[u8; REGISTERS], max_bytes: u64, changed: bool) {
        match check(hll).expect("a valid header") {
            Encoding::Dense => assert_eq!(hll.len(), DENSE_BYTES),
            Encoding::Sparse => {
                assert!(hll.len() as u64 <= max_bytes.max(HEADER_BYTES as u64 + 2));
                let mut histogram = [0u32; 64];
                sparse::histogram(hll, &mut histogram).expect("runs cover 16384 registers");
                assert_eq!(histogram.iter().sum::<u32>(), REGISTERS as u32);
                assert!(histogram[33..].iter().all(|&n| n == 0));
            }
        }
        assert!(
            registers_of(hll) == *model,
            "registers differ from the model"
        );
        if changed {
            assert_eq!(cached(hll), None);
        }
        let encoding = check(hll).expect("checked above");
        assert_eq!(count(hll, encoding), Ok(count_registers(model)));
    }

    /// One random step: an element added, a register raised, another HLL merged in, or a
    /// promotion; returns whether a register changed.
    fn step(
        rng: &mut SmallRng,
        hll: &mut Rewrite,
        model: &mut [u8; REGISTERS],
        max_bytes: u64,
        kinds: [bool; 4],
    ) -> bool {
        let kind = loop {
            let k = rng.gen_range(0..4);
            if kinds[k] {
                break k;
            }
        };
        let mut raise_model = |index: usize, count: u8| {
            let changed = count > model[index];
            model[index] = model[index].max(count);
            changed
        };
        match kind {
            0 => {
                let element: Vec<u8> = (0..rng.gen_range(0..12)).map(|_| rng.r#gen()).collect();
                let (index, count) = murmur::pattern(&element);
                let changed = raise_model(index, count);
                assert_eq!(add(hll, &element, max_bytes), Ok(changed));
                changed
            }
            1 => {
                // Clustered indices make VAL runs that merge and split.
                let index = if rng.gen_bool(0.5) {
                    rng.gen_range(100..130)
                } else {
                    rng.gen_range(0..REGISTERS)
                };
                let count = if rng.gen_bool(0.95) {
                    rng.gen_range(1..=32)
                } else {
                    rng.gen_range(33..=63)
                };
                let changed = raise_model(index, count);
                raise(hll, index, count, max_bytes);
                if changed {
                    invalidate(&mut hll.bytes);
                }
                changed
            }
            2 => {
                let mut other = [0u8; REGISTERS];
                for _ in 0..rng.gen_range(0..40) {
                    other[rng.gen_range(0..REGISTERS)] = rng.gen_range(1..=20);
                }
                let mut changed = false;
                for (index, &count) in other.iter().enumerate() {
                    if count != 0 {
                        changed |= raise_model(index, count);
                        raise(hll, index, count, max_bytes);
                    }
                }
                invalidate(&mut hll.bytes);
                changed
            }
            _ => {
                if hll.bytes[ENCODING_AT] == SPARSE {
                    hll.bytes = sparse::to_dense(&hll.bytes).expect("a valid sparse HLL");
                }
                false
            }
        }
    }

    /// The model test of the format: seeded random writes with operation kinds switched on and
    /// off, against a plain array of registers, every invariant checked after every step.
    #[test]
    fn model_random_writes() {
        for seed in 0..12 {
            let mut rng = SmallRng::seed_from_u64(seed);
            let max_bytes = [0, 40, 300, 3000, 20_000][rng.gen_range(0..5)];
            let mut kinds = [
                rng.gen_bool(0.9),
                rng.gen_bool(0.6),
                rng.gen_bool(0.3),
                rng.gen_bool(0.05),
            ];
            kinds[0] |= !kinds.iter().any(|&k| k);
            let mut hll = Rewrite::new(sparse::new());
            let mut model = [0u8; REGISTERS];
            check_invariants(&hll.bytes, &model, max_bytes, false);
            for _ in 0..400 {
                let changed = step(&mut rng, &mut hll, &mut model, max_bytes, kinds);
                check_invariants(&hll.bytes, &model, max_bytes, changed);
                assert_eq!(hll.past_end, 0, "a valid HLL never has a cut XZERO");
            }
        }
    }

    #[test]
    fn check_is_redis_is_hll_object() {
        let sparse = sparse::new();
        assert_eq!(check(&sparse), Some(Encoding::Sparse));
        assert_eq!(check(&sparse[..HEADER_BYTES]), Some(Encoding::Sparse));
        assert_eq!(check(&sparse[..HEADER_BYTES - 1]), None);
        let dense = sparse::to_dense(&sparse).unwrap();
        assert_eq!(check(&dense), Some(Encoding::Dense));
        assert_eq!(check(&dense[..DENSE_BYTES - 1]), None);
        let mut bad = sparse.clone();
        bad[ENCODING_AT] = 2;
        assert_eq!(check(&bad), None);
        bad = sparse.clone();
        bad[0] = b'h';
        assert_eq!(check(&bad), None);
        assert_eq!(cached(&sparse), Some(0));
        let mut stale = sparse;
        invalidate(&mut stale);
        assert_eq!(cached(&stale), None);
        store_cached(&mut stale, 1 << 63);
        assert_eq!(cached(&stale), None);
    }
}
