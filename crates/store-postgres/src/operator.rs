//! The operator's side: controls, re-drive, quarantine, reconciliation, stats, audit, alerts.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use oprec_core::operator::{
    ActivityMinute, AuditEntry, AuditRecord, Control, ControlScope, ControlSetParams,
    OldestEligible, OperationFilter, PreviewGroup, PreviewSample, QuarantineParams,
    ReconcileDueParams, RedriveMode, RedriveParams, RedrivePreview, Redriven, ReleaseParams,
    Resolution, ResolveParams, StatsReport,
};
use oprec_core::{
    Error, Operation, OperationId, OperatorStore, Result, Status, UnhandledKind, WorkerBeatParams,
    WorkerRecord,
};
use serde_json::Value;
use sqlx::{Postgres, QueryBuilder, Row};
use uuid::Uuid;

use crate::row::{self, operation_columns};
use crate::{PgStore, backend_error};

/// Appends `AND ...` for every narrowing field of `f`, on the table aliased `o`.
fn push_filter(q: &mut QueryBuilder<Postgres>, f: &OperationFilter) {
    if !f.ids.is_empty() {
        let ids: Vec<Uuid> = f.ids.iter().map(|i| *i.as_uuid()).collect();
        q.push(" AND o.id = ANY(").push_bind(ids).push(")");
    }
    if !f.kinds.is_empty() {
        q.push(" AND o.kind = ANY(")
            .push_bind(f.kinds.clone())
            .push(")");
    }
    if !f.classes.is_empty() {
        let v: Vec<&'static str> = f.classes.iter().map(|c| c.as_str()).collect();
        q.push(" AND o.last_failure_class = ANY(")
            .push_bind(v)
            .push(")");
    }
    if !f.reasons.is_empty() {
        let v: Vec<&'static str> = f.reasons.iter().map(|c| c.as_str()).collect();
        q.push(" AND o.terminal_reason = ANY(")
            .push_bind(v)
            .push(")");
    }
    if let Some(d) = &f.dependency {
        q.push(" AND o.dependency = ").push_bind(d.clone());
    }
    if let Some(text) = &f.error_contains {
        // strpos, not LIKE: the operator's text is literal, `%` and `_` included.
        q.push(" AND strpos(lower(o.last_error->>'summary'), lower(")
            .push_bind(text.clone())
            .push(")) > 0");
    }
    if let Some(t) = f.terminal_since {
        q.push(" AND o.terminal_at >= ").push_bind(t);
    }
    if let Some(t) = f.terminal_until {
        q.push(" AND o.terminal_at < ").push_bind(t);
    }
}

fn terminal_statuses(include_cancelled: bool) -> Vec<&'static str> {
    if include_cancelled {
        vec!["dead", "cancelled"]
    } else {
        vec!["dead"]
    }
}

/// Terminal matches not already re-driven as new.
fn push_redrivable(q: &mut QueryBuilder<Postgres>, f: &OperationFilter, include_cancelled: bool) {
    q.push(" o.status = ANY(")
        .push_bind(terminal_statuses(include_cancelled))
        .push(") AND NOT EXISTS (SELECT 1 FROM operations c WHERE c.redrive_of = o.id)");
    push_filter(q, f);
}

fn count_map(rows: Vec<(String, i64)>) -> BTreeMap<String, u64> {
    rows.into_iter().map(|(k, n)| (k, n as u64)).collect()
}

fn parse<T: std::str::FromStr>(s: &str) -> Result<T>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    s.parse().map_err(|e| Error::backend(false, e))
}

impl PgStore {
    async fn now(&self) -> Result<DateTime<Utc>> {
        oprec_core::Store::now(self).await
    }

    async fn grouped(
        &self,
        sql: &'static str,
        now: DateTime<Utc>,
    ) -> Result<BTreeMap<String, u64>> {
        let rows: Vec<(String, i64)> = sqlx::query_as(sql)
            .bind(now)
            .fetch_all(&self.pool)
            .await
            .map_err(backend_error)?;
        Ok(count_map(rows))
    }
}

