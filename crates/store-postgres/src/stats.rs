//! The at-a-glance figures ([`OperatorStore`](oprec_core::OperatorStore)): the
//! [`StatsReport`] that answers "what is failing, why, and is it safe", and the per-minute
//! activity of the dashboard's chart. Each figure is one small statement over its own index;
//! the counts by status, kind and class read the trigger-kept `operation_counts`, so no figure
//! counts the table. They run in one transaction with sequential scans priced out: with missing
//! or stale statistics (a bulk load, autovacuum off) the planner would otherwise read all of
//! `operation_attempts` for the last hour's attempts, guessing a third of the table is recent.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use oprec_core::operator::{
    ActivityMinute, ActivityParams, HELD_BACK_COUNT_MAX, HeldBack, OldestEligible, StatsReport,
    WorkerListParams,
};
use oprec_core::{AgeBucket, Control, Result, Status, WORKER_LIVE_SECS};
use sqlx::{PgConnection, Row};

use crate::row::{self, Columns};
use crate::{PgStore, backend_error, controls, read, sql, workers};

/// The figures, all taken at the store's "now".
pub(crate) async fn stats(pg: &PgStore) -> Result<StatsReport> {
    let now = read::now(pg).await?;
    let (hour_ago, day_ago) = (now - Duration::hours(1), now - Duration::days(1));
    let in_force: Vec<Control> = controls::control_list(pg)
        .await?
        .into_iter()
        .filter(|c| c.in_force(now))
        .collect();
    let mut tx = pg.pool.begin().await.map_err(backend_error)?;
    sqlx::raw_sql(sql::STATS_INDEXES_ONLY)
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    let store: &mut PgConnection = &mut tx;
    let by_status = counts(store, sql::STATS_BY_STATUS, None, |s| {
        row::parse("status", &required(s)?)
    })
    .await?;
    let (attempts, successes) = attempts_and_successes(store).await?;
    let report = StatsReport {
        at: Some(now),
        reconciling: by_status.get(&Status::Reconciling).copied().unwrap_or(0),
        by_status,
        pending_by_class: counts(store, sql::STATS_PENDING_BY_CLASS, None, |c| {
            c.map(|c| row::parse("last_failure_class", &c)).transpose()
        })
        .await?,
        attempts_per_success: (successes > 0).then(|| attempts as f64 / successes as f64),
        oldest_eligible: None,
        held_back: Vec::new(),
        dead_by_kind: named(store, sql::STATS_DEAD_BY_KIND, None).await?,
        dead_redriven_by_kind: named(store, sql::STATS_DEAD_REDRIVEN_BY_KIND, None).await?,
        dead_last_hour_by_kind: named(store, sql::STATS_DEAD_SINCE_BY_KIND, Some(hour_ago)).await?,
        dead_last_day_by_kind: named(store, sql::STATS_DEAD_SINCE_BY_KIND, Some(day_ago)).await?,
        dead_last_day_by_code_version: named(
            store,
            sql::STATS_DEAD_SINCE_BY_CODE_VERSION,
            Some(day_ago),
        )
        .await?,
        attempts_last_hour_by_dependency: named(
            store,
            sql::STATS_ATTEMPTS_SINCE_BY_DEPENDENCY,
            Some(hour_ago),
        )
        .await?,
        backlog_age_seconds: backlog_oldest(store)
            .await?
            .map(|t| (now - t).num_seconds()),
        backlog_by_age: backlog_by_age(store, now).await?,
        unhandled: Vec::new(),
    };
    // The last two walk the pending index in order and stop early; with sorts priced out the
    // planner never fetches and sorts every eligible row instead (as the claim does).
    sqlx::raw_sql("SET LOCAL enable_sort = off")
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    let store: &mut PgConnection = &mut tx;
    let report = StatsReport {
        oldest_eligible: oldest_eligible(store, now).await?,
        held_back: held_back(store, &in_force, now).await?,
        ..report
    };
    tx.commit().await.map_err(backend_error)?;
    Ok(StatsReport {
        unhandled: workers::operation_unhandled(
            pg,
            WorkerListParams {
                seen_within: Duration::seconds(WORKER_LIVE_SECS),
            },
        )
        .await?,
        ..report
    })
}

/// Runs a two-column `(key, count)` statement, with `at` bound as `$1` when given, and reads
/// each key with `key`. A NULL key reaches `key` as `None`.
async fn counts<K: Ord>(
    store: &mut PgConnection,
    statement: &'static str,
    at: Option<DateTime<Utc>>,
    key: impl Fn(Option<String>) -> Result<K>,
) -> Result<BTreeMap<K, u64>> {
    let mut q = sqlx::query(statement);
    if let Some(at) = at {
        q = q.bind(at);
    }
    let rows = q.fetch_all(&mut *store).await.map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let name: Option<String> = r.try_get(0).map_err(backend_error)?;
            let n: i64 = r.try_get(1).map_err(backend_error)?;
            Ok((key(name)?, row::unsigned("count", n)?))
        })
        .collect()
}

