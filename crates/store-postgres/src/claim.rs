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
    claim_within_limits(store, None, &params.kinds, |now, limited, capped| {
        let statement = if capped {
            sql::CLAIM_BY_IDS_CAPPED.as_str()
        } else {
            sql::CLAIM_BY_IDS.as_str()
        };
        by_ids_query(statement, now, &params, limited, capped)
    })
    .await
}

/// `statement` (claim_by_ids.sql, plain or capped) with the claim's parameters bound.
fn by_ids_query(
    statement: impl sqlx::SqlSafeStr,
    now: Option<DateTime<Utc>>,
    params: &ClaimByIdsParams,
    limited: Option<&Limited>,
    capped: bool,
) -> ClaimQuery {
    let ids = row::uuids(&params.ids);
    let query = claim_query(statement, now, ids, params.kinds.clone(), &params.claimant);
    bind_limits(query, limited, capped)
}

/// A claim statement with its first six parameters bound, as both claims take them: "now", the
/// two that say what to claim, then the claimant (lease in ms, worker, code version).
fn claim_query<A, B>(
    statement: impl sqlx::SqlSafeStr,
    now: Option<DateTime<Utc>>,
    first: A,
    second: B,
    claimant: &oprec_core::store::Claimant,
) -> ClaimQuery
where
    A: for<'q> sqlx::Encode<'q, sqlx::Postgres> + sqlx::Type<sqlx::Postgres> + Send + 'static,
    B: for<'q> sqlx::Encode<'q, sqlx::Postgres> + sqlx::Type<sqlx::Postgres> + Send + 'static,
{
    sqlx::query(statement)
        .bind(now)
        .bind(first)
        .bind(second)
        .bind(millis(claimant.lease))
        .bind(claimant.worker_id.clone())
        .bind(claimant.code_version.clone())
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
    let opening = Some(sql::WALK_PENDING_IN_ORDER);
    let mut claimed = claim_within_limits(store, opening, &params.kinds, |now, limited, capped| {
        let statement = if capped {
            sql::CLAIM_ELIGIBLE_CAPPED.as_str()
        } else {
            sql::CLAIM_ELIGIBLE.as_str()
        };
        eligible_query(statement, now, &params, limited, capped)
    })
    .await?;
    // UPDATE ... RETURNING keeps no order; the pick's order is the promise.
    claimed.sort_by_key(|c| (c.next_eligible_at, c.id));
    Ok(claimed)
}

/// `statement` (claim_eligible.sql, plain or capped) with the claim's parameters bound.
fn eligible_query(
    statement: impl sqlx::SqlSafeStr,
    now: Option<DateTime<Utc>>,
    params: &ClaimEligibleParams,
    limited: Option<&Limited>,
    capped: bool,
) -> ClaimQuery {
    let limit = i64::from(params.limit);
    let query = claim_query(
        statement,
        now,
        params.kinds.clone(),
        limit,
        &params.claimant,
    )
    .bind(oprec_core::PRIORITY_AGING.num_milliseconds())
    .bind(params.levels());
    bind_limits(query, limited, capped)
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
    let mut tx = store.begin_with(sql::MATCH_BATCH_BY_HASH).await?;
    let extended: Vec<Uuid> = heartbeat_query(sql::CLAIM_HEARTBEAT_MANY, store.now_bind(), &params)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend_error)?
        .iter()
        .map(|r| sqlx::Row::try_get(r, 0))
        .collect::<std::result::Result<_, sqlx::Error>>()
        .map_err(backend_error)?;
    tx.commit().await.map_err(backend_error)?;
    Ok(extended.into_iter().map(OperationId::from).collect())
}

