//! Retention ([`RetentionStore`](oprec_core::RetentionStore)): removing one batch of finished
//! operations past their retention, as core's rule says, and reading what a kind holds for the
//! preview, as the PostgreSQL store does; and the upkeep of what removal leaves (old per-minute
//! attempt counts; no vacuum: SQLite reuses the pages of removed rows).

use oprec_core::Result;
use oprec_core::retention::{
    AttemptMinutesRemoveParams, BacklogSlotsCompactParams, KindScope, RetentionDeleteParams,
    RetentionFigures, RetentionFiguresParams, StoreVacuumParams, VacuumOutcome,
};

use crate::row::{Columns, json_text};
use crate::{SqliteStore, backend_error, sql, time};

/// The kinds bound as `?1` (a JSON array) and whether they are excluded (`?2`).
fn kinds(scope: &KindScope) -> Result<(String, bool)> {
    Ok(match scope {
        KindScope::Only(k) => (json_text(&[k])?, false),
        KindScope::AllExcept(ks) => (json_text(ks)?, true),
    })
}

/// Removes one batch; returns how many operations went.
pub(crate) async fn operation_retention_delete(
    store: &SqliteStore,
    params: RetentionDeleteParams,
) -> Result<u64> {
    let (kinds, except) = kinds(&params.kinds)?;
    let _turn = store.write_turn().await;
    let done = sqlx::query(sql::RETENTION_DELETE)
        .bind(kinds)
        .bind(except)
        .bind(params.status.as_str())
        .bind(time::text(params.finished_before)?)
        .bind(i64::from(params.limit))
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected())
}

/// What one kind holds in one finished status, against a cutoff.
pub(crate) async fn operation_retention_figures(
    store: &SqliteStore,
    params: RetentionFiguresParams,
) -> Result<RetentionFigures> {
    let r = sqlx::query(sql::RETENTION_FIGURES)
        .bind(&params.kind)
        .bind(params.status.as_str())
        .bind(time::text(params.finished_before)?)
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)?;
    let c = Columns(&r);
    Ok(RetentionFigures {
        past_retention: c.u64("past_retention")?,
        oldest_finished_at: c.opt_time("oldest_finished_at")?,
    })
}

/// Removes the per-minute counts of attempts and of promotions to dead of the minutes before the
/// cutoff.
pub(crate) async fn attempt_minutes_remove(
    store: &SqliteStore,
    params: AttemptMinutesRemoveParams,
) -> Result<u64> {
    let _turn = store.write_turn().await;
    let before = time::text(params.before)?;
    let mut removed = 0;
    for statement in [
        sql::RETENTION_ATTEMPT_MINUTES_REMOVE,
        sql::RETENTION_DEAD_MINUTES_REMOVE,
    ] {
        removed += sqlx::query(statement)
            .bind(&before)
            .execute(&store.pool)
            .await
            .map_err(backend_error)?
            .rows_affected();
    }
    Ok(removed)
}

/// Removes the settled creation slots of `backlog_slots` that count nothing (SQLite's counts
/// have no shards to fold: one writer at a time).
pub(crate) async fn backlog_slots_compact(
    store: &SqliteStore,
    params: BacklogSlotsCompactParams,
) -> Result<u64> {
    let _turn = store.write_turn().await;
    let done = sqlx::query(sql::RETENTION_BACKLOG_SLOTS_REMOVE)
        .bind(time::text(params.before)?)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(done.rows_affected())
}

/// Nothing to do: SQLite puts the pages of removed rows on its free list and reuses them for new
/// rows, so the file stops growing once removal keeps pace (a VACUUM would only give the space
/// back to the file system, rewriting the whole database under the write lock).
pub(crate) async fn store_vacuum(_: &SqliteStore, _: StoreVacuumParams) -> Result<VacuumOutcome> {
    Ok(VacuumOutcome::NotNeeded {
        reason: "SQLite reuses the pages of removed rows".into(),
    })
}
