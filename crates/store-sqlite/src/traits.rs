//! The five store traits on [`SqliteStore`]: every method forwards to the function of the same
//! name in the module of its concept, so that a method is found by its name in either store.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use oprec_core::maintenance::{
    DeadUnalertedParams, EndPastDeadlineParams, LeaseExpiredListParams, MarkAlertedParams,
    ReconcileDueParams, ReconcileResolveParams, RescueManyParams, WakeDueParams,
};
use oprec_core::operator::{
    ActivityMinute, ActivityParams, AuditEntry, AuditListParams, AuditRecord, CancelParams,
    Control, ControlRemoveParams, ControlSetParams, CountMatchingParams, QuarantineParams,
    RedriveParams, RedrivePreview, RedrivePreviewParams, Redriven, ReleaseParams, StatsReport,
    WorkerListParams,
};
use oprec_core::store::{
    ClaimByIdsParams, ClaimEligibleParams, CompleteParams, CompleteResult, CountRow, Enqueued,
    HeartbeatParams, ListParams, MarkWokenParams, OperationGetParams, RemoteIdSetParams, Step,
    StepSaveParams, StepsGetParams, WorkExistsParams, WorkerRemoveParams,
};
use oprec_core::{
    Claimed, EnqueueStore, MaintenanceStore, NewOperation, Operation, OperationDetail, OperationId,
    OperatorStore, Result, Status, Store, UnhandledKind, WorkerBeatParams, WorkerRecord,
    WorkerStore,
};

use crate::{
    SqliteStore, alerts, audit, cancel, claim, complete, controls, enqueue, filter, quarantine,
    read, reconcile, redrive, rescue, stats, steps, wake, workers,
};

#[async_trait]
impl Store for SqliteStore {
    async fn migrate(&self) -> Result<()> {
        crate::migrate(self).await
    }

    async fn now(&self) -> Result<DateTime<Utc>> {
        crate::now(self).await
    }

    async fn operation_get(&self, params: OperationGetParams) -> Result<Option<OperationDetail>> {
        read::operation_get(self, params).await
    }

    async fn operation_list(&self, params: ListParams) -> Result<Vec<Operation>> {
        read::operation_list(self, params).await
    }

    async fn operation_count(&self) -> Result<Vec<CountRow>> {
        read::operation_count(self).await
    }
}

#[async_trait]
impl EnqueueStore for SqliteStore {
    async fn operation_insert_many(&self, ops: Vec<NewOperation>) -> Result<Vec<Enqueued>> {
        enqueue::operation_insert_many(self, ops).await
    }

    async fn operation_mark_woken(&self, params: MarkWokenParams) -> Result<()> {
        enqueue::operation_mark_woken(self, params).await
    }
}

#[async_trait]
impl WorkerStore for SqliteStore {
    async fn operation_claim_by_ids(&self, params: ClaimByIdsParams) -> Result<Vec<Claimed>> {
        claim::operation_claim_by_ids(self, params).await
    }

    async fn operation_claim_eligible(&self, params: ClaimEligibleParams) -> Result<Vec<Claimed>> {
        claim::operation_claim_eligible(self, params).await
    }

    async fn operation_heartbeat(&self, params: HeartbeatParams) -> Result<DateTime<Utc>> {
        claim::operation_heartbeat(self, params).await
    }

    async fn operation_complete_many(
        &self,
        params: Vec<CompleteParams>,
    ) -> Result<Vec<CompleteResult>> {
        complete::operation_complete_many(self, params).await
    }

    async fn operation_remote_id_set(&self, params: RemoteIdSetParams) -> Result<()> {
        steps::operation_remote_id_set(self, params).await
    }

    async fn operation_steps_get(&self, params: StepsGetParams) -> Result<Vec<Step>> {
        steps::operation_steps_get(self, params).await
    }

    async fn operation_step_save(&self, params: StepSaveParams) -> Result<()> {
        steps::operation_step_save(self, params).await
    }

    async fn operation_work_exists(&self, params: WorkExistsParams) -> Result<bool> {
        claim::operation_work_exists(self, params).await
    }