/// `statement` (claim_heartbeat_many.sql) with the claims and the lease bound.
fn heartbeat_query(
    statement: impl sqlx::SqlSafeStr,
    now: Option<DateTime<Utc>>,
    params: &HeartbeatManyParams,
) -> ClaimQuery {
    let (ids, tokens) = columns(&params.claims);
    sqlx::query(statement)
        .bind(now)
        .bind(ids)
        .bind(tokens)
        .bind(millis(params.lease))
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

/// The claims' plans on a table whose statistics say what most tables' say (every operation of
/// priority 0, analyzed): each claim reads the rows it takes and little more. Run through
/// `EXPLAIN ANALYZE` of the statements as the store binds them, in the claim's own transaction.
#[cfg(test)]
mod plans {
    use super::*;
    use crate::test_common as common;
    use oprec_core::store::Claimant;

    /// Pending operations in the table, all eligible, all of priority 0.
    const PENDING: i64 = 20_000;
    /// Operations each claim asks for.
    const LIMIT: u32 = 500;

    async fn store_with_pending() -> PgStore {
        let store = common::fresh_store(2).await;
        sqlx::query(
            "INSERT INTO operations (id, kind, payload, next_eligible_at, created_at, updated_at)
             SELECT oprec_uuidv7(now()), 'k', '{}', now() - interval '1 minute', now(), now()
             FROM generate_series(1, $1)",
        )
        .bind(PENDING)
        .execute(&store.pool)
        .await
        .expect("pending operations");
        sqlx::query("ANALYZE operations")
            .execute(&store.pool)
            .await
            .expect("analyze");
        store
    }

    fn claimant() -> Claimant {
        Claimant {
            worker_id: "w".into(),
            code_version: None,
            lease: chrono::Duration::seconds(30),
        }
    }

    /// A claim of up to [`LIMIT`] of kind `k`, oldest eligible first.
    fn eligible() -> ClaimEligibleParams {
        ClaimEligibleParams {
            kinds: vec!["k".into()],
            limit: LIMIT,
            claimant: claimant(),
            above_default_only: false,
        }
    }

    /// The completions that end each of `claimed` as succeeded.
    fn succeeded(claimed: &[Claimed]) -> Vec<oprec_core::store::CompleteParams> {
        claimed
            .iter()
            .map(|c| oprec_core::store::CompleteParams {
                id: c.id,
                claim_token: c.claim_token(),
                transition: oprec_core::Transition::succeeded(None),
            })
            .collect()
    }

    /// Over every node of `plan` that reads `operations`: the rows read and thrown away by a
    /// filter (times the node's loops), and the nodes that read the whole table.
    fn reads(plan: &serde_json::Value, removed: &mut f64, seq_scans: &mut Vec<String>) {
        if plan["Relation Name"] == "operations" {
            let loops = plan["Actual Loops"].as_f64().unwrap_or(1.0);
            *removed += plan["Rows Removed by Filter"].as_f64().unwrap_or(0.0) * loops;
            if plan["Node Type"] == "Seq Scan" {
                seq_scans.push(plan["Alias"].to_string());
            }
        }
        for child in plan["Plans"].as_array().into_iter().flatten() {
            reads(child, removed, seq_scans);
        }
    }

    /// Runs `query` (an [`explained`] statement) in a transaction opened by `opening` (none:
    /// autocommit, as a claim by ids runs), rolled back; returns the plan's top node.
    async fn plan_of(
        store: &PgStore,
        opening: Option<&'static str>,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> serde_json::Value {
        let mut tx = match opening {
            Some(o) => store.begin_with(o).await.expect("begin"),
            None => store.pool.begin().await.expect("begin"),
        };
        let row = query.fetch_one(&mut *tx).await.expect("explain");
        tx.rollback().await.expect("rollback");
        let plan: serde_json::Value = sqlx::Row::get(&row, 0);
        plan[0]["Plan"].clone()
    }

    /// Runs `query` (an [`explained`] `what`) as [`plan_of`] does, and checks that it read no
    /// whole `operations` and threw away fewer of its rows than a claim takes (printing the plan
    /// if not); returns the rows the statement returned.
    async fn reads_little(
        store: &PgStore,
        what: &str,
        opening: Option<&'static str>,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> f64 {
        let top = &plan_of(store, opening, query).await;
        let (mut removed, mut seq_scans) = (0.0, Vec::new());
        reads(top, &mut removed, &mut seq_scans);
        let plan = serde_json::to_string_pretty(top).unwrap_or_default();
        assert!(
            removed < f64::from(LIMIT),
            "{what} read and threw away {removed} rows of operations: {plan}"
        );
        assert!(
            seq_scans.is_empty(),
            "{what} read the whole table ({seq_scans:?}): {plan}"
        );
        top["Actual Rows"].as_f64().unwrap_or(0.0)
    }

    /// `statement` under `EXPLAIN`, run for its figures: rows, and pages read (`BUFFERS`).
    fn explained(statement: &str) -> sqlx::AssertSqlSafe<String> {
        sqlx::AssertSqlSafe(format!(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement}"
        ))
    }

    /// A claim of the oldest eligible walks each priority level through the priority index: a
    /// level with no operation costs one probe, not a walk through every eligible row of the
    /// other levels (before, each of the empty levels 2 and 1 read all 20,000 here), and the
    /// claimed rows are updated through the primary key, not found by reading the whole table.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_claim_of_the_oldest_reads_what_it_takes() {
        let store = store_with_pending().await;
        let params = eligible();
        assert!(
            params.levels().len() >= 3,
            "levels above and below the default"
        );
        let statement = explained(sql::CLAIM_ELIGIBLE.as_str());
        let query = eligible_query(statement, None, &params, None, false);
        let opening = Some(sql::WALK_PENDING_IN_ORDER);
        let claimed = reads_little(&store, "the claim", opening, query).await;
        assert_eq!(claimed, f64::from(LIMIT));
    }

    /// A claim by ids (wake-ups) locks and updates the claimed rows through the primary key, and
    /// so does the mark of the wake-ups published for a batch just enqueued.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_claim_by_ids_reads_what_it_takes() {
        let store = store_with_pending().await;
        let ids: Vec<OperationId> =
            sqlx::query_scalar::<_, Uuid>("SELECT id FROM operations ORDER BY id LIMIT $1")
                .bind(i64::from(LIMIT))
                .fetch_all(&store.pool)
                .await
                .expect("ids")
                .into_iter()
                .map(OperationId::from_uuid)
                .collect();
        let params = ClaimByIdsParams {
            ids,
            kinds: vec!["k".into()],
            claimant: claimant(),
        };
        let statement = explained(sql::CLAIM_BY_IDS.as_str());
        let query = by_ids_query(statement, None, &params, None, false);
        let claimed = reads_little(&store, "the claim", None, query).await;
        assert_eq!(claimed, f64::from(LIMIT));
        let marked = oprec_core::store::MarkWokenParams {
            ids: params.ids.clone(),
        };
        let statement = explained(sql::ENQUEUE_MARK_WOKEN);
        let query = crate::enqueue::mark_woken_query(statement, None, &marked);
        reads_little(&store, "the mark", None, query).await;
    }

    /// The pages of `operations` and its indexes that every node of `plan` reading them hit or read.
    fn pages(plan: &serde_json::Value) -> f64 {
        let own = if plan["Relation Name"] == "operations" {
            plan["Shared Hit Blocks"].as_f64().unwrap_or(0.0)
                + plan["Shared Read Blocks"].as_f64().unwrap_or(0.0)
        } else {
            0.0
        };
        own + plan["Plans"]
            .as_array()
            .into_iter()
            .flatten()
            .map(pages)
            .sum::<f64>()
    }

    /// The idle check (`--exit-when-idle`) finds a running operation among the newest leases:
    /// after 10,000 claims have ended, the oldest end of the running rows' lease index holds an
    /// entry for each of them until a vacuum, and the check walked all of those first.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_idle_check_reads_a_few_pages_after_many_claims_ended() {
        let store = store_with_pending().await;
        let claim = || operation_claim_eligible(&store, eligible());
        for _ in 0..20 {
            let claimed = claim().await.expect("claim");
            crate::complete::operation_complete_many(&store, succeeded(&claimed))
                .await
                .expect("complete");
        }
        assert_eq!(claim().await.expect("claim").len(), LIMIT as usize);
        let query = sqlx::query(explained(sql::CLAIM_WORK_EXISTS.as_str()))
            .bind(store.now_bind())
            .bind(vec!["k".to_string()]);
        let top = &plan_of(&store, Some(sql::WALK_PENDING_IN_ORDER), query).await;
        let read = pages(top);
        let plan = serde_json::to_string_pretty(top).unwrap_or_default();
        assert!(read <= 8.0, "the idle check read {read} pages: {plan}");
    }

    /// A heartbeat of every claim a worker holds and a completion of them reach the rows through
    /// the primary key: told the ids' number (500 here), the planner read the whole table instead.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_heartbeat_and_a_completion_read_what_they_touch() {
        use oprec_core::store::HeartbeatManyParams;
        let store = store_with_pending().await;
        let claimed = operation_claim_eligible(&store, eligible())
            .await
            .expect("claim");
        assert_eq!(claimed.len(), LIMIT as usize);
        let heartbeat = HeartbeatManyParams {
            claims: claimed.iter().map(HeldClaim::from).collect(),
            lease: chrono::Duration::seconds(30),
        };
        let statement = explained(sql::CLAIM_HEARTBEAT_MANY);
        let query = heartbeat_query(statement, None, &heartbeat);
        let opening = Some(sql::MATCH_BATCH_BY_HASH);
        let extended = reads_little(&store, "the heartbeat", opening, query).await;
        assert_eq!(extended, f64::from(LIMIT));
        let completions = succeeded(&claimed);
        let statement = explained(sql::COMPLETE_APPLY);
        let query = crate::complete::apply_query(statement, None, &completions).expect("bind");
        let ended = reads_little(&store, "the completion", opening, query).await;
        assert_eq!(ended, f64::from(LIMIT));
    }
}
