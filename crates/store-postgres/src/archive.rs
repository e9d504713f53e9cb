//! Archive ([`OperatorStore`](oprec_core::OperatorStore)): reading terminal operations with their
//! whole history, removing them once they are safely written elsewhere (fenced, so that one
//! changed meanwhile stays), and inserting them back, never over anything.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use oprec_core::archive::{
    ArchivedOperation, Bookkeeping, OperationExportParams, OperationRemoveParams,
    OperationRestoreParams, RestoreOutcome,
};
use oprec_core::store::Step;
use oprec_core::{Attempt, OperationId, Result, Status};
use uuid::Uuid;

use crate::row::{self, Columns};
use crate::{PgStore, backend_error, filter, sql};

/// One batch of terminal matches in id order, with their attempts and steps. Walks the primary
/// key from `after`.
pub(crate) async fn operation_export(
    store: &PgStore,
    params: OperationExportParams,
) -> Result<Vec<ArchivedOperation>> {
    let statuses: Vec<&'static str> = params
        .statuses
        .iter()
        .filter(|s| s.is_terminal())
        .map(Status::as_str)
        .collect();
    if statuses.is_empty() || params.limit == 0 {
        return Ok(Vec::new());
    }
    let mut q = filter::archive_pick(&params.filter, statuses, params.after, params.limit);
    // One snapshot: the rows and their histories are of the same moment.
    let mut tx = store.pool.begin().await.map_err(backend_error)?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    let rows = q.build().fetch_all(&mut *tx).await.map_err(backend_error)?;
    let mut out = Vec::with_capacity(rows.len());
    let mut at: HashMap<Uuid, usize> = HashMap::with_capacity(rows.len());
    for r in &rows {
        let c = Columns(r);
        let operation = row::operation(r)?;
        at.insert(*operation.id.as_uuid(), out.len());
        out.push(ArchivedOperation {
            operation,
            bookkeeping: Bookkeeping {
                reconcile_attempts: c.count("reconcile_attempts")?,
                alerted_at: c.get("alerted_at")?,
                alert_due_at: c.get("alert_due_at")?,
                alert_failures: c.count("alert_failures")?,
            },
            attempts: Vec::new(),
            steps: Vec::new(),
        });
    }
    let ids: Vec<Uuid> = at.keys().copied().collect();
    for r in sqlx::query(sql::ARCHIVE_ATTEMPTS)
        .bind(&ids)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?
    {
        let owner: Uuid = Columns(&r).get("operation_id")?;
        if let Some(&i) = at.get(&owner) {
            out[i].attempts.push(row::attempt(&r)?);
        }
    }
    for r in sqlx::query(sql::ARCHIVE_STEPS)
        .bind(&ids)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?
    {
        let c = Columns(&r);
        let owner: Uuid = c.get("operation_id")?;
        if let Some(&i) = at.get(&owner) {
            out[i].steps.push(Step {
                name: c.get("name")?,
                output: c.get("output")?,
                attempt: c.count("attempt")?,
                completed_at: c.get("completed_at")?,
            });
        }
    }
    tx.commit().await.map_err(backend_error)?;
    Ok(out)
}

/// Removes the operations whose fences hold, in one statement; returns their ids.
pub(crate) async fn operation_remove(
    store: &PgStore,
    params: OperationRemoveParams,
) -> Result<Vec<OperationId>> {
    if params.fences.is_empty() {
        return Ok(Vec::new());
    }
    let f = &params.fences;
    let ids: Vec<Uuid> = f.iter().map(|x| *x.id.as_uuid()).collect();
    let statuses: Vec<&str> = f.iter().map(|x| x.status.as_str()).collect();
    let updated: Vec<DateTime<Utc>> = f.iter().map(|x| x.updated_at).collect();
    let attempt: Vec<i32> = f.iter().map(|x| x.attempt as i32).collect();
    let attempts: Vec<i64> = f.iter().map(|x| i64::from(x.attempts)).collect();
    let alerted: Vec<Option<DateTime<Utc>>> = f.iter().map(|x| x.alerted_at).collect();
    let removed: Vec<Uuid> = sqlx::query_scalar(sql::ARCHIVE_REMOVE)
        .bind(ids)
        .bind(statuses)
        .bind(updated)
        .bind(attempt)
        .bind(attempts)
        .bind(alerted)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(removed.into_iter().map(OperationId::from_uuid).collect())
}

