//! Durations and times as operators type them, in every front end: a duration is `90s`, `5m`,
//! `48h`, `7d` or `1h30m` (humantime's grammar); a time is RFC 3339
//! (`2026-01-05T09:00:00Z`), or a UTC date and time as a browser's date-time field sends it
//! (`2026-01-05T09:00`, `2026-01-05 09:00`); and where a time is asked for, a duration means that
//! long from now (a deadline, an `until`) or that long ago (a `since`).

use chrono::{DateTime, Duration, NaiveDateTime, Utc};

use crate::InputError;
use crate::spelling::shown;

/// Parses the value of the field `label` as a duration.
pub fn duration(label: &str, text: &str) -> Result<Duration, InputError> {
    let shown = shown(text);
    let std = humantime::parse_duration(text.trim()).map_err(|e| {
        InputError(format!(
            "{label} {shown:?} is not a duration ({e}); write it like 90s, 5m or 48h"
        ))
    })?;
    Duration::from_std(std).map_err(|_| InputError(format!("{label} {shown:?} is too long")))
}

/// Parses the value of `label` as a duration longer than zero.
pub fn positive_duration(label: &str, text: &str) -> Result<Duration, InputError> {
    let d = duration(label, text)?;
    if d <= Duration::zero() {
        return Err(InputError(format!("{label} must be longer than zero")));
    }
    Ok(d)
}

/// An absolute time in one of the accepted forms, if `text` is one.
fn absolute(text: &str) -> Option<DateTime<Utc>> {
    let t = text.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Some(d.with_timezone(&Utc));
    }
    ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(t, f).ok())
        .map(|n| n.and_utc())
}

