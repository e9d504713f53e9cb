//! The end of a claim: completions ([`WorkerStore`](oprec_core::WorkerStore)) and rescues
//! ([`MaintenanceStore`](oprec_core::MaintenanceStore)) apply core's [`Transition`]s through one
//! statement, so that a rescued attempt and a completed one are written alike.
//!
//! Each transition is fenced as [`Transition::fence`] says: the row must still be running under
//! the claim's token, and for a vanished attempt its lease must have expired by the store's clock
//! (a heartbeat since the rescuer looked wins). What is not applied is stale and changes nothing.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use oprec_core::maintenance::RescueManyParams;
use oprec_core::store::{CompleteParams, CompleteResult};
use oprec_core::{Fence, Result, Transition};
use serde_json::Value;
use sqlx::Row;
use uuid::Uuid;

use crate::{PgStore, backend_error, row, sql};

/// Ends claims with their transitions; results in input order.
pub(crate) async fn operation_complete_many(
    store: &PgStore,
    params: Vec<CompleteParams>,
) -> Result<Vec<CompleteResult>> {
    apply(store, &params).await
}

/// Applies the rescuer's vanished transitions; results in input order.
pub(crate) async fn operation_rescue_many(
    store: &PgStore,
    params: RescueManyParams,
) -> Result<Vec<CompleteResult>> {
    apply(store, &params.rescues).await
}

/// One transition's fields, an array each, as `complete_apply.sql` reads them.
#[derive(Default)]
struct Columns<'a> {
    ids: Vec<Uuid>,
    tokens: Vec<Uuid>,
    statuses: Vec<&'static str>,
    terminal: Vec<bool>,
    eligible: Vec<Option<DateTime<Utc>>>,
    classes: Vec<Option<&'static str>>,
    errors: Vec<Option<Value>>,
    reasons: Vec<Option<&'static str>>,
    refunds: Vec<bool>,
    remote_ids: Vec<Option<&'a str>>,
    outcomes: Vec<&'static str>,
    crash_counted: Vec<bool>,
    expired_only: Vec<bool>,
    suspect: Vec<Option<bool>>,
    snoozed: Vec<bool>,
}

impl<'a> Columns<'a> {
    fn push(&mut self, p: &'a CompleteParams) -> Result<()> {
        let t: &'a Transition = &p.transition;
        self.ids.push(*p.id.as_uuid());
        self.tokens.push(p.claim_token);
        self.statuses.push(t.status().as_str());
        self.terminal.push(t.status().is_terminal());
        self.eligible.push(t.next_eligible_at());
        self.classes.push(t.failure_class().map(|c| c.as_str()));
        self.errors.push(t.error().map(row::json).transpose()?);
        self.reasons.push(t.terminal_reason().map(|r| r.as_str()));
        self.refunds.push(t.refunds_attempt());
        self.remote_ids.push(t.remote_id());
        self.outcomes.push(t.attempt_outcome().as_str());
        self.crash_counted.push(t.counts_toward_crash_loop());
        self.expired_only.push(t.fence() == Fence::ExpiredClaim);
        self.suspect.push(t.suspect_after());
        self.snoozed.push(t.is_snooze());
        Ok(())
    }
}

/// Writes the transitions in one statement and reports each one applied or stale.
async fn apply(store: &PgStore, params: &[CompleteParams]) -> Result<Vec<CompleteResult>> {
    if params.is_empty() {
        return Ok(Vec::new());
    }
    let mut tx = store.begin_with(sql::MATCH_BATCH_BY_HASH).await?;
    let results = apply_on(&mut *tx, store.now_bind(), params).await?;
    tx.commit().await.map_err(backend_error)?;
    record_stale(store, params, &results).await?;
    Ok(results)
}

/// Runs `complete_apply.sql` for `params` on `executor` (the pool, or a fenced transaction) and
/// reports each one applied or stale, without recording the stale ones.
pub(crate) async fn apply_on<'e, E: sqlx::PgExecutor<'e>>(
    executor: E,
    now: Option<DateTime<Utc>>,
    params: &[CompleteParams],
) -> Result<Vec<CompleteResult>> {
    let rows = apply_query(sql::COMPLETE_APPLY, now, params)?
        .fetch_all(executor)
        .await
        .map_err(backend_error)?;
    let applied: HashSet<(Uuid, Uuid)> = rows
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<std::result::Result<_, sqlx::Error>>()
        .map_err(backend_error)?;
    Ok(params
        .iter()
        .map(|p| {
            if applied.contains(&(*p.id.as_uuid(), p.claim_token)) {
                CompleteResult::Applied
            } else {
                CompleteResult::Stale
            }
        })
        .collect())
}

/// `statement` (complete_apply.sql) with `params`' transitions bound, one array per field.
pub(crate) fn apply_query<'a>(
    statement: impl sqlx::SqlSafeStr,
    now: Option<DateTime<Utc>>,
    params: &'a [CompleteParams],
) -> Result<sqlx::query::Query<'a, sqlx::Postgres, sqlx::postgres::PgArguments>> {
    let mut c = Columns::default();
    for p in params {
        c.push(p)?;
    }
    Ok(sqlx::query(statement)
        .bind(now)
        .bind(c.ids)
        .bind(c.tokens)
        .bind(c.statuses)
        .bind(c.terminal)
        .bind(c.eligible)
        .bind(c.classes)
        .bind(c.errors)
        .bind(c.reasons)
        .bind(c.refunds)
        .bind(c.remote_ids)
        .bind(c.outcomes)
        .bind(c.crash_counted)
        .bind(c.expired_only)
        .bind(c.suspect)
        .bind(c.snoozed))
}

/// Writes the worker completions the fence refused into the history of the attempts they
/// belong to (a rescue the fence refused brought no outcome: a heartbeat won).
pub(crate) async fn record_stale(
    store: &PgStore,
    params: &[CompleteParams],
    results: &[CompleteResult],
) -> Result<()> {
    let (mut ids, mut tokens, mut outcomes) = (Vec::new(), Vec::new(), Vec::new());
    for (p, r) in params.iter().zip(results) {
        if *r == CompleteResult::Stale && !p.transition.is_vanished() {
            ids.push(*p.id.as_uuid());
            tokens.push(p.claim_token);
            outcomes.push(p.transition.attempt_outcome().as_str());
        }
    }
    if ids.is_empty() {
        return Ok(());
    }
    sqlx::query(sql::COMPLETE_STALE)
        .bind(store.now_bind())
        .bind(ids)
        .bind(tokens)
        .bind(outcomes)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(())
}
