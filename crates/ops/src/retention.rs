//! Retention as operators see it: the policy read from what they typed (the worker's and the
//! preview's flags: `--retain-succeeded 7d`, `--retain-cancelled 30d`, `--retention off`), and
//! the preview (`oprec retention show`): per kind and status, how many operations are past their
//! retention now, the longest finished, and when the next removal is due. Read-only. Without
//! flags the preview applies the policy the maintenance leader published with its leadership
//! (the fleet's, kinds' own ages included), else the defaults.
//!
//! The decisions (which statuses, what age) are `oprec-core`'s [`RetentionPolicy`]; this module
//! only reads input and the store's figures.

use chrono::{DateTime, Duration, Utc};
use oprec_core::maintenance::MAINTENANCE_LEADER;
use oprec_core::retention::{FinishedStatus, RetentionFiguresParams, retention_age};
use oprec_core::{FullStore, Retention, RetentionPolicy, Status};
use serde::Serialize;

use crate::{InputError, Result};

/// What the retention flags said.
#[derive(Clone, Debug, Default)]
pub struct RetentionInput<'a> {
    /// How long succeeded operations are kept (`off`: forever); `None`: the default.
    pub succeeded: Option<&'a str>,
    /// How long cancelled operations are kept (`off`: forever); `None`: the default.
    pub cancelled: Option<&'a str>,
    /// `on` or `off` (`None`: on). Off keeps everything and refuses per-status ages.
    pub retention: Option<&'a str>,
}

/// One age: a duration core accepts as a retention age (longer than zero, at most 100 years),
/// or `off` (kept until an operator removes it).
fn age(label: &str, text: Option<&str>) -> Result<Option<Option<Duration>>, InputError> {
    match text.map(str::trim) {
        None => Ok(None),
        Some("off" | "never") => Ok(Some(None)),
        Some(t) => {
            let d = crate::time::duration(label, t)?;
            let d = retention_age(d)
                .map_err(|e| InputError(format!("{label} {:?} {e}", crate::spelling::shown(t))))?;
            Ok(Some(Some(d)))
        }
    }
}

/// The policy the flags describe: [`Retention::default`] for anything not given.
pub fn policy(
    input: &RetentionInput<'_>,
    labels: [&str; 3],
) -> Result<RetentionPolicy, InputError> {
    let [succeeded_label, cancelled_label, retention_label] = labels;
    let enabled = match input.retention.map(str::trim) {
        None | Some("on") => true,
        Some("off") => false,
        Some(other) => {
            return Err(InputError(format!(
                "{retention_label} {:?} is neither on nor off",
                crate::cut(other, 64)
            )));
        }
    };
    let succeeded = age(succeeded_label, input.succeeded)?;
    let cancelled = age(cancelled_label, input.cancelled)?;
    if !enabled {
        if succeeded.is_some() || cancelled.is_some() {
            return Err(InputError(format!(
                "{retention_label} off keeps every operation; drop {succeeded_label} and \
                 {cancelled_label}"
            )));
        }
        return Ok(RetentionPolicy::off());
    }
    let d = Retention::default();
    Ok(RetentionPolicy {
        default: Retention {
            succeeded: succeeded.unwrap_or(d.succeeded),
            cancelled: cancelled.unwrap_or(d.cancelled),
        },
        ..RetentionPolicy::default()
    })
}

/// One kind and status in the preview.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RetentionRow {
    /// The kind.
    pub kind: String,
    /// The status.
    pub status: Status,
    /// Operations of the kind in the status now.
    pub operations: u64,
    /// How long they are kept after they finish, in seconds; `None`: until an operator acts
    /// (always so for dead operations).
    pub keep_for_seconds: Option<i64>,
    /// How many are past their retention now (removed by the next passes).
    pub past_retention: u64,
    /// When the longest-finished one finished.
    pub oldest_finished_at: Option<DateTime<Utc>>,
    /// When the next removal is due: now when some are past their retention, else when the
    /// longest-finished one reaches its age; `None` when none will be removed by age.
    pub next_removal_at: Option<DateTime<Utc>>,
}

/// Where a previewed policy came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "from")]
pub enum PolicySource {
    /// The live maintenance leader published it: the policy the fleet applies, its kinds' own
    /// ages included.
    Leader {
        /// The leader (a worker id).
        holder: String,
    },
    /// The flags given (and their defaults).
    Flags,
    /// No flags and no live leader that published a policy: the defaults, which a fleet whose
    /// workers run other flags or kinds with their own ages does not apply.
    Defaults,
}

