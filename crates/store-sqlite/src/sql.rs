//! The store's static statements, one `.sql` file each under `src/sql/`, named
//! `<module>_<statement>.sql` as in the PostgreSQL store, so that a statement is read, reviewed
//! and diffed as SQL. Statements whose shape depends on an operator's filter are built in
//! [`crate::filter`] instead.
//!
//! Lists (ids, kinds, batches of rows) are bound as one JSON array read by `json_each`, so that a
//! statement keeps one text whatever the list's length (SQLite prepares and caches it once per
//! connection) and no list meets SQLite's limit on bind parameters.
//!
//! Seven statements splice core's pause rule ([`oprec_core::not_held_back_sql`]) where their file
//! says `/*not_held_back*/`; their final text is built once, on first use.

use std::sync::LazyLock;

/// Where a statement file takes core's pause rule.
const NOT_HELD_BACK: &str = "/*not_held_back*/";

/// `sql` with core's pause rule for the row aliased `row` at the time `now` in place of its
/// placeholder.
fn with_not_held_back(sql: &str, row: &str, now: &str) -> String {
    debug_assert_eq!(sql.matches(NOT_HELD_BACK).count(), 1, "{sql}");
    sql.replace(NOT_HELD_BACK, &oprec_core::not_held_back_sql(row, now))
}

/// Marks the pending operations a control covers as never woken, by the scope's rule
/// ([`oprec_core::ControlScope::matches_sql`]).
pub(crate) fn controls_wake_reset(scope: oprec_core::ControlScope) -> &'static str {
    static BY_SCOPE: LazyLock<Vec<String>> = LazyLock::new(|| {
        oprec_core::ControlScope::ALL
            .iter()
            .map(|s| {
                include_str!("sql/controls_wake_reset.sql")
                    .replace("/*scope_matches*/", &s.matches_sql("operations", "?1"))
            })
            .collect()
    });
    let i = oprec_core::ControlScope::ALL
        .iter()
        .position(|s| *s == scope)
        .expect("every scope is in ALL");
    &BY_SCOPE[i]
}

/// The most overdue pending operation that no control holds back.
pub(crate) static STATS_OLDEST_ELIGIBLE: LazyLock<String> =
    LazyLock::new(|| with_not_held_back(include_str!("sql/stats_oldest_eligible.sql"), "o", "?1"));

/// The eligible pending operations a control of `scope` holds back (counted up to a bound) and
/// the one eligible longest, by the scope's rule ([`oprec_core::ControlScope::matches_sql`]).
pub(crate) fn stats_held_back(scope: oprec_core::ControlScope) -> &'static str {
    static BY_SCOPE: LazyLock<Vec<String>> = LazyLock::new(|| {
        oprec_core::ControlScope::ALL
            .iter()
            .map(|s| {
                include_str!("sql/stats_held_back.sql")
                    .replace("/*covers*/", &s.matches_sql("o", "?2"))
            })
            .collect()
    });
    let i = oprec_core::ControlScope::ALL
        .iter()
        .position(|s| *s == scope)
        .expect("every scope is in ALL");
    &BY_SCOPE[i]
}

