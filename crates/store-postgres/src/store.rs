//! The `Store` implementation: one statement per batch wherever a batch is possible.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use oprec_core::store::{
    ClaimByIdsParams, ClaimEligibleParams, Claimed, CompleteParams, CompleteResult, CountRow,
    Enqueued, HeartbeatParams, ListParams, MarkWokenParams, RemoteIdSetParams, RescueParams,
    RescueReport, Step, StepSaveParams, WakeDueParams,
};
use oprec_core::{
    Error, NewOperation, Operation, OperationDetail, OperationId, Result, Status, Store,
};
use serde_json::Value;
use sqlx::{Postgres, QueryBuilder, Row};
use uuid::Uuid;

use crate::row::{self, operation_columns};
use crate::{MIGRATOR, PgStore, backend_error};

/// The claim and wake-up condition that no pause or postponement in force matches the row named
/// `$row` (with `$1` the bound "now"). With no controls at all (the usual case) the first arm
/// decides once per statement, not once per row.
macro_rules! not_paused {
    ($row:literal) => {
        concat!(
            " AND (NOT EXISTS (SELECT 1 FROM controls)
                OR NOT EXISTS (SELECT 1 FROM controls c
                    WHERE (c.until IS NULL OR c.until > coalesce($1::timestamptz, now()))
                      AND ((c.scope = 'kind' AND c.value = ",
            $row,
            ".kind)
                        OR (c.scope = 'failure_class' AND c.value = ",
            $row,
            ".last_failure_class)
                        OR (c.scope = 'dependency' AND c.value = ",
            $row,
            ".dependency)))) "
        )
    };
}

/// Opens the transaction of a statement that must walk the partial index of pending rows in its
/// order (`ORDER BY next_eligible_at, id LIMIT n`). Without this, a missing or stale estimate —
/// a new table, or a burst of pending rows in a table whose statistics say there are almost none
/// (the aftermath of an outage) — makes the planner fetch and sort every pending row on each
/// call, so draining a backlog costs O(n²). Pricing sorts out leaves the ordered index scan,
/// which stops after `n` rows.
const WALK_PENDING_IN_ORDER: &str = "BEGIN; SET LOCAL enable_sort = off";

fn uuids(ids: &[OperationId]) -> Vec<Uuid> {
    ids.iter().map(|id| *id.as_uuid()).collect()
}

fn millis(d: chrono::Duration) -> i64 {
    d.num_milliseconds()
}

impl PgStore {
    /// One operation, the common case of an enqueue per request: a plain `INSERT ... VALUES`
    /// whose plan PostgreSQL caches, where the batch statement's arrays would be planned anew
    /// on every call (about 1 ms, most of a single enqueue's cost).
    async fn insert_one(&self, op: NewOperation) -> Result<Enqueued> {
        let inserted: Option<Uuid> = sqlx::query_scalar(
            "INSERT INTO operations (id, kind, idempotency_key, payload, max_attempts,
                                     next_eligible_at, give_up_at, dependency, enqueue_params,
                                     created_at, updated_at, last_woken_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11)
             ON CONFLICT (kind, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
             RETURNING id",
        )
        .bind(op.id.as_uuid())
        .bind(&op.kind)
        .bind(&op.idempotency_key)
        .bind(&op.payload)
        .bind(op.max_attempts.map(|m| m.min(i32::MAX as u32) as i32))
        .bind(op.next_eligible_at)
        .bind(op.give_up_at)
        .bind(&op.dependency)
        .bind(&op.enqueue_params)
        .bind(op.created_at)
        .bind(op.last_woken_at)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend_error)?;
        if let Some(id) = inserted {
            return Ok(Enqueued {
                id: OperationId::from_uuid(id),
                created: true,
            });
        }
        // Only the idempotency key can have stopped the insert.
        let id: Uuid = sqlx::query_scalar(
            "SELECT id FROM operations WHERE kind = $1 AND idempotency_key = $2",
        )
        .bind(&op.kind)
        .bind(&op.idempotency_key)
        .fetch_one(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(Enqueued {
            id: OperationId::from_uuid(id),
            created: false,
        })
    }
}

#[async_trait]
impl Store for PgStore {
    async fn migrate(&self) -> Result<()> {
        MIGRATOR
            .run(&self.pool)
            .await
            .map_err(|e| Error::backend(false, e))
    }

    async fn now(&self) -> Result<DateTime<Utc>> {
        match self.now_bind() {
            Some(now) => Ok(now),
            None => sqlx::query_scalar("SELECT now()")
                .fetch_one(&self.pool)
                .await
                .map_err(backend_error),
        }
    }

    async fn operation_insert_many(&self, mut ops: Vec<NewOperation>) -> Result<Vec<Enqueued>> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        if ops.len() == 1 {
            let op = ops.pop().expect("one operation");
            return Ok(vec![self.insert_one(op).await?]);
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
        let ids: Vec<Uuid> = unique.iter().map(|&i| *ops[i].id.as_uuid()).collect();
        let kinds: Vec<String> = unique.iter().map(|&i| ops[i].kind.clone()).collect();
        let keys: Vec<Option<String>> = unique
            .iter()
            .map(|&i| ops[i].idempotency_key.clone())
            .collect();
        let payloads: Vec<Value> = unique.iter().map(|&i| ops[i].payload.clone()).collect();
        let max_attempts: Vec<Option<i32>> = unique
            .iter()
            .map(|&i| ops[i].max_attempts.map(|m| m.min(i32::MAX as u32) as i32))
            .collect();
        let eligible: Vec<DateTime<Utc>> =
            unique.iter().map(|&i| ops[i].next_eligible_at).collect();
        let give_up: Vec<Option<DateTime<Utc>>> =
            unique.iter().map(|&i| ops[i].give_up_at).collect();
        let deps: Vec<Option<String>> = unique.iter().map(|&i| ops[i].dependency.clone()).collect();
        let params: Vec<Value> = unique
            .iter()
            .map(|&i| ops[i].enqueue_params.clone())
            .collect();
        let created: Vec<DateTime<Utc>> = unique.iter().map(|&i| ops[i].created_at).collect();
        let woken: Vec<Option<DateTime<Utc>>> =
            unique.iter().map(|&i| ops[i].last_woken_at).collect();

        let rows = sqlx::query(
            "WITH input AS (
                SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::int4[],
                                     $6::timestamptz[], $7::timestamptz[], $8::text[], $9::jsonb[],
                                     $10::timestamptz[], $11::timestamptz[])
                    WITH ORDINALITY AS t(id, kind, idempotency_key, payload, max_attempts,
                                         next_eligible_at, give_up_at, dependency, enqueue_params,
                                         created_at, last_woken_at, ord)
            ), ins AS (
                INSERT INTO operations (id, kind, idempotency_key, payload, max_attempts,
                                        next_eligible_at, give_up_at, dependency, enqueue_params,
                                        created_at, updated_at, last_woken_at)
                SELECT id, kind, idempotency_key, payload, max_attempts, next_eligible_at,
                       give_up_at, dependency, enqueue_params, created_at, created_at,
                       last_woken_at
                FROM input ORDER BY ord
                ON CONFLICT (kind, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
                RETURNING id
            )
            SELECT input.ord, coalesce(ins.id, existing.id) AS id, ins.id IS NOT NULL AS created
            FROM input
            LEFT JOIN ins ON ins.id = input.id
            LEFT JOIN operations existing
                   ON ins.id IS NULL AND existing.kind = input.kind
                  AND existing.idempotency_key = input.idempotency_key
            ORDER BY input.ord",
        )
        .bind(&ids)
        .bind(&kinds)
        .bind(&keys)
        .bind(&payloads)
        .bind(&max_attempts)
        .bind(&eligible)
        .bind(&give_up)
        .bind(&deps)
        .bind(&params)
        .bind(&created)
        .bind(&woken)
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;

        let mut results: Vec<Option<Enqueued>> = vec![None; ops.len()];
        let mut missing = Vec::new();
        for r in &rows {
            let ord: i64 = r.try_get("ord").map_err(backend_error)?;
            let i = unique[(ord - 1) as usize];
            let id: Option<Uuid> = r.try_get("id").map_err(backend_error)?;
            let created: bool = r.try_get("created").map_err(backend_error)?;
            match id {
                Some(id) => {
                    results[i] = Some(Enqueued {
                        id: OperationId::from_uuid(id),
                        created,
                    })
                }
                // Another transaction committed the same key after this statement's snapshot.
                None => missing.push(i),
            }
        }
        for i in missing {
            let id: Uuid = sqlx::query_scalar(
                "SELECT id FROM operations WHERE kind = $1 AND idempotency_key = $2",
            )
            .bind(&ops[i].kind)
            .bind(&ops[i].idempotency_key)
            .fetch_one(&self.pool)
            .await
            .map_err(backend_error)?;
            results[i] = Some(Enqueued {
                id: OperationId::from_uuid(id),
                created: false,
            });
        }
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

    async fn operation_claim_by_ids(&self, params: ClaimByIdsParams) -> Result<Vec<Claimed>> {
        if params.ids.is_empty() {
            return Ok(Vec::new());
        }
        let c = &params.claimant;
        // The rows are found by id alone (the primary key, whatever the statistics say), locked,
        // and only then checked: a condition on status beside the ids would let a planner with a
        // stale estimate scan every pending row instead.
        let rows = sqlx::query(concat!(
            "WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
            locked AS MATERIALIZED (
                SELECT id, status, next_eligible_at, give_up_at, kind, last_failure_class,
                       dependency
                FROM operations WHERE id = ANY($2)
                FOR UPDATE SKIP LOCKED
            ),
            picked AS (
                SELECT id AS pid FROM locked, now
                WHERE status = 'pending' AND next_eligible_at <= now.t
                  AND (give_up_at IS NULL OR give_up_at >= now.t)
                  AND (cardinality($6::text[]) = 0 OR kind = ANY($6))",
            not_paused!("locked"),
            ")
            UPDATE operations o
            SET status = 'running', attempt = o.attempt + 1, claim_token = gen_random_uuid(),
                lease_until = now.t + $3::int8 * interval '1 millisecond', claimed_at = now.t,
                worker_id = $4, code_version = $5, updated_at = now.t
            FROM picked, now
            WHERE o.id = picked.pid
            RETURNING ",
            operation_columns!()
        ))
        .bind(self.now_bind())
        .bind(uuids(&params.ids))
        .bind(millis(c.lease))
        .bind(&c.worker_id)
        .bind(&c.code_version)
        .bind(&params.kinds)
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        rows.iter().map(row::operation).collect()
    }

    async fn operation_claim_eligible(&self, params: ClaimEligibleParams) -> Result<Vec<Claimed>> {
        if params.limit == 0 {
            return Ok(Vec::new());
        }
        let c = &params.claimant;
        let mut tx = self
            .pool
            .begin_with(WALK_PENDING_IN_ORDER)
            .await
            .map_err(backend_error)?;
        let rows = sqlx::query(concat!(
            "WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
            picked AS (
                SELECT id AS pid FROM operations
                WHERE status = 'pending' AND next_eligible_at <= coalesce($1::timestamptz, now())
                  AND (give_up_at IS NULL OR give_up_at >= coalesce($1::timestamptz, now()))
                  AND (cardinality($6::text[]) = 0 OR kind = ANY($6))",
            not_paused!("operations"),
            "ORDER BY next_eligible_at, id
                LIMIT $2
                FOR UPDATE OF operations SKIP LOCKED
            )
            UPDATE operations o
            SET status = 'running', attempt = o.attempt + 1, claim_token = gen_random_uuid(),
                lease_until = now.t + $3::int8 * interval '1 millisecond', claimed_at = now.t,
                worker_id = $4, code_version = $5, updated_at = now.t
            FROM picked, now
            WHERE o.id = picked.pid
            RETURNING ",
            operation_columns!()
        ))
        .bind(self.now_bind())
        .bind(i64::from(params.limit))
        .bind(millis(c.lease))
        .bind(&c.worker_id)
        .bind(&c.code_version)
        .bind(&params.kinds)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
        tx.commit().await.map_err(backend_error)?;
        let mut claimed: Vec<Operation> = rows.iter().map(row::operation).collect::<Result<_>>()?;
        claimed.sort_by_key(|o| (o.next_eligible_at, o.id));
        Ok(claimed)
    }

    async fn operation_heartbeat(&self, params: HeartbeatParams) -> Result<DateTime<Utc>> {
        let lease: Option<DateTime<Utc>> = sqlx::query_scalar(
            "UPDATE operations
             SET lease_until = coalesce($1::timestamptz, now()) + $4::int8 * interval '1 millisecond'
             WHERE id = $2 AND claim_token = $3 AND status = 'running'
             RETURNING lease_until",
        )
        .bind(self.now_bind())
        .bind(params.id.as_uuid())
        .bind(params.claim_token)
        .bind(millis(params.lease))
        .fetch_optional(&self.pool)
        .await
        .map_err(backend_error)?;
        lease.ok_or(Error::StaleClaim { id: params.id })
    }

    async fn operation_complete_many(
        &self,
        params: Vec<CompleteParams>,
    ) -> Result<Vec<CompleteResult>> {
        if params.is_empty() {
            return Ok(Vec::new());
        }
        let n = params.len();
        let mut ids = Vec::with_capacity(n);
        let mut tokens = Vec::with_capacity(n);
        let mut statuses = Vec::with_capacity(n);
        let mut eligible: Vec<Option<DateTime<Utc>>> = Vec::with_capacity(n);
        let mut classes: Vec<Option<&str>> = Vec::with_capacity(n);
        let mut errors: Vec<Option<Value>> = Vec::with_capacity(n);
        let mut reasons: Vec<Option<&str>> = Vec::with_capacity(n);
        let mut refunds = Vec::with_capacity(n);
        let mut remote_ids: Vec<Option<&str>> = Vec::with_capacity(n);
        let mut outcomes = Vec::with_capacity(n);
        for p in &params {
            let t = &p.transition;
            ids.push(*p.id.as_uuid());
            tokens.push(p.claim_token);
            statuses.push(t.status().as_str());
            eligible.push(t.next_eligible_at());
            classes.push(t.failure().map(|(c, _)| c.as_str()));
            errors.push(
                t.failure()
                    .map(|(_, e)| serde_json::to_value(e))
                    .transpose()
                    .map_err(|e| Error::backend(false, e))?,
            );
            reasons.push(t.terminal_reason().map(|r| r.as_str()));
            refunds.push(t.refunds_attempt());
            remote_ids.push(t.remote_id());
            outcomes.push(t.attempt_outcome().as_str());
        }
        let applied: HashSet<(Uuid, Uuid)> = sqlx::query_as::<_, (Uuid, Uuid)>(
            "WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
            input AS (
                SELECT * FROM UNNEST($2::uuid[], $3::uuid[], $4::text[], $5::timestamptz[],
                                     $6::text[], $7::jsonb[], $8::text[], $9::bool[], $10::text[],
                                     $11::text[])
                    AS t(id, token, status, next_eligible_at, failure_class, error,
                         terminal_reason, refund, remote_id, outcome)
            ), done AS (
                UPDATE operations o
                SET status = i.status,
                    attempt = o.attempt - CASE WHEN i.refund THEN 1 ELSE 0 END,
                    next_eligible_at = coalesce(i.next_eligible_at, o.next_eligible_at),
                    last_failure_class = coalesce(i.failure_class, o.last_failure_class),
                    last_error = coalesce(i.error, o.last_error),
                    terminal_reason = i.terminal_reason,
                    remote_id = coalesce(i.remote_id, o.remote_id),
                    terminal_at = CASE WHEN i.status IN ('succeeded', 'dead', 'cancelled')
                                       THEN now.t END,
                    claim_token = NULL, lease_until = NULL, vanished_streak = 0,
                    updated_at = now.t
                FROM input i, now
                WHERE o.id = i.id AND o.claim_token = i.token AND o.status = 'running'
                RETURNING o.id, i.token, o.attempt + CASE WHEN i.refund THEN 1 ELSE 0 END AS attempt,
                          o.claimed_at, o.worker_id, o.code_version, i.outcome, i.failure_class,
                          i.error
            ), history AS (
                INSERT INTO operation_attempts (operation_id, attempt, claimed_at, ended_at,
                                                outcome, failure_class, error, worker_id,
                                                code_version)
                SELECT done.id, done.attempt, done.claimed_at, now.t, done.outcome,
                       done.failure_class, done.error, done.worker_id, done.code_version
                FROM done, now
            )
            SELECT id, token FROM done",
        )
        .bind(self.now_bind())
        .bind(&ids)
        .bind(&tokens)
        .bind(&statuses)
        .bind(&eligible)
        .bind(&classes)
        .bind(&errors)
        .bind(&reasons)
        .bind(&refunds)
        .bind(&remote_ids)
        .bind(&outcomes)
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?
        .into_iter()
        .collect();
        Ok(params
            .iter()
            .map(|p| {
                if applied.contains(&(*p.id.as_uuid(), p.claim_token)) {
                    CompleteResult::Applied
                } else {
                    CompleteResult::Stale
                }
            })
            .collect())
    }

    async fn operation_rescue_expired(&self, params: RescueParams) -> Result<RescueReport> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
            expired AS (
                SELECT id AS pid FROM operations, now
                WHERE status = 'running' AND lease_until < now.t
                ORDER BY lease_until
                LIMIT $2
                FOR UPDATE OF operations SKIP LOCKED
            ), decided AS (
                SELECT o.id AS did,
                       CASE WHEN o.vanished_streak + 1 >= $3 THEN 'crash_loop'
                            WHEN o.max_attempts IS NOT NULL AND o.attempt >= o.max_attempts
                                 THEN 'attempts_exhausted'
                            WHEN o.give_up_at IS NOT NULL
                                 AND o.give_up_at < now.t + $4::int8 * interval '1 millisecond'
                                 THEN 'deadline_passed'
                       END AS reason
                FROM operations o JOIN expired ON o.id = expired.pid, now
            ), done AS (
                UPDATE operations o
                SET status = CASE WHEN d.reason IS NULL THEN 'pending' ELSE 'dead' END,
                    terminal_reason = d.reason,
                    terminal_at = CASE WHEN d.reason IS NOT NULL THEN now.t END,
                    next_eligible_at = CASE WHEN d.reason IS NULL
                        THEN now.t + $4::int8 * interval '1 millisecond'
                        ELSE o.next_eligible_at END,
                    vanished_streak = o.vanished_streak + 1,
                    last_error = jsonb_build_object(
                        'summary', 'the lease expired with no outcome: the attempt vanished '
                                   || '(worker crashed, was killed, or ran past its lease)',
                        'decision', CASE d.reason
                            WHEN 'crash_loop' THEN 'dead: ' || (o.vanished_streak + 1)
                                 || ' attempts in a row vanished (crash loop)'
                            WHEN 'attempts_exhausted' THEN 'dead: attempts exhausted'
                            WHEN 'deadline_passed' THEN 'dead: the deadline passed'
                            ELSE 'retry' END,
                        'next_action', CASE WHEN d.reason IS NULL
                            THEN 'none: retried automatically'
                            ELSE 'inspect the input for what kills or stalls the worker, then re-drive'
                            END),
                    claim_token = NULL, lease_until = NULL, updated_at = now.t
                FROM decided d, now
                WHERE o.id = d.did
                RETURNING o.id, o.attempt, o.claimed_at, o.worker_id, o.code_version, o.status,
                          o.last_error
            ), history AS (
                INSERT INTO operation_attempts (operation_id, attempt, claimed_at, ended_at,
                                                outcome, error, worker_id, code_version)
                SELECT done.id, done.attempt, done.claimed_at, now.t, 'vanished',
                       done.last_error, done.worker_id, done.code_version
                FROM done, now
            )
            SELECT status FROM done",
        )
        .bind(self.now_bind())
        .bind(i64::from(params.limit))
        .bind(i64::from(params.vanish_limit.max(1)))
        .bind(millis(params.retry_delay))
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        let dead = rows
            .iter()
            .filter(|(s,)| s == Status::Dead.as_str())
            .count() as u64;
        Ok(RescueReport {
            vanished: rows.len() as u64,
            retried: rows.len() as u64 - dead,
            dead,
        })
    }

    async fn operation_end_past_deadline(&self, limit: u32) -> Result<u64> {
        let done = sqlx::query(
            "WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
            picked AS (
                SELECT id AS pid FROM operations, now
                WHERE status IN ('pending', 'held') AND give_up_at < now.t
                ORDER BY give_up_at
                LIMIT $2
                FOR UPDATE OF operations SKIP LOCKED
            )
            UPDATE operations o
            SET status = 'dead', terminal_reason = 'deadline_passed', terminal_at = now.t,
                updated_at = now.t,
                last_error = jsonb_build_object('summary', 'the deadline passed before any attempt')
                    || coalesce(o.last_error, '{}'::jsonb)
                    || jsonb_build_object(
                        'decision', 'dead: the deadline passed before the next attempt',
                        'next_action', 're-drive with a later deadline if the result is still useful')
            FROM picked, now
            WHERE o.id = picked.pid",
        )
        .bind(self.now_bind())
        .bind(i64::from(limit))
        .execute(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(done.rows_affected())
    }

    async fn operation_cancel(&self, ids: Vec<OperationId>) -> Result<Vec<OperationId>> {
        let rows: Vec<Uuid> = sqlx::query_scalar(
            "WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t)
            UPDATE operations o
            SET status = 'cancelled', terminal_reason = 'operator', terminal_at = now.t,
                updated_at = now.t
            FROM now
            WHERE o.id = ANY($2) AND o.status IN ('pending', 'held', 'reconciling')
            RETURNING o.id",
        )
        .bind(self.now_bind())
        .bind(uuids(&ids))
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(rows.into_iter().map(OperationId::from_uuid).collect())
    }

    async fn operation_mark_woken(&self, params: MarkWokenParams) -> Result<()> {
        sqlx::query(
            "UPDATE operations SET last_woken_at = coalesce($1::timestamptz, now())
             WHERE id = ANY($2)",
        )
        .bind(self.now_bind())
        .bind(uuids(&params.ids))
        .execute(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(())
    }

    async fn operation_remote_id_set(&self, params: RemoteIdSetParams) -> Result<()> {
        let done = sqlx::query(
            "UPDATE operations SET remote_id = $3, updated_at = coalesce($1::timestamptz, now())
             WHERE id = $2 AND claim_token = $4 AND status = 'running'",
        )
        .bind(self.now_bind())
        .bind(params.id.as_uuid())
        .bind(&params.remote_id)
        .bind(params.claim_token)
        .execute(&self.pool)
        .await
        .map_err(backend_error)?;
        if done.rows_affected() == 1 {
            Ok(())
        } else {
            Err(Error::StaleClaim { id: params.id })
        }
    }

    async fn operation_steps_get(&self, id: OperationId) -> Result<Vec<Step>> {
        let rows: Vec<(String, Value, i32, DateTime<Utc>)> = sqlx::query_as(
            "SELECT name, output, attempt, completed_at FROM operation_steps
             WHERE operation_id = $1 ORDER BY completed_at, name",
        )
        .bind(id.as_uuid())
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(rows
            .into_iter()
            .map(|(name, output, attempt, completed_at)| Step {
                name,
                output,
                attempt: u32::try_from(attempt).unwrap_or(0),
                completed_at,
            })
            .collect())
    }

    async fn operation_step_save(&self, params: StepSaveParams) -> Result<()> {
        // The claim check and the insert are one statement: a stale claimant saves nothing.
        let claim_held: Option<bool> = sqlx::query_scalar(
            "WITH claim AS (
                SELECT id, attempt FROM operations
                WHERE id = $2 AND claim_token = $5 AND status = 'running'
            ), saved AS (
                INSERT INTO operation_steps (operation_id, name, output, attempt, completed_at)
                SELECT id, $3, $4, attempt, coalesce($1::timestamptz, now()) FROM claim
                ON CONFLICT (operation_id, name) DO NOTHING
            )
            SELECT true FROM claim",
        )
        .bind(self.now_bind())
        .bind(params.id.as_uuid())
        .bind(&params.name)
        .bind(&params.output)
        .bind(params.claim_token)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend_error)?;
        claim_held
            .map(|_| ())
            .ok_or(Error::StaleClaim { id: params.id })
    }

    async fn operation_wake_due(&self, params: WakeDueParams) -> Result<Vec<OperationId>> {
        let mut tx = self
            .pool
            .begin_with(WALK_PENDING_IN_ORDER)
            .await
            .map_err(backend_error)?;
        // One scheduler at a time per schema: the others find the lock taken and publish nothing
        // this round, so several scheduler processes do not multiply wake-ups.
        let leader: bool = sqlx::query_scalar(
            "SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || '.oprec.scheduler'))",
        )
        .fetch_one(&mut *tx)
        .await
        .map_err(backend_error)?;
        if !leader {
            return Ok(Vec::new());
        }
        let ids: Vec<Uuid> = sqlx::query_scalar(concat!(
            "WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
            due AS (
                SELECT id AS pid FROM operations
                WHERE status = 'pending' AND next_eligible_at <= coalesce($1::timestamptz, now())
                  AND (give_up_at IS NULL OR give_up_at >= coalesce($1::timestamptz, now()))
                  AND (last_woken_at IS NULL OR last_woken_at < next_eligible_at
                       OR last_woken_at < coalesce($1::timestamptz, now())
                                          - $2::int8 * interval '1 millisecond')",
            not_paused!("operations"),
            "ORDER BY next_eligible_at, id
                LIMIT $3
                FOR UPDATE OF operations SKIP LOCKED
            )
            UPDATE operations o SET last_woken_at = now.t
            FROM due, now WHERE o.id = due.pid
            RETURNING o.id"
        ))
        .bind(self.now_bind())
        .bind(millis(params.rewake_after))
        .bind(i64::from(params.limit))
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
        tx.commit().await.map_err(backend_error)?;
        Ok(ids.into_iter().map(OperationId::from_uuid).collect())
    }

    async fn operation_get(&self, id: OperationId) -> Result<Option<OperationDetail>> {
        let Some(op) = sqlx::query(concat!(
            "SELECT ",
            operation_columns!(),
            " FROM operations WHERE id = $1"
        ))
        .bind(id.as_uuid())
        .fetch_optional(&self.pool)
        .await
        .map_err(backend_error)?
        else {
            return Ok(None);
        };
        let attempts = sqlx::query(
            "SELECT attempt, claimed_at, ended_at, outcome, failure_class, error, worker_id,
                    code_version
             FROM operation_attempts WHERE operation_id = $1 ORDER BY id",
        )
        .bind(id.as_uuid())
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(Some(OperationDetail {
            operation: row::operation(&op)?,
            attempts: attempts.iter().map(row::attempt).collect::<Result<_>>()?,
        }))
    }

    async fn operation_list(&self, params: ListParams) -> Result<Vec<Operation>> {
        let mut q: QueryBuilder<Postgres> = QueryBuilder::new(concat!(
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
            // strpos, not LIKE: the operator's text is literal, `%` and `_` included.
            q.push(" AND strpos(lower(last_error->>'summary'), lower(")
                .push_bind(text)
                .push(")) > 0");
        }
        if let Some(t) = params.created_since {
            q.push(" AND created_at >= ").push_bind(t);
        }
        if let Some(t) = params.created_until {
            q.push(" AND created_at < ").push_bind(t);
        }
        let (cmp, order) = if params.newest_first {
            (" AND id < ", " ORDER BY id DESC LIMIT ")
        } else {
            (" AND id > ", " ORDER BY id LIMIT ")
        };
        if let Some(after) = params.after {
            q.push(cmp).push_bind(*after.as_uuid());
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

    async fn operation_count(&self) -> Result<Vec<CountRow>> {
        let rows: Vec<(String, String, Option<String>, i64)> = sqlx::query_as(
            "SELECT status, kind, last_failure_class, count(*)
             FROM operations GROUP BY status, kind, last_failure_class
             ORDER BY status, kind, last_failure_class",
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
                    count: count as u64,
                })
            })
            .collect()
    }
}
