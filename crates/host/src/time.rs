//! Time: Unix seconds now, UTC dates in RFC 3339 form, and the dates users type on the
//! command line (the calendar arithmetic and validation are jiff's).

use std::time::{SystemTime, UNIX_EPOCH};

use jiff::tz::TimeZone;
use jiff::{Timestamp, civil};

/// Seconds since the Unix epoch, now.
pub fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The instant of `unix` seconds, clamped to jiff's range (years -9999 to 9999).
fn timestamp(unix: f64) -> Timestamp {
    let ms = (unix * 1000.0).round();
    let ms = if ms.is_finite() { ms as i64 } else { 0 };
    // A second inside jiff's bounds on either side (its extreme instants are not whole
    // milliseconds).
    Timestamp::from_millisecond(ms.clamp(
        Timestamp::MIN.as_millisecond() + 1000,
        Timestamp::MAX.as_millisecond() - 1000,
    ))
    .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// Unix seconds as RFC 3339 UTC with millisecond precision, `2026-01-31T12:00:00.000Z`.
pub fn format_rfc3339(unix: f64) -> String {
    timestamp(unix)
        .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (whole seconds).
pub fn format_utc(secs: u64) -> String {
    timestamp(secs as f64)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    format_utc(now_unix().max(0.0) as u64)
}

/// Parses a date a user typed: `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS[.fff]]` (UTC, a space may
/// stand for the `T`, an optional `Z`), an RFC 3339 time with an offset, or Unix seconds.
/// Calendar dates and clock times are checked (2025-02-31 and 25:00 are errors); the error
/// says what is accepted.
pub fn parse_time(s: &str) -> Result<f64, String> {
    let s = s.trim();
    if let Ok(x) = s.parse::<f64>()
        && x.is_finite()
    {
        return Ok(x);
    }
    let bad = |why: String| {
        format!(
            "`{s}` is not a date{why}: use YYYY-MM-DD, YYYY-MM-DDTHH:MM:SS (UTC), an RFC 3339 \
             time such as 2026-01-31T12:00:00+01:00, or Unix seconds"
        )
    };
    let unix = |t: Timestamp| t.as_nanosecond() as f64 / 1e9;
    // A time with an explicit offset (`Z`, `+01:00`).
    if let Ok(t) = s.parse::<Timestamp>() {
        return Ok(unix(t));
    }
    let local = s.trim_end_matches(['Z', 'z']).replacen(' ', "T", 1);
    let dt = if local.contains('T') {
        local.parse::<civil::DateTime>()
    } else {
        local
            .parse::<civil::Date>()
            .map(|d| d.to_datetime(civil::Time::midnight()))
    };
    match dt {
        Ok(dt) => TimeZone::UTC
            .to_timestamp(dt)
            .map(unix)
            .map_err(|e| bad(format!(" ({e})"))),
        Err(e) => Err(bad(format!(" ({e})"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(format_rfc3339(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_rfc3339(951_782_400.5), "2000-02-29T00:00:00.500Z");
        assert_eq!(format_rfc3339(1_767_225_599.0), "2025-12-31T23:59:59.000Z");
        assert_eq!(format_rfc3339(-1.0), "1969-12-31T23:59:59.000Z");
        assert_eq!(format_utc(1_700_000_000), "2023-11-14T22:13:20Z");
        // Out of range or not a number: clamped, never a panic.
        assert!(format_rfc3339(f64::NAN).starts_with("1970-01-01"));
        assert!(
            format_rfc3339(1e300).starts_with("9999-12-3"),
            "{}",
            format_rfc3339(1e300)
        );
    }

    #[test]
    fn typed_dates() {
        assert_eq!(parse_time("1970-01-01").unwrap(), 0.0);
        assert_eq!(parse_time("2000-02-29T00:00:00.5Z").unwrap(), 951_782_400.5);
        assert_eq!(parse_time("2025-12-31 23:59:59").unwrap(), 1_767_225_599.0);
        assert_eq!(parse_time("1700000000").unwrap(), 1.7e9);
        assert_eq!(parse_time("2026-01-31T12:00").unwrap(), 1_769_860_800.0);
        assert_eq!(
            parse_time("2026-01-31T13:00:00+01:00").unwrap(),
            1_769_860_800.0
        );
        assert!(parse_time("yesterday").is_err());
        // Impossible dates and times are errors, not the next month or day.
        for s in [
            "2025-02-31",
            "2025-02-29",
            "2025-13-01",
            "2025-01-01T99:00",
            "2025-01-01T24:00:00",
            "2025-01-01T12:60",
            "2025-1-1",
            "inf",
            "NaN",
        ] {
            let e = parse_time(s).unwrap_err();
            assert!(e.contains(s) && e.contains("YYYY-MM-DD"), "{s}: {e}");
        }
        assert_eq!(parse_time("2024-02-29").unwrap(), 1_709_164_800.0);
    }
}