/// Operations not yet ended by age bucket, folded by core from the trigger-kept counts per
/// creation slot.
async fn backlog_by_age(
    store: &mut PgConnection,
    now: DateTime<Utc>,
) -> Result<BTreeMap<AgeBucket, u64>> {
    let slots: Vec<(DateTime<Utc>, i64)> = sqlx::query_as(sql::STATS_BACKLOG_BY_AGE)
        .fetch_all(&mut *store)
        .await
        .map_err(backend_error)?;
    Ok(AgeBucket::fold_slots(slots, now))
}

/// [`counts`] keyed by a name that is never NULL (a kind, a code version, a dependency).
async fn named(
    store: &mut PgConnection,
    statement: &'static str,
    at: Option<DateTime<Utc>>,
) -> Result<BTreeMap<String, u64>> {
    counts(store, statement, at, required).await
}

/// A group's key that the statement never leaves NULL.
fn required(key: Option<String>) -> Result<String> {
    key.ok_or_else(|| row::unreadable("group key", "NULL"))
}

/// Attempts recorded for succeeded operations, and how many succeeded.
async fn attempts_and_successes(store: &mut PgConnection) -> Result<(u64, u64)> {
    let r = sqlx::query(sql::STATS_ATTEMPTS_PER_SUCCESS)
        .fetch_one(&mut *store)
        .await
        .map_err(backend_error)?;
    let c = Columns(&r);
    Ok((c.big_count("attempts")?, c.big_count("successes")?))
}

/// The pending operation eligible longest at `now`.
async fn oldest_eligible(
    store: &mut PgConnection,
    now: DateTime<Utc>,
) -> Result<Option<OldestEligible>> {
    let r = sqlx::query(sql::STATS_OLDEST_ELIGIBLE.as_str())
        .bind(now)
        .fetch_optional(&mut *store)
        .await
        .map_err(backend_error)?;
    r.as_ref()
        .map(|r| {
            let c = Columns(r);
            Ok(OldestEligible {
                id: c.id("id")?,
                kind: c.get("kind")?,
                next_eligible_at: c.get("next_eligible_at")?,
            })
        })
        .transpose()
}

/// Each control in `in_force` with the eligible work it holds back at `now`.
async fn held_back(
    store: &mut PgConnection,
    in_force: &[Control],
    now: DateTime<Utc>,
) -> Result<Vec<HeldBack>> {
    let mut out = Vec::with_capacity(in_force.len());
    for c in in_force {
        let r = sqlx::query(sql::stats_held_back(c.scope))
            .bind(now)
            .bind(&c.value)
            .bind(HELD_BACK_COUNT_MAX as i64 + 1)
            .fetch_one(&mut *store)
            .await
            .map_err(backend_error)?;
        let col = Columns(&r);
        let met: u64 = col.big_count("eligible")?;
        let oldest = match col.get::<Option<String>>("kind")? {
            Some(kind) => Some(OldestEligible {
                id: col.id("id")?,
                kind,
                next_eligible_at: col.get("next_eligible_at")?,
            }),
            None => None,
        };
        out.push(HeldBack {
            scope: c.scope,
            value: c.value.clone(),
            action: c.action,
            until: c.until,
            eligible: met.min(HELD_BACK_COUNT_MAX),
            at_least: met > HELD_BACK_COUNT_MAX,
            oldest,
        });
    }
    Ok(out)
}

/// When the oldest waiting or running operation was created.
async fn backlog_oldest(store: &mut PgConnection) -> Result<Option<DateTime<Utc>>> {
    sqlx::query_scalar(sql::STATS_BACKLOG_OLDEST)
        .fetch_one(&mut *store)
        .await
        .map_err(backend_error)
}

/// Attempts (and failed ones) and promotions to dead per minute since a time, oldest first.
pub(crate) async fn activity_per_minute(
    store: &PgStore,
    params: ActivityParams,
) -> Result<Vec<ActivityMinute>> {
    let rows = sqlx::query(sql::STATS_ACTIVITY_PER_MINUTE)
        .bind(params.since)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| {
            let c = Columns(r);
            Ok(ActivityMinute {
                minute: c.get("minute")?,
                attempts: c.big_count("attempts")?,
                failed: c.big_count("failed")?,
                dead: c.big_count("dead")?,
            })
        })
        .collect()
}
