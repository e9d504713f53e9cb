//! Archive ([`OperatorStore`](oprec_core::OperatorStore)): reading terminal operations with their
//! whole history, removing them once they are safely written elsewhere (fenced, so that one
//! changed meanwhile stays), and inserting them back, never over anything.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use oprec_core::archive::{
    ArchivedOperation, Bookkeeping, OperationExportParams, OperationRemoveParams,
    OperationRestoreParams, RestoreOutcome,
};
use oprec_core::store::Step;
use oprec_core::{Attempt, OperationId, Result, Status};
use sqlx::{Postgres, QueryBuilder};
use uuid::Uuid;

use crate::row::{self, Columns};
use crate::{PgStore, backend_error, filter, sql};

/// One batch of terminal matches in id order, with their attempts and steps. Walks the primary
/// key from `after`, or operations_status_kind when kinds narrow it.
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
    let mut q: QueryBuilder<Postgres> =
        QueryBuilder::new("SELECT o.* FROM operations o WHERE o.status = ANY(");
    q.push_bind(statuses).push(")");
    filter::push_conditions(&mut q, &params.filter);
    if let Some(after) = params.after {
        q.push(" AND o.id > ").push_bind(*after.as_uuid());
    }
    q.push(" ORDER BY o.id LIMIT ")
        .push_bind(i64::from(params.limit));
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

/// Inserts the records in order, in one transaction; a taken id or key, or a missing parent,
/// writes nothing for that record.
pub(crate) async fn operation_restore(
    store: &PgStore,
    params: OperationRestoreParams,
) -> Result<Vec<RestoreOutcome>> {
    let mut tx = store.pool.begin().await.map_err(backend_error)?;
    let mut out = Vec::with_capacity(params.records.len());
    for rec in &params.records {
        let o = &rec.operation;
        let check = sqlx::query(sql::ARCHIVE_RESTORE_CHECK)
            .bind(o.id.as_uuid())
            .bind(o.redrive_of.map(|p| *p.as_uuid()))
            .fetch_one(&mut *tx)
            .await
            .map_err(backend_error)?;
        let c = Columns(&check);
        if c.get::<bool>("present")? {
            out.push(RestoreOutcome::Exists);
            continue;
        }
        if !c.get::<bool>("parent")? {
            out.push(RestoreOutcome::ParentMissing);
            continue;
        }
        let b = &rec.bookkeeping;
        let inserted: Option<Uuid> = sqlx::query_scalar(sql::ARCHIVE_RESTORE_OPERATION)
            .bind(o.id.as_uuid())
            .bind(&o.kind)
            .bind(&o.idempotency_key)
            .bind(&o.payload)
            .bind(o.payload_mode.map(|m| m.as_str()))
            .bind(o.status.as_str())
            .bind(o.attempt as i32)
            .bind(o.max_attempts.map(|n| n as i32))
            .bind(o.next_eligible_at)
            .bind(o.give_up_at)
            .bind(o.lease_until)
            .bind(o.claim_token)
            .bind(o.claimed_at)
            .bind(&o.worker_id)
            .bind(o.last_failure_class.map(|c| c.as_str()))
            .bind(o.last_error.as_ref().map(row::json).transpose()?)
            .bind(&o.remote_id)
            .bind(&o.dependency)
            .bind(o.terminal_reason.map(|r| r.as_str()))
            .bind(&o.code_version)
            .bind(&o.enqueue_params)
            .bind(o.redrive_of.map(|p| *p.as_uuid()))
            .bind(o.redrive_count as i32)
            .bind(o.vanished_streak as i32)
            .bind(o.last_woken_at)
            .bind(o.created_at)
            .bind(o.updated_at)
            .bind(o.terminal_at)
            .bind(b.reconcile_attempts as i32)
            .bind(b.alerted_at)
            .bind(b.alert_due_at)
            .bind(b.alert_failures as i32)
            .fetch_optional(&mut *tx)
            .await
            .map_err(backend_error)?;
        if inserted.is_none() {
            out.push(RestoreOutcome::KeyTaken);
            continue;
        }
        insert_attempts(&mut tx, o.id, &rec.attempts).await?;
        insert_steps(&mut tx, o.id, &rec.steps).await?;
        out.push(RestoreOutcome::Restored);
    }
    tx.commit().await.map_err(backend_error)?;
    Ok(out)
}

async fn insert_attempts(
    tx: &mut sqlx::PgConnection,
    id: OperationId,
    attempts: &[Attempt],
) -> Result<()> {
    if attempts.is_empty() {
        return Ok(());
    }
    let errors = attempts
        .iter()
        .map(|a| a.error.as_ref().map(row::json).transpose())
        .collect::<Result<Vec<_>>>()?;
    sqlx::query(sql::ARCHIVE_RESTORE_ATTEMPTS)
        .bind(id.as_uuid())
        .bind(
            attempts
                .iter()
                .map(|a| a.attempt as i32)
                .collect::<Vec<_>>(),
        )
        .bind(attempts.iter().map(|a| a.claimed_at).collect::<Vec<_>>())
        .bind(attempts.iter().map(|a| a.ended_at).collect::<Vec<_>>())
        .bind(
            attempts
                .iter()
                .map(|a| a.outcome.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(
            attempts
                .iter()
                .map(|a| a.failure_class.map(|c| c.as_str()))
                .collect::<Vec<_>>(),
        )
        .bind(errors)
        .bind(
            attempts
                .iter()
                .map(|a| a.worker_id.clone())
                .collect::<Vec<_>>(),
        )
        .bind(
            attempts
                .iter()
                .map(|a| a.code_version.clone())
                .collect::<Vec<_>>(),
        )
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    Ok(())
}

async fn insert_steps(tx: &mut sqlx::PgConnection, id: OperationId, steps: &[Step]) -> Result<()> {
    if steps.is_empty() {
        return Ok(());
    }
    sqlx::query(sql::ARCHIVE_RESTORE_STEPS)
        .bind(id.as_uuid())
        .bind(steps.iter().map(|s| s.name.clone()).collect::<Vec<_>>())
        .bind(steps.iter().map(|s| s.output.clone()).collect::<Vec<_>>())
        .bind(steps.iter().map(|s| s.attempt as i32).collect::<Vec<_>>())
        .bind(steps.iter().map(|s| s.completed_at).collect::<Vec<_>>())
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    Ok(())
}
