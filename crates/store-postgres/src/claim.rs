//! Claims and what keeps them alive ([`WorkerStore`](oprec_core::WorkerStore)): claiming by id
//! (wake-ups) or the oldest eligible (polling), heartbeats, and whether a worker has work.
//!
//! Every claim skips rows another claimer holds (`FOR UPDATE SKIP LOCKED`), so many workers on
//! many hosts claim without waiting for each other, and splices in core's pause rule.

use chrono::{DateTime, Utc};
use oprec_core::store::{
    ClaimByIdsParams, ClaimCurrentParams, ClaimEligibleParams, ClaimGiveBackParams,
    ClaimSuspectParams, HeartbeatManyParams, HeartbeatParams, HeldClaim, WorkExistsParams,
};
use oprec_core::{Claimed, Error, LimitScope, OperationId, Result};
use uuid::Uuid;

use crate::limits::{self, Limited};
use crate::row::{self, millis};
use crate::{PgStore, backend_error, sql};

/// A claim statement with its parameters bound, built for the claim's time, the limits locked
/// (if any) and whether it must be the capped statement.
type ClaimQuery = sqlx::query::Query<'static, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// Runs a claim within the limits across the fleet. With no limit anywhere (the usual case) the
/// statement runs as it is, in autocommit unless `opening` asks for a transaction. Otherwise, in
/// one transaction: lock the limits the claim may reach, decide the allowance (core), run the
/// statement that leaves out what has no room and caps what has little, record the starts in the
/// limits' windows, commit.
async fn claim_within_limits(
    store: &PgStore,
    opening: Option<&'static str>,
    kinds: &[String],
    build: impl Fn(Option<DateTime<Utc>>, Option<&Limited>, bool) -> ClaimQuery,
) -> Result<Vec<Claimed>> {
    if opening.is_none() && !limits::any(store).await? {
        let rows = build(store.now_bind(), None, false)
            .fetch_all(&store.pool)
            .await
            .map_err(backend_error)?;
        return rows.iter().map(row::claimed).collect();
    }
    let mut tx = match opening {
        Some(o) => store.begin_with(o).await?,
        None => store.pool.begin().await.map_err(backend_error)?,
    };
    let mut limited = limits::lock_for_claim(store, &mut tx, kinds).await?;
    let capped = limited.as_ref().is_some_and(Limited::capped);
    let now = limited
        .as_ref()
        .map(|l| l.allowance.now())
        .or_else(|| store.now_bind());
    let rows = build(now, limited.as_ref(), capped)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
    let claimed: Vec<Claimed> = rows.iter().map(row::claimed).collect::<Result<_>>()?;
    if let Some(l) = limited.as_mut() {
        limits::record_claims(&mut tx, l, &claimed).await?;
    }
    tx.commit().await.map_err(backend_error)?;
    Ok(claimed)
}

/// Binds a claim statement's limit parameters: the kinds and dependencies that may take nothing
/// (left out), then, for a capped statement, the caps.
fn bind_limits(query: ClaimQuery, limited: Option<&Limited>, capped: bool) -> ClaimQuery {
    let blocked = |scope| limited.map(|l| l.blocked(scope)).unwrap_or_default();
    let query = query
        .bind(blocked(LimitScope::Kind))
        .bind(blocked(LimitScope::Dependency));
    match limited {
        Some(l) if capped => {
            let (kinds, kind_caps) = l.allowance.caps(LimitScope::Kind);
            let (dependencies, dependency_caps) = l.allowance.caps(LimitScope::Dependency);
            query
                .bind(kinds)
                .bind(kind_caps)
                .bind(dependencies)
                .bind(dependency_caps)
        }
        _ => query,
    }
}

/// Claims the named operations that are claimable now; the others are left out (and so are
/// those a limit across the fleet has no room for: they stay pending).
pub(crate) async fn operation_claim_by_ids(
    store: &PgStore,
    params: ClaimByIdsParams,
) -> Result<Vec<Claimed>> {
    if params.ids.is_empty() {
        return Ok(Vec::new());
    }
    let c = params.claimant;
    let ids = row::uuids(&params.ids);
    claim_within_limits(store, None, &params.kinds, |now, limited, capped| {
        let statement = if capped {
            sql::CLAIM_BY_IDS_CAPPED.as_str()
        } else {
            sql::CLAIM_BY_IDS.as_str()
        };
        let query = sqlx::query(statement)
            .bind(now)
            .bind(ids.clone())
            .bind(params.kinds.clone())
            .bind(millis(c.lease))
            .bind(c.worker_id.clone())
            .bind(c.code_version.clone());
        bind_limits(query, limited, capped)
    })
    .await
}

/// Claims up to `limit` eligible operations: those eligible for longer than
/// [`PRIORITY_AGING`](oprec_core::PRIORITY_AGING) first, then by priority (README, "Priorities"),
/// within the limits across the fleet. In a transaction that walks the pending index in order.
pub(crate) async fn operation_claim_eligible(
    store: &PgStore,
    params: ClaimEligibleParams,
) -> Result<Vec<Claimed>> {
    if params.limit == 0 {
        return Ok(Vec::new());
    }
    let levels = params.levels();
    let c = params.claimant;
    let opening = Some(sql::WALK_PENDING_IN_ORDER);
    let mut claimed = claim_within_limits(store, opening, &params.kinds, |now, limited, capped| {
        let statement = if capped {
            sql::CLAIM_ELIGIBLE_CAPPED.as_str()
        } else {
            sql::CLAIM_ELIGIBLE.as_str()
        };
        let query = sqlx::query(statement)
            .bind(now)
            .bind(params.kinds.clone())
            .bind(i64::from(params.limit))
            .bind(millis(c.lease))
            .bind(c.worker_id.clone())
            .bind(c.code_version.clone())
            .bind(oprec_core::PRIORITY_AGING.num_milliseconds())
            .bind(levels);
        bind_limits(query, limited, capped)
    })
    .await?;
    // UPDATE ... RETURNING keeps no order; the pick's order is the promise.
    claimed.sort_by_key(|c| (c.next_eligible_at, c.id));
    Ok(claimed)
}

