//! The end of a claim, for a worker's completions and the rescuer's vanished attempts alike: one
//! apply, `complete_apply.sql`, writes each transition core decided, fenced as
//! [`Transition::fence`] says, and `complete_attempts.sql` writes the attempt rows of the claims
//! it ended, in the same transaction.

use std::collections::HashMap;

use oprec_core::maintenance::RescueManyParams;
use oprec_core::store::{CompleteParams, CompleteResult};
use oprec_core::{Error, Fence, OperationId, Result, Transition};
use serde::Serialize;
use sqlx::SqliteConnection;

use crate::row::{Columns, json_text, uuid_text};
use crate::{SqliteStore, backend_error, sql, time};

/// One transition as the stored text of what it writes: a row of `complete_apply.sql`'s input.
#[derive(Serialize)]
struct ApplyRow {
    id: String,
    token: String,
    status: &'static str,
    next_eligible_at: Option<String>,
    failure_class: Option<&'static str>,
    error: Option<String>,
    terminal_reason: Option<&'static str>,
    terminal_at: Option<String>,
    remote_id: Option<String>,
    refund: bool,
    crash_counted: bool,
    expired_fence: bool,
    suspect: Option<bool>,
    snoozed: bool,
    /// For the attempt row only.
    #[serde(skip)]
    outcome: &'static str,
}

impl ApplyRow {
    fn new(p: &CompleteParams, now: &str) -> Result<Self> {
        let t: &Transition = &p.transition;
        Ok(ApplyRow {
            id: uuid_text(p.id.as_uuid()),
            token: uuid_text(&p.claim_token),
            status: t.status().as_str(),
            next_eligible_at: time::opt_text(t.next_eligible_at())?,
            failure_class: t.failure_class().map(|c| c.as_str()),
            error: t.error().map(json_text).transpose()?,
            terminal_reason: t.terminal_reason().map(|r| r.as_str()),
            terminal_at: t.status().is_terminal().then(|| now.to_owned()),
            remote_id: t.remote_id().map(str::to_owned),
            refund: t.refunds_attempt(),
            crash_counted: t.counts_toward_crash_loop(),
            expired_fence: t.fence() == Fence::ExpiredClaim,
            suspect: t.suspect_after(),
            snoozed: t.is_snooze(),
            outcome: t.attempt_outcome().as_str(),
        })
    }
}

/// One attempt row, as `complete_attempts.sql` reads it.
#[derive(Serialize)]
struct AttemptRow<'a> {
    operation_id: String,
    attempt: i64,
    claimed_at: String,
    ended_at: &'a str,
    outcome: &'static str,
    failure_class: Option<&'static str>,
    error: Option<&'a str>,
    worker_id: Option<String>,
    code_version: Option<String>,
    isolated: bool,
    claim_token: &'a str,
}

/// See [`WorkerStore::operation_complete_many`](oprec_core::WorkerStore::operation_complete_many).
pub(crate) async fn operation_complete_many(
    store: &SqliteStore,
    params: Vec<CompleteParams>,
) -> Result<Vec<CompleteResult>> {
    apply(store, &params).await
}

/// See [`MaintenanceStore::operation_rescue_many`](oprec_core::MaintenanceStore::operation_rescue_many):
/// the same apply, each vanished transition fenced by its lease having expired.
pub(crate) async fn operation_rescue_many(
    store: &SqliteStore,
    params: RescueManyParams,
) -> Result<Vec<CompleteResult>> {
    apply(store, &params.rescues).await
}

/// Applies `params` in one write transaction; the results are in input order.
async fn apply(store: &SqliteStore, params: &[CompleteParams]) -> Result<Vec<CompleteResult>> {
    if params.is_empty() {
        return Ok(Vec::new());
    }
    let now = time::text(store.clock_now())?;
    let mut tx = store.begin_write().await?;
    let results = apply_on(tx.conn(), params, &now).await?;
    record_stale(tx.conn(), params, &results, &now).await?;
    tx.commit().await?;
    Ok(results)
}

