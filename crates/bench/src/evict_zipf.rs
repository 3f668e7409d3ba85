//! A Zipf sampler: ranks `1..=n` with P(k) = k^-s / H(n, s), H(n, s) = Σ_{i=1..n} i^-s, drawn by
//! Hörmann and Derflinger's rejection-inversion ("Rejection-inversion to generate variates from
//! monotone discrete distributions", ACM TOMACS 6(3), 1996), as Apache Commons RNG's
//! `RejectionInversionZipfSampler` implements it.
//!
//! ```text
//! h(x)  = x^-s                                   the density's hat, decreasing in x
//! H(x)  = ∫ h = (x^(1-s) - 1) / (1 - s)          (log x at s = 1; `h_integral`)
//! draw:   u uniform in (H(1.5) - 1, H(n + 0.5)]
//!         x = H⁻¹(u), k = round(x) clamped to 1..=n
//!         accept k if k - x ≤ c  or  u ≥ H(k + 0.5) - h(k)     (else draw again)
//! ```
//!
//! Each draw costs O(1) (a few `ln`/`exp`) whatever n is, with no table: a 2M-key cache
//! workload needs neither the 16 MB cumulative table of inversion by search nor its setup, and
//! a try is rejected rarely (the hat hugs the pmf; see the test that counts tries). The helpers
//! `expm1(x)/x` and `ln_1p(x)/x` keep H and H⁻¹ accurate as s → 1, where the closed forms
//! divide zero by zero.
//!
//! Uniforms come from [`SplitMix64`] (53 bits per double), so a seed fixes the whole stream:
//! both servers of a round are sent exactly the same keys.

use crate::rng::SplitMix64;

/// Tries per draw before [`Zipf::sample`] gives up and returns rank 1.
const TRIES_MAX: usize = 64;

/// A Zipf(s) distribution over the ranks `1..=n`.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: u64,
    exponent: f64,
    /// H(1.5) - 1: the lower end of u's range (exclusive).
    h_integral_x1: f64,
    /// H(n + 0.5): the upper end.
    h_integral_n: f64,
    /// The paper's squeeze constant: k - x at or below it is accepted without evaluating H.
    squeeze: f64,
    rng: SplitMix64,
}

impl Zipf {
    /// Ranks `1..=n` with exponent `exponent` (> 0), uniforms from `seed`.
    pub fn new(n: u64, exponent: f64, seed: u64) -> Self {
        assert!(n >= 1, "a Zipf distribution needs at least one rank");
        assert!(exponent > 0.0, "the Zipf exponent must be positive");
        let h_integral = |x: f64| h_integral(x, exponent);
        let h_integral_inverse = |x: f64| h_integral_inverse(x, exponent);
        Self {
            n,
            exponent,
            h_integral_x1: h_integral(1.5) - 1.0,
            h_integral_n: h_integral(n as f64 + 0.5),
            squeeze: 2.0 - h_integral_inverse(h_integral(2.5) - h(2.0, exponent)),
            rng: SplitMix64::new(seed),
        }
    }

    /// The next rank, in `1..=n`; rank 1 is the most frequent.
    pub fn sample(&mut self) -> u64 {
        // A try is accepted with probability above one half (the tests measure it), so 64
        // tries all fail with probability below 2^-64: the bound keeps the loop finite, and
        // its fallback is never reached in practice.
        (0..TRIES_MAX).find_map(|_| self.try_once()).unwrap_or(1)
    }

    /// One try of rejection-inversion: a rank, or `None` when the try is rejected.
    fn try_once(&mut self) -> Option<u64> {
        let uniform = (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        let u = self.h_integral_n + uniform * (self.h_integral_x1 - self.h_integral_n);
        let x = h_integral_inverse(u, self.exponent);
        let k = ((x + 0.5) as u64).clamp(1, self.n);
        let kf = k as f64;
        let accepted = kf - x <= self.squeeze
            || u >= h_integral(kf + 0.5, self.exponent) - h(kf, self.exponent);
        accepted.then_some(k)
    }
}

/// h(x) = x^-s.
fn h(x: f64, exponent: f64) -> f64 {
    (-exponent * x.ln()).exp()
}

/// H(x) = (x^(1-s) - 1) / (1 - s), written as `expm1(t)/t · ln x` with t = (1 - s) ln x.
fn h_integral(x: f64, exponent: f64) -> f64 {
    let log_x = x.ln();
    expm1_over((1.0 - exponent) * log_x) * log_x
}

/// H⁻¹(x) = (1 + x(1 - s))^(1/(1-s)), written as `exp(ln_1p(t)/t · x)` with t = x(1 - s).
fn h_integral_inverse(x: f64, exponent: f64) -> f64 {
    // t < -1 only by rounding at the range's end; clamping keeps ln_1p finite.
    let t = (x * (1.0 - exponent)).max(-1.0);
    (ln_1p_over(t) * x).exp()
}

/// ln(1 + x) / x, by its series near 0.
fn ln_1p_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, by its series near 0.
fn expm1_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x))
    }
}

