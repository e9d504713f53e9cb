//! Archive ([`OperatorStore`](oprec_core::OperatorStore)): reading terminal operations with their
//! whole history, removing them once they are safely written elsewhere (fenced, so that one
//! changed meanwhile stays), and inserting them back, never over anything. The selection follows
//! the operator's filter (built in [`crate::filter`]); the other statements are `archive_*.sql`.

use std::collections::HashMap;

use oprec_core::archive::{
    ArchivedOperation, Bookkeeping, OperationExportParams, OperationRemoveParams,
    OperationRestoreParams, RestoreOutcome,
};
use oprec_core::{OperationId, Result, Status};

use crate::row::{self, Columns, json_text, parse_id, uuid_text};
use crate::write::WriteTx;
use crate::{SqliteStore, backend_error, filter, sql, time};

/// One batch of terminal matches in id order, with their attempts and steps, read in one
/// transaction so that rows and histories are of the same moment.
pub(crate) async fn operation_export(
    store: &SqliteStore,
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
    let after = params.after.map(|a| uuid_text(a.as_uuid()));
    let mut pick = filter::archive_pick(&params.filter, &statuses, after, params.limit)?;
    let mut tx = store.pool.begin().await.map_err(backend_error)?;
    let rows = pick
        .build()
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
    let mut out = Vec::with_capacity(rows.len());
    let mut at: HashMap<String, usize> = HashMap::with_capacity(rows.len());
    for r in &rows {
        let c = Columns(r);
        let operation = row::operation(r)?;
        at.insert(uuid_text(operation.id.as_uuid()), out.len());
        out.push(ArchivedOperation {
            operation,
            bookkeeping: Bookkeeping {
                reconcile_attempts: c.u32("reconcile_attempts")?,
                alerted_at: c.opt_time("alerted_at")?,
                alert_due_at: c.opt_time("alert_due_at")?,
                alert_failures: c.u32("alert_failures")?,
            },
            attempts: Vec::new(),
            steps: Vec::new(),
        });
    }
    let ids = json_text(&at.keys().collect::<Vec<_>>())?;
    for r in sqlx::query(sql::ARCHIVE_ATTEMPTS)
        .bind(&ids)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?
    {
        if let Some(&i) = at.get(&Columns(&r).text("operation_id")?) {
            out[i].attempts.push(row::attempt(&r)?);
        }
    }
    for r in sqlx::query(sql::ARCHIVE_STEPS)
        .bind(&ids)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?
    {
        if let Some(&i) = at.get(&Columns(&r).text("operation_id")?) {
            out[i].steps.push(row::step(&r)?);
        }
    }
    tx.commit().await.map_err(backend_error)?;
    Ok(out)
}

/// Removes the operations whose fences hold, under one write lock; returns their ids.
pub(crate) async fn operation_remove(
    store: &SqliteStore,
    params: OperationRemoveParams,
) -> Result<Vec<OperationId>> {
    if params.fences.is_empty() {
        return Ok(Vec::new());
    }
    let mut tx = store.begin_write().await?;
    let mut removed = Vec::new();
    for f in &params.fences {
        let gone: Option<String> = sqlx::query_scalar(sql::ARCHIVE_REMOVE)
            .bind(uuid_text(f.id.as_uuid()))
            .bind(f.status.as_str())
            .bind(time::text(f.updated_at)?)
            .bind(i64::from(f.attempt))
            .bind(time::opt_text(f.alerted_at)?)
            .bind(i64::from(f.attempts))
            .fetch_optional(tx.conn())
            .await
            .map_err(backend_error)?;
        if let Some(id) = gone {
            removed.push(parse_id(&id)?);
        }
    }
    tx.commit().await?;
    Ok(removed)
}

/// Inserts the records under one write lock, in order, in rounds: a record whose parent is a
/// later record of the batch is inserted in the round after its parent's. A taken id or key, or
/// a missing parent, writes nothing for that record.
pub(crate) async fn operation_restore(
    store: &SqliteStore,
    params: OperationRestoreParams,
) -> Result<Vec<RestoreOutcome>> {
    let mut tx = store.begin_write().await?;
    let mut out: Vec<Option<RestoreOutcome>> = vec![None; params.records.len()];
    loop {
        let mut progress = false;
        for (i, rec) in params.records.iter().enumerate() {
            if out[i].is_some() {
                continue;
            }
            match restore_one(&mut tx, rec).await? {
                RestoreOutcome::ParentMissing => {}
                done => {
                    progress |= done == RestoreOutcome::Restored;
                    out[i] = Some(done);
                }
            }
        }
        if !progress {
            break;
        }
    }
    tx.commit().await?;
    Ok(out
        .into_iter()
        .map(|o| o.unwrap_or(RestoreOutcome::ParentMissing))
        .collect())
}

