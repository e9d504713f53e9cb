//! What the operator conformance cases do not look at but the SQLite store must get right: filter
//! lists and alert batches longer than one statement's bind parameters, every field an in-place
//! re-drive resets (columns the `Operation` type does not carry included), the `last_error` that
//! quarantine writes, and pauses that neither use up a claim's limit nor outlast their `until`.

use std::sync::Arc;

use chrono::Duration;
use oprec_core::maintenance::{
    AlertClaimParams, MarkAlertedParams, ReconcileDueParams, WakeDueParams,
};
use oprec_core::operator::{
    ControlAction, ControlScope, ControlSetParams, OperationFilter, QuarantineParams, RedriveMode,
    RedriveParams, RedrivePreviewParams, ReleaseParams, Resolution,
};
use oprec_core::store::{ClaimEligibleParams, CompleteParams, CompleteResult, MarkWokenParams};
use oprec_core::{
    Clock, Ending, EnqueueOptions, EnqueueStore, Failure, FailureClass, MaintenanceStore,
    ManualClock, NewOperation, OperationError, OperationId, OperatorStore, Status, Store,
    TerminalReason, Transition, WorkerStore,
};
use oprec_sqlite::SqliteStore;
use oprec_testkit::operator_cases::{dead_ops, finish};
use oprec_testkit::store_cases::{enqueue, plain_policy};
use oprec_testkit::{Harness, start_time};
use serde_json::json;

/// A harness over a migrated store on a new file, and the directory that keeps the file.
async fn fresh() -> (Harness<SqliteStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("oprec.db").display());
    let clock = Arc::new(ManualClock::new(start_time()));
    let store = SqliteStore::connect(&url)
        .await
        .expect("open")
        .with_clock(clock.clone());
    store.migrate().await.expect("migrate");
    (Harness::new(store, clock), dir)
}

