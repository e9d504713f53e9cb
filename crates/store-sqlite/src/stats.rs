//! The at-a-glance figures: what is failing, why, and whether it is safe, each counted as the
//! PostgreSQL store counts it. An hour, a day and seven days are 3,600, 86,400 and 604,800
//! seconds of UTC.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use oprec_core::operator::{ActivityMinute, OldestEligible, StatsReport};
use oprec_core::{OperationId, Result};
use sqlx::SqliteConnection;

use crate::row::parse_uuid;
use crate::{SqliteStore, backend_error, time};

/// The statuses of operations not yet ended, as an SQL list.
macro_rules! not_terminal {
    () => {
        "('pending', 'running', 'reconciling', 'held')"
    };
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// Runs `sql`, which selects a key and a count, with `binds` in order; returns the counts by key.
async fn grouped(
    conn: &mut SqliteConnection,
    sql: &'static str,
    binds: &[&str],
) -> Result<BTreeMap<String, u64>> {
    let mut q = sqlx::query_as::<_, (String, i64)>(sql);
    for b in binds {
        q = q.bind(*b);
    }
    let rows = q.fetch_all(&mut *conn).await.map_err(backend_error)?;
    Ok(rows.into_iter().map(|(k, n)| (k, count(n))).collect())
}

impl SqliteStore {
    /// See [`OperatorStore::activity_per_minute`](oprec_core::OperatorStore::activity_per_minute).
    pub(crate) async fn activity(&self, since: DateTime<Utc>) -> Result<Vec<ActivityMinute>> {
        // Stored times are fixed-width text, so the first 16 characters name the minute.
        let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(
            "SELECT m, sum(attempts), sum(failed), sum(dead) FROM (
                 SELECT substr(ended_at, 1, 16) AS m, 1 AS attempts,
                        outcome IN ('error', 'rejected', 'vanished', 'unknown') AS failed, 0 AS dead
                 FROM operation_attempts WHERE ended_at >= ?1
                 UNION ALL
                 SELECT substr(terminal_at, 1, 16), 0, 0, 1
                 FROM operations WHERE status = 'dead' AND terminal_at >= ?1)
             GROUP BY m ORDER BY m",
        )
        .bind(time::text(since)?)
        .fetch_all(&self.pool)
        .await
        .map_err(backend_error)?;
        rows.into_iter()
            .map(|(m, attempts, failed, dead)| {
                Ok(ActivityMinute {
                    minute: time::parse(&format!("{m}:00.000000Z"))?,
                    attempts: count(attempts),
                    failed: count(failed),
                    dead: count(dead),
                })
            })
            .collect()
    }

    /// See [`OperatorStore::stats`](oprec_core::OperatorStore::stats).
    pub(crate) async fn figures(&self) -> Result<StatsReport> {
        let now = self.clock_now();
        let now_text = time::text(now)?;
        let ago = |d: Duration| time::after(now, -d).and_then(time::text);
        let (hour_ago, day_ago, week_ago) = (
            ago(Duration::hours(1))?,
            ago(Duration::days(1))?,
            ago(Duration::days(7))?,
        );
        let mut r = StatsReport {
            at: Some(now),
            ..StatsReport::default()
        };
        // One read transaction: every figure is of the same moment.
        let mut tx = self.pool.begin().await.map_err(backend_error)?;
        let conn: &mut SqliteConnection = &mut tx;
        r.by_status = grouped(
            conn,
            "SELECT status, count(*) FROM operations GROUP BY 1",
            &[],
        )
        .await?;
        r.reconciling = r.by_status.get("reconciling").copied().unwrap_or(0);
        r.pending_by_class = grouped(
            conn,
            "SELECT coalesce(last_failure_class, 'none'), count(*) FROM operations
             WHERE status = 'pending' GROUP BY 1",
            &[],
        )
        .await?;
        r.dead_by_kind = grouped(
            conn,
            "SELECT kind, count(*) FROM operations WHERE status = 'dead' GROUP BY 1",
            &[],
        )
        .await?;
        r.dead_last_hour_by_kind = grouped(
            conn,
            "SELECT kind, count(*) FROM operations
             WHERE status = 'dead' AND terminal_at >= ? GROUP BY 1",
            &[&hour_ago],
        )
        .await?;
        r.dead_last_day_by_kind = grouped(
            conn,
            "SELECT kind, count(*) FROM operations
             WHERE status = 'dead' AND terminal_at >= ? GROUP BY 1",
            &[&day_ago],
        )
        .await?;
        r.dead_last_day_by_code_version = grouped(
            conn,
            "SELECT coalesce(code_version, 'unknown'), count(*) FROM operations
             WHERE status = 'dead' AND terminal_at >= ? GROUP BY 1",
            &[&day_ago],
        )
        .await?;
        r.attempts_last_hour_by_dependency = grouped(
            conn,
            "SELECT coalesce(o.dependency, 'none'), count(*)
             FROM operation_attempts a JOIN operations o ON o.id = a.operation_id
             WHERE a.ended_at >= ? AND a.outcome <> 'snoozed'
             GROUP BY 1",
            &[&hour_ago],
        )
        .await?;
        r.backlog_by_age = grouped(
            conn,
            concat!(
                "SELECT CASE WHEN created_at >= ? THEN '<1h'
                             WHEN created_at >= ? THEN '1h-1d'
                             WHEN created_at >= ? THEN '1d-7d'
                             ELSE '>7d' END, count(*)
                 FROM operations WHERE status IN ",
                not_terminal!(),
                " GROUP BY 1"
            ),
            &[&hour_ago, &day_ago, &week_ago],
        )
        .await?;
        let (attempts, successes): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM operation_attempts a JOIN operations o
                     ON o.id = a.operation_id
                     WHERE o.status = 'succeeded' AND a.outcome <> 'snoozed'),
                    (SELECT count(*) FROM operations WHERE status = 'succeeded')",
        )
        .fetch_one(&mut *conn)
        .await
        .map_err(backend_error)?;
        r.attempts_per_success = (successes > 0).then(|| attempts as f64 / successes as f64);
        let oldest: Option<(String, String, String)> = sqlx::query_as(
            "SELECT id, kind, next_eligible_at
             FROM operations INDEXED BY operations_pending_eligible
             WHERE status = 'pending' AND next_eligible_at <= ?
             ORDER BY next_eligible_at, id LIMIT 1",
        )
        .bind(&now_text)
        .fetch_optional(&mut *conn)
        .await
        .map_err(backend_error)?;
        r.oldest_eligible = oldest
            .map(|(id, kind, at)| {
                Ok::<_, oprec_core::Error>(OldestEligible {
                    id: OperationId::from_uuid(parse_uuid(&id)?),
                    kind,
                    next_eligible_at: time::parse(&at)?,
                })
            })
            .transpose()?;
        let oldest_created: Option<String> = sqlx::query_scalar(concat!(
            "SELECT min(created_at) FROM operations WHERE status IN ",
            not_terminal!()
        ))
        .fetch_one(&mut *conn)
        .await
        .map_err(backend_error)?;
        tx.commit().await.map_err(backend_error)?;
        r.backlog_age_seconds = oldest_created
            .map(|t| time::parse(&t).map(|t| (now - t).num_seconds()))
            .transpose()?;
        r.unhandled = self
            .unhandled(Duration::seconds(oprec_core::WORKER_LIVE_SECS))
            .await?;
        Ok(r)
    }
}