#[cfg(test)]
mod tests {
    use super::Zipf;

    /// P(k) for k in 1..=n.
    fn pmf(n: u64, s: f64) -> Vec<f64> {
        let weights: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-s)).collect();
        let total: f64 = weights.iter().sum();
        weights.iter().map(|w| w / total).collect()
    }

    /// Draws `draws` ranks and checks every rank's count against the pmf: within 5 standard
    /// deviations each, and a chi-square with n - 1 degrees of freedom below its 99.9th
    /// percentile (a generous bound, ~ dof + 4.5 sqrt(2 dof) + 10).
    fn check_distribution(n: u64, s: f64, draws: u64, seed: u64) {
        let mut zipf = Zipf::new(n, s, seed);
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            let k = zipf.sample();
            assert!((1..=n).contains(&k));
            counts[(k - 1) as usize] += 1;
        }
        let mut chi_square = 0.0;
        for (k, (&count, p)) in counts.iter().zip(pmf(n, s)).enumerate() {
            let expected = p * draws as f64;
            let sigma = (expected * (1.0 - p)).sqrt();
            let off = (count as f64 - expected).abs();
            assert!(
                off <= 5.0 * sigma + 1.0,
                "n {n} s {s}: rank {} drawn {count} times, expected {expected:.0}",
                k + 1
            );
            chi_square += (count as f64 - expected).powi(2) / expected;
        }
        let dof = (n - 1) as f64;
        let bound = dof + 4.5 * (2.0 * dof).sqrt() + 10.0;
        assert!(
            chi_square < bound,
            "n {n} s {s}: chi-square {chi_square:.1} ≥ {bound:.1}"
        );
    }

    #[test]
    fn small_distributions_match_their_pmf() {
        check_distribution(10, 0.99, 400_000, 1);
        check_distribution(50, 0.5, 400_000, 2);
        check_distribution(20, 1.0, 400_000, 3);
        check_distribution(30, 1.5, 400_000, 4);
        check_distribution(1, 0.99, 1_000, 5);
    }

    #[test]
    fn the_cache_workload_has_the_expected_head_and_tail() {
        // The suite's stream: 2M ranks at s = 0.99. P(1) = 1 / H(2M, 0.99) ≈ 0.0642.
        let (n, s) = (2_000_000u64, 0.99);
        let harmonic: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
        let draws = 1_000_000u64;
        let mut zipf = Zipf::new(n, s, 42);
        let (mut first, mut top_1000, mut tail) = (0u64, 0u64, 0u64);
        for _ in 0..draws {
            match zipf.sample() {
                1 => first += 1,
                k if k <= 1000 => top_1000 += 1,
                k if k > n / 2 => tail += 1,
                _ => {}
            }
        }
        let share = |count: u64| count as f64 / draws as f64;
        let p1 = 1.0 / harmonic;
        assert!(
            (share(first) - p1).abs() < 0.002,
            "P(1) {} vs {p1}",
            share(first)
        );
        let p_top: f64 = (1..=1000).map(|k| (k as f64).powf(-s)).sum::<f64>() / harmonic;
        assert!((share(first + top_1000) - p_top).abs() < 0.004);
        let p_tail: f64 = (n / 2 + 1..=n).map(|k| (k as f64).powf(-s)).sum::<f64>() / harmonic;
        assert!(
            (share(tail) - p_tail).abs() < 0.004,
            "tail {} vs {p_tail}",
            share(tail)
        );
    }

    #[test]
    fn tries_are_rarely_rejected() {
        for s in [0.5, 0.99, 1.0, 1.5] {
            let mut zipf = Zipf::new(2_000_000, s, 9);
            let accepted = (0..100_000).filter(|_| zipf.try_once().is_some()).count();
            assert!(
                accepted > 90_000,
                "s {s}: {accepted} of 100000 tries accepted"
            );
        }
    }

    #[test]
    fn a_seed_fixes_the_stream() {
        let draw = |seed| {
            let mut zipf = Zipf::new(2_000_000, 0.99, seed);
            (0..1000).map(|_| zipf.sample()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }
}
