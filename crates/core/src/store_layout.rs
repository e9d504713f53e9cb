//! The layout every store crate shares, as code: [`impl_store_traits!`](crate::impl_store_traits)
//! implements the store traits on a store type by forwarding each method to the function of
//! the same name in the module of its concept (`crate::claim::operation_claim_by_ids`, ...). A
//! store crate that lacks a module or a function does not compile, so "claim on PostgreSQL" and
//! "claim on SQLite" are always found in the same place.
//!
//! | module | functions |
//! | --- | --- |
//! | `read` | `migrate`, `now`, `operation_get`, `operation_list`, `operation_count` |
//! | `enqueue` | `operation_insert_many`, `operation_mark_woken` |
//! | `claim` | `operation_claim_by_ids`, `operation_claim_eligible`, `operation_claim_suspect`, `operation_suspect_exists`, `operation_heartbeat`, `operation_heartbeat_many`, `operation_claim_current`, `operation_claim_give_back`, `operation_work_exists` |
//! | `complete` | `operation_complete_many`, `operation_rescue_many` |
//! | `steps` | `operation_remote_id_set`, `operation_steps_get`, `operation_step_save` |
//! | `workers` | `worker_beat`, `worker_remove`, `worker_list`, `operation_unhandled` |
//! | `kinds` | `kind_publish`, `kind_list` |
//! | `wake` | `operation_wake_due`, `operation_wake_reset`, `operation_rewake`, `operation_wake_figures` |
//! | `rescue` | `operation_lease_expired_list`, `operation_end_past_deadline` |
//! | `reconcile` | `operation_reconcile_due`, `operation_reconcile_resolve` |
//! | `alerts` | `operation_alert_claim`, `operation_mark_alerted`, `operation_alert_defer`, `alert_record`, `alert_holds_record`, `alert_due`, `alert_settle`, `alert_trim`, `alert_list` |
//! | `leader` | `leader_acquire`, `leader_release`, `leader_list` |
//! | `controls` | `control_set`, `control_remove`, `control_list` |
//! | `filter` | `operation_count_matching` |
//! | `redrive` | `redrive_preview`, `operation_redrive`, `redrive_job_save`, `redrive_job_stop`, `redrive_job_list` |
//! | `quarantine` | `operation_quarantine`, `operation_release` |
//! | `cancel` | `operation_cancel` |
//! | `stats` | `stats`, `activity_per_minute` |
//! | `audit` | `audit_insert`, `audit_list` |
//! | `retention` | `operation_retention_delete`, `operation_retention_figures`, `attempt_minutes_remove`, `backlog_slots_compact`, `store_vacuum` |
//! | `archive` | `operation_export`, `operation_remove`, `operation_restore` |
//! | `schedules` | `schedule_declare`, `schedule_advance`, `schedule_list` |
//! | `limits` | `limit_set`, `limit_remove`, `limit_list` (and, for `claim`, the limits a claim locks and the starts it records) |
//!
//! Beside them, each store crate's `fenced` module implements [`FencedStore`](crate::FencedStore)
//! itself (not through the macro: each store names its own transaction type, `PgFencedTx`,
//! `SqliteFencedTx`), on the `claim_current.sql` and `complete_apply.sql` of `claim` and
//! `complete`.
//!
//! Each function takes the store and the method's params (`async fn operation_claim_by_ids(store:
//! &PgStore, params: ClaimByIdsParams) -> Result<Vec<Claimed>>`).

#[doc(hidden)]
pub use async_trait::async_trait as __async_trait;
#[doc(hidden)]
pub use chrono as __chrono;

