//! The `operation_limits` table ([`LimitStore`](oprec_core::LimitStore)): limits across the fleet,
//! set by operators, and what a claim does with them. Every claim runs under the database's one
//! write lock, so limited claims take turns by themselves: a claim reads the limits it may reach,
//! counts what runs, lets core decide what it may take ([`ClaimAllowance`]), leaves out of its
//! pick what may take nothing, applies the allowance to what it picked, and writes back the
//! windows of recent starts before it commits.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use oprec_core::limit::{LimitRemoveParams, LimitSetParams, RunningCount, counted, record_starts};
use oprec_core::{ClaimAllowance, Claimed, Limit, LimitScope, LimitUse, RateWindow, Result};
use sqlx::SqliteConnection;
use sqlx::sqlite::SqliteRow;

use crate::row::{Columns, json_text};
use crate::{SqliteStore, backend_error, sql, time};

/// The limits a claim read and what they let it take.
pub(crate) struct Limited {
    limits: Vec<Limit>,
    allowance: ClaimAllowance,
}

impl Limited {
    /// The time the claim is made at (never before a start the windows recorded).
    pub fn now(&self) -> DateTime<Utc> {
        self.allowance.now()
    }

    /// The names in `scope` that may take nothing now, as the JSON array a pick binds.
    pub fn blocked_json(&self, scope: LimitScope) -> Result<String> {
        json_text(&self.allowance.blocked(scope))
    }
}

/// The JSON arrays a pick binds for the kinds and dependencies left out: none without limits.
pub(crate) fn blocked(limited: Option<&Limited>) -> Result<(String, String)> {
    match limited {
        Some(l) => Ok((
            l.blocked_json(LimitScope::Kind)?,
            l.blocked_json(LimitScope::Dependency)?,
        )),
        None => Ok(("[]".into(), "[]".into())),
    }
}

/// On the claim's write transaction: the limits a claim of `kinds` may reach and its allowance
/// at `now`; `None` when there is none (the claim goes on unlimited).
pub(crate) async fn for_claim(
    conn: &mut SqliteConnection,
    kinds: &[String],
    now: DateTime<Utc>,
) -> Result<Option<Limited>> {
    let rows = sqlx::query(sql::LIMITS_LOCK)
        .bind(json_text(kinds)?)
        .fetch_all(&mut *conn)
        .await
        .map_err(backend_error)?;
    if rows.is_empty() {
        return Ok(None);
    }
    let limits: Vec<Limit> = rows.iter().map(limit).collect::<Result<_>>()?;
    let running = sqlx::query(sql::LIMITS_RUNNING)
        .bind(json_text(&counted(&limits, LimitScope::Kind))?)
        .bind(json_text(&counted(&limits, LimitScope::Dependency))?)
        .fetch_all(&mut *conn)
        .await
        .map_err(backend_error)?
        .iter()
        .map(|r| {
            let c = Columns(r);
            Ok(RunningCount {
                kind: c.text("kind")?,
                dependency: c.opt_text("dependency")?,
                running: c.u32("running")?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let allowance = ClaimAllowance::new(&limits, &running, now);
    Ok(Some(Limited { limits, allowance }))
}

/// The picked `ids` (as stored text, in the pick's order) that the allowance lets the claim
/// take, in the same order. A picked id that the claim then finds unclaimable still used its
/// room: a claim may take less than the limits allow, never more.
pub(crate) async fn allowed(
    conn: &mut SqliteConnection,
    limited: &mut Limited,
    ids: &[String],
) -> Result<Vec<String>> {
    let rows = sqlx::query(sql::LIMITS_ROWS)
        .bind(json_text(ids)?)
        .fetch_all(&mut *conn)
        .await
        .map_err(backend_error)?;
    let mut of: HashMap<String, (String, Option<String>)> = HashMap::with_capacity(rows.len());
    for r in &rows {
        let c = Columns(r);
        of.insert(c.text("id")?, (c.text("kind")?, c.opt_text("dependency")?));
    }
    Ok(ids
        .iter()
        .filter(|id| {
            of.get(*id).is_some_and(|(kind, dependency)| {
                limited.allowance.take(kind, dependency.as_deref())
            })
        })
        .cloned()
        .collect())
}

/// Records the claims just made in the windows of the rate limits, under the same lock.
pub(crate) async fn record_claims(
    conn: &mut SqliteConnection,
    limited: &mut Limited,
    claimed: &[Claimed],
) -> Result<()> {
    let now = limited.allowance.now();
    let changed = record_starts(
        &mut limited.limits,
        claimed
            .iter()
            .map(|c| (c.kind.as_str(), c.dependency.as_deref())),
        now,
    );
    for l in changed {
        sqlx::query(sql::LIMITS_RECORD)
            .bind(l.scope.as_str())
            .bind(&l.value)
            .bind(l.window.to_json())
            .execute(&mut *conn)
            .await
            .map_err(backend_error)?;
    }
    Ok(())
}

/// A limit row.
fn limit(row: &SqliteRow) -> Result<Limit> {
    let c = Columns(row);
    Ok(Limit {
        scope: c.parsed("scope")?,
        value: c.text("value")?,
        max_running: c.opt_u32("max_running")?,
        per_second: c.opt_u32("per_second")?,
        window: RateWindow::from_json(c.opt_text("recent_starts")?.as_deref()),
        reason: c.opt_text("reason")?,
        actor: c.text("actor")?,
        set_at: c.time("set_at")?,
    })
}

/// Sets or replaces a limit.
pub(crate) async fn limit_set(store: &SqliteStore, params: LimitSetParams) -> Result<Limit> {
    params.check()?;
    let mut tx = store.begin_write().await?;
    let row = sqlx::query(sql::LIMITS_SET)
        .bind(params.scope.as_str())
        .bind(&params.value)
        .bind(params.max_running.map(i64::from))
        .bind(params.per_second.map(i64::from))
        .bind(&params.reason)
        .bind(&params.actor)
        .bind(time::text(store.clock_now())?)
        .fetch_one(tx.conn())
        .await
        .map_err(backend_error)?;
    let set = limit(&row)?;
    tx.commit().await?;
    Ok(set)
}

/// Removes a limit.
pub(crate) async fn limit_remove(store: &SqliteStore, params: LimitRemoveParams) -> Result<bool> {
    let mut tx = store.begin_write().await?;
    let gone = sqlx::query(sql::LIMITS_REMOVE)
        .bind(params.scope.as_str())
        .bind(&params.value)
        .fetch_optional(tx.conn())
        .await
        .map_err(backend_error)?;
    tx.commit().await?;
    Ok(gone.is_some())
}

/// Every limit with its use now.
pub(crate) async fn limit_list(store: &SqliteStore) -> Result<Vec<LimitUse>> {
    let rows = sqlx::query(sql::LIMITS_LIST)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    let now = store.clock_now();
    rows.iter()
        .map(|r| Ok(LimitUse::new(limit(r)?, Columns(r).u64("running")?, now)))
        .collect()
}