/// Inserts the records in one transaction, a statement per table and round (never one per
/// record); a taken id or key, or a missing parent, writes nothing for that record. A record
/// whose parent is another record of the batch waits for the round after its parent's.
pub(crate) async fn operation_restore(
    store: &PgStore,
    params: OperationRestoreParams,
) -> Result<Vec<RestoreOutcome>> {
    let recs = &params.records;
    let mut out: Vec<Option<RestoreOutcome>> = vec![None; recs.len()];
    let mut tx = store.pool.begin().await.map_err(backend_error)?;
    let ids: Vec<Uuid> = recs.iter().map(|r| *r.operation.id.as_uuid()).collect();
    let mut known = present(&mut tx, &ids).await?;
    let mut seen = HashSet::new();
    for (i, id) in ids.iter().enumerate() {
        // An id already in the store, or twice in the batch: nothing is written over.
        if known.contains(id) || !seen.insert(*id) {
            out[i] = Some(RestoreOutcome::Exists);
        }
    }
    let parents: Vec<Uuid> = recs
        .iter()
        .filter_map(|r| r.operation.redrive_of.map(|p| *p.as_uuid()))
        .collect();
    known.extend(present(&mut tx, &parents).await?);
    loop {
        let ready: Vec<usize> = (0..recs.len())
            .filter(|&i| {
                out[i].is_none()
                    && recs[i]
                        .operation
                        .redrive_of
                        .is_none_or(|p| known.contains(p.as_uuid()))
            })
            .collect();
        if ready.is_empty() {
            break;
        }
        let batch: Vec<&ArchivedOperation> = ready.iter().map(|&i| &recs[i]).collect();
        let inserted = insert_operations(&mut tx, &batch).await?;
        for &i in &ready {
            let id = *recs[i].operation.id.as_uuid();
            out[i] = Some(if inserted.contains(&id) {
                known.insert(id);
                RestoreOutcome::Restored
            } else {
                RestoreOutcome::KeyTaken
            });
        }
    }
    let restored: Vec<&ArchivedOperation> = recs
        .iter()
        .zip(&out)
        .filter(|(_, o)| **o == Some(RestoreOutcome::Restored))
        .map(|(r, _)| r)
        .collect();
    insert_attempts(&mut tx, &restored).await?;
    insert_steps(&mut tx, &restored).await?;
    tx.commit().await.map_err(backend_error)?;
    Ok(out
        .into_iter()
        .map(|o| o.unwrap_or(RestoreOutcome::ParentMissing))
        .collect())
}

/// Which of `ids` are in the store.
async fn present(tx: &mut sqlx::PgConnection, ids: &[Uuid]) -> Result<HashSet<Uuid>> {
    if ids.is_empty() {
        return Ok(HashSet::new());
    }
    let found: Vec<Uuid> = sqlx::query_scalar(sql::ARCHIVE_RESTORE_PRESENT)
        .bind(ids)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
    Ok(found.into_iter().collect())
}

/// Inserts the operations' rows; returns the ids inserted.
async fn insert_operations(
    tx: &mut sqlx::PgConnection,
    recs: &[&ArchivedOperation],
) -> Result<HashSet<Uuid>> {
    let errors = recs
        .iter()
        .map(|r| r.operation.last_error.as_ref().map(row::json).transpose())
        .collect::<Result<Vec<_>>>()?;
    let ids: Vec<Uuid> = col(recs, |r| *r.operation.id.as_uuid());
    let inserted: Vec<Uuid> = sqlx::query_scalar(sql::ARCHIVE_RESTORE_OPERATIONS)
        .bind(ids)
        .bind(col(recs, |r| r.operation.kind.clone()))
        .bind(col(recs, |r| r.operation.idempotency_key.clone()))
        .bind(col(recs, |r| r.operation.payload.clone()))
        .bind(col(recs, |r| {
            r.operation.payload_mode.map(|m| m.as_str().to_owned())
        }))
        .bind(col(recs, |r| r.operation.status.as_str().to_owned()))
        .bind(col(recs, |r| r.operation.attempt as i32))
        .bind(col(recs, |r| r.operation.max_attempts.map(|n| n as i32)))
        .bind(col(recs, |r| r.operation.next_eligible_at))
        .bind(col(recs, |r| r.operation.give_up_at))
        .bind(col(recs, |r| r.operation.lease_until))
        .bind(col(recs, |r| r.operation.claim_token))
        .bind(col(recs, |r| r.operation.claimed_at))
        .bind(col(recs, |r| r.operation.worker_id.clone()))
        .bind(col(recs, |r| {
            r.operation
                .last_failure_class
                .map(|c| c.as_str().to_owned())
        }))
        .bind(errors)
        .bind(col(recs, |r| r.operation.remote_id.clone()))
        .bind(col(recs, |r| r.operation.dependency.clone()))
        .bind(col(recs, |r| {
            r.operation.terminal_reason.map(|c| c.as_str().to_owned())
        }))
        .bind(col(recs, |r| r.operation.code_version.clone()))
        .bind(col(recs, |r| r.operation.enqueue_params.clone()))
        .bind(col(recs, |r| r.operation.redrive_of.map(|p| *p.as_uuid())))
        .bind(col(recs, |r| r.operation.redrive_count as i32))
        .bind(col(recs, |r| r.operation.vanished_streak as i32))
        .bind(col(recs, |r| r.operation.last_woken_at))
        .bind(col(recs, |r| r.operation.created_at))
        .bind(col(recs, |r| r.operation.updated_at))
        .bind(col(recs, |r| r.operation.terminal_at))
        .bind(col(recs, |r| r.bookkeeping.reconcile_attempts as i32))
        .bind(col(recs, |r| r.bookkeeping.alerted_at))
        .bind(col(recs, |r| r.bookkeeping.alert_due_at))
        .bind(col(recs, |r| r.bookkeeping.alert_failures as i32))
        .bind(col(recs, |r| {
            r.operation.redrive_root.map(|p| *p.as_uuid())
        }))
        .bind(col(recs, |r| r.operation.suspect))
        .bind(col(recs, |r| r.operation.isolated))
        .bind(col(recs, |r| r.operation.snoozes as i32))
        .bind(col(recs, |r| r.operation.unknowns as i32))
        .bind(col(recs, |r| r.operation.redriven_as.map(|p| *p.as_uuid())))
        .bind(col(recs, |r| {
            r.operation
                .traceparent
                .as_ref()
                .map(|t| t.as_str().to_owned())
        }))
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
    Ok(inserted.into_iter().collect())
}

