//! Summary statistics for per-round timings: median, spread, and ratios against a peer.
//!
//! Medians rather than means: on a shared two-core machine a single round can be stretched by a
//! neighbour several times over, and one such outlier would move a mean but not a median.

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

#[cfg(test)]
mod tests {
    use super::{median, ratio, spread};

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
}
