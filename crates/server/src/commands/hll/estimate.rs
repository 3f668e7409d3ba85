//! The cardinality estimate from a register histogram: Otmar Ertl's improved estimator ("New
//! cardinality estimation algorithms for HyperLogLog sketches", arXiv:1702.01284), as Redis
//! 7.0's `hllCount`, `hllTau` and `hllSigma` compute it. The same f64 operations run in the
//! same order (IEEE double, round to nearest; `pow(1 - x, 2)` is `(1 - x) * (1 - x)`, which is
//! what gcc compiles it to), so every estimate is the integer Redis gives, bit for bit.
//!
//! ```text
//!  m = 16384, C[k] = registers at value k
//!  z = m·τ(1 − C[51]/m);  for k = 50 … 1: z = (z + C[k]) / 2;  z += m·σ(C[0]/m)
//!  E = llroundl(α∞·m·m / z),  α∞ = 1 / (2 ln 2)
//! ```
//! Registers above 51 (only a hand-made dense string has them) are in no term, as in Redis.

use super::repr::{REGISTERS, RUN_MAX};

/// `HLL_ALPHA_INF`, 0.5 / ln 2, as Redis writes it.
#[allow(
    clippy::excessive_precision,
    reason = "Redis's literal, rounded to f64 as C does"
)]
const ALPHA_INF: f64 = 0.721_347_520_444_481_703_680;

/// The series converge within ~60 rounds for every x a histogram can give; the bound only
/// keeps a loop finite should the floating point ever misbehave.
const ROUNDS_MAX: usize = 10_000;

/// `hllSigma(x)`, for x in [0, 1].
#[allow(
    clippy::float_cmp,
    reason = "Redis's exact comparisons: the series stops when z stops moving"
)]
pub fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    for _ in 0..ROUNDS_MAX {
        x *= x;
        let previous = z;
        z += x * y;
        y += y;
        if previous == z {
            break;
        }
    }
    z
}

/// `hllTau(x)`, for x in [0, 1].
#[allow(
    clippy::float_cmp,
    reason = "Redis's exact comparisons: the series stops when z stops moving"
)]
pub fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    for _ in 0..ROUNDS_MAX {
        x = x.sqrt();
        let previous = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if previous == z {
            break;
        }
    }
    z / 3.0
}

/// The estimate from `histogram` (`hllCount` after its histogram step), as the u64 Redis
/// stores in the cache and replies as a signed 64-bit integer.
pub fn estimate(histogram: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let q = usize::from(RUN_MAX) - 1;
    let mut z = m * tau((m - f64::from(histogram[q + 1])) / m);
    for j in (1..=q).rev() {
        z += f64::from(histogram[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histogram[0]) / m);
    round_like_redis(ALPHA_INF * m * m / z)
}

/// `(uint64_t)(double)llroundl(e)` on x86-64: halves round away from zero; a value at or past
/// 2^63 (infinity, when a hand-made dense string has every register above 50) is out of
/// `long long`'s range, where the x87 conversion gives `LLONG_MIN`, read back as 2^63.
fn round_like_redis(e: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    let r = e.round();
    if r < TWO_63 { r as u64 } else { 1 << 63 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_full_histograms() {
        let mut h = [0u32; 64];
        h[0] = REGISTERS as u32;
        assert_eq!(estimate(&h), 0);
        let mut h = [0u32; 64];
        h[63] = REGISTERS as u32;
        assert_eq!(estimate(&h), 1 << 63);
        let mut h = [0u32; 64];
        h[0] = REGISTERS as u32 - 1;
        h[1] = 1;
        assert_eq!(estimate(&h), 1);
    }

    #[test]
    fn series_are_finite() {
        for k in 0..=REGISTERS {
            let x = k as f64 / REGISTERS as f64;
            assert!(tau(x).is_finite());
            assert!(k == REGISTERS || sigma(x).is_finite());
        }
    }
}
