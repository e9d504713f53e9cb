//! The crate's SQL: every static statement, one `.sql` file each under `src/sql/` (named
//! `<module>_<statement>.sql`, the same name in every store crate), embedded here as a named
//! constant. Each file starts with what the statement does and which index it walks. Statements
//! whose shape depends on an operator's filter are built in `filter.rs` instead.
//!
//! Seven statements splice in core's pause rule ([`oprec_core::not_held_back_sql`]) where their file
//! says `/*not_held_back*/`; their final text is built once, on first use.

use std::sync::LazyLock;

/// "Now" in a statement that binds the store's clock as `$1` (NULL: the database's clock).
const NOW: &str = "coalesce($1::timestamptz, now())";

/// "Now" in a claim statement (claim_eligible.sql, claim_by_ids.sql, claim_suspect.sql): the
/// store's clock, or the time the statement started. A claim runs in a transaction opened a
/// round trip earlier ([`WALK_PENDING_IN_ORDER`]), and `now()` is that opening's time: two
/// workers' claims then recorded `claimed_at` in the order their transactions opened, not the
/// order they took rows in, so a claim that found the high priorities taken by a later-opened
/// one stamped its low ones before them (a CI run: 135 low ones "claimed" before the last high
/// one, crates/cli/tests/limits.rs). The statement's start is a few microseconds from its walk.
const CLAIM_NOW: &str = "coalesce($1::timestamptz, statement_timestamp())";

/// The placeholder a statement file marks the pause rule's place with.
const NOT_HELD_BACK: &str = "/*not_held_back*/";

/// `sql` with core's pause rule for the `operations` row named `row` in place of its one
/// placeholder (a file without exactly one is a bug, caught by the first statement run).
fn with_not_held_back(sql: &str, row: &str) -> String {
    with_not_held_back_at(sql, row, NOW)
}

/// [`with_not_held_back`] with the pause rule reading the clock as `now` (an SQL expression).
fn with_not_held_back_at(sql: &str, row: &str, now: &str) -> String {
    assert_eq!(
        sql.matches(NOT_HELD_BACK).count(),
        1,
        "a statement splicing the pause rule marks its place exactly once"
    );
    sql.replace(NOT_HELD_BACK, &oprec_core::not_held_back_sql(row, now))
}

/// Opens the transaction of a statement that must walk the partial index of pending rows in its
/// order (`ORDER BY next_eligible_at, id LIMIT n`: [`CLAIM_ELIGIBLE`], [`WAKE_DUE`], [`CLAIM_WORK_EXISTS`]). Without
/// this, a missing or stale estimate (a new table, or a burst of pending rows in a table whose
/// statistics say there are almost none: the aftermath of an outage) makes the planner fetch and
/// sort every pending row on each call, so draining a backlog costs O(n²). Pricing sorts out
/// leaves the ordered index scan, which stops after `n` rows. The price of any sort that remains
/// (the count triggers' ORDER BY) is then so high that JIT compilation would start on every
/// call, about 180 ms for a claim of 1,000: it is turned off too (the triggers' functions also
/// turn it off themselves, migration 0015).
pub(crate) const WALK_PENDING_IN_ORDER: &str =
    "BEGIN; SET LOCAL enable_sort = off; SET LOCAL jit = off";

/// Opens the transaction of a listing whose status is common (read.rs, `operation_list`): the
/// primary key walked in id order finds a page within a few rows per match, where a planner
/// with stale statistics would gather every match through a bitmap and sort them.
pub(crate) const WALK_IN_ID_ORDER: &str =
    "BEGIN; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off; SET LOCAL jit = off";

/// Opens the transaction that finds a few operations' ids through `(status, kind, id)`
/// (list_ids.sql) and then their rows by primary key, each asked in its index's order with sorts
/// priced out, so that a planner with stale statistics reads neither the table nor a partial
/// index of every finished row.
pub(crate) const FIND_BY_STATUS_INDEX: &str =
    "BEGIN; SET LOCAL enable_sort = off; SET LOCAL enable_seqscan = off; SET LOCAL jit = off";

