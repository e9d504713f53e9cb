//! Reconciliation: unknown outcomes handed to one reconcile hook at a time, and the settlement
//! core decided from a resolution (applied, not applied, still unknown) written as it stands.

use std::collections::HashMap;

use chrono::Duration;
use oprec_core::maintenance::{ReconcileDueParams, ReconcileResolveParams};
use oprec_core::{Error, Operation, Result, Status};

use crate::row::{self, json_text, uuid_text};
use crate::{SqliteStore, backend_error, sql, time};

/// See [`MaintenanceStore::operation_reconcile_due`](oprec_core::MaintenanceStore::operation_reconcile_due).
pub(crate) async fn operation_reconcile_due(
    store: &SqliteStore,
    params: ReconcileDueParams,
) -> Result<Vec<Operation>> {
    if params.limit == 0 {
        return Ok(Vec::new());
    }
    let now = store.clock_now();
    let now_text = time::text(now)?;
    // The lease to the millisecond, as the PostgreSQL store takes it.
    let lease = Duration::milliseconds(params.lease.num_milliseconds());
    let next = time::text(time::after(now, lease)?)?;
    // Picked and taken under one write lock: no other reconciler takes the same ones.
    let mut tx = store.begin_write().await?;
    let ids: Vec<String> = sqlx::query_scalar(sql::RECONCILE_DUE)
        .bind(&now_text)
        .bind(json_text(&params.kinds)?)
        .bind(i64::from(params.limit))
        .fetch_all(tx.conn())
        .await
        .map_err(backend_error)?;
    if ids.is_empty() {
        tx.commit().await?;
        return Ok(Vec::new());
    }
    let rows = sqlx::query(sql::RECONCILE_TAKE)
        .bind(&now_text)
        .bind(&next)
        .bind(json_text(&ids)?)
        .fetch_all(tx.conn())
        .await
        .map_err(backend_error)?;
    tx.commit().await?;
    let mut taken = rows
        .iter()
        .map(row::operation)
        .collect::<Result<Vec<_>>>()?;
    // In the order picked: longest due first.
    let order: HashMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    taken.sort_by_cached_key(|o| order.get(uuid_text(o.id.as_uuid()).as_str()).copied());
    Ok(taken)
}

/// See [`MaintenanceStore::operation_reconcile_resolve`](oprec_core::MaintenanceStore::operation_reconcile_resolve).
pub(crate) async fn operation_reconcile_resolve(
    store: &SqliteStore,
    params: ReconcileResolveParams,
) -> Result<Status> {
    let now = time::text(store.clock_now())?;
    let s = &params.settlement;
    let id = uuid_text(params.id.as_uuid());
    let status: Option<String> = {
        let _turn = store.write_turn().await;
        sqlx::query_scalar(sql::RECONCILE_RESOLVE)
            .bind(&now)
            .bind(s.status.as_str())
            .bind(s.terminal_reason.map(|r| r.as_str()))
            .bind(s.status.is_terminal().then_some(&now))
            .bind(time::text(s.next_eligible_at)?)
            .bind(&s.remote_id)
            .bind(json_text(&s.last_error)?)
            .bind(&id)
            .fetch_optional(&store.pool)
            .await
            .map_err(backend_error)?
    };
    if let Some(status) = status {
        return status
            .parse()
            .map_err(|e| Error::backend(false, format!("unreadable stored status: {e}")));
    }
    let current: Option<String> = sqlx::query_scalar(sql::RECONCILE_STATUS)
        .bind(&id)
        .fetch_optional(&store.pool)
        .await
        .map_err(backend_error)?;
    match current {
        None => Err(Error::NotFound(params.id)),
        Some(status) => Err(Error::InvalidInput(format!(
            "operation {} is {status}, not reconciling; nothing to resolve",
            params.id
        ))),
    }
}
