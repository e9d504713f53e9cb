//! How the store reports a database it cannot read, and what it reads from rows older than a
//! column: one without the oprec tables is `Error::SchemaMissing` (callers tell the operator to
//! migrate instead of matching error text), a stored value that does not fit its core type is an
//! error, never clamped, and an operation enqueued before migration 0004 has no payload mode.

use std::sync::Arc;

use chrono::Duration;
use oprec_core::operator::{
    AuditListParams, OperationFilter, RedriveMode, RedriveParams, RedrivePreviewParams,
};
use oprec_core::store::{ClaimEligibleParams, OperationGetParams};
use oprec_core::{
    EnqueueOptions, Error, Failure, ManualClock, OperationError, OperatorStore, PayloadMode,
    Status, Store, TerminalReason, Transition, WorkerStore,
};
use oprec_sqlite::{MIGRATOR, SqliteStore};
use oprec_testkit::operator_cases::finish;
use oprec_testkit::store_cases::enqueue;
use oprec_testkit::{Harness, start_time};

/// A store on a new file that has not been migrated, and the directory that keeps the file.
async fn unmigrated() -> (Harness<SqliteStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("oprec.db").display());
    let clock = Arc::new(ManualClock::new(start_time()));
    let store = SqliteStore::connect(&url)
        .await
        .expect("open")
        .with_clock(clock.clone());
    (Harness::new(store, clock), dir)
}

#[tokio::test]
async fn a_database_without_the_tables_is_schema_missing() {
    let (h, _dir) = unmigrated().await;
    let err = h.store.operation_count().await.unwrap_err();
    assert!(
        matches!(&err, Error::SchemaMissing { detail } if detail.contains("operation_counts")),
        "{err:?}"
    );
    assert!(
        !err.is_transient(),
        "migrating, not retrying, is the remedy"
    );
    assert!(err.to_string().contains("oprec migrate"), "{err}");
    let claim = h
        .store
        .operation_claim_eligible(ClaimEligibleParams {
            above_default_only: false,
            kinds: vec![],
            limit: 1,
            claimant: h.claimant("w"),
        })
        .await;
    assert!(
        matches!(claim, Err(Error::SchemaMissing { .. })),
        "{claim:?}"
    );
    h.store.migrate().await.expect("migrate");
    assert!(h.store.operation_count().await.expect("count").is_empty());
}

#[tokio::test]
async fn a_stored_count_out_of_range_is_an_error_not_clamped() {
    let (h, _dir) = unmigrated().await;
    h.store.migrate().await.expect("migrate");
    let id = enqueue(&h, "k", EnqueueOptions::default()).await;
    // Only a hand-edited row can hold these: SQLite keeps 64-bit integers, and the schema's
    // CHECKs refuse a negative attempt but not one past u32.
    for statement in [
        "UPDATE operations SET attempt = 4294967296",
        "INSERT INTO audit_log (at, actor, action, affected)
         VALUES ('2026-01-05T09:00:00.000000Z', 'x', 'y', -1)",
    ] {
        sqlx::query(statement)
            .execute(h.store.pool())
            .await
            .expect(statement);
    }
    let err = h
        .store
        .operation_get(OperationGetParams { id })
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("unreadable stored attempt"),
        "{err}"
    );
    let err = h
        .store
        .audit_list(AuditListParams {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("unreadable stored affected"),
        "{err}"
    );
}