/// Opens the transactions that walk the partial indexes of finished operations in their order
/// and stop early: a retention batch ([`RETENTION_DELETE`]) walks `operations_finished_kind` one
/// kind at a time in finish order up to the cutoff, and [`REDRIVE_RECOVERED`] walks it from a
/// time to the first match (`ORDER BY terminal_at LIMIT 1`), or, for a dependency, the kinds'
/// walks merged in finish order (redrive.rs, `recovered_dependency`).
/// Without statistics (autovacuum off, a table never analyzed, a mass death just recorded) the
/// planner took every finished row through the index of (status, kind, id) and sorted them all:
/// 11.9 s and a 39 MB spill for one retention batch at 1 M rows, against 0.1 s once analyzed.
/// With sorts and sequential scans priced out, only the ordered walk that stops early is left;
/// JIT is off for the reason [`WALK_PENDING_IN_ORDER`] gives.
pub(crate) const WALK_FINISHED_IN_ORDER: &str =
    "BEGIN; SET LOCAL enable_sort = off; SET LOCAL enable_seqscan = off; SET LOCAL jit = off";

/// The planner settings of [`MATCH_BATCH_BY_HASH`], written once for both constants.
macro_rules! match_batch_settings {
    () => {
        "SET LOCAL enable_nestloop = off; SET LOCAL jit = off"
    };
}

/// Opens the transaction of a statement that matches a batch of claims (arrays of ids and
/// tokens) with their rows: [`COMPLETE_APPLY`] and [`CLAIM_HEARTBEAT_MANY`]. The rows are found
/// by primary key (`id = ANY(ids)`), and statistics taken before the claims (autovacuum off, or
/// not yet round) say almost no row holds a lease, so the planner expects one row and joins the
/// batch to it by a nested loop that unnests the whole batch again for every row found: a
/// completion of 600 compared 360,000 pairs. Without nested loops the batch is hashed once.
pub(crate) const MATCH_BATCH_BY_HASH: &str = concat!("BEGIN; ", match_batch_settings!());

/// [`MATCH_BATCH_BY_HASH`]'s settings alone, for a transaction already open (a fenced
/// completion): a connection caches one plan for a statement, whichever transaction planned it,
/// so every path that runs [`COMPLETE_APPLY`] plans it the same way.
pub(crate) const MATCH_BATCH_SETTINGS: &str = match_batch_settings!();

/// Opens the stats transaction: every figure walks an index or the small `operation_counts`
/// table, and with missing or stale statistics the planner must not be tempted into reading a
/// whole table instead (a guessed third of `operation_attempts` ending in the last hour). The
/// price of a sequential scan is then so high that JIT compilation would start on every figure
/// (200 ms of compiling for a read of a few rows): it is turned off too, and so are parallel
/// workers, whose start costs more than the small reads they would share.
pub(crate) const STATS_INDEXES_ONLY: &str = "SET LOCAL enable_seqscan = off; SET LOCAL jit = off; \
     SET LOCAL max_parallel_workers_per_gather = 0";

/// Counts operations up to `$1` (the size that decides how an online index is built).
pub(crate) const MIGRATE_OPERATIONS_AT_LEAST: &str =
    include_str!("sql/migrate_operations_at_least.sql");

/// The online indexes among `$1` that are there, and whether each is valid (not a failed
/// concurrent build).
pub(crate) const MIGRATE_INDEX_STATES: &str = include_str!("sql/migrate_index_states.sql");

/// Claims announcements that are due.
pub(crate) const ALERTS_CLAIM: &str = include_str!("sql/alerts_claim.sql");

/// Records alerts (and dead-letter deliveries) in the alert log.
pub(crate) const ALERTS_RECORD: &str = include_str!("sql/alerts_record.sql");

/// Records an alert for each new attempt that failed for configuration.
pub(crate) const ALERTS_HOLDS_RECORD: &str = include_str!("sql/alerts_holds_record.sql");

/// Takes recorded alerts due to be sent.
pub(crate) const ALERTS_DUE: &str = include_str!("sql/alerts_due.sql");

/// Records how sends went.
pub(crate) const ALERTS_SETTLE: &str = include_str!("sql/alerts_settle.sql");

/// Removes old sent alerts.
pub(crate) const ALERTS_TRIM: &str = include_str!("sql/alerts_trim.sql");

/// The alert log, newest first.
pub(crate) const ALERTS_LIST: &str = include_str!("sql/alerts_list.sql");

