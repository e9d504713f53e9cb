//! The at-a-glance figures: what is failing, why, and whether it is safe, each counted as the
//! PostgreSQL store counts it and keyed by core's types (statuses, classes, age buckets). An
//! hour, a day and seven days are 3,600, 86,400 and 604,800 seconds of UTC.

use std::collections::BTreeMap;

use chrono::Duration;
use oprec_core::operator::{
    ActivityMinute, ActivityParams, HELD_BACK_COUNT_MAX, HeldBack, OldestEligible, StatsReport,
    WorkerListParams,
};
use oprec_core::{AgeBucket, Control, Result, Status, WORKER_LIVE_SECS};
use sqlx::SqliteConnection;

use crate::row::Columns;
use crate::{SqliteStore, backend_error, controls, sql, time, workers};

/// Runs `statement`, which selects a key `k` and a count `n`, with `binds` in order; returns the
/// counts by key, each key read by `key`.
async fn grouped<K: Ord>(
    conn: &mut SqliteConnection,
    statement: &'static str,
    binds: &[&str],
    key: impl Fn(&Columns<'_>) -> Result<K>,
) -> Result<BTreeMap<K, u64>> {
    let mut q = sqlx::query(statement);
    for b in binds {
        q = q.bind(*b);
    }
    let rows = q.fetch_all(&mut *conn).await.map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok((key(&c)?, c.u64("n")?))
        })
        .collect()
}

/// See [`OperatorStore::stats`](oprec_core::OperatorStore::stats).
pub(crate) async fn stats(store: &SqliteStore) -> Result<StatsReport> {
    let now = store.clock_now();
    let now_text = time::text(now)?;
    let ago = |d: Duration| time::after(now, -d).and_then(time::text);
    let (hour_ago, day_ago) = (ago(Duration::hours(1))?, ago(Duration::days(1))?);
    let text = |c: &Columns<'_>| c.text("k");
    let mut r = StatsReport {
        at: Some(now),
        ..StatsReport::default()
    };
    let in_force: Vec<Control> = controls::control_list(store)
        .await?
        .into_iter()
        .filter(|c| c.in_force(now))
        .collect();
    // One read transaction: every figure is of the same moment.
    let mut tx = store.pool.begin().await.map_err(backend_error)?;
    let conn: &mut SqliteConnection = &mut tx;
    r.by_status = grouped(conn, sql::STATS_BY_STATUS, &[], |c| c.parsed("k")).await?;
    r.reconciling = r.by_status.get(&Status::Reconciling).copied().unwrap_or(0);
    r.pending_by_class = grouped(conn, sql::STATS_PENDING_BY_CLASS, &[], |c| {
        c.opt_parsed("k")
    })
    .await?;
    r.dead_by_kind = grouped(conn, sql::STATS_DEAD_BY_KIND, &[], text).await?;
    r.dead_redriven_by_kind = grouped(conn, sql::STATS_DEAD_REDRIVEN_BY_KIND, &[], text).await?;
    r.dead_last_hour_by_kind =
        grouped(conn, sql::STATS_DEAD_SINCE_BY_KIND, &[&hour_ago], text).await?;
    r.dead_last_day_by_kind =
        grouped(conn, sql::STATS_DEAD_SINCE_BY_KIND, &[&day_ago], text).await?;
    r.dead_last_day_by_code_version = grouped(
        conn,
        sql::STATS_DEAD_SINCE_BY_CODE_VERSION,
        &[&day_ago],
        text,
    )
    .await?;
    r.attempts_last_hour_by_dependency = grouped(
        conn,
        sql::STATS_ATTEMPTS_SINCE_BY_DEPENDENCY,
        &[&hour_ago],
        text,
    )
    .await?;
    let slots = sqlx::query(sql::STATS_BACKLOG_BY_AGE)
        .fetch_all(&mut *conn)
        .await
        .map_err(backend_error)?
        .iter()
        .map(|row| {
            let c = Columns(row);
            Ok((c.time("k")?, c.int("n")?))
        })
        .collect::<Result<Vec<_>>>()?;
    r.backlog_by_age = AgeBucket::fold_slots(slots, now);
    let row = sqlx::query(sql::STATS_ATTEMPTS_PER_SUCCESS)
        .fetch_one(&mut *conn)
        .await
        .map_err(backend_error)?;
    let c = Columns(&row);
    let (attempts, successes) = (c.u64("attempts")?, c.u64("successes")?);
    r.attempts_per_success = (successes > 0).then(|| attempts as f64 / successes as f64);
    let oldest = sqlx::query(sql::STATS_OLDEST_ELIGIBLE.as_str())
        .bind(&now_text)
        .fetch_optional(&mut *conn)
        .await
        .map_err(backend_error)?;
    r.oldest_eligible = oldest
        .map(|row| {
            let c = Columns(&row);
            Ok::<_, oprec_core::Error>(OldestEligible {
                id: c.id("id")?,
                kind: c.text("kind")?,
                next_eligible_at: c.time("next_eligible_at")?,
            })
        })
        .transpose()?;
    for c in &in_force {
        let row = sqlx::query(sql::stats_held_back(c.scope))
            .bind(&now_text)
            .bind(&c.value)
            .bind(HELD_BACK_COUNT_MAX as i64 + 1)
            .fetch_one(&mut *conn)
            .await
            .map_err(backend_error)?;
        let col = Columns(&row);
        let met = col.u64("eligible")?;
        let oldest = match col.opt_text("kind")? {
            Some(kind) => Some(OldestEligible {
                id: col.id("id")?,
                kind,
                next_eligible_at: col.time("next_eligible_at")?,
            }),
            None => None,
        };
        r.held_back.push(HeldBack {
            scope: c.scope,
            value: c.value.clone(),
            action: c.action,
            until: c.until,
            eligible: met.min(HELD_BACK_COUNT_MAX),
            at_least: met > HELD_BACK_COUNT_MAX,
            oldest,
        });
    }
    let row = sqlx::query(sql::STATS_BACKLOG_OLDEST)
        .fetch_one(&mut *conn)
        .await
        .map_err(backend_error)?;
    let oldest_created = Columns(&row).opt_time("oldest")?;
    tx.commit().await.map_err(backend_error)?;
    r.backlog_age_seconds = oldest_created.map(|t| (now - t).num_seconds());
    let live = WorkerListParams {
        seen_within: Duration::seconds(WORKER_LIVE_SECS),
    };
    r.unhandled = workers::operation_unhandled(store, live).await?;
    Ok(r)
}

/// See [`OperatorStore::activity_per_minute`](oprec_core::OperatorStore::activity_per_minute).
pub(crate) async fn activity_per_minute(
    store: &SqliteStore,
    params: ActivityParams,
) -> Result<Vec<ActivityMinute>> {
    let rows = sqlx::query(sql::STATS_ACTIVITY_PER_MINUTE)
        .bind(time::text(params.since)?)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok(ActivityMinute {
                minute: time::parse(&format!("{}:00.000000Z", c.text("minute")?))?,
                attempts: c.u64("attempts")?,
                failed: c.u64("failed")?,
                dead: c.u64("dead")?,
            })
        })
        .collect()
}
