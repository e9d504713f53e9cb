//! Re-drive jobs: a re-drive that releases its operations at its pace over time is a job with a
//! row in `redrive_jobs`, so that another process can see it (`oprec redrive status`), stop it
//! (`oprec redrive stop`), and resume it after an interruption (`oprec redrive resume`).
//!
//! The brake is decided here: a re-drive whose released operations die again stops releasing
//! ([`BrakeRule`]), since the cause of the deaths is evidently not fixed.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::status::named_enum;

named_enum! {
    /// Where a re-drive job stands.
    RedriveJobState, "re-drive job state" {
        /// A process is releasing its operations.
        Running => "running",
        /// Stopped by `oprec redrive stop` (or the dashboard's stop); resumable.
        Stopped => "stopped",
        /// Its process was interrupted (ctrl-c); resumable.
        Interrupted => "interrupted",
        /// It stopped by itself because the operations it released died again; resumable once
        /// the cause is fixed.
        Braked => "braked",
        /// A store call failed; resumable.
        Failed => "failed",
        /// Everything it matched was released.
        Done => "done",
    }
}

impl RedriveJobState {
    /// Whether `oprec redrive resume` may take the job up again (a running job only when its
    /// process is gone: see [`RedriveJob::abandoned`]).
    pub fn resumable(self) -> bool {
        !matches!(self, RedriveJobState::Running | RedriveJobState::Done)
    }
}

/// One re-drive job, as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RedriveJob {
    /// The job's id (a UUID v7, so ids sort by start).
    pub id: String,
    /// Who started it.
    pub actor: String,
    /// Where it stands.
    pub state: RedriveJobState,
    /// The re-drive as checked (filter, mode, pace, limit, batch, note), for its resumption.
    pub request: serde_json::Value,
    /// Only operations that ended before this time are re-driven (the time of its dry run).
    pub ended_before: DateTime<Utc>,
    /// How many the dry run planned.
    pub planned: u64,
    /// How many it has released so far.
    pub released: u64,
    /// Why it ended (stopped, braked, failed), in words.
    pub reason: Option<String>,
    /// Who asked it to stop, while it has not stopped yet.
    pub stop_requested_by: Option<String>,
    /// When it was started.
    pub created_at: DateTime<Utc>,
    /// When its row was last saved (a running job saves it every second or so).
    pub updated_at: DateTime<Utc>,
}

impl RedriveJob {
    /// A running row not saved for this long belongs to a process that is gone.
    pub const ABANDONED_AFTER_SECS: i64 = 30;

    /// Whether the job says it is running but its process has not saved it for
    /// [`Self::ABANDONED_AFTER_SECS`] (killed, or its machine lost).
    pub fn abandoned(&self, now: DateTime<Utc>) -> bool {
        self.state == RedriveJobState::Running
            && (now - self.updated_at).num_seconds() >= Self::ABANDONED_AFTER_SECS
    }
}

/// Creates or updates a job's row; `created_at` and `stop_requested_by` are the store's to keep
/// (a stop request is cleared when the job turns running again, on resumption).
#[derive(Clone, Debug)]
pub struct RedriveJobSaveParams {
    /// The job's id.
    pub id: String,
    /// Who started it (kept from the first save).
    pub actor: String,
    /// Where it stands now.
    pub state: RedriveJobState,
    /// The re-drive as checked.
    pub request: serde_json::Value,
    /// Only operations that ended before this time.
    pub ended_before: DateTime<Utc>,
    /// How many the dry run planned.
    pub planned: u64,
    /// Released so far.
    pub released: u64,
    /// Why it ended, when it did.
    pub reason: Option<String>,
}

/// Asks a running job to stop; the job's process stops within a second or so.
#[derive(Clone, Debug)]
pub struct RedriveJobStopParams {
    /// The job.
    pub id: String,
    /// Who asks.
    pub actor: String,
}

/// Lists jobs, newest first, or one job.
#[derive(Clone, Debug)]
pub struct RedriveJobListParams {
    /// Only this job.
    pub id: Option<String>,
    /// The most rows.
    pub limit: u32,
}

/// When a re-drive stops releasing by itself: more than half of a window of
/// [`BrakeRule::WINDOW`] consecutive operations it released are dead again. Windows are the
/// released operations in release order, 1–50, 51–100, ...; the first window is watched until it
/// can no longer brake, later ones while they are among the last
/// [`BrakeRule::WATCHED_WINDOWS`] windows released. A resumed job counts its windows from the
/// resumption.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BrakeRule;

impl BrakeRule {
    /// Operations per window.
    pub const WINDOW: u64 = 50;
    /// Dead again in one window that brakes the re-drive: more than half.
    pub const DEAD: u64 = Self::WINDOW / 2 + 1;
    /// Recent windows watched besides the first.
    pub const WATCHED_WINDOWS: usize = 10;

    /// The rule in words, for help texts and the README.
    pub const TEXT: &'static str = "a re-drive brakes (stops releasing, and says why) when more \
         than half of a window of 50 operations it released are dead again: the first 50, or any \
         later 50 among the last 500 it released";

    /// The reason to brake, when window `index` (0 for the first) holds `dead` operations dead
    /// again out of `released` released into it so far.
    pub fn decide(index: u64, released: u64, dead: u64) -> Option<String> {
        (dead >= Self::DEAD).then(|| {
            let (from, to) = (index * Self::WINDOW + 1, index * Self::WINDOW + released);
            format!(
                "braked: {dead} of the {released} operations it released {} are dead again \
                 (more than half of a window of {}); the cause is not fixed, so it stopped \
                 releasing",
                if index == 0 {
                    format!("first ({from} to {to})")
                } else {
                    format!("from the {} to the {}", ordinal(from), ordinal(to))
                },
                Self::WINDOW
            )
        })
    }

    /// Whether a window can still brake, given how many of its operations ended otherwise
    /// (succeeded or cancelled) already: at least [`Self::DEAD`] of it may still die.
    pub fn can_still_brake(ended_otherwise: u64) -> bool {
        Self::WINDOW.saturating_sub(ended_otherwise) >= Self::DEAD
    }
}

/// `1st`, `2nd`, `3rd`, `4th`, `11th`, `21st`.
fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_than_half_of_a_window_dead_again_brakes() {
        assert_eq!(BrakeRule::DEAD, 26);
        assert!(BrakeRule::decide(0, 50, 25).is_none());
        let why = BrakeRule::decide(0, 50, 26).unwrap();
        assert!(
            why.contains("26 of the 50 operations it released first (1 to 50)"),
            "{why}"
        );
        let why = BrakeRule::decide(2, 40, 31).unwrap();
        assert!(why.contains("from the 101st to the 140th"), "{why}");
        assert!(BrakeRule::can_still_brake(24));
        assert!(!BrakeRule::can_still_brake(25));
    }

    #[test]
    fn states_read_back_and_only_ended_ones_resume() {
        for s in RedriveJobState::ALL {
            assert_eq!(s.as_str().parse::<RedriveJobState>().unwrap(), *s);
        }
        assert!(!RedriveJobState::Running.resumable());
        assert!(!RedriveJobState::Done.resumable());
        assert!(RedriveJobState::Braked.resumable());
    }
}