/// Records failed announcements and their retry times.
pub(crate) const ALERTS_DEFER: &str = include_str!("sql/alerts_defer.sql");

/// Takes or keeps a leadership.
pub(crate) const LEADER_ACQUIRE: &str = include_str!("sql/leader_acquire.sql");

/// A leadership as it stands.
pub(crate) const LEADER_GET: &str = include_str!("sql/leader_get.sql");

/// Gives a leadership up.
pub(crate) const LEADER_RELEASE: &str = include_str!("sql/leader_release.sql");

/// The leaderships in force.
pub(crate) const LEADER_LIST: &str = include_str!("sql/leader_list.sql");

/// Records announced promotions.
pub(crate) const ALERTS_MARK_ALERTED: &str = include_str!("sql/alerts_mark_alerted.sql");

/// The attempt histories of archived operations.
pub(crate) const ARCHIVE_ATTEMPTS: &str = include_str!("sql/archive_attempts.sql");

/// The durable steps of archived operations.
pub(crate) const ARCHIVE_STEPS: &str = include_str!("sql/archive_steps.sql");

/// Removes archived operations whose fences hold.
pub(crate) const ARCHIVE_REMOVE: &str = include_str!("sql/archive_remove.sql");

/// Which ids name an operation in the store.
pub(crate) const ARCHIVE_RESTORE_PRESENT: &str = include_str!("sql/archive_restore_present.sql");

/// Inserts restored operations.
pub(crate) const ARCHIVE_RESTORE_OPERATIONS: &str =
    include_str!("sql/archive_restore_operations.sql");

/// Inserts restored operations' attempts.
pub(crate) const ARCHIVE_RESTORE_ATTEMPTS: &str = include_str!("sql/archive_restore_attempts.sql");

/// Inserts restored operations' steps.
pub(crate) const ARCHIVE_RESTORE_STEPS: &str = include_str!("sql/archive_restore_steps.sql");

/// Appends to the audit log.
pub(crate) const AUDIT_INSERT: &str = include_str!("sql/audit_insert.sql");

/// The newest audit rows.
pub(crate) const AUDIT_LIST: &str = include_str!("sql/audit_list.sql");
/// Operations per status of some kinds and failure classes, from the trigger-kept counts
/// (filter.rs, `operation_count_matching`).
pub(crate) const COUNT_MATCHING_COUNTED: &str = include_str!("sql/count_matching_counted.sql");
/// The listed statuses of a kind with their counts (read.rs, `operation_list`).
pub(crate) const LIST_COUNTS: &str = include_str!("sql/list_counts.sql");
/// The ids of a few operations of some statuses (read.rs, `operation_list`).
pub(crate) const LIST_IDS: &str = include_str!("sql/list_ids.sql");
/// The ids of a few operations of some statuses and one kind.
pub(crate) const LIST_IDS_OF_KIND: &str = include_str!("sql/list_ids_of_kind.sql");
/// The id bounds of the operations created in a time range, from `creation_slots` (read.rs).
pub(crate) const LIST_CREATION_BOUNDS: &str = include_str!("sql/list_creation_bounds.sql");
/// The audit rows just newer than an entry, oldest first.
pub(crate) const AUDIT_LIST_NEWER: &str = include_str!("sql/audit_list_newer.sql");

/// Cancels waiting operations.
pub(crate) const CANCEL_WAITING: &str = include_str!("sql/cancel_waiting.sql");

/// The placeholder of a claim's `chosen` step: every picked row, or at most what the limits let.
const CHOSEN: &str = "/*chosen*/";

/// `sql` with its `chosen` step taking every picked row: no limit has little room.
fn choosing_all(sql: &str) -> String {
    assert_eq!(
        sql.matches(CHOSEN).count(),
        1,
        "a claim marks its chosen step once"
    );
    sql.replace(CHOSEN, "SELECT pid FROM picked")
}

