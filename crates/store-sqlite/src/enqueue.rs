//! Enqueueing: multi-row inserts in one transaction, with the idempotency key resolved within the
//! batch and against stored operations.

use std::collections::{HashMap, HashSet};

use oprec_core::store::Enqueued;
use oprec_core::{Error, NewOperation, OperationId, Result};
use sqlx::{QueryBuilder, Sqlite};
use uuid::Uuid;

use crate::row::{json_text, parse_uuid, uuid_text};
use crate::{ROWS_PER_STATEMENT, SqliteStore, backend_error, time};

/// One operation as its columns' stored text.
struct InsertRow<'a> {
    id: String,
    kind: &'a str,
    idempotency_key: Option<&'a str>,
    payload: String,
    max_attempts: Option<i64>,
    next_eligible_at: String,
    give_up_at: Option<String>,
    dependency: Option<&'a str>,
    enqueue_params: String,
    created_at: String,
    last_woken_at: Option<String>,
}

impl<'a> InsertRow<'a> {
    fn new(op: &'a NewOperation) -> Result<Self> {
        Ok(InsertRow {
            id: uuid_text(op.id.as_uuid()),
            kind: &op.kind,
            idempotency_key: op.idempotency_key.as_deref(),
            payload: json_text(&op.payload)?,
            max_attempts: op.max_attempts.map(i64::from),
            next_eligible_at: time::text(op.next_eligible_at)?,
            give_up_at: time::opt_text(op.give_up_at)?,
            dependency: op.dependency.as_deref(),
            enqueue_params: json_text(&op.enqueue_params)?,
            created_at: time::text(op.created_at)?,
            last_woken_at: time::opt_text(op.last_woken_at)?,
        })
    }
}

impl SqliteStore {
    /// See [`Store::operation_insert_many`](oprec_core::Store::operation_insert_many).
    pub(crate) async fn insert_many(&self, ops: Vec<NewOperation>) -> Result<Vec<Enqueued>> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        // A key repeated inside the batch resolves to its first occurrence.
        let mut first_of_key: HashMap<(&str, &str), usize> = HashMap::new();
        let mut alias = vec![None; ops.len()];
        let mut unique = Vec::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            if let Some(key) = op.idempotency_key.as_deref() {
                if let Some(&j) = first_of_key.get(&(op.kind.as_str(), key)) {
                    alias[i] = Some(j);
                    continue;
                }
                first_of_key.insert((op.kind.as_str(), key), i);
            }
            unique.push(i);
        }
        let rows = unique
            .iter()
            .map(|&i| InsertRow::new(&ops[i]))
            .collect::<Result<Vec<_>>>()?;

        // The write lock is held from the start, so a key found taken below is still taken, and
        // by the same operation, when the transaction commits.
        let mut tx = self.begin_write().await?;
        let mut inserted: HashSet<Uuid> = HashSet::with_capacity(rows.len());
        for chunk in rows.chunks(ROWS_PER_STATEMENT) {
            let mut q: QueryBuilder<Sqlite> = QueryBuilder::new(
                "INSERT INTO operations (id, kind, idempotency_key, payload, max_attempts, \
                 next_eligible_at, give_up_at, dependency, enqueue_params, created_at, updated_at, \
                 last_woken_at) ",
            );
            q.push_values(chunk, |mut v, r| {
                v.push_bind(&r.id)
                    .push_bind(r.kind)
                    .push_bind(r.idempotency_key)
                    .push_bind(&r.payload)
                    .push_bind(r.max_attempts)
                    .push_bind(&r.next_eligible_at)
                    .push_bind(&r.give_up_at)
                    .push_bind(r.dependency)
                    .push_bind(&r.enqueue_params)
                    .push_bind(&r.created_at)
                    .push_bind(&r.created_at)
                    .push_bind(&r.last_woken_at);
            });
            q.push(
                " ON CONFLICT (kind, idempotency_key) WHERE idempotency_key IS NOT NULL \
                 DO NOTHING RETURNING id",
            );
            let ids: Vec<String> = q
                .build_query_scalar()
                .fetch_all(tx.conn())
                .await
                .map_err(backend_error)?;
            for id in ids {
                inserted.insert(parse_uuid(&id)?);
            }
        }

        let mut results: Vec<Option<Enqueued>> = vec![None; ops.len()];
        for &i in &unique {
            let op = &ops[i];
            results[i] = Some(if inserted.contains(op.id.as_uuid()) {
                Enqueued {
                    id: op.id,
                    created: true,
                }
            } else {
                // Only the idempotency key can have stopped the insert: any other conflict is an
                // error of the statement itself.
                let id: Option<String> = sqlx::query_scalar(
                    "SELECT id FROM operations WHERE kind = ? AND idempotency_key = ?",
                )
                .bind(&op.kind)
                .bind(&op.idempotency_key)
                .fetch_optional(tx.conn())
                .await
                .map_err(backend_error)?;
                let id = id.ok_or_else(|| Error::backend(false, "enqueue lost track of a row"))?;
                Enqueued {
                    id: OperationId::from_uuid(parse_uuid(&id)?),
                    created: false,
                }
            });
        }
        tx.commit().await?;

        for i in 0..ops.len() {
            if let Some(j) = alias[i] {
                results[i] = results[j].map(|e| Enqueued {
                    id: e.id,
                    created: false,
                });
            }
        }
        results
            .into_iter()
            .map(|r| r.ok_or_else(|| Error::backend(false, "enqueue lost track of a row")))
            .collect()
    }
}
