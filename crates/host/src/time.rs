//! Time: Unix seconds now, UTC dates in RFC 3339 form, and the dates users type on the
//! command line (proleptic Gregorian calendar, Howard Hinnant's civil-date algorithms).

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now.
pub fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The (year, month, day) of `days` since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m as u32, d as u32)
}

/// Days since 1970-01-01 of (year, month, day).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Unix seconds as RFC 3339 UTC with millisecond precision, `2026-01-31T12:00:00.000Z`.
pub fn format_rfc3339(unix: f64) -> String {
    let ms_total = (unix * 1000.0).round() as i64;
    let secs = ms_total.div_euclid(1000);
    let ms = ms_total.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (whole seconds).
pub fn format_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    format_utc(now_unix().max(0.0) as u64)
}

/// Parses a date a user typed: `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS]` (UTC, optional `Z`), or
/// Unix seconds; the error says what is accepted.
pub fn parse_time(s: &str) -> Result<f64, String> {
    if let Ok(x) = s.parse::<f64>() {
        return Ok(x);
    }
    let bad = || {
        format!("`{s}` is not a date: use YYYY-MM-DD, YYYY-MM-DDTHH:MM:SS (UTC) or Unix seconds")
    };
    let s2 = s.trim_end_matches('Z');
    let (date, time) = s2.split_once(['T', ' ']).unwrap_or((s2, "00:00:00"));
    let d: Vec<i64> = date
        .split('-')
        .map(|p| p.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let t: Vec<f64> = time
        .split(':')
        .map(|p| p.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    if d.len() != 3
        || t.is_empty()
        || t.len() > 3
        || !(1..=12).contains(&d[1])
        || !(1..=31).contains(&d[2])
    {
        return Err(bad());
    }
    let days = days_from_civil(d[0], d[1], d[2]);
    let secs =
        t[0] * 3600.0 + t.get(1).copied().unwrap_or(0.0) * 60.0 + t.get(2).copied().unwrap_or(0.0);
    Ok(days as f64 * 86_400.0 + secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_414), (2025, 11, 22));
        for days in [-800_000, -1, 0, 11_016, 20_414, 2_000_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m.into(), d.into()), days);
        }
        assert_eq!(format_rfc3339(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_rfc3339(951_782_400.5), "2000-02-29T00:00:00.500Z");
        assert_eq!(format_rfc3339(1_767_225_599.0), "2025-12-31T23:59:59.000Z");
        assert_eq!(format_utc(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn typed_dates() {
        assert_eq!(parse_time("1970-01-01").unwrap(), 0.0);
        assert_eq!(parse_time("2000-02-29T00:00:00.5Z").unwrap(), 951_782_400.5);
        assert_eq!(parse_time("2025-12-31 23:59:59").unwrap(), 1_767_225_599.0);
        assert_eq!(parse_time("1700000000").unwrap(), 1.7e9);
        assert!(parse_time("yesterday").is_err());
    }
}