/// `sql` with its `chosen` step taking at most what limits with little room let
/// (claim_capped.sql), whose four arrays are bound from `$first` on; `aged_before` is the
/// statement's expression for the aging cut.
fn choosing_capped(sql: &str, first: usize, aged_before: &str) -> String {
    assert_eq!(
        sql.matches(CHOSEN).count(),
        1,
        "a claim marks its chosen step once"
    );
    let capped = include_str!("sql/claim_capped.sql")
        .replace("{kinds}", &format!("${first}"))
        .replace("{kind_caps}", &format!("${}", first + 1))
        .replace("{dependencies}", &format!("${}", first + 2))
        .replace("{dependency_caps}", &format!("${}", first + 3))
        .replace("{aged_before}", aged_before);
    let body: String = capped
        .lines()
        .filter(|l| !l.starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    sql.replace(CHOSEN, &body)
}

/// claim_by_ids.sql with the pause rule spliced in.
fn claim_by_ids() -> String {
    with_not_held_back_at(include_str!("sql/claim_by_ids.sql"), "locked", CLAIM_NOW)
}

/// Claims the operations named by wake-ups.
pub(crate) static CLAIM_BY_IDS: LazyLock<String> = LazyLock::new(|| choosing_all(&claim_by_ids()));

/// Claims the operations named by wake-ups, at most what limits with little room let ($9 to
/// $12: core's ClaimAllowance::caps). Wake-ups carry no age order: priority decides.
pub(crate) static CLAIM_BY_IDS_CAPPED: LazyLock<String> =
    LazyLock::new(|| choosing_capped(&claim_by_ids(), 9, "'-infinity'::timestamptz"));

/// claim_eligible.sql with the pause rule spliced into both walks.
fn claim_eligible() -> String {
    let aged = include_str!("sql/claim_eligible.sql").replacen(
        "/*not_held_back_aged*/",
        &oprec_core::not_held_back_sql("operations", CLAIM_NOW),
        1,
    );
    with_not_held_back_at(&aged, "operations", CLAIM_NOW)
}

/// Claims eligible operations: the aged ones, then by priority (claim_eligible.sql).
/// Its two walks (the aged operations, then each priority level) each splice the pause rule.
pub(crate) static CLAIM_ELIGIBLE: LazyLock<String> =
    LazyLock::new(|| choosing_all(&claim_eligible()));

/// Claims eligible operations, at most what limits with little room let ($11 to $14: core's
/// ClaimAllowance::caps), aged ones first.
pub(crate) static CLAIM_ELIGIBLE_CAPPED: LazyLock<String> = LazyLock::new(|| {
    choosing_capped(
        &claim_eligible(),
        11,
        &format!("{CLAIM_NOW} - $7::int8 * interval '1 millisecond'"),
    )
});

/// Claims one suspect, to run isolated (a limited kind or dependency with no room left out).
pub(crate) static CLAIM_SUSPECT: LazyLock<String> = LazyLock::new(|| {
    with_not_held_back_at(
        include_str!("sql/claim_suspect.sql"),
        "operations",
        CLAIM_NOW,
    )
});

/// Whether a suspect waits for an isolated attempt.
pub(crate) static CLAIM_SUSPECT_EXISTS: LazyLock<String> = LazyLock::new(|| {
    with_not_held_back(include_str!("sql/claim_suspect_exists.sql"), "operations")
});

/// Whether a claim is current.
pub(crate) const CLAIM_CURRENT: &str = include_str!("sql/claim_current.sql");

/// Extends a claim's lease.
pub(crate) const CLAIM_HEARTBEAT: &str = include_str!("sql/claim_heartbeat.sql");

/// Extends the leases of every claim a worker holds.
pub(crate) const CLAIM_HEARTBEAT_MANY: &str = include_str!("sql/claim_heartbeat_many.sql");

/// Gives back unstarted claims.
pub(crate) const CLAIM_GIVE_BACK: &str = include_str!("sql/claim_give_back.sql");

/// Whether a worker of some kinds has work.
pub(crate) static CLAIM_WORK_EXISTS: LazyLock<String> =
    LazyLock::new(|| with_not_held_back(include_str!("sql/claim_work_exists.sql"), "operations"));

/// Ends claims with decided transitions: completions and rescues alike.
pub(crate) const COMPLETE_APPLY: &str = include_str!("sql/complete_apply.sql");

/// Writes refused completions into the history of their attempts.
pub(crate) const COMPLETE_STALE: &str = include_str!("sql/complete_stale.sql");

/// The controls in force.
pub(crate) const CONTROLS_LIST: &str = include_str!("sql/controls_list.sql");

/// Removes a control.
pub(crate) const CONTROLS_REMOVE: &str = include_str!("sql/controls_remove.sql");

/// Marks pending operations of some kinds never woken (after a transport purge).
pub(crate) const OPERATIONS_WAKE_RESET: &str = include_str!("sql/operations_wake_reset.sql");

/// Sets or replaces a control.
pub(crate) const CONTROLS_SET: &str = include_str!("sql/controls_set.sql");

/// Marks the pending operations a control covers as never woken, by the scope's rule
/// ([`oprec_core::ControlScope::matches_sql`]).
pub(crate) fn controls_wake_reset(scope: oprec_core::ControlScope) -> &'static str {
    static BY_SCOPE: LazyLock<Vec<String>> = LazyLock::new(|| {
        oprec_core::ControlScope::ALL
            .iter()
            .map(|s| {
                include_str!("sql/controls_wake_reset.sql")
                    .replace("/*scope_matches*/", &s.matches_sql("operations", "$1"))
            })
            .collect()
    });
    let i = oprec_core::ControlScope::ALL
        .iter()
        .position(|s| *s == scope)
        .expect("every scope is in ALL");
    &BY_SCOPE[i]
}