/// Claims one suspect, to run isolated (alone in its worker), unless a limit has no room for it.
pub(crate) async fn operation_claim_suspect(
    store: &PgStore,
    params: ClaimSuspectParams,
) -> Result<Option<Claimed>> {
    let c = params.claimant;
    let mut claimed = claim_within_limits(store, None, &params.kinds, |now, limited, _| {
        let query = sqlx::query(sql::CLAIM_SUSPECT.as_str())
            .bind(now)
            .bind(params.kinds.clone())
            .bind(millis(c.lease))
            .bind(c.worker_id.clone())
            .bind(c.code_version.clone());
        bind_limits(query, limited, false)
    })
    .await?;
    Ok(claimed.pop())
}

/// Whether a suspect of the kinds waits for an isolated attempt.
pub(crate) async fn operation_suspect_exists(
    store: &PgStore,
    params: WorkExistsParams,
) -> Result<bool> {
    sqlx::query_scalar(sql::CLAIM_SUSPECT_EXISTS.as_str())
        .bind(store.now_bind())
        .bind(&params.kinds)
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)
}

/// Extends a running claim's lease; a stale token is [`Error::StaleClaim`].
pub(crate) async fn operation_heartbeat(
    store: &PgStore,
    params: HeartbeatParams,
) -> Result<DateTime<Utc>> {
    let lease: Option<DateTime<Utc>> = sqlx::query_scalar(sql::CLAIM_HEARTBEAT)
        .bind(store.now_bind())
        .bind(params.id.as_uuid())
        .bind(params.claim_token)
        .bind(millis(params.lease))
        .fetch_optional(&store.pool)
        .await
        .map_err(backend_error)?;
    lease.ok_or(Error::StaleClaim { id: params.id })
}

/// Extends the leases of many claims in one statement; returns the ids extended.
pub(crate) async fn operation_heartbeat_many(
    store: &PgStore,
    params: HeartbeatManyParams,
) -> Result<Vec<OperationId>> {
    if params.claims.is_empty() {
        return Ok(Vec::new());
    }
    let (ids, tokens) = columns(&params.claims);
    let mut tx = store.begin_with(sql::MATCH_BATCH_BY_HASH).await?;
    let extended: Vec<Uuid> = sqlx::query_scalar(sql::CLAIM_HEARTBEAT_MANY)
        .bind(store.now_bind())
        .bind(ids)
        .bind(tokens)
        .bind(millis(params.lease))
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
    tx.commit().await.map_err(backend_error)?;
    Ok(extended.into_iter().map(OperationId::from).collect())
}

/// Whether the claim is current: running under its token, its lease not expired.
pub(crate) async fn operation_claim_current(
    store: &PgStore,
    params: ClaimCurrentParams,
) -> Result<bool> {
    claim_current_on(&store.pool, store.now_bind(), params).await
}

/// Runs `claim_current.sql` on `executor` (the pool, or a fenced transaction being opened).
pub(crate) async fn claim_current_on<'e, E: sqlx::PgExecutor<'e>>(
    executor: E,
    now: Option<DateTime<Utc>>,
    params: ClaimCurrentParams,
) -> Result<bool> {
    sqlx::query_scalar(sql::CLAIM_CURRENT)
        .bind(now)
        .bind(params.id.as_uuid())
        .bind(params.claim_token)
        .fetch_one(executor)
        .await
        .map_err(backend_error)
}

/// Gives back unstarted claims; returns the ids given back.
pub(crate) async fn operation_claim_give_back(
    store: &PgStore,
    params: ClaimGiveBackParams,
) -> Result<Vec<OperationId>> {
    if params.claims.is_empty() {
        return Ok(Vec::new());
    }
    let (ids, tokens) = columns(&params.claims);
    let given: Vec<Uuid> = sqlx::query_scalar(sql::CLAIM_GIVE_BACK)
        .bind(store.now_bind())
        .bind(ids)
        .bind(tokens)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(given.into_iter().map(OperationId::from).collect())
}

/// The claims as two arrays, ids and tokens.
fn columns(claims: &[HeldClaim]) -> (Vec<Uuid>, Vec<Uuid>) {
    claims
        .iter()
        .map(|c| (*c.id.as_uuid(), c.claim_token))
        .unzip()
}

/// Whether an operation of the kinds is running, or claimable now.
pub(crate) async fn operation_work_exists(
    store: &PgStore,
    params: WorkExistsParams,
) -> Result<bool> {
    let mut tx = store.begin_with(sql::WALK_PENDING_IN_ORDER).await?;
    let exists = sqlx::query_scalar(sql::CLAIM_WORK_EXISTS.as_str())
        .bind(store.now_bind())
        .bind(&params.kinds)
        .fetch_one(&mut *tx)
        .await
        .map_err(backend_error)?;
    tx.commit().await.map_err(backend_error)?;
    Ok(exists)
}