/// A time ahead: an absolute time, or a duration from `now`. Not checked to be in the future.
pub fn deadline(label: &str, text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, InputError> {
    let shown = shown(text);
    if let Some(t) = absolute(text) {
        return Ok(t);
    }
    let d = duration(label, text).map_err(|_| {
        InputError(format!(
            "{label} {shown:?} is neither a duration (90s, 5m, 48h) nor a time \
             (2026-01-05T09:00:00Z)"
        ))
    })?;
    // A duration of a few hundred thousand years is a duration, but no time is that far ahead.
    now.checked_add_signed(d)
        .ok_or_else(|| InputError(format!("{label} {shown:?} is too far in the future")))
}

/// A time in the past, as a filter bound: an absolute time, or a duration meaning "that long
/// before `now`" (`2h`).
pub fn ago(label: &str, text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, InputError> {
    let shown = shown(text);
    if let Some(t) = absolute(text) {
        return Ok(t);
    }
    duration(label, text)
        .ok()
        .and_then(|d| now.checked_sub_signed(d))
        .ok_or_else(|| {
            InputError(format!(
                "{label} {shown:?} is neither a duration meaning \"that long ago\" (90s, 5m, 48h) \
                 nor a time (2026-01-05T09:00:00Z)"
            ))
        })
}

/// A time in the future: an absolute time or a duration from `now`; refused when not ahead.
pub fn future(label: &str, text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, InputError> {
    let shown = shown(text);
    let t = deadline(label, text, now)?;
    if t <= now {
        return Err(InputError(format!(
            "{label} {shown:?} is not in the future (now is {})",
            now.format("%Y-%m-%dT%H:%M:%SZ")
        )));
    }
    Ok(t)
}

/// A duration for people: `2ms`, `9s 998ms`, `3h 12m`, cut to milliseconds.
pub fn human(d: Duration) -> String {
    let ms = d.num_milliseconds().max(0) as u64;
    if ms == 0 && d > Duration::zero() {
        return format!("{}µs", d.num_microseconds().unwrap_or(0));
    }
    // Above a minute, seconds are enough.
    let ms = if ms >= 60_000 { ms / 1000 * 1000 } else { ms };
    humantime::format_duration(std::time::Duration::from_millis(ms)).to_string()
}

/// An age for people in words: [`human`] with a space before each unit written as a word
/// (`7 days`, `1 month 2 days`, `1 day 12h`, `5m`).
pub fn human_age(d: Duration) -> String {
    let short = human(d);
    let mut out = String::with_capacity(short.len() + 4);
    let mut chars = short.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c.is_ascii_digit() {
            let unit: String = chars.clone().take_while(|c| c.is_alphabetic()).collect();
            if unit.len() > 2 {
                out.push(' ');
            }
        }
    }
    out
}

/// A span as a person reads it: `3d 4h`, `2h 5m`, `12m 5s`, `40s` (two units at most; a
/// negative span reads as zero).
pub fn span(d: Duration) -> String {
    let s = d.num_seconds().max(0);
    let (days, hours, mins, secs) = (s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
    if days > 0 {
        format!("{days}d {hours}h")
    } else if hours > 0 {
        format!("{hours}h {mins}m")
    } else if mins > 0 {
        format!("{mins}m {secs}s")
    } else {
        format!("{secs}s")
    }
}

/// How far `t` is from `now`, as every front end shows it beside the absolute time:
/// `3m 5s ago`, `in 2h 0m`.
pub fn relative(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let d = now - t;
    if d >= Duration::zero() {
        format!("{} ago", span(d))
    } else {
        format!("in {}", span(-d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap()
    }

    #[test]
    fn relative_times_read_both_ways() {
        assert_eq!(relative(now() - Duration::seconds(185), now()), "3m 5s ago");
        assert_eq!(relative(now() + Duration::hours(2), now()), "in 2h 0m");
        assert_eq!(relative(now(), now()), "0s ago");
        assert_eq!(span(Duration::seconds(3 * 86400 + 4 * 3600)), "3d 4h");
    }

    #[test]
    fn ages_read_as_words() {
        assert_eq!(human_age(Duration::days(7)), "7 days");
        assert_eq!(
            human_age(Duration::days(1) + Duration::hours(12)),
            "1 day 12h"
        );
        assert_eq!(human_age(Duration::minutes(5)), "5m");
    }

    #[test]
    fn operator_durations() {
        assert_eq!(duration("--delay", "90s").unwrap(), Duration::seconds(90));
        assert_eq!(duration("--delay", "1h30m").unwrap(), Duration::minutes(90));
        assert_eq!(duration("--delay", "7d").unwrap(), Duration::days(7));
        let e = duration("--delay", "soon").unwrap_err().0;
        assert!(e.contains("--delay") && e.contains("90s"), "{e}");
        assert!(positive_duration("--lease", "0s").is_err());
    }

    #[test]
    fn times_are_absolute_or_relative() {
        assert_eq!(
            deadline("--deadline", "1h", now()).unwrap(),
            now() + Duration::hours(1)
        );
        assert_eq!(
            deadline("--deadline", "2026-01-06T00:00:00+01:00", now()).unwrap(),
            Utc.with_ymd_and_hms(2026, 1, 5, 23, 0, 0).unwrap()
        );
        assert_eq!(
            ago("since", "2026-01-04T08:30", now()).unwrap(),
            Utc.with_ymd_and_hms(2026, 1, 4, 8, 30, 0).unwrap()
        );
        assert_eq!(
            ago("since", "1h30m", now()).unwrap(),
            now() - Duration::minutes(90)
        );
        assert!(ago("--since", "yesterday", now()).is_err());
        assert!(future("--until", "1h", now()).is_ok());
        assert!(future("--until", "2020-01-01T00:00:00Z", now()).is_err());
        // Found by fuzzing the CLI's parsers: a duration past the calendar's end was a panic.
        let e = deadline("--deadline", "300000y", now()).unwrap_err().0;
        assert!(e.contains("too far in the future"), "{e}");
    }

    #[test]
    fn durations_for_people() {
        assert_eq!(human(Duration::milliseconds(2)), "2ms");
        assert_eq!(human(Duration::milliseconds(9_998)), "9s 998ms");
        assert_eq!(human(Duration::seconds(3723)), "1h 2m 3s");
        assert_eq!(human(Duration::microseconds(5)), "5µs");
    }
}