/// The operation that holds an idempotency key.
pub(crate) const ENQUEUE_EXISTING_ID: &str = include_str!("sql/enqueue_existing_id.sql");

/// Enqueues a batch in one statement.
pub(crate) const ENQUEUE_INSERT_MANY: &str = include_str!("sql/enqueue_insert_many.sql");

/// A batch of enqueues without idempotency keys.
pub(crate) const ENQUEUE_INSERT_KEYLESS: &str = include_str!("sql/enqueue_insert_keyless.sql");

/// Enqueues one operation (a cached plan).
pub(crate) const ENQUEUE_INSERT_ONE: &str = include_str!("sql/enqueue_insert_one.sql");

/// Records published wake-ups.
pub(crate) const ENQUEUE_MARK_WOKEN: &str = include_str!("sql/enqueue_mark_woken.sql");

/// An operation's attempt history, oldest first.
pub(crate) const READ_ATTEMPTS: &str = include_str!("sql/read_attempts.sql");

/// Operations counted by status, kind and last failure class.
pub(crate) const READ_COUNT: &str = include_str!("sql/read_count.sql");

/// One operation by id.
pub(crate) const READ_OPERATION: &str = include_str!("sql/read_operation.sql");

/// Takes reconciling operations due for their hook.
pub(crate) const RECONCILE_DUE: &str = include_str!("sql/reconcile_due.sql");

/// Writes a settlement.
pub(crate) const RECONCILE_RESOLVE: &str = include_str!("sql/reconcile_resolve.sql");

/// An operation's status, to explain a settlement that wrote nothing.
pub(crate) const RECONCILE_STATUS: &str = include_str!("sql/reconcile_status.sql");

/// Re-drives terminal operations as new, linked operations.
pub(crate) const REDRIVE_AS_NEW: &str = include_str!("sql/redrive_as_new.sql");

/// Re-drives terminal operations in place.
pub(crate) const REDRIVE_IN_PLACE: &str = include_str!("sql/redrive_in_place.sql");

/// When a kind first succeeded after a time.
pub(crate) const REDRIVE_RECOVERED: &str = include_str!("sql/redrive_recovered.sql");

/// The kinds that have succeeded operations (a loose scan).
pub(crate) const REDRIVE_SUCCEEDED_KINDS: &str = include_str!("sql/redrive_succeeded_kinds.sql");

/// Creates or updates a re-drive job's row.
pub(crate) const REDRIVE_JOB_SAVE: &str = include_str!("sql/redrive_job_save.sql");

/// Asks a running re-drive job to stop.
pub(crate) const REDRIVE_JOB_STOP: &str = include_str!("sql/redrive_job_stop.sql");

/// Re-drive jobs, newest first.
pub(crate) const REDRIVE_JOB_LIST: &str = include_str!("sql/redrive_job_list.sql");

/// Ends waiting operations past their deadline.
pub(crate) const RESCUE_END_PAST_DEADLINE: &str = include_str!("sql/rescue_end_past_deadline.sql");