/// Inserts the restored operations' attempts, each history oldest first.
async fn insert_attempts(tx: &mut sqlx::PgConnection, recs: &[&ArchivedOperation]) -> Result<()> {
    let rows: Vec<(Uuid, &Attempt)> = recs
        .iter()
        .flat_map(|r| r.attempts.iter().map(|a| (*r.operation.id.as_uuid(), a)))
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    let errors = rows
        .iter()
        .map(|(_, a)| a.error.as_ref().map(row::json).transpose())
        .collect::<Result<Vec<_>>>()?;
    sqlx::query(sql::ARCHIVE_RESTORE_ATTEMPTS)
        .bind(rows.iter().map(|(id, _)| *id).collect::<Vec<_>>())
        .bind(
            rows.iter()
                .map(|(_, a)| a.attempt as i32)
                .collect::<Vec<_>>(),
        )
        .bind(rows.iter().map(|(_, a)| a.claimed_at).collect::<Vec<_>>())
        .bind(rows.iter().map(|(_, a)| a.ended_at).collect::<Vec<_>>())
        .bind(
            rows.iter()
                .map(|(_, a)| a.outcome.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(
            rows.iter()
                .map(|(_, a)| a.failure_class.map(|c| c.as_str()))
                .collect::<Vec<_>>(),
        )
        .bind(errors)
        .bind(
            rows.iter()
                .map(|(_, a)| a.worker_id.clone())
                .collect::<Vec<_>>(),
        )
        .bind(
            rows.iter()
                .map(|(_, a)| a.code_version.clone())
                .collect::<Vec<_>>(),
        )
        .bind(rows.iter().map(|(_, a)| a.isolated).collect::<Vec<_>>())
        .bind(
            rows.iter()
                .map(|(_, a)| a.stale_outcome.map(|o| o.as_str()))
                .collect::<Vec<_>>(),
        )
        .bind(rows.iter().map(|(_, a)| a.stale_at).collect::<Vec<_>>())
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// Inserts the restored operations' durable steps.
async fn insert_steps(tx: &mut sqlx::PgConnection, recs: &[&ArchivedOperation]) -> Result<()> {
    let rows: Vec<(Uuid, &Step)> = recs
        .iter()
        .flat_map(|r| r.steps.iter().map(|s| (*r.operation.id.as_uuid(), s)))
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    sqlx::query(sql::ARCHIVE_RESTORE_STEPS)
        .bind(rows.iter().map(|(id, _)| *id).collect::<Vec<_>>())
        .bind(rows.iter().map(|(_, s)| s.name.clone()).collect::<Vec<_>>())
        .bind(
            rows.iter()
                .map(|(_, s)| s.output.clone())
                .collect::<Vec<_>>(),
        )
        .bind(
            rows.iter()
                .map(|(_, s)| s.attempt as i32)
                .collect::<Vec<_>>(),
        )
        .bind(rows.iter().map(|(_, s)| s.completed_at).collect::<Vec<_>>())
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// One column of the records, as bound to an array parameter.
fn col<T>(recs: &[&ArchivedOperation], f: impl Fn(&ArchivedOperation) -> T) -> Vec<T> {
    recs.iter().map(|r| f(r)).collect()
}
