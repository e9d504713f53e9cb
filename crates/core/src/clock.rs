//! Where every time decision reads "now": the system clock in production, a manual clock in
//! tests and simulations, so that ladders, deadlines and leases can be tested without waiting.

use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};

/// Where every time decision reads "now", so that ladders, deadlines and leases can be tested
/// without waiting.
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;

    /// Whether this clock is the machine's real time. Stores may then let the database's own clock
    /// judge leases instead of the caller's.
    fn is_system(&self) -> bool {
        false
    }
}

/// The machine's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
    fn is_system(&self) -> bool {
        true
    }
}

/// A clock that only moves when told to: the test clock.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        ManualClock {
            now: Mutex::new(start),
        }
    }

    /// Moves the clock to `at`.
    pub fn set(&self, at: DateTime<Utc>) {
        *self.now.lock().unwrap_or_else(|e| e.into_inner()) = at;
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(|e| e.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().unwrap_or_else(|e| e.into_inner())
    }
}
