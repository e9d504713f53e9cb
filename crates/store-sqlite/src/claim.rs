//! Claims: pending, eligible operations within their deadline, and held back by no pause or
//! postponement, become running, with attempt + 1, a fresh token (UUID v7, made here) and a lease;
//! and heartbeats that extend a claim's lease.

use chrono::{DateTime, Utc};
use oprec_core::store::{
    ClaimByIdsParams, ClaimEligibleParams, Claimant, Claimed, HeartbeatParams,
};
use oprec_core::{Error, Result};
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};
use uuid::Uuid;

use crate::controls::push_not_paused;
use crate::row::{self, distinct_texts, operation_columns, uuid_text};
use crate::{ROWS_PER_STATEMENT, SqliteStore, backend_error, time};

impl SqliteStore {
    /// See [`Store::operation_claim_by_ids`](oprec_core::Store::operation_claim_by_ids).
    pub(crate) async fn claim_by_ids(&self, params: ClaimByIdsParams) -> Result<Vec<Claimed>> {
        let ids = distinct_texts(&params.ids);
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let mut claimed = claim(tx.conn(), &ids, &params.kinds, &params.claimant, now).await?;
        tx.commit().await?;
        claimed.sort_by_key(|o| o.id);
        Ok(claimed)
    }

    /// See [`Store::operation_claim_eligible`](oprec_core::Store::operation_claim_eligible).
    pub(crate) async fn claim_eligible(&self, params: ClaimEligibleParams) -> Result<Vec<Claimed>> {
        if params.limit == 0 {
            return Ok(Vec::new());
        }
        let now = self.clock_now();
        let now_text = time::text(now)?;
        // INDEXED BY: without statistics SQLite prefers the (status, kind) index and sorts every
        // pending row; the partial index reads eligible rows in claim order and stops at the limit.
        let mut q: QueryBuilder<Sqlite> = QueryBuilder::new(
            "SELECT id FROM operations INDEXED BY operations_pending_eligible \
             WHERE status = 'pending' AND next_eligible_at <= ",
        );
        q.push_bind(&now_text)
            .push(" AND (give_up_at IS NULL OR give_up_at >= ")
            .push_bind(&now_text)
            .push(")");
        if !params.kinds.is_empty() {
            q.push(" AND kind IN (");
            let mut kinds = q.separated(", ");
            for kind in &params.kinds {
                kinds.push_bind(kind);
            }
            q.push(")");
        }
        // Paused rows are left out of the pick, so they do not take up the limit.
        push_not_paused(&mut q, &now_text);
        q.push(" ORDER BY next_eligible_at, id LIMIT ")
            .push_bind(i64::from(params.limit));

        // Picking and claiming happen under one write lock, so no other claimer can take a picked
        // row in between: where PostgreSQL claimers skip each other's locked rows, SQLite
        // claimers take turns.
        let mut tx = self.begin_write().await?;
        let ids: Vec<String> = q
            .build_query_scalar()
            .fetch_all(tx.conn())
            .await
            .map_err(backend_error)?;
        let mut claimed = claim(tx.conn(), &ids, &[], &params.claimant, now).await?;
        tx.commit().await?;
        claimed.sort_by_key(|o| (o.next_eligible_at, o.id));
        Ok(claimed)
    }

    /// See [`Store::operation_heartbeat`](oprec_core::Store::operation_heartbeat).
    pub(crate) async fn heartbeat(&self, params: HeartbeatParams) -> Result<DateTime<Utc>> {
        let lease_until = time::after(self.clock_now(), params.lease)?;
        let _turn = self.write_turn().await;
        let lease: Option<String> = sqlx::query_scalar(
            "UPDATE operations SET lease_until = ?
             WHERE id = ? AND claim_token = ? AND status = 'running'
             RETURNING lease_until",
        )
        .bind(time::text(lease_until)?)
        .bind(uuid_text(params.id.as_uuid()))
        .bind(uuid_text(&params.claim_token))
        .fetch_optional(&self.pool)
        .await
        .map_err(backend_error)?;
        match lease {
            Some(lease) => time::parse(&lease),
            None => Err(Error::StaleClaim { id: params.id }),
        }
    }
}

/// Claims those of `ids` (distinct, as stored text) that are still pending, eligible at `now`,
/// within their deadline and not paused (and of one of `kinds`, unless empty), on the caller's
/// write transaction; returns them as claimed.
async fn claim(
    conn: &mut SqliteConnection,
    ids: &[String],
    kinds: &[String],
    claimant: &Claimant,
    now: DateTime<Utc>,
) -> Result<Vec<Claimed>> {
    let now_text = time::text(now)?;
    let lease_until = time::text(time::after(now, claimant.lease)?)?;
    let mut claimed = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(ROWS_PER_STATEMENT) {
        let mut q: QueryBuilder<Sqlite> = QueryBuilder::new("WITH input (op_id, token) AS (");
        q.push_values(chunk, |mut v, id| {
            v.push_bind(id).push_bind(uuid_text(&Uuid::now_v7()));
        });
        q.push(
            ") UPDATE operations SET status = 'running', attempt = operations.attempt + 1, \
             claim_token = input.token, lease_until = ",
        )
        .push_bind(&lease_until)
        .push(", claimed_at = ")
        .push_bind(&now_text)
        .push(", worker_id = ")
        .push_bind(&claimant.worker_id)
        .push(", code_version = ")
        .push_bind(&claimant.code_version)
        .push(", updated_at = ")
        .push_bind(&now_text)
        .push(
            " FROM input WHERE operations.id = input.op_id AND operations.status = 'pending' \
             AND operations.next_eligible_at <= ",
        )
        .push_bind(&now_text)
        .push(" AND (operations.give_up_at IS NULL OR operations.give_up_at >= ")
        .push_bind(&now_text)
        .push(")");
        if !kinds.is_empty() {
            q.push(" AND operations.kind IN (");
            let mut list = q.separated(", ");
            for kind in kinds {
                list.push_bind(kind);
            }
            q.push(")");
        }
        push_not_paused(&mut q, &now_text);
        q.push(concat!(" RETURNING ", operation_columns!()));
        let rows = q
            .build()
            .fetch_all(&mut *conn)
            .await
            .map_err(backend_error)?;
        for r in &rows {
            claimed.push(row::operation(r)?);
        }
    }
    Ok(claimed)
}