macro_rules! statements {
    ($($(#[$doc:meta])* $name:ident = $file:literal;)+) => {
        $($(#[$doc])* pub(crate) const $name: &str = include_str!(concat!("sql/", $file));)+
    };
}

statements! {
    /// The attempt histories of archived operations.
    ARCHIVE_ATTEMPTS = "archive_attempts.sql";
    /// The durable steps of archived operations.
    ARCHIVE_STEPS = "archive_steps.sql";
    /// Removes one archived operation whose fence holds.
    ARCHIVE_REMOVE = "archive_remove.sql";
    /// Whether a restored operation's id is taken and its parent present.
    ARCHIVE_RESTORE_PRESENT = "archive_restore_present.sql";
    /// Inserts a restored operation.
    ARCHIVE_RESTORE_OPERATIONS = "archive_restore_operations.sql";
    /// Inserts one attempt of a restored operation.
    ARCHIVE_RESTORE_ATTEMPTS = "archive_restore_attempts.sql";
    /// Takes a restored operation's attempts back out of the per-minute counts.
    ARCHIVE_RESTORE_UNCOUNT = "archive_restore_uncount.sql";
    /// Inserts one step of a restored operation.
    ARCHIVE_RESTORE_STEPS = "archive_restore_steps.sql";
    /// One operation by id.
    READ_OPERATION = "read_operation.sql";
    /// One operation's attempt history.
    READ_ATTEMPTS = "read_attempts.sql";
    /// Counts by status, kind and class.
    READ_COUNT = "read_count.sql";
    /// One enqueue.
    ENQUEUE_INSERT_ONE = "enqueue_insert_one.sql";
    /// A batch of enqueues.
    ENQUEUE_INSERT_MANY = "enqueue_insert_many.sql";
    /// The operations that hold taken idempotency keys.
    ENQUEUE_EXISTING_ID = "enqueue_existing_id.sql";
    /// Wake-ups published.
    ENQUEUE_MARK_WOKEN = "enqueue_mark_woken.sql";
    /// Whether a claim is current.
    CLAIM_CURRENT = "claim_current.sql";
    /// A lease extended.
    CLAIM_HEARTBEAT = "claim_heartbeat.sql";
    /// The leases of every claim a worker holds extended.
    CLAIM_HEARTBEAT_MANY = "claim_heartbeat_many.sql";
    /// Unstarted claims given back.
    CLAIM_GIVE_BACK = "claim_give_back.sql";
    /// Claims ended with their transitions (completions and rescues).
    COMPLETE_APPLY = "complete_apply.sql";
    /// The attempt rows of ended claims.
    COMPLETE_ATTEMPTS = "complete_attempts.sql";
    /// Refused completions written into the history of their attempts.
    COMPLETE_STALE = "complete_stale.sql";
    /// Expired claims.
    RESCUE_LEASE_EXPIRED = "rescue_lease_expired.sql";
    /// Waiting operations past their deadline ended.
    RESCUE_END_PAST_DEADLINE = "rescue_end_past_deadline.sql";
    /// Reconciling operations due for their hook, picked.
    RECONCILE_DUE = "reconcile_due.sql";
    /// Picked reconciling operations taken.
    RECONCILE_TAKE = "reconcile_take.sql";
    /// A settlement written.
    RECONCILE_RESOLVE = "reconcile_resolve.sql";
    /// One operation's status.
    RECONCILE_STATUS = "reconcile_status.sql";
    /// Announcements that are due, picked.
    ALERTS_CLAIM = "alerts_claim.sql";
    /// Picked announcements taken.
    ALERTS_TAKE = "alerts_take.sql";
    /// Failed announcements put off.
    ALERTS_DEFER = "alerts_defer.sql";
    /// Alerts (and dead-letter deliveries) recorded in the alert log.
    ALERTS_RECORD = "alerts_record.sql";
    /// The time of the newest hold recorded.
    ALERTS_HOLDS_SINCE = "alerts_holds_since.sql";
    /// An alert for each new attempt that failed for configuration.
    ALERTS_HOLDS_RECORD = "alerts_holds_record.sql";
    /// Recorded alerts due to be sent, taken.
    ALERTS_DUE = "alerts_due.sql";
    /// How sends went.
    ALERTS_SETTLE = "alerts_settle.sql";
    /// Old sent alerts removed.
    ALERTS_TRIM = "alerts_trim.sql";
    /// The alert log, newest first.
    ALERTS_LIST = "alerts_list.sql";
    /// A leadership taken or kept.
    LEADER_ACQUIRE = "leader_acquire.sql";
    /// A leadership as it stands.
    LEADER_GET = "leader_get.sql";
    /// A leadership given up.
    LEADER_RELEASE = "leader_release.sql";
    /// The leaderships in force.
    LEADER_LIST = "leader_list.sql";
    /// Promotions announced.
    ALERTS_MARK_ALERTED = "alerts_mark_alerted.sql";
    /// A control set.
    CONTROLS_SET = "controls_set.sql";
    /// A control removed.
    CONTROLS_REMOVE = "controls_remove.sql";
    /// Pending operations of some kinds marked never woken (after a transport purge).
    OPERATIONS_WAKE_RESET = "operations_wake_reset.sql";
    /// The controls in force.
    CONTROLS_LIST = "controls_list.sql";
    /// Picked operations re-driven in place.
    REDRIVE_IN_PLACE = "redrive_in_place.sql";
    /// Picked operations re-driven as new.
    REDRIVE_AS_NEW = "redrive_as_new.sql";
    /// When a dependency (or kind) first succeeded after a time.
    REDRIVE_RECOVERED = "redrive_recovered.sql";
    /// A re-drive job's row created or updated.
    REDRIVE_JOB_SAVE = "redrive_job_save.sql";
    /// A running re-drive job asked to stop.
    REDRIVE_JOB_STOP = "redrive_job_stop.sql";
    /// Re-drive jobs, newest first.
    REDRIVE_JOB_LIST = "redrive_job_list.sql";
    /// Waiting operations cancelled.
    CANCEL_WAITING = "cancel_waiting.sql";
    /// A remote id recorded.
    STEPS_REMOTE_ID_SET = "steps_remote_id_set.sql";
    /// An operation's steps.
    STEPS_GET = "steps_get.sql";
    /// The attempt of a running claim.
    STEPS_CLAIM_ATTEMPT = "steps_claim_attempt.sql";
    /// A step saved.
    STEPS_SAVE = "steps_save.sql";
    /// An audit row appended.
    AUDIT_INSERT = "audit_insert.sql";
    /// The newest audit rows, or those older than an entry.
    AUDIT_LIST = "audit_list.sql";
    /// The audit rows just newer than an entry, oldest first.
    AUDIT_LIST_NEWER = "audit_list_newer.sql";
    /// The enqueue-time policies of a worker's kinds published.
    KINDS_PUBLISH = "kinds_publish.sql";
    /// Every published kind's policy.
    KINDS_LIST = "kinds_list.sql";
    /// The schedules of a worker's kinds declared.
    SCHEDULES_DECLARE = "schedules_declare.sql";
    /// The schedules of kinds declared without one removed.
    SCHEDULES_REMOVE = "schedules_remove.sql";
    /// A leader's pass over a schedule recorded.
    SCHEDULES_ADVANCE = "schedules_advance.sql";
    /// Every schedule with its last operation's status.
    SCHEDULES_LIST = "schedules_list.sql";
    /// A worker's presence refreshed.
    WORKERS_BEAT = "workers_beat.sql";
    /// A worker's presence removed.
    WORKERS_REMOVE = "workers_remove.sql";
    /// The live workers.
    WORKERS_LIST = "workers_list.sql";
    /// Pending kinds no live worker handles.
    WORKERS_UNHANDLED = "workers_unhandled.sql";
    /// Operations by status.
    STATS_BY_STATUS = "stats_by_status.sql";
    /// Pending operations by class.
    STATS_PENDING_BY_CLASS = "stats_pending_by_class.sql";
    /// Dead operations awaiting action by kind.
    STATS_DEAD_BY_KIND = "stats_dead_by_kind.sql";
    /// Dead operations re-driven as new by kind.
    STATS_DEAD_REDRIVEN_BY_KIND = "stats_dead_redriven_by_kind.sql";
    /// Recent promotions to dead by kind.
    STATS_DEAD_SINCE_BY_KIND = "stats_dead_since_by_kind.sql";
    /// Recent promotions to dead by code version.
    STATS_DEAD_SINCE_BY_CODE_VERSION = "stats_dead_since_by_code_version.sql";
    /// Recent attempts by dependency.
    STATS_ATTEMPTS_SINCE_BY_DEPENDENCY = "stats_attempts_since_by_dependency.sql";
    /// Waiting operations by creation slot.
    STATS_BACKLOG_BY_AGE = "stats_backlog_by_age.sql";
    /// Attempts per succeeded operation.
    STATS_ATTEMPTS_PER_SUCCESS = "stats_attempts_per_success.sql";
    /// The oldest waiting operation's creation.
    STATS_BACKLOG_OLDEST = "stats_backlog_oldest.sql";
    /// Activity per minute.
    STATS_ACTIVITY_PER_MINUTE = "stats_activity_per_minute.sql";
}

/// Operations to claim that have waited past the aging period, picked.
pub(crate) static CLAIM_ELIGIBLE: LazyLock<String> =
    LazyLock::new(|| with_not_held_back(include_str!("sql/claim_eligible.sql"), "o", "?1"));

/// Operations of one priority level to claim, picked.
pub(crate) static CLAIM_ELIGIBLE_LEVEL: LazyLock<String> =
    LazyLock::new(|| with_not_held_back(include_str!("sql/claim_eligible_level.sql"), "o", "?1"));

/// Operations claimed by id.
pub(crate) static CLAIM_BY_IDS: LazyLock<String> =
    LazyLock::new(|| with_not_held_back(include_str!("sql/claim_by_ids.sql"), "operations", "?1"));

/// A suspect to claim isolated, picked.
pub(crate) static CLAIM_SUSPECT: LazyLock<String> =
    LazyLock::new(|| with_not_held_back(include_str!("sql/claim_suspect.sql"), "o", "?1"));

/// Whether a suspect waits for an isolated attempt.
pub(crate) static CLAIM_SUSPECT_EXISTS: LazyLock<String> =
    LazyLock::new(|| with_not_held_back(include_str!("sql/claim_suspect_exists.sql"), "o", "?1"));

/// Whether a worker of some kinds has work.
pub(crate) static CLAIM_WORK_EXISTS: LazyLock<String> =
    LazyLock::new(|| with_not_held_back(include_str!("sql/claim_work_exists.sql"), "o", "?1"));

/// Due operations marked woken.
pub(crate) static WAKE_DUE: LazyLock<String> =
    LazyLock::new(|| with_not_held_back(include_str!("sql/wake_due.sql"), "o", "?1"));

/// One kind's stale operations marked woken (the budgeted re-wake).
pub(crate) static WAKE_REWAKE: LazyLock<String> =
    LazyLock::new(|| with_not_held_back(include_str!("sql/wake_rewake.sql"), "o", "?1"));

/// Per kind: wake-ups out, stale ones, handled or not.
pub(crate) static WAKE_FIGURES: LazyLock<String> =
    LazyLock::new(|| with_not_held_back(include_str!("sql/wake_figures.sql"), "o", "?1"));

/// Removes one batch of finished operations past their retention.
pub(crate) const RETENTION_DELETE: &str = include_str!("sql/retention_delete.sql");

/// What one kind holds in one finished status, against a cutoff.
pub(crate) const RETENTION_FIGURES: &str = include_str!("sql/retention_figures.sql");

/// Removes the per-minute attempt counts of old minutes.
pub(crate) const RETENTION_ATTEMPT_MINUTES_REMOVE: &str =
    include_str!("sql/retention_attempt_minutes_remove.sql");

/// Removes the per-minute counts of promotions to dead of old minutes.
pub(crate) const RETENTION_DEAD_MINUTES_REMOVE: &str =
    include_str!("sql/retention_dead_minutes_remove.sql");

/// Removes the settled creation slots that count nothing.
pub(crate) const RETENTION_BACKLOG_SLOTS_REMOVE: &str =
    include_str!("sql/retention_backlog_slots_remove.sql");

/// The limits a claim may reach.
pub(crate) const LIMITS_LOCK: &str = include_str!("sql/limits_lock.sql");

/// Running operations of the limited kinds and dependencies.
pub(crate) const LIMITS_RUNNING: &str = include_str!("sql/limits_running.sql");

/// The kind and dependency of picked operations.
pub(crate) const LIMITS_ROWS: &str = include_str!("sql/limits_rows.sql");

/// Writes back a limit's window of recent starts.
pub(crate) const LIMITS_RECORD: &str = include_str!("sql/limits_record.sql");

/// Sets or replaces a limit.
pub(crate) const LIMITS_SET: &str = include_str!("sql/limits_set.sql");

/// Removes a limit.
pub(crate) const LIMITS_REMOVE: &str = include_str!("sql/limits_remove.sql");

/// Every limit with its running count.
pub(crate) const LIMITS_LIST: &str = include_str!("sql/limits_list.sql");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqliteStore;

    /// SQLite's plan for `statement`, one line per step.
    async fn plan(store: &SqliteStore, statement: &str) -> String {
        let rows: Vec<(i64, i64, i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "EXPLAIN QUERY PLAN {statement}"
        )))
        .fetch_all(store.pool())
        .await
        .expect("plan");
        rows.into_iter().map(|r| r.3 + "\n").collect()
    }

    #[test]
    fn the_pause_rule_replaces_each_placeholder() {
        for s in [
            &CLAIM_ELIGIBLE,
            &CLAIM_ELIGIBLE_LEVEL,
            &CLAIM_BY_IDS,
            &CLAIM_WORK_EXISTS,
            &CLAIM_SUSPECT,
            &CLAIM_SUSPECT_EXISTS,
            &WAKE_DUE,
            &WAKE_REWAKE,
            &WAKE_FIGURES,
        ] {
            assert!(
                !s.contains(NOT_HELD_BACK) && s.contains("FROM controls c"),
                "{}",
                **s
            );
        }
    }

    /// The hot statements walk the partial indexes their files name, in order (no sort), and the
    /// JSON-fed ones look each row up by primary key, with SQLite as bundled and no statistics:
    /// their cost follows the rows they touch, not the rows the table holds.
    #[tokio::test]
    async fn hot_statements_walk_their_indexes() {
        let store = SqliteStore::connect("sqlite::memory:").await.unwrap();
        crate::read::migrate(&store).await.unwrap();
        let walks = [
            (
                CLAIM_ELIGIBLE.as_str(),
                "SEARCH o USING INDEX operations_pending_eligible",
            ),
            (
                CLAIM_ELIGIBLE_LEVEL.as_str(),
                "SEARCH o USING INDEX operations_pending_priority (priority=? AND next_eligible_at>? AND next_eligible_at<?)",
            ),
            (
                WAKE_DUE.as_str(),
                "SEARCH o USING INDEX operations_pending_eligible",
            ),
            (
                WAKE_REWAKE.as_str(),
                "SEARCH o USING INDEX operations_pending_eligible",
            ),
            (
                STATS_OLDEST_ELIGIBLE.as_str(),
                "USING INDEX operations_pending_eligible",
            ),
            (
                CLAIM_SUSPECT.as_str(),
                "SEARCH o USING INDEX operations_pending_suspect",
            ),
            (
                CLAIM_SUSPECT_EXISTS.as_str(),
                "SEARCH o USING INDEX operations_pending_suspect",
            ),
            (RESCUE_LEASE_EXPIRED, "USING INDEX operations_running_lease"),
            (
                RESCUE_END_PAST_DEADLINE,
                "USING INDEX operations_waiting_deadline",
            ),
        ];
        for (statement, index) in walks {
            let plan = plan(&store, statement).await;
            assert!(
                plan.contains(index) && !plan.contains("TEMP B-TREE"),
                "{statement}\n{plan}"
            );
        }
        for scope in oprec_core::ControlScope::ALL {
            let held = plan(&store, stats_held_back(*scope)).await;
            assert!(
                held.contains("SEARCH o USING INDEX operations_pending_eligible"),
                "{scope}\n{held}"
            );
        }
        let exists = plan(&store, &CLAIM_WORK_EXISTS).await;
        assert!(
            exists.contains("SEARCH o USING INDEX operations_pending_eligible"),
            "{exists}"
        );
        assert!(
            exists.contains("SCAN r USING INDEX operations_running_lease"),
            "{exists}"
        );
        let by_id = [
            CLAIM_BY_IDS.as_str(),
            COMPLETE_APPLY,
            REDRIVE_IN_PLACE,
            REDRIVE_AS_NEW,
            CANCEL_WAITING,
            ENQUEUE_MARK_WOKEN,
            ALERTS_MARK_ALERTED,
            ALERTS_TAKE,
            RECONCILE_TAKE,
        ];
        for statement in by_id {
            let plan = plan(&store, statement).await;
            let first = plan
                .lines()
                .find(|l| l.contains("operations"))
                .unwrap_or_default();
            assert!(
                first.contains("sqlite_autoindex_operations_1 (id=?)"),
                "{statement}\n{plan}"
            );
        }
    }
}