#[tokio::test]
async fn operations_from_before_payload_mode_have_none_and_keep_it() {
    let (h, _dir) = unmigrated().await;
    MIGRATOR
        .run_to(3, h.store.pool())
        .await
        .expect("migrate to 0003");
    let old = enqueue_by_hand(&h).await;
    h.store.migrate().await.expect("migrate");
    let new = enqueue(&h, "k", EnqueueOptions::default()).await;
    let mode = |id| {
        let store = &h.store;
        async move {
            let got = store.operation_get(OperationGetParams { id }).await;
            got.unwrap().unwrap().operation.payload_mode
        }
    };
    assert_eq!(mode(old).await, None);
    assert_eq!(mode(new).await, Some(PayloadMode::Snapshot));
    for id in [old, new] {
        let dead = Transition::dead(
            TerminalReason::Permanent,
            Some(Failure::permanent(OperationError::new("bad"))),
        );
        finish(&h, id, dead).await;
    }
    let preview = h
        .store
        .redrive_preview(RedrivePreviewParams {
            filter: OperationFilter::default(),
            include_cancelled: false,
            samples: 0,
        })
        .await
        .unwrap();
    let mut modes: Vec<_> = preview.groups.iter().map(|g| g.payload_mode).collect();
    modes.sort();
    assert_eq!(modes, vec![None, Some(PayloadMode::Snapshot)]);
    let out = h
        .store
        .operation_redrive(RedriveParams {
            filter: OperationFilter::default(),
            include_cancelled: false,
            mode: RedriveMode::AsNew { deadline: None },
            limit: 10,
            start_at: h.store.now().await.unwrap(),
            spacing: Duration::zero(),
            skip_held_back: false,
        })
        .await
        .unwrap();
    assert_eq!(out.len(), 2);
    for r in out {
        assert_eq!(mode(r.to).await, mode(r.from).await, "copied as it was");
    }
}

/// An operation written as an enqueue before migration 0004 wrote it.
async fn enqueue_by_hand(h: &Harness<SqliteStore>) -> oprec_core::OperationId {
    let id = oprec_core::OperationId::new();
    sqlx::query(
        "INSERT INTO operations (id, kind, payload, next_eligible_at, created_at, updated_at)
         VALUES (?1, 'k', '{}', ?2, ?2, ?2)",
    )
    .bind(id.to_string())
    .bind("2026-01-05T09:00:00.000000Z")
    .execute(h.store.pool())
    .await
    .expect("insert as before 0004");
    id
}

/// A dead operation inserted by hand, re-driven from `of` when given.
async fn dead_by_hand(h: &Harness<SqliteStore>, of: Option<&str>) -> String {
    let id = oprec_core::OperationId::new().to_string();
    sqlx::query(
        "INSERT INTO operations (id, kind, payload, status, next_eligible_at, created_at, \
         updated_at, terminal_at, terminal_reason, redrive_of)
         VALUES (?1, 'k', '{}', 'dead', ?2, ?2, ?2, ?2, 'permanent', ?3)",
    )
    .bind(&id)
    .bind("2026-01-05T09:00:00.000000Z")
    .bind(of)
    .execute(h.store.pool())
    .await
    .expect("insert a dead operation");
    id
}

/// Migration 0016 on a table that already holds re-driven originals: each is marked with its
/// first copy, and the rebuilt counts hold it apart from the dead awaiting action.
#[tokio::test]
async fn originals_with_a_copy_are_marked_and_counted_apart_by_0016() {
    let (h, _dir) = unmigrated().await;
    MIGRATOR
        .run_to(15, h.store.pool())
        .await
        .expect("migrate to 0015");
    let original = dead_by_hand(&h, None).await;
    let copy = dead_by_hand(&h, Some(&original)).await;
    let lone = dead_by_hand(&h, None).await;
    h.store.migrate().await.expect("migrate");
    let marked = |id: String| {
        let store = &h.store;
        async move {
            let id = id.parse().expect("id");
            let got = store.operation_get(OperationGetParams { id }).await;
            got.unwrap().unwrap().operation.redriven_as
        }
    };
    assert_eq!(marked(original).await, Some(copy.parse().unwrap()));
    assert_eq!(marked(copy).await, None);
    assert_eq!(marked(lone).await, None);
    let stats = h.store.stats().await.expect("stats");
    assert_eq!(stats.by_status.get(&Status::Dead), Some(&2));
    assert_eq!(stats.dead_by_kind.get("k"), Some(&2));
    assert_eq!(stats.dead_redriven_by_kind.get("k"), Some(&1));
}
