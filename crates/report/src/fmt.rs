//! Number formatting for every table, summary and chart of hpcscope: one home, a few named
//! styles, each stable (the same number always gives the same text).
//!
//! * [`num`]: `sig` significant digits, exponent outside 1e-4..1e10 (tables, verdicts);
//! * [`metric`]: four significant digits, integers as integers, `1.370E12` outside
//!   1e-3..1e6 (the counter metric tables of seed 001);
//! * [`plain`]: up to six decimals, trailing zeros dropped (history values, where the
//!   digits recorded are the digits shown);
//! * [`label`]: three significant digits for chart labels; [`tick`]: short axis ticks
//!   (`1k`, `20M`).
//!
//! None of them ever prints `NaN` or `inf` as a number: a value that is not finite is shown
//! as a dash (`-`, `–`) or `n/a`, so a table never presents a failed computation as a result.

pub use crate::axis::{fmt_tick as tick, fmt_value as label};

/// `v` with `sig` significant digits, without exponent for usual magnitudes (1e-4 to 1e10);
/// `-` when `v` is not finite.
pub fn num(v: f64, sig: usize) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let mag = v.abs().log10().floor() as i32;
    if !(-4..=9).contains(&mag) {
        return format!("{:.*e}", sig.saturating_sub(1), v);
    }
    let decimals = (sig as i32 - 1 - mag).max(0) as usize;
    format!("{v:.decimals$}")
}

/// A metric value: four significant digits; whole numbers below 1e6 as integers; `1.370E12`
/// (scientific, capital E) outside 1e-3..1e6; `NA` when not finite.
pub fn metric(v: f64) -> String {
    if !v.is_finite() {
        return "NA".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if v.fract() == 0.0 && a < 1e6 {
        return format!("{v:.0}");
    }
    if !(1e-3..1e6).contains(&a) {
        let s = format!("{v:.3e}");
        // 1.370e12 -> 1.370E12
        return s.replace('e', "E");
    }
    let digits = 4 - 1 - a.log10().floor() as i32;
    let d = digits.clamp(0, 6) as usize;
    format!("{v:.d$}")
}

/// Up to six decimals with trailing zeros dropped (`0.25`, `1200`); `1.2345e-7` outside
/// 1e-3..1e6; `–` when not finite.
pub fn plain(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    if x == 0.0 {
        // -0.0 too: a zero is shown without a sign.
        return "0".into();
    }
    let a = x.abs();
    if a != 0.0 && !(1e-3..1e6).contains(&a) {
        format!("{x:.4e}")
    } else {
        format!("{x:.6}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// An optional number with `sig` significant digits, `-` when absent.
pub fn opt(v: Option<f64>, sig: usize) -> String {
    v.map_or_else(|| "-".into(), |x| num(x, sig))
}

/// A count or a measured amount: an integer when it is one (`2`, not `2.000`), else
/// [`num`] with four significant digits.
pub fn count(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        num(v, 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styles() {
        assert_eq!(num(1234.5678, 4), "1235");
        assert_eq!(num(0.012345, 3), "0.0123");
        assert_eq!(num(1.5e12, 3), "1.50e12");
        assert_eq!(num(f64::NAN, 3), "-");
        assert_eq!(num(f64::INFINITY, 3), "-");
        assert_eq!(metric(2.0), "2");
        assert_eq!(metric(1.37e12), "1.370E12");
        assert_eq!(metric(0.5), "0.5000");
        assert_eq!(metric(f64::NAN), "NA");
        assert_eq!(plain(0.25), "0.25");
        assert_eq!(plain(1200.0), "1200");
        assert_eq!(plain(f64::NAN), "–");
        // Negative zero prints without its sign in every style.
        for f in [|v| num(v, 3), metric, plain, count] {
            assert_eq!(f(-0.0), "0");
        }
        assert_eq!(count(2.0), "2");
        assert_eq!(count(2.5), "2.500");
        assert_eq!(opt(None, 3), "-");
    }
}
