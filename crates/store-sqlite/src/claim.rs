//! Claims: pending, eligible operations within their deadline and held back by no control become
//! running, with attempt + 1, a fresh token (UUID v7, made here) and a lease; heartbeats extend a
//! claim's lease; and whether a worker of some kinds has anything to do.

use chrono::{DateTime, Utc};
use oprec_core::store::{
    ClaimByIdsParams, ClaimCurrentParams, ClaimEligibleParams, ClaimGiveBackParams,
    ClaimSuspectParams, Claimant, Claimed, HeartbeatManyParams, HeartbeatParams, HeldClaim,
    WorkExistsParams,
};
use oprec_core::{Error, OperationId, Result};
use serde::Serialize;
use sqlx::SqliteConnection;
use uuid::Uuid;

use crate::limits::{self, Limited};
use crate::row::{self, distinct_texts, json_text, parse_id, uuid_text};
use crate::{SqliteStore, backend_error, sql, time};

/// One operation to claim and the token its claim gets, as `claim_by_ids.sql` reads it.
#[derive(Serialize)]
struct ClaimRow<'a> {
    id: std::borrow::Cow<'a, str>,
    token: String,
}

/// See [`WorkerStore::operation_claim_by_ids`](oprec_core::WorkerStore::operation_claim_by_ids).
pub(crate) async fn operation_claim_by_ids(
    store: &SqliteStore,
    params: ClaimByIdsParams,
) -> Result<Vec<Claimed>> {
    let ids = distinct_texts(&params.ids);
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut tx = store.begin_write().await?;
    let mut limited = limits::for_claim(tx.conn(), &params.kinds, store.clock_now()).await?;
    let now = limited
        .as_ref()
        .map_or_else(|| store.clock_now(), Limited::now);
    let mut claimed = claim(
        tx.conn(),
        &ids,
        &params.kinds,
        &params.claimant,
        now,
        false,
        limited.as_mut(),
    )
    .await?;
    tx.commit().await?;
    claimed.sort_by_key(|c| c.id);
    Ok(claimed)
}

/// See [`WorkerStore::operation_claim_eligible`](oprec_core::WorkerStore::operation_claim_eligible).
pub(crate) async fn operation_claim_eligible(
    store: &SqliteStore,
    params: ClaimEligibleParams,
) -> Result<Vec<Claimed>> {
    if params.limit == 0 {
        return Ok(Vec::new());
    }
    // Picking and claiming happen under one write lock, so no other claimer can take a picked
    // row in between: where PostgreSQL claimers skip each other's locked rows, SQLite claimers
    // take turns.
    let kinds = json_text(&params.kinds)?;
    let mut tx = store.begin_write().await?;
    let mut limited = limits::for_claim(tx.conn(), &params.kinds, store.clock_now()).await?;
    let now = limited
        .as_ref()
        .map_or_else(|| store.clock_now(), Limited::now);
    let (blocked_kinds, blocked_dependencies) = limits::blocked(limited.as_ref())?;
    let now_text = time::text(now)?;
    let aging_cut = time::text(now - oprec_core::PRIORITY_AGING)?;
    // The aged operations first, then each priority level, highest first, until the limit is
    // reached (README, "Priorities"); each walk reads only eligible rows of its index.
    let mut ids: Vec<String> = sqlx::query_scalar(sql::CLAIM_ELIGIBLE.as_str())
        .bind(&now_text)
        .bind(&kinds)
        .bind(i64::from(params.limit))
        .bind(&aging_cut)
        .bind(&blocked_kinds)
        .bind(&blocked_dependencies)
        .fetch_all(tx.conn())
        .await
        .map_err(backend_error)?;
    for &level in params.levels() {
        let room = i64::from(params.limit) - ids.len() as i64;
        if room <= 0 {
            break;
        }
        let more: Vec<String> = sqlx::query_scalar(sql::CLAIM_ELIGIBLE_LEVEL.as_str())
            .bind(&now_text)
            .bind(&kinds)
            .bind(room)
            .bind(&aging_cut)
            .bind(level)
            .bind(&blocked_kinds)
            .bind(&blocked_dependencies)
            .fetch_all(tx.conn())
            .await
            .map_err(backend_error)?;
        ids.extend(more);
    }
    let mut claimed = claim(
        tx.conn(),
        &ids,
        &[],
        &params.claimant,
        now,
        false,
        limited.as_mut(),
    )
    .await?;
    tx.commit().await?;
    claimed.sort_by_key(|c| (c.next_eligible_at, c.id));
    Ok(claimed)
}

