//! Enqueueing: one operation with a plain cached INSERT, a batch with JSON-fed inserts, both in
//! one write transaction; an idempotency key already stored returns the stored operation, and a
//! key repeated within the batch resolves as core's [`IdempotentBatch`] says. Also the record
//! that wake-ups were published.

use std::collections::HashMap;

use async_trait::async_trait;
use oprec_core::store::{Enqueued, MarkWokenParams};
use oprec_core::{Error, IdempotentBatch, NewOperation, OperationId, Result, TransactionalEnqueue};
use serde::Serialize;
use sqlx::SqliteConnection;

use crate::row::{Columns, distinct_texts, json_text, parse_id, uuid_text};
use crate::{ROWS_PER_STATEMENT, SqliteStore, backend_error, sql, time};

/// One operation as the stored text of its columns: the binds of `enqueue_insert_one.sql`, or
/// one row of `enqueue_insert_many.sql`'s JSON array.
#[derive(Serialize)]
struct InsertRow<'a> {
    id: String,
    kind: &'a str,
    idempotency_key: Option<&'a str>,
    payload: String,
    payload_mode: &'static str,
    max_attempts: Option<u32>,
    next_eligible_at: String,
    give_up_at: Option<String>,
    dependency: Option<&'a str>,
    enqueue_params: String,
    created_at: String,
    last_woken_at: Option<String>,
    traceparent: Option<&'a str>,
    priority: i16,
}

impl<'a> InsertRow<'a> {
    fn new(op: &'a NewOperation) -> Result<Self> {
        Ok(InsertRow {
            id: uuid_text(op.id.as_uuid()),
            kind: &op.kind,
            idempotency_key: op.idempotency_key.as_deref(),
            payload: json_text(&op.payload)?,
            payload_mode: op.payload_mode.as_str(),
            max_attempts: op.max_attempts,
            next_eligible_at: time::text(op.next_eligible_at)?,
            give_up_at: time::opt_text(op.give_up_at)?,
            dependency: op.dependency.as_deref(),
            enqueue_params: json_text(&op.enqueue_params)?,
            created_at: time::text(op.created_at)?,
            last_woken_at: time::opt_text(op.last_woken_at)?,
            traceparent: op.traceparent.as_ref().map(|t| t.as_str()),
            priority: op.priority,
        })
    }
}

/// A taken idempotency key, as `enqueue_existing_id.sql` reads it.
#[derive(Serialize)]
struct Key<'a> {
    kind: &'a str,
    key: Option<&'a str>,
}

/// See [`EnqueueStore::operation_insert_many`](oprec_core::EnqueueStore::operation_insert_many).
pub(crate) async fn operation_insert_many(
    store: &SqliteStore,
    ops: Vec<NewOperation>,
) -> Result<Vec<Enqueued>> {
    if ops.is_empty() {
        return Ok(Vec::new());
    }
    // The write lock is held from the start, so a key found taken below is still taken, and by
    // the same operation, when the transaction commits.
    let mut tx = store.begin_write().await?;
    let inserted = insert_on(tx.conn(), ops).await?;
    tx.commit().await?;
    Ok(inserted)
}

/// Enqueues `ops` in input order on `conn`, inside whatever transaction it is in; see
/// [`TransactionalEnqueue`].
async fn insert_on(conn: &mut SqliteConnection, ops: Vec<NewOperation>) -> Result<Vec<Enqueued>> {
    if ops.is_empty() {
        return Ok(Vec::new());
    }
    let plan = IdempotentBatch::plan(&ops);
    let rows = plan
        .unique()
        .iter()
        .map(|&i| InsertRow::new(&ops[i]))
        .collect::<Result<Vec<_>>>()?;
    let created = match rows.as_slice() {
        [one] => insert_one(conn, one).await?,
        _ => {
            let mut created = Vec::with_capacity(rows.len());
            for chunk in rows.chunks(ROWS_PER_STATEMENT) {
                let ids: Vec<String> = sqlx::query_scalar(sql::ENQUEUE_INSERT_MANY)
                    .bind(json_text(chunk)?)
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(backend_error)?;
                created.extend(ids);
            }
            created
        }
    };
    let existing = existing_ids(conn, &rows, &created).await?;
    let inserted = rows
        .iter()
        .enumerate()
        .map(|(k, row)| match existing.get(&k) {
            Some(id) => Ok(Enqueued {
                id: *id,
                created: false,
            }),
            None => Ok(Enqueued {
                id: parse_id(&row.id)?,
                created: true,
            }),
        })
        .collect::<Result<Vec<_>>>()?;
    plan.resolve(&inserted)
}