/// Implements [`Store`](crate::Store), [`EnqueueStore`](crate::EnqueueStore),
/// [`WorkerStore`](crate::WorkerStore), [`MaintenanceStore`](crate::MaintenanceStore),
/// [`OperatorStore`](crate::OperatorStore), [`RetentionStore`](crate::RetentionStore), [`ScheduleStore`](crate::ScheduleStore) and
/// [`LimitStore`](crate::LimitStore) on `$store` by forwarding to the calling crate's
/// concept modules, as the module documentation lays out.
#[macro_export]
// `crate::` is meant: the paths name the calling store crate's modules.
#[allow(clippy::crate_in_macro_def)]
macro_rules! impl_store_traits {
    ($store:ty) => {
        #[$crate::store_layout::__async_trait]
        impl $crate::Store for $store {
            async fn migrate(&self) -> $crate::Result<()> {
                crate::read::migrate(self).await
            }
            async fn now(
                &self,
            ) -> $crate::Result<
                $crate::store_layout::__chrono::DateTime<$crate::store_layout::__chrono::Utc>,
            > {
                crate::read::now(self).await
            }
            async fn operation_get(
                &self,
                params: $crate::store::OperationGetParams,
            ) -> $crate::Result<Option<$crate::OperationDetail>> {
                crate::read::operation_get(self, params).await
            }
            async fn operation_list(
                &self,
                params: $crate::store::ListParams,
            ) -> $crate::Result<Vec<$crate::Operation>> {
                crate::read::operation_list(self, params).await
            }
            async fn operation_count(&self) -> $crate::Result<Vec<$crate::store::CountRow>> {
                crate::read::operation_count(self).await
            }
        }

        #[$crate::store_layout::__async_trait]
        impl $crate::EnqueueStore for $store {
            async fn operation_insert_many(
                &self,
                ops: Vec<$crate::NewOperation>,
            ) -> $crate::Result<Vec<$crate::store::Enqueued>> {
                crate::enqueue::operation_insert_many(self, ops).await
            }
            async fn operation_mark_woken(
                &self,
                params: $crate::store::MarkWokenParams,
            ) -> $crate::Result<()> {
                crate::enqueue::operation_mark_woken(self, params).await
            }
        }

        #[$crate::store_layout::__async_trait]
        impl $crate::WorkerStore for $store {
            async fn operation_claim_by_ids(
                &self,
                params: $crate::store::ClaimByIdsParams,
            ) -> $crate::Result<Vec<$crate::Claimed>> {
                crate::claim::operation_claim_by_ids(self, params).await
            }
            async fn operation_claim_eligible(
                &self,
                params: $crate::store::ClaimEligibleParams,
            ) -> $crate::Result<Vec<$crate::Claimed>> {
                crate::claim::operation_claim_eligible(self, params).await
            }
            async fn operation_claim_suspect(
                &self,
                params: $crate::store::ClaimSuspectParams,
            ) -> $crate::Result<Option<$crate::Claimed>> {
                crate::claim::operation_claim_suspect(self, params).await
            }
            async fn operation_suspect_exists(
                &self,
                params: $crate::store::WorkExistsParams,
            ) -> $crate::Result<bool> {
                crate::claim::operation_suspect_exists(self, params).await
            }
            async fn operation_heartbeat(
                &self,
                params: $crate::store::HeartbeatParams,
            ) -> $crate::Result<
                $crate::store_layout::__chrono::DateTime<$crate::store_layout::__chrono::Utc>,
            > {
                crate::claim::operation_heartbeat(self, params).await
            }
            async fn operation_heartbeat_many(
                &self,
                params: $crate::store::HeartbeatManyParams,
            ) -> $crate::Result<Vec<$crate::OperationId>> {
                crate::claim::operation_heartbeat_many(self, params).await
            }
            async fn operation_claim_current(
                &self,
                params: $crate::store::ClaimCurrentParams,
            ) -> $crate::Result<bool> {
                crate::claim::operation_claim_current(self, params).await
            }
            async fn operation_claim_give_back(
                &self,
                params: $crate::store::ClaimGiveBackParams,
            ) -> $crate::Result<Vec<$crate::OperationId>> {
                crate::claim::operation_claim_give_back(self, params).await
            }
            async fn operation_complete_many(
                &self,
                params: Vec<$crate::store::CompleteParams>,
            ) -> $crate::Result<Vec<$crate::store::CompleteResult>> {
                crate::complete::operation_complete_many(self, params).await
            }
            async fn operation_remote_id_set(
                &self,
                params: $crate::store::RemoteIdSetParams,
            ) -> $crate::Result<()> {
                crate::steps::operation_remote_id_set(self, params).await
            }
            async fn operation_steps_get(
                &self,
                params: $crate::store::StepsGetParams,
            ) -> $crate::Result<Vec<$crate::store::Step>> {
                crate::steps::operation_steps_get(self, params).await
            }
            async fn operation_step_save(
                &self,
                params: $crate::store::StepSaveParams,
            ) -> $crate::Result<()> {
                crate::steps::operation_step_save(self, params).await
            }
            async fn operation_work_exists(
                &self,
                params: $crate::store::WorkExistsParams,
            ) -> $crate::Result<bool> {
                crate::claim::operation_work_exists(self, params).await
            }
            async fn worker_beat(&self, params: $crate::WorkerBeatParams) -> $crate::Result<()> {
                crate::workers::worker_beat(self, params).await
            }
            async fn worker_remove(
                &self,
                params: $crate::store::WorkerRemoveParams,
            ) -> $crate::Result<bool> {
                crate::workers::worker_remove(self, params).await
            }
            async fn kind_publish(&self, params: $crate::KindPublishParams) -> $crate::Result<()> {
                crate::kinds::kind_publish(self, params).await
            }
        }

        #[$crate::store_layout::__async_trait]
        impl $crate::MaintenanceStore for $store {
            async fn operation_wake_due(
                &self,
                params: $crate::maintenance::WakeDueParams,
            ) -> $crate::Result<Vec<$crate::WakeUp>> {
                crate::wake::operation_wake_due(self, params).await
            }
            async fn operation_wake_reset(
                &self,
                params: $crate::maintenance::WakeResetParams,
            ) -> $crate::Result<u64> {
                crate::wake::operation_wake_reset(self, params).await
            }
            async fn operation_rewake(
                &self,
                params: $crate::maintenance::RewakeParams,
            ) -> $crate::Result<Vec<$crate::WakeUp>> {
                crate::wake::operation_rewake(self, params).await
            }
            async fn operation_wake_figures(
                &self,
                params: $crate::maintenance::WakeFiguresParams,
            ) -> $crate::Result<Vec<$crate::maintenance::KindWakeFigures>> {
                crate::wake::operation_wake_figures(self, params).await
            }
            async fn operation_lease_expired_list(
                &self,
                params: $crate::maintenance::LeaseExpiredListParams,
            ) -> $crate::Result<Vec<$crate::Claimed>> {
                crate::rescue::operation_lease_expired_list(self, params).await
            }
            async fn operation_rescue_many(
                &self,
                params: $crate::maintenance::RescueManyParams,
            ) -> $crate::Result<Vec<$crate::store::CompleteResult>> {
                crate::complete::operation_rescue_many(self, params).await
            }
            async fn operation_end_past_deadline(
                &self,
                params: $crate::maintenance::EndPastDeadlineParams,
            ) -> $crate::Result<u64> {
                crate::rescue::operation_end_past_deadline(self, params).await
            }
            async fn operation_reconcile_due(
                &self,
                params: $crate::maintenance::ReconcileDueParams,
            ) -> $crate::Result<Vec<$crate::Operation>> {
                crate::reconcile::operation_reconcile_due(self, params).await
            }
            async fn operation_reconcile_resolve(
                &self,
                params: $crate::maintenance::ReconcileResolveParams,
            ) -> $crate::Result<$crate::Status> {
                crate::reconcile::operation_reconcile_resolve(self, params).await
            }
            async fn operation_alert_claim(
                &self,
                params: $crate::maintenance::AlertClaimParams,
            ) -> $crate::Result<Vec<$crate::maintenance::AlertDue>> {
                crate::alerts::operation_alert_claim(self, params).await
            }
            async fn operation_mark_alerted(
                &self,
                params: $crate::maintenance::MarkAlertedParams,
            ) -> $crate::Result<()> {
                crate::alerts::operation_mark_alerted(self, params).await
            }
            async fn operation_alert_defer(
                &self,
                params: $crate::maintenance::AlertDeferParams,
            ) -> $crate::Result<()> {
                crate::alerts::operation_alert_defer(self, params).await
            }
            async fn alert_record(
                &self,
                params: $crate::alert::AlertRecordParams,
            ) -> $crate::Result<Vec<$crate::alert::AlertEntry>> {
                crate::alerts::alert_record(self, params).await
            }
            async fn alert_holds_record(
                &self,
                params: $crate::alert::AlertHoldsParams,
            ) -> $crate::Result<Vec<$crate::alert::AlertEntry>> {
                crate::alerts::alert_holds_record(self, params).await
            }
            async fn alert_due(
                &self,
                params: $crate::alert::AlertDueParams,
            ) -> $crate::Result<Vec<$crate::alert::AlertEntry>> {
                crate::alerts::alert_due(self, params).await
            }
            async fn alert_settle(
                &self,
                params: $crate::alert::AlertSettleParams,
            ) -> $crate::Result<()> {
                crate::alerts::alert_settle(self, params).await
            }
            async fn alert_trim(
                &self,
                params: $crate::alert::AlertTrimParams,
            ) -> $crate::Result<u64> {
                crate::alerts::alert_trim(self, params).await
            }
            async fn leader_acquire(
                &self,
                params: $crate::maintenance::LeaderAcquireParams,
            ) -> $crate::Result<$crate::maintenance::Leadership> {
                crate::leader::leader_acquire(self, params).await
            }
            async fn leader_release(
                &self,
                params: $crate::maintenance::LeaderReleaseParams,
            ) -> $crate::Result<bool> {
                crate::leader::leader_release(self, params).await
            }
        }

        #[$crate::store_layout::__async_trait]
        impl $crate::OperatorStore for $store {
            async fn control_set(
                &self,
                params: $crate::operator::ControlSetParams,
            ) -> $crate::Result<$crate::Control> {
                crate::controls::control_set(self, params).await
            }
            async fn control_remove(
                &self,
                params: $crate::operator::ControlRemoveParams,
            ) -> $crate::Result<bool> {
                crate::controls::control_remove(self, params).await
            }
            async fn control_list(&self) -> $crate::Result<Vec<$crate::Control>> {
                crate::controls::control_list(self).await
            }
            async fn operation_count_matching(
                &self,
                params: $crate::operator::CountMatchingParams,
            ) -> $crate::Result<::std::collections::BTreeMap<$crate::Status, u64>> {
                crate::filter::operation_count_matching(self, params).await
            }
            async fn redrive_preview(
                &self,
                params: $crate::operator::RedrivePreviewParams,
            ) -> $crate::Result<$crate::operator::RedrivePreview> {
                crate::redrive::redrive_preview(self, params).await
            }
            async fn operation_redrive(
                &self,
                params: $crate::operator::RedriveParams,
            ) -> $crate::Result<Vec<$crate::operator::Redriven>> {
                crate::redrive::operation_redrive(self, params).await
            }
            async fn redrive_job_save(
                &self,
                params: $crate::redrive_job::RedriveJobSaveParams,
            ) -> $crate::Result<$crate::redrive_job::RedriveJob> {
                crate::redrive::redrive_job_save(self, params).await
            }
            async fn redrive_job_stop(
                &self,
                params: $crate::redrive_job::RedriveJobStopParams,
            ) -> $crate::Result<Option<$crate::redrive_job::RedriveJob>> {
                crate::redrive::redrive_job_stop(self, params).await
            }
            async fn redrive_job_list(
                &self,
                params: $crate::redrive_job::RedriveJobListParams,
            ) -> $crate::Result<Vec<$crate::redrive_job::RedriveJob>> {
                crate::redrive::redrive_job_list(self, params).await
            }
            async fn operation_quarantine(
                &self,
                params: $crate::operator::QuarantineParams,
            ) -> $crate::Result<u64> {
                crate::quarantine::operation_quarantine(self, params).await
            }
            async fn operation_release(
                &self,
                params: $crate::operator::ReleaseParams,
            ) -> $crate::Result<u64> {
                crate::quarantine::operation_release(self, params).await
            }
            async fn operation_cancel(
                &self,
                params: $crate::operator::CancelParams,
            ) -> $crate::Result<Vec<$crate::OperationId>> {
                crate::cancel::operation_cancel(self, params).await
            }
            async fn stats(&self) -> $crate::Result<$crate::StatsReport> {
                crate::stats::stats(self).await
            }
            async fn activity_per_minute(
                &self,
                params: $crate::operator::ActivityParams,
            ) -> $crate::Result<Vec<$crate::operator::ActivityMinute>> {
                crate::stats::activity_per_minute(self, params).await
            }
            async fn audit_insert(
                &self,
                entry: $crate::operator::AuditEntry,
            ) -> $crate::Result<()> {
                crate::audit::audit_insert(self, entry).await
            }
            async fn audit_list(
                &self,
                params: $crate::operator::AuditListParams,
            ) -> $crate::Result<Vec<$crate::operator::AuditRecord>> {
                crate::audit::audit_list(self, params).await
            }
            async fn alert_list(
                &self,
                params: $crate::alert::AlertListParams,
            ) -> $crate::Result<Vec<$crate::alert::AlertEntry>> {
                crate::alerts::alert_list(self, params).await
            }
            async fn worker_list(
                &self,
                params: $crate::operator::WorkerListParams,
            ) -> $crate::Result<Vec<$crate::WorkerRecord>> {
                crate::workers::worker_list(self, params).await
            }
            async fn operation_unhandled(
                &self,
                params: $crate::operator::WorkerListParams,
            ) -> $crate::Result<Vec<$crate::UnhandledKind>> {
                crate::workers::operation_unhandled(self, params).await
            }
            async fn leader_list(&self) -> $crate::Result<Vec<$crate::maintenance::Leadership>> {
                crate::leader::leader_list(self).await
            }
            async fn kind_list(&self) -> $crate::Result<Vec<$crate::KindRecord>> {
                crate::kinds::kind_list(self).await
            }
            async fn operation_export(
                &self,
                params: $crate::archive::OperationExportParams,
            ) -> $crate::Result<Vec<$crate::archive::ArchivedOperation>> {
                crate::archive::operation_export(self, params).await
            }
            async fn operation_remove(
                &self,
                params: $crate::archive::OperationRemoveParams,
            ) -> $crate::Result<Vec<$crate::OperationId>> {
                crate::archive::operation_remove(self, params).await
            }
            async fn operation_restore(
                &self,
                params: $crate::archive::OperationRestoreParams,
            ) -> $crate::Result<Vec<$crate::archive::RestoreOutcome>> {
                crate::archive::operation_restore(self, params).await
            }
        }

        #[$crate::store_layout::__async_trait]
        impl $crate::RetentionStore for $store {
            async fn operation_retention_delete(
                &self,
                params: $crate::retention::RetentionDeleteParams,
            ) -> $crate::Result<u64> {
                crate::retention::operation_retention_delete(self, params).await
            }
            async fn operation_retention_figures(
                &self,
                params: $crate::retention::RetentionFiguresParams,
            ) -> $crate::Result<$crate::retention::RetentionFigures> {
                crate::retention::operation_retention_figures(self, params).await
            }
            async fn attempt_minutes_remove(
                &self,
                params: $crate::retention::AttemptMinutesRemoveParams,
            ) -> $crate::Result<u64> {
                crate::retention::attempt_minutes_remove(self, params).await
            }
            async fn backlog_slots_compact(
                &self,
                params: $crate::retention::BacklogSlotsCompactParams,
            ) -> $crate::Result<u64> {
                crate::retention::backlog_slots_compact(self, params).await
            }
            async fn store_vacuum(
                &self,
                params: $crate::retention::StoreVacuumParams,
            ) -> $crate::Result<$crate::retention::VacuumOutcome> {
                crate::retention::store_vacuum(self, params).await
            }
        }

        #[$crate::store_layout::__async_trait]
        impl $crate::ScheduleStore for $store {
            async fn schedule_declare(
                &self,
                params: $crate::schedule::ScheduleDeclareParams,
            ) -> $crate::Result<()> {
                crate::schedules::schedule_declare(self, params).await
            }
            async fn schedule_advance(
                &self,
                params: $crate::schedule::ScheduleAdvanceParams,
            ) -> $crate::Result<bool> {
                crate::schedules::schedule_advance(self, params).await
            }
            async fn schedule_list(&self) -> $crate::Result<Vec<$crate::schedule::ScheduleRecord>> {
                crate::schedules::schedule_list(self).await
            }
        }

        #[$crate::store_layout::__async_trait]
        impl $crate::LimitStore for $store {
            async fn limit_set(
                &self,
                params: $crate::limit::LimitSetParams,
            ) -> $crate::Result<$crate::Limit> {
                crate::limits::limit_set(self, params).await
            }
            async fn limit_remove(
                &self,
                params: $crate::limit::LimitRemoveParams,
            ) -> $crate::Result<bool> {
                crate::limits::limit_remove(self, params).await
            }
            async fn limit_list(&self) -> $crate::Result<Vec<$crate::LimitUse>> {
                crate::limits::limit_list(self).await
            }
        }
    };
}
