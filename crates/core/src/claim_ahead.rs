//! The claim buffer's rule: how many operations a worker claims ahead of its handlers.
//!
//! A worker claims by the throughput it achieves, not by its free handler slots: besides the
//! operations its handlers run, it keeps a local buffer of claimed operations the handlers take
//! from, refilled ahead of need. The buffer's target is the observed completion rate times a
//! horizon (one second by default), at most a ceiling (2,000 by default): it grows while the
//! handlers drain it quickly and shrinks for slow kinds, so that at most about a horizon of work
//! waits on a lease. Until a rate is known the target is the concurrency. Pure arithmetic over
//! counts and elapsed times the caller measures: no clock, no I/O.

use std::time::Duration;

/// The settings of the rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClaimAheadRule {
    /// Handlers running at once.
    pub concurrency: usize,
    /// How much work, in time at the observed completion rate, may wait claimed in the buffer.
    pub horizon: Duration,
    /// The most operations the buffer holds, whatever the rate.
    pub max_buffered: usize,
    /// The most operations one claim asks for.
    pub max_per_claim: usize,
}

/// How long completions are counted before the rate is updated, at most.
const WINDOW: Duration = Duration::from_millis(100);

/// How long completions are counted at least: a window closes before [`WINDOW`] once it has
/// counted [`ClaimAhead::enough`] completions and lasted this long.
const SHORTEST_WINDOW: Duration = Duration::from_millis(10);

/// The rule's state: the completion rate observed so far.
#[derive(Clone, Debug)]
pub struct ClaimAhead {
    rule: ClaimAheadRule,
    /// Completions per second, smoothed; `None` until the first window has passed.
    rate: Option<f64>,
    /// Completions counted since the window opened, and how long it has been open.
    window_done: u64,
    window_elapsed: Duration,
}

impl ClaimAhead {
    /// The rule with no rate observed yet.
    pub fn new(rule: ClaimAheadRule) -> Self {
        ClaimAhead {
            rule,
            rate: None,
            window_done: 0,
            window_elapsed: Duration::ZERO,
        }
    }

    /// Counts `done` attempts finished over `elapsed` (the time since the previous call); every
    /// 100 ms of counting updates the rate (half the old rate, half the window's), and, while the
    /// buffer's target is below its ceiling, sooner (after 10 ms at least) once the window has
    /// counted twice the concurrency (64 at least): fast handlers then give a rate within
    /// milliseconds, and the buffer grows from the concurrency to its ceiling before a drain or a
    /// burst after idle is much under way, while slow handlers (a few completions per window) are
    /// still counted for 100 ms. With one window of 100 ms whatever the rate, a drain at 32
    /// handlers claimed in batches of about 32 for its first 100 ms.
    pub fn observe(&mut self, done: u64, elapsed: Duration) {
        self.window_done += done;
        self.window_elapsed += elapsed;
        let early = self.window_elapsed >= SHORTEST_WINDOW
            && self.window_done >= self.enough()
            && self.target_buffered() < self.rule.max_buffered;
        if self.window_elapsed < WINDOW && !early {
            return;
        }
        let sample = self.window_done as f64 / self.window_elapsed.as_secs_f64();
        self.rate = Some(match self.rate {
            None => sample,
            Some(r) => (r + sample) / 2.0,
        });
        self.window_done = 0;
        self.window_elapsed = Duration::ZERO;
    }

    /// Completions that close a window early: twice the concurrency, 64 at least, so that a
    /// window's count is many claim batches' worth, not one handler set finishing together.
    fn enough(&self) -> u64 {
        (2 * self.rule.concurrency).max(64) as u64
    }

    /// The completion rate observed, per second.
    pub fn rate(&self) -> Option<f64> {
        self.rate
    }

    /// How many claimed operations the buffer should hold: the rate times the horizon (the
    /// concurrency until a rate is known), at most `max_buffered`.
    pub fn target_buffered(&self) -> usize {
        let wanted = match self.rate {
            None => self.rule.concurrency,
            Some(r) => (r * self.rule.horizon.as_secs_f64()).round() as usize,
        };
        wanted.min(self.rule.max_buffered)
    }

