//! Summary statistics for per-round timings: median, spread, and ratios against a peer.
//!
//! Medians rather than means: on a shared two-core machine a single round can be stretched by a
//! neighbour several times over, and one such outlier would move a mean but not a median.
//!
//! The suites beside redis-server take a [`Sample`] per server and round, and compare the two
//! servers by [`paired_ratios`]: densekv / redis of each round that has both, whose median the
//! tables show. The two servers of a round ran seconds apart, so pairing them cancels a noisy
//! neighbour's slow minute, where a ratio of the two [`median_of`]s could pair one server's quiet
//! round with the other's loud one.

use crate::server_proc::ServerKind;

/// Median of `values`; the mean of the two middle values for an even count. `None` when empty
/// or when any value is NaN (a NaN timing means the measurement itself is broken).
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        f64::midpoint(sorted[mid - 1], sorted[mid])
    })
}

/// `(max - min) / median` of `values`, a rough noise indicator printed next to each median.
pub fn spread(values: &[f64]) -> Option<f64> {
    let mid = median(values)?;
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    (mid > 0.0).then(|| (max - min) / mid)
}

/// `value / peer`, or `None` when the peer is missing or zero.
pub fn ratio(value: f64, peer: Option<f64>) -> Option<f64> {
    peer.filter(|p| *p > 0.0).map(|p| value / p)
}

/// A measurement of one server in one round.
pub trait Sample {
    fn server(&self) -> ServerKind;
    fn round(&self) -> usize;
}

/// Implements [`Sample`] for types with `server` and `round` fields.
macro_rules! impl_sample {
    ($($t:ty),*) => {$(
        impl $crate::stats::Sample for $t {
            fn server(&self) -> $crate::server_proc::ServerKind {
                self.server
            }
            fn round(&self) -> usize {
                self.round
            }
        }
    )*};
}
pub(crate) use impl_sample;

/// The median of `pick` over `kind`'s samples.
pub fn median_of<T: Sample>(
    samples: &[&T],
    kind: ServerKind,
    pick: impl Fn(&T) -> Option<f64>,
) -> Option<f64> {
    let values: Vec<f64> = samples
        .iter()
        .filter(|s| s.server() == kind)
        .filter_map(|s| pick(s))
        .collect();
    median(&values)
}

/// densekv / redis of each round that has both figures.
pub fn paired_ratios<T: Sample>(samples: &[&T], pick: impl Fn(&T) -> Option<f64>) -> Vec<f64> {
    samples
        .iter()
        .filter(|d| d.server() == ServerKind::Densekv)
        .filter_map(|d| {
            let peer = samples
                .iter()
                .find(|r| r.server() == ServerKind::Redis && r.round() == d.round())
                .and_then(|r| pick(r));
            ratio(pick(d)?, peer)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{median, median_of, paired_ratios, ratio, spread};
    use crate::server_proc::ServerKind;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[5.0]), Some(5.0));
    }

    #[test]
    fn median_ignores_one_outlier() {
        assert_eq!(median(&[10.0, 11.0, 1000.0, 9.0, 10.5]), Some(10.5));
    }

    #[test]
    fn median_rejects_empty_and_nan() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN, 2.0]), None);
    }

    #[test]
    fn spread_and_ratio() {
        assert_eq!(spread(&[9.0, 10.0, 11.0]), Some(0.2));
        assert_eq!(ratio(3.0, Some(2.0)), Some(1.5));
        assert_eq!(ratio(3.0, Some(0.0)), None);
        assert_eq!(ratio(3.0, None), None);
    }

    struct Measured {
        server: ServerKind,
        round: usize,
        value: f64,
    }

    super::impl_sample!(Measured);

    #[test]
    fn ratios_pair_the_servers_of_a_round() {
        let (d, r) = (ServerKind::Densekv, ServerKind::Redis);
        let rounds = [
            (d, 1, 1.0),
            (r, 1, 2.0),
            (d, 2, 8.0),
            (r, 2, 2.0),
            (d, 3, 5.0),
        ]
        .map(|(server, round, value)| Measured {
            server,
            round,
            value,
        });
        let all: Vec<&Measured> = rounds.iter().collect();
        let pick = |s: &Measured| Some(s.value);
        // Round 3 has no redis figure: two ratios, 0.5 and 4.0.
        assert_eq!(paired_ratios(&all, pick), [0.5, 4.0]);
        assert_eq!(median_of(&all, d, pick), Some(5.0));
        assert_eq!(median_of(&all, r, pick), Some(2.0));
    }
}
