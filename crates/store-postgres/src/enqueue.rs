//! The producer's side ([`EnqueueStore`](oprec_core::EnqueueStore)): inserting operations, one
//! statement per batch, and recording published wake-ups.
//!
//! A key repeated within a batch is core's business ([`IdempotentBatch`]): only its first
//! occurrence reaches the database, and core resolves the repeats from the result.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use oprec_core::store::{Enqueued, MarkWokenParams};
use oprec_core::{Error, IdempotentBatch, NewOperation, OperationId, Result, TransactionalEnqueue};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::row::{self, Columns};
use crate::{PgStore, backend_error, kept, sql};

/// Enqueues `ops` in input order; see
/// [`EnqueueStore::operation_insert_many`](oprec_core::EnqueueStore::operation_insert_many).
pub(crate) async fn operation_insert_many(
    store: &PgStore,
    ops: Vec<NewOperation>,
) -> Result<Vec<Enqueued>> {
    if ops.is_empty() {
        return Ok(Vec::new());
    }
    let keeps = store.pool.options().get_max_connections() >= kept::KEEP_FROM_POOL_SIZE;
    let mut conn = match keeps.then(|| store.kept.take()).flatten() {
        Some(conn) => conn,
        None => store.pool.acquire().await.map_err(backend_error)?,
    };
    let enqueued = insert_on(&mut conn, ops).await?;
    if keeps {
        store.kept.keep(conn);
    }
    Ok(enqueued)
}

/// Enqueues `ops` in input order on `conn`, in whatever transaction it is in (none: each
/// statement commits on its own, and each is atomic); see
/// [`TransactionalEnqueue`](oprec_core::TransactionalEnqueue).
pub(crate) async fn insert_on(
    conn: &mut PgConnection,
    ops: Vec<NewOperation>,
) -> Result<Vec<Enqueued>> {
    if ops.is_empty() {
        return Ok(Vec::new());
    }
    let plan = IdempotentBatch::plan(&ops);
    let unique: Vec<&NewOperation> = plan.unique().iter().map(|&i| &ops[i]).collect();
    let inserted = match unique.as_slice() {
        [one] => vec![insert_one(conn, one).await?],
        many if many.iter().all(|op| op.idempotency_key.is_none()) => {
            insert_keyless(conn, many).await?
        }
        many => insert_many(conn, many).await?,
    };
    plan.resolve(&inserted)
}

/// The attempt bound as stored (`integer`); a bound past its range is as good as none.
fn max_attempts(op: &NewOperation) -> Option<i32> {
    op.max_attempts
        .map(|m| i32::try_from(m).unwrap_or(i32::MAX))
}

/// One operation, the common case of an enqueue per request: a plain `INSERT ... VALUES` whose
/// plan PostgreSQL caches, where the batch statement's arrays would be planned anew on every
/// call (about 1 ms, most of a single enqueue's cost).
async fn insert_one(conn: &mut PgConnection, op: &NewOperation) -> Result<Enqueued> {
    let inserted: Option<Uuid> = sqlx::query_scalar(sql::ENQUEUE_INSERT_ONE)
        .bind(op.id.as_uuid())
        .bind(&op.kind)
        .bind(&op.idempotency_key)
        .bind(&op.payload)
        .bind(op.payload_mode.as_str())
        .bind(max_attempts(op))
        .bind(op.next_eligible_at)
        .bind(op.give_up_at)
        .bind(&op.dependency)
        .bind(&op.enqueue_params)
        .bind(op.created_at)
        .bind(op.last_woken_at)
        .bind(op.traceparent.as_ref().map(|t| t.as_str()))
        .bind(op.priority)
        .fetch_optional(&mut *conn)
        .await
        .map_err(backend_error)?;
    match inserted {
        Some(id) => Ok(Enqueued {
            id: OperationId::from_uuid(id),
            created: true,
        }),
        // Only the idempotency key can have stopped the insert.
        None => existing(conn, op).await,
    }
}

