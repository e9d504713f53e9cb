//! The `OperatorStore` implementation: each call in the module named after its concept
//! (controls, redrive, quarantine, reconcile, stats, audit, alerts), with the behaviour of the
//! PostgreSQL store.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use oprec_core::operator::{
    ActivityMinute, AuditEntry, AuditRecord, Control, ControlScope, ControlSetParams,
    OperationFilter, QuarantineParams, ReconcileDueParams, RedriveParams, RedrivePreview, Redriven,
    ReleaseParams, ResolveParams, StatsReport,
};
use oprec_core::{
    Operation, OperationId, OperatorStore, Result, Status, UnhandledKind, WorkerBeatParams,
    WorkerRecord,
};

use crate::SqliteStore;

#[async_trait]
impl OperatorStore for SqliteStore {
    async fn control_set(&self, params: ControlSetParams) -> Result<Control> {
        self.set_control(params).await
    }

    async fn control_remove(&self, scope: ControlScope, value: &str) -> Result<bool> {
        self.remove_control(scope, value).await
    }

    async fn control_list(&self) -> Result<Vec<Control>> {
        self.controls_in_force().await
    }

    async fn operation_count_matching(
        &self,
        filter: &OperationFilter,
    ) -> Result<BTreeMap<Status, u64>> {
        self.count_matching(filter).await
    }

    async fn redrive_preview(
        &self,
        filter: &OperationFilter,
        include_cancelled: bool,
        samples: u32,
    ) -> Result<RedrivePreview> {
        self.preview_redrive(filter, include_cancelled, samples)
            .await
    }

    async fn operation_redrive(&self, params: RedriveParams) -> Result<Vec<Redriven>> {
        self.redrive(params).await
    }

    async fn operation_quarantine(&self, params: QuarantineParams) -> Result<u64> {
        self.quarantine(params).await
    }

    async fn operation_release(&self, params: ReleaseParams) -> Result<u64> {
        self.release(params).await
    }

    async fn operation_reconcile_due(&self, params: ReconcileDueParams) -> Result<Vec<Operation>> {
        self.reconcile_due(params).await
    }

    async fn operation_reconcile_resolve(&self, params: ResolveParams) -> Result<Status> {
        self.reconcile_resolve(params).await
    }

    async fn stats(&self) -> Result<StatsReport> {
        self.figures().await
    }

    async fn activity_per_minute(&self, since: DateTime<Utc>) -> Result<Vec<ActivityMinute>> {
        self.activity(since).await
    }

    async fn audit_insert(&self, entry: AuditEntry) -> Result<()> {
        self.audit_append(entry).await
    }

    async fn audit_list(&self, limit: u32) -> Result<Vec<AuditRecord>> {
        self.audit_newest(limit).await
    }

    async fn operation_dead_unalerted(&self, limit: u32) -> Result<Vec<Operation>> {
        self.dead_unalerted(limit).await
    }

    async fn operation_mark_alerted(&self, ids: Vec<OperationId>) -> Result<()> {
        self.mark_alerted(ids).await
    }

    async fn worker_beat(&self, params: WorkerBeatParams) -> Result<()> {
        self.beat(params).await
    }

    async fn worker_remove(&self, id: &str) -> Result<bool> {
        self.remove_worker(id).await
    }

    async fn worker_list(&self, seen_within: Duration) -> Result<Vec<WorkerRecord>> {
        self.live_workers(seen_within).await
    }

    async fn operation_unhandled(&self, seen_within: Duration) -> Result<Vec<UnhandledKind>> {
        self.unhandled(seen_within).await
    }
}