/// Applies `params` on `conn`, inside the caller's write transaction (an ordinary completion's,
/// or a fenced one), without recording the stale ones; the results are in input order.
pub(crate) async fn apply_on(
    conn: &mut SqliteConnection,
    params: &[CompleteParams],
    now: &str,
) -> Result<Vec<CompleteResult>> {
    // One statement cannot apply two transitions to the same row, so the n-th transition of an
    // operation in this batch goes in round n: rounds run in batch order, as if the transitions
    // were written one by one.
    let mut rounds: Vec<Vec<(usize, ApplyRow)>> = Vec::new();
    let mut seen: HashMap<OperationId, usize> = HashMap::new();
    for (i, p) in params.iter().enumerate() {
        let round = seen.entry(p.id).or_insert(0);
        if rounds.len() <= *round {
            rounds.push(Vec::new());
        }
        rounds[*round].push((i, ApplyRow::new(p, now)?));
        *round += 1;
    }
    let mut results = vec![CompleteResult::Stale; params.len()];
    for round in &rounds {
        for index in apply_round(conn, round, now).await? {
            results[index] = CompleteResult::Applied;
        }
    }
    Ok(results)
}

/// One refused completion, as `complete_stale.sql` reads it.
#[derive(Serialize)]
struct StaleRow {
    id: String,
    token: String,
    outcome: &'static str,
}

/// Writes the worker completions the fence refused into the history of the attempts they
/// belong to (a rescue the fence refused brought no outcome: a heartbeat won).
pub(crate) async fn record_stale(
    conn: &mut SqliteConnection,
    params: &[CompleteParams],
    results: &[CompleteResult],
    now: &str,
) -> Result<()> {
    let stale: Vec<StaleRow> = params
        .iter()
        .zip(results)
        .filter(|(p, r)| **r == CompleteResult::Stale && !p.transition.is_vanished())
        .map(|(p, _)| StaleRow {
            id: uuid_text(p.id.as_uuid()),
            token: uuid_text(&p.claim_token),
            outcome: p.transition.attempt_outcome().as_str(),
        })
        .collect();
    if stale.is_empty() {
        return Ok(());
    }
    sqlx::query(sql::COMPLETE_STALE)
        .bind(now)
        .bind(json_text(&stale)?)
        .execute(conn)
        .await
        .map_err(backend_error)?;
    Ok(())
}

/// Applies one round (distinct operations, each with its batch index), writes the attempt rows
/// of the claims it ended, and returns the batch indexes of those applied.
async fn apply_round(
    conn: &mut SqliteConnection,
    round: &[(usize, ApplyRow)],
    now: &str,
) -> Result<Vec<usize>> {
    let input: Vec<&ApplyRow> = round.iter().map(|(_, r)| r).collect();
    let ended = sqlx::query(sql::COMPLETE_APPLY)
        .bind(now)
        .bind(json_text(&input)?)
        .fetch_all(&mut *conn)
        .await
        .map_err(backend_error)?;
    if ended.is_empty() {
        return Ok(Vec::new());
    }
    let by_id: HashMap<&str, &(usize, ApplyRow)> =
        round.iter().map(|e| (e.1.id.as_str(), e)).collect();
    let mut applied = Vec::with_capacity(ended.len());
    let mut history = Vec::with_capacity(ended.len());
    for r in &ended {
        let c = Columns(r);
        let id = c.text("id")?;
        let (index, row) = by_id.get(id.as_str()).copied().ok_or_else(|| {
            Error::backend(false, format!("a claim ended that was not asked for: {id}"))
        })?;
        applied.push(*index);
        history.push(AttemptRow {
            // The attempt as claimed, before a refund gave it back.
            attempt: c.int("attempt")? + i64::from(row.refund),
            operation_id: id,
            claimed_at: c.text("claimed_at")?,
            ended_at: now,
            outcome: row.outcome,
            failure_class: row.failure_class,
            error: row.error.as_deref(),
            worker_id: c.opt_text("worker_id")?,
            code_version: c.opt_text("code_version")?,
            isolated: c.flag("isolated")?,
            claim_token: &row.token,
        });
    }
    sqlx::query(sql::COMPLETE_ATTEMPTS)
        .bind(json_text(&history)?)
        .execute(&mut *conn)
        .await
        .map_err(backend_error)?;
    Ok(applied)
}
