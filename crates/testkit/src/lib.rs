//! oprec-testkit: one conformance suite that every [`Store`](oprec_core::Store) runs against its real database, in
//! the manner of River's `riverdrivertest` and apalis's `generic_storage_test!`.
//!
//! A backend's test file defines an async `setup()` returning a fresh, migrated, empty
//! [`Harness`] (a new PostgreSQL schema, a new SQLite file) and calls
//! [`store_conformance_tests!`]. Every case takes time from the harness's [`ManualClock`], so no
//! case sleeps. Not for production code: it panics on failure by design.

pub mod archive_cases;
pub mod fenced_cases;
pub mod fixture;
pub mod limit_cases;
pub mod model;
pub mod operator_cases;
pub mod redrive_cases;
pub mod retention_cases;
#[cfg(unix)]
pub mod services;
pub mod store_cases;
pub mod transport_cases;

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use oprec_core::maintenance::{LeaseExpiredListParams, ReconcileResolveParams, RescueManyParams};
use oprec_core::store::{
    ClaimEligibleParams, ClaimSuspectParams, Claimant, CompleteParams, CompleteResult,
    OperationGetParams,
};
use oprec_core::{
    Claimed, FullStore, ManualClock, OperationDetail, OperationId, Resolution, Status, Transition,
    VanishRule,
};

/// The time every case starts at.
pub fn start_time() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap()
}

/// A fresh store and the manual clock it judges time by.
pub struct Harness<S> {
    /// The store under test: migrated and empty.
    pub store: S,
    /// The clock the store reads; cases move it.
    pub clock: Arc<ManualClock>,
}

/// What one rescue pass did, as the cases check it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rescued {
    /// Expired claims recorded as vanished attempts.
    pub vanished: u64,
    /// Of those, operations pending again.
    pub retried: u64,
    /// Of those, operations ended dead.
    pub dead: u64,
}

/// The rescuer's pass as the runtime makes it: list expired leases, let core decide each one
/// ([`Transition::vanished`]), apply the decisions fenced by token and expiry.
pub async fn rescue_pass<S: FullStore>(
    store: &S,
    rule: &VanishRule,
) -> oprec_core::Result<Rescued> {
    let expired = store
        .operation_lease_expired_list(LeaseExpiredListParams { limit: 1000 })
        .await?;
    let now = store.now().await?;
    let rescues: Vec<CompleteParams> = expired
        .iter()
        .map(|c| CompleteParams {
            id: c.id,
            claim_token: c.claim_token(),
            transition: Transition::vanished(c, rule, now),
        })
        .collect();
    let dead: Vec<bool> = rescues
        .iter()
        .map(|r| r.transition.status() == Status::Dead)
        .collect();
    let results = store
        .operation_rescue_many(RescueManyParams { rescues })
        .await?;
    let mut r = Rescued::default();
    for (result, dead) in results.into_iter().zip(dead) {
        if result == CompleteResult::Applied {
            r.vanished += 1;
            if dead {
                r.dead += 1;
            } else {
                r.retried += 1;
            }
        }
    }
    Ok(r)
}

/// A resolution as the runtime's reconciler and the operator commands make it: read the
/// operation, let core settle it ([`Resolution::settle`]), write the settlement fenced by the
/// operation still being reconciling.
pub async fn resolve<S: FullStore>(
    store: &S,
    id: OperationId,
    resolution: Resolution,
    actor: &str,
) -> oprec_core::Result<Status> {
    let op = store
        .operation_get(OperationGetParams { id })
        .await?
        .ok_or(oprec_core::Error::NotFound(id))?
        .operation;
    let settlement = resolution.settle(&op, actor, store.now().await?);
    store
        .operation_reconcile_resolve(ReconcileResolveParams { id, settlement })
        .await
}

impl<S: FullStore> Harness<S> {
    /// A harness over `store`, which must already read `clock`.
    pub fn new(store: S, clock: Arc<ManualClock>) -> Self {
        Harness { store, clock }
    }

    /// A claimant with a 30-second lease.
    pub fn claimant(&self, worker: &str) -> Claimant {
        Claimant {
            worker_id: worker.to_owned(),
            code_version: Some("test-1".to_owned()),
            lease: Duration::seconds(30),
        }
    }

    /// Claims every eligible operation (up to 1,000) as `worker`.
    pub async fn claim_all(&self, worker: &str) -> Vec<Claimed> {
        self.store
            .operation_claim_eligible(ClaimEligibleParams {
                above_default_only: false,
                kinds: vec![],
                limit: 1000,
                claimant: self.claimant(worker),
            })
            .await
            .expect("claim eligible")
    }

    /// Claims one suspect to run isolated, as `worker`.
    pub async fn claim_suspect(&self, worker: &str) -> Option<Claimed> {
        self.store
            .operation_claim_suspect(ClaimSuspectParams {
                kinds: vec![],
                claimant: self.claimant(worker),
            })
            .await
            .expect("claim suspect")
    }

    /// The operation and its history; panics if it does not exist.
    pub async fn get(&self, id: OperationId) -> OperationDetail {
        self.store
            .operation_get(OperationGetParams { id })
            .await
            .expect("get")
            .unwrap_or_else(|| panic!("operation {id} not found"))
    }