/// Inserts one record with its history, unless its id is taken, its parent missing or its key
/// taken.
async fn restore_one(tx: &mut WriteTx, rec: &ArchivedOperation) -> Result<RestoreOutcome> {
    let o = &rec.operation;
    let id = uuid_text(o.id.as_uuid());
    let parent = o.redrive_of.map(|p| uuid_text(p.as_uuid()));
    let check = sqlx::query(sql::ARCHIVE_RESTORE_PRESENT)
        .bind(&id)
        .bind(&parent)
        .fetch_one(tx.conn())
        .await
        .map_err(backend_error)?;
    let c = Columns(&check);
    if c.int("present")? != 0 {
        return Ok(RestoreOutcome::Exists);
    }
    if c.int("parent")? == 0 {
        return Ok(RestoreOutcome::ParentMissing);
    }
    let b = &rec.bookkeeping;
    let inserted: Option<String> = sqlx::query_scalar(sql::ARCHIVE_RESTORE_OPERATIONS)
        .bind(&id)
        .bind(&o.kind)
        .bind(&o.idempotency_key)
        .bind(json_text(&o.payload)?)
        .bind(o.payload_mode.map(|m| m.as_str()))
        .bind(o.status.as_str())
        .bind(i64::from(o.attempt))
        .bind(o.max_attempts.map(i64::from))
        .bind(time::text(o.next_eligible_at)?)
        .bind(time::opt_text(o.give_up_at)?)
        .bind(time::opt_text(o.lease_until)?)
        .bind(o.claim_token.map(|t| uuid_text(&t)))
        .bind(time::opt_text(o.claimed_at)?)
        .bind(&o.worker_id)
        .bind(o.last_failure_class.map(|c| c.as_str()))
        .bind(o.last_error.as_ref().map(json_text).transpose()?)
        .bind(&o.remote_id)
        .bind(&o.dependency)
        .bind(o.terminal_reason.map(|r| r.as_str()))
        .bind(&o.code_version)
        .bind(json_text(&o.enqueue_params)?)
        .bind(&parent)
        .bind(i64::from(o.redrive_count))
        .bind(i64::from(o.vanished_streak))
        .bind(time::opt_text(o.last_woken_at)?)
        .bind(time::text(o.created_at)?)
        .bind(time::text(o.updated_at)?)
        .bind(time::opt_text(o.terminal_at)?)
        .bind(i64::from(b.reconcile_attempts))
        .bind(time::opt_text(b.alerted_at)?)
        .bind(time::opt_text(b.alert_due_at)?)
        .bind(i64::from(b.alert_failures))
        .bind(o.redrive_root.map(|p| uuid_text(p.as_uuid())))
        .bind(o.suspect)
        .bind(o.isolated)
        .bind(i64::from(o.snoozes))
        .bind(i64::from(o.unknowns))
        .bind(o.redriven_as.map(|p| uuid_text(p.as_uuid())))
        .bind(o.traceparent.as_ref().map(|t| t.as_str()))
        .fetch_optional(tx.conn())
        .await
        .map_err(backend_error)?;
    if inserted.is_none() {
        return Ok(RestoreOutcome::KeyTaken);
    }
    for a in &rec.attempts {
        sqlx::query(sql::ARCHIVE_RESTORE_ATTEMPTS)
            .bind(&id)
            .bind(i64::from(a.attempt))
            .bind(time::text(a.claimed_at)?)
            .bind(time::text(a.ended_at)?)
            .bind(a.outcome.as_str())
            .bind(a.failure_class.map(|c| c.as_str()))
            .bind(a.error.as_ref().map(json_text).transpose()?)
            .bind(&a.worker_id)
            .bind(&a.code_version)
            .bind(a.isolated)
            .bind(a.stale_outcome.map(|o| o.as_str()))
            .bind(time::opt_text(a.stale_at)?)
            .execute(tx.conn())
            .await
            .map_err(backend_error)?;
    }
    sqlx::query(sql::ARCHIVE_RESTORE_UNCOUNT)
        .bind(&id)
        .execute(tx.conn())
        .await
        .map_err(backend_error)?;
    for s in &rec.steps {
        sqlx::query(sql::ARCHIVE_RESTORE_STEPS)
            .bind(&id)
            .bind(&s.name)
            .bind(json_text(&s.output)?)
            .bind(i64::from(s.attempt))
            .bind(time::text(s.completed_at)?)
            .execute(tx.conn())
            .await
            .map_err(backend_error)?;
    }
    Ok(RestoreOutcome::Restored)
}
