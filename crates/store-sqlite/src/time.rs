//! Times as this store keeps them (a module of this store alone: PostgreSQL has
//! `timestamptz`): UTC text in one fixed-width format, `2026-01-05T09:00:00.000000Z`, so that SQL
//! comparing or ordering the strings compares or orders the times. Every time written or read
//! goes through here; sqlx's own chrono encoding for SQLite is never used (its width varies with
//! the fraction).

use chrono::{DateTime, Datelike, Duration, NaiveDateTime, SubsecRound, Utc};
use oprec_core::{Error, Result};

/// The stored format: four-digit year, microseconds, a literal `Z`.
const FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.6fZ";

/// The length of every stored time.
const WIDTH: usize = "2026-01-05T09:00:00.000000Z".len();

/// `t` cut to the microsecond, the precision the stored format keeps.
pub(crate) fn truncate(t: DateTime<Utc>) -> DateTime<Utc> {
    t.trunc_subsecs(6)
}

/// The stored text of `t`. Years outside 0000..=9999 would break the fixed width (and so the
/// ordering), and are refused.
pub(crate) fn text(t: DateTime<Utc>) -> Result<String> {
    if !(0..=9999).contains(&t.year()) {
        return Err(Error::InvalidInput(format!(
            "time {t} is outside the years 0000 to 9999 that the SQLite store can keep"
        )));
    }
    Ok(t.format(FORMAT).to_string())
}

/// The stored text of an optional time.
pub(crate) fn opt_text(t: Option<DateTime<Utc>>) -> Result<Option<String>> {
    t.map(text).transpose()
}

/// `t + d`, refusing an overflow (an absurd lease or delay) instead of panicking.
pub(crate) fn after(t: DateTime<Utc>, d: Duration) -> Result<DateTime<Utc>> {
    t.checked_add_signed(d)
        .ok_or_else(|| Error::InvalidInput(format!("{t} + {d} is out of range")))
}

/// Reads a stored time back; anything not in the stored format is an unreadable value.
pub(crate) fn parse(s: &str) -> Result<DateTime<Utc>> {
    let unreadable = || Error::backend(false, format!("unreadable stored time {s:?}"));
    if s.len() != WIDTH {
        return Err(unreadable());
    }
    NaiveDateTime::parse_from_str(s, FORMAT)
        .map(|t| t.and_utc())
        .map_err(|_| unreadable())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn round_trips_to_the_microsecond_at_a_fixed_width() {
        let t = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
        assert_eq!(text(t).unwrap(), "2026-01-05T09:00:00.000000Z");
        let precise = t + Duration::nanoseconds(123_456_789);
        assert_eq!(text(precise).unwrap(), "2026-01-05T09:00:00.123456Z");
        assert_eq!(parse(&text(precise).unwrap()).unwrap(), truncate(precise));
        assert_eq!(truncate(precise), t + Duration::microseconds(123_456));
        let early = Utc.with_ymd_and_hms(1, 2, 3, 4, 5, 6).unwrap();
        assert_eq!(text(early).unwrap(), "0001-02-03T04:05:06.000000Z");
        assert_eq!(parse(&text(early).unwrap()).unwrap(), early);
    }

    #[test]
    fn string_order_is_time_order() {
        let base = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
        let times = [
            base - Duration::days(400_000),
            base - Duration::microseconds(1),
            base,
            base + Duration::microseconds(1),
            base + Duration::milliseconds(999),
            base + Duration::seconds(1),
            base + Duration::days(365 * 7000),
        ];
        for pair in times.windows(2) {
            assert!(text(pair[0]).unwrap() < text(pair[1]).unwrap(), "{pair:?}");
        }
    }

    #[test]
    fn refuses_what_would_break_the_format() {
        let far = Utc.with_ymd_and_hms(10_000, 1, 1, 0, 0, 0).unwrap();
        assert!(matches!(text(far), Err(Error::InvalidInput(_))));
        assert!(after(far, Duration::MAX).is_err());
        for bad in [
            "2026-01-05 09:00:00",
            "2026-01-05T09:00:00Z",
            "2026-01-05T09:00:00.000Z",
            "2026-01-05T09:00:00.000000+01:00",
            "2026-13-05T09:00:00.000000Z",
            "",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