    /// One rescue pass with `vanish_limit` and no retry delay; see [`rescue_pass`].
    pub async fn rescue(&self, vanish_limit: u32) -> Rescued {
        self.rescue_with(VanishRule {
            vanish_limit,
            retry_delay: Duration::zero(),
        })
        .await
    }

    /// One rescue pass under `rule`.
    pub async fn rescue_with(&self, rule: VanishRule) -> Rescued {
        rescue_pass(&self.store, &rule).await.expect("rescue")
    }

    /// Moves the clock by whole seconds.
    pub fn advance_secs(&self, secs: i64) {
        self.clock.advance(Duration::seconds(secs));
    }
}

/// Expands into one `#[tokio::test]` per conformance case and per fixture scenario, each calling
/// `$setup().await` for a fresh [`Harness`]. The calling crate needs `tokio` as a dev-dependency.
#[macro_export]
macro_rules! store_conformance_tests {
    ($setup:path) => {
        $crate::store_conformance_tests!(@cases $setup;
            store_cases::enqueue_then_get_round_trips,
            store_cases::idempotency_key_returns_the_existing_operation,
            store_cases::claim_counts_the_attempt_and_sets_a_lease,
            store_cases::claim_waits_for_next_eligible_at,
            store_cases::claim_by_ids_takes_only_pending_eligible_operations,
            store_cases::claim_eligible_honours_kinds_limit_and_order,
            store_cases::claim_takes_higher_priorities_first_and_aged_operations_before_all,
            store_cases::claim_ahead_of_wakeups_takes_aged_then_above_default_only,
            store_cases::claim_skips_operations_past_their_deadline,
            store_cases::heartbeat_extends_the_lease_and_is_fenced,
            store_cases::heartbeat_many_extends_every_held_claim,
            store_cases::give_back_refunds_the_attempt_and_leaves_no_history,
            store_cases::late_completion_with_an_old_token_changes_nothing,
            store_cases::complete_many_reports_each_result_in_order,
            store_cases::snooze_refunds_the_attempt,
            store_cases::snoozes_past_the_budget_climb_the_ladder,
            store_cases::each_transition_sets_status_and_history,
            store_cases::rescue_turns_expired_leases_into_vanished_attempts,
            store_cases::rescue_respects_the_attempt_bound_and_deadline,
            store_cases::rescue_is_fenced_by_the_token_and_the_expired_lease,
            store_cases::suspects_are_claimed_only_alone,
            store_cases::only_isolated_vanished_attempts_count_toward_the_crash_loop,
            store_cases::a_release_is_refunded_and_keeps_the_suspect,
            store_cases::work_exists_only_for_claimable_or_running_operations,
            store_cases::end_past_deadline_kills_waiting_operations_only,
            store_cases::cancel_touches_only_waiting_operations,
            store_cases::list_filters_and_pages,
            store_cases::hostile_filter_values_are_only_data,
            store_cases::list_filters_by_reason_error_and_time_newest_first,
            store_cases::list_takes_an_operators_filter,
            store_cases::count_groups_by_status_kind_and_class,
            store_cases::mark_woken_records_the_time,
            store_cases::claim_by_ids_honours_kinds,
            store_cases::remote_id_and_steps_are_fenced,
            store_cases::wake_due_picks_each_due_operation_once_per_interval,
            store_cases::enqueued_as_woken_waits_for_the_rewake_interval,
            limit_cases::running_limits_hold_for_every_claim,
            limit_cases::a_claim_takes_only_the_room_left,
            limit_cases::a_rate_admits_at_most_its_starts_per_second,
            fixture::malformed_input_is_dead_after_one_attempt,
            fixture::transient_outage_retries_at_0_60_360_then_succeeds,
            fixture::long_outage_ends_after_six_attempts_at_the_ladder_times,
            fixture::unknown_remote_result_goes_to_reconciling,
            fixture::terminal_operation_ignores_later_claims,
            fixture::deadline_before_the_next_rung_ends_dead,
            fixture::crash_loop_ends_dead_with_every_vanished_attempt_kept,
        );
    };
    (@cases $setup:path; $($module:ident :: $case:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let harness = $setup().await;
                $crate::$module::$case(harness).await;
            }
        )+
    };
}

/// Expands into one `#[tokio::test]` per case of [`fenced_cases`], each calling `$setup().await`
/// for a fresh [`Harness`] and handing the case the calling crate's effect table: `$table(&store)`
/// creates it, `$write(&mut tx, key)` writes a row for `key` through a fenced transaction, and
/// `$count(&store, key)` counts the committed rows for `key`.
#[macro_export]
macro_rules! fenced_conformance_tests {
    ($setup:path, $table:path, $write:path, $count:path) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn claim_current_follows_the_claim() {
            $crate::fenced_cases::claim_current_follows_the_claim($setup().await).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn fenced_completion_commits_the_effect_with_the_same_record() {
            $crate::fenced_cases::fenced_completion_commits_the_effect_with_the_same_record(
                $setup().await,
                $table,
                $write,
                $count,
            )
            .await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn fenced_begin_needs_a_current_claim_and_drop_rolls_back() {
            $crate::fenced_cases::fenced_begin_needs_a_current_claim_and_drop_rolls_back(
                $setup().await,
                $table,
                $write,
                $count,
            )
            .await;
        }
    };
}
