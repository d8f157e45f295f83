//! The few statistics every crate needs, defined once.

/// The median of `values` (the mean of the two middle values for an even count); values
/// that are not finite are left out; `None` when nothing is left.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(median_sorted(&v))
}

/// The median of an already sorted, non-empty slice (the mean of the two middle values for
/// an even length); NaN for an empty slice.
pub fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Quantile `q` (0 to 1) of an already sorted, non-empty slice, by linear interpolation
/// between the two nearest ranks (`q * (n - 1)`).
pub fn quantile_sorted(v: &[f64], q: f64) -> f64 {
    let x = q * (v.len() - 1) as f64;
    let i = x.floor() as usize;
    let j = (i + 1).min(v.len() - 1);
    v[i] + (v[j] - v[i]) * (x - i as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_ranks() {
        let v = [1.0, 2.0, 4.0, 8.0];
        assert_eq!(quantile_sorted(&v, 0.0), 1.0);
        assert_eq!(quantile_sorted(&v, 1.0), 8.0);
        assert_eq!(quantile_sorted(&v, 0.5), 3.0);
        assert!((quantile_sorted(&v, 0.9) - 6.8).abs() < 1e-12);
        assert_eq!(quantile_sorted(&[5.0], 0.3), 5.0);
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN, 1.0]), Some(1.0));
        assert!(median_sorted(&[]).is_nan());
    }
}