    async fn worker_beat(&self, params: WorkerBeatParams) -> Result<()> {
        workers::worker_beat(self, params).await
    }

    async fn worker_remove(&self, params: WorkerRemoveParams) -> Result<bool> {
        workers::worker_remove(self, params).await
    }
}

#[async_trait]
impl MaintenanceStore for SqliteStore {
    async fn operation_wake_due(&self, params: WakeDueParams) -> Result<Vec<OperationId>> {
        wake::operation_wake_due(self, params).await
    }

    async fn operation_lease_expired_list(
        &self,
        params: LeaseExpiredListParams,
    ) -> Result<Vec<Claimed>> {
        rescue::operation_lease_expired_list(self, params).await
    }

    async fn operation_rescue_many(&self, params: RescueManyParams) -> Result<Vec<CompleteResult>> {
        complete::operation_rescue_many(self, params).await
    }

    async fn operation_end_past_deadline(&self, params: EndPastDeadlineParams) -> Result<u64> {
        rescue::operation_end_past_deadline(self, params).await
    }

    async fn operation_reconcile_due(&self, params: ReconcileDueParams) -> Result<Vec<Operation>> {
        reconcile::operation_reconcile_due(self, params).await
    }

    async fn operation_reconcile_resolve(&self, params: ReconcileResolveParams) -> Result<Status> {
        reconcile::operation_reconcile_resolve(self, params).await
    }

    async fn operation_dead_unalerted(
        &self,
        params: DeadUnalertedParams,
    ) -> Result<Vec<Operation>> {
        alerts::operation_dead_unalerted(self, params).await
    }

    async fn operation_mark_alerted(&self, params: MarkAlertedParams) -> Result<()> {
        alerts::operation_mark_alerted(self, params).await
    }
}

#[async_trait]
impl OperatorStore for SqliteStore {
    async fn control_set(&self, params: ControlSetParams) -> Result<Control> {
        controls::control_set(self, params).await
    }

    async fn control_remove(&self, params: ControlRemoveParams) -> Result<bool> {
        controls::control_remove(self, params).await
    }

    async fn control_list(&self) -> Result<Vec<Control>> {
        controls::control_list(self).await
    }

    async fn operation_count_matching(
        &self,
        params: CountMatchingParams,
    ) -> Result<BTreeMap<Status, u64>> {
        filter::operation_count_matching(self, params).await
    }

    async fn redrive_preview(&self, params: RedrivePreviewParams) -> Result<RedrivePreview> {
        redrive::redrive_preview(self, params).await
    }

    async fn operation_redrive(&self, params: RedriveParams) -> Result<Vec<Redriven>> {
        redrive::operation_redrive(self, params).await
    }

    async fn operation_quarantine(&self, params: QuarantineParams) -> Result<u64> {
        quarantine::operation_quarantine(self, params).await
    }

    async fn operation_release(&self, params: ReleaseParams) -> Result<u64> {
        quarantine::operation_release(self, params).await
    }

    async fn operation_cancel(&self, params: CancelParams) -> Result<Vec<OperationId>> {
        cancel::operation_cancel(self, params).await
    }

    async fn stats(&self) -> Result<StatsReport> {
        stats::stats(self).await
    }

    async fn activity_per_minute(&self, params: ActivityParams) -> Result<Vec<ActivityMinute>> {
        stats::activity_per_minute(self, params).await
    }

    async fn audit_insert(&self, entry: AuditEntry) -> Result<()> {
        audit::audit_insert(self, entry).await
    }

    async fn audit_list(&self, params: AuditListParams) -> Result<Vec<AuditRecord>> {
        audit::audit_list(self, params).await
    }

    async fn worker_list(&self, params: WorkerListParams) -> Result<Vec<WorkerRecord>> {
        workers::worker_list(self, params).await
    }

    async fn operation_unhandled(&self, params: WorkerListParams) -> Result<Vec<UnhandledKind>> {
        workers::operation_unhandled(self, params).await
    }
}
