//! Reconciliation: unknown outcomes handed to one reconcile hook at a time, and resolved as
//! applied (succeeded), not applied (pending again, or dead when its attempts are spent) or still
//! unknown (looked at again later).

use std::collections::HashMap;

use chrono::Duration;
use oprec_core::operator::{ReconcileDueParams, Resolution, ResolveParams};
use oprec_core::{Error, Operation, Result, Status};
use sqlx::{QueryBuilder, Sqlite};

use crate::row::{self, operation_columns, uuid_text};
use crate::{ROWS_PER_STATEMENT, SqliteStore, backend_error, time};

impl SqliteStore {
    /// See [`OperatorStore::operation_reconcile_due`](oprec_core::OperatorStore::operation_reconcile_due).
    pub(crate) async fn reconcile_due(&self, p: ReconcileDueParams) -> Result<Vec<Operation>> {
        if p.limit == 0 {
            return Ok(Vec::new());
        }
        let now = self.clock_now();
        let now_text = time::text(now)?;
        // The lease to the millisecond, as the PostgreSQL store takes it.
        let next = time::after(now, Duration::milliseconds(p.lease.num_milliseconds()))?;
        let next = time::text(next)?;
        let mut pick: QueryBuilder<Sqlite> = QueryBuilder::new(
            "SELECT id FROM operations INDEXED BY operations_reconciling_due \
             WHERE status = 'reconciling' AND next_eligible_at <= ",
        );
        pick.push_bind(&now_text);
        if !p.kinds.is_empty() {
            pick.push(" AND kind IN (");
            let mut kinds = pick.separated(", ");
            for kind in &p.kinds {
                kinds.push_bind(kind);
            }
            pick.push(")");
        }
        pick.push(" ORDER BY next_eligible_at, id LIMIT ")
            .push_bind(i64::from(p.limit));

        // Picked and pushed back under one write lock: no other reconciler takes the same ones.
        let mut tx = self.begin_write().await?;
        let ids: Vec<String> = pick
            .build_query_scalar()
            .fetch_all(tx.conn())
            .await
            .map_err(backend_error)?;
        let mut taken = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(ROWS_PER_STATEMENT) {
            let mut q: QueryBuilder<Sqlite> =
                QueryBuilder::new("UPDATE operations SET next_eligible_at = ");
            q.push_bind(&next)
                .push(", reconcile_attempts = reconcile_attempts + 1, updated_at = ")
                .push_bind(&now_text)
                .push(" WHERE id IN (");
            let mut list = q.separated(", ");
            for id in chunk {
                list.push_bind(id);
            }
            q.push(concat!(") RETURNING ", operation_columns!()));
            for r in q
                .build()
                .fetch_all(tx.conn())
                .await
                .map_err(backend_error)?
            {
                taken.push(row::operation(&r)?);
            }
        }
        tx.commit().await?;
        // In the order picked: longest due first.
        let order: HashMap<&str, usize> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i))
            .collect();
        taken.sort_by_cached_key(|o| order.get(uuid_text(o.id.as_uuid()).as_str()).copied());
        Ok(taken)
    }

    /// See [`OperatorStore::operation_reconcile_resolve`](oprec_core::OperatorStore::operation_reconcile_resolve).
    pub(crate) async fn reconcile_resolve(&self, p: ResolveParams) -> Result<Status> {
        let now = time::text(self.clock_now())?;
        let (resolution, remote_id, next_eligible_at, found) = match &p.resolution {
            Resolution::Applied { remote_id } => (
                "applied",
                remote_id.clone(),
                now.clone(),
                "the effect was applied",
            ),
            Resolution::NotApplied => (
                "not_applied",
                None,
                now.clone(),
                "the effect was not applied; safe to retry",
            ),
            Resolution::StillUnknown { retry_at } => {
                ("unknown", None, time::text(*retry_at)?, "still unknown")
            }
        };
        let id = uuid_text(p.id.as_uuid());
        let status: Option<String> = {
            let _turn = self.write_turn().await;
            sqlx::query_scalar(
                "UPDATE operations SET
                    status = CASE ?1
                        WHEN 'applied' THEN 'succeeded'
                        WHEN 'not_applied' THEN CASE WHEN max_attempts IS NOT NULL
                            AND attempt >= max_attempts THEN 'dead' ELSE 'pending' END
                        ELSE 'reconciling' END,
                    terminal_reason = CASE WHEN ?1 = 'not_applied' AND max_attempts IS NOT NULL
                        AND attempt >= max_attempts THEN 'attempts_exhausted' END,
                    terminal_at = CASE WHEN ?1 = 'applied' OR (?1 = 'not_applied'
                        AND max_attempts IS NOT NULL AND attempt >= max_attempts) THEN ?2 END,
                    remote_id = coalesce(?3, remote_id),
                    next_eligible_at = ?4,
                    last_woken_at = NULL,
                    last_error = json_set(coalesce(last_error, '{}'), '$.decision',
                        ?5 || CASE WHEN ?1 = 'not_applied' AND max_attempts IS NOT NULL
                            AND attempt >= max_attempts
                            THEN 'the effect was not applied, and the attempts are used up'
                            ELSE ?7 END),
                    updated_at = ?2
                 WHERE id = ?6 AND status = 'reconciling'
                 RETURNING status",
            )
            .bind(resolution)
            .bind(&now)
            .bind(remote_id)
            .bind(next_eligible_at)
            .bind(format!("reconciled by {}: ", p.actor))
            .bind(&id)
            .bind(found)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend_error)?
        };
        if let Some(status) = status {
            return status
                .parse()
                .map_err(|e| Error::backend(false, format!("unreadable stored status: {e}")));
        }
        let current: Option<String> =
            sqlx::query_scalar("SELECT status FROM operations WHERE id = ?")
                .bind(&id)
                .fetch_optional(&self.pool)
                .await
                .map_err(backend_error)?;
        match current {
            None => Err(Error::NotFound(p.id)),
            Some(s) => Err(Error::InvalidInput(format!(
                "operation {} is {s}, not reconciling; nothing to resolve",
                p.id
            ))),
        }
    }
}
