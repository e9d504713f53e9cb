//! The `operation_limits` table ([`LimitStore`](oprec_core::LimitStore)): limits across the fleet,
//! set by operators, and what a claim does with them. A claim that may reach a limited kind or
//! dependency locks the limit rows (`FOR UPDATE`, so limited claims take turns), counts what runs,
//! lets core decide what it may take ([`ClaimAllowance`]), and writes back the windows of recent
//! starts before it commits. With no limit row (the usual case) a claim only pays one lookup of
//! an empty table.

use chrono::{DateTime, Utc};
use oprec_core::limit::{LimitRemoveParams, LimitSetParams, RunningCount, counted, record_starts};
use oprec_core::{ClaimAllowance, Claimed, Limit, LimitScope, LimitUse, RateWindow, Result};
use sqlx::PgConnection;
use sqlx::postgres::PgRow;

use crate::row::{Columns, unreadable};
use crate::{PgStore, backend_error, sql};

/// How long a store trusts its last look at whether any limit exists. A limit set elsewhere (an
/// operator's `oprec limit`) reaches a worker's claims within this; one set through this store
/// reaches them at once.
const PRESENCE_TTL: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether any limit exists, as last looked up (at most once per [`PRESENCE_TTL`]): a claim
/// locks and counts only when one does, so a fleet without limits pays nothing for them.
#[derive(Debug, Default)]
pub(crate) struct Presence(std::sync::Mutex<Option<(std::time::Instant, bool)>>);

impl Presence {
    /// Whether a limit exists, looked up again when the last look is older than the TTL.
    pub async fn any(&self, store: &PgStore) -> Result<bool> {
        if let Some((at, any)) = *self.0.lock().expect("a plain value")
            && at.elapsed() < PRESENCE_TTL
        {
            return Ok(any);
        }
        let any: bool = sqlx::query_scalar(sql::LIMITS_ANY)
            .fetch_one(&store.pool)
            .await
            .map_err(backend_error)?;
        *self.0.lock().expect("a plain value") = Some((std::time::Instant::now(), any));
        Ok(any)
    }

    /// Forgets the last look (a limit was just set or removed here).
    pub fn forget(&self) {
        *self.0.lock().expect("a plain value") = None;
    }
}

/// Whether any limit exists, as the store last looked (at most a second ago).
pub(crate) async fn any(store: &PgStore) -> Result<bool> {
    store.limits.any(store).await
}

/// The limits a claim locked and what they let it take.
pub(crate) struct Limited {
    limits: Vec<Limit>,
    /// What core lets the claim take.
    pub allowance: ClaimAllowance,
}

impl Limited {
    /// The names in `scope` that may take nothing now.
    pub fn blocked(&self, scope: LimitScope) -> Vec<String> {
        self.allowance.blocked(scope)
    }

    /// Whether some limit has room for a few but not for all: the claim then needs its capped
    /// statement.
    pub fn capped(&self) -> bool {
        LimitScope::ALL
            .iter()
            .any(|s| !self.allowance.caps(*s).0.is_empty())
    }
}

/// On the claim's transaction `tx`: locks the limits a claim of `kinds` may reach and decides
/// its allowance; `None` when there is none (the claim goes on unlimited).
pub(crate) async fn lock_for_claim(
    store: &PgStore,
    tx: &mut PgConnection,
    kinds: &[String],
) -> Result<Option<Limited>> {
    if !any(store).await? {
        return Ok(None);
    }
    let rows = sqlx::query(sql::LIMITS_LOCK)
        .bind(kinds)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
    if rows.is_empty() {
        return Ok(None);
    }
    let limits: Vec<Limit> = rows.iter().map(limit).collect::<Result<_>>()?;
    let row = sqlx::query(sql::LIMITS_RUNNING)
        .bind(counted(&limits, LimitScope::Kind))
        .bind(counted(&limits, LimitScope::Dependency))
        .fetch_one(&mut *tx)
        .await
        .map_err(backend_error)?;
    let c = Columns(&row);
    let clock: DateTime<Utc> = c.get("now")?;
    let running: Vec<(String, Option<String>, u32)> =
        serde_json::from_str(&c.get::<String>("running")?).map_err(|e| unreadable("running", e))?;
    let running: Vec<RunningCount> = running
        .into_iter()
        .map(|(kind, dependency, running)| RunningCount {
            kind,
            dependency,
            running,
        })
        .collect();
    let allowance = ClaimAllowance::new(&limits, &running, store.now_bind().unwrap_or(clock));
    Ok(Some(Limited { limits, allowance }))
}

/// On the claim's transaction: records the claims just made in the windows of the rate limits,
/// at the allowance's time.
pub(crate) async fn record_claims(
    tx: &mut PgConnection,
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
    if changed.is_empty() {
        return Ok(());
    }
    let scopes: Vec<&str> = changed.iter().map(|l| l.scope.as_str()).collect();
    let values: Vec<&str> = changed.iter().map(|l| l.value.as_str()).collect();
    let windows: Vec<String> = changed.iter().map(|l| l.window.to_json()).collect();
    sqlx::query(sql::LIMITS_RECORD)
        .bind(scopes)
        .bind(values)
        .bind(windows)
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// A limit row.
fn limit(row: &PgRow) -> Result<Limit> {
    let c = Columns(row);
    Ok(Limit {
        scope: c.parsed("scope")?,
        value: c.get("value")?,
        max_running: c.opt_count("max_running")?,
        per_second: c.opt_count("per_second")?,
        window: RateWindow::from_json(c.get::<Option<String>>("recent_starts")?.as_deref()),
        reason: c.get("reason")?,
        actor: c.get("actor")?,
        set_at: c.get("set_at")?,
    })
}

/// Sets or replaces a limit.
pub(crate) async fn limit_set(store: &PgStore, params: LimitSetParams) -> Result<Limit> {
    params.check()?;
    let row = sqlx::query(sql::LIMITS_SET)
        .bind(params.scope.as_str())
        .bind(&params.value)
        .bind(
            params
                .max_running
                .map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
        )
        .bind(
            params
                .per_second
                .map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
        )
        .bind(&params.reason)
        .bind(&params.actor)
        .bind(store.now_bind())
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)?;
    store.limits.forget();
    limit(&row)
}

/// Removes a limit.
pub(crate) async fn limit_remove(store: &PgStore, params: LimitRemoveParams) -> Result<bool> {
    let gone = sqlx::query(sql::LIMITS_REMOVE)
        .bind(params.scope.as_str())
        .bind(&params.value)
        .fetch_optional(&store.pool)
        .await
        .map_err(backend_error)?;
    store.limits.forget();
    Ok(gone.is_some())
}

/// Every limit with its use now.
pub(crate) async fn limit_list(store: &PgStore) -> Result<Vec<LimitUse>> {
    let rows = sqlx::query(sql::LIMITS_LIST)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    let now = match store.now_bind() {
        Some(t) => t,
        None => oprec_core::Store::now(store).await?,
    };
    rows.iter()
        .map(|r| {
            Ok(LimitUse::new(
                limit(r)?,
                Columns(r).big_count("running")?,
                now,
            ))
        })
        .collect()
}
