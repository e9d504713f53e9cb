//! Durations and times as operators type them: the operator library's grammar
//! ([`oprec::ops::time`]: `90s`, `5m`, `48h`, `1h30m`, RFC 3339 times), plus what only the demo
//! takes: a ladder as whole seconds (`0,60,300`) and the virtual-time offsets it prints.

pub(crate) use oprec::ops::time::{deadline, future, human};

use crate::exit::BadInput;

/// Parses the value of `flag` as a duration.
pub(crate) fn parse(flag: &str, text: &str) -> Result<chrono::Duration, BadInput> {
    Ok(oprec::ops::time::duration(flag, text)?)
}

/// Parses the value of `flag` as a positive duration.
pub(crate) fn parse_positive(flag: &str, text: &str) -> Result<chrono::Duration, BadInput> {
    Ok(oprec::ops::time::positive_duration(flag, text)?)
}

/// `text` as messages quote it: cut to 64 characters, so a 100 KB value is not echoed whole.
fn shown(text: &str) -> String {
    crate::output::cut(text, 64)
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
        assert!(parse("--delay", "soon").unwrap_err().0.contains("90s"));
    }
}
