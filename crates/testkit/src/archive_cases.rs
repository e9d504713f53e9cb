//! The archive conformance cases: reading ended operations with their whole history, removing
//! them fenced by how they were read, and inserting them back as they were, never over anything.

use oprec_core::archive::{
    ArchivedOperation, OperationExportParams, OperationRemoveParams, OperationRestoreParams,
    RestoreOutcome,
};
use oprec_core::operator::{
    ActivityMinute, ActivityParams, OperationFilter, RedriveMode, RedriveParams,
};
use oprec_core::store::{ClaimByIdsParams, CompleteParams, StepSaveParams};
use oprec_core::{
    Clock, EnqueueOptions, Failure, FailureClass, FullStore, OperationError, OperationId, Status,
    TerminalReason, Transition,
};
use serde_json::json;

use crate::Harness;
use crate::operator_cases::{dead_ops, finish};
use crate::store_cases::enqueue;

/// Every ended operation of `statuses`, one batch.
async fn export<S: FullStore>(h: &Harness<S>, statuses: &[Status]) -> Vec<ArchivedOperation> {
    h.store
        .operation_export(OperationExportParams {
            filter: OperationFilter::default(),
            statuses: statuses.to_vec(),
            after: None,
            limit: 1000,
        })
        .await
        .unwrap()
}

/// An operation that saved a durable step in its one attempt, then died of a permanent error.
async fn dead_with_step<S: FullStore>(h: &Harness<S>, kind: &str) -> OperationId {
    let id = enqueue(h, kind, EnqueueOptions::default()).await;
    let c = h
        .store
        .operation_claim_by_ids(ClaimByIdsParams {
            ids: vec![id],
            kinds: vec![],
            claimant: h.claimant("w"),
        })
        .await
        .unwrap()
        .remove(0);
    let token = c.claim_token.unwrap();
    h.store
        .operation_step_save(StepSaveParams {
            id,
            claim_token: token,
            name: "reserve".into(),
            output: json!({"seat": 12, "price": 9.5}),
        })
        .await
        .unwrap();
    h.advance_secs(1);
    h.store
        .operation_complete(CompleteParams {
            id,
            claim_token: token,
            transition: Transition::dead(
                TerminalReason::Permanent,
                Some(Failure::new(
                    FailureClass::Permanent,
                    OperationError::new("card declined"),
                )),
            ),
        })
        .await
        .unwrap();
    id
}

/// Export takes only ended operations of the statuses asked, in id order, with attempts and
/// steps; a non-terminal status asked for takes nothing; `after` pages.
pub async fn export_takes_ended_operations_with_their_history<S: FullStore>(h: Harness<S>) {
    let stepped = dead_with_step(&h, "k").await;
    let dead = dead_ops(&h, "k", 3, FailureClass::Transient, "503").await;
    let done = enqueue(&h, "k", EnqueueOptions::default()).await;
    finish(&h, done, Transition::succeeded(None)).await;
    let pending = enqueue(&h, "k", EnqueueOptions::default()).await;

    let got = export(&h, &[Status::Dead]).await;
    let ids: Vec<OperationId> = got.iter().map(|r| r.operation.id).collect();
    let mut want = vec![stepped];
    want.extend(&dead);
    want.sort();
    assert_eq!(ids, want, "the dead ones, in id order");
    let s = got.iter().find(|r| r.operation.id == stepped).unwrap();
    assert_eq!(s.attempts.len(), 1);
    assert_eq!(s.steps.len(), 1);
    assert_eq!(s.steps[0].output, json!({"seat": 12, "price": 9.5}));
    assert_eq!(s.operation, h.get(stepped).await.operation);
    assert_eq!(s.attempts, h.get(stepped).await.attempts);

    assert!(
        export(&h, &[Status::Pending, Status::Running])
            .await
            .is_empty(),
        "a pending or running operation is never read for removal"
    );
    let both = export(&h, &[Status::Dead, Status::Succeeded]).await;
    assert_eq!(both.len(), 5);
    assert!(both.iter().all(|r| r.operation.id != pending));

    let page = h
        .store
        .operation_export(OperationExportParams {
            filter: OperationFilter::default(),
            statuses: vec![Status::Dead],
            after: Some(want[1]),
            limit: 1,
        })
        .await
        .unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].operation.id, want[2]);
}

/// The attempts (and failed ones) per minute of the last day.
async fn activity<S: FullStore>(h: &Harness<S>) -> Vec<(chrono::DateTime<chrono::Utc>, u64, u64)> {
    h.store
        .activity_per_minute(ActivityParams {
            since: h.clock.now() - chrono::Duration::days(1),
        })
        .await
        .expect("activity")
        .iter()
        .map(|m: &ActivityMinute| (m.minute, m.attempts, m.failed))
        .collect()
}