/// Enqueues on the caller's connection, inside the caller's transaction: `&mut *tx` of a
/// `sqlx::Transaction<'_, Sqlite>` on a pool of the same database file. Begin it with
/// `pool.begin_with("BEGIN IMMEDIATE")`, so that it takes SQLite's write lock at once: a deferred
/// transaction that reads first and writes later can fail with "database is locked" when another
/// writer went between (the busy timeout cannot help an upgrade from a read lock).
#[async_trait]
impl TransactionalEnqueue for SqliteStore {
    type Conn = SqliteConnection;

    async fn operation_insert_many_on(
        &self,
        conn: &mut SqliteConnection,
        ops: Vec<NewOperation>,
    ) -> Result<Vec<Enqueued>> {
        insert_on(conn, ops).await
    }
}

/// Inserts one operation with the plain statement; returns its id when it was inserted.
async fn insert_one(conn: &mut SqliteConnection, r: &InsertRow<'_>) -> Result<Vec<String>> {
    sqlx::query_scalar(sql::ENQUEUE_INSERT_ONE)
        .bind(&r.id)
        .bind(r.kind)
        .bind(r.idempotency_key)
        .bind(&r.payload)
        .bind(r.payload_mode)
        .bind(r.max_attempts)
        .bind(&r.next_eligible_at)
        .bind(&r.give_up_at)
        .bind(r.dependency)
        .bind(&r.enqueue_params)
        .bind(&r.created_at)
        .bind(&r.last_woken_at)
        .bind(r.traceparent)
        .bind(r.priority)
        .fetch_all(conn)
        .await
        .map_err(backend_error)
}

/// The stored operation for each of `rows` that was not inserted (by its index in `rows`). Only
/// an idempotency key can have stopped an insert: any other conflict fails the statement.
async fn existing_ids(
    conn: &mut SqliteConnection,
    rows: &[InsertRow<'_>],
    created: &[String],
) -> Result<HashMap<usize, OperationId>> {
    if created.len() == rows.len() {
        return Ok(HashMap::new());
    }
    let created: std::collections::HashSet<&str> = created.iter().map(String::as_str).collect();
    let taken: Vec<usize> = (0..rows.len())
        .filter(|&k| !created.contains(rows[k].id.as_str()))
        .collect();
    let keys: Vec<Key> = taken
        .iter()
        .map(|&k| Key {
            kind: rows[k].kind,
            key: rows[k].idempotency_key,
        })
        .collect();
    let found = sqlx::query(sql::ENQUEUE_EXISTING_ID)
        .bind(json_text(&keys)?)
        .fetch_all(conn)
        .await
        .map_err(backend_error)?;
    let mut existing = HashMap::with_capacity(taken.len());
    for r in &found {
        let c = Columns(r);
        let position = usize::try_from(c.int("position")?)
            .ok()
            .and_then(|p| taken.get(p))
            .ok_or_else(|| Error::backend(false, "enqueue found a key it did not ask for"))?;
        existing.insert(*position, c.id("id")?);
    }
    if existing.len() != taken.len() {
        return Err(Error::backend(false, "enqueue lost track of a row"));
    }
    Ok(existing)
}

/// See [`EnqueueStore::operation_mark_woken`](oprec_core::EnqueueStore::operation_mark_woken).
pub(crate) async fn operation_mark_woken(
    store: &SqliteStore,
    params: MarkWokenParams,
) -> Result<()> {
    let ids = distinct_texts(&params.ids);
    if ids.is_empty() {
        return Ok(());
    }
    let now = time::text(store.clock_now())?;
    let _turn = store.write_turn().await;
    sqlx::query(sql::ENQUEUE_MARK_WOKEN)
        .bind(now)
        .bind(json_text(&ids)?)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}