    /// How many operations to ask for now, given those running, buffered and already asked for
    /// by claims in flight: the shortfall from a full set of handlers plus a full buffer, once it
    /// is at least a quarter of the buffer's target (so that claims stay batches), at most
    /// `max_per_claim`. Zero means: do not claim now.
    pub fn to_claim(&self, running: usize, buffered: usize, asked: usize) -> usize {
        let target = self.target_buffered();
        let wanted = self.rule.concurrency + target;
        let held = running + buffered + asked;
        let shortfall = wanted.saturating_sub(held);
        let free_slots = self
            .rule
            .concurrency
            .saturating_sub(running + buffered + asked);
        if shortfall == 0 || (free_slots == 0 && shortfall < (target / 4).max(1)) {
            return 0;
        }
        shortfall.min(self.rule.max_per_claim.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(concurrency: usize) -> ClaimAheadRule {
        ClaimAheadRule {
            concurrency,
            horizon: Duration::from_secs(1),
            max_buffered: 2000,
            max_per_claim: 1000,
        }
    }

    #[test]
    fn before_any_rate_the_buffer_is_one_concurrency() {
        let a = ClaimAhead::new(rule(32));
        assert_eq!(a.target_buffered(), 32);
        assert_eq!(a.to_claim(0, 0, 0), 64);
    }

    #[test]
    fn fast_handlers_grow_the_buffer_to_its_ceiling() {
        let mut a = ClaimAhead::new(rule(32));
        // 4,000 done in 100 ms: 40,000/s, so a second of work is 40,000: capped at 2,000.
        a.observe(4000, Duration::from_millis(100));
        assert!(a.rate().is_some_and(|r| (r - 40_000.0).abs() < 1.0));
        assert_eq!(a.target_buffered(), 2000);
        // Asking for the shortfall, a claim at most 1,000.
        assert_eq!(a.to_claim(32, 0, 0), 1000);
        assert_eq!(a.to_claim(32, 1000, 500), 500);
        assert_eq!(a.to_claim(32, 1000, 1000), 0);
    }

    #[test]
    fn slow_handlers_keep_about_a_horizon_of_work_claimed_ahead() {
        let mut a = ClaimAhead::new(rule(32));
        // 32 handlers of 200 ms: 160 a second.
        for _ in 0..10 {
            a.observe(16, Duration::from_millis(100));
        }
        assert_eq!(a.target_buffered(), 160);
        // Held at most: 32 running and 160 waiting, one second of work at 160/s.
        assert_eq!(a.to_claim(32, 160, 0), 0);
        // Small shortfalls wait until they make a batch (a quarter of the target).
        assert_eq!(a.to_claim(32, 150, 0), 0);
        assert_eq!(a.to_claim(32, 120, 0), 40);
    }

    #[test]
    fn very_slow_handlers_claim_little_beyond_free_slots() {
        let mut a = ClaimAhead::new(rule(32));
        // 32 handlers of 30 s: about one a second.
        a.observe(1, Duration::from_secs(1));
        assert_eq!(a.target_buffered(), 1);
        assert_eq!(a.to_claim(32, 1, 0), 0);
        // A free handler slot is always filled at once.
        assert_eq!(a.to_claim(31, 0, 0), 2);
    }

    #[test]
    fn the_rate_is_only_updated_once_a_window_has_passed() {
        let mut a = ClaimAhead::new(rule(8));
        // 30 done in 50 ms: fewer than the 64 that close a window early.
        a.observe(30, Duration::from_millis(50));
        assert_eq!(a.rate(), None);
        a.observe(30, Duration::from_millis(50));
        assert!(a.rate().is_some_and(|r| (r - 600.0).abs() < 0.01));
        a.observe(0, Duration::from_millis(100));
        assert!(a.rate().is_some_and(|r| (r - 300.0).abs() < 0.01));
    }

    #[test]
    fn many_completions_close_a_window_early() {
        let mut a = ClaimAhead::new(rule(32));
        // 63 done in 15 ms: fewer than 64, so the window stays open.
        a.observe(63, Duration::from_millis(15));
        assert_eq!(a.rate(), None);
        // 64 done in 16 ms: 4,000/s, and the buffer's target is at its ceiling at once.
        a.observe(1, Duration::from_millis(1));
        assert!(a.rate().is_some_and(|r| (r - 4000.0).abs() < 0.01));
        assert_eq!(a.target_buffered(), 2000);
        // Never before 10 ms, however many: a burst of 500 in 5 ms waits for the window's 10 ms.
        let mut b = ClaimAhead::new(rule(32));
        b.observe(500, Duration::from_millis(5));
        assert_eq!(b.rate(), None);
        b.observe(0, Duration::from_millis(5));
        assert!(b.rate().is_some_and(|r| (r - 50_000.0).abs() < 0.01));
        // A large handler set needs twice its size: 1,000 handlers, 1,999 done in 50 ms is not
        // enough, 2,000 is.
        let mut c = ClaimAhead::new(rule(1000));
        c.observe(1999, Duration::from_millis(50));
        assert_eq!(c.rate(), None);
        c.observe(1, Duration::ZERO);
        assert!(c.rate().is_some());
        // At the ceiling the windows are 100 ms again: a's target is 2,000 already.
        a.observe(5000, Duration::from_millis(50));
        assert!(a.rate().is_some_and(|r| (r - 4000.0).abs() < 0.01));
        a.observe(0, Duration::from_millis(50));
        assert!(a.rate().is_some_and(|r| (r - 27_000.0).abs() < 0.01));
    }

    #[test]
    fn slow_handlers_are_counted_over_whole_windows() {
        // 32 handlers of 200 ms finishing together: 32 done at 200 ms is fewer than 64, so the
        // window is the full 100 ms (of which 32 completions came in the last moment of 200 ms).
        let mut a = ClaimAhead::new(rule(32));
        a.observe(0, Duration::from_millis(99));
        assert_eq!(a.rate(), None);
        a.observe(0, Duration::from_millis(1));
        assert_eq!(a.rate(), Some(0.0));
        a.observe(32, Duration::from_millis(100));
        assert_eq!(a.target_buffered(), 160);
    }

    #[test]
    fn an_empty_queue_brings_the_target_down() {
        let mut a = ClaimAhead::new(rule(16));
        a.observe(0, Duration::from_millis(200));
        assert_eq!(a.target_buffered(), 0);
        assert_eq!(a.to_claim(0, 0, 0), 16);
        assert_eq!(a.to_claim(0, 0, 16), 0);
    }
}
