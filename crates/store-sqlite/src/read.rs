//! Reading operations back for people and tools: one with its history, filtered pages, counts.

use oprec_core::store::{CountRow, ListParams};
use oprec_core::{Error, Operation, OperationDetail, OperationId, Result};
use sqlx::{QueryBuilder, Sqlite};

use crate::row::{self, operation_columns, uuid_text};
use crate::{SqliteStore, backend_error, time};

impl SqliteStore {
    /// See [`Store::operation_get`](oprec_core::Store::operation_get).
    pub(crate) async fn get(&self, id: OperationId) -> Result<Option<OperationDetail>> {
        let id = uuid_text(id.as_uuid());
        // One read transaction, so the record and its history are from the same moment.
        let mut tx = self.pool.begin().await.map_err(backend_error)?;
        let Some(op) = sqlx::query(concat!(
            "SELECT ",
            operation_columns!(),
            " FROM operations WHERE id = ?"
        ))
        .bind(&id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(backend_error)?
        else {
            return Ok(None);
        };
        let attempts = sqlx::query(
            "SELECT attempt, claimed_at, ended_at, outcome, failure_class, error, worker_id,
                    code_version
             FROM operation_attempts WHERE operation_id = ? ORDER BY id",
        )
        .bind(&id)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
        tx.commit().await.map_err(backend_error)?;
        Ok(Some(OperationDetail {
            operation: row::operation(&op)?,
            attempts: attempts.iter().map(row::attempt).collect::<Result<_>>()?,
        }))
    }

    /// See [`Store::operation_list`](oprec_core::Store::operation_list).
    pub(crate) async fn list(&self, params: ListParams) -> Result<Vec<Operation>> {
        let mut q: QueryBuilder<Sqlite> = QueryBuilder::new(concat!(
            "SELECT ",
            operation_columns!(),
            " FROM operations WHERE true"
        ));
        if let Some(status) = params.status {
            q.push(" AND status = ").push_bind(status.as_str());
        }
        if let Some(kind) = params.kind {
            q.push(" AND kind = ").push_bind(kind);
        }
        if let Some(class) = params.failure_class {
            q.push(" AND last_failure_class = ")
                .push_bind(class.as_str());
        }
        if let Some(reason) = params.terminal_reason {
            q.push(" AND terminal_reason = ").push_bind(reason.as_str());
        }
        if let Some(text) = params.error_contains {
            // instr, not LIKE: the operator's text is literal, `%` and `_` included.
            q.push(" AND instr(lower(json_extract(last_error, '$.summary')), lower(")
                .push_bind(text)
                .push(")) > 0");
        }
        if let Some(t) = params.created_since {
            q.push(" AND created_at >= ").push_bind(time::text(t)?);
        }
        if let Some(t) = params.created_until {
            q.push(" AND created_at < ").push_bind(time::text(t)?);
        }
        let (cmp, order) = if params.newest_first {
            (" AND id < ", " ORDER BY id DESC LIMIT ")
        } else {
            (" AND id > ", " ORDER BY id LIMIT ")
        };
        if let Some(after) = params.after {
            // Hyphenated lowercase text sorts as the ids do.
            q.push(cmp).push_bind(uuid_text(after.as_uuid()));
        }
        q.push(order)
            .push_bind(i64::from(params.limit.clamp(1, 10_000)));
        let rows = q
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(backend_error)?;
        rows.iter().map(row::operation).collect()
    }

    /// See [`Store::operation_count`](oprec_core::Store::operation_count).
    pub(crate) async fn count(&self) -> Result<Vec<CountRow>> {
        // NULLS LAST: PostgreSQL's order for an ascending sort.
        let rows: Vec<(String, String, Option<String>, i64)> = sqlx::query_as(
            "SELECT status, kind, last_failure_class, count(*)
             FROM operations GROUP BY status, kind, last_failure_class
             ORDER BY status, kind, last_failure_class NULLS LAST",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        rows.into_iter()
            .map(|(status, kind, class, count)| {
                let bad = |e: oprec_core::ParseEnumError| Error::backend(false, e);
                Ok(CountRow {
                    status: status.parse().map_err(bad)?,
                    kind,
                    failure_class: class.map(|c| c.parse()).transpose().map_err(bad)?,
                    count: u64::try_from(count).unwrap_or(0),
                })
            })
            .collect()
    }
}