/// Removal takes exactly the fenced operations that did not change (with their attempts and
/// steps); one re-driven between the read and the removal stays, and so does one that another
/// operation re-drives. A restore gives back the same records; a second restore finds them.
pub async fn remove_is_fenced_and_restore_gives_back_the_same_record<S: FullStore>(h: Harness<S>) {
    let stepped = dead_with_step(&h, "k").await;
    let dead = dead_ops(&h, "k", 3, FailureClass::Transient, "503").await;
    let parent = dead_ops(&h, "p", 1, FailureClass::Transient, "503").await[0];
    h.store
        .operation_redrive(RedriveParams {
            filter: OperationFilter {
                ids: vec![parent],
                ..OperationFilter::default()
            },
            include_cancelled: false,
            mode: RedriveMode::AsNew { deadline: None },
            limit: 10,
            start_at: h.clock.now(),
            spacing: chrono::Duration::zero(),
            skip_held_back: false,
        })
        .await
        .unwrap();
    let read = export(&h, &[Status::Dead]).await;
    assert_eq!(read.len(), 5);
    let history = activity(&h).await;
    assert!(history.iter().map(|m| m.1).sum::<u64>() >= 5);

    // Re-driven between the read and the removal.
    h.advance_secs(1);
    let redriven = h
        .store
        .operation_redrive(RedriveParams {
            filter: OperationFilter {
                ids: vec![dead[0]],
                ..OperationFilter::default()
            },
            include_cancelled: false,
            mode: RedriveMode::InPlace {
                extend_deadline: None,
            },
            limit: 10,
            start_at: h.clock.now(),
            spacing: chrono::Duration::zero(),
            skip_held_back: false,
        })
        .await
        .unwrap();
    assert_eq!(redriven.len(), 1);

    let mut removed = h
        .store
        .operation_remove(OperationRemoveParams {
            fences: read.iter().map(ArchivedOperation::fence).collect(),
        })
        .await
        .unwrap();
    removed.sort();
    let mut want = vec![stepped, dead[1], dead[2]];
    want.sort();
    assert_eq!(
        removed, want,
        "the re-driven one and the parent of a re-drive stay"
    );
    assert_eq!(h.get(dead[0]).await.operation.status, Status::Pending);
    assert_eq!(h.get(parent).await.operation.status, Status::Dead);
    for id in &want {
        assert!(
            h.store
                .operation_get(oprec_core::store::OperationGetParams { id: *id })
                .await
                .unwrap()
                .is_none()
        );
    }
    assert!(
        h.store
            .operation_remove(OperationRemoveParams {
                fences: read.iter().map(ArchivedOperation::fence).collect(),
            })
            .await
            .unwrap()
            .is_empty(),
        "removing again removes nothing"
    );

    let gone: Vec<ArchivedOperation> = read
        .iter()
        .filter(|r| want.contains(&r.operation.id))
        .cloned()
        .collect();
    let out = h
        .store
        .operation_restore(OperationRestoreParams {
            records: gone.clone(),
        })
        .await
        .unwrap();
    assert_eq!(out, vec![RestoreOutcome::Restored; 3]);
    let back: Vec<ArchivedOperation> = export(&h, &[Status::Dead])
        .await
        .into_iter()
        .filter(|r| want.contains(&r.operation.id))
        .collect();
    assert_eq!(back, gone, "the same rows, attempts, steps and bookkeeping");
    assert_eq!(
        activity(&h).await,
        history,
        "attempts are counted once per minute: kept when removed, not counted again when restored"
    );
    let again = h
        .store
        .operation_restore(OperationRestoreParams { records: gone })
        .await
        .unwrap();
    assert_eq!(again, vec![RestoreOutcome::Exists; 3]);
}