/// Running operations whose lease expired.
pub(crate) const RESCUE_LEASE_EXPIRED: &str = include_str!("sql/rescue_lease_expired.sql");

/// Attempts and promotions to dead per minute.
pub(crate) const STATS_ACTIVITY_PER_MINUTE: &str =
    include_str!("sql/stats_activity_per_minute.sql");

/// Attempts of succeeded operations, and how many succeeded.
pub(crate) const STATS_ATTEMPTS_PER_SUCCESS: &str =
    include_str!("sql/stats_attempts_per_success.sql");

/// Attempts since a time, by dependency.
pub(crate) const STATS_ATTEMPTS_SINCE_BY_DEPENDENCY: &str =
    include_str!("sql/stats_attempts_since_by_dependency.sql");

/// Waiting and running operations by age bucket.
pub(crate) const STATS_BACKLOG_BY_AGE: &str = include_str!("sql/stats_backlog_by_age.sql");

/// The oldest waiting or running operation's creation time.
pub(crate) const STATS_BACKLOG_OLDEST: &str = include_str!("sql/stats_backlog_oldest.sql");

/// Operations by status.
pub(crate) const STATS_BY_STATUS: &str = include_str!("sql/stats_by_status.sql");

/// Dead operations awaiting action by kind.
pub(crate) const STATS_DEAD_BY_KIND: &str = include_str!("sql/stats_dead_by_kind.sql");

/// Dead operations re-driven as new by kind.
pub(crate) const STATS_DEAD_REDRIVEN_BY_KIND: &str =
    include_str!("sql/stats_dead_redriven_by_kind.sql");

/// Promotions to dead since a time, by code version.
pub(crate) const STATS_DEAD_SINCE_BY_CODE_VERSION: &str =
    include_str!("sql/stats_dead_since_by_code_version.sql");

/// Promotions to dead since a time, by kind.
pub(crate) const STATS_DEAD_SINCE_BY_KIND: &str = include_str!("sql/stats_dead_since_by_kind.sql");

/// The pending operation eligible longest that no control holds back.
pub(crate) static STATS_OLDEST_ELIGIBLE: LazyLock<String> = LazyLock::new(|| {
    with_not_held_back(include_str!("sql/stats_oldest_eligible.sql"), "operations")
});

/// The eligible pending operations a control of `scope` holds back (counted up to a bound) and
/// the one eligible longest, by the scope's rule ([`oprec_core::ControlScope::matches_sql`]).
pub(crate) fn stats_held_back(scope: oprec_core::ControlScope) -> &'static str {
    static BY_SCOPE: LazyLock<Vec<String>> = LazyLock::new(|| {
        oprec_core::ControlScope::ALL
            .iter()
            .map(|s| {
                include_str!("sql/stats_held_back.sql")
                    .replace("/*covers*/", &s.matches_sql("o", "$2"))
            })
            .collect()
    });
    let i = oprec_core::ControlScope::ALL
        .iter()
        .position(|s| *s == scope)
        .expect("every scope is in ALL");
    &BY_SCOPE[i]
}

/// Pending operations by last failure class.
pub(crate) const STATS_PENDING_BY_CLASS: &str = include_str!("sql/stats_pending_by_class.sql");

/// An operation's completed durable steps.
pub(crate) const STEPS_GET: &str = include_str!("sql/steps_get.sql");

/// Records the effect's remote identity under a claim.
pub(crate) const STEPS_REMOTE_ID_SET: &str = include_str!("sql/steps_remote_id_set.sql");

/// Saves a durable step under a claim.
pub(crate) const STEPS_SAVE: &str = include_str!("sql/steps_save.sql");

/// Marks due operations woken and returns them.
pub(crate) static WAKE_DUE: LazyLock<String> =
    LazyLock::new(|| with_not_held_back(include_str!("sql/wake_due.sql"), "operations"));

/// Marks one kind's stale operations woken and returns them (the budgeted re-wake).
pub(crate) static WAKE_REWAKE: LazyLock<String> =
    LazyLock::new(|| with_not_held_back(include_str!("sql/wake_rewake.sql"), "operations"));

