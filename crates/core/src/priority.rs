//! The claim order among eligible operations: a few fixed priority levels, and the aging rule
//! that keeps low priorities from starving. Stores walk each level's eligible range in order
//! (highest first) after the operations that have waited past [`PRIORITY_AGING`].

use chrono::Duration;

use crate::{Error, Result};

/// The lowest priority: claimed after every other eligible operation (until it ages).
pub const PRIORITY_MIN: i16 = -2;
/// The highest priority: claimed before every other eligible operation that has not aged.
pub const PRIORITY_MAX: i16 = 2;
/// The priority of an operation enqueued without one.
pub const PRIORITY_DEFAULT: i16 = 0;

/// The starvation guard: an operation eligible for longer than this is claimed before every
/// priority, oldest eligible first, so that sustained high-priority load delays low-priority
/// work by this much at most (while workers keep up with the aged ones).
pub const PRIORITY_AGING: Duration = Duration::minutes(5);

/// The levels in the order a claim walks them, highest first.
pub const PRIORITY_LEVELS: [i16; 5] = [2, 1, 0, -1, -2];

/// The levels a claim walks: every level, or only those above [`PRIORITY_DEFAULT`], the
/// operations that go ahead of a broker's backlog of wake-ups (README, "Priorities").
pub fn claim_levels(above_default_only: bool) -> &'static [i16] {
    if above_default_only {
        let default = PRIORITY_LEVELS
            .iter()
            .position(|l| *l == PRIORITY_DEFAULT)
            .unwrap_or(PRIORITY_LEVELS.len());
        &PRIORITY_LEVELS[..default]
    } else {
        &PRIORITY_LEVELS
    }
}

/// Checks a priority a caller gave.
pub fn check_priority(priority: i16) -> Result<i16> {
    if (PRIORITY_MIN..=PRIORITY_MAX).contains(&priority) {
        Ok(priority)
    } else {
        Err(Error::InvalidInput(format!(
            "priority must be a whole number from {PRIORITY_MIN} (claimed last) to \
             {PRIORITY_MAX} (claimed first), not {priority}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_run_from_highest_to_lowest_and_cover_the_range() {
        assert_eq!(PRIORITY_LEVELS.first(), Some(&PRIORITY_MAX));
        assert_eq!(PRIORITY_LEVELS.last(), Some(&PRIORITY_MIN));
        assert!(PRIORITY_LEVELS.windows(2).all(|w| w[0] == w[1] + 1));
        assert!(PRIORITY_LEVELS.contains(&PRIORITY_DEFAULT));
    }

    #[test]
    fn the_levels_above_the_default_are_the_highest_first() {
        assert_eq!(claim_levels(true), &[2, 1]);
        assert_eq!(claim_levels(false), &PRIORITY_LEVELS);
        assert!(claim_levels(true).iter().all(|l| *l > PRIORITY_DEFAULT));
    }

    #[test]
    fn a_priority_outside_the_levels_is_refused() {
        assert_eq!(check_priority(2).unwrap(), 2);
        assert_eq!(check_priority(-2).unwrap(), -2);
        let err = check_priority(3).unwrap_err().to_string();
        assert!(
            err.contains("from -2 (claimed last) to 2 (claimed first), not 3"),
            "{err}"
        );
        assert!(check_priority(-3).is_err());
    }
}
