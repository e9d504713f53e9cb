//! Retention ([`RetentionStore`](oprec_core::RetentionStore)): removing one batch of finished
//! operations past their retention, as core's rule says, and reading what a kind holds for the
//! preview. The batch is one statement that walks the partial index of finished operations by
//! kind and finish time, in a transaction whose planner settings keep it there whatever the
//! statistics say ([`sql::WALK_FINISHED_IN_ORDER`]). Beside it,
//! the upkeep of what removal leaves: old per-minute attempt counts, the backlog's counts per
//! creation slot folded, and a VACUUM of the tables when the server's autovacuum is off.

use oprec_core::Result;
use oprec_core::retention::{
    AttemptMinutesRemoveParams, BacklogSlotsCompactParams, KindScope, RetentionDeleteParams,
    RetentionFigures, RetentionFiguresParams, StoreVacuumParams, VacuumOutcome,
};

use crate::row::Columns;
use crate::{PgStore, backend_error, sql};

/// The kinds bound as `$1` and whether they are excluded (`$2`).
fn kinds(scope: &KindScope) -> (Vec<String>, bool) {
    match scope {
        KindScope::Only(k) => (vec![k.clone()], false),
        KindScope::AllExcept(ks) => (ks.clone(), true),
    }
}

/// Removes one batch; returns how many operations went.
pub(crate) async fn operation_retention_delete(
    store: &PgStore,
    params: RetentionDeleteParams,
) -> Result<u64> {
    let (kinds, except) = kinds(&params.kinds);
    let mut tx = store.begin_with(sql::WALK_FINISHED_IN_ORDER).await?;
    let done = sqlx::query(sql::RETENTION_DELETE)
        .bind(kinds)
        .bind(except)
        .bind(params.status.as_str())
        .bind(params.finished_before)
        .bind(i64::from(params.limit))
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    tx.commit().await.map_err(backend_error)?;
    Ok(done.rows_affected())
}

/// What one kind holds in one finished status, against a cutoff.
pub(crate) async fn operation_retention_figures(
    store: &PgStore,
    params: RetentionFiguresParams,
) -> Result<RetentionFigures> {
    let r = sqlx::query(sql::RETENTION_FIGURES)
        .bind(&params.kind)
        .bind(params.status.as_str())
        .bind(params.finished_before)
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)?;
    let c = Columns(&r);
    Ok(RetentionFigures {
        past_retention: c.big_count("past_retention")?,
        oldest_finished_at: c.get("oldest_finished_at")?,
    })
}

/// Removes the per-minute counts of attempts and of promotions to dead of the minutes before the
/// cutoff.
pub(crate) async fn attempt_minutes_remove(
    store: &PgStore,
    params: AttemptMinutesRemoveParams,
) -> Result<u64> {
    let removed: i64 = sqlx::query_scalar(sql::RETENTION_ATTEMPT_MINUTES_REMOVE)
        .bind(params.before)
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(removed.unsigned_abs())
}

/// Folds the shards of settled creation slots of `backlog_slots` into one row each and removes
/// the slots that count nothing, in one transaction; then removes slots of `creation_slots`
/// (where the ids created per slot lie) older than a day that no operation is left in, up to
/// 200 a pass. Returns how many rows were folded or removed.
pub(crate) async fn backlog_slots_compact(
    store: &PgStore,
    params: BacklogSlotsCompactParams,
) -> Result<u64> {
    let mut tx = store.pool.begin().await.map_err(backend_error)?;
    let folded: i64 = sqlx::query_scalar(sql::RETENTION_BACKLOG_SLOTS_FOLD)
        .bind(params.before)
        .fetch_one(&mut *tx)
        .await
        .map_err(backend_error)?;
    let removed = sqlx::query(sql::RETENTION_BACKLOG_SLOTS_REMOVE)
        .bind(params.before)
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    tx.commit().await.map_err(backend_error)?;
    // After the lock a restore of old operations takes shared, in a statement of its own: its
    // snapshot then holds what such a restore inserted.
    let mut tx = store.pool.begin().await.map_err(backend_error)?;
    sqlx::query("SELECT pg_advisory_xact_lock(creation_slots_lock())")
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    let slots_removed = sqlx::query(sql::RETENTION_CREATION_SLOTS_REMOVE)
        .bind(params.before)
        .execute(&mut *tx)
        .await
        .map_err(backend_error)?;
    tx.commit().await.map_err(backend_error)?;
    Ok(folded.unsigned_abs() + removed.rows_affected() + slots_removed.rows_affected())
}

/// The tables whose rows retention removes or every attempt rewrites, in the order vacuumed
/// (`sql/retention_vacuum.sql` names them alike).
const VACUUMED: [&str; 7] = [
    "operations",
    "operation_attempts",
    "operation_steps",
    "operation_counts",
    "attempt_minutes",
    "backlog_slots",
    "creation_slots",
];

/// Vacuums (and analyzes) the tables when the server's autovacuum does not keep them. A VACUUM
/// takes no lock that stops readers or writers; it runs outside any transaction.
pub(crate) async fn store_vacuum(store: &PgStore, _: StoreVacuumParams) -> Result<VacuumOutcome> {
    let covered: bool = sqlx::query_scalar(sql::RETENTION_AUTOVACUUM)
        .bind(VACUUMED.map(str::to_owned).to_vec())
        .fetch_one(&store.pool)
        .await
        .map_err(backend_error)?;
    if covered {
        return Ok(VacuumOutcome::NotNeeded {
            reason: "the server's autovacuum keeps the tables".into(),
        });
    }
    sqlx::raw_sql(sql::RETENTION_VACUUM)
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
    Ok(VacuumOutcome::Vacuumed {
        tables: VACUUMED.map(str::to_owned).to_vec(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_vacuum_names_the_tables_it_reports() {
        let names = super::sql::RETENTION_VACUUM
            .lines()
            .find_map(|l| l.strip_prefix("VACUUM (ANALYZE) "))
            .expect("the statement");
        assert_eq!(names.split(", ").collect::<Vec<_>>(), super::VACUUMED);
    }
}
