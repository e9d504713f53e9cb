//! Claims and what keeps them alive ([`WorkerStore`](oprec_core::WorkerStore)): claiming by id
//! (wake-ups) or the oldest eligible (polling), heartbeats, and whether a worker has work.
//!
//! Every claim skips rows another claimer holds (`FOR UPDATE SKIP LOCKED`), so many workers on
//! many hosts claim without waiting for each other, and splices in core's pause rule.

use chrono::{DateTime, Utc};
use oprec_core::store::{
    ClaimByIdsParams, ClaimCurrentParams, ClaimEligibleParams, ClaimGiveBackParams,
    ClaimSuspectParams, Claimant, HeartbeatManyParams, HeartbeatParams, HeldClaim,
    WorkExistsParams,
};
use oprec_core::{Claimed, Error, OperationId, Result};
use sqlx::postgres::PgRow;
use uuid::Uuid;

use crate::row::{self, millis};
use crate::{PgStore, backend_error, sql};

/// Claims the named operations that are claimable now; the others are left out.
pub(crate) async fn operation_claim_by_ids(
    store: &PgStore,
    params: ClaimByIdsParams,
) -> Result<Vec<Claimed>> {
    if params.ids.is_empty() {
        return Ok(Vec::new());
    }
    let c = &params.claimant;
    let rows = sqlx::query(sql::CLAIM_BY_IDS.as_str())
        .bind(store.now_bind())
        .bind(row::uuids(&params.ids))
        .bind(&params.kinds)
        .bind(millis(c.lease))
        .bind(&c.worker_id)
        .bind(&c.code_version)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    rows.iter().map(row::claimed).collect()
}

/// Claims up to `limit` eligible operations: those eligible for longer than
/// [`PRIORITY_AGING`](oprec_core::PRIORITY_AGING) first, then by priority (README, "Priorities").
pub(crate) async fn operation_claim_eligible(
    store: &PgStore,
    params: ClaimEligibleParams,
) -> Result<Vec<Claimed>> {
    if params.limit == 0 {
        return Ok(Vec::new());
    }
    let rows = claim_eligible_rows(store, &params.kinds, params.limit, &params.claimant).await?;
    let mut claimed: Vec<Claimed> = rows.iter().map(row::claimed).collect::<Result<_>>()?;
    // UPDATE ... RETURNING keeps no order; the pick's order is the promise.
    claimed.sort_by_key(|c| (c.next_eligible_at, c.id));
    Ok(claimed)
}

/// The claim of eligible rows, in a transaction that walks the pending index in order.
async fn claim_eligible_rows(
    store: &PgStore,
    kinds: &[String],
    limit: u32,
    c: &Claimant,
) -> Result<Vec<PgRow>> {
    let mut tx = store.begin_with(sql::WALK_PENDING_IN_ORDER).await?;
    let rows = sqlx::query(sql::CLAIM_ELIGIBLE.as_str())
        .bind(store.now_bind())
        .bind(kinds)
        .bind(i64::from(limit))
        .bind(millis(c.lease))
        .bind(&c.worker_id)
        .bind(&c.code_version)
        .bind(oprec_core::PRIORITY_AGING.num_milliseconds())
        .bind(&oprec_core::PRIORITY_LEVELS[..])
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?;
    tx.commit().await.map_err(backend_error)?;
    Ok(rows)
}

/// Claims one suspect, to run isolated (alone in its worker).
pub(crate) async fn operation_claim_suspect(
    store: &PgStore,
    params: ClaimSuspectParams,
) -> Result<Option<Claimed>> {
    let c = &params.claimant;
    let row = sqlx::query(sql::CLAIM_SUSPECT.as_str())
        .bind(store.now_bind())
        .bind(&params.kinds)
        .bind(millis(c.lease))
        .bind(&c.worker_id)
        .bind(&c.code_version)
        .fetch_optional(&store.pool)
        .await
        .map_err(backend_error)?;
    row.as_ref().map(row::claimed).transpose()
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
