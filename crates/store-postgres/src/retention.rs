//! Retention ([`RetentionStore`](oprec_core::RetentionStore)): removing one batch of finished
//! operations past their retention, as core's rule says, and reading what a kind holds for the
//! preview. The batch is one statement over the partial index of finished operations.

use oprec_core::Result;
use oprec_core::retention::{
    KindScope, RetentionDeleteParams, RetentionFigures, RetentionFiguresParams,
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
    let done = sqlx::query(sql::RETENTION_DELETE)
        .bind(kinds)
        .bind(except)
        .bind(params.status.as_str())
        .bind(params.finished_before)
        .bind(i64::from(params.limit))
        .execute(&store.pool)
        .await
        .map_err(backend_error)?;
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
