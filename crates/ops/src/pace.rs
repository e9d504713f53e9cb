//! How fast a re-drive lets work back at a recovered dependency: a rate (`500/s`: one operation
//! every 1/N seconds) or a spread (`10m`: the batch spread evenly over that long), turned into the
//! gap between consecutive operations' `next_eligible_at`. Nothing sleeps: the times are stored
//! and workers find the operations as they become eligible.

use chrono::Duration;

use crate::spelling::shown;
use crate::{InputError, Spelling, time};

/// The fastest rate accepted: a microsecond apart, the precision the stores keep.
const MAX_PER_SECOND: f64 = 1_000_000.0;
/// The slowest rate accepted: one a year. Slower is a pause, and its gaps overflowed the plan's
/// arithmetic (found by parser_fuzz: `--rate 1e-308/h`).
const MIN_PER_SECOND: f64 = 1.0 / (365.0 * 86_400.0);

/// The pace of a re-drive.
#[derive(Clone, Debug, PartialEq)]
pub enum Pace {
    /// Everything eligible at once.
    AllAtOnce,
    /// At most `per_second` operations per second, as given (`500/s`).
    Rate {
        /// Operations per second.
        per_second: f64,
        /// The flag's text.
        text: String,
    },
    /// Evenly over this duration.
    Spread(Duration),
}

impl Pace {
    /// The pace from a rate or a spread (at most one of them), as typed.
    pub fn parse(
        spelling: Spelling,
        rate: Option<&str>,
        spread: Option<&str>,
    ) -> Result<Self, InputError> {
        let (rate_label, spread_label) = (spelling.label("rate"), spelling.label("spread"));
        match (rate, spread) {
            (Some(_), Some(_)) => Err(InputError(format!(
                "give {rate_label} or {spread_label}, not both: one says how fast, the other how long"
            ))),
            (Some(r), None) => Ok(Pace::Rate {
                per_second: per_second(&rate_label, r)?,
                text: r.trim().to_owned(),
            }),
            (None, Some(s)) => Ok(Pace::Spread(time::positive_duration(&spread_label, s)?)),
            (None, None) => Ok(Pace::AllAtOnce),
        }
    }

    /// Operations per second, when the pace is a rate.
    pub fn per_second(&self) -> Option<f64> {
        match self {
            Pace::Rate { per_second, .. } => Some(*per_second),
            _ => None,
        }
    }

    /// The gap between consecutive operations when `total` are re-driven, to the microsecond.
    pub fn spacing(&self, total: u64) -> Duration {
        match self {
            Pace::AllAtOnce => Duration::zero(),
            Pace::Rate { per_second, .. } => {
                Duration::microseconds(((1e6 / per_second).round() as i64).max(1))
            }
            Pace::Spread(d) if total > 1 => {
                let micros = d.num_microseconds().unwrap_or(i64::MAX);
                // More gaps than an i64 holds leaves a gap of zero, not a negative one.
                Duration::microseconds(micros / i64::try_from(total - 1).unwrap_or(i64::MAX))
            }
            Pace::Spread(_) => Duration::zero(),
        }
    }

    /// How the pace reads in the plan: `one every 2ms; the last 9s 998ms after the first`.
    pub fn describe(&self, total: u64) -> String {
        let spacing = self.spacing(total);
        if spacing.is_zero() || total < 2 {
            return "all eligible at once".to_owned();
        }
        // The last one's offset, unless it is past anything a store keeps (the re-drive then
        // refuses it); a product this large used to overflow.
        let last = i32::try_from(total - 1)
            .ok()
            .and_then(|n| spacing.checked_mul(n))
            .map_or_else(|| "past any date".to_owned(), time::human);
        let how = match self {
            Pace::Rate { text, .. } => format!("at {text}"),
            Pace::Spread(d) => format!("spread over {}", time::human(*d)),
            Pace::AllAtOnce => String::new(),
        };
        format!(
            "{how}: one every {}, the last {} after the first",
            time::human(spacing),
            last
        )
    }

    /// The pace for JSON and the audit log.
    pub fn to_json(&self, total: u64) -> serde_json::Value {
        let spacing = self.spacing(total);
        serde_json::json!({
            "rate": match self { Pace::Rate { text, .. } => Some(text.clone()), _ => None },
            "spread_s": match self { Pace::Spread(d) => Some(d.num_milliseconds() as f64 / 1000.0), _ => None },
            "spacing_ms": spacing.num_microseconds().unwrap_or(0) as f64 / 1000.0,
        })
    }
}

/// A rate: `N/s`, `N/m` (or `N/min`) or `N/h`, N a positive number.
fn per_second(label: &str, text: &str) -> Result<f64, InputError> {
    let shape = || {
        InputError(format!(
            "{label} {:?} is not a rate; write it like 500/s, 30/m or 1000/h",
            shown(text)
        ))
    };
    let (n, unit) = text.trim().split_once('/').ok_or_else(shape)?;
    let n: f64 = n.trim().parse().map_err(|_| shape())?;
    let per = match unit.trim() {
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(shape()),
    };
    if !n.is_finite() || n <= 0.0 {
        return Err(InputError(format!(
            "{label} {:?} lets nothing through; give a rate above zero, like 500/s",
            shown(text)
        )));
    }
    let per_second = n / per;
    if per_second < MIN_PER_SECOND {
        return Err(InputError(format!(
            "{label} {:?} is slower than one a year; pause the kind instead (oprec pause)",
            shown(text)
        )));
    }
    if per_second > MAX_PER_SECOND {
        return Err(InputError(format!(
            "{label} {:?} is faster than the stores can space (one per microsecond); leave \
             {label} out to make everything eligible at once",
            shown(text)
        )));
    }
    Ok(per_second)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pace(rate: Option<&str>, spread: Option<&str>) -> Result<Pace, InputError> {
        Pace::parse(Spelling::Flags, rate, spread)
    }

    #[test]
    fn rate_500_per_second_over_5000_is_2ms_apart_for_10s() {
        let p = pace(Some("500/s"), None).unwrap();
        assert_eq!(p.spacing(5_000), Duration::milliseconds(2));
        assert_eq!(p.spacing(5_000) * 5_000, Duration::seconds(10));
        assert_eq!(
            p.describe(5_000),
            "at 500/s: one every 2ms, the last 9s 998ms after the first"
        );
        let m = pace(Some("30/m"), None).unwrap();
        assert_eq!(m.spacing(10), Duration::seconds(2));
    }

    #[test]
    fn spread_puts_the_last_at_the_end() {
        let p = pace(None, Some("10s")).unwrap();
        assert_eq!(p.spacing(11), Duration::seconds(1));
        assert_eq!(p.spacing(1), Duration::zero());
        assert_eq!(pace(None, None).unwrap().spacing(100), Duration::zero());
    }

    #[test]
    fn a_spread_over_more_gaps_than_an_i64_holds_is_not_negative() {
        // Found by parser_fuzz: the gap count was cast to i64 and went negative.
        let p = pace(None, Some("200000y")).unwrap();
        assert_eq!(p.spacing(u64::MAX), Duration::zero());
        assert_eq!(p.describe(u64::MAX), "all eligible at once");
    }

    #[test]
    fn bad_rates_are_refused() {
        for bad in [
            "0/s",
            "-5/s",
            "fast",
            "500",
            "500/fortnight",
            "NaN/s",
            "inf/s",
            "1e9/s",
            "1e-308/h",
        ] {
            assert!(pace(Some(bad), None).is_err(), "{bad}");
        }
        assert!(pace(None, Some("0s")).is_err());
        assert!(pace(Some("1/s"), Some("1s")).is_err());
    }
}