/// A batch statement (`sql`: enqueue_insert_many.sql or enqueue_insert_keyless.sql) with one
/// array per column bound, $1 to $14, in the order both statements read them.
fn batch<'q>(
    sql: &'static str,
    ops: &'q [&NewOperation],
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    let ids: Vec<Uuid> = ops.iter().map(|op| *op.id.as_uuid()).collect();
    let kinds: Vec<&str> = ops.iter().map(|op| op.kind.as_str()).collect();
    let keys: Vec<Option<&str>> = ops.iter().map(|op| op.idempotency_key.as_deref()).collect();
    let payloads: Vec<&Value> = ops.iter().map(|op| &op.payload).collect();
    let modes: Vec<&str> = ops.iter().map(|op| op.payload_mode.as_str()).collect();
    let bounds: Vec<Option<i32>> = ops.iter().map(|op| max_attempts(op)).collect();
    let eligible: Vec<DateTime<Utc>> = ops.iter().map(|op| op.next_eligible_at).collect();
    let deadlines: Vec<Option<DateTime<Utc>>> = ops.iter().map(|op| op.give_up_at).collect();
    let dependencies: Vec<Option<&str>> = ops.iter().map(|op| op.dependency.as_deref()).collect();
    let params: Vec<&Value> = ops.iter().map(|op| &op.enqueue_params).collect();
    let created: Vec<DateTime<Utc>> = ops.iter().map(|op| op.created_at).collect();
    let woken: Vec<Option<DateTime<Utc>>> = ops.iter().map(|op| op.last_woken_at).collect();
    let traceparents: Vec<Option<&str>> = ops
        .iter()
        .map(|op| op.traceparent.as_ref().map(|t| t.as_str()))
        .collect();
    let priorities: Vec<i16> = ops.iter().map(|op| op.priority).collect();
    sqlx::query(sql)
        .bind(ids)
        .bind(kinds)
        .bind(keys)
        .bind(payloads)
        .bind(modes)
        .bind(bounds)
        .bind(eligible)
        .bind(deadlines)
        .bind(dependencies)
        .bind(params)
        .bind(created)
        .bind(woken)
        .bind(traceparents)
        .bind(priorities)
}

/// Several operations (no key twice) in one statement, an array per column.
async fn insert_many(conn: &mut PgConnection, ops: &[&NewOperation]) -> Result<Vec<Enqueued>> {
    let rows = batch(sql::ENQUEUE_INSERT_MANY, ops)
        .fetch_all(&mut *conn)
        .await
        .map_err(backend_error)?;
    if rows.len() != ops.len() {
        return Err(Error::backend(false, "enqueue lost track of a row"));
    }
    let mut results = Vec::with_capacity(ops.len());
    // One row per input, in input order (the statement orders by position).
    for (r, op) in rows.iter().zip(ops) {
        let c = Columns(r);
        results.push(match c.get::<Option<Uuid>>("id")? {
            Some(id) => Enqueued {
                id: OperationId::from_uuid(id),
                created: c.get("created")?,
            },
            // Another transaction committed the same key after this statement's snapshot.
            None => existing(conn, op).await?,
        });
    }
    Ok(results)
}

/// Several operations without idempotency keys in one statement: nothing can conflict, so every
/// one is created.
async fn insert_keyless(conn: &mut PgConnection, ops: &[&NewOperation]) -> Result<Vec<Enqueued>> {
    let done = batch(sql::ENQUEUE_INSERT_KEYLESS, ops)
        .execute(&mut *conn)
        .await
        .map_err(backend_error)?;
    if done.rows_affected() != ops.len() as u64 {
        return Err(Error::backend(false, "enqueue lost track of a row"));
    }
    Ok(ops
        .iter()
        .map(|op| Enqueued {
            id: op.id,
            created: true,
        })
        .collect())
}

/// The stored operation that holds `op`'s idempotency key.
async fn existing(conn: &mut PgConnection, op: &NewOperation) -> Result<Enqueued> {
    let id: Uuid = sqlx::query_scalar(sql::ENQUEUE_EXISTING_ID)
        .bind(&op.kind)
        .bind(&op.idempotency_key)
        .fetch_one(&mut *conn)
        .await
        .map_err(backend_error)?;
    Ok(Enqueued {
        id: OperationId::from_uuid(id),
        created: false,
    })
}

/// Records that wake-ups were published for these operations.
pub(crate) async fn operation_mark_woken(store: &PgStore, params: MarkWokenParams) -> Result<()> {
    mark_woken_query(sql::ENQUEUE_MARK_WOKEN, store.now_bind(), &params)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// `statement` (enqueue_mark_woken.sql) with the time and the operations bound.
pub(crate) fn mark_woken_query(
    statement: impl sqlx::SqlSafeStr,
    now: Option<DateTime<Utc>>,
    params: &MarkWokenParams,
) -> sqlx::query::Query<'static, sqlx::Postgres, sqlx::postgres::PgArguments> {
    sqlx::query(statement)
        .bind(now)
        .bind(row::uuids(&params.ids))
}

/// Enqueues on the caller's connection, inside the caller's transaction: `&mut *tx` of a
/// `sqlx::Transaction<'_, Postgres>` on any pool of the same database.
#[async_trait]
impl TransactionalEnqueue for PgStore {
    type Conn = PgConnection;

    async fn operation_insert_many_on(
        &self,
        conn: &mut PgConnection,
        ops: Vec<NewOperation>,
    ) -> Result<Vec<Enqueued>> {
        insert_on(conn, ops).await
    }
}
