//! Durations and times as operators type them: `90s`, `5m`, `48h`, `1h30m` (humantime), an RFC
//! 3339 time where a deadline may be absolute, and a ladder as whole seconds (`0,60,300`).

use chrono::{DateTime, Duration, Utc};

use crate::exit::BadInput;

/// Parses the value of `flag` as a duration.
pub(crate) fn parse(flag: &str, text: &str) -> Result<Duration, BadInput> {
    let std = humantime::parse_duration(text.trim()).map_err(|e| {
        BadInput(format!(
            "{flag} {text:?} is not a duration ({e}); write it like 90s, 5m or 48h"
        ))
    })?;
    Duration::from_std(std).map_err(|_| BadInput(format!("{flag} {text:?} is too long")))
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
    if let Ok(t) = DateTime::parse_from_rfc3339(text.trim()) {
        return Ok(t.with_timezone(&Utc));
    }
    parse(flag, text).map(|d| now + d).map_err(|_| {
        BadInput(format!(
            "{flag} {text:?} is neither a duration (90s, 5m, 48h) nor an RFC 3339 time \
             (2026-01-05T09:00:00Z)"
        ))
    })
}

/// A ladder: comma-separated whole seconds, the n-th being the delay before attempt n.
pub(crate) fn ladder(flag: &str, text: &str) -> Result<Vec<i64>, BadInput> {
    let rungs = text
        .split(',')
        .map(|s| s.trim().parse::<u32>().map(i64::from))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| {
            BadInput(format!(
                "{flag} {text:?} is not a list of whole seconds like 0,1,2,4"
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