/// `reconcile_attempts` and whether `alerted_at` is set, which only SQL can see.
async fn hidden_columns(h: &Harness<SqliteStore>, id: OperationId) -> (i64, bool) {
    sqlx::query_as("SELECT reconcile_attempts, alerted_at IS NOT NULL FROM operations WHERE id = ?")
        .bind(id.to_string())
        .fetch_one(h.store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn filters_and_alert_batches_longer_than_the_bind_limit_are_whole() {
    let (h, _dir) = fresh().await;
    const N: usize = 1_234;
    let ops: Vec<NewOperation> = (0..N)
        .map(|_| {
            NewOperation::new(
                "bulk",
                json!({}),
                &plain_policy(),
                EnqueueOptions::default(),
                h.clock.now(),
            )
            .unwrap()
        })
        .collect();
    h.store.operation_insert_many(ops).await.unwrap();
    let claimed = h
        .store
        .operation_claim_eligible(ClaimEligibleParams {
            above_default_only: false,
            kinds: vec![],
            limit: 5_000,
            claimant: h.claimant("w"),
        })
        .await
        .unwrap();
    let ends = claimed
        .iter()
        .map(|c| CompleteParams {
            id: c.id,
            claim_token: c.claim_token(),
            transition: Transition::dead(
                TerminalReason::Permanent,
                Some(Failure::permanent(OperationError::new("bad"))),
            ),
        })
        .collect();
    let results = h.store.operation_complete_many(ends).await.unwrap();
    assert!(results.iter().all(|r| *r == CompleteResult::Applied));
    let ids: Vec<OperationId> = claimed.iter().map(|c| c.id).collect();
    assert_eq!(
        h.store
            .operation_alert_claim(AlertClaimParams {
                limit: 5_000,
                lease: chrono::Duration::seconds(60),
            })
            .await
            .unwrap()
            .len(),
        N
    );

    // Far more ids than SQLite takes bind parameters (32,766), most of them unknown.
    let mut long = ids.clone();
    long.extend((0..40_000).map(|_| OperationId::new()));
    h.store
        .operation_mark_alerted(MarkAlertedParams { ids: long.clone() })
        .await
        .unwrap();
    // Past the claims' lease, nothing is due: every one was recorded as announced.
    h.advance_secs(61);
    assert!(
        h.store
            .operation_alert_claim(AlertClaimParams {
                limit: 10,
                lease: chrono::Duration::seconds(60),
            })
            .await
            .unwrap()
            .is_empty()
    );

    let filter = OperationFilter {
        ids: long,
        ..Default::default()
    };
    let preview = h
        .store
        .redrive_preview(RedrivePreviewParams {
            filter: filter.clone(),
            include_cancelled: false,
            samples: 3,
        })
        .await
        .unwrap();
    assert_eq!((preview.matched, preview.not_terminal), (N as u64, 0));
    assert_eq!(preview.samples.len(), 3);
    let start = h.clock.now();
    let out = h
        .store
        .operation_redrive(RedriveParams {
            filter: filter.clone(),
            include_cancelled: false,
            mode: RedriveMode::InPlace {
                extend_deadline: None,
            },
            limit: 5_000,
            start_at: start,
            spacing: Duration::milliseconds(1),
            skip_held_back: false,
        })
        .await
        .unwrap();
    assert_eq!(out.len(), N);
    let offsets: Vec<i64> = out
        .iter()
        .map(|r| (r.next_eligible_at - start).num_milliseconds())
        .collect();
    assert_eq!(offsets, (0..N as i64).collect::<Vec<_>>());
    assert_eq!(
        hidden_columns(&h, ids[N - 1]).await,
        (0, false),
        "alert reset"
    );

    let quarantine = QuarantineParams {
        filter: filter.clone(),
        reason: "r".into(),
        actor: "a".into(),
        limit: 5_000,
    };
    assert_eq!(
        h.store.operation_quarantine(quarantine).await.unwrap(),
        N as u64
    );
    let release = ReleaseParams {
        filter,
        limit: 5_000,
    };
    assert_eq!(h.store.operation_release(release).await.unwrap(), N as u64);
}

#[tokio::test]
async fn in_place_redrive_resets_every_field_the_postgres_store_resets() {
    let (h, _dir) = fresh().await;
    // One attempt allowed, an unknown outcome, one reconcile try, then "not applied": dead, its
    // attempts spent.
    let deadline = h.clock.now() + Duration::hours(1);
    let spent = enqueue(
        &h,
        "pay",
        EnqueueOptions {
            max_attempts: Some(1),
            deadline: Some(deadline),
            ..Default::default()
        },
    )
    .await;
    finish(
        &h,
        spent,
        Transition::reconcile(Failure::unknown("timeout")),
    )
    .await;
    let due = h
        .store
        .operation_reconcile_due(ReconcileDueParams {
            kinds: vec![],
            limit: 10,
            lease: Duration::seconds(60),
        })
        .await
        .unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(hidden_columns(&h, spent).await, (1, false));
    let status = oprec_testkit::resolve(&h.store, spent, Resolution::NotApplied, "bob")
        .await
        .unwrap();
    assert_eq!(status, Status::Dead);
    let o = h.get(spent).await.operation;
    assert_eq!(o.terminal_reason, Some(TerminalReason::AttemptsExhausted));
    assert_eq!(
        o.last_error.unwrap().decision.as_deref(),
        Some("reconciled by bob: the effect was not applied, and the attempts are used up")
    );
    // A second dead operation whose deadline is later than the re-drive's start.
    let kept_deadline = Some(deadline + Duration::hours(1));
    let kept = enqueue(
        &h,
        "pay",
        EnqueueOptions {
            deadline: kept_deadline,
            ..Default::default()
        },
    )
    .await;
    finish(
        &h,
        kept,
        Transition::dead(
            TerminalReason::AttemptsExhausted,
            Some(Failure::transient("503")),
        ),
    )
    .await;
    h.store
        .operation_mark_alerted(MarkAlertedParams { ids: vec![spent] })
        .await
        .unwrap();
    h.store
        .operation_mark_woken(MarkWokenParams { ids: vec![spent] })
        .await
        .unwrap();
    assert_eq!(hidden_columns(&h, spent).await, (1, true));

    // Eligible again only after the first one's deadline: that deadline is cleared.
    let start = deadline + Duration::seconds(1);
    let out = h
        .store
        .operation_redrive(RedriveParams {
            filter: OperationFilter::default(),
            include_cancelled: false,
            mode: RedriveMode::InPlace {
                extend_deadline: None,
            },
            limit: 10,
            start_at: start,
            spacing: Duration::zero(),
            skip_held_back: false,
        })
        .await
        .unwrap();
    assert_eq!(out.len(), 2);
    let o = h.get(spent).await.operation;
    assert_eq!(
        (o.status, o.attempt, o.redrive_count, o.vanished_streak),
        (Status::Pending, 0, 1, 0)
    );
    assert_eq!(o.next_eligible_at, start);
    assert_eq!(
        o.give_up_at, None,
        "a deadline before the new start is cleared"
    );
    assert!(o.terminal_reason.is_none() && o.terminal_at.is_none());
    assert!(o.claim_token.is_none() && o.lease_until.is_none() && o.last_woken_at.is_none());
    assert_eq!(o.last_failure_class, Some(FailureClass::Unknown), "kept");
    assert_eq!(o.last_error.unwrap().summary, "timeout", "kept");
    assert_eq!(hidden_columns(&h, spent).await, (0, false));
    let kept = h.get(kept).await.operation;
    assert!(kept_deadline.is_some_and(|d| d > start));
    assert_eq!(kept.give_up_at, kept_deadline, "a later deadline stays");
}

#[tokio::test]
async fn quarantine_keeps_the_summary_and_says_who_and_why() {
    let (h, _dir) = fresh().await;
    let fresh_op = enqueue(&h, "k", EnqueueOptions::default()).await;
    let failed = enqueue(&h, "k", EnqueueOptions::default()).await;
    let before = OperationError::new("503 from provider")
        .field("amount")
        .decision("retry")
        .next_action("none: retried automatically");
    let failure = Failure::new(FailureClass::Transient, before.clone());
    finish(&h, failed, Transition::retry(h.clock.now(), failure)).await;
    let n = h
        .store
        .operation_quarantine(QuarantineParams {
            filter: OperationFilter::default(),
            reason: "importer v2 sends bad rows".into(),
            actor: "alice".into(),
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(n, 2);
    // Core's words, by core's rule: the summary and the field kept, decision and next action new.
    let patch = Ending::quarantined("alice", "importer v2 sends bad rows").patch;
    for (id, had) in [(fresh_op, None), (failed, Some(&before))] {
        let o = h.get(id).await.operation;
        assert_eq!(o.status, Status::Held);
        assert_eq!(o.last_error, Some(patch.apply(had)));
    }
    assert_eq!(
        h.get(failed)
            .await
            .operation
            .last_error
            .unwrap()
            .decision
            .as_deref(),
        Some("quarantined by alice: importer v2 sends bad rows")
    );
}

#[tokio::test]
async fn paused_rows_use_up_no_limit_and_a_postponement_lapses_at_its_until() {
    let (h, _dir) = fresh().await;
    for _ in 0..3 {
        enqueue(&h, "paused", EnqueueOptions::default()).await;
    }
    let free = enqueue(&h, "free", EnqueueOptions::default()).await;
    let until = h.clock.now() + Duration::seconds(10);
    h.store
        .control_set(ControlSetParams {
            scope: ControlScope::Kind,
            value: "paused".into(),
            action: ControlAction::Postpone,
            until: Some(until),
            reason: None,
            actor: "ops".into(),
        })
        .await
        .unwrap();
    let woken = h
        .store
        .operation_wake_due(WakeDueParams::all(Duration::zero(), 1))
        .await
        .unwrap();
    let woken: Vec<_> = woken.into_iter().map(|w| w.id).collect();
    assert_eq!(woken, vec![free]);
    let claimed = h
        .store
        .operation_claim_eligible(ClaimEligibleParams {
            above_default_only: false,
            kinds: vec![],
            limit: 1,
            claimant: h.claimant("w"),
        })
        .await
        .unwrap();
    assert_eq!(claimed.iter().map(|o| o.id).collect::<Vec<_>>(), vec![free]);
    h.clock.set(until - Duration::microseconds(1));
    assert!(h.claim_all("w").await.is_empty(), "still postponed");
    h.clock.set(until);
    assert!(h.store.control_list().await.unwrap().is_empty());
    assert_eq!(h.claim_all("w").await.len(), 3, "lapsed at its until");
}

#[tokio::test]
async fn error_text_filters_are_literal() {
    let (h, _dir) = fresh().await;
    let underscore = dead_ops(&h, "k", 1, FailureClass::Permanent, "field a_b missing").await;
    dead_ops(&h, "k", 1, FailureClass::Permanent, "field axb missing").await;
    dead_ops(&h, "k", 1, FailureClass::Permanent, "it's \"quoted\"").await;
    let matching = |text: &str| {
        let filter = OperationFilter {
            error_contains: Some(text.into()),
            ..Default::default()
        };
        let store = &h.store;
        async move {
            let p = store
                .redrive_preview(RedrivePreviewParams {
                    filter,
                    include_cancelled: false,
                    samples: 10,
                })
                .await
                .unwrap();
            p.samples.iter().map(|s| s.id).collect::<Vec<_>>()
        }
    };
    assert_eq!(matching("A_B").await, underscore, "_ is literal");
    assert_eq!(matching("it's \"QUOTED\"").await.len(), 1);
    assert!(matching("%").await.is_empty());
    assert_eq!(
        matching("").await.len(),
        3,
        "the empty text is in every summary"
    );
}