/// The retention policy the live maintenance leader published, and who it is; `None` when no
/// leader is live or the live one published none (a release before leaders published it).
pub async fn published_policy<S: FullStore + ?Sized>(
    store: &S,
) -> Result<Option<(String, RetentionPolicy)>> {
    Ok(store
        .leader_list()
        .await?
        .into_iter()
        .find(|l| l.name == MAINTENANCE_LEADER)
        .and_then(|l| {
            let p = RetentionPolicy::from_settings(l.settings.as_ref()?)?;
            Some((l.holder, p))
        }))
}

/// What retention would remove, and when.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RetentionPreview {
    /// When the figures were taken (the store's clock).
    pub at: DateTime<Utc>,
    /// The policy the preview applies.
    pub policy: RetentionPolicy,
    /// Where the policy came from.
    pub source: PolicySource,
    /// Per kind: succeeded, cancelled and dead operations (dead ones are never removed by age).
    pub rows: Vec<RetentionRow>,
    /// Operations past their retention in all.
    pub past_retention: u64,
}

/// The preview of `policy` against the store now. Reads the kept counts, then per kind and
/// finished status one walk of the index of finished operations up to the cutoff.
pub async fn preview<S: FullStore + ?Sized>(
    store: &S,
    policy: &RetentionPolicy,
    source: PolicySource,
) -> Result<RetentionPreview> {
    let at = store.now().await?;
    let mut totals: std::collections::BTreeMap<(String, Status), u64> = Default::default();
    for c in store.operation_count().await? {
        if matches!(
            c.status,
            Status::Succeeded | Status::Cancelled | Status::Dead
        ) {
            *totals.entry((c.kind, c.status)).or_default() += c.count;
        }
    }
    let mut rows = Vec::with_capacity(totals.len());
    for ((kind, status), operations) in totals {
        let keep_for = FinishedStatus::of(status).and_then(|f| policy.keep_for(&kind, f));
        let mut row = RetentionRow {
            kind: kind.clone(),
            status,
            operations,
            keep_for_seconds: keep_for.map(|d| d.num_seconds()),
            past_retention: 0,
            oldest_finished_at: None,
            next_removal_at: None,
        };
        if let (Some(finished), Some(keep_for)) = (FinishedStatus::of(status), keep_for) {
            let f = store
                .operation_retention_figures(RetentionFiguresParams {
                    kind,
                    status: finished,
                    finished_before: at - keep_for,
                })
                .await?;
            row.past_retention = f.past_retention;
            row.oldest_finished_at = f.oldest_finished_at;
            row.next_removal_at = f.oldest_finished_at.map(|t| (t + keep_for).max(at));
        }
        rows.push(row);
    }
    Ok(RetentionPreview {
        at,
        policy: policy.clone(),
        source,
        past_retention: rows.iter().map(|r| r.past_retention).sum(),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LABELS: [&str; 3] = ["--retain-succeeded", "--retain-cancelled", "--retention"];

    #[test]
    fn flags_make_the_policy() {
        let p = policy(&RetentionInput::default(), LABELS).unwrap();
        assert_eq!(p, RetentionPolicy::default());
        let p = policy(
            &RetentionInput {
                succeeded: Some("5m"),
                cancelled: Some("off"),
                retention: None,
            },
            LABELS,
        )
        .unwrap();
        assert_eq!(p.default.succeeded, Some(Duration::minutes(5)));
        assert_eq!(p.default.cancelled, None);
        let off = RetentionInput {
            retention: Some("off"),
            ..RetentionInput::default()
        };
        assert_eq!(policy(&off, LABELS).unwrap(), RetentionPolicy::off());
    }

    #[test]
    fn bad_flags_are_refused_with_their_names() {
        let e = policy(
            &RetentionInput {
                succeeded: Some("soon"),
                ..RetentionInput::default()
            },
            LABELS,
        )
        .unwrap_err();
        assert!(e.0.contains("--retain-succeeded"), "{e}");
        let e = policy(
            &RetentionInput {
                succeeded: Some("0s"),
                ..RetentionInput::default()
            },
            LABELS,
        )
        .unwrap_err();
        assert!(e.0.contains("longer than zero"), "{e}");
        let e = policy(
            &RetentionInput {
                succeeded: Some("7d"),
                retention: Some("off"),
                ..RetentionInput::default()
            },
            LABELS,
        )
        .unwrap_err();
        assert!(e.0.contains("--retention off"), "{e}");
        assert!(
            policy(
                &RetentionInput {
                    retention: Some("maybe"),
                    ..RetentionInput::default()
                },
                LABELS,
            )
            .is_err()
        );
    }
}