/// Per kind: wake-ups out, stale ones, handled or not.
pub(crate) static WAKE_FIGURES: LazyLock<String> =
    LazyLock::new(|| with_not_held_back(include_str!("sql/wake_figures.sql"), "operations"));

/// Takes the scheduler's leadership for the transaction.
pub(crate) const WAKE_LEADER: &str = include_str!("sql/wake_leader.sql");

/// Publishes the enqueue-time policies of a worker's kinds.
pub(crate) const KINDS_PUBLISH: &str = include_str!("sql/kinds_publish.sql");

/// Every published kind's policy.
pub(crate) const KINDS_LIST: &str = include_str!("sql/kinds_list.sql");

/// Declares the schedules of a worker's kinds.
pub(crate) const SCHEDULES_DECLARE: &str = include_str!("sql/schedules_declare.sql");

/// Removes the schedules of kinds declared without one.
pub(crate) const SCHEDULES_REMOVE: &str = include_str!("sql/schedules_remove.sql");

/// Records a leader's pass over a schedule.
pub(crate) const SCHEDULES_ADVANCE: &str = include_str!("sql/schedules_advance.sql");

/// Every schedule with its last operation's status.
pub(crate) const SCHEDULES_LIST: &str = include_str!("sql/schedules_list.sql");

/// Registers or refreshes a worker's row.
pub(crate) const WORKERS_BEAT: &str = include_str!("sql/workers_beat.sql");

/// The workers seen lately.
pub(crate) const WORKERS_LIST: &str = include_str!("sql/workers_list.sql");

/// Removes a worker's row.
pub(crate) const WORKERS_REMOVE: &str = include_str!("sql/workers_remove.sql");

/// Pending operations per kind that no live worker handles.
pub(crate) const WORKERS_UNHANDLED: &str = include_str!("sql/workers_unhandled.sql");

/// Removes one batch of finished operations past their retention.
pub(crate) const RETENTION_DELETE: &str = include_str!("sql/retention_delete.sql");

/// What one kind holds in one finished status, against a cutoff.
pub(crate) const RETENTION_FIGURES: &str = include_str!("sql/retention_figures.sql");

/// Removes the per-minute attempt counts of old minutes.
pub(crate) const RETENTION_ATTEMPT_MINUTES_REMOVE: &str =
    include_str!("sql/retention_attempt_minutes_remove.sql");

/// Removes the oldest creation slots (`creation_slots`) no operation is left in.
pub(crate) const RETENTION_CREATION_SLOTS_REMOVE: &str =
    include_str!("sql/retention_creation_slots_remove.sql");

/// Folds the shards of settled creation slots of the backlog counts.
pub(crate) const RETENTION_BACKLOG_SLOTS_FOLD: &str =
    include_str!("sql/retention_backlog_slots_fold.sql");

/// Removes the settled creation slots that count nothing.
pub(crate) const RETENTION_BACKLOG_SLOTS_REMOVE: &str =
    include_str!("sql/retention_backlog_slots_remove.sql");

/// Whether the server's autovacuum keeps oprec's tables.
pub(crate) const RETENTION_AUTOVACUUM: &str = include_str!("sql/retention_autovacuum.sql");

/// Vacuums oprec's tables.
pub(crate) const RETENTION_VACUUM: &str = include_str!("sql/retention_vacuum.sql");

/// Locks the limits a claim may reach.
pub(crate) const LIMITS_LOCK: &str = include_str!("sql/limits_lock.sql");

/// Counts running operations of the limited kinds and dependencies, and reads the clock.
pub(crate) const LIMITS_RUNNING: &str = include_str!("sql/limits_running.sql");

/// Writes back the limits' windows of recent starts.
pub(crate) const LIMITS_RECORD: &str = include_str!("sql/limits_record.sql");

/// Sets or replaces a limit.
pub(crate) const LIMITS_SET: &str = include_str!("sql/limits_set.sql");

/// Removes a limit.
pub(crate) const LIMITS_REMOVE: &str = include_str!("sql/limits_remove.sql");

/// Every limit with its running count.
pub(crate) const LIMITS_LIST: &str = include_str!("sql/limits_list.sql");

/// Whether any limit exists.
pub(crate) const LIMITS_ANY: &str = include_str!("sql/limits_any.sql");