/// See [`WorkerStore::operation_claim_suspect`](oprec_core::WorkerStore::operation_claim_suspect).
pub(crate) async fn operation_claim_suspect(
    store: &SqliteStore,
    params: ClaimSuspectParams,
) -> Result<Option<Claimed>> {
    let mut tx = store.begin_write().await?;
    let mut limited = limits::for_claim(tx.conn(), &params.kinds, store.clock_now()).await?;
    let now = limited
        .as_ref()
        .map_or_else(|| store.clock_now(), Limited::now);
    let (blocked_kinds, blocked_dependencies) = limits::blocked(limited.as_ref())?;
    let ids: Vec<String> = sqlx::query_scalar(sql::CLAIM_SUSPECT.as_str())
        .bind(time::text(now)?)
        .bind(json_text(&params.kinds)?)
        .bind(&blocked_kinds)
        .bind(&blocked_dependencies)
        .fetch_all(tx.conn())
        .await
        .map_err(backend_error)?;
    let mut claimed = claim(
        tx.conn(),
        &ids,
        &[],
        &params.claimant,
        now,
        true,
        limited.as_mut(),
    )
    .await?;
    tx.commit().await?;
    Ok(claimed.pop())
}

/// See [`WorkerStore::operation_suspect_exists`](oprec_core::WorkerStore::operation_suspect_exists).
pub(crate) async fn operation_suspect_exists(
    store: &SqliteStore,
    params: WorkExistsParams,
) -> Result<bool> {
    sqlx::query_scalar(sql::CLAIM_SUSPECT_EXISTS.as_str())
        .bind(time::text(store.clock_now())?)
        .bind(json_text(&params.kinds)?)
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)
}

/// Claims those of `ids` (distinct, as stored text) that are still claimable at `now` (and of
/// one of `kinds`, unless empty), on the caller's write transaction: with `isolated`, suspects
/// only, marked isolated; otherwise operations that are not suspects. Under `limited`, only
/// those the limits across the fleet let it take, in the order given, and the claims are
/// recorded in the limits' windows.
async fn claim(
    conn: &mut SqliteConnection,
    ids: &[String],
    kinds: &[String],
    claimant: &Claimant,
    now: DateTime<Utc>,
    isolated: bool,
    limited: Option<&mut Limited>,
) -> Result<Vec<Claimed>> {
    match limited {
        None => claim_ids(conn, ids, kinds, claimant, now, isolated).await,
        Some(l) => {
            let allowed = limits::allowed(conn, l, ids).await?;
            let claimed = claim_ids(conn, &allowed, kinds, claimant, now, isolated).await?;
            limits::record_claims(conn, l, &claimed).await?;
            Ok(claimed)
        }
    }
}

/// Runs claim_by_ids.sql on `ids`, as [`claim`] says.
async fn claim_ids(
    conn: &mut SqliteConnection,
    ids: &[String],
    kinds: &[String],
    claimant: &Claimant,
    now: DateTime<Utc>,
    isolated: bool,
) -> Result<Vec<Claimed>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let input: Vec<ClaimRow> = ids
        .iter()
        .map(|id| ClaimRow {
            id: id.into(),
            token: uuid_text(&Uuid::now_v7()),
        })
        .collect();
    let rows = sqlx::query(sql::CLAIM_BY_IDS.as_str())
        .bind(time::text(now)?)
        .bind(time::text(time::after(now, claimant.lease)?)?)
        .bind(&claimant.worker_id)
        .bind(&claimant.code_version)
        .bind(json_text(&input)?)
        .bind(json_text(kinds)?)
        .bind(isolated)
        .fetch_all(conn)
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|r| Claimed::from_operation(row::operation(r)?))
        .collect()
}