#[async_trait]
impl OperatorStore for PgStore {
    async fn control_set(&self, p: ControlSetParams) -> Result<Control> {
        let now = self.now().await?;
        sqlx::query(
            "INSERT INTO controls (scope, value, action, until, reason, actor, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (scope, value) DO UPDATE SET action = excluded.action,
                 until = excluded.until, reason = excluded.reason, actor = excluded.actor,
                 created_at = excluded.created_at",
        )
        .bind(p.scope.as_str())
        .bind(&p.value)
        .bind(p.action.as_str())
        .bind(p.until)
        .bind(&p.reason)
        .bind(&p.actor)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(Control {
            scope: p.scope,
            value: p.value,
            action: p.action,
            until: p.until,
            reason: p.reason,
            actor: p.actor,
            created_at: now,
        })
    }

    async fn control_remove(&self, scope: ControlScope, value: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM controls WHERE scope = $1 AND value = $2")
            .bind(scope.as_str())
            .bind(value)
            .execute(&self.pool)
            .await
            .map_err(backend_error)?;
        Ok(done.rows_affected() > 0)
    }

    async fn control_list(&self) -> Result<Vec<Control>> {
        let rows = sqlx::query(
            "SELECT scope, value, action, until, reason, actor, created_at FROM controls
             WHERE until IS NULL OR until > $1 ORDER BY scope, value",
        )
        .bind(self.now().await?)
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        rows.iter()
            .map(|r| {
                Ok(Control {
                    scope: parse(r.try_get::<&str, _>("scope").map_err(backend_error)?)?,
                    value: r.try_get("value").map_err(backend_error)?,
                    action: parse(r.try_get::<&str, _>("action").map_err(backend_error)?)?,
                    until: r.try_get("until").map_err(backend_error)?,
                    reason: r.try_get("reason").map_err(backend_error)?,
                    actor: r.try_get("actor").map_err(backend_error)?,
                    created_at: r.try_get("created_at").map_err(backend_error)?,
                })
            })
            .collect()
    }

    async fn operation_count_matching(
        &self,
        filter: &OperationFilter,
    ) -> Result<BTreeMap<Status, u64>> {
        let mut q = QueryBuilder::new("SELECT o.status, count(*) FROM operations o WHERE TRUE");
        push_filter(&mut q, filter);
        q.push(" GROUP BY 1");
        let rows: Vec<(String, i64)> = q
            .build_query_as()
            .fetch_all(&self.pool)
            .await
            .map_err(backend_error)?;
        rows.into_iter()
            .map(|(status, n)| Ok((parse(&status)?, n as u64)))
            .collect()
    }

    async fn redrive_preview(
        &self,
        filter: &OperationFilter,
        include_cancelled: bool,
        samples: u32,
    ) -> Result<RedrivePreview> {
        let mut q = QueryBuilder::new(
            "SELECT o.kind, o.last_failure_class, o.terminal_reason, count(*) FROM operations o WHERE",
        );
        push_redrivable(&mut q, filter, include_cancelled);
        q.push(" GROUP BY 1, 2, 3 ORDER BY 4 DESC, 1");
        let rows: Vec<(String, Option<String>, Option<String>, i64)> = q
            .build_query_as()
            .fetch_all(&self.pool)
            .await
            .map_err(backend_error)?;
        let mut preview = RedrivePreview::default();
        for (kind, class, reason, n) in rows {
            preview.matched += n as u64;
            preview.groups.push(PreviewGroup {
                kind,
                class: class.as_deref().map(parse).transpose()?,
                reason: reason.as_deref().map(parse).transpose()?,
                count: n as u64,
            });
        }
        let mut q = QueryBuilder::new(
            "SELECT count(*) FROM operations o
             WHERE o.status IN ('pending', 'running', 'reconciling', 'held')",
        );
        push_filter(&mut q, filter);
        let n: i64 = q
            .build_query_scalar()
            .fetch_one(&self.pool)
            .await
            .map_err(backend_error)?;
        preview.not_terminal = n as u64;
        let mut q = QueryBuilder::new(
            "SELECT o.id, o.kind, o.last_error->>'summary' FROM operations o WHERE",
        );
        push_redrivable(&mut q, filter, include_cancelled);
        q.push(" ORDER BY o.terminal_at, o.id LIMIT ")
            .push_bind(i64::from(samples));
        let rows: Vec<(Uuid, String, Option<String>)> = q
            .build_query_as()
            .fetch_all(&self.pool)
            .await
            .map_err(backend_error)?;
        preview.samples = rows
            .into_iter()
            .map(|(id, kind, error)| PreviewSample {
                id: OperationId::from_uuid(id),
                kind,
                error,
            })
            .collect();
        Ok(preview)
    }

