//! Durations and times as operators type them: `90s`, `5m`, `48h`, `1h30m` (humantime), an RFC
//! 3339 time where a deadline may be absolute, and a ladder as whole seconds (`0,60,300`).

use chrono::{DateTime, Duration, Utc};

use crate::exit::BadInput;

/// `text` as messages quote it: cut to 64 characters, so a 100 KB value is not echoed whole.
fn shown(text: &str) -> String {
    crate::output::cut(text, 64)
}

/// Parses the value of `flag` as a duration.
pub(crate) fn parse(flag: &str, text: &str) -> Result<Duration, BadInput> {
    let shown = shown(text);
    let std = humantime::parse_duration(text.trim()).map_err(|e| {
        BadInput(format!(
            "{flag} {shown:?} is not a duration ({e}); write it like 90s, 5m or 48h"
        ))
    })?;
    Duration::from_std(std).map_err(|_| BadInput(format!("{flag} {shown:?} is too long")))
}

/// Parses the value of `flag` as a positive duration.
pub(crate) fn parse_positive(flag: &str, text: &str) -> Result<Duration, BadInput> {
    let d = parse(flag, text)?;
    if d <= Duration::zero() {
        return Err(BadInput(format!("{flag} must be longer than zero")));
    }
    Ok(d)
}

/// A deadline: an RFC 3339 time, or a duration from `now`.
pub(crate) fn deadline(
    flag: &str,
    text: &str,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, BadInput> {
    let shown = shown(text);
    if let Ok(t) = DateTime::parse_from_rfc3339(text.trim()) {
        return Ok(t.with_timezone(&Utc));
    }
    let d = parse(flag, text).map_err(|_| {
        BadInput(format!(
            "{flag} {shown:?} is neither a duration (90s, 5m, 48h) nor an RFC 3339 time \
             (2026-01-05T09:00:00Z)"
        ))
    })?;
    // A duration of a few hundred thousand years is a duration, but no time is that far ahead.
    now.checked_add_signed(d)
        .ok_or_else(|| BadInput(format!("{flag} {shown:?} is too far in the future")))
}

/// A time in the past, as a filter bound: an RFC 3339 time, or a duration meaning "that long
/// before `now`" (`--since 2h`).
pub(crate) fn ago(flag: &str, text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, BadInput> {
    let shown = shown(text);
    if let Ok(t) = DateTime::parse_from_rfc3339(text.trim()) {
        return Ok(t.with_timezone(&Utc));
    }
    parse(flag, text)
        .ok()
        .and_then(|d| now.checked_sub_signed(d))
        .ok_or_else(|| {
            BadInput(format!(
                "{flag} {shown:?} is neither a duration meaning \"that long ago\" (90s, 5m, 48h) \
                 nor an RFC 3339 time (2026-01-05T09:00:00Z)"
            ))
        })
}

/// A time in the future: an RFC 3339 time or a duration from `now`; refused when not ahead.
pub(crate) fn future(
    flag: &str,
    text: &str,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, BadInput> {
    let shown = shown(text);
    let t = deadline(flag, text, now)?;
    if t <= now {
        return Err(BadInput(format!(
            "{flag} {shown:?} is not in the future (now is {})",
            now.format("%Y-%m-%dT%H:%M:%SZ")
        )));
    }
    Ok(t)
}

/// A duration for people: `2ms`, `9s 998ms`, `3h 12m`, cut to milliseconds.
pub(crate) fn human(d: Duration) -> String {
    let ms = d.num_milliseconds().max(0) as u64;
    if ms == 0 && d > Duration::zero() {
        return format!("{}µs", d.num_microseconds().unwrap_or(0));
    }
    // Above a minute, seconds are enough.
    let ms = if ms >= 60_000 { ms / 1000 * 1000 } else { ms };
    humantime::format_duration(std::time::Duration::from_millis(ms)).to_string()
}

/// A ladder: comma-separated whole seconds, the n-th being the delay before attempt n.
pub(crate) fn ladder(flag: &str, text: &str) -> Result<Vec<i64>, BadInput> {
    let shown = shown(text);
    let rungs = text
        .split(',')
        .map(|s| s.trim().parse::<u32>().map(i64::from))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| {
            BadInput(format!(
                "{flag} {shown:?} is not a list of whole seconds like 0,1,2,4"
            ))
        })?;
    if rungs.is_empty() {
        return Err(BadInput(format!("{flag} needs at least one rung")));
    }
    Ok(rungs)
}

/// A virtual-time offset as the demo prints it: `+0s`, `+60s`, `+6m00s`, `+31m00s`, `+2h36m`.
pub(crate) fn offset(secs: i64) -> String {
    match secs {
        s if s < 120 => format!("+{s}s"),
        s if s < 7200 => format!("+{}m{:02}s", s / 60, s % 60),
        s => format!("+{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn operator_durations() {
        assert_eq!(parse("--delay", "90s").unwrap(), Duration::seconds(90));
        assert_eq!(parse("--delay", "5m").unwrap(), Duration::minutes(5));
        assert_eq!(parse("--delay", "48h").unwrap(), Duration::hours(48));
        let e = parse("--delay", "soon").unwrap_err().0;
        assert!(e.contains("--delay") && e.contains("90s"), "{e}");
        assert!(parse_positive("--lease", "0s").is_err());
    }

    #[test]
    fn deadlines_are_durations_or_times() {
        let now = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
        assert_eq!(
            deadline("--deadline", "1h", now).unwrap(),
            now + Duration::hours(1)
        );
        assert_eq!(
            deadline("--deadline", "2026-01-06T00:00:00+01:00", now).unwrap(),
            Utc.with_ymd_and_hms(2026, 1, 5, 23, 0, 0).unwrap()
        );
        assert!(deadline("--deadline", "tomorrow", now).is_err());
        // Found by parser_fuzz: a duration past the calendar's end was a panic.
        let e = deadline("--deadline", "300000y", now).unwrap_err().0;
        assert!(e.contains("too far in the future"), "{e}");
    }

    #[test]
    fn past_and_future_times() {
        let now = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
        assert_eq!(ago("--since", "2h", now).unwrap(), now - Duration::hours(2));
        assert_eq!(
            ago("--since", "2026-01-01T00:00:00Z", now).unwrap(),
            Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
        );
        assert!(ago("--since", "yesterday", now).is_err());
        assert!(future("--until", "1h", now).is_ok());
        assert!(future("--until", "2020-01-01T00:00:00Z", now).is_err());
        assert_eq!(human(Duration::milliseconds(2)), "2ms");
        assert_eq!(human(Duration::milliseconds(9_998)), "9s 998ms");
        assert_eq!(human(Duration::seconds(3723)), "1h 2m 3s");
        assert_eq!(human(Duration::microseconds(5)), "5µs");
    }

    #[test]
    fn ladders_and_offsets() {
        assert_eq!(
            ladder("--demo-ladder", "0, 1,2,4").unwrap(),
            vec![0, 1, 2, 4]
        );
        assert!(ladder("--demo-ladder", "0,-1").is_err());
        assert!(ladder("--demo-ladder", "").is_err());
        let got: Vec<_> = [0, 60, 360, 1860, 9360, 46860].map(offset).into();
        assert_eq!(
            got,
            ["+0s", "+60s", "+6m00s", "+31m00s", "+2h36m", "+13h01m"]
        );
    }
}