/// See [`WorkerStore::operation_heartbeat`](oprec_core::WorkerStore::operation_heartbeat).
pub(crate) async fn operation_heartbeat(
    store: &SqliteStore,
    params: HeartbeatParams,
) -> Result<DateTime<Utc>> {
    let lease_until = time::after(store.clock_now(), params.lease)?;
    let _turn = store.write_turn().await;
    let lease: Option<String> = sqlx::query_scalar(sql::CLAIM_HEARTBEAT)
        .bind(time::text(lease_until)?)
        .bind(uuid_text(params.id.as_uuid()))
        .bind(uuid_text(&params.claim_token))
        .fetch_optional(&store.pool)
        .await
        .map_err(backend_error)?;
    match lease {
        Some(lease) => time::parse(&lease),
        None => Err(Error::StaleClaim { id: params.id }),
    }
}

/// See [`WorkerStore::operation_claim_current`](oprec_core::WorkerStore::operation_claim_current).
pub(crate) async fn operation_claim_current(
    store: &SqliteStore,
    params: ClaimCurrentParams,
) -> Result<bool> {
    let mut conn = store.pool.acquire().await.map_err(backend_error)?;
    claim_current_on(&mut conn, &time::text(store.clock_now())?, params).await
}

/// Runs `claim_current.sql` on `conn` (a pooled connection, or a fenced transaction being
/// opened) at the time `now`.
pub(crate) async fn claim_current_on(
    conn: &mut SqliteConnection,
    now: &str,
    params: ClaimCurrentParams,
) -> Result<bool> {
    sqlx::query_scalar(sql::CLAIM_CURRENT)
        .bind(now)
        .bind(uuid_text(params.id.as_uuid()))
        .bind(uuid_text(&params.claim_token))
        .fetch_one(conn)
        .await
        .map_err(backend_error)
}

/// See [`WorkerStore::operation_heartbeat_many`](oprec_core::WorkerStore::operation_heartbeat_many).
pub(crate) async fn operation_heartbeat_many(
    store: &SqliteStore,
    params: HeartbeatManyParams,
) -> Result<Vec<OperationId>> {
    if params.claims.is_empty() {
        return Ok(Vec::new());
    }
    let lease_until = time::after(store.clock_now(), params.lease)?;
    fenced(
        store,
        sql::CLAIM_HEARTBEAT_MANY,
        lease_until,
        &params.claims,
    )
    .await
}

/// See [`WorkerStore::operation_claim_give_back`](oprec_core::WorkerStore::operation_claim_give_back).
pub(crate) async fn operation_claim_give_back(
    store: &SqliteStore,
    params: ClaimGiveBackParams,
) -> Result<Vec<OperationId>> {
    if params.claims.is_empty() {
        return Ok(Vec::new());
    }
    fenced(
        store,
        sql::CLAIM_GIVE_BACK,
        store.clock_now(),
        &params.claims,
    )
    .await
}

/// Runs `statement` with the time `at` and the claims as its JSON input, in this process's
/// writing turn; returns the ids it changed.
async fn fenced(
    store: &SqliteStore,
    statement: &'static str,
    at: DateTime<Utc>,
    claims: &[HeldClaim],
) -> Result<Vec<OperationId>> {
    let input: Vec<ClaimRow> = claims
        .iter()
        .map(|c| ClaimRow {
            id: uuid_text(c.id.as_uuid()).into(),
            token: uuid_text(&c.claim_token),
        })
        .collect();
    let _turn = store.write_turn().await;
    let ids: Vec<String> = sqlx::query_scalar(statement)
        .bind(time::text(at)?)
        .bind(json_text(&input)?)
        .fetch_all(&store.pool)
        .await
        .map_err(backend_error)?;
    ids.iter().map(|id| parse_id(id)).collect()
}

/// See [`WorkerStore::operation_work_exists`](oprec_core::WorkerStore::operation_work_exists).
pub(crate) async fn operation_work_exists(
    store: &SqliteStore,
    params: WorkExistsParams,
) -> Result<bool> {
    sqlx::query_scalar(sql::CLAIM_WORK_EXISTS.as_str())
        .bind(time::text(store.clock_now())?)
        .bind(json_text(&params.kinds)?)
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)
}
