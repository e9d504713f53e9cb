//! Restoring hand-made archive files into SQLite: a keep note skips the record before it, not a
//! later archive of the same operation appended to the file.

use chrono::TimeZone;
use oprec_core::archive::{ArchivedOperation, Bookkeeping};
use oprec_core::prelude::*;
use oprec_core::store::OperationGetParams;
use oprec_core::{Operation, OperationId, Status, TerminalReason};
use oprec_ops::Who;
use oprec_ops::archive_line::{kept_line, record_line};
use oprec_sqlite::SqliteStore;
use serde_json::json;

fn record(id: OperationId, attempt: u32) -> ArchivedOperation {
    let t = chrono::Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
    ArchivedOperation {
        operation: Operation {
            id,
            kind: "k".into(),
            idempotency_key: None,
            payload: json!({"n": 1}),
            payload_mode: None,
            status: Status::Dead,
            attempt,
            max_attempts: None,
            next_eligible_at: t,
            give_up_at: None,
            lease_until: None,
            claim_token: None,
            claimed_at: None,
            worker_id: None,
            last_failure_class: None,
            last_error: None,
            remote_id: None,
            dependency: None,
            terminal_reason: Some(TerminalReason::Operator),
            code_version: None,
            enqueue_params: json!({}),
            redrive_of: None,
            redrive_root: None,
            redriven_as: None,
            redrive_count: 0,
            vanished_streak: 0,
            suspect: false,
            isolated: false,
            snoozes: 0,
            unknowns: 0,
            last_woken_at: None,
            created_at: t,
            updated_at: t,
            terminal_at: Some(t),
            traceparent: None,
        },
        bookkeeping: Bookkeeping::default(),
        attempts: vec![],
        steps: vec![],
    }
}

#[tokio::test]
async fn a_keep_note_skips_only_the_record_before_it() {
    let store = SqliteStore::connect("sqlite::memory:").await.unwrap();
    store.migrate().await.unwrap();
    let (x, y) = (OperationId::new(), OperationId::new());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.jsonl");
    // x was kept by the first archive, then archived again (attempt 2) and appended; y was kept
    // and never archived again.
    let text = record_line(&record(x, 1))
        + &record_line(&record(y, 1))
        + &kept_line(x, "changed")
        + &kept_line(y, "changed")
        + &record_line(&record(x, 2));
    std::fs::write(&file, text).unwrap();
    let who = Who::login("--actor").unwrap();
    let report = oprec_ops::restore::restore(&store, &file, false, &who, |_| {})
        .await
        .unwrap();
    assert_eq!(report.restored, 1, "{report:?}");
    assert_eq!(report.skipped_kept, 2);
    assert!(report.clean());
    let got = store
        .operation_get(OperationGetParams { id: x })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.operation.attempt, 2, "the later archive of x");
    assert!(
        store
            .operation_get(OperationGetParams { id: y })
            .await
            .unwrap()
            .is_none()
    );
}