/// A restore never writes over anything: a taken idempotency key and a missing parent write
/// nothing for that record, and the records after it are still restored.
pub async fn restore_refuses_taken_keys_and_missing_parents<S: FullStore>(h: Harness<S>) {
    let keyed = enqueue(
        &h,
        "k",
        EnqueueOptions {
            idempotency_key: Some("order-1".into()),
            ..EnqueueOptions::default()
        },
    )
    .await;
    finish(&h, keyed, Transition::succeeded(None)).await;
    let plain = dead_ops(&h, "k", 1, FailureClass::Transient, "503").await[0];
    let read = export(&h, &[Status::Dead, Status::Succeeded]).await;
    let removed = h
        .store
        .operation_remove(OperationRemoveParams {
            fences: read.iter().map(ArchivedOperation::fence).collect(),
        })
        .await
        .unwrap();
    assert_eq!(removed.len(), 2);
    // The key is enqueued again meanwhile: a new operation holds it.
    let retaken = enqueue(
        &h,
        "k",
        EnqueueOptions {
            idempotency_key: Some("order-1".into()),
            ..EnqueueOptions::default()
        },
    )
    .await;
    assert_ne!(retaken, keyed);
    let mut orphan = read
        .iter()
        .find(|r| r.operation.id == plain)
        .unwrap()
        .clone();
    orphan.operation.id = OperationId::new();
    orphan.operation.redrive_of = Some(OperationId::new());
    let records: Vec<ArchivedOperation> = [
        read.iter()
            .find(|r| r.operation.id == keyed)
            .unwrap()
            .clone(),
        orphan,
        read.iter()
            .find(|r| r.operation.id == plain)
            .unwrap()
            .clone(),
    ]
    .into();
    let out = h
        .store
        .operation_restore(OperationRestoreParams { records })
        .await
        .unwrap();
    assert_eq!(
        out,
        vec![
            RestoreOutcome::KeyTaken,
            RestoreOutcome::ParentMissing,
            RestoreOutcome::Restored
        ]
    );
    assert_eq!(h.get(plain).await.operation.status, Status::Dead);
    assert!(
        h.store
            .operation_get(oprec_core::store::OperationGetParams { id: keyed })
            .await
            .unwrap()
            .is_none()
    );
}

/// A re-drive's parent and child: the parent stays while its child is in the store (so the lineage
/// never points at nothing), leaves once the child has; restored in one batch with the child
/// first, both come back, the child after its parent.
pub async fn lineage_is_kept_through_archive_and_restore<S: FullStore>(h: Harness<S>) {
    let parent = dead_ops(&h, "p", 1, FailureClass::Transient, "503").await[0];
    let child = h
        .store
        .operation_redrive(RedriveParams {
            filter: OperationFilter {
                ids: vec![parent],
                ..OperationFilter::default()
            },
            include_cancelled: false,
            mode: RedriveMode::AsNew { deadline: None },
            limit: 10,
            start_at: h.clock.now(),
            spacing: chrono::Duration::zero(),
            skip_held_back: false,
        })
        .await
        .unwrap()[0]
        .to;
    finish(
        &h,
        child,
        Transition::dead(
            TerminalReason::Permanent,
            Some(Failure::new(
                FailureClass::Permanent,
                OperationError::new("still declined"),
            )),
        ),
    )
    .await;
    let both = export(&h, &[Status::Dead]).await;
    assert_eq!(both.len(), 2);
    let fences = |r: &[ArchivedOperation]| OperationRemoveParams {
        fences: r.iter().map(ArchivedOperation::fence).collect(),
    };
    let first = h.store.operation_remove(fences(&both)).await.unwrap();
    assert_eq!(
        first,
        vec![child],
        "the parent stays while its child is there"
    );
    let second = h.store.operation_remove(fences(&both)).await.unwrap();
    assert_eq!(second, vec![parent]);
    let mut records = both.clone();
    records.sort_by_key(|r| r.operation.redrive_of.is_none());
    assert_eq!(records[0].operation.id, child, "the child first");
    let out = h
        .store
        .operation_restore(OperationRestoreParams { records })
        .await
        .unwrap();
    assert_eq!(out, vec![RestoreOutcome::Restored; 2]);
    assert_eq!(h.get(child).await.operation.redrive_of, Some(parent));
    let mut back = export(&h, &[Status::Dead]).await;
    back.sort_by_key(|r| r.operation.id);
    let mut want = both;
    want.sort_by_key(|r| r.operation.id);
    assert_eq!(back, want);
}

/// Expands into one `#[tokio::test]` per archive case.
#[macro_export]
macro_rules! archive_conformance_tests {
    ($setup:path) => {
        mod archive {
            use super::*;
            $crate::archive_conformance_tests!(@case $setup; export_takes_ended_operations_with_their_history);
            $crate::archive_conformance_tests!(@case $setup; remove_is_fenced_and_restore_gives_back_the_same_record);
            $crate::archive_conformance_tests!(@case $setup; restore_refuses_taken_keys_and_missing_parents);
            $crate::archive_conformance_tests!(@case $setup; lineage_is_kept_through_archive_and_restore);
        }
    };
    (@case $setup:path; $case:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $case() {
            let harness = $setup().await;
            $crate::archive_cases::$case(harness).await;
        }
    };
}