    async fn operation_redrive(&self, p: RedriveParams) -> Result<Vec<Redriven>> {
        let now = self.now().await?;
        let mut tx = self.pool.begin().await.map_err(backend_error)?;
        let mut q = QueryBuilder::new("SELECT o.id FROM operations o WHERE");
        push_redrivable(&mut q, &p.filter, p.include_cancelled);
        q.push(" ORDER BY o.terminal_at, o.id LIMIT ")
            .push_bind(i64::from(p.limit))
            .push(" FOR UPDATE OF o SKIP LOCKED");
        let ids: Vec<Uuid> = q
            .build_query_scalar()
            .fetch_all(&mut *tx)
            .await
            .map_err(backend_error)?;
        let ats: Vec<DateTime<Utc>> = (0..ids.len())
            .map(|i| p.start_at + p.spacing * i as i32)
            .collect();
        let rows: Vec<(Uuid, Uuid, DateTime<Utc>)> = match p.mode {
            RedriveMode::InPlace { extend_deadline } => sqlx::query_as(
                "UPDATE operations o
                 SET status = 'pending', attempt = 0, next_eligible_at = i.at,
                     terminal_reason = NULL, terminal_at = NULL, vanished_streak = 0,
                     reconcile_attempts = 0, alerted_at = NULL, last_woken_at = NULL,
                     claim_token = NULL, lease_until = NULL,
                     redrive_count = o.redrive_count + 1, updated_at = $3,
                     give_up_at = CASE
                         WHEN $4::int8 IS NOT NULL THEN i.at + $4::int8 * interval '1 millisecond'
                         WHEN o.give_up_at < i.at THEN NULL
                         ELSE o.give_up_at END
                 FROM UNNEST($1::uuid[], $2::timestamptz[]) AS i(id, at)
                 WHERE o.id = i.id
                 RETURNING o.id, o.id, i.at",
            )
            .bind(&ids)
            .bind(&ats)
            .bind(now)
            .bind(extend_deadline.map(|d| d.num_milliseconds()))
            .fetch_all(&mut *tx)
            .await
            .map_err(backend_error)?,
            RedriveMode::AsNew { deadline } => {
                let new_ids: Vec<Uuid> =
                    ids.iter().map(|_| *OperationId::new().as_uuid()).collect();
                sqlx::query_as(
                    "INSERT INTO operations (id, kind, payload, max_attempts, next_eligible_at,
                         give_up_at, dependency, enqueue_params, redrive_of, redrive_count,
                         created_at, updated_at)
                     SELECT i.new_id, o.kind, o.payload, o.max_attempts, i.at,
                            $4 + $5::int8 * interval '1 millisecond', o.dependency,
                            o.enqueue_params, o.id, o.redrive_count + 1, $4, $4
                     FROM UNNEST($1::uuid[], $2::uuid[], $3::timestamptz[]) AS i(id, new_id, at)
                     JOIN operations o ON o.id = i.id
                     RETURNING redrive_of, id, next_eligible_at",
                )
                .bind(&ids)
                .bind(&new_ids)
                .bind(&ats)
                .bind(now)
                .bind(deadline.map(|d| d.num_milliseconds()))
                .fetch_all(&mut *tx)
                .await
                .map_err(backend_error)?
            }
        };
        tx.commit().await.map_err(backend_error)?;
        let mut out: Vec<Redriven> = rows
            .into_iter()
            .map(|(from, to, at)| Redriven {
                from: OperationId::from_uuid(from),
                to: OperationId::from_uuid(to),
                next_eligible_at: at,
            })
            .collect();
        out.sort_by_key(|r| r.next_eligible_at);
        Ok(out)
    }

    async fn operation_quarantine(&self, p: QuarantineParams) -> Result<u64> {
        let mut q = QueryBuilder::new(
            "WITH picked AS (SELECT o.id AS pid FROM operations o WHERE o.status = 'pending'",
        );
        push_filter(&mut q, &p.filter);
        q.push(" ORDER BY o.id LIMIT ")
            .push_bind(i64::from(p.limit))
            .push(" FOR UPDATE OF o SKIP LOCKED) UPDATE operations o SET status = 'held', updated_at = ")
            .push_bind(self.now().await?)
            .push(
                ", last_error = jsonb_build_object('summary', 'quarantined')
                   || coalesce(o.last_error, '{}'::jsonb)
                   || jsonb_build_object('decision', 'quarantined by ' || ",
            )
            .push_bind(p.actor)
            .push(" || ': ' || ")
            .push_bind(p.reason)
            .push(
                ", 'next_action', 'repair the input or the handler, then release it (oprec release)')
                 FROM picked WHERE o.id = picked.pid",
            );
        let done = q.build().execute(&self.pool).await.map_err(backend_error)?;
        Ok(done.rows_affected())
    }

    async fn operation_release(&self, p: ReleaseParams) -> Result<u64> {
        let now = self.now().await?;
        let mut q = QueryBuilder::new(
            "WITH picked AS (SELECT o.id AS pid FROM operations o WHERE o.status = 'held'",
        );
        push_filter(&mut q, &p.filter);
        q.push(" ORDER BY o.id LIMIT ")
            .push_bind(i64::from(p.limit))
            .push(" FOR UPDATE OF o SKIP LOCKED) UPDATE operations o SET status = 'pending', next_eligible_at = ")
            .push_bind(now)
            .push(", last_woken_at = NULL, updated_at = ")
            .push_bind(now)
            .push(" FROM picked WHERE o.id = picked.pid");
        let done = q.build().execute(&self.pool).await.map_err(backend_error)?;
        Ok(done.rows_affected())
    }

    async fn operation_reconcile_due(&self, p: ReconcileDueParams) -> Result<Vec<Operation>> {
        let rows = sqlx::query(concat!(
            "WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
            due AS (
                SELECT id AS pid FROM operations, now
                WHERE status = 'reconciling' AND next_eligible_at <= now.t
                  AND (cardinality($2::text[]) = 0 OR kind = ANY($2))
                ORDER BY next_eligible_at LIMIT $3
                FOR UPDATE OF operations SKIP LOCKED
            )
            UPDATE operations o
            SET next_eligible_at = now.t + $4::int8 * interval '1 millisecond',
                reconcile_attempts = o.reconcile_attempts + 1, updated_at = now.t
            FROM due, now WHERE o.id = due.pid
            RETURNING ",
            operation_columns!()
        ))
        .bind(self.now_bind())
        .bind(&p.kinds)
        .bind(i64::from(p.limit))
        .bind(p.lease.num_milliseconds())
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        rows.iter().map(row::operation).collect()
    }

    async fn operation_reconcile_resolve(&self, p: ResolveParams) -> Result<Status> {
        let now = self.now().await?;
        let (remote_id, retry_at, kind) = match &p.resolution {
            Resolution::Applied { remote_id } => (remote_id.clone(), None, "applied"),
            Resolution::NotApplied => (None, None, "not_applied"),
            Resolution::StillUnknown { retry_at } => (None, Some(*retry_at), "unknown"),
        };
        let status: Option<String> = sqlx::query_scalar(
            "UPDATE operations o SET
                status = CASE $3
                    WHEN 'applied' THEN 'succeeded'
                    WHEN 'not_applied' THEN CASE WHEN o.max_attempts IS NOT NULL
                        AND o.attempt >= o.max_attempts THEN 'dead' ELSE 'pending' END
                    ELSE 'reconciling' END,
                terminal_reason = CASE WHEN $3 = 'not_applied' AND o.max_attempts IS NOT NULL
                    AND o.attempt >= o.max_attempts THEN 'attempts_exhausted' END,
                terminal_at = CASE WHEN $3 = 'applied' OR ($3 = 'not_applied'
                    AND o.max_attempts IS NOT NULL AND o.attempt >= o.max_attempts) THEN $2 END,
                remote_id = coalesce($4, o.remote_id),
                next_eligible_at = CASE $3 WHEN 'unknown' THEN $5 ELSE $2 END,
                last_woken_at = NULL,
                last_error = coalesce(o.last_error, '{}'::jsonb) || jsonb_build_object(
                    'decision', 'reconciled by ' || $6 || ': ' || CASE $3
                        WHEN 'applied' THEN 'the effect was applied'
                        WHEN 'not_applied' THEN CASE WHEN o.max_attempts IS NOT NULL
                            AND o.attempt >= o.max_attempts
                            THEN 'the effect was not applied, and the attempts are used up'
                            ELSE 'the effect was not applied; safe to retry' END
                        ELSE 'still unknown' END),
                updated_at = $2
             WHERE o.id = $1 AND o.status = 'reconciling'
             RETURNING o.status",
        )
        .bind(p.id.as_uuid())
        .bind(now)
        .bind(kind)
        .bind(remote_id)
        .bind(retry_at)
        .bind(&p.actor)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend_error)?;
        match status {
            Some(s) => parse(&s),
            None => {
                let current: Option<String> =
                    sqlx::query_scalar("SELECT status FROM operations WHERE id = $1")
                        .bind(p.id.as_uuid())
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
    }

    async fn stats(&self) -> Result<StatsReport> {
        let now = self.now().await?;
        let mut r = StatsReport {
            at: Some(now),
            ..StatsReport::default()
        };
        r.by_status = self
            .grouped(
                "SELECT status, count(*) FROM operations WHERE $1::timestamptz IS NOT NULL GROUP BY 1",
                now,
            )
            .await?;
        r.reconciling = r.by_status.get("reconciling").copied().unwrap_or(0);
        r.pending_by_class = self
            .grouped(
                "SELECT coalesce(last_failure_class, 'none'), count(*) FROM operations
                 WHERE status = 'pending' AND $1::timestamptz IS NOT NULL GROUP BY 1",
                now,
            )
            .await?;
        r.dead_by_kind = self
            .grouped(
                "SELECT kind, count(*) FROM operations
                 WHERE status = 'dead' AND $1::timestamptz IS NOT NULL GROUP BY 1",
                now,
            )
            .await?;
        r.dead_last_hour_by_kind = self
            .grouped(
                "SELECT kind, count(*) FROM operations
                 WHERE status = 'dead' AND terminal_at >= $1 - interval '1 hour' GROUP BY 1",
                now,
            )
            .await?;
        r.dead_last_day_by_kind = self
            .grouped(
                "SELECT kind, count(*) FROM operations
                 WHERE status = 'dead' AND terminal_at >= $1 - interval '1 day' GROUP BY 1",
                now,
            )
            .await?;
        r.dead_last_day_by_code_version = self
            .grouped(
                "SELECT coalesce(code_version, 'unknown'), count(*) FROM operations
                 WHERE status = 'dead' AND terminal_at >= $1 - interval '1 day' GROUP BY 1",
                now,
            )
            .await?;
        r.attempts_last_hour_by_dependency = self
            .grouped(
                "SELECT coalesce(o.dependency, 'none'), count(*)
                 FROM operation_attempts a JOIN operations o ON o.id = a.operation_id
                 WHERE a.ended_at >= $1 - interval '1 hour' AND a.outcome <> 'snoozed'
                 GROUP BY 1",
                now,
            )
            .await?;
        r.backlog_by_age = self
            .grouped(
                "SELECT CASE WHEN created_at >= $1 - interval '1 hour' THEN '<1h'
                             WHEN created_at >= $1 - interval '1 day' THEN '1h-1d'
                             WHEN created_at >= $1 - interval '7 days' THEN '1d-7d'
                             ELSE '>7d' END, count(*)
                 FROM operations WHERE status IN ('pending', 'running', 'reconciling', 'held')
                 GROUP BY 1",
                now,
            )
            .await?;
        let (attempts, successes): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM operation_attempts a JOIN operations o
                     ON o.id = a.operation_id WHERE o.status = 'succeeded' AND a.outcome <> 'snoozed'),
                    (SELECT count(*) FROM operations WHERE status = 'succeeded')",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(backend_error)?;
        r.attempts_per_success = (successes > 0).then(|| attempts as f64 / successes as f64);
        let oldest: Option<(Uuid, String, DateTime<Utc>)> = sqlx::query_as(
            "SELECT id, kind, next_eligible_at FROM operations
             WHERE status = 'pending' AND next_eligible_at <= $1
             ORDER BY next_eligible_at, id LIMIT 1",
        )
        .bind(now)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend_error)?;
        r.oldest_eligible = oldest.map(|(id, kind, at)| OldestEligible {
            id: OperationId::from_uuid(id),
            kind,
            next_eligible_at: at,
        });
        let oldest_created: Option<DateTime<Utc>> = sqlx::query_scalar(
            "SELECT min(created_at) FROM operations
             WHERE status IN ('pending', 'running', 'reconciling', 'held')",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(backend_error)?;
        r.backlog_age_seconds = oldest_created.map(|t| (now - t).num_seconds());
        r.unhandled = self
            .operation_unhandled(chrono::Duration::seconds(oprec_core::WORKER_LIVE_SECS))
            .await?;
        Ok(r)
    }

    async fn worker_beat(&self, params: WorkerBeatParams) -> Result<()> {
        self.beat(params).await
    }

    async fn worker_remove(&self, id: &str) -> Result<bool> {
        self.remove_worker(id).await
    }

    async fn worker_list(&self, seen_within: chrono::Duration) -> Result<Vec<WorkerRecord>> {
        self.live_workers(seen_within).await
    }

    async fn operation_unhandled(
        &self,
        seen_within: chrono::Duration,
    ) -> Result<Vec<UnhandledKind>> {
        self.unhandled(seen_within).await
    }

    async fn audit_insert(&self, e: AuditEntry) -> Result<()> {
        sqlx::query(
            "INSERT INTO audit_log (at, actor, action, filter, affected, reason, details)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(self.now().await?)
        .bind(&e.actor)
        .bind(&e.action)
        .bind(&e.filter)
        .bind(e.affected as i64)
        .bind(&e.reason)
        .bind(&e.details)
        .execute(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(())
    }

    async fn activity_per_minute(&self, since: DateTime<Utc>) -> Result<Vec<ActivityMinute>> {
        // Each side reads its own index: attempts by ended_at, deaths by terminal_at.
        let rows: Vec<(DateTime<Utc>, i64, i64, i64)> = sqlx::query_as(
            "WITH a AS (
                 SELECT date_trunc('minute', ended_at) AS m, count(*) AS attempts,
                        count(*) FILTER (WHERE outcome IN ('error', 'rejected', 'vanished', 'unknown'))
                            AS failed
                 FROM operation_attempts WHERE ended_at >= $1 GROUP BY 1),
             d AS (
                 SELECT date_trunc('minute', terminal_at) AS m, count(*) AS dead
                 FROM operations WHERE status = 'dead' AND terminal_at >= $1 GROUP BY 1)
             SELECT coalesce(a.m, d.m) AS m, coalesce(a.attempts, 0), coalesce(a.failed, 0),
                    coalesce(d.dead, 0)
             FROM a FULL JOIN d ON a.m = d.m ORDER BY 1",
        )
        .bind(since)
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(rows
            .into_iter()
            .map(|(minute, attempts, failed, dead)| ActivityMinute {
                minute,
                attempts: attempts as u64,
                failed: failed as u64,
                dead: dead as u64,
            })
            .collect())
    }

    async fn audit_list(&self, limit: u32) -> Result<Vec<AuditRecord>> {
        let rows: Vec<(
            i64,
            DateTime<Utc>,
            String,
            String,
            Value,
            i64,
            Option<String>,
            Value,
        )> = sqlx::query_as(
            "SELECT id, at, actor, action, filter, affected, reason, details FROM audit_log
                 ORDER BY id DESC LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        Ok(rows
            .into_iter()
            .map(
                |(id, at, actor, action, filter, affected, reason, details)| AuditRecord {
                    id,
                    at,
                    entry: AuditEntry {
                        actor,
                        action,
                        filter,
                        affected: affected as u64,
                        reason,
                        details,
                    },
                },
            )
            .collect())
    }

    async fn operation_dead_unalerted(&self, limit: u32) -> Result<Vec<Operation>> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            operation_columns!(),
            " FROM operations WHERE status = 'dead' AND alerted_at IS NULL
             ORDER BY terminal_at, id LIMIT $1"
        ))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        rows.iter().map(row::operation).collect()
    }

    async fn operation_mark_alerted(&self, ids: Vec<OperationId>) -> Result<()> {
        let ids: Vec<Uuid> = ids.iter().map(|i| *i.as_uuid()).collect();
        sqlx::query("UPDATE operations SET alerted_at = $1 WHERE id = ANY($2)")
            .bind(self.now().await?)
            .bind(ids)
            .execute(&self.pool)
            .await
            .map_err(backend_error)?;
        Ok(())
    }
}
